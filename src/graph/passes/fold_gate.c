/*
 * fold_gate.c - a per-input-channel gate folded into the weights of the
 * blocked conv that reads the gated tensor (after alter_layout):
 *
 *   conv2d_NCHWc(multiply(x, g), W)  ->  conv2d_NCHWc(x, multiply(W, g'))
 *
 * where x is [N, C/b, H, W, b], g is [1, C/b, 1, 1, b] (one factor per
 * input channel, the same for every sample: a squeeze-and-excitation gate
 * at batch 1, or a constant), W is the packed kernel [O/ob, C/b, KH, KW,
 * b, ob] and g' is g reshaped to [C/b, 1, 1, b, 1], so that it broadcasts
 * over W's input-channel axes.  The sum over c of W[o,c] (x[c] g[c]) is
 * the sum of (W[o,c] g[c]) x[c], and zero padding commutes with the
 * per-channel product, so any kernel size, stride and padding folds.
 *
 * Why: the gate multiply is otherwise a pass over the whole feature map
 * (read and write x) fused into the gate's own small conv, and the conv
 * then reads the product again; folded, the gate scales the weights (a
 * small kernel of its own, "reshape_multiply") and the conv reads x.  That
 * pays when W has fewer elements than x, the rule here: EfficientNet-B0's
 * 144-channel 56 x 56 map feeds a 144 -> 24 (32 padded) 1x1, 4,608
 * weights against 451,584 values; the 7 x 7 maps of the last stages
 * before 1x1 convs of 160-1280 outputs keep the multiply.  Sum of each
 * kernel's minimum over 30 in-model profiles, old/new alternating, one
 * thread, load 6-7: EfficientNet-B0 6070 -> 5889 us and 6086 -> 5932,
 * MobileNetV3-Large 2973 -> 2941, MobileNetV3-Small 906 -> 891.
 *
 * Only where the product has no other use (a graph output counts as one:
 * graph_use_counts) and the conv is a plain (ungrouped, no kept_channels)
 * float32 conv2d_NCHWc whose input block is the gate's.  The scaled
 * weights are a new node, so another conv reading the same weights keeps
 * them unscaled (kiln_unit fold.gate_shared_weights checks both;
 * tests/python/test_fold_gate.py the first, in compiled models).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  int *uses; /* of the old graph */
} Gate;

/* g's per-channel shape [1, C/b, 1, 1, b] against x [N, C/b, H, W, b]. */
static bool is_channel_gate(const TType *g, const TType *x) {
  if (g->ndim != 5 || x->ndim != 5 || g->sym || x->sym || !dt_eq(g->dtype, x->dtype)) return false;
  return g->shape[0] == 1 && g->shape[1] == x->shape[1] && g->shape[2] == 1 && g->shape[3] == 1 &&
         g->shape[4] == x->shape[4];
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  Gate *f = ud;
  if (old->op->id != OP_CONV2D_NCHWC || gattr_int(&old->attrs, "groups", 1) != 1 ||
      gattr_find(&old->attrs, "kept_channels") || !dt_eq(old->type.dtype, DT_F32))
    return GRAPH_KEEP;
  GNode *m = old->args[0], *w = old->args[1];
  if (m->kind != GN_CALL || m->op->id != OP_MULTIPLY || f->uses[m->id] != 1 || w->type.ndim != 6) return GRAPH_KEEP;
  int gi = is_channel_gate(&m->args[1]->type, &m->type) ? 1 : is_channel_gate(&m->args[0]->type, &m->type) ? 0 : -1;
  if (gi < 0 || !ttype_eq(&m->args[1 - gi]->type, &m->type)) return GRAPH_KEEP;
  /* the kernel's input-channel axes must be the gate's (C/b and b) */
  const TType *g = &m->args[gi]->type, *wt = &w->type;
  if (wt->shape[1] != g->shape[1] || wt->shape[4] != g->shape[4]) return GRAPH_KEEP;
  if (ttype_numel(wt) >= ttype_numel(&m->type)) return GRAPH_KEEP;
  GNode *nm = args[0], *ng_ = nm->args[gi], *nx = nm->args[1 - gi];
  GAttrs ra = gattrs_new();
  ga_ints(&ra, "newshape", 5, (int64_t[]){g->shape[1], 1, 1, g->shape[4], 1});
  GNode *gr = graph_call(ng, "reshape", 1, &ng_, ra, NULL);
  GNode *nw = gr ? graph_call(ng, "multiply", 2, (GNode *[]){args[1], gr}, gattrs_new(), NULL) : NULL;
  return nw ? graph_copy_call(ng, old, (GNode *[]){nx, nw}) : NULL;
}

Graph *pass_fold_gate(Graph *g, const PassContext *pc) {
  (void)pc;
  Gate f = {graph_use_counts(g)};
  Graph *r = graph_rewrite(g, rewrite, &f);
  free(f.uses);
  return r;
}
