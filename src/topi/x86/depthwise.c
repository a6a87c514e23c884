/*
 * x86/depthwise.c - depthwise_conv2d_NCHWc.x86 (TVM's
 * topi/x86/depthwise_conv2d.py, knobs tile_ic, tile_oc, tile_ow).
 *
 * Layouts: data [N, C/ic_bn, H, W, ic_bn], kernel [OC/oc_bn, 1, KH, KW, 1,
 * oc_bn] (OC = C * multiplier), output [N, OC/oc_bn, OH, OW, oc_bn];
 * output channel c reads input channel c / multiplier.
 *
 * The schedule is the convolution's: a register block of reg_n columns x
 * oc_bn channels in a local cache computed at (fused n/oc-chunk/oh,
 * ow.outer) of the output, the window streamed (kh, kw) with a vector of
 * oc_bn input channels per column, the epilogue inlined into the output.
 * With unroll_kw (not TVM's knob here, but conv2d_NCHWc.x86's name) the
 * window's columns are unrolled too, and neighbouring columns' taps share
 * their input loads (dw_unroll_kw).  With prefetch_w (conv2d_NCHWc.x86's
 * name) a small layer touches the weights of the output-channel chunk d
 * ahead while it convolves this one (dw_prefetch_pays).
 *
 * The zero padding (knob inline_pad).  Copied, a parallel block first
 * writes the padded input rows it reads to a buffer, then convolves them;
 * inlined, the convolution reads the input in place, each load a select
 * against the padding's bounds (the C compiler hoists the row test out of
 * the column block and folds the column tests of the inner blocks).  A
 * depthwise layer does 2 x KH x KW FLOPs per output element, so the copy
 * (a load and a store per input vector, in a phase of its own that the
 * FMAs do not overlap) is a large part of it: bench_conv2d --depthwise,
 * 1 thread, load 3, MobileNet-V2's 3x3 layers 112 -> 164 GFLOP/s (32 @112),
 * 57 -> 105 (96 /2 @112), 113 -> 168 (144 @56), 66 -> 190 (192 /2 @28),
 * MnasNet's and EfficientNet's 5x5 layers 83 -> 110 (72 /2 @56), 136 ->
 * 225 (576 /2 @14), 92 -> 163 (144 /2 @56), ConvNeXt's 7x7 at 56-14 rows
 * 209-224 -> 241-262; all 23 layers 136 -> 178 on average.  Only where the
 * window is as wide as the output (ConvNeXt's 7x7 over 7 columns: 198 ->
 * 123) does every column block test every load, and there the copy wins:
 * the fallback inlines the padding when the output is wider than the
 * window.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

/* Output rows per parallel block (a divisor of the output height), and
 * for a strided layer the most bytes of padded input rows a block may
 * copy (dw_row_block). */
enum { DW_ROW_BLOCK = 8, DW_STRIDED_SPAN_BYTES = 24 * 1024 };

/* The output rows of a parallel block.  A block first copies the padded
 * input rows it reads, then convolves them.  With stride 1 each input row
 * serves three output rows and the copy is amortized over up to
 * DW_ROW_BLOCK rows.  With stride 2 an input row serves only 1.5 output
 * rows and each output vector reads four new input vectors, so the block
 * pays off only while its copied rows are still in the L1 data cache when
 * the convolution reads them: the most rows whose span fits
 * DW_STRIDED_SPAN_BYTES (half a 48 KB L1).  bench_conv2d --depthwise, 1
 * thread, best of alternating runs (load 16-18): MobileNet-V2's stride-2
 * 3x3 layers at 112, 56 and 28 rows ran at 17.0 / 21.5 / 31.0 GFLOP/s in
 * blocks of 8 (7) rows and at 23.3 / 34.7 / 44.4 in blocks of 1 / 2 / 2
 * (MnasNet's 3x3/2 at 112: 18.6 -> 25.9; its 5x5/2 72 @56, blocks of 4:
 * 43.5 -> 51.3); the stride-1 layers ran fastest in blocks of 8. */
static int64_t dw_row_block(int64_t OH, int64_t pad_h, int64_t row_bytes) {
  int64_t s = OH > 0 ? pad_h / OH : 1;
  if (s < 2) return x86_largest_divisor(OH, DW_ROW_BLOCK);
  int64_t window = pad_h - (OH - 1) * s, best = 1;
  for (int64_t r = 1; r <= DW_ROW_BLOCK && r <= OH; r++)
    if (OH % r == 0 && ((r - 1) * s + window) * row_bytes <= DW_STRIDED_SPAN_BYTES) best = r;
  return best;
}

