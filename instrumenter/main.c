/*
 * main.c — beatline-instrument: inserts methodId enter/exit probes into the
 * classes of jars, class folders and class files, and writes the method-ID
 * file (user documentation: instrumenter/README.md).
 *
 *   beatline-instrument [options] INPUT... -o OUTPUT --method-ids FILE
 *
 * Pipeline:
 *   0. read every input (jario: entry lists; class bytes in memory, a jar's
 *      still compressed);
 *   1. inflate (bl_jio_load) and parse every class in parallel (bl_cf_parse)
 *      and choose its candidate
 *      methods (code present, not abstract/native, not the runtime's,
 *      allowed by the rules, not trivial under --skip-trivial, not of at
 *      most N code bytes under --skip-small N);
 *   2. assign ids on the sorted (class, name, descriptor) triples
 *      (methodids: deterministic, base ids kept), check the method-ID file
 *      with the server's reader;
 *   2b. launch hooks (issue 15): resolve the super-class chain of every class
 *      that declares a lifecycle method (hierarchy.h: inputs, then
 *      --classpath), so Application and Activity subclasses get hooks;
 *   3. rewrite every class with candidates in parallel (bl_probe_instrument)
 *      — probes first, then the launch hooks around them (a second
 *      bl_probe_instrument over the probed bytes, unguarded calls to
 *      io/beatline/runtime/Launch.enter/exit) — and deflate the result there
 *      (bl_jio_precompress);
 *   4. stage every output beside its target, then rename them all (outputs
 *      first, method-ID file last). Any error before 4 leaves nothing on
 *      disk.
 * Messages and warnings are printed in input order after each parallel
 * pass, so stderr, like the outputs, does not depend on the thread count.
 *
 * Exit status: 0 success, 1 bad input or I/O error, 2 usage error.
 */
#include "buildinfo.h"
#include "classfile.h"
#include "hierarchy.h"
#include "jario.h"
#include "jarstage.h"
#include "methodids.h"
#include "netsite.h"
#include "options.h"
#include "probe.h"
#include "rules.h"

#include "common/buf.h"
#include "common/fdio.h"
#include "ingest/methodid.h"

#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG BL_INSTR_PROG
#define RUNTIME_PKG "io/beatline/runtime/"
#define MAX_SHOWN_ERRORS 20
#define BASE_IDS_MAX (1u << 30)
#define OUT_CLASS_MAX (256u << 20)
#define ACC_STATIC 0x0008
#define ACC_NATIVE 0x0100
#define ACC_ABSTRACT 0x0400
#define ACC_MODULE 0x8000

/* ---- work units and threads ---------------------------------------------- */

typedef struct unit {
    bl_jio_input *in;
    bl_jio_entry *en;
    bl_cf *cf;          /* parsed class (pass 1), NULL when skipped */
    uint32_t *cand;     /* indices of candidate methods */
    size_t n_cand;
    bl_buf out;         /* instrumented bytes (pass 2) */
    size_t n_done;      /* methods that got probes */
    size_t n_callbacks; /* runtime callback methods left without probes (pass 1) */
    int net_ok;         /* its network call sites may be rewritten (pass 1) */
    bl_buf net;         /* the class with its network sites rewritten (pass 2) */
    bl_cf *net_cf;      /* net parsed (borrows it), what the probes go into; NULL: cf. cf
                           stays: the method-ID table borrows its names */
    size_t n_sites;     /* network call sites rewritten */
    int hook_kind;      /* BL_HIER_APPLICATION / _ACTIVITY: launch hooks go in (step 2b) */
    size_t n_hooks;     /* methods that got launch hooks (pass 2) */
    char *err;          /* first error (heap), NULL if none */
    bl_buf warns;       /* warning lines */
} unit;

typedef struct job {
    unit *u;
    size_t n;
    const bl_instr_opts *o;
    const bl_mids *mids;
    atomic_size_t next, done;
    void (*fn)(struct job *, unit *);
} job;

