/*
 * symbolicate.h — original names for one method-ID file entry.
 *
 * A method-ID file (schema/method-id-file.md) names each instrumented method
 * as it was in the class files the instrumenter saw: obfuscated when it ran
 * after R8/ProGuard. Given (class, method, descriptor) from such a line, this
 * returns the original class, method, descriptor and source file of the
 * residual method — the outermost frame of its mapping entries.
 *
 * Descriptors are JVM descriptors (JVMS §4.3.3), e.g. "(ILjava/lang/String;)V".
 * Matching: an entry's residualsignature (R8 map version 2.2) must equal the
 * descriptor; without it the descriptor is de-obfuscated through the class
 * map and compared with the entry's original parameter and return types.
 */
#ifndef BL_SYMBOLICATE_H
#define BL_SYMBOLICATE_H

#include <stddef.h>
#include "common/blerr.h"
#include "common/buf.h"
#include "symbol/mapindex.h"

typedef enum bl_sym_how {
    BL_SYM_IDENTITY = 0, /* no mapping, or the class is not in it: names kept */
    BL_SYM_EXACT,        /* one original method matched name and descriptor */
    BL_SYM_NAME_ONLY,    /* descriptor matched nothing; the name had one method */
    BL_SYM_AMBIGUOUS,    /* several methods fit; the first (file order) is given */
    BL_SYM_CLASS_ONLY    /* class known, method name not: class mapped only */
} bl_sym_how;

/* All strings are NUL-terminated and live in the caller's `store` buffer;
 * the offsets stay valid, the pointers until the store is appended to. */
typedef struct bl_symbol {
    const char *cls;    /* original class, dotted */
    const char *method; /* original method name */
    const char *desc;   /* original JVM descriptor */
    const char *file;   /* source file (sourceFile metadata or inferred) */
    bl_sym_how how;
} bl_symbol;

/*
 * Symbolicates (cls, method, desc) — dotted class name, method name, JVM
 * descriptor — through `mi` (NULL: identity). `store` is reset and then
 * holds the result strings. BL_EINVAL for a malformed descriptor, BL_ENOMEM.
 */
bl_err bl_symbolicate_method(const bl_mapindex *mi, const char *cls, const char *method,
                             const char *desc, bl_buf *store, bl_symbol *out);

/*
 * Converts between JVM descriptors and the mapping's Java source form.
 * bl_desc_from_java: ret "void", params "int,java.lang.String[]" →
 * "(I[Ljava/lang/String;)V" appended to out. BL_EINVAL on a bad type.
 */
bl_err bl_desc_from_java(const char *ret, const char *params, bl_buf *out);

#endif
