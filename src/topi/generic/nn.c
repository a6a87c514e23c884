/*
 * nn.c - the neural-network operators: pad, conv2d (NCHW, groups,
 * dilation, depthwise), conv2d_transpose, dense, matmul, batch_matmul,
 * pooling (NCHW and NCHW[x]c), softmax, log_softmax, batch_norm,
 * layer_norm, instance_norm and lrn.
 *
 * Shapes that decide the structure of a compute (channels, kernel sizes)
 * must be constant; the batch may be symbolic, and so may the height and
 * width of a convolution (its output size is then the expression
 * (H + pads - dilated kernel) / stride + 1; docs/symbolic_shapes.md).  Attributes are checked first and a bad one is reported
 * with the operator, the attribute and what was expected.
 *
 * Padding never reads outside a tensor: a padded input is a select, and
 * pooling and transposed convolution guard the reduction's update with
 * its condition instead of reading a padded copy.
 */
#include <math.h>
#include <string.h>

#include "../topi.h"

static Expr *c32(int64_t v) { return ir_i32(v); }
static Expr *fc(double v, DType t) { return ir_const(v, dt_scalar(t)); }

static int check_rank(const char *op, const char *what, Tensor *t, int ndim, const char *layout) {
  if (!t) return -1;
  if (t->ndim != ndim)
    return kiln_set_error("%s: %s has %d dimensions, expected %d%s%s%s", op, what, t->ndim, ndim,
                          layout ? " (" : "", layout ? layout : "", layout ? ")" : "");
  return 0;
}

/* The constant size of dim d of t, or -1 with an error. */
static int64_t cdim(const char *op, const char *what, Tensor *t, int d) {
  int64_t v;
  if (!ir_is_const_int(t->shape[d], &v)) {
    kiln_set_error("%s: dimension %d of %s is symbolic (%s); it must be constant", op, d, what,
                   ir_expr_str(t->shape[d]));
    return -1;
  }
  return v;
}

static int check_float(const char *op, Tensor *t) {
  if (!dt_is_float(t->dtype))
    return kiln_set_error("%s: expected a float tensor, got %s '%s'", op, dt_str(t->dtype), t->name);
  return 0;
}

static int check_same_dtype(const char *op, Tensor *a, Tensor *b) {
  if (!dt_eq(a->dtype, b->dtype))
    return kiln_set_error("%s: '%s' is %s but '%s' is %s", op, a->name, dt_str(a->dtype), b->name, dt_str(b->dtype));
  return 0;
}

static int check_positive2(const char *op, const char *what, const int64_t *v) {
  if (!v) return kiln_set_error("%s: %s not given", op, what);
  for (int i = 0; i < 2; i++)
    if (v[i] <= 0)
      return kiln_set_error("%s: %s[%d] = %lld, expected a positive value", op, what, i, (long long)v[i]);
  return 0;
}

static int check_pads4(const char *op, const int64_t *pad) {
  if (!pad) return kiln_set_error("%s: padding not given", op);
  for (int i = 0; i < 4; i++)
    if (pad[i] < 0)
      return kiln_set_error("%s: padding[%d] = %lld is negative (expected top, left, bottom, right >= 0)", op, i,
                            (long long)pad[i]);
  return 0;
}

/* ---- pad ---- */

static Tensor *pad_impl(const char *op, Tensor *x, const int64_t *pads, TopiPadMode mode, double value,
                        const char *name) {
  if (!x) return NULL;
  int nd = x->ndim;
  if (!pads) return kiln_set_error("%s: pads not given", op), NULL;
  Expr **shape = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) {
    int64_t b = pads[d], e = pads[nd + d], dim;
    bool cd = ir_is_const_int(x->shape[d], &dim);
    if (mode == TOPI_PAD_REFLECT && (b > 0 || e > 0)) {
      if (!cd) return kiln_set_error("%s: reflect padding needs a constant dimension %d", op, d), NULL;
      if (b >= dim || e >= dim)
        return kiln_set_error("%s: reflect padding of dimension %d (size %lld) by %lld, %lld: each pad must be "
                              "smaller than the dimension",
                              op, d, (long long)dim, (long long)b, (long long)e),
               NULL;
    }
    if (mode == TOPI_PAD_EDGE && (b > 0 || e > 0) && cd && dim == 0)
      return kiln_set_error("%s: edge padding of an empty dimension %d", op, d), NULL;
    if (cd && dim + b + e < 0)
      return kiln_set_error("%s: pads %lld, %lld crop dimension %d (size %lld) below zero", op, (long long)b,
                            (long long)e, d, (long long)dim),
             NULL;
    shape[d] = ir_simplify(ir_add(x->shape[d], c32(b + e)));
  }
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  Expr *cond = NULL;
  for (int d = 0; d < nd; d++) {
    int64_t b = pads[d], e = pads[nd + d];
    Expr *i = b ? ir_sub(v[d], c32(b)) : v[d];
    Expr *dim = x->shape[d];
    switch (mode) {
    case TOPI_PAD_CONSTANT:
      if (b > 0) cond = cond ? ir_and(cond, ir_ge(i, c32(0))) : ir_ge(i, c32(0));
      if (e > 0) cond = cond ? ir_and(cond, ir_lt(i, dim)) : ir_lt(i, dim);
      break;
    case TOPI_PAD_REFLECT:
      if (b > 0) i = ir_select(ir_lt(i, c32(0)), ir_neg(i), i);
      if (e > 0) i = ir_select(ir_ge(i, dim), ir_sub(ir_mul(ir_sub(dim, c32(1)), c32(2)), i), i);
      break;
    case TOPI_PAD_EDGE:
      if (b > 0) i = ir_max(i, c32(0));
      if (e > 0) i = ir_min(i, ir_sub(dim, c32(1)));
      break;
    case TOPI_PAD_WRAP: /* topi_pad refuses it */
      break;
    }
    idx[d] = i;
  }
  Expr *body = te_read(x, nd, idx);
  if (cond) body = ir_select(cond, body, dt_is_bool(x->dtype) ? ir_bool(value != 0) : fc(value, x->dtype));
  return te_compute(name, nd, shape, v, body, "injective");
}

Tensor *topi_pad(Tensor *x, const int64_t *pads, TopiPadMode mode, double value) {
  if ((int)mode < 0 || mode > TOPI_PAD_EDGE) return kiln_set_error("pad: unknown mode %d", (int)mode), NULL;
  return pad_impl("pad", x, pads, mode, value, "T_pad");
}

/* Zero padding of the H and W axes of an NCHW tensor (none: x itself). */
static Tensor *pad_hw(const char *op, Tensor *x, const int64_t pad[4]) {
  if (!pad[0] && !pad[1] && !pad[2] && !pad[3]) return x;
  int64_t p[8] = {0, 0, pad[0], pad[1], 0, 0, pad[2], pad[3]};
  return pad_impl(op, x, p, TOPI_PAD_CONSTANT, 0, "pad_data");
}

/* ---- conv2d ---- */

static int64_t conv_out(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t dil, int64_t stride) {
  int64_t eff = dil * (k - 1) + 1;
  int64_t num = in + pb + pe - eff;
  if (num < 0) return 0;
  return num / stride + 1;
}

/* Shared checks of conv2d and depthwise; fills the constant sizes. */
typedef struct ConvDims {
  int64_t C, H, W, F, CK, KH, KW, OH, OW; /* H, W, OH, OW: -1 where symbolic */
  Expr *OHe, *OWe;                        /* the output size as expressions */
} ConvDims;

