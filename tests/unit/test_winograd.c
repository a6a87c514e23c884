/*
 * test_winograd.c - conv2d_NCHWc_winograd.x86: the Cook-Toom matrices,
 * the kernel transform against G g G^T computed here, and random
 * workloads (odd sizes with partial tiles, asymmetric padding, channel
 * counts that are no multiple of 16, tile sizes 2 and 4) each scheduled
 * with a random config of the template's space, with and without a fused
 * epilogue, built and run on fresh random data and compared with the
 * unscheduled lowering of the same compute and with a direct convolution
 * computed here.  Then the errors: workloads the template does not cover,
 * configs that do not fit, computes given the wrong shapes.
 */
#include <math.h>
#include <stdlib.h>

#include "autotune/autotune.h"
#include "kernel_util.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};


static void fill(DLTensor *a, const float *src) { memcpy(a->data, src, sizeof(float) * (size_t)tk_numel(a)); }

static float *randv(int64_t n) {
  float *p = xmalloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) p[i] = test_randf();
  return p;
}

/* The 1-D identity: A^T[(G g) . (B^T d)] = the correlation of d with g. */
static void test_matrices(void) {
  for (int m = 2; m <= 6; m += 2) {
    int alpha = m + 2;
    double AT[6 * 8], G[8 * 3], BT[8 * 8], d[8], g[3];
    CHECK_OK(topi_winograd_matrices(m, 3, AT, G, BT));
    for (int trial = 0; trial < 4; trial++) {
      for (int i = 0; i < alpha; i++) d[i] = test_randf();
      for (int k = 0; k < 3; k++) g[k] = test_randf();
      double u[8], v[8];
      for (int e = 0; e < alpha; e++) {
        u[e] = v[e] = 0;
        for (int k = 0; k < 3; k++) u[e] += G[e * 3 + k] * g[k];
        for (int i = 0; i < alpha; i++) v[e] += BT[e * alpha + i] * d[i];
      }
      for (int i = 0; i < m; i++) {
        double y = 0, ref = 0;
        for (int e = 0; e < alpha; e++) y += AT[i * alpha + e] * u[e] * v[e];
        for (int k = 0; k < 3; k++) ref += d[i + k] * g[k];
        CHECK_MSG(fabs(y - ref) < 1e-12, "F(%d,3) output %d: %g, expected %g", m, i, y, ref);
      }
    }
  }
  double AT[64], G[64], BT[128];
  CHECK(topi_winograd_matrices(12, 3, AT, G, BT) != 0);
  CHECK_CONTAINS(kiln_get_error(), "F(12, 3) is not supported");
}

/* U from the compute (reference interpreter) against G g G^T here. */
static void test_weight_transform(void) {
  for (int m = 2; m <= 4; m += 2) {
    int64_t O = 8, I = 3, ob = 4, alpha = m + 2;
    Tensor *k = te_placeholder_c("w", 4, (int64_t[]){O, I, 3, 3}, DT_F32);
    Tensor *u = topi_x86_winograd_weight_transform(k, m, ob);
    CHECK_NN(u);
    if (!u) continue;
    DLTensor *ka = tk_array_for(k), *ua = tk_array_for(u);
    tk_fill_random(ka);
    CHECK_OK(topi_eval(u, 1, &k, &ka, ua));
    double AT[4 * 6], G[6 * 3], BT[6 * 6];
    topi_winograd_matrices(m, 3, AT, G, BT);
    const float *w = ka->data, *got = ua->data;
    double worst = 0;
    for (int64_t o = 0; o < O; o++)
      for (int64_t i = 0; i < I; i++)
        for (int e = 0; e < alpha; e++)
          for (int n = 0; n < alpha; n++) {
            double s = 0;
            for (int r = 0; r < 3; r++)
              for (int c = 0; c < 3; c++) s += G[e * 3 + r] * w[((o * I + i) * 3 + r) * 3 + c] * G[n * 3 + c];
            double x = got[(((e * alpha + n) * (O / ob) + o / ob) * I + i) * ob + o % ob];
            worst = fmax(worst, fabs(x - s) / (fabs(s) + 1e-6));
          }
    CHECK_MSG(worst < 1e-6, "m = %d: kernel transform relative error %g", m, worst);
    kiln_array_free(ka);
    kiln_array_free(ua);
  }
}

