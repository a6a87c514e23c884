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
/* (declarations added by the files' authors, one banner per file) */

#endif
