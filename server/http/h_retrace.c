/*
 * h_retrace.c — POST /v1/apps/{app}/builds/{build}/retrace: stack-trace text
 * in (any Content-Encoding), retraced text out (text/plain), with the
 * build's mapping (symbol/retrace.h rules). 404 when the build has no
 * mapping.
 */
#include "http/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"

enum MHD_Result bl_h_retrace(struct MHD_Connection *c, bl_http *h, req *r)
{
    char dir[BL_PATH_MAX];
    bl_err de = bl_http_build_dir(h, r, r->app_id, r->build, dir);
    if (de == BL_EINVAL)
        return bl_reply_error(c, h, 400, "bad build name");
    if (de == BL_ETOOBIG)
        return bl_reply_error(c, h, 500, "the build's mapping is over --max-mapping");
    if (de == BL_ENOMEM)
        return bl_reply_error(c, h, 503, "the server is busy with other requests; retry later");
    if (de)
        return bl_reply_error(c, h, 503, "cannot fetch the build's mapping from the "
                                         "database; try again");
    bl_mapindex *mi;
    bl_err e = bl_datadir_open_index(h->data_dir, dir, &mi, NULL);
    int err = errno;
    if (e == BL_ENOTFOUND) {
        char msg[300];
        snprintf(msg, sizeof msg, "build '%s' has no mapping", r->build);
        return bl_reply_error(c, h, 404, msg);
    }
    if (e == BL_ENOMEM)
        return bl_reply_error(c, h, 503, "out of memory");
    if (e == BL_EIO && (err == EMFILE || err == ENFILE))
        return bl_reply_error(c, h, 503, "out of file descriptors; try again");
    if (e)
        return bl_reply_error(c, h, 500, "the build's mapping index cannot be opened or "
                                         "rebuilt from its mapping");
    const char *v = bl_arg(c, "verbose");
    bl_retrace_opts o = { v && (!strcmp(v, "true") || !strcmp(v, "1")) };
    /* The answer goes into a buffer charged to the in-flight budget before
     * it is allocated, sized from the trace and never grown: when it is too
     * small the trace is retraced again into one four times the size, up
     * to the 64 MiB cap (ambiguous mappings multiply frames). */
    size_t want = r->body.len * 2 + 4096, cap = (size_t)64 << 20;
    if (want > cap)
        want = cap;
    bl_buf out;
    for (;;) {
        bl_buf_init(&out, want);
        e = bl_req_reserve(r, &out, want);
        if (!e)
            e = bl_retrace_text(mi, &o, r->body.data ? r->body.data : "", r->body.len, &out);
        if (e != BL_ETOOBIG || want == cap)
            break;
        bl_req_buf_free(r, &out);
        want = want > cap / 4 ? cap : want * 4;
    }
    bl_mapindex_close(mi);
    if (!e)
        return bl_reply_buf(c, h, 200, "text/plain; charset=utf-8", &out);
    bl_req_buf_free(r, &out);
    return e == BL_ETOOBIG ? bl_reply_error(c, h, 413, "the retraced text would exceed 64 MiB; "
                                                       "send a shorter stack trace")
                           : bl_reply_error(c, h, 503, "out of memory");
}
