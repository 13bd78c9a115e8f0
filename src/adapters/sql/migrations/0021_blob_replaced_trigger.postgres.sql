-- 0021 blob_replaced_trigger: storing a blob again removes the chunks of the version it
-- replaces in a trigger, run only when a row of "blobs" is actually replaced, rather than in
-- a statement of its own sent with every stored blob ("DELETE FROM blob_chunks WHERE key = ...
-- AND version <> ...", two of the loop's 35 or so statements per transaction, which almost
-- never removed anything: most keys are new).
-- The store writes a blob's row first (INSERT ... ON CONFLICT (key) DO UPDATE SET version =
-- a fresh one), then its chunks under the new version, in one transaction that holds the
-- row's lock to its end; so a version's chunks are only ever written by the transaction that
-- made it the row's. The trigger removes the chunks of OLD.version. Two writers of one key at
-- once under READ COMMITTED: the second waits on the row lock, then updates the row the first
-- committed (OLD is the first's version), and the trigger's DELETE takes a snapshot of its
-- own, which sees the first's committed chunks. So a committed key has its row's version's
-- chunks and no others, and a replace need look for the previous version's only. Databases
-- stored in before this migration hold no others either: the statement it replaces ran in
-- the transaction that wrote the row, so a crash rolled back both, and nothing to clean here.
-- Removing a blob still removes its chunks by the foreign key's ON DELETE CASCADE.
-- The trigger names "blob_chunks" in the schema of the "blobs" it fires on (TG_TABLE_SCHEMA),
-- whatever the caller's search_path, and keeps no schema name of its own (a schema renamed or
-- restored under another name keeps working). Written by hand.
-- Released: never edit, add a migration.

CREATE FUNCTION "blob_chunks_drop_replaced"() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('DELETE FROM %I."blob_chunks" WHERE "key" = $1 AND "version" = $2',
                   TG_TABLE_SCHEMA)
        USING OLD."key", OLD."version";
    RETURN NULL;
END
$$;

CREATE TRIGGER "blobs_replaced" AFTER UPDATE OF "version" ON "blobs"
    FOR EACH ROW WHEN (OLD."version" IS DISTINCT FROM NEW."version")
    EXECUTE FUNCTION "blob_chunks_drop_replaced"();
