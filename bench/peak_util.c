/*
 * bench/peak_util.c - the one-core float32 FMA peak every benchmark quotes
 * its results against: independent vector FMA chains compiled with the
 * compiler and flags Kiln's kernels use, timed, best of several runs; and
 * the same on N threads at once (each core's clock may drop when all of
 * them run wide FMAs, so N cores' peak is measured, not N x one core's);
 * and the one-core peak of AVX512-BF16's VDPBF16PS (the bfloat16 kernels'
 * multiply-add, docs/bf16.md), counting its 32 multiply-adds per
 * instruction; and that of AVX512-VNNI's VPDPBUSD (the int8 kernels',
 * docs/int8.md), 64 uint8 x int8 multiply-adds per instruction.
 */
#include "peak_util.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "codegen/codegen.h"

static const char *peak_src =
    "typedef float v16 __attribute__((vector_size(64)));\n"
    "float peak(long iters) {\n"
    "  v16 a0 = {1}, a1 = {2}, a2 = {3}, a3 = {4}, a4 = {5}, a5 = {6}, a6 = {7}, a7 = {8},\n"
    "      a8 = {9}, a9 = {10}, a10 = {11}, a11 = {12};\n"
    "  v16 x = {1.0000001f}, y = {0.9999999f};\n"
    "  for (long i = 0; i < iters; i++) {\n"
    "    __asm__ volatile(\"\" : \"+v\"(x), \"+v\"(y));\n"
    "    a0 = a0 * x + y; a1 = a1 * x + y; a2 = a2 * x + y; a3 = a3 * x + y;\n"
    "    a4 = a4 * x + y; a5 = a5 * x + y; a6 = a6 * x + y; a7 = a7 * x + y;\n"
    "    a8 = a8 * x + y; a9 = a9 * x + y; a10 = a10 * x + y; a11 = a11 * x + y;\n"
    "  }\n"
    "  v16 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;\n"
    "  return s[0] + s[15];\n"
    "}\n";

/* 12 independent VDPBF16PS chains (16 float32 lanes, 2 bfloat16 products
 * each); no function `peak` on a compiler or CPU without AVX512-BF16 */
static const char *peak_bf16_src =
    "#include <immintrin.h>\n"
    "#ifdef __AVX512BF16__\n"
    "float peak(long iters) {\n"
    "  __m512 a[12];\n"
    "  for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);\n"
    "  __m512i x = _mm512_set1_epi32(0x3f803f80), y = _mm512_set1_epi32(0x3f813f7f);\n"
    "  for (long i = 0; i < iters; i++) {\n"
    "    __asm__ volatile(\"\" : \"+v\"(x), \"+v\"(y));\n"
    "    for (int j = 0; j < 12; j++) a[j] = _mm512_dpbf16_ps(a[j], (__m512bh)x, (__m512bh)y);\n"
    "  }\n"
    "  __m512 s = a[0];\n"
    "  for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);\n"
    "  return _mm512_reduce_add_ps(s);\n"
    "}\n"
    "#else\n"
    "typedef int no_avx512_bf16;\n"
    "#endif\n";

/* 12 independent VPDPBUSD chains (16 int32 lanes, 4 uint8 x int8 products
 * each); no function `peak` on a compiler or CPU without AVX512-VNNI */
static const char *peak_vnni_src =
    "#include <immintrin.h>\n"
    "#ifdef __AVX512VNNI__\n"
    "float peak(long iters) {\n"
    "  __m512i a[12];\n"
    "  for (int i = 0; i < 12; i++) a[i] = _mm512_set1_epi32(i);\n"
    "  __m512i x = _mm512_set1_epi32(0x01020304), y = _mm512_set1_epi32(0x05060708);\n"
    "  for (long i = 0; i < iters; i++) {\n"
    "    __asm__ volatile(\"\" : \"+v\"(x), \"+v\"(y));\n"
    "    for (int j = 0; j < 12; j++) a[j] = _mm512_dpbusd_epi32(a[j], x, y);\n"
    "  }\n"
    "  __m512i s = a[0];\n"
    "  for (int i = 1; i < 12; i++) s = _mm512_add_epi32(s, a[i]);\n"
    "  return (float)_mm512_reduce_add_epi32(s);\n"
    "}\n"
    "#else\n"
    "typedef int no_avx512_vnni;\n"
    "#endif\n";

