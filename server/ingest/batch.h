/*
 * batch.h — Beatline batch wire format v1 (schema/batch-format.md): the
 * binary dump of an app's ring buffers that the runtime uploads and the
 * server decodes. Little-endian throughout.
 *
 * One record is 64 bits (the runtime's ring-buffer layout, too):
 *
 *   bit 63        exit flag: 1 = method exit ("o"), 0 = method enter ("i")
 *   bits 62..40   methodId (23 bits, 0 .. 8,388,607)
 *   bits 39..0    timestamp, µs since the batch's monotonic origin
 *                 (40 bits: 12.7 days)
 *
 * Decoding is zero-copy: strings, records and events point into the caller's
 * buffer, which must outlive the decoded bl_batch. Only the thread table is
 * allocated.
 */
#ifndef BL_BATCH_H
#define BL_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "common/blerr.h"
#include "common/buf.h"

#define BL_BATCH_MAGIC "BEATLINE"   /* 8 bytes, no NUL */
#define BL_BATCH_VERSION 1

#define BL_REC_EXIT (1ull << 63)
#define BL_REC_ID_SHIFT 40
#define BL_REC_ID_MAX ((1u << 23) - 1)
#define BL_REC_T_MASK ((1ull << 40) - 1)

static inline uint64_t bl_rec_make(int is_exit, uint32_t method_id, uint64_t t_us)
{
    return (is_exit ? BL_REC_EXIT : 0) | ((uint64_t)(method_id & BL_REC_ID_MAX) << BL_REC_ID_SHIFT) |
           (t_us & BL_REC_T_MASK);
}
static inline int bl_rec_is_exit(uint64_t r) { return (r & BL_REC_EXIT) != 0; }
static inline uint32_t bl_rec_method(uint64_t r) { return (uint32_t)(r >> BL_REC_ID_SHIFT) & BL_REC_ID_MAX; }
static inline uint64_t bl_rec_time(uint64_t r) { return r & BL_REC_T_MASK; }
/* Record i of a thread's packed records (bl_batch_thread.records: 8 bytes
 * each, little-endian, possibly unaligned). */
static inline uint64_t bl_rec_load(const uint8_t *records, size_t i)
{
    uint64_t v;
    memcpy(&v, records + i * 8, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* A borrowed UTF-8 string (not NUL-terminated). */
typedef struct bl_str {
    const char *p;
    uint32_t n;
} bl_str;

typedef struct bl_batch_thread {
    uint64_t id;           /* thread id as the runtime saw it */
    bl_str name;
    uint8_t main;          /* 1: the app's main (UI) thread */
    uint8_t truncated;     /* 1: the ring wrapped before the dump */
    uint8_t continues;     /* 1: flag `continues` — the thread goes on in a later segment;
                              calls open at the end are not counted here */
    uint32_t n_carried;    /* flag `continued`: the first n_carried records (>= 1) are
                              carried enters of calls open since an earlier segment;
                              0 when the flag is not set */
    uint64_t since_us;     /* flag `continued`: where the previous segment ended (µs since
                              the origin, < 2^40); 0 otherwise */
    uint32_t n_records;
    const uint8_t *records; /* n_records × 8 bytes, little-endian, maybe unaligned */
} bl_batch_thread;

/* Reads record i of thread t (no bounds check; i < t->n_records). */
static inline uint64_t bl_batch_record(const bl_batch_thread *t, uint32_t i)
{
    uint64_t v;
    memcpy(&v, t->records + (size_t)i * 8, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

typedef struct bl_batch {
    uint16_t version;
    uint8_t batch_id[16];     /* UUID (RFC 9562) bytes */
    int64_t origin_wall_us;   /* wall clock, µs since the Unix epoch, at monotonic 0 */
    uint32_t sdk_level;       /* Android API level; 0 when not Android */
    bl_str app, build, session_id, device_model, os_version;
    uint32_t n_threads;
    bl_batch_thread *threads; /* owned (malloc); NULL when n_threads == 0 */
    bl_str events;            /* JSON lines, one event object per line; may be empty */
    uint64_t n_records;       /* sum over threads */
} bl_batch;

/* Where and why decoding failed. */
typedef struct bl_batch_error {
    size_t offset;           /* byte offset of the problem in the input */
    const char *message;     /* static text */
} bl_batch_error;

/*
 * Decodes a v1 batch. On BL_OK, *out borrows from buf (keep it alive) and
 * owns its thread table: release with bl_batch_cleanup. On BL_EFORMAT (bad
 * magic, truncation, lengths past the end, bad UTF-8 in names, methodId or
 * flag bits out of range, trailing bytes) or BL_EVERSION, *err says where.
 * BL_ENOMEM. Never reads outside [buf, buf+len).
 */
bl_err bl_batch_decode(const uint8_t *buf, size_t len, bl_batch *out, bl_batch_error *err);
void bl_batch_cleanup(bl_batch *b);

/* Encodes *b (records read through bl_batch_record from each thread's
 * `records`) as v1 binary, appended to out. BL_EINVAL when a string is over
 * 65,535 bytes or counts overflow. */
bl_err bl_batch_encode(const bl_batch *b, bl_buf *out);

/*
 * JSON equivalent (schema/batch-format.md):
 *   {"batch_id":"UUID","app":"…","build":"…","session_id":"…",
 *    "origin_wall_us":N,"device":{"model":"…","os":"…","sdk":N},
 *    "threads":[{"id":1,"name":"main","main":true,"truncated":false,
 *                "records":[[methodId,"i"|"o",t_us],…]}],
 *    "events":[{…},…]}
 * bl_batch_json_to_binary parses JSON text and appends the binary encoding;
 * on BL_EFORMAT *err names the JSON position (offset) and what is wrong.
 * bl_batch_to_json appends the JSON text of a decoded batch (one object,
 * records one per line for readability).
 */
bl_err bl_batch_json_to_binary(const char *json, size_t len, bl_buf *out, bl_batch_error *err);
bl_err bl_batch_to_json(const bl_batch *b, bl_buf *out);

/* Formats a batch id as the canonical 36-character UUID text + NUL. */
void bl_uuid_format(const uint8_t id[16], char out[37]);
/* Parses canonical UUID text (case-insensitive); 0 on success, -1 if bad. */
int bl_uuid_parse(const char *s, size_t n, uint8_t id[16]);

#endif
