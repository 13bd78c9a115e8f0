-- 0014 column_types: the lists of transactions and events get an index for each filter a
-- client gives most (a page of one organisation's list filtered by status, sender, receiver
-- or document type, newest first), and the event purge's look-up of an event's deliveries.
-- (PostgreSQL's migration 0014 also gives UUID and datetime columns their own types; SQLite
-- keeps them as text.) Written by hand. Released: never edit, add a migration.

CREATE INDEX "transactions_org_status_idx" ON "transactions" ("org_id", "transaction_status", "created_at", "id");

CREATE INDEX "transactions_org_sender_idx" ON "transactions" ("org_id", "sender_id", "created_at", "id");

CREATE INDEX "transactions_org_receiver_idx" ON "transactions" ("org_id", "receiver_id", "created_at", "id");

CREATE INDEX "transactions_org_doc_type_idx" ON "transactions" ("org_id", "doc_type_id", "created_at", "id");

CREATE INDEX "events_org_type_idx" ON "events" ("org_id", "event_type", "created_at", "id");

CREATE INDEX "events_org_status_idx" ON "events" ("org_id", "status", "created_at", "id");

CREATE INDEX "deliveries_event_idx" ON "deliveries" ("event_id");
