/*
 * mapping.h — one-line parser for ProGuard / R8 mapping files (mapping.txt).
 *
 * Grammar (R8 doc/retrace.md; ProGuard manual "retrace"), one item per line:
 *
 *   class-line   := ORIGINAL_CLASS ' -> ' OBFUSCATED_CLASS ':'
 *   field-line   := WS TYPE ' ' NAME ' -> ' OBF_NAME
 *   method-line  := WS [MIN_START ':' MIN_END ':'] TYPE ' ' [OWNER '.'] NAME
 *                   '(' [TYPE {',' TYPE}] ')' [':' ORIG_START [':' ORIG_END]]
 *                   ' -> ' OBF_NAME
 *   header-line  := '#' ' '* KEY ':' ' '* VALUE        (compiler, min_api, …)
 *   meta-line    := WS? '#' ' '* '{' JSON '}'         (R8 mapping information)
 *   comment-line := WS? '#' anything else
 *
 * Annotated sample:
 *
 *       4:11:void com.a.Foo.bar(int):42:49 -> a
 *       |  |  |    |     |   |    |  |     `- obfuscated name
 *       |  |  |    |     |   |    `--`- original lines (":42" alone = cardinal)
 *       |  |  |    |     |   `- original parameter types (Java source form)
 *       |  |  |    |     `- original method name
 *       |  |  |    `- owner: the method came from another class (inlined/moved)
 *       |  |  `- original return type
 *       `--`- minified (obfuscated) line range
 *
 * Normalisation done here: a descending range is swapped, and "N:0" means
 * "N:N" (both for minified and original ranges). Names may contain '-', '$',
 * digits and '<'…'>' (<init>, <clinit>); no name may contain a space.
 * Blanks around the parameter types are allowed, as R8's reader allows
 * them ("(int, java.lang.String)"): the line says so (params_blanks) and
 * the types are the text without them; a blank inside a type, or an empty
 * type ("(int, )"), makes the line malformed.
 *
 * The parser does not allocate; spans point into the caller's line buffer.
 */
#ifndef BL_MAPPING_H
#define BL_MAPPING_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

/* A borrowed byte range (not NUL-terminated). */
typedef struct bl_span {
    const char *p;
    uint32_t n;
} bl_span;

typedef enum bl_mapping_kind {
    BL_ML_BLANK = 0, /* empty or white space only */
    BL_ML_COMMENT,   /* '#' line that is neither header nor metadata */
    BL_ML_HEADER,    /* '# key: value'; a = key, b = value */
    BL_ML_META,      /* '# {…}'; a = the JSON text from '{' to the end */
    BL_ML_CLASS,     /* a = original class, b = obfuscated class */
    BL_ML_FIELD,     /* member fields below */
    BL_ML_METHOD
} bl_mapping_kind;

/* What the original position of a method line says. */
typedef enum bl_orig_kind {
    BL_ORIG_NONE = 0, /* no ':N' after the parameters */
    BL_ORIG_LINE = 1, /* ':N' — every minified line maps to N (0 = unknown) */
    BL_ORIG_RANGE = 2 /* ':N:M' */
} bl_orig_kind;

typedef struct bl_mapping_line {
    bl_mapping_kind kind;
    bl_span a, b;       /* class, header and meta lines (see kinds) */
    bl_span type;       /* member: return type (method) or field type */
    bl_span owner;      /* member: qualifying original class, n == 0 if none */
    bl_span name;       /* member: original name */
    bl_span params;     /* method: text between the parentheses, as written */
    uint8_t params_blanks; /* method: params holds blanks around its types
                            * ("int, int"): the types are params without
                            * its blanks (bl_mapping_params_compact) */
    bl_span obf;        /* member: obfuscated name */
    uint8_t has_min;    /* method: a minified range was given */
    uint8_t orig_kind;  /* method: a bl_orig_kind */
    uint32_t min_start, min_end;   /* valid when has_min; start <= end */
    uint32_t orig_start, orig_end; /* LINE: both N; RANGE: start <= end */
} bl_mapping_line;

/* Largest line number accepted (R8 uses up to 2^16 for pc mappings; we allow
 * far more but keep headroom for arithmetic). */
#define BL_MAPPING_MAX_LINE 0x3fffffffu

/*
 * Reads the minified range "a:b:" (or "a:", meaning a:a) that starts a
 * method line's text at p (n bytes, after the indentation), normalised as
 * bl_mapping_parse_line does (descending swapped, "N:0" = N:N). Returns the
 * bytes it spans (both colons included) and sets *start / *end, or 0 when p
 * does not start with a well-formed range (then *start / *end are left).
 */
size_t bl_mapping_min_range(const char *p, size_t n, uint32_t *start, uint32_t *end);

/*
 * Parses one line (without its '\n'; a trailing '\r' is ignored).
 * Returns BL_OK and fills *out, or BL_EFORMAT with *why set to a static
 * message naming what is wrong. A line holding a NUL byte (other than a
 * blank one) is malformed: names are stored NUL-terminated, so a NUL would
 * cut a name silently. Never reads outside [line, line+len).
 */
/*
 * Writes the parameter types of `params` without blanks ("int, int" →
 * "int,int") into out (cap bytes; the result is never longer than
 * params.n) and returns its length. out is not NUL-terminated.
 */
size_t bl_mapping_params_compact(bl_span params, char *out, size_t cap);

bl_err bl_mapping_parse_line(const char *line, size_t len, bl_mapping_line *out,
                             const char **why);

#endif
