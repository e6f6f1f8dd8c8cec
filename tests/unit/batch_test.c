/*
 * batch_test.c — batch wire format v1 (ingest/batch.h): UUIDs and record
 * helpers; encode/decode of every field; the JSON form and its exact round
 * trip; every malformed-input rule with its exact offset (also: truncation
 * at every byte, every bit flipped); limits; a 1e6-record batch; golden
 * cases in tests/cases/batch/NNNN-name/:
 *   input.json → expected.bin + expected.json, or expected-error.txt
 *   input.bin  → expected.json, or expected-error.txt
 * (expected-error.txt: the bl_err name, then "offset N: message").
 */
#include <dirent.h>
#include <time.h>

#include "ingest/batch.h"
#include "testutil.h"

#define CASES_DIR BL_SOURCE_DIR "/tests/cases/batch"
#define MAX_CASES 256

static char *case_names[MAX_CASES];
static int n_cases;

/* A batch with everything in it: three threads (one empty), odd strings,
 * object events and raw lines. */
static const char sample_json[] =
    "{\"batch_id\":\"0b7e4c6a-1f2d-4e3b-8a9c-0d1e2f3a4b5c\",\"app\":\"com.example.shop\","
    "\"build\":\"2.4.1 (241)\",\"session_id\":\"s-42\",\"origin_wall_us\":1700000000000000,"
    "\"device\":{\"model\":\"Pixel 7\",\"os\":\"14\",\"sdk\":34},"
    "\"threads\":[{\"id\":1,\"name\":\"main\",\"main\":true,\"truncated\":false,"
    "\"records\":[[12,\"i\",0],[40,\"i\",3],[40,\"o\",150],[12,\"o\",152]]},"
    "{\"id\":-1,\"name\":\"\xc3\xb6kHttp \\\"pool\\\"\\n\",\"truncated\":true,"
    "\"records\":[[7,\"o\",9]]},{\"id\":3}],"
    "\"events\":[{\"type\":\"launch\",\"cold\":true,\"ms\":812},\"not json\",\"\"]}";

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

static bl_buf to_bin(const char *json)
{
    bl_buf b;
    bl_batch_error err;
    bl_buf_init(&b, 0);
    bl_err e = bl_batch_json_to_binary(json, strlen(json), &b, &err);
    ck_assert_msg(e == BL_OK, "json_to_binary: %s at %zu", err.message ? err.message : "?",
                  err.offset);
    return b;
}

/* Decoded JSON text of a binary batch (heap string, caller frees). */
static char *bin_to_json(const void *p, size_t n)
{
    bl_batch b;
    bl_batch_error err;
    bl_buf out;
    bl_buf_init(&out, 0);
    bl_err e = bl_batch_decode(p, n, &b, &err);
    ck_assert_msg(e == BL_OK, "decode: %s at %zu", err.message ? err.message : "?", err.offset);
    ck_assert_int_eq(bl_batch_to_json(&b, &out), BL_OK);
    bl_batch_cleanup(&b);
    return out.data;
}

/* Decodes a private heap copy of exactly n bytes, so ASan sees any read
 * past the end. Returns the code; *err is filled. */
static bl_err decode_copy(const void *p, size_t n, bl_batch_error *err)
{
    uint8_t *copy = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(copy);
    if (n)
        memcpy(copy, p, n);
    bl_batch b;
    bl_err e = bl_batch_decode(copy, n, &b, err);
    if (e == BL_OK) {
        /* a successful decode must also print */
        bl_buf out;
        bl_buf_init(&out, 0);
        ck_assert_int_eq(bl_batch_to_json(&b, &out), BL_OK);
        bl_buf_cleanup(&out);
    } else {
        ck_assert_ptr_nonnull(err->message);
        ck_assert_uint_le(err->offset, n);
        ck_assert_ptr_null(b.threads);
    }
    bl_batch_cleanup(&b);
    free(copy);
    return e;
}

/* Expects decoding to fail with `code` at `offset`, message starting with
 * `msg`. */
static void expect_bad(const void *p, size_t n, bl_err code, size_t offset, const char *msg)
{
    bl_batch_error err;
    bl_err e = decode_copy(p, n, &err);
    ck_assert_msg(e == code, "expected %s, got %s (%s at %zu)", bl_err_str(code), bl_err_str(e),
                  err.message ? err.message : "-", err.offset);
    ck_assert_msg(err.offset == offset, "expected offset %zu, got %zu (%s)", offset, err.offset,
                  err.message);
    ck_assert_msg(strncmp(err.message, msg, strlen(msg)) == 0, "message '%s', expected '%s'",
                  err.message, msg);
}

/* Expects json_to_binary to fail with BL_EFORMAT at the first occurrence
 * of `marker` in `json` (or at offset `at` when marker is NULL). */
static void expect_json_bad(const char *json, const char *marker, size_t at, const char *msg)
{
    bl_buf out;
    bl_batch_error err;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_buf_puts(&out, "keep"), BL_OK);
    bl_err e = bl_batch_json_to_binary(json, strlen(json), &out, &err);
    ck_assert_msg(e == BL_EFORMAT, "%s: expected EFORMAT, got %s", json, bl_err_str(e));
    if (marker) {
        const char *m = strstr(json, marker);
        ck_assert_ptr_nonnull(m);
        at = (size_t)(m - json);
    }
    ck_assert_msg(err.offset == at, "%s: offset %zu, expected %zu (%s)", json, err.offset, at,
                  err.message);
    ck_assert_msg(strncmp(err.message, msg, strlen(msg)) == 0, "message '%s', expected '%s'",
                  err.message, msg);
    ck_assert_str_eq(out.data, "keep"); /* output untouched on failure */
    bl_buf_cleanup(&out);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Offsets of fields inside an encoded batch, taken from its decode. */
typedef struct layout {
    size_t header_size, n_threads;
    size_t name_len[8], flags[8], n_records[8]; /* per thread */
    size_t table_end, records, events_len, end;
} layout;

static layout layout_of(const uint8_t *p, size_t n)
{
    bl_batch b;
    layout l;
    memset(&l, 0, sizeof l);
    ck_assert_int_eq(bl_batch_decode(p, n, &b, NULL), BL_OK);
    ck_assert_uint_le(b.n_threads, 8);
    l.header_size = get32(p + 12);
    l.n_threads = l.header_size;
    for (uint32_t i = 0; i < b.n_threads; i++) {
        const uint8_t *name = (const uint8_t *)b.threads[i].name.p;
        l.name_len[i] = (size_t)(name - p) - 2;
        l.flags[i] = (size_t)(name - p) + b.threads[i].name.n;
        l.n_records[i] = l.flags[i] + 1;
        l.table_end = l.n_records[i] + 4;
    }
    if (!b.n_threads)
        l.table_end = l.n_threads + 4;
    l.events_len = (size_t)((const uint8_t *)b.events.p - p) - 4;
    l.records = l.events_len - (size_t)b.n_records * 8;
    l.end = n;
    bl_batch_cleanup(&b);
    return l;
}

/* ------------------------------------------------------------------------ */
/* UUIDs and records                                                         */

