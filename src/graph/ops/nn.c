/*
 * nn.c - op-table rows for neural-network ops: convolutions (NCHW and
 * NCHW[x]c), dense and matmul, pooling, softmax, normalizations, dropout.
 *
 * The Winograd pair (nn.contrib_conv2d_winograd_weight_transform, folded
 * at compile time, and nn.contrib_conv2d_winograd_NCHWc) is what
 * alter_layout makes of a 3x3 stride-1 conv2d that takes Winograd.
 *
 * Attribute conventions follow Relay: strides/dilation [h, w], padding
 * [top, left, bottom, right], pool_size [h, w], layout strings such as
 * "NCHW" or "NCHW16c" (block size after the channel dimension).
 */
#include "util.h"

#include <stdlib.h>
#include <string.h>

#include "compute.h"

/* "NCHW" -> 0; "NCHW16c" -> 16; anything else -> -1 + error */
static int layout_block(const char *layout) {
  if (!strcmp(layout, "NCHW")) return 0;
  if (!strncmp(layout, "NCHW", 4)) {
    char *end;
    long b = strtol(layout + 4, &end, 10);
    if (b > 0 && !strcmp(end, "c")) return (int)b;
  }
  return kiln_set_error("unsupported layout '%s' (expected NCHW or NCHW<n>c)", layout);
}

/* Window attributes (strides, dilation, padding, pool size, output
 * padding) enter index arithmetic that generated code does in 32 bits,
 * and the shape formulas multiply two of them: a value beyond 2^31 - 1 is
 * an error, which also keeps those products within 64 bits. */
static int check_window_attr(const char *key, int64_t v) {
  if (v > GRAPH_MAX_ELEMS || v < -GRAPH_MAX_ELEMS)
    return kiln_set_error("attribute '%s' = %lld is beyond +-(2^31 - 1), which generated code's 32-bit index "
                          "arithmetic reaches; fix the attribute", key, (long long)v);
  return 0;
}

static int get2(GNode *n, const char *key, int64_t d, int64_t out[2]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, key, &v);
  if (k == 0) {
    out[0] = out[1] = d;
    return 0;
  }
  if (k == 1) {
    out[0] = out[1] = v[0];
    return check_window_attr(key, v[0]);
  }
  if (k != 2) return kiln_set_error("attribute '%s' has %d values, expected 2", key, k);
  out[0] = v[0];
  out[1] = v[1];
  return check_window_attr(key, v[0]) || check_window_attr(key, v[1]) ? -1 : 0;
}

static int get_pad4(GNode *n, int64_t out[4]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, "padding", &v);
  if (k == 0) {
    out[0] = out[1] = out[2] = out[3] = 0;
  } else if (k == 1) {
    out[0] = out[1] = out[2] = out[3] = v[0];
  } else if (k == 2) {
    out[0] = out[2] = v[0];
    out[1] = out[3] = v[1];
  } else if (k == 4) {
    for (int i = 0; i < 4; i++) out[i] = v[i];
  } else
    return kiln_set_error("attribute 'padding' has %d values, expected 4 (top, left, bottom, right)", k);
  for (int i = 0; i < 4; i++) {
    if (out[i] < 0) return kiln_set_error("negative padding %lld", (long long)out[i]);
    if (check_window_attr("padding", out[i])) return -1;
  }
  return 0;
}

/* Output extent of a sliding window. */
static int window_out(const char *what, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pa,
                      bool ceil_mode, int64_t *out) {
  if (s <= 0 || d <= 0 || k <= 0) return kiln_set_error("%s: stride, dilation and window must be positive", what);
  int64_t ek = (k - 1) * d + 1, span = in + pb + pa - ek;
  if (span < 0)
    return kiln_set_error("%s: window %lld (dilated) is larger than the padded input %lld", what, (long long)ek,
                          (long long)(in + pb + pa));
  int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  /* ceil mode: the last window must start inside the input or left padding */
  if (ceil_mode && (o - 1) * s >= in + pb) o--;
  *out = o;
  return 0;
}

