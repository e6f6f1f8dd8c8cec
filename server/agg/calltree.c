/*
 * calltree.c — rebuild one thread's calls from its enter/exit records (see
 * calltree.h for the rules; batch.h for the 64-bit record layout).
 *
 * Two sweeps, both linear, no recursion, no per-record allocation:
 *
 *   1. Forward over the records. Enters push a frame; exits pop one and
 *      append the finished call to calls[] (so calls[] is in exit order:
 *      the postorder of the tree). A call's self time is known when it
 *      closes: each frame accumulates the inclusive time of its direct
 *      children as they close (the parent is on the stack then), and the
 *      virtual "root frame" does the same for top-level calls (root_sum).
 *      The depth written here is the stack depth, not yet the final one.
 *   2. Backward over calls[] (reverse postorder: a parent comes before all
 *      its descendants). It turns stack depths into final depths (below)
 *      and fills `parent`: the parent of a call at depth d is the nearest
 *      call of depth d-1 already seen (kept in last[d], where last[0] is
 *      BL_CALL_ROOT for depth -1). A parent's index
 *      is only known at its exit, after its children were written, so every
 *      child has to be touched a second time somewhere; one sequential sweep
 *      is the cheapest place.
 *
 * Synthesized enters (an exit on an empty stack). The new call X starts at
 * the segment start, ends at the exit, and adopts every top-level call
 * completed so far — which, the stack being empty, is every call so far. So
 * every call already in calls[] gets one level deeper, and no call created
 * later does. Hence the exact final depth of a call is
 *
 *     depth = stack depth at its enter + number of synthesized calls
 *             that come after it in calls[]
 *
 * (a synthesized call's own stack depth is 0). Sweep 2 counts synthesized
 * calls as it goes backward, so depths are exact at O(1) per call and
 * nothing is re-walked at adoption time. X's self time is its inclusive
 * time minus root_sum (the inclusive times of the adopted top-level calls,
 * which are disjoint and inside [segment start, exit]); then root_sum
 * becomes X's inclusive time.
 *
 * Storage. All owned by the bl_calltree, grown by doubling, never shrunk.
 * With cap = cap_calls and top = cap - 2:
 *   calls[0, n_calls)            finished calls, exit order.
 *   calls[top - sd, top)         the open frames, growing downward: frame d
 *                                (0 = outermost) is calls[top - 1 - d], a
 *                                bl_call used as {method_id, start_us,
 *                                self_us = children's inclusive sum so far,
 *                                parent = link for the method index}.
 *   calls[top]                   the root frame, "frame -1": method_id
 *                                NO_METHOD (matches no exit), self_us =
 *                                root_sum.
 *   calls[top + 1]               a dummy, the "parent" of the root frame.
 *   stack[0, max depth + 2)      sweep 2's last[] (one index per depth).
 *   roots[0, n_roots)            the method index, below (the field name is
 *                                the header's; the array holds no roots).
 * At least 2 slots between the finished calls and the frames are kept free
 * for the common step, which writes a finished call at calls[n_calls] and a
 * new frame at calls[top - 1 - sd] for every record and then keeps the one
 * the record asks for (no branch on enter/exit, which no predictor can
 * guess). n_calls + sd never exceeds the records read, so growth is rare.
 *
 * Unmatched exits. An exit that does not match the top frame is looked up
 * in the stack. On a shallow stack (≤ SCAN_MAX frames) a linear scan is
 * cheap. On a deep one a scan per bad record would make damaged input cost
 * O(n × depth), so the lookup goes through an exact index instead:
 * method id → topmost open frame with that method (depth + 1, 0 = none),
 * each indexed frame linking to the next lower frame of the same method in
 * its `parent` slot. The index is built lazily: it covers frames [0, w);
 * a lookup first adds frames [w, sd) (each push is indexed at most once),
 * and popping an indexed frame restores its method's previous entry. Well-
 * formed input never touches it. It is a two-level radix table over the
 * 23-bit method id, all in roots[] (offsets, not pointers, so it can be
 * realloc'd): roots[0, IDX_TOP) maps id >> IDX_LEAF_BITS to a leaf offset
 * (0 = no leaf), leaves are IDX_LEAF words. No hashing, so no input can make
 * it slow; at most 2^23 words (32 MiB) even for adversarial input.
 *
 * Limits. The open stack holds at most BL_CALLTREE_MAX_DEPTH frames, and a
 * final depth must stay below BL_CALLTREE_MAX_DEPTH (lost frames count as
 * stack too): otherwise BL_ETOOBIG. So every depth fits consumers' fixed
 * path arrays of BL_CALLTREE_MAX_DEPTH entries.
 *
 * Malformed records are counted once each, even when a record breaks two
 * rules (a timestamp going back on an exit that matches nothing). On any
 * error the tree holds no calls (n_calls = 0, malformed = 0) and stays
 * usable; its storage is kept.
 */
