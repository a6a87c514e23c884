/*
 * graph.h - Kiln's graph IR: a typed dataflow graph of operator calls,
 * the op table, the graph passes, operator fusion and graph build.
 *
 * A Graph holds nodes in topological order.  A node is a variable (a model
 * input), a constant (a parameter or a folded value, owning its data), or a
 * call of an operator from the op table with argument nodes and attributes.
 * Every node has exactly one tensor output (ONNX nodes with several outputs
 * become several nodes), so there are no tuples inside a graph; the graph's
 * outputs are a list of nodes.
 *
 * Types are inferred when a call is made, so the frontend always knows the
 * shape of what it has built (ONNX's Reshape(-1), shape arithmetic).  A
 * shape is constant, or symbolic: some dimensions are expressions over
 * named symbols (TType.sym, symshape.c), with shape[] holding their values
 * at the symbols' representative values so each op's inference runs as
 * for a constant shape.  Static graphs never carry a symbol.
 *
 * Passes are functions Graph -> Graph (a new graph; the old one stays
 * valid until freed), one per file under passes/, run in one list by
 * graph_optimize (pipeline.c) with opt levels 0-3; --dump-after PASS prints
 * the graph after a pass.
 *
 * Files:
 *   graph.c        nodes, types, attributes, builders, topological order
 *   symshape.c     symbolic dimensions: the graph's symbols, shape
 *                  inference over expressions (docs/symbolic_shapes.md)
 *   printer.c      Relay-style text
 *   fuse.c         fused groups and TVM's fused-function names
 *   verify.c       the graph's invariants, checked between passes
 *   pipeline.c     the pass list
 *   precision.c    --precision: fp32 or bf16, and whether this CPU has
 *                  AVX512-BF16
 *   passes/        one pass a file (see passes/passes.h)
 *   ops/           the op table: one row per op (inputs, attributes, type
 *                  inference, fusion pattern, compute, schedule strategy)
 *                  in elemwise.c, nn.c, transform.c, reduce.c, bf16.c; their
 *                  computes (compute.c); the table (table.c)
 *   backend/       TVM's relay/backend: strategies (strategy.c; the
 *                  bfloat16 ones in strategy_bf16.c), configs
 *                  from records (dispatch.c), tuning tasks (tasks.c),
 *                  groups -> te -> schedules -> one module (build.c,
 *                  schedule.c), constant evaluation (eval.c), standalone
 *                  C (export_c*.c)
 */
#ifndef KILN_GRAPH_H
#define KILN_GRAPH_H

#include "../topi/topi.h"
#include "kiln/runtime.h"

#define GRAPH_MAX_DIMS 8

/* ===== graph.c ===== */

/* A symbolic type's dimension expressions (symshape.c): dim[d] is an
 * integer Expr over the graph's symbols, or NULL where dimension d is the
 * constant shape[d]. */
typedef struct SymDims {
  Expr *dim[GRAPH_MAX_DIMS];
} SymDims;

typedef struct TType {
  DType dtype;
  int ndim;
  int64_t shape[GRAPH_MAX_DIMS]; /* symbolic dims: the value at the symbols' representative values */
  const SymDims *sym;            /* NULL: every dimension is the constant in shape[] */
} TType;

typedef enum GAttrKind { GA_INT, GA_FLOAT, GA_STR, GA_INTS, GA_FLOATS } GAttrKind;

typedef struct GAttr {
  const char *key;
  GAttrKind kind;
  int64_t i;
  double f;
  const char *s;
  int n; /* GA_INTS / GA_FLOATS */
  int64_t *ints;
  double *floats;
} GAttr;

typedef struct GAttrs {
  int n;
  GAttr *a;
} GAttrs;

typedef enum GNodeKind { GN_VAR, GN_CONST, GN_CALL } GNodeKind;

typedef struct OpDef OpDef;
typedef struct GNode GNode;

