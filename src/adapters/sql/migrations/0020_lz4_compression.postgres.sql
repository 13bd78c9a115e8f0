-- 0020 lz4_compression: the values written with every transaction of the loop are compressed
-- with lz4 rather than pglz (PostgreSQL's default), which spent a tenth of the server's time
-- in the loop: each document, receipt and signal is a chunk of "blob_chunks" (a 10 kB
-- document, 3 kB once compressed), and a record's JSON ("data") is compressed too once its
-- row passes about 2 kB (a transaction with many response lines or a long error text). lz4
-- compresses several times faster, about as small. Values stored before stay as they are
-- (each is read with the method it was written with). A server built without lz4 keeps
-- pglz, and so does one older than PostgreSQL 14. Written by hand. Released: never edit,
-- add a migration.

DO $$
BEGIN
    -- SET COMPRESSION came with PostgreSQL 14: an older server keeps pglz
    IF current_setting('server_version_num')::int >= 140000 THEN
        EXECUTE 'ALTER TABLE "transactions" ALTER COLUMN "data" SET COMPRESSION lz4';
        EXECUTE 'ALTER TABLE "events" ALTER COLUMN "data" SET COMPRESSION lz4';
        EXECUTE 'ALTER TABLE "artefacts" ALTER COLUMN "data" SET COMPRESSION lz4';
        EXECUTE 'ALTER TABLE "deliveries" ALTER COLUMN "data" SET COMPRESSION lz4';
        EXECUTE 'ALTER TABLE "blob_chunks" ALTER COLUMN "data" SET COMPRESSION lz4';
    END IF;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