/* A symbolic input size's output size: floordiv(in + pb + pe - eff, stride) + 1. */
static Expr *conv_out_expr(Expr *in, int64_t pb, int64_t pe, int64_t k, int64_t dil, int64_t stride) {
  int64_t eff = dil * (k - 1) + 1;
  return ir_simplify(ir_add(ir_floordiv(ir_add(in, c32(pb + pe - eff)), c32(stride)), c32(1)));
}

static int conv_dims(const char *op, Tensor *data, Tensor *weight, const int64_t stride[2], const int64_t pad[4],
                     const int64_t dilation[2], ConvDims *d) {
  if (!data || !weight) return -1;
  if (check_rank(op, "data", data, 4, "NCHW") || check_rank(op, "weight", weight, 4, "OIHW")) return -1;
  if (check_same_dtype(op, data, weight)) return -1;
  if (check_positive2(op, "stride", stride) || check_positive2(op, "dilation", dilation) || check_pads4(op, pad))
    return -1;
  if ((d->C = cdim(op, "data", data, 1)) < 0) return -1;
  bool sh = !ir_is_const_int(data->shape[2], &d->H), sw = !ir_is_const_int(data->shape[3], &d->W);
  if ((d->F = cdim(op, "weight", weight, 0)) < 0 || (d->CK = cdim(op, "weight", weight, 1)) < 0 ||
      (d->KH = cdim(op, "weight", weight, 2)) < 0 || (d->KW = cdim(op, "weight", weight, 3)) < 0)
    return -1;
  if (d->KH <= 0 || d->KW <= 0 || d->F <= 0 || d->CK <= 0)
    return kiln_set_error("%s: weight shape %s has an empty dimension", op, topi_shape_str(4, weight->shape));
  if (sh || sw) {
    d->H = sh ? -1 : d->H, d->W = sw ? -1 : d->W;
    d->OH = sh ? -1 : conv_out(d->H, pad[0], pad[2], d->KH, dilation[0], stride[0]);
    d->OW = sw ? -1 : conv_out(d->W, pad[1], pad[3], d->KW, dilation[1], stride[1]);
    d->OHe = sh ? conv_out_expr(data->shape[2], pad[0], pad[2], d->KH, dilation[0], stride[0]) : c32(d->OH);
    d->OWe = sw ? conv_out_expr(data->shape[3], pad[1], pad[3], d->KW, dilation[1], stride[1]) : c32(d->OW);
    if (d->OH == 0 || d->OW == 0) return kiln_set_error("%s: the kernel does not fit the padded input", op);
    return 0;
  }
  d->OH = conv_out(d->H, pad[0], pad[2], d->KH, dilation[0], stride[0]);
  d->OW = conv_out(d->W, pad[1], pad[3], d->KW, dilation[1], stride[1]);
  d->OHe = c32(d->OH);
  d->OWe = c32(d->OW);
  if (d->OH <= 0 || d->OW <= 0)
    return kiln_set_error("%s: the dilated kernel %lldx%lld does not fit the padded input %lldx%lld", op,
                          (long long)(dilation[0] * (d->KH - 1) + 1), (long long)(dilation[1] * (d->KW - 1) + 1),
                          (long long)(d->H + pad[0] + pad[2]), (long long)(d->W + pad[1] + pad[3]));
  return 0;
}

Tensor *topi_depthwise_conv2d_nchw(Tensor *data, Tensor *weight, const int64_t stride[2], const int64_t pad[4],
                                   const int64_t dilation[2]) {
  const char *op = "depthwise_conv2d_nchw";
  ConvDims d;
  if (conv_dims(op, data, weight, stride, pad, dilation, &d)) return NULL;
  if (d.CK != 1)
    return kiln_set_error("%s: weight has %lld input channels per group, expected 1 ([C * multiplier, 1, KH, KW])",
                          op, (long long)d.CK),
           NULL;
  if (d.F % d.C != 0)
    return kiln_set_error("%s: %lld output channels is not a multiple of the %lld input channels", op, (long long)d.F,
                          (long long)d.C),
           NULL;
  int64_t mult = d.F / d.C;
  Tensor *P = pad_hw(op, data, pad);
  if (!P) return NULL;
  IterVar *ry = te_reduce_axis_c(d.KH, "ry"), *rx = te_reduce_axis_c(d.KW, "rx");
  Expr **v = te_axis_vars(4, (const char *[]){"nn", "ff", "yy", "xx"});
  Expr *ch = mult == 1 ? v[1] : ir_div(v[1], c32(mult));
  Expr *iy = ir_add(ir_mul(v[2], c32(stride[0])), ir_mul(ry->var, c32(dilation[0])));
  Expr *ix = ir_add(ir_mul(v[3], c32(stride[1])), ir_mul(rx->var, c32(dilation[1])));
  Expr *src = ir_mul(te_read4(P, v[0], ch, iy, ix), te_read4(weight, v[1], c32(0), ry->var, rx->var));
  Expr *shape[4] = {data->shape[0], c32(d.F), d.OHe, d.OWe};
  return te_compute("depthwise_conv2d_nchw", 4, shape, v, ir_sum(src, 2, (IterVar *[]){ry, rx}),
                    "depthwise_conv2d_nchw");
}

Tensor *topi_conv2d_nchw(Tensor *data, Tensor *weight, const int64_t stride[2], const int64_t pad[4],
                         const int64_t dilation[2], int groups) {
  const char *op = "conv2d";
  ConvDims d;
  if (conv_dims(op, data, weight, stride, pad, dilation, &d)) return NULL;
  if (groups < 1) return kiln_set_error("%s: groups = %d, expected a positive value", op, groups), NULL;
  if (d.C % groups != 0 || d.F % groups != 0)
    return kiln_set_error("%s: groups = %d does not divide the %lld input and %lld output channels", op, groups,
                          (long long)d.C, (long long)d.F),
           NULL;
  int64_t cg = d.C / groups, fg = d.F / groups;
  if (d.CK != cg)
    return kiln_set_error("%s: weight has %lld input channels per group, expected %lld (data has %lld channels, "
                          "groups = %d)",
                          op, (long long)d.CK, (long long)cg, (long long)d.C, groups),
           NULL;
  if (groups > 1 && groups == d.C && cg == 1) return topi_depthwise_conv2d_nchw(data, weight, stride, pad, dilation);
  Tensor *P = pad_hw(op, data, pad);
  if (!P) return NULL;
  IterVar *rc = te_reduce_axis_c(cg, "rc"), *ry = te_reduce_axis_c(d.KH, "ry"), *rx = te_reduce_axis_c(d.KW, "rx");
  Expr **v = te_axis_vars(4, (const char *[]){"nn", "ff", "yy", "xx"});
  Expr *ch = groups == 1 ? rc->var : ir_add(ir_mul(ir_div(v[1], c32(fg)), c32(cg)), rc->var);
  Expr *iy = ir_add(ir_mul(v[2], c32(stride[0])), ir_mul(ry->var, c32(dilation[0])));
  Expr *ix = ir_add(ir_mul(v[3], c32(stride[1])), ir_mul(rx->var, c32(dilation[1])));
  Expr *src = ir_mul(te_read4(P, v[0], ch, iy, ix), te_read4(weight, v[1], rc->var, ry->var, rx->var));
  Expr *shape[4] = {data->shape[0], c32(d.F), d.OHe, d.OWe};
  const char *tag = groups == 1 ? "conv2d_nchw" : "group_conv2d_nchw";
  return te_compute(tag, 4, shape, v, ir_sum(src, 3, (IterVar *[]){rc, ry, rx}), tag);
}

