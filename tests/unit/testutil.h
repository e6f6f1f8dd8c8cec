/*
 * testutil.h — helpers shared by the Check unit tests (header-only).
 */
#ifndef BL_TESTUTIL_H
#define BL_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

/* Reads a whole file into a new NUL-terminated heap string (*n = length).
 * Returns NULL when the file cannot be read. */
static inline char *tu_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    bl_buf b;
    bl_buf_init(&b, 0);
    char tmp[65536];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0)
        if (bl_buf_append(&b, tmp, r)) {
            fclose(f);
            bl_buf_cleanup(&b);
            return NULL;
        }
    fclose(f);
    if (!b.data && bl_buf_reserve(&b, 1) == BL_OK)
        b.data[0] = '\0';
    if (n)
        *n = b.len;
    return b.data;
}

static inline int tu_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the golden-case folders of dir (names starting with a digit) into
 * names[0..max), sorted; returns how many (0 when dir is missing). Names are
 * heap strings the caller frees. */
static inline int tu_discover_cases(const char *dir, char **names, int max)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max)
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, tu_cmp_names);
    return n;
}

/* Runs a suite and returns the process exit code. */
static inline int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
