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
 *                 constants, the node loop, folding, errors
 *   import_ops.c  the table of ONNX operators and their handlers
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

/* ===== import.c ===== */

/* Import a loaded model; NULL + error. */
Graph *onnx_import(const OnnxModel *m, int nshapes, const InputShape *shapes);
/* Load and import a file in one call. */
Graph *kiln_import_onnx(const char *path, const char *input_shapes);

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
/* An error naming the node, its op and opset. */
int imp_error(Importer *im, const char *fmt, ...) KILN_PRINTF(2, 3);

/* ===== import_ops.c ===== */

typedef int (*OnnxHandler)(Importer *im);
typedef struct OnnxOpEntry {
  const char *op_type;
  OnnxHandler fn;
} OnnxOpEntry;

OnnxHandler onnx_find_handler(const char *op_type);
/* The ONNX ops Kiln maps (for listings and the conformance report). */
const OnnxOpEntry *onnx_op_table(int *n);

#endif
