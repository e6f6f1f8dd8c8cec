/* fuzz_retrace — arbitrary bytes as a stack trace, retraced with a fixed
 * mapping that uses every feature (inline, outline, rewrite, synthesized). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/mapindex.h"
#include "symbol/retrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char mapping[] =
    "# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\n"
    "com.example.Main -> a:\n"
    "# {\"id\":\"sourceFile\",\"fileName\":\"Main.kt\"}\n"
    "    1:1:void $r8$lambda$x():0:0 -> a\n"
    "      # {\"id\":\"com.android.tools.r8.synthesized\"}\n"
    "    2:4:int com.example.Util.parse(java.lang.String):40:42 -> a\n"
    "    2:4:void run():10 -> a\n"
    "      # {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":[\"throws(Ljava/lang/NullPointerException;)\"],\"actions\":[\"removeInnerFrames(1)\"]}\n"
    "    void noRange():42:44 -> b\n"
    "    0:0:void zero():7:7 -> c\n"
    "    0:65535:void all():1 -> d\n"
    "outline.Class -> b:\n"
    "    1:2:int some.inlinee():75:76 -> a\n"
    "    1:2:int outline():0 -> a\n"
    "    # {'id':'com.android.tools.r8.outline'}\n"
    "outline.Callsite -> x:\n"
    "    1:1:int caller(int):0:0 -> s\n"
    "    # {'id':'com.android.tools.r8.outlineCallsite','positions':{'1':10,'2':11}}\n"
    "    10:11:int caller(int):23:24 -> s\n"
    "com.example.Ex -> kj:\n";

static bl_mapindex *mi;
static bl_buf img;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!mi) {
        bl_buf_init(&img, 0);
        if (bl_mapindex_build(mapping, sizeof mapping - 1, NULL, &img, NULL) ||
            bl_mapindex_from_memory(img.data, img.len, &mi))
            abort();
    }
    bl_buf out;
    bl_buf_init(&out, 0);
    bl_retrace_opts o = { size > 0 && (data[0] & 1) };
    bl_retrace_text(mi, &o, (const char *)data, size, &out);
    bl_buf_cleanup(&out);
    return 0;
}
