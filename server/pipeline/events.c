/*
 * events.c — batch events: parsing, dispatch, block and launch aggregation
 * (see events.h).
 */
#include "pipeline/events.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "agg/blocks.h"
#include "agg/calltree.h"
#include "agg/sketch.h"
#include "agg/urlpattern.h"
#include "common/buf.h"
#include "common/u128map.h"
#include "store/blocks.h"
#include "store/launches.h"
#include "store/network.h"

#define T_MAX (((uint64_t)1 << 40) - 1) /* µs since the origin fit 40 bits */

static const char *const reason_names[BL_EV_REASONS] = {
    "not_json", "no_type", "unknown_type", "bad_field", "thread", "window", "budget",
};

static _Atomic uint64_t g_malformed[BL_EV_REASONS];
static _Atomic uint64_t g_blocks;
static _Atomic uint64_t g_launches;
static _Atomic uint64_t g_network;

const char *bl_events_reason(int reason)
{
    return reason >= 0 && reason < BL_EV_REASONS ? reason_names[reason] : "?";
}

uint64_t bl_events_malformed(int reason)
{
    return reason >= 0 && reason < BL_EV_REASONS ? atomic_load(&g_malformed[reason]) : 0;
}

uint64_t bl_events_blocks(void)
{
    return atomic_load(&g_blocks);
}

uint64_t bl_events_launches(void)
{
    return atomic_load(&g_launches);
}

uint64_t bl_events_network(void)
{
    return atomic_load(&g_network);
}

/* One (hour, host, method, pattern) of a batch's network requests. */
typedef struct net_grp {
    size_t key;            /* offset in bl_events.net_text: host\0method\0pattern\0 */
    size_t key_len;        /* bytes of the three strings with their NULs */
    int64_t hour;
    int64_t count, errors, status[6], max_us, ttfb_max_us;
    int64_t dns_us, dns_n, connect_us, connect_n, tls_us, tls_n, bytes_in, bytes_out;
    int64_t id;            /* stored group id, once written */
} net_grp;

/* One request's durations, for the sketches (sorted by group at the end). */
typedef struct net_val {
    uint32_t grp;
    int64_t total_us, ttfb_us; /* ttfb -1: none */
} net_val;

struct bl_events {
    uint64_t malformed[BL_EV_REASONS]; /* this transaction's */
    uint64_t blocks, launches;
    bl_calltree tree;
    bl_block_tree bt;
    int64_t tree_thread;  /* thread index the tree holds, -1 none */
    bl_sketch sk;
    bl_buf blob;          /* one block's serialised sketch */
    bl_buf stack;         /* one ANR's stack, frames joined by '\n', NUL-terminated */
    int64_t *ids;         /* stored node id per block-tree node */
    size_t cap_ids;
    char *session;        /* NUL-terminated copy of the batch's session_id */
    size_t cap_session;
    bl_buf vblobs;        /* one launch's serialised sketches, back to back */
    uint32_t *by_mid;     /* a launch tree's node indexes sorted by methodId */
    size_t cap_by_mid;
    uint64_t network;     /* requests stored in this transaction */
    /* the network requests of the batch being processed */
    bl_urlpat_set *pats;  /* the app's user patterns (loaded once per batch) */
    int pats_loaded, pats_oom;
    bl_buf pattern;       /* one request's pattern */
    bl_buf net_text;      /* group keys */
    net_grp *grps;
    size_t n_grps, cap_grps;
    net_val *vals;
    size_t n_vals, cap_vals;
    bl_u128map grp_ix;    /* (xxh64 of key, seed) -> grps index + 1 */
    bl_u128map callers;   /* (group index, caller methodId) -> requests */
    bl_sketch sk2;
    bl_buf blob2;
};

bl_err bl_events_new(bl_events **out)
{
    bl_events *ev = calloc(1, sizeof *ev);
    if (!ev)
        return BL_ENOMEM;
    bl_calltree_init(&ev->tree);
    bl_block_tree_init(&ev->bt);
    bl_sketch_init(&ev->sk);
    bl_buf_init(&ev->blob, 0);
    bl_buf_init(&ev->stack, 0);
    bl_buf_init(&ev->vblobs, 0);
    bl_buf_init(&ev->pattern, 0);
    bl_buf_init(&ev->net_text, 0);
    bl_buf_init(&ev->blob2, 0);
    bl_u128map_init(&ev->grp_ix);
    bl_u128map_init(&ev->callers);
    bl_sketch_init(&ev->sk2);
    if (bl_urlpat_set_new(&ev->pats)) {
        bl_events_free(ev);
        return BL_ENOMEM;
    }
    *out = ev;
    return BL_OK;
}

