/*
 * test_schedule_prop.c - property tests of schedules.
 *
 * For a set of computes (elementwise, broadcast, matmul, 2-D convolution
 * with padding, sum and max reductions, the pieces of softmax) on random
 * shapes, many random schedules are built from the primitives (splits that
 * do not divide, fuse, reorder, compute_at, compute_inline, cache_write,
 * cache_read, vectorize, unroll, parallel).  Each must compute the same
 * result as the unscheduled lowering of the same compute, within 1e-5
 * relative error, on fresh random inputs.  A failure prints the schedule.
 */
#include "kernel_util.h"

typedef struct Case {
  const char *name;
  int nin, nout;
  Tensor *in[4], *out[2];
} Case;


static Expr *c32(int64_t v) { return ir_i32(v); }

static Case case_elementwise(void) {
  int64_t m = test_rand_between(1, 19), n = test_rand_between(1, 37);
  Tensor *A = te_placeholder_c("A", 2, (int64_t[]){m, n}, DT_F32);
  Expr **v = te_axis_vars(2, NULL);
  Tensor *B = te_compute("B", 2, A->shape, v, ir_add(ir_mul(te_read2(A, v[0], v[1]), ir_f32(2)), ir_f32(1)), "elemwise");
  v = te_axis_vars(2, NULL);
  Tensor *C = te_compute("C", 2, A->shape, v, ir_sub(te_read2(B, v[0], v[1]), ir_call1(INTRIN_tanh, te_read2(A, v[0], v[1]))), "elemwise");
  return (Case){"elementwise", 1, 1, {A}, {C}};
}

static Case case_broadcast(void) {
  int64_t m = test_rand_between(1, 23), n = test_rand_between(1, 33);
  Tensor *A = te_placeholder_c("A", 2, (int64_t[]){m, n}, DT_F32);
  Tensor *b = te_placeholder_c("bias", 1, &n, DT_F32);
  Expr **v = te_axis_vars(2, NULL);
  Tensor *C = te_compute("C", 2, A->shape, v, ir_add(te_read2(A, v[0], v[1]), te_read1(b, v[1])), "broadcast");
  v = te_axis_vars(2, NULL);
  Tensor *D = te_compute("D", 2, A->shape, v, ir_max(te_read2(C, v[0], v[1]), ir_f32(0)), "elemwise");
  return (Case){"broadcast", 2, 1, {A, b}, {D}};
}

static Case case_matmul(void) {
  int64_t N = test_rand_between(1, 24), L = test_rand_between(1, 27), M = test_rand_between(1, 35);
  Tensor *A = te_placeholder_c("A", 2, (int64_t[]){N, L}, DT_F32);
  Tensor *B = te_placeholder_c("B", 2, (int64_t[]){L, M}, DT_F32);
  Tensor *bias = te_placeholder_c("bias", 1, &M, DT_F32);
  IterVar *k = te_reduce_axis_c(L, "k");
  Expr **v = te_axis_vars(2, NULL);
  Tensor *C = te_compute("C", 2, (Expr *[]){c32(N), c32(M)}, v,
                         ir_sum(ir_mul(te_read2(A, v[0], k->var), te_read2(B, k->var, v[1])), 1, &k), "matmul");
  v = te_axis_vars(2, NULL);
  Tensor *D = te_compute("D", 2, C->shape, v, ir_add(te_read2(C, v[0], v[1]), te_read1(bias, v[1])), "broadcast");
  return (Case){"matmul", 3, 1, {A, B, bias}, {D}};
}