struct GNode {
  int id;          /* position in the graph's node list */
  GNodeKind kind;
  const char *name; /* var: input name; const: param name; call: source node name */
  const OpDef *op;  /* call */
  int nargs;
  GNode **args;
  GAttrs attrs;
  TType type;       /* the output type */
  DLTensor *value;  /* const: the data (owned by the graph) */
  /* call: the config alter_layout chose for the node's tuning task (TVM's
   * config JSON, config_json) and where it came from ("shipped",
   * "records.json:12", "fallback"), in the graph's arena and kept by
   * graph_rewrite; the strategy reads it back instead of choosing again.
   * NULL when nothing was chosen (the strategy chooses). */
  const char *config;
  const char *config_source;
};

typedef struct Graph {
  KArena *arena; /* nodes, names, attributes */
  AVec nodes;    /* topological order */
  AVec outputs;  /* GNode * */
  AVec output_names; /* const char * per output: the model's name, or NULL */
  /* The model's inputs and outputs as values (docs/sequences.md), one
   * line each, in order, "in|out KIND NAME" with KIND tensor, seq(N),
   * opt(none), opt(tensor) or opt(seq(N)): a sequence's N elements are N
   * graph inputs (outputs) in a row, an optional's its value's.  Empty
   * when the model's importer does not write it (every value a tensor). */
  AVec boundary;
  AVec owned;    /* DLTensor * values to free with the graph */
  int next_const; /* for generated constant names */
  AVec syms;      /* GSym *: the symbols of symbolic dimensions (symshape.c) */
  int sym_pass;   /* which representative values new symbols take (0 or 1) */
  /* Graph *: the bodies of Loops run by the executor (a trip count or a
   * condition known only at run time; docs/symbolic_shapes.md section
   * 4d), owned by this graph.  Body k is built into the same module as the
   * blob graph_json_loop<k> with kernels named loop<k>_...; the loop.output
   * calls name it by the attribute "body".  graph_rewrite moves them to
   * the new graph; graph_optimize optimizes each on its own. */
  AVec bodies;
} Graph;

Graph *graph_new(void);
void graph_free(Graph *g);
/* Give g a Loop body to own (Graph.bodies); its index is the old length. */
void graph_add_body(Graph *g, Graph *body);
/* Move every body of `from` to the end of `to`'s list (from keeps none). */
void graph_move_bodies(Graph *to, Graph *from);

/* Builders allocate in the graph's arena (they push it themselves). */
GNode *graph_var(Graph *g, const char *name, TType t);
/* A constant that takes ownership of value (a kiln array). */
GNode *graph_const(Graph *g, const char *name, DLTensor *value);
/* Scalar constant of a dtype (rank 0). */
GNode *graph_scalar(Graph *g, double v, DType t);
/* A call; infers the output type (NULL + error naming the op, the node
 * and the problem). */
GNode *graph_call(Graph *g, const char *op, int nargs, GNode **args, GAttrs attrs,
                  const char *name);
void graph_add_output(Graph *g, GNode *n);
/* An output with the model's name for it (an ONNX graph output's name),
 * which the graph JSON carries to the executor's output names. */
void graph_add_named_output(Graph *g, GNode *n, const char *name);
/* The model's name of output i, or NULL. */
const char *graph_output_name(const Graph *g, int i);
/* Append a line to g->boundary (copied); copy og's boundary into ng. */
void graph_add_boundary(Graph *g, const char *line);
void graph_copy_boundary(Graph *ng, const Graph *og);
/* Whether the boundary has a sequence or optional (the JSON writes it then). */
bool graph_has_structure(const Graph *g);

/* Attributes: build with ga_* into a small heap-free list (arena). */
GAttrs gattrs_new(void);
void ga_int(GAttrs *a, const char *key, int64_t v);
void ga_float(GAttrs *a, const char *key, double v);
void ga_str(GAttrs *a, const char *key, const char *v);
void ga_ints(GAttrs *a, const char *key, int n, const int64_t *v);
void ga_floats(GAttrs *a, const char *key, int n, const double *v);
const GAttr *gattr_find(const GAttrs *a, const char *key);
int64_t gattr_int(const GAttrs *a, const char *key, int64_t def);
double gattr_float(const GAttrs *a, const char *key, double def);
const char *gattr_str(const GAttrs *a, const char *key, const char *def);
/* ints attribute; returns its length (0 and *out NULL if absent). */
int gattr_ints(const GAttrs *a, const char *key, const int64_t **out);
GAttrs gattrs_copy(const GAttrs *a);

