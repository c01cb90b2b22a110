-- A space whose last member left is deleted with its data after the tombstone retention; see the PostgreSQL migration.
ALTER TABLE families ADD COLUMN emptied_ms INTEGER;
CREATE INDEX families_emptied ON families (emptied_ms) WHERE emptied_ms IS NOT NULL;
