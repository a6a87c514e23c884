/*
 * test_verify.c - the verifiers the pipelines run between passes
 * (graph_verify, ir_verify): well-formed graphs and lowered functions
 * pass, and each broken invariant is caught with its rule named; the op
 * table's ids and flags are consistent.
 */
#include "graph/graph.h"
#include "lower/lower.h"
#include "test.h"

/* x: [4] float32 -> relu -> output */
static Graph *small_graph(GNode **x, GNode **r) {
  Graph *g = graph_new();
  *x = graph_var(g, "x", ttype(DT_F32, 1, (int64_t[]){4}));
  *r = graph_call(g, "nn.relu", 1, x, gattrs_new(), "r");
  graph_add_output(g, *r);
  return g;
}

static void test_graph(void) {
  GNode *x, *r;
  Graph *g = small_graph(&x, &r);
  CHECK_OK(graph_verify(g, "test"));
  /* a type that is not the inferred one */
  r->type.shape[0] = 5;
  CHECK(graph_verify(g, "some_pass") != 0);
  CHECK_CONTAINS(kiln_get_error(), "graph_verify after some_pass: node 1 ('r', nn.relu): its type is not the one "
                                   "inferred from its arguments: Tensor[(5,), float32], inferred Tensor[(4,), float32]");
  r->type.shape[0] = 4;
  /* arity */
  r->nargs = 0;
  CHECK(graph_verify(g, "p") != 0);
  CHECK_CONTAINS(kiln_get_error(), "wrong number of arguments for the op: 0");
  r->nargs = 1;
  /* topological order: the call before its argument */
  g->nodes.data[0] = r, g->nodes.data[1] = x;
  r->id = 0, x->id = 1;
  CHECK(graph_verify(g, "p") != 0);
  CHECK_CONTAINS(kiln_get_error(), "an argument that is not an earlier node of the graph (topological order)");
  g->nodes.data[0] = x, g->nodes.data[1] = r;
  x->id = 0, r->id = 1;
  /* an id that is not the position */
  r->id = 7;
  CHECK(graph_verify(g, "p") != 0);
  CHECK_CONTAINS(kiln_get_error(), "its id is not its position in the node list");
  r->id = 1;
  /* an output from another graph */
  GNode *x2, *r2;
  Graph *other = small_graph(&x2, &r2);
  graph_add_output(g, r2);
  CHECK(graph_verify(g, NULL) != 0);
  CHECK_CONTAINS(kiln_get_error(), "graph_verify: output 1 is not a node of the graph");
  g->outputs.len--;
  CHECK_OK(graph_verify(g, NULL));
  graph_free(other);
  /* the pipeline checks its input and stops with the verifier's error */
  r->type.shape[0] = 3;
  GraphOptions go = {0, NULL, NULL, NULL, NULL, GRAPH_PRECISION_FP32};
  CHECK(graph_optimize(g, &go) == NULL); /* frees g */
  CHECK_CONTAINS(kiln_get_error(), "graph_verify after import: node 1 ('r', nn.relu): its type is not");
}

static LoweredFunc *func(Stmt *body, int nargs, Expr **bufs) {
  LoweredFunc *f = KNEW(LoweredFunc);
  f->okind = KOBJ_FUNC;
  f->name = "f";
  f->nargs = nargs;
  f->arg_bufs = bufs;
  f->body = body;
  return f;
}

