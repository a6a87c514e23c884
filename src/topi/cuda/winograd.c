/*
 * cuda/winograd.c - the config space of TVM's CUDA Winograd conv2d
 * template (topi/cuda/conv2d_winograd.py, TopHub task "topi_nn_conv2d"
 * with template key "winograd"), knobs in its order:
 *
 *   tile_b    4-way split of alpha * alpha (the transformed tile's
 *             elements), filtered to [-1, 1, 1, 1] as TVM does
 *   tile_y    4-way split of the output channels (CO)
 *   tile_x    4-way split of P = N * ceil(OH / m) * ceil(OW / m), the
 *             number of m x m output tiles
 *   tile_rc   2-way split of the input channels
 *   auto_unroll_max_step  0, 128, 1500
 *   unroll_explicit       0, 1
 *
 * m, the output tile, is TVM's _infer_tile_size: 4 when the input height
 * is a multiple of 8, else 2; alpha = m + 3 - 1.  The workload is the
 * plain conv2d's (TopHub keys Winograd records by the untransformed
 * convolution).
 *
 * The compute is TVM's winograd_cuda, in up to four kernels of the
 * group's function:
 *   kernel_pack[alpha, alpha, CI, CO] = G g G^T     only when the kernel
 *       given is the OIHW weight; a model's convolution gets it
 *       pre-computed instead (TVM's pre_computed=True): on a GPU target
 *       alter_layout (graph/passes/alter_layout_gpu.c) gives the
 *       convolution the transformed weight, which fold_constant computes
 *       at build time, and tuning measures that form too (the template's
 *       placeholders: the kernel is [alpha, alpha, CI, CO]), as TVM skips
 *       the kernel transform's time in tuning
 *   data_pack[alpha, alpha, CI, P] = B^T d B        of each input tile
 *   bgemm[alpha, alpha, CO, P] = sum_ci kernel_pack * data_pack
 *   inverse[CO, P, m, m] = A^T bgemm A, and the output (cropped) with the
 *       group's epilogue
 * The transforms are selects over the (unrolled) transform indices of the
 * explicit sparse sums, as in x86/winograd.c, whose matrices they share
 * (topi_winograd_matrices).  The schedule is TVM's: the transforms one
 * column of 128 threads per block with the alpha x alpha loops unrolled;
 * bgemm tiled by the knobs (blockIdx.z/y/x over tile_b/tile_y/tile_x,
 * vthreads, threads), accumulating in local memory over rc.outer with
 * both operands' slices fetched into shared memory (tx, ty, tz factor
 * splits from the inside); the output tiled m x m, one tile per thread,
 * its inverse transform in local memory.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

int64_t topi_cuda_winograd_tile_size(int64_t in_height) { return in_height % 8 == 0 ? 4 : 2; }

static bool tile_b_filter(const int64_t *sizes, int n, void *ud) {
  (void)ud;
  return n == 4 && sizes[1] == 1 && sizes[2] == 1 && sizes[3] == 1;
}

typedef struct WinoDims {
  int64_t alpha, m, P, CO, CI;
} WinoDims;

static int wino_dims(const Workload *wl, WinoDims *w) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (c.depthwise || c.KH != 3 || c.KW != 3 || c.sh != 1 || c.sw != 1 || c.dh != 1 || c.dw != 1)
    return kiln_set_error("topi_nn_conv2d (winograd): the workload is not a 3x3 stride-1 undilated convolution");
  w->m = topi_cuda_winograd_tile_size(c.IH);
  w->alpha = w->m + c.KW - 1;
  w->P = c.N * ((c.OH + w->m - 1) / w->m) * ((c.OW + w->m - 1) / w->m);
  w->CO = c.OC, w->CI = c.IC;
  return 0;
}

static int wino_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  WinoDims w;
  if (wino_dims(wl, &w)) return -1;
  SplitOpts b = {.nparts = 4, .filter = tile_b_filter}, four = {.nparts = 4}, two = {.nparts = 2};
  if (space_define_split(cs, "tile_b", w.alpha * w.alpha, &b) || space_define_split(cs, "tile_y", w.CO, &four) ||
      space_define_split(cs, "tile_x", w.P, &four) || space_define_split(cs, "tile_rc", w.CI, &two))
    return -1;
  return cuda_define_unroll_knobs(cs, 128);
}

static int wino_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  WinoDims w;
  if (wino_dims(wl, &w)) return -1;
  int64_t limit = cuda_max_threads(t);
  int64_t tx = cuda_divisor_at_most(w.P, 16), ty = cuda_divisor_at_most(w.CO, limit / tx < 8 ? limit / tx : 8);
  config_set_split(cfg, "tile_b", 4, (int64_t[]){-1, 1, 1, 1});
  config_set_split(cfg, "tile_y", 4, (int64_t[]){-1, 1, ty, 1});
  config_set_split(cfg, "tile_x", 4, (int64_t[]){-1, 1, tx, 1});
  config_set_split(cfg, "tile_rc", 2, (int64_t[]){-1, cuda_divisor_at_most(w.CI, 8)});
  config_set_other(cfg, "auto_unroll_max_step", opt_int(128));
  config_set_other(cfg, "unroll_explicit", opt_int(1));
  return 0;
}

static int wino_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  WinoDims w;
  if (wino_dims(wl, &w)) return -1;
  if (cuda_check_split(cfg, "tile_b", 4, w.alpha * w.alpha, "transformed tile elements") ||
      cuda_check_split(cfg, "tile_y", 4, w.CO, "output channels") || cuda_check_split(cfg, "tile_x", 4, w.P, "tiles") ||
      cuda_check_split(cfg, "tile_rc", 2, w.CI, "input channels") || cuda_check_unroll_knobs(cfg, 128))
    return -1;
  return cuda_check_threads(t, cfg, 3, (const char *const[]){"tile_b", "tile_y", "tile_x"});
}

/* ---- the compute ---- */



