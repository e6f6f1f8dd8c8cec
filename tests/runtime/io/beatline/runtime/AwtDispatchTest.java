package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.awt.EventQueue;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.junit.After;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Issue 13 on the plain JVM: the AWT hook of the dispatch monitor (headless:
 * EventQueue.invokeAndWait events are dispatched all the same) and the ANR
 * watchdog's spooled report surviving a SIGKILL, uploaded at the next start.
 */
public class AwtDispatchTest {
    @BeforeClass
    public static void headless() {
        System.setProperty("java.awt.headless", "true");
    }

    @After
    public void stop() {
        Beatline.shutdown(0);
    }

    static final class Slow implements Runnable {
        @Override
        public void run() {
            Beatline.i(1);
            Beatline.i(2);
            try {
                Thread.sleep(150);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            Beatline.o(2);
            Beatline.o(1);
        }
    }

    static final Runnable QUICK = new Runnable() {
        @Override
        public void run() {
            Beatline.i(7);
            Beatline.o(7);
        }
    };

    @Test
    public void awtBlockWindowAndTarget() throws Exception {
        File spool = TestSupport.tempDir("awt");
        assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("awt").ingestKey("k")
                .spoolDir(spool).dispatch("awt").uploadMode("triggered").sampleRate(0).blockThresholdMillis(100)
                .anrThresholdMillis(0).backoff(3600000, 3600000).lifecycle(new Lifecycle() {
                    @Override
                    public void install(Hooks hooks) {
                    }
                }).build()));
        EventQueue.invokeAndWait(QUICK);
        EventQueue.invokeAndWait(new Slow());
        EventQueue.invokeAndWait(QUICK); // the slow event's dispatchEvent has returned
        Beatline.flush();
        List<BatchReader> bs = BatchReader.spool(spool);
        assertEquals(1, bs.size());
        BatchReader.Seg s = bs.get(0).segs.get(0);
        assertTrue(s.name, s.main() && s.name.startsWith("AWT-EventQueue-"));
        assertEquals(Arrays.asList(1, 2, -2, -1), s.ids());
        String e = bs.get(0).events.get(0);
        assertEquals("awt", BatchReader.text(e, "kind"));
        assertEquals("java.awt.event.InvocationEvent/" + Slow.class.getName(), BatchReader.text(e, "target"));
        assertEquals(1, Beatline.stats().blocks);
        assertTrue(Beatline.stats().messages >= 3);
    }

    /** A stall past the ANR threshold that ends: its spooled report is replaced by the finished block (one batch). */
    @Test
    public void finishedAnrReplacesItsReport() throws Exception {
        File spool = TestSupport.tempDir("anr-end");
        assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("awt").ingestKey("k")
                .spoolDir(spool).dispatch("awt").uploadMode("triggered").sampleRate(0).blockThresholdMillis(100)
                .anrThresholdMillis(200).backoff(3600000, 3600000).lifecycle(new Lifecycle() {
                    @Override
                    public void install(Hooks hooks) {
                    }
                }).build()));
        EventQueue.invokeAndWait(QUICK); // wakes the watchdog
        final File[] seen = new File[1];
        final File dir = spool;
        EventQueue.invokeAndWait(new Runnable() {
            @Override
            public void run() {
                Beatline.i(1);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (Spool(dir).isEmpty() && System.nanoTime() < deadline) { // until the watchdog reported
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                }
                seen[0] = Spool(dir).isEmpty() ? null : Spool(dir).get(0);
                Beatline.i(2);
                Beatline.o(2);
                Beatline.o(1);
            }
        });
        EventQueue.invokeAndWait(QUICK);
        Beatline.flush();
        assertTrue("the watchdog spooled a report during the stall", seen[0] != null);
        List<BatchReader> bs = BatchReader.spool(spool);
        assertEquals("the report was replaced, not doubled", 1, bs.size());
        assertTrue("the report's file is gone", !seen[0].exists());
        String e = bs.get(0).events.get(0);
        assertTrue(e, e.contains("\"anr\":true") && e.contains("\"stack\":["));
        assertEquals("the whole message's window", Arrays.asList(1, 2, -2, -1), bs.get(0).segs.get(0).ids());
    }

    @Test
    public void anrReportSurvivesKillAndIsUploadedAtNextStart() throws Exception {
        File spool = TestSupport.tempDir("anr");
        File lib = new File(TestSupport.buildDir(), "lib");
        List<String> cmd = Arrays.asList(new File(System.getProperty("java.home"), "bin/java").getPath(),
                "-Djava.awt.headless=true", "-cp",
                new File(lib, "beatline-runtime-tests.jar") + File.pathSeparator + new File(lib, "beatline-runtime.jar"),
                "-Dbeatline.server=http://127.0.0.1:9", "-Dbeatline.app=anr", "-Dbeatline.key=k",
                "-Dbeatline.spool=" + spool, "-Dbeatline.dispatch=awt", "-Dbeatline.uploadMode=triggered",
                "-Dbeatline.sampleRate=0", "-Dbeatline.anrThresholdMs=300", "-Dbeatline.backoffBaseMs=3600000",
                "-Dbeatline.backoffMaxMs=3600000", "demo.AnrMain");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        final List<String> out = Collections.synchronizedList(new ArrayList<String>());
        final BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), "UTF-8"));
        Thread reader = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    String l;
                    while ((l = r.readLine()) != null) {
                        out.add(l);
                    }
                } catch (Exception e) {
                    // process killed
                }
            }
        });
        reader.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (Spool(spool).isEmpty() && System.nanoTime() < deadline && p.isAlive()) {
                Thread.sleep(50);
            }
            assertTrue("the watchdog spooled a report while the process stalls: " + out, !Spool(spool).isEmpty());
            assertTrue("still stalled when killed", p.isAlive());
        } finally {
            p.destroyForcibly(); // SIGKILL on Linux: no shutdown hook, no final flush
            p.waitFor(30, TimeUnit.SECONDS);
        }
        assertEquals("killed by SIGKILL", 137, p.exitValue());
        List<BatchReader> bs = BatchReader.spool(spool);
        assertEquals(1, bs.size());
        BatchReader b = bs.get(0);
        String e = b.events.get(0);
        assertTrue(e, e.contains("\"anr\":true"));
        assertEquals("awt", BatchReader.text(e, "kind"));
        assertTrue("the sampled main-thread stack names the stalled method: " + e,
                e.contains("\"stack\":[") && e.contains("demo.AnrMain.stall("));
        BatchReader.Seg s = b.segs.get(0);
        assertEquals("the window so far: the two calls entered, still open", Arrays.asList(5, 6), s.ids());
        assertTrue("continues: calls still open", (s.flags & 8) != 0);

        // next start: the report in the spool is uploaded
        final List<byte[]> got = Collections.synchronizedList(new ArrayList<byte[]>());
        HttpServer srv = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        srv.createContext("/", new HttpHandler() {
            @Override
            public void handle(HttpExchange x) {
                try {
                    got.add(TestSupport.readAll(x.getRequestBody()));
                    byte[] ok = "{}".getBytes("UTF-8");
                    x.sendResponseHeaders(202, ok.length);
                    x.getResponseBody().write(ok);
                } catch (Exception ex) {
                    // counted by the assertion below
                } finally {
                    x.close();
                }
            }
        });
        srv.start();
        try {
            assertTrue(Beatline.start(new BeatlineConfig.Builder()
                    .server("http://127.0.0.1:" + srv.getAddress().getPort()).app("anr").ingestKey("k")
                    .spoolDir(spool).threadPolicy(new JvmThreadPolicy(false)).lifecycle(new Lifecycle() {
                        @Override
                        public void install(Hooks hooks) {
                        }
                    }).build()));
            assertTrue(Beatline.flushAndWait(20000));
        } finally {
            srv.stop(0);
        }
        assertEquals(1, got.size());
        BatchReader up = BatchReader.parse(TestSupport.readAll(new GZIPInputStream(new ByteArrayInputStream(got.get(0)))));
        assertTrue(up.events.get(0).contains("\"anr\":true"));
    }

    private static List<File> Spool(File dir) {
        List<File> l = new ArrayList<File>();
        File[] fs = dir.listFiles();
        if (fs != null) {
            for (File f : fs) {
                if (f.getName().endsWith(".blb.gz") && !f.getName().startsWith(".")) {
                    l.add(f);
                }
            }
        }
        return l;
    }
}
