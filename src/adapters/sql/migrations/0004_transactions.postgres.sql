CREATE TABLE "transactions" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "transaction_status" TEXT COLLATE "C",
    "sender_id" TEXT COLLATE "C",
    "receiver_id" TEXT COLLATE "C",
    "doc_type_id" TEXT COLLATE "C",
    "process_id" TEXT COLLATE "C",
    "doc_instance_id" TEXT COLLATE "C",
    "ap_id" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "direction" TEXT COLLATE "C",
    "kind" TEXT COLLATE "C",
    "next_attempt_at" TEXT COLLATE "C",
    "lease_until" TEXT COLLATE "C",
    "as4_message_id" TEXT COLLATE "C",
    "dedup_key" TEXT COLLATE "C",
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL,
    CONSTRAINT "transactions_dedup_key_key" UNIQUE ("dedup_key")
);

CREATE INDEX "transactions_created_at_id_idx" ON "transactions" ("created_at", "id");

CREATE INDEX "transactions_org_id_idx" ON "transactions" ("org_id", "created_at", "id");

CREATE TABLE "artefacts" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "transaction_id" TEXT COLLATE "C",
    "type" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "artefacts_created_at_id_idx" ON "artefacts" ("created_at", "id");

CREATE INDEX "artefacts_org_id_idx" ON "artefacts" ("org_id", "created_at", "id");

CREATE TABLE "uploads" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "created_at" TEXT COLLATE "C" NOT NULL,
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "uploads_created_at_id_idx" ON "uploads" ("created_at", "id");

CREATE INDEX "transactions_due_idx" ON "transactions" ("direction", "transaction_status", "next_attempt_at");
CREATE INDEX "transactions_message_idx" ON "transactions" ("as4_message_id");
CREATE INDEX "transactions_instance_idx" ON "transactions" ("doc_instance_id");
CREATE INDEX "artefacts_transaction_idx" ON "artefacts" ("transaction_id");
