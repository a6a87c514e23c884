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
 *   generic/util.c       axis normalization, broadcasting, layout strings
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
 *   generic/scatter.c    scatter_elements, scatter_nd (extern loop nests)
 *   generic/topk.c       topk_indices (a heap per row)
 *   generic/schedule.c   generic schedules: injective, reduce, anchors
 *   generic/eval.c       a reference interpreter for computes (constant
 *                        folding of small tensors, and a test oracle)
 *   x86/                 NCHW[x]c convolution, depthwise, dense templates
 *                        (see src/knob/knob.h for config spaces); the
 *                        bfloat16 ones of --precision bf16 (dense_bf16.c)
 *   templates.c          the table of tunable templates (one row each)
 */
#ifndef KILN_TOPI_H
#define KILN_TOPI_H

#include "../te/te.h"

bool topi_tag_is_injective(const char *tag); /* elemwise, broadcast, injective */

/* ===== generic/: computes and generic schedules ===== */

/* Besides "elemwise", "broadcast", "injective" and "comm_reduce", the
 * generic computes tag their anchors "conv2d_nchw", "group_conv2d_nchw",
 * "depthwise_conv2d_nchw", "conv2d_transpose_nchw", "dense", "matmul",
 * "batch_matmul", "pool", "adaptive_pool", "softmax_output",
 * "log_softmax_output" and "norm_output"; their internal stages are
 * "dot_partial" (the lane partial sums of dense / batch_matmul),
 * "row_reduce" and "row_temp" (the per-row stages of softmax and the
 * norms).  None of these is injective. */

/* ----- generic/util.c: helpers shared by the operator files ----- */

/* Wrap a negative axis into [0, ndim); error "<op>: axis 5 is out of range
 * for a tensor of rank 4". */
int topi_normalize_axis(const char *op, int64_t axis, int ndim, int *out);
/* "[1, 3, 224, 224]" (arena string); symbolic dims print as expressions. */
const char *topi_shape_str(int ndim, Expr **shape);
/* The NumPy broadcast of the shapes of n tensors; error names the op and
 * the shapes ("add: cannot broadcast shapes [2, 3] and [4]"). */
int topi_broadcast_shape(const char *op, int n, Tensor **ts, int *ndim_out, Expr ***shape_out);
/* The same over shapes given as lists. */
int topi_broadcast_shapes(const char *op, int n, const int *ndims, Expr ***shapes, int *ndim_out,
                          Expr ***shape_out);
/* Read t at the element of a broadcast output of rank out_ndim (vars are
 * the output's axis variables): leading dimensions are dropped, size-1
 * dimensions read index 0. */
Expr *topi_broadcast_read(Tensor *t, int out_ndim, Expr **vars, Expr **out_shape);
/* A layout string: upper-case primal axes, lower-case sub-axes with their
 * factor ("NCHW16c": N, C, H, W, c with c = 16 and C = channels / 16). */
typedef struct TopiLayout {
  int ndim;
  char axis[16];      /* the letter of each dimension */
  int64_t factor[16]; /* sub-axis factor; 0 for a primal axis */
} TopiLayout;
int topi_layout_parse(const char *op, const char *s, TopiLayout *out);
int topi_layout_find(const TopiLayout *l, char axis); /* position or -1 */

/* ----- generic/elemwise.c: elementwise and broadcast operators ----- */

/* Unary operators, tag "elemwise".  Math functions need a float tensor;
 * floor/ceil/round/trunc of an integer tensor are the identity; isnan and
 * isinf give bool; logical_not works on bool (other types compare with 0);
 * round is half to even (ONNX Round); sign(0) = 0. */
#define TOPI_UNARY_OPS(X)                                                      \
  X(negative) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(reciprocal) X(relu)     \
  X(sigmoid) X(tanh) X(erf) X(gelu) X(gelu_tanh) X(silu) X(softplus)         \
  X(softsign) X(hard_swish) X(mish) X(floor) X(ceil) X(round) X(trunc)       \
  X(sign) X(logical_not) X(bitwise_not) X(sin) X(cos) X(tan) X(asin) X(acos) \
  X(atan) X(sinh) X(cosh) X(asinh) X(acosh) X(atanh) X(isnan) X(isinf)      \
  X(identity)

typedef enum TopiUnary {
#define X(n) TOPI_##n,
  TOPI_UNARY_OPS(X)
#undef X
      TOPI_UNARY__COUNT
} TopiUnary;

/* Binary operators with NumPy broadcasting, tag "broadcast" ("elemwise"
 * when both shapes equal the output's).  Operands must have one dtype.
 * divide on integers truncates (C, ONNX Div) and x / 0 gives x instead of
 * trapping; mod is C's remainder (fmod for floats, ONNX Mod fmod=1),
 * floor_mod takes the divisor's sign (Python %, ONNX Mod fmod=0); power on
 * integers is computed in double and converted back (an exponent of
 * another dtype is cast to the base's, as ONNX Pow allows); comparisons and
 * logical_* give bool (logical_* compare non-bool operands with 0). */
#define TOPI_BINARY_OPS(X)                                                     \
  X(add) X(subtract) X(multiply) X(divide) X(power) X(minimum) X(maximum)      \
  X(mod) X(floor_mod) X(floor_divide) X(equal) X(not_equal) X(less)           \
  X(less_equal) X(greater) X(greater_equal) X(logical_and) X(logical_or)      \
  X(logical_xor) X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(left_shift)    \
  X(right_shift)

typedef enum TopiBinary {
#define X(n) TOPI_##n,
  TOPI_BINARY_OPS(X)
#undef X
      TOPI_BINARY__COUNT
} TopiBinary;

Tensor *topi_unary(TopiUnary op, Tensor *x);
const char *topi_unary_name(TopiUnary op);
int topi_unary_lookup(const char *name); /* -1 if none */
Tensor *topi_binary(TopiBinary op, Tensor *a, Tensor *b);
const char *topi_binary_name(TopiBinary op);
int topi_binary_lookup(const char *name); /* -1 if none */

Tensor *topi_leaky_relu(Tensor *x, double alpha);        /* x < 0 ? alpha x : x */
Tensor *topi_elu(Tensor *x, double alpha);               /* x < 0 ? alpha (e^x - 1) : x */
Tensor *topi_selu(Tensor *x, double alpha, double gamma); /* gamma elu(x, alpha) */
Tensor *topi_celu(Tensor *x, double alpha);              /* max(0,x) + min(0, alpha (e^(x/alpha) - 1)) */
Tensor *topi_thresholded_relu(Tensor *x, double alpha);  /* x > alpha ? x : 0 */
Tensor *topi_hard_sigmoid(Tensor *x, double alpha, double beta); /* clip(alpha x + beta, 0, 1) */
/* min(max(x, lo), hi); pass -INFINITY / INFINITY for a missing bound. */
Tensor *topi_clip(Tensor *x, double lo, double hi);
/* x < 0 ? slope x : x, slope broadcast to x's shape (ONNX PRelu). */
Tensor *topi_prelu(Tensor *x, Tensor *slope);
/* cond ? x : y, the three broadcast together; cond may be any dtype
 * (non-zero is true). */
Tensor *topi_where(Tensor *cond, Tensor *x, Tensor *y);
/* Convert to t: float to int truncates, to bool compares with 0. */
Tensor *topi_cast(Tensor *x, DType t);
/* A constant tensor (ONNX ConstantOfShape), tag "elemwise". */
Tensor *topi_full(int ndim, const int64_t *shape, DType t, double value);

/* ----- generic/nn.c: convolution, dense, pooling, softmax, norms, pad ----- */

/* TOPI_PAD_WRAP: only topi_pad_dyn's (the static Pad builds wrap from slices) */
typedef enum TopiPadMode { TOPI_PAD_CONSTANT, TOPI_PAD_REFLECT, TOPI_PAD_EDGE, TOPI_PAD_WRAP } TopiPadMode;
/* pads has 2 * ndim entries in ONNX order: all begins, then all ends;
 * a negative pad crops.  Reflect needs every pad < the dimension.  Tag
 * "injective", name "T_pad". */
Tensor *topi_pad(Tensor *x, const int64_t *pads, TopiPadMode mode, double value);

/* 2-D convolution, data NCHW, weight OIHW ([F, C / groups, KH, KW]);
 * stride and dilation {h, w}, pad {top, left, bottom, right}.  Tag
 * "conv2d_nchw" (groups == 1), "group_conv2d_nchw", and for groups ==
 * channels with one input channel per group "depthwise_conv2d_nchw" (it
 * calls topi_depthwise_conv2d_nchw).  Padding is a "pad_data" stage. */
