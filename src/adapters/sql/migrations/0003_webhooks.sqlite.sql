CREATE TABLE "webhooks" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "url" TEXT,
    "is_enabled" INTEGER,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "webhooks_created_at_id_idx" ON "webhooks" ("created_at", "id");

CREATE INDEX "webhooks_org_id_idx" ON "webhooks" ("org_id", "created_at", "id");

CREATE TABLE "events" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "event_type" TEXT,
    "status" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "events_created_at_id_idx" ON "events" ("created_at", "id");

CREATE INDEX "events_org_id_idx" ON "events" ("org_id", "created_at", "id");

CREATE TABLE "deliveries" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "event_id" TEXT,
    "webhook_id" TEXT,
    "status" TEXT,
    "next_attempt_at" TEXT,
    "lease_until" TEXT,
    "created_at" TEXT NOT NULL,
    "org_id" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "deliveries_created_at_id_idx" ON "deliveries" ("created_at", "id");

CREATE INDEX "deliveries_org_id_idx" ON "deliveries" ("org_id", "created_at", "id");

CREATE INDEX "deliveries_due_idx" ON "deliveries" ("status", "next_attempt_at");