Tensor *topi_conv2d_transpose_nchw(Tensor *data, Tensor *weight, const int64_t stride[2], const int64_t pad[4],
                                   const int64_t output_padding[2], const int64_t dilation[2], int groups) {
  const char *op = "conv2d_transpose";
  if (!data || !weight) return NULL;
  if (check_rank(op, "data", data, 4, "NCHW") || check_rank(op, "weight", weight, 4, "IOHW")) return NULL;
  if (check_same_dtype(op, data, weight)) return NULL;
  if (check_positive2(op, "stride", stride) || check_positive2(op, "dilation", dilation) || check_pads4(op, pad))
    return NULL;
  if (!output_padding) return kiln_set_error("%s: output_padding not given", op), NULL;
  for (int i = 0; i < 2; i++)
    if (output_padding[i] < 0 || (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i]))
      return kiln_set_error("%s: output_padding[%d] = %lld, expected 0 <= it < stride (%lld) or dilation (%lld)", op,
                            i, (long long)output_padding[i], (long long)stride[i], (long long)dilation[i]),
             NULL;
  if (groups < 1) return kiln_set_error("%s: groups = %d, expected a positive value", op, groups), NULL;
  int64_t C, H, W, WC, FG, KH, KW;
  if ((C = cdim(op, "data", data, 1)) < 0 || (H = cdim(op, "data", data, 2)) < 0 || (W = cdim(op, "data", data, 3)) < 0)
    return NULL;
  if ((WC = cdim(op, "weight", weight, 0)) < 0 || (FG = cdim(op, "weight", weight, 1)) < 0 ||
      (KH = cdim(op, "weight", weight, 2)) < 0 || (KW = cdim(op, "weight", weight, 3)) < 0)
    return NULL;
  if (WC != C)
    return kiln_set_error("%s: weight has %lld input channels (dimension 0), data has %lld", op, (long long)WC,
                          (long long)C),
           NULL;
  if (C % groups != 0)
    return kiln_set_error("%s: groups = %d does not divide the %lld input channels", op, groups, (long long)C), NULL;
  int64_t cg = C / groups, F = FG * groups;
  int64_t OH = (H - 1) * stride[0] - pad[0] - pad[2] + dilation[0] * (KH - 1) + output_padding[0] + 1;
  int64_t OW = (W - 1) * stride[1] - pad[1] - pad[3] + dilation[1] * (KW - 1) + output_padding[1] + 1;
  if (OH <= 0 || OW <= 0)
    return kiln_set_error("%s: the output would be %lldx%lld; the padding is too large", op, (long long)OH, (long long)OW),
           NULL;
  IterVar *rc = te_reduce_axis_c(cg, "rc"), *ry = te_reduce_axis_c(KH, "ry"), *rx = te_reduce_axis_c(KW, "rx");
  Expr **v = te_axis_vars(4, (const char *[]){"nn", "ff", "yy", "xx"});
  /* output y takes input iy where iy * stride + ry * dilation = y + pad */
  Expr *ny = ir_sub(ir_add(v[2], c32(pad[0])), ir_mul(ry->var, c32(dilation[0])));
  Expr *nx = ir_sub(ir_add(v[3], c32(pad[1])), ir_mul(rx->var, c32(dilation[1])));
  Expr *iy = stride[0] == 1 ? ny : ir_div(ny, c32(stride[0]));
  Expr *ix = stride[1] == 1 ? nx : ir_div(nx, c32(stride[1]));
  Expr *cond = ir_and(ir_ge(ny, c32(0)), ir_ge(nx, c32(0)));
  if (stride[0] > 1) cond = ir_and(cond, ir_eq(ir_mod(ny, c32(stride[0])), c32(0)));
  if (stride[1] > 1) cond = ir_and(cond, ir_eq(ir_mod(nx, c32(stride[1])), c32(0)));
  cond = ir_and(cond, ir_and(ir_lt(iy, c32(H)), ir_lt(ix, c32(W))));
  Expr *g = groups == 1 ? NULL : ir_div(v[1], c32(FG));
  Expr *ch = g ? ir_add(ir_mul(g, c32(cg)), rc->var) : rc->var;
  Expr *fo = g ? ir_mod(v[1], c32(FG)) : v[1];
  Expr *src = ir_mul(te_read4(data, v[0], ch, iy, ix), te_read4(weight, ch, fo, ry->var, rx->var));
  if (!src) return NULL;
  IterVar *axes[3] = {rc, ry, rx};
  Expr *body = ir_reduce(ir_reducer(RED_SUM, data->dtype), src, 3, axes, cond);
  Expr *shape[4] = {data->shape[0], c32(F), c32(OH), c32(OW)};
  return te_compute("conv2d_transpose_nchw", 4, shape, v, body, "conv2d_transpose_nchw");
}

/* ---- dense and matrix products ---- */

static bool same_dim(Expr *a, Expr *b) {
  int64_t x, y;
  if (ir_is_const_int(a, &x) && ir_is_const_int(b, &y)) return x == y;
  return ir_expr_equal(a, b);
}

/* A product summed over k where both operands are contiguous along k
 * (dense, batch_matmul with transpose_b).  When K is a constant multiple
 * of 8 (at least 32) the sum is taken in two stages, as TVM's rfactor
 * would: "<name>_partial"[..., j] sums the products at k = ko * L + j over
 * ko, for L = 16 or 8 lanes, and the output sums the L partial sums.  The
 * partial stage reads both operands contiguously along j, so it vectorizes
 * without gathers; a one-stage sum over k could only be vectorized along
 * the output's columns, reading the weight with a stride of K. */
static Tensor *dot_product(const char *name, const char *tag, int nd, Expr **shape, Expr **v, IterVar *k,
                           Expr *src) {
  int64_t K;
  if (!src) return NULL;
  if (!ir_is_const_int(k->extent, &K) || K < 32 || K % 8 != 0)
    return te_compute(name, nd, shape, v, ir_sum(src, 1, &k), tag);
  int64_t L = K % 16 == 0 ? 16 : 8;
  Expr **pv = te_axis_vars(nd + 1, NULL);
  Expr **pshape = KNEWN(Expr *, nd + 1);
  for (int d = 0; d < nd; d++) pshape[d] = shape[d];
  pshape[nd] = c32(L);
  IterVar *ko = te_reduce_axis_c(K / L, "ko");
  PtrMap vm = {0};
  for (int d = 0; d < nd; d++) pm_put(&vm, v[d], pv[d]);
  pm_put(&vm, k->var, ir_add(ir_mul(ko->var, c32(L)), pv[nd]));
  Expr *psrc = ir_substitute(src, &vm);
  pm_free(&vm);
  Tensor *part = te_compute(kfmt("%s_partial", name), nd + 1, pshape, pv, ir_sum(psrc, 1, &ko), "dot_partial");
  if (!part) return NULL;
  IterVar *j = te_reduce_axis_c(L, "j");
  Expr **idx = KNEWN(Expr *, nd + 1);
  for (int d = 0; d < nd; d++) idx[d] = v[d];
  idx[nd] = j->var;
  return te_compute(name, nd, shape, v, ir_sum(te_read(part, nd + 1, idx), 1, &j), tag);
}

