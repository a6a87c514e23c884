/*
 * topi.h - Kiln's operator library: every operator a model needs, defined
 * once as a tensor-expression compute, with a generic schedule, and for the
 * heavy ones x86 schedule templates whose choices are tuning knobs.
 *
 * Conventions every operator follows:
 *   - A compute takes te Tensors plus C-typed attributes and returns the
 *     output Tensor, or NULL with an error naming the operator, the bad
 *     input or attribute and what was expected ("conv2d: weight has 3
 *     dimensions, expected 4 (OIHW)").
 *   - Every compute sets a tag that tells schedules what it is: "elemwise"
 *     (one output element from the same element of each input), "broadcast"
 *     (elementwise with broadcasting), "injective" (each output element from
 *     any input elements, no reduction: reshape, transpose, pad, ...),
 *     "comm_reduce" (a reduction), or an operator tag for anchors
 *     ("conv2d_nchw", "conv2d_NCHWc", "depthwise_conv2d_nchw",
 *     "depthwise_conv2d_NCHWc", "conv2d_transpose_nchw", "dense",
 *     "dense_pack", "batch_matmul", "pool", "adaptive_pool", ...).
 *     topi_tag_is_injective() says which tags can be inlined.
 *   - Shapes coming from models are constant (Kiln binds dynamic dims at
 *     import); computes must still accept symbolic shapes where it is easy.
 *   - Names of intermediate tensors are short and readable ("pad_data",
 *     "T_add", ...) because they appear in lowered IR and generated C.
 *
 * Files (each section below lists what its file exports):
 *   generic/elemwise.c   unary, binary (broadcasting), where, cast, clip...
 *   generic/nn.c         conv2d (NCHW, groups, dilation), conv2d_transpose,
 *                        dense, matmul/batch_matmul, pooling, softmax,
 *                        norms (batch_norm inference, layer_norm,
 *                        instance_norm, lrn), pad
 *   generic/reduce.c     sum, mean, max, min, prod, l1, l2, log_sum_exp,
 *                        argmax, argmin
 *   generic/transform.c  reshape, transpose, squeeze/unsqueeze, flatten,
 *                        concat, split, strided_slice, gather,
 *                        gather_elements, tile, expand, resize,
 *                        depth_to_space, space_to_depth, layout_transform
 *   generic/schedule.c   generic schedules: injective, reduce, anchors
 *   generic/eval.c       a reference interpreter for computes (constant
 *                        folding of small tensors, and a test oracle)
 *   x86/                 NCHW[x]c convolution, depthwise, dense templates
 *                        (see src/autotune/autotune.h for config spaces)
 */
#ifndef KILN_TOPI_H
#define KILN_TOPI_H

#include "../te/te.h"

bool topi_tag_is_injective(const char *tag); /* elemwise, broadcast, injective */

/* ===== generic/: computes and generic schedules ===== */
/* (declarations added by the files' authors, one banner per file) */

/* ===== x86/: NCHW[x]c computes and tunable templates ===== */
/* Templates are tables (struct Template, src/autotune/autotune.h) listed in
 * autotune/template.c; the graph layer reaches them through
 * autotune_template(name).  Computes take tensors already in the blocked
 * layouts; the packers below make those layouts (the graph layer folds the
 * kernel packing at compile time).  Strides and dilation are {h, w},
 * padding {top, left, bottom, right}. */
struct Template;
struct ConfigEntity;

/* ----- x86/util.c: packers and fused-group helpers ----- */

/* NCHW -> NCHW[bn]c [N, C/bn, H, W, bn] ("data_vec"), and back. */
Tensor *topi_x86_pack_data_NCHWc(Tensor *data, int64_t bn);
Tensor *topi_x86_unpack_NCHWc(Tensor *data);
/* OIHW -> OIHW[ic_bn]i[oc_bn]o [O/oc_bn, I/ic_bn, KH, KW, ic_bn, oc_bn]. */
Tensor *topi_x86_pack_kernel_OIHWio(Tensor *kernel, int64_t ic_bn, int64_t oc_bn);
/* A split knob of cfg with nparts parts whose inner parts multiply to a
 * divisor of extent (divide) or at most extent; -1 and the reason. */
int x86_check_split(const struct ConfigEntity *cfg, const char *knob, int nparts, int64_t extent,
                    const char *what, bool divide);
/* Inline every injective, non-output stage of a fused group except the
 * anchor's direct inputs (its padded data, packed kernel) and keep. */
int x86_inline_group(Schedule *s, Tensor *anchor, Stage *keep);
/* The output that carries the anchor's loop structure: the anchor if it
 * is an output, else the last output of the anchor's shape (NULL: none). */
