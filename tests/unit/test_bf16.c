/*
 * test_bf16.c - `--precision bf16`: the bfloat16 intrinsics and
 * dense_pack_bf16.x86 (docs/bf16.md).
 *
 * - rounding: ir_bf16_round on ties, NaN, infinities, overflow; the
 *   generated C (vector lane loops and scalar) agrees with it bit for bit
 *   on random and special values, and bf16_dot2 with the interpreter.
 * - dense_pack_bf16.x86: random workloads (M 1..40 so row blocks have
 *   tails, odd K so the last pair has a zero partner, N with and without a
 *   vector block), a random config of the space (both bf16_dot forms) or
 *   the fallback, with and without a bias + ReLU epilogue, the weight
 *   packed in the function: against the unscheduled lowering of the same
 *   compute (1e-5: only the order of the float32 sums differs), a naive
 *   product in double of the bfloat16-rounded weight and the activations
 *   (rounded too for vdpbf16ps) (1e-5), and the float32 product in double
 *   (the documented bound: relative L2 error 1e-2).
 * - conv2d_NCHWc_bf16.x86: random convolutions (1x1 and 3x3, strides 1
 *   and 2, padding, dilation, even channel counts) with a random config of
 *   the space (even tile_ic) or the fallback, the kernel packed in the
 *   function, with and without a ReLU: against the unscheduled lowering
 *   (1e-5) and the float32 conv2d_NCHWc of the same data (1e-2).
 * - errors: bad configs and operands; --precision words; a CPU without
 *   AVX512-BF16 ($KILN_CPU_NO_BF16=1), a GPU target, an opt level below 3.
 */
#include <math.h>
#include <stdlib.h>

#include "autotune/autotune.h"
#include "graph/graph.h"
#include "kernel_util.h"
#include "target/target.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

static uint32_t f2u(float f) {
  union {
    float f;
    uint32_t u;
  } v = {f};
  return v.u;
}

static float u2f(uint32_t u) {
  union {
    uint32_t u;
    float f;
  } v = {u};
  return v.f;
}

