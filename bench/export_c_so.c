/*
 * export_c_so.c - times a model's shared library (kiln compile) the way
 * export_c_main.c times its standalone C export, for bench/export_c.py:
 *   ./bench_so MODEL.so RUNS  -> one line per run: wall ms, CPU ms
 * (the calling thread's CPU time; run with KILN_NUM_THREADS=1, so the
 * kernels run on that thread).  One float32 input, random.
 */
#define _POSIX_C_SOURCE 200809L
#include <kiln/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double ms(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  KilnModule *mod;
  KilnGraphExecutor *ex;
  KilnTensorInfo in;
  DLTensor *x;
  if (argc != 3 || kiln_module_load(argv[1], &mod) || kiln_graph_executor_create(mod, &ex) ||
      kiln_graph_executor_input_info(ex, 0, &in) ||
      kiln_array_empty(in.ndim, in.shape, in.dtype, (DLDevice){kDLCPU, 0}, &x))
    return fprintf(stderr, "%s\n", argc == 3 ? kiln_last_error() : "usage: bench_so MODEL.so RUNS"), 1;
  srand(1);
  float *p = x->data;
  for (size_t i = 0; i < kiln_array_nbytes(x) / 4; i++) p[i] = (float)rand() / RAND_MAX - 0.5f;
  if (kiln_graph_executor_set_input(ex, 0, x) || kiln_graph_executor_run(ex)) return fprintf(stderr, "%s\n", kiln_last_error()), 1;
  for (int r = 0; r < atoi(argv[2]); r++) {
    double w = ms(CLOCK_MONOTONIC), c = ms(CLOCK_THREAD_CPUTIME_ID);
    if (kiln_graph_executor_run(ex)) return 1;
    printf("%.4f %.4f\n", ms(CLOCK_MONOTONIC) - w, ms(CLOCK_THREAD_CPUTIME_ID) - c);
  }
  return 0;
}
