/*
 * test_int8.c - the int8 kernels of quantized models (docs/int8.md): the
 * u8s8_dot4 intrinsic and dense_vnni.x86.
 *
 * - dense_vnni.x86: random workloads (M 1..40 so row blocks have tails, K
 *   1..70 so the last group of four has zero bytes, N with and without a
 *   vector block), full-range operands (uint8 0..255, int8 -128..127), a
 *   random config of the space or the fallback, with and without a bias +
 *   ReLU epilogue, the weight packed in the function: against the
 *   unscheduled lowering of the same compute (the scalar u8s8_dot4 helper;
 *   the scheduled kernel uses VPDPBUSD where the compiler targets
 *   AVX512-VNNI) and against a naive product in int64 requantized in
 *   double (both 1e-6: the int32 sums are exact, only the float32 scale
 *   product rounds).
 * - conv2d_NCHWc_int8.x86: random convolutions (batch 1 and 2, 1x1 and
 *   3x3, strides 1 and 2, padding, dilation, channels in multiples of 4;
 *   half of them 128 -> 128 3x3, whose space has prefetch_w and whose
 *   fallback prefetches), a random config of the space (tile_ic a
 *   multiple of 4) or the fallback, the kernel packed in the function, a
 *   random input zero point
 *   with its compensation, with and without a ReLU, the requantize
 *   epilogue or the accumulation as the anchor: against the unscheduled
 *   lowering and a naive int64 convolution of (x - za) with zero padding
 *   (1e-6).
 * - requant_cast: QuantizeLinear's cast<uint8/int8>(clip(round(x), lo, hi))
 *   on 16 lanes, printed as saturating conversions (codegen_c_requant.c),
 *   with the round bound by a Let and inline, the type's own bounds and
 *   narrower ones, on NaN, infinities, signed zeros, halves (ties to
 *   even), values past int32 and uint32 and random ones: bit for bit
 *   C's float sequence, built for this CPU and without AVX-512 (the
 *   helper's lane loop).
 * - requant_identity: requantize.c's rule 4 on a uint8 DequantizeLinear
 *   straight into a QuantizeLinear: gone (the graph's output is X) for
 *   equal scales and zero points, and for scales so close that every
 *   value comes back; kept for scales 1 % apart or other zero points.
 * - requant_zero_subtract: requantize.c's rule 5: a DequantizeLinear's
 *   subtract of a zero point +0 goes; -0 and 3 stay.
 * - errors: operands of the wrong type or shape, a config that does not
 *   fit the packed weight; qnn.dequantize and nn.contrib_dense_vnni nodes
 *   with bad operands (the graph ops' type checks).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "codegen/codegen.h"
#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "kernel_util.h"
#include "target/target.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

static void fill_bytes(DLTensor *a) {
  int64_t n = tk_numel(a);
  uint8_t *p = (uint8_t *)a->data + a->byte_offset;
  for (int64_t i = 0; i < n; i++) p[i] = (uint8_t)(test_rand() & 0xff);
}

static bool run_case(const Template *tm, int caseno, bool fallback) {
  int64_t M = test_rand_between(1, 40), K = test_rand_between(1, 70);
  int64_t N = test_pick(8, (int64_t[]){3, 8, 10, 16, 24, 32, 48, 64});
  Workload *wl = wl_dense(tm->name, M, N, K, "uint8", "int32");
  int64_t idx;
  ConfigEntity *cfg = tk_random_config(tm, wl, fallback, &idx);
  if (!cfg) return false;
  bool epi = caseno % 2;
  const char *desc =
      kfmt("case %d: %s: config %lld %s, epilogue %d", caseno, wl->key, (long long)idx, config_entity_json(cfg), epi);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  Tensor *data = te_placeholder_c("data", 2, (int64_t[]){M, K}, DT_U8);
  Tensor *w = te_placeholder_c("w", 2, (int64_t[]){N, K}, DT_I8);
  Tensor *comp = te_placeholder_c("comp", 1, &N, DT_I32), *scale = te_placeholder_c("scale", 1, &N, DT_F32);
  Tensor *bias = epi ? te_placeholder_c("bias", 1, &N, DT_F32) : NULL;
  Tensor *pw = topi_x86_pack_dense_weight_int8(w, cfg_split_inner(cfg, "tile_x"));
  Tensor *out = pw ? topi_x86_dense_vnni(data, pw, comp, scale, bias) : NULL;
  CHECK_MSG(out != NULL, "%s: %s", desc, kiln_get_error());
  if (!out) return false;
  Tensor *c = out->inputs[0], *requant = out;
  for (int i = 0; i < out->ninputs; i++)
    if (out->inputs[i]->tag && !strcmp(out->inputs[i]->tag, "dense_vnni")) c = out->inputs[i];
  if (epi) {
    Expr **v = te_axis_vars(2, NULL);
    out = te_compute("T_relu", 2, out->shape, v, ir_max(te_read2(out, v[0], v[1]), ir_f32(0)), "elemwise");
  }
  Schedule *s = te_create_schedule(1, &out), *naive = te_create_schedule(1, &out);
  /* the graph build passes the op's output (the requantize epilogue) as the anchor */
  Tensor *anchor = caseno % 3 ? c : requant;
  if (tm->schedule(target_host(), s, cfg, anchor, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  Tensor *args[6] = {data, w, comp, scale, bias, out};
  int na = 6;
  if (!epi) args[4] = out, na = 5;
  KilnModule *mod = kiln_build(s, na, args, "f", NULL, &copt), *ref_mod = kiln_build(naive, na, args, "f", NULL, &copt);
  if (!mod || !ref_mod) {
    test_fail(__FILE__, __LINE__, "%s: build failed: %s", desc, kiln_get_error());
    kiln_module_free(mod);
    kiln_module_free(ref_mod);
    return false;
  }
  DLTensor *arr[6], *arr2[6];
  for (int i = 0; i < na; i++) {
    arr[i] = tk_array_for(args[i]);
    if (i < 2) fill_bytes(arr[i]);
    else if (i == 2) {
      for (int64_t j = 0; j < N; j++) ((int32_t *)arr[i]->data)[j] = (int32_t)(test_rand() % 20001) - 10000;
    } else if (i < na - 1)
      tk_fill_random(arr[i]);
    else
      tk_fill(arr[i], NAN);
    arr2[i] = tk_array_for(args[i]);
    memcpy(arr2[i]->data, arr[i]->data, (size_t)tk_numel(arr[i]) * (size_t)((arr[i]->dtype.bits + 7) / 8));
  }
  bool ok = true;
  if (tk_call(mod, "f", na, arr) || tk_call(ref_mod, "f", na, arr2)) {
    test_fail(__FILE__, __LINE__, "%s: run failed: %s", desc, kiln_last_error());
    ok = false;
  }
  double err = ok ? tk_rel_err(arr[na - 1], arr2[na - 1]) : 0;
  if (ok && !(err < 1e-6)) {
    test_fail(__FILE__, __LINE__, "%s: relative error %g against the unscheduled lowering", desc, err);
    ok = false;
  }
  if (ok) {
    DLTensor *want = tk_array_for(out);
    const uint8_t *dv = arr[0]->data;
    const int8_t *wv = arr[1]->data;
    const int32_t *cv = arr[2]->data;
    const float *sv = arr[3]->data, *bv = epi ? arr[4]->data : NULL;
    float *o = want->data;
    for (int64_t yy = 0; yy < M; yy++)
      for (int64_t xx = 0; xx < N; xx++) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; k++) acc += (int64_t)dv[yy * K + k] * wv[xx * K + k];
        double r = (double)(acc - cv[xx]) * sv[xx];
        if (bv) r += bv[xx];
        if (epi) r = r > 0 ? r : 0;
        o[yy * N + xx] = (float)r;
      }
    err = tk_rel_err(arr[na - 1], want);
    if (!(err < 1e-6)) {
      test_fail(__FILE__, __LINE__, "%s: relative error %g against a naive int64 product", desc, err);
      ok = false;
    }
    kiln_array_free(want);
  }
  for (int i = 0; i < na; i++) kiln_array_free(arr[i]), kiln_array_free(arr2[i]);
  kiln_module_free(mod);
  kiln_module_free(ref_mod);
  return ok;
}

