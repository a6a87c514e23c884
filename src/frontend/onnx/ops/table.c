/*
 * table.c - the ONNX operators Kiln maps: one row per op and version
 * range, naming the handler and the inputs the op takes.
 *
 * Rows are sorted by op name, then by version.  A row describes the ONNX
 * versions of an op from `since` to `until` (both ONNX version numbers of
 * the op, from onnx.defs); a new row starts where ONNX changed the op's
 * inputs (Clip's min and max became inputs at 11, Reshape's shape at 5),
 * so the arity the importer checks is the one of the node's version.
 * `until` is the newest version whose changes Kiln implements: a version
 * after it that changed only the data types the op allows needs no row
 * (onnx_schema.h), any other is refused with an error that names the op,
 * its version and the versions the rows cover.  Raise `until` (or add a
 * row) only with the handler changes and a test of the new version.  The
 * handlers test imp_opset for the details that change inside a row.
 *
 * The arity columns follow ONNX's operator schemas (onnx.defs); O(i) marks
 * input i optional (it may be given as '').  Where ONNX Runtime accepts
 * more than the schema (Resize-11 with an empty roi or scales name), the
 * row says so and the handler copes.
 *
 * An ONNX op's attributes per version come from onnx_schema.c (the
 * importer checks every node against them).  Ops ONNX does not define
 * carry their list in the last column: ONNX Runtime's, as its operator
 * schemas give them (onnxruntime 1.32,
 * onnxruntime.capi.onnxruntime_pybind11_state.get_all_operator_schema()).
 * A unit test (onnx.versions) checks that every such row has one.
 */
#include "ops.h"

#define O(i) (1u << (i))
#define V ONNX_VARIADIC
#define TRAINING "ai.onnx.preview.training"
#define PREVIEW "ai.onnx.preview"
#define ML "ai.onnx.ml"
#define MS "com.microsoft" /* ONNX Runtime's contrib operators */

