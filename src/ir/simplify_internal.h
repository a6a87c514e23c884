/*
 * simplify_internal.h - the simplifier's private declarations.
 *
 * The simplifier (essay: simplify.c) is split by concern:
 *   simplify.c         constant folding and the rewrite rules (an_simp)
 *   simplify_bound.c   the Analyzer: variables' ranges, interval bounds of
 *                      expressions (an_bound), the public analyzer API
 *   simplify_linear.c  linear forms (sum of coefficient x atom + constant)
 *                      and the structural order that makes them canonical
 *   simplify_stmt.c    ir_simplify_stmt: loops, ifs and attributes bind facts
 * The interval and integer-value helpers below are small and used by all of
 * them, so they live here as static inline functions.
 */
#ifndef KILN_IR_SIMPLIFY_INTERNAL_H
#define KILN_IR_SIMPLIFY_INTERNAL_H

#include "ir.h"

/* ------------------------------------------------------------------ */
/* Intervals                                                          */
/* ------------------------------------------------------------------ */

#define NEG_INF INT64_MIN
#define POS_INF INT64_MAX

typedef struct Iv {
  int64_t lo, hi; /* NEG_INF / POS_INF: unbounded on that side */
} Iv;

static inline Iv iv_make(int64_t lo, int64_t hi) {
  Iv r = {lo, hi};
  return r;
}
static inline Iv iv_full(void) { return iv_make(NEG_INF, POS_INF); }
static inline bool is_inf(int64_t v) { return v == NEG_INF || v == POS_INF; }

/* A finite result clamps to the infinities when it reaches them: widening
 * is always sound. */
static inline int64_t sat(__int128 v) {
  if (v <= (__int128)NEG_INF) return NEG_INF;
  if (v >= (__int128)POS_INF) return POS_INF;
  return (int64_t)v;
}

/* Endpoint sum; `inf_if_mixed` is the result for -inf + +inf (the side
 * that keeps the interval sound). */
static inline int64_t end_add(int64_t a, int64_t b, int64_t inf_if_mixed) {
  bool ai = is_inf(a), bi = is_inf(b);
  if (ai && bi && a != b) return inf_if_mixed;
  if (ai) return a;
  if (bi) return b;
  return sat((__int128)a + b);
}

static inline int64_t end_neg(int64_t a) {
  if (a == NEG_INF) return POS_INF;
  if (a == POS_INF) return NEG_INF;
  return -a;
}

/* Endpoint product; 0 times anything is 0 (the endpoints are values). */
static inline int64_t end_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? NEG_INF : POS_INF;
  return sat((__int128)a * b);
}

static inline Iv iv_add(Iv a, Iv b) {
  return iv_make(end_add(a.lo, b.lo, NEG_INF), end_add(a.hi, b.hi, POS_INF));
}
static inline Iv iv_neg(Iv a) { return iv_make(end_neg(a.hi), end_neg(a.lo)); }
static inline Iv iv_sub(Iv a, Iv b) { return iv_add(a, iv_neg(b)); }

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static inline Iv iv_mul(Iv a, Iv b) {
  int64_t p[4] = {end_mul(a.lo, b.lo), end_mul(a.lo, b.hi), end_mul(a.hi, b.lo),
                  end_mul(a.hi, b.hi)};
  Iv r = iv_make(p[0], p[0]);
  for (int i = 1; i < 4; i++) {
    r.lo = min64(r.lo, p[i]);
    r.hi = max64(r.hi, p[i]);
  }
  return r;
}

static inline Iv iv_scale(Iv a, int64_t k) { return iv_mul(a, iv_make(k, k)); }
static inline Iv iv_union(Iv a, Iv b) { return iv_make(min64(a.lo, b.lo), max64(a.hi, b.hi)); }