static int infer_conv2d(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  const char *layout = gattr_str(&n->attrs, "data_layout", "NCHW");
  int blk = layout_block(layout);
  if (blk < 0) return -1;
  int64_t st[2], dl[2], pad[4];
  if (get2(n, "strides", 1, st) || get2(n, "dilation", 1, dl) || get_pad4(n, pad)) return -1;
  int64_t groups = gattr_int(&n->attrs, "groups", 1);
  int64_t N, C, H, W, O, KH, KW, I;
  if (blk == 0) {
    if (d->ndim != 4) return kiln_set_error("data has rank %d, expected 4 (NCHW)", d->ndim);
    if (w->ndim != 4) return kiln_set_error("weight has rank %d, expected 4 (OIHW)", w->ndim);
    N = d->shape[0], C = d->shape[1], H = d->shape[2], W = d->shape[3];
    O = w->shape[0], I = w->shape[1], KH = w->shape[2], KW = w->shape[3];
  } else {
    if (d->ndim != 5 || d->shape[4] != blk) return kiln_set_error("data has shape %s, expected %s", shape_str(d), layout);
    if (w->ndim != 6) return kiln_set_error("weight has rank %d, expected 6 (OIHW[x]i[y]o)", w->ndim);
    N = d->shape[0], C = d->shape[1] * blk, H = d->shape[2], W = d->shape[3];
    O = w->shape[0] * w->shape[5], I = w->shape[1] * w->shape[4], KH = w->shape[2], KW = w->shape[3];
    if (groups > 1) I = w->shape[1] * w->shape[4]; /* depthwise NCHWc weights: [O/oc, 1, KH, KW, 1, oc] */
  }
  /* a blocked grouped conv may read its input in a block its kernel's
   * input block divides, and read only the first I x groups channels of
   * it (the rest alter_layout's padding; group_conv2d_NCHWc's repack) */
  if (blk > 0 && groups > 1 && w->ndim == 6 && w->shape[4] > 1 && blk % w->shape[4] == 0 && I * groups < C &&
      C - I * groups < blk)
    C = I * groups;
  /* a paired-group weight (group_conv2d_NCHWc.x86's group_pair: two
   * groups in whole vectors) holds an odd group count's added zero group
   * (the node keeps the real channels: 'kept_channels') */
  int64_t wg = groups > 1 && gattr_int(&n->attrs, "group_pair", 0) ? groups + groups % 2 : groups;
  if (groups <= 0 || C % groups || O % wg)
    return kiln_set_error("groups = %lld must divide input channels %lld and output channels %lld", (long long)groups,
                          (long long)C, (long long)O);
  if (I * groups != C)
    return kiln_set_error("weight %s expects %lld input channels (x %lld groups), data %s has %lld", shape_str(w),
                          (long long)I, (long long)groups, shape_str(d), (long long)C);
  /* a blocked grouped conv whose weight holds more output channels a group
   * than it keeps (group_conv2d_NCHWc.x86's group_pad: zero weights pad
   * each group's channels to whole vectors) says how many it keeps in
   * 'kept_channels' */
  int64_t keep = blk > 0 && groups > 1 ? gattr_int(&n->attrs, "kept_channels", 0) : 0;
  if (keep > 0 && keep != O) {
    if (keep % groups || keep > O)
      return kiln_set_error("attribute 'kept_channels' = %lld must be a multiple of groups = %lld and at most the "
                            "weight's %lld output channels",
                            (long long)keep, (long long)groups, (long long)O);
    O = keep;
  }
  int64_t OH = 0, OW = 0;
  if (window_out("conv2d height", H, KH, st[0], dl[0], pad[0], pad[2], false, &OH) ||
      window_out("conv2d width", W, KW, st[1], dl[1], pad[1], pad[3], false, &OW))
    return -1;
  const char *odt = gattr_str(&n->attrs, "out_dtype", "");
  DType dt = d->dtype;
  if (*odt && dt_parse(odt, &dt)) return -1;
  const char *olayout = gattr_str(&n->attrs, "out_layout", layout);
  int oblk = *olayout ? layout_block(olayout) : blk;
  if (oblk < 0) return -1;
  if (oblk == 0) {
    int64_t s[4] = {N, O, OH, OW};
    *out = ttype(dt, 4, s);
  } else {
    if (O % oblk) return kiln_set_error("output channels %lld are not a multiple of the block %d", (long long)O, oblk);
    int64_t s[5] = {N, O / oblk, OH, OW, oblk};
    *out = ttype(dt, 5, s);
  }
  return 0;
}

