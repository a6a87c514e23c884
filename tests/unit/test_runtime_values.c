/*
 * test_runtime_values.c - run-time shape values through the importer, the
 * build and the graph executor (docs/symbolic_shapes.md, "Run-time shape
 * values"): one compiled model run at many values of its shape inputs.
 *
 * tests/data/onnx/runtime_values.onnx (make_models.py) has r = Reshape(x,
 * s) with the shape s an input, y = ConstantOfShape(c) and w =
 * Exp(Reshape(Transpose(y), [-1])).  Each run checks every output's shape
 * and values against C; 0 in c makes y and w empty; a shape that does
 * not keep x's element count, or a value outside its bounds, is refused
 * at set_input naming the node, and leaves the last good shapes.
 */
#include <math.h>

#include "frontend/onnx/import.h"
#include "graph/backend/build.h"
#include "graph/graph.h"
#include "kiln/runtime.h"
#include "runtime/runtime_internal.h"
#include "rt_model.h"
#include "test.h"

/* A 1-D int64 tensor of n values. */
static DLTensor *i64s(int n, const int64_t *v) {
  DLTensor *t = NULL;
  int64_t len = n;
  if (kiln_array_empty(1, &len, DT_I64, (DLDevice){kDLCPU, 0}, &t)) return NULL;
  memcpy(t->data, v, sizeof(int64_t) * (size_t)n);
  return t;
}

/* set_input of a 1-D int64 input; 0 or -1 (the error stays set). */
static int set_i64(KilnGraphExecutor *ex, const char *name, int n, const int64_t *v) {
  DLTensor *t = i64s(n, v);
  if (!t) return -1;
  int rc = kiln_graph_executor_set_input_by_name(ex, name, t);
  kiln_array_free(t);
  return rc;
}

/* Output i's shape is want[0..nd) and every element is f(k) (k the flat
 * index). */
static void check_out(KilnGraphExecutor *ex, int i, int nd, const int64_t *want, float (*f)(int64_t, const void *),
                      const void *ud) {
  DLTensor *o = NULL;
  CHECK_OK(kiln_graph_executor_get_output(ex, i, &o));
  if (!o) return;
  CHECK_INT(o->ndim, nd);
  int64_t n = 1;
  for (int d = 0; d < nd && d < o->ndim; d++) {
    CHECK_MSG(o->shape[d] == want[d], "output %d dimension %d is %lld, expected %lld", i, d, (long long)o->shape[d],
              (long long)want[d]);
    n *= want[d];
  }
  int bad = 0;
  for (int64_t k = 0; k < n; k++) bad += fabsf(((float *)o->data)[k] - f(k, ud)) > 1e-5f * (1 + fabsf(f(k, ud)));
  CHECK_MSG(bad == 0, "output %d: %d of %lld elements wrong", i, bad, (long long)n);
  kiln_array_free(o);
}

static float x_at(int64_t k, const void *x) { return ((const float *)x)[k]; }
static float two(int64_t k, const void *ud) { return 2.0f; }
static float exp_two(int64_t k, const void *ud) { return expf(2.0f); }

