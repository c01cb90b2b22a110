-- Histories (docs/decisions.md, "Histories after a failover"). A promoted standby writes on a new PostgreSQL timeline,
-- and with asynchronous replication it may lack the last commits of the primary it replaces: a space's counter goes
-- back, and a date of sync issued on the lost line would be answered as a delta of other contents. Each timeline this
-- database writes on is a history with a random id, minted by the first write on it (`syncapi_history()`); the timeline
-- the database is on when this migration runs is its first history, ''. A standby promoted from a line that never
-- reached a mint has no row for its timeline, so it mints its own: two lines never share an id.
CREATE TABLE histories (
    timeline INTEGER PRIMARY KEY,
    id       TEXT COLLATE "C" NOT NULL UNIQUE,
    began_ms BIGINT NOT NULL
);

-- The timeline of the WAL written now (on a primary; a standby has none to write).
CREATE FUNCTION syncapi_timeline() RETURNS INTEGER LANGUAGE sql VOLATILE AS $$
    SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::integer
$$;

INSERT INTO histories (timeline, id, began_ms)
VALUES (syncapi_timeline(), '', (extract(epoch FROM clock_timestamp()) * 1000)::bigint);

-- The id of the history a write happens on: its timeline's, minted by the first write on a new timeline (concurrent
-- first writes wait for one another on the key, and all take the one that committed).
CREATE FUNCTION syncapi_history() RETURNS TEXT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    line INTEGER := syncapi_timeline();
    found TEXT;
BEGIN
    SELECT id INTO found FROM histories WHERE timeline = line;
    IF found IS NULL THEN
        INSERT INTO histories (timeline, id, began_ms)
        VALUES (line, substr(replace(gen_random_uuid()::text, '-', ''), 1, 16), (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
        ON CONFLICT (timeline) DO NOTHING;
        SELECT id INTO found FROM histories WHERE timeline = line;
    END IF;
    RETURN found;
END
$$;

-- A space's line (`SpaceLineage`): the history its counter last moved on, and from its first move on that history,
-- the history it came from and the counter value it had then (the last state both lines share).
ALTER TABLE families ADD COLUMN history TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE families ADD COLUMN fork_from TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE families ADD COLUMN fork_version BIGINT NOT NULL DEFAULT 0;
