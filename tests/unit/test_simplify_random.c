/*
 * test_simplify_random.c - the simplifier's randomized properties: random
 * integer expressions over variables with random ranges must evaluate
 * (ir_eval) to the same value before and after simplification at random
 * points in those ranges, the analyzer's constant bounds must contain every
 * value, comparisons the analyzer claims to prove must hold at every point,
 * and simplified statement nests must make the same stores.
 */
#include "test_ir.h"

/* ------------------------------------------------------------------ */
/* simplifier: randomized properties                                   */
/* ------------------------------------------------------------------ */

#define NVARS 3

typedef struct Gen {
  DType t; /* the type of every generated expression */
  Expr *vars[NVARS];
  int64_t lo[NVARS], hi[NVARS];
} Gen;

static int64_t rnd_range(int64_t lo, int64_t hi) { return lo + (int64_t)(test_rand() % (unsigned)(hi - lo + 1)); }

static Expr *gen_expr(Gen *g, int depth);

/* A constant of the generator's type in [lo, hi] (clipped at 0 when
 * unsigned). */
static Expr *gconst(Gen *g, int64_t lo, int64_t hi) {
  if (g->t.code == kDLUInt && lo < 0) lo = 0;
  if (hi < lo) hi = lo;
  return ir_int(rnd_range(lo, hi), g->t);
}

static Expr *gen_leaf(Gen *g) {
  if (test_rand() % 10 < 6) return g->vars[test_rand() % NVARS];
  return gconst(g, -10, 10);
}

static Expr *gen_const_divisor(Gen *g) {
  int64_t d = rnd_range(1, 16);
  if (test_rand() % 8 == 0 && g->t.code == kDLInt) d = -d;
  return ir_int(d, g->t);
}

static Expr *gen_cond(Gen *g, int depth) {
  static const ExprKind cmps[] = {EK_EQ, EK_NE, EK_LT, EK_LE, EK_GT, EK_GE};
  Expr *c = ir_binary(cmps[test_rand() % 6], gen_expr(g, depth), gen_expr(g, depth));
  unsigned r = test_rand() % 8;
  if (r == 0) return ir_not(c);
  if (r == 1) return ir_and(c, ir_binary(cmps[test_rand() % 6], gen_leaf(g), gen_leaf(g)));
  if (r == 2) return ir_or(c, ir_binary(cmps[test_rand() % 6], gen_leaf(g), gen_leaf(g)));
  return c;
}

static Expr *gen_expr(Gen *g, int depth) {
  if (depth <= 0 || test_rand() % 6 == 0) return gen_leaf(g);
  int d = depth - 1;
  switch (test_rand() % 16) {
  case 0:
  case 1:
    return ir_add(gen_expr(g, d), gen_expr(g, d));
  case 2:
  case 3:
    return ir_sub(gen_expr(g, d), gen_expr(g, d));
  case 4:
  case 5:
    return ir_mul(gen_expr(g, d), gconst(g, -8, 8));
  case 6:
    return ir_mul(gen_expr(g, d), gen_expr(g, d));
  case 7:
    return ir_floordiv(gen_expr(g, d), test_rand() % 6 ? gen_const_divisor(g) : gen_expr(g, d));
  case 8:
    return ir_floormod(gen_expr(g, d), test_rand() % 6 ? gen_const_divisor(g) : gen_expr(g, d));
  case 9:
    return ir_div(gen_expr(g, d), test_rand() % 6 ? gen_const_divisor(g) : gen_expr(g, d));
  case 10:
    return ir_mod(gen_expr(g, d), test_rand() % 6 ? gen_const_divisor(g) : gen_expr(g, d));
  case 11:
    return ir_min(gen_expr(g, d), gen_expr(g, d));
  case 12:
    return ir_max(gen_expr(g, d), gen_expr(g, d));
  case 13:
    return ir_select(gen_cond(g, d > 1 ? 1 : d), gen_expr(g, d), gen_expr(g, d));
  case 14: {
    Expr *v = ir_var("t", g->t);
    Expr *body = ir_add(ir_mul(v, gconst(g, -3, 3)), gen_expr(g, d));
    return ir_let(v, gen_expr(g, d), body);
  }
  default: /* nested floordiv/floormod shapes the rules look for */
    return ir_floordiv(ir_add(ir_mul(gen_expr(g, d), ir_int(rnd_range(1, 4) * 4, g->t)), gen_leaf(g)),
                       ir_int(rnd_range(1, 4) * 2, g->t));
  }
}

