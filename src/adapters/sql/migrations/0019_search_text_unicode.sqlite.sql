-- 0019 search_text_unicode: the search text of an organisation's events and of its members
-- written again as Collection.search_text writes it today (the fields in order, joined by
-- U+001F, lower-cased as Python lowers text): 0018 lowered ASCII letters only, so a member's
-- address with other capital letters (an "Ö") kept them, and an event's search now covers
-- its payload's docInstanceId as well. unicode_lower() is the migration runner's
-- (adapters.sqlite.migration): Python's str.lower. An artefact's text (type, media type, id)
-- is ASCII and stays as 0018 wrote it. Written by hand. Released: never edit, add a migration.

UPDATE "events" SET "search_text" = unicode_lower(
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
    ) || char(31)
    || COALESCE(
        CASE json_type("data", '$.payload.docInstanceId')
            WHEN 'text' THEN json_extract("data", '$.payload.docInstanceId') END,
        ''
    )
);

UPDATE "members" SET "search_text" = unicode_lower(
    COALESCE(
        CASE json_type("data", '$.first_name')
            WHEN 'text' THEN json_extract("data", '$.first_name') END,
        ''
    ) || char(31)
    || COALESCE(
        CASE json_type("data", '$.last_name')
            WHEN 'text' THEN json_extract("data", '$.last_name') END,
        ''
    ) || char(31)
    || COALESCE(
        CASE json_type("data", '$.user_ref') WHEN 'text' THEN json_extract("data", '$.user_ref') END,
        ''
    ) || char(31)
    || COALESCE(
        CASE json_type("data", '$.email') WHEN 'text' THEN json_extract("data", '$.email') END,
        ''
    )
);
