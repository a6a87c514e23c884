/*
 * ops.h - the handlers that map ONNX operators to Kiln graph calls, one
 * file per domain, and the table (table.c) that names them.
 *
 * A handler reads its node's inputs and attributes through the importer
 * (import.h), builds graph calls and sets the node's outputs; it returns 0
 * or -1 with an error from imp_error, which names the node, its op and
 * the opset.  By the time a handler runs, the importer has checked the
 * node against its row of the table: the number of inputs is within the
 * row's bounds and every input named '' is one the row marks optional,
 * so imp_input(im, i) is non-NULL for every required input i.  Version
 * differences inside a row (attributes that became inputs, changed
 * defaults) are decided with imp_opset.
 *
 * Shapes are static.  Ops Kiln has no single graph op for are lowered at
 * import to a small graph of existing calls, and masks that depend only on
 * shapes (Trilu's triangle, CumSum's prefix, TopK's tie order, Einsum's
 * diagonals) are constants.  Ops whose output shape depends on data
 * (NonZero, Compress, Unique, NonMaxSuppression) become data-dependent host
 * ops when the deciding input is known only at run time (datadep.c).  Every building block a handler shares
 * with another file is an imp_ function of import_helpers.c, so there is one
 * reshape, one transpose, one cast.
 *
 * Files (each opens with the essay of its domain):
 *   elementwise.c  unary, binary and variadic ops, casts, clips, and the
 *                  elementwise compositions (IsInf, Shrink, Hardmax, OneHot)
 *   tensor.c       shapes and data movement
 *   reduce.c       reductions, with axes known at compile or at run time
 *   shape_mask.c   Trilu, CumSum, EyeLike, CenterCropPad: masks from shapes
 *   nn.c           convolution, pooling (and MaxPool's indices), softmax,
 *                  dropout, CausalConvWithState, DeformConv
 *   normalize.c    batch, instance, layer, LRN, Lp and MVN normalization
 *   linalg.c       Gemm, MatMul, Einsum, Det
 *   index.c        gathers, scatters, TopK and data-dependent selections
 *                  whose deciding input is a constant
 *   datadep.c      NonZero and Compress over data known at run time,
 *                  Unique, NonMaxSuppression: ops whose output size the
 *                  data decides, run by the runtime after which the
 *                  executor binds the size
 *   image.c        Resize (and tf_crop_and_resize), GridSample, RoiAlign,
 *                  AffineGrid, Col2Im
 *   recurrent.c    RNN, GRU, LSTM unrolled over the sequence
 *   quantize.c     QuantizeLinear, integer and QLinear ops
 *   lowp.c         bfloat16, float8, float4, int4/int2 carried in wider
 *                  types: their conversions
 *   control.c      If, Loop, Scan with a static schedule
 *   signal.c       windows, the mel matrix, DFT, STFT
 *   sequence.c     sequences as compile-time lists
 *   text.c         TfIdfVectorizer
 *   bitcast.c      BitCast, computed exactly from values
 *   random.c       RandomUniform/Normal(Like), Bernoulli, Multinomial from
 *                  a counter-based hash
 *   training.c     losses and the ai.onnx.preview.training optimizers
 *   transformer.c  attention, rotary embedding, RMS/group/skip layer
 *                  normalization, GELU-family activations (ai.onnx and
 *                  com.microsoft)
 *   runtime_value.c  Slice, Split, Pad, CenterCropPad and Range whose offsets are values given at
 *                  run time, read by the kernel; a prefix of a count
 *                  given at run time (TopK's k)
 *   table.c        the table: op, opset versions, handler, input arity
 */
#ifndef KILN_FRONTEND_ONNX_OPS_H
#define KILN_FRONTEND_ONNX_OPS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../import.h"

#define MAXD GRAPH_MAX_DIMS

/* An ONNX op name and the graph op it maps to. */
typedef struct OpMap {
  const char *onnx, *kiln;
} OpMap;

