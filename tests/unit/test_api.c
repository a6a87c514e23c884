/*
 * test_api.c - the compiler C API through the global registry: kiln_init,
 * the example of kiln/kiln.h built and run, lowering text, and every kind
 * of bad argument (wrong handle kind, NULL handle, wrong type code, wrong
 * count) failing with a message that names the function and the argument.
 */
#include <pthread.h>

#include "api/api.h"
#include "kernel_util.h"

/* Call a global function; 0 on success. */
static int call(const char *name, int n, KilnValue *args, int *codes, KilnValue *ret, int *ret_code) {
  KilnFunction *f = NULL;
  /* the registry is filled by kiln_init (idempotent): a test run alone
   * (kiln_unit api.graph_flow) must not depend on init_and_names before it */
  if (kiln_init()) {
    test_fail(__FILE__, __LINE__, "kiln_init: %s", kiln_last_error());
    return -1;
  }
  if (kiln_func_get_global(name, &f) || !f) {
    test_fail(__FILE__, __LINE__, "no global function %s", name);
    return -1;
  }
  KilnValue r;
  int rc_code;
  int rc = kiln_func_call(f, args, codes, n, ret ? ret : &r, ret_code ? ret_code : &rc_code);
  kiln_func_free(f);
  return rc;
}

#define V_OBJ(p) ((KilnValue){.v_handle = (p)})
#define V_STR(s) ((KilnValue){.v_str = (s)})
#define V_INT(i) ((KilnValue){.v_int64 = (i)})

/* Call and expect an object back. */
static void *call_obj(const char *name, int n, KilnValue *args, int *codes) {
  KilnValue r;
  int code;
  if (call(name, n, args, codes, &r, &code)) {
    test_fail(__FILE__, __LINE__, "%s failed: %s", name, kiln_last_error());
    return NULL;
  }
  if (code != KILN_OBJECT) {
    test_fail(__FILE__, __LINE__, "%s returned type code %d", name, code);
    return NULL;
  }
  return r.v_handle;
}

/* Call, expect failure with a message containing `msg`. */
#define CHECK_FAILS(name, n, args, codes, msg)                                 \
  do {                                                                         \
    CHECK(call(name, n, args, codes, NULL, NULL) != 0);                        \
    CHECK_CONTAINS(kiln_last_error(), msg);                                    \
  } while (0)

static void *init_thread(void *p) {
  *(int *)p = kiln_init();
  return NULL;
}

static void test_init_and_names(void) {
  pthread_t th[4];
  int rc[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, init_thread, &rc[i]);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) CHECK_INT(rc[i], 0);
  CHECK_OK(kiln_init()); /* idempotent */
  int n;
  const char **names;
  CHECK_OK(kiln_func_list_global_names(&n, &names));
  const char *want[] = {"ir.BinaryOp", "ir.AsText", "te.placeholder", "te.compute",
                        "schedule.split", "schedule.cache_read", "driver.lower", "driver.build",
                        "runtime.module_export", "runtime.module_load", "api.Array"};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    bool found = false;
    for (int i = 0; i < n; i++) found |= !strcmp(names[i], want[w]);
    CHECK_MSG(found, "%s is not registered", want[w]);
  }
  KilnValue r;
  int code;
  CHECK_OK(call("api.FuncParams", 1, (KilnValue[]){V_STR("schedule.split")}, (int[]){KILN_STR}, &r, &code));
  CHECK_STR(r.v_str, "stage, axis, factor");
}