#include "agg/calltree.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/u64map.h"
#include "ingest/batch.h"

#define SCAN_MAX 32              /* deeper stacks use the method index */
#define IDX_LEAF_BITS 9
#define IDX_LEAF (1u << IDX_LEAF_BITS)
#define IDX_TOP (1u << (23 - IDX_LEAF_BITS))
#define NO_FRAME UINT32_MAX
#define NO_METHOD UINT32_MAX     /* above BL_REC_ID_MAX: matches no exit */
#define SLACK 2                  /* free slots the common step needs */

/* Working state of one build (pass 1). `calls` and `cap` mirror t's. */
typedef struct build {
    bl_calltree *t;
    bl_call *calls;
    uint32_t cap;       /* t->cap_calls */
    uint32_t top;       /* cap - 2: the root frame's slot */
    uint32_t n;         /* finished calls */
    uint32_t sd;        /* open frames */
    uint32_t w;         /* frames [0, w) are in the method index */
    uint32_t max_sd;    /* deepest the stack got */
    uint32_t synths;    /* synthesized calls */
    int truncated;
    uint32_t open_flag; /* flag of calls still open at the end */
    uint64_t t_first;   /* segment start */
    uint64_t malformed;
} build;

void bl_calltree_init(bl_calltree *t)
{
    memset(t, 0, sizeof *t);
}

