/*
 * retrace.h — turn obfuscated Java stack traces back into original ones,
 * with the behaviour of R8's retrace (R8 doc/retrace.md and its tests).
 *
 * Input lines it understands (anything else is copied unchanged):
 *
 *   [PREFIX]at BLANKS [LOADER/]CLASS.METHOD(LOCATION)[REST]      a frame
 *       PREFIX: any text (logcat's "E AndroidRuntime: \t", "W System.err:
 *       ", timestamps) ending where "at" starts a word (R8's "\bat\s+");
 *       the first such "at" after which a frame reads is taken; after a
 *       PREFIX of other than blanks only blanks or " ~[...]" may follow
 *       the ')' (R8: "Error: failed at a.b(c) twice" is no frame). PREFIX,
 *       "at" and its blanks are kept verbatim on every line printed for
 *       the frame; an alternative gets "<OR> " before the first "at " of
 *       the line (R8's printer).
 *       LOCATION: FILE:LINE | FILE | Unknown Source | Native Method | :LINE
 *       FILE may contain ':' (the line is after the last ':').
 *   [WS][Caused by: |Suppressed: |Exception in thread "T" ]CLASS[: MESSAGE]
 *   TEXT(':'|'"')BLANKS CLASS[:MESSAGE]                     an exception line
 *       after other text (logcat's "E AndroidRuntime: a.b: msg", "...
 *       E AndroidRuntime: Caused by: a.b"), when the line is not one of the
 *       forms above: as R8's default expression "(?:.*)?[:\"]\s+%c(?::.*)?"
 *       with a greedy ".*", the LAST split whose CLASS (Java identifiers
 *       joined by '.') runs to the end of the line or to a ':' is taken, so
 *       a one-word MESSAGE is read as the class ("X: a.b: boom" retraces
 *       "boom", as R8 does). Retraced when the mapping knows CLASS or it has
 *       a package; TEXT is kept verbatim.
 *   [WS]... N more
 *
 * Rules, for a frame of obfuscated class C, method M, line L:
 *   - C not in the mapping: the line is copied unchanged.
 *   - C known, M not a member: original class, M kept, L kept ("class-only").
 *   - L > 0: the inline groups whose minified range contains L win; else the
 *     entries without a minified range; else class-only with L.
 *   - no line (absent, or 0: both are looked up as L = 0): the groups whose
 *     minified range contains 0 ("0:0", "0:N") win, lines mapped as for
 *     L = 0; else the entries without a minified range; else — the method
 *     has only ranged entries, none starting at 0 — one alternative per
 *     distinct outermost (residual) method of its groups, each printed as
 *     that one frame, without a line and without inline frames:
 *     "at a.b.Orig.method(Orig.java)". Why: without a line no range can be
 *     chosen, and the inline frames differ from range to range, but the
 *     last line of every group names the method the frame ran in. (R8's
 *     retrace instead prints the inline stack of every range, one per top
 *     frame.)
 *   - a frame without any line (":0" is a line) whose result is ambiguous —
 *     several groups or entries used, or a used original span N:M (N < M)
 *     that does not span like its minified range — prints no line number
 *     at all, inline callers included (R8; not with verbose); lines that
 *     become equal merge (see "alternatives" below).
 *   - original line: ':N' → N; 'a:b' spanning like the minified range →
 *     linear; a single original line → that line; no original → L (ProGuard
 *     semantics); 0 → no line.  With L > 0, when the innermost frame of a
 *     group has an original span N:M (N < M) that does not span like its
 *     minified range (or it has none: "1:1:…:42:44", "…:42:44"), the group
 *     gives one alternative per line N..M (at most 32) for that frame, its
 *     callers keeping their own lines (R8). An outer frame with such a span
 *     maps linearly, clamped to M.
 *   - an inline group is a run of consecutive mapping lines of one
 *     obfuscated name with the same minified range, whatever the form of
 *     their original positions (R8); a line without a minified range is a
 *     group of its own. Each group expands to its inline frames, innermost
 *     first.
 *   - synthesized frames (method or class) are dropped; an outline frame is
 *     dropped and its line carried to the next frame, whose outlineCallsite
 *     positions turn it into the call site's line.
 *   - rewriteFrame rules apply to the first frame under an exception line
 *     when its throws(...) class is the (obfuscated or retraced) exception.
 *   - several results (alternatives): R8 keeps the first alternative of
 *     each top (innermost) frame — same class, method name (verbose: its
 *     signature) and, when the input frame has a line > 0 or verbose, line
 *     — with its callers, and drops later ones whole; at most 64. They are
 *     sorted (stable) by the top frame: class, method name, return type,
 *     parameter types (count, then type by type), file, then line (none
 *     first), bytewise. They are printed by inline depth, as R8's command
 *     line does: the innermost frame of every alternative in order, then
 *     the frames at depth 1, and so on; a line equal to one already printed
 *     at the same depth is left out, and every line of an alternative but
 *     the first gets "<OR> " before its "at".
 *   - FILE is the class's sourceFile metadata, else inferred from the
 *     original outer class and the extension of the frame's own file name
 *     (R8): with none ("SourceFile", "Unknown Source") "a.b.Foo$Bar" →
 *     "Foo.java", "a.FooKt" → "Foo.kt"; with ".kt" the same but "a.b.Foo"
 *     → "Foo.kt"; with another ("Foo.java") always "<Outer>.java", Kt kept
 *     ("FooKt.java"). "Native Method" stays.
 */
