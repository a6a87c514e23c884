/*
 * x86/winograd.c - conv2d_NCHWc_winograd.x86: 3x3 stride-1 convolution by
 * Winograd's minimal filtering F(m x m, 3 x 3) in the NCHW[x]c layout, and
 * its tunable schedule (TVM's topi conv2d_winograd for arm_cpu and cuda,
 * laid out for the x86 register blocks of conv2d.c).
 *
 * With alpha = m + 2 and the output cut into m x m tiles (nH x nW of them;
 * a partial last row or column of tiles is computed on zero padding and
 * cropped):
 *   U[e, n, k, c, kb] = (G g G^T)[e, n]     the kernel transform, once per
 *                                           model (fold_constant; laid out
 *                                           [alpha, alpha, CO/ob, CI, ob])
 *   V[e, n, b, th, tw, c, cb] = (B^T d B)[e, n] of the input tile at
 *                                           (th, tw)  ("data_pack")
 *   M[e, n, b, k, th, tw, kb] = sum_ci U * V  one GEMM per (e, n): the
 *                                           register block of conv2d.c,
 *                                           tw x k-chunks x ob  ("bgemm")
 *   Y[b, k, h, w, kb] = (A^T M A)[h % m, w % m]   the output transform,
 *                                           the group's epilogue inlined
 * The matrices (../winograd.c) come from the Cook-Toom construction over the points 0, 1,
 * -1, 1/2, -1/2 (TVM's choice: exact in binary, and smaller entries than
 * +-2 keep float32 error low).  The transforms are not written as
 * reductions over constant matrices: each output element of a transform
 * is a select over the (constant after unrolling) transform indices whose
 * branches are the explicit sums of the nonzero terms, so an unrolled
 * transform is exactly its sparse arithmetic, vectorized over the 16-wide
 * channel block.
 *
 * Both transforms compute into local buffers (a tile and channel block's
 * V, a tile's output with the epilogue), then store, with their sums
 * nested (topi_winograd_nested_sum): the compiler then loads each input
 * once and computes each of the first pass's sums once.  At the root over
 * the whole batch the float32 input transform reads the input in place
 * (bfloat16 pairs keep the copy), each read
 * testing the padding's bounds, rather than after a padded copy (a pass of
 * its own over the input: 861 KB written and read again for ResNet's
 * 64 @56).  ResNet-50 batch 1, per-node minima of two sets of 10
 * alternating profiles (load 1.9-3.9), inlined / copied: 64 @56 0.90x and
 * 0.89x at 1 thread, 0.87x and 0.95x at 2; 128 @28 0.98x / 0.97x, 0.90x /
 * 1.09x; 256 @14 0.99x / 0.98x, 1.03x / 0.99x.
 *
 * The schedule computes a block of tile rows at a time: for each block
 * (the parallel loop) the padded input rows, V and M of the block, then
 * the block's output.  When the block is the whole image (tile_rows = nH)
 * the stages run at the root instead, each parallel on its own (the GEMM
 * over (e, n)), so the kernel transform U streams through the caches
 * once; the fallback does that unless U fits L2 and V and M of the whole
 * batch do not fit L3 (topi_x86_winograd_at_root).  At batch > 1 the
 * root stages run in passes of "tile_n" samples (the output's sample loop
 * outside, V, M and the padded input computed in it; wino_pass_samples).
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

/* The F(4x4) tiles a pass of the root stages needs for its transformed
 * kernel to keep the FMAs busy when it comes from memory. */
#define WINO_MIN_TILES4 32

/* The tile size m: 4, or 2 for outputs under 8 x 8 and where F(4x4)'s
 * transformed kernel U (36 x IC x OC floats) does not fit L2, so a model
 * reads it from memory, and a sample has fewer than WINO_MIN_TILES4 of
 * its tiles.  The GEMMs read U once a pass, each float of it serving 2
 * FLOPs per tile: at 16 tiles (14x14) a core at its FMA peak (about 260
 * GFLOP/s) would draw U at 32 GB/s, more than one core gets from memory;
 * F(2x2) has 16 x IC x OC floats (2.25x fewer) for 49 tiles, at 1.36x the
 * GEMM FLOPs.  bench_conv2d --cold --epilogue --cpu-time, 1 thread (CPU
 * time, load 4-6), effective GFLOP/s F(4x4) / F(2x2): ResNet's 3x3 256
 * @14 (U 9.4 / 4.2 MB) 321-325 / 311-401 (Winograd / direct 1.28-1.35x /
 * 1.35-1.56x); at 28x28 (49 tiles) F(4x4) stays ahead: ResNet's 128 @28
 * 531-551 / 423-476, VGG-16's 256->512 @28 605-613 / 440-464, 512 @28
 * 679-694 / 478-483.  The batch does not count: F(2x2) runs a sample a
 * pass (wino_pass_samples), where F(4x4) over the whole batch at once
 * streamed V and M of the batch through L3.  ResNet's 256 @14 at batch 8,
 * F(4x4) over the batch / F(2x2) a sample a pass: bench_conv2d --batch 8
 * --winograd (as above, load 2.3) 358-397 / 406-498, VGG-16's 512 @14
 * 453-462 / 411-483; in ResNet-50 at batch 8 the five nodes' per-node
 * minima of 3 alternating profiles (load 2.3) 0.84x at 1 thread, 0.62x
 * at 2. */
int64_t topi_x86_winograd_tile_size(int64_t IC, int64_t OC, int64_t OH, int64_t OW) {
  if (OH < 8 || OW < 8) return 2;
  double u4 = 36.0 * (double)IC * (double)OC * 4, tiles4 = (double)((OH + 3) / 4) * (double)((OW + 3) / 4);
  /* m is part of the task (the folded U and the template's compute agree
   * on it from the workload alone), so no target is at hand: the L2 of
   * target_l2_bytes' default, a CPU the table does not describe */
  return u4 > (double)target_l2_bytes(NULL) && tiles4 < WINO_MIN_TILES4 ? 2 : 4;
}

