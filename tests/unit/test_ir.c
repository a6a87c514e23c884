/*
 * test_ir.c - the IR's printer, structural equality and hash, and
 * reference evaluator (the simplifier's tests: test_simplify.c, rule by
 * rule, and test_simplify_random.c, randomized properties).
 */
#include "test_ir.h"

Tensor *test_fake_tensor(const char *name) {
  Tensor *t = KNEW(Tensor);
  t->okind = KOBJ_TENSOR;
  t->name = name;
  t->dtype = DT_F32;
  return t;
}

/* A reduce axis over [0, extent). */
static IterVar *raxis(int64_t extent, const char *name) {
  return ir_itervar(ir_var(name, DT_I32), I(0), I(extent), ITER_REDUCE);
}

/* ------------------------------------------------------------------ */
/* printer                                                             */
/* ------------------------------------------------------------------ */

static void test_print_golden(void) {
  Expr *a = ir_var("a", DT_HANDLE), *b = ir_var("b", DT_HANDLE), *c = ir_var("c", DT_HANDLE);
  Expr *i = ir_var("i", DT_I32);
  Stmt *st = ir_store(c, ir_add(ir_load(DT_F32, a, i), ir_load(DT_F32, b, i)), i);
  Stmt *s = ir_produce(test_fake_tensor("c"), ir_for(i, I(0), I(128), FOR_SERIAL, st));
  CHECK_STR(ir_stmt_str(s), "produce c {\n"
                            "  for (i, 0, 128) {\n"
                            "    c[i] = (a[i] + b[i])\n"
                            "  }\n"
                            "}\n");
}