typedef struct {
  float (*peak)(long);
  long iters;
  pthread_barrier_t *start;
  double seconds;
} PeakThread;

/* One thread's run, timed from the common start. */
static void *peak_thread(void *arg) {
  PeakThread *pt = arg;
  pthread_barrier_wait(pt->start);
  double t0 = kiln_now_seconds();
  volatile float s = pt->peak(pt->iters);
  (void)s;
  pt->seconds = kiln_now_seconds() - t0;
  return NULL;
}

/* All threads' FMAs over the slowest thread's time of one run. */
static double peak_run(float (*peak)(long), long iters, int threads, double flops_per_iter) {
  if (threads == 1) {
    double t0 = kiln_now_seconds();
    volatile float s = peak(iters);
    (void)s;
    return (double)iters * flops_per_iter / (kiln_now_seconds() - t0) * 1e-9;
  }
  pthread_t th[64];
  PeakThread pt[64];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int i = 1; i < threads; i++) {
    pt[i] = (PeakThread){peak, iters, &start, 0};
    pthread_create(&th[i], NULL, peak_thread, &pt[i]);
  }
  pt[0] = (PeakThread){peak, iters, &start, 0};
  peak_thread(&pt[0]);
  double slowest = pt[0].seconds;
  for (int i = 1; i < threads; i++) {
    pthread_join(th[i], NULL);
    if (pt[i].seconds > slowest) slowest = pt[i].seconds;
  }
  pthread_barrier_destroy(&start);
  return threads * (double)iters * flops_per_iter / slowest * 1e-9;
}

/* Compile src (a function `float peak(long iters)` doing iters x
 * flops_per_iter FLOPs) and return its best GFLOP/s on `threads` threads. */
static double measure(const char *src, double flops_per_iter, int threads) {
  if (threads < 1 || threads > 64) return 0;
  char *dir = kiln_mkdtemp("kiln-peak-");
  if (!dir) return 0;
  char so[4096];
  snprintf(so, sizeof so, "%s/peak.so", dir);
  const char *units[1] = {src};
  double best = 0;
  if (kiln_compile_c(1, units, 0, NULL, so, NULL)) {
    fprintf(stderr, "peak: %s\n", kiln_get_error());
  } else {
    void *h = dlopen(so, RTLD_NOW);
    float (*peak)(long) = h ? (float (*)(long))dlsym(h, "peak") : NULL;
    if (peak) {
      /* many short runs (about 1 ms each), the best: on a shared machine a
       * run of tens of ms is almost always interrupted, and a kernel's
       * best-of-runs time (well under that) would then be compared with a
       * peak that other work had slowed */
      long iters = 400000;
      peak(iters * 10);
      for (int r = 0; r < 200; r++) {
        double gf = peak_run(peak, iters, threads, flops_per_iter);
        if (gf > best) best = gf;
      }
    }
    if (h) dlclose(h);
  }
  kiln_rmtree(dir);
  free(dir);
  return best;
}

double bench_measure_peak_threads(int threads) { return measure(peak_src, 12 * 16 * 2, threads); }

double bench_measure_peak(void) { return bench_measure_peak_threads(1); }

double bench_measure_peak_bf16(void) { return measure(peak_bf16_src, 12 * 16 * 2 * 2, 1); }

double bench_measure_peak_vnni(void) { return measure(peak_vnni_src, 12 * 16 * 4 * 2, 1); }
