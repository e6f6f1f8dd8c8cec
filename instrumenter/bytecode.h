/*
 * bytecode.h — decoding JVM instructions (JVMS §6.5, layout rules §4.7.3,
 * §4.9.1): instruction lengths, including the 4-byte alignment padding of
 * tableswitch/lookupswitch and the `wide` prefix, and the opcode numbers the
 * rewriter needs.
 *
 * Nothing here allocates. Every read is bounds-checked against the code length
 * given by the caller.
 */
#ifndef BL_BYTECODE_H
#define BL_BYTECODE_H

#include <stddef.h>
#include <stdint.h>

enum {
    BL_OP_ICONST_0 = 3,
    BL_OP_BIPUSH = 16,
    BL_OP_SIPUSH = 17,
    BL_OP_LDC = 18,
    BL_OP_LDC_W = 19,
    BL_OP_IFEQ = 153,     /* 153..166: conditional branches with a 2-byte offset */
    BL_OP_IF_ACMPNE = 166,
    BL_OP_GOTO = 167,
    BL_OP_JSR = 168,
    BL_OP_RET = 169,
    BL_OP_TABLESWITCH = 170,
    BL_OP_LOOKUPSWITCH = 171,
    BL_OP_IRETURN = 172, /* 172..177: ireturn lreturn freturn dreturn areturn return */
    BL_OP_RETURN = 177,
    BL_OP_GETSTATIC = 178,
    BL_OP_INVOKEVIRTUAL = 182,
    BL_OP_INVOKESPECIAL = 183,
    BL_OP_INVOKESTATIC = 184,
    BL_OP_INVOKEINTERFACE = 185,
    BL_OP_INVOKEDYNAMIC = 186,
    BL_OP_NEW = 187,
    BL_OP_ATHROW = 191,
    BL_OP_WIDE = 196,
    BL_OP_IFNULL = 198,
    BL_OP_IFNONNULL = 199,
    BL_OP_GOTO_W = 200,
    BL_OP_JSR_W = 201
};

/* Reads big-endian integers (no bounds check: the caller checked). */
static inline uint16_t bl_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t bl_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline int32_t bl_bes32(const uint8_t *p) { return (int32_t)bl_be32(p); }
static inline int16_t bl_bes16(const uint8_t *p) { return (int16_t)bl_be16(p); }

/* 1 for the branches with a signed 2-byte offset: if<cond>, if_<x>cmp<cond>,
 * goto, jsr, ifnull, ifnonnull. */
static inline int bl_bc_is_short_branch(unsigned op)
{
    return (op >= BL_OP_IFEQ && op <= BL_OP_JSR) || op == BL_OP_IFNULL || op == BL_OP_IFNONNULL;
}

/* 1 for conditional short branches (the ones widened by inversion). */
static inline int bl_bc_is_cond_branch(unsigned op)
{
    return (op >= BL_OP_IFEQ && op <= BL_OP_IF_ACMPNE) || op == BL_OP_IFNULL ||
           op == BL_OP_IFNONNULL;
}

/* The opposite condition of a conditional branch (ifeq <-> ifne, ...). The
 * pairs are adjacent and start on an odd opcode (JVMS §6.5). */
static inline unsigned bl_bc_invert(unsigned op)
{
    unsigned base = op >= BL_OP_IFNULL ? BL_OP_IFNULL : BL_OP_IFEQ;
    return base + ((op - base) ^ 1u);
}

/* Padding bytes after a tableswitch/lookupswitch opcode at offset `off` so
 * that the operands start at a multiple of 4 from the code start. */
static inline unsigned bl_bc_switch_pad(uint32_t off) { return (4u - ((off + 1u) & 3u)) & 3u; }

/* Length in bytes of the instruction at code[off], code_len bytes in all.
 * Returns 0 when the opcode is undefined (including breakpoint/impdep, which
 * may not appear in class files), a `wide` prefixes an opcode it cannot
 * modify, a switch has low > high or a negative pair count, or the
 * instruction runs past code_len. */
uint32_t bl_bc_insn_len(const uint8_t *code, uint32_t code_len, uint32_t off);

/* 1 for invokevirtual, invokespecial, invokestatic, invokeinterface,
 * invokedynamic. */
static inline int bl_bc_is_invoke(unsigned op)
{
    return op >= BL_OP_INVOKEVIRTUAL && op <= BL_OP_INVOKEDYNAMIC;
}

#endif