Tensor *topi_dense(Tensor *data, Tensor *weight, Tensor *bias) {
  const char *op = "dense";
  if (!data || !weight) return NULL;
  if (check_rank(op, "data", data, 2, "[M, K]") || check_rank(op, "weight", weight, 2, "[N, K]")) return NULL;
  if (check_same_dtype(op, data, weight)) return NULL;
  if (!same_dim(data->shape[1], weight->shape[1]))
    return kiln_set_error("%s: data %s and weight %s disagree on K (the weight is [N, K])", op,
                          topi_shape_str(2, data->shape), topi_shape_str(2, weight->shape)),
           NULL;
  IterVar *k = te_reduce_axis(c32(0), data->shape[1], "k");
  Expr **v = te_axis_vars(2, NULL);
  Expr *src = ir_mul(te_read2(data, v[0], k->var), te_read2(weight, v[1], k->var));
  Expr *shape[2] = {data->shape[0], weight->shape[0]};
  Tensor *out = dot_product("T_dense", "dense", 2, shape, v, k, src);
  if (!out || !bias) return out;
  if (check_rank(op, "bias", bias, 1, "[N]") || check_same_dtype(op, data, bias)) return NULL;
  if (!same_dim(bias->shape[0], weight->shape[0]))
    return kiln_set_error("%s: bias %s does not match the %s output columns", op, topi_shape_str(1, bias->shape),
                          ir_expr_str(weight->shape[0])),
           NULL;
  v = te_axis_vars(2, NULL);
  return te_compute("T_add", 2, out->shape, v, ir_add(te_read2(out, v[0], v[1]), te_read1(bias, v[1])), "broadcast");
}

/* Read t (rank tn, the last `mat` dims are its matrix part) with the batch
 * part broadcast from the output batch vars. */
static Expr **batch_index(Tensor *t, int tbatch, int obatch, Expr **ovars, Expr **oshape) {
  Expr **idx = KNEWN(Expr *, t->ndim > 0 ? t->ndim : 1);
  for (int d = 0; d < tbatch; d++) {
    int od = d + obatch - tbatch;
    idx[d] = ir_is_int_value(t->shape[d], 1) && !ir_is_int_value(oshape[od], 1) ? c32(0) : ovars[od];
  }
  return idx;
}

Tensor *topi_matmul(Tensor *a, Tensor *b, bool ta, bool tb) {
  const char *op = "matmul";
  if (!a || !b) return NULL;
  if (a->ndim < 1 || b->ndim < 1)
    return kiln_set_error("%s: operands must have at least one dimension, got %s and %s", op,
                          topi_shape_str(a->ndim, a->shape), topi_shape_str(b->ndim, b->shape)),
           NULL;
  if ((ta && a->ndim < 2) || (tb && b->ndim < 2))
    return kiln_set_error("%s: a transposed operand needs rank >= 2, got %s", op,
                          topi_shape_str(ta && a->ndim < 2 ? a->ndim : b->ndim, ta && a->ndim < 2 ? a->shape : b->shape)),
           NULL;
  if (check_same_dtype(op, a, b)) return NULL;
  int ra = a->ndim, rb = b->ndim;
  /* the positions of a's M and K and of b's K and N among their last two
   * dimensions (swapped where transposed) */
  int am = ra - 2 + ta, ak = ra - 1 - ta, bk = rb - 2 + tb, bn = rb - 1 - tb;
  Expr *K = a->shape[ak], *K2 = rb == 1 ? b->shape[0] : b->shape[bk];
  if (!same_dim(K, K2))
    return kiln_set_error("%s: shapes %s and %s do not agree on the contracted dimension (%s vs %s)", op,
                          topi_shape_str(ra, a->shape), topi_shape_str(rb, b->shape), ir_expr_str(K), ir_expr_str(K2)),
           NULL;
  int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
  int nb;
  Expr **bshape;
  if (topi_broadcast_shapes(op, 2, (int[]){ba, bb}, (Expr **[]){a->shape, b->shape}, &nb, &bshape)) return NULL;
  bool has_m = ra > 1, has_n = rb > 1;
  int nd = nb + has_m + has_n;
  Expr **shape = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nb; d++) shape[d] = bshape[d];
  if (has_m) shape[nb] = a->shape[am];
  if (has_n) shape[nb + has_m] = b->shape[bn];
  Expr **v = te_axis_vars(nd, NULL);
  IterVar *k = te_reduce_axis(c32(0), K, "k");
  Expr **ia = batch_index(a, ba, nb, v, shape);
  if (has_m) ia[am] = v[nb];
  ia[ak] = k->var;
  Expr **ib = batch_index(b, bb, nb, v, shape);
  if (has_n) {
    ib[bk] = k->var;
    ib[bn] = v[nb + has_m];
  } else {
    ib[0] = k->var;
  }
  Expr *src = ir_mul(te_read(a, ra, ia), te_read(b, rb, ib));
  return te_compute("T_matmul", nd, shape, v, ir_sum(src, 1, &k), "matmul");
}

Tensor *topi_batch_matmul(Tensor *a, Tensor *b, bool transpose_a, bool transpose_b) {
  const char *op = "batch_matmul";
  if (!a || !b) return NULL;
  if (check_rank(op, "a", a, 3, transpose_a ? "[B, K, M]" : "[B, M, K]") ||
      check_rank(op, "b", b, 3, transpose_b ? "[B, N, K]" : "[B, K, N]"))
    return NULL;
  if (check_same_dtype(op, a, b)) return NULL;
  Expr *M = transpose_a ? a->shape[2] : a->shape[1], *K = transpose_a ? a->shape[1] : a->shape[2];
  Expr *N = transpose_b ? b->shape[1] : b->shape[2], *K2 = transpose_b ? b->shape[2] : b->shape[1];
  if (!same_dim(K, K2))
    return kiln_set_error("%s: shapes %s and %s do not agree on K (%s vs %s)", op, topi_shape_str(3, a->shape),
                          topi_shape_str(3, b->shape), ir_expr_str(K), ir_expr_str(K2)),
           NULL;
  Expr *B = a->shape[0];
  if (!same_dim(a->shape[0], b->shape[0])) {
    if (ir_is_int_value(a->shape[0], 1))
      B = b->shape[0];
    else if (!ir_is_int_value(b->shape[0], 1))
      return kiln_set_error("%s: batch sizes %s and %s differ", op, ir_expr_str(a->shape[0]), ir_expr_str(b->shape[0])),
             NULL;
  }
  Expr **v = te_axis_vars(3, (const char *[]){"b", "i", "j"});
  IterVar *k = te_reduce_axis(c32(0), K, "k");
  Expr *bi_a = ir_is_int_value(a->shape[0], 1) ? c32(0) : v[0];
  Expr *bi_b = ir_is_int_value(b->shape[0], 1) ? c32(0) : v[0];
  Expr *ra = transpose_a ? te_read3(a, bi_a, k->var, v[1]) : te_read3(a, bi_a, v[1], k->var);
  Expr *rb = transpose_b ? te_read3(b, bi_b, v[2], k->var) : te_read3(b, bi_b, k->var, v[2]);
  Expr *shape[3] = {B, M, N};
  if (transpose_b && !transpose_a) /* both contiguous along k */
    return dot_product("T_batch_matmul", "batch_matmul", 3, shape, v, k, ir_mul(ra, rb));
  return te_compute("T_batch_matmul", 3, shape, v, ir_sum(ir_mul(ra, rb), 1, &k), "batch_matmul");
}

/* ---- pooling ---- */

typedef struct PoolAxes {
  int h, w;
} PoolAxes;

static int pool_layout(const char *op, Tensor *data, const char *layout, PoolAxes *pa) {
  TopiLayout l;
  if (!layout) layout = "NCHW";
  if (topi_layout_parse(op, layout, &l)) return -1;
  if (data->ndim != l.ndim)
    return kiln_set_error("%s: data has %d dimensions but layout '%s' has %d", op, data->ndim, layout, l.ndim);
  pa->h = topi_layout_find(&l, 'H');
  pa->w = topi_layout_find(&l, 'W');
  if (pa->h < 0 || pa->w < 0) return kiln_set_error("%s: layout '%s' has no H or W axis", op, layout);
  if (topi_layout_find(&l, 'h') >= 0 || topi_layout_find(&l, 'w') >= 0)
    return kiln_set_error("%s: layout '%s' splits H or W, which pooling does not support", op, layout);
  return 0;
}

