/*
 * import_ops.c - the table of ONNX operators Kiln maps, and their
 * handlers.  A handler reads its node's inputs and attributes through the
 * importer (import.h), builds graph calls, and sets the node's outputs.
 * Version differences (attributes that became inputs, changed defaults)
 * are decided by imp_opset.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#define MAXD GRAPH_MAX_DIMS

static const OnnxNode *N(Importer *im) { return imp_node(im); }

/* ---- helpers ---- */

static GNode *in0(Importer *im) { return imp_input(im, 0); }

static int out0(Importer *im, GNode *v) {
  if (!v) return -1;
  return imp_set_output(im, 0, v);
}

static GNode *reshape(Importer *im, GNode *x, int n, const int64_t *shape) {
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", n, shape);
  return imp_call(im, "reshape", 1, &x, a);
}

static GNode *transpose(Importer *im, GNode *x, int n, const int64_t *perm) {
  GAttrs a = gattrs_new();
  ga_ints(&a, "axes", n, perm);
  return imp_call(im, "transpose", 1, &x, a);
}

static GNode *cast_to(Importer *im, GNode *x, DType t) {
  if (dt_eq(x->type.dtype, t)) return x;
  GAttrs a = gattrs_new();
  ga_str(&a, "dtype", dt_str(t));
  return imp_call(im, "cast", 1, &x, a);
}

static GNode *scalar_like(Importer *im, double v, GNode *x) { return imp_scalar(im, v, x->type.dtype); }

/* ---- elementwise ---- */

typedef struct {
  const char *onnx, *kiln;
} OpMap;