static inline const OnnxNode *N(Importer *im) { return imp_node(im); }
static inline GNode *in0(Importer *im) { return imp_input(im, 0); }
/* tensor.c: axes from the attribute (before from_opset) or the optional
 * input; *present says whether either was given.  The count, -1 + error. */
int onnx_read_axes(Importer *im, int input, int from_opset, int64_t *axes, bool *present);
/* reduce.c: axes given at run time as a 1-D integer graph input: mask[d] a
 * postfix condition (0 or 1) that dimension d is named, axes[] the
 * representative values; the count, -2 when the input is not such an
 * input, -1 + error. */
int onnx_runtime_axes(Importer *im, int input, GNode *x, int r, int64_t *axes, const char **mask);
/* reduce.c: y (dimensions n[0..r)) reshaped without the dimensions mask[]
 * selects; -1 (an error naming the node) where the condition valid is 0. */
GNode *onnx_drop_masked(Importer *im, GNode *y, int r, const int64_t *n, const char **mask, int k,
                        const int64_t *axes, const char *valid);
/* runtime_value.c: -2 when no operand is a run-time value */
int onnx_slice_runtime(Importer *im);
int onnx_split_runtime(Importer *im);
int onnx_split_runtime_parts(Importer *im, GNode *x, GNode *sz, int axis, GNode **parts);
int onnx_pad_runtime(Importer *im);
int onnx_center_crop_pad_runtime(Importer *im);
int onnx_range_runtime(Importer *im);
/* Resize/Upsample whose scales (float32) or sizes (int64, with the
 * keep_aspect_ratio_policy policy) are the graph input val, element i
 * for axis axes[i] */
/* MaxUnpool's result y (the unpooled shape) padded at the end to the
 * output_shape given at run time by the graph input osv */
int onnx_unpool_pad_runtime(Importer *im, GNode *y, GNode *osv);
/* AffineGrid whose size is a graph input */
int onnx_affine_grid_runtime(Importer *im);
/* OneHot whose depth (float or integer) or values are graph inputs */
int onnx_one_hot_runtime(Importer *im);
int onnx_resize_runtime(Importer *im, GNode *x, GNode *val, bool sizes, int na, const int64_t *axes, const char *policy);
/* Input i as a count given at run time (a graph input of one int
 * element: TopK's k): its value symbol in [lo, hi] (representative value
 * hi) in *out; -2 when it is not such an input. */
int onnx_runtime_count(Importer *im, int i, int64_t lo, int64_t hi, GSym **out);
/* y's first k entries along axis, k given at run time. */
GNode *onnx_runtime_prefix(Importer *im, GNode *y, int axis, const GSym *k);

static inline int out0(Importer *im, GNode *v) { return imp_set_output(im, 0, v); }
static inline GNode *bin(Importer *im, const char *op, GNode *a, GNode *b) { return imp_call2(im, op, a, b); }
static inline GNode *un(Importer *im, const char *op, GNode *a) { return imp_call1(im, op, a); }
/* x [M, K] times w [N, K] transposed: [M, N]. */
static inline GNode *dense(Importer *im, GNode *x, GNode *w) { return imp_call2(im, "nn.dense", x, w); }

/* The handlers of each file; a handler named in lower case serves
 * several ONNX ops (onnx_h_unary: Relu, Exp, ...). */
#define ONNX_ELEMENTWISE_HANDLERS(X)                                                                 \
  X(unary) X(attr_unary) X(binary) X(mod) X(bitshift) X(variadic) X(where) X(cast) X(castlike) X(clip) \
  X(IsInf) X(Shrink) X(Hardmax) X(OneHot)
#define ONNX_TENSOR_HANDLERS(X)                                                                         \
  X(constant) X(shape) X(size) X(reshape) X(flatten) X(transpose) X(squeeze) X(unsqueeze) X(concat) X(split) \
  X(slice) X(gather) X(pad) X(tile) X(expand) X(constant_of_shape) X(range) X(depth_space) X(reduce)        \
  X(argreduce) X(Trilu) X(CumSum) X(EyeLike) X(CenterCropPad)
