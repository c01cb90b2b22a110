-- Accounts of identity providers (protocol §14); see the PostgreSQL migration.
CREATE TABLE identities (
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    account_id TEXT NOT NULL UNIQUE REFERENCES accounts (id),
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (issuer, subject)
) WITHOUT ROWID;
