/* fuzz_index — arbitrary bytes as an index image (a corrupted file on the
 * server's disk): opening must refuse or lookups must stay in bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void *al = NULL;
    if (posix_memalign(&al, 8, size ? size : 8))
        return 0;
    memcpy(al, data, size);
    bl_mapindex *mi;
    if (bl_mapindex_from_memory(al, size, &mi) == BL_OK) {
        static const char trace[] = "a.b: x\n\tat a.a(SourceFile:1)\n\tat a.b(Unknown Source)\n"
                                    "\tat b.a(SourceFile:2)\n";
        bl_buf out;
        bl_buf_init(&out, 0);
        bl_retrace_text(mi, NULL, trace, sizeof trace - 1, &out);
        bl_mapindex_methods_by_orig(mi, "a", 1, "b", 1, NULL, NULL);
        bl_buf_cleanup(&out);
        bl_mapindex_close(mi);
    }
    free(al);
    return 0;
}
