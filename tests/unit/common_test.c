/*
 * common_test.c — the small shared pieces: streaming decompression (gzip,
 * zstd, identity; caps; truncation; several members/frames), UTF-8 check
 * and repair, the (u64, u64) hash map, the capped buffer; the decoder's
 * memory budget and window limit; mapped buffers.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "common/decomp.h"
#include "common/u128map.h"
#include "common/u64map.h"
#include "common/utf8.h"
#include "testutil.h"

static bl_err sink(void *ctx, const void *p, size_t n)
{
    return bl_buf_append(ctx, p, n);
}

/* Decompresses all of in, fed in chunks of `step`; result in out. */
static bl_err run(bl_encoding enc, const void *in, size_t n, size_t step, uint64_t cap,
                  bl_buf *out)
{
    bl_decomp *d;
    bl_err e = bl_decomp_new(enc, cap, sink, out, &d);
    if (e)
        return e;
    for (size_t i = 0; i < n && !e; i += step)
        e = bl_decomp_feed(d, (const char *)in + i, n - i < step ? n - i : step);
    if (!e)
        e = bl_decomp_end(d);
    bl_decomp_free(d);
    return e;
}

static size_t gz(const char *text, size_t n, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)text;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    return len;
}

START_TEST(decompression)
{
    static char text[200000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)('a' + (i * 7 + i / 13) % 26);
    static unsigned char c[400000];
    size_t steps[] = { 1, 7, 4096, sizeof c };
    for (size_t s = 0; s < 4; s++) {
        size_t step = steps[s];
        bl_buf out;
        /* gzip, two members */
        size_t n1 = gz(text, sizeof text, c, sizeof c);
        size_t n2 = gz("tail", 4, c + n1, sizeof c - n1);
        bl_buf_init(&out, 0);
        ck_assert_int_eq(run(BL_ENC_GZIP, c, n1 + n2, step, 1 << 20, &out), BL_OK);
        ck_assert_uint_eq(out.len, sizeof text + 4);
        ck_assert_int_eq(memcmp(out.data, text, sizeof text), 0);
        bl_buf_cleanup(&out);
        /* truncated gzip */
        bl_buf_init(&out, 0);
        ck_assert_int_eq(run(BL_ENC_GZIP, c, n1 - 3, step, 1 << 20, &out), BL_EFORMAT);
        bl_buf_cleanup(&out);
        /* zstd, two frames */
        size_t z1 = ZSTD_compress(c, sizeof c, text, sizeof text, 3);
        size_t z2 = ZSTD_compress(c + z1, sizeof c - z1, "tail", 4, 3);
        ck_assert(!ZSTD_isError(z1) && !ZSTD_isError(z2));
        bl_buf_init(&out, 0);
        ck_assert_int_eq(run(BL_ENC_ZSTD, c, z1 + z2, step, 1 << 20, &out), BL_OK);
        ck_assert_uint_eq(out.len, sizeof text + 4);
        bl_buf_cleanup(&out);
        bl_buf_init(&out, 0);
        ck_assert_int_eq(run(BL_ENC_ZSTD, c, z1 - 1, step, 1 << 20, &out), BL_EFORMAT);
        bl_buf_cleanup(&out);
        /* the cap stops a bomb */
        bl_buf_init(&out, 0);
        ck_assert_int_eq(run(BL_ENC_ZSTD, c, z1, step, 1000, &out), BL_ETOOBIG);
        ck_assert_uint_le(out.len, 1000);
        bl_buf_cleanup(&out);
        /* garbage */
        bl_buf_init(&out, 0);
        ck_assert_int_eq(run(BL_ENC_GZIP, text, 100, step, 1 << 20, &out), BL_EFORMAT);
        ck_assert_int_eq(run(BL_ENC_ZSTD, text, 100, step, 1 << 20, &out), BL_EFORMAT);
        bl_buf_cleanup(&out);
        /* identity counts against the cap too */
        bl_buf_init(&out, 0);
        ck_assert_int_eq(run(BL_ENC_IDENTITY, text, 5000, step, 4999, &out), BL_ETOOBIG);
        bl_buf_cleanup(&out);
    }
    /* an empty zstd or gzip body is not a stream */
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(run(BL_ENC_ZSTD, "", 0, 1, 100, &out), BL_EFORMAT);
    ck_assert_int_eq(run(BL_ENC_GZIP, "", 0, 1, 100, &out), BL_EFORMAT);
    bl_buf_cleanup(&out);
    bl_encoding enc;
    ck_assert_int_eq(bl_encoding_parse("GZIP", &enc), 0);
    ck_assert_int_eq(enc, BL_ENC_GZIP);
    ck_assert_int_eq(bl_encoding_parse(NULL, &enc), 0);
    ck_assert_int_eq(enc, BL_ENC_IDENTITY);
    ck_assert_int_eq(bl_encoding_parse("br", &enc), -1);
}
END_TEST

