/*
 * namecheck.h — does a method-ID file read as original names (no header, or
 * "names=original": methodid.h) really hold obfuscated names?
 *
 * A user who instruments after R8/ProGuard and forgets `--names obfuscated`
 * uploads a file of obfuscated names that says (or, headerless, is taken
 * to say) original names: every screen would show obfuscated names with no
 * hint. Compared with the build's mapping index
 * (symbol/mapindex.h), each distinct class of the file is
 *   - obfuscated only: a class's obfuscated name in the mapping and no
 *     class's original name (renamed classes, instrumented after R8);
 *   - original only: an original name and no obfuscated name (renamed
 *     classes, instrumented before R8);
 *   - neither (not in the mapping, or kept: obfuscated = original).
 * The names look obfuscated when obfuscated-only classes outnumber
 * original-only ones (and there is at least one).
 */
#ifndef BL_NAMECHECK_H
#define BL_NAMECHECK_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "ingest/methodid.h"
#include "symbol/mapindex.h"

typedef struct bl_names_check {
    uint32_t classes;    /* distinct class names in the file */
    uint32_t obf_only;   /* of them: obfuscated names only */
    uint32_t orig_only;  /* original names only */
    char example[128];   /* one obfuscated-only class ("" when none), NUL-terminated */
} bl_names_check;

/*
 * Counts the classes of `t` against `mi` (both borrowed). *looks_obfuscated
 * is 1 when the file is read as original names but obfuscated-only
 * classes outnumber original-only ones; always 0 for a file whose header
 * says names=obfuscated. BL_ENOMEM.
 */
bl_err bl_names_check_run(const bl_methodids *t, const bl_mapindex *mi, bl_names_check *out,
                          int *looks_obfuscated);

/* The warning for a file that looks obfuscated, with the fix, into buf (n
 * bytes, NUL-terminated, truncated if need be). */
void bl_names_warning(const bl_names_check *c, char *buf, size_t n);

#endif
