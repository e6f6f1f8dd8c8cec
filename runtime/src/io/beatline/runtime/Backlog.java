package io.beatline.runtime;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

/**
 * The dumper's work in progress: records copied out of the rings
 * ({@link Recorder#dump}) and not yet spooled, cut into batches one at a
 * time ({@link #next}). Copying is fast and compressing is slow, so the
 * dumper copies the rings again between batches and {@link #add appends}
 * the new windows here; a thread's windows stay in write order, and a
 * window that continues the thread's queued records (not truncated) is
 * appended to them, so its records go on in the same segment when they fit
 * in the batch.
 *
 * <p>Cutting follows the segment rules of {@link Session#split} (carried
 * enters, {@code since_us}, {@code continues}, fresh segments after a
 * truncation or an unknown stack; schema/batch-format.md, "Segments"):
 * each thread's {@link OpenCalls} replays every segment in record order, and
 * no batch holds two segments of one thread.
 *
 * <p>{@link #held()} counts the records of every copied window still
 * referenced (a window is released once all its records are cut), which the
 * dumper keeps under {@code maxPendingRecords}. Dumper only (under the dump
 * lock); not thread-safe.
 */
final class Backlog {
    /** One thread's queued records: its windows (chunks) in write order. */
    private static final class Entry {
        final long id;
        String name;
        final boolean main;
        /** The first window was truncated: the entry's first segment is flagged and fresh. */
        final boolean truncated;
        final OpenCalls calls;
        boolean alive;
        boolean more;
        final ArrayDeque<long[]> chunks = new ArrayDeque<long[]>();
        /** Records of the head chunk already cut. */
        int off;
        /** Records not yet cut. */
        long left;
        /** No segment cut from this entry yet. */
        boolean first = true;

        Entry(Recorder.ThreadDump d, OpenCalls calls) {
            id = d.id;
            name = d.name;
            main = d.main;
            truncated = d.truncated;
            this.calls = calls;
        }
    }

    private final int depth;
    private final ArrayDeque<Entry> queue = new ArrayDeque<Entry>();
    /** Each thread's queued entry, by its OpenCalls (one per ring): where a continuing window is appended. */
    private final IdentityHashMap<OpenCalls, Entry> byThread = new IdentityHashMap<OpenCalls, Entry>();
    private long held;

    /** @param maxBatchRecords records per batch: bounds the stack of entries made without {@link OpenCalls} */
    Backlog(int maxBatchRecords) {
        depth = OpenCalls.depthFor(maxBatchRecords);
    }

    /** Records copied and still held (windows not fully cut yet), records. */
    long held() {
        return held;
    }

    /** Whether nothing is queued. */
    boolean isEmpty() {
        return queue.isEmpty();
    }

    /**
     * Queues a dump's windows, in order (a {@link Recorder#dump}; entries
     * without {@link OpenCalls}, made by hand, are each a new thread).
     */
    void add(List<Recorder.ThreadDump> threads) {
        for (Recorder.ThreadDump d : threads) {
            Entry e = d.calls != null ? byThread.get(d.calls) : null;
            if (e == null || d.truncated) {
                e = new Entry(d, d.calls != null ? d.calls : new OpenCalls(depth));
                queue.add(e);
                byThread.put(e.calls, e); // a truncated window: later windows follow it, not the older entry
            }
            if (d.records.length > 0) {
                e.chunks.add(d.records);
                e.left += d.records.length;
                held += d.records.length;
            }
            e.name = d.name;
            e.alive = d.alive;
            e.more = d.more;
        }
    }

    /**
     * Cuts the next batch: queued records in order, at most {@code max}
     * records (carried enters included), one segment per thread at most.
     * Records keep raw 40-bit times; {@code sinceUs} is in full clock µs
     * ({@link Session#rebase} follows).
     *
     * @param max records per batch, at least 1
     * @param nowUs clock reading (full µs) taken after every queued record was copied
     * @param last whether the session ends with this dump (a thread goes on
     *        only if its ring still holds records)
     * @return the batch's segments, or null when nothing is left to cut
     */
    List<Recorder.ThreadDump> next(int max, long nowUs, boolean last) {
        List<Recorder.ThreadDump> cur = new ArrayList<Recorder.ThreadDump>();
        IdentityHashMap<OpenCalls, Boolean> inBatch = new IdentityHashMap<OpenCalls, Boolean>();
        int room = max;
        while (!queue.isEmpty()) {
            Entry t = queue.peekFirst();
            OpenCalls oc = t.calls;
            if (inBatch.containsKey(oc)) {
                break; // a thread's next segment goes into the next batch
            }
            boolean goesOn = t.alive && !last || t.more;
            int left = (int) Math.min(Integer.MAX_VALUE, t.left);
            boolean fresh = t.first && t.truncated || !oc.canCarry(nowUs)
                    || oc.depth() + Math.min(1, left) > max; // cannot fit (a stack deeper than depthFor(max))
            if (fresh) {
                oc.clear();
            }
            int c = oc.depth();
            if (c == 0 && left == 0 && !t.truncated) {
                oc.chained = false; // nothing left to carry (they could not be): no entry
                remove(t);
                continue;
            }
            if (room == 0 || room < c + Math.min(1, left)) {
                break; // the batch is full
            }
            int n = Math.min(room - c, left);
            long[] part = take(t, c, n);
            for (int k = 0; k < c; k++) {
                part[k] = ((long) oc.id(k) << Recorder.ID_SHIFT) | (oc.enterUs(k) & Recorder.T_MASK);
            }
            long since = oc.lastUs;
            boolean known = oc.replay(part, c, c + n, nowUs, c == 0);
            if (n > 0) { // where this segment ends: its last record, or since_us if later (clock steps back)
                long end = Session.full(nowUs, part[c + n - 1]);
                oc.lastUs = c > 0 ? Math.max(since, end) : end;
            }
            room -= c + n;
            boolean continues = known && (t.left > 0 || goesOn);
            oc.chained = continues;
            if (!known) {
                oc.clear();
            }
            cur.add(new Recorder.ThreadDump(t.id, t.name, t.main, t.first && t.truncated, part, c,
                    c > 0 ? since : 0, continues));
            t.first = false;
            inBatch.put(oc, Boolean.TRUE);
            if (t.left == 0) {
                remove(t);
            }
        }
        return cur.isEmpty() ? null : cur;
    }

    /** A segment array: {@code c} slots for carried enters, then the entry's next {@code n} records. */
    private long[] take(Entry t, int c, int n) {
        long[] head = t.chunks.peekFirst();
        if (c == 0 && t.off == 0 && head != null && head.length == n) {
            t.chunks.removeFirst(); // a whole window: no copy
            t.left -= n;
            held -= n;
            return head;
        }
        long[] part = new long[c + n];
        int at = c;
        while (at < c + n) {
            head = t.chunks.peekFirst();
            int k = Math.min(head.length - t.off, c + n - at);
            System.arraycopy(head, t.off, part, at, k);
            at += k;
            t.off += k;
            if (t.off == head.length) {
                t.chunks.removeFirst();
                held -= head.length;
                t.off = 0;
            }
        }
        t.left -= n;
        return part;
    }

    /** Drops the head entry {@code t}. */
    private void remove(Entry t) {
        queue.pollFirst();
        if (byThread.get(t.calls) == t) {
            byThread.remove(t.calls);
        }
        for (long[] c : t.chunks) {
            held -= c.length; // none left when all were cut
        }
        t.chunks.clear();
    }
}
