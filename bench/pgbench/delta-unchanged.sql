-- pgbench script of the bench case "delta-unchanged": exactly the statements the server sends to PostgreSQL for one
-- request of that case (captured with log_statement=all from the release build of commit 83a43d7, see
-- docs/performance.md), in the same order and transaction shape. No token lookup: the server's session cache
-- answers it. The server prepares its hottest statements (delta, family lock, item read) and sends the others as
-- unnamed statements; here the family's keys (family id, the version inside its date) come from bench_keys (loaded
-- by bench/harness.py) through a sub-select on its primary key, so one pgbench transaction draws a random family
-- like one wrk request does.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D now=… -D nfam=… -f this.
-- Since 2026-11-26 a list's delta is PreparedStatements.CollectionDelta: one collection, each value through a
-- sub-select (as here), so that PostgreSQL keeps one generic plan instead of planning every run.
\set n random(1, :nfam)
SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = (SELECT 'contacts'::text) AND i.parent_id = ''
  AND i.version > (SELECT d1 FROM bench_keys WHERE n = :n) AND ((SELECT true) OR NOT i.deleted)
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version;
