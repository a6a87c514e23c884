/*
 * bench/dense.c - GFLOP/s of dense_pack.x86 per layer shape, beside the
 * machine's FMA peak measured by the same program.
 *
 * Each shape (data [M, K], weight [N, K]) is built from the template's
 * fallback config (what an untuned model runs) and, with --config, from
 * further entity lists; the kernels of one shape run alternately (ROUNDS
 * rounds of NUMBER calls after a warm-up) and each reports its median
 * and best round, as GFLOP/s and as a fraction of the peak (one core's
 * peak times --threads; the peak is the best of many short runs, so on a
 * shared machine the best round is the figure to set beside it).
 * The weight is the packed [N/bn, K, bn] a model carries as a parameter.
 * Not a test: a figure for the docs.
 *
 * --cpu-time times with the process's CPU time instead of the wall clock:
 * at one thread on a shared machine, waiting for a core then costs
 * nothing (at more threads, a thread spinning at a barrier counts).
 *
 *   bench_dense [--threads N] [--rounds N] [--cpu-time] [--cold] [--shape MxNxK]...
 *               [--config '[["tile_y","sp",[-1,1,12]], ...]']...
 *
 * Without --shape: the dense layers of ViT-B/16 (197 tokens), ConvNeXt-T
 * (49 and 3136 positions) and the suite's transformer encoders (d_model
 * 256, feed-forward 1024; 32, 128 and 384 tokens).
 *
 * --cold evicts the weight from the caches before each call (untimed).
 *
 * --template NAME times another dense template on the --shape layers,
 * one that takes float32 data: dense_pack_bf16.x86 (its bfloat16 weight
 * pairs hold the bytes float32's fill writes; the timing does not depend
 * on the values).
 *
 * --bmm BxMxNxK (repeatable) benchmarks batch_matmul.x86 instead: B
 * products of [M, K] x [K, N] (attention's Q K^T and P V), built and
 * timed the same way; --config entities then apply to those shapes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "peak_util.h"

#define NUMBER 5
#define MAX_SHAPES 32
#define MAX_CONFIGS 8

static bool use_cpu_time;

static double now(void) {
  if (!use_cpu_time) return kiln_now_seconds();
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --cold: the weight (argument 1) evicted from every cache level before
 * each call, outside the timing: in a model a layer's weights were last
 * read a whole inference ago (ViT-B/16 carries 346 MB of them), so they
 * come from memory, where here they would stay in L2/L3 between calls. */
static bool cold;

static double run(BenchKern *k) {
  double s = 0;
  if (!cold) s = bench_kern_run(k, NUMBER, now);
  else {
    for (int i = 0; i < NUMBER; i++) bench_evict(k->arr[1]), s += bench_kern_run(k, 1, now);
    s /= NUMBER;
  }
  return s / (use_cpu_time ? kiln_get_num_threads() : 1);
}

static const int64_t default_shapes[][3] = {
    {197, 3072, 768}, {197, 768, 3072}, {197, 2304, 768}, {197, 768, 768}, /* ViT-B/16 */
    {49, 3072, 768},  {49, 768, 3072},  {3136, 384, 96},  {3136, 96, 384}, /* ConvNeXt-T stages 4 and 1 */
    {32, 1024, 256},  {128, 1024, 256}, {128, 256, 1024}, {384, 768, 256},  /* encoders: d 256, ff 1024 */
};

