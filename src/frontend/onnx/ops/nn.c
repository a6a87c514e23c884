/*
 * nn.c - ONNX's convolution, pooling and softmax operators.
 *
 * Windows (kernel, strides, dilations, pads or auto_pad) are read once into
 * a Win.  Graph ops are 2-D: a 1-D window runs as 2-D with height 1, a 3-D
 * transposed convolution as a sum of 2-D ones per depth tap, and 3-D
 * pooling as two separable 2-D poolings.  MaxPool's Indices output is a
 * running argmax over the window offsets.  Softmax before opset 13
 * flattens to two axes, as ONNX then defined it.  DeformConv samples its
 * taps with gathers and multiplies them as im2col columns (see there).
 */
#include <ctype.h>

#include "ops.h"

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
  /* every window value within 32 bits, so the size arithmetic below and
   * in the graph's type relations stays within int64 */
  if (imp_attr_ints_in(im, "strides", -1, 1, IMP_MAX_COUNT, &v, &n)) return -1;
  if (v && n == nsp)
    for (int i = 0; i < nsp; i++) w->s[i] = v[i];
  if (imp_attr_ints_in(im, "dilations", -1, 1, IMP_MAX_COUNT, &v, &n)) return -1;
  if (v && n == nsp)
    for (int i = 0; i < nsp; i++) w->d[i] = v[i];
  const char *ap = onnx_attr_string(N(im), "auto_pad", "NOTSET");
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    for (int i = 0; i < nsp; i++)
      same_pad(x->type.shape[2 + i], w->k[i], w->s[i], w->d[i], !strcmp(ap, "SAME_UPPER"), &w->pb[i], &w->pe[i]);
  } else if (!strcmp(ap, "VALID")) {
  } else if (!strcmp(ap, "NOTSET")) {
    if (imp_attr_ints_in(im, "pads", -1, 0, IMP_MAX_COUNT, &v, &n)) return -1;
    if (v) {
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
  return imp_reshape(im, x, 4, s);
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
  return imp_reshape(im, y, 3, s);
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
  int64_t groups;
  if (imp_attr_i64(im, "group", 1, 1, IMP_MAX_COUNT, &groups)) return NULL;
  ga_int(&a, "groups", groups);
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

int onnx_h_conv(Importer *im) { return out0(im, onnx_conv(im, in0(im), imp_input(im, 1), imp_input(im, 2))); }

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

int onnx_h_conv_transpose(Importer *im) {
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
  int64_t groups;
  int n;
  const int64_t *v, *osz;
  int64_t op[3] = {0, 0, 0};
  if (imp_attr_i64(im, "group", 1, 1, IMP_MAX_COUNT, &groups) ||
      imp_attr_ints_in(im, "output_padding", -1, 0, IMP_MAX_COUNT, &v, &n))
    return -1;
  if (v && n == ns)
    for (int i = 0; i < ns; i++) op[i] = v[i];
  if (v && one_d && n == 1) op[1] = v[0];
  if (imp_attr_ints_in(im, "output_shape", -1, 0, IMP_MAX_COUNT, &osz, &n)) return -1;
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
  int64_t p = 2;
  if (!strcmp(op, "LpPool")) {
    const OnnxAttr *pa = onnx_attr_find(N(im), "p"); /* float before opset 11 */
    if (pa && pa->type == ONNX_ATTR_FLOAT ? imp_double_i64(im, "attribute 'p'", pa->f, 1, INT32_MAX, &p)
                                         : imp_attr_i64(im, "p", 2, 1, INT32_MAX, &p))
      return NULL;
  }
  GAttrs a = gattrs_new();
  win_attrs(&a, w, "pool_size");
  ga_int(&a, "ceil_mode", onnx_attr_int(N(im), "ceil_mode", 0));
  const char *k = "nn.max_pool2d";
  if (!strcmp(op, "AveragePool")) {
    k = "nn.avg_pool2d";
    ga_int(&a, "count_include_pad", onnx_attr_int(N(im), "count_include_pad", 0));
  } else if (!strcmp(op, "LpPool")) {
    k = "nn.lp_pool2d";
    ga_int(&a, "p", p);
  }
  return imp_call(im, k, 1, &x, a);
}

int onnx_h_pool(Importer *im) {
  const char *op = N(im)->op_type;
  GNode *x = in0(im);
  int n;
  const int64_t *ks;
  if (imp_attr_ints_in(im, "kernel_shape", -1, 1, IMP_MAX_COUNT, &ks, &n)) return -1;
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
    GNode *y = pool2d(im, imp_reshape(im, x, 4, s1), &hw);
    if (!y) return -1;
    int64_t oh = y->type.shape[2], ow = y->type.shape[3];
    int64_t s2[4] = {xs[0], xs[1], xs[2], oh * ow};
    Win dd = {2, {win.k[0], 1}, {win.s[0], 1}, {win.d[0], 1}, {win.pb[0], 0}, {win.pe[0], 0}};
    GNode *z = pool2d(im, imp_reshape(im, y, 4, s2), &dd);
    if (!z) return -1;
    int64_t s3[5] = {xs[0], xs[1], z->type.shape[2], oh, ow};
    return out0(im, imp_reshape(im, z, 5, s3));
  }
  GNode *y = pool2d(im, to_2d(im, x), &win);
  return out0(im, y ? from_2d(im, y, win.nsp) : NULL);
}

int onnx_h_global_pool(Importer *im) {
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

/* Dropout: the identity in inference mode; in training mode (opset 12+,
 * training_mode a constant true) x / (1 - ratio) where a uniform draw is
 * >= ratio, else 0, and the mask of the kept elements (random.c's
 * generator: the seed attribute decides the draw). */
/* Dropout whose training_mode or ratio is a graph input: both are data,
 * the training result where(t, where(u >= ratio, x / (1 - ratio), 0), x)
 * and the mask keep or not t.  -2 when both are constants (or absent). */
static int dropout_runtime(Importer *im, GNode *x) {
  GNode *tm = imp_input(im, 2), *r = imp_input(im, 1);
  bool rt_t = tm && tm->kind == GN_VAR, rt_r = r && r->kind == GN_VAR;
  if (imp_opset(im) < 12 || !tm || (!rt_t && !rt_r)) return -2;
  if (!rt_t && (tm->kind != GN_CONST || gnode_scalar_value(tm) == 0)) return -2; /* inference, or computed */
  if (r && !rt_r && r->kind != GN_CONST) return -2;
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "data must be a float tensor, got %s", dt_str(x->type.dtype));
  if ((rt_t && ttype_numel(&tm->type) != 1) || (r && ttype_numel(&r->type) != 1))
    return imp_error(im, "ratio and training_mode must be scalars");
  /* a ratio given at run time must be in [0, 1): a float value symbol,
   * ratio * 2^24 in [0, 2^24 - 1] (a float32 below 1 is at most
   * 1 - 2^-24), which the executor checks at set_input, naming the node */
  if (rt_r && (dt_eq(r->type.dtype, DT_F32) || dt_eq(r->type.dtype, DT_F64))) {
    const char *nm = N(im)->name && *N(im)->name ? N(im)->name : "node";
    StrBuf sb = {0};
    sb_printf(&sb, "Dropout_%s_ratio_x_2p24", nm);
    for (char *c = sb.data; *c; c++)
      if (!isalnum((unsigned char)*c) && *c != '_') *c = '_';
    GSym *s = graph_float_value_sym(imp_graph(im), r->name, 0, 16777216.0, sb.data, 0, 16777215);
    sb_free(&sb);
    if (!s) return imp_error(im, "ratio ('%s'): %s", r->name, kiln_get_error());
  }
  GNode *ratio = r ? imp_cast(im, r, x->type.dtype) : imp_scalar_like(im, 0.5, x);
  if (r && r->type.ndim) ratio = imp_reshape(im, ratio, 0, NULL);
  GNode *keep = bin(im, "greater_equal", onnx_random_uniform_like(im, x), ratio);
  GNode *scaled = bin(im, "divide", x, bin(im, "subtract", imp_scalar_like(im, 1, x), ratio));
  GNode *y = imp_where(im, keep, scaled, imp_scalar_like(im, 0, x));
  if (rt_t) {
    GNode *t = imp_cast(im, tm, DT_BOOL);
    if (t && t->type.ndim) t = imp_reshape(im, t, 0, NULL);
    y = imp_where(im, t, y, x);
    keep = bin(im, "logical_or", keep, imp_call(im, "logical_not", 1, &t, gattrs_new()));
  }
  if (imp_want_output(im, 1) && imp_set_output(im, 1, keep)) return -1;
  return out0(im, y);
}

int onnx_h_dropout(Importer *im) {
  GNode *x = in0(im);
  int rc = dropout_runtime(im, x);
  if (rc != -2) return rc;
  bool train = false;
  double ratio = 0.5;
  if (imp_opset(im) >= 12 && imp_input(im, 2)) {
    GNode *tm = imp_const_input(im, 2);
    if (!tm) return -1;
    if (imp_input(im, 1)) {
      GNode *r = imp_const_input(im, 1);
      if (!r) return -1;
      ratio = gnode_scalar_value(r);
    }
    train = gnode_scalar_value(tm) != 0;
    if (train && !(ratio >= 0 && ratio < 1))
      return imp_error(im, "ratio %g: a training-mode dropout needs 0 <= ratio < 1", ratio);
  }
  if (train && ratio > 0) {
    if (!dt_is_float(x->type.dtype)) return imp_error(im, "data must be a float tensor, got %s", dt_str(x->type.dtype));
    GNode *keep = bin(im, "greater_equal", onnx_random_uniform_like(im, x), imp_scalar(im, ratio, DT_F32));
    GNode *y = imp_where(im, keep, bin(im, "multiply", x, imp_scalar_like(im, 1 / (1 - ratio), x)), imp_scalar_like(im, 0, x));
    if (imp_want_output(im, 1) && imp_set_output(im, 1, keep)) return -1;
    return out0(im, y);
  }
  if (N(im)->noutputs > 1 && *N(im)->outputs[1]) {
    /* the mask of an inference-mode dropout is all true */
    GNode *t = imp_scalar(im, 1, DT_BOOL);
    GAttrs a = gattrs_new();
    ga_ints(&a, "shape", x->type.ndim, x->type.shape);
    if (imp_set_output(im, 1, imp_call(im, "broadcast_to", 1, &t, a))) return -1;
  }
  return out0(im, x);
}

/* ---- softmax ---- */

int onnx_h_softmax(Importer *im) {
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
    GNode *f = imp_reshape(im, x, 2, s2);
    GAttrs at = gattrs_new();
    ga_int(&at, "axis", 1);
    GNode *y = imp_call(im, op, 1, &f, at);
    return out0(im, y ? imp_reshape(im, y, nd, x->type.shape) : NULL);
  }
  GAttrs at = gattrs_new();
  ga_int(&at, "axis", axis);
  return out0(im, imp_call(im, op, 1, &x, at));
}

