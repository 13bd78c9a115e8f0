-- 0018 search_text: free-text search covers an organisation's events (type, id, and the
-- transaction and participants of its payload), a transaction's artefacts (type, content
-- type, id) and a member's email (application.collections). Each record's "search_text" is
-- written here as Collection.search_text writes it: the fields in order, joined by U+001F,
-- lower-cased. lower() under COLLATE "C" lowers ASCII letters only, as SQLite's does: an
-- event's and an artefact's text is ASCII (event names, ids, participant identifiers, enum
-- values, media types); a member's earlier text is kept as it was and the email, lowered so,
-- joins it (an address with other capital letters gets its exact text when the record is next
-- written). The record's JSON ("data", text) is read as json, never written. Written by hand.
-- Released: never edit, add a migration.

WITH "p" AS MATERIALIZED (
    SELECT "id", "data"::json -> 'payload' AS "v" FROM "events"
)
UPDATE "events" AS "e" SET "search_text" = lower((
    COALESCE("e"."event_type", '') || chr(31) || "e"."id"::text || chr(31)
    || COALESCE(
        CASE json_typeof("p"."v" -> 'transactionId')
            WHEN 'string' THEN "p"."v" ->> 'transactionId' END,
        CASE json_typeof("p"."v" -> 'id') WHEN 'string' THEN "p"."v" ->> 'id' END,
        ''
    ) || chr(31)
    || COALESCE(
        CASE json_typeof("p"."v" -> 'senderId') WHEN 'string' THEN "p"."v" ->> 'senderId' END,
        ''
    ) || chr(31)
    || COALESCE(
        CASE json_typeof("p"."v" -> 'receiverId')
            WHEN 'string' THEN "p"."v" ->> 'receiverId' END,
        ''
    )
) COLLATE "C")
FROM "p" WHERE "p"."id" = "e"."id";

UPDATE "artefacts" SET "search_text" = lower((
    COALESCE("type", '') || chr(31)
    || COALESCE(
        CASE json_typeof("data"::json -> 'content_type')
            WHEN 'string' THEN "data"::json ->> 'content_type' END,
        ''
    ) || chr(31) || "id"::text
) COLLATE "C");

UPDATE "members" SET "search_text" = "search_text" || chr(31) || lower(
    COALESCE(
        CASE json_typeof("data"::json -> 'email') WHEN 'string' THEN "data"::json ->> 'email' END,
        ''
    ) COLLATE "C"
);
