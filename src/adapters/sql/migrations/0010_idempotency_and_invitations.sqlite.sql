-- 0010 idempotency_and_invitations: idempotency_keys; members invited by email address.
-- idempotency_keys written with adapters.sql.table.ddl_script; the members change by hand
-- (no member is invited yet, so invited_email starts NULL everywhere).
-- Released: never edit, add a migration.

CREATE TABLE "idempotency_keys" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "org_id" TEXT,
    "key" TEXT,
    "created_at" TEXT NOT NULL,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "idempotency_keys_org_id_key_key" UNIQUE ("org_id", "key")
);

CREATE INDEX "idempotency_keys_created_at_id_idx" ON "idempotency_keys" ("created_at", "id");

CREATE INDEX "idempotency_keys_org_id_idx" ON "idempotency_keys" ("org_id", "created_at", "id");

ALTER TABLE "members" ADD COLUMN "invited_email" TEXT;

CREATE UNIQUE INDEX "members_invited_email_org_id_key" ON "members" ("invited_email", "org_id");
