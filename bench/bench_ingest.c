/*
 * bench_ingest — the server's processing hot path in process: zstd
 * decompression + batch decode + symbolication (methodId → method row) +
 * call-tree rebuild + aggregation (per-method stats with percentile
 * sketches, per-call-path nodes), next to the physical limit: zstd
 * decompression alone of the same batches (what `zstd -d` does), on one
 * thread.
 *
 *   bench_ingest [BATCHES [RECORDS_PER_BATCH [PREP_THREADS]]]
 *                                   (default 100 × 100,000, 1 prep thread)
 *
 * Three runs of the pipeline, each best of 3 after a warm-up round, one
 * long-lived aggregator as in the writer thread, a flush (bl_agg_finish +
 * clear) every 64 batches (the warm-up rounds also sum what the flushes
 * give, untimed, to compare the runs):
 *   one thread   everything on one thread (bl_agg_thread): per-core cost,
 *                thread CPU time;
 *   phase        zstd + decode + partial aggregates only (what the prep
 *                threads do: straight from the records in one pass when
 *                every thread is well-formed, else call trees first);
 *   parallel     as the server's writer: PREP_THREADS threads prepare the
 *                batches ahead (pipeline/prep.h: decompress, decode, call
 *                trees, the batch's partial aggregates) while this thread
 *                merges them in order (bl_agg_merge) — wall-clock time, the
 *                CPU time of all threads per record, and this thread's CPU
 *                time per record (the serial part); and, run alternately
 *                with it for comparison, the same with this thread
 *                aggregating the trees itself (bl_agg_tree, as before the
 *                partial aggregates).
 * The aggregates of the parallel run are checked equal to the one-thread
 * run's (the program fails otherwise). The goal line compares the parallel
 * wall time with the anchor's wall time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "batchgen.h"
#include "pipeline/aggregate.h"
#include "pipeline/prep.h"

#define GOAL_RATIO 1.5
#define FLUSH_EVERY 64

static double clk(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static double thread_s(void) { return clk(CLOCK_THREAD_CPUTIME_ID); }
static double wall_s(void) { return clk(CLOCK_MONOTONIC); }
static double proc_s(void) { return clk(CLOCK_PROCESS_CPUTIME_ID); }

static void die(const char *what)
{
    fprintf(stderr, "bench_ingest: %s\n", what);
    exit(1);
}

/* ---- input ---- */
static uint32_t n_batches, per, n_methods = 5000;
static void **z;
static size_t *zn;

/* ---- the aggregating side ---- */
typedef struct sums {
    uint64_t records, calls, stats, nodes, count, total, self, blob_bytes, node_count;
    uint64_t blob_hash;
} sums;

/* 1 in the untimed warm-up rounds: flushes also sum the figures and hash
 * the sketch blobs, to compare the two runs */
static int verify;

static void flush(bl_agg *agg, sums *s)
{
    if (bl_agg_finish(agg))
        die("finish failed");
    s->stats += agg->n_stats;
    s->nodes += agg->n_nodes;
    for (size_t i = 0; verify && i < agg->n_stats; i++) {
        const bl_agg_stat *st = &agg->stats[agg->stat_order[i]];
        s->count += st->count;
        s->total += st->total;
        s->self += st->self;
        s->blob_bytes += st->blob_len;
        for (size_t k = 0; k < st->blob_len; k++)
            s->blob_hash = s->blob_hash * 31 + (uint8_t)agg->blobs.data[st->blob_off + k];
    }
    for (size_t i = 0; verify && i < agg->n_nodes; i++)
        s->node_count += agg->nodes[i].count * (uint64_t)agg->nodes[i].id;
    bl_agg_clear(agg);
}

/* ---- prep workers: worker w prepares batches w, w + K, ... into slot
 * i % n_slots, each after the aggregating thread freed it ---- */
