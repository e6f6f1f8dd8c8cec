/*
 * hierarchy.h — the class hierarchy across the instrumenter's inputs and a
 * class path of library jars (--classpath), and the launch hooks (issue 15)
 * it decides.
 *
 * The classes of the inputs are added with their super class names as pass
 * 1 parsed them (bl_hier_add). A class-path element (a jar, or a folder of
 * classes, e.g. android-all / android.jar and AndroidX jars) is opened once
 * (bl_hier_add_classpath) and its class entries are indexed by name; an
 * entry is inflated and parsed only when a resolution walks through it, so
 * a 140 MB android-all costs one read of the file and a few parses.
 * Lookups: the inputs first, then the class-path elements in the order
 * given (the first class of a name wins, as on a JVM class path); entries
 * under META-INF/ (multi-release versions) are not indexed.
 *
 * A class is an Application (Activity) subclass when the chain of its super
 * classes reaches android/app/Application (android/app/Activity); it is
 * OTHER when the chain reaches a class without a super class
 * (java/lang/Object) first; UNRESOLVED when a class of the chain is found
 * nowhere (that class is named, never guessed) or the chain is longer than
 * BL_HIER_MAX_DEPTH or loops.
 *
 * Not thread-safe: one thread resolves (main.c does it between its passes).
 */
#ifndef BL_HIERARCHY_H
#define BL_HIERARCHY_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "jario.h"

/* Longest super-class chain followed. */
#define BL_HIER_MAX_DEPTH 256

enum bl_hier_kind {
    BL_HIER_OTHER = 0,       /* neither an Application nor an Activity */
    BL_HIER_APPLICATION = 1, /* below android/app/Application */
    BL_HIER_ACTIVITY = 2,    /* below android/app/Activity */
    BL_HIER_UNRESOLVED = 3   /* a super class is missing (or the chain loops) */
};

/* Launch hooks: the int each hook passes to io/beatline/runtime/Launch.enter
 * and .exit (runtime/src/io/beatline/runtime/Launch.java keeps the same
 * numbers). */
enum bl_hook {
    BL_HOOK_NONE = 0,
    BL_HOOK_APP_ATTACH = 1,      /* Application.attachBaseContext(Context) */
    BL_HOOK_APP_CREATE = 2,      /* Application.onCreate() */
    BL_HOOK_ACT_CREATE = 3,      /* Activity.onCreate(Bundle) */
    BL_HOOK_ACT_START = 4,       /* Activity.onStart() */
    BL_HOOK_ACT_RESUME = 5,      /* Activity.onResume() */
    BL_HOOK_ACT_RESTART = 6      /* Activity.onRestart() */
};

/* The runtime class and methods the hooks call (static, (I)V). */
#define BL_HOOK_CLASS "io/beatline/runtime/Launch"
#define BL_HOOK_ENTER "enter"
#define BL_HOOK_EXIT "exit"

typedef struct bl_hier bl_hier; /* opaque; bl_hier_new / bl_hier_free */

/* A new, empty hierarchy owned by the caller. BL_ENOMEM. */
bl_err bl_hier_new(bl_hier **out);
/* Frees h and the class-path elements it opened (NULL is fine). */
void bl_hier_free(bl_hier *h);

/* Adds a class of the inputs: its internal name and its super class's
 * (NULL: none). The strings are copied. A name added before keeps its first
 * super class. BL_ENOMEM. */
bl_err bl_hier_add(bl_hier *h, const char *name, const char *super_name);

/* Opens a class-path element (jar or folder; jario rules) and indexes its
 * class entries. Errors as bl_jio_open (BL_EIO, BL_EFORMAT, BL_ETOOBIG,
 * BL_ENOMEM) with "PATH: reason" in err. */
bl_err bl_hier_add_classpath(bl_hier *h, const char *path, bl_jio_notice_fn notice, void *ctx,
                             char *err, size_t errlen);

/* Resolves class `name` (internal form). *kind receives a bl_hier_kind;
 * when it is BL_HIER_UNRESOLVED, *missing (may be NULL) receives the class
 * that was not found (owned by h, valid until bl_hier_free; for a loop or
 * a too-long chain, the class where the walk stopped). Errors: BL_EFORMAT
 * (a class-path entry on the chain is corrupt or not a class: "PATH!ENTRY:
 * reason" in err), BL_ENOMEM. */
bl_err bl_hier_kind(bl_hier *h, const char *name, int *kind, const char **missing, char *err,
                    size_t errlen);

/* The hook of a method of a class of that kind: BL_HOOK_NONE unless the
 * method is an instance method with code (not static, abstract or native)
 * with one of the names and descriptors listed in enum bl_hook. */
int bl_hier_hook(int kind, const char *name, const char *desc, uint16_t access);

/* 1 when a method with this name and descriptor could get a hook in some
 * class (cheap pre-check: only such classes are resolved). */
int bl_hier_hook_candidate(const char *name, const char *desc, uint16_t access);

#endif