/* Rebuild g into a new graph, visiting the nodes reachable from the
 * outputs in topological order (so unreachable nodes are dropped).  Vars
 * are copied, constants shared by view; each call is rebuilt by fn with
 * its arguments already mapped, or copied when fn is NULL or returns
 * GRAPH_KEEP.  A NULL from fn is an error (already set). */
typedef GNode *(*GraphRewriteFn)(Graph *ng, GNode *old, GNode **args, void *ud);
#define GRAPH_KEEP ((GNode *)1)
Graph *graph_rewrite(Graph *g, GraphRewriteFn fn, void *ud);
GNode *graph_copy_call(Graph *ng, GNode *old, GNode **args);
/* Record a chosen config and its source on a call (copied into g's arena;
 * see GNode.config). */
void gnode_set_config(Graph *g, GNode *n, const char *config, const char *source);
/* A new constant sharing old's data. */
GNode *graph_share_const(Graph *ng, GNode *old);
/* Number of uses of each node (by id) among calls and outputs. */
int *graph_use_counts(Graph *g); /* heap array, free() it */

TType ttype(DType dt, int ndim, const int64_t *shape);
/* The number of elements (INT64_MAX when the product overflows). */
int64_t ttype_numel(const TType *t);
/* The most elements a tensor may have: generated code indexes tensors
 * with 32-bit integers (loop variables, flattened offsets, buffer sizes),
 * so every tensor of a graph is checked against this when it is made. */
#define GRAPH_MAX_ELEMS ((int64_t)INT32_MAX)
/* 0, or -1 + an error naming `what` when t has a negative dimension or
 * more than GRAPH_MAX_ELEMS elements. */
int ttype_check(const TType *t, const char *what);
bool ttype_eq(const TType *a, const TType *b);
const char *ttype_str(const TType *t); /* "Tensor[(1, 3, 224, 224), float32]" */
bool gnode_is_scalar_const(const GNode *n); /* a constant of one element */
double gnode_scalar_value(const GNode *n);
/* Read a constant 0-D/1-D integer (or float) tensor into out (at most
 * max values); returns the count, or -1 + error if n is not such a
 * constant. */
int gnode_const_ints(GNode *n, int64_t *out, int max);

/* ===== autodiff.c ===== */

/* Reverse-mode differentiation (TVM's relay gradient): adds to g the nodes
 * computing, for each xs[i], the gradient of the sum of y's elements with
 * respect to it (dxs[i], xs[i]'s shape; zeros where y does not depend on
 * it).  Every call on a path from an x to y needs a derivative rule (the
 * table in autodiff.c); otherwise, or for a non-float or symbolic tensor
 * on a path, -1 + an error naming the op and the node. */
int graph_gradient(Graph *g, GNode *y, int nx, GNode *const *xs, GNode **dxs);
/* 0, or -1 + an error naming a derivative rule whose op is not in the op
 * table. */
int graph_gradient_rules_check(void);

/* ===== symshape.c ===== */

/* A symbol of symbolic dimensions ("N" of "data:[N,3,H,W]"), with its
 * bounds and its representative value (what shape[] holds for it). */
typedef struct GSym {
  const char *name;
  Expr *var;        /* an int64 Var, unique to this graph */
  int64_t lo, hi;   /* inclusive bounds (1 and INT32_MAX unless given) */
  int64_t rep;      /* the representative value */
  /* A run-time shape value (docs/symbolic_shapes.md, "Run-time shape
   * values"): the symbol is element value_elem of the graph input
   * value_of, bound from that input's data when the executor gets it;
   * NULL for a size symbol, bound from an input's dimensions. */
  const char *value_of;
  int value_elem;
  /* A float run-time value (a Resize's scale, OneHot's depth, Dropout's
   * ratio): the element x is floating point and the symbol is the integer
   * floor(x * value_scale), the size it decides (an output size in * scale,
   * a depth, a ratio in units of 2^-24); 0 for an integer value, which
   * the symbol is itself. */
  double value_scale;
} GSym;