static void test_rtvalues_reshape_and_empty(void) {
  RtModel m;
  if (!rt_open(&m, "runtime_values.onnx")) return;
  KilnGraphExecutor *ex = m.ex;
  DLTensor *x = NULL;
  CHECK_OK(kiln_array_empty(3, (int64_t[]){2, 3, 4}, DT_F32, (DLDevice){kDLCPU, 0}, &x));
  if (ex && x) {
    for (int k = 0; k < 24; k++) ((float *)x->data)[k] = test_randf();
    CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "x", x));
    /* the Reshape's shape (0 copies x's dimension, -1 takes the rest, the
     * result's shape) and ConstantOfShape's (0: empty) */
    static const struct {
      int64_t s[3], r[3], c[2];
    } seq[] = {
        {{4, 3, 2}, {4, 3, 2}, {3, 4}}, {{2, -1, 3}, {2, 4, 3}, {3, 0}}, {{0, 12, 1}, {2, 12, 1}, {0, 5}},
        {{24, 1, 1}, {24, 1, 1}, {0, 0}}, {{4, 3, 2}, {4, 3, 2}, {3, 4}}, {{2, -1, 3}, {2, 4, 3}, {3, 0}},
        {{-1, 3, 4}, {2, 3, 4}, {1, 7}},
    };
    uint64_t reallocs = 0, hits = 0;
    for (int k = 0; k < (int)(sizeof seq / sizeof seq[0]); k++) {
      /* rows 4 and 5 repeat rows 0 and 1: each set_input plans (s, c),
       * eight plans so far, all cached */
      if (k == 4) reallocs = ex->sym_stats.reallocs, hits = ex->sym_stats.plan_hits;
      if (k == 6) {
        CHECK_INT((int)(ex->sym_stats.reallocs - reallocs), 0);
        CHECK_INT((int)(ex->sym_stats.plan_hits - hits), 3);
      }
      CHECK_OK(set_i64(ex, "s", 3, seq[k].s));
      CHECK_OK(set_i64(ex, "c", 2, seq[k].c));
      CHECK_OK(kiln_graph_executor_run(ex));
      check_out(ex, 0, 3, seq[k].r, x_at, x->data);
      check_out(ex, 1, 2, seq[k].c, two, NULL);
      check_out(ex, 2, 1, (int64_t[]){seq[k].c[0] * seq[k].c[1]}, exp_two, NULL);
    }
    /* 25 elements from 24: the node is named, the shapes stay */
    CHECK(set_i64(ex, "s", 3, (int64_t[]){5, 5, 1}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "would have dimension 0 = -1");
    CHECK_CONTAINS(kiln_last_error(), "a Reshape's shape must keep the element count");
    CHECK(set_i64(ex, "s", 3, (int64_t[]){2, -2, 12}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "element 1 is -2");
    CHECK_CONTAINS(kiln_last_error(), "outside the bounds [-1, ");
    CHECK(set_i64(ex, "c", 2, (int64_t[]){-1, 3}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "element 0 is -1");
    CHECK_CONTAINS(kiln_last_error(), "outside the bounds [0, ");
    CHECK_OK(kiln_graph_executor_run(ex));
    check_out(ex, 0, 3, seq[6].r, x_at, x->data);
    check_out(ex, 1, 2, seq[6].c, two, NULL);
  }
  kiln_array_free(x);
  rt_close(&m);
}

/* ---- float run-time values (docs/symbolic_shapes.md, section 4e) ----
 * tests/data/onnx/runtime_float_values.onnx: y = Resize(x [1, 1, 3, 4],
 * scales s) (nearest, asymmetric, floor), o = OneHot(i [3], depth d
 * (float32), [0, 1]).  The output sizes are floor(D * s) and floor(d). */

/* set_input of a float32 input of nd dimensions (x's shape [1, 1, 3, 4],
 * else [n]); 0 or -1 (the error stays set). */
static int set_f32(KilnGraphExecutor *ex, const char *name, int nd, int n, const float *v) {
  DLTensor *t = NULL;
  int64_t shape[4] = {n, 1, 1, 1};
  if (nd == 4) shape[0] = 1, shape[2] = 3, shape[3] = 4;
  if (kiln_array_empty(nd, shape, DT_F32, (DLDevice){kDLCPU, 0}, &t)) return -1;
  memcpy(t->data, v, sizeof(float) * (size_t)n);
  int rc = kiln_graph_executor_set_input_by_name(ex, name, t);
  kiln_array_free(t);
  return rc;
}

typedef struct {
  const float *x;
  int64_t oh, ow;
  float sh, sw;
} ResizeRef;

/* nearest, asymmetric, floor: y[h, w] = x[min(floor(h / sh), 2), min(floor(w / sw), 3)] */
static float resize_at(int64_t k, const void *ud) {
  const ResizeRef *r = ud;
  int64_t h = k / r->ow, w = k % r->ow;
  int64_t ih = (int64_t)floor((double)h / r->sh), iw = (int64_t)floor((double)w / r->sw);
  return r->x[(ih < 2 ? ih : 2) * 4 + (iw < 3 ? iw : 3)];
}

typedef struct {
  const int64_t *idx;
  int64_t depth;
} OneHotRef;

static float one_hot_at(int64_t k, const void *ud) {
  const OneHotRef *r = ud;
  int64_t i = r->idx[k / r->depth], c = k % r->depth;
  return (i < 0 ? i + r->depth : i) == c ? 1.0f : 0.0f;
}

static void test_rtfloat_resize_scales_and_one_hot_depth(void) {
  RtModel m;
  if (!rt_open(&m, "runtime_float_values.onnx")) return;
  KilnGraphExecutor *ex = m.ex;
  if (ex) {
    /* the symbols: floor(x * D) of each scale, floor(x * 1) of the depth */
    int nf = 0;
    for (int s = 0; s < ex->g.num_syms; s++) nf += ex->g.sym_value_scale[s] != 0;
    CHECK_INT(nf, 5);
    float x[12];
    for (int k = 0; k < 12; k++) x[k] = test_randf();
    int64_t idx[3] = {1, -1, 7};
    CHECK_OK(set_f32(ex, "x", 4, 12, x));
    DLTensor *it = i64s(3, idx);
    if (it) CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "i", it));
    kiln_array_free(it);
    static const struct {
      float sh, sw, depth;
      int64_t oh, ow, od;
    } seq[] = {
        {2.0f, 1.5f, 4.0f, 6, 6, 4}, {0.5f, 0.5f, 2.9f, 1, 2, 2}, {1.0f, 3.25f, 8.5f, 3, 13, 8},
        {2.0f, 1.5f, 4.0f, 6, 6, 4}, /* the first again: a cached plan */
    };
    uint64_t hits = 0;
    for (int k = 0; k < (int)(sizeof seq / sizeof seq[0]); k++) {
      if (k == 3) hits = ex->sym_stats.plan_hits;
      float sc[4] = {1, 1, seq[k].sh, seq[k].sw};
      CHECK_OK(set_f32(ex, "s", 1, 4, sc));
      CHECK_OK(set_f32(ex, "d", 0, 1, &seq[k].depth));
      CHECK_OK(kiln_graph_executor_run(ex));
      ResizeRef rr = {x, seq[k].oh, seq[k].ow, seq[k].sh, seq[k].sw};
      check_out(ex, 0, 4, (int64_t[]){1, 1, seq[k].oh, seq[k].ow}, resize_at, &rr);
      OneHotRef oh = {idx, seq[k].od};
      check_out(ex, 1, 2, (int64_t[]){3, seq[k].od}, one_hot_at, &oh);
    }
    CHECK(ex->sym_stats.plan_hits > hits);
    /* values that give no size: refused naming the value, the product and
     * the bounds; the last good shapes stay */
    CHECK(set_f32(ex, "s", 1, 4, (float[]){1, 1, 0.25f, 1}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "element 2 is 0.25, giving floor(0.25 * 3) = 0");
    CHECK_CONTAINS(kiln_last_error(), "outside the bounds [1, ");
    CHECK(set_f32(ex, "s", 1, 4, (float[]){1, 1, 1, NAN}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "element 3 is nan, which gives no size");
    CHECK(set_f32(ex, "s", 1, 4, (float[]){1, 1, 1, 1e30f}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "which gives no size");
    CHECK(set_f32(ex, "d", 0, 1, (float[]){-3}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "element 0 is -3, giving floor(-3 * 1) = -3");
    /* an integer tensor where a float value is expected */
    CHECK(set_i64(ex, "s", 4, (int64_t[]){1, 1, 2, 2}) != 0);
    CHECK_OK(kiln_graph_executor_run(ex));
    ResizeRef rr = {x, 6, 6, 2.0f, 1.5f};
    check_out(ex, 0, 4, (int64_t[]){1, 1, 6, 6}, resize_at, &rr);
  }
  rt_close(&m);
}

/* The pending binding (graph_sym.c, sym_pending): a binding that plans
 * no valid shape while other run-time values are still to be given is
 * kept, not refused (a Slice's starts set before its ends); run refuses
 * naming the input not set yet; once every value has been given, a bad
 * binding is refused at set_input and a good one clears the wait.  On
 * runtime_values.onnx: s alone, before c, decides an invalid Reshape. */
static void test_rtvalues_pending(void) {
  RtModel m;
  if (!rt_open(&m, "runtime_values.onnx")) return;
  KilnGraphExecutor *ex = m.ex;
  DLTensor *x = NULL;
  CHECK_OK(kiln_array_empty(3, (int64_t[]){2, 3, 4}, DT_F32, (DLDevice){kDLCPU, 0}, &x));
  if (ex && x) {
    for (int k = 0; k < 24; k++) ((float *)x->data)[k] = test_randf();
    CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "x", x));
    /* 25 elements from 24 while c has never been given: kept, pending */
    CHECK_OK(set_i64(ex, "s", 3, (int64_t[]){5, 5, 1}));
    CHECK(ex->sym_pending != NULL);
    CHECK(kiln_graph_executor_run(ex) != 0);
    CHECK_CONTAINS(kiln_last_error(), "input 'c' gives sizes at run time and has not been set");
    CHECK_CONTAINS(kiln_last_error(), "would have dimension 0 = -1");
    /* c given: every value is, and the binding still plans nothing: refused */
    CHECK(set_i64(ex, "c", 2, (int64_t[]){3, 4}) != 0);
    CHECK_CONTAINS(kiln_last_error(), "would have dimension 0 = -1");
    CHECK(kiln_graph_executor_run(ex) != 0);
    /* a good s clears the wait; then c, and the run gives both */
    CHECK_OK(set_i64(ex, "s", 3, (int64_t[]){4, 3, 2}));
    CHECK(ex->sym_pending == NULL);
    CHECK_OK(set_i64(ex, "c", 2, (int64_t[]){3, 4}));
    CHECK_OK(kiln_graph_executor_run(ex));
    check_out(ex, 0, 3, (int64_t[]){4, 3, 2}, x_at, x->data);
    check_out(ex, 1, 2, (int64_t[]){3, 4}, two, NULL);
    /* from now on a bad s is refused at once, the last good shapes kept */
    CHECK(set_i64(ex, "s", 3, (int64_t[]){5, 5, 1}) != 0);
    CHECK(ex->sym_pending == NULL);
    CHECK_OK(kiln_graph_executor_run(ex));
    check_out(ex, 0, 3, (int64_t[]){4, 3, 2}, x_at, x->data);
  }
  kiln_array_free(x);
  rt_close(&m);
}

/* A scalar input of dtype dt (int64 or bool) set to v. */
static int set_scalar(KilnGraphExecutor *ex, const char *name, DType dt, int64_t v) {
  DLTensor *t = NULL;
  if (kiln_array_empty(0, NULL, dt, (DLDevice){kDLCPU, 0}, &t)) return -1;
  if (dt.bits == 64) *(int64_t *)t->data = v;
  else *(uint8_t *)t->data = (uint8_t)(v != 0);
  int rc = kiln_graph_executor_set_input_by_name(ex, name, t);
  kiln_array_free(t);
  return rc;
}

/* The loop's rows, recomputed: row k = row k-1 * w + k from x0. */
typedef struct LoopRef {
  float rows[64][3];
} LoopRef;
static float loop_row(int64_t k, const void *ud) { return ((const LoopRef *)ud)->rows[k / 3][k % 3]; }
static float loop_last(int64_t k, const void *ud) { return ((const float *)ud)[k]; }

/* tests/data/onnx/runtime_loop.onnx (make_models.py): a Loop whose trip
 * count m and condition c are inputs, run by the executor (section 4d of
 * docs/symbolic_shapes.md): x' = x * w + i carried, each x' scanned, the
 * condition i < stop (w, stop: outer values the body reads); at m = 0, 1,
 * 5 and 1 again, stopped early by the condition, never entered (c false);
 * a negative m, a body that fails at an iteration, and a trip count above
 * its bound are errors naming the node, and the executor runs after them. */
static void test_rtvalues_loop(void) {
  RtModel m;
  if (!rt_open(&m, "runtime_loop.onnx")) return;
  if (m.g) CHECK_INT(m.g->bodies.len, 1);
  KilnGraphExecutor *ex = m.ex;
  DLTensor *x0 = NULL, *w = NULL;
  CHECK_OK(kiln_array_empty(1, (int64_t[]){3}, DT_F32, (DLDevice){kDLCPU, 0}, &x0));
  CHECK_OK(kiln_array_empty(1, (int64_t[]){3}, DT_F32, (DLDevice){kDLCPU, 0}, &w));
  if (ex && x0 && w) {
    for (int k = 0; k < 3; k++) ((float *)x0->data)[k] = test_randf(), ((float *)w->data)[k] = 0.5f + test_randf() * 0.5f;
    CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "x0", x0));
    CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "w", w));
    CHECK_OK(set_scalar(ex, "fail", DT_I64, 1000));
    /* m, c, stop; the iterations: min(m, stop + 1) when c holds, else 0 */
    static const struct {
      int64_t m, c, stop;
    } seq[] = {{0, 1, 100}, {1, 1, 100}, {5, 1, 100}, {1, 1, 100}, {40, 1, 6}, {7, 0, 100}, {5, 1, -3}, {5, 1, 100}};
    for (int k = 0; k < (int)(sizeof seq / sizeof seq[0]); k++) {
      CHECK_OK(set_scalar(ex, "m", DT_I64, seq[k].m));
      CHECK_OK(set_scalar(ex, "c", DT_BOOL, seq[k].c));
      CHECK_OK(set_scalar(ex, "stop", DT_I64, seq[k].stop));
      CHECK_OK(kiln_graph_executor_run(ex));
      int64_t n = !seq[k].c ? 0 : seq[k].m < (seq[k].stop < 0 ? 0 : seq[k].stop) + 1 ? seq[k].m : (seq[k].stop < 0 ? 0 : seq[k].stop) + 1;
      LoopRef ref;
      float x[3];
      memcpy(x, x0->data, sizeof x);
      for (int64_t i = 0; i < n; i++)
        for (int e = 0; e < 3; e++) ref.rows[i][e] = x[e] = x[e] * ((float *)w->data)[e] + (float)i;
      check_out(ex, 0, 1, (int64_t[]){3}, loop_last, x);
      check_out(ex, 1, 2, (int64_t[]){n, 3}, loop_row, &ref);
    }
    /* errors, each naming the node; the executor runs after them */
    CHECK_OK(set_scalar(ex, "m", DT_I64, -2));
    CHECK(kiln_graph_executor_run(ex) != 0);
    /* with scan outputs, M is their bound: a run-time value checked as it is bound */
    CHECK_CONTAINS(kiln_last_error(), "is -2, the run-time value loop_trips_0, outside the bounds [0, ");
    CHECK_OK(set_scalar(ex, "m", DT_I64, (int64_t)1 << 40));
    CHECK(kiln_graph_executor_run(ex) != 0);
    CHECK_CONTAINS(kiln_last_error(), "the run-time value loop_trips_0");
    CHECK_CONTAINS(kiln_last_error(), "outside the bounds [0, 2147483647]");
    CHECK_OK(set_scalar(ex, "m", DT_I64, 9));
    CHECK_OK(set_scalar(ex, "fail", DT_I64, 3));
    CHECK(kiln_graph_executor_run(ex) != 0);
    CHECK_CONTAINS(kiln_last_error(), "Loop 'loop': iteration 4 of the loop's body");
    CHECK_OK(set_scalar(ex, "fail", DT_I64, 1000));
    CHECK_OK(set_scalar(ex, "m", DT_I64, 2));
    CHECK_OK(kiln_graph_executor_run(ex));
    LoopRef ref;
    float x[3];
    memcpy(x, x0->data, sizeof x);
    for (int64_t i = 0; i < 2; i++)
      for (int e = 0; e < 3; e++) ref.rows[i][e] = x[e] = x[e] * ((float *)w->data)[e] + (float)i;
    check_out(ex, 1, 2, (int64_t[]){2, 3}, loop_row, &ref);
  }
  kiln_array_free(x0);
  kiln_array_free(w);
  rt_close(&m);
}

const TestCase rtvalues_tests[] = {
    {"rtvalues_reshape_and_empty", test_rtvalues_reshape_and_empty},
    {"rtfloat_resize_scales_and_one_hot_depth", test_rtfloat_resize_scales_and_one_hot_depth},
    {"rtvalues_loop", test_rtvalues_loop},
    {"rtvalues_pending", test_rtvalues_pending},
    {NULL, NULL},
};
