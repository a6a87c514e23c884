/*
 * simplify.c - the arithmetic simplifier and the Analyzer it reasons with.
 *
 * Every kernel Kiln generates passes through here, so the first rule is that
 * a rewrite must never change what an expression computes; the second is
 * that the output is deterministic (it ends up in golden texts).
 *
 * How it works.  an_simp() rewrites bottom-up: children first, then the rules
 * of the node's kind.
 *
 *  - Constants fold with C's semantics for the node's type: unsigned
 *    integers wrap to the type's width (computed on uint64), Div/Mod
 *    truncate, FloorDiv and FloorMod floor, floats compute in double and
 *    round to float32 when the type is float32.  A division by zero, or
 *    INT_MIN / -1 (which traps on x86), is left unfolded, and so is an
 *    int32 or int64 +, - or * whose exact result does not fit its type
 *    (also inside linear forms, ir.h's rule on overflow): the C we
 *    generate leaves it undefined, so no wrapped constant is what it
 *    computes (and an int64 one would be a wrong size).  int8 and int16
 *    wrap, as the unsigned types do (the C printer casts their results
 *    back to the type).
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
 *  - Facts about values come from interval arithmetic (an_bound()): each
 *    variable has a constant range bound by the caller or by an enclosing
 *    loop, and each node maps ranges to a range, with INT64_MIN / INT64_MAX
 *    standing for minus / plus infinity.  Like TVM, the reasoning assumes
 *    int32 and int64 arithmetic does not overflow (it is undefined
 *    behaviour in the C we generate); unsigned, int8 and int16 results that
 *    could wrap widen to the type's whole range.
 *
 *  - Comparisons of int32 and int64 are decided from the range of the
 *    simplified difference a - b, and otherwise normalized to
 *    `positive terms OP negative terms - constant`.  min/max pick a side
 *    when the difference's sign is known.  floordiv/floormod by a positive
 *    constant pull out terms whose coefficients are multiples of the divisor
 *    and fold when the remainder's range fits in one period; Div/Mod get the
 *    same treatment only when the dividend is provably non-negative.
 *
 * Deliberately conservative: unsigned, int8 and int16 division and
 * comparisons use only per-operand ranges; division by negative or non-constant divisors is left
 * alone; floats fold constants and drop `x*1`, `x + 0`, `x - 0`, `x/1` but
 * are never reassociated; intrinsic calls are left as they are.  Nothing
 * is memoized, so a DAG that shares subtrees costs its size as a tree.
 *
 * ir_simplify_stmt walks statements with one analyzer: a loop's variable is
 * bound to the loop's range inside its body, an `if` narrows simple
 * `var OP const` facts inside its branches, and a thread_extent attribute
 * bounds its thread variable.
 *
 * Where: this file folds constants and holds the rewrite rules;
 * simplify_bound.c the Analyzer and an_bound(), simplify_linear.c the linear
 * forms and the structural order, simplify_stmt.c the statement walk
 * (shared declarations: simplify_internal.h).
 */
#include "simplify_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Constant folding                                                   */
/* ------------------------------------------------------------------ */

/* Fold an integer binary op on canonical values x, y of type t.  False if
 * C would not give one answer (division by zero, INT_MIN / -1, a signed
 * result that does not fit t). */
static bool fold_int(ExprKind k, int64_t x, int64_t y, DType t, int64_t *out) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  int64_t exact;
  if (no_wrap(t) && (k == EK_Add || k == EK_Sub || k == EK_Mul)) {
    bool over = k == EK_Add   ? __builtin_add_overflow(x, y, &exact)
                : k == EK_Sub ? __builtin_sub_overflow(x, y, &exact)
                              : __builtin_mul_overflow(x, y, &exact);
    if (over || exact < dt_int_min(t) || exact > dt_int_max(t)) return false;
  }
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

/* ------------------------------------------------------------------ */
/* Rules                                                               */
/* ------------------------------------------------------------------ */

static Expr *mk_bool(bool v, int lanes) { return ir_bcast(ir_bool(v), lanes); }