/* a budget of `left` bytes; `held` what the decoder holds now */
typedef struct budget {
    size_t left, held, most;
} budget;

static int b_take(void *ctx, size_t n)
{
    budget *b = ctx;
    if (n > b->left)
        return -1;
    b->left -= n;
    b->held += n;
    if (b->held > b->most)
        b->most = b->held;
    return 0;
}

static void b_give(void *ctx, size_t n)
{
    budget *b = ctx;
    ck_assert_uint_le(n, b->held);
    b->left += n;
    b->held -= n;
}

static bl_err discard(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
    return BL_OK;
}

/* zstd frame of n zero bytes compressed with the given window log */
static size_t zst_window(int wlog, size_t n, unsigned char *out, size_t cap)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ck_assert_ptr_nonnull(cc);
    ck_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, wlog)));
    ck_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_enableLongDistanceMatching, 1)));
    char *src = calloc(1, n);
    ck_assert_ptr_nonnull(src);
    /* streaming without a pledged size: the frame declares the window */
    ZSTD_inBuffer in = { src, n, 0 };
    ZSTD_outBuffer ob = { out, cap, 0 };
    size_t rc;
    do
        rc = ZSTD_compressStream2(cc, &ob, &in, ZSTD_e_end);
    while (rc != 0 && !ZSTD_isError(rc));
    ck_assert(!ZSTD_isError(rc));
    free(src);
    ZSTD_freeCCtx(cc);
    return ob.pos;
}

