/*
 * writer.h — what the processing thread (pipeline/processor.c) writes and
 * reads back: builds rows (creation, mapping / method-ID records, warnings,
 * symbolication time, batch counters), methods rows (symbolicated names and
 * placeholders of unknown methodIds), processed batches, and the per-hour
 * method stats and call-path nodes a transaction adds.
 *
 * All calls run on the caller's (writer) connection, inside the transaction
 * it opened with bl_db_begin. Times are µs since the Unix epoch; durations
 * µs. Strings passed in are copied by the store; strings handed to a
 * callback are owned by the store and valid only during that call. Every
 * error is BL_EIO with the reason in bl_db_errmsg unless said otherwise.
 * No backend types appear here.
 */
#ifndef BL_WRITER_H
#define BL_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

/* ---- builds ---------------------------------------------------------- */

/* The id of app `app_id`'s build `name`, creating the row (created_at =
 * now_us) when it does not exist yet. A row that exists is only read, never
 * written: on PostgreSQL this does not wait for another connection's open
 * transaction that wrote the row (a node's round counting batches into it). */
bl_err bl_wr_build_get(bl_db *db, int64_t app_id, const char *name, int64_t now_us,
                       int64_t *id);

/* What the builds row says about the build's files. Hashes are hex text,
 * "" when none is recorded (NUL-terminated, truncated to the buffers). */
typedef struct bl_wr_build_files {
    char mapping_hash[128];
    char methodids_hash[128];
    int obfuscated;   /* 1: the method-ID file's names are obfuscated */
    int symbolicated; /* 1: symbolicated_at is set */
} bl_wr_build_files;

/* Reads build `id`'s file records into *out. BL_ENOTFOUND when no live
 * build has that id (none, or deleted: in the graveyard, app_id 0 — another
 * node may have deleted it); BL_EIO on an SQL error. */
bl_err bl_wr_build_files_get(bl_db *db, int64_t id, bl_wr_build_files *out);

/* Records a new mapping (hex hash, decompressed size in bytes, upload time)
 * and clears symbolicated_at. */
bl_err bl_wr_build_set_mapping(bl_db *db, int64_t id, const char *hash, int64_t size,
                               int64_t at_us);

/* Records a new method-ID file (hash, number of methods, names obfuscated
 * 0/1, upload time) and clears symbolicated_at. */
bl_err bl_wr_build_set_methodids(bl_db *db, int64_t id, const char *hash, int64_t count,
                                 int obfuscated, int64_t at_us);

/* Sets the build's warnings: a JSON array as text, or NULL for none. */
bl_err bl_wr_build_set_warnings(bl_db *db, int64_t id, const char *json);

/* Records that the build was (re)symbolicated at `at_us`. */
bl_err bl_wr_build_set_symbolicated(bl_db *db, int64_t id, int64_t at_us);

/* Adds one processed batch of `records` records to the build's counters.
 * BL_ENOTFOUND when no live build has that id (deleted: a batch must not
 * be counted in it); BL_EIO on an SQL error. */
bl_err bl_wr_build_count_batch(bl_db *db, int64_t id, int64_t records);

/* Called once per build: app id, build name, and 1 when it can be processed
 * (a method-ID file, plus a mapping when its names are obfuscated). Return
 * BL_OK to go on; another code stops the walk and is returned. */
typedef bl_err (*bl_wr_ready_cb)(int64_t app_id, const char *name, int ready, void *ctx);

/* Walks every build of every app. */
bl_err bl_wr_builds_ready(bl_db *db, bl_wr_ready_cb cb, void *ctx);

/* ---- methods --------------------------------------------------------- */

/* The largest methodId of build `build_id` that is not a placeholder (see
 * bl_wr_method_unknown), or -1 when there is none. */
bl_err bl_wr_methods_top(bl_db *db, int64_t build_id, int64_t *top);

/* Called once per methods row: the methodId, the row's id (the key stats
 * and nodes refer to) and 1 when it is a placeholder. Return BL_OK to go
 * on; another code stops the walk and is returned. */
typedef bl_err (*bl_wr_method_cb)(int64_t method_id, int64_t row, int placeholder, void *ctx);

/* Walks the methods rows of build `build_id` (any order). */
bl_err bl_wr_methods_each(bl_db *db, int64_t build_id, bl_wr_method_cb cb, void *ctx);

/* Writes the symbolicated names of methodId `method_id` of build
 * `build_id` (creating the row, or replacing its names). */
bl_err bl_wr_method_put(bl_db *db, int64_t build_id, int64_t method_id, const char *cls,
                        const char *name, const char *descriptor, const char *source_file);

/* One methods row to write (bl_wr_methods_put): strings owned by the
 * caller, valid until the callback is called again; none NULL (the
 * columns are NOT NULL in both schemas: an empty text where there is
 * none, e.g. no source file) and valid UTF-8 on PostgreSQL (a chunk with
 * invalid text fails as a whole, BL_EIO). */
typedef struct bl_wr_method {
    int64_t method_id;
    const char *cls, *name, *descriptor, *source_file;
} bl_wr_method;

