-- 0022 received_message_keys: a received AS4 message is taken once, whatever organisation its
-- receiver belongs to when it arrives (domain.transaction.message_key_of): a retry of a message
-- whose receiver moved to another organisation since clashes with the record the first copy
-- made, and is answered with its receipt. "message_key" holds the receiving access point, the
-- sending access point's seat (its certificate's CN, "sender_sp" in the record's JSON,
-- "data"), the receiver and the MessageId, the seat and the receiver each after its length;
-- NULL for a record no AS4 message of a known sender brought. A message stored more than once
-- before (under two organisations) keeps its key on its earliest record only; the others are
-- never written again (a received document does not change). SQLite cannot add a constraint
-- to a table: a unique index holds it. The index on "as4_message_id" (0004) served only the
-- lookup by MessageId this key replaces, and goes. Written by hand. Released: never edit, add a
-- migration.

ALTER TABLE "transactions" ADD COLUMN "message_key" TEXT;

UPDATE "transactions" SET "message_key" =
    "ap_id" || '/'
    || length(json_extract("data", '$.sender_sp')) || ':' || json_extract("data", '$.sender_sp')
    || '/' || length("receiver_id") || ':' || "receiver_id" || '/' || "as4_message_id"
WHERE "direction" = 'FROM_NETWORK'
    AND COALESCE("as4_message_id", '') <> ''
    AND json_type("data", '$.sender_sp') = 'text'
    AND json_extract("data", '$.sender_sp') <> '';

UPDATE "transactions" SET "message_key" = NULL
WHERE "id" IN (
    SELECT "id" FROM (
        SELECT "id", row_number() OVER (
            PARTITION BY "message_key" ORDER BY "created_at", "id"
        ) AS "n"
        FROM "transactions"
        WHERE "message_key" IS NOT NULL
    ) AS "later" WHERE "n" > 1
);

CREATE UNIQUE INDEX "transactions_message_key_key" ON "transactions" ("message_key");

DROP INDEX IF EXISTS "transactions_message_idx";