typedef struct Ctx {
  Tensor *t;
  Expr *i0, *i1, *i2, *i3;
  int which; /* 0 kernel, 1 data, 2 inverse */
} Ctx;

static Expr *term(int r, int s, void *ud) {
  Ctx *c = ud;
  switch (c->which) {
  case 0:
    return te_read4(c->t, c->i1, c->i0, c32(r), c32(s)); /* kernel[co][ci][r][s] */
  case 1:
    return te_read4(c->t, c->i0, c->i1, ir_add(c->i2, c32(r)), ir_add(c->i3, c32(s)));
  default:
    return te_read4(c->t, c32(r), c32(s), c->i0, c->i1); /* bgemm[r][s][co][p] */
  }
}

static Tensor *wino_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  Conv2DWorkload c;
  WinoDims w;
  if (wl_conv2d_parse(wl, &c) || wino_dims(wl, &w)) return NULL;
  if (nin < 2) return kiln_set_error("%s (winograd): expected data and kernel", wl->name), NULL;
  Tensor *data = in[0], *kernel = in[1];
  int m = (int)w.m, A = (int)w.alpha;
  /* [alpha, alpha, CI, CO]: the kernel transform was computed already (an
   * OIHW weight [CO, CI, 3, 3] cannot have this shape: alpha > 3) */
  bool packed = kernel->ndim == 4 && te_dim(kernel, 0) == A && te_dim(kernel, 1) == A && te_dim(kernel, 2) == c.IC &&
                te_dim(kernel, 3) == c.OC;
  int64_t nH = (c.OH + m - 1) / m, nW = (c.OW + m - 1) / m;
  double AT[4 * 6], G[6 * 3], BT[6 * 6];
  if (topi_winograd_matrices(m, 3, AT, G, BT)) return NULL;
  DType dt = c.out_dtype;
  /* zero padding out to whole tiles */
  int64_t pads[8] = {0, 0, c.pt, c.pl, 0, 0, nH * m + 2 - c.IH - c.pt, nW * m + 2 - c.IW - c.pl};
  Tensor *pad = topi_pad(data, pads, TOPI_PAD_CONSTANT, 0);
  if (!pad) return NULL;
  Expr **br = KNEWN(Expr *, A * A);
  /* kernel_pack[eps][nu][ci][co] */
  Expr **kv = te_axis_vars(4, (const char *[]){"eps", "nu", "ci", "co"});
  Ctx kc = {kernel, kv[2], kv[3], NULL, NULL, 0};
  for (int e = 0; e < A && !packed; e++)
    for (int n = 0; n < A; n++) br[e * A + n] = topi_winograd_sparse_sum(3, 3, &G[e * 3], &G[n * 3], term, &kc, dt);
  Tensor *kp = packed ? kernel
                      : te_compute("kernel_pack", 4, (Expr *[]){c32(A), c32(A), c32(c.IC), c32(c.OC)}, kv,
                                   topi_winograd_select_2d(kv[0], kv[1], A, A, br), "winograd_kernel_pack");
  /* data_pack[eps][nu][ci][p] */
  Expr **dv = te_axis_vars(4, (const char *[]){"eps", "nu", "ci", "p"});
  Expr *b = ir_floordiv(dv[3], c32(nH * nW)), *rem = ir_floormod(dv[3], c32(nH * nW));
  Ctx dc = {pad, b, dv[2], ir_mul(ir_floordiv(rem, c32(nW)), c32(m)), ir_mul(ir_floormod(rem, c32(nW)), c32(m)), 1};
  br = KNEWN(Expr *, A * A);
  for (int e = 0; e < A; e++)
    for (int n = 0; n < A; n++) br[e * A + n] = topi_winograd_sparse_sum(A, A, &BT[e * A], &BT[n * A], term, &dc, dt);
  Tensor *dp = te_compute("data_pack", 4, (Expr *[]){c32(A), c32(A), c32(c.IC), c32(w.P)}, dv,
                          topi_winograd_select_2d(dv[0], dv[1], A, A, br), "winograd_data_pack");
  /* bgemm[eps][nu][co][p] */
  IterVar *ci = te_reduce_axis_c(c.IC, "ci");
  Expr **gv = te_axis_vars(4, (const char *[]){"eps", "nu", "co", "p"});
  Expr *prod = ir_mul(te_read4(kp, gv[0], gv[1], ci->var, gv[2]), te_read4(dp, gv[0], gv[1], ci->var, gv[3]));
  Tensor *bg = te_compute("bgemm", 4, (Expr *[]){c32(A), c32(A), c32(c.OC), c32(w.P)}, gv, ir_sum(prod, 1, &ci),
                          "winograd_bgemm");
  /* inverse[co][p][vh][vw] */
  Expr **iv = te_axis_vars(4, (const char *[]){"co", "p", "vh", "vw"});
  Ctx ic = {bg, iv[0], iv[1], NULL, NULL, 2};
  Expr **ob = KNEWN(Expr *, m * m);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++) {
      double a[6], bb[6];
      for (int e = 0; e < A; e++) a[e] = AT[i * A + e], bb[e] = AT[j * A + e];
      ob[i * m + j] = topi_winograd_sparse_sum(A, A, a, bb, term, &ic, dt);
    }
  Tensor *inv = te_compute("inverse", 4, (Expr *[]){c32(c.OC), c32(w.P), c32(m), c32(m)}, iv,
                           topi_winograd_select_2d(iv[2], iv[3], m, m, ob), "winograd_inverse");
  /* output[n][co][h][w] */
  Expr **ov = te_axis_vars(4, (const char *[]){"n", "co", "h", "w"});
  Expr *p = ir_add(ir_mul(ov[0], c32(nH * nW)),
                   ir_add(ir_mul(ir_floordiv(ov[2], c32(m)), c32(nW)), ir_floordiv(ov[3], c32(m))));
  Expr *body = te_read4(inv, ov[1], p, ir_floormod(ov[2], c32(m)), ir_floormod(ov[3], c32(m)));
  return te_compute("conv2d_nchw_winograd", 4, (Expr *[]){c32(c.N), c32(c.OC), c32(c.OH), c32(c.OW)}, ov, body,
                    "conv2d_nchw_winograd");
}

