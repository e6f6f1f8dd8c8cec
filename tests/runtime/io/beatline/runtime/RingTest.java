package io.beatline.runtime;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.Test;

/** Ring buffer: wraparound, successive dumps, dumps while the owner keeps writing. */
public class RingTest {
    private static Ring ring(int cap) {
        return new Ring(cap, Thread.currentThread(), false);
    }

    private static long[] seq(long from, long to) {
        long[] a = new long[(int) (to - from)];
        for (int i = 0; i < a.length; i++) {
            a[i] = from + i;
        }
        return a;
    }

    @Test
    public void emptyRingDumpsNothing() {
        Ring.Window w = ring(8).dump();
        assertEquals(0, w.records.length);
        assertFalse(w.truncated);
    }

    @Test
    public void dumpWithoutWrapKeepsEverythingInOrder() {
        Ring r = ring(8);
        for (long v = 0; v < 6; v++) { // a ring of 8 slots holds 6 records safely
            r.put(v);
        }
        Ring.Window w = r.dump();
        assertArrayEquals(seq(0, 6), w.records);
        assertEquals(0, w.first);
        assertFalse(w.truncated);
    }

    @Test
    public void wrapKeepsTheNewestAndMarksTruncated() {
        Ring r = ring(8);
        for (long v = 0; v < 21; v++) {
            r.put(v);
        }
        Ring.Window w = r.dump();
        assertArrayEquals(seq(15, 21), w.records); // the 6 newest, across the array end
        assertTrue(w.truncated);
    }

    @Test
    public void successiveDumpsContinueWhereTheLastEnded() {
        Ring r = ring(16);
        for (long v = 0; v < 10; v++) {
            r.put(v);
        }
        assertArrayEquals(seq(0, 10), r.dump().records);
        for (long v = 10; v < 24; v++) { // exactly a ring's worth (16 - 2): the slots wrap, nothing is lost
            r.put(v);
        }
        Ring.Window w = r.dump();
        assertArrayEquals(seq(10, 24), w.records);
        assertFalse(w.truncated);
        r.put(24);
        r.put(25);
        assertArrayEquals(seq(24, 26), r.dump().records);
        for (long v = 26; v < 41; v++) { // one more than a ring's worth: record 26 is lost
            r.put(v);
        }
        w = r.dump();
        assertArrayEquals(seq(27, 41), w.records);
        assertTrue(w.truncated);
        w = r.dump();
        assertEquals(0, w.records.length);
        assertFalse(w.truncated);
    }

    /** A dump limited to n records takes the oldest n; the rest stay for the next dump, or are lost if overwritten. */
    @Test
    public void limitedDumpsTakeTheOldestFirst() {
        Ring r = new Ring(16, Thread.currentThread(), false);
        for (long v = 0; v < 10; v++) {
            r.put(v);
        }
        Ring.Window a = r.dump(4);
        assertArrayEquals(new long[] {0, 1, 2, 3}, a.records);
        assertFalse(a.truncated);
        assertTrue("records left in the ring", a.more);
        Ring.Window b = r.dump(100);
        assertArrayEquals(new long[] {4, 5, 6, 7, 8, 9}, b.records);
        assertFalse(b.truncated);
        assertFalse(b.more);
        for (long v = 10; v < 40; v++) { // 30 records into 16 slots
            r.put(v);
        }
        Ring.Window c = r.dump(3);
        assertArrayEquals(new long[] {26, 27, 28}, c.records); // the oldest of the newest 14
        assertTrue(c.truncated);
        assertTrue(c.more);
        for (long v = 40; v < 60; v++) { // overwrites 29..43 before they were dumped
            r.put(v);
        }
        Ring.Window d = r.dump(100);
        assertEquals(46, d.first);
        assertTrue("lost what the limit left behind", d.truncated);
        assertFalse(d.more);
    }

