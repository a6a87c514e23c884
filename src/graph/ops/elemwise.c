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

/* A unary op the operator library knows by its name (UN, with flags
 * UN_F); one with its own compute (UN_C, UN_SIG with Relay's signature);
 * a binary op the library knows by its name (BIN, BIN_F with an id and
 * flags).  Flags are OPF_* (graph.h): PS marks what alter_layout's channel
 * padding may flow through, BB a broadcast it may run on blocked tensors. */
#define PS OPF_PAD_SAFE
#define BB OPF_BLOCKED_BROADCAST
#define UN(name, infer, pat) {name, 1, 1, pat, infer, compute_unary, NULL, NULL}
#define UN_F(name, infer, pat, flags) {name, 1, 1, pat, infer, compute_unary, NULL, NULL, OP_OTHER, flags}
#define UN_C(name, infer, pat, compute, flags) {name, 1, 1, pat, infer, compute, NULL, NULL, OP_OTHER, flags}
#define UN_SIG(name, infer, pat, compute, sig, flags) {name, 1, 1, pat, infer, compute, NULL, sig, OP_OTHER, flags}
#define BIN(name, infer) {name, 2, 2, PAT_BROADCAST, infer, compute_binary, NULL, "lhs, rhs"}
#define BIN_F(name, infer, id, flags) {name, 2, 2, PAT_BROADCAST, infer, compute_binary, NULL, "lhs, rhs", id, flags}

const OpDef ops_elemwise[] = {
    UN_F("negative", infer_same, PAT_ELEMWISE, PS),
    UN_F("abs", infer_same, PAT_ELEMWISE, PS),
    UN("sign", infer_same, PAT_ELEMWISE),
    UN_C("copy", infer_same, PAT_ELEMWISE, compute_copy, PS),
    UN("exp", infer_float_unary, PAT_ELEMWISE),
    UN("log", infer_float_unary, PAT_ELEMWISE),
    {"sqrt", 1, 1, PAT_ELEMWISE, infer_float_unary, compute_unary, NULL, NULL, OP_SQRT, 0},
    UN("rsqrt", infer_float_unary, PAT_ELEMWISE),
    UN("reciprocal", infer_float_unary, PAT_ELEMWISE),
    {"sigmoid", 1, 1, PAT_ELEMWISE, infer_float_unary, compute_unary, NULL, NULL, OP_SIGMOID, PS},
    UN_F("tanh", infer_float_unary, PAT_ELEMWISE, PS),
    {"erf", 1, 1, PAT_ELEMWISE, infer_float_unary, compute_unary, NULL, NULL, OP_ERF, PS},
    UN("floor", infer_float_unary, PAT_ELEMWISE),
    UN("ceil", infer_float_unary, PAT_ELEMWISE),
    {"round", 1, 1, PAT_ELEMWISE, infer_float_unary, compute_unary, NULL, NULL, OP_ROUND, 0},
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
    UN_C("nn.relu", infer_same, PAT_ELEMWISE, compute_relu, PS),
    UN_SIG("nn.leaky_relu", infer_float_unary, PAT_ELEMWISE, compute_leaky_relu, "data, alpha=0.01", PS),     /* alpha */
    UN_C("nn.elu", infer_float_unary, PAT_ELEMWISE, compute_elu, PS),            /* alpha */
    UN_C("nn.selu", infer_float_unary, PAT_ELEMWISE, compute_selu, PS),           /* alpha, gamma */
    UN_C("nn.softplus", infer_float_unary, PAT_ELEMWISE, compute_softplus, 0),
    UN_C("nn.softsign", infer_float_unary, PAT_ELEMWISE, compute_softsign, PS),
    UN_C("nn.hard_sigmoid", infer_float_unary, PAT_ELEMWISE, compute_hard_sigmoid, PS),   /* alpha, beta */
    UN_C("nn.hard_swish", infer_float_unary, PAT_ELEMWISE, compute_hard_swish, PS),
    UN_C("nn.gelu", infer_float_unary, PAT_ELEMWISE, compute_gelu, PS),           /* approximate: "none"/"tanh" */
    UN_C("nn.silu", infer_float_unary, PAT_ELEMWISE, compute_silu, PS),           /* x sigmoid(x) */
    UN_C("nn.thresholded_relu", infer_float_unary, PAT_ELEMWISE, compute_thresholded_relu, 0), /* alpha */
    UN_C("nn.celu", infer_float_unary, PAT_ELEMWISE, compute_celu, PS),           /* alpha */
    {"clip", 1, 1, PAT_ELEMWISE, infer_same, compute_clip, NULL, "a, a_min, a_max", OP_CLIP, PS}, /* a_min, a_max */
    {"cast", 1, 1, PAT_ELEMWISE, infer_cast, compute_cast, NULL, "data, dtype", OP_CAST, 0},                     /* dtype */
    BIN_F("add", infer_binary, OP_ADD, BB | PS),
    BIN_F("subtract", infer_binary, OP_SUBTRACT, BB | PS),
    BIN_F("multiply", infer_binary, OP_MULTIPLY, BB | PS),
    BIN_F("divide", infer_binary, OP_DIVIDE, BB),
    BIN_F("power", infer_binary, OP_POWER, BB),
    BIN_F("maximum", infer_binary, OP_OTHER, BB | PS),
    BIN_F("minimum", infer_binary, OP_OTHER, BB | PS),
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
    {"nn.prelu", 2, 2, PAT_BROADCAST, infer_prelu, compute_prelu, NULL, "data, alpha, axis=1", OP_OTHER, BB | PS},
    {"nn.bias_add", 2, 2, PAT_BROADCAST, infer_bias_add, compute_bias_add, NULL, "data, bias, axis=1", OP_BIAS_ADD, PS},
    {"where", 3, 3, PAT_BROADCAST, infer_where, compute_where, NULL, "condition, x, y"},
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
