/*
 * api_ir.c - ir.*: building and inspecting expressions, the printer, the
 * simplifier and structural equality, as packed functions.
 *
 * Numbers mixed with expressions take the expression's type here
 * (api_expr_like), so a binding never has to know the promotion rules:
 * `A[i] + 2` on a float32 tensor adds 2f, `n * 4` on an int64 var adds an
 * int64 4.  The rest of the promotion (int with float, narrow with wide) is
 * the builders' (ir/expr.c).
 */
#include "api.h"

#include <string.h>

/* ---- constants and variables ---- */

API_FUNC(ir_int_imm) {
  API_CALL;
  int64_t v;
  DType t = DT_I32;
  if (api_argc(&c, 1, 2) || api_int(&c, 0, &v) || (c.n > 1 && api_dtype(&c, 1, &t))) return -1;
  if (!dt_is_intlike(t) || t.lanes != 1)
    return api_error(&c, "dtype must be a scalar integer type, got %s", dt_str(t));
  if (v < dt_int_min(t) || (t.code == kDLInt && v > dt_int_max(t)))
    return api_error(&c, "value %lld does not fit in %s", (long long)v, dt_str(t));
  return api_ret_obj(&c, ret, ret_code, ir_int(v, t));
}

API_FUNC(ir_float_imm) {
  API_CALL;
  DType t = DT_F32;
  if (api_argc(&c, 1, 2) || (c.n > 1 && api_dtype(&c, 1, &t))) return -1;
  double v;
  if (c.codes[0] == KILN_FLOAT)
    v = c.args[0].v_float64;
  else if (c.codes[0] == KILN_INT)
    v = (double)c.args[0].v_int64;
  else
    return api_error(&c, "argument 0 (value) must be a number");
  if (!dt_is_float(t) || t.lanes != 1)
    return api_error(&c, "dtype must be a scalar float type, got %s", dt_str(t));
  return api_ret_obj(&c, ret, ret_code, ir_float(v, t));
}

API_FUNC(ir_string_imm) {
  API_CALL;
  const char *s;
  if (api_argc(&c, 1, 1) || !(s = api_str(&c, 0))) return -1;
  return api_ret_obj(&c, ret, ret_code, ir_str(s));
}

API_FUNC(ir_var_fn) {
  API_CALL;
  const char *name;
  DType t = DT_I32;
  if (api_argc(&c, 1, 2) || !(name = api_str(&c, 0)) || (c.n > 1 && api_dtype(&c, 1, &t))) return -1;
  if (!*name) return api_error(&c, "the variable name is empty");
  return api_ret_obj(&c, ret, ret_code, ir_var(name, t));
}

API_FUNC(ir_max_value_fn) {
  API_CALL;
  DType t;
  if (api_argc(&c, 1, 1) || api_dtype(&c, 0, &t)) return -1;
  if (dt_is_handle(t)) return api_error(&c, "handle has no largest value");
  return api_ret_obj(&c, ret, ret_code, ir_max_value(t));
}

API_FUNC(ir_min_value_fn) {
  API_CALL;
  DType t;
  if (api_argc(&c, 1, 1) || api_dtype(&c, 0, &t)) return -1;
  if (dt_is_handle(t)) return api_error(&c, "handle has no smallest value");
  return api_ret_obj(&c, ret, ret_code, ir_min_value(t));
}

/* ---- operators ---- */

static bool is_number(const ApiCall *c, int i) {
  return i < c->n && (c->codes[i] == KILN_INT || c->codes[i] == KILN_UINT || c->codes[i] == KILN_FLOAT);
}

/* Two operands i and j, a number taking the other operand's type. */
static int operand_pair(const ApiCall *c, int i, int j, Expr **a, Expr **b) {
  if (is_number(c, i) && !is_number(c, j)) {
    if (!(*b = api_expr(c, j)) || !(*a = api_expr_like(c, i, *b))) return -1;
  } else {
    if (!(*a = api_expr(c, i)) || !(*b = api_expr_like(c, j, *a))) return -1;
  }
  return 0;
}

