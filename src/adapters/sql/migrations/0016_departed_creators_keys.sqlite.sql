-- 0016 departed_creators_keys: a member's API keys of an organisation end for good when they
-- leave it or are removed from it (or are deleted). Keys whose creator left before that rule
-- was kept would come back to life when the creator joins again: every active key whose
-- creator is not an active member of its organisation, nor a superadmin, is made inactive.
-- The creator's id lives in the record's JSON ("data"). Written by hand. Released: never
-- edit, add a migration.

UPDATE "api_keys"
SET "is_active" = 0, "data" = json_set("data", '$.is_active', json('false'))
WHERE "is_active" = 1
    AND NOT EXISTS (
        SELECT 1 FROM "members"
        WHERE "members"."org_id" = "api_keys"."org_id"
            AND "members"."user_ref" = json_extract("api_keys"."data", '$.created_by.user_id')
            AND "members"."status" = 'ACTIVE'
    )
    AND NOT EXISTS (
        SELECT 1 FROM "users"
        WHERE "users"."id" = json_extract("api_keys"."data", '$.created_by.user_id')
            AND "users"."role" = 'superadmin'
    );
