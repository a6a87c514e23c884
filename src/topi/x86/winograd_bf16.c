/*
 * x86/winograd_bf16.c - conv2d_NCHWc_winograd_bf16.x86: a 3x3 stride-1
 * convolution by Winograd F(2 x 2, 3 x 3) whose transformed-domain GEMM
 * runs on AVX512-BF16 (`kiln compile --precision bf16`, docs/bf16.md).
 *
 * conv2d_NCHWc_winograd.x86 (winograd.c) with the GEMM over pairs of
 * input channels: the transforms are float32 (the kernel's summed in
 * double), their results are rounded to bfloat16 once, and
 *
 *   U[e, n, k, cw, kb] = bf16_pack2(G g G^T at (e, n) of input channels
 *                          lo(cw), hi(cw))  (folded; uint32 [4, 4, CO/ob,
 *                                             CI/2, ob])
 *   V[e, n, b, th, tw, c, cp] = bf16_pack2((B^T d B)[e, n] of channels
 *                          c ib + cp and c ib + cp + ib/2)  ("data_pack",
 *                                             uint32, ib/2 words a block)
 *   M[e, n, b, k, th, tw, kb] = sum over c, cp of bf16_dot2(V, U)
 *                                             (float32: one VDPBF16PS per
 *                                             16 output channels and 2
 *                                             input channels)
 *   Y = A^T M A                               (float32, the epilogue fused)
 *
 * A word pairs channel cp of a block with channel cp + ib/2 (not 2 cp with
 * 2 cp + 1): both halves of a word are then contiguous float32 vectors of
 * the padded input, so the input transform stays vector arithmetic.  U
 * pairs the kernel's channels the same way (lo(cw) = (cw / (ib/2)) ib +
 * cw % (ib/2), hi(cw) = lo(cw) + ib/2).
 *
 * Only m = 2: the larger entries of F(4 x 4)'s transforms amplify the
 * rounding of U and V to bfloat16 past the 1e-2 a layer is held to (2.1e-2
 * relative error in a model of one layer, against 3.3e-3 for m = 2 and
 * 2.3e-3 for the bfloat16 direct kernel; docs/bf16.md).
 *
 * Knobs and schedule are conv2d_NCHWc_winograd.x86's (tile_ic with an even
 * inner part, tile_oc, tile_p, tile_rows), over the tile grid of m = 2;
 * the schedule is winograd.c's, which reads the input block from the
 * uint32 data_pack stage as twice its words.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#define M_BF16 2 /* the tile size (see the file comment) */

static Expr *c32(int64_t v) { return ir_i32(v); }

/* ---- the kernel transform, rounded to bfloat16 pairs ---- */

Tensor *topi_x86_winograd_weight_transform_bf16(Tensor *kernel, int64_t ib, int64_t ob) {
  if (!kernel) return NULL;
  if (ib < 2 || ib % 2 || kernel->ndim != 4 || !te_shape_const(kernel, NULL) || te_dim(kernel, 1) % ib)
    return kiln_set_error("winograd bf16 weight transform: the input block %lld must be even and divide the kernel's "
                          "input channels",
                          (long long)ib),
           NULL;
  if (!dt_eq(kernel->dtype, DT_F32)) return kiln_set_error("winograd bf16 weight transform: kernel must be float32"), NULL;
  Tensor *U = topi_x86_winograd_weight_transform(kernel, M_BF16, ob);
  if (!U) return NULL;
  int64_t A = M_BF16 + 2, CI = te_dim(kernel, 1), hb = ib / 2;
  Expr **v = te_axis_vars(5, (const char *[]){"eps", "nu", "k", "cw", "kb"});
  Expr *lo = ir_add(ir_mul(ir_floordiv(v[3], c32(hb)), c32(ib)), ir_floormod(v[3], c32(hb)));
  Expr *body = ir_call2(INTRIN_bf16_pack2, te_read5(U, v[0], v[1], v[2], lo, v[4]),
                        te_read5(U, v[0], v[1], v[2], ir_add(lo, c32(hb)), v[4]));
  return te_compute("winograd_kernel_bf16", 5, (Expr *[]){c32(A), c32(A), c32(te_dim(U, 2)), c32(CI / 2), c32(ob)}, v,
                    body, "injective");
}