static void test_print_exprs(void) {
  Expr *x = ir_var("x", DT_I32), *y = ir_var("y", DT_I32);
  Expr *f = ir_var("f", DT_F32), *p = ir_var("p", DT_BOOL);
  CHECK_STR(ir_expr_str(I(5)), "5");
  CHECK_STR(ir_expr_str(I(-3)), "-3");
  CHECK_STR(ir_expr_str(ir_i64(5)), "(int64)5");
  CHECK_STR(ir_expr_str(ir_int(200, DT_U8)), "(uint8)200");
  CHECK_STR(ir_expr_str(ir_bool(true)), "(bool)1");
  CHECK_STR(ir_expr_str(ir_f32(2)), "2f");
  CHECK_STR(ir_expr_str(ir_f32(0.5)), "0.5f");
  CHECK_STR(ir_expr_str(ir_f32(INFINITY)), "inff");
  CHECK_STR(ir_expr_str(ir_f32(-INFINITY)), "-inff");
  CHECK_STR(ir_expr_str(ir_f32(NAN)), "nanf");
  CHECK_STR(ir_expr_str(ir_float(2, DT_F64)), "2.0");
  CHECK_STR(ir_expr_str(ir_float(0.25, DT_F64)), "0.25");
  CHECK_STR(ir_expr_str(ir_float(1e300, DT_F64)), "1.0000000000000001e+300");
  CHECK_STR(ir_expr_str(ir_str("te\"xt")), "\"te\\\"xt\"");
  CHECK_STR(ir_expr_str(x), "x");
  CHECK_STR(ir_expr_str(ir_add(x, y)), "(x + y)");
  CHECK_STR(ir_expr_str(ir_sub(x, y)), "(x - y)");
  CHECK_STR(ir_expr_str(ir_mul(x, y)), "(x*y)");
  CHECK_STR(ir_expr_str(ir_div(x, y)), "(x/y)");
  CHECK_STR(ir_expr_str(ir_mod(x, y)), "(x % y)");
  CHECK_STR(ir_expr_str(ir_floordiv(x, y)), "floordiv(x, y)");
  CHECK_STR(ir_expr_str(ir_floormod(x, y)), "floormod(x, y)");
  CHECK_STR(ir_expr_str(ir_min(x, y)), "min(x, y)");
  CHECK_STR(ir_expr_str(ir_max(x, y)), "max(x, y)");
  CHECK_STR(ir_expr_str(ir_eq(x, y)), "(x == y)");
  CHECK_STR(ir_expr_str(ir_ne(x, y)), "(x != y)");
  CHECK_STR(ir_expr_str(ir_lt(x, y)), "(x < y)");
  CHECK_STR(ir_expr_str(ir_le(x, y)), "(x <= y)");
  CHECK_STR(ir_expr_str(ir_gt(x, y)), "(x > y)");
  CHECK_STR(ir_expr_str(ir_ge(x, y)), "(x >= y)");
  CHECK_STR(ir_expr_str(ir_and(p, ir_lt(x, y))), "(p && (x < y))");
  CHECK_STR(ir_expr_str(ir_or(p, p)), "(p || p)");
  CHECK_STR(ir_expr_str(ir_not(p)), "!p");
  CHECK_STR(ir_expr_str(ir_select(p, x, y)), "select(p, x, y)");
  CHECK_STR(ir_expr_str(ir_cast(DT_F32, x)), "float32(x)");
  CHECK_STR(ir_expr_str(ir_call1(INTRIN_exp, f)), "exp(f)");
  CHECK_STR(ir_expr_str(ir_call2(INTRIN_pow, f, ir_f32(2))), "pow(f, 2f)");
  Expr *idx[2] = {x, y};
  CHECK_STR(ir_expr_str(ir_read(test_fake_tensor("A"), DT_F32, 2, idx)), "A[x, y]");
  CHECK_STR(ir_expr_str(ir_load(DT_F32, ir_var("A", DT_HANDLE), x)), "A[x]");
  CHECK_STR(ir_expr_str(ir_ramp(x, I(1), 4)), "ramp(x, 1, 4)");
  CHECK_STR(ir_expr_str(ir_bcast(f, 16)), "x16(f)");
  Expr *v = ir_var("v", DT_I32);
  CHECK_STR(ir_expr_str(ir_let(v, I(3), ir_add(v, x))), "(let v = 3 in (v + x))");
  IterVar *k = raxis(8, "k"), *r = raxis(4, "r");
  IterVar *ax[2] = {k, r};
  Expr *src = ir_add(k->var, r->var);
  CHECK_STR(ir_expr_str(ir_sum(src, 2, ax)), "reduce(sum, (k + r), axis=[k, r])");
  Expr *red = ir_reduce(ir_reducer(RED_MAX, DT_I32), src, 2, ax, ir_lt(k->var, I(4)));
  CHECK_STR(ir_expr_str(red), "reduce(max, (k + r), axis=[k, r], where=(k < 4))");
  CHECK_STR(ir_expr_str(ir_prod(src, 1, ax)), "reduce(prod, (k + r), axis=[k])");
  CHECK_STR(ir_expr_str(ir_min_reduce(src, 1, ax)), "reduce(min, (k + r), axis=[k])");
  CHECK_STR(ir_expr_str(NULL), "<null>");
}

