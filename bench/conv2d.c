/*
 * bench/conv2d.c - GFLOP/s of conv2d_NCHWc.x86 with its fallback config on
 * every distinct conv2d layer of ResNet-50 and VGG-16 at batch 1, on one
 * thread and on two, beside the one-core FMA peak measured by the same
 * program (bench/matmul.c's method) and each layer's fraction of it.
 *
 * Each layer is built once (the module's parallel loop runs on the pool's
 * threads, so the same module serves both columns), checked against a
 * direct convolution at a few hundred sampled outputs, then timed: the
 * fastest of several runs after a warm-up (the peak is also a best of
 * runs).  The machine may be shared: a busy second core shows as a
 * 2-thread column no faster than the 1-thread one.
 *
 *   bench_conv2d [--layer SUBSTR] [--keep DIR] [--reps N] [--cfg JSON] [--epilogue]
 * --layer runs the layers whose name contains SUBSTR; --keep keeps the
 * generated C sources in DIR; --cfg replaces the fallback config by an
 * entity list (e.g. '[["tile_ic","sp",[-1,16]], ...]'); --epilogue fuses a
 * per-channel bias add and a relu into each layer (the GFLOP/s still count
 * the convolution only).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "codegen/codegen.h"
#include "peak_util.h"
#include "topi/topi.h"

typedef struct Layer {
  const char *name;
  int64_t c, h, w, oc, k;
  int stride, pad;
} Layer;

/* The distinct conv2d layers (as in TopHub's resnet50v1 and vgg16 logs). */
static const Layer layers[] = {
    {"resnet50.conv1 7x7/2", 3, 224, 224, 64, 7, 2, 3},
    {"resnet50.1x1 64->64 @56", 64, 56, 56, 64, 1, 1, 0},
    {"resnet50.3x3 64->64 @56", 64, 56, 56, 64, 3, 1, 1},
    {"resnet50.1x1 64->256 @56", 64, 56, 56, 256, 1, 1, 0},
    {"resnet50.1x1 256->64 @56", 256, 56, 56, 64, 1, 1, 0},
    {"resnet50.1x1 256->128 @56", 256, 56, 56, 128, 1, 1, 0},
    {"resnet50.3x3/2 128->128 @56", 128, 56, 56, 128, 3, 2, 1},
    {"resnet50.1x1/2 256->512 @56", 256, 56, 56, 512, 1, 2, 0},
    {"resnet50.1x1 128->512 @28", 128, 28, 28, 512, 1, 1, 0},
    {"resnet50.1x1 512->128 @28", 512, 28, 28, 128, 1, 1, 0},
    {"resnet50.3x3 128->128 @28", 128, 28, 28, 128, 3, 1, 1},
    {"resnet50.1x1 512->256 @28", 512, 28, 28, 256, 1, 1, 0},
    {"resnet50.3x3/2 256->256 @28", 256, 28, 28, 256, 3, 2, 1},
    {"resnet50.1x1/2 512->1024 @28", 512, 28, 28, 1024, 1, 2, 0},
    {"resnet50.1x1 256->1024 @14", 256, 14, 14, 1024, 1, 1, 0},
    {"resnet50.1x1 1024->256 @14", 1024, 14, 14, 256, 1, 1, 0},
    {"resnet50.3x3 256->256 @14", 256, 14, 14, 256, 3, 1, 1},
    {"resnet50.1x1 1024->512 @14", 1024, 14, 14, 512, 1, 1, 0},
    {"resnet50.3x3/2 512->512 @14", 512, 14, 14, 512, 3, 2, 1},
    {"resnet50.1x1/2 1024->2048 @14", 1024, 14, 14, 2048, 1, 2, 0},
    {"resnet50.1x1 512->2048 @7", 512, 7, 7, 2048, 1, 1, 0},
    {"resnet50.1x1 2048->512 @7", 2048, 7, 7, 512, 1, 1, 0},
    {"resnet50.3x3 512->512 @7", 512, 7, 7, 512, 3, 1, 1},
    {"vgg16.3x3 3->64 @224", 3, 224, 224, 64, 3, 1, 1},
    {"vgg16.3x3 64->64 @224", 64, 224, 224, 64, 3, 1, 1},
    {"vgg16.3x3 64->128 @112", 64, 112, 112, 128, 3, 1, 1},
    {"vgg16.3x3 128->128 @112", 128, 112, 112, 128, 3, 1, 1},
    {"vgg16.3x3 128->256 @56", 128, 56, 56, 256, 3, 1, 1},
    {"vgg16.3x3 256->256 @56", 256, 56, 56, 256, 3, 1, 1},
    {"vgg16.3x3 256->512 @28", 256, 28, 28, 512, 3, 1, 1},
    {"vgg16.3x3 512->512 @28", 512, 28, 28, 512, 3, 1, 1},
    {"vgg16.3x3 512->512 @14", 512, 14, 14, 512, 3, 1, 1},
};

