/*
 * classfile.h — reading one Java class file (JVMS §4) and listing its methods.
 *
 * A bl_cf is a parsed class file. It borrows the input bytes: `data` must stay
 * valid and unchanged until bl_cf_free(). Every length, count and constant-pool
 * index read from the file is checked against the bytes left and the pool size
 * before use; a malformed file yields BL_EFORMAT and a message naming what and
 * where (byte offset, pool index, method name) in `err`.
 *
 * Probe insertion lives in probe.h; this header is only the model the driver
 * (main.c) needs to choose methods and assign methodIds.
 */
#ifndef BL_CLASSFILE_H
#define BL_CLASSFILE_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef struct bl_cf bl_cf; /* opaque; created by bl_cf_parse, freed by bl_cf_free */

/* One method of a parsed class, as the driver sees it. */
typedef struct bl_cf_method {
    const char *name;     /* NUL-terminated, modified UTF-8 as in the pool (JVMS §4.4.7);
                             owned by the bl_cf */
    const char *desc;     /* method descriptor (JVMS §4.3.3), owned by the bl_cf */
    uint16_t access;      /* access_flags (JVMS §4.6) */
    uint32_t code_length; /* bytes in the Code attribute's code[]; 0 when the method has none
                             (abstract, native) */
    unsigned trivial;     /* 1 when --skip-trivial would skip it: code is only a return
                             (empty), a plain getter (aload_0, getfield, xreturn), a plain
                             setter (aload_0, xload_1, putfield, return), or contains no
                             invoke* instruction at all (Matrix's "single method") */
} bl_cf_method;

/* Parses a class file. data/len: the bytes of one .class (borrowed, see above).
 * On success *out is a new bl_cf owned by the caller. On failure returns
 * BL_EFORMAT (malformed; message in err), BL_EVERSION (major version > what this
 * build knows how to rewrite; message in err) or BL_ENOMEM; *out is untouched.
 * err may be NULL when errlen is 0. */
bl_err bl_cf_parse(const uint8_t *data, size_t len, bl_cf **out, char *err, size_t errlen);

/* Frees a bl_cf (NULL is fine). */
void bl_cf_free(bl_cf *cf);

/* The class's own name in internal form (`a/b/C$D`), owned by the bl_cf. */
const char *bl_cf_name(const bl_cf *cf);
/* The super class's internal name, or NULL for java/lang/Object and module-info. */
const char *bl_cf_super_name(const bl_cf *cf);
/* access_flags of the class (JVMS §4.1). */
uint16_t bl_cf_access(const bl_cf *cf);
/* major_version (45 = JDK 1.1 … 65 = Java 21 …). */
uint16_t bl_cf_major(const bl_cf *cf);

/* Number of methods, and method i (0 <= i < count) in file order. */
size_t bl_cf_method_count(const bl_cf *cf);
const bl_cf_method *bl_cf_method_at(const bl_cf *cf, size_t i);

#endif
