/*
 * x86/group_conv2d.c - group_conv2d_NCHWc.x86: grouped convolution (groups
 * > 1, not depthwise: ResNeXt's, RegNet's, ShuffleNet v1's) in the NCHW[x]c
 * layout, tunable with TVM's knobs for group_conv2d_nchw.x86 (tile_ic,
 * tile_oc, tile_ow, unroll_kw), conv2d_NCHWc.x86's prefetch_w and its own
 * forms' knobs (group_pad, group_pair, group_pack, pack_blend).
 *
 * Per-group channel blocking: every channel block lies inside one group.
 * The input block ic_bn divides CPG = IC / groups and the output block
 * oc_bn divides KPG = OC / groups, so the data keeps the plain NCHW[ic_bn]c
 * layout (a grouped conv's input and output flow through alter_layout like
 * any other conv's) and the kernel [OC, CPG, KH, KW] packs to
 * OIHW[ic_bn]i[oc_bn]o = [OC/oc_bn, CPG/ic_bn, KH, KW, ic_bn, oc_bn]:
 * output chunk occ, of group g = occ / (KPG/oc_bn), reduces over the
 * CPG/ic_bn input chunks g * CPG/ic_bn + ic.  The compute is conv2d.c's
 * with groups (x86_conv2d_NCHWc_compute), and so is the register block of
 * the schedule (tile_ow columns x oc_bn channels, the epilogue inlined);
 * the schedule's own part is the padded input, made per group and block of
 * rows inside the parallel loop rather than whole at the root, and blocks
 * that span several chunks of one group (see "the schedule" below).
 *
 * Where this departs from TVM: TVM's group_conv2d_nchw.x86 splits tile_ic
 * and tile_oc over all channels and packs NCHW to [N, G, CPG/ic_bn, H, W,
 * ic_bn] inside the kernel; a block that does not divide the per-group
 * channels then builds a wrong shape.  Here the two splits range over one
 * group's channels, so every point of the space is valid, and the data stays
 * NCHW[x]c between layers (no pack/unpack around each grouped conv).  The
 * workload is wl_group_conv2d's (knob.h).  Three forms of its own, each a
 * knob: group_pad (a group of 24 computed as 32 in whole vectors),
 * group_pair (two groups of 24 in three whole vectors) and group_pack
 * (groups of 4 or 8 side by side in one vector, each lane reading its own
 * group's input by a permuted load).
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

#define GCONV_REPACK_TAG "group_conv2d_NCHWc_repack"
#define GCONV_PACKED_TAG "group_conv2d_NCHWc_packed"
#define GCONV_PAIR_TAG "group_conv2d_NCHWc_pair"

/* The input in the conv's own block.  A grouped conv whose input block
 * ic_bn (the kernel's) is smaller than the block db of the tensor it reads
 * and divides it reads that tensor in place: channel c ic_bn + l of the
 * conv's chunk c is lane (c % (db / ic_bn)) ic_bn + l of chunk
 * c / (db / ic_bn), contiguous in l.  The tensor may hold more channels
 * than the conv's groups read (alter_layout's padded channels, after the
 * real ones); those are never read.  The schedule inlines this stage into
 * the padded input it copies per slab, so the graph needs no
 * layout_transform in front of the conv (RegNetX's groups of 24 and
 * RegNetY's of 8 read 8-channel blocks of 16-channel tensors).  Returns
 * data itself where the blocks and channels agree, or where the conv's
 * compute will refuse them with its reason. */
static Tensor *gconv_repack(Tensor *data, Tensor *kernel, int64_t groups) {
  if (!data || !kernel || data->ndim != 5 || kernel->ndim != 6) return data;
  int64_t db = te_dim(data, 4), ib = te_dim(kernel, 4), C = groups * te_dim(kernel, 1) * ib;
  /* agreeing blocks, or shapes the conv's compute refuses with its reason */
  if (ib < 1 || db % ib || C > te_dim(data, 1) * db || (db == ib && C == te_dim(data, 1) * db)) return data;
  int64_t r = db / ib;
  Expr **v = te_axis_vars(5, (const char *[]){"n", "c", "h", "w", "cb"});
  Expr *lane = ir_add(ir_mul(ir_floormod(v[1], ir_i32(r)), ir_i32(ib)), v[4]);
  Expr *body = te_read5(data, v[0], ir_floordiv(v[1], ir_i32(r)), v[2], v[3], lane);
  if (!body) return NULL;
  return te_compute("data_repack", 5,
                    (Expr *[]){data->shape[0], ir_i32(C / ib), data->shape[2], data->shape[3], ir_i32(ib)}, v, body,
                    GCONV_REPACK_TAG);
}

Tensor *topi_x86_group_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                    const int dilation[2], int64_t groups, DType out_dtype) {
  return x86_conv2d_NCHWc_compute("group_conv2d_NCHWc", gconv_repack(data, kernel, groups), kernel, strides, padding,
                                  dilation, groups, out_dtype);
}

/* The padded-group form: kernel [G KPGp / L, CPG / ic_bn, KH, KW, ic_bn,
 * L], every group's KPG output channels padded to KPGp with zero weights;
 * the result is the out_channels = G KPG real channels in blocks of oc_bn
 * (oc_bn divides KPG and L, so a block lies in one L-channel chunk).  Real
 * block c of group g = c / (KPG / oc_bn), j = c % (KPG / oc_bn) is padded
 * channel g KPGp + j oc_bn: chunk g KPGp / L + j oc_bn / L, lane
 * (j oc_bn) % L. */
Tensor *topi_x86_group_conv2d_NCHWc_padded(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                           const int dilation[2], int64_t groups, int64_t out_channels, int64_t oc_bn,
                                           DType out_dtype) {
  Tensor *convp = x86_conv2d_NCHWc_compute("group_conv2d_NCHWc", gconv_repack(data, kernel, groups), kernel, strides,
                                           padding, dilation, groups, out_dtype);
  if (!convp) return NULL;
  int64_t L = te_dim(kernel, 5), kpgp = te_dim(convp, 1) * L / groups, kpg = groups > 0 ? out_channels / groups : 0;
  if (groups < 1 || out_channels % groups || kpg > kpgp || oc_bn < 1 || kpg % oc_bn || L % oc_bn || kpgp % L)
    return kiln_set_error("group_conv2d_NCHWc (padded groups): %lld real output channels in %lld groups, blocks of "
                          "%lld, cannot be cropped from %lld padded channels a group in chunks of %lld (the block must "
                          "divide the real channels of a group and the chunk)",
                          (long long)out_channels, (long long)groups, (long long)oc_bn, (long long)kpgp, (long long)L),
           NULL;
  Expr **v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *g = ir_floordiv(v[1], ir_i32(kpg / oc_bn)), *j = ir_floormod(v[1], ir_i32(kpg / oc_bn));
  Expr *jo = ir_mul(j, ir_i32(oc_bn));
  Expr *chunk = ir_add(ir_mul(g, ir_i32(kpgp / L)), ir_floordiv(jo, ir_i32(L)));
  Expr *lane = ir_add(ir_floormod(jo, ir_i32(L)), v[4]);
  Expr *body = te_read5(convp, v[0], chunk, v[2], v[3], lane);
  if (!body) return NULL;
  return te_compute("group_conv2d_NCHWc_crop", 5,
                    (Expr *[]){convp->shape[0], ir_i32(out_channels / oc_bn), convp->shape[2], convp->shape[3],
                               ir_i32(oc_bn)},
                    v, body, "group_conv2d_NCHWc_crop");
}