/* The example of kiln/kiln.h: B[i] = A[i] + 2, built and run. */
static void test_header_example(void) {
  CHECK_OK(kiln_init());
  int S = KILN_STR, I = KILN_INT, O = KILN_OBJECT;
  void *A = call_obj("te.placeholder", 3, (KilnValue[]){V_STR("A"), V_STR("float32"), V_INT(3)}, (int[]){S, S, I});
  void *vars = call_obj("te.axis_vars", 2, (KilnValue[]){V_INT(1), V_STR("i")}, (int[]){I, S});
  void *i = call_obj("api.ArrayGetItem", 2, (KilnValue[]){V_OBJ(vars), V_INT(0)}, (int[]){O, I});
  void *read = call_obj("te.read", 2, (KilnValue[]){V_OBJ(A), V_OBJ(i)}, (int[]){O, O});
  void *body = call_obj("ir.BinaryOp", 3, (KilnValue[]){V_STR("add"), V_OBJ(read), V_INT(2)}, (int[]){S, O, I});
  if (!A || !body) return;
  CHECK_STR(ir_expr_str(body), "(A[i] + 2f)");
  void *shape = call_obj("api.Array", 1, (KilnValue[]){V_INT(3)}, (int[]){I});
  void *B = call_obj("te.compute", 5,
                     (KilnValue[]){V_STR("B"), V_OBJ(NULL), V_OBJ(shape), V_OBJ(vars), V_OBJ(body)},
                     (int[]){S, KILN_NULL, O, O, O});
  void *s = call_obj("schedule.create_schedule", 1, (KilnValue[]){V_OBJ(B)}, (int[]){O});
  if (!s) return;
  KilnValue r;
  int code;
  CHECK_OK(call("driver.build", 5, (KilnValue[]){V_OBJ(s), V_STR("add2"), V_STR("cpu"), V_OBJ(A), V_OBJ(B)},
                (int[]){O, S, S, O, O}, &r, &code));
  CHECK_INT(code, KILN_MODULE);
  if (code != KILN_MODULE) return;
  KilnModule *mod = r.v_handle;
  DLTensor *a = tk_array_for(A), *b = tk_array_for(B);
  tk_fill(a, 1.5);
  tk_fill(b, 0);
  CHECK_OK(tk_call(mod, "add2", 2, (DLTensor *[]){a, b}));
  for (int k = 0; k < 3; k++) CHECK(tk_get(b, k) == 3.5);
  /* export copies the .so; the copy loads and runs */
  char *dir = kiln_mkdtemp("kiln-api-test-");
  const char *path = kfmt("%s/add2.so", dir);
  CHECK_OK(call("runtime.module_export", 2, (KilnValue[]){V_OBJ(mod), V_STR(path)}, (int[]){KILN_MODULE, S}, NULL, NULL));
  KilnModule *m2;
  CHECK_OK(kiln_module_load(path, &m2));
  tk_fill(a, -1);
  CHECK_OK(tk_call(m2, "add2", 2, (DLTensor *[]){a, b}));
  CHECK(tk_get(b, 2) == 1.0);
  kiln_module_free(m2);
  kiln_module_free(mod);
  kiln_rmtree(dir);
  free(dir);
  kiln_array_free(a);
  kiln_array_free(b);
  /* the example's closing error */
  CHECK_FAILS("schedule.split", 3, ((KilnValue[]){V_OBJ(s), V_OBJ(i), V_INT(4)}), ((int[]){O, O, I}),
              "schedule.split: argument 0 (stage) must be a Stage, got a Schedule");
}

