package io.beatline.runtime;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

/** The {@code network} event line (issue 16; schema/batch-format.md): fields, caps, what is never sent. */
public class NetEventTest {
    private static NetRequest req(String method, String url) throws Exception {
        NetRequest r = new NetRequest(null, 5000, 42, "worker");
        r.endUs = 7500;
        java.net.URL u = new java.net.URL(url);
        r.method = method;
        r.url(u.getProtocol(), u.getHost(), u.getPort(), u.getPath(), u.getQuery());
        return r;
    }

    @Test
    public void fieldsAndNoQueryByDefault() throws Exception {
        NetRequest r = req("get", "https://API.Example.com/v2/users/1?token=secret&x=1#frag");
        r.status = 503;
        r.bytesOut = 10;
        r.bytesIn = 20;
        r.ttfbUs = 300;
        r.reused = 1;
        String e = r.event(1000, "dev", false);
        assertEquals("{\"type\":\"network\",\"device\":\"dev\",\"thread_name\":\"worker\",\"begin_us\":4000,"
                + "\"end_us\":6500,\"method\":\"GET\",\"scheme\":\"https\",\"host\":\"api.example.com\",\"port\":443,"
                + "\"path\":\"/v2/users/1\",\"status\":503,\"bytes_out\":10,\"bytes_in\":20,\"ttfb_us\":300,"
                + "\"total_us\":2500,\"reused\":true,\"caller\":42}\n", e);
        assertTrue(e, !e.contains("secret") && !e.contains("token") && !e.contains("frag"));
    }

    @Test
    public void queryKeysOnlyNamesAtMost32() throws Exception {
        StringBuilder q = new StringBuilder("a=1&&b&c=secret");
        for (int i = 0; i < 40; i++) {
            q.append("&k").append(i).append("=v");
        }
        String e = req("POST", "http://h:8080/p?" + q).event(5000, "dev", true);
        assertTrue(e, e.contains("\"query_keys\":[\"a\",\"b\",\"c\",\"k0\","));
        assertTrue(e, e.contains("\"k28\"]") && !e.contains("\"k29\"") && !e.contains("secret"));
        assertTrue(e, e.contains("\"port\":8080") && e.contains("\"path\":\"/p\""));
    }

    /** A queued request keeps a bounded copy of its URL: no query values, the path cut; the event is the same. */
    @Test
    public void queuedRequestHoldsABoundedUrl() throws Exception {
        StringBuilder v = new StringBuilder();
        for (int i = 0; i < 1 << 20; i++) {
            v.append('v');
        }
        StringBuilder p = new StringBuilder("/");
        for (int i = 0; i < 1 << 20; i++) {
            p.append('p');
        }
        NetRequest r = req("GET", "http://h" + p + "?a=" + v + "&b&=x&c=secret" + "&z=" + v);
        assertTrue(r.path.length() <= NetRequest.KEEP_PATH);
        assertEquals("a&b&c&z", r.query);
        String e = r.event(0, "d", true);
        assertTrue(e, e.contains("\"query_keys\":[\"a\",\"b\",\"c\",\"z\"]") && !e.contains("secret"));
        assertEquals(2048, BatchReader.text(e, "path").length());
        assertNull(req("GET", "http://h/?&=1&").query);
    }

    @Test
    public void refusedWhenTheContractCannotDescribeIt() throws Exception {
        assertNull(req("M-SEARCH", "http://h/").event(0, "d", false));
        assertNull(req("VERYLONGMETHODNAMEX", "http://h/").event(0, "d", false));
        assertNull(req("GET", "ftp://h/").event(0, "d", false));
        NetRequest r = req("GET", "http://h/");
        r.host = "";
        assertNull(r.event(0, "d", false));
    }

    @Test
    public void capsAndDefaults() throws Exception {
        StringBuilder p = new StringBuilder();
        for (int i = 0; i < 3000; i++) {
            p.append('/');
        }
        NetRequest r = req("GET", "http://h" + p);
        r.error = "java.net.ConnectException";
        r.status = 0;
        r.dnsUs = 0;
        String e = r.event(0, "d", false);
        String path = BatchReader.text(e, "path");
        assertEquals(2048, path.length());
        assertTrue(e, !e.contains("\"status\"") && e.contains("\"error\":\"java.net.ConnectException\"")
                && e.contains("\"dns_us\":0") && !e.contains("connect_us") && !e.contains("reused"));
        assertEquals(80, BatchReader.num(e, "port"));
        assertEquals("/", BatchReader.text(req("GET", "http://h").event(0, "d", false), "path"));
    }
}
