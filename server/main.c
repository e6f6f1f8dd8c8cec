/*
 * beatline-server — the Beatline server: ingestion, symbolication, call
 * trees and aggregates over HTTP (http/http.h), stored in SQLite or
 * PostgreSQL (--store URL, store/db.h).
 *
 *   beatline-server [options]                 run the server
 *   beatline-server [--data DIR] [--store URL] app create NAME
 *   beatline-server [--data DIR] [--store URL] app list
 *   beatline-server [--data DIR] [--store URL] app rotate-keys NAME
 *   beatline-server [--data DIR] [--store URL] app set NAME QUOTA=N|default ...
 *                    [--keep-raw-days N|default] [--keep-days N|default]
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
#include "pipeline/buildcache.h"
#include "pipeline/datadir.h"
#include "pipeline/datahealth.h"
#include "pipeline/processor.h"
#include "pipeline/retention.h"
#include "store/apps.h"
#include "store/db.h"
#include "store/retention.h"

/* The dashboard's folder when --web is not given: BIN/../share/beatline/web,
 * BIN the folder of /proc/self/exe (installed, and in a build tree, where
 * web/CMakeLists.txt writes BUILD/share/beatline/web); NULL when it holds
 * no index.html. The answer is written into buf (n bytes). */
static const char *default_web_dir(char *buf, size_t n)
{
    char exe[BL_PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return NULL;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    char index[BL_PATH_MAX + 16];
    int w = snprintf(buf, n, "%s/../share/beatline/web", exe);
    if (w < 0 || (size_t)w >= n)
        return NULL;
    snprintf(index, sizeof index, "%s/index.html", buf);
    return access(index, R_OK) == 0 ? buf : NULL;
}

static const char usage[] =
    "usage: beatline-server [options]\n"
    "       beatline-server [--data DIR] [--store URL] app create NAME\n"
    "       beatline-server [--data DIR] [--store URL] app list\n"
    "       beatline-server [--data DIR] [--store URL] app rotate-keys NAME\n"
    "       beatline-server [--data DIR] [--store URL] app set NAME QUOTA=N|default ...\n"
    "                       [--keep-raw-days N|default] [--keep-days N|default]\n"
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
    "  --store URL              where aggregates, apps and builds are stored\n"
    "                           [BEATLINE_STORE]: sqlite:PATH (an SQLite file), or\n"
    "                           postgresql://USER:PASSWORD@HOST:PORT/DB (a libpq\n"
    "                           URI; several servers may share it; the schema is\n"
    "                           created or migrated at start). Default: SQLite in\n"
    "                           DIR/beatline.db. The password is never printed.\n"
    "  --threads N              HTTP worker threads [BEATLINE_THREADS] (default 4)\n"
    "  --max-body BYTES         largest batch or stack trace as sent (compressed)\n"
    "                           [BEATLINE_MAX_BODY] (default 16777216 = 16 MiB)\n"
    "  --max-decompressed BYTES largest decompressed batch or method-ID file\n"
    "                           [BEATLINE_MAX_DECOMPRESSED] (default 268435456)\n"
    "  --max-mapping BYTES      largest decompressed mapping.txt\n"
    "                           [BEATLINE_MAX_MAPPING] (default 1073741824)\n"
    "  --max-inflight BYTES     memory held by all requests together (bodies as\n"
    "                           sent and decompressed, decoder state, answers being\n"
    "                           built, method-ID files parsed on uploads); past it\n"
    "                           requests get 503 + Retry-After. Not counted: mapping\n"
    "                           index builds (bounded by --max-mapping)\n"
    "                           [BEATLINE_MAX_INFLIGHT] (default 536870912; at least\n"
    "                           --max-decompressed + --max-body + 80 MiB)\n"
    "  --min-free BYTES         free space the data directory's disk keeps: below\n"
    "                           it POST/PUT get 507 and /healthz 503\n"
    "                           [BEATLINE_MIN_FREE] (default 67108864 = 64 MiB)\n"
    "\n"
    "per-app ingest quotas on batches waiting for their build's method-ID file\n"
    "or mapping (past one, POST batches gets 429 + Retry-After; 0 = no limit;\n"
    "batches of builds that have their files are never refused):\n"
    "  --quota-waiting-builds N   builds with waiting batches\n"
    "                           [BEATLINE_QUOTA_WAITING_BUILDS] (default 50)\n"
    "  --quota-waiting-batches N  waiting batches\n"
    "                           [BEATLINE_QUOTA_WAITING_BATCHES] (default 10000)\n"
    "  --quota-waiting-bytes BYTES  bytes of waiting batches (as received)\n"
    "                           [BEATLINE_QUOTA_WAITING_BYTES] (default 1073741824)\n"
    "  --quota-new-builds N     builds first seen in a batch, per clock hour\n"
    "                           [BEATLINE_QUOTA_NEW_BUILDS] (default 100)\n"
    "  --prep-threads N         threads that decompress, decode and rebuild the\n"
    "                           call trees of queued batches ahead of the writer;\n"
    "                           0-8, 0 = the writer does it all\n"
    "                           [BEATLINE_PREP_THREADS] (default 1)\n"
    "  --txn-max-ms MS          a writer transaction takes batches as they come for\n"
    "                           at most this long, then commits; 1-60000 (it holds\n"
    "                           the database's write lock all that time)\n"
    "                           [BEATLINE_TXN_MAX_MS] (default 1000)\n"
    "  --txn-idle-ms MS         with no batch queued it waits this long for one\n"
    "                           before committing; 0-3600000\n"
    "                           [BEATLINE_TXN_IDLE_MS] (default 20)\n"
    "  --waiting-expiry SECONDS a batch waiting longer is deleted (counted in\n"
    "                           beatline_batches_expired_total); 1-3155760000\n"
    "                           (100 years)\n"
    "                           [BEATLINE_WAITING_EXPIRY] (default 604800 = 7 days)\n"
    "'app set' (below) overrides the quotas for one app.\n"
    "\n"
    "retention (a background thread deletes in small slices; 0 = keep for ever;\n"
    "'app set' overrides them for one app):\n"
    "  --keep-raw-days N        raw batches (batches/done) are deleted N days after\n"
    "                           they were received; aggregates stay\n"
    "                           [BEATLINE_KEEP_RAW_DAYS] (default 7; at most 36525)\n"
    "  --keep-days N            aggregates whose hour ended more than N days ago\n"
    "                           are deleted; a build left with none (and nothing\n"
    "                           newer) is deleted whole [BEATLINE_KEEP_DAYS]\n"
    "                           (default 90; at most 36525)\n"
    "  --keep-failed-days N     batches that could not be processed (batches/failed;\n"
    "                           PostgreSQL: failed raw_batches rows) are deleted N\n"
    "                           days after they failed; with PostgreSQL, uploaded\n"
    "                           contents no build names any more go 1 day after\n"
    "                           their last upload [BEATLINE_KEEP_FAILED_DAYS]\n"
    "                           (default 30; at most 36525)\n"
    "  --retention-interval SECONDS  between retention passes (one at start)\n"
    "                           [BEATLINE_RETENTION_INTERVAL] (default 3600)\n"
    "  (BEATLINE_TEST_CLOCK_OFFSET=SECONDS, for tests only: retention judges ages\n"
    "  by a clock that far ahead)\n"
    "\n"
    "other options:\n"
    "  --header-timeout SECONDS total time for a request's line and headers, from\n"
    "                           the connection (or the previous answer) on; past it\n"
    "                           408 and the connection is closed (slowloris)\n"
    "                           [BEATLINE_HEADER_TIMEOUT] (default 10; 2 while 3/4\n"
    "                           of --max-connections are open)\n"
    "  --body-timeout SECONDS   a body may take this long whatever its rate; past it\n"
    "                           it must average --min-body-rate or get 408\n"
    "                           [BEATLINE_BODY_TIMEOUT] (default 60)\n"
    "  --min-body-rate BYTES    bytes/s [BEATLINE_MIN_BODY_RATE] (default 16384)\n"
    "  --max-connections N      open connections, all clients together\n"
    "                           [BEATLINE_MAX_CONNECTIONS] (default 1000)\n"
    "  --max-connections-per-ip N  open connections from one address, 0 = no limit\n"
    "                           [BEATLINE_MAX_CONNECTIONS_PER_IP] (default 0: behind\n"
    "                           a proxy or NAT one address is every client)\n"
    "  --port-file FILE         write the bound port to FILE once listening\n"
    "  --web DIR                the dashboard's built files, served at /\n"
    "                           [BEATLINE_WEB] (default: BIN/../share/beatline/web,\n"
    "                           BIN the folder of this program, when it holds an\n"
    "                           index.html; 'none': no dashboard)\n"
    "  -h, --help               this text\n"
    "\n"
    "app commands print JSON; 'app create' and 'app rotate-keys' print the\n"
    "keys once: {\"app\", \"ingest_key\", \"upload_key\", \"read_key\"}. Keys are\n"
    "stored hashed and cannot be shown again. 'app set' sets the app's own\n"
    "ingest quotas (QUOTA: waiting-builds, waiting-batches, waiting-bytes,\n"
    "new-builds; N = 0 for no limit, 'default' for the server's option) and\n"
    "prints {\"app\", \"quotas\": {QUOTA: N or null = the server's option}};\n"
    "a running server applies them to the next batch. --keep-raw-days and\n"
    "--keep-days (also keep-raw-days=N, keep-days=N) set the app's retention in\n"
    "days (0 = for ever, 'default' = the server's option) and add\n"
    "\"retention\": {\"keep-raw-days\": N|null, \"keep-days\": N|null} to what it\n"
    "prints; a running server applies them at its next pass. 'app list' shows\n"
    "them as keep_raw_days / keep_days.\n";

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

/* app set NAME QUOTA=N|default ...: all or nothing (one transaction). */
static int app_set(bl_db *db, const char *name, int argc, char **argv)
{
    int64_t id;
    bl_err e = bl_apps_find(db, name, &id);
    if (e) {
        fprintf(stderr, "beatline-server: app set %s: %s\n", name,
                e == BL_ENOTFOUND ? "no such app" : bl_db_errmsg(db));
        return 2;
    }
    if (bl_db_begin(db)) {
        fprintf(stderr, "beatline-server: app set: %s\n", bl_db_errmsg(db));
        return 2;
    }
    int retention = 0;
    for (int i = 0; i < argc; i++) {
        /* retention: --keep-raw-days N, --keep-days N, keep-raw-days=N, keep-days=N */
        static const char *const keep[2] = { "keep-raw-days", "keep-days" };
        int kw = -1;
        const char *kv = NULL;
        for (int k = 0; k < 2; k++) {
            size_t kl = strlen(keep[k]);
            if (argv[i][0] == '-' && argv[i][1] == '-' && !strcmp(argv[i] + 2, keep[k])) {
                kw = k;
                kv = i + 1 < argc ? argv[++i] : "";
            } else if (!strncmp(argv[i], keep[k], kl) && argv[i][kl] == '=') {
                kw = k;
                kv = argv[i] + kl + 1;
            }
        }
        if (kw >= 0) {
            uint64_t d = 0;
            int dflt = !strcmp(kv, "default");
            if (!dflt && (parse_u64(kv, &d) || d > BL_RET_MAX_DAYS)) {
                fprintf(stderr, "beatline-server: app set: bad value '%s' for --%s (0-%d days, "
                                "0 = keep for ever, or 'default')\n",
                        kv, keep[kw], BL_RET_MAX_DAYS);
                bl_db_rollback(db);
                return 1;
            }
            if (bl_rs_set_keep(db, name, kw, dflt ? -1 : (int64_t)d) != BL_OK) {
                fprintf(stderr, "beatline-server: app set: %s\n", bl_db_errmsg(db));
                bl_db_rollback(db);
                return 2;
            }
            retention = 1;
            continue;
        }
        const char *eq = strchr(argv[i], '=');
        int which = -1;
        for (int k = 0; eq && k < BL_APP_QUOTAS; k++)
            if (strlen(bl_apps_quota_names[k]) == (size_t)(eq - argv[i]) &&
                !strncmp(argv[i], bl_apps_quota_names[k], (size_t)(eq - argv[i])))
                which = k;
        uint64_t v = 0;
        int dflt = eq && !strcmp(eq + 1, "default");
        if (which < 0 || (!dflt && (parse_u64(eq + 1, &v) || v > INT64_MAX))) {
            fprintf(stderr,
                    "beatline-server: app set: bad setting '%s' (QUOTA=N or QUOTA=default; "
                    "QUOTA: waiting-builds, waiting-batches, waiting-bytes, new-builds; or "
                    "--keep-raw-days N, --keep-days N)\n",
                    argv[i]);
            bl_db_rollback(db);
            return 1;
        }
        if (bl_apps_set_quota(db, name, which, dflt ? -1 : (int64_t)v) != BL_OK) {
            fprintf(stderr, "beatline-server: app set: %s\n", bl_db_errmsg(db));
            bl_db_rollback(db);
            return 2;
        }
    }
    int64_t q[BL_APP_QUOTAS];
    if (bl_db_commit(db) || bl_apps_quotas(db, id, q) != BL_OK) {
        fprintf(stderr, "beatline-server: app set: %s\n", bl_db_errmsg(db));
        bl_db_rollback(db);
        return 2;
    }
    printf("{\"app\": \"%s\", \"quotas\": {", name);
    for (int k = 0; k < BL_APP_QUOTAS; k++) {
        if (q[k] < 0)
            printf("%s\"%s\": null", k ? ", " : "", bl_apps_quota_names[k]);
        else
            printf("%s\"%s\": %lld", k ? ", " : "", bl_apps_quota_names[k], (long long)q[k]);
    }
    printf("}");
    if (retention) {
        bl_rs_app *apps;
        size_t n;
        if (bl_rs_apps(db, &apps, &n) != BL_OK) {
            printf("}\n");
            fprintf(stderr, "beatline-server: app set: %s\n", bl_db_errmsg(db));
            return 2;
        }
        for (size_t k = 0; k < n; k++) {
            if (apps[k].id != id)
                continue;
            printf(", \"retention\": {");
            for (int j = 0; j < 2; j++) {
                int64_t v = j ? apps[k].keep_days : apps[k].keep_raw_days;
                if (v < 0)
                    printf("%s\"%s\": null", j ? ", " : "", j ? "keep-days" : "keep-raw-days");
                else
                    printf("%s\"%s\": %lld", j ? ", " : "", j ? "keep-days" : "keep-raw-days",
                           (long long)v);
            }
            printf("}");
        }
        free(apps);
    }
    printf("}\n");
    return 0;
}

/* Checks a store URL (`--store`, BEATLINE_STORE; `from` names which) and
 * makes it the process's store (pipeline/datadir.h). 0, or 1 after a message
 * that never shows the URL (it may hold a password). */
static int set_store(const char *from, const char *url)
{
    char err[512];
    if (bl_db_url_check(url, err, sizeof err) != BL_OK) {
        fprintf(stderr, "beatline-server: %s: %s\n", from, err);
        return 1;
    }
    bl_datadir_set_store(url);
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
                                     : bl_db_errmsg(db));
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
                    e == BL_ENOTFOUND ? "no such app" : bl_db_errmsg(db));
            rc = 2;
        } else {
            printf("{\"app\": \"%s\", \"ingest_key\": \"%s\", \"upload_key\": \"%s\", "
                   "\"read_key\": \"%s\"}\n",
                   argv[1], keys[0], keys[1], keys[2]);
        }
    } else if (!strcmp(argv[0], "set") && argc >= 3) {
        rc = app_set(db, argv[1], argc - 2, argv + 2);
    } else if (!strcmp(argv[0], "list") && argc == 1) {
        bl_buf b;
        bl_buf_init(&b, 0);
        if (bl_apps_list_json(db, &b)) {
            fprintf(stderr, "beatline-server: app list: %s\n", bl_db_errmsg(db));
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
    const char *web = (env = getenv("BEATLINE_WEB")) && *env ? env : NULL;
    const char *port_file = NULL;
    uint64_t threads = 4, max_body = 16u << 20, max_dec = 256u << 20, max_map = 1u << 30,
             max_inflight = 512u << 20, min_free = 64u << 20, header_timeout = 10,
             body_timeout = 60, min_body_rate = 16384, max_conns = 1000, max_per_ip = 0;
    /* per-app ingest quotas (pipeline/quota.h) and the expiry of waiting batches */
    uint64_t q_builds = 50, q_batches = 10000, q_bytes = 1u << 30, q_new = 100,
             expiry = 7 * 24 * 3600, prep_threads = 1, txn_max_ms = 1000, txn_idle_ms = 20;
    /* retention (pipeline/retention.h) */
    uint64_t keep_raw = 7, keep_days = 90, ret_interval = 3600, keep_failed = 30;
    struct {
        const char *env;
        uint64_t *v;
    } envs[] = { { "BEATLINE_THREADS", &threads },
                 { "BEATLINE_MAX_BODY", &max_body },
                 { "BEATLINE_MAX_DECOMPRESSED", &max_dec },
                 { "BEATLINE_MAX_MAPPING", &max_map },
                 { "BEATLINE_MAX_INFLIGHT", &max_inflight },
                 { "BEATLINE_MIN_FREE", &min_free },
                 { "BEATLINE_QUOTA_WAITING_BUILDS", &q_builds },
                 { "BEATLINE_QUOTA_WAITING_BATCHES", &q_batches },
                 { "BEATLINE_QUOTA_WAITING_BYTES", &q_bytes },
                 { "BEATLINE_QUOTA_NEW_BUILDS", &q_new },
                 { "BEATLINE_WAITING_EXPIRY", &expiry },
                 { "BEATLINE_KEEP_RAW_DAYS", &keep_raw },
                 { "BEATLINE_KEEP_DAYS", &keep_days },
                 { "BEATLINE_KEEP_FAILED_DAYS", &keep_failed },
                 { "BEATLINE_RETENTION_INTERVAL", &ret_interval },
                 { "BEATLINE_PREP_THREADS", &prep_threads },
                 { "BEATLINE_TXN_MAX_MS", &txn_max_ms },
                 { "BEATLINE_TXN_IDLE_MS", &txn_idle_ms },
                 { "BEATLINE_HEADER_TIMEOUT", &header_timeout },
                 { "BEATLINE_BODY_TIMEOUT", &body_timeout },
                 { "BEATLINE_MIN_BODY_RATE", &min_body_rate },
                 { "BEATLINE_MAX_CONNECTIONS", &max_conns },
                 { "BEATLINE_MAX_CONNECTIONS_PER_IP", &max_per_ip } };
    for (size_t i = 0; i < sizeof envs / sizeof *envs; i++)
        if ((env = getenv(envs[i].env)) && *env && parse_u64(env, envs[i].v)) {
            fprintf(stderr, "beatline-server: %s: not a number: %s\n", envs[i].env, env);
            return 1;
        }
    /* test only: the clock retention judges ages by runs this far ahead */
    int64_t clock_offset = 0;
    if ((env = getenv("BEATLINE_TEST_CLOCK_OFFSET")) && *env) {
        char *end;
        errno = 0;
        long long v = strtoll(env, &end, 10);
        if (errno || *end || v < -3155760000ll || v > 3155760000ll) {
            fprintf(stderr, "beatline-server: BEATLINE_TEST_CLOCK_OFFSET: not a number of "
                            "seconds (at most 100 years): %s\n", env);
            return 1;
        }
        clock_offset = v;
        fprintf(stderr, "beatline-server: TEST ONLY: retention clock offset %lld s\n", v);
    }
    /* test only: the committer waits this long before each COMMIT, so that
     * tests can act while a round commits and the next one aggregates */
    uint32_t commit_delay_ms = 0;
    if ((env = getenv("BEATLINE_TEST_COMMIT_DELAY_MS")) && *env) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(env, &end, 10);
        if (errno || *end || v > 60000) {
            fprintf(stderr, "beatline-server: BEATLINE_TEST_COMMIT_DELAY_MS: not a number of "
                            "ms (at most 60000): %s\n", env);
            return 1;
        }
        commit_delay_ms = (uint32_t)v;
        fprintf(stderr, "beatline-server: TEST ONLY: commits delayed %lu ms\n", v);
    }
    /* test only: every batch's queueing fails as when out of memory (the
     * batch is durable, 202, processed at the next start) */
    int fail_enqueue = (env = getenv("BEATLINE_TEST_FAIL_ENQUEUE")) && !strcmp(env, "1");
    if (fail_enqueue)
        fprintf(stderr, "beatline-server: TEST ONLY: batches are not queued\n");
    /* test only: at most this many items (batches, build changes) per round */
    uint32_t txn_batches = 256;
    if ((env = getenv("BEATLINE_TEST_TXN_MAX_BATCHES")) && *env) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(env, &end, 10);
        if (errno || *end || v < 1 || v > 256) {
            fprintf(stderr, "beatline-server: BEATLINE_TEST_TXN_MAX_BATCHES: not 1-256: %s\n",
                    env);
            return 1;
        }
        txn_batches = (uint32_t)v;
        fprintf(stderr, "beatline-server: TEST ONLY: at most %lu item(s) per transaction\n", v);
    }
    if ((env = getenv("BEATLINE_STORE")) && *env && set_store("BEATLINE_STORE", env))
        return 1;
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
        if (!strcmp(a, "--store") && v) {
            if (set_store("--store", v))
                return 1;
            continue;
        }
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
        else if (!strcmp(a, "--min-free"))
            bad = parse_u64(v, &min_free);
        else if (!strcmp(a, "--quota-waiting-builds"))
            bad = parse_u64(v, &q_builds);
        else if (!strcmp(a, "--quota-waiting-batches"))
            bad = parse_u64(v, &q_batches);
        else if (!strcmp(a, "--quota-waiting-bytes"))
            bad = parse_u64(v, &q_bytes);
        else if (!strcmp(a, "--quota-new-builds"))
            bad = parse_u64(v, &q_new);
        else if (!strcmp(a, "--prep-threads"))
            bad = parse_u64(v, &prep_threads) || prep_threads > 8;
        else if (!strcmp(a, "--txn-max-ms"))
            bad = parse_u64(v, &txn_max_ms) || txn_max_ms == 0 || txn_max_ms > 60000;
        else if (!strcmp(a, "--txn-idle-ms"))
            bad = parse_u64(v, &txn_idle_ms) || txn_idle_ms > 3600000;
        else if (!strcmp(a, "--waiting-expiry"))
            bad = parse_u64(v, &expiry) || expiry == 0;
        else if (!strcmp(a, "--keep-raw-days"))
            bad = parse_u64(v, &keep_raw);
        else if (!strcmp(a, "--keep-days"))
            bad = parse_u64(v, &keep_days);
        else if (!strcmp(a, "--keep-failed-days"))
            bad = parse_u64(v, &keep_failed);
        else if (!strcmp(a, "--retention-interval"))
            bad = parse_u64(v, &ret_interval);
        else if (!strcmp(a, "--header-timeout"))
            bad = parse_u64(v, &header_timeout);
        else if (!strcmp(a, "--body-timeout"))
            bad = parse_u64(v, &body_timeout);
        else if (!strcmp(a, "--min-body-rate"))
            bad = parse_u64(v, &min_body_rate);
        else if (!strcmp(a, "--max-connections"))
            bad = parse_u64(v, &max_conns);
        else if (!strcmp(a, "--max-connections-per-ip"))
            bad = parse_u64(v, &max_per_ip);
        else if (!strcmp(a, "--port-file"))
            port_file = v;
        else if (!strcmp(a, "--web"))
            web = v;
        else {
            fprintf(stderr, "beatline-server: unknown option '%s'\n%s", a, usage);
            return 1;
        }
        if (bad) {
            fprintf(stderr, "beatline-server: bad value for %s: '%s'\n", a, v);
            return 1;
        }
    }

    if (prep_threads > 8 || txn_max_ms == 0 || txn_max_ms > 60000 || txn_idle_ms > 3600000) {
        fprintf(stderr, "beatline-server: --prep-threads (BEATLINE_PREP_THREADS) must be 0-8, "
                        "--txn-max-ms 1-60000, --txn-idle-ms 0-3600000\n");
        return 1;
    }
    if (threads == 0 || threads > 256) {
        fprintf(stderr, "beatline-server: threads must be 1-256\n");
        return 1;
    }
    /* bounded so that "now - expiry" and the like stay far from overflow */
    if (expiry == 0 || expiry > BL_WAITING_EXPIRY_MAX) {
        fprintf(stderr, "beatline-server: --waiting-expiry (BEATLINE_WAITING_EXPIRY) must be "
                        "1-%llu seconds (100 years)\n",
                (unsigned long long)BL_WAITING_EXPIRY_MAX);
        return 1;
    }
    if (keep_raw > BL_RET_MAX_DAYS || keep_days > BL_RET_MAX_DAYS ||
        keep_failed > BL_RET_MAX_DAYS || ret_interval == 0 || ret_interval > 31536000) {
        fprintf(stderr, "beatline-server: --keep-raw-days, --keep-days and --keep-failed-days "
                        "must be 0-%d (0 = "
                        "keep for ever), --retention-interval 1-31536000 seconds\n",
                BL_RET_MAX_DAYS);
        return 1;
    }
    if (header_timeout == 0 || header_timeout > 3600 || body_timeout == 0 ||
        body_timeout > 86400 || min_body_rate == 0 || max_conns == 0 || max_conns > 100000 ||
        max_per_ip > max_conns) {
        fprintf(stderr, "beatline-server: --header-timeout must be 1-3600, --body-timeout "
                        "1-86400, --min-body-rate at least 1, --max-connections 1-100000 and "
                        "--max-connections-per-ip 0 to --max-connections\n");
        return 1;
    }
    /* one server per data directory: two writers would hand out the same
     * call-path node ids. A missing, unwritable or locked directory is
     * told apart (pipeline/datahealth.h). */
    int lock_fd = -1;
    char derr[BL_PATH_MAX + 256];
    if (bl_datadir_open(data, &lock_fd, derr, sizeof derr) != BL_OK) {
        fprintf(stderr, "beatline-server: %s\n", derr);
        return 1;
    }
    /* temporary files of uploads cut short by a crash */
    bl_datadir_clean_tmp(data);
    /* build folders of the layout before issue 11 (hex names) */
    unsigned migrated = 0;
    if (bl_datadir_migrate(data, &migrated) != BL_OK) {
        fprintf(stderr, "beatline-server: %s: cannot migrate the build folders: %s\n", data,
                strerror(errno));
        return 1;
    }
    if (migrated)
        fprintf(stderr, "beatline-server: renamed %u build folder(s) to the hashed layout\n",
                migrated);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char err[512] = "";
    /* builds whose deletion a kill -9 cut short, before the writer looks */
    if (bl_retention_recover(data, err, sizeof err) != BL_OK) {
        fprintf(stderr, "beatline-server: %s\n", err);
        return 1;
    }
    /* a PostgreSQL store's files are fetched up to the upload caps */
    bl_buildcache_limits(max_map, max_dec);
    bl_proc_opts po = { .data_dir = data, .max_batches_per_txn = txn_batches,
                        .max_decompressed = max_dec,
                        .quota = { q_builds, q_batches, q_bytes, q_new },
                        .waiting_expiry_s = expiry,
                        .prep_threads = prep_threads ? (uint32_t)prep_threads : BL_PREP_NONE,
                        .txn_max_ms = (uint32_t)txn_max_ms,
                        .txn_idle_ms = txn_idle_ms ? (uint32_t)txn_idle_ms : BL_TXN_IDLE_NONE,
                        .test_commit_delay_ms = commit_delay_ms,
                        .test_fail_enqueue = fail_enqueue };
    bl_processor *proc;
    if (bl_processor_start(&po, &proc, err, sizeof err) != BL_OK) {
        fprintf(stderr, "beatline-server: %s\n", err);
        return 1;
    }
    bl_retention_opts ro = { .data_dir = data, .keep_raw_days = keep_raw,
                             .keep_days = keep_days, .keep_failed_days = keep_failed,
                             .interval_s = ret_interval,
                             .clock_offset_s = clock_offset, .proc = proc };
    bl_retention *ret;
    if (bl_retention_start(&ro, &ret, err, sizeof err) != BL_OK) {
        fprintf(stderr, "beatline-server: %s\n", err);
        bl_processor_stop(proc);
        return 1;
    }
    bl_http_config hc = { addr, port, data, max_body, max_dec, max_map, (unsigned)threads,
                          max_inflight, proc, min_free, (unsigned)header_timeout,
                          (unsigned)body_timeout, min_body_rate, (unsigned)max_conns,
                          (unsigned)max_per_ip, ret, NULL };
    /* the largest single request must fit: its body as sent and
     * decompressed plus decoder state (zstd window <= 8 MiB) and slack, and
     * for a retrace the answer (at most 64 MiB, h_retrace.c) */
    uint64_t slack = (16u << 20) + (64u << 20), least = UINT64_MAX;
    if (max_body <= UINT64_MAX - slack && max_dec <= UINT64_MAX - slack - max_body)
        least = max_dec + max_body + slack;
    if (hc.max_inflight < least)
        hc.max_inflight = least;
    char web_default[BL_PATH_MAX];
    if (!web)
        web = default_web_dir(web_default, sizeof web_default);
    else if (!strcmp(web, "none"))
        web = NULL;
    hc.web_dir = web;
    bl_http *http;
    if (bl_http_start(&hc, &http, err, sizeof err) != BL_OK) {
        fprintf(stderr, "beatline-server: %s\n", err);
        bl_retention_stop(ret);
        bl_processor_stop(proc);
        return 1;
    }
    char store[BL_PATH_MAX], shown[256];
    if (bl_datadir_db(data, store) != BL_OK)
        snprintf(store, sizeof store, "?");
    fprintf(stderr,
            "beatline-server: listening on http://%s%s%s:%u, data in %s, store %s, %s%s\n",
            strchr(addr, ':') ? "[" : "", addr, strchr(addr, ':') ? "]" : "",
            (unsigned)bl_http_port(http), data, bl_db_url_redact(store, shown, sizeof shown),
            web ? "dashboard from " : "no dashboard", web ? web : " (--web DIR)");
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        if (!f || fprintf(f, "%u\n", (unsigned)bl_http_port(http)) < 0 || fclose(f) != 0)
            fprintf(stderr, "beatline-server: cannot write %s\n", port_file);
    }
    while (!stop_flag)
        pause();
    fprintf(stderr, "beatline-server: stopping\n");
    bl_http_stop(http);
    bl_retention_stop(ret); /* before the writer: it asks the writer to delete builds */
    bl_processor_stop(proc); /* commits the open transaction; the rest waits on disk */
    close(lock_fd);
    return 0;
}
