/*
 * namecheck.c — headerless method-ID files of obfuscated names (see
 * namecheck.h).
 */
#include "ingest/namecheck.h"

#include <stdio.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/u64map.h"

bl_err bl_names_check_run(const bl_methodids *t, const bl_mapindex *mi, bl_names_check *out,
                          int *looks_obfuscated)
{
    memset(out, 0, sizeof *out);
    *looks_obfuscated = 0;
    bl_u64map seen; /* distinct classes by XXH3-64 of the name (a collision skips one) */
    bl_u64map_init(&seen);
    uint32_t n = bl_methodids_count(t);
    bl_err err = BL_OK;
    const char *last = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const char *cls = bl_methodids_at(t, i)->cls;
        if (last && !strcmp(last, cls))
            continue; /* entries of one class usually come together */
        last = cls;
        size_t len = strlen(cls);
        uint64_t key = XXH3_64bits(cls, len);
        uint32_t *v;
        int added;
        if ((err = bl_u64map_put(&seen, key ? key : 1, 0, &v, &added)))
            break;
        if (!added)
            continue;
        out->classes++;
        int is_obf = bl_mapindex_class_by_obf(mi, cls, len) != NULL;
        int is_orig = bl_mapindex_class_by_orig(mi, cls, len) != NULL;
        if (is_obf && !is_orig) {
            if (!out->obf_only++)
                snprintf(out->example, sizeof out->example, "%s", cls);
        } else if (is_orig && !is_obf) {
            out->orig_only++;
        }
    }
    bl_u64map_cleanup(&seen);
    if (err)
        return err;
    *looks_obfuscated =
        !bl_methodids_obfuscated(t) && out->obf_only > 0 && out->obf_only > out->orig_only;
    return BL_OK;
}

void bl_names_warning(const bl_names_check *c, char *buf, size_t n)
{
    snprintf(buf, n,
             "the method-ID file's names are read as original (it has no 'names=obfuscated' "
             "header), but %u of its %u classes are obfuscated names of this build's mapping "
             "(e.g. '%s') and only %u are original names: it was probably written after "
             "R8/ProGuard, and methods will show obfuscated names. Fix: instrument with "
             "'--names obfuscated' (or start the file with '# beatline method-ids v1 "
             "names=obfuscated') and upload it again with ?replace=true",
             c->obf_only, c->classes, c->example, c->orig_only);
}
