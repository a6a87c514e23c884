/*
 * import.h - the op-mapping layer of the ONNX frontend: an OnnxModel
 * (onnx_model.h) becomes a Kiln graph (src/graph).
 *
 * Initializers become constants; Constant nodes too.  Graph inputs take
 * their shapes from the model, with dynamic dimensions bound from the
 * user's input shapes ("data:[1,3,224,224]"); a missing binding is an
 * error naming the input and the dimension.  Each ONNX node is mapped by a
 * handler from the table in import_ops.c to one or more graph calls.
 * Whenever all inputs of a call are constants and its result is small, it
 * is evaluated at once, so the shape arithmetic exporters emit (Shape ->
 * Gather -> Concat -> Reshape) is known by the time it is needed.
 *
 * Files:
 *   import.c      the importer: values by name, inputs, initializers,
 *                 constants, the node loop, folding, errors; building
 *                 blocks for handlers
 *   import_ops.c  the table of ONNX operators and the handlers that map
 *                 an op to one graph call (or a few)
 *   import_composite.c  handlers that lower an op to a small graph of
 *                 calls (losses, TopK, Einsum, scatters, ...) or to a
 *                 constant computed at import (EyeLike, NonZero, windows)
 */
#ifndef KILN_FRONTEND_ONNX_IMPORT_H
#define KILN_FRONTEND_ONNX_IMPORT_H

#include "../../graph/graph.h"
#include "onnx_model.h"

/* User-given input shapes. */
typedef struct InputShape {
  const char *name;
  int ndim;
  int64_t shape[GRAPH_MAX_DIMS];
} InputShape;

/* Parse "data:[1,3,224,224],mask:[1,128]" (also "data:1x3x224x224");
 * returns the count or -1 + error.  Entries point into an arena copy. */
int parse_input_shapes(const char *text, InputShape **out);

/* An input bound to a value at compile time (kiln compile --bind
 * NAME=FILE): it becomes a constant, so what it decides (a Reshape's
 * shape, a Tile's repeats, a Range's limit) is known when the graph is
 * built.  The importer copies the value. */
typedef struct InputValue {
  const char *name;
  const DLTensor *value;
} InputValue;

/* ===== import.c ===== */

/* Import a loaded model; NULL + error. */
Graph *onnx_import(const OnnxModel *m, int nshapes, const InputShape *shapes);
/* The same with some inputs bound to values (their shapes need no
 * --input-shapes entry); a binding that names no input is an error. */
Graph *onnx_import_bound(const OnnxModel *m, int nshapes, const InputShape *shapes, int nvalues,
                         const InputValue *values);
/* Load and import a file in one call. */
Graph *kiln_import_onnx(const char *path, const char *input_shapes);
Graph *kiln_import_onnx_bound(const char *path, const char *input_shapes, int nvalues, const InputValue *values);

typedef struct Importer Importer;

/* For handlers: the i-th input value (NULL if omitted or absent); the
 * output value i; the opset; a call with error context. */
GNode *imp_input(Importer *im, int i);
int imp_ninputs(Importer *im);
int imp_set_output(Importer *im, int i, GNode *v);
int64_t imp_opset(Importer *im);
Graph *imp_graph(Importer *im);
const OnnxNode *imp_node(Importer *im);
/* A call named after the ONNX node; folded at once when its inputs are
 * constants and its result is small. */
GNode *imp_call(Importer *im, const char *op, int nargs, GNode **args, GAttrs attrs);
GNode *imp_call1(Importer *im, const char *op, GNode *a);
GNode *imp_call2(Importer *im, const char *op, GNode *a, GNode *b);
/* A constant int64 vector or a scalar of a dtype. */
GNode *imp_const_ints(Importer *im, int n, const int64_t *v);
GNode *imp_scalar(Importer *im, double v, DType t);
/* Read a constant int input as a list (shape, axes, pads); -1 + error
 * naming the input when it is not constant. */
int imp_const_input_ints(Importer *im, int i, int64_t *out, int max);
/* Input i, which must be a constant: NULL + an error that names the
 * graph inputs it is computed from (to bind with --bind) otherwise. */
GNode *imp_const_input(Importer *im, int i);
/* An error naming the node, its op and opset. */
int imp_error(Importer *im, const char *fmt, ...) KILN_PRINTF(2, 3);

/* A sequence known at compile time: ONNX sequence values live only in the
 * importer, as lists of graph values, until SequenceAt,
 * ConcatFromSequence or SequenceLength turn them back into tensors. */
