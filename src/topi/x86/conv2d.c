/*
 * x86/conv2d.c - conv2d_NCHWc.x86: convolution in the NCHW[x]c layout and
 * its tunable schedule (TVM's topi/x86/conv2d.py, conv2d_avx_common.py and
 * conv2d_avx_1x1.py, with the same knobs).
 *
 * Layouts: data [N, IC/ic_bn, H, W, ic_bn], kernel OIHW[ic_bn]i[oc_bn]o
 * [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn, oc_bn], output [N, OC/oc_bn, OH, OW,
 * oc_bn].  Padding is its own stage ("data_pad"); a strided 1x1
 * convolution instead reads a sampled copy of the rows and columns it
 * uses ("data_sub", x86_subsample_nchwc) with stride 1.
 *
 * The schedule keeps a register block of reg_n output columns x oc_bn
 * output channels (tile_ow's inner part x tile_oc's inner part) in a
 * "local" cache stage: the block's accumulators are a small array whose
 * every access has a constant index once the block's column loop is
 * unrolled, so the C compiler keeps them in vector registers.  The cache is
 * computed at (fused n/oc-chunk/oh, ow.outer) of the group's output; inside,
 * the reduction streams ic-chunk, kh, kw and the ic block, each step a
 * broadcast of one input value times one kernel vector added into reg_n
 * accumulators.  The group's elementwise epilogue (bias, batch-norm scale,
 * residual add, relu...) is inlined into the output stage, which reads the
 * block from the registers: the conv never stores its raw result.  For 1x1
 * kernels the block is tile_oh rows x reg_n columns.  tile_ow need not
 * divide the width: the last column block is then a guarded tail (the
 * fallback's choice for a prime width, x86_conv_block_cols).
 *
 * Two output-channel chunks per block.  With one chunk of oc_bn
 * channels, a block of reg_n columns needs a broadcast load per FMA, and
 * the two load ports, not the FMA units, bound the kernel (ResNet-50's 1x1
 * layers at 62-69 % of the FMA peak).  Where the block (tile_n x tile_oh
 * x reg_n columns) fills at most half the register budget and the layer
 * has an even number of chunks, the block spans two neighbouring chunks, the
 * chunk loop innermost beside the channel block, so each broadcast feeds
 * two FMAs (x86_conv_occ_block).  The layout and the knobs are TVM's; the
 * tuner reaches both forms through tile_ow (and tile_oh), and the batch-1
 * fallback picks a block of half the budget (14 columns x 2 chunks at 56,
 * 28 and 14 columns; at batch > 1 too, samples filling what the columns
 * leave: 2 samples x 7 columns x 2 chunks at 7x7).  bench_conv2d, ResNet-50's fifteen 1x1 layers at 1 thread: a
 * mean of 145 GFLOP/s with one chunk, 159 with two, 126 with four (load
 * 9-14: the same run, the ratio is what counts).  Other windows take two
 * chunks the same way at batch block 1 (a 3x3 layer's 7- or 14-column
 * block: 7 accumulators alone cannot cover the FMA latency), and their
 * batch-1 fallback takes 14 columns x 2 chunks over 28 x 1 as well.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

/* The padded input (or the data itself when there is no padding). */
Tensor *x86_pad_nchwc(Tensor *data, int pt, int pl, int pb, int pr) {
  if (!pt && !pl && !pb && !pr) return data;
  int64_t s[5];
  te_shape_const(data, s);
  Expr **v = te_axis_vars(5, (const char *[]){"n", "c", "h", "w", "cb"});
  Expr *in = ir_and(ir_and(ir_ge(v[2], c32(pt)), ir_lt(v[2], c32(s[2] + pt))),
                    ir_and(ir_ge(v[3], c32(pl)), ir_lt(v[3], c32(s[3] + pl))));
  Expr *rd = te_read5(data, v[0], v[1], ir_sub(v[2], c32(pt)), ir_sub(v[3], c32(pl)), v[4]);
  Expr *body = (pt || pb) || (pl || pr) ? ir_select(in, rd, ir_const(0, data->dtype)) : rd;
  return te_compute("data_pad", 5, (Expr *[]){c32(s[0]), c32(s[1]), c32(s[2] + pt + pb), c32(s[3] + pl + pr), c32(s[4])},
                    v, body, "injective");
}

/* A strided 1x1 convolution's input: the columns and rows it reads
 * (h * sh - pt, w * sw - pl; zero where that is padding), as a compact
 * [N, C, OH, OW, cb] tensor.  The convolution then runs with stride 1.
 * Read in place, a stride-2 layer's register block takes every other
 * input column, and its broadcasts and the hardware prefetcher see half
 * of each 128-byte line pair unused: ResNet-50's stride-2 1x1 layers ran
 * at 78-83 % of the FMA peak, where their stride-1 neighbours reach
 * 93-99 % (bench_conv2d, 1 thread); the copy moves a quarter of the
 * input once. */
Tensor *x86_subsample_nchwc(Tensor *data, int pt, int pl, int sh, int sw, int64_t OH, int64_t OW) {
  int64_t s[5];
  te_shape_const(data, s);
  Expr **v = te_axis_vars(5, (const char *[]){"n", "c", "h", "w", "cb"});
  Expr *ih = ir_sub(ir_mul(v[2], c32(sh)), c32(pt)), *iw = ir_sub(ir_mul(v[3], c32(sw)), c32(pl));
  Expr *rd = te_read5(data, v[0], v[1], ih, iw, v[4]);
  if (pt || pl || (OH - 1) * sh - pt >= s[2] || (OW - 1) * sw - pl >= s[3]) {
    Expr *in = ir_and(ir_and(ir_ge(ih, c32(0)), ir_lt(ih, c32(s[2]))), ir_and(ir_ge(iw, c32(0)), ir_lt(iw, c32(s[3]))));
    rd = ir_select(in, rd, ir_const(0, data->dtype));
  }
  return te_compute("data_sub", 5, (Expr *[]){c32(s[0]), c32(s[1]), c32(OH), c32(OW), c32(s[4])}, v, rd, "injective");
}

/* The NCHW[x]c convolution, plain (groups = 1) or grouped: with groups,
 * every channel block lies inside one group (the blocks divide the
 * channels per group), the kernel is [OC/oc_bn, CPG/ic_bn, KH, KW, ic_bn,
 * oc_bn] (CPG = IC / groups) and output chunk occ reads the input chunks
 * of its group, g * CPG/ic_bn + ic with g = occ / (KPG/oc_bn).  A plain
 * conv with real_ic < IC (a channel-padded input) reduces over the first
 * real_ic channels only, in steps of g = gcd(real_ic, ic_bn) channels:
 * "ic" counts real_ic / g steps, "icb" the g channels of one (the block
 * loop of the schedule), so the loops have constant extents and no guard
 * (24 real channels in blocks of 16: 3 steps of 8; a guarded tail block
 * inside the reduction measured slower on a two-chunk register block). */
static Tensor *conv_nchwc_compute(const char *op, Tensor *data, Tensor *kernel, const int strides[2],
                                  const int padding[4], const int dilation[2], int64_t groups, int64_t real_ic,
                                  DType out_dtype) {
  if (!data || !kernel) return NULL;
  int64_t d[5], k[6];
  if (data->ndim != 5 || !te_shape_const(data, d))
    return kiln_set_error("%s: data must be 5-D NCHW[x]c with a constant shape, got %d-D", op, data->ndim), NULL;
  if (kernel->ndim != 6 || !te_shape_const(kernel, k))
    return kiln_set_error("%s: kernel must be 6-D OIHW[x]i[y]o with a constant shape, got %d-D", op, kernel->ndim),
           NULL;
  int64_t IC = d[1] * d[4], OC = k[0] * k[5];
  if (groups < 1 || IC % groups || OC % groups)
    return kiln_set_error("%s: groups = %lld must divide the %lld input and %lld output channels", op,
                          (long long)groups, (long long)IC, (long long)OC),
           NULL;
  int64_t cpg = IC / groups, kpg = OC / groups;
  if (k[4] != d[4] || k[1] * k[4] != cpg)
    return kiln_set_error("%s: kernel input channels %lld x %lld do not match data's %lld channels%s in blocks of "
                          "%lld (blocks must agree)",
                          op, (long long)k[1], (long long)k[4], (long long)cpg,
                          groups > 1 ? kfmt(" per group (%lld groups)", (long long)groups) : "", (long long)d[4]),
           NULL;
  if (cpg % d[4] || kpg % k[5])
    return kiln_set_error("%s: channel blocks %lld (input) and %lld (output) must divide the %lld input and %lld output "
                          "channels of each of the %lld groups (pick blocks that divide them)",
                          op, (long long)d[4], (long long)k[5], (long long)cpg, (long long)kpg, (long long)groups),
           NULL;
  int sh = strides[0], sw = strides[1], dh = dilation[0], dw = dilation[1];
  int pt = padding[0], pl = padding[1], pb = padding[2], pr = padding[3];
  int64_t KH = k[2], KW = k[3], OH, OW;
  if (x86_conv_out_size(op, d[2], d[3], KH, KW, strides, padding, dilation, &OH, &OW)) return NULL;
  bool sub = KH == 1 && KW == 1 && (sh > 1 || sw > 1);
  Tensor *pad = sub ? x86_subsample_nchwc(data, pt, pl, sh, sw, OH, OW) : x86_pad_nchwc(data, pt, pl, pb, pr);
  if (!pad) return NULL;
  if (sub) sh = sw = 1, dh = dw = 1; /* the convolution reads the sampled input with stride 1 */
  if (groups > 1 || real_ic < 1 || real_ic > IC) real_ic = IC;
  int64_t g = gcd_i64(real_ic, d[4]);
  int64_t per = d[4] / g; /* steps per block */
  IterVar *ic = te_reduce_axis_c(groups > 1 ? k[1] : real_ic / g, "ic"), *kh = te_reduce_axis_c(KH, "kh"),
          *kw = te_reduce_axis_c(KW, "kw"), *icb = te_reduce_axis_c(g, "icb");
  Expr **v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *ih = ir_add(ir_mul(v[2], c32(sh)), ir_mul(kh->var, c32(dh)));
  Expr *iw = ir_add(ir_mul(v[3], c32(sw)), ir_mul(kw->var, c32(dw)));
  Expr *kc = per > 1 ? ir_floordiv(ic->var, c32(per)) : ic->var;
  Expr *lane = per > 1 ? ir_add(ir_mul(ir_floormod(ic->var, c32(per)), c32(g)), icb->var) : icb->var;
  Expr *chunk = kc;
  if (groups > 1) /* the group's first input chunk, plus ic */
    chunk = ir_add(ir_mul(ir_floordiv(v[1], c32(kpg / k[5])), c32(k[1])), ic->var);
  Expr *a = te_read5(pad, v[0], chunk, ih, iw, lane);
  Expr *b = te_read(kernel, 6, (Expr *[]){v[1], kc, kh->var, kw->var, lane, v[4]});
  if (!a || !b) return NULL;
  if (!dt_eq(a->dtype, out_dtype)) a = ir_cast(out_dtype, a);
  if (!dt_eq(b->dtype, out_dtype)) b = ir_cast(out_dtype, b);
  Expr *body = ir_sum(ir_mul(a, b), 4, (IterVar *[]){ic, kh, kw, icb});
  const char *tag = groups > 1 ? "group_conv2d_NCHWc" : "conv2d_NCHWc";
  return te_compute(tag, 5, (Expr *[]){c32(d[0]), c32(k[0]), c32(OH), c32(OW), c32(k[5])}, v, body, tag);
}

