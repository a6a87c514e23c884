/*
 * fake_quant.c - fake_quantization_to_integer: the layers of a QDQ model
 * (ONNX Runtime's quantize_static, QuantFormat.QDQ) run on int8 kernels
 * (docs/int8.md; TVM's pass of the same name).
 *
 * A QDQ model states its int8 arithmetic as float32 around
 * QuantizeLinear/DequantizeLinear pairs: each quantized layer reads
 * DequantizeLinear(x_q) and DequantizeLinear(w_q) and its output goes
 * through QuantizeLinear.  Imported, the activation's DequantizeLinear is
 * multiply(subtract(cast(x_q, float32), za), sa) and the weight's a
 * qnn.dequantize of the int8 constant (import keeps it unfolded).  This
 * pass rewrites
 *
 *     nn.dense(multiply(subtract(cast(X), za), sa), qnn.dequantize(W, sw, 0))
 *  -> nn.contrib_dense_vnni(X, pack(W), za * rowsum(W), sa * sw)
 *
 * and the same for nn.matmul(x, W [K, N]), a weight behind a transpose and
 * an activation behind a reshape or a [..., S, K] x [K, N] nn.matmul (the
 * uint8 tensor is reshaped to [M, K] instead, the result back)
 * (X uint8 [M, K]; an int8 X is moved to uint8 by adding 128 to it and
 * to za; W int8 per output channel or per tensor, its zero point 0 -
 * ONNX Runtime's symmetric weights; a [K, N] weight is transposed as
 * int8, folded).  The result is the same
 * float32 value the fake-quantized layer computes, from exact int32 sums;
 * what follows - the bias add, a ReLU, the next QuantizeLinear's
 * divide/round/clip/cast - fuses into the int8 kernel as its epilogue,
 * and the next layer reads the uint8 tensor that epilogue writes.
 *
 * Convolutions the same way (rewrite_conv): nn.conv2d of the two
 * dequantized operands becomes nn.contrib_conv2d_int8 on the uint8 NCHW
 * input and the int8 OIHW weight, which alter_layout then blocks into
 * nn.contrib_conv2d_NCHWc_int8 (conv2d_NCHWc_int8.x86) like a float32
 * conv; the epilogue (bias, ReLU, the residual add of another dequantized
 * tensor, the next QuantizeLinear) stays blocked, and so does the uint8
 * tensor it writes for the next conv.
 *
 * Then requantize.c simplifies the requantize epilogues the layers' kernels
 * now end with (graph_simplify_requantize).
 *
 * It runs at -O3 before fold_constant (which then packs the weights), on
 * an AVX-512 CPU target when the CPU compiling has AVX512-VNNI (the
 * generated code is built for it; $KILN_CPU_NO_VNNI=1 makes Kiln treat the
 * CPU as one without, and the layers stay float32 as before).  A layer
 * that does not match stays float32: its qnn.dequantize folds into a
 * float32 weight.
 */
#include <cpuid.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../knob/knob.h"
#include "../backend/strategy.h"
#include "passes.h"

bool graph_cpu_has_vnni(void) {
  const char *no = getenv("KILN_CPU_NO_VNNI");
  if (no && *no && strcmp(no, "0")) return false;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__builtin_cpu_supports("avx512f")) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (c >> 11) & 1u; /* CPUID.(EAX=7,ECX=0):ECX bit 11: AVX512_VNNI */
#else
  return false;
#endif
}

static bool is_call(const GNode *n, OpId id) { return n->kind == GN_CALL && n->op->id == id; }