/* The lane-packed form (knob group_pack): where a group has fewer output
 * channels than a vector has lanes (ResNeXt's 4 and 8, RegNetY's 8), an
 * output block of L = kernel's last dimension lanes holds L / KPG groups
 * side by side, so every FMA is full width.  Lane l of output chunk occ is
 * channel o = occ L + l of group o / KPG, and reads that group's input
 * channel c as (o / KPG) CPG + c: with the data in blocks of
 * db = L CPG / KPG, chunk occ at lane (l / KPG) CPG + c.  The vectorized
 * load is then one masked vector load and a lane shuffle (the C
 * generator's permuted load: lanes 0-3 read channel c of group 0, lanes
 * 4-7 channel c of group 1, ...) instead of KPG-lane FMAs.  Blocks that mix
 * groups across chunks (a KPG that does not divide L, or other data
 * blocks) compute the channel index in general and gather.  With blend
 * (knob pack_blend) and two groups a vector (RegNetY's 8 of 16 lanes), the
 * input is instead two broadcasts, one a group, and a blend.  The kernel is
 * OIHW[ic_bn]i[L]o of [OC, CPG, KH, KW]: [OC / L, CPG / ic_bn, KH, KW,
 * ic_bn, L]. */
Tensor *topi_x86_group_conv2d_NCHWc_packed(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                           const int dilation[2], int64_t groups, bool blend, DType out_dtype) {
  const char *op = "group_conv2d_NCHWc (packed groups)";
  if (!data || !kernel) return NULL;
  int64_t d[5], k[6];
  if (data->ndim != 5 || kernel->ndim != 6 || !te_shape_const(data, d) || !te_shape_const(kernel, k))
    return kiln_set_error("%s: data must be 5-D NCHW[x]c and kernel 6-D OIHW[x]i[y]o, with constant shapes", op), NULL;
  int64_t IC = d[1] * d[4], OC = k[0] * k[5], cpg = k[1] * k[4], L = k[5];
  if (groups < 2 || IC < groups * cpg || OC % groups) /* the data may hold padded channels after the real ones */
    return kiln_set_error("%s: %lld groups of %lld input channels (kernel) are more than the data's %lld channels, "
                          "or do not divide the %lld output channels",
                          op, (long long)groups, (long long)cpg, (long long)IC, (long long)OC),
           NULL;
  int64_t kpg = OC / groups;
  int sh = strides[0], sw = strides[1], dh = dilation[0], dw = dilation[1];
  int64_t KH = k[2], KW = k[3], OH, OW;
  if (x86_conv_out_size(op, d[2], d[3], KH, KW, strides, padding, dilation, &OH, &OW)) return NULL;
  Tensor *pad = x86_pad_nchwc(data, padding[0], padding[1], padding[2], padding[3]);
  if (!pad) return NULL;
  IterVar *ic = te_reduce_axis_c(k[1], "ic"), *kh = te_reduce_axis_c(KH, "kh"), *kw = te_reduce_axis_c(KW, "kw"),
          *icb = te_reduce_axis_c(k[4], "icb");
  Expr **v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *ih = ir_add(ir_mul(v[2], ir_i32(sh)), ir_mul(kh->var, ir_i32(dh)));
  Expr *iw = ir_add(ir_mul(v[3], ir_i32(sw)), ir_mul(kw->var, ir_i32(dw)));
  Expr *c = ir_add(ir_mul(ic->var, ir_i32(k[4])), icb->var); /* the channel within the group */
  Expr *chunk, *lane;
  if (L % kpg == 0 && d[4] == L / kpg * cpg) { /* the groups of chunk occ read data chunk occ */
    chunk = v[1];
    lane = ir_add(ir_mul(ir_floordiv(v[4], ir_i32(kpg)), ir_i32(cpg)), c);
  } else {
    Expr *ch = ir_add(ir_mul(ir_floordiv(ir_add(ir_mul(v[1], ir_i32(L)), v[4]), ir_i32(kpg)), ir_i32(cpg)), c);
    chunk = ir_floordiv(ch, ir_i32(d[4]));
    lane = ir_floormod(ch, ir_i32(d[4]));
  }
  Expr *a;
  if (blend && L == 2 * kpg && d[4] == 2 * cpg) { /* pack_blend: lanes 0..KPG-1 group 0's channel c, the rest group 1's */
    Expr *x0 = te_read5(pad, v[0], v[1], ih, iw, c), *x1 = te_read5(pad, v[0], v[1], ih, iw, ir_add(c, ir_i32(cpg)));
    Expr *va = ir_var("x_first", data->dtype), *vb = ir_var("x_second", data->dtype);
    /* both reads bound first: a select over two loads stays scalar */
    a = x0 && x1 ? ir_let(va, x0, ir_let(vb, x1, ir_select(ir_lt(v[4], ir_i32(kpg)), va, vb))) : NULL;
  } else {
    a = te_read5(pad, v[0], chunk, ih, iw, lane);
  }
  Expr *b = te_read(kernel, 6, (Expr *[]){v[1], ic->var, kh->var, kw->var, icb->var, v[4]});
  if (!a || !b) return NULL;
  if (!dt_eq(a->dtype, out_dtype)) a = ir_cast(out_dtype, a);
  if (!dt_eq(b->dtype, out_dtype)) b = ir_cast(out_dtype, b);
  Expr *body = ir_sum(ir_mul(a, b), 4, (IterVar *[]){ic, kh, kw, icb});
  return te_compute("group_conv2d_NCHWc", 5, (Expr *[]){ir_i32(d[0]), ir_i32(k[0]), ir_i32(OH), ir_i32(OW), ir_i32(L)},
                    v, body, GCONV_PACKED_TAG);
}

/* The paired-group form (knob group_pair): a group of KPG output channels
 * that is more than a vector of L lanes but not a whole number of them,
 * where two groups are (RegNetX's 24 with 16 lanes: 48 = 3 vectors),
 * computes the groups two at a time in Q = 2 KPG / L whole chunks: pair p
 * holds groups 2p and 2p + 1, channel q L + l of the pair belongs to group
 * 2p + (q L + l) / KPG.  Every chunk but one reads one group's input (a
 * broadcast); the chunk that straddles the two reads lanes of each (a
 * permuted load of two elements).  Q FMAs a pair where group_pad issues
 * 2 ceil(KPG / L): 3 against 4 for groups of 24.  The input is copied per
 * slab into [N, P, CPG / ib, Hp, Wp, 2, ib] (the pair's two groups' ib
 * channels side by side, zero padding around; an odd last pair's second
 * group reads the last real group, under zero weights), so the two lanes'
 * elements lie ib apart.  The kernel is [Q P, CPG / ib, KH, KW, ib, L] of
 * the weight's rows padded with a zero group to 2 P KPG; the result is
 * the out_channels real channels in blocks of oc_bn (dividing KPG and L),
 * cropped from the pairs' chunks as group_pad's are.  (Kept whole, as a
 * padded tensor of 2 P KPG channels in blocks of L, the next 1x1 conv
 * read 192 channels of which 168 real where it had read 168 in blocks of
 * 8: RegNetX's 168 -> 176 @28 went from 797 to 927 us.) */
