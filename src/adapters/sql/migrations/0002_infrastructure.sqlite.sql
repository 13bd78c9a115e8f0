-- 0002 infrastructure: participants, certificates, access_points, smps, smp_registrations.
-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.

CREATE TABLE "participants" (
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
    CONSTRAINT "participants_identifier_key_key" UNIQUE ("identifier_key")
);

CREATE INDEX "participants_created_at_id_idx" ON "participants" ("created_at", "id");

CREATE INDEX "participants_org_id_idx" ON "participants" ("org_id", "created_at", "id");

CREATE TABLE "certificates" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT,
    "service" TEXT,
    "environment" TEXT,
    "valid_until" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "certificates_created_at_id_idx" ON "certificates" ("created_at", "id");

CREATE INDEX "certificates_org_id_idx" ON "certificates" ("org_id", "created_at", "id");

CREATE TABLE "access_points" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT,
    "environment" TEXT,
    "transport_profile" TEXT,
    "certificate_ref" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "access_points_created_at_id_idx" ON "access_points" ("created_at", "id");

CREATE INDEX "access_points_org_id_idx" ON "access_points" ("org_id", "created_at", "id");

CREATE TABLE "smps" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT,
    "environment" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "smps_created_at_id_idx" ON "smps" ("created_at", "id");

CREATE INDEX "smps_org_id_idx" ON "smps" ("org_id", "created_at", "id");

CREATE TABLE "smp_registrations" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TEXT NOT NULL,
    "smp_id" TEXT,
    "participant" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "smp_registrations_smp_id_participant_key" UNIQUE ("smp_id", "participant")
);

CREATE INDEX "smp_registrations_created_at_id_idx" ON "smp_registrations" ("created_at", "id");
