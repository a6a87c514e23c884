/*
 * tune.c - tuning one task (AutoTVM's Tuner.tune): the tuner proposes a
 * batch of configs, the measurer builds and runs them in worker processes,
 * every result is appended to the log as a v0.2 record at once (an
 * interrupted session loses nothing), and the tuner learns from the
 * scores (GFLOP/s, 0 for a failure).
 *
 * The fallback config is measured first (unless skip_fallback), so the
 * best found is never worse than what compiling without records gives.
 *
 * Resuming: the log's records of this task (same workload, a target that
 * matches this machine) are read first; their configs are never measured
 * again, they count towards the trial budget, train the tuner and set the
 * best so far.  Early stopping ends a task after `early_stopping` trials
 * without a better config.  The progress line is AutoTVM's:
 *   [Task  1/12]  Current/Best:  598.05/2497.63 GFLOPS | Progress: (252/252) | 135.95 s Done.
 * redrawn in place on a terminal, else printed every ten seconds.
 */
#include "autotune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tune_options_default(TuneOptions *o) {
  memset(o, 0, sizeof *o);
  o->tuner = "xgb";
  o->trials = 1000;
  o->prefix = "";
  measure_options_default(&o->measure);
}

/* GFLOP/s for a cost (1/us when the FLOPs are unknown). */
static double score_of(double flops, double cost) {
  if (!(cost > 0) || isinf(cost)) return 0;
  return flops > 0 ? flops / cost / 1e9 : 1e-6 / cost;
}

static void progress(const TuneOptions *o, double flops, double cur, double best, int done, int total, double secs,
                     bool final) {
  if (!o->progress) return;
  bool tty = isatty(fileno(o->progress));
  const char *unit = flops > 0 ? "GFLOPS" : "runs/us";
  fprintf(o->progress, "%s%s Current/Best: %7.2f/%7.2f %s | Progress: (%d/%d) | %.2f s%s", tty ? "\r" : "", o->prefix,
          cur, best, unit, done, total, secs, final ? " Done.\n" : tty ? "" : "\n");
  fflush(o->progress);
}

/* Records of this task in the log: mark them measured, feed the tuner. */
static int resume(const TuneOptions *o, const Workload *wl, const ConfigSpace *cs, Tuner *t, double flops,
                  TuneSummary *out) {
  if (!o->log_path || access(o->log_path, F_OK)) return 0;
  AVec recs = {0};
  if (records_load(o->log_path, &recs)) return kiln_error_context("resuming from %s", o->log_path);
  int64_t *idx = KNEWN(int64_t, recs.len + 1);
  double *score = KNEWN(double, recs.len + 1);
  int n = 0;
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    if (strcmp(r->wl->key, wl->key) || !autotune_target_matches(r->target)) continue;
    int64_t k = space_index_of(cs, r->config);
    kiln_clear_error();
    if (k < 0 || tuner_visited(t, k)) continue;
    tuner_mark(t, k);
    idx[n] = k;
    score[n] = score_of(flops, record_cost(r));
    double c = record_cost(r);
    if (c < out->best_cost) out->best_cost = c, out->best_index = k;
    n++;
  }
  if (n) tuner_update(t, n, idx, score);
  out->resumed = n;
  return 0;
}