Tensor *topi_x86_group_conv2d_NCHWc_pair(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                         const int dilation[2], int64_t groups, int64_t out_channels, int64_t oc_bn,
                                         DType out_dtype) {
  const char *op = "group_conv2d_NCHWc (paired groups)";
  Tensor *rd = gconv_repack(data, kernel, groups);
  if (!rd || !kernel) return NULL;
  int64_t d[5], k[6];
  if (rd->ndim != 5 || kernel->ndim != 6 || !te_shape_const(rd, d) || !te_shape_const(kernel, k))
    return kiln_set_error("%s: data must be 5-D NCHW[x]c and kernel 6-D OIHW[x]i[y]o, with constant shapes", op), NULL;
  int64_t L = k[5], ib = k[4], cb = k[1], cpg = cb * ib, P = (groups + 1) / 2;
  int64_t kpg = groups > 0 ? out_channels / groups : 0, Q = groups > 0 ? 2 * kpg / L : 0;
  if (groups < 2 || out_channels % groups || kpg <= L || (2 * kpg) % L || k[0] != Q * P ||
      d[1] * d[4] < groups * cpg || oc_bn < 1 || kpg % oc_bn || L % oc_bn)
    return kiln_set_error("%s: %lld output channels in %lld groups, kernel %lld chunks of %lld, data %lld channels: "
                          "a group must be more than a chunk, two groups whole chunks, the kernel one pair's chunks "
                          "a pair, the data every group's input and the output block divide a group and a chunk",
                          op, (long long)out_channels, (long long)groups, (long long)k[0], (long long)L,
                          (long long)(d[1] * d[4])),
           NULL;
  int sh = strides[0], sw = strides[1], dh = dilation[0], dw = dilation[1];
  int pt = padding[0], pl = padding[1], pb = padding[2], pr = padding[3];
  int64_t KH = k[2], KW = k[3], Hp = d[2] + pt + pb, Wp = d[3] + pl + pr, OH, OW;
  if (x86_conv_out_size(op, d[2], d[3], KH, KW, strides, padding, dilation, &OH, &OW)) return NULL;
  /* the slab: [n, p, c, h, w, s, ci] = input channel c ib + ci of group
   * min(2p + s, G - 1), zero outside the input */
  Expr **u = te_axis_vars(7, (const char *[]){"n", "p", "c", "h", "w", "s", "ci"});
  Expr *g = ir_min(ir_add(ir_mul(u[1], ir_i32(2)), u[5]), ir_i32(groups - 1));
  Expr *ch = ir_add(ir_mul(g, ir_i32(cb)), u[2]), *h = ir_sub(u[3], ir_i32(pt)), *w = ir_sub(u[4], ir_i32(pl));
  Expr *a = d[4] == ib ? te_read5(rd, u[0], ch, h, w, u[6])
                       : te_read5(rd, u[0], ir_floordiv(ir_add(ir_mul(ch, ir_i32(ib)), u[6]), ir_i32(d[4])), h, w,
                                  ir_floormod(ir_add(ir_mul(ch, ir_i32(ib)), u[6]), ir_i32(d[4])));
  if (!a) return NULL;
  if (pt || pl || pb || pr) {
    Expr *in = ir_and(ir_and(ir_ge(u[3], ir_i32(pt)), ir_lt(u[3], ir_i32(d[2] + pt))),
                      ir_and(ir_ge(u[4], ir_i32(pl)), ir_lt(u[4], ir_i32(d[3] + pl))));
    a = ir_select(in, a, ir_const(0, rd->dtype));
  }
  Tensor *slab = te_compute("data_pair", 7,
                            (Expr *[]){ir_i32(d[0]), ir_i32(P), ir_i32(cb), ir_i32(Hp), ir_i32(Wp), ir_i32(2), ir_i32(ib)},
                            u, a, "injective");
  IterVar *ic = te_reduce_axis_c(cb, "ic"), *kh = te_reduce_axis_c(KH, "kh"), *kw = te_reduce_axis_c(KW, "kw"),
          *icb = te_reduce_axis_c(ib, "icb");
  Expr **v = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *ih = ir_add(ir_mul(v[2], ir_i32(sh)), ir_mul(kh->var, ir_i32(dh)));
  Expr *iw = ir_add(ir_mul(v[3], ir_i32(sw)), ir_mul(kw->var, ir_i32(dw)));
  /* lane l of the pair's chunk q is the first group's where q L + l < KPG */
  Expr *first = ir_lt(ir_add(ir_mul(ir_floormod(v[1], ir_i32(Q)), ir_i32(L)), v[4]), ir_i32(kpg));
  Expr *pp = ir_floordiv(v[1], ir_i32(Q));
  Expr *x0 = te_read(slab, 7, (Expr *[]){v[0], pp, ic->var, ih, iw, ir_i32(0), icb->var});
  Expr *x1 = te_read(slab, 7, (Expr *[]){v[0], pp, ic->var, ih, iw, ir_i32(1), icb->var});
  /* both reads bound first (a select over loads would stay scalar: both
   * sides are read, and here both are always inside the slab) */
  Expr *va = ir_var("x_first", rd->dtype), *vb = ir_var("x_second", rd->dtype);
  Expr *x = x0 && x1 ? ir_let(va, x0, ir_let(vb, x1, ir_select(first, va, vb))) : NULL;
  Expr *y = te_read(kernel, 6, (Expr *[]){v[1], ic->var, kh->var, kw->var, icb->var, v[4]});
  if (!x || !y) return NULL;
  if (!dt_eq(x->dtype, out_dtype)) x = ir_cast(out_dtype, x);
  if (!dt_eq(y->dtype, out_dtype)) y = ir_cast(out_dtype, y);
  Tensor *conv = te_compute("group_conv2d_NCHWc", 5, (Expr *[]){ir_i32(d[0]), ir_i32(Q * P), ir_i32(OH), ir_i32(OW), ir_i32(L)},
                            v, ir_sum(ir_mul(x, y), 4, (IterVar *[]){ic, kh, kw, icb}), GCONV_PAIR_TAG);
  if (!conv) return NULL;
  /* real block c is channel c oc_bn of the pairs' chunks */
  Expr **o = te_axis_vars(5, (const char *[]){"n", "oc_chunk", "oh", "ow", "oc_block"});
  Expr *chunk = ir_floordiv(o[1], ir_i32(L / oc_bn)), *lane = ir_add(ir_mul(ir_floormod(o[1], ir_i32(L / oc_bn)), ir_i32(oc_bn)), o[4]);
  return te_compute("group_conv2d_NCHWc_crop", 5,
                    (Expr *[]){ir_i32(d[0]), ir_i32(out_channels / oc_bn), ir_i32(OH), ir_i32(OW), ir_i32(oc_bn)}, o,
                    te_read5(conv, o[0], chunk, o[2], o[3], lane), "group_conv2d_NCHWc_crop");
}

/* The workload, which must be a grouped one. */
static int parse(const Workload *wl, Conv2DWorkload *c) {
  if (wl_conv2d_parse(wl, c)) return -1;
  if (c->depthwise || c->groups < 2)
    return kiln_set_error("group_conv2d_NCHWc.x86: workload '%s' has groups = %lld; this task is for grouped "
                          "convolutions (plain ones are conv2d_NCHWc.x86, depthwise ones depthwise_conv2d_NCHWc.x86)",
                          wl->name, (long long)c->groups);
  return 0;
}

/* The padded-group form (knob group_pad): a group of KPG output
 * channels that is more than one vector but not a whole number of them
 * (RegNetX's 24, with 16 lanes) computes KPGp = KPG rounded up to whole
 * vectors, the extra channels with zero weights, in full-width chunks,
 * and keeps only the real ones in blocks of tile_oc.  24 -> 32 does 4/3
 * the FLOPs at twice the lanes per FMA: bench_conv2d --group-pad ran
 * RegNetX's stride-1 grouped layers 1.14-1.36x faster.  A group of one
 * vector or less (8 of 16, ResNeXt's 4) would double the FLOPs or more
 * and ran level or slower, so it gets no such knob.  The padded size, or 0
 * where the form does not apply. */
