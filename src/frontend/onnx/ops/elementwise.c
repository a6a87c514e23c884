/*
 * elementwise.c - ONNX's elementwise operators: unary maps (Relu,
 * Exp, ...), activations with attributes, binary ops with NumPy
 * broadcasting (and the broadcast/axis attributes of opsets before 7),
 * variadic Max/Min/Sum/Mean, Cast, Clip, Where.
 *
 * Most are one graph call found through a name map (OpMap).  The
 * compositions at the end (IsInf, Shrink, Hardmax, OneHot) are a few
 * elementwise calls, comparisons and a one_hot, with no kernel of their
 * own.
 */
#include "ops.h"

/* ---- elementwise ---- */

static const OpMap unary_map[] = {
    {"Relu", "nn.relu"},     {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"},     {"Exp", "exp"},       {"Log", "log"},
    {"Sqrt", "sqrt"},        {"Neg", "negative"},    {"Abs", "abs"},       {"Floor", "floor"},   {"Ceil", "ceil"},
    {"Round", "round"},      {"Sign", "sign"},       {"Erf", "erf"},       {"Reciprocal", "reciprocal"},
    {"Sin", "sin"},          {"Cos", "cos"},         {"Tan", "tan"},       {"Asin", "asin"},     {"Acos", "acos"},
    {"Atan", "atan"},        {"Sinh", "sinh"},       {"Cosh", "cosh"},     {"Asinh", "asinh"},   {"Acosh", "acosh"},
    {"Atanh", "atanh"},      {"IsNaN", "isnan"},     {"Not", "logical_not"}, {"BitwiseNot", "bitwise_not"}, {"Softplus", "nn.softplus"},
    {"Softsign", "nn.softsign"}, {"HardSwish", "nn.hard_swish"}, {"Identity", NULL}, {NULL, NULL}};

int onnx_h_unary(Importer *im) {
  for (const OpMap *m = unary_map; m->onnx; m++)
    if (!strcmp(m->onnx, N(im)->op_type)) {
      if (!m->kiln) return out0(im, in0(im));
      return out0(im, imp_call1(im, m->kiln, in0(im)));
    }
  return imp_error(im, "no unary mapping");
}

int onnx_h_attr_unary(Importer *im) {
  const char *op = N(im)->op_type;
  GAttrs a = gattrs_new();
  const char *k;
  if (!strcmp(op, "LeakyRelu")) {
    k = "nn.leaky_relu";
    ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 0.01f));
  } else if (!strcmp(op, "Elu")) {
    k = "nn.elu";
    ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 1.0f));
  } else if (!strcmp(op, "Selu")) {
    k = "nn.selu";
    ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 1.67326319217681884765625f));
    ga_float(&a, "gamma", onnx_attr_float(N(im), "gamma", 1.05070102214813232421875f));
  } else if (!strcmp(op, "HardSigmoid")) {
    k = "nn.hard_sigmoid";
    ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 0.2f));
    ga_float(&a, "beta", onnx_attr_float(N(im), "beta", 0.5f));
  } else if (!strcmp(op, "ThresholdedRelu")) {
    k = "nn.thresholded_relu";
    ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 1.0f));
  } else if (!strcmp(op, "Celu")) {
    k = "nn.celu";
    ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 1.0f));
  } else
    return imp_error(im, "no mapping");
  GNode *x = in0(im);
  return out0(im, imp_call(im, k, 1, &x, a));
}

static const OpMap binary_map[] = {{"Add", "add"},           {"Sub", "subtract"},     {"Mul", "multiply"},
                                   {"Div", "divide"},        {"Pow", "power"},        {"Equal", "equal"},
                                   {"Less", "less"},         {"Greater", "greater"},  {"LessOrEqual", "less_equal"},
                                   {"GreaterOrEqual", "greater_equal"}, {"And", "logical_and"}, {"Or", "logical_or"},
                                   {"Xor", "logical_xor"},   {"PRelu", "nn.prelu"},   {"BitwiseAnd", "bitwise_and"},
                                   {"BitwiseOr", "bitwise_or"}, {"BitwiseXor", "bitwise_xor"}, {NULL, NULL}};

/* Before opset 7, binary ops broadcast only with broadcast = 1, and then B
 * matches a run of A's dimensions starting at axis (default: the trailing
 * ones, which is NumPy's rule). */
