/*
 * writer.c — the processing thread's SQL (see writer.h), on SQLite or
 * PostgreSQL (store/stmt.h). Statements are cached on the connection
 * (bl_st_get): the text pointer is the key. On PostgreSQL the round's
 * method_stats and call-path nodes go in a few statements of arrays
 * (store/pg_rows.h), the sketches merged in C.
 */
#include "store/writer.h"
#include "store/builds.h"
#include "store/pg_rows.h"
#include "store/stmt.h"

#include <stdio.h>
#include <stdlib.h>

bl_err bl_wr_build_get(bl_db *db, int64_t app_id, const char *name, int64_t now_us,
                       int64_t *id)
{
    /* a row that exists is only read: on PostgreSQL an INSERT … ON CONFLICT
     * waits for any open transaction that wrote the row (another node's
     * round counting a batch into it) before it finds the conflict, a plain
     * read never does */
    bl_err err = bl_builds_find(db, app_id, name, id);
    if (err != BL_ENOTFOUND)
        return err;
    bl_st *st = bl_st_get(db, "INSERT INTO builds(app_id, name, created_at) "
                                      "VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, app_id);
    bl_st_text(st, 2, name, -1);
    bl_st_int64(st, 3, now_us);
    if (bl_st_done(st))
        return BL_EIO;
    err = bl_builds_find(db, app_id, name, id);
    return err == BL_ENOTFOUND ? BL_EIO : err;
}

bl_err bl_wr_build_files_get(bl_db *db, int64_t id, bl_wr_build_files *out)
{
    bl_st *st = bl_st_get(
        db, "SELECT coalesce(mapping_hash,''), coalesce(methodids_hash,''), "
            "coalesce(methodids_obfuscated,0), symbolicated_at IS NOT NULL FROM builds "
            "WHERE id = ? AND app_id <> 0");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, id);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW) {
        const char *m = bl_st_col_text(st, 0);
        const char *i = bl_st_col_text(st, 1);
        snprintf(out->mapping_hash, sizeof out->mapping_hash, "%s", m ? m : "");
        snprintf(out->methodids_hash, sizeof out->methodids_hash, "%s", i ? i : "");
        out->obfuscated = (int)bl_st_col_int64(st, 2);
        out->symbolicated = (int)bl_st_col_int64(st, 3);
    }
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : rc == BL_ST_DONE ? BL_ENOTFOUND : BL_EIO;
}