static int64_t gconv_pad_to(const Target *t, const Conv2DWorkload *c) {
  int64_t L = t->vector_lanes, kpg = c->OC / c->groups;
  if (L < 8 || kpg <= L || kpg % L == 0) return 0;
  return (kpg + L - 1) / L * L;
}

/* The padded channels a group is computed with under cfg, or 0: group_pad
 * takes effect where tile_oc divides the vector width (a kept block then
 * lies in one padded vector); at the space's other points it changes
 * nothing, so every point stays valid. */
int64_t topi_x86_group_conv_padded(const Target *t, int64_t OC, int64_t groups, const ConfigEntity *cfg) {
  if (!cfg || groups < 2 || !cfg_other_int(cfg, "group_pad", 0)) return 0;
  Conv2DWorkload c = {.OC = OC, .groups = groups};
  int64_t ocb = cfg_split_inner(cfg, "tile_oc");
  return ocb > 0 && t->vector_lanes % ocb == 0 ? gconv_pad_to(t, &c) : 0;
}

/* The paired-group form (knob group_pair, topi_x86_group_conv2d_NCHWc_pair):
 * a group of more than one vector but not a whole number of them, two
 * groups whole vectors (RegNetX's 24: two groups in three 16-lane chunks
 * instead of group_pad's four).  The vector width, or 0 where the form
 * does not apply. */
static int64_t gconv_pair_lanes(const Target *t, const Conv2DWorkload *c) {
  int64_t L = t->vector_lanes, kpg = c->groups > 0 ? c->OC / c->groups : 0;
  if (L < 8 || c->groups < 2 || kpg <= L || kpg % L == 0 || (2 * kpg) % L) return 0;
  return L;
}

/* The paired form issues fewer FMAs than group_pad: Q chunks a pair of
 * groups against 2 ceil(KPG / L), over ceil(G / 2) pairs (an odd count's
 * last pair half zero).  RegNetX's 7, 17 and 38 groups of 24: 12 / 14,
 * 27 / 34 and 57 / 76 chunks; its 3 groups: 6 / 6, which ran 0.83-0.87x
 * (bench_conv2d --group-pair, the slab copy of both groups' input is
 * slower). */
static bool gconv_pair_pays(const Conv2DWorkload *c, int64_t L) {
  int64_t kpg = c->OC / c->groups;
  return (c->groups + 1) / 2 * (2 * kpg / L) < c->groups * ((kpg + L - 1) / L);
}

/* group_pair takes effect where tile_oc (the kept blocks) divides the
 * vector width, as group_pad. */
int64_t topi_x86_group_conv_paired(const Target *t, int64_t OC, int64_t groups, const ConfigEntity *cfg) {
  if (!cfg || !cfg_other_int(cfg, "group_pair", 0)) return 0;
  Conv2DWorkload c = {.OC = OC, .groups = groups};
  int64_t ocb = cfg_split_inner(cfg, "tile_oc");
  return ocb > 0 && t->vector_lanes % ocb == 0 ? gconv_pair_lanes(t, &c) : 0;
}

/* The lane-packed form (knob group_pack, topi_x86_group_conv2d_NCHWc_packed):
 * a group of fewer output channels than the vector width (ResNeXt's 4
 * and 8, RegNetY's 8), whole vectors of output channels, the groups of
 * one vector reading a whole data block of L CPG / KPG <= L channels.  The
 * vector width, or 0 where the form does not apply. */
static int64_t gconv_pack_lanes(const Target *t, int64_t IC, int64_t OC, int64_t groups) {
  int64_t L = t->vector_lanes, kpg = groups > 0 ? OC / groups : 0, cpg = groups > 0 ? IC / groups : 0;
  if (L < 8 || groups < 2 || kpg < 1 || kpg >= L || cpg > kpg || OC % L || (L * cpg) % kpg || IC % (L * cpg / kpg))
    return 0;
  return L;
}

int64_t topi_x86_group_conv_packed(const Target *t, int64_t IC, int64_t OC, int64_t groups, const ConfigEntity *cfg) {
  if (!cfg || !cfg_other_int(cfg, "group_pack", 0)) return 0;
  return gconv_pack_lanes(t, IC, OC, groups);
}

/* The packed form's two-group read (knob pack_blend): where a vector holds
 * two groups, its input for channel c is group 0's element in the low
 * half and group 1's in the high half.  The permuted load makes it with
 * a masked load and a lane shuffle (VPERMPS) per FMA; the blend with two
 * broadcasts and a VBLENDMPS, which do not need the shuffle unit.
 * bench_conv2d --grouped --cold, 1 thread, 3 alternations, load 6, GFLOP/s
 * permuted / blend: RegNetY's stride-1 208 @14 183-202 / 202-213 and
 * 112 @28 190-200 / 215-221; its stride-2 48/2 @112 138 / 139-140,
 * 208/2 @28 123-138 / 101-132 and 112/2 @56 128-133 / 124-132, so the
 * fallback takes it at stride 1 only. */
static bool gconv_pack_blend_applies(const Target *t, int64_t IC, int64_t OC, int64_t groups) {
  int64_t L = gconv_pack_lanes(t, IC, OC, groups);
  return L && L == 2 * (OC / groups);
}

bool topi_x86_group_conv_pack_blend(const Target *t, int64_t IC, int64_t OC, int64_t groups, const ConfigEntity *cfg) {
  return cfg && cfg_other_int(cfg, "pack_blend", 0) && topi_x86_group_conv_packed(t, IC, OC, groups, cfg) &&
         gconv_pack_blend_applies(t, IC, OC, groups);
}

/* The schedule's slab path (a window wider than 1x1, no batch blocking)
 * inlines the repack into the slab copy; elsewhere the repack would be a
 * copy of its own, no better than the layout_transform. */
bool topi_x86_group_conv_reads_block(int64_t KH, int64_t KW, int64_t ic_bn, int64_t block, const ConfigEntity *cfg) {
  return ic_bn > 1 && block > ic_bn && block % ic_bn == 0 && KH * KW > 1 && cfg_other_int(cfg, "tile_n", 1) == 1;
}

/* The space has "prefetch_w" (conv2d_NCHWc.x86's knob: at each
 * step of the input-channel block, touch the weights the same step of the
 * register block d blocks ahead will read): the weights are large (at
 * least 256 KiB) and few outputs share each (at most 256 a channel: the
 * 14x14 and 7x7 layers).  In a model such a layer's weights come from
 * memory (a model's weights do not stay in the L3 from one run to the
 * next), and a block reads them during its first row faster than memory
 * supplies them; the next block's (the group's next chunks, or the next
 * group's) follow the current one's in memory.  bench_conv2d --grouped,
 * RegNetX's 408 @14, one thread: 193 GFLOP/s with the weights in cache,
 * 177 with them flushed (--cold).  The rule: x86_conv_prefetch_pays, whose
 * smaller weights (at least 32 KiB) of a stride-1 layer whose outputs are
 * as few (at most 256 a channel) were measured here first: RegNetY's packed groups of 8 at
 * 208 @14 (60 KiB) and 448 @7 (129 KiB).  In RegNetY-400MF (per-node
 * minima of alternating profiles, load 3-4) its five 448 @7 layers went
 * 110 -> 89 us at 1 thread and 73 -> 64 and 65 -> 53 at 2 threads, its
 * five 208 @14 143 -> 132 (1 thread) and 83 -> 79 (2 threads).  Not at
 * stride 2: its 208/2 @28 went 45 -> 55 us (1 thread) and 31 -> 39 (2
 * threads), 448/2 @14 level.  The schedule: x86_conv_prefetch_w. */
