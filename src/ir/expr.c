/*
 * expr.c - expression builders, type promotion and simple queries.
 *
 * Builders allocate from the current arena.  An operand that is NULL makes
 * the builder return NULL (the first failure's message stays); a type
 * mismatch that promotion cannot reconcile sets an error and returns NULL.
 */
#include "ir.h"

#include <math.h>
#include <string.h>

static const char *expr_names[] = {
#define X(n, operands) #n,
    KILN_EXPR_KINDS(X)
#undef X
};

const char *expr_kind_name(ExprKind k) { return expr_names[k]; }

static const struct {
  const char *name;
  int nargs;
} intrins[] = {
#define X(n, a) {#n, a},
    KILN_INTRINSICS(X)
#undef X
};

const char *intrin_name(Intrinsic op) { return intrins[op].name; }
int intrin_nargs(Intrinsic op) { return intrins[op].nargs; }
int intrin_lookup(const char *name) {
  for (int i = 0; i < INTRIN__COUNT; i++)
    if (!strcmp(intrins[i].name, name)) return i;
  return -1;
}

static Expr *mk(ExprKind k, DType t) {
  Expr *e = KNEW(Expr);
  e->okind = KOBJ_EXPR;
  e->kind = k;
  e->dtype = t;
  return e;
}

Expr *ir_int(int64_t v, DType t) {
  if (t.lanes > 1) return ir_bcast(ir_int(v, dt_scalar(t)), t.lanes);
  if (dt_is_float(t)) return ir_float((double)v, t);
  Expr *e = mk(EK_IntImm, t);
  if (dt_is_bool(t)) v = v != 0;
  e->int_value = v;
  return e;
}
Expr *ir_i32(int64_t v) { return ir_int(v, DT_I32); }
Expr *ir_i64(int64_t v) { return ir_int(v, DT_I64); }
Expr *ir_bool(bool v) { return ir_int(v, DT_BOOL); }

Expr *ir_float(double v, DType t) {
  if (t.lanes > 1) return ir_bcast(ir_float(v, dt_scalar(t)), t.lanes);
  if (!dt_is_float(t)) return ir_int((int64_t)v, t);
  Expr *e = mk(EK_FloatImm, t);
  e->float_value = t.bits == 32 ? (double)(float)v : v;
  return e;
}
Expr *ir_f32(double v) { return ir_float(v, DT_F32); }

Expr *ir_const(double v, DType t) {
  if (dt_is_float(t)) return ir_float(v, t);
  return ir_int((int64_t)v, t);
}

Expr *ir_str(const char *s) {
  Expr *e = mk(EK_StrImm, DT_HANDLE);
  e->str = kstrdup(s);
  return e;
}

Expr *ir_var(const char *name, DType t) {
  Expr *e = mk(EK_Var, t);
  e->var.name = kstrdup(name);
  return e;
}

bool ir_is_const_int(const Expr *e, int64_t *out) {
  if (e && e->kind == EK_IntImm) {
    if (out) *out = e->int_value;
    return true;
  }
  return false;
}

bool ir_is_int_value(const Expr *e, int64_t v) {
  int64_t x;
  return ir_is_const_int(e, &x) && x == v;
}

bool ir_is_const(const Expr *e) {
  if (!e) return false;
  if (e->kind == EK_Broadcast) e = e->bcast.value;
  return e->kind == EK_IntImm || e->kind == EK_FloatImm;
}

bool ir_is_binary(ExprKind k) { return k >= EK_Add && k <= EK_Or; }
bool ir_is_compare(ExprKind k) { return k >= EK_EQ && k <= EK_GE; }

/* Convert a constant to another scalar type without a Cast node. */
static Expr *retype_const(Expr *c, DType t) {
  if (c->kind == EK_IntImm) return ir_const((double)c->int_value, t);
  if (c->kind == EK_FloatImm) return ir_const(c->float_value, t);
  return NULL;
}

