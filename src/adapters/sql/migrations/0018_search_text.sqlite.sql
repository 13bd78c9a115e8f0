-- 0018 search_text: free-text search covers an organisation's events (type, id, and the
-- transaction and participants of its payload), a transaction's artefacts (type, content
-- type, id) and a member's email (application.collections). Each record's "search_text" is
-- written here as Collection.search_text writes it: the fields in order, joined by U+001F,
-- lower-cased. SQLite's lower() lowers ASCII letters only: an event's and an artefact's text
-- is ASCII (event names, ids, participant identifiers, enum values, media types); a member's
-- earlier text is kept as it was and the email, lowered so, joins it (an address with other
-- capital letters gets its exact text when the record is next written). Written by hand.
-- Released: never edit, add a migration.

UPDATE "events" SET "search_text" = lower(
    COALESCE("event_type", '') || char(31) || "id" || char(31)
    || COALESCE(
        CASE json_type("data", '$.payload.transactionId')
            WHEN 'text' THEN json_extract("data", '$.payload.transactionId') END,
        CASE json_type("data", '$.payload.id')
            WHEN 'text' THEN json_extract("data", '$.payload.id') END,
        ''
    ) || char(31)
    || COALESCE(
        CASE json_type("data", '$.payload.senderId')
            WHEN 'text' THEN json_extract("data", '$.payload.senderId') END,
        ''
    ) || char(31)
    || COALESCE(
        CASE json_type("data", '$.payload.receiverId')
            WHEN 'text' THEN json_extract("data", '$.payload.receiverId') END,
        ''
    )
);

UPDATE "artefacts" SET "search_text" = lower(
    COALESCE("type", '') || char(31)
    || COALESCE(
        CASE json_type("data", '$.content_type')
            WHEN 'text' THEN json_extract("data", '$.content_type') END,
        ''
    ) || char(31) || "id"
);

UPDATE "members" SET "search_text" = "search_text" || char(31) || lower(
    COALESCE(
        CASE json_type("data", '$.email') WHEN 'text' THEN json_extract("data", '$.email') END,
        ''
    )
);
