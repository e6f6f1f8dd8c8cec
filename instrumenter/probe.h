/*
 * probe.h — inserting methodId enter/exit probes into a parsed class.
 *
 * For each selected method with a Code attribute:
 *   - enter: push methodId; INVOKESTATIC <runtime>.i(I)V at method entry (in
 *     constructors right after the super(...)/this(...) call; see probe.c);
 *   - exit: push methodId; INVOKESTATIC <runtime>.o(I)V before every return
 *     instruction (ireturn … return);
 *   - exceptional exit: a catch-all handler, appended last to the exception
 *     table (user handlers keep priority), covering the body from just after
 *     the enter probe to the end of the original code (exit probes included,
 *     the handler itself not), that calls o(methodId) and rethrows (athrow).
 * Guarded probes (the default): each enter and exit probe is preceded by
 *     getstatic <runtime>.on:Z; ifeq skip
 *   and its skip label lands just after its invokestatic, so code that is not
 *   compiled yet (interpreter, C1) skips the call when the runtime is off
 *   (6 bytes more per probe; the catch-all handler's probe stays bare). Each
 *   skip label gets a StackMapTable frame (major >= 50): the enter probe's
 *   is the frame at the enter point (the initial frame, or simulated after a
 *   constructor's super(...) call), an exit probe's the frame at its return
 *   (value on the stack), simulated by frames.c. A method whose guarded code
 *   would exceed 65,535 bytes, or whose frames cannot be simulated, gets the
 *   bare probes instead (no warning: its probes are all there).
 * Methods without code (abstract, native) are never touched. A method is left
 * as it is, with a warning through opts->warn, when its new code would exceed
 * 65,535 bytes, a constructor has no super(...)/this(...) call, its Code
 * attribute holds an attribute that may carry code offsets this code does not
 * know (e.g. CLDC's StackMap), or a frame needed by a widened branch cannot
 * be computed (jsr/ret in a version-50 class).
 * Branch offsets, switch padding, goto→goto_w widening, the exception table,
 * StackMapTable (major >= 50), LineNumberTable, LocalVariable(Type)Table,
 * Runtime(In)VisibleTypeAnnotations with code offsets, max_stack and max_locals
 * are all rewritten (JVMS §4.7, §4.10). New constant-pool entries are added
 * only when no equal entry exists.
 */
#ifndef BL_PROBE_H
#define BL_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"
#include "classfile.h"

/* Marks a method that is to be left as it is. */
#define BL_PROBE_NO_ID UINT32_MAX
/* Largest methodId a batch record can carry (23 bits, schema/batch-format.md). */
#define BL_PROBE_MAX_ID 8388607u

/* Called once per method that had an id but was left untouched (code would
 * exceed 65,535 bytes, an unsupported construct, ...). msg names the method. */
typedef void (*bl_probe_warn_fn)(void *ctx, const char *msg);

typedef struct bl_probe_opts {
    const char *runtime_class; /* internal name of the class with static i(I)V and o(I)V
                                  (and, for guarded probes, static boolean field on) */
    bl_probe_warn_fn warn;     /* may be NULL */
    void *warn_ctx;
    int unguarded;             /* 0 (default): guarded probes (see above); 1: bare probes */
} bl_probe_opts;

/* Writes the instrumented class file to `out` (appended). ids has
 * bl_cf_method_count(cf) entries: ids[i] is the methodId of method i, or
 * BL_PROBE_NO_ID. Methods without code are never touched whatever their id.
 * *n_done (may be NULL) receives the number of methods that got probes.
 * When no method gets probes the output is byte-identical to the input.
 * Errors: BL_EFORMAT (code that cannot be decoded; message in err),
 * BL_ETOOBIG (constant pool would exceed 65,535 entries), BL_ENOMEM,
 * BL_EINVAL (bad id). On error `out` may hold a partial class: the caller
 * discards it. Thread-safe for distinct bl_cf objects. */
bl_err bl_probe_instrument(bl_cf *cf, const uint32_t *ids, const bl_probe_opts *opts,
                           bl_buf *out, size_t *n_done, char *err, size_t errlen);

/* bl_probe_instrument calling other static (I)V methods of
 * opts->runtime_class: enter_name at entry, exit_name at the exits (both
 * NULL: "i" and "o", which is bl_probe_instrument). The launch hooks
 * (hierarchy.h) use io/beatline/runtime/Launch.enter/exit, unguarded, with
 * the hook number in place of the methodId. Same contract otherwise. */
bl_err bl_probe_instrument_named(bl_cf *cf, const uint32_t *ids, const bl_probe_opts *opts,
                                 const char *enter_name, const char *exit_name, bl_buf *out,
                                 size_t *n_done, char *err, size_t errlen);

#endif
