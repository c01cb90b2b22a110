-- Security review H1: an invitation says who minted it and when (`created_by`, `created_ms`: NULL for the codes minted
-- before this migration). An owner lists and revokes a space's live codes, and an account's codes of a space go when it
-- leaves the space, is removed from it or stops being an owner there (in that transaction).
ALTER TABLE invitations ADD COLUMN created_by TEXT COLLATE "C";
ALTER TABLE invitations ADD COLUMN created_ms BIGINT;
CREATE INDEX invitations_space ON invitations (space_id, created_by);

-- The codes a removed account may no longer use: those of its space that existed when an owner removed it (a code
-- minted after the removal admits it again). Rows go with their invitation, and with the account.
CREATE TABLE invitation_refusals (
    hash       TEXT COLLATE "C" NOT NULL REFERENCES invitations (hash) ON DELETE CASCADE,
    account_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (hash, account_id)
);
