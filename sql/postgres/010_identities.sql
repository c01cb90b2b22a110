-- Accounts of identity providers (protocol §14): the same (issuer, subject) is always the same account, and the same
-- subject from two issuers two accounts. An identity account has no password (its hash is "!", which no password
-- matches) and a username no one can type ("~" and its id).
CREATE TABLE identities (
    issuer     TEXT COLLATE "C" NOT NULL,
    subject    TEXT COLLATE "C" NOT NULL,
    account_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES accounts (id),
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
