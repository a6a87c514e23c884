/*
 * test_x86.c - the x86 templates against direct references.
 *
 * For each template, random workloads (odd sizes, stride 1 and 2,
 * asymmetric padding, dilation, 1x1 and 3x3 kernels, depthwise with
 * channel multipliers) each scheduled with a random config drawn from the
 * template's own space, with and without a fused epilogue (bias + relu, a
 * residual add + relu, the conv and its relu both written), built and run
 * on random data, and compared with a naive C computation within 1e-5
 * relative error (dense also against its unscheduled lowering, 1e-6).
 * Then configs that do not fit the compute are rejected
 * with a reason, and each template's instantiate() runs with its fallback.
 * The many builds use -O1.
 */
#include <math.h>
#include <stdlib.h>

#include "autotune/autotune.h"
#include "kernel_util.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

/* $KILN_X86_CASES scales the number of random cases (tk_template_cases,
 * stress runs); $KILN_X86_VERBOSE prints each case. */
static void trace(const char *desc) {
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
}


static float *host(int64_t n) {
  float *p = xmalloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) p[i] = test_randf();
  return p;
}

static DLTensor *dev(Tensor *t, const float *src) {
  DLTensor *a = tk_array_for(t);
  if (src) memcpy(a->data, src, sizeof(float) * (size_t)tk_numel(a));
  return a;
}

/* [N, C, H, W] -> [N, C/b, H, W, b] */
static void pack5(const float *s, int64_t N, int64_t C, int64_t H, int64_t W, int64_t b, float *d) {
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++)
          d[((((n * (C / b) + c / b) * H + h) * W + w) * b) + c % b] = s[((n * C + c) * H + h) * W + w];
}

/* [O, I, KH, KW] -> [O/ob, I/ib, KH, KW, ib, ob] */
static void pack6(const float *s, int64_t O, int64_t I, int64_t KH, int64_t KW, int64_t ib, int64_t ob, float *d) {
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < I; i++)
      for (int64_t y = 0; y < KH; y++)
        for (int64_t x = 0; x < KW; x++)
          d[(((((o / ob) * (I / ib) + i / ib) * KH + y) * KW + x) * ib + i % ib) * ob + o % ob] =
              s[((o * I + i) * KH + y) * KW + x];
}

typedef struct ConvCase {
  int64_t N, C, H, W, O, KH, KW;
  int sh, sw, pt, pl, pb, pr, dh, dw;
  bool depthwise;
  int64_t OH, OW;
} ConvCase;

/* out[n, o, y, x] (NCHW); weight OIHW, or [O, 1, KH, KW] for depthwise. */
static void ref_conv(const ConvCase *c, const float *d, const float *k, float *out) {
  int64_t m = c->depthwise ? c->O / c->C : 1;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t o = 0; o < c->O; o++)
      for (int64_t y = 0; y < c->OH; y++)
        for (int64_t x = 0; x < c->OW; x++) {
          double s = 0;
          int64_t i0 = c->depthwise ? o / m : 0, i1 = c->depthwise ? o / m + 1 : c->C;
          for (int64_t i = i0; i < i1; i++)
            for (int64_t ky = 0; ky < c->KH; ky++)
              for (int64_t kx = 0; kx < c->KW; kx++) {
                int64_t ih = y * c->sh + ky * c->dh - c->pt, iw = x * c->sw + kx * c->dw - c->pl;
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                double kv = c->depthwise ? k[(o * c->KH + ky) * c->KW + kx] : k[((o * c->C + i) * c->KH + ky) * c->KW + kx];
                s += d[((n * c->C + i) * c->H + ih) * c->W + iw] * kv;
              }
          out[((n * c->O + o) * c->OH + y) * c->OW + x] = (float)s;
        }
}

static ConvCase random_conv(bool depthwise) {
  ConvCase c = {0};
  c.depthwise = depthwise;
  c.N = test_rand_between(1, 4); /* batch > 1 spaces have a tile_n knob */
  c.C = test_pick(8, (int64_t[]){1, 2, 3, 4, 5, 6, 8, 16});
  c.O = depthwise ? c.C * test_pick(3, (int64_t[]){1, 1, 2}) : test_pick(8, (int64_t[]){1, 2, 3, 4, 6, 8, 12, 16});
  c.KH = c.KW = test_pick(4, (int64_t[]){1, 3, 3, 1});
  if (test_rand() % 6 == 0) c.KW = 2; /* a non-square window */
  c.sh = (int)test_rand_between(1, 2);
  c.sw = test_rand() % 4 ? c.sh : 3 - c.sh;
  c.dh = c.dw = test_rand() % 6 == 0 ? 2 : 1;
  c.pt = (int)test_rand_between(0, 2), c.pl = (int)test_rand_between(0, 2);
  c.pb = (int)test_rand_between(0, 1), c.pr = (int)test_rand_between(0, 2);
  c.H = test_rand_between(4, 11);
  c.W = test_rand_between(4, 13);
  /* a dilated 3x3 window spans 5 rows: widen an input too small for it
   * (no extra draw, so the other cases stay as they were) */
  int64_t wh = (c.KH - 1) * c.dh + 1, ww = (c.KW - 1) * c.dw + 1;
  if (c.H + c.pt + c.pb < wh) c.H = wh - c.pt - c.pb;
  if (c.W + c.pl + c.pr < ww) c.W = ww - c.pl - c.pr;
  c.OH = (c.H + c.pt + c.pb - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  c.OW = (c.W + c.pl + c.pr - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  return c;
}

typedef enum Epi { EPI_NONE, EPI_BIAS_RELU, EPI_RESIDUAL_RELU, EPI_TWO_OUTPUTS, EPI_UNPACK, EPI__COUNT } Epi;
static const char *epi_name[] = {"none", "bias+relu", "residual+relu", "conv and relu(conv)", "unpacked to NCHW"};

/* One conv (or depthwise) case through a template; returns false on a
 * failure (reported). */
static bool run_conv_case(const Template *tm, bool depthwise, Epi epi, int caseno) {
  ConvCase c = random_conv(depthwise);
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){c.N, c.C, c.H, c.W}, (int64_t[]){c.O, depthwise ? 1 : c.C, c.KH, c.KW},
                           (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr}, (int[]){c.dh, c.dw}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (!cs) return false;
  int64_t size = space_size(cs);
  int64_t idx = (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)size);
  ConfigEntity *cfg = space_get(cs, idx);
  /* every third conv case: a column block that does not divide the
   * width (the space holds divisors only; the fallback takes such a
   * block for a prime width), so the last block is a guarded tail */
  if (!depthwise && caseno % 3 == 2 && c.OW >= 3) {
    int64_t r = 2 + (int64_t)(test_rand() % (uint64_t)(c.OW - 2));
    while (r < c.OW && c.OW % r == 0) r++;
    if (r < c.OW) config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, r});
  }
  CHECK_OK(tm->check(target_host(), cfg, wl));
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  const char *desc = kfmt("case %d: %s %s: config %lld %s, epilogue %s", caseno, tm->name, wl->key, (long long)idx,
                          config_entity_json(cfg), epi_name[epi]);
  trace(desc);
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){c.N, c.C / ib, c.H, c.W, ib}, DT_F32);
  Tensor *kernel = depthwise ? te_placeholder_c("kernel", 6, (int64_t[]){c.O / ob, 1, c.KH, c.KW, 1, ob}, DT_F32)
                             : te_placeholder_c("kernel", 6, (int64_t[]){c.O / ob, c.C / ib, c.KH, c.KW, ib, ob}, DT_F32);
  int st[2] = {c.sh, c.sw}, pd[4] = {c.pt, c.pl, c.pb, c.pr}, dl[2] = {c.dh, c.dw};
  /* the template's compute (the graph layer's path); the direct call too */
  Tensor *conv = tm->compute(target_host(), wl, cfg, 2, (Tensor *[]){data, kernel});
  Tensor *conv2 = depthwise ? topi_x86_depthwise_conv2d_NCHWc(data, kernel, st, pd, dl, DT_F32)
                            : topi_x86_conv2d_NCHWc(data, kernel, st, pd, dl, DT_F32);
  CHECK(conv2 && conv2->ndim == 5);
  CHECK_NN(conv);
  if (!conv) return false;
  Tensor *bias = NULL, *res = NULL, *outs[2] = {conv, NULL};
  int nout = 1;
  if (epi == EPI_BIAS_RELU) {
    bias = te_placeholder_c("bias", 4, (int64_t[]){c.O / ob, 1, 1, ob}, DT_F32);
    Expr **v = te_axis_vars(5, NULL);
    Tensor *b = te_compute("T_add", 5, conv->shape, v,
                           ir_add(te_read(conv, 5, v), te_read4(bias, v[1], ir_i32(0), ir_i32(0), v[4])), "broadcast");
    outs[0] = tk_relu5(b);
  } else if (epi == EPI_RESIDUAL_RELU) {
    res = te_placeholder_c("residual", 5, (int64_t[]){c.N, c.O / ob, c.OH, c.OW, ob}, DT_F32);
    Expr **v = te_axis_vars(5, NULL);
    Tensor *a = te_compute("T_add", 5, conv->shape, v, ir_add(te_read(conv, 5, v), te_read(res, 5, v)), "elemwise");
    outs[0] = tk_relu5(a);
  } else if (epi == EPI_TWO_OUTPUTS) {
    outs[1] = tk_relu5(conv);
    nout = 2;
  } else if (epi == EPI_UNPACK) { /* an output of another shape: the conv goes to memory */
    outs[0] = topi_x86_unpack_NCHWc(conv);
  }
  Schedule *s = te_create_schedule(nout, outs);
  if (tm->schedule(target_host(), s, cfg, conv, nout, outs)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  Tensor *args[6];
  int na = 0;
  args[na++] = data;
  args[na++] = kernel;
  if (bias) args[na++] = bias;
  if (res) args[na++] = res;
  for (int i = 0; i < nout; i++) args[na++] = outs[i];
  KilnModule *mod = kiln_build(s, na, args, "f", NULL, &copt);
  if (!mod) {
    test_fail(__FILE__, __LINE__, "%s: build failed: %s", desc, kiln_get_error());
    return false;
  }
  /* data */
  int64_t nd = c.N * c.C * c.H * c.W, nk = c.O * (depthwise ? 1 : c.C) * c.KH * c.KW, no = c.N * c.O * c.OH * c.OW;
  float *d = host(nd), *k = host(nk), *b = host(c.O), *r = host(no), *ref = host(no), *ref5 = host(no),
        *tmp = host(nd > nk ? nd : nk);
  DLTensor *arr[6];
  na = 0;
  pack5(d, c.N, c.C, c.H, c.W, ib, tmp);
  arr[na++] = dev(data, tmp);
  if (depthwise) pack6(k, c.O, 1, c.KH, c.KW, 1, ob, tmp);
  else pack6(k, c.O, c.C, c.KH, c.KW, ib, ob, tmp);
  arr[na++] = dev(kernel, tmp);
  if (bias) arr[na++] = dev(bias, b); /* [O/ob, 1, 1, ob] is b in order */
  float *r5 = host(no);
  pack5(r, c.N, c.O, c.OH, c.OW, ob, r5);
  if (res) arr[na++] = dev(res, r5);
  int first_out = na;
  for (int i = 0; i < nout; i++) {
    arr[na] = dev(outs[i], NULL);
    tk_fill(arr[na++], NAN);
  }
  bool ok = true;
  if (tk_call(mod, "f", na, arr)) {
    test_fail(__FILE__, __LINE__, "%s: run failed: %s", desc, kiln_last_error());
    ok = false;
  }
  /* reference */
  ref_conv(&c, d, k, ref);
  if (epi == EPI_UNPACK) memcpy(ref5, ref, sizeof(float) * (size_t)no);
  else pack5(ref, c.N, c.O, c.OH, c.OW, ob, ref5);
  for (int o = 0; ok && o < nout; o++) {
    DLTensor *want = dev(outs[o], ref5);
    float *w = want->data;
    int64_t occs = c.O / ob;
    for (int64_t i = 0; i < no; i++) {
      if (epi == EPI_UNPACK) break;
      bool is_relu = epi == EPI_BIAS_RELU || epi == EPI_RESIDUAL_RELU || (epi == EPI_TWO_OUTPUTS && o == 1);
      if (epi == EPI_BIAS_RELU) w[i] += b[((i / ob) / (c.OH * c.OW)) % occs * ob + i % ob];
      if (epi == EPI_RESIDUAL_RELU) w[i] += r5[i];
      if (is_relu && w[i] < 0) w[i] = 0;
    }
    double err = tk_rel_err(arr[first_out + o], want);
    if (!(err < 1e-5)) {
      test_fail(__FILE__, __LINE__, "%s: output %d relative error %g", desc, o, err);
      ok = false;
    }
    kiln_array_free(want);
  }
  for (int i = 0; i < na; i++) kiln_array_free(arr[i]);
  free(d), free(k), free(b), free(r), free(ref), free(ref5), free(tmp), free(r5);
  kiln_module_free(mod);
  return ok;
}

