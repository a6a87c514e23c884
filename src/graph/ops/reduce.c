/*
 * reduce.c - op-table rows for reductions over a set of axes (attribute
 * "axis": list; absent or empty = all axes) with "keepdims", and the
 * arg-reductions (one axis, int64 indices).
 */
#include "util.h"

#include "compute.h"

/* Which axes are reduced (mask), from the node's attributes. */
int reduce_axes(GNode *n, const TType *d, bool *mask);
int reduce_axes(GNode *n, const TType *d, bool *mask) {
  const int64_t *ax;
  int k = gattr_ints(&n->attrs, "axis", &ax);
  for (int i = 0; i < d->ndim; i++) mask[i] = k == 0;
  for (int i = 0; i < k; i++) {
    int a;
    if (norm_axis("reduce axis", ax[i], d->ndim, &a)) return -1;
    mask[a] = true;
  }
  return 0;
}

static int infer_reduce(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  bool mask[GRAPH_MAX_DIMS];
  if (reduce_axes(n, d, mask)) return -1;
  bool keep = gattr_int(&n->attrs, "keepdims", 0) != 0;
  TType r = *d;
  r.ndim = 0;
  for (int i = 0; i < d->ndim; i++) {
    if (!mask[i])
      r.shape[r.ndim++] = d->shape[i];
    else if (keep)
      r.shape[r.ndim++] = 1;
  }
  *out = r;
  return 0;
}

static int infer_float_reduce(GNode *n, TType *out) {
  if (!dt_is_float(arg_type(n, 0)->dtype) && !dt_is_intlike(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "a numeric type");
  return infer_reduce(n, out);
}

static int infer_argreduce(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  const int64_t *ax;
  int k = gattr_ints(&n->attrs, "axis", &ax);
  if (k != 1) return kiln_set_error("arg-reductions take exactly one axis, got %d", k);
  if (infer_reduce(n, out)) return -1;
  (void)d;
  out->dtype = DT_I64;
  return 0;
}

const OpDef ops_reduce[] = {
    {"sum", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_sum, NULL, "data, axis=None, keepdims=False, exclude=False"},
    {"mean", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_mean, NULL, "data, axis=None, keepdims=False, exclude=False", OP_MEAN},
    {"max", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_max, NULL, "data, axis=None, keepdims=False, exclude=False"},
    {"min", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_min, NULL, "data, axis=None, keepdims=False, exclude=False"},
    {"prod", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_prod, NULL, "data, axis=None, keepdims=False, exclude=False"},
    {"l1_norm", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_l1_norm, NULL, NULL},
    {"l2_norm", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_l2_norm, NULL, NULL},
    {"sum_square", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_sum_square, NULL, NULL},
    {"logsumexp", 1, 1, PAT_COMM_REDUCE, infer_float_reduce, compute_logsumexp, NULL, NULL},
    {"argmax", 1, 1, PAT_COMM_REDUCE, infer_argreduce, compute_argmax, NULL, "data, axis=None, keepdims=False, exclude=False, select_last_index=False"},
    {"argmin", 1, 1, PAT_COMM_REDUCE, infer_argreduce, compute_argmin, NULL, "data, axis=None, keepdims=False, exclude=False, select_last_index=False"},
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