static const struct {
  const char *name;
  ExprKind kind;
} binops[] = {
    {"add", EK_Add},   {"sub", EK_Sub},     {"mul", EK_Mul},           {"div", EK_Div},
    {"mod", EK_Mod},   {"floordiv", EK_FloorDiv}, {"floormod", EK_FloorMod}, {"min", EK_Min},
    {"max", EK_Max},   {"eq", EK_EQ},       {"ne", EK_NE},             {"lt", EK_LT},
    {"le", EK_LE},     {"gt", EK_GT},       {"ge", EK_GE},             {"and", EK_And},
    {"or", EK_Or},
};

API_FUNC(ir_binary_op) {
  API_CALL;
  const char *op;
  Expr *a, *b;
  if (api_argc(&c, 3, 3) || !(op = api_str(&c, 0))) return -1;
  int k = -1;
  for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
    if (!strcmp(binops[i].name, op)) k = (int)i;
  if (k < 0)
    return api_error(&c, "unknown operator '%s' (known: add, sub, mul, div, mod, floordiv, "
                         "floormod, min, max, eq, ne, lt, le, gt, ge, and, or)", op);
  if (operand_pair(&c, 1, 2, &a, &b)) return -1;
  return api_ret_obj(&c, ret, ret_code, ir_binary(binops[k].kind, a, b));
}

API_FUNC(ir_not_fn) {
  API_CALL;
  Expr *a;
  if (api_argc(&c, 1, 1) || !(a = api_expr(&c, 0))) return -1;
  return api_ret_obj(&c, ret, ret_code, ir_not(a));
}

API_FUNC(ir_neg_fn) {
  API_CALL;
  Expr *a;
  if (api_argc(&c, 1, 1) || !(a = api_expr(&c, 0))) return -1;
  if (dt_is_handle(a->dtype) || dt_is_bool(a->dtype))
    return api_error(&c, "cannot negate a %s", dt_str(a->dtype));
  return api_ret_obj(&c, ret, ret_code, ir_neg(a));
}

API_FUNC(ir_select_fn) {
  API_CALL;
  Expr *cond, *t, *f;
  if (api_argc(&c, 3, 3) || !(cond = api_expr(&c, 0)) || operand_pair(&c, 1, 2, &t, &f)) return -1;
  return api_ret_obj(&c, ret, ret_code, ir_select(cond, t, f));
}

API_FUNC(ir_cast_fn) {
  API_CALL;
  DType t;
  Expr *a;
  if (api_argc(&c, 2, 2) || api_dtype(&c, 0, &t) || !(a = api_expr(&c, 1))) return -1;
  if (dt_is_handle(t) != dt_is_handle(a->dtype))
    return api_error(&c, "cannot cast %s to %s", dt_str(a->dtype), dt_str(t));
  return api_ret_obj(&c, ret, ret_code, ir_cast(t, a));
}

API_FUNC(ir_call_fn) {
  API_CALL;
  const char *name;
  if (api_argc(&c, 1, -1) || !(name = api_str(&c, 0))) return -1;
  int op = intrin_lookup(name);
  if (op < 0) {
    StrBuf sb = {0};
    for (int i = 0; i < INTRIN__COUNT; i++) sb_printf(&sb, "%s%s", i ? ", " : "", intrin_name(i));
    api_error(&c, "unknown intrinsic '%s' (known: %s)", name, sb.data);
    sb_free(&sb);
    return -1;
  }
  int n = c.n - 1;
  if (n != intrin_nargs(op))
    return api_error(&c, "%s takes %d argument%s, got %d", name, intrin_nargs(op),
                     intrin_nargs(op) == 1 ? "" : "s", n);
  Expr **a = KNEWN(Expr *, n > 0 ? n : 1);
  if (n == 2) {
    if (operand_pair(&c, 1, 2, &a[0], &a[1])) return -1;
  } else {
    for (int i = 0; i < n; i++)
      if (!(a[i] = api_expr(&c, 1 + i))) return -1;
  }
  return api_ret_obj(&c, ret, ret_code, ir_call(op, n, a));
}

