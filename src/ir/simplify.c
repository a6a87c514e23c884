/*
 * simplify.c - the arithmetic simplifier and the Analyzer it reasons with.
 *
 * Every kernel Kiln generates passes through here, so the first rule is that
 * a rewrite must never change what an expression computes; the second is
 * that the output is deterministic (it ends up in golden texts).
 *
 * How it works.  simp() rewrites bottom-up: children first, then the rules
 * of the node's kind.
 *
 *  - Constants fold with C's semantics for the node's type: integers wrap to
 *    the type's width (computed on uint64), Div/Mod truncate, FloorDiv and
 *    FloorMod floor, floats compute in double and round to float32 when the
 *    type is float32.  A division by zero, or INT_MIN / -1 (which traps on
 *    x86), is left unfolded.
 *
 *  - Integer +, -, and * by a constant go through a linear form: a sum of
 *    coefficient x atom plus a constant, where an atom is anything not
 *    linear (a variable, a load, a floordiv, a product of two non-constants,
 *    ...).  Equal atoms (structurally) combine, zero terms vanish, and the
 *    form is rebuilt in a canonical order: positive terms by decreasing
 *    coefficient, then by a structural order that compares variables by name
 *    (never by address, so output does not depend on allocation), then the
 *    constant, then the negative terms, as TVM's canonical simplifier prints
 *    them: `((x*4) + y) + 3`, `(i*8 + j) - k`.  Coefficients are kept modulo
 *    2^bits (sign-extended), so the form is exact for unsigned wrap-around
 *    too.
 *
 *  - Facts about values come from interval arithmetic (bound()): each
 *    variable has a constant range bound by the caller or by an enclosing
 *    loop, and each node maps ranges to a range, with INT64_MIN / INT64_MAX
 *    standing for minus / plus infinity.  Like TVM, the reasoning assumes
 *    signed integer arithmetic does not overflow (it is undefined behaviour
 *    in the C we generate); unsigned results that could wrap widen to the
 *    type's whole range.
 *
 *  - Comparisons of signed integers are decided from the range of the
 *    simplified difference a - b, and otherwise normalized to
 *    `positive terms OP negative terms - constant`.  min/max pick a side
 *    when the difference's sign is known.  floordiv/floormod by a positive
 *    constant pull out terms whose coefficients are multiples of the divisor
 *    and fold when the remainder's range fits in one period; Div/Mod get the
 *    same treatment only when the dividend is provably non-negative.
 *
 * Deliberately conservative: unsigned division and comparisons use only
 * per-operand ranges; division by negative or non-constant divisors is left
 * alone; floats fold constants and drop `x*1`, `x + 0`, `x - 0`, `x/1` but
 * are never reassociated; intrinsic calls are left as they are.  Nothing
 * is memoized, so a DAG that shares subtrees costs its size as a tree.
 *
 * ir_simplify_stmt walks statements with one analyzer: a loop's variable is
 * bound to the loop's range inside its body, an `if` narrows simple
 * `var OP const` facts inside its branches, and a thread_extent attribute
 * bounds its thread variable.
 */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------------ */
/* Intervals                                                           */
/* ------------------------------------------------------------------ */

#define NEG_INF INT64_MIN
#define POS_INF INT64_MAX

typedef struct Iv {
  int64_t lo, hi; /* NEG_INF / POS_INF: unbounded on that side */
} Iv;

static Iv iv_make(int64_t lo, int64_t hi) {
  Iv r = {lo, hi};
  return r;
}
static Iv iv_full(void) { return iv_make(NEG_INF, POS_INF); }
static bool is_inf(int64_t v) { return v == NEG_INF || v == POS_INF; }

/* A finite result clamps to the infinities when it reaches them: widening
 * is always sound. */
static int64_t sat(__int128 v) {
  if (v <= (__int128)NEG_INF) return NEG_INF;
  if (v >= (__int128)POS_INF) return POS_INF;
  return (int64_t)v;
}

/* Endpoint sum; `inf_if_mixed` is the result for -inf + +inf (the side
 * that keeps the interval sound). */
static int64_t end_add(int64_t a, int64_t b, int64_t inf_if_mixed) {
  bool ai = is_inf(a), bi = is_inf(b);
  if (ai && bi && a != b) return inf_if_mixed;
  if (ai) return a;
  if (bi) return b;
  return sat((__int128)a + b);
}

static int64_t end_neg(int64_t a) {
  if (a == NEG_INF) return POS_INF;
  if (a == POS_INF) return NEG_INF;
  return -a;
}

/* Endpoint product; 0 times anything is 0 (the endpoints are values). */
static int64_t end_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? NEG_INF : POS_INF;
  return sat((__int128)a * b);
}

static Iv iv_add(Iv a, Iv b) {
  return iv_make(end_add(a.lo, b.lo, NEG_INF), end_add(a.hi, b.hi, POS_INF));
}
static Iv iv_neg(Iv a) { return iv_make(end_neg(a.hi), end_neg(a.lo)); }
static Iv iv_sub(Iv a, Iv b) { return iv_add(a, iv_neg(b)); }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static Iv iv_mul(Iv a, Iv b) {
  int64_t p[4] = {end_mul(a.lo, b.lo), end_mul(a.lo, b.hi), end_mul(a.hi, b.lo),
                  end_mul(a.hi, b.hi)};
  Iv r = iv_make(p[0], p[0]);
  for (int i = 1; i < 4; i++) {
    r.lo = min64(r.lo, p[i]);
    r.hi = max64(r.hi, p[i]);
  }
  return r;
}

static Iv iv_scale(Iv a, int64_t k) { return iv_mul(a, iv_make(k, k)); }
static Iv iv_union(Iv a, Iv b) { return iv_make(min64(a.lo, b.lo), max64(a.hi, b.hi)); }

