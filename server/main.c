/*
 * beatline-server — the Beatline server: ingestion, symbolication, call
 * trees and aggregates over HTTP (http/http.h), stored in SQLite.
 *
 *   beatline-server [options]                 run the server
 *   beatline-server [--data DIR] app create NAME
 *   beatline-server [--data DIR] app list
 *   beatline-server [--data DIR] app rotate-keys NAME
 *
 * Exit status: 0 on a clean stop (SIGINT/SIGTERM); 1 on usage or start-up
 * errors; 2 when an app command fails.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/http.h"
#include "pipeline/datadir.h"
#include "pipeline/processor.h"
#include "store/apps.h"
#include "store/db.h"

static const char usage[] =
    "usage: beatline-server [options]\n"
    "       beatline-server [--data DIR] app create NAME\n"
    "       beatline-server [--data DIR] app list\n"
    "       beatline-server [--data DIR] app rotate-keys NAME\n"
    "\n"
    "Runs the Beatline server: apps POST batches of method traces, CI uploads\n"
    "each build's mapping.txt and method-ID file, people query slow methods\n"
    "and call trees over HTTP (JSON). See docs/api.md.\n"
    "\n"
    "options (environment variable in brackets):\n"
    "  --listen ADDR:PORT       where to listen [BEATLINE_LISTEN]\n"
    "                           (default 127.0.0.1:8080; port 0 = any free port;\n"
    "                           IPv6 as [::1]:8080)\n"
    "  --data DIR               data directory: SQLite database, raw batches,\n"
    "                           mappings [BEATLINE_DATA] (default ./beatline-data)\n"
    "  --threads N              HTTP worker threads [BEATLINE_THREADS] (default 4)\n"
    "  --max-body BYTES         largest batch or stack trace as sent (compressed)\n"
    "                           [BEATLINE_MAX_BODY] (default 16777216 = 16 MiB)\n"
    "  --max-decompressed BYTES largest decompressed batch or method-ID file\n"
    "                           [BEATLINE_MAX_DECOMPRESSED] (default 268435456)\n"
    "  --max-mapping BYTES      largest decompressed mapping.txt\n"
    "                           [BEATLINE_MAX_MAPPING] (default 1073741824)\n"
    "  --max-inflight BYTES     memory held by all requests together (bodies as\n"
    "                           sent and decompressed, decoder state, answers being\n"
    "                           built); past it requests get 503 + Retry-After\n"
    "                           [BEATLINE_MAX_INFLIGHT] (default 536870912; at least\n"
    "                           --max-decompressed + --max-body + 16 MiB)\n"
    "  --port-file FILE         write the bound port to FILE once listening\n"
    "  -h, --help               this text\n"
    "\n"
    "app commands print JSON; 'app create' and 'app rotate-keys' print the\n"
    "keys once: {\"app\", \"ingest_key\", \"upload_key\", \"read_key\"}. Keys are\n"
    "stored hashed and cannot be shown again.\n";

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

/* "127.0.0.1:8080", "[::1]:8080", ":8080" */
static int parse_listen(const char *s, char *addr, size_t an, uint16_t *port)
{
    const char *colon;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= an)
            return -1;
        memcpy(addr, s + 1, (size_t)(rb - s - 1));
        addr[rb - s - 1] = '\0';
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= an)
            return -1;
        memcpy(addr, s, (size_t)(colon - s));
        addr[colon - s] = '\0';
        if (!addr[0])
            snprintf(addr, an, "0.0.0.0");
    }
    uint64_t p;
    if (parse_u64(colon + 1, &p) || p > 65535)
        return -1;
    *port = (uint16_t)p;
    return 0;
}

