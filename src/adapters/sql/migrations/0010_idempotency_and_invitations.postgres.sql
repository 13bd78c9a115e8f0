-- 0010 idempotency_and_invitations: idempotency_keys.
-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.

CREATE TABLE "idempotency_keys" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "org_id" TEXT COLLATE "C",
    "key" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "idempotency_keys_org_id_key_key" UNIQUE ("org_id", "key")
);

CREATE INDEX "idempotency_keys_created_at_id_idx" ON "idempotency_keys" ("created_at", "id");

CREATE INDEX "idempotency_keys_org_id_idx" ON "idempotency_keys" ("org_id", "created_at", "id");
