-- 0015 member_emails: the member record made with its organisation (its founder, orgadmin)
-- was written without an email address, as were members made before members had one; each
-- such record of a user takes the user's address. The address lives in the record's JSON
-- ("data", text), no column of its own; a member record holds no numbers, so reading it as
-- jsonb changes nothing the record says. Written by hand. Released: never edit, add a migration.

UPDATE "members" AS "m"
SET "data" = jsonb_set("m"."data"::jsonb, '{email}', to_jsonb("u"."email"))::text
FROM "users" AS "u"
WHERE "u"."id" = "m"."user_ref"
    AND "m"."status" <> 'INVITED'
    AND COALESCE("m"."data"::jsonb ->> 'email', '') = ''
    AND COALESCE("u"."email", '') <> '';