Tensor *topi_conv2d_nchw(Tensor *data, Tensor *weight, const int64_t stride[2],
                         const int64_t pad[4], const int64_t dilation[2], int groups);
/* Depthwise: weight [C * multiplier, 1, KH, KW]; output channel f reads
 * input channel f / multiplier.  Tag "depthwise_conv2d_nchw". */
Tensor *topi_depthwise_conv2d_nchw(Tensor *data, Tensor *weight, const int64_t stride[2],
                                   const int64_t pad[4], const int64_t dilation[2]);
/* Transposed convolution (ONNX ConvTranspose), data NCHW, weight
 * [C, F / groups, KH, KW]; output size (in - 1) * stride - pad_begin -
 * pad_end + dilation * (k - 1) + output_padding + 1.  Tag
 * "conv2d_transpose_nchw". */
Tensor *topi_conv2d_transpose_nchw(Tensor *data, Tensor *weight, const int64_t stride[2],
                                   const int64_t pad[4], const int64_t output_padding[2],
                                   const int64_t dilation[2], int groups);
/* data [M, K] x weight [N, K] -> [M, N] (weight transposed, like TVM dense
 * and ONNX Gemm with transB), tag "dense"; bias [N] (or NULL) is added in
 * a "broadcast" stage. */
Tensor *topi_dense(Tensor *data, Tensor *weight, Tensor *bias);
/* NumPy matmul (ONNX MatMul): batch dimensions broadcast, a 1-D operand
 * is a row (a) or column (b) vector whose dimension is then dropped.
 * transpose_a / transpose_b (TVM's transp_a, transp_b) read that operand's
 * last two dimensions swapped: a [..., K, M], b [..., N, K]; a transposed
 * operand needs rank >= 2.  Tag "matmul". */
Tensor *topi_matmul(Tensor *a, Tensor *b, bool transpose_a, bool transpose_b);
/* a [B, M, K] (or [B, K, M] if transpose_a) x b [B, K, N] (or [B, N, K] if
 * transpose_b) -> [B, M, N]; a batch of 1 broadcasts.  Tag
 * "batch_matmul".  TVM's batch_matmul is transpose_b = true. */
Tensor *topi_batch_matmul(Tensor *a, Tensor *b, bool transpose_a, bool transpose_b);

typedef enum TopiPoolKind { TOPI_POOL_MAX, TOPI_POOL_AVG } TopiPoolKind;
/* 2-D pooling over the H and W axes of layout ("NCHW", "NHWC",
 * "NCHW16c", ...; H and W must not be split).  kernel, stride, dilation
 * {h, w}; pad {top, left, bottom, right}.  ceil_mode rounds the output
 * size up (a window may not start in the end padding, as in PyTorch);
 * average pooling divides by the window's elements inside the padded
 * input (count_include_pad) or inside the input.  Padding never enters a
 * max.  Tag "pool". */
Tensor *topi_pool2d(Tensor *data, TopiPoolKind kind, const int64_t kernel[2],
                    const int64_t stride[2], const int64_t dilation[2], const int64_t pad[4],
                    bool ceil_mode, bool count_include_pad, const char *layout);
/* Pool over all of H and W (output H = W = 1), tag "adaptive_pool". */
Tensor *topi_global_pool2d(Tensor *data, TopiPoolKind kind, const char *layout);
/* Adaptive pooling to out_size {h, w} (PyTorch's windows: floor(i * in /
 * out) to ceil((i + 1) * in / out)), tag "adaptive_pool". */
Tensor *topi_adaptive_pool2d(Tensor *data, TopiPoolKind kind, const int64_t out_size[2],
                             const char *layout);

/* Softmax over axis, stable (the max is subtracted first): stages
 * "T_softmax_maxelem", "T_softmax_exp", "T_softmax_expsum", output
 * "T_softmax_norm" with tag "softmax_output" and attribute "axis". */
Tensor *topi_softmax(Tensor *x, int axis);
/* x - max - log(sum(exp(x - max))), tag "log_softmax_output". */
Tensor *topi_log_softmax(Tensor *x, int axis);
/* Inference batch norm: (x - mean) / sqrt(var + eps) * gamma + beta, the
 * 1-D parameters along axis.  One "broadcast" stage. */
Tensor *topi_batch_norm(Tensor *x, Tensor *gamma, Tensor *beta, Tensor *mean, Tensor *var,
                        int axis, double eps);
/* ONNX LayerNormalization: normalize over dims [axis, rank) (two-pass
 * mean and variance), then * scale + bias (each may be NULL; they
 * broadcast to x.shape[axis:]).  Output tag "norm_output". */
Tensor *topi_layer_norm(Tensor *x, Tensor *scale, Tensor *bias, int axis, double eps);
/* Normalize each (n, c) over the spatial dims; scale and bias [C].  Output
 * tag "norm_output". */
Tensor *topi_instance_norm(Tensor *x, Tensor *scale, Tensor *bias, double eps);
/* ONNX LRN across channels (axis 1): x / (bias + alpha / size *
 * sum of squares over the channel window)^beta: a "comm_reduce" stage and
 * an "elemwise" output. */
Tensor *topi_lrn(Tensor *x, int size, double alpha, double beta, double bias);

/* ----- generic/reduce.c: reductions ----- */

/* Reductions over a set of axes (naxes == 0: all axes); negative axes
 * wrap, duplicates are an error.  keepdims keeps reduced axes as 1.
 * mean, l2, log_sum and log_sum_exp are a reduction (tag "comm_reduce")
 * followed by an "elemwise" stage; log_sum_exp subtracts the max. */
#define TOPI_REDUCE_OPS(X)                                                     \
  X(sum) X(mean) X(max) X(min) X(prod) X(l1) X(l2) X(log_sum) X(log_sum_exp)  \
  X(sum_square)

typedef enum TopiReduce {
#define X(n) TOPI_REDUCE_##n,
  TOPI_REDUCE_OPS(X)
#undef X
      TOPI_REDUCE__COUNT
} TopiReduce;

Tensor *topi_reduce(TopiReduce op, Tensor *x, int naxes, const int64_t *axes, bool keepdims);
/* A reduction whose axes are decided at run time (kept dimensions):
 * oshape[d] is 1 where dimension d is reduced, else x's size (a Var the
 * kernel binds from its output, or a constant where no value can reduce
 * it). */
Tensor *topi_reduce_runtime(TopiReduce op, Tensor *x, Expr **oshape);
const char *topi_reduce_name(TopiReduce op);
int topi_reduce_lookup(const char *name); /* -1 if none */
/* Index (int64) of the max / min along axis: the first one, or the last
 * with select_last_index (ONNX ArgMax/ArgMin). */
Tensor *topi_argmax(Tensor *x, int axis, bool keepdims, bool select_last_index);
Tensor *topi_argmin(Tensor *x, int axis, bool keepdims, bool select_last_index);

/* ----- generic/transform.c: data movement (tag "injective") ----- */

/* New shape with the same number of elements; -1 infers one dimension and
 * 0 copies the input's (ONNX Reshape, allowzero = 0). */
Tensor *topi_reshape(Tensor *x, int ndim, const int64_t *shape);
/* A reshape to shape given as expressions (symbolic sizes); the caller
 * (the graph's type inference) has checked the element count. */
Tensor *topi_reshape_expr(Tensor *x, int ndim, Expr **shape);
/* Permute the axes; perm NULL reverses them. */
Tensor *topi_transpose(Tensor *x, const int64_t *perm);
/* Drop size-1 axes (naxes == 0: all of them). */
Tensor *topi_squeeze(Tensor *x, int naxes, const int64_t *axes);
/* Insert size-1 axes at the given positions of the output. */
Tensor *topi_unsqueeze(Tensor *x, int naxes, const int64_t *axes);
/* [prod(shape[:axis]), prod(shape[axis:])] (ONNX Flatten). */
Tensor *topi_flatten(Tensor *x, int axis);
Tensor *topi_concat(int n, Tensor **xs, int axis);
/* Split along axis into nout parts of the given sizes (NULL: equal parts);
 * the parts go to outs.  Returns 0 or -1. */
int topi_split(Tensor *x, int axis, int nout, const int64_t *sizes, Tensor **outs);
/* ONNX Slice: for each listed axis (axes NULL: 0 .. naxes-1) take begin,
 * begin + step, ... before end (steps NULL: 1); negative begin/end count
 * from the end, out-of-range values clamp, a negative step walks back. */
Tensor *topi_strided_slice(Tensor *x, int naxes, const int64_t *begin, const int64_t *end,
                           const int64_t *steps, const int64_t *axes);
/* The same with begin, steps and axes 1-D int tensors read by the kernel
 * (their values given at run time) and the output shape given
 * (dyn.strided_slice). */