static DLTensor *array(int ndim, const int64_t *shape) {
  DLTensor *a = NULL;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(ndim, shape, DT_F32, cpu, &a)) return NULL;
  return a;
}

static int64_t numel(const DLTensor *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  return n;
}

static unsigned rng = 1;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) % 2000) / 1000.0f - 1.0f;
}

/* One output element of the convolution, computed directly from the
 * blocked arrays. */
static double direct(const Layer *L, const DLTensor *d, const DLTensor *k, int64_t oc, int64_t oh, int64_t ow) {
  int64_t icb = d->shape[4], ocb = k->shape[5], H = L->h, W = L->w;
  const float *D = d->data, *K = k->data;
  double s = 0;
  for (int64_t c = 0; c < L->c; c++)
    for (int64_t y = 0; y < L->k; y++)
      for (int64_t x = 0; x < L->k; x++) {
        int64_t ih = oh * L->stride + y - L->pad, iw = ow * L->stride + x - L->pad;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        double dv = D[(((c / icb) * H + ih) * W + iw) * icb + c % icb];
        double kv = K[((((oc / ocb) * (L->c / icb) + c / icb) * L->k + y) * L->k + x) * icb * ocb + (c % icb) * ocb +
                      oc % ocb];
        s += dv * kv;
      }
  return s;
}

/* The best of reps runs after a warm-up: on a shared machine other work
 * only ever slows a run down, so the fastest run is the kernel's speed. */
