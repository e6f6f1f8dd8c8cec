/*
 * aggregate.h — turns one thread's records into aggregate deltas, in memory:
 * the hot path of processing (decode → symbolicate → call tree → aggregate).
 *
 * For every call (agg/calltree.h) of a thread it adds, keyed by the
 * symbolicated method (methods.id, "row"), the main-thread flag and the hour
 * of the call's start (µs since the epoch, floored):
 *   count, inclusive (total) and exclusive (self) µs, max, and the
 *   inclusive time to a percentile sketch (agg/sketch.h);
 * and, per call path node (parent node, main flag, row) → node id:
 *   count, inclusive and exclusive µs.
 * Node ids are allocated here (next_node) so that the writer can insert them
 * without asking SQLite. Deltas accumulate until bl_agg_clear; the writer
 * turns them into UPSERTs (pipeline/processor.c).
 */
#ifndef BL_AGGREGATE_H
#define BL_AGGREGATE_H

#include <stdint.h>
#include "agg/calltree.h"
#include "agg/sketch.h"
#include "common/blerr.h"
#include "common/u128map.h"
#include "ingest/batch.h"

#define BL_HOUR_US 3600000000ll

/* Calls whose methodId is not in the build's method-ID file are kept under
 * their own methods row (class "?", name "unknown method N", descriptor "")
 * and counted in bl_agg.unknown_records. Past the method-ID file's range a
 * build keeps at most BL_AGG_MAX_FAR such methodIds apart; the calls of any
 * further ones are counted under the pseudo methodId BL_AGG_MID_OVERFLOW. */
#define BL_AGG_MAX_FAR 65536u
#define BL_AGG_MID_OVERFLOW (BL_REC_ID_MAX + 1u)

/* A call-path node as the aggregator keeps it (64 bytes). */
typedef struct bl_agg_lnode {
    uint64_t key;        /* methodId << 1 | main */
    int64_t id;          /* call_nodes.id */
    uint64_t gen;        /* bl_agg.gen of the counters below */
    uint32_t parent1;    /* parent's local + 1, 0 for a root */
    uint32_t last_child; /* local + 1 of the child looked up last */
    uint64_t count, total, self; /* this round's deltas */
    uint32_t stored;     /* 1: its row is in the database (loaded, or written by a
                          * committed transaction: bl_agg_mark_stored) */
    uint32_t pad;
} bl_agg_lnode;

/* What the aggregator knows of one build. */
typedef struct bl_agg_build {
    int64_t build_id;
    int64_t *rows;        /* methodId -> methods.id, 0 = unknown yet */
    uint8_t *unknown;     /* per methodId (n_rows): 1 = not in the method-ID
                           * file (an "unknown method N" row) */
    uint32_t n_rows;
    uint32_t id_cap;      /* methodIds >= id_cap are past the method-ID file's
                           * range: not in the arrays above (a hostile batch
                           * cannot make them huge) but in far_rows, up to
                           * BL_AGG_MAX_FAR distinct ones; more are counted as
                           * BL_AGG_MID_OVERFLOW. 0 = no cap */
    bl_u128map far_rows;  /* methodId (>= id_cap) -> methods.id; all unknown */
    /* call-path nodes, by local index (order of creation in this process);
     * one cache line each: the hot path touches one node per call */
    struct bl_agg_nslot { /* open addressing, key and value in one 16-byte slot */
        uint64_t key;     /* (parent local + 1) << 32 | mid << 1 | main; UINT64_MAX: empty */
        uint32_t val;     /* -> local */
        uint32_t pad;
    } *nslot;
    uint32_t nmask, nused;
    struct bl_agg_lnode *lnode;
    uint32_t n_local, cap_local;
    bl_u128map id_local;  /* call_nodes.id -> local (for loading) */
    uint32_t n_nodes[2];  /* nodes per thread kind */
    uint64_t *slot_gen;   /* per methodId × main: cached stat delta (see .c) */
    uint32_t *slot_idx;
    uint32_t n_slots;
} bl_agg_build;

typedef struct bl_agg_stat {
    int64_t build_id, method, hour;
    int main;
    uint64_t count, total, self, max;
    size_t blob_off, blob_len; /* sketch blob in bl_agg.blobs, after bl_agg_finish */
} bl_agg_stat;

/* One inclusive time waiting to be added to its stat's sketch, packed:
 * stat index << 40 | µs (timestamps, hence durations, are 40-bit). */
