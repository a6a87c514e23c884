/*
 * x86/dense_bf16.c - dense_pack_bf16.x86: a dense layer with its weight
 * in bfloat16 and fp32 accumulation on AVX512-BF16 (`kiln compile
 * --precision bf16`, docs/bf16.md).
 *
 * The weight is stored as pairs of bfloat16 along K in one uint32 and
 * packed [N/bn, ceil(K/2), bn] (bn = tile_x's inner part): a row of bn
 * words is the vector VDPBF16PS multiplies.  The activations are rounded
 * to bfloat16 at the kernel's input, in the same pairs ("data_bf16",
 * [M, ceil(K/2)] uint32; an odd K gets a zero partner), and
 *
 *     C[y, x] = sum over k2 of bf16_dot2(data_bf16[y, k2], w[x / bn, k2, x % bn])
 *
 * in float32, where bf16_dot2(a, b) = a.lo * b.lo + a.hi * b.hi (exact
 * products: a bfloat16 has 8 significant bits).  With bn = 16 lanes, the
 * vectorized accumulation is one VDPBF16PS per 16 outputs and 2 K values
 * (the C code generator maps acc + bf16_dot2 on 16 lanes to
 * _mm512_dpbf16_ps; the unscheduled lowering computes the same sums one
 * by one).  The result and the epilogue are float32.
 *
 * Schedule: dense_pack.x86's (TVM's knob names tile_y and tile_x in three
 * parts, tile_k over the pairs): a register block of tile_y[-1] rows x bn
 * columns (one vector, or two to four of 16 lanes) accumulates over K in
 * a local cache, blocks are parallel tasks; the activations' conversion
 * runs first, parallel over rows.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

/* The fallback's bf16_dot: "vdpbf16ps" where the target's CPU does more
 * multiply-adds per cycle with VDPBF16PS than with FMAs (Zen 4 and 5),
 * "fma" elsewhere and on a CPU the target table does not describe
 * (docs/bf16.md: which is faster where). */
const char *topi_x86_bf16_dot_fallback(const Target *t) { return target_bf16_dot_faster(t) ? "vdpbf16ps" : "fma"; }

static Expr *c32(int64_t v) { return ir_i32(v); }

/* x[r, 2 k2 + j] of a 2-D float32 tensor, 0 past the end of an odd K */
static Expr *pair_elem(Tensor *x, Expr *r, Expr *k2, int j, int64_t K, bool row_first) {
  Expr *k = ir_add(ir_mul(k2, c32(2)), c32(j));
  if (j == 1 && K % 2) {
    Expr *kc = ir_min(k, c32(K - 1));
    Expr *v = row_first ? te_read2(x, r, kc) : te_read2(x, kc, r);
    return ir_select(ir_lt(k, c32(K)), v, ir_f32(0));
  }
  return row_first ? te_read2(x, r, k) : te_read2(x, k, r);
}

Tensor *topi_x86_pack_dense_weight_bf16(Tensor *weight, int64_t bn) {
  int64_t w[2];
  if (!weight) return NULL;
  if (weight->ndim != 2 || !te_shape_const(weight, w) || !dt_eq(weight->dtype, DT_F32))
    return kiln_set_error("pack dense weight to bfloat16: expected a float32 [N, K] of constant shape"), NULL;
  if (bn < 1 || w[0] % bn)
    return kiln_set_error("pack dense weight to bfloat16: the block %lld does not divide N = %lld", (long long)bn,
                          (long long)w[0]),
           NULL;
  int64_t K2 = (w[1] + 1) / 2;
  Expr **v = te_axis_vars(3, (const char *[]){"z", "y", "x"});
  Expr *n = ir_add(ir_mul(v[0], c32(bn)), v[2]);
  Expr *body = ir_call2(INTRIN_bf16_pack2, pair_elem(weight, n, v[1], 0, w[1], true), pair_elem(weight, n, v[1], 1, w[1], true));
  return te_compute("packed_weight_bf16", 3, (Expr *[]){c32(w[0] / bn), c32(K2), c32(bn)}, v, body, "injective");
}