Tensor *topi_strided_slice_dyn(Tensor *x, Tensor *begin, Tensor *steps, Tensor *axes, Expr **oshape);
/* Part index of a Split whose sizes are given at run time: x along axis
 * from the sum of the sizes before the part (sizes read by the kernel;
 * NULL for part 0), to the given shape (dyn.split). */
Tensor *topi_split_dyn(Tensor *x, Tensor *sizes, int axis, int index, Expr **oshape);
/* ONNX Pad with pads (1-D int, 2k: k begins then k ends), axes (1-D
 * int, k) and the constant value (one element; constant mode only)
 * tensors read by the kernel at run time, to the given output shape
 * (dyn.pad); a negative pad crops. */
Tensor *topi_pad_dyn(Tensor *x, Tensor *pads, Tensor *axes, Tensor *value, TopiPadMode mode, Expr **oshape);
/* ONNX CenterCropPad: the same with sizes (1-D int, k) in place of the
 * pads: axis axes[j] cropped or padded (with 0) to sizes[j] around its
 * centre, the begin pad -trunc((D - size) / 2). */
Tensor *topi_center_crop_pad_dyn(Tensor *x, Tensor *sizes, Tensor *axes, Expr **oshape);
/* ONNX Range with start and delta one-element int tensors read by the
 * kernel: start + i * delta over the given length (dyn.arange). */
Tensor *topi_arange_dyn(Tensor *start, Tensor *delta, Expr *len);
/* ONNX Col2Im with image_shape and block_shape (1-D int, d each) read by
 * the kernel at run time: x [N, C * prod(block), L] summed into
 * [N, C, *image] (the given output shape); pads (2d: begins then ends),
 * dilations and strides (d each) are constants (dyn.col2im).  Each output
 * pixel sums over the C * prod(block) rows of x the ones whose block
 * offset lands on it. */
/* ONNX STFT with frame_step and frame_length (one integer element each)
 * read by the kernel at run time: x [batch, len, 1 or 2] (static len),
 * window (1-D float, or NULL) applied to each frame; the output
 * [batch, frames, bins, 2] has the given shape; frames are at most lmax
 * samples (a static bound of frame_length) (dyn.stft,
 * topi/generic/signal.c). */
Tensor *topi_stft_dyn(Tensor *x, Tensor *step, Tensor *length, Tensor *window, int64_t lmax, Expr **oshape);
Tensor *topi_col2im_dyn(Tensor *x, Tensor *image, Tensor *block, const int64_t *pads, const int64_t *dil,
                        const int64_t *str, Expr **oshape);
/* ONNX Gather: out = data.shape[:axis] + indices.shape + data.shape[axis+1:];
 * negative indices wrap, out-of-range ones clamp (never read outside). */
Tensor *topi_gather(Tensor *data, Tensor *indices, int axis);
/* ONNX GatherElements: out has indices' shape. */
Tensor *topi_gather_elements(Tensor *data, Tensor *indices, int axis);

/* ----- generic/scatter.c: scatters as extern loop nests (tag "scatter";
 * static shapes, CPU), and as computes for GPUs ----- */

/* How an update combines with the value at its position: it replaces it
 * (none) or adds, multiplies, takes the larger or the smaller. */
typedef enum TopiScatterReduce {
  TOPI_SCATTER_NONE,
  TOPI_SCATTER_ADD,
  TOPI_SCATTER_MUL,
  TOPI_SCATTER_MAX,
  TOPI_SCATTER_MIN
} TopiScatterReduce;
/* ONNX ScatterElements: data with updates[p] placed at p with its axis
 * coordinate replaced by indices[p] (indices and updates of one shape, no
 * larger than data's off the axis). */
Tensor *topi_scatter_elements(Tensor *data, Tensor *indices, Tensor *updates, int axis, TopiScatterReduce red);
/* ONNX ScatterND: indices [..., k] name slices data[i0, ..., ik-1, :]
 * that updates [..., data's dims from k] fill. */
Tensor *topi_scatter_nd(Tensor *data, Tensor *indices, Tensor *updates, TopiScatterReduce red);
/* The same as computes (tag "injective" over a "comm_reduce" of the hits):
 * quadratic, for targets without a schedule for loop nests (GPUs). */
Tensor *topi_scatter_elements_dense(Tensor *data, Tensor *indices, Tensor *updates, int axis, TopiScatterReduce red);
Tensor *topi_scatter_nd_dense(Tensor *data, Tensor *indices, Tensor *updates, TopiScatterReduce red);

/* ----- generic/topk.c: ONNX TopK's indices along the last axis ----- */

/* The positions of the k largest (smallest) values of each row of x's
 * last axis, best first, ties to the lower position (int64 [.., k]): a
 * heap per row, O(n log k) (tag "topk"; static shapes, CPU). */
Tensor *topi_topk_indices(Tensor *x, int64_t k, bool largest);
/* The same as computes: each element ranked against every other, O(n^2)
 * (GPUs). */
Tensor *topi_topk_indices_dense(Tensor *x, int64_t k, bool largest);
Tensor *topi_tile(Tensor *x, const int64_t *repeats);
/* ONNX Expand: x broadcast with shape (both ways). */
Tensor *topi_expand(Tensor *x, int ndim, const int64_t *shape);
/* The same to a shape of expressions (run-time sizes: Vars the kernel
 * binds from its output's shape). */
Tensor *topi_expand_expr(Tensor *x, int ndim, Expr **shape);
/* Tile x to the output shape oshape (each dimension a multiple of x's;
 * run-time repeats: Vars the kernel binds from its output's shape). */
Tensor *topi_tile_expr(Tensor *x, Expr **oshape);

typedef enum TopiResizeMethod { TOPI_RESIZE_NEAREST, TOPI_RESIZE_LINEAR, TOPI_RESIZE_CUBIC } TopiResizeMethod;
typedef enum TopiCoordMode {
  TOPI_COORD_HALF_PIXEL,
  TOPI_COORD_ALIGN_CORNERS,
  TOPI_COORD_ASYMMETRIC,
  TOPI_COORD_PYTORCH_HALF_PIXEL,
  TOPI_COORD_TF_HALF_PIXEL_FOR_NEAREST,
  TOPI_COORD_HALF_PIXEL_SYMMETRIC,
} TopiCoordMode;
typedef enum TopiNearestMode {
  TOPI_NEAREST_ROUND_PREFER_FLOOR,
  TOPI_NEAREST_ROUND_PREFER_CEIL,
  TOPI_NEAREST_FLOOR,
  TOPI_NEAREST_CEIL,
} TopiNearestMode;
/* ONNX Resize to out_shape (same rank).  scales (NULL: out / in) enter the
 * coordinate transform; axes whose size and scale are unchanged are
 * copied.  Linear and cubic interpolate over up to 3 resized axes, with
 * edge clamping (cubic: coefficient cubic_a, exclude_outside). */
Tensor *topi_resize(Tensor *x, const int64_t *out_shape, const double *scales,
                    TopiResizeMethod method, TopiCoordMode coord, TopiNearestMode nearest,
                    double cubic_a, bool exclude_outside);
/* The interpolation both resizes share (resize_dyn.c): the body of the
 * output at index vars v, where na axes are resized, axis active[k] of
 * input size in[k] read at the float64 source coordinate cs[k]. Nearest
 * rounds by `nearest` and reads x; linear (the coordinate clamped to the
 * input) and cubic (coefficient cubic_a, taps clamped to the edge or
 * weighted 0 outside with exclude_outside, then renormalized) sum the
 * taps of up to 3 axes with separable float64 weights, cast to x's
 * dtype.  NULL + error for more than 3 interpolated axes. */
Expr *topi_resize_interp(Tensor *x, Expr **v, int na, const int *active, const int64_t *in, Expr **cs,
                         TopiResizeMethod method, TopiNearestMode nearest, double cubic_a, bool exclude_outside);
/* How dyn.resize's value tensor gives the output: float scales (the
 * output sizes floor(in * scale)), integer sizes, or sizes with ONNX's
 * keep_aspect_ratio_policy (one scale, the smallest or the largest of
 * sizes[j] / in[j]). */
typedef enum TopiResizeBy {
  TOPI_RESIZE_BY_SCALES,
  TOPI_RESIZE_BY_SIZES,
  TOPI_RESIZE_NOT_LARGER,
  TOPI_RESIZE_NOT_SMALLER,
} TopiResizeBy;
/* ONNX Resize whose scales or sizes (val: 1-D, element i for axis
 * axes[i], i < nax) are read at run time, to oshape (the run-time output
 * shape); in_shape is the original input's shape (the ratios of
 * keep_aspect_ratio_policy), res the elements of val whose axes this call
 * resizes (all of them for nearest, at most 3 for linear and cubic; their
 * input dimensions must be constant).  resize_dyn.c. */