typedef struct ImpSeq {
  int n;
  GNode **items;
  DType dtype; /* the element type (an empty sequence has one too) */
} ImpSeq;
/* The i-th input as a sequence (NULL + error naming it if it is none). */
ImpSeq *imp_input_seq(Importer *im, int i);
int imp_set_output_seq(Importer *im, int i, ImpSeq *s);
/* The sequence named name, or NULL. */
ImpSeq *imp_value_seq(Importer *im, const char *name);

/* Building blocks for handlers that lower one ONNX op to several calls;
 * each passes a NULL argument through (the error is already set). */
GNode *imp_reshape(Importer *im, GNode *x, int n, const int64_t *shape);
GNode *imp_transpose(Importer *im, GNode *x, int n, const int64_t *perm);
GNode *imp_cast(Importer *im, GNode *x, DType t);
/* op: sum, mean, max, min, prod, l1_norm, l2_norm, ...; naxes 0: all */
GNode *imp_reduce(Importer *im, const char *op, GNode *x, int naxes, const int64_t *axes, bool keepdims);
GNode *imp_expand_dims(Importer *im, GNode *x, int axis);
GNode *imp_squeeze(Importer *im, GNode *x, int axis);
GNode *imp_where(Importer *im, GNode *c, GNode *a, GNode *b);
GNode *imp_scalar_like(Importer *im, double v, GNode *x);
/* A new constant of zeros (data points at its elements) and the value
 * of element i of a constant (any numeric dtype) as a double; set one. */
GNode *imp_new_const(Importer *im, DType t, int ndim, const int64_t *shape, void **data);
double imp_const_at(const GNode *c, int64_t i);
void imp_array_set(DLTensor *a, int64_t i, double v);
/* Import the nodes of a subgraph (an If branch, a loop body) into the
 * current graph: its initializers and nodes join the values by name, so
 * the caller reads the subgraph's outputs by name afterwards. */
int imp_subgraph(Importer *im, const OnnxGraph *g);
/* The value named name (an imported node or an initializer); NULL if none. */
GNode *imp_value(Importer *im, const char *name);
/* Set the value of a name (a subgraph's formal input). */
void imp_bind_value(Importer *im, const char *name, GNode *v);

/* ===== import_ops.c ===== */

typedef int (*OnnxHandler)(Importer *im);
typedef struct OnnxOpEntry {
  const char *op_type;
  OnnxHandler fn;
} OnnxOpEntry;

OnnxHandler onnx_find_handler(const char *op_type);
/* Conv of x and w (+ bias b, or NULL) with the current node's attributes
 * (ConvInteger and QLinearConv reuse it); NULL + error. */
GNode *onnx_conv(Importer *im, GNode *x, GNode *w, GNode *b);

/* ===== import_composite.c ===== */

#define ONNX_COMPOSITE_HANDLERS(X)                                                                   \
  X(BatchNormTraining) X(LayerNormStats) X(NegativeLogLikelihoodLoss) X(SoftmaxCrossEntropyLoss)     \
  X(Trilu) X(Hardmax) X(OneHot) X(CumSum) X(IsInf) X(Shrink) X(EyeLike) X(MeanVarianceNormalization) \
  X(LpNormalization) X(GlobalLpPool) X(ReverseSequence) X(Compress) X(NonZero) X(TopK) X(Einsum)      \
  X(GatherND) X(ScatterElements) X(ScatterND) X(MaxUnpool) X(RNN) X(GRU) X(LSTM) X(QuantizeLinear)            \
  X(DequantizeLinear) X(DynamicQuantizeLinear) X(MatMulInteger) X(ConvInteger) X(QLinearMatMul) X(QLinearConv)  \
  X(If) X(Loop) X(Scan) X(HannWindow) X(HammingWindow) X(BlackmanWindow) X(MelWeightMatrix) X(DFT) X(STFT) \
  X(GridSample) X(Det) X(RoiAlign) X(SequenceEmpty) X(SequenceConstruct) X(SequenceInsert) X(SequenceErase) \
  X(SequenceAt) X(SequenceLength) X(SplitToSequence) X(ConcatFromSequence) X(TfIdfVectorizer) \
  X(Adagrad) X(Adam) X(Momentum)
#define X(n) int onnx_h_##n(Importer *im);
ONNX_COMPOSITE_HANDLERS(X)
#undef X
/* MaxPool's Indices output for x (NCHW) and the window (k, s, d, pads
 * begin/end per spatial axis); -1 + error. */
/* Resize with coordinate_transformation_mode tf_crop_and_resize to size
 * (the roi is input 1). */
int onnx_resize_crop(Importer *im, GNode *x, const int64_t *size);
int onnx_maxpool_indices(Importer *im, GNode *x, const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb,
                         const int64_t *pe, bool ceil_mode, GNode **out);
/* The ONNX ops Kiln maps (for listings and the conformance report). */
const OnnxOpEntry *onnx_op_table(int *n);

#endif