Tensor *topi_x86_dense_pack_bf16(Tensor *data, Tensor *weight, Tensor *bias, bool fma) {
  int64_t d[2], w[3];
  if (!data || !weight) return NULL;
  if (data->ndim != 2 || !te_shape_const(data, d) || !dt_eq(data->dtype, DT_F32))
    return kiln_set_error("dense_pack_bf16: data must be float32 [M, K] with a constant shape"), NULL;
  if (weight->ndim != 3 || !te_shape_const(weight, w) || !dt_eq(weight->dtype, DT_U32))
    return kiln_set_error("dense_pack_bf16: weight must be bfloat16 pairs packed as uint32 [N/bn, ceil(K/2), bn] "
                          "(topi_x86_pack_dense_weight_bf16 makes it)"),
           NULL;
  int64_t M = d[0], K = d[1], K2 = (K + 1) / 2, bn = w[2], N = w[0] * w[2];
  if (w[1] != K2)
    return kiln_set_error("dense_pack_bf16: the packed weight has %lld K pairs, data's K = %lld needs %lld", (long long)w[1],
                          (long long)K, (long long)K2),
           NULL;
  if (bias && (bias->ndim != 1 || te_dim(bias, 0) != N))
    return kiln_set_error("dense_pack_bf16: bias must be 1-D of %lld elements", (long long)N), NULL;
  Tensor *c;
  Expr **v;
  if (fma) { /* float32 activations times the weight's halves, one FMA each */
    IterVar *k = te_reduce_axis_c(K2, "k"), *j = te_reduce_axis_c(2, "j");
    v = te_axis_vars(2, (const char *[]){"y", "x"});
    Expr *wv = te_read3(weight, ir_floordiv(v[1], c32(bn)), k->var, ir_floormod(v[1], c32(bn)));
    Expr *kk = ir_add(ir_mul(k->var, c32(2)), j->var), *x;
    if (K % 2)
      x = ir_select(ir_lt(kk, c32(K)), te_read2(data, v[0], ir_min(kk, c32(K - 1))), ir_f32(0));
    else
      x = te_read2(data, v[0], kk);
    Expr *prod = ir_mul(x, ir_call2(INTRIN_bf16_half, wv, ir_cast(DT_U32, j->var)));
    c = te_compute("dense_pack_bf16", 2, (Expr *[]){c32(M), c32(N)}, v, ir_sum(prod, 2, (IterVar *[]){k, j}),
                   "dense_pack_bf16");
  } else {
    v = te_axis_vars(2, (const char *[]){"y", "k2"});
    Tensor *a = te_compute("data_bf16", 2, (Expr *[]){c32(M), c32(K2)}, v,
                           ir_call2(INTRIN_bf16_pack2, pair_elem(data, v[0], v[1], 0, K, true),
                                    pair_elem(data, v[0], v[1], 1, K, true)),
                           "bf16_pack");
    if (!a) return NULL;
    IterVar *k = te_reduce_axis_c(K2, "k");
    v = te_axis_vars(2, (const char *[]){"y", "x"});
    Expr *wv = te_read3(weight, ir_floordiv(v[1], c32(bn)), k->var, ir_floormod(v[1], c32(bn)));
    Expr *dot = ir_call2(INTRIN_bf16_dot2, te_read2(a, v[0], k->var), wv);
    c = te_compute("dense_pack_bf16", 2, (Expr *[]){c32(M), c32(N)}, v, ir_sum(dot, 1, &k), "dense_pack_bf16");
  }
  if (!c || !bias) return c;
  v = te_axis_vars(2, NULL);
  return te_compute("T_add", 2, c->shape, v, ir_add(te_read2(c, v[0], v[1]), te_read1(bias, v[1])), "broadcast");
}

/* tile_x's inner part (the packed block) is one vector of at most 16
 * lanes, a multiple of 8 when N has one (VDPBF16PS works on 8 or 16), or
 * up to 64 columns of vectors of 16 side by side (x86_vec_cols), of 8
 * where N has no multiple of 16. */
static bool bn_filter(const int64_t *sizes, int n, void *ud) {
  int64_t N = *(const int64_t *)ud, b = sizes[n - 1];
  return b <= 16 ? N % 8 != 0 || b % 8 == 0 : b <= 64 && (b % 16 == 0 || (N % 16 != 0 && b % 8 == 0));
}

static int bf16_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  int64_t N = d.N; /* the filter's argument (space_define_split enumerates at once) */
  SplitOpts three = {.nparts = 3}, x3 = {.nparts = 3, .filter = bn_filter, .filter_ud = &N};
  if (space_define_split(cs, "tile_y", d.M, &three) || space_define_split(cs, "tile_x", d.N, &x3) ||
      space_define_split(cs, "tile_k", (d.K + 1) / 2, NULL))
    return -1;
  return space_define_knob(cs, "bf16_dot", 2, (OptVal[]){opt_str("vdpbf16ps"), opt_str("fma")});
}

/* The "bf16_dot" knob: 1 for "fma" (the weight's halves widened to
 * float32, float32 activations, FMAs), 0 for "vdpbf16ps" (activations
 * rounded too, one VDPBF16PS per pair); -1 + error for anything else. */
static int dot_is_fma(const ConfigEntity *cfg) {
  const KnobEntity *k = config_get(cfg, "bf16_dot");
  if (k && k->kind == KNOB_OTHER && k->val.kind == OPT_STR && k->val.s) {
    if (!strcmp(k->val.s, "fma")) return 1;
    if (!strcmp(k->val.s, "vdpbf16ps")) return 0;
  }
  return kiln_set_error("dense_pack_bf16.x86: config knob 'bf16_dot' must be \"vdpbf16ps\" or \"fma\"");
}