START_TEST(uuid_text)
{
    uint8_t id[16], back[16];
    char s[37];
    for (int i = 0; i < 16; i++)
        id[i] = (uint8_t)(i * 17 + 1);
    bl_uuid_format(id, s);
    ck_assert_str_eq(s, "01122334-4556-6778-899a-abbccddeef00"); /* 15 * 17 + 1 wraps */
    ck_assert_int_eq(bl_uuid_parse(s, 36, back), 0);
    ck_assert_mem_eq(id, back, 16);
    ck_assert_int_eq(bl_uuid_parse("01122334-4556-6778-899A-ABBCCDDEEF00", 36, back), 0);
    ck_assert_mem_eq(id, back, 16);

    memset(back, 0x55, 16);
    ck_assert_int_eq(bl_uuid_parse(s, 35, back), -1);
    ck_assert_int_eq(bl_uuid_parse("01122334-4556-6778-899a-abbccddeeff0x", 37, back), -1);
    ck_assert_int_eq(bl_uuid_parse("01122334+4556-6778-899a-abbccddeeff0", 36, back), -1);
    ck_assert_int_eq(bl_uuid_parse("0112233-44556-6778-899a-abbccddeeff0", 36, back), -1);
    ck_assert_int_eq(bl_uuid_parse("01122334-4556-6778-899a-abbccddeeffg", 36, back), -1);
    ck_assert_int_eq(bl_uuid_parse("{1122334-4556-6778-899a-abbccddeeff}", 36, back), -1);
    ck_assert_int_eq(bl_uuid_parse(NULL, 0, back), -1);
    ck_assert_uint_eq(back[0], 0x55); /* untouched on failure */
}
END_TEST

START_TEST(record_helpers)
{
    uint64_t r = bl_rec_make(1, BL_REC_ID_MAX, BL_REC_T_MASK);
    ck_assert_uint_eq(r, UINT64_MAX);
    ck_assert(bl_rec_is_exit(r));
    ck_assert_uint_eq(bl_rec_method(r), BL_REC_ID_MAX);
    ck_assert_uint_eq(bl_rec_time(r), BL_REC_T_MASK);

    r = bl_rec_make(0, 0, 0);
    ck_assert_uint_eq(r, 0);
    ck_assert(!bl_rec_is_exit(r));

    r = bl_rec_make(0, 12345, 987654321);
    ck_assert(!bl_rec_is_exit(r));
    ck_assert_uint_eq(bl_rec_method(r), 12345);
    ck_assert_uint_eq(bl_rec_time(r), 987654321);
    ck_assert_uint_eq(r, (12345ull << 40) | 987654321ull);

    /* out-of-range inputs are masked, never spill into other fields */
    r = bl_rec_make(7, BL_REC_ID_MAX + 1u, BL_REC_T_MASK + 1);
    ck_assert(bl_rec_is_exit(r));
    ck_assert_uint_eq(bl_rec_method(r), 0);
    ck_assert_uint_eq(bl_rec_time(r), 0);

    /* bl_batch_record: little-endian bytes at any alignment */
    uint8_t raw[1 + 16];
    const uint8_t le[8] = { 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x81 };
    memcpy(raw + 1, le, 8);
    memset(raw + 9, 0xff, 8);
    bl_batch_thread t = { 0 };
    t.records = raw + 1;
    t.n_records = 2;
    ck_assert_uint_eq(bl_batch_record(&t, 0), 0x8102030405060708ull);
    ck_assert(bl_rec_is_exit(bl_batch_record(&t, 0)));
    ck_assert_uint_eq(bl_rec_method(bl_batch_record(&t, 0)), 0x010203u); /* bit 63 is not id */
    ck_assert_uint_eq(bl_rec_time(bl_batch_record(&t, 0)), 0x0405060708ull);
    ck_assert_uint_eq(bl_batch_record(&t, 1), UINT64_MAX);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* encode / decode                                                           */

static bl_str S(const char *s)
{
    bl_str r = { s, (uint32_t)strlen(s) };
    return r;
}

START_TEST(every_field)
{
    /* records at an odd address, as a caller might have them */
    uint8_t store[1 + 5 * 8];
    uint8_t *recs = store + 1;
    uint64_t want[5] = { bl_rec_make(0, 1, 10), bl_rec_make(0, 2, 11), bl_rec_make(1, 2, 20),
                         bl_rec_make(1, 1, 30), bl_rec_make(0, BL_REC_ID_MAX, BL_REC_T_MASK) };
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 8; k++)
            recs[i * 8 + k] = (uint8_t)(want[i] >> (8 * k));

    bl_batch_thread th[3];
    memset(th, 0, sizeof th);
    th[0].id = 1;
    th[0].name = S("main");
    th[0].main = 1;
    th[0].n_records = 4;
    th[0].records = recs;
    th[1].id = UINT64_MAX - 1;
    th[1].name = S("w\xc3\xb6rker");
    th[1].truncated = 1;
    th[1].n_records = 1;
    th[1].records = recs + 32;
    th[2].id = 77; /* no name, no records, records NULL */

    bl_batch in;
    memset(&in, 0, sizeof in);
    for (int i = 0; i < 16; i++)
        in.batch_id[i] = (uint8_t)(0xA0 + i);
    in.origin_wall_us = -123456789;
    in.sdk_level = 0xFFFFFFFFu;
    in.app = S("com.example");
    in.build = S("1.2.3");
    in.session_id = S("sess");
    in.device_model = S("Pixel \xe2\x82\xac");
    in.os_version = S("14");
    in.n_threads = 3;
    in.threads = th;
    in.events = S("{\"a\":1}\n");

    bl_buf bin;
    bl_buf_init(&bin, 0);
    ck_assert_int_eq(bl_batch_encode(&in, &bin), BL_OK);
    const uint8_t *p = (const uint8_t *)bin.data;
    ck_assert_mem_eq(p, "BEATLINE\x01\x00\x00\x00", 12);
    ck_assert_uint_eq(get32(p + 12), 44 + 10 + 11 + 5 + 4 + 9 + 2);

    bl_batch b;
    bl_batch_error err;
    ck_assert_int_eq(bl_batch_decode(p, bin.len, &b, &err), BL_OK);
    ck_assert_ptr_null(err.message);
    ck_assert_uint_eq(b.version, 1);
    ck_assert_mem_eq(b.batch_id, in.batch_id, 16);
    ck_assert_int_eq(b.origin_wall_us, -123456789);
    ck_assert_uint_eq(b.sdk_level, 0xFFFFFFFFu);
    ck_assert_mem_eq(b.app.p, "com.example", 11);
    ck_assert_uint_eq(b.app.n, 11);
    ck_assert_uint_eq(b.build.n, 5);
    ck_assert_mem_eq(b.build.p, "1.2.3", 5);
    ck_assert_mem_eq(b.session_id.p, "sess", 4);
    ck_assert_uint_eq(b.device_model.n, 9);
    ck_assert_mem_eq(b.device_model.p, "Pixel \xe2\x82\xac", 9);
    ck_assert_mem_eq(b.os_version.p, "14", 2);
    ck_assert_uint_eq(b.n_threads, 3);
    ck_assert_uint_eq(b.n_records, 5);
    ck_assert_uint_eq(b.threads[0].id, 1);
    ck_assert_uint_eq(b.threads[0].main, 1);
    ck_assert_uint_eq(b.threads[0].truncated, 0);
    ck_assert_uint_eq(b.threads[0].name.n, 4);
    ck_assert_uint_eq(b.threads[0].n_records, 4);
    ck_assert_uint_eq(b.threads[1].id, UINT64_MAX - 1);
    ck_assert_uint_eq(b.threads[1].main, 0);
    ck_assert_uint_eq(b.threads[1].truncated, 1);
    ck_assert_mem_eq(b.threads[1].name.p, "w\xc3\xb6rker", 7);
    ck_assert_uint_eq(b.threads[2].id, 77);
    ck_assert_uint_eq(b.threads[2].name.n, 0);
    ck_assert_uint_eq(b.threads[2].n_records, 0);
    for (uint32_t i = 0; i < 4; i++)
        ck_assert_uint_eq(bl_batch_record(&b.threads[0], i), want[i]);
    ck_assert_uint_eq(bl_batch_record(&b.threads[1], 0), want[4]);
    /* records start 8-aligned relative to the batch, and are zero-copy */
    ck_assert_uint_eq((size_t)(b.threads[0].records - p) % 8, 0);
    ck_assert_ptr_eq(b.threads[1].records, b.threads[0].records + 32);
    ck_assert_uint_eq(b.events.n, 8);
    ck_assert_mem_eq(b.events.p, "{\"a\":1}\n", 8);
    ck_assert_ptr_eq(b.events.p + b.events.n, (const char *)p + bin.len);

    /* re-encoding the decode gives the same bytes */
    bl_buf again;
    bl_buf_init(&again, 0);
    ck_assert_int_eq(bl_batch_encode(&b, &again), BL_OK);
    ck_assert_uint_eq(again.len, bin.len);
    ck_assert_mem_eq(again.data, bin.data, bin.len);

    /* decode without an error struct; cleanup twice and of NULL are fine */
    bl_batch_cleanup(&b);
    bl_batch_cleanup(&b);
    bl_batch_cleanup(NULL);
    ck_assert_int_eq(bl_batch_decode(p, bin.len, &b, NULL), BL_OK);
    bl_batch_cleanup(&b);
    ck_assert_int_eq(bl_batch_decode(p, bin.len - 1, &b, NULL), BL_EFORMAT);
    bl_buf_cleanup(&again);
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(encode_appends)
{
    bl_batch in;
    memset(&in, 0, sizeof in);
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_buf_puts(&out, "xyz"), BL_OK);
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_OK);
    /* 54-byte header, n_threads, 6 bytes of padding, events_len */
    ck_assert_uint_eq(out.len, 3 + 54 + 4 + 6 + 4);
    ck_assert_mem_eq(out.data, "xyzBEATLINE", 11);
    bl_batch b;
    ck_assert_int_eq(bl_batch_decode((const uint8_t *)out.data + 3, out.len - 3, &b, NULL), BL_OK);
    ck_assert_uint_eq(b.n_threads, 0);
    ck_assert_ptr_null(b.threads);
    ck_assert_uint_eq(b.events.n, 0);
    bl_batch_cleanup(&b);
    bl_buf_cleanup(&out);
}
END_TEST

