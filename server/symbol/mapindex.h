/*
 * mapindex.h — compact, mmap-able index of one ProGuard/R8 mapping file.
 *
 * A server keeps many builds, each with a mapping of 10–300 MB. The index is
 * built once (at upload) into one flat little-endian file and served with
 * mmap: lookups touch a handful of pages, nothing is loaded into the heap.
 * The same image can live in memory (bl_mapindex_build + _from_memory), which
 * is what the command-line retracer does.
 *
 * Layout (all offsets are from the start of the file, sections 8-aligned):
 *
 *   bl_mi_header
 *   strings   "\0\0\0\0" then for each string: u32 length, bytes, '\0'.
 *             A string reference (u32) is the offset of its first byte;
 *             reference 0 is the empty string.
 *   classes   bl_mi_class[n_classes], in mapping-file order
 *   methods   bl_mi_method[n_methods]: grouped by class; inside a class
 *             sorted by obfuscated name (bytewise), then file order — so
 *             the inline frames of one minified range stay adjacent,
 *             innermost first, outermost (the residual method) last.
 *   fields    bl_mi_field[n_fields], grouped by class
 *   extras    u32 words, see "extras" below
 *   three open-addressing hash tables of bl_mi_slot (capacity power of 2):
 *     class by obfuscated name, class by original name, and
 *     residual method by original (class, name) — one slot per run of
 *     equal signatures among outermost entries.
 *
 * Hashes are XXH3-64 of the name bytes; the (class, name) key hashes the
 * name with the class's hash as seed. A slot stores the high 32 bits of the
 * hash as a tag and index + 1 (0 = empty).
 *
 * Extras of a method entry (flags CALLSITE / REWRITE), at word `extra`:
 *   n_positions, then n_positions × (outline_position, callsite_line),
 *   outline (string ref to the outline's residual descriptor, may be 0),
 *   n_rules, then per rule: throws_class (string ref, dotted original or
 *   residual class name; 0 = condition we do not understand, never matches),
 *   remove_inner_frames (count).
 *
 * Sources: R8 doc/retrace.md (map versions, metadata), ProGuard manual.
 */
#ifndef BL_MAPINDEX_H
#define BL_MAPINDEX_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"

#define BL_MI_MAGIC "BLMAPIX\x01"
#define BL_MI_FORMAT 2 /* 2: checksum in the header (issue 11) */

/* R8 map versions, as major * 100 + minor. */
#define BL_MAPVER_NONE 0
#define BL_MAPVER_1_0 100
#define BL_MAPVER_2_0 200
#define BL_MAPVER_2_1 201
#define BL_MAPVER_2_2 202
#define BL_MAPVER_MAX_SUPPORTED BL_MAPVER_2_2
#define BL_MAPVER_EXPERIMENTAL 9999

typedef struct bl_mi_header {
    char magic[8];
    uint32_t format;          /* BL_MI_FORMAT */
    uint32_t map_version;     /* highest R8 map version seen (BL_MAPVER_*) */
    uint64_t file_size;       /* bytes of the whole index */
    uint64_t mapping_size;    /* bytes of the mapping it was built from */
    uint64_t mapping_lines;
    uint64_t malformed_lines; /* skipped lines (lenient mode) */
    uint32_t n_classes, n_methods, n_fields, n_sigs;
    uint32_t cap_cls_obf, cap_cls_orig, cap_sig, reserved0;
    uint64_t off_strings, len_strings;
    uint64_t off_classes, off_methods, off_fields;
    uint64_t off_extras, n_extras;          /* n_extras in u32 words */
    uint64_t off_cls_obf, off_cls_orig, off_sig;
    /* header comments (string refs, 0 when absent) */
    uint32_t compiler, compiler_version, min_api, pg_map_id, pg_map_hash;
    uint32_t reserved1;
    /* XXH3-64 of the whole image with this field taken as 0 (format 2):
     * bl_mapindex_verify */
    uint64_t checksum;
} bl_mi_header;

/* Class flags */
#define BL_MIC_SYNTH 1u        /* com.android.tools.r8.synthesized */

typedef struct bl_mi_class {
    uint32_t obf;          /* obfuscated name (dotted) */
    uint32_t orig;         /* original name (dotted) */
    uint32_t source_file;  /* sourceFile metadata, 0 = none (infer) */
    uint32_t flags;        /* BL_MIC_* */
    uint32_t method_first, method_count;
    uint32_t field_first, field_count;
} bl_mi_class;