/* OIHW 3x3 weight -> the Winograd kernel transform [alpha, alpha, O/ob,
 * I, ob] (tile_size m, alpha = m + 2; out_block ob). */
static int infer_winograd_weight(GNode *n, TType *out) {
  const TType *w = arg_type(n, 0);
  int64_t m = gattr_int(&n->attrs, "tile_size", 0), ob = gattr_int(&n->attrs, "out_block", 0);
  if (w->ndim != 4 || w->shape[2] != 3 || w->shape[3] != 3)
    return kiln_set_error("weight has shape %s, expected OIHW with a 3x3 window", shape_str(w));
  if (m != 2 && m != 4) return kiln_set_error("attribute 'tile_size' is %lld, expected 2 or 4", (long long)m);
  if (ob < 1 || w->shape[0] % ob)
    return kiln_set_error("attribute 'out_block' %lld must divide the %lld output channels", (long long)ob,
                          (long long)w->shape[0]);
  if (!dt_is_float(w->dtype)) return err_dtype(n, 0, "a floating-point type");
  int64_t s[5] = {m + 2, m + 2, w->shape[0] / ob, w->shape[1], ob};
  *out = ttype(w->dtype, 5, s);
  return 0;
}

/* data NCHW[x]c, weight [alpha, alpha, O/ob, I, ob] (transformed) ->
 * NCHW[ob]c: a 3x3, stride 1, dilation 1 convolution by Winograd. */
static int infer_conv2d_winograd(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  int blk = layout_block(gattr_str(&n->attrs, "data_layout", "NCHW"));
  if (blk < 0) return -1;
  if (blk == 0 || d->ndim != 5 || d->shape[4] != blk)
    return kiln_set_error("data has shape %s, expected NCHW[x]c with the block of data_layout", shape_str(d));
  int64_t m = gattr_int(&n->attrs, "tile_size", 0), st[2], dl[2], pad[4];
  if (get2(n, "strides", 1, st) || get2(n, "dilation", 1, dl) || get_pad4(n, pad)) return -1;
  if (st[0] != 1 || st[1] != 1 || dl[0] != 1 || dl[1] != 1 || gattr_int(&n->attrs, "groups", 1) != 1)
    return kiln_set_error("a Winograd convolution needs strides 1, dilation 1 and groups 1");
  if (w->ndim != 5 || w->shape[0] != m + 2 || w->shape[1] != m + 2)
    return kiln_set_error("weight has shape %s, expected [%lld, %lld, O/ob, I, ob] for tile size %lld", shape_str(w),
                          (long long)(m + 2), (long long)(m + 2), (long long)m);
  int64_t C = d->shape[1] * blk, O = w->shape[2] * w->shape[4];
  if (w->shape[3] != C)
    return kiln_set_error("weight %s expects %lld input channels, data %s has %lld", shape_str(w),
                          (long long)w->shape[3], shape_str(d), (long long)C);
  int64_t OH = d->shape[2] + pad[0] + pad[2] - 2, OW = d->shape[3] + pad[1] + pad[3] - 2;
  if (OH < 1 || OW < 1) return kiln_set_error("the 3x3 window is larger than the padded input");
  int oblk = layout_block(gattr_str(&n->attrs, "out_layout", "NCHW"));
  if (oblk < 0) return -1;
  if (oblk != w->shape[4])
    return kiln_set_error("out_layout block %d differs from the weight's output block %lld", oblk,
                          (long long)w->shape[4]);
  int64_t s[5] = {d->shape[0], O / oblk, OH, OW, oblk};
  *out = ttype(d->dtype, 5, s);
  return 0;
}