static void test_ir(void) {
  Expr *A = ir_var("A", DT_HANDLE), *i = ir_var("i", DT_I32);
  Stmt *loop = ir_for(i, ir_i32(0), ir_i32(4), FOR_SERIAL, ir_store(A, ir_f32(0), i));
  CHECK_OK(ir_verify(func(loop, 1, (Expr *[]){A}), "test", true));
  /* a store to a buffer that is neither an argument nor allocated */
  CHECK(ir_verify(func(loop, 0, NULL), "flatten", true) != 0);
  CHECK_CONTAINS(kiln_get_error(), "ir_verify after flatten in 'f': a store to a buffer that is neither an argument "
                                   "nor allocated around it: A");
  /* ... allocated around it is fine */
  Stmt *alloc = ir_allocate(A, DT_F32, ir_i32(4), "local", loop);
  CHECK_OK(ir_verify(func(alloc, 0, NULL), "test", true));
  /* a loop variable used after its loop */
  Stmt *escape = ir_seq2(loop, ir_store(A, ir_f32(1), i));
  CHECK(ir_verify(func(escape, 1, (Expr *[]){A}), "unroll", true) != 0);
  CHECK_CONTAINS(kiln_get_error(), "ir_verify after unroll in 'f': variable used outside its binding: i");
  /* a load from a buffer nobody has */
  Expr *ghost = ir_var("ghost", DT_HANDLE);
  Stmt *ld = ir_for(i, ir_i32(0), ir_i32(4), FOR_SERIAL, ir_store(A, ir_load(DT_F32, ghost, i), i));
  CHECK(ir_verify(func(ld, 1, (Expr *[]){A}), "simplify", true) != 0);
  CHECK_CONTAINS(kiln_get_error(), "a load from a buffer that is neither an argument nor allocated around it: ghost");
  /* lanes: a 4-lane value stored at a scalar index */
  Stmt *st = ir_store(A, ir_f32(0), ir_i32(0));
  st->store.value = ir_bcast(ir_f32(0), 4);
  CHECK(ir_verify(func(st, 1, (Expr *[]){A}), "vectorize", true) != 0);
  CHECK_CONTAINS(kiln_get_error(), "ir_verify after vectorize in 'f': a store's value and index have different lanes");
  /* a Provide left after flattening (fine before) */
  Tensor *T = te_placeholder_c("T", 1, (int64_t[]){4}, DT_F32);
  Stmt *pv = ir_provide(T, ir_f32(0), 1, (Expr *[]){ir_i32(0)});
  CHECK_OK(ir_verify(func(pv, 0, NULL), "schedule_ops", false));
  CHECK(ir_verify(func(pv, 0, NULL), "flatten", true) != 0);
  CHECK_CONTAINS(kiln_get_error(), "a Provide is left after flattening: T");
  /* a real lowering, vectorized, passes the checks after every pass
   * (main.c sets KILN_VERIFY) */
  Tensor *X = te_placeholder_c("X", 1, (int64_t[]){64}, DT_F32);
  Expr **v = te_axis_vars(1, (const char *[]){"j"});
  Tensor *B = te_compute("B", 1, (Expr *[]){ir_i32(64)}, v, ir_mul(te_read1(X, v[0]), ir_f32(2)), "elemwise");
  Schedule *s = te_create_schedule(1, &B);
  Stage *sb = sch_stage(s, B);
  IterVar *o, *in;
  CHECK_OK(stage_split(sb, stage_axis(sb, 0), ir_i32(8), &o, &in));
  CHECK_OK(stage_vectorize(sb, in));
  CHECK(kiln_verify_enabled());
  CHECK_NN(kiln_lower(s, 2, (Tensor *[]){X, B}, "vec", NULL));
}

/* The op table: each id of GRAPH_OP_IDS on the row of its name, names
 * unique, every row with a compute or a reason not to have one. */
static void test_op_table(void) {
  CHECK_OK(op_table_check());
  CHECK_OK(graph_gradient_rules_check()); /* every derivative rule names a row */
  CHECK(op_by_id(OP_CONV2D) == op_lookup("nn.conv2d"));
  CHECK(op_by_id(OP_DENSE_PACK) == op_lookup("nn.contrib_dense_pack"));
  CHECK(op_lookup("multiply")->flags & OPF_BLOCKED_BROADCAST);
  CHECK(op_lookup("nn.max_pool2d")->flags & OPF_BLOCKED_LAYOUT);
  CHECK(!(op_lookup("nn.relu")->flags & OPF_BLOCKED_BROADCAST));
  CHECK(op_lookup("nn.relu")->flags & OPF_PAD_SAFE);
  CHECK(!(op_lookup("exp")->flags & OPF_PAD_SAFE)); /* not finite on finite values */
  int pad_safe = 0;
  for (int i = 0; i < op_count(); i++) pad_safe += (op_at(i)->flags & OPF_PAD_SAFE) != 0;
  CHECK_INT(pad_safe, 24);
  int n = op_count();
  for (int i = 0; i < n; i++) {
    const OpDef *d = op_at(i);
    /* only the ops simplify_inference removes, and the host ops (functions
     * of the runtime, ops/strings.c), have no compute */
    if (!d->compute) CHECK(d->id == OP_BATCH_NORM || d->id == OP_DROPOUT || (d->host && d->pattern == PAT_OPAQUE));
    if (d->host) CHECK(!d->compute);
  }
}

const TestCase verify_tests[] = {
    {"op_table", test_op_table},
    {"graph", test_graph},
    {"ir", test_ir},
    {NULL, NULL},
};