/* Whether a 3x3 stride-1 layer whose output is under 8 x 8 (F(2x2, 3x3))
 * still takes Winograd because the batch gives it enough tiles: at least
 * 128 over the batch, so the transformed kernel (16 x IC x OC floats,
 * 17 MB at 512 channels) is read for 8 samples' tiles at once rather than
 * one's.  bench_conv2d --winograd --cpu-time --cold --epilogue, 1 thread
 * (CPU time: load 6-8), Winograd / direct (fallback configs), ResNet's
 * 3x3 512 @7: batch 8 (128 tiles) 1.26-1.32x, batch 1 (16 tiles) 0.95x. */
bool topi_x86_winograd_batch_small(int64_t N, int64_t OH, int64_t OW) {
  int64_t m = 2;
  return N > 1 && (OH < 8 || OW < 8) && N * ((OH + m - 1) / m) * ((OW + m - 1) / m) >= 128;
}

/* ---- the kernel transform ---- */

typedef struct KCtx {
  Tensor *k;
  Expr *o, *i;
} KCtx;

static Expr *kterm(int r, int s, void *ud) {
  KCtx *c = ud;
  return ir_cast(DT_F64, te_read4(c->k, c->o, c->i, c32(r), c32(s)));
}

Tensor *topi_x86_winograd_weight_transform(Tensor *kernel, int64_t m, int64_t ob) {
  if (!kernel) return NULL;
  int64_t s[4];
  if (kernel->ndim != 4 || !te_shape_const(kernel, s))
    return kiln_set_error("winograd weight transform: kernel must be a 4-D OIHW tensor of constant shape"), NULL;
  if (s[2] != 3 || s[3] != 3)
    return kiln_set_error("winograd weight transform: kernel is %lldx%lld, expected 3x3", (long long)s[2],
                          (long long)s[3]),
           NULL;
  if (m != 2 && m != 4) return kiln_set_error("winograd weight transform: tile size %lld, expected 2 or 4", (long long)m), NULL;
  if (ob < 1 || s[0] % ob)
    return kiln_set_error("winograd weight transform: the block %lld does not divide the %lld output channels",
                          (long long)ob, (long long)s[0]),
           NULL;
  if (!dt_is_float(kernel->dtype)) return kiln_set_error("winograd weight transform: kernel must be floating-point"), NULL;
  int alpha = (int)m + 2;
  double AT[4 * 6], G[6 * 3], BT[6 * 6];
  if (topi_winograd_matrices((int)m, 3, AT, G, BT)) return NULL;
  Expr **v = te_axis_vars(5, (const char *[]){"eps", "nu", "k", "c", "kb"});
  KCtx ctx = {kernel, ir_add(ir_mul(v[2], c32(ob)), v[4]), v[3]};
  /* the sums in double, rounded once */
  Expr **br = KNEWN(Expr *, alpha * alpha);
  for (int e = 0; e < alpha; e++)
    for (int n = 0; n < alpha; n++) br[e * alpha + n] = topi_winograd_sparse_sum(3, 3, &G[e * 3], &G[n * 3], kterm, &ctx, DT_F64);
  Expr *body = ir_cast(kernel->dtype, topi_winograd_select_2d(v[0], v[1], alpha, alpha, br));
  return te_compute("winograd_kernel", 5, (Expr *[]){c32(alpha), c32(alpha), c32(s[0] / ob), c32(s[1]), c32(ob)}, v,
                    body, "injective");
}

/* ---- the convolution ---- */

typedef struct VCtx {
  Tensor *pad;
  Expr *b, *c, *h0, *w0, *cb;
} VCtx;

static Expr *vterm(int r, int s, void *ud) {
  VCtx *c = ud;
  return te_read5(c->pad, c->b, c->c, ir_add(c->h0, c32(r)), ir_add(c->w0, c32(s)), c->cb);
}

Expr *topi_x86_winograd_input_sum(Tensor *pad, int64_t m, const double *BT, int e, int n, Expr *b, Expr *th, Expr *tw,
                                  Expr *c, Expr *cb, DType t) {
  int A = (int)m + 2;
  VCtx vc = {pad, b, c, ir_mul(th, c32(m)), ir_mul(tw, c32(m)), cb};
  return topi_winograd_nested_sum(A, A, &BT[e * A], &BT[n * A], vterm, &vc, t);
}

typedef struct YCtx {
  Tensor *M;
  Expr **idx; /* eps, nu slots filled per term */
} YCtx;

static Expr *yterm(int e, int n, void *ud) {
  YCtx *c = ud;
  Expr *idx[7];
  memcpy(idx, c->idx, sizeof idx);
  idx[0] = c32(e), idx[1] = c32(n);
  return te_read(c->M, 7, idx);
}

Tensor *topi_x86_winograd_output(Tensor *M, int64_t m, const double *AT, int64_t OH, int64_t OW, const char *name,
                                 const char *tag) {
  int A = (int)m + 2;
  Expr **ov = te_axis_vars(5, (const char *[]){"n", "k", "h", "w", "kb"});
  Expr *hi = ir_floormod(ov[2], c32(m)), *wi = ir_floormod(ov[3], c32(m));
  YCtx yc = {M, (Expr *[]){NULL, NULL, ov[0], ov[1], ir_floordiv(ov[2], c32(m)), ir_floordiv(ov[3], c32(m)), ov[4]}};
  Expr **ob_ = KNEWN(Expr *, m * m);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++) {
      double ci[6], cj[6];
      for (int e = 0; e < A; e++) ci[e] = AT[i * A + e], cj[e] = AT[j * A + e];
      ob_[i * m + j] = topi_winograd_nested_sum(A, A, ci, cj, yterm, &yc, M->dtype);
    }
  Tensor *out = te_compute(name, 5, (Expr *[]){M->shape[2], M->shape[3], c32(OH), c32(OW), M->shape[6]}, ov,
                           topi_winograd_select_2d(hi, wi, (int)m, (int)m, ob_), tag);
  te_set_attr(out, "tile_size", c32(m));
  return out;
}