/* floor((a) / b) and ceil for the index math below (int32). */
static Expr *fdiv(Expr *a, int64_t b) { return ir_floordiv(a, c32(b)); }

Tensor *topi_pool2d(Tensor *data, TopiPoolKind kind, const int64_t kernel[2], const int64_t stride[2],
                    const int64_t dilation[2], const int64_t pad[4], bool ceil_mode, bool count_include_pad,
                    const char *layout) {
  const char *op = kind == TOPI_POOL_MAX ? "max_pool2d" : "avg_pool2d";
  if (!data) return NULL;
  if (kind != TOPI_POOL_MAX && kind != TOPI_POOL_AVG) return kiln_set_error("pool2d: unknown kind %d", (int)kind), NULL;
  PoolAxes pa;
  if (pool_layout(op, data, layout, &pa)) return NULL;
  if (check_positive2(op, "kernel", kernel) || check_positive2(op, "stride", stride) ||
      check_positive2(op, "dilation", dilation) || check_pads4(op, pad))
    return NULL;
  if (kind == TOPI_POOL_AVG && !dt_is_float(data->dtype))
    return kiln_set_error("%s: expected a float tensor, got %s", op, dt_str(data->dtype)), NULL;
  int ax[2] = {pa.h, pa.w};
  int64_t in[2], out[2];
  for (int i = 0; i < 2; i++) {
    if ((in[i] = cdim(op, "data", data, ax[i])) < 0) return NULL;
    int64_t eff = dilation[i] * (kernel[i] - 1) + 1;
    int64_t num = in[i] + pad[i] + pad[i + 2] - eff;
    if (num < 0)
      return kiln_set_error("%s: the %s window %lld is larger than the padded input %lld", op, i ? "W" : "H",
                            (long long)eff, (long long)(in[i] + pad[i] + pad[i + 2])),
             NULL;
    out[i] = (ceil_mode ? (num + stride[i] - 1) / stride[i] : num / stride[i]) + 1;
    /* a window must start inside the input or the begin padding */
    if (ceil_mode && (out[i] - 1) * stride[i] >= in[i] + pad[i]) out[i]--;
  }
  int nd = data->ndim;
  Expr **shape = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) shape[d] = data->shape[d];
  shape[pa.h] = c32(out[0]);
  shape[pa.w] = c32(out[1]);
  IterVar *r[2] = {te_reduce_axis_c(kernel[0], "rv0"), te_reduce_axis_c(kernel[1], "rv1")};
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) idx[d] = v[d];
  Expr *cond = NULL, *count = NULL;
  bool uniform = true; /* every window inside the input: a constant count */
  for (int i = 0; i < 2; i++) {
    Expr *start = ir_sub(ir_mul(v[ax[i]], c32(stride[i])), c32(pad[i]));
    idx[ax[i]] = ir_add(start, ir_mul(r[i]->var, c32(dilation[i])));
    int64_t eff = dilation[i] * (kernel[i] - 1) + 1;
    bool low = pad[i] > 0, high = (out[i] - 1) * stride[i] - pad[i] + eff > in[i];
    if (low) cond = cond ? ir_and(cond, ir_ge(idx[ax[i]], c32(0))) : ir_ge(idx[ax[i]], c32(0));
    if (high) cond = cond ? ir_and(cond, ir_lt(idx[ax[i]], c32(in[i]))) : ir_lt(idx[ax[i]], c32(in[i]));
    /* the number of window taps counted by the average */
    int64_t lo_lim = count_include_pad ? -pad[i] : 0, hi_lim = count_include_pad ? in[i] + pad[i + 2] : in[i];
    bool clipped = (0 - pad[i] < lo_lim) || ((out[i] - 1) * stride[i] - pad[i] + eff > hi_lim);
    Expr *cnt;
    if (!clipped) {
      cnt = c32(kernel[i]);
    } else {
      uniform = false;
      /* taps r with lo_lim <= start + r d < hi_lim, r in [0, k) */
      Expr *first = ir_max(c32(0), fdiv(ir_add(ir_sub(c32(lo_lim), start), c32(dilation[i] - 1)), dilation[i]));
      Expr *last = ir_min(c32(kernel[i] - 1), fdiv(ir_sub(c32(hi_lim - 1), start), dilation[i]));
      cnt = ir_max(ir_add(ir_sub(last, first), c32(1)), c32(1));
    }
    count = count ? ir_mul(count, cnt) : cnt;
  }
  Expr *rd = te_read(data, nd, idx);
  if (!rd) return NULL;
  Reducer *red = ir_reducer(kind == TOPI_POOL_MAX ? RED_MAX : RED_SUM, data->dtype);
  Expr *body = ir_reduce(red, rd, 2, r, cond);
  Tensor *pool = te_compute(kind == TOPI_POOL_MAX ? "T_pool_max" : "T_pool_sum", nd, shape, v, body, "pool");
  if (!pool || kind == TOPI_POOL_MAX) return pool;
  Expr **v2 = te_axis_vars(nd, NULL);
  Expr *cnt = count;
  if (!uniform) {
    PtrMap vm = {0};
    for (int d = 0; d < nd; d++) pm_put(&vm, v[d], v2[d]);
    cnt = ir_substitute(count, &vm);
    pm_free(&vm);
  }
  Expr *avg = ir_div(te_read(pool, nd, v2), ir_cast(data->dtype, cnt));
  return te_compute("T_pool_avg", nd, shape, v2, avg, "elemwise");
}

Tensor *topi_adaptive_pool2d(Tensor *data, TopiPoolKind kind, const int64_t out_size[2], const char *layout) {
  const char *op = kind == TOPI_POOL_MAX ? "adaptive_max_pool2d" : "adaptive_avg_pool2d";
  if (!data) return NULL;
  if (kind != TOPI_POOL_MAX && kind != TOPI_POOL_AVG) return kiln_set_error("pool2d: unknown kind %d", (int)kind), NULL;
  PoolAxes pa;
  if (pool_layout(op, data, layout, &pa)) return NULL;
  if (check_positive2(op, "output size", out_size)) return NULL;
  if (kind == TOPI_POOL_AVG && !dt_is_float(data->dtype))
    return kiln_set_error("%s: expected a float tensor, got %s", op, dt_str(data->dtype)), NULL;
  int ax[2] = {pa.h, pa.w};
  int nd = data->ndim;
  Expr **shape = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) shape[d] = data->shape[d];
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) idx[d] = v[d];
  IterVar *r[2];
  Expr *cond = NULL, *count = NULL;
  for (int i = 0; i < 2; i++) {
    int64_t in = cdim(op, "data", data, ax[i]), o = out_size[i];
    if (in < 0) return NULL;
    shape[ax[i]] = c32(o);
    int64_t kmax = 0;
    for (int64_t y = 0; y < o; y++) {
      int64_t s = y * in / o, e = ((y + 1) * in + o - 1) / o;
      if (e - s > kmax) kmax = e - s;
    }
    r[i] = te_reduce_axis_c(kmax, i ? "rv1" : "rv0");
    Expr *start, *len;
    if (in % o == 0) { /* uniform windows */
      start = ir_mul(v[ax[i]], c32(in / o));
      len = c32(in / o);
    } else {
      start = fdiv(ir_mul(v[ax[i]], c32(in)), o);
      Expr *end = fdiv(ir_add(ir_mul(ir_add(v[ax[i]], c32(1)), c32(in)), c32(o - 1)), o);
      len = ir_sub(end, start);
      Expr *c = ir_lt(r[i]->var, len);
      cond = cond ? ir_and(cond, c) : c;
    }
    idx[ax[i]] = ir_add(start, r[i]->var);
    count = count ? ir_mul(count, len) : len;
  }
  Expr *rd = te_read(data, nd, idx);
  if (!rd) return NULL;
  Reducer *red = ir_reducer(kind == TOPI_POOL_MAX ? RED_MAX : RED_SUM, data->dtype);
  Tensor *pool = te_compute(kind == TOPI_POOL_MAX ? "T_adaptive_pool_max" : "T_adaptive_pool_sum", nd, shape, v,
                            ir_reduce(red, rd, 2, r, cond), "adaptive_pool");
  if (!pool || kind == TOPI_POOL_MAX) return pool;
  Expr **v2 = te_axis_vars(nd, NULL);
  PtrMap vm = {0};
  for (int d = 0; d < nd; d++) pm_put(&vm, v[d], v2[d]);
  Expr *cnt = ir_substitute(count, &vm);
  pm_free(&vm);
  return te_compute("T_adaptive_pool_avg", nd, shape, v2, ir_div(te_read(pool, nd, v2), ir_cast(data->dtype, cnt)),
                    "elemwise");
}

