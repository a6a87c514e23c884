/*
 * bf16.c - the op rows of `--precision bf16` (docs/bf16.md): a dense layer
 * whose weight is bfloat16 pairs packed for dense_pack_bf16.x86, and the
 * op that packs a float32 weight so (alter_layout makes it; fold_constant
 * evaluates it at compile time, so the module stores the bfloat16 weight).
 *
 *   nn.contrib_dense_bf16_weight_pack  weight float32 [N, K], block=bn
 *                                      -> uint32 [N/bn, ceil(K/2), bn]
 *   nn.contrib_dense_pack_bf16         data float32 [M, K], that weight
 *                                      -> float32 [M, N]
 *   nn.contrib_conv2d_bf16_weight_pack kernel float32 OIHW, ic_block (even),
 *                                      oc_block -> uint32 [OC/ocb, IC/icb,
 *                                      KH, KW, icb/2, ocb]
 *   nn.contrib_conv2d_NCHWc_bf16       data float32 NCHW[icb]c, that kernel,
 *                                      strides, padding, dilation (the
 *                                      attributes of nn.contrib_conv2d_NCHWc)
 *                                      -> float32 NCHW[ocb]c
 *   nn.contrib_conv2d_winograd_bf16_weight_transform
 *                                      kernel float32 OIHW 3x3, ic_block
 *                                      (even), oc_block -> G g G^T of
 *                                      F(2x2, 3x3) in bfloat16 pairs, uint32
 *                                      [4, 4, OC/ocb, IC/2, ocb]
 *   nn.contrib_conv2d_winograd_NCHWc_bf16
 *                                      data float32 NCHW[icb]c, that kernel,
 *                                      padding (stride and dilation 1)
 *                                      -> float32 NCHW[ocb]c
 */
#include "../../topi/topi.h"
#include "../backend/strategy.h"
#include "util.h"

static int infer_weight_pack(GNode *n, TType *out) {
  const TType *w = arg_type(n, 0);
  int64_t bn = gattr_int(&n->attrs, "block", 0);
  if (w->ndim != 2 || !dt_eq(w->dtype, DT_F32)) return kiln_set_error("weight must be float32 [N, K], got %s %s", dt_str(w->dtype), shape_str(w));
  if (bn < 1 || w->shape[0] % bn)
    return kiln_set_error("block = %lld must be positive and divide N = %lld", (long long)bn, (long long)w->shape[0]);
  int64_t s[3] = {w->shape[0] / bn, (w->shape[1] + 1) / 2, bn};
  *out = ttype(DT_U32, 3, s);
  return 0;
}

static Tensor *compute_weight_pack(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_x86_pack_dense_weight_bf16(ins[0], gattr_int(&n->attrs, "block", 0));
}

static int infer_dense_pack_bf16(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  if (d->ndim != 2 || !dt_eq(d->dtype, DT_F32)) return kiln_set_error("data must be float32 [M, K], got %s %s", dt_str(d->dtype), shape_str(d));
  if (w->ndim != 3 || !dt_eq(w->dtype, DT_U32))
    return kiln_set_error("weight must be bfloat16 pairs packed as uint32 [N/bn, ceil(K/2), bn] "
                          "(nn.contrib_dense_bf16_weight_pack), got %s %s",
                          dt_str(w->dtype), shape_str(w));
  if (w->shape[1] != (d->shape[1] + 1) / 2)
    return kiln_set_error("data %s has K = %lld, the packed weight %s holds %lld pairs", shape_str(d), (long long)d->shape[1],
                          shape_str(w), (long long)w->shape[1]);
  int64_t s[2] = {d->shape[0], w->shape[0] * w->shape[2]};
  *out = ttype(DT_F32, 2, s);
  return 0;
}

static Tensor *compute_dense_pack_bf16(GNode *n, Tensor **ins, const Strategy *st) {
  (void)n;
  /* without a config (a generic schedule), the vdpbf16ps form */
  int fma = st && st->config ? topi_x86_dense_bf16_dot_is_fma(st->config) : 0;
  if (fma < 0) return NULL;
  return topi_x86_dense_pack_bf16(ins[0], ins[1], NULL, fma);
}

static int infer_conv_weight_pack(GNode *n, TType *out) {
  const TType *w = arg_type(n, 0);
  int64_t ib = gattr_int(&n->attrs, "ic_block", 0), ob = gattr_int(&n->attrs, "oc_block", 0);
  if (w->ndim != 4 || !dt_eq(w->dtype, DT_F32)) return kiln_set_error("kernel must be float32 OIHW, got %s %s", dt_str(w->dtype), shape_str(w));
  if (ib < 2 || ib % 2 || ob < 1 || w->shape[1] % ib || w->shape[0] % ob)
    return kiln_set_error("ic_block = %lld (even) and oc_block = %lld must divide the kernel %s's input and output channels",
                          (long long)ib, (long long)ob, shape_str(w));
  int64_t s[6] = {w->shape[0] / ob, w->shape[1] / ib, w->shape[2], w->shape[3], ib / 2, ob};
  *out = ttype(DT_U32, 6, s);
  return 0;
}

static Tensor *compute_conv_weight_pack(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_x86_pack_kernel_bf16(ins[0], gattr_int(&n->attrs, "ic_block", 0), gattr_int(&n->attrs, "oc_block", 0));
}

static void conv_attrs(GNode *n, int st[2], int pad[4], int dl[2]) {
  strategy_attr_ints2(n, "strides", 1, st);
  strategy_attr_ints2(n, "dilation", 1, dl);
  strategy_attr_pads4(n, pad);
}