static void test_dense_random(void) {
  const Template *tm = template_lookup("dense_vnni.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(12); i++) run_case(tm, i, i % 4 == 3);
}

static void test_dense_errors(void) {
  Tensor *d = te_placeholder_c("d", 2, (int64_t[]){4, 10}, DT_U8), *df = te_placeholder_c("df", 2, (int64_t[]){4, 10}, DT_F32);
  Tensor *w = te_placeholder_c("w", 2, (int64_t[]){16, 10}, DT_I8), *wf = te_placeholder_c("wf", 2, (int64_t[]){16, 10}, DT_F32);
  int64_t n16 = 16, n8 = 8;
  Tensor *comp = te_placeholder_c("c", 1, &n16, DT_I32), *scale = te_placeholder_c("s", 1, &n16, DT_F32);
  Tensor *comp8 = te_placeholder_c("c8", 1, &n8, DT_I32);
  CHECK(topi_x86_pack_dense_weight_int8(wf, 16) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "expected an int8 [N, K]");
  CHECK(topi_x86_pack_dense_weight_int8(w, 5) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the block 5 does not divide N = 16");
  Tensor *pw = topi_x86_pack_dense_weight_int8(w, 16);
  CHECK_NN(pw);
  CHECK(topi_x86_dense_vnni(df, pw, comp, scale, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "data must be uint8 [M, K]");
  CHECK(topi_x86_dense_vnni(d, w, comp, scale, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "weight must be int8 quadruples packed as uint32");
  CHECK(topi_x86_dense_vnni(d, pw, comp8, scale, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "compensation must be int32 [16]");
  CHECK(topi_x86_dense_vnni(d, pw, comp, comp, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "scale must be float32 [16]");
  Tensor *d12 = te_placeholder_c("d12", 2, (int64_t[]){4, 13}, DT_U8);
  CHECK(topi_x86_dense_vnni(d12, pw, comp, scale, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the packed weight has 3 groups of 4 K values, data's K = 13 needs 4");

  /* a config whose vector block is not the packed weight's */
  const Template *tm = template_lookup("dense_vnni.x86");
  CHECK_NN(tm);
  if (!tm) return;
  Workload *wl = wl_dense(tm->name, 4, 16, 10, "uint8", "int32");
  ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
  CHECK_NN(cfg);
  Tensor *pw8 = topi_x86_pack_dense_weight_int8(w, 8);
  Tensor *out = topi_x86_dense_vnni(d, pw8, comp, scale, NULL);
  CHECK_NN(out);
  if (!cfg || !out) return;
  Tensor *c = out->inputs[0];
  for (int i = 0; i < out->ninputs; i++)
    if (out->inputs[i]->tag && !strcmp(out->inputs[i]->tag, "dense_vnni")) c = out->inputs[i];
  Schedule *s = te_create_schedule(1, &out);
  CHECK(tm->schedule(target_host(), s, cfg, c, 1, &out) != 0);
  CHECK_CONTAINS(kiln_get_error(), "does not match the packed weight's block 8");
  /* an anchor that is not dense_vnni's */
  CHECK(tm->schedule(target_host(), s, cfg, pw8, 1, &out) != 0);
  CHECK_CONTAINS(kiln_get_error(), "expected dense_vnni");
}

/* conv2d_NCHWc_int8.x86 on a random convolution: uint8 data in NCHW[ib]c,
 * the int8 OIHW kernel packed in the function, the compensation za *
 * sum(W[o]) (so the zero-point padding must make border taps vanish),
 * against the unscheduled lowering and a naive int64 convolution of (x -
 * za) with zero padding - the float32 model's arithmetic. */
static bool run_conv_case(const Template *tm, int caseno, bool fallback) {
  int64_t N = test_rand() % 4 == 0 ? 2 : 1, C = test_pick(5, (int64_t[]){4, 8, 12, 16, 32});
  int64_t O = test_pick(5, (int64_t[]){3, 8, 12, 16, 32});
  int64_t KH = test_pick(2, (int64_t[]){1, 3}), KW = KH, H = test_rand_between(4, 12), W = test_rand_between(4, 12);
  bool big = caseno % 4 >= 2; /* 128 -> 128 3x3: 144 KiB of weights, so the space has prefetch_w */
  if (big) C = O = 128, KH = KW = 3;
  int sh = (int)test_rand_between(1, 2), dl = KH == 3 && test_rand() % 5 == 0 ? 2 : 1;
  int p = KH == 3 ? (int)test_rand_between(0, 1) * dl : 0, za = (int)(test_rand() % 256);
  if (caseno % 3 == 1) za = 0; /* a layer after a ReLU: no compensation (the pass leaves it out) */
  int64_t span = (KH - 1) * dl + 1 - 2 * p; /* the window fits the padded input */
  if (H < span) H = span;
  if (W < span) W = span;
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){N, C, H, W}, (int64_t[]){O, C, KH, KW}, (int[]){sh, sh},
                           (int[]){p, p, p, p}, (int[]){dl, dl}, "uint8", "int32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_MSG(cs != NULL, "%s: %s", wl->key, kiln_get_error());
  if (!cs) return false;
  ConfigEntity *cfg = NULL;
  int64_t idx = -1;
  for (int tries = 0; !fallback && tries < 50 && !cfg; tries++) { /* a point of the space with tile_ic % 4 == 0 */
    idx = (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)space_size(cs));
    cfg = space_get(cs, idx);
    if (tm->check(target_host(), cfg, wl)) cfg = NULL;
  }
  if (!cfg) cfg = template_fallback(tm, target_host(), wl), idx = -1;
  CHECK_NN(cfg);
  if (!cfg) return false;
  CHECK_OK(tm->check(target_host(), cfg, wl));
  if (big && idx < 0) CHECK_MSG(cfg_other_int(cfg, "prefetch_w", 0) == 1, "%s: the fallback prefetches", wl->key);
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  bool relu = caseno % 2;
  const char *desc = kfmt("case %d: %s: config %lld %s, za %d, relu %d", caseno, wl->key, (long long)idx,
                          config_entity_json(cfg), za, relu);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){N, C / ib, H, W, ib}, DT_U8);
  Tensor *k = te_placeholder_c("k", 4, (int64_t[]){O, C, KH, KW}, DT_I8);
  Tensor *comp = te_placeholder_c("comp", 1, &O, DT_I32), *scale = te_placeholder_c("scale", 1, &O, DT_F32);
  /* the big layers take the kernel packed beforehand, as a model's is (folded): the schedule prefetches a
   * placeholder kernel only */
  Tensor *kp = big ? te_placeholder_c("kernel_int8", 6, (int64_t[]){O / ob, C / ib, KH, KW, ib / 4, ob}, DT_U32)
                   : topi_x86_pack_kernel_int8(k, ib, ob);
  Tensor *out = topi_x86_conv2d_NCHWc_int8(data, kp, za ? comp : NULL, scale, (int[]){sh, sh},
                                           (int[]){p, p, p, p}, (int[]){dl, dl}, za);
  CHECK_MSG(out != NULL, "%s: %s", desc, kiln_get_error());
  if (!out) return false;
  Tensor *acc = out;
  for (int i = 0; i < out->ninputs; i++)
    if (out->inputs[i]->tag && !strcmp(out->inputs[i]->tag, "conv2d_NCHWc_int8")) acc = out->inputs[i];
  Tensor *requant = out;
  if (relu) out = tk_relu5(out);
  Schedule *s = te_create_schedule(1, &out), *naive = te_create_schedule(1, &out);
  /* the graph build passes the requantize epilogue as the anchor; tuning the accumulation */
  if (tm->schedule(target_host(), s, cfg, caseno % 3 ? acc : requant, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  /* data, kernel, [compensation,] scale, out */
  int na = za ? 5 : 4, si = na - 2, oi = na - 1;
  Tensor *args[5] = {data, big ? kp : k, za ? comp : scale, za ? scale : out, out};
  if (cfg_other_int(cfg, "prefetch_w", 0) > 0) { /* the weights touched ahead */
    LoweredFunc *f = kiln_lower(s, na, args, "f", NULL);
    char *src = f ? codegen_c(&f, 1, 0, NULL) : NULL;
    CHECK_MSG(src && strstr(src, "__builtin_prefetch(&"), "%s: no prefetch in the C", desc);
    /* into L2 (prefetcht1), not L1: conv2d.c's nchwc_forms */
    CHECK_MSG(src && !strstr(src, ", 0, 3), 0)"), "%s: the weights prefetched into L1", desc);
    free(src);
  }
  KilnModule *mod = kiln_build(s, na, args, "f", NULL, &copt), *ref_mod = kiln_build(naive, na, args, "f", NULL, &copt);
  if (!mod || !ref_mod) {
    test_fail(__FILE__, __LINE__, "%s: build failed: %s", desc, kiln_get_error());
    kiln_module_free(mod);
    kiln_module_free(ref_mod);
    return false;
  }
  DLTensor *arr[5], *arr2[5];
  for (int i = 0; i < na; i++) arr[i] = tk_array_for(args[i]);
  fill_bytes(arr[0]);
  DLTensor *ka = big ? tk_array(4, (int64_t[]){O, C, KH, KW}, DT_I8) : arr[1];
  fill_bytes(ka);
  const int8_t *kv = ka->data;
  if (big) /* word q of kernel_int8[occ, icc, kh, kw, ., ocb]: channels 4 q .. 4 q + 3 of the block, low byte first */
    for (int64_t o = 0; o < O; o++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < KH * KW; i++) {
          int64_t w = ((((o / ob) * (C / ib) + c / ib) * KH * KW + i) * (ib / 4) + (c % ib) / 4) * ob + o % ob;
          ((uint8_t *)arr[1]->data)[4 * w + c % 4] = (uint8_t)kv[(o * C + c) * KH * KW + i];
        }
  int32_t *cv = za ? arr[2]->data : NULL;
  float *sv = arr[si]->data;
  for (int64_t o = 0; o < O; o++) {
    int64_t sum = 0;
    for (int64_t i = 0; i < C * KH * KW; i++) sum += kv[o * C * KH * KW + i];
    if (cv) cv[o] = (int32_t)(sum * za);
    sv[o] = 1e-3f * (float)(1 + test_rand() % 100);
  }
  tk_fill(arr[oi], NAN);
  for (int i = 0; i < na; i++) {
    arr2[i] = tk_array_for(args[i]);
    memcpy(arr2[i]->data, arr[i]->data, (size_t)tk_numel(arr[i]) * (size_t)((arr[i]->dtype.bits + 7) / 8));
  }
  bool ok = true;
  if (tk_call(mod, "f", na, arr) || tk_call(ref_mod, "f", na, arr2)) {
    test_fail(__FILE__, __LINE__, "%s: run failed: %s", desc, kiln_last_error());
    ok = false;
  }
  double err = ok ? tk_rel_err(arr[oi], arr2[oi]) : 0;
  if (ok && !(err < 1e-6)) {
    test_fail(__FILE__, __LINE__, "%s: relative error %g against the unscheduled lowering", desc, err);
    ok = false;
  }
  if (ok) { /* (x - za) * w with zero padding (the sums exact in double), NCHW[ib]c in, NCHW[ob]c out */
    DLTensor *want = tk_array_for(out);
    TkConv ref = {.N = N, .C = C, .H = H, .W = W, .O = O, .KH = KH, .KW = KW, .ib = ib, .ob = ob, .real = C,
                  .stride = sh, .pad = p, .dilation = dl, .zero = za, .scale = sv, .relu = relu};
    tk_conv2d_ref(&ref, arr[0], ka, want);
    err = tk_rel_err(arr[oi], want);
    if (!(err < 1e-6)) {
      test_fail(__FILE__, __LINE__, "%s: relative error %g against a naive int64 convolution", desc, err);
      ok = false;
    }
    kiln_array_free(want);
  }
  for (int i = 0; i < na; i++) kiln_array_free(arr[i]), kiln_array_free(arr2[i]);
  if (big) kiln_array_free(ka);
  kiln_module_free(mod);
  kiln_module_free(ref_mod);
  return ok;
}

static void test_conv_random(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_int8.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(12); i++) run_conv_case(tm, i, i % 4 == 3);
}

static void test_conv_errors(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_int8.x86");
  CHECK_NN(tm);
  if (!tm) return;
  /* an RGB stem (3 channels padded to 4), ResNet's 7x7/2: the fallback's blocks are 8 columns, a point of the space */
  Workload *ws = wl_conv2d(tm->name, (int64_t[]){1, 4, 224, 224}, (int64_t[]){64, 4, 7, 7}, (int[]){2, 2},
                           (int[]){3, 3, 3, 3}, (int[]){1, 1}, "uint8", "int32");
  ConfigEntity *fs = template_fallback(tm, target_host(), ws);
  CHECK_NN(fs);
  if (fs) {
    CHECK_INT(cfg_split_inner(fs, "tile_ow"), 8);
    CHECK_INT(cfg_other_int(fs, "inline_pad", 0), 1); /* the words read from the input in place */
    CHECK_OK(tm->check(target_host(), fs, ws));
  }
  /* ResNet-50's 1x1 256 -> 64 at 56x56: the fallback is a point of the space with a block of 4s */
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 256, 56, 56}, (int64_t[]){64, 256, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "uint8", "int32");
  ConfigEntity *fb = template_fallback(tm, target_host(), wl);
  CHECK_NN(fb);
  if (fb) {
    CHECK(cfg_split_inner(fb, "tile_ic") % 4 == 0);
    CHECK_INT(cfg_split_inner(fb, "tile_ow"), 14); /* a long reduction keeps conv2d_NCHWc.x86's block */
    CHECK_OK(tm->check(target_host(), fb, wl));
    /* the task as the tuner builds it: placeholders, compute, schedule, a module */
    Schedule *ts = NULL;
    int nargs = 0;
    Tensor **targs = NULL;
    CHECK_OK(template_instantiate(tm, target_host(), wl, fb, &ts, &nargs, &targs));
    CHECK_INT(nargs, 5);
    KilnModule *m = ts ? kiln_build(ts, nargs, targs, "f", NULL, &copt) : NULL;
    CHECK_MSG(m != NULL, "%s", kiln_get_error());
    kiln_module_free(m);
  }
  /* a 1x1 layer with a short reduction (64 -> 256 at 56x56, 128 -> 512 at 28x28) takes half the columns at
   * batch 1: 7 x 2 chunks, a point of the space; at batch 2 conv2d_NCHWc.x86's block */
  const int64_t shorts[2][3] = {{64, 256, 56}, {128, 512, 28}};
  for (int i = 0; i < 2; i++)
    for (int64_t n = 1; n <= 2; n++) {
      Workload *w1 = wl_conv2d(tm->name, (int64_t[]){n, shorts[i][0], shorts[i][2], shorts[i][2]},
                               (int64_t[]){shorts[i][1], shorts[i][0], 1, 1}, (int[]){1, 1}, (int[]){0, 0, 0, 0},
                               (int[]){1, 1}, "uint8", "int32");
      ConfigEntity *f1 = template_fallback(tm, target_host(), w1);
      Workload *wf = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){n, shorts[i][0], shorts[i][2], shorts[i][2]},
                               (int64_t[]){shorts[i][1], shorts[i][0], 1, 1}, (int[]){1, 1}, (int[]){0, 0, 0, 0},
                               (int[]){1, 1}, "float32", "float32");
      ConfigEntity *ff = template_fallback(template_lookup("conv2d_NCHWc.x86"), target_host(), wf);
      CHECK_NN(f1);
      CHECK_NN(ff);
      if (!f1 || !ff) continue;
      CHECK_INT(cfg_split_inner(f1, "tile_ow"), n == 1 ? 7 : cfg_split_inner(ff, "tile_ow"));
      CHECK_OK(tm->check(target_host(), f1, w1));
    }
  /* a window with more input channels at batch 1 takes 14 columns x 2 chunks where conv2d_NCHWc.x86 takes 28 x 1
   * (3x3 64 @56, 3x3/2 64 -> 128 @56, 3x3 128 @28); 7 columns stay 7; three chunks (48 outputs) and batch 2
   * keep the block of 28 columns: {N, IC, OC, H = W, stride, columns} */
  const int64_t wins[6][6] = {{1, 64, 64, 56, 1, 14}, {1, 64, 128, 56, 2, 14}, {1, 128, 128, 28, 1, 14},
                              {1, 512, 512, 7, 1, 7},  {1, 64, 48, 56, 1, 28},  {2, 64, 64, 56, 1, 28}};
  for (int i = 0; i < 6; i++) {
    const int64_t *w = wins[i];
    Workload *wi = wl_conv2d(tm->name, (int64_t[]){w[0], w[1], w[3], w[3]}, (int64_t[]){w[2], w[1], 3, 3},
                             (int[]){(int)w[4], (int)w[4]}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, "uint8", "int32");
    ConfigEntity *fi = template_fallback(tm, target_host(), wi);
    CHECK_NN(fi);
    if (!fi) continue;
    CHECK_MSG(cfg_split_inner(fi, "tile_ow") == w[5], "%s: tile_ow %lld, expected %lld", wi->key,
              (long long)cfg_split_inner(fi, "tile_ow"), (long long)w[5]);
    CHECK_OK(tm->check(target_host(), fi, wi));
  }
  /* 6 input channels cannot be grouped by four */
  Workload *w6 = wl_conv2d(tm->name, (int64_t[]){1, 6, 8, 8}, (int64_t[]){16, 6, 1, 1}, (int[]){1, 1}, (int[]){0, 0, 0, 0},
                           (int[]){1, 1}, "uint8", "int32");
  CHECK(template_fallback(tm, target_host(), w6) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "6 input channels cannot be grouped by 4 for int8");
  Workload *w12 = wl_conv2d(tm->name, (int64_t[]){1, 12, 8, 8}, (int64_t[]){16, 12, 1, 1}, (int[]){1, 1},
                            (int[]){0, 0, 0, 0}, (int[]){1, 1}, "uint8", "int32");
  ConfigEntity *c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 6]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                            "[\"tile_ow\", \"sp\", [-1, 8]], [\"tile_oh\", \"ot\", 1]]");
  CHECK(tm->check(target_host(), c, w12) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_ic' inner part 6 is not a multiple of 4");
  Tensor *d = te_placeholder_c("d", 5, (int64_t[]){1, 2, 8, 8, 8}, DT_U8), *df = te_placeholder_c("df", 5, (int64_t[]){1, 2, 8, 8, 8}, DT_F32);
  Tensor *k = te_placeholder_c("k", 6, (int64_t[]){1, 2, 1, 1, 1, 16}, DT_U32), *k2 = te_placeholder_c("k2", 6, (int64_t[]){1, 2, 1, 1, 2, 16}, DT_U32);
  int64_t n16 = 16, n8 = 8;
  Tensor *comp = te_placeholder_c("c", 1, &n16, DT_I32), *scale = te_placeholder_c("s", 1, &n16, DT_F32);
  Tensor *comp8 = te_placeholder_c("c8", 1, &n8, DT_I32);
  const int st[2] = {1, 1}, pd[4] = {0, 0, 0, 0}, dl[2] = {1, 1};
  CHECK(topi_x86_conv2d_NCHWc_int8(df, k2, comp, scale, st, pd, dl, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "data must be uint8 NCHW[x]c");
  CHECK(topi_x86_conv2d_NCHWc_int8(d, k, comp, scale, st, pd, dl, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "do not match data's 2 x 8 channels");
  CHECK(topi_x86_conv2d_NCHWc_int8(d, k2, comp8, scale, st, pd, dl, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "compensation must be int32 [16]");
  CHECK(topi_x86_conv2d_NCHWc_int8(d, k2, comp, comp, st, pd, dl, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the scale must be float32 [16]");
  CHECK(topi_x86_conv2d_NCHWc_int8(d, k2, comp, scale, st, pd, dl, 300) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "zero point 300 is not a uint8 value");
  CHECK(topi_x86_conv2d_NCHWc_int8(d, k2, NULL, scale, st, pd, dl, 7) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the input zero point 7 needs its compensation");
  CHECK(topi_x86_pack_kernel_int8(te_placeholder_c("w", 4, (int64_t[]){16, 12, 1, 1}, DT_I8), 6, 16) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "blocks 6 (input, a multiple of 4) and 16 (output) must divide");
  CHECK(topi_x86_pack_kernel_int8(te_placeholder_c("w", 4, (int64_t[]){16, 12, 1, 1}, DT_F32), 4, 16) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "expected an int8 OIHW kernel");
  /* an anchor that is not the int8 conv's */
  Tensor *out = topi_x86_conv2d_NCHWc_int8(d, k2, comp, scale, st, pd, dl, 3);
  CHECK_NN(out);
  if (!out) return;
  Schedule *s = te_create_schedule(1, &out);
  CHECK(tm->schedule(target_host(), s, fb, d, 1, &out) != 0);
  CHECK_CONTAINS(kiln_get_error(), "expected conv2d_NCHWc_int8");
}

/* cast<t>(clip(round(A), lo, hi)) on 16 lanes, the round bound by a Let
 * (as the clip's compute inlines it) or inline; built for this CPU and
 * without AVX-512, each against C's float sequence bit for bit. */
static void requant_case(DType t, double lo, double hi, bool let) {
  static const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0.5f, -0.5f, 1.5f, 2.5f, -1.5f,
                                  -2.5f, 0.49999997f, 3.5f, 126.5f, 127.5f, 128.5f, -127.5f, -128.5f, -129.5f,
                                  199.5f, 200.5f, 254.5f, 255.49998f, 255.5f, 256.0f, -100.5f, 50.5f, 2147483520.0f,
                                  2147483648.0f, 4294967296.0f, -2147483648.0f, -3e9f, 1e30f, -1e30f, 1e-40f, -1e-40f};
  const int ns = (int)(sizeof special / sizeof special[0]);
  int64_t n = 16 * 12;
  Tensor *A = te_placeholder_c("A", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Expr *r = ir_call1(INTRIN_round, te_read1(A, v[0])), *x = ir_var("x", DT_F32);
  Expr *clip = let ? ir_let(x, r, ir_min(ir_max(x, ir_f32(lo)), ir_f32(hi))) : ir_min(ir_max(r, ir_f32(lo)), ir_f32(hi));
  Tensor *Q = te_compute("Q", 1, A->shape, v, ir_cast(t, clip), NULL);
  Schedule *s = te_create_schedule(1, &Q);
  Stage *st = sch_stage(s, Q);
  IterVar *o, *in;
  CHECK_OK(stage_split(st, stage_axis(st, 0), ir_i32(16), &o, &in));
  CHECK_OK(stage_vectorize(st, in));
  LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){A, Q}, "f", NULL);
  char *src = f ? codegen_c(&f, 1, 0, NULL) : NULL;
  CHECK_NN(src);
  if (!src) return;
  CHECK_CONTAINS(src, "kiln_requant_f32x16_");
  CHECK_CONTAINS(src, t.code == kDLUInt ? "_mm512_cvtusepi32_epi8(r)" : "_mm512_cvtsepi32_epi8(r)");
  free(src);
  DLTensor *a = tk_array(1, &n, DT_F32), *q = tk_array(1, &n, t);
  float *pa = a->data;
  for (int64_t i = 0; i < n; i++)
    pa[i] = i < ns ? special[i] : (float)test_rand_between(-1600, 1600) / 4.0f + (test_rand() % 2 ? 1e-3f : 0.0f);
  static const CompileOptions generic = {NULL, "-O1 -fPIC -std=gnu11", NULL};
  const CompileOptions *opts[2] = {&copt, &generic};
  for (int k = 0; k < 2; k++) {
    KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, Q}, "f", NULL, opts[k]);
    CHECK_NN(mod);
    if (!mod) continue;
    memset(q->data, 0x5a, (size_t)n);
    CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, q}));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
      float y = nearbyintf(pa[i]);
      y = y > (float)lo ? y : (float)lo;
      y = y < (float)hi ? y : (float)hi;
      int32_t w = (int32_t)y;
      bad += t.code == kDLUInt ? ((uint8_t *)q->data)[i] != (uint8_t)w : ((int8_t *)q->data)[i] != (int8_t)w;
    }
    if (bad)
      test_fail(__FILE__, __LINE__, "%s clip(round(x), %g, %g)%s, %s: %d of %d values differ", dt_str(t), lo, hi,
                let ? " (let)" : "", k ? "generic C" : "native", bad, (int)n);
    kiln_module_free(mod);
  }
  kiln_array_free(a);
  kiln_array_free(q);
}