Tensor *topi_x86_conv2d_winograd_NCHWc(Tensor *data, Tensor *U, int64_t m, const int padding[4], DType out_dtype) {
  if (!data || !U) return NULL;
  int64_t d[5], u[5];
  if (data->ndim != 5 || !te_shape_const(data, d))
    return kiln_set_error("conv2d_winograd_NCHWc: data must be 5-D NCHW[x]c with a constant shape, got %d-D", data->ndim),
           NULL;
  if (U->ndim != 5 || !te_shape_const(U, u))
    return kiln_set_error("conv2d_winograd_NCHWc: the transformed kernel must be 5-D [alpha, alpha, CO/ob, CI, ob], got "
                          "%d-D",
                          U->ndim),
           NULL;
  if (m != 2 && m != 4) return kiln_set_error("conv2d_winograd_NCHWc: tile size %lld, expected 2 or 4", (long long)m), NULL;
  int64_t alpha = m + 2;
  if (u[0] != alpha || u[1] != alpha)
    return kiln_set_error("conv2d_winograd_NCHWc: the transformed kernel is %lldx%lld per channel pair; tile size %lld "
                          "needs %lldx%lld",
                          (long long)u[0], (long long)u[1], (long long)m, (long long)alpha, (long long)alpha),
           NULL;
  if (u[3] != d[1] * d[4])
    return kiln_set_error("conv2d_winograd_NCHWc: the transformed kernel has %lld input channels, data has %lld",
                          (long long)u[3], (long long)(d[1] * d[4])),
           NULL;
  if (!dt_eq(data->dtype, out_dtype) || !dt_eq(U->dtype, out_dtype) || !dt_is_float(out_dtype))
    return kiln_set_error("conv2d_winograd_NCHWc: data, kernel and output must share one floating-point type"), NULL;
  int pt = padding[0], pl = padding[1], pb = padding[2], pr = padding[3];
  if (pt < 0 || pl < 0 || pb < 0 || pr < 0) return kiln_set_error("conv2d_winograd_NCHWc: padding must be non-negative"), NULL;
  int64_t N = d[0], CIc = d[1], H = d[2], W = d[3], ib = d[4], COc = u[2], ob = u[4];
  int64_t OH = H + pt + pb - 2, OW = W + pl + pr - 2;
  if (OH < 1 || OW < 1) return kiln_set_error("conv2d_winograd_NCHWc: the 3x3 window is larger than the padded input"), NULL;
  int64_t nH = (OH + m - 1) / m, nW = (OW + m - 1) / m;
  /* zero padding out to whole tiles */
  Tensor *pad = x86_pad_nchwc(data, pt, pl, (int)(nH * m + 2 - H - pt), (int)(nW * m + 2 - W - pl));
  if (!pad) return NULL;
  double AT[4 * 6], G[6 * 3], BT[6 * 6];
  if (topi_winograd_matrices((int)m, 3, AT, G, BT)) return NULL;
  int A = (int)alpha;

  /* V = B^T d B per tile */
  Expr **vv = te_axis_vars(7, (const char *[]){"eps", "nu", "b", "th", "tw", "c", "cb"});
  Expr **br = KNEWN(Expr *, A * A);
  for (int e = 0; e < A; e++)
    for (int n = 0; n < A; n++)
      br[e * A + n] = topi_x86_winograd_input_sum(pad, m, BT, e, n, vv[2], vv[3], vv[4], vv[5], vv[6], out_dtype);
  Tensor *V = te_compute("data_pack", 7,
                         (Expr *[]){c32(alpha), c32(alpha), c32(N), c32(nH), c32(nW), c32(CIc), c32(ib)}, vv,
                         topi_winograd_select_2d(vv[0], vv[1], A, A, br), "winograd_data_pack");

  /* M = U V, one GEMM per (eps, nu) */
  IterVar *rc = te_reduce_axis_c(CIc, "c"), *rcb = te_reduce_axis_c(ib, "cb");
  Expr **mv = te_axis_vars(7, (const char *[]){"eps", "nu", "b", "k", "th", "tw", "kb"});
  Expr *va = te_read(V, 7, (Expr *[]){mv[0], mv[1], mv[2], mv[4], mv[5], rc->var, rcb->var});
  Expr *ua = te_read5(U, mv[0], mv[1], mv[3], ir_add(ir_mul(rc->var, c32(ib)), rcb->var), mv[6]);
  Tensor *M = te_compute("bgemm", 7, (Expr *[]){c32(alpha), c32(alpha), c32(N), c32(COc), c32(nH), c32(nW), c32(ob)}, mv,
                         ir_sum(ir_mul(va, ua), 2, (IterVar *[]){rc, rcb}), "winograd_bgemm");

  /* Y = A^T M A, cropped */
  return topi_x86_winograd_output(M, m, AT, OH, OW, "conv2d_winograd_NCHWc", "conv2d_NCHWc_winograd");
}

/* ---- the template ---- */

int topi_x86_winograd_parse(const Workload *wl, int64_t m, Conv2DWorkload *c, int64_t *nH, int64_t *nW) {
  if (wl_conv2d_parse(wl, c)) return -1;
  if (c->depthwise || c->KH != 3 || c->KW != 3 || c->sh != 1 || c->sw != 1 || c->dh != 1 || c->dw != 1)
    return kiln_set_error("%s: workload %s is not a 3x3, stride 1, dilation 1 convolution", wl->name, wl_describe(wl));
  if (!m) m = topi_x86_winograd_tile_size(c->IC, c->OC, c->OH, c->OW);
  *nH = (c->OH + m - 1) / m;
  *nW = (c->OW + m - 1) / m;
  return 0;
}