Tensor *x86_conv2d_NCHWc_compute(const char *op, Tensor *data, Tensor *kernel, const int strides[2],
                                 const int padding[4], const int dilation[2], int64_t groups, DType out_dtype) {
  return conv_nchwc_compute(op, data, kernel, strides, padding, dilation, groups, 0, out_dtype);
}

Tensor *topi_x86_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                              const int dilation[2], DType out_dtype) {
  return topi_x86_conv2d_NCHWc_real(data, kernel, strides, padding, dilation, 0, out_dtype);
}

Tensor *topi_x86_conv2d_NCHWc_real(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                   const int dilation[2], int64_t real_ic, DType out_dtype) {
  return conv_nchwc_compute("conv2d_NCHWc", data, kernel, strides, padding, dilation, 1, real_ic, out_dtype);
}

/* ---- the template ---- */

bool x86_conv_ow_filter(const int64_t *sizes, int n, void *ud) {
  (void)ud;
  return sizes[n - 1] <= 64;
}

static bool ic_filter(const int64_t *sizes, int n, void *ud) { return sizes[n - 1] % *(const int64_t *)ud == 0; }

/* conv2d_NCHWc.x86's space; ic_multiple > 1 keeps only input blocks that
 * are multiples of it (conv2d_NCHWc_int8.x86's quadruples of channels). */
int x86_conv_space(const Target *t, ConfigSpace *cs, const Workload *wl, int64_t ic_multiple) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (c.depthwise) return kiln_set_error("conv2d_NCHWc.x86: workload '%s' is depthwise", wl->name);
  SplitOpts ow = {.filter = x86_conv_ow_filter}, ic = {.filter = ic_filter, .filter_ud = &ic_multiple};
  if (space_define_split(cs, "tile_ic", c.IC, ic_multiple > 1 ? &ic : NULL) || space_define_split(cs, "tile_oc", c.OC, NULL) ||
      space_define_split(cs, "tile_ow", c.OW, &ow))
    return -1;
  if (c.N > 1 && x86_define_tile_n(cs, c.N)) return -1;
  if (c.KH == 1 && c.KW == 1) {
    OptVal oh[2] = {opt_int(1), opt_int(2)};
    return space_define_knob(cs, "tile_oh", c.OH > 1 ? 2 : 1, oh);
  }
  return space_define_knob(cs, "unroll_kw", 2, (OptVal[]){opt_bool(true), opt_bool(false)});
}

/* Whether wl is conv2d_NCHWc.x86's own task (the bfloat16 and int8
 * templates start from its space and fallback): by the template table. */
static bool is_fp32_task(const Workload *wl) {
  return template_find(wl->name, NULL, NULL) == &topi_x86_conv2d_NCHWc_template;
}

/* Whether "occ_inner" pays (the schedule's parallel loop steps a 1x1
 * layer's output-channel chunks inside its rows, so a row block's input
 * is read from L3 or memory once for all its blocks of chunks rather than
 * once per block, and at two threads each thread reads half the input
 * rather than all of it): a 1x1 layer with more than one block of chunks
 * that reads at least as many input values as it writes outputs, whose
 * input (in_value_bytes a value, all samples) outgrows the L2 and whose
 * weights (w_value_bytes a value) fit a quarter of it, so every row block
 * rereads them from L2.  conv2d_NCHWc.x86's fallback (float32: 4 and 4)
 * and conv2d_NCHWc_bf16.x86's (conv2d_bf16.c) share it. */
bool x86_conv_occ_inner_pays(const Target *t, const ConfigEntity *cfg, const Conv2DWorkload *c, int64_t in_value_bytes,
                             int64_t w_value_bytes) {
  if (c->KH != 1 || c->KW != 1) return false;
  int64_t oc_bn = cfg_split_inner(cfg, "tile_oc"), rows = cfg_other_int(cfg, "tile_oh", 1);
  int64_t n_f = cfg_other_int(cfg, "tile_n", 1), cols = cfg_split_inner(cfg, "tile_ow");
  if (oc_bn < 1 || cols < 1) return false;
  int64_t chunks = c->OC / oc_bn, occ = x86_conv_occ_block(t, n_f * rows * cols, chunks);
  int64_t in = c->sh > 1 || c->sw > 1 ? c->OH * c->OW : c->IH * c->IW; /* a strided layer's: the sampled copy */
  return chunks > occ && c->IC * in >= c->OC * c->OH * c->OW && c->N * c->IC * in * in_value_bytes > target_l2_bytes(t) &&
         c->OC * c->IC * w_value_bytes <= target_l2_bytes(t) / 4;
}

/* Whether conv2d_NCHWc.x86's space has "occ_inner": its float32 1x1 layers
 * (the bfloat16 template defines the knob itself). */
static bool conv_has_occ_inner(const Workload *wl, const Conv2DWorkload *c) {
  return is_fp32_task(wl) && c->KH == 1 && c->KW == 1;
}

/* Whether a layer's weights are worth prefetching a block ahead: few
 * outputs share each weight (at most 256 per output channel: the 14x14
 * and 7x7 layers) and the weights are large (at least 256 KiB), or at
 * least 32 KiB at stride 1, so a register block's weights, read from L3
 * or memory in a model, arrive during its first row of outputs faster
 * than they would be supplied.  conv2d_NCHWc.x86 and
 * group_conv2d_NCHWc.x86 define "prefetch_w" where it holds.  The 32 KiB
 * stride-1 layers (group_conv2d.c measured RegNetY's; at stride 2 it was
 * slower there): in the models, each node's minimum over 10-24
 * alternating profiles, 1 thread (load 3-4), without / with:
 * MobileNet-V2's 1x1 96->576 @14 104-106 / 92-93 us, 64->384 @14 46-48 /
 * 42-43, 576->96 @14 92-93 / 88-90, 384->96 @14 62 / 60, 384->64 @14 42 /
 * 40 (its 7x7 and 14x14 convs together 1,637 / 1,563 us; 2 threads 891 /
 * 873); GoogLeNet's 480->96 @14 85 / 82, 3x3 32->128 @7 23 / 20, 48->128
 * @7 31 / 28; SqueezeNet-1.1's 64->256 @13 27 / 24, 48->192 @13 16 / 14. */
bool x86_conv_prefetch_pays(const Conv2DWorkload *c) {
  int64_t wbytes = c->OC * c->IC / c->groups * c->KH * c->KW * dt_bytes(c->dtype);
  return c->OH * c->OW <= X86_PREFETCH_W_OUTPUTS && (wbytes >= (256 << 10) || (wbytes >= (32 << 10) && c->sh == 1 && c->sw == 1));
}

/* x86_prefetch_w_blocks into the cache levels `locality` names (3: every
 * level, prefetcht0; 2: L2 and below, prefetcht1) */
static int prefetch_w_blocks(const char *op, Stage *scc, const ConfigEntity *cfg, Tensor *kernel, IterVar *ricb,
                             IterVar *row, int64_t rows, int64_t step, int locality) {
  int64_t pf;
  if (x86_prefetch_distance(op, cfg, "prefetch_w", "register blocks", &pf)) return -1;
  if (pf == 0 || !kernel || kernel->kind != TE_PLACEHOLDER) return 0;
  if (stage_prefetch(scc, kernel, ricb, c32(pf * step), locality)) return -1;
  /* every row block of a register block reads its weights again: row r
   * touches the steps whose ic-block index is r modulo the rows, so the
   * next block's weights are touched once over the block's rows */
  return rows > 1 ? stage_prefetch_spread(scc, ricb, row, rows) : 0;
}

