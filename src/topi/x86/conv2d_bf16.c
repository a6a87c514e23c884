/*
 * x86/conv2d_bf16.c - conv2d_NCHWc_bf16.x86: the NCHW[x]c convolution with
 * its kernel in bfloat16 and float32 accumulation on AVX512-BF16
 * (`kiln compile --precision bf16`, docs/bf16.md).
 *
 * conv2d_NCHWc.x86 over pairs of input channels.  The kernel is packed
 * [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/2, oc_bn] uint32, each word the
 * bfloat16 of two consecutive input channels; the data block stays float32
 * NCHW[ic_bn]c between layers and is rounded to bfloat16 pairs (and
 * padded) in the kernel's first stage, "data_bf16" [N, IC/ic_bn, H + pads,
 * W + pads, ic_bn/2] uint32; then
 *
 *     out[n, occ, oh, ow, ocb] = sum over ic, kh, kw, icp of
 *         bf16_dot2(data_bf16[n, ic, oh sh + kh dh, ow sw + kw dw, icp], kernel[occ, ic, kh, kw, icp, ocb])
 *
 * in float32: with oc_bn = 16 the vectorized accumulation is one VDPBF16PS
 * per 16 output channels and 2 input channels.  ic_bn must be even.  A
 * strided 1x1 conv's data_bf16 holds only the rows and columns it reads
 * (as conv2d_NCHWc.x86's data_sub), and the conv runs with stride 1.
 *
 * The knob bf16_dot chooses that form ("vdpbf16ps") or "fma": the input
 * stays float32 (padded as conv2d_NCHWc.x86 pads it) and multiplies the
 * kernel's halves widened to float32 (bf16_half: a shift), one FMA per
 * input channel - on a CPU where VDPBF16PS runs slower than two FMAs
 * (docs/bf16.md) that form keeps float32's speed with half the kernel's
 * bytes, and rounds only the weights.  The fallback takes the faster form
 * on the target's CPU (topi_x86_bf16_dot_fallback).
 *
 * Space, fallback and schedule are conv2d_NCHWc.x86's (the same knobs:
 * tile_ic, tile_oc, tile_ow, and tile_oh for 1x1 or unroll_kw), with
 * tile_ic's inner part even: a config of the space with an odd one is
 * refused by the check, and the fallback takes the largest even block.
 */
#include "../../knob/knob.h"
#include "../topi.h"
#include "pack_words.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

/* two float32 rounded to bfloat16, the lower input channel in the low half */
static Expr *bf16_word(Expr *const *v, int g) {
  (void)g;
  return ir_call2(INTRIN_bf16_pack2, v[0], v[1]);
}

Tensor *topi_x86_pack_kernel_bf16(Tensor *kernel, int64_t ic_bn, int64_t oc_bn) {
  X86WordPacking p = {.g = 2, .dtype = DT_F32, .form = "bfloat16", .dtype_desc = "a float32", .block_desc = "even",
                      .name = "kernel_bf16", .axis = "icp", .word = bf16_word};
  return x86_pack_kernel_words(kernel, ic_bn, oc_bn, &p);
}

