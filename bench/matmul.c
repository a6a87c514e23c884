/*
 * bench/matmul.c - GFLOP/s of float32 matmul built from Kiln's schedule
 * primitives, beside the machine's FMA peak measured by the same program.
 *
 * The schedule is the classic CPU one: B packed into [N/bn][K][bn] panels,
 * C tiled into (mr x bn) blocks whose accumulators live in a local cache
 * stage (cache_write) computed at the tile, the reduction split and
 * unrolled, the block's rows unrolled and its columns vectorized.  A few
 * (mr, bn, kunroll) choices are tried and the best is reported.
 *
 * One core by default (the peak is per core); --threads N uses more.
 * Timing: median of several runs; the machine is shared, so read ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "peak_util.h"

static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct Tile {
  int mr, bn, ku;
} Tile;

static KilnModule *build_matmul(int64_t n, Tile t, bool parallel, Tensor **A, Tensor **B, Tensor **C) {
  int64_t M = n, K = n, N = n;
  *A = te_placeholder_c("A", 2, (int64_t[]){M, K}, DT_F32);
  *B = te_placeholder_c("B", 2, (int64_t[]){K, N}, DT_F32);
  /* packed B: [N / bn][K][bn] */
  Expr **pv = te_axis_vars(3, (const char *[]){"x", "y", "z"});
  Tensor *P = te_compute("packedB", 3, (Expr *[]){ir_i32(N / t.bn), ir_i32(K), ir_i32(t.bn)}, pv,
                         te_read2(*B, pv[1], ir_add(ir_mul(pv[0], ir_i32(t.bn)), pv[2])), NULL);
  IterVar *k = te_reduce_axis_c(K, "k");
  Expr **v = te_axis_vars(2, (const char *[]){"x", "y"});
  Expr *body = ir_sum(ir_mul(te_read2(*A, v[0], k->var),
                             te_read3(P, ir_floordiv(v[1], ir_i32(t.bn)), k->var, ir_floormod(v[1], ir_i32(t.bn)))),
                      1, &k);
  *C = te_compute("C", 2, (Expr *[]){ir_i32(M), ir_i32(N)}, v, body, NULL);
  Schedule *s = te_create_schedule(1, C);
  Tensor *CC = sch_cache_write(s, *C, "local");
  Stage *sc = sch_stage(s, *C), *scc = sch_stage(s, CC), *sp = sch_stage(s, P);
  IterVar *xo, *yo, *xi, *yi;
  stage_tile(sc, stage_axis(sc, 0), stage_axis(sc, 1), ir_i32(t.mr), ir_i32(t.bn), &xo, &yo, &xi, &yi);
  stage_vectorize(sc, yi);
  if (parallel) stage_parallel(sc, xo);
  stage_compute_at(scc, sc, yo);
  IterVar *xc = stage_axis(scc, 0), *yc = stage_axis(scc, 1), *ko, *ki;
  stage_split(scc, stage_reduce_axis(scc, 0), ir_i32(t.ku), &ko, &ki);
  stage_reorder(scc, 4, (IterVar *[]){ko, ki, xc, yc});
  stage_unroll(scc, ki);
  stage_unroll(scc, xc);
  stage_vectorize(scc, yc);
  stage_vectorize(sp, stage_axis(sp, 2));
  if (parallel) stage_parallel(sp, stage_axis(sp, 0));
  KilnModule *m = kiln_build(s, 3, (Tensor *[]){*A, *B, *C}, "matmul", NULL, NULL);
  if (!m) fprintf(stderr, "build failed: %s\n", kiln_get_error());
  return m;
}

static double run(KilnModule *m, int64_t n, int reps) {
  DLDevice cpu = {kDLCPU, 0};
  DLTensor *a, *b, *c;
  int64_t shape[2] = {n, n};
  kiln_array_empty(2, shape, DT_F32, cpu, &a);
  kiln_array_empty(2, shape, DT_F32, cpu, &b);
  kiln_array_empty(2, shape, DT_F32, cpu, &c);
  for (int64_t i = 0; i < n * n; i++) {
    ((float *)a->data)[i] = (float)((i * 7) % 13) / 13.0f;
    ((float *)b->data)[i] = (float)((i * 5) % 11) / 11.0f;
  }
  KilnFunction *f;
  kiln_module_get_function(m, "matmul", &f);
  KilnValue args[3] = {{.v_handle = a}, {.v_handle = b}, {.v_handle = c}};
  int codes[3] = {KILN_DLTENSOR, KILN_DLTENSOR, KILN_DLTENSOR};
  KilnValue ret;
  int rc;
  kiln_func_call(f, args, codes, 3, &ret, &rc); /* warm up */
  /* check one element against a direct dot product */
  double ref = 0;
  int64_t ci = n / 3, cj = n / 2;
  for (int64_t kk = 0; kk < n; kk++) ref += (double)((float *)a->data)[ci * n + kk] * ((float *)b->data)[kk * n + cj];
  double got = ((float *)c->data)[ci * n + cj];
  if (got - ref > 1e-3 * (1 + ref) || ref - got > 1e-3 * (1 + ref)) fprintf(stderr, "WRONG RESULT: %g vs %g\n", got, ref);
  double times[64];
  for (int r = 0; r < reps; r++) {
    double t0 = kiln_now_seconds();
    kiln_func_call(f, args, codes, 3, &ret, &rc);
    times[r] = kiln_now_seconds() - t0;
  }
  kiln_func_free(f);
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_array_free(c);
  return 2.0 * (double)n * n * n / median(times, reps) * 1e-9;
}

int main(int argc, char **argv) {
  int threads = 1;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
  kiln_set_num_threads(threads);
  double peak = bench_measure_peak();
  printf("FMA peak (one core, measured): %.1f GFLOP/s\n", peak);
  Tile tiles[] = {{4, 32, 4}, {6, 32, 4}, {8, 32, 4}, {4, 64, 2}, {12, 16, 4}};
  int64_t sizes[] = {512, 1024};
  for (size_t si = 0; si < 2; si++) {
    int64_t n = sizes[si];
    double best = 0;
    Tile bt = tiles[0];
    for (size_t ti = 0; ti < sizeof tiles / sizeof tiles[0]; ti++) {
      KArena *ar = kiln_arena_new();
      kiln_arena_push(ar);
      Tensor *A, *B, *C;
      KilnModule *m = build_matmul(n, tiles[ti], threads > 1, &A, &B, &C);
      double gf = m ? run(m, n, n >= 1024 ? 7 : 15) : 0;
      kiln_module_free(m);
      kiln_arena_pop();
      kiln_arena_free(ar);
      printf("  %lld^3  mr=%-2d bn=%-2d kunroll=%d : %7.1f GFLOP/s\n", (long long)n, tiles[ti].mr, tiles[ti].bn, tiles[ti].ku, gf);
      if (gf > best) {
        best = gf;
        bt = tiles[ti];
      }
    }
    printf("matmul %lld^3 float32, %d thread(s): best %.1f GFLOP/s (mr=%d bn=%d) = %.0f%% of %s peak\n", (long long)n,
           threads, best, bt.mr, bt.bn, peak > 0 ? 100.0 * best / (peak * threads) : 0.0, threads > 1 ? "the cores'" : "one core's");
  }
  return 0;
}
