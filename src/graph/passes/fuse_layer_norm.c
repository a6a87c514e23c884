/*
 * fuse_layer_norm.c - recognize a layer norm written out in elementary
 * ops and make it one nn.layer_norm call.
 *
 * PyTorch exports nn.LayerNorm below ONNX opset 17 (and ConvNeXt's
 * channels-last norm at any opset) as
 *
 *     m = mean(x, axes, keepdims=1)      d = x - m
 *     v = mean(d ^ 2, axes, keepdims=1)  y = d / sqrt(v + eps)
 *     y * gamma + beta                   (the affine part, optional)
 *
 * Fused by pattern (fuse.c), that is two kernels: a reduction cannot take a
 * second reduction as its epilogue, so `d` is written to memory and read
 * back by the variance kernel, which also recomputes its mean without
 * vectorizing it.  This pass rewrites the whole pattern to
 * nn.layer_norm(x, gamma, beta, axis, epsilon), whose compute (topi's
 * layer_norm: two row reductions and the normalized output, one row at a
 * time) the row schedule runs as one vectorized kernel, each row of x
 * read from cache after its first pass (TVM reaches the same single
 * kernel from the other side: its LayerNorm is an op, and only
 * SimplifyInference expands it on targets without a norm kernel).
 *
 * A match needs: both means over the same set of axes, which is a
 * contiguous trailing range [a, rank) (layer_norm's axis); keepdims; the
 * same `d` under the square and the division; the square as power(d, 2)
 * or d * d; a scalar constant eps; float, static shapes.  gamma (then
 * beta) are taken in when they broadcast to the normalized trailing
 * dimensions (rank at most rank - a, each dimension equal or 1) and the
 * node they apply to has no other use; otherwise they stay ops of their
 * own after the norm, which is still correct.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  int *uses; /* of the old graph, by id */
} Fln;

static bool is_op(const GNode *n, OpId id) { return n && n->kind == GN_CALL && n->op->id == id; }

/* The first reduced axis when a keepdims mean reduces exactly [a, rank);
 * -1 otherwise. */
static int trailing_mean_axis(const GNode *m) {
  if (!is_op(m, OP_MEAN) || m->type.sym) return -1;
  if (gattr_int(&m->attrs, "keepdims", 0) != 1 || gattr_int(&m->attrs, "exclude", 0) != 0) return -1;
  int r = m->args[0]->type.ndim;
  const int64_t *ax;
  int k = gattr_ints(&m->attrs, "axis", &ax);
  if (k <= 0 || k > r) return -1;
  bool seen[GRAPH_MAX_DIMS] = {false};
  for (int i = 0; i < k; i++) {
    int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
    if (a < 0 || a >= r || seen[a]) return -1;
    seen[a] = true;
  }
  for (int a = r - k; a < r; a++)
    if (!seen[a]) return -1;
  return r - k;
}

/* eps when e is add(v, eps) or add(eps, v) with a scalar constant eps */
static GNode *add_scalar(const GNode *e, double *eps) {
  if (!is_op(e, OP_ADD)) return NULL;
  for (int i = 0; i < 2; i++)
    if (gnode_is_scalar_const(e->args[i]) && !gnode_is_scalar_const(e->args[1 - i])) {
      *eps = gnode_scalar_value(e->args[i]);
      return e->args[1 - i];
    }
  return NULL;
}

static bool is_square_of(const GNode *p, const GNode *d) {
  if (is_op(p, OP_POWER))
    return p->args[0] == d && gnode_is_scalar_const(p->args[1]) && gnode_scalar_value(p->args[1]) == 2.0;
  return is_op(p, OP_MULTIPLY) && p->args[0] == d && p->args[1] == d;
}

/* divide(x - mean(x), sqrt(mean((x - mean(x))^2) + eps)) -> layer_norm(x) */
static GNode *match_normalize(Graph *ng, GNode **args) {
  GNode *d = args[0], *s = args[1];
  if (!is_op(d, OP_SUBTRACT) || !is_op(s, OP_SQRT)) return GRAPH_KEEP;
  GNode *x = d->args[0], *m = d->args[1];
  if (x->type.sym || d->type.sym || !dt_is_float(x->type.dtype) || !ttype_eq(&x->type, &d->type)) return GRAPH_KEEP;
  int a = trailing_mean_axis(m);
  if (a < 0 || m->args[0] != x) return GRAPH_KEEP;
  double eps;
  GNode *v = add_scalar(s->args[0], &eps);
  if (!v || trailing_mean_axis(v) != a || !is_square_of(v->args[0], d)) return GRAPH_KEEP;
  if (!(eps >= 0)) return GRAPH_KEEP; /* a NaN or negative eps: keep the ops' own semantics */
  GAttrs at = gattrs_new();
  ga_int(&at, "axis", a - x->type.ndim);
  ga_float(&at, "epsilon", eps);
  return graph_call(ng, "nn.layer_norm", 1, &x, at, NULL);
}

/* t broadcasts to the dimensions [a, rank) of x without widening it */
static bool fits_trailing(const GNode *t, const GNode *x, int a) {
  if (t->type.sym || !dt_eq(t->type.dtype, x->type.dtype)) return false;
  int n = x->type.ndim - a;
  if (t->type.ndim > n) return false;
  for (int i = 0; i < t->type.ndim; i++) {
    int64_t e = t->type.shape[i], xe = x->type.shape[x->type.ndim - t->type.ndim + i];
    if (e != 1 && e != xe) return false;
  }
  return true;
}

/* multiply(layer_norm(x), gamma) -> layer_norm(x, gamma);
 * add(layer_norm(x, gamma), beta) -> layer_norm(x, gamma, beta) */
static GNode *match_affine(Graph *ng, GNode *old, GNode **args, const Fln *f) {
  int want = old->op->id == OP_MULTIPLY ? 1 : 2;
  for (int i = 0; i < 2; i++) {
    GNode *ln = args[i], *t = args[1 - i];
    if (!is_op(ln, OP_LAYER_NORM) || ln->nargs != want || f->uses[old->args[i]->id] != 1) continue;
    GNode *x = ln->args[0];
    int a = (int)gattr_int(&ln->attrs, "axis", -1);
    if (a < 0) a += x->type.ndim;
    if (!ttype_eq(&old->type, &ln->type) || !fits_trailing(t, x, a)) continue;
    GNode *nargs[3] = {x, ln->args[1], t};
    nargs[want] = t;
    return graph_call(ng, "nn.layer_norm", want + 1, nargs, gattrs_copy(&ln->attrs), old->name);
  }
  return GRAPH_KEEP;
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  const Fln *f = ud;
  switch (old->op->id) {
  case OP_DIVIDE: return match_normalize(ng, args);
  case OP_MULTIPLY:
  case OP_ADD: return match_affine(ng, old, args, f);
  default: return GRAPH_KEEP;
  }
}

Graph *pass_fuse_layer_norm(Graph *g, const PassContext *pc) {
  (void)pc;
  Fln f = {graph_use_counts(g)};
  if (!f.uses) return NULL;
  Graph *ng = graph_rewrite(g, rewrite, &f);
  free(f.uses);
  return ng;
}
