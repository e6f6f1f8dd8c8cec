/*
 * fdio.h — whole reads and writes on file descriptors, retrying on EINTR
 * and short transfers.
 */
#ifndef BL_FDIO_H
#define BL_FDIO_H

#include <stddef.h>
#include "common/blerr.h"
#include "common/buf.h"

/* Reads fd to its end, appending to b. BL_ETOOBIG when the input is longer
 * than b's cap (b then holds the first cap bytes); BL_ENOMEM; BL_EIO on a
 * read error (errno set). */
bl_err bl_fd_read_all(int fd, bl_buf *b);

/* Writes n bytes of p. BL_EIO (errno set). */
bl_err bl_fd_write_all(int fd, const void *p, size_t n);

#endif
