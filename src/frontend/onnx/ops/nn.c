/*
 * nn.c - ONNX's convolution, pooling and softmax operators.
 *
 * Windows (kernel, strides, dilations, pads or auto_pad) are read once into
 * a Win.  Graph ops are 2-D: a 1-D window runs as 2-D with height 1, a 3-D
 * transposed convolution as a sum of 2-D ones per depth tap, and 3-D
 * pooling as two separable 2-D poolings.  MaxPool's Indices output is a
 * running argmax over the window offsets.  Softmax before opset 13
 * flattens to two axes, as ONNX then defined it.
 */
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

int onnx_h_pool(Importer *im) {
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
int onnx_h_dropout(Importer *im) {
  GNode *x = in0(im);
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
  for (int i = 0; i < 2; i++) {
    int64_t span = in[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1);
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
