/*
 * test_symshape.c - symbolic dimensions in the graph IR (symshape.c):
 * convolution and pooling output sizes as simplified expressions,
 * reshape/flatten, concat, dense and broadcasting over symbols; passes
 * keep them (a graph_rewrite maps the symbols into the new graph); each
 * op without a rule, and each inconsistent use, is an error naming it.
 */
#include "graph/graph.h"
#include "graph/backend/build.h"
#include "graph/passes/passes.h"
#include "kiln/runtime.h"
#include "runtime/runtime_internal.h"
#include "rt_model.h"
#include "test.h"

/* A symbolic NCHW input (N, C, H, W) with H and W symbols or numbers. */
static GNode *sym_input(Graph *g, const char *name, int64_t C, const char *h, const char *w) {
  TType t = ttype(DT_F32, 4, (int64_t[]){0, C, 0, 0});
  SymDims *sd = KNEW(SymDims);
  const char *syms[4] = {"N", NULL, h, w};
  for (int d = 0; d < 4; d++) {
    if (!syms[d]) continue;
    GSym *s = graph_sym(g, syms[d], 1, 4096);
    sd->dim[d] = s->var;
    t.shape[d] = s->rep;
  }
  t.sym = sd;
  return graph_var(g, name, t);
}

static GNode *weight(Graph *g, int ndim, const int64_t *shape) {
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(ndim, shape, DT_F32, cpu, &a)) return NULL;
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  for (int64_t i = 0; i < n; i++) ((float *)a->data)[i] = test_randf();
  return graph_const(g, NULL, a);
}

static GNode *conv(Graph *g, GNode *x, int64_t O, int64_t C, int64_t k, int64_t s, int64_t p) {
  GAttrs a = gattrs_new();
  ga_ints(&a, "strides", 2, (int64_t[]){s, s});
  ga_ints(&a, "padding", 4, (int64_t[]){p, p, p, p});
  return graph_call(g, "nn.conv2d", 2, (GNode *[]){x, weight(g, 4, (int64_t[]){O, C, k, k})}, a, "conv");
}

static const char *ty(GNode *n) { return n ? ttype_str(&n->type) : kiln_get_error(); }

static void test_symshape_conv_pool(void) {
  Graph *g = graph_new();
  GNode *x = sym_input(g, "x", 3, "H", "W");
  CHECK_STR(ty(x), "Tensor[(N, 3, H, W), float32]");
  /* 3x3, stride 1, pad 1 keeps the size: (H + 2 - 3) / 1 + 1 simplifies to H */
  GNode *c1 = conv(g, x, 8, 3, 3, 1, 1);
  CHECK_STR(ty(c1), "Tensor[(N, 8, H, W), float32]");
  /* 7x7 stride 2 pad 3 (a ResNet stem) */
  GNode *c2 = conv(g, c1, 4, 8, 7, 2, 3);
  CHECK_STR(ty(c2), "Tensor[(N, 4, floordiv((H + 1), 2), floordiv((W + 1), 2)), float32]");
  GAttrs pa = gattrs_new();
  ga_ints(&pa, "pool_size", 2, (int64_t[]){2, 2});
  ga_ints(&pa, "strides", 2, (int64_t[]){2, 2});
  GNode *p = graph_call(g, "nn.max_pool2d", 1, &c1, pa, "pool");
  CHECK_STR(ty(p), "Tensor[(N, 8, floordiv(H, 2), floordiv(W, 2)), float32]");
  GNode *gp = graph_call(g, "nn.global_avg_pool2d", 1, &c2, gattrs_new(), "gap");
  CHECK_STR(ty(gp), "Tensor[(N, 4, 1, 1), float32]");
  /* the integer view holds the representative values */
  GSym *H = graph_sym_find(g, "H");
  CHECK_NN(H);
  if (H) CHECK_INT(p->type.shape[2], H->rep / 2);
  /* ceil-mode pooling over a symbolic height is refused, naming the node */
  ga_int(&pa, "ceil_mode", 1);
  CHECK(graph_call(g, "nn.max_pool2d", 1, &c1, pa, "pool_ceil") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "nn.max_pool2d (node 'pool_ceil') over symbolic dimensions");
  CHECK_CONTAINS(kiln_get_error(), "ceil_mode");
  graph_free(g);
}

static void test_symshape_reshape_flatten_dense(void) {
  GAttrs none = gattrs_new();
  Graph *g = graph_new();
  TType t = ttype(DT_F32, 4, (int64_t[]){0, 8, 6, 6});
  SymDims *sd = KNEW(SymDims);
  GSym *N = graph_sym(g, "N", 1, 64);
  sd->dim[0] = N->var;
  t.shape[0] = N->rep;
  t.sym = sd;
  GNode *x = graph_var(g, "x", t);
  CHECK_INT(N->rep, 64); /* the representative value lies within the bounds */
  GNode *f = graph_call(g, "nn.batch_flatten", 1, &x, none, "flat");
  CHECK_STR(ty(f), "Tensor[(N, 288), float32]");
  GAttrs ra = gattrs_new();
  ga_ints(&ra, "newshape", 2, (int64_t[]){0, -1});
  GNode *r = graph_call(g, "reshape", 1, &x, ra, "r");
  CHECK_STR(ty(r), "Tensor[(N, 288), float32]");
  /* -1 in front: the whole count over the constants */
  GAttrs rb = gattrs_new();
  ga_ints(&rb, "newshape", 3, (int64_t[]){-1, 6, 6});
  GNode *r2 = graph_call(g, "reshape", 1, &x, rb, "r2");
  CHECK_STR(ty(r2), "Tensor[((N*8), 6, 6), float32]");
  /* a fixed newshape cannot follow N: the node says so */
  GAttrs rc = gattrs_new();
  ga_ints(&rc, "newshape", 2, (int64_t[]){64, 288});
  CHECK(graph_call(g, "reshape", 1, &x, rc, "fixed") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "reshape (node 'fixed') over symbolic dimensions");
  GNode *d = graph_call(g, "nn.dense", 2, (GNode *[]){f, weight(g, 2, (int64_t[]){10, 288})}, none, "fc");
  CHECK_STR(ty(d), "Tensor[(N, 10), float32]");
  /* broadcasting keeps N; a bias of shape (10,) broadcasts */
  GNode *b = graph_call(g, "add", 2, (GNode *[]){d, weight(g, 1, (int64_t[]){10})}, none, "bias");
  CHECK_STR(ty(b), "Tensor[(N, 10), float32]");
  GNode *sm = graph_call(g, "nn.softmax", 1, &b, none, "sm");
  CHECK_STR(ty(sm), "Tensor[(N, 10), float32]");
  /* dense over symbolic features is refused */
  GNode *tr = graph_call(g, "transpose", 1, &d, none, "tr");
  CHECK_STR(ty(tr), "Tensor[(10, N), float32]");
  CHECK(graph_call(g, "nn.dense", 2, (GNode *[]){tr, weight(g, 2, (int64_t[]){3, 64})}, none, "fc2") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "dense needs a constant feature count");
  graph_free(g);
}

