/*
 * import.h - the op-mapping layer of the ONNX frontend: an OnnxModel
 * (onnx_model.h) becomes a Kiln graph (src/graph).
 *
 * Initializers become constants; Constant nodes too.  Graph inputs take
 * their shapes from the model, with dynamic dimensions bound from the
 * user's input shapes ("data:[1,3,224,224]"); a missing binding is an
 * error naming the input and the dimension.  A given size also overrides
 * a dimension the model declares (TVM's behaviour); a node whose
 * constants cannot take the new shape fails with the overrides named
 * (docs/symbolic_shapes.md).  Each ONNX node is mapped by a
 * handler from the table in ops/table.c to one or more graph calls.
 * Whenever all inputs of a call are constants and its result is small, it
 * is evaluated at once, so the shape arithmetic exporters emit (Shape ->
 * Gather -> Concat -> Reshape) is known by the time it is needed.
 *
 * Files:
 *   import.c      the importer: values by name, inputs, initializers,
 *                 constants, the node loop (which checks each node against
 *                 its row of the table), folding, errors; building blocks
 *                 for handlers
 *   ops/          the handlers, one file per domain, and the table of
 *                 ONNX operators (ops/ops.h lists them)
 */
#ifndef KILN_FRONTEND_ONNX_IMPORT_H
#define KILN_FRONTEND_ONNX_IMPORT_H

#include "../../graph/graph.h"
#include "onnx_model.h"
#include "onnx_schema.h"

/* User-given input shapes.  A dimension given as a name ("N" of
 * "data:[N,3,224,224]") is a symbol (docs/symbolic_shapes.md); an entry
 * "N<=64" or "N>=2" bounds a symbol (bound set, ndim 0). */
typedef struct InputShape {
  const char *name;  /* the input, or the bounded symbol */
  int ndim;
  int64_t shape[GRAPH_MAX_DIMS];
  const char *sym[GRAPH_MAX_DIMS]; /* a symbol's name, or NULL where shape[] holds the size */
  bool bound;        /* a bound entry: lo <= name <= hi */
  int64_t lo, hi;
  /* the structure of a sequence or optional input (docs/sequences.md):
   * "name:seq(N)" a sequence of N tensors (or an optional holding one),
   * "name:none" an empty optional; ndim is 0 then */
  enum { IS_SHAPE, IS_SEQ, IS_NONE } structure;
  int64_t count; /* IS_SEQ: N */
} InputShape;

/* Parse "data:[1,3,224,224],mask:[1,128]" (also "data:1x3x224x224"), with
 * symbols ("data:[N,3,H,W],N<=64"), and the structure of sequence and
 * optional inputs ("s:seq(3),s[0]:[2,4],o:none"); returns the count or -1 + error.
 * Entries point into an arena copy. */
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
/* onnx_import_bound with the input shapes as text (parse_input_shapes';
 * NULL: the model's own): one loaded model imported at two sets of shapes
 * (kiln compile of a static batch that runs sample by sample). */
Graph *onnx_import_text(const OnnxModel *m, const char *input_shapes, int nvalues, const InputValue *values);
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
/* imp_call without folding constant arguments: the node stays in the
 * graph for a pass to see (a quantized weight's qnn.dequantize). */
GNode *imp_call_unfolded(Importer *im, const char *op, int nargs, GNode **args, GAttrs attrs);
GNode *imp_call1(Importer *im, const char *op, GNode *a);
GNode *imp_call2(Importer *im, const char *op, GNode *a, GNode *b);
/* A constant int64 vector or a scalar of a dtype. */
GNode *imp_const_ints(Importer *im, int n, const int64_t *v);
GNode *imp_scalar(Importer *im, double v, DType t);
/* Read a constant int input as a list (shape, axes, pads); -1 + error
 * naming the input when it is not constant. */
int imp_const_input_ints(Importer *im, int i, int64_t *out, int max);
/* A shape input given at run time (docs/symbolic_shapes.md, "Run-time
 * shape values"): when input i is a 1-D int64/int32 graph input of static
 * length, or such a value computed by kernels (bound after them through a
 * dd.bind node, section 4c), element k becomes the run-time value symbol
 * syms[k] (a size: bounds [0, GRAPH_MAX_ELEMS], 0 an empty dimension).
 * The count; -2 when input i is not such an input (the caller reads it as
 * a constant); -1 + error. */
int imp_runtime_shape_input(Importer *im, int i, GSym **syms, int max);
/* The name run-time value symbols of input i take as their value_of
 * (graph_value_sym): a 1-D integer graph input's own, or for such a value
 * computed by kernels its ONNX name, bound after them through a dd.bind
 * made here (section 4c); NULL when input i is neither. */
const char *imp_runtime_value_of(Importer *im, int i);
/* The run-time value symbol (bounds [lo, hi]) that the one element of
 * the integer value v (a graph input, or computed by kernels: bound after
 * them through a dd.bind whose value_of is name) is; NULL + error. */