typedef uint64_t bl_agg_val;
#define BL_AGG_VAL_US_BITS 40
#define BL_AGG_MAX_STATS (1u << 24) /* stats in one round */

/*
 * What a decoded batch must meet to be processed — checked at POST (before
 * the 202, http/h_batch.c) and again by the writer, with this one function,
 * so a batch acknowledged is never refused later:
 *   - at most BL_AGG_MAX_BATCH_RECORDS records (every call makes at most one
 *     stat, so one batch always fits a transaction's BL_AGG_MAX_STATS);
 *   - per thread, a call-tree nesting (bl_calltree_nesting: deepest call,
 *     counting enters synthesized for lost ones) of at most
 *     BL_AGG_MAX_NESTING calls.
 * BL_OK, or BL_ETOOBIG with a message naming the limit in msg (n bytes);
 * BL_ENOMEM. The decoder's own limits (thread count, string sizes) are
 * checked by bl_batch_decode.
 */
#define BL_AGG_MAX_BATCH_RECORDS BL_AGG_MAX_STATS
#define BL_AGG_MAX_NESTING (BL_CALLTREE_MAX_DEPTH - 1)
bl_err bl_agg_check_batch(const bl_batch *b, char *msg, size_t n);

typedef struct bl_agg_node {
    int64_t id, build_id, parent, method;
    int main;
    int is_new;          /* 1: not in the database yet (created this round) */
    uint64_t count, total, self;
} bl_agg_node;

/* Resolves a methodId that the build does not know yet (not in its method-ID
 * file; BL_AGG_MID_OVERFLOW for the shared row of far methodIds past
 * BL_AGG_MAX_FAR): returns its methods.id in *row, creating it. */
typedef bl_err (*bl_agg_new_row_fn)(void *ctx, bl_agg_build *b, uint32_t method_id, int64_t *row);

typedef struct bl_agg {
    bl_agg_stat *stats;   /* deltas, n_stats valid */
    size_t n_stats, cap_stats;
    uint32_t *stat_order; /* after bl_agg_finish: stats indexes by (build, method
                           * row, main, hour), the stored key's order */
    size_t cap_order;
    bl_agg_node *nodes;   /* node deltas, filled by bl_agg_finish */
    size_t n_nodes, cap_nodes;
    struct touched { bl_agg_build *b; uint32_t local; } *touched;
    size_t n_touched, cap_touched;
    bl_agg_val *vals;     /* inclusive times of this round, in call order */
    size_t n_vals, cap_vals;
    bl_agg_val *vals2;    /* scratch for bl_agg_finish */
    size_t cap_vals2;
    bl_sketch scratch;    /* its bucket counters hold one stat's sketch at a time in
                           * bl_agg_finish_stats (zero between stats; count 0) */
    bl_buf blobs;         /* serialised sketches, see bl_agg_stat.blob_off */
    bl_u128map stat_ix;
    uint64_t gen;         /* bumped by bl_agg_clear */
    int64_t next_node;    /* next call-path node id */
    uint32_t max_nodes;   /* per build and thread kind; deeper paths are not kept */
    uint64_t malformed;   /* records that broke call-tree rules (sum) */
    uint64_t unknown_records; /* records of calls of unknown methods (sum) */
    uint64_t dropped_nodes;
    bl_calltree tree;
    uint32_t *node_of;    /* per call of the current thread: its path + 1 */
    size_t cap_node_of;
    /* the current thread's call paths, merged before they touch the build's
     * (large, cold) node table: one global lookup per distinct path */
    struct bl_agg_tpath {
        uint32_t parent1, mid;
        uint32_t global1; /* the build's node local + 1, 0 = none (cap) */
        uint32_t pad;
        uint64_t count, total, self;
    } *tpath;
    size_t n_tpath, cap_tpath;
    uint64_t *tkey;       /* path table: parent1 << 32 | mid -> tpath index */
    uint32_t *tval;
    size_t tcap;
    bl_agg_new_row_fn new_row;
    void *new_row_ctx;
    /* bl_agg_merge's scratch: a partial's stats -> stats index, its paths
     * -> the build's node local + 1 (0 = none) */
    uint32_t *pmap;
    size_t cap_pmap;
    /* inclusive times merged from partials, as sketch buckets: run i is
     * bks[runs[i].off .. + len) of stat runs[i].stat (bl_agg_finish adds
     * them to the stat's sketch with the vals above) */
    uint16_t *bks;
    size_t n_bks, cap_bks;
    struct bl_agg_run { uint32_t stat, len; size_t off; } *runs, *runs2;
    size_t n_runs, cap_runs, cap_runs2;
} bl_agg;

