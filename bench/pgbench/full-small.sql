-- pgbench script of the bench case "full-1000": exactly the statement the server sends to PostgreSQL for one request of
-- that case (PreparedStatements.LiveRows, with the bound values written in; see docs/performance.md): the family's
-- counter joined to the body of every live row, one statement, no transaction. The family's id comes from bench_keys.
-- Run by bench/harness.py: pgbench -n -M prepared -c <case's connections> -T <duration> -D big_small=… -f this.
\set n :big_small
SELECT f.version, i.body
FROM families f
LEFT JOIN items i ON i.family_id = f.id AND i.collection = (SELECT 'contacts'::text) AND i.parent_id = '' AND NOT i.deleted
WHERE f.id = (SELECT family_id FROM bench_keys WHERE n = :n)
ORDER BY i.version, i.id;