/* Fills *out with row i (0 <= i < n, asked in order). BL_OK; another code
 * stops bl_wr_methods_put, which returns it (nothing more is written). */
typedef bl_err (*bl_wr_method_fn)(void *ctx, size_t i, bl_wr_method *out);

/* Rows per statement of bl_wr_methods_put on PostgreSQL (at most). */
#define BL_WR_METHODS_CHUNK 2000

/* bl_wr_method_put for rows 0..n-1 of build `build_id`, in that order (a
 * methodId given twice keeps its last names). SQLite: one prepared
 * statement run per row; PostgreSQL: one statement per BL_WR_METHODS_CHUNK
 * rows (or per 4 MiB of names), the rows sent as arrays — the same rows
 * either way. Errors: the callback's code; BL_ENOMEM; BL_EIO (message in
 * bl_db_errmsg). Rows of chunks written before an error stay in the
 * caller's transaction. */
bl_err bl_wr_methods_put(bl_db *db, int64_t build_id, size_t n, bl_wr_method_fn row,
                         void *ctx);

/* The row of a methodId the method-ID file does not know: a placeholder
 * (class "?", name `name`, no descriptor) is created, or an existing
 * placeholder renamed; a symbolicated row is left alone. Its id -> *row. */
bl_err bl_wr_method_unknown(bl_db *db, int64_t build_id, int64_t method_id, const char *name,
                            int64_t *row);

/* ---- call-path nodes and stats --------------------------------------- */

/* Called once per stored node of a build, by increasing id: node id,
 * 1 on the main thread, parent node id (0: a root), methodId of its method.
 * Return BL_OK to go on; another code stops the walk and is returned. */
typedef bl_err (*bl_wr_node_cb)(int64_t id, int main, int64_t parent, int64_t method_id,
                                void *ctx);

/* Walks the call-path nodes of build `build_id`. */
bl_err bl_wr_nodes_each(bl_db *db, int64_t build_id, bl_wr_node_cb cb, void *ctx);

/* The id the next new call-path node gets (largest stored id + 1; 1 when
 * none). */
bl_err bl_wr_next_node_id(bl_db *db, int64_t *next);

/* One method's figures for one hour, added to what is stored. */
typedef struct bl_wr_stat {
    int64_t build_id, method; /* method: methods row id */
    int main;                 /* 1: main thread */
    int64_t hour;             /* start of the hour, µs since the epoch (a multiple of 3600e6) */
    int64_t count, total_us, self_us, max_us;
    const void *sketch;       /* serialised latency sketch (agg/sketch.h), merged */
    size_t sketch_len;        /* bytes */
} bl_wr_stat;

/* Fills *out with the i-th row of a flush (0 <= i < n). */
typedef void (*bl_wr_stat_fn)(void *ctx, size_t i, bl_wr_stat *out);

/* Adds rows 0..n-1 (from `row`) to the stored ones (count, totals summed,
 * max kept, sketches merged), creating those missing. One statement for
 * all rows (the writer's hot path); fastest in key order (build, method,
 * main, hour). On PostgreSQL three statements for all rows (the stored
 * ones read and locked in key order, merged in C, updated; the others
 * inserted: store/pg_rows.h). BL_EIO at the first failure. */
bl_err bl_wr_stats_add(bl_db *db, size_t n, bl_wr_stat_fn row, void *ctx);

/* One call-path node's figures, added to what is stored. */
typedef struct bl_wr_node {
    int64_t id, build_id;
    int main;
    int is_new;             /* 0: the writer knows the row exists (it is then
                             * updated by id; made anew if it is gone after all);
                             * 1: it may not exist (created, or added to) */
    int64_t parent, method; /* parent node id (0: root); methods row id */
    int64_t count, total_us, self_us;
} bl_wr_node;

/* Fills *out with the i-th node of a flush (0 <= i < n). */
typedef void (*bl_wr_node_fn)(void *ctx, size_t i, bl_wr_node *out);

/* Creates nodes 0..n-1 (from `row`) or adds their counts and times to the
 * stored ones. Two statements for all rows (update by id, insert). Rows in
 * increasing id order are much faster (the B-tree is walked forward). On
 * PostgreSQL one upsert of all rows (arrays), in id order. BL_EIO at the
 * first failure. */
bl_err bl_wr_nodes_add(bl_db *db, size_t n, bl_wr_node_fn row, void *ctx);

/* ---- batches --------------------------------------------------------- */

/* BL_OK when batch `uuid` was processed already, BL_ENOTFOUND when not.
 * BL_EIO when the lookup cannot be prepared; a lookup that fails after
 * that answers BL_ENOTFOUND (the insert that follows fails in its turn). */
bl_err bl_wr_batch_seen(bl_db *db, const char *uuid);

/* A processed batch. */
typedef struct bl_wr_batch {
    const char *uuid;
    int64_t app_id, build_id;
    int64_t received_at, processed_at; /* µs */
    int64_t records, malformed;        /* records decoded; malformed ones skipped */
    int64_t bytes;                     /* decompressed body size */
} bl_wr_batch;

/* Records batch `b` as processed. */
bl_err bl_wr_batch_insert(bl_db *db, const bl_wr_batch *b);

#endif