Tensor *topi_resize_dyn(Tensor *x, Tensor *val, Expr **oshape, TopiResizeBy by, int nax, const int *axes,
                        const int64_t *in_shape, int nres, const int *res, TopiResizeMethod method,
                        TopiCoordMode coord_mode, TopiNearestMode nearest, double cubic_a, bool exclude_outside);
/* NCHW [N, C, H, W] -> [N, C / b^2, H b, W b]; crd: ONNX mode "CRD"
 * (else "DCR"). */
Tensor *topi_depth_to_space(Tensor *x, int block, bool crd);
/* NCHW [N, C, H, W] -> [N, C b^2, H / b, W / b] (ONNX SpaceToDepth). */
Tensor *topi_space_to_depth(Tensor *x, int block);
/* Between layouts of the same primal axes, "NCHW" <-> "NCHW16c",
 * "NCHW8c" -> "NCHW16c", "OIHW" -> "OIHW16i16o", ...  A split axis that
 * does not divide is padded with zeros. */
Tensor *topi_layout_transform(Tensor *x, const char *src, const char *dst);
/* ONNX OneHot: a dimension of size depth inserted at axis; negative
 * indices count from depth; float indices are truncated to integers. */
/* ONNX AffineGrid over k = 2 or 3 spatial axes: out [N, (D,) H, W, k]
 * (oshape, the sizes possibly run-time Vars) is theta [N, k, k + 1]
 * applied to each point's (x, y[, z], 1), x along W over [-1, 1] (pixel
 * centres, or the corners with align_corners); the kernel normalizes by
 * the sizes it reads from size (the ONNX input, [N, C, (D,) H, W]), which
 * the executor bound oshape's dimensions to. */
Tensor *topi_affine_grid_dyn(Tensor *theta, Tensor *size, Expr **oshape, int k, bool align_corners);
/* topi_one_hot with the depth an expression (a run-time size) and
 * [off_value, on_value] read from the 1-D tensor values, whose type the
 * result has. */
Tensor *topi_one_hot_dyn(Tensor *indices, Tensor *values, Expr *depth, int axis);
Tensor *topi_one_hot(Tensor *indices, int64_t depth, double on_value, double off_value, int axis,
                     DType t);
/* A cosine window of n points (HannWindow, HammingWindow, BlackmanWindow):
 * a0 - a1 cos(2 pi i / s) + a2 cos(4 pi i / s), s = n (periodic) or
 * n - 1 (0 where s is 0), computed in float64 for a float64 t, else in
 * float32, and cast to t.  n may be a Var bound from the output's shape. */
Tensor *topi_window(Expr *n, bool periodic, double a0, double a1, double a2, DType t);
/* ONNX MelWeightMatrix over values given at run time: shape[0] (the
 * spectrum bins, dft_length / 2 + 1) by shape[1] (the mel bins) of
 * triangles between the mel grid's bins floor((L + 1) f / S); L (the DFT
 * length) and S (the sample rate) are 0-d integer tensors, lo and hi (the
 * edges in Hz) 0-d float tensors, read by the kernel; float64 inside. */
Tensor *topi_mel_weight_matrix(Tensor *L, Tensor *S, Tensor *lo, Tensor *hi, Expr **shape, DType t);
/* start, start + delta, ... before limit (ONNX Range), a constant. */
Tensor *topi_arange(double start, double limit, double delta, DType t);

/* ----- generic/schedule.c (injective, reduce) and generic/schedule_anchor.c
 * (the anchor ops, generic): generic schedules ----- */

/* Each schedules the stages of s (made with te_create_schedule from the
 * same outputs) for a CPU: 0, or -1 with an error.
 *
 * injective: inline every injective stage but the outputs; each output's
 *   axes are fused, split by the vector width and the inner part
 *   vectorized when it divides and the innermost reads are contiguous;
 *   the outer part runs in parallel when the tensor is big enough.
 * reduce: reductions at the root, parallel over their outer spatial axes,
 *   a contiguous spatial axis innermost; a reduction whose elementwise
 *   consumer is the output is computed inside the consumer's loop.
 * conv2d_nchw, dense, matmul (also batch_matmul), pool, softmax (also
 *   log_softmax and the norms): the anchor op's own loop order, with an
 *   elementwise epilogue computing the anchor per outer block.
 * generic: the dispatcher for a fused group (an anchor op followed by
 *   injective ops): finds the anchor by tag, walking from the outputs, and
 *   applies its schedule; no anchor: injective. */
int topi_schedule_injective(Schedule *s, int nout, Tensor **outs);
int topi_schedule_reduce(Schedule *s, int nout, Tensor **outs);
int topi_schedule_conv2d_nchw(Schedule *s, int nout, Tensor **outs);
int topi_schedule_dense(Schedule *s, int nout, Tensor **outs);
int topi_schedule_matmul(Schedule *s, int nout, Tensor **outs);
int topi_schedule_pool(Schedule *s, int nout, Tensor **outs);
int topi_schedule_softmax(Schedule *s, int nout, Tensor **outs);
int topi_schedule_generic(Schedule *s, int nout, Tensor **outs);

/* ----- cuda/schedule.c: the generic GPU schedule (cuda and opencl) ----- */

/* One kernel for a fused function with output out: injective stages
 * inlined, the output's axes fused and bound to blocks of `threads`
 * threads, reductions computed per thread in local memory. */
int topi_schedule_gpu_generic(Schedule *s, Tensor *out, int threads);

/* ----- generic/eval.c: a reference interpreter ----- */

/* Evaluate out element by element (every compute reached from it,
 * reductions included) from the inputs' data; in_data[i] holds inputs[i]
 * (a placeholder) and out_data receives out (same shape and dtype, compact
 * CPU arrays).  For constant folding of small tensors and as a test
 * oracle; extern ops are not supported.  0, or -1 with an error. */
int topi_eval(Tensor *out, int ninputs, Tensor **inputs, DLTensor **in_data, DLTensor *out_data);
/* The bytes compile-time evaluation may hold: KILN_EVAL_MEMORY_MB (256 MiB
 * by default); the ONNX importer bounds the constants it builds with it too. */
int64_t topi_eval_budget_bytes(void);

/* ===== templates.c: the table of tunable templates ===== */
/* Templates are rows (struct Template, src/knob/knob.h) of the table in
 * templates.c, beside them; the graph layer reaches them through
 * template_lookup(name). */
struct Template;
/* The template of a task name; NULL + an error listing the known ones. */
struct Target;
const struct Template *template_lookup(const char *name);
/* The template of a task for a record's template key ("direct",
 * "winograd"; NULL: the task's first) that serves t (NULL: any); NULL
 * without an error when none does. */
const struct Template *template_find(const char *name, const char *template_key, const struct Target *t);
int template_count(void);
const struct Template *template_at(int i);
/* Register one more template (tests, bindings): an explicit call, looked
 * up after the built-in ones.  At most 16; -1 + error beyond. */
int template_register(const struct Template *tm);
void template_unregister(const struct Template *tm);

/* ===== x86/: NCHW[x]c computes and tunable templates ===== */
/* Computes take tensors already in the blocked
 * layouts; the packers below make those layouts (the graph layer folds the
 * kernel packing at compile time).  Strides and dilation are {h, w},
 * padding {top, left, bottom, right}. */
struct Template;
struct Target;
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
/* A conv's output rows and columns (*OH, *OW) for an H x W input and a
 * KH x KW kernel; -1 and "<op>: strides and dilation must be positive and
 * padding non-negative" or "<op>: the kernel window is larger than the
 * padded input". */
int x86_conv_out_size(const char *op, int64_t H, int64_t W, int64_t KH, int64_t KW, const int strides[2],
                      const int padding[4], const int dilation[2], int64_t *OH, int64_t *OW);
/* A prefetch knob's distance d ahead (0, none, when cfg lacks the knob);
 * -1 and "<op>: config knob '<knob>' = d, expected a number of <unit>
 * ahead (0: none)" when it is negative. */
int x86_prefetch_distance(const char *op, const struct ConfigEntity *cfg, const char *knob, const char *unit,
                          int64_t *d);
/* Inline every injective, non-output stage of a fused group except the
 * anchor's direct inputs (its padded data, packed kernel) and keep. */
int x86_inline_group(Schedule *s, Tensor *anchor, Stage *keep);
/* The output that carries the anchor's loop structure: the anchor if it
 * is an output, else the last output of the anchor's shape (NULL: none). */
