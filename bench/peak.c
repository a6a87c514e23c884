/*
 * bench/peak.c - print the float32 FMA peak in GFLOP/s (one number) of one
 * core, or with --threads N of N threads running at once, measured with
 * the compiler and flags Kiln's kernels use.  The benchmark harness
 * (bench/models.py) quotes its results against the one-core figure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peak_util.h"

int main(int argc, char **argv) {
  int threads = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc && atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= 64) {
      threads = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--threads N]  (N from 1 to 64)\n", argv[0]);
      return 2;
    }
  }
  double p = bench_measure_peak_threads(threads);
  if (p <= 0) return 1;
  printf("%.1f\n", p);
  return 0;
}