/* The tile grid of a workload (the workload must be 3x3 stride 1). */
static int wino_parse(const Workload *wl, Conv2DWorkload *c, int64_t *m, int64_t *nH, int64_t *nW) {
  if (topi_x86_winograd_parse(wl, 0, c, nH, nW)) return -1;
  *m = topi_x86_winograd_tile_size(c->IC, c->OC, c->OH, c->OW);
  return 0;
}

static bool reg_filter(const int64_t *sizes, int n, void *ud) {
  (void)ud;
  return sizes[n - 1] <= 16;
}

static bool oc_filter(const int64_t *sizes, int n, void *ud) {
  (void)ud;
  return sizes[1] <= 8 && sizes[n - 1] <= 64;
}

static bool ic_filter(const int64_t *sizes, int n, void *ud) {
  return sizes[n - 1] % *(const int64_t *)ud == 0;
}

int topi_x86_winograd_space(ConfigSpace *cs, const Conv2DWorkload *c, int64_t nH, int64_t nW, int64_t ic_group) {
  SplitOpts ic = {.filter = ic_filter, .filter_ud = &ic_group}, oc = {.nparts = 3, .filter = oc_filter},
            reg = {.filter = reg_filter};
  if (space_define_split(cs, "tile_ic", c->IC, &ic) || space_define_split(cs, "tile_oc", c->OC, &oc) ||
      space_define_split(cs, "tile_p", nW, &reg) || space_define_split(cs, "tile_rows", nH, NULL))
    return -1;
  return 0;
}

/* float32 only, "prefetch_w" (conv2d_NCHWc.x86's knob, 0, 1 or 2): the
 * GEMM's register block touches the part of U the block d blocks of
 * output channels ahead will read, spread over the block's tile rows, so
 * U, which a model reads from memory, streams in among the FMAs.  The
 * fallback takes 1 where the stages run at the root (U streams through
 * once), 0 in blocks of tile rows (U stays in L2 from block to block).
 * bench_conv2d --cold --epilogue --cpu-time, 1 thread, effective GFLOP/s
 * without / with (3 alternating runs, load 4, peak 279): ResNet's 64 @56
 * 523-607 / 610-659, 128 @28 547-583 / 722-812, 256 @14 (F(2x2))
 * 385-401 / 512-549, 512 @7 (F(2x2), 16 tiles) 229-232 / 291-311.  In
 * ResNet-50 (per-node minima of 8 alternating profiles, load 5), 1
 * thread: the five 256 @14 nodes 2931 -> 2187 us, the three 128 @28 1261
 * -> 897, the three 64 @56 1255 -> 1182; 2 threads 1638 -> 1218, 726 ->
 * 498, 757 -> 701. */
static int wino_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  Conv2DWorkload c;
  int64_t m = 0, nH = 0, nW = 0;
  if (wino_parse(wl, &c, &m, &nH, &nW) || topi_x86_winograd_space(cs, &c, nH, nW, 1)) return -1;
  if (space_define_knob(cs, "prefetch_w", 3, (OptVal[]){opt_int(0), opt_int(1), opt_int(2)})) return -1;
  /* batch > 1 only (batch-1 spaces keep their configs): the samples a
   * pass of the root stages covers; without it (older records) the whole
   * batch */
  return c.N > 1 ? x86_define_tile_n(cs, c.N) : 0;
}

/* Where the stages run at the root (tile_rows = all the rows), so the
 * transformed kernel U streams through the caches once, and where in
 * blocks of tile rows, each block's V and M staying in the cache while
 * every block reads all of U again:
 *   - U larger than a core's L2 (target_l2_bytes: 1 MiB here): at the
 *     root, as the blocks would each stream U from L3 or memory;
 *   - else at the root where V and M of the whole batch together fit in
 *     half the L3 (target_l3_bytes: 16 of this Zen 5's 32 MiB), in blocks
 *     where they do not (U then stays in L2 from block to block).
 * bench_conv2d --cpu-time --cold --epilogue (the run's CPU time: the
 * machine was loaded), 1 thread, effective GFLOP/s blocks / root:
 *   batch 1: ResNet's 64 @56 (U 0.6 MB, V + M 3.6 MB) 336 / 457, 128 @28
 *   (2.4 MB) 316-335 / 431-515, 256 @14 (9.4 MB) 187-211 / 286-288, VGG's
 *   128->256 @56 335 / 540, 256 @56 325 / 539, 64->128 @112 354 / 377,
 *   but VGG's 64 @224 (0.6 MB, V + M 58 MB) 476-498 / 243-257;
 *   batch 8: 64 @56 (0.6 MB, V + M 29 MB) 313-335 / 281-297, 128 @28
 *   312-322 / 423-434, 256 @14 182-252 / 367-371, VGG's 128 @112 (V + M
 *   230 MB) 351 / 459, 128->256 @56 358 / 525, 256 @56 312 / 550.
 * (Measured earlier by wall time with warm weights, blocks had won up to
 * 9.4 MB; a model reads U from memory.) */

/* Whether the fallback runs a layer's stages at the root (see above) on
 * t, for tile size m and U and V of value_bytes a channel (M is float32). */