__attribute__((format(printf, 2, 3))) static void set_err(unit *u, const char *fmt, ...)
{
    if (u->err)
        return;
    char m[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    u->err = strdup(m);
    if (!u->err)
        u->err = (char *)"out of memory"; /* never freed: see free_units */
}

/* "INPUT!ENTRY" or, for a single class file, "INPUT". */
static void where(const unit *u, char *buf, size_t n)
{
    if (u->in->kind == BL_JIO_CLASS)
        snprintf(buf, n, "%s", u->in->path);
    else if (u->in->kind == BL_JIO_DIR)
        snprintf(buf, n, "%s/%s", u->in->path, u->en->name);
    else
        snprintf(buf, n, "%s!%s", u->in->path, u->en->name);
}

static int is_runtime_class(const char *cls, const char *runtime)
{
    size_t n = strlen(runtime);
    if (!strncmp(cls, RUNTIME_PKG, sizeof RUNTIME_PKG - 1))
        return 1;
    return !strncmp(cls, runtime, n) && (cls[n] == '\0' || cls[n] == '$');
}

/* The runtime's callback interfaces (issue 14): an app may hand the runtime
 * its own implementation (BeatlineConfig.Builder.clock, threadPolicy, log,
 * device, lifecycle, uploadGate), which is instrumented with the rest of the
 * app. The runtime calls these methods from inside its probes and its
 * threads, where it ignores their probes (Recorder's re-entry guard); the
 * probes would still cost a ThreadLocal lookup each (Clock.nowMicros: twice
 * per reading, two readings per probe pair). Methods listed by name and
 * descriptor, as the interfaces in runtime/src/io/beatline/runtime declare
 * them. */
static const struct callback_iface {
    const char *iface;
    const char *methods[4][2]; /* {name, descriptor}, a NULL name ends the list */
} CALLBACKS[] = {
    {RUNTIME_PKG "Clock", {{"nowMicros", "()J"}, {"close", "()V"}}},
    {RUNTIME_PKG "ThreadPolicy",
     {{"isMain", "(Ljava/lang/Thread;)Z"}, {"trace", "(Ljava/lang/Thread;)Z"}}},
    {RUNTIME_PKG "Log", {{"warn", "(Ljava/lang/String;)V"}, {"debug", "(Ljava/lang/String;)V"}}},
    {RUNTIME_PKG "DeviceInfo",
     {{"model", "()Ljava/lang/String;"}, {"osVersion", "()Ljava/lang/String;"}, {"sdkLevel", "()I"}}},
    {RUNTIME_PKG "Lifecycle", {{"install", "(L" RUNTIME_PKG "Lifecycle$Hooks;)V"}}},
    {RUNTIME_PKG "UploadGate", {{"blocked", "()Ljava/lang/String;"}}},
};

/* 1 when method m of cf implements a method of one of the CALLBACKS
 * interfaces that cf lists directly in its interfaces[] (same name and
 * descriptor, not static). A subclass of such a class, or a class that gets
 * the interface through another interface, is not recognised: its methods
 * keep their probes, which the runtime's guard ignores. */
static int callback_method(const bl_cf *cf, const bl_cf_method *m)
{
    if (m->access & ACC_STATIC)
        return 0;
    for (size_t i = 0; i < bl_cf_interface_count(cf); i++) {
        const char *in = bl_cf_interface_name(cf, i);
        if (!in || strncmp(in, RUNTIME_PKG, sizeof RUNTIME_PKG - 1))
            continue;
        for (size_t k = 0; k < sizeof CALLBACKS / sizeof CALLBACKS[0]; k++) {
            if (strcmp(in, CALLBACKS[k].iface))
                continue;
            for (size_t q = 0; q < 4 && CALLBACKS[k].methods[q][0]; q++)
                if (!strcmp(m->name, CALLBACKS[k].methods[q][0]) &&
                    !strcmp(m->desc, CALLBACKS[k].methods[q][1]))
                    return 1;
        }
    }
    return 0;
}

static int skipped_by_name(const char *entry)
{
    const char *b = strrchr(entry, '/');
    b = b ? b + 1 : entry;
    return !strcmp(b, "module-info.class") || !strcmp(b, "package-info.class");
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* 1 when the class has a CONSTANT_Methodref (JVMS §4.4.2) to owner.m1(I)V
 * or owner.m2(I)V. */
static int calls_either(const bl_cf *cf, const char *owner_want, const char *m1, const char *m2)
{
    size_t len;
    const uint8_t *b = bl_cf_bytes(cf, &len);
    for (uint32_t i = 1; i < bl_cf_pool_count(cf); i++) {
        if (bl_cf_pool_tag(cf, i) != 10) /* CONSTANT_Methodref */
            continue;
        const uint8_t *e = b + bl_cf_pool_off(cf, i);
        const char *owner = bl_cf_class_name(cf, rd16(e + 1));
        uint16_t nat = rd16(e + 3);
        if (!owner || strcmp(owner, owner_want) || bl_cf_pool_tag(cf, nat) != 12)
            continue;
        const uint8_t *t = b + bl_cf_pool_off(cf, nat);
        const char *name = bl_cf_utf8(cf, rd16(t + 1), NULL);
        const char *desc = bl_cf_utf8(cf, rd16(t + 3), NULL);
        if (name && desc && (!strcmp(name, m1) || !strcmp(name, m2)) && !strcmp(desc, "(I)V"))
            return 1;
    }
    return 0;
}

/* 1 when the class already calls the probes: runtime.i(I)V or
 * runtime.o(I)V. Apps never call these themselves, so such a class went
 * through beatline-instrument before, and probing it again would record
 * every call twice. */
static int already_probed(const bl_cf *cf, const char *runtime)
{
    return calls_either(cf, runtime, "i", "o");
}

/* 1 when the class already calls the launch hooks (BL_HOOK_CLASS.enter or
 * .exit (I)V): it went through beatline-instrument before. */
static int already_hooked(const bl_cf *cf)
{
    return calls_either(cf, BL_HOOK_CLASS, BL_HOOK_ENTER, BL_HOOK_EXIT);
}

/* Pass 1: parse, choose candidates. */
static void pass1(job *j, unit *u)
{
    char loc[1024], msg[512] = "";
    where(u, loc, sizeof loc);
    /* a jar's class entries arrive compressed: inflate and check them here,
     * on this thread */
    bl_err e = bl_jio_load(u->in, u->en, msg, sizeof msg);
    if (e) {
        set_err(u, "%s", msg);
        return;
    }
    if (skipped_by_name(u->en->name))
        return;
    e = bl_cf_parse(u->en->data, u->en->len, &u->cf, msg, sizeof msg);
    if (e) {
        u->cf = NULL;
        set_err(u, "%s: %s", loc, msg[0] ? msg : bl_err_str(e));
        return;
    }
    const char *cls = bl_cf_name(u->cf);
    int ex = 0;
    if ((bl_cf_access(u->cf) & ACC_MODULE) || is_runtime_class(cls, j->o->runtime_class))
        return;
    if (bl_rules_class_excluded(j->o->rules, cls, &ex) != BL_OK) {
        set_err(u, "%s: %s", loc, "out of memory");
        return;
    }
    if (already_probed(u->cf, j->o->runtime_class)) {
        if (ex)
            return; /* excluded: left as it is, sites too (its sites went to the runtime then) */
        set_err(u, "%s: already instrumented (it calls %s.i/o): instrument the original classes",
                loc, j->o->runtime_class);
        return;
    }
    u->net_ok = !j->o->no_network; /* rules choose probes only: sites everywhere */
    if (ex)
        return;
    size_t n = bl_cf_method_count(u->cf);
    u->cand = malloc((n ? n : 1) * sizeof *u->cand);
    if (!u->cand) {
        set_err(u, "%s: %s", loc, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const bl_cf_method *m = bl_cf_method_at(u->cf, i);
        int ok = 0;
        if (m->code_length == 0 || (m->access & (ACC_NATIVE | ACC_ABSTRACT)))
            continue;
        if (j->o->skip_trivial && m->trivial)
            continue;
        if (j->o->skip_small > 0 && m->code_length <= (uint32_t)j->o->skip_small)
            continue;
        if (bl_rules_method_allowed(j->o->rules, cls, m->name, m->desc, &ok) != BL_OK) {
            set_err(u, "%s: %s", loc, "out of memory");
            return;
        }
        if (!ok)
            continue;
        if (j->o->skip_callbacks && callback_method(u->cf, m)) {
            u->n_callbacks++;
            continue;
        }
        u->cand[u->n_cand++] = (uint32_t)i;
    }
}

static void on_probe_warn(void *ctx, const char *msg)
{
    unit *u = ctx;
    char loc[1024];
    where(u, loc, sizeof loc);
    if (bl_buf_puts(&u->warns, loc) || bl_buf_puts(&u->warns, ": ") ||
        bl_buf_puts(&u->warns, msg) || bl_buf_putc(&u->warns, '\n'))
        return; /* warnings are best effort */
}

/* Pass 2: rewrite. */
/* Pass 2, first: the network call sites (netsite.h), in place; the class
 * is parsed again from the rewritten bytes for the probes. A constant pool
 * without room for the hooks' entries leaves the class's sites alone, with
 * a warning (its requests are not timed; the include/exclude rules, which
 * keep the probes out of such a class, cannot keep the sites out). 0, or
 * -1 on an error (set). */
static int net_sites(unit *u)
{
    char loc[1024], msg[512] = "";
    bl_buf_init(&u->net, OUT_CLASS_MAX);
    bl_err e = bl_net_rewrite(u->cf, &u->net, &u->n_sites, msg, sizeof msg);
    if (e == BL_ETOOBIG) {
        u->n_sites = 0;
        bl_buf_reset(&u->net);
        char w[600];
        snprintf(w, sizeof w, "network call sites left as they are: %s", msg[0] ? msg : bl_err_str(e));
        on_probe_warn(u, w);
        return 0;
    }
    bl_cf *cf2 = NULL;
    if (!e && u->n_sites)
        e = bl_cf_parse((const uint8_t *)u->net.data, u->net.len, &cf2, msg, sizeof msg);
    if (e) {
        u->n_sites = 0;
        where(u, loc, sizeof loc);
        set_err(u, "%s: network call sites: %s", loc, msg[0] ? msg : bl_err_str(e));
        return -1;
    }
    u->net_cf = cf2;
    return 0;
}

/* Pass 2 for a class without probes: its output so far is the network
 * rewrite alone (when it had sites). */
static void net_only(unit *u)
{
    if (!u->n_sites)
        return;
    char loc[1024];
    bl_buf_init(&u->out, OUT_CLASS_MAX);
    if (bl_buf_append(&u->out, u->net.data, u->net.len)) {
        where(u, loc, sizeof loc);
        set_err(u, "%s: %s", loc, bl_err_str(BL_ENOMEM));
    }
}

/* The launch hooks of pass 2: a second bl_probe_instrument over the class
 * as it is now (the probed bytes in u->out when probes went in, else the
 * input), with unguarded calls to BL_HOOK_CLASS.enter/exit carrying the hook
 * number, so the hooks wrap the probes: enter hook, probe i, ..., probe o,
 * exit hook, and on an exception the probes' handler runs, then the hooks'. */
static void add_hooks(unit *u)
{
    char loc[1024], msg[512] = "";
    bl_cf *tmp = NULL, *cf = u->cf;
    bl_err e = BL_OK;
    if (u->n_done || u->n_sites) {
        e = bl_cf_parse((const uint8_t *)u->out.data, u->out.len, &tmp, msg, sizeof msg);
        if (e) {
            where(u, loc, sizeof loc);
            set_err(u, "%s: launch hooks: re-reading the probed class: %s", loc,
                    msg[0] ? msg : bl_err_str(e));
            return;
        }
        cf = tmp;
    }
    size_t n = bl_cf_method_count(cf), with = 0;
    uint32_t *hooks = malloc((n ? n : 1) * sizeof *hooks);
    if (!hooks) {
        where(u, loc, sizeof loc);
        set_err(u, "%s: %s", loc, "out of memory");
        bl_cf_free(tmp);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const bl_cf_method *m = bl_cf_method_at(cf, i);
        int h = m->code_length ? bl_hier_hook(u->hook_kind, m->name, m->desc, m->access)
                               : BL_HOOK_NONE;
        hooks[i] = h == BL_HOOK_NONE ? BL_PROBE_NO_ID : (uint32_t)h;
        with += h != BL_HOOK_NONE;
    }
    if (with) {
        bl_probe_opts po = {BL_HOOK_CLASS, on_probe_warn, u, 1};
        bl_buf out;
        size_t done = 0;
        bl_buf_init(&out, OUT_CLASS_MAX);
        e = bl_probe_instrument_named(cf, hooks, &po, BL_HOOK_ENTER, BL_HOOK_EXIT, &out, &done, msg,
                                      sizeof msg);
        if (e) {
            where(u, loc, sizeof loc);
            set_err(u, "%s: launch hooks: %s", loc, msg[0] ? msg : bl_err_str(e));
            bl_buf_cleanup(&out);
        } else if (done) {
            bl_cf_free(tmp); /* it borrowed u->out */
            tmp = NULL;
            bl_buf_cleanup(&u->out);
            u->out = out;
            u->n_hooks = done;
        } else {
            bl_buf_cleanup(&out);
        }
    }
    free(hooks);
    bl_cf_free(tmp);
}

/* Pass 2: rewrite (network call sites, probes, then launch hooks), compress. */
static void pass2(job *j, unit *u)
{
    if (!u->cf)
        return;
    if (u->net_ok && net_sites(u) != 0)
        return;
    if (!u->n_cand && !u->hook_kind && !u->n_sites)
        return;
    char loc[1024], msg[512] = "";
    size_t n = bl_cf_method_count(u->cf);
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        where(u, loc, sizeof loc);
        set_err(u, "%s: %s", loc, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        ids[i] = BL_PROBE_NO_ID;
    size_t with_id = 0;
    for (size_t k = 0; k < u->n_cand; k++) {
        const bl_cf_method *m = bl_cf_method_at(u->cf, u->cand[k]);
        uint32_t id = bl_mids_lookup(j->mids, bl_cf_name(u->cf), m->name, m->desc);
        if (id != BL_MIDS_NONE) {
            ids[u->cand[k]] = id;
            with_id++;
        }
    }
    if (with_id) {
        bl_probe_opts po = {j->o->runtime_class, on_probe_warn, u, j->o->unguarded};
        bl_buf_init(&u->out, OUT_CLASS_MAX);
        bl_err e = bl_probe_instrument(u->net_cf ? u->net_cf : u->cf, ids, &po, &u->out,
                                       &u->n_done, msg, sizeof msg);
        if (e) {
            where(u, loc, sizeof loc);
            set_err(u, "%s: %s", loc, msg[0] ? msg : bl_err_str(e));
        }
    } else {
        net_only(u);
    }
    free(ids);
    if (!u->err && u->hook_kind)
        add_hooks(u);
    if (!u->err && (u->n_done || u->n_sites || u->n_hooks)) {
        /* compress here, on this thread, rather than later in zip_close */
        u->en->out = (const uint8_t *)u->out.data;
        u->en->out_len = u->out.len;
        bl_err e = bl_jio_precompress(u->in, u->en);
        if (e != BL_OK) {
            where(u, loc, sizeof loc);
            set_err(u, "%s: compressing: %s", loc, bl_err_str(e));
        }
    }
}

static void *worker(void *arg)
{
    job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        j->fn(j, &j->u[i]);
        atomic_fetch_add(&j->done, 1);
    }
    bl_jio_thread_done();
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs fn over every unit on o->threads threads; shows progress on a
 * terminal. Returns 0, or -1 when a thread could not be started and the
 * work could not be done at all. */
static int run_parallel(job *j, int threads, int progress, const char *label)
{
    pthread_t tid[BL_INSTR_MAX_THREADS];
    int started = 0;
    atomic_init(&j->next, 0);
    atomic_init(&j->done, 0);
    if ((size_t)threads > j->n)
        threads = j->n ? (int)j->n : 1;
    for (int t = 0; t < threads; t++) {
        if (pthread_create(&tid[t], NULL, worker, j) != 0)
            break;
        started++;
    }
    if (!started)
        worker(j); /* no thread at all: do it here */
    double t0 = now_s();
    while (progress && started && atomic_load(&j->done) < j->n) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        size_t d = atomic_load(&j->done);
        double dt = now_s() - t0;
        fprintf(stderr, "\r" PROG ": %s %zu/%zu classes (%.0f classes/s)\033[K", label, d, j->n,
                dt > 0 ? (double)d / dt : 0.0);
    }
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    if (progress && started)
        fprintf(stderr, "\r\033[K");
    return 0;
}

/* Prints the errors of the units in order; returns how many. */
static size_t report_errors(const unit *u, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (u[i].err) {
            if (k < MAX_SHOWN_ERRORS)
                fprintf(stderr, PROG ": error: %s\n", u[i].err);
            k++;
        }
    if (k > MAX_SHOWN_ERRORS)
        fprintf(stderr, PROG ": ... and %zu more errors\n", k - MAX_SHOWN_ERRORS);
    return k;
}

static void free_units(unit *u, size_t n)
{
    for (size_t i = 0; u && i < n; i++) {
        bl_cf_free(u[i].cf);
        bl_cf_free(u[i].net_cf); /* before net, which it borrows */
        bl_buf_cleanup(&u[i].net);
        free(u[i].cand);
        bl_buf_cleanup(&u[i].out);
        bl_buf_cleanup(&u[i].warns);
        if (u[i].err && strcmp(u[i].err, "out of memory"))
            free(u[i].err);
    }
    free(u);
}

static void print_notice(void *ctx, const char *msg)
{
    const bl_instr_opts *o = ctx;
    if (!o->quiet)
        fprintf(stderr, PROG ": %s\n", msg);
}

static void print_warning(void *ctx, const char *msg)
{
    const bl_instr_opts *o = ctx;
    if (!o->quiet)
        fprintf(stderr, PROG ": warning: %s\n", msg);
}

/* ---- launch hooks (step 2b) ---------------------------------------------- */

/* Sets u->hook_kind for every class of the inputs that declares a lifecycle
 * method (bl_hier_hook_candidate) and lies below android/app/Application or
 * android/app/Activity, through the inputs and the --classpath elements
 * (*hier: made here, owned by the caller). A class whose chain meets a class
 * found nowhere gets no hooks; each missing class is warned about once,
 * naming the first class of the inputs below it. Classes of the runtime and
 * module classes get none. Rules (--include/--exclude, Matrix lines) govern
 * the probes, not the hooks. Returns 0, or 1 after printing an error. */
static int resolve_hooks(const bl_instr_opts *o, unit *units, size_t n_units, bl_hier **hier)
{
    char err[1024];
    size_t want = 0;
    for (size_t i = 0; i < n_units; i++) {
        unit *u = &units[i];
        if (!u->cf || (bl_cf_access(u->cf) & ACC_MODULE) ||
            is_runtime_class(bl_cf_name(u->cf), o->runtime_class))
            continue;
        size_t n = bl_cf_method_count(u->cf);
        for (size_t k = 0; k < n; k++) {
            const bl_cf_method *m = bl_cf_method_at(u->cf, k);
            if (m->code_length && bl_hier_hook_candidate(m->name, m->desc, m->access)) {
                u->hook_kind = -1; /* to resolve */
                want++;
                break;
            }
        }
    }
    if (bl_hier_new(hier) != BL_OK) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < o->n_classpath; i++) {
        bl_err e = bl_hier_add_classpath(*hier, o->classpath[i], print_notice, (void *)o, err,
                                         sizeof err);
        if (e) {
            fprintf(stderr, PROG ": error: --classpath %s\n", e == BL_ENOMEM ? "out of memory" : err);
            return 1;
        }
    }
    if (!want)
        return 0;
    for (size_t i = 0; i < n_units; i++)
        if (units[i].cf &&
            bl_hier_add(*hier, bl_cf_name(units[i].cf), bl_cf_super_name(units[i].cf)) != BL_OK) {
            fprintf(stderr, PROG ": out of memory\n");
            return 1;
        }
    char **warned = NULL;
    size_t n_warned = 0;
    int rc = 0;
    for (size_t i = 0; i < n_units && !rc; i++) {
        unit *u = &units[i];
        if (u->hook_kind != -1)
            continue;
        int kind = BL_HIER_OTHER;
        const char *missing = NULL;
        bl_err e = bl_hier_kind(*hier, bl_cf_name(u->cf), &kind, &missing, err, sizeof err);
        if (e) {
            fprintf(stderr, PROG ": error: %s\n", e == BL_ENOMEM ? "out of memory" : err);
            rc = 1;
            break;
        }
        u->hook_kind = kind == BL_HIER_APPLICATION || kind == BL_HIER_ACTIVITY ? kind : 0;
        if (u->hook_kind && already_hooked(u->cf)) {
            char loc[1024];
            where(u, loc, sizeof loc);
            fprintf(stderr,
                    PROG ": error: %s: already instrumented (it calls %s.%s/%s): instrument the "
                         "original classes\n",
                    loc, BL_HOOK_CLASS, BL_HOOK_ENTER, BL_HOOK_EXIT);
            rc = 1;
            break;
        }
        if (kind != BL_HIER_UNRESOLVED)
            continue;
        size_t k = 0;
        while (k < n_warned && strcmp(warned[k], missing))
            k++;
        if (k < n_warned)
            continue;
        char **t = realloc(warned, (n_warned + 1) * sizeof *t);
        if (t)
            warned = t;
        if (!t || !(warned[n_warned] = strdup(missing))) {
            fprintf(stderr, PROG ": out of memory\n");
            rc = 1;
            break;
        }
        n_warned++;
        if (!o->quiet)
            fprintf(stderr,
                    PROG ": warning: launch hooks: class %s (a super class of %s) is in no "
                         "input and no --classpath element: no launch hooks in the classes "
                         "below it\n",
                    missing, bl_cf_name(u->cf));
    }
    for (size_t k = 0; k < n_warned; k++)
        free(warned[k]);
    free(warned);
    return rc;
}

/* ---- outputs ------------------------------------------------------------- */

static const char *base_of(const char *p, char *buf, size_t n)
{
    size_t l = strlen(p);
    while (l > 1 && p[l - 1] == '/')
        l--;
    size_t s = l;
    while (s > 0 && p[s - 1] != '/')
        s--;
    snprintf(buf, n, "%.*s", (int)(l - s), p + s);
    return buf;
}

/* 1 when make_targets created the OUTPUT folder (removed again on failure). */
static int created_output;
/* Position layout: created_sub[i] is 1 when make_targets created
 * OUTPUT/<i+1> (removed again on failure); owned, n_inputs entries. */
static unsigned char *created_sub;

/* Removes the folders make_targets created (after a failure, when nothing was
 * written into them: rmdir fails harmlessly on a folder that is not empty). */
static void remove_created(const bl_instr_opts *o)
{
    for (int i = 0; created_sub && i < o->n_inputs; i++)
        if (created_sub[i]) {
            char d[4096];
            snprintf(d, sizeof d, "%s/%d", o->output, i + 1);
            (void)rmdir(d);
        }
    if (created_output)
        (void)rmdir(o->output);
}

/* 1 when two of the inputs have the same base name. */
static int base_names_collide(const bl_instr_opts *o, int *a, int *b)
{
    for (int i = 0; i < o->n_inputs; i++) {
        char b1[4096];
        base_of(o->inputs[i], b1, sizeof b1);
        for (int k = 0; k < i; k++) {
            char b2[4096];
            if (!strcmp(base_of(o->inputs[k], b2, sizeof b2), b1)) {
                *a = k;
                *b = i;
                return 1;
            }
        }
    }
    return 0;
}

/* Makes dir unless it is a folder already; sets *created when it made it. */
static int ensure_dir(const char *dir, int *created)
{
    struct stat sb;
    *created = 0;
    if (stat(dir, &sb) != 0) {
        if (errno != ENOENT || mkdir(dir, 0777) != 0) {
            fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
            return -1;
        }
        *created = 1;
    } else if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr,
                PROG ": %s: not a folder (with several inputs, OUTPUT and its numbered "
                     "folders are folders)\n",
                dir);
        return -1;
    }
    return 0;
}

