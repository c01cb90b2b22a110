-- A space whose last member left (protocol §15: its last account was deleted) is deleted with its data after the
-- tombstone retention. `emptied_ms`: when it emptied; NULL while it has members. Its invitations go at once (an empty
-- space accepts nobody).
ALTER TABLE families ADD COLUMN emptied_ms BIGINT;
CREATE INDEX families_emptied ON families (emptied_ms) WHERE emptied_ms IS NOT NULL;
