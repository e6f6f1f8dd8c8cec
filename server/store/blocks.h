/*
 * blocks.h — stored block aggregates (issue 13; schema migration
 * 0005_blocks.sql): groups per build and signature path, per-hour figures,
 * distinct devices and sessions, and each group's merged call tree.
 *
 * Writing (bl_blk_add, bl_blk_node_add) runs on the writer connection inside
 * the transaction the processor opened (bl_db_begin), so a batch's blocks
 * are committed with the batch row: exactly once. Reading runs on any
 * connection. Times are µs since the Unix epoch, durations µs. Strings
 * passed in are copied; strings handed to a callback are owned by the store
 * and valid only during that call. Errors: BL_EIO (message: bl_db_errmsg)
 * unless said otherwise. No backend types appear here.
 */
#ifndef BL_STORE_BLOCKS_H
#define BL_STORE_BLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include "common/blerr.h"
#include "store/db.h"

/* ---- writing ----------------------------------------------------------- */

/* One block, added to its group's figures. */
typedef struct bl_blk_block {
    int64_t build_id;
    const char *path;     /* signature path: methodIds root first, decimal, ',' between;
                           * "" for a window without calls */
    int64_t at_us;        /* the block's begin, µs since the epoch */
    int64_t dur_us;       /* end - begin */
    int anr;              /* 1: reported as an ANR */
    const char *target;   /* message target */
    const char *device;   /* the event's device id */
    const char *session;  /* the batch's session_id */
    const void *sketch;   /* agg/sketch.h blob holding dur_us once */
    size_t sketch_len;
    const char *anr_stack; /* an ANR's sampled stack: frames innermost first, '\n' between;
                            * NULL: none. The hour keeps the latest one (by at_us). */
} bl_blk_block;

/* Adds the block to its group (created when new) for the hour of at_us;
 * the group's id -> *group. */
bl_err bl_blk_add(bl_db *db, const bl_blk_block *b, int64_t *group);

/* Adds (count, total_us, self_us) to the node (group, parent, method_id)
 * of a group's merged call tree (parent: a node id, 0 for a root),
 * creating it; its id -> *id. */
bl_err bl_blk_node_add(bl_db *db, int64_t group, int64_t parent, int64_t method_id,
                       int64_t count, int64_t total_us, int64_t self_us, int64_t *id);

/* ---- reading ----------------------------------------------------------- */

/* A group's figures over the hours asked for. */
typedef struct bl_blk_group {
    int64_t id;               /* opaque key for bl_blk_nodes */
    const char *path;         /* as stored (see bl_blk_block.path) */
    int64_t count, anrs, max_us;
    int64_t first_at, last_at;
    const char *target;       /* of the latest block in the range */
    int64_t devices, sessions; /* distinct, in the range */
    const void *sketch;       /* union of the durations' sketches */
    size_t sketch_len;
} bl_blk_group;

/* Called once per group; return 0 to go on, anything else to stop (the
 * listing then returns BL_OK). */
typedef int (*bl_blk_group_cb)(const bl_blk_group *g, void *ctx);

/* Lists the groups of build `build_id` with blocks in hours
 * [hour_from, hour_to] (hour numbers), by group id. BL_OK, BL_EIO. */
bl_err bl_blk_groups(bl_db *db, int64_t build_id, int64_t hour_from, int64_t hour_to,
                     bl_blk_group_cb cb, void *ctx);

/* A method's names; a methodId without a methods row gets class "?", name
 * "unknown method N" and empty descriptor and source file (placeholders of
 * the slow-methods path look the same). Strings never NULL. */
typedef struct bl_blk_names {
    const char *cls, *name, *descriptor, *source_file;
} bl_blk_names;

/* Calls cb once with the names of methodId `method_id` of build
 * `build_id`. BL_OK, BL_EIO. */
bl_err bl_blk_method(bl_db *db, int64_t build_id, int64_t method_id,
                     void (*cb)(const bl_blk_names *n, void *ctx), void *ctx);

/* Calls cb(stack, at_us, ctx) with the stack of group `group`'s latest
 * ANR that had one (bl_blk_block.anr_stack, as stored) and that block's
 * begin (µs since the epoch); not at all when there is none. BL_OK,
 * BL_EIO. */
bl_err bl_blk_anr_stack(bl_db *db, int64_t group,
                        void (*cb)(const char *stack, int64_t at_us, void *ctx), void *ctx);

/* One stored node of a group's call tree, with its method's names. */
typedef struct bl_blk_node {
    int64_t id, parent;       /* parent 0: a root */
    int64_t method_id;
    int64_t count, total_us, self_us;
    bl_blk_names names;
} bl_blk_node;

typedef int (*bl_blk_node_cb)(const bl_blk_node *n, void *ctx);

/* Lists group `group`'s nodes by ascending id (a parent before its
 * children). cb returns 0 to go on. BL_OK, BL_EIO. */
bl_err bl_blk_nodes(bl_db *db, int64_t build_id, int64_t group, bl_blk_node_cb cb, void *ctx);

#endif
