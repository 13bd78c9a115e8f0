-- 0012 sml_registrations: locator_tasks.
-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.

CREATE TABLE "locator_tasks" (
    "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "created_at" TEXT COLLATE "C" NOT NULL,
    "environment" TEXT COLLATE "C",
    "operation" TEXT COLLATE "C",
    "state" TEXT COLLATE "C",
    "next_attempt_at" TEXT COLLATE "C",
    "lease_until" TEXT COLLATE "C",
    "search_text" TEXT COLLATE "C" NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "locator_tasks_created_at_id_idx" ON "locator_tasks" ("created_at", "id");