Tensor *x86_main_output(Tensor *anchor, int nout, Tensor **outs);
/* The largest divisor of n that is at most cap (1 if none). */
int64_t x86_largest_divisor(int64_t n, int64_t cap);
/* A conv register block's output columns, at most budget: the widest
 * divisor of OW, or a balanced split with a guarded tail where that is
 * more than four times as wide (a prime width; conv2d.c). */
int64_t x86_conv_block_cols(int64_t OW, int64_t budget);
/* The "tile_ow" split's filter of the conv templates (conv2d_NCHWc,
 * depthwise, group_conv2d): an inner column block of at most 64. */
bool x86_conv_ow_filter(const int64_t *sizes, int n, void *ud);
/* The output-channel block of a fallback config: the largest power of two
 * dividing channels, up to lanes.  Kiln vectorizes powers of two only, so
 * 1000 channels take blocks of 8 (vector code), not of 10 (scalar). */
int64_t x86_channel_block(int64_t channels, int64_t lanes);
/* A root stage: outer axes fused and parallel (as many as give 64
 * iterations; the others serial), the last vectorized when it is a power
 * of two (or split by lanes_hint when that divides it). */
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
/* The same reading a channel-padded input whose first real_ic channels
 * are real (0: all): the reduction leaves the others out. */
Tensor *topi_x86_conv2d_NCHWc_real(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                   const int dilation[2], int64_t real_ic, DType out_dtype);
/* Schedule a fused group anchored by conv (outs: the group's outputs;
 * injective stages between are inlined into the register block). */
int topi_x86_schedule_conv2d_NCHWc(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *conv,
                                   int nout, Tensor **outs);
extern const struct Template topi_x86_conv2d_NCHWc_template;
/* Shared with the other conv templates: the NCHWc padding stage, its
 * schedule, a block axis vectorized (power of two) or unrolled, and the
 * register budget (accumulator vectors of a block). */
Tensor *x86_pad_nchwc(Tensor *data, int pt, int pl, int pb, int pr);
/* A strided 1x1 convolution's input, sampled: [N, C, OH, OW, cb] holding
 * the padded input's rows h * sh and columns w * sw (stage "data_sub"). */
Tensor *x86_subsample_nchwc(Tensor *data, int pt, int pl, int sh, int sw, int64_t OH, int64_t OW);
int x86_schedule_pad(Schedule *s, Tensor *pad);
int x86_vec_or_unroll(const struct Target *t, Stage *st, IterVar *iv, int64_t n);
/* A register block's n columns (x86/dense.c): one vector when n is at
 * most the SIMD width; a multiple of the width is cut into vectors of the
 * width, unrolled, one register each (a single 32-lane vector type goes
 * through memory); else as x86_vec_or_unroll. */
int x86_vec_cols(const struct Target *t, Stage *st, IterVar *x, int64_t n);
/* dense_pack.x86's output tiling, shared with dense_pack_bf16.x86
 * (x86/dense.c): *scc the local accumulator's stage, its first reduction
 * axis split by tk1 into *ko, *ki. */
int x86_dense_pack_tiling(const struct Target *t, Schedule *s, Tensor *c, int nout, Tensor **outs, const int64_t *ty,
                          const int64_t *tx, int64_t bn, int64_t tk1, Stage **so, Stage **scc, IterVar **ko,
                          IterVar **ki);
int64_t x86_reg_budget(const struct Target *t);
/* The fallback tiling of the packed low-precision dense templates
 * (dense_pack_bf16.x86, dense_vnni.x86; x86/dense.c) over K grouped by
 * kgroup lanes of a dot product: bn = the largest power of two up to the
 * vector width dividing N; a register block of ymax rows when M <= ymax,
 * else the largest divisor of M from ymax down to ymin (else ymax and a
 * tail); the group loop unrolled by 4 or 2 where the groups divide; about
 * 16 parallel tasks.  Sets tile_y, tile_x, tile_k and is_fallback. */
void x86_dense_lowp_fallback(const struct Target *t, struct ConfigEntity *cfg, int64_t M, int64_t N, int64_t K,
                             int64_t kgroup, int64_t ymax, int64_t ymin);
struct ConfigSpace;
/* Batch blocking of conv2d_NCHWc.x86 at batch > 1 (x86/conv2d.c): the
 * "tile_n" knob (divisors of N up to 8) and its fallback, the most samples
 * whose block of `block` accumulators each fits the register budget. */
int x86_define_tile_n(struct ConfigSpace *cs, int64_t N);
int64_t x86_batch_block(const struct Target *t, int64_t N, int64_t block);
/* The output-channel chunks (1 or 2) a conv2d_NCHWc 1x1 register block of
 * `block` accumulator vectors spans, in a layer of `chunks` chunks. */
int64_t x86_conv_occ_block(const struct Target *t, int64_t block, int64_t chunks);
struct Conv2DWorkload;
/* The most output positions that share a weight for "prefetch_w" to pay
 * (the 14x14 and 7x7 layers): past it a weight's FMAs hide its load.  One
 * bound for conv2d_NCHWc, group_conv2d_NCHWc, depthwise and int8. */
enum { X86_PREFETCH_W_OUTPUTS = 256 };
/* Whether a conv's weights are shared by at most X86_PREFETCH_W_OUTPUTS
 * outputs a channel and large (>= 256 KiB, or >= 32 KiB at stride 1), so
 * its templates define "prefetch_w" (x86/conv2d.c; conv2d_NCHWc.x86 and
 * group_conv2d_NCHWc.x86). */
bool x86_conv_prefetch_pays(const struct Conv2DWorkload *c);
struct ConfigEntity;
/* Whether a 1x1 conv2d_NCHWc layer with cfg's blocks runs its parallel
 * loop rows first ("occ_inner"): channel-reducing, its input (all
 * samples, in_value_bytes a value) past the L2 and its weights
 * (w_value_bytes a value) within a quarter of it (x86/conv2d.c). */
bool x86_conv_occ_inner_pays(const struct Target *t, const struct ConfigEntity *cfg, const struct Conv2DWorkload *c,
                             int64_t in_value_bytes, int64_t w_value_bytes);
/* "ic_outer" of conv2d_NCHWc.x86 (x86/conv2d_stream.c): whether a layer's
 * space has it (batch 1, a window larger than 1x1, "prefetch_w"'s few
 * outputs a weight, a block's outputs within 32 KiB), the fallback's value
 * (a block's weights past 256 KiB, at least 8 blocks), and the schedule:
 * the output's parallel loop over n and the blocks of chunks (occo, occi
 * inside or NULL; owi the register block's columns, ocb the channel
 * block), the block's whole output computed there, the reduction's
 * input-channel chunks outside its unrolled rows. */
bool x86_conv_has_ic_outer(const struct Target *t, const struct Conv2DWorkload *c);
bool x86_conv_ic_outer_fallback(const struct Target *t, const struct Conv2DWorkload *c);
int x86_conv_schedule_ic_outer(const struct Target *t, Stage *so, Stage *scc, IterVar *n, IterVar *occo, IterVar *occi,
                               IterVar *owi, IterVar *ocb, int64_t reg_n, int64_t oc_bn, bool unroll_kw);
/* "prefetch_w" = d of a conv2d_NCHWc-style register block (x86/conv2d.c;
 * conv2d_NCHWc.x86's and group_conv2d_NCHWc.x86's schedules): each step
 * ricb of the block's input-channel block touches the weights the same
 * step d blocks of `chunks` output chunks ahead will read, so the next
 * block's weights stream in among this one's FMAs; with rows > 1 row
 * blocks (the loop `row`) rereading the block's weights, row r touches
 * only the steps whose index is r modulo the rows.  kernel NULL (or not a
 * placeholder): the knob is only checked.  op names the template in
 * errors. */
int x86_conv_prefetch_w(const char *op, Stage *scc, const struct ConfigEntity *cfg, Tensor *kernel, IterVar *ricb,
                        IterVar *row, int64_t rows, int64_t chunks);
/* The same for any register block whose weights are read in blocks one
 * after another in memory: step is the iterations of ricb a block's
 * weights span (d blocks ahead is d x step iterations of ricb later,
 * the address running on into the next block as row-major arithmetic
 * does); conv2d_NCHWc_winograd.x86's GEMM (x86/winograd.c). */
int x86_prefetch_w_blocks(const char *op, Stage *scc, const struct ConfigEntity *cfg, Tensor *kernel, IterVar *ricb,
                          IterVar *row, int64_t rows, int64_t step);
/* The compute of both: groups = 1 is conv2d_NCHWc (tag "conv2d_NCHWc");
 * groups > 1 is tag "group_conv2d_NCHWc", kernel [OC/oc_bn, (IC/groups)
 * /ic_bn, KH, KW, ic_bn, oc_bn], blocks dividing the channels per group.
 * op names the caller in errors. */
