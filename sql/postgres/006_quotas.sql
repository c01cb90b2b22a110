-- Quotas (protocol §8): what each family holds, kept by the database itself in the transaction of every change to
-- `items`, whatever statement makes it (item writes, cascades to children, account deletion, seeding): its live
-- items and their stored bytes (canonical JSON; tombstones are not counted).
ALTER TABLE families ADD COLUMN live_items BIGINT NOT NULL DEFAULT 0;
ALTER TABLE families ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0;

UPDATE families f SET
    live_items = u.items,
    stored_bytes = u.bytes
FROM (
    SELECT family_id, count(*) AS items, COALESCE(sum(octet_length(body)), 0) AS bytes
    FROM items WHERE NOT deleted GROUP BY family_id
) u
WHERE u.family_id = f.id;

CREATE FUNCTION syncapi_items_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d_items BIGINT := 0;
    d_bytes BIGINT := 0;
    family TEXT;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        family := OLD.family_id;
        IF NOT OLD.deleted THEN
            d_items := d_items - 1;
            d_bytes := d_bytes - COALESCE(octet_length(OLD.body), 0);
        END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        family := NEW.family_id;
        IF NOT NEW.deleted THEN
            d_items := d_items + 1;
            d_bytes := d_bytes + COALESCE(octet_length(NEW.body), 0);
        END IF;
    END IF;
    IF d_items <> 0 OR d_bytes <> 0 THEN
        UPDATE families SET live_items = live_items + d_items, stored_bytes = stored_bytes + d_bytes WHERE id = family;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER items_usage AFTER INSERT OR UPDATE OF deleted, body OR DELETE ON items
    FOR EACH ROW EXECUTE FUNCTION syncapi_items_usage();