/* The seeds' 128-element vector add, lowered through the API. */
static void test_lower_text(void) {
  CHECK_OK(kiln_init());
  int S = KILN_STR, O = KILN_OBJECT;
  void *n = call_obj("ir.IntImm", 2, (KilnValue[]){V_INT(128), V_STR("int32")}, (int[]){KILN_INT, S});
  void *a = call_obj("te.placeholder", 3, (KilnValue[]){V_STR("a"), V_STR("float32"), V_OBJ(n)}, (int[]){S, S, O});
  void *b = call_obj("te.placeholder", 3, (KilnValue[]){V_STR("b"), V_STR("float32"), V_OBJ(n)}, (int[]){S, S, O});
  void *vars = call_obj("te.axis_vars", 1, (KilnValue[]){V_INT(1)}, (int[]){KILN_INT});
  KArray *va = vars;
  if (!a || !b || !va) return;
  void *ra = call_obj("te.read", 2, (KilnValue[]){V_OBJ(a), V_OBJ(va->items[0])}, (int[]){O, O});
  void *rb = call_obj("te.read", 2, (KilnValue[]){V_OBJ(b), V_OBJ(va->items[0])}, (int[]){O, O});
  void *body = call_obj("ir.BinaryOp", 3, (KilnValue[]){V_STR("add"), V_OBJ(ra), V_OBJ(rb)}, (int[]){S, O, O});
  void *shape = call_obj("api.Array", 1, (KilnValue[]){V_OBJ(n)}, (int[]){O});
  void *c = call_obj("te.compute", 5, (KilnValue[]){V_STR("c"), V_STR(""), V_OBJ(shape), V_OBJ(vars), V_OBJ(body)},
                     (int[]){S, S, O, O, O});
  void *s = call_obj("schedule.create_schedule", 1, (KilnValue[]){V_OBJ(c)}, (int[]){O});
  void *f = call_obj("driver.lower", 6,
                     (KilnValue[]){V_OBJ(s), V_STR("vadd"), V_INT(1), V_OBJ(a), V_OBJ(b), V_OBJ(c)},
                     (int[]){O, S, KILN_INT, O, O, O});
  if (!f) return;
  KilnValue r;
  int code;
  CHECK_OK(call("ir.AsText", 1, (KilnValue[]){V_OBJ(f)}, (int[]){O}, &r, &code));
  CHECK_STR(r.v_str, "produce c {\n  for (i, 0, 128) {\n    c[i] = (a[i] + b[i])\n  }\n}\n");
  CHECK_OK(call("api.ObjectKind", 1, (KilnValue[]){V_OBJ(f)}, (int[]){O}, &r, &code));
  CHECK_STR(r.v_str, "LoweredFunc");
  CHECK_OK(call("api.TypeKey", 1, (KilnValue[]){V_OBJ(body)}, (int[]){O}, &r, &code));
  CHECK_STR(r.v_str, "Expr.Add");
  CHECK_OK(call("ir.AsText", 1, (KilnValue[]){V_OBJ(c)}, (int[]){O}, &r, &code));
  CHECK_STR(r.v_str, "Tensor(shape=[128], op.name=c)");
  /* split returns [outer, inner]; the old axis is then no leaf */
  void *st = call_obj("schedule.Stage", 2, (KilnValue[]){V_OBJ(s), V_OBJ(c)}, (int[]){O, O});
  void *axes = call_obj("schedule.StageAxis", 1, (KilnValue[]){V_OBJ(st)}, (int[]){O});
  if (!axes) return;
  void *x = ((KArray *)axes)->items[0];
  KArray *parts = call_obj("schedule.split", 3, (KilnValue[]){V_OBJ(st), V_OBJ(x), V_INT(32)}, (int[]){O, O, KILN_INT});
  if (!parts) return;
  CHECK_INT(parts->n, 2);
  CHECK_OK(call("ir.AsText", 1, (KilnValue[]){V_OBJ(parts)}, (int[]){O}, &r, &code));
  CHECK_STR(r.v_str, "[iter_var(i.outer), iter_var(i.inner)]");
  CHECK_FAILS("schedule.split", 3, ((KilnValue[]){V_OBJ(st), V_OBJ(x), V_INT(4)}), ((int[]){O, O, KILN_INT}),
              "is no longer a leaf");
  CHECK(strncmp(kiln_last_error(), "schedule.split: ", 16) == 0);
}

