/*
 * fold_pad_pool.c - a constant-zero nn.pad of the spatial axes folded into
 * the nn.avg_pool2d that reads it (TVM's FoldExplicitPadding, for pools).
 *
 * Exporters write an average pool with padding that counts the padded
 * zeros (PyTorch's default, count_include_pad) as a Pad and an
 * AveragePool without padding: two kernels and a pass over a padded copy
 * of the tensor (Inception-v3's nine 3x3 pools).  The pool's own padding
 * with count_include_pad computes the same sums and divisors, so the pad
 * becomes pool padding: pad's (top, left, bottom, right) added to the
 * pool's, count_include_pad set.  Only for an NCHW pool without
 * ceil_mode (whose last-window rule depends on where the input ends),
 * pads of the height and width alone, none negative, value 0 in constant
 * mode; a pool with padding of its own must already count it.  The pad
 * stays for its other uses, if any.
 */
#include "passes.h"

#include <string.h>

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  (void)ud;
  if (old->op->id != OP_AVG_POOL2D) return GRAPH_KEEP;
  GNode *pad = args[0];
  if (!pass_is_op(pad, OP_PAD) || ttype_is_symbolic(&pad->type)) return GRAPH_KEEP;
  const GAttrs *pa = &pad->attrs, *a = &old->attrs;
  const int64_t *p, *own;
  int k = gattr_ints(pa, "pads", &p), ko = gattr_ints(a, "padding", &own);
  bool counts = gattr_int(a, "count_include_pad", 0) != 0;
  if (strcmp(gattr_str(pa, "pad_mode", "constant"), "constant") || gattr_float(pa, "pad_value", 0) != 0 ||
      strcmp(gattr_str(a, "layout", "NCHW"), "NCHW") || gattr_int(a, "ceil_mode", 0) || k != 8 || p[0] || p[1] ||
      p[4] || p[5] || p[2] < 0 || p[3] < 0 || p[6] < 0 || p[7] < 0 || (ko != 0 && ko != 1 && ko != 2 && ko != 4))
    return GRAPH_KEEP;
  int64_t pool[4] = {0, 0, 0, 0}; /* top, left, bottom, right */
  for (int i = 0; i < 4 && ko; i++) pool[i] = own[ko == 4 ? i : ko == 2 ? i % 2 : 0];
  if (!counts && (pool[0] || pool[1] || pool[2] || pool[3])) return GRAPH_KEEP;
  int64_t padding[4] = {pool[0] + p[2], pool[1] + p[3], pool[2] + p[6], pool[3] + p[7]};
  GAttrs na = gattrs_copy(a);
  ga_ints(&na, "padding", 4, padding);
  ga_int(&na, "count_include_pad", 1);
  GNode *x = pad->args[0];
  return graph_call(ng, "nn.avg_pool2d", 1, &x, na, old->name);
}

Graph *pass_fold_pad_pool(Graph *g, const PassContext *pc) {
  (void)pc;
  return graph_rewrite(g, rewrite, NULL);
}
