/*
 * simplify_inference.c - inference-time simplification:
 *   nn.batch_norm(x, gamma, beta, mean, var) ->
 *       x * scale + shift,  scale = gamma / sqrt(var + eps),
 *                           shift = beta - mean * scale,
 *   with scale and shift reshaped to broadcast along the channel axis
 *   (fold_constant evaluates them when the statistics are constants);
 *   nn.dropout(x) -> x.
 */
#include "passes.h"

#include <string.h>

static GNode *bcast_along(Graph *ng, GNode *v, int axis, int ndim) {
  int trailing = ndim - axis - 1;
  if (trailing <= 0) return v;
  int64_t axes[GRAPH_MAX_DIMS];
  for (int i = 0; i < trailing; i++) axes[i] = i + 1;
  GAttrs a = gattrs_new();
  kiln_arena_push(ng->arena);
  ga_ints(&a, "axes", trailing, axes);
  kiln_arena_pop();
  return graph_call(ng, "expand_dims", 1, &v, a, NULL);
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  (void)ud;
  if (old->op->id == OP_DROPOUT) return args[0];
  if (old->op->id != OP_BATCH_NORM) return GRAPH_KEEP;
  DType dt = old->type.dtype;
  int ndim = old->type.ndim;
  int64_t ax = gattr_int(&old->attrs, "axis", 1);
  if (ax < 0) ax += ndim;
  double eps = gattr_float(&old->attrs, "epsilon", 1e-5);
  GAttrs none = gattrs_new();
  GNode *eps_c = graph_scalar(ng, eps, dt);
  GNode *var_eps = graph_call(ng, "add", 2, (GNode *[]){args[4], eps_c}, none, NULL);
  GNode *sd = graph_call(ng, "sqrt", 1, &var_eps, none, NULL);
  GNode *scale = graph_call(ng, "divide", 2, (GNode *[]){args[1], sd}, none, NULL);
  GNode *ms = graph_call(ng, "multiply", 2, (GNode *[]){args[3], scale}, none, NULL);
  GNode *shift = graph_call(ng, "subtract", 2, (GNode *[]){args[2], ms}, none, NULL);
  GNode *scale_b = bcast_along(ng, scale, (int)ax, ndim), *shift_b = bcast_along(ng, shift, (int)ax, ndim);
  GNode *y = graph_call(ng, "multiply", 2, (GNode *[]){args[0], scale_b}, none, old->name);
  return graph_call(ng, "add", 2, (GNode *[]){y, shift_b}, none, old->name);
}

Graph *pass_simplify_inference(Graph *g, const PassContext *pc) {
  (void)pc;
  return graph_rewrite(g, rewrite, NULL);
}