static inline int64_t floordiv64(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t floormod64(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* Endpoint quotient by a finite non-zero d; infinities keep (or flip) sign. */
static inline int64_t end_div(int64_t a, int64_t d, bool floor_) {
  if (is_inf(a)) return d > 0 ? a : end_neg(a);
  return floor_ ? floordiv64(a, d) : a / d;
}

/* a / b (truncating or floor) for b's range excluding 0: both kinds are
 * monotone in a for fixed b and in b on a sign-constant range, so the
 * extremes are at the corners. */
static inline Iv iv_div(Iv a, Iv b, bool floor_) {
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
/* Integer values                                                     */
/* ------------------------------------------------------------------ */

/* A scalar integer type other than bool: what linear forms and ranges are
 * about. */
static inline bool is_index(DType t) {
  return t.lanes == 1 && (t.code == kDLInt || (t.code == kDLUInt && t.bits > 1));
}
static inline bool is_intlike1(DType t) { return t.lanes == 1 && (t.code == kDLInt || t.code == kDLUInt); }
static inline bool is_signed(DType t) { return t.code == kDLInt; }
/* A signed type whose arithmetic is assumed not to overflow: int32 and
 * int64 (undefined in C).  int8 and int16 wrap to their width, like the
 * unsigned types (ir.h's rule), so their ranges and comparisons get the
 * unsigned types' care. */
static inline bool no_wrap(DType t) { return t.code == kDLInt && t.bits >= 32; }
static inline bool is_float1(DType t) { return t.lanes == 1 && t.code == kDLFloat && (t.bits == 32 || t.bits == 64); }

/* The value of bit pattern u in type t: sign-extended for signed types,
 * zero-extended for unsigned ones, 0/1 for bool. */
static inline int64_t canon(uint64_t u, DType t) {
  if (dt_is_bool(t)) return (u & 1) != 0;
  int b = t.bits;
  if (b >= 64) return (int64_t)u;
  u &= ((uint64_t)1 << b) - 1;
  if (t.code == kDLInt && ((u >> (b - 1)) & 1)) u |= ~(uint64_t)0 << b;
  return (int64_t)u;
}

/* The sign-extended view of u modulo 2^bits: how linear forms hold
 * coefficients, so that unsigned `x - y` has coefficient -1, not 2^32-1. */
static inline int64_t sview(uint64_t u, DType t) {
  int b = t.bits;
  if (b >= 64) return (int64_t)u;
  u &= ((uint64_t)1 << b) - 1;
  if ((u >> (b - 1)) & 1) u |= ~(uint64_t)0 << b;
  return (int64_t)u;
}

static inline Expr *mk_int(DType t, int64_t v) { return ir_int(canon((uint64_t)v, t), t); }

/* The range of every value of type t. Types of 32 bits and more count as
 * unbounded, so that a free int32 variable reads as "unknown". */
static inline Iv type_iv(DType t) {
  if (dt_is_bool(t)) return iv_make(0, 1);
  if (!is_intlike1(t) && !(t.code == kDLInt || t.code == kDLUInt)) return iv_full();
  if (t.bits >= 32) return iv_make(is_signed(t) ? NEG_INF : 0, POS_INF);
  return iv_make(dt_int_min(t), dt_int_max(t));
}

/* Fit a computed range to type t: an unsigned, int8 or int16 result
 * outside the type's range may have wrapped, so it becomes the whole range. */
static inline Iv iv_fit(Iv r, DType t) {
  if (t.code == kDLInt && (t.bits >= 32 || (r.lo >= dt_int_min(t) && r.hi <= dt_int_max(t)))) return r;
  if (t.code != kDLUInt && t.code != kDLInt) return r;
  if (t.code == kDLUInt && (r.lo < 0 || r.hi > dt_int_max(t) || (t.bits >= 63 && r.hi == POS_INF))) return type_iv(t);
  if (t.code == kDLInt) return type_iv(t);
  return r;
}

static inline int cmp_vals(int64_t a, int64_t b, DType t) {
  if (is_signed(t)) return a < b ? -1 : a > b;
  uint64_t x = (uint64_t)a, y = (uint64_t)b;
  return x < y ? -1 : x > y;
}

/* Whether comparison k holds given r = -1, 0, 1 (a <, ==, > b) or 2
 * (unordered: a NaN). */
static inline bool compare_holds(ExprKind k, int r) {
  if (k == EK_EQ) return r == 0;
  if (k == EK_NE) return r != 0;
  if (k == EK_LT) return r == -1;
  if (k == EK_LE) return r == -1 || r == 0;
  if (k == EK_GT) return r == 1;
  return r == 1 || r == 0; /* EK_GE */
}

static inline bool const_int(const Expr *e, int64_t *v) { return ir_is_const_int(e, v); }

static inline bool const_float(const Expr *e, double *v) {
  if (e && e->kind == EK_FloatImm && is_float1(e->dtype)) {
    *v = e->float_value;
    return true;
  }
  return false;
}

static inline bool is_true(const Expr *e) { return e && e->kind == EK_IntImm && e->int_value != 0; }
static inline bool is_false(const Expr *e) { return e && e->kind == EK_IntImm && e->int_value == 0; }

/* ------------------------------------------------------------------ */
/* The analyzer (simplify_bound.c)                                    */
/* ------------------------------------------------------------------ */

struct Analyzer {
  PtrMap vars;  /* Var -> Iv * (owned); NULL = nothing known */
  PtrVec owned; /* every Iv allocated, freed with the analyzer */
};

/* Set var's range; returns the previous one (NULL if none) for
 * an_restore, so scoped facts (a loop body, an if branch) can be undone. */
Iv *an_set(Analyzer *an, Expr *var, Iv iv);
void an_restore(Analyzer *an, Expr *var, Iv *old);
/* What is known of variable v: its bound range, else its type's. */
Iv an_var_iv(Analyzer *an, Expr *v);
/* The range of e's values (interval arithmetic over the known ranges). */
Iv an_bound(Analyzer *an, Expr *e);
/* The values of a loop variable over [min, min + extent), from simplified
 * endpoints; possibly unbounded on one side. */
Iv an_loop_iv(Analyzer *an, Expr *mn, Expr *ex);

/* ------------------------------------------------------------------ */
/* Rewrites (simplify.c)                                              */
/* ------------------------------------------------------------------ */

/* e simplified under what an knows; NULL when e is NULL. */
Expr *an_simp(Analyzer *an, Expr *e);

/* ------------------------------------------------------------------ */
/* Linear forms (simplify_linear.c)                                   */
/* ------------------------------------------------------------------ */

/* A total structural order on expressions (variables by name, never by
 * address): -1, 0, 1. */
int simp_cmp_expr(Expr *a, Expr *b);

typedef struct Term {
  Expr *atom;
  int64_t k; /* sign view modulo 2^bits */
} Term;

typedef struct Lin {
  DType t;
  int n, cap;
  Term *v;   /* heap */
  int64_t c; /* constant, sign view */
  bool wrapped; /* signed: a coefficient or the constant overflowed the type (lin_add) */
} Lin;

void lin_init(Lin *l, DType t);
void lin_free(Lin *l);
/* a * b and a + b modulo 2^bits of t, sign view. */
int64_t lin_kmul(int64_t a, int64_t b, DType t);
int64_t lin_kadd(int64_t a, int64_t b, DType t);
/* The smallest value of signed t (INT64_MIN for 64 bits). */
int64_t lin_kmin(DType t);
/* Add k x atom; add k x e (e decomposed into terms).  On a signed type a
 * sum or product of constants whose exact value does not fit sets
 * l->wrapped: no wrapped constant is what the generated C computes (ir.h's
 * rule on signed overflow), so callers that fold (simp_linear) leave the
 * expression as it was and lin_bound knows nothing. */
void lin_term(Lin *l, Expr *atom, int64_t k);
void lin_add(Lin *l, Expr *e, int64_t k);
/* Drop zero terms. */
void lin_compact(Lin *l);
/* The form rebuilt as an expression in canonical order. */
Expr *lin_expr(Lin *l);
/* l = the linear form of e; l = a - b. */
void lin_of(Lin *l, Expr *e, DType t);
void lin_diff(Lin *l, Expr *a, Expr *b);
/* The range of l's values. */
Iv lin_bound(Analyzer *an, Lin *l);

#endif