Tensor *x86_main_output(Tensor *anchor, int nout, Tensor **outs);
/* A root stage: outer axes fused and parallel, the last vectorized when it
 * is a power of two (or split by lanes_hint when that divides it). */
int x86_schedule_simple(Stage *st, int lanes_hint);
/* x86_schedule_simple for every root compute stage not yet scheduled
 * except main and the anchor's. */
int x86_schedule_others(Schedule *s, Stage *main, Tensor *anchor, int lanes);

/* ----- x86/conv2d.c: conv2d_NCHWc.x86 (knobs tile_ic, tile_oc, tile_ow,
 * unroll_kw; tile_oh instead of unroll_kw for 1x1 kernels) ----- */

/* data [N, IC/ic_bn, H, W, ic_bn] (ic_bn = tile_ic's inner part), kernel
 * [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn, oc_bn] -> [N, OC/oc_bn, OH, OW,
 * oc_bn], tag "conv2d_NCHWc"; padding is a "data_pad" stage. */
Tensor *topi_x86_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2],
                              const int padding[4], const int dilation[2], DType out_dtype);
/* Schedule a fused group anchored by conv (outs: the group's outputs;
 * injective stages between are inlined into the register block). */
int topi_x86_schedule_conv2d_NCHWc(Schedule *s, const struct ConfigEntity *cfg, Tensor *conv,
                                   int nout, Tensor **outs);
extern const struct Template topi_x86_conv2d_NCHWc_template;
/* Shared with the other conv templates: the NCHWc padding stage, its
 * schedule, a block axis vectorized (power of two) or unrolled, and the
 * register budget (accumulator vectors of a block). */
Tensor *x86_pad_nchwc(Tensor *data, int pt, int pl, int pb, int pr);
int x86_schedule_pad(Schedule *s, Tensor *pad);
int x86_vec_or_unroll(Stage *st, IterVar *iv, int64_t n);
int64_t x86_reg_budget(void);

/* ----- x86/depthwise.c: depthwise_conv2d_NCHWc.x86 (knobs tile_ic,
 * tile_oc, tile_ow) ----- */

/* [C * multiplier, 1, KH, KW] -> [OC/oc_bn, 1, KH, KW, 1, oc_bn]. */
Tensor *topi_x86_pack_kernel_depthwise(Tensor *kernel, int64_t oc_bn);
/* data [N, C/ic_bn, H, W, ic_bn], kernel [OC/oc_bn, 1, KH, KW, 1, oc_bn]
 * -> [N, OC/oc_bn, OH, OW, oc_bn], tag "depthwise_conv2d_NCHWc". */
Tensor *topi_x86_depthwise_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2],
                                        const int padding[4], const int dilation[2], DType out_dtype);
int topi_x86_schedule_depthwise_conv2d_NCHWc(Schedule *s, const struct ConfigEntity *cfg,
                                             Tensor *conv, int nout, Tensor **outs);
extern const struct Template topi_x86_depthwise_conv2d_NCHWc_template;

/* ----- x86/dense.c: dense_nopack.x86 (tile_y, tile_x, tile_k) and
 * dense_pack.x86 (tile_y, tile_x in 3 parts, tile_k, tile_inner) ----- */

/* data [M, K] x weight [N, K] -> [M, N], tag "dense_nopack"; its lane
 * count is tile_k's inner part (a "dense_partial" [M, N, lanes] stage).
 * bias [N] or NULL (a "broadcast" stage). */
Tensor *topi_x86_dense_nopack(Tensor *data, Tensor *weight, Tensor *bias,
                              const struct ConfigEntity *cfg, DType out_dtype);
int topi_x86_schedule_dense_nopack(Schedule *s, const struct ConfigEntity *cfg, Tensor *dense,
                                   int nout, Tensor **outs);
/* [N, K] -> [N/bn, K, bn] (bn = tile_x's inner part). */
Tensor *topi_x86_pack_dense_weight(Tensor *weight, int64_t bn);
/* weight [N, K] (packed inside the function) or prepacked [N/bn, K, bn]
 * -> [M, N], tag "dense_pack". */
Tensor *topi_x86_dense_pack(Tensor *data, Tensor *weight, Tensor *bias,
                            const struct ConfigEntity *cfg, DType out_dtype);
int topi_x86_schedule_dense_pack(Schedule *s, const struct ConfigEntity *cfg, Tensor *dense,
                                 int nout, Tensor **outs);
extern const struct Template topi_x86_dense_nopack_template;
extern const struct Template topi_x86_dense_pack_template;

#endif