/* Bring a and b to one type. Returns false (error set) on a mismatch. */
static bool match_types(Expr **pa, Expr **pb, const char *what) {
  Expr *a = *pa, *b = *pb;
  DType ta = a->dtype, tb = b->dtype;
  if (ta.lanes != tb.lanes) {
    if (ta.lanes == 1)
      a = ir_bcast(a, tb.lanes);
    else if (tb.lanes == 1)
      b = ir_bcast(b, ta.lanes);
    else {
      kiln_set_error("%s: operands have %d and %d vector lanes", what, ta.lanes, tb.lanes);
      return false;
    }
    ta = a->dtype;
    tb = b->dtype;
  }
  if (!dt_eq(ta, tb)) {
    if (dt_is_handle(ta) || dt_is_handle(tb)) {
      kiln_set_error("%s: cannot combine %s with %s", what, dt_str(ta), dt_str(tb));
      return false;
    }
    DType target;
    bool af = dt_is_float(ta), bf = dt_is_float(tb);
    if (af && !bf)
      target = ta;
    else if (bf && !af)
      target = tb;
    else if (ir_is_const(b) && !ir_is_const(a))
      target = ta;
    else if (ir_is_const(a) && !ir_is_const(b))
      target = tb;
    else if (ta.bits != tb.bits)
      target = ta.bits > tb.bits ? ta : tb;
    else /* same width, signed vs unsigned (or bool vs bool-like) */
      target = dt_is_int(ta) ? ta : tb;
    if (!dt_eq(ta, target)) {
      Expr *s = a->kind == EK_Broadcast ? a->bcast.value : a;
      Expr *c = retype_const(s, dt_scalar(target));
      a = c ? (ta.lanes > 1 ? ir_bcast(c, ta.lanes) : c) : ir_cast(target, a);
    }
    if (!dt_eq(tb, target)) {
      Expr *s = b->kind == EK_Broadcast ? b->bcast.value : b;
      Expr *c = retype_const(s, dt_scalar(target));
      b = c ? (tb.lanes > 1 ? ir_bcast(c, tb.lanes) : c) : ir_cast(target, b);
    }
  }
  *pa = a;
  *pb = b;
  return true;
}

Expr *ir_binary(ExprKind k, Expr *a, Expr *b) {
  if (!a || !b) return NULL;
  KASSERT(ir_is_binary(k));
  if (!match_types(&a, &b, expr_kind_name(k))) return NULL;
  DType t = a->dtype;
  if (ir_is_compare(k)) t = dt_make(kDLUInt, 1, t.lanes);
  if (k == EK_And || k == EK_Or) {
    if (!dt_is_bool(a->dtype)) {
      kiln_set_error("%s: operands must be bool, got %s", expr_kind_name(k), dt_str(a->dtype));
      return NULL;
    }
  }
  if (k == EK_Mod && dt_is_float(t)) return ir_call2(INTRIN_fmod, a, b); /* float % is fmod */
  Expr *e = mk(k, t);
  e->bin.a = a;
  e->bin.b = b;
  return e;
}

Expr *ir_add(Expr *a, Expr *b) { return ir_binary(EK_Add, a, b); }
Expr *ir_sub(Expr *a, Expr *b) { return ir_binary(EK_Sub, a, b); }
Expr *ir_mul(Expr *a, Expr *b) { return ir_binary(EK_Mul, a, b); }
Expr *ir_div(Expr *a, Expr *b) { return ir_binary(EK_Div, a, b); }
Expr *ir_mod(Expr *a, Expr *b) { return ir_binary(EK_Mod, a, b); }
Expr *ir_floordiv(Expr *a, Expr *b) { return ir_binary(EK_FloorDiv, a, b); }
Expr *ir_floormod(Expr *a, Expr *b) { return ir_binary(EK_FloorMod, a, b); }
Expr *ir_min(Expr *a, Expr *b) { return ir_binary(EK_Min, a, b); }
Expr *ir_max(Expr *a, Expr *b) { return ir_binary(EK_Max, a, b); }
Expr *ir_eq(Expr *a, Expr *b) { return ir_binary(EK_EQ, a, b); }
Expr *ir_ne(Expr *a, Expr *b) { return ir_binary(EK_NE, a, b); }
Expr *ir_lt(Expr *a, Expr *b) { return ir_binary(EK_LT, a, b); }
Expr *ir_le(Expr *a, Expr *b) { return ir_binary(EK_LE, a, b); }
Expr *ir_gt(Expr *a, Expr *b) { return ir_binary(EK_GT, a, b); }
Expr *ir_ge(Expr *a, Expr *b) { return ir_binary(EK_GE, a, b); }
Expr *ir_and(Expr *a, Expr *b) { return ir_binary(EK_And, a, b); }
Expr *ir_or(Expr *a, Expr *b) { return ir_binary(EK_Or, a, b); }

