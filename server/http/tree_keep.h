/*
 * tree_keep.h — call-tree answers kept (for h_calltree.c). The last few
 * call-tree answers (without root=) are kept, each with the database's
 * write generation read before its read began
 * (bl_db_write_generation): while no transaction has been committed since,
 * the same request gets the same bytes again without reading the tree. Any
 * commit (a processed batch of any app, a mapping, retention) makes every
 * kept answer stale; a stale one is dropped when met. Never on a
 * PostgreSQL store, which other nodes write
 * (bl_db_generation_is_complete). At most KEEP_ENTRIES (8) answers of at
 * most KEEP_ANSWER_MAX (8 MiB) bytes each, all of them at most
 * KEEP_TOTAL_MAX (32 MiB) bytes (tree_keep.c) (least recently used dropped first); this
 * memory is the server's own, not any request's (--max-inflight counts
 * the copy each answer sends). */
#ifndef BL_HTTP_TREE_KEEP_H
#define BL_HTTP_TREE_KEEP_H

#include <stddef.h>
#include <stdint.h>

#include "common/blerr.h"
#include "common/buf.h"
#include "http/internal.h"

/* An answer is kept for (r's app, build_id, main_only, max_depth, limit,
 * fmt: the handler's format code) and the write generation `gen` the
 * handler read before its first read. Thread-safe (one mutex). */

/* A kept answer for this request at generation gen, copied into *b
 * (charged to r, bl_req_append): 1; none: 0; out of memory or budget spent:
 * -1 (the error in *err). */
int bl_tree_keep_get(req *r, int64_t build_id, int main_only, int64_t max_depth,
                     int64_t limit, int fmt, uint64_t gen, bl_buf *b, bl_err *err);

/* Keeps a copy of the answer (data, len bytes; borrowed, copied) made at
 * generation gen, when it fits and nothing was committed since gen;
 * nothing when memory is short (the next request reads the tree). */
void bl_tree_keep_put(const req *r, int64_t build_id, int main_only, int64_t max_depth,
                      int64_t limit, int fmt, uint64_t gen, const char *data, size_t len);

#endif
