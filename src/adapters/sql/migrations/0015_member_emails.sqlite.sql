-- 0015 member_emails: the member record made with its organisation (its founder, orgadmin)
-- was written without an email address, as were members made before members had one; each
-- such record of a user takes the user's address. The address lives in the record's JSON
-- ("data"), no column of its own. Written by hand. Released: never edit, add a migration.

UPDATE "members"
SET "data" = json_set(
    "data",
    '$.email',
    (SELECT "users"."email" FROM "users" WHERE "users"."id" = "members"."user_ref")
)
WHERE "status" <> 'INVITED'
    AND COALESCE(json_extract("data", '$.email'), '') = ''
    AND EXISTS (
        SELECT 1 FROM "users"
        WHERE "users"."id" = "members"."user_ref" AND COALESCE("users"."email", '') <> ''
    );