/* Random ranges: mostly small, sometimes wide, often non-negative; one
 * variable in eight is left unknown to the analyzer (its points still come
 * from the range), so rules cannot lean on facts they were not given. */
static void gen_ranges(Gen *g, Analyzer *an) {
  for (int v = 0; v < NVARS; v++) {
    int64_t span = test_rand() % 8 == 0 ? 2000 : 30;
    g->lo[v] = rnd_range(-span, span);
    g->hi[v] = g->lo[v] + rnd_range(0, span);
    if (test_rand() % 4 == 0) g->lo[v] = g->lo[v] < 0 ? 0 : g->lo[v];
    if (g->t.code == kDLUInt) { /* within the type */
      g->lo[v] = g->lo[v] < 0 ? -g->lo[v] : g->lo[v];
      g->hi[v] = g->lo[v] + rnd_range(0, 60);
      if (g->hi[v] > dt_int_max(g->t)) g->hi[v] = dt_int_max(g->t);
      if (g->lo[v] > g->hi[v]) g->lo[v] = g->hi[v];
    }
    if (g->hi[v] < g->lo[v]) g->hi[v] = g->lo[v];
    if (test_rand() % 8) analyzer_bind_const(an, g->vars[v], g->lo[v], g->hi[v]);
  }
}

static void gen_point(Gen *g, double *vals) {
  for (int v = 0; v < NVARS; v++) vals[v] = (double)rnd_range(g->lo[v], g->hi[v]);
}

static void gen_init(Gen *g, DType t, PtrMap *env, double *vals) {
  static const char *names[NVARS] = {"x", "y", "z"};
  g->t = t;
  for (int v = 0; v < NVARS; v++) {
    g->vars[v] = ir_var(names[v], t);
    pm_put(env, g->vars[v], &vals[v]);
  }
}

/* Simplified expressions of type t evaluate like the originals; returns
 * how many points were compared. */
static int random_equivalence(DType t, int iters, int *changed_out, int *bounded_out) {
  Gen g;
  PtrMap env = {0};
  double vals[NVARS];
  gen_init(&g, t, &env, vals);
  int reported = 0, compared = 0, changed = 0, bounded = 0;
  for (int iter = 0; iter < iters; iter++) {
    Analyzer *an = analyzer_new();
    gen_ranges(&g, an);
    Expr *e = gen_expr(&g, 1 + (int)(test_rand() % 5));
    Expr *s = analyzer_simplify(an, e);
    CHECK_NN(s);
    if (!s) {
      analyzer_free(an);
      continue;
    }
    if (s != e) changed++;
    int64_t lo = 0, hi = 0;
    bool has_bound = analyzer_const_bound(an, e, &lo, &hi);
    bounded += has_bound;
    for (int p = 0; p < 40; p++) {
      gen_point(&g, vals);
      double ve, vs;
      if (!ir_eval(e, &env, &ve)) continue; /* undefined at this point */
      compared++;
      bool ok = ir_eval(s, &env, &vs) && vs == ve;
      bool in_bound = !has_bound || (ve >= (double)lo && ve <= (double)hi);
      if ((!ok || !in_bound) && reported++ < 5)
        test_fail(__FILE__, __LINE__,
                  "%s at x=%g y=%g z=%g (ranges [%lld,%lld] [%lld,%lld] [%lld,%lld]):\n"
                  "  original   %s = %g\n  simplified %s = %g\n  bound [%lld, %lld]%s",
                  ok ? "out of bound" : "mismatch", vals[0], vals[1], vals[2], (long long)g.lo[0],
                  (long long)g.hi[0], (long long)g.lo[1], (long long)g.hi[1], (long long)g.lo[2],
                  (long long)g.hi[2], ir_expr_str(e), ve, ir_expr_str(s),
                  ir_eval(s, &env, &vs) ? vs : NAN, (long long)lo, (long long)hi,
                  has_bound ? "" : " (none)");
    }
    /* Simplifying again changes nothing. */
    Expr *s2 = analyzer_simplify(an, s);
    if (!ir_expr_equal(s, s2) && reported++ < 5)
      test_fail(__FILE__, __LINE__, "not idempotent:\n  %s\n  %s\n  %s", ir_expr_str(e),
                ir_expr_str(s), ir_expr_str(s2));
    analyzer_free(an);
  }
  pm_free(&env);
  *changed_out = changed;
  *bounded_out = bounded;
  return compared;
}