API_FUNC(ir_let_fn) {
  API_CALL;
  Expr *var, *value, *body;
  if (api_argc(&c, 3, 3) || !(var = api_expr(&c, 0))) return -1;
  if (var->kind != EK_Var) return api_error(&c, "argument 0 (var) must be a Var, got %s", ir_expr_str(var));
  if (!(value = api_expr_like(&c, 1, var)) || !(body = api_expr(&c, 2))) return -1;
  if (!dt_eq(var->dtype, value->dtype))
    return api_error(&c, "the value is %s but the variable '%s' is %s", dt_str(value->dtype),
                     var->var.name, dt_str(var->dtype));
  return api_ret_obj(&c, ret, ret_code, ir_let(var, value, body));
}

/* ---- reductions ---- */

static const struct {
  const char *name;
  ReduceKind kind;
} reducers[] = {{"sum", RED_SUM}, {"prod", RED_PROD}, {"max", RED_MAX}, {"min", RED_MIN}};

API_FUNC(ir_reduce_fn) {
  API_CALL;
  Expr *src, *cond;
  Reducer *comb = NULL;
  int naxis;
  IterVar **axes;
  if (api_argc(&c, 3, -1) || !(src = api_expr(&c, 1)) || api_opt_expr(&c, 2, &cond)) return -1;
  if (c.codes[0] == KILN_STR) {
    const char *k = c.args[0].v_str ? c.args[0].v_str : "";
    for (size_t i = 0; i < sizeof reducers / sizeof reducers[0]; i++)
      if (!strcmp(k, reducers[i].name)) comb = ir_reducer(reducers[i].kind, dt_scalar(src->dtype));
    if (!comb) return api_error(&c, "unknown reduction '%s' (known: sum, prod, max, min, or a Reducer)", k);
  } else if (!(comb = api_obj(&c, 0, KOBJ_REDUCER)))
    return -1;
  if (cond && !dt_is_bool(cond->dtype))
    return api_error(&c, "argument 2 (cond) must be a bool expression, got %s", dt_str(cond->dtype));
  if (!(axes = (IterVar **)api_obj_list(&c, 3, KOBJ_ITERVAR, &naxis))) return -1;
  if (naxis == 0) return api_error(&c, "no reduce axes given");
  return api_ret_obj(&c, ret, ret_code, ir_reduce(comb, src, naxis, axes, cond));
}

API_FUNC(ir_comm_reducer) {
  API_CALL;
  Expr *lhs, *rhs, *result, *identity;
  if (api_argc(&c, 4, 4) || !(lhs = api_expr(&c, 0)) || !(rhs = api_expr(&c, 1))) return -1;
  if (lhs->kind != EK_Var || rhs->kind != EK_Var)
    return api_error(&c, "lhs and rhs must be variables");
  if (!dt_eq(lhs->dtype, rhs->dtype))
    return api_error(&c, "lhs is %s but rhs is %s", dt_str(lhs->dtype), dt_str(rhs->dtype));
  if (!(result = api_expr_like(&c, 2, lhs)) || !(identity = api_expr_like(&c, 3, lhs))) return -1;
  if (!dt_eq(result->dtype, lhs->dtype))
    return api_error(&c, "the result is %s but the operands are %s", dt_str(result->dtype),
                     dt_str(lhs->dtype));
  if (!dt_eq(identity->dtype, lhs->dtype)) identity = ir_cast(lhs->dtype, identity);
  return api_ret_obj(&c, ret, ret_code, ir_reducer_custom(lhs, rhs, result, identity));
}

/* ---- inspection ---- */

static Expr *expr0(const ApiCall *c) {
  if (api_argc(c, 1, 1)) return NULL;
  return api_obj(c, 0, KOBJ_EXPR);
}

API_FUNC(ir_expr_kind) {
  API_CALL;
  Expr *e = expr0(&c);
  return e ? api_ret_str(ret, ret_code, expr_kind_name(e->kind)) : -1;
}

