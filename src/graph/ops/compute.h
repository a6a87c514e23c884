/*
 * compute.h - the computes the op table's rows point at: each turns a
 * graph node and its input tensors into a call of the operator library
 * (src/topi), reading the node's attributes.  All have the signature of
 * OpDef.compute; st is the anchor's strategy (its template's config) or
 * NULL.
 *
 *   compute.c            elementwise, nn, transform and reduce computes
 *   backend/strategy.c   the NCHW[x]c convolutions and the packed dense
 *                        of the x86 templates (they need the config)
 */
#ifndef KILN_GRAPH_OP_COMPUTE_H
#define KILN_GRAPH_OP_COMPUTE_H

#include "../graph.h"

#define COMPUTE_FN(fn) Tensor *fn(GNode *n, Tensor **ins, const Strategy *st);

/* elementwise: compute_unary and compute_binary ask the operator library
 * for the op by its name (topi_unary_lookup, topi_binary_lookup) */
#define COMPUTES_ELEMWISE(X)                                                                              \
  X(compute_unary) X(compute_binary) X(compute_relu) X(compute_copy) X(compute_leaky_relu) X(compute_elu) \
  X(compute_selu) X(compute_celu) X(compute_thresholded_relu) X(compute_hard_sigmoid) X(compute_softplus) \
  X(compute_softsign) X(compute_hard_swish) X(compute_gelu) X(compute_silu) X(compute_clip) X(compute_cast) \
  X(compute_prelu) X(compute_where) X(compute_bias_add)
#define COMPUTES_NN(X)                                                                                      \
  X(compute_conv2d) X(compute_winograd_weight_transform) X(compute_conv2d_transpose) X(compute_dense)       \
  X(compute_matmul) X(compute_max_pool2d) X(compute_avg_pool2d) X(compute_lp_pool2d)                        \
  X(compute_global_avg_pool2d) X(compute_global_max_pool2d) X(compute_adaptive_avg_pool2d)                  \
  X(compute_softmax) X(compute_log_softmax) X(compute_layer_norm) X(compute_instance_norm) X(compute_lrn)   \
  X(compute_conv2d_nchwc) X(compute_depthwise_conv2d_nchwc) X(compute_conv2d_winograd_nchwc)                \
  X(compute_dense_pack) X(compute_conv2d_winograd_gpu)
/* compute_to_type_shape: squeeze, expand_dims (a reshape to the inferred
 * shape) */
#define COMPUTES_TRANSFORM(X)                                                                                \
  X(compute_reshape) X(compute_batch_flatten) X(compute_to_type_shape) X(compute_transpose)                  \
  X(compute_concatenate) X(compute_strided_slice) X(compute_dyn_strided_slice) X(compute_dyn_split) X(compute_dyn_pad) X(compute_dyn_center_crop_pad) X(compute_dyn_arange) X(compute_dyn_col2im) X(compute_dyn_stft) X(compute_take)                                            \
  X(compute_dyn_resize)                                                                                \
  X(compute_dyn_one_hot) X(compute_dyn_affine_grid)                                                                           \
  X(compute_gather_elements) X(compute_pad) X(compute_tile) X(compute_broadcast_to) X(compute_resize2d)      \
  X(compute_depth_to_space) X(compute_space_to_depth) X(compute_one_hot) X(compute_layout_transform) X(compute_window) X(compute_mel_weight_matrix) \
  X(compute_argmax) X(compute_argmin)
/* the reductions over axes: X(compute function, TopiReduce) */
#define COMPUTE_REDUCES(X)                                                                           \
  X(compute_sum, TOPI_REDUCE_sum) X(compute_mean, TOPI_REDUCE_mean) X(compute_max, TOPI_REDUCE_max)  \
  X(compute_min, TOPI_REDUCE_min) X(compute_prod, TOPI_REDUCE_prod) X(compute_l1_norm, TOPI_REDUCE_l1) \
  X(compute_l2_norm, TOPI_REDUCE_l2) X(compute_sum_square, TOPI_REDUCE_sum_square)                   \
  X(compute_logsumexp, TOPI_REDUCE_log_sum_exp)

COMPUTES_ELEMWISE(COMPUTE_FN)
COMPUTES_NN(COMPUTE_FN)
COMPUTES_TRANSFORM(COMPUTE_FN)
#define COMPUTE_REDUCE_FN(fn, r) COMPUTE_FN(fn)
COMPUTE_REDUCES(COMPUTE_REDUCE_FN)
#undef COMPUTE_REDUCE_FN

#endif