/* The symbol called name in g, or NULL. */
GSym *graph_sym_find(const Graph *g, const char *name);
/* The symbol called name, made with bounds [lo, hi] if g has none yet
 * (the representative value follows from g->sym_pass); NULL + error when
 * the bounds are empty or the name is not an identifier. */
GSym *graph_sym(Graph *g, const char *name, int64_t lo, int64_t hi);
/* The symbol that element elem of the 1-D integer graph input `input`
 * is at run time (made on first use with bounds [lo, hi], named
 * INPUT_ELEM with non-identifier characters as '_'); NULL + error.  A
 * call whose output dimensions such values decide says so with the
 * attribute sym_dims ("x_0,,x_2 3 *": per dimension a postfix expression
 * over the symbols, sym_parse_postfix's, or empty for a constant
 * dimension); the op's inference must give the expression's value at the
 * representative values. */
GSym *graph_value_sym(Graph *g, const char *input, int elem, int64_t lo, int64_t hi);
/* The symbol floor(x * scale) of element elem (x) of the 1-D float graph
 * input `input` (GSym.value_scale; scale > 0), made on first use of that
 * element with that scale with bounds [lo, hi] (the executor refuses a
 * value outside them, and a NaN or infinite x), called name (NULL:
 * INPUT_ELEM_f; the executor's errors name it); NULL + error. */
GSym *graph_float_value_sym(Graph *g, const char *input, int elem, double scale, const char *name, int64_t lo,
                            int64_t hi);
/* Narrow an existing symbol's bounds (a "N<=64" entry); -1 + error. */
int graph_sym_bound(Graph *g, const char *name, int64_t lo, int64_t hi);
bool ttype_is_symbolic(const TType *t);
/* Whether any node of g has a symbolic type. */
bool graph_is_symbolic(const Graph *g);
/* 0, or -1 + an error saying that `what` needs static shapes, naming a
 * node of g whose type is symbolic and how to give the sizes. */
int graph_require_static(const Graph *g, const char *what);
/* Dimension d of t as an expression (an IntImm where it is constant). */
Expr *ttype_dim_expr(const TType *t, int d);
/* Every dimension of t so (an arena array). */
Expr **ttype_shape_exprs(const TType *t);
/* Fill out->sym for call n (built in g) from its arguments' symbolic
 * dimensions, by the op's rule; out's integer shape is the op's own
 * inference at the representative values, which every expression must
 * reproduce.  -1 + error naming the op and the node. */
int sym_infer(Graph *g, const GNode *n, TType *out);
/* t (a type of graph og) with its expressions over ng's symbols of the
 * same names (made in ng when missing). */
TType sym_copy_type(Graph *ng, const Graph *og, const TType *t);
/* Give ng every symbol of og that it lacks, in og's order (graph_rewrite
 * does, so a call's sym_dims finds its run-time values). */
void graph_copy_syms(Graph *ng, const Graph *og);
/* The batch symbol, when g can run as batch-1 kernels called once per
 * sample: one symbol, which every symbolic tensor has as exactly its
 * dimension 0 and nowhere else, and every op on symbolic tensors works
 * per sample (an allowlist, with axis checks); else NULL. */
const GSym *graph_batch_symbol(const Graph *g);
/* g with every symbol at vals (one per g->syms entry): a static graph
 * (NULL + error when an op refuses the sizes). */
Graph *graph_specialize(Graph *g, const int64_t *vals);
/* Append e in the runtime's postfix form ("H 1 + 2 fdiv"); -1 + error
 * for an expression it cannot evaluate. */
