/*
 * kiln/kiln.h - Kiln's compiler C API.
 *
 * The compiler is reached through the runtime's global function registry
 * (kiln/runtime.h), as TVM's is: kiln_init registers every compiler entry
 * point under a dotted name, and a program (or a language binding such as
 * python/kiln, which binds the names by prefix) looks them up with
 * kiln_func_get_global and calls them with kiln_func_call.
 *
 * Compiler objects - expressions, statements, iteration variables,
 * tensors, stages, schedules, lowered functions, reducers and arrays of
 * these - travel as KILN_OBJECT handles (v_handle).  Every function checks
 * the kind of each handle it gets and fails with a message naming the
 * function and the argument ("schedule.split: argument 1 (axis) must be an
 * IterVar, got a Tensor"); a NULL handle is an error, never a crash.
 * Objects are allocated in the calling thread's current arena (the
 * process-wide default arena unless the caller pushed its own); they are
 * never freed one by one, so IR made from Python lives until the process
 * exits.  Built modules (KILN_MODULE) are owned by the caller
 * (kiln_module_free).
 *
 * Conventions for arguments: a parameter documented as an expression also
 * takes an IterVar (its variable) or a plain number (KILN_INT becomes an
 * int32 constant, int64 if it does not fit; KILN_FLOAT a float32 one;
 * mixed with an expression, the number takes the expression's type).  A
 * dtype is a KILN_STR such as "float32" or a KILN_DTYPE.  A trailing "..."
 * list takes either the items as further arguments or one api.Array.
 * "?" marks an optional argument (KILN_NULL or absent).  api.FuncParams
 * returns each function's parameter list as written below.
 *
 *   api.ObjectKind(obj) -> "Expr" | "Stmt" | "IterVar" | "Tensor" | "Stage"
 *                          | "Schedule" | "LoweredFunc" | "Reducer" | "Array"
 *                          | "Graph" | "Target"
 *   api.TypeKey(obj) -> the kind, or "Expr.Add", "Stmt.For"...
 *   api.Array(items...) -> array        api.ArraySize(array) -> int
 *   api.ArrayGetItem(array, index)      api.FuncParams(name) -> str
 *
 *   ir.IntImm(value, dtype?)  ir.FloatImm(value, dtype?)  ir.StringImm(value)
 *   ir.Var(name, dtype?)  ir.MaxValue(dtype)  ir.MinValue(dtype)
 *   ir.BinaryOp(op, a, b): op is add sub mul div mod floordiv floormod min
 *       max eq ne lt le gt ge and or
 *   ir.Not(a)  ir.Neg(a)  ir.Select(cond, true_value, false_value)
 *   ir.Cast(dtype, value)  ir.Call(name, args...): an intrinsic (exp, log,
 *       sqrt, tanh, sigmoid, pow...; ir.Intrinsics() lists "name:nargs")
 *   ir.Let(var, value, body)
 *   ir.Reduce(combiner, source, cond, axes...): combiner "sum" | "prod" |
 *       "max" | "min" or a Reducer; cond a bool expression or null
 *   ir.CommReducer(lhs, rhs, result, identity) -> Reducer
 *   ir.ExprKind ExprDType ExprIntValue ExprFloatValue ExprStrValue VarName
 *       CallName ReadTensor ExprOperands (expr)
 *   ir.AsText(node) -> str (any object; a LoweredFunc prints its body)
 *   ir.Simplify(node)  ir.StructuralEqual(a, b) -> 0/1
 *   ir.StructuralHash(node) -> int
 *
 *   te.placeholder(name, dtype, shape...) -> Tensor
 *   te.axis_vars(ndim, names...) -> array of Vars
 *   te.compute(name, tag, shape, vars, body) -> Tensor (shape and vars are
 *       arrays, tag may be null)
 *   te.reduce_axis(min, extent, name?) -> IterVar
 *   te.thread_axis(tag, extent?) -> IterVar
 *   te.read(tensor, indices...) -> Expr
 *   te.TensorName TensorTag TensorNDim TensorDType TensorShape TensorAxis
 *       TensorReduceAxis TensorOpKind TensorBody TensorInputs (tensor)
 *   te.IterVarVar IterVarName IterVarRange IterVarKind IterVarThreadTag
 *
 *   schedule.create_schedule(outputs...) -> Schedule
 *   schedule.Stage(schedule, tensor) -> Stage
 *   schedule.split(stage, axis, factor) -> [outer, inner]
 *   schedule.split_nparts(stage, axis, nparts) -> [outer, inner]
 *   schedule.tile(stage, x_axis, y_axis, x_factor, y_factor)
 *       -> [x_outer, y_outer, x_inner, y_inner]
 *   schedule.fuse(stage, axes...) -> IterVar
 *   schedule.reorder / vectorize / unroll / parallel (stage, axis...)
 *   schedule.bind(stage, axis, thread)  schedule.pragma(stage, axis, key, value?)
 *   schedule.prefetch(stage, tensor, axis, offset, locality?)
 *   schedule.prefetch_spread(stage, axis, along, parts)
 *   schedule.compute_inline(stage)  schedule.compute_root(stage)
 *   schedule.compute_at(stage, parent, axis)
 *   schedule.cache_read(schedule, tensor, scope, readers...) -> Tensor
 *   schedule.cache_write(schedule, tensor, scope) -> Tensor
 *   schedule.check(schedule)
 *   schedule.StageOp StageOrigin StageAxis StageReduceAxis StageLeafIters
 *       StageAllIters StageAttach StageScope (stage)
 *   schedule.ScheduleStages ScheduleOutputs (schedule)
 *
 *   driver.lower(schedule, name, simple_mode, args...) -> LoweredFunc
 *   driver.build(schedule, name, target, args...) -> KILN_MODULE
 *   driver.build_funcs(funcs...) -> KILN_MODULE (for the host CPU)
 *   driver.codegen_c(funcs...) -> str (the module's C source)
 *   driver.check_target(target) -> str: the canonical target string
 *
 * Targets.  Wherever a function takes a target it takes a target string
 * (TVM's: "llvm -mcpu=skylake-avx512", "cpu", "c") or a Target object;
 * one Kiln cannot build for is an error that lists the kinds it can
 * ("target 'cuda' is not supported (supported: llvm, cpu, c)"), as is an
 * attribute the kind does not take, an unknown -mcpu, a -mtriple for
 * another architecture, a -device other than cpu.
 *   target.create(target, host?) -> Target (parsed once; host: the host
 *       target string, for device targets)
 *   target.Str(t) -> str: canonical ("llvm -mcpu=x86-64-v4": a CPU target
 *       without -mcpu names this machine's x86-64 level)
 *   target.Kind(t) -> str   target.Keys(t) -> str ("cpu", comma-separated)
 *   target.Attr(t, name) -> str or null ("mcpu", "mtriple", "device",
 *       "keys", "model", "arch", "max_threads_per_block", ...)
 *   target.VectorLanes(t) -> int: float32 lanes templates block by
 *   target.DeviceType(t) -> int (DLDeviceType: 1 = CPU)
 *   target.Host(t) -> Target
 *   target.MaxThreadsPerBlock MaxSharedMemoryPerBlock ThreadWarpSize (t)
 *       -> int (GPU kinds; 0 for CPU targets)
 *   target.Kinds() -> str: every first word a target may have
 *   driver.FuncName FuncArgs FuncBody FuncNotes (func)
 *
 *   runtime.module_export(module, path): copy the module's .so to path
 *   (the runtime itself registers runtime.module_load and
 *   runtime.module_get_function)
 *
 * Models (TVM's relay.frontend.from_onnx and relay.build).  A Graph, unlike
 * the objects above, owns memory (its arena and its constants' data) and
 * must be freed with graph.free, once; functions never change a graph but
 * return new ones, which may outlive the graph they came from.
 *   graph.from_onnx(model, shapes...) -> Graph: model is a path (str) or
 *       the model's bytes (KILN_BYTES); shapes bind the inputs' dynamic
 *       dimensions: one str in the CLI's syntax ("data:[1,3,224,224],
 *       mask:[1,128]") or (str name, Array of ints) pairs.  Errors: the
 *       loader's (missing file, bad bytes with the field and offset), the
 *       importer's (unsupported op, a shape for no input, a missing one)
 *   graph.free(graph)
 *   graph.as_text(graph) -> str: Relay text, fn (%data: Tensor[...]) {...}
 *   graph.fused_text(graph, opt_level) -> str: the graph as it is, fused,
 *       groups shown as primitive functions with TVM's names (kiln show)
 *   graph.optimize(graph, opt_level) -> Graph: the pass pipeline (0-3)
 *   graph.bind_params(graph, name, tensor, ...) -> Graph: a copy whose
 *       parameters of those names hold copies of the tensors (shape and
 *       dtype must match)
 *   graph.build(graph, opt_level, target) -> KILN_MODULE: optimize (unless
 *       the graph came from graph.optimize), fuse, generate and compile one
 *       .so with the kernels, "graph_json", "param_index" and "param_data" (a temporary file
 *       kept until exit, so runtime.module_export can copy it), and load it;
 *       runtime.graph_executor.create(module) runs it
 *   graph.opt_level(graph) -> int: the level graph.optimize ran at to make
 *       the graph, -1 for other graphs
 *   graph.num_inputs(graph) -> int   graph.num_outputs(graph) -> int
 *   graph.input_name(graph, i) -> str
 *   graph.input_shape / output_shape(graph, i) -> ndarray (int64)
 *   graph.input_dtype / output_dtype(graph, i) -> str
 *   graph.num_params(graph) -> int: the model's initializers the graph uses
 *       as constants (TVM's params); 0 after graph.optimize, which folds them
 *   graph.param_name(graph, i) -> str
 *   graph.param(graph, i) -> ndarray: a view of the parameter's data
 *   runtime.graph_executor.benchmark(executor, number, repeat) -> ndarray
 *       (float64 [repeat]): after one warm-up run, the mean time of a run in
 *       ms over `number` runs, `repeat` times (TVM's time_evaluator)
 *
 * Tuning (AutoTVM's flow; python/kiln/autotvm documents the JSON fields):
 *   autotvm.extract_tasks(graph, opt_level, target) -> str: the tasks of the
 *       graph optimized at opt_level, a JSON array of {name, args, target,
 *       workload, config_space_size, flops, desc, nodes}
 *   autotvm.tune_task(task_json, tuner, options_json) -> str: tune one task
 *       ("xgb", "ga", "random", "gridsearch"), records appended to
 *       options_json's "log_file"; a JSON summary
 *   autotvm.apply_history_best(path) -> int token: add a records file to the
 *       dispatch context graph builds consult (process-wide)
 *   autotvm.apply_history_best_exit(token): remove it (and later ones)
 *
 * Example: B[i] = A[i] + 2 over 3 elements, built into a module.
 *
 *     #include <stdio.h>
 *     #include <kiln/kiln.h>
 *
 *     // Call the global function `name`; on failure print why, return -1.
 *     static int call(const char *name, int n, KilnValue *args, int *codes, KilnValue *ret) {
 *       KilnFunction *f;
 *       int ret_code;
 *       if (kiln_func_get_global(name, &f) || !f) {
 *         fprintf(stderr, "no function %s\n", name);
 *         return -1;
 *       }
 *       int rc = kiln_func_call(f, args, codes, n, ret, &ret_code);
 *       kiln_func_free(f);
 *       if (rc) fprintf(stderr, "%s\n", kiln_last_error());
 *       return rc;
 *     }
 *     #define OBJ(v) {.v_handle = (v).v_handle}
 *
 *     int main(void) {
 *       KilnValue A, vars, i, read, body, shape, B, s, mod, r;
 *       if (kiln_init()) return fprintf(stderr, "%s\n", kiln_last_error()), 1;
 *       if (call("te.placeholder", 3, (KilnValue[]){{.v_str = "A"}, {.v_str = "float32"},
 *                {.v_int64 = 3}}, (int[]){KILN_STR, KILN_STR, KILN_INT}, &A) ||
 *           call("te.axis_vars", 2, (KilnValue[]){{.v_int64 = 1}, {.v_str = "i"}},
 *                (int[]){KILN_INT, KILN_STR}, &vars) ||
 *           call("api.ArrayGetItem", 2, (KilnValue[]){OBJ(vars), {.v_int64 = 0}},
 *                (int[]){KILN_OBJECT, KILN_INT}, &i) ||
 *           call("te.read", 2, (KilnValue[]){OBJ(A), OBJ(i)},
 *                (int[]){KILN_OBJECT, KILN_OBJECT}, &read) ||
 *           call("ir.BinaryOp", 3, (KilnValue[]){{.v_str = "add"}, OBJ(read), {.v_int64 = 2}},
 *                (int[]){KILN_STR, KILN_OBJECT, KILN_INT}, &body) ||
 *           call("api.Array", 1, (KilnValue[]){{.v_int64 = 3}}, (int[]){KILN_INT}, &shape) ||
 *           call("te.compute", 5, (KilnValue[]){{.v_str = "B"}, {.v_handle = NULL}, OBJ(shape),
 *                OBJ(vars), OBJ(body)}, (int[]){KILN_STR, KILN_NULL, KILN_OBJECT, KILN_OBJECT,
 *                KILN_OBJECT}, &B) ||
 *           call("schedule.create_schedule", 1, &B, (int[]){KILN_OBJECT}, &s) ||
 *           call("driver.build", 5, (KilnValue[]){OBJ(s), {.v_str = "add2"}, {.v_str = "cpu"},
 *                OBJ(A), OBJ(B)}, (int[]){KILN_OBJECT, KILN_STR, KILN_STR, KILN_OBJECT,
 *                KILN_OBJECT}, &mod))
 *         return 1;
 *       // A handle of the wrong kind is a message, not a crash; this prints
 *       // "schedule.split: argument 0 (stage) must be a Stage, got a Schedule".
 *       call("schedule.split", 3, (KilnValue[]){OBJ(s), OBJ(i), {.v_int64 = 4}},
 *            (int[]){KILN_OBJECT, KILN_OBJECT, KILN_INT}, &r);
 *       // Run it: kiln_module_get_function(mod.v_handle, "add2", &f), then
 *       // kiln_func_call with two float32 arrays of 3, as in kiln/runtime.h.
 *       kiln_module_free(mod.v_handle);
 *       return 0;
 *     }
 *
 * (tests/unit/test_api.c, header_example, makes the same calls and runs
 * the module.)
 */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Register every compiler function above in the global registry.  Call it
 * once before looking them up; further calls (from any thread) do nothing
 * and return the first call's status.  Returns 0, or -1 with a message in
 * kiln_last_error() (a name was already registered by someone else). */
KILN_API int kiln_init(void);

#ifdef __cplusplus
}
#endif
#endif
