/*
 * blocks.h — the call tree of a main-thread block (a message whose dispatch
 * stalled the thread) and its signature (issue 13).
 *
 * A block event (schema/batch-format.md, "Events") names a thread segment
 * and a window [begin_us, end_us] in µs since the batch's origin. The
 * block's calls are the calls of that segment (agg/calltree.h) whose enter
 * time (for a carried enter, BL_CALL_CARRIED, its original enter time) is
 * in the window, except calls whose enter was lost (BL_CALL_SYNTH_ENTER):
 * those may have been open when the message began. Carried calls entered
 * before begin_us were open at the message's begin (a triggered-mode window
 * segment) and are left out; carried calls entered at or after begin_us are
 * the message's calls that a full-mode dump split off into the previous
 * segment, and are part of the window. A call whose parent is not a block
 * call is a root of the block. The window's edge µs are shared with the
 * neighbouring messages: a would-be root that lies wholly in begin_us (the
 * previous message's last calls) or enters in end_us (the next message's
 * first calls) is left out, unless begin_us = end_us.
 *
 * The block tree merges the block's calls by call path (parent path,
 * methodId), like the stored call tree: per path node count, inclusive and
 * exclusive µs summed. A call still open at the segment's end counts up to
 * the segment's last record (calltree.h).
 *
 * Signature path (the rule docs/api.md states): start at the root node with
 * the largest inclusive time; while the current node's child with the
 * largest inclusive time holds MORE THAN HALF of the current node's
 * inclusive time (2 × child > node), go down to it; stop after
 * BL_BLOCK_PATH_MAX nodes. Ties between nodes of equal time go to the node
 * created first (the earlier call). The last node is the culprit. The path
 * is the methodIds root first; an empty window has an empty path.
 *
 * The signature text is computed from the path's symbolicated names
 * (bl_block_sig_*): XXH3-128 over, per path method, its class, name and
 * descriptor each followed by a NUL byte; 32 lower-case hex digits. It does
 * not depend on methodIds or obfuscated names, so the same stall in two
 * builds (or two obfuscations) has the same text.
 *
 * Ownership: a bl_block_tree owns all its arrays; init / cleanup on a
 * caller-owned struct; it is reused across threads and windows.
 */
#ifndef BL_AGG_BLOCKS_H
#define BL_AGG_BLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include "agg/calltree.h"
#include "common/blerr.h"
#include "common/buf.h"
#include "common/u128map.h"

#define BL_BLOCK_PATH_MAX 64
#define BL_BLOCK_NONE UINT32_MAX

/* One path node of a block tree. */
typedef struct bl_block_node {
    uint32_t method_id;    /* the instrumenter's methodId */
    uint32_t parent;       /* parent node index, BL_BLOCK_NONE for a root */
    uint32_t heavy;        /* child with the largest total (first on ties), BL_BLOCK_NONE */
    uint32_t pad;
    uint64_t count;        /* calls on this path */
    uint64_t total, self;  /* inclusive, exclusive µs summed */
} bl_block_node;

typedef struct bl_block_tree {
    bl_block_node *nodes;  /* n_nodes, parents before children */
    uint32_t n_nodes, cap_nodes;
    uint64_t n_calls;      /* block calls in the window */
    uint32_t path[BL_BLOCK_PATH_MAX]; /* node indexes of the signature path, root first */
    uint32_t path_len;
    /* internal */
    bl_u128map ix;         /* (parent + 1, methodId) -> node index */
    uint32_t *order;       /* the indexed thread's block-eligible calls by (start, depth) */
    uint32_t n_order, cap_order;
    uint32_t *node_of;     /* per call of the indexed thread: its node in the current window */
    uint32_t cap_node_of;
    const bl_calltree *indexed; /* the tree bl_block_index ran on */
} bl_block_tree;

void bl_block_tree_init(bl_block_tree *bt);
void bl_block_tree_cleanup(bl_block_tree *bt);

/* Indexes the calls of t (borrowed; must stay unchanged while windows are
 * taken from it) for bl_block_window. O(n log n). BL_ENOMEM. */
bl_err bl_block_index(bl_block_tree *bt, const bl_calltree *t);

/* Builds the block tree of the window [begin_us, end_us] (begin <= end) of
 * the indexed tree and its signature path. max_calls: a block with more
 * calls than this fails with BL_ETOOBIG (the caller's work budget; nothing
 * is kept). BL_ENOMEM, BL_EINVAL (no bl_block_index, or begin > end). */
bl_err bl_block_window(bl_block_tree *bt, uint64_t begin_us, uint64_t end_us,
                       uint64_t max_calls);

/* Signature text: reset `acc` (a caller-owned bl_buf), add each path
 * method's names root first, then write the 32 hex digits and a NUL to
 * out. BL_ENOMEM. */
void bl_block_sig_reset(bl_buf *acc);
bl_err bl_block_sig_add(bl_buf *acc, const char *cls, const char *name, const char *descriptor);
void bl_block_sig_text(const bl_buf *acc, char out[33]);

#endif
