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

#include "bench_util.h"

#define NUMBER 10

static double run(BenchKern *k) { return bench_kern_run(k, NUMBER, NULL); }

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
    BenchKern a = {0}, b = {0};
    if (!fb || bench_kern_build(tm, r->wl, fb, &a) || bench_kern_build(tm, r->wl, r->config, &b)) {
      printf("%-20s %-38s build failed: %s\n", tm->name, desc, kiln_get_error());
      kiln_clear_error();
      bench_kern_release(&a);
      bench_kern_release(&b);
      continue;
    }
    double *ta = malloc(sizeof(double) * (size_t)rounds), *tb = malloc(sizeof(double) * (size_t)rounds);
    run(&a), run(&b);
    for (int k = 0; k < rounds; k++) ta[k] = run(&a), tb[k] = run(&b);
    qsort(ta, (size_t)rounds, sizeof(double), bench_cmp_double);
    qsort(tb, (size_t)rounds, sizeof(double), bench_cmp_double);
    double ma = ta[rounds / 2], mb = tb[rounds / 2], fl = wl_flops(r->wl);
    printf("%-20s %-38s %8.1f us %8.1f us %6.2fx  %s%s\n", tm->name, desc, ma * 1e6, mb * 1e6, ma / mb,
           config_entity_json(r->config), config_equal(fb, r->config) ? " (= fallback)" : "");
    printf("%-20s %-38s %8.1f GF %8.1f GF\n", "", "", fl / ma * 1e-9, fl / mb * 1e-9);
    sum_f += ma, sum_t += mb;
    free(ta);
    free(tb);
    bench_kern_release(&a);
    bench_kern_release(&b);
  }
  printf("sum of medians: fallback %.1f us, tuned %.1f us (%.3fx)\n", sum_f * 1e6, sum_t * 1e6, sum_f / sum_t);
  return 0;
}
