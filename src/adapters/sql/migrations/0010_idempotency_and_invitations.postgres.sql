-- 0010 idempotency_and_invitations: idempotency_keys; members invited by email address.
-- idempotency_keys written with adapters.sql.table.ddl_script; the members change by hand
-- (no member is invited yet, so invited_email starts NULL everywhere).
-- Released: never edit, add a migration.

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

ALTER TABLE "members" ADD COLUMN "invited_email" TEXT COLLATE "C";

ALTER TABLE "members" ADD CONSTRAINT "members_invited_email_org_id_key" UNIQUE ("invited_email", "org_id");
