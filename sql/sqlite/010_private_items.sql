-- An account's private rows live only while it belongs to their space (security review M1); see the PostgreSQL
-- migration.
CREATE INDEX items_private ON items (collection) WHERE collection LIKE '%~%';

DELETE FROM items
WHERE collection LIKE '%~%'
  AND NOT EXISTS (
      SELECT 1 FROM memberships m
      WHERE m.space_id = items.family_id AND m.account_id = substr(items.collection, instr(items.collection, '~') + 1)
  );
