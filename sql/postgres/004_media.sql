-- Media of a family (protocol §10), named by the SHA-256 of their bytes, stored once per family.
-- referenced_ms: the last time a purge saw a live item name it (or its upload time); it is purged once that is
-- older than the tombstone retention. upload_id: its bytes in media_chunks.
CREATE TABLE media (
    family_id     TEXT COLLATE "C" NOT NULL,
    sha256        TEXT COLLATE "C" NOT NULL,
    content_type  TEXT NOT NULL,
    size          BIGINT NOT NULL,
    created_ms    BIGINT NOT NULL,
    referenced_ms BIGINT NOT NULL,
    upload_id     TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (family_id, sha256)
);
-- The bytes, in chunks of 256 KiB (never one giant value), by upload; chunks no media row names are an upload
-- that failed or never finished, deleted by the purge.
CREATE TABLE media_chunks (
    upload_id  TEXT COLLATE "C" NOT NULL,
    n          INTEGER NOT NULL,
    data       BYTEA NOT NULL,
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (upload_id, n)
);
