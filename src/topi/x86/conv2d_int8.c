/*
 * x86/conv2d_int8.c - conv2d_NCHWc_int8.x86: the NCHW[x]c convolution of a
 * quantized model on uint8 activations and int8 weights with int32
 * accumulation on AVX512-VNNI (docs/int8.md).
 *
 * conv2d_NCHWc.x86 over groups of four input channels, as
 * conv2d_NCHWc_bf16.x86 is over pairs.  The kernel (int8 OIHW) is packed
 * [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/4, oc_bn] uint32 at compile time, each
 * word the four int8 weights of four consecutive input channels of one
 * output channel; the data stays uint8 NCHW[ic_bn]c between layers and is
 * packed (and padded) in the kernel's first stage, "data_u8x4" [N,
 * IC/ic_bn, H + pads, W + pads, ic_bn/4] uint32, byte j of a word from
 * channel 4 q + j; then
 *
 *     acc[n, occ, oh, ow, ocb] = sum over ic, kh, kw, q of
 *         u8s8_dot4(data_u8x4[n, ic, oh sh + kh dh, ow sw + kw dw, q], kernel[occ, ic, kh, kw, q, ocb])
 *
 * in int32: with oc_bn = 16 the vectorized accumulation is one VPDPBUSD per
 * 16 output channels and 4 input channels (the C code generator maps acc +
 * u8s8_dot4 on 16 int32 lanes there).  ic_bn must be a multiple of 4.
 *
 * The requantize epilogue is part of the compute, as dense_vnni.x86's:
 * with the activations' zero point za folded into comp[o] = za * sum of
 * W[o] (int32, at compile time) and scale[o] = s_a * s_w[o],
 *
 *     y[n, occ, oh, ow, ocb] = float32(acc - comp[o]) * scale[o],   o = occ oc_bn + ocb
 *
 * (with za = 0 the compensation is 0: comp NULL, no subtraction),
 * the dequantized convolution.  For that single compensation term to hold
 * at the border too, the input is padded with za (the quantized zero),
 * not with 0: every tap then contributes (x - za) w, as the float32 model's
 * zero padding does.  The graph's following ops (bias, ReLU, a residual
 * add, the next QuantizeLinear's divide/round/clip/cast to uint8) fuse
 * after it, so the next layer reads uint8.
 *
 * Space, fallback and schedule are conv2d_NCHWc.x86's (tile_ic, tile_oc,
 * tile_ow, and tile_oh for 1x1 or unroll_kw; prefetch_w on layers of its
 * own choosing), with tile_ic's inner part a multiple of 4: the space holds only such blocks, the check refuses a
 * config (a record) without one, and the fallback takes the largest such
 * block.  The workload is
 * conv2d_NCHWc.x86's arguments with dtype "uint8" and out_dtype "int32".
 */
#include "../../knob/knob.h"
#include "../topi.h"
#include "pack_words.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }
static Expr *u32c(int64_t v) { return ir_const((double)v, DT_U32); }

/* four int8 as bytes of one word, the lowest input channel in the low byte */
static Expr *int8_word(Expr *const *v, int g) {
  Expr *w = NULL;
  for (int j = 0; j < g; j++) {
    Expr *b = ir_call2(INTRIN_bitwise_and, ir_cast(DT_U32, v[j]), u32c(0xff));
    if (j) b = ir_call2(INTRIN_shift_left, b, u32c(8 * j));
    w = w ? ir_call2(INTRIN_bitwise_or, w, b) : b;
  }
  return w;
}

Tensor *topi_x86_pack_kernel_int8(Tensor *kernel, int64_t ic_bn, int64_t oc_bn) {
  X86WordPacking p = {.g = 4, .dtype = DT_I8, .form = "int8x4", .dtype_desc = "an int8", .block_desc = "a multiple of 4",
                      .name = "kernel_int8", .axis = "icq", .word = int8_word};
  return x86_pack_kernel_words(kernel, ic_bn, oc_bn, &p);
}

static bool is_u8(DType t) { return t.code == kDLUInt && t.bits == 8 && t.lanes == 1; }