static int64_t numel(const TType *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

static const void *const_data(const GNode *c) { return (const char *)c->value->data + c->value->byte_offset; }

bool graph_scalar_f32(const GNode *c, float *v) {
  if (c->kind != GN_CONST || !dt_eq(c->type.dtype, DT_F32) || numel(&c->type) != 1 || c->type.sym) return false;
  *v = *(const float *)const_data(c);
  return true;
}

/* The activation side: multiply(subtract(cast(X, float32), za), sa) or
 * multiply(cast(X, float32), sa) with X uint8 or int8, za an integer of
 * X's range, sa > 0. */
typedef struct ActQ {
  GNode *x;
  float scale;
  int zero; /* of X's type */
} ActQ;

static bool match_act(GNode *n, ActQ *q) {
  if (!is_call(n, OP_MULTIPLY) || n->type.sym) return false;
  GNode *s = n->args[0];
  if (!graph_scalar_f32(n->args[1], &q->scale)) {
    if (!graph_scalar_f32(n->args[0], &q->scale)) return false;
    s = n->args[1];
  }
  if (!(q->scale > 0)) return false;
  float z = 0;
  if (is_call(s, OP_SUBTRACT)) {
    if (!graph_scalar_f32(s->args[1], &z)) return false;
    s = s->args[0];
  }
  if (!is_call(s, OP_CAST) || !dt_eq(s->type.dtype, DT_F32)) return false;
  GNode *x = s->args[0];
  DType xt = x->type.dtype;
  if (xt.bits != 8 || xt.lanes != 1 || (xt.code != kDLUInt && xt.code != kDLInt) || x->type.sym) return false;
  int lo = xt.code == kDLUInt ? 0 : -128;
  if (z != (float)(int)z || z < lo || z > lo + 255) return false;
  q->x = x;
  q->zero = (int)z;
  return true;
}

/* The weight side: qnn.dequantize(W, sw, zw) with W an int8 constant
 * [N, K] quantized per row (axis 0) or per tensor, or transpose of one
 * [K, N] quantized per column (axis 1); zw zero. */
typedef struct WeightQ {
  GNode *w;      /* int8 [K, N] or [N, K] constant */
  bool trans;    /* w is [K, N] */
  GNode *scale;  /* float32, one value or [N] */
} WeightQ;

static bool zero_const(const GNode *z) {
  if (z->kind != GN_CONST || z->type.sym) return false;
  const int8_t *p = const_data(z);
  for (int64_t i = 0, n = numel(&z->type); i < n; i++)
    if (p[i]) return false;
  return true;
}

static bool match_weight(GNode *n, bool trans, WeightQ *q) {
  q->trans = trans;
  if (!trans && is_call(n, OP_TRANSPOSE)) {
    const int64_t *axes;
    int na = gattr_ints(&n->attrs, "axes", &axes);
    if (n->type.ndim != 2 || (na && !(na == 2 && axes[0] == 1 && axes[1] == 0))) return false;
    q->trans = true;
    n = n->args[0];
  }
  if (!is_call(n, OP_QNN_DEQUANTIZE)) return false;
  GNode *w = n->args[0], *s = n->args[1];
  if (w->kind != GN_CONST || w->type.ndim != 2 || !dt_eq(w->type.dtype, DT_I8) || s->kind != GN_CONST) return false;
  if (n->nargs == 3 && !zero_const(n->args[2])) return false;
  int64_t nout = w->type.shape[q->trans ? 1 : 0];
  int axis = (int)gattr_int(&n->attrs, "axis", 1);
  if (numel(&s->type) != 1 && (axis != (q->trans ? 1 : 0) || numel(&s->type) != nout)) return false;
  q->w = w;
  q->scale = s;
  return true;
}

static GNode *new_const(Graph *ng, DType t, int64_t n, void **data) {
  DLTensor *v;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(1, &n, t, cpu, &v)) return NULL;
  *data = (char *)v->data + v->byte_offset;
  return graph_const(ng, NULL, v);
}

/* An int8 activation moved to uint8: x + 128, and its zero point. */
static GNode *to_uint8(Graph *ng, GNode *x, int *za) {
  GAttrs c16 = gattrs_new(), c8 = gattrs_new();
  ga_str(&c16, "dtype", "int16");
  ga_str(&c8, "dtype", "uint8");
  GNode *wide = graph_call(ng, "cast", 1, &x, c16, NULL);
  GNode *off = graph_scalar(ng, 128, dt_make(kDLInt, 16, 1));
  GNode *sum = wide && off ? graph_call(ng, "add", 2, (GNode *[]){wide, off}, gattrs_new(), NULL) : NULL;
  *za += 128;
  return sum ? graph_call(ng, "cast", 1, &sum, c8, NULL) : NULL;
}

