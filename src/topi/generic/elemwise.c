/*
 * elemwise.c - unary and binary operators, where, cast, clip and the
 * parametrized activations.
 *
 * Every operator reads each input element once and binds it to a variable
 * with a Let: the body then uses the variable as often as it likes (gelu
 * uses x four times) without duplicating the read, so chains of inlined
 * elementwise stages stay linear in size, and a select over the variable
 * can still be vectorized (the vectorizer refuses selects whose branches
 * read memory).
 */
#include <math.h>
#include <string.h>

#include "../topi.h"

static const char *unary_names[] = {
#define X(n) #n,
    TOPI_UNARY_OPS(X)
#undef X
};

static const char *binary_names[] = {
#define X(n) #n,
    TOPI_BINARY_OPS(X)
#undef X
};

const char *topi_unary_name(TopiUnary op) { return op >= 0 && op < TOPI_UNARY__COUNT ? unary_names[op] : "?"; }
const char *topi_binary_name(TopiBinary op) { return op >= 0 && op < TOPI_BINARY__COUNT ? binary_names[op] : "?"; }

int topi_unary_lookup(const char *name) {
  for (int i = 0; name && i < TOPI_UNARY__COUNT; i++)
    if (!strcmp(unary_names[i], name)) return i;
  return -1;
}

int topi_binary_lookup(const char *name) {
  for (int i = 0; name && i < TOPI_BINARY__COUNT; i++)
    if (!strcmp(binary_names[i], name)) return i;
  return -1;
}

/* ---- building blocks ---- */

static Expr *fc(double v, DType t) { return ir_const(v, dt_scalar(t)); }

/* A fresh variable bound to `value`, for a body built over it. */
typedef struct Bind {
  Expr *var, *value;
} Bind;

static Bind bind(const char *name, Expr *value) {
  Bind b = {NULL, value};
  if (value) b.var = ir_var(name, value->dtype);
  return b;
}

static Expr *let1(Bind b, Expr *body) {
  if (!b.var || !body) return NULL;
  if (!ir_expr_uses_var(body, b.var)) return body;
  return ir_let(b.var, b.value, body);
}

/* An elementwise compute over x's shape. */
static Tensor *map_compute(const char *name, Tensor *x, Expr **vars, Expr *body, const char *tag) {
  return te_compute(name, x->ndim, x->shape, vars, body, tag);
}

static int need_float(const char *op, Tensor *x) {
  if (!dt_is_float(x->dtype))
    return kiln_set_error("%s: expected a float tensor, got %s '%s'", op, dt_str(x->dtype), x->name);
  return 0;
}

static Expr *to_bool(Expr *v) {
  if (!v) return NULL;
  return dt_is_bool(v->dtype) ? v : ir_cast(DT_BOOL, v);
}

/* softplus(v) = log(1 + e^v), stable: max(v, 0) + log(1 + e^-|v|). */
static Expr *softplus_expr(Expr *v) {
  DType t = v->dtype;
  Expr *e = ir_call1(INTRIN_exp, ir_neg(ir_call1(INTRIN_fabs, v)));
  return ir_add(ir_max(v, fc(0, t)), ir_call1(INTRIN_log, ir_add(fc(1, t), e)));
}

/* GELU in float32 as x Phi(x): the result needs Phi only to an absolute
 * error (x times it is within an ulp of max(|x|, |y|)), so instead of erf
 * (two polynomials, for |x| < 1 to a relative error) one rational function
 * serves every x: Phi(u) - 1/2 = u P(u^2) / Q(u^2), u = x clamped to
 * [-5.5, 5.5] (1 - Phi(5.5) = 1.9e-8), P and Q of degree 5 in u^2 fitted
 * for the absolute error on [0, 5.5] (2.7e-8 in double, 4e-8 with the
 * coefficients in float32); y = x (u P / Q) + x / 2.  No exponential:
 * 2.79 ulps of max(|x|, |y|) over every 7th float32 pattern (the former
 * e^(-a^2) Q(a) form 1.03: the quotient's rounding near 1/2 is most of
 * the error), half the operations (a 16-lane loop 0.17 against 0.33 ns
 * per value).  x <= -5.5 gives 0 (the quotient is -1/2 there); NaN
 * passes the clamps (`c > x ? c : x`); +inf gives +inf (docs/vmath.md). */