static void test_simplify_random(void) {
  int changed, bounded;
  CHECK(random_equivalence(DT_I32, 3000, &changed, &bounded) > 50000);
  CHECK(changed > 1000);
  CHECK(bounded > 500);
}

/* The same for other integer types: int64, and uint8 whose arithmetic
 * wraps around. */
static void test_simplify_random_types(void) {
  int changed, bounded;
  CHECK(random_equivalence(DT_I64, 1000, &changed, &bounded) > 15000);
  CHECK(random_equivalence(DT_U8, 1000, &changed, &bounded) > 15000);
  CHECK(changed > 300);
  CHECK(random_equivalence(DT_U32, 500, &changed, &bounded) > 7000);
}

static void test_simplify_random_prove(void) {
  Gen g;
  PtrMap env = {0};
  double vals[NVARS];
  gen_init(&g, DT_I32, &env, vals);
  int proven = 0, reported = 0;
  for (int iter = 0; iter < 3000; iter++) {
    Analyzer *an = analyzer_new();
    gen_ranges(&g, an);
    Expr *a = gen_expr(&g, 1 + (int)(test_rand() % 3));
    /* compare against something related so that proofs happen */
    Expr *b = test_rand() % 2 ? ir_add(a, gen_expr(&g, 1)) : gen_expr(&g, 2);
    static const ExprKind cmps[] = {EK_EQ, EK_NE, EK_LT, EK_LE, EK_GT, EK_GE};
    Expr *cond = ir_binary(cmps[test_rand() % 6], a, b);
    if (test_rand() % 4 == 0) cond = ir_not(cond);
    bool pr = analyzer_can_prove(an, cond);
    bool disproved = analyzer_can_prove(an, ir_not(cond));
    CHECK(!(pr && disproved));
    proven += pr || disproved;
    for (int p = 0; p < 40 && (pr || disproved); p++) {
      gen_point(&g, vals);
      double v;
      if (!ir_eval(cond, &env, &v)) continue;
      if ((v != 0) != pr && reported++ < 5)
        test_fail(__FILE__, __LINE__, "claimed %s but %s is %g at x=%g y=%g z=%g",
                  pr ? "true" : "false", ir_expr_str(cond), v, vals[0], vals[1], vals[2]);
    }
    analyzer_free(an);
  }
  CHECK(proven > 300);
  pm_free(&env);
}

#define UNDEFINED ((intptr_t)-999999)

/* A tiny statement interpreter for the loop nests below (For, IfThenElse,
 * Seq, Store, Evaluate): records each store's index in order, or UNDEFINED
 * where an index, bound or condition has no defined value. */
