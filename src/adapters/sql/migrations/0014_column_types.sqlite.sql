-- 0014 column_types: the lists of transactions and events get an index for each filter a
-- client gives most (a page of one organisation's list, of one direction, filtered by
-- status, sender, receiver or document type, in time order either way), and the event
-- purge's look-up of an event's deliveries.
-- (PostgreSQL's migration 0014 also gives UUID and datetime columns their own types; SQLite
-- keeps them as text.) Written by hand. Released: never edit, add a migration.

CREATE INDEX "transactions_org_direction_idx" ON "transactions" ("org_id", "direction", "created_at", "id");

CREATE INDEX "transactions_org_status_idx" ON "transactions" ("org_id", "direction", "transaction_status", "created_at", "id");

CREATE INDEX "transactions_org_sender_idx" ON "transactions" ("org_id", "direction", "sender_id", "created_at", "id");

CREATE INDEX "transactions_org_receiver_idx" ON "transactions" ("org_id", "direction", "receiver_id", "created_at", "id");

CREATE INDEX "transactions_org_doc_type_idx" ON "transactions" ("org_id", "direction", "doc_type_id", "created_at", "id");

CREATE INDEX "events_org_type_idx" ON "events" ("org_id", "event_type", "created_at", "id");

CREATE INDEX "events_org_status_idx" ON "events" ("org_id", "status", "created_at", "id");

CREATE INDEX "deliveries_event_idx" ON "deliveries" ("event_id");
