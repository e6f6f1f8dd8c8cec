/*
 * blerr.h — the one error enum of Beatline's C code.
 *
 * Functions return a bl_err and pass results through out-parameters.
 * bl_err_str() gives a stable, human-readable text for each code; its switch
 * has no default so the compiler flags a code without a message.
 */
#ifndef BL_ERR_H
#define BL_ERR_H

typedef enum bl_err {
    BL_OK = 0,
    BL_ENOMEM,    /* an allocation failed */
    BL_EIO,       /* a read, write, open, mmap or fsync failed (see errno) */
    BL_EFORMAT,   /* malformed input (mapping line, index file, stack trace) */
    BL_ETOOBIG,   /* input exceeds a documented size limit */
    BL_ENOTFOUND, /* the looked-up name is not known */
    BL_EVERSION,  /* file written by an unsupported format version */
    BL_EINVAL     /* invalid argument from the caller */
} bl_err;

/* Returns a static string describing `e`; never NULL. */
const char *bl_err_str(bl_err e);

#endif
