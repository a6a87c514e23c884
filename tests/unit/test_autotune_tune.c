/*
 * test_autotune_tune.c - measuring and tuning: a test-only template whose
 * knob makes a candidate crash (segfault), hang, compute a wrong answer or
 * be refused by its template, tuned with the real worker processes (this
 * test program is the worker: main.c hands AUTOTUNE_WORKER_ARG to
 * autotune_worker_main), must record error numbers 4, 7, 5 and 1 and go
 * on; resuming from the log measures nothing again.  Also: a real conv
 * template measured and checked against its unscheduled compute, the
 * feature vector, and the tuners (every kind proposes each config once;
 * the XGBoost model learns a synthetic score).
 */
#include <stdlib.h>
#include <unistd.h>

#include "autotune/autotune.h"
#include "kernel_util.h"

/* ---- the faulty template ---- */

#define FN 64
static const char *const modes[] = {"ok", "crash", "hang", "wrong", "reject", "ok_vec"};
#define NMODES 6

static const char *mode_of(const ConfigEntity *cfg) {
  const KnobEntity *e = config_get(cfg, "mode");
  return e && e->kind == KNOB_OTHER && e->val.kind == OPT_STR ? e->val.s : "?";
}

static int faulty_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t, (void)wl;
  OptVal v[NMODES];
  for (int i = 0; i < NMODES; i++) v[i] = opt_str(modes[i]);
  return space_define_knob(cs, "mode", NMODES, v);
}

static int faulty_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  (void)t, (void)wl;
  config_set_other(cfg, "mode", opt_str("ok"));
  return 0;
}

static int faulty_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  (void)t, (void)wl;
  if (!strcmp(mode_of(cfg), "reject")) return kiln_set_error("kiln_test.faulty: mode 'reject' is never valid");
  return 0;
}

/* What every mode should compute: out[i] = 2 a[i] + 1 (the reference). */
static Tensor *faulty_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)wl, (void)cfg, (void)nin;
  Expr **v = te_axis_vars(1, (const char *[]){"i"});
  return te_compute("faulty", 1, (Expr *[]){ir_i32(FN)}, v, ir_add(ir_mul(te_read1(in[0], v[0]), ir_f32(2)), ir_f32(1)),
                    "elemwise");
}

/* What each mode's candidate computes. */
static int faulty_instantiate(const Target *t, const Workload *wl, const ConfigEntity *cfg, Schedule **s, int *nargs,
                              Tensor ***args) {
  if (faulty_check(t, cfg, wl)) return -1;
  const char *mode = mode_of(cfg);
  Tensor *a = te_placeholder_c("a", 1, (int64_t[]){FN}, DT_F32);
  Expr **v = te_axis_vars(1, (const char *[]){"i"});
  Expr *body;
  if (!strcmp(mode, "crash")) { /* reads 8 GB past the array */
    body = te_read1(a, ir_add(v[0], ir_i32(2000000000)));
  } else if (!strcmp(mode, "hang")) { /* 2^40 steps per element */
    IterVar *k1 = te_reduce_axis_c(1 << 20, "k1"), *k2 = te_reduce_axis_c(1 << 20, "k2");
    body = ir_sum(ir_mul(te_read1(a, ir_floormod(ir_add(v[0], k1->var), ir_i32(FN))), ir_cast(DT_F32, k2->var)), 2,
                  (IterVar *[]){k1, k2});
  } else if (!strcmp(mode, "wrong")) {
    body = ir_add(ir_mul(te_read1(a, v[0]), ir_f32(2)), ir_f32(2));
  } else {
    body = ir_add(ir_mul(te_read1(a, v[0]), ir_f32(2)), ir_f32(1));
  }
  Tensor *out = te_compute("faulty", 1, (Expr *[]){ir_i32(FN)}, v, body, "elemwise");
  *s = te_create_schedule(1, &out);
  if (!*s) return -1;
  if (!strcmp(mode, "ok_vec")) {
    Stage *st = sch_stage(*s, out);
    IterVar *o, *i;
    if (stage_split(st, stage_axis(st, 0), ir_i32(16), &o, &i) || stage_vectorize(st, i)) return -1;
  }
  *nargs = 2;
  *args = KNEWN(Tensor *, 2);
  (*args)[0] = a;
  (*args)[1] = out;
  return 0;
}