void bl_calltree_cleanup(bl_calltree *t)
{
    free(t->calls);
    free(t->stack);
    free(t->roots);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------------ */
/* Storage                                                                   */

/* Makes room for `room` more entries between the finished calls and the
 * frames, keeping the frames and the two sentinels at the top. */
static bl_err reserve_calls(build *b, uint64_t room)
{
    uint64_t need = (uint64_t)b->n + b->sd + 2 + room;
    if (need <= b->cap)
        return BL_OK;
    uint64_t nc = b->cap ? (uint64_t)b->cap * 2 : 64;
    if (nc < need)
        nc = need;
    if (nc > UINT32_MAX)
        nc = UINT32_MAX;
    if (nc < need || nc > SIZE_MAX / sizeof(bl_call))
        return BL_ENOMEM;
    bl_call *p = realloc(b->calls, (size_t)nc * sizeof *p);
    if (!p)
        return BL_ENOMEM;
    if (b->cap)   /* frames and sentinels move to the new top */
        memmove(p + nc - 2 - b->sd, p + b->cap - 2 - b->sd, ((size_t)b->sd + 2) * sizeof *p);
    b->calls = b->t->calls = p;
    b->cap = b->t->cap_calls = (uint32_t)nc;
    b->top = b->cap - 2;
    return BL_OK;
}

/* Grows a u32 scratch array to hold at least `need` words. */
static bl_err reserve_u32(uint32_t **a, uint32_t *cap, uint64_t need)
{
    if (need <= *cap)
        return BL_OK;
    uint64_t nc = *cap ? (uint64_t)*cap * 2 : 64;
    if (nc < need)
        nc = need;
    if (nc > UINT32_MAX || nc > SIZE_MAX / sizeof(uint32_t))
        return BL_ENOMEM;
    uint32_t *p = realloc(*a, (size_t)nc * sizeof *p);
    if (!p)
        return BL_ENOMEM;
    *a = p;
    *cap = (uint32_t)nc;
    return BL_OK;
}

/* Frame d; d == UINT32_MAX (-1) is the root frame. */
static inline bl_call *frame(const build *b, uint32_t d)
{
    return &b->calls[b->top - 1 - d];
}

/* ------------------------------------------------------------------------ */
/* Method index (deep stacks with unmatched exits only)                      */

/* The index word for method m, or NULL when its leaf does not exist. */
static inline uint32_t *idx_word(const bl_calltree *t, uint32_t m)
{
    uint32_t leaf = t->roots[m >> IDX_LEAF_BITS];
    return leaf ? &t->roots[leaf + (m & (IDX_LEAF - 1))] : NULL;
}

/* Adds frames [w, sd) to the index (creating it on first use in a build). */
static bl_err idx_extend(build *b)
{
    bl_calltree *t = b->t;
    bl_err err;
    if (t->n_roots == 0) {
        if ((err = reserve_u32(&t->roots, &t->cap_roots, IDX_TOP)))
            return err;
        memset(t->roots, 0, IDX_TOP * sizeof *t->roots);
        t->n_roots = IDX_TOP;
    }
    for (; b->w < b->sd; b->w++) {
        bl_call *f = frame(b, b->w);
        uint32_t *slot = idx_word(t, f->method_id);
        if (!slot) {
            if ((err = reserve_u32(&t->roots, &t->cap_roots, (uint64_t)t->n_roots + IDX_LEAF)))
                return err;
            memset(t->roots + t->n_roots, 0, IDX_LEAF * sizeof *t->roots);
            t->roots[f->method_id >> IDX_LEAF_BITS] = t->n_roots;
            t->n_roots += IDX_LEAF;
            slot = idx_word(t, f->method_id);
        }
        f->parent = *slot;   /* the next lower frame of this method, + 1 */
        *slot = b->w + 1;
    }
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Pass 1                                                                    */

/* Pops the top frame (the stack is not empty) and appends it as a finished
 * call ending at `end`. */
static inline void close_top(build *b, uint64_t end, uint32_t flags)
{
    uint32_t d = b->sd - 1;
    const bl_call *f = frame(b, d);
    /* read the frame out first: calls[b->n] may be the frame's own slot */
    uint32_t m = f->method_id;
    uint64_t start = f->start_us, kids = f->self_us;
    if (d < b->w) {   /* indexed: restore its method's previous entry */
        *idx_word(b->t, m) = f->parent;
        b->w = d;
    }
    uint64_t incl = end - start;
    bl_call *c = &b->calls[b->n++];
    c->method_id = m;
    c->depth = d;
    c->flags = flags;
    c->start_us = start;
    c->end_us = end;
    c->self_us = incl - kids;
    b->sd = d;
    frame(b, d - 1)->self_us += incl;   /* the root frame when d == 0 */
}

/* An exit of method m at `now` that does not match the top frame (or finds
 * the stack empty). `counted`: the record was already counted as malformed
 * (its timestamp went backwards). */
static bl_err other_exit(build *b, uint32_t m, uint64_t now, int counted)
{
    bl_err err;
    if (b->sd == 0) {   /* the enter was lost before the segment start */
        if (!b->truncated && !counted)
            b->malformed++;
        if ((err = reserve_calls(b, 1)))
            return err;
        uint64_t incl = now - b->t_first;
        bl_call *root = frame(b, UINT32_MAX);
        bl_call *c = &b->calls[b->n++];
        c->method_id = m;
        c->depth = 0;
        c->flags = BL_CALL_SYNTH_ENTER;
        c->start_us = b->t_first;
        c->end_us = now;
        c->self_us = incl - root->self_us;
        root->self_us = incl;
        b->synths++;
        return BL_OK;
    }
    if (!counted)
        b->malformed++;
    uint32_t at = NO_FRAME;   /* depth of the topmost frame of method m */
    if (b->sd <= SCAN_MAX) {
        for (uint32_t d = b->sd - 1; d-- > 0;)
            if (frame(b, d)->method_id == m) {
                at = d;
                break;
            }
    } else {
        if ((err = idx_extend(b)))
            return err;
        uint32_t *slot = idx_word(b->t, m);
        if (slot && *slot)
            at = *slot - 1;
    }
    if (at == NO_FRAME)
        return BL_OK;   /* matches nothing: ignored */
    while (b->sd - 1 > at)
        close_top(b, now, BL_CALL_UNBALANCED);
    close_top(b, now, 0);
    return BL_OK;
}

/* One record the common step does not take: any enter or exit, with all
 * checks. */
static bl_err one_record(build *b, uint64_t r, uint64_t now, int back)
{
    bl_err err;
    uint32_t m = bl_rec_method(r);
    if (!bl_rec_is_exit(r)) {
        if (b->sd == BL_CALLTREE_MAX_DEPTH)
            return BL_ETOOBIG;
        if ((err = reserve_calls(b, SLACK)))
            return err;
        bl_call *f = frame(b, b->sd);
        f->method_id = m;
        f->start_us = now;
        f->self_us = 0;
        if (++b->sd > b->max_sd)
            b->max_sd = b->sd;
        return BL_OK;
    }
    if (frame(b, b->sd - 1)->method_id == m) {
        close_top(b, now, 0);
        return BL_OK;
    }
    return other_exit(b, m, now, back);
}

static bl_err pass1(build *b, const uint8_t *records, uint32_t n)
{
    bl_err err;
    uint64_t prev = b->t_first;
    /* the common step works on locals; b is current around one_record */
    bl_call *calls = b->calls;
    uint32_t top = b->top, nc = b->n, sd = b->sd, max_sd = b->max_sd, w = b->w;
    uint64_t malformed = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = bl_rec_load(records, (size_t)i);
        uint64_t now = bl_rec_time(r);
        uint32_t back = now < prev;
        now = back ? prev : now;
        malformed += back;
        prev = now;
        uint32_t m = bl_rec_method(r);
        uint32_t ex = (uint32_t)(r >> 63);
        const bl_call *f = &calls[top - sd];   /* top frame (root frame if none) */
        /* not for the common step: an exit that does not match the top
         * frame, too little room, a full stack, an indexed top frame */
        uint32_t odd = (ex & (f->method_id != m)) | (top - sd - nc < SLACK) |
                       (sd == BL_CALLTREE_MAX_DEPTH) | (sd - 1 < w);
        if (__builtin_expect(odd, 0)) {
            b->n = nc;
            b->sd = sd;
            b->max_sd = max_sd;
            err = one_record(b, r, now, (int)back);
            if (err)
                return err;
            calls = b->calls;
            top = b->top;
            nc = b->n;
            sd = b->sd;
            max_sd = b->max_sd;
            w = b->w;
            continue;
        }
        /* as if it were the matching exit: close the top frame ... */
        uint64_t start = f->start_us, incl = now - start;
        uint64_t kids = f->self_us;
        uint32_t fm = f->method_id;
        bl_call *c = &calls[nc];
        c->method_id = fm;
        c->depth = sd - 1;
        c->flags = 0;
        c->start_us = start;
        c->end_us = now;
        c->self_us = incl - kids;
        calls[top + 1 - sd].self_us += incl & (0 - (uint64_t)ex);
        /* ... and as if it were an enter: a new frame above the top */
        bl_call *nf = &calls[top - 1 - sd];
        nf->method_id = m;
        nf->start_us = now;
        nf->self_us = 0;
        /* keep what the record is */
        nc += ex;
        sd = sd + 1 - 2 * ex;
        max_sd = sd > max_sd ? sd : max_sd;
    }
    b->n = nc;
    b->sd = sd;
    b->max_sd = max_sd;
    b->malformed += malformed;
    while (b->sd)   /* still open at the end: close at the last timestamp */
        close_top(b, prev, b->open_flag);
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Pass 2: final depths and parents                                          */

static bl_err pass2(build *b)
{
    bl_calltree *t = b->t;
    uint64_t need = (uint64_t)b->max_sd + b->synths;   /* > any final depth */
    if (need > BL_CALLTREE_MAX_DEPTH)
        need = BL_CALLTREE_MAX_DEPTH;
    bl_err err = reserve_u32(&t->stack, &t->cap_stack, need + 1);
    if (err)
        return err;
    /* last[d + 1]: the latest call of depth d seen; last[0]: "depth -1" */
    uint32_t *last = t->stack;
    last[0] = BL_CALL_ROOT;
    bl_call *calls = b->calls;
    if (b->synths == 0) {   /* depths are final: max_sd ≤ MAX_DEPTH */
        for (uint32_t i = b->n; i-- > 0;) {
            uint32_t d = calls[i].depth;
            calls[i].parent = last[d];
            last[d + 1] = i;
        }
        return BL_OK;
    }
    uint32_t later = 0;   /* synthesized calls after i */
    for (uint32_t i = b->n; i-- > 0;) {
        bl_call *c = &calls[i];
        uint32_t d = c->depth + later;
        if (d >= BL_CALLTREE_MAX_DEPTH)
            return BL_ETOOBIG;
        c->depth = d;
        c->parent = last[d];
        last[d + 1] = i;
        later += (c->flags & BL_CALL_SYNTH_ENTER) != 0;
    }
    return BL_OK;
}

/* ------------------------------------------------------------------------ */
/* Carried enters (segments that continue an earlier one)                    */

/*
 * Pushes the leading carried enters as frames (stopping at an exit, which a
 * decoder would have refused) and sets up the windowed self-time accounting
 * of the header: with s = max(since_us, last carried enter) and frames
 * 0 .. k-1 (outermost first), frame d's children sum starts at
 * start(d+1) - start(d) and the innermost's at s - start(k-1), so that at
 * close self = (end - max(start, s)) - (the children's time after s); the
 * root frame's sum starts at start(0) - s (mod 2^64: it only ever gets the
 * outermost's inclusive time added, giving its windowed time). Later
 * records are clamped to s, which becomes the segment start. Returns the
 * number of records consumed in *k.
 */
static bl_err push_carried(build *b, const uint8_t *records, uint32_t n, uint64_t since,
                           uint32_t *k_out)
{
    uint64_t prev = b->t_first;
    uint32_t k = 0;
    for (; k < n; k++) {
        uint64_t r = bl_rec_load(records, (size_t)k);
        if (bl_rec_is_exit(r))
            break;
        uint64_t now = bl_rec_time(r);
        if (now < prev) {
            now = prev;
            b->malformed++;
        }
        prev = now;
        if (b->sd == BL_CALLTREE_MAX_DEPTH)
            return BL_ETOOBIG;
        bl_err err = reserve_calls(b, SLACK);
        if (err)
            return err;
        bl_call *f = frame(b, b->sd);
        f->method_id = bl_rec_method(r);
        f->start_us = now;
        f->self_us = 0;
        if (++b->sd > b->max_sd)
            b->max_sd = b->sd;
    }
    uint64_t s = since > prev ? since : prev;
    for (uint32_t d = 0; d < k; d++)
        frame(b, d)->self_us = (d + 1 < k ? frame(b, d + 1)->start_us : s) - frame(b, d)->start_us;
    if (k)
        frame(b, UINT32_MAX)->self_us = frame(b, 0)->start_us - s;
    b->t_first = s;
    *k_out = k;
    return BL_OK;
}

/* Flags the carried calls: the one carried at stack depth d is the first
 * finished call of stack depth d (nothing shallower closes while it is
 * open), and they close innermost first. Run before pass 2. */
static void flag_carried(build *b, uint32_t k)
{
    uint32_t want = k;
    for (uint32_t i = 0; i < b->n && want > 0; i++)
        if (b->calls[i].depth == want - 1) {
            b->calls[i].flags |= BL_CALL_CARRIED;
            want--;
        }
}

bl_err bl_calltree_build_segment(bl_calltree *t, const uint8_t *records, uint32_t n,
                                 const bl_segment *seg)
{
    assert(t && seg && (records || n == 0));
    t->n_calls = 0;
    t->malformed = 0;
    t->n_roots = 0;   /* the method index is rebuilt on demand */
    if (n == 0)
        return BL_OK;
    build b = { .t = t, .calls = t->calls, .cap = t->cap_calls, .truncated = seg->truncated,
                .open_flag = seg->continues ? BL_CALL_CONTINUES : BL_CALL_INCOMPLETE };
    b.top = b.cap ? b.cap - 2 : 0;
    b.t_first = bl_rec_time(bl_rec_load(records, 0));
    /* a balanced sequence needs n/2 entries: reserve them once */
    bl_err err = reserve_calls(&b, (uint64_t)n / 2 + SLACK);
    if (!err) {   /* the root frame and the dummy above it */
        memset(&b.calls[b.top], 0, 2 * sizeof *b.calls);
        b.calls[b.top].method_id = NO_METHOD;
    }
    uint32_t k = 0;
    if (!err && seg->n_carried)
        err = push_carried(&b, records, seg->n_carried < n ? seg->n_carried : n,
                           seg->since_us, &k);
    if (!err)
        err = pass1(&b, records + (size_t)k * 8, n - k);
    if (!err && k)
        flag_carried(&b, k);
    if (!err)
        err = pass2(&b);
    if (err) {
        t->n_calls = 0;
        t->malformed = 0;
        return err;
    }
    t->n_calls = b.n;
    t->malformed = b.malformed;
    return BL_OK;
}

bl_err bl_calltree_build(bl_calltree *t, const uint8_t *records, uint32_t n, int truncated)
{
    bl_segment seg = { .truncated = truncated };
    return bl_calltree_build_segment(t, records, n, &seg);
}

/* ------------------------------------------------------------------------ */
/* Nesting only (bl_calltree_nesting)                                        */

/* The open stack of the check: method per frame, and for frames in the
 * method index the next lower frame of the same method + 1 (as pass 1). */
typedef struct nest {
    uint32_t *method, *below;
    uint32_t sd, w;
    bl_u64map idx; /* method + 1 -> topmost indexed frame + 1 */
} nest;

/* Pops the top frame; returns its depth. */
static uint32_t nest_pop(nest *s)
{
    uint32_t d = --s->sd;
    if (d < s->w) { /* indexed: its method's entry goes back to the frame below */
        uint32_t *v;
        int added;
        /* the key is present: put only finds it (never allocates) */
        if (bl_u64map_put(&s->idx, (uint64_t)s->method[d] + 1, 0, &v, &added) == BL_OK)
            *v = s->below[d];
        s->w = d;
    }
    return d;
}

bl_err bl_calltree_nesting(const uint8_t *records, uint32_t n, const bl_segment *seg,
                           uint32_t limit, uint32_t *nesting)
{
    (void)seg; /* carried enters nest like any enter; times do not matter here */
    *nesting = 0;
    if (n == 0)
        return BL_OK;
    nest s = { 0 };
    bl_err err = BL_OK;
    uint32_t cap = limit < n ? limit : n;
    s.method = malloc(((size_t)cap + 1) * sizeof *s.method);
    s.below = malloc(((size_t)cap + 1) * sizeof *s.below);
    if (!s.method || !s.below) {
        err = BL_ENOMEM;
        goto out;
    }
    /* a call closed at depth d while `synths` synthesized calls came before
     * it ends at final depth d + (synths after it) = d + S - before - self;
     * so nesting = max(d + 1 - before - self) + S, kept as `best` + S */
    int64_t best = 0;
    uint64_t synths = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = bl_rec_load(records, (size_t)i);
        uint32_t m = bl_rec_method(r);
        if (!bl_rec_is_exit(r)) {
            if (s.sd >= limit) {
                err = BL_ETOOBIG;
                goto out;
            }
            s.method[s.sd++] = m;
            continue;
        }
        if (s.sd && s.method[s.sd - 1] == m) {
            int64_t v = (int64_t)nest_pop(&s) + 1 - (int64_t)synths;
            best = v > best ? v : best;
            continue;
        }
        if (s.sd == 0) { /* a lost enter: a synthesized call at depth 0 */
            int64_t v = 0 - (int64_t)synths;
            best = v > best ? v : best;
            synths++;
            if ((uint64_t)best + synths > limit) {
                err = BL_ETOOBIG;
                goto out;
            }
            continue;
        }
        /* the topmost frame of m below the top, as pass 1 finds it */
        uint32_t at = NO_FRAME;
        if (s.sd <= SCAN_MAX) {
            for (uint32_t d = s.sd - 1; d-- > 0;)
                if (s.method[d] == m) {
                    at = d;
                    break;
                }
        } else {
            for (; s.w < s.sd; s.w++) {
                uint32_t *v;
                int added;
                if ((err = bl_u64map_put(&s.idx, (uint64_t)s.method[s.w] + 1, 0, &v, &added)))
                    goto out;
                s.below[s.w] = *v;
                *v = s.w + 1;
            }
            uint32_t v = bl_u64map_get(&s.idx, (uint64_t)m + 1, 0);
            if (v)
                at = v - 1;
        }
        if (at == NO_FRAME)
            continue; /* matches nothing: ignored */
        while (s.sd > at) {
            int64_t v = (int64_t)nest_pop(&s) + 1 - (int64_t)synths;
            best = v > best ? v : best;
        }
    }
    /* frames still open close at the end, after every synthesized call */
    while (s.sd) {
        int64_t v = (int64_t)nest_pop(&s) + 1 - (int64_t)synths;
        best = v > best ? v : best;
    }
    if ((uint64_t)best + synths > limit) {
        err = BL_ETOOBIG;
        goto out;
    }
    *nesting = (uint32_t)((uint64_t)best + synths);
out:
    if (err == BL_ETOOBIG)
        *nesting = limit + 1;
    free(s.method);
    free(s.below);
    bl_u64map_cleanup(&s.idx);
    return err;
}
