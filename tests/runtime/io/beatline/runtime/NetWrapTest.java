package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import io.beatline.runtime.net.Url;
import java.io.File;
import java.io.IOException;
import java.net.Authenticator;
import java.net.HttpURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.net.URLStreamHandler;
import javax.net.ssl.HttpsURLConnection;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * What {@code Url.openConnection} (the instrumenter's replacement of
 * {@code URL.openConnection()}, issue 16) gives the app while the runtime
 * runs, without any network: the connection of an app-defined URL handler
 * comes back as it is (the app may cast it to its own class), and the
 * wrapper of the platform's connection answers the JDK 9+ methods
 * ({@code setAuthenticator}, {@code getSSLSession}) as the connection it
 * wraps does instead of HttpURLConnection's UnsupportedOperationException.
 */
public class NetWrapTest {
    static final Lifecycle NO_HOOKS = new Lifecycle() {
        @Override
        public void install(Hooks hooks) {
        }
    };

    static File spool;

    @BeforeClass
    public static void start() throws Exception {
        spool = TestSupport.tempDir("netwrap");
        assertTrue(Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("nw").ingestKey("k")
                .spoolDir(spool).lifecycle(NO_HOOKS).flushIntervalMillis(3600000).backoff(3600000, 3600000)
                .build()));
        assertTrue(NetRequest.active());
    }

    @AfterClass
    public static void stop() {
        Beatline.shutdown(5000);
    }

    /** An app's own HttpURLConnection, made by its own URL handler. */
    static final class AppConnection extends HttpURLConnection {
        AppConnection(URL u) {
            super(u);
        }

        @Override
        public void disconnect() {
        }

        @Override
        public boolean usingProxy() {
            return false;
        }

        @Override
        public void connect() {
        }
    }

    @Test
    public void appHandlersConnectionComesBackAsItIs() throws Exception {
        URL u = new URL(null, "myhttp://example.invalid/x", new URLStreamHandler() {
            @Override
            protected URLConnection openConnection(URL url) {
                return new AppConnection(url);
            }
        });
        URLConnection c = Url.openConnection(u);
        assertSame(AppConnection.class, c.getClass());
        AppConnection mine = (AppConnection) c; // the app's cast works
        assertEquals(u, mine.getURL());
    }

    @Test
    public void platformHttpConnectionIsWrapped() throws Exception {
        URLConnection raw = new URL("http://127.0.0.1:9/p").openConnection();
        URLConnection c = Url.openConnection(new URL("http://127.0.0.1:9/p"));
        assertNotSame(raw.getClass(), c.getClass());
        assertTrue(c instanceof HttpURLConnection);
        URLConnection s = Url.openConnection(new URL("https://127.0.0.1:9/p"));
        assertTrue(s instanceof HttpsURLConnection);
        for (String other : new String[] {"file:/", "jar:file:/nope.jar!/a", "ftp://127.0.0.1:9/x"}) {
            URLConnection o = Url.openConnection(new URL(other));
            assertSame(other, new URL(other).openConnection().getClass(), o.getClass()); // not wrapped
        }
        assertTrue(Url.openConnection(new URL("jar:file:/nope.jar!/a")) instanceof java.net.JarURLConnection);
    }

    @Test
    public void setAuthenticatorReachesTheConnection() throws Exception {
        HttpURLConnection c = (HttpURLConnection) Url.openConnection(new URL("http://127.0.0.1:9/p"));
        c.setAuthenticator(new Authenticator() {
        }); // HttpURLConnection's own: UnsupportedOperationException
        HttpsURLConnection s = (HttpsURLConnection) Url.openConnection(new URL("https://127.0.0.1:9/p"));
        s.setAuthenticator(new Authenticator() {
        });
    }

    private static String outcome(HttpsURLConnection c) {
        try {
            return "value " + c.getSSLSession().isPresent();
        } catch (RuntimeException e) {
            return e.getClass().getName();
        }
    }

    @Test
    public void getSslSessionAnswersAsTheConnection() throws IOException {
        HttpsURLConnection raw = (HttpsURLConnection) new URL("https://127.0.0.1:9/p").openConnection();
        HttpsURLConnection c = (HttpsURLConnection) Url.openConnection(new URL("https://127.0.0.1:9/p"));
        assertNotSame(raw.getClass(), c.getClass());
        assertEquals(outcome(raw), outcome(c)); // not yet connected: IllegalStateException from both
    }

    /**
     * setDoOutput(true) without setRequestMethod: the platform sends a POST
     * (HttpURLConnection's GET becomes POST in getOutputStream); the event
     * says so (it said GET, read before the body was asked for).
     */
    @Test
    public void getTurnedPostByItsBodyIsRecordedAsPost() throws Exception {
        try (NetWeb web = new NetWeb(null, null)) {
            HttpURLConnection c = (HttpURLConnection) Url.openConnection(
                    new URL("http://127.0.0.1:" + web.port() + "/url/post"));
            c.setDoOutput(true);
            try (java.io.OutputStream out = c.getOutputStream()) {
                out.write("abc".getBytes("UTF-8"));
            }
            assertEquals(200, c.getResponseCode());
            try (java.io.InputStream in = c.getInputStream()) {
                byte[] b = new byte[64];
                for (int k = 0; k < 100 && in.read(b) >= 0; k++) {
                    // to the end
                }
            }
            assertEquals("POST", web.seen.get(0).method);
        }
        Beatline.flush(); // the queued event spooled, on this thread
        String found = null;
        for (BatchReader b : BatchReader.spool(spool)) {
            for (String e : b.events) {
                if (e.contains("\"path\":\"/url/post\"")) {
                    found = e;
                }
            }
        }
        assertTrue("no event", found != null);
        assertEquals(found, "POST", BatchReader.text(found, "method"));
    }

    private static String thrown(java.util.concurrent.Callable<?> f) {
        try {
            f.call();
            return "nothing";
        } catch (Exception e) {
            return e.getClass().getName();
        }
    }

    /**
     * getOutputStream without setDoOutput(true), getInputStream and
     * getResponseCode after setDoInput(false): the connection's
     * ProtocolException at once, as without Beatline, not a connect first
     * (here to a closed port: ConnectException).
     */
    @Test
    public void noOutputOrInputAllowedFailsAsTheConnectionWithoutConnecting() throws Exception {
        int port;
        try (java.net.ServerSocket ss = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            port = ss.getLocalPort();
        }
        final URL u = new URL("http://127.0.0.1:" + port + "/closed");
        final HttpURLConnection out = (HttpURLConnection) Url.openConnection(u);
        assertEquals("java.net.ProtocolException", thrown(() -> u.openConnection().getOutputStream()));
        assertEquals("java.net.ProtocolException", thrown(() -> out.getOutputStream()));
        final HttpURLConnection in = (HttpURLConnection) Url.openConnection(u);
        in.setDoInput(false);
        assertEquals("java.net.ProtocolException", thrown(() -> in.getInputStream()));
        final HttpURLConnection rc = (HttpURLConnection) Url.openConnection(u);
        rc.setDoInput(false);
        final HttpURLConnection raw = (HttpURLConnection) u.openConnection();
        raw.setDoInput(false);
        assertEquals(thrown(() -> raw.getResponseCode()), thrown(() -> rc.getResponseCode()));
    }
}
