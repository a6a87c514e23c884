/*
 * api.h - the compiler's C API: every compiler entry point a language
 * binding needs, as packed functions in the runtime's global registry.
 *
 * This is TVM's src/api/ (see the seed note on its function bridge): each
 * file below holds a table of {name, function, parameter list} for one
 * prefix, and kiln_init (api.c) registers every table explicitly, once.
 * A binding lists the registry's names and binds them by prefix (ir.*,
 * te.*, schedule.*, driver.*, runtime.*, api.*), as Python's _init_api
 * does.
 *
 * Compiler objects cross as KILN_OBJECT handles.  Every one starts with a
 * KObjKind tag (ir.h), so each function checks the tag of every handle it
 * is given before using it and fails with a message that names the
 * function and the argument ("schedule.split: argument 1 (axis) must be an
 * IterVar, got a Tensor"); a NULL handle is an error too.  Functions that
 * return several objects return a KArray (below).  Objects are allocated
 * from the calling thread's current arena (kiln_arena_current): the
 * process-default arena unless the caller pushed one, so IR built from
 * Python lives until the process exits.
 *
 * The parameter list of a table entry ("stage, axis, factor", with "..."
 * marking a variadic tail and "?" an optional parameter) is what error
 * messages name the arguments by and what api.FuncParams returns for
 * docstrings.
 */
#ifndef KILN_API_H
#define KILN_API_H

#include "../codegen/codegen.h"
#include "../target/target.h"
#include "kiln/kiln.h"

/* An array of objects (the items may be NULL): what split, tile, a tensor's
 * shape or a stage's axes return.  Its tag is outside KObjKind's range,
 * which lives in ir.h. */
#define KOBJ_ARRAY ((KObjKind)0x4b40)
_Static_assert(KOBJ_REDUCER < 0x4b40, "KObjKind grew into KOBJ_ARRAY's tag");
/* A graph (api_graph.c): unlike the other objects it owns memory and is
 * freed by graph.free. */
#define KOBJ_GRAPH ((KObjKind)0x4b41)
/* A target (api_target.c; src/target/target.h): arena-allocated like the
 * IR. */
#define KOBJ_TARGET ((KObjKind)TARGET_OBJ_TAG)

typedef struct KArray {
  KObjKind okind; /* KOBJ_ARRAY */
  int n;
  void **items; /* compiler objects (each starts with a KObjKind) or NULL */
} KArray;

/* One registered function. */
typedef struct ApiEntry {
  const char *name;   /* "schedule.split" */
  KilnPackedCFunc fn; /* gets the entry itself as its resource */
  const char *params; /* "stage, axis, factor": for messages and docs */
} ApiEntry;

/* The arguments of one call, with the entry for messages. */
typedef struct ApiCall {
  const ApiEntry *fn;
  KilnValue *args;
  int *codes;
  int n;
} ApiCall;

/* Every API function has this shape; API_CALL names its arguments. */
#define API_FUNC(f)                                                            \
  static int f(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res)
#define API_CALL ApiCall c = {(const ApiEntry *)res, args, codes, nargs}

/* ===== api.c ===== */

/* kiln_init (public, kiln.h) and the api.* table: ObjectKind, TypeKey,
 * Array, ArraySize, ArrayGetItem, FuncParams.  Internally, the argument
 * readers and result writers every table uses. */

KArray *karray_new(int n, void *const *items);
/* "Expr", "Tensor", "Array"...; NULL if obj has no known tag. */
const char *api_kind_name(const void *obj);