/* Its candidates are not compute + schedule: it instantiates them itself. */
static const Template faulty_template = {
    .name = "kiln_test.faulty", .anchor_tag = "elemwise", .key = "cpu", .define_space = faulty_space,
    .fallback = faulty_fallback, .check = faulty_check, .compute = faulty_compute, .instantiate = faulty_instantiate,
};

/* main.c calls this before handing a worker run to autotune_worker_main. */
void test_autotune_register(void);
void test_autotune_register(void) { template_register(&faulty_template); }

static Workload *faulty_workload(void) {
  Workload *wl = wl_new("kiln_test.faulty");
  wl_add_tensor(wl, 1, (int64_t[]){FN}, "float32");
  return wl_finish(wl);
}

static int mode_index(const char *m) {
  for (int i = 0; i < NMODES; i++)
    if (!strcmp(modes[i], m)) return i;
  return -1;
}

static void test_faulty_candidates(void) {
  CHECK_OK(template_register(&faulty_template));
  char *dir = kiln_mkdtemp("kiln-tunetest-");
  const char *log = kfmt("%s/log.json", dir);
  Workload *wl = faulty_workload();
  TuneOptions o;
  tune_options_default(&o);
  o.tuner = "grid";
  o.trials = 100;
  o.log_path = log;
  o.measure.timeout = 1;
  o.measure.number = 2;
  o.measure.repeat = 2;
  o.measure.parallel = 2;
  o.measure.threads = 1;
  o.verify = 0;
  TuneSummary sum;
  CHECK_OK(autotune_tune(&faulty_template, target_host(), wl, &o, &sum));
  CHECK_INT(sum.measured, NMODES); /* tuning went on past every failure */
  CHECK_INT(sum.resumed, 0);
  CHECK_INT(sum.errors[MEASURE_NO_ERROR], 2);
  CHECK_INT(sum.errors[MEASURE_INSTANTIATION_ERROR], 1);
  CHECK_INT(sum.errors[MEASURE_RUNTIME_DEVICE], 1);
  CHECK_INT(sum.errors[MEASURE_WRONG_ANSWER], 1);
  CHECK_INT(sum.errors[MEASURE_RUN_TIMEOUT], 1);
  CHECK(sum.best_index == 0 || sum.best_index == 5);
  /* the log says which candidate failed how */
  AVec recs = {0};
  CHECK_OK(records_load(log, &recs));
  CHECK_INT(recs.len, NMODES);
  static const int want[NMODES] = {MEASURE_NO_ERROR,    MEASURE_RUNTIME_DEVICE,      MEASURE_RUN_TIMEOUT,
                                   MEASURE_WRONG_ANSWER, MEASURE_INSTANTIATION_ERROR, MEASURE_NO_ERROR};
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    int m = mode_index(mode_of(r->config));
    CHECK(m >= 0);
    if (m < 0) continue;
    CHECK_MSG(r->error_no == want[m], "mode %s: error_no %d, expected %d", modes[m], r->error_no, want[m]);
    CHECK_STR(r->target, target_host()->str);
    if (r->error_no == MEASURE_NO_ERROR) CHECK(r->ncosts == 2 && record_cost(r) > 0 && record_cost(r) < 1e-3);
    else CHECK(r->ncosts == 1 && r->costs[0] == 1e9);
  }
  if (recs.len) CHECK_STR(mode_of(((TuneRecord *)recs.data[0])->config), "ok"); /* the fallback goes first */
  /* resuming from the log measures nothing again */
  TuneSummary again;
  CHECK_OK(autotune_tune(&faulty_template, target_host(), wl, &o, &again));
  CHECK_INT(again.resumed, NMODES);
  CHECK_INT(again.measured, 0);
  CHECK(again.best_index == sum.best_index);
  template_unregister(&faulty_template);
  kiln_rmtree(dir);
  free(dir);
}

/* The best configs are measured again at the end; the newest record of a
 * config is the one that counts. */
