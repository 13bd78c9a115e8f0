-- 0016 departed_creators_keys: a member's API keys of an organisation end for good when they
-- leave it or are removed from it (or are deleted). Keys whose creator left before that rule
-- was kept would come back to life when the creator joins again: every active key whose
-- creator is not an active member of its organisation, nor a superadmin, is made inactive.
-- The creator's id lives in the record's JSON ("data", text; an API key's record holds no
-- numbers, so reading it as jsonb changes nothing it says). Written by hand. Released: never
-- edit, add a migration.

UPDATE "api_keys" AS "k"
SET "is_active" = 0, "data" = jsonb_set("k"."data"::jsonb, '{is_active}', 'false'::jsonb)::text
WHERE "k"."is_active" = 1
    AND NOT EXISTS (
        SELECT 1 FROM "members" AS "m"
        WHERE "m"."org_id" = "k"."org_id"
            AND "m"."user_ref" = "k"."data"::jsonb -> 'created_by' ->> 'user_id'
            AND "m"."status" = 'ACTIVE'
    )
    AND NOT EXISTS (
        SELECT 1 FROM "users" AS "u"
        WHERE "u"."id" = "k"."data"::jsonb -> 'created_by' ->> 'user_id'
            AND "u"."role" = 'superadmin'
    );