static void test_round(void) {
  CHECK_INT(ir_bf16_round(1.0f), 0x3f80);
  CHECK_INT(ir_bf16_round(u2f(0x3f808000u)), 0x3f80); /* a tie rounds to the even 0x3f80 */
  CHECK_INT(ir_bf16_round(u2f(0x3f818000u)), 0x3f82); /* ... and to the even 0x3f82 */
  CHECK_INT(ir_bf16_round(u2f(0x3f808001u)), 0x3f81);
  CHECK_INT(ir_bf16_round(-2.5f), 0xc020);
  CHECK_INT(ir_bf16_round(INFINITY), 0x7f80);
  CHECK_INT(ir_bf16_round(u2f(0x7f7fffffu)), 0x7f80); /* FLT_MAX rounds up to infinity */
  CHECK(isnan(ir_bf16_float(ir_bf16_round(NAN))));
  CHECK(isnan(ir_bf16_float(ir_bf16_round(u2f(0x7f800001u))))); /* a NaN whose top bits are zero stays a NaN */
  CHECK(ir_bf16_float(0x3f80) == 1.0f);
  CHECK(ir_bf16_float(0x12343f80u) == 1.0f); /* the high half is ignored */

  /* the generated C: out[i] = pack2(x[i], y[i]); dot[i] = dot2(out[i], out[i ^ 1]) */
  int64_t n = 64;
  Tensor *x = te_placeholder_c("x", 1, &n, DT_F32), *y = te_placeholder_c("y", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *p = te_compute("p", 1, x->shape, v, ir_call2(INTRIN_bf16_pack2, te_read1(x, v[0]), te_read1(y, v[0])), "elemwise");
  v = te_axis_vars(1, NULL);
  Tensor *d = te_compute("d", 1, x->shape, v,
                         ir_call2(INTRIN_bf16_dot2, te_read1(p, v[0]), te_read1(p, ir_sub(ir_i32(n - 1), v[0]))), "elemwise");
  CHECK(p && d);
  if (!p || !d) return;
  for (int vec = 0; vec < 2; vec++) {
    Schedule *s = te_create_schedule(1, &d);
    if (vec) {
      IterVar *o, *i;
      CHECK_OK(stage_split(sch_stage(s, p), stage_axis(sch_stage(s, p), 0), ir_i32(16), &o, &i));
      CHECK_OK(stage_vectorize(sch_stage(s, p), i));
      CHECK_OK(stage_split(sch_stage(s, d), stage_axis(sch_stage(s, d), 0), ir_i32(16), &o, &i));
      CHECK_OK(stage_vectorize(sch_stage(s, d), i));
    }
    Tensor *args[4] = {x, y, p, d};
    KilnModule *m = kiln_build(s, 4, args, "f", NULL, &copt);
    CHECK_MSG(m != NULL, "%s", kiln_get_error());
    if (!m) return;
    DLTensor *a[4];
    for (int i = 0; i < 4; i++) a[i] = tk_array_for(args[i]);
    tk_fill_random(a[0]);
    tk_fill_random(a[1]);
    float *xv = a[0]->data, *yv = a[1]->data;
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, u2f(0x3f808000u), u2f(0x3f818000u), u2f(0x7f7fffffu)};
    for (int i = 0; i < 9; i++) xv[i] = special[i], yv[i + 20] = special[i];
    CHECK_OK(tk_call(m, "f", 4, a));
    const uint32_t *pv = a[2]->data;
    const float *dv = a[3]->data;
    for (int64_t i = 0; i < n; i++) {
      uint32_t want = ir_bf16_round(xv[i]) | ir_bf16_round(yv[i]) << 16;
      CHECK_MSG(pv[i] == want, "%s: pack2(%a, %a) = 0x%08x, want 0x%08x", vec ? "vector" : "scalar", (double)xv[i],
                (double)yv[i], pv[i], want);
      uint32_t q = pv[n - 1 - i];
      float wd = ir_bf16_float(pv[i]) * ir_bf16_float(q) + ir_bf16_float(pv[i] >> 16) * ir_bf16_float(q >> 16);
      CHECK_MSG(f2u(dv[i]) == f2u(wd) || (isnan(dv[i]) && isnan(wd)), "dot2 lane %lld: %g, want %g", (long long)i,
                (double)dv[i], (double)wd);
    }
    for (int i = 0; i < 4; i++) kiln_array_free(a[i]);
    kiln_module_free(m);
  }

  /* neighbouring elements paired, q[i] = pack2(x[2i], x[2i + 1]) (the
   * input stage of conv2d_NCHWc_bf16), scalar and on 8 and 16 lanes (one
   * contiguous load, not two stride-2 gathers) */
  int64_t h = n / 2;
  v = te_axis_vars(1, NULL);
  Expr *i2 = ir_mul(v[0], ir_i32(2));
  Tensor *q = te_compute("q", 1, (Expr *[]){ir_i32(h)}, v,
                         ir_call2(INTRIN_bf16_pack2, te_read1(x, i2), te_read1(x, ir_add(i2, ir_i32(1)))), "elemwise");
  CHECK(q != NULL);
  for (int lanes = 1; q && lanes <= 16; lanes *= 2) {
    if (lanes == 2 || lanes == 4) continue;
    Schedule *s = te_create_schedule(1, &q);
    if (lanes > 1) {
      IterVar *o, *i;
      CHECK_OK(stage_split(sch_stage(s, q), stage_axis(sch_stage(s, q), 0), ir_i32(lanes), &o, &i));
      CHECK_OK(stage_vectorize(sch_stage(s, q), i));
    }
    KilnModule *m = kiln_build(s, 2, (Tensor *[]){x, q}, "f", NULL, &copt);
    CHECK_MSG(m != NULL, "%s", kiln_get_error());
    if (!m) return;
    DLTensor *a[2] = {tk_array_for(x), tk_array_for(q)};
    tk_fill_random(a[0]);
    float *xv = a[0]->data;
    const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, u2f(0x3f808000u), u2f(0x3f818000u),
                             u2f(0x7f7fffffu), u2f(0x7f800001u), -1e-40f};
    for (int i = 0; i < 11; i++) xv[3 * i + 1] = special[i];
    CHECK_OK(tk_call(m, "f", 2, a));
    const uint32_t *qv = a[1]->data;
    for (int64_t i = 0; i < h; i++) {
      uint32_t want = ir_bf16_round(xv[2 * i]) | ir_bf16_round(xv[2 * i + 1]) << 16;
      CHECK_MSG(qv[i] == want, "%d lanes: pack2(%a, %a) = 0x%08x, want 0x%08x", lanes, (double)xv[2 * i],
                (double)xv[2 * i + 1], qv[i], want);
    }
    for (int i = 0; i < 2; i++) kiln_array_free(a[i]);
    kiln_module_free(m);
  }
}