START_TEST(decoder_budget)
{
    static unsigned char c[1 << 20];
    /* a window of 8 MiB (the HTTP limit) decodes, every byte of state taken
     * from the budget and given back */
    size_t n = zst_window(BL_DECOMP_HTTP_WINDOW_LOG, (size_t)10 << 20, c, sizeof c);
    budget b = { (size_t)64 << 20, 0, 0 };
    bl_decomp_mem mem = { b_take, b_give, &b };
    bl_decomp *d;
    ck_assert_int_eq(bl_decomp_new_mem(BL_ENC_ZSTD, (uint64_t)1 << 30, discard, NULL, &mem, &d),
                     BL_OK);
    ck_assert_int_eq(bl_decomp_feed(d, c, n), BL_OK);
    ck_assert_int_eq(bl_decomp_end(d), BL_OK);
    ck_assert_uint_eq(bl_decomp_total(d), (size_t)10 << 20);
    ck_assert_uint_ge(b.most, (size_t)8 << 20); /* the window was counted */
    bl_decomp_free(d);
    ck_assert_uint_eq(b.held, 0);
    /* a budget too small for the window: BL_ENOMEM, nothing kept */
    budget small = { (size_t)1 << 20, 0, 0 };
    mem.ctx = &small;
    ck_assert_int_eq(bl_decomp_new_mem(BL_ENC_ZSTD, (uint64_t)1 << 30, discard, NULL, &mem, &d),
                     BL_OK);
    ck_assert_int_eq(bl_decomp_feed(d, c, n), BL_ENOMEM);
    bl_decomp_free(d);
    ck_assert_uint_eq(small.held, 0);
    /* a 16 MiB window is refused for HTTP bodies, with the reason */
    n = zst_window(BL_DECOMP_HTTP_WINDOW_LOG + 1, (size_t)10 << 20, c, sizeof c);
    b.most = 0;
    mem.ctx = &b;
    ck_assert_int_eq(bl_decomp_new_mem(BL_ENC_ZSTD, (uint64_t)1 << 30, discard, NULL, &mem, &d),
                     BL_OK);
    ck_assert_int_eq(bl_decomp_feed(d, c, n), BL_EFORMAT);
    ck_assert_ptr_nonnull(bl_decomp_why(d));
    ck_assert_uint_lt(b.most, (size_t)1 << 20); /* refused before the window */
    bl_decomp_free(d);
    ck_assert_uint_eq(b.held, 0);
    /* gzip: zlib's state and window are counted too */
    static char text[100000];
    memset(text, 'x', sizeof text);
    n = gz(text, sizeof text, c, sizeof c);
    ck_assert_int_eq(bl_decomp_new_mem(BL_ENC_GZIP, sizeof text, discard, NULL, &mem, &d), BL_OK);
    ck_assert_int_eq(bl_decomp_feed(d, c, n), BL_OK);
    ck_assert_int_eq(bl_decomp_end(d), BL_OK);
    ck_assert_uint_gt(b.held, (size_t)32 << 10);
    bl_decomp_free(d);
    ck_assert_uint_eq(b.held, 0);
    /* a zstd frame that declares more than the cap is refused before
     * anything is decoded */
    char *zeros = calloc(1, (size_t)2 << 20);
    ck_assert_ptr_nonnull(zeros);
    n = ZSTD_compress(c, sizeof c, zeros, (size_t)2 << 20, 3); /* declares its size */
    ck_assert(!ZSTD_isError(n));
    free(zeros);
    b.most = 0;
    ck_assert_int_eq(bl_decomp_new_mem(BL_ENC_ZSTD, (size_t)1 << 20, discard, NULL, &mem, &d),
                     BL_OK);
    ck_assert_int_eq(bl_decomp_feed(d, c, n), BL_ETOOBIG);
    ck_assert_uint_eq(bl_decomp_total(d), 0);
    ck_assert_uint_lt(b.most, (size_t)1 << 20); /* no window either */
    bl_decomp_free(d);
    /* the same frame fed one byte at a time: refused as soon as its whole
     * header is in, still before anything is decoded */
    b.most = 0;
    ck_assert_int_eq(bl_decomp_new_mem(BL_ENC_ZSTD, (size_t)1 << 20, discard, NULL, &mem, &d),
                     BL_OK);
    bl_err fe = BL_OK;
    size_t fed = 0;
    while (fed < n && fe == BL_OK)
        fe = bl_decomp_feed(d, c + fed++, 1);
    ck_assert_int_eq(fe, BL_ETOOBIG);
    ck_assert_uint_le(fed, 18); /* ZSTD_FRAMEHEADERSIZE_MAX */
    ck_assert_uint_eq(bl_decomp_total(d), 0);
    ck_assert_uint_lt(b.most, (size_t)1 << 20);
    bl_decomp_free(d);
    ck_assert_uint_eq(b.held, 0);
    /* a budget that refuses the decoder itself */
    budget none = { 100, 0, 0 };
    mem.ctx = &none;
    ck_assert_int_eq(bl_decomp_new_mem(BL_ENC_GZIP, 10, discard, NULL, &mem, &d), BL_ENOMEM);
    ck_assert_uint_eq(none.held, 0);
}
END_TEST

START_TEST(mapped_buffer)
{
    bl_buf b;
    bl_buf_init_mapped(&b, (size_t)32 << 20);
    ck_assert_uint_gt(b.mapped, (size_t)32 << 20);
    char *at = b.data;
    static char chunk[100000];
    memset(chunk, 'y', sizeof chunk);
    size_t total = 0;
    while (total + sizeof chunk <= ((size_t)32 << 20)) {
        ck_assert_int_eq(bl_buf_append(&b, chunk, sizeof chunk), BL_OK);
        total += sizeof chunk;
        ck_assert_ptr_eq(b.data, at); /* never moves */
        ck_assert_uint_ge(b.alloc, b.len + 1);
        ck_assert_uint_lt(b.alloc, b.len + 1 + (64 << 10) + 1); /* committed in 64 KiB steps */
    }
    ck_assert_int_eq(bl_buf_append(&b, chunk, sizeof chunk), BL_ETOOBIG);
    ck_assert_uint_eq(b.len, total);
    ck_assert_int_eq(b.data[total], '\0');
    ck_assert_uint_eq(bl_buf_grow_size(&b, 1), 64 << 10);
    ck_assert_uint_eq(bl_buf_grow_size(&b, (size_t)1 << 40), ((size_t)32 << 20) + 1);
    bl_buf_cleanup(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.mapped, 0);
    /* heap buffers: grow_to is exact */
    bl_buf_init(&b, 1000);
    ck_assert_int_eq(bl_buf_grow_to(&b, 10), BL_OK);
    ck_assert_uint_eq(b.alloc, 10);
    ck_assert_int_eq(bl_buf_grow_to(&b, 1002), BL_ETOOBIG);
    ck_assert_int_eq(bl_buf_append(&b, "abc", 3), BL_OK);
    ck_assert_int_eq(bl_buf_grow_to(&b, 3), BL_EINVAL);
    bl_buf_cleanup(&b);
}
END_TEST

