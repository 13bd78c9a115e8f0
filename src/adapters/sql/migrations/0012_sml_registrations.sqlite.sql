-- 0012 sml_registrations: locator_tasks.
-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.

CREATE TABLE "locator_tasks" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TEXT NOT NULL,
    "environment" TEXT,
    "operation" TEXT,
    "state" TEXT,
    "next_attempt_at" TEXT,
    "lease_until" TEXT,
    "search_text" TEXT NOT NULL,
    "data" TEXT NOT NULL
);

CREATE INDEX "locator_tasks_created_at_id_idx" ON "locator_tasks" ("created_at", "id");
