/*
 * methodids.h — methodId assignment for beatline-instrument and the
 * method-ID file it writes (schema/method-id-file.md).
 *
 * Use: bl_mids_new; optionally bl_mids_load_base (a previous build's file);
 * bl_mids_add for every candidate method of every class, in any order, from
 * one thread; bl_mids_assign; then bl_mids_lookup (thread-safe, read only)
 * and bl_mids_write.
 *
 * Assignment is deterministic: the candidates are deduplicated on
 * (class, name, descriptor) and sorted bytewise on that triple; a triple
 * found in the base file keeps its id, the others get max(base)+1, +2, … in
 * sorted order (1, 2, … without a base). max(base) is the largest id in the
 * base file or its header's `max-id=` value, whichever is larger, so an id
 * is never handed out twice along a chain of builds even when methods
 * disappear. The same candidate added several times (a class present in
 * several inputs) gets one id; the file lists it with the smallest access
 * flags seen, so the result does not depend on input order.
 *
 * File written (one header, then one record per id, ascending):
 *
 *   # beatline method-ids v1 names=original max-id=4
 *   1,1,com.example.Foo <init> ()V
 *   4,9,com.example.Foo bar (ILjava/lang/String;)V
 *
 * `max-id` is a header key of ours (the reader ignores unknown keys): the
 * largest id ever assigned in this chain of builds.
 */
#ifndef BL_METHODIDS_H
#define BL_METHODIDS_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"

/* Returned by bl_mids_lookup for a method without id. */
#define BL_MIDS_NONE UINT32_MAX
/* Largest id (23 bits of a batch record; = BL_PROBE_MAX_ID). */
#define BL_MIDS_MAX_ID 8388607u

typedef struct bl_mids bl_mids; /* opaque */

/* New empty assigner in *out. BL_ENOMEM. */
bl_err bl_mids_new(bl_mids **out);
/* Frees it (NULL is fine). */
void bl_mids_free(bl_mids *m);

/* Reads a previous method-ID file (text[0..len), any format the server
 * accepts, Matrix's included) whose ids are to be kept. Strict: a malformed
 * line fails with BL_EFORMAT and "line N: reason" in err; a header
 * `max-id=` that is not a number <= BL_MIDS_MAX_ID also fails. At most one
 * base per assigner (BL_EINVAL otherwise), before bl_mids_assign. A triple
 * listed twice keeps its smallest id. BL_ENOMEM. */
bl_err bl_mids_load_base(bl_mids *m, const char *text, size_t len, char *err, size_t errlen);

/* Lines of the base that repeat an earlier (class, method, descriptor)
 * triple with another id (each such triple keeps its smallest id; the
 * other ids stay used, never handed out again). */
uint32_t bl_mids_base_duplicates(const bl_mids *m);

/* Adds a candidate method. cls: internal name (a/b/C), name, desc: JVMS
 * §4.3.3; all NUL-terminated and BORROWED: they must stay valid and
 * unchanged until bl_mids_free. Before bl_mids_assign only. BL_ENOMEM. */
bl_err bl_mids_add(bl_mids *m, const char *cls, const char *name, const char *desc,
                   uint16_t access);

/* Assigns the ids (see the top of this file). BL_ETOOBIG with a message in
 * err when an id would exceed BL_MIDS_MAX_ID; BL_ENOMEM. */
bl_err bl_mids_assign(bl_mids *m, char *err, size_t errlen);

/* Removes the id of candidate (cls, name, desc) from the output (the id is
 * still consumed). Returns 1 when it was there. After bl_mids_assign. */
int bl_mids_drop(bl_mids *m, const char *cls, const char *name, const char *desc);

/* Called by bl_mids_validate for each method it drops; msg names it. */
typedef void (*bl_mids_warn_fn)(void *ctx, const char *msg);

/* Reads the file bl_mids_write would write back with the server's reader
 * (bl_methodids_parse, lenient) and drops every method whose line it
 * rejects (a method name with white space, names that are not valid UTF-8 —
 * class files use modified UTF-8 —, a descriptor the format cannot carry),
 * calling warn (may be NULL) once per dropped method with the reason. After
 * it, bl_mids_write's output parses with zero malformed lines. *dropped (may
 * be NULL) receives the count. After bl_mids_assign. BL_ENOMEM. */
bl_err bl_mids_validate(bl_mids *m, bl_mids_warn_fn warn, void *ctx, size_t *dropped);

/* The id of (cls, name, desc), or BL_MIDS_NONE. O(log n). After
 * bl_mids_assign; thread-safe against other lookups. */
uint32_t bl_mids_lookup(const bl_mids *m, const char *cls, const char *name, const char *desc);

/* Counters after bl_mids_assign: methods with an id, how many of them came
 * from the base file, and the largest id ever assigned (max-id). */
size_t bl_mids_count(const bl_mids *m);
size_t bl_mids_reused(const bl_mids *m);
uint32_t bl_mids_max_id(const bl_mids *m);

/* Appends the method-ID file (format above; names=obfuscated when
 * `obfuscated`; build-id=BUILD_ID in the header when build_id, a lowercase
 * UUID, is not NULL: schema/build-id.md) to out. After bl_mids_assign.
 * BL_ENOMEM / BL_ETOOBIG (out's cap). */
bl_err bl_mids_write(const bl_mids *m, int obfuscated, const char *build_id, bl_buf *out);

/* The record line of entry (without newline) as bl_mids_write writes it,
 * appended to out: "id,access,dotted.Class name desc". */
bl_err bl_mids_format_line(bl_buf *out, uint32_t id, uint16_t access, const char *cls,
                           const char *name, const char *desc);

#endif