#define ONNX_NN_HANDLERS(X) X(conv) X(conv_transpose) X(pool) X(global_pool) X(dropout) X(softmax) X(CausalConvWithState) X(DeformConv)
#define ONNX_NORMALIZE_HANDLERS(X)                                                                  \
  X(batchnorm) X(instancenorm) X(layernorm) X(lrn) X(BatchNormTraining) X(LayerNormStats)             \
  X(MeanVarianceNormalization) X(LpNormalization) X(GlobalLpPool)
#define ONNX_LINALG_HANDLERS(X) X(gemm) X(matmul) X(Einsum) X(Det)
#define ONNX_INDEX_HANDLERS(X)                                                                       \
  X(ReverseSequence) X(Compress) X(NonZero) X(TopK) X(GatherND) X(ScatterElements) X(ScatterND) X(MaxUnpool) \
  X(TensorScatter)
#define ONNX_DATADEP_HANDLERS(X) X(Unique) X(NonMaxSuppression)
#define ONNX_IMAGE_HANDLERS(X) X(resize) X(GridSample) X(RoiAlign) X(AffineGrid) X(Col2Im) X(ImageDecoder)
#define ONNX_RECURRENT_HANDLERS(X) X(RNN) X(GRU) X(LSTM)
#define ONNX_QUANTIZE_HANDLERS(X)                                                                    \
  X(QuantizeLinear) X(DequantizeLinear) X(DynamicQuantizeLinear) X(MatMulInteger) X(ConvInteger)       \
  X(QLinearMatMul) X(QLinearConv)
#define ONNX_CONTROL_HANDLERS(X) X(If) X(Loop) X(Scan)
#define ONNX_SIGNAL_HANDLERS(X) X(HannWindow) X(HammingWindow) X(BlackmanWindow) X(MelWeightMatrix) X(DFT) X(STFT)
#define ONNX_SEQUENCE_HANDLERS(X)                                                                    \
  X(SequenceEmpty) X(SequenceConstruct) X(SequenceInsert) X(SequenceErase) X(SequenceAt) X(SequenceLength) \
  X(SplitToSequence) X(ConcatFromSequence) X(OptionalHasElement) X(OptionalGetElement) X(Optional) X(Identity) X(SequenceMap)
#define ONNX_TEXT_HANDLERS(X) X(TfIdfVectorizer)
#define ONNX_ML_HANDLERS(X) X(Binarizer) X(ArrayFeatureExtractor) X(LabelEncoder) X(TreeEnsemble)
#define ONNX_STRING_HANDLERS(X) X(StringConcat) X(StringNormalizer) X(RegexFullMatch) X(StringSplit)
#define ONNX_RANDOM_HANDLERS(X) X(random) X(Bernoulli) X(Multinomial)
#define ONNX_BITCAST_HANDLERS(X) X(BitCast)
#define ONNX_TRAINING_HANDLERS(X) X(NegativeLogLikelihoodLoss) X(SoftmaxCrossEntropyLoss) X(Adagrad) X(Adam) X(Momentum) X(Gradient)

#define ONNX_TRANSFORMER_HANDLERS(X)                                                                 \
  X(Gelu) X(Mish) X(Swish) X(RMSNormalization) X(SimplifiedLayerNormalization) X(SkipLayerNormalization)  \
  X(GroupNormalization) X(RotaryEmbedding) X(Attention) X(MultiHeadAttention) X(MsAttention) X(SwiGLU) X(LinearAttention) X(FlexAttention)

#define ONNX_DECLARE_HANDLER(n) int onnx_h_##n(Importer *im);
ONNX_ELEMENTWISE_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_TENSOR_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_NN_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_NORMALIZE_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_LINALG_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_INDEX_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_DATADEP_HANDLERS(ONNX_DECLARE_HANDLER)
/* NonZero and Compress over a condition known only at run time (datadep.c). */
int onnx_dd_nonzero(Importer *im);
int onnx_dd_compress(Importer *im);
/* datadep.c's building blocks for other data-dependent host ops (the
 * string operators): a size symbol for output `out` of the node, bounds
 * [1, hi]; a call whose dimension rdim the data decides (the symbol s,
 * at most cap), dims[d] the other dimensions' expressions (NULL: shape[d]). */