/* A reshape target with two entries computed from the symbols ((S*B, 4)
 * to [S, B, 4], the attention's): sym_newshape carries the expressions,
 * newshape their values at the representative sizes; the specialization
 * evaluates them at the given sizes. */
static void test_symshape_reshape_exprs(void) {
  Graph *g = graph_new();
  GSym *S = graph_sym(g, "S", 1, 16), *B = graph_sym(g, "B", 1, 8);
  TType t = ttype(DT_F32, 2, (int64_t[]){S->rep * B->rep, 4});
  SymDims *sd = KNEW(SymDims);
  sd->dim[0] = ir_mul(S->var, B->var);
  t.sym = sd;
  GNode *x = graph_var(g, "x", t);
  GAttrs ra = gattrs_new();
  ga_ints(&ra, "newshape", 3, (int64_t[]){S->rep, B->rep, 4});
  ga_str(&ra, "sym_newshape", "S;B;");
  GNode *r = graph_call(g, "reshape", 1, &x, ra, "r");
  CHECK_STR(ty(r), "Tensor[(S, B, 4), float32]");
  /* a symbol the input does not have is an error naming it */
  GAttrs rb = gattrs_new();
  ga_ints(&rb, "newshape", 3, (int64_t[]){S->rep, B->rep, 4});
  ga_str(&rb, "sym_newshape", "S;H;");
  CHECK(graph_call(g, "reshape", 1, &x, rb, "bad") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "symbol 'H' is not in the input's shape");
  graph_add_output(g, r);
  int64_t vals[2] = {5, 3};
  Graph *g1 = graph_specialize(g, vals);
  CHECK_NN(g1);
  if (g1) CHECK_STR(ty(g1->outputs.data[0]), "Tensor[(5, 3, 4), float32]");
  graph_free(g1);
  graph_free(g);
}

static void test_symshape_concat_and_broadcast(void) {
  Graph *g = graph_new();
  GNode *a = sym_input(g, "a", 3, "H", "W");
  GNode *b = sym_input(g, "b", 5, "H", "W");
  GAttrs ca = gattrs_new();
  ga_int(&ca, "axis", 1);
  GNode *c = graph_call(g, "concatenate", 2, (GNode *[]){a, b}, ca, "cat");
  CHECK_STR(ty(c), "Tensor[(N, 8, H, W), float32]");
  GAttrs c0 = gattrs_new();
  ga_int(&c0, "axis", 0);
  GNode *c2 = graph_call(g, "concatenate", 2, (GNode *[]){a, a}, c0, "cat0");
  CHECK_STR(ty(c2), "Tensor[((N*2), 3, H, W), float32]");
  /* an elementwise op of two inputs over the same symbols */
  GNode *x = sym_input(g, "x", 3, "H", "W");
  GNode *s = graph_call(g, "add", 2, (GNode *[]){a, x}, gattrs_new(), "sum");
  CHECK_STR(ty(s), "Tensor[(N, 3, H, W), float32]");
  /* N against 2N (the axis-0 concat): the sizes cannot broadcast */
  CHECK(graph_call(g, "add", 2, (GNode *[]){c2, x}, gattrs_new(), "bad") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "add (node 'bad')");
  /* an op without a symbolic rule is refused with what it was given */
  GAttrs ta = gattrs_new();
  ga_ints(&ta, "reps", 4, (int64_t[]){1, 1, 2, 2});
  CHECK(graph_call(g, "tile", 1, &a, ta, "tl") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "tile (node 'tl') does not take symbolic dimensions yet");
  CHECK_CONTAINS(kiln_get_error(), "argument 0 is Tensor[(N, 3, H, W), float32]");
  graph_free(g);
}

static void test_symshape_passes_and_build(void) {
  Graph *g = graph_new();
  GNode *x = sym_input(g, "x", 3, "H", "W");
  GNode *c = conv(g, x, 8, 3, 3, 2, 1);
  GNode *r = graph_call(g, "nn.relu", 1, &c, gattrs_new(), "relu");
  graph_add_output(g, r);
  CHECK(graph_is_symbolic(g));
  CHECK_OK(graph_verify(g, "test"));
  /* a rewrite maps the symbols into the new graph: same text, own Vars */
  Graph *g2 = pass_dce(g, NULL);
  CHECK_NN(g2);
  if (g2) {
    GNode *o = g2->outputs.data[0];
    CHECK_STR(ty(o), ty(r));
    CHECK_INT(g2->syms.len, 3);
    GSym *H2 = graph_sym_find(g2, "H");
    CHECK(H2 && H2->var != graph_sym_find(g, "H")->var);
    CHECK_OK(graph_verify(g2, "dce"));
    graph_free(g2);
  }
  /* evaluating an output dimension at given sizes */
  int64_t vals[3] = {8, 224, 160}, v = 0;
  CHECK(sym_eval(g, r->type.sym->dim[2], vals, &v));
  CHECK_INT(v, 112);
  CHECK(sym_eval(g, r->type.sym->dim[3], vals, &v));
  CHECK_INT(v, 80);
  /* what needs static shapes (--emit c, GPU builds, tasks) names a symbolic tensor */
  CHECK(graph_require_static(g, "building a module") != 0);
  CHECK_CONTAINS(kiln_get_error(), "building a module needs static shapes, but 'x' is Tensor[(N, 3, H, W), float32]");
  /* symbols: names, bounds */
  CHECK(graph_sym(g, "3x", 1, 8) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "not a symbol name");
  CHECK(graph_sym_bound(g, "N", 10, 4) != 0);
  CHECK_CONTAINS(kiln_get_error(), "empty bounds");
  CHECK(graph_sym_bound(g, "Q", 1, 4) != 0);
  CHECK_CONTAINS(kiln_get_error(), "no input shape uses");
  graph_free(g);
}

/* The batch as an outer loop: which graphs qualify, and the batch-1
 * specialization. */
