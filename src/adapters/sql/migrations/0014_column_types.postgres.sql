-- 0014 column_types: UUID and datetime columns get their own types, and the lists of
-- transactions and events an index for each filter a client gives most.
-- UUIDs become "uuid" and datetimes (kept as clock.sortable text, microseconds, UTC)
-- "timestamptz", which hold the same microseconds: uuid orders as its canonical text did
-- (bytes, most significant first), so keyset cursors and sorts are unchanged; the record's
-- JSON ("data") stays text, which keeps it byte for byte (jsonb would rewrite numbers:
-- 1e16 comes back as 10000000000000000). Indexes on converted columns are rebuilt by
-- ALTER COLUMN ... TYPE.
-- The new indexes serve a page of one organisation's list (of one direction: the lists
-- are per direction) filtered by status, sender, receiver or document type, in time order
-- either way, and the event purge's look-up of an event's deliveries. Written by hand. Released: never edit, add a migration.

ALTER TABLE "organisations"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "last_modified_at" TYPE TIMESTAMP WITH TIME ZONE USING "last_modified_at"::timestamptz;

ALTER TABLE "users"
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz;

ALTER TABLE "members"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "api_keys"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "expires" TYPE TIMESTAMP WITH TIME ZONE USING "expires"::timestamptz,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "participants"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "smp_ref" TYPE UUID USING "smp_ref"::uuid,
    ALTER COLUMN "ap_ref" TYPE UUID USING "ap_ref"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "certificates"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "valid_until" TYPE TIMESTAMP WITH TIME ZONE USING "valid_until"::timestamptz,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "access_points"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "certificate_ref" TYPE UUID USING "certificate_ref"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "smps"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "smp_registrations"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "smp_id" TYPE UUID USING "smp_id"::uuid;

ALTER TABLE "webhooks"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "events"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "deliveries"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "event_id" TYPE UUID USING "event_id"::uuid,
    ALTER COLUMN "webhook_id" TYPE UUID USING "webhook_id"::uuid,
    ALTER COLUMN "next_attempt_at" TYPE TIMESTAMP WITH TIME ZONE USING "next_attempt_at"::timestamptz,
    ALTER COLUMN "lease_until" TYPE TIMESTAMP WITH TIME ZONE USING "lease_until"::timestamptz,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "transactions"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "ap_id" TYPE UUID USING "ap_id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "next_attempt_at" TYPE TIMESTAMP WITH TIME ZONE USING "next_attempt_at"::timestamptz,
    ALTER COLUMN "lease_until" TYPE TIMESTAMP WITH TIME ZONE USING "lease_until"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "artefacts"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "transaction_id" TYPE UUID USING "transaction_id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid;

ALTER TABLE "uploads"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz;

ALTER TABLE "deleted_identities"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz;

ALTER TABLE "idempotency_keys"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "org_id" TYPE UUID USING "org_id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz;

ALTER TABLE "locator_tasks"
    ALTER COLUMN "id" TYPE UUID USING "id"::uuid,
    ALTER COLUMN "created_at" TYPE TIMESTAMP WITH TIME ZONE USING "created_at"::timestamptz,
    ALTER COLUMN "next_attempt_at" TYPE TIMESTAMP WITH TIME ZONE USING "next_attempt_at"::timestamptz,
    ALTER COLUMN "lease_until" TYPE TIMESTAMP WITH TIME ZONE USING "lease_until"::timestamptz;

CREATE INDEX "transactions_org_direction_idx" ON "transactions" ("org_id", "direction", "created_at", "id");

CREATE INDEX "transactions_org_status_idx" ON "transactions" ("org_id", "direction", "transaction_status", "created_at", "id");

CREATE INDEX "transactions_org_sender_idx" ON "transactions" ("org_id", "direction", "sender_id", "created_at", "id");

CREATE INDEX "transactions_org_receiver_idx" ON "transactions" ("org_id", "direction", "receiver_id", "created_at", "id");

CREATE INDEX "transactions_org_doc_type_idx" ON "transactions" ("org_id", "direction", "doc_type_id", "created_at", "id");

CREATE INDEX "events_org_type_idx" ON "events" ("org_id", "event_type", "created_at", "id");

CREATE INDEX "events_org_status_idx" ON "events" ("org_id", "status", "created_at", "id");

CREATE INDEX "deliveries_event_idx" ON "deliveries" ("event_id");