static Expr *gelu_f32(Expr *v) {
  static const double p[] = {2.5380478297e-08, 6.1830019148e-06, 1.3748501406e-04,
                             4.4830596103e-03, 3.0735355187e-02, 3.9894218491e-01};
  static const double q[] = {1.2625176796e-06, 6.3917816978e-05, 1.7043790864e-03,
                             2.6855316045e-02, 2.4370836914e-01, 1.0};
  DType t = v->dtype;
  Bind bx = bind("gx", v);
  Bind bu = bind("gu", ir_min(fc(5.5, t), ir_max(fc(-5.5, t), bx.var)));
  Bind bs = bind("gs", ir_mul(bu.var, bu.var));
  Expr *num = fc(p[0], t), *den = fc(q[0], t);
  for (size_t i = 1; i < sizeof p / sizeof p[0]; i++) num = ir_add(ir_mul(num, bs.var), fc(p[i], t));
  for (size_t i = 1; i < sizeof q / sizeof q[0]; i++) den = ir_add(ir_mul(den, bs.var), fc(q[i], t));
  Expr *r = ir_div(ir_mul(bu.var, num), den);
  return let1(bx, let1(bu, let1(bs, ir_add(ir_mul(bx.var, r), ir_mul(fc(0.5, t), bx.var)))));
}

/* SiLU in float32 as a / (1 + e^-min(a, 87)), a = max(x, -88): SiLU needs
 * no sigmoid of its own.  Written as a product, x sigmoid(x) needs the
 * sigmoid to 2^-24 absolute, so sigmoid's subnormal-preserving scale
 * factor and selects buy nothing; as a quotient, y has e^-x's relative
 * error and the exponential's argument stays in [-87, 88], where e^ of it
 * is a normal float (exp_approx: no overflow or subnormal handling, and
 * a relative error of 4e-7, which y's bound leaves room for).  For
 * x below -88, y is -88 / (1 + e^88) = -5.3e-37 (the exact value is
 * smaller still; -inf gives it too, where x sigmoid(x) is NaN); above 87,
 * y = x.  The clamps take the constant first, so a NaN passes them
 * (`c > x ? c : x`).  1.53 ulps of max(|x|, |y|) over every 7th float32
 * pattern (docs/vmath.md). */
static Expr *silu_f32(Expr *v) {
  DType t = v->dtype;
  Bind ba = bind("sa", ir_max(fc(-88, t), v));
  Expr *e = ir_call1(INTRIN_exp_approx, ir_neg(ir_min(fc(87, t), ba.var)));
  return let1(ba, ir_div(ba.var, ir_add(fc(1, t), e)));
}

/* GELU's tanh form in float32 as x / (1 + e^-min(87, max(-87, 2z))), z =
 * sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh(z)) is sigmoid(2z), so the
 * form is SiLU's (silu_f32) with 2z for x: the quotient carries
 * exp_approx's relative error (4e-7) into y, no tanh, no selects.  The
 * clamps keep e^ of the argument a normal float; past them y is x (or x
 * e^-87, below an ulp of x).  NaN passes the clamps. */
static Expr *gelu_tanh_f32(Expr *v) {
  DType t = v->dtype;
  Bind bx = bind("tx", v);
  Expr *z2 = ir_mul(fc(2 * 0.7978845608028654, t), ir_add(bx.var, ir_mul(fc(0.044715, t), ir_mul(ir_mul(bx.var, bx.var), bx.var))));
  Expr *e = ir_call1(INTRIN_exp_approx, ir_neg(ir_min(fc(87, t), ir_max(fc(-87, t), z2))));
  return let1(bx, ir_div(bx.var, ir_add(fc(1, t), e)));
}