static void test_conv2d_random(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(24); i++) run_conv_case(tm, false, (Epi)(i % EPI__COUNT), i);
}

static void test_depthwise_random(void) {
  const Template *tm = template_lookup("depthwise_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(22); i++) run_conv_case(tm, true, (Epi)(i % EPI__COUNT), i);
}

/* ---- dense ---- */

/* A random dense workload with a random config of the template's space,
 * or (fallback) with more rows and the fallback config, whose row block
 * need not divide M (a tail block). */
static bool run_dense_case_with(const Template *tm, int caseno, bool fallback, int64_t M, int64_t N, int64_t K,
                                ConfigEntity *given) {
  bool pack = strstr(tm->name, "dense_pack") != NULL;
  Workload *wl = wl_dense(tm->name, M, N, K, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (!cs) return false;
  int64_t idx = fallback || given ? -1 : (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)space_size(cs));
  ConfigEntity *cfg = given ? given : fallback ? template_fallback(tm, target_host(), wl) : space_get(cs, idx);
  CHECK_NN(cfg);
  if (!cfg) return false;
  CHECK_OK(tm->check(target_host(), cfg, wl));
  int epi = caseno % 3; /* none, bias, bias + relu */
  bool prepacked = pack && caseno % 2;
  const char *desc = kfmt("case %d: %s %s: config %lld %s, epilogue %d%s", caseno, tm->name, wl->key, (long long)idx,
                          config_entity_json(cfg), epi, prepacked ? ", prepacked weight" : "");
  trace(desc);
  int64_t bn = pack ? cfg_split_inner(cfg, "tile_x") : 1;
  Tensor *data = te_placeholder_c("data", 2, (int64_t[]){M, K}, DT_F32);
  Tensor *weight = prepacked ? te_placeholder_c("weight", 3, (int64_t[]){N / bn, K, bn}, DT_F32)
                             : te_placeholder_c("weight", 2, (int64_t[]){N, K}, DT_F32);
  Tensor *bias = epi ? te_placeholder_c("bias", 1, &N, DT_F32) : NULL;
  Tensor *out = tm->compute(target_host(), wl, cfg, bias ? 3 : 2, (Tensor *[]){data, weight, bias});
  CHECK_NN(out);
  if (!out) return false;
  Tensor *anchor = bias ? out->inputs[0] : out;
  if (epi == 2) {
    Expr **v = te_axis_vars(2, NULL);
    out = te_compute("T_relu", 2, out->shape, v, ir_max(te_read2(out, v[0], v[1]), ir_f32(0)), "elemwise");
  }
  Schedule *s = te_create_schedule(1, &out);
  if (tm->schedule(target_host(), s, cfg, anchor, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  Tensor *args[4] = {data, weight, bias ? bias : out, out};
  int na = bias ? 4 : 3;
  DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, desc);
  if (!arr) return false;
  const float *d = arr[0]->data, *wv = arr[1]->data, *b = bias ? arr[2]->data : NULL;
  DLTensor *want = tk_array_for(out);
  float *ref = want->data;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double sum = epi ? b[n] : 0;
      for (int64_t k = 0; k < K; k++)
        sum += (double)d[m * K + k] * (prepacked ? wv[((n / bn) * K + k) * bn + n % bn] : wv[n * K + k]);
      if (epi == 2 && sum < 0) sum = 0;
      ref[m * N + n] = (float)sum;
    }
  double err = tk_rel_err(arr[na - 1], want);
  bool ok = err < 1e-5;
  if (!ok) test_fail(__FILE__, __LINE__, "%s: relative error %g against a naive product", desc, err);
  kiln_array_free(want);
  tk_arrays_free(na, arr);
  return ok;
}

static bool run_dense_case(const Template *tm, int caseno, bool fallback) {
  int64_t M = fallback ? test_rand_between(1, 40) : test_rand_between(1, 20);
  int64_t N = test_pick(10, (int64_t[]){1, 3, 7, 8, 16, 24, 32, 40, 48, 64});
  int64_t K = test_rand_between(1, 45);
  return run_dense_case_with(tm, caseno, fallback, M, N, K, NULL);
}

static void test_dense_nopack_random(void) {
  const Template *tm = template_lookup("dense_nopack.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(21); i++) run_dense_case(tm, i, false);
}

static void test_dense_pack_random(void) {
  const Template *tm = template_lookup("dense_pack.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(21); i++) run_dense_case(tm, i, false);
}

/* The fallback's row block (up to 12 rows) with a tail when it does not
 * divide M: the guarded last block reads and writes only rows < M. */
static void test_dense_pack_fallback_tail(void) {
  const Template *tm = template_lookup("dense_pack.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(12); i++) run_dense_case(tm, i, true);
}

/* The fallback on layer shapes of the kind it is chosen for: two vectors
 * of columns where they divide N (one row: 4 to 8 vectors, a GEMV's
 * independent accumulators), a divisor of M from 12 to 8 rows, else
 * the fewest blocks of up to 12 rows as even as they go, with a tail
 * (197: 12 and 5; 49: 10 and 9, not 12 and 1), column blocks grouped along N only
 * while the task's weight panel stays small; each config a point of the
 * space and right against the unscheduled lowering. */
static void test_dense_pack_fallback_shapes(void) {
  const Template *tm = template_lookup("dense_pack.x86");
  CHECK_NN(tm);
  if (!tm) return;
  int64_t lanes = target_host()->vector_lanes;
  /* M, N, K, the rows the fallback must pick */
  static const int64_t cases[][4] = {{197, 64, 96, 12}, {49, 96, 40, 10}, {64, 128, 24, 8},  {40, 48, 33, 10},
                                     {1, 64, 32, 1},    {13, 64, 20, 7},  {1, 1000, 24, 1}, {1, 48, 16, 1}};
  for (int i = 0; i < 8; i++) {
    const int64_t *c = cases[i];
    Workload *wl = wl_dense(tm->name, c[0], c[1], c[2], "float32", "float32");
    ConfigSpace *cs = template_space(tm, target_host(), wl);
    ConfigEntity *fb = template_fallback(tm, target_host(), wl);
    CHECK_NN(cs);
    CHECK_NN(fb);
    if (!cs || !fb) return;
    const int64_t *ty = cfg_split(fb, "tile_y", NULL), *tx = cfg_split(fb, "tile_x", NULL);
    int64_t bn = c[0] > 1 && c[1] % (2 * lanes) == 0 ? 2 * lanes : x86_channel_block(c[1], lanes);
    /* one row (a GEMV): 4 to 8 vectors where they divide N (1000: 5 of 8
     * lanes), else fewer (48: 3 of 16) */
    if (c[0] == 1 && lanes == 16) bn = c[1] == 64 ? 64 : c[1] == 1000 ? 40 : 48;
    if (lanes == 16) CHECK_INT(ty[2], c[3]);
    CHECK_INT(tx[2], bn);
    CHECK_MSG(tx[1] * bn * c[2] * 4 <= 256 << 10, "%s: weight panel of %lld columns", config_entity_json(fb),
              (long long)(tx[1] * bn));
    CHECK_MSG(space_index_of(cs, fb) == fb->index && fb->index >= 0, "M %lld N %lld K %lld: fallback %s not in the space",
              (long long)c[0], (long long)c[1], (long long)c[2], config_entity_json(fb));
    run_dense_case_with(tm, i, true, c[0], c[1], c[2], NULL);
  }
}

/* Blocks wider than one vector (tile_x's inner part 32, 48, 64 with 16
 * lanes) are cut into vectors, each its own register: right against the
 * unscheduled lowering and a naive product, with tails and epilogues. */
static void test_dense_pack_wide_blocks(void) {
  const Template *tm = template_lookup("dense_pack.x86");
  CHECK_NN(tm);
  static const int64_t cases[][5] = {{13, 96, 37, 6, 32}, {7, 96, 20, 4, 48}, {29, 128, 16, 14, 64}, {5, 64, 9, 5, 32}};
  for (int i = 0; tm && i < 4; i++) {
    const int64_t *c = cases[i];
    ConfigEntity *cfg = config_new();
    config_set_split(cfg, "tile_y", 3, (int64_t[]){-1, 1, c[3]});
    config_set_split(cfg, "tile_x", 3, (int64_t[]){-1, 1, c[4]});
    config_set_split(cfg, "tile_k", 2, (int64_t[]){-1, 1});
    config_set_split(cfg, "tile_inner", 2, (int64_t[]){-1, 1});
    run_dense_case_with(tm, i, false, c[0], c[1], c[2], cfg);
  }
}

/* tile_y: the divisor splits first (TVM's order, so their places stay),
 * then [-1, 1, r] for the row blocks r = 2..16 that do not divide M; the
 * fallback, a tail block for a prime M, is a point of the space. */
static void test_dense_pack_space_tails(void) {
  const Template *tm = template_lookup("dense_pack.x86");
  CHECK_NN(tm);
  if (!tm) return;
  for (int c = 0; c < 2; c++) {
    int64_t M = c ? 197 : 12;
    Workload *wl = wl_dense(tm->name, M, 64, 32, "float32", "float32");
    ConfigSpace *cs = template_space(tm, target_host(), wl);
    CHECK_NN(cs);
    if (!cs) return;
    const Knob *ty = space_knob(cs, "tile_y");
    CHECK_NN(ty);
    if (!ty) return;
    /* 12: 18 ordered pairs of divisors with product dividing 12, then 5,
     * 7, 8, 9, 10, 11 (6 tails); 197 (prime): 3 divisor splits, 15 tails */
    int64_t ndiv = c ? 3 : 18, ntail = c ? 15 : 6;
    CHECK_INT(ty->nchoices, ndiv + ntail);
    for (int64_t i = 0; i < ty->nchoices; i++) {
      const int64_t *e = ty->choices[i].ints;
      if (i < ndiv) CHECK_MSG(M % (e[1] * e[2]) == 0, "M %lld choice %lld: [-1, %lld, %lld] has a tail", (long long)M,
                              (long long)i, (long long)e[1], (long long)e[2]);
      else CHECK_MSG(e[1] == 1 && M % e[2] && e[2] <= 16, "M %lld choice %lld: [-1, %lld, %lld] is not a tail block",
                     (long long)M, (long long)i, (long long)e[1], (long long)e[2]);
    }
    ConfigEntity *fb = template_fallback(tm, target_host(), wl);
    CHECK_NN(fb);
    if (fb) CHECK_MSG(fb->index >= 0 && space_index_of(cs, fb) == fb->index, "M %lld: fallback %s not in the space",
                      (long long)M, config_entity_json(fb));
  }
}

/* ---- invalid configs ---- */

static void test_invalid_configs(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 9, 9}, (int64_t[]){16, 32, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  /* a channel block that does not divide the channels */
  ConfigEntity *c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 5]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                            "[\"tile_ow\", \"sp\", [-1, 3]], [\"unroll_kw\", \"ot\", false]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_ic': the parts multiply to 5, which does not divide the 32 input channels");
  Schedule *s;
  int na;
  Tensor **args;
  CHECK(template_instantiate(tm, target_host(), wl, c, &s, &na, &args) != 0);
  /* an ow tile wider than the output; one that does not divide it is
   * valid (the last block is a guarded tail) */
  c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 8]], [\"tile_oc\", \"sp\", [-1, 16]], "
                              "[\"tile_ow\", \"sp\", [-1, 12]], [\"unroll_kw\", \"ot\", false]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_ow': the parts multiply to 12, more than the 9 output columns");
  c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 8]], [\"tile_oc\", \"sp\", [-1, 16]], "
                              "[\"tile_ow\", \"sp\", [-1, 4]], [\"unroll_kw\", \"ot\", false]]");
  CHECK_OK(tm->check(target_host(), c, wl));
  /* a config whose blocks differ from the compute's layout */
  ConfigEntity *good = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 8]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                               "[\"tile_ow\", \"sp\", [-1, 3]], [\"unroll_kw\", \"ot\", true]]");
  CHECK_OK(tm->check(target_host(), good, wl));
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){1, 2, 9, 9, 16}, DT_F32);
  Tensor *kernel = te_placeholder_c("kernel", 6, (int64_t[]){1, 2, 3, 3, 16, 16}, DT_F32);
  Tensor *conv = topi_x86_conv2d_NCHWc(data, kernel, (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, DT_F32);
  CHECK_NN(conv);
  s = te_create_schedule(1, &conv);
  CHECK(tm->schedule(target_host(), s, good, conv, 1, &conv) != 0);
  CHECK_CONTAINS(kiln_get_error(), "config blocks tile_ic 8 / tile_oc 16 do not match the compute's layout (input block 16");
  /* a missing knob */
  CHECK(tm->schedule(target_host(), te_create_schedule(1, &conv), config_entity_from_json("[]"), conv, 1, &conv) != 0);
  CHECK_CONTAINS(kiln_get_error(), "config has no knob 'tile_ic'");
  /* an anchor of none of the schedule's forms: the error names them all */
  const char *tag = conv->tag;
  conv->tag = "conv2d_other";
  CHECK(tm->schedule(target_host(), te_create_schedule(1, &conv), good, conv, 1, &conv) != 0);
  conv->tag = tag;
  CHECK_CONTAINS(kiln_get_error(), "has tag 'conv2d_other', expected conv2d_NCHWc, group_conv2d_NCHWc, "
                                   "conv2d_NCHWc_bf16 or conv2d_NCHWc_int8");
  /* computes check their layouts */
  CHECK(topi_x86_conv2d_NCHWc(data, te_placeholder_c("k", 6, (int64_t[]){1, 4, 3, 3, 8, 16}, DT_F32), (int[]){1, 1},
                              (int[]){0, 0, 0, 0}, (int[]){1, 1}, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "blocks must agree");
  CHECK(topi_x86_pack_kernel_OIHWio(te_placeholder_c("w", 4, (int64_t[]){16, 32, 3, 3}, DT_F32), 5, 16) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "blocks must divide");
  /* dense */
  const Template *dp = template_lookup("dense_pack.x86");
  Workload *dw = wl_dense(dp->name, 4, 24, 10, "float32", "float32");
  ConfigEntity *dc = config_entity_from_json("[[\"tile_y\", \"sp\", [-1, 1, 4]], [\"tile_x\", \"sp\", [-1, 1, 16]], "
                                             "[\"tile_k\", \"sp\", [-1, 2]], [\"tile_inner\", \"sp\", [-1, 1]]]");
  CHECK(dp->check(target_host(), dc, dw) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_x': the parts multiply to 16, which does not divide the 24 outputs (N)");
  dc = config_entity_from_json("[[\"tile_y\", \"sp\", [-1, 4]], [\"tile_x\", \"sp\", [-1, 1, 8]], "
                               "[\"tile_k\", \"sp\", [-1, 2]], [\"tile_inner\", \"sp\", [-1, 1]]]");
  CHECK(dp->check(target_host(), dc, dw) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_y': 2 parts, expected 3");
}

/* x86_conv_out_size, the conv templates' geometry: the output size of
 * padded, strided, dilated windows (checked against a window count), and
 * the two refusals naming the op. */
static void test_conv_out_size(void) {
  struct {
    int64_t H, W, KH, KW;
    int s[2], p[4], d[2];
  } ok[] = {{224, 224, 7, 7, {2, 2}, {3, 3, 3, 3}, {1, 1}}, {14, 15, 3, 3, {1, 2}, {1, 0, 2, 1}, {2, 1}},
            {7, 7, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},     {5, 9, 1, 3, {3, 1}, {0, 4, 0, 0}, {1, 3}}};
  for (size_t n = 0; n < sizeof ok / sizeof ok[0]; n++) {
    int64_t OH = 0, OW = 0, want[2] = {0, 0};
    CHECK_OK(x86_conv_out_size("conv", ok[n].H, ok[n].W, ok[n].KH, ok[n].KW, ok[n].s, ok[n].p, ok[n].d, &OH, &OW));
    for (int a = 0; a < 2; a++) { /* windows whose last tap lies inside the padded input */
      int64_t size = (a ? ok[n].W : ok[n].H) + ok[n].p[a] + ok[n].p[a + 2];
      int64_t span = ((a ? ok[n].KW : ok[n].KH) - 1) * ok[n].d[a];
      for (int64_t at = 0; at + span < size; at += ok[n].s[a]) want[a]++;
    }
    CHECK_MSG(OH == want[0] && OW == want[1], "case %zu: %lld x %lld, expected %lld x %lld", n, (long long)OH,
              (long long)OW, (long long)want[0], (long long)want[1]);
  }
  int64_t OH, OW;
  CHECK(x86_conv_out_size("conv", 8, 8, 3, 3, (int[]){1, 0}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, &OH, &OW) != 0);
  CHECK_CONTAINS(kiln_get_error(), "conv: strides and dilation must be positive and padding non-negative");
  CHECK(x86_conv_out_size("conv", 8, 8, 3, 3, (int[]){1, 1}, (int[]){1, -1, 1, 1}, (int[]){1, 1}, &OH, &OW) != 0);
  CHECK(x86_conv_out_size("conv", 8, 8, 3, 3, (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){0, 1}, &OH, &OW) != 0);
  CHECK(x86_conv_out_size("dw", 4, 8, 3, 3, (int[]){1, 1}, (int[]){0, 0, 0, 0}, (int[]){2, 1}, &OH, &OW) != 0);
  CHECK_CONTAINS(kiln_get_error(), "dw: the kernel window is larger than the padded input");
}

/* Each template's instantiate() with its fallback config builds a
 * function that runs (the tuner's measuring path). */
static void test_instantiate_fallback(void) {
  for (int i = 0; i < template_count(); i++) {
    const Template *tm = template_at(i);
    if (!template_serves(tm, target_host())) continue; /* the CUDA ones: test_cuda_templates.c */
    Workload *wl;
    if (strstr(tm->name, "batch_matmul"))
      wl = wl_batch_matmul(tm->name, 3, 13, 32, 20, "float32", "float32");
    else if (strstr(tm->name, "dense"))
      wl = wl_dense(tm->name, 2, 48, 37, "float32", "float32");
    else if (strstr(tm->name, "group_conv2d"))
      wl = wl_group_conv2d(tm->name, (int64_t[]){1, 24, 10, 10}, (int64_t[]){32, 6, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, 4, "float32", "float32");
    else if (strstr(tm->name, "depthwise"))
      wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 10, 10}, (int64_t[]){32, 1, 3, 3}, (int[]){2, 2}, (int[]){1, 1, 1, 1},
                     (int[]){1, 1}, "float32", "float32");
    else
      wl = wl_conv2d(tm->name, (int64_t[]){1, 24, 10, 10}, (int64_t[]){32, 24, 3, 3}, (int[]){1, 1}, (int[]){1, 1, 1, 1},
                     (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    CHECK_NN(cfg);
    Schedule *s = NULL;
    int na = 0;
    Tensor **args = NULL;
    if (!cfg || template_instantiate(tm, target_host(), wl, cfg, &s, &na, &args)) {
      test_fail(__FILE__, __LINE__, "%s: instantiate failed: %s", tm->name, kiln_get_error());
      continue;
    }
    KilnModule *mod = kiln_build(s, na, args, "f", NULL, &copt);
    CHECK_MSG(mod != NULL, "%s: %s", tm->name, kiln_get_error());
    if (!mod) continue;
    DLTensor *arr[8];
    for (int a = 0; a < na; a++) {
      arr[a] = tk_array_for(args[a]);
      tk_fill_random(arr[a]);
    }
    CHECK_OK(tk_call(mod, "f", na, arr));
    for (int a = 0; a < na; a++) kiln_array_free(arr[a]);
    kiln_module_free(mod);
  }
}

/* A template's schedule for one config, lowered (NULL: a failure, reported). */
static LoweredFunc *lower_config(const Template *tm, Workload *wl, ConfigEntity *cfg) {
  CHECK_NN(cfg);
  if (!cfg) return NULL;
  Schedule *s;
  int na;
  Tensor **args;
  int rc = template_instantiate(tm, target_host(), wl, cfg, &s, &na, &args);
  CHECK_OK(rc);
  if (rc) return NULL;
  LoweredFunc *f = kiln_lower(s, na, args, "f", NULL);
  CHECK_NN(f);
  return f;
}

/* The fallback conv schedule produces the register-block shape: the
 * accumulators are a local array of reg_n x oc_bn floats computed inside
 * the parallel row loop, the window reduction streams inside it, and the
 * kw loop is unrolled when unroll_kw is set.  A block of at most half the
 * register budget spans two output-channel chunks where their count is
 * even (7 columns x 2 chunks: each broadcast input feeds two FMAs; the
 * parallel loop runs over chunk pairs), in both kw forms, each run against
 * its unscheduled lowering; three chunks (48 channels) likewise span
 * three (7 x 3: a broadcast feeds three FMAs). */
static void test_conv_loop_shape(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  const char *cfg = "[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
                    "[\"tile_ow\", \"sp\", [-1, 7]], [\"unroll_kw\", \"ot\", %s]]";
  for (int oc = 32; oc <= 48; oc += 16) {
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 14, 14}, (int64_t[]){oc, 32, 3, 3}, (int[]){1, 1},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    for (int unroll = 0; unroll < 2; unroll++) {
      ConfigEntity *c = config_entity_from_json(kfmt(cfg, unroll ? "true" : "false"));
      LoweredFunc *f = lower_config(tm, wl, c);
      if (!f) return;
      const char *text = kiln_lowered_str(f);
      bool wide = target_host()->vector_lanes >= 16, two = oc == 32 && wide, three = oc == 48 && wide;
      CHECK_CONTAINS(text, kfmt("allocate conv2d_NCHWc.local[float32 * %d]", two ? 224 : three ? 336 : 112));
      CHECK_CONTAINS(text, two || three ? "parallel (n.oc_chunk.outer.fused.oh.fused, 0, 14)"
                                        : kfmt("parallel (n.oc_chunk.fused.oh.fused, 0, %d)", oc / 16 * 14));
      CHECK_CONTAINS(text, unroll ? "for (icb, 0, 16)" : "for (kw, 0, 3)");
      CHECK(!unroll || !strstr(text, "for (kw, 0, 3)"));
      const char *icb = strstr(text, "for (icb, 0, 16)");
      const char *fma2 = strstr(text, "conv2d_NCHWc.local[ramp(112, 1, 16)] = (conv2d_NCHWc.local[ramp(112, 1, 16)] +");
      const char *fma3 = strstr(text, "conv2d_NCHWc.local[ramp(224, 1, 16)] = (conv2d_NCHWc.local[ramp(224, 1, 16)] +");
      if (two || three)
        CHECK_MSG(icb && fma2 && icb < fma2, "the second chunk's FMA is not inside the reduction:\n%s", text);
      if (three) CHECK_MSG(icb && fma3 && icb < fma3, "the third chunk's FMA is not inside the reduction:\n%s", text);
      CHECK(f->notes.len == 0);
      tk_config_vs_unscheduled(tm, target_host(), wl, c, &copt, 1e-6,
                               kfmt("3x3 conv, %d output channels, unroll_kw %d", oc, unroll));
    }
  }
}

/* Batch blocking at batch > 1: the fallback of a 7x7 layer, whose rows
 * give a register block of only 7 columns, blocks 4 samples (7 x 4 x 16
 * accumulators), the sample loop inside the reduction; its output matches
 * the unscheduled lowering, for a 3x3 (80 output channels: 5 chunks, which
 * neither pair nor make triples) and a 1x1 kernel.  At batch 1 the space has no tile_n knob
 * (TVM's space, so batch-1 records still apply). */
static void test_conv_batch_block(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  for (int k = 1; k <= 3; k += 2) {
    int64_t oc = k == 3 ? 80 : 32;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){8, 32, 7, 7}, (int64_t[]){oc, 32, k, k}, (int[]){1, 1},
                             (int[]){k / 2, k / 2, k / 2, k / 2}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    CHECK_NN(cfg);
    if (!cfg) return;
    /* 3x3: 4 samples x 7 columns; 1x1: 2 samples x 7 columns x 2 chunks
     * (the two output-channel chunks as at batch 1, samples filling the rest) */
    bool one = k == 1 && target_host()->vector_lanes >= 16;
    CHECK_INT(cfg_other_int(cfg, "tile_n", -1), one ? 2 : 4);
    LoweredFunc *f = lower_config(tm, wl, cfg);
    if (!f) return;
    const char *text = kiln_lowered_str(f);
    CHECK_CONTAINS(text, "allocate conv2d_NCHWc.local[float32 * 448]");
    CHECK_CONTAINS(text, one ? "parallel (n.outer.oc_chunk.outer.fused.oh" : "parallel (n.outer.oc_chunk.fused.oh");
    tk_config_vs_unscheduled(tm, target_host(), wl, cfg, &copt, 1e-6, kfmt("batch-blocked %dx%d conv", k, k));
  }
  Workload *w1 = wl_conv2d(tm->name, (int64_t[]){1, 32, 7, 7}, (int64_t[]){32, 32, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), w1);
  CHECK_NN(cs);
  ConfigEntity *f1 = template_fallback(tm, target_host(), w1);
  CHECK_NN(f1);
  if (cs && f1) {
    CHECK(!config_get(f1, "tile_n"));
    CHECK(!space_knob(cs, "tile_n"));
  }
}

/* At batch > 1 a window larger than 1x1 with an even number of output-
 * channel chunks takes two chunks per block as at batch 1, with no batch
 * block (tile_n = 1): 7 columns x 2 chunks at 7x7 (rather than 7 x 4
 * samples), 14 x 2 at 28 columns (rather than 28 x 1); the stem (3 input
 * channels) keeps its 28 columns.  The 7x7 block's output matches the
 * unscheduled lowering, and its lowered block holds 7 x 2 x 16
 * accumulators. */
static void test_conv_batch_two_chunks(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  if (target_host()->vector_lanes < 16) return; /* two chunks are an AVX-512 block */
  static const int64_t layers[][6] = {/* IC, H, OC, K, stride, expected tile_ow */
                                      {32, 7, 32, 3, 1, 7},
                                      {32, 56, 32, 3, 2, 14},
                                      {3, 224, 32, 7, 2, 28}};
  for (int i = 0; i < 3; i++) {
    const int64_t *L = layers[i];
    int p = (int)L[3] / 2, st = (int)L[4];
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){8, L[0], L[1], L[1]}, (int64_t[]){L[2], L[0], L[3], L[3]},
                             (int[]){st, st}, (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    CHECK_NN(cfg);
    if (!cfg) continue;
    CHECK_INT(cfg_split_inner(cfg, "tile_ow"), L[5]);
    CHECK_INT(cfg_other_int(cfg, "tile_n", -1), L[0] >= 16 ? 1 : x86_batch_block(target_host(), 8, L[5]));
    if (i) continue;
    LoweredFunc *f = lower_config(tm, wl, cfg);
    if (f) CHECK_CONTAINS(kiln_lowered_str(f), "allocate conv2d_NCHWc.local[float32 * 224]");
    tk_config_vs_unscheduled(tm, target_host(), wl, cfg, &copt, 1e-6, "two-chunk 3x3 at batch 8");
  }
}

/* A 1x1 layer whose output-channel chunks make pairs or triples takes
 * them (a broadcast feeding two or three FMAs) even where a one-chunk
 * block of columns (and samples) holds more accumulators.  At batch 8: 48
 * channels (3 chunks) at 13x13 as 7 columns x 3 chunks (not 13 columns x
 * 2 samples), 32 channels at 27x27 as 9 x 2 chunks (not 27 x 1).  At
 * batch 1: 48 channels at 28x28 as 7 x 3 (not 28 x 1), at 56x56 as 8 x 3,
 * at 14x14 as 7 x 3 (not 14 columns x 2 rows), 32 at 27x27 as 9 x 2; but
 * 912 channels from 416 at 14x14 (1.5 MB of weights, past the L2) keep 14
 * x 2 rows, and so does the bfloat16 template's own fallback.  The
 * 3-chunk blocks' outputs match the unscheduled lowering (at 13 columns
 * the last column block a guarded tail of 6). */
static void test_conv_chunk_loads(void) {
  const Target *t = target_host();
  if (t->vector_lanes != 16 || target_l2_bytes(t) != 1 << 20) return; /* AVX-512's chunk blocks, a 1 MiB L2 */
  static const struct {
    const char *tmpl;
    int64_t n, ic, oc, h, tile_ow, tile_oh;
    bool run;
  } layers[] = {{"conv2d_NCHWc.x86", 8, 32, 48, 13, 7, 1, true},      {"conv2d_NCHWc.x86", 8, 32, 32, 27, 9, 1, false},
                {"conv2d_NCHWc.x86", 1, 128, 48, 28, 7, 1, true},     {"conv2d_NCHWc.x86", 1, 32, 48, 56, 8, 1, false},
                {"conv2d_NCHWc.x86", 1, 96, 48, 14, 7, 1, true},      {"conv2d_NCHWc.x86", 1, 256, 32, 27, 9, 1, false},
                {"conv2d_NCHWc.x86", 1, 416, 912, 14, 14, 2, false},  {"conv2d_NCHWc_bf16.x86", 1, 128, 48, 28, 28, 1, false}};
  for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
    const Template *tm = template_lookup(layers[i].tmpl);
    int64_t h = layers[i].h;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){layers[i].n, layers[i].ic, h, h},
                             (int64_t[]){layers[i].oc, layers[i].ic, 1, 1}, (int[]){1, 1}, (int[]){0, 0, 0, 0},
                             (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, t, wl);
    CHECK_NN(cfg);
    if (!cfg) continue;
    CHECK_INT(cfg_split_inner(cfg, "tile_ow"), layers[i].tile_ow);
    CHECK_INT(cfg_other_int(cfg, "tile_oh", -1), layers[i].tile_oh);
    if (layers[i].n > 1) CHECK_INT(cfg_other_int(cfg, "tile_n", -1), 1);
    if (!layers[i].run) continue;
    LoweredFunc *f = lower_config(tm, wl, cfg);
    if (f) CHECK_CONTAINS(kiln_lowered_str(f), "allocate conv2d_NCHWc.local[float32 * 336]"); /* 7 x 3 chunks */
    tk_config_vs_unscheduled(tm, t, wl, cfg, &copt, 1e-6, "three-chunk 1x1");
  }
}