static void test_verify_best(void) {
  CHECK_OK(template_register(&faulty_template));
  char *dir = kiln_mkdtemp("kiln-tunetest-");
  const char *log = kfmt("%s/log.json", dir);
  Workload *wl = faulty_workload();
  TuneOptions o;
  tune_options_default(&o);
  o.tuner = "grid";
  o.trials = 6;
  o.log_path = log;
  o.measure.timeout = 1;
  o.measure.number = 2;
  o.measure.parallel = 2;
  o.measure.threads = 1;
  TuneSummary sum;
  CHECK_OK(autotune_tune(&faulty_template, target_host(), wl, &o, &sum));
  CHECK_INT(sum.measured, NMODES);
  /* the two working configs (within 15% of each other) are measured
   * again; the fallback is one of them */
  CHECK(sum.verified >= 1 && sum.verified <= 2);
  CHECK(!isinf(sum.fallback_cost) && sum.best_cost <= sum.fallback_cost);
  AVec recs = {0};
  CHECK_OK(records_load(log, &recs));
  CHECK_INT(recs.len, NMODES + sum.verified);
  TuneRecord *last = recs.len ? recs.data[recs.len - 1] : NULL;
  records_keep_latest(&recs);
  CHECK_INT(recs.len, NMODES);
  CHECK(last && av_find(&recs, last) >= 0); /* the re-measurement won */
  template_unregister(&faulty_template);
  kiln_rmtree(dir);
  free(dir);
}

/* A real template: candidates in the NCHW[x]c layouts pass the check
 * against the unscheduled compute, and get costs. */
static void test_measure_conv(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 16, 10, 10}, (int64_t[]){32, 16, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *cfgs[3];
  cfgs[0] = template_fallback(tm, target_host(), wl);
  cfgs[1] = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 4]], [\"tile_oc\", \"sp\", [-1, 8]], "
                                    "[\"tile_ow\", \"sp\", [-1, 5]], [\"unroll_kw\", \"ot\", true]]");
  cfgs[2] = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 2]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                    "[\"tile_ow\", \"sp\", [-1, 10]], [\"unroll_kw\", \"ot\", false]]");
  CHECK(cfgs[0] && cfgs[1] && cfgs[2]);
  if (!cfgs[0] || !cfgs[1] || !cfgs[2]) return;
  MeasureOptions mo;
  measure_options_default(&mo);
  mo.number = 2;
  mo.repeat = 2;
  mo.min_repeat_ms = 1;
  mo.parallel = 2;
  mo.threads = 1;
  Measurer *m = measurer_new(tm, target_host(), wl, &mo);
  CHECK_NN(m);
  if (!m) return;
  MeasureResult res[3];
  CHECK_OK(measurer_run(m, 3, cfgs, res));
  for (int i = 0; i < 3; i++) {
    CHECK_MSG(res[i].error_no == 0, "config %d: error %d: %s", i, res[i].error_no, res[i].msg ? res[i].msg : "");
    CHECK(res[i].ncosts == 2 && res[i].costs[0] > 0 && res[i].costs[0] < 0.01);
    CHECK(res[i].all_cost > 0 && res[i].timestamp > 1e9);
    /* the baseline was timed beside: a ratio of two timings of microsecond
     * kernels, so only its order of magnitude is checked (on a loaded
     * machine one of them can take several times longer) */
    CHECK_MSG(res[i].scale > 0.01 && res[i].scale < 100, "config %d: scale %g", i, res[i].scale);
  }
  measurer_free(m);
}

static void test_features(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 64, 28, 28}, (int64_t[]){64, 64, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (!cs) return;
  int n = feature_len(cs);
  /* tile_ic, tile_oc, tile_ow: position + one inner part; unroll_kw: 2 */
  CHECK_INT(n, 2 + 2 + 2 + 2 + FEATURE_LOOPS * 8);
  ConfigEntity *cfg = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                              "[\"tile_ow\", \"sp\", [-1, 7]], [\"unroll_kw\", \"ot\", true]]");
  float *f = KNEWN(float, n);
  CHECK_OK(feature_extract(tm, target_host(), wl, cs, cfg, f));
  CHECK(f[1] == 4 && f[3] == 4);        /* log2 16 */
  CHECK(fabsf(f[5] - log2f(7)) < 1e-5); /* tile_ow */
  CHECK(f[7] == 1);                     /* unroll_kw true */
  /* the innermost loop of the update: the 16 output channels, vectorized */
  const float *l0 = f + 8;
  CHECK(fabsf(l0[0] - log2f(17)) < 1e-5);
  CHECK(l0[2] == 1);
  /* the parallel row loop is outside the block */
  bool par = false;
  for (int j = 0; j < FEATURE_LOOPS; j++) par |= f[8 + j * 8 + 1] == 1;
  CHECK(par);
  /* different configs, different features */
  ConfigEntity *c2 = space_get(cs, 0);
  float *g = KNEWN(float, n);
  CHECK_OK(feature_extract(tm, target_host(), wl, cs, c2, g));
  CHECK(memcmp(f, g, sizeof(float) * (size_t)n) != 0);
}