static Expr *unary_body(TopiUnary op, Expr *v) {
  DType t = v->dtype;
  switch (op) {
  case TOPI_negative: return ir_neg(v);
  case TOPI_abs: return dt_is_uint(t) || dt_is_bool(t) ? v : ir_call1(INTRIN_fabs, v);
  case TOPI_exp: return ir_call1(INTRIN_exp, v);
  case TOPI_log: return ir_call1(INTRIN_log, v);
  case TOPI_sqrt: return ir_call1(INTRIN_sqrt, v);
  case TOPI_rsqrt: return ir_call1(INTRIN_rsqrt, v);
  case TOPI_reciprocal: return ir_div(fc(1, t), v);
  case TOPI_relu: return ir_max(v, fc(0, t));
  case TOPI_sigmoid: return ir_call1(INTRIN_sigmoid, v);
  case TOPI_tanh: return ir_call1(INTRIN_tanh, v);
  case TOPI_erf: return ir_call1(INTRIN_erf, v);
  case TOPI_gelu: /* 0.5 x (1 + erf(x / sqrt 2)) */
    if (dt_eq(dt_scalar(t), DT_F32)) return gelu_f32(v);
    return ir_mul(ir_mul(fc(0.5, t), v), ir_add(fc(1, t), ir_call1(INTRIN_erf, ir_mul(v, fc(M_SQRT1_2, t)))));
  case TOPI_gelu_tanh: { /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    if (dt_eq(dt_scalar(t), DT_F32)) return gelu_tanh_f32(v);
    Expr *inner = ir_mul(fc(0.7978845608028654, t), ir_add(v, ir_mul(fc(0.044715, t), ir_mul(ir_mul(v, v), v))));
    return ir_mul(ir_mul(fc(0.5, t), v), ir_add(fc(1, t), ir_call1(INTRIN_tanh, inner)));
  }
  case TOPI_silu: /* x sigmoid(x) */
    if (dt_eq(dt_scalar(t), DT_F32)) return silu_f32(v);
    return ir_mul(v, ir_call1(INTRIN_sigmoid, v));
  case TOPI_softplus: return softplus_expr(v);
  case TOPI_softsign: return ir_div(v, ir_add(fc(1, t), ir_call1(INTRIN_fabs, v)));
  case TOPI_hard_swish: /* x * clip(x / 6 + 0.5, 0, 1) */
    return ir_mul(v, ir_min(ir_max(ir_add(ir_mul(v, fc(1.0 / 6.0, t)), fc(0.5, t)), fc(0, t)), fc(1, t)));
  case TOPI_mish: return ir_mul(v, ir_call1(INTRIN_tanh, softplus_expr(v)));
  case TOPI_floor: return dt_is_float(t) ? ir_call1(INTRIN_floor, v) : v;
  case TOPI_ceil: return dt_is_float(t) ? ir_call1(INTRIN_ceil, v) : v;
  case TOPI_round: return dt_is_float(t) ? ir_call1(INTRIN_round, v) : v;
  case TOPI_trunc: return dt_is_float(t) ? ir_call1(INTRIN_trunc, v) : v;
  case TOPI_sign:
    if (dt_is_bool(t)) return v;
    return ir_sub(ir_cast(t, ir_gt(v, fc(0, t))), ir_cast(t, ir_lt(v, fc(0, t))));
  case TOPI_logical_not: return ir_not(to_bool(v));
  case TOPI_bitwise_not: return ir_call1(INTRIN_bitwise_not, v);
  case TOPI_sin: return ir_call1(INTRIN_sin, v);
  case TOPI_cos: return ir_call1(INTRIN_cos, v);
  case TOPI_tan: return ir_call1(INTRIN_tan, v);
  case TOPI_asin: return ir_call1(INTRIN_asin, v);
  case TOPI_acos: return ir_call1(INTRIN_acos, v);
  case TOPI_atan: return ir_call1(INTRIN_atan, v);
  case TOPI_sinh: return ir_call1(INTRIN_sinh, v);
  case TOPI_cosh: return ir_call1(INTRIN_cosh, v);
  case TOPI_asinh: return ir_call1(INTRIN_asinh, v);
  case TOPI_acosh: return ir_call1(INTRIN_acosh, v);
  case TOPI_atanh: return ir_call1(INTRIN_atanh, v);
  case TOPI_isnan: return dt_is_float(t) ? ir_call1(INTRIN_isnan, v) : ir_bool(false);
  case TOPI_isinf: return dt_is_float(t) ? ir_call1(INTRIN_isinf, v) : ir_bool(false);
  case TOPI_identity: return v;
  case TOPI_UNARY__COUNT: break;
  }
  KUNREACHABLE();
}

