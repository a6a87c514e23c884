/*
 * bench/peak.c - print the float32 FMA peak in GFLOP/s (one number) of one
 * core, or with --threads N of N threads running at once, measured with
 * the compiler and flags Kiln's kernels use.  The benchmark harness
 * (bench/models.py) quotes its results against the one-core figure.
 * --bf16 prints one core's AVX512-BF16 VDPBF16PS peak instead (2 FLOPs per
 * bfloat16 product; docs/bf16.md), and fails where the CPU lacks it;
 * --vnni one core's AVX512-VNNI VPDPBUSD peak in GOP/s (2 ops per uint8 x
 * int8 product; docs/int8.md), likewise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peak_util.h"

int main(int argc, char **argv) {
  int threads = 1, bf16 = 0, vnni = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc && atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= 64) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--bf16")) {
      bf16 = 1;
    } else if (!strcmp(argv[i], "--vnni")) {
      vnni = 1;
    } else {
      fprintf(stderr, "usage: %s [--threads N | --bf16 | --vnni]  (N from 1 to 64)\n", argv[0]);
      return 2;
    }
  }
  if ((bf16 || vnni) && threads != 1) {
    fprintf(stderr, "%s: --bf16 and --vnni measure one core; leave out --threads\n", argv[0]);
    return 2;
  }
  if (bf16 && vnni) {
    fprintf(stderr, "%s: --bf16 or --vnni, not both\n", argv[0]);
    return 2;
  }
  double p = bf16 ? bench_measure_peak_bf16() : vnni ? bench_measure_peak_vnni() : bench_measure_peak_threads(threads);
  if (p <= 0) {
    if (bf16) fprintf(stderr, "%s: no VDPBF16PS here (the CPU or the compiler lacks AVX512-BF16)\n", argv[0]);
    if (vnni) fprintf(stderr, "%s: no VPDPBUSD here (the CPU or the compiler lacks AVX512-VNNI)\n", argv[0]);
    return 1;
  }
  printf("%.1f\n", p);
  return 0;
}