static const OpMap unary_map[] = {
    {"Relu", "nn.relu"},     {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"},     {"Exp", "exp"},       {"Log", "log"},
    {"Sqrt", "sqrt"},        {"Neg", "negative"},    {"Abs", "abs"},       {"Floor", "floor"},   {"Ceil", "ceil"},
    {"Round", "round"},      {"Sign", "sign"},       {"Erf", "erf"},       {"Reciprocal", "reciprocal"},
    {"Sin", "sin"},          {"Cos", "cos"},         {"Tan", "tan"},       {"Asin", "asin"},     {"Acos", "acos"},
    {"Atan", "atan"},        {"Sinh", "sinh"},       {"Cosh", "cosh"},     {"Asinh", "asinh"},   {"Acosh", "acosh"},
    {"Atanh", "atanh"},      {"IsNaN", "isnan"},     {"Not", "logical_not"}, {"Softplus", "nn.softplus"},
    {"Softsign", "nn.softsign"}, {"HardSwish", "nn.hard_swish"}, {"Identity", NULL}, {NULL, NULL}};

static int h_unary(Importer *im) {
  for (const OpMap *m = unary_map; m->onnx; m++)
    if (!strcmp(m->onnx, N(im)->op_type)) {
      if (!m->kiln) return out0(im, in0(im));
      return out0(im, imp_call1(im, m->kiln, in0(im)));
    }
  return imp_error(im, "no unary mapping");
}

static int h_attr_unary(Importer *im) {
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
  int64_t axis = onnx_attr_int(N(im), "axis", 0);
  if (axis < 0) axis += a->type.ndim;
  int tail = a->type.ndim - (int)axis - b->type.ndim;
  if (axis < 0 || tail < 0) return imp_error(im, "axis %lld does not place B %s inside A", (long long)axis, ttype_str(&b->type)), NULL;
  if (tail == 0) return b;
  int64_t s[MAXD];
  int n = 0;
  for (int i = 0; i < b->type.ndim; i++) s[n++] = b->type.shape[i];
  for (int i = 0; i < tail; i++) s[n++] = 1;
  return reshape(im, b, n, s);
}

static int h_binary(Importer *im) {
  GNode *a = imp_input(im, 0), *b = imp_input(im, 1);
  if (!a || !b) return imp_error(im, "needs two inputs");
  if (!(b = legacy_broadcast(im, a, b))) return -1;
  const char *op = N(im)->op_type;
  if (!strcmp(op, "Pow") && !dt_eq(a->type.dtype, b->type.dtype)) b = cast_to(im, b, a->type.dtype);
  if (!strcmp(op, "PRelu") && imp_opset(im) < 7 && ttype_numel(&b->type) != 1 && !ttype_eq(&a->type, &b->type))
    return imp_error(im, "PRelu before opset 7 with a slope of shape %s is not supported", ttype_str(&b->type));
  for (const OpMap *m = binary_map; m->onnx; m++)
    if (!strcmp(m->onnx, op)) return out0(im, imp_call2(im, m->kiln, a, b));
  return imp_error(im, "no binary mapping");
}

static int h_mod(Importer *im) {
  bool fm = onnx_attr_int(N(im), "fmod", 0) != 0;
  GNode *a = imp_input(im, 0), *b = imp_input(im, 1);
  if (!fm && dt_is_float(a->type.dtype)) return imp_error(im, "fmod=0 is only defined for integers");
  return out0(im, imp_call2(im, fm ? "mod" : "floor_mod", a, b));
}

static int h_bitshift(Importer *im) {
  const char *dir = onnx_attr_string(N(im), "direction", "");
  const char *op = !strcmp(dir, "LEFT") ? "left_shift" : !strcmp(dir, "RIGHT") ? "right_shift" : NULL;
  if (!op) return imp_error(im, "direction must be LEFT or RIGHT, got '%s'", dir);
  return out0(im, imp_call2(im, op, imp_input(im, 0), imp_input(im, 1)));
}

/* Max, Min, Sum, Mean: variadic with broadcasting. */
static int h_variadic(Importer *im) {
  const char *op = N(im)->op_type;
  const char *k = !strcmp(op, "Max") ? "maximum" : !strcmp(op, "Min") ? "minimum" : "add";
  int n = imp_ninputs(im);
  GNode *acc = imp_input(im, 0);
  if (!acc) return imp_error(im, "needs at least one input");
  for (int i = 1; i < n; i++) {
    GNode *x = imp_input(im, i);
    if (x) acc = imp_call2(im, k, acc, x);
  }
  if (!strcmp(op, "Mean") && n > 1) acc = imp_call2(im, "divide", acc, scalar_like(im, n, acc));
  return out0(im, acc);
}

static int h_where(Importer *im) {
  GNode *args[3] = {imp_input(im, 0), imp_input(im, 1), imp_input(im, 2)};
  return out0(im, imp_call(im, "where", 3, args, gattrs_new()));
}

static int h_cast(Importer *im) {
  DType t;
  int code = (int)onnx_attr_int(N(im), "to", 0);
  const OnnxAttr *to = onnx_attr_find(N(im), "to");
  if (to && to->type == ONNX_ATTR_STRING) { /* Cast-1: the type by name */
    code = -1;
    for (int c = 1; c <= ONNX_DT_BFLOAT16; c++)
      if (!strcmp(onnx_data_type_name(c), to->s)) code = c;
    if (code < 0) return imp_error(im, "unknown type name '%s' in attribute 'to'", to->s);
  }
  if (onnx_dtype_from_onnx(code, &t)) return imp_error(im, "%s", kiln_get_error());
  return out0(im, cast_to(im, in0(im), t));
}

static int h_castlike(Importer *im) { return out0(im, cast_to(im, in0(im), imp_input(im, 1)->type.dtype)); }

static int h_clip(Importer *im) {
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

/* ---- convolution and pooling ---- */

/* Padding of one spatial axis from auto_pad. */
static void same_pad(int64_t in, int64_t k, int64_t s, int64_t d, bool upper, int64_t *b, int64_t *e) {
  int64_t out = (in + s - 1) / s;
  int64_t total = (out - 1) * s + (k - 1) * d + 1 - in;
  if (total < 0) total = 0;
  *b = upper ? total / 2 : total - total / 2;
  *e = total - *b;
}

typedef struct Win {
  int nsp;              /* spatial dims: 1 to 3 */
  int64_t k[3], s[3], d[3];
  int64_t pb[3], pe[3]; /* pads begin/end */
} Win;

static int read_window(Importer *im, GNode *x, const int64_t *kshape, Win *w) {
  int nsp = x->type.ndim - 2;
  if (nsp < 1 || nsp > 3) return imp_error(im, "%d-D windows are not supported (input has rank %d)", nsp, x->type.ndim);
  w->nsp = nsp;
  int n;
  const int64_t *v;
  for (int i = 0; i < nsp; i++) {
    w->k[i] = kshape[i];
    w->s[i] = w->d[i] = 1;
    w->pb[i] = w->pe[i] = 0;
  }
  if ((v = onnx_attr_ints(N(im), "strides", &n)) && n == nsp)
    for (int i = 0; i < nsp; i++) w->s[i] = v[i];
  if ((v = onnx_attr_ints(N(im), "dilations", &n)) && n == nsp)
    for (int i = 0; i < nsp; i++) w->d[i] = v[i];
  const char *ap = onnx_attr_string(N(im), "auto_pad", "NOTSET");
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    for (int i = 0; i < nsp; i++)
      same_pad(x->type.shape[2 + i], w->k[i], w->s[i], w->d[i], !strcmp(ap, "SAME_UPPER"), &w->pb[i], &w->pe[i]);
  } else if (!strcmp(ap, "VALID")) {
  } else if (!strcmp(ap, "NOTSET")) {
    if ((v = onnx_attr_ints(N(im), "pads", &n))) {
      if (n != 2 * nsp) return imp_error(im, "pads has %d values, expected %d", n, 2 * nsp);
      for (int i = 0; i < nsp; i++) {
        w->pb[i] = v[i];
        w->pe[i] = v[nsp + i];
      }
    }
  } else
    return imp_error(im, "unknown auto_pad '%s'", ap);
  return 0;
}

/* 1-D windows run as 2-D with height 1. */
static GNode *to_2d(Importer *im, GNode *x) {
  if (x->type.ndim != 3) return x;
  int64_t s[4] = {x->type.shape[0], x->type.shape[1], 1, x->type.shape[2]};
  return reshape(im, x, 4, s);
}

static void win_attrs(GAttrs *a, const Win *w, const char *kkey) {
  int64_t k[2], s[2], d[2], p[4];
  if (w->nsp == 1) {
    k[0] = 1, k[1] = w->k[0];
    s[0] = 1, s[1] = w->s[0];
    d[0] = 1, d[1] = w->d[0];
    p[0] = 0, p[1] = w->pb[0], p[2] = 0, p[3] = w->pe[0];
  } else {
    for (int i = 0; i < 2; i++) {
      k[i] = w->k[i];
      s[i] = w->s[i];
      d[i] = w->d[i];
    }
    p[0] = w->pb[0], p[1] = w->pb[1], p[2] = w->pe[0], p[3] = w->pe[1];
  }
  if (kkey) ga_ints(a, kkey, 2, k);
  ga_ints(a, "strides", 2, s);
  ga_ints(a, "dilation", 2, d);
  ga_ints(a, "padding", 4, p);
}

static GNode *from_2d(Importer *im, GNode *y, int nsp) {
  if (nsp != 1) return y;
  int64_t s[3] = {y->type.shape[0], y->type.shape[1], y->type.shape[3]};
  return reshape(im, y, 3, s);
}

GNode *onnx_conv(Importer *im, GNode *x, GNode *w, GNode *b) {
  if (!x || !w) return imp_error(im, "needs data and weight"), NULL;
  if (w->type.ndim != x->type.ndim)
    return imp_error(im, "weight rank %d differs from data rank %d", w->type.ndim, x->type.ndim), NULL;
  Win win;
  if (read_window(im, x, w->type.shape + 2, &win)) return NULL;
  if (win.nsp > 2) return imp_error(im, "%d-D convolutions are not supported", win.nsp), NULL;
  GAttrs a = gattrs_new();
  win_attrs(&a, &win, "kernel_size");
  ga_int(&a, "groups", onnx_attr_int(N(im), "group", 1));
  ga_int(&a, "channels", w->type.shape[0]);
  GNode *args[2] = {to_2d(im, x), to_2d(im, w)};
  GNode *y = imp_call(im, "nn.conv2d", 2, args, a);
  if (b && y) {
    GNode *ba[2] = {y, b};
    GAttrs aa = gattrs_new();
    ga_int(&aa, "axis", 1);
    y = imp_call(im, "nn.bias_add", 2, ba, aa);
  }
  return y ? from_2d(im, y, win.nsp) : NULL;
}

static int h_conv(Importer *im) { return out0(im, onnx_conv(im, in0(im), imp_input(im, 1), imp_input(im, 2))); }

/* A 3-D transposed convolution as 2-D ones: each depth tap kd of the
 * kernel is a 2-D transposed convolution of every input depth slice, whose
 * results land at depths id * sd + kd * dd (zeros interleaved for the
 * stride, padding for the offset); the depth pads are cropped at the end. */
static GNode *conv_transpose3d(Importer *im, GNode *x, GNode *w, const Win *win, const int64_t *op, int64_t groups) {
  const int64_t *xs = x->type.shape;
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4], KD = w->type.shape[2];
  int64_t sd = win->s[0], dd = win->d[0];
  int64_t p5[5] = {0, 2, 1, 3, 4}, s4[4] = {N * D, C, H, W};
  GNode *x4 = imp_reshape(im, imp_transpose(im, x, 5, p5), 4, s4);
  Win hw = {2, {win->k[1], win->k[2]}, {win->s[1], win->s[2]}, {win->d[1], win->d[2]}, {win->pb[1], win->pb[2]}, {win->pe[1], win->pe[2]}};
  int64_t Lf = (D - 1) * sd + (KD - 1) * dd + 1 + op[0];
  GNode *acc = NULL;
  for (int64_t kd = 0; kd < KD && x4; kd++) {
    GAttrs sa = gattrs_new();
    int64_t b = kd, e = kd + 1, st = 1, ax = 2;
    ga_ints(&sa, "begin", 1, &b);
    ga_ints(&sa, "end", 1, &e);
    ga_ints(&sa, "strides", 1, &st);
    ga_ints(&sa, "axes", 1, &ax);
    GNode *wk = imp_squeeze(im, imp_call(im, "strided_slice", 1, &w, sa), 2);
    GAttrs a = gattrs_new();
    win_attrs(&a, &hw, "kernel_size");
    ga_int(&a, "groups", groups);
    ga_ints(&a, "output_padding", 2, op + 1);
    GNode *args[2] = {x4, wk};
    GNode *z = wk ? imp_call(im, "nn.conv2d_transpose", 2, args, a) : NULL;
    if (!z) return NULL;
    int64_t M = z->type.shape[1], OH = z->type.shape[2], OW = z->type.shape[3];
    int64_t z5[5] = {N, D, M, OH, OW};
    z = imp_reshape(im, z, 5, z5);
    if (sd > 1) { /* interleave sd - 1 zero slices after each depth */
      int64_t zs[6] = {N, D, sd - 1, M, OH, OW};
      GNode *zero = imp_scalar_like(im, 0, z);
      GAttrs ba = gattrs_new();
      ga_ints(&ba, "shape", 6, zs);
      GNode *zz = imp_call(im, "broadcast_to", 1, &zero, ba);
      GAttrs ca = gattrs_new();
      ga_int(&ca, "axis", 2);
      GNode *parts[2] = {imp_expand_dims(im, z, 2), zz};
      int64_t r5[5] = {N, D * sd, M, OH, OW};
      z = imp_reshape(im, imp_call(im, "concatenate", 2, parts, ca), 5, r5);
      GAttrs ta = gattrs_new();
      int64_t tb = 0, te = (D - 1) * sd + 1, one = 1, a1 = 1;
      ga_ints(&ta, "begin", 1, &tb);
      ga_ints(&ta, "end", 1, &te);
      ga_ints(&ta, "strides", 1, &one);
      ga_ints(&ta, "axes", 1, &a1);
      z = z ? imp_call(im, "strided_slice", 1, &z, ta) : NULL;
    }
    int64_t front = kd * dd, back = Lf - front - ((D - 1) * sd + 1);
    int64_t pads[10] = {0, front, 0, 0, 0, 0, back, 0, 0, 0};
    GAttrs pa = gattrs_new();
    ga_ints(&pa, "pads", 10, pads);
    ga_str(&pa, "pad_mode", "constant");
    ga_float(&pa, "pad_value", 0);
    z = z ? imp_call(im, "nn.pad", 1, &z, pa) : NULL;
    acc = acc ? imp_call2(im, "add", acc, z) : z;
  }
  if (!acc) return NULL;
  GAttrs ca = gattrs_new();
  int64_t cb = win->pb[0], ce = Lf - win->pe[0], one = 1, a1 = 1;
  ga_ints(&ca, "begin", 1, &cb);
  ga_ints(&ca, "end", 1, &ce);
  ga_ints(&ca, "strides", 1, &one);
  ga_ints(&ca, "axes", 1, &a1);
  GNode *y = imp_call(im, "strided_slice", 1, &acc, ca);
  return imp_transpose(im, y, 5, p5);
}