static bool unary_needs_float(TopiUnary op) {
  switch (op) {
  case TOPI_negative:
  case TOPI_abs:
  case TOPI_relu:
  case TOPI_floor:
  case TOPI_ceil:
  case TOPI_round:
  case TOPI_trunc:
  case TOPI_sign:
  case TOPI_logical_not:
  case TOPI_bitwise_not:
  case TOPI_isnan:
  case TOPI_isinf:
  case TOPI_identity:
    return false;
  default:
    return true;
  }
}

Tensor *topi_unary(TopiUnary op, Tensor *x) {
  if (!x) return NULL;
  if (op < 0 || op >= TOPI_UNARY__COUNT) return kiln_set_error("unary: unknown operator %d", (int)op), NULL;
  const char *name = unary_names[op];
  if (unary_needs_float(op) && need_float(name, x)) return NULL;
  if (op == TOPI_bitwise_not && (!dt_is_intlike(x->dtype) || dt_is_bool(x->dtype)))
    return kiln_set_error("bitwise_not: expected an integer tensor, got %s", dt_str(x->dtype)), NULL;
  if (op == TOPI_negative && dt_is_bool(x->dtype))
    return kiln_set_error("negative: cannot negate a bool tensor"), NULL;
  Expr **v = te_axis_vars(x->ndim, NULL);
  Bind b = bind("x", te_read(x, x->ndim, v));
  return map_compute(kfmt("T_%s", name), x, v, let1(b, unary_body(op, b.var)), "elemwise");
}

/* ---- binary ---- */

static Expr *binary_body(TopiBinary op, Expr *a, Expr *b) {
  DType t = a->dtype;
  bool fl = dt_is_float(t);
  switch (op) {
  case TOPI_add: return ir_add(a, b);
  case TOPI_subtract: return ir_sub(a, b);
  case TOPI_multiply: return ir_mul(a, b);
  case TOPI_divide:
    if (fl) return ir_div(a, b);
    /* x / 0 would trap: divide by 1 instead (ONNX leaves it undefined) */
    return ir_div(a, ir_add(b, ir_cast(t, ir_eq(b, fc(0, t)))));
  case TOPI_power:
    if (fl) return ir_call2(INTRIN_pow, a, b);
    return ir_cast(t, ir_call2(INTRIN_pow, ir_cast(DT_F64, a), ir_cast(DT_F64, b)));
  case TOPI_minimum: return ir_min(a, b);
  case TOPI_maximum: return ir_max(a, b);
  case TOPI_mod:
    if (fl) return ir_call2(INTRIN_fmod, a, b);
    return ir_mod(a, ir_add(b, ir_cast(t, ir_eq(b, fc(0, t)))));
  case TOPI_floor_mod:
    if (fl) return ir_floormod(a, b);
    return ir_floormod(a, ir_add(b, ir_cast(t, ir_eq(b, fc(0, t)))));
  case TOPI_floor_divide:
    if (fl) return ir_call1(INTRIN_floor, ir_div(a, b));
    return ir_floordiv(a, ir_add(b, ir_cast(t, ir_eq(b, fc(0, t)))));
  case TOPI_equal: return ir_eq(a, b);
  case TOPI_not_equal: return ir_ne(a, b);
  case TOPI_less: return ir_lt(a, b);
  case TOPI_less_equal: return ir_le(a, b);
  case TOPI_greater: return ir_gt(a, b);
  case TOPI_greater_equal: return ir_ge(a, b);
  case TOPI_logical_and: return ir_and(to_bool(a), to_bool(b));
  case TOPI_logical_or: return ir_or(to_bool(a), to_bool(b));
  case TOPI_logical_xor: return ir_ne(to_bool(a), to_bool(b));
  case TOPI_bitwise_and: return dt_is_bool(t) ? ir_and(a, b) : ir_call2(INTRIN_bitwise_and, a, b);
  case TOPI_bitwise_or: return dt_is_bool(t) ? ir_or(a, b) : ir_call2(INTRIN_bitwise_or, a, b);
  case TOPI_bitwise_xor: return dt_is_bool(t) ? ir_ne(a, b) : ir_call2(INTRIN_bitwise_xor, a, b);
  case TOPI_left_shift: return ir_call2(INTRIN_shift_left, a, b);
  case TOPI_right_shift: return ir_call2(INTRIN_shift_right, a, b);
  case TOPI_BINARY__COUNT: break;
  }
  KUNREACHABLE();
}

