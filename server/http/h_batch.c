/*
 * h_batch.c — POST /v1/apps/{app}/batches: one batch (schema/batch-format.md),
 * binary, optionally gzip or zstd. Answers 202 {"batch_id","records"} only
 * once the body is durable in batches/pending (fsync of file and folder),
 * or with a PostgreSQL store committed in the raw_batches queue (no local
 * file: any node processes it; pipeline/processor.h bl_processor_queue_put);
 * a batch id already received → 200 {"duplicate": true}, counted once.
 * Malformed → 400 naming the byte offset (of the decompressed batch).
 */
#include "http/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/utf8.h"
#include "ingest/batch.h"
#include "pipeline/aggregate.h"
#include "pipeline/quota.h"
#include "store/queue.h"

/* The quotas of app r->app_id: the server's options, overridden by
 * `beatline-server app set` (store/apps.h). A database error leaves the
 * server's options. */
static void app_limits(bl_http *h, req *r, bl_quota *q, bl_quota_limits *out)
{
    *out = *bl_quota_defaults(q);
    int64_t v[BL_APP_QUOTAS];
    bl_db *db = bl_http_db(h);
    if (!db || bl_apps_quotas(db, r->app_id, v) != BL_OK)
        return;
    uint64_t *f[BL_APP_QUOTAS] = { &out->waiting_builds, &out->waiting_batches,
                                   &out->waiting_bytes, &out->new_builds_per_hour };
    for (int i = 0; i < BL_APP_QUOTAS; i++)
        if (v[i] >= 0)
            *f[i] = (uint64_t)v[i];
}

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
    /* quota: set before any goto out (out releases a count not handed on) */
    bl_quota *q = bl_processor_quota(h->c.proc);
    int counted = 0;
    char build[BL_BUILD_NAME_MAX + 1] = "";
    bl_uuid_format(b.batch_id, uuid);
    if (b.app.n != strlen(r->app) || memcmp(b.app.p, r->app, b.app.n) != 0) {
        char shown[160];
        snprintf(msg, sizeof msg, "batch is for app '%s', not '%s'",
                 bl_escape_quoted(b.app.p, b.app.n, shown, sizeof shown), r->app);
        rc = bl_reply_error(c, h, 400, msg);
        goto out;
    }
    if (!bl_build_name_valid(b.build.p, b.build.n)) {
        rc = bl_reply_error(c, h, 400, "batch has no valid build name");
        goto out;
    }
    /* what the writer would refuse is refused here, before the 202 */
    e = bl_agg_check_batch(&b, msg, sizeof msg);
    if (e) {
        rc = e == BL_ETOOBIG ? bl_reply_error(c, h, 413, msg)
                             : bl_reply_error(c, h, 503, "out of memory");
        goto out;
    }
    int in_db = bl_processor_uses_queue(h->c.proc);
    if (!in_db && seen(h, uuid)) {
        atomic_fetch_add(&h->duplicates_in, 1);
        rc = bl_reply_json(c, h, 200, json_pack("{s:s,s:b}", "batch_id", uuid, "duplicate", 1));
        goto out;
    }
    /* per-app quotas on batches that would wait for uploads (pipeline/quota.h) */
    snprintf(build, sizeof build, "%.*s", (int)b.build.n, b.build.p);
    unsigned retry = 0;
    bl_quota_limits lim = *bl_quota_defaults(q);
    if (!bl_quota_ready(q, r->app_id, build)) /* limits matter only then */
        app_limits(h, r, q, &lim);
    int qr;
    if (in_db && !bl_quota_ready(q, r->app_id, build)) {
        /* several nodes share the queue: the waiting quotas count its rows
         * (every node sees the same), not this node's memory */
        bl_queue_waiting w;
        bl_db *db = bl_http_db(h);
        if (!db || bl_queue_waiting_of(db, r->app_id, build, &w) != BL_OK) {
            if (db)
                fprintf(stderr, "beatline-server: quotas: %s\n", bl_db_errmsg(db));
            rc = bl_reply_error_retry(c, h, 503,
                                      "cannot check the app's quotas: database unavailable", 1);
            goto out;
        }
        if (w.build_ready) { /* its files came through another node */
            if (bl_quota_set_ready(q, r->app_id, build, 1) != BL_OK) {
                rc = bl_reply_error(c, h, 503, "out of memory");
                goto out;
            }
            qr = bl_quota_admit(q, &lim, r->app_id, build, r->raw.len, &counted, &retry, msg,
                                sizeof msg);
        } else {
            bl_quota_shared sh = { (uint64_t)w.builds, (uint64_t)w.batches, (uint64_t)w.bytes,
                                   w.build_waits };
            qr = bl_quota_admit_shared(q, &lim, r->app_id, build, r->raw.len, &sh, &retry, msg,
                                       sizeof msg);
        }
    } else {
        qr = bl_quota_admit(q, &lim, r->app_id, build, r->raw.len, &counted, &retry, msg,
                            sizeof msg);
    }
    if (qr < 0) {
        rc = bl_reply_error(c, h, 503, "out of memory");
        goto out;
    }
    if (qr > 0) {
        atomic_fetch_add(&h->quota_refused, 1);
        rc = bl_reply_error_retry(c, h, 429, msg, retry);
        goto out;
    }
    if (in_db) {
        /* durable in the database's queue before the 202, where it counts
         * against the waiting quotas (bl_queue_waiting_of) */
        int dup = 0;
        e = bl_processor_queue_put(h->c.proc, uuid, r->enc, r->app_id, build,
                                   r->raw.data ? r->raw.data : "", r->raw.len, &dup);
        if (e == BL_ENOMEM) {
            rc = bl_reply_error(c, h, 503, "out of memory");
        } else if (e) {
            rc = bl_reply_error_retry(c, h, 503, "cannot store the batch: database unavailable",
                                      1);
        } else if (dup) {
            atomic_fetch_add(&h->duplicates_in, 1);
            rc = bl_reply_json(c, h, 200,
                               json_pack("{s:s,s:b}", "batch_id", uuid, "duplicate", 1));
        } else {
            atomic_fetch_add(&h->batches_in, 1);
            atomic_fetch_add(&h->records_in, b.n_records);
            rc = bl_reply_json(c, h, 202, json_pack("{s:s,s:I}", "batch_id", uuid, "records",
                                                    (json_int_t)b.n_records));
        }
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
    /* the decompressed bytes, so that the prep thread does not read and
     * decompress the file again (a copy, kept within a bound) */
    if (r->enc != BL_ENC_IDENTITY)
        bl_processor_offer_body(h->c.proc, uuid, dec->data ? dec->data : "", dec->len);
    if (bl_processor_enqueue_admitted(h->c.proc, uuid, r->enc, r->app_id, build, r->raw.len,
                                      counted) != BL_OK) {
        /* durable already: it will be picked up at the next start */
        fprintf(stderr, "beatline-server: cannot queue batch %s (out of memory)\n", uuid);
    } else {
        counted = 0; /* the writer releases it */
    }
    atomic_fetch_add(&h->batches_in, 1);
    atomic_fetch_add(&h->records_in, b.n_records);
    rc = bl_reply_json(c, h, 202,
                       json_pack("{s:s,s:I}", "batch_id", uuid, "records", (json_int_t)b.n_records));
out:
    if (counted) /* admitted but not handed to the writer */
        bl_quota_release(q, r->app_id, build, r->raw.len);
    bl_batch_cleanup(&b);
    return rc;
}
