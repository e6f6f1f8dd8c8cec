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
/* The class's direct super-interfaces (its interfaces[] table, JVMS §4.1):
 * how many, and the internal name of the i-th (0 <= i < count; NULL when i is
 * out of range), owned by the bl_cf. Inherited interfaces are not listed. */
size_t bl_cf_interface_count(const bl_cf *cf);
const char *bl_cf_interface_name(const bl_cf *cf, size_t i);
/* access_flags of the class (JVMS §4.1). */
uint16_t bl_cf_access(const bl_cf *cf);
/* major_version (45 = JDK 1.1 … 65 = Java 21 …). */
uint16_t bl_cf_major(const bl_cf *cf);

/* Number of methods, and method i (0 <= i < count) in file order. */
size_t bl_cf_method_count(const bl_cf *cf);
const bl_cf_method *bl_cf_method_at(const bl_cf *cf, size_t i);

/* ------------------------------------------------------------------------ */
/* Raw layout, for the rewriter (probe.c) and tests. Offsets are byte offsets
 * into the parsed input; everything listed here was bounds-checked by
 * bl_cf_parse. */

/* Highest major_version accepted (69 = Java 25). Newer features that need no
 * rewriting (records, sealed classes, nest mates, modules, condy, preview
 * minor versions) are attributes or pool entries copied untouched. */
#define BL_CF_MAJOR_MAX 69
#define BL_CF_MAJOR_MIN 45

/* Constant-pool tags (JVMS §4.4). */
enum {
    BL_CP_UTF8 = 1, BL_CP_INTEGER = 3, BL_CP_FLOAT = 4, BL_CP_LONG = 5, BL_CP_DOUBLE = 6,
    BL_CP_CLASS = 7, BL_CP_STRING = 8, BL_CP_FIELDREF = 9, BL_CP_METHODREF = 10,
    BL_CP_IMETHODREF = 11, BL_CP_NAMEANDTYPE = 12, BL_CP_METHODHANDLE = 15,
    BL_CP_METHODTYPE = 16, BL_CP_DYNAMIC = 17, BL_CP_INVOKEDYNAMIC = 18, BL_CP_MODULE = 19,
    BL_CP_PACKAGE = 20
};

/* Where a method's parts are. code_* fields are 0 when the method has no Code
 * attribute. */
typedef struct bl_cf_mraw {
    uint32_t start, end;        /* method_info: [start, end) */
    uint32_t code_attr;         /* offset of the Code attribute's attribute_name_index */
    uint32_t code_attr_end;     /* end of the Code attribute */
    uint16_t max_stack, max_locals;
    uint32_t code;              /* offset of code[0] */
    uint32_t code_len;
    uint32_t exc;               /* offset of the first exception_table entry */
    uint16_t exc_count;
    uint16_t attr_count;        /* attributes of the Code attribute */
    uint32_t attrs;             /* offset of the first of them */
} bl_cf_mraw;

/* The input bytes and their length. */
const uint8_t *bl_cf_bytes(const bl_cf *cf, size_t *len);
/* constant_pool_count (entries are 1 .. count-1). */
uint16_t bl_cf_pool_count(const bl_cf *cf);
/* Offset just past the constant pool (the class's access_flags). */
uint32_t bl_cf_pool_end(const bl_cf *cf);
/* Tag of entry i (0 for index 0, the slot after a Long/Double, or i out of range). */
uint8_t bl_cf_pool_tag(const bl_cf *cf, uint32_t i);
/* Offset of entry i's tag byte (0 when the tag is 0). */
uint32_t bl_cf_pool_off(const bl_cf *cf, uint32_t i);
/* Entry i as a NUL-terminated string when it is a Utf8 entry, else NULL.
 * *n (may be NULL) receives the byte length. Owned by the bl_cf. */
const char *bl_cf_utf8(const bl_cf *cf, uint32_t i, uint32_t *n);
/* The name of Class entry i (NULL when i is not a Class entry). */
const char *bl_cf_class_name(const bl_cf *cf, uint32_t i);
/* Offset of the methods_count field; offset just past the last method. */
uint32_t bl_cf_methods_off(const bl_cf *cf);
uint32_t bl_cf_methods_end(const bl_cf *cf);
/* Raw layout of method i. */
const bl_cf_mraw *bl_cf_method_raw(const bl_cf *cf, size_t i);

#endif