static Case case_conv2d(void) {
  int64_t C = test_rand_between(1, 4), H = test_rand_between(3, 11), W = test_rand_between(3, 11), F = test_rand_between(1, 6), K = test_rand_between(1, 3), pad = test_rand_between(0, 2), stride = test_rand_between(1, 2);
  Tensor *data = te_placeholder_c("data", 4, (int64_t[]){1, C, H, W}, DT_F32);
  Tensor *wt = te_placeholder_c("weight", 4, (int64_t[]){F, C, K, K}, DT_F32);
  int64_t PH = H + 2 * pad, PW = W + 2 * pad;
  Expr **v = te_axis_vars(4, NULL);
  Expr *inb = ir_and(ir_and(ir_ge(v[2], c32(pad)), ir_lt(v[2], c32(H + pad))),
                     ir_and(ir_ge(v[3], c32(pad)), ir_lt(v[3], c32(W + pad))));
  Expr *rd = te_read4(data, v[0], v[1], ir_sub(v[2], c32(pad)), ir_sub(v[3], c32(pad)));
  Tensor *P = te_compute("pad", 4, (Expr *[]){c32(1), c32(C), c32(PH), c32(PW)}, v, ir_select(inb, rd, ir_f32(0)), "injective");
  int64_t OH = (PH - K) / stride + 1, OW = (PW - K) / stride + 1;
  IterVar *rc = te_reduce_axis_c(C, "rc"), *ry = te_reduce_axis_c(K, "ry"), *rx = te_reduce_axis_c(K, "rx");
  v = te_axis_vars(4, (const char *[]){"n", "f", "y", "x"});
  Expr *src = ir_mul(te_read4(P, v[0], rc->var, ir_add(ir_mul(v[2], c32(stride)), ry->var), ir_add(ir_mul(v[3], c32(stride)), rx->var)),
                     te_read4(wt, v[1], rc->var, ry->var, rx->var));
  Tensor *conv = te_compute("conv", 4, (Expr *[]){c32(1), c32(F), c32(OH), c32(OW)}, v,
                            ir_sum(src, 3, (IterVar *[]){rc, ry, rx}), "conv2d");
  v = te_axis_vars(4, NULL);
  Tensor *relu = te_compute("relu", 4, conv->shape, v, ir_max(te_read4(conv, v[0], v[1], v[2], v[3]), ir_f32(0)), "elemwise");
  return (Case){"conv2d", 2, 1, {data, wt}, {relu}};
}

static Case case_reduce(void) {
  int64_t m = test_rand_between(1, 17), n = test_rand_between(1, 40);
  Tensor *A = te_placeholder_c("A", 2, (int64_t[]){m, n}, DT_F32);
  IterVar *k1 = te_reduce_axis_c(n, "k1"), *k2 = te_reduce_axis_c(n, "k2");
  Expr **v = te_axis_vars(1, NULL);
  Tensor *S = te_compute("S", 1, (Expr *[]){c32(m)}, v, ir_sum(te_read2(A, v[0], k1->var), 1, &k1), "reduce");
  v = te_axis_vars(1, NULL);
  Tensor *M = te_compute("M", 1, (Expr *[]){c32(m)}, v, ir_max_reduce(te_read2(A, v[0], k2->var), 1, &k2), "reduce");
  v = te_axis_vars(1, NULL);
  Tensor *R = te_compute("R", 1, (Expr *[]){c32(m)}, v, ir_add(te_read1(S, v[0]), te_read1(M, v[0])), "elemwise");
  return (Case){"reduce", 1, 1, {A}, {R}};
}

static Case case_softmax(void) {
  int64_t m = test_rand_between(1, 13), n = test_rand_between(1, 45);
  Tensor *A = te_placeholder_c("A", 2, (int64_t[]){m, n}, DT_F32);
  IterVar *k1 = te_reduce_axis_c(n, "k1"), *k2 = te_reduce_axis_c(n, "k2");
  Expr **v = te_axis_vars(1, NULL);
  Tensor *M = te_compute("max", 1, (Expr *[]){c32(m)}, v, ir_max_reduce(te_read2(A, v[0], k1->var), 1, &k1), "reduce");
  v = te_axis_vars(2, NULL);
  Tensor *E = te_compute("exp", 2, A->shape, v, ir_call1(INTRIN_exp, ir_sub(te_read2(A, v[0], v[1]), te_read1(M, v[0]))), "elemwise");
  v = te_axis_vars(1, NULL);
  Tensor *S = te_compute("sum", 1, (Expr *[]){c32(m)}, v, ir_sum(te_read2(E, v[0], k2->var), 1, &k2), "reduce");
  v = te_axis_vars(2, NULL);
  Tensor *O = te_compute("softmax", 2, A->shape, v, ir_div(te_read2(E, v[0], v[1]), te_read1(S, v[0])), "elemwise");
  return (Case){"softmax", 1, 1, {A}, {O}};
}

/* ---- random schedules ---- */

static bool chance(int pct) { return (int)(test_rand() % 100) < pct; }

static bool is_inline(Stage *st) { return st->attach == ATTACH_INLINE; }