static void test_requant_cast(void) {
  requant_case(DT_U8, 0, 255, true);
  requant_case(DT_U8, 0, 255, false);
  requant_case(DT_U8, 3, 200, true);
  requant_case(DT_I8, -128, 127, true);
  requant_case(DT_I8, -100, 50, false);
}

/* QuantizeLinear(DequantizeLinear(x, sd, zd), sq, zq) as ONNX imports them */
static GNode *qdq(Graph *g, GNode *x, double sd, double zd, double sq, double zq) {
  GAttrs cf = gattrs_new(), cu = gattrs_new(), ca = gattrs_new();
  ga_str(&cf, "dtype", "float32");
  ga_str(&cu, "dtype", "uint8");
  ga_float(&ca, "a_min", 0);
  ga_float(&ca, "a_max", 255);
  GNode *c = graph_call(g, "cast", 1, &x, cf, NULL);
  c = graph_call(g, "subtract", 2, (GNode *[]){c, graph_scalar(g, zd, DT_F32)}, gattrs_new(), NULL);
  c = graph_call(g, "multiply", 2, (GNode *[]){c, graph_scalar(g, sd, DT_F32)}, gattrs_new(), NULL);
  c = graph_call(g, "divide", 2, (GNode *[]){c, graph_scalar(g, sq, DT_F32)}, gattrs_new(), NULL);
  c = graph_call(g, "round", 1, &c, gattrs_new(), NULL);
  c = graph_call(g, "add", 2, (GNode *[]){c, graph_scalar(g, zq, DT_F32)}, gattrs_new(), NULL);
  c = graph_call(g, "clip", 1, &c, ca, NULL);
  return graph_call(g, "cast", 1, &c, cu, NULL);
}

