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
 * At the end the configs that look best (up to `verify` of them, within
 * 15% of the best) and the fallback are measured again.  Of hundreds of
 * candidates measured once each, the one that looks fastest is also the
 * one whose measurement was luckiest; when many configs are within a few
 * percent of each other (and of a good fallback), that luck decides.  The
 * new measurements are independent of the selection, and a config's
 * newest record is the one that counts (records_keep_latest), in the
 * summary here and at compile time.  With a deadline, the search stops
 * at 90% of the time to leave room for this.
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

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tune_options_default(TuneOptions *o) {
  memset(o, 0, sizeof *o);
  o->tuner = "xgb";
  o->trials = 1000;
  o->verify = 8;
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

/* The newest cost of every config of the task seen so far (heap). */
typedef struct Seen {
  int64_t *idx;
  double *cost;
  int n, cap;
} Seen;

static void seen_set(Seen *s, int64_t idx, double cost) {
  for (int i = 0; i < s->n; i++)
    if (s->idx[i] == idx) {
      s->cost[i] = cost;
      return;
    }
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 256;
    s->idx = xrealloc(s->idx, sizeof(int64_t) * (size_t)s->cap);
    s->cost = xrealloc(s->cost, sizeof(double) * (size_t)s->cap);
  }
  s->idx[s->n] = idx;
  s->cost[s->n++] = cost;
}

static double seen_cost(const Seen *s, int64_t idx) {
  for (int i = 0; i < s->n; i++)
    if (s->idx[i] == idx) return s->cost[i];
  return NAN;
}

static double seen_best(const Seen *s, int64_t *best) {
  double c = INFINITY;
  *best = -1;
  for (int i = 0; i < s->n; i++)
    if (s->cost[i] < c) c = s->cost[i], *best = s->idx[i];
  return c;
}

/* Records of this task in the log: mark them measured, feed the tuner. */
/* Template keys: NULL and "direct" are the same (a task's first). */
static bool same_key(const char *a, const char *b) {
  if (!a || !strcmp(a, "direct")) a = "";
  if (!b || !strcmp(b, "direct")) b = "";
  return !strcmp(a, b);
}

static int resume(const TuneOptions *o, const Target *target, const Template *tm, const Workload *wl,
                  const ConfigSpace *cs, Tuner *t, double flops, Seen *seen, TuneSummary *out) {
  if (!o->log_path || access(o->log_path, F_OK)) return 0;
  AVec all = {0}, recs = {0};
  long torn;
  if (records_load_resume(o->log_path, &all, &torn)) return kiln_error_context("resuming from %s", o->log_path);
  if (torn >= 0) {
    /* cut the torn line off, or the next record would be glued to it */
    fprintf(stderr, "kiln: warning: %s ends with a torn record (an interrupted tune); dropping it and resuming\n",
            o->log_path);
    if (truncate(o->log_path, (off_t)torn))
      return kiln_set_error("resuming from %s: cannot cut off its torn last line: %s", o->log_path, strerror(errno));
  }
  for (int i = 0; i < all.len; i++) {
    TuneRecord *r = all.data[i];
    /* one workload may be two tasks (TVM 0.6's direct and winograd conv2d) */
    if (!strcmp(r->wl->key, wl->key) && same_key(r->config->template_key, tm->template_key) &&
        target_matches_record(target, r->target))
      av_push(&recs, r);
  }
  records_keep_latest(&recs);
  int64_t *idx = KNEWN(int64_t, recs.len + 1);
  double *score = KNEWN(double, recs.len + 1);
  int n = 0;
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    int64_t k = space_index_of(cs, r->config);
    kiln_clear_error();
    if (k < 0 || tuner_visited(t, k)) continue;
    tuner_mark(t, k);
    idx[n] = k;
    score[n] = score_of(flops, record_cost(r));
    seen_set(seen, k, record_cost(r));
    n++;
  }
  if (n) tuner_update(t, n, idx, score);
  out->resumed = n;
  return 0;
}

/* Measure a list of configs and log them; fills costs. */
static int measure_log(const TuneOptions *o, const Target *target, const Template *tm, Measurer *m, const ConfigSpace *cs,
                       const Workload *wl, int n, const int64_t *idx, double *cost, int *errors) {
  ConfigEntity **cfgs = KNEWN(ConfigEntity *, n);
  MeasureResult *res = KNEWN(MeasureResult, n);
  TuneRecord **recs = KNEWN(TuneRecord *, n);
  for (int i = 0; i < n; i++) {
    cfgs[i] = space_get(cs, idx[i]);
    cfgs[i]->template_key = tm->template_key; /* the record says which template */
  }
  if (measurer_run(m, n, cfgs, res)) return -1;
  for (int i = 0; i < n; i++) {
    TuneRecord *r = KNEW(TuneRecord);
    r->target = target->str;
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
    cost[i] = record_cost(r);
    if (errors && res[i].error_no >= 0 && res[i].error_no <= MEASURE_UNKNOWN_ERROR) errors[res[i].error_no]++;
  }
  return o->log_path ? records_append(o->log_path, n, recs) : 0;
}