/* A finished round's deltas, taken out of the aggregator (bl_agg_take) so
 * that another thread writes them while the aggregator goes on with the
 * next round. Arrays owned by the struct (bl_agg_out_cleanup); the fields
 * mean what bl_agg's of the same names mean after bl_agg_finish. */
typedef struct bl_agg_out {
    bl_agg_stat *stats;
    size_t n_stats, cap_stats;
    uint32_t *stat_order;
    size_t cap_order;
    bl_agg_node *nodes;
    size_t n_nodes, cap_nodes;
    bl_buf blobs;
} bl_agg_out;

void bl_agg_init(bl_agg *a, int64_t next_node, uint32_t max_nodes, bl_agg_new_row_fn fn,
                 void *ctx);
void bl_agg_cleanup(bl_agg *a);
/* Forgets the deltas (after they were written). */
void bl_agg_clear(bl_agg *a);
/* Builds every stat's percentile sketch blob from the inclusive times kept
 * since the last clear (grouping them by stat keeps one dense sketch hot in
 * cache instead of thousands cold), stat_order, and the node deltas
 * (bl_agg.nodes, by build then increasing id: B-tree order, so the writer's
 * SQLite cursor moves forward instead of seeking all over the table). Call
 * before writing; the builds touched since the last clear must still be
 * alive. BL_ENOMEM. */
bl_err bl_agg_finish(bl_agg *a);
/* bl_agg_finish in two halves, each on its own (the writer hands the node
 * deltas to the committer first, then builds the sketches while it writes
 * them): the sketch blobs and stat_order (BL_ENOMEM; BL_EINVAL when the kept
 * times disagree with the counts, a bug), and the node deltas (BL_ENOMEM). */
bl_err bl_agg_finish_stats(bl_agg *a);
bl_err bl_agg_finish_nodes(bl_agg *a);
/* The round's node deltas were committed: their nodes are stored from now
 * on (later rounds update them by id). Call before bl_agg_clear, only after
 * a successful commit (after a rollback the writer drops its build states). */
void bl_agg_mark_stored(bl_agg *a);

/* After bl_agg_finish: moves the round's deltas (stats, their order and
 * sketch blobs, node deltas) to *o and gives the aggregator o's previous
 * arrays to reuse (no copy), then clears the aggregator for the next round
 * (bl_agg_clear). o starts zeroed (bl_agg_out_init) and is reused. */
void bl_agg_take(bl_agg *a, bl_agg_out *o);
/* bl_agg_take in two halves: the node deltas (after bl_agg_finish_nodes;
 * the aggregator's stats and kept times stay), then the stats, their order
 * and blobs (after bl_agg_finish_stats), which clears the aggregator. The
 * two touch different fields of o: another thread may read o's nodes
 * between the two calls. */
void bl_agg_take_nodes(bl_agg *a, bl_agg_out *o);
void bl_agg_take_stats(bl_agg *a, bl_agg_out *o);
void bl_agg_out_init(bl_agg_out *o);
void bl_agg_out_cleanup(bl_agg_out *o);

void bl_agg_build_init(bl_agg_build *b, int64_t build_id);
void bl_agg_build_cleanup(bl_agg_build *b);
/* Sets methods.id of methodId mid (<= BL_AGG_MID_OVERFLOW); unknown: the
 * row is an "unknown method" placeholder. Set b->id_cap first: mids at or
 * past it go to far_rows. BL_ENOMEM. */
bl_err bl_agg_build_set_row(bl_agg_build *b, uint32_t mid, int64_t row, int unknown);
/* Adds a known node (loaded from the database, parents before children:
 * ascending id) of methodId mid (<= BL_AGG_MID_OVERFLOW). BL_ENOMEM;
 * BL_EINVAL when the parent is unknown or mid is out of range. */
bl_err bl_agg_build_add_node(bl_agg_build *b, int64_t id, int64_t parent, int main, uint32_t mid);

/* Rebuilds the thread's calls and adds them. origin_wall_us: wall clock of
 * the batch's monotonic origin. BL_ENOMEM, BL_ETOOBIG (stack too deep), or
 * the new_row callback's error. */
bl_err bl_agg_thread(bl_agg *a, bl_agg_build *b, const bl_batch_thread *th,
                     int64_t origin_wall_us);