typedef struct Case {
  int64_t N, C, H, W, O;
  int pt, pl, pb, pr;
  int64_t OH, OW;
} Case;

/* NCHW conv, OIHW 3x3 weights, in double. */
static void ref_conv(const Case *c, const float *d, const float *k, double *out) {
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t o = 0; o < c->O; o++)
      for (int64_t y = 0; y < c->OH; y++)
        for (int64_t x = 0; x < c->OW; x++) {
          double s = 0;
          for (int64_t i = 0; i < c->C; i++)
            for (int64_t ky = 0; ky < 3; ky++)
              for (int64_t kx = 0; kx < 3; kx++) {
                int64_t ih = y + ky - c->pt, iw = x + kx - c->pl;
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                s += (double)d[((n * c->C + i) * c->H + ih) * c->W + iw] * k[((o * c->C + i) * 3 + ky) * 3 + kx];
              }
          out[((n * c->O + o) * c->OH + y) * c->OW + x] = s;
        }
}

typedef enum Epi { EPI_NONE, EPI_BIAS_RELU, EPI_RESIDUAL_RELU, EPI_TWO_OUTPUTS, EPI__COUNT } Epi;
static const char *epi_name[] = {"none", "bias+relu", "residual+relu", "conv and relu(conv)"};

/* Worst relative L2 error against the direct reference, over all cases. */
static double worst_ref_err;

/* A random layer and config (or the layer *fixed, with a random config;
 * with passes > 0 its fallback config at the root in passes of that many
 * samples) against the unscheduled lowering and the direct convolution. */