Tensor *topi_x86_pack_kernel_depthwise(Tensor *kernel, int64_t oc_bn) {
  if (!kernel) return NULL;
  int64_t s[4];
  if (kernel->ndim != 4 || !te_shape_const(kernel, s) || s[1] != 1)
    return kiln_set_error("pack depthwise kernel: expected [C * multiplier, 1, KH, KW] of constant shape"), NULL;
  if (oc_bn < 1 || s[0] % oc_bn)
    return kiln_set_error("pack depthwise kernel: the block %lld does not divide the %lld output channels",
                          (long long)oc_bn, (long long)s[0]),
           NULL;
  Expr **v = te_axis_vars(6, (const char *[]){"oc", "i", "kh", "kw", "ib", "ocb"});
  Expr *body = te_read4(kernel, ir_add(ir_mul(v[0], c32(oc_bn)), v[5]), c32(0), v[2], v[3]);
  return te_compute("kernel_vec", 6, (Expr *[]){c32(s[0] / oc_bn), c32(1), c32(s[2]), c32(s[3]), c32(1), c32(oc_bn)}, v,
                    body, "injective");
}

Tensor *topi_x86_depthwise_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                        const int dilation[2], DType out_dtype) {
  if (!data || !kernel) return NULL;
  int64_t d[5], k[6];
  if (data->ndim != 5 || !te_shape_const(data, d))
    return kiln_set_error("depthwise_conv2d_NCHWc: data must be 5-D NCHW[x]c with a constant shape"), NULL;
  if (kernel->ndim != 6 || !te_shape_const(kernel, k) || k[1] != 1 || k[4] != 1)
    return kiln_set_error("depthwise_conv2d_NCHWc: kernel must be 6-D [OC/oc_bn, 1, KH, KW, 1, oc_bn]"), NULL;
  int64_t C = d[1] * d[4], OC = k[0] * k[5];
  if (OC % C)
    return kiln_set_error("depthwise_conv2d_NCHWc: %lld output channels are not a multiple of the %lld input channels",
                          (long long)OC, (long long)C),
           NULL;
  int64_t m = OC / C, ic_bn = d[4], oc_bn = k[5];
  int sh = strides[0], sw = strides[1], dh = dilation[0], dw = dilation[1];
  int pt = padding[0], pl = padding[1], pb = padding[2], pr = padding[3];
  int64_t KH = k[2], KW = k[3], OH, OW;
  if (x86_conv_out_size("depthwise_conv2d_NCHWc", d[2], d[3], KH, KW, strides, padding, dilation, &OH, &OW))
    return NULL;
  Tensor *pad = x86_pad_nchwc(data, pt, pl, pb, pr);
  if (!pad) return NULL;
  IterVar *kh = te_reduce_axis_c(KH, "kh"), *kw = te_reduce_axis_c(KW, "kw");
  Expr **v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *cchunk, *cblock;
  if (m == 1 && ic_bn == oc_bn) { /* the common case: the same block */
    cchunk = v[1];
    cblock = v[4];
  } else {
    Expr *c = ir_floordiv(ir_add(ir_mul(v[1], c32(oc_bn)), v[4]), c32(m));
    cchunk = ir_floordiv(c, c32(ic_bn));
    cblock = ir_floormod(c, c32(ic_bn));
  }
  Expr *ih = ir_add(ir_mul(v[2], c32(sh)), ir_mul(kh->var, c32(dh)));
  Expr *iw = ir_add(ir_mul(v[3], c32(sw)), ir_mul(kw->var, c32(dw)));
  Expr *a = te_read5(pad, v[0], cchunk, ih, iw, cblock);
  Expr *b = te_read(kernel, 6, (Expr *[]){v[1], c32(0), kh->var, kw->var, c32(0), v[4]});
  if (!a || !b) return NULL;
  if (!dt_eq(a->dtype, out_dtype)) a = ir_cast(out_dtype, a);
  if (!dt_eq(b->dtype, out_dtype)) b = ir_cast(out_dtype, b);
  Expr *body = ir_sum(ir_mul(a, b), 2, (IterVar *[]){kh, kw});
  return te_compute("depthwise_conv2d_NCHWc", 5, (Expr *[]){c32(d[0]), c32(k[0]), c32(OH), c32(OW), c32(oc_bn)}, v,
                    body, "depthwise_conv2d_NCHWc");
}

