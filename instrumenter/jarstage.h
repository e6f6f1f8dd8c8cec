/*
 * jarstage.h — the outputs of beatline-instrument: each input's
 * instrumented copy (and plain files such as the method-ID file) written
 * beside its target under a temporary name, then renamed into place
 * (jarstage.c). The inputs and their entries are jario.h's.
 *
 * bl_jio_stage produces the output of one input beside its
 * target, under a temporary name (".NAME.blXXXXXX" in the target's
 * folder): jar -> jar, directory -> directory, class -> class. Entries whose
 * `out` is set get those bytes; every other entry is copied unchanged (jar:
 * raw compressed bytes, name, order, timestamps, extra fields and
 * compression kept by libzip; a replaced class entry keeps its timestamp and
 * its compression method: stored stays stored, anything else is deflated:
 * libdeflate level BL_JIO_DEFLATE_LEVEL, by bl_jio_precompress on the
 * caller's threads, handed to libzip finished). A jar of at most
 * BL_JIO_INMEM_MAX bytes is laid out by libzip in memory and written with
 * one write. When any class entry of a jar changes, its
 * signature files (META-INF/X.SF, .RSA, .DSA, .EC, META-INF/SIG-*) are left
 * out, with a notice; META-INF/MANIFEST.MF is copied unchanged (its
 * per-entry digests are inert without the signature files). Files are
 * fsync'ed (a folder output: one syncfs for the whole tree). bl_jio_commit
 * renames the staged output onto the target (replacing an existing one; a directory by an atomic exchange where the
 * file system allows it) and fsyncs the folder; bl_jio_abort removes it.
 */
#ifndef BL_JARSTAGE_H
#define BL_JARSTAGE_H

#include <stddef.h>
#include "common/blerr.h"
#include "jario.h"

/* A staged output: written under `tmp`, to be renamed to `target`. */
typedef struct bl_jio_staged {
    char *target; /* owned */
    char *tmp;    /* owned; NULL when nothing is staged */
    int is_dir;
} bl_jio_staged;

/* Writes the output of `in` to a temporary beside `target` (see above) and
 * records it in *st (owned by the caller: bl_jio_commit or bl_jio_abort, then
 * bl_jio_staged_cleanup). On failure nothing is left on disk and the error
 * (BL_EIO, BL_EFORMAT, BL_ENOMEM) is described in err. */
bl_err bl_jio_stage(const bl_jio_input *in, const char *target, bl_jio_notice_fn notice,
                    void *ctx, bl_jio_staged *st, char *err, size_t errlen);

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

#endif