Tensor *x86_conv2d_NCHWc_compute(const char *op, Tensor *data, Tensor *kernel, const int strides[2],
                                 const int padding[4], const int dilation[2], int64_t groups, DType out_dtype);

/* ----- x86/group_conv2d.c: group_conv2d_NCHWc.x86, grouped convolution
 * (not depthwise) in NCHW[x]c with per-group channel blocks (knobs
 * tile_ic, tile_oc over the channels of one group, tile_ow, unroll_kw;
 * scheduled by topi_x86_schedule_conv2d_NCHWc) ----- */

/* data [N, IC/ic_bn, H, W, ic_bn], kernel [OC/oc_bn, (IC/groups)/ic_bn,
 * KH, KW, ic_bn, oc_bn] -> [N, OC/oc_bn, OH, OW, oc_bn], tag
 * "group_conv2d_NCHWc"; ic_bn divides IC/groups, oc_bn OC/groups. */
Tensor *topi_x86_group_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                    const int dilation[2], int64_t groups, DType out_dtype);
/* RegNet-style groups of 24 computed as 32 (zero weights) in full vectors,
 * the real channels cropped in blocks of oc_bn (group_conv2d.c). */
Tensor *topi_x86_group_conv2d_NCHWc_padded(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                           const int dilation[2], int64_t groups, int64_t out_channels, int64_t oc_bn,
                                           DType out_dtype);
/* Groups of fewer output channels than a vector packed side by side
 * (group_pack): data [N, IC/db, H, W, db] with db = L CPG / KPG, kernel
 * [OC/L, CPG/ic_bn, KH, KW, ic_bn, L] -> [N, OC/L, OH, OW, L], tag
 * "group_conv2d_NCHWc_packed" (group_conv2d.c).  blend: two groups a
 * vector read as two broadcasts and a blend (knob pack_blend) instead of
 * a permuted load. */
Tensor *topi_x86_group_conv2d_NCHWc_packed(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                           const int dilation[2], int64_t groups, bool blend, DType out_dtype);
/* Whether cfg reads a packed grouped conv's two groups a vector by two
 * broadcasts and a blend (its pack_blend knob, where the form applies). */
bool topi_x86_group_conv_pack_blend(const struct Target *t, int64_t IC, int64_t OC, int64_t groups,
                                    const struct ConfigEntity *cfg);
/* The paired-group form (group_pair): data NCHW[x]c, kernel [Q P, CPG/ib,
 * KH, KW, ib, L] (two groups in Q = 2 KPG / L chunks, P = ceil(groups / 2)
 * pairs, a last odd pair's second group zero weights) -> the out_channels
 * real channels in blocks of oc_bn (dividing KPG and L; group_conv2d.c). */
Tensor *topi_x86_group_conv2d_NCHWc_pair(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                         const int dilation[2], int64_t groups, int64_t out_channels, int64_t oc_bn,
                                         DType out_dtype);
/* The vector width when cfg computes a grouped conv's groups in pairs of
 * whole vectors (its group_pair knob, where the form applies), else 0. */
int64_t topi_x86_group_conv_paired(const struct Target *t, int64_t OC, int64_t groups, const struct ConfigEntity *cfg);
/* The output channels a group is computed with under cfg (its group_pad
 * knob), or 0 when they are the real ones. */
int64_t topi_x86_group_conv_padded(const struct Target *t, int64_t OC, int64_t groups, const struct ConfigEntity *cfg);
/* The vector width when cfg packs a grouped conv's groups side by side
 * in whole vectors (its group_pack knob, where the form applies), else 0. */
int64_t topi_x86_group_conv_packed(const struct Target *t, int64_t IC, int64_t OC, int64_t groups,
                                   const struct ConfigEntity *cfg);
/* Whether the conv, compiled with cfg, reads its input in place from a
 * tensor in blocks of `block` holding the real channels and up to a block
 * of padding after them (its own input block ic_bn dividing `block`; the
 * repack folds into its padded slab), so alter_layout needs no
 * layout_transform in front. */
bool topi_x86_group_conv_reads_block(int64_t KH, int64_t KW, int64_t ic_bn, int64_t block,
                                     const struct ConfigEntity *cfg);
extern const struct Template topi_x86_group_conv2d_NCHWc_template;

/* ----- winograd.c (all targets) and x86/winograd.c: conv2d_NCHWc_winograd.x86, 3x3 stride-1
 * convolution by Winograd F(m x m, 3 x 3) (knobs tile_ic, tile_oc in 3
 * parts [-1, register channel blocks, oc_bn], tile_p (register tiles of a
 * tile row), tile_rows (tile rows per block; all of them: stages at the
 * root)) ----- */

/* The Cook-Toom matrices of F(m, r) (alpha = m + r - 1): A^T [m, alpha],
 * G [alpha, r], B^T [alpha, alpha], row-major; Y = A^T[(G g) . (B^T d)]
 * is the correlation of d (alpha values) with g (r values). */
int topi_winograd_matrices(int m, int r, double *AT, double *G, double *BT);
/* sum over (i, j) of ci[i] * cj[j] * term(i, j, ud) in type t, skipping
 * zero coefficients (and multiplying by none of +-1); zero when every
 * coefficient is. */
typedef Expr *(*TopiWinogradTerm)(int i, int j, void *ud);
Expr *topi_winograd_sparse_sum(int ni, int nj, const double *ci, const double *cj, TopiWinogradTerm term, void *ud,
                               DType t);
/* the same sum as sum over j of cj[j] * (sum over i of ci[i] * term(i, j)):
 * the inner sums of a column are one expression for every cj, so
 * unrolled transform elements sharing ci share them (a separable
 * transform's first pass) */
Expr *topi_winograd_nested_sum(int ni, int nj, const double *ci, const double *cj, TopiWinogradTerm term, void *ud,
                               DType t);
/* select(a == 0 && b == 0, br[0], select(a == 0 && b == 1, br[1], ...)) of
 * br[a * nb + b]: one branch once a and b are unrolled. */
Expr *topi_winograd_select_2d(Expr *a, Expr *b, int na, int nb, Expr **br);
/* The pieces conv2d_NCHWc_winograd.x86 shares with the bfloat16 Winograd
 * template (x86/winograd_bf16.c): (B^T d B)[e, n] of the tile (th, tw),
 * channel (c, cb) of the padded input pad, in type t; the output stage Y =
 * A^T M A of M [alpha, alpha, N, CO/ob, nH, nW, ob], cropped to OH x OW
 * (attribute tile_size); a workload's tile grid for tile size m (0: the
 * size topi_x86_winograd_tile_size gives), -1 + error for other than a
 * 3x3 stride-1 conv; the space (tile_ic's inner part a multiple of
 * ic_group), fallback (value: the type of U and V; float32 may take the
 * whole register budget) and check. */
struct ConfigSpace;
struct ConfigEntity;
struct Workload;
struct Conv2DWorkload;
Expr *topi_x86_winograd_input_sum(Tensor *pad, int64_t m, const double *BT, int e, int n, Expr *b, Expr *th, Expr *tw,
                                  Expr *c, Expr *cb, DType t);
Tensor *topi_x86_winograd_output(Tensor *M, int64_t m, const double *AT, int64_t OH, int64_t OW, const char *name,
                                 const char *tag);
int topi_x86_winograd_parse(const struct Workload *wl, int64_t m, struct Conv2DWorkload *c, int64_t *nH, int64_t *nW);
int topi_x86_winograd_space(struct ConfigSpace *cs, const struct Conv2DWorkload *c, int64_t nH, int64_t nW,
                            int64_t ic_group);
void topi_x86_winograd_fallback(const struct Target *t, struct ConfigEntity *cfg, const struct Conv2DWorkload *c,
                                int64_t m, int64_t nH, int64_t nW, int64_t ic_group, DType value);
int topi_x86_winograd_check(const struct ConfigEntity *cfg, const struct Workload *wl, const struct Conv2DWorkload *c,
                            int64_t nH, int64_t nW);
/* The tile size m a layer gets: 4, or 2 for outputs under 8 x 8 and
 * where F(4x4)'s transformed kernel does not fit L2 and a sample has few
 * of its tiles (ResNet's 256 @14).  The batch does not count. */
int64_t topi_x86_winograd_tile_size(int64_t IC, int64_t OC, int64_t OH, int64_t OW);
/* Whether an output under 8 x 8 takes Winograd all the same: batch > 1
 * with at least 128 tiles over the batch. */
