/*
 * aggsql.c — what the event aggregate modules (blocks, launches, network)
 * share: on PostgreSQL the sketch unions and merges SQLite does with its
 * own SQL functions (see internal.h).
 */
#include "store/internal.h"

#include "agg/sketch.h"

bl_err bl_st_col_sketch_union(bl_st *st, int i, bl_buf *out)
{
    const unsigned char *p = bl_st_col_blob(st, i);
    size_t n = p ? bl_st_col_bytes(st, i) : 0;
    bl_sketch s;
    bl_sketch_init(&s);
    bl_err err = BL_OK;
    for (size_t off = 0; off < n && !err;) {
        if (n - off < 4) {
            err = BL_EFORMAT;
            break;
        }
        size_t len = (size_t)p[off] << 24 | (size_t)p[off + 1] << 16 |
                     (size_t)p[off + 2] << 8 | (size_t)p[off + 3];
        off += 4;
        if (len > n - off) {
            err = BL_EFORMAT;
            break;
        }
        err = bl_sketch_merge_blob(&s, p + off, len);
        off += len;
    }
    bl_buf_reset(out);
    if (!err)
        err = bl_sketch_serialize(&s, out);
    bl_sketch_cleanup(&s);
    return err;
}

bl_err bl_st_sketch_lock_merge(bl_st *lock, int n, const void *const *add,
                               const size_t *add_len, bl_buf *out, int *found)
{
    *found = 0;
    if (n < 0 || n > 4)
        return BL_EINVAL;
    int rc = bl_st_step(lock);
    if (rc != BL_ST_ROW && rc != BL_ST_DONE) {
        bl_st_reset(lock);
        return BL_EIO;
    }
    bl_err err = BL_OK;
    for (int k = 0; k < n && !err; k++) {
        bl_buf_reset(&out[k]);
        if (rc == BL_ST_ROW && !bl_st_is_null(lock, k))
            err = bl_sketch_blob_merge(bl_st_col_blob(lock, k), bl_st_col_bytes(lock, k), add[k],
                                       add_len[k], &out[k]);
        else
            err = bl_buf_append(&out[k], add[k], add_len[k]);
    }
    *found = rc == BL_ST_ROW;
    bl_st_reset(lock);
    return err;
}