/* Targets: OUTPUT itself for one input; for several, OUTPUT/<base name>
 * (names layout) or OUTPUT/<position>/<base name> (position layout; the
 * numbered folders are made here). */
static int make_targets(const bl_instr_opts *o, char **targets)
{
    if (o->n_inputs == 1) {
        targets[0] = strdup(o->output);
        if (!targets[0]) {
            fprintf(stderr, PROG ": out of memory\n");
            return -1;
        }
        return 0;
    }
    int ca = 0, cb = 0, layout = o->layout;
    int collide = base_names_collide(o, &ca, &cb);
    if (layout == BL_LAYOUT_AUTO)
        layout = collide ? BL_LAYOUT_POSITION : BL_LAYOUT_NAMES;
    if (layout == BL_LAYOUT_NAMES && collide) {
        char nm[4096];
        fprintf(stderr,
                PROG ": %s and %s have the same base name '%s'; their outputs would collide in "
                     "%s with --layout names (use --layout position or auto)\n",
                o->inputs[ca], o->inputs[cb], base_of(o->inputs[cb], nm, sizeof nm), o->output);
        return -1;
    }
    int made = 0;
    if (ensure_dir(o->output, &made) != 0)
        return -1;
    created_output = made;
    if (layout == BL_LAYOUT_POSITION && !(created_sub = calloc((size_t)o->n_inputs, 1))) {
        fprintf(stderr, PROG ": out of memory\n");
        return -1;
    }
    for (int i = 0; i < o->n_inputs; i++) {
        char b[4096], sub[4096];
        base_of(o->inputs[i], b, sizeof b);
        if (!b[0] || !strcmp(b, ".") || !strcmp(b, "..")) {
            fprintf(stderr, PROG ": %s: cannot name its output (no base name)\n", o->inputs[i]);
            return -1;
        }
        if (layout == BL_LAYOUT_POSITION) {
            if ((size_t)snprintf(sub, sizeof sub, "%s/%d", o->output, i + 1) >= sizeof sub) {
                fprintf(stderr, PROG ": %s: path too long\n", o->output);
                return -1;
            }
            if (ensure_dir(sub, &made) != 0)
                return -1;
            created_sub[i] = (unsigned char)made;
        } else {
            snprintf(sub, sizeof sub, "%s", o->output);
        }
        size_t len = strlen(sub) + 1 + strlen(b) + 1;
        if (!(targets[i] = malloc(len))) {
            fprintf(stderr, PROG ": out of memory\n");
            return -1;
        }
        snprintf(targets[i], len, "%s/%s", sub, b);
    }
    if (layout == BL_LAYOUT_POSITION && o->layout == BL_LAYOUT_AUTO && !o->quiet) {
        char nm[4096];
        fprintf(stderr,
                PROG ": %s and %s have the same base name '%s': each output goes to "
                     "%s/<position>/<base name>\n",
                o->inputs[ca], o->inputs[cb], base_of(o->inputs[cb], nm, sizeof nm), o->output);
    }
    return 0;
}

