/*
 * bytecode.c — JVM instruction lengths (see bytecode.h).
 *
 * Input: the code[] array of a Code attribute (JVMS §4.7.3). Fixed-length
 * opcodes come from one table; 0 there marks an opcode that is undefined or
 * reserved (breakpoint 202, impdep1/2 254/255, 203..253) or whose length
 * depends on its operands (tableswitch, lookupswitch, wide).
 *
 * Invariant: a non-zero result r satisfies off + r <= code_len.
 */
#include "bytecode.h"

/* Fixed lengths, JVMS §6.5 (0 = variable or not a valid opcode). */
static const uint8_t LEN[256] = {
    /* 0 nop .. 15 dconst_1 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 16 bipush, sipush, ldc, ldc_w, ldc2_w, 21 iload..25 aload, 26.. xload_n */
    2, 3, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1,
    /* 32 .. 47: xload_n, xaload */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 48 .. 53 xaload, 54..58 xstore (2), 59.. xstore_n */
    1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1,
    /* 64 .. 79 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 80 .. 95: xastore, stack ops */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 96 .. 111 arithmetic */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 112 .. 127 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 128 .. 131, 132 iinc (3), 133 .. 143 conversions */
    1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 144 .. 152 conversions/compares, 153 .. 159 if* */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3,
    /* 160 .. 166 if*, 167 goto, 168 jsr, 169 ret, 170/171 switches, 172..175 returns */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0, 1, 1, 1, 1,
    /* 176 areturn, 177 return, 178..181 field ops, 182..184 invoke, 185 invokeinterface,
       186 invokedynamic, 187 new, 188 newarray, 189 anewarray, 190 arraylength, 191 athrow */
    1, 1, 3, 3, 3, 3, 3, 3, 3, 5, 5, 3, 2, 3, 1, 1,
    /* 192 checkcast, instanceof, monitorenter, monitorexit, 196 wide, 197 multianewarray,
       198 ifnull, ifnonnull, 200 goto_w, jsr_w, 202 breakpoint (reserved) .. */
    3, 3, 1, 1, 0, 4, 3, 3, 5, 5, 0, 0, 0, 0, 0, 0,
};

uint32_t bl_bc_insn_len(const uint8_t *code, uint32_t code_len, uint32_t off)
{
    if (off >= code_len)
        return 0;
    unsigned op = code[off];
    uint32_t left = code_len - off;
    uint32_t n = LEN[op];
    if (n)
        return n <= left ? n : 0;
    if (op == BL_OP_WIDE) {
        if (left < 2)
            return 0;
        unsigned m = code[off + 1];
        if (m == 132)
            n = 6; /* wide iinc: index u2, const s2 */
        else if ((m >= 21 && m <= 25) || (m >= 54 && m <= 58) || m == BL_OP_RET)
            n = 4;
        else
            return 0;
        return n <= left ? n : 0;
    }
    if (op != BL_OP_TABLESWITCH && op != BL_OP_LOOKUPSWITCH)
        return 0;
    uint32_t head = 1 + bl_bc_switch_pad(off); /* opcode + padding */
    if (left < head + 12)
        return 0;
    const uint8_t *p = code + off + head;
    uint64_t total;
    if (op == BL_OP_TABLESWITCH) {
        int32_t low = bl_bes32(p + 4), high = bl_bes32(p + 8);
        if (low > high)
            return 0;
        total = head + 12 + ((uint64_t)((int64_t)high - low) + 1) * 4;
    } else {
        int32_t npairs = bl_bes32(p + 4);
        if (npairs < 0)
            return 0;
        total = head + 8 + (uint64_t)npairs * 8;
    }
    return total <= left ? (uint32_t)total : 0;
}
