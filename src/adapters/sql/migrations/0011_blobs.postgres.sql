-- 0011 blobs: documents, receipts and artefacts in the database (adapters.postgres.blobs),
-- so that processes on several machines share them without a shared file system.
-- A blob is a row of "blobs" and its content rows of "blob_chunks", 1 MiB each, numbered
-- from 0; storing a key again writes a new version and removes the old one's chunks in the
-- same transaction, so a reader of one version never sees another's pieces.
-- Written by hand (not a collection). Released: never edit, add a migration.

CREATE TABLE "blobs" (
    "key" TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    "version" UUID NOT NULL,
    "size" BIGINT NOT NULL,
    "stored_at" TIMESTAMPTZ NOT NULL
);

CREATE INDEX "blobs_stored_at_idx" ON "blobs" ("stored_at");

CREATE TABLE "blob_chunks" (
    "key" TEXT COLLATE "C" NOT NULL REFERENCES "blobs" ("key") ON DELETE CASCADE,
    "version" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,
    PRIMARY KEY ("key", "version", "seq")
);
