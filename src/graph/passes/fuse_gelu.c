/*
 * fuse_gelu.c - recognize GELU written out with erf and make it one
 * nn.gelu call.
 *
 * PyTorch (below ONNX opset 20) and most exporters write the exact GELU
 * as x * 0.5 * (1 + erf(x / sqrt 2)): Div (or Mul by 1/sqrt 2), Erf,
 * Add 1, and two Muls in either order, the 0.5 on x or on the product.
 * Fused into the producing dense, that is erf's two polynomials (|x| < 1
 * and the tail, both computed for every lane) and an exponential per
 * value.  nn.gelu's float32 compute (topi's TOPI_gelu) needs Phi(x) only
 * to an absolute error, since the result is x Phi(x), and takes one
 * rational function, no exponential (docs/vmath.md): 0.17 against 0.42
 * ns per value for the written-out form in a lane loop.  ONNX Runtime fuses the same pattern
 * into its Gelu kernel.
 *
 * A match needs the same x in the division and the product, scalar
 * constants within 1e-6 of sqrt 2 (or 1/sqrt 2), 1 and 0.5, and a float x
 * with the output's type; the intermediate nodes may have other uses
 * (they stay, for those).
 */
#include "passes.h"

#include <math.h>

/* n is a scalar constant within 1e-6 (relative) of v */
static bool is_const(const GNode *n, double v) {
  return gnode_is_scalar_const(n) && fabs(gnode_scalar_value(n) - v) <= 1e-6 * v;
}

/* x when s is x / sqrt 2 or x * (1/sqrt 2) (either side), else NULL */
static GNode *scaled_arg(GNode *s) {
  if (pass_is_op(s, OP_DIVIDE) && is_const(s->args[1], M_SQRT2)) return s->args[0];
  if (!pass_is_op(s, OP_MULTIPLY)) return NULL;
  for (int i = 0; i < 2; i++)
    if (is_const(s->args[i], M_SQRT1_2)) return s->args[1 - i];
  return NULL;
}

/* x when e is 1 + erf(x / sqrt 2) (either side), else NULL */
static GNode *one_plus_erf(GNode *e) {
  if (!pass_is_op(e, OP_ADD)) return NULL;
  for (int i = 0; i < 2; i++)
    if (is_const(e->args[i], 1.0) && pass_is_op(e->args[1 - i], OP_ERF)) return scaled_arg(e->args[1 - i]->args[0]);
  return NULL;
}

/* x when a * b is x * (1 + erf(x / sqrt 2)) with `half` folded in as told:
 * half 0: a and b are x and 1 + erf; half 1: one of them is x * 0.5 */
static GNode *gelu_product(GNode *a, GNode *b, bool half) {
  for (int i = 0; i < 2; i++) {
    GNode *x = i ? b : a, *e = i ? a : b;
    GNode *ex = one_plus_erf(e);
    if (!ex) continue;
    if (!half && x == ex) return x;
    if (half && pass_is_op(x, OP_MULTIPLY))
      for (int k = 0; k < 2; k++)
        if (is_const(x->args[k], 0.5) && x->args[1 - k] == ex) return ex;
  }
  return NULL;
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  (void)ud;
  if (old->op->id != OP_MULTIPLY) return GRAPH_KEEP;
  GNode *x = NULL;
  for (int i = 0; i < 2 && !x; i++) /* (x * (1 + erf)) * 0.5 */
    if (is_const(args[i], 0.5) && pass_is_op(args[1 - i], OP_MULTIPLY))
      x = gelu_product(args[1 - i]->args[0], args[1 - i]->args[1], false);
  if (!x) x = gelu_product(args[0], args[1], true); /* (x * 0.5) * (1 + erf) */
  if (!x || x->type.sym || !dt_is_float(x->type.dtype) || !ttype_eq(&x->type, &old->type)) return GRAPH_KEEP;
  return graph_call(ng, "nn.gelu", 1, &x, gattrs_new(), old->name);
}

Graph *pass_fuse_gelu(Graph *g, const PassContext *pc) {
  (void)pc;
  return graph_rewrite(g, rewrite, NULL);
}
