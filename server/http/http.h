/*
 * http.h — Beatline's HTTP API v1 on libmicrohttpd (docs/api.md lists every
 * endpoint with shapes and errors).
 *
 *   GET  /healthz                                   liveness
 *   GET  /metrics                                   Prometheus text format
 *   PUT  /v1/apps/{app}/builds/{build}/mapping      upload key
 *   PUT  /v1/apps/{app}/builds/{build}/method-ids   upload key
 *   POST /v1/apps/{app}/batches                     ingest key
 *   GET  /v1/apps/{app}/builds                      read key
 *   GET  /v1/apps/{app}/slow-methods                read key
 *   GET  /v1/apps/{app}/call-tree                   read key (?format=speedscope|chrome)
 *   GET  /v1/apps/{app}/method-histogram            read key
 *   POST /v1/apps/{app}/builds/{build}/retrace      read key
 *   DELETE /v1/apps/{app}/builds/{build}            upload key
 *   GET  / and other paths outside /v1/             the dashboard (--web DIR)
 *
 * Errors are JSON {"error": "..."} with a 4xx/5xx status. Keys travel as
 * "Authorization: Bearer KEY".
 */
#ifndef BL_HTTP_H
#define BL_HTTP_H

#include <stdint.h>
#include "common/blerr.h"
#include "pipeline/processor.h"
#include "pipeline/retention.h"

typedef struct bl_http_config {
    const char *bind_addr;     /* IPv4/IPv6 literal, e.g. "127.0.0.1" */
    uint16_t port;             /* 0: pick a free port (see bl_http_port) */
    const char *data_dir;
    uint64_t max_body;         /* compressed request body, bytes (16 MiB) */
    uint64_t max_decompressed; /* decompressed body, bytes (256 MiB) */
    uint64_t max_mapping;      /* decompressed mapping.txt, bytes (1 GiB) */
    unsigned threads;          /* HTTP worker threads (4) */
    uint64_t max_inflight;     /* memory held by all requests together, bytes (512 MiB):
                                * bodies as sent and decompressed, decoder state, answers
                                * being built; past it → 503 + Retry-After */
    bl_processor *proc;        /* borrowed */
    uint64_t min_free;         /* bytes the data directory's disk keeps free (64 MiB):
                                * below it POST/PUT → 507, /healthz → 503 */
    /* Connection limits (docs/api.md "Connections and time limits"); 0 takes
     * the default in parentheses. */
    unsigned header_timeout;   /* seconds from connect (or the end of the previous
                                * answer) to the end of the headers (10) */
    unsigned body_timeout;     /* seconds a body may take whatever its rate (60) */
    uint64_t min_body_rate;    /* past body_timeout, the body's average rate must stay
                                * at least this, bytes/s (16384) */
    unsigned max_connections;  /* open connections, all clients together (1000) */
    unsigned max_per_ip;       /* open connections from one address; 0 = no limit (0) */
    struct bl_retention *ret;  /* borrowed, may be NULL: disk bytes for /metrics, woken
                                * after a DELETE (pipeline/retention.h) */
    const char *web_dir;       /* the dashboard's built files served at / (h_web.c);
                                * NULL: none (/ answers 404) */
} bl_http_config;

/* Request size caps answered in JSON by the server itself (docs/api.md). */
#define BL_HTTP_MAX_TARGET 16384      /* bytes of the request target (path + query): 414 */
#define BL_HTTP_MAX_ARGS 64           /* query parameters: 414 */
#define BL_HTTP_MAX_HEADERS 100       /* header fields: 431 */
#define BL_HTTP_MAX_HEADER_BYTES 32768 /* bytes of all header names and values: 431 */
/* libmicrohttpd's per-connection memory; a request line or header section
 * that does not fit gets libmicrohttpd's own 414/431 (HTML body). It is
 * several times the caps above so that everything up to a cap, and well
 * past it, reaches our handler. */
#define BL_HTTP_POOL_BYTES (256u * 1024)

typedef struct bl_http bl_http;

bl_err bl_http_start(const bl_http_config *c, bl_http **out, char *errbuf, size_t n);
/* The port actually bound. */
uint16_t bl_http_port(const bl_http *h);
void bl_http_stop(bl_http *h);

#endif