static void test_symshape_batch_outer(void) {
  Graph *g = graph_new();
  TType t = ttype(DT_F32, 4, (int64_t[]){0, 3, 8, 8});
  SymDims *sd = KNEW(SymDims);
  GSym *N = graph_sym(g, "N", 1, 16);
  sd->dim[0] = N->var;
  t.shape[0] = N->rep;
  t.sym = sd;
  GNode *x = graph_var(g, "x", t);
  GNode *c = conv(g, x, 4, 3, 3, 1, 1);
  GNode *f = graph_call(g, "nn.batch_flatten", 1, &c, gattrs_new(), "flat");
  GNode *d = graph_call(g, "nn.dense", 2, (GNode *[]){f, weight(g, 2, (int64_t[]){10, 256})}, gattrs_new(), "fc");
  GAttrs sa = gattrs_new();
  ga_int(&sa, "axis", 1);
  GNode *sm = graph_call(g, "nn.softmax", 1, &d, sa, "sm");
  graph_add_output(g, sm);
  CHECK(graph_batch_symbol(g) == N);
  int64_t one = 1;
  Graph *g1 = graph_specialize(g, &one);
  CHECK_NN(g1);
  if (g1) {
    CHECK(!graph_is_symbolic(g1));
    CHECK_STR(ty(g1->outputs.data[0]), "Tensor[(1, 10), float32]");
    graph_free(g1);
  }
  /* a softmax over the batch axis mixes samples: not per sample */
  GAttrs s0 = gattrs_new();
  ga_int(&s0, "axis", 0);
  graph_add_output(g, graph_call(g, "nn.softmax", 1, &d, s0, "sm0"));
  CHECK(graph_batch_symbol(g) == NULL);
  graph_free(g);
  /* a symbolic height is not a batch */
  g = graph_new();
  x = sym_input(g, "x", 3, "H", "W");
  graph_add_output(g, graph_call(g, "nn.relu", 1, &x, gattrs_new(), "r"));
  CHECK(graph_batch_symbol(g) == NULL);
  graph_free(g);
}

/* relu(x + b) over x (N, 4), N <= 12: built on the generic path (kernels
 * over N) and as the batch as an outer loop (batch-1 kernels called per
 * sample).  Each module runs against C at batches that alternate, then
 * at more distinct batches than the executor keeps plans for, and
 * refuses batch 13.  A batch seen before reallocates no buffer; a cached
 * binding evaluates nothing (a plan hit); the least recently used plan
 * is the one evicted. */
static void run_relu_module(RtModel *m, Graph *g, const char *batch_outer, Graph **variants, const int64_t *vb,
                            int nv, const char *name) {
  GraphBuildOptions bo;
  memset(&bo, 0, sizeof bo);
  bo.opt_level = 1;
  bo.batch_outer = batch_outer;
  bo.variants = variants;
  bo.variant_batch = vb;
  bo.nvariants = nv;
  rt_build(m, g, &bo, name);
  KilnGraphExecutor *ex = m->ex;
  DLDevice cpu = {kDLCPU, 0};
  static const int64_t seq[] = {1, 5, 3, 5, 1, 3, 2, 4, 6, 7, 8, 9, 10, 3, 5, 1, 13};
  int nseq = (int)(sizeof seq / sizeof seq[0]);
  uint8_t seen[16] = {0};
  for (int k = 0; ex && k < nseq; k++) {
    int64_t b = seq[k], shape[2] = {b, 4};
    DLTensor *x = NULL, *y = NULL;
    CHECK_OK(kiln_array_empty(2, shape, DT_F32, cpu, &x));
    if (!x) break;
    for (int i = 0; i < b * 4; i++) ((float *)x->data)[i] = test_randf();
    if (b == 13) { /* outside N <= 12 */
      CHECK(kiln_graph_executor_set_input(ex, 0, x) != 0);
      CHECK_CONTAINS(kiln_last_error(), "dimension 0 (N) is 13, outside the bounds [1, 12]");
      kiln_array_free(x);
      break;
    }
    uint64_t reallocs = ex->sym_stats.reallocs;
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, x));
    if (seen[b] && ex->sym_stats.reallocs != reallocs) {
      fprintf(stderr, "  batch %lld, seen before, reallocated %llu buffers\n", (long long)b,
              (unsigned long long)(ex->sym_stats.reallocs - reallocs));
      CHECK(0);
    }
    seen[b] = 1;
    CHECK_OK(kiln_graph_executor_run(ex));
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &y));
    if (y) {
      CHECK_INT(y->ndim, 2);
      CHECK_INT(y->shape[0], b);
      for (int i = 0; i < b * 4; i++) {
        float want = ((float *)x->data)[i] + 0.25f * (float)(i % 4) - 0.5f;
        CHECK(fabsf(((float *)y->data)[i] - (want > 0 ? want : 0)) < 1e-6f);
      }
    }
    kiln_array_free(x);
    kiln_array_free(y);
  }
  if (ex) {
    /* The executor starts planned at N = 1 (no set_input work for the
     * first batch 1).  Misses: 5 3 1 2 4 6 7 8 9 10, then 5 again (9
     * evicted it, the least recently used; 10 evicted 1, so 1 misses too).
     * Hits: 5 3 (alternating), then 3. */
    CHECK_INT((int)ex->sym_stats.plan_misses, 12);
    CHECK_INT((int)ex->sym_stats.plan_hits, 3);
    CHECK_INT((int)ex->sym_stats.evictions, 4);
    CHECK_INT(ex->num_sym_plans, KILN_SYM_PLANS);
    CHECK(ex->sym_stats.reallocs >= 1); /* the buffers grew for batch 5 and 10 */
    /* Batched variants at 2 and 4: the largest that fits, as often as it
     * fits, the rest one sample at a time.  Over the batches above (13
     * refused): 5 = 4+1, 3 = 2+1, 5, 1, 3, 2, 4, 6 = 4+2, 7 = 4+2+1,
     * 8 = 4+4, 9 = 4+4+1, 10 = 4+4+2, 3, 5, 1: 19 variant runs taking 62
     * of the 70 samples; without variants none. */
    CHECK_INT((int)ex->sym_stats.variant_runs, nv ? 19 : 0);
    CHECK_INT((int)ex->sym_stats.variant_samples, nv ? 62 : 0);
  }
}

