/*
 * bench/bench_util.c - the harness the kernel benchmarks share: a
 * template instance built from a config, its arguments allocated and
 * filled with a fixed pattern, timed over a number of calls, released.
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>

void bench_evict(const DLTensor *t) {
  const char *p = t->data;
  size_t n = (size_t)(t->dtype.bits / 8);
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  for (size_t i = 0; i < n; i += 64) __builtin_ia32_clflush(p + i);
  __builtin_ia32_mfence();
}

int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int bench_kern_build(const Template *tm, const Workload *wl, const ConfigEntity *cfg, BenchKern *k) {
  Schedule *s;
  Tensor **args;
  int na;
  if (template_instantiate(tm, target_host(), wl, cfg, &s, &na, &args)) return -1;
  if (na > BENCH_MAX_ARGS) {
    kiln_set_error("bench: %s takes %d arguments, more than %d", tm->name, na, BENCH_MAX_ARGS);
    return -1;
  }
  k->mod = kiln_build(s, na, args, "f", NULL, NULL);
  if (!k->mod || kiln_module_get_function(k->mod, "f", &k->f)) return -1;
  DLDevice cpu = {kDLCPU, 0};
  for (int i = 0; i < na; i++) {
    int64_t sh[8];
    te_shape_const(args[i], sh);
    if (kiln_array_empty(args[i]->ndim, sh, args[i]->dtype, cpu, &k->arr[i])) return -1;
    k->na = i + 1;
    float *p = k->arr[i]->data;
    int64_t n = kiln_array_nbytes(k->arr[i]) / 4;
    for (int64_t j = 0; j < n; j++) p[j] = (float)((j * 7919) % 2000) / 1000.0f - 1.0f;
  }
  return 0;
}

double bench_kern_run(BenchKern *k, int number, double (*clock)(void)) {
  KilnValue av[BENCH_MAX_ARGS], ret;
  int codes[BENCH_MAX_ARGS], rc;
  if (!clock) clock = kiln_now_seconds;
  for (int i = 0; i < k->na; i++) av[i].v_handle = k->arr[i], codes[i] = KILN_DLTENSOR;
  double t0 = clock();
  for (int i = 0; i < number; i++)
    if (kiln_func_call(k->f, av, codes, k->na, &ret, &rc)) {
      fprintf(stderr, "bench: the kernel failed: %s\n", kiln_get_error());
      exit(1);
    }
  return (clock() - t0) / number;
}

void bench_kern_release(BenchKern *k) {
  for (int i = 0; i < k->na; i++) kiln_array_free(k->arr[i]);
  if (k->f) kiln_func_free(k->f);
  if (k->mod) kiln_module_free(k->mod);
  *k = (BenchKern){0};
}
