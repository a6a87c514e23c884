/*
 * reduce.c - reductions over a set of axes, and argmax/argmin.
 *
 * A reduction is one compute whose body is a Reduce over one reduce axis
 * per reduced dimension (tag "comm_reduce").  Those that need a final
 * elementwise step (mean, l2, log_sum, log_sum_exp) add an "elemwise"
 * stage that reads the reduction at the same index, which the generic
 * schedules fuse: the reduction is computed inside the epilogue's loop.
 *
 * argmax/argmin take two passes: the max (min) along the axis, then the
 * smallest index whose element equals it (the largest, with
 * select_last_index).  No single-value reducer can carry an (index, value)
 * pair, and the two passes compare exact values, so ties resolve exactly.
 */
#include <string.h>

#include "../topi.h"

static const char *reduce_names[] = {
#define X(n) #n,
    TOPI_REDUCE_OPS(X)
#undef X
};

const char *topi_reduce_name(TopiReduce op) { return op >= 0 && op < TOPI_REDUCE__COUNT ? reduce_names[op] : "?"; }

int topi_reduce_lookup(const char *name) {
  for (int i = 0; name && i < TOPI_REDUCE__COUNT; i++)
    if (!strcmp(reduce_names[i], name)) return i;
  return -1;
}

static Expr *c32(int64_t v) { return ir_i32(v); }

/* The reduced-axis set as flags; error on out-of-range or repeated axes. */
static int axis_flags(const char *op, Tensor *x, int naxes, const int64_t *axes, bool *flags) {
  int nd = x->ndim;
  for (int d = 0; d < nd; d++) flags[d] = naxes == 0;
  if (naxes < 0) return kiln_set_error("%s: negative number of axes %d", op, naxes);
  if (naxes > 0 && !axes) return kiln_set_error("%s: axes not given", op);
  for (int i = 0; i < naxes; i++) {
    int a;
    if (topi_normalize_axis(op, axes[i], nd, &a)) return -1;
    if (flags[a]) return kiln_set_error("%s: axis %lld is listed twice", op, (long long)axes[i]);
    flags[a] = true;
  }
  return 0;
}

/* The output shape, the output vars, and the input indices (reduce axes
 * for reduced dims). */
typedef struct RedShape {
  int ond;
  Expr **oshape, **ovars, **idx;
  int nr;
  IterVar **r;
} RedShape;

static void red_shape(Tensor *x, const bool *flags, bool keepdims, RedShape *rs) {
  int nd = x->ndim;
  rs->ond = 0;
  rs->nr = 0;
  for (int d = 0; d < nd; d++)
    if (!flags[d] || keepdims) rs->ond++;
  rs->oshape = KNEWN(Expr *, rs->ond > 0 ? rs->ond : 1);
  rs->ovars = te_axis_vars(rs->ond, NULL);
  rs->idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  rs->r = KNEWN(IterVar *, nd > 0 ? nd : 1);
  int o = 0;
  for (int d = 0; d < nd; d++) {
    if (flags[d]) {
      IterVar *rv = te_reduce_axis(c32(0), x->shape[d], kfmt("k%d", d));
      rs->r[rs->nr++] = rv;
      rs->idx[d] = rv->var;
      if (keepdims) rs->oshape[o++] = c32(1);
    } else {
      rs->oshape[o] = x->shape[d];
      rs->idx[d] = rs->ovars[o];
      o++;
    }
  }
}

/* Which output a reduction makes: the reduced axes (flags, keepdims), or
 * (rt_shape) one output dimension per input dimension whose sizes are
 * decided at run time (a Reduce's axes given as an input): each is a Var
 * the kernel binds from its output, 1 where the axis is reduced, else the
 * input's size, so the reduce axis over dimension d has the extent
 * size / out and the input index is out_index + k. */
typedef struct RedSpec {
  const bool *flags;
  bool keepdims;
  Expr **rt_shape;
} RedSpec;

static void make_shape(Tensor *x, const RedSpec *sp, RedShape *rs) {
  if (!sp->rt_shape) {
    red_shape(x, sp->flags, sp->keepdims, rs);
    return;
  }
  int nd = x->ndim;
  rs->ond = nd;
  rs->nr = 0;
  rs->oshape = sp->rt_shape;
  rs->ovars = te_axis_vars(nd, NULL);
  rs->idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  rs->r = KNEWN(IterVar *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) {
    int64_t c;
    if (ir_is_const_int(sp->rt_shape[d], &c)) { /* a dimension of 1, or one no value reduces */
      rs->idx[d] = rs->ovars[d];
      continue;
    }
    IterVar *rv = te_reduce_axis(c32(0), ir_floordiv(x->shape[d], sp->rt_shape[d]), kfmt("k%d", d));
    rs->r[rs->nr++] = rv;
    rs->idx[d] = ir_add(rs->ovars[d], rv->var);
  }
}

