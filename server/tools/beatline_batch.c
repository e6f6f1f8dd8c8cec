/*
 * beatline-batch — convert Beatline batches between the binary wire format
 * v1 and its JSON form (schema/batch-format.md, ingest/batch.h).
 *
 *   beatline-batch encode [FILE] < batch.json > batch.bin
 *   beatline-batch decode [FILE] < batch.bin  > batch.json
 *
 * The input is FILE, or standard input when FILE is absent or "-"; at most
 * MAX_INPUT bytes are read. Output goes to standard output, and only when
 * the whole input converted.
 *
 * Exit status: 0 success; 1 usage, I/O or format error. Format errors read
 *   beatline-batch: INPUT: offset N: message
 * (N is a byte offset into the input; for JSON input the line and column
 * follow the message).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fdio.h"
#include "ingest/batch.h"

#define MAX_INPUT ((size_t)256 << 20) /* 256 MiB */

static const char usage[] =
    "usage: beatline-batch encode [FILE]   JSON batch -> binary (wire format v1)\n"
    "       beatline-batch decode [FILE]   binary batch -> JSON\n"
    "       beatline-batch --help\n"
    "\n"
    "Reads FILE, or standard input when FILE is absent or '-' (at most 256 MiB),\n"
    "and writes the converted batch to standard output. Formats: see\n"
    "schema/batch-format.md. Errors name the byte offset of the problem:\n"
    "  beatline-batch: INPUT: offset N: message\n"
    "Exit status: 0 success, 1 any error.\n";

/* 1-based line and column (in bytes) of offset `off` in text. */
static void line_col(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
    size_t l = 1, line_start = 0;
    if (off > len)
        off = len;
    for (size_t i = 0; i < off; i++)
        if (text[i] == '\n') {
            l++;
            line_start = i + 1;
        }
    *line = l;
    *col = off - line_start + 1;
}

int main(int argc, char **argv)
{
    int encode;
    const char *path = NULL, *name = "<stdin>";
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc < 2 || argc > 3) {
        fputs(usage, stderr);
        return 1;
    }
    if (!strcmp(argv[1], "encode")) {
        encode = 1;
    } else if (!strcmp(argv[1], "decode")) {
        encode = 0;
    } else {
        fprintf(stderr, "beatline-batch: unknown command '%s'\n%s", argv[1], usage);
        return 1;
    }
    if (argc == 3 && strcmp(argv[2], "-") != 0) {
        if (argv[2][0] == '-') {
            fprintf(stderr, "beatline-batch: unknown option '%s'\n%s", argv[2], usage);
            return 1;
        }
        path = name = argv[2];
    }

    int rc = 1;
    int fd = 0;
    bl_buf in, out;
    bl_batch batch;
    bl_batch_error berr = { 0, NULL };
    bl_err e;
    bl_buf_init(&in, MAX_INPUT);
    bl_buf_init(&out, 0);
    memset(&batch, 0, sizeof batch);

    if (path && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "beatline-batch: %s: %s\n", name, strerror(errno));
        goto out;
    }
    bl_err re = bl_fd_read_all(fd, &in);
    int r = re == BL_OK ? 0 : re == BL_ETOOBIG ? -2 : -1;
    if (path)
        close(fd);
    if (r == -2) {
        fprintf(stderr, "beatline-batch: %s: input larger than the 256 MiB limit\n", name);
        goto out;
    }
    if (r != 0) {
        fprintf(stderr, "beatline-batch: %s: %s\n", name, strerror(errno));
        goto out;
    }

    if (encode) {
        e = bl_batch_json_to_binary(in.data ? in.data : "", in.len, &out, &berr);
    } else {
        e = bl_batch_decode((const uint8_t *)(in.data ? in.data : ""), in.len, &batch, &berr);
        if (!e)
            e = bl_batch_to_json(&batch, &out);
    }
    if (e && berr.message) {
        if (encode) {
            size_t line, col;
            line_col(in.data ? in.data : "", in.len, berr.offset, &line, &col);
            fprintf(stderr, "beatline-batch: %s: offset %zu: %s (line %zu, column %zu)\n", name,
                    berr.offset, berr.message, line, col);
        } else {
            fprintf(stderr, "beatline-batch: %s: offset %zu: %s\n", name, berr.offset,
                    berr.message);
        }
        goto out;
    }
    if (e) {
        fprintf(stderr, "beatline-batch: %s: %s\n", name, bl_err_str(e));
        goto out;
    }
    if (bl_fd_write_all(1, out.data ? out.data : "", out.len) != BL_OK) {
        fprintf(stderr, "beatline-batch: write: %s\n", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    bl_batch_cleanup(&batch);
    bl_buf_cleanup(&in);
    bl_buf_cleanup(&out);
    return rc;
}
