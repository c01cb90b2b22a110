-- Spaces (protocol §15): a family is a space, and an account belongs to several with a role in each. `since_version`
-- is the space's counter when the account last joined it: a date of sync below it was issued before (the account may
-- have missed deletes while it was out) and answers `sync: false` to it. `seq` orders memberships by joining.
CREATE TABLE memberships (
    space_id      TEXT COLLATE "C" NOT NULL REFERENCES families (id),
    account_id    TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
    role          TEXT COLLATE "C" NOT NULL CHECK (role IN ('owner', 'member', 'reader')),
    since_version BIGINT NOT NULL,
    seq           BIGSERIAL,
    PRIMARY KEY (account_id, space_id)
);
CREATE INDEX memberships_space ON memberships (space_id, seq);

-- Every account is a member of its family; the family's oldest account is its owner.
INSERT INTO memberships (space_id, account_id, role, since_version)
SELECT family_id, id,
       CASE WHEN row_number() OVER (PARTITION BY family_id ORDER BY created_ms, seq) = 1 THEN 'owner' ELSE 'member' END, 0
FROM accounts ORDER BY created_ms, seq;

-- Invitations by the SHA-256 of their code: a leaked table reveals no usable code.
CREATE TABLE invitations (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    space_id   TEXT COLLATE "C" NOT NULL REFERENCES families (id),
    role       TEXT COLLATE "C" NOT NULL CHECK (role IN ('owner', 'member', 'reader')),
    uses_left  INTEGER NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX invitations_expiry ON invitations (expires_ms);