static void test_requant_identity(void) {
  static const struct {
    double sd, zd, sq, zq;
    bool gone;
  } cases[] = {{0.0100733, 0, 0.0100733, 0, true},     {0.37, 128, 0.37, 128, true},
               {0.0100733, 0, 0.01007331, 0, true},    {0.0100733, 0, 0.0100733 * 1.01, 0, false},
               {0.0100733, 3, 0.0100733, 4, false}};
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    Graph *g = graph_new();
    GNode *x = graph_var(g, "x", ttype(DT_U8, 1, (int64_t[]){8}));
    GNode *q = qdq(g, x, cases[i].sd, cases[i].zd, cases[i].sq, cases[i].zq);
    CHECK_NN(q);
    if (!q) continue;
    graph_add_output(g, q);
    Graph *r = graph_simplify_requantize(g);
    CHECK_NN(r);
    if (r) {
      const GNode *o = r->outputs.data[0];
      CHECK_MSG((o->kind == GN_VAR) == cases[i].gone, "case %d: the output is %s", i,
                o->kind == GN_VAR ? "x" : o->op->name);
      CHECK_MSG(!cases[i].gone || r->nodes.len == 1, "case %d: %d nodes left", i, r->nodes.len); /* none dead */
    }
    graph_free(r);
    graph_free(g);
  }
}