static Tensor *epilogue(const char *name, Tensor *r, Expr *(*f)(Expr *v, Expr **vars, void *ud), void *ud) {
  if (!r) return NULL;
  Expr **v = te_axis_vars(r->ndim, NULL);
  return te_compute(name, r->ndim, r->shape, v, f(te_read(r, r->ndim, v), v, ud), "elemwise");
}

static Expr *div_count(Expr *v, Expr **vars, void *ud) {
  Expr *count = ud;
  if (dt_is_float(v->dtype)) return ir_div(v, ir_cast(v->dtype, count));
  return ir_div(v, ir_cast(v->dtype, ir_max(count, c32(1))));
}

static Expr *sqrt_of(Expr *v, Expr **vars, void *ud) { return ir_call1(INTRIN_sqrt, v); }
static Expr *log_of(Expr *v, Expr **vars, void *ud) { return ir_call1(INTRIN_log, v); }

typedef struct LseCtx {
  Tensor *max;
} LseCtx;

static Expr *lse_final(Expr *v, Expr **vars, void *ud) {
  LseCtx *c = ud;
  return ir_add(te_read(c->max, c->max->ndim, vars), ir_call1(INTRIN_log, v));
}

static Tensor *reduce_spec(TopiReduce op, Tensor *x, const RedSpec *sp);

Tensor *topi_reduce(TopiReduce op, Tensor *x, int naxes, const int64_t *axes, bool keepdims) {
  if (!x) return NULL;
  if (op < 0 || op >= TOPI_REDUCE__COUNT) return kiln_set_error("reduce: unknown operator %d", (int)op), NULL;
  const char *opn = kfmt("reduce_%s", reduce_names[op]);
  bool flags[64];
  if (x->ndim > 64) return kiln_set_error("%s: rank %d is too large", opn, x->ndim), NULL;
  if (axis_flags(opn, x, naxes, axes, flags)) return NULL;
  RedSpec sp = {flags, keepdims, NULL};
  return reduce_spec(op, x, &sp);
}

Tensor *topi_reduce_runtime(TopiReduce op, Tensor *x, Expr **oshape) {
  if (!x) return NULL;
  if (op < 0 || op >= TOPI_REDUCE__COUNT) return kiln_set_error("reduce: unknown operator %d", (int)op), NULL;
  if (!oshape) return kiln_set_error("reduce_%s: no output shape given", reduce_names[op]), NULL;
  RedSpec sp = {NULL, true, oshape};
  return reduce_spec(op, x, &sp);
}