/* The same with the thread's call tree already rebuilt (`tree`, from
 * bl_calltree_build_segment on th's records and segment flags, e.g. by
 * pipeline/prep.h on another thread): adds exactly what bl_agg_thread
 * would. BL_ENOMEM or the new_row callback's error. */
bl_err bl_agg_tree(bl_agg *a, bl_agg_build *b, const bl_batch_thread *th, const bl_calltree *tree,
                   int64_t origin_wall_us);

/*
 * Partial aggregates: a whole batch aggregated without the build's state, on
 * a prep thread (pipeline/prep.h), so that the writer only merges them
 * (bl_agg_merge) instead of walking every call. A partial keys its stats by
 * methodId (not methods row: rows are made by the writer) and its call paths
 * by (path in this batch, methodId, main); the writer then does one row
 * resolution and one stat merge per distinct stat of the batch and one
 * lookup in the build's node table per distinct path of the batch (not per
 * call, nor per thread). Merging gives exactly what bl_agg_tree on each of
 * the batch's threads in order gives: the same stats, sketch values, node
 * ids (paths are merged in the order their nodes would be made), methods
 * rows made in the same order, and the same malformed / unknown_records /
 * dropped_nodes counts.
 */
typedef struct bl_agg_pstat {
    uint64_t key;     /* hour index (hour / BL_HOUR_US) << 25 | mid << 1 | main */
    uint64_t count, total, self, max;
    uint64_t unknown_records; /* enters and exits of its calls in this batch:
                               * counted when the methodId proves unknown */
    uint32_t bk_off;  /* its inclusive times' sketch buckets: bk[bk_off ..
                       * bk_off + count); (building, bl_agg_part_records)
                       * the exit index of its last call in the thread that
                       * made it */
    uint32_t n_continues; /* (building) its calls going on in a later segment */
} bl_agg_pstat;

typedef struct bl_agg_ppath {
    uint32_t parent1;     /* parent path's index + 1, 0 for a root */
    uint32_t key2;        /* mid << 1 | main */
    uint32_t n_threads;   /* threads of the batch it occurs in */
    uint32_t last_thread; /* (building) the last of them */
    uint32_t last_child;  /* (building) child path looked up last, + 1 */
    uint32_t stat;        /* (building) its calls' stat looked up last */
    uint32_t ord;         /* (building, bl_agg_part_records) the exit index of
                           * its last call (in the thread that made it, at
                           * that thread's end) */
    uint64_t count, total, self;
    /* (building, bl_agg_part_records) its calls' figures not yet added to
     * `stat` (and to count, total, self): added when the call's hour
     * changes and at the end of the thread */
    uint32_t stat_hour;   /* the hour index (hour / BL_HOUR_US) of `stat` */
    uint32_t pend_calls;
    uint64_t pend_count, pend_total, pend_self, pend_max;
} bl_agg_ppath;

/* An open call of bl_agg_part_records' walk (building only). */
typedef struct bl_agg_pframe {
    uint32_t mid;         /* methodId (UINT32_MAX: the root sentinel) */
    uint32_t path1;       /* its path + 1 (0: the root sentinel) */
    uint64_t start;       /* enter time, µs */
    uint64_t kids;        /* inclusive µs of its finished direct children */
    uint32_t last_child;  /* its path's last_child (one frame per path is
                           * open at a time), or the root's */
    uint32_t pad;
} bl_agg_pframe;

typedef struct bl_agg_part {
    int ok;               /* 1: built (bl_agg_part_build returned BL_OK) */
    int64_t origin;       /* the wall-clock origin its hours are from */
    uint64_t malformed;   /* sum of the trees' malformed */
    uint32_t max_mid;     /* largest methodId */
    bl_agg_pstat *st;     /* stats in order of first call (the walk order of
                           * bl_agg_tree, thread after thread) */
    size_t n_st, cap_st;
    bl_agg_val *vals;     /* inclusive times: st index << 40 | µs, call order */
    size_t n_vals, cap_vals;
    uint16_t *bk;         /* their sketch buckets (bl_sketch_bucket), grouped
                           * by stat (see bk_off); n_vals valid */
    size_t cap_bk;
    bl_agg_ppath *path;   /* paths in order of first call */
    size_t n_path, cap_path;
    struct bl_agg_pslot {   /* open addressing, stats and paths */
        uint64_t key;     /* stat: 1 << 63 | pstat key; path: parent1 << 32 | key2 */
        uint32_t val;     /* -> st / path index */
        uint32_t gen;     /* == tab_gen: in use (no clearing between builds) */
    } *tab;
    size_t tab_cap;       /* power of 2 (or 0), load <= 1/2 */
    uint32_t tab_gen;
    uint32_t *node_of;    /* per call of the thread being walked: path + 1 */
    size_t cap_node_of;
    uint64_t n_calls;     /* calls of the batch (those going on later included) */
    /* bl_agg_part_records' scratch (reused): the open calls, and the
     * renumbering of stats and paths into bl_agg_part_build's order */
    bl_agg_pframe *fr;
    size_t cap_fr;
    uint32_t *tl;         /* the paths the thread being walked has called */
    size_t n_tl, cap_tl;
    uint64_t *sortk, *sortk2; /* exit index << 32 | index, one thread's new
                               * ones (sortk2: the radix sort's other half) */
    size_t cap_sortk, cap_sortk2;
    uint32_t *perm_st, *perm_path; /* walk index -> final index */
    size_t cap_perm_st, cap_perm_path;
    bl_agg_pstat *st2;    /* the stats and paths being reordered */
    size_t cap_st2;
    bl_agg_ppath *path2;
    size_t cap_path2;
} bl_agg_part;