Tensor *topi_global_pool2d(Tensor *data, TopiPoolKind kind, const char *layout) {
  return topi_adaptive_pool2d(data, kind, (const int64_t[]){1, 1}, layout);
}

/* ---- softmax ---- */

/* The indices of x with the axes [axis, axis + n) replaced by r. */
static Expr **with_axes(int nd, Expr **vars, int axis, int n, Expr **r) {
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) idx[d] = d >= axis && d < axis + n ? r[d - axis] : vars[d];
  return idx;
}

/* A reduction over [axis, axis + n) of x, keepdims shape (size 1 there).
 * Over the last axis alone, when its length is a constant of at least 32,
 * in two stages as TVM's rfactor would: "<name>_partial" [..., L] reduces
 * the elements k = ko * L + j over ko for L = 16 or 8 lanes (tag
 * "row_partial": the schedule vectorizes j, so the reduction is a chain of
 * vector operations, not of scalar ones), and the result reduces the L
 * lanes.  A row that is a multiple of 32 (64 or more) takes L = 32: two
 * vectors, two chains of half the length (the schedule unrolls them), as
 * a row is a short dependent chain a norm runs twice (ConvNeXt's rows of
 * 96: 6 dependent adds, now 3; layer norms 0.83-0.89x at 1 thread).  A length that is not a multiple of 8 (a ViT's 197 tokens) takes
 * L = 16 over its first 16 * floor(len / 16) elements, and the result
 * reduces the 16 lanes and then the tail elements, one reduction over
 * 16 + tail terms that selects a lane or a tail element (both indices
 * clamped in bounds). */
static Tensor *row_reduce(const char *name, Tensor *x, int axis, int n, ReduceKind kind,
                          Expr *(*src_fn)(Expr *xv, Expr **vars, void *ud), void *ud) {
  int nd = x->ndim;
  int64_t len;
  if (n == 1 && axis == nd - 1 && ir_is_const_int(x->shape[axis], &len) && len >= 32) {
    int64_t L = len % 32 == 0 && len >= 64 ? 32 : len % 16 == 0 || len % 8 ? 16 : 8, main = len / L * L, tail = len - main;
    Expr **pshape = KNEWN(Expr *, nd), **shape = KNEWN(Expr *, nd);
    for (int d = 0; d < nd; d++) pshape[d] = shape[d] = x->shape[d];
    pshape[axis] = c32(L), shape[axis] = c32(1);
    IterVar *ko = te_reduce_axis_c(len / L, "ko");
    Expr **pv = te_axis_vars(nd, NULL);
    Expr **idx = KNEWN(Expr *, nd);
    for (int d = 0; d < nd; d++) idx[d] = pv[d];
    idx[axis] = ir_add(ir_mul(ko->var, c32(L)), pv[axis]);
    Expr *xv = te_read(x, nd, idx);
    Expr *src = src_fn ? src_fn(xv, pv, ud) : xv;
    if (!src) return NULL;
    Tensor *part = te_compute(kfmt("%s_partial", name), nd, pshape, pv,
                              ir_reduce(ir_reducer(kind, src->dtype), src, 1, &ko, NULL), "row_partial");
    if (!part) return NULL;
    /* fold the lanes in halves down to 4 (a vector op each), so the row's
     * last, serial reduction is over 4 lanes, not 16 */
    for (int f = 0; (kind == RED_SUM || kind == RED_MAX) && L > 4; f++) {
      int64_t h = L / 2;
      Expr **fv = te_axis_vars(nd, NULL), **hi = KNEWN(Expr *, nd);
      for (int d = 0; d < nd; d++) pshape[d] = d == axis ? c32(h) : x->shape[d], hi[d] = fv[d];
      hi[axis] = ir_add(fv[axis], c32(h));
      Expr *lo = te_read(part, nd, fv), *up = te_read(part, nd, hi);
      part = te_compute(kfmt("%s_fold%d", name, f), nd, pshape, fv, kind == RED_SUM ? ir_add(lo, up) : ir_max(lo, up),
                        "row_temp");
      if (!part) return NULL;
      L = h;
    }
    IterVar *j = te_reduce_axis_c(L + tail, "j");
    Expr **v = te_axis_vars(nd, NULL);
    Expr **ridx = KNEWN(Expr *, nd);
    for (int d = 0; d < nd; d++) ridx[d] = v[d];
    ridx[axis] = tail ? ir_min(j->var, c32(L - 1)) : j->var;
    Expr *pr = te_read(part, nd, ridx);
    if (tail) { /* lanes j < L, then x[main + j - L] */
      Expr **tidx = KNEWN(Expr *, nd);
      for (int d = 0; d < nd; d++) tidx[d] = v[d];
      tidx[axis] = ir_max(ir_add(j->var, c32(main - L)), c32(main));
      Expr *tv = te_read(x, nd, tidx);
      Expr *tsrc = tv && src_fn ? src_fn(tv, v, ud) : tv;
      if (!tsrc) return NULL;
      pr = ir_select(ir_lt(j->var, c32(L)), pr, tsrc);
    }
    return te_compute(name, nd, shape, v, ir_reduce(ir_reducer(kind, pr->dtype), pr, 1, &j, NULL), "row_reduce");
  }
  Expr **shape = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) shape[d] = d >= axis && d < axis + n ? c32(1) : x->shape[d];
  IterVar **r = KNEWN(IterVar *, n);
  Expr **rv = KNEWN(Expr *, n);
  for (int i = 0; i < n; i++) {
    r[i] = te_reduce_axis(c32(0), x->shape[axis + i], kfmt("k%d", i));
    rv[i] = r[i]->var;
  }
  Expr **v = te_axis_vars(nd, NULL);
  Expr *xv = te_read(x, nd, with_axes(nd, v, axis, n, rv));
  Expr *src = src_fn ? src_fn(xv, v, ud) : xv;
  if (!src) return NULL;
  Expr *body = ir_reduce(ir_reducer(kind, src->dtype), src, n, r, NULL);
  return te_compute(name, nd, shape, v, body, "row_reduce");
}

/* Read a keepdims row tensor at the row of output vars. */
static Expr *row_read(Tensor *t, int nd, Expr **vars, int axis, int n) {
  Expr **z = KNEWN(Expr *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) z[i] = c32(0);
  return te_read(t, nd, with_axes(nd, vars, axis, n, z));
}

typedef struct SubMax {
  Tensor *max;
  int axis;
} SubMax;

