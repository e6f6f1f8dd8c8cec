package io.beatline.runtime;

import java.nio.charset.Charset;
import java.util.List;
import java.util.UUID;

/**
 * Writes batch wire format version 1 (schema/batch-format.md): fixed header
 * (44 bytes), five strings, thread table, zero padding to a multiple of 8,
 * records, events. Little-endian throughout.
 *
 * <p>Strings are UTF-8 (RFC 3629) as Java's encoder writes them: unpaired
 * surrogates become {@code '?'}, U+0000 is one zero byte. A string over
 * 65,535 bytes is cut at the last whole character that fits (format limit,
 * "Limits"). Records are written as given: callers pass records whose
 * {@code t_us} is already relative to {@code originWallUs}'s monotonic time,
 * and so is each continued segment's {@code since_us}.
 */
final class BatchEncoder {
    static final Charset UTF8 = Charset.forName("UTF-8");
    static final int MAX_STRING = 65535;
    static final int FIXED_HEADER = 44;

    private BatchEncoder() {
    }

    /** Header fields of a batch (section "Header"). */
    static final class Header {
        final UUID batchId;
        final long originWallUs;
        final int sdkLevel;
        final String app;
        final String build;
        final String sessionId;
        final String deviceModel;
        final String osVersion;
        /** Header field added by issue 13: the clock's resolution, µs (0: not stated). */
        final long clockResolutionUs;
        /**
         * Header field added by issue 14: the Android process name of a batch
         * recorded outside the app's main process; null (absent) in the main
         * process and on the JVM.
         */
        String process;

        Header(UUID batchId, long originWallUs, int sdkLevel, String app, String build, String sessionId,
                String deviceModel, String osVersion) {
            this(batchId, originWallUs, sdkLevel, app, build, sessionId, deviceModel, osVersion, 0);
        }

        Header(UUID batchId, long originWallUs, int sdkLevel, String app, String build, String sessionId,
                String deviceModel, String osVersion, long clockResolutionUs) {
            this.clockResolutionUs = clockResolutionUs;
            this.batchId = batchId;
            this.originWallUs = originWallUs;
            this.sdkLevel = sdkLevel;
            this.app = app;
            this.build = build;
            this.sessionId = sessionId;
            this.deviceModel = deviceModel;
            this.osVersion = osVersion;
        }
    }

    /** UTF-8 bytes of s, cut to at most 65,535 bytes at a character boundary. */
    static byte[] utf8(String s) {
        byte[] b = (s == null ? "" : s).getBytes(UTF8);
        if (b.length <= MAX_STRING) {
            return b;
        }
        int n = MAX_STRING;
        while (n > 0 && (b[n] & 0xC0) == 0x80) {
            n--; // b[n] continues a sequence: cut before the sequence's lead byte
        }
        byte[] cut = new byte[n];
        System.arraycopy(b, 0, cut, 0, n);
        return cut;
    }