static GNode *legacy_broadcast(Importer *im, GNode *a, GNode *b) {
  if (imp_opset(im) >= 7 || !onnx_attr_int(N(im), "broadcast", 0) || !onnx_attr_has(N(im), "axis")) return b;
  int axis;
  if (imp_attr_axis(im, "axis", 0, a->type.ndim, &axis)) return NULL;
  int tail = a->type.ndim - axis - b->type.ndim;
  if (tail < 0) return imp_error(im, "axis %d does not place B %s inside A", axis, ttype_str(&b->type)), NULL;
  if (tail == 0) return b;
  int64_t s[MAXD];
  int n = 0;
  for (int i = 0; i < b->type.ndim; i++) s[n++] = b->type.shape[i];
  for (int i = 0; i < tail; i++) s[n++] = 1;
  return imp_reshape(im, b, n, s);
}

int onnx_h_binary(Importer *im) {
  GNode *a = imp_input(im, 0), *b = imp_input(im, 1);
  if (!a || !b) return imp_error(im, "needs two inputs");
  if (dt_is_string(a->type.dtype) || dt_is_string(b->type.dtype)) return onnx_string_equal(im, a, b);
  if (!(b = legacy_broadcast(im, a, b))) return -1;
  const char *op = N(im)->op_type;
  if (!strcmp(op, "Pow") && !dt_eq(a->type.dtype, b->type.dtype)) b = imp_cast(im, b, a->type.dtype);
  if (!strcmp(op, "PRelu") && imp_opset(im) < 7 && ttype_numel(&b->type) != 1 && !ttype_eq(&a->type, &b->type))
    return imp_error(im, "PRelu before opset 7 with a slope of shape %s is not supported", ttype_str(&b->type));
  for (const OpMap *m = binary_map; m->onnx; m++)
    if (!strcmp(m->onnx, op)) return out0(im, imp_call2(im, m->kiln, a, b));
  return imp_error(im, "no binary mapping");
}

int onnx_h_mod(Importer *im) {
  bool fm = onnx_attr_int(N(im), "fmod", 0) != 0;
  GNode *a = imp_input(im, 0), *b = imp_input(im, 1);
  if (!fm && dt_is_float(a->type.dtype)) {
    if (imp_opset(im) < 28) return imp_error(im, "fmod=0 is only defined for integers before opset 28");
    /* opset 28: A - floor(A / B) * B, from C's fmod: the remainder moved
     * to B's side when their signs differ, a zero remainder signed as B
     * (fmod gives the NaNs of an infinite A or a zero B) */
    GNode *r = imp_call2(im, "mod", a, b), *zero = imp_scalar_like(im, 0, a);
    GNode *rneg = bin(im, "less", r, zero), *bneg = bin(im, "less", b, zero);
    GNode *moved = imp_where(im, bin(im, "logical_and", bin(im, "not_equal", r, zero), bin(im, "not_equal", rneg, bneg)),
                             bin(im, "add", r, b), r);
    GNode *signed0 = imp_where(im, bneg, imp_scalar_like(im, -0.0, a), zero);
    return out0(im, imp_where(im, bin(im, "equal", r, zero), signed0, moved));
  }
  return out0(im, imp_call2(im, fm ? "mod" : "floor_mod", a, b));
}

int onnx_h_bitshift(Importer *im) {
  const char *dir = onnx_attr_string(N(im), "direction", "");
  const char *op = !strcmp(dir, "LEFT") ? "left_shift" : !strcmp(dir, "RIGHT") ? "right_shift" : NULL;
  if (!op) return imp_error(im, "direction must be LEFT or RIGHT, got '%s'", dir);
  GNode *x = imp_input(im, 0), *y = imp_input(im, 1);
  if (imp_opset(im) < 28) return out0(im, imp_call2(im, op, x, y));
  /* opset 28: a shift by a negative amount or by the width or more gives
   * the sign fill (-1 for a right shift of a negative signed value), else
   * 0; the shift itself is done only with amounts in range (C's is
   * undefined outside) */
  DType t = x->type.dtype;
  GNode *zero = imp_scalar_like(im, 0, y);
  GNode *valid = bin(im, "logical_and", bin(im, "greater_equal", y, zero), bin(im, "less", y, imp_scalar_like(im, t.bits, y)));
  GNode *r = imp_call2(im, op, x, imp_where(im, valid, y, zero));
  GNode *fill = imp_scalar_like(im, 0, x);
  if (op[0] == 'r' && t.code == kDLInt)
    fill = imp_where(im, bin(im, "less", x, fill), imp_scalar_like(im, -1, x), fill);
  return out0(im, imp_where(im, valid, r, fill));
}