Tensor *topi_x86_conv2d_NCHWc_int8(Tensor *data, Tensor *kernel, Tensor *comp, Tensor *scale, const int strides[2],
                                   const int padding[4], const int dilation[2], int zero_point) {
  const char *op = "conv2d_NCHWc_int8";
  if (!data || !kernel || !scale) return NULL;
  int64_t d[5], k[6];
  if (data->ndim != 5 || !te_shape_const(data, d) || !is_u8(data->dtype))
    return kiln_set_error("%s: data must be uint8 NCHW[x]c with a constant shape, got %s", op, dt_str(data->dtype)), NULL;
  if (kernel->ndim != 6 || !te_shape_const(kernel, k) || !dt_eq(kernel->dtype, DT_U32))
    return kiln_set_error("%s: kernel must be int8 quadruples packed as uint32 [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/4, "
                          "oc_bn] (topi_x86_pack_kernel_int8 makes it)",
                          op),
           NULL;
  if (d[4] % 4 || k[4] * 4 != d[4] || k[1] != d[1])
    return kiln_set_error("%s: the kernel's input blocks (%lld x %lld quadruples) do not match data's %lld x %lld "
                          "channels (the block must be a multiple of 4)",
                          op, (long long)k[1], (long long)k[4], (long long)d[1], (long long)d[4]),
           NULL;
  int64_t OC = k[0] * k[5];
  if (comp && (comp->ndim != 1 || te_dim(comp, 0) != OC || !dt_eq(comp->dtype, DT_I32)))
    return kiln_set_error("%s: the zero-point compensation must be int32 [%lld]", op, (long long)OC), NULL;
  if (scale->ndim != 1 || te_dim(scale, 0) != OC || !dt_eq(scale->dtype, DT_F32))
    return kiln_set_error("%s: the scale must be float32 [%lld]", op, (long long)OC), NULL;
  if (zero_point < 0 || zero_point > 255)
    return kiln_set_error("%s: the input zero point %d is not a uint8 value", op, zero_point), NULL;
  if (!comp && zero_point)
    return kiln_set_error("%s: the input zero point %d needs its compensation", op, zero_point), NULL;
  int sh = strides[0], sw = strides[1], dh = dilation[0], dw = dilation[1];
  int pt = padding[0], pl = padding[1], pb = padding[2], pr = padding[3];
  int64_t KH = k[2], KW = k[3], H = d[2], W = d[3], OH, OW;
  if (x86_conv_out_size(op, H, W, KH, KW, strides, padding, dilation, &OH, &OW)) return NULL;

  /* the input in quadruples of channels, padded with the zero point */
  Expr **v = te_axis_vars(5, (const char *[]){"n", "c", "h", "w", "cq"});
  Expr *h = ir_sub(v[2], c32(pt)), *w = ir_sub(v[3], c32(pl)), *c0 = ir_mul(v[4], c32(4));
  Expr *pack = NULL;
  for (int j = 0; j < 4; j++) {
    Expr *b = ir_cast(DT_U32, te_read5(data, v[0], v[1], h, w, ir_add(c0, c32(j))));
    if (j) b = ir_call2(INTRIN_shift_left, b, u32c(8 * j));
    pack = pack ? ir_call2(INTRIN_bitwise_or, pack, b) : b;
  }
  if (pt || pb || pl || pr) {
    Expr *in = ir_and(ir_and(ir_ge(v[2], c32(pt)), ir_lt(v[2], c32(H + pt))), ir_and(ir_ge(v[3], c32(pl)), ir_lt(v[3], c32(W + pl))));
    pack = ir_select(in, pack, u32c((int64_t)zero_point * 0x01010101));
  }
  Tensor *a = te_compute("data_u8x4", 5, (Expr *[]){c32(d[0]), c32(d[1]), c32(H + pt + pb), c32(W + pl + pr), c32(d[4] / 4)},
                         v, pack, "injective");
  if (!a) return NULL;
  IterVar *ic = te_reduce_axis_c(k[1], "ic"), *kh = te_reduce_axis_c(KH, "kh"), *kw = te_reduce_axis_c(KW, "kw"),
          *icq = te_reduce_axis_c(k[4], "icq");
  v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *ih = ir_add(ir_mul(v[2], c32(sh)), ir_mul(kh->var, c32(dh)));
  Expr *iw = ir_add(ir_mul(v[3], c32(sw)), ir_mul(kw->var, c32(dw)));
  Expr *x = te_read5(a, v[0], ic->var, ih, iw, icq->var);
  Expr *y = te_read(kernel, 6, (Expr *[]){v[1], ic->var, kh->var, kw->var, icq->var, v[4]});
  Expr *body = ir_sum(ir_call2(INTRIN_u8s8_dot4, x, y), 4, (IterVar *[]){ic, kh, kw, icq});
  Tensor *acc = te_compute(op, 5, (Expr *[]){c32(d[0]), c32(k[0]), c32(OH), c32(OW), c32(k[5])}, v, body, op);
  if (!acc) return NULL;
  /* the requantize epilogue (without a compensation where the zero point
   * is 0: the pass leaves it out there) */
  v = te_axis_vars(5, NULL);
  Expr *o = ir_add(ir_mul(v[1], c32(k[5])), v[4]), *sum = te_read(acc, 5, v);
  Expr *q = ir_cast(DT_F32, comp ? ir_sub(sum, te_read1(comp, o)) : sum);
  return te_compute("T_requant", 5, acc->shape, v, ir_mul(q, te_read1(scale, o)), "broadcast");
}

