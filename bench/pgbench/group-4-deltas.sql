-- pgbench script of the bench case "group-4-deltas": exactly the statements the server sends to PostgreSQL for one
-- request of that case, in the same order and transaction shape (the SQL of PostgresPageStatements.swift with the
-- bound values written in; see docs/performance.md). No token lookup: the server's session cache answers it. The
-- family's keys (family id, the version inside its date) come from bench_keys (loaded by bench/harness.py) through a
-- sub-select on its primary key, so one pgbench transaction draws a random family like one wrk request does.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D now=… -D nfam=… -f this.
\set n 1
START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY('{contacts}'::text[]) AND i.parent_id = ''
  AND i.version > (SELECT d0 FROM bench_keys WHERE n = :n) AND (true OR NOT i.deleted)
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version;
SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY('{events}'::text[]) AND i.parent_id = ''
  AND i.version > (SELECT d0 FROM bench_keys WHERE n = :n) AND (true OR NOT i.deleted)
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version;
SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY('{places}'::text[]) AND i.parent_id = ''
  AND i.version > (SELECT d0 FROM bench_keys WHERE n = :n) AND (true OR NOT i.deleted)
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version;
SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY('{family,members,accounts,settings}'::text[]) AND i.parent_id = ''
  AND i.version > (SELECT d0 FROM bench_keys WHERE n = :n) AND (true OR NOT i.deleted)
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version;
COMMIT;
