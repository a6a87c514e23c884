/*
 * sink_reshape.c - move reshapes below elementwise and broadcast ops, and
 * drop the reshapes that become chains or identities.
 *
 * ONNX's MatMul of a [B, S, K] activation by a [K, N] weight imports as
 * reshape -> nn.dense -> reshape([B, S, N]), and the bias Add, GELU or
 * residual that follow then read the reshape: a dense layer's epilogue can
 * take only elementwise/broadcast ops (fuse.c), so the bias and the
 * activation became kernels of their own, each a round trip of the whole
 * [S, N] tensor.  This pass rewrites
 *
 *     op(reshape(x, T), c, ...)  ->  reshape(op(x, c', ...), T)
 *
 * for an elementwise or broadcast op whose output has the reshape's shape
 * T, when each other operand reads only the trailing dimensions that x's
 * shape S and T share (a scalar, a bias of the last axis) or is a reshape
 * of another tensor of shape S to T (any other operand of shape T, a
 * residual, is read through a reshape to S, which CSE merges with the
 * reshape the next layer already makes of it); a constant operand of higher rank
 * than S ([1, 1, N]) is reshaped to its trailing dimensions (folded
 * later).  The element at a flat index then has the same trailing
 * coordinates in S as in T, so every operand contributes the same value.
 * A transpose that moves only axes of length 1 ([S, 1, D] -> [1, S, D], as
 * PyTorch's batch_first encoder exports) is a reshape too.  Then
 * reshape(reshape(x)) becomes one reshape and a reshape to the shape it
 * already has disappears, so dense -> bias -> GELU -> next dense is
 * one kernel and a plain dense (TVM's SimplifyExpr does the same with its
 * SimplifyReshape and the reshape-sinking rewrites).
 *
 * Ops that name an axis (nn.bias_add, nn.prelu) or a shape (broadcast_to,
 * expand_dims) are left alone, and so are symbolic shapes.
 */
#include "passes.h"

#include <string.h>

static bool is_reshape(const GNode *n) { return n->kind == GN_CALL && n->op->id == OP_RESHAPE; }

static bool same_shape(const TType *a, const TType *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

static GNode *reshape_to(Graph *ng, GNode *x, const TType *t) {
  GAttrs at = gattrs_new();
  ga_ints(&at, "newshape", t->ndim, t->shape);
  return graph_call(ng, "reshape", 1, &x, at, NULL);
}

/* Leading dimensions of 1 stripped: the rank a broadcast operand needs. */
static int effective_rank(const TType *t) {
  int lead = 0;
  while (lead < t->ndim && t->shape[lead] == 1) lead++;
  return t->ndim - lead;
}

static bool sinkable_op(const GNode *n) {
  if (n->op->pattern != PAT_ELEMWISE && n->op->pattern != PAT_BROADCAST) return false;
  if (n->op->id == OP_BIAS_ADD) return false;
  static const char *const named[] = {"axis", "shape", "num_newaxis"};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    if (gattr_find(&n->attrs, named[i])) return false;
  return true;
}

/* reshape(reshape(x)) -> reshape(x); a reshape to x's own shape -> x */
static GNode *fold_reshape(Graph *ng, GNode *old, GNode *x) {
  if (old->type.sym || x->type.sym) return GRAPH_KEEP;
  GNode *src = is_reshape(x) && !x->args[0]->type.sym ? x->args[0] : x;
  /* (a model input or a constant stays behind a reshape: an output must be a kernel's) */
  if (same_shape(&src->type, &old->type) && src->kind == GN_CALL) return src;
  if (src != x) return reshape_to(ng, src, &old->type);
  return GRAPH_KEEP;
}

/* A transpose that keeps the order of the axes longer than 1 moves no
 * element ([128, 1, 256] -> [1, 128, 256]): a reshape. */
static bool transpose_is_reshape(const GNode *t, const GNode *x) {
  const int64_t *ax;
  int k = gattr_ints(&t->attrs, "axes", &ax);
  int n = x->type.ndim;
  int64_t last = -1;
  for (int i = 0; i < n; i++) {
    int64_t a = k == n ? (ax[i] < 0 ? ax[i] + n : ax[i]) : n - 1 - i;
    if (a < 0 || a >= n) return false;
    if (x->type.shape[a] == 1) continue;
    if (a < last) return false;
    last = a;
  }
  return true;
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  (void)ud;
  if (is_reshape(old)) return fold_reshape(ng, old, args[0]);
  if (old->op->id == OP_TRANSPOSE && !old->type.sym && !args[0]->type.sym && transpose_is_reshape(old, args[0])) {
    GNode *r = fold_reshape(ng, old, args[0]);
    return r == GRAPH_KEEP ? reshape_to(ng, args[0], &old->type) : r;
  }
  if (!sinkable_op(old) || old->type.sym || old->nargs > 8) return GRAPH_KEEP;
  const TType *T = &old->type, *S = NULL;
  for (int i = 0; i < old->nargs; i++) {
    GNode *a = args[i];
    if (a->type.sym) return GRAPH_KEEP;
    if (is_reshape(a) && same_shape(&a->type, T) && !a->args[0]->type.sym) {
      if (!S) S = &a->args[0]->type;
    }
  }
  if (!S || same_shape(S, T)) return GRAPH_KEEP;
  int k = 0; /* trailing dimensions S and T share */
  while (k < S->ndim && k < T->ndim && S->shape[S->ndim - 1 - k] == T->shape[T->ndim - 1 - k]) k++;
  GNode *nargs[8];
  for (int i = 0; i < old->nargs; i++) {
    GNode *a = args[i];
    if (is_reshape(a) && same_shape(&a->type, T) && same_shape(&a->args[0]->type, S)) {
      nargs[i] = a->args[0];
    } else if ((ttype_numel(&a->type) == 1 || effective_rank(&a->type) <= k) &&
               (a->type.ndim <= S->ndim || a->kind == GN_CONST)) {
      nargs[i] = a;
      if (a->type.ndim > S->ndim) { /* [1, 1, N] against S = [M, N] */
        TType t = a->type;
        int drop = a->type.ndim - S->ndim;
        t.ndim = S->ndim;
        memmove(t.shape, a->type.shape + drop, sizeof(int64_t) * (size_t)t.ndim);
        if (!(nargs[i] = reshape_to(ng, a, &t))) return NULL;
      }
    } else if (same_shape(&a->type, T)) { /* a residual of shape T: read it as S (CSE merges twins) */
      if (!(nargs[i] = reshape_to(ng, a, S))) return NULL;
    } else {
      return GRAPH_KEEP;
    }
  }
  GNode *y = graph_call(ng, old->op->name, old->nargs, nargs, old->attrs, old->name);
  if (!y) return NULL;
  if (!same_shape(&y->type, S))
    return kiln_set_error("sink_reshape: %s over %s gave %s (expected %s)", old->op->name, ttype_str(S),
                          ttype_str(&y->type), ttype_str(S)),
           NULL;
  return reshape_to(ng, y, T);
}

Graph *pass_sink_reshape(Graph *g, const PassContext *pc) {
  (void)pc;
  return graph_rewrite(g, rewrite, NULL);
}
