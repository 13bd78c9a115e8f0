CREATE TABLE "transactions" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "transaction_status" TEXT,
    "sender_id" TEXT,
    "receiver_id" TEXT,
    "doc_type_id" TEXT,
    "process_id" TEXT,
    "doc_instance_id" TEXT,
    "ap_id" TEXT,
    "created_at" TEXT NOT NULL,
    "direction" TEXT,
    "kind" TEXT,
    "next_attempt_at" TEXT,
    "lease_until" TEXT,
    "as4_message_id" TEXT,
    "dedup_key" TEXT,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "transactions_dedup_key_key" UNIQUE ("dedup_key")
);

CREATE INDEX "transactions_created_at_id_idx" ON "transactions" ("created_at", "id");

CREATE INDEX "transactions_org_id_idx" ON "transactions" ("org_id", "created_at", "id");

CREATE TABLE "artefacts" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "transaction_id" TEXT,
    "type" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "artefacts_created_at_id_idx" ON "artefacts" ("created_at", "id");

CREATE INDEX "artefacts_org_id_idx" ON "artefacts" ("org_id", "created_at", "id");

CREATE TABLE "uploads" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TEXT NOT NULL,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "uploads_created_at_id_idx" ON "uploads" ("created_at", "id");

CREATE INDEX "transactions_due_idx" ON "transactions" ("direction", "transaction_status", "next_attempt_at");
CREATE INDEX "transactions_message_idx" ON "transactions" ("as4_message_id");
CREATE INDEX "transactions_instance_idx" ON "transactions" ("doc_instance_id");
CREATE INDEX "artefacts_transaction_idx" ON "artefacts" ("transaction_id");