/* A mapped buffer whose cap is not a multiple of 64 KiB can be filled to
 * exactly its cap (the last step is cut at cap_max + 1), not one byte more. */
START_TEST(mapped_buffer_at_cap)
{
    const size_t cap = 1000000, step = (size_t)64 << 10;
    bl_buf b;
    bl_buf_init_mapped(&b, cap);
    ck_assert_uint_gt(b.mapped, cap + 1);
    ck_assert_uint_eq(bl_buf_grow_size(&b, step + 1), 2 * step);
    ck_assert_uint_eq(bl_buf_grow_size(&b, cap - 1), cap + 1); /* the last step, cut */
    ck_assert_uint_eq(bl_buf_grow_size(&b, cap), cap + 1);
    ck_assert_uint_eq(bl_buf_grow_size(&b, cap + 1), cap + 1);
    ck_assert_uint_eq(bl_buf_grow_size(&b, cap + 2), cap + 1);
    /* grow_to: room for cap - 2, cap - 1 and cap bytes; cap + 1 is too big */
    ck_assert_int_eq(bl_buf_grow_to(&b, cap - 1), BL_OK);
    ck_assert_uint_ge(b.alloc, cap - 1);
    ck_assert_int_eq(bl_buf_grow_to(&b, cap), BL_OK);
    ck_assert_int_eq(bl_buf_grow_to(&b, cap + 1), BL_OK);
    ck_assert_uint_eq(b.alloc, cap + 1);
    ck_assert_int_eq(bl_buf_grow_to(&b, cap + 2), BL_ETOOBIG);
    ck_assert_uint_eq(b.alloc, cap + 1);
    bl_buf_cleanup(&b);
    /* the same through reserve / append, in pieces that straddle steps */
    bl_buf_init_mapped(&b, cap);
    static unsigned char piece[7777];
    size_t total = 0;
    while (total + sizeof piece <= cap - 1) {
        for (size_t i = 0; i < sizeof piece; i++)
            piece[i] = (unsigned char)((total + i) * 31 + 7);
        ck_assert_int_eq(bl_buf_append(&b, piece, sizeof piece), BL_OK);
        total += sizeof piece;
        ck_assert_uint_le(b.alloc, cap + 1);
        ck_assert_uint_ge(b.alloc, b.len + 1);
    }
    size_t rest = cap - 1 - total; /* to cap - 1 */
    ck_assert_int_eq(bl_buf_zero(&b, rest), BL_OK);
    ck_assert_uint_eq(b.len, cap - 1);
    ck_assert_int_eq(bl_buf_putc(&b, 'z'), BL_OK); /* exactly cap */
    ck_assert_uint_eq(b.len, cap);
    ck_assert_uint_eq(b.alloc, cap + 1);
    ck_assert_int_eq(bl_buf_putc(&b, 'z'), BL_ETOOBIG); /* cap + 1 */
    ck_assert_uint_eq(b.len, cap);
    ck_assert_int_eq(b.data[cap - 1], 'z');
    ck_assert_int_eq(b.data[cap], '\0');
    for (size_t i = 0; i < total; i++) /* what was written reads back */
        if ((unsigned char)b.data[i] != (unsigned char)(i * 31 + 7))
            ck_abort_msg("byte %zu differs", i);
    bl_buf_cleanup(&b);
}
END_TEST

/* Only the steps in use are readable and writable: the reservation past
 * them is PROT_NONE (no commit charge), so touching it faults. Checked in
 * a child process. */
