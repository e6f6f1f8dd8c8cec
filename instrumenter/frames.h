/*
 * frames.h — rebuilding a StackMapTable (JVMS §4.7.4, §4.10.1) when the
 * rewriter adds branch targets: the fall-through of a conditional branch
 * that was widened by inversion (if<!c> +8; goto_w L) becomes a jump target
 * and needs a frame; so do the skip labels of guarded probes (probe.h): the
 * enter point's `lab` (after the enter probe) and each return's `body`
 * (after its exit probe; the frame at the return, its value on the stack).
 *
 * Scheme: every explicit frame is decoded to its full form (locals and stack
 * as lists of verification types). A new frame at instruction t is the
 * type state on entry to t (before t executes; for a return, its value is
 * on the stack), computed by simulating types linearly from the last
 * explicit frame at or before t (or from the method's implicit initial
 * frame, built from its descriptor). That is exact: in a
 * method with a StackMapTable every instruction after an unconditional
 * transfer carries a frame, so the instructions between that frame and t are
 * a straight line that only falls through. Then all frames, old and new, are
 * encoded again in offset order, each in the shortest form relative to its
 * predecessor.
 *
 * Types that name classes (Object_variable_info) need Class entries; those
 * missing from the pool are added through the bl_cpool (deduplicated).
 */
#ifndef BL_FRAMES_H
#define BL_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include "classfile.h"
#include "codeattr.h"
#include "common/blerr.h"
#include "common/buf.h"
#include "cpool.h"

/* What the rebuild needs to know about the method. */
typedef struct bl_frames_in {
    const bl_cf *cf;
    bl_cpool *pool;               /* for Class entries of simulated types */
    const bl_cf_method *m;
    uint16_t max_stack, max_locals; /* the original ones */
    const uint8_t *code;          /* old code */
    const uint32_t *old_off;      /* [n_insns] old offset of each instruction */
    uint32_t n_insns;
    const bl_pcmap *map;          /* old -> new offsets */
    const uint8_t *smt;           /* old StackMapTable body (after attribute_length), or NULL */
    uint32_t smt_len;
    const uint32_t *targets;      /* instructions that need a frame, strictly ascending, each
                                     (index << 1) | at_body: at_body 0 = the frame goes
                                     at the instruction's map->lab offset (before an exit
                                     probe), 1 = at its map->body offset (after it) */
    uint32_t n_targets;
    uint16_t throwable;           /* Class index of java/lang/Throwable (handler frame) */
} bl_frames_in;

/* Appends the new StackMapTable body (u2 number_of_entries, frames) to out:
 * the old frames moved, one new frame per target (unless one is there
 * already: at a lab the old frame serves; at a body a copy of the lab's
 * frame is added), and the handler's full_frame{[], [Throwable]} at map->code_end.
 * BL_EFORMAT (message in err) when the old table is malformed or the
 * simulation meets something it cannot type (jsr/ret, a stack deeper than
 * max_stack, an undefined local); BL_ETOOBIG (pool full), BL_ENOMEM. */
bl_err bl_frames_rebuild(const bl_frames_in *in, bl_buf *out, char *err, size_t errlen);

#endif