API_FUNC(ir_expr_dtype) {
  API_CALL;
  Expr *e = expr0(&c);
  return e ? api_ret_str(ret, ret_code, dt_str(e->dtype)) : -1;
}

API_FUNC(ir_expr_int_value) {
  API_CALL;
  Expr *e = expr0(&c);
  if (!e) return -1;
  if (e->kind != EK_IntImm) return api_error(&c, "%s is not an integer constant", ir_expr_str(e));
  return api_ret_int(ret, ret_code, e->int_value);
}

API_FUNC(ir_expr_float_value) {
  API_CALL;
  Expr *e = expr0(&c);
  if (!e) return -1;
  if (e->kind == EK_IntImm) return api_ret_float(ret, ret_code, (double)e->int_value);
  if (e->kind != EK_FloatImm) return api_error(&c, "%s is not a constant", ir_expr_str(e));
  return api_ret_float(ret, ret_code, e->float_value);
}

API_FUNC(ir_expr_str_value) {
  API_CALL;
  Expr *e = expr0(&c);
  if (!e) return -1;
  if (e->kind != EK_StrImm) return api_error(&c, "%s is not a string constant", ir_expr_str(e));
  return api_ret_str(ret, ret_code, e->str);
}

API_FUNC(ir_var_name) {
  API_CALL;
  Expr *e = expr0(&c);
  if (!e) return -1;
  if (e->kind != EK_Var) return api_error(&c, "%s is not a variable", ir_expr_str(e));
  return api_ret_str(ret, ret_code, e->var.name);
}

API_FUNC(ir_call_name) {
  API_CALL;
  Expr *e = expr0(&c);
  if (!e) return -1;
  if (e->kind != EK_Call) return api_error(&c, "%s is not a call", ir_expr_str(e));
  return api_ret_str(ret, ret_code, intrin_name(e->call.op));
}

API_FUNC(ir_read_tensor) {
  API_CALL;
  Expr *e = expr0(&c);
  if (!e) return -1;
  if (e->kind != EK_Read) return api_error(&c, "%s is not a tensor read", ir_expr_str(e));
  return api_ret_obj(&c, ret, ret_code, e->read.tensor);
}

/* The expression children of e, in order (the Reduce condition, if any,
 * after its source). */