bl_err bl_wr_build_set_mapping(bl_db *db, int64_t id, const char *hash, int64_t size,
                               int64_t at_us)
{
    bl_st *st = bl_st_get(db, "UPDATE builds SET mapping_hash = ?, mapping_size = ?, "
                                      "mapping_at = ?, symbolicated_at = NULL WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, hash, -1);
    bl_st_int64(st, 2, size);
    bl_st_int64(st, 3, at_us);
    bl_st_int64(st, 4, id);
    return bl_st_done(st);
}

bl_err bl_wr_build_set_methodids(bl_db *db, int64_t id, const char *hash, int64_t count,
                                 int obfuscated, int64_t at_us)
{
    bl_st *st = bl_st_get(db, "UPDATE builds SET methodids_hash = ?, methodids_count = ?, "
                                      "methodids_obfuscated = ?, methodids_at = ?, "
                                      "symbolicated_at = NULL WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, hash, -1);
    bl_st_int64(st, 2, count);
    bl_st_int64(st, 3, obfuscated);
    bl_st_int64(st, 4, at_us);
    bl_st_int64(st, 5, id);
    return bl_st_done(st);
}

bl_err bl_wr_build_set_warnings(bl_db *db, int64_t id, const char *json)
{
    bl_st *st = bl_st_get(db, "UPDATE builds SET warnings = ? WHERE id = ?");
    if (!st)
        return BL_EIO;
    if (json)
        bl_st_text(st, 1, json, -1);
    else
        bl_st_null(st, 1);
    bl_st_int64(st, 2, id);
    return bl_st_done(st);
}

bl_err bl_wr_build_set_symbolicated(bl_db *db, int64_t id, int64_t at_us)
{
    bl_st *st = bl_st_get(db, "UPDATE builds SET symbolicated_at = ? WHERE id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, at_us);
    bl_st_int64(st, 2, id);
    return bl_st_done(st);
}

bl_err bl_wr_build_count_batch(bl_db *db, int64_t id, int64_t records)
{
    bl_st *st = bl_st_get(db, "UPDATE builds SET batches = batches + 1, records = records + ? "
                                      "WHERE id = ? AND app_id <> 0");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, records);
    bl_st_int64(st, 2, id);
    if (bl_st_done(st))
        return BL_EIO;
    return bl_st_changes(st) == 1 ? BL_OK : BL_ENOTFOUND;
}

bl_err bl_wr_builds_ready(bl_db *db, bl_wr_ready_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(
        db, "SELECT app_id, name, methodids_hash IS NOT NULL AND "
            "(coalesce(methodids_obfuscated, 0) = 0 OR mapping_hash IS NOT NULL) FROM builds");
    if (!st)
        return BL_EIO;
    bl_err err = BL_OK;
    while (!err && bl_st_step(st) == BL_ST_ROW)
        err = cb(bl_st_col_int64(st, 0), bl_st_col_text(st, 1),
                 (int)bl_st_col_int64(st, 2), ctx);
    bl_st_reset(st);
    return err;
}

bl_err bl_wr_methods_top(bl_db *db, int64_t build_id, int64_t *top)
{
    bl_st *st = bl_st_get(db, "SELECT coalesce(max(method_id), -1) FROM methods "
                                      "WHERE build_id = ? AND NOT (class = '?' AND "
                                      "descriptor = '')");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    *top = bl_st_step(st) == BL_ST_ROW ? bl_st_col_int64(st, 0) : -1;
    bl_st_reset(st);
    return BL_OK;
}

bl_err bl_wr_methods_each(bl_db *db, int64_t build_id, bl_wr_method_cb cb, void *ctx)
{
    /* placeholders of unknown methods: class '?' and no descriptor (a method
     * of the method-ID file always has a class name) */
    bl_st *st = bl_st_get(db, "SELECT method_id, id, class = '?' AND descriptor = '' "
                                      "FROM methods WHERE build_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_err err = BL_OK;
    while (!err && bl_st_step(st) == BL_ST_ROW)
        err = cb(bl_st_col_int64(st, 0), bl_st_col_int64(st, 1),
                 (int)bl_st_col_int64(st, 2), ctx);
    bl_st_reset(st);
    return err;
}

bl_err bl_wr_method_put(bl_db *db, int64_t build_id, int64_t method_id, const char *cls,
                        const char *name, const char *descriptor, const char *source_file)
{
    bl_st *st = bl_st_get(
        db, "INSERT INTO methods(build_id, method_id, class, name, descriptor, source_file) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(build_id, method_id) DO UPDATE SET "
            "class = excluded.class, name = excluded.name, descriptor = excluded.descriptor, "
            "source_file = excluded.source_file");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, method_id);
    bl_st_text(st, 3, cls, -1);
    bl_st_text(st, 4, name, -1);
    bl_st_text(st, 5, descriptor, -1);
    bl_st_text(st, 6, source_file, -1);
    return bl_st_done(st);
}

/* PostgreSQL: one chunk of methods rows (?1 the build, ?2..?6 the columns'
 * arrays in row order); of a methodId given twice in the chunk the last
 * row counts (as with one statement a row), rows inserted in their order */
static const char methods_put_sql_pg[] =
    "INSERT INTO methods(build_id, method_id, class, name, descriptor, source_file) "
    "SELECT CAST(?1 AS bigint), u.m, u.c, u.n, u.d, u.f FROM (SELECT DISTINCT ON (t.m) t.* "
    "FROM unnest(CAST(?2 AS bigint[]), CAST(?3 AS text[]), CAST(?4 AS text[]), "
    "CAST(?5 AS text[]), CAST(?6 AS text[])) WITH ORDINALITY AS t(m, c, n, d, f, o) "
    "ORDER BY t.m, t.o DESC) u ORDER BY u.o "
    "ON CONFLICT(build_id, method_id) DO UPDATE SET class = excluded.class, "
    "name = excluded.name, descriptor = excluded.descriptor, "
    "source_file = excluded.source_file";

/* names of one chunk at most (bytes of the array literals) */
#define METHODS_CHUNK_BYTES ((size_t)4 << 20)

static bl_err methods_put_pg_run(bl_db *db, int64_t build_id, bl_pga *a)
{
    bl_st *st = bl_st_get(db, methods_put_sql_pg);
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    for (int k = 0; k < 5; k++)
        if (bl_pga_bind(&a[k], st, k + 2)) {
            bl_st_reset(st);
            bl_pg_fail(db, "out of memory");
            return BL_ENOMEM;
        }
    if (bl_st_done(st))
        return BL_EIO;
    for (int k = 0; k < 5; k++)
        bl_pga_reset(&a[k]);
    return BL_OK;
}

static bl_err methods_put_pg(bl_db *db, int64_t build_id, size_t n, bl_wr_method_fn row,
                             void *ctx)
{
    bl_pga a[5]; /* method_id, class, name, descriptor, source_file */
    for (int k = 0; k < 5; k++)
        bl_pga_init(&a[k]);
    bl_err err = BL_OK;
    for (size_t i = 0; i < n && !err; i++) {
        bl_wr_method m;
        if ((err = row(ctx, i, &m)))
            break;
        if (bl_pga_int(&a[0], m.method_id) || bl_pga_str(&a[1], m.cls) ||
            bl_pga_str(&a[2], m.name) || bl_pga_str(&a[3], m.descriptor) ||
            bl_pga_str(&a[4], m.source_file)) {
            bl_pg_fail(db, "out of memory");
            err = BL_ENOMEM;
            break;
        }
        size_t bytes = a[1].b.len + a[2].b.len + a[3].b.len + a[4].b.len;
        if (a[0].n >= BL_WR_METHODS_CHUNK || bytes >= METHODS_CHUNK_BYTES)
            err = methods_put_pg_run(db, build_id, a);
    }
    if (!err && a[0].n)
        err = methods_put_pg_run(db, build_id, a);
    for (int k = 0; k < 5; k++)
        bl_pga_cleanup(&a[k]);
    return err;
}

bl_err bl_wr_methods_put(bl_db *db, int64_t build_id, size_t n, bl_wr_method_fn row,
                         void *ctx)
{
    if (bl_db_is_pg(db))
        return methods_put_pg(db, build_id, n, row, ctx);
    for (size_t i = 0; i < n; i++) {
        bl_wr_method m;
        bl_err err = row(ctx, i, &m);
        if (err)
            return err;
        if (bl_wr_method_put(db, build_id, m.method_id, m.cls, m.name, m.descriptor,
                             m.source_file))
            return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_wr_method_unknown(bl_db *db, int64_t build_id, int64_t method_id, const char *name,
                            int64_t *row)
{
    bl_st *st = bl_st_get(
        db, "INSERT INTO methods(build_id, method_id, class, name, descriptor, source_file) "
            "VALUES (?, ?, '?', ?, '', '') ON CONFLICT(build_id, method_id) DO UPDATE SET "
            "name = CASE WHEN methods.class = '?' AND methods.descriptor = '' "
            "THEN excluded.name ELSE methods.name END RETURNING id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_st_int64(st, 2, method_id);
    bl_st_text(st, 3, name, -1);
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *row = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

bl_err bl_wr_nodes_each(bl_db *db, int64_t build_id, bl_wr_node_cb cb, void *ctx)
{
    bl_st *st = bl_st_get(db, "SELECT n.id, n.main, n.parent, m.method_id FROM call_nodes n "
                                      "JOIN methods m ON m.id = n.method WHERE n.build_id = ? "
                                      "ORDER BY n.id");
    if (!st)
        return BL_EIO;
    bl_st_int64(st, 1, build_id);
    bl_err err = BL_OK;
    while (!err && bl_st_step(st) == BL_ST_ROW)
        err = cb(bl_st_col_int64(st, 0), (int)bl_st_col_int64(st, 1),
                 bl_st_col_int64(st, 2), bl_st_col_int64(st, 3), ctx);
    bl_st_reset(st);
    return err;
}

bl_err bl_wr_next_node_id(bl_db *db, int64_t *next)
{
    bl_st *st = bl_st_get(db, "SELECT coalesce(max(id), 0) + 1 FROM call_nodes");
    if (!st)
        return BL_EIO;
    int rc = bl_st_step(st);
    if (rc == BL_ST_ROW)
        *next = bl_st_col_int64(st, 0);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_EIO;
}

/* PostgreSQL: method_stats rows read, merged in C and written back
 * (store/pg_rows.h); ?1..?4 the key arrays */
static const char stats_read_pg[] =
    "SELECT t.build_id, t.method, t.main, t.hour, t.count, t.total_us, t.self_us, t.max_us, "
    "t.sketch FROM unnest(CAST(?1 AS bigint[]), CAST(?2 AS bigint[]), CAST(?3 AS bigint[]), "
    "CAST(?4 AS bigint[])) AS k(b, m, mn, h) JOIN method_stats t ON t.build_id = k.b "
    "AND t.method = k.m AND t.main = k.mn AND t.hour = k.h "
    "ORDER BY t.build_id, t.method, t.main, t.hour FOR UPDATE OF t";
#define STATS_UNNEST                                                                          \
    "unnest(CAST(?1 AS bigint[]), CAST(?2 AS bigint[]), CAST(?3 AS bigint[]), "               \
    "CAST(?4 AS bigint[]), CAST(?5 AS bigint[]), CAST(?6 AS bigint[]), CAST(?7 AS bigint[]), " \
    "CAST(?8 AS bigint[]), CAST(?9 AS int[]), CAST(?10 AS int[])) "                           \
    "AS u(b, m, mn, h, c, tt, sf, mx, o, l)"
static const char stats_update_pg[] =
    "UPDATE method_stats AS t SET count = u.c, total_us = u.tt, self_us = u.sf, max_us = u.mx, "
    "sketch = substring(CAST(?11 AS bytea) FROM u.o FOR u.l) FROM " STATS_UNNEST
    " WHERE t.build_id = u.b AND t.method = u.m AND t.main = u.mn AND t.hour = u.h";
static const char stats_insert_pg[] =
    "INSERT INTO method_stats(build_id, method, main, hour, count, total_us, self_us, max_us, "
    "sketch) SELECT u.b, u.m, u.mn, u.h, u.c, u.tt, u.sf, u.mx, "
    "substring(CAST(?11 AS bytea) FROM u.o FOR u.l) FROM " STATS_UNNEST
    " ON CONFLICT (build_id, method, main, hour) DO NOTHING "
    "RETURNING build_id, method, main, hour";
static const bl_pgm_table stats_table = { stats_read_pg, stats_update_pg, stats_insert_pg, 4, 0 };

static bl_err stats_add_pg(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx)
{
    bl_pgm_row *r = malloc(n * sizeof *r);
    if (!r) {
        bl_pg_fail(db, "out of memory");
        return BL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        bl_wr_stat s;
        row(ctx, i, &s);
        r[i] = (bl_pgm_row){ { s.build_id, s.method, s.main, s.hour }, s.count, s.total_us,
                             s.self_us, s.max_us, s.sketch, s.sketch_len };
    }
    bl_err err = bl_pgm_merge(db, &stats_table, r, n);
    free(r);
    return err ? BL_EIO : BL_OK;
}

bl_err bl_wr_stats_add(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx)
{
    if (!n)
        return BL_OK;
    if (bl_db_is_pg(db))
        return stats_add_pg(db, n, row, ctx);
    bl_st *st = bl_st_get(
        db, "INSERT INTO method_stats(build_id, method, main, hour, count, total_us, "
            "self_us, max_us, sketch) VALUES (?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT DO UPDATE SET count = count + excluded.count, "
            "total_us = total_us + excluded.total_us, self_us = self_us + excluded.self_us, "
            "max_us = max(max_us, excluded.max_us), "
            "sketch = sketch_merge(sketch, excluded.sketch)");
    if (!st)
        return BL_EIO;
    for (size_t i = 0; i < n; i++) {
        bl_wr_stat s;
        row(ctx, i, &s);
        bl_st_int64(st, 1, s.build_id);
        bl_st_int64(st, 2, s.method);
        bl_st_int64(st, 3, s.main);
        bl_st_int64(st, 4, s.hour);
        bl_st_int64(st, 5, s.count);
        bl_st_int64(st, 6, s.total_us);
        bl_st_int64(st, 7, s.self_us);
        bl_st_int64(st, 8, s.max_us);
        bl_st_blob(st, 9, s.sketch, s.sketch_len);
        if (bl_st_done(st))
            return BL_EIO;
    }
    return BL_OK;
}

/* ON CONFLICT's columns named with their table: PostgreSQL finds a bare
 * name ambiguous (the stored row or excluded) */
static const char nodes_upsert[] =
    "INSERT INTO call_nodes(id, build_id, main, parent, method, count, total_us, self_us) "
    "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
    "count = call_nodes.count + excluded.count, "
    "total_us = call_nodes.total_us + excluded.total_us, "
    "self_us = call_nodes.self_us + excluded.self_us";

/* A stored node's counters, by id: one seek in the table's B-tree (the
 * UNIQUE index's columns do not change, so it is not touched). */
static const char nodes_update[] =
    "UPDATE call_nodes SET count = count + ?2, total_us = total_us + ?3, "
    "self_us = self_us + ?4 WHERE id = ?1";

/* PostgreSQL: every node in one upsert, in id order (rows locked in that
 * order); a stored row gets the counts added, a missing one is made. */
static const char nodes_upsert_pg[] =
    "INSERT INTO call_nodes(id, build_id, main, parent, method, count, total_us, self_us) "
    "SELECT * FROM unnest(CAST(?1 AS bigint[]), CAST(?2 AS bigint[]), CAST(?3 AS bigint[]), "
    "CAST(?4 AS bigint[]), CAST(?5 AS bigint[]), CAST(?6 AS bigint[]), CAST(?7 AS bigint[]), "
    "CAST(?8 AS bigint[])) ON CONFLICT(id) DO UPDATE SET "
    "count = call_nodes.count + excluded.count, "
    "total_us = call_nodes.total_us + excluded.total_us, "
    "self_us = call_nodes.self_us + excluded.self_us";

static int cmp_node(const void *x, const void *y)
{
    const bl_wr_node *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static bl_err nodes_add_pg(bl_db *db, size_t n, bl_wr_node_fn row, void *ctx)
{
    bl_wr_node *d = malloc(n * sizeof *d);
    if (!d) {
        bl_pg_fail(db, "out of memory");
        return BL_ENOMEM;
    }
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        row(ctx, i, &d[i]);
        if (i && d[i].id <= d[i - 1].id)
            sorted = 0;
    }
    if (!sorted)
        qsort(d, n, sizeof *d, cmp_node);
    bl_pga a[8];
    for (int k = 0; k < 8; k++)
        bl_pga_init(&a[k]);
    bl_err err = BL_OK;
    for (size_t i = 0; i < n && !err;) {
        /* one row per id (a second would be refused): the counts summed */
        bl_wr_node m = d[i];
        size_t j = i + 1;
        for (; j < n && d[j].id == m.id; j++) {
            m.count += d[j].count;
            m.total_us += d[j].total_us;
            m.self_us += d[j].self_us;
        }
        i = j;
        const int64_t v[8] = { m.id,     m.build_id, m.main,     m.parent,
                               m.method, m.count,    m.total_us, m.self_us };
        for (int k = 0; k < 8 && !err; k++)
            err = bl_pga_int(&a[k], v[k]);
    }
    free(d);
    bl_st *st = err ? NULL : bl_st_get(db, nodes_upsert_pg);
    if (!err && !st)
        err = BL_EIO;
    for (int k = 0; k < 8 && !err; k++)
        err = bl_pga_bind(&a[k], st, k + 1);
    if (!err && bl_st_done(st))
        err = BL_EIO;
    for (int k = 0; k < 8; k++)
        bl_pga_cleanup(&a[k]);
    if (err == BL_ENOMEM)
        bl_pg_fail(db, "out of memory");
    return err ? BL_EIO : BL_OK;
}

bl_err bl_wr_nodes_add(bl_db *db, size_t n, bl_wr_node_fn row, void *ctx)
{
    if (!n)
        return BL_OK;
    if (bl_db_is_pg(db))
        return nodes_add_pg(db, n, row, ctx);
    bl_st *ins = bl_st_get(db, nodes_upsert);
    bl_st *upd = ins ? bl_st_get(db, nodes_update) : NULL;
    if (!upd)
        return BL_EIO;
    for (size_t i = 0; i < n; i++) {
        bl_wr_node d;
        row(ctx, i, &d);
        if (!d.is_new) {
            bl_st_int64(upd, 1, d.id);
            bl_st_int64(upd, 2, d.count);
            bl_st_int64(upd, 3, d.total_us);
            bl_st_int64(upd, 4, d.self_us);
            if (bl_st_done(upd))
                return BL_EIO;
            if (bl_st_changes(upd) == 1)
                continue;
            /* the row is gone (deleted behind the writer's back): made anew */
        }
        bl_st_int64(ins, 1, d.id);
        bl_st_int64(ins, 2, d.build_id);
        bl_st_int64(ins, 3, d.main);
        bl_st_int64(ins, 4, d.parent);
        bl_st_int64(ins, 5, d.method);
        bl_st_int64(ins, 6, d.count);
        bl_st_int64(ins, 7, d.total_us);
        bl_st_int64(ins, 8, d.self_us);
        if (bl_st_done(ins))
            return BL_EIO;
    }
    return BL_OK;
}

bl_err bl_wr_batch_seen(bl_db *db, const char *uuid)
{
    bl_st *st = bl_st_get(db, "SELECT 1 FROM batches WHERE batch_id = ?");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, uuid, -1);
    int rc = bl_st_step(st);
    bl_st_reset(st);
    return rc == BL_ST_ROW ? BL_OK : BL_ENOTFOUND;
}

bl_err bl_wr_batch_insert(bl_db *db, const bl_wr_batch *b)
{
    bl_st *st = bl_st_get(db, "INSERT INTO batches(batch_id, app_id, build_id, received_at, "
                                      "processed_at, records, malformed, bytes) VALUES (?,?,?,?,?,?,?,?)");
    if (!st)
        return BL_EIO;
    bl_st_text(st, 1, b->uuid, -1);
    bl_st_int64(st, 2, b->app_id);
    bl_st_int64(st, 3, b->build_id);
    bl_st_int64(st, 4, b->received_at);
    bl_st_int64(st, 5, b->processed_at);
    bl_st_int64(st, 6, b->records);
    bl_st_int64(st, 7, b->malformed);
    bl_st_int64(st, 8, b->bytes);
    return bl_st_done(st);
}
