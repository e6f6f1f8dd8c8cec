/*
 * instrument_idcheck.c — test helper for instrument_cli_test.sh: reads a
 * method-ID file with the server's reader (server/ingest/methodid.h) in
 * strict mode and prints "ENTRIES OBFUSCATED" ("1" or "0"). Exit 0 when the
 * file parses with zero malformed lines, 1 otherwise (the reason on stderr).
 *   instrument_idcheck FILE
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "ingest/methodid.h"

static void diag(void *ctx, uint64_t line, const char *message)
{
    fprintf(stderr, "%s:%llu: %s\n", (const char *)ctx, (unsigned long long)line, message);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: instrument_idcheck FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    bl_buf b;
    bl_buf_init(&b, 0);
    char tmp[65536];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0)
        if (bl_buf_append(&b, tmp, r) != BL_OK) {
            fclose(f);
            fprintf(stderr, "out of memory\n");
            return 1;
        }
    fclose(f);
    bl_methodids *t = NULL;
    uint64_t bad = 0;
    bl_err e = bl_methodids_parse(b.data ? b.data : "", b.len, 1, diag, argv[1], &t, &bad);
    bl_buf_cleanup(&b);
    if (e || bl_methodids_malformed(t)) {
        fprintf(stderr, "%s: %s (line %llu)\n", argv[1], bl_err_str(e),
                (unsigned long long)bad);
        bl_methodids_free(t);
        return 1;
    }
    printf("%u %d\n", (unsigned)bl_methodids_count(t), bl_methodids_obfuscated(t));
    bl_methodids_free(t);
    return 0;
}