int autotune_tune(const Template *tm, const Workload *wl, const TuneOptions *opt, TuneSummary *out) {
  TuneOptions o;
  if (opt) o = *opt;
  else tune_options_default(&o);
  if (!o.tuner) o.tuner = "xgb";
  if (!o.prefix) o.prefix = "";
  memset(out, 0, sizeof *out);
  out->best_cost = INFINITY;
  out->best_index = -1;
  ConfigSpace *cs = template_space(tm, wl);
  if (!cs) return kiln_error_context("%s", tm->name);
  int64_t size = space_size(cs);
  Tuner *t = tuner_new(o.tuner, tm, wl, cs, o.seed ? o.seed : hash_bytes(wl->key, strlen(wl->key), 7));
  if (!t) return -1;
  double flops = wl_flops(wl);
  if (resume(&o, wl, cs, t, flops, out)) {
    tuner_free(t);
    return -1;
  }
  int total = o.trials > 0 && o.trials < size ? o.trials : (int)(size < 1000000000 ? size : 1000000000);
  int done = out->resumed < total ? out->resumed : total;
  Measurer *m = done < total ? measurer_new(tm, wl, &o.measure) : NULL;
  if (done < total && !m) {
    tuner_free(t);
    return -1;
  }
  int batch = o.batch > 0 ? o.batch : o.measure.parallel > 0 ? o.measure.parallel : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (batch < 1) batch = 1;
  int64_t fallback_idx = -1;
  if (!o.skip_fallback) {
    ConfigEntity *f = template_fallback(tm, wl);
    fallback_idx = f ? f->index : -1;
    kiln_clear_error();
  }
  double t0 = kiln_now_seconds(), last_print = t0, cur = 0;
  int last_better = done, rc = 0;
  const char *target = autotune_target();
  int64_t *idx = KNEWN(int64_t, batch);
  ConfigEntity **cfgs = KNEWN(ConfigEntity *, batch);
  MeasureResult *res = KNEWN(MeasureResult, batch);
  TuneRecord **recs = KNEWN(TuneRecord *, batch);
  double *scores = KNEWN(double, batch);
  while (done < total) {
    KArena *scratch = kiln_arena_new();
    kiln_arena_push(scratch);
    if (o.deadline > 0 && kiln_now_seconds() >= o.deadline) {
      kiln_arena_pop();
      kiln_arena_free(scratch);
      break;
    }
    int want = total - done < batch ? total - done : batch, k = 0;
    if (fallback_idx >= 0 && !tuner_visited(t, fallback_idx)) { /* the baseline first */
      idx[k++] = fallback_idx;
      tuner_mark(t, fallback_idx);
    }
    fallback_idx = -1;
    k += tuner_next_batch(t, want - k, idx + k);
    if (k == 0) {
      kiln_arena_pop();
      kiln_arena_free(scratch);
      break;
    }
    for (int i = 0; i < k; i++) cfgs[i] = space_get(cs, idx[i]);
    if (measurer_run(m, k, cfgs, res)) {
      rc = -1;
      kiln_arena_pop();
      kiln_arena_free(scratch);
      break;
    }
    for (int i = 0; i < k; i++) {
      TuneRecord *r = KNEW(TuneRecord);
      r->target = target;
      r->wl = (Workload *)wl;
      r->kwargs = "{}";
      r->config = cfgs[i];
      r->error_no = res[i].error_no;
      r->ncosts = res[i].ncosts;
      r->costs = res[i].costs;
      r->all_cost = res[i].all_cost;
      r->timestamp = res[i].timestamp;
      r->version = 2;
      recs[i] = r;
      double c = record_cost(r);
      scores[i] = score_of(flops, c);
      if (res[i].error_no >= 0 && res[i].error_no <= MEASURE_UNKNOWN_ERROR) out->errors[res[i].error_no]++;
      if (c < out->best_cost) {
        out->best_cost = c;
        out->best_index = idx[i];
        last_better = done + i + 1;
      }
    }
    cur = scores[k - 1];
    if (o.log_path && records_append(o.log_path, k, recs)) {
      rc = -1;
      kiln_arena_pop();
      kiln_arena_free(scratch);
      break;
    }
    tuner_update(t, k, idx, scores);
    done += k;
    out->measured += k;
    kiln_arena_pop();
    kiln_arena_free(scratch);
    double now = kiln_now_seconds();
    bool tty = o.progress && isatty(fileno(o.progress));
    if (done < total && (tty || now - last_print >= 10)) {
      progress(&o, flops, cur, score_of(flops, out->best_cost), done, total, now - t0, false);
      last_print = now;
    }
    if (o.early_stopping > 0 && done - last_better >= o.early_stopping) {
      out->early_stopped = true;
      break;
    }
  }
  out->seconds = kiln_now_seconds() - t0;
  out->best_gflops = score_of(flops, out->best_cost);
  progress(&o, flops, cur, out->best_gflops, done, total, out->seconds, true);
  measurer_free(m);
  tuner_free(t);
  return rc;
}
