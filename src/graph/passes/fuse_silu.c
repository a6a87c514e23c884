/*
 * fuse_silu.c - recognize SiLU (swish) written as x * sigmoid(x) and make
 * it one nn.silu call.
 *
 * Exporters write SiLU as a Sigmoid and a Mul of its input and output (the
 * operands in either order); the ONNX importer writes Swish with alpha 1
 * and a Conv's fused SiLU the same way.  Fused into the producing conv,
 * that is sigmoid's exponential with its subnormal-preserving scaling and
 * two selects, a division and a multiply per value.  nn.silu's float32
 * compute (topi's TOPI_silu) is x / (1 + e^-x) with e^-x clamped to a
 * normal float: SiLU needs no sigmoid of its own (docs/vmath.md), and the
 * formula is about two thirds of the operations.
 *
 * A match needs the same node x on both sides of the Mul, with the Mul's
 * float type (a symbolic shape too): x * sigmoid(y) for another y, as in a
 * squeeze-and-excitation gate, stays as it is.  The Sigmoid may have other
 * uses (it stays, for those).
 */
#include "passes.h"

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  (void)ud;
  if (old->op->id != OP_MULTIPLY) return GRAPH_KEEP;
  for (int i = 0; i < 2; i++) {
    GNode *x = args[i], *s = args[1 - i];
    if (!pass_is_op(s, OP_SIGMOID) || s->args[0] != x) continue;
    if (!dt_is_float(x->type.dtype) || !ttype_eq(&x->type, &old->type)) return GRAPH_KEEP;
    return graph_call(ng, "nn.silu", 1, &x, gattrs_new(), old->name);
  }
  return GRAPH_KEEP;
}

Graph *pass_fuse_silu(Graph *g, const PassContext *pc) {
  (void)pc;
  return graph_rewrite(g, rewrite, NULL);
}
