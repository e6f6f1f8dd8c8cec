/*
 * events.h — the events of a batch (schema/batch-format.md, "Events"): JSON
 * lines parsed by the writer as it processes the batch, dispatched by
 * "type". Issue 13: "block" events become block aggregates (agg/blocks.h,
 * store/blocks.h); issue 15 adds "launch" (below); issue 16: "network"
 * events become network aggregates per build, hour, host, HTTP method and
 * URL pattern (agg/urlpattern.h, store/network.h; the app's user patterns
 * as stored when the batch is processed).
 *
 * A line that is not a JSON object, has no "type", has an unknown type or a
 * field of the wrong type or range is skipped and counted by reason
 * (bl_events_malformed, /metrics beatline_events_malformed_total{reason});
 * it never fails the batch. Only a database error (the transaction is
 * rolled back) or a memory shortage (the transaction is tried again) stop
 * a batch.
 *
 * Issue 15: "launch" events become launch aggregates (store/launches.h):
 * per build, kind and hour the phase durations, TTID and TTFD; the calls of
 * the launch window [max(start_us, 0), first_frame_us] of the event's
 * thread segment (the block window rules, agg/blocks.h) become the merged
 * launch call tree per build and kind and the per-method figures.
 *
 * Work per batch is bounded: at most BL_EVENTS_BLOCKS_MAX block events and
 * BL_EVENTS_LAUNCHES_MAX launch events are stored per batch, and
 * rebuilding a thread for its block or launch windows costs its records, a
 * window its calls, past BL_EVENTS_WORK_MAX units in one batch (one budget
 * for both types); the events past either bound are skipped (reason
 * "budget"). At most BL_EVENTS_NETWORK_MAX network events are stored per batch; the ones
 * past it are skipped (reason "budget"). A network event's path must hold
 * no query or fragment ('?' or '#': "bad_field"): query strings are never
 * stored, only the parameter names of "query_keys" in the pattern.
 *
 * Writer thread only, like the rest of the processor's state.
 */
#ifndef BL_PIPELINE_EVENTS_H
#define BL_PIPELINE_EVENTS_H

#include <stdint.h>
#include "common/blerr.h"
#include "ingest/batch.h"
#include "store/db.h"

#define BL_EVENTS_WORK_MAX ((uint64_t)1 << 26)
#define BL_EVENTS_BLOCKS_MAX 4096
#define BL_EVENTS_LAUNCHES_MAX 256
#define BL_EVENT_ACTIVITY_MAX 512 /* bytes */
#define BL_EVENT_TIME_MIN (-((int64_t)1 << 40)) /* a launch's times: µs, may be negative */
#define BL_EVENT_TIME_MAX (((int64_t)1 << 40) - 1)
#define BL_EVENTS_NETWORK_MAX 16384
#define BL_EVENT_TARGET_MAX 512  /* bytes */
#define BL_EVENT_DEVICE_MAX 64   /* bytes */
#define BL_EVENT_STACK_MAX 256   /* frames */
#define BL_EVENT_FRAME_MAX 512   /* bytes */

/* Reasons a line is skipped (the metric's label in bl_events_reason). */
enum bl_event_reason {
    BL_EV_NOT_JSON,     /* "not_json": not a JSON object (syntax, a bare value, an empty line) */
    BL_EV_NO_TYPE,      /* "no_type": no "type" string */
    BL_EV_UNKNOWN_TYPE, /* "unknown_type": a type this server does not know */
    BL_EV_BAD_FIELD,    /* "bad_field": a field missing, of the wrong type, or out of range */
    BL_EV_THREAD,       /* "thread": "thread" is not an index into the batch's thread table */
    BL_EV_WINDOW,       /* "window": begin_us > end_us (block, network); a launch's times out of
                         * order (a phase's begin > end, before start_us or ending after
                         * first_frame_us; first_frame_us < start_us) */
    BL_EV_BUDGET,       /* "budget": past BL_EVENTS_BLOCKS_MAX, BL_EVENTS_LAUNCHES_MAX,
                         * BL_EVENTS_WORK_MAX or BL_EVENTS_NETWORK_MAX in this batch */
    BL_EV_REASONS
};

/* The label of a reason ("not_json", ...). */
const char *bl_events_reason(int reason);

/* Process-wide counters for /metrics (thread-safe): lines skipped for
 * `reason`, blocks and launches stored, in committed transactions (counted
 * when the transaction is flushed, just before COMMIT). */
uint64_t bl_events_malformed(int reason);
uint64_t bl_events_blocks(void);
uint64_t bl_events_launches(void);
/* Network requests stored (network events), in committed transactions. */
uint64_t bl_events_network(void);

typedef struct bl_events bl_events;

/* A parser/aggregator with its scratch memory. BL_ENOMEM. */
bl_err bl_events_new(bl_events **out);
void bl_events_free(bl_events *ev);

/*
 * Processes the events of decoded batch bt (borrowed) of build `build_id`,
 * on db inside the transaction the caller opened. origin_wall_us: the
 * batch's wall clock at its monotonic origin (already checked by the
 * caller). BL_OK (skipped lines counted); BL_ENOMEM (roll back, try again);
 * BL_EIO (a write failed: the transaction must go).
 */
bl_err bl_events_batch(bl_events *ev, bl_db *db, const bl_batch *bt, int64_t build_id,
                       int64_t origin_wall_us);

/* The transaction is about to commit: its counts go to the counters. */
void bl_events_flush(bl_events *ev);
/* Forgets the counts of a transaction that was rolled back (or committed
 * and flushed). */
void bl_events_clear(bl_events *ev);

#endif