/* A prime output width gets a column block that does not divide it, the
 * last block a guarded tail, instead of one-column blocks: the fallback
 * of a 1x1 conv (two chunks), a 3x3 and a grouped 3x3 conv at 37 and 31
 * columns, each run against its unscheduled lowering.  The widths that
 * have a divisor of a fair size keep it. */
static void test_conv_column_tail(void) {
  const Target *t = target_host();
  CHECK_INT(x86_conv_block_cols(73, 28), 25);
  CHECK_INT(x86_conv_block_cols(71, 28), 24);
  CHECK_INT(x86_conv_block_cols(37, 14), 13);
  CHECK_INT(x86_conv_block_cols(56, 28), 28);
  CHECK_INT(x86_conv_block_cols(35, 28), 7);
  CHECK_INT(x86_conv_block_cols(147, 28), 21);
  CHECK_INT(x86_conv_block_cols(5, 28), 5);
  CHECK_INT(x86_conv_block_cols(1, 28), 1);
  static const struct {
    const char *task;
    int64_t ic, oc, k, w, groups;
  } cases[] = {
      {"conv2d_NCHWc.x86", 32, 64, 1, 37, 1},
      {"conv2d_NCHWc.x86", 16, 16, 3, 31, 1},
      {"group_conv2d_NCHWc.x86", 32, 32, 3, 29, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const Template *tm = template_lookup(cases[i].task);
    CHECK_NN(tm);
    if (!tm) return;
    int64_t k = cases[i].k, w = cases[i].w;
    int p = (int)(k / 2);
    Workload *wl = cases[i].groups > 1
                       ? wl_group_conv2d(tm->name, (int64_t[]){1, cases[i].ic, 5, w},
                                         (int64_t[]){cases[i].oc, cases[i].ic / cases[i].groups, k, k}, (int[]){1, 1},
                                         (int[]){p, p, p, p}, (int[]){1, 1}, cases[i].groups, "float32", "float32")
                       : wl_conv2d(tm->name, (int64_t[]){1, cases[i].ic, 5, w}, (int64_t[]){cases[i].oc, cases[i].ic, k, k},
                                   (int[]){1, 1}, (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    CHECK_NN(wl);
    ConfigEntity *cfg = wl ? template_fallback(tm, t, wl) : NULL;
    CHECK_NN(cfg);
    if (!cfg) continue;
    int64_t cols = cfg_split_inner(cfg, "tile_ow");
    CHECK_MSG(cols > 1 && w % cols, "%s at %lld columns: fallback block of %lld columns", tm->name, (long long)w,
              (long long)cols);
    LoweredFunc *f = lower_config(tm, wl, cfg);
    if (f) CHECK_CONTAINS(kiln_lowered_str(f), "likely(");
    tk_config_vs_unscheduled(tm, t, wl, cfg, &copt, 1e-6,
                             kfmt("%s, %lld columns in blocks of %lld", tm->name, (long long)w, (long long)cols));
  }
}

/* With its padding copied (inline_pad false), a stride-2 depthwise layer
 * copies the padded rows of one output row per block at 112 columns
 * (3 x 113 x 16 floats: they stay in L1 until the convolution reads them)
 * and of two at 56; a stride-1 layer keeps blocks of 8 rows (10 padded
 * rows).  The fallback reads the input in place (no data_pad) where the
 * output is wider than the window, and copies where it is not (ConvNeXt's
 * 7x7 over 7 columns).  Small stride-1 and stride-2 cases run in both
 * forms against their unscheduled lowering. */
static void test_depthwise_row_block(void) {
  const Template *tm = template_lookup("depthwise_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm || target_host()->vector_lanes < 16) return;
  static const struct {
    int64_t c, w;
    int s;
    const char *alloc, *par;
  } cases[] = {
      {96, 112, 2, "allocate data_pad[float32 * 5424]", "parallel (n.oc_chunk.fused.oh.outer.fused, 0, 336)"},
      {144, 56, 2, "allocate data_pad[float32 * 4560]", "parallel (n.oc_chunk.fused.oh.outer.fused, 0, 126)"},
      {32, 112, 1, "allocate data_pad[float32 * 18240]", "parallel (n.oc_chunk.fused.oh.outer.fused, 0, 28)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t c = cases[i].c, w = cases[i].w;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, c, w, w}, (int64_t[]){c, 1, 3, 3}, (int[]){cases[i].s, cases[i].s},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    LoweredFunc *f = lower_config(tm, wl, cfg);
    if (!f) continue;
    CHECK_MSG(!strstr(kiln_lowered_str(f), "data_pad"), "%lld @%lld: the fallback copies the padding", (long long)c,
              (long long)w);
    CHECK_CONTAINS(kiln_lowered_str(f), cases[i].par);
    config_set_other(cfg, "inline_pad", opt_bool(false));
    if (!(f = lower_config(tm, wl, cfg))) continue;
    const char *text = kiln_lowered_str(f);
    CHECK_CONTAINS(text, cases[i].alloc);
    CHECK_CONTAINS(text, cases[i].par);
  }
  Workload *w7 = wl_conv2d(tm->name, (int64_t[]){1, 32, 7, 7}, (int64_t[]){32, 1, 7, 7}, (int[]){1, 1},
                           (int[]){3, 3, 3, 3}, (int[]){1, 1}, "float32", "float32");
  LoweredFunc *f7 = lower_config(tm, w7, template_fallback(tm, target_host(), w7));
  if (f7) CHECK_CONTAINS(kiln_lowered_str(f7), "allocate data_pad");
  for (int k = 0; k < 4; k++) {
    int st = 1 + k % 2;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 38, 38}, (int64_t[]){32, 1, 3, 3}, (int[]){st, st},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    config_set_other(cfg, "inline_pad", opt_bool(k >= 2));
    tk_config_vs_unscheduled(tm, target_host(), wl, cfg, &copt, 1e-6,
                             kfmt("stride-%d depthwise, padding %s", st, k >= 2 ? "inlined" : "copied in blocks of rows"));
  }
}

/* unroll_kw: the fallback unrolls the window's columns at stride 1 (no kw
 * loop left after lowering; neighbouring columns' taps then share their
 * input loads) and keeps the loop at stride 2.  Both forms, with the
 * padding inlined and copied, against the unscheduled lowering. */
static void test_depthwise_unroll_kw(void) {
  const Template *tm = template_lookup("depthwise_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm) return;
  for (int k = 0; k < 8; k++) {
    int st = 1 + k % 2;
    bool unroll = (k / 2) % 2, inl = k / 4;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 20, 20}, (int64_t[]){32, 1, 3, 5}, (int[]){st, st},
                             (int[]){1, 2, 1, 2}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    CHECK_NN(cfg);
    if (!cfg) continue;
    CHECK_MSG(cfg_other_int(cfg, "unroll_kw", -1) == (st == 1), "stride %d: fallback unroll_kw %lld", st,
              (long long)cfg_other_int(cfg, "unroll_kw", -1));
    if (k < 2) {
      LoweredFunc *f = lower_config(tm, wl, cfg);
      if (f) CHECK_MSG(!strstr(kiln_lowered_str(f), "for (kw") == (st == 1), "stride %d: kw loop %s", st,
                       st == 1 ? "left in" : "unrolled");
    }
    config_set_other(cfg, "unroll_kw", opt_bool(unroll));
    config_set_other(cfg, "inline_pad", opt_bool(inl));
    tk_config_vs_unscheduled(tm, target_host(), wl, cfg, &copt, 1e-6,
                             kfmt("stride-%d depthwise 3x5, unroll_kw %d, padding %s", st, (int)unroll,
                                  inl ? "inlined" : "copied"));
  }
}

/* prefetch_w: a depthwise layer of at most 256 output positions (960 @7,
 * 576 /2 @14) has the knob and the fallback touches the chunk ahead's
 * weights at each kh step, shared out over the row block's rows (row r
 * touches step r modulo the rows); 192 @28 (784 outputs) has no knob and
 * no prefetch.  3x3 and 5x5 layers with 0, 1 and 2 chunks ahead, against
 * their unscheduled lowering. */
static void test_depthwise_prefetch_w(void) {
  const Template *tm = template_lookup("depthwise_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm) return;
  static const struct {
    int64_t c, w;
    int s, pf;
  } fb[] = {{960, 7, 1, 1}, {576, 14, 2, 1}, {192, 28, 1, -1}};
  for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, fb[i].c, fb[i].w, fb[i].w}, (int64_t[]){fb[i].c, 1, 3, 3},
                             (int[]){fb[i].s, fb[i].s}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    LoweredFunc *f = lower_config(tm, wl, cfg);
    if (!f) continue;
    CHECK_MSG(cfg_other_int(cfg, "prefetch_w", -1) == fb[i].pf, "%lld @%lld /%d: fallback prefetch_w %lld",
              (long long)fb[i].c, (long long)fb[i].w, fb[i].s, (long long)cfg_other_int(cfg, "prefetch_w", -1));
    const char *text = kiln_lowered_str(f);
    CHECK_MSG(!strstr(text, "prefetch(kernel[") == (fb[i].pf < 0), "%lld @%lld: prefetch %s", (long long)fb[i].c,
              (long long)fb[i].w, fb[i].pf < 0 ? "where the layer has no knob" : "missing");
    if (i == 0) CHECK_CONTAINS(text, "if ((kh == oh.inner))"); /* rows of 7: kh % 7 == oh.inner % 7 */
  }
  for (int k = 0; k < 6; k++) {
    int64_t kw = k < 3 ? 3 : 5;
    int st = 1 + k % 2;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 48, 12, 12}, (int64_t[]){48, 1, kw, kw}, (int[]){st, st},
                             (int[]){kw / 2, kw / 2, kw / 2, kw / 2}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    CHECK_NN(cfg);
    if (!cfg) continue;
    config_set_other(cfg, "prefetch_w", opt_int(k % 3));
    tk_config_vs_unscheduled(tm, target_host(), wl, cfg, &copt, 1e-6,
                             kfmt("stride-%d depthwise %lldx%lld, prefetch_w %d", st, (long long)kw, (long long)kw, k % 3));
  }
}

/* A 1x1 block of 14 columns spans two output-channel chunks (14 x 2 x 16
 * accumulators), the chunk loop inside the reduction, so a broadcast input
 * value feeds two FMAs; the parallel loop runs over pairs of chunks.  A
 * block of 28 columns keeps one chunk, and so does an odd chunk count. */
static void test_conv_occ_block(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 14, 14}, (int64_t[]){64, 32, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  const char *cfg = "[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
                    "[\"tile_ow\", \"sp\", [-1, 14]], [\"tile_oh\", \"ot\", %d]]";
  LoweredFunc *f = lower_config(tm, wl, config_entity_from_json(kfmt(cfg, 1)));
  if (!f) return;
  const char *text = kiln_lowered_str(f);
  CHECK_CONTAINS(text, "allocate conv2d_NCHWc.local[float32 * 448]");
  CHECK_CONTAINS(text, "parallel (n.oc_chunk.outer.fused.oh.outer.fused, 0, 28)"); /* 2 chunk pairs x 14 rows */
  const char *icb = strstr(text, "for (icb, 0, 16)");
  const char *fma2 = strstr(text, "conv2d_NCHWc.local[ramp(224, 1, 16)] = (conv2d_NCHWc.local[ramp(224, 1, 16)] +");
  CHECK_MSG(icb && fma2 && icb < fma2, "the second chunk's FMA is not inside the reduction:\n%s", text);
  f = lower_config(tm, wl, config_entity_from_json(kfmt(cfg, 2))); /* 28 accumulators: one chunk */
  if (f) CHECK_CONTAINS(kiln_lowered_str(f), "allocate conv2d_NCHWc.local[float32 * 448]");
  if (f) CHECK(!strstr(kiln_lowered_str(f), "oc_chunk.outer"));
  const Target *t = target_host();
  if (t->vector_lanes >= 16) CHECK(x86_conv_occ_block(t, 14, 4) == 2);
  CHECK(x86_conv_occ_block(t, 14, 3) == 1 && x86_conv_occ_block(t, 28, 4) == 1);
  /* the fallback leaves room for two chunks: 14 columns, not 28 */
  ConfigEntity *fb = template_fallback(tm, t, wl);
  CHECK(fb);
  if (fb && t->vector_lanes >= 16) CHECK(cfg_split_inner(fb, "tile_ow") * cfg_other_int(fb, "tile_oh", 0) == 14);
  /* but a 17-column row (Inception-v3's 17x17 layers) does not shrink to
   * 1 column x 2 chunks: 9 columns (a block of 9, then a tail of 8) x 2
   * chunks, the 18 accumulators of the 17 x 1 block (which ran level) */
  Workload *w17 = wl_conv2d(tm->name, (int64_t[]){1, 32, 17, 17}, (int64_t[]){64, 32, 1, 1}, (int[]){1, 1},
                            (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *f17 = template_fallback(tm, t, w17);
  CHECK(f17 && cfg_split_inner(f17, "tile_ow") == 9);
}

/* An odd chunk count that divides by 3 takes three chunks a block where
 * three blocks fit the budget (so a broadcast feeds three FMAs), the
 * chunk loop innermost beside the channel block; even counts keep two,
 * other odd counts one.  RegNetX's 1x1 912->912 @7 (57 chunks) becomes
 * 7 columns x 3 chunks, and the 3-chunk schedule (1x1 and 3x3, random
 * configs of a 48-channel layer) is checked against the unscheduled
 * lowering. */
static void test_conv_occ_block3(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  const Target *t = target_host();
  CHECK_NN(tm);
  if (!tm || t->vector_lanes < 16) return;
  CHECK(x86_conv_occ_block(t, 7, 57) == 3 && x86_conv_occ_block(t, 9, 3) == 3);
  CHECK(x86_conv_occ_block(t, 10, 3) == 1 && x86_conv_occ_block(t, 7, 5) == 1 && x86_conv_occ_block(t, 7, 6) == 2);
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 912, 7, 7}, (int64_t[]){912, 912, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *fb = template_fallback(tm, t, wl);
  CHECK_NN(fb);
  if (fb) {
    CHECK(cfg_split_inner(fb, "tile_ow") == 7 && cfg_other_int(fb, "tile_oh", 0) == 1);
    LoweredFunc *f = lower_config(tm, wl, fb);
    const char *text = f ? kiln_lowered_str(f) : "";
    CHECK_CONTAINS(text, "allocate conv2d_NCHWc.local[float32 * 336]"); /* 7 columns x 3 chunks x 16 */
    CHECK_CONTAINS(text, "parallel (n.oc_chunk.outer.fused.oh.outer.fused, 0, 133)"); /* 19 chunk triples x 7 rows */
    const char *icb = strstr(text, "for (icb, 0, 16)");
    const char *fma3 = strstr(text, "conv2d_NCHWc.local[ramp(224, 1, 16)] = (conv2d_NCHWc.local[ramp(224, 1, 16)] +");
    CHECK_MSG(icb && fma3 && icb < fma3, "the third chunk's FMA is not inside the reduction:\n%s", text);
  }
  for (int k = 0; k < 6; k++) {
    int64_t kk = k % 2 ? 3 : 1, w = 5 + k;
    Workload *w48 = wl_conv2d(tm->name, (int64_t[]){1, 32, w, w}, (int64_t[]){48, 32, kk, kk}, (int[]){1, 1},
                              (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, t, w48);
    CHECK_NN(cfg);
    if (!cfg) continue;
    if (k >= 2) { /* random column blocks of at most 9 (three chunks) */
      int64_t ow = w - kk + 1, r = 1 + (int64_t)(test_rand() % (uint64_t)(ow < 9 ? ow : 9));
      config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, r});
      if (kk == 1) config_set_other(cfg, "tile_oh", opt_int(1));
    }
    const char *desc = kfmt("%lldx%lld 32->48 @%lld, config %s", (long long)kk, (long long)kk, (long long)w,
                            config_entity_json(cfg));
    LoweredFunc *f = lower_config(tm, w48, cfg);
    if (f) CHECK_MSG(strstr(kiln_lowered_str(f), "oc_chunk.outer") != NULL, "%s: not three chunks a block", desc);
    tk_config_vs_unscheduled(tm, t, w48, cfg, &copt, 1e-6, desc);
  }
}

/* A batch-1 1x1 layer whose reduction is one vector of input channels
 * (MobileNet-V2's 16->96 @112) takes 8 columns x 2 chunks rather than
 * 14 x 2, and so 8 x 3 for an odd chunk count that divides by 3
 * (MnasNet's 16->48); 32 input channels keep 14 x 2.  The 8 x 2 block against the unscheduled
 * lowering. */
static void test_conv_short_reduction(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  const Target *t = target_host();
  CHECK_NN(tm);
  if (!tm || t->vector_lanes < 16) return;
  static const struct {
    int64_t ic, oc, w, cols;
  } cases[] = {{16, 96, 112, 8}, {16, 48, 112, 8}, {16, 32, 24, 8}, {32, 96, 112, 14}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, cases[i].ic, cases[i].w, cases[i].w},
                             (int64_t[]){cases[i].oc, cases[i].ic, 1, 1}, (int[]){1, 1}, (int[]){0, 0, 0, 0},
                             (int[]){1, 1}, "float32", "float32");
    ConfigEntity *fb = template_fallback(tm, t, wl);
    CHECK_NN(fb);
    if (!fb) continue;
    int64_t cols = cfg_split_inner(fb, "tile_ow") * cfg_other_int(fb, "tile_oh", 1);
    CHECK_MSG(cols == cases[i].cols, "1x1 %lld->%lld @%lld: %lld columns, expected %lld", (long long)cases[i].ic,
              (long long)cases[i].oc, (long long)cases[i].w, (long long)cols, (long long)cases[i].cols);
    if (cases[i].w != 24) continue;
    tk_config_vs_unscheduled(tm, t, wl, fb, &copt, 1e-6, "1x1 16->32 @24, 8 columns x 2 chunks");
  }
}

/* inline_pad: the fallback of a padded layer with fewer input channels
 * than a vector (an RGB stem) reads its input in place rather than
 * copying it padded first (no data_pad buffer after lowering); a
 * 16-channel input and an unpadded layer have no such knob (TVM's space),
 * and the former keeps the copy.  Stems of one and of two output-channel
 * chunks, random column blocks, both forms, against the unscheduled
 * lowering. */
static void test_conv_stem_inline_pad(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  const Target *t = target_host();
  CHECK_NN(tm);
  if (!tm) return;
  static const struct {
    int64_t ic, oc, k;
    int st, pad;
    bool inl;
  } cases[] = {{3, 32, 3, 2, 1, true}, {3, 16, 3, 2, 1, true}, {3, 16, 7, 2, 3, true}, {16, 32, 3, 1, 1, false},
               {3, 32, 3, 1, 0, false}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int p = cases[i].pad;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, cases[i].ic, 23, 23},
                             (int64_t[]){cases[i].oc, cases[i].ic, cases[i].k, cases[i].k},
                             (int[]){cases[i].st, cases[i].st}, (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *fb = template_fallback(tm, t, wl);
    CHECK_NN(fb);
    if (!fb) continue;
    const char *desc = kfmt("%lldx%lld/%d %lld->%lld pad %d", (long long)cases[i].k, (long long)cases[i].k,
                            cases[i].st, (long long)cases[i].ic, (long long)cases[i].oc, p);
    CHECK_MSG(cfg_other_int(fb, "inline_pad", -1) == (cases[i].inl ? 1 : -1), "%s: fallback inline_pad %lld", desc,
              (long long)cfg_other_int(fb, "inline_pad", -1));
    LoweredFunc *f = lower_config(tm, wl, fb);
    if (f) CHECK_MSG(!strstr(kiln_lowered_str(f), "data_pad") == (!p || cases[i].inl), "%s: padded copy %s", desc,
                     cases[i].inl ? "left in" : "missing");
    if (!cases[i].inl) continue;
    for (int k = 0; k < 4; k++) {
      ConfigEntity *cfg = template_fallback(tm, t, wl);
      int64_t ow = (23 + 2 * p - cases[i].k) / cases[i].st + 1, r = 1 + (int64_t)(test_rand() % (uint64_t)(ow < 14 ? ow : 14));
      config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, r});
      config_set_other(cfg, "unroll_kw", opt_bool(k % 2));
      config_set_other(cfg, "inline_pad", opt_bool(k / 2));
      tk_config_vs_unscheduled(tm, t, wl, cfg, &copt, 1e-6, kfmt("%s, config %s", desc, config_entity_json(cfg)));
    }
  }
}