START_TEST(encode_rejects)
{
    static char big[65536];
    memset(big, 'x', sizeof big);
    bl_batch_thread th;
    memset(&th, 0, sizeof th);
    bl_batch in;
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_buf_puts(&out, "keep"), BL_OK);

    memset(&in, 0, sizeof in);
    in.app.p = big;
    in.app.n = 65536;
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);
    in.app.n = 65535; /* the largest string is fine */
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_OK);
    bl_buf_reset(&out);
    ck_assert_int_eq(bl_buf_puts(&out, "keep"), BL_OK);

    memset(&in, 0, sizeof in);
    in.os_version = S("bad \xff");
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);
    in.os_version = S("");
    in.events = S("\xed\xa0\x80\n"); /* surrogate */
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);

    memset(&in, 0, sizeof in);
    in.n_threads = 1; /* threads NULL */
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);
    in.threads = &th;
    th.n_records = 3; /* records NULL */
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);
    th.n_records = 0;
    th.name.p = big;
    th.name.n = 65536;
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);
    th.name = S("\xc0\x80"); /* overlong NUL */
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);
    th.name = S("t");
    in.n_threads = 65537;
    ck_assert_int_eq(bl_batch_encode(&in, &out), BL_EINVAL);
    ck_assert_uint_eq(out.len, 4);
    ck_assert_str_eq(out.data, "keep");

    /* a capped output buffer: BL_ETOOBIG, unchanged */
    bl_buf small;
    bl_buf_init(&small, 20);
    memset(&in, 0, sizeof in);
    ck_assert_int_eq(bl_batch_encode(&in, &small), BL_ETOOBIG);
    ck_assert_uint_eq(small.len, 0);
    bl_buf_cleanup(&small);
    bl_buf_cleanup(&out);
}
END_TEST