int main(int argc, char **argv) {
  int threads = 2, rounds = 9, nshapes = 0, nconf = 0;
  int64_t shapes[MAX_SHAPES][4]; /* M, N, K, batch (0: a dense layer) */
  const char *configs[MAX_CONFIGS], *dense_name = "dense_pack.x86";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cpu-time")) use_cpu_time = true;
    else if (!strcmp(argv[i], "--cold")) cold = true;
    else if (!strcmp(argv[i], "--template") && i + 1 < argc) dense_name = argv[++i];
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < MAX_SHAPES) {
      long long m, n, k;
      if (sscanf(argv[++i], "%lldx%lldx%lld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1) {
        fprintf(stderr, "bench_dense: --shape takes MxNxK (data [M, K], weight [N, K]), got '%s'\n", argv[i]);
        return 2;
      }
      shapes[nshapes][0] = m, shapes[nshapes][1] = n, shapes[nshapes][2] = k, shapes[nshapes][3] = 0, nshapes++;
    } else if (!strcmp(argv[i], "--bmm") && i + 1 < argc && nshapes < MAX_SHAPES) {
      long long b, m, n, k;
      if (sscanf(argv[++i], "%lldx%lldx%lldx%lld", &b, &m, &n, &k) != 4 || b < 1 || m < 1 || n < 1 || k < 1) {
        fprintf(stderr, "bench_dense: --bmm takes BxMxNxK (B products of [M, K] x [K, N]), got '%s'\n", argv[i]);
        return 2;
      }
      shapes[nshapes][0] = m, shapes[nshapes][1] = n, shapes[nshapes][2] = k, shapes[nshapes][3] = b, nshapes++;
    } else if (!strcmp(argv[i], "--config") && i + 1 < argc && nconf < MAX_CONFIGS) configs[nconf++] = argv[++i];
    else {
      fprintf(stderr, "usage: bench_dense [--threads N] [--rounds N] [--cpu-time] [--cold] [--template NAME] "
                      "[--shape MxNxK]... [--bmm BxMxNxK]... "
                      "[--config ENTITY_JSON]...\n");
      return 2;
    }
  }
  if (rounds < 1) rounds = 1;
  if (!nshapes) {
    nshapes = (int)(sizeof default_shapes / sizeof default_shapes[0]);
    for (int si = 0; si < nshapes; si++)
      for (int d = 0; d < 4; d++) shapes[si][d] = d < 3 ? default_shapes[si][d] : 0;
  }
  double peak1 = bench_measure_peak(), peak = peak1 * threads;
  kiln_set_num_threads(threads);
  const Template *tdense = template_lookup(dense_name), *tbmm = template_lookup("batch_matmul.x86");
  if (!tdense || !tbmm) {
    fprintf(stderr, "bench_dense: %s\n", kiln_get_error());
    return 1;
  }
  printf("FMA peak %.1f GFLOP/s per core, %d threads: %.1f GFLOP/s; times: %s\n", peak1, threads, peak,
         use_cpu_time ? "CPU (per thread)" : "wall");
  printf("%-18s %-8s %10s %8s %6s %8s %6s  %s\n", "M x N x K", "config", "median", "GFLOP/s", "peak", "best", "peak",
         "entities");
  for (int si = 0; si < nshapes; si++) {
    int64_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], B = shapes[si][3];
    const Template *tm = B ? tbmm : tdense;
    Workload *wl = B ? wl_batch_matmul("batch_matmul.x86", B, M, N, K, "float32", "float32")
                     : wl_dense(tm->name, M, N, K, "float32", "float32");
    ConfigEntity *cfgs[MAX_CONFIGS + 1];
    const char *names[MAX_CONFIGS + 1];
    BenchKern ks[MAX_CONFIGS + 1];
    int nk = 0;
    cfgs[0] = wl ? template_fallback(tm, target_host(), wl) : NULL;
    names[0] = "fallback";
    for (int c = 0; c < nconf; c++) cfgs[c + 1] = config_entity_from_json(configs[c]), names[c + 1] = "config";
    char label[48];
    if (B) snprintf(label, sizeof label, "%lldx%lldx%lldx%lld", (long long)B, (long long)M, (long long)N, (long long)K);
    else snprintf(label, sizeof label, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
    for (int c = 0; c <= nconf; c++) {
      memset(&ks[nk], 0, sizeof ks[nk]);
      if (!cfgs[c] || (tm->check && tm->check(target_host(), cfgs[c], wl)) || bench_kern_build(tm, wl, cfgs[c], &ks[nk])) {
        printf("%-18s %-8s build failed: %s\n", label, names[c], kiln_get_error());
        kiln_clear_error();
        bench_kern_release(&ks[nk]);
        continue;
      }
      cfgs[nk] = cfgs[c], names[nk] = names[c], nk++;
    }
    double *t = malloc(sizeof(double) * (size_t)(rounds * nk));
    for (int c = 0; c < nk; c++) run(&ks[c]);
    for (int r = 0; r < rounds; r++)
      for (int c = 0; c < nk; c++) t[c * rounds + r] = run(&ks[c]);
    double fl = 2.0 * (double)(B ? B : 1) * (double)M * (double)N * (double)K;
    for (int c = 0; c < nk; c++) {
      qsort(t + c * rounds, (size_t)rounds, sizeof(double), bench_cmp_double);
      double med = t[c * rounds + rounds / 2], gf = fl / med * 1e-9, gb = fl / t[c * rounds] * 1e-9;
      printf("%-18s %-8s %7.1f us %8.1f %5.0f%% %8.1f %5.0f%%  %s\n", label, names[c], med * 1e6, gf,
             peak > 0 ? 100.0 * gf / peak : 0.0, gb, peak > 0 ? 100.0 * gb / peak : 0.0, config_entity_json(cfgs[c]));
      bench_kern_release(&ks[c]);
    }
    free(t);
  }
  return 0;
}