bool topi_x86_winograd_batch_small(int64_t N, int64_t OH, int64_t OW);
/* Whether the Winograd fallback runs the stages at the root (tile_rows =
 * all the tile rows) for N x IC -> OC at OH x OW on t: the transformed
 * kernel is larger than t's L2, or V and M of the whole batch fit in half
 * its L3 (target_l2_bytes, target_l3_bytes). */
bool topi_x86_winograd_at_root(const struct Target *t, int64_t N, int64_t IC, int64_t OC, int64_t OH, int64_t OW);
/* Whether the float32 Winograd fallback's register block for N x IC -> OC
 * at OH x OW on t holds enough accumulators to pay (a prime tile-column
 * count with few output channels does not): the strategy's rule without
 * records. */
bool topi_x86_winograd_block_pays(const struct Target *t, int64_t N, int64_t IC, int64_t OC, int64_t OH, int64_t OW);
/* OIHW 3x3 kernel -> U = G g G^T [alpha, alpha, O/ob, I, ob] (summed in
 * double; the graph layer folds it at compile time). */
Tensor *topi_x86_winograd_weight_transform(Tensor *kernel, int64_t m, int64_t ob);
/* data [N, IC/ib, H, W, ib], U [alpha, alpha, OC/ob, IC, ob] -> [N, OC/ob,
 * OH, OW, ob], tag "conv2d_NCHWc_winograd" (attribute tile_size), reading
 * the stages "bgemm" (tag winograd_bgemm), "data_pack" (winograd_data_pack)
 * and the zero-padded input. */
Tensor *topi_x86_conv2d_winograd_NCHWc(Tensor *data, Tensor *U, int64_t m, const int padding[4],
                                       DType out_dtype);
int topi_x86_schedule_conv2d_winograd_NCHWc(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg,
                                            Tensor *conv, int nout, Tensor **outs);
extern const struct Template topi_x86_conv2d_winograd_NCHWc_template;

/* ----- x86/depthwise.c: depthwise_conv2d_NCHWc.x86 (knobs tile_ic,
 * tile_oc, tile_ow) ----- */

/* [C * multiplier, 1, KH, KW] -> [OC/oc_bn, 1, KH, KW, 1, oc_bn]. */
Tensor *topi_x86_pack_kernel_depthwise(Tensor *kernel, int64_t oc_bn);
/* data [N, C/ic_bn, H, W, ic_bn], kernel [OC/oc_bn, 1, KH, KW, 1, oc_bn]
 * -> [N, OC/oc_bn, OH, OW, oc_bn], tag "depthwise_conv2d_NCHWc". */
Tensor *topi_x86_depthwise_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2],
                                        const int padding[4], const int dilation[2], DType out_dtype);
int topi_x86_schedule_depthwise_conv2d_NCHWc(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg,
                                             Tensor *conv, int nout, Tensor **outs);
extern const struct Template topi_x86_depthwise_conv2d_NCHWc_template;

/* ----- x86/dense.c: dense_nopack.x86 (tile_y, tile_x, tile_k) and
 * dense_pack.x86 (tile_y, tile_x in 3 parts, tile_k, tile_inner) ----- */

/* data [M, K] x weight [N, K] -> [M, N], tag "dense_nopack"; its lane
 * count is tile_k's inner part (a "dense_partial" [M, N, lanes] stage).
 * bias [N] or NULL (a "broadcast" stage). */
Tensor *topi_x86_dense_nopack(Tensor *data, Tensor *weight, Tensor *bias,
                              const struct ConfigEntity *cfg, DType out_dtype);
int topi_x86_schedule_dense_nopack(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *dense,
                                   int nout, Tensor **outs);
/* [N, K] -> [N/bn, K, bn] (bn = tile_x's inner part). */
Tensor *topi_x86_pack_dense_weight(Tensor *weight, int64_t bn);
/* weight [N, K] (packed inside the function) or prepacked [N/bn, K, bn]
 * -> [M, N], tag "dense_pack". */
Tensor *topi_x86_dense_pack(Tensor *data, Tensor *weight, Tensor *bias,
                            const struct ConfigEntity *cfg, DType out_dtype);
int topi_x86_schedule_dense_pack(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *dense,
                                 int nout, Tensor **outs);
/* ----- x86/batch_matmul.c: batch_matmul.x86 (knobs tile_y, tile_x,
 * tile_k) ----- */

/* a [b..., M, K] x b [b..., K, N] -> [b..., M, N] (one rank from 3 to 8,
 * equal batch dimensions), tag "batch_matmul_x86". */
Tensor *topi_x86_batch_matmul(Tensor *a, Tensor *b, DType out_dtype);
int topi_x86_schedule_batch_matmul(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *c,
                                   int nout, Tensor **outs);
extern const struct Template topi_x86_batch_matmul_template;

/* ----- x86/dense_bf16.c: dense_pack_bf16.x86 (tile_y, tile_x in 3 parts,
 * tile_k over the K pairs; docs/bf16.md) ----- */

/* weight float32 [N, K] -> bfloat16 pairs along K, uint32 [N/bn, ceil(K/2), bn] */
Tensor *topi_x86_pack_dense_weight_bf16(Tensor *weight, int64_t bn);
/* data float32 [M, K] x that packed weight -> float32 [M, N], tag
 * "dense_pack_bf16" (fp32 accumulation); the data is rounded to bfloat16
 * pairs in a "data_bf16" stage (tag "bf16_pack"); bias [N] or NULL. */
Tensor *topi_x86_dense_pack_bf16(Tensor *data, Tensor *weight, Tensor *bias, bool fma);
/* The config's "bf16_dot" knob: 1 "fma" (float32 activations times the
 * weight's halves widened, FMAs: no data_bf16 stage, two reductions k, j),
 * 0 "vdpbf16ps", -1 + error. */
int topi_x86_dense_bf16_dot_is_fma(const struct ConfigEntity *cfg);
/* The bf16_dot form the bfloat16 templates' fallbacks take on t: "vdpbf16ps"
 * where its CPU's VDPBF16PS out-runs the FMAs (target_bf16_dot_faster),
 * else "fma". */
const char *topi_x86_bf16_dot_fallback(const struct Target *t);
int topi_x86_schedule_dense_pack_bf16(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *dense,
                                      int nout, Tensor **outs);
extern const struct Template topi_x86_dense_pack_bf16_template;

/* ----- x86/conv2d_bf16.c: conv2d_NCHWc_bf16.x86 (conv2d_NCHWc.x86's knobs
 * and schedule, tile_ic even; docs/bf16.md) ----- */

/* kernel float32 OIHW -> bfloat16 pairs of input channels, uint32
 * [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/2, oc_bn] (ic_bn even) */
Tensor *topi_x86_pack_kernel_bf16(Tensor *kernel, int64_t ic_bn, int64_t oc_bn);
/* data float32 NCHW[ic_bn]c x that kernel -> float32 NCHW[oc_bn]c, tag
 * "conv2d_NCHWc_bf16"; vdpbf16ps form: the input is padded and rounded to
 * bfloat16 pairs in a "data_bf16" stage (5-D, ic_bn/2 words a block) */
Tensor *topi_x86_conv2d_NCHWc_bf16(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                   const int dilation[2], bool fma);
/* The config's "bf16_dot" knob: 1 "fma" (float32 input, the kernel's
 * halves widened: a float32 "data_pad" stage), 0 "vdpbf16ps", -1 + error. */
int topi_x86_conv_bf16_dot_is_fma(const struct ConfigEntity *cfg);
/* A float32 layer's config (conv2d_NCHWc.x86's, the same blocks) made the
 * bfloat16 layer's: bf16_dot for t's CPU and, where cfg has none or
 * keep_occ_inner is false (cfg is float32's fallback, whose occ_inner
 * counts float32 bytes), occ_inner by the fallback's rule for wl
 * (conv2d_NCHWc_bf16.x86's workload); a float32 "ic_outer" becomes false
 * (the bfloat16 nest is TVM's).  0, or -1 + error. */
int topi_x86_conv_bf16_from_float32(const struct Target *t, struct ConfigEntity *cfg, const struct Workload *wl,
                                    bool keep_occ_inner);
extern const struct Template topi_x86_conv2d_NCHWc_bf16_template;

/* ----- x86/winograd_bf16.c: conv2d_NCHWc_winograd_bf16.x86, Winograd
 * F(2 x 2, 3 x 3) with its GEMM over bfloat16 pairs of input channels
 * (conv2d_NCHWc_winograd.x86's knobs, tile_ic even; docs/bf16.md) ----- */

/* kernel float32 OIHW 3x3 -> G g G^T rounded to bfloat16 pairs of input
 * channels (c, c + ib/2 of each block of ib), uint32 [4, 4, O/ob, I/2, ob] */
