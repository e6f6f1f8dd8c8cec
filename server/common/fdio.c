/* fdio.c — whole reads and writes on file descriptors (see fdio.h). */
#include "common/fdio.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

bl_err bl_fd_read_all(int fd, bl_buf *b)
{
    /* a regular file: room for all of it at once, read in big pieces */
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size < b->cap_max - b->len)
        (void)bl_buf_reserve(b, (size_t)st.st_size + 1); /* a hint; the loop checks */
    for (;;) {
        size_t room = b->cap_max - b->len;
        size_t want = room < 65536 ? room : 65536;
        if (b->data && b->alloc - b->len - 1 > want && room > want)
            want = b->alloc - b->len - 1 < room ? b->alloc - b->len - 1 : room;
        char probe;
        char *dst = &probe;
        if (want) {
            bl_err e = bl_buf_reserve(b, want);
            if (e)
                return e;
            dst = b->data + b->len;
        } else {
            want = 1; /* at the cap: one more byte means too much */
        }
        ssize_t r = read(fd, dst, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return BL_EIO;
        if (r == 0)
            return BL_OK;
        if (dst == &probe)
            return BL_ETOOBIG;
        b->len += (size_t)r;
        b->data[b->len] = '\0';
    }
}

bl_err bl_fd_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return BL_EIO;
        p += w;
        n -= (size_t)w;
    }
    return BL_OK;
}
