-- 0002 infrastructure: participants, certificates, access_points, smps, smp_registrations.
-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.

CREATE TABLE "participants" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "name" TEXT COLLATE "C",
    "participant_identifier" TEXT COLLATE "C",
    "environment" TEXT COLLATE "C",
    "smp_ref" TEXT COLLATE "C",
    "ap_ref" TEXT COLLATE "C",
    "transport_profile" TEXT COLLATE "C",
    "status" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "identifier_key" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "participants_identifier_key_key" UNIQUE ("identifier_key")
);

CREATE INDEX "participants_created_at_id_idx" ON "participants" ("created_at", "id");

CREATE INDEX "participants_org_id_idx" ON "participants" ("org_id", "created_at", "id");

CREATE TABLE "certificates" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "name" TEXT COLLATE "C",
    "service" TEXT COLLATE "C",
    "environment" TEXT COLLATE "C",
    "valid_until" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "certificates_created_at_id_idx" ON "certificates" ("created_at", "id");

CREATE INDEX "certificates_org_id_idx" ON "certificates" ("org_id", "created_at", "id");

CREATE TABLE "access_points" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "name" TEXT COLLATE "C",
    "environment" TEXT COLLATE "C",
    "transport_profile" TEXT COLLATE "C",
    "certificate_ref" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "access_points_created_at_id_idx" ON "access_points" ("created_at", "id");

CREATE INDEX "access_points_org_id_idx" ON "access_points" ("org_id", "created_at", "id");

CREATE TABLE "smps" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "name" TEXT COLLATE "C",
    "environment" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "smps_created_at_id_idx" ON "smps" ("created_at", "id");

CREATE INDEX "smps_org_id_idx" ON "smps" ("org_id", "created_at", "id");

CREATE TABLE "smp_registrations" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "created_at" TEXT COLLATE "C" NOT NULL,
    "smp_id" TEXT COLLATE "C",
    "participant" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "smp_registrations_smp_id_participant_key" UNIQUE ("smp_id", "participant")
);

CREATE INDEX "smp_registrations_created_at_id_idx" ON "smp_registrations" ("created_at", "id");