static int h_conv_transpose(Importer *im) {
  GNode *x = in0(im), *w = imp_input(im, 1), *b = imp_input(im, 2);
  if (!x || !w) return imp_error(im, "needs data and weight");
  if (x->type.ndim < 3 || x->type.ndim > 5)
    return imp_error(im, "%d-D transposed convolutions are not supported", x->type.ndim - 2);
  if (w->type.ndim != x->type.ndim) return imp_error(im, "weight rank %d differs from data rank %d", w->type.ndim, x->type.ndim);
  Win win;
  if (read_window(im, x, w->type.shape + 2, &win)) return -1;
  bool one_d = win.nsp == 1;
  if (one_d) { /* as 2-D with height 1 */
    win.nsp = 2;
    win.k[1] = win.k[0], win.s[1] = win.s[0], win.d[1] = win.d[0], win.pb[1] = win.pb[0], win.pe[1] = win.pe[0];
    win.k[0] = win.s[0] = win.d[0] = 1, win.pb[0] = win.pe[0] = 0;
    x = to_2d(im, x);
    w = to_2d(im, w);
    if (!x || !w) return -1;
  }
  int ns = win.nsp;
  int64_t groups = onnx_attr_int(N(im), "group", 1);
  int n;
  const int64_t *v;
  int64_t op[3] = {0, 0, 0};
  if ((v = onnx_attr_ints(N(im), "output_padding", &n)) && n == ns)
    for (int i = 0; i < ns; i++) op[i] = v[i];
  if (v && one_d && n == 1) op[1] = v[0];
  const int64_t *osz = onnx_attr_ints(N(im), "output_shape", &n);
  int64_t osz1[2];
  if (osz && one_d && n == 1) {
    osz1[0] = 1, osz1[1] = osz[0];
    osz = osz1;
    n = 2;
  }
  const char *ap = onnx_attr_string(N(im), "auto_pad", "NOTSET");
  if ((osz && n == ns) || !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    /* total padding from the wanted output size */
    for (int i = 0; i < ns; i++) {
      int64_t in = x->type.shape[2 + i];
      int64_t want = osz && n == ns ? osz[i] : in * win.s[i];
      int64_t total = win.s[i] * (in - 1) + op[i] + ((win.k[i] - 1) * win.d[i] + 1) - want;
      if (total < 0) {
        op[i] -= total; /* grow on the far side */
        total = 0;
      }
      bool upper = strcmp(ap, "SAME_LOWER") != 0;
      win.pb[i] = upper ? total / 2 : total - total / 2;
      win.pe[i] = total - win.pb[i];
    }
  }
  GNode *y;
  if (ns == 3) {
    y = conv_transpose3d(im, x, w, &win, op, groups);
  } else {
    GAttrs a = gattrs_new();
    win_attrs(&a, &win, "kernel_size");
    ga_int(&a, "groups", groups);
    ga_ints(&a, "output_padding", 2, op);
    GNode *args[2] = {x, w};
    y = imp_call(im, "nn.conv2d_transpose", 2, args, a);
  }
  if (b && y) {
    GAttrs aa = gattrs_new();
    ga_int(&aa, "axis", 1);
    y = imp_call(im, "nn.bias_add", 2, (GNode *[]){y, b}, aa);
  }
  return out0(im, y && one_d ? from_2d(im, y, 1) : y);
}

/* One 2-D pooling call of the node's kind on x (NCHW). */
static GNode *pool2d(Importer *im, GNode *x, const Win *w) {
  const char *op = N(im)->op_type;
  GAttrs a = gattrs_new();
  win_attrs(&a, w, "pool_size");
  ga_int(&a, "ceil_mode", onnx_attr_int(N(im), "ceil_mode", 0));
  const char *k = "nn.max_pool2d";
  if (!strcmp(op, "AveragePool")) {
    k = "nn.avg_pool2d";
    ga_int(&a, "count_include_pad", onnx_attr_int(N(im), "count_include_pad", 0));
  } else if (!strcmp(op, "LpPool")) {
    k = "nn.lp_pool2d";
    const OnnxAttr *p = onnx_attr_find(N(im), "p");
    ga_int(&a, "p", p && p->type == ONNX_ATTR_FLOAT ? (int64_t)p->f : onnx_attr_int(N(im), "p", 2)); /* float before opset 11 */
  }
  return imp_call(im, k, 1, &x, a);
}

static int h_pool(Importer *im) {
  const char *op = N(im)->op_type;
  GNode *x = in0(im);
  int n;
  const int64_t *ks = onnx_attr_ints(N(im), "kernel_shape", &n);
  if (!ks || n != x->type.ndim - 2) return imp_error(im, "kernel_shape must give %d values", x->type.ndim - 2);
  Win win;
  if (read_window(im, x, ks, &win)) return -1;
  if (!strcmp(op, "MaxPool") && N(im)->noutputs > 1 && *N(im)->outputs[1]) {
    if (win.nsp != 2) return imp_error(im, "the Indices output is supported for 2-D pooling only");
    GNode *idx;
    if (onnx_maxpool_indices(im, x, win.k, win.s, win.d, win.pb, win.pe, onnx_attr_int(N(im), "ceil_mode", 0) != 0, &idx) ||
        imp_set_output(im, 1, idx))
      return -1;
  }
  if (win.nsp == 3) {
    /* max, average (the count of a window is a product over its axes,
     * padding excluded or not) and Lp pooling are separable: pool over
     * (H, W) with depth folded into the channels, then over D with H and
     * W flattened into one axis */
    const int64_t *xs = x->type.shape;
    Win hw = {2, {win.k[1], win.k[2]}, {win.s[1], win.s[2]}, {win.d[1], win.d[2]}, {win.pb[1], win.pb[2]}, {win.pe[1], win.pe[2]}};
    int64_t s1[4] = {xs[0], xs[1] * xs[2], xs[3], xs[4]};
    GNode *y = pool2d(im, reshape(im, x, 4, s1), &hw);
    if (!y) return -1;
    int64_t oh = y->type.shape[2], ow = y->type.shape[3];
    int64_t s2[4] = {xs[0], xs[1], xs[2], oh * ow};
    Win dd = {2, {win.k[0], 1}, {win.s[0], 1}, {win.d[0], 1}, {win.pb[0], 0}, {win.pe[0], 0}};
    GNode *z = pool2d(im, reshape(im, y, 4, s2), &dd);
    if (!z) return -1;
    int64_t s3[5] = {xs[0], xs[1], z->type.shape[2], oh, ow};
    return out0(im, reshape(im, z, 5, s3));
  }
  GNode *y = pool2d(im, to_2d(im, x), &win);
  return out0(im, y ? from_2d(im, y, win.nsp) : NULL);
}

