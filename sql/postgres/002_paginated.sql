-- Paginated lists (threads, wall) and children (messages, comments).
-- sort_ms: the item's sort key (lastMessageAt or created, in ms); sort_version: the version at which that key last
-- moved, so that a lastId whose place moved after a client's date is recognised; tag: the filter value (wall type).
ALTER TABLE items ADD COLUMN sort_ms BIGINT;
ALTER TABLE items ADD COLUMN sort_version BIGINT;
ALTER TABLE items ADD COLUMN tag TEXT COLLATE "C";

-- Pages in sort order (sort key desc, id desc), live items only.
CREATE INDEX items_order ON items (family_id, collection, parent_id, sort_ms DESC, id DESC) WHERE NOT deleted;
