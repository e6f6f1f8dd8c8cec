package io.beatline.runtime;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Block events and block windows (issue 13; schema/batch-format.md,
 * "Events", event {@code block}). Static helpers used by {@link Session}.
 */
final class Blocks {
    /** Longest target, bytes (the contract's cap). */
    static final int MAX_TARGET = 512;
    /** Most stack frames, and longest frame in bytes. */
    static final int MAX_FRAMES = 256;
    static final int MAX_FRAME = 512;

    private Blocks() {
    }

    /**
     * The block's ring window as one segment of the main thread, the
     * contract's triggered-mode form: {@code continued} with the calls open
     * at the message's begin that the window closes carried (outermost
     * first, original enter times; found by walking the ring back from the
     * begin), {@code since_us} = the begin, then the window's records;
     * {@code continues} when calls stay open at its end. When those enters
     * are no longer in the ring the segment is fresh (not continued): the
     * server then synthesizes the enters of the window's unmatched exits.
     * Times are raw 40-bit clock µs, {@code sinceUs} full clock µs (as
     * {@link Recorder#dump} gives them); {@link #rebase} follows.
     *
     * @param carry false for a gated session ({@link Session#gated}): its
     *        ring holds only earlier windows, not the calls between them, so
     *        an enter found there may belong to another call of the same
     *        method: the segment is always fresh
     */
    static Recorder.ThreadDump window(DispatchMonitor.Block b, boolean carry) {
        Ring ring = b.ring;
        Ring.Window w = ring.copy(b.pBegin, b.pEnd);
        long[] recs = w.records;
        // exits in the window of calls entered before it, innermost first
        List<Integer> need = new ArrayList<Integer>();
        int[] stack = new int[64];
        int depth = 0;
        for (long r : recs) {
            int id = (int) (r >>> Recorder.ID_SHIFT) & Recorder.ID_MASK;
            if (r >= 0) {
                if (depth == stack.length) {
                    stack = java.util.Arrays.copyOf(stack, depth * 2);
                }
                stack[depth++] = id;
            } else if (depth > 0) {
                int k = depth - 1;
                while (k >= 0 && stack[k] != id) {
                    k--;
                }
                depth = k >= 0 ? k : depth - 1;
            } else {
                need.add(id);
            }
        }
        long[] carried = !carry || w.truncated || need.isEmpty() ? new long[0] : openEnters(ring, b.pBegin, need);
        int nc = carried == null ? 0 : carried.length;
        long[] all = new long[nc + recs.length];
        for (int i = 0; i < nc; i++) {
            all[i] = carried[nc - 1 - i]; // outermost first
        }
        System.arraycopy(recs, 0, all, nc, recs.length);
        // open at the end: replay with the carried enters on the stack
        int open = nc;
        for (long r : recs) {
            if (r >= 0) {
                open++;
            } else if (open > 0) {
                open--;
            }
        }
        return new Recorder.ThreadDump(ring.threadId, ring.threadName, true, w.truncated, all, nc, b.beginUs,
                open > 0);
    }

    /**
     * The enters of the calls open at record {@code p} whose exits
     * {@code need} lists (innermost first), innermost first, read backwards
     * from the ring; null when they are not all there (overwritten, or the
     * records do not nest).
     */
    private static long[] openEnters(Ring ring, long p, List<Integer> need) {
        Ring.Window back = ring.copy(p - (ring.mask + 1), p);
        long[] rs = back.records;
        int[] skip = new int[64];
        int sd = 0;
        long[] out = new long[need.size()];
        int found = 0;
        for (int i = rs.length - 1; i >= 0 && found < out.length; i--) {
            long r = rs[i];
            int id = (int) (r >>> Recorder.ID_SHIFT) & Recorder.ID_MASK;
            if (r < 0) {
                if (sd == skip.length) {
                    skip = java.util.Arrays.copyOf(skip, sd * 2);
                }
                skip[sd++] = id;
            } else if (sd > 0) {
                if (skip[sd - 1] != id) {
                    return null;
                }
                sd--;
            } else {
                if (need.get(found) != id) {
                    return null;
                }
                out[found++] = r;
            }
        }
        return found == out.length ? out : null;
    }