/* domain, op, since, until, handler, min inputs, max inputs, optional inputs */
static const OnnxOpEntry table[] = {
    {"", "Abs", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "Acos", 7, 7, onnx_h_unary, 1, 1, 0},
    {"", "Acosh", 9, 9, onnx_h_unary, 1, 1, 0},
    {TRAINING, "Adagrad", 1, 1, onnx_h_Adagrad, 3, V, 0},
    {TRAINING, "Adam", 1, 1, onnx_h_Adam, 3, V, 0},
    {"", "Add", 1, 14, onnx_h_binary, 2, 2, 0},
    {"", "AffineGrid", 20, 20, onnx_h_AffineGrid, 2, 2, 0},
    {"", "And", 1, 7, onnx_h_binary, 2, 2, 0},
    {ML, "ArrayFeatureExtractor", 1, 1, onnx_h_ArrayFeatureExtractor, 2, 2, 0},
    {"", "ArgMax", 1, 13, onnx_h_argreduce, 1, 1, 0},
    {"", "ArgMin", 1, 13, onnx_h_argreduce, 1, 1, 0},
    {"", "Asin", 7, 7, onnx_h_unary, 1, 1, 0},
    {"", "Asinh", 9, 9, onnx_h_unary, 1, 1, 0},
    {"", "Atan", 7, 7, onnx_h_unary, 1, 1, 0},
    {"", "Atanh", 9, 9, onnx_h_unary, 1, 1, 0},
    {"", "Attention", 23, 23, onnx_h_Attention, 3, 6, O(3) | O(4) | O(5)},
    {"", "Attention", 24, 25, onnx_h_Attention, 3, 7, O(3) | O(4) | O(5) | O(6)},
    {MS, "Attention", 1, 1, onnx_h_MsAttention, 2, 10, O(2) | O(3) | O(4) | O(5) | O(6) | O(7) | O(8) | O(9)},
    {"", "AveragePool", 1, 22, onnx_h_pool, 1, 1, 0},
    {"", "BatchNormalization", 1, 15, onnx_h_batchnorm, 5, 5, 0},
    {"", "Bernoulli", 15, 15, onnx_h_Bernoulli, 1, 1, 0},
    {ML, "Binarizer", 1, 1, onnx_h_Binarizer, 1, 1, 0},
    {MS, "BiasGelu", 1, 1, onnx_h_Gelu, 2, 2, 0},
    {"", "BitCast", 26, 26, onnx_h_BitCast, 1, 1, 0},
    {"", "BitShift", 11, 28, onnx_h_bitshift, 2, 2, 0},
    {"", "BitwiseAnd", 18, 18, onnx_h_binary, 2, 2, 0},
    {"", "BitwiseNot", 18, 18, onnx_h_unary, 1, 1, 0},
    {"", "BitwiseOr", 18, 18, onnx_h_binary, 2, 2, 0},
    {"", "BitwiseXor", 18, 18, onnx_h_binary, 2, 2, 0},
    {"", "BlackmanWindow", 17, 17, onnx_h_BlackmanWindow, 1, 1, 0},
    {"", "Cast", 1, 24, onnx_h_cast, 1, 1, 0},
    {"", "CastLike", 15, 24, onnx_h_castlike, 2, 2, 0},
    {"", "CausalConvWithState", 27, 27, onnx_h_CausalConvWithState, 2, 4, O(2) | O(3)},
    {"", "Ceil", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "Celu", 12, 12, onnx_h_attr_unary, 1, 1, 0},
    {"", "CenterCropPad", 18, 18, onnx_h_CenterCropPad, 2, 2, 0},
    {"", "Clip", 1, 6, onnx_h_clip, 1, 1, 0},
    {"", "Clip", 11, 13, onnx_h_clip, 1, 3, O(1) | O(2)},
    {"", "Col2Im", 18, 18, onnx_h_Col2Im, 3, 3, 0},
    {"", "Compress", 9, 11, onnx_h_Compress, 2, 2, 0},
    {"", "Concat", 1, 13, onnx_h_concat, 1, V, 0},
    {"", "ConcatFromSequence", 11, 11, onnx_h_ConcatFromSequence, 1, 1, 0},
    {"", "Constant", 1, 13, onnx_h_constant, 0, 0, 0},
    {"", "ConstantOfShape", 9, 9, onnx_h_constant_of_shape, 1, 1, 0},
    {"", "Conv", 1, 11, onnx_h_conv, 2, 3, O(2)},
    {"", "ConvInteger", 10, 10, onnx_h_ConvInteger, 2, 4, O(2) | O(3)},
    {"", "ConvTranspose", 1, 11, onnx_h_conv_transpose, 2, 3, O(2)},
    {"", "Cos", 7, 7, onnx_h_unary, 1, 1, 0},
    {"", "Cosh", 9, 9, onnx_h_unary, 1, 1, 0},
    {"", "CumProd", 26, 26, onnx_h_CumSum, 2, 2, 0},
    {"", "CumSum", 11, 14, onnx_h_CumSum, 2, 2, 0},
    {"", "DeformConv", 19, 19, onnx_h_DeformConv, 3, 5, O(3) | O(4)},
    {"", "DepthToSpace", 1, 13, onnx_h_depth_space, 1, 1, 0},
    {"", "DequantizeLinear", 10, 25, onnx_h_DequantizeLinear, 2, 3, O(2)},
    {"", "Det", 11, 11, onnx_h_Det, 1, 1, 0},
    {"", "DFT", 17, 17, onnx_h_DFT, 1, 2, O(1)},
    {"", "DFT", 20, 20, onnx_h_DFT, 1, 3, O(1) | O(2)},
    {"", "Div", 1, 14, onnx_h_binary, 2, 2, 0},
    {"", "Dropout", 1, 10, onnx_h_dropout, 1, 1, 0},
    {"", "Dropout", 12, 13, onnx_h_dropout, 1, 3, O(1) | O(2)},
    {"", "DynamicQuantizeLinear", 11, 11, onnx_h_DynamicQuantizeLinear, 1, 1, 0},
    {"", "Einsum", 12, 12, onnx_h_Einsum, 1, V, 0},
    {"", "Elu", 1, 6, onnx_h_attr_unary, 1, 1, 0},
    {"", "Equal", 1, 13, onnx_h_binary, 2, 2, 0},
    {"", "Erf", 9, 13, onnx_h_unary, 1, 1, 0},
    {"", "Exp", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "Expand", 8, 13, onnx_h_expand, 2, 2, 0},
    {"", "EyeLike", 9, 9, onnx_h_EyeLike, 1, 1, 0},
    {MS, "FastGelu", 1, 1, onnx_h_Gelu, 1, 2, O(1)},
    {PREVIEW, "FlexAttention", 1, 1, onnx_h_FlexAttention, 3, 3, 0},
    {"", "Flatten", 1, 13, onnx_h_flatten, 1, 1, 0},
    {"", "Floor", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "Gather", 1, 13, onnx_h_gather, 2, 2, 0},
    {"", "GatherElements", 11, 13, onnx_h_gather, 2, 2, 0},
    {"", "GatherND", 11, 13, onnx_h_GatherND, 2, 2, 0},
    {"", "Gelu", 20, 20, onnx_h_Gelu, 1, 1, 0},
    {MS, "Gelu", 1, 1, onnx_h_Gelu, 1, 1, 0},
    {"", "Gemm", 1, 9, onnx_h_gemm, 3, 3, 0},
    {"", "Gemm", 11, 13, onnx_h_gemm, 2, 3, O(2)},
    {"", "GlobalAveragePool", 1, 1, onnx_h_global_pool, 1, 1, 0},
    {"", "GlobalLpPool", 1, 2, onnx_h_GlobalLpPool, 1, 1, 0},
    {"", "GlobalMaxPool", 1, 1, onnx_h_global_pool, 1, 1, 0},
    {TRAINING, "Gradient", 1, 1, onnx_h_Gradient, 1, V, 0},
    {"", "Greater", 1, 13, onnx_h_binary, 2, 2, 0},
    {"", "GreaterOrEqual", 12, 16, onnx_h_binary, 2, 2, 0},
    {"", "GridSample", 16, 20, onnx_h_GridSample, 2, 2, 0},
    {"", "GroupNormalization", 18, 21, onnx_h_GroupNormalization, 3, 3, 0},
    {"", "GRU", 1, 14, onnx_h_GRU, 3, 6, O(3) | O(4) | O(5)},
    {"", "HammingWindow", 17, 17, onnx_h_HammingWindow, 1, 1, 0},
    {"", "HannWindow", 17, 17, onnx_h_HannWindow, 1, 1, 0},
    {"", "Hardmax", 1, 13, onnx_h_Hardmax, 1, 1, 0},
    {"", "HardSigmoid", 1, 6, onnx_h_attr_unary, 1, 1, 0},
    {"", "HardSwish", 14, 14, onnx_h_unary, 1, 1, 0},
    {"", "Identity", 1, 16, onnx_h_Identity, 1, 1, 0},
    {"", "If", 1, 16, onnx_h_If, 1, 1, 0},
    {"", "ImageDecoder", 20, 20, onnx_h_ImageDecoder, 1, 1, 0}, /* refused: no image codecs */
    {"", "InstanceNormalization", 1, 6, onnx_h_instancenorm, 3, 3, 0},
    {"", "IsInf", 10, 10, onnx_h_IsInf, 1, 1, 0},
    {"", "IsNaN", 9, 13, onnx_h_unary, 1, 1, 0},
    {ML, "LabelEncoder", 2, 4, onnx_h_LabelEncoder, 1, 1, 0},
    {"", "LayerNormalization", 1, 17, onnx_h_layernorm, 2, 3, O(2)}, /* 1: ONNX Runtime's before ONNX's 17 */
    {"", "LeakyRelu", 1, 16, onnx_h_attr_unary, 1, 1, 0},
    {"", "Less", 1, 13, onnx_h_binary, 2, 2, 0},
    {"", "LessOrEqual", 12, 16, onnx_h_binary, 2, 2, 0},
    {"", "LinearAttention", 27, 27, onnx_h_LinearAttention, 3, 6, O(3) | O(4) | O(5)},
    {"", "Log", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "LogSoftmax", 1, 13, onnx_h_softmax, 1, 1, 0},
    {"", "Loop", 1, 1, onnx_h_Loop, 3, V, O(0) | O(1)},
    {"", "Loop", 11, 16, onnx_h_Loop, 2, V, O(0) | O(1)},
    {"", "LpNormalization", 1, 1, onnx_h_LpNormalization, 1, 1, 0},
    {"", "LpPool", 1, 22, onnx_h_pool, 1, 1, 0},
    {"", "LRN", 1, 13, onnx_h_lrn, 1, 1, 0},
    {"", "LSTM", 1, 14, onnx_h_LSTM, 3, 8, O(3) | O(4) | O(5) | O(6) | O(7)},
    {"", "MatMul", 1, 13, onnx_h_matmul, 2, 2, 0},
    {"", "MatMulInteger", 10, 10, onnx_h_MatMulInteger, 2, 4, O(2) | O(3)},
    {"", "Max", 1, 13, onnx_h_variadic, 1, V, 0},
    {"", "MaxPool", 1, 22, onnx_h_pool, 1, 1, 0},
    {"", "MaxUnpool", 9, 11, onnx_h_MaxUnpool, 2, 3, O(2)},
    {"", "Mean", 1, 13, onnx_h_variadic, 1, V, 0},
    {"", "MeanVarianceNormalization", 9, 13, onnx_h_MeanVarianceNormalization, 1, 1, 0},
    {"", "MelWeightMatrix", 17, 17, onnx_h_MelWeightMatrix, 5, 5, 0},
    {"", "Min", 1, 13, onnx_h_variadic, 1, V, 0},
    {"", "Mish", 18, 18, onnx_h_Mish, 1, 1, 0},
    {"", "Mod", 10, 28, onnx_h_mod, 2, 2, 0},
    {TRAINING, "Momentum", 1, 1, onnx_h_Momentum, 3, V, 0},
    {"", "Mul", 1, 14, onnx_h_binary, 2, 2, 0},
    {"", "Multinomial", 7, 7, onnx_h_Multinomial, 1, 1, 0},
    {MS, "MultiHeadAttention", 1, 1, onnx_h_MultiHeadAttention, 1, 10, O(1) | O(2) | O(3) | O(4) | O(5) | O(6) | O(7) | O(8) | O(9)},
    {"", "Neg", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "NegativeLogLikelihoodLoss", 12, 13, onnx_h_NegativeLogLikelihoodLoss, 2, 3, O(2)},
    {"", "NonMaxSuppression", 10, 11, onnx_h_NonMaxSuppression, 2, 5, O(2) | O(3) | O(4)},
    {"", "NonZero", 9, 13, onnx_h_NonZero, 1, 1, 0},
    {"", "Not", 1, 1, onnx_h_unary, 1, 1, 0},
    {"", "OneHot", 9, 11, onnx_h_OneHot, 3, 3, 0},
    {"", "Optional", 15, 15, onnx_h_Optional, 0, 1, O(0)},
    {"", "OptionalGetElement", 15, 18, onnx_h_OptionalGetElement, 1, 1, 0},
    {"", "OptionalHasElement", 15, 18, onnx_h_OptionalHasElement, 0, 1, O(0)},
    {"", "Or", 1, 7, onnx_h_binary, 2, 2, 0},
    {"", "Pad", 1, 2, onnx_h_pad, 1, 1, 0},
    {"", "Pad", 11, 13, onnx_h_pad, 2, 3, O(2)},
    {"", "Pad", 18, 19, onnx_h_pad, 2, 4, O(2) | O(3)},
    {"", "Pow", 1, 15, onnx_h_binary, 2, 2, 0},
    {"", "PRelu", 1, 16, onnx_h_binary, 2, 2, 0},
    {"", "QLinearConv", 10, 10, onnx_h_QLinearConv, 8, 9, O(8)},
    {"", "QLinearMatMul", 10, 10, onnx_h_QLinearMatMul, 8, 8, 0},
    {"", "QuantizeLinear", 10, 25, onnx_h_QuantizeLinear, 2, 3, O(2)},
    {"", "RandomNormal", 1, 1, onnx_h_random, 0, 0, 0},
    {"", "RandomNormalLike", 1, 1, onnx_h_random, 1, 1, 0},
    {"", "RandomUniform", 1, 1, onnx_h_random, 0, 0, 0},
    {"", "RandomUniformLike", 1, 1, onnx_h_random, 1, 1, 0},
    {"", "Range", 11, 27, onnx_h_range, 3, 3, 0},
    {"", "Reciprocal", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "ReduceL1", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceL1", 18, 18, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceL2", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceL2", 18, 18, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceLogSum", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceLogSum", 18, 18, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceLogSumExp", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceLogSumExp", 18, 18, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceMax", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceMax", 18, 20, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceMean", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceMean", 18, 18, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceMin", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceMin", 18, 20, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceProd", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceProd", 18, 18, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceSum", 1, 11, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceSum", 13, 13, onnx_h_reduce, 1, 2, O(1)},
    {"", "ReduceSumSquare", 1, 13, onnx_h_reduce, 1, 1, 0},
    {"", "ReduceSumSquare", 18, 18, onnx_h_reduce, 1, 2, O(1)},
    {"", "RegexFullMatch", 20, 20, onnx_h_RegexFullMatch, 1, 1, 0},
    {"", "Relu", 1, 14, onnx_h_unary, 1, 1, 0},
    {"", "Reshape", 1, 1, onnx_h_reshape, 1, 1, 0},
    {"", "Reshape", 5, 14, onnx_h_reshape, 2, 2, 0},
    {"", "Resize", 10, 10, onnx_h_resize, 2, 2, 0},
    {"", "Resize", 11, 11, onnx_h_resize, 3, 4, O(1) | O(2) | O(3)},
    {"", "Resize", 13, 19, onnx_h_resize, 1, 4, O(1) | O(2) | O(3)},
    {"", "ReverseSequence", 10, 10, onnx_h_ReverseSequence, 2, 2, 0},
    {"", "RMSNormalization", 23, 23, onnx_h_RMSNormalization, 2, 2, 0},
    {"", "RNN", 1, 14, onnx_h_RNN, 3, 6, O(3) | O(4) | O(5)},
    {"", "RoiAlign", 10, 16, onnx_h_RoiAlign, 3, 3, 0},
    {"", "RotaryEmbedding", 23, 23, onnx_h_RotaryEmbedding, 3, 4, O(3)},
    {"", "Round", 11, 11, onnx_h_unary, 1, 1, 0},
    {"", "Scan", 8, 8, onnx_h_Scan, 2, V, O(0)},
    {"", "Scan", 9, 16, onnx_h_Scan, 1, V, 0},
    {"", "Scatter", 9, 11, onnx_h_ScatterElements, 3, 3, 0},
    {"", "ScatterElements", 11, 18, onnx_h_ScatterElements, 3, 3, 0},
    {"", "ScatterND", 11, 18, onnx_h_ScatterND, 3, 3, 0},
    {"", "Selu", 1, 6, onnx_h_attr_unary, 1, 1, 0},
    {"", "SequenceAt", 11, 11, onnx_h_SequenceAt, 2, 2, 0},
    {"", "SequenceConstruct", 11, 11, onnx_h_SequenceConstruct, 1, V, 0},
    {"", "SequenceEmpty", 11, 11, onnx_h_SequenceEmpty, 0, 0, 0},
    {"", "SequenceErase", 11, 11, onnx_h_SequenceErase, 1, 2, O(1)},
    {"", "SequenceInsert", 11, 11, onnx_h_SequenceInsert, 2, 3, O(2)},
    {"", "SequenceLength", 11, 11, onnx_h_SequenceLength, 1, 1, 0},
    {"", "SequenceMap", 17, 17, onnx_h_SequenceMap, 1, V, 0},
    {"", "Shape", 1, 15, onnx_h_shape, 1, 1, 0},
    {"", "Shrink", 9, 9, onnx_h_Shrink, 1, 1, 0},
    {"", "Sigmoid", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "Sign", 9, 13, onnx_h_unary, 1, 1, 0},
    {"", "SimplifiedLayerNormalization", 1, 1, onnx_h_SimplifiedLayerNormalization, 2, 2, 0},
    {"", "Sin", 7, 7, onnx_h_unary, 1, 1, 0},
    {"", "Sinh", 9, 9, onnx_h_unary, 1, 1, 0},
    {"", "Size", 1, 13, onnx_h_size, 1, 1, 0},
    {MS, "SkipLayerNormalization", 1, 1, onnx_h_SkipLayerNormalization, 3, 5, O(3) | O(4)},
    {MS, "SkipSimplifiedLayerNormalization", 1, 1, onnx_h_SkipLayerNormalization, 3, 4, O(3)},
    {"", "Slice", 1, 1, onnx_h_slice, 1, 1, 0},
    {"", "Slice", 10, 13, onnx_h_slice, 3, 5, O(3) | O(4)},
    {"", "Softmax", 1, 13, onnx_h_softmax, 1, 1, 0},
    {"", "SoftmaxCrossEntropyLoss", 12, 13, onnx_h_SoftmaxCrossEntropyLoss, 2, 3, O(2)},
    {"", "Softplus", 1, 1, onnx_h_unary, 1, 1, 0},
    {"", "Softsign", 1, 1, onnx_h_unary, 1, 1, 0},
    {"", "SpaceToDepth", 1, 28, onnx_h_depth_space, 1, 1, 0},
    {"", "Split", 1, 1, onnx_h_split, 1, 2, O(1)},
    {"", "Split", 2, 11, onnx_h_split, 1, 1, 0},
    {"", "Split", 13, 13, onnx_h_split, 1, 2, O(1)},
    {"", "Split", 18, 18, onnx_h_split, 1, 2, O(1)},
    {"", "SplitToSequence", 11, 11, onnx_h_SplitToSequence, 1, 2, O(1)},
    {"", "Sqrt", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "Squeeze", 1, 11, onnx_h_squeeze, 1, 1, 0},
    {"", "Squeeze", 13, 13, onnx_h_squeeze, 1, 2, O(1)},
    {"", "STFT", 17, 17, onnx_h_STFT, 2, 4, O(2) | O(3)},
    {"", "StringConcat", 20, 20, onnx_h_StringConcat, 2, 2, 0},
    {"", "StringNormalizer", 10, 10, onnx_h_StringNormalizer, 1, 1, 0},
    {"", "StringSplit", 20, 20, onnx_h_StringSplit, 1, 1, 0},
    {"", "Sub", 1, 14, onnx_h_binary, 2, 2, 0},
    {"", "Sum", 1, 13, onnx_h_variadic, 1, V, 0},
    {"", "SwiGLU", 28, 28, onnx_h_SwiGLU, 2, 2, 0},
    {"", "Swish", 24, 24, onnx_h_Swish, 1, 1, 0},
    {"", "Tan", 7, 7, onnx_h_unary, 1, 1, 0},
    {"", "Tanh", 1, 13, onnx_h_unary, 1, 1, 0},
    {"", "TensorScatter", 24, 24, onnx_h_TensorScatter, 2, 3, O(2)},
    {"", "TfIdfVectorizer", 9, 9, onnx_h_TfIdfVectorizer, 1, 1, 0},
    {"", "ThresholdedRelu", 10, 10, onnx_h_attr_unary, 1, 1, 0},
    {"", "Tile", 1, 1, onnx_h_tile, 3, 3, 0},
    {"", "Tile", 6, 13, onnx_h_tile, 2, 2, 0},
    {"", "TopK", 1, 1, onnx_h_TopK, 1, 1, 0},
    {"", "TopK", 10, 11, onnx_h_TopK, 2, 2, 0},
    {"", "Transpose", 1, 13, onnx_h_transpose, 1, 1, 0},
    {ML, "TreeEnsemble", 5, 5, onnx_h_TreeEnsemble, 1, 1, 0},
    {"", "Trilu", 14, 14, onnx_h_Trilu, 1, 2, O(1)},
    {"", "Unique", 11, 11, onnx_h_Unique, 1, 1, 0},
    {"", "Unsqueeze", 1, 11, onnx_h_unsqueeze, 1, 1, 0},
    {"", "Unsqueeze", 13, 13, onnx_h_unsqueeze, 2, 2, 0},
    {"", "Upsample", 1, 7, onnx_h_resize, 1, 1, 0},
    {"", "Upsample", 9, 10, onnx_h_resize, 2, 2, 0},
    {"", "Where", 9, 16, onnx_h_where, 3, 3, 0},
    {"", "Xor", 1, 7, onnx_h_binary, 2, 2, 0},
};

/* The attributes of the ops ONNX does not define (name, type, required). */
#define ATTR(name, type, req) {name, ONNX_ATTR_##type, req}
#define END {NULL, 0, 0}
static const OnnxSchemaAttr ort_none[] = {END};
static const OnnxSchemaAttr ort_layernorm[] = {ATTR("axis", INT, 0), ATTR("epsilon", FLOAT, 0), ATTR("stash_type", INT, 0), END};
static const OnnxSchemaAttr ort_skip_layernorm[] = {ATTR("epsilon", FLOAT, 0), END};
static const OnnxSchemaAttr ort_attention[] = {
    ATTR("do_rotary", INT, 0),
    ATTR("mask_filter_value", FLOAT, 0),
    ATTR("num_heads", INT, 1),
    ATTR("past_present_share_buffer", INT, 0),
    ATTR("qkv_hidden_sizes", INTS, 0),
    ATTR("rotary_embedding_dim", INT, 0),
    ATTR("scale", FLOAT, 0),
    ATTR("unidirectional", INT, 0),
    END,
};
static const OnnxSchemaAttr ort_mha[] = {ATTR("mask_filter_value", FLOAT, 0), ATTR("num_heads", INT, 1),
                                         ATTR("scale", FLOAT, 0), ATTR("unidirectional", INT, 0), END};

/* domain, op, attributes, whether ONNX Runtime accepts others (it runs
 * its two default-domain layer norms with any extra attribute) */
static const OnnxOwnAttrs own_attrs[] = {
    {MS, "Attention", ort_attention, false},
    {MS, "BiasGelu", ort_none, false},
    {MS, "FastGelu", ort_none, false},
    {MS, "Gelu", ort_none, false},
    {"", "LayerNormalization", ort_layernorm, true}, /* version 1, before ONNX's 17 */
    {MS, "MultiHeadAttention", ort_mha, false},
    {"", "SimplifiedLayerNormalization", ort_layernorm, true},
    {MS, "SkipLayerNormalization", ort_skip_layernorm, false},
    {MS, "SkipSimplifiedLayerNormalization", ort_skip_layernorm, false},
};

static bool default_domain(const char *d) { return !*d || !strcmp(d, "ai.onnx"); }

int onnx_find_op_rows(const char *domain, const char *op_type, const OnnxOpEntry **first) {
  bool dflt = default_domain(domain);
  int n = 0;
  *first = NULL;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const OnnxOpEntry *e = &table[i];
    if (strcmp(e->op_type, op_type) || (dflt ? !default_domain(e->domain) : strcmp(e->domain, domain))) continue;
    if (!n) *first = e;
    n++; /* the rows of an op are adjacent, in version order */
  }
  return n;
}

bool onnx_op_known(const char *op_type) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i].op_type, op_type)) return true;
  return false;
}

const OnnxOwnAttrs *onnx_own_attrs(const char *domain, const char *op_type) {
  bool dflt = default_domain(domain);
  for (size_t i = 0; i < sizeof own_attrs / sizeof own_attrs[0]; i++) {
    const OnnxOwnAttrs *o = &own_attrs[i];
    if (!strcmp(o->op_type, op_type) && (dflt ? default_domain(o->domain) : !strcmp(o->domain, domain))) return o;
  }
  return NULL;
}

const OnnxOpEntry *onnx_op_table(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}