/* ---- the template: conv2d_NCHWc.x86's space with tile_ic a multiple of 4 ---- */

#define BASE topi_x86_conv2d_NCHWc_template

/* "prefetch_w" (conv2d_NCHWc.x86's knob: the weights the same step one or
 * two register blocks ahead will read, touched among this block's
 * VPDPBUSD) where the packed weights are at least 64 KiB and at most 256
 * outputs share each (the 14x14 and 7x7 layers): there a register block's
 * weights, read from memory or L3 in a model, arrive during its first row
 * faster than they are supplied.  The fallback takes one block ahead where
 * an output-channel chunk's weights are at most 256 KiB (so this block's
 * and the next one's fit a 1 MiB L2 together; all of ResNet-50's).
 * ResNet-50 int8, one thread, each kernel's minimum of 6 in-model
 * profiles alternating ABBA with the kernels unchanged (load 4.3-5.3;
 * the stem, not eligible, 456 / 454 us): none / one block ahead, us:
 * 1x1 512->2048 @7 210 / 132, 184 / 126; 1x1/2 1024->2048 355 / 263;
 * 1x1 2048->512 @7 150 / 122; 3x3 512 @7 331 / 274; 3x3/2 512 357 /
 * 298; 1x1 256->1024 @14 179 / 143 to 151 / 136; 1x1 1024->256 @14
 * 138 / 120 to 129 / 122; 3x3 256 @14 level to 0.91x.  Two blocks ahead
 * against one: level, the 3x3 512 @7 layers 1.8x slower. */
static bool int8_has_prefetch(const Conv2DWorkload *c) {
  return c->OC * c->IC / c->groups * c->KH * c->KW >= (64 << 10) && c->OH * c->OW <= X86_PREFETCH_W_OUTPUTS;
}

/* "inline_pad" (conv2d_NCHWc.x86's knob, which its fallback takes): a
 * padded layer with fewer input channels than a vector (an RGB stem, 3
 * channels padded to 4) reads its words from the uint8 input in place,
 * each read testing the padding's bounds, instead of a padded copy in a
 * parallel pass of its own first.  ResNet's 7x7/2 stem, per-kernel
 * minima of alternating in-model profiles (load 3-4), copied / inlined:
 * ResNet-18, 1 thread 334 / 320, 351 / 326, 349 / 327 us, 2 threads 199 /
 * 204, 207 / 181, 177 / 168, 200 / 184 us; ResNet-50, 1 thread 357 / 333,
 * 2 threads 185 / 173 us. */
static int int8_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  Conv2DWorkload c;
  if (x86_conv_space(t, cs, wl, 4) || wl_conv2d_parse(wl, &c)) return -1;
  if (int8_has_prefetch(&c) && space_define_knob(cs, "prefetch_w", 3, (OptVal[]){opt_int(0), opt_int(1), opt_int(2)}))
    return -1;
  if ((c.pt || c.pl || c.pb || c.pr) && c.IC < t->vector_lanes)
    return space_define_knob(cs, "inline_pad", 2, (OptVal[]){opt_bool(false), opt_bool(true)});
  return 0;
}