Expr *ir_not(Expr *a) {
  if (!a) return NULL;
  if (!dt_is_bool(a->dtype)) {
    kiln_set_error("Not: operand must be bool, got %s", dt_str(a->dtype));
    return NULL;
  }
  Expr *e = mk(EK_Not, a->dtype);
  e->bin.a = a;
  return e;
}

Expr *ir_neg(Expr *a) {
  if (!a) return NULL;
  return ir_sub(ir_const(0, dt_scalar(a->dtype)), a);
}

Expr *ir_select(Expr *cond, Expr *t, Expr *f) {
  if (!cond || !t || !f) return NULL;
  if (!match_types(&t, &f, "Select")) return NULL;
  if (!dt_is_bool(cond->dtype)) {
    kiln_set_error("Select: condition must be bool, got %s", dt_str(cond->dtype));
    return NULL;
  }
  if (cond->dtype.lanes != 1 && t->dtype.lanes == 1) { /* scalar values under a vector condition */
    t = ir_bcast(t, cond->dtype.lanes);
    f = ir_bcast(f, cond->dtype.lanes);
  }
  if (cond->dtype.lanes != 1 && cond->dtype.lanes != t->dtype.lanes) {
    kiln_set_error("Select: condition has %d lanes, values %d", cond->dtype.lanes, t->dtype.lanes);
    return NULL;
  }
  Expr *e = mk(EK_Select, t->dtype);
  e->select.cond = cond;
  e->select.t = t;
  e->select.f = f;
  return e;
}

Expr *ir_cast(DType t, Expr *a) {
  if (!a) return NULL;
  if (a->dtype.lanes > 1 && t.lanes == 1) t = dt_with_lanes(t, a->dtype.lanes);
  if (dt_eq(t, a->dtype)) return a;
  if (a->dtype.lanes != t.lanes) {
    kiln_set_error("Cast: cannot cast %s to %s", dt_str(a->dtype), dt_str(t));
    return NULL;
  }
  Expr *e = mk(EK_Cast, t);
  e->bin.a = a;
  return e;
}