int x86_prefetch_w_blocks(const char *op, Stage *scc, const ConfigEntity *cfg, Tensor *kernel, IterVar *ricb,
                          IterVar *row, int64_t rows, int64_t step) {
  return prefetch_w_blocks(op, scc, cfg, kernel, ricb, row, rows, step, 3);
}

/* x86_conv_prefetch_w into the cache levels `locality` names */
static int conv_prefetch_w(const char *op, Stage *scc, const ConfigEntity *cfg, Tensor *kernel, IterVar *ricb,
                           IterVar *row, int64_t rows, int64_t chunks, int locality) {
  /* the kernel's next output-channel chunks follow the current ones in
   * memory: d blocks' worth of whole reductions (the block's chunks x the
   * ic chunks x the window x the ic block) */
  int64_t step = kernel ? chunks * te_dim(kernel, 1) * te_dim(kernel, 2) * te_dim(kernel, 3) * te_dim(kernel, 4) : 0;
  return prefetch_w_blocks(op, scc, cfg, kernel, ricb, row, rows, step, locality);
}

int x86_conv_prefetch_w(const char *op, Stage *scc, const ConfigEntity *cfg, Tensor *kernel, IterVar *ricb,
                        IterVar *row, int64_t rows, int64_t chunks) {
  return conv_prefetch_w(op, scc, cfg, kernel, ricb, row, rows, chunks, 3);
}

/* Whether a layer's space has "prefetch_w" (x86_conv_prefetch_pays).  The
 * bfloat16 and int8 templates start from this space and fallback; the
 * schedule prefetches the float32 and the packed int8 kernel (whose
 * template defines the knob itself: conv2d_int8.c). */
static bool conv_has_prefetch(const Workload *wl, const Conv2DWorkload *c) {
  return is_fp32_task(wl) && x86_conv_prefetch_pays(c);
}

/* The input a 1x1 layer's blocks of n samples read: n x IC x OH x OW
 * (a strided layer's sampled copy). */
static int64_t conv_input_bytes(const Conv2DWorkload *c, int64_t n) {
  return n * c->IC / c->groups * c->OH * c->OW * dt_bytes(c->dtype);
}

/* The weights of two register blocks of two vector-wide output-channel
 * chunks: what a block with "prefetch_w" holds in L2 beside its input. */
static int64_t conv_two_blocks_bytes(const Target *t, const Conv2DWorkload *c) {
  return 2 * 2 * x86_channel_block(c->OC, t->vector_lanes) * c->IC / c->groups * c->KH * c->KW * dt_bytes(c->dtype);
}

/* Whether a 1x1 layer's space has "prefetch_data": the input its outputs
 * read (N x IC x OH x OW: a strided layer's sampled copy) is at least
 * 512 KiB, half of a 1 MiB L2, so it comes from L3 or memory; a
 * register block reads a row of each input-channel chunk, the chunks a
 * whole feature map apart: more streams than the hardware prefetcher
 * follows.  At batch > 1 the whole batch's input counts: each output-
 * channel chunk's blocks read every sample's input again (the fallback's
 * value: conv_batch_prefetch_data).  Also where a layer with "prefetch_w"
 * has its input and two blocks' weights (the block and the next one it
 * prefetches) at 512 KiB or more: the weights then push the input out of
 * L2 (ResNet-50's 2048->512 @7: 392 KiB + 2 x 256 KiB).  (Larger windows
 * reread their input rows KH times and keep TVM's space: 3x3/2 128->128
 * @56 at batch 8 measured 34 / 35 / 41 % of the peak for none / 1 / 2
 * chunks ahead, within the noise.) */
static bool conv_has_prefetch_data(const Target *t, const Workload *wl, const Conv2DWorkload *c) {
  if (!is_fp32_task(wl) || c->KH != 1 || c->KW != 1) return false;
  return conv_input_bytes(c, c->N) >= (512 << 10) ||
         (conv_has_prefetch(wl, c) && conv_input_bytes(c, 1) + conv_two_blocks_bytes(t, c) >= (512 << 10));
}

/* The fallback's prefetch_data: 1 where the input of a block's samples
 * (tile_n = n_f of them, the input a block's rows read again for each
 * output-channel chunk) is at least 512 KiB, else 0 - at batch 1 where
 * the knob is in the space.  bench_conv2d --batch 8 --cpu-time --cold
 * --epilogue, 1 thread (CPU time, load 5-7), ResNet-50's 1x1 2048->512
 * @7 (2 samples of 392 KiB) without / with 1 chunk ahead 1.13-1.23x;
 * below 512 KiB level (512->2048 @7, 1024->2048/2 @14, 256->1024 @14,
 * 128->512 @28: 1.00-1.04x), and MobileNet-V2 at batch 8 as a model
 * (user CPU time, 1 thread) 4 % slower with every batch-8 layer's 1.
 * Also 1 where prefetch_w = 1 and the input of the block's samples and
 * the weights of two blocks reach 512 KiB: bench_conv2d --cold
 * --epilogue --cpu-time, batch 1, 1 thread (load 8), ResNet-50's 2048->512
 * @7 without / with 221-228 / 240-245 GFLOP/s (3 alternations). */
static int64_t conv_batch_prefetch_data(const Target *t, const Conv2DWorkload *c, int64_t n_f, int64_t pw) {
  int64_t in = conv_input_bytes(c, n_f);
  return in >= (512 << 10) || (pw > 0 && in + conv_two_blocks_bytes(t, c) >= (512 << 10)) ? 1 : 0;
}

/* The output of a 1x1 layer: N x OC x OH x OW. */
static int64_t conv_output_bytes(const Conv2DWorkload *c) {
  return c->N * c->OC * c->OH * c->OW * dt_bytes(c->out_dtype);
}

/* Whether a 1x1 layer's space has "prefetch_epilogue": its output (and so
 * a residual its epilogue adds, of the same shape) is at least 512 KiB,
 * half of a 1 MiB L2, so the residual comes from L3 or memory.  The
 * epilogue reads the residual's lines of a whole register block at once,
 * after the block's reduction, in bursts the hardware prefetcher does not
 * run ahead of. */
static bool conv_has_prefetch_epilogue(const Workload *wl, const Conv2DWorkload *c) {
  return is_fp32_task(wl) && c->KH == 1 && c->KW == 1 && conv_output_bytes(c) >= (512 << 10);
}

/* The fallback's prefetch_epilogue: 1 where the output is at least half
 * the target's L2 (with the block's input and weights beside it, the
 * residual then comes from L3 or memory) and either the reduction is at
 * most 8 vectors of input channels or the weights fit the L2; else 0.
 * The touches are dealt over the block's reduction
 * (conv_prefetch_epilogue).  Touched all at the block's start, 28 misses
 * at once filled the miss buffers and the loads behind them waited, so
 * long reductions (256->1024 @14) gained nothing and the rule stopped at 8
 * vectors; dealt, they gain where the weights stay in the L2, while with
 * weights from memory (512->2048 @7, 4 MB) the touches compete with them:
 * at batch 8, 2 threads, that layer's nodes ran 1.4x slower with them, and
 * ResNeXt-50's 512->1024 @14 (2 MB) at batch 1 1.02x / 1.06x at 1 / 2
 * threads (8 alternating profiles, load 3).  Per-node minima of
 * alternating kiln run --profile (load 2-2.3), new / old: ResNet-50 batch
 * 8, 1 / 2 threads: 256->1024 @14 x6 0.80 / 0.87, 64->256 @56 x3 0.89 /
 * 0.93, 128->512 @28 x4 0.92 / 0.97; Wide-ResNet-50 batch 1: 256->512 @28
 * x4 0.90 / 0.89, 128->256 @56 x3 0.89 / 0.95; ResNet-50 batch 1: level
 * (0.94-1.01).  Half the L2 rather than all of it adds outputs of 512 KiB
 * to 1 MiB, ResNet-50's 256->1024 @14 (800 KB, 1 MB of weights) at batch
 * 1: its nodes 0.96x / 0.92x the time at 1 / 2 threads (12 alternating
 * profiles, load 2.9-3.2; bench_conv2d --residual --cold --cpu-time, 1
 * thread: 80 -> 97 % of the FMA peak). */
static int64_t conv_prefetch_epilogue_fallback(const Target *t, const Conv2DWorkload *c) {
  int64_t l2 = target_l2_bytes(t);
  return conv_output_bytes(c) >= l2 / 2 && (c->IC <= 8 * t->vector_lanes || c->OC * c->IC * dt_bytes(c->dtype) <= l2);
}

/* Whether a layer's space has "inline_pad" (false/true; not TVM's): a
 * float32 layer that reads zero padding and has fewer input channels than
 * a vector (an RGB stem).  Its padded copy, a pass of its own over the
 * whole input before the convolution, runs as scalar code
 * (x86_schedule_pad vectorizes only a block of a power of two lanes), and
 * a stem's reduction (3 channels x the window) is too short to hide it;
 * inlined, each input read tests the padding's bounds, which the lowering
 * unswitches out of the inner column blocks.  The fallback inlines.
 * bench_conv2d --cold --epilogue --cpu-time, 1 thread, GFLOP/s copied /
 * inlined, two alternating runs (load 4): MobileNet's 3x3/2 3->32 @224
 * 144-148 / 239-245, MobileNetV3's 3->16 98-99 / 209-218, ShuffleNetV2's
 * 3->24 (8 lanes) 83-84 / 123, VGG-16's 3x3 3->64 226-232 / 239-248,
 * ResNet's 7x7/2 3->64 245-246 / 250-255.  Other layers keep TVM's space;
 * the bfloat16 template starts from this space and keeps the padded copy,
 * the int8 one (conv2d_int8.c) defines the knob too. */