static int int8_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  return BASE.check(t, cfg, wl) ? -1 : x86_conv_ic_group_check(cfg, wl, 4, "int8");
}

/* A 1x1 layer whose reduction is at most this many VPDPBUSD per output
 * vector (128 input channels) takes half of conv2d_NCHWc.x86's column
 * block at batch 1: 7 columns x 2 chunks instead of 14 x 2.  Four input
 * channels an instruction make the reduction a quarter of the float32
 * conv's, so the requantize epilogue (16-17 vector instructions per 16
 * outputs with a residual add, 8-10 without) is as long as it; a block of
 * 14 accumulators ends in half the epilogue, which the core then overlaps
 * with the next block's multiply-adds.  Each kernel's parallel body
 * timed alone on one thread (hot caches, minimum of 3 x 200 runs,
 * alternating, load 6-8), ResNet-50's 1x1 layers, 14 / 7 columns: 64 ->
 * 256 @56 142 / 135, 283 / 270 (float32 output), 172 / 168 and 181 / 170
 * us (residual add); 128 -> 512 @28 124 / 122, 137 / 131, 141 / 138, 144
 * / 141; 64 -> 64 @56 34.3 / 33.6 (in all 1358 / 1307 us).  With 256
 * input channels and more it was level within the noise (0.96-1.04). */
#define INT8_SHORT_REDUCTION 32

/* conv2d_NCHWc.x86's fallback with an input block of quadruples (input
 * channels that are not a multiple of 4 are refused: the pass pads such a
 * layer's channels or leaves it float32).  A convolution with a window and
 * a single quadruple of input channels (an RGB stem, its 3 channels padded
 * to 4) takes blocks of 8 columns: each tap is then one VPDPBUSD per
 * column, each with a broadcast of its own, and conv2d_NCHWc.x86's 28
 * columns ran ResNet's 7x7/2 stem at 341-361 GOP/s, 8 at 576-579 (4, 7,
 * 14, 16 and 28 columns: 480-494, 557-569, 439-484, 547-573 and 361-397;
 * per-kernel minimum of 3 in-model profiles, one thread, load 5).  A 1x1
 * layer with a short reduction takes half the columns
 * (INT8_SHORT_REDUCTION).
 *
 * A layer with a window and more input channels takes two output-channel
 * chunks of half the budget's columns (14 x 2 where conv2d_NCHWc.x86
 * takes 28 x 1, the 56- and 28-column layers) at batch 1: VPDPBUSD cannot
 * take its broadcast input word from memory as the float32 FMA does (the
 * memory operand is the signed one, the kernel's), so each column's
 * broadcast is an instruction of its own, and two chunks halve them (14
 * broadcasts and 2 kernel vectors per 28 VPDPBUSD).  Per-kernel minima
 * of alternating in-model profiles, 28 x 1 / 14 x 2, load 4: ResNet-18,
 * 2 threads, 12 rounds: 3x3 64 @56 0.949-0.960x, 3x3 128 @28
 * 0.949-0.973x, 3x3/2 64 -> 128 0.969x (the other kernels 0.98x);
 * ResNet-50, 2 threads, 12 rounds: 3x3 64 @56 0.948-0.961x, 128 @28
 * 0.961-0.969x, 3x3/2 128 @56 0.944x (the others 0.996x); 1 thread, 8
 * rounds: 0.945-0.971x (the others 0.997x).  With unroll_kw as well:
 * 1.10-1.31x slower (ResNet-18, 2 threads, load 1.5). */
static int int8_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (BASE.fallback(t, cfg, wl) || x86_conv_ic_group_fallback(cfg, wl, 4, "int8") || wl_conv2d_parse(wl, &c)) return -1;
  if ((c.KH > 1 || c.KW > 1) && c.IC <= 4) config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, x86_conv_block_cols(c.OW, 8)});
  int64_t cols = cfg_split_inner(cfg, "tile_ow");
  int64_t half = x86_reg_budget(t) / 2, chunks = c.OC / cfg_split_inner(cfg, "tile_oc");
  if ((c.KH > 1 || c.KW > 1) && c.IC > 4 && c.N == 1 && cols > half && x86_conv_occ_block(t, half, chunks) == 2)
    config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, cols = x86_conv_block_cols(c.OW, half)});
  if (c.KH == 1 && c.KW == 1 && c.N == 1 && c.IC <= 4 * INT8_SHORT_REDUCTION && cols >= 14 &&
      cfg_other_int(cfg, "tile_oh", 1) == 1)
    config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, x86_conv_block_cols(c.OW, cols / 2)});
  if (int8_has_prefetch(&c)) {
    int64_t chunk = cfg_split_inner(cfg, "tile_oc") * c.IC / c.groups * c.KH * c.KW;
    config_set_other(cfg, "prefetch_w", opt_int(chunk <= (256 << 10) ? 1 : 0));
  }
  return 0;
}

