package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.HashMap;
import java.util.Map;
import org.junit.Test;

/** Issue 13: the block event line's caps and escaping, and the new settings' checks. */
public class BlockEventTest {
    private static DispatchMonitor.Block block(String target, String[] stack) {
        return new DispatchMonitor.Block("awt", target, null, 0, 0, 5000, 905000, stack != null, stack);
    }

    @Test
    public void eventLineOfTheContract() {
        String e = Blocks.event(block("java.awt.event.InvocationEvent/demo.Main$1", null), 2, 1000, "dev-1");
        assertEquals("{\"type\":\"block\",\"thread\":2,\"begin_us\":4000,\"end_us\":904000,"
                + "\"target\":\"java.awt.event.InvocationEvent/demo.Main$1\",\"kind\":\"awt\",\"device\":\"dev-1\","
                + "\"anr\":false}\n", e);
    }

    @Test
    public void targetAndFramesAreCappedAndEscaped() {
        StringBuilder t = new StringBuilder("q\"b\\n\n\u0001");
        while (t.length() < 2000) {
            t.append('\u00e9'); // 2 bytes in UTF-8: the cut must not split it
        }
        String[] stack = new String[300];
        for (int i = 0; i < stack.length; i++) {
            stack[i] = "f" + i;
        }
        String e = Blocks.event(block(t.toString(), stack), 0, 0, "d");
        String target = e.substring(e.indexOf("\"target\":\"") + 10, e.indexOf("\",\"kind\""));
        assertTrue(target, target.startsWith("q\\\"b\\\\n\\u000a\\u0001"));
        String raw = Blocks.cut(t.toString(), Blocks.MAX_TARGET);
        assertTrue(raw.getBytes(BatchEncoder.UTF8).length <= 512 && raw.getBytes(BatchEncoder.UTF8).length >= 511);
        assertTrue("256 frames at most", e.contains("\"f255\"") && !e.contains("\"f256\""));
        assertTrue(e.contains("\"anr\":true,\"stack\":[\"f0\","));
        assertTrue(e.endsWith("]}\n"));
        assertEquals("one line", e.indexOf('\n'), e.length() - 1);
    }

    private static void refused(String prop, String value, String words) {
        Map<String, String> p = new HashMap<String, String>();
        p.put("beatline.server", "http://127.0.0.1:9");
        p.put("beatline.app", "a");
        p.put("beatline.key", "k");
        p.put("beatline." + prop, value);
        try {
            BeatlineConfig.fromSystem(p, null);
            fail(prop + "=" + value + " accepted");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(words));
        }
    }

    @Test
    public void badSettingsAreRefusedByName() {
        refused("uploadMode", "some", "uploadMode must be full or triggered");
        refused("dispatch", "swing", "dispatch must be none or awt");
        refused("blockThresholdMs", "0", "blockThresholdMillis must be >= 1");
        refused("blockThresholdMs", "x", "beatline.blockThresholdMs must be an integer");
        refused("anrThresholdMs", "-1", "anrThresholdMillis must be >= 0");
        refused("sampleRate", "1.5", "sampleRate must be 0..1");
        refused("sampleRate", "half", "beatline.sampleRate must be a number");
        refused("tickerPeriodUs", "1", "tickerPeriodMicros must be 10..1000000");
    }
}
