-- A delta reads the changes of one list: its family, collection and parent ('' for a list of the model), after a
-- version. The delta statements are planned once per connection (issue 19), so their plan cannot see which parent
-- is common: with the parent between the collection and the version here, the index serves every condition of a
-- delta, and no other index can look cheaper. Without it, in a database where children (messages, comments) were most
-- rows, PostgreSQL read a list's delta through the primary key: every item of the list, not its changes.
-- The new index is built first, which holds writes to `items` (reads go on); dropping the old one comes last, as its
-- lock stops reads too until the migration commits (migrations run in one transaction).
CREATE INDEX items_delta_parent ON items (family_id, collection, parent_id, version);
DROP INDEX items_delta;
ALTER INDEX items_delta_parent RENAME TO items_delta;