/* Method entry flags */
#define BL_MIM_HAS_MIN 0x001u      /* minified range present */
#define BL_MIM_ORIG_MASK 0x006u    /* bl_orig_kind << 1 */
#define BL_MIM_SYNTH 0x008u        /* synthesized (propagated to the method) */
#define BL_MIM_OUTLINE 0x010u      /* this method is an outline */
#define BL_MIM_OUTER 0x020u        /* outermost frame of its inline group */
#define BL_MIM_GROUP_START 0x040u  /* innermost frame of its inline group */
#define BL_MIM_CALLSITE 0x080u     /* outlineCallsite positions in extras */
#define BL_MIM_REWRITE 0x100u      /* rewriteFrame rules in extras */

#define BL_MIM_ORIG_KIND(f) (((f) & BL_MIM_ORIG_MASK) >> 1)

/* One line of the mapping for a method: a mapped range (R8 terminology). */
typedef struct bl_mi_method {
    uint32_t obf;           /* obfuscated name */
    uint32_t orig_class;    /* original class (the owner if qualified) */
    uint32_t orig_name;     /* original name */
    uint32_t ret;           /* original return type, Java source form */
    uint32_t params;        /* original parameter types, "a,b[]" */
    uint32_t residual;      /* residualsignature descriptor, 0 = none */
    uint32_t min_start, min_end;   /* valid with BL_MIM_HAS_MIN */
    uint32_t orig_start, orig_end; /* see bl_orig_kind */
    uint32_t flags;         /* BL_MIM_* */
    uint32_t extra;         /* word offset into extras (CALLSITE/REWRITE) */
} bl_mi_method;

typedef struct bl_mi_field {
    uint32_t obf, orig, type, residual, flags, reserved;
} bl_mi_field;

typedef struct bl_mi_slot {
    uint32_t tag, idx1;
} bl_mi_slot;

/* Build options and statistics. */
typedef struct bl_mi_diag {
    uint64_t line;       /* 1-based line number in the mapping */
    const char *message; /* static text */
} bl_mi_diag;

/* Called for every malformed line and every warning; may be NULL. */
typedef void (*bl_mi_diag_fn)(void *ctx, const bl_mi_diag *d);

/* Says whether the members of a class (by obfuscated name, n bytes, not
 * NUL-terminated) are needed. */
typedef int (*bl_mi_want_fn)(void *ctx, const char *obf, size_t n);

/* Says whether the members named `name` (obfuscated, nn bytes) of the class
 * obfuscated as `cls` (cn bytes) are needed. Neither is NUL-terminated. */
typedef int (*bl_mi_want_member_fn)(void *ctx, const char *cls, size_t cn, const char *name,
                                    size_t nn);

/* Says whether a method line of a wanted member (see want_member) whose
 * minified range is [min_start, min_end] (normalised, as in
 * bl_mapping_min_range) is needed: 0 no, BL_MI_WANT_OUTER only as the
 * outermost frame of its inline group (see want_range), else yes. */
#define BL_MI_WANT_OUTER 2
typedef int (*bl_mi_want_range_fn)(void *ctx, const char *cls, size_t cn, const char *name,
                                   size_t nn, uint32_t min_start, uint32_t min_end);

