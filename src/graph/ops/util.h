/*
 * util.h - helpers shared by the op-table rows (elemwise.c, nn.c, ...):
 * shape checks and broadcasting for type inference, attribute access with defaults, and
 * constant values of small int tensors (shapes, axes) at compile time.
 *
 *   util.c       the helpers
 *   elemwise.c   unary, binary (broadcasting), where, cast, clip, ...
 *   nn.c         conv2d, dense, pooling, softmax, norms, ...
 *   transform.c  reshape, transpose, concat, slices, gather, pad, ...
 *   reduce.c     reductions and arg reductions
 *   bf16.c       the ops of --precision bf16 (docs/bf16.md)
 *   table.c      the table of tables and lookup
 */
#ifndef KILN_GRAPH_OP_UTIL_H
#define KILN_GRAPH_OP_UTIL_H

#include "../graph.h"

/* Type of argument i. */
static inline const TType *arg_type(GNode *n, int i) { return &n->args[i]->type; }

/* Broadcast two shapes NumPy-style into out; -1 + error naming both. */
int bcast_shapes(const TType *a, const TType *b, TType *out);
/* Normalize an axis in [-ndim, ndim) to [0, ndim); -1 + error. */
int norm_axis(const char *what, int64_t axis, int ndim, int *out);
const char *shape_str(const TType *t); /* "(1, 3, 224, 224)" */
int err_dtype(GNode *n, int arg, const char *expected);

/* A row lists the fields of OpDef up to the last one it sets; the trailing
 * id and flags are zero (OP_OTHER, no flags) for most ops, so the row
 * files leave them out rather than repeat them on every row. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#endif