static int gconv_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  SplitOpts ow = {.filter = x86_conv_ow_filter};
  if (space_define_split(cs, "tile_ic", c.IC / c.groups, NULL) ||
      space_define_split(cs, "tile_oc", c.OC / c.groups, NULL) || space_define_split(cs, "tile_ow", c.OW, &ow))
    return -1;
  if (space_define_knob(cs, "unroll_kw", 2, (OptVal[]){opt_bool(true), opt_bool(false)})) return -1;
  if (x86_conv_prefetch_pays(&c) &&
      space_define_knob(cs, "prefetch_w", 3, (OptVal[]){opt_int(0), opt_int(1), opt_int(2)}))
    return -1;
  if (gconv_pack_lanes(t, c.IC, c.OC, c.groups) &&
      space_define_knob(cs, "group_pack", 2, (OptVal[]){opt_bool(false), opt_bool(true)}))
    return -1;
  if (gconv_pack_blend_applies(t, c.IC, c.OC, c.groups) &&
      space_define_knob(cs, "pack_blend", 2, (OptVal[]){opt_bool(false), opt_bool(true)}))
    return -1;
  if (gconv_pair_lanes(t, &c) &&
      space_define_knob(cs, "group_pair", 2, (OptVal[]){opt_bool(false), opt_bool(true)}))
    return -1;
  if (gconv_pad_to(t, &c) == 0) return 0;
  return space_define_knob(cs, "group_pad", 2, (OptVal[]){opt_bool(false), opt_bool(true)});
}

/* conv2d_NCHWc's heuristic inside one group: the widest power-of-two
 * output block up to the vector width, an input block no wider, as many
 * output columns as the registers hold. */
static int gconv_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  int64_t oc_bn = x86_channel_block(c.OC / c.groups, t->vector_lanes);
  int64_t ic_bn = x86_largest_divisor(c.IC / c.groups, oc_bn);
  /* padded groups: a block of the group's padded chunks, so fewer columns */
  int64_t kpgp = gconv_pad_to(t, &c), budget = x86_reg_budget(t);
  if (kpgp) budget /= kpgp / t->vector_lanes;
  config_set_split(cfg, "tile_ic", 2, (int64_t[]){-1, ic_bn});
  config_set_split(cfg, "tile_oc", 2, (int64_t[]){-1, oc_bn});
  config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, x86_conv_block_cols(c.OW, budget)});
  config_set_other(cfg, "unroll_kw", opt_bool(false));
  /* one block ahead: a block is a group's chunks (ResNeXt's widest, 32
   * channels of 32 x 9 inputs, 36 KiB), so this block's weights and the
   * next one's fit the L2 together */
  if (x86_conv_prefetch_pays(&c)) config_set_other(cfg, "prefetch_w", opt_int(1));
  if (kpgp) config_set_other(cfg, "group_pad", opt_bool(c.KH * c.KW > 1));
  /* paired groups: a block of a pair's 2 KPG / L chunks */
  int64_t pl = gconv_pair_lanes(t, &c);
  bool pair = pl && c.KH * c.KW > 1 && gconv_pair_pays(&c, pl);
  if (pl) config_set_other(cfg, "group_pair", opt_bool(pair));
  if (pair)
    config_set_split(cfg, "tile_ow", 2,
                     (int64_t[]){-1, x86_conv_block_cols(c.OW, x86_reg_budget(t) / (2 * c.OC / c.groups / pl))});
  /* packed groups: a permuted input vector per FMA takes registers, so
   * half the columns, and the window's columns unrolled (ResNeXt's 8-channel
   * groups at 28: 28 columns, kw rolled ran at 45 % of peak, 14 unrolled at
   * 74-81 %) */
  bool pack = gconv_pack_lanes(t, c.IC, c.OC, c.groups) && c.KH * c.KW > 1;
  if (gconv_pack_lanes(t, c.IC, c.OC, c.groups)) config_set_other(cfg, "group_pack", opt_bool(pack));
  if (pack) {
    config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, x86_conv_block_cols(c.OW, budget / 2)});
    config_set_other(cfg, "unroll_kw", opt_bool(true));
  }
  if (gconv_pack_blend_applies(t, c.IC, c.OC, c.groups)) /* two groups a vector: blended at stride 1 */
    config_set_other(cfg, "pack_blend", opt_bool(pack && c.sh == 1 && c.sw == 1));
  cfg->is_fallback = true;
  return 0;
}

static int gconv_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  if (x86_check_split(cfg, "tile_ic", 2, c.IC / c.groups, "input channels of a group", true) ||
      x86_check_split(cfg, "tile_oc", 2, c.OC / c.groups, "output channels of a group", true) ||
      x86_check_split(cfg, "tile_ow", 2, c.OW, "output columns", false)) /* a tail is guarded */
    return kiln_error_context("%s", wl->name);
  if (!config_get(cfg, "unroll_kw") || config_get(cfg, "unroll_kw")->kind != KNOB_OTHER)
    return kiln_set_error("%s: config has no 'unroll_kw' option", wl->name);
  if (cfg_other_int(cfg, "group_pad", 0) && !gconv_pad_to(t, &c))
    return kiln_set_error("%s: config knob 'group_pad' is set, but the %lld output channels of a group are not "
                          "between one and a whole number of %d-lane vectors (leave it out or false)",
                          wl->name, (long long)(c.OC / c.groups), t->vector_lanes);
  if (cfg_other_int(cfg, "group_pair", 0) && !gconv_pair_lanes(t, &c))
    return kiln_set_error("%s: config knob 'group_pair' is set, but the %lld output channels of a group are not "
                          "between one and a whole number of %d-lane vectors with two groups whole vectors (leave it "
                          "out or false)",
                          wl->name, (long long)(c.OC / c.groups), t->vector_lanes);
  if (cfg_other_int(cfg, "pack_blend", 0) && !gconv_pack_blend_applies(t, c.IC, c.OC, c.groups))
    return kiln_set_error("%s: config knob 'pack_blend' is set, but a vector of the packed form does not hold two "
                          "groups (%lld output channels a group, %d lanes; leave it out or false)",
                          wl->name, (long long)(c.OC / c.groups), t->vector_lanes);
  if (cfg_other_int(cfg, "group_pack", 0) && !gconv_pack_lanes(t, c.IC, c.OC, c.groups))
    return kiln_set_error("%s: config knob 'group_pack' is set, but the %lld output channels of a group are not fewer "
                          "than the %d lanes of a vector with whole vectors of channels (leave it out or false)",
                          wl->name, (long long)(c.OC / c.groups), t->vector_lanes);
  return 0;
}

