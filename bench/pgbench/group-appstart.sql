-- pgbench script of the bench case "group-appstart": exactly the statements the server sends to PostgreSQL for one
-- request of that case, in the same order and transaction shape (the SQL of PostgresPageStatements.swift with the
-- bound values written in; see docs/performance.md). No token lookup: the server's session cache answers it. The
-- family's keys (family id, the version inside its date) come from bench_keys (loaded by bench/harness.py) through a
-- sub-select on its primary key, so one pgbench transaction draws a random family like one wrk request does.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D now=… -D nfam=… -f this.
\set n random(1, :nfam)
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
WITH changed AS (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads' AND parent_id = '' AND NOT deleted AND version > (SELECT d0 FROM bench_keys WHERE n = :n) ORDER BY sort_ms DESC, id DESC LIMIT 21), top AS (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads' AND parent_id = '' AND NOT deleted ORDER BY sort_ms DESC, id DESC LIMIT 21), bottom AS (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads' AND parent_id = '' AND NOT deleted ORDER BY sort_ms ASC, id ASC LIMIT 1) SELECT 0 AS part, NULL::text COLLATE "C" AS pid, 0::int8 AS ord, NULL::text COLLATE "C" AS id, version AS version, NULL::bool AS deleted, NULL::text AS body, horizon AS sort_ms, NULL::int8 AS sort_version, NULL::text AS tag FROM families WHERE id = (SELECT family_id FROM bench_keys WHERE n = :n) UNION ALL SELECT 2, NULL, 0, id, version, deleted, body, sort_ms, sort_version, tag FROM changed UNION ALL SELECT 3, NULL, 0, id, version, deleted, body, sort_ms, sort_version, tag FROM top UNION ALL SELECT 5, NULL, 0, id, version, deleted, body, sort_ms, sort_version, tag FROM bottom UNION ALL SELECT 6, NULL, version, id, NULL, NULL, NULL, NULL, NULL, NULL FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'threads' AND parent_id = '' AND version > (SELECT d0 FROM bench_keys WHERE n = :n) AND (deleted OR (false AND NOT coalesce(tag = ANY('{}'::text[]), false))) UNION ALL SELECT 7, p.pid, 0, c.* FROM (SELECT id FROM changed UNION SELECT id FROM top) p(pid) CROSS JOIN LATERAL (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'messages' AND parent_id = p.pid AND NOT deleted ORDER BY sort_ms DESC, id DESC LIMIT 11) c ORDER BY part, pid, ord, sort_ms DESC, id DESC;
WITH changed AS (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'wall' AND parent_id = '' AND NOT deleted AND version > (SELECT d0 FROM bench_keys WHERE n = :n) ORDER BY sort_ms DESC, id DESC LIMIT 21), top AS (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'wall' AND parent_id = '' AND NOT deleted ORDER BY sort_ms DESC, id DESC LIMIT 21), bottom AS (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'wall' AND parent_id = '' AND NOT deleted ORDER BY sort_ms ASC, id ASC LIMIT 1) SELECT 0 AS part, NULL::text COLLATE "C" AS pid, 0::int8 AS ord, NULL::text COLLATE "C" AS id, version AS version, NULL::bool AS deleted, NULL::text AS body, horizon AS sort_ms, NULL::int8 AS sort_version, NULL::text AS tag FROM families WHERE id = (SELECT family_id FROM bench_keys WHERE n = :n) UNION ALL SELECT 2, NULL, 0, id, version, deleted, body, sort_ms, sort_version, tag FROM changed UNION ALL SELECT 3, NULL, 0, id, version, deleted, body, sort_ms, sort_version, tag FROM top UNION ALL SELECT 5, NULL, 0, id, version, deleted, body, sort_ms, sort_version, tag FROM bottom UNION ALL SELECT 6, NULL, version, id, NULL, NULL, NULL, NULL, NULL, NULL FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'wall' AND parent_id = '' AND version > (SELECT d0 FROM bench_keys WHERE n = :n) AND (deleted OR (false AND NOT coalesce(tag = ANY('{}'::text[]), false))) UNION ALL SELECT 7, p.pid, 0, c.* FROM (SELECT id FROM changed UNION SELECT id FROM top) p(pid) CROSS JOIN LATERAL (SELECT id, version, deleted, body, sort_ms, sort_version, tag FROM items WHERE family_id = (SELECT family_id FROM bench_keys WHERE n = :n) AND collection = 'comments' AND parent_id = p.pid AND NOT deleted ORDER BY sort_ms DESC, id DESC LIMIT 11) c ORDER BY part, pid, ord, sort_ms DESC, id DESC;
SELECT f.version, f.horizon, i.collection, i.id, i.version, i.deleted, i.body, i.sort_ms, i.sort_version, i.tag
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = ANY('{family,members,accounts,settings}'::text[]) AND i.parent_id = ''
  AND i.version > (SELECT d0 FROM bench_keys WHERE n = :n) AND (true OR NOT i.deleted)
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version;
COMMIT;