/* ---- the template ---- */

/* Whether a layer's space has "prefetch_w": at most X86_PREFETCH_W_OUTPUTS
 * output positions share each weight vector (the 14x14 and 7x7 layers).
 * A chunk's weights (KH x KW vectors) then serve at most 256 FMAs each
 * before the next chunk's are needed, and in a model they come from L3 or
 * memory: every other layer's weights passed through the caches since the
 * last run.  Each kh step
 * touches the kh row of the chunk d ahead (stage_prefetch), and the row
 * block's output rows share the touches out (stage_prefetch_spread), so
 * the next chunk's weights stream in among this chunk's FMAs.  In the
 * models, each node's minimum over 40 alternating profiles, 1 thread
 * (load 4), without / 1 ahead: MobileNet-V2's 960 @7 7.4-7.8 / 5.5-6.0
 * us, 576 /2 @14 7.8 / 5.7, 576 @14 11.8-12.1 / 10.5-10.9, 384 @14 7.1-7.9
 * / 6.9-7.2, 192 /2 @28 7.5 / 6.6, the 11 such nodes 92 / 79 us; MnasNet's
 * 5x5 576 /2 @14 13.8 / 10.3, 5x5 1152 @7 15.5-16.3 / 15.0-15.2, its 9
 * such nodes 136 / 124 us.  Touching every kh step's lines in every row
 * (no spread) was slower, and the larger layers (784 or more outputs a
 * weight: 32 @112, 144 @56, 192 @28) were level or slower with it. */
static bool dw_prefetch_pays(const Conv2DWorkload *c) { return c->OH * c->OW <= X86_PREFETCH_W_OUTPUTS; }

/* Whether the layer reads zero padding (and so has the inline_pad knob). */
static bool dw_padded(const Conv2DWorkload *c) { return c->pt || c->pl || c->pb || c->pr; }

static int dw_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (!c.depthwise) return kiln_set_error("depthwise_conv2d_NCHWc.x86: workload '%s' is not depthwise", wl->name);
  SplitOpts ow = {.filter = x86_conv_ow_filter};
  if (space_define_split(cs, "tile_ic", c.IC, NULL) || space_define_split(cs, "tile_oc", c.OC, NULL) ||
      space_define_split(cs, "tile_ow", c.OW, &ow))
    return -1;
  if (dw_padded(&c) && space_define_knob(cs, "inline_pad", 2, (OptVal[]){opt_bool(false), opt_bool(true)})) return -1;
  /* last, so the indices of the knobs before it keep their configs */
  if (space_define_knob(cs, "unroll_kw", 2, (OptVal[]){opt_bool(true), opt_bool(false)})) return -1;
  return dw_prefetch_pays(&c) ? space_define_knob(cs, "prefetch_w", 3, (OptVal[]){opt_int(0), opt_int(1), opt_int(2)})
                              : 0;
}


/* The fallback's unroll_kw: true at stride 1.  With the window's columns
 * unrolled beside the block's, neighbouring columns' taps read the same
 * input vector (column ow + kw), which the C compiler then loads once: a
 * 3x3 block of 14 columns loads 16 input vectors a row rather than 42,
 * and the load ports no longer bound it.  At stride 2 the columns share
 * only every other tap.  bench_conv2d --depthwise --cpu-time, 1 thread,
 * GFLOP/s without / with, two alternating runs (load 6-7): stride 1
 * MobileNet-V2 32 @112 141-160 / 186-192, 144 @56 131-162 / 152-196, 192
 * @28 153-160 / 192-198, 384 @14 148-184 / 223-230, 960 @7 185-195 /
 * 215-224, MnasNet's 5x5 480 @14 167-226 / 242-249, EfficientNet's 5x5
 * 240 @28 198-209 / 236-242, ConvNeXt's 7x7 96 @56 218-223 / 239-243
 * (1.06-1.37x; level where the window is as wide as the output: 7x7 768
 * @7, 5x5 1152 @7); stride 2 0.93-1.26x, mostly level (96 /2 @112 96-101
 * / 95, 48 /2 @112 80-89 / 77-80, 192 /2 @28 145-167 / 146-155). */