/* The tuning task's inputs: the data and the transformed kernel
 * [alpha, alpha, CI, CO], what a model's convolution runs on. */
static int wino_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t, (void)cfg;
  Conv2DWorkload c;
  WinoDims w;
  if (wl_conv2d_parse(wl, &c) || wino_dims(wl, &w)) return -1;
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 4, (int64_t[]){c.N, c.IC, c.IH, c.IW}, c.dtype);
  (*in)[1] = te_placeholder_c("kernel_pack", 4, (int64_t[]){w.alpha, w.alpha, c.IC, c.OC}, c.dtype);
  return 0;
}

/* ---- the schedule ---- */

static Tensor *input_tagged(Tensor *t, const char *tag) {
  for (int i = 0; t && i < t->ninputs; i++)
    if (t->inputs[i]->tag && !strcmp(t->inputs[i]->tag, tag)) return t->inputs[i];
  return NULL;
}

/* a transform: (c, p) fused over blocks of 128 threads, eps and nu unrolled */
static int schedule_transform(Schedule *s, Tensor *t, int64_t threads) {
  Stage *st = sch_stage(s, t);
  IterVar *f, *bb, *tt;
  if (!st || stage_fuse(st, stage_axis(st, 2), stage_axis(st, 3), &f) || stage_split(st, f, c32(threads), &bb, &tt) ||
      stage_reorder(st, 4, (IterVar *[]){bb, tt, stage_axis(st, 0), stage_axis(st, 1)}) ||
      stage_bind(st, bb, "blockIdx.x") || stage_bind(st, tt, "threadIdx.x") || stage_unroll(st, stage_axis(st, 0)))
    return -1;
  return stage_unroll(st, stage_axis(st, 1));
}

