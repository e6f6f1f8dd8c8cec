package io.beatline.runtime;

import java.lang.ref.WeakReference;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * One thread's ring buffer of 64-bit records (the layout of
 * schema/batch-format.md, "Records": bit 63 exit, bits 62..40 methodId, bits
 * 39..0 µs). Single writer (the owning thread), lock-free; one dumper at a
 * time (callers serialise {@link #dump()}; {@link Recorder} does).
 *
 * <h2>Protocol</h2>
 * The writer stores record number {@code p} (counting from 0 since the ring
 * was made) into {@code slots[p & mask]} with a plain store, then publishes
 * {@code p + 1} with a release store ({@code lazySet}). It never waits and
 * never allocates.
 *
 * <p>The dumper reads {@code published} (acquire) as {@code p1}: every record
 * below {@code p1} has been stored. It copies records
 * {@code [max(start, p1 - capacity + 2), p1)}, where {@code start} is the first
 * record not yet dumped, then orders its copy loads before a second acquire
 * read {@code p2} (a volatile store in between: loads before a release store
 * cannot pass it, and a volatile load cannot pass a volatile store). While it
 * copied, the writer may have stored records up to {@code p2 + 1} (record
 * {@code p2} is stored before it is published, and on weakly ordered CPUs
 * the store of {@code p2 + 1} may become visible before the publication of
 * {@code p2 + 1}; the one of {@code p2 + 2} cannot, it follows the release
 * of {@code p2 + 1}). Those overwrite records {@code p2 + 1 - capacity} and
 * {@code p2 + 2 - capacity}, so the dump keeps only records
 * {@code >= p2 + 2 - capacity}: a consistent, contiguous window of what the
 * thread wrote, in order. Because the two newest slots may always be under
 * the writer's pen, a ring of {@code capacity} slots yields at most
 * {@code capacity - 2} records per dump (when the writer was idle, exactly
 * those). The dump is <b>truncated</b> when its first record is not
 * {@code start}, i.e. records were overwritten (or may have been) before
 * they were dumped: the ring wrapped.
 *
 * <p>Records are read whole: Java {@code long} array elements are 64-bit
 * atomic on the 64-bit VMs the runtime targets (HotSpot x86-64/AArch64, ART
 * arm64).
 */
final class Ring {
    private static final AtomicLongFieldUpdater<Ring> PUBLISHED =
            AtomicLongFieldUpdater.newUpdater(Ring.class, "published");

    final long[] slots;
    final int mask;
    /** {@code mask / 4}: record numbers {@code p} with {@code (p & mask & markMask) == 0} are fill marks. */
    private final int markMask;
    /** Records written, as published to dumpers (release store by the writer). */
    private volatile long published;
    /** Dumper's fence target (see the protocol). */
    private volatile long fence;
    /** First record not yet dumped; dumper only. */
    private long start;
    /** Records published when the flush thread last measured the write rate ({@link Recorder#msUntilFill}). */
    long polled;

    /**
     * Whether probes record into this ring: false for {@link #OFF}; a
     * thread's own ring is false only while the runtime runs app code on
     * that thread (an app {@link Clock} read by a probe: re-entry guard,
     * issue 14). A plain field: written and read only by the owning thread
     * ({@link Recorder}), never by the dumper; never written on {@link #OFF}.
     */
    boolean on;
    /**
     * Told at every fill mark ({@link #put}): the ring's first record and
     * then every quarter capacity; null for {@link #OFF} and for rings made
     * without a recorder (tests).
     */
    private final Recorder owner;
    final long threadId;
    final boolean main;
    final WeakReference<Thread> thread;
    /** Thread name as last seen (kept after the thread died). */
    volatile String threadName;
    /**
     * Calls open at the end of the thread's last emitted segment: dumper only
     * (made at the first dump, under the {@link Recorder} lock), never read or
     * written by the probes.
     */
    OpenCalls calls;

    /** The shared ring of untraced threads: records nothing. */
    static final Ring OFF = new Ring();

    private Ring() {
        slots = new long[1];
        mask = 0;
        markMask = 0;
        on = false;
        threadId = -1;
        main = false;
        thread = new WeakReference<Thread>(null);
        threadName = "";
        owner = null;
    }

    /**
     * @param capacity records, a power of two, at least 4
     * @param t the owning thread (kept weakly)
     * @param main whether t is the app's main thread
     */
    Ring(int capacity, Thread t, boolean main) {
        this(capacity, t, main, null);
    }

    /**
     * @param capacity records, a power of two, at least 4
     * @param t the owning thread (kept weakly)
     * @param main whether t is the app's main thread
     * @param owner told at each fill mark (see {@link #put}); null: nobody
     */
    Ring(int capacity, Thread t, boolean main, Recorder owner) {
        if (capacity < 4 || Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("ring capacity must be a power of two >= 4: " + capacity);
        }
        slots = new long[capacity];
        mask = capacity - 1;
        markMask = mask >>> 2;
        on = true;
        threadId = t.getId();
        this.main = main;
        thread = new WeakReference<Thread>(t);
        threadName = t.getName();
        this.owner = owner;
    }

    /**
     * Appends one record. Writer thread only; no allocation, no lock, never
     * blocks. At the <b>fill marks</b> (the ring's first record, then every
     * {@code capacity / 4} records: an AND and a compare on the slot index,
     * with {@code markMask}, a plain final field next to {@code mask}; no
     * volatile read, no call on the other records) it
     * tells the {@link Recorder}, which wakes a flush thread that waits
     * without watching the fill (phone settings: idle, or quiet until the
     * flush interval): between two marks the ring takes a quarter of its
     * capacity, so a ring written while the flush thread sleeps is dumped
     * before it wraps (with {@code flushFill} at most 0.5, the default).
     */
    void put(long record) {
        long p = published; // only this thread writes it: a plain load on x86 and AArch64 (ldar)
        int i = (int) p & mask;
        slots[i] = record;
        PUBLISHED.lazySet(this, p + 1);
        if ((i & markMask) == 0) {
            mark();
        }
    }

    /** A fill mark (see {@link #put}): out of line, to keep {@link #put} small. */
    private void mark() {
        Recorder o = owner;
        if (o != null) {
            o.filled();
        }
    }

    /** Records published so far (acquire). */
    long published() {
        return published;
    }

    /** A dumped window of a ring. */
    static final class Window {
        /** The records, oldest first. */
        final long[] records;
        /** Number of the first record (0 = the first the thread ever wrote). */
        final long first;
        /** True when records before {@code first} were lost (overwritten) since the previous dump. */
        final boolean truncated;
        /** True when the ring held more records than the dump was allowed to take (they stay in the ring). */
        final boolean more;

        Window(long[] records, long first, boolean truncated, boolean more) {
            this.records = records;
            this.first = first;
            this.truncated = truncated;
            this.more = more;
        }
    }

    /** {@link #dump(long) dump(Long.MAX_VALUE)}: everything written since the previous dump. */
    Window dump() {
        return dump(Long.MAX_VALUE);
    }

    /**
     * Copies the records written since the previous dump (those still in the
     * ring), the oldest {@code maxRecords} of them at most, while the writer
     * keeps writing. Records left behind stay in the ring for the next dump
     * (which marks itself truncated if the writer overwrites them first).
     * Dumper side; callers serialise. Allocates the returned array (never on
     * the writer's path).
     *
     * @param maxRecords most records to take, at least 1
     */
    Window dump(long maxRecords) {
        final int cap = mask + 1;
        final long p1 = published;
        long lo = Math.max(start, p1 - cap + 2);
        long hi = p1 - lo > maxRecords ? lo + maxRecords : p1;
        int n = (int) (hi - lo);
        long[] copy = new long[n];
        if (n > 0) {
            int from = (int) lo & mask;
            int firstPart = Math.min(n, cap - from);
            System.arraycopy(slots, from, copy, 0, firstPart);
            if (firstPart < n) {
                System.arraycopy(slots, 0, copy, firstPart, n - firstPart);
            }
        }
        fence = p1; // release: the copy's loads complete before ...
        final long p2 = published; // ... this load (volatile store -> volatile load order)
        long safe = p2 + 2 - cap;
        if (safe > lo) {
            int drop = (int) Math.min(n, safe - lo);
            long[] kept = new long[n - drop];
            System.arraycopy(copy, drop, kept, 0, kept.length);
            copy = kept;
            lo += drop;
        }
        boolean truncated = lo > start;
        start = hi;
        return new Window(copy, lo, truncated, hi < p1);
    }

    /**
     * Copies records number {@code from} … {@code to - 1} (numbers as in
     * {@link Window#first}) without moving the dump position: the block
     * windows of issue 13 ({@link Blocks}). Any thread may call it while the
     * writer writes and while a dump runs (it only reads the slots); the same
     * fence rule as {@link #dump(long)} drops records the writer may have
     * overwritten during the copy.
     *
     * @param from first record number wanted
     * @param to one past the last (at most {@link #published()})
     * @return the records still in the ring, oldest first; {@link Window#first}
     *         greater than {@code from} (with {@link Window#truncated}) when the
     *         older ones were already overwritten
     */
    Window copy(long from, long to) {
        final int cap = mask + 1;
        final long p1 = published;
        long hi = Math.min(to, p1);
        long lo = Math.max(from, p1 - cap + 2);
        int n = (int) Math.max(0, hi - lo);
        long[] out = new long[n];
        if (n > 0) {
            int f = (int) lo & mask;
            int firstPart = Math.min(n, cap - f);
            System.arraycopy(slots, f, out, 0, firstPart);
            if (firstPart < n) {
                System.arraycopy(slots, 0, out, firstPart, n - firstPart);
            }
        }
        fence = p1;
        final long p2 = published;
        long safe = p2 + 2 - cap;
        if (safe > lo && n > 0) {
            int drop = (int) Math.min(n, safe - lo);
            long[] kept = new long[n - drop];
            System.arraycopy(out, drop, kept, 0, kept.length);
            out = kept;
            lo += drop;
        }
        return new Window(out, Math.max(lo, from), lo > from, false);
    }

    /**
     * MethodId of the innermost call open on the owning thread now: the
     * newest enter in the ring that no later exit closes (read backwards,
     * exits counted as depth), or -1 when none is found within the newest
     * {@code maxScan} records still in the ring. For the network events'
     * {@code caller} (issue 16). Owning thread only: it reads its own writes,
     * which no one else writes; never allocates.
     */
    int innermostOpen(int maxScan) {
        long p = published;
        long lo = Math.max(0, Math.max(p - (mask + 1), p - maxScan));
        int depth = 0;
        for (long q = p - 1; q >= lo; q--) {
            long r = slots[(int) q & mask];
            if (r < 0) {
                depth++;
            } else if (depth == 0) {
                return (int) (r >>> Recorder.ID_SHIFT) & Recorder.ID_MASK;
            } else {
                depth--;
            }
        }
        return -1;
    }

    /** Records the dumper has not taken yet (approximate while the writer runs). */
    long pending() {
        return published - start;
    }
}
