/*
 * tree_keep.c — the last call-tree answers kept while nothing is committed
 * (contract in tree_keep.h).
 */
#include "http/tree_keep.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

#define KEEP_ENTRIES 8
#define KEEP_ANSWER_MAX (8u << 20)
#define KEEP_TOTAL_MAX (32u << 20)

typedef struct kept {
    int64_t app_id, build_id, max_depth, limit;
    int main_only, fmt; /* fmt: TREE_* as parsed (TREE_COLUMNS_BINARY too) */
    uint64_t gen, used;
    char *data; /* malloc'd answer bytes; NULL: a free slot */
    size_t len;
} kept;

static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static kept keep[KEEP_ENTRIES];
static size_t keep_bytes;
static uint64_t keep_tick;

static int kept_is(const kept *k, const req *r, int64_t build_id, int main_only,
                   int64_t max_depth, int64_t limit, int fmt)
{
    return k->data && k->app_id == r->app_id && k->build_id == build_id &&
           k->main_only == main_only && k->max_depth == max_depth && k->limit == limit &&
           k->fmt == fmt;
}

static void kept_drop(kept *k)
{
    keep_bytes -= k->len;
    free(k->data);
    memset(k, 0, sizeof *k);
}

int bl_tree_keep_get(req *r, int64_t build_id, int main_only, int64_t max_depth,
                     int64_t limit, int fmt, uint64_t gen, bl_buf *b, bl_err *err)
{
    int found = 0;
    *err = BL_OK;
    if (!bl_db_generation_is_complete())
        return 0; /* PostgreSQL: other nodes commit unseen; nothing is kept */
    pthread_mutex_lock(&keep_mu);
    uint64_t now = bl_db_write_generation(); /* >= gen */
    for (int i = 0; i < KEEP_ENTRIES; i++) {
        kept *k = &keep[i];
        if (k->data && k->gen != now) {
            kept_drop(k); /* stale: something was committed since it was made */
            continue;
        }
        if (!found && k->gen == gen && kept_is(k, r, build_id, main_only, max_depth, limit, fmt)) {
            k->used = ++keep_tick;
            *err = bl_req_append(r, b, k->data, k->len);
            found = *err ? -1 : 1;
        }
    }
    pthread_mutex_unlock(&keep_mu);
    return found;
}

void bl_tree_keep_put(const req *r, int64_t build_id, int main_only, int64_t max_depth,
                     int64_t limit, int fmt, uint64_t gen, const char *data, size_t len)
{
    if (len == 0 || len > KEEP_ANSWER_MAX || gen != bl_db_write_generation() ||
        !bl_db_generation_is_complete())
        return; /* too big, stale already, or PostgreSQL (other nodes commit unseen) */
    char *copy = malloc(len);
    if (!copy)
        return;
    memcpy(copy, data, len);
    pthread_mutex_lock(&keep_mu);
    kept *slot = NULL;
    for (int i = 0; i < KEEP_ENTRIES; i++) {
        kept *k = &keep[i];
        if (k->data && (k->gen != gen || kept_is(k, r, build_id, main_only, max_depth, limit, fmt)))
            kept_drop(k); /* stale, or the same answer kept by another request */
    }
    for (;;) { /* a free slot within the total, dropping the least recently used */
        kept *lru = NULL;
        slot = NULL;
        for (int i = 0; i < KEEP_ENTRIES; i++) {
            if (!keep[i].data && !slot)
                slot = &keep[i];
            else if (keep[i].data && (!lru || keep[i].used < lru->used))
                lru = &keep[i];
        }
        if (slot && keep_bytes + len <= KEEP_TOTAL_MAX)
            break;
        if (!lru) {
            slot = NULL;
            break;
        }
        kept_drop(lru);
    }
    if (slot) {
        *slot = (kept){ r->app_id, build_id, max_depth, limit, main_only, fmt, gen, ++keep_tick,
                        copy, len };
        keep_bytes += len;
        copy = NULL;
    }
    pthread_mutex_unlock(&keep_mu);
    free(copy);
}