/* A stem's register block at batch 1 (stem_block): two output-channel
 * chunks take 7 columns x 2 chunks, one chunk (MobileNetV3's 3->16) 14
 * columns; both with the window's columns unrolled.  SqueezeNet-1.1's
 * unpadded 3->64 (111 columns, divisors 3 and 37) takes 7 with a tail,
 * not 3; the 7-column block against the unscheduled lowering. */
static void test_conv_stem_block(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  const Target *t = target_host();
  CHECK_NN(tm);
  if (!tm || t->vector_lanes < 16) return;
  static const struct {
    int64_t oc, cols;
    int pad;
  } cases[] = {{32, 7, 1}, {16, 14, 1}, {64, 7, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int p = cases[i].pad;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 3, 224, 224}, (int64_t[]){cases[i].oc, 3, 3, 3}, (int[]){2, 2},
                             (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *fb = template_fallback(tm, t, wl);
    CHECK_NN(fb);
    if (!fb) continue;
    CHECK_MSG(cfg_split_inner(fb, "tile_ow") == cases[i].cols && cfg_other_int(fb, "unroll_kw", 0) == 1,
              "3x3/2 3->%lld: %lld columns, unroll_kw %lld; expected %lld columns, unrolled", (long long)cases[i].oc,
              (long long)cfg_split_inner(fb, "tile_ow"), (long long)cfg_other_int(fb, "unroll_kw", 0),
              (long long)cases[i].cols);
    if (!p) tk_config_vs_unscheduled(tm, t, wl, fb, &copt, 1e-6, "3x3/2 3->64 stem, 111 columns in blocks of 7");
  }
}

/* A channel block that is not a power of two (a tuned tile_oc of 40) is
 * vectorized in vectors of its largest power-of-two divisor (8 here),
 * unrolled; left to the C compiler it ran as scalar code, 15x slower in
 * a model than in the tuner's measurement. */
static void test_conv_odd_block_vectorized(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 7, 7}, (int64_t[]){40, 32, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *cfg = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 40]], "
                                              "[\"tile_ow\", \"sp\", [-1, 7]], [\"tile_oh\", \"ot\", 1]]");
  LoweredFunc *f = lower_config(tm, wl, cfg);
  if (!f) return;
  const char *text = kiln_lowered_str(f);
  CHECK_CONTAINS(text, "ramp(");
  CHECK_CONTAINS(text, ", 8)]");
  CHECK(!strstr(text, ", 40)]"));
}

