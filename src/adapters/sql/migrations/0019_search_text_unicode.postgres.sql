-- 0019 search_text_unicode: the search text of an organisation's events and of its members
-- written again as Collection.search_text writes it today (the fields in order, joined by
-- U+001F, lower-cased as Python lowers text): 0018 lowered ASCII letters only, so a member's
-- address with other capital letters (an "Ö") kept them, and an event's search now covers
-- its payload's docInstanceId as well. Only the rows whose text changes are written.
-- unicode_lower() lowers under ICU's root collation "und-x-icu", whose full case mapping is
-- Python's str.lower (final sigma and "İ" included); on a server built without ICU (or a
-- database not in UTF8), under the database's own collation (which misses those two, or
-- lowers ASCII only under "C").
-- An artefact's text (type, media type, id) is ASCII and stays as 0018 wrote it. The
-- record's JSON ("data", text) is read as json, never written. Written by hand.
-- Released: never edit, add a migration.

DO $$
BEGIN
    IF current_setting('server_encoding') = 'UTF8'
        AND EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu')
    THEN
        CREATE FUNCTION pg_temp.unicode_lower(t text) RETURNS text
            LANGUAGE sql IMMUTABLE AS 'SELECT lower(t COLLATE "und-x-icu")';
    ELSE
        CREATE FUNCTION pg_temp.unicode_lower(t text) RETURNS text
            LANGUAGE sql IMMUTABLE AS 'SELECT lower(t)';
    END IF;
END
$$;

WITH "t" AS MATERIALIZED (
    SELECT "id", pg_temp.unicode_lower(
        COALESCE("event_type", '') || chr(31) || "id"::text || chr(31)
        || COALESCE(
            CASE json_typeof("v" -> 'transactionId') WHEN 'string' THEN "v" ->> 'transactionId' END,
            CASE json_typeof("v" -> 'id') WHEN 'string' THEN "v" ->> 'id' END,
            ''
        ) || chr(31)
        || COALESCE(CASE json_typeof("v" -> 'senderId') WHEN 'string' THEN "v" ->> 'senderId' END, '')
        || chr(31)
        || COALESCE(
            CASE json_typeof("v" -> 'receiverId') WHEN 'string' THEN "v" ->> 'receiverId' END, ''
        ) || chr(31)
        || COALESCE(
            CASE json_typeof("v" -> 'docInstanceId') WHEN 'string' THEN "v" ->> 'docInstanceId' END,
            ''
        )
    ) AS "text"
    FROM (SELECT "id", "event_type", "data"::json -> 'payload' AS "v" FROM "events") AS "r"
)
UPDATE "events" AS "e" SET "search_text" = "t"."text"
FROM "t" WHERE "t"."id" = "e"."id" AND "e"."search_text" IS DISTINCT FROM "t"."text";

WITH "t" AS MATERIALIZED (
    SELECT "id", pg_temp.unicode_lower(
        COALESCE(CASE json_typeof("d" -> 'first_name') WHEN 'string' THEN "d" ->> 'first_name' END, '')
        || chr(31)
        || COALESCE(CASE json_typeof("d" -> 'last_name') WHEN 'string' THEN "d" ->> 'last_name' END, '')
        || chr(31)
        || COALESCE(CASE json_typeof("d" -> 'user_ref') WHEN 'string' THEN "d" ->> 'user_ref' END, '')
        || chr(31)
        || COALESCE(CASE json_typeof("d" -> 'email') WHEN 'string' THEN "d" ->> 'email' END, '')
    ) AS "text"
    FROM (SELECT "id", "data"::json AS "d" FROM "members") AS "r"
)
UPDATE "members" AS "m" SET "search_text" = "t"."text"
FROM "t" WHERE "t"."id" = "m"."id" AND "m"."search_text" IS DISTINCT FROM "t"."text";

DROP FUNCTION pg_temp.unicode_lower(text);
