-- 0023 delivery_hosts: a delivery holds the host and port its webhook's URL names ("host",
-- domain.webhook_target.host_text: "name:port", an IPv6 literal in brackets), so that a
-- delivery worker's claim leaves out the hosts that hold all the places a host may hold there
-- by that column, however many webhooks point at them (application.places). The claims' index
-- takes the pending deliveries in the order a claim takes them (oldest first) and holds the
-- host; it replaces the one by due time. Each pending delivery gets its webhook's, in the
-- column and in the record's JSON text ("data", its last key): the URL read as the service
-- reads it (no user name, lower-cased, without the root's trailing dot, the scheme's default
-- port when none is written, -1 for a port past 65535; SQLite has no regular expressions, so
-- the URL is cut at its delimiters). A name the service spells otherwise (one IDNA or Unicode
-- mapping changes, an IPv6 literal not written compressed, an IPv4 address not in
-- dotted-decimal form) is set right by the first claim that reads the delivery; a delivery of a
-- webhook deleted is sent nowhere and keeps none. The others (delivered, failed) keep none:
-- they are never claimed again. Written by hand. Released: never edit, add a migration.

ALTER TABLE "deliveries" ADD COLUMN "host" TEXT;

WITH "urls" AS (
    SELECT "id", lower(substr("url", 1, instr("url", '://') - 1)) AS "scheme",
        substr("url", instr("url", '://') + 3) AS "rest"
    FROM "webhooks"
    WHERE instr("url", '://') > 1
), "netlocs" AS (
    SELECT "id", "scheme", substr("rest", 1, min(
        CASE instr("rest", '/') WHEN 0 THEN length("rest") + 1 ELSE instr("rest", '/') END,
        CASE instr("rest", '?') WHEN 0 THEN length("rest") + 1 ELSE instr("rest", '?') END,
        CASE instr("rest", '#') WHEN 0 THEN length("rest") + 1 ELSE instr("rest", '#') END
    ) - 1) AS "netloc"
    FROM "urls"
), "authorities" AS (
    -- after the last "@": right-trimming every character but "@" leaves what goes before it
    SELECT "id", "scheme",
        substr("netloc", length(rtrim("netloc", replace("netloc", '@', ''))) + 1) AS "authority"
    FROM "netlocs"
), "parts" AS (
    SELECT "id", "scheme",
        CASE WHEN "authority" LIKE '[%' THEN
                substr("authority", 2, instr("authority", ']') - 2)
            WHEN instr("authority", ':') > 0 THEN
                lower(substr("authority", 1, instr("authority", ':') - 1))
            ELSE lower("authority") END AS "name",
        CASE WHEN "authority" LIKE '[%' THEN
                substr("authority", instr("authority", ']') + 2)
            WHEN instr("authority", ':') > 0 THEN
                substr("authority", instr("authority", ':') + 1)
            ELSE '' END AS "port"
    FROM "authorities"
), "ports" AS (
    SELECT "id", "name",
        CASE WHEN "port" = '' OR "port" GLOB '*[^0-9]*' THEN
                CASE "scheme" WHEN 'https' THEN '443' WHEN 'http' THEN '80' ELSE '0' END
            -- past 65535 (which check_url refused only later): -1, as host_of gives
            WHEN length(ltrim("port", '0')) > 5 THEN '-1'
            WHEN CAST("port" AS INTEGER) > 65535 THEN '-1'
            ELSE CAST(CAST("port" AS INTEGER) AS TEXT) END AS "port"
    FROM "parts"
), "hosts" AS (
    SELECT "id",
        CASE WHEN "name" LIKE '%:%' THEN '[' || lower("name") || ']'
            WHEN "port" = '-1' THEN "name" -- host_of reads such a URL's name no further
            WHEN "name" LIKE '%.' THEN substr("name", 1, length("name") - 1)
            ELSE "name" END
        || ':' || "port" AS "host"
    FROM "ports"
)
UPDATE "deliveries" SET
    "host" = "hosts"."host",
    "data" = substr(rtrim("data"), 1, length(rtrim("data")) - 1)
        || ',"host":' || json_quote("hosts"."host") || '}'
FROM "hosts"
WHERE "hosts"."id" = "deliveries"."webhook_id" AND "deliveries"."status" = 'PENDING';

DROP INDEX IF EXISTS "deliveries_due_idx";

CREATE INDEX "deliveries_claim_idx" ON "deliveries" ("status", "created_at", "id", "host");