static bool run_case(const Template *tm, Epi epi, int caseno, const Case *fixed, int64_t passes) {
  Case c = {0};
  c.N = test_rand_between(1, 2);
  c.C = test_pick(7, (int64_t[]){1, 3, 5, 8, 16, 20, 32});
  c.O = test_pick(6, (int64_t[]){2, 4, 8, 12, 16, 32});
  c.pt = (int)test_rand_between(0, 2), c.pl = (int)test_rand_between(0, 2);
  c.pb = (int)test_rand_between(0, 2), c.pr = (int)test_rand_between(0, 1);
  c.H = test_rand_between(3, 17), c.W = test_rand_between(3, 19);
  if (c.H + c.pt + c.pb < 3) c.H = 3;
  if (c.W + c.pl + c.pr < 3) c.W = 3;
  if (fixed) c = *fixed;
  c.OH = c.H + c.pt + c.pb - 2, c.OW = c.W + c.pl + c.pr - 2;
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){c.N, c.C, c.H, c.W}, (int64_t[]){c.O, c.C, 3, 3}, (int[]){1, 1},
                           (int[]){c.pt, c.pl, c.pb, c.pr}, (int[]){1, 1}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (!cs) return false;
  int64_t idx = (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)space_size(cs));
  ConfigEntity *cfg = passes ? template_fallback(tm, target_host(), wl) : space_get(cs, idx);
  int64_t m = topi_x86_winograd_tile_size(c.C, c.O, c.OH, c.OW);
  if (passes && cfg) {
    config_set_split(cfg, "tile_rows", 2, (int64_t[]){-1, (c.OH + m - 1) / m});
    config_set_other(cfg, "tile_n", opt_int(passes));
  }
  CHECK_OK(tm->check(target_host(), cfg, wl));
  int64_t ib = cfg_split_inner(cfg, "tile_ic"), ob = cfg_split_inner(cfg, "tile_oc");
  const char *desc = kfmt("case %d: %s (m = %lld): config %lld %s, epilogue %s", caseno, wl->key, (long long)m,
                          (long long)idx, config_entity_json(cfg), epi_name[epi]);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){c.N, c.C / ib, c.H, c.W, ib}, DT_F32);
  Tensor *w = te_placeholder_c("w", 4, (int64_t[]){c.O, c.C, 3, 3}, DT_F32);
  Tensor *U = topi_x86_winograd_weight_transform(w, m, ob);
  Tensor *uin = U ? te_placeholder_c("U", 5, (int64_t[]){m + 2, m + 2, c.O / ob, c.C, ob}, DT_F32) : NULL;
  Tensor *conv = uin ? tm->compute(target_host(), wl, cfg, 2, (Tensor *[]){data, uin}) : NULL;
  CHECK_MSG(conv != NULL, "%s: %s", desc, kiln_get_error());
  if (!conv) return false;
  Tensor *bias = NULL, *res = NULL, *outs[2] = {conv, NULL};
  int nout = 1;
  if (epi == EPI_BIAS_RELU) {
    bias = te_placeholder_c("bias", 4, (int64_t[]){c.O / ob, 1, 1, ob}, DT_F32);
    Expr **v = te_axis_vars(5, NULL);
    outs[0] = tk_relu5(te_compute("T_add", 5, conv->shape, v,
                               ir_add(te_read(conv, 5, v), te_read4(bias, v[1], ir_i32(0), ir_i32(0), v[4])),
                               "broadcast"));
  } else if (epi == EPI_RESIDUAL_RELU) {
    res = te_placeholder_c("residual", 5, (int64_t[]){c.N, c.O / ob, c.OH, c.OW, ob}, DT_F32);
    Expr **v = te_axis_vars(5, NULL);
    outs[0] = tk_relu5(te_compute("T_add", 5, conv->shape, v, ir_add(te_read(conv, 5, v), te_read(res, 5, v)), "elemwise"));
  } else if (epi == EPI_TWO_OUTPUTS) {
    outs[1] = tk_relu5(conv);
    nout = 2;
  }
  Schedule *s = te_create_schedule(nout, outs), *naive = te_create_schedule(nout, outs);
  if (tm->schedule(target_host(), s, cfg, conv, nout, outs)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  Tensor *args[6];
  int na = 0;
  args[na++] = data;
  args[na++] = uin;
  if (bias) args[na++] = bias;
  if (res) args[na++] = res;
  for (int i = 0; i < nout; i++) args[na++] = outs[i];
  KilnModule *mod = kiln_build(s, na, args, "f", NULL, &copt);
  KilnModule *ref_mod = kiln_build(naive, na, args, "f", NULL, &copt);
  if (!mod || !ref_mod) {
    test_fail(__FILE__, __LINE__, "%s: build failed: %s", desc, kiln_get_error());
    kiln_module_free(mod);
    kiln_module_free(ref_mod);
    return false;
  }
  /* inputs: NCHW data and OIHW weights, packed; U by the interpreter */
  int64_t nd = c.N * c.C * c.H * c.W, nk = c.O * c.C * 9, no = c.N * c.O * c.OH * c.OW;
  float *d = randv(nd), *k = randv(nk);
  DLTensor *arr[6], *arr2[6];
  na = 0;
  arr[na] = tk_array_for(data);
  float *dst = arr[na]->data;
  for (int64_t n = 0; n < c.N; n++)
    for (int64_t ch = 0; ch < c.C; ch++)
      for (int64_t y = 0; y < c.H; y++)
        for (int64_t x = 0; x < c.W; x++)
          dst[(((n * (c.C / ib) + ch / ib) * c.H + y) * c.W + x) * ib + ch % ib] = d[((n * c.C + ch) * c.H + y) * c.W + x];
  na++;
  DLTensor *wa = tk_array_for(w);
  fill(wa, k);
  arr[na] = tk_array_for(uin);
  CHECK_OK(topi_eval(U, 1, &w, &wa, arr[na]));
  na++;
  float *bv = NULL;
  if (bias) {
    arr[na] = tk_array_for(bias);
    tk_fill_random(arr[na++]);
    bv = arr[na - 1]->data;
  }
  const float *rv = NULL;
  if (res) {
    arr[na] = tk_array_for(res);
    tk_fill_random(arr[na]);
    rv = arr[na++]->data;
  }
  int first_out = na;
  for (int i = 0; i < nout; i++) {
    arr[na] = tk_array_for(outs[i]);
    tk_fill(arr[na++], NAN);
  }
  for (int i = 0; i < na; i++) {
    arr2[i] = tk_array_for(args[i]);
    memcpy(arr2[i]->data, arr[i]->data, sizeof(float) * (size_t)tk_numel(arr[i]));
  }
  bool ok = true;
  if (tk_call(mod, "f", na, arr) || tk_call(ref_mod, "f", na, arr2)) {
    test_fail(__FILE__, __LINE__, "%s: run failed: %s", desc, kiln_last_error());
    ok = false;
  }
  /* the schedule against the unscheduled lowering: the same arithmetic */
  for (int o = 0; ok && o < nout; o++) {
    double err = tk_rel_err(arr[first_out + o], arr2[first_out + o]);
    if (!(err < 1e-6)) {
      test_fail(__FILE__, __LINE__, "%s: output %d differs from the unscheduled lowering: relative error %g", desc, o,
                err);
      ok = false;
    }
  }
  /* the conv against the direct convolution */
  if (ok) {
    double *ref = xmalloc(sizeof(double) * (size_t)no);
    ref_conv(&c, d, k, ref);
    DLTensor *want = tk_array_for(outs[0]);
    float *wv = want->data;
    for (int64_t n = 0; n < c.N; n++)
      for (int64_t o = 0; o < c.O; o++)
        for (int64_t y = 0; y < c.OH; y++)
          for (int64_t x = 0; x < c.OW; x++) {
            int64_t i5 = (((n * (c.O / ob) + o / ob) * c.OH + y) * c.OW + x) * ob + o % ob;
            double v = ref[((n * c.O + o) * c.OH + y) * c.OW + x];
            if (epi == EPI_BIAS_RELU) v = fmax(v + bv[o], 0);
            if (epi == EPI_RESIDUAL_RELU) v = fmax(v + rv[i5], 0);
            wv[i5] = (float)v;
          }
    double err = tk_rel_err(arr[first_out], want);
    if (err > worst_ref_err) worst_ref_err = err;
    if (!(err < 1e-5)) {
      test_fail(__FILE__, __LINE__, "%s: relative error %g against the direct convolution", desc, err);
      ok = false;
    }
    kiln_array_free(want);
    free(ref);
  }
  for (int i = 0; i < na; i++) {
    kiln_array_free(arr[i]);
    kiln_array_free(arr2[i]);
  }
  kiln_array_free(wa);
  free(d), free(k);
  kiln_module_free(mod);
  kiln_module_free(ref_mod);
  return ok;
}