static Tensor *gconv_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  Conv2DWorkload c;
  if (parse(wl, &c)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes data and kernel, got %d inputs", wl->name, nin), NULL;
  if (topi_x86_group_conv_packed(t, c.IC, c.OC, c.groups, cfg))
    return topi_x86_group_conv2d_NCHWc_packed(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                              (int[]){c.dh, c.dw}, c.groups,
                                              topi_x86_group_conv_pack_blend(t, c.IC, c.OC, c.groups, cfg), c.out_dtype);
  if (topi_x86_group_conv_paired(t, c.OC, c.groups, cfg))
    return topi_x86_group_conv2d_NCHWc_pair(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                            (int[]){c.dh, c.dw}, c.groups, c.OC, cfg_split_inner(cfg, "tile_oc"),
                                            c.out_dtype);
  if (topi_x86_group_conv_padded(t, c.OC, c.groups, cfg))
    return topi_x86_group_conv2d_NCHWc_padded(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                              (int[]){c.dh, c.dw}, c.groups, c.OC, cfg_split_inner(cfg, "tile_oc"),
                                              c.out_dtype);
  return topi_x86_group_conv2d_NCHWc(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                     (int[]){c.dh, c.dw}, c.groups, c.out_dtype);
}

/* data NCHW[ic_bn]c, kernel OIHW[ic_bn]i[oc_bn]o of [OC, IC/groups, KH, KW] */
static int gconv_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg, "tile_oc");
  if (ic_bn < 1 || oc_bn < 1) return kiln_error_context("%s", wl->name);
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  int64_t L = topi_x86_group_conv_packed(t, c.IC, c.OC, c.groups, cfg);
  if (L) { /* data in blocks of L CPG / KPG, kernel OIHW[ic_bn]i[L]o */
    int64_t db = L * c.IC / c.OC;
    (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / db, c.IH, c.IW, db}, c.dtype);
    (*in)[1] = te_placeholder_c("kernel", 6, (int64_t[]){c.OC / L, c.IC / c.groups / ic_bn, c.KH, c.KW, ic_bn, L},
                                c.dtype);
    return 0;
  }
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ic_bn, c.IH, c.IW, ic_bn}, c.dtype);
  if ((L = topi_x86_group_conv_paired(t, c.OC, c.groups, cfg))) { /* two groups in 2 KPG / L chunks */
    (*in)[1] = te_placeholder_c("kernel", 6,
                                (int64_t[]){(c.groups + 1) / 2 * 2 * (c.OC / c.groups) / L, c.IC / c.groups / ic_bn,
                                            c.KH, c.KW, ic_bn, L},
                                c.dtype);
    return 0;
  }
  int64_t kpgp = topi_x86_group_conv_padded(t, c.OC, c.groups, cfg);
  L = t->vector_lanes;
  (*in)[1] = kpgp ? te_placeholder_c("kernel", 6,
                                     (int64_t[]){c.groups * kpgp / L, c.IC / c.groups / ic_bn, c.KH, c.KW, ic_bn, L},
                                     c.dtype)
                  : te_placeholder_c("kernel", 6,
                                     (int64_t[]){c.OC / oc_bn, c.IC / c.groups / ic_bn, c.KH, c.KW, ic_bn, oc_bn},
                                     c.dtype);
  return 0;
}

/* ---- the schedule: the padded input in slabs ----
 *
 * conv2d_NCHWc's schedule pads the whole input into a buffer at the root,
 * then convolves it.  A stride-2 layer reads an input four times its
 * output, so the copy is a large share of its time: RegNetX's 72-channel
 * 3x3/2 layer at 112 ran 1.4-1.7x faster on an input that needed no
 * padding (bench_conv2d --grouped, 1 thread).  Here the padded input is
 * made per slab instead, inside the parallel loop: one group's input
 * channels and the rows that `rows` output rows read, while they are in
 * cache, then every output chunk of that group convolves the slab.  Rows
 * are recopied only where neighbouring slabs overlap ((KH - 1) dh + 1 -
 * sh rows a slab); the output loop is (sample, group, row block) parallel,
 * then the group's chunks, the rows, the column blocks and the register
 * block of conv2d_NCHWc's schedule (reg_n columns x oc_bn channels; two
 * chunks of the same group per broadcast where the group has an even
 * number of them and the block fits half the registers).  1x1 windows and
 * unpadded layers take conv2d_NCHWc's schedule unchanged. */

/* Slab budgets, bytes: the packed groups' slab fits the L1 data cache
 * (48 KiB here), as its permuted loads, a masked load and a shuffle per
 * FMA, are slower from the L2 than a broadcast operand; the others' fits
 * twice that.  bench_conv2d --grouped, 1 thread, 5 alternations, load
 * 6-8, GFLOP/s at 96 KiB / 48 KiB: RegNetY's packed 48/2 @112 (4 output
 * rows, a slab of 66 KiB, against 1 row, 22 KiB) 128-130 / 140-144;
 * ResNeXt's packed 128 @56, 256 @28 and 256/2 @56 and RegNetY's 208
 * level; the padded-group RegNetX 72/2 @112 at 48 KiB (1 row, 33 KiB)
 * 0.95x. */
enum { SLAB_BYTES = 96 << 10, PACKED_SLAB_BYTES = 48 << 10 };

/* Output rows per slab: the most (a divisor of OH) whose slab fits
 * `budget` bytes, keeping at least `par` parallel iterations.  r output
 * rows of a layer with a padded input of IHp rows read at most
 * ceil(r IHp / OH) + KH of them (a window of KH rows, stride about
 * IHp / OH). */
static int64_t slab_rows(int64_t OH, int64_t IHp, int64_t KH, int64_t row_bytes, int64_t outer, int64_t budget,
                         int64_t par) {
  int64_t best = 1;
  for (int64_t r = 2; r <= OH; r++)
    if (OH % r == 0 && ((r * IHp + OH - 1) / OH + KH) * row_bytes <= budget && outer * (OH / r) >= par) best = r;
  return best;
}

/* The output chunks of one group a register block of `cols` columns
 * spans: where the block fills at most half the registers (AVX-512), the
 * most chunks of the group that fit the budget - each broadcast then
 * feeds that many FMAs, and a 7-column block gets 14 or 21 accumulators,
 * enough to cover the FMA latency (RegNetX's 912-channel layer at 7x7, 3
 * chunks a group: one chunk ran 0.75-0.9x as fast as the two chunks of
 * different groups conv2d_NCHWc's schedule pairs) - else one. */
static int64_t gconv_occ_block(const Target *t, int64_t cols, int64_t cpk) {
  int64_t budget = x86_reg_budget(t);
  if (t->vector_lanes < 16 || 2 * cols > budget) return 1;
  int64_t best = 1;
  for (int64_t d = 2; d <= cpk; d++)
    if (cpk % d == 0 && d * cols <= budget) best = d;
  return best;
}

/* The repacked input (gconv_repack) computed inside the padded input that
 * reads it, element by element as that copy is made per slab. */
static int gconv_inline_repack(Schedule *s, Tensor *pad) {
  if (pad->kind != TE_COMPUTE) return 0;
  for (int i = 0; i < pad->ninputs; i++) {
    Tensor *in = pad->inputs[i];
    if (in->kind == TE_COMPUTE && in->tag && !strcmp(in->tag, GCONV_REPACK_TAG)) {
      Stage *st = sch_stage(s, in);
      if (!st || stage_compute_inline(st)) return -1;
    }
  }
  return 0;
}

/* The padded-group and paired-group forms (crop = the
 * group_conv2d_NCHWc_crop stage over conv): the same loop nest, but a
 * register block holds all of a unit's chunks (a group's padded ones, or
 * a pair's: reg_n columns x KPGp or 2 KPG channels), and the output loop
 * inside the column block crops the real blocks from it.  The paired
 * form's slab (pad) is [N, P, CPG / ib, Hp, Wp, 2, ib]; a last odd pair
 * crops fewer chunks (a guarded tail). */
