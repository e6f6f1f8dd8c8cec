package io.beatline.runtime;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPInputStream;

/**
 * A small reader of spooled batches (schema/batch-format.md) for the issue 13
 * tests: header strings, the header's clock resolution, thread segments,
 * events. Strict enough for tests; beatline-batch is the reference decoder.
 */
final class BatchReader {
    static final class Seg {
        long id;
        String name;
        int flags;
        int carried;
        long sinceUs;
        long[] records;

        boolean main() {
            return (flags & 1) != 0;
        }

        /** methodIds of the records, enters positive, exits negative. */
        List<Integer> ids() {
            List<Integer> out = new ArrayList<Integer>();
            for (long r : records) {
                int id = (int) (r >>> 40) & 0x7FFFFF;
                out.add(r < 0 ? -id : id);
            }
            return out;
        }
    }

    String sessionId;
    String build;
    String deviceModel;
    String osVersion;
    int sdkLevel;
    long clockResolutionUs; // 0: not stated
    String process; // issue 14; null: absent (the main process)
    List<Seg> segs = new ArrayList<Seg>();
    List<String> events = new ArrayList<String>();
    int bytes; // spooled (gzip) size

    static byte[] gunzip(File f) throws IOException {
        InputStream in = new GZIPInputStream(new FileInputStream(f));
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] b = new byte[65536];
            int n;
            while ((n = in.read(b)) > 0) {
                out.write(b, 0, n);
            }
            return out.toByteArray();
        } finally {
            in.close();
        }
    }

    static BatchReader read(File f) throws IOException {
        BatchReader r = parse(gunzip(f));
        r.bytes = (int) f.length();
        return r;
    }

    static BatchReader parse(byte[] b) {
        ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        if (!new String(b, 0, 8, StandardCharsets.US_ASCII).equals("BEATLINE")) {
            throw new IllegalArgumentException("not a batch");
        }
        int headerSize = bb.getInt(12);
        bb.position(44);
        String[] s = new String[5];
        for (int i = 0; i < 5; i++) {
            s[i] = str(bb);
        }
        BatchReader r = new BatchReader();
        r.sessionId = s[2];
        r.build = s[1];
        r.deviceModel = s[3];
        r.osVersion = s[4];
        r.sdkLevel = bb.getInt(40);
        if (headerSize - bb.position() >= 4) {
            r.clockResolutionUs = bb.getInt() & 0xFFFFFFFFL;
        }
        if (headerSize - bb.position() >= 2) {
            r.process = str(bb);
        }
        bb.position(headerSize);
        int n = bb.getInt();
        int[] counts = new int[n];
        for (int i = 0; i < n; i++) {
            Seg g = new Seg();
            g.id = bb.getLong();
            g.name = str(bb);
            g.flags = bb.get() & 0xFF;
            counts[i] = bb.getInt();
            if ((g.flags & 4) != 0) {
                g.carried = bb.getInt();
                g.sinceUs = bb.getLong();
            }
            r.segs.add(g);
        }
        while ((bb.position() & 7) != 0) {
            bb.get();
        }
        for (int i = 0; i < n; i++) {
            long[] rs = new long[counts[i]];
            for (int k = 0; k < rs.length; k++) {
                rs[k] = bb.getLong();
            }
            r.segs.get(i).records = rs;
        }
        int el = bb.getInt();
        String ev = new String(b, bb.position(), el, StandardCharsets.UTF_8);
        for (String line : ev.split("\n")) {
            if (!line.isEmpty()) {
                r.events.add(line);
            }
        }
        return r;
    }

    private static String str(ByteBuffer bb) {
        int len = bb.getShort() & 0xFFFF;
        byte[] x = new byte[len];
        bb.get(x);
        return new String(x, StandardCharsets.UTF_8);
    }

    /** Every batch in a spool directory, oldest first. */
    static List<BatchReader> spool(File dir) throws IOException {
        File[] fs = dir.listFiles();
        List<BatchReader> out = new ArrayList<BatchReader>();
        if (fs == null) {
            return out;
        }
        Arrays.sort(fs);
        for (File f : fs) {
            if (f.getName().endsWith(".blb.gz") && !f.getName().startsWith(".")) {
                out.add(read(f));
            }
        }
        return out;
    }

    /** A numeric field of a one-line JSON object ({@code "name":123}); -1 when absent. */
    static long num(String json, String name) {
        int i = json.indexOf("\"" + name + "\":");
        if (i < 0) {
            return -1;
        }
        int j = i + name.length() + 3;
        int k = j;
        while (k < json.length() && (Character.isDigit(json.charAt(k)) || json.charAt(k) == '-')) {
            k++;
        }
        return Long.parseLong(json.substring(j, k));
    }

    /** A string field ({@code "name":"…"}, no escapes inside); null when absent. */
    static String text(String json, String name) {
        int i = json.indexOf("\"" + name + "\":\"");
        if (i < 0) {
            return null;
        }
        int j = i + name.length() + 4;
        return json.substring(j, json.indexOf('"', j));
    }
}