/* The tag of a broadcasting op: "elemwise" when no input broadcasts. */
static const char *bcast_tag(int n, Tensor **ts, int nd, Expr **shape) {
  for (int i = 0; i < n; i++) {
    if (ts[i]->ndim != nd) return "broadcast";
    for (int d = 0; d < nd; d++)
      if (!ir_expr_equal(ts[i]->shape[d], shape[d]) &&
          !(ir_is_const_int(ts[i]->shape[d], NULL) && ir_is_const_int(shape[d], NULL) &&
            ts[i]->shape[d]->int_value == shape[d]->int_value))
        return "broadcast";
  }
  return "elemwise";
}

static int same_dtype(const char *op, Tensor *a, Tensor *b) {
  if (!dt_eq(a->dtype, b->dtype))
    return kiln_set_error("%s: operand dtypes differ: %s ('%s') and %s ('%s')", op, dt_str(a->dtype), a->name,
                          dt_str(b->dtype), b->name);
  return 0;
}

Tensor *topi_binary(TopiBinary op, Tensor *a, Tensor *b) {
  if (!a || !b) return NULL;
  if (op < 0 || op >= TOPI_BINARY__COUNT) return kiln_set_error("binary: unknown operator %d", (int)op), NULL;
  const char *name = binary_names[op];
  /* ONNX Pow lets the exponent have its own type: it takes the base's */
  if (op == TOPI_power && !dt_eq(a->dtype, b->dtype) && !dt_is_bool(b->dtype)) b = topi_cast(b, a->dtype);
  if (!b || same_dtype(name, a, b)) return NULL;
  DType t = a->dtype;
  switch (op) {
  case TOPI_bitwise_and:
  case TOPI_bitwise_or:
  case TOPI_bitwise_xor:
  case TOPI_left_shift:
  case TOPI_right_shift:
    if (!dt_is_intlike(t) || (dt_is_bool(t) && (op == TOPI_left_shift || op == TOPI_right_shift)))
      return kiln_set_error("%s: expected integer tensors, got %s", name, dt_str(t)), NULL;
    break;
  case TOPI_add:
  case TOPI_subtract:
  case TOPI_multiply:
  case TOPI_divide:
  case TOPI_power:
  case TOPI_mod:
  case TOPI_floor_mod:
  case TOPI_floor_divide:
    if (dt_is_bool(t)) return kiln_set_error("%s: arithmetic on bool tensors", name), NULL;
    break;
  default:
    break;
  }
  int nd;
  Expr **shape;
  Tensor *ins[2] = {a, b};
  if (topi_broadcast_shape(name, 2, ins, &nd, &shape)) return NULL;
  Expr **v = te_axis_vars(nd, NULL);
  Bind ba = bind("a", topi_broadcast_read(a, nd, v, shape));
  Bind bb = bind("b", topi_broadcast_read(b, nd, v, shape));
  Expr *body = let1(ba, let1(bb, binary_body(op, ba.var, bb.var)));
  return te_compute(kfmt("T_%s", name), nd, shape, v, body, bcast_tag(2, ins, nd, shape));
}

