/*
 * eval.c - the expression interpreter: one walk of a scalar expression
 * tree, shared by the reference interpreter ir_eval (below) and the
 * operator library's compute-graph interpreter topi_eval
 * (src/topi/generic/eval.c), which differ only in what they are for:
 *
 *   IR_EVAL_STRICT (ir_eval) checks other code: the simplifier's property
 *   tests evaluate an expression before and after simplification at random
 *   points.  So it refuses (returns false) rather than guess whenever the
 *   generated C would not have one defined answer: division or remainder by
 *   zero, int32 / int64 overflow (undefined in C, and the simplifier is
 *   allowed to assume it does not happen; int8 and int16 wrap, ir.h), a float-to-int conversion out of range, an
 *   out-of-range shift, and float16 (no model of its rounding).
 *
 *   IR_EVAL_WRAP (topi_eval) folds constants at compile time, so it gives
 *   every expression the value the x86 code would: signed arithmetic wraps
 *   to its type, a float-to-int conversion saturates (NaN gives 0).  It
 *   still fails, with a message, where there is no value at all (an integer
 *   division by zero, an intrinsic outside its domain).
 *
 * What the walk knows is the value semantics of every scalar node (with
 * src/ir/scalar.c: integer normalisation, division, intrinsics) and Let
 * (its bindings are the walk's own, innermost first).  What it asks its
 * caller (IrEval's hooks) is a free variable's value, the nodes only the
 * caller can evaluate (topi_eval's tensor reads and reductions), and what
 * to do with the reason of a failure (ir_eval drops it).
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

static bool fail(IrEval *ev, const char *why) { return ev->fail ? ev->fail(ev, why) : false; }

/* The same with a formatted reason.  Callers write `ev->fail && failf(...)`
 * so that nothing is formatted (dt_str allocates) when no one reads it:
 * ir_eval's property tests refuse often. */
static bool failf(IrEval *ev, const char *fmt, ...) KILN_PRINTF(2, 3);
static bool failf(IrEval *ev, const char *fmt, ...) {
  if (!ev->fail) return false;
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return ev->fail(ev, why);
}

static bool in_range(__int128 v, DType t) {
  return v >= (__int128)dt_int_min(t) && v <= (__int128)dt_int_max(t);
}

static bool is_signed(DType t) { return t.code == kDLInt; }

/* Integer +, -, *: exact in 128 bits; unsigned (and bool) results wrap to
 * the width, signed ones overflow (strict: no value) or wrap. */
static bool int_arith(IrEval *ev, ExprKind k, int64_t a, int64_t b, DType t, int64_t *out) {
  __int128 x = a, y = b, r;
  if (!is_signed(t)) { /* as unsigned values */
    x = (__int128)(uint64_t)a;
    y = (__int128)(uint64_t)b;
  }
  if (k == EK_Add)
    r = x + y;
  else if (k == EK_Sub)
    r = x - y;
  else /* EK_Mul; the product wraps instead of overflowing */
    r = (__int128)((unsigned __int128)x * (unsigned __int128)y);
  if (is_signed(t) && t.bits >= 32 && ev->mode == IR_EVAL_STRICT) { /* int8, int16 wrap (ir.h) */
    if (!in_range(r, t)) return ev->fail && failf(ev, "%s overflows %s", expr_kind_name(k), dt_str(t));
    *out = (int64_t)r;
  } else {
    *out = ir_scalar_norm((uint64_t)r, t);
  }
  return true;
}

static double float_arith(ExprKind k, double a, double b) {
  switch (k) {
  case EK_Add: return a + b;
  case EK_Sub: return a - b;
  case EK_Mul: return a * b;
  case EK_Div: return a / b;
  case EK_Mod: return fmod(a, b);
  case EK_FloorDiv: return floor(a / b);
  default: return a - floor(a / b) * b; /* EK_FloorMod */
  }
}

/* -1, 0, 1 as a <, ==, > b in type t, 2 when unordered (NaN). */
static int compare(Val a, Val b, DType t) {
  if (dt_is_float(t)) return a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2;
  if (is_signed(t)) return a.i < b.i ? -1 : a.i > b.i;
  uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
  return x < y ? -1 : x > y;
}

/* Whether comparison k holds given compare()'s r. */
static bool compare_holds(ExprKind k, int r) {
  switch (k) {
  case EK_EQ: return r == 0;
  case EK_NE: return r != 0;
  case EK_LT: return r == -1;
  case EK_LE: return r == -1 || r == 0;
  case EK_GT: return r == 1;
  default: return r == 1 || r == 0; /* EK_GE */
  }
}

static bool cast(IrEval *ev, Val v, DType from, DType to, Val *out) {
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
  if (ev->mode == IR_EVAL_STRICT) {
    /* A float outside the target's range is undefined in C; so is NaN. */
    if (!(f >= (double)dt_int_min(to) && f < ldexp(1.0, to.bits - is_signed(to))))
      return ev->fail && failf(ev, "%g is outside %s", v.f, dt_str(to));
  } else { /* saturate */
    double lo = (double)dt_int_min(to), hi = (double)dt_int_max(to);
    if (isnan(f)) f = 0;
    if (f < lo) f = lo;
    if (f > hi) f = hi;
  }
  if (!is_signed(to) && to.bits == 64 && f >= 9223372036854775808.0)
    out->i = (int64_t)(uint64_t)f;
  else
    out->i = ir_scalar_norm((uint64_t)(int64_t)f, to);
  return true;
}