static void random_loops(Stage *st, StrBuf *log) {
  const char *nm = st->op->name;
  /* splits */
  for (int i = 0; i < st->leaf_iters.len; i++) {
    if (!chance(40)) continue;
    IterVar *iv = st->leaf_iters.data[i], *o, *in;
    int64_t f = test_rand_between(1, 9);
    if (chance(25)) {
      if (stage_split_nparts(st, iv, c32(f), &o, &in) == 0) sb_printf(log, "split(%s.%s, nparts=%lld) ", nm, iv->var->var.name, (long long)f);
    } else if (stage_split(st, iv, c32(f), &o, &in) == 0) {
      sb_printf(log, "split(%s.%s, %lld) ", nm, iv->var->var.name, (long long)f);
    }
    i++; /* skip the inner part */
  }
  /* a fuse of two adjacent leaves of the same kind */
  if (st->leaf_iters.len >= 2 && chance(30)) {
    int i = (int)test_rand_between(0, st->leaf_iters.len - 2);
    IterVar *a = st->leaf_iters.data[i], *b = st->leaf_iters.data[i + 1], *f;
    if (stage_fuse(st, a, b, &f) == 0) sb_printf(log, "fuse(%s.%s, %s) ", nm, a->var->var.name, b->var->var.name);
  }
  /* a random permutation */
  if (st->leaf_iters.len >= 2 && chance(50)) {
    int n = st->leaf_iters.len;
    IterVar **perm = KNEWN(IterVar *, n);
    for (int i = 0; i < n; i++) perm[i] = st->leaf_iters.data[i];
    for (int i = n - 1; i > 0; i--) {
      int j = (int)test_rand_between(0, i);
      IterVar *t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    if (stage_reorder(st, n, perm) == 0) {
      sb_printf(log, "reorder(%s:", nm);
      for (int i = 0; i < n; i++) sb_printf(log, " %s", perm[i]->var->var.name);
      sb_puts(log, ") ");
    }
  }
  int n = st->leaf_iters.len;
  if (n > 0 && chance(40)) {
    IterVar *iv = st->leaf_iters.data[n - 1];
    if (stage_vectorize(st, iv) == 0) sb_printf(log, "vectorize(%s.%s) ", nm, iv->var->var.name);
  }
  if (n > 1 && chance(20)) {
    IterVar *iv = st->leaf_iters.data[test_rand_between(0, n - 2)];
    if (stage_unroll(st, iv) == 0) sb_printf(log, "unroll(%s.%s) ", nm, iv->var->var.name);
  }
  if (n > 0 && chance(30)) {
    IterVar *iv = st->leaf_iters.data[0];
    if (iv->kind == ITER_DATA_PAR && stage_parallel(st, iv) == 0) sb_printf(log, "parallel(%s.%s) ", nm, iv->var->var.name);
  }
  if (n > 0 && chance(15)) {
    IterVar *iv = st->leaf_iters.data[0];
    if (stage_pragma(st, iv, "auto_unroll_max_step", c32(test_rand_between(2, 32))) == 0) sb_printf(log, "pragma(%s.%s, auto_unroll) ", nm, iv->var->var.name);
  }
}

/* Place st: root, inline, or inside a loop of a stage that reads it. */
static void random_place(Schedule *s, Stage *st, StrBuf *log) {
  if (st->is_output || st->op->kind != TE_COMPUTE) return;
  int r = (int)(test_rand() % 100);
  if (r < 25 && st->op->nreduce == 0) {
    if (stage_compute_inline(st) == 0) sb_printf(log, "inline(%s) ", st->op->name);
    return;
  }
  if (r < 70) {
    AVec cand = {0};
    for (int i = 0; i < s->stages.len; i++) {
      Stage *c = s->stages.data[i];
      if (c != st && !is_inline(c) && c->op->kind == TE_COMPUTE && sch_reads_from(s, c, st)) av_push(&cand, c);
    }
    if (!cand.len) return;
    Stage *c = cand.data[test_rand_between(0, cand.len - 1)];
    if (!c->leaf_iters.len) return;
    IterVar *iv = c->leaf_iters.data[test_rand_between(0, c->leaf_iters.len - 1)];
    if (stage_compute_at(st, c, iv) == 0) {
      if (kiln_check_schedule(s) == 0)
        sb_printf(log, "compute_at(%s, %s.%s) ", st->op->name, c->op->name, iv->var->var.name);
      else /* the other consumers run outside that loop: keep it at the root */
        stage_compute_root(st);
    }
  }
}

static Schedule *random_schedule(Case *k, StrBuf *log) {
  Schedule *s = te_create_schedule(k->nout, k->out);
  /* optional cache_read of an input for one of its readers */
  if (chance(20)) {
    Tensor *in = k->in[test_rand_between(0, k->nin - 1)];
    for (int i = 0; i < s->stages.len; i++) {
      Stage *c = s->stages.data[i];
      if (c->op->kind == TE_COMPUTE && av_find(&(AVec){(void **)c->op->inputs, c->op->ninputs, c->op->ninputs}, in) >= 0) {
        if (sch_cache_read(s, in, "local", 1, &c->origin)) sb_printf(log, "cache_read(%s -> %s) ", in->name, c->op->name);
        break;
      }
    }
  }
  /* consumers first, so producers attach to final loop structures */
  for (int i = s->stages.len - 1; i >= 0; i--) {
    Stage *st = s->stages.data[i];
    if (st->op->kind != TE_COMPUTE) continue;
    random_place(s, st, log);
    if (is_inline(st)) continue;
    Stage *cache = NULL;
    if (st->op->nreduce > 0 && chance(35)) {
      Tensor *cw = sch_cache_write(s, st->origin, "local");
      if (cw) {
        sb_printf(log, "cache_write(%s) ", st->op->name);
        cache = sch_stage(s, cw); /* inserted before st: the loop skips it */
      }
    }
    random_loops(st, log);
    if (cache) {
      if (chance(70) && st->leaf_iters.len) {
        IterVar *iv = st->leaf_iters.data[test_rand_between(0, st->leaf_iters.len - 1)];
        if (stage_compute_at(cache, st, iv) == 0) {
          if (kiln_check_schedule(s) == 0)
            sb_printf(log, "compute_at(%s, %s.%s) ", cache->op->name, st->op->name, iv->var->var.name);
          else
            stage_compute_root(cache);
        }
      }
      random_loops(cache, log);
    }
  }
  return s;
}

static int run_case(Case *k, Schedule *s, DLTensor **ins, DLTensor *out, StrBuf *log, const CompileOptions *copt) {
  Tensor *args[8];
  int na = 0;
  for (int i = 0; i < k->nin; i++) args[na++] = k->in[i];
  args[na++] = k->out[0];
  if (kiln_check_schedule(s)) {
    test_fail(__FILE__, __LINE__, "%s: the generator made an invalid schedule: %s\n  schedule: %s", k->name, kiln_get_error(), log->data ? log->data : "(none)");
    return -1;
  }
  KilnModule *mod = kiln_build(s, na, args, "f", NULL, copt);
  if (!mod) {
    test_fail(__FILE__, __LINE__, "%s: build failed: %s\n  schedule: %s", k->name, kiln_get_error(), log->data ? log->data : "(none)");
    return -1;
  }
  DLTensor *arr[8];
  for (int i = 0; i < k->nin; i++) arr[i] = ins[i];
  arr[k->nin] = out;
  tk_fill(out, 12345.0); /* stale values must be overwritten */
  int rc = tk_call(mod, "f", na, arr);
  if (rc) test_fail(__FILE__, __LINE__, "%s: run failed: %s\n  schedule: %s", k->name, kiln_get_error(), log->data ? log->data : "(none)");
  kiln_module_free(mod);
  return rc;
}

static void prop_test(Case (*make)(void), int nshapes, int nsched) {
  /* -O1 keeps the many compilations fast; the kernels are the same IR */
  CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};
  for (int sh = 0; sh < nshapes; sh++) {
    Case k = make();
    DLTensor *ins[4];
    for (int i = 0; i < k.nin; i++) {
      ins[i] = tk_array_for(k.in[i]);
      tk_fill_random(ins[i]);
    }
    DLTensor *ref = tk_array_for(k.out[0]), *out = tk_array_for(k.out[0]);
    StrBuf none = {0};
    Schedule *naive = te_create_schedule(k.nout, k.out);
    if (run_case(&k, naive, ins, ref, &none, &copt) == 0) {
      for (int t = 0; t < nsched; t++) {
        StrBuf log = {0};
        Schedule *s = random_schedule(&k, &log);
        if (run_case(&k, s, ins, out, &log, &copt) == 0) {
          double err = tk_rel_err(out, ref);
          if (!(err <= 1e-5))
            test_fail(__FILE__, __LINE__, "%s: relative error %g against the unscheduled lowering\n  schedule: %s", k.name, err,
                      log.data ? log.data : "(none)");
        }
        sb_free(&log);
      }
    }
    for (int i = 0; i < k.nin; i++) kiln_array_free(ins[i]);
    kiln_array_free(ref);
    kiln_array_free(out);
  }
}

static void test_prop_elementwise(void) { prop_test(case_elementwise, 3, 8); }
static void test_prop_broadcast(void) { prop_test(case_broadcast, 3, 8); }
static void test_prop_matmul(void) { prop_test(case_matmul, 3, 10); }
static void test_prop_conv2d(void) { prop_test(case_conv2d, 3, 10); }
static void test_prop_reduce(void) { prop_test(case_reduce, 3, 8); }
static void test_prop_softmax(void) { prop_test(case_softmax, 3, 10); }

const TestCase prop_tests[] = {
    {"elementwise", test_prop_elementwise},
    {"broadcast", test_prop_broadcast},
    {"matmul", test_prop_matmul},
    {"conv2d", test_prop_conv2d},
    {"reduce", test_prop_reduce},
    {"softmax", test_prop_softmax},
    {NULL, NULL},
};