static bool conv_has_inline_pad(const Target *t, const Workload *wl, const Conv2DWorkload *c) {
  return (is_fp32_task(wl) || template_find(wl->name, NULL, NULL) == &topi_x86_conv2d_NCHWc_int8_template) &&
         (c->pt || c->pl || c->pb || c->pr) && c->IC < t->vector_lanes;
}

/* Whether a layer's space has "ic_outer" (x86/conv2d_stream.c): its
 * float32 layers only (the bfloat16 and int8 templates, which start from
 * this space and fallback, keep TVM's nest). */
static bool conv_has_ic_outer(const Target *t, const Workload *wl, const Conv2DWorkload *c) {
  return is_fp32_task(wl) && x86_conv_has_ic_outer(t, c);
}

static int conv_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  Conv2DWorkload c;
  if (x86_conv_space(t, cs, wl, 1) || wl_conv2d_parse(wl, &c)) return -1;
  OptVal ahead[3] = {opt_int(0), opt_int(1), opt_int(2)};
  if (conv_has_prefetch(wl, &c) && space_define_knob(cs, "prefetch_w", 3, ahead)) return -1;
  if (conv_has_prefetch_data(t, wl, &c) && space_define_knob(cs, "prefetch_data", 3, ahead)) return -1;
  if (conv_has_prefetch_epilogue(wl, &c) && space_define_knob(cs, "prefetch_epilogue", 3, ahead)) return -1;
  /* last, so the indices of the knobs before them keep their configs */
  if (conv_has_inline_pad(t, wl, &c) && space_define_knob(cs, "inline_pad", 2, (OptVal[]){opt_bool(false), opt_bool(true)}))
    return -1;
  if (conv_has_occ_inner(wl, &c) && space_define_knob(cs, "occ_inner", 2, (OptVal[]){opt_bool(false), opt_bool(true)}))
    return -1;
  if (conv_has_ic_outer(t, wl, &c) && space_define_knob(cs, "ic_outer", 2, (OptVal[]){opt_bool(false), opt_bool(true)}))
    return -1;
  return 0;
}

int x86_conv_ic_group_check(const ConfigEntity *cfg, const Workload *wl, int64_t g, const char *what) {
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic");
  if (ic_bn % g)
    return kiln_set_error("%s: config knob 'tile_ic' inner part %lld is not a multiple of %lld; the %s kernel groups "
                          "input channels by %lld (pick a block of %lld, %lld, %lld...)",
                          wl->name, (long long)ic_bn, (long long)g, what, (long long)g, (long long)g, (long long)(2 * g),
                          (long long)(3 * g));
  return 0;
}

int x86_conv_ic_group_fallback(ConfigEntity *cfg, const Workload *wl, int64_t g, const char *what) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg, "tile_oc");
  if (ic_bn % g == 0) return 0;
  if (c.IC % g)
    return kiln_set_error("%s: %lld input channels cannot be grouped by %lld for %s", wl->name, (long long)c.IC,
                          (long long)g, what);
  int64_t b = g;
  for (int64_t e = g; e <= (oc_bn > g ? oc_bn : g) && e <= c.IC; e += g)
    if (c.IC % e == 0) b = e;
  config_set_split(cfg, "tile_ic", 2, (int64_t[]){-1, b});
  return 0;
}

/* Batch blocking (batch > 1 only, so batch-1 spaces and records are
 * TVM's): "tile_n" samples share one register block, each kernel vector
 * then feeding tile_n x rows x columns accumulators.  Candidates: the
 * divisors of N up to 8. */
int x86_define_tile_n(ConfigSpace *cs, int64_t N) {
  OptVal cand[8];
  int nc = 0;
  for (int64_t f = 1; f <= 8 && f <= N; f++)
    if (N % f == 0) cand[nc++] = opt_int(f);
  return space_define_knob(cs, "tile_n", nc, cand);
}

/* The batch block for a register block of `block` accumulators: the most
 * samples (a divisor of N) that keep the block within the register
 * budget.  At batch 1 this is 1; a 7x7 layer's 7-column block becomes 4
 * samples x 7 columns, which a small image's convolution cannot fill
 * from one sample. */
int64_t x86_batch_block(const Target *t, int64_t N, int64_t block) {
  int64_t budget = x86_reg_budget(t), best = 1;
  for (int64_t f = 1; f <= 8 && f <= N; f++)
    if (N % f == 0 && f * block <= budget) best = f;
  return best;
}

/* The output-channel chunks a register block of `block` accumulator
 * vectors spans: 2 where twice the block fits the register budget and the
 * layer's `chunks` are even (AVX-512); where they are odd, 3 where they
 * divide by 3 and three times the block fits (RegNetX's 912 and 1008
 * channels, 57 and 63 chunks; MnasNet's 48), else 1.  1x1 blocks (with any
 * batch block) and, at batch block 1, the other windows: a 3x3 layer's
 * 7- or 14-column block (ResNet-50's and VGG-16's 14x14 and 7x7 layers)
 * ran 1.06-1.35x faster with two chunks (bench_conv2d, 1 thread,
 * alternating runs, load 11-14).  Four chunks where a 7x7 layer's row
 * (7 columns) leaves half the budget idle ran slower: 7 x 4 accumulators,
 * four kernel vectors and a broadcast are 33 registers, and gcc spills
 * accumulators inside the reduction.  bench_conv2d --cold --epilogue
 * --cpu-time, 1 thread, % of the FMA peak, 7 x 2 / 7 x 4 (three
 * alternating runs, load 0.4-0.9): ResNet-50's 1x1 512->2048 @7 91-95 /
 * 89, 1x1 2048->512 @7 91-94 / 79-83 (its 512 KiB block also loses
 * prefetch_w; 83 with it), 1x1/2 1024->2048 93 / 86-88, 3x3 512->512 @7
 * 86-90 / 78-79; the chunks outside the columns (one kernel vector live,
 * each broadcast repeated per chunk) 0.94-0.97x on both 1x1 layers, and
 * 7 columns x 2 rows x 2 chunks (a row tail) level with 7 x 2 (94-97 /
 * 93-97: the 1x1 layers are near the peak already). */
int64_t x86_conv_occ_block(const Target *t, int64_t block, int64_t chunks) {
  if (t->vector_lanes < 16) return 1;
  if (chunks % 2 == 0) return 2 * block <= x86_reg_budget(t) ? 2 : 1;
  return chunks % 3 == 0 && 3 * block <= x86_reg_budget(t) ? 3 : 1;
}


/* Accumulators a register block may use: AVX-512 has 32 vector registers;
 * one holds the kernel vector and the broadcast input comes from memory. */
int64_t x86_reg_budget(const Target *t) { return t->vector_lanes >= 16 ? 28 : 12; }

/* The register block's output columns, at most `budget`: the widest
 * divisor of OW, unless a balanced split of OW into blocks of at most
 * `budget` columns is more than four times as wide - then that, and the
 * last block is a guarded column tail (tile_ow need not divide OW).  A
 * prime width would otherwise get one-column blocks: Inception-v3's 73-
 * and 71-column layers ran at 10-55 GFLOP/s that way (bench_conv2d), and
 * take 25 + 25 + 23 and 24 + 24 + 23 columns now.  The guards test only
 * the column against OW, invariant inside the reduction, and the C
 * compiler merges a block's guards into one branch per reduction step.
 * Widths with a divisor of a fair size (56, 35, 28, 14, 147) keep it:
 * 35 as 7 x 2 chunks (1x1) ran level with 18 or 12 columns. */
static int64_t block_cols_ratio(int64_t OW, int64_t budget, int64_t ratio) {
  if (budget < 1) budget = 1;
  int64_t d = x86_largest_divisor(OW, budget);
  int64_t blocks = (OW + budget - 1) / budget, balanced = (OW + blocks - 1) / blocks;
  return ratio * d < balanced ? balanced : d;
}

int64_t x86_conv_block_cols(int64_t OW, int64_t budget) { return block_cols_ratio(OW, budget, 4); }

/* TVM's 1x1 row block: the widest column block (x86_conv_block_cols),
 * then up to two rows (a divisor of the height), within budget
 * accumulators. */
static bool row_block(int64_t OW, int64_t OH, int64_t budget, int64_t *owf_out, int64_t *ohf_out) {
  if (budget < 1) return false;
  int64_t owf = x86_conv_block_cols(OW, budget);
  *owf_out = owf;
  *ohf_out = OH > 1 && OH % 2 == 0 && 2 * owf <= budget ? 2 : 1;
  return true;
}

/* The fallback's prefetch_w: one block ahead where a register block's
 * weights (its output-channel chunks x every input channel x the window)
 * are at most 256 KiB, else none.  bench_conv2d --cold, 1 thread, % of
 * the FMA peak (medians of 3-5 alternating runs, load 4-7, peak 251-257)
 * without / touching the next block on every row / the touches spread
 * over the rows (what the schedule does): ResNet-50's 1x1 512->2048 @7
 * (64 KiB a block) 78 / 90 / 97, 1x1 2048->512 @7 (256 KiB) 62 / 81 /
 * 89, 1x1/2 1024->2048 (128 KiB) 77 / 87 / 93, 1x1 256->1024 @14 (32
 * KiB) 90 / 97 / 96; level at 1x1 1024->256 @14 (92 / 82 / 93) and 3x3
 * 256->256 @14 (288 KiB: 96 / 96 / 93); at 576 KiB, where this block's
 * weights and the next one's no longer fit a 1 MiB L2 together, level
 * to slower (3x3 512->512 @7 87 / 73 / 79, 3x3/2 512->512 81 / 64 / 84). */