static void test_bad_arguments(void) {
  CHECK_OK(kiln_init());
  int S = KILN_STR, I = KILN_INT, O = KILN_OBJECT;
  void *A = call_obj("te.placeholder", 3, (KilnValue[]){V_STR("A"), V_STR("float32"), V_INT(8)}, (int[]){S, S, I});
  if (!A) return;
  /* a Tensor where an Expr goes: the tag is checked */
  CHECK_FAILS("ir.BinaryOp", 3, ((KilnValue[]){V_STR("add"), V_OBJ(A), V_INT(1)}), ((int[]){S, O, I}),
              "ir.BinaryOp: argument 1 (a) must be an Expr, an IterVar or a number, got a Tensor");
  /* a NULL handle */
  CHECK_FAILS("te.read", 2, ((KilnValue[]){V_OBJ(NULL), V_INT(0)}), ((int[]){O, I}),
              "te.read: argument 0 (tensor) must be a Tensor, got a NULL handle");
  /* a str where a tensor goes */
  CHECK_FAILS("schedule.create_schedule", 1, ((KilnValue[]){V_STR("B")}), ((int[]){S}),
              "schedule.create_schedule: argument 0 (outputs) must be a Tensor, got str (type code 11)");
  /* a handle that is not a compiler object at all (a DLTensor) */
  DLTensor *t = tk_array(1, (int64_t[]){4}, DT_F32);
  memset(t->data, 0, 16);
  CHECK_FAILS("te.TensorName", 1, ((KilnValue[]){V_OBJ(t)}), ((int[]){O}),
              "te.TensorName: argument 0 (tensor) must be a Tensor, got an object of unknown kind");
  CHECK_FAILS("te.TensorName", 1, ((KilnValue[]){V_OBJ(t)}), ((int[]){KILN_NDARRAY}),
              "got ndarray (type code 13)");
  kiln_array_free(t);
  /* counts */
  CHECK_FAILS("schedule.split", 2, ((KilnValue[]){V_OBJ(A), V_OBJ(A)}), ((int[]){O, O}),
              "schedule.split: expected 3 arguments (stage, axis, factor), got 2");
  CHECK_FAILS("ir.Var", 0, NULL, NULL, "ir.Var: expected 1 to 2 arguments (name, dtype?), got 0");
  /* values */
  CHECK_FAILS("ir.BinaryOp", 3, ((KilnValue[]){V_STR("pow"), V_INT(1), V_INT(2)}), ((int[]){S, I, I}),
              "unknown operator 'pow'");
  CHECK_FAILS("ir.Call", 2, ((KilnValue[]){V_STR("expp"), V_INT(1)}), ((int[]){S, I}), "unknown intrinsic 'expp'");
  CHECK_FAILS("te.placeholder", 3, ((KilnValue[]){V_STR("A"), V_STR("floaty"), V_INT(8)}), ((int[]){S, S, I}),
              "'floaty' is not a data type");
  CHECK_FAILS("api.ArrayGetItem", 2, ((KilnValue[]){V_OBJ(A), V_INT(0)}), ((int[]){O, I}),
              "api.ArrayGetItem: argument 0 (array) must be an Array, got a Tensor");
  /* an unsupported target */
  void *vars = call_obj("te.axis_vars", 1, (KilnValue[]){V_INT(1)}, (int[]){I});
  void *i = vars ? ((KArray *)vars)->items[0] : NULL;
  void *rd = call_obj("te.read", 2, (KilnValue[]){V_OBJ(A), V_OBJ(i)}, (int[]){O, O});
  void *shape = call_obj("api.Array", 1, (KilnValue[]){V_INT(8)}, (int[]){I});
  void *B = call_obj("te.compute", 5, (KilnValue[]){V_STR("B"), V_OBJ(NULL), V_OBJ(shape), V_OBJ(vars), V_OBJ(rd)},
                     (int[]){S, KILN_NULL, O, O, O});
  void *s = call_obj("schedule.create_schedule", 1, (KilnValue[]){V_OBJ(B)}, (int[]){O});
  CHECK_FAILS("driver.build", 5, ((KilnValue[]){V_OBJ(s), V_STR("f"), V_STR("rocm"), V_OBJ(A), V_OBJ(B)}),
              ((int[]){O, S, S, O, O}), "target 'rocm' is not supported (supported: llvm, cpu, c, cuda, opencl)");
  /* a GPU target needs thread-bound loops */
  CHECK_FAILS("driver.build", 5, ((KilnValue[]){V_OBJ(s), V_STR("f"), V_STR("cuda"), V_OBJ(A), V_OBJ(B)}),
              ((int[]){O, S, S, O, O}), "stage 'B' has no loop bound to a GPU thread");
  /* an IterVar of another stage, a Stage where a Schedule goes */
  void *st = call_obj("schedule.Stage", 2, (KilnValue[]){V_OBJ(s), V_OBJ(B)}, (int[]){O, O});
  void *k = call_obj("te.reduce_axis", 3, (KilnValue[]){V_INT(0), V_INT(4), V_STR("k")}, (int[]){I, I, S});
  CHECK_FAILS("schedule.vectorize", 2, ((KilnValue[]){V_OBJ(st), V_OBJ(k)}), ((int[]){O, O}),
              "does not belong to stage 'B'");
  CHECK_FAILS("schedule.cache_write", 3, ((KilnValue[]){V_OBJ(st), V_OBJ(B), V_STR("local")}), ((int[]){O, O, S}),
              "argument 0 (schedule) must be a Schedule, got a Stage");
  CHECK_FAILS("schedule.compute_at", 3, ((KilnValue[]){V_OBJ(st), V_OBJ(s), V_OBJ(k)}), ((int[]){O, O, O}),
              "argument 1 (parent) must be a Stage, got a Schedule");
  /* a reduction over a data axis */
  CHECK_FAILS("ir.Reduce", 4, ((KilnValue[]){V_STR("sum"), V_OBJ(rd), V_OBJ(NULL), V_OBJ(i)}),
              ((int[]){S, O, KILN_NULL, O}), "argument 3 (axes) must be an IterVar, got an Expr");
}

