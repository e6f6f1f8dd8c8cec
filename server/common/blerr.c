/* blerr.c — messages for bl_err codes. */
#include "common/blerr.h"

const char *bl_err_str(bl_err e)
{
    switch (e) {
    case BL_OK: return "ok";
    case BL_ENOMEM: return "out of memory";
    case BL_EIO: return "I/O error";
    case BL_EFORMAT: return "malformed input";
    case BL_ETOOBIG: return "input too large";
    case BL_ENOTFOUND: return "not found";
    case BL_EVERSION: return "unsupported format version";
    case BL_EINVAL: return "invalid argument";
    }
    return "unknown error";
}
