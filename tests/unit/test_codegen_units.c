/*
 * test_codegen_units.c - splitting a module's functions into C units
 * (codegen_c_units): the units are balanced by the functions' IR size,
 * not dealt out in turn, and a module built from several units
 * (kiln_build_funcs_units) runs every function.  Also the C of the
 * dot-accumulate intrinsics (acc + u8s8_dot4, acc + bf16_dot2 on vectors):
 * one VPDPBUSD / VDPBF16PS for 16 lanes, a lane loop for 4, both computing
 * what the scalar intrinsic does.
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

/* 32 random bits (test_rand gives 24) */
static uint32_t rand32(void) { return (uint32_t)test_rand() << 16 ^ (uint32_t)test_rand(); }

/* out[i] = acc[i] + dot(a[i], b[i]) vectorized by `lanes`. */
static LoweredFunc *dot_acc(const char *name, Intrinsic op, int lanes) {
  DType at = op == INTRIN_u8s8_dot4 ? DT_I32 : DT_F32;
  Tensor *acc = te_placeholder_c("acc", 1, (int64_t[]){N}, at), *a = te_placeholder_c("a", 1, (int64_t[]){N}, DT_U32),
         *b = te_placeholder_c("b", 1, (int64_t[]){N}, DT_U32);
  Expr **v = te_axis_vars(1, NULL);
  Expr *body = ir_add(te_read(acc, 1, v), ir_call2(op, te_read(a, 1, v), te_read(b, 1, v)));
  Tensor *out = te_compute("out", 1, (Expr *[]){ir_i32(N)}, v, body, "dot_acc");
  Schedule *s = te_create_schedule(1, &out);
  Stage *st = sch_stage(s, out);
  IterVar *xo, *xi;
  CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(lanes), &xo, &xi));
  CHECK_OK(stage_vectorize(st, xi));
  return kiln_lower(s, 4, (Tensor *[]){acc, a, b, out}, name, NULL);
}

static void test_dot_acc(void) {
  struct {
    Intrinsic op;
    int lanes;
    const char *want;
  } cases[] = {{INTRIN_u8s8_dot4, 16, "_mm512_dpbusd_epi32"}, {INTRIN_u8s8_dot4, 4, "kiln_dpbusd_i32x4("},
               {INTRIN_bf16_dot2, 16, "_mm512_dpbf16_ps"}, {INTRIN_bf16_dot2, 4, "kiln_bf16_dot_acc_f32x4("}};
  DLDevice cpu = {kDLCPU, 0};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    LoweredFunc *f = dot_acc("dot", cases[k].op, cases[k].lanes);
    CHECK(f != NULL);
    if (!f) continue;
    char *src = codegen_c(&f, 1, 0, NULL);
    CHECK_CONTAINS(src, cases[k].want);
    free(src);
    KilnModule *m = kiln_build_funcs_units(&f, 1, 1, NULL);
    CHECK(m != NULL);
    if (!m) continue;
    bool i8 = cases[k].op == INTRIN_u8s8_dot4;
    DType at = i8 ? DT_I32 : DT_F32;
    DLTensor *t[4];
    for (int i = 0; i < 4; i++) CHECK_OK(kiln_array_empty(1, (int64_t[]){N}, i == 1 || i == 2 ? DT_U32 : at, cpu, &t[i]));
    for (int i = 0; i < N; i++) {
      uint32_t a = rand32(), b = rand32();
      if (!i8) { /* finite bfloat16 halves: exponents kept small */
        a &= 0x3fff3fffu;
        b &= 0x3fff3fffu;
      }
      ((uint32_t *)t[1]->data)[i] = a;
      ((uint32_t *)t[2]->data)[i] = b;
      if (i8) ((int32_t *)t[0]->data)[i] = (int32_t)(rand32() >> 1) - (1 << 30);
      else ((float *)t[0]->data)[i] = test_randf();
    }
    KilnFunction *fn = NULL;
    CHECK_OK(kiln_module_get_function(m, "dot", &fn));
    if (fn) {
      KilnValue av[4];
      int codes[4], rcode;
      for (int i = 0; i < 4; i++) av[i].v_handle = t[i], codes[i] = KILN_DLTENSOR;
      KilnValue ret;
      CHECK_OK(kiln_func_call(fn, av, codes, 4, &ret, &rcode));
      int bad = 0;
      for (int i = 0; i < N; i++) {
        uint32_t a = ((uint32_t *)t[1]->data)[i], b = ((uint32_t *)t[2]->data)[i];
        if (i8) {
          int32_t want = ((int32_t *)t[0]->data)[i];
          for (int j = 0; j < 4; j++)
            want = (int32_t)((uint32_t)want + (uint32_t)((int32_t)((a >> (8 * j)) & 0xffu) * (int8_t)(uint8_t)(b >> (8 * j))));
          bad += ((int32_t *)t[3]->data)[i] != want;
        } else {
          /* the high pair's product first, in float32, as VDPBF16PS */
          union { uint32_t u; float f; } ah = {a & 0xffff0000u}, bh = {b & 0xffff0000u}, al = {a << 16}, bl = {b << 16};
          float want = ((float *)t[0]->data)[i] + ah.f * bh.f;
          want = want + al.f * bl.f;
          float got = ((float *)t[3]->data)[i];
          bad += fabsf(got - want) > 1e-6f * (1 + fabsf(want));
        }
      }
      CHECK_MSG(bad == 0, "%s: %d of %d lanes differ", cases[k].want, bad, N);
      kiln_func_free(fn);
    }
    for (int i = 0; i < 4; i++) kiln_array_free(t[i]);
    kiln_module_free(m);
  }
}

const TestCase codegen_units_tests[] = {
    {"units_balanced", test_units_balanced},
    {"dot_acc", test_dot_acc},
    {NULL, NULL},
};