static void test_random(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_winograd.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(24); i++) run_case(tm, (Epi)(i % EPI__COUNT), i, NULL, 0);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  worst relative error against the direct conv: %g\n", worst_ref_err);
}

/* The fallback config of VGG-16's and ResNet's layers is in the space,
 * its register block's channel vectors follow the form, and the fallback
 * puts the stages at the root when the transformed
 * kernel is larger than L2 or V and M of the batch fit half of L3: the
 * table's last column says which (64 @56: U fits L2, V + M 3.6 MB at
 * batch 1, 29 MB at batch 8; VGG's 64 @224: 58 MB). */
static void test_fallback(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_winograd.x86");
  static const int64_t layers[][5] = {{1, 64, 224, 64, 0},  {1, 128, 56, 128, 1}, {1, 512, 14, 512, 1},
                                      {1, 512, 7, 512, 1},  {1, 24, 10, 32, 1},   {1, 64, 56, 64, 1},
                                      {8, 64, 56, 64, 0},   {8, 128, 28, 128, 1}, {8, 256, 14, 256, 1},
                                      {8, 128, 112, 128, 1}};
  for (int i = 0; i < (int)(sizeof layers / sizeof layers[0]); i++) {
    int64_t N = layers[i][0], C = layers[i][1], HW = layers[i][2], O = layers[i][3];
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){N, C, HW, HW}, (int64_t[]){O, C, 3, 3}, (int[]){1, 1},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    CHECK_NN(cfg);
    if (!cfg) continue;
    CHECK_OK(tm->check(target_host(), cfg, wl));
    CHECK_MSG(cfg->index >= 0, "%s: the fallback %s is not in the space", wl->key, config_entity_json(cfg));
    int64_t m = topi_x86_winograd_tile_size(C, O, HW, HW), nH = (HW + m - 1) / m;
    CHECK_INT(cfg_split_inner(cfg, "tile_rows"), layers[i][4] ? nH : 1);
    /* the channel vectors of the register block: in blocks of tile rows
     * on AVX-512 up to 28 accumulators (64 @56 at batch 8: 7 tiles x 4),
     * at the root up to 24 (64 @56 at batch 1: 7 x 2) */
    int no = 0;
    const int64_t *toc = cfg_split(cfg, "tile_oc", &no);
    if (C == 64 && HW == 56 && toc && no == 3 && target_host()->vector_lanes >= 16)
      CHECK_INT(toc[1], N > 1 ? 4 : 2);
  }
  /* the rule reads the target's caches: 64 -> 128 at 56 x 56, batch 8 (U
   * 1.2 MB, V + M 43 MB) runs at the root on Zen 5, U being larger than
   * its 1 MiB L2, and in blocks on Emerald Rapids, where U fits the 2 MiB
   * L2 and V + M does not fit half the L3 */
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){8, 64, 56, 56}, (int64_t[]){128, 64, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  const char *cpus[] = {"znver5", "emeraldrapids"};
  for (int i = 0; i < 2; i++) {
    const Target *t = target_parse(kfmt("llvm -mcpu=%s", cpus[i]), NULL);
    ConfigEntity *cfg = t ? template_fallback(tm, t, wl) : NULL;
    CHECK_NN(cfg);
    if (!cfg) continue;
    CHECK_INT(cfg_split_inner(cfg, "tile_rows"), (i == 0 ? 14 : 1));
    CHECK_INT(topi_x86_winograd_at_root(t, 8, 64, 128, 56, 56), (i == 0));
  }
}