/* Makes the folders above file path p that are missing (mkdir -p of its
 * folder). 0, or -1 with a message in err. */
static int mkdirs_for(const char *p, char *err, size_t errlen)
{
    char *d = strdup(p);
    if (!d) {
        snprintf(err, errlen, "%s: out of memory", p);
        return -1;
    }
    for (char *q = d + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        struct stat sb;
        const char *why = NULL;
        if (stat(d, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode))
                why = "not a folder";
        } else if (errno != ENOENT || (mkdir(d, 0777) != 0 && errno != EEXIST)) {
            why = strerror(errno);
        }
        if (why) {
            snprintf(err, errlen, "%s: %s", d, why);
            free(d);
            return -1;
        }
        *q = '/';
    }
    free(d);
    return 0;
}

/* ---- main ---------------------------------------------------------------- */

/* Process-wide settings that only change speed (measured on guava.jar,
 * docs/benchmarks.md):
 * - TZ unset: glibc then re-reads /etc/localtime's status on every
 *   mktime/localtime, and libzip converts the DOS time of every entry (two
 *   stat calls per entry). TZ=":/etc/localtime" names the same zone file,
 *   so times are converted exactly as before, but it is loaded once.
 * - glibc malloc: a 32 MiB top pad. A worker thread's arena is then
 *   created with 32 MiB usable at once instead of growing a page or so at a
 *   time with one mprotect call per step (thousands per run); the main
 *   arena calls brk less often. (One arena for all threads instead would
 *   serialise the workers on its lock.) */