static int infer_conv2d_transpose(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  if (d->ndim != 4) return kiln_set_error("data has rank %d, expected 4 (NCHW)", d->ndim);
  if (w->ndim != 4) return kiln_set_error("weight has rank %d, expected 4 (IOHW)", w->ndim);
  int64_t st[2], dl[2], pad[4], op[2];
  if (get2(n, "strides", 1, st) || get2(n, "dilation", 1, dl) || get_pad4(n, pad) || get2(n, "output_padding", 0, op))
    return -1;
  int64_t groups = gattr_int(&n->attrs, "groups", 1);
  if (w->shape[0] != d->shape[1])
    return kiln_set_error("weight %s expects %lld input channels, data %s has %lld", shape_str(w), (long long)w->shape[0],
                          shape_str(d), (long long)d->shape[1]);
  if (groups <= 0 || d->shape[1] % groups) return kiln_set_error("groups = %lld must divide the input channels", (long long)groups);
  int64_t O = w->shape[1] * groups;
  int64_t OH = (d->shape[2] - 1) * st[0] - pad[0] - pad[2] + dl[0] * (w->shape[2] - 1) + op[0] + 1;
  int64_t OW = (d->shape[3] - 1) * st[1] - pad[1] - pad[3] + dl[1] * (w->shape[3] - 1) + op[1] + 1;
  if (OH <= 0 || OW <= 0) return kiln_set_error("output size %lldx%lld is not positive", (long long)OH, (long long)OW);
  int64_t s[4] = {d->shape[0], O, OH, OW};
  *out = ttype(d->dtype, 4, s);
  return 0;
}

static int infer_dense(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  if (d->ndim < 1) return kiln_set_error("data must have rank >= 1");
  if (w->ndim != 2) return kiln_set_error("weight has rank %d, expected 2 ([units, in])", w->ndim);
  if (d->shape[d->ndim - 1] != w->shape[1])
    return kiln_set_error("data %s has %lld features, weight %s expects %lld", shape_str(d), (long long)d->shape[d->ndim - 1],
                          shape_str(w), (long long)w->shape[1]);
  *out = *d;
  out->shape[d->ndim - 1] = w->shape[0];
  return 0;
}

/* NumPy matmul: [..., M, K] x [..., K, N] with 1-D operands promoted. */
/* data [M, K] x packed weight [N / bn, K, bn] -> [M, N] */
static int infer_dense_pack(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  if (d->ndim != 2 || w->ndim != 3) return kiln_set_error("dense_pack takes data [M, K] and packed weight [N/bn, K, bn]");
  if (d->shape[1] != w->shape[1]) return kiln_set_error("data %s and packed weight %s disagree on K", shape_str(d), shape_str(w));
  int64_t s[2] = {d->shape[0], w->shape[0] * w->shape[2]};
  *out = ttype(d->dtype, 2, s);
  return 0;
}

static int infer_matmul(GNode *n, TType *out) {
  TType a = *arg_type(n, 0), b = *arg_type(n, 1);
  if (!dt_eq(a.dtype, b.dtype)) return kiln_set_error("inputs have different types: %s and %s", dt_str(a.dtype), dt_str(b.dtype));
  if (a.ndim < 1 || b.ndim < 1) return kiln_set_error("matmul operands must have rank >= 1");
  /* transpose_a / transpose_b: that operand's last two dimensions swapped */
  TType *t[2] = {&a, &b};
  const char *flag[2] = {"transpose_a", "transpose_b"};
  for (int i = 0; i < 2; i++) {
    if (!gattr_int(&n->attrs, flag[i], 0)) continue;
    if (t[i]->ndim < 2) return kiln_set_error("%s needs an operand of rank >= 2, got %s", flag[i], shape_str(arg_type(n, i)));
    int64_t s = t[i]->shape[t[i]->ndim - 1];
    t[i]->shape[t[i]->ndim - 1] = t[i]->shape[t[i]->ndim - 2];
    t[i]->shape[t[i]->ndim - 2] = s;
  }
  bool a1 = a.ndim == 1, b1 = b.ndim == 1;
  if (a1) {
    a.shape[1] = a.shape[0];
    a.shape[0] = 1;
    a.ndim = 2;
  }
  if (b1) {
    b.shape[1] = 1;
    b.ndim = 2;
  }
  int64_t K = a.shape[a.ndim - 1];
  if (b.shape[b.ndim - 2] != K)
    return kiln_set_error("shapes %s and %s: inner dimensions %lld and %lld differ", shape_str(arg_type(n, 0)),
                          shape_str(arg_type(n, 1)), (long long)K, (long long)b.shape[b.ndim - 2]);
  TType ba = a, bb = b, bo;
  ba.ndim -= 2;
  bb.ndim -= 2;
  if (bcast_shapes(&ba, &bb, &bo)) return -1;
  TType r = bo;
  r.dtype = a.dtype;
  if (!a1) r.shape[r.ndim++] = a.shape[a.ndim - 2];
  if (!b1) r.shape[r.ndim++] = b.shape[b.ndim - 1];
  if (r.ndim > GRAPH_MAX_DIMS) return kiln_set_error("matmul result has too many dimensions");
  *out = r;
  return 0;
}