static int infer_conv_bf16(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *k = arg_type(n, 1);
  if (d->ndim != 5 || !dt_eq(d->dtype, DT_F32)) return kiln_set_error("data must be float32 NCHW[x]c, got %s %s", dt_str(d->dtype), shape_str(d));
  if (k->ndim != 6 || !dt_eq(k->dtype, DT_U32) || k->shape[1] != d->shape[1] || k->shape[4] * 2 != d->shape[4])
    return kiln_set_error("kernel must be bfloat16 pairs packed as uint32 [OC/ocb, IC/icb, KH, KW, icb/2, ocb] "
                          "(nn.contrib_conv2d_bf16_weight_pack) matching data %s, got %s %s",
                          shape_str(d), dt_str(k->dtype), shape_str(k));
  int st[2], pad[4], dl[2];
  conv_attrs(n, st, pad, dl);
  if (st[0] < 1 || st[1] < 1 || dl[0] < 1 || dl[1] < 1) return kiln_set_error("strides and dilation must be positive");
  int64_t OH = (d->shape[2] + pad[0] + pad[2] - ((k->shape[2] - 1) * dl[0] + 1)) / st[0] + 1;
  int64_t OW = (d->shape[3] + pad[1] + pad[3] - ((k->shape[3] - 1) * dl[1] + 1)) / st[1] + 1;
  if (OH < 1 || OW < 1) return kiln_set_error("the kernel window is larger than the padded input");
  int64_t s[5] = {d->shape[0], k->shape[0], OH, OW, k->shape[5]};
  *out = ttype(DT_F32, 5, s);
  return 0;
}

static Tensor *compute_conv_bf16(GNode *n, Tensor **ins, const Strategy *st) {
  int s[2], pad[4], dl[2];
  conv_attrs(n, s, pad, dl);
  int fma = st && st->config ? topi_x86_conv_bf16_dot_is_fma(st->config) : 0;
  if (fma < 0) return NULL;
  return topi_x86_conv2d_NCHWc_bf16(ins[0], ins[1], s, pad, dl, fma);
}

static int infer_winograd_weight_bf16(GNode *n, TType *out) {
  const TType *w = arg_type(n, 0);
  if (w->ndim != 4 || w->shape[2] != 3 || w->shape[3] != 3)
    return kiln_set_error("kernel must be float32 OIHW 3x3, got %s %s", dt_str(w->dtype), shape_str(w));
  if (infer_conv_weight_pack(n, out)) return -1;
  int64_t ob = out->shape[5], s[5] = {4, 4, w->shape[0] / ob, w->shape[1] / 2, ob};
  *out = ttype(DT_U32, 5, s);
  return 0;
}

static Tensor *compute_winograd_weight_bf16(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_x86_winograd_weight_transform_bf16(ins[0], gattr_int(&n->attrs, "ic_block", 0),
                                                 gattr_int(&n->attrs, "oc_block", 0));
}

static int infer_conv_winograd_bf16(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *k = arg_type(n, 1);
  if (d->ndim != 5 || !dt_eq(d->dtype, DT_F32) || d->shape[4] % 2)
    return kiln_set_error("data must be float32 NCHW[x]c with an even block, got %s %s", dt_str(d->dtype), shape_str(d));
  if (k->ndim != 5 || !dt_eq(k->dtype, DT_U32) || k->shape[0] != 4 || k->shape[1] != 4 ||
      k->shape[3] * 2 != d->shape[1] * d->shape[4])
    return kiln_set_error("kernel must be bfloat16 pairs packed as uint32 [4, 4, OC/ocb, IC/2, ocb] "
                          "(nn.contrib_conv2d_winograd_bf16_weight_transform) matching data %s, got %s %s",
                          shape_str(d), dt_str(k->dtype), shape_str(k));
  int st[2], pad[4], dl[2];
  conv_attrs(n, st, pad, dl);
  if (st[0] != 1 || st[1] != 1 || dl[0] != 1 || dl[1] != 1) return kiln_set_error("a Winograd convolution needs strides and dilation 1");
  int64_t OH = d->shape[2] + pad[0] + pad[2] - 2, OW = d->shape[3] + pad[1] + pad[3] - 2;
  if (OH < 1 || OW < 1) return kiln_set_error("the 3x3 window is larger than the padded input");
  int64_t s[5] = {d->shape[0], k->shape[2], OH, OW, k->shape[4]};
  *out = ttype(DT_F32, 5, s);
  return 0;
}

static Tensor *compute_conv_winograd_bf16(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int s[2], pad[4], dl[2];
  conv_attrs(n, s, pad, dl);
  return topi_x86_conv2d_winograd_NCHWc_bf16(ins[0], ins[1], pad);
}

const OpDef ops_bf16[] = {
    {"nn.contrib_dense_bf16_weight_pack", 1, 1, PAT_OPAQUE, infer_weight_pack, compute_weight_pack, NULL, "weight, block=16"},
    {"nn.contrib_dense_pack_bf16", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_dense_pack_bf16, compute_dense_pack_bf16,
     strategy_dense_bf16},
    {"nn.contrib_conv2d_bf16_weight_pack", 1, 1, PAT_OPAQUE, infer_conv_weight_pack, compute_conv_weight_pack, NULL,
     "kernel, ic_block=16, oc_block=16"},
    {"nn.contrib_conv2d_NCHWc_bf16", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv_bf16, compute_conv_bf16, strategy_conv2d_bf16},
    {"nn.contrib_conv2d_winograd_bf16_weight_transform", 1, 1, PAT_OPAQUE, infer_winograd_weight_bf16,
     compute_winograd_weight_bf16, NULL, "kernel, ic_block=16, oc_block=16"},
    {"nn.contrib_conv2d_winograd_NCHWc_bf16", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv_winograd_bf16,
     compute_conv_winograd_bf16, strategy_conv2d_winograd_bf16},
    {NULL},
};