/* ---- parametrized activations ---- */

typedef enum { ACT_LEAKY, ACT_ELU, ACT_SELU, ACT_CELU, ACT_THRESH, ACT_HARD_SIGMOID, ACT_CLIP } ActKind;

static Tensor *activation(ActKind k, const char *name, Tensor *x, double p0, double p1) {
  if (!x) return NULL;
  if (k != ACT_CLIP && need_float(name, x)) return NULL;
  DType t = x->dtype;
  Expr **v = te_axis_vars(x->ndim, NULL);
  Bind b = bind("x", te_read(x, x->ndim, v));
  Expr *e = b.var, *body = NULL, *zero = fc(0, t);
  switch (k) {
  case ACT_LEAKY:
    body = ir_select(ir_lt(e, zero), ir_mul(e, fc(p0, t)), e);
    break;
  case ACT_ELU:
  case ACT_SELU: {
    double alpha = p0, gamma = k == ACT_SELU ? p1 : 1.0;
    Expr *neg = ir_mul(fc(alpha, t), ir_sub(ir_call1(INTRIN_exp, e), fc(1, t)));
    body = ir_select(ir_lt(e, zero), neg, e);
    if (k == ACT_SELU) body = ir_mul(fc(gamma, t), body);
    break;
  }
  case ACT_CELU: {
    Expr *neg = ir_mul(fc(p0, t), ir_sub(ir_call1(INTRIN_exp, ir_div(e, fc(p0, t))), fc(1, t)));
    body = ir_add(ir_max(e, zero), ir_min(neg, zero));
    break;
  }
  case ACT_THRESH:
    body = ir_select(ir_gt(e, fc(p0, t)), e, zero);
    break;
  case ACT_HARD_SIGMOID:
    body = ir_min(ir_max(ir_add(ir_mul(e, fc(p0, t)), fc(p1, t)), zero), fc(1, t));
    break;
  case ACT_CLIP: {
    double lo = p0, hi = p1;
    if (!isnan(lo) && !isnan(hi) && lo > hi)
      return kiln_set_error("clip: min %g is greater than max %g", lo, hi), NULL;
    body = e;
    if (dt_is_intlike(t)) {
      if (dt_is_bool(t)) return kiln_set_error("clip: bool tensors cannot be clipped"), NULL;
      double tmin = (double)dt_int_min(t), tmax = (double)dt_int_max(t);
      if (!isnan(lo) && lo > tmin) body = ir_max(body, ir_int((int64_t)ceil(lo), t));
      if (!isnan(hi) && hi < tmax) body = ir_min(body, ir_int((int64_t)floor(hi), t));
    } else {
      if (!isnan(lo) && !isinf(lo)) body = ir_max(body, fc(lo, t));
      if (!isnan(hi) && !isinf(hi)) body = ir_min(body, fc(hi, t));
    }
    break;
  }
  }
  return map_compute(kfmt("T_%s", name), x, v, let1(b, body), "elemwise");
}

Tensor *topi_leaky_relu(Tensor *x, double alpha) { return activation(ACT_LEAKY, "leaky_relu", x, alpha, 0); }
Tensor *topi_elu(Tensor *x, double alpha) { return activation(ACT_ELU, "elu", x, alpha, 0); }
Tensor *topi_selu(Tensor *x, double alpha, double gamma) { return activation(ACT_SELU, "selu", x, alpha, gamma); }
Tensor *topi_thresholded_relu(Tensor *x, double alpha) { return activation(ACT_THRESH, "thresholded_relu", x, alpha, 0); }
Tensor *topi_hard_sigmoid(Tensor *x, double alpha, double beta) {
  return activation(ACT_HARD_SIGMOID, "hard_sigmoid", x, alpha, beta);
}
Tensor *topi_clip(Tensor *x, double lo, double hi) { return activation(ACT_CLIP, "clip", x, lo, hi); }