static int gconv_schedule_padded(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *crop, Tensor *conv,
                                 Tensor *pad, Tensor *kernel, int nout, Tensor **outs) {
  bool pair = conv->tag && !strcmp(conv->tag, GCONV_PAIR_TAG);
  int64_t oc_bn = te_dim(crop, 4), L = te_dim(conv, 4), N = te_dim(conv, 0), OH = te_dim(conv, 2);
  int64_t groups = pair ? te_dim(pad, 1) : te_dim(pad, 1) / te_dim(kernel, 1), reg_n = cfg_split_inner(cfg, "tile_ow");
  if (reg_n < 0) return kiln_error_context("group_conv2d_NCHWc.x86");
  if (cfg_split_inner(cfg, "tile_oc") != oc_bn)
    return kiln_set_error("group_conv2d_NCHWc.x86: config block tile_oc %lld does not match the compute's output "
                          "block %lld",
                          (long long)cfg_split_inner(cfg, "tile_oc"), (long long)oc_bn);
  if (groups < 1 || (!pair && te_dim(crop, 1) % groups) || te_dim(conv, 1) % groups)
    return kiln_set_error("group_conv2d_NCHWc.x86 schedule: the padded groups do not divide the chunks");
  /* real output blocks a unit (a group, or a pair: an odd count's last
   * one a guarded tail) */
  int64_t cpk = pair ? te_dim(conv, 1) / groups * L / oc_bn : te_dim(crop, 1) / groups;
  bool unroll_kw = cfg_other_int(cfg, "unroll_kw", 0) != 0;
  int hax = pair ? 3 : 2, lax = pad->ndim - 1; /* the slab's rows and lanes */
  int64_t row_bytes = pair ? te_dim(pad, 2) * te_dim(pad, 4) * te_dim(pad, 5) * te_dim(pad, 6) * 4
                           : te_dim(kernel, 1) * te_dim(pad, 4) * te_dim(pad, 3) * 4;
  int64_t rows = slab_rows(OH, te_dim(pad, hax), te_dim(kernel, 2), row_bytes, N * groups, SLAB_BYTES, 8);
  /* pairs: an odd number of parallel slabs under 32 splits unevenly over
   * two threads (RegNetX's 408 @14: 9 pairs of 14 rows, 5 : 4); half the
   * rows make it even, at the cost of the rows two slabs both copy.  In
   * RegNetX-1.6GF (per-node minima of alternating profiles, load 2-4) its
   * nine 408 @14 layers went 854 -> 822 and 858 -> 825 us at 2 threads,
   * 1448 -> 1501 and 1507 -> 1555 us at 1 thread: taken for two. */
  if (pair && (N * groups * (OH / rows)) % 2 && N * groups * (OH / rows) < 32 && rows % 2 == 0) rows /= 2;

  if (x86_inline_group(s, crop, NULL)) return -1;
  Tensor *main_out = x86_main_output(crop, nout, outs);
  Stage *sconv = sch_stage(s, conv), *scrop = sch_stage(s, crop);
  if (!sconv || !scrop) return -1;
  Tensor *cc = sch_cache_write(s, conv, "local");
  if (!cc) return -1;
  Stage *scc = sch_stage(s, cc), *so = scrop, *sp = pad->kind == TE_COMPUTE ? sch_stage(s, pad) : NULL;
  if (stage_compute_inline(sconv)) return -1; /* the crop reads the block */
  if (main_out && main_out != crop) {
    if (stage_compute_inline(scrop)) return -1;
    so = sch_stage(s, main_out);
  }
  IterVar *n = stage_axis(so, 0), *occ = stage_axis(so, 1), *oh = stage_axis(so, 2), *ow = stage_axis(so, 3),
          *ocb = stage_axis(so, 4);
  IterVar *g, *j, *oho, *ohi, *owo, *owi, *f;
  if (stage_split(so, occ, ir_i32(cpk), &g, &j) || stage_split(so, oh, ir_i32(rows), &oho, &ohi) ||
      stage_split(so, ow, ir_i32(reg_n), &owo, &owi) ||
      stage_reorder(so, 8, (IterVar *[]){n, g, oho, ohi, owo, j, owi, ocb}))
    return -1;
  if (stage_unroll(so, j) || stage_unroll(so, owi) || x86_vec_or_unroll(t, so, ocb, oc_bn)) return -1;
  if (stage_fuse(so, n, g, &f) || stage_fuse(so, f, oho, &f) || stage_parallel(so, f)) return -1;
  if (sp) {
    if (gconv_inline_repack(s, pad) || stage_compute_at(sp, so, f)) return -1;
    int64_t pb = te_dim(pad, lax);
    if (pb > 1 && pb <= 64 && !(pb & (pb - 1)) && stage_vectorize(sp, stage_axis(sp, lax))) return -1;
  }
  if (stage_compute_at(scc, so, owo)) return -1;
  /* the block: the unit's chunks innermost beside the lanes */
  IterVar *cn = stage_axis(scc, 0), *cocc = stage_axis(scc, 1), *coh = stage_axis(scc, 2), *cow = stage_axis(scc, 3),
          *cocb = stage_axis(scc, 4);
  IterVar *ric = stage_reduce_axis(scc, 0), *rkh = stage_reduce_axis(scc, 1), *rkw = stage_reduce_axis(scc, 2),
          *ricb = stage_reduce_axis(scc, 3);
  if (unroll_kw ? stage_reorder(scc, 9, (IterVar *[]){cn, coh, ric, rkh, ricb, rkw, cow, cocc, cocb})
                : stage_reorder(scc, 9, (IterVar *[]){cn, coh, ric, rkh, rkw, ricb, cow, cocc, cocb}))
    return -1;
  if ((unroll_kw && stage_unroll(scc, rkw)) || stage_unroll(scc, cocc) || stage_unroll(scc, cow) ||
      x86_vec_or_unroll(t, scc, cocb, L) || x86_conv_prefetch_w("group_conv2d_NCHWc.x86", scc, cfg, kernel, ricb, ohi, rows, te_dim(conv, 1) / groups))
    return -1;
  return x86_schedule_others(s, so, crop, (int)oc_bn);
}