static Tensor *reduce_spec(TopiReduce op, Tensor *x, const RedSpec *sp) {
  const char *name = reduce_names[op];
  const char *opn = kfmt("reduce_%s", name);
  DType t = x->dtype;
  bool needs_float = op == TOPI_REDUCE_l2 || op == TOPI_REDUCE_log_sum || op == TOPI_REDUCE_log_sum_exp;
  if (needs_float && !dt_is_float(t))
    return kiln_set_error("%s: expected a float tensor, got %s", opn, dt_str(t)), NULL;
  if (dt_is_bool(t) && op != TOPI_REDUCE_max && op != TOPI_REDUCE_min)
    return kiln_set_error("%s: cannot reduce a bool tensor", opn), NULL;
  RedShape rs;
  make_shape(x, sp, &rs);
  Expr *xv = te_read(x, x->ndim, rs.idx);
  if (!xv) return NULL;
  Expr *count = c32(1);
  for (int i = 0; i < rs.nr; i++) count = ir_simplify(ir_mul(count, ir_cast(DT_I32, rs.r[i]->extent)));
  const char *tname = kfmt("T_%s", name);
  const char *rname = kfmt("T_%s_red", name);
  Expr *src = xv;
  ReduceKind rk = RED_SUM;
  switch (op) {
  case TOPI_REDUCE_sum:
  case TOPI_REDUCE_mean:
  case TOPI_REDUCE_log_sum:
    break;
  case TOPI_REDUCE_max: rk = RED_MAX; break;
  case TOPI_REDUCE_min: rk = RED_MIN; break;
  case TOPI_REDUCE_prod: rk = RED_PROD; break;
  case TOPI_REDUCE_l1: src = dt_is_uint(t) ? xv : ir_call1(INTRIN_fabs, xv); break;
  case TOPI_REDUCE_l2:
  case TOPI_REDUCE_sum_square: src = ir_mul(xv, xv); break;
  case TOPI_REDUCE_log_sum_exp: {
    /* the max (same shape as the result), then log of the sum of
     * exp(x - max), plus the max */
    Tensor *mx = te_compute("T_log_sum_exp_max", rs.ond, rs.oshape, rs.ovars,
                            ir_max_reduce(xv, rs.nr, rs.r), "comm_reduce");
    if (!mx) return NULL;
    RedShape r2;
    make_shape(x, sp, &r2);
    Expr *xv2 = te_read(x, x->ndim, r2.idx);
    Expr *e = ir_call1(INTRIN_exp, ir_sub(xv2, te_read(mx, r2.ond, r2.ovars)));
    Tensor *s = te_compute("T_log_sum_exp_sum", r2.ond, r2.oshape, r2.ovars, ir_sum(e, r2.nr, r2.r), "comm_reduce");
    LseCtx c = {mx};
    return epilogue(tname, s, lse_final, &c);
  }
  case TOPI_REDUCE__COUNT:
    KUNREACHABLE();
  }
  Expr *body = ir_reduce(ir_reducer(rk, src->dtype), src, rs.nr, rs.r, NULL);
  bool two_stage = op == TOPI_REDUCE_mean || op == TOPI_REDUCE_l2 || op == TOPI_REDUCE_log_sum;
  Tensor *red = te_compute(two_stage ? rname : tname, rs.ond, rs.oshape, rs.ovars, body, "comm_reduce");
  if (!two_stage || !red) return red;
  if (op == TOPI_REDUCE_mean) return epilogue(tname, red, div_count, count);
  if (op == TOPI_REDUCE_l2) return epilogue(tname, red, sqrt_of, NULL);
  return epilogue(tname, red, log_of, NULL);
}

static Tensor *arg_reduce(const char *op, Tensor *x, int axis_in, bool keepdims, bool last, bool is_max) {
  if (!x) return NULL;
  int axis;
  if (x->ndim == 0) return kiln_set_error("%s: the input is a scalar", op), NULL;
  if (topi_normalize_axis(op, axis_in, x->ndim, &axis)) return NULL;
  if (dt_is_bool(x->dtype)) return kiln_set_error("%s: bool input", op), NULL;
  bool flags[64];
  if (x->ndim > 64) return kiln_set_error("%s: rank %d is too large", op, x->ndim), NULL;
  int64_t ax = axis;
  if (axis_flags(op, x, 1, &ax, flags)) return NULL;
  RedShape rs;
  red_shape(x, flags, keepdims, &rs);
  Expr *xv = te_read(x, x->ndim, rs.idx);
  if (!xv) return NULL;
  Tensor *best = te_compute(is_max ? "T_argmax_max" : "T_argmin_min", rs.ond, rs.oshape, rs.ovars,
                            is_max ? ir_max_reduce(xv, rs.nr, rs.r) : ir_min_reduce(xv, rs.nr, rs.r), "comm_reduce");
  if (!best) return NULL;
  RedShape r2;
  red_shape(x, flags, keepdims, &r2);
  Expr *x2 = te_read(x, x->ndim, r2.idx);
  Expr *k = ir_cast(DT_I64, r2.r[0]->var);
  Expr *n1 = ir_sub(ir_cast(DT_I64, x->shape[axis]), ir_i64(1));
  /* no match (NaN) gives the last index (first with select_last_index) */
  Expr *src = ir_select(ir_eq(x2, te_read(best, r2.ond, r2.ovars)), k, last ? ir_i64(0) : n1);
  Expr *body = last ? ir_max_reduce(src, 1, r2.r) : ir_min_reduce(src, 1, r2.r);
  return te_compute(is_max ? "T_argmax" : "T_argmin", r2.ond, r2.oshape, r2.ovars, body, "comm_reduce");
}

Tensor *topi_argmax(Tensor *x, int axis, bool keepdims, bool select_last_index) {
  return arg_reduce("argmax", x, axis, keepdims, select_last_index, true);
}

Tensor *topi_argmin(Tensor *x, int axis, bool keepdims, bool select_last_index) {
  return arg_reduce("argmin", x, axis, keepdims, select_last_index, false);
}
