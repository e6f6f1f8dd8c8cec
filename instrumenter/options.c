/*
 * options.c — beatline-instrument's command line: usage text, options and
 * config files into a bl_instr_opts, path checks (contract in options.h).
 */
#include "options.h"

#include "common/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildinfo.h"

#define PROG BL_INSTR_PROG
#define DEFAULT_RUNTIME BL_INSTR_DEFAULT_RUNTIME
#define MAX_THREADS BL_INSTR_MAX_THREADS
#define CONFIG_MAX (16u << 20)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [options] INPUT... -o OUTPUT --method-ids FILE\n"
            "\n"
            "Inserts methodId enter/exit probes into the classes of INPUTs (jars, class\n"
            "folders, .class files) and writes the method-ID file. One INPUT: OUTPUT is its\n"
            "instrumented copy (jar, folder or class file, like the input). Several INPUTs:\n"
            "OUTPUT is a folder that receives each one as OUTPUT/<base name> or, when two\n"
            "inputs have the same base name (AGP's many .../jars/classes.jar), as\n"
            "OUTPUT/<position>/<base name> (see --layout).\n"
            "\n"
            "  -o, --output OUTPUT        where the instrumented copy goes (replaced)\n"
            "      --method-ids FILE      method-ID file to write (schema/method-id-file.md)\n"
            "      --base-ids FILE        keep the ids of a previous build's method-ID file\n"
            "      --config FILE          options and rules from FILE (repeatable)\n"
            "      --exclude PATTERN      do not instrument matching methods (repeatable)\n"
            "      --include PATTERN      instrument only matching methods (repeatable)\n"
            "                             PATTERN: CLASS[#METHOD[DESCRIPTOR]], globs * ** ?\n"
            "      --runtime-class NAME   class with static i(I)V, o(I)V and boolean on\n"
            "                             (default " DEFAULT_RUNTIME ")\n"
            "      --no-guard             bare probes: no `if (on)` test before each call\n"
            "                             (for a runtime class without the field on)\n"
            "      --no-network           leave OkHttp client builds and URL.openConnection()\n"
            "                             calls as they are (default: routed through the\n"
            "                             runtime, which times the requests)\n"
            "      --skip-trivial         skip empty methods, getters/setters, methods that\n"
            "                             call nothing (default)\n"
            "      --no-skip-trivial      instrument those too\n"
            "      --skip-small N         also skip methods of at most N bytes of bytecode\n"
            "                             (0..65535; default 0: none): the small methods a\n"
            "                             JIT would inline, which the probes make too big\n"
            "      --skip-callbacks       leave the methods that implement the runtime's\n"
            "                             callback interfaces (Clock, ThreadPolicy, Log,\n"
            "                             DeviceInfo, Lifecycle, UploadGate) in classes that\n"
            "                             name them directly without probes (default)\n"
            "      --no-skip-callbacks    instrument those too\n"
            "      --classpath PATHS      library jars / class folders (':'-separated,\n"
            "                             repeatable; android.jar or android-all, AndroidX)\n"
            "                             that resolve the super classes of the inputs for\n"
            "                             the launch hooks in Application and Activity\n"
            "                             subclasses; read only, never instrumented\n"
            "      --names original|obfuscated  what the method-ID file says about the names\n"
            "                             (obfuscated: the inputs went through R8/ProGuard)\n"
            "      --layout auto|names|position  several INPUTs: OUTPUT/<base name> (names),\n"
            "                             OUTPUT/<N>/<base name> for the N-th INPUT, from 1\n"
            "                             (position); auto (default): names when no two\n"
            "                             INPUTs share a base name, else position\n"
            "      --build-id auto|UUID   the build's id (schema/build-id.md): into the\n"
            "                             method-ID file header; auto: a new random UUID\n"
            "      --version-name NAME    the app's versionName: build name NAME+SHORT_ID\n"
            "      --build-class DIR      write DIR/" BL_BUILDINFO_CLASS_FILE "\n"
            "                             (build name and id for the runtime; implies\n"
            "                             --build-id auto, as --version-name does)\n"
            "  -j, --threads N            worker threads (default: number of cores)\n"
            "  -q, --quiet                no progress, notices, warnings or summary\n"
            "  -h, --help                 this text\n"
            "\n"
            "Exit status: 0 done, 1 bad input or I/O error (nothing written), 2 usage error.\n"
            "Documentation: instrumenter/README.md\n");
}

int bl_instr_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '" PROG " --help'.\n");
    return 2;
}