static bool run_case(const Template *tm, int caseno, bool fallback) {
  int64_t M = test_rand_between(1, 40), K = test_rand_between(1, 70);
  int64_t N = test_pick(8, (int64_t[]){3, 8, 10, 16, 24, 32, 48, 64});
  Workload *wl = wl_dense(tm->name, M, N, K, "float32", "float32");
  int64_t idx;
  ConfigEntity *cfg = tk_random_config(tm, wl, fallback, &idx);
  if (!cfg) return false;
  bool epi = caseno % 2, fma = topi_x86_dense_bf16_dot_is_fma(cfg) == 1;
  const char *desc =
      kfmt("case %d: %s: config %lld %s, epilogue %d", caseno, wl->key, (long long)idx, config_entity_json(cfg), epi);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  Tensor *data = te_placeholder_c("data", 2, (int64_t[]){M, K}, DT_F32);
  Tensor *w = te_placeholder_c("w", 2, (int64_t[]){N, K}, DT_F32);
  Tensor *bias = epi ? te_placeholder_c("bias", 1, &N, DT_F32) : NULL;
  Tensor *pw = topi_x86_pack_dense_weight_bf16(w, cfg_split_inner(cfg, "tile_x"));
  Tensor *c = pw ? topi_x86_dense_pack_bf16(data, pw, NULL, fma) : NULL, *out = c;
  CHECK_MSG(c != NULL, "%s: %s", desc, kiln_get_error());
  if (!c) return false;
  if (epi) {
    Expr **v = te_axis_vars(2, NULL);
    Expr *e = ir_add(te_read2(c, v[0], v[1]), te_read1(bias, v[1]));
    out = te_compute("T_relu", 2, c->shape, v, ir_max(e, ir_f32(0)), "elemwise");
  }
  Schedule *s = te_create_schedule(1, &out);
  if (tm->schedule(target_host(), s, cfg, c, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  Tensor *args[4] = {data, w, epi ? bias : out, out};
  int na = epi ? 4 : 3;
  DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-5, desc);
  if (!arr) return false;
  /* Against naive products: of the bfloat16 operands (exact up to float32
   * summation order) and of the float32 ones (the rounding's cost). */
  bool ok = true;
  DLTensor *want = tk_array_for(out), *want32 = tk_array_for(out);
  const float *dv = arr[0]->data, *wv = arr[1]->data, *bv = epi ? arr[2]->data : NULL;
  float *o16 = want->data, *o32 = want32->data;
  for (int64_t yy = 0; yy < M; yy++)
    for (int64_t xx = 0; xx < N; xx++) {
      double s16 = 0, s32 = 0;
      for (int64_t k = 0; k < K; k++) {
        float a = dv[yy * K + k], b = wv[xx * K + k];
        /* "fma" rounds the weight only, "vdpbf16ps" both operands */
        double ar = fma ? (double)a : (double)ir_bf16_float(ir_bf16_round(a));
        s16 += ar * ir_bf16_float(ir_bf16_round(b));
        s32 += (double)a * b;
      }
      if (bv) s16 += bv[xx], s32 += bv[xx];
      if (epi) s16 = s16 > 0 ? s16 : 0, s32 = s32 > 0 ? s32 : 0;
      o16[yy * N + xx] = (float)s16;
      o32[yy * N + xx] = (float)s32;
    }
  double err = tk_rel_err(arr[na - 1], want);
  if (!(err < 1e-5)) {
    test_fail(__FILE__, __LINE__, "%s: relative error %g against a naive product of the bfloat16 operands", desc, err);
    ok = false;
  }
  double e32 = tk_rel_err(arr[na - 1], want32);
  if (!(e32 < 1e-2)) {
    test_fail(__FILE__, __LINE__, "%s: relative error %g against the float32 product (bound 1e-2)", desc, e32);
    ok = false;
  }
  kiln_array_free(want);
  kiln_array_free(want32);
  tk_arrays_free(na, arr);
  return ok;
}

static void test_dense_random(void) {
  if (!graph_cpu_has_bf16()) {
    fprintf(stderr, "  (no AVX512-BF16 here: the kernels run the lane loops)\n");
  }
  const Template *tm = template_lookup("dense_pack_bf16.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(12); i++) run_case(tm, i, i % 4 == 3);
}

static bool run_conv_case(const Template *tm, int caseno, bool fallback) {
  int64_t N = 1, C = test_pick(5, (int64_t[]){2, 4, 6, 8, 16}), O = test_pick(5, (int64_t[]){3, 8, 12, 16, 32});
  int64_t KH = test_pick(2, (int64_t[]){1, 3}), KW = KH, H = test_rand_between(4, 12), W = test_rand_between(4, 12);
  int sh = (int)test_rand_between(1, 2), dl = KH == 3 && test_rand() % 5 == 0 ? 2 : 1;
  int p = KH == 3 ? (int)test_rand_between(0, 1) * dl : 0;
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){N, C, H, W}, (int64_t[]){O, C, KH, KW}, (int[]){sh, sh},
                           (int[]){p, p, p, p}, (int[]){dl, dl}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_MSG(cs != NULL, "%s: %s", wl->key, kiln_get_error());
  if (!cs) return false;
  ConfigEntity *cfg = NULL;
  int64_t idx = -1;
  for (int tries = 0; !fallback && tries < 50 && !cfg; tries++) { /* a point of the space with an even tile_ic */
    idx = (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)space_size(cs));
    cfg = space_get(cs, idx);
    if (tm->check(target_host(), cfg, wl)) cfg = NULL;
  }
  if (!cfg) cfg = template_fallback(tm, target_host(), wl), idx = -1;
  CHECK_NN(cfg);
  if (!cfg) return false;
  CHECK_OK(tm->check(target_host(), cfg, wl));
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  bool relu = caseno % 2;
  const char *desc = kfmt("case %d: %s: config %lld %s, relu %d", caseno, wl->key, (long long)idx, config_entity_json(cfg), relu);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){N, C / ib, H, W, ib}, DT_F32);
  Tensor *k = te_placeholder_c("k", 4, (int64_t[]){O, C, KH, KW}, DT_F32);
  int st[2] = {sh, sh}, pd[4] = {p, p, p, p}, dd[2] = {dl, dl};
  Tensor *c16 = topi_x86_conv2d_NCHWc_bf16(data, topi_x86_pack_kernel_bf16(k, ib, ob), st, pd, dd,
                                           topi_x86_conv_bf16_dot_is_fma(cfg) == 1);
  Tensor *c32 = topi_x86_conv2d_NCHWc(data, topi_x86_pack_kernel_OIHWio(k, ib, ob), st, pd, dd, DT_F32);
  CHECK_MSG(c16 && c32, "%s: %s", desc, kiln_get_error());
  if (!c16 || !c32) return false;
  Tensor *o16 = relu ? tk_relu5(c16) : c16, *o32 = relu ? tk_relu5(c32) : c32;
  Schedule *s = te_create_schedule(1, &o16), *s32 = te_create_schedule(1, &o32);
  if (tm->schedule(target_host(), s, cfg, c16, 1, &o16)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  DLTensor **arr = tk_run_vs_unscheduled(s, 3, (Tensor *[]){data, k, o16}, &copt, 1e-5, desc);
  if (!arr) return false;
  /* The same inputs through the float32 template: the rounding's cost. */
  KilnModule *m32 = kiln_build(s32, 3, (Tensor *[]){data, k, o32}, "f", NULL, &copt);
  DLTensor *out32 = tk_array_for(o32);
  tk_fill(out32, NAN);
  bool ok = m32 != NULL;
  if (!ok) test_fail(__FILE__, __LINE__, "%s: float32 build failed: %s", desc, kiln_get_error());
  if (ok && tk_call(m32, "f", 3, (DLTensor *[]){arr[0], arr[1], out32})) {
    test_fail(__FILE__, __LINE__, "%s: float32 run failed: %s", desc, kiln_last_error());
    ok = false;
  }
  double e32 = ok ? tk_rel_err(arr[2], out32) : 0;
  if (ok && !(e32 < 1e-2)) {
    test_fail(__FILE__, __LINE__, "%s: relative error %g against the float32 conv (bound 1e-2)", desc, e32);
    ok = false;
  }
  kiln_array_free(out32);
  kiln_module_free(m32);
  tk_arrays_free(3, arr);
  return ok;
}