static void test_symshape_executor(void) {
  RtModel rt;
  if (!rt_begin(&rt, "kiln-sym-")) return;
  Graph *g = rt.g = graph_new();
  TType t = ttype(DT_F32, 2, (int64_t[]){0, 4});
  SymDims *sd = KNEW(SymDims);
  GSym *N = graph_sym(g, "N", 1, 12);
  sd->dim[0] = N->var;
  t.shape[0] = N->rep;
  t.sym = sd;
  GNode *x = graph_var(g, "x", t);
  DLTensor *bv;
  CHECK_OK(kiln_array_empty(1, (int64_t[]){4}, DT_F32, (DLDevice){kDLCPU, 0}, &bv));
  for (int i = 0; i < 4; i++) ((float *)bv->data)[i] = 0.25f * (float)i - 0.5f;
  GNode *a = graph_call(g, "add", 2, (GNode *[]){x, graph_const(g, "b", bv)}, gattrs_new(), "add");
  graph_add_output(g, graph_call(g, "nn.relu", 1, &a, gattrs_new(), "relu"));
  run_relu_module(&rt, g, NULL, NULL, NULL, 0, "generic");
  CHECK(graph_batch_symbol(g) == N);
  int64_t one = 1;
  Graph *g1 = graph_specialize(g, &one);
  CHECK_NN(g1);
  if (g1) run_relu_module(&rt, g1, "N:1:12", NULL, NULL, 0, "batch");
  /* the same with batched variants at 2 and 4 in the artifact */
  int64_t vb[2] = {2, 4};
  Graph *gv[2] = {graph_specialize(g, &vb[0]), graph_specialize(g, &vb[1])};
  CHECK_NN(gv[0]);
  CHECK_NN(gv[1]);
  if (g1 && gv[0] && gv[1]) run_relu_module(&rt, g1, "N:1:12", gv, vb, 2, "variants");
  graph_free(gv[0]);
  graph_free(gv[1]);
  graph_free(g1);
  rt_close(&rt);
}

/* Run-time shape values: out = fill(2.5, shape = x) + 1 with x a 1-D
 * int64 graph input.  Its elements are symbols the executor binds from
 * the data set_input gets (before planning), so one module runs at every
 * x; the plan cache keys on the values; a value outside the bounds and an
 * input that cannot carry sizes are errors naming the node and value. */
static void test_symshape_runtime_value(void) {
  RtModel rt;
  if (!rt_begin(&rt, "kiln-symval-")) return;
  Graph *g = rt.g = graph_new();
  (void)graph_var(g, "x", ttype(DT_I64, 1, (int64_t[]){2}));
  GSym *s0 = graph_value_sym(g, "x", 0, 1, 64), *s1 = graph_value_sym(g, "x", 1, 1, 64);
  CHECK_NN(s0);
  CHECK_NN(s1);
  if (!s0 || !s1) {
    rt_close(&rt);
    return;
  }
  CHECK_STR(s0->name, "x_0");
  CHECK(graph_value_sym(g, "x", 0, 1, 64) == s0); /* one symbol per element */
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", 2, (int64_t[]){s0->rep, s1->rep});
  ga_str(&a, "sym_dims", "x_0,x_1");
  GNode *f = graph_call(g, "broadcast_to", 1, (GNode *[]){graph_scalar(g, 2.5, DT_F32)}, a, "fill");
  CHECK_STR(ty(f), "Tensor[(x_0, x_1), float32]");
  /* sym_dims must name a run-time value at its representative value */
  GAttrs bad = gattrs_new();
  ga_ints(&bad, "shape", 2, (int64_t[]){s0->rep, 3});
  ga_str(&bad, "sym_dims", "x_0,x_9");
  CHECK(graph_call(g, "broadcast_to", 1, (GNode *[]){graph_scalar(g, 1.0, DT_F32)}, bad, "bad") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "sym_dims: shape expression 'x_9': bad token 'x_9'");
  GNode *y = graph_call(g, "add", 2, (GNode *[]){f, graph_scalar(g, 1.0, DT_F32)}, gattrs_new(), "add");
  graph_add_output(g, y);
  CHECK(graph_batch_symbol(g) == NULL); /* bound from data, never a batch */
  rt_build_at(&rt, g, 1, "value");
  KilnGraphExecutor *ex = rt.ex;
  DLDevice cpu = {kDLCPU, 0};
  static const int64_t seq[][2] = {{3, 4}, {5, 2}, {3, 4}, {1, 7}, {5, 2}};
  for (int k = 0; ex && k < 5; k++) {
    DLTensor *xv = NULL, *out = NULL;
    CHECK_OK(kiln_array_empty(1, (int64_t[]){2}, DT_I64, cpu, &xv));
    if (!xv) break;
    memcpy(xv->data, seq[k], sizeof seq[k]);
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xv));
    CHECK_OK(kiln_graph_executor_run(ex));
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &out));
    if (out) {
      CHECK_INT(out->ndim, 2);
      CHECK_INT(out->shape[0], seq[k][0]);
      CHECK_INT(out->shape[1], seq[k][1]);
      int bad_elems = 0;
      for (int64_t i = 0; i < seq[k][0] * seq[k][1]; i++) bad_elems += ((float *)out->data)[i] != 3.5f;
      CHECK_INT(bad_elems, 0);
    }
    kiln_array_free(xv);
    kiln_array_free(out);
  }
  if (ex) {
    /* misses: (3,4) (5,2) (1,7); hits: (3,4) (5,2) */
    CHECK_INT((int)ex->sym_stats.plan_misses, 3);
    CHECK_INT((int)ex->sym_stats.plan_hits, 2);
    DLTensor *xv = NULL;
    CHECK_OK(kiln_array_empty(1, (int64_t[]){2}, DT_I64, cpu, &xv));
    if (xv) {
      ((int64_t *)xv->data)[0] = 4;
      ((int64_t *)xv->data)[1] = 0;
      CHECK(kiln_graph_executor_set_input(ex, 0, xv) != 0);
      CHECK_CONTAINS(kiln_last_error(), "element 1 is 0, which is dimension 1 of node");
      CHECK_CONTAINS(kiln_last_error(), "(the size x_1), outside the bounds [1, 64]");
      kiln_array_free(xv);
    }
    /* the values stay those of the last good set_input */
    CHECK_INT((int)ex->g.entry_shape[ex->g.num_entries - 1][0], 5);
    DLTensor *fv = NULL; /* sizes cannot come from float data */
    CHECK_OK(kiln_array_empty(1, (int64_t[]){2}, DT_F32, cpu, &fv));
    if (fv) {
      CHECK(kiln_graph_executor_set_input(ex, 0, fv) != 0);
      CHECK_CONTAINS(kiln_last_error(), "int64 or int32 tensor in cpu memory");
      kiln_array_free(fv);
    }
  }
  rt_close(&rt);
}

