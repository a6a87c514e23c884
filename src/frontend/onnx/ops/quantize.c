/*
 * quantize.c - ONNX's quantization operators: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
 * QLinearMatMul, QLinearConv.
 *
 * Integer arithmetic runs in int32 on zero-point-centred values;
 * requantization runs in float32 with round-half-to-even and saturation,
 * per tensor or per output channel.
 */
#include "ops.h"

/* ---- quantization: integer arithmetic in int32, requantization in
 * float32 with round-half-to-even and saturation ---- */

/* A per-axis parameter (scale or zero point, [C] or one value) shaped to
 * broadcast along axis of a rank-r tensor. */
static GNode *along_axis(Importer *im, GNode *v, int axis, int r) {
  if (!v || ttype_numel(&v->type) == 1 || v->type.ndim != 1) return v;
  int64_t s[MAXD];
  int n = 0;
  s[n++] = v->type.shape[0];
  for (int i = axis + 1; i < r; i++) s[n++] = 1;
  return imp_reshape(im, v, n, s);
}

/* saturate(round(x) + zp) as t (x float32, zp NULL for 0); lowp: the
 * low-precision ONNX type t carries (int4 ... : their range; float8,
 * float4: round to nearest even into it, saturating as asked) or 0. */
static GNode *quantize_to(Importer *im, GNode *x, GNode *zp, DType t, int lowp) {
  if (!x) return NULL;
  int lo, hi;
  if (lowp && lowp_is_float(lowp)) {
    if (lowp == ONNX_DT_BFLOAT16) return imp_error(im, "quantizing to bfloat16 is not supported"), NULL;
    if (lowp == ONNX_DT_FLOAT8E8M0) return imp_error(im, "quantizing to float8 E8M0 is not supported (Cast to it is)"), NULL;
    bool sat = onnx_attr_int(N(im), "saturate", 1) != 0;
    GNode *v = zp ? bin(im, "add", x, lowp_decode(im, zp, lowp)) : x;
    return lowp_encode_float(im, v, lowp, sat);
  }
  if (t.code != kDLInt && t.code != kDLUInt) return imp_error(im, "quantized type %s is not supported", dt_str(t)), NULL;
  if (t.bits != 8 && t.bits != 16 && t.bits != 32) return imp_error(im, "quantized type %s is not supported", dt_str(t)), NULL;
  GNode *q = un(im, "round", x);
  if (zp) q = bin(im, "add", q, imp_cast(im, zp, DT_F32));
  GAttrs a = gattrs_new();
  bool narrow = lowp && lowp_int_range(lowp, &lo, &hi);
  ga_float(&a, "a_min", narrow ? lo : t.code == kDLInt ? (double)dt_int_min(t) : 0);
  ga_float(&a, "a_max", narrow ? hi : (double)dt_int_max(t));
  q = q ? imp_call(im, "clip", 1, &q, a) : NULL;
  return imp_cast(im, q, t);
}

/* The axis of a per-axis scale (only checked when the scale has several
 * values: a per-tensor scale ignores it). */
static int quant_axis(Importer *im, GNode *x, GNode *scale, int *axis) {
  *axis = 0;
  if (ttype_numel(&scale->type) == 1) return 0;
  return imp_norm_axis(im, onnx_attr_int(N(im), "axis", 1), x->type.ndim, axis);
}

/* A blocked parameter (opset 21: the rank of x, ceil(dim / block_size)
 * values along axis) repeated block_size times along axis and cut to x's
 * extent, so it broadcasts elementwise with x. */
static GNode *unblock(Importer *im, GNode *v, GNode *x, int axis, int64_t bs) {
  if (!v) return NULL;
  int r = x->type.ndim;
  int64_t nb = v->type.shape[axis], dim = x->type.shape[axis];
  if (v->type.ndim != r || nb != (dim + bs - 1) / bs)
    return imp_error(im, "a blocked parameter %s must have x's rank and ceil(%lld / %lld) values along axis %d",
                     ttype_str(&v->type), (long long)dim, (long long)bs, axis),
           NULL;
  int64_t s5[MAXD + 1], s4[MAXD];
  int n = 0;
  for (int i = 0; i < r; i++) {
    s5[n++] = v->type.shape[i];
    if (i == axis) s5[n++] = bs;
    s4[i] = i == axis ? nb * bs : v->type.shape[i];
  }
  GNode *e = imp_expand_dims(im, v, axis + 1);
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", r + 1, s5);
  GNode *b = e ? imp_call(im, "broadcast_to", 1, &e, a) : NULL;
  GNode *full = imp_reshape(im, b, r, s4);
  return nb * bs == dim ? full : imp_slice(im, full, axis, 0, dim);
}

/* The scale and zero point shaped to broadcast with x: per tensor, per
 * axis, or (block_size > 0, opset 21) per block along the axis. */
