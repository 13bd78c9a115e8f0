-- 0017 directory_retries: the workers ask the directory again for a business card that is
-- OUTDATED in it (application.directory_worker); "directory_due_at" says when, NULL for any
-- other publication, and its partial index finds the due ones without reading the others.
-- A publication stored OUTDATED before is due at once (the time the record falls back to,
-- domain.participant.LONG_AGO). Written by hand. Released: never edit, add a migration.

ALTER TABLE "participants" ADD COLUMN "directory_due_at" TEXT;

UPDATE "participants" SET "directory_due_at" = '1970-01-01T00:00:00.000000Z'
WHERE json_extract("data", '$.directory.state') = 'OUTDATED';

CREATE INDEX "participants_directory_due_idx" ON "participants" ("directory_due_at", "id")
    WHERE "directory_due_at" IS NOT NULL;