static KArray *operands(Expr *e) {
  switch (e->kind) {
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Var:
    return karray_new(0, NULL);
  KILN_EXPR_BINARY_CASES
    return karray_new(2, (void *[]){e->bin.a, e->bin.b});
  case EK_Not:
  case EK_Cast:
    return karray_new(1, (void *[]){e->bin.a});
  case EK_Select:
    return karray_new(3, (void *[]){e->select.cond, e->select.t, e->select.f});
  case EK_Call:
    return karray_new(e->call.nargs, (void **)e->call.args);
  case EK_Read:
    return karray_new(e->read.n, (void **)e->read.idx);
  case EK_Load:
    return karray_new(2, (void *[]){e->load.buf, e->load.index});
  case EK_Ramp:
    return karray_new(2, (void *[]){e->ramp.base, e->ramp.stride});
  case EK_Broadcast:
    return karray_new(1, (void *[]){e->bcast.value});
  case EK_Let:
    return karray_new(3, (void *[]){e->let.var, e->let.value, e->let.body});
  case EK_Reduce:
    if (e->reduce.cond) return karray_new(2, (void *[]){e->reduce.source, e->reduce.cond});
    return karray_new(1, (void *[]){e->reduce.source});
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

API_FUNC(ir_expr_operands) {
  API_CALL;
  Expr *e = expr0(&c);
  return e ? api_ret_obj(&c, ret, ret_code, operands(e)) : -1;
}

API_FUNC(ir_intrinsics) {
  API_CALL;
  if (api_argc(&c, 0, 0)) return -1;
  StrBuf sb = {0};
  for (int i = 0; i < INTRIN__COUNT; i++)
    sb_printf(&sb, "%s%s:%d", i ? "\n" : "", intrin_name(i), intrin_nargs(i));
  const char *s = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return api_ret_str(ret, ret_code, s);
}

/* ---- text ---- */

static void put_text(StrBuf *sb, void *obj);

static void put_itervar(StrBuf *sb, IterVar *iv) {
  sb_printf(sb, "iter_var(%s", iv->var ? iv->var->var.name : "?");
  if (iv->min && iv->extent) {
    sb_puts(sb, ", range(min=");
    ir_print_expr(sb, iv->min);
    sb_puts(sb, ", ext=");
    ir_print_expr(sb, iv->extent);
    sb_putc(sb, ')');
  }
  if (iv->thread_tag) sb_printf(sb, ", %s", iv->thread_tag);
  sb_putc(sb, ')');
}

static void put_tensor(StrBuf *sb, Tensor *t) {
  sb_puts(sb, "Tensor(shape=[");
  for (int i = 0; i < t->ndim; i++) {
    if (i) sb_puts(sb, ", ");
    ir_print_expr(sb, t->shape[i]);
  }
  sb_printf(sb, "], op.name=%s)", t->name);
}

static void put_text(StrBuf *sb, void *obj) {
  if (!obj) {
    sb_puts(sb, "null");
    return;
  }
  switch ((int)*(KObjKind *)obj) {
  case KOBJ_EXPR:
    ir_print_expr(sb, obj);
    return;
  case KOBJ_STMT:
    ir_print_stmt(sb, obj, 0);
    return;
  case KOBJ_ITERVAR:
    put_itervar(sb, obj);
    return;
  case KOBJ_TENSOR:
    put_tensor(sb, obj);
    return;
  case KOBJ_STAGE:
    sb_printf(sb, "stage(%s)", ((Stage *)obj)->op->name);
    return;
  case KOBJ_SCHEDULE: {
    Schedule *s = obj;
    sb_puts(sb, "schedule(stages=[");
    for (int i = 0; i < s->stages.len; i++)
      sb_printf(sb, "%s%s", i ? ", " : "", ((Stage *)s->stages.data[i])->op->name);
    sb_puts(sb, "])");
    return;
  }
  case KOBJ_FUNC:
    sb_puts(sb, kiln_lowered_str(obj));
    return;
  case KOBJ_REDUCER: {
    Reducer *r = obj;
    sb_puts(sb, "comm_reducer(result=[");
    ir_print_expr(sb, r->result);
    sb_puts(sb, "], lhs=[");
    ir_print_expr(sb, r->lhs);
    sb_puts(sb, "], rhs=[");
    ir_print_expr(sb, r->rhs);
    sb_puts(sb, "], identity_element=[");
    ir_print_expr(sb, r->identity);
    sb_puts(sb, "])");
    return;
  }
  case KOBJ_ARRAY: {
    KArray *a = obj;
    sb_putc(sb, '[');
    for (int i = 0; i < a->n; i++) {
      if (i) sb_puts(sb, ", ");
      put_text(sb, a->items[i]);
    }
    sb_putc(sb, ']');
    return;
  }
  case KOBJ_GRAPH:
    api_graph_text(sb, obj);
    return;
  }
  sb_puts(sb, "<unknown object>");
}

const char *api_as_text(void *obj) {
  StrBuf sb = {0};
  put_text(&sb, obj);
  const char *s = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return s;
}

static void *any_obj(const ApiCall *c, int i) {
  if (i < c->n && c->codes[i] == KILN_OBJECT && c->args[i].v_handle &&
      api_kind_name(c->args[i].v_handle))
    return c->args[i].v_handle;
  if (i < c->n && c->codes[i] == KILN_OBJECT && !c->args[i].v_handle)
    return api_error(c, "argument %d must be a compiler object, got a NULL handle", i), NULL;
  return api_error(c, "argument %d must be a compiler object", i), NULL;
}

API_FUNC(ir_as_text) {
  API_CALL;
  void *obj;
  if (api_argc(&c, 1, 1) || !(obj = any_obj(&c, 0))) return -1;
  return api_ret_str(ret, ret_code, api_as_text(obj));
}

/* ---- passes ---- */

API_FUNC(ir_simplify_fn) {
  API_CALL;
  void *obj;
  if (api_argc(&c, 1, 1)) return -1;
  if (c.codes[0] == KILN_INT || c.codes[0] == KILN_FLOAT) return api_ret_obj(&c, ret, ret_code, api_expr(&c, 0));
  if (!(obj = any_obj(&c, 0))) return -1;
  KObjKind k = *(KObjKind *)obj;
  if (k == KOBJ_EXPR) return api_ret_obj(&c, ret, ret_code, ir_simplify(obj));
  if (k == KOBJ_STMT) return api_ret_obj(&c, ret, ret_code, ir_simplify_stmt(obj));
  return api_error(&c, "argument 0 (node) must be an Expr or a Stmt, got a %s", api_kind_name(obj));
}

API_FUNC(ir_structural_equal) {
  API_CALL;
  void *a, *b;
  if (api_argc(&c, 2, 2) || !(a = any_obj(&c, 0)) || !(b = any_obj(&c, 1))) return -1;
  KObjKind ka = *(KObjKind *)a, kb = *(KObjKind *)b;
  bool eq;
  if (ka != kb)
    eq = false;
  else if (ka == KOBJ_EXPR)
    eq = ir_expr_equal(a, b);
  else if (ka == KOBJ_STMT)
    eq = ir_stmt_equal(a, b);
  else
    eq = a == b; /* tensors, schedules...: identity */
  return api_ret_int(ret, ret_code, eq);
}

API_FUNC(ir_structural_hash) {
  API_CALL;
  void *a;
  if (api_argc(&c, 1, 1) || !(a = any_obj(&c, 0))) return -1;
  KObjKind k = *(KObjKind *)a;
  uint64_t h = k == KOBJ_EXPR   ? ir_expr_hash(a)
               : k == KOBJ_STMT ? ir_stmt_hash(a)
                                : hash_bytes(&a, sizeof a, 0);
  return api_ret_int(ret, ret_code, (int64_t)(h >> 1)); /* non-negative */
}

const ApiEntry api_ir_funcs[] = {
    {"ir.IntImm", ir_int_imm, "value, dtype?"},
    {"ir.FloatImm", ir_float_imm, "value, dtype?"},
    {"ir.StringImm", ir_string_imm, "value"},
    {"ir.Var", ir_var_fn, "name, dtype?"},
    {"ir.MaxValue", ir_max_value_fn, "dtype"},
    {"ir.MinValue", ir_min_value_fn, "dtype"},
    {"ir.BinaryOp", ir_binary_op, "op, a, b"},
    {"ir.Not", ir_not_fn, "a"},
    {"ir.Neg", ir_neg_fn, "a"},
    {"ir.Select", ir_select_fn, "cond, true_value, false_value"},
    {"ir.Cast", ir_cast_fn, "dtype, value"},
    {"ir.Call", ir_call_fn, "name, args..."},
    {"ir.Let", ir_let_fn, "var, value, body"},
    {"ir.Reduce", ir_reduce_fn, "combiner, source, cond, axes..."},
    {"ir.CommReducer", ir_comm_reducer, "lhs, rhs, result, identity"},
    {"ir.ExprKind", ir_expr_kind, "expr"},
    {"ir.ExprDType", ir_expr_dtype, "expr"},
    {"ir.ExprIntValue", ir_expr_int_value, "expr"},
    {"ir.ExprFloatValue", ir_expr_float_value, "expr"},
    {"ir.ExprStrValue", ir_expr_str_value, "expr"},
    {"ir.VarName", ir_var_name, "expr"},
    {"ir.CallName", ir_call_name, "expr"},
    {"ir.ReadTensor", ir_read_tensor, "expr"},
    {"ir.ExprOperands", ir_expr_operands, "expr"},
    {"ir.Intrinsics", ir_intrinsics, ""},
    {"ir.AsText", ir_as_text, "node"},
    {"ir.Simplify", ir_simplify_fn, "node"},
    {"ir.StructuralEqual", ir_structural_equal, "a, b"},
    {"ir.StructuralHash", ir_structural_hash, "node"},
    {NULL, NULL, NULL},
};