    /**
     * Rewrites the segment's times to µs since an origin and returns it: the
     * origin is the earliest of the records, {@code since_us} and
     * {@code beginUs} (so the event's begin is never negative).
     *
     * @param nowUs the clock's reading now (full µs), to recover 40-bit times
     */
    static long rebase(Recorder.ThreadDump t, long beginUs, long nowUs) {
        long origin = beginUs;
        for (long r : t.records) {
            origin = Math.min(origin, Session.full(nowUs, r));
        }
        if (t.carried > 0) {
            origin = Math.min(origin, t.sinceUs);
        }
        long[] rs = t.records;
        for (int i = 0; i < rs.length; i++) {
            rs[i] = (rs[i] & ~Recorder.T_MASK) | (Session.full(nowUs, rs[i]) - origin);
        }
        if (t.carried > 0) {
            t.sinceUs -= origin;
        }
        return origin;
    }

    /**
     * The event line (ended by {@code \n}) of the contract:
     * {@code {"type":"block","thread":T,"begin_us":B,"end_us":E,"target":"…","kind":"…","device":"…","anr":false}}
     * plus {@code "stack":[…]} for an ANR report.
     *
     * @param origin the batch's origin, clock µs (begin and end are made relative to it, never below 0)
     */
    static String event(DispatchMonitor.Block b, int thread, long origin, String device) {
        StringBuilder sb = new StringBuilder(256);
        long begin = Math.max(0, b.beginUs - origin);
        long end = Math.max(begin, b.endUs - origin);
        sb.append("{\"type\":\"block\",\"thread\":").append(thread).append(",\"begin_us\":").append(begin)
                .append(",\"end_us\":").append(end).append(",\"target\":");
        str(sb, cut(b.target, MAX_TARGET));
        sb.append(",\"kind\":");
        str(sb, b.kind);
        sb.append(",\"device\":");
        str(sb, cut(device, 64));
        sb.append(",\"anr\":").append(b.anr);
        if (b.stack != null) {
            sb.append(",\"stack\":[");
            for (int i = 0; i < b.stack.length && i < MAX_FRAMES; i++) {
                if (i > 0) {
                    sb.append(',');
                }
                str(sb, cut(b.stack[i], MAX_FRAME));
            }
            sb.append(']');
        }
        return sb.append("}\n").toString();
    }

    /** s cut to at most max UTF-8 bytes at a character boundary. */
    static String cut(String s, int max) {
        if (s == null) {
            return "";
        }
        byte[] u = s.getBytes(BatchEncoder.UTF8);
        if (u.length <= max) {
            return s;
        }
        int n = max;
        while (n > 0 && (u[n] & 0xC0) == 0x80) {
            n--;
        }
        return new String(u, 0, n, BatchEncoder.UTF8);
    }

    /** Appends s as a JSON string. */
    static void str(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"':
                    sb.append("\\\"");
                    break;
                case '\\':
                    sb.append("\\\\");
                    break;
                default:
                    if (c < 0x20 || Character.isSurrogate(c)) {
                        if (Character.isHighSurrogate(c) && i + 1 < s.length()
                                && Character.isLowSurrogate(s.charAt(i + 1))) {
                            sb.append(c).append(s.charAt(++i));
                        } else if (Character.isSurrogate(c)) {
                            sb.append('?');
                        } else {
                            sb.append(String.format("\\u%04x", (int) c));
                        }
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    /**
     * The per-installation device id kept in {@code <spool>/device-id} (a
     * random UUID made at the first start); a fresh one each start when the
     * file cannot be written.
     */
    static String deviceId(File spoolDir) {
        File f = new File(spoolDir, "device-id");
        try {
            if (f.isFile() && f.length() > 0 && f.length() <= 64) {
                byte[] b = new byte[(int) f.length()];
                FileInputStream in = new FileInputStream(f);
                try {
                    int n = 0;
                    while (n < b.length) {
                        int k = in.read(b, n, b.length - n);
                        if (k < 0) {
                            break;
                        }
                        n += k;
                    }
                    String id = new String(b, 0, n, BatchEncoder.UTF8).trim();
                    if (id.matches("[0-9a-f-]{1,64}")) {
                        return id;
                    }
                } finally {
                    in.close();
                }
            }
        } catch (IOException e) {
            // made anew below
        }
        String id = UUID.randomUUID().toString();
        try {
            spoolDir.mkdirs();
            FileOutputStream out = new FileOutputStream(f);
            try {
                out.write(id.getBytes(BatchEncoder.UTF8));
            } finally {
                out.close();
            }
        } catch (IOException e) {
            // this start's id only
        }
        return id;
    }
}
