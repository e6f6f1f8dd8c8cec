/*
 * h_delete.c — DELETE /v1/apps/{app}/builds/{build} (upload key): deletes
 * a build, its uploaded files, its raw batches and its aggregates
 * (docs/api.md "Deleting a build").
 *
 * The key was checked before anything else (http.c begin). The build is
 * looked up on the thread's read connection (PostgreSQL: when unknown, made
 * if a batch or file of it is waiting, see pg_pending_build, else 404;
 * SQLite: the writer looks again after what it received before), then the
 * writer moves it to the graveyard (pipeline/processor.h,
 * bl_processor_drop_build): from then on nothing shows it, and the
 * retention thread deletes its rows and files in the background.
 */
#include "http/internal.h"

#include "pipeline/retention.h"
#include "store/files.h"
#include "store/queue.h"
#include "store/retention.h"
#include "store/writer.h"

/* How long the answer waits for the writer (it may have a backlog). */
#define DELETE_WAIT_MS 10000

/* PostgreSQL store, a build without a row: when the queue holds a batch of
 * it or the store a file of it (answered 202 / 201, not registered by a
 * writer yet), its row is made now (as a writer would: bl_wr_build_get) so
 * that the deletion, in line after those batches, deletes it. *id: the
 * row's id. BL_ENOTFOUND when nothing of the build exists, BL_EIO. */
static bl_err pg_pending_build(bl_http *h, req *r, int64_t *id)
{
    bl_db *w = bl_http_db_rw(h);
    if (!w)
        return BL_EIO;
    int has = 0;
    char hash[BL_FILES_HASH_LEN + 1];
    bl_err e = bl_queue_build_has(w, r->app_id, r->build, &has);
    for (int k = BL_FILE_MAPPING; !e && !has && k <= BL_FILE_METHODIDS; k++) {
        e = bl_files_build_get(w, r->app_id, r->build, (bl_file_kind)k, hash, NULL);
        has = e == BL_OK;
        if (e == BL_ENOTFOUND || e == BL_EFORMAT)
            e = BL_OK;
    }
    if (e)
        return BL_EIO;
    /* nothing waits for it: it may have been processed (its row made) since */
    if (!has)
        return bl_rs_build_find(w, r->app_id, r->build, id);
    return bl_wr_build_get(w, r->app_id, r->build, bl_now_us(), id) ? BL_EIO : BL_OK;
}

enum MHD_Result bl_h_delete_build(struct MHD_Connection *c, bl_http *h, req *r)
{
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_error(c, h, 503, "database unavailable");
    int64_t id = 0;
    bl_err e = bl_rs_build_find(db, r->app_id, r->build, &id);
    /* A build not registered yet may still exist: an upload or a batch
     * answered before this request is registered by a writer later. SQLite:
     * the writer decides in queue order (BL_ENOTFOUND when there is no such
     * build once everything received before is in). PostgreSQL: the
     * deletion needs the build's row (pr_q_drop_build): pg_pending_build. */
    if (e == BL_ENOTFOUND && bl_files_in_store(db))
        e = pg_pending_build(h, r, &id);
    int known = e == BL_OK;
    if (e == BL_ENOTFOUND && bl_files_in_store(db))
        return bl_reply_json(c, h, 404,
                             json_pack("{s:s}", "error", "no such build in this app"));
    if (e && e != BL_ENOTFOUND)
        return bl_reply_error(c, h, 503, "database error");
    /* recorded before it is queued: a deletion answered 202 that then fails
     * is tried again by the retention thread (pipeline/retention.h) */
    if (known && bl_retention_request_add(h->data_dir, id) != BL_OK)
        return bl_reply_error(c, h, 503, "cannot record the deletion request");
    int done = 0;
    e = bl_processor_drop_build(h->c.proc, r->app_id, r->build, 0, DELETE_WAIT_MS, &done);
    if (e != BL_OK && known) /* the answer says nothing changed (or it was never queued) */
        bl_retention_request_done(h->data_dir, id);
    if (e == BL_ENOTFOUND) /* deleted meanwhile by another request */
        return bl_reply_json(c, h, 404,
                             json_pack("{s:s}", "error", "no such build in this app"));
    if (e == BL_ENOMEM)
        return bl_reply_error(c, h, 503, "out of memory");
    if (e)
        return bl_reply_error(c, h, 503, "the build could not be deleted (see the server log)");
    bl_retention_kick(h->c.ret);
    json_t *build = bl_json_text(r->build);
    return bl_reply_json(c, h, done ? 200 : 202,
                         build ? json_pack("{s:s,s:o,s:s}", "app", r->app, "build", build,
                                           "status", done ? "deleted" : "deleting")
                               : NULL);
}
