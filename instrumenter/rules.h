/*
 * rules.h — which methods beatline-instrument may instrument, and the
 * config file that carries those rules and the tool's options
 * (instrumenter/README.md, "Config file").
 *
 * Config file: UTF-8 text, one item per line; LF or CR LF; spaces and tabs
 * around items are ignored. Annotated sample:
 *
 *   # a comment                          ignored (also "[section]" lines, as Matrix)
 *   -keeppackage com/foo/                Matrix: no class whose name starts with "com/foo/"
 *   -keepclass com/foo/Bar               Matrix: no class whose name starts with "com/foo/Bar"
 *   exclude com.foo.**#get*              Beatline: not these methods
 *   include com/myapp/                   Beatline: only methods matching some include
 *   runtime-class io/beatline/runtime/Beatline
 *   skip-trivial no                      yes | no
 *   skip-callbacks no                    yes | no
 *   names obfuscated                     original | obfuscated
 *   threads 2                            1 .. 256
 *   base-ids build-41/method-ids.txt     relative to the config file's folder
 *
 * Pattern (exclude/include): CLASS ['#' NAME [DESC]]
 *   CLASS  class glob on internal names ('.' is read as '/'): '*' any run of
 *          characters but '/', '**' any run including '/', '?' one character
 *          but '/'; a trailing '/' means "this package and everything below"
 *          (same as appending "**").
 *   NAME   method-name glob: '*' any run, '?' one character.
 *   DESC   descriptor glob starting with '(' ('.' read as '/'): '*' any run.
 *   No '#' part: every method of the matching classes.
 *
 * Semantics (order of lines does not matter): a method is instrumented when
 * no exclude rule matches it and, if there is at least one include rule, some
 * include rule matches it. Matrix's lines are exclude rules on a plain string
 * prefix of the class name, exactly as Matrix's trace plugin reads them
 * ("-keeppackage android" also covers "androidx/...").
 *
 * Matching costs O(|pattern| × |name|) time and two rows of |name|+1 bytes
 * (stack up to 512 bytes, heap beyond).
 */
#ifndef BL_RULES_H
#define BL_RULES_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"

typedef struct bl_rules bl_rules; /* opaque; bl_rules_new / bl_rules_free */

/* Options a config file may set; -1 / NULL / 0 when the file does not say.
 * Strings are heap copies owned by the struct (bl_rules_opts_cleanup). */
typedef struct bl_rules_opts {
    char *runtime_class; /* internal name */
    int skip_trivial;    /* -1 unset, 0 no, 1 yes */
    int skip_callbacks;  /* -1 unset, 0 no, 1 yes (main.c: the runtime's callback interfaces) */
    int obfuscated;      /* -1 unset, 0 original, 1 obfuscated */
    int threads;         /* 0 unset, else 1 .. 256 */
    char *base_ids;      /* path, already resolved against the config file's folder */
} bl_rules_opts;

/* New empty rule set (instruments everything) in *out. BL_ENOMEM. */
bl_err bl_rules_new(bl_rules **out);
/* Frees a rule set (NULL is fine). */
void bl_rules_free(bl_rules *r);

/* Adds one Beatline rule. exclude: 1 for an exclude rule, 0 for include.
 * pattern: NUL-terminated, syntax above (copied). BL_EFORMAT with a reason in
 * err for a bad pattern (empty, empty method part, descriptor not starting
 * with '(', longer than 4,096 bytes); BL_ENOMEM. */
bl_err bl_rules_add(bl_rules *r, int exclude, const char *pattern, char *err, size_t errlen);

/* Adds a Matrix-style class-name prefix exclusion (-keeppackage/-keepclass
 * argument; '.' read as '/'). BL_EFORMAT when empty; BL_ENOMEM. */
bl_err bl_rules_add_prefix(bl_rules *r, const char *prefix, char *err, size_t errlen);

/* Number of rules (include + exclude). */
size_t bl_rules_count(const bl_rules *r);

/* 1 when no method of class `cls` (internal name) can be instrumented under
 * these rules, whatever its name and descriptor (a shortcut for the caller);
 * 0 otherwise. *res receives the answer; BL_ENOMEM only for names > 512 bytes
 * when the scratch allocation fails. */
bl_err bl_rules_class_excluded(const bl_rules *r, const char *cls, int *res);

/* *res = 1 when method (cls, name, desc) may be instrumented under these
 * rules, else 0. All three NUL-terminated (internal class name, JVMS §4.3.3
 * descriptor). BL_ENOMEM as above. Thread-safe (the rules are read only). */
bl_err bl_rules_method_allowed(const bl_rules *r, const char *cls, const char *name,
                               const char *desc, int *res);

/* Parses config-file text (syntax above) into rules `r` and options `o`
 * (o must be zeroed and set to "unset" by bl_rules_opts_init first; later
 * lines override earlier ones; rules accumulate). path names the file in
 * messages and anchors a relative base-ids path. On a bad line returns
 * BL_EFORMAT with "PATH:LINE: reason" in err; BL_ENOMEM. Rules added before
 * the failing line stay in r. */
bl_err bl_rules_parse_config(bl_rules *r, bl_rules_opts *o, const char *text, size_t len,
                             const char *path, char *err, size_t errlen);

void bl_rules_opts_init(bl_rules_opts *o);
void bl_rules_opts_cleanup(bl_rules_opts *o);

#endif