/* nn.conv2d(multiply(subtract(cast(X), za), sa), qnn.dequantize(W, sw, 0))
 * -> nn.contrib_conv2d_int8(X, W, za * sum(W[o]), sa * sw[o]) for a plain
 * NCHW conv (groups 1); W int8 OIHW per output channel or per tensor.  With
 * za = 0 (a layer after a ReLU) the compensation is 0 and left out:
 * nn.contrib_conv2d_int8(X, W, sa * sw[o]), one VPSUBD and a load fewer
 * per 16 outputs in the kernel's epilogue.  The
 * int8 kernel takes input channels four at a time: a count that is not a
 * multiple of 4 (an RGB stem's 3) is padded, the weight with zeros and
 * the uint8 input by nn.pad, so the extra channels add nothing.  The zero point travels as input_zero_point: the input is padded
 * with it, so each border tap contributes (za - za) w = 0 as the float32
 * model's zero padding does.  Other convs (grouped, depthwise) stay
 * float32. */
static GNode *rewrite_conv(Graph *ng, GNode *old, GNode **args) {
  const char *dl = gattr_str(&old->attrs, "data_layout", "NCHW"), *kl = gattr_str(&old->attrs, "kernel_layout", "OIHW");
  if (gattr_int(&old->attrs, "groups", 1) != 1 || strcmp(dl, "NCHW") || strcmp(kl, "OIHW") || old->type.sym ||
      args[0]->type.ndim != 4 || args[0]->type.sym || old->type.ndim != 4)
    return GRAPH_KEEP;
  const char *od = gattr_str(&old->attrs, "out_dtype", "");
  if (*od && strcmp(od, "float32")) return GRAPH_KEEP;
  ActQ a;
  if (!match_act(args[0], &a)) return GRAPH_KEEP;
  GNode *dq = args[1];
  if (!is_call(dq, OP_QNN_DEQUANTIZE)) return GRAPH_KEEP;
  GNode *w = dq->args[0], *sw = dq->args[1];
  if (w->kind != GN_CONST || w->type.ndim != 4 || !dt_eq(w->type.dtype, DT_I8) || sw->kind != GN_CONST) return GRAPH_KEEP;
  if (dq->nargs == 3 && !zero_const(dq->args[2])) return GRAPH_KEEP;
  int64_t O = w->type.shape[0], C = w->type.shape[1], R = C * w->type.shape[2] * w->type.shape[3];
  if (numel(&sw->type) != 1 && (gattr_int(&dq->attrs, "axis", 1) != 0 || numel(&sw->type) != O)) return GRAPH_KEEP;
  if (C != a.x->type.shape[1]) return GRAPH_KEEP;
  if (R > INT32_MAX / (255 * 128)) return GRAPH_KEEP; /* the int32 sums must not wrap */
  GNode *x = a.x;
  int za = a.zero;
  if (dt_eq(x->type.dtype, DT_I8) && !(x = to_uint8(ng, x, &za))) return NULL;
  if (C % 4) { /* channels up to a multiple of 4: zero weights (their inputs never count), the input padded */
    int64_t cp = (C + 3) / 4 * 4, kk = w->type.shape[2] * w->type.shape[3];
    int64_t pads[8] = {0, 0, 0, 0, 0, cp - C, 0, 0};
    GAttrs pa = gattrs_new();
    ga_ints(&pa, "pads", 8, pads);
    if (!(x = graph_call(ng, "nn.pad", 1, &x, pa, NULL))) return NULL;
    DLTensor *v;
    DLDevice cpu = {kDLCPU, 0};
    int64_t shape[4] = {O, cp, w->type.shape[2], w->type.shape[3]};
    if (kiln_array_empty(4, shape, DT_I8, cpu, &v)) return NULL;
    int8_t *pw = (int8_t *)v->data + v->byte_offset;
    memset(pw, 0, (size_t)(O * cp * kk));
    const int8_t *src = const_data(w);
    for (int64_t o = 0; o < O; o++) memcpy(pw + o * cp * kk, src + o * R, (size_t)R);
    GNode *wp = graph_const(ng, NULL, v);
    if (!wp) return NULL;
    w = wp;
  }
  int32_t *comp = NULL;
  float *scale;
  GNode *cn = za ? new_const(ng, DT_I32, O, (void **)&comp) : NULL, *sn = new_const(ng, DT_F32, O, (void **)&scale);
  if ((za && !cn) || !sn) return NULL;
  const int8_t *wv = const_data(dq->args[0]); /* the unpadded weight: its sums are the padded one's */
  const float *sv = const_data(sw);
  bool per_channel = numel(&sw->type) != 1;
  for (int64_t o = 0; o < O; o++) {
    int64_t sum = 0;
    for (int64_t i = 0; i < R; i++) sum += wv[o * R + i];
    if (comp) comp[o] = (int32_t)(sum * za);
    scale[o] = a.scale * sv[per_channel ? o : 0];
  }
  GAttrs at = gattrs_new();
  const int64_t *v;
  int n;
  if ((n = gattr_ints(&old->attrs, "strides", &v))) ga_ints(&at, "strides", n, v);
  if ((n = gattr_ints(&old->attrs, "padding", &v))) ga_ints(&at, "padding", n, v);
  if ((n = gattr_ints(&old->attrs, "dilation", &v))) ga_ints(&at, "dilation", n, v);
  ga_int(&at, "input_zero_point", za);
  return za ? graph_call(ng, "nn.contrib_conv2d_int8", 4, (GNode *[]){x, w, cn, sn}, at, old->name)
            : graph_call(ng, "nn.contrib_conv2d_int8", 3, (GNode *[]){x, w, sn}, at, old->name);
}

