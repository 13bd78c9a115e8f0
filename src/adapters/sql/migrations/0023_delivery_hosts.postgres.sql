-- 0023 delivery_hosts: a delivery holds the host and port its webhook's URL names ("host",
-- domain.webhook_target.host_text: "name:port", an IPv6 literal in brackets), so that a
-- delivery worker's claim leaves out the hosts that hold all the places a host may hold there
-- by that column, however many webhooks point at them (application.places). The claims' index
-- takes the pending deliveries in the order a claim takes them (oldest first) and holds the
-- host; it replaces the one by due time. Each pending delivery gets its webhook's, in the
-- column and in the record's JSON text ("data", text, its last key): the URL read as the
-- service reads it (no user name, lower-cased, without the root's trailing dot, the scheme's
-- default port when none is written, -1 for a port past 65535). A name the service spells
-- otherwise (one IDNA or Unicode mapping changes, an IPv6 literal not written compressed, an
-- IPv4 address not in dotted-decimal form) is set right by the first claim that reads the
-- delivery; a delivery of a webhook deleted is sent nowhere and keeps none. The others
-- (delivered, failed) keep none: they are never claimed again. Written by hand. Released: never
-- edit, add a migration.

ALTER TABLE "deliveries" ADD COLUMN "host" TEXT COLLATE "C";

WITH "urls" AS (
    SELECT "id",
        lower(substring("url" from '^([A-Za-z][A-Za-z0-9+.-]*):')) AS "scheme",
        regexp_replace(substring("url" from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)'), '^.*@', '')
            AS "authority"
    FROM "webhooks"
), "parts" AS (
    SELECT "id", "scheme",
        CASE WHEN "authority" LIKE '[%' THEN substring("authority" from '^\[([^]]*)\]')
            ELSE regexp_replace(lower("authority"), '(:.*)?$', '') END AS "name",
        CASE WHEN "authority" LIKE '[%' THEN substring("authority" from '^\[[^]]*\]:([0-9]+)$')
            ELSE substring("authority" from '^[^:]*:([0-9]+)$') END AS "port"
    FROM "urls"
), "ports" AS (
    SELECT "id", "name",
        CASE WHEN "port" IS NULL THEN
                CASE "scheme" WHEN 'https' THEN '443' WHEN 'http' THEN '80' ELSE '0' END
            -- past 65535 (which check_url refused only later): -1, as host_of gives
            WHEN length(ltrim("port", '0')) > 5 THEN '-1'
            WHEN ('0' || ltrim("port", '0'))::integer > 65535 THEN '-1'
            ELSE ('0' || ltrim("port", '0'))::integer::text END AS "port"
    FROM "parts"
    WHERE "name" IS NOT NULL
), "hosts" AS (
    SELECT "id",
        CASE WHEN "name" LIKE '%:%' THEN '[' || lower("name") || ']'
            WHEN "port" = '-1' THEN "name" -- host_of reads such a URL's name no further
            ELSE regexp_replace("name", '\.$', '') END
        || ':' || "port" AS "host"
    FROM "ports"
)
UPDATE "deliveries" SET
    "host" = "hosts"."host",
    "data" = left(rtrim("data"), -1) || ',"host":' || to_json("hosts"."host")::text || '}'
FROM "hosts"
WHERE "hosts"."id" = "deliveries"."webhook_id" AND "deliveries"."status" = 'PENDING';

DROP INDEX IF EXISTS "deliveries_due_idx";

CREATE INDEX "deliveries_claim_idx" ON "deliveries" ("status", "created_at", "id", "host");