void bl_events_free(bl_events *ev)
{
    if (!ev)
        return;
    bl_calltree_cleanup(&ev->tree);
    bl_block_tree_cleanup(&ev->bt);
    bl_sketch_cleanup(&ev->sk);
    bl_buf_cleanup(&ev->blob);
    bl_buf_cleanup(&ev->stack);
    bl_buf_cleanup(&ev->vblobs);
    free(ev->by_mid);
    free(ev->ids);
    free(ev->session);
    bl_urlpat_set_free(ev->pats);
    bl_buf_cleanup(&ev->pattern);
    bl_buf_cleanup(&ev->net_text);
    bl_buf_cleanup(&ev->blob2);
    bl_u128map_cleanup(&ev->grp_ix);
    bl_u128map_cleanup(&ev->callers);
    bl_sketch_cleanup(&ev->sk2);
    free(ev->grps);
    free(ev->vals);
    free(ev);
}

void bl_events_flush(bl_events *ev)
{
    for (int i = 0; i < BL_EV_REASONS; i++)
        atomic_fetch_add(&g_malformed[i], ev->malformed[i]);
    atomic_fetch_add(&g_blocks, ev->blocks);
    atomic_fetch_add(&g_launches, ev->launches);
    atomic_fetch_add(&g_network, ev->network);
    bl_events_clear(ev);
}

void bl_events_clear(bl_events *ev)
{
    memset(ev->malformed, 0, sizeof ev->malformed);
    ev->blocks = 0;
    ev->launches = 0;
    ev->network = 0;
}

/* ---- field checks: 0 when the field is fine ---------------------------- */

static int get_uint(json_t *o, const char *k, uint64_t max, uint64_t *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int get_str(json_t *o, const char *k, size_t min, size_t max, const char **out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v) || json_string_length(v) < min || json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v)) /* a NUL inside (\u0000) */
        return -1;
    *out = json_string_value(v);
    return 0;
}

/* A parsed block event. */
typedef struct block_ev {
    uint64_t thread, begin, end;
    const char *target, *device;
    int anr;
    json_t *stack;        /* the event's "stack" array (checked), NULL: none */
} block_ev;

/* Checks a block event's fields: -1 with *reason set when one is wrong. */
static int parse_block(json_t *o, const bl_batch *bt, block_ev *b, int *reason)
{
    *reason = BL_EV_BAD_FIELD;
    const char *kind;
    json_t *anr = json_object_get(o, "anr"), *stack = json_object_get(o, "stack");
    if (get_uint(o, "thread", INT64_MAX, &b->thread) ||
        get_uint(o, "begin_us", T_MAX, &b->begin) ||
        get_uint(o, "end_us", T_MAX, &b->end) ||
        get_str(o, "target", 0, BL_EVENT_TARGET_MAX, &b->target) ||
        get_str(o, "device", 1, BL_EVENT_DEVICE_MAX, &b->device) ||
        get_str(o, "kind", 0, 16, &kind) || (strcmp(kind, "looper") && strcmp(kind, "awt")) ||
        (anr && !json_is_boolean(anr)))
        return -1;
    if (stack) {
        if (!json_is_array(stack) || json_array_size(stack) > BL_EVENT_STACK_MAX)
            return -1;
        for (size_t i = 0; i < json_array_size(stack); i++) {
            json_t *f = json_array_get(stack, i);
            /* one frame, one line: no NUL or line break (the stack is kept as lines) */
            if (!json_is_string(f) || json_string_length(f) > BL_EVENT_FRAME_MAX ||
                strcspn(json_string_value(f), "\n\r") != json_string_length(f))
                return -1;
        }
    }
    b->anr = anr && json_is_true(anr);
    b->stack = stack;
    if (b->thread >= bt->n_threads) {
        *reason = BL_EV_THREAD;
        return -1;
    }
    if (b->begin > b->end) {
        *reason = BL_EV_WINDOW;
        return -1;
    }
    return 0;
}