/* Reads a whole file into b (cap), with a message on failure. */
int bl_instr_slurp(const char *path, size_t cap, bl_buf *b)
{
    bl_buf_init(b, cap);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    bl_err e = bl_fd_read_all(fd, b);
    int saved = errno;
    close(fd);
    if (e) {
        fprintf(stderr, PROG ": %s: %s\n", path,
                e == BL_EIO ? strerror(saved) : e == BL_ETOOBIG ? "file too large"
                                                                : bl_err_str(e));
        bl_buf_cleanup(b);
        return -1;
    }
    return 0;
}

/* Checks and normalises a runtime class name ('.' -> '/'). */
static int runtime_name_ok(char *s)
{
    if (!*s || *s == '/' || s[strlen(s) - 1] == '/')
        return 0;
    for (char *p = s; *p; p++) {
        if (*p == '.')
            *p = '/';
        if (*p == ' ' || *p == '\t' || *p == ';' || *p == '[' || (unsigned char)*p < 0x20 ||
            (p[0] == '/' && p[1] == '/'))
            return 0;
    }
    return 1;
}

/* The absolute, symlink-free form of path p in *out (heap; caller frees):
 * realpath() of p when it exists, else realpath() of its folder plus its
 * last component. NULL when neither resolves (the later open reports it). */
static char *canon_path(const char *p)
{
    char *r = realpath(p, NULL);
    if (r)
        return r;
    const char *slash = strrchr(p, '/');
    char *dir = slash ? strndup(p, (size_t)(slash - p) + (slash == p)) : strdup(".");
    if (!dir)
        return NULL;
    char *d = realpath(dir, NULL);
    free(dir);
    if (!d)
        return NULL;
    const char *base = slash ? slash + 1 : p;
    size_t n = strlen(d) + strlen(base) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", d, base);
    free(d);
    return out;
}

/* Like canon_path, also when several trailing components do not exist yet:
 * realpath() of the longest existing leading part plus the rest as written
 * ("." and ".." in the rest are kept: such paths only fail to match). */
static char *canon_path_loose(const char *p)
{
    char *r = canon_path(p);
    if (r)
        return r;
    const char *slash = strrchr(p, '/');
    if (!slash || slash == p)
        return NULL;
    char *dir = strndup(p, (size_t)(slash - p));
    if (!dir)
        return NULL;
    char *d = canon_path_loose(dir);
    free(dir);
    if (!d)
        return NULL;
    size_t n = strlen(d) + strlen(slash) + 1;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s", d, slash);
    free(d);
    return out;
}