static void test_print_stmts(void) {
  Expr *i = ir_var("i", DT_I32), *j = ir_var("j", DT_I32);
  Expr *buf = ir_var("B", DT_HANDLE), *t = ir_var("t", DT_I32);
  Tensor *c = test_fake_tensor("c");
  Stmt *store = ir_store(buf, ir_f32(1), i);
  CHECK_STR(ir_stmt_str(ir_for(i, I(0), I(128), FOR_PARALLEL, store)),
            "parallel (i, 0, 128) {\n  B[i] = 1f\n}\n");
  CHECK_STR(ir_stmt_str(ir_for(i, I(0), I(16), FOR_VECTORIZED, store)),
            "vectorized (i, 0, 16) {\n  B[i] = 1f\n}\n");
  CHECK_STR(ir_stmt_str(ir_for(i, I(0), I(4), FOR_UNROLLED, store)),
            "unrolled (i, 0, 4) {\n  B[i] = 1f\n}\n");
  CHECK_STR(ir_stmt_str(ir_allocate(buf, DT_F32, I(64), "global", store)),
            "allocate B[float32 * 64]\nB[i] = 1f\n");
  CHECK_STR(ir_stmt_str(ir_allocate(buf, DT_F32, I(64), "local", store)),
            "allocate B[float32 * 64]\nB[i] = 1f\n");
  Expr *idx[2] = {i, j};
  Stmt *prov = ir_provide(c, ir_f32(0), 2, idx);
  CHECK_STR(ir_stmt_str(prov), "c[i, j] = 0f\n");
  Expr *mn[2] = {I(0), I(0)}, *ex[2] = {I(128), I(10)};
  CHECK_STR(ir_stmt_str(ir_realize(c, 2, mn, ex, NULL, prov)),
            "realize c([0, 128], [0, 10]) {\n  c[i, j] = 0f\n}\n");
  CHECK_STR(ir_stmt_str(ir_if(ir_lt(i, I(3)), store, ir_store(buf, ir_f32(2), i))),
            "if ((i < 3)) {\n  B[i] = 1f\n} else {\n  B[i] = 2f\n}\n");
  CHECK_STR(ir_stmt_str(ir_if(ir_lt(i, I(3)), store, NULL)), "if ((i < 3)) {\n  B[i] = 1f\n}\n");
  CHECK_STR(ir_stmt_str(ir_seq2(store, ir_evaluate(ir_call1(INTRIN_exp, ir_f32(1))))),
            "B[i] = 1f\nexp(1f)\n");
  IterVar *tx = ir_itervar(ir_var("threadIdx.x", DT_I32), NULL, NULL, ITER_THREAD);
  CHECK_STR(ir_stmt_str(ir_attr("thread_extent", tx, I(32), store)),
            "// attr [iter_var(threadIdx.x)] thread_extent = 32\nB[i] = 1f\n");
  CHECK_STR(ir_stmt_str(ir_attr("storage_scope", buf, ir_str("local"), store)),
            "// attr [B] storage_scope = \"local\"\nB[i] = 1f\n");
  CHECK_STR(ir_stmt_str(ir_attr("pragma", c, I(1), store)), "// attr [c] pragma = 1\nB[i] = 1f\n");
  CHECK_STR(ir_stmt_str(ir_attr("pragma", NULL, I(1), store)), "// attr [] pragma = 1\nB[i] = 1f\n");
  CHECK_STR(ir_stmt_str(ir_let_stmt(t, ir_mul(i, I(2)), ir_store(buf, ir_f32(1), t))),
            "let t = (i*2)\nB[t] = 1f\n");
  /* nesting indents by two per level */
  Stmt *nest = ir_for(i, I(0), I(2), FOR_SERIAL,
                      ir_for(j, I(0), I(3), FOR_SERIAL, ir_if(ir_eq(j, I(1)), store, NULL)));
  CHECK_STR(ir_stmt_str(nest), "for (i, 0, 2) {\n"
                               "  for (j, 0, 3) {\n"
                               "    if ((j == 1)) {\n"
                               "      B[i] = 1f\n"
                               "    }\n"
                               "  }\n"
                               "}\n");
}

/* ------------------------------------------------------------------ */
/* equality and hash                                                   */
/* ------------------------------------------------------------------ */

static Stmt *copy_loop(const char *iname, int64_t extent, Expr *buf) {
  Expr *i = ir_var(iname, DT_I32);
  Expr *v = ir_var("v", DT_I32);
  Stmt *body = ir_let_stmt(v, ir_mul(i, I(2)), ir_store(buf, ir_load(DT_F32, buf, v), i));
  return ir_for(i, I(0), I(extent), FOR_SERIAL, body);
}