static void test_exprs(void) {
  CHECK_OK(kiln_init());
  int S = KILN_STR, I = KILN_INT, O = KILN_OBJECT, F = KILN_FLOAT;
  void *x = call_obj("ir.Var", 2, (KilnValue[]){V_STR("x"), V_STR("int64")}, (int[]){S, S});
  void *y = call_obj("ir.Var", 2, (KilnValue[]){V_STR("y"), V_STR("float64")}, (int[]){S, S});
  void *e1 = call_obj("ir.BinaryOp", 3, (KilnValue[]){V_STR("mul"), V_INT(4), V_OBJ(x)}, (int[]){S, I, O});
  void *e2 = call_obj("ir.BinaryOp", 3, (KilnValue[]){V_STR("add"), V_OBJ(y), {.v_float64 = 0.1}}, (int[]){S, O, F});
  void *e3 = call_obj("ir.Call", 2, (KilnValue[]){V_STR("exp"), V_OBJ(y)}, (int[]){S, O});
  void *e4 = call_obj("ir.BinaryOp", 3, (KilnValue[]){V_STR("lt"), V_OBJ(x), V_INT(3)}, (int[]){S, O, I});
  void *e5 = call_obj("ir.Select", 3, (KilnValue[]){V_OBJ(e4), V_OBJ(y), V_INT(0)}, (int[]){O, O, I});
  if (!e1 || !e2 || !e3 || !e5) return;
  CHECK_STR(ir_expr_str(e1), "((int64)4*x)");
  CHECK_STR(ir_expr_str(e2), "(y + 0.10000000000000001)");
  CHECK_STR(ir_expr_str(e3), "exp(y)");
  CHECK(dt_eq(((Expr *)e5)->select.f->dtype, DT_F64)); /* 0 took y's type */
  KilnValue r;
  int code;
  CHECK_OK(call("ir.StructuralEqual", 2, (KilnValue[]){V_OBJ(e1), V_OBJ(e1)}, (int[]){O, O}, &r, &code));
  CHECK_INT(r.v_int64, 1);
  CHECK_OK(call("ir.StructuralEqual", 2, (KilnValue[]){V_OBJ(e1), V_OBJ(e2)}, (int[]){O, O}, &r, &code));
  CHECK_INT(r.v_int64, 0);
  void *simp = call_obj("ir.Simplify", 1,
                        (KilnValue[]){V_OBJ(call_obj("ir.BinaryOp", 3, (KilnValue[]){V_STR("add"), V_INT(2), V_INT(3)},
                                                     (int[]){S, I, I}))},
                        (int[]){O});
  if (simp) CHECK_STR(ir_expr_str(simp), "5");
  CHECK_OK(call("ir.ExprDType", 1, (KilnValue[]){V_OBJ(e4)}, (int[]){O}, &r, &code));
  CHECK_STR(r.v_str, "bool");
  CHECK_FAILS("ir.ExprIntValue", 1, ((KilnValue[]){V_OBJ(x)}), ((int[]){O}), "x is not an integer constant");
  /* a custom reducer */
  void *a = call_obj("ir.Var", 2, (KilnValue[]){V_STR("a"), V_STR("float32")}, (int[]){S, S});
  void *b = call_obj("ir.Var", 2, (KilnValue[]){V_STR("b"), V_STR("float32")}, (int[]){S, S});
  void *res = call_obj("ir.BinaryOp", 3, (KilnValue[]){V_STR("add"), V_OBJ(a), V_OBJ(b)}, (int[]){S, O, O});
  void *red = call_obj("ir.CommReducer", 4, (KilnValue[]){V_OBJ(a), V_OBJ(b), V_OBJ(res), V_INT(0)}, (int[]){O, O, O, I});
  if (red) CHECK_STR(api_as_text(red), "comm_reducer(result=[(a + b)], lhs=[a], rhs=[b], identity_element=[0f])");
}

/* graph.*: import the bundled digits model, print, optimize, build, run
 * through the executor, time it, free everything; and the errors. */
