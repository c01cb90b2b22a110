-- Quotas (protocol §8): what each family holds, kept by triggers in the transaction of every change to `items`; see
-- the PostgreSQL migration.
ALTER TABLE families ADD COLUMN live_items INTEGER NOT NULL DEFAULT 0;
ALTER TABLE families ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;

UPDATE families SET
    live_items = (SELECT count(*) FROM items WHERE family_id = families.id AND NOT deleted),
    stored_bytes = (SELECT COALESCE(sum(length(CAST(body AS BLOB))), 0) FROM items WHERE family_id = families.id AND NOT deleted);

CREATE TRIGGER items_usage_insert AFTER INSERT ON items WHEN NOT NEW.deleted
BEGIN
    UPDATE families SET live_items = live_items + 1, stored_bytes = stored_bytes + COALESCE(length(CAST(NEW.body AS BLOB)), 0)
    WHERE id = NEW.family_id;
END;

CREATE TRIGGER items_usage_update AFTER UPDATE OF deleted, body ON items WHEN NOT OLD.deleted OR NOT NEW.deleted
BEGIN
    UPDATE families SET
        live_items = live_items + (NOT NEW.deleted) - (NOT OLD.deleted),
        stored_bytes = stored_bytes
            + (CASE WHEN NEW.deleted THEN 0 ELSE COALESCE(length(CAST(NEW.body AS BLOB)), 0) END)
            - (CASE WHEN OLD.deleted THEN 0 ELSE COALESCE(length(CAST(OLD.body AS BLOB)), 0) END)
    WHERE id = NEW.family_id;
END;

CREATE TRIGGER items_usage_delete AFTER DELETE ON items WHEN NOT OLD.deleted
BEGIN
    UPDATE families SET live_items = live_items - 1, stored_bytes = stored_bytes - COALESCE(length(CAST(OLD.body AS BLOB)), 0)
    WHERE id = OLD.family_id;
END;
