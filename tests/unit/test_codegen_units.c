/*
 * test_codegen_units.c - splitting a module's functions into C units
 * (codegen_c_units): the units are balanced by the functions' IR size,
 * not dealt out in turn, and a module built from several units
 * (kiln_build_funcs_units) runs every function.
 */
#include "codegen/codegen.h"
#include "kiln/runtime.h"
#include "lower/lower.h"
#include "te/te.h"
#include "test.h"

enum { N = 64 };

/* out[i] = sum over t < terms of x[i] * (t + 1): terms sets the size */
static LoweredFunc *poly(const char *name, int terms) {
  Tensor *x = te_placeholder_c("x", 1, (int64_t[]){N}, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Expr *xv = te_read(x, 1, v), *body = NULL;
  for (int t = 0; t < terms; t++) {
    Expr *p = ir_mul(xv, ir_f32(t + 1));
    body = body ? ir_add(body, p) : p;
  }
  Tensor *out = te_compute("out", 1, (Expr *[]){ir_i32(N)}, v, body, "poly");
  Schedule *s = te_create_schedule(1, &out);
  return s ? kiln_lower(s, 2, (Tensor *[]){x, out}, name, NULL) : NULL;
}

static int defined(const char *src) {
  int n = 0;
  for (const char *p = src; (p = strstr(p, "int32_t num_args) {")); p++) n++;
  return n;
}

static void test_units_balanced(void) {
  /* one large function and four of a quarter its size: the large one
   * gets a unit of its own (in turn, it would share one with two others) */
  LoweredFunc *f[5] = {poly("big", 40), poly("s1", 10), poly("s2", 10), poly("s3", 10), poly("s4", 10)};
  for (int i = 0; i < 5; i++) CHECK(f[i] != NULL);
  if (!f[0] || !f[4]) return;
  char **u = codegen_c_units(f, 5, 0, NULL, 2);
  CHECK(u != NULL);
  if (!u) return;
  CHECK(strstr(u[0], "int32_t big(") != NULL);
  CHECK_INT(defined(u[0]), 1);
  CHECK_INT(defined(u[1]), 4);
  free(u[0]);
  free(u[1]);
  free(u);
  /* the module from both units runs each function */
  KilnModule *m = kiln_build_funcs_units(f, 5, 2, NULL);
  CHECK(m != NULL);
  if (!m) return;
  DLTensor *x, *y;
  DLDevice cpu = {kDLCPU, 0};
  CHECK(!kiln_array_empty(1, (int64_t[]){N}, DT_F32, cpu, &x) && !kiln_array_empty(1, (int64_t[]){N}, DT_F32, cpu, &y));
  for (int i = 0; i < N; i++) ((float *)x->data)[i] = test_randf();
  const int terms[5] = {40, 10, 10, 10, 10};
  for (int k = 0; k < 5; k++) {
    KilnFunction *fn = NULL;
    CHECK(!kiln_module_get_function(m, f[k]->name, &fn));
    if (!fn) continue;
    KilnValue av[2] = {{.v_handle = x}, {.v_handle = y}};
    int codes[2] = {KILN_DLTENSOR, KILN_DLTENSOR}, rcode;
    KilnValue ret;
    CHECK(!kiln_func_call(fn, av, codes, 2, &ret, &rcode));
    int bad = 0;
    float scale = (float)(terms[k] * (terms[k] + 1) / 2);
    for (int i = 0; i < N; i++) {
      float want = ((float *)x->data)[i] * scale, got = ((float *)y->data)[i];
      bad += fabsf(got - want) > 1e-4f * (1 + fabsf(want));
    }
    CHECK_INT(bad, 0);
    kiln_func_free(fn);
  }
  kiln_array_free(x);
  kiln_array_free(y);
  kiln_module_free(m);
}

const TestCase codegen_units_tests[] = {
    {"units_balanced", test_units_balanced},
    {NULL, NULL},
};