static void test_conv_random(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_bf16.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(10); i++) run_conv_case(tm, i, i % 4 == 3);
}

/* conv2d_NCHWc_winograd_bf16.x86 on a random 3x3 stride-1 conv (odd sizes
 * with partial tiles, even channel counts) with a random config of its
 * space or the fallback, the kernel transformed and rounded in the
 * function: against the unscheduled lowering (1e-5) and the float32
 * convolution in double (1e-2, the bound of one bfloat16 layer). */
static double wino_worst;

static bool run_wino_case(const Template *tm, int caseno, bool fallback) {
  int64_t N = test_rand_between(1, 2), C = test_pick(5, (int64_t[]){2, 4, 8, 16, 32});
  int64_t O = test_pick(5, (int64_t[]){4, 8, 12, 16, 32}), H = test_rand_between(3, 15), W = test_rand_between(3, 15);
  int p = (int)test_rand_between(0, 2);
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){N, C, H, W}, (int64_t[]){O, C, 3, 3}, (int[]){1, 1},
                           (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
  int64_t idx;
  ConfigEntity *cfg = tk_random_config(tm, wl, fallback, &idx);
  if (!cfg) return false;
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  bool relu = caseno % 2;
  const char *desc = kfmt("case %d: %s: config %lld %s, relu %d", caseno, wl->key, (long long)idx, config_entity_json(cfg), relu);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){N, C / ib, H, W, ib}, DT_F32);
  Tensor *k = te_placeholder_c("k", 4, (int64_t[]){O, C, 3, 3}, DT_F32);
  Tensor *U = topi_x86_winograd_weight_transform_bf16(k, ib, ob);
  Tensor *conv = U ? tm->compute(target_host(), wl, cfg, 2, (Tensor *[]){data, U}) : NULL;
  CHECK_MSG(conv != NULL, "%s: %s", desc, kiln_get_error());
  if (!conv) return false;
  Tensor *out = relu ? tk_relu5(conv) : conv;
  Schedule *s = te_create_schedule(1, &out);
  if (tm->schedule(target_host(), s, cfg, conv, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  DLTensor **arr = tk_run_vs_unscheduled(s, 3, (Tensor *[]){data, k, out}, &copt, 1e-5, desc);
  if (!arr) return false;
  TkConv rc = {.N = N, .C = C, .H = H, .W = W, .O = O, .KH = 3, .KW = 3, .ib = ib, .ob = ob, .real = C, .stride = 1,
               .pad = p, .dilation = 1, .relu = relu};
  DLTensor *want = tk_array_for(out);
  tk_conv2d_ref(&rc, arr[0], arr[1], want);
  double err = tk_rel_err(arr[2], want);
  if (err > wino_worst) wino_worst = err;
  bool ok = err < 1e-2;
  if (!ok) test_fail(__FILE__, __LINE__, "%s: relative error %g against the float32 conv (bound 1e-2)", desc, err);
  kiln_array_free(want);
  tk_arrays_free(3, arr);
  return ok;
}

static void test_winograd_random(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_winograd_bf16.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(12); i++) run_wino_case(tm, i, i % 4 == 3);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  worst relative error against the float32 conv: %g\n", wino_worst);
}

