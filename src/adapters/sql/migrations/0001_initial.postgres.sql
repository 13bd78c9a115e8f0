-- 0001 initial: organisations, users, members, api_keys.
-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.

CREATE TABLE "organisations" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "legal_name" TEXT COLLATE "C",
    "short_name" TEXT COLLATE "C",
    "country_code" TEXT COLLATE "C",
    "legal_identifier" TEXT COLLATE "C",
    "legal_identifier_code" TEXT COLLATE "C",
    "organisation_mode" TEXT COLLATE "C",
    "mode_change_request" TEXT COLLATE "C",
    "shared_mode_enabled" INTEGER,
    "created_at" TEXT COLLATE "C" NOT NULL,
    "last_modified_at" TEXT COLLATE "C",
    "legal_key" TEXT COLLATE "C",
    "created_by" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "organisations_legal_key_key" UNIQUE ("legal_key")
);

CREATE INDEX "organisations_created_at_id_idx" ON "organisations" ("created_at", "id");

CREATE TABLE "users" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "email" TEXT COLLATE "C",
    "name" TEXT COLLATE "C",
    "role" TEXT COLLATE "C",
    "country_code" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "users_created_at_id_idx" ON "users" ("created_at", "id");

CREATE TABLE "members" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "role" TEXT COLLATE "C",
    "status" TEXT COLLATE "C",
    "user_ref" TEXT COLLATE "C",
    "first_name" TEXT COLLATE "C",
    "last_name" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "members_org_id_user_ref_key" UNIQUE ("org_id", "user_ref")
);

CREATE INDEX "members_created_at_id_idx" ON "members" ("created_at", "id");

CREATE INDEX "members_org_id_idx" ON "members" ("org_id", "created_at", "id");

CREATE TABLE "api_keys" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "name" TEXT COLLATE "C",
    "role" TEXT COLLATE "C",
    "is_active" INTEGER,
    "expires" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "key_hash" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "api_keys_key_hash_key" UNIQUE ("key_hash")
);

CREATE INDEX "api_keys_created_at_id_idx" ON "api_keys" ("created_at", "id");

CREATE INDEX "api_keys_org_id_idx" ON "api_keys" ("org_id", "created_at", "id");