typedef struct bl_mi_build_opts {
    int strict;            /* stop at the first malformed line (BL_EFORMAT) */
    bl_mi_diag_fn diag;    /* receives errors and warnings */
    void *diag_ctx;
    /* Optional: when set, the member lines (indented lines) of classes it
     * declines are skipped unread — neither indexed nor checked — up to the
     * next class line. Every class line, class-level metadata, header
     * comment and map-version comment is still read, so original-class
     * lookups and the retrace of the classes it wants stay exactly as in a
     * full build. For one-shot retracing of a known trace: such an index
     * has no original-signature table (bl_mapindex_methods_by_orig finds
     * nothing; symbolication needs a full build). */
    bl_mi_want_fn want_class;
    /* Optional, finer: within a wanted class, member lines whose obfuscated
     * name it declines are skipped unread, with the metadata comments that
     * follow them (a skipped line still ends an inline group). A line whose
     * name cannot be read cheaply is read in full. Both take want_ctx, and
     * both may be called from two threads at once (a big mapping is parsed
     * by two threads in parallel). */
    bl_mi_want_member_fn want_member;
    /* Optional, finest (with want_member): a method line that want_member
     * accepts and that starts with a minified range is skipped unread when
     * want_range declines its range. Sound for a retrace when it declines
     * only ranges that contain none of the lines the trace's frames of that
     * member give (a member with a frame without a line must keep them
     * all): a ProGuard-style mapping is looked up only by the frame's line.
     * R8 metadata can tie entries to other lines (an outline call site maps
     * to another position; synthesized and rewriteFrame hold for every
     * range of a method), so the build uses want_range only while the
     * mapping has shown no JSON metadata comment ("# {...}"): on the first
     * one it starts again without want_range (diagnostics are held until
     * then, so each is reported once). bl_mi_stats.by_range says whether
     * it was used to the end. Under want_range a class that want_class
     * declines gets no record at all (its class line is not read): without
     * metadata a record says nothing beyond the names, and a retrace looks
     * up only the classes its frames and exception lines name — so
     * want_class must then accept exception lines' classes too (the names
     * bl_retrace_trace_names reports with method = NULL). Under want_range
     * field lines (member lines without '(') are skipped unread as well,
     * whatever their name: a retrace looks up methods only, and such an
     * index has no fields. May be called from two threads at once.
     * BL_MI_WANT_OUTER: of a run of lines with this class, name and range
     * (an inline group, innermost first) only the last line, the
     * outermost frame, is indexed; every line is still read and checked,
     * and a malformed one ends the group where it would. Sound for a
     * retrace when the member's only frames that could use the range have
     * no line (line 0) and the range does not hold 0: such a frame uses
     * the outermost entry of each group alone (retrace.h, "no line"). */
    bl_mi_want_range_fn want_range;
    void *want_ctx;
    /* Threads: 0 = automatic (on a machine with two or more CPUs, the parse
     * on two threads for a mapping of 8 MiB or more and the index written by
     * two threads from 65,536 method entries); 2 or more = two whenever the
     * mapping can be cut before a class line past its header (tests use
     * this on small mappings); any other value = one. The index is the same
     * either way, except that a string found in two parts is stored twice
     * (mapindex_parse.c, "Parallel parse"). */
    int threads;
    /* The parse on two threads: a thread that has finished its part splits
     * the other's when this many bytes or more are left of it (0: 1 MiB).
     * Tests set it small so that small mappings are split. */
    size_t split_min;
    /* 1: data is a private read-only file mapping (mmap MAP_PRIVATE) that
     * the caller reads no more once the build returns. When the parse ran
     * on two threads, the second one, once every part is parsed, drops
     * data's pages from the process's page tables (MADV_DONTNEED; the file
     * stays in the page cache) while the first joins the parts and writes
     * the index: unmapping the text afterwards (or exiting) then costs next
     * to nothing — 62 MB of mapped file pages took ~4 ms to unmap, on the
     * one-shot retrace's last stretch. Never for other memory: anonymous
     * memory would read back as zeros. */
    int release_text;
    /* 1: the header's checksum is left 0, for an image opened in memory at
     * once and never written out (bl_mapindex_verify then fails on it with
     * "checksum mismatch"): saves reading the whole image once more. */
    int no_checksum;
} bl_mi_build_opts;

typedef struct bl_mi_stats {
    uint64_t lines, malformed, warnings;
    uint64_t class_lines; /* class lines met, with or without a record */
    uint32_t classes, methods, fields; /* records in the index */
    uint32_t map_version;
    uint32_t threads; /* parse threads the build used in the end: 1 or 2 */
    uint32_t parts;   /* parts the parse joined: 1, or 2 and more on two threads */
    uint32_t by_range; /* 1: want_range was used to the end (no restart) */
    uint64_t parse_us, write_us; /* wall time of the parse and of the write */
} bl_mi_stats;

typedef struct bl_mapindex bl_mapindex;

/*
 * Parses a whole mapping (`len` bytes at `data`, need not be NUL-terminated)
 * and writes the index image into `out` (caller-owned, appended to from
 * empty). Malformed lines are reported through opts->diag with their line
 * number and skipped (counted in stats), or with opts->strict make the
 * build fail with BL_EFORMAT (stats->lines = the bad line). Errors:
 * BL_ENOMEM, BL_ETOOBIG (over 4 GiB of strings or 2^32 entries), BL_EFORMAT.
 * `opts` and `stats` may be NULL.
 */