static void test_graph_flow(void) {
  enum { I = KILN_INT, S = KILN_STR, O = KILN_OBJECT };
  KilnValue r;
  int code;
  const char *path = kfmt("%s/models/digits/digits.onnx", test_root());
  void *g = call_obj("graph.from_onnx", 2, (KilnValue[]){V_STR(path), V_STR("image:[2,1,8,8]")},
                     (int[]){S, S});
  if (!g) return;
  CHECK_OK(call("api.ObjectKind", 1, (KilnValue[]){V_OBJ(g)}, (int[]){O}, &r, &code));
  CHECK_STR(r.v_str, "Graph");
  CHECK_OK(call("graph.num_params", 1, (KilnValue[]){V_OBJ(g)}, (int[]){O}, &r, &code));
  CHECK_INT(r.v_int64, 8);
  CHECK_OK(call("graph.as_text", 1, (KilnValue[]){V_OBJ(g)}, (int[]){O}, &r, &code));
  CHECK_CONTAINS(r.v_str, "fn (%image: Tensor[(2, 1, 8, 8), float32]");
  CHECK_OK(call("graph.param", 2, (KilnValue[]){V_OBJ(g), V_INT(0)}, (int[]){O, I}, &r, &code));
  CHECK_INT(code, KILN_NDARRAY);
  DLTensor *param = r.v_handle;
  void *opt = call_obj("graph.optimize", 2, (KilnValue[]){V_OBJ(g), V_INT(3)}, (int[]){O, I});
  /* the optimized graph and the param view outlive the graph they came from */
  CHECK_OK(call("graph.free", 1, (KilnValue[]){V_OBJ(g)}, (int[]){O}, NULL, NULL));
  CHECK(param->ndim >= 1 && param->data);
  kiln_array_free(param);
  if (!opt) return;
  CHECK_OK(call("graph.fused_text", 2, (KilnValue[]){V_OBJ(opt), V_INT(3)}, (int[]){O, I}, &r, &code));
  CHECK_CONTAINS(r.v_str, "fused_nn_contrib_conv2d_NCHWc_add_nn_relu = fn (");
  CHECK_OK(call("graph.build", 3, (KilnValue[]){V_OBJ(opt), V_INT(3), V_STR("llvm")}, (int[]){O, I, S},
                &r, &code));
  CHECK_OK(call("graph.free", 1, (KilnValue[]){V_OBJ(opt)}, (int[]){O}, NULL, NULL));
  if (code != KILN_MODULE) return;
  KilnModule *mod = r.v_handle;
  KilnGraphExecutor *ex = NULL;
  CHECK_OK(kiln_graph_executor_create(mod, &ex));
  kiln_module_free(mod); /* the executor keeps it */
  if (!ex) return;
  DLTensor *x;
  int64_t shape[4] = {2, 1, 8, 8};
  CHECK_OK(kiln_array_empty(4, shape, (DLDataType){kDLFloat, 32, 1}, (DLDevice){kDLCPU, 0}, &x));
  memset(x->data, 0, kiln_array_nbytes(x));
  CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "image", x));
  CHECK_OK(call("runtime.graph_executor.benchmark", 3, (KilnValue[]){{.v_handle = ex}, V_INT(2), V_INT(3)},
                (int[]){KILN_HANDLE, I, I}, &r, &code));
  if (code == KILN_NDARRAY) {
    DLTensor *t = r.v_handle;
    CHECK_INT(t->shape[0], 3);
    CHECK(((double *)t->data)[0] > 0);
    kiln_array_free(t);
  }
  CHECK_FAILS("runtime.graph_executor.benchmark", 3, ((KilnValue[]){{.v_handle = ex}, V_INT(0), V_INT(3)}),
              ((int[]){KILN_HANDLE, I, I}), "number and repeat must be at least 1");
  kiln_array_free(x);
  kiln_graph_executor_free(ex);
  /* errors */
  KilnBytes junk = {"\x08\x07\x12\x04junk\xff", 10};
  CHECK_FAILS("graph.from_onnx", 1, ((KilnValue[]){{.v_handle = &junk}}), ((int[]){KILN_BYTES}), "graph.from_onnx: ");
  CHECK_FAILS("graph.from_onnx", 2, ((KilnValue[]){V_STR("/no/such.onnx"), V_STR("x:[1]")}), ((int[]){S, S}),
              "/no/such.onnx");
  CHECK_FAILS("graph.from_onnx", 3, ((KilnValue[]){V_STR(path), V_STR("image"), V_INT(3)}), ((int[]){S, S, I}),
              "must be a list of ints");
  CHECK_FAILS("graph.from_onnx", 2, ((KilnValue[]){V_STR(path), V_STR("image:[1,1,8,8],input:[1]")}),
              ((int[]){S, S}), "'input', which is not an input of the model");
  CHECK_FAILS("graph.as_text", 1, ((KilnValue[]){V_INT(3)}), ((int[]){I}), "argument 0 (graph) must be a Graph, got int");
  CHECK_FAILS("graph.optimize", 2, ((KilnValue[]){V_OBJ(NULL), V_INT(3)}), ((int[]){O, I}),
              "argument 0 (graph) must be a Graph");
}

