/*
 * h_misc.c — GET /healthz and GET /metrics (Prometheus text exposition
 * format 0.0.4).
 */
#include "http/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/datahealth.h"
#include "pipeline/events.h"

/* 200 {"status":"ok"} only when the server can take data: the database
 * answers a query, the data directory is writable and its disk has more
 * than --min-free bytes free, and the writer commits. Otherwise 503
 * {"status":"unhealthy"|"degraded","error": what is wrong, ...}. Cheap: one
 * SELECT on the thread's read connection, one statvfs, two access(). */
enum MHD_Result bl_h_health(struct MHD_Connection *c, bl_http *h, req *r)
{
    (void)r;
    bl_db *db = bl_http_db(h);
    if (!db)
        return bl_reply_json(c, h, 503,
                             json_pack("{s:s,s:s}", "status", "unhealthy", "error",
                                       "database unavailable (see the server log)"));
    if (bl_db_ping(db) != BL_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "database does not answer: %s", bl_db_errmsg(db));
        return bl_reply_json(c, h, 503,
                             json_pack("{s:s,s:s}", "status", "unhealthy", "error", msg));
    }
    bl_disk_state ds;
    if (bl_disk_state_read(h->data_dir, &ds) != BL_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot check the data directory: %s", strerror(errno));
        return bl_reply_json(c, h, 503,
                             json_pack("{s:s,s:s}", "status", "unhealthy", "error", msg));
    }
    char why[300];
    unsigned st = bl_disk_judge(&ds, h->c.min_free, 0, why, sizeof why);
    if (st == 503) /* read-only */
        return bl_reply_json(c, h, 503,
                             json_pack("{s:s,s:s}", "status", "unhealthy", "error", why));
    if (st) /* 507: full, or no inodes */
        return bl_reply_json(c, h, 503,
                             json_pack("{s:s,s:s,s:I,s:I}", "status", "unhealthy", "error", why,
                                       "free_bytes", (json_int_t)ds.free_bytes,
                                       "min_free_bytes", (json_int_t)h->c.min_free));
    bl_proc_stats ps;
    bl_processor_stats(h->c.proc, &ps);
    if (ps.failing >= 3)
        return bl_reply_json(c, h, 503,
                             json_pack("{s:s,s:s,s:I}", "status", "degraded", "error",
                                       "the writer cannot commit (see the server log)",
                                       "failed_transactions", (json_int_t)ps.failing));
    return bl_reply_json(c, h, 200, json_pack("{s:s}", "status", "ok"));
}

static bl_err metric(bl_buf *b, const char *name, const char *type, const char *help,
                     uint64_t v)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type,
             name, (unsigned long long)v);
    return bl_buf_puts(b, tmp);
}

/* Retention counters and bytes on disk (pipeline/retention.h): from the
 * retention thread's last disk scan, never a walk per scrape. */
static bl_err retention_metrics(bl_buf *b, bl_retention *ret)
{
    bl_retention_stats rs;
    bl_retention_stats_get(ret, &rs);
    bl_err e = metric(b, "beatline_retention_raw_deleted_total", "counter",
                      "Raw batch files deleted by raw retention (--keep-raw-days).",
                      rs.raw_deleted);
    if (!e)
        e = metric(b, "beatline_retention_rows_deleted_total", "counter",
                   "Aggregate rows deleted by retention (--keep-days) and build deletion.",
                   rs.rows_deleted);
    if (!e)
        e = metric(b, "beatline_retention_builds_deleted_total", "counter",
                   "Builds whose deletion finished (DELETE, or every aggregate expired).",
                   rs.builds_deleted);
    if (!e)
        e = metric(b, "beatline_retention_failed_deleted_total", "counter",
                   "Failed batches deleted after --keep-failed-days.", rs.failed_deleted);
    if (!e)
        e = metric(b, "beatline_retention_files_deleted_total", "counter",
                   "Uploaded contents no build names, deleted (PostgreSQL store).",
                   rs.files_deleted);
    if (!e)
        e = metric(b, "beatline_retention_passes_total", "counter",
                   "Retention passes finished.", rs.passes);
    bl_disk_app *apps;
    size_t n;
    bl_disk_server srv;
    int scanned;
    if (e || (e = bl_retention_disk(ret, &apps, &n, &srv, &scanned)))
        return e;
    e = bl_buf_puts(b, "# HELP beatline_app_disk_bytes Bytes on disk per app, as of the last "
                       "disk scan: raw batches kept, uploaded files (mappings, indexes, "
                       "method-ID files).\n# TYPE beatline_app_disk_bytes gauge\n");
    char tmp[256];
    for (size_t i = 0; i < n && !e; i++) {
        snprintf(tmp, sizeof tmp,
                 "beatline_app_disk_bytes{app_id=\"%lld\",kind=\"raw\"} %llu\n"
                 "beatline_app_disk_bytes{app_id=\"%lld\",kind=\"uploads\"} %llu\n",
                 (long long)apps[i].id, (unsigned long long)apps[i].raw_bytes,
                 (long long)apps[i].id, (unsigned long long)apps[i].upload_bytes);
        e = bl_buf_puts(b, tmp);
    }
    if (!e)
        e = bl_buf_puts(b, "# HELP beatline_app_raw_batches Raw batch files kept per app.\n"
                           "# TYPE beatline_app_raw_batches gauge\n");
    for (size_t i = 0; i < n && !e; i++) {
        snprintf(tmp, sizeof tmp, "beatline_app_raw_batches{app_id=\"%lld\"} %llu\n",
                 (long long)apps[i].id, (unsigned long long)apps[i].raw_files);
        e = bl_buf_puts(b, tmp);
    }
    free(apps);
    if (!e && scanned) {
        char big[1024];
        snprintf(big, sizeof big,
                 "# HELP beatline_disk_bytes Bytes on disk not per app, as of the last disk "
                 "scan.\n# TYPE beatline_disk_bytes gauge\n"
                 "beatline_disk_bytes{kind=\"database\"} %llu\n"
                 "beatline_disk_bytes{kind=\"pending\"} %llu\n"
                 "beatline_disk_bytes{kind=\"failed\"} %llu\n"
                 "beatline_disk_bytes{kind=\"deleting\"} %llu\n"
                 "beatline_disk_bytes{kind=\"raw_unattributed\"} %llu\n",
                 (unsigned long long)srv.database, (unsigned long long)srv.pending,
                 (unsigned long long)srv.failed, (unsigned long long)srv.trash,
                 (unsigned long long)srv.unattributed);
        e = bl_buf_puts(b, big);
    }
    return e;
}

