-- 0005 identity: users are bound to the identity (issuer, subject) that signs them in, and
-- deleted identities are remembered. Existing users keep their ids and are bound on their
-- next sign-in (identity_key stays NULL until then).
-- deleted_identities written with adapters.sql.table.ddl_script; the users change by hand.
-- Released: never edit, add a migration.

CREATE TABLE "deleted_identities" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "created_at" TEXT COLLATE "C" NOT NULL,
    "identity_key" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "deleted_identities_identity_key_key" UNIQUE ("identity_key")
);

CREATE INDEX "deleted_identities_created_at_id_idx" ON "deleted_identities" ("created_at", "id");

ALTER TABLE "users" ADD COLUMN "identity_key" TEXT COLLATE "C";

ALTER TABLE "users" ADD CONSTRAINT "users_identity_key_key" UNIQUE ("identity_key");
