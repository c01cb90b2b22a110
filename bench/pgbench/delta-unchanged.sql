-- pgbench script of the bench case "delta-unchanged": exactly the statements the server sends to PostgreSQL for one
-- request of that case (captured with log_statement=all from a release build, see docs/performance.md), in the same
-- order and transaction shape. The server binds every value as a parameter of an unnamed statement; here the family's
-- keys (token hash, family id, the version inside its date) come from bench_keys (loaded by bench/harness.py) through
-- a sub-select on its primary key, so one pgbench transaction draws a random family like one wrk request does.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D now=… -D nfam=… -f this.
\set n random(1, :nfam)
SELECT account_id, family_id FROM tokens WHERE hash = (SELECT hash FROM bench_keys WHERE n = :n) AND expires_ms > :now;
SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY('{contacts}'::text[]) AND i.parent_id = ''
  AND i.version > (SELECT d1 FROM bench_keys WHERE n = :n) AND (true OR NOT i.deleted)
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version;