/* e^(x - max), flushed to 0 where it would be subnormal (x - max below
 * -87, e^-87 = 1.6e-38): a probability that small is 0 to any consumer,
 * while a subnormal one costs a microcode assist in every multiply that
 * reads it.  Swin's shifted-window mask adds -100 to the logits, so
 * without the flush a masked row is all subnormals and the attention
 * matmul that reads it ran about 100x slower.  The exponent is clamped
 * first, so exp itself computes no subnormal either (float32 only: a
 * double's subnormals start near e^-708). */
static Expr *exp_sub_max(Expr *xv, Expr **vars, void *ud) {
  SubMax *c = ud;
  Expr *d = ir_sub(xv, row_read(c->max, c->max->ndim, vars, c->axis, 1));
  if (!(d->dtype.code == kDLFloat && d->dtype.bits == 32)) return ir_call1(INTRIN_exp, d);
  Expr *dv = ir_var("d", d->dtype), *lim = fc(-87.0, d->dtype);
  /* max(d, -87) is in [-87, 0]: e^ of it is a normal float, so exp_normal
   * (no overflow or subnormal selects; 0.64x the time of softmax 4 x 384
   * x 384, the same values) */
  Expr *e = ir_call1(INTRIN_exp_normal, ir_max(dv, lim));
  return ir_let(dv, d, ir_select(ir_lt(dv, lim), fc(0.0, d->dtype), e));
}

static void set_row_attrs(Tensor *t, int axis, int n) {
  if (!t) return;
  te_set_attr(t, "axis", c32(axis));
  te_set_attr(t, "naxes", c32(n));
}

static Tensor *softmax_impl(Tensor *x, int axis_in, bool log) {
  const char *op = log ? "log_softmax" : "softmax";
  if (!x) return NULL;
  if (check_float(op, x)) return NULL;
  int axis, nd = x->ndim;
  if (topi_normalize_axis(op, axis_in, nd, &axis)) return NULL;
  Tensor *mx = row_reduce(kfmt("T_%s_maxelem", op), x, axis, 1, RED_MAX, NULL, NULL);
  if (!mx) return NULL;
  SubMax sm = {mx, axis};
  if (log) {
    Tensor *sum = row_reduce("T_log_softmax_expsum", x, axis, 1, RED_SUM, exp_sub_max, &sm);
    if (!sum) return NULL;
    Expr **v = te_axis_vars(nd, NULL);
    Expr *body = ir_sub(ir_sub(te_read(x, nd, v), row_read(mx, nd, v, axis, 1)),
                        ir_call1(INTRIN_log, row_read(sum, nd, v, axis, 1)));
    Tensor *out = te_compute("T_log_softmax_norm", nd, x->shape, v, body, "log_softmax_output");
    set_row_attrs(out, axis, 1);
    return out;
  }
  Expr **v = te_axis_vars(nd, NULL);
  Tensor *e = te_compute("T_softmax_exp", nd, x->shape, v, exp_sub_max(te_read(x, nd, v), v, &sm), "row_temp");
  if (!e) return NULL;
  Tensor *sum = row_reduce("T_softmax_expsum", e, axis, 1, RED_SUM, NULL, NULL);
  if (!sum) return NULL;
  v = te_axis_vars(nd, NULL);
  /* times the row's reciprocal: one divide a row, not one an element */
  Expr *rsum = ir_div(fc(1.0, e->dtype), row_read(sum, nd, v, axis, 1));
  Tensor *out = te_compute("T_softmax_norm", nd, x->shape, v, ir_mul(te_read(e, nd, v), rsum), "softmax_output");
  set_row_attrs(out, axis, 1);
  return out;
}

Tensor *topi_softmax(Tensor *x, int axis) { return softmax_impl(x, axis, false); }
Tensor *topi_log_softmax(Tensor *x, int axis) { return softmax_impl(x, axis, true); }

/* ---- norms ---- */

static int check_vec(const char *op, const char *what, Tensor *t, Tensor *x, Expr *len) {
  if (!t) return kiln_set_error("%s: %s not given", op, what);
  if (check_rank(op, what, t, 1, NULL) || check_same_dtype(op, x, t)) return -1;
  if (!same_dim(t->shape[0], len))
    return kiln_set_error("%s: %s has %s elements, expected %s", op, what, ir_expr_str(t->shape[0]), ir_expr_str(len));
  return 0;
}

Tensor *topi_batch_norm(Tensor *x, Tensor *gamma, Tensor *beta, Tensor *mean, Tensor *var, int axis_in, double eps) {
  const char *op = "batch_norm";
  if (!x) return NULL;
  if (check_float(op, x)) return NULL;
  int axis, nd = x->ndim;
  if (topi_normalize_axis(op, axis_in, nd, &axis)) return NULL;
  Expr *C = x->shape[axis];
  if (check_vec(op, "gamma", gamma, x, C) || check_vec(op, "beta", beta, x, C) || check_vec(op, "mean", mean, x, C) ||
      check_vec(op, "var", var, x, C))
    return NULL;
  Expr **v = te_axis_vars(nd, NULL);
  Expr *c = v[axis];
  DType t = x->dtype;
  Expr *inv = ir_div(fc(1, t), ir_call1(INTRIN_sqrt, ir_add(te_read1(var, c), fc(eps, t))));
  Expr *body = ir_add(ir_mul(ir_mul(ir_sub(te_read(x, nd, v), te_read1(mean, c)), inv), te_read1(gamma, c)),
                      te_read1(beta, c));
  return te_compute("T_batch_norm", nd, x->shape, v, body, "broadcast");
}

typedef struct MeanSub {
  Tensor *sum;
  int axis, n;
  double inv_count;
} MeanSub;

static Expr *sq_dev(Expr *xv, Expr **vars, void *ud) {
  MeanSub *c = ud;
  Expr *mean = ir_mul(row_read(c->sum, c->sum->ndim, vars, c->axis, c->n), fc(c->inv_count, xv->dtype));
  Expr *dv = ir_var("d", xv->dtype);
  return ir_let(dv, ir_sub(xv, mean), ir_mul(dv, dv));
}

/* (x - mean) / sqrt(var + eps) over [axis, nd), mean and variance in two
 * passes; affine(v, vars) applies scale and bias. */
static Tensor *normalize(const char *op, Tensor *x, int axis, double eps, Tensor *scale, Tensor *bias,
                         bool per_channel) {
  int nd = x->ndim, n = nd - axis;
  int64_t count = 1;
  for (int d = axis; d < nd; d++) {
    int64_t e = cdim(op, "x", x, d);
    if (e < 0) return NULL;
    count *= e;
  }
  if (count == 0) return kiln_set_error("%s: normalizing over an empty set of elements", op), NULL;
  Tensor *sum = row_reduce(kfmt("T_%s_sum", op), x, axis, n, RED_SUM, NULL, NULL);
  if (!sum) return NULL;
  MeanSub ms = {sum, axis, n, 1.0 / (double)count};
  Tensor *sq = row_reduce(kfmt("T_%s_sqsum", op), x, axis, n, RED_SUM, sq_dev, &ms);
  if (!sq) return NULL;
  DType t = x->dtype;
  Expr **v = te_axis_vars(nd, NULL);
  Expr *mean = ir_mul(row_read(sum, nd, v, axis, n), fc(ms.inv_count, t));
  Expr *varv = ir_mul(row_read(sq, nd, v, axis, n), fc(ms.inv_count, t));
  Expr *body = ir_div(ir_sub(te_read(x, nd, v), mean), ir_call1(INTRIN_sqrt, ir_add(varv, fc(eps, t))));
  if (scale) body = ir_mul(body, per_channel ? te_read1(scale, v[1]) : topi_broadcast_read(scale, nd, v, x->shape));
  if (bias) body = ir_add(body, per_channel ? te_read1(bias, v[1]) : topi_broadcast_read(bias, nd, v, x->shape));
  Tensor *out = te_compute(kfmt("T_%s", op), nd, x->shape, v, body, "norm_output");
  set_row_attrs(out, axis, n);
  return out;
}