static int infer_pool(GNode *n, TType *out, bool global) {
  const TType *d = arg_type(n, 0);
  const char *layout = gattr_str(&n->attrs, "layout", "NCHW");
  int blk = layout_block(layout);
  if (blk < 0) return -1;
  if ((blk == 0 && d->ndim != 4) || (blk > 0 && (d->ndim != 5 || d->shape[4] != blk)))
    return kiln_set_error("data has shape %s, expected layout %s", shape_str(d), layout);
  *out = *d;
  if (global) {
    out->shape[2] = out->shape[3] = 1;
    return 0;
  }
  int64_t ps[2], st[2], dl[2], pad[4];
  if (get2(n, "pool_size", 1, ps) || get2(n, "strides", 1, st) || get2(n, "dilation", 1, dl) || get_pad4(n, pad)) return -1;
  bool ceil_mode = gattr_int(&n->attrs, "ceil_mode", 0) != 0;
  if (pad[0] >= ps[0] * dl[0] && pad[0] > 0) return kiln_set_error("padding %lld is not smaller than the window", (long long)pad[0]);
  if (window_out("pool height", d->shape[2], ps[0], st[0], dl[0], pad[0], pad[2], ceil_mode, &out->shape[2]) ||
      window_out("pool width", d->shape[3], ps[1], st[1], dl[1], pad[1], pad[3], ceil_mode, &out->shape[3]))
    return -1;
  return 0;
}

static int infer_pool2d(GNode *n, TType *out) { return infer_pool(n, out, false); }
static int infer_global_pool2d(GNode *n, TType *out) { return infer_pool(n, out, true); }

static int infer_adaptive_pool2d(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  if (d->ndim != 4) return kiln_set_error("data has rank %d, expected 4 (NCHW)", d->ndim);
  int64_t os[2] = {0, 0};
  if (get2(n, "output_size", 1, os)) return -1;
  *out = *d;
  out->shape[2] = os[0];
  out->shape[3] = os[1];
  return 0;
}

static int infer_softmax(GNode *n, TType *out) {
  int ax;
  if (!dt_is_float(arg_type(n, 0)->dtype)) return err_dtype(n, 0, "a floating-point type");
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", -1), arg_type(n, 0)->ndim, &ax)) return -1;
  *out = *arg_type(n, 0);
  return 0;
}

static int check_vec(GNode *n, int arg, int64_t len, const char *what) {
  const TType *t = arg_type(n, arg);
  if (t->ndim != 1 || t->shape[0] != len)
    return kiln_set_error("%s has shape %s, expected (%lld,)", what, shape_str(t), (long long)len);
  return 0;
}

static int infer_batch_norm(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  int ax;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", 1), d->ndim, &ax)) return -1;
  static const char *names[] = {"", "gamma (scale)", "beta (bias)", "moving mean", "moving variance"};
  for (int i = 1; i < 5; i++)
    if (check_vec(n, i, d->shape[ax], names[i])) return -1;
  *out = *d;
  return 0;
}

static int infer_layer_norm(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  int ax;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", -1), d->ndim, &ax)) return -1;
  /* scale and bias broadcast against the normalized trailing dims */
  for (int i = 1; i < n->nargs; i++) {
    TType t;
    if (bcast_shapes(d, arg_type(n, i), &t) || !ttype_eq(&t, d))
      return kiln_set_error("input %d of shape %s does not broadcast to %s", i, shape_str(arg_type(n, i)), shape_str(d));
  }
  *out = *d;
  return 0;
}