int sym_postfix(StrBuf *sb, const Expr *e);
/* Entry i of a reshape's sym_newshape attribute (postfix expressions
 * joined by ';', empty where newshape's own code holds) and its length in
 * *len; NULL past the end. */
const char *sym_newshape_entry(const char *s, int i, size_t *len);
/* The expression a postfix text over g's symbols writes (sym_postfix's
 * tokens; "eq" and the other comparisons give 0 or 1, "c t f sel" is t
 * where c is not 0, else f); NULL + error. */
Expr *sym_parse_postfix(const Graph *g, const char *s, size_t len);
/* Evaluate an expression of g's symbols with the symbols at vals (one
 * per g->syms entry); false when it has no defined value. */
bool sym_eval(const Graph *g, Expr *e, const int64_t *vals, int64_t *out);

/* ===== ops/table.c ===== */

/* The ops a pass or a strategy must tell apart.  A row carries its id
 * (OP_OTHER for the rest), so code asks `n->op->id == OP_CONV2D`, never
 * compares names; table.c checks that each id is on exactly one row.
 * X(ID, Relay name) */
#define GRAPH_OP_IDS(X)                                              \
  X(OP_CONV2D, "nn.conv2d")                                          \
  X(OP_CONV2D_NCHWC, "nn.contrib_conv2d_NCHWc")                      \
  X(OP_DEPTHWISE_CONV2D_NCHWC, "nn.contrib_depthwise_conv2d_NCHWc")  \
  X(OP_CONV2D_WINOGRAD_NCHWC, "nn.contrib_conv2d_winograd_NCHWc")    \
  X(OP_CONV2D_WINOGRAD_WOWT, "nn.contrib_conv2d_winograd_without_weight_transform") \
  X(OP_DENSE, "nn.dense")                                            \
  X(OP_DENSE_PACK, "nn.contrib_dense_pack")                          \
  X(OP_MATMUL, "nn.matmul")                                          \
  X(OP_BIAS_ADD, "nn.bias_add")                                      \
  X(OP_MULTIPLY, "multiply")                                         \
  X(OP_ADD, "add")                                                   \
  X(OP_SUBTRACT, "subtract")                                         \
  X(OP_DIVIDE, "divide")                                             \
  X(OP_POWER, "power")                                               \
  X(OP_SQRT, "sqrt")                                                 \
  X(OP_ERF, "erf")                                                   \
  X(OP_SIGMOID, "sigmoid")                                           \
  X(OP_MEAN, "mean")                                                 \
  X(OP_LAYER_NORM, "nn.layer_norm")                                  \
  X(OP_CONCATENATE, "concatenate")                                   \
  X(OP_PAD, "nn.pad")                                                \
  X(OP_RESHAPE, "reshape")                                           \
  X(OP_TRANSPOSE, "transpose")                                       \
  X(OP_STRIDED_SLICE, "strided_slice")                               \
  X(OP_LAYOUT_TRANSFORM, "layout_transform")                         \
  X(OP_BATCH_NORM, "nn.batch_norm")                                  \
  X(OP_DROPOUT, "nn.dropout")                                        \
  X(OP_CAST, "cast")                                                 \
  X(OP_QNN_DEQUANTIZE, "qnn.dequantize")                             \
  X(OP_DENSE_VNNI, "nn.contrib_dense_vnni")                          \
  X(OP_CONV2D_INT8, "nn.contrib_conv2d_int8")                        \
  X(OP_CONV2D_NCHWC_INT8, "nn.contrib_conv2d_NCHWc_int8")           \
  X(OP_MAX_POOL2D, "nn.max_pool2d")                                  \
  X(OP_AVG_POOL2D, "nn.avg_pool2d")                                  \
  X(OP_ROUND, "round")                                               \
  X(OP_CLIP, "clip")

typedef enum OpId {
  OP_OTHER = 0,
#define X(id, name) id,
  GRAPH_OP_IDS(X)
#undef X
  OP_NUM_IDS
} OpId;