static int h_global_pool(Importer *im) {
  GNode *x = in0(im);
  if (x->type.ndim != 4) {
    /* any rank: reduce over the spatial axes */
    int64_t axes[MAXD];
    int n = 0;
    for (int i = 2; i < x->type.ndim; i++) axes[n++] = i;
    GAttrs a = gattrs_new();
    ga_ints(&a, "axis", n, axes);
    ga_int(&a, "keepdims", 1);
    return out0(im, imp_call(im, !strcmp(N(im)->op_type, "GlobalMaxPool") ? "max" : "mean", 1, &x, a));
  }
  return out0(im, imp_call1(im, !strcmp(N(im)->op_type, "GlobalMaxPool") ? "nn.global_max_pool2d" : "nn.global_avg_pool2d", x));
}

static int h_batchnorm(Importer *im) {
  if (imp_opset(im) >= 14 && onnx_attr_int(N(im), "training_mode", 0)) return onnx_h_BatchNormTraining(im);
  if (N(im)->noutputs > 1)
    for (int i = 1; i < N(im)->noutputs; i++)
      if (*N(im)->outputs[i]) return imp_error(im, "training-mode outputs are not supported (inference only)");
  GNode *args[5];
  for (int i = 0; i < 5; i++)
    if (!(args[i] = imp_input(im, i))) return imp_error(im, "input %d is missing", i);
  if (imp_opset(im) < 9 && onnx_attr_int(N(im), "spatial", 1) == 0)
    return imp_error(im, "spatial = 0 (statistics per element) is not supported");
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 1);
  ga_float(&a, "epsilon", onnx_attr_float(N(im), "epsilon", 1e-5f));
  return out0(im, imp_call(im, "nn.batch_norm", 5, args, a));
}

static int h_instancenorm(Importer *im) {
  GNode *args[3] = {in0(im), imp_input(im, 1), imp_input(im, 2)};
  GAttrs a = gattrs_new();
  ga_float(&a, "epsilon", onnx_attr_float(N(im), "epsilon", 1e-5f));
  return out0(im, imp_call(im, "nn.instance_norm", 3, args, a));
}

static int h_layernorm(Importer *im) {
  for (int i = 1; i < N(im)->noutputs; i++)
    if (*N(im)->outputs[i]) return onnx_h_LayerNormStats(im);
  GNode *args[3];
  int n = 0;
  for (int i = 0; i < 3; i++)
    if ((args[n] = imp_input(im, i))) n++;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", -1));
  ga_float(&a, "epsilon", onnx_attr_float(N(im), "epsilon", 1e-5f));
  return out0(im, imp_call(im, "nn.layer_norm", n, args, a));
}

static int h_lrn(Importer *im) {
  GAttrs a = gattrs_new();
  ga_int(&a, "size", onnx_attr_int(N(im), "size", 0));
  ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 1e-4f));
  ga_float(&a, "beta", onnx_attr_float(N(im), "beta", 0.75f));
  ga_float(&a, "bias", onnx_attr_float(N(im), "bias", 1.0f));
  GNode *x = in0(im);
  return out0(im, imp_call(im, "nn.lrn", 1, &x, a));
}

static int h_dropout(Importer *im) {
  if (imp_opset(im) >= 12 && imp_input(im, 2)) {
    GNode *tm = imp_const_input(im, 2);
    if (!tm) return -1;
    double ratio = 0.5;
    if (imp_input(im, 1)) {
      GNode *r = imp_const_input(im, 1);
      if (!r) return -1;
      ratio = gnode_scalar_value(r);
    }
    if (gnode_scalar_value(tm) != 0 && ratio != 0)
      return imp_error(im, "training mode (training_mode = true, ratio %g) is not supported: Kiln compiles inference "
                           "graphs, and a training-mode dropout is random", ratio);
  }
  if (N(im)->noutputs > 1 && *N(im)->outputs[1]) {
    /* the mask of an inference-mode dropout is all true */
    GNode *x = in0(im);
    GNode *t = imp_scalar(im, 1, DT_BOOL);
    GAttrs a = gattrs_new();
    ga_ints(&a, "shape", x->type.ndim, x->type.shape);
    if (imp_set_output(im, 1, imp_call(im, "broadcast_to", 1, &t, a))) return -1;
  }
  return out0(im, in0(im));
}

/* ---- dense ---- */

static int h_gemm(Importer *im) {
  GNode *A = in0(im), *B = imp_input(im, 1), *C = imp_input(im, 2);
  double alpha = onnx_attr_float(N(im), "alpha", 1.0f), beta = onnx_attr_float(N(im), "beta", 1.0f);
  bool ta = onnx_attr_int(N(im), "transA", 0) != 0, tb = onnx_attr_int(N(im), "transB", 0) != 0;
  if (A->type.ndim != 2 || B->type.ndim != 2) return imp_error(im, "A and B must be matrices");
  int64_t perm[2] = {1, 0};
  if (ta) A = transpose(im, A, 2, perm);
  GNode *W = tb ? B : transpose(im, B, 2, perm); /* dense wants [N, K] */
  if (alpha != 1.0) A = imp_call2(im, "multiply", A, scalar_like(im, alpha, A));
  GNode *y = imp_call2(im, "nn.dense", A, W);
  if (C) {
    if (beta != 1.0) C = imp_call2(im, "multiply", C, scalar_like(im, beta, C));
    y = imp_call2(im, "add", y, C);
  }
  return out0(im, y);
}

static int h_matmul(Importer *im) {
  GNode *A = in0(im), *B = imp_input(im, 1);
  /* a constant 2-D right operand is a dense layer: fast, packed weights */
  if (B->kind == GN_CONST && B->type.ndim == 2 && A->type.ndim >= 2) {
    int64_t perm[2] = {1, 0};
    GNode *W = transpose(im, B, 2, perm);
    if (A->type.ndim == 2) return out0(im, imp_call2(im, "nn.dense", A, W));
    int64_t m = 1;
    for (int i = 0; i < A->type.ndim - 1; i++) m *= A->type.shape[i];
    int64_t s2[2] = {m, A->type.shape[A->type.ndim - 1]};
    GNode *y = imp_call2(im, "nn.dense", reshape(im, A, 2, s2), W);
    int64_t so[MAXD];
    for (int i = 0; i < A->type.ndim - 1; i++) so[i] = A->type.shape[i];
    so[A->type.ndim - 1] = B->type.shape[1];
    return out0(im, y ? reshape(im, y, A->type.ndim, so) : NULL);
  }
  return out0(im, imp_call2(im, "nn.matmul", A, B));
}

