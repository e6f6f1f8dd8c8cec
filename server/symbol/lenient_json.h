/*
 * lenient_json.h — read R8's metadata comments, which are JSON written
 * leniently (R8 reads them with Gson's lenient mode): strings may be single-
 * quoted, object keys may be unquoted, keys come in any order.
 *
 *   # {"id":"sourceFile","fileName":"Foo.kt"}
 *   # { id: 'com.android.tools.r8.mapping', version: '2.2' }
 *
 * The text is rewritten to strict JSON (RFC 8259) and parsed with jansson.
 */
#ifndef BL_LENIENT_JSON_H
#define BL_LENIENT_JSON_H

#include <stddef.h>
#include <jansson.h>
#include "common/buf.h"

/*
 * Parses `n` bytes of lenient JSON. `scratch` is a caller-owned buffer reused
 * between calls (its content is overwritten; its cap bounds the text). Returns
 * a new reference the caller must json_decref(), or NULL with *why (may be
 * NULL) set to BL_ENOMEM when memory ran out (here or in jansson) or
 * BL_EFORMAT when the text is not JSON even leniently or is longer than the
 * scratch cap.
 */
json_t *bl_lenient_json_parse(const char *s, size_t n, bl_buf *scratch, bl_err *why);

#endif
