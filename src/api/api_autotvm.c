/*
 * api_autotvm.c - autotvm.*: the tuning engine (src/autotune, and the
 * graph's task extraction and dispatch context in src/graph) in the
 * registry, for kiln.autotvm (python/kiln/autotvm, which documents the
 * contract from the caller's side).
 *
 * Tasks cross as JSON text, the form TVM's records use: a task is its
 * template name and its workload arguments, so a task extracted here can be
 * tuned in another process.  Tuning writes its records to a log file (and
 * resumes from the records of the same workload already there, as `kiln
 * tune` does); the binding reads what was appended to hand it to its
 * callbacks.  Candidates run in worker processes started from a program
 * that understands AUTOTUNE_WORKER_ARG - the kiln command - so a binding
 * running inside another interpreter passes its path ("worker").
 *
 * apply_history_best adds a records file to the dispatch context that
 * the API's graph builds pass down (api_dispatch; the compiler itself takes
 * a context explicitly, graph/backend/dispatch.c).  The API's context is
 * process-wide, as TVM's DispatchContext.current, so the contexts form one
 * stack across threads: apply_history_best_exit resets the dispatch
 * context and adds back the files of the contexts still open.
 */
#include "api.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../autotune/autotune.h"
#include "../graph/backend/build.h"
#include "../graph/backend/strategy.h"

/* extract_tasks(graph, opt_level, target[, precision]) -> JSON array of tasks */
API_FUNC(at_extract_tasks) {
  API_CALL;
  KGraph *kg;
  int64_t level;
  const Target *target;
  int prec;
  if (api_argc(&c, 3, 4) || !(kg = api_obj(&c, 0, KOBJ_GRAPH)) || api_int(&c, 1, &level) ||
      !(target = api_target(&c, 2)) || api_precision_arg(&c, 3, &prec))
    return -1;
  if (level < 0 || level > 3) return api_error(&c, "opt_level must be 0 to 3, got %lld", (long long)level);
  Graph *g = api_graph_optimized(kg, (int)level, target, prec);
  if (!g) return api_fail(&c);
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  AVec tasks = {0};
  int rc = graph_extract_tasks(g, (int)level, target, api_dispatch(), &tasks);
  cJSON *arr = rc ? NULL : cJSON_CreateArray();
  for (int i = 0; arr && i < tasks.len; i++) {
    GraphTask *t = tasks.data[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->wl->name);
    cJSON *wargs = cJSON_Parse(wl_args_json(t->wl));
    cJSON_AddItemToObject(o, "args", wargs ? wargs : cJSON_CreateArray());
    cJSON_AddStringToObject(o, "target", target->str);
    cJSON *key = cJSON_Parse(t->wl->key);
    cJSON_AddItemToObject(o, "workload", key ? key : cJSON_CreateNull());
    cJSON_AddNumberToObject(o, "config_space_size", (double)t->space_size);
    cJSON_AddNumberToObject(o, "flops", t->flops);
    cJSON_AddStringToObject(o, "desc", t->desc ? t->desc : "");
    cJSON *nodes = cJSON_CreateArray();
    for (int k = 0; k < t->users.len; k++) cJSON_AddItemToArray(nodes, cJSON_CreateString(t->users.data[k]));
    cJSON_AddItemToObject(o, "nodes", nodes);
    cJSON_AddItemToArray(arr, o);
  }
  kiln_arena_pop();
  kiln_arena_free(scratch);
  if (g != kg->g) graph_free(g);
  if (rc) return api_fail(&c);
  return api_ret_json(&c, ret, ret_code, arr);
}

/* JSON helpers: a number or string member, else the default. */
static double num(const cJSON *o, const char *key, double def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? kstrdup(v->valuestring) : NULL;
}

