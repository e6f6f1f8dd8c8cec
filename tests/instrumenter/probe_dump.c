/*
 * probe_dump.c — test tool: instruments every method of every class of a jar
 * through bl_probe_instrument (methodIds 0, 1, 2, ... in jar order, with a
 * stride so that all push forms occur) and writes the classes under outdir
 * (outdir/a/b/C.class). Used by the JVM acceptance tests.
 *
 *   probe_dump JAR OUTDIR [RUNTIME_CLASS] [ID_STRIDE]
 *
 * Exit 0 on success, 1 on any parse/instrument error (message on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "classfile.h"
#include "jarutil.h"
#include "probe.h"

typedef struct dump {
    const char *outdir;
    const char *runtime;
    uint32_t next_id, stride;
    size_t classes, methods, warnings;
} dump;

static void warn(void *ctx, const char *msg)
{
    dump *d = ctx;
    d->warnings++;
    fprintf(stderr, "warning: %s\n", msg);
}

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                *p = '/';
                return -1;
            }
            *p = '/';
        }
    return 0;
}

static int one(void *ctx, const char *name, const uint8_t *data, size_t len)
{
    dump *d = ctx;
    if (strncmp(name, "META-INF/", 9) == 0 || strstr(name, "module-info"))
        return 0;
    bl_cf *cf = NULL;
    char err[512];
    bl_err e = bl_cf_parse(data, len, &cf, err, sizeof err);
    if (e) {
        fprintf(stderr, "%s: parse: %s\n", name, err);
        return 1;
    }
    size_t n = bl_cf_method_count(cf);
    uint32_t *ids = calloc(n ? n : 1, sizeof *ids);
    if (!ids)
        return 1;
    for (size_t i = 0; i < n; i++) {
        ids[i] = d->next_id % (BL_PROBE_MAX_ID + 1);
        d->next_id += d->stride;
    }
    bl_probe_opts o = {d->runtime, warn, d, 0}; /* guarded probes */
    bl_buf out;
    bl_buf_init(&out, 0);
    size_t done = 0;
    e = bl_probe_instrument(cf, ids, &o, &out, &done, err, sizeof err);
    free(ids);
    bl_cf_free(cf);
    if (e) {
        fprintf(stderr, "%s: instrument: %s (%s)\n", name, err, bl_err_str(e));
        bl_buf_cleanup(&out);
        return 1;
    }
    d->classes++;
    d->methods += done;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->outdir, name);
    FILE *f = NULL;
    if (mkdirs(path) != 0 || !(f = fopen(path, "wb")) ||
        fwrite(out.data, 1, out.len, f) != out.len) {
        fprintf(stderr, "%s: cannot write\n", path);
        if (f)
            fclose(f);
        bl_buf_cleanup(&out);
        return 1;
    }
    fclose(f);
    bl_buf_cleanup(&out);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: probe_dump JAR OUTDIR [RUNTIME_CLASS] [ID_STRIDE]\n");
        return 2;
    }
    dump d = {argv[2], argc > 3 ? argv[3] : "io/beatline/runtime/Beatline", 0,
              argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 1, 0, 0, 0};
    int rc = ju_each_class(argv[1], one, &d);
    fprintf(stderr, "%s: %zu classes, %zu methods instrumented, %zu warnings\n", argv[1],
            d.classes, d.methods, d.warnings);
    return rc == 0 ? 0 : 1;
}