/* requantize.c's rule 5: a DequantizeLinear's subtract of a zero point
 * +0 goes (exact); -0 (x - -0 turns -0 into +0) and 3 stay */
static void test_requant_zero_subtract(void) {
  static const struct {
    double z;
    bool gone;
  } cases[] = {{0.0, true}, {-0.0, false}, {3.0, false}};
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    Graph *g = graph_new();
    GNode *x = graph_var(g, "x", ttype(DT_U8, 1, (int64_t[]){8}));
    GAttrs cf = gattrs_new();
    ga_str(&cf, "dtype", "float32");
    GNode *c = graph_call(g, "cast", 1, &x, cf, NULL);
    c = graph_call(g, "subtract", 2, (GNode *[]){c, graph_scalar(g, cases[i].z, DT_F32)}, gattrs_new(), NULL);
    c = graph_call(g, "multiply", 2, (GNode *[]){c, graph_scalar(g, 0.25, DT_F32)}, gattrs_new(), NULL);
    CHECK_NN(c);
    if (!c) continue;
    graph_add_output(g, c);
    Graph *r = graph_simplify_requantize(g);
    CHECK_NN(r);
    if (r) {
      const GNode *m = r->outputs.data[0];
      bool sub = m->kind == GN_CALL && m->args[0]->kind == GN_CALL && !strcmp(m->args[0]->op->name, "subtract");
      CHECK_MSG(sub != cases[i].gone, "case %d (zero point %g): the subtract %s", i, cases[i].z,
                sub ? "stayed" : "went");
      CHECK_MSG(ttype_eq(&m->type, &c->type), "case %d: the output's type changed", i);
    }
    graph_free(r);
    graph_free(g);
  }
}