int topi_x86_dense_bf16_dot_is_fma(const ConfigEntity *cfg) { return dot_is_fma(cfg); }

/* dense_pack.x86's fallback over the K pairs: bn = 16 (else the largest
 * power of two dividing N), 6 to 16 rows per register block (a tail when
 * none divides M): VDPBF16PS has a longer latency than an FMA, and 16
 * independent accumulators ran a [128, 3072] x [3072, 768] layer 1.2x
 * faster than 8 (docs/bf16.md); the pair loop unrolled by 4, about 16
 * parallel tasks.  Where N divides into blocks of three (else two)
 * vectors and M fills such a block's rows, the block is those vectors x
 * BLOCK_ACCS / vectors rows (8 x 48 or 12 x 32 columns): one broadcast of
 * a row's pair then feeds two or three VDPBF16PS, not one.
 * bench_dense --template dense_pack_bf16.x86 --cpu-time --cold, 1 thread
 * (load 3), GFLOP/s, 16 x 16 / 12 x 32 / 8 x 48 / 6 x 64: ViT-B/16's
 * 197x3072x768 393 / 455 / 476 / 479, 197x768x3072 362 / 437 / 435 / 430
 * (VDPBF16PS peak about 510). */
enum { BLOCK_ACCS = 24 };

static int bf16_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  x86_dense_lowp_fallback(t, cfg, d.M, d.N, d.K, 2, 16, 6);
  config_set_other(cfg, "bf16_dot", opt_str(topi_x86_bf16_dot_fallback(t)));
  int64_t lanes = t->vector_lanes;
  for (int64_t v = 3; v >= 2 && lanes == 16; v--) {
    int64_t rows = BLOCK_ACCS / v;
    if (d.N % (v * lanes) || d.M < rows) continue;
    x86_dense_lowp_fallback(t, cfg, d.M, d.N / v, d.K, 2, rows, rows * 2 / 3);
    int64_t x_oi = cfg_split(cfg, "tile_x", NULL)[1];
    config_set_split(cfg, "tile_x", 3, (int64_t[]){-1, x_oi, v * lanes});
    return 0;
  }
  /* fewer rows than a block of two vectors fills (a classifier head at
   * batch 1): the widest block of whole vectors that divides N, up to 64
   * columns, so the block has several independent accumulators, not one
   * chain of VDPBF16PS (8 x 5 lanes for N = 1000).  bench_dense
   * --template dense_pack_bf16.x86 --cpu-time, 1 thread (load 3.6),
   * 8 / 40 columns: 1x1000x1280 108 / 27 us, 1x1000x2048 181 / 44 us;
   * with --cold 116 / 67 and 189 / 112 us; 1x4096x4096 --cold, 16 / 64
   * columns, 871 / 795 us. */
  int64_t vec = cfg_split_inner(cfg, "tile_x"), bn = vec;
  if (d.M < BLOCK_ACCS / 2 && vec >= 8 && lanes == 16) {
    for (int64_t b = 64; b > vec; b -= vec)
      if (d.N % b == 0) {
        bn = b;
        break;
      }
    int64_t y_ii = cfg_split_inner(cfg, "tile_y");
    int64_t blocks = (d.M + y_ii - 1) / y_ii * (d.N / bn), x_oi = 1;
    while (x_oi < 8 && (d.N / bn) % (x_oi * 2) == 0 && blocks / (x_oi * 2) >= 16) x_oi *= 2;
    config_set_split(cfg, "tile_x", 3, (int64_t[]){-1, x_oi, bn});
  }
  return 0;
}

static int bf16_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  if (x86_check_split(cfg, "tile_y", 3, d.M, "rows (M)", false) || x86_check_split(cfg, "tile_x", 3, d.N, "outputs (N)", true) ||
      x86_check_split(cfg, "tile_k", 2, (d.K + 1) / 2, "K pairs (ceil(K/2))", true) || dot_is_fma(cfg) < 0)
    return kiln_error_context("%s", wl->name);
  return 0;
}

static Tensor *bf16_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t;
  if (nin != 2 && nin != 3) return kiln_set_error("%s: compute takes data, weight and a bias, got %d inputs", wl->name, nin), NULL;
  int fma = dot_is_fma(cfg);
  if (fma < 0) return NULL;
  return topi_x86_dense_pack_bf16(in[0], in[1], nin == 3 ? in[2] : NULL, fma);
}