/* t must broadcast to x.shape[axis:]. */
static int check_trailing(const char *op, const char *what, Tensor *t, Tensor *x, int axis) {
  if (!t) return 0;
  if (check_same_dtype(op, x, t)) return -1;
  int n = x->ndim - axis;
  bool ok = t->ndim <= n;
  for (int d = 0; ok && d < t->ndim; d++) {
    Expr *xd = x->shape[x->ndim - t->ndim + d];
    ok = ir_is_int_value(t->shape[d], 1) || same_dim(t->shape[d], xd);
  }
  if (!ok)
    return kiln_set_error("%s: %s shape %s does not broadcast to the normalized shape %s", op, what,
                          topi_shape_str(t->ndim, t->shape), topi_shape_str(n, x->shape + axis));
  return 0;
}

Tensor *topi_layer_norm(Tensor *x, Tensor *scale, Tensor *bias, int axis_in, double eps) {
  const char *op = "layer_norm";
  if (!x) return NULL;
  if (check_float(op, x)) return NULL;
  int axis;
  if (topi_normalize_axis(op, axis_in, x->ndim, &axis)) return NULL;
  if (check_trailing(op, "scale", scale, x, axis) || check_trailing(op, "bias", bias, x, axis)) return NULL;
  return normalize(op, x, axis, eps, scale, bias, false);
}

Tensor *topi_instance_norm(Tensor *x, Tensor *scale, Tensor *bias, double eps) {
  const char *op = "instance_norm";
  if (!x) return NULL;
  if (check_float(op, x)) return NULL;
  if (x->ndim < 3)
    return kiln_set_error("%s: x has %d dimensions, expected at least 3 (N, C, spatial...)", op, x->ndim), NULL;
  if (check_vec(op, "scale", scale, x, x->shape[1]) || check_vec(op, "bias", bias, x, x->shape[1])) return NULL;
  return normalize(op, x, 2, eps, scale, bias, true);
}

Tensor *topi_lrn(Tensor *x, int size, double alpha, double beta, double bias) {
  const char *op = "lrn";
  if (!x) return NULL;
  if (check_float(op, x)) return NULL;
  if (x->ndim < 3) return kiln_set_error("%s: x has %d dimensions, expected at least 3 (N, C, ...)", op, x->ndim), NULL;
  if (size <= 0) return kiln_set_error("%s: size = %d, expected a positive value", op, size), NULL;
  int64_t C = cdim(op, "x", x, 1);
  if (C < 0) return NULL;
  int nd = x->ndim;
  int64_t before = (size - 1) / 2;
  IterVar *r = te_reduce_axis_c(size, "rc");
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) idx[d] = v[d];
  Expr *ch = ir_add(ir_sub(v[1], c32(before)), r->var);
  idx[1] = ch;
  Expr *xv = te_read(x, nd, idx);
  if (!xv) return NULL;
  Expr *cond = ir_and(ir_ge(ch, c32(0)), ir_lt(ch, c32(C)));
  Tensor *sq = te_compute("T_lrn_sqsum", nd, x->shape, v,
                          ir_reduce(ir_reducer(RED_SUM, x->dtype), ir_mul(xv, xv), 1, &r, cond), "comm_reduce");
  if (!sq) return NULL;
  DType t = x->dtype;
  Expr **v2 = te_axis_vars(nd, NULL);
  Expr *den = ir_call2(INTRIN_pow, ir_add(fc(bias, t), ir_mul(fc(alpha / size, t), te_read(sq, nd, v2))), fc(beta, t));
  return te_compute("T_lrn", nd, x->shape, v2, ir_div(te_read(x, nd, v2), den), "elemwise");
}

/* ---- Col2Im with run-time sizes ---- */

#define COL2IM_MAX_AXES 6 /* spatial axes (the graph takes 8 dimensions) */

Tensor *topi_col2im_dyn(Tensor *x, Tensor *image, Tensor *block, const int64_t *pads, const int64_t *dil,
                        const int64_t *str, Expr **oshape) {
  const char *op = "dyn.col2im";
  if (!x || !image || !block || !oshape) return NULL;
  int64_t d, db, CK, L;
  if (x->ndim != 3 || !ir_is_const_int(x->shape[1], &CK) || !ir_is_const_int(x->shape[2], &L))
    return kiln_set_error("%s: the input must be [N, C * prod(block_shape), L] with static C * prod(block) and L", op),
           NULL;
  if (image->ndim != 1 || block->ndim != 1 || !dt_is_int(image->dtype) || !dt_is_int(block->dtype) ||
      !ir_is_const_int(image->shape[0], &d) || !ir_is_const_int(block->shape[0], &db) || d != db || d < 1 ||
      d > COL2IM_MAX_AXES)
    return kiln_set_error("%s: image_shape and block_shape must be 1-D integer tensors of one length (1 to %d)", op,
                          COL2IM_MAX_AXES),
           NULL;
  int nd = (int)d + 2;
  Expr **v = te_axis_vars(nd, NULL);
  IterVar *rk = te_reduce_axis_c(CK, "rk");
  Expr *k = ir_cast(DT_I64, rk->var), *K = ir_i64(1), *b[COL2IM_MAX_AXES];
  for (int i = 0; i < d; i++) {
    b[i] = ir_cast(DT_I64, te_read1(block, ir_i32(i)));
    K = ir_mul(K, b[i]);
  }
  /* row k of channel c is block offset k (row-major over block_shape),
   * valid for k < prod(block); its pixel y comes from sliding position
   * (y + pad - offset * dilation) / stride on each axis, when that is a
   * whole position inside the grid */
  Expr *valid = ir_lt(k, K), *rem = k, *l = ir_i64(0), *mult = ir_i64(1);
  for (int i = (int)d - 1; i >= 0; i--) {
    Expr *off = ir_mod(rem, b[i]);
    rem = ir_div(rem, b[i]);
    Expr *img = ir_cast(DT_I64, te_read1(image, ir_i32(i)));
    Expr *span = ir_add(ir_mul(ir_i64(dil[i]), ir_sub(b[i], ir_i64(1))), ir_i64(1));
    Expr *outs = ir_add(ir_div(ir_sub(ir_add(img, ir_i64(pads[i] + pads[i + d])), span), ir_i64(str[i])), ir_i64(1));
    Expr *p = ir_sub(ir_add(ir_cast(DT_I64, v[2 + i]), ir_i64(pads[i])), ir_mul(off, ir_i64(dil[i])));
    Expr *q = ir_div(p, ir_i64(str[i]));
    valid = ir_and(valid, ir_and(ir_ge(p, ir_i64(0)), ir_and(ir_eq(ir_mod(p, ir_i64(str[i])), ir_i64(0)), ir_lt(q, outs))));
    l = ir_add(l, ir_mul(q, mult));
    mult = ir_mul(mult, outs);
  }
  Expr *ch = ir_add(ir_mul(ir_cast(DT_I64, v[1]), K), k);
  Expr *chc = ir_cast(DT_I32, ir_max(ir_min(ch, ir_i64(CK - 1)), ir_i64(0)));
  Expr *lc = ir_cast(DT_I32, ir_max(ir_min(l, ir_i64(L - 1)), ir_i64(0)));
  Expr *src = ir_select(valid, te_read3(x, v[0], chc, lc), ir_cast(x->dtype, ir_i32(0)));
  return te_compute("T_col2im", nd, oshape, v, ir_sum(src, 1, (IterVar *[]){rk}), "col2im");
}
