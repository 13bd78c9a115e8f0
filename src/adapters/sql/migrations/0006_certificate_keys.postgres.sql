-- 0006 certificate_keys: certificates.held_key, the public key a certificate holds alone.
-- Written by hand (a column of an existing collection). Released: never edit, add a migration.
-- The column is filled at start (application.certificate_keys.record_all), since SQL cannot
-- read a certificate's public key; until then it is NULL, which clashes with nothing.

ALTER TABLE "certificates" ADD COLUMN "held_key" TEXT COLLATE "C";

ALTER TABLE "certificates" ADD CONSTRAINT "certificates_held_key_key" UNIQUE ("held_key");
