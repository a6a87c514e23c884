/*
 * x86/dense_int8.c - dense_vnni.x86: a dense layer on uint8 activations
 * and int8 weights with int32 accumulation on AVX512-VNNI (the int8
 * layers of a quantized model, docs/int8.md).
 *
 * Four K values travel in one uint32: the weight (int8 [N, K]) is packed
 * [N/bn, ceil(K/4), bn] uint32 at compile time (bn = tile_x's inner part,
 * a row of bn words is the vector VPDPBUSD multiplies), the activations
 * (uint8 [M, K]) are packed [M, ceil(K/4)] in the kernel's first stage
 * ("data_u8x4"; a K that is not a multiple of 4 gets zero bytes), and
 *
 *     acc[y, x] = sum over k4 of u8s8_dot4(a[y, k4], w[x / bn, k4, x % bn])      (int32)
 *
 * where u8s8_dot4 is the sum of the four byte products (uint8 x int8):
 * one VPDPBUSD per 16 outputs and 4 K values on 16 int32 lanes (the C code
 * generator maps acc + u8s8_dot4 there; the unscheduled lowering computes
 * the same sums one by one, the same int32 result bit for bit).
 *
 * The requantize epilogue is part of the compute: with the activations'
 * zero point za folded into comp[x] = za * sum_k w[x, k] (int32, at
 * compile time) and scale[x] = s_a * s_w[x],
 *
 *     y[y, x] = float32(acc[y, x] - comp[x]) * scale[x]   (+ bias[x])
 *
 * which is the dequantized product; the graph's following ops (bias,
 * ReLU, the next QuantizeLinear's divide/round/clip/cast) fuse after it.
 *
 * Schedule: dense_pack.x86's output tiling (x86_dense_pack_tiling; TVM's
 * knob names tile_y and tile_x in three parts, tile_k over the groups of
 * four): a register block of tile_y[-1] rows x bn columns accumulates in
 * int32 registers, blocks are parallel tasks; the activations' packing
 * runs first, parallel over rows.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }
static Expr *u32c(int64_t v) { return ir_const((double)v, DT_U32); }

/* The four bytes x[r, 4 k4 + j] (j = 0..3) of an 8-bit 2-D tensor in one
 * uint32, byte j from K index 4 k4 + j; 0 past the end of K. */
static Expr *pack4(Tensor *x, Expr *r, Expr *k4, int64_t K) {
  Expr *w = NULL;
  for (int j = 0; j < 4; j++) {
    Expr *k = ir_add(ir_mul(k4, c32(4)), c32(j));
    Expr *v = te_read2(x, r, K % 4 ? ir_min(k, c32(K - 1)) : k);
    Expr *b = ir_call2(INTRIN_bitwise_and, ir_cast(DT_U32, v), u32c(0xff));
    if (K % 4) b = ir_select(ir_lt(k, c32(K)), b, u32c(0));
    if (j) b = ir_call2(INTRIN_shift_left, b, u32c(8 * j));
    w = w ? ir_call2(INTRIN_bitwise_or, w, b) : b;
  }
  return w;
}

static bool is_8bit(DType t, int code) { return t.code == code && t.bits == 8 && t.lanes == 1; }

Tensor *topi_x86_pack_dense_weight_int8(Tensor *weight, int64_t bn) {
  int64_t w[2];
  if (!weight) return NULL;
  if (weight->ndim != 2 || !te_shape_const(weight, w) || !is_8bit(weight->dtype, kDLInt))
    return kiln_set_error("pack dense weight to int8x4: expected an int8 [N, K] of constant shape"), NULL;
  if (bn < 1 || w[0] % bn)
    return kiln_set_error("pack dense weight to int8x4: the block %lld does not divide N = %lld", (long long)bn,
                          (long long)w[0]),
           NULL;
  Expr **v = te_axis_vars(3, (const char *[]){"z", "y", "x"});
  Expr *n = ir_add(ir_mul(v[0], c32(bn)), v[2]);
  return te_compute("packed_weight_int8", 3, (Expr *[]){c32(w[0] / bn), c32((w[1] + 3) / 4), c32(bn)}, v,
                    pack4(weight, n, v[1], w[1]), "injective");
}