/* max_pool2d(multiply(subtract(cast(X), za), sa)) -> multiply(subtract(
 * cast(max_pool2d(X)), za), sa): the dequantization is increasing (sa >
 * 0), so the maximum of the dequantized values is the dequantized maximum,
 * and the pool reads X's bytes instead of float32 (ResNet's stem pool
 * between two int8 convs).  A padded window's padding never wins: every
 * window holds an input value, and the integer max's identity is the
 * type's minimum. */
static GNode *rewrite_max_pool(Graph *ng, GNode *old, GNode **args) {
  ActQ a;
  if (old->type.sym || !match_act(args[0], &a)) return GRAPH_KEEP;
  GNode *mul = args[0], *sub = mul->args[0];
  int si = 0;
  if (!is_call(sub, OP_SUBTRACT) && !is_call(sub, OP_CAST)) sub = mul->args[1], si = 1;
  GNode *cast = is_call(sub, OP_SUBTRACT) ? sub->args[0] : sub;
  GNode *pool = graph_call(ng, old->op->name, 1, &a.x, old->attrs, old->name);
  GNode *c = pool ? graph_call(ng, "cast", 1, &pool, cast->attrs, NULL) : NULL;
  if (c && is_call(sub, OP_SUBTRACT)) c = graph_call(ng, "subtract", 2, (GNode *[]){c, sub->args[1]}, sub->attrs, NULL);
  if (!c) return NULL;
  GNode *margs[2] = {mul->args[0], mul->args[1]};
  margs[si] = c;
  return graph_call(ng, "multiply", 2, margs, mul->attrs, NULL);
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  const PassContext *pc = ud;
  if (is_call(old, OP_CONV2D)) return rewrite_conv(ng, old, args);
  if (is_call(old, OP_MAX_POOL2D)) return rewrite_max_pool(ng, old, args);
  /* nn.dense(x, w [N, K]), or nn.matmul(x, w [K, N]) (transpose_b: [N, K]) */
  bool dense = is_call(old, OP_DENSE), mm = is_call(old, OP_MATMUL);
  if ((!dense && !mm) || old->type.sym || args[0]->type.sym || args[0]->type.ndim < 2) return GRAPH_KEEP;
  if (dense ? args[0]->type.ndim != 2 : args[1]->type.ndim != 2) return GRAPH_KEEP;
  if (mm && gattr_int(&old->attrs, "transpose_a", 0)) return GRAPH_KEEP;
  ActQ a;
  WeightQ w;
  /* a [B, S, K] activation reaches the dense layer through a reshape to [B * S, K] */
  GNode *act = args[0];
  bool reshaped = is_call(act, OP_RESHAPE) && !act->args[0]->type.sym;
  if (!match_act(reshaped ? act->args[0] : act, &a) ||
      !match_weight(args[1], mm && !gattr_int(&old->attrs, "transpose_b", 0), &w))
    return GRAPH_KEEP;
  /* a [..., S, K] x [K, N] matmul runs as an [M, K] x [K, N] dense layer, M the product of the leading dims */
  int r0 = args[0]->type.ndim;
  int64_t M = 1, N = old->type.shape[old->type.ndim - 1], K = args[0]->type.shape[r0 - 1];
  for (int i = 0; i < r0 - 1; i++) M *= args[0]->type.shape[i];
  bool flat = r0 != 2;
  /* the int32 sums must not wrap: |sum_k x w| <= 255 * 128 * K (and the compensation as much) */
  if (K > INT32_MAX / (255 * 128)) return GRAPH_KEEP;
  Strategy st;
  if (graph_dense_vnni_config(old, M, N, K, pc->target, pc->dispatch, &st)) return NULL;
  if (!st.task_name) return GRAPH_KEEP;
  int64_t bn = cfg_split_inner(st.config, "tile_x");
  if (bn <= 0) return NULL;

  GNode *x = a.x;
  int za = a.zero;
  if (reshaped || flat) { /* the uint8 tensor reshaped (to [M, K]) instead */
    GAttrs ra = gattrs_new();
    ga_ints(&ra, "newshape", 2, (int64_t[]){M, K});
    if (!(x = graph_call(ng, "reshape", 1, &x, ra, NULL))) return NULL;
  }
  if (dt_eq(x->type.dtype, DT_I8) && !(x = to_uint8(ng, x, &za))) return NULL;
  /* the compensation za * sum_k W[n, k] and the scale sa * sw[n], folded here */
  int32_t *comp = NULL;
  float *scale;
  GNode *cn = new_const(ng, DT_I32, N, (void **)&comp), *sn = new_const(ng, DT_F32, N, (void **)&scale);
  if (!cn || !sn) return NULL;
  const int8_t *wv = const_data(w.w);
  const float *sv = const_data(w.scale);
  bool per_channel = numel(&w.scale->type) != 1;
  for (int64_t n = 0; n < N; n++) {
    int64_t s = 0;
    for (int64_t k = 0; k < K; k++) s += wv[w.trans ? k * N + n : n * K + k];
    comp[n] = (int32_t)(s * za);
    scale[n] = a.scale * sv[per_channel ? n : 0];
  }
  GNode *wk = w.w;
  if (w.trans) { /* [K, N] -> [N, K] in int8 (folded) */
    GAttrs ta = gattrs_new();
    ga_ints(&ta, "axes", 2, (int64_t[]){1, 0});
    if (!(wk = graph_call(ng, "transpose", 1, &wk, ta, NULL))) return NULL;
  }
  GAttrs pa = gattrs_new();
  ga_int(&pa, "block", bn);
  GNode *pw = graph_call(ng, "nn.contrib_dense_vnni_weight_pack", 1, &wk, pa, NULL);
  GNode *r = pw ? graph_call(ng, "nn.contrib_dense_vnni", 4, (GNode *[]){x, pw, cn, sn}, gattrs_new(), old->name) : NULL;
  if (!r) return NULL;
  graph_record_config(ng, r, &st);
  if (flat) { /* back to [..., S, N] */
    GAttrs ra = gattrs_new();
    ga_ints(&ra, "newshape", old->type.ndim, old->type.shape);
    r = graph_call(ng, "reshape", 1, &r, ra, NULL);
  }
  return r;
}

Graph *pass_fake_quantization_to_integer(Graph *g, const PassContext *pc) {
  const Target *t = pc->target;
  if (target_is_gpu(t) || t->isa != ISA_X86_AVX512 || !graph_cpu_has_vnni()) return graph_rewrite(g, NULL, NULL);
  Graph *r = graph_rewrite(g, rewrite, (void *)pc);
  if (!r) return NULL;
  Graph *e = graph_simplify_requantize(r); /* requantize.c */
  graph_free(r);
  return e;
}