/* The tile size: F(2x2) under 8 x 8, and where F(4x4)'s transformed
 * kernel (36 x IC x OC floats) exceeds a 1 MiB L2 and a sample has fewer
 * than 32 of its tiles (ResNet's 256 @14: 16, at any batch); F(4x4) with
 * more tiles (28x28's 49) or a kernel that fits
 * L2 (DenseNet's 128->32 @14: 0.6 MB).  Then an F(2x2) layer at 14x14
 * (96 channels: U of F(4x4) 1.3 MB) under random configs against the
 * unscheduled lowering and the direct convolution. */
static void test_tile_size(void) {
  /* {IC, OH = OW, OC, m}: the batch is not an argument (a sample's tiles count) */
  static const int64_t layers[][4] = {{256, 14, 256, 2}, {128, 28, 128, 4}, {128, 14, 32, 4}, {96, 14, 96, 2},
                                      {512, 7, 512, 2},  {32, 7, 32, 2},    {512, 28, 512, 4}};
  for (int i = 0; i < (int)(sizeof layers / sizeof layers[0]); i++) {
    const int64_t *l = layers[i];
    int64_t m = topi_x86_winograd_tile_size(l[0], l[2], l[1], l[1]);
    CHECK_MSG(m == l[3], "layer %d: %lld->%lld @%lld: m %lld", i, (long long)l[0], (long long)l[2], (long long)l[1],
              (long long)m);
  }
  const Template *tm = template_lookup("conv2d_NCHWc_winograd.x86");
  CHECK_NN(tm);
  Case c = {.N = 1, .C = 96, .H = 14, .W = 14, .O = 96, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  for (int i = 0; tm && i < 2; i++) run_case(tm, i ? EPI_RESIDUAL_RELU : EPI_NONE, i, &c, 0);
}

/* Passes of the root stages at batch > 1 ("tile_n"): the fallback takes
 * one sample a pass where a sample has 32 tiles or more and its V and M
 * pass the 1 MiB L2 but fit 8 MiB, a quarter of the 32 MiB L3 (ResNet's
 * 64 @56, 128 @28, 256 @14 under F(2x2), VGG's 512 @28: 7.2 MB), the
 * whole batch where a sample has fewer (512 @7 under F(2x2): 16 tiles)
 * or more bytes (VGG's 128 @112: 29 MB);
 * then passes of 1 and 2 of 4 samples against the unscheduled lowering. */
static void test_passes(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_winograd.x86");
  CHECK_NN(tm);
  if (!tm) return;
  static const int64_t layers[][5] = {{8, 64, 56, 64, 1}, {8, 128, 28, 128, 1}, {8, 256, 14, 256, 1},
                                      {8, 512, 7, 512, 8}, {8, 128, 112, 128, 8}, {8, 512, 28, 512, 1},
                                      {2, 128, 28, 128, 1}};
  const Target *t = target_parse("llvm -mcpu=znver5", NULL);
  for (int i = 0; t && i < (int)(sizeof layers / sizeof layers[0]); i++) {
    const int64_t *l = layers[i];
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){l[0], l[1], l[2], l[2]}, (int64_t[]){l[3], l[1], 3, 3}, (int[]){1, 1},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, t, wl);
    CHECK_NN(cfg);
    if (cfg) CHECK_MSG(cfg_other_int(cfg, "tile_n", 0) == l[4], "%s: tile_n %lld, expected %lld", wl->key,
                       (long long)cfg_other_int(cfg, "tile_n", 0), (long long)l[4]);
  }
  Case c = {.N = 4, .C = 16, .H = 12, .W = 12, .O = 32, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  for (int i = 0; i < 2; i++) run_case(tm, i ? EPI_RESIDUAL_RELU : EPI_BIAS_RELU, i, &c, i + 1);
}

