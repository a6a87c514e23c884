/*
 * eval.c - a reference interpreter for scalar expressions.
 *
 * It exists to check other code: the simplifier's property tests evaluate
 * an expression before and after simplification at random points, and later
 * passes can do the same.  So it favours being obviously right over being
 * fast, and it refuses (returns false) rather than guess whenever the
 * generated C would not have one defined answer: division or remainder by
 * zero, signed overflow (undefined in C, and the simplifier is allowed to
 * assume it does not happen), a float-to-int conversion out of range, an
 * out-of-range shift, an unbound variable, and anything not scalar (tensor
 * reads, loads, reductions, vectors, strings).
 *
 * Integers are held exactly as int64: signed types sign-extended, unsigned
 * ones zero-extended (uint64 as its bit pattern), bool as 0/1; unsigned
 * arithmetic wraps to the type's width.  Floats are computed in double and
 * rounded to float after every float32 operation, as C does with
 * FLT_EVAL_METHOD 0.  Select, && and || evaluate only the operand C would.
 */
#include "ir.h"

#include <math.h>

typedef IrScalar Val; /* scalar.c: int64 for integers and bool, double for floats */

/* Let-bound variables, innermost first, in front of the caller's env. */
typedef struct Scope {
  const Expr *var;
  Val v;
  const struct Scope *up;
} Scope;

typedef struct Ev {
  const PtrMap *env;
} Ev;

static bool ev(const Ev *c, const Scope *sc, Expr *e, Val *out);


static bool in_range(__int128 v, DType t) {
  return v >= (__int128)dt_int_min(t) && v <= (__int128)dt_int_max(t);
}


static bool is_signed(DType t) { return t.code == kDLInt; }

/* Integer +, -, *: exact in 128 bits, then either checked (signed) or
 * wrapped (unsigned, bool). */
static bool int_arith(ExprKind k, int64_t a, int64_t b, DType t, int64_t *out) {
  __int128 x = a, y = b, r;
  if (!is_signed(t)) { /* as unsigned values */
    x = (__int128)(uint64_t)a;
    y = (__int128)(uint64_t)b;
  }
  if (k == EK_Add)
    r = x + y;
  else if (k == EK_Sub)
    r = x - y;
  else /* EK_Mul; the unsigned product wraps instead of overflowing */
    r = (__int128)((unsigned __int128)x * (unsigned __int128)y);
  if (is_signed(t)) {
    if (!in_range(r, t)) return false;
    *out = (int64_t)r;
  } else {
    *out = ir_scalar_norm((uint64_t)r, t);
  }
  return true;
}

/* Division family on integers; false where C leaves it undefined. */
static bool int_div(ExprKind k, int64_t a, int64_t b, DType t, int64_t *out) {
  return ir_scalar_int_div(k, a, b, t, out) == NULL;
}

static double float_arith(ExprKind k, double a, double b) {
  if (k == EK_Add) return a + b;
  if (k == EK_Sub) return a - b;
  if (k == EK_Mul) return a * b;
  if (k == EK_Div) return a / b;
  if (k == EK_Mod) return fmod(a, b);
  if (k == EK_FloorDiv) return floor(a / b);
  return a - floor(a / b) * b; /* EK_FloorMod */
}

/* Whether comparison k holds given r = -1, 0, 1 (a <, ==, > b) or 2
 * (unordered). */
static bool compare_holds(ExprKind k, int r) {
  if (k == EK_EQ) return r == 0;
  if (k == EK_NE) return r != 0;
  if (k == EK_LT) return r == -1;
  if (k == EK_LE) return r == -1 || r == 0;
  if (k == EK_GT) return r == 1;
  return r == 1 || r == 0; /* EK_GE */
}

static int cmp_int(int64_t a, int64_t b, DType t) {
  if (is_signed(t)) return a < b ? -1 : a > b;
  uint64_t x = (uint64_t)a, y = (uint64_t)b;
  return x < y ? -1 : x > y;
}


static bool cast(Val v, DType from, DType to, Val *out) {
  if (dt_is_float(to)) {
    out->f = ir_scalar_round(ir_scalar_as_double(v, from), to);
    return true;
  }
  if (dt_is_bool(to)) {
    out->i = dt_is_float(from) ? v.f != 0 : v.i != 0;
    return true;
  }
  if (!dt_is_float(from)) {
    out->i = ir_scalar_norm((uint64_t)v.i, to);
    return true;
  }
  double f = trunc(v.f);
  /* A float outside the target's range is undefined in C; so is NaN. */
  if (!(f >= (double)dt_int_min(to) && f < ldexp(1.0, to.bits - is_signed(to)))) return false;
  if (!is_signed(to) && to.bits == 64 && f >= 9223372036854775808.0)
    out->i = (int64_t)(uint64_t)f;
  else
    out->i = (int64_t)f;
  return true;
}

