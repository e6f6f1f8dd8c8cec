/*
 * fuzz_classfile.c — libFuzzer target for the instrumenter core: bytes as a
 * class file. Parse; when that succeeds, instrument every method (ids 0, 1,
 * ... with a stride so every push form occurs), and the output must parse
 * again. Then the same with no ids, which must give back the input.
 * Never crash, hang, leak or read out of bounds (ASan+UBSan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "classfile.h"
#include "probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_warn(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bl_cf *cf = NULL;
    char err[256];
    if (bl_cf_parse(data, size, &cf, err, sizeof err) != BL_OK)
        return 0;
    size_t n = bl_cf_method_count(cf);
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        abort();
    uint32_t stride = size > 0 ? data[size - 1] * 131u + 1 : 1;
    for (size_t i = 0; i < n; i++)
        ids[i] = (uint32_t)(i * stride) % (BL_PROBE_MAX_ID + 1);
    bl_probe_opts o = {"io/beatline/runtime/Beatline", no_warn, NULL, 0};
    bl_buf out;
    bl_buf_init(&out, 0);
    if (bl_probe_instrument(cf, ids, &o, &out, NULL, err, sizeof err) == BL_OK) {
        bl_cf *cf2 = NULL;
        if (bl_cf_parse((const uint8_t *)out.data, out.len, &cf2, err, sizeof err) != BL_OK)
            abort(); /* the rewriter wrote something its own reader refuses */
        bl_cf_free(cf2);
    }
    bl_buf_reset(&out);
    for (size_t i = 0; i < n; i++)
        ids[i] = BL_PROBE_NO_ID;
    if (bl_probe_instrument(cf, ids, &o, &out, NULL, err, sizeof err) != BL_OK ||
        out.len != size || memcmp(out.data, data, size) != 0)
        abort(); /* no ids: byte-identical */
    bl_buf_cleanup(&out);
    free(ids);
    bl_cf_free(cf);
    return 0;
}
