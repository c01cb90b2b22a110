-- pgbench script of the bench case "group-4-deltas": exactly the statements the server sends to PostgreSQL for one
-- request of that case, in the same order and transaction shape (the SQL of PostgresPageStatements.swift with the
-- bound values written in; see docs/performance.md). No token lookup: the server's session cache answers it. The
-- family's keys (family id, the version inside its date) come from bench_keys (loaded by bench/harness.py) through a
-- sub-select on its primary key, so one pgbench transaction draws a random family like one wrk request does.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D now=… -D nfam=… -f this.
-- Since 2026-11-26 the run's deltas (ctcsync, evtsync, plcsync and familysync's four collections) are read ahead in
-- one statement (PreparedStatements.Deltas, the calls' arrays and its row limit written in), before the run's other statements.
-- Each call reads its rows in a lateral subquery (the shape of the server's statement since 2026-11-26 04:50 UTC).
\set n 1
START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
SELECT r.call, f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
CROSS JOIN unnest('{0,1,2,3,3,3,3}'::int8[], '{contacts,events,places,family,members,accounts,settings}'::text[],
  array_fill((SELECT d0 FROM bench_keys WHERE n = :n), ARRAY[7]), array_fill(true, ARRAY[7]))
  AS r(call, collection, after, include_deleted)
LEFT JOIN LATERAL (
  SELECT i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag FROM items i
  WHERE i.family_id = f.id AND i.collection = r.collection AND i.parent_id = ''
    AND i.version > r.after AND (r.include_deleted OR NOT i.deleted)
  ORDER BY i.version
  LIMIT (SELECT 2001)
) i ON true
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY r.call, i.version
LIMIT (SELECT 2001);
COMMIT;