Tensor *topi_x86_conv2d_NCHWc_bf16(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                   const int dilation[2], bool fma) {
  const char *op = "conv2d_NCHWc_bf16";
  if (!data || !kernel) return NULL;
  int64_t d[5], k[6];
  if (data->ndim != 5 || !te_shape_const(data, d) || !dt_eq(data->dtype, DT_F32))
    return kiln_set_error("%s: data must be float32 NCHW[x]c with a constant shape", op), NULL;
  if (kernel->ndim != 6 || !te_shape_const(kernel, k) || !dt_eq(kernel->dtype, DT_U32))
    return kiln_set_error("%s: kernel must be bfloat16 pairs packed as uint32 [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/2, "
                          "oc_bn] (topi_x86_pack_kernel_bf16 makes it)",
                          op),
           NULL;
  if (d[4] % 2 || k[4] * 2 != d[4] || k[1] != d[1])
    return kiln_set_error("%s: the kernel's input blocks (%lld x %lld pairs) do not match data's %lld x %lld channels "
                          "(the block must be even)",
                          op, (long long)k[1], (long long)k[4], (long long)d[1], (long long)d[4]),
           NULL;
  int sh = strides[0], sw = strides[1], dh = dilation[0], dw = dilation[1];
  int pt = padding[0], pl = padding[1], pb = padding[2], pr = padding[3];
  int64_t KH = k[2], KW = k[3], H = d[2], W = d[3], OH, OW;
  if (x86_conv_out_size(op, H, W, KH, KW, strides, padding, dilation, &OH, &OW)) return NULL;
  /* a strided 1x1 conv reads the rows and columns it uses, sampled into a
   * compact input stage (conv2d_NCHWc's data_sub), with stride 1 */
  bool sub = KH == 1 && KW == 1 && (sh > 1 || sw > 1);
  int ssh = sub ? sh : 1, ssw = sub ? sw : 1;
  if (fma) { /* float32 input (padded or sampled as conv2d_NCHWc does) times the kernel's halves */
    Tensor *pad = sub ? x86_subsample_nchwc(data, pt, pl, sh, sw, OH, OW) : x86_pad_nchwc(data, pt, pl, pb, pr);
    if (!pad) return NULL;
    if (sub) sh = sw = 1;
    IterVar *ic = te_reduce_axis_c(k[1], "ic"), *kh = te_reduce_axis_c(KH, "kh"), *kw = te_reduce_axis_c(KW, "kw"),
            *icb = te_reduce_axis_c(d[4], "icb");
    Expr **v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
    Expr *ih = ir_add(ir_mul(v[2], c32(sh)), ir_mul(kh->var, c32(dh)));
    Expr *iw = ir_add(ir_mul(v[3], c32(sw)), ir_mul(kw->var, c32(dw)));
    Expr *x = te_read5(pad, v[0], ic->var, ih, iw, icb->var);
    Expr *y = te_read(kernel, 6, (Expr *[]){v[1], ic->var, kh->var, kw->var, ir_floordiv(icb->var, c32(2)), v[4]});
    Expr *half = ir_call2(INTRIN_bf16_half, y, ir_cast(DT_U32, ir_floormod(icb->var, c32(2))));
    Expr *body = ir_sum(ir_mul(x, half), 4, (IterVar *[]){ic, kh, kw, icb});
    return te_compute(op, 5, (Expr *[]){c32(d[0]), c32(k[0]), c32(OH), c32(OW), c32(k[5])}, v, body, op);
  }
  /* the input rounded to bfloat16 pairs, padded with zeros (a strided 1x1
   * conv's: the rows and columns it reads) */
  int64_t PH = sub ? OH : H + pt + pb, PW = sub ? OW : W + pl + pr;
  Expr **v = te_axis_vars(5, (const char *[]){"n", "c", "h", "w", "cp"});
  Expr *h = ir_sub(ir_mul(v[2], c32(ssh)), c32(pt)), *w = ir_sub(ir_mul(v[3], c32(ssw)), c32(pl)), *c0 = ir_mul(v[4], c32(2));
  Expr *pack = ir_call2(INTRIN_bf16_pack2, te_read5(data, v[0], v[1], h, w, c0), te_read5(data, v[0], v[1], h, w, ir_add(c0, c32(1))));
  if (pt || pl || (PH - 1) * ssh - pt >= H || (PW - 1) * ssw - pl >= W) {
    Expr *in = ir_and(ir_and(ir_ge(h, c32(0)), ir_lt(h, c32(H))), ir_and(ir_ge(w, c32(0)), ir_lt(w, c32(W))));
    pack = ir_select(in, pack, ir_const(0, DT_U32));
  }
  Tensor *a = te_compute("data_bf16", 5, (Expr *[]){c32(d[0]), c32(d[1]), c32(PH), c32(PW), c32(d[4] / 2)}, v, pack, "injective");
  if (!a) return NULL;
  if (sub) sh = sw = 1;
  IterVar *ic = te_reduce_axis_c(k[1], "ic"), *kh = te_reduce_axis_c(KH, "kh"), *kw = te_reduce_axis_c(KW, "kw"),
          *icp = te_reduce_axis_c(k[4], "icp");
  v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *ih = ir_add(ir_mul(v[2], c32(sh)), ir_mul(kh->var, c32(dh)));
  Expr *iw = ir_add(ir_mul(v[3], c32(sw)), ir_mul(kw->var, c32(dw)));
  Expr *x = te_read5(a, v[0], ic->var, ih, iw, icp->var);
  Expr *y = te_read(kernel, 6, (Expr *[]){v[1], ic->var, kh->var, kw->var, icp->var, v[4]});
  Expr *body = ir_sum(ir_call2(INTRIN_bf16_dot2, x, y), 4, (IterVar *[]){ic, kh, kw, icp});
  return te_compute(op, 5, (Expr *[]){c32(d[0]), c32(k[0]), c32(OH), c32(OW), c32(k[5])}, v, body, op);
}

/* ---- the template: conv2d_NCHWc.x86's space with an even tile_ic ---- */

#define BASE topi_x86_conv2d_NCHWc_template

static int bf16_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  if (BASE.define_space(t, cs, wl) ||
      space_define_knob(cs, "bf16_dot", 2, (OptVal[]){opt_str("vdpbf16ps"), opt_str("fma")}))
    return -1;
  return space_define_knob(cs, "occ_inner", 2, (OptVal[]){opt_bool(false), opt_bool(true)});
}