/* Fail with "fname: message". */
int api_error(const ApiCall *c, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Fail after a builder failed: prefix its message with the function name. */
int api_fail(const ApiCall *c);
/* The number of arguments is in [min, max] (max < 0: no upper bound). */
int api_argc(const ApiCall *c, int min, int max);

/* Argument readers: each returns NULL (or -1) with an error naming the
 * function and the argument when argument i is missing or has the wrong
 * type code or object kind. */
void *api_obj(const ApiCall *c, int i, KObjKind want);
/* An expression: an Expr, an IterVar (its variable), a Python-style int
 * (int32, or int64 when it does not fit) or float (float32). */
Expr *api_expr(const ApiCall *c, int i);
/* Like api_expr, but a plain number takes the type of `other` when that is
 * a scalar number type, so `x + 2` and `y * 0.1` need no promotion. */
Expr *api_expr_like(const ApiCall *c, int i, const Expr *other);
const char *api_str(const ApiCall *c, int i);
/* Optional arguments: a KILN_NULL argument, or one past the end, gives
 * *out = NULL; these return 0, or -1 with an error. */
int api_opt_obj(const ApiCall *c, int i, KObjKind want, void **out);
int api_opt_expr(const ApiCall *c, int i, Expr **out);
int api_opt_str(const ApiCall *c, int i, const char **out);
int api_int(const ApiCall *c, int i, int64_t *out);
int api_dtype(const ApiCall *c, int i, DType *out);
/* Arguments start.. as a list: either one Array argument, or the remaining
 * arguments themselves.  Items are checked for the kind; exprs converts
 * numbers as api_expr does. */
void **api_obj_list(const ApiCall *c, int start, KObjKind want, int *n);
Expr **api_expr_list(const ApiCall *c, int start, int *n);
/* The items of an Array given as argument i, as expressions. */
Expr **api_array_exprs(const ApiCall *c, int i, const KArray *arr, int *n);

/* Result writers; they return 0 (api_ret_obj: -1 via api_fail on NULL). */
int api_ret_obj(const ApiCall *c, KilnValue *ret, int *ret_code, void *obj);
int api_ret_int(KilnValue *ret, int *ret_code, int64_t v);
int api_ret_float(KilnValue *ret, int *ret_code, double v);
int api_ret_str(KilnValue *ret, int *ret_code, const char *s);
int api_ret_null(KilnValue *ret, int *ret_code);
/* A heap string (malloc'd; NULL: out of memory) as the result: the calling
 * thread keeps it until its next text result, since kiln_func_call copies
 * results after the function returns. */
int api_ret_text(const ApiCall *c, KilnValue *ret, int *ret_code, char *s);
/* A JSON value as compact text (api_ret_text); root is deleted. */
struct cJSON;
int api_ret_json(const ApiCall *c, KilnValue *ret, int *ret_code, struct cJSON *root);

/* ===== api_ir.c ===== */

/* ir.IntImm, FloatImm, StringImm, Var, BinaryOp, Not, Neg, Select, Cast,
 * Call, Let, Reduce, CommReducer, MaxValue, MinValue, ExprKind, ExprDType,
 * ExprIntValue, ExprFloatValue, ExprStrValue, VarName, CallName,
 * ExprOperands, ReadTensor, Intrinsics, AsText, Simplify, StructuralEqual,
 * StructuralHash. */
extern const ApiEntry api_ir_funcs[];
/* The text AsText gives for any object (arena string). */
const char *api_as_text(void *obj);

/* ===== api_te.c ===== */

/* te.placeholder, axis_vars, compute, reduce_axis, thread_axis, read, and
 * the inspectors TensorName, TensorTag, TensorNDim, TensorDType,
 * TensorShape, TensorAxis, TensorReduceAxis, TensorOpKind, TensorBody,
 * TensorInputs, IterVarVar, IterVarName, IterVarRange, IterVarKind,
 * IterVarThreadTag. */
extern const ApiEntry api_te_funcs[];

/* ===== api_schedule.c ===== */

/* schedule.create_schedule, Stage, split, split_nparts, tile, fuse,
 * reorder, vectorize, unroll, parallel, bind, pragma, compute_inline,
 * compute_root, compute_at, cache_read, cache_write, and the inspectors
 * StageOp, StageOrigin, StageAxis, StageReduceAxis, StageLeafIters,
 * StageAllIters, StageAttach, StageScope, ScheduleStages, ScheduleOutputs,
 * check. */
extern const ApiEntry api_schedule_funcs[];

/* ===== api_driver.c ===== */

/* driver.lower, lower_target, build, build_funcs, codegen_c, check_target,
 * device_source, nvrtc_compile, FuncName, FuncArgs, FuncBody, FuncNotes;
 * runtime.module_export. */
extern const ApiEntry api_driver_funcs[];

/* ===== api_target.c ===== */

/* target.create, Str, Kind, Keys, Attr, VectorLanes, DeviceType, Host,
 * MaxThreadsPerBlock, MaxSharedMemoryPerBlock, ThreadWarpSize, Kinds. */
extern const ApiEntry api_target_funcs[];
/* Argument i as a target: a Target object, or a target string parsed
 * (target_parse, no host); NULL + an error naming the function and what
 * Kiln can build for. */
const Target *api_target(const ApiCall *c, int i);

/* ===== api_graph.c ===== */

/* graph.from_onnx, free, as_text, fused_text, optimize, bind_params,
 * build, opt_level, num_inputs, input_name, input_shape, input_dtype, num_outputs,
 * output_shape, output_dtype, num_params, param_name, param;
 * runtime.graph_executor.benchmark. */
extern const ApiEntry api_graph_funcs[];
/* A graph's Relay text (for ir.AsText). */
void api_graph_text(StrBuf *sb, void *graph);

/* ===== api_autotvm.c ===== */

/* autotvm.extract_tasks, tune_task, apply_history_best,
 * apply_history_best_exit: the tuning engine for kiln.autotvm. */
extern const ApiEntry api_autotvm_funcs[];

/* A Graph handle (KOBJ_GRAPH; api_graph.c). */
struct Graph;
struct GNode;
typedef struct KGraph {
  KObjKind okind;       /* KOBJ_GRAPH */
  struct Graph *g;      /* owned */
  int opt_level;        /* the level graph.optimize ran at; -1: not optimized */
  int nparams;
  struct GNode **params; /* heap: the model's weights, constants of g */
} KGraph;
/* The graph optimized at level: kg's own graph when it came from
 * graph.optimize, else a new optimized copy the caller frees (graph_free);
 * NULL + error. */
struct Graph *api_graph_optimized(KGraph *kg, int level, const Target *t, int precision /* GraphPrecision */);
/* Optional argument i: a precision word ("fp32", "bf16"; absent or NULL:
 * fp32); 0, or -1 with an error. */
int api_precision_arg(const ApiCall *c, int i, int *out /* GraphPrecision */);
/* The records the API's builds use: the process-wide context that
 * autotvm.apply_history_best fills (api_autotvm.c), passed down
 * explicitly to the compiler. */
struct DispatchContext *api_dispatch(void);
/* A new KGraph owning g (freed on failure); its params are the constants
 * of g named in names[0..n). */
KGraph *api_kgraph_new(struct Graph *g, int opt_level, int n, const char *const *names);

/* ===== api_template.c ===== */

/* autotvm.register_template, space_info, space_entity, query_best:
 * templates written in a binding's language, rows of the template table. */
extern const ApiEntry api_template_funcs[];
struct Template;
/* Whether tm was registered by a binding (its candidates are generated in
 * the tuning process, MeasureOptions.in_process). */
bool api_template_in_process(const struct Template *tm);

/* ===== api_relay.c ===== */

/* relay.ops, var, const, call, info, function: graphs built call by call
 * (TVM's relay.* Python API), one function per op-table row. */
extern const ApiEntry api_relay_funcs[];

#endif