static bool wino_at_root(const Target *t, int64_t N, int64_t IC, int64_t OC, int64_t OH, int64_t OW, int64_t m,
                         int64_t value_bytes) {
  int64_t a2 = (m + 2) * (m + 2);
  double tiles = (double)N * (double)((OH + m - 1) / m) * (double)((OW + m - 1) / m);
  double ubytes = (double)a2 * (double)IC * (double)OC * (double)value_bytes,
         vmbytes = (double)a2 * tiles * (double)(IC * value_bytes + OC * 4);
  return ubytes > (double)target_l2_bytes(t) || vmbytes <= (double)(target_l3_bytes(t) / 2);
}

/* The fallback's "tile_n", the samples each pass of the root stages
 * covers.  The whole batch at once streams V and M through L3 or memory
 * and reads the transformed kernel U once; passes keep a pass's V and M
 * near the core but read U once a pass, so they need enough tiles a pass
 * to pay for it.  Where one sample has at least WINO_MIN_TILES4 tiles
 * (as the tile size asks of U from memory) and its V and M fit a quarter
 * of the L3 (a core's share of the half the stages may use; larger, a
 * pass keeps nothing near the core either): the most samples (a divisor
 * of the batch, at most 8) whose V and M together fit the L2, at least
 * one; else the whole batch (at most 8 samples: the knob's candidates
 * are the divisors up to 8).  VGG-16 at batch 8 with its large maps in
 * passes too (V + M 11-29 MB a sample): 0.94x the time at 1 thread, but
 * 1.09x at 2 (per-node minima of 2 alternating profiles, load 3; its
 * 64->128 @112 1.43x, 256 @56 1.19x), end to end 1.26x; with the L3
 * condition level (0.95x / 0.96x, load 2.5-4).  bench_conv2d --batch 8
 * --winograd --cold --epilogue --cpu-time, 1 thread, effective GFLOP/s,
 * two rounds (load 3-3.6), tile_n 8 / 1 / 2 / 4: ResNet's 128 @28 (49
 * tiles, V + M 1.8
 * MB a sample) 521-409 / 665-619 / 653-600 / 519-454; VGG-16's 512 @28
 * 581 / 714 / 636 / 661, 256->512 @28 671 / 769 / 644 / 670, 256 @56
 * 527 / 572 / 569 / 585, 128 @112 339 / 379 / 363 / 299; with 16 tiles a
 * sample level in the bench (256 @14 378-356 / 341-398 / 410-353 /
 * 386-305, 512 @7 230-261 / 280-230 / 263-228 / 260-212) and in
 * ResNet-50 at batch 8 their nodes ran 1.18-1.23x slower at tile_n 1
 * (per-node minima of 3 alternating profiles, 1 and 2 threads, load 4-5),
 * where the three 128 @28 nodes ran 0.77x / 0.82x. */
static int64_t wino_pass_samples(const Target *t, const Conv2DWorkload *c, int64_t m) {
  int64_t a2 = (m + 2) * (m + 2), tiles = ((c->OH + m - 1) / m) * ((c->OW + m - 1) / m), best = 1;
  int64_t sample = a2 * tiles * (c->IC + c->OC) * 4; /* V and M of one sample */
  bool whole = tiles < WINO_MIN_TILES4 || sample > target_l3_bytes(t) / 4;
  for (int64_t d = 2; d <= 8 && d <= c->N; d++)
    if (c->N % d == 0 && (whole || d * sample <= target_l2_bytes(t))) best = d;
  return best;
}

bool topi_x86_winograd_at_root(const Target *t, int64_t N, int64_t IC, int64_t OC, int64_t OH, int64_t OW) {
  return wino_at_root(t, N, IC, OC, OH, OW, topi_x86_winograd_tile_size(IC, OC, OH, OW), 4);
}

/* The fallback's GEMM register block for OC output channels over nW tile
 * columns: tiles x output-channel vectors, the tile count as large as it
 * goes up to 8 (a divisor of nW), at most 24 accumulators - or, float32
 * in blocks of tile rows on AVX-512, the whole register budget (28): a
 * block's GEMM covers one tile row, and a wider channel block reads its V
 * once for more output channels.  bench_conv2d --cpu-time --cold
 * --epilogue, 1 thread (CPU time, load 5-7), ResNet's 3x3 64 @56 at
 * batch 8 (in blocks), 7 tiles x 2 / x 4 channel vectors: 345-361 /
 * 472-483 GFLOP/s; at the root level or slower (64 @56 batch 1: 436-516 /
 * 473-506, 128 @28 batch 1: 518-556 / 479-515, batch 8: 484 / 489).
 * (bfloat16: not measured, keeps 24.) */
static void wino_reg_block(const Target *t, int64_t OC, int64_t nW, bool root, bool f32, int64_t *reg_p,
                           int64_t *reg_c) {
  int64_t lanes = t->vector_lanes, ob = x86_channel_block(OC, lanes);
  int64_t acc = !root && lanes >= 16 && f32 ? x86_reg_budget(t) : 24;
  *reg_p = x86_largest_divisor(nW, 8);
  *reg_c = x86_largest_divisor(OC / ob, acc / *reg_p < 8 ? acc / *reg_p : 8);
  if (*reg_c < 1) *reg_c = 1;
}

/* The fewest accumulators the float32 fallback's register block must hold
 * for Winograd to be chosen without records: fewer make its GEMM a
 * chain of dependent multiply-adds.  A prime tile-column count leaves one
 * tile a block: Inception-v3's 3x3 32->32 @149 (147 columns, 37 tiles)
 * gets 1 tile x 2 channel vectors.  bench_conv2d --cold --epilogue
 * --cpu-time, 1 thread (load 3), effective GFLOP/s Winograd / direct:
 * that layer (2 accumulators) 216-241 / 240-250 (0.90-0.96x); its 32->64
 * @147 neighbour (1 x 4) 424-431 / 235-238 (1.81x); 32->32 @56 (7 x 2)
 * 1.80-1.85x.  In the model (per-node minima of 6 alternating profiles,
 * load 3), that layer Winograd / direct: 1 thread 1730 / 1612 us, 2
 * threads 1285 / 830 us. */