static bool call(IrEval *ev, Expr *e, Val *out) {
  Val a[2] = {{0, 0}, {0, 0}};
  for (int i = 0; i < e->call.nargs && i < 2; i++)
    if (!ir_eval_expr(ev, e->call.args[i], &a[i])) return false;
  const char *why = ir_scalar_call(e->call.op, e->dtype, e->call.args[0]->dtype, a, out);
  return why ? ev->fail && failf(ev, "%s: %s on %s", intrin_name(e->call.op), why, dt_str(e->dtype)) : true;
}

static bool lookup(IrEval *ev, Expr *var, Val *out) {
  for (const IrEvalScope *s = ev->scope; s; s = s->up)
    if (s->var == var) {
      *out = s->v;
      return true;
    }
  return ev->lookup(ev, var, out);
}

bool ir_eval_expr(IrEval *ev, Expr *e, Val *out) {
  if (!e) return fail(ev, "a missing expression");
  if (e->dtype.lanes != 1) return fail(ev, "vector expressions are not supported");
  DType t = e->dtype;
  if (ev->mode == IR_EVAL_STRICT && dt_is_float(t) && t.bits != 32 && t.bits != 64)
    return ev->fail && failf(ev, "%s has no model of its rounding", dt_str(t));
  out->i = 0;
  out->f = 0;
  Val a, b;
  switch (e->kind) {
  case EK_IntImm:
    out->i = ir_scalar_norm((uint64_t)e->int_value, t);
    if (dt_is_float(t)) out->f = (double)e->int_value;
    return true;
  case EK_FloatImm:
    out->f = ir_scalar_round(e->float_value, t);
    return true;
  case EK_Var:
    return lookup(ev, e, out);
  case EK_Add:
  case EK_Sub:
  case EK_Mul:
  case EK_Div:
  case EK_Mod:
  case EK_FloorDiv:
  case EK_FloorMod: {
    if (!ir_eval_expr(ev, e->bin.a, &a) || !ir_eval_expr(ev, e->bin.b, &b)) return false;
    if (dt_is_float(t)) {
      out->f = ir_scalar_round(float_arith(e->kind, a.f, b.f), t);
      return true;
    }
    if (e->kind == EK_Add || e->kind == EK_Sub || e->kind == EK_Mul) return int_arith(ev, e->kind, a.i, b.i, t, &out->i);
    const char *why = ir_scalar_int_div(e->kind, a.i, b.i, t, &out->i);
    return why ? fail(ev, why) : true;
  }
  case EK_Min:
  case EK_Max: {
    if (!ir_eval_expr(ev, e->bin.a, &a) || !ir_eval_expr(ev, e->bin.b, &b)) return false;
    /* C's (a < b ? a : b) and (a > b ? a : b) */
    int r = compare(a, b, t);
    *out = (e->kind == EK_Min ? r == -1 : r == 1) ? a : b;
    return true;
  }
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
    if (!ir_eval_expr(ev, e->bin.a, &a) || !ir_eval_expr(ev, e->bin.b, &b)) return false;
    /* NaN is unordered: every comparison with it but != is false */
    out->i = compare_holds(e->kind, compare(a, b, e->bin.a->dtype));
    return true;
  case EK_And:
  case EK_Or:
    if (!ir_eval_expr(ev, e->bin.a, &a)) return false;
    if ((e->kind == EK_And) == !a.i) { /* short circuit, as C's && and || */
      out->i = a.i != 0;
      return true;
    }
    if (!ir_eval_expr(ev, e->bin.b, &b)) return false;
    out->i = b.i != 0;
    return true;
  case EK_Not:
    if (!ir_eval_expr(ev, e->bin.a, &a)) return false;
    out->i = !a.i;
    return true;
  case EK_Select:
    if (!ir_eval_expr(ev, e->select.cond, &a)) return false;
    return ir_eval_expr(ev, a.i ? e->select.t : e->select.f, out);
  case EK_Cast:
    if (!ir_eval_expr(ev, e->bin.a, &a)) return false;
    return cast(ev, a, e->bin.a->dtype, t, out);
  case EK_Call:
    return call(ev, e, out);
  case EK_Let: {
    IrEvalScope s = {e->let.var, {0, 0}, ev->scope};
    if (!ir_eval_expr(ev, e->let.value, &s.v)) return false;
    ev->scope = &s;
    bool ok = ir_eval_expr(ev, e->let.body, out);
    ev->scope = s.up;
    return ok;
  }
  case EK_Read:
  case EK_Reduce:
    if (ev->other) return ev->other(ev, e, out);
    return ev->fail && failf(ev, "%s nodes are not supported", expr_kind_name(e->kind));
  case EK_StrImm:
  case EK_Load:
  case EK_Ramp:
  case EK_Broadcast:
    return ev->fail && failf(ev, "%s nodes are not supported", expr_kind_name(e->kind));
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* ---- ir_eval: the strict interpreter on variables given as doubles ---- */

typedef struct RefEval {
  IrEval ev; /* first: the hooks get it */
  const PtrMap *env;
} RefEval;

static bool ref_lookup(IrEval *ev, Expr *var, Val *out) {
  const PtrMap *env = ((RefEval *)ev)->env;
  const double *p = env ? pm_get(env, var) : NULL;
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

bool ir_eval(Expr *e, const PtrMap *env, double *out) {
  RefEval r = {{IR_EVAL_STRICT, ref_lookup, NULL, NULL, NULL}, env};
  Val v;
  if (!ir_eval_expr(&r.ev, e, &v)) return false;
  *out = ir_scalar_as_double(v, e->dtype);
  return true;
}