Tensor *topi_celu(Tensor *x, double alpha) {
  if (alpha == 0) return kiln_set_error("celu: alpha must not be 0"), NULL;
  return activation(ACT_CELU, "celu", x, alpha, 0);
}

Tensor *topi_prelu(Tensor *x, Tensor *slope) {
  if (!x || !slope) return NULL;
  if (need_float("prelu", x) || same_dtype("prelu", x, slope)) return NULL;
  int nd;
  Expr **shape;
  Tensor *ins[2] = {x, slope};
  if (topi_broadcast_shape("prelu", 2, ins, &nd, &shape)) return NULL;
  if (nd != x->ndim || strcmp(topi_shape_str(nd, shape), topi_shape_str(x->ndim, x->shape)))
    return kiln_set_error("prelu: slope shape %s does not broadcast to the input shape %s",
                          topi_shape_str(slope->ndim, slope->shape), topi_shape_str(x->ndim, x->shape)),
           NULL;
  Expr **v = te_axis_vars(nd, NULL);
  Bind bx = bind("x", te_read(x, nd, v));
  Bind bs = bind("slope", topi_broadcast_read(slope, nd, v, shape));
  Expr *body = ir_select(ir_lt(bx.var, fc(0, x->dtype)), ir_mul(bx.var, bs.var), bx.var);
  return te_compute("T_prelu", nd, x->shape, v, let1(bx, let1(bs, body)), "broadcast");
}

Tensor *topi_where(Tensor *cond, Tensor *x, Tensor *y) {
  if (!cond || !x || !y) return NULL;
  if (same_dtype("where", x, y)) return NULL;
  int nd;
  Expr **shape;
  Tensor *ins[3] = {cond, x, y};
  if (topi_broadcast_shape("where", 3, ins, &nd, &shape)) return NULL;
  Expr **v = te_axis_vars(nd, NULL);
  Bind bc = bind("c", to_bool(topi_broadcast_read(cond, nd, v, shape)));
  Bind bx = bind("x", topi_broadcast_read(x, nd, v, shape));
  Bind by = bind("y", topi_broadcast_read(y, nd, v, shape));
  Expr *body = let1(bc, let1(bx, let1(by, ir_select(bc.var, bx.var, by.var))));
  return te_compute("T_where", nd, shape, v, body, bcast_tag(3, ins, nd, shape));
}

Tensor *topi_cast(Tensor *x, DType t) {
  if (!x) return NULL;
  if (t.lanes != 1 || dt_is_handle(t)) return kiln_set_error("cast: cannot cast to %s", dt_str(t)), NULL;
  Expr **v = te_axis_vars(x->ndim, NULL);
  Expr *r = te_read(x, x->ndim, v);
  Expr *body = dt_eq(x->dtype, t) ? r : ir_cast(t, r);
  return map_compute("T_cast", x, v, body, "elemwise");
}

Tensor *topi_full(int ndim, const int64_t *shape, DType t, double value) {
  if (ndim < 0) return kiln_set_error("full: negative rank %d", ndim), NULL;
  Expr **sh = KNEWN(Expr *, ndim > 0 ? ndim : 1);
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return kiln_set_error("full: shape[%d] = %lld is negative", i, (long long)shape[i]), NULL;
    sh[i] = ir_i32(shape[i]);
  }
  Expr **v = te_axis_vars(ndim, NULL);
  return te_compute("T_full", ndim, sh, v, dt_is_bool(t) ? ir_bool(value != 0) : ir_const(value, t), "elemwise");
}