#define WINO_MIN_ACCUMULATORS 4

bool topi_x86_winograd_block_pays(const Target *t, int64_t N, int64_t IC, int64_t OC, int64_t OH, int64_t OW) {
  int64_t m = topi_x86_winograd_tile_size(IC, OC, OH, OW), reg_p, reg_c;
  wino_reg_block(t, OC, (OW + m - 1) / m, wino_at_root(t, N, IC, OC, OH, OW, m, 4), true, &reg_p, &reg_c);
  return reg_p * reg_c >= WINO_MIN_ACCUMULATORS;
}

void topi_x86_winograd_fallback(const Target *t, ConfigEntity *cfg, const Conv2DWorkload *c, int64_t m, int64_t nH,
                                int64_t nW, int64_t ic_group, DType value) {
  int64_t value_bytes = value.bits / 8;
  int64_t ob = x86_channel_block(c->OC, t->vector_lanes), ib = x86_largest_divisor(c->IC, ob);
  if (ib % ic_group) ib = ic_group * x86_largest_divisor(c->IC / ic_group, ob / ic_group > 0 ? ob / ic_group : 1);
  bool root = wino_at_root(t, c->N, c->IC, c->OC, c->OH, c->OW, m, value_bytes);
  int64_t reg_p, reg_c;
  wino_reg_block(t, c->OC, nW, root, value.code == kDLFloat && value.bits == 32, &reg_p, &reg_c);
  int64_t rows = root ? nH : 1;
  config_set_split(cfg, "tile_ic", 2, (int64_t[]){-1, ib});
  config_set_split(cfg, "tile_oc", 3, (int64_t[]){-1, reg_c, ob});
  config_set_split(cfg, "tile_p", 2, (int64_t[]){-1, reg_p});
  config_set_split(cfg, "tile_rows", 2, (int64_t[]){-1, rows});
  cfg->is_fallback = true;
}

static int wino_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  int64_t m = 0, nH = 0, nW = 0;
  if (wino_parse(wl, &c, &m, &nH, &nW)) return -1;
  topi_x86_winograd_fallback(t, cfg, &c, m, nH, nW, 1, DT_F32);
  config_set_other(cfg, "prefetch_w", opt_int(wino_at_root(t, c.N, c.IC, c.OC, c.OH, c.OW, m, 4) ? 1 : 0));
  if (c.N > 1) config_set_other(cfg, "tile_n", opt_int(wino_pass_samples(t, &c, m)));
  return 0;
}

int topi_x86_winograd_check(const ConfigEntity *cfg, const Workload *wl, const Conv2DWorkload *c, int64_t nH,
                            int64_t nW) {
  if (x86_check_split(cfg, "tile_ic", 2, c->IC, "input channels", true) ||
      x86_check_split(cfg, "tile_oc", 3, c->OC, "output channels", true) ||
      x86_check_split(cfg, "tile_p", 2, nW, "tile columns", true) ||
      x86_check_split(cfg, "tile_rows", 2, nH, "tile rows", true))
    return kiln_error_context("%s", wl->name);
  return 0;
}

static int wino_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  int64_t m = 0, nH = 0, nW = 0;
  if (wino_parse(wl, &c, &m, &nH, &nW)) return -1;
  return topi_x86_winograd_check(cfg, wl, &c, nH, nW);
}

static Tensor *wino_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)cfg;
  Conv2DWorkload c;
  int64_t m = 0, nH = 0, nW = 0;
  if (wino_parse(wl, &c, &m, &nH, &nW)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes data and the transformed kernel, got %d inputs", wl->name, nin), NULL;
  return topi_x86_conv2d_winograd_NCHWc(in[0], in[1], m, (int[]){c.pt, c.pl, c.pb, c.pr}, c.out_dtype);
}

/* data NCHW[ib]c, the transformed kernel [m+2, m+2, OC/ob, IC, ob] */
static int wino_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  Conv2DWorkload c;
  int64_t m = 0, nH = 0, nW = 0;
  if (wino_parse(wl, &c, &m, &nH, &nW)) return -1;
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ib, c.IH, c.IW, ib}, c.dtype);
  (*in)[1] = te_placeholder_c("kernel", 5, (int64_t[]){m + 2, m + 2, c.OC / ob, c.IC, ob}, c.dtype);
  return 0;
}

const Template topi_x86_conv2d_winograd_NCHWc_template = {
    .name = "conv2d_NCHWc_winograd.x86", .anchor_tag = "conv2d_NCHWc_winograd", .key = "cpu", .define_space = wino_space,
    .fallback = wino_fallback, .check = wino_check, .placeholders = wino_placeholders, .compute = wino_compute,
    .schedule = topi_x86_schedule_conv2d_winograd_NCHWc,
};

/* ---- the schedule ---- */

static Tensor *input_tagged(Tensor *t, const char *tag) {
  for (int i = 0; i < t->ninputs; i++)
    if (t->inputs[i]->tag && !strcmp(t->inputs[i]->tag, tag)) return t->inputs[i];
  return NULL;
}