static void test_op_errors(void) {
  Graph *g = graph_new();
  GAttrs ax = gattrs_new();
  ga_int(&ax, "axis", 1);
  GNode *xf = graph_var(g, "xf", ttype(DT_F32, 2, (int64_t[]){4, 3}));
  GNode *x = graph_var(g, "x", ttype(DT_I8, 2, (int64_t[]){4, 3}));
  GNode *xs = graph_var(g, "xs", ttype(DT_U8, 0, NULL));
  GNode *s3 = graph_var(g, "s3", ttype(DT_F32, 1, (int64_t[]){3})), *s4 = graph_var(g, "s4", ttype(DT_F32, 1, (int64_t[]){4}));
  GNode *zu = graph_var(g, "zu", ttype(DT_U8, 1, (int64_t[]){3}));
  CHECK(graph_call(g, "qnn.dequantize", 2, (GNode *[]){xf, s3}, ax, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "x must be int8 or uint8, got float32");
  CHECK(graph_call(g, "qnn.dequantize", 2, (GNode *[]){x, s4}, ax, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "scale (4) must be one value or one per element of axis 1 (3)");
  CHECK(graph_call(g, "qnn.dequantize", 3, (GNode *[]){x, s3, zu}, ax, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the zero point's type uint8 differs from x's int8");
  GAttrs a0 = gattrs_new();
  ga_int(&a0, "axis", 0);
  CHECK(graph_call(g, "qnn.dequantize", 2, (GNode *[]){xs, s3}, a0, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "must be one value for a scalar x");
  GAttrs a5 = gattrs_new();
  ga_int(&a5, "axis", 5);
  CHECK(graph_call(g, "qnn.dequantize", 2, (GNode *[]){x, s3}, a5, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "axis 5 is out of range");
  GNode *ok = graph_call(g, "qnn.dequantize", 2, (GNode *[]){x, s3}, ax, NULL);
  CHECK(ok != NULL && dt_eq(ok->type.dtype, DT_F32));
  /* nn.contrib_dense_vnni: float data, an unpacked weight */
  GNode *d = graph_var(g, "d", ttype(DT_U8, 2, (int64_t[]){2, 8}));
  GNode *pw = graph_var(g, "pw", ttype(DT_U32, 3, (int64_t[]){1, 2, 16}));
  GNode *c = graph_var(g, "c", ttype(DT_I32, 1, (int64_t[]){16})), *s = graph_var(g, "s", ttype(DT_F32, 1, (int64_t[]){16}));
  GNode *df = graph_var(g, "df", ttype(DT_F32, 2, (int64_t[]){2, 8}));
  CHECK(graph_call(g, "nn.contrib_dense_vnni", 4, (GNode *[]){df, pw, c, s}, gattrs_new(), NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "data must be uint8 [M, K]");
  CHECK(graph_call(g, "nn.contrib_dense_vnni", 4, (GNode *[]){d, x, c, s}, gattrs_new(), NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "weight must be int8 quadruples packed as uint32");
  CHECK(graph_call(g, "nn.contrib_dense_vnni", 4, (GNode *[]){d, pw, s, s}, gattrs_new(), NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the compensation must be int32 [16]");
  GNode *r = graph_call(g, "nn.contrib_dense_vnni", 4, (GNode *[]){d, pw, c, s}, gattrs_new(), NULL);
  CHECK(r != NULL && r->type.shape[0] == 2 && r->type.shape[1] == 16);
  graph_free(g);
}

const TestCase int8_tests[] = {
    {"dense_random", test_dense_random},
    {"dense_errors", test_dense_errors},
    {"op_errors", test_op_errors},
    {"requant_cast", test_requant_cast},
    {"requant_identity", test_requant_identity},
    {"requant_zero_subtract", test_requant_zero_subtract},
    {"conv_random", test_conv_random},
    {"conv_errors", test_conv_errors},
    {NULL, NULL},
};