/* Data-dependent sizes (docs/symbolic_shapes.md, section 4c): k =
 * compress(x, cond) (its size c1 reported by the call), y = k + 1 over
 * it, and nz = nonzero(k), whose upper bound is c1 itself: two sizes
 * reported in one run, the second's buffer planned from the first.  One
 * module runs conditions of different counts in sequence against C; the
 * plans are cached per binding (and per how many sizes the run has
 * bound), a count seen before reallocates nothing, and a count of 0 is
 * an empty result (the sizes' lower bound is 0, as the importer makes
 * them) between non-empty ones. */
static GNode *dd_node(Graph *g, const char *op, int nargs, GNode **args, DType dt, int nd, const int64_t *shape,
                      const char *dims, int report, const char *cap, const char *host, const char *name) {
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", nd, shape);
  ga_str(&a, "dtype", dt_str(dt));
  ga_str(&a, "sym_dims", dims);
  ga_int(&a, "report", report);
  ga_str(&a, "report_cap", cap);
  ga_str(&a, "host_attrs", host);
  return graph_call(g, op, nargs, args, a, name);
}

static void test_symshape_data_dependent(void) {
  RtModel rt;
  if (!rt_begin(&rt, "kiln-dd-")) return;
  Graph *g = rt.g = graph_new();
  GNode *x = graph_var(g, "x", ttype(DT_F32, 1, (int64_t[]){12}));
  GNode *c = graph_var(g, "cond", ttype(DT_BOOL, 1, (int64_t[]){12}));
  GSym *c1 = graph_sym(g, "c1", 1, 12), *c2 = graph_sym(g, "c2", 1, 12);
  CHECK(c1 && c2);
  if (c1 && c2) c1->lo = c2->lo = 0;
  if (!c1 || !c2) {
    rt_close(&rt);
    return;
  }
  GNode *k = dd_node(g, "dd.compress", 2, (GNode *[]){x, c}, DT_F32, 1, (int64_t[]){c1->rep}, "c1", 0, "12",
                     "{\"axis\": 0}", "compress");
  CHECK_STR(ty(k), "Tensor[(c1,), float32]");
  GNode *y = graph_call(g, "add", 2, (GNode *[]){k, graph_scalar(g, 1.0, DT_F32)}, gattrs_new(), "add");
  GNode *nz = dd_node(g, "dd.nonzero", 1, (GNode *[]){k}, DT_I64, 2, (int64_t[]){1, c2->rep}, ",c2", 1, "c1",
                      "{}", "nonzero");
  CHECK_STR(ty(nz), "Tensor[(1, c2), int64]");
  /* a reported dimension needs its bound */
  GAttrs bad = gattrs_new();
  ga_ints(&bad, "shape", 1, (int64_t[]){c1->rep});
  ga_str(&bad, "dtype", "float32");
  ga_int(&bad, "report", 0);
  CHECK(graph_call(g, "dd.compress", 2, (GNode *[]){x, c}, bad, "bad") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "needs its upper bound 'report_cap'");
  graph_add_output(g, y);
  graph_add_output(g, nz);
  CHECK(graph_batch_symbol(g) == NULL); /* reported sizes are never a batch */
  rt_build_at(&rt, g, 1, "dd");
  KilnGraphExecutor *ex = rt.ex;
  DLDevice cpu = {kDLCPU, 0};
  DLTensor *xv = NULL, *cv = NULL;
  CHECK_OK(kiln_array_empty(1, (int64_t[]){12}, DT_F32, cpu, &xv));
  CHECK_OK(kiln_array_empty(1, (int64_t[]){12}, DT_BOOL, cpu, &cv));
  /* the conditions, as bit masks over the 12 positions; x has zeros at 3
   * and 7, so nonzero(k) counts fewer than k has */
  static const int masks[] = {0x0F0, 0xFFF, 0x0F0, 0x801, 0x0F0};
  uint64_t reallocs_after_first = 0;
  for (int r = 0; ex && xv && cv && r < 5; r++) {
    float *xd = xv->data;
    uint8_t *cd = cv->data;
    for (int i = 0; i < 12; i++) {
      xd[i] = i == 3 || i == 7 ? 0.0f : test_randf() + 2.0f;
      cd[i] = (uint8_t)((masks[r] >> i) & 1);
    }
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xv));
    CHECK_OK(kiln_graph_executor_set_input(ex, 1, cv));
    CHECK_OK(kiln_graph_executor_run(ex));
    float want[12];
    int64_t wnz[12], n = 0, m = 0;
    for (int i = 0; i < 12; i++)
      if (cd[i]) {
        if (xd[i] != 0) wnz[m++] = n;
        want[n++] = xd[i] + 1.0f;
      }
    DLTensor *o0 = NULL, *o1 = NULL;
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &o0));
    CHECK_OK(kiln_graph_executor_get_output(ex, 1, &o1));
    if (o0 && o1) {
      CHECK_INT((int)o0->ndim, 1);
      CHECK_INT((int)o0->shape[0], (int)n);
      CHECK_INT((int)o1->ndim, 2);
      CHECK_INT((int)o1->shape[0], 1);
      CHECK_INT((int)o1->shape[1], (int)m);
      int bad_elems = 0;
      for (int64_t i = 0; i < n && n == o0->shape[0]; i++) bad_elems += ((float *)o0->data)[i] != want[i];
      for (int64_t i = 0; i < m && m == o1->shape[1]; i++) bad_elems += ((int64_t *)o1->data)[i] != wnz[i];
      CHECK_INT(bad_elems, 0);
    }
    kiln_array_free(o0);
    kiln_array_free(o1);
    if (r == 0) reallocs_after_first = ex->sym_stats.reallocs;
    if (r == 2 || r == 4) /* mask 0x0F0 again: every buffer already fits */
      CHECK_INT((int)(ex->sym_stats.reallocs - reallocs_after_first), 0);
  }
  if (ex && xv && cv) {
    /* runs' plans: the start (c1 = c2 = 12, nothing bound) once, then per
     * distinct condition one after compress and one after nonzero: 1 + 3
     * x 2 misses; the start of runs 2-5 and both plans of the repeated
     * 0x0F0 (twice) are hits */
    CHECK_INT((int)ex->sym_stats.plan_misses, 7);
    CHECK_INT((int)ex->sym_stats.plan_hits, 4 + 4);
    /* an empty result: both outputs empty */
    memset(cv->data, 0, 12);
    CHECK_OK(kiln_graph_executor_set_input(ex, 1, cv));
    CHECK_OK(kiln_graph_executor_run(ex));
    DLTensor *e0 = NULL, *e1 = NULL;
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &e0));
    CHECK_OK(kiln_graph_executor_get_output(ex, 1, &e1));
    if (e0 && e1) {
      CHECK_INT((int)e0->shape[0], 0);
      CHECK_INT((int)e1->shape[0], 1);
      CHECK_INT((int)e1->shape[1], 0);
    }
    kiln_array_free(e0);
    kiln_array_free(e1);
    /* and a non-empty one after it */
    ((uint8_t *)cv->data)[5] = 1;
    CHECK_OK(kiln_graph_executor_set_input(ex, 1, cv));
    CHECK_OK(kiln_graph_executor_run(ex));
    DLTensor *o0 = NULL;
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &o0));
    if (o0) {
      CHECK_INT((int)o0->shape[0], 1);
      CHECK(((float *)o0->data)[0] == ((float *)xv->data)[5] + 1.0f);
    }
    kiln_array_free(o0);
  }
  kiln_array_free(xv);
  kiln_array_free(cv);
  rt_close(&rt);
}