/* Max, Min, Sum, Mean: variadic with broadcasting. */
int onnx_h_variadic(Importer *im) {
  const char *op = N(im)->op_type;
  const char *k = !strcmp(op, "Max") ? "maximum" : !strcmp(op, "Min") ? "minimum" : "add";
  int n = imp_ninputs(im);
  GNode *acc = imp_input(im, 0);
  if (!acc) return imp_error(im, "needs at least one input");
  for (int i = 1; i < n; i++) {
    GNode *x = imp_input(im, i);
    if (x) acc = imp_call2(im, k, acc, x);
  }
  if (!strcmp(op, "Mean") && n > 1) acc = imp_call2(im, "divide", acc, imp_scalar_like(im, n, acc));
  return out0(im, acc);
}

int onnx_h_where(Importer *im) {
  GNode *args[3] = {imp_input(im, 0), imp_input(im, 1), imp_input(im, 2)};
  return out0(im, imp_call(im, "where", 3, args, gattrs_new()));
}

/* Cast to ONNX type code (CastLike: the second input's type) from x,
 * through lowp.c when either side is a low-precision type. */
static int cast_to(Importer *im, int code, DType t) {
  int from = imp_input_lowp(im, 0);
  DType carrier;
  bool to_lowp = code && onnx_dtype_carrier(code, &carrier);
  if (!from && !to_lowp) return out0(im, imp_cast(im, in0(im), t));
  /* saturate (19+, default 1) concerns float8 targets only: a bfloat16
   * overflows to Inf, a float4 always clamps */
  bool sat = code != ONNX_DT_BFLOAT16 && (imp_opset(im) < 19 || onnx_attr_int(N(im), "saturate", 1) != 0);
  const char *rm = imp_opset(im) >= 24 ? onnx_attr_string(N(im), "round_mode", "up") : "up";
  int round_mode = lowp_e8m0_round_mode(rm);
  if (round_mode < 0) return imp_error(im, "round_mode '%s' is not one of up, down, nearest", rm);
  GNode *y = lowp_convert_rounding(im, in0(im), from, to_lowp ? code : 0, t, sat, round_mode);
  if (!y) return -1;
  imp_set_output_lowp(im, 0, to_lowp ? code : 0);
  return out0(im, y);
}

int onnx_h_cast(Importer *im) {
  DType t = DT_F32;
  int code;
  const OnnxAttr *to = onnx_attr_find(N(im), "to");
  if (imp_attr_int(im, "to", 0, 0, INT32_MAX, &code)) return -1;
  if (to && to->type == ONNX_ATTR_STRING) { /* Cast-1: the type by name */
    code = -1;
    for (int c = 1; c <= ONNX_DT_BFLOAT16; c++)
      if (!strcmp(onnx_data_type_name(c), to->s)) code = c;
    if (code < 0) return imp_error(im, "unknown type name '%s' in attribute 'to'", to->s);
  }
  if (code == ONNX_DT_STRING || dt_is_string(in0(im)->type.dtype)) {
    if (code != ONNX_DT_STRING && !onnx_dtype_lookup(code, &t))
      return imp_error(im, "Cast from string to %s is not supported", onnx_data_type_name(code));
    if (imp_input_lowp(im, 0)) return imp_error(im, "Cast from %s to string is not supported", onnx_data_type_name(imp_input_lowp(im, 0)));
    return out0(im, onnx_string_cast(im, in0(im), code == ONNX_DT_STRING ? DT_STRING : t));
  }
  if (!onnx_dtype_carrier(code, &t) && onnx_dtype_from_onnx(code, &t)) return imp_error(im, "%s", kiln_get_error());
  return cast_to(im, code, t);
}

int onnx_h_castlike(Importer *im) {
  if (dt_is_string(in0(im)->type.dtype) || dt_is_string(imp_input(im, 1)->type.dtype)) {
    if (imp_input_lowp(im, 0) || imp_input_lowp(im, 1)) return imp_error(im, "CastLike between string and a low-precision type is not supported");
    return out0(im, onnx_string_cast(im, in0(im), imp_input(im, 1)->type.dtype));
  }
  int code = imp_input_lowp(im, 1);
  return cast_to(im, code, imp_input(im, 1)->type.dtype);
}