/* Origins the writer takes from a batch (wall clock 2000..2200, µs); it
 * uses its own clock for any other. */
#define BL_AGG_ORIGIN_MIN 946684800000000ll
#define BL_AGG_ORIGIN_MAX 7258118400000000ll

/* A zeroed partial; cleanup frees its arrays (the struct is owned by the
 * caller; storage is kept and reused from build to build). */
void bl_agg_part_init(bl_agg_part *p);
void bl_agg_part_cleanup(bl_agg_part *p);
/* Aggregates batch bt's threads from their call trees (trees[i] built by
 * bl_calltree_build_segment on thread i, all successfully), hours from
 * origin. No shared state: any thread. BL_OK (p->ok = 1); BL_ENOMEM;
 * BL_EINVAL when origin is outside BL_AGG_ORIGIN_MIN..MAX (the writer would
 * not use it) or a call's methodId is past BL_REC_ID_MAX (not from a
 * record) — p->ok = 0 on any error, the trees are then aggregated the usual
 * way (bl_agg_tree). Storage (owned by p) grows with the batch's calls
 * (times: 10 bytes a call) and its distinct stats and paths. */
bl_err bl_agg_part_build(bl_agg_part *p, const bl_batch *bt, const bl_calltree *trees,
                         int64_t origin);
/*
 * The same partial as bl_agg_part_build, made straight from the batch's
 * records in one pass (no call trees): each call is added to its path and
 * stat when it exits, its path found when it enters (from the open parent's
 * path); stats and paths are then put in the order bl_agg_part_build gives
 * them (first call of the backwards walk: per thread, by the exit index of
 * their last call, descending), so merging it adds exactly the same.
 * It takes well-formed threads only: BL_EFORMAT (p->ok = 0, nothing of p is
 * meaningful) for a batch with a truncated thread, carried enters, an exit
 * that does not match the open call (or finds none), a timestamp going back,
 * or a stack past BL_CALLTREE_MAX_DEPTH; the caller then builds the trees
 * and calls bl_agg_part_build (pipeline/prep.c). BL_EINVAL for an origin
 * outside BL_AGG_ORIGIN_MIN..MAX, as bl_agg_part_build; BL_ENOMEM. Storage
 * (owned by p): the times (10 bytes a call), the stats and paths (twice:
 * the reordering), 32 bytes a level of nesting.
 */
bl_err bl_agg_part_records(bl_agg_part *p, const bl_batch *bt, int64_t origin);
/* 1 when bl_agg_merge can take p for build b with the writer's origin:
 * built, from that origin, and no methodId of it can end up in the shared
 * BL_AGG_MID_OVERFLOW row (the build is far from BL_AGG_MAX_FAR methodIds
 * past its method-ID file). 0: aggregate the trees with bl_agg_tree. */
int bl_agg_part_usable(const bl_agg_build *b, const bl_agg_part *p, int64_t origin);
/* Adds partial p (usable for b, see above) to the round's deltas: exactly
 * what bl_agg_tree on each thread of its batch, in order, would add.
 * BL_ENOMEM, BL_ETOOBIG (more than BL_AGG_MAX_STATS stats in the round),
 * the new_row callback's error (the deltas are then partly added, as with
 * bl_agg_tree), BL_EINVAL when p is not usable (nothing added). */
bl_err bl_agg_merge(bl_agg *a, bl_agg_build *b, const bl_agg_part *p);

#endif