/* A squeeze-and-excitation block's end: a 1x1 conv over a 1x1 map, its
 * bias and sigmoid, broadcast into a multiply with a larger feature map.
 * The sigmoid has fewer elements than the group's output, so it is
 * computed once into a buffer of O floats rather than inlined into the
 * multiply (which recomputed it, and the conv's read, per output element:
 * RegNetY-400MF spent 0.65 ms on 112 sigmoids broadcast over 28x28).
 * The multiply's parallel loop fuses the chunks and rows (4 x 17) and
 * stops there: the columns are a serial loop, not a division and modulo
 * of one fused counter per vector.  Checked against the unscheduled
 * lowering and a naive reference. */
static void test_conv_broadcast_epilogue(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  int64_t C = 12, O = 64, H = 17, W = 6, bn = 16;
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, C, 1, 1}, (int64_t[]){O, C, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
  CHECK_NN(cfg);
  if (!cfg) return;
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  CHECK(ob == bn);
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){1, C / ib, 1, 1, ib}, DT_F32);
  Tensor *kernel = te_placeholder_c("kernel", 6, (int64_t[]){O / ob, C / ib, 1, 1, ib, ob}, DT_F32);
  Tensor *bias = te_placeholder_c("bias", 5, (int64_t[]){1, O / ob, 1, 1, ob}, DT_F32);
  Tensor *feat = te_placeholder_c("feat", 5, (int64_t[]){1, O / ob, H, W, ob}, DT_F32);
  Tensor *conv = tm->compute(target_host(), wl, cfg, 2, (Tensor *[]){data, kernel});
  CHECK_NN(conv);
  if (!conv) return;
  Tensor *sig = topi_unary(TOPI_sigmoid, topi_binary(TOPI_add, conv, bias));
  Tensor *out = topi_binary(TOPI_multiply, feat, sig);
  CHECK_NN(out);
  if (!out) return;
  Schedule *s = te_create_schedule(1, &out);
  if (tm->schedule(target_host(), s, cfg, conv, 1, &out)) {
    test_fail(__FILE__, __LINE__, "schedule failed: %s", kiln_get_error());
    return;
  }
  Tensor *args[5] = {data, kernel, bias, feat, out};
  LoweredFunc *f = kiln_lower(s, 5, args, "f", NULL);
  CHECK_NN(f);
  if (f) CHECK_CONTAINS(kiln_lowered_str(f), kfmt("allocate T_sigmoid[float32 * %lld]", (long long)O));
  if (f) CHECK_CONTAINS(kiln_lowered_str(f), kfmt("parallel (i.j.fused.k.fused, 0, %lld)", (long long)(O / ob * H)));
  DLTensor **arr = tk_run_vs_unscheduled(s, 5, args, &copt, 1e-6, "conv, bias, sigmoid, broadcast multiply");
  if (!arr) return;
  const float *d = arr[0]->data, *k = arr[1]->data, *b = arr[2]->data, *x = arr[3]->data;
  DLTensor *want = tk_array_for(out);
  float *w = want->data;
  for (int64_t o = 0; o < O; o++) {
    double acc = b[o]; /* [1, O/ob, 1, 1, ob] is b in channel order */
    for (int64_t c = 0; c < C; c++) acc += (double)d[c] * k[(((o / ob) * (C / ib) + c / ib) * ib + c % ib) * ob + o % ob];
    double g = 1 / (1 + exp(-acc));
    for (int64_t i = 0; i < H * W; i++) {
      int64_t at = ((o / ob) * H * W + i) * ob + o % ob;
      w[at] = (float)(x[at] * g);
    }
  }
  double err = tk_rel_err(arr[4], want);
  CHECK_MSG(err < 1e-5, "relative error %g against a naive reference", err);
  kiln_array_free(want);
  tk_arrays_free(5, arr);
}

