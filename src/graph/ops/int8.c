/*
 * int8.c - the op rows of quantized models (docs/int8.md): ONNX's
 * DequantizeLinear of a constant (a quantized weight or bias) as one op,
 * so the pass fake_quantization_to_integer still sees the int8 values,
 * and the int8 dense layer it makes.
 *
 *   qnn.dequantize                     x int8/uint8, scale float32 (one value
 *                                      or [C]), zero point (x's type, one
 *                                      value or [C]; optional), axis=1
 *                                      -> float32 (x - zp) * scale, per axis
 *   nn.contrib_dense_vnni_weight_pack  weight int8 [N, K], block=bn
 *                                      -> uint32 [N/bn, ceil(K/4), bn]
 *   nn.contrib_dense_vnni              data uint8 [M, K], that weight,
 *                                      compensation int32 [N], scale
 *                                      float32 [N] -> float32 [M, N]
 *                                      (acc - comp) * scale
 *   nn.contrib_conv2d_int8             data uint8 NCHW, weight int8 OIHW
 *                                      (constant), compensation int32 [O]
 *                                      (none where input_zero_point is 0),
 *                                      scale float32 [O], strides, padding,
 *                                      dilation, input_zero_point (the
 *                                      padding's value) -> float32 NCHW
 *                                      (acc - comp) * scale; the pass's form,
 *                                      which alter_layout blocks (its own
 *                                      compute is the plain reference)
 *   nn.contrib_conv2d_int8_weight_pack kernel int8 OIHW, ic_block (a
 *                                      multiple of 4), oc_block -> uint32
 *                                      [O/ocb, I/icb, KH, KW, icb/4, ocb]
 *   nn.contrib_conv2d_NCHWc_int8       data uint8 NCHW[icb]c, that kernel,
 *                                      compensation, scale and the
 *                                      attributes above -> float32
 *                                      NCHW[ocb]c (conv2d_NCHWc_int8.x86)
 */
#include "../../topi/topi.h"
#include "../backend/strategy.h"
#include "util.h"

static bool is_8bit_int(DType t) { return (t.code == kDLInt || t.code == kDLUInt) && t.bits == 8 && t.lanes == 1; }

/* A scale or zero point: one value, or [C] along axis of x. */
static int check_param(const TType *p, const TType *x, int axis, const char *what) {
  int64_t n = 1;
  for (int i = 0; i < p->ndim; i++) n *= p->shape[i];
  if (n == 1 && p->ndim <= 1) return 0;
  if (x->ndim == 0) return kiln_set_error("%s %s must be one value for a scalar x", what, shape_str(p));
  if (p->ndim != 1 || p->shape[0] != x->shape[axis])
    return kiln_set_error("%s %s must be one value or one per element of axis %d (%lld) of x %s", what, shape_str(p), axis,
                          (long long)x->shape[axis], shape_str(x));
  return 0;
}

static int infer_dequantize(GNode *n, TType *out) {
  const TType *x = arg_type(n, 0), *s = arg_type(n, 1);
  int64_t axis = gattr_int(&n->attrs, "axis", 1);
  if (!is_8bit_int(x->dtype)) return kiln_set_error("x must be int8 or uint8, got %s", dt_str(x->dtype));
  if (axis < 0 || axis >= (x->ndim ? x->ndim : 1))
    return kiln_set_error("axis %lld is out of range for x %s", (long long)axis, shape_str(x));
  if (!dt_eq(s->dtype, DT_F32)) return kiln_set_error("scale must be float32, got %s", dt_str(s->dtype));
  if (check_param(s, x, (int)axis, "scale")) return -1;
  if (n->nargs == 3) {
    const TType *z = arg_type(n, 2);
    if (!dt_eq(z->dtype, x->dtype))
      return kiln_set_error("the zero point's type %s differs from x's %s", dt_str(z->dtype), dt_str(x->dtype));
    if (check_param(z, x, (int)axis, "zero point")) return -1;
  }
  *out = ttype(DT_F32, x->ndim, x->shape);
  return 0;
}

/* p's value for the element at v (one value, or p[v[axis]]) */
static Expr *param_at(Tensor *p, Expr **v, int axis) {
  if (p->ndim == 0) return te_read(p, 0, NULL);
  if (te_dim(p, 0) == 1) return te_read1(p, ir_i32(0));
  return te_read1(p, v[axis]);
}

