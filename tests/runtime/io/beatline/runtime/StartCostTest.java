package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.lang.reflect.Field;
import java.security.Provider;
import java.security.SecureRandomSpi;
import java.security.Security;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.junit.After;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Issue 13, the runtime's start-up cost: starting the runtime (on an app's
 * main thread, at its first probe) seeds no {@code SecureRandom} there (the
 * session id is made on the runtime's flush thread, from /dev/urandom), and
 * the shutdown summary is formatted without {@code String.format}. Runs in
 * its own JVM (ctest runtime_start_cost): a witness provider, installed
 * before anything in the JVM used {@code SecureRandom}, notes every thread
 * that makes or reads one.
 */
public class StartCostTest {
    /** Names of the threads that used a SecureRandom (the witness's). */
    static final List<String> USERS = Collections.synchronizedList(new ArrayList<String>());

    /** A SecureRandom that notes its callers (random enough for UUIDs in a test). */
    public static final class WitnessSpi extends SecureRandomSpi {
        private static final long serialVersionUID = 1L;
        private final java.util.Random r = new java.util.Random();

        public WitnessSpi() {
            USERS.add(Thread.currentThread().getName());
        }

        @Override
        protected void engineSetSeed(byte[] seed) {
        }

        @Override
        protected void engineNextBytes(byte[] bytes) {
            USERS.add(Thread.currentThread().getName());
            r.nextBytes(bytes);
        }

        @Override
        protected byte[] engineGenerateSeed(int n) {
            USERS.add(Thread.currentThread().getName());
            byte[] b = new byte[n];
            r.nextBytes(b);
            return b;
        }
    }

    @BeforeClass
    public static void witness() {
        Provider p = new Provider("BeatlineWitness", "1", "notes SecureRandom users") {
            private static final long serialVersionUID = 1L;
        };
        p.put("SecureRandom.Witness", WitnessSpi.class.getName());
        assertEquals(1, Security.insertProviderAt(p, 1));
        new java.security.SecureRandom().nextInt(); // the witness is the default SecureRandom
        assertTrue("witness in place: " + USERS, USERS.contains(Thread.currentThread().getName()));
    }

    @After
    public void stop() {
        Beatline.shutdown(0);
    }

    static final Lifecycle NO_HOOKS = new Lifecycle() {
        @Override
        public void install(Hooks hooks) {
        }
    };

    static final class Lines implements Log {
        final List<String> lines = Collections.synchronizedList(new ArrayList<String>());

        @Override
        public void warn(String msg) {
            lines.add(msg);
        }

        @Override
        public void debug(String msg) {
            lines.add(msg);
        }
    }

    private static String idField(Object session) throws Exception {
        Field f = Session.class.getDeclaredField("sessionId");
        f.setAccessible(true);
        return (String) f.get(session);
    }

    private static Object session() throws Exception {
        Field f = Beatline.class.getDeclaredField("current");
        f.setAccessible(true);
        return f.get(null);
    }

    /**
     * A triggered session (the demo's settings, as from system properties)
     * started on this thread, with probes on it: no SecureRandom used here;
     * the flush thread makes the session id, a version-4 UUID.
     */
    @Test
    public void startUsesNoSecureRandomOnTheStartingThread() throws Exception {
        File spool = TestSupport.tempDir("startcost");
        String me = Thread.currentThread().getName();
        USERS.clear();
        assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("sc").ingestKey("k")
                .spoolDir(spool).lifecycle(NO_HOOKS).uploadMode("triggered").log(new Lines()).build()));
        for (int k = 0; k < 100; k++) {
            Beatline.i(1);
            Beatline.o(1);
        }
        Object s = session();
        assertNotNull(s);
        String id = null;
        for (int i = 0; i < 600 && (id = idField(s)) == null; i++) {
            Thread.sleep(50); // the flush thread makes it as it starts
        }
        assertNotNull("the flush thread made the session id", id);
        assertTrue(id, id.matches("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
        assertEquals(id, Beatline.stats().sessionId);
        assertTrue("SecureRandom used on the starting thread \"" + me + "\": " + USERS, !USERS.contains(me));
    }

    /** Two sessions get two ids. */
    @Test
    public void sessionIdsDiffer() {
        assertTrue(!Session.randomUuid().equals(Session.randomUuid()));
    }

    /**
     * The shutdown summary's ring fill has two decimals and a '.' whatever
     * the default locale (it was String.format's, "0,00" in German).
     */
    @Test
    public void shutdownSummaryIsLocaleFree() throws Exception {
        Locale was = Locale.getDefault();
        Locale.setDefault(Locale.GERMANY);
        try {
            Lines log = new Lines();
            assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("sc")
                    .ingestKey("k").spoolDir(TestSupport.tempDir("startcost")).lifecycle(NO_HOOKS)
                    .uploadMode("full").log(log).build()));
            Beatline.shutdown(0);
            String sum = null;
            for (String l : new ArrayList<String>(log.lines)) {
                if (l.startsWith("session ")) {
                    sum = l;
                }
            }
            assertNotNull("summary logged: " + log.lines, sum);
            assertTrue(sum, sum.endsWith("ring fill peak 0.00"));
        } finally {
            Locale.setDefault(was);
        }
        double[] xs = {0, 0.004, 0.005, 0.125, 0.5, 0.999, 0.9951, 1, 1.25, 3.14159, 12.3, 1e6 + 0.07, -0.5};
        for (double x : xs) {
            assertEquals(String.valueOf(x), String.format(Locale.ROOT, "%.2f", x), Session.twoDecimals(x));
        }
    }
}