static void test_conv_errors(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_bf16.x86");
  if (!tm) return;
  /* ResNet-50's 1x1 256 -> 64 at 56x56: the fallback is a point of the space with an even block */
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 256, 56, 56}, (int64_t[]){64, 256, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *fb = template_fallback(tm, target_host(), wl);
  CHECK_NN(fb);
  if (fb) {
    CHECK(cfg_split_inner(fb, "tile_ic") % 2 == 0);
    CHECK_OK(tm->check(target_host(), fb, wl));
  }
  /* 30 channels: conv2d_NCHWc's fallback block 15 is odd; the bfloat16 one takes 10 */
  Workload *w30 = wl_conv2d(tm->name, (int64_t[]){1, 30, 8, 8}, (int64_t[]){16, 30, 1, 1}, (int[]){1, 1},
                            (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *f30 = template_fallback(tm, target_host(), w30);
  CHECK(f30 && cfg_split_inner(f30, "tile_ic") == 10);
  ConfigEntity *c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 3]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                            "[\"tile_ow\", \"sp\", [-1, 8]], [\"tile_oh\", \"ot\", 1], "
                                            "[\"bf16_dot\", \"ot\", \"fma\"]]");
  Workload *w3 = wl_conv2d(tm->name, (int64_t[]){1, 6, 8, 8}, (int64_t[]){16, 6, 1, 1}, (int[]){1, 1}, (int[]){0, 0, 0, 0},
                           (int[]){1, 1}, "float32", "float32");
  CHECK(tm->check(target_host(), c, w3) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_ic' inner part 3 is not a multiple of 2");
  Tensor *d = te_placeholder_c("d", 5, (int64_t[]){1, 2, 8, 8, 4}, DT_F32);
  Tensor *k = te_placeholder_c("k", 6, (int64_t[]){1, 2, 1, 1, 4, 16}, DT_U32);
  CHECK(topi_x86_conv2d_NCHWc_bf16(d, k, (int[]){1, 1}, (int[]){0, 0, 0, 0}, (int[]){1, 1}, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "do not match data's 2 x 4 channels");
  CHECK(topi_x86_pack_kernel_bf16(te_placeholder_c("w", 4, (int64_t[]){16, 6, 1, 1}, DT_F32), 3, 16) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "blocks 3 (input, even) and 16 (output) must divide");
}

static void test_dense_errors(void) {
  const Template *tm = template_lookup("dense_pack_bf16.x86");
  if (!tm) return;
  Workload *wl = wl_dense(tm->name, 64, 768, 3072, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  ConfigEntity *fb = template_fallback(tm, target_host(), wl);
  CHECK(cs && fb);
  if (!cs || !fb) return;
  /* a block of three vectors x 8 rows where N and M have them (AVX-512),
   * two x 12 rows, and with a few rows the widest block of vectors up to
   * 64 columns (vectors of 8 where N has no multiple of 16) */
  int64_t lanes = target_host()->vector_lanes;
  CHECK_INT(cfg_split_inner(fb, "tile_x"), lanes == 16 ? 48 : lanes);
  CHECK_INT(cfg_split_inner(fb, "tile_y"), lanes == 16 ? 8 : 16);
  CHECK(fb->index >= 0 && space_index_of(cs, fb) == fb->index);
  CHECK_OK(tm->check(target_host(), fb, wl));
  const struct {
    int64_t M, N, bn, rows;
  } blocks[] = {{192, 256, 32, 12}, {4, 768, 64, 4}, {192, 1000, 8, 16}, {1, 2048, 64, 1}, {1, 1000, 40, 1}};
  for (size_t i = 0; lanes == 16 && i < sizeof blocks / sizeof blocks[0]; i++) {
    Workload *w = wl_dense(tm->name, blocks[i].M, blocks[i].N, 512, "float32", "float32");
    ConfigSpace *ws = template_space(tm, target_host(), w);
    ConfigEntity *f = template_fallback(tm, target_host(), w);
    CHECK(ws && f);
    if (!ws || !f) continue;
    CHECK_INT(cfg_split_inner(f, "tile_x"), blocks[i].bn);
    CHECK_INT(cfg_split_inner(f, "tile_y"), blocks[i].rows);
    CHECK(f->index >= 0 && space_index_of(ws, f) == f->index);
  }
  ConfigEntity *c = config_entity_from_json("[[\"tile_y\", \"sp\", [-1, 1, 8]], [\"tile_x\", \"sp\", [-1, 1, 16]], "
                                            "[\"tile_k\", \"sp\", [-1, 7]]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_k': the parts multiply to 7, which does not divide the 1536 K pairs");
  Tensor *d = te_placeholder_c("d", 2, (int64_t[]){4, 9}, DT_F32);
  CHECK(topi_x86_dense_pack_bf16(d, te_placeholder_c("w", 3, (int64_t[]){2, 4, 8}, DT_U32), NULL, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the packed weight has 4 K pairs, data's K = 9 needs 5");
  CHECK(topi_x86_dense_pack_bf16(d, te_placeholder_c("w", 3, (int64_t[]){2, 5, 8}, DT_F32), NULL, true) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "weight must be bfloat16 pairs packed as uint32");
  CHECK(topi_x86_pack_dense_weight_bf16(te_placeholder_c("w", 2, (int64_t[]){10, 9}, DT_F32), 4) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the block 4 does not divide N = 10");
}

static void test_precision_checks(void) {
  GraphPrecision p;
  CHECK_OK(graph_precision_parse("bf16", &p));
  CHECK_INT(p, GRAPH_PRECISION_BF16);
  CHECK_OK(graph_precision_parse("fp32", &p));
  CHECK_INT(p, GRAPH_PRECISION_FP32);
  CHECK(graph_precision_parse("fp16", &p) != 0);
  CHECK_CONTAINS(kiln_get_error(), "precision 'fp16': expected fp32 (the default) or bf16");
  CHECK_OK(graph_precision_check(GRAPH_PRECISION_FP32, target_host(), 0));
  const Target *gpu = target_parse("cuda", NULL);
  CHECK(gpu && graph_precision_check(GRAPH_PRECISION_BF16, gpu, 3) != 0);
  CHECK_CONTAINS(kiln_get_error(), "the bfloat16 kernels are CPU kernels");
  const Target *avx2 = target_parse("llvm -mcpu=x86-64-v3", NULL);
  CHECK(avx2 && graph_precision_check(GRAPH_PRECISION_BF16, avx2, 3) != 0);
  CHECK_CONTAINS(kiln_get_error(), "needs an AVX-512 CPU target");
  if (target_host()->isa == ISA_X86_AVX512 && graph_cpu_has_bf16()) {
    CHECK_OK(graph_precision_check(GRAPH_PRECISION_BF16, target_host(), 3));
    CHECK(graph_precision_check(GRAPH_PRECISION_BF16, target_host(), 2) != 0);
    CHECK_CONTAINS(kiln_get_error(), "needs opt level 3");
  }
  setenv("KILN_CPU_NO_BF16", "1", 1);
  CHECK(!graph_cpu_has_bf16());
  CHECK(graph_precision_check(GRAPH_PRECISION_BF16, target_parse("llvm -mcpu=x86-64-v4", NULL), 3) != 0);
  CHECK_CONTAINS(kiln_get_error(), "needs a CPU with AVX512-BF16");
  unsetenv("KILN_CPU_NO_BF16");
}

/* The fallback's bf16_dot on each CPU of the target table (targets given
 * explicitly): VDPBF16PS where it out-runs the FMAs, FMAs elsewhere and on
 * a CPU the table does not describe; the host's description is its -mcpu
 * row's. */
static void test_dot_form(void) {
  const struct {
    const char *target, *cpu, *form;
  } rows[] = {
      {"llvm -mcpu=znver5", "znver5", "vdpbf16ps"},
      {"llvm -mcpu=znver4", "znver4", "vdpbf16ps"},
      {"llvm -mcpu=emeraldrapids", "emeraldrapids", "fma"},
      {"llvm -mcpu=sapphirerapids", "sapphirerapids", "fma"},
      {"llvm -mcpu=x86-64-v4", NULL, "fma"},  /* a level names no CPU: the default */
      {"llvm -mcpu=cooperlake", NULL, "fma"}, /* a CPU without a row */
  };
  const Template *tms[2] = {template_lookup("dense_pack_bf16.x86"), template_lookup("conv2d_NCHWc_bf16.x86")};
  Workload *wls[2] = {wl_dense("dense_pack_bf16.x86", 8, 256, 512, "float32", "float32"),
                      wl_conv2d("conv2d_NCHWc_bf16.x86", (int64_t[]){1, 64, 14, 14}, (int64_t[]){128, 64, 3, 3},
                                (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32")};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    const Target *t = target_parse(rows[r].target, NULL);
    CHECK_NN(t);
    if (!t) continue;
    CHECK(rows[r].cpu ? t->cpu && !strcmp(t->cpu, rows[r].cpu) : !t->cpu);
    CHECK(target_bf16_dot_faster(t) == !strcmp(rows[r].form, "vdpbf16ps"));
    CHECK_STR(topi_x86_bf16_dot_fallback(t), rows[r].form);
    for (int i = 0; i < 2; i++) {
      ConfigEntity *fb = tms[i] ? template_fallback(tms[i], t, wls[i]) : NULL;
      const KnobEntity *k = fb ? config_get(fb, "bf16_dot") : NULL;
      CHECK(k && k->val.kind == OPT_STR);
      if (k && k->val.kind == OPT_STR) CHECK_STR(k->val.s, rows[r].form);
      if (fb) CHECK_OK(tms[i]->check(t, fb, wls[i]));
    }
  }
  const Target *h = target_host();
  if (h->cpu) {
    const Target *named = target_parse(kfmt("llvm -mcpu=%s", h->cpu), NULL);
    CHECK(named && named->bf16_dot_rate == h->bf16_dot_rate);
  }
  CHECK(!target_bf16_dot_faster(target_parse("cuda", NULL)));
}

/* occ_inner (the parallel loop steps a 1x1 layer's output-channel chunks
 * inside its rows) in the config a bfloat16 layer takes from float32's:
 * on a channel-reducing 1x1 layer whose input outgrows the L2 and whose
 * weights fit a quarter of it, not on a layer with more outputs than
 * inputs, weights past a quarter of the L2, an input that fits the L2, a
 * window larger than 1x1 or one block of chunks; a value the config has
 * (a record's) stays. */
static void test_occ_inner(void) {
  const struct {
    int64_t ic, h, oc, k;
    int s;
    bool want;
  } rows[] = {
      {256, 56, 64, 1, 1, true},    /* ResNet-50's 256->64 @56: 4.8 MB in, 32 KiB weights */
      {512, 28, 128, 1, 1, true},   /* 512->128 @28 */
      {64, 56, 256, 1, 1, false},   /* 64->256 @56: more outputs than inputs */
      {1024, 14, 256, 1, 1, false}, /* 512 KiB of weights */
      {256, 14, 64, 1, 1, false},   /* 294 KiB in: fits the L2 */
      {128, 56, 128, 3, 2, false},  /* 3x3 */
      {64, 56, 32, 1, 1, false},    /* 32 channels: one block of two chunks */
  };
  const Target *t = target_parse("llvm -mcpu=znver5", NULL);
  const Template *tf = template_lookup("conv2d_NCHWc.x86"), *tb = template_lookup("conv2d_NCHWc_bf16.x86");
  CHECK(t && tf && tb);
  if (!t || !tf || !tb) return;
  CHECK(target_l2_bytes(t) == 1 << 20);
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    int64_t d[4] = {1, rows[r].ic, rows[r].h, rows[r].h}, k[4] = {rows[r].oc, rows[r].ic, rows[r].k, rows[r].k};
    int st[2] = {rows[r].s, rows[r].s}, p = (int)rows[r].k / 2, pd[4] = {p, p, p, p};
    Workload *wf = wl_conv2d(tf->name, d, k, st, pd, (int[]){1, 1}, "float32", "float32");
    Workload *wb = wl_conv2d(tb->name, d, k, st, pd, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *c = template_fallback(tf, t, wf);
    CHECK_NN(c);
    if (!c) continue;
    CHECK_OK(topi_x86_conv_bf16_from_float32(t, c, wb, false));
    CHECK_OK(tb->check(t, c, wb));
    CHECK_MSG(cfg_other_int(c, "occ_inner", -1) == rows[r].want, "%s: occ_inner %lld, want %d", wb->key,
              (long long)cfg_other_int(c, "occ_inner", -1), rows[r].want);
    ConfigEntity *fb = template_fallback(tb, t, wb);
    CHECK(fb && cfg_other_int(fb, "occ_inner", -1) == rows[r].want);
    config_set_other(c, "occ_inner", opt_bool(!rows[r].want)); /* a record's value stays */
    CHECK_OK(topi_x86_conv_bf16_from_float32(t, c, wb, true));
    CHECK(cfg_other_int(c, "occ_inner", -1) == !rows[r].want);
  }
}

const TestCase bf16_tests[] = {
    {"round", test_round},
    {"dense_random", test_dense_random},
    {"dense_errors", test_dense_errors},
    {"conv_random", test_conv_random},
    {"conv_errors", test_conv_errors},
    {"winograd_random", test_winograd_random},
    {"precision_checks", test_precision_checks},
    {"dot_form", test_dot_form},
    {"occ_inner", test_occ_inner},
    {NULL, NULL},
};