/* ---- MaxPool's Indices output: a running argmax over the window
 * offsets (first maximum wins), each offset a strided slice of the input
 * padded with -inf; indices are flat over the input (storage_order 1:
 * column-major within each image) ---- */

int onnx_maxpool_indices(Importer *im, GNode *x, const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb,
                         const int64_t *pe, bool ceil_mode, GNode **out) {
  *out = NULL;
  if (x->type.ndim != 4) return imp_error(im, "the Indices output is supported for 2-D pooling only");
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "the Indices output needs a floating-point input");
  int64_t NB = x->type.shape[0], C = x->type.shape[1], H = x->type.shape[2], W = x->type.shape[3], o[2];
  int64_t in[2] = {H, W};
  if (k[0] * k[1] > 4096)
    return imp_error(im, "the Indices output of a %lldx%lld window: Kiln builds one term per window offset and takes at "
                         "most 4096", (long long)k[0], (long long)k[1]);
  for (int i = 0; i < 2; i++) {
    int64_t span = in[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1);
    if (span < 0) return imp_error(im, "the dilated window is larger than the padded input %s", ttype_str(&x->type));
    o[i] = ceil_mode ? (span + s[i] - 1) / s[i] + 1 : span / s[i] + 1;
    if (ceil_mode && (o[i] - 1) * s[i] >= in[i] + pb[i]) o[i]--;
  }
  /* pad so every window lies inside */
  int64_t pads[8] = {0, 0, pb[0], pb[1], 0, 0, 0, 0};
  for (int i = 0; i < 2; i++) {
    int64_t need = (o[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (in[i] + pb[i]);
    pads[6 + i] = need > 0 ? need : 0;
  }
  GAttrs pa = gattrs_new();
  ga_ints(&pa, "pads", 8, pads);
  ga_str(&pa, "pad_mode", "constant");
  ga_float(&pa, "pad_value", -INFINITY);
  GNode *xp = imp_call(im, "nn.pad", 1, &x, pa);
  bool colmajor = onnx_attr_int(N(im), "storage_order", 0) != 0;
  GNode *best = NULL, *idx = NULL;
  int64_t os[4] = {NB, C, o[0], o[1]};
  for (int64_t kh = 0; kh < k[0]; kh++)
    for (int64_t kw = 0; kw < k[1]; kw++) {
      GAttrs sa = gattrs_new();
      int64_t b[2] = {kh * d[0], kw * d[1]}, e[2] = {kh * d[0] + (o[0] - 1) * s[0] + 1, kw * d[1] + (o[1] - 1) * s[1] + 1},
              ax[2] = {2, 3};
      ga_ints(&sa, "begin", 2, b);
      ga_ints(&sa, "end", 2, e);
      ga_ints(&sa, "strides", 2, s);
      ga_ints(&sa, "axes", 2, ax);
      GNode *v = xp ? imp_call(im, "strided_slice", 1, &xp, sa) : NULL;
      int64_t *id;
      GNode *ic = imp_new_i64(im, 4, os, &id);
      if (!ic) return -1;
      for (int64_t nc = 0; nc < NB * C; nc++)
        for (int64_t i = 0; i < o[0]; i++)
          for (int64_t j = 0; j < o[1]; j++) {
            int64_t h = i * s[0] - pb[0] + kh * d[0], w = j * s[1] - pb[1] + kw * d[1];
            if (h < 0 || h >= H) h = h < 0 ? 0 : H - 1; /* a padded position never wins */
            if (w < 0 || w >= W) w = w < 0 ? 0 : W - 1;
            id[(nc * o[0] + i) * o[1] + j] = nc * H * W + (colmajor ? w * H + h : h * W + w);
          }
      if (!best) {
        best = v, idx = ic;
        continue;
      }
      GNode *upd = bin(im, "greater", v, best);
      best = imp_where(im, upd, v, best);
      idx = imp_where(im, upd, ic, idx);
    }
  *out = idx;
  return idx ? 0 : -1;
}

/* ---- CausalConvWithState (opset 27) ----
 * A depthwise causal 1-D convolution carrying its last k - 1 inputs
 * (Mamba, Gated DeltaNet): padded = concat(past_state or zeros, input)
 * along the length, output[b, c, t] = bias[c] + sum_j w[c, 0, j] *
 * padded[b, c, t + j] (k shifted slices), then SiLU if asked;
 * present_state = the last k - 1 positions of padded. */
int onnx_h_CausalConvWithState(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 1), *b = imp_input(im, 2), *past = imp_input(im, 3);
  if (x->type.ndim != 3) return imp_error(im, "input must be [batch, channels, length], got %s", ttype_str(&x->type));
  int64_t B = x->type.shape[0], C = x->type.shape[1], L = x->type.shape[2];
  if (w->type.ndim != 3 || w->type.shape[0] != C || w->type.shape[1] != 1 || w->type.shape[2] < 1)
    return imp_error(im, "weight must be [channels = %lld, 1, k >= 1], got %s", (long long)C, ttype_str(&w->type));
  int64_t K = w->type.shape[2];
  if (K > 4096) return imp_error(im, "kernel size %lld: Kiln builds one term per tap and takes at most 4096", (long long)K);
  if (b && (b->type.ndim != 1 || b->type.shape[0] != C))
    return imp_error(im, "bias must be [channels = %lld], got %s", (long long)C, ttype_str(&b->type));
  if (past && (past->type.ndim != 3 || past->type.shape[0] != B || past->type.shape[1] != C || past->type.shape[2] != K - 1))
    return imp_error(im, "past_state must be [batch, channels, k - 1] = [%lld, %lld, %lld], got %s", (long long)B,
                     (long long)C, (long long)(K - 1), ttype_str(&past->type));
  const char *act = onnx_attr_string(N(im), "activation", "none");
  bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none")) return imp_error(im, "activation '%s': expected 'none', 'silu' or 'swish'", act);
  GNode *padded = x;
  if (K > 1) {
    GNode *pre = past;
    if (!pre) {
      GNode *z = imp_scalar_like(im, 0, x);
      int64_t s[3] = {B, C, K - 1};
      GAttrs a = gattrs_new();
      ga_ints(&a, "shape", 3, s);
      pre = imp_call(im, "broadcast_to", 1, &z, a);
    }
    GNode *parts[2] = {pre, x};
    GAttrs a = gattrs_new();
    ga_int(&a, "axis", 2);
    padded = pre ? imp_call(im, "concatenate", 2, parts, a) : NULL;
  }
  GNode *acc = NULL;
  int64_t w3[3] = {1, C, 1};
  for (int64_t j = 0; j < K && padded; j++) {
    GNode *wj = imp_reshape(im, imp_slice(im, w, 2, j, j + 1), 3, w3);
    GNode *t = bin(im, "multiply", imp_slice(im, padded, 2, j, j + L), wj);
    acc = acc ? bin(im, "add", acc, t) : t;
  }
  if (b) acc = bin(im, "add", acc, imp_reshape(im, b, 3, w3));
  if (silu) acc = bin(im, "multiply", acc, un(im, "sigmoid", acc));
  if (imp_want_output(im, 1)) {
    GNode *st = imp_slice(im, padded, 2, L, L + K - 1);
    if (imp_set_output(im, 1, st)) return -1;
  }
  return out0(im, acc);
}

