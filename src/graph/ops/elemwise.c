/*
 * elemwise.c - op-table rows for elementwise and broadcasting ops:
 * unary math, activations, binary arithmetic and comparisons with NumPy
 * broadcasting, where, cast, clip.
 */
#include "util.h"

#include <string.h>

/* ---- type inference ---- */

static int infer_same(GNode *n, TType *out) {
  *out = *arg_type(n, 0);
  return 0;
}

static int infer_float_unary(GNode *n, TType *out) {
  if (!dt_is_float(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "a floating-point type");
  *out = *arg_type(n, 0);
  return 0;
}

static int infer_bool_unary(GNode *n, TType *out) {
  *out = *arg_type(n, 0);
  out->dtype = DT_BOOL;
  return 0;
}

static int infer_logical_not(GNode *n, TType *out) {
  if (!dt_is_bool(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "bool");
  *out = *arg_type(n, 0);
  return 0;
}

static int check_same_dtype(GNode *n, int a, int b) {
  if (!dt_eq(arg_type(n, a)->dtype, arg_type(n, b)->dtype))
    return kiln_set_error("inputs have different types: %s and %s", dt_str(arg_type(n, a)->dtype),
                          dt_str(arg_type(n, b)->dtype));
  return 0;
}

static int infer_binary(GNode *n, TType *out) {
  if (check_same_dtype(n, 0, 1)) return -1;
  return bcast_shapes(arg_type(n, 0), arg_type(n, 1), out);
}

static int infer_compare(GNode *n, TType *out) {
  if (infer_binary(n, out)) return -1;
  out->dtype = DT_BOOL;
  return 0;
}

static int infer_logical(GNode *n, TType *out) {
  if (!dt_is_bool(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "bool");
  if (!dt_is_bool(arg_type(n, 1)->dtype)) return err_dtype(n, 1, "bool");
  return bcast_shapes(arg_type(n, 0), arg_type(n, 1), out);
}

static int infer_bitwise(GNode *n, TType *out) {
  if (!dt_is_intlike(arg_type(n, 0)->dtype) || dt_is_bool(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "an integer type");
  return infer_binary(n, out);
}

static int infer_bitwise_not(GNode *n, TType *out) {
  if (!dt_is_intlike(arg_type(n, 0)->dtype) || dt_is_bool(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "an integer type");
  *out = *arg_type(n, 0);
  return 0;
}

static int infer_where(GNode *n, TType *out) {
  if (!dt_is_bool(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "bool");
  if (check_same_dtype(n, 1, 2)) return -1;
  TType t;
  if (bcast_shapes(arg_type(n, 0), arg_type(n, 1), &t) || bcast_shapes(&t, arg_type(n, 2), out)) return -1;
  out->dtype = arg_type(n, 1)->dtype;
  return 0;
}

static int infer_cast(GNode *n, TType *out) {
  const char *to = gattr_str(&n->attrs, "dtype", NULL);
  if (!to) return kiln_set_error("missing attribute 'dtype'");
  DType t;
  if (dt_parse(to, &t)) return -1;
  *out = *arg_type(n, 0);
  out->dtype = t;
  return 0;
}

static int infer_prelu(GNode *n, TType *out) {
  /* slope broadcasts against the data (ONNX PRelu is unidirectional) */
  if (check_same_dtype(n, 0, 1)) return -1;
  TType t;
  if (bcast_shapes(arg_type(n, 0), arg_type(n, 1), &t)) return -1;
  if (!ttype_eq(&t, arg_type(n, 0)))
    return kiln_set_error("slope of shape %s does not broadcast to the data's shape %s", shape_str(arg_type(n, 1)),
                          shape_str(arg_type(n, 0)));
  *out = t;
  return 0;
}

static int infer_bias_add(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *b = arg_type(n, 1);
  int axis;
  if (norm_axis("bias_add axis", gattr_int(&n->attrs, "axis", 1), d->ndim, &axis)) return -1;
  if (b->ndim != 1 || b->shape[0] != d->shape[axis])
    return kiln_set_error("bias of shape %s does not match dimension %d (%lld) of the data %s", shape_str(b), axis,
                          (long long)d->shape[axis], shape_str(d));
  if (check_same_dtype(n, 0, 1)) return -1;
  *out = *d;
  return 0;
}

/* The compute adapters live in compute.c (they call the operator
 * library); rows name them through this table. */
#include "compute.h"

#define UN(name, infer, pat) {name, 1, 1, pat, infer, compute_elemwise, NULL, NULL}
#define UN_SIG(name, infer, pat, sig) {name, 1, 1, pat, infer, compute_elemwise, NULL, sig}
#define BIN(name, infer) {name, 2, 2, PAT_BROADCAST, infer, compute_elemwise, NULL, "lhs, rhs"}

const OpDef ops_elemwise[] = {
    UN("negative", infer_same, PAT_ELEMWISE),
    UN("abs", infer_same, PAT_ELEMWISE),
    UN("sign", infer_same, PAT_ELEMWISE),
    UN("copy", infer_same, PAT_ELEMWISE),
    UN("exp", infer_float_unary, PAT_ELEMWISE),
    UN("log", infer_float_unary, PAT_ELEMWISE),
    UN("sqrt", infer_float_unary, PAT_ELEMWISE),
    UN("rsqrt", infer_float_unary, PAT_ELEMWISE),
    UN("reciprocal", infer_float_unary, PAT_ELEMWISE),
    UN("sigmoid", infer_float_unary, PAT_ELEMWISE),
    UN("tanh", infer_float_unary, PAT_ELEMWISE),
    UN("erf", infer_float_unary, PAT_ELEMWISE),
    UN("floor", infer_float_unary, PAT_ELEMWISE),
    UN("ceil", infer_float_unary, PAT_ELEMWISE),
    UN("round", infer_float_unary, PAT_ELEMWISE),
    UN("trunc", infer_float_unary, PAT_ELEMWISE),
    UN("sin", infer_float_unary, PAT_ELEMWISE),
    UN("cos", infer_float_unary, PAT_ELEMWISE),
    UN("tan", infer_float_unary, PAT_ELEMWISE),
    UN("asin", infer_float_unary, PAT_ELEMWISE),
    UN("acos", infer_float_unary, PAT_ELEMWISE),
    UN("atan", infer_float_unary, PAT_ELEMWISE),
    UN("sinh", infer_float_unary, PAT_ELEMWISE),
    UN("cosh", infer_float_unary, PAT_ELEMWISE),
    UN("asinh", infer_float_unary, PAT_ELEMWISE),
    UN("acosh", infer_float_unary, PAT_ELEMWISE),
    UN("atanh", infer_float_unary, PAT_ELEMWISE),
    UN("isnan", infer_bool_unary, PAT_ELEMWISE),
    UN("isinf", infer_bool_unary, PAT_ELEMWISE),
    UN("logical_not", infer_logical_not, PAT_ELEMWISE),
    UN("bitwise_not", infer_bitwise_not, PAT_ELEMWISE),
    UN("nn.relu", infer_same, PAT_ELEMWISE),
    UN_SIG("nn.leaky_relu", infer_float_unary, PAT_ELEMWISE, "data, alpha=0.01"),     /* alpha */
    UN("nn.elu", infer_float_unary, PAT_ELEMWISE),            /* alpha */
    UN("nn.selu", infer_float_unary, PAT_ELEMWISE),           /* alpha, gamma */
    UN("nn.softplus", infer_float_unary, PAT_ELEMWISE),
    UN("nn.softsign", infer_float_unary, PAT_ELEMWISE),
    UN("nn.hard_sigmoid", infer_float_unary, PAT_ELEMWISE),   /* alpha, beta */
    UN("nn.hard_swish", infer_float_unary, PAT_ELEMWISE),
    UN("nn.gelu", infer_float_unary, PAT_ELEMWISE),           /* approximate: "none"/"tanh" */
    UN("nn.thresholded_relu", infer_float_unary, PAT_ELEMWISE), /* alpha */
    UN("nn.celu", infer_float_unary, PAT_ELEMWISE),           /* alpha */
    UN_SIG("clip", infer_same, PAT_ELEMWISE, "a, a_min, a_max"),                     /* a_min, a_max */
    UN_SIG("cast", infer_cast, PAT_ELEMWISE, "data, dtype"),                     /* dtype */
    BIN("add", infer_binary),
    BIN("subtract", infer_binary),
    BIN("multiply", infer_binary),
    BIN("divide", infer_binary),
    BIN("power", infer_binary),
    BIN("maximum", infer_binary),
    BIN("minimum", infer_binary),
    BIN("mod", infer_binary),       /* fmod semantics for floats, truncated for ints */
    BIN("floor_mod", infer_binary), /* Python semantics */
    BIN("equal", infer_compare),
    BIN("not_equal", infer_compare),
    BIN("less", infer_compare),
    BIN("less_equal", infer_compare),
    BIN("greater", infer_compare),
    BIN("greater_equal", infer_compare),
    BIN("logical_and", infer_logical),
    BIN("logical_or", infer_logical),
    BIN("logical_xor", infer_logical),
    BIN("bitwise_and", infer_bitwise),
    BIN("bitwise_or", infer_bitwise),
    BIN("bitwise_xor", infer_bitwise),
    BIN("left_shift", infer_bitwise),
    BIN("right_shift", infer_bitwise),
    {"nn.prelu", 2, 2, PAT_BROADCAST, infer_prelu, compute_elemwise, NULL, "data, alpha, axis=1"},
    {"nn.bias_add", 2, 2, PAT_BROADCAST, infer_bias_add, compute_elemwise, NULL, "data, bias, axis=1"},
    {"where", 3, 3, PAT_BROADCAST, infer_where, compute_elemwise, NULL, "condition, x, y"},
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
