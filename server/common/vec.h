/*
 * vec.h — a growable array as a macro pair, for C structs of any type.
 *
 *   BL_VEC(bl_mi_class) classes;      a struct { T *v; size_t n, cap; }
 *   BL_VEC_PUSH(classes, item, err);  appends; on a failed allocation sets
 *                                     err = BL_ENOMEM and leaves the array
 *                                     as it was
 *
 * Zero-initialised is empty; the owner frees .v. Capacity doubles from 256.
 */
#ifndef BL_VEC_H
#define BL_VEC_H

#include <stdlib.h>
#include "common/blerr.h"

#define BL_VEC(T)                                                                  \
    struct {                                                                       \
        T *v;                                                                      \
        size_t n, cap;                                                             \
    }

#define BL_VEC_PUSH(vec, item, err)                                                \
    do {                                                                           \
        if ((vec).n == (vec).cap) {                                                \
            size_t nc_ = (vec).cap ? (vec).cap * 2 : 256;                          \
            void *nv_ = realloc((vec).v, nc_ * sizeof *(vec).v);                   \
            if (!nv_) {                                                            \
                (err) = BL_ENOMEM;                                                 \
                break;                                                             \
            }                                                                      \
            (vec).v = nv_;                                                         \
            (vec).cap = nc_;                                                       \
        }                                                                          \
        (vec).v[(vec).n++] = (item);                                               \
    } while (0)

#endif