static void conv_prefetch_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl, const Conv2DWorkload *c) {
  /* prefetch_data: one chunk ahead.  bench_conv2d --batch 8, 1 thread, %
   * of the FMA peak (medians of 4 alternating runs, load 5-6), none / 1
   * / 2 chunks ahead: 1x1 512->128 @28 45 / 84 / 83; ResNet-50 as a
   * model (1 thread, user CPU time of alternating runs, load 4-6): batch
   * 8 2.51 / 2.28 / 2.26 s, batch 1 1.70 / 1.56 / 1.60 s */
  int64_t n_f = cfg_other_int(cfg, "tile_n", 1), pw = 0;
  if (conv_has_prefetch(wl, c)) {
    int64_t oc_bn = cfg_split_inner(cfg, "tile_oc");
    int64_t rows = c->KH == 1 && c->KW == 1 ? cfg_other_int(cfg, "tile_oh", 1) : 1;
    int64_t occ = (c->KH == 1 && c->KW == 1) || n_f == 1
                      ? x86_conv_occ_block(t, n_f * rows * cfg_split_inner(cfg, "tile_ow"), c->OC / oc_bn)
                      : 1;
    int64_t block = occ * oc_bn * c->IC / c->groups * c->KH * c->KW * dt_bytes(c->dtype);
    pw = block <= (256 << 10) ? 1 : 0;
    config_set_other(cfg, "prefetch_w", opt_int(pw));
  }
  if (conv_has_prefetch_data(t, wl, c))
    config_set_other(cfg, "prefetch_data", opt_int(conv_batch_prefetch_data(t, c, n_f, pw)));
  if (conv_has_prefetch_epilogue(wl, c))
    config_set_other(cfg, "prefetch_epilogue", opt_int(conv_prefetch_epilogue_fallback(t, c)));
}

/* A stem at batch 1: fewer input channels than a vector (an RGB image)
 * under a window whose columns overlap (stride below the width).  Its
 * reduction is a few channels x the window, so the fallback unrolls kw,
 * and with it the block's broadcasts of neighbouring columns serve
 * several kw taps; a quarter of the register budget in columns (7) lets
 * the schedule take two output-channel chunks (14 accumulators).
 * bench_conv2d --cold --epilogue, 1 thread, % of the FMA peak, two runs
 * (load 6), 28 columns / 14 columns x 2 chunks (the shipped record) / 7
 * x 2 chunks with kw unrolled: ResNet's 7x7/2 3->64 @224 85-88 / 74-85 /
 * 93-95, VGG-16's 3x3 3->64 @224 80 / - / 87, MobileNet's 3x3/2 3->32
 * @224 52 / - / 55 (28 columns with kw unrolled: 51-54, 14 x 2: 71-77).
 * A patchifying window (stride = width: ViT's, Swin's, ConvNeXt's) shares
 * no columns and keeps the general rule, and so does a layer whose
 * output-channel chunks neither pair nor make triples (7 accumulators
 * alone cannot cover the FMA latency).  ShuffleNetV2's 3x3/2 3->24 @224
 * (3 chunks of 8) as 7 x 3 with kw unrolled against 28 x 1: 81-83 / 78-79
 * GFLOP/s (--cold --epilogue --cpu-time, 1 thread, load 0.6).  A stem
 * of a single chunk (MobileNetV3's 3x3/2 3->16) takes half the budget in
 * columns (14 accumulators), kw unrolled: with its input read in place
 * (inline_pad), 28 columns / 14 with kw unrolled 217-222 / 248-254
 * GFLOP/s (two alternating runs, load 3; 14 without unrolling 185-207).
 * The columns: a divisor of the width, or the balanced split with a
 * guarded tail where the divisor is under half of it (rather than a
 * quarter, x86_conv_block_cols: so small a block leaves too few
 * accumulators): SqueezeNet-1.1's 3x3/2 3->64 (111 columns) 7 x 2
 * chunks rather than 3 x 2, 95 % of the FMA peak against 67 %
 * (--cold --epilogue --cpu-time, 1 thread, load 2; 6 columns 89 %).
 * Sets *cols; true when it applies. */
static bool stem_block(const Target *t, const Workload *wl, const Conv2DWorkload *c, int64_t *cols) {
  if (c->N != 1 || c->IC >= t->vector_lanes || c->KW < 2 || c->sw >= c->KW || !is_fp32_task(wl)) return false;
  int64_t chunks = c->OC / x86_channel_block(c->OC, t->vector_lanes), w = block_cols_ratio(c->OW, x86_reg_budget(t) / 4, 2);
  if (chunks == 1) w = block_cols_ratio(c->OW, x86_reg_budget(t) / 2, 2);
  else if (x86_conv_occ_block(t, w, chunks) < 2) return false;
  *cols = w;
  return true;
}

/* The register block of a window larger than 1x1 at batch > 1, given the
 * widest column block *reg_n and w2, the columns of a two-chunk block
 * where the layer takes one (0 where not): the two chunks as at batch 1
 * (tile_n = 1: the schedule takes two chunks for such a window at batch
 * block 1 only), else *reg_n columns x the samples that fill the budget.
 * Two chunks, not samples: a sample block shares each kernel vector but
 * still needs a broadcast per FMA, two chunks halve the broadcasts.
 * bench_conv2d --batch 8 --cpu-time --cold --epilogue, 1 thread (CPU
 * time: load 6-7), samples / two chunks: ResNet-50's 3x3/2 128->128 @56
 * (28 columns / 14 x 2 chunks) 1.13-1.15x, 3x3/2 256->256 @28 (14 x 2
 * samples / 14 x 2 chunks) 1.07-1.08x, 3x3/2 512->512 @14 and 3x3 512 @7
 * (7 x 4 samples / 7 x 2 chunks) 1.02-1.03x. */
static void conv_batch_window_block(const Target *t, const Conv2DWorkload *c, int64_t w2, int64_t *reg_n, int64_t *n_f) {
  if (w2) *reg_n = w2, *n_f = 1;
  else *n_f = x86_batch_block(t, c->N, *reg_n);
}

/* The accumulators a batch-1 1x1 layer's register block may use: the
 * whole budget, but 8 columns x 2 chunks (SHORT_REDUCTION_COLS a chunk)
 * where the block spans two chunks and the reduction is at most one
 * vector of input channels (the 16-channel expand convs at 112x112 of
 * MobileNet-V2, EfficientNet, MobileNetV3-L): each accumulator then takes
 * only 16 FMAs before its epilogue and store.  In the models, sum of each
 * node's minimum over 20 alternating profiles, 1 thread (load 6-7),
 * 14 x 2 / 8 x 2: MobileNet-V2's 16->96 @112 + clip 308 / 174 us
 * (276 / 178 with a tuning record of that config), EfficientNet-B0's
 * 16->96 @112 + SiLU 321 / 304, MobileNetV3-L's 16->64 @112 136 / 124
 * (against a build of an hour earlier); bench_conv2d --epilogue
 * --cpu-time, 16->96 @112 hot in cache 193-223 / 229-236 GFLOP/s (4
 * columns: 157).  Left out, measured the same way: one chunk (an odd
 * chunk count), 8 x 1 rather than 28 x 1, was mixed (MnasNet's 16->48
 * @112 0.94x, MobileNetV3-L's 16->16 @112 0.87x, MobileNetV3-S's 16->80
 * and 16->16 @56 1.06x and 1.04x); two vectors (32 input channels)
 * 0.89-0.96x at 112 and 28 columns but level to 1.03x at 56 with 24 real
 * channels.  float32 only (the bfloat16 and int8 templates start from
 * this fallback: not measured there). */
enum { SHORT_REDUCTION_COLS = 8 };

/* Whether a 1x1 block of p2 positions (samples x rows x columns) x occ
 * output-channel chunks beats one of p1 positions x one chunk, by loads
 * per FMA - a reduction step loads one broadcast per position and one
 * kernel vector per chunk - rather than by accumulators: where the chunks
 * are odd (3 a block) or the columns leave no room for a second sample,
 * the chunk block holds fewer accumulators but a third or half the loads.
 * bench_conv2d --batch 8 --vs --cold --epilogue --cpu-time, 1 thread
 * (load 3.6-3.8), one-chunk fallback / chunk block: SqueezeNet-1.1's 1x1
 * 512->1008 @13 (13 columns x 2 samples / 7 x 3 chunks) 1.12x (1.17x at
 * 2 threads), 1x1 32->128 @27 and 256->32 @27 (27 x 1 / 9 x 2 chunks)
 * 1.09x.  At batch 1 (float32) the same, bench_conv2d --cold --epilogue --cpu-time, 1 thread, % of the FMA
 * peak measured in the same run, medians of 4 alternating runs (load 7),
 * one chunk / chunk block: 28 x 1 / 7 x 3 at 28x28 (MobileNet's, MnasNet's
 * and EfficientNet's 48- and 240-channel layers) 80-89 / 92-95, 56 and 112
 * columns as 28 x 1 / 8 x 3 (MobileNet-V2's 32(24)->144 @56, RegNetY's
 * 48-channel layers) 72-79 / 89-93, 14 x 2 rows / 7 x 3 at 14x14
 * (MobileNetV3-S's, GoogLeNet's 512->144, RegNetX's 416->912, ShuffleNet's
 * 240->240) 70-88 / 81-96, 27 x 1 / 9 x 2 chunks (SqueezeNet-1.1's 32->128
 * and 256->32) 76-78 / 88-93; SqueezeNet's 16->64 @55 (11 x 1 / 5 x 2)
 * level (86 / 87).  In the models, each node's minimum over 6-8
 * alternating profiles (load 4-6), the changed nodes together, 1 thread
 * / 2 threads: MobileNet-V2 0.86 / 0.86, EfficientNet-B0 0.93 / 0.87,
 * MnasNet 0.92 / 0.88, RegNetY-400MF 0.84 / 0.83, MobileNetV3-L 0.84 /
 * 0.67, MobileNetV3-S 0.89 / 0.83, SqueezeNet-1.1 0.94 / 0.87, GoogLeNet
 * 0.88 / 0.97, ShuffleNetV2 0.87 / 0.89.  A bfloat16 build without records
 * takes the float32 layer's block (strategy_bf16.c): bench_conv2d --bf16
 * --cfg, vdpbf16ps, 1 thread, % of the bfloat16 peak, 3 alternating runs
 * (load 5): 48(40)->240 @28 81-84 / 91-92, 32(24)->144 @56 76-80 / 84-86,
 * 96->48 @14 66-70 / 74-75.  The bfloat16 and int8 templates' own
 * fallbacks keep the accumulator count at batch 1 (not measured). */