/* ---- DeformConv (opset 19), 2-D ----
 * Every kernel tap k of every output position samples the input at
 * (oh * stride - pad + kh * dilation + offset_y, likewise x), bilinearly,
 * each of the four neighbours counting 0 outside the image (onnx's
 * reference: GridSample with align_corners and zero padding), times the
 * mask.  All taps are sampled at once: the input is flattened to
 * [N * G * H * W, C / G] per offset group G and the four corners are
 * takes with index tensors [N, G, K, oH, oW]; the samples, reordered to
 * im2col's [N, C * K, oH * oW], go through one grouped nn.matmul with the
 * weights, and the bias is added.  Offsets and masks stay run-time
 * inputs; shapes are static. */
static GNode *deform_corner(Importer *im, GNode *xf, GNode *base, GNode *ix, GNode *iy, int64_t H, int64_t W, DType t) {
  GNode *zero = imp_scalar(im, 0, t);
  GNode *valid = bin(im, "logical_and",
                     bin(im, "logical_and", bin(im, "greater_equal", ix, zero), bin(im, "less", ix, imp_scalar(im, (double)W, t))),
                     bin(im, "logical_and", bin(im, "greater_equal", iy, zero), bin(im, "less", iy, imp_scalar(im, (double)H, t))));
  GAttrs cx = gattrs_new(), cy = gattrs_new();
  ga_float(&cx, "a_min", 0);
  ga_float(&cx, "a_max", (double)(W - 1));
  ga_float(&cy, "a_min", 0);
  ga_float(&cy, "a_max", (double)(H - 1));
  GNode *xc = ix ? imp_call(im, "clip", 1, &ix, cx) : NULL, *yc = iy ? imp_call(im, "clip", 1, &iy, cy) : NULL;
  GNode *lin = bin(im, "add", bin(im, "add", imp_cast(im, bin(im, "multiply", yc, imp_scalar(im, (double)W, t)), DT_I64), imp_cast(im, xc, DT_I64)), base);
  GAttrs ta = gattrs_new();
  ga_int(&ta, "axis", 0);
  GNode *args[2] = {xf, lin};
  GNode *v = imp_call(im, "take", 2, args, ta); /* [N, G, K, oH, oW, Cg] */
  return imp_where(im, imp_expand_dims(im, valid, 5), v, imp_scalar_like(im, 0, v));
}