static Tensor *compute_dequantize(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  Tensor *x = ins[0];
  int axis = (int)gattr_int(&n->attrs, "axis", 1), r = x->ndim;
  Expr **v = te_axis_vars(r, NULL);
  Expr *q = ir_cast(DT_F32, te_read(x, r, v));
  if (n->nargs == 3) q = ir_sub(q, ir_cast(DT_F32, param_at(ins[2], v, axis)));
  return te_compute("T_dequantize", r, x->shape, v, ir_mul(q, param_at(ins[1], v, axis)), "elemwise");
}

static int infer_weight_pack(GNode *n, TType *out) {
  const TType *w = arg_type(n, 0);
  int64_t bn = gattr_int(&n->attrs, "block", 0);
  if (w->ndim != 2 || !dt_eq(w->dtype, DT_I8)) return kiln_set_error("weight must be int8 [N, K], got %s %s", dt_str(w->dtype), shape_str(w));
  if (bn < 1 || w->shape[0] % bn)
    return kiln_set_error("block = %lld must be positive and divide N = %lld", (long long)bn, (long long)w->shape[0]);
  int64_t s[3] = {w->shape[0] / bn, (w->shape[1] + 3) / 4, bn};
  *out = ttype(DT_U32, 3, s);
  return 0;
}

static Tensor *compute_weight_pack(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_x86_pack_dense_weight_int8(ins[0], gattr_int(&n->attrs, "block", 0));
}

static int infer_dense_vnni(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1), *c = arg_type(n, 2), *s = arg_type(n, 3);
  if (d->ndim != 2 || !dt_eq(d->dtype, DT_U8)) return kiln_set_error("data must be uint8 [M, K], got %s %s", dt_str(d->dtype), shape_str(d));
  if (w->ndim != 3 || !dt_eq(w->dtype, DT_U32) || w->shape[1] != (d->shape[1] + 3) / 4)
    return kiln_set_error("weight must be int8 quadruples packed as uint32 [N/bn, ceil(K/4), bn] "
                          "(nn.contrib_dense_vnni_weight_pack) for data %s, got %s %s",
                          shape_str(d), dt_str(w->dtype), shape_str(w));
  int64_t N = w->shape[0] * w->shape[2];
  if (c->ndim != 1 || c->shape[0] != N || !dt_eq(c->dtype, DT_I32))
    return kiln_set_error("the compensation must be int32 [%lld], got %s %s", (long long)N, dt_str(c->dtype), shape_str(c));
  if (s->ndim != 1 || s->shape[0] != N || !dt_eq(s->dtype, DT_F32))
    return kiln_set_error("the scale must be float32 [%lld], got %s %s", (long long)N, dt_str(s->dtype), shape_str(s));
  int64_t sh[2] = {d->shape[0], N};
  *out = ttype(DT_F32, 2, sh);
  return 0;
}

static Tensor *compute_dense_vnni(GNode *n, Tensor **ins, const Strategy *st) {
  (void)n, (void)st;
  return topi_x86_dense_vnni(ins[0], ins[1], ins[2], ins[3], NULL);
}

/* ---- the int8 convolution ---- */

static void conv_attrs(GNode *n, int st[2], int pad[4], int dl[2]) {
  strategy_attr_ints2(n, "strides", 1, st);
  strategy_attr_ints2(n, "dilation", 1, dl);
  strategy_attr_pads4(n, pad);
}

/* The output rows and columns of a conv over H x W with a KH x KW kernel. */
static int conv_out(GNode *n, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t *OH, int64_t *OW) {
  int st[2], pad[4], dl[2];
  conv_attrs(n, st, pad, dl);
  if (st[0] < 1 || st[1] < 1 || dl[0] < 1 || dl[1] < 1) return kiln_set_error("strides and dilation must be positive");
  int64_t za = gattr_int(&n->attrs, "input_zero_point", 0);
  if (za < 0 || za > 255) return kiln_set_error("input_zero_point %lld is not a uint8 value", (long long)za);
  *OH = (H + pad[0] + pad[2] - ((KH - 1) * dl[0] + 1)) / st[0] + 1;
  *OW = (W + pad[1] + pad[3] - ((KW - 1) * dl[1] + 1)) / st[1] + 1;
  if (*OH < 1 || *OW < 1) return kiln_set_error("the kernel window is larger than the padded input");
  return 0;
}

static int check_requant(const TType *c, const TType *s, int64_t O) {
  if (c && (c->ndim != 1 || c->shape[0] != O || !dt_eq(c->dtype, DT_I32)))
    return kiln_set_error("the compensation must be int32 [%lld], got %s %s", (long long)O, dt_str(c->dtype), shape_str(c));
  if (s->ndim != 1 || s->shape[0] != O || !dt_eq(s->dtype, DT_F32))
    return kiln_set_error("the scale must be float32 [%lld], got %s %s", (long long)O, dt_str(s->dtype), shape_str(s));
  return 0;
}

