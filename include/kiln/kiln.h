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
 *   driver.build(schedule, name, target, args...) -> KILN_MODULE; target
 *       "cpu", "llvm" or "c", else "target 'x' is not supported (supported:
 *       cpu)"
 *   driver.build_funcs(funcs...) -> KILN_MODULE
 *   driver.codegen_c(funcs...) -> str (the module's C source)
 *   driver.check_target(target) -> "cpu"
 *   driver.FuncName FuncArgs FuncBody FuncNotes (func)
 *
 *   runtime.module_export(module, path): copy the module's .so to path
 *   (the runtime itself registers runtime.module_load and
 *   runtime.module_get_function)
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
int kiln_init(void);

#ifdef __cplusplus
}
#endif
#endif