/* ---- the convolution ---- */

Tensor *topi_x86_conv2d_winograd_NCHWc_bf16(Tensor *data, Tensor *U, const int padding[4]) {
  const char *op = "conv2d_winograd_NCHWc_bf16";
  if (!data || !U) return NULL;
  int64_t d[5], u[5], m = M_BF16, A = M_BF16 + 2;
  if (data->ndim != 5 || !te_shape_const(data, d) || !dt_eq(data->dtype, DT_F32) || d[4] % 2)
    return kiln_set_error("%s: data must be float32 NCHW[x]c with an even block and a constant shape", op), NULL;
  if (U->ndim != 5 || !te_shape_const(U, u) || !dt_eq(U->dtype, DT_U32) || u[0] != A || u[1] != A)
    return kiln_set_error("%s: the transformed kernel must be bfloat16 pairs packed as uint32 [4, 4, CO/ob, CI/2, ob] "
                          "(topi_x86_winograd_weight_transform_bf16 makes it)",
                          op),
           NULL;
  if (u[3] * 2 != d[1] * d[4])
    return kiln_set_error("%s: the transformed kernel has %lld input channels, data has %lld", op, (long long)(u[3] * 2),
                          (long long)(d[1] * d[4])),
           NULL;
  int pt = padding[0], pl = padding[1], pb = padding[2], pr = padding[3];
  if (pt < 0 || pl < 0 || pb < 0 || pr < 0) return kiln_set_error("%s: padding must be non-negative", op), NULL;
  int64_t N = d[0], CIc = d[1], H = d[2], W = d[3], ib = d[4], hb = ib / 2, COc = u[2], ob = u[4];
  int64_t OH = H + pt + pb - 2, OW = W + pl + pr - 2;
  if (OH < 1 || OW < 1) return kiln_set_error("%s: the 3x3 window is larger than the padded input", op), NULL;
  int64_t nH = (OH + m - 1) / m, nW = (OW + m - 1) / m;
  Tensor *pad = x86_pad_nchwc(data, pt, pl, (int)(nH * m + 2 - H - pt), (int)(nW * m + 2 - W - pl));
  if (!pad) return NULL;
  double AT[4 * 6], G[6 * 3], BT[6 * 6];
  if (topi_winograd_matrices((int)m, 3, AT, G, BT)) return NULL;
  int a = (int)A;

  /* V = B^T d B per tile in float32, rounded to pairs (cp, cp + ib/2) */
  Expr **vv = te_axis_vars(7, (const char *[]){"eps", "nu", "b", "th", "tw", "c", "cp"});
  Expr **br = KNEWN(Expr *, a * a);
  for (int e = 0; e < a; e++)
    for (int n = 0; n < a; n++)
      br[e * a + n] =
          ir_call2(INTRIN_bf16_pack2, topi_x86_winograd_input_sum(pad, m, BT, e, n, vv[2], vv[3], vv[4], vv[5], vv[6], DT_F32),
                   topi_x86_winograd_input_sum(pad, m, BT, e, n, vv[2], vv[3], vv[4], vv[5], ir_add(vv[6], c32(hb)), DT_F32));
  Tensor *V = te_compute("data_pack", 7, (Expr *[]){c32(A), c32(A), c32(N), c32(nH), c32(nW), c32(CIc), c32(hb)}, vv,
                         topi_winograd_select_2d(vv[0], vv[1], a, a, br), "winograd_data_pack");

  /* M = U V over the pairs, one GEMM per (eps, nu) */
  IterVar *rc = te_reduce_axis_c(CIc, "c"), *rcp = te_reduce_axis_c(hb, "cp");
  Expr **mv = te_axis_vars(7, (const char *[]){"eps", "nu", "b", "k", "th", "tw", "kb"});
  Expr *va = te_read(V, 7, (Expr *[]){mv[0], mv[1], mv[2], mv[4], mv[5], rc->var, rcp->var});
  Expr *ua = te_read5(U, mv[0], mv[1], mv[3], ir_add(ir_mul(rc->var, c32(hb)), rcp->var), mv[6]);
  Tensor *M = te_compute("bgemm", 7, (Expr *[]){c32(A), c32(A), c32(N), c32(COc), c32(nH), c32(nW), c32(ob)}, mv,
                         ir_sum(ir_call2(INTRIN_bf16_dot2, va, ua), 2, (IterVar *[]){rc, rcp}), "winograd_bgemm");

  /* Y = A^T M A, cropped */
  return topi_x86_winograd_output(M, m, AT, OH, OW, "conv2d_winograd_NCHWc_bf16", "conv2d_NCHWc_winograd_bf16");
}

