-- pgbench script of the bench case "msgsync-delta": exactly the statements the server sends to PostgreSQL for one
-- request of that case (captured with log_statement=all from the release build of commit 83a43d7, see
-- docs/performance.md), in the same order and transaction shape. No token lookup: the server's session cache
-- answers it. The server prepares its hottest statements (delta, family lock, item read) and sends the others as
-- unnamed statements; here the family's keys (family id, the version inside its date) come from bench_keys (loaded
-- by bench/harness.py) through a sub-select on its primary key, so one pgbench transaction draws a random family
-- like one wrk request does.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D now=… -D nfam=… -f this.
\set n random(1, :nfam)
BEGIN;
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY;
SELECT version, horizon FROM families WHERE id = (SELECT family_id FROM bench_keys WHERE n = :n);
SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads' AND parent_id = '' AND NOT deleted AND (true OR tag = ANY('{}'::text[])) AND version > (SELECT d0 FROM bench_keys WHERE n = :n) ORDER BY sort_ms DESC, id DESC LIMIT 21;
SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads' AND parent_id = '' AND NOT deleted AND (true OR tag = ANY('{}'::text[])) ORDER BY sort_ms DESC, id DESC LIMIT 21;
SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads' AND parent_id = '' AND NOT deleted AND (true OR tag = ANY('{}'::text[])) ORDER BY sort_ms ASC, id ASC LIMIT 1;
SELECT id FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads'
AND parent_id = '' AND version > (SELECT d0 FROM bench_keys WHERE n = :n)
AND (deleted OR (false AND NOT coalesce(tag = ANY('{}'::text[]), false)))
ORDER BY version;
SELECT p.pid, c.id, c.version, c.deleted, c.body, c.sort_ms, c.sort_version, c.tag
FROM unnest('{t0,t1,t2,t3,t4,t5,t6,t7,t8,t9,t10,t11}'::text[]) AS p(pid)
CROSS JOIN LATERAL (
  SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items
  WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'messages' AND parent_id = p.pid COLLATE "C" AND NOT deleted
  ORDER BY sort_ms DESC, id DESC LIMIT 11
) c
ORDER BY p.pid, c.sort_ms DESC, c.id DESC;
COMMIT;