/* Properties of an op that passes read from its row. */
enum {
  /* a broadcasting binary op that alter_layout may run on blocked
   * (NCHW[x]c) tensors, reshaping per-channel constants to match */
  OPF_BLOCKED_BROADCAST = 1u << 0,
  /* a pooling op with a "layout" attribute that runs on blocked tensors */
  OPF_BLOCKED_LAYOUT = 1u << 1,
  /* per-channel and finite on finite values: alter_layout's padded
   * channels may flow through it (binary ones pad their per-channel
   * operand with zeros) */
  OPF_PAD_SAFE = 1u << 2,
  /* a host op whose output size its data decides (ops/datadep.c): it
   * writes into a buffer at the upper bound and reports the size of one
   * output dimension, which the executor binds after it runs
   * (docs/symbolic_shapes.md, "Data-dependent output sizes") */
  OPF_DATA_DEPENDENT = 1u << 3,
  /* a node the graph keeps though nothing uses it (graph_rewrite): the
   * executor binds run-time values from its output after it runs
   * (dd.bind, ops/datadep.c) */
  OPF_BINDS_VALUES = 1u << 4,
  /* every output element is one input element (or a pad's constant) at
   * an index map, nothing computed: a reshape, transpose, slice, crop or
   * relayout */
  OPF_MOVES_DATA = 1u << 5,
  /* an opaque row op (softmax, layer norm) that a chain of OPF_MOVES_DATA
   * producers may join, read through their index maps (graph/fuse.c) */
  OPF_ROW_INPUT = 1u << 6,
};

/* Fusion patterns (DESIGN §4), ordered as TVM orders them. */
typedef enum OpPattern {
  PAT_ELEMWISE = 0,
  PAT_BROADCAST = 1,
  PAT_INJECTIVE = 2,
  PAT_COMM_REDUCE = 3,
  PAT_OUT_ELEMWISE_FUSABLE = 4,
  PAT_OPAQUE = 8,
} OpPattern;

/* What the build needs to compute and schedule a fused group whose anchor
 * is this op (filled by the op's strategy function). */
struct Template;
struct Target;
/* Where configs come from: records, shipped records, settings
 * (backend/dispatch.c); passed down explicitly. */
typedef struct DispatchContext DispatchContext;
struct Workload;
struct ConfigEntity;
typedef struct Strategy {
  const char *task_name;        /* tuning task, e.g. "conv2d_NCHWc.x86"; NULL: none */
  const struct Template *tmpl;  /* its template (src/autotune) */
  struct Workload *wl;          /* the task's workload (TVM's argument order) */
  struct ConfigEntity *config;  /* the config chosen for the task */
  const char *task_desc;        /* for profiles: "[(1,64,56,56),(64,64,3,3)] s1 p1" */
  const char *config_source;    /* "fallback", "records.json:12", "shipped" */
  const struct Target *target;  /* the target the template schedules for */
} Strategy;

struct OpDef {
  const char *name; /* Relay name: "nn.conv2d", "add", ... */
  int min_args, max_args; /* max -1: variadic */
  OpPattern pattern;
  /* infer n's output type from its args and attrs; -1 + error */
  int (*infer)(GNode *n, TType *out);
  /* build the compute from input tensors (one per arg); st is the
   * strategy of an anchor op (its template's config), else one with only
   * the target set (NULL when folding constants: the host) */
  Tensor *(*compute)(GNode *n, Tensor **ins, const Strategy *st);
  /* fill the strategy of an anchor op (may be NULL: generic schedule);
   * configs come from the node (alter_layout's choice) or from dc */
  int (*strategy)(GNode *n, const struct Target *t, DispatchContext *dc, Strategy *st);
  /* Relay's Python signature: the tensor arguments, then the attributes
   * with their defaults ("data, axis=-1"); python/kiln/relay makes its
   * relay.* functions from it.  NULL: the tensor arguments only, any
   * attribute by keyword. */
  const char *params;
  OpId id;        /* OP_OTHER unless something must tell this op apart */
  unsigned flags; /* OPF_* */
  /* a host op (ops/strings.c): the runtime's global function the graph
   * executor calls instead of a generated kernel (PAT_OPAQUE, no compute);
   * the node's "host_attrs" (a JSON object) goes to it as attrs.kiln_host */
  const char *host;
};