static int quant_params(Importer *im, GNode *x, GNode **scale, GNode **zp) {
  int r = x->type.ndim, ax;
  int64_t bs = 0;
  if (imp_opset(im) >= 21 && imp_attr_i64(im, "block_size", 0, 0, IMP_MAX_COUNT, &bs)) return -1;
  if (bs > 0) {
    if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", 1), r, &ax)) return -1;
    *scale = unblock(im, *scale, x, ax, bs);
    if (*zp) *zp = unblock(im, *zp, x, ax, bs);
    return *scale && (!*zp || *zp) ? 0 : -1;
  }
  if (quant_axis(im, x, *scale, &ax)) return -1;
  *scale = along_axis(im, *scale, ax, r);
  *zp = along_axis(im, *zp, ax, r);
  return 0;
}

/* The output_dtype attribute (QuantizeLinear 21, DequantizeLinear 23) or
 * dflt. */
static int out_dtype(Importer *im, int since, DType dflt, DType *t, int *lowp) {
  *t = dflt;
  int64_t code = 0;
  if (imp_opset(im) >= since && imp_attr_i64(im, "output_dtype", 0, 0, INT32_MAX, &code)) return -1;
  if (!code) return 0;
  if (onnx_dtype_carrier((int)code, t)) {
    *lowp = (int)code;
    return 0;
  }
  if (onnx_dtype_from_onnx((int)code, t)) return imp_error(im, "output_dtype: %s", kiln_get_error());
  *lowp = 0;
  return 0;
}

int onnx_h_QuantizeLinear(Importer *im) {
  GNode *x = imp_input(im, 0), *scale = imp_input(im, 1), *zp = imp_input(im, 2);
  if (!x || !scale) return imp_error(im, "needs x and y_scale");
  DType t;
  int zlowp = imp_input_lowp(im, 2), lowp = zlowp;
  if (imp_input_lowp(im, 1)) return imp_error(im, "a bfloat16 y_scale is not supported (give it as float or float16)");
  if (out_dtype(im, 21, zp ? zp->type.dtype : DT_U8, &t, &lowp)) return -1;
  if (zp && (!dt_eq(zp->type.dtype, t) || lowp != zlowp))
    return imp_error(im, "output_dtype %s differs from the zero point's type %s",
                     lowp ? onnx_data_type_name(lowp) : dt_str(t),
                     zlowp ? onnx_data_type_name(zlowp) : dt_str(zp->type.dtype));
  if (quant_params(im, x, &scale, &zp)) return -1;
  GNode *v = bin(im, "divide", imp_cast(im, x, DT_F32), imp_cast(im, scale, DT_F32));
  imp_set_output_lowp(im, 0, lowp);
  return imp_set_output(im, 0, quantize_to(im, v, zp, t, lowp));
}

/* A quantized constant (a weight, a bias: int8 or uint8, per tensor or
 * per axis, float32 result) becomes one qnn.dequantize node that import
 * does not fold, so the pass fake_quantization_to_integer still sees the
 * integers (docs/int8.md); fold_constant folds what it leaves.  1 when it
 * did, 0 when x is not such a constant, -1 + error. */
static int dequantize_const(Importer *im, GNode *x, int xlowp, GNode *scale, GNode *zp, int64_t bs, DType t) {
  DType xt = x->type.dtype;
  if (x->kind != GN_CONST || xlowp || bs > 0 || !dt_eq(t, DT_F32) || xt.bits != 8 ||
      (xt.code != kDLInt && xt.code != kDLUInt) || !dt_eq(scale->type.dtype, DT_F32) || scale->kind != GN_CONST ||
      scale->type.ndim > 1 || (zp && (zp->kind != GN_CONST || !dt_eq(zp->type.dtype, xt) || zp->type.ndim > 1)))
    return 0;
  int axis;
  if (quant_axis(im, x, scale, &axis)) return -1;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", axis);
  GNode *args[3] = {x, scale, zp};
  GNode *n = imp_call_unfolded(im, "qnn.dequantize", zp ? 3 : 2, args, a);
  return !n || imp_set_output(im, 0, n) ? -1 : 1;
}

int onnx_h_DequantizeLinear(Importer *im) {
  GNode *x = imp_input(im, 0), *scale = imp_input(im, 1), *zp = imp_input(im, 2);
  if (!x || !scale) return imp_error(im, "needs x and x_scale");
  DType t;
  int lowp = 0, xlowp = imp_input_lowp(im, 0);
  if (imp_input_lowp(im, 1)) return imp_error(im, "a bfloat16 x_scale is not supported (give it as float or float16)");
  if (xlowp == ONNX_DT_FLOAT8E8M0)
    return imp_error(im, "dequantizing float8 E8M0 is not supported (Cast it to float and multiply)");
  if (out_dtype(im, 23, scale->type.dtype, &t, &lowp)) return -1;
  if (lowp) return imp_error(im, "output_dtype %s is not supported (DequantizeLinear outputs float, float16 or double here)",
                             onnx_data_type_name(lowp));
  int64_t bs = 0;
  if (imp_opset(im) >= 21 && imp_attr_i64(im, "block_size", 0, 0, IMP_MAX_COUNT, &bs)) return -1;
  int r = dequantize_const(im, x, xlowp, scale, zp, bs, t);
  if (r) return r < 0 ? -1 : 0;
  if (quant_params(im, x, &scale, &zp)) return -1;
  GNode *v = xlowp ? lowp_decode(im, x, xlowp) : imp_cast(im, x, DT_F32);
  if (zp) v = bin(im, "subtract", v, xlowp ? lowp_decode(im, zp, xlowp) : imp_cast(im, zp, DT_F32));
  return imp_set_output(im, 0, imp_cast(im, bin(im, "multiply", v, imp_cast(im, scale, DT_F32)), t));
}

