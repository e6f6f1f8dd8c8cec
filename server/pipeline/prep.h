/*
 * prep.h — the part of processing a batch that needs only its bytes: read
 * the file, decompress, decode, check the limits (bl_agg_check_batch), and
 * rebuild every thread's call tree (agg/calltree.h), and, when asked,
 * aggregate the batch into partial aggregates (pipeline/aggregate.h) — for a
 * batch of well-formed threads in one pass over its records, without the
 * trees. No database and no shared state, so the writer (processor.c) runs
 * it on worker threads for the batches after the one it is aggregating, and
 * bench_ingest does the same. The writer then only merges the partial
 * aggregates (bl_agg_merge), or aggregates the ready trees (bl_agg_tree, or
 * bl_agg_thread when none were built), and writes.
 *
 * A bl_prep is one job's storage, reused job after job (buffers and trees
 * are kept and grown, never shrunk). One thread uses a bl_prep at a time.
 *
 * Memory of one job beside its body (the decompressed batch, which the
 * writer bounds per slot: PREP_AHEAD_MAX_BODY in proc_internal.h) and the
 * batch's thread table: the partial's times, 10 bytes a call (8 while it is
 * built, 2 a sketch bucket), and its stats and paths (56 and 96 bytes each,
 * twice while the one pass reorders them); the call trees, 40 bytes a call, only
 * for a batch the one pass does not take (bl_agg_part_records) or when no
 * partial is wanted. A batch of n records has at most n calls (n / 2 when
 * its threads are well-formed and their calls finish).
 */
#ifndef BL_PREP_H
#define BL_PREP_H

#include <stddef.h>
#include <stdint.h>
#include "agg/calltree.h"
#include "common/blerr.h"
#include "common/buf.h"
#include "common/decomp.h"
#include "ingest/batch.h"
#include "pipeline/aggregate.h"

typedef struct bl_prep {
    /* results of the last bl_prep_run / bl_prep_file */
    bl_err read_err;      /* reading, decompressing or decoding (only BL_ENOMEM,
                           * a shortage: not malformed): BL_ENOTFOUND (no file),
                           * BL_ETOOBIG (over max_body), BL_EFORMAT, BL_ENOMEM,
                           * BL_EIO; the fields below are valid only when BL_OK */
    uint64_t max_body;    /* the cap that run used (bytes) */
    bl_buf body;          /* the decompressed batch (owned) */
    int decoded;          /* 1: bt is valid (points into body) */
    bl_batch bt;
    bl_batch_error be;    /* when !decoded */
    int checked;          /* 1: check_err and why are set */
    bl_err check_err;     /* bl_agg_check_batch: BL_OK, BL_ETOOBIG, BL_ENOMEM */
    char why[300];
    /* with check_err == BL_OK (or not checked), unless the partial was made
     * without trees (n_trees = 0 then, part.ok = 1: bl_agg_part_records):
     * trees[i] is thread i's call tree and tree_err[i] what building it
     * returned (BL_OK, BL_ETOOBIG, BL_ENOMEM; its tree is empty then);
     * n_trees = bt.n_threads */
    bl_calltree *trees;
    bl_err *tree_err;
    uint32_t n_trees, cap_trees;
    void *zctx;           /* a reused zstd decompression context (owned) */
    /* set by the owner (0 after bl_prep_init): also aggregate the batch
     * into `part` (hours from the batch's origin), so the writer merges it
     * (bl_agg_merge) instead of walking the calls; part.ok says whether it
     * was. Straight from the records when every thread is well-formed
     * (bl_agg_part_records: no trees are built then, n_trees = 0; a writer
     * that cannot merge it aggregates the threads with bl_agg_thread), else
     * from the trees when every one was built (bl_agg_part_build) */
    int want_part;
    bl_agg_part part;
} bl_prep;

void bl_prep_init(bl_prep *j);
void bl_prep_cleanup(bl_prep *j);

/* Prepares the batch in `raw` (len bytes, compressed as `enc`): body at most
 * max_body bytes; check: run bl_agg_check_batch (0: the batch was checked
 * before, e.g. at POST); trees only when it passes (or is not checked).
 * Results in *j (the previous ones are dropped). */
void bl_prep_run(bl_prep *j, const void *raw, size_t len, bl_encoding enc, uint64_t max_body,
                 int check);

/* The same on the file at `path` (read whole; BL_ENOTFOUND when absent). */
void bl_prep_file(bl_prep *j, const char *path, bl_encoding enc, uint64_t max_body, int check);

#endif