/* Every tuner kind proposes each config of a space once. */
static void test_tuner_coverage(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 8, 6, 6}, (int64_t[]){8, 8, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (!cs) return;
  int64_t size = space_size(cs);
  /* tile_ic, tile_oc, tile_ow, unroll_kw, and inline_pad where 8 input channels are fewer than a vector */
  CHECK_INT(size, 4 * 4 * 4 * 2 * (target_host()->vector_lanes > 8 ? 2 : 1));
  for (int k = 0; k < tuner_nkinds(); k++) {
    const TunerKind *kind = tuner_kind_at(k);
    Tuner *t = tuner_new(kind->name, tm, target_host(), wl, cs, 42);
    if (!t && strstr(kiln_get_error(), "built without")) continue; /* no libxgboost-dev */
    CHECK_MSG(t != NULL, "%s: %s", kind->name, kiln_get_error());
    if (!t) continue;
    bool *seen = KNEWN(bool, size);
    int64_t got = 0, idx[7];
    double score[7];
    for (int round = 0; round < 100; round++) {
      int n = tuner_next_batch(t, 7, idx);
      if (!n) break;
      for (int i = 0; i < n; i++) {
        CHECK_MSG(idx[i] >= 0 && idx[i] < size && !seen[idx[i]], "%s proposed %lld twice", kind->name, (long long)idx[i]);
        if (idx[i] >= 0 && idx[i] < size) seen[idx[i]] = true;
        score[i] = (double)(idx[i] % 13); /* anything */
      }
      got += n;
      tuner_update(t, n, idx, score);
    }
    CHECK_MSG(got == size, "%s covered %lld of %lld", kind->name, (long long)got, (long long)size);
    tuner_free(t);
  }
  CHECK(tuner_kind("annealing") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "known: xgb, ga, random, grid");
}

/* The cost model learns: with a synthetic score that rewards wide output
 * blocks, the xgb tuner's proposals after training beat random ones. */
static double synthetic(const ConfigSpace *cs, int64_t idx) {
  ConfigEntity *c = space_get(cs, idx);
  return (double)(cfg_split_inner(c, "tile_ow") * cfg_split_inner(c, "tile_oc"));
}

static void test_xgb_learns(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 32, 28, 28}, (int64_t[]){64, 32, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (!cs) return;
  Tuner *t = tuner_new("xgb", tm, target_host(), wl, cs, 7);
  if (!t && strstr(kiln_get_error(), "built without")) {
    test_skip("Kiln built without XGBoost (libxgboost-dev)");
    return;
  }
  CHECK_MSG(t != NULL, "%s", kiln_get_error());
  if (!t) return;
  int64_t idx[32];
  double score[32], first = 0, later = 0;
  for (int round = 0; round < 3; round++) {
    int n = tuner_next_batch(t, 32, idx);
    CHECK_INT(n, 32);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += score[i] = synthetic(cs, idx[i]);
    if (round == 0) first = sum / n; /* random: no model yet */
    if (round == 2) later = sum / n;
    tuner_update(t, n, idx, score);
  }
  CHECK_MSG(later > 1.5 * first, "xgb proposals score %.1f on average, random ones %.1f", later, first);
  tuner_free(t);
}

const TestCase autotune_tune_tests[] = {
    {"faulty_candidates", test_faulty_candidates},
    {"verify_best", test_verify_best},
    {"measure_conv", test_measure_conv},
    {"features", test_features},
    {"tuner_coverage", test_tuner_coverage},
    {"xgb_learns", test_xgb_learns},
    {NULL, NULL},
};