/* ---- the template ---- */

static int wino_parse(const Workload *wl, Conv2DWorkload *c, int64_t *nH, int64_t *nW) {
  if (topi_x86_winograd_parse(wl, M_BF16, c, nH, nW)) return -1;
  if (c->IC % 2) return kiln_set_error("%s: %lld input channels cannot be paired for bfloat16", wl->name, (long long)c->IC);
  return 0;
}

static int wino_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  Conv2DWorkload c;
  int64_t nH = 0, nW = 0;
  if (wino_parse(wl, &c, &nH, &nW)) return -1;
  return topi_x86_winograd_space(cs, &c, nH, nW, 2);
}

/* conv2d_NCHWc_winograd.x86's fallback over the tile grid of m = 2, with
 * an even input block and the transformed kernel's 2 bytes a value. */
static int wino_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  int64_t nH = 0, nW = 0;
  if (wino_parse(wl, &c, &nH, &nW)) return -1;
  topi_x86_winograd_fallback(t, cfg, &c, M_BF16, nH, nW, 2, dt_make(kDLBfloat, 16, 1));
  return 0;
}

static int wino_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  (void)t;
  Conv2DWorkload c;
  int64_t nH = 0, nW = 0;
  if (wino_parse(wl, &c, &nH, &nW) || topi_x86_winograd_check(cfg, wl, &c, nH, nW)) return -1;
  return x86_conv_ic_group_check(cfg, wl, 2, "bfloat16");
}

static Tensor *wino_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  Conv2DWorkload c;
  int64_t nH = 0, nW = 0;
  if (wino_parse(wl, &c, &nH, &nW)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes data and the transformed kernel, got %d inputs", wl->name, nin), NULL;
  return topi_x86_conv2d_winograd_NCHWc_bf16(in[0], in[1], (int[]){c.pt, c.pl, c.pb, c.pr});
}

/* data float32 NCHW[ib]c, the transformed kernel uint32 [4, 4, OC/ob, IC/2, ob] */
static int wino_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  Conv2DWorkload c;
  int64_t nH = 0, nW = 0;
  if (wino_parse(wl, &c, &nH, &nW)) return -1;
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  if (ib < 2 || ib % 2 || ob < 1) return kiln_set_error("%s: tile_ic must be even", wl->name);
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ib, c.IH, c.IW, ib}, DT_F32);
  (*in)[1] = te_placeholder_c("kernel_bf16", 5, (int64_t[]){M_BF16 + 2, M_BF16 + 2, c.OC / ob, c.IC / 2, ob}, DT_U32);
  return 0;
}

const Template topi_x86_conv2d_winograd_NCHWc_bf16_template = {
    .name = "conv2d_NCHWc_winograd_bf16.x86", .anchor_tag = "conv2d_NCHWc_winograd_bf16", .key = "cpu",
    .define_space = wino_space, .fallback = wino_fallback, .check = wino_check, .placeholders = wino_placeholders,
    .compute = wino_compute, .schedule = topi_x86_schedule_conv2d_winograd_NCHWc,
};