static int64_t floordiv64(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floormod64(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* Endpoint quotient by a finite non-zero d; infinities keep (or flip) sign. */
static int64_t end_div(int64_t a, int64_t d, bool floor_) {
  if (is_inf(a)) return d > 0 ? a : end_neg(a);
  return floor_ ? floordiv64(a, d) : a / d;
}

/* a / b (truncating or floor) for b's range excluding 0: both kinds are
 * monotone in a for fixed b and in b on a sign-constant range, so the
 * extremes are at the corners. */
static Iv iv_div(Iv a, Iv b, bool floor_) {
  if (b.lo <= 0 && b.hi >= 0) return iv_full();
  if (is_inf(b.lo) || is_inf(b.hi)) {
    /* |b| unbounded: the quotient lies between the corners at the finite
     * divisor endpoint and 0 (or -1 for floor with a negative dividend). */
    int64_t d = is_inf(b.lo) ? b.hi : b.lo;
    Iv c = iv_make(end_div(a.lo, d, floor_), end_div(a.hi, d, floor_));
    if (c.lo > c.hi) c = iv_make(c.hi, c.lo);
    return iv_union(c, iv_make(floor_ ? -1 : 0, 0));
  }
  int64_t p[4] = {end_div(a.lo, b.lo, floor_), end_div(a.lo, b.hi, floor_),
                  end_div(a.hi, b.lo, floor_), end_div(a.hi, b.hi, floor_)};
  Iv r = iv_make(p[0], p[0]);
  for (int i = 1; i < 4; i++) {
    r.lo = min64(r.lo, p[i]);
    r.hi = max64(r.hi, p[i]);
  }
  return r;
}

/* ------------------------------------------------------------------ */
/* Integer values                                                      */
/* ------------------------------------------------------------------ */

/* A scalar integer type other than bool: what linear forms and ranges are
 * about. */
static bool is_index(DType t) {
  return t.lanes == 1 && (t.code == kDLInt || (t.code == kDLUInt && t.bits > 1));
}
static bool is_intlike1(DType t) { return t.lanes == 1 && (t.code == kDLInt || t.code == kDLUInt); }
static bool is_signed(DType t) { return t.code == kDLInt; }
static bool is_float1(DType t) { return t.lanes == 1 && t.code == kDLFloat && (t.bits == 32 || t.bits == 64); }

/* The value of bit pattern u in type t: sign-extended for signed types,
 * zero-extended for unsigned ones, 0/1 for bool. */
static int64_t canon(uint64_t u, DType t) {
  if (dt_is_bool(t)) return (u & 1) != 0;
  int b = t.bits;
  if (b >= 64) return (int64_t)u;
  u &= ((uint64_t)1 << b) - 1;
  if (t.code == kDLInt && ((u >> (b - 1)) & 1)) u |= ~(uint64_t)0 << b;
  return (int64_t)u;
}

/* The sign-extended view of u modulo 2^bits: how linear forms hold
 * coefficients, so that unsigned `x - y` has coefficient -1, not 2^32-1. */
static int64_t sview(uint64_t u, DType t) {
  int b = t.bits;
  if (b >= 64) return (int64_t)u;
  u &= ((uint64_t)1 << b) - 1;
  if ((u >> (b - 1)) & 1) u |= ~(uint64_t)0 << b;
  return (int64_t)u;
}

static Expr *mk_int(DType t, int64_t v) { return ir_int(canon((uint64_t)v, t), t); }

/* The range of every value of type t. Types of 32 bits and more count as
 * unbounded, so that a free int32 variable reads as "unknown". */
static Iv type_iv(DType t) {
  if (dt_is_bool(t)) return iv_make(0, 1);
  if (!is_intlike1(t) && !(t.code == kDLInt || t.code == kDLUInt)) return iv_full();
  if (t.bits >= 32) return iv_make(is_signed(t) ? NEG_INF : 0, POS_INF);
  return iv_make(dt_int_min(t), dt_int_max(t));
}

/* Fit a computed range to type t: an unsigned result outside the type's
 * range may have wrapped, so it becomes the whole range. */
static Iv iv_fit(Iv r, DType t) {
  if (t.code != kDLUInt) return r;
  if (r.lo < 0 || r.hi > dt_int_max(t) || (t.bits >= 63 && r.hi == POS_INF)) return type_iv(t);
  return r;
}

static int cmp_vals(int64_t a, int64_t b, DType t) {
  if (is_signed(t)) return a < b ? -1 : a > b;
  uint64_t x = (uint64_t)a, y = (uint64_t)b;
  return x < y ? -1 : x > y;
}

/* Whether comparison k holds given r = -1, 0, 1 (a <, ==, > b) or 2
 * (unordered: a NaN). */
static bool compare_holds(ExprKind k, int r) {
  if (k == EK_EQ) return r == 0;
  if (k == EK_NE) return r != 0;
  if (k == EK_LT) return r == -1;
  if (k == EK_LE) return r == -1 || r == 0;
  if (k == EK_GT) return r == 1;
  return r == 1 || r == 0; /* EK_GE */
}

/* Fold an integer binary op on canonical values x, y of type t.  False if
 * C would not give one answer (division by zero, INT_MIN / -1). */
static bool fold_int(ExprKind k, int64_t x, int64_t y, DType t, int64_t *out) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  switch (k) {
  case EK_Add: *out = canon(ux + uy, t); return true;
  case EK_Sub: *out = canon(ux - uy, t); return true;
  case EK_Mul: *out = canon(ux * uy, t); return true;
  case EK_Div:
  case EK_Mod:
  case EK_FloorDiv:
  case EK_FloorMod:
    if (y == 0) return false;
    if (!is_signed(t)) {
      *out = canon((k == EK_Div || k == EK_FloorDiv) ? ux / uy : ux % uy, t);
      return true;
    }
    if (y == -1 && x == dt_int_min(t)) return false;
    if (k == EK_Div) *out = x / y;
    else if (k == EK_Mod) *out = x % y;
    else if (k == EK_FloorDiv) *out = floordiv64(x, y);
    else *out = floormod64(x, y);
    return true;
  case EK_Min: *out = cmp_vals(x, y, t) <= 0 ? x : y; return true;
  case EK_Max: *out = cmp_vals(x, y, t) >= 0 ? x : y; return true;
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE: *out = compare_holds(k, cmp_vals(x, y, t)); return true;
  case EK_And: *out = x != 0 && y != 0; return true;
  case EK_Or: *out = x != 0 || y != 0; return true;
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Var:
  case EK_Not:
  case EK_Select:
  case EK_Cast:
  case EK_Call:
  case EK_Read:
  case EK_Load:
  case EK_Ramp:
  case EK_Broadcast:
  case EK_Let:
  case EK_Reduce:
  case EK__COUNT:
    break;
  }
  return false;
}

/* Fold a float binary op.  *is_bool says the result is a comparison's. */
static bool fold_float(ExprKind k, double x, double y, DType t, double *out, bool *is_bool) {
  *is_bool = false;
  double r = 0;
  switch (k) {
  case EK_Add: r = x + y; break;
  case EK_Sub: r = x - y; break;
  case EK_Mul: r = x * y; break;
  case EK_Div:
    if (y == 0) return false;
    r = x / y;
    break;
  case EK_FloorDiv:
    if (y == 0) return false;
    r = floor(x / y);
    break;
  case EK_FloorMod:
    if (y == 0) return false;
    r = x - floor(x / y) * y;
    break;
  case EK_Min: r = x < y ? x : y; break; /* as the generated C computes it */
  case EK_Max: r = x > y ? x : y; break;
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
    *is_bool = true;
    *out = compare_holds(k, x < y ? -1 : x > y ? 1 : x == y ? 0 : 2);
    return true;
  case EK_Mod: /* float % is built as fmod(); a Mod node here is left alone */
  case EK_And:
  case EK_Or:
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Var:
  case EK_Not:
  case EK_Select:
  case EK_Cast:
  case EK_Call:
  case EK_Read:
  case EK_Load:
  case EK_Ramp:
  case EK_Broadcast:
  case EK_Let:
  case EK_Reduce:
  case EK__COUNT:
    return false;
  }
  *out = t.bits == 32 ? (double)(float)r : r;
  return true;
}

static bool const_int(const Expr *e, int64_t *v) { return ir_is_const_int(e, v); }

static bool const_float(const Expr *e, double *v) {
  if (e && e->kind == EK_FloatImm && is_float1(e->dtype)) {
    *v = e->float_value;
    return true;
  }
  return false;
}

static bool is_true(const Expr *e) { return e && e->kind == EK_IntImm && e->int_value != 0; }
static bool is_false(const Expr *e) { return e && e->kind == EK_IntImm && e->int_value == 0; }

/* ------------------------------------------------------------------ */
/* The analyzer                                                        */
/* ------------------------------------------------------------------ */

struct Analyzer {
  PtrMap vars;  /* Var -> Iv * (owned); NULL = nothing known */
  PtrVec owned; /* every Iv allocated, freed with the analyzer */
};

/* Set var's range; returns the previous one (NULL if none) for
 * an_restore, so scoped facts (a loop body, an if branch) can be undone. */
static Iv *an_set(Analyzer *an, Expr *var, Iv iv) {
  Iv *old = pm_get(&an->vars, var);
  Iv *p = xmalloc(sizeof *p);
  *p = iv;
  pv_push(&an->owned, p);
  pm_put(&an->vars, var, p);
  return old;
}

static void an_restore(Analyzer *an, Expr *var, Iv *old) { pm_put(&an->vars, var, old); }

static Iv var_iv(Analyzer *an, Expr *v) {
  Iv *p = pm_get(&an->vars, v);
  return p ? *p : type_iv(v->dtype);
}

static Expr *simp(Analyzer *an, Expr *e);

/* ------------------------------------------------------------------ */
/* Bounds                                                              */
/* ------------------------------------------------------------------ */

static Iv bound(Analyzer *an, Expr *e);

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
    return var_iv(an, e);
  case EK_Add:
    return iv_add(bound(an, e->bin.a), bound(an, e->bin.b));
  case EK_Sub:
    return iv_sub(bound(an, e->bin.a), bound(an, e->bin.b));
  case EK_Mul:
    return iv_mul(bound(an, e->bin.a), bound(an, e->bin.b));
  case EK_Div:
  case EK_FloorDiv:
    return iv_div(bound(an, e->bin.a), bound(an, e->bin.b), e->kind == EK_FloorDiv);
  case EK_Mod:
  case EK_FloorMod:
    return bound_mod(bound(an, e->bin.a), bound(an, e->bin.b), e->kind == EK_FloorMod);
  case EK_Min: {
    Iv a = bound(an, e->bin.a), b = bound(an, e->bin.b);
    return iv_make(min64(a.lo, b.lo), min64(a.hi, b.hi));
  }
  case EK_Max: {
    Iv a = bound(an, e->bin.a), b = bound(an, e->bin.b);
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
    return iv_union(bound(an, e->select.t), bound(an, e->select.f));
  case EK_Cast: {
    DType from = e->bin.a->dtype;
    if (dt_is_float(from) || !(from.code == kDLInt || from.code == kDLUInt)) return type_iv(t);
    Iv a = bound(an, e->bin.a);
    if (dt_is_bool(t)) return a.lo > 0 || a.hi < 0 ? iv_make(1, 1) : iv_make(0, 1);
    /* A value that fits the target type is unchanged by the cast; one that
     * may not wraps, so only the type's own range is known. */
    if (!is_inf(a.lo) && !is_inf(a.hi) && a.lo >= dt_int_min(t) && a.hi <= dt_int_max(t)) return a;
    if (t.bits >= 64 && is_signed(t) == is_signed(from) && from.bits <= t.bits) return a;
    return type_iv(t);
  }
  case EK_Let: {
    Iv v = bound(an, e->let.value);
    Iv *old = an_set(an, e->let.var, v);
    Iv r = bound(an, e->let.body);
    an_restore(an, e->let.var, old);
    return r;
  }
  case EK_Ramp: {
    Iv s = bound(an, e->ramp.stride);
    return iv_add(bound(an, e->ramp.base), iv_mul(s, iv_make(0, e->ramp.lanes - 1)));
  }
  case EK_Broadcast:
    return bound(an, e->bcast.value);
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
static Iv bound(Analyzer *an, Expr *e) {
  DType s = dt_scalar(e->dtype);
  if (!(s.code == kDLInt || s.code == kDLUInt)) return iv_full();
  Iv r = bound_raw(an, e);
  if (r.lo > r.hi) r = type_iv(s); /* an empty range only arises from a dead branch */
  return iv_fit(r, s);
}

/* ------------------------------------------------------------------ */
/* A deterministic structural order (for canonical term order)         */
/* ------------------------------------------------------------------ */

static int cmp_expr(Expr *a, Expr *b);

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int cmp_array(int na, Expr **a, int nb, Expr **b) {
  if (na != nb) return cmp_i64(na, nb);
  for (int i = 0; i < na; i++) {
    int c = cmp_expr(a[i], b[i]);
    if (c) return c;
  }
  return 0;
}

/* Orders by kind, type, then contents; variables by name.  Distinct nodes
 * may compare equal (two variables named alike), which the stable sort
 * resolves by first appearance. */
static int cmp_expr(Expr *a, Expr *b) {
  if (a == b) return 0;
  if (!a || !b) return a ? 1 : -1;
  if (a->kind != b->kind) return cmp_i64(a->kind, b->kind);
  int c = cmp_i64(a->dtype.code, b->dtype.code);
  if (!c) c = cmp_i64(a->dtype.bits, b->dtype.bits);
  if (!c) c = cmp_i64(a->dtype.lanes, b->dtype.lanes);
  if (c) return c;
  switch (a->kind) {
  case EK_IntImm:
    return cmp_i64(a->int_value, b->int_value);
  case EK_FloatImm:
    return a->float_value < b->float_value ? -1 : a->float_value > b->float_value;
  case EK_StrImm:
    return strcmp(a->str, b->str);
  case EK_Var:
    return strcmp(a->var.name, b->var.name);
  case EK_Add:
  case EK_Sub:
  case EK_Mul:
  case EK_Div:
  case EK_Mod:
  case EK_FloorDiv:
  case EK_FloorMod:
  case EK_Min:
  case EK_Max:
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
  case EK_And:
  case EK_Or:
    c = cmp_expr(a->bin.a, b->bin.a);
    return c ? c : cmp_expr(a->bin.b, b->bin.b);
  case EK_Not:
  case EK_Cast:
    return cmp_expr(a->bin.a, b->bin.a);
  case EK_Select:
    c = cmp_expr(a->select.cond, b->select.cond);
    if (!c) c = cmp_expr(a->select.t, b->select.t);
    return c ? c : cmp_expr(a->select.f, b->select.f);
  case EK_Call:
    c = cmp_i64(a->call.op, b->call.op);
    return c ? c : cmp_array(a->call.nargs, a->call.args, b->call.nargs, b->call.args);
  case EK_Read:
    c = strcmp(ir_tensor_name(a->read.tensor), ir_tensor_name(b->read.tensor));
    return c ? c : cmp_array(a->read.n, a->read.idx, b->read.n, b->read.idx);
  case EK_Load:
    c = cmp_expr(a->load.buf, b->load.buf);
    return c ? c : cmp_expr(a->load.index, b->load.index);
  case EK_Ramp:
    c = cmp_expr(a->ramp.base, b->ramp.base);
    return c ? c : cmp_expr(a->ramp.stride, b->ramp.stride);
  case EK_Broadcast:
    return cmp_expr(a->bcast.value, b->bcast.value);
  case EK_Let:
    c = cmp_expr(a->let.value, b->let.value);
    return c ? c : cmp_expr(a->let.body, b->let.body);
  case EK_Reduce:
    return cmp_expr(a->reduce.source, b->reduce.source);
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* ------------------------------------------------------------------ */
/* Linear forms                                                        */
/* ------------------------------------------------------------------ */

typedef struct Term {
  Expr *atom;
  int64_t k; /* sign view modulo 2^bits */
} Term;

typedef struct Lin {
  DType t;
  int n, cap;
  Term *v;   /* heap */
  int64_t c; /* constant, sign view */
} Lin;

static void lin_init(Lin *l, DType t) {
  memset(l, 0, sizeof *l);
  l->t = t;
}
static void lin_free(Lin *l) {
  free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

static int64_t kmul(int64_t a, int64_t b, DType t) { return sview((uint64_t)a * (uint64_t)b, t); }
static int64_t kadd(int64_t a, int64_t b, DType t) { return sview((uint64_t)a + (uint64_t)b, t); }

static void lin_term(Lin *l, Expr *atom, int64_t k) {
  k = sview((uint64_t)k, l->t);
  if (!k) return;
  for (int i = 0; i < l->n; i++)
    if (ir_expr_equal(l->v[i].atom, atom)) {
      l->v[i].k = kadd(l->v[i].k, k, l->t);
      return;
    }
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->v = xrealloc(l->v, sizeof(Term) * (size_t)l->cap);
  }
  l->v[l->n].atom = atom;
  l->v[l->n].k = k;
  l->n++;
}

/* l += k * e, descending through +, - and * by a constant. */
static void lin_add(Lin *l, Expr *e, int64_t k) {
  int64_t v;
  if (!k) return;
  if (const_int(e, &v)) {
    l->c = kadd(l->c, kmul(sview((uint64_t)v, l->t), k, l->t), l->t);
  } else if (e->kind == EK_Add) {
    lin_add(l, e->bin.a, k);
    lin_add(l, e->bin.b, k);
  } else if (e->kind == EK_Sub) {
    lin_add(l, e->bin.a, k);
    lin_add(l, e->bin.b, sview(-(uint64_t)k, l->t));
  } else if (e->kind == EK_Mul && const_int(e->bin.b, &v)) {
    lin_add(l, e->bin.a, kmul(k, sview((uint64_t)v, l->t), l->t));
  } else if (e->kind == EK_Mul && const_int(e->bin.a, &v)) {
    lin_add(l, e->bin.b, kmul(k, sview((uint64_t)v, l->t), l->t));
  } else {
    lin_term(l, e, k);
  }
}

static void lin_compact(Lin *l) {
  int j = 0;
  for (int i = 0; i < l->n; i++)
    if (l->v[i].k) l->v[j++] = l->v[i];
  l->n = j;
}

/* Canonical order: larger coefficients first (`i*8 + j`), then atoms in
 * structural order.  Insertion sort: stable and the sums are short. */
static bool term_before(const Term *a, const Term *b) {
  if (a->k != b->k) return a->k > b->k;
  return cmp_expr(a->atom, b->atom) < 0;
}

static void lin_sort(Lin *l) {
  for (int i = 1; i < l->n; i++) {
    Term x = l->v[i];
    int j = i - 1;
    while (j >= 0 && term_before(&x, &l->v[j])) {
      l->v[j + 1] = l->v[j];
      j--;
    }
    l->v[j + 1] = x;
  }
}

static Expr *mk_term(Lin *l, Expr *atom, int64_t k) {
  if (k == 1) return atom;
  return ir_mul(atom, mk_int(l->t, k));
}

/* The smallest sign-view value, whose negation is itself. */
static int64_t kmin(DType t) { return t.bits >= 64 ? INT64_MIN : -((int64_t)1 << (t.bits - 1)); }

/* Rebuild: positive terms, a positive constant, then negative terms and a
 * negative constant subtracted (TVM's canonical shape). */
static Expr *lin_expr(Lin *l) {
  lin_compact(l);
  lin_sort(l);
  DType t = l->t;
  Expr *acc = NULL;
  for (int i = 0; i < l->n; i++) {
    Term *x = &l->v[i];
    if (x->k > 0 || x->k == kmin(t)) {
      Expr *term = mk_term(l, x->atom, x->k);
      acc = acc ? ir_add(acc, term) : term;
    }
  }
  if (l->c > 0 || l->c == kmin(t)) acc = acc ? ir_add(acc, mk_int(t, l->c)) : mk_int(t, l->c);
  for (int i = 0; i < l->n; i++) {
    Term *x = &l->v[i];
    if (x->k < 0 && x->k != kmin(t)) {
      Expr *term = mk_term(l, x->atom, -x->k);
      acc = ir_sub(acc ? acc : mk_int(t, 0), term);
    }
  }
  if (l->c < 0 && l->c != kmin(t)) acc = acc ? ir_sub(acc, mk_int(t, -l->c)) : mk_int(t, l->c);
  return acc ? acc : mk_int(t, 0);
}

static void lin_of(Lin *l, Expr *e, DType t) {
  lin_init(l, t);
  lin_add(l, e, 1);
}

/* Range of a linear form (signed types: no wrap-around assumed). */
static Iv lin_bound(Analyzer *an, Lin *l) {
  Iv r = iv_make(l->c, l->c);
  for (int i = 0; i < l->n; i++) r = iv_add(r, iv_scale(bound(an, l->v[i].atom), l->v[i].k));
  return r;
}

/* l = a - b, both simplified. */
static void lin_diff(Lin *l, Expr *a, Expr *b) {
  lin_init(l, a->dtype);
  lin_add(l, a, 1);
  lin_add(l, b, -1);
  lin_compact(l);
}

/* ------------------------------------------------------------------ */
/* Rules                                                               */
/* ------------------------------------------------------------------ */

static Expr *mk_bool(bool v, int lanes) { return ir_bcast(ir_bool(v), lanes); }

/* Build a binary node of simplified operands, reusing e when unchanged. */
static Expr *rebuild_bin(Expr *e, ExprKind k, Expr *a, Expr *b) {
  if (e && e->kind == k && e->bin.a == a && e->bin.b == b) return e;
  return ir_binary(k, a, b);
}

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* If the remainder r of a division by c stays within one period
 * [p*c, p*c + c), the quotient is q + p and the remainder r - p*c; returns
 * that (the quotient when is_div) or NULL. */
static Expr *fold_one_period(Analyzer *an, Lin *q, Lin *r, int64_t c, bool is_div) {
  DType t = r->t;
  lin_compact(r);
  Iv rb = lin_bound(an, r);
  if (r->n && (is_inf(rb.lo) || is_inf(rb.hi) || floordiv64(rb.lo, c) != floordiv64(rb.hi, c)))
    return NULL;
  int64_t p = floordiv64(r->n ? rb.lo : r->c, c), pc;
  if (__builtin_mul_overflow(p, c, &pc) || pc == INT64_MIN || pc < dt_int_min(t) ||
      pc > dt_int_max(t))
    return NULL; /* only near the ends of int64; not worth the care */
  if (is_div) {
    q->c = kadd(q->c, p, t);
    return lin_expr(q);
  }
  r->c = kadd(r->c, -pc, t);
  return lin_expr(r);
}

/* floordiv / floormod (or, for a non-negative dividend, Div / Mod) of the
 * simplified a by a constant c > 0 (signed type).  Returns NULL if no rule
 * applies. */
static Expr *divmod_const(Analyzer *an, ExprKind k, Expr *a, int64_t c) {
  DType t = a->dtype;
  bool is_div = k == EK_Div || k == EK_FloorDiv;
  bool trunc_ = k == EK_Div || k == EK_Mod;
  Lin l, q, r;
  lin_of(&l, a, t);
  lin_compact(&l);
  lin_init(&q, t);
  lin_init(&r, t);
  /* Split: multiples of c go to the quotient, the rest is the remainder. */
  for (int i = 0; i < l.n; i++) {
    Term x = l.v[i];
    if (x.k % c == 0) {
      if (is_div) lin_term(&q, x.atom, x.k / c);
    } else {
      lin_term(&r, x.atom, x.k);
    }
  }
  q.c = floordiv64(l.c, c);
  r.c = floormod64(l.c, c);
  lin_free(&l);

  if (trunc_ && r.n == 0 && r.c == 0) { /* exact: holds for either sign */
    lin_free(&r);
    if (!is_div) {
      lin_free(&q);
      return mk_int(t, 0);
    }
    Expr *res = lin_expr(&q);
    lin_free(&q);
    return res;
  }
  if (trunc_ && bound(an, a).lo < 0) { /* truncation differs from floor */
    lin_free(&q);
    lin_free(&r);
    return NULL;
  }
  Expr *res = fold_one_period(an, &q, &r, c, is_div);
  if (!res && !is_div) {
    /* k*floormod(y, m) == k*y modulo c when c divides k*m: look through
     * such inner mods (after the fold above, which they could spoil). */
    bool replaced = false;
    for (int i = 0; i < r.n; i++) {
      Expr *at = r.v[i].atom;
      int64_t m, km;
      if (at->kind == EK_FloorMod && const_int(at->bin.b, &m) && m > 0 &&
          !__builtin_mul_overflow(r.v[i].k, m, &km) && km % c == 0) {
        int64_t kk = r.v[i].k;
        r.v[i].k = 0;
        lin_add(&r, at->bin.a, kk);
        replaced = true;
      }
    }
    if (replaced) {
      Lin r2; /* drop multiples of c that the replacement brought in */
      lin_init(&r2, t);
      lin_compact(&r);
      for (int i = 0; i < r.n; i++)
        if (r.v[i].k % c) lin_term(&r2, r.v[i].atom, r.v[i].k);
      r2.c = floormod64(r.c, c);
      lin_free(&r);
      r = r2;
      res = fold_one_period(an, &q, &r, c, is_div);
    }
  }
  /* floordiv(g*x + s, c) == floordiv(x, c/g) and floormod(g*x + s, c) ==
   * g*floormod(x, c/g) + s for g dividing c when 0 <= s < g: lanes of a
   * block of 8 read from blocks of 16, (8*i + m) / 16 == i / 2 for m in
   * [0, 8), so a layout transform between block sizes vectorizes.  The
   * candidates for g are the common factors of c and a coefficient.  (A
   * truncating kind reached here has a non-negative dividend.) */
  for (int j = 0; !res && r.n > 1 && j < r.n; j++) {
    int64_t g = gcd64(c, r.v[j].k < 0 ? -r.v[j].k : r.v[j].k);
    if (g <= 1 || g >= c) continue;
    Lin x, sm;
    lin_init(&x, t);
    lin_init(&sm, t);
    for (int i = 0; i < r.n; i++) {
      if (r.v[i].k % g == 0) lin_term(&x, r.v[i].atom, r.v[i].k / g);
      else lin_term(&sm, r.v[i].atom, r.v[i].k);
    }
    x.c = floordiv64(r.c, g);
    sm.c = floormod64(r.c, g);
    Iv sb = lin_bound(an, &sm);
    if (x.n && sm.n && !is_inf(sb.lo) && !is_inf(sb.hi) && sb.lo >= 0 && sb.hi < g) {
      Expr *inner = simp(an, ir_binary(is_div ? EK_FloorDiv : EK_FloorMod, lin_expr(&x), mk_int(t, c / g)));
      if (is_div) {
        lin_add(&q, inner, 1);
        res = lin_expr(&q);
      } else {
        res = simp(an, ir_add(ir_mul(inner, mk_int(t, g)), lin_expr(&sm)));
      }
    }
    lin_free(&x);
    lin_free(&sm);
  }
  if (res) {
    lin_free(&q);
    lin_free(&r);
    return res;
  }
  Iv rb = lin_bound(an, &r);
  /* Divide out a common factor: floordiv(g*x, g*c') == floordiv(x, c'),
   * floormod(g*x, g*c') == g*floormod(x, c'). */
  int64_t g = gcd64(c, r.c);
  for (int i = 0; i < r.n; i++) g = gcd64(g, r.v[i].k);
  if (g > 1) {
    for (int i = 0; i < r.n; i++) r.v[i].k /= g;
    r.c /= g;
    c /= g;
  }
  ExprKind rk = trunc_ && rb.lo >= 0 ? (is_div ? EK_Div : EK_Mod) : (is_div ? EK_FloorDiv : EK_FloorMod);
  Expr *inner = NULL;
  if (is_div && r.n == 1 && r.c == 0 && r.v[0].k == 1) {
    /* floordiv(floordiv(x, a), c) == floordiv(x, a*c), and likewise for
     * truncating division, for positive constants a and c. */
    Expr *at = r.v[0].atom;
    int64_t a2, ac;
    if ((at->kind == EK_FloorDiv || (at->kind == EK_Div && rk == EK_Div)) &&
        const_int(at->bin.b, &a2) && a2 > 0 && !__builtin_mul_overflow(a2, c, &ac) &&
        ac <= dt_int_max(t))
      inner = simp(an, ir_binary(at->kind, at->bin.a, mk_int(t, ac))); /* may reduce further */
  }
  if (!inner) inner = ir_binary(rk, lin_expr(&r), mk_int(t, c));
  lin_free(&r);
  if (is_div) {
    lin_add(&q, inner, 1);
    res = lin_expr(&q);
  } else {
    res = g > 1 ? ir_mul(inner, mk_int(t, g)) : inner; /* already canonical */
  }
  lin_free(&q);
  return res;
}

/* Division family on scalar integers. */
static Expr *simp_divmod(Analyzer *an, Expr *e, ExprKind k, Expr *a, Expr *b) {
  DType t = a->dtype;
  int64_t c;
  if (!const_int(b, &c) || c == 0) return rebuild_bin(e, k, a, b);
  if (c == 1) return (k == EK_Div || k == EK_FloorDiv) ? a : mk_int(t, 0);
  if (is_signed(t) && c > 0) {
    Expr *r = divmod_const(an, k, a, c);
    if (r) return r;
  }
  return rebuild_bin(e, k, a, b);
}

/* min / max of simplified scalar integers. */
static Expr *simp_minmax(Analyzer *an, Expr *e, ExprKind k, Expr *a, Expr *b) {
  bool is_min = k == EK_Min;
  if (ir_expr_equal(a, b)) return a;
  DType t = a->dtype;
  int a_le_b = 0; /* 1: a <= b proven, -1: a >= b proven */
  if (is_signed(t)) {
    Lin d;
    lin_diff(&d, a, b);
    Iv r = lin_bound(an, &d);
    lin_free(&d);
    if (r.hi <= 0) a_le_b = 1;
    else if (r.lo >= 0) a_le_b = -1;
  }
  if (!a_le_b) {
    Iv x = bound(an, a), y = bound(an, b);
    if (x.hi <= y.lo) a_le_b = 1;
    else if (x.lo >= y.hi) a_le_b = -1;
  }
  if (a_le_b) return (a_le_b > 0) == is_min ? a : b;
  /* min(min(x, c1), c2) -> min(x, min(c1, c2)) */
  int64_t c1, c2;
  if (a->kind == k && const_int(a->bin.b, &c1) && const_int(b, &c2)) {
    int64_t m;
    fold_int(k, c1, c2, t, &m);
    return ir_binary(k, a->bin.a, mk_int(t, m));
  }
  return rebuild_bin(e, k, a, b);
}

/* A comparison of simplified scalar integers. */
static Expr *simp_compare(Analyzer *an, Expr *e, ExprKind k, Expr *a, Expr *b) {
  DType t = a->dtype;
  if (ir_expr_equal(a, b)) return ir_bool(k == EK_EQ || k == EK_LE || k == EK_GE);
  Iv r;
  Lin d;
  bool have_lin = false;
  if (is_signed(t)) {
    lin_diff(&d, a, b);
    r = lin_bound(an, &d);
    have_lin = true;
  } else {
    Iv x = bound(an, a), y = bound(an, b);
    /* the sign of a - b in exact arithmetic */
    r = iv_sub(x, y);
  }
  int decided = -1;
  if (r.lo > 0 || r.hi < 0) { /* a != b */
    if (k == EK_EQ) decided = 0;
    if (k == EK_NE) decided = 1;
  }
  if (r.lo == 0 && r.hi == 0) decided = k == EK_EQ || k == EK_LE || k == EK_GE;
  if (k == EK_LT) decided = r.hi < 0 ? 1 : r.lo >= 0 ? 0 : -1;
  if (k == EK_LE) decided = r.hi <= 0 ? 1 : r.lo > 0 ? 0 : -1;
  if (k == EK_GT) decided = r.lo > 0 ? 1 : r.hi <= 0 ? 0 : -1;
  if (k == EK_GE) decided = r.lo >= 0 ? 1 : r.hi < 0 ? 0 : -1;
  if (decided >= 0) {
    if (have_lin) lin_free(&d);
    return ir_bool(decided);
  }
  if (!have_lin) return rebuild_bin(e, k, a, b);
  /* Normalize a - b = P - N + c to `P OP N - c`, with P or N possibly a
   * bare constant: `x + 1 < y + 3` -> `x < y + 2`, `i + 4 < 8` -> `i < 4`. */
  bool overflow = d.c == kmin(t); /* a coefficient whose negation wraps */
  for (int i = 0; i < d.n; i++) overflow |= d.v[i].k == kmin(t);
  if (overflow) {
    lin_free(&d);
    return rebuild_bin(e, k, a, b);
  }
  Lin p, n;
  lin_init(&p, t);
  lin_init(&n, t);
  for (int i = 0; i < d.n; i++) {
    if (d.v[i].k > 0) lin_term(&p, d.v[i].atom, d.v[i].k);
    else lin_term(&n, d.v[i].atom, -d.v[i].k);
  }
  if (p.n == 0) p.c = d.c;
  else n.c = -d.c;
  lin_free(&d);
  Expr *res = rebuild_bin(e, k, lin_expr(&p), lin_expr(&n));
  lin_free(&p);
  lin_free(&n);
  /* Keep the caller's node if normalization only rebuilt the same text. */
  if (e && res != e && ir_expr_equal(res, e)) return e;
  return res;
}

/* x = floordiv(x, c) * c + floormod(x, c), and the same for C's / and %:
 * a pair of terms k*c*div(x, c) + k*mod(x, c) becomes k*x.  Fused loop
 * axes split back into their parts produce exactly this shape, and
 * folding it lets a vectorized fused axis read contiguous memory. */
static void lin_merge_divmod(Lin *l) {
  for (bool again = true; again;) {
    again = false;
    for (int i = 0; i < l->n && !again; i++) {
      Expr *d = l->v[i].atom;
      if (!l->v[i].k || (d->kind != EK_FloorDiv && d->kind != EK_Div)) continue;
      int64_t c;
      if (!const_int(d->bin.b, &c) || c <= 0) continue;
      ExprKind mk = d->kind == EK_FloorDiv ? EK_FloorMod : EK_Mod;
      for (int j = 0; j < l->n; j++) {
        Expr *m = l->v[j].atom;
        if (j == i || !l->v[j].k || m->kind != mk || !ir_is_int_value(m->bin.b, c) || !ir_expr_equal(m->bin.a, d->bin.a))
          continue;
        int64_t km = l->v[j].k;
        if (kmul(km, c, l->t) != l->v[i].k) continue;
        Expr *x = d->bin.a;
        l->v[i].k = 0;
        l->v[j].k = 0;
        lin_add(l, x, km);
        again = true;
        break;
      }
    }
  }
}

/* Scalar integer +, -, * (simplified operands, not both constant). */
static Expr *simp_linear(Analyzer *an, Expr *e, ExprKind k, Expr *a, Expr *b) {
  DType t = a->dtype;
  if (k == EK_Mul && !ir_is_const(a) && !ir_is_const(b)) {
    if (cmp_expr(a, b) > 0) { /* x*y and y*x are one atom */
      Expr *s = a;
      a = b;
      b = s;
    }
    return rebuild_bin(e, k, a, b);
  }
  Lin l;
  lin_init(&l, t);
  if (k == EK_Mul) {
    int64_t v;
    if (const_int(b, &v)) lin_add(&l, a, sview((uint64_t)v, t));
    else {
      const_int(a, &v);
      lin_add(&l, b, sview((uint64_t)v, t));
    }
  } else {
    lin_add(&l, a, 1);
    lin_add(&l, b, k == EK_Add ? 1 : -1);
  }
  lin_merge_divmod(&l);
  Expr *r = lin_expr(&l);
  lin_free(&l);
  if (e && ir_expr_equal(r, e)) return e;
  return r;
}

/* Vector operands: broadcasts combine lane-wise, ramps absorb broadcasts. */
static Expr *simp_vector(Analyzer *an, Expr *e, ExprKind k, Expr *a, Expr *b) {
  int lanes = a->dtype.lanes;
  if (a->kind == EK_Broadcast && b->kind == EK_Broadcast)
    return ir_bcast(simp(an, ir_binary(k, a->bcast.value, b->bcast.value)), lanes);
  if (is_index(dt_scalar(a->dtype))) {
    Expr *ra = a->kind == EK_Ramp ? a : NULL, *rb = b->kind == EK_Ramp ? b : NULL;
    Expr *ba = a->kind == EK_Broadcast ? a->bcast.value : NULL;
    Expr *bb = b->kind == EK_Broadcast ? b->bcast.value : NULL;
    if (k == EK_Add || k == EK_Sub) {
      if (ra && bb)
        return ir_ramp(simp(an, ir_binary(k, ra->ramp.base, bb)), ra->ramp.stride, lanes);
      if (ba && rb) {
        Expr *st = k == EK_Add ? rb->ramp.stride : simp(an, ir_neg(rb->ramp.stride));
        return ir_ramp(simp(an, ir_binary(k, ba, rb->ramp.base)), st, lanes);
      }
      if (ra && rb)
        return simp(an, ir_ramp(ir_binary(k, ra->ramp.base, rb->ramp.base),
                                ir_binary(k, ra->ramp.stride, rb->ramp.stride), lanes));
    }
    if (k == EK_Mul && ((ra && bb) || (ba && rb))) {
      Expr *r = ra ? ra : rb, *x = ra ? bb : ba;
      return simp(an, ir_ramp(ir_mul(r->ramp.base, x), ir_mul(r->ramp.stride, x), lanes));
    }
  }
  return rebuild_bin(e, k, a, b);
}

/* Floats: constants fold, identities drop, nothing reassociates. */
static Expr *simp_float(Expr *e, ExprKind k, Expr *a, Expr *b) {
  double x = 0, y = 0, r = 0;
  bool is_bool;
  bool ca = const_float(a, &x), cb = const_float(b, &y);
  if (ca && cb && fold_float(k, x, y, a->dtype, &r, &is_bool))
    return is_bool ? ir_bool(r != 0) : ir_float(r, a->dtype);
  if (k == EK_Add && cb && y == 0) return a;
  if (k == EK_Add && ca && x == 0) return b;
  if (k == EK_Sub && cb && y == 0) return a;
  if (k == EK_Mul && cb && y == 1) return a;
  if (k == EK_Mul && ca && x == 1) return b;
  if (k == EK_Div && cb && y == 1) return a;
  if ((k == EK_Min || k == EK_Max) && ir_expr_equal(a, b)) return a;
  return rebuild_bin(e, k, a, b);
}

/* And / Or of simplified bools. */
static Expr *simp_logic(Expr *e, ExprKind k, Expr *a, Expr *b) {
  bool is_and = k == EK_And;
  if (a->dtype.lanes == 1) {
    if (is_true(a)) return is_and ? b : a;
    if (is_false(a)) return is_and ? a : b;
    if (is_true(b)) return is_and ? a : b;
    if (is_false(b)) return is_and ? b : a;
  }
  if (ir_expr_equal(a, b)) return a;
  return rebuild_bin(e, k, a, b);
}

/* Every binary kind, on simplified operands a and b.  e is the original
 * node (reused when nothing changes) or NULL. */
static Expr *simp_bin(Analyzer *an, Expr *e, ExprKind k, Expr *a, Expr *b) {
  DType t = a->dtype;
  if (t.lanes > 1) return simp_vector(an, e, k, a, b);
  if (k == EK_And || k == EK_Or) return simp_logic(e, k, a, b);
  if (dt_is_float(t)) return simp_float(e, k, a, b);
  if (!is_intlike1(t)) return rebuild_bin(e, k, a, b);
  int64_t x, y, r;
  if (const_int(a, &x) && const_int(b, &y)) {
    if (fold_int(k, x, y, t, &r)) return ir_is_compare(k) ? ir_bool(r != 0) : ir_int(r, t);
    return rebuild_bin(e, k, a, b);
  }
  if (dt_is_bool(t)) {
    if (ir_is_compare(k) && ir_expr_equal(a, b)) return ir_bool(k == EK_EQ || k == EK_LE || k == EK_GE);
    return rebuild_bin(e, k, a, b);
  }
  switch (k) {
  case EK_Add:
  case EK_Sub:
  case EK_Mul:
    return simp_linear(an, e, k, a, b);
  case EK_Div:
  case EK_Mod:
  case EK_FloorDiv:
  case EK_FloorMod:
    return simp_divmod(an, e, k, a, b);
  case EK_Min:
  case EK_Max:
    return simp_minmax(an, e, k, a, b);
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
    return simp_compare(an, e, k, a, b);
  case EK_And:
  case EK_Or:
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Var:
  case EK_Not:
  case EK_Select:
  case EK_Cast:
  case EK_Call:
  case EK_Read:
  case EK_Load:
  case EK_Ramp:
  case EK_Broadcast:
  case EK_Let:
  case EK_Reduce:
  case EK__COUNT:
    break;
  }
  return rebuild_bin(e, k, a, b);
}

static Expr *simp_not(Analyzer *an, Expr *e, Expr *a) {
  if (a->kind == EK_IntImm) return ir_bool(a->int_value == 0);
  if (a->kind == EK_Broadcast && a->bcast.value->kind == EK_IntImm)
    return mk_bool(a->bcast.value->int_value == 0, a->bcast.lanes);
  if (a->kind == EK_Not) return a->bin.a;
  if (ir_is_compare(a->kind)) {
    /* EQ/NE invert for any type; the orderings only without NaN. */
    static const ExprKind inv[] = {[EK_EQ] = EK_NE, [EK_NE] = EK_EQ, [EK_LT] = EK_GE,
                                   [EK_LE] = EK_GT, [EK_GT] = EK_LE, [EK_GE] = EK_LT};
    if (a->kind == EK_EQ || a->kind == EK_NE || !dt_is_float(a->bin.a->dtype))
      return simp_bin(an, NULL, inv[a->kind], a->bin.a, a->bin.b);
  }
  return a == e->bin.a ? e : ir_not(a);
}

static Expr *simp_cast(Expr *e, Expr *a) {
  DType t = e->dtype;
  Expr *s = a->kind == EK_Broadcast ? a->bcast.value : a;
  DType st = dt_scalar(t);
  Expr *c = NULL;
  if (s->kind == EK_IntImm && (is_intlike1(st) || is_float1(st))) {
    int64_t v = s->int_value;
    if (dt_is_float(st))
      c = ir_float(is_signed(s->dtype) ? (double)v : (double)(uint64_t)v, st);
    else
      c = ir_int(dt_is_bool(st) ? v != 0 : canon((uint64_t)v, st), st);
  } else if (s->kind == EK_FloatImm && is_float1(s->dtype) && (is_intlike1(st) || is_float1(st))) {
    double v = s->float_value;
    if (dt_is_float(st))
      c = ir_float(v, st);
    else if (dt_is_bool(st))
      c = ir_bool(v != 0);
    else {
      double f = trunc(v);
      /* out of range (or NaN) is undefined in C: leave it */
      if (f >= (double)dt_int_min(st) && f < ldexp(1.0, st.bits - is_signed(st)) && st.bits < 64)
        c = ir_int((int64_t)f, st);
    }
  }
  if (c) return ir_bcast(c, t.lanes);
  return a == e->bin.a ? e : ir_cast(t, a);
}

static Expr *simp_select(Analyzer *an, Expr *e) {
  Expr *c = simp(an, e->select.cond);
  Expr *cc = c && c->kind == EK_Broadcast ? c->bcast.value : c;
  if (cc && cc->kind == EK_IntImm) return simp(an, cc->int_value ? e->select.t : e->select.f);
  Expr *t = simp(an, e->select.t), *f = simp(an, e->select.f);
  if (!c || !t || !f) return NULL;
  if (ir_expr_equal(t, f)) return t;
  if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
  return ir_select(c, t, f);
}

static Expr *simp_let(Analyzer *an, Expr *e) {
  Expr *v = simp(an, e->let.value);
  if (!v) return NULL;
  if (v->kind == EK_IntImm || v->kind == EK_FloatImm || v->kind == EK_Var)
    return simp(an, ir_substitute1(e->let.body, e->let.var, v));
  Iv *old = an_set(an, e->let.var, bound(an, v));
  Expr *b = simp(an, e->let.body);
  an_restore(an, e->let.var, old);
  if (!b) return NULL;
  if (!ir_expr_uses_var(b, e->let.var)) return b;
  if (v == e->let.value && b == e->let.body) return e;
  return ir_let(e->let.var, v, b);
}

static Expr *simp_reduce(Analyzer *an, Expr *e) {
  int n = e->reduce.naxis;
  Iv **old = xcalloc((size_t)(n ? n : 1), sizeof(Iv *));
  for (int i = 0; i < n; i++) {
    IterVar *iv = e->reduce.axis[i];
    old[i] = pm_get(&an->vars, iv->var);
    if (iv->min && iv->extent) analyzer_bind_range(an, iv->var, iv->min, iv->extent);
  }
  Expr *src = simp(an, e->reduce.source), *cond = simp(an, e->reduce.cond);
  for (int i = n - 1; i >= 0; i--) an_restore(an, e->reduce.axis[i]->var, old[i]);
  free(old);
  if (!src || (e->reduce.cond && !cond)) return NULL;
  if (src == e->reduce.source && cond == e->reduce.cond) return e;
  Expr *c = KNEW(Expr);
  *c = *e;
  c->reduce.source = src;
  c->reduce.cond = is_true(cond) ? NULL : cond;
  return c;
}

static Expr *simp(Analyzer *an, Expr *e) {
  if (!e) return NULL;
  switch (e->kind) {
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
    return e;
  case EK_Var: {
    Iv *p = pm_get(&an->vars, e);
    if (p && p->lo == p->hi && !is_inf(p->lo) && is_intlike1(e->dtype)) return ir_int(p->lo, e->dtype);
    return e;
  }
  case EK_Add:
  case EK_Sub:
  case EK_Mul:
  case EK_Div:
  case EK_Mod:
  case EK_FloorDiv:
  case EK_FloorMod:
  case EK_Min:
  case EK_Max:
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
  case EK_And:
  case EK_Or: {
    Expr *a = simp(an, e->bin.a), *b = simp(an, e->bin.b);
    if (!a || !b) return NULL;
    return simp_bin(an, e, e->kind, a, b);
  }
  case EK_Not: {
    Expr *a = simp(an, e->bin.a);
    return a ? simp_not(an, e, a) : NULL;
  }
  case EK_Select:
    return simp_select(an, e);
  case EK_Cast: {
    Expr *a = simp(an, e->bin.a);
    return a ? simp_cast(e, a) : NULL;
  }
  case EK_Call: {
    Expr **args = NULL;
    for (int i = 0; i < e->call.nargs; i++) {
      Expr *x = simp(an, e->call.args[i]);
      if (!x) return NULL;
      if (x != e->call.args[i] && !args) {
        args = KNEWN(Expr *, e->call.nargs);
        memcpy(args, e->call.args, sizeof(Expr *) * (size_t)e->call.nargs);
      }
      if (args) args[i] = x;
    }
    if (!args) return e;
    Expr *c = KNEW(Expr);
    *c = *e;
    c->call.args = args;
    return c;
  }
  case EK_Read: {
    Expr **idx = NULL;
    for (int i = 0; i < e->read.n; i++) {
      Expr *x = simp(an, e->read.idx[i]);
      if (!x) return NULL;
      if (x != e->read.idx[i] && !idx) {
        idx = KNEWN(Expr *, e->read.n);
        memcpy(idx, e->read.idx, sizeof(Expr *) * (size_t)e->read.n);
      }
      if (idx) idx[i] = x;
    }
    if (!idx) return e;
    return ir_read(e->read.tensor, e->dtype, e->read.n, idx);
  }
  case EK_Load: {
    Expr *i = simp(an, e->load.index);
    if (!i) return NULL;
    return i == e->load.index ? e : ir_load(e->dtype, e->load.buf, i);
  }
  case EK_Ramp: {
    Expr *b = simp(an, e->ramp.base), *s = simp(an, e->ramp.stride);
    if (!b || !s) return NULL;
    if (ir_is_int_value(s, 0)) return ir_bcast(b, e->ramp.lanes);
    if (b == e->ramp.base && s == e->ramp.stride) return e;
    return ir_ramp(b, s, e->ramp.lanes);
  }
  case EK_Broadcast: {
    Expr *v = simp(an, e->bcast.value);
    if (!v) return NULL;
    return v == e->bcast.value ? e : ir_bcast(v, e->bcast.lanes);
  }
  case EK_Let:
    return simp_let(an, e);
  case EK_Reduce:
    return simp_reduce(an, e);
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
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
static Iv loop_iv(Analyzer *an, Expr *mn, Expr *ex) {
  Iv m = bound(an, mn), x = bound(an, ex);
  Iv r = iv_make(m.lo, end_add(m.hi, end_add(x.hi, -1, POS_INF), POS_INF));
  if (r.hi < r.lo) r.hi = r.lo; /* an empty loop: its body never runs */
  return r;
}

static Iv range_iv(Analyzer *an, Expr *min, Expr *extent) {
  Expr *mn = simp(an, min), *ex = simp(an, extent);
  if (!mn || !ex) return iv_full();
  return loop_iv(an, mn, ex);
}

void analyzer_bind_range(Analyzer *an, Expr *var, Expr *min, Expr *extent) {
  an_set(an, var, range_iv(an, min, extent));
}

void analyzer_bind_const(Analyzer *an, Expr *var, int64_t lo, int64_t hi) {
  an_set(an, var, iv_make(lo, hi));
}

bool analyzer_const_bound(Analyzer *an, Expr *e, int64_t *lo, int64_t *hi) {
  Expr *s = simp(an, e);
  if (!s || !(s->dtype.code == kDLInt || s->dtype.code == kDLUInt)) return false;
  Iv r = bound(an, s);
  if (is_inf(r.lo) || is_inf(r.hi)) return false;
  if (lo) *lo = r.lo;
  if (hi) *hi = r.hi;
  return true;
}

bool analyzer_can_prove(Analyzer *an, Expr *cond) {
  Expr *s = simp(an, cond);
  if (s && s->kind == EK_Broadcast) s = s->bcast.value;
  return is_true(s);
}

Expr *analyzer_simplify(Analyzer *an, Expr *e) { return simp(an, e); }

Expr *ir_simplify(Expr *e) {
  if (!e) return NULL;
  Analyzer *an = analyzer_new();
  Expr *r = simp(an, e);
  analyzer_free(an);
  return r;
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

/* Facts bound for a scope, undone in reverse order when it ends. */
typedef struct Saved {
  PtrVec vars, olds;
} Saved;

static void save_set(Analyzer *an, Saved *sv, Expr *var, Iv iv) {
  pv_push(&sv->vars, var);
  pv_push(&sv->olds, an_set(an, var, iv));
}

static void save_restore(Analyzer *an, Saved *sv) {
  for (int i = sv->vars.len - 1; i >= 0; i--) an_restore(an, sv->vars.data[i], sv->olds.data[i]);
  pv_free(&sv->vars);
  pv_free(&sv->olds);
}

/* Learn from `cond == truth` the simple facts `var OP const` (through
 * &&, ||, ! and likely()), narrowing the variables' ranges. */
static void assume(Analyzer *an, Saved *sv, Expr *cond, bool truth) {
  if (cond->kind == EK_Call && cond->call.op == INTRIN_likely) {
    assume(an, sv, cond->call.args[0], truth);
    return;
  }
  if (cond->kind == EK_Not) {
    assume(an, sv, cond->bin.a, !truth);
    return;
  }
  if ((cond->kind == EK_And && truth) || (cond->kind == EK_Or && !truth)) {
    assume(an, sv, cond->bin.a, truth);
    assume(an, sv, cond->bin.b, truth);
    return;
  }
  if (!ir_is_compare(cond->kind) || !is_index(cond->bin.a->dtype)) return;
  ExprKind k = cond->kind;
  Expr *v = cond->bin.a, *c = cond->bin.b;
  int64_t x;
  if (v->kind != EK_Var) { /* `c OP var`: mirror it */
    static const ExprKind mirror[] = {[EK_EQ] = EK_EQ, [EK_NE] = EK_NE, [EK_LT] = EK_GT,
                                      [EK_LE] = EK_GE, [EK_GT] = EK_LT, [EK_GE] = EK_LE};
    v = cond->bin.b;
    c = cond->bin.a;
    k = mirror[k];
  }
  if (v->kind != EK_Var || !const_int(c, &x) || !is_signed(v->dtype)) return;
  if (!truth) {
    static const ExprKind negate[] = {[EK_EQ] = EK_NE, [EK_NE] = EK_EQ, [EK_LT] = EK_GE,
                                      [EK_LE] = EK_GT, [EK_GT] = EK_LE, [EK_GE] = EK_LT};
    k = negate[k];
  }
  Iv r = var_iv(an, v);
  if (k == EK_EQ) r = iv_make(max64(r.lo, x), min64(r.hi, x));
  else if (k == EK_LT && x != NEG_INF) r.hi = min64(r.hi, x - 1);
  else if (k == EK_LE) r.hi = min64(r.hi, x);
  else if (k == EK_GT && x != POS_INF) r.lo = max64(r.lo, x + 1);
  else if (k == EK_GE) r.lo = max64(r.lo, x);
  else return;
  if (r.lo > r.hi) return; /* contradictory: the branch is dead; learn nothing */
  save_set(an, sv, v, r);
}

static Stmt *simp_stmt(Analyzer *an, Stmt *s);

static Stmt *simp_for(Analyzer *an, Stmt *s) {
  Expr *mn = simp(an, s->for_.min), *ex = simp(an, s->for_.extent);
  if (!mn || !ex) return NULL;
  int64_t n;
  if (const_int(ex, &n) && n <= 0) return ir_nop();
  if (const_int(ex, &n) && n == 1 && s->for_.fkind != FOR_THREAD)
    return simp_stmt(an, ir_substitute_stmt1(s->for_.body, s->for_.var, mn));
  Saved sv = {{0}, {0}};
  save_set(an, &sv, s->for_.var, loop_iv(an, mn, ex));
  Stmt *b = simp_stmt(an, s->for_.body);
  save_restore(an, &sv);
  if (!b) return NULL;
  if (ir_is_nop(b)) return ir_nop();
  if (mn == s->for_.min && ex == s->for_.extent && b == s->for_.body) return s;
  Stmt *c = KNEW(Stmt);
  *c = *s;
  c->for_.min = mn;
  c->for_.extent = ex;
  c->for_.body = b;
  return c;
}

static Expr **simp_array(Analyzer *an, int n, Expr **a, bool *changed, bool *failed) {
  Expr **r = KNEWN(Expr *, n ? n : 1);
  for (int i = 0; i < n; i++) {
    r[i] = simp(an, a[i]);
    if (!r[i]) *failed = true;
    if (r[i] != a[i]) *changed = true;
  }
  return r;
}

static Stmt *simp_stmt(Analyzer *an, Stmt *s) {
  if (!s) return NULL;
  switch (s->kind) {
  case SK_For:
    return simp_for(an, s);
  case SK_Store: {
    Expr *v = simp(an, s->store.value), *i = simp(an, s->store.index);
    if (v == s->store.value && i == s->store.index) return s;
    return ir_store(s->store.buf, v, i);
  }
  case SK_Provide: {
    bool ch = false, bad = false;
    Expr *v = simp(an, s->provide.value);
    Expr **idx = simp_array(an, s->provide.n, s->provide.idx, &ch, &bad);
    if (!v || bad) return NULL;
    if (!ch && v == s->provide.value) return s;
    return ir_provide(s->provide.tensor, v, s->provide.n, idx);
  }
  case SK_Allocate: {
    Expr *sz = simp(an, s->alloc.size);
    Stmt *b = simp_stmt(an, s->alloc.body);
    if (!sz || !b) return NULL;
    if (ir_is_nop(b)) return b;
    if (sz == s->alloc.size && b == s->alloc.body) return s;
    return ir_allocate(s->alloc.buf, s->alloc.dtype, sz, s->alloc.scope, b);
  }
  case SK_Realize: {
    bool ch = false, bad = false;
    Expr **mn = simp_array(an, s->realize.n, s->realize.min, &ch, &bad);
    Expr **ex = simp_array(an, s->realize.n, s->realize.extent, &ch, &bad);
    Stmt *b = simp_stmt(an, s->realize.body);
    if (bad || !b) return NULL;
    if (!ch && b == s->realize.body) return s;
    return ir_realize(s->realize.tensor, s->realize.n, mn, ex, s->realize.scope, b);
  }
  case SK_IfThenElse: {
    Expr *c = simp(an, s->if_.cond);
    if (!c) return NULL;
    if (c->kind == EK_IntImm) {
      if (c->int_value) return simp_stmt(an, s->if_.then_);
      return s->if_.else_ ? simp_stmt(an, s->if_.else_) : ir_nop();
    }
    Saved sv = {{0}, {0}};
    assume(an, &sv, c, true);
    Stmt *t = simp_stmt(an, s->if_.then_);
    save_restore(an, &sv);
    Stmt *e = NULL;
    if (s->if_.else_) {
      assume(an, &sv, c, false);
      e = simp_stmt(an, s->if_.else_);
      save_restore(an, &sv);
      if (!e) return NULL;
      if (ir_is_nop(e)) e = NULL;
    }
    if (!t) return NULL;
    if (ir_is_nop(t) && !e) return ir_nop();
    if (c == s->if_.cond && t == s->if_.then_ && e == s->if_.else_) return s;
    return ir_if(c, t, e);
  }
  case SK_Seq: {
    Stmt **v = KNEWN(Stmt *, s->seq.n);
    bool ch = false;
    for (int i = 0; i < s->seq.n; i++) {
      v[i] = simp_stmt(an, s->seq.s[i]);
      if (!v[i]) return NULL;
      ch |= v[i] != s->seq.s[i];
    }
    return ch ? ir_seq(s->seq.n, v) : s;
  }
  case SK_Evaluate: {
    Expr *v = simp(an, s->eval.value);
    if (!v) return NULL;
    return v == s->eval.value ? s : ir_evaluate(v);
  }
  case SK_Attr: {
    Expr *v = simp(an, s->attr.value);
    if (s->attr.value && !v) return NULL;
    Saved sv = {{0}, {0}};
    void *node = s->attr.node;
    Expr *var = NULL;
    if (node && *(KObjKind *)node == KOBJ_ITERVAR) var = ((IterVar *)node)->var;
    if (node && *(KObjKind *)node == KOBJ_EXPR && ((Expr *)node)->kind == EK_Var) var = node;
    /* A thread or virtual-thread extent ranges its variable over [0, n). */
    if (var && v && (!strcmp(s->attr.key, "thread_extent") || !strcmp(s->attr.key, "virtual_thread"))) {
      Iv x = bound(an, v);
      save_set(an, &sv, var, iv_make(0, max64(0, end_add(x.hi, -1, POS_INF))));
    }
    Stmt *b = simp_stmt(an, s->attr.body);
    save_restore(an, &sv);
    if (!b) return NULL;
    if (v == s->attr.value && b == s->attr.body) return s;
    Stmt *c = KNEW(Stmt);
    *c = *s;
    c->attr.value = v;
    c->attr.body = b;
    return c;
  }
  case SK_Produce: {
    Stmt *b = simp_stmt(an, s->produce.body);
    if (!b) return NULL;
    return b == s->produce.body ? s : ir_produce(s->produce.tensor, b);
  }
  case SK_LetStmt: {
    Expr *v = simp(an, s->let.value);
    if (!v) return NULL;
    if (v->kind == EK_IntImm || v->kind == EK_FloatImm || v->kind == EK_Var)
      return simp_stmt(an, ir_substitute_stmt1(s->let.body, s->let.var, v));
    Saved sv = {{0}, {0}};
    if (is_intlike1(v->dtype)) save_set(an, &sv, s->let.var, bound(an, v));
    Stmt *b = simp_stmt(an, s->let.body);
    save_restore(an, &sv);
    if (!b) return NULL;
    if (!ir_stmt_uses_var(b, s->let.var)) return b;
    if (v == s->let.value && b == s->let.body) return s;
    return ir_let_stmt(s->let.var, v, b);
  }
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

Stmt *ir_simplify_stmt(Stmt *s) {
  if (!s) return NULL;
  Analyzer *an = analyzer_new();
  Stmt *r = simp_stmt(an, s);
  analyzer_free(an);
  return r;
}