typedef struct slot {
    bl_prep job;
    int64_t batch; /* prepared batch number, -1 = free */
    int done;
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static slot *slots;
static unsigned n_slots, n_workers;
static uint64_t merged; /* batches merged from partial aggregates */
static uint64_t untreed; /* of those, made straight from the records */

static void *worker(void *arg)
{
    unsigned w = (unsigned)(uintptr_t)arg;
    for (uint32_t i = w; i < n_batches; i += n_workers) {
        slot *s = &slots[i % n_slots];
        pthread_mutex_lock(&mu);
        while (s->batch != -1)
            pthread_cond_wait(&cv, &mu);
        s->batch = i;
        s->done = 0;
        pthread_mutex_unlock(&mu);
        bl_prep_run(&s->job, z[i], zn[i], BL_ENC_ZSTD, (uint64_t)256 << 20, 0);
        pthread_mutex_lock(&mu);
        s->done = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void run_parallel(bl_agg *agg, bl_agg_build *ab, sums *s)
{
    pthread_t th[16];
    for (unsigned i = 0; i < n_slots; i++)
        slots[i].batch = -1;
    for (unsigned w = 0; w < n_workers; w++)
        if (pthread_create(&th[w], NULL, worker, (void *)(uintptr_t)w))
            die("cannot start a thread");
    for (uint32_t i = 0; i < n_batches; i++) {
        slot *sl = &slots[i % n_slots];
        pthread_mutex_lock(&mu);
        while (sl->batch != (int64_t)i || !sl->done)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        bl_prep *j = &sl->job;
        if (j->read_err || !j->decoded)
            die("prep failed");
        int merge = bl_agg_part_usable(ab, &j->part, j->bt.origin_wall_us);
        if (merge) {
            if (bl_agg_merge(agg, ab, &j->part))
                die("merge failed");
            merged++;
            s->calls += j->part.n_calls;
            if (j->n_trees == 0)
                untreed++;
        }
        for (uint32_t k = 0; !merge && k < j->bt.n_threads; k++) {
            /* as the writer: the trees, or (a partial made without them)
             * the thread's records */
            if (j->n_trees ? j->tree_err[k] || bl_agg_tree(agg, ab, &j->bt.threads[k],
                                                           &j->trees[k], j->bt.origin_wall_us)
                           : bl_agg_thread(agg, ab, &j->bt.threads[k], j->bt.origin_wall_us))
                die("aggregate failed");
            s->calls += j->n_trees ? j->trees[k].n_calls : agg->tree.n_calls;
        }
        s->records += j->bt.n_records;
        pthread_mutex_lock(&mu);
        sl->batch = -1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        if ((i + 1) % FLUSH_EVERY == 0 || i + 1 == n_batches)
            flush(agg, s);
    }
    for (unsigned w = 0; w < n_workers; w++)
        pthread_join(th[w], NULL);
}

static void run_one(bl_agg *agg, bl_agg_build *ab, char *buf, size_t max_raw, sums *s)
{
    for (uint32_t i = 0; i < n_batches; i++) {
        size_t n = ZSTD_decompress(buf, max_raw, z[i], zn[i]);
        bl_batch bt;
        bl_batch_error be;
        if (ZSTD_isError(n) || bl_batch_decode((uint8_t *)buf, n, &bt, &be))
            die("decode failed");
        for (uint32_t k = 0; k < bt.n_threads; k++) {
            if (bl_agg_thread(agg, ab, &bt.threads[k], bt.origin_wall_us))
                die("aggregate failed");
            s->calls += agg->tree.n_calls;
        }
        s->records += bt.n_records;
        bl_batch_cleanup(&bt);
        if ((i + 1) % FLUSH_EVERY == 0 || i + 1 == n_batches)
            flush(agg, s);
    }
}

static void new_agg(bl_agg *agg, bl_agg_build *ab)
{
    bl_agg_init(agg, 1, 1000000, NULL, NULL);
    bl_agg_build_init(ab, 1);
    for (uint32_t m = 0; m <= n_methods; m++) /* symbolicated at upload */
        if (bl_agg_build_set_row(ab, m, 1000 + m, 0))
            die("out of memory");
}

int main(int argc, char **argv)
{
    n_batches = argc > 1 ? (uint32_t)atoi(argv[1]) : 100;
    per = argc > 2 ? (uint32_t)atoi(argv[2]) : 100000;
    n_workers = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
    if (n_batches == 0 || per == 0 || n_workers == 0 || n_workers > 16)
        die("usage: bench_ingest [BATCHES [RECORDS_PER_BATCH [PREP_THREADS 1-16]]]");
    n_slots = 2 * n_workers;
    slots = calloc(n_slots, sizeof *slots);
    z = calloc(n_batches, sizeof *z);
    zn = calloc(n_batches, sizeof *zn);
    if (!slots || !z || !zn)
        die("out of memory");
    for (unsigned i = 0; i < n_slots; i++) {
        bl_prep_init(&slots[i].job);
        slots[i].job.want_part = 1;
    }
    size_t raw_total = 0, z_total = 0, max_raw = 0;
    bl_buf b;
    bl_buf_init(&b, 0);
    for (uint32_t i = 0; i < n_batches; i++) {
        bl_buf_reset(&b);
        if (bg_batch(&b, i, per, n_methods, "bench", "1.0"))
            die("cannot make batch");
        size_t cap = ZSTD_compressBound(b.len);
        if (!(z[i] = malloc(cap)))
            die("out of memory");
        zn[i] = ZSTD_compress(z[i], cap, b.data, b.len, 3);
        raw_total += b.len;
        z_total += zn[i];
        if (b.len > max_raw)
            max_raw = b.len;
    }
    char *buf = malloc(max_raw);
    if (!buf)
        die("out of memory");
    /* anchor: zstd decompression only, one thread, best of 3 (wall and CPU) */
    double z_wall = 1e9, z_cpu = 1e9;
    for (int r = 0; r < 3; r++) {
        double w0 = wall_s(), c0 = thread_s();
        for (uint32_t i = 0; i < n_batches; i++)
            if (ZSTD_isError(ZSTD_decompress(buf, max_raw, z[i], zn[i])))
                die("zstd failed");
        double w = wall_s() - w0, c = thread_s() - c0;
        z_wall = w < z_wall ? w : z_wall;
        z_cpu = c < z_cpu ? c : z_cpu;
    }
    /* phase: zstd + decode + partial aggregates (the prep threads' part), one thread */
    double t_phase = 1e9;
    for (int r = 0; r < 3; r++) {
        double c0 = thread_s();
        for (uint32_t i = 0; i < n_batches; i++) {
            bl_prep_run(&slots[0].job, z[i], zn[i], BL_ENC_ZSTD, (uint64_t)256 << 20, 0);
            if (slots[0].job.read_err || !slots[0].job.decoded)
                die("prep failed");
        }
        double c = thread_s() - c0;
        t_phase = c < t_phase ? c : t_phase;
    }
    /* one thread: warm-up round (allocations, the build's call-path nodes),
     * then best of 3 */
    bl_agg agg;
    bl_agg_build ab;
    new_agg(&agg, &ab);
    sums one = { 0 }, scratch;
    double t_one = 1e9;
    for (int r = 0; r < 4; r++) {
        verify = r == 0;
        memset(&scratch, 0, sizeof scratch);
        double c0 = thread_s();
        run_one(&agg, &ab, buf, max_raw, r == 0 ? &one : &scratch);
        double c = thread_s() - c0;
        if (r > 0 && c < t_one)
            t_one = c;
    }
    uint32_t build_nodes = ab.n_local;
    bl_agg_cleanup(&agg);
    bl_agg_build_cleanup(&ab);
    /* parallel, two ways run alternately (the same load for both): m = 0 as
     * the server: the prep threads also build each batch's partial
     * aggregates and this thread merges them (bl_agg_merge); m = 1 as before
     * partials: this thread aggregates the trees (bl_agg_tree). Each a fresh
     * aggregator (the same node ids then), a warm-up round, best of 3. */
    bl_agg pagg[2];
    bl_agg_build pab[2];
    sums par[2] = { { 0 }, { 0 } };
    double p_wall[2] = { 1e9, 1e9 }, p_cpu[2] = { 1e9, 1e9 }, p_agg[2] = { 1e9, 1e9 };
    for (int m = 0; m < 2; m++)
        new_agg(&pagg[m], &pab[m]);
    for (int r = 0; r < 4; r++) {
        for (int m = 0; m < 2; m++) {
            for (unsigned i = 0; i < n_slots; i++)
                slots[i].job.want_part = m == 0;
            verify = r == 0;
            memset(&scratch, 0, sizeof scratch);
            double w0 = wall_s(), c0 = proc_s(), a0 = thread_s();
            run_parallel(&pagg[m], &pab[m], r == 0 ? &par[m] : &scratch);
            double w = wall_s() - w0, c = proc_s() - c0, ac = thread_s() - a0;
            if (r > 0 && w < p_wall[m]) {
                p_wall[m] = w;
                p_cpu[m] = c;
            }
            if (r > 0 && ac < p_agg[m])
                p_agg[m] = ac;
        }
    }
    for (int m = 0; m < 2; m++) {
        bl_agg_cleanup(&pagg[m]);
        bl_agg_build_cleanup(&pab[m]);
        if (memcmp(&one, &par[m], sizeof one) != 0)
            die("the parallel run's aggregates differ from the one-thread run's");
    }
    double recs = (double)one.records;
    printf("input    %u batches x %u records = %llu records, %.1f MB raw, %.1f MB zstd-3\n",
           n_batches, per, (unsigned long long)one.records, raw_total / 1e6, z_total / 1e6);
    printf("         %llu calls, %u distinct call paths; %llu stat rows and %llu node rows"
           " to write (a flush every %d batches)\n",
           (unsigned long long)one.calls, build_nodes, (unsigned long long)one.stats,
           (unsigned long long)one.nodes, FLUSH_EVERY);
    printf("anchor   zstd decompress only, 1 thread   %7.1f M records/s  (%.1f ns/record, "
           "%.0f MB/s out; CPU %.1f ns/record)\n",
           recs / z_wall / 1e6, z_wall / recs * 1e9, raw_total / z_wall / 1e6,
           z_cpu / recs * 1e9);
    printf("one thread  zstd+decode+symbolicate+tree+aggregate %6.1f M records/s/core  "
           "(%.1f ns/record CPU; %.2fx the anchor's CPU time)\n",
           recs / t_one / 1e6, t_one / recs * 1e9, t_one / z_cpu);
    printf("  of which  zstd+decode+partial (prep) %.1f ns/record CPU\n", t_phase / recs * 1e9);
    static const char *how[2] = { "partial aggregates merged", "trees aggregated (before)" };
    for (int m = 0; m < 2; m++)
        printf("parallel  %u prep thread(s) + the aggregating thread, %s: %.1f M records/s "
               "wall (%.1f ns/record), %.1f ns/record CPU over all threads (%.2fx the anchor's "
               "CPU); the aggregating thread %.1f ns/record CPU (%.2fx)\n",
               n_workers, how[m], recs / p_wall[m] / 1e6, p_wall[m] / recs * 1e9,
               p_cpu[m] / recs * 1e9, p_cpu[m] / z_cpu, p_agg[m] / recs * 1e9,
               p_agg[m] / z_cpu);
    printf("          %llu of %llu batches merged from partial aggregates (%llu of them made in "
           "one pass from the records, without call trees)\n",
           (unsigned long long)merged, (unsigned long long)n_batches * 4,
           (unsigned long long)untreed);
    printf("goal     pipeline wall time <= %.1fx zstd -d's: %.2fx  %s   (per core: %.2fx)\n",
           GOAL_RATIO, p_wall[0] / z_wall, p_wall[0] / z_wall <= GOAL_RATIO ? "MET" : "NOT MET",
           t_one / z_cpu);
    printf("         aggregates of both parallel runs identical to the one-thread run's\n");
    if (z_wall > 1.15 * z_cpu)
        printf("note     the machine is busy (the anchor's wall time is %.1fx its CPU time): "
               "wall figures are unreliable, compare CPU figures\n", z_wall / z_cpu);
    for (uint32_t i = 0; i < n_batches; i++)
        free(z[i]);
    for (unsigned i = 0; i < n_slots; i++)
        bl_prep_cleanup(&slots[i].job);
    free(slots);
    free(z);
    free(zn);
    free(buf);
    bl_buf_cleanup(&b);
    return 0;
}
