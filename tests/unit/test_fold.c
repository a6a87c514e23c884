/*
 * test_fold.c - constant folding through compiled kernels (eval.c): the
 * kernels of one fold_constant pass built together, equal ones merged, a
 * chain of folds (a relayout of a folded product) included, and the
 * folded values exact against a plain C reference.
 */
#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "kiln/runtime.h"
#include "test.h"

enum { R = 300, C = 310 }; /* 93,000 elements: above the interpreter's limit */

static GNode *matrix(Graph *g, int64_t r, int64_t c, float **data) {
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(2, (int64_t[]){r, c}, DT_F32, cpu, &a)) return NULL;
  for (int64_t i = 0; i < r * c; i++) ((float *)a->data)[i] = test_randf();
  *data = a->data;
  return graph_const(g, NULL, a);
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

const TestCase fold_tests[] = {
    {"fold_kernels_batched", test_fold_kernels_batched},
    {"fold_kernels_none", test_fold_kernels_none},
    {NULL, NULL},
};
