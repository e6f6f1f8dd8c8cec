/* fuzz_mapping — arbitrary bytes as a mapping file: parse, build the index,
 * open it, retrace a fixed trace and symbolicate a method with it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"
#include "symbol/symbolicate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char trace[] = "java.lang.NullPointerException: x\n"
                            "\tat a.a(SourceFile:1)\n"
                            "\tat a.b(Unknown Source)\n"
                            "\tat a.a.a(SourceFile:0)\n"
                            "\tat b.a(:3)\n"
                            "Caused by: a.b\n"
                            "\tat kj.a(SourceFile:65535)\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bl_buf img;
    bl_buf_init(&img, 0);
    if (bl_mapindex_build((const char *)data, size, NULL, &img, NULL) == BL_OK) {
        bl_mapindex *mi;
        if (bl_mapindex_from_memory(img.data, img.len, &mi) == BL_OK) {
            bl_buf out, store;
            bl_buf_init(&out, 0);
            bl_buf_init(&store, 0);
            bl_retrace_opts o = { 1 };
            bl_retrace_text(mi, &o, trace, sizeof trace - 1, &out);
            bl_symbol s;
            bl_symbolicate_method(mi, "a", "a", "(La/b;I)V", &store, &s);
            bl_buf_cleanup(&out);
            bl_buf_cleanup(&store);
            bl_mapindex_close(mi);
        } else {
            abort(); /* a built image must always open */
        }
    }
    bl_buf_cleanup(&img);
    return 0;
}