static bool chunks_pay(int64_t p1, int64_t p2, int64_t occ) {
  return (p2 + occ) * p1 <= (p1 + 1) * p2 * occ;
}

/* Whether the 1x1 fallback compares blocks by loads per FMA (chunks_pay)
 * rather than by accumulators: at batch > 1, and at batch 1 for float32
 * layers whose weights fit the L2.  RegNetX-1.6GF's 1x1 416(408)->912 @14
 * (1.5 MB of weights) as 7 x 3 rather than 14 x 2 rows ran 1.07x faster
 * in bench_conv2d but 1.12-1.14x slower in the model at 2 threads (its
 * node's minimum over 10 alternating profiles, load 5), its weights then
 * coming from L3 or memory rather than staying in the L2 between runs. */
static bool by_loads(const Target *t, const Workload *wl, const Conv2DWorkload *c) {
  return c->N > 1 || (is_fp32_task(wl) && c->OC * c->IC * dt_bytes(c->dtype) <= target_l2_bytes(t));
}
static int64_t conv_short_reduction_budget(const Target *t, const Workload *wl, const Conv2DWorkload *c, int64_t occ) {
  int64_t budget = x86_reg_budget(t);
  if (c->N != 1 || occ < 2 || c->real_ic * c->KH * c->KW > t->vector_lanes || !is_fp32_task(wl)) return budget;
  return SHORT_REDUCTION_COLS * occ < budget ? SHORT_REDUCTION_COLS * occ : budget;
}

static int conv_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t lanes = t->vector_lanes;
  int64_t oc_bn = x86_channel_block(c.OC, lanes), ic_bn = x86_largest_divisor(c.IC, oc_bn);
  config_set_split(cfg, "tile_ic", 2, (int64_t[]){-1, ic_bn});
  config_set_split(cfg, "tile_oc", 2, (int64_t[]){-1, oc_bn});
  if (c.KH == 1 && c.KW == 1) {
    /* TVM's 1x1 fallback: the widest row tile, then as many rows as fit.
     * Where the layer's output-channel chunks make pairs or triples, also
     * in half or a third of the budget (each broadcast then feeds two or
     * three FMAs), taken when it needs fewer loads per FMA (chunks_pay):
     * 14 x 2 chunks rather than 28 columns, 7 x 3 rather than 28 x 1, but
     * a 17-column row (Inception's 17x17 layers) stays 17 x 1 chunk rather
     * than 1 x 2.  At batch 1 only a float32 layer whose weights fit the
     * L2 compares so (by_loads); the others, and the bfloat16 and int8
     * templates' own fallbacks, take the chunk block where it holds at
     * least as many accumulators.  At batch > 1 samples
     * (tile_n) fill what the rows and columns leave of either budget, the
     * same comparison deciding: two chunks save a broadcast per FMA
     * whatever fills the block, and a 56-column layer at batch 8 ran
     * slower as 28 columns x 1 chunk than its batch-1 kernel (14 x 2)
     * called per sample. */
    int64_t occ = x86_conv_occ_block(t, 1, c.OC / oc_bn), budget = conv_short_reduction_budget(t, wl, &c, occ);
    int64_t w1, h1, w2 = 0, h2 = 0;
    if (row_block(c.OW, c.OH, budget, &w1, &h1)) {
      int64_t n1 = x86_batch_block(t, c.N, w1 * h1), n2 = 1;
      if (occ > 1 && row_block(c.OW, c.OH, budget / occ, &w2, &h2)) {
        n2 = x86_batch_block(t, c.N, w2 * h2 * occ);
        if (by_loads(t, wl, &c) ? chunks_pay(n1 * w1 * h1, n2 * w2 * h2, occ) : n2 * w2 * h2 * occ >= n1 * w1 * h1)
          w1 = w2, h1 = h2, n1 = n2;
      }
      config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, w1});
      config_set_other(cfg, "tile_oh", opt_int(h1));
      if (c.N > 1) config_set_other(cfg, "tile_n", opt_int(n1));
      if (conv_has_inline_pad(t, wl, &c)) config_set_other(cfg, "inline_pad", opt_bool(true));
      if (conv_has_occ_inner(wl, &c)) {
        int64_t b = dt_bytes(c.dtype);
        config_set_other(cfg, "occ_inner", opt_bool(x86_conv_occ_inner_pays(t, cfg, &c, b, b)));
      }
      conv_prefetch_fallback(t, cfg, wl, &c);
      cfg->is_fallback = true;
      return 0;
    }
  }
  /* other windows: the widest column block (TVM's), or, as for 1x1, half
   * the budget where two chunks then hold at least as many
   * accumulators (the schedule takes two chunks for a block of at most
   * half the budget): 14 columns x 2 chunks rather than 28 x 1 at 28 and
   * 56 columns.  bench_conv2d --cold --epilogue, 1 thread, % of the FMA
   * peak, medians of 3 alternating runs (load 3-4), 28 x 1 / 14 x 2:
   * VGG-16 3x3 256->512 @28 65 / 93, 512->512 @28 87 / 94, ResNet-50
   * 3x3/2 128->128 @56 86 / 91, 3x3 64->64 @56 80 / 95.  Not for a few
   * input channels a position (ResNet's 7x7/2 stem, 3 channels: 86 / 68,
   * the reduction too short for the block's setup): see stem_block. */
  int64_t budget = x86_reg_budget(t), reg_n = x86_conv_block_cols(c.OW, budget), n_f = 1;
  bool unroll = stem_block(t, wl, &c, &reg_n);
  int64_t w2 = 0;
  if (!unroll && c.IC >= t->vector_lanes && is_fp32_task(wl)) {
    int64_t occ = x86_conv_occ_block(t, 1, c.OC / oc_bn);
    w2 = x86_conv_block_cols(c.OW, budget / occ);
    if (occ == 1 || w2 * occ < reg_n) w2 = 0;
  }
  if (c.N > 1) conv_batch_window_block(t, &c, w2, &reg_n, &n_f);
  else if (w2) reg_n = w2;
  config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, reg_n});
  config_set_other(cfg, "unroll_kw", opt_bool(unroll));
  if (conv_has_inline_pad(t, wl, &c)) config_set_other(cfg, "inline_pad", opt_bool(true));
  if (c.N > 1) config_set_other(cfg, "tile_n", opt_int(n_f));
  conv_prefetch_fallback(t, cfg, wl, &c);
  if (conv_has_ic_outer(t, wl, &c)) config_set_other(cfg, "ic_outer", opt_bool(x86_conv_ic_outer_fallback(t, &c)));
  cfg->is_fallback = true;
  return 0;
}

static int conv_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (x86_check_split(cfg, "tile_ic", 2, c.IC, "input channels", true) ||
      x86_check_split(cfg, "tile_oc", 2, c.OC, "output channels", true) ||
      x86_check_split(cfg, "tile_ow", 2, c.OW, "output columns", false)) /* a tail is guarded */
    return kiln_error_context("%s", wl->name);
  if (cfg_other_int(cfg, "inline_pad", 0) && !conv_has_inline_pad(t, wl, &c))
    return kiln_set_error("%s: config knob 'inline_pad' is set, but the layer has no padding or %lld input channels "
                          "(the knob is for fewer than a vector: leave it out or false)",
                          wl->name, (long long)c.IC);
  if (cfg_other_int(cfg, "ic_outer", 0) && !conv_has_ic_outer(t, wl, &c))
    return kiln_set_error("%s: config knob 'ic_outer' is set, but the layer is not a float32 window larger than 1x1 at "
                          "batch 1 whose weights few outputs share (leave it out or false)",
                          wl->name);
  int64_t tn = cfg_other_int(cfg, "tile_n", 1);
  if (tn < 1 || c.N % tn)
    return kiln_set_error("%s: config knob 'tile_n' = %lld must divide the batch %lld", wl->name, (long long)tn,
                          (long long)c.N);
  if (c.KH == 1 && c.KW == 1) {
    /* TVM's space offers 2 rows even for an odd height: the last block
     * then has a tail */
    if (cfg_other_int(cfg, "tile_oh", -1) < 1)
      return kiln_set_error("%s: config knob 'tile_oh' must be a positive number of output rows", wl->name);
  } else if (!config_get(cfg, "unroll_kw") || config_get(cfg, "unroll_kw")->kind != KNOB_OTHER) {
    return kiln_set_error("%s: config has no 'unroll_kw' option", wl->name);
  }
  return 0;
}

