/*
 * fold_scale_axis.c - fold per-output-channel scales into weights (TVM's
 * backward FoldScaleAxis):
 *
 *   multiply(conv2d(x, W), s)               -> conv2d(x, W * s')
 *   multiply(bias_add(conv2d(x, W), b), s)  -> bias_add(conv2d(x, W * s'), b * s)
 *   multiply(dense(x, W), s)                -> dense(x, W * s')
 *
 * where s is a constant that varies only along the output-channel axis
 * (shape [C, 1, 1], [1, C, 1, 1], [C] for dense, or a scalar) and the
 * conv/dense result has no other use.  s' is s reshaped to broadcast over
 * the weight's output-channel axis; fold_constant then computes W * s'.
 * This is what turns batch-norm (after simplify_inference) into nothing
 * but a bias.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* If s varies only along axis `axis` of a result of rank `ndim` with C
 * channels, return its per-channel length (1 or C); else 0. */
static int64_t channel_scale(GNode *s, int axis, int ndim, int64_t C) {
  if (s->kind != GN_CONST) return 0;
  const TType *t = &s->type;
  if (t->ndim > ndim) return 0;
  int64_t len = 1;
  for (int i = 0; i < t->ndim; i++) {
    int ax = ndim - t->ndim + i;
    if (ax == axis) len = t->shape[i];
    else if (t->shape[i] != 1) return 0;
  }
  return len == 1 || len == C ? len : 0;
}

typedef struct {
  int *uses; /* of the old graph */
} Fsa;

static GNode *reshape_to(Graph *ng, GNode *s, int ndim, int64_t len) {
  int64_t shape[GRAPH_MAX_DIMS];
  shape[0] = len;
  for (int i = 1; i < ndim; i++) shape[i] = 1;
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", ndim, shape);
  return graph_call(ng, "reshape", 1, &s, a, NULL);
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  Fsa *f = ud;
  if (old->op->id != OP_MULTIPLY) return GRAPH_KEEP;
  GNode *x = old->args[0], *s = old->args[1];
  int xi = 0;
  if (x->kind != GN_CALL) {
    x = old->args[1];
    s = old->args[0];
    xi = 1;
  }
  if (x->kind != GN_CALL || f->uses[x->id] != 1) return GRAPH_KEEP;
  GNode *bias_add = NULL, *core = x;
  if (x->op->id == OP_BIAS_ADD && gattr_int(&x->attrs, "axis", 1) == 1) {
    bias_add = x;
    core = x->args[0];
    if (core->kind != GN_CALL || f->uses[core->id] != 1) return GRAPH_KEEP;
  }
  bool conv = core->op->id == OP_CONV2D && !strcmp(gattr_str(&core->attrs, "data_layout", "NCHW"), "NCHW") &&
              gattr_int(&core->attrs, "groups", 1) >= 1;
  bool dense = core->op->id == OP_DENSE;
  if (!conv && !dense) return GRAPH_KEEP;
  int ndim = core->type.ndim, axis = conv ? 1 : ndim - 1;
  int64_t C = core->type.shape[axis];
  int64_t len = channel_scale(s, axis, ndim, C);
  if (!len || core->args[1]->kind != GN_CONST) return GRAPH_KEEP;
  /* the new graph's nodes for the core's inputs: the rewriter mapped them
   * already; find them through args of the new multiply's operand */
  GNode *nx = args[xi], *ns = args[1 - xi];
  GNode *ncore = bias_add ? nx->args[0] : nx;
  GNode *w = ncore->args[1];
  int wdim = w->type.ndim;
  GNode *sw = reshape_to(ng, ns, wdim, len);
  GNode *nw = graph_call(ng, "multiply", 2, (GNode *[]){w, sw}, gattrs_new(), NULL);
  GNode *nc = graph_call(ng, core->op->name, 2, (GNode *[]){ncore->args[0], nw}, core->attrs, core->name);
  if (!bias_add) return nc;
  GNode *sb = reshape_to(ng, ns, 1, len);
  GNode *nb = graph_call(ng, "multiply", 2, (GNode *[]){nx->args[1], sb}, gattrs_new(), NULL);
  return graph_call(ng, "nn.bias_add", 2, (GNode *[]){nc, nb}, bias_add->attrs, bias_add->name);
}

Graph *pass_fold_scale_axis(Graph *g, const PassContext *pc) {
  (void)pc;
  Fsa f = {graph_use_counts(g)};
  Graph *r = graph_rewrite(g, rewrite, &f);
  free(f.uses);
  return r;
}
