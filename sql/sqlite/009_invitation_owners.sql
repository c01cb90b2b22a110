-- Who minted each invitation and when, and the codes a removed account may no longer use (security review H1); see the
-- PostgreSQL migration.
ALTER TABLE invitations ADD COLUMN created_by TEXT;
ALTER TABLE invitations ADD COLUMN created_ms INTEGER;
CREATE INDEX invitations_space ON invitations (space_id, created_by);

CREATE TABLE invitation_refusals (
    hash       TEXT NOT NULL REFERENCES invitations (hash) ON DELETE CASCADE,
    account_id TEXT NOT NULL,
    PRIMARY KEY (hash, account_id)
) WITHOUT ROWID;
