/*
 * jario.h — inputs and outputs of beatline-instrument: jars (zip, via
 * libzip), class directories and single class files.
 *
 * Reading (bl_jio_open) lists every entry of one input in a deterministic
 * order (jar: central-directory order; directory: bytewise sorted relative
 * paths) and loads the class entries (names ending in ".class"): a
 * directory's or class file's bytes as they are; a jar's deflated or stored
 * class entries as their raw stored bytes (still compressed, into one buffer
 * owned by the input), decoded later by bl_jio_load on the caller's worker
 * threads (libdeflate, CRC-32 and size checked); class entries with another
 * compression method are decoded by libzip at once. It rejects, with a
 * message naming the input and the entry: zip entries whose name is empty,
 * absolute ("/x", "C:x"), or has a ".." component or a backslash; duplicate
 * entry names; encrypted entries; a class entry over BL_JIO_CLASS_MAX bytes,
 * or whose declared sizes are impossible (stored: sizes differ; deflated:
 * more than 1,032 bytes out per byte in); class entries whose compressed
 * bytes add up to more than the archive; more than BL_JIO_TOTAL_MAX class
 * bytes in one input; archives libzip cannot open (truncated, not a zip).
 * bl_jio_load rejects data that does not match its header (size, CRC) or is
 * not a valid deflate stream.
 * Directories: symbolic links to files are read as files, links to
 * directories and special files (FIFOs, sockets, devices) are skipped with a
 * notice, nesting deeper than 256 levels is an error.
 *
 * Writing the instrumented copies: jarstage.h.
 */
#ifndef BL_JARIO_H
#define BL_JARIO_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "common/blerr.h"

#define BL_JIO_CLASS_MAX (64u << 20)            /* bytes in one class entry */
#define BL_JIO_TOTAL_MAX ((uint64_t)4 << 30)     /* class bytes in one input */
/* Jars up to this size are read into memory once and their output is built
 * in memory by libzip, then written with one write (no per-entry seeks and
 * small reads/writes); larger ones are read and written through files. */
#define BL_JIO_INMEM_MAX ((uint64_t)1 << 30)
/* libdeflate level of rewritten class entries (see docs/benchmarks.md,
 * "deflate level": output size vs time measured on guava.jar). */
#define BL_JIO_DEFLATE_LEVEL 1

typedef enum bl_jio_kind { BL_JIO_JAR = 1, BL_JIO_DIR, BL_JIO_CLASS } bl_jio_kind;

/* Receives notices (skipped files, dropped signature files); may be NULL. */
typedef void (*bl_jio_notice_fn)(void *ctx, const char *msg);

typedef struct bl_jio_entry {
    char *name;        /* path inside the input with '/' (owned); a single class
                          file: its base name; directories end in '/' */
    uint8_t *data;     /* class entries: the bytes (owned), else NULL; a jar's
                          deflated/stored class entries: NULL until bl_jio_load */
    size_t len;        /* bytes in data */
    /* Jar class entries waiting for bl_jio_load: the entry's stored bytes as
     * in the archive (borrowed from the input's buffer), the uncompressed
     * size and CRC-32 its header declares; raw is NULL otherwise. */
    const uint8_t *raw;
    size_t raw_len;
    uint64_t size;
    uint32_t crc_in;
    unsigned is_class; /* 1: a regular entry whose name ends in ".class" */
    unsigned is_dir;   /* 1: a directory entry */
    uint64_t index;    /* jar: libzip index */
    int32_t comp;      /* jar: compression method (ZIP_CM_*) */
    time_t mtime;      /* jar: last modification */
    uint32_t mode;     /* directory input: permission bits */
    /* Set by the caller before bl_jio_stage: replacement bytes (borrowed;
     * must outlive bl_jio_stage) or NULL to copy the entry unchanged. */
    const uint8_t *out;
    size_t out_len;
    /* Set by bl_jio_precompress (jar outputs): `out` raw-deflated (owned;
     * NULL for a stored entry, whose `out` is written as it is), its CRC-32,
     * and has_crc = 1 once done. */
    uint8_t *zout;
    size_t zout_len;
    uint32_t crc;
    unsigned has_crc;
} bl_jio_entry;

typedef struct bl_jio_input {
    char *path;            /* as given (owned) */
    bl_jio_kind kind;
    bl_jio_entry *entries; /* n entries (owned) */
    size_t n;
    uint8_t *raw;          /* jar: the class entries' stored bytes (owned), or NULL */
    uint8_t *file;         /* jar up to BL_JIO_INMEM_MAX bytes: the whole file as read
                              (owned; libzip reads it and bl_jio_stage rewrites it in
                              memory), else NULL (libzip works on the files) */
    size_t file_len;
} bl_jio_input;

/* Opens one input (kind from the file system: directory, or a regular file
 * whose name ends in ".class" — else it is read as a zip). On success *out
 * is a new input owned by the caller (bl_jio_free). On failure returns
 * BL_EIO (errno message), BL_EFORMAT (bad archive or entry), BL_ETOOBIG or
 * BL_ENOMEM with "PATH[!ENTRY]: reason" in err. */
bl_err bl_jio_open(const char *path, bl_jio_notice_fn notice, void *ctx, bl_jio_input **out,
                   char *err, size_t errlen);
void bl_jio_free(bl_jio_input *in);

/* Decodes a class entry whose stored bytes bl_jio_open kept (en->raw):
 * inflates them (libdeflate) or copies them (stored) into en->data (owned by
 * the entry, en->len bytes) and checks the size and CRC-32 the header
 * declares. Does nothing (BL_OK) when en->data is already set or the entry
 * is not a class. Thread-safe for distinct entries (per-thread decoder, see
 * bl_jio_thread_done). Errors: BL_EFORMAT (corrupt data, size or CRC
 * mismatch), BL_ENOMEM, with "PATH!ENTRY: reason" in err. */
bl_err bl_jio_load(const bl_jio_input *in, bl_jio_entry *en, char *err, size_t errlen);

/* For a jar entry whose `out` is set: deflates `out` (raw deflate,
 * libdeflate level BL_JIO_DEFLATE_LEVEL) into en->zout unless the entry is
 * stored, and computes the CRC-32 of `out` (en->crc, en->has_crc), so that
 * bl_jio_stage hands libzip finished bytes and the work runs on the
 * caller's threads. Thread-safe for distinct entries (per-thread
 * compressor, see bl_jio_thread_done). BL_OK also when there is nothing to
 * do (not a jar, no `out`, already done); BL_ENOMEM; BL_EFORMAT (the
 * compressor failed). */
bl_err bl_jio_precompress(const bl_jio_input *in, bl_jio_entry *en);

/* Frees the calling thread's decoder and compressor (allocated on first use
 * by bl_jio_load / bl_jio_precompress). Call it before a worker thread ends;
 * safe to call any number of times. */
void bl_jio_thread_done(void);

/* 1 when `name` is a jar signature file (META-INF/X.SF, .RSA, .DSA, .EC,
 * META-INF/SIG-*; suffixes case-insensitive, top level of META-INF only). */
int bl_jio_is_signature(const char *name);

/* 1 when a zip entry name is safe to write below an output folder: not
 * empty, not absolute, no ".." component, no backslash, no NUL. */
int bl_jio_name_safe(const char *name);

#endif