/* 1 when `inner` is `outer` or below it (both canonical). */
static int path_within(const char *inner, const char *outer)
{
    size_t n = strlen(outer);
    return strncmp(inner, outer, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

/* Outputs never replace inputs: OUTPUT must not be an input, inside an input
 * folder, or a folder holding an input (instrumenting in place would also
 * replace a symlinked system jar with a regular file). The method-ID file
 * must not be an input, the output, or inside either. Returns 0 or the
 * usage-error status. */
static int check_paths(const bl_instr_opts *o)
{
    int rc = 0;
    char *out = canon_path(o->output);
    for (int i = 0; out && rc == 0 && i < o->n_inputs; i++) {
        char *in = canon_path(o->inputs[i]);
        if (in && (path_within(out, in) || path_within(in, out)))
            rc = bl_instr_usage_error("-o %s and the input %s overlap: write the output elsewhere",
                                      o->output, o->inputs[i]);
        free(in);
    }
    free(out);
    if (rc)
        return rc;
    char *ids = canon_path(o->method_ids);
    if (!ids)
        return 0;
    out = canon_path(o->output);
    if (out && path_within(ids, out))
        rc = bl_instr_usage_error("--method-ids %s is the output %s or inside it", o->method_ids,
                                  o->output);
    free(out);
    for (int i = 0; rc == 0 && i < o->n_inputs; i++) {
        char *in = canon_path(o->inputs[i]);
        if (in && path_within(ids, in))
            rc = bl_instr_usage_error("--method-ids %s is the input %s or inside it", o->method_ids,
                                      o->inputs[i]);
        free(in);
    }
    free(ids);
    if (rc || !o->build_class_dir)
        return rc;
    /* --build-class DIR: not an input or inside one, not the output or
     * inside it (the class would be mixed into an input or an output) */
    char *bc = canon_path_loose(o->build_class_dir);
    if (!bc)
        return 0;
    out = canon_path_loose(o->output);
    if (out && (path_within(bc, out) || path_within(out, bc)))
        rc = bl_instr_usage_error("--build-class %s and the output %s overlap", o->build_class_dir,
                                  o->output);
    free(out);
    for (int i = 0; rc == 0 && i < o->n_inputs; i++) {
        char *in = canon_path(o->inputs[i]);
        if (in && (path_within(bc, in) || path_within(in, bc)))
            rc = bl_instr_usage_error("--build-class %s and the input %s overlap",
                                      o->build_class_dir, o->inputs[i]);
        free(in);
    }
    free(bc);
    return rc;
}

static int default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* Appends the ':'-separated elements of arg to o->classpath (empty ones
 * are skipped). Returns 0 or 1 (out of memory, reported). */
static int add_classpath(bl_instr_opts *o, const char *arg)
{
    const char *p = arg;
    for (;;) {
        const char *q = strchr(p, ':');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n) {
            char **t = realloc(o->classpath, (o->n_classpath + 1) * sizeof *t);
            if (!t) {
                fprintf(stderr, PROG ": out of memory\n");
                return 1;
            }
            o->classpath = t;
            if (!(t[o->n_classpath] = strndup(p, n))) {
                fprintf(stderr, PROG ": out of memory\n");
                return 1;
            }
            o->n_classpath++;
        }
        if (!q)
            return 0;
        p = q + 1;
    }
}

int bl_instr_opts_init(bl_instr_opts *o)
{
    *o = (bl_instr_opts){.skip_trivial = -1, .obfuscated = -1, .skip_callbacks = -1};
    if (bl_rules_new(&o->rules) != BL_OK) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    return 0;
}

void bl_instr_opts_cleanup(bl_instr_opts *o)
{
    for (size_t i = 0; i < o->n_classpath; i++)
        free(o->classpath[i]);
    free(o->classpath);
    o->classpath = NULL;
    o->n_classpath = 0;
    bl_rules_free(o->rules);
    o->rules = NULL;
    free(o->runtime_class);
    o->runtime_class = NULL;
    free(o->base_ids_owned);
    o->base_ids_owned = NULL;
}

/* Parses argv into o (contract in options.h). */
int bl_instr_parse_args(int argc, char **argv, bl_instr_opts *o)
{
    enum { O_METHOD_IDS = 256, O_BASE_IDS, O_CONFIG, O_EXCLUDE, O_INCLUDE, O_RUNTIME,
           O_SKIP, O_NO_SKIP, O_NAMES, O_NO_GUARD, O_LAYOUT, O_BUILD_ID, O_VERSION_NAME,
           O_BUILD_CLASS, O_NO_NETWORK, O_SKIP_SMALL, O_CLASSPATH, O_SKIP_CB, O_NO_SKIP_CB };
    static const struct option longs[] = {
        {"output", required_argument, NULL, 'o'},
        {"method-ids", required_argument, NULL, O_METHOD_IDS},
        {"base-ids", required_argument, NULL, O_BASE_IDS},
        {"config", required_argument, NULL, O_CONFIG},
        {"exclude", required_argument, NULL, O_EXCLUDE},
        {"include", required_argument, NULL, O_INCLUDE},
        {"runtime-class", required_argument, NULL, O_RUNTIME},
        {"skip-trivial", no_argument, NULL, O_SKIP},
        {"no-skip-trivial", no_argument, NULL, O_NO_SKIP},
        {"skip-small", required_argument, NULL, O_SKIP_SMALL},
        {"skip-callbacks", no_argument, NULL, O_SKIP_CB},
        {"no-skip-callbacks", no_argument, NULL, O_NO_SKIP_CB},
        {"no-guard", no_argument, NULL, O_NO_GUARD},
        {"no-network", no_argument, NULL, O_NO_NETWORK},
        {"names", required_argument, NULL, O_NAMES},
        {"layout", required_argument, NULL, O_LAYOUT},
        {"build-id", required_argument, NULL, O_BUILD_ID},
        {"version-name", required_argument, NULL, O_VERSION_NAME},
        {"build-class", required_argument, NULL, O_BUILD_CLASS},
        {"classpath", required_argument, NULL, O_CLASSPATH},
        {"threads", required_argument, NULL, 'j'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    bl_rules_opts cfg;
    bl_rules_opts_init(&cfg);
    char err[512];
    int c, rc = 0;
    const char *runtime = NULL;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "o:j:qh", longs, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case O_METHOD_IDS: o->method_ids = optarg; break;
        case O_BASE_IDS: o->base_ids = optarg; break;
        case O_RUNTIME: runtime = optarg; break;
        case O_SKIP: o->skip_trivial = 1; break;
        case O_NO_SKIP: o->skip_trivial = 0; break;
        case O_NO_GUARD: o->unguarded = 1; break;
        case O_NO_NETWORK: o->no_network = 1; break;
        case O_SKIP_CB: o->skip_callbacks = 1; break;
        case O_NO_SKIP_CB: o->skip_callbacks = 0; break;
        case O_SKIP_SMALL: {
            char *end = NULL;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 0 || v > 65535)
                rc = bl_instr_usage_error("--skip-small must be a byte count 0..65535, not '%s'",
                                          optarg);
            else
                o->skip_small = v;
            break;
        }
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); rc = -1; break;
        case O_NAMES:
            if (!strcmp(optarg, "original") || !strcmp(optarg, "obfuscated"))
                o->obfuscated = optarg[0] == 'o' && optarg[1] == 'b';
            else
                rc = bl_instr_usage_error("--names must be original or obfuscated, not '%s'",
                                          optarg);
            break;
        case O_BUILD_ID: o->build_id_arg = optarg; break;
        case O_VERSION_NAME: o->version_name = optarg; break;
        case O_BUILD_CLASS: o->build_class_dir = optarg; break;
        case O_CLASSPATH:
            rc = add_classpath(o, optarg);
            break;
        case O_LAYOUT:
            if (!strcmp(optarg, "auto"))
                o->layout = BL_LAYOUT_AUTO;
            else if (!strcmp(optarg, "names"))
                o->layout = BL_LAYOUT_NAMES;
            else if (!strcmp(optarg, "position"))
                o->layout = BL_LAYOUT_POSITION;
            else
                rc = bl_instr_usage_error("--layout must be auto, names or position, not '%s'",
                                          optarg);
            break;
        case 'j': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || v < 1 || v > MAX_THREADS)
                rc = bl_instr_usage_error("-j wants a number from 1 to 256, not '%s'", optarg);
            else
                o->threads = (int)v;
            break;
        }
        case O_EXCLUDE:
        case O_INCLUDE: {
            bl_err e = bl_rules_add(o->rules, c == O_EXCLUDE, optarg, err, sizeof err);
            if (e == BL_ENOMEM) {
                fprintf(stderr, PROG ": out of memory\n");
                rc = 1;
            } else if (e) {
                rc = bl_instr_usage_error("%s", err);
            }
            break;
        }
        case O_CONFIG: {
            bl_buf b;
            if (bl_instr_slurp(optarg, CONFIG_MAX, &b) != 0) {
                rc = 1;
                break;
            }
            bl_err e = bl_rules_parse_config(o->rules, &cfg, b.data ? b.data : "", b.len, optarg,
                                             err, sizeof err);
            bl_buf_cleanup(&b);
            if (e) {
                fprintf(stderr, PROG ": %s\n", e == BL_ENOMEM ? "out of memory" : err);
                rc = 1;
            }
            break;
        }
        case '?':
            if (optopt)
                rc = bl_instr_usage_error("option -%c is unknown or needs a value", optopt);
            else
                rc = bl_instr_usage_error("unknown option or missing value: %s", argv[optind - 1]);
            break;
        default:
            rc = bl_instr_usage_error("unexpected option");
        }
    }
    if (rc == 0) {
        /* the command line wins over config files */
        if (o->skip_trivial < 0)
            o->skip_trivial = cfg.skip_trivial < 0 ? 1 : cfg.skip_trivial;
        if (o->skip_callbacks < 0)
            o->skip_callbacks = cfg.skip_callbacks < 0 ? 1 : cfg.skip_callbacks;
        if (o->obfuscated < 0)
            o->obfuscated = cfg.obfuscated < 0 ? 0 : cfg.obfuscated;
        if (!o->threads)
            o->threads = cfg.threads ? cfg.threads : default_threads();
        if (!runtime)
            runtime = cfg.runtime_class ? cfg.runtime_class : DEFAULT_RUNTIME;
        if (!(o->runtime_class = strdup(runtime))) {
            fprintf(stderr, PROG ": out of memory\n");
            rc = 1;
        } else if (!runtime_name_ok(o->runtime_class)) {
            rc = bl_instr_usage_error("bad --runtime-class '%s' (want an internal name like a/b/C)",
                                      runtime);
        }
    }
    if (rc == 0 && !o->base_ids && cfg.base_ids) {
        o->base_ids = o->base_ids_owned = cfg.base_ids;
        cfg.base_ids = NULL;
    }
    bl_rules_opts_cleanup(&cfg);
    if (rc)
        return rc;
    o->inputs = argv + optind;
    o->n_inputs = argc - optind;
    if (o->n_inputs < 1)
        return bl_instr_usage_error("no INPUT given");
    if (!o->output)
        return bl_instr_usage_error("-o OUTPUT is required");
    if (!o->method_ids)
        return bl_instr_usage_error("--method-ids FILE is required");
    if (!o->build_id_arg && (o->version_name || o->build_class_dir))
        o->build_id_arg = "auto";
    return check_paths(o);
}