/* An int8 conv's compensation: its third input of four; with three (the
 * input zero point 0) there is none. */
static const TType *conv_comp_type(GNode *n) { return n->nargs == 4 ? arg_type(n, 2) : NULL; }

static int infer_conv_int8(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *k = arg_type(n, 1);
  if (d->ndim != 4 || !dt_eq(d->dtype, DT_U8)) return kiln_set_error("data must be uint8 NCHW, got %s %s", dt_str(d->dtype), shape_str(d));
  if (k->ndim != 4 || !dt_eq(k->dtype, DT_I8) || k->shape[1] != d->shape[1])
    return kiln_set_error("weight must be int8 OIHW with %lld input channels, got %s %s", (long long)d->shape[1],
                          dt_str(k->dtype), shape_str(k));
  if (check_requant(conv_comp_type(n), arg_type(n, n->nargs - 1), k->shape[0])) return -1;
  int64_t OH, OW;
  if (conv_out(n, d->shape[2], d->shape[3], k->shape[2], k->shape[3], &OH, &OW)) return -1;
  *out = ttype(DT_F32, 4, (int64_t[]){d->shape[0], k->shape[0], OH, OW});
  return 0;
}

/* The plain NCHW reference: the input padded with the zero point, int32
 * products summed, then (acc - comp[o]) * scale[o]. */
static Tensor *compute_conv_int8(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  Tensor *x = ins[0], *w = ins[1];
  int s[2], pad[4], dl[2];
  conv_attrs(n, s, pad, dl);
  int64_t za = gattr_int(&n->attrs, "input_zero_point", 0), H = te_dim(x, 2), W = te_dim(x, 3);
  Expr **v = te_axis_vars(4, NULL);
  Expr *in = ir_and(ir_and(ir_ge(v[2], ir_i32(pad[0])), ir_lt(v[2], ir_i32(H + pad[0]))),
                    ir_and(ir_ge(v[3], ir_i32(pad[1])), ir_lt(v[3], ir_i32(W + pad[1]))));
  Expr *rd = te_read4(x, v[0], v[1], ir_sub(v[2], ir_i32(pad[0])), ir_sub(v[3], ir_i32(pad[1])));
  Tensor *xp = te_compute("data_pad", 4,
                          (Expr *[]){x->shape[0], x->shape[1], ir_i32(H + pad[0] + pad[2]), ir_i32(W + pad[1] + pad[3])}, v,
                          ir_select(in, rd, ir_const((double)za, DT_U8)), "injective");
  if (!xp) return NULL;
  IterVar *ic = te_reduce_axis_c(te_dim(w, 1), "ic"), *kh = te_reduce_axis_c(te_dim(w, 2), "kh"),
          *kw = te_reduce_axis_c(te_dim(w, 3), "kw");
  v = te_axis_vars(4, (const char *[]){"n", "oc", "oh", "ow"});
  Expr *ih = ir_add(ir_mul(v[2], ir_i32(s[0])), ir_mul(kh->var, ir_i32(dl[0])));
  Expr *iw = ir_add(ir_mul(v[3], ir_i32(s[1])), ir_mul(kw->var, ir_i32(dl[1])));
  Expr *prod = ir_mul(ir_cast(DT_I32, te_read4(xp, v[0], ic->var, ih, iw)), ir_cast(DT_I32, te_read4(w, v[1], ic->var, kh->var, kw->var)));
  Expr *shape[4] = {x->shape[0], w->shape[0], ir_i32(te_dim(x, 2)), ir_i32(0)};
  int64_t OH, OW;
  if (conv_out(n, H, W, te_dim(w, 2), te_dim(w, 3), &OH, &OW)) return NULL;
  shape[2] = ir_i32(OH), shape[3] = ir_i32(OW);
  Tensor *acc = te_compute("conv2d_int8", 4, shape, v, ir_sum(prod, 3, (IterVar *[]){ic, kh, kw}), "conv2d_int8");
  if (!acc) return NULL;
  v = te_axis_vars(4, NULL);
  Expr *sum = te_read(acc, 4, v);
  Expr *q = ir_cast(DT_F32, n->nargs == 4 ? ir_sub(sum, te_read1(ins[2], v[1])) : sum);
  return te_compute("T_requant", 4, acc->shape, v, ir_mul(q, te_read1(ins[n->nargs - 1], v[1])), "broadcast");
}