/* A codegen fix found by these templates: a select with a scalar
 * condition over vector values (a vectorized padding stage) mixed the
 * unaligned load type with the plain vector type in ?: and did not
 * compile. */
static void test_codegen_select_scalar_cond(void) {
  int64_t shape[2] = {5, 16};
  Tensor *A = te_placeholder_c("A", 2, shape, DT_F32);
  Expr **v = te_axis_vars(2, NULL);
  Tensor *B = te_compute("B", 2, (Expr *[]){ir_i32(6), ir_i32(16)}, v,
                         ir_select(ir_ge(v[0], ir_i32(1)), te_read2(A, ir_sub(v[0], ir_i32(1)), v[1]), ir_f32(0)), "injective");
  Schedule *s = te_create_schedule(1, &B);
  Stage *st = sch_stage(s, B);
  CHECK_OK(stage_vectorize(st, stage_axis(st, 1)));
  KilnModule *mod = kiln_build(s, 2, (Tensor *[]){A, B}, "f", NULL, &copt);
  CHECK_NN(mod);
  if (!mod) return;
  DLTensor *a = tk_array_for(A), *b = tk_array_for(B);
  tk_fill_random(a);
  CHECK_OK(tk_call(mod, "f", 2, (DLTensor *[]){a, b}));
  for (int i = 0; i < 6 * 16; i++) CHECK(tk_get(b, i) == (i < 16 ? 0 : tk_get(a, i - 16)));
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_module_free(mod);
}

