/*
 * simplify_bound.c - the Analyzer: what is known of variables, and the
 * ranges of expressions.
 *
 * Each variable has a constant range, bound by the caller or by an enclosing
 * loop (an_set / an_restore scope it); an_bound maps an expression to the
 * interval of its values, node by node, with INT64_MIN / INT64_MAX standing
 * for minus / plus infinity (simplify.c's essay has the rules: signed
 * arithmetic is assumed not to overflow, unsigned results that could wrap
 * widen to the type's range).
 */
#include "simplify_internal.h"

#include <stdlib.h>
#include <string.h>

/* Set var's range; returns the previous one (NULL if none) for
 * an_restore, so scoped facts (a loop body, an if branch) can be undone. */
Iv *an_set(Analyzer *an, Expr *var, Iv iv) {
  Iv *old = pm_get(&an->vars, var);
  Iv *p = xmalloc(sizeof *p);
  *p = iv;
  pv_push(&an->owned, p);
  pm_put(&an->vars, var, p);
  return old;
}

void an_restore(Analyzer *an, Expr *var, Iv *old) { pm_put(&an->vars, var, old); }

Iv an_var_iv(Analyzer *an, Expr *v) {
  Iv *p = pm_get(&an->vars, v);
  return p ? *p : type_iv(v->dtype);
}

/* ------------------------------------------------------------------ */
/* Bounds                                                              */
/* ------------------------------------------------------------------ */

static Iv bound_mod(Iv a, Iv b, bool floor_) {
  if (!floor_) {
    /* Truncating: the sign of the dividend, |r| <= |a| and |r| < |b|. */
    int64_t m = is_inf(b.lo) || is_inf(b.hi) ? POS_INF : max64(llabs(b.lo), llabs(b.hi)) - 1;
    int64_t least = b.lo > 0 ? b.lo : b.hi < 0 ? -b.hi : 0; /* smallest |b| */
    if (m < 0) return iv_full();                             /* divisor is 0 */
    if (a.lo >= 0) return least > 0 && a.hi < least ? a : iv_make(0, min64(m, a.hi));
    if (a.hi <= 0)
      return least > 0 && end_neg(a.lo) < least ? a : iv_make(max64(end_neg(m), a.lo), 0);
    return iv_make(max64(end_neg(m), a.lo), min64(m, a.hi));
  }
  if (b.lo > 0) { /* floor, positive divisor: [0, b) */
    if (a.lo >= 0 && a.hi < b.lo) return a;
    int64_t hi = end_add(b.hi, -1, POS_INF);
    return iv_make(0, a.lo >= 0 ? min64(hi, a.hi) : hi);
  }
  if (b.hi < 0) { /* floor, negative divisor: (b, 0] */
    if (a.hi <= 0 && a.lo > b.hi) return a;
    return iv_make(end_add(b.lo, 1, NEG_INF), 0);
  }
  return iv_full();
}