/* data float32 [M, K], the weight as bfloat16 pairs uint32 [N/bn, ceil(K/2), bn] */
static int bf16_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  int64_t bn = cfg_split_inner(cfg, "tile_x");
  if (bn < 1) return kiln_error_context("%s", wl->name);
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 2, (int64_t[]){d.M, d.K}, DT_F32);
  (*in)[1] = te_placeholder_c("packed_weight_bf16", 3, (int64_t[]){d.N / bn, (d.K + 1) / 2, bn}, DT_U32);
  return 0;
}

int topi_x86_schedule_dense_pack_bf16(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *c, int nout,
                                      Tensor **outs) {
  if (!s || !c) return -1;
  if (!c->tag || strcmp(c->tag, "dense_pack_bf16"))
    return kiln_set_error("dense_pack_bf16.x86 schedule: anchor '%s' has tag '%s', expected dense_pack_bf16", c->name,
                          c->tag ? c->tag : "");
  Tensor *packw = NULL, *a = NULL;
  for (int i = 0; i < c->ninputs; i++) {
    if (c->inputs[i]->ndim == 3) packw = c->inputs[i];
    if (c->inputs[i]->tag && !strcmp(c->inputs[i]->tag, "bf16_pack")) a = c->inputs[i];
  }
  int fma = dot_is_fma(cfg);
  if (fma < 0) return -1;
  if (!packw || (!a && !fma) || (a && fma) || c->nreduce != (fma ? 2 : 1))
    return kiln_set_error("dense_pack_bf16.x86 schedule: '%s' is not the compute of bf16_dot \"%s\"", c->name,
                          fma ? "fma" : "vdpbf16ps");
  int64_t M = te_dim(c, 0), N = te_dim(c, 1), bn = te_dim(packw, 2), K2 = te_dim(packw, 1);
  int ny, nx, nk;
  const int64_t *ty = cfg_split(cfg, "tile_y", &ny), *tx = cfg_split(cfg, "tile_x", &nx), *tk = cfg_split(cfg, "tile_k", &nk);
  if (!ty || !tx || !tk) return kiln_error_context("dense_pack_bf16.x86");
  if (ny != 3 || nx != 3 || nk != 2) return kiln_set_error("dense_pack_bf16.x86: tile_y and tile_x need 3 parts, tile_k 2");
  if (tx[2] != bn)
    return kiln_set_error("dense_pack_bf16.x86: config knob 'tile_x' inner part %lld does not match the packed weight's "
                          "block %lld",
                          (long long)tx[2], (long long)bn);
  if (N % (tx[1] * tx[2]) || K2 % tk[1])
    return kiln_set_error("dense_pack_bf16.x86: tile_x %lld must divide N = %lld and tile_k %lld the %lld K pairs",
                          (long long)(tx[1] * tx[2]), (long long)N, (long long)tk[1], (long long)K2);
  (void)M;
  Stage *so, *scc;
  IterVar *ko, *ki;
  if (x86_dense_pack_tiling(t, s, c, nout, outs, ty, tx, bn, tk[1], &so, &scc, &ko, &ki)) return -1;
  Stage *sa = a ? sch_stage(s, a) : NULL;
  if (a && !sa) return -1;
  IterVar *y = stage_axis(scc, 0), *x = stage_axis(scc, 1);
  if (fma) { /* each pair's two halves: two FMAs per row */
    IterVar *j = stage_reduce_axis(scc, 1);
    if (stage_reorder(scc, 5, (IterVar *[]){ko, ki, j, y, x}) || stage_unroll(scc, j)) return -1;
  } else if (stage_reorder(scc, 4, (IterVar *[]){ko, ki, y, x})) {
    return -1;
  }
  if (stage_unroll(scc, ki) || stage_unroll(scc, y)) return -1;
  if (x86_vec_cols(t, scc, x, bn)) return -1; /* a block of 32 or 48 columns: vectors of 16, unrolled */
  /* the activations' conversion: parallel over rows, vectorized over pairs */
  if (sa && stage_parallel(sa, stage_axis(sa, 0))) return -1;
  int64_t lanes = t->vector_lanes;
  if (sa && K2 % lanes == 0 && K2 > lanes) {
    IterVar *o, *in;
    if (stage_split(sa, stage_axis(sa, 1), c32(lanes), &o, &in) || stage_vectorize(sa, in)) return -1;
  }
  if (packw->kind == TE_COMPUTE) { /* packed in the function: parallel over blocks */
    Stage *sp = sch_stage(s, packw);
    if (!sp || stage_parallel(sp, stage_axis(sp, 0))) return -1;
  }
  return x86_schedule_others(s, so, c, (int)bn);
}

const Template topi_x86_dense_pack_bf16_template = {
    .name = "dense_pack_bf16.x86", .anchor_tag = "dense_pack_bf16", .key = "cpu", .define_space = bf16_space,
    .fallback = bf16_fallback, .check = bf16_check, .placeholders = bf16_placeholders, .compute = bf16_compute,
    .schedule = topi_x86_schedule_dense_pack_bf16,
};
