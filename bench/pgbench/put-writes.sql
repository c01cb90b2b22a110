-- pgbench script of the bench case "put-writes": exactly the statements the server sends to PostgreSQL for one
-- request of that case (captured with log_statement=all from the release build of commit 83a43d7, see
-- docs/performance.md), in the same order and transaction shape. No token lookup: the server's session cache
-- answers it. The server prepares its hottest statements (delta, family lock, item read) and sends the others as
-- unnamed statements; here the family's keys (family id, the version inside its date) come from bench_keys (loaded
-- by bench/harness.py) through a sub-select on its primary key, so one pgbench transaction draws a random family
-- like one wrk request does.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D now=… -D nfam=… -f this.
\set n random(1, :nfam)
\set w random(1, 200)
\set r random(1, 1000000)
BEGIN;
SELECT version FROM families WHERE id = (SELECT family_id FROM bench_keys WHERE n = :n) FOR UPDATE;
SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items
WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'contacts' AND parent_id = '' AND id = 'pgb' || :w::text;
WITH bumped AS (
  UPDATE families SET version = version + 1 WHERE id = (SELECT family_id FROM bench_keys WHERE n = :n) AND true
  RETURNING version, pg_notify('syncapi_changes', id)
), v AS (
  SELECT version FROM bumped UNION ALL SELECT 0::BIGINT WHERE false
)
INSERT INTO items (family_id, collection, parent_id, id, version, deleted, body, modified_ms, sort_ms, sort_version, tag)
SELECT (SELECT family_id FROM bench_keys WHERE n = :n), 'contacts', '', 'pgb' || :w::text, v.version, false,
       '{"id":"pgb' || :w::text || '","firstName":"Writer ' || :r::text || '","lastName":"Bench","emails":["w' || :r::text || '@example.org"],"phones":["+33 6 12345678"],"birthdayEventId": null,"notes": null,"modified":"2026-11-22T12-22-44.415Z"}',
       :now::bigint, NULL, v.version, NULL FROM v
ON CONFLICT (family_id, collection, parent_id, id) DO UPDATE SET
  version = EXCLUDED.version, deleted = EXCLUDED.deleted, body = EXCLUDED.body, modified_ms = EXCLUDED.modified_ms,
  sort_ms = EXCLUDED.sort_ms, tag = EXCLUDED.tag,
  sort_version = CASE WHEN false OR items.sort_version IS NULL THEN EXCLUDED.version ELSE items.sort_version END
RETURNING version, sort_version;
COMMIT;