    /**
     * Encodes one batch. Each thread entry's flags: bit 0 {@code main}, bit 1
     * {@code truncated}, bit 2 {@code continued} when {@code carried} &gt; 0 —
     * then {@code u32 n_carried} and {@code u64 since_us} follow
     * {@code n_records} — and bit 3 {@code continues}.
     *
     * @param threads thread table order (segments); each one's records in
     *        write order, times in µs since the batch origin
     * @param events JSON lines, each ended by {@code \n} (may be empty, never null)
     * @return the batch bytes
     * @throws IllegalArgumentException when the batch would exceed 2 GiB or
     *         65,536 threads, or a segment is not valid: {@code carried} not
     *         in 0 … its records, {@code sinceUs} not in 0 … 2^40 − 1, a
     *         carried record that is an exit
     */
    static byte[] encode(Header h, List<Recorder.ThreadDump> threads, byte[] events) {
        byte[][] hs = {utf8(h.app), utf8(h.build), utf8(h.sessionId), utf8(h.deviceModel), utf8(h.osVersion)};
        int n = threads.size();
        if (n > 65536) {
            throw new IllegalArgumentException("more than 65,536 threads in a batch");
        }
        byte[][] names = new byte[n][];
        long size = FIXED_HEADER;
        for (byte[] s : hs) {
            size += 2 + s.length;
        }
        byte[] proc = h.process == null ? null : utf8(h.process);
        boolean res = h.clockResolutionUs > 0 || proc != null;
        if (res) {
            size += 4; // u32 clock_resolution_us (a later header field, schema/batch-format.md)
        }
        if (proc != null) {
            size += 2 + proc.length; // str process (issue 14), after clock_resolution_us
        }
        final long headerSize = size;
        size += 4;
        long records = 0;
        for (int i = 0; i < n; i++) {
            Recorder.ThreadDump t = threads.get(i);
            names[i] = utf8(t.name);
            size += 8 + 2 + names[i].length + 1 + 4;
            records += t.records.length;
            if (t.carried != 0) {
                if (t.carried < 0 || t.carried > t.records.length) {
                    throw new IllegalArgumentException("thread " + t.id + ": n_carried " + t.carried + " not in 1.."
                            + t.records.length);
                }
                if (t.sinceUs < 0 || t.sinceUs > Recorder.T_MASK) {
                    throw new IllegalArgumentException("thread " + t.id + ": since_us " + t.sinceUs
                            + " not in 0..2^40-1");
                }
                for (int k = 0; k < t.carried; k++) {
                    if (t.records[k] < 0) {
                        throw new IllegalArgumentException("thread " + t.id + ": carried record " + k + " is an exit");
                    }
                }
                size += 4 + 8;
            }
        }
        size = (size + 7) & ~7L;
        size += records * 8 + 4 + events.length;
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("batch over 2 GiB");
        }
        Out o = new Out((int) size);
        o.bytes(new byte[] {'B', 'E', 'A', 'T', 'L', 'I', 'N', 'E'});
        o.u16(1);
        o.u16(0);
        o.u32(headerSize);
        o.u64(h.batchId.getMostSignificantBits(), true);
        o.u64(h.batchId.getLeastSignificantBits(), true);
        o.u64(h.originWallUs, false);
        o.u32(h.sdkLevel & 0xFFFFFFFFL);
        for (byte[] s : hs) {
            o.str(s);
        }
        if (res) {
            o.u32(Math.min(Math.max(0, h.clockResolutionUs), 0xFFFFFFFFL));
        }
        if (proc != null) {
            o.str(proc);
        }
        o.u32(n);
        for (int i = 0; i < n; i++) {
            Recorder.ThreadDump t = threads.get(i);
            o.u64(t.id, false);
            o.str(names[i]);
            o.b[o.p++] = (byte) ((t.main ? 1 : 0) | (t.truncated ? 2 : 0) | (t.carried != 0 ? 4 : 0)
                    | (t.continues ? 8 : 0));
            o.u32(t.records.length);
            if (t.carried != 0) {
                o.u32(t.carried);
                o.u64(t.sinceUs, false);
            }
        }
        while ((o.p & 7) != 0) {
            o.b[o.p++] = 0;
        }
        java.nio.LongBuffer recs = java.nio.ByteBuffer.wrap(o.b, o.p, (int) (records * 8))
                .order(java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer();
        for (int i = 0; i < n; i++) {
            recs.put(threads.get(i).records); // bulk little-endian stores: 8 bytes a record
        }
        o.p += (int) (records * 8);
        o.u32(events.length);
        o.bytes(events);
        if (o.p != o.b.length) {
            throw new IllegalStateException("batch size mismatch");
        }
        return o.b;
    }

    /** A little-endian byte writer over a fixed array. */
    private static final class Out {
        final byte[] b;
        int p;

        Out(int size) {
            b = new byte[size];
        }

        void bytes(byte[] s) {
            System.arraycopy(s, 0, b, p, s.length);
            p += s.length;
        }

        void u16(int v) {
            b[p++] = (byte) v;
            b[p++] = (byte) (v >>> 8);
        }

        void u32(long v) {
            for (int i = 0; i < 4; i++) {
                b[p++] = (byte) (v >>> (8 * i));
            }
        }

        /** 8 bytes, little-endian, or big-endian (UUID text order) when {@code bigEndian}. */
        void u64(long v, boolean bigEndian) {
            for (int i = 0; i < 8; i++) {
                b[p++] = (byte) (v >>> (bigEndian ? 56 - 8 * i : 8 * i));
            }
        }

        void str(byte[] s) {
            u16(s.length);
            bytes(s);
        }
    }
}