Expr *ir_call(Intrinsic op, int nargs, Expr **args) {
  if (nargs != intrin_nargs(op)) {
    kiln_set_error("%s: takes %d arguments, got %d", intrin_name(op), intrin_nargs(op), nargs);
    return NULL;
  }
  for (int i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  Expr **a = KNEWN(Expr *, nargs);
  memcpy(a, args, sizeof(Expr *) * (size_t)nargs);
  if (op == INTRIN_prefetch) { /* an address and a constant, not two values to reconcile */
    int64_t loc;
    Expr *el = a[0];
    if (!(el->kind == EK_Read || el->kind == EK_Load) || el->dtype.lanes != 1) {
      kiln_set_error("prefetch: operand 1 must be one tensor element (a scalar Read or Load), got %s", ir_expr_str(el));
      return NULL;
    }
    if (!ir_is_const_int(a[1], &loc) || loc < 0 || loc > 3) {
      kiln_set_error("prefetch: locality must be a constant 0 to 3, got %s", ir_expr_str(a[1]));
      return NULL;
    }
    Expr *e = mk(EK_Call, DT_I32);
    e->call.op = op;
    e->call.nargs = nargs;
    e->call.args = a;
    return e;
  }
  if (nargs == 2 && !match_types(&a[0], &a[1], intrin_name(op))) return NULL;
  DType t = a[0]->dtype;
  switch (op) {
  case INTRIN_isnan:
  case INTRIN_isinf:
  case INTRIN_likely:
    t = dt_make(kDLUInt, 1, t.lanes);
    if (op == INTRIN_likely && !dt_is_bool(a[0]->dtype)) {
      kiln_set_error("likely: operand must be bool");
      return NULL;
    }
    break;
  case INTRIN_shift_left:
  case INTRIN_shift_right:
  case INTRIN_bitwise_and:
  case INTRIN_bitwise_or:
  case INTRIN_bitwise_xor:
  case INTRIN_bitwise_not:
    if (!dt_is_intlike(t)) {
      kiln_set_error("%s: operands must be integers, got %s", intrin_name(op), dt_str(t));
      return NULL;
    }
    break;
  case INTRIN_fabs:
    break;
  case INTRIN_bf16_pack2:
    if (!dt_eq(dt_scalar(t), DT_F32)) {
      kiln_set_error("bf16_pack2: operands must be float32, got %s", dt_str(t));
      return NULL;
    }
    t = dt_with_lanes(DT_U32, t.lanes);
    break;
  case INTRIN_bf16_dot2:
  case INTRIN_bf16_half:
    if (!dt_eq(dt_scalar(t), DT_U32)) {
      kiln_set_error("%s: operands must be uint32 (two bfloat16 each; the half 0 or 1), got %s", intrin_name(op), dt_str(t));
      return NULL;
    }
    t = dt_with_lanes(DT_F32, t.lanes);
    break;
  case INTRIN_u8s8_dot4:
    if (!dt_eq(dt_scalar(t), DT_U32)) {
      kiln_set_error("u8s8_dot4: operands must be uint32 (four uint8; four int8), got %s", dt_str(t));
      return NULL;
    }
    t = dt_with_lanes(DT_I32, t.lanes);
    break;
  default:
    if (!dt_is_float(t)) { /* math on ints: compute in float32, like TVM's te.exp on int */
      for (int i = 0; i < nargs; i++) a[i] = ir_cast(dt_with_lanes(DT_F32, t.lanes), a[i]);
      t = a[0]->dtype;
    }
    break;
  }
  Expr *e = mk(EK_Call, t);
  e->call.op = op;
  e->call.nargs = nargs;
  e->call.args = a;
  return e;
}

Expr *ir_call1(Intrinsic op, Expr *a) { return ir_call(op, 1, &a); }
Expr *ir_call2(Intrinsic op, Expr *a, Expr *b) {
  Expr *args[2] = {a, b};
  return ir_call(op, 2, args);
}

Expr *ir_read(Tensor *tensor, DType t, int n, Expr **idx) {
  if (!tensor) return NULL;
  for (int i = 0; i < n; i++)
    if (!idx[i]) return NULL;
  Expr *e = mk(EK_Read, t);
  e->read.tensor = tensor;
  e->read.n = n;
  e->read.idx = kmemdup(idx, sizeof(Expr *) * (size_t)n);
  return e;
}

Expr *ir_load(DType t, Expr *buf, Expr *index) {
  if (!buf || !index) return NULL;
  KASSERT(buf->kind == EK_Var && dt_is_handle(buf->dtype));
  Expr *e = mk(EK_Load, t);
  e->load.buf = buf;
  e->load.index = index;
  return e;
}

Expr *ir_ramp(Expr *base, Expr *stride, int lanes) {
  if (!base || !stride) return NULL;
  KASSERT(lanes > 1 && base->dtype.lanes == 1);
  if (!dt_eq(base->dtype, stride->dtype)) stride = ir_cast(base->dtype, stride);
  Expr *e = mk(EK_Ramp, dt_with_lanes(base->dtype, lanes));
  e->ramp.base = base;
  e->ramp.stride = stride;
  e->ramp.lanes = lanes;
  return e;
}

Expr *ir_bcast(Expr *value, int lanes) {
  if (!value) return NULL;
  if (lanes == 1) return value;
  KASSERT(value->dtype.lanes == 1);
  Expr *e = mk(EK_Broadcast, dt_with_lanes(value->dtype, lanes));
  e->bcast.value = value;
  e->bcast.lanes = lanes;
  return e;
}

Expr *ir_let(Expr *var, Expr *value, Expr *body) {
  if (!var || !value || !body) return NULL;
  KASSERT(var->kind == EK_Var);
  Expr *e = mk(EK_Let, body->dtype);
  e->let.var = var;
  e->let.value = value;
  e->let.body = body;
  return e;
}

Expr *ir_max_value(DType t) {
  t = dt_scalar(t);
  if (dt_is_float(t)) return ir_float(INFINITY, t);
  return ir_int(dt_int_max(t), t);
}

Expr *ir_min_value(DType t) {
  t = dt_scalar(t);
  if (dt_is_float(t)) return ir_float(-INFINITY, t);
  return ir_int(dt_int_min(t), t);
}

Reducer *ir_reducer(ReduceKind k, DType t) {
  Reducer *r = KNEW(Reducer);
  r->okind = KOBJ_REDUCER;
  r->kind = k;
  r->lhs = ir_var("x", t);
  r->rhs = ir_var("y", t);
  switch (k) {
  case RED_SUM:
    r->result = ir_add(r->lhs, r->rhs);
    r->identity = ir_const(0, t);
    break;
  case RED_PROD:
    r->result = ir_mul(r->lhs, r->rhs);
    r->identity = ir_const(1, t);
    break;
  case RED_MAX:
    r->result = ir_max(r->lhs, r->rhs);
    r->identity = ir_min_value(t);
    break;
  case RED_MIN:
    r->result = ir_min(r->lhs, r->rhs);
    r->identity = ir_max_value(t);
    break;
  case RED_CUSTOM:
    KUNREACHABLE();
  }
  return r;
}

Reducer *ir_reducer_custom(Expr *lhs, Expr *rhs, Expr *result, Expr *identity) {
  if (!lhs || !rhs || !result || !identity) return NULL;
  Reducer *r = KNEW(Reducer);
  r->okind = KOBJ_REDUCER;
  r->kind = RED_CUSTOM;
  r->lhs = lhs;
  r->rhs = rhs;
  r->result = result;
  r->identity = identity;
  return r;
}

Expr *ir_reduce(Reducer *comb, Expr *source, int naxis, IterVar **axis, Expr *cond) {
  if (!comb || !source || (naxis && !axis)) return NULL;
  for (int i = 0; i < naxis; i++) {
    if (!axis[i]) return NULL;
    if (axis[i]->kind != ITER_REDUCE) {
      kiln_set_error("reduction over '%s', which is not a reduce axis (make it with reduce_axis)",
                     axis[i]->var->var.name);
      return NULL;
    }
  }
  if (!dt_eq(source->dtype, comb->lhs->dtype)) {
    if (comb->kind != RED_CUSTOM)
      comb = ir_reducer(comb->kind, source->dtype);
    else {
      kiln_set_error("reducer over %s applied to %s", dt_str(comb->lhs->dtype), dt_str(source->dtype));
      return NULL;
    }
  }
  Expr *e = mk(EK_Reduce, source->dtype);
  e->reduce.comb = comb;
  e->reduce.source = source;
  e->reduce.naxis = naxis;
  e->reduce.axis = kmemdup(axis, sizeof(IterVar *) * (size_t)naxis);
  e->reduce.cond = cond;
  return e;
}

static Expr *reduce_k(ReduceKind k, Expr *src, int naxis, IterVar **axis) {
  if (!src) return NULL;
  return ir_reduce(ir_reducer(k, src->dtype), src, naxis, axis, NULL);
}
Expr *ir_sum(Expr *src, int naxis, IterVar **axis) { return reduce_k(RED_SUM, src, naxis, axis); }
Expr *ir_prod(Expr *src, int naxis, IterVar **axis) { return reduce_k(RED_PROD, src, naxis, axis); }
Expr *ir_max_reduce(Expr *src, int naxis, IterVar **axis) { return reduce_k(RED_MAX, src, naxis, axis); }
Expr *ir_min_reduce(Expr *src, int naxis, IterVar **axis) { return reduce_k(RED_MIN, src, naxis, axis); }

IterVar *ir_itervar(Expr *var, Expr *min, Expr *extent, IterKind kind) {
  if (!var) return NULL;
  IterVar *iv = KNEW(IterVar);
  iv->okind = KOBJ_ITERVAR;
  iv->var = var;
  iv->min = min;
  iv->extent = extent;
  iv->kind = kind;
  return iv;
}
