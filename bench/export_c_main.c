/*
 * export_c_main.c - times a model exported with kiln compile --emit c
 * (bench/export_c.py builds it against the export's header and library):
 *   ./bench_c RUNS [WEIGHTS.bin]  -> one line per run: wall ms, CPU ms
 * (CPU: the calling thread's CPU time, which a loaded machine disturbs
 * less than the wall clock; the model runs on that thread alone with
 * --threads none).
 * The model's names come from -D: BENCH_HEADER ("NAME.h"), BENCH_RUN
 * (NAME_run), BENCH_M(x) (NAME_##x in capitals), BENCH_SEPARATE (weights
 * in a .bin).  One input and one output, float32.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include BENCH_HEADER

static void *alloc64(size_t n) {
  void *p = NULL;
  return posix_memalign(&p, 64, n ? n : 1) ? NULL : p;
}

static double ms(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 10;
  float *in = alloc64(BENCH_M(INPUT0_BYTES)), *out = alloc64(BENCH_M(OUTPUT0_BYTES));
  void *ws = alloc64(BENCH_M(WORKSPACE_BYTES));
  if (!in || !out || !ws) return 1;
  srand(1);
  for (long i = 0; i < BENCH_M(INPUT0_ELEMS); i++) in[i] = (float)rand() / RAND_MAX - 0.5f;
#ifdef BENCH_SEPARATE
  void *w = alloc64(BENCH_M(WEIGHTS_BYTES));
  FILE *f = argc > 2 ? fopen(argv[2], "rb") : NULL;
  if (!w || !f || fread(w, 1, BENCH_M(WEIGHTS_BYTES), f) != BENCH_M(WEIGHTS_BYTES)) return fprintf(stderr, "weights?\n"), 1;
  fclose(f);
#define RUN() BENCH_RUN(in, out, ws, w)
#else
#define RUN() BENCH_RUN(in, out, ws)
#endif
  if (RUN()) return 2; /* warm-up */
  for (int r = 0; r < runs; r++) {
    double t0 = ms(CLOCK_MONOTONIC), c0 = ms(CLOCK_THREAD_CPUTIME_ID);
    if (RUN()) return 2;
    printf("%.4f %.4f\n", ms(CLOCK_MONOTONIC) - t0, ms(CLOCK_THREAD_CPUTIME_ID) - c0);
  }
  return 0;
}