static int infer_instance_norm(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  if (d->ndim < 3) return kiln_set_error("data has rank %d, expected at least 3 (N, C, ...)", d->ndim);
  if (check_vec(n, 1, d->shape[1], "scale") || check_vec(n, 2, d->shape[1], "bias")) return -1;
  *out = *d;
  return 0;
}

static int infer_lrn(GNode *n, TType *out) {
  if (arg_type(n, 0)->ndim < 3) return kiln_set_error("data must have rank >= 3");
  if (gattr_int(&n->attrs, "size", 0) <= 0) return kiln_set_error("attribute 'size' must be positive");
  *out = *arg_type(n, 0);
  return 0;
}

static int infer_identity(GNode *n, TType *out) {
  *out = *arg_type(n, 0);
  return 0;
}

/* data NCHW, weight [alpha, alpha, I, O] (the kernel transform, computed
 * at build time) -> NCHW: a GPU target's Winograd convolution (TVM's
 * contrib_conv2d_winograd_without_weight_transform; made by
 * passes/alter_layout_gpu.c). */
static int infer_conv2d_winograd_wowt(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  int64_t m = gattr_int(&n->attrs, "tile_size", 0), st[2] = {0, 0}, dl[2] = {0, 0}, pad[4] = {0, 0, 0, 0};
  if (get2(n, "strides", 1, st) || get2(n, "dilation", 1, dl) || get_pad4(n, pad)) return -1;
  if (st[0] != 1 || st[1] != 1 || dl[0] != 1 || dl[1] != 1 || gattr_int(&n->attrs, "groups", 1) != 1)
    return kiln_set_error("a Winograd convolution needs strides 1, dilation 1 and groups 1");
  if (d->ndim != 4) return kiln_set_error("data has shape %s, expected NCHW", shape_str(d));
  if (m != 2 && m != 4) return kiln_set_error("attribute 'tile_size' is %lld, expected 2 or 4", (long long)m);
  if (w->ndim != 4 || w->shape[0] != m + 2 || w->shape[1] != m + 2 || w->shape[2] != d->shape[1])
    return kiln_set_error("weight has shape %s, expected [%lld, %lld, %lld, O] (the kernel transform for tile size %lld "
                          "of data %s)",
                          shape_str(w), (long long)(m + 2), (long long)(m + 2), (long long)d->shape[1], (long long)m,
                          shape_str(d));
  int64_t OH = d->shape[2] + pad[0] + pad[2] - 2, OW = d->shape[3] + pad[1] + pad[3] - 2;
  if (OH < 1 || OW < 1) return kiln_set_error("the 3x3 window is larger than the padded input");
  if (!dt_is_float(d->dtype)) return err_dtype(n, 0, "a floating-point type");
  int64_t s[4] = {d->shape[0], w->shape[3], OH, OW};
  *out = ttype(d->dtype, 4, s);
  return 0;
}

/* strategies (tuning tasks) are attached by backend/strategy.c */
#include "../backend/strategy.h"

