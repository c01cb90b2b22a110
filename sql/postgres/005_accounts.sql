-- Issue 16: the family's first account is its owner (protocol §1). Accounts created in the same millisecond keep
-- their order of creation by this sequence (existing rows are numbered in no particular order; their created_ms
-- still orders them first).
ALTER TABLE accounts ADD COLUMN seq BIGSERIAL;
