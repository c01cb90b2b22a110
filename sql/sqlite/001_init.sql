-- SyncAPI schema, SQLite. Same shape as the PostgreSQL schema; every key starts with the family.
CREATE TABLE syncapi_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE families (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL DEFAULT 0,
    horizon    INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL
);

CREATE TABLE accounts (
    id            TEXT PRIMARY KEY,
    family_id     TEXT NOT NULL REFERENCES families (id),
    username      TEXT NOT NULL,
    username_key  TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX accounts_family ON accounts (family_id);

CREATE TABLE tokens (
    hash       TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    family_id  TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX tokens_expiry ON tokens (expires_ms);

CREATE TABLE login_failures (
    username_key    TEXT PRIMARY KEY,
    failures        INTEGER NOT NULL,
    window_start_ms INTEGER NOT NULL
);

CREATE TABLE items (
    family_id   TEXT NOT NULL,
    collection  TEXT NOT NULL,
    parent_id   TEXT NOT NULL DEFAULT '',
    id          TEXT NOT NULL,
    version     INTEGER NOT NULL,
    deleted     INTEGER NOT NULL,
    body        TEXT,
    modified_ms INTEGER NOT NULL,
    PRIMARY KEY (family_id, collection, parent_id, id)
) WITHOUT ROWID;
CREATE INDEX items_delta ON items (family_id, collection, version);