/* Grow-and-retry (docs/symbolic_shapes.md, section 4c): sizes nothing
 * bounds before the run.  p = strings.split(x) on whitespace runs and
 * q = strings.split(x, " ") (every space splits): the pieces of each
 * string, padded with "" to the most any string has, sizes m and n the
 * calls report, whose "report_cap" (2 and 1) is only a first guess
 * ("report_grow"); c = split_count(x).  Text needing more pieces than the
 * guess makes the executor grow the output and call the op again
 * (counted in regrows), q's after p's size is bound in the same run; the
 * larger size is the next run's guess, so text that fits runs each op
 * once; 0 pieces is an empty result; a size above the symbol's bound is
 * an error naming it. */
static const char *const grow_texts[][4] = {
    {"a b", "c", "d e f", "g h i j k"},          /* m 5 (grow from 2), n 5 (grow from 1) */
    {"one", "two three", "", "x y z"},           /* m 3, n 3: both fit */
    {"a b c d e f g h i j k l", "m", "", "n o"}, /* m 12, n 12: both grow */
    {"  ", "", "\t", "\n"},                      /* m 0 (empty), n 3 */
    {"p q r s t", "u", "v  w", "x"},             /* m 5, n 5: fit */
};

/* The pieces of s split at each sep (strsep's), written into piece[] (at
 * most 32 of 64 bytes); their count. */
static int grow_ref(const char *s, const char *sep, char piece[][64]) {
  char buf[64], *p = buf, *w;
  int k = 0;
  snprintf(buf, sizeof buf, "%s", s);
  if (!*sep) { /* whitespace runs: strtok's */
    char *save = NULL;
    for (w = strtok_r(buf, " \t\n", &save); w && k < 32; w = strtok_r(NULL, " \t\n", &save)) snprintf(piece[k++], 64, "%s", w);
    return k;
  }
  while ((w = strsep(&p, sep)) && k < 32) snprintf(piece[k++], 64, "%s", w);
  return k;
}

static int grow_check(const DLTensor *o, const DLTensor *cnt, int r, const char *sep, int most) {
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    char piece[32][64];
    int k = grow_ref(grow_texts[r][i], sep, piece);
    if (cnt) bad += ((int64_t *)cnt->data)[i] != k;
    for (int j = 0; j < most; j++) {
      const char *got = ((const char **)o->data)[i * most + j];
      bad += strcmp(got ? got : "", j < k ? piece[j] : ""); /* padding: "" */
    }
  }
  return bad;
}

static void test_symshape_grow_retry(void) {
  RtModel rt;
  if (!rt_begin(&rt, "kiln-grow-")) return;
  Graph *g = rt.g = graph_new();
  GNode *x = graph_var(g, "x", ttype(DT_STRING, 1, (int64_t[]){4}));
  GSym *m = graph_sym(g, "m", 1, 16), *n = graph_sym(g, "n", 1, 16);
  CHECK(m && n);
  GNode *p = NULL, *q = NULL, *c = NULL;
  if (m && n) {
    m->lo = n->lo = 0;
    static const char *const host[2] = {"{\"delimiter\": \"\", \"maxsplit\": -1}",
                                        "{\"delimiter\": \" \", \"maxsplit\": -1}"};
    for (int k = 0; k < 2; k++) {
      GAttrs a = gattrs_new();
      ga_ints(&a, "shape", 2, (int64_t[]){4, k ? n->rep : m->rep});
      ga_str(&a, "sym_dims", k ? ",n" : ",m");
      ga_int(&a, "report", 1);
      ga_str(&a, "report_cap", k ? "1" : "2");
      ga_int(&a, "report_grow", 1);
      ga_str(&a, "host_attrs", host[k]);
      *(k ? &q : &p) = graph_call(g, "strings.split", 1, &x, a, k ? "split_space" : "split");
    }
    GAttrs ca = gattrs_new();
    ga_str(&ca, "host_attrs", host[0]);
    c = graph_call(g, "strings.split_count", 1, &x, ca, "count");
  }
  CHECK(p && q && c);
  if (!p || !q || !c) {
    rt_close(&rt);
    return;
  }
  CHECK_STR(ty(p), "Tensor[(4, m), string]");
  graph_add_output(g, p);
  graph_add_output(g, q);
  graph_add_output(g, c);
  rt_build_at(&rt, g, 1, "grow");
  KilnGraphExecutor *ex = rt.ex;
  static const int mm[] = {5, 3, 12, 0, 5}, nn[] = {5, 3, 12, 3, 5}, regrows[] = {2, 2, 4, 4, 4};
  for (int r = 0; ex && r < 5; r++) {
    DLTensor *xv = NULL;
    CHECK_OK(kiln_array_from_strings(1, (int64_t[]){4}, grow_texts[r], &xv));
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xv));
    CHECK_OK(kiln_graph_executor_run(ex));
    CHECK_INT((int)ex->sym_stats.regrows, regrows[r]);
    DLTensor *po = NULL, *qo = NULL, *co = NULL;
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &po));
    CHECK_OK(kiln_graph_executor_get_output(ex, 1, &qo));
    CHECK_OK(kiln_graph_executor_get_output(ex, 2, &co));
    if (po && qo && co) {
      CHECK_INT((int)po->ndim, 2);
      CHECK_INT((int)po->shape[0], 4);
      CHECK_INT((int)po->shape[1], mm[r]);
      CHECK_INT((int)qo->shape[1], nn[r]);
      if (po->shape[1] == mm[r]) CHECK_INT(grow_check(po, co, r, "", mm[r]), 0);
      if (qo->shape[1] == nn[r]) CHECK_INT(grow_check(qo, NULL, r, " ", nn[r]), 0);
    }
    kiln_array_free(po);
    kiln_array_free(qo);
    kiln_array_free(co);
    kiln_array_free(xv);
  }
  if (ex) { /* 17 pieces: above m's bound 16 */
    const char *const big[4] = {"a b c d e f g h i j k l m n o p q", "", "", ""};
    DLTensor *xv = NULL;
    CHECK_OK(kiln_array_from_strings(1, (int64_t[]){4}, big, &xv));
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xv));
    CHECK(kiln_graph_executor_run(ex) != 0);
    CHECK_CONTAINS(kiln_get_error(), "the size m is 17, above its bound 16");
    CHECK_CONTAINS(kiln_get_error(), "split");
    kiln_array_free(xv);
  }
  rt_close(&rt);
}