static Iv bound_raw(Analyzer *an, Expr *e) {
  DType t = e->dtype;
  switch (e->kind) {
  case EK_IntImm:
    if (t.code == kDLUInt && e->int_value < 0) return iv_make(0, POS_INF); /* uint64 >= 2^63 */
    return iv_make(e->int_value, e->int_value);
  case EK_Var:
    return an_var_iv(an, e);
  case EK_Add:
    return iv_add(an_bound(an, e->bin.a), an_bound(an, e->bin.b));
  case EK_Sub:
    return iv_sub(an_bound(an, e->bin.a), an_bound(an, e->bin.b));
  case EK_Mul:
    return iv_mul(an_bound(an, e->bin.a), an_bound(an, e->bin.b));
  case EK_Div:
  case EK_FloorDiv:
    return iv_div(an_bound(an, e->bin.a), an_bound(an, e->bin.b), e->kind == EK_FloorDiv);
  case EK_Mod:
  case EK_FloorMod:
    return bound_mod(an_bound(an, e->bin.a), an_bound(an, e->bin.b), e->kind == EK_FloorMod);
  case EK_Min: {
    Iv a = an_bound(an, e->bin.a), b = an_bound(an, e->bin.b);
    return iv_make(min64(a.lo, b.lo), min64(a.hi, b.hi));
  }
  case EK_Max: {
    Iv a = an_bound(an, e->bin.a), b = an_bound(an, e->bin.b);
    return iv_make(max64(a.lo, b.lo), max64(a.hi, b.hi));
  }
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
  case EK_And:
  case EK_Or:
  case EK_Not:
    return iv_make(0, 1);
  case EK_Select:
    return iv_union(an_bound(an, e->select.t), an_bound(an, e->select.f));
  case EK_Cast: {
    DType from = e->bin.a->dtype;
    if (dt_is_float(from) || !(from.code == kDLInt || from.code == kDLUInt)) return type_iv(t);
    Iv a = an_bound(an, e->bin.a);
    if (dt_is_bool(t)) return a.lo > 0 || a.hi < 0 ? iv_make(1, 1) : iv_make(0, 1);
    /* A value that fits the target type is unchanged by the cast; one that
     * may not wraps, so only the type's own range is known. */
    if (!is_inf(a.lo) && !is_inf(a.hi) && a.lo >= dt_int_min(t) && a.hi <= dt_int_max(t)) return a;
    if (t.bits >= 64 && is_signed(t) == is_signed(from) && from.bits <= t.bits) return a;
    return type_iv(t);
  }
  case EK_Let: {
    Iv v = an_bound(an, e->let.value);
    Iv *old = an_set(an, e->let.var, v);
    Iv r = an_bound(an, e->let.body);
    an_restore(an, e->let.var, old);
    return r;
  }
  case EK_Ramp: {
    Iv s = an_bound(an, e->ramp.stride);
    return iv_add(an_bound(an, e->ramp.base), iv_mul(s, iv_make(0, e->ramp.lanes - 1)));
  }
  case EK_Broadcast:
    return an_bound(an, e->bcast.value);
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Call:
  case EK_Read:
  case EK_Load:
  case EK_Reduce:
    return type_iv(t);
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* The range of e's values (for a vector: of every lane). */
Iv an_bound(Analyzer *an, Expr *e) {
  DType s = dt_scalar(e->dtype);
  if (!(s.code == kDLInt || s.code == kDLUInt)) return iv_full();
  Iv r = bound_raw(an, e);
  if (r.lo > r.hi) r = type_iv(s); /* an empty range only arises from a dead branch */
  return iv_fit(r, s);
}

/* ------------------------------------------------------------------ */
/* Public analyzer API                                                 */
/* ------------------------------------------------------------------ */

Analyzer *analyzer_new(void) {
  Analyzer *an = xcalloc(1, sizeof *an);
  return an;
}

void analyzer_free(Analyzer *an) {
  if (!an) return;
  for (int i = 0; i < an->owned.len; i++) free(an->owned.data[i]);
  pv_free(&an->owned);
  pm_free(&an->vars);
  free(an);
}

/* The values of a loop variable over [min, min + extent), from simplified
 * endpoints; possibly unbounded on one side. */
Iv an_loop_iv(Analyzer *an, Expr *mn, Expr *ex) {
  Iv m = an_bound(an, mn), x = an_bound(an, ex);
  Iv r = iv_make(m.lo, end_add(m.hi, end_add(x.hi, -1, POS_INF), POS_INF));
  if (r.hi < r.lo) r.hi = r.lo; /* an empty loop: its body never runs */
  return r;
}

static Iv range_iv(Analyzer *an, Expr *min, Expr *extent) {
  Expr *mn = an_simp(an, min), *ex = an_simp(an, extent);
  if (!mn || !ex) return iv_full();
  return an_loop_iv(an, mn, ex);
}

void analyzer_bind_range(Analyzer *an, Expr *var, Expr *min, Expr *extent) {
  an_set(an, var, range_iv(an, min, extent));
}

void analyzer_bind_const(Analyzer *an, Expr *var, int64_t lo, int64_t hi) {
  an_set(an, var, iv_make(lo, hi));
}

bool analyzer_const_bound(Analyzer *an, Expr *e, int64_t *lo, int64_t *hi) {
  Expr *s = an_simp(an, e);
  if (!s || !(s->dtype.code == kDLInt || s->dtype.code == kDLUInt)) return false;
  Iv r = an_bound(an, s);
  if (is_inf(r.lo) || is_inf(r.hi)) return false;
  if (lo) *lo = r.lo;
  if (hi) *hi = r.hi;
  return true;
}

bool analyzer_can_prove(Analyzer *an, Expr *cond) {
  Expr *s = an_simp(an, cond);
  if (s && s->kind == EK_Broadcast) s = s->bcast.value;
  return is_true(s);
}
