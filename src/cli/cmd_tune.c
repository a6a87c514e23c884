/*
 * cmd_tune.c - kiln tasks MODEL.onnx: the tuning tasks of a model, as
 * AutoTVM lists them ("[Task  3/12] conv2d_NCHWc.x86 - Search space size:
 * 1296"), with their input and weight shapes and the fused functions that
 * use each; and kiln tune MODEL.onnx -o records.json: tune them, appending
 * v0.2 records that kiln compile --tuning-records applies.
 *
 * Both go through the compile pipeline (import, optimize with
 * alter_layout, fuse), so the tasks are exactly those a compile asks the
 * records for, and the fused-function names are the profile's rows.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "cli.h"
#include "frontend/onnx/import.h"
#include "graph/backend/build.h"
#include "graph/backend/strategy.h"

/* The symbolic batch whose tasks are listed at batch 1 (load_tasks), when
 * set: its name and bounds, the batched variants' batches, and how many of
 * the tasks are the batch-1 ones (the variants' follow). */
typedef struct BatchSym {
  char name[64];
  long long lo, hi;
  bool set;
  CliVariants vars;
  int n_batch1;
} BatchSym;

/* The variants' batches, "4, 8". */
static const char *variant_list(const BatchSym *b) {
  StrBuf sb = {0};
  for (int i = 0; i < b->vars.n; i++) sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)b->vars.batch[i]);
  const char *r = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return r;
}

/* Import, optimize and extract as kiln compile does (cli_load_and_optimize);
 * NULL after printing an error.  A model whose only symbol is a
 * per-sample batch (the batch as an outer loop, docs/symbolic_shapes.md)
 * is built at batch 1, whose tasks' records serve every batch, plus the
 * batched variants (--batch-sizes, by default 4 and 8 within the bound):
 * the batch-1 tasks come first, then each variant's tasks that are not
 * already listed, used by the variant's kernels (named b8_fused_... in the
 * module and the profile).  *batch says so.  Any other symbolic model is
 * refused by the extraction, naming a symbolic tensor. */
static AVec *load_tasks(Command *cmd, const char *path, long lvl, const Target *t, Graph **gout, BatchSym *batch) {
  bool was = graph_dispatch_set_quiet(cli_dispatch(), true);
  const char *outer = NULL;
  memset(batch, 0, sizeof *batch);
  Graph *g = cli_load_and_optimize(cmd, path, lvl, t, &outer, &batch->vars);
  graph_dispatch_set_quiet(cli_dispatch(), was);
  if (!g) return NULL;
  if (outer) { /* "N:lo:hi" */
    const char *c2 = strrchr(outer, ':'), *c1 = c2;
    while (c1 > outer && c1[-1] != ':') c1--;
    batch->set = c1 > outer;
    snprintf(batch->name, sizeof batch->name, "%.*s", (int)(c1 - 1 - outer), outer);
    batch->lo = strtoll(c1, NULL, 10);
    batch->hi = strtoll(c2 + 1, NULL, 10);
  }
  AVec *tasks = KNEW(AVec);
  int rc = graph_extract_tasks(g, (int)lvl, t, cli_dispatch(), tasks);
  batch->n_batch1 = tasks->len;
  for (int v = 0; v < batch->vars.n && !rc; v++) {
    AVec vt = {0};
    if ((rc = graph_extract_tasks(batch->vars.g[v], (int)lvl, t, cli_dispatch(), &vt)))
      kiln_error_context("batched variant at batch %lld", (long long)batch->vars.batch[v]);
    for (int i = 0; i < vt.len && !rc; i++) {
      GraphTask *vk = vt.data[i];
      for (int k = 0; k < vk->users.len; k++) /* the kernel names of the variant in the module */
        vk->users.data[k] = (void *)kfmt("b%lld_%s", (long long)batch->vars.batch[v], (const char *)vk->users.data[k]);
      GraphTask *same = NULL;
      for (int j = batch->n_batch1; j < tasks->len && !same; j++) {
        GraphTask *o = tasks->data[j];
        if (o->tmpl == vk->tmpl && !strcmp(o->wl->key, vk->wl->key)) same = o;
      }
      if (!same) av_push(tasks, vk);
      else
        for (int k = 0; k < vk->users.len; k++) av_push(&same->users, vk->users.data[k]);
    }
  }
  for (int v = 0; v < batch->vars.n; v++) graph_free(batch->vars.g[v]);
  if (rc) {
    graph_free(g);
    return cli_error(cmd, "%s", kiln_get_error()), NULL;
  }
  *gout = g;
  return tasks;
}