static bool flag(const cJSON *o, const char *key, bool def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

/* The tuner names of kiln.autotvm (TVM's) to the engine's. */
static const char *tuner_name(const char *t) {
  if (!strcmp(t, "gridsearch") || !strcmp(t, "grid")) return "grid";
  if (!strcmp(t, "xgb") || !strcmp(t, "ga") || !strcmp(t, "random")) return t;
  return NULL;
}

/* tune_task(task_json, tuner, options_json) -> JSON summary */
API_FUNC(at_tune_task) {
  API_CALL;
  const char *task_text, *tuner, *opt_text;
  if (api_argc(&c, 3, 3) || !(task_text = api_str(&c, 0)) || !(tuner = api_str(&c, 1)) ||
      !(opt_text = api_str(&c, 2)))
    return -1;
  const char *engine_tuner = tuner_name(tuner);
  if (!engine_tuner) return api_error(&c, "tuner '%s' is not one of xgb, ga, random, gridsearch", tuner);
  cJSON *task = cJSON_Parse(task_text), *opts = cJSON_Parse(opt_text);
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  int rc = 0;
  TuneSummary sum;
  memset(&sum, 0, sizeof sum);
  const Template *tm = NULL;
  const Target *target = NULL;
  Workload *wl = NULL;
  if (!cJSON_IsObject(task)) rc = api_error(&c, "argument 0 (task_json) is not a JSON object");
  if (!rc && !cJSON_IsObject(opts)) rc = api_error(&c, "argument 2 (options_json) is not a JSON object");
  const char *name = rc ? NULL : str(task, "name");
  if (!rc && !name) rc = api_error(&c, "the task has no \"name\"");
  if (!rc && !(tm = template_lookup(name))) rc = api_fail(&c);
  if (!rc && !(target = target_parse(str(task, "target"), NULL))) rc = api_fail(&c);
  if (!rc && !(wl = wl_from_cjson(name, cJSON_GetObjectItemCaseSensitive(task, "args")))) rc = api_fail(&c);
  TuneOptions o;
  tune_options_default(&o);
  if (!rc) {
    o.tuner = engine_tuner;
    o.trials = (int)num(opts, "n_trial", o.trials);
    o.early_stopping = (int)num(opts, "early_stopping", 0);
    o.log_path = str(opts, "log_file");
    if (!o.log_path) rc = api_error(&c, "the options name no \"log_file\" for the records");
    const cJSON *tuner_opts = cJSON_GetObjectItemCaseSensitive(opts, "tuner_options");
    o.seed = (uint64_t)num(tuner_opts, "seed", (double)o.seed);
    if (flag(opts, "progress", false)) {
      o.progress = stdout;
      const char *prefix = str(opts, "progress_prefix");
      if (prefix) o.prefix = prefix;
    }
    const cJSON *mo = cJSON_GetObjectItemCaseSensitive(opts, "measure_option");
    const cJSON *runner = cJSON_GetObjectItemCaseSensitive(mo, "runner");
    const cJSON *builder = cJSON_GetObjectItemCaseSensitive(mo, "builder");
    o.measure.number = (int)num(runner, "number", o.measure.number);
    o.measure.repeat = (int)num(runner, "repeat", o.measure.repeat);
    o.measure.min_repeat_ms = (int)num(runner, "min_repeat_ms", o.measure.min_repeat_ms);
    o.measure.timeout = num(runner, "timeout", o.measure.timeout);
    o.measure.build_timeout = num(builder, "timeout", o.measure.build_timeout);
    o.measure.parallel = (int)num(builder, "n_parallel", o.measure.parallel);
    const char *worker = str(opts, "worker");
    if (worker) o.measure.worker = worker;
    o.measure.in_process = api_template_in_process(tm);
    o.flops = num(task, "flops", 0); /* a Python template's cfg.add_flop */
    if (o.trials < 1) rc = api_error(&c, "n_trial must be at least 1");
  }
  if (!rc && autotune_tune(tm, target, wl, &o, &sum)) rc = api_fail(&c);
  cJSON *out = NULL;
  if (!rc) {
    out = cJSON_CreateObject();
    cJSON_AddNumberToObject(out, "measured", sum.measured);
    cJSON_AddNumberToObject(out, "resumed", sum.resumed);
    cJSON_AddNumberToObject(out, "verified", sum.verified);
    cJSON *errs = cJSON_CreateArray();
    for (int e = 0; e <= MEASURE_UNKNOWN_ERROR; e++) cJSON_AddItemToArray(errs, cJSON_CreateNumber(sum.errors[e]));
    cJSON_AddItemToObject(out, "errors", errs);
    if (sum.best_index >= 0) {
      cJSON_AddNumberToObject(out, "best_cost", sum.best_cost);
      cJSON_AddNumberToObject(out, "best_gflops", sum.best_gflops);
      cJSON_AddNumberToObject(out, "best_index", (double)sum.best_index);
    }
    cJSON_AddNumberToObject(out, "seconds", sum.seconds);
    cJSON_AddBoolToObject(out, "early_stopped", sum.early_stopped);
    cJSON_AddNumberToObject(out, "flops", o.flops > 0 ? o.flops : wl_flops(wl));
  }
  kiln_arena_pop();
  kiln_arena_free(scratch);
  cJSON_Delete(task);
  cJSON_Delete(opts);
  if (rc) return -1;
  return api_ret_json(&c, ret, ret_code, out);
}

/* ---- apply_history_best: one process-wide stack of records files ---- */

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static char **ctx_paths;
static int ctx_n, ctx_cap;
static int64_t ctx_next_token = 1;
static int64_t *ctx_tokens;
static DispatchContext *ctx_dispatch;

DispatchContext *api_dispatch(void) {
  pthread_mutex_lock(&ctx_lock);
  if (!ctx_dispatch) ctx_dispatch = dispatch_context_new();
  DispatchContext *dc = ctx_dispatch;
  pthread_mutex_unlock(&ctx_lock);
  return dc;
}

/* apply_history_best(path) -> int token */
API_FUNC(at_apply_history_best) {
  API_CALL;
  const char *path;
  if (api_argc(&c, 1, 1) || !(path = api_str(&c, 0))) return -1;
  DispatchContext *dc = api_dispatch();
  pthread_mutex_lock(&ctx_lock);
  int rc = graph_dispatch_add_records(dc, path);
  int64_t token = 0;
  if (!rc && ctx_n == ctx_cap) {
    int cap = ctx_cap ? 2 * ctx_cap : 8;
    char **p = realloc(ctx_paths, sizeof *p * (size_t)cap);
    if (p) ctx_paths = p;
    int64_t *t = realloc(ctx_tokens, sizeof *t * (size_t)cap);
    if (t) ctx_tokens = t;
    if (p && t) ctx_cap = cap;
    else rc = kiln_set_error("out of memory");
  }
  if (!rc) {
    ctx_paths[ctx_n] = strdup(path);
    token = ctx_tokens[ctx_n] = ctx_next_token++;
    ctx_n++;
  }
  pthread_mutex_unlock(&ctx_lock);
  if (rc) return api_fail(&c);
  return api_ret_int(ret, ret_code, token);
}

/* apply_history_best_exit(token): close that context (and any opened
 * after it and not closed yet). */
API_FUNC(at_apply_history_best_exit) {
  API_CALL;
  int64_t token;
  if (api_argc(&c, 1, 1) || api_int(&c, 0, &token)) return -1;
  DispatchContext *dc = api_dispatch();
  pthread_mutex_lock(&ctx_lock);
  int k = 0;
  while (k < ctx_n && ctx_tokens[k] != token) k++;
  if (k == ctx_n) {
    pthread_mutex_unlock(&ctx_lock);
    return api_error(&c, "no open apply_history_best context %lld", (long long)token);
  }
  for (int i = k; i < ctx_n; i++) free(ctx_paths[i]);
  ctx_n = k;
  graph_dispatch_reset(dc);
  int rc = 0;
  for (int i = 0; i < ctx_n && !rc; i++) rc = graph_dispatch_add_records(dc, ctx_paths[i]);
  if (ctx_n == 0) {
    free(ctx_paths);
    free(ctx_tokens);
    ctx_paths = NULL;
    ctx_tokens = NULL;
    ctx_cap = 0;
  }
  pthread_mutex_unlock(&ctx_lock);
  if (rc) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

const ApiEntry api_autotvm_funcs[] = {
    {"autotvm.extract_tasks", at_extract_tasks, "graph, opt_level, target, precision=None"},
    {"autotvm.tune_task", at_tune_task, "task_json, tuner, options_json"},
    {"autotvm.apply_history_best", at_apply_history_best, "path"},
    {"autotvm.apply_history_best_exit", at_apply_history_best_exit, "token"},
    {NULL, NULL, NULL},
};
