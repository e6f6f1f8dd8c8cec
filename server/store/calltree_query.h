/*
 * calltree_query.h — reading a build's stored call-tree nodes and the
 * names of their methods, for the call-tree answer. (Writing nodes is
 * still in pipeline/processor.c, issue 12.)
 *
 * A stored node is one call path of one build on the main thread or on the
 * other threads: (parent node, method) with the calls' count and inclusive
 * / exclusive time summed, in µs. Node and method ids are opaque keys
 * (positive integers); 0 is "no parent". Strings handed to a callback are
 * owned by the store and valid only during that call.
 *
 * No backend types appear here: a second backend implements the same
 * functions.
 */
#ifndef BL_CALLTREE_QUERY_H
#define BL_CALLTREE_QUERY_H

#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

typedef struct bl_calltree_query {
    int64_t build_id;        /* from bl_builds_pick */
    int main_only;           /* 1: main-thread nodes only; 0: all */
    /* optional root method: nodes of this method get is_root = 1. NULL
     * root_class: no root (is_root is always 0). root_descriptor NULL:
     * any descriptor. Matched exactly (byte-wise). */
    const char *root_class, *root_name, *root_descriptor;
} bl_calltree_query;

typedef struct bl_calltree_node {
    int64_t id;              /* node id */
    int64_t parent;          /* parent's node id, 0 for a root */
    int64_t method;          /* method id (bl_calltree_method) */
    int64_t count;           /* calls */
    int64_t total_us;        /* inclusive time, summed */
    int64_t self_us;         /* exclusive time, summed */
    int is_root;             /* 1: the method is the query's root method */
    int main;                /* bl_calltree_scan: its thread kind (1 main, 0
                              * others); 0 from the other listings */
} bl_calltree_node;

/* Called once per node; return 0 to go on, anything else to stop
 * (the listing then returns BL_OK). */
typedef int (*bl_calltree_node_cb)(const bl_calltree_node *n, void *ctx);

/* Lists the build's nodes by ascending id; a node's parent always comes
 * before it. BL_OK, BL_EIO (message: bl_db_errmsg). */
bl_err bl_calltree_nodes(bl_db *db, const bl_calltree_query *q, bl_calltree_node_cb cb,
                         void *ctx);

/* Lists the stored children of node `parent` (0: the build's roots) of
 * build `build_id` on thread kind `main` (1: the main thread, 0: the
 * others), in no particular order. A node's children are on its own
 * thread kind. For reading a tree top-down without reading what a depth or
 * node limit leaves out: one index seek per call, then one row per child
 * (is_root is 0). Return value of cb and errors as bl_calltree_nodes. */
bl_err bl_calltree_children(bl_db *db, int64_t build_id, int main, int64_t parent,
                            bl_calltree_node_cb cb, void *ctx);

/* Lists the stored nodes of build `build_id` — on the main thread only
 * when main_only, else on both thread kinds — ordered by (thread kind,
 * parent, method) ascending (the other threads' first), with `main` set;
 * at most max_rows of them (>= 0). One range scan of the (build_id, main,
 * parent, method) index, about a fifth of a bl_calltree_children seek per
 * node: for reading a whole tree that is not much bigger than what is
 * printed. is_root is 0. Return value of cb and errors as
 * bl_calltree_nodes. */
bl_err bl_calltree_scan(bl_db *db, int64_t build_id, int main_only, int64_t max_rows,
                        bl_calltree_node_cb cb, void *ctx);

/* *has = 1 when node `parent` (0: the build's roots) of build `build_id`
 * has at least one stored child on thread kind `main`, else 0 (one index
 * seek). BL_OK, BL_EIO. */
bl_err bl_calltree_has_children(bl_db *db, int64_t build_id, int main, int64_t parent,
                                int *has);

/* A method's names as stored (deobfuscated when the build's mapping was
 * applied). Strings are never NULL. */
typedef struct bl_method_names {
    const char *cls, *name, *descriptor, *source_file;
} bl_method_names;

typedef void (*bl_method_cb)(const bl_method_names *m, void *ctx);

/* Calls cb once with method `method`'s names. BL_OK, BL_ENOTFOUND (cb not
 * called), BL_EIO. */
bl_err bl_calltree_method(bl_db *db, int64_t method, bl_method_cb cb, void *ctx);

/* Calls cb(id, names, ctx) for every method that a stored node of the build
 * (either thread kind) refers to and that has a methods row, in ascending
 * id order: one statement, for readers on a remote store (bl_db_remote)
 * that would otherwise look names up method by method. Names are valid
 * only during the call. cb returns non-zero to stop. BL_OK, BL_EIO. */
typedef int (*bl_method_id_cb)(int64_t id, const bl_method_names *m, void *ctx);
bl_err bl_calltree_build_methods(bl_db *db, int64_t build_id, bl_method_id_cb cb, void *ctx);

#endif
