-- 0001 initial: organisations, users, members, api_keys.
-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.

CREATE TABLE "organisations" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "legal_name" TEXT,
    "short_name" TEXT,
    "country_code" TEXT,
    "legal_identifier" TEXT,
    "legal_identifier_code" TEXT,
    "organisation_mode" TEXT,
    "mode_change_request" TEXT,
    "shared_mode_enabled" INTEGER,
    "created_at" TEXT NOT NULL,
    "last_modified_at" TEXT,
    "legal_key" TEXT,
    "created_by" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "organisations_legal_key_key" UNIQUE ("legal_key")
);

CREATE INDEX "organisations_created_at_id_idx" ON "organisations" ("created_at", "id");

CREATE TABLE "users" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "email" TEXT,
    "name" TEXT,
    "role" TEXT,
    "country_code" TEXT,
    "created_at" TEXT NOT NULL,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "users_created_at_id_idx" ON "users" ("created_at", "id");

CREATE TABLE "members" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "role" TEXT,
    "status" TEXT,
    "user_ref" TEXT,
    "first_name" TEXT,
    "last_name" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "members_org_id_user_ref_key" UNIQUE ("org_id", "user_ref")
);

CREATE INDEX "members_created_at_id_idx" ON "members" ("created_at", "id");

CREATE INDEX "members_org_id_idx" ON "members" ("org_id", "created_at", "id");

CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT,
    "role" TEXT,
    "is_active" INTEGER,
    "expires" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "key_hash" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "api_keys_key_hash_key" UNIQUE ("key_hash")
);

CREATE INDEX "api_keys_created_at_id_idx" ON "api_keys" ("created_at", "id");

CREATE INDEX "api_keys_org_id_idx" ON "api_keys" ("org_id", "created_at", "id");
