import io.beatline.runtime.Beatline;
import io.beatline.runtime.BeatlineConfig;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Cost per request of Beatline's OkHttp listener (issue 16; bench/net-bench.sh,
 * docs/benchmarks.md "Network requests"): GET of a 64-byte body over one
 * keep-alive loopback connection, by a client in this JVM, from a server
 * thread in this JVM. Variants: {@code bare} (OkHttp as the app built it),
 * {@code off} (Beatline's listener installed, runtime not running),
 * {@code on} (runtime running in full mode: every request becomes an event,
 * spooled by the flush thread). Prints µs per request: wall, the client
 * thread's CPU, the process's CPU (server thread and the runtime's threads
 * included); medians of 7 rounds of 4,000 requests after 4,000 warm-up ones.
 */
public final class NetBench {
    static final byte[] RESP = ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 64\r\n\r\n"
            + "0123456789012345678901234567890123456789012345678901234567890123").getBytes(StandardCharsets.US_ASCII);

    static void serve(Socket s) {
        try (Socket sock = s) {
            InputStream in = sock.getInputStream();
            OutputStream out = sock.getOutputStream();
            byte[] b = new byte[8192];
            int state = 0;
            while (true) {
                int n = in.read(b);
                if (n < 0) {
                    return;
                }
                for (int i = 0; i < n; i++) { // a request ends at CRLF CRLF (GETs: no body)
                    byte c = b[i];
                    state = c == '\r' ? (state == 2 ? 3 : 1) : c == '\n' ? (state == 3 ? 4 : state == 1 ? 2 : 0) : 0;
                    if (state == 4) {
                        out.write(RESP);
                        state = 0;
                    }
                }
                out.flush();
            }
        } catch (IOException e) {
            // client gone
        }
    }

    /**
     * Variant {@code callbacks}: the listener alone, no network: one
     * request's callbacks (callStart … callEnd, as OkHttp makes them for a
     * pooled connection) on Beatline's listener, with the runtime running
     * (each ends in a queued event); ns per request, CPU of this thread.
     */
    static void callbacks(File spool) throws Exception {
        Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("bench").ingestKey("k")
                .spoolDir(spool).build());
        OkHttpClient client = io.beatline.runtime.net.OkHttp.install(new OkHttpClient());
        Request req = new Request.Builder().url("http://127.0.0.1:9/bench/items/7?x=1").build();
        okhttp3.Call call = client.newCall(req);
        Response resp = new Response.Builder().request(req).protocol(okhttp3.Protocol.HTTP_1_1).code(200)
                .message("OK").header("Content-Length", "64").build();
        okhttp3.EventListener.Factory f = client.eventListenerFactory();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        final int n = 200000;
        double[] cpu = new double[7];
        for (int round = -3; round < 7; round++) {
            long c0 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < n; i++) {
                okhttp3.EventListener l = f.create(call);
                l.callStart(call);
                l.requestHeadersStart(call);
                l.requestHeadersEnd(call, req);
                l.responseHeadersStart(call);
                l.responseHeadersEnd(call, resp);
                l.responseBodyStart(call);
                l.responseBodyEnd(call, 64);
                l.callEnd(call);
            }
            if (round >= 0) {
                cpu[round] = (mx.getCurrentThreadCpuTime() - c0) / 1.0 / n;
            }
        }
        Arrays.sort(cpu);
        Beatline.Stats st = Beatline.stats();
        System.out.printf("callbacks  listener, runtime on: %6.0f ns CPU per request (%d events spooled, %d dropped"
                + " when the queue was full)%n", cpu[3], st.networkSpooled, st.networkDropped);
        Beatline.shutdown(0);
        System.exit(0);
    }

    public static void main(String[] args) throws Exception {
        String variant = args[0];
        if (variant.equals("callbacks")) {
            callbacks(new File(args[1]));
        }
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        Thread acceptor = new Thread(() -> {
            try {
                while (true) {
                    Socket s = ss.accept();
                    Thread t = new Thread(() -> serve(s), "server");
                    t.setDaemon(true);
                    t.start();
                }
            } catch (IOException e) {
                // closed
            }
        });
        acceptor.setDaemon(true);
        acceptor.start();
        if (variant.equals("on")) {
            File spool = new File(args[1]);
            Beatline.start(new BeatlineConfig.Builder().server("http://127.0.0.1:9").app("bench").ingestKey("k")
                    .spoolDir(spool).build());
        }
        OkHttpClient client = new OkHttpClient();
        if (!variant.equals("bare")) {
            client = io.beatline.runtime.net.OkHttp.install(client);
        }
        Request req = new Request.Builder().url("http://127.0.0.1:" + ss.getLocalPort() + "/bench").build();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        final int n = 4000;
        double[] wall = new double[7];
        double[] cpu = new double[7];
        double[] proc = new double[7];
        for (int round = -1; round < 7; round++) {
            long t0 = System.nanoTime();
            long c0 = mx.getCurrentThreadCpuTime();
            long p0 = os.getProcessCpuTime();
            for (int i = 0; i < n; i++) {
                try (Response r = client.newCall(req).execute()) {
                    if (r.body().bytes().length != 64) {
                        throw new IllegalStateException("bad body");
                    }
                }
            }
            if (round >= 0) {
                wall[round] = (System.nanoTime() - t0) / 1e3 / n;
                cpu[round] = (mx.getCurrentThreadCpuTime() - c0) / 1e3 / n;
                proc[round] = (os.getProcessCpuTime() - p0) / 1e3 / n;
            }
        }
        Arrays.sort(wall);
        Arrays.sort(cpu);
        Arrays.sort(proc);
        Beatline.Stats st = Beatline.stats();
        System.out.printf("%-5s  wall %6.1f µs/request  client thread CPU %6.1f µs  process CPU %6.1f µs%s%n", variant,
                wall[3], cpu[3], proc[3], st == null ? "" : "  (" + st.networkSpooled + " events spooled so far)");
        if (variant.equals("on")) {
            Beatline.shutdown(0);
        }
        System.exit(0);
    }
}