START_TEST(limits)
{
    /* 65,536 threads (the maximum) decode; one more is refused */
    bl_batch in;
    memset(&in, 0, sizeof in);
    in.n_threads = 65536;
    in.threads = calloc(65536, sizeof *in.threads);
    ck_assert_ptr_nonnull(in.threads);
    for (uint32_t i = 0; i < 65536; i++)
        in.threads[i].id = i;
    bl_buf bin;
    bl_buf_init(&bin, 0);
    ck_assert_int_eq(bl_batch_encode(&in, &bin), BL_OK);
    bl_batch b;
    ck_assert_int_eq(bl_batch_decode((const uint8_t *)bin.data, bin.len, &b, NULL), BL_OK);
    ck_assert_uint_eq(b.n_threads, 65536);
    ck_assert_uint_eq(b.threads[65535].id, 65535);
    bl_batch_cleanup(&b);
    size_t nt_off = get32((const uint8_t *)bin.data + 12);
    put32((uint8_t *)bin.data + nt_off, 65537);
    expect_bad(bin.data, bin.len, BL_EFORMAT, nt_off, "n_threads: more than 65,536");
    put32((uint8_t *)bin.data + nt_off, UINT32_MAX);
    expect_bad(bin.data, bin.len, BL_EFORMAT, nt_off, "n_threads: more than 65,536");
    free(in.threads);
    bl_buf_cleanup(&bin);

    /* extreme values through JSON */
    const char *json =
        "{\"batch_id\":\"ffffffff-ffff-ffff-ffff-ffffffffffff\","
        "\"origin_wall_us\":-9223372036854775808,\"device\":{\"sdk\":4294967295},"
        "\"threads\":[{\"id\":9223372036854775807,\"records\":[[8388607,\"o\",1099511627775],"
        "[0,\"i\",0]]},{\"id\":-9223372036854775808}]}";
    bin = to_bin(json);
    ck_assert_int_eq(bl_batch_decode((const uint8_t *)bin.data, bin.len, &b, NULL), BL_OK);
    ck_assert_int_eq(b.origin_wall_us, INT64_MIN);
    ck_assert_uint_eq(b.sdk_level, UINT32_MAX);
    ck_assert_uint_eq(b.threads[0].id, (uint64_t)INT64_MAX);
    ck_assert_uint_eq(b.threads[1].id, (uint64_t)INT64_MAX + 1);
    ck_assert_uint_eq(bl_batch_record(&b.threads[0], 0), UINT64_MAX);
    ck_assert_uint_eq(bl_batch_record(&b.threads[0], 1), 0);
    bl_batch_cleanup(&b);
    bl_buf_cleanup(&bin);

    /* a 65,535-byte name survives JSON → binary → JSON → binary */
    bl_buf j;
    bl_buf_init(&j, 0);
    ck_assert_int_eq(bl_buf_puts(&j, "{\"batch_id\":\"ffffffff-ffff-ffff-ffff-ffffffffffff\","
                                     "\"threads\":[{\"name\":\""),
                     BL_OK);
    for (int i = 0; i < 65535; i++)
        ck_assert_int_eq(bl_buf_putc(&j, (char)('a' + i % 26)), BL_OK);
    ck_assert_int_eq(bl_buf_puts(&j, "\"}]}"), BL_OK);
    bin = to_bin(j.data);
    char *text = bin_to_json(bin.data, bin.len);
    bl_buf bin2 = to_bin(text);
    ck_assert_uint_eq(bin2.len, bin.len);
    ck_assert_mem_eq(bin2.data, bin.data, bin.len);
    free(text);
    bl_buf_cleanup(&bin2);
    bl_buf_cleanup(&bin);
    /* one byte more is refused, at the value */
    j.len -= 4;
    ck_assert_int_eq(bl_buf_puts(&j, "b\"}]}"), BL_OK);
    expect_json_bad(j.data, "\"abc", 0, "threads[].name: longer than 65,535 bytes");
    bl_buf_cleanup(&j);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* JSON form                                                                 */

START_TEST(json_round_trip)
{
    bl_buf bin = to_bin(sample_json);
    char *canon = bin_to_json(bin.data, bin.len);
    /* canonical JSON → binary gives the same bytes, and prints the same */
    bl_buf bin2 = to_bin(canon);
    ck_assert_uint_eq(bin2.len, bin.len);
    ck_assert_mem_eq(bin2.data, bin.data, bin.len);
    char *canon2 = bin_to_json(bin2.data, bin2.len);
    ck_assert_str_eq(canon2, canon);
    /* the decoded fields are what the JSON said */
    bl_batch b;
    ck_assert_int_eq(bl_batch_decode((const uint8_t *)bin.data, bin.len, &b, NULL), BL_OK);
    char id[37];
    bl_uuid_format(b.batch_id, id);
    ck_assert_str_eq(id, "0b7e4c6a-1f2d-4e3b-8a9c-0d1e2f3a4b5c");
    ck_assert_int_eq(b.origin_wall_us, 1700000000000000);
    ck_assert_uint_eq(b.sdk_level, 34);
    ck_assert_uint_eq(b.n_threads, 3);
    ck_assert_uint_eq(b.n_records, 5);
    ck_assert_uint_eq(b.threads[1].id, UINT64_MAX); /* JSON -1 */
    ck_assert_uint_eq(b.threads[1].truncated, 1);
    ck_assert_uint_eq(b.threads[1].name.n, 15);
    ck_assert_mem_eq(b.threads[1].name.p, "\xc3\xb6kHttp \"pool\"\n", 15);
    ck_assert_uint_eq(bl_batch_record(&b.threads[0], 2), bl_rec_make(1, 40, 150));
    ck_assert_uint_eq(bl_batch_record(&b.threads[1], 0), bl_rec_make(1, 7, 9));
    const char *lines = "{\"type\":\"launch\",\"cold\":true,\"ms\":812}\nnot json\n\n";
    ck_assert_uint_eq(b.events.n, strlen(lines));
    ck_assert_mem_eq(b.events.p, lines, b.events.n);
    bl_batch_cleanup(&b);
    /* the printed form, records one per line */
    ck_assert_ptr_nonnull(strstr(canon, "\"records\":[\n   [12,\"i\",0],\n   [40,\"i\",3],\n"));
    ck_assert_ptr_nonnull(strstr(canon, "{\"id\":-1,\"name\":\"\xc3\xb6kHttp \\\"pool\\\"\\n\""));
    ck_assert_ptr_nonnull(strstr(canon, "\"records\":[]}"));
    ck_assert_ptr_nonnull(strstr(canon, "\"events\":[\n  {\"type\":\"launch\",\"cold\":true,"
                                        "\"ms\":812},\n  \"not json\",\n  \"\"\n ]\n}\n"));
    free(canon);
    free(canon2);
    bl_buf_cleanup(&bin);
    bl_buf_cleanup(&bin2);
}
END_TEST

#define ID "\"batch_id\":\"ffffffff-ffff-ffff-ffff-ffffffffffff\""

START_TEST(json_events)
{
    /* lines that are not JSON objects come out as strings, objects are
     * rewritten compactly; either way the text converts back */
    bl_batch in;
    memset(&in, 0, sizeof in);
    in.events = S("{ \"b\" : 1, \"a\" : [true, null, 1.5e3] }\nnot json\n\n[1,2]\n\"s\"\n"
                  "{\"dup\":1,\"dup\":2}\n{\"nul\":\"\\u0000\"}\nno newline");
    bl_buf bin, text;
    bl_buf_init(&bin, 0);
    bl_buf_init(&text, 0);
    ck_assert_int_eq(bl_batch_encode(&in, &bin), BL_OK);
    bl_batch b;
    ck_assert_int_eq(bl_batch_decode((const uint8_t *)bin.data, bin.len, &b, NULL), BL_OK);
    ck_assert_int_eq(bl_batch_to_json(&b, &text), BL_OK);
    bl_batch_cleanup(&b);
    ck_assert_ptr_nonnull(strstr(text.data,
                                 "\"events\":[\n"
                                 "  {\"b\":1,\"a\":[true,null,1500.0]},\n"
                                 "  \"not json\",\n"
                                 "  \"\",\n"
                                 "  \"[1,2]\",\n"
                                 "  \"\\\"s\\\"\",\n"
                                 "  \"{\\\"dup\\\":1,\\\"dup\\\":2}\",\n"
                                 "  {\"nul\":\"\\u0000\"},\n"
                                 "  \"no newline\"\n ]\n}\n"));
    bl_buf bin2 = to_bin(text.data);
    char *text2 = bin_to_json(bin2.data, bin2.len);
    ck_assert_str_eq(text2, text.data);
    free(text2);

    /* events element rules */
    expect_json_bad("{" ID ",\"events\":[{},\"a\\nb\"]}", "\"a\\n", 0,
                    "events[]: a raw line must not contain a newline");
    expect_json_bad("{" ID ",\"events\":[{}, 12]}", "12", 0, "events[]: must be an object");
    expect_json_bad("{" ID ",\"events\":{}}", "{}", 0, "events: must be an array");
    bl_buf_cleanup(&bin);
    bl_buf_cleanup(&bin2);
    bl_buf_cleanup(&text);
}
END_TEST

START_TEST(json_errors)
{
    /* errors found by jansson: its position, just past the token at fault */
    expect_json_bad("", NULL, 0, "JSON: unexpected end of input");
    expect_json_bad("{" ID ",", NULL, strlen("{" ID ","), "JSON: unexpected end of input");
    expect_json_bad("{" ID "} x", NULL, 53, "JSON: text after the top-level value");
    expect_json_bad("{" ID ",\"app\":\"\xff\"}", NULL, 58, "JSON: invalid UTF-8");
    expect_json_bad("{" ID "," ID "}", NULL, 61, "JSON: duplicate object key");
    expect_json_bad("{" ID ",\"origin_wall_us\":9223372036854775808}", NULL, 87,
                    "JSON: number out of range");
    expect_json_bad("{\"a\":1,}", NULL, 8, "JSON: syntax error");
    expect_json_bad("{\"k\\u0000\":1}", NULL, 10, "JSON: \\u0000 in an object key");

    /* the document */
    expect_json_bad(" [1]", "[", 0, "top level: must be an object");
    expect_json_bad("{\"app\":\"x\"}", "{", 0, "batch_id: missing");
    expect_json_bad("{\"batch_id\":7}", "7", 0, "batch_id: must be a UUID");
    expect_json_bad("{\"batch_id\":\"0b7e4c6a-1f2d-4e3b-8a9c-0d1e2f3a4b5\"}", "\"0b7", 0,
                    "batch_id: must be a UUID");
    expect_json_bad("{" ID ",\"app\":1}", "1}", 0, "app: must be a string");
    expect_json_bad("{" ID ",\"build\":null}", "null", 0, "build: must be a string");
    expect_json_bad("{" ID ",\"session_id\":[]}", "[]", 0, "session_id: must be a string");
    expect_json_bad("{" ID ",\"origin_wall_us\":1.5}", "1.5", 0,
                    "origin_wall_us: must be an integer");
    expect_json_bad("{" ID ",\"device\":[]}", "[]", 0, "device: must be an object");
    expect_json_bad("{" ID ",\"device\":{\"model\":false}}", "false", 0,
                    "device.model: must be a string");
    expect_json_bad("{" ID ",\"device\":{\"os\":{}}}", "{}}", 0, "device.os: must be a string");
    expect_json_bad("{" ID ",\"device\":{\"sdk\":-1}}", "-1", 0, "device.sdk: must be an integer");
    expect_json_bad("{" ID ",\"device\":{\"sdk\":4294967296}}", "42", 0,
                    "device.sdk: must be an integer");

    /* threads */
    expect_json_bad("{" ID ",\"threads\":{}}", "{}", 0, "threads: must be an array");
    expect_json_bad("{" ID ",\"threads\":[{},3]}", "3]", 0, "threads[]: must be an object");
    expect_json_bad("{" ID ",\"threads\":[{\"id\":\"1\"}]}", "\"1\"", 0,
                    "threads[].id: must be an integer");
    expect_json_bad("{" ID ",\"threads\":[{\"name\":1}]}", "1}", 0,
                    "threads[].name: must be a string");
    expect_json_bad("{" ID ",\"threads\":[{\"main\":1}]}", "1}", 0,
                    "threads[].main: must be true or false");
    expect_json_bad("{" ID ",\"threads\":[{\"truncated\":\"no\"}]}", "\"no\"", 0,
                    "threads[].truncated: must be true or false");
    expect_json_bad("{" ID ",\"threads\":[{\"records\":{}}]}", "{}}", 0,
                    "threads[].records: must be an array");

    /* records: the exact element */
#define RECS(x) \
    "{" ID ",\"threads\":[{\"records\":[[1,\"i\",0]]},{\"records\":[[1,\"i\",0]," x "]}]}"
    static const struct {
        const char *json, *marker, *msg;
    } bad[] = {
        { RECS("[8388608,\"o\",1]"), "8388608", "threads[].records[][0]: methodId must be" },
        { RECS("[-1,\"o\",1]"), "-1", "threads[].records[][0]: methodId must be" },
        { RECS("[1.0,\"o\",1]"), "1.0", "threads[].records[][0]: methodId must be" },
        { RECS("[\"1\",\"o\",1]"), "\"1\"", "threads[].records[][0]: methodId must be" },
        { RECS("[5,\"x\",1]"), "\"x\"", "threads[].records[][1]: must be \"i\"" },
        { RECS("[5,\"io\",1]"), "\"io\"", "threads[].records[][1]: must be \"i\"" },
        { RECS("[5,1,1]"), "1,1]", "threads[].records[][1]: must be \"i\"" },
        { RECS("[5,\"i\",1099511627776]"), "1099511627776",
          "threads[].records[][2]: t_us must be" },
        { RECS("[5,\"i\",-3]"), "-3", "threads[].records[][2]: t_us must be" },
        { RECS("[5,\"i\",null]"), "null", "threads[].records[][2]: t_us must be" },
        { RECS("[5,\"i\"]"), "[5,", "threads[].records[]: must be [methodId" },
        { RECS("[5,\"i\",1,2]"), "[5,", "threads[].records[]: must be [methodId" },
        { RECS("{}"), "{}", "threads[].records[]: must be [methodId" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_json_bad(bad[i].json, bad[i].marker, 0, bad[i].msg);

    /* keys written with escapes are still found; unknown keys are skipped,
     * whatever escapes they hold */
    expect_json_bad("{\"\\n\":0,\"\\\"\":0,\"\\\\\":0,\"\\/\":0,\"\\b\":0,\"\\f\":0,\"\\r\":0,"
                    "\"\\t\":0,\"\\u00e9\":0,\"b\\u00e9\":{\"batch_id\":1},\"batch\\u005fid\":7}",
                    "7}", 0, "batch_id: must be a UUID");

    /* limits of the JSON side */
    bl_buf j;
    bl_buf_init(&j, 0);
    ck_assert_int_eq(bl_buf_puts(&j, "{" ID ",\"threads\":["), BL_OK);
    for (int i = 0; i < 65537; i++)
        ck_assert_int_eq(bl_buf_puts(&j, i ? ",{}" : "{}"), BL_OK);
    ck_assert_int_eq(bl_buf_puts(&j, "]}"), BL_OK);
    expect_json_bad(j.data, NULL, j.len - 4, "threads: more than 65,536 threads");
    bl_buf_reset(&j);
    ck_assert_int_eq(bl_buf_puts(&j, "{" ID ",\"x\":"), BL_OK);
    for (int i = 0; i < 5000; i++)
        ck_assert_int_eq(bl_buf_putc(&j, '['), BL_OK);
    bl_batch_error err;
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_batch_json_to_binary(j.data, j.len, &out, &err), BL_EFORMAT);
    ck_assert_str_eq(err.message, "JSON: nested too deeply");
    bl_buf_cleanup(&out);
    bl_buf_cleanup(&j);
    expect_json_bad("{\"x\":{\"threads\":1}, "
                    "\"b\\u0061tch_id\":\"ffffffff-ffff-ffff-ffff-ffffffffffff\","
                    " \"thr\\u0065ads\":[{\"records\":[[1,\"\\u0069\",2],[1,\"q\",2]]}]}",
                    "\"q\"", 0, "threads[].records[][1]");
}
END_TEST

START_TEST(json_defaults)
{
    bl_buf bin = to_bin("{\"batch_id\":\"F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6\",\"extra\":[{}],"
                        "\"threads\":[{}],\"device\":{}}");
    bl_batch b;
    ck_assert_int_eq(bl_batch_decode((const uint8_t *)bin.data, bin.len, &b, NULL), BL_OK);
    ck_assert_uint_eq(b.batch_id[0], 0xf8);
    ck_assert_uint_eq(b.batch_id[15], 0xf6);
    ck_assert_uint_eq(b.app.n + b.build.n + b.session_id.n + b.device_model.n + b.os_version.n, 0);
    ck_assert_int_eq(b.origin_wall_us, 0);
    ck_assert_uint_eq(b.sdk_level, 0);
    ck_assert_uint_eq(b.n_threads, 1);
    ck_assert_uint_eq(b.threads[0].id, 0);
    ck_assert_uint_eq(b.threads[0].main + b.threads[0].truncated, 0);
    ck_assert_uint_eq(b.threads[0].n_records, 0);
    ck_assert_uint_eq(b.events.n, 0);
    bl_batch_cleanup(&b);
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(to_json_rejects)
{
    bl_batch in;
    memset(&in, 0, sizeof in);
    bl_buf out;
    bl_buf_init(&out, 0);
    ck_assert_int_eq(bl_buf_puts(&out, "keep"), BL_OK);
    in.app = S("\xe0\x80\xaf"); /* overlong '/' */
    ck_assert_int_eq(bl_batch_to_json(&in, &out), BL_EINVAL);
    in.app = S("");
    in.n_threads = 1;
    ck_assert_int_eq(bl_batch_to_json(&in, &out), BL_EINVAL);
    ck_assert_str_eq(out.data, "keep");
    /* a capped buffer: BL_ETOOBIG, left as it was */
    bl_buf small;
    bl_buf_init(&small, 40);
    memset(&in, 0, sizeof in);
    ck_assert_int_eq(bl_batch_to_json(&in, &small), BL_ETOOBIG);
    ck_assert_uint_eq(small.len, 0);
    bl_buf_cleanup(&small);
    bl_buf_cleanup(&out);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* malformed binary input                                                    */

START_TEST(truncated_everywhere)
{
    bl_buf bin = to_bin(sample_json);
    for (size_t n = 0; n < bin.len; n++) {
        bl_batch_error err;
        bl_err e = decode_copy(bin.data, n, &err);
        ck_assert_msg(e == BL_EFORMAT, "prefix of %zu bytes: %s", n, bl_err_str(e));
    }
    bl_batch_error err;
    ck_assert_int_eq(decode_copy(bin.data, bin.len, &err), BL_OK);
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(truncated_table)
{
    /* Threads without records, so the truncation is found by each field of
     * the table itself, not by a record count: names of 20, 20 and 18 bytes
     * end the table at 161, 1 mod 8, so 7 bytes of padding follow. */
    bl_buf bin = to_bin("{\"batch_id\":\"ffffffff-ffff-ffff-ffff-ffffffffffff\",\"threads\":["
                        "{\"name\":\"aaaaaaaaaaaaaaaaaaaa\"},{\"name\":\"bbbbbbbbbbbbbbbbbbbb\"},"
                        "{\"name\":\"cccccccccccccccccc\"}]}");
    ck_assert_uint_eq(bin.len, 161 + 7 + 4);
    static const char *const want[] = {
        "n_threads: truncated",     "thread id: truncated",
        "thread name: runs past the end of the input",
        "thread flags: truncated",  "n_records: truncated",
        "padding: truncated",       "events_len: truncated",
    };
    int seen[sizeof want / sizeof *want] = { 0 };
    for (size_t n = 54; n < bin.len; n++) {
        bl_batch_error err;
        ck_assert_int_eq(decode_copy(bin.data, n, &err), BL_EFORMAT);
        for (size_t k = 0; k < sizeof want / sizeof *want; k++)
            if (!strcmp(err.message, want[k]))
                seen[k]++;
    }
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        ck_assert_msg(seen[k] > 0, "never reported: %s", want[k]);
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(bits_flipped)
{
    bl_buf bin = to_bin(sample_json);
    uint8_t *p = (uint8_t *)bin.data;
    size_t failed = 0, total = 0;
    for (size_t i = 0; i < bin.len; i++)
        for (int bit = 0; bit < 8; bit++) {
            bl_batch_error err;
            p[i] ^= (uint8_t)(1u << bit);
            if (decode_copy(p, bin.len, &err) != BL_OK)
                failed++;
            total++;
            p[i] ^= (uint8_t)(1u << bit);
        }
    /* record bits and most id/time bits are free; structure bits are not */
    ck_assert_uint_gt(failed, total / 4);
    ck_assert_uint_lt(failed, total);
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(header_rules)
{
    bl_buf bin = to_bin(sample_json);
    uint8_t *p = (uint8_t *)bin.data;
    size_t n = bin.len;
    uint32_t hs = get32(p + 12);

    p[0] = 'b';
    expect_bad(p, n, BL_EFORMAT, 0, "magic: not a Beatline batch");
    p[0] = 'B';
    expect_bad(p, 5, BL_EFORMAT, 0, "magic: truncated");
    expect_bad("BEATLIMX", 8, BL_EFORMAT, 0, "magic: not a Beatline batch");
    expect_bad("{\"app\": \"x\"}", 12, BL_EFORMAT, 0,
               "magic: not a Beatline batch (expected \"BEATLINE\"; this looks like JSON: "
               "encode it first with beatline-batch encode)");
    expect_bad(p, 9, BL_EFORMAT, 8, "version: truncated");
    static const uint16_t versions[] = { 0, 2, 0x100, 0xFFFF };
    for (size_t i = 0; i < 4; i++) {
        put16(p + 8, versions[i]);
        expect_bad(p, n, BL_EVERSION, 8, "version: unsupported");
        expect_bad(p, 10, BL_EVERSION, 8, "version: unsupported"); /* even when short */
    }
    put16(p + 8, 1);
    expect_bad(p, 11, BL_EFORMAT, 10, "flags: truncated");
    for (int bit = 0; bit < 16; bit++) {
        put16(p + 10, (uint16_t)(1u << bit));
        expect_bad(p, n, BL_EFORMAT, 10, "flags: must be 0");
    }
    put16(p + 10, 0);
    expect_bad(p, 15, BL_EFORMAT, 12, "header_size: truncated");
    put32(p + 12, 53);
    expect_bad(p, n, BL_EFORMAT, 12, "header_size: smaller than the 54-byte minimum");
    put32(p + 12, 0);
    expect_bad(p, n, BL_EFORMAT, 12, "header_size: smaller");
    put32(p + 12, (uint32_t)n + 1);
    expect_bad(p, n, BL_EFORMAT, 12, "header_size: past the end");
    put32(p + 12, UINT32_MAX);
    expect_bad(p, n, BL_EFORMAT, 12, "header_size: past the end");
    /* too small for its strings: the string that runs past it is named */
    put32(p + 12, hs - 1);
    size_t os_len = hs - 2 - 2; /* os_version "14" is the last string */
    expect_bad(p, n, BL_EFORMAT, os_len, "os_version: runs past header_size");
    put32(p + 12, 54);
    expect_bad(p, n, BL_EFORMAT, 44, "app: runs past header_size");
    put32(p + 12, hs);
    /* a string length past the header */
    put16(p + 44, 0xFFFF);
    expect_bad(p, n, BL_EFORMAT, 44, "app: runs past header_size");
    put16(p + 44, 16);
    ck_assert_int_eq(memcmp(p + 46, "com.example.shop", 16), 0);
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(utf8_rules)
{
    bl_buf bin = to_bin("{\"batch_id\":\"ffffffff-ffff-ffff-ffff-ffffffffffff\","
                        "\"app\":\"abcdefgh\",\"threads\":[{\"name\":\"abcd\"}],"
                        "\"events\":[\"0123456789abcdef\"]}");
    uint8_t *p = (uint8_t *)bin.data;
    size_t n = bin.len;
    layout l = layout_of(p, n);
    size_t app = 46, name = l.name_len[0] + 2, ev = l.events_len + 4;
    /* each bad sequence, placed at byte 2 of the field; the offset is its
     * first byte */
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        { "\x80", 1 },             /* lone continuation */
        { "\xbf", 1 },
        { "\xc0\x80", 2 },         /* overlong NUL */
        { "\xc1\xbf", 2 },         /* overlong */
        { "\xe0\x80\xaf", 3 },     /* overlong '/' */
        { "\xe0\x9f\xbf", 3 },     /* overlong U+07FF */
        { "\xed\xa0\x80", 3 },     /* surrogate U+D800 */
        { "\xed\xbf\xbf", 3 },     /* surrogate U+DFFF */
        { "\xf0\x8f\xbf\xbf", 4 }, /* overlong U+FFFF */
        { "\xf4\x90\x80\x80", 4 }, /* U+110000 */
        { "\xf5\x80\x80\x80", 4 },
        { "\xff", 1 },
        { "\xc3\x28", 2 },         /* continuation missing */
        { "\xe2\x82", 2 },         /* cut short by the next ASCII byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t save[8];
        memcpy(save, p + app + 2, 4);
        memcpy(p + app + 2, bad[i].bytes, bad[i].len);
        expect_bad(p, n, BL_EFORMAT, app + 2, "app: invalid UTF-8");
        memcpy(p + app + 2, save, 4);
        memcpy(save, p + name + 1, 3);
        memcpy(p + name + 1, bad[i].bytes, bad[i].len < 3 ? bad[i].len : 3);
        if (bad[i].len <= 3)
            expect_bad(p, n, BL_EFORMAT, name + 1, "thread name: invalid UTF-8");
        memcpy(p + name + 1, save, 3);
        memcpy(save, p + ev + 2, 8);
        memcpy(p + ev + 2, bad[i].bytes, bad[i].len);
        expect_bad(p, n, BL_EFORMAT, ev + 2, "events: invalid UTF-8");
        memcpy(p + ev + 2, save, 8);
    }
    /* a sequence cut by the end of the string */
    p[app + 7] = 0xC3;
    expect_bad(p, n, BL_EFORMAT, app + 7, "app: invalid UTF-8");
    p[app + 7] = 'h';
    p[ev + 15] = 0xF0; /* the last two events bytes: a 4-byte sequence cut */
    p[ev + 16] = 0x9F;
    expect_bad(p, n, BL_EFORMAT, ev + 15, "events: invalid UTF-8");
    p[ev + 15] = 'f';
    p[ev + 16] = '\n';
    /* valid multi-byte sequences at the edges pass */
    memcpy(p + ev + 4, "\xf4\x8f\xbf\xbf\xef\xbf\xbf", 7); /* U+10FFFF U+FFFF */
    memcpy(p + app, "\xc2\x80\xdf\xbf\xe0\xa0\x80\x7f", 8);
    bl_batch_error err;
    ck_assert_int_eq(decode_copy(p, n, &err), BL_OK);
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(table_rules)
{
    bl_buf bin = to_bin(sample_json);
    uint8_t *p = (uint8_t *)bin.data;
    size_t n = bin.len;
    layout l = layout_of(p, n);

    /* thread flags: only bits 0-3 (bit 2 `continued` adds fields: see the
     * 02xx golden cases and segments_* below) */
    for (int bit = 4; bit < 8; bit++) {
        uint8_t save = p[l.flags[1]];
        p[l.flags[1]] = (uint8_t)(save | 1u << bit);
        expect_bad(p, n, BL_EFORMAT, l.flags[1], "thread flags: unknown bits set");
        p[l.flags[1]] = save;
    }
    p[l.flags[2]] = 3;
    bl_batch b;
    ck_assert_int_eq(bl_batch_decode(p, n, &b, NULL), BL_OK);
    ck_assert_uint_eq(b.threads[2].main + b.threads[2].truncated, 2);
    ck_assert_uint_eq(b.threads[2].continues + b.threads[2].n_carried, 0);
    bl_batch_cleanup(&b);
    p[l.flags[2]] = 8; /* continues: no extra fields */
    ck_assert_int_eq(bl_batch_decode(p, n, &b, NULL), BL_OK);
    ck_assert_uint_eq(b.threads[2].continues, 1);
    ck_assert_uint_eq(b.threads[2].n_carried, 0);
    bl_batch_cleanup(&b);
    p[l.flags[2]] = 4; /* continued: n_carried and since_us would follow */
    expect_bad(p, n, BL_EFORMAT, l.n_records[2] + 4, "n_carried");
    p[l.flags[2]] = 0;

    /* counts that cannot fit */
    put32(p + l.n_threads, 1000);
    expect_bad(p, n, BL_EFORMAT, l.n_threads, "n_threads: more threads than the input can hold");
    put32(p + l.n_threads, 3);
    put32(p + l.n_records[0], UINT32_MAX);
    expect_bad(p, n, BL_EFORMAT, l.n_records[0], "n_records: more records than the input");
    put32(p + l.n_records[0], 4);
    put32(p + l.n_records[2], 100); /* more than the rest of the input */
    expect_bad(p, n, BL_EFORMAT, l.n_records[2], "n_records: more records than the input");
    put32(p + l.n_records[2], 0);
    /* a name length past the end */
    uint8_t save_len[2];
    memcpy(save_len, p + l.name_len[1], 2);
    put16(p + l.name_len[1], 0xFFFF);
    expect_bad(p, n, BL_EFORMAT, l.name_len[1], "thread name: runs past the end");
    memcpy(p + l.name_len[1], save_len, 2);

    /* padding: every byte must be zero */
    ck_assert_uint_gt(l.records - l.table_end, 0);
    for (size_t k = l.table_end; k < l.records; k++) {
        p[k] = 0x80;
        expect_bad(p, n, BL_EFORMAT, k, "padding: must be zero");
        p[k] = 0;
    }

    /* events_len */
    put32(p + l.events_len, (uint32_t)(n - l.events_len - 4 + 1));
    expect_bad(p, n, BL_EFORMAT, l.events_len, "events_len: runs past the end");
    put32(p + l.events_len, UINT32_MAX);
    expect_bad(p, n, BL_EFORMAT, l.events_len, "events_len: runs past the end");
    put32(p + l.events_len, (uint32_t)(n - l.events_len - 4 - 1));
    expect_bad(p, n, BL_EFORMAT, n - 1, "trailing bytes after the events");
    put32(p + l.events_len, (uint32_t)(n - l.events_len - 4));

    /* a trailing byte */
    ck_assert_int_eq(bl_buf_putc(&bin, 0), BL_OK);
    p = (uint8_t *)bin.data;
    expect_bad(p, n + 1, BL_EFORMAT, n, "trailing bytes after the events");
    bl_buf_cleanup(&bin);
}
END_TEST

START_TEST(records_past_end)
{
    /* A count that passes the per-entry check (8 × n_records + 4 bytes are
     * left after the entry) but not the padding that follows the table: one
     * thread, the table ends at 73, 7 bytes of padding, records at 80. */
    uint8_t p[256];
    memset(p, 0, sizeof p);
    memcpy(p, "BEATLINE\x01\x00\x00\x00", 12);
    put32(p + 12, 54);
    /* strings all empty (bytes 44..53 zero); n_threads at 54 */
    put32(p + 54, 1);
    /* thread: id 58, name length 66 = 0, flags 68, n_records 69, table ends 73 */
    put32(p + 69, 1);
    expect_bad(p, 85, BL_EFORMAT, 80, "records: run past the end"); /* 12 bytes after 73 */
    bl_batch_error err;
    ck_assert_int_eq(decode_copy(p, 92, &err), BL_OK); /* padding, record, events_len */
}
END_TEST

START_TEST(unknown_header_bytes)
{
    /* a later writer appends header fields: a v1 decoder skips them */
    bl_buf bin = to_bin(sample_json);
    const uint8_t *p = (const uint8_t *)bin.data;
    uint32_t hs = get32(p + 12);
    layout l = layout_of(p, bin.len);
    uint8_t extra[3] = { 0xde, 0xad, 0x01 };
    bl_buf x;
    bl_buf_init(&x, 0);
    ck_assert_int_eq(bl_buf_append(&x, p, hs), BL_OK);
    put32((uint8_t *)x.data + 12, hs + 3);
    ck_assert_int_eq(bl_buf_append(&x, extra, 3), BL_OK);
    ck_assert_int_eq(bl_buf_append(&x, p + hs, l.table_end - hs), BL_OK);
    size_t pad = (8 - (x.len & 7)) & 7;
    ck_assert_int_eq(bl_buf_zero(&x, pad), BL_OK);
    ck_assert_int_eq(bl_buf_append(&x, p + l.records, bin.len - l.records), BL_OK);
    char *a = bin_to_json(p, bin.len), *b = bin_to_json(x.data, x.len);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    bl_buf_cleanup(&x);
    bl_buf_cleanup(&bin);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* a big batch                                                               */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(million_records)
{
    enum { N = 1000000, T = 4 };
    uint8_t *recs = malloc((size_t)N * 8);
    ck_assert_ptr_nonnull(recs);
    for (uint32_t i = 0; i < N; i++) {
        uint64_t r = bl_rec_make((int)(i & 1), (i / 2) % (BL_REC_ID_MAX + 1), i);
        for (int k = 0; k < 8; k++)
            recs[(size_t)i * 8 + (size_t)k] = (uint8_t)(r >> (8 * k));
    }
    bl_batch_thread th[T];
    memset(th, 0, sizeof th);
    for (int t = 0; t < T; t++) {
        th[t].id = (uint64_t)t + 1;
        th[t].name = S("worker");
        th[t].n_records = N / T;
        th[t].records = recs + (size_t)t * (N / T) * 8;
    }
    bl_batch in;
    memset(&in, 0, sizeof in);
    in.n_threads = T;
    in.threads = th;
    bl_buf bin;
    bl_buf_init(&bin, 0);
    ck_assert_int_eq(bl_batch_encode(&in, &bin), BL_OK);
    ck_assert_uint_ge(bin.len, (size_t)N * 8);

    bl_batch b;
    bl_batch_error err;
    double t0 = now_s();
    int reps = 0;
    do {
        ck_assert_int_eq(bl_batch_decode((const uint8_t *)bin.data, bin.len, &b, &err), BL_OK);
        if (++reps < 100)
            bl_batch_cleanup(&b);
    } while (reps < 100);
    double dt = (now_s() - t0) / reps;
    ck_assert_uint_eq(b.n_records, N);
    ck_assert_uint_eq(b.n_threads, T);
    uint64_t sum = 0;
    double t1 = now_s();
    for (int t = 0; t < T; t++)
        for (uint32_t i = 0; i < b.threads[t].n_records; i++)
            sum += bl_rec_time(bl_batch_record(&b.threads[t], i));
    double dr = now_s() - t1;
    ck_assert_uint_eq(sum, (uint64_t)N * (N - 1) / 2);
    ck_assert_uint_eq(bl_batch_record(&b.threads[3], N / T - 1),
                      bl_rec_make(1, (N - 1) / 2, N - 1));
    /* decode does no per-record work: its time does not grow with N */
    fprintf(stderr,
            "batch_test: %d records: decode %.1f us, reading them all %.1f ms (%.0f M/s)\n", N,
            dt * 1e6, dr * 1e3, N / dr / 1e6);

    /* and through JSON and back */
    bl_buf text;
    bl_buf_init(&text, 0);
    ck_assert_int_eq(bl_batch_to_json(&b, &text), BL_OK);
    bl_buf bin2 = to_bin(text.data);
    ck_assert_uint_eq(bin2.len, bin.len);
    ck_assert_mem_eq(bin2.data, bin.data, bin.len);
    bl_batch_cleanup(&b);
    bl_buf_cleanup(&bin2);
    bl_buf_cleanup(&text);
    bl_buf_cleanup(&bin);
    free(recs);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* golden cases                                                              */


static char *case_file(const char *name, const char *file, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", CASES_DIR, name, file);
    return tu_read_file(path, n);
}

static const char *err_name(bl_err e)
{
    switch (e) {
    case BL_OK: return "BL_OK";
    case BL_ENOMEM: return "BL_ENOMEM";
    case BL_EIO: return "BL_EIO";
    case BL_EFORMAT: return "BL_EFORMAT";
    case BL_ETOOBIG: return "BL_ETOOBIG";
    case BL_ENOTFOUND: return "BL_ENOTFOUND";
    case BL_EVERSION: return "BL_EVERSION";
    case BL_EINVAL: return "BL_EINVAL";
    }
    return "?";
}

START_TEST(golden_cases_exist)
{
    ck_assert_int_ge(n_cases, 10);
}
END_TEST

START_TEST(golden_case)
{
    ck_assert_int_lt(_i, n_cases);
    const char *name = case_names[_i];
    size_t jn = 0, bn = 0, en = 0, xn = 0;
    char *json_in = case_file(name, "input.json", &jn);
    char *bin_in = case_file(name, "input.bin", &bn);
    char *want_err = case_file(name, "expected-error.txt", NULL);
    char *want_json = case_file(name, "expected.json", &en);
    char *want_bin = case_file(name, "expected.bin", &xn);
    ck_assert_msg((json_in != NULL) != (bin_in != NULL), "case %s: one input file", name);
    ck_assert_msg((want_err != NULL) != (want_json != NULL), "case %s: one expectation", name);

    bl_buf bin;
    bl_batch_error err = { 0, NULL };
    bl_err e = BL_OK;
    bl_buf_init(&bin, 0);
    if (json_in) {
        e = bl_batch_json_to_binary(json_in, jn, &bin, &err);
    } else {
        bl_batch b;
        e = bl_batch_decode((const uint8_t *)bin_in, bn, &b, &err);
        bl_batch_cleanup(&b);
        if (!e)
            ck_assert_int_eq(bl_buf_append(&bin, bin_in, bn), BL_OK);
    }
    if (want_err) {
        char got[512];
        snprintf(got, sizeof got, "%s\noffset %zu: %s\n", err_name(e), err.offset,
                 err.message ? err.message : "(none)");
        ck_assert_msg(strcmp(got, want_err) == 0, "case %s:\n--- expected\n%s--- got\n%s", name,
                      want_err, got);
    } else {
        ck_assert_msg(e == BL_OK, "case %s: %s at %zu", name, err.message, err.offset);
        if (want_bin) {
            ck_assert_msg(bin.len == xn && memcmp(bin.data, want_bin, xn) == 0,
                          "case %s: binary differs from expected.bin", name);
            /* the expected JSON is canonical: it encodes to the same bytes */
            bl_buf again = to_bin(want_json);
            ck_assert_msg(again.len == xn && memcmp(again.data, want_bin, xn) == 0,
                          "case %s: expected.json does not encode to expected.bin", name);
            bl_buf_cleanup(&again);
        }
        char *got = bin_to_json(bin.data, bin.len);
        ck_assert_msg(strcmp(got, want_json) == 0, "case %s:\n--- expected\n%s--- got\n%s", name,
                      want_json, got);
        free(got);
    }
    bl_buf_cleanup(&bin);
    free(json_in);
    free(bin_in);
    free(want_err);
    free(want_json);
    free(want_bin);
}
END_TEST

int main(void)
{
    n_cases = tu_discover_cases(CASES_DIR, case_names, MAX_CASES);
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, uuid_text);
    tcase_add_test(tc, record_helpers);
    tcase_add_test(tc, every_field);
    tcase_add_test(tc, encode_appends);
    tcase_add_test(tc, encode_rejects);
    tcase_add_test(tc, limits);
    suite_add_tcase(s, tc);
    TCase *tj = tcase_create("json");
    tcase_add_test(tj, json_round_trip);
    tcase_add_test(tj, json_events);
    tcase_add_test(tj, json_errors);
    tcase_add_test(tj, json_defaults);
    tcase_add_test(tj, to_json_rejects);
    suite_add_tcase(s, tj);
    TCase *tm = tcase_create("malformed");
    tcase_add_test(tm, truncated_everywhere);
    tcase_add_test(tm, truncated_table);
    tcase_add_test(tm, bits_flipped);
    tcase_add_test(tm, header_rules);
    tcase_add_test(tm, utf8_rules);
    tcase_add_test(tm, table_rules);
    tcase_add_test(tm, records_past_end);
    tcase_add_test(tm, unknown_header_bytes);
    suite_add_tcase(s, tm);
    TCase *tb = tcase_create("big");
    tcase_add_test(tb, million_records);
    suite_add_tcase(s, tb);
    TCase *tg = tcase_create("golden");
    tcase_add_test(tg, golden_cases_exist);
    tcase_add_loop_test(tg, golden_case, 0, n_cases);
    suite_add_tcase(s, tg);
    int rc = tu_run(s);
    for (int i = 0; i < n_cases; i++)
        free(case_names[i]);
    return rc;
}