#ifndef BL_RETRACE_H
#define BL_RETRACE_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "common/buf.h"
#include "symbol/mapindex.h"

typedef struct bl_retrace_opts {
    int verbose; /* print "ret name(params)" instead of the method name */
} bl_retrace_opts;

/* One retraced frame. Strings borrow from the index or from the input line
 * and are valid until the next call on the retracer. */
typedef struct bl_rframe {
    const char *cls;
    uint32_t cls_n;
    const char *method;
    uint32_t method_n;
    const char *file; /* NULL: keep the input's location text */
    uint32_t file_n;
    int64_t line;     /* -1: no line */
    const bl_mi_method *m; /* mapping entry, NULL for class-only frames */
} bl_rframe;

typedef struct bl_retracer bl_retracer;

/* Creates a retracer over `mi` (borrowed; must outlive the retracer).
 * `opts` may be NULL. BL_ENOMEM. The retracer remembers its lookups: at
 * most 2^18 (class, method) and 2^18 original-class entries (~16 MiB of
 * tables, plus the distinct obfuscated names it met and at most 16 MiB of
 * inferred file names), and a range index of each method bucket of 24
 * entries or more it retraced a frame in (20 bytes per inline group, at
 * most 2^20 groups: 20 MiB), freed by bl_retracer_free; a retracer per
 * request or per trace is the usual use. */
bl_err bl_retracer_new(const bl_mapindex *mi, const bl_retrace_opts *opts, bl_retracer **out);
void bl_retracer_free(bl_retracer *rt);

/* Hints that about n distinct (class, method) frames will be retraced (a
 * one-shot run knows it from its scan): the lookup memo is made that big at
 * once (n + n/2 slots, rounded up to a power of two; n capped at 2^18)
 * instead of growing there by doubling, each step zeroing a new table and
 * moving every entry. Only before the first frame and for n >= 1024;
 * nothing fails (the memo grows as usual if this one cannot be had). */
void bl_retracer_expect(bl_retracer *rt, uint32_t n);

/*
 * Shared lookups: the (class, method) names of a trace resolved once in
 * the index for every retracer that retraces it. A one-shot run knows the
 * distinct frame names from its scan; with several retracer threads each
 * would otherwise look up most of them itself (several dependent cache
 * misses per name). Resolved (or not), sealed, then shared: any number of
 * retracers, on any threads, may use one at once (its entries by number
 * are still filled as names are met: see bl_retracer_frame_line). Only a
 * cache: a retracer given one prints exactly what it prints without (a
 * name not in it is looked up as usual).
 *
 * Use: bl_retrace_lookups_new(mi, n) for n names (1 .. 2^22; BL_EINVAL
 * outside, BL_ENOMEM); bl_retrace_lookups_resolve(lk, i, ...) for each
 * i < n — calls for distinct i may run on several threads at once; the
 * name bytes are borrowed (they must outlive lk); an entry never resolved
 * is left out; bl_retrace_lookups_seal(lk) once, on one thread, after every
 * resolve (BL_ENOMEM; a name given twice is kept once); then
 * bl_retracer_use_lookups(rt, lk) for each retracer (before its first
 * line; lk borrowed, sealed, must outlive rt). Memory: 64 bytes per name,
 * and once sealed a table of 64-byte slots (1.5 to 3 per resolved name),
 * until bl_retrace_lookups_free.
 */
