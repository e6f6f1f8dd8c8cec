/*
 * buildinfo.h — the build id of beatline-instrument (issue 14; contract in
 * schema/build-id.md): a random UUID per build, the build name people see
 * and the server keys the build by (VERSION+SHORT), and the generated class
 * io/beatline/build/BeatlineBuild that carries both into the app, where the
 * runtime reads them.
 */
#ifndef BL_BUILDINFO_H
#define BL_BUILDINFO_H

#include <stddef.h>
#include "common/blerr.h"
#include "common/buf.h"

/* Internal name and path (below a class folder) of the generated class. */
#define BL_BUILDINFO_CLASS "io/beatline/build/BeatlineBuild"
#define BL_BUILDINFO_CLASS_FILE "io/beatline/build/BeatlineBuild.class"
/* A build name is at most this many bytes (docs/api.md: 1–128 bytes). */
#define BL_BUILDINFO_NAME_MAX 128

/* A new random UUID (RFC 9562 version 4, variant 10), lowercase
 * "8-4-4-4-12" text in out (NUL-terminated), from /dev/urandom. BL_EIO with
 * a message in err when the random bytes cannot be read. */
bl_err bl_buildinfo_new_id(char out[37], char *err, size_t errlen);

/* The build name of version name `version` (may be NULL or "") and build id
 * `id` (lowercase UUID): "VERSION+SHORT", or SHORT alone without a version
 * (SHORT: the id's first 12 hex digits). Written NUL-terminated to out
 * (BL_BUILDINFO_NAME_MAX + 1 bytes). BL_EINVAL with a message in err when
 * the version name is not valid UTF-8, holds a control character, '/' or
 * '\', or makes the name longer than BL_BUILDINFO_NAME_MAX bytes. */
bl_err bl_buildinfo_name(const char *version, const char *id,
                         char out[BL_BUILDINFO_NAME_MAX + 1], char *err, size_t errlen);

/* Appends the class file of BL_BUILDINFO_CLASS to out: public final, no
 * methods, three public static final String constants BUILD = build,
 * BUILD_ID = id, VERSION_NAME = version ("" when NULL); class-file version
 * 52. The strings must be valid UTF-8 (they are written in the class
 * file's modified UTF-8: NUL as C0 80, characters above U+FFFF as surrogate
 * pairs). BL_EINVAL (not UTF-8, or a string over 65,535 bytes once
 * encoded), BL_ENOMEM / BL_ETOOBIG from out. */
bl_err bl_buildinfo_class(const char *build, const char *id, const char *version, bl_buf *out);

#endif
