/*
 * probe.c — probe insertion (see probe.h). Milestone 1: identity only.
 */
#include "probe.h"

#include <stdio.h>

bl_err bl_probe_instrument(bl_cf *cf, const uint32_t *ids, const bl_probe_opts *opts,
                           bl_buf *out, size_t *n_done, char *err, size_t errlen)
{
    (void)opts;
    size_t len;
    const uint8_t *d = bl_cf_bytes(cf, &len);
    if (n_done)
        *n_done = 0;
    for (size_t i = 0; i < bl_cf_method_count(cf); i++)
        if (ids[i] != BL_PROBE_NO_ID && bl_cf_method_at(cf, i)->code_length) {
            if (errlen)
                snprintf(err, errlen, "probe insertion not implemented yet");
            return BL_EINVAL;
        }
    return bl_buf_append(out, d, len);
}