/* Stores one block whose tree is in ev->bt. */
static bl_err store_block(bl_events *ev, bl_db *db, int64_t build_id, int64_t origin,
                          const block_ev *b)
{
    char path[BL_BLOCK_PATH_MAX * 12 + 1];
    size_t pl = 0;
    path[0] = '\0';
    for (uint32_t i = 0; i < ev->bt.path_len; i++)
        pl += (size_t)snprintf(path + pl, sizeof path - pl, i ? ",%u" : "%u",
                               ev->bt.nodes[ev->bt.path[i]].method_id);
    bl_sketch_reset(&ev->sk);
    bl_buf_reset(&ev->blob);
    if (bl_sketch_add(&ev->sk, b->end - b->begin, 1) || bl_sketch_serialize(&ev->sk, &ev->blob))
        return BL_ENOMEM;
    /* an ANR's stack (a quick block's is not kept: the runtime sends one only with "anr") */
    const char *stack = NULL;
    if (b->anr && b->stack && json_array_size(b->stack)) {
        bl_buf_reset(&ev->stack);
        for (size_t i = 0; i < json_array_size(b->stack); i++) {
            json_t *f = json_array_get(b->stack, i);
            if ((i && bl_buf_putc(&ev->stack, '\n')) ||
                bl_buf_append(&ev->stack, json_string_value(f), json_string_length(f)))
                return BL_ENOMEM;
        }
        if (bl_buf_putc(&ev->stack, 0))
            return BL_ENOMEM;
        stack = ev->stack.data;
    }
    bl_blk_block row = {
        .build_id = build_id, .path = path, .at_us = origin + (int64_t)b->begin,
        .dur_us = (int64_t)(b->end - b->begin), .anr = b->anr, .target = b->target,
        .device = b->device, .session = ev->session, .sketch = ev->blob.data,
        .sketch_len = ev->blob.len, .anr_stack = stack,
    };
    int64_t grp;
    if (bl_blk_add(db, &row, &grp))
        return BL_EIO;
    uint32_t n = ev->bt.n_nodes;
    if (n > ev->cap_ids) {
        int64_t *ids = realloc(ev->ids, (size_t)n * sizeof *ids);
        if (!ids)
            return BL_ENOMEM;
        ev->ids = ids;
        ev->cap_ids = n;
    }
    for (uint32_t j = 0; j < n; j++) {
        const bl_block_node *x = &ev->bt.nodes[j];
        int64_t parent = x->parent == BL_BLOCK_NONE ? 0 : ev->ids[x->parent];
        if (bl_blk_node_add(db, grp, parent, x->method_id, (int64_t)x->count,
                            (int64_t)x->total, (int64_t)x->self, &ev->ids[j]))
            return BL_EIO;
    }
    ev->blocks++;
    return BL_OK;
}

/* Rebuilds thread `thread` of bt (unless ev->tree holds it already) and
 * takes the window [begin, end] of it into ev->bt, charging the work.
 * BL_OK; BL_EINVAL: skipped (counted as "budget"); BL_ENOMEM. */
static bl_err take_window(bl_events *ev, const bl_batch *bt, uint64_t thread, uint64_t begin,
                          uint64_t end, uint64_t *work)
{
    if ((int64_t)thread != ev->tree_thread) {
        const bl_batch_thread *th = &bt->threads[thread];
        if (*work + th->n_records > BL_EVENTS_WORK_MAX) {
            ev->malformed[BL_EV_BUDGET]++;
            return BL_EINVAL;
        }
        *work += th->n_records;
        bl_segment seg = { th->truncated, th->continues, th->n_carried, th->since_us };
        ev->tree_thread = -1;
        bl_err e = bl_calltree_build_segment(&ev->tree, th->records, th->n_records, &seg);
        if (e == BL_ENOMEM)
            return e;
        if (e) { /* too deep: the POST refuses such batches; never here in practice */
            ev->malformed[BL_EV_BUDGET]++;
            return BL_EINVAL;
        }
        if ((e = bl_block_index(&ev->bt, &ev->tree)))
            return e;
        ev->tree_thread = (int64_t)thread;
    }
    bl_err e = bl_block_window(&ev->bt, begin, end, BL_EVENTS_WORK_MAX - *work);
    if (e == BL_ETOOBIG) {
        ev->malformed[BL_EV_BUDGET]++;
        *work = BL_EVENTS_WORK_MAX;
        return BL_EINVAL;
    }
    if (e == BL_EINVAL) { /* begin > end or not indexed: never, the callers check */
        ev->malformed[BL_EV_WINDOW]++;
        return BL_EINVAL;
    }
    if (e)
        return e;
    *work += ev->bt.n_calls;
    return BL_OK;
}

static bl_err do_block(bl_events *ev, bl_db *db, const bl_batch *bt, int64_t build_id,
                       int64_t origin, json_t *o, uint64_t *work, uint32_t *blocks)
{
    block_ev b;
    int reason;
    if (parse_block(o, bt, &b, &reason)) {
        ev->malformed[reason]++;
        return BL_OK;
    }
    if (*blocks >= BL_EVENTS_BLOCKS_MAX) {
        ev->malformed[BL_EV_BUDGET]++;
        return BL_OK;
    }
    ++*blocks;
    bl_err e = take_window(ev, bt, b.thread, b.begin, b.end, work);
    if (e)
        return e == BL_EINVAL ? BL_OK : e;
    return store_block(ev, db, build_id, origin, &b);
}

/* ---- launch events (issue 15) ------------------------------------------ */

static int get_time(json_t *o, const char *k, int64_t *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < BL_EVENT_TIME_MIN ||
        json_integer_value(v) > BL_EVENT_TIME_MAX)
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* A parsed launch event. */
typedef struct launch_ev {
    uint64_t thread;
    int kind;
    int64_t start, first_frame, fully_drawn; /* fully_drawn: INT64_MIN when absent */
    const char *device, *activity;          /* activity: NULL when absent */
    int has[BL_LCH_PHASES];
    int64_t phase[BL_LCH_PHASES][2];        /* begin, end */
} launch_ev;

