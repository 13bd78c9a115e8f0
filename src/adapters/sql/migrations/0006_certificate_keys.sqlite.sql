-- 0006 certificate_keys: certificates.held_key, the public key a certificate holds alone.
-- Written by hand (a column of an existing collection). Released: never edit, add a migration.
-- The column is filled at start (application.certificate_keys.record_all), since SQL cannot
-- read a certificate's public key; until then it is NULL, which clashes with nothing.
-- SQLite cannot add a constraint to a table: a unique index enforces the same.

ALTER TABLE "certificates" ADD COLUMN "held_key" TEXT;

CREATE UNIQUE INDEX "certificates_held_key_key" ON "certificates" ("held_key");