/* Measure the best-looking configs and the fallback again (see above). */
static int verify(const TuneOptions *o, const Target *target, const Template *tm, Measurer *m, const ConfigSpace *cs, const Workload *wl, Seen *seen,
                  int64_t fallback, int batch, TuneSummary *out) {
  int64_t *order = KNEWN(int64_t, seen->n + 1), best;
  int n = 0;
  double bc = seen_best(seen, &best);
  if (isinf(bc)) return 0;
  double *oc = KNEWN(double, seen->n + 1);
  for (int i = 0; i < seen->n; i++) /* by cost, insertion: a few dozen */
    if (seen->cost[i] <= bc * 1.15) {
      int j = n++;
      for (; j > 0 && oc[j - 1] > seen->cost[i]; j--) order[j] = order[j - 1], oc[j] = oc[j - 1];
      order[j] = seen->idx[i], oc[j] = seen->cost[i];
    }
  if (n > o->verify) n = o->verify;
  bool has_fb = fallback < 0 || isnan(seen_cost(seen, fallback));
  for (int i = 0; i < n && !has_fb; i++) has_fb = order[i] == fallback;
  if (!has_fb) order[n++] = fallback;
  double *cost = KNEWN(double, n + 1);
  for (int i = 0; i < n; i += batch) {
    int k = n - i < batch ? n - i : batch;
    if (measure_log(o, target, tm, m, cs, wl, k, order + i, cost + i, NULL)) return -1;
    for (int j = 0; j < k; j++) seen_set(seen, order[i + j], cost[i + j]);
  }
  out->verified = n;
  return 0;
}

int autotune_tune(const Template *tm, const Target *target, const Workload *wl, const TuneOptions *opt,
                  TuneSummary *out) {
  TuneOptions o;
  if (opt) o = *opt;
  else tune_options_default(&o);
  if (!o.tuner) o.tuner = "xgb";
  if (!o.prefix) o.prefix = "";
  memset(out, 0, sizeof *out);
  out->best_cost = out->fallback_cost = INFINITY;
  out->best_index = -1;
  if (target && target_is_gpu(target) && measure_device_check(target, &o.measure)) return -1;
  ConfigSpace *cs = template_space(tm, target, wl);
  if (!cs) return kiln_error_context("%s", tm->name);
  int64_t size = space_size(cs);
  Tuner *t = tuner_new(o.tuner, tm, target, wl, cs, o.seed ? o.seed : hash_bytes(wl->key, strlen(wl->key), 7));
  if (!t) return -1;
  double flops = o.flops > 0 ? o.flops : wl_flops(wl);
  Seen seen = {0};
  int rc = resume(&o, target, tm, wl, cs, t, flops, &seen, out);
  if (rc) return rc; /* (what follows clears the error a failed fallback lookup sets) */
  int total = o.trials > 0 && o.trials < size ? o.trials : (int)(size < 1000000000 ? size : 1000000000);
  int done = out->resumed < total ? out->resumed : total;
  Measurer *m = !rc && done < total ? measurer_new(tm, target, wl, &o.measure) : NULL;
  if (!rc && done < total && !m) rc = -1;
  int batch = o.batch > 0 ? o.batch : o.measure.parallel > 0 ? o.measure.parallel : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (batch < 1) batch = 1;
  int64_t fallback_idx = -1;
  if (!o.skip_fallback) {
    ConfigEntity *f = template_fallback(tm, target, wl);
    fallback_idx = f ? f->index : -1;
    kiln_clear_error();
  }
  int64_t first = fallback_idx, best_idx;
  double t0 = kiln_now_seconds(), last_print = t0, cur = 0, best = seen_best(&seen, &best_idx);
  /* leave a tenth of the time for re-measuring the best */
  double stop_at = o.deadline > 0 ? t0 + (o.deadline - t0) * (o.verify > 0 ? 0.9 : 1.0) : 0;
  int last_better = done;
  int64_t *idx = KNEWN(int64_t, batch);
  double *scores = KNEWN(double, batch), *cost = KNEWN(double, batch);
  while (!rc && done < total && !(stop_at > 0 && kiln_now_seconds() >= stop_at)) {
    KArena *scratch = kiln_arena_new();
    kiln_arena_push(scratch);
    int want = total - done < batch ? total - done : batch, k = 0;
    if (first >= 0 && !tuner_visited(t, first)) { /* the baseline first */
      idx[k++] = first;
      tuner_mark(t, first);
    }
    first = -1;
    k += tuner_next_batch(t, want - k, idx + k);
    if (k > 0 && measure_log(&o, target, tm, m, cs, wl, k, idx, cost, out->errors)) rc = -1;
    for (int i = 0; !rc && i < k; i++) {
      seen_set(&seen, idx[i], cost[i]);
      scores[i] = score_of(flops, cost[i]);
      if (cost[i] < best) best = cost[i], last_better = done + i + 1;
    }
    if (!rc && k > 0) {
      cur = scores[k - 1];
      tuner_update(t, k, idx, scores);
      done += k;
      out->measured += k;
    }
    kiln_arena_pop();
    kiln_arena_free(scratch);
    if (rc || k == 0) break;
    double now = kiln_now_seconds();
    bool tty = o.progress && isatty(fileno(o.progress));
    if (done < total && (tty || now - last_print >= 10)) {
      progress(&o, flops, cur, score_of(flops, best), done, total, now - t0, false);
      last_print = now;
    }
    if (o.early_stopping > 0 && done - last_better >= o.early_stopping) {
      out->early_stopped = true;
      break;
    }
  }
  if (!rc && o.verify > 0 && out->measured > 0) {
    KArena *scratch = kiln_arena_new();
    kiln_arena_push(scratch);
    rc = verify(&o, target, tm, m, cs, wl, &seen, fallback_idx, batch, out);
    kiln_arena_pop();
    kiln_arena_free(scratch);
  }
  out->best_cost = seen_best(&seen, &out->best_index);
  if (fallback_idx >= 0 && !isnan(seen_cost(&seen, fallback_idx))) out->fallback_cost = seen_cost(&seen, fallback_idx);
  out->seconds = kiln_now_seconds() - t0;
  out->best_gflops = score_of(flops, out->best_cost);
  if (!rc) progress(&o, flops, cur, out->best_gflops, done, total, out->seconds, true);
  free(seen.idx);
  free(seen.cost);
  measurer_free(m);
  tuner_free(t);
  return rc;
}
