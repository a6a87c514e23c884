/* bench/bench_util.h - one template instance built, filled and timed (bench_util.c). */
#ifndef KILN_BENCH_BENCH_UTIL_H
#define KILN_BENCH_BENCH_UTIL_H

#include "autotune/autotune.h"
#include "codegen/codegen.h"

#define BENCH_MAX_ARGS 8

/* A template instance compiled to a module, with its argument arrays. */
typedef struct BenchKern {
  KilnModule *mod;
  KilnFunction *f;
  DLTensor *arr[BENCH_MAX_ARGS];
  int na;
} BenchKern;

/* Instantiate tm for wl with cfg, build it (function "f") and allocate
 * its arguments filled with a fixed pattern in [-1, 1); 0 on success,
 * -1 with the error set.  *k must be zeroed first; release it either way. */
int bench_kern_build(const Template *tm, const Workload *wl, const ConfigEntity *cfg, BenchKern *k);

/* Seconds one call takes, the mean of `number` calls timed with `clock`
 * (kiln_now_seconds when NULL); exits the program with the error if a
 * call fails (a benchmark's figures mean nothing past that). */
double bench_kern_run(BenchKern *k, int number, double (*clock)(void));

/* Free the module, function and arrays bench_kern_build made. */
void bench_kern_release(BenchKern *k);

/* Flush array t's bytes from every cache level (clflush, then mfence):
 * --cold runs, where a layer's weights come from memory as in a model. */
void bench_evict(const DLTensor *t);

/* qsort comparator of doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);

#endif
