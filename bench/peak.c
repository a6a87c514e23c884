/*
 * bench/peak.c - print this core's float32 FMA peak in GFLOP/s (one
 * number), measured with the compiler and flags Kiln's kernels use.  The
 * benchmark harness (bench/models.py) quotes its results against it.
 */
#include <stdio.h>

#include "peak_util.h"

int main(void) {
  double p = bench_measure_peak();
  if (p <= 0) return 1;
  printf("%.1f\n", p);
  return 0;
}
