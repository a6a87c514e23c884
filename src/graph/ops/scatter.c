/*
 * scatter.c - the scatter ops: scatter_elements (ONNX ScatterElements and
 * Scatter) and scatter_nd (ScatterND, and MaxUnpool into zeros); and
 * topk_indices (ONNX TopK, its values a gather_elements of them), the
 * positions of the k best of each row's last axis by a heap per row
 * (topi/generic/topk.c), a ranking compute on a GPU.  Their
 * kernels are loop nests that copy the data and then write each update
 * where its index says (topi/generic/scatter.c), linear in the data and
 * the updates (on a GPU target, computes of the same results).  Attribute
 * "reduction": none (an update replaces the value;
 * of duplicate indices the last wins), add, mul, max or min.
 */
#include <string.h>

#include "../../target/target.h"
#include "util.h"

static const char *const reductions[] = {
    [TOPI_SCATTER_NONE] = "none", [TOPI_SCATTER_ADD] = "add", [TOPI_SCATTER_MUL] = "mul",
    [TOPI_SCATTER_MAX] = "max",   [TOPI_SCATTER_MIN] = "min",
};

static int reduction_of(GNode *n, TopiScatterReduce *red) {
  const char *s = gattr_str(&n->attrs, "reduction", "none");
  for (int r = TOPI_SCATTER_NONE; r <= TOPI_SCATTER_MIN; r++)
    if (!strcmp(s, reductions[r])) {
      *red = (TopiScatterReduce)r;
      return 0;
    }
  return kiln_set_error("reduction '%s' is not one of none, add, mul, max, min", s);
}

static int infer_scatter(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *idx = arg_type(n, 1), *u = arg_type(n, 2);
  TopiScatterReduce red;
  if (!dt_is_intlike(idx->dtype) || dt_is_bool(idx->dtype)) return err_dtype(n, 1, "an integer index type");
  if (!dt_eq(u->dtype, d->dtype)) return err_dtype(n, 2, "the data's type");
  if (reduction_of(n, &red)) return -1;
  *out = *d;
  return 0;
}

/* A GPU target has no schedule for the loop nest: the dense form there. */
static bool dense_form(const Strategy *st) { return st && st->target && target_is_gpu(st->target); }

static Tensor *compute_scatter_elements(GNode *n, Tensor **ins, const Strategy *st) {
  TopiScatterReduce red;
  if (reduction_of(n, &red)) return NULL;
  int axis = (int)gattr_int(&n->attrs, "axis", 0);
  return dense_form(st) ? topi_scatter_elements_dense(ins[0], ins[1], ins[2], axis, red)
                        : topi_scatter_elements(ins[0], ins[1], ins[2], axis, red);
}

static Tensor *compute_scatter_nd(GNode *n, Tensor **ins, const Strategy *st) {
  TopiScatterReduce red;
  if (reduction_of(n, &red)) return NULL;
  return dense_form(st) ? topi_scatter_nd_dense(ins[0], ins[1], ins[2], red) : topi_scatter_nd(ins[0], ins[1], ins[2], red);
}

/* topk_indices: "k", "largest" (1: the largest, 0: the smallest). */
static int infer_topk(GNode *n, TType *out) {
  const TType *x = arg_type(n, 0);
  int64_t k = gattr_int(&n->attrs, "k", -1);
  if (x->ndim < 1) return kiln_set_error("topk_indices: input must have rank >= 1");
  if (k < 0 || k > x->shape[x->ndim - 1])
    return kiln_set_error("topk_indices: k = %lld is not within [0, %lld]", (long long)k, (long long)x->shape[x->ndim - 1]);
  *out = *x;
  out->shape[x->ndim - 1] = k;
  out->dtype = DT_I64;
  return 0;
}

static Tensor *compute_topk(GNode *n, Tensor **ins, const Strategy *st) {
  int64_t k = gattr_int(&n->attrs, "k", 0);
  bool largest = gattr_int(&n->attrs, "largest", 1) != 0;
  return dense_form(st) ? topi_topk_indices_dense(ins[0], k, largest) : topi_topk_indices(ins[0], k, largest);
}

const OpDef ops_scatter[] = {
    {"scatter_elements", 3, 3, PAT_OPAQUE, infer_scatter, compute_scatter_elements, NULL,
     "data, indices, updates, axis=0, reduction=\"none\"", OP_OTHER, 0, NULL},
    {"scatter_nd", 3, 3, PAT_OPAQUE, infer_scatter, compute_scatter_nd, NULL, "data, indices, updates, reduction=\"none\"",
     OP_OTHER, 0, NULL},
    {"topk_indices", 1, 1, PAT_OPAQUE, infer_topk, compute_topk, NULL, "data, k, largest=1", OP_OTHER, 0, NULL},
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