static Tensor *int8_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return NULL;
  if (nin != 4)
    return kiln_set_error("%s: compute takes data, kernel, compensation and scale, got %d inputs", wl->name, nin), NULL;
  /* the zero point only sets the padding's value, not the work: tuning uses 128 */
  return topi_x86_conv2d_NCHWc_int8(in[0], in[1], in[2], in[3], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                    (int[]){c.dh, c.dw}, 128);
}

/* data uint8 NCHW[ic_bn]c, kernel uint32 [OC/oc_bn, IC/ic_bn, KH, KW,
 * ic_bn/4, oc_bn], compensation int32 [OC], scale float32 [OC] */
static int int8_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg, "tile_oc");
  if (ic_bn < 4 || ic_bn % 4 || oc_bn < 1) return kiln_set_error("%s: tile_ic must be a multiple of 4", wl->name);
  *nin = 4;
  *in = KNEWN(Tensor *, 4);
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ic_bn, c.IH, c.IW, ic_bn}, DT_U8);
  (*in)[1] = te_placeholder_c("kernel_int8", 6, (int64_t[]){c.OC / oc_bn, c.IC / ic_bn, c.KH, c.KW, ic_bn / 4, oc_bn}, DT_U32);
  (*in)[2] = te_placeholder_c("compensation", 1, &c.OC, DT_I32);
  (*in)[3] = te_placeholder_c("scale", 1, &c.OC, DT_F32);
  return 0;
}

/* conv2d_NCHWc.x86's schedule on the accumulation (the graph build passes
 * the op's output, the requantize epilogue, as the anchor; it is inlined
 * into the output stage, which reads the block from the registers). */
int topi_x86_schedule_conv2d_NCHWc_int8(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *c, int nout,
                                        Tensor **outs) {
  if (!s || !c) return -1;
  if (c->tag && !strcmp(c->tag, "broadcast"))
    for (int i = 0; i < c->ninputs; i++)
      if (c->inputs[i]->tag && !strcmp(c->inputs[i]->tag, "conv2d_NCHWc_int8")) c = c->inputs[i];
  if (!c->tag || strcmp(c->tag, "conv2d_NCHWc_int8"))
    return kiln_set_error("conv2d_NCHWc_int8.x86 schedule: anchor '%s' has tag '%s', expected conv2d_NCHWc_int8 (or its "
                          "requantize epilogue)",
                          c->name, c->tag ? c->tag : "");
  /* Unpadded, the packed input's words are the data's own bytes (ic_bn a
   * multiple of 4): the stage is inlined, and the conv reads each word
   * straight from the uint8 data (one load: lower/combine_loads.c) instead
   * of a copy of the whole input first. */
  for (int i = 0; i < c->ninputs; i++) {
    Tensor *a = c->inputs[i];
    if (a->kind != TE_COMPUTE || !a->name || strcmp(a->name, "data_u8x4") || a->ninputs < 1) continue;
    Tensor *d = a->inputs[0];
    if (d->ndim == 5 && te_dim(a, 2) == te_dim(d, 2) && te_dim(a, 3) == te_dim(d, 3) &&
        stage_compute_inline(sch_stage(s, a)))
      return -1;
  }
  return topi_x86_schedule_conv2d_NCHWc(t, s, cfg, c, nout, outs);
}

const Template topi_x86_conv2d_NCHWc_int8_template = {
    .name = "conv2d_NCHWc_int8.x86", .anchor_tag = "conv2d_NCHWc_int8", .key = "cpu", .define_space = int8_space,
    .fallback = int8_fallback, .check = int8_check, .placeholders = int8_placeholders, .compute = int8_compute,
    .schedule = topi_x86_schedule_conv2d_NCHWc_int8,
};