static bool dw_unroll_kw(const Conv2DWorkload *c) { return c->sw == 1; }

static int dw_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t lanes = t->vector_lanes;
  int64_t oc_bn = x86_channel_block(c.OC, lanes), ic_bn = x86_largest_divisor(c.IC, oc_bn);
  config_set_split(cfg, "tile_ic", 2, (int64_t[]){-1, ic_bn});
  config_set_split(cfg, "tile_oc", 2, (int64_t[]){-1, oc_bn});
  /* at most 16 columns: the window loop keeps a kernel vector and an
   * input vector live beside the accumulators, and wider blocks spill
   * (3x3 over 32 x 112 x 112: 16 columns 139 us, 28 columns 256 us) */
  int64_t cols = x86_reg_budget(t) < 16 ? x86_reg_budget(t) : 16;
  config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, x86_largest_divisor(c.OW, cols)});
  config_set_other(cfg, "unroll_kw", opt_bool(dw_unroll_kw(&c)));
  if (dw_padded(&c)) config_set_other(cfg, "inline_pad", opt_bool(c.OW > c.KW));
  if (dw_prefetch_pays(&c)) config_set_other(cfg, "prefetch_w", opt_int(1));
  cfg->is_fallback = true;
  return 0;
}

static int dw_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (x86_check_split(cfg, "tile_ic", 2, c.IC, "input channels", true) ||
      x86_check_split(cfg, "tile_oc", 2, c.OC, "output channels", true) ||
      x86_check_split(cfg, "tile_ow", 2, c.OW, "output columns", true))
    return kiln_error_context("%s", wl->name);
  if (cfg_other_int(cfg, "inline_pad", 0) && !dw_padded(&c))
    return kiln_set_error("%s: config knob 'inline_pad' is set, but the layer has no padding (leave it out or "
                          "false)",
                          wl->name);
  return 0;
}

static Tensor *dw_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)cfg;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes data and kernel, got %d inputs", wl->name, nin), NULL;
  return topi_x86_depthwise_conv2d_NCHWc(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                         (int[]){c.dh, c.dw}, c.out_dtype);
}

/* data NCHW[ic_bn]c, kernel [OC/oc_bn, 1, KH, KW, 1, oc_bn] */
static int dw_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg, "tile_oc");
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ic_bn, c.IH, c.IW, ic_bn}, c.dtype);
  (*in)[1] = te_placeholder_c("kernel", 6, (int64_t[]){c.OC / oc_bn, 1, c.KH, c.KW, 1, oc_bn}, c.dtype);
  return 0;
}

const Template topi_x86_depthwise_conv2d_NCHWc_template = {
    .name = "depthwise_conv2d_NCHWc.x86", .anchor_tag = "depthwise_conv2d_NCHWc", .key = "cpu", .define_space = dw_space,
    .fallback = dw_fallback, .check = dw_check, .placeholders = dw_placeholders, .compute = dw_compute,
    .schedule = topi_x86_schedule_depthwise_conv2d_NCHWc,
};

/* ---- the schedule ---- */

