/*
 * jario.h — inputs and outputs of beatline-instrument: jars (zip, via
 * libzip), class directories and single class files.
 *
 * Reading (bl_jio_open) lists every entry of one input in a deterministic
 * order (jar: central-directory order; directory: bytewise sorted relative
 * paths) and loads the bytes of the class entries (names ending in
 * ".class") into memory. It rejects, with a message naming the input and
 * the entry: zip entries whose name is empty, absolute ("/x", "C:x"), or has
 * a ".." component or a backslash; duplicate entry names; encrypted
 * entries; a class entry over BL_JIO_CLASS_MAX bytes or whose data does not
 * match its header (size, CRC); more than BL_JIO_TOTAL_MAX class bytes in
 * one input; archives libzip cannot open (truncated, not a zip).
 * Directories: symbolic links to files are read as files, links to
 * directories and special files (FIFOs, sockets, devices) are skipped with a
 * notice, nesting deeper than 256 levels is an error.
 *
 * Writing (bl_jio_stage) produces the output of one input beside its
 * target, under a temporary name (".NAME.blXXXXXX" in the target's
 * folder): jar -> jar, directory -> directory, class -> class. Entries whose
 * `out` is set get those bytes; every other entry is copied unchanged (jar:
 * raw compressed bytes, name, order, timestamps, extra fields and
 * compression kept by libzip; a replaced class entry keeps its timestamp and
 * its compression method: stored stays stored, deflated is deflated again
 * at zlib's level 6). When any class entry of a jar changes, its
 * signature files (META-INF/X.SF, .RSA, .DSA, .EC, META-INF/SIG-*) are left
 * out, with a notice; META-INF/MANIFEST.MF is copied unchanged (its
 * per-entry digests are inert without the signature files). Files are
 * fsync'ed (a folder output: one syncfs for the whole tree). bl_jio_commit renames the staged output onto the target
 * (replacing an existing one; a directory by an atomic exchange where the
 * file system allows it) and fsyncs the folder; bl_jio_abort removes it.
 */
#ifndef BL_JARIO_H
#define BL_JARIO_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "common/blerr.h"

#define BL_JIO_CLASS_MAX (64u << 20)            /* bytes in one class entry */
#define BL_JIO_TOTAL_MAX ((uint64_t)4 << 30)     /* class bytes in one input */

typedef enum bl_jio_kind { BL_JIO_JAR = 1, BL_JIO_DIR, BL_JIO_CLASS } bl_jio_kind;

/* Receives notices (skipped files, dropped signature files); may be NULL. */
typedef void (*bl_jio_notice_fn)(void *ctx, const char *msg);

typedef struct bl_jio_entry {
    char *name;        /* path inside the input with '/' (owned); a single class
                          file: its base name; directories end in '/' */
    uint8_t *data;     /* class entries: the bytes (owned), else NULL */
    size_t len;        /* bytes in data */
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
    /* Set by bl_jio_precompress (jar outputs): `out` raw-deflated (owned),
     * and its CRC-32; NULL when not done. */
    uint8_t *zout;
    size_t zout_len;
    uint32_t crc;
} bl_jio_entry;

typedef struct bl_jio_input {
    char *path;            /* as given (owned) */
    bl_jio_kind kind;
    bl_jio_entry *entries; /* n entries (owned) */
    size_t n;
} bl_jio_input;

/* A staged output: written under `tmp`, to be renamed to `target`. */
typedef struct bl_jio_staged {
    char *target; /* owned */
    char *tmp;    /* owned; NULL when nothing is staged */
    int is_dir;
} bl_jio_staged;

/* Opens one input (kind from the file system: directory, or a regular file
 * whose name ends in ".class" — else it is read as a zip). On success *out
 * is a new input owned by the caller (bl_jio_free). On failure returns
 * BL_EIO (errno message), BL_EFORMAT (bad archive or entry), BL_ETOOBIG or
 * BL_ENOMEM with "PATH[!ENTRY]: reason" in err. */
bl_err bl_jio_open(const char *path, bl_jio_notice_fn notice, void *ctx, bl_jio_input **out,
                   char *err, size_t errlen);
void bl_jio_free(bl_jio_input *in);

/* Writes the output of `in` to a temporary beside `target` (see above) and
 * records it in *st (owned by the caller: bl_jio_commit or bl_jio_abort, then
 * bl_jio_staged_cleanup). On failure nothing is left on disk and the error
 * (BL_EIO, BL_EFORMAT, BL_ENOMEM) is described in err. */
bl_err bl_jio_stage(const bl_jio_input *in, const char *target, bl_jio_notice_fn notice,
                    void *ctx, bl_jio_staged *st, char *err, size_t errlen);

/* Deflates en->out (zlib level 6, raw) into en->zout when the entry is a
 * deflated jar entry, so that bl_jio_stage hands libzip compressed bytes and
 * the compression runs on the caller's threads. Thread-safe for distinct
 * entries. BL_OK also when there is nothing to do; BL_ENOMEM; BL_EFORMAT
 * (zlib failure). */
bl_err bl_jio_precompress(const bl_jio_input *in, bl_jio_entry *en);

/* Stages a plain file with the given bytes (the method-ID file). */
bl_err bl_jio_stage_bytes(const char *target, const void *data, size_t len, bl_jio_staged *st,
                          char *err, size_t errlen);

/* Renames the staged output onto its target and fsyncs the folder. BL_EIO
 * with a message; the staged output is then removed. */
bl_err bl_jio_commit(bl_jio_staged *st, char *err, size_t errlen);
/* Removes the staged output (if any). */
void bl_jio_abort(bl_jio_staged *st);
/* Frees the strings of *st. */
void bl_jio_staged_cleanup(bl_jio_staged *st);

/* 1 when `name` is a jar signature file (META-INF/X.SF, .RSA, .DSA, .EC,
 * META-INF/SIG-*; suffixes case-insensitive, top level of META-INF only). */
int bl_jio_is_signature(const char *name);

/* 1 when a zip entry name is safe to write below an output folder: not
 * empty, not absolute, no ".." component, no backslash, no NUL. */
int bl_jio_name_safe(const char *name);

#endif