int topi_cuda_schedule_conv2d_winograd(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *conv, int nout,
                                       Tensor **outs) {
  if (!s || !conv) return -1;
  if (!conv->tag || strcmp(conv->tag, "conv2d_nchw_winograd"))
    return kiln_set_error("topi_nn_conv2d (winograd) schedule: anchor '%s' has tag '%s', expected "
                          "conv2d_nchw_winograd",
                          conv->name, conv->tag ? conv->tag : "");
  Tensor *inv = input_tagged(conv, "winograd_inverse"), *bg = input_tagged(inv, "winograd_bgemm");
  Tensor *kp = input_tagged(bg, "winograd_kernel_pack"), *dp = input_tagged(bg, "winograd_data_pack");
  /* a pre-computed kernel transform: bgemm's other input is the weight */
  bool packed = false;
  for (int i = 0; !kp && bg && dp && i < bg->ninputs; i++)
    if (bg->inputs[i] != dp && bg->inputs[i]->kind == TE_PLACEHOLDER) kp = bg->inputs[i], packed = true;
  if (!inv || !bg || !kp || !dp) return kiln_set_error("topi_nn_conv2d (winograd) schedule: '%s' is not the Winograd compute", conv->name);
  int64_t threads = cuda_max_threads(t) < 128 ? cuda_max_threads(t) : 128;
  Tensor *output, *OLo;
  if (cuda_group_epilogue(s, conv, nout ? outs[0] : conv, 4, (Tensor *[]){kp, dp, bg, inv}, &output, &OLo)) return -1;
  if ((!packed && schedule_transform(s, kp, threads)) || schedule_transform(s, dp, threads)) return -1;

  /* bgemm */
  Tensor *OL = sch_cache_write(s, bg, "local");
  Tensor *AA = OL ? sch_cache_read(s, kp, "shared", 1, &OL) : NULL;
  Tensor *BB = AA ? sch_cache_read(s, dp, "shared", 1, &OL) : NULL;
  if (!BB) return -1;
  Stage *sc = sch_stage(s, bg);
  IterVar *b, *scope, *bz[4], *by[4], *bx[4];
  if (stage_fuse(sc, stage_axis(sc, 0), stage_axis(sc, 1), &b) || stage_split_nparts(sc, b, c32(1), &scope, &b) ||
      cuda_apply_split(sc, b, cfg, "tile_b", 4, bz) || cuda_apply_split(sc, stage_axis(sc, 2), cfg, "tile_y", 4, by) ||
      cuda_apply_split(sc, stage_axis(sc, 3), cfg, "tile_x", 4, bx))
    return -1;
  if (cuda_tile_bind(sc, scope, 3, (IterVar *const *const[]){bz, by, bx})) return -1;
  Stage *sl = sch_stage(s, OL);
  IterVar *lb, *rc[2];
  if (stage_compute_at(sl, sc, bx[2]) || stage_fuse(sl, stage_axis(sl, 0), stage_axis(sl, 1), &lb) ||
      cuda_apply_split(sl, stage_reduce_axis(sl, 0), cfg, "tile_rc", 2, rc) ||
      stage_reorder(sl, 5, (IterVar *[]){rc[0], rc[1], lb, stage_axis(sl, 2), stage_axis(sl, 3)}) ||
      stage_compute_at(sch_stage(s, AA), sl, rc[0]) || stage_compute_at(sch_stage(s, BB), sl, rc[0]))
    return -1;
  int64_t th[3] = {cuda_split_part(cfg, "tile_b", 2), cuda_split_part(cfg, "tile_y", 2), cuda_split_part(cfg, "tile_x", 2)};
  if (cuda_coop_fetch(s, AA, th, false) || cuda_coop_fetch(s, BB, th, false) || cuda_unroll_pragmas(sc, scope, cfg))
    return -1;

  /* inverse and output: one m x m tile per thread */
  int64_t m = te_dim(inv, 2);
  Stage *so = sch_stage(s, output), *si = sch_stage(s, inv);
  IterVar *ho, *wo, *hi, *wi, *f, *bb, *tt;
  if (stage_tile(so, stage_axis(so, 2), stage_axis(so, 3), c32(m), c32(m), &ho, &wo, &hi, &wi) ||
      stage_fuse(so, stage_axis(so, 0), stage_axis(so, 1), &f) || stage_fuse(so, f, ho, &f) || stage_fuse(so, f, wo, &f) ||
      stage_split(so, f, c32(threads), &bb, &tt) || stage_bind(so, bb, "blockIdx.x") || stage_bind(so, tt, "threadIdx.x"))
    return -1;
  if (OLo != output && stage_compute_at(sch_stage(s, OLo), so, tt)) return -1;
  if (stage_set_scope(si, "local") || stage_compute_at(si, so, tt) || stage_unroll(si, stage_axis(si, 2)) ||
      stage_unroll(si, stage_axis(si, 3)))
    return -1;
  return 0;
}

const Template topi_cuda_conv2d_winograd_template = {
    .name = "topi_nn_conv2d",
    .anchor_tag = "conv2d_nchw_winograd",
    .key = "gpu",
    .template_key = "winograd",
    .define_space = wino_space,
    .fallback = wino_fallback,
    .check = wino_check,
    .placeholders = wino_placeholders,
    .compute = wino_compute,
    .schedule = topi_cuda_schedule_conv2d_winograd,
};