static double time_run(KilnFunction *f, KilnValue *args, int *codes, int nargs, int reps) {
  KilnValue ret;
  int rc;
  kiln_func_call(f, args, codes, nargs, &ret, &rc); /* warm up */
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = kiln_now_seconds();
    kiln_func_call(f, args, codes, nargs, &ret, &rc);
    double t = kiln_now_seconds() - t0;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *only = NULL, *keep = NULL, *cfg_text = NULL;
  int reps = 0;
  bool epilogue = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--layer") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cfg") && i + 1 < argc) cfg_text = argv[++i];
    else if (!strcmp(argv[i], "--epilogue")) epilogue = true;
    else {
      fprintf(stderr, "usage: %s [--layer SUBSTR] [--keep DIR] [--reps N] [--cfg JSON] [--epilogue]\n", argv[0]);
      return 2;
    }
  }
  kiln_set_num_threads(1);
  double peak = bench_measure_peak();
  printf("FMA peak (one core, measured): %.1f GFLOP/s; SIMD width %d floats\n\n", peak, autotune_simd_lanes());
  printf("%-32s %-44s %9s %9s %6s %6s\n", "layer", "fallback config", "1 thread", "2 threads", "%peak", "%2peak");
  const Template *tm = autotune_template("conv2d_NCHWc.x86");
  double sum1 = 0, sum2 = 0, flops_all = 0, t1_all = 0, t2_all = 0;
  int nl = 0;
  for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
    const Layer *L = &layers[li];
    if (only && !strstr(L->name, only)) continue;
    KArena *ar = kiln_arena_new();
    kiln_arena_push(ar);
    Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, L->c, L->h, L->w}, (int64_t[]){L->oc, L->c, L->k, L->k},
                             (int[]){L->stride, L->stride}, (int[]){L->pad, L->pad, L->pad, L->pad}, (int[]){1, 1},
                             "float32", "float32");
    ConfigEntity *cfg = cfg_text ? config_entity_from_json(cfg_text) : template_fallback(tm, wl);
    Schedule *s = NULL;
    int nargs = 0;
    Tensor **args = NULL, *fused_args[4];
    KilnModule *m = NULL;
    if (cfg && tm->instantiate(wl, cfg, &s, &nargs, &args) == 0 && epilogue) {
      /* the same conv with bias + relu fused: the template's group schedule */
      Tensor *conv = args[2];
      int64_t ocb = te_dim(conv, 4);
      Tensor *bias = te_placeholder_c("bias", 4, (int64_t[]){L->oc / ocb, 1, 1, ocb}, DT_F32);
      Expr **v = te_axis_vars(5, NULL);
      Expr *z = ir_i32(0);
      Tensor *add = te_compute("T_add", 5, conv->shape, v,
                               ir_add(te_read(conv, 5, v), te_read4(bias, v[1], z, z, v[4])), "broadcast");
      v = te_axis_vars(5, NULL);
      Tensor *relu = te_compute("T_relu", 5, conv->shape, v, ir_max(te_read(add, 5, v), ir_f32(0)), "elemwise");
      s = te_create_schedule(1, &relu);
      if (tm->schedule(s, cfg, wl, conv, 1, &relu)) s = NULL;
      fused_args[0] = args[0], fused_args[1] = args[1], fused_args[2] = bias, fused_args[3] = relu;
      args = fused_args;
      nargs = 4;
    }
    if (s) {
      CompileOptions copt = {NULL, NULL, keep};
      m = kiln_build(s, nargs, args, "conv", NULL, &copt);
    }
    if (!m) {
      printf("%-32s build failed: %s\n", L->name, kiln_get_error());
      kiln_arena_pop();
      kiln_arena_free(ar);
      continue;
    }
    int64_t shp[4][6];
    DLTensor *arr[4];
    for (int i = 0; i < nargs; i++) {
      te_shape_const(args[i], shp[i]);
      arr[i] = array(args[i]->ndim, shp[i]);
      if (i < nargs - 1)
        for (int64_t j = 0; j < numel(arr[i]); j++) ((float *)arr[i]->data)[j] = frand();
    }
    KilnFunction *f;
    kiln_module_get_function(m, "conv", &f);
    KilnValue av[4];
    int codes[4];
    for (int i = 0; i < nargs; i++) av[i].v_handle = arr[i], codes[i] = KILN_DLTENSOR;
    KilnValue ret;
    int rc;
    if (kiln_func_call(f, av, codes, nargs, &ret, &rc)) printf("  run failed: %s\n", kiln_last_error());
    /* check sampled outputs */
    DLTensor *out = arr[nargs - 1];
    int64_t OH = out->shape[2], OW = out->shape[3], ocb = out->shape[4];
    double maxerr = 0;
    for (int t = 0; t < 300; t++) {
      int64_t oc = (int64_t)(rng = rng * 1664525u + 1013904223u) % L->oc, oh = (rng >> 4) % OH, ow = (rng >> 12) % OW;
      double ref = direct(L, arr[0], arr[1], oc, oh, ow);
      if (epilogue) {
        ref += ((float *)arr[2]->data)[oc];
        if (ref < 0) ref = 0;
      }
      double got = ((float *)out->data)[(((oc / ocb) * OH + oh) * OW + ow) * ocb + oc % ocb];
      double e = fabs(got - ref) / (1 + fabs(ref));
      if (e > maxerr) maxerr = e;
    }
    double flops = 2.0 * L->oc * OH * OW * L->c * L->k * L->k;
    int r = reps ? reps : (flops > 2e9 ? 5 : flops > 2e8 ? 11 : 31);
    kiln_set_num_threads(1);
    double t1 = time_run(f, av, codes, nargs, r);
    kiln_set_num_threads(2);
    double t2 = time_run(f, av, codes, nargs, r);
    kiln_set_num_threads(1);
    double g1 = flops / t1 * 1e-9, g2 = flops / t2 * 1e-9;
    /* a compact config: the inner parts of the splits, the options */
    StrBuf cs = {0};
    for (int i = 0; i < cfg->n; i++) {
      const KnobEntity *e = &cfg->e[i];
      if (e->kind == KNOB_SPLIT) sb_printf(&cs, "%s=%lld ", e->name + 5, (long long)e->ints[e->n - 1]);
      else sb_printf(&cs, "%s=%lld ", e->name, (long long)e->val.i);
    }
    printf("%-32s %-44s %9.1f %9.1f %5.0f%% %5.0f%%%s\n", L->name, cs.data, g1, g2, 100 * g1 / peak, 50 * g2 / peak,
           maxerr > 1e-3 ? "  WRONG RESULT" : "");
    fflush(stdout);
    sb_free(&cs);
    sum1 += g1, sum2 += g2, nl++;
    flops_all += flops, t1_all += t1, t2_all += t2;
    kiln_func_free(f);
    for (int i = 0; i < nargs; i++) kiln_array_free(arr[i]);
    kiln_module_free(m);
    kiln_arena_pop();
    kiln_arena_free(ar);
  }
  if (nl)
    printf("\n%d layers: mean %.1f GFLOP/s (1 thread), %.1f (2 threads); all layers once: %.1f / %.1f GFLOP/s = "
           "%.0f%% / %.0f%% of peak\n",
           nl, sum1 / nl, sum2 / nl, flops_all / t1_all * 1e-9, flops_all / t2_all * 1e-9,
           100 * flops_all / t1_all * 1e-9 / peak, 50 * flops_all / t2_all * 1e-9 / peak);
  return 0;
}