static int app_command(const char *data, int argc, char **argv)
{
    if (argc < 1) {
        fputs(usage, stderr);
        return 1;
    }
    char err[512], dbp[BL_PATH_MAX];
    if (bl_datadir_init(data) != BL_OK) {
        fprintf(stderr, "beatline-server: %s: %s\n", data, strerror(errno));
        return 2;
    }
    bl_db *db;
    if (bl_datadir_db(data, dbp) || bl_db_open(dbp, 0, &db, err, sizeof err)) {
        fprintf(stderr, "beatline-server: %s\n", err);
        return 2;
    }
    int rc = 0;
    char keys[3][64];
    if (!strcmp(argv[0], "create") && argc == 2) {
        int exists;
        bl_err e = bl_apps_create(db, argv[1], keys, &exists);
        if (e) {
            fprintf(stderr, "beatline-server: app create %s: %s\n", argv[1],
                    exists ? "an app with this name exists"
                    : e == BL_EINVAL ? "bad name (1-64 characters of A-Z a-z 0-9 . _ -)"
                                     : sqlite3_errmsg(bl_db_handle(db)));
            rc = 2;
        } else {
            printf("{\"app\": \"%s\", \"ingest_key\": \"%s\", \"upload_key\": \"%s\", "
                   "\"read_key\": \"%s\"}\n",
                   argv[1], keys[0], keys[1], keys[2]);
        }
    } else if (!strcmp(argv[0], "rotate-keys") && argc == 2) {
        bl_err e = bl_apps_rotate_keys(db, argv[1], keys);
        if (e) {
            fprintf(stderr, "beatline-server: app rotate-keys %s: %s\n", argv[1],
                    e == BL_ENOTFOUND ? "no such app" : sqlite3_errmsg(bl_db_handle(db)));
            rc = 2;
        } else {
            printf("{\"app\": \"%s\", \"ingest_key\": \"%s\", \"upload_key\": \"%s\", "
                   "\"read_key\": \"%s\"}\n",
                   argv[1], keys[0], keys[1], keys[2]);
        }
    } else if (!strcmp(argv[0], "list") && argc == 1) {
        bl_buf b;
        bl_buf_init(&b, 0);
        if (bl_apps_list_json(db, &b)) {
            fprintf(stderr, "beatline-server: app list: %s\n", sqlite3_errmsg(bl_db_handle(db)));
            rc = 2;
        } else {
            printf("%s\n", b.data);
        }
        bl_buf_cleanup(&b);
    } else {
        fputs(usage, stderr);
        rc = 1;
    }
    bl_db_close(db);
    return rc;
}

