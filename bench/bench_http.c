/*
 * bench_http — load tool for beatline-server on loopback.
 *
 *   bench_http ingest PORT APP INGEST_KEY CONNECTIONS BATCHES RECORDS
 *       POSTs BATCHES distinct zstd batches (bench/batchgen.h, RECORDS each)
 *       over CONNECTIONS keep-alive connections; prints acknowledged
 *       records/s and request latency p50/p99, and the wall clock of the
 *       first POST ("ingest   first POST at UNIX_SECONDS"): the batches are
 *       generated and compressed before it, which takes this tool about as
 *       long as the server takes to ingest them, so an end-to-end window
 *       starts there, not when the tool starts.
 *   bench_http ingest PORT APP INGEST_KEY CONNECTIONS BATCHES RECORDS BUILDS DAYS
 *       the same, batch i going to build "b%03d" (i % BUILDS) with its wall
 *       clock origin DAYS days × i / BATCHES before the fixed origin, so the
 *       data spans BUILDS builds and DAYS days (build names: see
 *       bench/query-bench.sh).
 *   bench_http query PORT PATH READ_KEY REQUESTS
 *       GETs PATH REQUESTS times on one connection; prints latency p50/p99.
 *
 * Bounded in count and time; talks to 127.0.0.1 only.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "batchgen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = { 60, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends one request and reads the response; returns the status or -1. */
static int roundtrip(int fd, const char *head, const void *body, size_t n)
{
    if (send_all(fd, head, strlen(head)) || (n && send_all(fd, body, n)))
        return -1;
    char buf[65536];
    size_t got = 0;
    char *end = NULL;
    while (!end) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (!end && got >= sizeof buf - 1)
            return -1;
    }
    int status = atoi(buf + 9);
    const char *cl = NULL;
    for (const char *q = buf; q < end && !cl; q++)
        if (!strncasecmp(q, "content-length:", 15))
            cl = q;
    size_t len = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
    size_t have = got - (size_t)(end + 4 - buf);
    while (have < len) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
    }
    return status;
}

typedef struct job {
    int port, conn, n_conn;
    const char *app, *key;
    void **z;
    size_t *zn;
    uint32_t n_batches;
    double *lat;
    int errors;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    int fd = connect_to(j->port);
    char head[512];
    for (uint32_t i = (uint32_t)j->conn; i < j->n_batches; i += (uint32_t)j->n_conn) {
        snprintf(head, sizeof head,
                 "POST /v1/apps/%s/batches HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Authorization: Bearer %s\r\nContent-Type: application/octet-stream\r\n"
                 "Content-Encoding: zstd\r\nContent-Length: %zu\r\n\r\n",
                 j->app, j->key, j->zn[i]);
        double t0 = now_s();
        int st = roundtrip(fd, head, j->z[i], j->zn[i]);
        j->lat[i] = now_s() - t0;
        if (st != 202)
            j->errors++;
    }
    close(fd);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void percentiles(double *v, size_t n, const char *what)
{
    qsort(v, n, sizeof *v, cmp_d);
    printf("%s latency p50 %.2f ms, p99 %.2f ms, max %.2f ms (%zu requests)\n", what,
           v[n / 2] * 1e3, v[(size_t)((double)n * 0.99)] * 1e3, v[n - 1] * 1e3, n);
}

int main(int argc, char **argv)
{
    if ((argc == 8 || argc == 10) && !strcmp(argv[1], "ingest")) {
        int port = atoi(argv[2]), n_conn = atoi(argv[5]);
        uint32_t n_batches = (uint32_t)atoi(argv[6]), per = (uint32_t)atoi(argv[7]);
        int n_builds = argc == 10 ? atoi(argv[8]) : 0, n_days = argc == 10 ? atoi(argv[9]) : 0;
        if (n_conn < 1 || n_conn > 64 || n_batches < 1 || n_batches > 100000 || n_builds < 0 ||
            n_builds > 10000 || n_days < 0 || n_days > 3650) {
            fprintf(stderr, "bench_http: bad counts\n");
            return 2;
        }
        void **z = calloc(n_batches, sizeof *z);
        size_t *zn = calloc(n_batches, sizeof *zn);
        double *lat = calloc(n_batches, sizeof *lat);
        bl_buf b;
        bl_buf_init(&b, 0);
        size_t ztotal = 0;
        for (uint32_t i = 0; i < n_batches; i++) {
            bl_buf_reset(&b);
            char build[16] = "1.0";
            if (n_builds > 0)
                snprintf(build, sizeof build, "b%03u", i % (uint32_t)n_builds);
            bg_origin_us = BG_ORIGIN_US - (int64_t)n_days * 86400000000ll * i / n_batches;
            if (bg_batch(&b, i + 1000000u * (uint32_t)getpid(), per, 5000, argv[3], build))
                return 1;
            size_t cap = ZSTD_compressBound(b.len);
            z[i] = malloc(cap);
            zn[i] = ZSTD_compress(z[i], cap, b.data, b.len, 3);
            ztotal += zn[i];
        }
        job *jobs = calloc((size_t)n_conn, sizeof *jobs);
        pthread_t *th = calloc((size_t)n_conn, sizeof *th);
        struct timespec wall0;
        clock_gettime(CLOCK_REALTIME, &wall0);
        double t0 = now_s();
        for (int c = 0; c < n_conn; c++) {
            jobs[c] = (job){ port, c, n_conn, argv[3], argv[4], z, zn, n_batches, lat, 0 };
            pthread_create(&th[c], NULL, worker, &jobs[c]);
        }
        int errors = 0;
        for (int c = 0; c < n_conn; c++) {
            pthread_join(th[c], NULL);
            errors += jobs[c].errors;
        }
        double t = now_s() - t0;
        uint64_t records = (uint64_t)n_batches * (per & ~1u);
        printf("ingest   %u batches x %u records over %d connections, %.1f MB zstd sent\n",
               n_batches, per, n_conn, ztotal / 1e6);
        printf("ingest   %.2f M records/s acknowledged (202), %.0f batches/s, %.1f MB/s, "
               "%d errors\n",
               records / t / 1e6, n_batches / t, ztotal / t / 1e6, errors);
        percentiles(lat, n_batches, "ingest  ");
        printf("ingest   first POST at %lld.%09ld\n", (long long)wall0.tv_sec, wall0.tv_nsec);
        return errors ? 1 : 0;
    }
    if (argc == 6 && !strcmp(argv[1], "query")) {
        int port = atoi(argv[2]), n = atoi(argv[5]);
        if (n < 1 || n > 100000)
            return 2;
        double *lat = calloc((size_t)n, sizeof *lat);
        int fd = connect_to(port);
        char head[1024];
        snprintf(head, sizeof head,
                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n",
                 argv[3], argv[4]);
        int errors = 0;
        for (int i = 0; i < n; i++) {
            double t0 = now_s();
            if (roundtrip(fd, head, NULL, 0) != 200)
                errors++;
            lat[i] = now_s() - t0;
        }
        close(fd);
        percentiles(lat, (size_t)n, "query   ");
        return errors ? 1 : 0;
    }
    fprintf(stderr, "usage: bench_http ingest PORT APP KEY CONNECTIONS BATCHES RECORDS "
                    "[BUILDS DAYS]\n"
                    "       bench_http query PORT PATH KEY REQUESTS\n");
    return 2;
}