/* Checks a launch event's fields: -1 with *reason set when one is wrong
 * (field types and ranges: bad_field; then the thread; then the order of
 * the times: window). */
static int parse_launch(json_t *o, const bl_batch *bt, launch_ev *l, int *reason)
{
    *reason = BL_EV_BAD_FIELD;
    memset(l, 0, sizeof *l);
    const char *kind;
    json_t *phases = json_object_get(o, "phases");
    if (get_uint(o, "thread", INT64_MAX, &l->thread) ||
        get_str(o, "kind", 0, 16, &kind) ||
        get_str(o, "device", 1, BL_EVENT_DEVICE_MAX, &l->device) ||
        get_time(o, "start_us", &l->start) ||
        get_time(o, "first_frame_us", &l->first_frame) || !json_is_object(phases))
        return -1;
    l->kind = -1;
    for (int k = 0; k < BL_LCH_KINDS; k++)
        if (!strcmp(kind, bl_lch_kind_name(k)))
            l->kind = k;
    if (l->kind < 0)
        return -1;
    l->fully_drawn = INT64_MIN;
    if (json_object_get(o, "fully_drawn_us") &&
        (get_time(o, "fully_drawn_us", &l->fully_drawn) || l->fully_drawn < l->start))
        return -1;
    if (json_object_get(o, "activity") &&
        get_str(o, "activity", 0, BL_EVENT_ACTIVITY_MAX, &l->activity))
        return -1;
    for (int i = 0; i < BL_LCH_PHASES; i++) {
        json_t *a = json_object_get(phases, bl_lch_measure_name(i));
        if (!a)
            continue; /* the phase did not run */
        if (!json_is_array(a) || json_array_size(a) != 2)
            return -1;
        for (int j = 0; j < 2; j++) {
            json_t *v = json_array_get(a, (size_t)j);
            if (!json_is_integer(v) || json_integer_value(v) < BL_EVENT_TIME_MIN ||
                json_integer_value(v) > BL_EVENT_TIME_MAX)
                return -1;
            l->phase[i][j] = (int64_t)json_integer_value(v);
        }
        l->has[i] = 1;
    }
    if (l->thread >= bt->n_threads) {
        *reason = BL_EV_THREAD;
        return -1;
    }
    *reason = BL_EV_WINDOW;
    if (l->first_frame < l->start)
        return -1;
    for (int i = 0; i < BL_LCH_PHASES; i++)
        if (l->has[i] && (l->phase[i][0] > l->phase[i][1] || l->phase[i][0] < l->start ||
                          l->phase[i][1] > l->first_frame))
            return -1;
    return 0;
}

static _Thread_local const bl_block_node *sort_nodes; /* qsort has no context argument */

