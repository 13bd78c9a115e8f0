CREATE TABLE "webhooks" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "url" TEXT COLLATE "C",
    "is_enabled" INTEGER,
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "webhooks_created_at_id_idx" ON "webhooks" ("created_at", "id");

CREATE INDEX "webhooks_org_id_idx" ON "webhooks" ("org_id", "created_at", "id");

CREATE TABLE "events" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "event_type" TEXT COLLATE "C",
    "status" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "events_created_at_id_idx" ON "events" ("created_at", "id");

CREATE INDEX "events_org_id_idx" ON "events" ("org_id", "created_at", "id");

CREATE TABLE "deliveries" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "event_id" TEXT COLLATE "C",
    "webhook_id" TEXT COLLATE "C",
    "status" TEXT COLLATE "C",
    "next_attempt_at" TEXT COLLATE "C",
    "lease_until" TEXT COLLATE "C",
    "created_at" TEXT COLLATE "C" NOT NULL,
    "org_id" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "deliveries_created_at_id_idx" ON "deliveries" ("created_at", "id");

CREATE INDEX "deliveries_org_id_idx" ON "deliveries" ("org_id", "created_at", "id");

CREATE INDEX "deliveries_due_idx" ON "deliveries" ("status", "next_attempt_at");