/* ---- softmax ---- */

static int h_softmax(Importer *im) {
  GNode *x = in0(im);
  const char *op = !strcmp(N(im)->op_type, "LogSoftmax") ? "nn.log_softmax" : "nn.softmax";
  int64_t axis = onnx_attr_int(N(im), "axis", imp_opset(im) < 13 ? 1 : -1);
  int nd = x->type.ndim;
  if (axis < 0) axis += nd;
  if (axis < 0 || axis >= (nd ? nd : 1)) return imp_error(im, "axis %lld out of range for rank %d", (long long)axis, nd);
  if (imp_opset(im) < 13 && axis != nd - 1) {
    /* old semantics: flatten to [prod(:axis), prod(axis:)] */
    int64_t a = 1, b = 1;
    for (int i = 0; i < nd; i++) *(i < axis ? &a : &b) *= x->type.shape[i];
    int64_t s2[2] = {a, b};
    GNode *f = reshape(im, x, 2, s2);
    GAttrs at = gattrs_new();
    ga_int(&at, "axis", 1);
    GNode *y = imp_call(im, op, 1, &f, at);
    return out0(im, y ? reshape(im, y, nd, x->type.shape) : NULL);
  }
  GAttrs at = gattrs_new();
  ga_int(&at, "axis", axis);
  return out0(im, imp_call(im, op, 1, &x, at));
}

/* ---- shape and data movement ---- */

static int h_constant(Importer *im) {
  const OnnxNode *n = N(im);
  const OnnxTensor *t = onnx_attr_tensor(n, "value");
  Graph *g = imp_graph(im);
  DLDevice cpu = {kDLCPU, 0};
  if (t) {
    DType dt;
    if (onnx_tensor_dtype(t, &dt)) return imp_error(im, "%s", kiln_get_error());
    DLTensor *a;
    if (kiln_array_empty(t->ndim, t->dims, dt, cpu, &a)) return -1;
    if (t->nbytes && kiln_array_copy_from_bytes(a, t->data, t->nbytes)) {
      kiln_array_free(a);
      return -1;
    }
    return out0(im, graph_const(g, n->outputs[0], a));
  }
  if (onnx_attr_has(n, "value_float")) return out0(im, imp_scalar(im, onnx_attr_float(n, "value_float", 0), DT_F32));
  if (onnx_attr_has(n, "value_int")) return out0(im, imp_scalar(im, (double)onnx_attr_int(n, "value_int", 0), DT_I64));
  int k;
  const int64_t *iv = onnx_attr_ints(n, "value_ints", &k);
  if (iv) return out0(im, imp_const_ints(im, k, iv));
  const float *fv = onnx_attr_floats(n, "value_floats", &k);
  if (fv) {
    DLTensor *a;
    int64_t len = k;
    if (kiln_array_empty(1, &len, DT_F32, cpu, &a)) return -1;
    memcpy(a->data, fv, sizeof(float) * (size_t)k);
    return out0(im, graph_const(g, NULL, a));
  }
  return imp_error(im, "no supported value attribute (sparse and string constants are not supported)");
}

static int h_shape(Importer *im) {
  GNode *x = in0(im);
  int64_t nd = x->type.ndim, start = onnx_attr_int(N(im), "start", 0), end = onnx_attr_int(N(im), "end", nd);
  if (start < 0) start += nd;
  if (end < 0) end += nd;
  if (start < 0) start = 0;
  if (end > nd) end = nd;
  if (end < start) end = start;
  return out0(im, imp_const_ints(im, (int)(end - start), x->type.shape + start));
}

static int h_size(Importer *im) { return out0(im, imp_scalar(im, (double)ttype_numel(&in0(im)->type), DT_I64)); }

static int h_reshape(Importer *im) {
  int64_t s[MAXD];
  int n;
  if (imp_opset(im) < 5) {
    const int64_t *v = onnx_attr_ints(N(im), "shape", &n);
    if (!v || n > MAXD) return imp_error(im, "bad shape attribute");
    memcpy(s, v, sizeof(int64_t) * (size_t)n);
  } else if ((n = imp_const_input_ints(im, 1, s, MAXD)) < 0)
    return -1;
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", n, s);
  ga_int(&a, "allowzero", onnx_attr_int(N(im), "allowzero", 0));
  GNode *x = in0(im);
  return out0(im, imp_call(im, "reshape", 1, &x, a));
}

static int h_flatten(Importer *im) {
  GNode *x = in0(im);
  int64_t axis = onnx_attr_int(N(im), "axis", 1), nd = x->type.ndim;
  if (axis < 0) axis += nd;
  if (axis < 0 || axis > nd) return imp_error(im, "axis out of range");
  int64_t a = 1, b = 1;
  for (int i = 0; i < nd; i++) *(i < axis ? &a : &b) *= x->type.shape[i];
  int64_t s[2] = {a, b};
  return out0(im, reshape(im, x, 2, s));
}

static int h_transpose(Importer *im) {
  GNode *x = in0(im);
  int n;
  const int64_t *p = onnx_attr_ints(N(im), "perm", &n);
  GAttrs a = gattrs_new();
  if (p) ga_ints(&a, "axes", n, p);
  return out0(im, imp_call(im, "transpose", 1, &x, a));
}

/* axes from the attribute (older opsets) or the optional input */
static int read_axes(Importer *im, int input, int from_opset, int64_t *axes, bool *present) {
  int n = 0;
  *present = false;
  if (imp_opset(im) < from_opset) {
    const int64_t *v = onnx_attr_ints(N(im), "axes", &n);
    if (v) {
      if (n > MAXD) return imp_error(im, "too many axes");
      memcpy(axes, v, sizeof(int64_t) * (size_t)n);
      *present = true;
    }
    return n;
  }
  if (imp_input(im, input)) {
    *present = true;
    return imp_const_input_ints(im, input, axes, MAXD);
  }
  return 0;
}

static int h_squeeze(Importer *im) {
  int64_t axes[MAXD];
  bool present;
  int n = read_axes(im, 1, 13, axes, &present);
  if (n < 0) return -1;
  GNode *x = in0(im);
  GAttrs a = gattrs_new();
  if (present) ga_ints(&a, "axis", n, axes);
  return out0(im, imp_call(im, "squeeze", 1, &x, a));
}

static int h_unsqueeze(Importer *im) {
  int64_t axes[MAXD];
  bool present;
  int n = read_axes(im, 1, 13, axes, &present);
  if (n < 0) return -1;
  if (!present) return imp_error(im, "axes are required");
  GNode *x = in0(im);
  GAttrs a = gattrs_new();
  ga_ints(&a, "axes", n, axes);
  return out0(im, imp_call(im, "expand_dims", 1, &x, a));
}

static int h_concat(Importer *im) {
  int n = imp_ninputs(im);
  GNode **args = KNEWN(GNode *, n + 1);
  int k = 0;
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, i);
    if (x) args[k++] = x;
  }
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", imp_opset(im) < 4 ? 1 : 0));
  return out0(im, imp_call(im, "concatenate", k, args, a));
}

static GNode *slice(Importer *im, GNode *x, int axis, int64_t b, int64_t e, int64_t s) {
  GAttrs a = gattrs_new();
  int64_t ax = axis;
  ga_ints(&a, "begin", 1, &b);
  ga_ints(&a, "end", 1, &e);
  ga_ints(&a, "strides", 1, &s);
  ga_ints(&a, "axes", 1, &ax);
  return imp_call(im, "strided_slice", 1, &x, a);
}

