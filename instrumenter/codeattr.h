/*
 * codeattr.h — moving the code offsets held by a Code attribute's own
 * attributes when the code is re-laid out (JVMS §4.7.3): StackMapTable
 * (§4.7.4), LineNumberTable (§4.7.12), LocalVariableTable (§4.7.13),
 * LocalVariableTypeTable (§4.7.14), Runtime(In)VisibleTypeAnnotations
 * (§4.7.20, the localvar, offset and type_argument targets).
 *
 * The old -> new mapping is given by a bl_pcmap built by the rewriter.
 * Two views of one instruction: `lab` is where a jump to it lands (before an
 * exit probe attached to it, after an enter probe), `body` is where its own
 * bytes start (for frames' Uninitialized(offset) and instruction-offset
 * targets of type annotations).
 */
#ifndef BL_CODEATTR_H
#define BL_CODEATTR_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"

typedef struct bl_pcmap {
    const int32_t *idx_of; /* [old_len + 1]: instruction index at an old offset, -1 if none */
    const uint32_t *lab;   /* [n insns] new offset a jump to the instruction lands on */
    const uint32_t *body;  /* [n insns] new offset of the instruction's own bytes */
    uint32_t old_len;      /* old code_length */
    uint32_t code_end;     /* new offset where the original code ends (handler start) */
    uint32_t new_len;      /* new code_length (handler included) */
} bl_pcmap;

/* New offset of old offset x as a jump target; UINT32_MAX when x is not an
 * instruction start. x == old_len maps to code_end. */
static inline uint32_t bl_pcmap_lab(const bl_pcmap *m, uint32_t x)
{
    if (x > m->old_len)
        return UINT32_MAX;
    if (x == m->old_len)
        return m->code_end;
    int32_t i = m->idx_of[x];
    return i < 0 ? UINT32_MAX : m->lab[i];
}

/* New offset of the instruction at old x itself; UINT32_MAX when none. */
static inline uint32_t bl_pcmap_body(const bl_pcmap *m, uint32_t x)
{
    if (x >= m->old_len || m->idx_of[x] < 0)
        return UINT32_MAX;
    return m->body[m->idx_of[x]];
}

/* Each function appends the rewritten attribute *body* (what follows
 * attribute_length) to out; in[0..len) is the old body. BL_EFORMAT (message
 * in err) when the attribute is malformed or names an offset that is not an
 * instruction boundary; BL_ENOMEM/BL_ETOOBIG from out. */

/* LineNumberTable. */
bl_err bl_ca_lines(const bl_pcmap *m, const uint8_t *in, uint32_t len, bl_buf *out, char *err,
                   size_t errlen);
/* LocalVariableTable and LocalVariableTypeTable (same layout). A range that
 * ends at the old code end ends at the new code end. */
bl_err bl_ca_locals(const bl_pcmap *m, const uint8_t *in, uint32_t len, bl_buf *out,
                    char *err, size_t errlen);
/* Runtime(In)VisibleTypeAnnotations of a Code attribute. */
bl_err bl_ca_type_annos(const bl_pcmap *m, const uint8_t *in, uint32_t len, bl_buf *out,
                        char *err, size_t errlen);
/* StackMapTable: every frame moved to its instruction's new `lab` offset
 * (frame kinds kept, offset_delta re-encoded, same_frame and
 * same_locals_1_stack_item switched to their _extended forms when the delta
 * no longer fits), Uninitialized(offset) moved to the `new` instruction's
 * body. Then one full_frame at new offset tail_at (> every moved frame) whose
 * contents after offset_delta (u2 locals count, locals, u2 stack count,
 * stack) are tail[0..tail_len). in may be NULL (len 0: no table before).
 * *n_out receives the new number_of_entries. */
bl_err bl_ca_frames(const bl_pcmap *m, const uint8_t *in, uint32_t len, const uint8_t *tail,
                    uint32_t tail_len, uint32_t tail_at, bl_buf *out, uint16_t *n_out,
                    char *err, size_t errlen);

#endif
