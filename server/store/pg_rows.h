/*
 * pg_rows.h — writing many rows in one PostgreSQL statement (issue 19):
 * the writer's hot path (store/writer.c, store/rollups.c) sends a round's
 * rows as arrays (`unnest(CAST(?1 AS bigint[]), …)`) instead of one
 * statement per row, and merges the latency sketches of aggregate rows in
 * C (SQLite's sketch_merge SQL function does not exist on PostgreSQL).
 * Private to server/store. Used on PostgreSQL connections only.
 */
#ifndef BL_STORE_PG_ROWS_H
#define BL_STORE_PG_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "common/blerr.h"
#include "common/buf.h"
#include "store/db.h"
#include "store/stmt.h"

/* A PostgreSQL array literal of integers or of texts being built:
 * {1,2,3}, {"a","b"}. */
typedef struct bl_pga {
    bl_buf b; /* "{" and the values so far, comma-separated (owned) */
    size_t n; /* values added */
} bl_pga;

void bl_pga_init(bl_pga *a);
/* Empties the array (its storage kept). */
void bl_pga_reset(bl_pga *a);
void bl_pga_cleanup(bl_pga *a);
/* Appends one value. BL_ENOMEM. */
bl_err bl_pga_int(bl_pga *a, int64_t v);
/* Appends one text value, quoted (any text valid in the database's
 * encoding; NULL: an empty text, not SQL NULL): the array is then a
 * text[] literal. BL_ENOMEM. */
bl_err bl_pga_str(bl_pga *a, const char *s);
/* Binds the literal to parameter i of st (text, copied). BL_ENOMEM. */
bl_err bl_pga_bind(bl_pga *a, bl_st *st, int i);

/* Records a failure that is not PostgreSQL's (a malformed stored sketch,
 * no memory) as the connection's bl_db_errmsg. */
void bl_pg_fail(bl_db *db, const char *what);

/* One row of an aggregate table: its key (up to 4 integers, key order =
 * the table's primary key), figures added to (or, new, stored as) the
 * stored ones, and a serialised latency sketch (agg/sketch.h) merged into
 * the stored one. The sketch must stay valid during bl_pgm_merge. */
typedef struct bl_pgm_row {
    int64_t key[4];
    int64_t count, total_us, self_us, max_us;
    const void *sketch;
    size_t sketch_len;
} bl_pgm_row;

/*
 * An aggregate table's three statements (string literals: cache keys):
 * - read: ?1..?nkey key arrays (bigint[]); answers the stored rows of
 *   those keys, key columns then count, total_us, self_us, max_us,
 *   sketch, ordered by key, locked (FOR UPDATE);
 * - update: the merged figures of stored rows; insert: rows not stored
 *   yet, ON CONFLICT DO NOTHING RETURNING the key columns. Both take
 *   ?1..?nkey the key arrays, then ?nkey+1 count, +2 total_us, +3
 *   self_us, +4 max_us (bigint[]), +5 offsets (from 1) and +6 lengths
 *   (int[]) of the sketches in +7 (one bytea, all sketches end to end),
 *   and when q3 != 0, +8 the 24-byte percentiles of each row end to end
 *   (bytea, row k at 24 k + 1, k from 0 in array order).
 * q3: 0 none; 1 p50/p90/p99 clamped to the row's max_us (rollup_totals);
 * 2 not clamped (rollup_days, rollup_hours) — as store/sqlfuncs.h's
 * sketch_q3.
 */
typedef struct bl_pgm_table {
    const char *read_sql, *update_sql, *insert_sql;
    int nkey;
    int q3;
} bl_pgm_table;

/* Adds rows[0..n) to table t in the caller's transaction: counts and µs
 * sums added, max kept, sketches merged with bl_sketch_blob_merge(stored,
 * added) (the bytes SQLite's sketch_merge gives), new rows inserted. Rows
 * are sorted here by key and rows of one key merged first (rows[] is
 * reordered); the stored rows are locked in key order. Three statements
 * (read, update, insert), plus a read and update for rows another
 * transaction inserted meanwhile (at most 4 rounds). BL_ENOMEM; BL_EIO
 * (message: bl_db_errmsg), also for a stored sketch that is malformed. */
bl_err bl_pgm_merge(bl_db *db, const bl_pgm_table *t, bl_pgm_row *rows, size_t n);

#endif