typedef struct bl_retrace_lookups bl_retrace_lookups;

bl_err bl_retrace_lookups_new(const bl_mapindex *mi, uint32_t n, bl_retrace_lookups **out);
void bl_retrace_lookups_resolve(bl_retrace_lookups *lk, uint32_t i, const char *cls, size_t cn,
                                const char *method, size_t mn);
bl_err bl_retrace_lookups_seal(bl_retrace_lookups *lk);
void bl_retrace_lookups_free(bl_retrace_lookups *lk);
void bl_retracer_use_lookups(bl_retracer *rt, const bl_retrace_lookups *lk);

/* How many (class, method) names this retracer has looked up in the index
 * so far: _resolved for itself (found neither in its shared lookups nor
 * among the ones it remembered; with shared lookups resolved for the whole
 * trace, 0); _filled into an empty entry of its shared lookups
 * (bl_retracer_frame_line), for every retracer that shares them. */
uint64_t bl_retracer_resolved(const bl_retracer *rt);
uint64_t bl_retracer_filled(const bl_retracer *rt);

/*
 * A hint, for a caller that knows which frames come next (the numbers of
 * their names in the retracer's shared lookups: see bl_retracer_frame_line):
 * starts loading what their retrace will read, so that the loads of
 * several frames overlap instead of each frame waiting for its own — the
 * lookup entry of far_ix, the class record and method entries of near_ix
 * (when its entry is resolved), and the strings the printed frame of
 * next_ix most likely names (its first method entry's original class and
 * name, its class's source file). Changes nothing the retracer prints; a
 * number out of range, or no shared lookups, is ignored. Measured on the
 * 100,000-frame benchmark with distances 8, 4 and 2: the retrace step on
 * one thread 9 % faster (docs/benchmarks.md).
 */
void bl_retracer_prefetch(const bl_retracer *rt, uint32_t far_ix, uint32_t near_ix,
                          uint32_t next_ix);

/*
 * Retraces one line (without '\n') and appends the result lines, each ending
 * in '\n', to `out`. Keeps the context (exception line seen, outline
 * position) for the next call. BL_ENOMEM / BL_ETOOBIG from `out`.
 */
bl_err bl_retracer_line(bl_retracer *rt, const char *line, size_t len, bl_buf *out);

/*
 * Retraces one frame given its parts (line < 0: no line). On BL_OK sets
 * *frames to all result frames and *alt_start to n_alts + 1 offsets into it:
 * alternative k is frames[alt_start[k] .. alt_start[k+1]), innermost frame
 * first; alternatives come one per top frame, sorted, and without lines when
 * line < 0 and the result is ambiguous (the rules above; bl_retracer_line
 * prints them by depth). The file names are inferred as for a frame whose
 * file has no extension ("SourceFile"). n_alts == 0 means the class is not
 * in the mapping (or every frame was synthesized). Results are valid until
 * the next call.
 */
bl_err bl_retracer_frame(bl_retracer *rt, const char *cls, size_t cls_n, const char *method,
                         size_t method_n, int64_t line, const bl_rframe **frames,
                         const uint32_t **alt_start, uint32_t *n_alts, int *known_class);

/*
 * 1 when bl_retracer_line reads `line` (one line, no '\n') as an exception
 * line. Such a line sets all the state a retracer carries from line to line
 * (the exception for rewriteFrame, the outline position), so a text can be
 * cut before it and the pieces retraced by separate retracers — in
 * parallel — giving exactly the output of one retracer over the whole text.
 */
int bl_retrace_starts_block(const bl_mapindex *mi, const char *line, size_t len);

/* Retraces a whole text (any line ending). Convenience over _line. */
bl_err bl_retrace_text(const bl_mapindex *mi, const bl_retrace_opts *opts, const char *text,
                       size_t len, bl_buf *out);