const OpDef *op_lookup(const char *name);
int op_count(void);
const OpDef *op_at(int i);
/* The row with an id (never NULL for an id of GRAPH_OP_IDS). */
const OpDef *op_by_id(OpId id);
/* 0, or -1 + an error naming the row: every id of GRAPH_OP_IDS on exactly
 * the row of its name, and names unique. */
int op_table_check(void);

/* ===== fuse.c ===== */

/* A fused group: operator calls computed by one kernel. */
typedef struct FusedGroup {
  int id;
  AVec nodes;    /* GNode *, topological order; the last is the output */
  GNode *out;
  GNode *anchor; /* the out-elementwise-fusable or reduce op, or NULL */
  AVec inputs;   /* GNode * from outside the group (vars, consts, calls) */
  const char *func_name; /* the kernel, TVM's rule: fused_nn_conv2d_add_nn_relu[_1];
                          * groups computing the same function share it */
  int kernel;       /* the id of the first group with this kernel (itself if new) */
  const char *name; /* the graph node: func_name, made unique (a repeat gets
                     * "1", "2"... appended, as TVM names graph nodes) */
} FusedGroup;

/* Partition the calls of g into fused groups (DESIGN §4); opt_level 0
 * puts each call in its own group.  Groups are in topological order. */
int graph_fuse(Graph *g, int opt_level, AVec *groups);
/* The group a node belongs to (after graph_fuse), by node id. */

/* ===== printer.c ===== */

/* Relay text: fn (%data: Tensor[(1, 3, 224, 224), float32]) -> ... { ... } */
char *graph_to_text(Graph *g); /* heap string */
/* The same, with fused groups shown as primitive functions named as TVM
 * names them (what `kiln show` prints). */
char *graph_to_text_fused(Graph *g, AVec *groups);

/* ===== pipeline.c ===== */

/* ===== precision.c ===== */

/* The arithmetic the compiled layers use (docs/bf16.md): fp32, or bf16
 * weights and AVX512-BF16 kernels with float32 accumulation (opt-in). */
typedef enum GraphPrecision { GRAPH_PRECISION_FP32 = 0, GRAPH_PRECISION_BF16 } GraphPrecision;
/* "fp32"/"float32" or "bf16"/"bfloat16"; -1 + error otherwise. */
int graph_precision_parse(const char *s, GraphPrecision *out);
const char *graph_precision_name(GraphPrecision p);
/* Whether this CPU runs AVX512-BF16 ($KILN_CPU_NO_BF16=1: as if not). */
bool graph_cpu_has_bf16(void);
/* 0 if p can be built for t at opt_level on this machine, else -1 and an
 * error saying what is missing and what to do. */
int graph_precision_check(GraphPrecision p, const struct Target *t, int opt_level);

typedef struct GraphOptions {
  int opt_level;          /* 0-3 */
  const char *dump_after; /* print the graph after this pass ("all") */
  FILE *dump_to;          /* default stderr */
  const struct Target *target; /* compiled for (NULL: the host, target_host) */
  DispatchContext *dispatch;   /* alter_layout's configs (NULL: a new
                                * context for this call, backend/dispatch.c) */
  GraphPrecision precision;    /* fp32 (0, the default) or bf16 */
} GraphOptions;

/* ===== verify.c ===== */

/* The graph's invariants (topological order, ids, arity, every type as its
 * op infers it now, outputs in the graph): 0, or -1 + an error naming the
 * pass (`after`, may be NULL), the node and the rule. */
int graph_verify(Graph *g, const char *after);

/* Run the optimization pipeline; returns the new graph (the input graph is
 * freed when a pass replaces it), or NULL + error. */
Graph *graph_optimize(Graph *g, const GraphOptions *opt);
/* Names of the passes, in pipeline order (for --dump-after checks). */
const char *const *graph_pass_names(int *n);

#endif