/* node indexes by methodId, then index (a total order) */
static int cmp_node_mid(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint32_t x = sort_nodes[i].method_id, y = sort_nodes[j].method_id;
    if (x != y)
        return x < y ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Stores one launch; its window's tree (when it has one) is in ev->bt. */
static bl_err store_launch(bl_events *ev, bl_db *db, int64_t build_id, int64_t origin,
                           const launch_ev *l, int has_tree)
{
    bl_lch_value v[BL_LCH_MEASURES];
    size_t off[BL_LCH_MEASURES], n = 0;
    bl_buf_reset(&ev->vblobs);
    for (int m = 0; m < BL_LCH_MEASURES; m++) {
        int64_t d;
        if (m < BL_LCH_PHASES && l->has[m])
            d = l->phase[m][1] - l->phase[m][0];
        else if (m == BL_LCH_TTID)
            d = l->first_frame - l->start;
        else if (m == BL_LCH_TTFD && l->fully_drawn != INT64_MIN)
            d = l->fully_drawn - l->start;
        else
            continue;
        off[n] = ev->vblobs.len;
        bl_sketch_reset(&ev->sk);
        if (bl_sketch_add(&ev->sk, (uint64_t)d, 1) || bl_sketch_serialize(&ev->sk, &ev->vblobs))
            return BL_ENOMEM;
        v[n] = (bl_lch_value){ m, d, NULL, ev->vblobs.len - off[n] };
        n++;
    }
    for (size_t i = 0; i < n; i++) /* the buffer may have moved while it grew */
        v[i].sketch = ev->vblobs.data + off[i];
    int64_t at = origin + l->start;
    bl_lch_launch row = { build_id, l->kind, at, l->activity, v, n };
    if (bl_lch_add(db, &row))
        return BL_EIO;
    uint32_t nn = has_tree ? ev->bt.n_nodes : 0;
    if (nn > ev->cap_ids) {
        int64_t *ids = realloc(ev->ids, (size_t)nn * sizeof *ids);
        if (!ids)
            return BL_ENOMEM;
        ev->ids = ids;
        ev->cap_ids = nn;
    }
    if (nn > ev->cap_by_mid) {
        uint32_t *o = realloc(ev->by_mid, (size_t)nn * sizeof *o);
        if (!o)
            return BL_ENOMEM;
        ev->by_mid = o;
        ev->cap_by_mid = nn;
    }
    /* the merged tree, parents first (the block tree's order) */
    for (uint32_t j = 0; j < nn; j++) {
        const bl_block_node *x = &ev->bt.nodes[j];
        int64_t parent = x->parent == BL_BLOCK_NONE ? 0 : ev->ids[x->parent];
        if (bl_lch_node_add(db, build_id, l->kind, parent, x->method_id, (int64_t)x->count,
                            (int64_t)x->total, (int64_t)x->self, &ev->ids[j]))
            return BL_EIO;
        ev->by_mid[j] = j;
    }
    /* per method: the nodes of one methodId summed (every call once) */
    sort_nodes = ev->bt.nodes;
    if (nn > 1)
        qsort(ev->by_mid, nn, sizeof *ev->by_mid, cmp_node_mid);
    for (uint32_t j = 0; j < nn;) {
        uint32_t mid = ev->bt.nodes[ev->by_mid[j]].method_id;
        uint64_t c = 0, t = 0, sf = 0;
        for (; j < nn && ev->bt.nodes[ev->by_mid[j]].method_id == mid; j++) {
            const bl_block_node *x = &ev->bt.nodes[ev->by_mid[j]];
            c += x->count;
            t += x->total;
            sf += x->self;
        }
        if (bl_lch_method_add(db, build_id, l->kind, at, mid, (int64_t)c, (int64_t)t,
                              (int64_t)sf))
            return BL_EIO;
    }
    ev->launches++;
    return BL_OK;
}

static bl_err do_launch(bl_events *ev, bl_db *db, const bl_batch *bt, int64_t build_id,
                        int64_t origin, json_t *o, uint64_t *work, uint32_t *launches)
{
    launch_ev l;
    int reason;
    if (parse_launch(o, bt, &l, &reason)) {
        ev->malformed[reason]++;
        return BL_OK;
    }
    if (*launches >= BL_EVENTS_LAUNCHES_MAX) {
        ev->malformed[BL_EV_BUDGET]++;
        return BL_OK;
    }
    ++*launches;
    /* the window: from the start (the records' clock begins at 0; a cold
     * start's process start may precede it) to the first frame */
    int has_tree = 0;
    if (l.first_frame >= 0) {
        uint64_t begin = l.start < 0 ? 0 : (uint64_t)l.start;
        bl_err e = take_window(ev, bt, l.thread, begin, (uint64_t)l.first_frame, work);
        if (e)
            return e == BL_EINVAL ? BL_OK : e;
        has_tree = 1;
    }
    return store_launch(ev, db, build_id, origin, &l, has_tree);
}

/* ---- network events (issue 16) ---------------------------------------- */

#define HOUR_US 3600000000ll
#define BYTES_MAX (((uint64_t)1 << 48) - 1)

/* A parsed network event (strings borrowed from the JSON object). */
typedef struct net_ev {
    uint64_t begin, end, port, bytes_in, bytes_out, total;
    int64_t status;          /* -1: none */
    int64_t dns, connect, tls, ttfb; /* -1: absent */
    int64_t caller;          /* -1: none */
    int error;               /* "error" is a string */
    const char *method, *scheme, *path;
    size_t path_len;
    char host[256];          /* lower-cased copy */
    const char *keys[BL_URLPAT_KEYS_MAX];
    size_t key_lens[BL_URLPAT_KEYS_MAX];
    size_t n_keys;
} net_ev;

/* An optional integer in [0, max]: absent or null -> *out = -1. */
static int opt_uint(json_t *o, const char *k, uint64_t max, int64_t *out)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        *out = -1;
        return 0;
    }
    uint64_t u;
    if (get_uint(o, k, max, &u))
        return -1;
    *out = (int64_t)u;
    return 0;
}

/* An optional string of at most max bytes (absent or null fine). */
static int opt_str(json_t *o, const char *k, size_t max, const char **out)
{
    json_t *v = json_object_get(o, k);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    return get_str(o, k, 0, max, out);
}

/* Checks a network event (schema/batch-format.md, docs/contract): -1 with
 * *reason set when a field is wrong. */