static void test_equal_hash(void) {
  Expr *x = ir_var("x", DT_I32), *y = ir_var("y", DT_I32), *x2 = ir_var("x", DT_I32);
  Expr *buf = ir_var("A", DT_HANDLE);
  /* expressions */
  CHECK(ir_expr_equal(ir_add(x, I(1)), ir_add(x, I(1))));
  CHECK(ir_expr_hash(ir_add(x, I(1))) == ir_expr_hash(ir_add(x, I(1))));
  CHECK(!ir_expr_equal(ir_add(x, I(1)), ir_add(x, I(2))));
  CHECK(ir_expr_hash(ir_add(x, I(1))) != ir_expr_hash(ir_add(x, I(2))));
  CHECK(!ir_expr_equal(ir_add(x, y), ir_add(y, x)));
  CHECK(!ir_expr_equal(x, x2)); /* free variables: identity, not name */
  CHECK(!ir_expr_equal(ir_i32(1), ir_i64(1)));
  CHECK(!ir_expr_equal(ir_sub(x, y), ir_add(x, y)));
  CHECK(ir_expr_equal(ir_f32(NAN), ir_f32(NAN)));
  CHECK(!ir_expr_equal(ir_f32(0.5), ir_f32(0.25)));
  CHECK(ir_expr_equal(ir_str("a"), ir_str("a")));
  CHECK(!ir_expr_equal(ir_str("a"), ir_str("b")));
  CHECK(ir_expr_equal(NULL, NULL));
  CHECK(!ir_expr_equal(x, NULL));
  /* alpha-equivalent lets */
  Expr *u = ir_var("u", DT_I32), *w = ir_var("w", DT_I32);
  Expr *l1 = ir_let(u, x, ir_add(u, I(1))), *l2 = ir_let(w, x, ir_add(w, I(1)));
  CHECK(ir_expr_equal(l1, l2));
  CHECK(ir_expr_hash(l1) == ir_expr_hash(l2));
  CHECK(!ir_expr_equal(l1, ir_let(w, x, ir_add(u, I(1))))); /* u free on the right */
  /* shadowing: the inner binder wins */
  Expr *sh1 = ir_let(u, x, ir_let(u, y, u)), *sh2 = ir_let(u, x, ir_let(w, y, w));
  CHECK(ir_expr_equal(sh1, sh2));
  CHECK(ir_expr_hash(sh1) == ir_expr_hash(sh2));
  CHECK(!ir_expr_equal(sh1, ir_let(u, x, ir_let(w, y, u))));
  /* reductions over different axis variables */
  IterVar *k1 = raxis(8, "k"), *k2 = raxis(8, "r"), *k3 = raxis(9, "k");
  Expr *r1 = ir_sum(ir_mul(k1->var, x), 1, &k1), *r2 = ir_sum(ir_mul(k2->var, x), 1, &k2);
  CHECK(ir_expr_equal(r1, r2));
  CHECK(ir_expr_hash(r1) == ir_expr_hash(r2));
  CHECK(!ir_expr_equal(r1, ir_sum(ir_mul(k3->var, x), 1, &k3)));
  CHECK(!ir_expr_equal(r1, ir_max_reduce(ir_mul(k2->var, x), 1, &k2)));
  /* alpha-equivalent loops */
  Stmt *s1 = copy_loop("i", 16, buf), *s2 = copy_loop("j", 16, buf), *s3 = copy_loop("i", 17, buf);
  CHECK(ir_stmt_equal(s1, s2));
  CHECK(ir_stmt_hash(s1) == ir_stmt_hash(s2));
  CHECK(!ir_stmt_equal(s1, s3));
  CHECK(ir_stmt_hash(s1) != ir_stmt_hash(s3));
  CHECK(!ir_stmt_equal(s1, copy_loop("i", 16, ir_var("A", DT_HANDLE))));
  Stmt *p1 = ir_for(s1->for_.var, I(0), I(16), FOR_PARALLEL, s1->for_.body);
  CHECK(!ir_stmt_equal(s1, p1));
  /* allocations bind their buffer */
  Expr *b1 = ir_var("B", DT_HANDLE), *b2 = ir_var("C", DT_HANDLE);
  Stmt *a1 = ir_allocate(b1, DT_F32, I(4), NULL, ir_store(b1, ir_f32(0), I(0)));
  Stmt *a2 = ir_allocate(b2, DT_F32, I(4), NULL, ir_store(b2, ir_f32(0), I(0)));
  CHECK(ir_stmt_equal(a1, a2));
  CHECK(ir_stmt_hash(a1) == ir_stmt_hash(a2));
  CHECK(!ir_stmt_equal(a1, ir_allocate(b2, DT_F32, I(4), NULL, ir_store(b1, ir_f32(0), I(0)))));
  /* other statement kinds */
  Stmt *st = ir_store(buf, ir_f32(1), x);
  CHECK(ir_stmt_equal(ir_if(ir_lt(x, I(1)), st, NULL), ir_if(ir_lt(x, I(1)), st, NULL)));
  CHECK(!ir_stmt_equal(ir_if(ir_lt(x, I(1)), st, NULL), ir_if(ir_lt(x, I(1)), st, st)));
  CHECK(ir_stmt_equal(ir_seq2(st, st), ir_seq2(st, st)));
  CHECK(!ir_stmt_equal(ir_attr("a", NULL, I(1), st), ir_attr("b", NULL, I(1), st)));
  Tensor *t = test_fake_tensor("t");
  CHECK(ir_stmt_equal(ir_produce(t, st), ir_produce(t, st)));
  CHECK(!ir_stmt_equal(ir_produce(t, st), ir_produce(test_fake_tensor("t"), st)));
}