static void collect_stores(Stmt *s, PtrMap *env, PtrVec *out) {
  double v;
  if (!s) return;
  switch (s->kind) {
  case SK_For: {
    double mn, ex, *slot = pm_get(env, s->for_.var);
    if (!slot || !ir_eval(s->for_.min, env, &mn) || !ir_eval(s->for_.extent, env, &ex)) {
      pv_push(out, (void *)UNDEFINED);
      return;
    }
    double saved = *slot;
    for (double i = mn; i < mn + ex; i++) {
      *slot = i;
      collect_stores(s->for_.body, env, out);
    }
    *slot = saved;
    return;
  }
  case SK_IfThenElse:
    if (!ir_eval(s->if_.cond, env, &v)) {
      pv_push(out, (void *)UNDEFINED);
      return;
    }
    collect_stores(v ? s->if_.then_ : s->if_.else_, env, out);
    return;
  case SK_Seq:
    for (int k = 0; k < s->seq.n; k++) collect_stores(s->seq.s[k], env, out);
    return;
  case SK_Store:
    pv_push(out, (void *)(ir_eval(s->store.index, env, &v) ? (intptr_t)v : UNDEFINED));
    return;
  case SK_Evaluate:
    return;
  case SK_LetStmt:
  case SK_Provide:
  case SK_Allocate:
  case SK_Realize:
  case SK_Attr:
  case SK_Produce:
  case SK__COUNT:
    break;
  }
  pv_push(out, (void *)UNDEFINED); /* not produced by the generator */
}

/* The statement simplifier keeps the meaning of loops: run a random nest
 * before and after and compare the stores it makes. */
static void test_simplify_stmt_random(void) {
  Gen g;
  PtrMap env = {0};
  double vals[NVARS];
  gen_init(&g, DT_I32, &env, vals);
  Expr *buf = ir_var("B", DT_HANDLE);
  int reported = 0, checked = 0;
  for (int iter = 0; iter < 300; iter++) {
    /* x and y are loop variables with constant ranges; z is free. */
    int64_t ex = rnd_range(0, 6), ey = rnd_range(0, 6), mx = rnd_range(-3, 3), my = rnd_range(-3, 3);
    Expr *index = gen_expr(&g, 1 + (int)(test_rand() % 4));
    Stmt *body = ir_store(buf, ir_f32(0), index);
    if (test_rand() % 2) body = ir_if(gen_cond(&g, 1), body, NULL);
    Stmt *s = ir_for(g.vars[0], I(mx), I(ex), FOR_SERIAL,
                     ir_for(g.vars[1], I(my), I(ey), FOR_SERIAL, body));
    Stmt *r = ir_simplify_stmt(s);
    CHECK_NN(r);
    for (int z = -3; z <= 3; z++) {
      vals[2] = z;
      /* Run both nests by interpretation: list the (index) stores made. */
      PtrVec before = {0}, after = {0};
      collect_stores(s, &env, &before);
      collect_stores(r, &env, &after);
      bool undefined = pv_find(&before, (void *)UNDEFINED) >= 0;
      bool same = before.len == after.len;
      for (int k = 0; same && k < before.len; k++)
        same = (intptr_t)before.data[k] == (intptr_t)after.data[k];
      same |= undefined; /* undefined behaviour may become anything */
      checked += !undefined;
      if (!same && reported++ < 5)
        test_fail(__FILE__, __LINE__, "statement changed meaning (z=%d):\n%s--- became:\n%s", z,
                  ir_stmt_str(s), ir_stmt_str(r));
      pv_free(&before);
      pv_free(&after);
    }
  }
  CHECK(checked > 1000);
  pm_free(&env);
}

const TestCase ir_simplify_random_tests[] = {
    {"simplify_random", test_simplify_random},
    {"simplify_random_types", test_simplify_random_types},
    {"simplify_random_prove", test_simplify_random_prove},
    {"simplify_stmt_random", test_simplify_stmt_random},
    {NULL, NULL},
};
