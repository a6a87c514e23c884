/*
 * bench/tuned_vs_fallback.c - for every task in a tuning log, the best
 * record's config against the template's fallback config, timed side by
 * side in one process: both kernels are built, then run alternately
 * (ROUNDS rounds of NUMBER runs each, after a warm-up), and the medians
 * are compared.  Alternating cancels the drift of a machine shared with
 * other work, which the tuner's one-candidate-at-a-time measurements
 * cannot.  Not a test: a figure for the tuning report.
 *
 *   bench_tuned_vs_fallback RECORDS.json [--threads N] [--rounds N] [--task SUBSTR]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "codegen/codegen.h"

#define NUMBER 10

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct Kern {
  KilnModule *mod;
  KilnFunction *f;
  DLTensor *arr[8];
  int na;
} Kern;

static int build(const Template *tm, const Workload *wl, const ConfigEntity *cfg, Kern *k) {
  Schedule *s;
  Tensor **args;
  if (template_instantiate(tm, target_host(), wl, cfg, &s, &k->na, &args)) return -1;
  k->mod = kiln_build(s, k->na, args, "f", NULL, NULL);
  if (!k->mod || kiln_module_get_function(k->mod, "f", &k->f)) return -1;
  DLDevice cpu = {kDLCPU, 0};
  for (int i = 0; i < k->na; i++) {
    int64_t sh[8];
    te_shape_const(args[i], sh);
    if (kiln_array_empty(args[i]->ndim, sh, args[i]->dtype, cpu, &k->arr[i])) return -1;
    float *p = k->arr[i]->data;
    int64_t n = kiln_array_nbytes(k->arr[i]) / 4;
    for (int64_t j = 0; j < n; j++) p[j] = (float)((j * 7919) % 2000) / 1000.0f - 1.0f;
  }
  return 0;
}

static double run(Kern *k) {
  KilnValue av[8], ret;
  int codes[8], rc;
  for (int i = 0; i < k->na; i++) av[i].v_handle = k->arr[i], codes[i] = KILN_DLTENSOR;
  double t0 = kiln_now_seconds();
  for (int i = 0; i < NUMBER; i++) kiln_func_call(k->f, av, codes, k->na, &ret, &rc);
  return (kiln_now_seconds() - t0) / NUMBER;
}

static void release(Kern *k) {
  for (int i = 0; i < k->na; i++) kiln_array_free(k->arr[i]);
  if (k->f) kiln_func_free(k->f);
  kiln_module_free(k->mod);
}

int main(int argc, char **argv) {
  const char *path = NULL, *only = NULL;
  int threads = 2, rounds = 15;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--task") && i + 1 < argc) only = argv[++i];
    else path = argv[i];
  }
  if (!path) {
    fprintf(stderr, "usage: bench_tuned_vs_fallback RECORDS.json [--threads N] [--rounds N] [--task SUBSTR]\n");
    return 2;
  }
  AVec recs = {0};
  if (records_load(path, &recs)) {
    fprintf(stderr, "%s\n", kiln_get_error());
    return 1;
  }
  kiln_set_num_threads(threads);
  records_keep_latest(&recs); /* a config measured again counts with its newest record */
  /* the best record of each workload, in order of first appearance */
  AVec best = {0};
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    if (!target_matches_record(target_host(), r->target) || isinf(record_cost(r)) || !template_lookup(r->wl->name)) continue;
    int k = 0;
    for (; k < best.len; k++)
      if (!strcmp(((TuneRecord *)best.data[k])->wl->key, r->wl->key)) break;
    if (k == best.len) av_push(&best, r);
    else if (record_cost(r) < record_cost(best.data[k])) best.data[k] = r;
  }
  kiln_clear_error();
  printf("%-20s %-38s %11s %11s %7s  %s\n", "template", "workload", "fallback", "tuned", "ratio", "tuned config");
  double sum_f = 0, sum_t = 0;
  for (int i = 0; i < best.len; i++) {
    TuneRecord *r = best.data[i];
    const Template *tm = template_lookup(r->wl->name);
    const char *desc = wl_describe(r->wl);
    if (only && !strstr(desc, only) && !strstr(r->wl->name, only)) continue;
    ConfigEntity *fb = template_fallback(tm, target_host(), r->wl);
    Kern a = {0}, b = {0};
    if (!fb || build(tm, r->wl, fb, &a) || build(tm, r->wl, r->config, &b)) {
      printf("%-20s %-38s build failed: %s\n", tm->name, desc, kiln_get_error());
      continue;
    }
    double *ta = malloc(sizeof(double) * (size_t)rounds), *tb = malloc(sizeof(double) * (size_t)rounds);
    run(&a), run(&b);
    for (int k = 0; k < rounds; k++) ta[k] = run(&a), tb[k] = run(&b);
    qsort(ta, (size_t)rounds, sizeof(double), cmp);
    qsort(tb, (size_t)rounds, sizeof(double), cmp);
    double ma = ta[rounds / 2], mb = tb[rounds / 2], fl = wl_flops(r->wl);
    printf("%-20s %-38s %8.1f us %8.1f us %6.2fx  %s%s\n", tm->name, desc, ma * 1e6, mb * 1e6, ma / mb,
           config_entity_json(r->config), config_equal(fb, r->config) ? " (= fallback)" : "");
    printf("%-20s %-38s %8.1f GF %8.1f GF\n", "", "", fl / ma * 1e-9, fl / mb * 1e-9);
    sum_f += ma, sum_t += mb;
    free(ta);
    free(tb);
    release(&a);
    release(&b);
  }
  printf("sum of medians: fallback %.1f us, tuned %.1f us (%.3fx)\n", sum_f * 1e6, sum_t * 1e6, sum_f / sum_t);
  return 0;
}
