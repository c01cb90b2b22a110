-- A delta reads the changes of one list: its family, collection and parent ('' for a list of the model), after a
-- version. The delta statements are planned once per connection (issue 19), so their plan cannot see which parent
-- is common: with the parent between the collection and the version here, the index serves every condition of a
-- delta, and no other index can look cheaper. Without it, in a database where children (messages, comments) were most
-- rows, PostgreSQL read a list's delta through the primary key: every item of the list, not its changes.
-- Building the index holds writes to `items` until it is built (seconds per million rows).
DROP INDEX items_delta;
CREATE INDEX items_delta ON items (family_id, collection, parent_id, version);