int topi_x86_schedule_conv2d_winograd_NCHWc(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *conv, int nout,
                                            Tensor **outs) {
  if (!s || !conv) return -1;
  /* also winograd_bf16.c's compute, whose data_pack holds bfloat16 pairs
   * of input channels (uint32, ib / 2 words a block) */
  if (!conv->tag || (strcmp(conv->tag, "conv2d_NCHWc_winograd") && strcmp(conv->tag, "conv2d_NCHWc_winograd_bf16")))
    return kiln_set_error("conv2d_NCHWc_winograd.x86 schedule: anchor '%s' has tag '%s', expected "
                          "conv2d_NCHWc_winograd or conv2d_NCHWc_winograd_bf16",
                          conv->name, conv->tag ? conv->tag : "");
  Tensor *M = input_tagged(conv, "winograd_bgemm"), *V = M ? input_tagged(M, "winograd_data_pack") : NULL;
  Tensor *pad = NULL;
  if (V)
    for (int i = 0; i < V->ninputs; i++) pad = V->inputs[i];
  if (!M || !V || !pad)
    return kiln_set_error("conv2d_NCHWc_winograd.x86 schedule: '%s' is not a conv2d_winograd_NCHWc compute", conv->name);
  Expr *ma = te_get_attr(conv, "tile_size");
  int64_t m;
  if (!ma || !ir_is_const_int(ma, &m))
    return kiln_set_error("conv2d_NCHWc_winograd.x86 schedule: '%s' has no tile_size", conv->name);
  int64_t nH = te_dim(M, 4), nW = te_dim(M, 5), ob = te_dim(M, 6), vblk = te_dim(V, 6), COc = te_dim(M, 3);
  int64_t ib = dt_eq(V->dtype, DT_U32) ? 2 * vblk : vblk;
  int no = 0, np = 0, nr = 0;
  int64_t cfg_ic;
  const int64_t *toc = NULL, *tp = NULL, *tr = NULL;
  if ((cfg_ic = cfg_split_inner(cfg, "tile_ic")) < 0 || !(toc = cfg_split(cfg, "tile_oc", &no)) ||
      !(tp = cfg_split(cfg, "tile_p", &np)) || !(tr = cfg_split(cfg, "tile_rows", &nr)))
    return kiln_error_context("conv2d_NCHWc_winograd.x86");
  if (no != 3 || np != 2 || nr != 2)
    return kiln_set_error("conv2d_NCHWc_winograd.x86: knob 'tile_oc' needs 3 parts, 'tile_p' and 'tile_rows' 2");
  int64_t reg_c = toc[1], reg_p = tp[1], rows = tr[1];
  if (cfg_ic != ib || toc[2] != ob)
    return kiln_set_error("conv2d_NCHWc_winograd.x86: config blocks tile_ic %lld / tile_oc %lld do not match the "
                          "compute's layout (input block %lld, output block %lld)",
                          (long long)cfg_ic, (long long)toc[2], (long long)ib, (long long)ob);
  if (reg_c < 1 || COc % reg_c || reg_p < 1 || nW % reg_p || rows < 1 || nH % rows)
    return kiln_set_error("conv2d_NCHWc_winograd.x86: register block %lld channel blocks x %lld tiles and %lld rows "
                          "per block must divide the %lld channel blocks, %lld tile columns and %lld tile rows",
                          (long long)reg_c, (long long)reg_p, (long long)rows, (long long)COc, (long long)nW,
                          (long long)nH);
  bool at_root = rows == nH;
  /* "tile_n" (batch > 1): the samples each pass of the root stages covers */
  int64_t N = te_dim(M, 2), nb = cfg_other_int(cfg, "tile_n", N);
  if (nb < 1 || N % nb)
    return kiln_set_error("conv2d_NCHWc_winograd.x86: knob 'tile_n' = %lld samples a pass must divide the batch %lld",
                          (long long)nb, (long long)N);
  bool passes = at_root && nb < N;

  Stage *sp = pad->kind == TE_COMPUTE ? sch_stage(s, pad) : NULL;
  if (x86_inline_group(s, conv, sp)) return -1;
  Tensor *main_out = x86_main_output(conv, nout, outs);
  /* the GEMM's register block is a cache of M (made before M's loops are
   * split) */
  Tensor *mc = sch_cache_write(s, M, "local");
  /* the input transform of a tile and channel block into a local buffer,
   * then stored: the generated C's stores to V could alias the padded
   * input, so only a local lets the compiler load each input once and
   * share the transform's row sums (topi_winograd_nested_sum) */
  Tensor *vl = mc ? sch_cache_write(s, V, "local") : NULL;
  if (!vl) return -1;
  Stage *sc = sch_stage(s, conv), *sm = sch_stage(s, M), *smc = sch_stage(s, mc), *sv = sch_stage(s, V),
        *svl = sch_stage(s, vl);
  if (!sc || !sm || !smc || !sv || !svl) return -1;
  Stage *so = sc;
  if (main_out && main_out != conv) { /* the conv is not written: the epilogue reads M */
    if (stage_compute_inline(sc)) return -1;
    so = sch_stage(s, main_out);
  }
  /* the output transform (and epilogue) of a tile into a local buffer
   * too, for the same reason: the stores to the output could alias M */
  Tensor *yl = sch_cache_write(s, so->origin, "local");
  Stage *syl = yl ? sch_stage(s, yl) : NULL;
  if (!syl) return -1;

  /* the output: blocks of `rows` tile rows, each tile's m x m outputs
   * unrolled and the channel block vectorized */
  IterVar *n = stage_axis(so, 0), *k = stage_axis(so, 1), *h = stage_axis(so, 2), *w = stage_axis(so, 3),
          *kb = stage_axis(so, 4);
  IterVar *ho, *hr, *thi, *hi, *tw, *wi, *f;
  if (stage_split(so, h, c32(rows * m), &ho, &hr) || stage_split(so, hr, c32(m), &thi, &hi) ||
      stage_split(so, w, c32(m), &tw, &wi))
    return -1;
  IterVar *pass = NULL;
  if (passes && stage_split(so, n, c32(nb), &pass, &n)) return -1;
  if (at_root) {
    if (stage_reorder(so, 8, (IterVar *[]){n, k, ho, thi, tw, hi, wi, kb}) || stage_fuse(so, n, k, &f) ||
        stage_fuse(so, f, ho, &f) || stage_fuse(so, f, thi, &f) || stage_parallel(so, f))
      return -1;
  } else {
    if (stage_reorder(so, 8, (IterVar *[]){n, ho, k, thi, tw, hi, wi, kb}) || stage_fuse(so, n, ho, &f) ||
        stage_parallel(so, f))
      return -1;
  }
  if (stage_unroll(so, hi) || stage_unroll(so, wi) || x86_vec_or_unroll(t, so, kb, ob)) return -1;
  if (stage_compute_at(syl, so, tw) || stage_unroll(syl, stage_axis(syl, 2)) || stage_unroll(syl, stage_axis(syl, 3)) ||
      x86_vec_or_unroll(t, syl, stage_axis(syl, 4), ob))
    return -1;

  /* the GEMM: per (eps, nu) a register block of reg_c channel vectors x
   * reg_p tiles accumulates over the input channels */
  IterVar *me = stage_axis(sm, 0), *mn = stage_axis(sm, 1), *mb = stage_axis(sm, 2), *mk = stage_axis(sm, 3),
          *mth = stage_axis(sm, 4), *mtw = stage_axis(sm, 5), *mkb = stage_axis(sm, 6);
  IterVar *mko, *mki, *mpo, *mpi;
  if (stage_split(sm, mk, c32(reg_c), &mko, &mki) || stage_split(sm, mtw, c32(reg_p), &mpo, &mpi)) return -1;
  if (stage_reorder(sm, 9, (IterVar *[]){me, mn, mb, mko, mth, mpo, mki, mpi, mkb})) return -1;
  if (stage_compute_at(smc, sm, mpo)) return -1;
  if (stage_unroll(sm, mki) || stage_unroll(sm, mpi) || x86_vec_or_unroll(t, sm, mkb, ob)) return -1;
  IterVar *ce = stage_axis(smc, 0), *cn = stage_axis(smc, 1), *cbb = stage_axis(smc, 2), *ck = stage_axis(smc, 3),
          *cth = stage_axis(smc, 4), *ctw = stage_axis(smc, 5), *ckb = stage_axis(smc, 6);
  IterVar *rc = stage_reduce_axis(smc, 0), *rcb = stage_reduce_axis(smc, 1);
  if (stage_reorder(smc, 9, (IterVar *[]){ce, cn, cbb, cth, rc, rcb, ck, ctw, ckb}) || stage_unroll(smc, ck) ||
      stage_unroll(smc, ctw) || x86_vec_or_unroll(t, smc, ckb, ob))
    return -1;
  /* "prefetch_w": U [alpha, alpha, OC/ob, IC, ob] holds a block's reg_c
   * chunks x IC input channels one after another, each step of rcb a
   * channel, so the next block is reg_c x IC steps ahead (after an
   * (eps, nu)'s last block: the next one's first); the block's tile rows
   * (mth) each read its U again and share the touches */
  Tensor *U = NULL;
  for (int i = 0; i < M->ninputs; i++)
    if (M->inputs[i] != V) U = M->inputs[i];
  if (x86_prefetch_w_blocks("conv2d_NCHWc_winograd.x86", smc, cfg, U, rcb, mth, rows, reg_c * (U ? te_dim(U, 3) : 0)))
    return -1;

  /* the input transform: per tile and channel block, every (eps, nu)
   * unrolled, the block vectorized */
  IterVar *ve = stage_axis(sv, 0), *vn = stage_axis(sv, 1), *vb = stage_axis(sv, 2), *vth = stage_axis(sv, 3),
          *vtw = stage_axis(sv, 4), *vc = stage_axis(sv, 5), *vcb = stage_axis(sv, 6);
  if (stage_reorder(sv, 7, (IterVar *[]){vb, vth, vtw, vc, ve, vn, vcb}) || stage_unroll(sv, ve) ||
      stage_unroll(sv, vn) || x86_vec_or_unroll(t, sv, vcb, vblk))
    return -1;
  if (stage_compute_at(svl, sv, vc) || stage_unroll(svl, stage_axis(svl, 0)) || stage_unroll(svl, stage_axis(svl, 1)) ||
      x86_vec_or_unroll(t, svl, stage_axis(svl, 6), vblk))
    return -1;

  if (at_root) {
    IterVar *fe, *fv;
    if (stage_fuse(sm, me, mn, &fe) || stage_parallel(sm, fe)) return -1;
    if (stage_fuse(sv, vb, vth, &fv) || stage_parallel(sv, fv)) return -1;
    if (passes && (stage_compute_at(sm, so, pass) || stage_compute_at(sv, so, pass))) return -1;
    IterVar *fp;
    if (sp && passes) { /* a pass's padded input, its channel chunks x rows in parallel */
      if (stage_compute_at(sp, so, pass) || stage_fuse(sp, stage_axis(sp, 1), stage_axis(sp, 2), &fp) ||
          stage_parallel(sp, fp) || x86_vec_or_unroll(t, sp, stage_axis(sp, 4), ib))
        return -1;
    } else if (sp && dt_eq(V->dtype, DT_U32)) {
      /* bfloat16 pairs (winograd_bf16.c): each word of V reads two
       * channels, and read in place every one tests the padding's bounds:
       * ResNet-18 --precision bf16 took 1.9x the time, so the copy stays */
      if (x86_schedule_pad(s, pad)) return -1;
    } else if (sp && stage_compute_inline(sp)) { /* the whole batch at once: the transform reads the input in place */
      return -1;
    }
  } else {
    if (stage_compute_at(sm, so, f) || stage_compute_at(sv, so, f)) return -1;
    if (sp) {
      if (stage_compute_at(sp, so, f)) return -1;
      if (x86_vec_or_unroll(t, sp, stage_axis(sp, 4), ib)) return -1;
    }
  }
  return x86_schedule_others(s, so, conv, (int)ob);
}