/*
 * Receives one name a stack trace mentions: a frame's class and method
 * (obfuscated, as written; `method` points into the text, not
 * NUL-terminated) with the frame's line number as the retracer reads it
 * (-1 when the frame has none: "Unknown Source", "SourceFile", "Native
 * Method"; the retracer looks such a frame up as line 0), or an exception
 * line's class with method = NULL, mn = 0, line = -1.
 */
typedef void (*bl_retrace_name_fn)(void *ctx, const char *cls, size_t cn, const char *method,
                                   size_t mn, int64_t line);

/*
 * Calls fn with every (class, method, line) of a frame and every exception
 * class in a stack-trace text, read exactly as bl_retracer_line reads them
 * (a few extra names may come along, never fewer). Lets a one-shot retrace
 * index only the members and line ranges it will look up
 * (bl_mi_build_opts.want_class, want_member and want_range).
 */
void bl_retrace_trace_names(const char *text, size_t len, bl_retrace_name_fn fn, void *ctx);

/* Where bl_retracer_line finds the parts of a frame line: byte offsets from
 * the line's start of the "at" (after any prefix), the class name (after
 * any "loader/"), the '.' before the method, the '(' and the last ')';
 * and the frame's line number (-1: none). */
typedef struct bl_frame_pos {
    uint32_t at, name, dot, open, close;
    int64_t line;
} bl_frame_pos;

/* Receives a frame line's start (`line`: the text up to '\n', without a
 * '\r' before it) and its positions, just before the name callback for the
 * same frame. */
typedef void (*bl_retrace_pos_fn)(void *ctx, const char *line, const bl_frame_pos *fp);

/*
 * bl_retrace_trace_names, and pos (may be NULL) with each frame line's
 * positions: a caller that keeps them can have each frame line retraced
 * without reading it again (bl_retracer_frame_line). Lines of 4 GiB or
 * more get no pos call.
 */
void bl_retrace_trace_frames(const char *text, size_t len, bl_retrace_name_fn fn,
                             bl_retrace_pos_fn pos, void *ctx);

/*
 * bl_retracer_line for a frame line whose positions bl_retrace_trace_frames
 * reported (fp: for this very line, as given there; `line`/`len` as for
 * bl_retracer_line), with name_ix its name's index in the retracer's shared
 * lookups (bl_retracer_use_lookups; any value when there are none): the
 * line is not read again and the name not hashed nor looked up in a table
 * (the entry's name is compared with the frame's; another name is looked
 * up as usual). An entry never resolved is resolved now, into the shared
 * lookups, by the first retracer that meets it (a retracer meeting it while
 * another fills it looks the name up itself): so name_ix lets a caller
 * share lookups that it did not resolve beforehand — each distinct name is
 * looked up once, when first retraced, and the lookups may be sealed empty.
 * The name bytes are then borrowed from `line`: it must outlive the
 * lookups.
 * Same output and errors as bl_retracer_line; positions that cannot be a
 * frame's (out of order, past the line) make it read the line itself.
 */
bl_err bl_retracer_frame_line(bl_retracer *rt, const char *line, size_t len,
                              const bl_frame_pos *fp, uint32_t name_ix, bl_buf *out);

/*
 * Retraces the class names in a short free text such as a block's message
 * target ("android.os.Handler/a.b$1", "java.awt.event.InvocationEvent/a.c"):
 * every maximal run of Java identifier characters, '.' and '$' that names an
 * obfuscated class of the mapping is replaced by the original name; a run
 * that does not but whose part before one of its last 8 '$' does (a nested or
 * synthetic class the mapping does not list) becomes the outer class's
 * original name followed by the rest unchanged. Everything else (framework
 * classes, "what=3", separators) is copied as is. Appends the result to
 * out, NUL-terminated (the NUL not counted in out->len). mi may be NULL
 * (copies the text). Errors: BL_ENOMEM (out keeps what was appended).
 */
bl_err bl_retrace_class_names(const bl_mapindex *mi, const char *text, size_t len, bl_buf *out);

/*
 * Source file name inferred from an original class name (R8 rules): the
 * outer class's simple name + ".java", or + ".kt" without the "Kt" suffix.
 * Writes into buf (cap bytes, NUL-terminated); returns the length.
 */
size_t bl_retrace_infer_file(const char *cls, size_t n, char *buf, size_t cap);

#endif