    @Test
    public void capacityMustBeAPowerOfTwo() {
        try {
            new Ring(12, Thread.currentThread(), false);
            fail("12 accepted");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("power of two"));
        }
    }

    /**
     * A writer thread hammers its ring with consecutive numbers (in bursts of
     * random length, so that some dumps find the ring wrapped and some do
     * not) while this thread dumps. Every dump must be a contiguous run of
     * consecutive numbers; it must start right after the previous dump's last
     * number exactly when it is not marked truncated; and the dumps together
     * with the last one after the writer stopped must end at the writer's
     * last number.
     */
    @Test
    public void concurrentDumpsAreConsistentWindows() throws Exception {
        for (int cap : new int[] {16, 1024, 65536}) {
            final Ring[] box = new Ring[1];
            final AtomicBoolean stop = new AtomicBoolean();
            final AtomicLong written = new AtomicLong();
            final AtomicLong dumpsDone = new AtomicLong();
            final AtomicLong progress = new AtomicLong();
            final Object ready = new Object();
            Thread writer = new Thread(() -> {
                Ring r = new Ring(cap, Thread.currentThread(), false);
                synchronized (ready) {
                    box[0] = r;
                    ready.notifyAll();
                }
                long v = 0;
                java.util.Random rnd = new java.util.Random(cap);
                while (!stop.get()) {
                    int burst = rnd.nextInt(cap * 2);
                    for (int k = 0; k < burst; k++) {
                        r.put(v++);
                    }
                    progress.lazySet(v);
                    if (rnd.nextBoolean()) { // let a dump happen: short bursts then make whole dumps likely
                        long d = dumpsDone.get();
                        while (dumpsDone.get() == d && !stop.get()) {
                            Thread.yield();
                        }
                    }
                }
                written.set(v);
            });
            writer.start();
            synchronized (ready) {
                while (box[0] == null) {
                    ready.wait();
                }
            }
            Ring r = box[0];
            long next = 0; // the number the next dump should start with when not truncated
            int dumps = 0;
            int truncated = 0;
            int whole = 0;
            int nonEmptyWhole = 0;
            // until the writer wrote 20 million records and both kinds were seen 20 times (at most
            // 200 million records); on a machine too busy for that, stop after 60 s once both kinds
            // were seen at all (a bound on the work, not an assertion on speed)
            long p;
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (((p = progress.get()) < 20_000_000L || truncated < 20 || nonEmptyWhole < 20)
                    && p < 200_000_000L
                    && !(System.nanoTime() > deadline && truncated > 0 && nonEmptyWhole > 0)) {
                Ring.Window w = r.dump();
                dumps++;
                dumpsDone.incrementAndGet();
                long[] a = w.records;
                for (int k = 1; k < a.length; k++) {
                    if (a[k] != a[k - 1] + 1) {
                        fail("cap " + cap + " dump " + dumps + ": not contiguous at " + k + ": " + a[k - 1] + ", " + a[k]);
                    }
                }
                assertTrue("window longer than the ring's safe part", a.length <= cap - 2);
                if (a.length > 0) {
                    assertEquals("record number of the first record", w.first, a[0]);
                    if (w.truncated) {
                        assertTrue("truncated but nothing lost: starts at " + a[0] + ", expected " + next,
                                a[0] > next);
                        truncated++;
                    } else {
                        assertEquals("not truncated but records lost", next, a[0]);
                        whole++;
                        nonEmptyWhole++;
                    }
                    next = a[a.length - 1] + 1;
                } else if (w.truncated) {
                    truncated++;
                    next = w.first;
                } else {
                    whole++;
                }
            }
            stop.set(true);
            writer.join();
            Ring.Window last = r.dump();
            long end = last.records.length > 0 ? last.records[last.records.length - 1] + 1 : next;
            if (last.records.length > 0 && !last.truncated) {
                assertEquals(next, last.records[0]);
            }
            assertEquals("the last dump ends with the last record written", written.get(), end);
            assertTrue("cap " + cap + ": saw truncated dumps (" + truncated + ") and whole ones (" + nonEmptyWhole
                    + ") in " + dumps + " dumps", truncated > 0 && nonEmptyWhole > 0);
        }
    }
}