enum MHD_Result bl_h_metrics(struct MHD_Connection *c, bl_http *h, req *r)
{
    (void)r;
    bl_buf b;
    bl_buf_init(&b, 0);
    char tmp[256];
    bl_err e = bl_buf_puts(&b, "# HELP beatline_http_requests_total HTTP requests answered, by "
                               "status code.\n# TYPE beatline_http_requests_total counter\n");
    for (unsigned s = 100; s < 600 && !e; s++) {
        uint64_t n = atomic_load(&h->status_count[s]);
        if (!n)
            continue;
        snprintf(tmp, sizeof tmp, "beatline_http_requests_total{code=\"%u\"} %llu\n", s,
                 (unsigned long long)n);
        e = bl_buf_puts(&b, tmp);
    }
    bl_proc_stats ps;
    bl_processor_stats(h->c.proc, &ps);
    if (!e)
        e = metric(&b, "beatline_ingest_bytes_total", "counter",
                   "Request body bytes received (as sent, compressed).",
                   atomic_load(&h->bytes_in));
    if (!e)
        e = metric(&b, "beatline_batches_accepted_total", "counter",
                   "Batches acknowledged with 202.", atomic_load(&h->batches_in));
    if (!e)
        e = metric(&b, "beatline_records_accepted_total", "counter",
                   "Records in acknowledged batches.", atomic_load(&h->records_in));
    if (!e)
        e = metric(&b, "beatline_batches_duplicate_total", "counter",
                   "Batches received again (answered 200, not counted twice).",
                   atomic_load(&h->duplicates_in) + ps.duplicates);
    if (!e)
        e = metric(&b, "beatline_batches_processed_total", "counter",
                   "Batches turned into aggregates.", ps.batches);
    if (!e)
        e = metric(&b, "beatline_records_processed_total", "counter",
                   "Records turned into aggregates.", ps.records);
    if (!e)
        e = metric(&b, "beatline_batches_prepared_from_memory_total", "counter",
                   "Batches a prep thread decoded from the copy their POST decompressed, "
                   "instead of reading and decompressing their file again.",
                   ps.prep_in_memory);
    if (!e)
        e = metric(&b, "beatline_prep_memory_bytes", "gauge",
                   "Bytes of those decompressed copies kept now, for batches not "
                   "prepared yet (at most 64 MiB).",
                   ps.prep_memory_bytes);
    if (!e)
        e = metric(&b, "beatline_records_malformed_total", "counter",
                   "Records that broke the call-tree rules (lost enters, unmatched exits).",
                   ps.malformed);
    if (!e)
        e = metric(&b, "beatline_records_unknown_method_total", "counter",
                   "Records of calls whose methodId is not in the build's method-ID file "
                   "(shown as \"unknown method N\").",
                   ps.unknown_method);
    if (!e)
        e = metric(&b, "beatline_mapping_index_rebuilt_total", "counter",
                   "Mapping indexes found damaged (checksum) or missing and rebuilt from the "
                   "stored mapping.",
                   bl_datadir_index_rebuilds());
    if (!e)
        e = metric(&b, "beatline_segments_truncated_total", "counter",
                   "Thread segments whose ring had wrapped in the app (records lost there).",
                   ps.truncated);
    if (!e)
        e = metric(&b, "beatline_batches_failed_total", "counter",
                   "Batches that could not be processed (kept in batches/failed).", ps.failed);
    if (!e)
        e = metric(&b, "beatline_processing_queue_depth", "gauge",
                   "Batches queued for the writer.", ps.queue_depth);
    /* the durable queue (with PostgreSQL: the shared one, the same on every
     * node); left out when it cannot be read (the database is away) */
    bl_queue_gauge qg;
    if (!e && bl_processor_queue_gauges(h->c.proc, &qg) == BL_OK) {
        e = metric(&b, "beatline_queue_batches_waiting", "gauge",
                   "Acknowledged batches no node has taken yet.", (uint64_t)qg.waiting);
        if (!e)
            e = metric(&b, "beatline_queue_batches_leased", "gauge",
                       "Batches a node has taken and not committed (in progress, or "
                       "waiting for their build's uploads).",
                       (uint64_t)qg.leased);
        if (!e)
            e = metric(&b, "beatline_queue_batches_failed", "gauge",
                       "Batches given up and kept for inspection (until --keep-failed-days).",
                       (uint64_t)qg.failed);
        if (!e)
            e = metric(&b, "beatline_queue_oldest_batch_age_seconds", "gauge",
                       "Age of the oldest acknowledged batch not yet committed.",
                       (uint64_t)qg.oldest_s);
    }
    if (!e)
        e = metric(&b, "beatline_batches_waiting", "gauge",
                   "Batches waiting for their build's method-ID file or mapping.", ps.waiting);
    if (!e)
        e = metric(&b, "beatline_batches_expired_total", "counter",
                   "Batches deleted after waiting longer than --waiting-expiry for their "
                   "build's method-ID file or mapping.",
                   ps.expired);
    if (!e)
        e = metric(&b, "beatline_batches_quota_refused_total", "counter",
                   "Batches refused with 429 by a per-app ingest quota.",
                   atomic_load(&h->quota_refused));
    if (!e)
        e = metric(&b, "beatline_call_paths_dropped_total", "counter",
                   "Calls left out of call trees because their build reached the node limit "
                   "(still counted in slow-methods).",
                   ps.dropped_paths);
    if (!e)
        e = metric(&b, "beatline_transactions_failing", "gauge",
                   "Writer transactions failed in a row (0 = healthy).", ps.failing);
    if (!e)
        e = metric(&b, "beatline_transactions_total", "counter",
                   "Write transactions committed by this node's writer (SQLite or PostgreSQL).", ps.txn);
    if (!e && h->c.ret)
        e = retention_metrics(&b, h->c.ret);
    if (!e)
        e = metric(&b, "beatline_blocks_total", "counter",
                   "Main-thread blocks (block events) stored in block aggregates.",
                   bl_events_blocks());
    if (!e)
        e = metric(&b, "beatline_launches_total", "counter",
                   "App launches (launch events) stored in launch aggregates.",
                   bl_events_launches());
    if (!e)
        e = metric(&b, "beatline_network_requests_total", "counter",
                   "Network requests (network events) stored in network aggregates.",
                   bl_events_network());
    if (!e)
        e = bl_buf_puts(&b, "# HELP beatline_events_malformed_total Batch event lines skipped, "
                            "by reason (the batch is still processed).\n"
                            "# TYPE beatline_events_malformed_total counter\n");
    for (int i = 0; i < BL_EV_REASONS && !e; i++) {
        snprintf(tmp, sizeof tmp, "beatline_events_malformed_total{reason=\"%s\"} %llu\n",
                 bl_events_reason(i), (unsigned long long)bl_events_malformed(i));
        e = bl_buf_puts(&b, tmp);
    }
    static const char *const le[7] = { "0.01", "0.05", "0.1", "0.5", "1", "5", "+Inf" };
    if (!e)
        e = bl_buf_puts(&b, "# HELP beatline_processing_latency_seconds Time from a batch's "
                            "acknowledgement to its commit.\n"
                            "# TYPE beatline_processing_latency_seconds histogram\n");
    for (int i = 0; i < 7 && !e; i++) {
        snprintf(tmp, sizeof tmp, "beatline_processing_latency_seconds_bucket{le=\"%s\"} %llu\n",
                 le[i], (unsigned long long)ps.lat_bucket[i]);
        e = bl_buf_puts(&b, tmp);
    }
    if (!e) {
        snprintf(tmp, sizeof tmp,
                 "beatline_processing_latency_seconds_sum %.6f\n"
                 "beatline_processing_latency_seconds_count %llu\n",
                 ps.lat_sum_s, (unsigned long long)ps.lat_bucket[6]);
        e = bl_buf_puts(&b, tmp);
    }
    enum MHD_Result rc =
        e ? bl_reply_error(c, h, 500, "out of memory")
          : bl_reply_text(c, h, 200, "text/plain; version=0.0.4", b.data, b.len);
    bl_buf_cleanup(&b);
    return rc;
}