GSym *onnx_dd_size_sym(Importer *im, int out, int64_t hi);
GNode *onnx_dd_call(Importer *im, const char *op, int nargs, GNode **args, DType dt, int nd, int64_t *shape,
                    Expr **dims, int rdim, GSym *s, Expr *cap, const char *host_attrs);
/* ... where cap is a first guess the executor grows (grow-and-retry) */
GNode *onnx_dd_call_grow(Importer *im, const char *op, int nargs, GNode **args, DType dt, int nd, int64_t *shape,
                         Expr **dims, int rdim, GSym *s, Expr *cap, const char *host_attrs, bool grow);
ONNX_IMAGE_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_RECURRENT_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_QUANTIZE_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_CONTROL_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_SIGNAL_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_SEQUENCE_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_TEXT_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_ML_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_STRING_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_RANDOM_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_BITCAST_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_TRAINING_HANDLERS(ONNX_DECLARE_HANDLER)
ONNX_TRANSFORMER_HANDLERS(ONNX_DECLARE_HANDLER)
#undef ONNX_DECLARE_HANDLER

/* strings.c: Equal of two string tensors (onnx_h_binary's case);
 * onnx_string_cast: Cast between strings and numbers (either way; a plain
 * cast when neither side is a string). */
int onnx_string_equal(Importer *im, GNode *a, GNode *b);
GNode *onnx_string_cast(Importer *im, GNode *x, DType to);

/* lowp.c: the low-precision types (ONNX data type codes; 0 is "a plain
 * Kiln value").  lowp_convert: x carrying from cast to the carried type
 * to, or to to_t when to is 0 (saturate: float8 overflow clamps);
 * lowp_decode: a carried value as float32; lowp_int_range: the range of
 * int4/uint4/int2/uint2 (false for other codes); lowp_is_float: bfloat16,
 * float8 or float4. */
GNode *lowp_convert(Importer *im, GNode *x, int from, int to, DType to_t, bool saturate);
/* lowp_convert with Cast's round_mode for float8 E8M0 targets (0 down,
 * 1 up, 2 nearest: lowp_e8m0_round_mode of the attribute; -1 unknown). */
GNode *lowp_convert_rounding(Importer *im, GNode *x, int from, int to, DType to_t, bool saturate, int round_mode);
int lowp_e8m0_round_mode(const char *s);
GNode *lowp_decode(Importer *im, GNode *x, int code);
GNode *lowp_encode_float(Importer *im, GNode *x, int code, bool saturate);
bool lowp_int_range(int code, int *lo, int *hi);
bool lowp_is_float(int code);
/* random.c: a uniform float32 in [0, 1) per element of x's shape, keyed
 * by the current node (its seed attribute, or its name). */
GNode *onnx_random_uniform_like(Importer *im, GNode *x);
/* bfloat16 arithmetic in float32 around a handler (see lowp.c). */
GNode **lowp_widen(Importer *im);
void lowp_restore(Importer *im, GNode **saved);
int lowp_narrow(Importer *im);

/* nn.c: Conv of x and w (+ bias b, or NULL) with the current node's
 * attributes (ConvInteger and QLinearConv reuse it); NULL + error. */
GNode *onnx_conv(Importer *im, GNode *x, GNode *w, GNode *b);
/* nn.c: MaxPool's Indices output for x (NCHW) and the window (k, s, d,
 * pads begin/end per spatial axis); -1 + error. */
int onnx_maxpool_indices(Importer *im, GNode *x, const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb,
                         const int64_t *pe, bool ceil_mode, GNode **out);
/* image.c: Resize with coordinate_transformation_mode tf_crop_and_resize
 * to size (the roi is input 1). */
int onnx_resize_crop(Importer *im, GNode *x, const int64_t *size);

#endif