/* A strided 1x1 conv reads a sampled copy of its input ("data_sub",
 * [N, C/cb, OH, OW, cb]: rows and columns h * s - pad) with stride 1; a
 * stride-1 1x1 and a strided 3x3 keep reading their (padded) input.
 * Each runs against its unscheduled lowering, and against a direct
 * convolution at every output (stride 2, then 2 x 1 with padding, where
 * the sampled rows and columns run past the input). */
static void test_conv_strided_1x1_sampled(void) {
  const Target *t = target_host();
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm) return;
  static const struct {
    int64_t k, h, w;
    int sh, sw, pad;
    const char *input; /* the stage the conv reads */
    int64_t oh, ow;
  } cases[] = {
      {1, 14, 14, 2, 2, 0, "data_sub", 7, 7},
      {1, 9, 8, 2, 1, 1, "data_sub", 6, 10},
      {1, 14, 14, 1, 1, 0, "data", 14, 14},
      {3, 14, 14, 2, 2, 1, "data_pad", 7, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t k = cases[i].k, C = 32, O = 32;
    int p = cases[i].pad;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, C, cases[i].h, cases[i].w}, (int64_t[]){O, C, k, k},
                             (int[]){cases[i].sh, cases[i].sw}, (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    CHECK_NN(wl);
    ConfigEntity *cfg = wl ? template_fallback(tm, t, wl) : NULL;
    CHECK_NN(cfg);
    if (!cfg) continue;
    Schedule *s;
    int na;
    Tensor **args;
    CHECK_OK(template_instantiate(tm, t, wl, cfg, &s, &na, &args));
    Tensor *conv = args[na - 1], *in = NULL;
    for (int j = 0; j < conv->ninputs; j++)
      if (conv->inputs[j]->ndim == 5) in = conv->inputs[j];
    CHECK_NN(in);
    if (!in) continue;
    CHECK_STR(in->name, cases[i].input);
    CHECK_INT(te_dim(conv, 2), cases[i].oh);
    CHECK_INT(te_dim(conv, 3), cases[i].ow);
    if (!strcmp(cases[i].input, "data_sub")) {
      CHECK_INT(te_dim(in, 2), cases[i].oh);
      CHECK_INT(te_dim(in, 3), cases[i].ow);
    }
    const char *what = kfmt("%lldx%lld conv, stride %d x %d, pad %d", (long long)k, (long long)k, cases[i].sh,
                            cases[i].sw, p);
    DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, what);
    if (!arr) continue;
    /* the direct convolution, in the NCHW[x]c layouts */
    const DLTensor *D = arr[0], *K = arr[1], *R = arr[na - 1];
    int64_t ib = D->shape[4], ob = K->shape[5], H = cases[i].h, W = cases[i].w;
    double maxerr = 0;
    for (int64_t o = 0; o < O; o++)
      for (int64_t y = 0; y < cases[i].oh; y++)
        for (int64_t x = 0; x < cases[i].ow; x++) {
          double ref = 0;
          for (int64_t c = 0; c < C; c++)
            for (int64_t ky = 0; ky < k; ky++)
              for (int64_t kx = 0; kx < k; kx++) {
                int64_t iy = y * cases[i].sh + ky - p, ix = x * cases[i].sw + kx - p;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                ref += (double)tk_get(D, (((c / ib) * H + iy) * W + ix) * ib + c % ib) *
                       tk_get(K, ((((o / ob) * (C / ib) + c / ib) * k + ky) * k + kx) * ib * ob + (c % ib) * ob + o % ob);
              }
          double got = tk_get(R, (((o / ob) * cases[i].oh + y) * cases[i].ow + x) * ob + o % ob);
          double e = fabs(got - ref) / (1 + fabs(ref));
          if (e > maxerr) maxerr = e;
        }
    CHECK_MSG(maxerr < 1e-5, "%s: relative error %g against the direct convolution", what, maxerr);
    tk_arrays_free(na, arr);
  }
}