static int gconv_schedule(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *conv, int nout, Tensor **outs) {
  if (!s || !conv) return -1;
  Tensor *pad = NULL, *kernel = NULL, *crop = NULL;
  if (conv->tag && !strcmp(conv->tag, "group_conv2d_NCHWc_crop") && conv->ninputs == 1)
    crop = conv, conv = conv->inputs[0];
  for (int i = 0; i < conv->ninputs; i++) {
    if (conv->inputs[i]->ndim == 5 || conv->inputs[i]->ndim == 7) pad = conv->inputs[i];
    if (conv->inputs[i]->ndim == 6) kernel = conv->inputs[i];
  }
  bool packed = conv->tag && !strcmp(conv->tag, GCONV_PACKED_TAG);
  bool pair = crop && conv->tag && !strcmp(conv->tag, GCONV_PAIR_TAG);
  if (!pad || !kernel || !conv->tag || (!packed && !pair && strcmp(conv->tag, "group_conv2d_NCHWc")))
    return kiln_set_error("group_conv2d_NCHWc.x86 schedule: anchor '%s' is not a group_conv2d_NCHWc compute",
                          conv->name);
  if (crop) return gconv_schedule_padded(t, s, cfg, crop, conv, pad, kernel, nout, outs);
  int64_t KH = te_dim(kernel, 2), KW = te_dim(kernel, 3), N = te_dim(conv, 0), OH = te_dim(conv, 2);
  if (!packed && (pad->kind != TE_COMPUTE || (KH == 1 && KW == 1) || cfg_other_int(cfg, "tile_n", 1) != 1))
    return topi_x86_schedule_conv2d_NCHWc(t, s, cfg, conv, nout, outs);
  /* packed groups: the blocks are the vector (output) and the kernel's
   * (reduction); every output chunk its own slab of one data block */
  int64_t oc_bn = te_dim(conv, 4), ic_bn = packed ? te_dim(kernel, 4) : te_dim(pad, 4), OCC = te_dim(conv, 1);
  int64_t cfg_ic = cfg_split_inner(cfg, "tile_ic"), cfg_oc = cfg_split_inner(cfg, "tile_oc"),
          reg_n = cfg_split_inner(cfg, "tile_ow");
  if (cfg_ic < 0 || cfg_oc < 0 || reg_n < 0) return kiln_error_context("group_conv2d_NCHWc.x86");
  if (cfg_ic != ic_bn || (!packed && cfg_oc != oc_bn))
    return kiln_set_error("group_conv2d_NCHWc.x86: config blocks tile_ic %lld / tile_oc %lld do not match the "
                          "compute's layout (input block %lld, output block %lld)",
                          (long long)cfg_ic, (long long)cfg_oc, (long long)ic_bn, (long long)oc_bn);
  if (reg_n > te_dim(conv, 3))
    return kiln_set_error("group_conv2d_NCHWc.x86: config knob 'tile_ow' inner part %lld is more than the %lld "
                          "output columns",
                          (long long)reg_n, (long long)te_dim(conv, 3));
  /* groups from the shapes: the input has IC / ic_bn chunks, a group CPG / ic_bn */
  int64_t groups = packed ? OCC : te_dim(pad, 1) / te_dim(kernel, 1), cpk = OCC / groups; /* output chunks a group */
  if (!packed && (groups < 1 || te_dim(pad, 1) % te_dim(kernel, 1) || OCC % groups))
    return kiln_set_error("group_conv2d_NCHWc.x86 schedule: %lld input chunks, %lld a group and %lld output chunks "
                          "do not make whole groups",
                          (long long)te_dim(pad, 1), (long long)te_dim(kernel, 1), (long long)OCC);
  bool unroll_kw = cfg_other_int(cfg, "unroll_kw", 0) != 0;
  int64_t occ_f = gconv_occ_block(t, reg_n, cpk);
  int64_t row_bytes = (packed ? te_dim(pad, 4) : te_dim(kernel, 1) * ic_bn) * te_dim(pad, 3) * 4;
  int64_t rows = slab_rows(OH, te_dim(pad, 2), KH, row_bytes, N * groups, packed ? PACKED_SLAB_BYTES : SLAB_BYTES, 8);

  if (x86_inline_group(s, conv, NULL)) return -1;
  Tensor *main_out = x86_main_output(conv, nout, outs);
  Stage *sc = sch_stage(s, conv);
  if (!sc) return -1;
  Tensor *cc = sch_cache_write(s, conv, "local");
  if (!cc) return -1;
  Stage *scc = sch_stage(s, cc), *so = sc, *sp = pad->kind == TE_COMPUTE ? sch_stage(s, pad) : NULL;
  if (pad->kind == TE_COMPUTE && !sp) return -1;
  if (main_out && main_out != conv) { /* the conv is not written: its block feeds the epilogue */
    if (stage_compute_inline(sc)) return -1;
    so = sch_stage(s, main_out);
  }

  /* the output: (n, group, row block) parallel; the slab; then the group's
   * chunks, rows and column blocks */
  IterVar *n = stage_axis(so, 0), *occ = stage_axis(so, 1), *oh = stage_axis(so, 2), *ow = stage_axis(so, 3),
          *ocb = stage_axis(so, 4);
  IterVar *g, *cig, *cigo, *cigi = NULL, *oho, *ohi, *owo, *owi, *f;
  if (stage_split(so, occ, ir_i32(cpk), &g, &cig) || stage_split(so, oh, ir_i32(rows), &oho, &ohi) ||
      stage_split(so, ow, ir_i32(reg_n), &owo, &owi))
    return -1;
  cigo = cig;
  if (occ_f > 1 && stage_split(so, cig, ir_i32(occ_f), &cigo, &cigi)) return -1;
  IterVar *order[9];
  int k = 0;
  order[k++] = n, order[k++] = g, order[k++] = oho, order[k++] = cigo, order[k++] = ohi, order[k++] = owo;
  if (cigi) order[k++] = cigi;
  order[k++] = owi, order[k++] = ocb;
  if (stage_reorder(so, k, order)) return -1;
  if (cigi && stage_unroll(so, cigi)) return -1;
  if (stage_fuse(so, n, g, &f) || stage_fuse(so, f, oho, &f) || stage_parallel(so, f)) return -1;
  if (stage_unroll(so, owi) || x86_vec_or_unroll(t, so, ocb, oc_bn)) return -1;
  if (sp) {
    if (gconv_inline_repack(s, pad) || stage_compute_at(sp, so, f)) return -1;
    int64_t pb = te_dim(pad, 4);
    if (pb > 1 && pb <= 64 && !(pb & (pb - 1)) && stage_vectorize(sp, stage_axis(sp, 4))) return -1;
  }
  if (stage_compute_at(scc, so, owo)) return -1;

  /* the block: conv2d_NCHWc's, the reduction streaming the group's input
   * chunks and the window */
  IterVar *cn = stage_axis(scc, 0), *cocc = stage_axis(scc, 1), *coh = stage_axis(scc, 2), *cow = stage_axis(scc, 3),
          *cocb = stage_axis(scc, 4);
  IterVar *ric = stage_reduce_axis(scc, 0), *rkh = stage_reduce_axis(scc, 1), *rkw = stage_reduce_axis(scc, 2),
          *ricb = stage_reduce_axis(scc, 3);
  if (occ_f > 1) {
    if (unroll_kw ? stage_reorder(scc, 9, (IterVar *[]){cn, coh, ric, rkh, ricb, rkw, cow, cocc, cocb})
                  : stage_reorder(scc, 9, (IterVar *[]){cn, coh, ric, rkh, rkw, ricb, cow, cocc, cocb}))
      return -1;
    if (stage_unroll(scc, cocc)) return -1;
  } else if (unroll_kw ? stage_reorder(scc, 9, (IterVar *[]){cn, cocc, coh, ric, rkh, ricb, rkw, cow, cocb})
                       : stage_reorder(scc, 9, (IterVar *[]){cn, cocc, coh, ric, rkh, rkw, ricb, cow, cocb})) {
    return -1;
  }
  if (unroll_kw && stage_unroll(scc, rkw)) return -1;
  if (stage_unroll(scc, cow) || x86_vec_or_unroll(t, scc, cocb, oc_bn) ||
      x86_conv_prefetch_w("group_conv2d_NCHWc.x86", scc, cfg, kernel, ricb, ohi, rows, occ_f))
    return -1;
  return x86_schedule_others(s, so, conv, (int)oc_bn);
}

const Template topi_x86_group_conv2d_NCHWc_template = {
    .name = "group_conv2d_NCHWc.x86", .anchor_tag = "group_conv2d_NCHWc", .key = "cpu",
    .define_space = gconv_space, .fallback = gconv_fallback, .check = gconv_check,
    .placeholders = gconv_placeholders, .compute = gconv_compute, .schedule = gconv_schedule,
};
