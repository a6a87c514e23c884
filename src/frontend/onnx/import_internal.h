/*
 * import_internal.h - the importer's state, shared by import.c (the
 * driver), import_helpers.c, import_inputs.c and shape_value.c (handlers
 * see only import.h).
 */
#ifndef KILN_FRONTEND_ONNX_IMPORT_INTERNAL_H
#define KILN_FRONTEND_ONNX_IMPORT_INTERNAL_H

#include "import.h"

struct Importer {
  const OnnxModel *model;
  Graph *g;
  PtrMap values;       /* name -> GNode * (string keys) */
  PtrMap initializers; /* name -> const OnnxTensor * (string keys) */
  const OnnxNode *node;
  int64_t opset;
  PtrMap seqs;         /* name -> ImpSeq * (sequence values, string keys) */
  PtrMap opts;         /* name -> ImpOpt * (optional values, string keys) */
  PtrMap lowp;         /* name -> ONNX data type (as a pointer) of a value
                          carried in a wider type (ops/lowp.c) */
  int nbound;                /* inputs bound to values (--bind) */
  const InputValue *bound;
  PtrMap shapevals;          /* GNode * -> ShapeVal *: symbolic shape values (shape_value.c) */
  StrBuf overrides;          /* the declared dimensions --input-shapes changed, for errors */
};

/* The value named name: an imported node, or an initializer made a
 * constant on first use (import_helpers.c). */
GNode *imp_lookup(Importer *im, const char *name);
/* 0, or -1 + error when t is a data type Kiln does not compute with. */
int imp_check_dtype(DType t, const char *what);
/* The current node's carried low-precision inputs: fine for the conversion
 * ops; bfloat16 for any other op (*widen: it computes in float32,
 * ops/lowp.c); -1 + an error for the other types (import_helpers.c). */
int imp_check_lowp_inputs(Importer *im, bool *widen);
/* Bind the graph's inputs (import_inputs.c); -1 + error. */
int imp_bind_inputs(Importer *im, const OnnxGraph *og, int nshapes, const InputShape *shapes);

/* A symbolic shape value (shape_value.c): the constant holds the value at
 * the representative sizes; e[i] is element i's expression over the
 * graph's symbols, NULL where the element is constant.  An opaque value
 * (opaque names the op that could not be followed) has no expressions. */
typedef struct ShapeVal {
  int64_t n;
  Expr **e;
  const char *origin; /* the Shape or Size node it comes from */
  const char *opaque; /* NULL, or why the elements are unknown */
} ShapeVal;

/* After imp_call folded op over args into out: out's entry from the
 * arguments' (none when no argument is a shape value); -1 + error. */
int symval_fold(Importer *im, const char *op, int nargs, GNode **args, const GAttrs *attrs, GNode *out);
/* -1 + error when an argument of a call that is not folded is a shape value. */
int symval_refuse_data(Importer *im, const char *op, int nargs, GNode **args);
/* -1 + error when input i (value v), needed as a constant, is a shape value. */
int symval_refuse_const(Importer *im, int i, GNode *v);
/* 0, or -1 + an error when v, the graph output `name`, is a shape value
 * with symbolic elements (it would hold the representative sizes). */
int symval_refuse_output(Importer *im, const char *name, GNode *v);

#endif
