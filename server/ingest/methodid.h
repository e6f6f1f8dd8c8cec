/*
 * methodid.h — method-ID files (schema/method-id-file.md): methodId →
 * class, method, descriptor, as written by the instrumenter. The line format
 * is Tencent Matrix's methodMapping.txt, which is accepted unchanged:
 *
 *   methodId,accessFlags,class method descriptor
 *   12,9,com.example.Foo bar (ILjava/lang/String;)V
 *
 * (dotted class name, decimal access flags per JVMS §4.6; Matrix writes '.'
 * inside descriptors too — both '.' and '/' are accepted and the descriptor
 * is stored with '/'). An optional header comment line says whether names
 * are original or obfuscated (instrumented after R8/ProGuard):
 *
 *   # beatline method-ids v1 names=obfuscated build-id=3f2a9c1b-04de-4c1e-9a2b-0123456789ab
 *
 * Without it names are taken as original; build-id (optional) is the build's
 * UUID (schema/build-id.md).
 */
#ifndef BL_METHODID_H
#define BL_METHODID_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef struct bl_mid_entry {
    uint32_t id;
    uint32_t access;      /* JVMS access_flags */
    const char *cls;      /* dotted class name, NUL-terminated, owned by the table */
    const char *name;     /* method name */
    const char *desc;     /* JVM descriptor with '/' (JVMS §4.3.3) */
} bl_mid_entry;

typedef struct bl_methodids bl_methodids;

/* Called for each malformed line (1-based line number); may be NULL. */
typedef void (*bl_mid_diag_fn)(void *ctx, uint64_t line, const char *message);

/*
 * Parses a method-ID file. Malformed lines are reported and skipped, or with
 * `strict` make the parse fail with BL_EFORMAT (*bad_line set). Duplicate
 * ids: the first wins, the later line is reported as malformed. Ids above
 * BL_MID_MAX_ID are malformed. Returns BL_OK with a new table in *out
 * (release with bl_methodids_free), BL_ENOMEM, BL_EFORMAT.
 */
#define BL_MID_MAX_ID ((1u << 23) - 1)
bl_err bl_methodids_parse(const char *data, size_t len, int strict, bl_mid_diag_fn diag,
                          void *diag_ctx, bl_methodids **out, uint64_t *bad_line);
void bl_methodids_free(bl_methodids *t);

/* 1 when the header says names=obfuscated, else 0. */
int bl_methodids_obfuscated(const bl_methodids *t);

/* The header's build-id= (schema/build-id.md): the build's UUID, lowercase
 * "8-4-4-4-12" text owned by t, or NULL when the header has none. */
const char *bl_methodids_build_id(const bl_methodids *t);

/* Build ids (schema/build-id.md). BL_BUILD_SHORT_LEN: hex digits of a short id. */
#define BL_BUILD_SHORT_LEN 12
/* Checks that [s, s+n) is a UUID in 8-4-4-4-12 hex form (any case) and
 * writes it lowercase, NUL-terminated, to out. 0, or -1 when it is not. */
int bl_build_id_parse(const char *s, size_t n, char out[37]);
/* The short id of a (valid, lowercase) build id: its first 12 hex digits,
 * NUL-terminated in out. */
void bl_build_short_id(const char *build_id, char out[BL_BUILD_SHORT_LEN + 1]);
/* 1 when the build name ends in '+' and 12 hex digits (any case) that are
 * not the short id of build_id: a method-ID file of another build. 0
 * otherwise (names without such a suffix are not checked). */
int bl_build_name_conflicts(const char *build, const char *build_id);
/* Entry for a methodId, or NULL. O(1). */
const bl_mid_entry *bl_methodids_get(const bl_methodids *t, uint32_t id);
/* Number of entries; and the largest id + 1 (0 when empty). */
uint32_t bl_methodids_count(const bl_methodids *t);
uint32_t bl_methodids_id_limit(const bl_methodids *t);
/* Entry by position 0 .. count-1, in id order. */
const bl_mid_entry *bl_methodids_at(const bl_methodids *t, uint32_t i);
/* Lines skipped as malformed. */
uint64_t bl_methodids_malformed(const bl_methodids *t);

#endif