static int parse_network(json_t *o, net_ev *n, int *reason)
{
    *reason = BL_EV_BAD_FIELD;
    const char *device, *thread, *host, *protocol, *error;
    uint64_t status;
    json_t *reused = json_object_get(o, "reused"), *keys = json_object_get(o, "query_keys");
    json_t *st = json_object_get(o, "status");
    if (get_str(o, "device", 1, BL_EVENT_DEVICE_MAX, &device) ||
        opt_str(o, "thread_name", 256, &thread) ||
        get_uint(o, "begin_us", T_MAX, &n->begin) || get_uint(o, "end_us", T_MAX, &n->end) ||
        get_str(o, "method", 1, 16, &n->method) || get_str(o, "scheme", 4, 5, &n->scheme) ||
        (strcmp(n->scheme, "http") && strcmp(n->scheme, "https")) ||
        get_str(o, "host", 1, 255, &host) || get_uint(o, "port", 65535, &n->port) ||
        n->port < 1 || get_str(o, "path", 1, BL_URLPAT_PATH_MAX, &n->path) ||
        opt_str(o, "protocol", 16, &protocol) || opt_str(o, "error", 256, &error) ||
        get_uint(o, "bytes_out", BYTES_MAX, &n->bytes_out) ||
        get_uint(o, "bytes_in", BYTES_MAX, &n->bytes_in) ||
        get_uint(o, "total_us", T_MAX, &n->total) || opt_uint(o, "dns_us", T_MAX, &n->dns) ||
        opt_uint(o, "connect_us", T_MAX, &n->connect) || opt_uint(o, "tls_us", T_MAX, &n->tls) ||
        opt_uint(o, "ttfb_us", T_MAX, &n->ttfb) || opt_uint(o, "caller", UINT32_MAX, &n->caller))
        return -1;
    int64_t ignored;
    if (opt_uint(o, "request_us", T_MAX, &ignored) || opt_uint(o, "body_us", T_MAX, &ignored) ||
        (reused && !json_is_boolean(reused) && !json_is_null(reused)))
        return -1;
    n->status = -1;
    if (st && !json_is_null(st)) {
        if (get_uint(o, "status", 599, &status) || status < 100)
            return -1;
        n->status = (int64_t)status;
    }
    n->error = error != NULL;
    for (const char *m = n->method; *m; m++)
        if (*m < 'A' || *m > 'Z')
            return -1;
    /* the path only: a query or fragment is refused, never stored */
    n->path_len = strlen(n->path);
    if (n->path[0] != '/' || strcspn(n->path, "?#") != n->path_len)
        return -1;
    for (size_t i = 0; i < n->path_len; i++)
        if ((unsigned char)n->path[i] < 0x20 || n->path[i] == 0x7f)
            return -1;
    /* the host: ASCII upper case folded (the contract sends it lower-cased) */
    size_t hl = strlen(host);
    for (size_t i = 0; i < hl; i++) {
        unsigned char c = (unsigned char)host[i];
        if (c <= ' ' || c == 0x7f || c == '/' || c == '?' || c == '#' || c == '@' || c == '\\')
            return -1;
        n->host[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    n->host[hl] = '\0';
    n->n_keys = 0;
    if (keys && !json_is_null(keys)) {
        if (!json_is_array(keys) || json_array_size(keys) > BL_URLPAT_KEYS_MAX)
            return -1;
        for (size_t i = 0; i < json_array_size(keys); i++) {
            json_t *k = json_array_get(keys, i);
            const char *ks = json_string_value(k);
            size_t kl = json_string_length(k);
            /* a name only: no value, separator or control character */
            if (!json_is_string(k) || kl < 1 || kl > BL_URLPAT_KEY_MAX || strlen(ks) != kl ||
                strcspn(ks, "=&?#/ \t\r\n") != kl)
                return -1;
            n->keys[i] = ks;
            n->key_lens[i] = kl;
        }
        n->n_keys = json_array_size(keys);
    }
    if (n->begin > n->end) {
        *reason = BL_EV_WINDOW;
        return -1;
    }
    return 0;
}

static int add_pattern(const char *p, void *ctx)
{
    bl_events *ev = ctx;
    char err[200];
    /* checked when set: a pattern refused now (never in practice) is skipped */
    if (bl_urlpat_set_add(ev->pats, p, strlen(p), err, sizeof err) == BL_ENOMEM) {
        ev->pats_oom = 1;
        return -1;
    }
    return 0;
}

/* The batch's group of (hour, key[0..kl)): its index, created when new. */
static bl_err net_group(bl_events *ev, int64_t hour, const char *key, size_t kl, uint32_t *out)
{
    uint64_t h = XXH3_64bits_withSeed(key, kl, (uint64_t)hour);
    uint64_t *v = NULL;
    /* a second hash with another seed on the (never seen) collision of a
     * different key; past 8 tries a group of its own, not in the map */
    for (uint64_t seed = 0; seed < 8; seed++) {
        int ins;
        if (bl_u128map_put(&ev->grp_ix, h, seed, 0, &v, &ins))
            return BL_ENOMEM;
        if (!ins) {
            const net_grp *g = &ev->grps[*v - 1];
            if (g->hour == hour && g->key_len == kl && !memcmp(ev->net_text.data + g->key, key, kl)) {
                *out = (uint32_t)(*v - 1);
                return BL_OK;
            }
            v = NULL;
            continue;
        }
        break;
    }
    if (ev->n_grps == ev->cap_grps) {
        size_t nc = ev->cap_grps ? ev->cap_grps * 2 : 64;
        net_grp *ng = realloc(ev->grps, nc * sizeof *ng);
        if (!ng)
            return BL_ENOMEM;
        ev->grps = ng;
        ev->cap_grps = nc;
    }
    net_grp *g = &ev->grps[ev->n_grps];
    memset(g, 0, sizeof *g);
    g->key = ev->net_text.len;
    g->key_len = kl;
    g->hour = hour;
    if (bl_buf_append(&ev->net_text, key, kl))
        return BL_ENOMEM;
    if (v)
        *v = ev->n_grps + 1;
    *out = (uint32_t)ev->n_grps++;
    return BL_OK;
}

static bl_err do_network(bl_events *ev, bl_db *db, int64_t build_id, int64_t origin, json_t *o)
{
    net_ev n;
    int reason;
    if (parse_network(o, &n, &reason)) {
        ev->malformed[reason]++;
        return BL_OK;
    }
    if (ev->n_vals >= BL_EVENTS_NETWORK_MAX) {
        ev->malformed[BL_EV_BUDGET]++;
        return BL_OK;
    }
    if (!ev->pats_loaded) { /* the app's patterns as the database holds them now */
        bl_urlpat_set_clear(ev->pats);
        ev->pats_oom = 0;
        bl_err e = bl_net_patterns_of_build(db, build_id, add_pattern, ev);
        if (e || ev->pats_oom)
            return e ? e : BL_ENOMEM;
        ev->pats_loaded = 1;
    }
    bl_urlpat_req q = { n.scheme, n.host, (unsigned)n.port, n.path, n.path_len,
                        n.keys, n.key_lens, n.n_keys };
    bl_err e = bl_urlpat_apply(ev->pats, &q, &ev->pattern, NULL);
    if (e == BL_EINVAL) { /* over a cap parse_network checked: not expected */
        ev->malformed[BL_EV_BAD_FIELD]++;
        return BL_OK;
    }
    if (e)
        return e;
    /* the key: host, method and pattern, each with its NUL */
    size_t hl = strlen(n.host) + 1, ml = strlen(n.method) + 1, pl = ev->pattern.len + 1;
    char key[256 + 17 + BL_URLPAT_OUT_MAX + 1];
    memcpy(key, n.host, hl);
    memcpy(key + hl, n.method, ml);
    memcpy(key + hl + ml, ev->pattern.data, pl);
    int64_t at = origin + (int64_t)n.begin;
    int64_t hour = at >= 0 ? at / HOUR_US : -((-at + HOUR_US - 1) / HOUR_US);
    uint32_t gi;
    if ((e = net_group(ev, hour, key, hl + ml + pl, &gi)))
        return e;
    if (ev->n_vals == ev->cap_vals) {
        size_t nc = ev->cap_vals ? ev->cap_vals * 2 : 256;
        net_val *nv = realloc(ev->vals, nc * sizeof *nv);
        if (!nv)
            return BL_ENOMEM;
        ev->vals = nv;
        ev->cap_vals = nc;
    }
    if (n.caller >= 0) {
        uint64_t *cv;
        int ins;
        if (bl_u128map_put(&ev->callers, gi, (uint64_t)n.caller, 0, &cv, &ins))
            return BL_ENOMEM;
        ++*cv;
    }
    ev->vals[ev->n_vals++] = (net_val){ gi, (int64_t)n.total, n.ttfb };
    net_grp *g = &ev->grps[gi];
    g->count++;
    g->errors += n.status >= 400 || n.error;
    g->status[n.status < 0 ? 5 : n.status / 100 - 1]++;
    if ((int64_t)n.total > g->max_us)
        g->max_us = (int64_t)n.total;
    if (n.ttfb > g->ttfb_max_us)
        g->ttfb_max_us = n.ttfb;
    if (n.dns >= 0) {
        g->dns_us += n.dns;
        g->dns_n++;
    }
    if (n.connect >= 0) {
        g->connect_us += n.connect;
        g->connect_n++;
    }
    if (n.tls >= 0) {
        g->tls_us += n.tls;
        g->tls_n++;
    }
    g->bytes_in += (int64_t)n.bytes_in;
    g->bytes_out += (int64_t)n.bytes_out;
    return BL_OK;
}

static int cmp_val(const void *a, const void *b)
{
    const net_val *x = a, *y = b;
    return (x->grp > y->grp) - (x->grp < y->grp);
}

/* Writes the batch's network groups and callers. */
static bl_err net_flush(bl_events *ev, bl_db *db, int64_t build_id)
{
    if (!ev->n_vals)
        return BL_OK;
    qsort(ev->vals, ev->n_vals, sizeof *ev->vals, cmp_val);
    for (size_t i = 0; i < ev->n_vals;) {
        uint32_t gi = ev->vals[i].grp;
        bl_sketch_reset(&ev->sk);
        bl_sketch_reset(&ev->sk2);
        for (; i < ev->n_vals && ev->vals[i].grp == gi; i++) {
            if (bl_sketch_add(&ev->sk, (uint64_t)ev->vals[i].total_us, 1) ||
                (ev->vals[i].ttfb_us >= 0 && bl_sketch_add(&ev->sk2, (uint64_t)ev->vals[i].ttfb_us, 1)))
                return BL_ENOMEM;
        }
        bl_buf_reset(&ev->blob);
        bl_buf_reset(&ev->blob2);
        if (bl_sketch_serialize(&ev->sk, &ev->blob) || bl_sketch_serialize(&ev->sk2, &ev->blob2))
            return BL_ENOMEM;
        net_grp *g = &ev->grps[gi];
        const char *host = ev->net_text.data + g->key;
        const char *method = host + strlen(host) + 1;
        const char *pattern = method + strlen(method) + 1;
        bl_net_add_row row = {
            .build_id = build_id, .host = host, .http_method = method, .pattern = pattern,
            .hour = g->hour, .count = g->count, .errors = g->errors,
            .status = { g->status[0], g->status[1], g->status[2], g->status[3], g->status[4],
                        g->status[5] },
            .max_us = g->max_us, .ttfb_max_us = g->ttfb_max_us,
            .sketch = ev->blob.data, .sketch_len = ev->blob.len,
            .ttfb_sketch = ev->blob2.data, .ttfb_sketch_len = ev->blob2.len,
            .dns_us = g->dns_us, .dns_n = g->dns_n, .connect_us = g->connect_us,
            .connect_n = g->connect_n, .tls_us = g->tls_us, .tls_n = g->tls_n,
            .bytes_in = g->bytes_in, .bytes_out = g->bytes_out,
        };
        if (bl_net_add(db, &row, &g->id))
            return BL_EIO;
        ev->network += (uint64_t)g->count;
    }
    for (size_t i = 0; i < ev->callers.cap; i++) {
        const bl_u128map_slot *sl = &ev->callers.slots[i];
        if (!sl->used)
            continue;
        const net_grp *g = &ev->grps[sl->a];
        if (bl_net_caller_add(db, g->id, g->hour, (int64_t)sl->b, (int64_t)sl->v))
            return BL_EIO;
    }
    return BL_OK;
}

/* Forgets the last batch's network requests. */
static void net_reset(bl_events *ev)
{
    ev->pats_loaded = 0;
    ev->n_grps = ev->n_vals = 0;
    bl_buf_reset(&ev->net_text);
    bl_u128map_clear(&ev->grp_ix);
    bl_u128map_clear(&ev->callers);
}

bl_err bl_events_batch(bl_events *ev, bl_db *db, const bl_batch *bt, int64_t build_id,
                       int64_t origin_wall_us)
{
    if (!bt->events.n)
        return BL_OK;
    if (bt->session_id.n + 1 > ev->cap_session) {
        char *s = realloc(ev->session, bt->session_id.n + 1);
        if (!s)
            return BL_ENOMEM;
        ev->session = s;
        ev->cap_session = bt->session_id.n + 1;
    }
    memcpy(ev->session, bt->session_id.p, bt->session_id.n);
    ev->session[bt->session_id.n] = '\0';
    ev->tree_thread = -1;
    net_reset(ev);
    uint64_t work = 0;
    uint32_t blocks = 0, launches = 0;
    const char *p = bt->events.p, *end = p + bt->events.n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        json_error_t jerr;
        json_t *o = json_loadb(p, (size_t)(le - p), JSON_REJECT_DUPLICATES, &jerr);
        p = nl ? nl + 1 : end;
        if (!json_is_object(o)) {
            /* the error's code, never its text: a bad line may quote "memory" */
            if (!o && json_error_code(&jerr) == json_error_out_of_memory)
                return BL_ENOMEM;
            json_decref(o);
            ev->malformed[BL_EV_NOT_JSON]++;
            continue;
        }
        json_t *type = json_object_get(o, "type");
        bl_err e = BL_OK;
        if (!json_is_string(type))
            ev->malformed[BL_EV_NO_TYPE]++;
        else if (!strcmp(json_string_value(type), "block"))
            e = do_block(ev, db, bt, build_id, origin_wall_us, o, &work, &blocks);
        else if (!strcmp(json_string_value(type), "launch"))
            e = do_launch(ev, db, bt, build_id, origin_wall_us, o, &work, &launches);
        else if (!strcmp(json_string_value(type), "network"))
            e = do_network(ev, db, build_id, origin_wall_us, o);
        else
            ev->malformed[BL_EV_UNKNOWN_TYPE]++;
        json_decref(o);
        if (e)
            return e;
    }
    return net_flush(ev, db, build_id);
}
