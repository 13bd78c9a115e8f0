-- 0013 participants_per_environment: a participant identifier is unique per environment.
-- Written by hand (a unique group of an existing collection). Released: never edit, add a
-- migration. In the network each environment has its own SML, so the same identifier may be
-- registered in TEST and in PROD (the operator's own 0242 participant is in both); every
-- existing row satisfies the new constraint, which the old one implied.
-- SQLite cannot drop a table's constraint: the table is built again with the new one, its
-- rows copied, and its indexes made again.

CREATE TABLE "participants_0013" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT,
    "participant_identifier" TEXT,
    "environment" TEXT,
    "smp_ref" TEXT,
    "ap_ref" TEXT,
    "transport_profile" TEXT,
    "status" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "identifier_key" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "participants_identifier_key_environment_key" UNIQUE ("identifier_key", "environment")
);

INSERT INTO "participants_0013" (
    "id", "name", "participant_identifier", "environment", "smp_ref", "ap_ref",
    "transport_profile", "status", "created_at", "org_id", "identifier_key", "search_text",
    "data"
)
SELECT
    "id", "name", "participant_identifier", "environment", "smp_ref", "ap_ref",
    "transport_profile", "status", "created_at", "org_id", "identifier_key", "search_text",
    "data"
FROM "participants";

DROP TABLE "participants";

ALTER TABLE "participants_0013" RENAME TO "participants";

CREATE INDEX "participants_created_at_id_idx" ON "participants" ("created_at", "id");

CREATE INDEX "participants_org_id_idx" ON "participants" ("org_id", "created_at", "id");
