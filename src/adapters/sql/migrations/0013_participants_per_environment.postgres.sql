-- 0013 participants_per_environment: a participant identifier is unique per environment.
-- Written by hand (a unique group of an existing collection). Released: never edit, add a
-- migration. In the network each environment has its own SML, so the same identifier may be
-- registered in TEST and in PROD (the operator's own 0242 participant is in both); every
-- existing row satisfies the new constraint, which the old one implied.

ALTER TABLE "participants" DROP CONSTRAINT "participants_identifier_key_key";

ALTER TABLE "participants" ADD CONSTRAINT "participants_identifier_key_environment_key"
    UNIQUE ("identifier_key", "environment");