static bool call(const Ev *c, const Scope *sc, Expr *e, Val *out) {
  Val a[2] = {{0, 0}, {0, 0}};
  for (int i = 0; i < e->call.nargs && i < 2; i++)
    if (!ev(c, sc, e->call.args[i], &a[i])) return false;
  return ir_scalar_call(e->call.op, e->dtype, e->call.args[0]->dtype, a, out) == NULL;
}

static bool lookup(const Ev *c, const Scope *sc, Expr *var, Val *out) {
  for (; sc; sc = sc->up)
    if (sc->var == var) {
      *out = sc->v;
      return true;
    }
  const double *p = c->env ? pm_get(c->env, var) : NULL;
  if (!p) return false;
  DType t = var->dtype;
  if (dt_is_float(t)) {
    out->f = ir_scalar_round(*p, t);
    return true;
  }
  double v = *p;
  if (v != trunc(v)) return false;
  if (dt_is_bool(t)) {
    out->i = v != 0;
    return true;
  }
  if (!(v >= (double)dt_int_min(t) && v <= (double)dt_int_max(t))) return false;
  out->i = (int64_t)v;
  return true;
}

static bool ev(const Ev *c, const Scope *sc, Expr *e, Val *out) {
  if (!e || e->dtype.lanes != 1) return false;
  DType t = e->dtype;
  if (dt_is_float(t) && t.bits != 32 && t.bits != 64) return false; /* no half-precision model */
  out->i = 0;
  out->f = 0;
  Val a, b;
  switch (e->kind) {
  case EK_IntImm:
    out->i = ir_scalar_norm((uint64_t)e->int_value, t);
    return true;
  case EK_FloatImm:
    out->f = ir_scalar_round(e->float_value, t);
    return true;
  case EK_Var:
    return lookup(c, sc, e, out);
  case EK_Add:
  case EK_Sub:
  case EK_Mul:
  case EK_Div:
  case EK_Mod:
  case EK_FloorDiv:
  case EK_FloorMod:
    if (!ev(c, sc, e->bin.a, &a) || !ev(c, sc, e->bin.b, &b)) return false;
    if (dt_is_float(t)) {
      out->f = ir_scalar_round(float_arith(e->kind, a.f, b.f), t);
      return true;
    }
    if (e->kind == EK_Add || e->kind == EK_Sub || e->kind == EK_Mul)
      return int_arith(e->kind, a.i, b.i, t, &out->i);
    return int_div(e->kind, a.i, b.i, t, &out->i);
  case EK_Min:
  case EK_Max: {
    if (!ev(c, sc, e->bin.a, &a) || !ev(c, sc, e->bin.b, &b)) return false;
    bool a_less = dt_is_float(t) ? a.f < b.f : cmp_int(a.i, b.i, t) < 0;
    /* C's (a < b ? a : b) and (a > b ? a : b) */
    bool b_less = dt_is_float(t) ? b.f < a.f : cmp_int(b.i, a.i, t) < 0;
    if (e->kind == EK_Min)
      *out = a_less ? a : b;
    else
      *out = b_less ? a : b;
    return true;
  }
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE: {
    if (!ev(c, sc, e->bin.a, &a) || !ev(c, sc, e->bin.b, &b)) return false;
    DType ot = e->bin.a->dtype;
    /* NaN is unordered: every comparison with it but != is false. */
    int r = dt_is_float(ot) ? (a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2)
                            : cmp_int(a.i, b.i, ot);
    out->i = compare_holds(e->kind, r);
    return true;
  }
  case EK_And:
  case EK_Or:
    if (!ev(c, sc, e->bin.a, &a)) return false;
    if ((e->kind == EK_And) == !a.i) { /* short circuit, as C's && and || */
      out->i = a.i != 0;
      return true;
    }
    if (!ev(c, sc, e->bin.b, &b)) return false;
    out->i = b.i != 0;
    return true;
  case EK_Not:
    if (!ev(c, sc, e->bin.a, &a)) return false;
    out->i = !a.i;
    return true;
  case EK_Select:
    if (!ev(c, sc, e->select.cond, &a)) return false;
    return ev(c, sc, a.i ? e->select.t : e->select.f, out);
  case EK_Cast:
    if (!ev(c, sc, e->bin.a, &a)) return false;
    return cast(a, e->bin.a->dtype, t, out);
  case EK_Call:
    return call(c, sc, e, out);
  case EK_Let: {
    Scope s = {e->let.var, {0, 0}, sc};
    if (!ev(c, sc, e->let.value, &s.v)) return false;
    return ev(c, &s, e->let.body, out);
  }
  case EK_StrImm:
  case EK_Read:
  case EK_Load:
  case EK_Ramp:
  case EK_Broadcast:
  case EK_Reduce:
    return false;
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

bool ir_eval(Expr *e, const PtrMap *env, double *out) {
  Ev c = {env};
  Val v;
  if (!ev(&c, NULL, e, &v)) return false;
  *out = ir_scalar_as_double(v, e->dtype);
  return true;
}