Tensor *topi_x86_dense_vnni(Tensor *data, Tensor *weight, Tensor *comp, Tensor *scale, Tensor *bias) {
  int64_t d[2], w[3];
  if (!data || !weight || !comp || !scale) return NULL;
  if (data->ndim != 2 || !te_shape_const(data, d) || !is_8bit(data->dtype, kDLUInt))
    return kiln_set_error("dense_vnni: data must be uint8 [M, K] with a constant shape, got %s", dt_str(data->dtype)), NULL;
  if (weight->ndim != 3 || !te_shape_const(weight, w) || !dt_eq(weight->dtype, DT_U32))
    return kiln_set_error("dense_vnni: weight must be int8 quadruples packed as uint32 [N/bn, ceil(K/4), bn] "
                          "(topi_x86_pack_dense_weight_int8 makes it)"),
           NULL;
  int64_t M = d[0], K = d[1], K4 = (K + 3) / 4, bn = w[2], N = w[0] * w[2];
  if (w[1] != K4)
    return kiln_set_error("dense_vnni: the packed weight has %lld groups of 4 K values, data's K = %lld needs %lld",
                          (long long)w[1], (long long)K, (long long)K4),
           NULL;
  if (comp->ndim != 1 || te_dim(comp, 0) != N || !dt_eq(comp->dtype, DT_I32))
    return kiln_set_error("dense_vnni: the zero-point compensation must be int32 [%lld]", (long long)N), NULL;
  if (scale->ndim != 1 || te_dim(scale, 0) != N || !dt_eq(scale->dtype, DT_F32))
    return kiln_set_error("dense_vnni: the scale must be float32 [%lld]", (long long)N), NULL;
  if (bias && (bias->ndim != 1 || te_dim(bias, 0) != N || !dt_eq(bias->dtype, DT_F32)))
    return kiln_set_error("dense_vnni: bias must be float32 [%lld]", (long long)N), NULL;
  Expr **v = te_axis_vars(2, (const char *[]){"y", "k4"});
  Tensor *a = te_compute("data_u8x4", 2, (Expr *[]){c32(M), c32(K4)}, v, pack4(data, v[0], v[1], K), "int8_pack");
  if (!a) return NULL;
  IterVar *k = te_reduce_axis_c(K4, "k");
  v = te_axis_vars(2, (const char *[]){"y", "x"});
  Expr *wv = te_read3(weight, ir_floordiv(v[1], c32(bn)), k->var, ir_floormod(v[1], c32(bn)));
  Expr *dot = ir_call2(INTRIN_u8s8_dot4, te_read2(a, v[0], k->var), wv);
  Tensor *acc = te_compute("dense_vnni", 2, (Expr *[]){c32(M), c32(N)}, v, ir_sum(dot, 1, &k), "dense_vnni");
  if (!acc) return NULL;
  v = te_axis_vars(2, NULL);
  Expr *q = ir_cast(DT_F32, ir_sub(te_read2(acc, v[0], v[1]), te_read1(comp, v[1])));
  Expr *y = ir_mul(q, te_read1(scale, v[1]));
  if (bias) y = ir_add(y, te_read1(bias, v[1]));
  return te_compute("T_requant", 2, acc->shape, v, y, "broadcast");
}

/* tile_x's inner part (the packed block and the vector) stays at most 16
 * lanes, and a multiple of 8 when N has one (VPDPBUSD works on 8 or 16). */
static bool bn_filter(const int64_t *sizes, int n, void *ud) {
  int64_t N = *(const int64_t *)ud, b = sizes[n - 1];
  return b <= 16 && (N % 8 != 0 || b % 8 == 0);
}

static int vnni_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  int64_t N = d.N; /* the filter's argument (space_define_split enumerates at once) */
  SplitOpts three = {.nparts = 3}, x3 = {.nparts = 3, .filter = bn_filter, .filter_ud = &N};
  if (space_define_split(cs, "tile_y", d.M, &three) || space_define_split(cs, "tile_x", d.N, &x3)) return -1;
  return space_define_split(cs, "tile_k", (d.K + 3) / 4, NULL);
}

/* dense_pack.x86's fallback over the groups of four: bn = 16 (else the
 * largest power of two dividing N), up to 8 rows per register block (the
 * largest divisor of M from 4 to 8, else 8 and a tail), the group loop
 * unrolled by 4, about 16 parallel tasks. */
static int vnni_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  x86_dense_lowp_fallback(t, cfg, d.M, d.N, d.K, 4, 8, 4);
  return 0;
}

static int vnni_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  if (x86_check_split(cfg, "tile_y", 3, d.M, "rows (M)", false) || x86_check_split(cfg, "tile_x", 3, d.N, "outputs (N)", true) ||
      x86_check_split(cfg, "tile_k", 2, (d.K + 3) / 4, "groups of 4 K values (ceil(K/4))", true))
    return kiln_error_context("%s", wl->name);
  return 0;
}

static Tensor *vnni_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  if (nin != 4 && nin != 5)
    return kiln_set_error("%s: compute takes data, weight, compensation, scale and a bias, got %d inputs", wl->name, nin),
           NULL;
  return topi_x86_dense_vnni(in[0], in[1], in[2], in[3], nin == 5 ? in[4] : NULL);
}

/* data uint8 [M, K], the weight as int8 quadruples uint32 [N/bn, ceil(K/4),
 * bn], the compensation int32 [N], the scale float32 [N] */