static int h_split(Importer *im) {
  GNode *x = in0(im);
  int64_t axis = onnx_attr_int(N(im), "axis", 0), nd = x->type.ndim;
  if (axis < 0) axis += nd;
  if (axis < 0 || axis >= nd) return imp_error(im, "axis out of range");
  int nout = N(im)->noutputs;
  int64_t sizes[64];
  int n = 0;
  if (imp_opset(im) < 13) {
    const int64_t *v = onnx_attr_ints(N(im), "split", &n);
    if (v) memcpy(sizes, v, sizeof(int64_t) * (size_t)(n < 64 ? n : 64));
  } else if (imp_input(im, 1)) {
    n = imp_const_input_ints(im, 1, sizes, 64);
    if (n < 0) return -1;
  }
  int64_t dim = x->type.shape[axis];
  if (n == 0) {
    if (nout > 64) return imp_error(im, "too many outputs");
    n = nout;
    int64_t chunk = (dim + nout - 1) / nout;
    for (int i = 0; i < nout; i++) sizes[i] = i < nout - 1 ? chunk : dim - chunk * (nout - 1);
  }
  if (n != nout) return imp_error(im, "split has %d sizes for %d outputs", n, nout);
  int64_t start = 0;
  for (int i = 0; i < n; i++) {
    if (imp_set_output(im, i, slice(im, x, (int)axis, start, start + sizes[i], 1))) return -1;
    start += sizes[i];
  }
  if (start != dim) return imp_error(im, "split sizes sum to %lld, axis has %lld", (long long)start, (long long)dim);
  return 0;
}

static int h_slice(Importer *im) {
  GNode *x = in0(im);
  int64_t st[MAXD], en[MAXD], ax[MAXD], sp[MAXD];
  int n, ne, na = 0, ns = 0;
  if (imp_opset(im) < 10) {
    const int64_t *v = onnx_attr_ints(N(im), "starts", &n), *e = onnx_attr_ints(N(im), "ends", &ne), *a;
    if (!v || !e || n != ne || n > MAXD) return imp_error(im, "starts/ends must be given with equal lengths");
    memcpy(st, v, sizeof(int64_t) * (size_t)n);
    memcpy(en, e, sizeof(int64_t) * (size_t)n);
    if ((a = onnx_attr_ints(N(im), "axes", &na))) memcpy(ax, a, sizeof(int64_t) * (size_t)na);
  } else {
    if ((n = imp_const_input_ints(im, 1, st, MAXD)) < 0 || (ne = imp_const_input_ints(im, 2, en, MAXD)) < 0) return -1;
    if (n != ne) return imp_error(im, "starts and ends have different lengths");
    if (imp_input(im, 3) && (na = imp_const_input_ints(im, 3, ax, MAXD)) < 0) return -1;
    if (imp_input(im, 4) && (ns = imp_const_input_ints(im, 4, sp, MAXD)) < 0) return -1;
  }
  if (!na) {
    na = n;
    for (int i = 0; i < n; i++) ax[i] = i;
  }
  if (!ns) {
    ns = n;
    for (int i = 0; i < n; i++) sp[i] = 1;
  }
  if (na != n || ns != n) return imp_error(im, "starts, ends, axes and steps must have equal lengths");
  GAttrs a = gattrs_new();
  ga_ints(&a, "begin", n, st);
  ga_ints(&a, "end", n, en);
  ga_ints(&a, "axes", n, ax);
  ga_ints(&a, "strides", n, sp);
  return out0(im, imp_call(im, "strided_slice", 1, &x, a));
}

static int h_gather(Importer *im) {
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", 0));
  GNode *args[2] = {in0(im), imp_input(im, 1)};
  return out0(im, imp_call(im, !strcmp(N(im)->op_type, "GatherElements") ? "gather_elements" : "take", 2, args, a));
}

static int h_pad(Importer *im) {
  GNode *x = in0(im);
  int nd = x->type.ndim;
  int64_t pads[2 * MAXD];
  int n;
  double value = 0;
  if (imp_opset(im) < 11) {
    const int64_t *v = onnx_attr_ints(N(im), imp_opset(im) < 2 ? "paddings" : "pads", &n);
    if (!v || n != 2 * nd) return imp_error(im, "pads must have %d values", 2 * nd);
    memcpy(pads, v, sizeof(int64_t) * (size_t)n);
    value = onnx_attr_float(N(im), "value", 0);
  } else {
    if ((n = imp_const_input_ints(im, 1, pads, 2 * MAXD)) < 0) return -1;
    if (n != 2 * nd) return imp_error(im, "pads has %d values, expected %d", n, 2 * nd);
    GNode *cv = imp_input(im, 2) ? imp_const_input(im, 2) : NULL;
    if (imp_input(im, 2) && !cv) return -1;
    if (cv) {
      if (!gnode_is_scalar_const(cv)) return imp_error(im, "constant_value must be a scalar");
      value = gnode_scalar_value(cv);
    }
  }
  GAttrs a = gattrs_new();
  ga_ints(&a, "pads", n, pads);
  ga_str(&a, "pad_mode", onnx_attr_string(N(im), "mode", "constant"));
  ga_float(&a, "pad_value", value);
  return out0(im, imp_call(im, "nn.pad", 1, &x, a));
}

static int h_tile(Importer *im) {
  if (imp_opset(im) < 6) return imp_error(im, "Tile before opset 6 (tiles and axis inputs) is not supported");
  int64_t r[MAXD];
  int n = imp_const_input_ints(im, 1, r, MAXD);
  if (n < 0) return -1;
  GAttrs a = gattrs_new();
  ga_ints(&a, "reps", n, r);
  GNode *x = in0(im);
  return out0(im, imp_call(im, "tile", 1, &x, a));
}

static int h_expand(Importer *im) {
  int64_t s[MAXD];
  int n = imp_const_input_ints(im, 1, s, MAXD);
  if (n < 0) return -1;
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", n, s);
  GNode *x = in0(im);
  return out0(im, imp_call(im, "broadcast_to", 1, &x, a));
}

static int h_constant_of_shape(Importer *im) {
  int64_t s[MAXD];
  int n = imp_const_input_ints(im, 0, s, MAXD);
  if (n < 0) return -1;
  const OnnxTensor *t = onnx_attr_tensor(N(im), "value");
  double v = 0;
  DType dt = DT_F32;
  if (t) {
    if (onnx_tensor_dtype(t, &dt)) return imp_error(im, "%s", kiln_get_error());
    if (t->numel != 1) return imp_error(im, "value must hold one element");
    DLTensor *tmp;
    DLDevice cpu = {kDLCPU, 0};
    if (kiln_array_empty(0, NULL, dt, cpu, &tmp)) return -1;
    kiln_array_copy_from_bytes(tmp, t->data, t->nbytes);
    GNode *c = graph_const(imp_graph(im), NULL, tmp);
    v = gnode_scalar_value(c);
  }
  GNode *sc = imp_scalar(im, v, dt);
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", n, s);
  return out0(im, imp_call(im, "broadcast_to", 1, &sc, a));
}

