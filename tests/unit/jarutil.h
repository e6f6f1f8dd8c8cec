/*
 * jarutil.h — test helper (header-only): calls a function for every .class
 * entry of a jar, read with libzip. Used by the instrumenter core tests.
 */
#ifndef BL_JARUTIL_H
#define BL_JARUTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

/* fn gets the entry name and its bytes (valid during the call only); a
 * non-zero return stops the walk and is returned. Returns -1 when the jar
 * cannot be opened or an entry cannot be read. */
typedef int (*ju_class_fn)(void *ctx, const char *name, const uint8_t *data, size_t len);

static inline int ju_each_class(const char *jar, ju_class_fn fn, void *ctx)
{
    int zerr = 0;
    zip_t *z = zip_open(jar, ZIP_RDONLY, &zerr);
    if (!z)
        return -1;
    zip_int64_t n = zip_get_num_entries(z, 0);
    int rc = 0;
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (zip_int64_t i = 0; i < n && rc == 0; i++) {
        zip_stat_t st;
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0) {
            rc = -1;
            break;
        }
        size_t nl = strlen(st.name);
        if (nl < 6 || strcmp(st.name + nl - 6, ".class") != 0)
            continue;
        if (st.size + 1 > cap) {
            cap = (size_t)st.size + 1;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                rc = -1;
                break;
            }
            buf = nb;
        }
        zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)i, 0);
        if (!f) {
            rc = -1;
            break;
        }
        zip_int64_t got = zip_fread(f, buf, st.size);
        zip_fclose(f);
        if (got < 0 || (zip_uint64_t)got != st.size) {
            rc = -1;
            break;
        }
        rc = fn(ctx, st.name, buf, (size_t)st.size);
    }
    free(buf);
    zip_close(z);
    return rc;
}

#endif