const TestCase x86_tests[] = {
    {"codegen_select_scalar_cond", test_codegen_select_scalar_cond},
    {"conv2d_random", test_conv2d_random},
    {"conv_odd_block_vectorized", test_conv_odd_block_vectorized},
    {"conv_broadcast_epilogue", test_conv_broadcast_epilogue},
    {"conv_occ_block", test_conv_occ_block},
    {"conv_occ_block3", test_conv_occ_block3},
    {"conv_short_reduction", test_conv_short_reduction},
    {"conv_stem_inline_pad", test_conv_stem_inline_pad},
    {"conv_stem_block", test_conv_stem_block},
    {"conv_column_tail", test_conv_column_tail},
    {"conv_strided_1x1_sampled", test_conv_strided_1x1_sampled},
    {"depthwise_row_block", test_depthwise_row_block},
    {"depthwise_unroll_kw", test_depthwise_unroll_kw},
    {"depthwise_prefetch_w", test_depthwise_prefetch_w},
    {"depthwise_random", test_depthwise_random},
    {"dense_nopack_random", test_dense_nopack_random},
    {"dense_pack_random", test_dense_pack_random},
    {"dense_pack_fallback_tail", test_dense_pack_fallback_tail},
    {"dense_pack_fallback_shapes", test_dense_pack_fallback_shapes},
    {"dense_pack_space_tails", test_dense_pack_space_tails},
    {"dense_pack_wide_blocks", test_dense_pack_wide_blocks},
    {"invalid_configs", test_invalid_configs},
    {"conv_out_size", test_conv_out_size},
    {"instantiate_fallback", test_instantiate_fallback},
    {"conv_loop_shape", test_conv_loop_shape},
    {"conv_batch_block", test_conv_batch_block},
    {"conv_batch_two_chunks", test_conv_batch_two_chunks},
    {"conv_chunk_loads", test_conv_chunk_loads},
    {NULL, NULL},
};