/* Build a binary node of simplified operands, reusing e when unchanged. */
static Expr *rebuild_bin(Expr *e, ExprKind k, Expr *a, Expr *b) {
  if (e && e->kind == k && e->bin.a == a && e->bin.b == b) return e;
  return ir_binary(k, a, b);
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
    q->c = lin_kadd(q->c, p, t);
    return lin_expr(q);
  }
  r->c = lin_kadd(r->c, -pc, t);
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
  if (l.wrapped) {
    lin_free(&l);
    return NULL;
  }
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
  if (trunc_ && an_bound(an, a).lo < 0) { /* truncation differs from floor */
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
    int64_t g = gcd_i64(c, r.v[j].k < 0 ? -r.v[j].k : r.v[j].k);
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
      Expr *inner = an_simp(an, ir_binary(is_div ? EK_FloorDiv : EK_FloorMod, lin_expr(&x), mk_int(t, c / g)));
      if (is_div) {
        lin_add(&q, inner, 1);
        res = lin_expr(&q);
      } else {
        res = an_simp(an, ir_add(ir_mul(inner, mk_int(t, g)), lin_expr(&sm)));
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
  int64_t g = gcd_i64(c, r.c);
  for (int i = 0; i < r.n; i++) g = gcd_i64(g, r.v[i].k);
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
      inner = an_simp(an, ir_binary(at->kind, at->bin.a, mk_int(t, ac))); /* may reduce further */
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
  if (no_wrap(t) && c > 0) {
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
  if (no_wrap(t)) {
    Lin d;
    lin_diff(&d, a, b);
    Iv r = lin_bound(an, &d);
    lin_free(&d);
    if (r.hi <= 0) a_le_b = 1;
    else if (r.lo >= 0) a_le_b = -1;
  }
  if (!a_le_b) {
    Iv x = an_bound(an, a), y = an_bound(an, b);
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
  if (no_wrap(t)) {
    lin_diff(&d, a, b);
    r = lin_bound(an, &d);
    have_lin = true;
  } else {
    Iv x = an_bound(an, a), y = an_bound(an, b);
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
  bool overflow = d.wrapped || d.c == lin_kmin(t); /* a coefficient whose negation wraps */
  for (int i = 0; i < d.n; i++) overflow |= d.v[i].k == lin_kmin(t);
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
        if (lin_kmul(km, c, l->t) != l->v[i].k) continue;
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
    if (simp_cmp_expr(a, b) > 0) { /* x*y and y*x are one atom */
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
  if (l.wrapped) { /* signed constants overflowed: leave it as written */
    lin_free(&l);
    return rebuild_bin(e, k, a, b);
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
    return ir_bcast(an_simp(an, ir_binary(k, a->bcast.value, b->bcast.value)), lanes);
  if (is_index(dt_scalar(a->dtype))) {
    Expr *ra = a->kind == EK_Ramp ? a : NULL, *rb = b->kind == EK_Ramp ? b : NULL;
    Expr *ba = a->kind == EK_Broadcast ? a->bcast.value : NULL;
    Expr *bb = b->kind == EK_Broadcast ? b->bcast.value : NULL;
    if (k == EK_Add || k == EK_Sub) {
      if (ra && bb)
        return ir_ramp(an_simp(an, ir_binary(k, ra->ramp.base, bb)), ra->ramp.stride, lanes);
      if (ba && rb) {
        Expr *st = k == EK_Add ? rb->ramp.stride : an_simp(an, ir_neg(rb->ramp.stride));
        return ir_ramp(an_simp(an, ir_binary(k, ba, rb->ramp.base)), st, lanes);
      }
      if (ra && rb)
        return an_simp(an, ir_ramp(ir_binary(k, ra->ramp.base, rb->ramp.base),
                                ir_binary(k, ra->ramp.stride, rb->ramp.stride), lanes));
    }
    if (k == EK_Mul && ((ra && bb) || (ba && rb))) {
      Expr *r = ra ? ra : rb, *x = ra ? bb : ba;
      return an_simp(an, ir_ramp(ir_mul(r->ramp.base, x), ir_mul(r->ramp.stride, x), lanes));
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
  Expr *c = an_simp(an, e->select.cond);
  Expr *cc = c && c->kind == EK_Broadcast ? c->bcast.value : c;
  if (cc && cc->kind == EK_IntImm) return an_simp(an, cc->int_value ? e->select.t : e->select.f);
  Expr *t = an_simp(an, e->select.t), *f = an_simp(an, e->select.f);
  if (!c || !t || !f) return NULL;
  if (ir_expr_equal(t, f)) return t;
  if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
  return ir_select(c, t, f);
}

static Expr *simp_let(Analyzer *an, Expr *e) {
  Expr *v = an_simp(an, e->let.value);
  if (!v) return NULL;
  if (v->kind == EK_IntImm || v->kind == EK_FloatImm || v->kind == EK_Var)
    return an_simp(an, ir_substitute1(e->let.body, e->let.var, v));
  Iv *old = an_set(an, e->let.var, an_bound(an, v));
  Expr *b = an_simp(an, e->let.body);
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
  Expr *src = an_simp(an, e->reduce.source), *cond = an_simp(an, e->reduce.cond);
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

Expr *an_simp(Analyzer *an, Expr *e) {
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
  KILN_EXPR_BINARY_CASES {
    Expr *a = an_simp(an, e->bin.a), *b = an_simp(an, e->bin.b);
    if (!a || !b) return NULL;
    return simp_bin(an, e, e->kind, a, b);
  }
  case EK_Not: {
    Expr *a = an_simp(an, e->bin.a);
    return a ? simp_not(an, e, a) : NULL;
  }
  case EK_Select:
    return simp_select(an, e);
  case EK_Cast: {
    Expr *a = an_simp(an, e->bin.a);
    return a ? simp_cast(e, a) : NULL;
  }
  case EK_Call: {
    Expr **args = NULL;
    for (int i = 0; i < e->call.nargs; i++) {
      Expr *x = an_simp(an, e->call.args[i]);
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
      Expr *x = an_simp(an, e->read.idx[i]);
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
    Expr *i = an_simp(an, e->load.index);
    if (!i) return NULL;
    return i == e->load.index ? e : ir_load(e->dtype, e->load.buf, i);
  }
  case EK_Ramp: {
    Expr *b = an_simp(an, e->ramp.base), *s = an_simp(an, e->ramp.stride);
    if (!b || !s) return NULL;
    if (ir_is_int_value(s, 0)) return ir_bcast(b, e->ramp.lanes);
    if (b == e->ramp.base && s == e->ramp.stride) return e;
    return ir_ramp(b, s, e->ramp.lanes);
  }
  case EK_Broadcast: {
    Expr *v = an_simp(an, e->bcast.value);
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

Expr *analyzer_simplify(Analyzer *an, Expr *e) { return an_simp(an, e); }

Expr *ir_simplify(Expr *e) {
  if (!e) return NULL;
  Analyzer *an = analyzer_new();
  Expr *r = an_simp(an, e);
  analyzer_free(an);
  return r;
}