static Tensor *conv_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)cfg;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes data and kernel, got %d inputs", wl->name, nin), NULL;
  return topi_x86_conv2d_NCHWc_real(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                    (int[]){c.dh, c.dw}, c.real_ic, c.out_dtype);
}

/* data NCHW[ic_bn]c, kernel OIHW[ic_bn]i[oc_bn]o */
static int conv_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg, "tile_oc");
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ic_bn, c.IH, c.IW, ic_bn}, c.dtype);
  (*in)[1] = te_placeholder_c("kernel", 6, (int64_t[]){c.OC / oc_bn, c.IC / ic_bn, c.KH, c.KW, ic_bn, oc_bn}, c.dtype);
  return 0;
}

const Template topi_x86_conv2d_NCHWc_template = {
    .name = "conv2d_NCHWc.x86", .anchor_tag = "conv2d_NCHWc", .key = "cpu", .define_space = conv_space,
    .fallback = conv_fallback, .check = conv_check, .placeholders = conv_placeholders, .compute = conv_compute,
    .schedule = topi_x86_schedule_conv2d_NCHWc,
};

/* ---- the schedule ---- */

/* The padded input: parallel over (n, c-chunk, h), the block vectorized. */
int x86_schedule_pad(Schedule *s, Tensor *pad) {
  Stage *sp = sch_stage(s, pad);
  if (!sp || sp->attach != ATTACH_ROOT) return 0;
  IterVar *f;
  if (stage_fuse(sp, stage_axis(sp, 0), stage_axis(sp, 1), &f) || stage_fuse(sp, f, stage_axis(sp, 2), &f) ||
      stage_parallel(sp, f))
    return -1;
  int64_t cb = te_dim(pad, 4);
  if (cb > 1 && cb <= 64 && !(cb & (cb - 1))) return stage_vectorize(sp, stage_axis(sp, 4));
  return 0;
}

/* Vectorize a channel-block axis when it is a power of two, else unroll it. */
int x86_vec_or_unroll(const Target *t, Stage *st, IterVar *iv, int64_t n) {
  if (n > 1 && n <= 64 && !(n & (n - 1))) return stage_vectorize(st, iv);
  /* a block that is not a power of two (a tuned tile_oc of 40 or 100):
   * vectors of its largest power-of-two divisor, up to the SIMD width,
   * unrolled - left to the C compiler, such a block ran as scalar code */
  int64_t v = n & -n, lanes = t->vector_lanes;
  if (v > lanes) v = lanes;
  if (n > 1 && v >= 4) {
    IterVar *outer, *inner;
    if (stage_split(st, iv, c32(v), &outer, &inner)) return -1;
    return stage_unroll(st, outer) || stage_vectorize(st, inner) ? -1 : 0;
  }
  return n > 1 ? stage_unroll(st, iv) : 0;
}

/* The anchor's inputs: the (padded) data and the kernel. */
static int conv_inputs(Tensor *conv, Tensor **pad, Tensor **kernel) {
  *pad = *kernel = NULL;
  for (int i = 0; i < conv->ninputs; i++) {
    if (conv->inputs[i]->ndim == 5) *pad = conv->inputs[i];
    if (conv->inputs[i]->ndim == 6) *kernel = conv->inputs[i];
  }
  if (!*pad || !*kernel) return kiln_set_error("conv2d_NCHWc schedule: '%s' is not a conv2d_NCHWc compute", conv->name);
  return 0;
}

/* The computes this schedule serves, one row per tag:
 * x86_conv2d_NCHWc_compute's plain and grouped forms (a grouped output
 * chunk reads its group's input chunks; the loop nest is the same), and
 * conv2d_bf16.c's (whose input stage, in its vdpbf16ps form, holds pairs of
 * channels: ic_bn / 2 uint32 words a block) and conv2d_int8.c's
 * (quadruples of uint8 channels: ic_bn / 4 words a block). */
typedef struct NchwcForm {
  const char *tag;
  int word_channels;  /* input channels a uint32 word of the input stage holds */
  bool bf16_halves;   /* conv2d_bf16.c's fma form: a weight is one half of a word */
  bool prefetch_w;    /* "prefetch_w" touches the kernel (a placeholder of its own) */
  bool prefetch_data; /* "prefetch_data" touches the input */
  int w_locality;     /* the cache levels "prefetch_w" fills (__builtin_prefetch's locality) */
} NchwcForm;

/* The int8 kernel's weights are prefetched into L2 (prefetcht1), not L1:
 * a 3x3 512 @7 block touches the next block's 147 KiB of weights over 4
 * of its 7 rows, two lines per 14 VPDPBUSD, more misses in flight than L1
 * holds.  ResNet-18's 3x3 512 @7 kernel alone (one thread, the caches
 * flushed before each run, min of 200 runs, 4 alternating rounds):
 * prefetcht0 446-477 us, prefetcht1 416-459; in the model (per-kernel
 * minima of 200 alternating profiles, one thread, load 4.2-4.8) its three
 * layers 478 / 466 / 438 -> 398 / 408 / 401 us (docs/int8.md, step 20). */
static const NchwcForm nchwc_forms[] = {
    {"conv2d_NCHWc", 1, false, true, true, 3},
    {"group_conv2d_NCHWc", 1, false, false, false, 3},
    {"conv2d_NCHWc_bf16", 2, true, true, true, 3},
    {"conv2d_NCHWc_int8", 4, false, true, false, 2},
};

static const NchwcForm *nchwc_form(const Tensor *conv) {
  for (size_t i = 0; conv->tag && i < sizeof nchwc_forms / sizeof nchwc_forms[0]; i++)
    if (!strcmp(conv->tag, nchwc_forms[i].tag)) return &nchwc_forms[i];
  return NULL;
}

/* "prefetch_epilogue" = d: touch the lines the column block d column
 * blocks later (owo of the output stage so) reads of each input of the
 * epilogue shaped like the conv's output (a residual; not the conv's own
 * input), dealt over the block's reduction (its input-channel loop, a
 * line or two an iteration; stage_prefetch_into), so they arrive during
 * it without a burst of misses.  Past a row's last block the address
 * runs on into the next row (row-major arithmetic), which is the block
 * that follows. */
static int conv_prefetch_epilogue(Schedule *s, Stage *so, IterVar *owo, Stage *scc, const ConfigEntity *cfg,
                                  Tensor *conv, Tensor *pad, Tensor *kernel) {
  int64_t d;
  if (x86_prefetch_distance("conv2d_NCHWc.x86", cfg, "prefetch_epilogue", "column blocks", &d)) return -1;
  for (int i = 0; d > 0 && i < s->stages.len; i++) {
    Tensor *r = ((Stage *)s->stages.data[i])->op;
    bool same = r->kind == TE_PLACEHOLDER && r != pad && r != kernel && r->ndim == conv->ndim;
    for (int k = 0; same && k < conv->ndim; k++) same = te_dim(r, k) == te_dim(conv, k);
    for (int j = 0; same && j < pad->ninputs; j++) same = pad->inputs[j] != r;
    if (same && (stage_prefetch(so, r, owo, c32(d), 3) || stage_prefetch_into(so, owo, stage_reduce_axis(scc, 0))))
      return -1;
  }
  return 0;
}