/* autotvm.*: task extraction as JSON, and the errors of the others (tuning
 * itself is tested through Python and test_autotune_tune). */
static void test_autotvm_api(void) {
  enum { I = KILN_INT, S = KILN_STR, O = KILN_OBJECT };
  KilnValue r;
  int code;
  const char *path = kfmt("%s/models/digits/digits.onnx", test_root());
  void *g = call_obj("graph.from_onnx", 2, (KilnValue[]){V_STR(path), V_STR("image:[1,1,8,8]")},
                     (int[]){S, S});
  if (!g) return;
  CHECK_OK(call("autotvm.extract_tasks", 3, (KilnValue[]){V_OBJ(g), V_INT(3), V_STR("llvm")}, (int[]){O, I, S},
                &r, &code));
  if (code == KILN_STR) {
    CHECK_CONTAINS(r.v_str, "\"name\":\"conv2d_NCHWc.x86\"");
    CHECK_CONTAINS(r.v_str, "\"nodes\":[\"fused_nn_contrib_conv2d_NCHWc_add_nn_relu\"]");
  }
  /* a GPU target lists TVM's CUDA tasks (kiln tasks --target cuda) */
  CHECK_OK(call("autotvm.extract_tasks", 3, (KilnValue[]){V_OBJ(g), V_INT(3), V_STR("cuda")}, (int[]){O, I, S}, &r,
                &code));
  if (code == KILN_STR) CHECK_CONTAINS(r.v_str, "\"name\":\"topi_nn_conv2d\"");
  CHECK_FAILS("autotvm.extract_tasks", 3, ((KilnValue[]){V_OBJ(g), V_INT(3), V_STR("rocm")}), ((int[]){O, I, S}),
              "target 'rocm' is not supported");
  CHECK_OK(call("graph.free", 1, (KilnValue[]){V_OBJ(g)}, (int[]){O}, NULL, NULL));
  CHECK_FAILS("autotvm.tune_task", 3, ((KilnValue[]){V_STR("{}"), V_STR("anneal"), V_STR("{}")}), ((int[]){S, S, S}),
              "tuner 'anneal' is not one of xgb, ga, random, gridsearch");
  CHECK_FAILS("autotvm.tune_task", 3, ((KilnValue[]){V_STR("[1"), V_STR("random"), V_STR("{}")}), ((int[]){S, S, S}),
              "not a JSON object");
  CHECK_FAILS("autotvm.tune_task", 3,
              ((KilnValue[]){V_STR("{\"name\": \"conv2d_NCHWc.x86\", \"args\": []}"), V_STR("random"), V_STR("{}")}),
              ((int[]){S, S, S}), "autotvm.tune_task: ");
  CHECK_FAILS("autotvm.apply_history_best", 1, ((KilnValue[]){V_STR("/no/such/records.json")}), ((int[]){S}),
              "/no/such/records.json");
  CHECK_FAILS("autotvm.apply_history_best_exit", 1, ((KilnValue[]){V_INT(12345)}), ((int[]){I}),
              "no open apply_history_best context 12345");
}

const TestCase api_tests[] = {
    {"init_and_names", test_init_and_names},
    {"header_example", test_header_example},
    {"lower_text", test_lower_text},
    {"bad_arguments", test_bad_arguments},
    {"exprs", test_exprs},
    {"graph_flow", test_graph_flow},
    {"autotvm_api", test_autotvm_api},
    {NULL, NULL},
};