static int infer_conv_weight_pack(GNode *n, TType *out) {
  const TType *w = arg_type(n, 0);
  int64_t ib = gattr_int(&n->attrs, "ic_block", 0), ob = gattr_int(&n->attrs, "oc_block", 0);
  if (w->ndim != 4 || !dt_eq(w->dtype, DT_I8)) return kiln_set_error("kernel must be int8 OIHW, got %s %s", dt_str(w->dtype), shape_str(w));
  if (ib < 4 || ib % 4 || ob < 1 || w->shape[1] % ib || w->shape[0] % ob)
    return kiln_set_error("ic_block = %lld (a multiple of 4) and oc_block = %lld must divide the kernel %s's input and "
                          "output channels",
                          (long long)ib, (long long)ob, shape_str(w));
  *out = ttype(DT_U32, 6, (int64_t[]){w->shape[0] / ob, w->shape[1] / ib, w->shape[2], w->shape[3], ib / 4, ob});
  return 0;
}

static Tensor *compute_conv_weight_pack(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_x86_pack_kernel_int8(ins[0], gattr_int(&n->attrs, "ic_block", 0), gattr_int(&n->attrs, "oc_block", 0));
}

static int infer_conv_nchwc_int8(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *k = arg_type(n, 1);
  if (d->ndim != 5 || !dt_eq(d->dtype, DT_U8)) return kiln_set_error("data must be uint8 NCHW[x]c, got %s %s", dt_str(d->dtype), shape_str(d));
  if (k->ndim != 6 || !dt_eq(k->dtype, DT_U32) || k->shape[1] != d->shape[1] || k->shape[4] * 4 != d->shape[4])
    return kiln_set_error("kernel must be int8 quadruples packed as uint32 [OC/ocb, IC/icb, KH, KW, icb/4, ocb] "
                          "(nn.contrib_conv2d_int8_weight_pack) matching data %s, got %s %s",
                          shape_str(d), dt_str(k->dtype), shape_str(k));
  if (check_requant(conv_comp_type(n), arg_type(n, n->nargs - 1), k->shape[0] * k->shape[5])) return -1;
  int64_t OH, OW;
  if (conv_out(n, d->shape[2], d->shape[3], k->shape[2], k->shape[3], &OH, &OW)) return -1;
  *out = ttype(DT_F32, 5, (int64_t[]){d->shape[0], k->shape[0], OH, OW, k->shape[5]});
  return 0;
}

static Tensor *compute_conv_nchwc_int8(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int s[2], pad[4], dl[2];
  conv_attrs(n, s, pad, dl);
  return topi_x86_conv2d_NCHWc_int8(ins[0], ins[1], n->nargs == 4 ? ins[2] : NULL, ins[n->nargs - 1], s, pad, dl,
                                    (int)gattr_int(&n->attrs, "input_zero_point", 0));
}

const OpDef ops_int8[] = {
    {"qnn.dequantize", 2, 3, PAT_BROADCAST, infer_dequantize, compute_dequantize, NULL,
     "data, input_scale, input_zero_point, axis=1", OP_QNN_DEQUANTIZE},
    {"nn.contrib_dense_vnni_weight_pack", 1, 1, PAT_OPAQUE, infer_weight_pack, compute_weight_pack, NULL, "weight, block=16"},
    {"nn.contrib_dense_vnni", 4, 4, PAT_OUT_ELEMWISE_FUSABLE, infer_dense_vnni, compute_dense_vnni, strategy_dense_vnni,
     "data, weight, compensation, scale", OP_DENSE_VNNI},
    {"nn.contrib_conv2d_int8", 3, 4, PAT_OPAQUE, infer_conv_int8, compute_conv_int8, NULL,
     "data, weight, compensation, scale, strides=(1, 1), padding=(0, 0), dilation=(1, 1), input_zero_point=0",
     OP_CONV2D_INT8},
    {"nn.contrib_conv2d_int8_weight_pack", 1, 1, PAT_OPAQUE, infer_conv_weight_pack, compute_conv_weight_pack, NULL,
     "kernel, ic_block=16, oc_block=16"},
    {"nn.contrib_conv2d_NCHWc_int8", 3, 4, PAT_OUT_ELEMWISE_FUSABLE, infer_conv_nchwc_int8, compute_conv_nchwc_int8,
     strategy_conv2d_int8, NULL, OP_CONV2D_NCHWC_INT8},
    {NULL},
};