Tensor *topi_x86_winograd_weight_transform_bf16(Tensor *kernel, int64_t ib, int64_t ob);
/* data float32 [N, IC/ib, H, W, ib] (ib even), that kernel -> float32
 * [N, OC/ob, OH, OW, ob], tag "conv2d_NCHWc_winograd_bf16" (the stages of
 * topi_x86_conv2d_winograd_NCHWc, data_pack in uint32 pairs) */
Tensor *topi_x86_conv2d_winograd_NCHWc_bf16(Tensor *data, Tensor *U, const int padding[4]);
extern const struct Template topi_x86_conv2d_winograd_NCHWc_bf16_template;

/* ----- x86/dense_int8.c: dense_vnni.x86 (tile_y, tile_x in 3 parts,
 * tile_k over the groups of 4 K values; docs/int8.md) ----- */

/* weight int8 [N, K] -> quadruples along K, uint32 [N/bn, ceil(K/4), bn] */
Tensor *topi_x86_pack_dense_weight_int8(Tensor *weight, int64_t bn);
/* data uint8 [M, K] x that packed weight -> int32 accumulators (tag
 * "dense_vnni"; the data packed in a "data_u8x4" stage, tag "int8_pack"),
 * returned requantized: float32 (acc - comp[x]) * scale[x] (+ bias[x]),
 * comp int32 [N] (the activations' zero point times the weight's row
 * sums), scale float32 [N], bias float32 [N] or NULL. */
Tensor *topi_x86_dense_vnni(Tensor *data, Tensor *weight, Tensor *comp, Tensor *scale, Tensor *bias);
int topi_x86_schedule_dense_vnni(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *dense,
                                 int nout, Tensor **outs);
extern const struct Template topi_x86_dense_vnni_template;

/* ----- x86/conv2d_int8.c: conv2d_NCHWc_int8.x86 (conv2d_NCHWc.x86's knobs
 * and schedule, tile_ic a multiple of 4; docs/int8.md) ----- */

/* conv2d_NCHWc.x86's space (x86/conv2d.c) keeping only input blocks that
 * are multiples of ic_multiple (1: all of them) */
struct Workload;
int x86_conv_space(const struct Target *t, struct ConfigSpace *cs, const struct Workload *wl, int64_t ic_multiple);
/* The low-precision convolutions group g input channels into one word
 * (bfloat16 pairs, int8 quadruples); what names them ("bfloat16", "int8").
 * _check: -1 + error when the config's input block is not a multiple of g;
 * _fallback: conv2d_NCHWc.x86's fallback block replaced, when it is not a
 * multiple of g, by the largest multiple of g that divides the channels
 * and is at most the output block (at least g); -1 + error when the
 * channels are not a multiple of g (the layer stays float32). */
struct ConfigEntity;
int x86_conv_ic_group_check(const struct ConfigEntity *cfg, const struct Workload *wl, int64_t g, const char *what);
int x86_conv_ic_group_fallback(struct ConfigEntity *cfg, const struct Workload *wl, int64_t g, const char *what);
/* kernel int8 OIHW -> quadruples of input channels, uint32 [OC/oc_bn,
 * IC/ic_bn, KH, KW, ic_bn/4, oc_bn] (ic_bn a multiple of 4) */
Tensor *topi_x86_pack_kernel_int8(Tensor *kernel, int64_t ic_bn, int64_t oc_bn);
/* data uint8 NCHW[ic_bn]c x that kernel -> int32 accumulators (tag
 * "conv2d_NCHWc_int8"; the input packed to quadruples and padded with
 * zero_point in a "data_u8x4" stage), returned requantized: float32 NCHW
 * [oc_bn]c (acc - comp[o]) * scale[o], comp int32 [OC] (zero_point times
 * the kernel's sums per output channel), scale float32 [OC]. */
Tensor *topi_x86_conv2d_NCHWc_int8(Tensor *data, Tensor *kernel, Tensor *comp, Tensor *scale, const int strides[2],
                                   const int padding[4], const int dilation[2], int zero_point);
int topi_x86_schedule_conv2d_NCHWc_int8(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *conv,
                                        int nout, Tensor **outs);
extern const struct Template topi_x86_conv2d_NCHWc_int8_template;

extern const struct Template topi_x86_dense_nopack_template;
extern const struct Template topi_x86_dense_pack_template;


/* ===== cuda/: TVM 0.6's CUDA templates (TopHub's tasks), key "gpu" ===== */
struct ConfigSpace;
struct Workload;

/* ----- cuda/util.c: what the templates share ----- */
int cuda_check_split(const struct ConfigEntity *cfg, const char *knob, int nparts, int64_t extent, const char *what);
/* TVM's SplitEntity.apply: out[0..nparts-1], outermost first. */
int cuda_apply_split(Stage *st, IterVar *ax, const struct ConfigEntity *cfg, const char *knob, int nparts,
                     IterVar **out);
/* TVM's GPU tiling of naxes (2 or 3) output axes, each already split in
 * four (block, vthread, thread, inner): reorder to [scope,] all blocks,
 * all vthreads, all threads, all inners, and bind level 0 to
 * blockIdx.{z,y,x}, level 1 to vthread, level 2 to threadIdx.{z,y,x}, the
 * last axis to x.  scope may be NULL (no unroll scope). */
int cuda_tile_bind(Stage *st, IterVar *scope, int naxes, IterVar *const *const axes[]);
/* Part `part` of a split knob ([0] is -1); -1 + error. */
int64_t cuda_split_part(const struct ConfigEntity *cfg, const char *knob, int part);
/* Spread a shared fetch over threads {z, y, x}: fuse its axes, then
 * nparts splits from the outside (outer_first, conv2d direct) or factor
 * splits from the inside (depthwise, Winograd). */
int cuda_coop_fetch(Schedule *s, Tensor *load, const int64_t threads[3], bool outer_first);
/* Inline every compute stage of the group but the anchor, the output and
 * keep[]; *output is the stage to tile and bind, *ol the local
 * accumulator (a local cache of the anchor, or the anchor made local when
 * an epilogue follows). */
int cuda_group_epilogue(Schedule *s, Tensor *anchor, Tensor *out, int nkeep, Tensor **keep, Tensor **output,
                        Tensor **ol);
int cuda_unroll_pragmas(Stage *st, IterVar *scope, const struct ConfigEntity *cfg);
int cuda_check_other(const struct ConfigEntity *cfg, const char *knob, int n, const int64_t *allowed);
/* auto_unroll_max_step [0, mid, 1500] and unroll_explicit [0, 1]. */
int cuda_define_unroll_knobs(struct ConfigSpace *cs, int64_t mid);
int cuda_check_unroll_knobs(const struct ConfigEntity *cfg, int64_t mid);
/* The product of the thread parts ([2]) of split knobs. */
int64_t cuda_threads_of(const struct ConfigEntity *cfg, int n, const char *const *knobs);
int cuda_check_threads(const struct Target *t, const struct ConfigEntity *cfg, int n, const char *const *knobs);
int64_t cuda_divisor_at_most(int64_t n, int64_t cap);
/* The thread budget of fallback configs: the target's limit, at most 256. */
int64_t cuda_max_threads(const struct Target *t);

/* ----- cuda/conv2d_direct.c, depthwise.c, dense.c, winograd.c ----- */
int cuda_conv_placeholders(const struct Target *t, const struct Workload *wl, const struct ConfigEntity *cfg, int *nin,
                           Tensor ***in);
Tensor *cuda_conv_compute(const struct Target *t, const struct Workload *wl, const struct ConfigEntity *cfg, int nin,
                          Tensor **in);
int topi_cuda_schedule_conv2d_direct(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *conv,
                                     int nout, Tensor **outs);
int topi_cuda_schedule_depthwise_conv2d(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg,
                                        Tensor *conv, int nout, Tensor **outs);
/* data [M, K] x weight [N, K], one reduction, tag "dense". */
Tensor *topi_cuda_dense(Tensor *data, Tensor *weight);
int topi_cuda_schedule_dense(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg, Tensor *c, int nout,
                             Tensor **outs);
int64_t topi_cuda_winograd_tile_size(int64_t in_height);
int topi_cuda_schedule_conv2d_winograd(const struct Target *t, Schedule *s, const struct ConfigEntity *cfg,
                                       Tensor *conv, int nout, Tensor **outs);
extern const struct Template topi_cuda_conv2d_direct_template;
extern const struct Template topi_cuda_conv2d_winograd_template;
extern const struct Template topi_cuda_depthwise_conv2d_template;
extern const struct Template topi_cuda_dense_template;

#endif