int onnx_h_DeformConv(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 1), *off = imp_input(im, 2);
  GNode *bias = imp_ninputs(im) > 3 ? imp_input(im, 3) : NULL, *mask = imp_ninputs(im) > 4 ? imp_input(im, 4) : NULL;
  if (x->type.ndim != 4)
    return imp_error(im, "X %s: only 2-D DeformConv ([NB, C, H, W]) is supported", ttype_str(&x->type));
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "X must be floating-point, got %s", dt_str(x->type.dtype));
  if (w->type.ndim != 4 || off->type.ndim != 4 || !dt_eq(w->type.dtype, x->type.dtype) || !dt_eq(off->type.dtype, x->type.dtype))
    return imp_error(im, "W %s and offset %s must be 4-D of X's type %s", ttype_str(&w->type), ttype_str(&off->type),
                     dt_str(x->type.dtype));
  int64_t NB = x->type.shape[0], C = x->type.shape[1], H = x->type.shape[2], W = x->type.shape[3];
  int64_t OC = w->type.shape[0], kh = w->type.shape[2], kw = w->type.shape[3];
  int64_t group, og;
  if (imp_attr_i64(im, "group", 1, 1, IMP_MAX_COUNT, &group) || imp_attr_i64(im, "offset_group", 1, 1, IMP_MAX_COUNT, &og))
    return -1;
  int64_t dil[2] = {1, 1}, str[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  const int64_t *v;
  int nv;
  if (onnx_attr_ints(N(im), "kernel_shape", &nv) && nv) {
    v = onnx_attr_ints(N(im), "kernel_shape", &nv);
    if (nv != 2 || v[0] != kh || v[1] != kw)
      return imp_error(im, "kernel_shape must be W's spatial shape [%lld, %lld]", (long long)kh, (long long)kw);
  }
  if (imp_attr_ints_in(im, "dilations", -1, 1, IMP_MAX_COUNT, &v, &nv)) return -1;
  if (v && nv) {
    if (nv != 2) return imp_error(im, "dilations has %d values, expected 2", nv);
    memcpy(dil, v, sizeof dil);
  }
  if (imp_attr_ints_in(im, "strides", -1, 1, IMP_MAX_COUNT, &v, &nv)) return -1;
  if (v && nv) {
    if (nv != 2) return imp_error(im, "strides has %d values, expected 2", nv);
    memcpy(str, v, sizeof str);
  }
  if (imp_attr_ints_in(im, "pads", -1, 0, IMP_MAX_COUNT, &v, &nv)) return -1;
  if (v && nv) {
    if (nv != 4) return imp_error(im, "pads has %d values, expected 4", nv);
    memcpy(pads, v, sizeof pads);
  }
  for (int i = 0; i < 2; i++)
    if (dil[i] < 1 || str[i] < 1 || pads[i] < 0 || pads[i + 2] < 0)
      return imp_error(im, "axis %d: dilation %lld, stride %lld, pads %lld/%lld: dilations and strides must be positive "
                           "and pads non-negative", i, (long long)dil[i], (long long)str[i], (long long)pads[i], (long long)pads[i + 2]);
  if (group < 1 || og < 1 || C % group || OC % group || C % og || w->type.shape[1] * group != C)
    return imp_error(im, "X %s, W %s, group %lld, offset_group %lld: C must be W's dimension 1 times group, and C and "
                         "the output channels multiples of group, C a multiple of offset_group",
                     ttype_str(&x->type), ttype_str(&w->type), (long long)group, (long long)og);
  int64_t K = kh * kw;
  int64_t oh = (H + pads[0] + pads[2] - (dil[0] * (kh - 1) + 1)) / str[0] + 1;
  int64_t ow = (W + pads[1] + pads[3] - (dil[1] * (kw - 1) + 1)) / str[1] + 1;
  if (oh < 1 || ow < 1) return imp_error(im, "the dilated kernel is larger than the padded input %s", ttype_str(&x->type));
  if (off->type.shape[0] != NB || off->type.shape[1] != og * K * 2 || off->type.shape[2] != oh || off->type.shape[3] != ow)
    return imp_error(im, "offset %s must be [%lld, offset_group * kH * kW * 2 = %lld, %lld, %lld]", ttype_str(&off->type),
                     (long long)NB, (long long)(og * K * 2), (long long)oh, (long long)ow);
  if (bias && (bias->type.ndim != 1 || bias->type.shape[0] != OC || !dt_eq(bias->type.dtype, x->type.dtype)))
    return imp_error(im, "B %s must be [%lld] of X's type", ttype_str(&bias->type), (long long)OC);
  if (mask && (mask->type.ndim != 4 || mask->type.shape[0] != NB || mask->type.shape[1] != og * K ||
               mask->type.shape[2] != oh || mask->type.shape[3] != ow || !dt_eq(mask->type.dtype, x->type.dtype)))
    return imp_error(im, "mask %s must be [%lld, offset_group * kH * kW = %lld, %lld, %lld] of X's type",
                     ttype_str(&mask->type), (long long)NB, (long long)(og * K), (long long)oh, (long long)ow);
  if (K > 4096) return imp_error(im, "kernel of %lld taps: Kiln takes at most 4096", (long long)K);
  DType t = x->type.dtype;
  int64_t cg = C / og;
  /* the input per offset group as rows of pixels: [NB * G * H * W, C / G] */
  int64_t s5[5] = {NB, og, cg, H * W, 1}, p4[4] = {0, 1, 3, 2}, fs[2] = {NB * og * H * W, cg};
  GNode *xf = imp_reshape(im, imp_transpose(im, imp_reshape(im, x, 4, s5), 4, p4), 2, fs);
  int64_t bs[5] = {NB, og, 1, 1, 1}, *bd;
  GNode *base = imp_new_i64(im, 5, bs, &bd);
  if (!base) return -1;
  for (int64_t i = 0; i < NB * og; i++) bd[i] = i * H * W;
  /* the sampling grid without offsets, [K, oH, oW] per axis */
  int64_t gs[3] = {K, oh, ow};
  void *gyd, *gxd;
  GNode *gy = imp_new_const(im, DT_F64, 3, gs, &gyd), *gx = imp_new_const(im, DT_F64, 3, gs, &gxd);
  if (!gy || !gx) return -1;
  for (int64_t k = 0; k < K; k++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        int64_t e = (k * oh + i) * ow + j;
        ((double *)gyd)[e] = (double)(i * str[0] - pads[0] + (k / kw) * dil[0]);
        ((double *)gxd)[e] = (double)(j * str[1] - pads[1] + (k % kw) * dil[1]);
      }
  int64_t os6[6] = {NB, og, K, 2, oh, ow};
  GNode *o6 = imp_reshape(im, off, 6, os6);
  GNode *py = bin(im, "add", imp_squeeze(im, imp_slice(im, o6, 3, 0, 1), 3), imp_cast(im, gy, t));
  GNode *px = bin(im, "add", imp_squeeze(im, imp_slice(im, o6, 3, 1, 2), 3), imp_cast(im, gx, t));
  GNode *one = imp_scalar(im, 1, t);
  GNode *y0 = un(im, "floor", py), *x0 = un(im, "floor", px);
  GNode *y1 = bin(im, "add", y0, one), *x1 = bin(im, "add", x0, one);
  GNode *wy1 = bin(im, "subtract", py, y0), *wx1 = bin(im, "subtract", px, x0);
  GNode *wy0 = bin(im, "subtract", one, wy1), *wx0 = bin(im, "subtract", one, wx1);
  GNode *ys[2] = {y0, y1}, *xs[2] = {x0, x1}, *wys[2] = {wy0, wy1}, *wxs[2] = {wx0, wx1}, *s = NULL;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      GNode *wgt = bin(im, "multiply", wys[i], wxs[j]);
      GNode *term = bin(im, "multiply", deform_corner(im, xf, base, xs[j], ys[i], H, W, t), imp_expand_dims(im, wgt, 5));
      s = s ? bin(im, "add", s, term) : term;
    }
  if (mask) {
    int64_t ms[6] = {NB, og, K, oh, ow, 1};
    s = bin(im, "multiply", s, imp_reshape(im, mask, 6, ms));
  }
  /* [NB, G, K, oH, oW, Cg] -> [NB, G, Cg, K, oH, oW] -> [NB, group, C / group * K, oH * oW] */
  int64_t p6[6] = {0, 1, 5, 2, 3, 4}, cs[4] = {NB, group, C / group * K, oh * ow};
  GNode *cols = imp_reshape(im, imp_transpose(im, s, 6, p6), 4, cs);
  int64_t ws[4] = {1, group, OC / group, C / group * K};
  GNode *y = bin(im, "nn.matmul", imp_reshape(im, w, 4, ws), cols); /* [NB, group, OC / group, L] */
  int64_t ys4[4] = {NB, OC, oh, ow};
  y = imp_reshape(im, y, 4, ys4);
  if (bias) {
    int64_t bs4[4] = {1, OC, 1, 1};
    y = bin(im, "add", y, imp_reshape(im, bias, 4, bs4));
  }
  return out0(im, y);
}
