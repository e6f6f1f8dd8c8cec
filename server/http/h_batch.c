/*
 * h_batch.c — POST /v1/apps/{app}/batches: one batch (schema/batch-format.md),
 * binary, optionally gzip or zstd. Answers 202 {"batch_id","records"} only
 * once the body is durable in batches/pending (fsync of file and folder);
 * a batch id already received → 200 {"duplicate": true}, counted once.
 * Malformed → 400 naming the byte offset (of the decompressed batch).
 */
#include "http/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ingest/batch.h"

/* The batch id is pending, done or failed already (any encoding). */
static int seen(bl_http *h, const char *uuid)
{
    static const char *const dirs[3] = { "pending", "done", "failed" };
    for (int d = 0; d < 3; d++)
        for (int e = BL_ENC_IDENTITY; e <= BL_ENC_ZSTD; e++) {
            char p[BL_PATH_MAX];
            int n = snprintf(p, sizeof p, "%s/batches/%s/%.36s.%s", h->data_dir, dirs[d], uuid,
                             bl_enc_ext((bl_encoding)e));
            if (n > 0 && n < (int)sizeof p && access(p, F_OK) == 0)
                return 1;
        }
    return 0;
}

enum MHD_Result bl_h_batch(struct MHD_Connection *c, bl_http *h, req *r)
{
    bl_batch b;
    bl_batch_error be = { 0, NULL };
    char msg[400];
    const bl_buf *dec = r->enc == BL_ENC_IDENTITY ? &r->raw : &r->body; /* see req.body */
    bl_err e = bl_batch_decode((const uint8_t *)(dec->data ? dec->data : ""), dec->len, &b, &be);
    if (e == BL_ENOMEM)
        return bl_reply_error(c, h, 503, "out of memory");
    if (e) {
        snprintf(msg, sizeof msg, "malformed batch at offset %zu: %s", be.offset,
                 be.message ? be.message : bl_err_str(e));
        return bl_reply_error(c, h, 400, msg);
    }
    enum MHD_Result rc;
    char uuid[37];
    bl_uuid_format(b.batch_id, uuid);
    if (b.app.n != strlen(r->app) || memcmp(b.app.p, r->app, b.app.n) != 0) {
        snprintf(msg, sizeof msg, "batch is for app '%.*s', not '%s'",
                 (int)(b.app.n > 64 ? 64 : b.app.n), b.app.p, r->app);
        rc = bl_reply_error(c, h, 400, msg);
        goto out;
    }
    if (!bl_build_name_valid(b.build.p, b.build.n)) {
        rc = bl_reply_error(c, h, 400, "batch has no valid build name");
        goto out;
    }
    if (seen(h, uuid)) {
        atomic_fetch_add(&h->duplicates_in, 1);
        rc = bl_reply_json(c, h, 200, json_pack("{s:s,s:b}", "batch_id", uuid, "duplicate", 1));
        goto out;
    }
    char tmp[BL_PATH_MAX], dst[BL_PATH_MAX];
    int fd, exists = 0;
    if (bl_datadir_batch(h->data_dir, 0, uuid, r->enc, dst) != BL_OK ||
        bl_tmpfile(h->data_dir, &fd, tmp) != BL_OK) {
        rc = bl_reply_error(c, h, 500, "cannot store the batch");
        goto out;
    }
    if (bl_fd_write_all(fd, r->raw.data ? r->raw.data : "", r->raw.len) != BL_OK) {
        bl_file_abort(fd, tmp);
        rc = bl_reply_error(c, h, 500, "cannot store the batch");
        goto out;
    }
    /* the check for a batch id in any encoding and the link that claims it
     * happen under one lock, so concurrent posts of one batch in different
     * encodings get one 202 (the fsync of the data happened before) */
    static pthread_mutex_t claim = PTHREAD_MUTEX_INITIALIZER;
    if (fsync(fd) != 0) {
        bl_file_abort(fd, tmp);
        rc = bl_reply_error(c, h, 500, "cannot store the batch");
        goto out;
    }
    pthread_mutex_lock(&claim);
    if (seen(h, uuid)) {
        pthread_mutex_unlock(&claim);
        bl_file_abort(fd, tmp);
        atomic_fetch_add(&h->duplicates_in, 1);
        rc = bl_reply_json(c, h, 200, json_pack("{s:s,s:b}", "batch_id", uuid, "duplicate", 1));
        goto out;
    }
    e = bl_file_commit(fd, tmp, dst, &exists);
    pthread_mutex_unlock(&claim);
    if (exists) {
        atomic_fetch_add(&h->duplicates_in, 1);
        rc = bl_reply_json(c, h, 200, json_pack("{s:s,s:b}", "batch_id", uuid, "duplicate", 1));
        goto out;
    }
    if (e) {
        rc = bl_reply_error(c, h, 500, "cannot store the batch");
        goto out;
    }
    if (bl_processor_enqueue(h->c.proc, uuid, r->enc) != BL_OK) {
        /* durable already: it will be picked up at the next start */
        fprintf(stderr, "beatline-server: cannot queue batch %s (out of memory)\n", uuid);
    }
    atomic_fetch_add(&h->batches_in, 1);
    atomic_fetch_add(&h->records_in, b.n_records);
    rc = bl_reply_json(c, h, 202,
                       json_pack("{s:s,s:I}", "batch_id", uuid, "records", (json_int_t)b.n_records));
out:
    bl_batch_cleanup(&b);
    return rc;
}