int main(int argc, char **argv)
{
    const char *env;
    char addr[128] = "127.0.0.1";
    uint16_t port = 8080;
    const char *data = (env = getenv("BEATLINE_DATA")) && *env ? env : "./beatline-data";
    const char *port_file = NULL;
    uint64_t threads = 4, max_body = 16u << 20, max_dec = 256u << 20, max_map = 1u << 30,
             max_inflight = 512u << 20;
    struct {
        const char *env;
        uint64_t *v;
    } envs[] = { { "BEATLINE_THREADS", &threads },
                 { "BEATLINE_MAX_BODY", &max_body },
                 { "BEATLINE_MAX_DECOMPRESSED", &max_dec },
                 { "BEATLINE_MAX_MAPPING", &max_map },
                 { "BEATLINE_MAX_INFLIGHT", &max_inflight } };
    for (size_t i = 0; i < sizeof envs / sizeof *envs; i++)
        if ((env = getenv(envs[i].env)) && *env && parse_u64(env, envs[i].v)) {
            fprintf(stderr, "beatline-server: %s: not a number: %s\n", envs[i].env, env);
            return 1;
        }
    if ((env = getenv("BEATLINE_LISTEN")) && *env &&
        parse_listen(env, addr, sizeof addr, &port)) {
        fprintf(stderr, "beatline-server: BEATLINE_LISTEN: bad address '%s'\n", env);
        return 1;
    }
    int i = 1;
    for (; i < argc; i += 2) { /* every option takes a value */
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(a, "app"))
            return app_command(data, argc - i - 1, argv + i + 1);
        if (a[0] != '-' || !v) {
            fprintf(stderr, "beatline-server: %s '%s'\n%s",
                    a[0] == '-' ? "missing value for" : "unexpected argument", a, usage);
            return 1;
        }
        int bad = 0;
        if (!strcmp(a, "--listen"))
            bad = parse_listen(v, addr, sizeof addr, &port);
        else if (!strcmp(a, "--data"))
            data = v;
        else if (!strcmp(a, "--threads"))
            bad = parse_u64(v, &threads) || threads == 0 || threads > 256;
        else if (!strcmp(a, "--max-body"))
            bad = parse_u64(v, &max_body) || max_body == 0;
        else if (!strcmp(a, "--max-decompressed"))
            bad = parse_u64(v, &max_dec) || max_dec == 0;
        else if (!strcmp(a, "--max-mapping"))
            bad = parse_u64(v, &max_map) || max_map == 0;
        else if (!strcmp(a, "--max-inflight"))
            bad = parse_u64(v, &max_inflight) || max_inflight == 0;
        else if (!strcmp(a, "--port-file"))
            port_file = v;
        else {
            fprintf(stderr, "beatline-server: unknown option '%s'\n%s", a, usage);
            return 1;
        }
        if (bad) {
            fprintf(stderr, "beatline-server: bad value for %s: '%s'\n", a, v);
            return 1;
        }
    }

    if (threads == 0 || threads > 256) {
        fprintf(stderr, "beatline-server: threads must be 1-256\n");
        return 1;
    }
    if (bl_datadir_init(data) != BL_OK) {
        fprintf(stderr, "beatline-server: %s: %s\n", data, strerror(errno));
        return 1;
    }
    /* one server per data directory: two writers would hand out the same
     * call-path node ids */
    char lockp[BL_PATH_MAX];
    int lock_fd = -1;
    if (bl_path_join(lockp, data, ".server.lock") == BL_OK)
        lock_fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "beatline-server: %s is in use by another beatline-server\n", data);
        return 1;
    }
    /* temporary files of uploads cut short by a crash */
    char tmpd[BL_PATH_MAX];
    DIR *td = bl_path_join(tmpd, data, "tmp") == BL_OK ? opendir(tmpd) : NULL;
    struct dirent *te;
    while (td && (te = readdir(td))) {
        char f[BL_PATH_MAX];
        if (te->d_name[0] != '.' && bl_path_join(f, tmpd, te->d_name) == BL_OK)
            unlink(f);
    }
    if (td)
        closedir(td);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char err[512] = "";
    bl_proc_opts po = { data, 256, max_dec, 0 };
    bl_processor *proc;
    if (bl_processor_start(&po, &proc, err, sizeof err) != BL_OK) {
        fprintf(stderr, "beatline-server: %s\n", err);
        return 1;
    }
    bl_http_config hc = { addr, port, data, max_body, max_dec, max_map, (unsigned)threads,
                          max_inflight, proc };
    /* the largest single request must fit: its body as sent and
     * decompressed plus decoder state (zstd window <= 8 MiB) and slack */
    uint64_t slack = 16u << 20, least = UINT64_MAX;
    if (max_body <= UINT64_MAX - slack && max_dec <= UINT64_MAX - slack - max_body)
        least = max_dec + max_body + slack;
    if (hc.max_inflight < least)
        hc.max_inflight = least;
    bl_http *http;
    if (bl_http_start(&hc, &http, err, sizeof err) != BL_OK) {
        fprintf(stderr, "beatline-server: %s\n", err);
        bl_processor_stop(proc);
        return 1;
    }
    fprintf(stderr, "beatline-server: listening on http://%s%s%s:%u, data in %s\n",
            strchr(addr, ':') ? "[" : "", addr, strchr(addr, ':') ? "]" : "",
            (unsigned)bl_http_port(http), data);
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        if (!f || fprintf(f, "%u\n", (unsigned)bl_http_port(http)) < 0 || fclose(f) != 0)
            fprintf(stderr, "beatline-server: cannot write %s\n", port_file);
    }
    while (!stop_flag)
        pause();
    fprintf(stderr, "beatline-server: stopping\n");
    bl_http_stop(http);
    bl_processor_stop(proc); /* commits the open transaction; the rest waits on disk */
    close(lock_fd);
    return 0;
}