static void tune_process(void)
{
    if (!getenv("TZ"))
        (void)setenv("TZ", ":/etc/localtime", 0); /* on failure: slower, same result */
#ifdef __GLIBC__
    mallopt(M_TOP_PAD, 32 << 20);
#endif
}

int main(int argc, char **argv)
{
    bl_instr_opts o;
    int status = 1;
    bl_jio_input **ins = NULL;
    char **targets = NULL;
    bl_jio_staged *staged = NULL;
    size_t n_staged = 0;
    unit *units = NULL;
    size_t n_units = 0;
    bl_mids *mids = NULL;
    bl_hier *hier = NULL;
    bl_buf idtext, base, clsbytes;
    char err[2048];
    char build_id[37] = "", build_name[BL_BUILDINFO_NAME_MAX + 1] = "";
    char *class_path = NULL;
    double t0 = now_s();
    bl_buf_init(&idtext, 0);
    bl_buf_init(&base, 0);
    bl_buf_init(&clsbytes, 1u << 20);
    tune_process();

    if (bl_instr_opts_init(&o) != 0)
        return 1;
    int rc = bl_instr_parse_args(argc, argv, &o);
    if (rc) {
        status = rc < 0 ? 0 : rc;
        goto out;
    }
    int progress = !o.quiet && isatty(STDERR_FILENO);

    /* the build id, its name and the class that carries them */
    if (o.build_id_arg) {
        if (!strcmp(o.build_id_arg, "auto")) {
            if (bl_buildinfo_new_id(build_id, err, sizeof err) != BL_OK) {
                fprintf(stderr, PROG ": error: %s\n", err);
                goto out;
            }
        } else if (bl_build_id_parse(o.build_id_arg, strlen(o.build_id_arg), build_id) != 0) {
            status = bl_instr_usage_error("--build-id wants auto or a UUID (8-4-4-4-12 hex "
                                          "digits), not '%s'",
                                          o.build_id_arg);
            goto out;
        }
        if (bl_buildinfo_name(o.version_name, build_id, build_name, err, sizeof err) != BL_OK) {
            status = bl_instr_usage_error("%s", err);
            goto out;
        }
        if (o.build_class_dir) {
            bl_err e = bl_buildinfo_class(build_name, build_id, o.version_name, &clsbytes);
            size_t n = strlen(o.build_class_dir) + sizeof "/" BL_BUILDINFO_CLASS_FILE;
            if (e || !(class_path = malloc(n))) {
                fprintf(stderr, PROG ": error: the build class: %s\n",
                        e ? bl_err_str(e) : "out of memory");
                goto out;
            }
            snprintf(class_path, n, "%s/%s", o.build_class_dir, BL_BUILDINFO_CLASS_FILE);
        }
    }

    /* 0. inputs */
    ins = calloc((size_t)o.n_inputs, sizeof *ins);
    targets = calloc((size_t)o.n_inputs, sizeof *targets);
    staged = calloc((size_t)o.n_inputs + 2, sizeof *staged);
    if (!ins || !targets || !staged) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    if (make_targets(&o, targets) != 0)
        goto out;
    for (int i = 0; i < o.n_inputs; i++) {
        bl_err e = bl_jio_open(o.inputs[i], print_notice, &o, &ins[i], err, sizeof err);
        if (e) {
            fprintf(stderr, PROG ": error: %s\n", err);
            goto out;
        }
        for (size_t k = 0; k < ins[i]->n; k++)
            n_units += ins[i]->entries[k].is_class;
    }
    if (o.base_ids) {
        if (bl_instr_slurp(o.base_ids, BASE_IDS_MAX, &base) != 0)
            goto out;
    }
    units = calloc(n_units ? n_units : 1, sizeof *units);
    if (!units) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    n_units = 0;
    for (int i = 0; i < o.n_inputs; i++)
        for (size_t k = 0; k < ins[i]->n; k++)
            if (ins[i]->entries[k].is_class) {
                unit *u = &units[n_units++];
                u->in = ins[i];
                u->en = &ins[i]->entries[k];
                bl_buf_init(&u->out, OUT_CLASS_MAX);
                bl_buf_init(&u->warns, 1u << 20);
            }

    /* 1. parse and choose */
    job j = {.u = units, .n = n_units, .o = &o, .fn = pass1};
    run_parallel(&j, o.threads, progress, "reading");
    if (report_errors(units, n_units))
        goto out;

    /* 2. ids */
    if (bl_mids_new(&mids) != BL_OK) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    if (o.base_ids) {
        bl_err e = bl_mids_load_base(mids, base.data ? base.data : "", base.len, err, sizeof err);
        if (e) {
            fprintf(stderr, PROG ": error: %s: %s\n", o.base_ids,
                    e == BL_EFORMAT ? err : bl_err_str(e));
            goto out;
        }
        uint32_t dups = bl_mids_base_duplicates(mids);
        if (dups)
            fprintf(stderr,
                    PROG ": warning: %s: %u method(s) listed more than once with different "
                    "ids; each keeps its smallest id\n",
                    o.base_ids, dups);
    }
    for (size_t i = 0; i < n_units; i++) {
        unit *u = &units[i];
        for (size_t k = 0; k < u->n_cand; k++) {
            const bl_cf_method *m = bl_cf_method_at(u->cf, u->cand[k]);
            if (bl_mids_add(mids, bl_cf_name(u->cf), m->name, m->desc, m->access) != BL_OK) {
                fprintf(stderr, PROG ": out of memory\n");
                goto out;
            }
        }
    }
    {
        bl_err e = bl_mids_assign(mids, err, sizeof err);
        if (e) {
            fprintf(stderr, PROG ": error: %s\n", e == BL_ETOOBIG ? err : bl_err_str(e));
            goto out;
        }
        if ((e = bl_mids_validate(mids, print_warning, &o, NULL)) != BL_OK ||
            (e = bl_mids_write(mids, o.obfuscated, build_id[0] ? build_id : NULL, &idtext)) != BL_OK) {
            fprintf(stderr, PROG ": error: method-ID file: %s\n", bl_err_str(e));
            goto out;
        }
    }

    /* 2b. launch hooks: which classes are Application / Activity subclasses */
    if (resolve_hooks(&o, units, n_units, &hier) != 0)
        goto out;

    /* 3. rewrite */
    job j2 = {.u = units, .n = n_units, .o = &o, .mids = mids, .fn = pass2};
    run_parallel(&j2, o.threads, progress, "instrumenting");
    size_t n_done = 0, n_changed = 0, n_sites = 0, n_hooks = 0, n_callbacks = 0;
    for (size_t i = 0; i < n_units; i++) {
        unit *u = &units[i];
        n_callbacks += u->n_callbacks;
        if (!o.quiet && u->warns.len)
            fprintf(stderr, "%s", u->warns.data);
        if (!u->err && (u->n_done || u->n_sites || u->n_hooks)) {
            u->en->out = (const uint8_t *)u->out.data;
            u->en->out_len = u->out.len;
            n_done += u->n_done;
            n_sites += u->n_sites;
            n_hooks += u->n_hooks;
            n_changed++;
        }
    }
    if (report_errors(units, n_units))
        goto out;

    /* 4. outputs: stage everything, then commit */
    for (int i = 0; i < o.n_inputs; i++) {
        if (bl_jio_stage(ins[i], targets[i], print_notice, &o, &staged[n_staged], err,
                         sizeof err) != BL_OK) {
            fprintf(stderr, PROG ": error: %s\n", err);
            goto out;
        }
        n_staged++;
    }
    if (class_path) {
        if (mkdirs_for(class_path, err, sizeof err) != 0 ||
            bl_jio_stage_bytes(class_path, clsbytes.data, clsbytes.len, &staged[n_staged], err,
                               sizeof err) != BL_OK) {
            fprintf(stderr, PROG ": error: %s\n", err);
            goto out;
        }
        n_staged++;
    }
    if (bl_jio_stage_bytes(o.method_ids, idtext.data, idtext.len, &staged[n_staged], err,
                           sizeof err) != BL_OK) {
        fprintf(stderr, PROG ": error: %s\n", err);
        goto out;
    }
    n_staged++;
    for (size_t i = 0; i < n_staged; i++)
        if (bl_jio_commit(&staged[i], err, sizeof err) != BL_OK) {
            fprintf(stderr, PROG ": error: %s\n", err);
            goto out;
        }
    if (!o.quiet)
        fprintf(stderr,
                PROG ": %d input(s), %zu classes, %zu rewritten, %zu methods instrumented, "
                     "%zu network call sites, %zu launch hooks, %zu runtime callbacks left "
                     "without probes; %zu methodIds (%zu kept from the base), largest %u; %.2f s\n",
                o.n_inputs, n_units, n_changed, n_done, n_sites, n_hooks, n_callbacks,
                bl_mids_count(mids),
                bl_mids_reused(mids), bl_mids_max_id(mids), now_s() - t0);
    if (!o.quiet && build_id[0])
        fprintf(stderr, PROG ": build %s (build id %s)%s%s\n", build_name, build_id,
                class_path ? "; class " : "", class_path ? class_path : "");
    status = 0;
out:
    for (size_t i = 0; staged && i < n_staged; i++) {
        bl_jio_abort(&staged[i]);
        bl_jio_staged_cleanup(&staged[i]);
    }
    if (status != 0)
        remove_created(&o); /* nothing was written: leave no empty folder */
    free(created_sub);
    free(staged);
    free_units(units, n_units);
    bl_mids_free(mids);
    bl_hier_free(hier);
    for (int i = 0; ins && i < o.n_inputs; i++)
        bl_jio_free(ins[i]);
    free(ins);
    for (int i = 0; targets && i < o.n_inputs; i++)
        free(targets[i]);
    free(targets);
    bl_buf_cleanup(&idtext);
    bl_buf_cleanup(&base);
    bl_buf_cleanup(&clsbytes);
    free(class_path);
    bl_instr_opts_cleanup(&o);
    return status;
}