/* ------------------------------------------------------------------ */
/* eval                                                                */
/* ------------------------------------------------------------------ */

static bool eval1(Expr *e, PtrMap *env, double *out) { return ir_eval(e, env, out); }

/* Hooks for the wrapping walk: every integer variable is -7, every float
 * one NaN; and the last reason. */
static char wrap_why[256];
static bool wrap_lookup(IrEval *ev, Expr *var, IrScalar *out) {
  (void)ev;
  out->i = -7;
  out->f = dt_is_float(var->dtype) ? NAN : 0;
  return true;
}
static bool wrap_fail(IrEval *ev, const char *why) {
  (void)ev;
  snprintf(wrap_why, sizeof wrap_why, "%s", why);
  return false;
}

static void test_eval(void) {
  Expr *x = ir_var("x", DT_I32), *f = ir_var("f", DT_F32);
  double xv = -7, fv = 0.1, r;
  PtrMap env = {0};
  pm_put(&env, x, &xv);
  pm_put(&env, f, &fv);
  CHECK(eval1(ir_floordiv(x, I(2)), &env, &r) && r == -4);
  CHECK(eval1(ir_floormod(x, I(2)), &env, &r) && r == 1);
  CHECK(eval1(ir_div(x, I(2)), &env, &r) && r == -3);
  CHECK(eval1(ir_mod(x, I(2)), &env, &r) && r == -1);
  CHECK(eval1(ir_floordiv(x, I(-2)), &env, &r) && r == 3);
  CHECK(eval1(ir_floormod(x, I(-2)), &env, &r) && r == -1);
  CHECK(!eval1(ir_div(x, I(0)), &env, &r));
  CHECK(!eval1(ir_floormod(x, ir_sub(x, x)), &env, &r));
  CHECK(!eval1(ir_add(I(INT32_MAX), ir_add(x, I(8))), &env, &r)); /* signed overflow */
  CHECK(eval1(ir_add(ir_int(250, DT_U8), ir_int(10, DT_U8)), &env, &r) && r == 4);
  CHECK(eval1(ir_select(ir_lt(x, I(0)), I(1), ir_div(I(1), I(0))), &env, &r) && r == 1);
  CHECK(eval1(ir_and(ir_gt(x, I(0)), ir_eq(ir_div(I(1), I(0)), I(0))), &env, &r) && r == 0);
  CHECK(eval1(ir_min(x, I(3)), &env, &r) && r == -7);
  CHECK(eval1(ir_max(x, I(3)), &env, &r) && r == 3);
  CHECK(eval1(ir_not(ir_ge(x, I(0))), &env, &r) && r == 1);
  Expr *v = ir_var("v", DT_I32);
  CHECK(eval1(ir_let(v, ir_mul(x, I(3)), ir_add(v, v)), &env, &r) && r == -42);
  CHECK(eval1(ir_add(f, ir_f32(0.2)), &env, &r) && r == (double)(0.1f + 0.2f));
  CHECK(eval1(ir_cast(DT_I32, ir_f32(-2.7)), &env, &r) && r == -2);
  CHECK(!eval1(ir_cast(DT_I32, ir_f32(3e9)), &env, &r));
  CHECK(eval1(ir_cast(DT_I8, I(300)), &env, &r) && r == 44);
  CHECK(eval1(ir_call1(INTRIN_exp, ir_f32(0)), &env, &r) && r == 1);
  CHECK(eval1(ir_call2(INTRIN_shift_left, I(3), I(4)), &env, &r) && r == 48);
  CHECK(!eval1(ir_call2(INTRIN_shift_left, I(3), I(40)), &env, &r));
  CHECK(eval1(ir_lt(ir_f32(NAN), ir_f32(1)), &env, &r) && r == 0);
  CHECK(eval1(ir_ne(ir_f32(NAN), ir_f32(NAN)), &env, &r) && r == 1);
  CHECK(!eval1(ir_var("unbound", DT_I32), &env, &r));
  CHECK(!eval1(ir_load(DT_F32, ir_var("A", DT_HANDLE), x), &env, &r));
  CHECK(!eval1(ir_ramp(x, I(1), 4), &env, &r));
  pm_free(&env);

  /* The same walk in the wrapping mode topi_eval uses: values where the
   * strict mode above refuses, and the reason where there is none. */
  IrEval w = {IR_EVAL_WRAP, wrap_lookup, NULL, wrap_fail, NULL};
  IrScalar wv;
  Expr *v7 = ir_var("v7", DT_I32);
  wrap_why[0] = 0;
  CHECK(ir_eval_expr(&w, ir_add(I(INT32_MAX), ir_sub(x, I(-8))), &wv) && wv.i == INT32_MIN);
  CHECK(ir_eval_expr(&w, ir_cast(DT_I32, ir_f32(3e9)), &wv) && wv.i == INT32_MAX);
  CHECK(ir_eval_expr(&w, ir_cast(DT_I32, f), &wv) && wv.i == 0);
  CHECK(ir_eval_expr(&w, ir_let(v7, I(7), ir_mul(v7, x)), &wv) && wv.i == -49); /* Let is the walk's, x the hook's */
  CHECK(!ir_eval_expr(&w, ir_div(I(1), I(0)), &wv) && strstr(wrap_why, "zero"));
  CHECK(!ir_eval_expr(&w, ir_ramp(x, I(1), 4), &wv) && strstr(wrap_why, "vector"));
  CHECK(!ir_eval_expr(&w, ir_load(DT_F32, ir_var("A", DT_HANDLE), x), &wv) && strstr(wrap_why, "Load nodes are not supported"));
}

const TestCase ir_tests[] = {
    {"print_golden", test_print_golden},
    {"print_exprs", test_print_exprs},
    {"print_stmts", test_print_stmts},
    {"equal_hash", test_equal_hash},
    {"eval", test_eval},
    {NULL, NULL},
};
