/*
 * autodiff.c - reverse-mode differentiation of a graph (TVM's relay
 * gradient pass, in the form ONNX's Gradient operator asks for).
 *
 * graph_gradient(g, y, xs) adds to g the nodes that compute, for each x,
 * the gradient of the sum of y's elements with respect to x: the adjoint
 * of y is a tensor of ones, and the calls on a path from some x to y are
 * visited in reverse topological order, each passing its adjoint to its
 * arguments through the op's vector-Jacobian product (a row of `rules`
 * below, keyed by the op's row in the op table).  An argument's
 * contribution has the broadcast shape of the call; it is summed back to
 * the argument's shape (the dimensions broadcasting added or stretched)
 * and added to what the argument already received.  An x that y does not
 * depend on gets zeros.
 *
 * Only the calls on a path from an x to y need a rule; every other value
 * (a constant, an input not among xs, a call that no x reaches) is a
 * constant of the differentiation.  A call on a path whose op has no rule,
 * a non-float tensor on a path and a symbolic shape are errors naming the
 * op and the node: the gradient is never silently wrong or partial.
 */
#include <string.h>

#include "graph.h"

/* ---- building blocks (each NULL + error on failure, NULL in -> NULL out) ---- */

static GNode *call(Graph *g, const char *op, int nargs, GNode **args, GAttrs a) {
  for (int i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  return graph_call(g, op, nargs, args, a, NULL);
}
static GNode *un(Graph *g, const char *op, GNode *a) { return call(g, op, 1, &a, gattrs_new()); }
static GNode *bin(Graph *g, const char *op, GNode *a, GNode *b) {
  GNode *args[2] = {a, b};
  return call(g, op, 2, args, gattrs_new());
}
static GNode *scalar_like(Graph *g, double v, const GNode *x) { return graph_scalar(g, v, x->type.dtype); }

/* v broadcast to shape t's (v's shape broadcasts to it). */
static GNode *broadcast_to(Graph *g, GNode *v, const TType *t) {
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", t->ndim, t->shape);
  return call(g, "broadcast_to", 1, &v, a);
}

static GNode *reshape(Graph *g, GNode *v, const TType *t) {
  if (!v || ttype_eq(&v->type, t)) return v;
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", t->ndim, t->shape);
  return call(g, "reshape", 1, &v, a);
}

/* op(a) op(b) for matrices, op a transpose where the flag is set */
static GNode *matmul(Graph *g, GNode *a, GNode *b, bool ta, bool tb) {
  GAttrs at = gattrs_new();
  ga_int(&at, "transpose_a", ta);
  ga_int(&at, "transpose_b", tb);
  GNode *args[2] = {a, b};
  return call(g, "nn.matmul", 2, args, at);
}

/* The contribution c (of the call's broadcast shape) summed back to the
 * shape of the argument `to`: NumPy broadcasting prepended dimensions and
 * stretched dimensions of size 1; both are summed away. */
static GNode *unbroadcast(Graph *g, GNode *c, const GNode *to) {
  if (!c) return NULL;
  const TType *ct = &c->type, *tt = &to->type;
  if (ttype_eq(ct, tt)) return c;
  int64_t axes[GRAPH_MAX_DIMS];
  int na = 0, lead = ct->ndim - tt->ndim;
  for (int d = 0; d < ct->ndim; d++)
    if (d < lead || (tt->shape[d - lead] == 1 && ct->shape[d] != 1)) axes[na++] = d;
  GNode *s = c;
  if (na) {
    GAttrs a = gattrs_new();
    ga_ints(&a, "axis", na, axes);
    ga_int(&a, "keepdims", 1);
    s = call(g, "sum", 1, &c, a);
  }
  return reshape(g, s, tt);
}

/* ---- the vector-Jacobian products ---- */

/* n's adjoint is gy; write each argument's contribution into ga[i] (any
 * shape that broadcasts to the call's; NULL for an argument that is not
 * differentiable).  -1 + error when the call's form is not handled. */
typedef int (*VjpFn)(Graph *g, GNode *n, GNode *gy, GNode **ga);

#define A0 (n->args[0])
#define A1 (n->args[1])

static int vjp_add(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  (void)g, (void)n;
  ga[0] = ga[1] = gy;
  return 0;
}
static int vjp_subtract(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  (void)n;
  ga[0] = gy;
  ga[1] = un(g, "negative", gy);
  return 0;
}
static int vjp_multiply(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = bin(g, "multiply", gy, A1);
  ga[1] = bin(g, "multiply", gy, A0);
  return 0;
}
/* y = a / b: dy/da = 1/b, dy/db = -y/b */
static int vjp_divide(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = bin(g, "divide", gy, A1);
  ga[1] = un(g, "negative", bin(g, "divide", bin(g, "multiply", gy, n), A1));
  return 0;
}
/* y = a ^ b: dy/da = b a^(b-1), dy/db = y log(a) */
static int vjp_power(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  GNode *bm1 = bin(g, "subtract", A1, scalar_like(g, 1, A1));
  ga[0] = bin(g, "multiply", gy, bin(g, "multiply", A1, bin(g, "power", A0, bm1)));
  ga[1] = bin(g, "multiply", gy, bin(g, "multiply", n, un(g, "log", A0)));
  return 0;
}
static int vjp_negative(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  (void)n;
  ga[0] = un(g, "negative", gy);
  return 0;
}
static int vjp_exp(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = bin(g, "multiply", gy, n);
  return 0;
}
static int vjp_log(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = bin(g, "divide", gy, A0);
  return 0;
}
static int vjp_sqrt(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = bin(g, "divide", gy, bin(g, "multiply", n, scalar_like(g, 2, n)));
  return 0;
}
static int vjp_reciprocal(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = un(g, "negative", bin(g, "multiply", gy, bin(g, "multiply", n, n)));
  return 0;
}
static int vjp_tanh(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = bin(g, "multiply", gy, bin(g, "subtract", scalar_like(g, 1, n), bin(g, "multiply", n, n)));
  return 0;
}
static int vjp_sigmoid(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = bin(g, "multiply", gy, bin(g, "multiply", n, bin(g, "subtract", scalar_like(g, 1, n), n)));
  return 0;
}
static int vjp_relu(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  GNode *args[3] = {bin(g, "greater", A0, scalar_like(g, 0, A0)), gy, scalar_like(g, 0, n)};
  ga[0] = call(g, "where", 3, args, gattrs_new());
  return 0;
}
static int vjp_abs(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  (void)n;
  ga[0] = bin(g, "multiply", gy, un(g, "sign", A0));
  return 0;
}
static int vjp_sin(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  (void)n;
  ga[0] = bin(g, "multiply", gy, un(g, "cos", A0));
  return 0;
}
static int vjp_cos(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  (void)n;
  ga[0] = un(g, "negative", bin(g, "multiply", gy, un(g, "sin", A0)));
  return 0;
}
/* shape-only ops: the adjoint takes the argument's shape back */
static int vjp_reshape(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  ga[0] = reshape(g, gy, &A0->type);
  return 0;
}
static int vjp_transpose(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  const int64_t *ax;
  int na = gattr_ints(&n->attrs, "axes", &ax), r = n->type.ndim;
  int64_t inv[GRAPH_MAX_DIMS];
  for (int d = 0; d < r; d++) inv[na ? ax[d] < 0 ? ax[d] + r : ax[d] : r - 1 - d] = d;
  GAttrs a = gattrs_new();
  ga_ints(&a, "axes", r, inv);
  ga[0] = call(g, "transpose", 1, &gy, a);
  return 0;
}
/* sum and mean: the adjoint spread over the reduced elements */
static int vjp_reduce(Graph *g, GNode *n, GNode *gy, GNode **ga, bool mean) {
  const TType *xt = &A0->type;
  if (gattr_int(&n->attrs, "exclude", 0)) return kiln_set_error("a reduction with exclude=True has no gradient rule");
  const int64_t *ax;
  int na = gattr_ints(&n->attrs, "axis", &ax);
  bool red[GRAPH_MAX_DIMS] = {0};
  int64_t count = 1;
  for (int d = 0; d < xt->ndim; d++) {
    bool r = na == 0;
    for (int i = 0; i < na; i++) r = r || (ax[i] < 0 ? ax[i] + xt->ndim : ax[i]) == d;
    red[d] = r;
    if (r) count *= xt->shape[d];
  }
  TType kept = *xt; /* the result with the reduced dimensions kept as 1 */
  for (int d = 0; d < xt->ndim; d++)
    if (red[d]) kept.shape[d] = 1;
  GNode *s = reshape(g, gy, &kept);
  if (mean) s = bin(g, "divide", s, scalar_like(g, (double)(count ? count : 1), n));
  ga[0] = broadcast_to(g, s, xt);
  return 0;
}
static int vjp_sum(Graph *g, GNode *n, GNode *gy, GNode **ga) { return vjp_reduce(g, n, gy, ga, false); }
static int vjp_mean(Graph *g, GNode *n, GNode *gy, GNode **ga) { return vjp_reduce(g, n, gy, ga, true); }
/* C = op(A) op(B) on matrices (op: transpose when the flag is set) */
static int vjp_matmul2(Graph *g, GNode *n, GNode *gy, GNode **ga, bool ta, bool tb) {
  if (A0->type.ndim != 2 || A1->type.ndim != 2)
    return kiln_set_error("the gradient rule takes two matrices, got %s and %s", ttype_str(&A0->type),
                          ttype_str(&A1->type));
  (void)n;
  ga[0] = ta ? matmul(g, A1, gy, tb, true) : matmul(g, gy, A1, false, !tb);
  ga[1] = tb ? matmul(g, gy, A0, true, ta) : matmul(g, A0, gy, !ta, false);
  return 0;
}
static int vjp_matmul(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  return vjp_matmul2(g, n, gy, ga, gattr_int(&n->attrs, "transpose_a", 0), gattr_int(&n->attrs, "transpose_b", 0));
}
/* dense(x, w) = x w^T */
static int vjp_dense(Graph *g, GNode *n, GNode *gy, GNode **ga) { return vjp_matmul2(g, n, gy, ga, false, true); }
static int vjp_bias_add(Graph *g, GNode *n, GNode *gy, GNode **ga) {
  int64_t axis = gattr_int(&n->attrs, "axis", 1), r = n->type.ndim;
  if (axis < 0) axis += r;
  int64_t axes[GRAPH_MAX_DIMS];
  int na = 0;
  for (int d = 0; d < r; d++)
    if (d != axis) axes[na++] = d;
  ga[0] = gy;
  GAttrs a = gattrs_new();
  ga_ints(&a, "axis", na, axes);
  ga[1] = na ? call(g, "sum", 1, &gy, a) : gy;
  return 0;
}

#undef A0
#undef A1

typedef struct VjpRule {
  const char *op; /* a row of the op table (checked by graph_gradient_rules_check) */
  VjpFn vjp;
} VjpRule;

static const VjpRule rules[] = {
    {"add", vjp_add},           {"subtract", vjp_subtract}, {"multiply", vjp_multiply}, {"divide", vjp_divide},
    {"power", vjp_power},       {"negative", vjp_negative}, {"exp", vjp_exp},           {"log", vjp_log},
    {"sqrt", vjp_sqrt},         {"reciprocal", vjp_reciprocal}, {"tanh", vjp_tanh},     {"sigmoid", vjp_sigmoid},
    {"nn.relu", vjp_relu},      {"abs", vjp_abs},           {"sin", vjp_sin},           {"cos", vjp_cos},
    {"reshape", vjp_reshape},   {"squeeze", vjp_reshape},   {"expand_dims", vjp_reshape}, {"nn.batch_flatten", vjp_reshape},
    {"transpose", vjp_transpose}, {"sum", vjp_sum},         {"mean", vjp_mean},         {"nn.matmul", vjp_matmul},
    {"nn.dense", vjp_dense},    {"nn.bias_add", vjp_bias_add},
    {NULL, NULL},
};

static const VjpRule *rule_of(const OpDef *op) {
  for (const VjpRule *r = rules; r->op; r++)
    if (op_lookup(r->op) == op) return r;
  return NULL;
}

int graph_gradient_rules_check(void) {
  for (const VjpRule *r = rules; r->op; r++)
    if (!op_lookup(r->op)) return kiln_set_error("gradient rule for '%s': the op table has no such op", r->op);
  return 0;
}

static const char *rule_names(void) {
  StrBuf sb = {0};
  for (const VjpRule *r = rules; r->op; r++) sb_printf(&sb, "%s%s", r == rules ? "" : ", ", r->op);
  const char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

/* ---- the pass over the graph ---- */

int graph_gradient(Graph *g, GNode *y, int nx, GNode *const *xs, GNode **dxs) {
  kiln_arena_push(g->arena);
  int n = y->id + 1, rc = -1;
  /* on[i]: node i depends on some x (forward), and y depends on it (backward) */
  bool *from_x = KNEWN(bool, n), *to_y = KNEWN(bool, n);
  GNode **adj = KNEWN(GNode *, n);
  for (int i = 0; i < nx; i++)
    if (xs[i]->id < n) from_x[xs[i]->id] = true;
  for (int i = 0; i < n; i++) {
    GNode *v = g->nodes.data[i];
    for (int a = 0; v->kind == GN_CALL && a < v->nargs && !from_x[i]; a++) from_x[i] = from_x[v->args[a]->id];
  }
  to_y[y->id] = true;
  for (int i = n - 1; i >= 0; i--) {
    GNode *v = g->nodes.data[i];
    if (!to_y[i] || v->kind != GN_CALL) continue;
    for (int a = 0; a < v->nargs; a++) to_y[v->args[a]->id] = true;
  }
  for (int i = 0; i < n; i++) {
    GNode *v = g->nodes.data[i];
    if (!(from_x[i] && to_y[i])) continue;
    if (ttype_is_symbolic(&v->type)) {
      kiln_set_error("the gradient needs static shapes, but '%s' is %s: give the sizes with --input-shapes", v->name,
                     ttype_str(&v->type));
      goto out;
    }
    if (!dt_is_float(v->type.dtype)) {
      kiln_set_error("the gradient flows through '%s' (%s), which is not a float tensor", v->name,
                     ttype_str(&v->type));
      goto out;
    }
  }
  if (from_x[y->id]) {
    adj[y->id] = broadcast_to(g, scalar_like(g, 1, y), &y->type);
    if (!adj[y->id]) goto out;
  }
  for (int i = y->id; i >= 0; i--) {
    GNode *v = g->nodes.data[i];
    if (v->kind != GN_CALL || !adj[i] || !from_x[i]) continue;
    const VjpRule *r = rule_of(v->op);
    if (!r) {
      kiln_set_error("the gradient flows through %s (node '%s'), which has no derivative rule (Kiln differentiates: "
                     "%s)", v->op->name, v->name, rule_names());
      goto out;
    }
    GNode *ga[8] = {0};
    if (v->nargs > 8 || r->vjp(g, v, adj[i], ga)) {
      kiln_error_context("the derivative of %s (node '%s')", v->op->name, v->name);
      goto out;
    }
    for (int a = 0; a < v->nargs; a++) {
      GNode *arg = v->args[a];
      if (!from_x[arg->id]) continue; /* a constant of the differentiation */
      GNode *c = unbroadcast(g, ga[a], arg);
      if (!c) {
        if (!kiln_get_error()[0]) kiln_set_error("no derivative for argument %d", a);
        kiln_error_context("the derivative of %s (node '%s') for its argument %d", v->op->name, v->name, a);
        goto out;
      }
      adj[arg->id] = adj[arg->id] ? bin(g, "add", adj[arg->id], c) : c;
      if (!adj[arg->id]) goto out;
    }
  }
  for (int i = 0; i < nx; i++) {
    GNode *d = xs[i]->id < n ? adj[xs[i]->id] : NULL;
    dxs[i] = d ? d : broadcast_to(g, scalar_like(g, 0, xs[i]), &xs[i]->type);
    if (!dxs[i]) goto out;
  }
  rc = 0;
out:
  kiln_arena_pop();
  return rc;
}
