-- Paginated lists (threads, wall) and children (messages, comments); see the PostgreSQL migration for the columns.
ALTER TABLE items ADD COLUMN sort_ms INTEGER;
ALTER TABLE items ADD COLUMN sort_version INTEGER;
ALTER TABLE items ADD COLUMN tag TEXT;

CREATE INDEX items_order ON items (family_id, collection, parent_id, sort_ms DESC, id DESC) WHERE NOT deleted;