const OpDef ops_nn[] = {
    {"nn.conv2d", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv2d, compute_conv2d, strategy_conv2d,
     "data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None, "
     "kernel_size=None, data_layout='NCHW', kernel_layout='OIHW', out_layout='', out_dtype=''", OP_CONV2D},
    {"nn.contrib_conv2d_NCHWc", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv2d, compute_conv2d_nchwc, strategy_conv2d, NULL,
     OP_CONV2D_NCHWC},
    {"nn.contrib_depthwise_conv2d_NCHWc", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv2d, compute_depthwise_conv2d_nchwc,
     strategy_conv2d, NULL, OP_DEPTHWISE_CONV2D_NCHWC},
    {"nn.contrib_conv2d_winograd_NCHWc", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv2d_winograd, compute_conv2d_winograd_nchwc,
     strategy_conv2d, NULL, OP_CONV2D_WINOGRAD_NCHWC},
    {"nn.contrib_conv2d_winograd_without_weight_transform", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv2d_winograd_wowt,
     compute_conv2d_winograd_gpu, graph_gpu_strategy, NULL, OP_CONV2D_WINOGRAD_WOWT},
    {"nn.contrib_conv2d_winograd_weight_transform", 1, 1, PAT_OPAQUE, infer_winograd_weight, compute_winograd_weight_transform, NULL, NULL},
    {"nn.conv2d_transpose", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_conv2d_transpose, compute_conv2d_transpose, NULL,
     "data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None, "
     "kernel_size=None, data_layout='NCHW', kernel_layout='OIHW', out_layout='', "
     "output_padding=(0, 0), out_dtype=''"},
    {"nn.dense", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_dense, compute_dense, strategy_dense,
     "data, weight, units=None, out_dtype=''", OP_DENSE},
    {"nn.contrib_dense_pack", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_dense_pack, compute_dense_pack, strategy_dense, NULL,
     OP_DENSE_PACK},
    {"nn.matmul", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_matmul, compute_matmul, strategy_matmul,
     "tensor_a, tensor_b, units=None, out_dtype='', transpose_a=False, transpose_b=False", OP_MATMUL},
    {"nn.max_pool2d", 1, 1, PAT_OUT_ELEMWISE_FUSABLE, infer_pool2d, compute_max_pool2d, NULL,
     "data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout='NCHW', "
     "out_layout='', ceil_mode=False", OP_MAX_POOL2D, OPF_BLOCKED_LAYOUT},
    {"nn.avg_pool2d", 1, 1, PAT_OUT_ELEMWISE_FUSABLE, infer_pool2d, compute_avg_pool2d, NULL,
     "data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout='NCHW', "
     "out_layout='', ceil_mode=False, count_include_pad=False", OP_AVG_POOL2D, OPF_BLOCKED_LAYOUT},
    {"nn.lp_pool2d", 1, 1, PAT_OUT_ELEMWISE_FUSABLE, infer_pool2d, compute_lp_pool2d, NULL, NULL},
    {"nn.global_avg_pool2d", 1, 1, PAT_OUT_ELEMWISE_FUSABLE, infer_global_pool2d, compute_global_avg_pool2d, NULL,
     "data, layout='NCHW', out_layout=''", OP_OTHER, OPF_BLOCKED_LAYOUT},
    {"nn.global_max_pool2d", 1, 1, PAT_OUT_ELEMWISE_FUSABLE, infer_global_pool2d, compute_global_max_pool2d, NULL,
     "data, layout='NCHW', out_layout=''", OP_OTHER, OPF_BLOCKED_LAYOUT},
    {"nn.adaptive_avg_pool2d", 1, 1, PAT_OUT_ELEMWISE_FUSABLE, infer_adaptive_pool2d, compute_adaptive_avg_pool2d, NULL,
     "data, output_size=None, layout='NCHW', out_layout=''"},
    {"nn.softmax", 1, 1, PAT_OPAQUE, infer_softmax, compute_softmax, NULL, "data, axis=-1", OP_OTHER, OPF_ROW_INPUT},
    {"nn.log_softmax", 1, 1, PAT_OPAQUE, infer_softmax, compute_log_softmax, NULL, "data, axis=-1", OP_OTHER, OPF_ROW_INPUT},
    {"nn.batch_norm", 5, 5, PAT_OPAQUE, infer_batch_norm, NULL, NULL, "data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-05, center=True, scale=True",
     OP_BATCH_NORM}, /* simplified away */
    {"nn.layer_norm", 1, 3, PAT_OPAQUE, infer_layer_norm, compute_layer_norm, NULL,
     "data, gamma, beta, axis=-1, epsilon=1e-05, center=True, scale=True", OP_LAYER_NORM, OPF_ROW_INPUT},
    {"nn.instance_norm", 3, 3, PAT_OPAQUE, infer_instance_norm, compute_instance_norm, NULL,
     "data, gamma, beta, axis=1, epsilon=1e-05, center=True, scale=True"},
    {"nn.lrn", 1, 1, PAT_OPAQUE, infer_lrn, compute_lrn, NULL, "data, size=5, axis=1, bias=2, alpha=1e-05, beta=0.75"},
    {"nn.dropout", 1, 1, PAT_ELEMWISE, infer_identity, NULL, NULL, "data, rate=0.5", OP_DROPOUT}, /* removed by simplify_inference */
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