int onnx_h_clip(Importer *im) {
  GNode *x = in0(im);
  double lo = -INFINITY, hi = INFINITY;
  bool dyn_lo = false, dyn_hi = false;
  if (imp_opset(im) < 11) {
    lo = onnx_attr_float(N(im), "min", -INFINITY);
    hi = onnx_attr_float(N(im), "max", INFINITY);
  } else {
    GNode *mn = imp_input(im, 1), *mx = imp_input(im, 2);
    if (mn) {
      if (gnode_is_scalar_const(mn)) lo = gnode_scalar_value(mn);
      else dyn_lo = true;
    }
    if (mx) {
      if (gnode_is_scalar_const(mx)) hi = gnode_scalar_value(mx);
      else dyn_hi = true;
    }
    if (dyn_lo) x = imp_call2(im, "maximum", x, mn);
    if (dyn_hi) x = imp_call2(im, "minimum", x, mx);
    if (!x) return -1; /* (a bound of another type: the call's error names it) */
  }
  if (!dt_is_float(x->type.dtype)) {
    if (isinf(lo)) lo = (double)dt_int_min(x->type.dtype);
    if (isinf(hi)) hi = (double)dt_int_max(x->type.dtype);
  }
  GAttrs a = gattrs_new();
  ga_float(&a, "a_min", lo);
  ga_float(&a, "a_max", hi);
  return out0(im, imp_call(im, "clip", 1, &x, a));
}

/* ---- elementwise compositions ---- */

int onnx_h_IsInf(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "input must be floating-point, got %s", dt_str(x->type.dtype));
  bool dp = onnx_attr_int(N(im), "detect_positive", 1) != 0, dn = onnx_attr_int(N(im), "detect_negative", 1) != 0;
  GNode *r = un(im, "isinf", x);
  if (!dp && !dn) r = bin(im, "logical_and", r, imp_scalar(im, 0, DT_BOOL));
  else if (!dn) r = bin(im, "logical_and", r, bin(im, "greater", x, imp_scalar_like(im, 0, x)));
  else if (!dp) r = bin(im, "logical_and", r, bin(im, "less", x, imp_scalar_like(im, 0, x)));
  return imp_set_output(im, 0, r);
}

int onnx_h_Shrink(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  double l = onnx_attr_float(N(im), "lambd", 0.5f), b = onnx_attr_float(N(im), "bias", 0.0f);
  GNode *lo = bin(im, "less", x, imp_scalar_like(im, -l, x)), *hi = bin(im, "greater", x, imp_scalar_like(im, l, x));
  GNode *inner = imp_where(im, hi, bin(im, "subtract", x, imp_scalar_like(im, b, x)), imp_scalar_like(im, 0, x));
  return imp_set_output(im, 0, imp_where(im, lo, bin(im, "add", x, imp_scalar_like(im, b, x)), inner));
}

/* Hardmax: one_hot of the (first) argmax along the axis. */
int onnx_h_Hardmax(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int nd = x->type.ndim, ax;
  bool old = imp_opset(im) < 13;
  if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", old ? 1 : -1), nd, &ax)) return -1;
  GNode *v = x;
  int vax = ax;
  if (old && ax != nd - 1) { /* before opset 13: over the flattened [:axis] x [axis:] */
    int64_t s[2] = {imp_numel(ax, x->type.shape), imp_numel(nd - ax, x->type.shape + ax)};
    v = imp_reshape(im, x, 2, s);
    vax = 1;
  }
  if (!v) return -1;
  GAttrs a = gattrs_new();
  int64_t a64 = vax;
  ga_ints(&a, "axis", 1, &a64);
  ga_int(&a, "keepdims", 0);
  GNode *am = imp_call(im, "argmax", 1, &v, a);
  GAttrs oa = gattrs_new();
  ga_int(&oa, "depth", v->type.shape[vax]);
  ga_int(&oa, "axis", vax);
  ga_str(&oa, "dtype", dt_str(x->type.dtype));
  GNode *y = am ? imp_call(im, "one_hot", 1, &am, oa) : NULL;
  if (v != x) y = imp_reshape(im, y, nd, x->type.shape);
  return imp_set_output(im, 0, y);
}

int onnx_h_OneHot(Importer *im) {
  GNode *idx = imp_input(im, 0);
  if (!idx) return imp_error(im, "needs indices");
  GNode *dn = imp_input(im, 1), *vn = imp_input(im, 2);
  if ((dn && dn->kind == GN_VAR) || (vn && vn->kind == GN_VAR)) return onnx_one_hot_runtime(im);
  int64_t depth;
  if (imp_input_i64(im, 1, 1, IMP_MAX_COUNT, &depth)) return -1;
  GNode *vals = imp_const_input(im, 2);
  if (!vals) return -1;
  if (ttype_numel(&vals->type) != 2) return imp_error(im, "values must hold [off_value, on_value], got %s", ttype_str(&vals->type));
  GAttrs a = gattrs_new();
  ga_int(&a, "depth", depth);
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", -1));
  ga_float(&a, "off_value", imp_const_at(vals, 0));
  ga_float(&a, "on_value", imp_const_at(vals, 1));
  ga_str(&a, "dtype", dt_str(vals->type.dtype));
  return imp_set_output(im, 0, imp_call(im, "one_hot", 1, &idx, a));
}
