/*
 * calltree.h — rebuild the calls of one thread from its enter/exit records
 * (batch.h record layout), exactly, and robustly against damaged input.
 *
 * Input: one thread's records in order, and whether its ring had wrapped
 * (truncated). Output: an array of calls in order of their *exit* (a child
 * always before its parent), each with its parent's index, so callers can
 * aggregate bottom-up or rebuild the tree.
 *
 * Rules (the tree promise of the server, issue 3):
 *   - enter pushes, the matching exit pops: recursion is exact; the
 *     instrumenter emits an exit on exceptional exits too, so exceptions are
 *     exact.
 *   - an exit whose enter is missing while the stack is empty — its enter was
 *     lost at the start of a truncated ring — gets a synthesized enter at the
 *     segment start (the thread's first timestamp); the calls already
 *     completed at top level become its children. Flag BL_CALL_SYNTH_ENTER.
 *     (Also done when the thread is not marked truncated, but counted as
 *     malformed then.)
 *   - an exit that matches a deeper frame closes the frames above it at its
 *     timestamp (flag BL_CALL_UNBALANCED) — counted as malformed.
 *   - an exit that matches nothing on a non-empty stack is ignored and
 *     counted as malformed: it never corrupts the parents.
 *   - a timestamp lower than its predecessor is treated as equal to it
 *     (counted as malformed): durations never go negative.
 *   - enters still open at the end close at the thread's last timestamp,
 *     flag BL_CALL_INCOMPLETE (BL_CALL_CONTINUES when the segment continues
 *     in a later batch: bl_calltree_build_segment).
 * Times: inclusive = end - start; exclusive (self) = inclusive minus the
 * inclusive time of direct children.
 */
#ifndef BL_CALLTREE_H
#define BL_CALLTREE_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

#define BL_CALL_ROOT UINT32_MAX /* parent of a top-level call */

#define BL_CALL_INCOMPLETE 1u   /* never exited inside the segment */
#define BL_CALL_SYNTH_ENTER 2u  /* enter was lost; start = segment start */
#define BL_CALL_UNBALANCED 4u   /* closed by an exit of an outer frame */
#define BL_CALL_CARRIED 8u      /* entered in an earlier segment (a carried enter):
                                   start_us is the original enter time */
#define BL_CALL_CONTINUES 16u   /* still open at the end of a segment that continues:
                                   not a finished call; self_us is its time here */

typedef struct bl_call {
    uint32_t method_id;
    uint32_t parent;     /* index into calls[], BL_CALL_ROOT for top level */
    uint32_t depth;      /* 0 for top level */
    uint32_t flags;      /* BL_CALL_* */
    uint64_t start_us, end_us;
    uint64_t self_us;    /* exclusive time */
} bl_call;

typedef struct bl_calltree {
    bl_call *calls;      /* owned; n_calls valid entries */
    uint32_t n_calls, cap_calls;
    uint64_t malformed;  /* records that broke the rules above */
    /* internal scratch, reused across builds (owned) */
    uint32_t *stack;
    uint32_t cap_stack;
    uint32_t *roots;
    uint32_t n_roots, cap_roots;
} bl_calltree;

void bl_calltree_init(bl_calltree *t);
void bl_calltree_cleanup(bl_calltree *t);

/*
 * Rebuilds the calls of the `n` records at `records` (n × 8 bytes, little-
 * endian, any alignment: a bl_batch_thread's records). Replaces the previous
 * content of t (storage is reused). A stack deeper than
 * BL_CALLTREE_MAX_DEPTH fails with BL_ETOOBIG. BL_ENOMEM.
 */
#define BL_CALLTREE_MAX_DEPTH 65536
bl_err bl_calltree_build(bl_calltree *t, const uint8_t *records, uint32_t n, int truncated);

/* What a batch says about one thread's segment (schema/batch-format.md,
 * "Segments: calls that span batches"). */
typedef struct bl_segment {
    int truncated;       /* the ring wrapped before the dump */
    int continues;       /* the thread goes on in a later segment */
    uint32_t n_carried;  /* leading records that are carried enters (0: none) */
    uint64_t since_us;   /* where the previous segment ended (with n_carried) */
} bl_segment;

/*
 * bl_calltree_build for a segment of a longer thread. Carried enters (the
 * first seg->n_carried records; an exit among them ends the carried run)
 * open frames with their original times; the calls they open are flagged
 * BL_CALL_CARRIED when they close here, with inclusive time from the
 * original enter. Self time is windowed: a carried call's self time counts
 * from since_us (or its last carried enter, if later), and later records
 * earlier than that are raised to it (malformed). The segment start, for
 * synthesized enters, is that same time. With seg->continues, calls still
 * open at the end get BL_CALL_CONTINUES instead of BL_CALL_INCOMPLETE:
 * consumers count only their self time. Summed over the segments of a
 * thread, every call's self time is then exact and every call is counted
 * once. Errors as bl_calltree_build.
 */
bl_err bl_calltree_build_segment(bl_calltree *t, const uint8_t *records, uint32_t n,
                                 const bl_segment *seg);

/*
 * The nesting the rebuild of these records reaches: the deepest final depth
 * + 1 of bl_calltree_build_segment's calls (0 for no records), counting the
 * enters synthesized for exits whose enter was lost (each makes the calls
 * finished before it one level deeper) — exactly, with the same matching of
 * exits to frames, but storing only the open stack (no calls). Stops early:
 * once the nesting is certain to exceed `limit`, returns BL_ETOOBIG with
 * *nesting = limit + 1. BL_ENOMEM. The stack holds at most limit frames
 * (4 bytes × 2 each). For limit < BL_CALLTREE_MAX_DEPTH, BL_OK here means
 * bl_calltree_build_segment cannot fail with BL_ETOOBIG.
 */
bl_err bl_calltree_nesting(const uint8_t *records, uint32_t n, const bl_segment *seg,
                           uint32_t limit, uint32_t *nesting);

#endif