/* The fallback's "occ_inner" (the schedule's parallel loop steps the
 * output-channel chunks inside the rows: conv2d.c): true for a 1x1 layer
 * whose register blocks span part of its output channels, that reads at
 * least as many input values as it writes outputs (a channel-reducing
 * layer), whose input (the float32 input and the bfloat16 pairs rounded
 * from it) outgrows the L2 and whose bfloat16 weights fit in a quarter of
 * it, so every row block rereads them from L2.  With the chunks
 * outermost each block of chunks streams the whole input again from L3,
 * and at two threads each thread streams all of it.  bench_conv2d --bf16
 * --epilogue, ResNet-50's layers, fallback configs, wall-clock GFLOP/s of
 * the vdpbf16ps form at 2 threads, without / with, three alternations
 * each in two runs (load 4.3-5.5): 1x1 256->128 @56 344-394 / 638-670,
 * 512->128 @28 526-605 / 674-819, 512->256 @28 609-747 / 756-839, 64->64
 * @56 407 / 523, 256->64 @56 318-336 / 342-557 and 260-621 / 461-542
 * (mixed); at 1 thread (CPU time) level, 0.94-1.10x.  64->256 @56 (more
 * outputs than inputs) measured level for vdpbf16ps and 0.8x for float32,
 * so it keeps the chunks outermost. */
static bool bf16_occ_inner(const Target *t, const ConfigEntity *cfg, const Conv2DWorkload *c) {
  return x86_conv_occ_inner_pays(t, cfg, c, topi_x86_conv_bf16_dot_is_fma(cfg) == 1 ? 4 : 4 + 2, 2);
}

int topi_x86_conv_bf16_from_float32(const Target *t, ConfigEntity *cfg, const Workload *wl, bool keep_occ_inner) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  config_set_other(cfg, "bf16_dot", opt_str(topi_x86_bf16_dot_fallback(t)));
  if (!keep_occ_inner || !config_get(cfg, "occ_inner"))
    config_set_other(cfg, "occ_inner", opt_bool(bf16_occ_inner(t, cfg, &c)));
  if (config_get(cfg, "ic_outer")) /* float32's alone (x86/conv2d_stream.c): the bfloat16 nest is TVM's */
    config_set_other(cfg, "ic_outer", opt_bool(false));
  return 0;
}

/* The "bf16_dot" knob, as dense_pack_bf16.x86's: 1 "fma", 0 "vdpbf16ps". */
int topi_x86_conv_bf16_dot_is_fma(const ConfigEntity *cfg) {
  const KnobEntity *k = config_get(cfg, "bf16_dot");
  if (k && k->kind == KNOB_OTHER && k->val.kind == OPT_STR && k->val.s) {
    if (!strcmp(k->val.s, "fma")) return 1;
    if (!strcmp(k->val.s, "vdpbf16ps")) return 0;
  }
  return kiln_set_error("conv2d_NCHWc_bf16.x86: config knob 'bf16_dot' must be \"vdpbf16ps\" or \"fma\"");
}

static int bf16_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  if (BASE.check(t, cfg, wl)) return -1;
  if (topi_x86_conv_bf16_dot_is_fma(cfg) < 0) return kiln_error_context("%s", wl->name);
  return x86_conv_ic_group_check(cfg, wl, 2, "bfloat16");
}

/* conv2d_NCHWc.x86's fallback with the largest even input block that
 * divides the channels and is at most the output block (the layer is
 * refused - stays float32 - when the input channels are odd), and
 * bf16_dot and occ_inner as topi_x86_conv_bf16_from_float32 sets them. */
static int bf16_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  if (BASE.fallback(t, cfg, wl) || x86_conv_ic_group_fallback(cfg, wl, 2, "bfloat16")) return -1;
  return topi_x86_conv_bf16_from_float32(t, cfg, wl, false);
}

static Tensor *bf16_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes data and kernel, got %d inputs", wl->name, nin), NULL;
  int fma = topi_x86_conv_bf16_dot_is_fma(cfg);
  if (fma < 0) return NULL;
  return topi_x86_conv2d_NCHWc_bf16(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr}, (int[]){c.dh, c.dw},
                                    fma);
}

/* data float32 NCHW[ic_bn]c, kernel uint32 [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/2, oc_bn] */
static int bf16_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg, "tile_oc");
  if (ic_bn < 2 || ic_bn % 2 || oc_bn < 1) return kiln_set_error("%s: tile_ic must be even", wl->name);
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ic_bn, c.IH, c.IW, ic_bn}, DT_F32);
  (*in)[1] = te_placeholder_c("kernel_bf16", 6, (int64_t[]){c.OC / oc_bn, c.IC / ic_bn, c.KH, c.KW, ic_bn / 2, oc_bn}, DT_U32);
  return 0;
}

const Template topi_x86_conv2d_NCHWc_bf16_template = {
    .name = "conv2d_NCHWc_bf16.x86", .anchor_tag = "conv2d_NCHWc_bf16", .key = "cpu", .define_space = bf16_space,
    .fallback = bf16_fallback, .check = bf16_check, .placeholders = bf16_placeholders, .compute = bf16_compute,
    .schedule = topi_x86_schedule_conv2d_NCHWc,
};