int topi_x86_schedule_conv2d_NCHWc(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *conv, int nout, Tensor **outs) {
  if (!s || !conv) return -1;
  const NchwcForm *form = nchwc_form(conv);
  if (!form) {
    size_t n = sizeof nchwc_forms / sizeof nchwc_forms[0];
    const char *tags = "";
    for (size_t i = 0; i < n; i++) tags = kfmt("%s%s%s", tags, i == 0 ? "" : i + 1 < n ? ", " : " or ", nchwc_forms[i].tag);
    return kiln_set_error("conv2d_NCHWc.x86 schedule: anchor '%s' has tag '%s', expected %s", conv->name,
                          conv->tag ? conv->tag : "", tags);
  }
  Tensor *pad, *kernel;
  if (conv_inputs(conv, &pad, &kernel)) return -1;
  int64_t oc_bn = te_dim(conv, 4), ic_bn = te_dim(pad, 4), OH = te_dim(conv, 2);
  if (dt_eq(pad->dtype, DT_U32)) /* conv2d_bf16.c's pairs, conv2d_int8.c's quadruples of input channels */
    ic_bn *= form->word_channels;
  int64_t KH = te_dim(kernel, 2), KW = te_dim(kernel, 3);
  bool is_1x1 = KH == 1 && KW == 1;
  /* the config must describe this compute */
  int64_t cfg_ic, cfg_oc, reg_n;
  if ((cfg_ic = cfg_split_inner(cfg, "tile_ic")) < 0 || (cfg_oc = cfg_split_inner(cfg, "tile_oc")) < 0 ||
      (reg_n = cfg_split_inner(cfg, "tile_ow")) < 0)
    return kiln_error_context("conv2d_NCHWc.x86");
  if (cfg_ic != ic_bn || cfg_oc != oc_bn)
    return kiln_set_error("conv2d_NCHWc.x86: config blocks tile_ic %lld / tile_oc %lld do not match the compute's "
                          "layout (input block %lld, output block %lld)",
                          (long long)cfg_ic, (long long)cfg_oc, (long long)ic_bn, (long long)oc_bn);
  if (reg_n > te_dim(conv, 3))
    return kiln_set_error("conv2d_NCHWc.x86: config knob 'tile_ow' inner part %lld is more than the %lld output "
                          "columns",
                          (long long)reg_n, (long long)te_dim(conv, 3));
  int64_t oh_f = 1;
  if (is_1x1) {
    oh_f = cfg_other_int(cfg, "tile_oh", 1);
    if (oh_f < 1)
      return kiln_set_error("conv2d_NCHWc.x86: config knob 'tile_oh' = %lld, expected a positive number of rows",
                            (long long)oh_f);
    if (oh_f > OH) oh_f = OH;
  }
  bool unroll_kw = cfg_other_int(cfg, "unroll_kw", 0) != 0;
  /* samples per register block (knob of batch > 1 spaces; 1 without it) */
  int64_t n_f = cfg_other_int(cfg, "tile_n", 1), N = te_dim(conv, 0);
  if (n_f < 1 || N % n_f)
    return kiln_set_error("conv2d_NCHWc.x86: config knob 'tile_n' = %lld does not divide the batch %lld",
                          (long long)n_f, (long long)N);
  int64_t occ_f = is_1x1 || n_f == 1 ? x86_conv_occ_block(t, n_f * oh_f * reg_n, te_dim(conv, 1)) : 1;

  if (x86_inline_group(s, conv, NULL)) return -1;
  Tensor *main_out = x86_main_output(conv, nout, outs);
  Stage *sc = sch_stage(s, conv);
  if (!sc) return -1;
  Tensor *cc = sch_cache_write(s, conv, "local");
  if (!cc) return -1;
  Stage *scc = sch_stage(s, cc), *so = sc;
  if (main_out && main_out != conv) { /* the conv is not written: its block feeds the epilogue */
    if (stage_compute_inline(sc)) return -1;
    so = sch_stage(s, main_out);
  }
  /* inline_pad: the conv reads the input in place, each read testing the
   * padding's bounds (conv_has_inline_pad), rather than a padded copy first */
  if (pad->kind == TE_COMPUTE && cfg_other_int(cfg, "inline_pad", 0)) {
    if (stage_compute_inline(sch_stage(s, pad))) return -1;
  } else if (pad->kind == TE_COMPUTE && x86_schedule_pad(s, pad)) {
    return -1;
  }

  /* the output: parallel rows, a register block per (row, column chunk) */
  IterVar *n = stage_axis(so, 0), *occ = stage_axis(so, 1), *oh = stage_axis(so, 2), *ow = stage_axis(so, 3),
          *ocb = stage_axis(so, 4);
  IterVar *owo, *owi, *oho = oh, *ohi = NULL, *no = n, *ni = NULL, *occo = occ, *occi = NULL, *f;
  if (stage_split(so, ow, c32(reg_n), &owo, &owi)) return -1;
  if (n_f > 1) { /* the block spans n_f samples: ni sits inside the row/column loops */
    if (stage_split(so, n, c32(n_f), &no, &ni)) return -1;
  }
  if (occ_f > 1 && stage_split(so, occ, c32(occ_f), &occo, &occi)) return -1;
  if (is_1x1) {
    if (stage_split(so, oh, c32(oh_f), &oho, &ohi)) return -1;
    IterVar *order[9];
    int k = 0;
    order[k++] = no, order[k++] = occo, order[k++] = oho, order[k++] = owo;
    if (ni) order[k++] = ni;
    if (occi) order[k++] = occi;
    order[k++] = ohi, order[k++] = owi, order[k++] = ocb;
    if (stage_reorder(so, k, order) || stage_unroll(so, ohi)) return -1;
  } else if (ni && stage_reorder(so, 6, (IterVar *[]){no, occ, oh, owo, ni, owi})) {
    return -1;
  } else if (occi && stage_reorder(so, 6, (IterVar *[]){occo, oh, owo, occi, owi, ocb})) {
    return -1;
  }
  if (ni && stage_unroll(so, ni)) return -1;
  if (occi && stage_unroll(so, occi)) return -1;
  /* "ic_outer" (x86/conv2d_stream.c; float32 windows at batch 1): the
   * block's whole output at once, its weights read once, in order */
  if (form == &nchwc_forms[0] && !is_1x1 && n_f == 1 && cfg_other_int(cfg, "ic_outer", 0))
    return x86_conv_schedule_ic_outer(t, so, scc, no, occo, occi, owi, ocb, reg_n, oc_bn, unroll_kw) ||
                   x86_schedule_others(s, so, conv, (int)oc_bn)
               ? -1
               : 0;
  /* "occ_inner" (x86_conv_occ_inner_pays): the parallel loop steps the
   * output-channel chunks inside the rows, so a row block's input is read
   * from the outer caches once for all of them */
  if (cfg_other_int(cfg, "occ_inner", 0) ? stage_reorder(so, 2, (IterVar *[]){oho, occo}) || stage_fuse(so, no, oho, &f) ||
                                               stage_fuse(so, f, occo, &f)
                                         : stage_fuse(so, no, occo, &f) || stage_fuse(so, f, oho, &f))
    return -1;
  if (stage_parallel(so, f)) return -1;
  if (stage_unroll(so, owi) || x86_vec_or_unroll(t, so, ocb, oc_bn)) return -1;
  if (stage_compute_at(scc, so, owo)) return -1;
  if (form->prefetch_data && so != sc && conv_prefetch_epilogue(s, so, owo, scc, cfg, conv, pad, kernel)) return -1;

  /* the block: the reduction streams the input channels and the window */
  IterVar *cn = stage_axis(scc, 0), *cocc = stage_axis(scc, 1), *coh = stage_axis(scc, 2), *cow = stage_axis(scc, 3),
          *cocb = stage_axis(scc, 4);
  IterVar *ric = stage_reduce_axis(scc, 0), *rkh = stage_reduce_axis(scc, 1), *rkw = stage_reduce_axis(scc, 2),
          *ricb = stage_reduce_axis(scc, 3);
  /* with a batch block the samples are the block's outermost unrolled
   * axis, inside the reduction like its rows and columns; a 1x1 block of
   * two chunks has them innermost beside the channel block (one broadcast
   * per column, then an FMA per chunk) */
  if (is_1x1) {
    IterVar *order[9];
    int k = 0;
    if (n_f == 1) order[k++] = cn;
    if (occ_f == 1) order[k++] = cocc;
    order[k++] = ric, order[k++] = rkh, order[k++] = rkw, order[k++] = ricb;
    if (n_f > 1) order[k++] = cn;
    order[k++] = coh, order[k++] = cow;
    if (occ_f > 1) order[k++] = cocc;
    order[k++] = cocb;
    if (stage_reorder(scc, k, order) || stage_unroll(scc, coh)) return -1;
  } else if (occ_f > 1) { /* n_f == 1: the chunks innermost, beside the channel block */
    if ((unroll_kw ? stage_reorder(scc, 9, (IterVar *[]){cn, coh, ric, rkh, ricb, rkw, cow, cocc, cocb})
                   : stage_reorder(scc, 9, (IterVar *[]){cn, coh, ric, rkh, rkw, ricb, cow, cocc, cocb})) ||
        (unroll_kw && stage_unroll(scc, rkw)))
      return -1;
  } else if (unroll_kw) {
    if ((n_f > 1 ? stage_reorder(scc, 9, (IterVar *[]){cocc, coh, ric, rkh, ricb, rkw, cn, cow, cocb})
                 : stage_reorder(scc, 9, (IterVar *[]){cn, cocc, coh, ric, rkh, ricb, rkw, cow, cocb})) ||
        stage_unroll(scc, rkw))
      return -1;
  } else {
    if (n_f > 1 ? stage_reorder(scc, 9, (IterVar *[]){cocc, coh, ric, rkh, rkw, ricb, cn, cow, cocb})
                : stage_reorder(scc, 9, (IterVar *[]){cn, cocc, coh, ric, rkh, rkw, ricb, cow, cocb}))
      return -1;
  }
  if (n_f > 1 && stage_unroll(scc, cn)) return -1;
  if (occ_f > 1 && stage_unroll(scc, cocc)) return -1;
  if (stage_unroll(scc, cow) || x86_vec_or_unroll(t, scc, cocb, oc_bn)) return -1;
  if (form->bf16_halves && dt_eq(pad->dtype, DT_F32) && ic_bn % 2 == 0) {
    /* conv2d_bf16.c's fma form: an input channel's weight is one half of
     * a word; the channels in pairs, the halves unrolled, so the widening
     * is a constant shift (or mask) and one load serves both channels
     * (docs/bf16.md: a variable shift pair per channel cost 20 %) */
    IterVar *pi;
    if (stage_split(scc, ricb, ir_i32(2), &ricb, &pi) || stage_unroll(scc, pi)) return -1;
  }
  if (conv_prefetch_w("conv2d_NCHWc.x86", scc, cfg, form->prefetch_w ? kernel : NULL, ricb, f, (OH + oh_f - 1) / oh_f,
                      occ_f, form->w_locality))
    return -1;
  /* "prefetch_data" = d: at the start of each input-channel chunk, touch
   * the input lines the block will read d chunks later (the region of
   * ic + d: the block's rows and columns of that chunk, 14 lines for a
   * 14-column 1x1 block) */
  int64_t pd;
  if (x86_prefetch_distance("conv2d_NCHWc.x86", cfg, "prefetch_data", "input-channel chunks", &pd)) return -1;
  if (pd > 0 && form->prefetch_data &&
      (pad->kind == TE_PLACEHOLDER || (sch_stage(s, pad) && sch_stage(s, pad)->attach == ATTACH_ROOT)) &&
      stage_prefetch(scc, pad, ric, c32(pd), 3))
    return -1;
  return x86_schedule_others(s, so, conv, (int)oc_bn);
}
