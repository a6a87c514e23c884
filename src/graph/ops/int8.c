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

const OpDef ops_int8[] = {
    {"qnn.dequantize", 2, 3, PAT_BROADCAST, infer_dequantize, compute_dequantize, NULL,
     "data, input_scale, input_zero_point, axis=1", OP_QNN_DEQUANTIZE},
    {"nn.contrib_dense_vnni_weight_pack", 1, 1, PAT_OPAQUE, infer_weight_pack, compute_weight_pack, NULL, "weight, block=16"},
    {"nn.contrib_dense_vnni", 4, 4, PAT_OUT_ELEMWISE_FUSABLE, infer_dense_vnni, compute_dense_vnni, strategy_dense_vnni,
     "data, weight, compensation, scale", OP_DENSE_VNNI},
    {NULL},
};
