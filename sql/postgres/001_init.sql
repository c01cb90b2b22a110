-- SyncAPI schema, PostgreSQL. Every key and index starts with the family (the tenant).
CREATE TABLE syncapi_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per family. `version` is the family's change counter: every write bumps it while holding this
-- row's lock inside its transaction, so versions follow commit order. `horizon`: tombstones at or below it
-- were purged.
CREATE TABLE families (
    id         TEXT COLLATE "C" PRIMARY KEY,
    name       TEXT NOT NULL,
    version    BIGINT NOT NULL DEFAULT 0,
    horizon    BIGINT NOT NULL DEFAULT 0,
    created_ms BIGINT NOT NULL
);

CREATE TABLE accounts (
    id            TEXT COLLATE "C" PRIMARY KEY,
    family_id     TEXT COLLATE "C" NOT NULL REFERENCES families (id),
    username      TEXT NOT NULL,
    username_key  TEXT COLLATE "C" NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_ms    BIGINT NOT NULL
);
CREATE INDEX accounts_family ON accounts (family_id);

-- Bearer tokens, by SHA-256 of the token: a leaked table reveals no usable token.
CREATE TABLE tokens (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
    family_id  TEXT COLLATE "C" NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX tokens_expiry ON tokens (expires_ms);

CREATE TABLE login_failures (
    username_key    TEXT COLLATE "C" PRIMARY KEY,
    failures        INTEGER NOT NULL,
    window_start_ms BIGINT NOT NULL
);

-- Every item of every collection: canonical JSON in `body` (NULL for a tombstone), `version` the family
-- counter value of its last change.
CREATE TABLE items (
    family_id   TEXT COLLATE "C" NOT NULL,
    collection  TEXT COLLATE "C" NOT NULL,
    parent_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    id          TEXT COLLATE "C" NOT NULL,
    version     BIGINT NOT NULL,
    deleted     BOOLEAN NOT NULL,
    body        TEXT,
    modified_ms BIGINT NOT NULL,
    PRIMARY KEY (family_id, collection, parent_id, id)
);
CREATE INDEX items_delta ON items (family_id, collection, version);