START_TEST(mapped_buffer_commits_steps)
{
    const size_t step = (size_t)64 << 10;
    bl_buf b;
    bl_buf_init_mapped(&b, (size_t)4 << 20);
    ck_assert_uint_eq(b.alloc, step);
    ck_assert_int_eq(bl_buf_reserve(&b, step + 10), BL_OK); /* two steps now */
    ck_assert_uint_eq(b.alloc, 2 * step);
    memset(b.data, 'a', 2 * step); /* all committed bytes are writable */
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        ((volatile char *)b.data)[2 * step] = 'x'; /* the third step */
        _exit(0);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 0),
                  "a step not yet committed was writable");
    ck_assert_int_eq(bl_buf_reserve(&b, 2 * step), BL_OK); /* now it is */
    b.data[2 * step] = 'x';
    ck_assert_int_eq(b.data[2 * step - 1], 'a');
    bl_buf_cleanup(&b);
}
END_TEST

START_TEST(utf8)
{
    ck_assert_uint_eq(bl_utf8_check((const uint8_t *)"plain ascii", 11), 11);
    ck_assert_uint_eq(bl_utf8_check((const uint8_t *)"\xc3\xa9t\xc3\xa9", 6), 6);
    ck_assert_uint_eq(bl_utf8_check((const uint8_t *)"ab\xffz", 4), 2);
    ck_assert_uint_eq(bl_utf8_check((const uint8_t *)"\xc0\xaf", 2), 0);     /* overlong */
    ck_assert_uint_eq(bl_utf8_check((const uint8_t *)"\xed\xa0\x80", 3), 0); /* surrogate */
    ck_assert_uint_eq(bl_utf8_check((const uint8_t *)"x\xe2\x82", 3), 1);    /* cut */
    bl_buf b;
    bl_buf_init(&b, 0);
    ck_assert_int_eq(bl_utf8_repair("a\xff" "b\xc3", 4, &b), BL_OK);
    ck_assert_str_eq(b.data, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
    bl_buf_cleanup(&b);
}
END_TEST

START_TEST(escape_quoted)
{
    char out[32];
    ck_assert_str_eq(bl_escape_quoted("shop\0x", 6, out, sizeof out), "shop\\x00x");
    ck_assert_str_eq(bl_escape_quoted("a'b\\c\x7f\n", 7, out, sizeof out), "a\\'b\\\\c\\x7f\\x0a");
    ck_assert_str_eq(bl_escape_quoted("caf\xc3\xa9", 5, out, sizeof out), "caf\xc3\xa9");
    char small[8];
    ck_assert_str_eq(bl_escape_quoted("abcdefgh", 8, small, sizeof small), "abcd...");
    ck_assert_str_eq(bl_escape_quoted("", 0, small, sizeof small), "");
}
END_TEST

START_TEST(u128map)
{
    bl_u128map m;
    bl_u128map_init(&m);
    ck_assert_ptr_null(bl_u128map_get(&m, 1, 2));
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t *v;
        int ins;
        ck_assert_int_eq(bl_u128map_put(&m, i, i * 3, i + 7, &v, &ins), BL_OK);
        ck_assert_int_eq(ins, 1);
    }
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t *v = bl_u128map_get(&m, i, i * 3);
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(*v, i + 7);
        ck_assert_ptr_null(bl_u128map_get(&m, i, i * 3 + 1));
    }
    uint64_t *v;
    int ins;
    ck_assert_int_eq(bl_u128map_put(&m, 5, 15, 99, &v, &ins), BL_OK);
    ck_assert_int_eq(ins, 0);
    ck_assert_uint_eq(*v, 12);
    bl_u128map_clear(&m);
    ck_assert_ptr_null(bl_u128map_get(&m, 5, 15));
    bl_u128map_cleanup(&m);
}
END_TEST

/* Keys that differ only in their high bits (hashes whose low bits picked a
 * slot elsewhere) still find their own values through growth. */
