-- Spaces (protocol §15); see the PostgreSQL migration. Memberships are ordered by joining by their rowid.
CREATE TABLE memberships (
    space_id      TEXT NOT NULL REFERENCES families (id),
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    role          TEXT NOT NULL CHECK (role IN ('owner', 'member', 'reader')),
    since_version INTEGER NOT NULL,
    PRIMARY KEY (account_id, space_id)
);
CREATE INDEX memberships_space ON memberships (space_id);

INSERT INTO memberships (space_id, account_id, role, since_version)
SELECT family_id, id,
       CASE WHEN row_number() OVER (PARTITION BY family_id ORDER BY created_ms, rowid) = 1 THEN 'owner' ELSE 'member' END, 0
FROM accounts ORDER BY created_ms, rowid;

CREATE TABLE invitations (
    hash       TEXT PRIMARY KEY,
    space_id   TEXT NOT NULL REFERENCES families (id),
    role       TEXT NOT NULL CHECK (role IN ('owner', 'member', 'reader')),
    uses_left  INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX invitations_expiry ON invitations (expires_ms);
