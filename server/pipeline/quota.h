/*
 * quota.h — per-app ingest quotas on batches that wait for their build's
 * uploads.
 *
 * The ingest key ships inside every app, so anyone can post batches for any
 * build name. A batch of a build that has its files (method-ID file, and
 * the mapping when names are obfuscated) is processed at once and costs
 * nothing lasting; a batch of any other build waits on disk for uploads
 * that may never come. These quotas bound what one app's ingest key can
 * make the server keep, per app:
 *
 *   waiting_builds       builds with at least one waiting batch
 *   waiting_batches      waiting batches
 *   waiting_bytes        bytes of waiting batches (as received)
 *   new_builds_per_hour  builds first seen in a batch, per clock hour
 *                        (builds that arrive by upload do not count)
 *
 * 0 means no limit. A batch over a quota is refused before the 202 (HTTP
 * 429 + Retry-After); a batch for a build that can be processed is never
 * refused by a quota.
 *
 * Accounting: a batch is "counted" from the moment it is admitted for a
 * build that cannot be processed (or parked by the writer, bl_quota_hold)
 * until the writer is done with it (processed, failed, duplicate or expired:
 * bl_quota_release). Builds are known by (app id, name); the tracker keeps
 * one small entry per build seen (name copy + counters), never freed while
 * the server runs. Thread-safe (one mutex; every call is O(1) expected).
 */
#ifndef BL_QUOTA_H
#define BL_QUOTA_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef struct bl_quota_limits {
    uint64_t waiting_builds;      /* per app; default 50 */
    uint64_t waiting_batches;     /* per app; default 10000 */
    uint64_t waiting_bytes;       /* per app, bytes; default 1 GiB */
    uint64_t new_builds_per_hour; /* per app; default 100 */
} bl_quota_limits;

typedef struct bl_quota bl_quota;

/* A new tracker with these limits (copied). BL_ENOMEM. */
bl_err bl_quota_new(const bl_quota_limits *limits, bl_quota **out);
/* NULL allowed. */
void bl_quota_free(bl_quota *q);

/* Whether build `build` of app `app` can be processed now (its files are
 * there): said by the upload handler as soon as the files are stored
 * (before its 201/200), and by the writer when it registers the build
 * (the last word: it withdraws it when the build cannot be symbolicated).
 * Creates the build's entry when missing (not
 * counted as a new build). BL_ENOMEM. */
bl_err bl_quota_set_ready(bl_quota *q, int64_t app, const char *build, int ready);

/*
 * Admission of a batch of `bytes` bytes for (app, build), before its 202,
 * under `lim` (the app's own limits; NULL: the tracker's).
 * Returns 0 when admitted: *counted = 1 when the batch now counts against
 * the app's quotas (its build cannot be processed yet), else 0. Returns 1
 * when refused: msg (n bytes) says which quota, *retry_after the seconds
 * after which trying again may succeed. -1 when out of memory.
 * A refused batch changes nothing; an admitted batch that is finally not
 * stored must be given back with bl_quota_release when *counted.
 */
int bl_quota_admit(bl_quota *q, const bl_quota_limits *lim, int64_t app, const char *build,
                   uint64_t bytes, int *counted, unsigned *retry_after, char *msg, size_t n);

/* The waiting counts of an app in a queue several servers share (the
 * PostgreSQL store's raw_batches, store/queue.h bl_queue_waiting_of). */
typedef struct bl_quota_shared {
    uint64_t builds;  /* builds with waiting batches */
    uint64_t batches; /* waiting batches */
    uint64_t bytes;   /* their bytes, as received */
    int build_waits;  /* this build is one of them */
} bl_quota_shared;

/*
 * bl_quota_admit for a server whose batches wait in a shared queue (several
 * nodes on PostgreSQL): the waiting quotas are checked against *sh, read
 * from the database just before, instead of this tracker's counts, and an
 * admitted batch is not counted here (the queue counts it). The new-builds
 * quota stays this tracker's (per server; a build with batches waiting in
 * the queue is not new). Several servers admitting at the same moment may
 * each pass the last free place: the counts may exceed a quota by the
 * number of batches admitted at once. 0 admitted, 1 refused (msg,
 * *retry_after as bl_quota_admit), -1 out of memory.
 */
int bl_quota_admit_shared(bl_quota *q, const bl_quota_limits *lim, int64_t app,
                          const char *build, uint64_t bytes, const bl_quota_shared *sh,
                          unsigned *retry_after, char *msg, size_t n);

/* Whether batches of (app, build) go straight to processing, so that
 * bl_quota_admit will not look at limits (a hint: admit decides again under
 * its lock). Lets a caller skip reading per-app limits on the common path. */
int bl_quota_ready(bl_quota *q, int64_t app, const char *build);

/* The limits the tracker was made with (the server's options). */
const bl_quota_limits *bl_quota_defaults(const bl_quota *q);

/* The writer parks a batch that was not counted (found on disk at start,
 * or its build lost its files): counted now, whatever the limits. */
void bl_quota_hold(bl_quota *q, int64_t app, const char *build, uint64_t bytes);

/* A counted batch is no longer waiting (processed, failed, duplicate,
 * expired or never stored). */
void bl_quota_release(bl_quota *q, int64_t app, const char *build, uint64_t bytes);

#endif