bl_err bl_mapindex_build(const char *data, size_t len, const bl_mi_build_opts *opts,
                         bl_buf *out, bl_mi_stats *stats);

/*
 * Builds the index of the mapping file at `mapping_path` into `index_path`,
 * durably: written to "<index_path>.tmp", fsync'ed, renamed. BL_EIO on
 * file errors (errno kept), else as bl_mapindex_build.
 */
bl_err bl_mapindex_build_file(const char *mapping_path, const char *index_path,
                              const bl_mi_build_opts *opts, bl_mi_stats *stats);

/*
 * Opens an index image in memory; `img` must stay valid and 8-aligned until
 * bl_mapindex_close (the index borrows it). Validates the header and section
 * bounds: BL_EFORMAT / BL_EVERSION on a bad image, BL_ENOMEM.
 */
bl_err bl_mapindex_from_memory(const void *img, size_t len, bl_mapindex **out);

/*
 * Checks an index image whole: magic, format version, size and the header's
 * checksum. BL_OK; BL_EVERSION (another format, e.g. an index written before
 * the checksum); BL_EFORMAT when the image is damaged (*why, when not NULL,
 * gets a static text: "too short", "not an index", "size mismatch",
 * "checksum mismatch"). Reads every byte: O(len).
 * bl_mapindex_from_memory does not call it (it is for images just built);
 * bl_mapindex_open does.
 */
bl_err bl_mapindex_verify(const void *img, size_t len, const char **why);

/* Opens an index file read-only with mmap, verified (bl_mapindex_verify)
 * then validated. BL_EIO (cannot open/map; errno kept), BL_EFORMAT,
 * BL_EVERSION. */
bl_err bl_mapindex_open(const char *index_path, bl_mapindex **out);

/* Unmaps / releases. NULL is allowed. */
void bl_mapindex_close(bl_mapindex *mi);

const bl_mi_header *bl_mapindex_header(const bl_mapindex *mi);

/* The string for reference `ref` ("" for 0 or an out-of-range ref). */
const char *bl_mapindex_str(const bl_mapindex *mi, uint32_t ref);
/* Its length in bytes. */
uint32_t bl_mapindex_strlen(const bl_mapindex *mi, uint32_t ref);

/* Class by obfuscated / original dotted name; NULL when unknown. */
const bl_mi_class *bl_mapindex_class_by_obf(const bl_mapindex *mi, const char *name, size_t n);
const bl_mi_class *bl_mapindex_class_by_orig(const bl_mapindex *mi, const char *name, size_t n);

/*
 * The mapped ranges of class `c` whose obfuscated name is `name`: sets
 * *first and returns their count (0 when none). Order: file order, so inline
 * groups are contiguous (innermost first).
 */
uint32_t bl_mapindex_methods(const bl_mapindex *mi, const bl_mi_class *c, const char *name,
                             size_t n, const bl_mi_method **first);

/* All mapped ranges of class `c` (sorted by obfuscated name). */
uint32_t bl_mapindex_class_methods(const bl_mapindex *mi, const bl_mi_class *c,
                                   const bl_mi_method **first);

/* Fields of class `c`. */
uint32_t bl_mapindex_class_fields(const bl_mapindex *mi, const bl_mi_class *c,
                                  const bl_mi_field **first);

/*
 * Outermost mapped ranges whose original method is `cls`.`name` (original
 * dotted class name and original method name): calls fn for each distinct
 * run (one call per signature per obfuscated class); returns the number of
 * calls. Used to go from an original method to its obfuscated names.
 */
typedef void (*bl_mi_method_fn)(void *ctx, const bl_mi_class *owner, const bl_mi_method *m);
uint32_t bl_mapindex_methods_by_orig(const bl_mapindex *mi, const char *cls, size_t cls_n,
                                     const char *name, size_t name_n, bl_mi_method_fn fn,
                                     void *ctx);

/* Extras words of m (NULL when m has none); *n_words gets the words left. */
const uint32_t *bl_mapindex_extras(const bl_mapindex *mi, const bl_mi_method *m,
                                   uint64_t *n_words);

/* Class / method entry i of their tables, NULL past the end. */
const bl_mi_class *bl_mapindex_class_at(const bl_mapindex *mi, uint32_t i);
const bl_mi_method *bl_mapindex_method_at(const bl_mapindex *mi, uint32_t i);

#endif
