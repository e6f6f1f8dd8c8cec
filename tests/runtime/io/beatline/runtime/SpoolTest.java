package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;

import org.junit.Test;

/**
 * The spool's bounds (Spool.enforceBounds): the oldest batches go first and
 * the batch just written is never deleted before it is uploaded, even when
 * it alone is over {@code maxBytes}.
 */
public class SpoolTest {
    /** Collects warnings so a test can see what the spool reported. */
    static final class ListLog implements Log {
        final List<String> warnings = new ArrayList<String>();

        @Override
        public synchronized void warn(String msg) {
            warnings.add(msg);
        }

        @Override
        public void debug(String msg) {
        }
    }

    /** n bytes that gzip cannot shrink (seeded: the same every run). */
    static byte[] noise(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    public void aSingleBatchOverMaxBytesIsKept() throws Exception {
        File dir = TestSupport.tempDir("spool-big");
        ListLog log = new ListLog();
        Spool s = new Spool(dir, 100, 1000, log);
        s.open();
        File f = s.write(UUID.randomUUID(), noise(8000, 1));
        assertTrue("the batch just written is on disk: " + f, f.isFile());
        assertTrue("it is larger than maxBytes", f.length() > 1000);
        assertEquals(1, s.list().size());
        assertEquals(f, s.list().get(0));
        assertEquals("nothing was dropped", 0, s.dropped());
    }

    @Test
    public void olderBatchesGoFirstAndTheNewestStays() throws Exception {
        File dir = TestSupport.tempDir("spool-bytes");
        ListLog log = new ListLog();
        Spool s = new Spool(dir, 100, 5000, log);
        s.open();
        File a = s.write(UUID.randomUUID(), noise(1000, 2));
        File b = s.write(UUID.randomUUID(), noise(1000, 3));
        assertEquals(2, s.list().size());
        assertEquals(0, s.dropped());
        // the newest alone is over maxBytes: both older ones go, it stays
        File c = s.write(UUID.randomUUID(), noise(8000, 4));
        assertTrue("the newest batch is kept", c.isFile());
        assertTrue("the oldest is deleted", !a.exists());
        assertTrue("the second oldest is deleted", !b.exists());
        assertEquals(1, s.list().size());
        assertEquals(2, s.dropped());
        assertEquals("one warning names the drop", 1, log.warnings.size());
        assertTrue(log.warnings.get(0), log.warnings.get(0).contains("deleted the 2 oldest"));
    }

    @Test
    public void maxFilesKeepsTheNewest() throws Exception {
        File dir = TestSupport.tempDir("spool-files");
        Spool s = new Spool(dir, 3, 1L << 30, new ListLog());
        s.open();
        List<File> written = new ArrayList<File>();
        for (int i = 0; i < 5; i++) {
            written.add(s.write(UUID.randomUUID(), noise(100, 10 + i)));
        }
        assertEquals(written.subList(2, 5), s.list());
        assertEquals(2, s.dropped());
    }
}