/* Values a kernel computes as run-time shape values: t = s + 1 (a kernel
 * over the input s), copied by a dd.bind node whose elements are the
 * values t_0, t_1, and out = fill(2.5, shape = t) + 1.  The executor
 * binds t_0, t_1 after the copy runs and plans the fill at them; one
 * module runs every s; a value outside the bounds names the node. */
static void test_symshape_kernel_values(void) {
  RtModel rt;
  if (!rt_begin(&rt, "kiln-kv-")) return;
  Graph *g = rt.g = graph_new();
  GNode *sv = graph_var(g, "s", ttype(DT_I64, 1, (int64_t[]){2}));
  GNode *t = graph_call(g, "add", 2, (GNode *[]){sv, graph_scalar(g, 1.0, DT_I64)}, gattrs_new(), "plus1");
  GAttrs ba = gattrs_new();
  ga_ints(&ba, "shape", 1, (int64_t[]){2});
  ga_str(&ba, "dtype", "int64");
  ga_str(&ba, "value_of", "t");
  ga_str(&ba, "host_attrs", "{}");
  GNode *b = graph_call(g, "dd.bind", 1, &t, ba, "bind");
  GSym *t0 = graph_value_sym(g, "t", 0, 1, 64), *t1 = graph_value_sym(g, "t", 1, 1, 64);
  CHECK(b && t0 && t1);
  if (!b || !t0 || !t1) {
    rt_close(&rt);
    return;
  }
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", 2, (int64_t[]){t0->rep, t1->rep});
  ga_str(&a, "sym_dims", "t_0,t_1");
  GNode *f = graph_call(g, "broadcast_to", 1, (GNode *[]){graph_scalar(g, 2.5, DT_F32)}, a, "fill");
  graph_add_output(g, graph_call(g, "add", 2, (GNode *[]){f, graph_scalar(g, 1.0, DT_F32)}, gattrs_new(), "add"));
  /* nothing uses the copy, yet every pass keeps it */
  Graph *g2 = graph_rewrite(g, NULL, NULL);
  int binds = 0;
  for (int i = 0; g2 && i < g2->nodes.len; i++)
    binds += ((GNode *)g2->nodes.data[i])->kind == GN_CALL && (((GNode *)g2->nodes.data[i])->op->flags & OPF_BINDS_VALUES);
  CHECK_INT(binds, 1);
  graph_free(g2);
  rt_build_at(&rt, g, 3, "kv");
  KilnGraphExecutor *ex = rt.ex;
  DLTensor *xv = NULL;
  CHECK_OK(kiln_array_empty(1, (int64_t[]){2}, DT_I64, (DLDevice){kDLCPU, 0}, &xv));
  static const int64_t seq[][2] = {{2, 3}, {4, 1}, {2, 3}, {0, 6}};
  for (int k = 0; ex && xv && k < 4; k++) {
    memcpy(xv->data, seq[k], sizeof seq[k]);
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xv));
    CHECK_OK(kiln_graph_executor_run(ex));
    DLTensor *out = NULL;
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &out));
    if (out) {
      CHECK_INT((int)out->shape[0], (int)seq[k][0] + 1);
      CHECK_INT((int)out->shape[1], (int)seq[k][1] + 1);
      int bad_elems = 0;
      for (int64_t i = 0; i < out->shape[0] * out->shape[1]; i++) bad_elems += ((float *)out->data)[i] != 3.5f;
      CHECK_INT(bad_elems, 0);
    }
    kiln_array_free(out);
  }
  if (ex && xv) {
    ((int64_t *)xv->data)[0] = 70; /* t_0 = 71 > 64 */
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xv));
    CHECK(kiln_graph_executor_run(ex) != 0);
    CHECK_CONTAINS(kiln_last_error(), "function 'runtime.dd.bind'");
    CHECK_CONTAINS(kiln_last_error(), "element 0 of its result is 71, the run-time value t_0, outside the bounds [1, 64]");
  }
  kiln_array_free(xv);
  rt_close(&rt);
}

/* y = W3 (W2 (W1 x)) over x (N, 4), unfused: the first product (N, 2)
 * is dead when the last is placed, so the output takes its buffer (the
 * memory plan's token reuse), with fewer bytes per sample than the
 * output.  With variants at 2 and 4, a batch of 7 runs 4 + 2 through
 * them and one sample per sample; if the per-sample kernels ran after
 * the variants, that sample's first product would land on the output's
 * earlier samples.  Each batch is checked against C. */
/* y (bt, 8) against d3(d2(d1(x))) in C, the weights W1 (2, 4), W2 (8, 2), W3 (8, 8). */
static void check_dense3(const DLTensor *xt, const DLTensor *y, int64_t bt, const float *W1, const float *W2,
                         const float *W3) {
  for (int64_t n = 0; y && n < bt; n++) {
    const float *xs = (const float *)xt->data + n * 4;
    float h1[2], h2[8];
    for (int o = 0; o < 2; o++) {
      h1[o] = 0;
      for (int k = 0; k < 4; k++) h1[o] += W1[o * 4 + k] * xs[k];
    }
    for (int o = 0; o < 8; o++) {
      h2[o] = 0;
      for (int k = 0; k < 2; k++) h2[o] += W2[o * 2 + k] * h1[k];
    }
    for (int o = 0; o < 8; o++) {
      float want = 0;
      for (int k = 0; k < 8; k++) want += W3[o * 8 + k] * h2[k];
      CHECK(fabsf(((float *)y->data)[n * 8 + o] - want) < 1e-4f * (1 + fabsf(want)));
    }
  }
}

/* The batch loop's buffers that hold no graph input or output: how many
 * there are, and the most samples any holds (its bytes over one sample's,
 * the largest entry it holds). */
