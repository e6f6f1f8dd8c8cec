/*
 * options.h — the command line of beatline-instrument: the options (and the
 * --config files they name) parsed and checked into one bl_instr_opts, the
 * usage text and the usage-error message. Used by main.c only (the tool);
 * not part of the beatline_instrument library. User documentation:
 * instrumenter/README.md.
 */
#ifndef BL_INSTR_OPTIONS_H
#define BL_INSTR_OPTIONS_H

#include <stddef.h>

#include "common/buf.h"
#include "rules.h"

#define BL_INSTR_PROG "beatline-instrument"
/* the runtime class the probes call when neither --runtime-class nor a
 * config file names one */
#define BL_INSTR_DEFAULT_RUNTIME "io/beatline/runtime/Beatline"
/* -j: at most this many worker threads */
#define BL_INSTR_MAX_THREADS 256

/* --layout (several inputs): OUTPUT/<base name> (names), OUTPUT/<position>/
 * <base name> (position, 1-based, never collides), or names when the base
 * names all differ and position otherwise (auto, the default). */
enum { BL_LAYOUT_AUTO, BL_LAYOUT_NAMES, BL_LAYOUT_POSITION };

/* The parsed command line. Strings not marked owned point into argv (they
 * live as long as the process). Initialised by bl_instr_opts_init, filled by
 * bl_instr_parse_args, freed by bl_instr_opts_cleanup. */
typedef struct bl_instr_opts {
    const char *output, *method_ids, *base_ids;
    /* build id (schema/build-id.md): --build-id as given ("auto" or a UUID,
     * NULL when none of the three options is given), --version-name,
     * --build-class DIR */
    const char *build_id_arg, *version_name, *build_class_dir;
    char *runtime_class; /* owned */
    char *base_ids_owned; /* base-ids path from a config file (owned) */
    int skip_trivial, obfuscated, threads, quiet;
    int unguarded; /* --no-guard: bare probes (bl_probe_opts.unguarded) */
    int no_network; /* --no-network: leave network call sites alone (netsite.h) */
    long skip_small; /* --skip-small N: leave methods of at most N code bytes alone; 0: off */
    int skip_callbacks; /* --skip-callbacks / --no-skip-callbacks / config skip-callbacks (-1
                           while unset, then default 1): see callback_method() in main.c */
    int layout; /* BL_LAYOUT_*: where several inputs' outputs go in OUTPUT */
    bl_rules *rules; /* owned: --include/--exclude and the config files' rules */
    char **inputs; /* n_inputs INPUT arguments (borrowed from argv) */
    int n_inputs;
    /* --classpath elements (':'-separated lists split; strings owned) */
    char **classpath;
    size_t n_classpath;
} bl_instr_opts;

/* Sets *o to "nothing given" (the tri-state options unset: -1) and makes
 * its empty rule set. 0, or 1 when out of memory (reported on stderr). */
int bl_instr_opts_init(bl_instr_opts *o);

/* Parses argv into o (after bl_instr_opts_init): options, then the config
 * files in order (the command line wins over them), then the defaults; checks
 * that INPUT, -o and --method-ids are given and that the outputs overlap no
 * input (nor each other). Messages go to stderr. Returns 0 (parsed), -1
 * (--help printed: exit 0), 1 (a config file could not be read or parsed, or
 * out of memory) or 2 (usage error, with "Try --help"). */
int bl_instr_parse_args(int argc, char **argv, bl_instr_opts *o);

/* Frees what o owns (rules, runtime class, classpath, base-ids path);
 * o may be partly filled. */
void bl_instr_opts_cleanup(bl_instr_opts *o);

/* Prints "beatline-instrument: MESSAGE" and the --help hint on stderr;
 * returns 2 (the usage-error exit status). */
__attribute__((format(printf, 1, 2))) int bl_instr_usage_error(const char *fmt, ...);

/* Reads the whole file `path` into b (initialised here with cap as its
 * limit, in bytes; the caller frees it with bl_buf_cleanup on success).
 * 0, or -1 with "beatline-instrument: PATH: reason" on stderr (open/read
 * error, or "file too large" over cap); b is then freed. */
int bl_instr_slurp(const char *path, size_t cap, bl_buf *b);

#endif