GSym *imp_value_sym(Importer *im, GNode *v, const char *name, int64_t lo, int64_t hi);
/* A call's sym_dims attribute: per output dimension d the name of
 * syms[d] (times times[d] when given and not 1: "x_1 3 *"), empty where
 * NULL. */
const char *imp_sym_dims(Importer *im, int n, GSym *const *syms, const int64_t *times);
/* Input i, which must be a constant: NULL + an error that names the
 * graph inputs it is computed from (to bind with --bind) otherwise. */
GNode *imp_const_input(Importer *im, int i);
/* Symbolic shape values (shape_value.c): Shape of x's dims [start, end)
 * and Size of x, constants at the representative sizes that carry their
 * expressions over the size symbols when x is symbolic. */
GNode *imp_shape_value(Importer *im, GNode *x, int64_t start, int64_t end);
GNode *imp_size_value(Importer *im, GNode *x);
bool imp_is_shape_value(Importer *im, const GNode *v);
/* A shape input (Reshape's): its values at the representative sizes and
 * each element's expression (NULL where constant); the count, or -1 +
 * error naming the input when it is not known at compile time. */
int imp_shape_input(Importer *im, int i, int64_t *vals, Expr **exprs, int max);
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

/* An optional value known at compile time (a graph input given empty or
 * holding a value, the Optional op): empty (t and s NULL), or holding the
 * tensor t or the sequence s.  Like sequences, optionals live only in the
 * importer (docs/sequences.md). */
typedef struct ImpOpt {
  GNode *t;
  ImpSeq *s;
} ImpOpt;
/* The i-th input as an optional, or NULL (no error) when it is none. */
ImpOpt *imp_input_opt(Importer *im, int i);
int imp_set_output_opt(Importer *im, int i, ImpOpt *o);
/* The optional named name, or NULL. */
ImpOpt *imp_value_opt(Importer *im, const char *name);
/* Bind a body's formal input name to a sequence / an optional (SequenceMap,
 * Loop, If bodies). */
void imp_bind_seq(Importer *im, const char *name, ImpSeq *s);
void imp_bind_opt(Importer *im, const char *name, ImpOpt *o);

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
/* A Loop's body as a graph of its own (docs/symbolic_shapes.md 4d): its
 * inputs are variables of in_types named as og's inputs; each outer value
 * it reads is copied in when constant, else becomes a further input,
 * named as the value, whose outer node is pushed onto *outer and name
 * onto *outer_names (in input order); its outputs are og's.  NULL + error. */
Graph *imp_body_graph(Importer *im, const OnnxGraph *og, const TType *in_types, AVec *outer, AVec *outer_names);
/* The value named name (an imported node or an initializer); NULL if none. */
GNode *imp_value(Importer *im, const char *name);
/* The low-precision ONNX type (bfloat16, float8, float4, int4, ...; see
 * ops/lowp.c) input i carries, or 0 for a plain value; imp_set_output_lowp
 * marks output i as carrying code. */
int imp_input_lowp(Importer *im, int i);
void imp_set_output_lowp(Importer *im, int i, int code);
/* Set the value of a name (a subgraph's formal input). */
void imp_bind_value(Importer *im, const char *name, GNode *v);

/* More building blocks.  imp_slice: x[b:e] along axis (step 1);
 * imp_index0: x[i] of the first axis, that axis dropped; imp_want_output:
 * whether output i is requested; imp_norm_axis: axis in [-ndim, ndim)
 * made non-negative, or -1 + error; imp_numel: the product of n dims;
 * imp_new_i64: a zeroed int64 constant (*data its elements); imp_mask2d: a
 * constant bool [n, m] (plus trailing size-1 dims) with mask[i][j] =
 * pred(i, j, k); imp_const_scalar: input i, a constant of one element, as
 * a double (-1 + error otherwise). */
GNode *imp_slice(Importer *im, GNode *x, int axis, int64_t b, int64_t e);
GNode *imp_index0(Importer *im, GNode *x, int64_t i);
bool imp_want_output(Importer *im, int i);
int imp_norm_axis(Importer *im, int64_t axis, int ndim, int *out);
int64_t imp_numel(int n, const int64_t *s);
GNode *imp_new_i64(Importer *im, int ndim, const int64_t *shape, int64_t **data);
typedef bool (*ImpMaskFn)(int64_t i, int64_t j, int64_t k);
GNode *imp_mask2d(Importer *im, int64_t n, int64_t m, int trailing, ImpMaskFn pred, int64_t k);
int imp_const_scalar(Importer *im, int i, double *out);

/* ===== import_checked.c =====
 * Checked conversions of attribute values and constant elements to the
 * integers handlers compute with (see the file's banner): each returns 0,
 * or -1 + an error naming the node, the attribute or input, the value and
 * the range it must lie in.  A handler never casts a model's number
 * itself. */

/* The most entries a count from a model may reach (Kiln indexes tensors
 * with 32-bit integers), and the most bytes the importer allocates for a
 * table of its own (per-step values, bins, positions); constants it builds
 * (masks, index tables) are bounded by KILN_EVAL_MEMORY_MB, as folding is. */
#define IMP_MAX_COUNT GRAPH_MAX_ELEMS
#define IMP_MAX_ALLOC_BYTES ((uint64_t)1 << 28)