int topi_x86_schedule_depthwise_conv2d_NCHWc(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *conv, int nout,
                                             Tensor **outs) {
  if (!s || !conv) return -1;
  if (!conv->tag || strcmp(conv->tag, "depthwise_conv2d_NCHWc"))
    return kiln_set_error("depthwise_conv2d_NCHWc.x86 schedule: anchor '%s' has tag '%s', expected "
                          "depthwise_conv2d_NCHWc",
                          conv->name, conv->tag ? conv->tag : "");
  Tensor *pad = NULL, *kernel = NULL;
  for (int i = 0; i < conv->ninputs; i++) {
    if (conv->inputs[i]->ndim == 5) pad = conv->inputs[i];
    if (conv->inputs[i]->ndim == 6) kernel = conv->inputs[i];
  }
  if (!pad) return kiln_set_error("depthwise_conv2d_NCHWc.x86 schedule: '%s' reads no 5-D data", conv->name);
  int64_t oc_bn = te_dim(conv, 4), ic_bn = te_dim(pad, 4), OW = te_dim(conv, 3);
  int64_t cfg_ic, cfg_oc, reg_n;
  if ((cfg_ic = cfg_split_inner(cfg, "tile_ic")) < 0 || (cfg_oc = cfg_split_inner(cfg, "tile_oc")) < 0 ||
      (reg_n = cfg_split_inner(cfg, "tile_ow")) < 0)
    return kiln_error_context("depthwise_conv2d_NCHWc.x86");
  if (cfg_ic != ic_bn || cfg_oc != oc_bn)
    return kiln_set_error("depthwise_conv2d_NCHWc.x86: config blocks tile_ic %lld / tile_oc %lld do not match the "
                          "compute's layout (input block %lld, output block %lld)",
                          (long long)cfg_ic, (long long)cfg_oc, (long long)ic_bn, (long long)oc_bn);
  if (OW % reg_n)
    return kiln_set_error("depthwise_conv2d_NCHWc.x86: config knob 'tile_ow' inner part %lld does not divide the %lld "
                          "output columns",
                          (long long)reg_n, (long long)OW);
  if (x86_inline_group(s, conv, NULL)) return -1;
  Tensor *main_out = x86_main_output(conv, nout, outs);
  Stage *sc = sch_stage(s, conv);
  if (!sc) return -1;
  Tensor *cc = sch_cache_write(s, conv, "local");
  if (!cc) return -1;
  Stage *scc = sch_stage(s, cc), *so = sc;
  if (main_out && main_out != conv) {
    if (stage_compute_inline(sc)) return -1;
    so = sch_stage(s, main_out);
  }
  IterVar *n = stage_axis(so, 0), *occ = stage_axis(so, 1), *oh = stage_axis(so, 2), *ow = stage_axis(so, 3),
          *ocb = stage_axis(so, 4), *owo, *owi, *f;
  /* blocks of up to DW_ROW_BLOCK output rows, in parallel */
  IterVar *oho, *ohi;
  int64_t rows = dw_row_block(te_dim(conv, 2), te_dim(pad, 2),
                              te_dim(pad, 3) * ic_bn * (int64_t)dt_bytes(pad->dtype));
  if (stage_split(so, ow, c32(reg_n), &owo, &owi) || stage_split(so, oh, c32(rows), &oho, &ohi)) return -1;
  if (stage_fuse(so, n, occ, &f) || stage_fuse(so, f, oho, &f) || stage_parallel(so, f)) return -1;
  /* A depthwise layer does little arithmetic per byte, so padding the
   * whole input first (a pass over memory) would cost more than the
   * convolution: read it in place (inline_pad), or pad just the input
   * rows a block of output rows reads, inside the block loop, where they
   * stay in cache.  (Per output row, a stride-1 3x3 layer would copy
   * every input row three times.) */
  if (pad->kind == TE_COMPUTE && cfg_other_int(cfg, "inline_pad", 0)) {
    if (stage_compute_inline(sch_stage(s, pad))) return -1;
  } else if (pad->kind == TE_COMPUTE) {
    Stage *sp = sch_stage(s, pad);
    if (!sp || stage_compute_at(sp, so, f) || x86_vec_or_unroll(t, sp, stage_axis(sp, 4), ic_bn)) return -1;
  }
  if (stage_unroll(so, owi) || x86_vec_or_unroll(t, so, ocb, oc_bn)) return -1;
  if (stage_compute_at(scc, so, owo)) return -1;
  IterVar *cn = stage_axis(scc, 0), *cocc = stage_axis(scc, 1), *coh = stage_axis(scc, 2), *cow = stage_axis(scc, 3),
          *cocb = stage_axis(scc, 4), *rkh = stage_reduce_axis(scc, 0), *rkw = stage_reduce_axis(scc, 1);
  if (stage_reorder(scc, 7, (IterVar *[]){cn, cocc, coh, rkh, rkw, cow, cocb})) return -1;
  if (cfg_other_int(cfg, "unroll_kw", 0) && stage_unroll(scc, rkw)) return -1;
  /* a chunk's weights are KH steps of rkh: d chunks ahead is d x KH steps */
  if (x86_prefetch_w_blocks("depthwise_conv2d_NCHWc.x86", scc, cfg, kernel, rkh, ohi, rows,
                            kernel ? te_dim(kernel, 2) : 0))
    return -1;
  if (stage_unroll(scc, cow) || x86_vec_or_unroll(t, scc, cocb, oc_bn)) return -1;
  return x86_schedule_others(s, so, conv, (int)oc_bn);
}