static int vnni_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  int64_t bn = cfg_split_inner(cfg, "tile_x");
  if (bn < 1) return kiln_error_context("%s", wl->name);
  *nin = 4;
  *in = KNEWN(Tensor *, 4);
  (*in)[0] = te_placeholder_c("data", 2, (int64_t[]){d.M, d.K}, DT_U8);
  (*in)[1] = te_placeholder_c("packed_weight_int8", 3, (int64_t[]){d.N / bn, (d.K + 3) / 4, bn}, DT_U32);
  (*in)[2] = te_placeholder_c("compensation", 1, &d.N, DT_I32);
  (*in)[3] = te_placeholder_c("scale", 1, &d.N, DT_F32);
  return 0;
}

int topi_x86_schedule_dense_vnni(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *c, int nout, Tensor **outs) {
  if (!s || !c) return -1;
  /* the op's output is the requantize epilogue; the accumulation it reads is the anchor */
  if (c->tag && !strcmp(c->tag, "broadcast"))
    for (int i = 0; i < c->ninputs; i++)
      if (c->inputs[i]->tag && !strcmp(c->inputs[i]->tag, "dense_vnni")) c = c->inputs[i];
  if (!c->tag || strcmp(c->tag, "dense_vnni"))
    return kiln_set_error("dense_vnni.x86 schedule: anchor '%s' has tag '%s', expected dense_vnni (or its requantize "
                          "epilogue)",
                          c->name, c->tag ? c->tag : "");
  Tensor *packw = NULL, *a = NULL;
  for (int i = 0; i < c->ninputs; i++) {
    if (c->inputs[i]->ndim == 3) packw = c->inputs[i];
    if (c->inputs[i]->tag && !strcmp(c->inputs[i]->tag, "int8_pack")) a = c->inputs[i];
  }
  if (!packw || !a || c->nreduce != 1)
    return kiln_set_error("dense_vnni.x86 schedule: '%s' is not topi_x86_dense_vnni's compute", c->name);
  int64_t N = te_dim(c, 1), bn = te_dim(packw, 2), K4 = te_dim(packw, 1);
  int ny, nx, nk;
  const int64_t *ty = cfg_split(cfg, "tile_y", &ny), *tx = cfg_split(cfg, "tile_x", &nx), *tk = cfg_split(cfg, "tile_k", &nk);
  if (!ty || !tx || !tk) return kiln_error_context("dense_vnni.x86");
  if (ny != 3 || nx != 3 || nk != 2) return kiln_set_error("dense_vnni.x86: tile_y and tile_x need 3 parts, tile_k 2");
  if (tx[2] != bn)
    return kiln_set_error("dense_vnni.x86: config knob 'tile_x' inner part %lld does not match the packed weight's "
                          "block %lld",
                          (long long)tx[2], (long long)bn);
  if (N % (tx[1] * tx[2]) || K4 % tk[1])
    return kiln_set_error("dense_vnni.x86: tile_x %lld must divide N = %lld and tile_k %lld the %lld groups of 4 K values",
                          (long long)(tx[1] * tx[2]), (long long)N, (long long)tk[1], (long long)K4);
  Stage *so, *scc;
  IterVar *ko, *ki;
  if (x86_dense_pack_tiling(t, s, c, nout, outs, ty, tx, bn, tk[1], &so, &scc, &ko, &ki)) return -1;
  Stage *sa = sch_stage(s, a);
  if (!sa) return -1;
  IterVar *y = stage_axis(scc, 0), *x = stage_axis(scc, 1);
  if (stage_reorder(scc, 4, (IterVar *[]){ko, ki, y, x}) || stage_unroll(scc, ki) || stage_unroll(scc, y)) return -1;
  if (x86_vec_or_unroll(t, scc, x, bn)) return -1;
  /* the activations' packing: parallel over rows, vectorized over groups */
  if (stage_parallel(sa, stage_axis(sa, 0))) return -1;
  int64_t lanes = t->vector_lanes;
  if (K4 % lanes == 0 && K4 > lanes) {
    IterVar *o, *in;
    if (stage_split(sa, stage_axis(sa, 1), c32(lanes), &o, &in) || stage_vectorize(sa, in)) return -1;
  }
  if (packw->kind == TE_COMPUTE) { /* packed in the function: parallel over blocks */
    Stage *sp = sch_stage(s, packw);
    if (!sp || stage_parallel(sp, stage_axis(sp, 0))) return -1;
  }
  return x86_schedule_others(s, so, c, (int)bn);
}

const Template topi_x86_dense_vnni_template = {
    .name = "dense_vnni.x86", .anchor_tag = "dense_vnni", .key = "cpu", .define_space = vnni_space,
    .fallback = vnni_fallback, .check = vnni_check, .placeholders = vnni_placeholders, .compute = vnni_compute,
    .schedule = topi_x86_schedule_dense_vnni,
};
