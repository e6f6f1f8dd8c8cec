#!/bin/bash
# The PostgreSQL schema (schema/pg) against SQLite's (schema/migrations),
# issue 19: both made by the server itself (`beatline-server app list` on a
# fresh database applies every migration), then their tables, columns
# (type, NOT NULL, default, primary-key position), unique constraints,
# indexes (columns, partial or not), foreign keys and triggers listed in
# one form and diffed. A change to one schema without the other fails here.
# Types map INTEGER = bigint, TEXT = text, BLOB = bytea, REAL = double
# precision. Tables PostgreSQL alone has (its schema version, and what
# several nodes share there instead of a node's data folder) are named in
# PG_ONLY and left out; any other table of one schema only is a difference.
#
#   pg_schema_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# PostgreSQL-only tables: the schema version (store/db.c), the raw batch
# queue (pg-queue), uploaded files (pg-files)
PG_ONLY="beatline_schema raw_batches files file_chunks build_files"
# this test is about PostgreSQL whatever BEATLINE_TEST_STORE says
BEATLINE_TEST_STORE=sqlite
setup "$@"
. "$HERE/../lib/pg.sh"
if [ -z "${BEATLINE_TEST_PG_URL:-}" ]; then
  pg_start || {
    bad "cannot start PostgreSQL"
    finish
  }
  trap 'stop_server; pg_stop' EXIT
fi
PGURL=$(pg_new_db) || {
  bad "cannot create a database"
  finish
}
[ -n "${PG_DIR:-}" ] || trap 'stop_server; pg_drop_db "$PGURL"' EXIT

# --- both schemas, made by the server ---
"$BIN/beatline-server" --data sq app list > /dev/null 2> sq.err ||
  bad "sqlite app list: $(cat sq.err)"
"$BIN/beatline-server" --data pgd --store "$PGURL" app list > /dev/null 2> pg.err ||
  bad "postgresql app list: $(cat pg.err)"
expect "postgresql schema version: every schema/pg file" \
  "$(find "$HERE/../../schema/pg" -name '[0-9][0-9][0-9][0-9]_*.sql' | wc -l)" \
  "$(psql -X -At -d "$PGURL" -c 'SELECT max(version) FROM beatline_schema' 2>&1)"

# --- SQLite, one line per fact ---
sqlite3 sq/beatline.db << 'EOF' | LC_ALL=C sort > sqlite.txt
.mode list
.separator |
WITH t AS (SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%')
SELECT 'column', t.name, c.name, upper(c.type), c."notnull" OR c.pk > 0, coalesce(c.dflt_value, ''), c.pk
  FROM t, pragma_table_info(t.name) c
UNION ALL
SELECT 'unique', t.name, (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info(l.name) ORDER BY seqno)), '', '', '', ''
  FROM t, pragma_index_list(t.name) l WHERE l.origin = 'u'
UNION ALL
SELECT 'index', t.name, l.name, (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info(l.name) ORDER BY seqno)), l.partial, '', ''
  FROM t, pragma_index_list(t.name) l WHERE l.origin = 'c'
UNION ALL
SELECT 'fk', t.name, f."from", f."table", f."to", '', ''
  FROM t, pragma_foreign_key_list(t.name) f
UNION ALL
SELECT 'trigger', tbl_name, name, '', '', '', '' FROM sqlite_schema WHERE type = 'trigger'
ORDER BY 1, 2, 3, 4;
EOF

# --- PostgreSQL, in the same form ---
pg_only="'$(sed "s/ /','/g" <<< "$PG_ONLY")'"
psql -X -q -At -F '|' -v ON_ERROR_STOP=1 -d "$PGURL" << EOF | LC_ALL=C sort > pg.txt
WITH t AS (SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname NOT IN ($pg_only)),
ix AS (SELECT t.relname, i.indexrelid, i.indisprimary, i.indisunique, i.indpred IS NOT NULL AS partial,
              (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(i.indkey) WITH ORDINALITY k(att, n)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.att) AS cols,
              EXISTS (SELECT 1 FROM pg_constraint x WHERE x.conindid = i.indexrelid) AS constr
       FROM t JOIN pg_index i ON i.indrelid = t.oid)
SELECT 'column', t.relname, a.attname,
       CASE format_type(a.atttypid, a.atttypmod) WHEN 'bigint' THEN 'INTEGER' WHEN 'text' THEN 'TEXT'
            WHEN 'bytea' THEN 'BLOB' WHEN 'double precision' THEN 'REAL'
            ELSE format_type(a.atttypid, a.atttypmod) END,
       CASE WHEN a.attnotnull THEN '1' ELSE '0' END,
       CASE WHEN a.attidentity <> '' THEN '' ELSE coalesce(pg_get_expr(d.adbin, d.adrelid), '') END,
       coalesce((SELECT array_position(i.indkey::int2[], a.attnum) + 1 - array_lower(i.indkey::int2[], 1) FROM pg_index i
                 WHERE i.indrelid = t.oid AND i.indisprimary), 0)::text
  FROM t JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = t.oid AND d.adnum = a.attnum
UNION ALL
SELECT 'unique', relname, cols, '', '', '', '' FROM ix WHERE indisunique AND NOT indisprimary AND constr
UNION ALL
SELECT 'index', relname, (SELECT relname FROM pg_class WHERE oid = indexrelid), cols,
       CASE WHEN partial THEN '1' ELSE '0' END, '', '' FROM ix WHERE NOT constr
UNION ALL
SELECT 'fk', t.relname, a.attname, r.relname, ra.attname, '', ''
  FROM t JOIN pg_constraint x ON x.conrelid = t.oid AND x.contype = 'f'
  JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.conkey[1]
  JOIN pg_class r ON r.oid = x.confrelid
  JOIN pg_attribute ra ON ra.attrelid = x.confrelid AND ra.attnum = x.confkey[1]
UNION ALL
SELECT 'trigger', c.relname, g.tgname, '', '', '', '' FROM pg_trigger g JOIN t c ON c.oid = g.tgrelid
  WHERE NOT g.tgisinternal
ORDER BY 1, 2, 3, 4;
EOF

# the lists are not trivially empty
expect_grep "sqlite lists apps.name" '^column|apps|name|TEXT|1||0$' "$(cat sqlite.txt)"
expect_grep "postgresql lists a partial index" '^index|batches|batches_raw_kept|app_id,received_at|1' \
  "$(cat pg.txt)"
if diff -u sqlite.txt pg.txt > schema.diff; then
  ok
else
  bad "schemas differ (- sqlite, + postgresql): $(cat schema.diff)"
fi
finish