int onnx_h_DynamicQuantizeLinear(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs x");
  if (!dt_eq(x->type.dtype, DT_F32)) return imp_error(im, "x must be float32, got %s", dt_str(x->type.dtype));
  GNode *zero = imp_scalar(im, 0, DT_F32);
  GNode *lo = bin(im, "minimum", imp_reduce(im, "min", x, 0, NULL, false), zero);
  GNode *hi = bin(im, "maximum", imp_reduce(im, "max", x, 0, NULL, false), zero);
  GNode *scale = bin(im, "divide", bin(im, "subtract", hi, lo), imp_scalar(im, 255, DT_F32));
  GNode *zp = quantize_to(im, bin(im, "divide", un(im, "negative", lo), scale), NULL, DT_U8, 0);
  GNode *y = quantize_to(im, bin(im, "divide", x, scale), zp, DT_U8, 0);
  if (imp_set_output(im, 0, y)) return -1;
  if (imp_want_output(im, 1) && imp_set_output(im, 1, scale)) return -1;
  if (imp_want_output(im, 2) && imp_set_output(im, 2, zp)) return -1;
  return 0;
}

/* x - zp in int32; zp per row (axis 0 of a matrix) or per output channel
 * when it has that many values. */
static GNode *centered(Importer *im, GNode *x, GNode *zp, int axis) {
  GNode *v = imp_cast(im, x, DT_I32);
  if (!zp) return v;
  return bin(im, "subtract", v, along_axis(im, imp_cast(im, zp, DT_I32), axis, x->type.ndim));
}

static GNode *matmul_int(Importer *im, GNode *a, GNode *azp, GNode *b, GNode *bzp) {
  if (!a || !b) return imp_error(im, "needs A and B"), NULL;
  /* a's zero point is per row (axis -2), b's per column (the last axis,
   * which broadcasting already lines up) */
  GNode *ac = centered(im, a, azp, a->type.ndim >= 2 ? a->type.ndim - 2 : 0);
  GNode *bc = bin(im, "subtract", imp_cast(im, b, DT_I32), bzp ? imp_cast(im, bzp, DT_I32) : imp_scalar(im, 0, DT_I32));
  return bin(im, "nn.matmul", ac, bc);
}

int onnx_h_MatMulInteger(Importer *im) {
  return imp_set_output(im, 0, matmul_int(im, imp_input(im, 0), imp_input(im, 2), imp_input(im, 1), imp_input(im, 3)));
}

int onnx_h_ConvInteger(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 1);
  if (!x || !w) return imp_error(im, "needs x and w");
  return imp_set_output(im, 0, onnx_conv(im, centered(im, x, imp_input(im, 2), 1), centered(im, w, imp_input(im, 3), 0), NULL));
}

/* saturate(round(acc * (sa * sb / sy)) + zy), the multiplier along axis
 * (per output channel) when sb has several values. */
static GNode *requantize(Importer *im, GNode *acc, GNode *sa, GNode *sb, GNode *sy, GNode *zy, int axis) {
  if (!acc || !sa || !sb || !sy) return imp_error(im, "missing a scale"), NULL;
  int r = acc->type.ndim;
  GNode *m = bin(im, "divide", bin(im, "multiply", imp_cast(im, sa, DT_F32), along_axis(im, imp_cast(im, sb, DT_F32), axis, r)),
                 imp_cast(im, sy, DT_F32));
  GNode *v = bin(im, "multiply", imp_cast(im, acc, DT_F32), m);
  return quantize_to(im, v, zy, zy ? zy->type.dtype : DT_U8, 0);
}

int onnx_h_QLinearMatMul(Importer *im) {
  GNode *a = imp_input(im, 0), *b = imp_input(im, 3);
  GNode *acc = matmul_int(im, a, imp_input(im, 2), b, imp_input(im, 5));
  int last = acc ? acc->type.ndim - 1 : 0;
  return imp_set_output(im, 0, requantize(im, acc, imp_input(im, 1), imp_input(im, 4), imp_input(im, 6), imp_input(im, 7), last));
}

int onnx_h_QLinearConv(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 3);
  if (!x || !w) return imp_error(im, "needs x and w");
  GNode *acc = onnx_conv(im, centered(im, x, imp_input(im, 2), 1), centered(im, w, imp_input(im, 5), 0), imp_input(im, 8));
  return imp_set_output(im, 0, requantize(im, acc, imp_input(im, 1), imp_input(im, 4), imp_input(im, 6), imp_input(im, 7), 1));
}