static int h_range(Importer *im) {
  GNode *s = imp_const_input(im, 0), *l = s ? imp_const_input(im, 1) : NULL, *d = l ? imp_const_input(im, 2) : NULL;
  if (!d) return -1;
  if (!gnode_is_scalar_const(s) || !gnode_is_scalar_const(l) || !gnode_is_scalar_const(d))
    return imp_error(im, "start, limit and delta must be scalars");
  double a = gnode_scalar_value(s), b = gnode_scalar_value(l), st = gnode_scalar_value(d);
  if (st == 0) return imp_error(im, "delta is zero");
  double cnt = ceil((b - a) / st);
  int64_t n = cnt > 0 ? (int64_t)cnt : 0;
  DType dt = s->type.dtype;
  DLTensor *arr;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(1, &n, dt, cpu, &arr)) return -1;
  for (int64_t i = 0; i < n; i++) {
    double v = a + st * (double)i;
    if (dt.code == kDLFloat && dt.bits == 32) ((float *)arr->data)[i] = (float)v;
    else if (dt.code == kDLFloat && dt.bits == 64) ((double *)arr->data)[i] = v;
    else if (dt.code == kDLInt && dt.bits == 32) ((int32_t *)arr->data)[i] = (int32_t)(int64_t)(a + st * (double)i);
    else if (dt.code == kDLInt && dt.bits == 64) ((int64_t *)arr->data)[i] = (int64_t)a + (int64_t)st * i;
    else if (dt.code == kDLInt && dt.bits == 16) ((int16_t *)arr->data)[i] = (int16_t)(int64_t)v;
    else {
      kiln_array_free(arr);
      return imp_error(im, "type %s is not supported", dt_str(dt));
    }
  }
  return out0(im, graph_const(imp_graph(im), NULL, arr));
}

static int h_depth_space(Importer *im) {
  GAttrs a = gattrs_new();
  ga_int(&a, "block_size", onnx_attr_int(N(im), "blocksize", 0));
  GNode *x = in0(im);
  if (!strcmp(N(im)->op_type, "DepthToSpace")) {
    ga_str(&a, "mode", onnx_attr_string(N(im), "mode", "DCR"));
    return out0(im, imp_call(im, "nn.depth_to_space", 1, &x, a));
  }
  return out0(im, imp_call(im, "nn.space_to_depth", 1, &x, a));
}

/* ---- reductions ---- */

static int h_reduce(Importer *im) {
  static const OpMap m[] = {{"ReduceSum", "sum"},       {"ReduceMean", "mean"},         {"ReduceMax", "max"},
                            {"ReduceMin", "min"},       {"ReduceProd", "prod"},         {"ReduceL1", "l1_norm"},
                            {"ReduceL2", "l2_norm"},    {"ReduceSumSquare", "sum_square"}, {"ReduceLogSumExp", "logsumexp"},
                            {"ReduceLogSum", "sum"},    {NULL, NULL}};
  const char *op = N(im)->op_type, *k = NULL;
  for (const OpMap *p = m; p->onnx; p++)
    if (!strcmp(p->onnx, op)) k = p->kiln;
  int64_t axes[MAXD];
  bool present;
  int from = !strcmp(op, "ReduceSum") ? 13 : 18;
  int n = read_axes(im, 1, from, axes, &present);
  if (n < 0) return -1;
  GNode *x = in0(im);
  if (n == 0 && onnx_attr_int(N(im), "noop_with_empty_axes", 0)) return out0(im, x);
  GAttrs a = gattrs_new();
  if (n) ga_ints(&a, "axis", n, axes);
  ga_int(&a, "keepdims", onnx_attr_int(N(im), "keepdims", 1));
  GNode *y = imp_call(im, k, 1, &x, a);
  if (!strcmp(op, "ReduceLogSum") && y) y = imp_call1(im, "log", y);
  return out0(im, y);
}

static int h_argreduce(Importer *im) {
  GAttrs a = gattrs_new();
  int64_t ax = onnx_attr_int(N(im), "axis", 0);
  ga_ints(&a, "axis", 1, &ax);
  ga_int(&a, "keepdims", onnx_attr_int(N(im), "keepdims", 1));
  ga_int(&a, "select_last_index", onnx_attr_int(N(im), "select_last_index", 0));
  GNode *x = in0(im);
  return out0(im, imp_call(im, !strcmp(N(im)->op_type, "ArgMax") ? "argmax" : "argmin", 1, &x, a));
}

/* ---- resize ---- */

static int h_resize(Importer *im) {
  GNode *x = in0(im);
  int nd = x->type.ndim;
  int64_t size[MAXD];
  double scales[MAXD];
  bool have = false;
  const char *op = N(im)->op_type;
  if (!strcmp(op, "Upsample") && imp_opset(im) < 7)
    return imp_error(im, "Upsample before opset 7 (height_scale and width_scale) is not supported");
  if (!strcmp(op, "Upsample") && imp_opset(im) < 9) {
    int n;
    const float *v = onnx_attr_floats(N(im), "scales", &n);
    if (!v || n != nd) return imp_error(im, "scales must have %d values", nd);
    for (int i = 0; i < nd; i++) scales[i] = v[i];
  } else {
    int si = !strcmp(op, "Upsample") ? 1 : imp_opset(im) >= 11 ? 2 : 1;
    GNode *sz = !strcmp(op, "Resize") && imp_opset(im) >= 11 ? imp_input(im, 3) : NULL;
    if (sz && ttype_numel(&sz->type) > 0) {
      int n = imp_const_input_ints(im, 3, size, MAXD);
      if (n < 0) return -1;
      if (n != nd) return imp_error(im, "sizes has %d values, expected %d", n, nd);
      have = true;
    } else {
      if (!imp_input(im, si)) return imp_error(im, "needs scales or sizes");
      GNode *sc = imp_const_input(im, si);
      if (!sc) return -1;
      if (ttype_numel(&sc->type) != nd || !dt_eq(sc->type.dtype, DT_F32))
        return imp_error(im, "scales must hold %d float32 values, got %s", nd, ttype_str(&sc->type));
      for (int i = 0; i < nd; i++) scales[i] = ((const float *)((char *)sc->value->data + sc->value->byte_offset))[i];
    }
  }
  if (!have)
    for (int i = 0; i < nd; i++) size[i] = (int64_t)floor((double)x->type.shape[i] * scales[i]);
  if (!strcmp(onnx_attr_string(N(im), "coordinate_transformation_mode", ""), "tf_crop_and_resize"))
    return onnx_resize_crop(im, x, size);
  GAttrs a = gattrs_new();
  ga_ints(&a, "size", nd, size);
  if (!have) {
    ga_floats(&a, "scales", nd, scales);
  }
  const char *mode = onnx_attr_string(N(im), "mode", "nearest");
  ga_str(&a, "method", mode);
  ga_str(&a, "coordinate_transformation_mode",
         onnx_attr_string(N(im), "coordinate_transformation_mode", !strcmp(op, "Upsample") || imp_opset(im) < 11 ? "asymmetric" : "half_pixel"));
  ga_str(&a, "nearest_mode", onnx_attr_string(N(im), "nearest_mode", !strcmp(op, "Upsample") || imp_opset(im) < 11 ? "floor" : "round_prefer_floor"));
  ga_float(&a, "cubic_coeff_a", onnx_attr_float(N(im), "cubic_coeff_a", -0.75f));
  ga_int(&a, "exclude_outside", onnx_attr_int(N(im), "exclude_outside", 0));
  ga_float(&a, "extrapolation_value", onnx_attr_float(N(im), "extrapolation_value", 0.0f));
  return out0(im, imp_call(im, "image.resize2d", 1, &x, a));
}

/* ---- the table ---- */

