-- Same as the PostgreSQL migration of the same name.
-- Login throttling by (username, address), by address and by username (protocol §1). `key` is one of
-- "p:<username>|<address>", "a:<address>", "u:<username>"; a window starts at its first counted attempt.
CREATE TABLE login_throttle (
    key             TEXT PRIMARY KEY,
    attempts        INTEGER NOT NULL,
    window_start_ms INTEGER NOT NULL
);
CREATE INDEX login_throttle_window ON login_throttle (window_start_ms);
DROP TABLE login_failures;

-- Tokens by account, so a password change revokes the account's other tokens at once.
CREATE INDEX tokens_account ON tokens (account_id);

-- The tombstone purge finds old tombstones without scanning live rows.
CREATE INDEX items_tombstones ON items (modified_ms) WHERE deleted;
