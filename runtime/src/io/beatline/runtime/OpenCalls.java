package io.beatline.runtime;

/**
 * Dumper-side record of one thread's calls that are still open at the end of
 * the last segment emitted for it (schema/batch-format.md, "Segments: calls
 * that span batches"). Never touched by the probes: the dumper replays each
 * segment's records after it cut them (enter pushes, exit pops), so the probe
 * path stays one ring store. One instance per traced thread, created by the
 * dumper at the ring's first dump; used under the dump lock only.
 *
 * <h2>What it keeps</h2>
 * A stack of {@code (methodId, enter time)} — enter times in full clock µs
 * ({@link Clock#nowMicros()}, 64 bits) — at most {@link #maxDepth} deep; whether
 * the last emitted segment set {@code continues} ({@link #chained}); and the
 * full clock time of that segment's last record ({@link #lastUs}), which is the
 * next segment's {@code since_us}.
 *
 * <h2>Replay rules</h2>
 * They follow the server's call-tree rebuild (server/agg/calltree.h) so that
 * the stack at the end of a segment is exactly the set of calls the server has
 * open there:
 * <ul>
 * <li>an enter pushes; deeper than {@link #maxDepth}: the stack is
 *     <b>unknown</b>;</li>
 * <li>an exit of the innermost open call pops it (recursion is exact);</li>
 * <li>an exit of a deeper open call pops it and the calls above it (the server
 *     closes those as unbalanced);</li>
 * <li>an exit with an empty stack in a <b>fresh</b> segment (one that does not
 *     carry: a thread's first, one after a truncation or after an unknown
 *     stack) is the exit of a call entered before the records began: ignored
 *     (the server synthesizes its enter);</li>
 * <li>any other exit that matches nothing (an empty stack in a segment that
 *     carried what was open, or a method not on the stack) means the stack is
 *     not what the thread had: <b>unknown</b>.</li>
 * </ul>
 *
 * <h2>Unknown stack</h2>
 * The segment in which the stack became unknown is emitted without
 * {@code continues} (the server closes what it has open there as incomplete)
 * and the stack is emptied; the thread's next segment is fresh: no
 * {@code continued}, no carried enters. A truncated window (the ring wrapped:
 * records were lost before the dump) is always fresh, as the format requires.
 * In both cases the <em>previous</em> segment may already have gone out with
 * {@code continues}: the calls open at its end are then counted by no segment
 * (the server does not count them there, and nothing re-states them): they
 * are under-counted, never counted twice. The previous segment cannot be
 * amended: it is spooled, maybe uploaded. A call open longer than
 * {@link #MAX_CARRY_AGE_US} (6.3 days: beyond, its 40-bit time cannot be
 * recovered) is treated the same way.
 */
final class OpenCalls {
    /** Stack depth bound when nothing smaller is needed (see {@link #depthFor(int)}). */
    static final int MAX_DEPTH = 4096;
    /** Oldest open call that can be carried, µs (2^39 − 1: {@link Session#rebase} recovers 40-bit times within that). */
    static final long MAX_CARRY_AGE_US = (1L << 39) - 1;

    /** Deepest stack tracked; deeper makes it unknown. */
    final int maxDepth;
    /** Open calls' methodIds and enter times; grown on demand up to maxDepth (16 at first). */
    private int[] ids;
    private long[] times;
    private int depth;
    /** True when the last emitted segment of the thread set {@code continues}: the next one carries the stack. */
    boolean chained;
    /** Full clock µs of the last record of the last emitted segment that had records. */
    long lastUs;

    /**
     * @param maxDepth deepest stack kept, 0 … {@link #MAX_DEPTH} (0: never carries)
     */
    OpenCalls(int maxDepth) {
        this.maxDepth = Math.max(0, Math.min(MAX_DEPTH, maxDepth));
        ids = new int[Math.min(16, this.maxDepth)];
        times = new long[ids.length];
    }

    /**
     * The depth bound for batches of at most {@code maxBatchRecords} records:
     * carried enters must leave room in a batch for at least half of it, so
     * {@code min(4096, maxBatchRecords / 2)}.
     */
    static int depthFor(int maxBatchRecords) {
        return Math.min(MAX_DEPTH, maxBatchRecords / 2);
    }

    /** Calls open now (stack depth). */
    int depth() {
        return depth;
    }

    /** MethodId of open call {@code k} (0 = outermost). */
    int id(int k) {
        return ids[k];
    }

    /** Enter time of open call {@code k} (0 = outermost), full clock µs. */
    long enterUs(int k) {
        return times[k];
    }

    /** Forgets every open call (the next segment starts fresh). */
    void clear() {
        depth = 0;
    }

    /**
     * Whether the next segment can carry the stack: the previous segment set
     * {@code continues}, something is open, and the oldest open call is at
     * most {@link #MAX_CARRY_AGE_US} older than {@code nowUs}.
     */
    boolean canCarry(long nowUs) {
        return chained && depth > 0 && nowUs - times[0] <= MAX_CARRY_AGE_US;
    }

    /**
     * Replays records {@code [from, to)} (batch record layout, raw 40-bit
     * times) on the stack. Stops at the first record that makes the stack
     * unknown.
     *
     * @param nowUs the dump's clock reading, full µs: 40-bit record times are
     *        recovered relative to it ({@link Session#full})
     * @param fresh whether the segment carries nothing (see the class rules)
     * @return true when the stack is still known; false when it is unknown
     *         (the caller clears it)
     */
    boolean replay(long[] records, int from, int to, long nowUs, boolean fresh) {
        for (int i = from; i < to; i++) {
            long r = records[i];
            int id = (int) (r >>> Recorder.ID_SHIFT) & Recorder.ID_MASK;
            if (r >= 0) {
                if (depth == ids.length) {
                    if (depth == maxDepth) {
                        return false;
                    }
                    int cap = Math.min(maxDepth, depth * 2);
                    ids = java.util.Arrays.copyOf(ids, cap);
                    times = java.util.Arrays.copyOf(times, cap);
                }
                ids[depth] = id;
                times[depth] = Session.full(nowUs, r);
                depth++;
                continue;
            }
            int k = depth - 1;
            while (k >= 0 && ids[k] != id) {
                k--;
            }
            if (k >= 0) {
                depth = k; // the innermost frame, or a deeper one and every frame above it
            } else if (depth > 0 || !fresh) {
                return false;
            } // else: an exit of a call entered before a fresh segment began
        }
        return true;
    }
}