static void tensor_tuple(const WArg *a) {
  printf("('TENSOR', (");
  for (int i = 0; i < a->n; i++) printf("%s%lld", i ? ", " : "", (long long)a->ints[i]);
  printf("%s), '%s')", a->n == 1 ? "," : "", a->s);
}

/* ---- kiln tasks ---- */

static Opt tasks_opts[] = {
    {"--input-shapes", NULL, OPT_VALUE, "SHAPES", "input shapes; a size given overrides the model's, e.g. \"data:[8,3,224,224]\"", false, NULL, NULL, 0},
    {"-O", NULL, OPT_VALUE, "LEVEL", "optimization level 0-3 (default 3)", false, NULL, NULL, 0},
    {"--target", NULL, OPT_VALUE, "TARGET", "the target whose tasks to list, e.g. \"cuda\" (TVM's CUDA templates; a 3x3 stride-1 conv2d is also a winograd task) (default: this machine)", false, NULL, NULL, 0},
    {"--precision", NULL, OPT_VALUE, "P", "fp32 (default) or bf16: list the tasks of a --precision bf16 build (docs/bf16.md)", false, NULL, NULL, 0},
    {"--batch-sizes", NULL, OPT_VALUE, "LIST", "a symbolic batch: also list the tasks of the batched variants at these batches, as kiln compile builds them (default: 4 and 8 within the bound), or none", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

static int run_tasks(Command *cmd, int npos, const char **pos) {
  (void)npos;
  Graph *g = NULL;
  long lvl;
  int urc = cli_int_range(cmd, "-O", 3, 0, 3, &lvl);
  if (urc) return urc;
  Opt *to = cli_opt(cmd, "--target");
  const Target *target = to->set ? target_parse(to->value, NULL) : target_host();
  if (!target) return cli_error(cmd, "%s", kiln_get_error());
  BatchSym batch;
  AVec *tasks = load_tasks(cmd, pos[0], lvl, target, &g, &batch);
  if (!tasks) return -1;
  if (batch.set && !batch.vars.n)
    printf("symbolic batch %s in [%lld, %lld]: the kernels are built at batch 1 and called once per sample, so these "
           "are the batch-1 tasks; their records serve every %s\n",
           batch.name, batch.lo, batch.hi, batch.name);
  else if (batch.set)
    printf("symbolic batch %s in [%lld, %lld]: tasks 1-%d are the batch-1 tasks (kernels called once per sample; their "
           "records serve every %s), the rest those of the batched variants at %s = %s (--batch-sizes)\n",
           batch.name, batch.lo, batch.hi, batch.n_batch1, batch.name, batch.name, variant_list(&batch));
  for (int i = 0; i < tasks->len; i++) {
    GraphTask *t = tasks->data[i];
    const char *name = t->tmpl->template_key ? kfmt("%s (%s)", t->tmpl->name, t->tmpl->template_key) : t->tmpl->name;
    printf("[Task %2d/%2d] %s - Search space size: %lld\n", i + 1, tasks->len, name, (long long)t->space_size);
    if (t->wl->nargs >= 2 && t->wl->args[0].kind == WARG_TENSOR && t->wl->args[1].kind == WARG_TENSOR) {
      printf("  input:   ");
      tensor_tuple(&t->wl->args[0]);
      if (batch.set && i < batch.n_batch1) printf("  (one sample of (%s, ...))", batch.name);
      else if (batch.set) printf("  (batched variant, %s = %lld)", batch.name, (long long)t->wl->args[0].ints[0]);
      printf("\n  weight:  ");
      tensor_tuple(&t->wl->args[1]);
      printf("\n");
    }
    printf("  workload: %s, %.3g MFLOP\n", t->desc, t->flops / 1e6);
    printf("  used by: ");
    for (int k = 0; k < t->users.len; k++) printf("%s%s", k ? ", " : "", (const char *)t->users.data[k]);
    printf("\n");
  }
  if (!tasks->len) printf("no tunable tasks (convolutions and dense layers in float32 at -O3 have templates)\n");
  graph_free(g);
  return 0;
}

Command cmd_tasks = {"tasks", "MODEL.onnx [options]",
                     "List a model's tuning tasks: template, search space, shapes and the fused functions using each.",
                     1, 1, tasks_opts, run_tasks};

/* ---- kiln tune ---- */

static Opt tune_opts[] = {
    {"--output", "-o", OPT_VALUE, "RECORDS.json", "append the tuning records here (resumes from records already there)", false, NULL, NULL, 0},
    {"--input-shapes", NULL, OPT_VALUE, "SHAPES", "input shapes; a size given overrides the model's, e.g. \"data:[8,3,224,224]\"", false, NULL, NULL, 0},
    {"--precision", NULL, OPT_VALUE, "P", "fp32 (default) or bf16: tune the tasks of a --precision bf16 build (docs/bf16.md)", false, NULL, NULL, 0},
    {"--target", NULL, OPT_VALUE, "TARGET", "the target to tune for, e.g. \"opencl\" or \"cuda\": candidates run on its device 0, which must be on this machine (default: this machine's CPU)", false, NULL, NULL, 0},
    {"--batch-sizes", NULL, OPT_VALUE, "LIST", "a symbolic batch: also tune the tasks of the batched variants at these batches, as kiln compile builds them (default: 4 and 8 within the bound), or none", false, NULL, NULL, 0},
    {"--trials", NULL, OPT_VALUE, "N", "measurements per task, those already in the log included (default 1000, capped at the space size)", false, NULL, NULL, 0},
    {"--tuner", NULL, OPT_VALUE, "NAME", "xgb (default: XGBoost cost model), ga, random or grid", false, NULL, NULL, 0},
    {"--early-stopping", NULL, OPT_VALUE, "N", "stop a task after N trials without a better config", false, NULL, NULL, 0},
    {"--tasks", NULL, OPT_VALUE, "LIST", "tune only these tasks, numbered from 1 as 'kiln tasks' lists them, e.g. 1,3-5", false, NULL, NULL, 0},
    {"--number", NULL, OPT_VALUE, "N", "runs per measurement, averaged (default 4)", false, NULL, NULL, 0},
    {"--repeat", NULL, OPT_VALUE, "N", "measurements per candidate (default 3)", false, NULL, NULL, 0},
    {"--min-repeat-ms", NULL, OPT_VALUE, "MS", "run a measurement at least this long (default 0)", false, NULL, NULL, 0},
    {"--timeout", NULL, OPT_VALUE, "S", "seconds a candidate may run (default 10)", false, NULL, NULL, 0},
    {"--build-timeout", NULL, OPT_VALUE, "S", "seconds a candidate's build may take (default 10)", false, NULL, NULL, 0},
    {"--parallel", NULL, OPT_VALUE, "N", "candidates built at once, 1 to 1024 (default: the cores available)", false, NULL, NULL, 0},
    {"--threads", NULL, OPT_VALUE, "N", "threads a candidate runs on, 1 to 1024 (default: KILN_NUM_THREADS or all cores)", false, NULL, NULL, 0},
    {"--time-limit", NULL, OPT_VALUE, "S", "wall-time budget of the whole session, shared out over the tasks", false, NULL, NULL, 0},
    {"--verify", NULL, OPT_VALUE, "N", "measure up to N of the best configs and the fallback again at the end (default 8; 0: don't)", false, NULL, NULL, 0},
    {"--no-baseline", NULL, OPT_FLAG, NULL, "don't time the fallback config beside each candidate to correct for a busy machine", false, NULL, NULL, 0},
    {"--seed", NULL, OPT_VALUE, "N", "seed of the tuners' random choices", false, NULL, NULL, 0},
    {"-O", NULL, OPT_VALUE, "LEVEL", "optimization level 0-3 (default 3)", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

/* "1,3-5" (tasks numbered from 1, as kiln tasks and the progress lines
 * show them) -> a mask over n tasks; CLI_USAGE after printing an error. */
static int parse_task_list(Command *cmd, const char *s, int n, bool *sel) {
  for (int i = 0; i < n; i++) sel[i] = false;
  const char *p = s;
  while (*p) {
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p || a < 1) return cli_usage(cmd, "--tasks: expected a list of task numbers (from 1) like 1,3-5, got '%s'", s);
    p = end;
    if (*p == '-') {
      const char *q = p + 1;
      b = strtol(q, &end, 10);
      if (end == q || b < a) return cli_usage(cmd, "--tasks: bad range in '%s'", s);
      p = end;
    }
    if (b > n) return cli_usage(cmd, "--tasks: task %ld does not exist (the model has %d tasks, numbered 1-%d)", b, n, n);
    for (long i = a; i <= b; i++) sel[i - 1] = true;
    if (*p == ',') p++;
    else if (*p) return cli_usage(cmd, "--tasks: expected a list of task numbers (from 1) like 1,3-5, got '%s'", s);
  }
  return 0;
}

static int positive_double(Command *cmd, const char *name, double def, double *out) {
  Opt *o = cli_opt(cmd, name);
  *out = def;
  if (!o->set) return 0;
  char *end;
  double v = strtod(o->value, &end);
  if (*o->value == 0 || *end || !(v > 0) || isinf(v)) return cli_usage(cmd, "option %s expects a positive number, got '%s'", name, o->value);
  *out = v;
  return 0;
}

static int run_tune(Command *cmd, int npos, const char **pos) {
  (void)npos;
  Opt *out = cli_opt(cmd, "--output");
  if (!out->set) return cli_usage(cmd, "missing -o RECORDS.json (where the tuning records go)");
  TuneOptions to;
  tune_options_default(&to);
  long trials, es, number, repeat, mrm, parallel, threads, seed, verify, lvl;
  double timeout, btimeout, limit;
  int urc;
  if ((urc = cli_int_range(cmd, "--trials", 1000, 1, INT_MAX, &trials)) ||
      (urc = cli_int_range(cmd, "--early-stopping", 0, 0, INT_MAX, &es)) ||
      (urc = cli_int_range(cmd, "--number", to.measure.number, 1, INT_MAX, &number)) ||
      (urc = cli_int_range(cmd, "--repeat", to.measure.repeat, 1, INT_MAX, &repeat)) ||
      (urc = cli_int_range(cmd, "--min-repeat-ms", 0, 0, INT_MAX, &mrm)) ||
      (urc = cli_int_range(cmd, "--parallel", 0, 1, 1024, &parallel)) ||
      (urc = cli_int_range(cmd, "--threads", 0, 1, 1024, &threads)) || (urc = cli_int(cmd, "--seed", 0, &seed)) ||
      (urc = cli_int_range(cmd, "--verify", to.verify, 0, INT_MAX, &verify)) ||
      (urc = positive_double(cmd, "--timeout", to.measure.timeout, &timeout)) ||
      (urc = positive_double(cmd, "--build-timeout", to.measure.build_timeout, &btimeout)) ||
      (urc = positive_double(cmd, "--time-limit", 0, &limit)) || (urc = cli_int_range(cmd, "-O", 3, 0, 3, &lvl)))
    return urc;
  Opt *tn = cli_opt(cmd, "--tuner");
  to.tuner = tn->set ? tn->value : "xgb";
  if (!tuner_kind(to.tuner)) return cli_usage(cmd, "%s", kiln_get_error());
  to.trials = (int)trials;
  to.early_stopping = (int)es;
  to.verify = (int)verify;
  to.log_path = out->value;
  to.seed = (uint64_t)seed;
  to.progress = stderr;
  to.measure.number = (int)number;
  to.measure.repeat = (int)repeat;
  to.measure.min_repeat_ms = (int)mrm;
  to.measure.timeout = timeout;
  to.measure.build_timeout = btimeout;
  to.measure.parallel = (int)parallel;
  to.measure.threads = (int)threads;
  to.measure.baseline = !cli_opt(cmd, "--no-baseline")->set;
  Opt *tgo = cli_opt(cmd, "--target");
  const Target *target = tgo->set ? target_parse(tgo->value, NULL) : target_host();
  if (!target) return cli_usage(cmd, "%s", kiln_get_error());
  if (measure_device_check(target, &to.measure)) return cli_error(cmd, "%s", kiln_get_error());
  Graph *g = NULL;
  double t0 = kiln_now_seconds();
  BatchSym batch;
  AVec *tasks = load_tasks(cmd, pos[0], lvl, target, &g, &batch);
  if (!tasks) return -1;
  if (batch.set && !batch.vars.n)
    fprintf(stderr, "kiln: symbolic batch %s: tuning the batch-1 tasks, whose records serve every %s (the kernels run "
            "once per sample)\n", batch.name, batch.name);
  else if (batch.set)
    fprintf(stderr, "kiln: symbolic batch %s: tuning the batch-1 tasks (1-%d), whose records serve every %s (the "
            "kernels run once per sample), and those of the batched variants at %s = %s\n",
            batch.name, batch.n_batch1, batch.name, batch.name, variant_list(&batch));
  int n = tasks->len;
  bool *sel = KNEWN(bool, n + 1);
  for (int i = 0; i < n; i++) sel[i] = true;
  Opt *tl = cli_opt(cmd, "--tasks");
  if (tl->set && parse_task_list(cmd, tl->value, n, sel)) {
    graph_free(g);
    return CLI_USAGE;
  }
  int nsel = 0;
  for (int i = 0; i < n; i++) nsel += sel[i];
  if (!nsel) {
    graph_free(g);
    printf("kiln: %s has no tuning tasks\n", pos[0]);
    return 0;
  }
  fprintf(stderr, "kiln: tuning %d of %d tasks of %s on %s with the %s tuner; records go to %s\n", nsel, n, pos[0],
          target->str, to.tuner, to.log_path);
  TuneSummary *sum = KNEWN(TuneSummary, n + 1);
  int left = nsel, rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    if (!sel[i]) continue;
    GraphTask *t = tasks->data[i];
    TuneOptions o = to;
    o.prefix = kfmt("[Task %2d/%2d] ", i + 1, n);
    if (limit > 0) {
      double now = kiln_now_seconds(), end = t0 + limit;
      o.deadline = now + (end - now) / left;
    }
    left--;
    if (autotune_tune(t->tmpl, target, t->wl, &o, &sum[i]))
      rc = cli_error(cmd, "task %d (%s %s): %s", i + 1, t->tmpl->name, t->desc, kiln_get_error());
  }
  if (!rc) {
    printf("%-5s %-20s %-38s %10s %10s %8s %8s %s\n", "task", "template", "workload", "fallback", "best", "trials",
           "errors", "(GFLOPS)");
    for (int i = 0; i < n; i++) {
      if (!sel[i]) continue;
      GraphTask *t = tasks->data[i];
      int errs = 0;
      for (int e = 1; e <= MEASURE_UNKNOWN_ERROR; e++) errs += sum[i].errors[e];
      double fb = t->flops > 0 && !isinf(sum[i].fallback_cost) ? t->flops / sum[i].fallback_cost / 1e9 : 0;
      printf("%-5d %-20s %-38s %10.2f %10.2f %8d %8d%s\n", i + 1, t->tmpl->name, t->desc, fb, sum[i].best_gflops,
             sum[i].measured + sum[i].resumed, errs, sum[i].early_stopped ? " (early stop)" : "");
    }
    /* a task none of whose candidates ran has no record worth using;
     * when that is every task, the tune failed */
    int nfailed = 0;
    for (int i = 0; i < n; i++) nfailed += sel[i] && isinf(sum[i].best_cost);
    if (nfailed < nsel)
      printf("kiln: tuning took %.1f s; records in %s (compile with --tuning-records %s)\n", kiln_now_seconds() - t0,
             to.log_path, to.log_path);
    for (int i = 0; i < n; i++) {
      if (!sel[i] || !isinf(sum[i].best_cost)) continue;
      GraphTask *t = tasks->data[i];
      StrBuf why = {0};
      for (int e = 1; e <= MEASURE_UNKNOWN_ERROR; e++)
        if (sum[i].errors[e]) sb_printf(&why, "%s%d %s", why.len ? ", " : "", sum[i].errors[e], measure_error_name(e));
      fprintf(stderr,
              "kiln tune: %stask %d (%s %s): every candidate failed (%s), so it keeps the fallback config; the errors "
              "are in %s (\"result\": [[...], ERROR_NO, ...]): a build error usually means the C compiler is missing "
              "or failing, a run error a timeout (--timeout, --build-timeout) or a crash\n",
              nfailed < nsel ? "warning: " : "", i + 1, t->tmpl->name, t->desc,
              why.len ? why.data : "no candidate was measured", to.log_path);
      sb_free(&why);
    }
    if (nfailed == nsel)
      rc = cli_error(cmd, "every candidate of every task failed: %s holds no working config", to.log_path);
  }
  graph_free(g);
  return rc;
}

Command cmd_tune = {"tune", "MODEL.onnx -o RECORDS.json [options]",
                    "Tune a model's tasks by measuring candidates on this machine; write AutoTVM (v0.2) records.", 1, 1,
                    tune_opts, run_tune};

/* ---- kiln records ---- */

static Opt records_opts[] = {
    {"--pick-best", NULL, OPT_FLAG, NULL, "keep only the fastest error-free record of each task and target (AutoTVM's pick_best), one per input-channel block", false, NULL, NULL, 0},
    {"--output", "-o", OPT_VALUE, "OUT.json", "with --pick-best: write the records there as v0.2 (default: stdout)", false, NULL, NULL, 0},
    {"--min-gain", NULL, OPT_VALUE, "PCT", "with --pick-best: keep a config only if it beats the task's measured fallback config by PCT%, else keep the fallback's record", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

typedef struct TaskStat {
  const char *key, *target, *template_key;
  TuneRecord *best;
  int n, errors;
} TaskStat;

static int run_records(Command *cmd, int npos, const char **pos) {
  AVec recs = {0};
  for (int i = 0; i < npos; i++)
    if (records_load(pos[i], &recs)) return cli_error(cmd, "%s", kiln_get_error());
  /* a config measured again counts with its newest record */
  int nall = recs.len;
  records_keep_latest(&recs);
  /* per (target, workload): count, errors, fastest */
  bool pick = cli_opt(cmd, "--pick-best")->set;
  AVec stats = {0};
  PtrMap by = {0};
  pm_init_str(&by);
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    /* pick-best keeps one record per input-channel block, so compiles
     * can chain layouts (graph_dispatch_query_block) */
    int64_t icb = pick ? cfg_split_inner(r->config, "tile_ic") : 0;
    kiln_clear_error();
    /* a task of TVM 0.6 is its name and template key: TopHub's direct and
     * Winograd records of one convolution are two tasks */
    const char *tkey = r->config->template_key ? r->config->template_key : "";
    const char *k = kfmt("%s\n%s\n%s\n%lld", r->target, r->wl->key, tkey, (long long)icb);
    TaskStat *s = pm_get(&by, k);
    if (!s) {
      s = KNEW(TaskStat);
      s->key = r->wl->key;
      s->target = r->target;
      s->template_key = tkey;
      pm_put(&by, k, s);
      av_push(&stats, s);
    }
    s->n++;
    if (r->error_no != MEASURE_NO_ERROR) s->errors++;
    else if (!s->best || record_cost(r) < record_cost(s->best)) s->best = r;
  }
  pm_free(&by);
  if (pick) {
    Opt *o = cli_opt(cmd, "--output");
    FILE *f = o->set ? fopen(o->value, "w") : stdout;
    if (!f) return cli_error(cmd, "cannot write '%s'", o->value);
    double gain = 0;
    Opt *mg = cli_opt(cmd, "--min-gain");
    if (mg->set) {
      char *end;
      gain = strtod(mg->value, &end);
      if (*mg->value == 0 || *end || gain < 0) return cli_error(cmd, "--min-gain expects a percentage >= 0, got '%s'", mg->value);
    }
    /* the newest record of each task's fallback config, when it was measured */
    PtrMap fbs = {0};
    pm_init_str(&fbs);
    for (int i = 0; mg->set && i < recs.len; i++) {
      TuneRecord *r = recs.data[i];
      const Template *tm = r->error_no == MEASURE_NO_ERROR ? template_lookup(r->wl->name) : NULL;
      const Target *rt = tm ? target_parse(r->target, NULL) : NULL; /* the record's own */
      ConfigEntity *fb = rt ? template_fallback(tm, rt, r->wl) : NULL;
      kiln_clear_error();
      if (fb && config_equal(fb, r->config)) pm_put(&fbs, kfmt("%s\n%s", r->target, r->wl->key), r);
    }
    int n = 0;
    PtrMap written = {0};
    for (int i = 0; i < stats.len; i++) {
      TaskStat *s = stats.data[i];
      if (!s->best) continue;
      TuneRecord *fb = pm_get(&fbs, kfmt("%s\n%s", s->target, s->key)), *w = s->best;
      /* not clearly faster than the fallback: ship the fallback */
      if (fb && record_cost(w) * (1 + gain / 100) > record_cost(fb)) w = fb;
      if (pm_get(&written, w)) continue;
      pm_put(&written, w, w);
      fprintf(f, "%s\n", record_json(w));
      n++;
    }
    pm_free(&written);
    pm_free(&fbs);
    if (o->set) {
      fclose(f);
      printf("kiln: wrote %d of %d records (the best per task and input block) to %s\n", n, nall, o->value);
    }
    return 0;
  }
  printf("%-22s %-30s %-38s %7s %7s %12s %10s\n", "target", "task", "workload", "records", "errors", "best (us)", "GFLOPS");
  for (int i = 0; i < stats.len; i++) {
    TaskStat *s = stats.data[i];
    TuneRecord *any = s->best;
    for (int k = 0; !any && k < recs.len; k++)
      if (!strcmp(((TuneRecord *)recs.data[k])->wl->key, s->key)) any = recs.data[k];
    double c = s->best ? record_cost(s->best) : INFINITY, fl = any ? wl_flops(any->wl) : 0;
    const char *task = !any ? "?" : *s->template_key ? kfmt("%s (%s)", any->wl->name, s->template_key) : any->wl->name;
    printf("%-22s %-30s %-38s %7d %7d %12.2f %10.2f\n", s->target, task, any ? wl_describe(any->wl) : "?",
           s->n, s->errors, isinf(c) ? 0 : c * 1e6, fl > 0 && !isinf(c) ? fl / c / 1e9 : 0);
  }
  printf("%d records (%d superseded by a newer measurement of the same config), %d tasks; this machine's target: %s\n",
         nall, nall - recs.len, stats.len, target_host()->str);
  return 0;
}

Command cmd_records = {"records", "RECORDS.json... [--pick-best [-o OUT.json] [--min-gain PCT]]",
                       "Summarize tuning records (v0.1 or v0.2) per task, or keep the best of each.", 1, -1,
                       records_opts, run_records};