/* v, described by what ("attribute 'k'", "input 1 ('k')"), in [lo, hi]. */
int imp_check_i64(Importer *im, const char *what, int64_t v, int64_t lo, int64_t hi);
/* A double as an integer in [lo, hi], truncated toward zero; NaN,
 * infinities and values out of range are errors. */
int imp_double_i64(Importer *im, const char *what, double v, int64_t lo, int64_t hi, int64_t *out);
/* The int attribute name (dflt when absent) in [lo, hi]. */
int imp_attr_i64(Importer *im, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t *out);
int imp_attr_int(Importer *im, const char *name, int64_t dflt, int lo, int hi, int *out);
/* An axis attribute in [-ndim, ndim), made non-negative. */
int imp_attr_axis(Importer *im, const char *name, int64_t dflt, int ndim, int *out);
/* An ONNX data type code attribute (Cast's 'to', 'dtype') as a Kiln type. */
int imp_attr_dtype(Importer *im, const char *name, int64_t dflt, DType *out);
/* The ints attribute name (*v NULL and *n 0 when absent): at most max
 * values (max < 0: any number), each in [lo, hi]. */
int imp_attr_ints_in(Importer *im, const char *name, int max, int64_t lo, int64_t hi, const int64_t **v, int *n);
/* Element k of the constant c, the node's input i, as an integer in
 * [lo, hi]: int64/uint64 exactly, floats truncated when finite. */
int imp_const_i64_at(Importer *im, int i, const GNode *c, int64_t k, int64_t lo, int64_t hi, int64_t *out);
/* Element k of the constant c as an int64 without an error: integers
 * exactly (uint64 beyond int64 saturates), floats truncated and
 * saturated, NaN as 0 (for values whose range a later check decides). */
int64_t imp_const_i64_sat(const GNode *c, int64_t k);
/* Input i, a constant of one element, as an integer in [lo, hi]. */
int imp_input_i64(Importer *im, int i, int64_t lo, int64_t hi, int64_t *out);
/* imp_const_input_ints with every value in [lo, hi]; the count or -1. */
int imp_const_input_ints_in(Importer *im, int i, int64_t *out, int max, int64_t lo, int64_t hi);
/* a * b for sizes (both >= 0) when at most limit. */
int imp_mul_count(Importer *im, const char *what, int64_t a, int64_t b, int64_t limit, int64_t *out);
/* The product of n dims (each >= 0) when at most limit (0 if any is 0). */
int imp_numel_in(Importer *im, const char *what, int n, const int64_t *dims, int64_t limit, int64_t *out);
/* n zeroed entries of size bytes from the current arena, n checked
 * against IMP_MAX_COUNT and IMP_MAX_ALLOC_BYTES; NULL + error. */
void *imp_alloc_n(Importer *im, const char *what, int64_t n, size_t size);

/* ===== ops/table.c ===== */

typedef int (*OnnxHandler)(Importer *im);

/* A row of the operator table: one op of one domain, ONNX versions
 * `since` to `until` of it (see ops/table.c and onnx_schema.h for how a
 * node's version is found).  Inputs: at least min_inputs, at most
 * max_inputs (ONNX_VARIADIC: any number); bit i of optional (bit 31 for
 * i >= 31): input i may be omitted with an empty name.  The importer
 * checks each node against its row before the handler runs (import.c), so
 * a handler can rely on its required inputs. */
#define ONNX_VARIADIC (-1)
typedef struct OnnxOpEntry {
  const char *domain; /* "" for ai.onnx */
  const char *op_type;
  int since, until;   /* the ONNX versions of the op this row implements */
  OnnxHandler fn;
  int min_inputs, max_inputs;
  uint32_t optional;
} OnnxOpEntry;

/* The attributes of an op ONNX does not define (ONNX Runtime's), which
 * ONNX's ops take per version from onnx_schema.c. */
typedef struct OnnxOwnAttrs {
  const char *domain, *op_type;
  const OnnxSchemaAttr *attrs; /* ends with a NULL name */
  bool open;                   /* ONNX Runtime accepts attributes it does not list */
} OnnxOwnAttrs;

/* The rows of op_type of domain ("" or "ai.onnx": the default domain):
 * their number (0 if Kiln does not map the op), *first the first of them
 * (they are adjacent in version order). */
int onnx_find_op_rows(const char *domain, const char *op_type, const OnnxOpEntry **first);
/* Whether some domain maps op_type (for the error about a wrong domain). */
bool onnx_op_known(const char *op_type);
/* Whether op_type's handler takes string tensors (ops/strings.c); the
 * importer refuses a string input to any other op. */
bool onnx_op_takes_strings(const char *op_type);
/* The attribute list the table gives op_type of domain (an op, or a
 * version of one, that ONNX does not define), or NULL. */
const OnnxOwnAttrs *onnx_own_attrs(const char *domain, const char *op_type);
/* The whole table, sorted by op and version (for listings and the
 * conformance report). */
const OnnxOpEntry *onnx_op_table(int *n);

#endif
