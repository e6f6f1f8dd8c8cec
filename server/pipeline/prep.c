/*
 * prep.c — read, decompress, decode, check and rebuild call trees (see
 * prep.h).
 *
 * A zstd body that is one frame declaring its size (what the runtime and
 * `zstd` write) is decompressed in one call straight into the body buffer
 * with a reused context; anything else (gzip, identity, several frames, no
 * declared size) goes through the streaming decoder (common/decomp.h) as
 * before. Both fail the same way: BL_ETOOBIG past max_body, BL_EFORMAT on
 * corrupt data.
 */
#include "pipeline/prep.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "pipeline/aggregate.h"
#include "pipeline/datadir.h"

void bl_prep_init(bl_prep *j)
{
    memset(j, 0, sizeof *j);
    bl_buf_init(&j->body, 0);
    bl_agg_part_init(&j->part);
}

static void drop(bl_prep *j)
{
    if (j->decoded)
        bl_batch_cleanup(&j->bt);
    j->decoded = 0;
    j->checked = 0;
    j->check_err = BL_OK;
    j->why[0] = '\0';
    j->n_trees = 0;
    j->part.ok = 0;
}

void bl_prep_cleanup(bl_prep *j)
{
    drop(j);
    for (uint32_t i = 0; i < j->cap_trees; i++)
        bl_calltree_cleanup(&j->trees[i]);
    free(j->trees);
    free(j->tree_err);
    bl_agg_part_cleanup(&j->part);
    bl_buf_cleanup(&j->body);
    ZSTD_freeDCtx(j->zctx);
    memset(j, 0, sizeof *j);
}

static bl_err sink(void *ctx, const void *p, size_t n)
{
    return bl_buf_append(ctx, p, n);
}

/* One zstd frame of declared size: decompressed in one call (*done = 1).
 * *done = 0 when the body is not that (the caller streams it instead). */
static bl_err zstd_whole(bl_prep *j, const void *raw, size_t len, uint64_t max_body, int *done)
{
    *done = 0;
    unsigned long long size = ZSTD_getFrameContentSize(raw, len);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR)
        return BL_OK;
    size_t whole = ZSTD_findFrameCompressedSize(raw, len);
    if (ZSTD_isError(whole) || whole != len)
        return BL_OK; /* several frames, or bytes after the frame */
    *done = 1;
    if (size > max_body)
        return BL_ETOOBIG;
    if (!j->zctx) {
        if (!(j->zctx = ZSTD_createDCtx()))
            return BL_ENOMEM;
        /* the streaming decoder's window limit (libzstd's default) */
        ZSTD_DCtx_setParameter(j->zctx, ZSTD_d_windowLogMax, 27);
    }
    bl_err err = bl_buf_reserve(&j->body, (size_t)size + 1);
    if (err)
        return err;
    size_t n = ZSTD_decompressDCtx(j->zctx, j->body.data, (size_t)size, raw, len);
    if (ZSTD_isError(n)) {
        ZSTD_DCtx_reset(j->zctx, ZSTD_reset_session_only);
        return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? BL_ENOMEM : BL_EFORMAT;
    }
    if (n != size)
        return BL_EFORMAT;
    j->body.len = n;
    return BL_OK;
}

static bl_err decompress(bl_prep *j, const void *raw, size_t len, bl_encoding enc,
                         uint64_t max_body)
{
    bl_buf_reset(&j->body);
    if (enc == BL_ENC_ZSTD) {
        int done;
        bl_err err = zstd_whole(j, raw, len, max_body, &done);
        if (done)
            return err;
    }
    bl_decomp *d;
    bl_err err = bl_decomp_new(enc, max_body, sink, &j->body, &d);
    if (err)
        return err;
    err = bl_decomp_feed(d, raw, len);
    if (!err)
        err = bl_decomp_end(d);
    bl_decomp_free(d);
    return err;
}

static bl_err reserve_trees(bl_prep *j, uint32_t n)
{
    if (n <= j->cap_trees)
        return BL_OK;
    bl_calltree *t = realloc(j->trees, (size_t)n * sizeof *t);
    if (!t)
        return BL_ENOMEM;
    j->trees = t;
    bl_err *e = realloc(j->tree_err, (size_t)n * sizeof *e);
    if (!e)
        return BL_ENOMEM;
    j->tree_err = e;
    for (uint32_t i = j->cap_trees; i < n; i++)
        bl_calltree_init(&j->trees[i]);
    j->cap_trees = n;
    return BL_OK;
}

void bl_prep_run(bl_prep *j, const void *raw, size_t len, bl_encoding enc, uint64_t max_body,
                 int check)
{
    drop(j);
    j->max_body = max_body;
    j->read_err = decompress(j, raw, len, enc, max_body);
    if (j->read_err)
        return;
    bl_err de = bl_batch_decode((const uint8_t *)j->body.data, j->body.len, &j->bt, &j->be);
    if (de == BL_ENOMEM)
        j->read_err = BL_ENOMEM; /* not malformed: to be tried again */
    if (de != BL_OK)
        return;
    j->decoded = 1;
    if (check) {
        j->checked = 1;
        j->check_err = bl_agg_check_batch(&j->bt, j->why, sizeof j->why);
        if (j->check_err)
            return;
    }
    uint32_t n = j->bt.n_threads;
    /* the partial straight from the records, in one pass without trees,
     * when every thread is well-formed (aggregate.h); else (or out of
     * memory) the trees, and the partial from them */
    if (j->want_part && bl_agg_part_records(&j->part, &j->bt, j->bt.origin_wall_us) == BL_OK)
        return;
    if (reserve_trees(j, n)) {
        /* no storage for the trees: every thread reports it */
        j->checked = 1;
        j->check_err = BL_ENOMEM;
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const bl_batch_thread *th = &j->bt.threads[i];
        bl_segment seg = { .truncated = th->truncated, .continues = th->continues,
                           .n_carried = th->n_carried, .since_us = th->since_us };
        j->tree_err[i] = bl_calltree_build_segment(&j->trees[i], th->records, th->n_records,
                                                   &seg);
    }
    j->n_trees = n;
    if (!j->want_part)
        return;
    for (uint32_t i = 0; i < n; i++)
        if (j->tree_err[i])
            return; /* the writer reports it, thread by thread */
    /* a failure (out of memory, an origin the writer replaces) leaves
     * part.ok 0: the writer aggregates the trees itself */
    (void)bl_agg_part_build(&j->part, &j->bt, j->trees, j->bt.origin_wall_us);
}

void bl_prep_file(bl_prep *j, const char *path, bl_encoding enc, uint64_t max_body, int check)
{
    drop(j);
    j->max_body = max_body;
    char *raw;
    size_t len;
    j->read_err = bl_read_file(path, (size_t)1 << 31, &raw, &len);
    if (j->read_err)
        return;
    bl_prep_run(j, raw, len, enc, max_body, check);
    free(raw);
}