static int64_t inner_samples(const KilnGraphExecutor *ex, int *count) {
  const JsonGraph *g = &ex->g;
  int64_t most = 0;
  *count = 0;
  for (int s = 0; s < ex->num_storage; s++) {
    if (ex->storage_whole[s]) continue;
    uint64_t sample = 0;
    for (int e = 0; e < g->num_entries; e++) {
      if (ex->storage_id[e] != s || !g->entry_batch[e]) continue;
      uint64_t b = kiln_graph_entry_bytes(g, e) / (uint64_t)g->entry_shape[e][0];
      if (b > sample) sample = b;
    }
    if (!sample) continue;
    (*count)++;
    if ((int64_t)(ex->storage_cap[s] / sample) > most) most = (int64_t)(ex->storage_cap[s] / sample);
  }
  return most;
}

static void test_symshape_variants_shared_output(void) {
  RtModel rt;
  if (!rt_begin(&rt, "kiln-symv-")) return;
  Graph *g = rt.g = graph_new();
  TType t = ttype(DT_F32, 2, (int64_t[]){0, 4});
  SymDims *sd = KNEW(SymDims);
  GSym *N = graph_sym(g, "N", 1, 8);
  sd->dim[0] = N->var;
  t.shape[0] = N->rep;
  t.sym = sd;
  GNode *x = graph_var(g, "x", t);
  GNode *w1 = weight(g, 2, (int64_t[]){2, 4}), *w2 = weight(g, 2, (int64_t[]){8, 2}), *w3 = weight(g, 2, (int64_t[]){8, 8});
  GNode *a = graph_call(g, "nn.dense", 2, (GNode *[]){x, w1}, gattrs_new(), "d1");
  GNode *b = graph_call(g, "nn.dense", 2, (GNode *[]){a, w2}, gattrs_new(), "d2");
  graph_add_output(g, graph_call(g, "nn.dense", 2, (GNode *[]){b, w3}, gattrs_new(), "d3"));
  int64_t one = 1, vb[2] = {2, 4};
  Graph *g1 = graph_specialize(g, &one), *gv[2] = {graph_specialize(g, &vb[0]), graph_specialize(g, &vb[1])};
  GraphBuildOptions bo;
  memset(&bo, 0, sizeof bo);
  bo.opt_level = 0;
  bo.batch_outer = "N:1:8";
  bo.variants = gv;
  bo.variant_batch = vb;
  bo.nvariants = 2;
  CHECK(g1 && gv[0] && gv[1]);
  if (g1 && gv[0] && gv[1]) rt_build(&rt, g1, &bo, "v");
  KilnGraphExecutor *ex = rt.ex;
  const float *W1 = w1->value->data, *W2 = w2->value->data, *W3 = w3->value->data;
  for (int64_t bt = 5; ex && bt <= 7; bt += 2) {
    DLTensor *xt = NULL, *y = NULL;
    CHECK_OK(kiln_array_empty(2, (int64_t[]){bt, 4}, DT_F32, (DLDevice){kDLCPU, 0}, &xt));
    if (!xt) break;
    for (int i = 0; i < bt * 4; i++) ((float *)xt->data)[i] = test_randf();
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xt));
    if (bt == 7) {
      /* the debug profile runs as run does: one sample through the
       * batch-1 kernels, then the variants (rows named b4_..., b2_...),
       * and leaves the same outputs */
      KilnProfile *prof = NULL;
      CHECK_OK(kiln_debug_profile(ex, 1, 2, &prof));
      int own = 0, b4 = 0, b2 = 0;
      for (int r = 0; prof && r < kiln_profile_num_rows(prof); r++) {
        const char *name = kiln_profile_row(prof, r)->name;
        if (!strncmp(name, "b4_", 3)) b4++;
        else if (!strncmp(name, "b2_", 3)) b2++;
        else own++;
      }
      CHECK(own > 0 && b4 == own && b2 == own);
      kiln_profile_free(prof);
    } else {
      CHECK_OK(kiln_graph_executor_run(ex));
    }
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &y));
    check_dense3(xt, y, bt, W1, W2, W3);
    kiln_array_free(xt);
    kiln_array_free(y);
  }
  if (ex) CHECK_INT((int)ex->sym_stats.variant_samples, 4 + 6);
  /* With a variant at 4 alone, the batch-1 kernels take 3 samples of a
   * batch of 7 (samples 4 to 6) and none of a batch of 8: the buffers that
   * hold neither an input nor an output are sized for the samples left
   * (3, never 8), and hold them from their first byte. */
  bo.variants = &gv[1];
  bo.variant_batch = &vb[1];
  bo.nvariants = 1;
  if (g1 && gv[1]) rt_build(&rt, g1, &bo, "v4");
  ex = rt.ex;
  static const int64_t seq4[] = {8, 7, 3, 8, 5};
  static const int64_t most4[] = {1, 3, 3, 3, 3};
  for (int k = 0; ex && k < 5; k++) {
    int64_t bt = seq4[k];
    DLTensor *xt = NULL, *y = NULL;
    CHECK_OK(kiln_array_empty(2, (int64_t[]){bt, 4}, DT_F32, (DLDevice){kDLCPU, 0}, &xt));
    if (!xt) break;
    for (int i = 0; i < bt * 4; i++) ((float *)xt->data)[i] = test_randf();
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, xt));
    CHECK_OK(kiln_graph_executor_run(ex));
    CHECK_OK(kiln_graph_executor_get_output(ex, 0, &y));
    check_dense3(xt, y, bt, W1, W2, W3);
    int count = 0;
    CHECK_INT((int)inner_samples(ex, &count), (int)most4[k]);
    CHECK(count >= 1); /* d1 or d2 holds neither */
    kiln_array_free(xt);
    kiln_array_free(y);
  }
  if (ex) CHECK_INT((int)ex->sym_stats.variant_samples, 8 + 4 + 8 + 4);
  graph_free(gv[0]);
  graph_free(gv[1]);
  graph_free(g1);
  rt_close(&rt);
}

const TestCase symshape_tests[] = {
    {"symshape_variants_shared_output", test_symshape_variants_shared_output},
    {"symshape_executor", test_symshape_executor},
    {"symshape_runtime_value", test_symshape_runtime_value},
    {"symshape_data_dependent", test_symshape_data_dependent},
    {"symshape_grow_retry", test_symshape_grow_retry},
    {"symshape_kernel_values", test_symshape_kernel_values},
    {"symshape_batch_outer", test_symshape_batch_outer},
    {"symshape_conv_pool", test_symshape_conv_pool},
    {"symshape_reshape_flatten_dense", test_symshape_reshape_flatten_dense},
    {"symshape_reshape_exprs", test_symshape_reshape_exprs},
    {"symshape_concat_and_broadcast", test_symshape_concat_and_broadcast},
    {"symshape_passes_and_build", test_symshape_passes_and_build},
    {NULL, NULL},
};