static const OnnxOpEntry table[] = {
    {"Abs", h_unary},
    {"Acos", h_unary},
    {"Acosh", h_unary},
    {"Adagrad", onnx_h_Adagrad},
    {"Adam", onnx_h_Adam},
    {"Add", h_binary},
    {"And", h_binary},
    {"ArgMax", h_argreduce},
    {"ArgMin", h_argreduce},
    {"Asin", h_unary},
    {"Asinh", h_unary},
    {"Atan", h_unary},
    {"Atanh", h_unary},
    {"AveragePool", h_pool},
    {"BatchNormalization", h_batchnorm},
    {"BitShift", h_bitshift},
    {"BitwiseAnd", h_binary},
    {"BitwiseOr", h_binary},
    {"BitwiseXor", h_binary},
    {"BlackmanWindow", onnx_h_BlackmanWindow},
    {"Cast", h_cast},
    {"CastLike", h_castlike},
    {"Ceil", h_unary},
    {"Celu", h_attr_unary},
    {"Clip", h_clip},
    {"Compress", onnx_h_Compress},
    {"Concat", h_concat},
    {"ConcatFromSequence", onnx_h_ConcatFromSequence},
    {"Constant", h_constant},
    {"ConstantOfShape", h_constant_of_shape},
    {"Conv", h_conv},
    {"ConvInteger", onnx_h_ConvInteger},
    {"ConvTranspose", h_conv_transpose},
    {"Cos", h_unary},
    {"Cosh", h_unary},
    {"CumSum", onnx_h_CumSum},
    {"DepthToSpace", h_depth_space},
    {"DequantizeLinear", onnx_h_DequantizeLinear},
    {"Det", onnx_h_Det},
    {"DFT", onnx_h_DFT},
    {"Div", h_binary},
    {"Dropout", h_dropout},
    {"DynamicQuantizeLinear", onnx_h_DynamicQuantizeLinear},
    {"Einsum", onnx_h_Einsum},
    {"Elu", h_attr_unary},
    {"Equal", h_binary},
    {"Erf", h_unary},
    {"Exp", h_unary},
    {"Expand", h_expand},
    {"EyeLike", onnx_h_EyeLike},
    {"Flatten", h_flatten},
    {"Floor", h_unary},
    {"Gather", h_gather},
    {"GatherElements", h_gather},
    {"GatherND", onnx_h_GatherND},
    {"Gemm", h_gemm},
    {"GlobalAveragePool", h_global_pool},
    {"GlobalLpPool", onnx_h_GlobalLpPool},
    {"GlobalMaxPool", h_global_pool},
    {"Greater", h_binary},
    {"GreaterOrEqual", h_binary},
    {"GridSample", onnx_h_GridSample},
    {"GRU", onnx_h_GRU},
    {"HammingWindow", onnx_h_HammingWindow},
    {"HannWindow", onnx_h_HannWindow},
    {"Hardmax", onnx_h_Hardmax},
    {"HardSigmoid", h_attr_unary},
    {"HardSwish", h_unary},
    {"Identity", h_unary},
    {"If", onnx_h_If},
    {"InstanceNormalization", h_instancenorm},
    {"IsInf", onnx_h_IsInf},
    {"IsNaN", h_unary},
    {"LayerNormalization", h_layernorm},
    {"LeakyRelu", h_attr_unary},
    {"Less", h_binary},
    {"LessOrEqual", h_binary},
    {"Log", h_unary},
    {"LogSoftmax", h_softmax},
    {"Loop", onnx_h_Loop},
    {"LpNormalization", onnx_h_LpNormalization},
    {"LpPool", h_pool},
    {"LRN", h_lrn},
    {"LSTM", onnx_h_LSTM},
    {"MatMul", h_matmul},
    {"MatMulInteger", onnx_h_MatMulInteger},
    {"Max", h_variadic},
    {"MaxPool", h_pool},
    {"MaxUnpool", onnx_h_MaxUnpool},
    {"Mean", h_variadic},
    {"MeanVarianceNormalization", onnx_h_MeanVarianceNormalization},
    {"MelWeightMatrix", onnx_h_MelWeightMatrix},
    {"Min", h_variadic},
    {"Mod", h_mod},
    {"Momentum", onnx_h_Momentum},
    {"Mul", h_binary},
    {"Neg", h_unary},
    {"NegativeLogLikelihoodLoss", onnx_h_NegativeLogLikelihoodLoss},
    {"NonZero", onnx_h_NonZero},
    {"Not", h_unary},
    {"OneHot", onnx_h_OneHot},
    {"Or", h_binary},
    {"Pad", h_pad},
    {"Pow", h_binary},
    {"PRelu", h_binary},
    {"QLinearConv", onnx_h_QLinearConv},
    {"QLinearMatMul", onnx_h_QLinearMatMul},
    {"QuantizeLinear", onnx_h_QuantizeLinear},
    {"Range", h_range},
    {"Reciprocal", h_unary},
    {"ReduceL1", h_reduce},
    {"ReduceL2", h_reduce},
    {"ReduceLogSum", h_reduce},
    {"ReduceLogSumExp", h_reduce},
    {"ReduceMax", h_reduce},
    {"ReduceMean", h_reduce},
    {"ReduceMin", h_reduce},
    {"ReduceProd", h_reduce},
    {"ReduceSum", h_reduce},
    {"ReduceSumSquare", h_reduce},
    {"Relu", h_unary},
    {"Reshape", h_reshape},
    {"Resize", h_resize},
    {"ReverseSequence", onnx_h_ReverseSequence},
    {"RNN", onnx_h_RNN},
    {"RoiAlign", onnx_h_RoiAlign},
    {"Round", h_unary},
    {"Scan", onnx_h_Scan},
    {"Scatter", onnx_h_ScatterElements},
    {"ScatterElements", onnx_h_ScatterElements},
    {"ScatterND", onnx_h_ScatterND},
    {"Selu", h_attr_unary},
    {"SequenceAt", onnx_h_SequenceAt},
    {"SequenceConstruct", onnx_h_SequenceConstruct},
    {"SequenceEmpty", onnx_h_SequenceEmpty},
    {"SequenceErase", onnx_h_SequenceErase},
    {"SequenceInsert", onnx_h_SequenceInsert},
    {"SequenceLength", onnx_h_SequenceLength},
    {"Shape", h_shape},
    {"Shrink", onnx_h_Shrink},
    {"Sigmoid", h_unary},
    {"Sign", h_unary},
    {"Sin", h_unary},
    {"Sinh", h_unary},
    {"Size", h_size},
    {"Slice", h_slice},
    {"Softmax", h_softmax},
    {"SoftmaxCrossEntropyLoss", onnx_h_SoftmaxCrossEntropyLoss},
    {"Softplus", h_unary},
    {"Softsign", h_unary},
    {"SpaceToDepth", h_depth_space},
    {"Split", h_split},
    {"SplitToSequence", onnx_h_SplitToSequence},
    {"Sqrt", h_unary},
    {"Squeeze", h_squeeze},
    {"STFT", onnx_h_STFT},
    {"Sub", h_binary},
    {"Sum", h_variadic},
    {"Tan", h_unary},
    {"Tanh", h_unary},
    {"TfIdfVectorizer", onnx_h_TfIdfVectorizer},
    {"ThresholdedRelu", h_attr_unary},
    {"Tile", h_tile},
    {"TopK", onnx_h_TopK},
    {"Transpose", h_transpose},
    {"Trilu", onnx_h_Trilu},
    {"Unsqueeze", h_unsqueeze},
    {"Upsample", h_resize},
    {"Where", h_where},
    {"Xor", h_binary},
};

OnnxHandler onnx_find_handler(const char *op_type) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i].op_type, op_type)) return table[i].fn;
  return NULL;
}

const OnnxOpEntry *onnx_op_table(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}
