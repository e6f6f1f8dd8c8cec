/* fuzz_batch — arbitrary bytes as a binary batch and as its JSON form.
 *
 * As binary: decode; when that succeeds the batch must print as JSON, that
 * JSON must encode, and the result must decode and print identically
 * (to_json ∘ decode ∘ json_to_binary is the identity on printed batches).
 * As JSON text: json_to_binary; when that succeeds its output must decode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes and prints bin into text; 0 on success. */
static int print(const bl_buf *bin, bl_buf *text)
{
    bl_batch b;
    bl_batch_error err;
    if (bl_batch_decode((const uint8_t *)bin->data, bin->len, &b, &err) != BL_OK)
        return -1;
    bl_err e = bl_batch_to_json(&b, text);
    bl_batch_cleanup(&b);
    return e == BL_OK ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bl_batch b;
    bl_batch_error err;
    bl_buf text, bin, text2;
    bl_buf_init(&text, 0);
    bl_buf_init(&bin, 0);
    bl_buf_init(&text2, 0);

    if (bl_batch_decode(data, size, &b, &err) == BL_OK) {
        if (bl_batch_to_json(&b, &text) != BL_OK)
            abort(); /* a decoded batch always prints */
        bl_batch_cleanup(&b);
        if (bl_batch_json_to_binary(text.data, text.len, &bin, &err) != BL_OK)
            abort(); /* printed JSON always encodes */
        if (print(&bin, &text2) != 0 || text2.len != text.len ||
            memcmp(text2.data, text.data, text.len) != 0)
            abort(); /* and prints the same again */
    } else if (!err.message || err.offset > size) {
        abort();
    }

    bl_buf_reset(&bin);
    bl_buf_reset(&text2);
    if (bl_batch_json_to_binary((const char *)data, size, &bin, &err) == BL_OK) {
        if (print(&bin, &text2) != 0)
            abort(); /* encoded output always decodes */
    } else if (err.message && err.offset > size) {
        abort();
    }
    bl_buf_cleanup(&text);
    bl_buf_cleanup(&bin);
    bl_buf_cleanup(&text2);
    return 0;
}
