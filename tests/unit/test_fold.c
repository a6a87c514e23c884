/*
 * test_fold.c - constant folding through compiled kernels (eval.c): the
 * kernels of one fold_constant pass built together, equal ones merged, a
 * chain of folds (a relayout of a folded product) included, and the
 * folded values exact against a plain C reference; and fold_gate's
 * rewrite where its weights are shared or its product is an output.
 */
#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "kiln/runtime.h"
#include "test.h"

enum { R = 300, C = 310 }; /* 93,000 elements: above the interpreter's limit */

/* A constant of random values (data: its values). */
static GNode *random_const(Graph *g, int ndim, const int64_t *shape, float **data) {
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(ndim, shape, DT_F32, cpu, &a)) return NULL;
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  for (int64_t i = 0; i < n; i++) ((float *)a->data)[i] = test_randf();
  *data = a->data;
  return graph_const(g, NULL, a);
}

static GNode *matrix(Graph *g, int64_t r, int64_t c, float **data) {
  return random_const(g, 2, (int64_t[]){r, c}, data);
}

static GNode *transpose(Graph *g, GNode *x) {
  GAttrs at = gattrs_new();
  ga_ints(&at, "axes", 2, (int64_t[]){1, 0});
  return graph_call(g, "transpose", 1, &x, at, NULL);
}

/* out = x + (w1^T + (w2 * w3)^T): two transposes of one shape (one
 * kernel), a product folded before the transpose that reads it, and the
 * sum; x is the only input, so everything else folds. */
static void test_fold_kernels_batched(void) {
  Graph *g = graph_new();
  float *w1 = NULL, *w2 = NULL, *w3 = NULL;
  GNode *x = graph_var(g, "x", ttype(DT_F32, 2, (int64_t[]){C, R}));
  GNode *a = matrix(g, R, C, &w1), *b = matrix(g, R, C, &w2), *c = matrix(g, R, C, &w3);
  GNode *p = graph_call(g, "multiply", 2, (GNode *[]){b, c}, gattrs_new(), NULL);
  GNode *s = graph_call(g, "add", 2, (GNode *[]){transpose(g, a), transpose(g, p)}, gattrs_new(), NULL);
  GNode *o = graph_call(g, "add", 2, (GNode *[]){x, s}, gattrs_new(), NULL);
  CHECK(o != NULL);
  if (!o) return;
  graph_add_output(g, o);
  /* multiply, one transpose for both, add (the output's add reads x) */
  FoldKernels *fk = graph_fold_kernels_build(g);
  CHECK_INT(graph_fold_kernels_count(fk), 3);
  graph_fold_kernels_free(fk);
  Graph *f = pass_fold_constant(g, NULL);
  CHECK(f != NULL);
  if (!f) return;
  GNode *out = f->outputs.data[0];
  CHECK(out->kind == GN_CALL && out->nargs == 2 && out->args[1]->kind == GN_CONST);
  if (out->kind == GN_CALL && out->nargs == 2 && out->args[1]->kind == GN_CONST) {
    const float *v = out->args[1]->value->data;
    int bad = 0;
    for (int i = 0; i < C; i++)
      for (int j = 0; j < R; j++) {
        float want = w1[j * C + i] + w2[j * C + i] * w3[j * C + i];
        bad += v[i * R + j] != want;
      }
    CHECK_INT(bad, 0);
  }
  graph_free(f);
  graph_free(g);
}

/* a graph with nothing to fold builds no module */
static void test_fold_kernels_none(void) {
  Graph *g = graph_new();
  GNode *x = graph_var(g, "x", ttype(DT_F32, 2, (int64_t[]){R, C}));
  graph_add_output(g, graph_call(g, "transpose", 1, &x, gattrs_new(), NULL));
  FoldKernels *fk = graph_fold_kernels_build(g);
  CHECK_INT(graph_fold_kernels_count(fk), 0);
  graph_fold_kernels_free(fk);
  graph_free(g);
}

static GNode *conv_nchw16c(Graph *g, GNode *x, GNode *w) {
  GAttrs at = gattrs_new();
  ga_str(&at, "data_layout", "NCHW16c");
  ga_str(&at, "kernel_layout", "OIHW16i16o");
  ga_str(&at, "out_layout", "NCHW16c");
  return graph_call(g, "nn.contrib_conv2d_NCHWc", 2, (GNode *[]){x, w}, at, NULL);
}

/* fold_gate: one constant weight node read by a conv of x times a constant
 * per-channel gate and by a conv of x itself.  The gated conv gets the
 * weights times the reshaped gate, a new node; the other still reads the
 * weight node, its values unscaled (an in-place scaling of the shared
 * constant fails here).  With the product also a graph output nothing
 * folds: the conv reads the product. */
static void test_gate_shared_weights(void) {
  for (int out = 0; out < 2; out++) {
    Graph *g = graph_new();
    float *wv = NULL, *sv = NULL;
    enum { NW = 2 * 3 * 16 * 16 }; /* fewer weights than the map's 3 * 400 * 16 values */
    GNode *x = graph_var(g, "x", ttype(DT_F32, 5, (int64_t[]){1, 3, 20, 20, 16}));
    GNode *w = random_const(g, 6, (int64_t[]){2, 3, 1, 1, 16, 16}, &wv);
    GNode *s = random_const(g, 5, (int64_t[]){1, 3, 1, 1, 16}, &sv);
    GNode *m = w && s ? graph_call(g, "multiply", 2, (GNode *[]){x, s}, gattrs_new(), NULL) : NULL;
    GNode *gated = m ? conv_nchw16c(g, m, w) : NULL, *plain = m ? conv_nchw16c(g, x, w) : NULL;
    CHECK_MSG(gated && plain, "%s", kiln_get_error());
    if (!gated || !plain) continue;
    float want[NW];
    memcpy(want, wv, sizeof want);
    graph_add_output(g, gated);
    graph_add_output(g, plain);
    if (out) graph_add_output(g, m);
    Graph *f = pass_fold_gate(g, NULL);
    CHECK(f != NULL);
    if (!f) continue;
    GNode *fg = f->outputs.data[0], *fp = f->outputs.data[1];
    GNode *fw = fp->args[1];
    CHECK(fp->args[0]->kind == GN_VAR && fw->kind == GN_CONST);
    if (fw->kind == GN_CONST) CHECK(!memcmp(fw->value->data, want, sizeof want));
    if (out) {
      CHECK(fg->args[0]->kind == GN_CALL && !strcmp(fg->args[0]->op->name, "multiply") && fg->args[1] == fw);
    } else {
      GNode *sw = fg->args[1];
      CHECK(fg->args[0] == fp->args[0]);
      CHECK(sw->kind == GN_CALL && !strcmp(sw->op->name, "multiply") && sw->args[0] == fw);
    }
    graph_free(f);
    graph_free(g);
  }
}

const TestCase fold_tests[] = {
    {"fold_kernels_batched", test_fold_kernels_batched},
    {"fold_kernels_none", test_fold_kernels_none},
    {"gate_shared_weights", test_gate_shared_weights},
    {NULL, NULL},
};