/* The transforms run into local buffers, a tile and channel block's V and
 * a tile's output (the epilogue too), then are stored: the generated C's
 * stores to V or the output could alias the padded input or M, so only
 * locals let the compiler load each input once and share the nested
 * sums' column sums (F(4x4)'s input transform 228 vector operations a
 * tile and channel block instead of 484).  Fallback configs: F(4x4) at
 * the root, F(2x2), blocks of tile rows (VGG's 64 @224), passes; at the
 * root over the whole batch the padded copy is inlined. */
static void test_transforms_local(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_winograd.x86");
  CHECK_NN(tm);
  static const int64_t layers[][3] = {{1, 64, 56}, {1, 256, 14}, {1, 64, 224}, {2, 128, 28}};
  for (int i = 0; tm && i < (int)(sizeof layers / sizeof layers[0]); i++) {
    const int64_t *l = layers[i];
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){l[0], l[1], l[2], l[2]}, (int64_t[]){l[1], l[1], 3, 3}, (int[]){1, 1},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *cfg = template_fallback(tm, target_host(), wl);
    Schedule *s = NULL;
    int na = 0;
    Tensor **args = NULL;
    const char *ir = cfg ? tk_config_lowered(tm, target_host(), wl, cfg, &s, &na, &args, wl->key) : NULL;
    CHECK_NN(ir);
    if (!ir) continue;
    CHECK_MSG(strstr(ir, "allocate data_pack.local") != NULL, "%s: no local input transform", wl->key);
    CHECK_MSG(strstr(ir, "allocate conv2d_winograd_NCHWc.local") != NULL, "%s: no local output transform", wl->key);
    /* at the root over the whole batch (batch 1, not VGG's blocks) the transform reads the input in place */
    bool whole_root = l[0] == 1 && l[2] < 224;
    CHECK_MSG(whole_root == !strstr(ir, "allocate data_pad"), "%s: the padded copy %s", wl->key,
              whole_root ? "is still made" : "is missing");
  }
  /* the bfloat16 template shares the schedule; its V words each read two
   * channels, and read in place (every read bounds-tested) ResNet-18 bf16
   * took 1.9x the time: at the root too the padded copy stays */
  const Template *tb = template_lookup("conv2d_NCHWc_winograd_bf16.x86");
  CHECK_NN(tb);
  Workload *wb = wl_conv2d(tb ? tb->name : "", (int64_t[]){1, 64, 56, 56}, (int64_t[]){64, 64, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *cb = tb ? template_fallback(tb, target_host(), wb) : NULL;
  Schedule *sb = NULL;
  int nb = 0;
  Tensor **ab = NULL;
  const char *irb = cb ? tk_config_lowered(tb, target_host(), wb, cb, &sb, &nb, &ab, wb->key) : NULL;
  CHECK_NN(irb);
  if (irb) CHECK_MSG(strstr(irb, "allocate data_pad") != NULL, "%s bf16: the padded copy is missing", wb->key);
}

static void test_errors(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_winograd.x86");
  /* workloads it does not cover */
  Workload *s2 = wl_conv2d(tm->name, (int64_t[]){1, 16, 9, 9}, (int64_t[]){16, 16, 3, 3}, (int[]){2, 2},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  CHECK(template_space(tm, target_host(), s2) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "is not a 3x3, stride 1, dilation 1 convolution");
  Workload *k5 = wl_conv2d(tm->name, (int64_t[]){1, 16, 9, 9}, (int64_t[]){16, 16, 5, 5}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  CHECK(template_fallback(tm, target_host(), k5) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "is not a 3x3");
  /* configs that do not fit */
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 14, 14}, (int64_t[]){48, 32, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 2, 16]], "
                                            "[\"tile_p\", \"sp\", [-1, 2]], [\"tile_rows\", \"sp\", [-1, 1]]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_oc': the parts multiply to 32, which does not divide the 48 output channels");
  c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
                              "[\"tile_p\", \"sp\", [-1, 2]], [\"tile_rows\", \"sp\", [-1, 1]]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_oc': 2 parts, expected 3");
  c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 3, 16]], "
                              "[\"tile_p\", \"sp\", [-1, 3]], [\"tile_rows\", \"sp\", [-1, 1]]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_p': the parts multiply to 3, which does not divide the 4 tile columns");
  /* a config whose blocks differ from the compute's layout */
  ConfigEntity *good = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 8]], [\"tile_oc\", \"sp\", [-1, 1, 16]], "
                                               "[\"tile_p\", \"sp\", [-1, 2]], [\"tile_rows\", \"sp\", [-1, 2]]]");
  CHECK_OK(tm->check(target_host(), good, wl));
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){1, 2, 14, 14, 16}, DT_F32);
  Tensor *U = te_placeholder_c("U", 5, (int64_t[]){6, 6, 3, 32, 16}, DT_F32);
  Tensor *conv = topi_x86_conv2d_winograd_NCHWc(data, U, 4, (int[]){1, 1, 1, 1}, DT_F32);
  CHECK_NN(conv);
  CHECK(tm->schedule(target_host(), te_create_schedule(1, &conv), good, conv, 1, &conv) != 0);
  CHECK_CONTAINS(kiln_get_error(), "config blocks tile_ic 8 / tile_oc 16 do not match the compute's layout");
  CHECK(tm->schedule(target_host(), te_create_schedule(1, &conv), config_entity_from_json("[]"), conv, 1, &conv) != 0);
  CHECK_CONTAINS(kiln_get_error(), "config has no knob 'tile_ic'");
  /* a direct conv is not this template's anchor */
  Tensor *k6 = te_placeholder_c("k", 6, (int64_t[]){3, 2, 3, 3, 16, 16}, DT_F32);
  Tensor *direct = topi_x86_conv2d_NCHWc(data, k6, (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, DT_F32);
  CHECK(tm->schedule(target_host(), te_create_schedule(1, &direct), good, direct, 1, &direct) != 0);
  CHECK_CONTAINS(kiln_get_error(), "expected conv2d_NCHWc_winograd");
  /* computes check their shapes */
  CHECK(topi_x86_conv2d_winograd_NCHWc(data, U, 2, (int[]){1, 1, 1, 1}, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "tile size 2 needs 4x4");
  CHECK(topi_x86_conv2d_winograd_NCHWc(data, te_placeholder_c("U", 5, (int64_t[]){6, 6, 3, 16, 16}, DT_F32), 4,
                                       (int[]){1, 1, 1, 1}, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "has 16 input channels, data has 32");
  CHECK(topi_x86_conv2d_winograd_NCHWc(data, U, 3, (int[]){1, 1, 1, 1}, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "tile size 3, expected 2 or 4");
  CHECK(topi_x86_winograd_weight_transform(te_placeholder_c("w", 4, (int64_t[]){16, 8, 5, 5}, DT_F32), 4, 16) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "kernel is 5x5, expected 3x3");
  CHECK(topi_x86_winograd_weight_transform(te_placeholder_c("w", 4, (int64_t[]){24, 8, 3, 3}, DT_F32), 4, 16) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "the block 16 does not divide the 24 output channels");
}

const TestCase winograd_tests[] = {
    {"matrices", test_matrices},
    {"weight_transform", test_weight_transform},
    {"random", test_random},
    {"fallback", test_fallback},
    {"tile_size", test_tile_size},
    {"passes", test_passes},
    {"transforms_local", test_transforms_local},
    {"errors", test_errors},
    {NULL, NULL},
};