START_TEST(u64map)
{
    bl_u64map m;
    bl_u64map_init(&m);
    ck_assert_uint_eq(bl_u64map_get(&m, 1, 77), 77);
    uint32_t *v;
    int added;
    ck_assert_int_eq(bl_u64map_put(&m, 0, 1, &v, &added), BL_EINVAL);
    for (uint64_t i = 1; i <= 100000; i++) {
        ck_assert_int_eq(bl_u64map_put(&m, i << 40, (uint32_t)i + 7, &v, &added), BL_OK);
        ck_assert_int_eq(added, 1);
        ck_assert_uint_eq(*v, i + 7);
    }
    ck_assert_uint_eq(m.n, 100000);
    for (uint64_t i = 1; i <= 100000; i++) {
        ck_assert_uint_eq(bl_u64map_get(&m, i << 40, 0), i + 7);
        ck_assert_uint_eq(bl_u64map_get(&m, (i << 40) | 1, 0), 0);
    }
    ck_assert_int_eq(bl_u64map_put(&m, 5ull << 40, 99, &v, &added), BL_OK);
    ck_assert_int_eq(added, 0);
    ck_assert_uint_eq(*v, 12);
    *v = 13;
    ck_assert_uint_eq(bl_u64map_get(&m, 5ull << 40, 0), 13);
    bl_u64map_cleanup(&m);
    ck_assert_uint_eq(bl_u64map_get(&m, 5ull << 40, 0), 0);
}
END_TEST

/* bl_u64map_reserve: room for n keys at once (no growth while they are
 * put), never shrinks; bl_zalloc: zeroed memory, NULL on overflow. */
START_TEST(u64map_reserve_zalloc)
{
    bl_u64map m;
    bl_u64map_init(&m);
    ck_assert_int_eq(bl_u64map_reserve(&m, 5000), BL_OK);
    uint32_t mask = m.mask;
    ck_assert_uint_ge((uint64_t)mask + 1, 10000);
    uint32_t *v;
    int added;
    for (uint64_t i = 1; i <= 5000; i++)
        ck_assert_int_eq(bl_u64map_put(&m, i * 0x9E3779B97F4A7C15ull, (uint32_t)i, &v, &added),
                         BL_OK);
    ck_assert_uint_eq(m.mask, mask); /* no growth */
    ck_assert_int_eq(bl_u64map_reserve(&m, 10), BL_OK);
    ck_assert_uint_eq(m.mask, mask); /* never shrinks */
    ck_assert_int_eq(bl_u64map_reserve(&m, 20000), BL_OK); /* grows, keeps keys */
    ck_assert_uint_gt(m.mask, mask);
    for (uint64_t i = 1; i <= 5000; i++)
        ck_assert_uint_eq(bl_u64map_get(&m, i * 0x9E3779B97F4A7C15ull, 0), i);
    ck_assert_uint_eq(m.n, 5000);
    ck_assert_int_eq(bl_u64map_reserve(&m, (1u << 30) + 1), BL_ETOOBIG);
    bl_u64map_cleanup(&m);

    unsigned char *z = bl_zalloc(3000, 7);
    ck_assert_ptr_nonnull(z);
    for (size_t i = 0; i < 3000 * 7; i++)
        ck_assert_uint_eq(z[i], 0);
    free(z);
    ck_assert_ptr_null(bl_zalloc(SIZE_MAX / 2, 3));
    z = bl_zalloc(0, 8); /* a valid pointer to free */
    ck_assert_ptr_nonnull(z);
    free(z);
}
END_TEST

START_TEST(buffer_cap)
{
    bl_buf b;
    bl_buf_init(&b, 10);
    ck_assert_int_eq(bl_buf_puts(&b, "0123456789"), BL_OK);
    ck_assert_int_eq(bl_buf_putc(&b, 'x'), BL_ETOOBIG);
    ck_assert_str_eq(b.data, "0123456789");
    bl_buf_reset(&b);
    ck_assert_int_eq(bl_buf_put_u64(&b, 18446744073709551615ull), BL_ETOOBIG);
    ck_assert_int_eq(bl_buf_put_u64(&b, 1234567890), BL_OK);
    ck_assert_str_eq(b.data, "1234567890");
    bl_buf_cleanup(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("common");
    tcase_add_test(tc, decompression);
    tcase_add_test(tc, utf8);
    tcase_add_test(tc, escape_quoted);
    tcase_add_test(tc, u128map);
    tcase_add_test(tc, u64map);
    tcase_add_test(tc, u64map_reserve_zalloc);
    tcase_add_test(tc, buffer_cap);
    tcase_add_test(tc, decoder_budget);
    tcase_add_test(tc, mapped_buffer);
    tcase_add_test(tc, mapped_buffer_at_cap);
    tcase_add_test(tc, mapped_buffer_commits_steps);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
