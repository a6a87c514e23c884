/*
 * measure.c - building and running tuning candidates in worker processes
 * (AutoTVM's LocalBuilder and LocalRunner).
 *
 * Nothing of a candidate runs in the tuning process: a candidate whose
 * schedule crashes the compiler, whose kernel segfaults or never returns,
 * costs one record with an error number and tuning goes on.  Each step is a
 * fresh process of a worker program - the kiln binary itself (or any
 * program that calls autotune_worker_main, such as the unit tests), started
 * with posix_spawn, never by forking the tuning process (which may have
 * the thread pool and XGBoost's threads running):
 *
 *   <worker> --kiln-measure-worker build REQUEST.json
 *       instantiate the template with the config (error 1 if the template
 *       refuses it), lower the candidate and the unscheduled compute of the
 *       same workload (the reference), generate C, compile one .so
 *       (error 2); killed after build_timeout (error 6).
 *   <worker> --kiln-measure-worker run REQUEST.json
 *       load the .so, fill the inputs with seeded random values, get the
 *       reference output (the template's compute, unscheduled, computed
 *       once per argument layout and cached in the work folder), print "R"
 *       on stdout, run the candidate once and compare (error 5), then time it as TVM's time_evaluator does: a
 *       warm-up run, then `repeat` measurements of `number` runs each, the
 *       number raised until a measurement lasts min_repeat_ms.  A crash is
 *       error 4; the candidate gets `timeout` seconds from "R" (the
 *       reference may take longer the first time) or is killed (error 7).
 *
 * A template that only the tuning process can run (one written in Python,
 * MeasureOptions.in_process) is instantiated, lowered and turned into C
 * here instead; the build worker compiles the C it is given and the run
 * worker treats the candidate as any other.
 *
 * Up to `parallel` builds run at once; runs go one at a time, with no build
 * beside them, so timings are not disturbed.
 *
 * A machine shared with other work is disturbed anyway, and the candidates
 * of a task are measured minutes apart: a lucky quiet moment makes a
 * mediocre config look best.  With `baseline` set, the fallback config is
 * built once per task and each run worker times it right after every
 * measurement of the candidate; the candidate's costs are scaled by the
 * baseline's time in the task's first measurement over its median time
 * now.  Costs then compare as if measured together (on a quiet machine the
 * factor is 1), at the price of running the baseline as often as the
 * candidate.  Workers run in their own
 * process group (a timeout kills the C compiler too) and die with the
 * tuning process (PR_SET_PDEATHSIG).  Requests and results are small JSON
 * files in the candidate's folder; a worker's stderr goes to a log there,
 * whose last line becomes the error message when a worker dies.
 */
#define _GNU_SOURCE
#include "autotune.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../codegen/codegen.h"

extern char **environ;

void measure_options_default(MeasureOptions *o) {
  memset(o, 0, sizeof *o);
  o->number = 4;
  o->repeat = 3;
  o->min_repeat_ms = 0;
  o->timeout = 10;
  o->build_timeout = 10;
  o->baseline = true;
}

static int ncores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static double wall_seconds(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* ---- JSON files ---- */

static cJSON *read_json(const char *path) {
  size_t len;
  char *text = kiln_read_file(path, &len);
  if (!text) return NULL;
  cJSON *j = cJSON_Parse(text);
  free(text);
  return j;
}

static int write_json(const char *path, cJSON *j) {
  char *text = cJSON_PrintUnformatted(j);
  char *tmp = kfmt("%s.tmp", path);
  int rc = kiln_write_file(tmp, text, strlen(text));
  free(text);
  if (!rc && rename(tmp, path)) rc = kiln_set_error("rename %s: %s", tmp, strerror(errno));
  return rc;
}

static const char *jstr(const cJSON *o, const char *key, const char *def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : def;
}

static double jnum(const cJSON *o, const char *key, double def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* The last non-empty line of a log, shortened (arena). */
static const char *log_tail(const char *path) {
  size_t len;
  char *text = kiln_read_file(path, &len);
  if (!text) {
    kiln_clear_error();
    return "";
  }
  while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) text[--len] = 0;
  char *nl = strrchr(text, '\n');
  const char *line = nl ? nl + 1 : text;
  char *r = kstrndup(line, strlen(line) > 300 ? 300 : strlen(line));
  free(text);
  return r;
}

/* ===================== the worker ===================== */

typedef struct WResult {
  cJSON *j;
  const char *path;
} WResult;

static int wfinish(WResult *w, int error_no, const char *msg) {
  cJSON_AddNumberToObject(w->j, "error_no", error_no);
  if (msg) cJSON_AddStringToObject(w->j, "msg", msg);
  if (write_json(w->path, w->j)) fprintf(stderr, "measure worker: %s\n", kiln_get_error());
  cJSON_Delete(w->j);
  return 0;
}

/* One line of an error message (the first line of kiln_get_error). */
static const char *one_line(const char *s) {
  if (!s) return "";
  const char *nl = strchr(s, '\n');
  return nl ? kstrndup(s, (size_t)(nl - s)) : s;
}

/* Instantiate one candidate, lower it and the unscheduled compute of the
 * same workload (the reference: the template's compute over fresh
 * placeholders, or, for a template without one, the output tensor it
 * returned under a fresh schedule), and generate their C.  Returns
 * MEASURE_NO_ERROR with *src (heap) and "args", "has_ref" (and "note")
 * added to res, else the error number and *msg. */
static int candidate_source(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg, bool check,
                            cJSON *res, char **src, KBlob *blobs, int *nblobs, const char **msg) {
  *src = NULL;
  *nblobs = 0;
  if (tm->check && tm->check(t, cfg, wl)) return *msg = one_line(kiln_get_error()), MEASURE_INSTANTIATION_ERROR;
  Schedule *s = NULL;
  int na = 0;
  Tensor **targs = NULL;
  if (template_instantiate(tm, t, wl, cfg, &s, &na, &targs) || na < 1)
    return *msg = one_line(kiln_get_error()), MEASURE_INSTANTIATION_ERROR;
  LoweredFunc *funcs[2];
  int nf = 0;
  /* on a GPU target the candidate is a host function launching kernels;
   * the reference below stays a CPU function of the same module */
  LowerOptions lo = {0};
  target_lower_options(t, &lo);
  lo.serial_small_parallel = true; /* lowered as the model compiler lowers it */
  funcs[nf] = kiln_lower(s, na, targs, "kiln_candidate", &lo);
  if (!funcs[nf]) return *msg = one_line(kfmt("lowering: %s", kiln_get_error())), MEASURE_COMPILE_HOST;
  nf++;
  bool has_ref = false;
  if (check && tm->compute) {
    Tensor **in = KNEWN(Tensor *, na + 1);
    for (int i = 0; i + 1 < na; i++) {
      int64_t shape[16];
      if (targs[i]->ndim > 16 || !te_shape_const(targs[i], shape)) break;
      in[i] = te_placeholder_c(targs[i]->name, targs[i]->ndim, shape, targs[i]->dtype);
    }
    Tensor *out = tm->compute(t, wl, cfg, na - 1, in);
    Schedule *rs = out ? te_create_schedule(1, &out) : NULL;
    if (rs) {
      in[na - 1] = out;
      funcs[nf] = kiln_lower(rs, na, in, "kiln_reference", NULL);
      if (funcs[nf]) nf++, has_ref = true;
    }
  } else if (check) {
    Schedule *rs = te_create_schedule(1, &targs[na - 1]);
    if (rs && (funcs[nf] = kiln_lower(rs, na, targs, "kiln_reference", NULL))) nf++, has_ref = true;
  }
  if (check && !has_ref) cJSON_AddStringToObject(res, "note", one_line(kfmt("no reference: %s", kiln_get_error())));
  /* the kernels' source (and PTX: NVRTC runs here, so a kernel it refuses
   * is a device compile error, as in TVM) */
  if (kiln_device_blobs(funcs, nf, NULL, blobs, nblobs))
    return *msg = one_line(kfmt("device code: %s", kiln_get_error())), MEASURE_COMPILE_DEVICE;
  char **units = t->kind->codegen(funcs, nf, *nblobs, blobs, 1);
  *src = units ? units[0] : NULL;
  free(units);
  if (!*src) return *msg = one_line(kfmt("codegen: %s", kiln_get_error())), MEASURE_COMPILE_HOST;
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; i < na; i++) {
    cJSON *a = cJSON_CreateObject(), *sh = cJSON_CreateArray();
    int64_t shape[16];
    if (targs[i]->ndim > 16 || !te_shape_const(targs[i], shape)) {
      cJSON_Delete(arr);
      cJSON_Delete(a);
      cJSON_Delete(sh);
      free(*src);
      *src = NULL;
      return *msg = "arguments must have constant shapes", MEASURE_INSTANTIATION_ERROR;
    }
    for (int d = 0; d < targs[i]->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[d]));
    cJSON_AddItemToObject(a, "shape", sh);
    cJSON_AddStringToObject(a, "dtype", dt_str(targs[i]->dtype));
    cJSON_AddItemToArray(arr, a);
  }
  cJSON_AddItemToObject(res, "args", arr);
  cJSON_AddBoolToObject(res, "has_ref", has_ref);
  return MEASURE_NO_ERROR;
}

static int worker_build(const cJSON *req) {
  WResult w = {cJSON_CreateObject(), jstr(req, "result", "result.json")};
  double t0 = kiln_now_seconds();
  const char *so = jstr(req, "so", "candidate.so"), *source = jstr(req, "source", NULL);
  const Target *t = target_parse(jstr(req, "target", "llvm"), NULL);
  if (!t) return wfinish(&w, MEASURE_INSTANTIATION_ERROR, one_line(kiln_get_error()));
  char *src = NULL;
  KBlob blobs[4];
  int nblobs = 0;
  if (source) {
    /* generated by the tuning process (MeasureOptions.in_process) */
    size_t len;
    if (!(src = kiln_read_file(source, &len))) return wfinish(&w, MEASURE_UNKNOWN_ERROR, one_line(kiln_get_error()));
    cJSON_AddItemToObject(w.j, "args", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(req, "source_args"), 1));
    cJSON_AddBoolToObject(w.j, "has_ref", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "has_ref")));
  } else {
    const char *task = jstr(req, "task", ""), *args = jstr(req, "args", "[]"), *config = jstr(req, "config", "[]");
    bool check = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "check"));
    const char *tkey = jstr(req, "template_key", NULL);
    const Template *tm = tkey ? template_find(task, tkey, t) : template_lookup(task);
    if (!tm && tkey) kiln_set_error("no schedule template '%s' (%s) for target '%s'", task, tkey, t->str);
    Workload *wl = tm ? wl_from_json(task, args) : NULL;
    ConfigEntity *cfg = wl ? config_entity_from_json(config) : NULL;
    if (!cfg) return wfinish(&w, MEASURE_INSTANTIATION_ERROR, one_line(kiln_get_error()));
    const char *msg = NULL;
    int e = candidate_source(tm, t, wl, cfg, check, w.j, &src, blobs, &nblobs, &msg);
    if (e != MEASURE_NO_ERROR) return wfinish(&w, e, msg);
  }
  const char *cflags = jstr(req, "cflags", NULL);
  CompileOptions co = {NULL, cflags, NULL};
  const char *units[1] = {src};
  int rc = t->kind->compile(1, units, nblobs, blobs, so, &co);
  free(src);
  if (rc) return wfinish(&w, MEASURE_COMPILE_HOST, one_line(kfmt("compile: %s", kiln_get_error())));
  cJSON_AddNumberToObject(w.j, "build_time", kiln_now_seconds() - t0);
  return wfinish(&w, MEASURE_NO_ERROR, NULL);
}

/* Seeded uniform values in [-1, 1) (floats) or small integers. */
static void fill_random(DLTensor *t, uint64_t seed) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (int64_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double u = (double)(x >> 11) / 9007199254740992.0;
    char *p = (char *)t->data;
    DLDataType d = t->dtype;
    if (d.code == kDLFloat && d.bits == 32) ((float *)p)[i] = (float)(2 * u - 1);
    else if (d.code == kDLFloat && d.bits == 64) ((double *)p)[i] = 2 * u - 1;
    else if (d.bits == 32) ((int32_t *)p)[i] = (int32_t)(u * 7) - 3;
    else if (d.bits == 64) ((int64_t *)p)[i] = (int64_t)(u * 7) - 3;
    else if (d.bits == 8) ((uint8_t *)p)[i] = (uint8_t)(u * 7);
    else if (d.bits == 16) ((uint16_t *)p)[i] = 0;
  }
}

static double get_value(const DLTensor *t, int64_t i) {
  const char *p = (const char *)t->data;
  DLDataType d = t->dtype;
  if (d.code == kDLFloat && d.bits == 32) return ((const float *)p)[i];
  if (d.code == kDLFloat && d.bits == 64) return ((const double *)p)[i];
  if (d.bits == 32) return ((const int32_t *)p)[i];
  if (d.bits == 64) return (double)((const int64_t *)p)[i];
  if (d.bits == 8) return ((const uint8_t *)p)[i];
  return 0;
}

static int call(KilnFunction *f, int n, DLTensor **arrays) {
  KilnValue args[32], ret;
  int codes[32], rcode;
  for (int i = 0; i < n && i < 32; i++) {
    args[i].v_handle = arrays[i];
    codes[i] = KILN_DLTENSOR;
  }
  return kiln_func_call(f, args, codes, n, &ret, &rcode);
}

/* The arrays of one argument list [{"shape", "dtype"}...]: on the host,
 * inputs filled (the reference runs on these), and for a GPU candidate
 * their copies on the device, which the candidate runs on. */
typedef struct Args {
  int n;
  DLDevice dev;
  DLTensor **host, **run; /* run == host on the CPU */
} Args;

static bool on_gpu(const Args *a) { return a->dev.device_type != kDLCPU; }

static int alloc_args(const cJSON *args, DLDevice dev, Args *a) {
  memset(a, 0, sizeof *a);
  a->dev = dev;
  a->n = cJSON_GetArraySize(args);
  if (a->n < 1 || a->n > 32) return kiln_set_error("bad argument list");
  a->host = KNEWN(DLTensor *, a->n + 1);
  a->run = on_gpu(a) ? KNEWN(DLTensor *, a->n + 1) : a->host;
  DLDevice cpu = {kDLCPU, 0};
  for (int i = 0; i < a->n; i++) {
    const cJSON *j = cJSON_GetArrayItem(args, i), *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    int nd = cJSON_GetArraySize(sh);
    int64_t shape[16];
    for (int d = 0; d < nd && d < 16; d++) shape[d] = (int64_t)cJSON_GetArrayItem(sh, d)->valuedouble;
    DType dt;
    if (dt_parse(jstr(j, "dtype", "float32"), &dt) || kiln_array_empty(nd, shape, dt, cpu, &a->host[i])) return -1;
    if (i + 1 < a->n) fill_random(a->host[i], (uint64_t)i + 1);
    if (on_gpu(a) && (kiln_array_empty(nd, shape, dt, dev, &a->run[i]) ||
                      (i + 1 < a->n && kiln_array_copy(a->host[i], a->run[i]))))
      return -1;
  }
  return 0;
}

static void free_args(Args *a) {
  for (int i = 0; i < a->n; i++) {
    if (a->host && a->host[i]) kiln_array_free(a->host[i]);
    if (on_gpu(a) && a->run && a->run[i]) kiln_array_free(a->run[i]);
  }
}

/* Run f `number` times on the arrays and wait for the device: seconds per
 * run.  A kernel that failed on the device is found at the wait (GPU
 * launches are asynchronous) and fails the call.  -1 + error. */
static double timed_runs(KilnFunction *f, const Args *a, int number) {
  double t0 = kiln_now_seconds();
  for (int i = 0; i < number; i++)
    if (call(f, a->n, a->run)) return -1;
  if (on_gpu(a) && kiln_device_sync(a->dev)) return -1;
  return (kiln_now_seconds() - t0) / number;
}

static int worker_run(const cJSON *req) {
  WResult w = {cJSON_CreateObject(), jstr(req, "result", "result.json")};
  int number = (int)jnum(req, "number", 1), repeat = (int)jnum(req, "repeat", 1);
  double min_repeat_ms = jnum(req, "min_repeat_ms", 0);
  int threads = (int)jnum(req, "threads", 0);
  DLDevice dev = {(DLDeviceType)(int)jnum(req, "device_type", kDLCPU), (int)jnum(req, "device_id", 0)};
  if (number < 1) number = 1;
  if (repeat < 1) repeat = 1;
  if (threads > 0) kiln_set_num_threads(threads);
  KilnModule *mod = NULL;
  KilnFunction *f = NULL, *ref = NULL;
  if (kiln_module_load(jstr(req, "so", ""), &mod) || kiln_module_get_function(mod, "kiln_candidate", &f))
    return wfinish(&w, MEASURE_RUNTIME_DEVICE, one_line(kfmt("loading the candidate: %s", kiln_last_error())));
  bool check = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "check"));
  if (check && kiln_module_get_function(mod, "kiln_reference", &ref)) check = false;
  Args A;
  if (alloc_args(cJSON_GetObjectItemCaseSensitive(req, "args"), dev, &A))
    return wfinish(&w, MEASURE_RUNTIME_DEVICE, one_line(kfmt("allocating arguments: %s", kiln_last_error())));
  /* the baseline kernel timed alongside (measurer_new) */
  KilnModule *bmod = NULL;
  KilnFunction *bf = NULL;
  Args B = {0};
  const char *bso = jstr(req, "baseline_so", NULL);
  if (bso && (kiln_module_load(bso, &bmod) || kiln_module_get_function(bmod, "kiln_candidate", &bf) ||
              alloc_args(cJSON_GetObjectItemCaseSensitive(req, "baseline_args"), dev, &B)))
    return wfinish(&w, MEASURE_UNKNOWN_ERROR, one_line(kfmt("loading the baseline: %s", kiln_last_error())));
  int na = A.n;
  DLTensor *out = A.host[na - 1];
  int64_t nout = 1;
  for (int d = 0; d < out->ndim; d++) nout *= out->shape[d];
  size_t nbytes = kiln_array_nbytes(out);
  double *expect = NULL;
  if (check) {
    /* the reference output (computed on the host), from the cache when
     * this layout was seen */
    const char *cache = jstr(req, "ref_cache", NULL);
    size_t len = 0;
    char *cached = cache ? kiln_read_file(cache, &len) : NULL;
    if (!cached || len != nbytes) {
      free(cached);
      cached = NULL;
      kiln_clear_error();
      if (call(ref, na, A.host))
        return wfinish(&w, MEASURE_RUNTIME_DEVICE, one_line(kfmt("the reference failed: %s", kiln_last_error())));
      if (cache) {
        char *tmp = kfmt("%s.%d", cache, (int)getpid());
        if (kiln_write_file(tmp, out->data, nbytes) == 0) rename(tmp, cache);
      }
    } else {
      memcpy(out->data, cached, nbytes);
      free(cached);
    }
    expect = malloc(sizeof(double) * (size_t)(nout > 0 ? nout : 1));
    for (int64_t i = 0; i < nout; i++) expect[i] = get_value(out, i);
  }
  if (out->dtype.code == kDLFloat && out->dtype.bits == 32)
    for (int64_t i = 0; i < nout; i++) ((float *)out->data)[i] = NAN;
  else
    memset(out->data, 0xff, nbytes);
  if (on_gpu(&A) && kiln_array_copy(out, A.run[na - 1]))
    return wfinish(&w, MEASURE_RUNTIME_DEVICE, one_line(kfmt("copying to the device: %s", kiln_last_error())));
  /* from here the candidate runs: the parent's run timeout starts (on a
   * GPU it includes building the kernels for the device, as in TVM) */
  fputs("R\n", stdout);
  fflush(stdout);
  if (timed_runs(f, &A, 1) < 0 || (on_gpu(&A) && kiln_array_copy(A.run[na - 1], out))) {
    free(expect);
    return wfinish(&w, MEASURE_RUNTIME_DEVICE, one_line(kfmt("the candidate failed: %s", kiln_last_error())));
  }
  if (expect) {
    double scale = 1e-30, worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < nout; i++) scale = fmax(scale, fabs(expect[i]));
    for (int64_t i = 0; i < nout; i++) {
      double g = get_value(out, i), d = fabs(g - expect[i]);
      if (isnan(g) || d > worst) {
        worst = isnan(g) ? INFINITY : d;
        at = i;
        if (isnan(g)) break;
      }
    }
    if (worst > 1e-4 * scale) {
      const char *m = kfmt("wrong answer: element %lld is %g, the unscheduled compute gives %g (max |x| %g)", (long long)at,
                           get_value(out, at), expect[at], scale);
      free(expect);
      return wfinish(&w, MEASURE_WRONG_ANSWER, m);
    }
    free(expect);
  }
  /* time it: the check above was the warm-up run; each measurement of
   * the candidate is followed by one of the baseline */
  cJSON *costs = cJSON_CreateArray(), *bcosts = cJSON_CreateArray();
  if (bf && timed_runs(bf, &B, 1) < 0) {
    cJSON_Delete(costs);
    cJSON_Delete(bcosts);
    return wfinish(&w, MEASURE_UNKNOWN_ERROR, one_line(kfmt("the baseline failed: %s", kiln_last_error())));
  }
  for (int r = 0; r < repeat; r++) {
    for (;;) {
      double per = timed_runs(f, &A, number);
      if (per < 0) {
        cJSON_Delete(costs);
        cJSON_Delete(bcosts);
        return wfinish(&w, MEASURE_RUNTIME_DEVICE, one_line(kfmt("the candidate failed: %s", kiln_last_error())));
      }
      if (per * number * 1000 >= min_repeat_ms || min_repeat_ms <= 0) {
        cJSON_AddItemToArray(costs, cJSON_CreateNumber(per));
        if (bf) {
          double b = timed_runs(bf, &B, number);
          if (b > 0) cJSON_AddItemToArray(bcosts, cJSON_CreateNumber(b));
          kiln_clear_error();
        }
        break;
      }
      /* TVM's rule: enough runs to last min_repeat_ms, at least 1.618x more */
      int want = per > 0 ? (int)ceil(min_repeat_ms / 1000 / per) : number * 2;
      int grow = (int)ceil(number * 1.618);
      number = want > grow ? want : grow;
    }
  }
  cJSON_AddItemToObject(w.j, "costs", costs);
  if (bf) cJSON_AddItemToObject(w.j, "baseline_costs", bcosts);
  else cJSON_Delete(bcosts);
  cJSON_AddNumberToObject(w.j, "number", number);
  free_args(&A);
  free_args(&B);
  kiln_func_free(f);
  if (ref) kiln_func_free(ref);
  if (bf) kiln_func_free(bf);
  kiln_module_free(mod);
  kiln_module_free(bmod);
  return wfinish(&w, MEASURE_NO_ERROR, NULL);
}

int autotune_worker_main(int argc, char **argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (argc < 2 || (strcmp(argv[0], "build") && strcmp(argv[0], "run"))) {
    fprintf(stderr, "usage: %s build|run REQUEST.json (the tuner starts this)\n", AUTOTUNE_WORKER_ARG);
    return 2;
  }
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  cJSON *req = read_json(argv[1]);
  int rc = 2;
  if (!req) {
    fprintf(stderr, "measure worker: cannot read request %s: %s\n", argv[1], kiln_get_error());
  } else {
    rc = !strcmp(argv[0], "build") ? worker_build(req) : worker_run(req);
    cJSON_Delete(req);
  }
  fflush(stdout);
  fflush(stderr);
  /* _exit: no exit handlers (leak checks) in a process that only reports */
  _exit(rc);
}

/* ===================== the tuning side ===================== */

struct Measurer {
  const Template *tm;
  const Target *target; /* the caller's; outlives the measurer */
  char *task, *args, *dir, *exe, *cflags;
  bool own_dir;
  MeasureOptions o;
  int next_id;
  char *baseline_so;    /* the fallback config, built once (NULL: none) */
  cJSON *baseline_args;
  double base_ref;      /* the baseline's time in the first measurement */
};

static char *self_exe(void) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = 0;
  return xstrdup(buf);
}

static void build_baseline(Measurer *m, const Workload *wl);

int measure_device_check(const Target *t, const MeasureOptions *o) {
  if (!target_is_gpu(t)) return 0;
  DLDevice dev = {(DLDeviceType)t->kind->device_type, o ? o->device_id : 0};
  int there = 0;
  if (kiln_device_exists(dev, &there) == 0 && there) return 0;
  /* a synchronize says why (no driver, no such device) */
  if (kiln_device_sync(dev) == 0) kiln_set_error("device %s:%d is not available", t->kind->name, dev.device_id);
  const char *why = kstrdup(kiln_get_error());
  return kiln_set_error("%s; tuning for '%s' measures every candidate on the device, so it runs where the device is "
                        "(the records it writes compile anywhere: --tuning-records)",
                        why, t->str);
}

Measurer *measurer_new(const Template *tm, const Target *t, const Workload *wl, const MeasureOptions *o) {
  if (o && o->in_process && target_is_gpu(t)) {
    kiln_set_error("measure: a template written in Python cannot be measured on GPU target '%s' (its candidates "
                   "are generated in this process, without their kernels); tune it for the CPU",
                   t->str);
    return NULL;
  }
  Measurer *m = xcalloc(1, sizeof *m);
  m->tm = tm;
  m->target = t;
  measure_options_default(&m->o);
  if (o) m->o = *o;
  if (m->o.number < 1) m->o.number = 1;
  if (m->o.repeat < 1) m->o.repeat = 1;
  if (m->o.timeout <= 0) m->o.timeout = 10;
  if (m->o.build_timeout <= 0) m->o.build_timeout = 10;
  if (m->o.parallel < 1) m->o.parallel = ncores();
  m->task = xstrdup(wl->name);
  m->args = xstrdup(wl_args_json(wl));
  const char *we = getenv("KILN_WORKER");
  m->exe = m->o.worker ? xstrdup(m->o.worker) : we && *we ? xstrdup(we) : self_exe();
  m->cflags = m->o.cflags ? xstrdup(m->o.cflags) : NULL;
  if (!m->exe) {
    kiln_set_error("measure: cannot find the worker program (set KILN_WORKER)");
    measurer_free(m);
    return NULL;
  }
  if (m->o.work_dir) {
    mkdir(m->o.work_dir, 0755);
    m->dir = xstrdup(m->o.work_dir);
  } else {
    m->dir = kiln_mkdtemp("kiln-tune-");
    m->own_dir = true;
    if (!m->dir) {
      measurer_free(m);
      return NULL;
    }
  }
  m->o.worker = m->exe;
  m->o.cflags = m->cflags;
  m->o.work_dir = m->dir;
  if (m->o.baseline) build_baseline(m, wl);
  return m;
}

void measurer_free(Measurer *m) {
  if (!m) return;
  free(m->baseline_so);
  cJSON_Delete(m->baseline_args);
  if (m->dir && m->own_dir && !m->o.keep_files) kiln_rmtree(m->dir);
  free(m->task);
  free(m->args);
  free(m->dir);
  free(m->exe);
  free(m->cflags);
  free(m);
}

typedef struct Proc {
  pid_t pid;
  int out_fd;  /* the worker's stdout (run workers), -1 if none */
  double start, ready_at;
  bool ready;  /* "R" seen */
  bool exited, timed_out;
  int status;
} Proc;

static int spawn(Measurer *m, const char *mode, const char *req, const char *log, bool pipe_out, Proc *p) {
  memset(p, 0, sizeof *p);
  p->out_fd = -1;
  int fds[2] = {-1, -1};
  if (pipe_out && pipe2(fds, O_CLOEXEC)) return kiln_set_error("measure: pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (pipe_out) posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  else posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none, defs;
  sigemptyset(&none);
  sigemptyset(&defs);
  sigaddset(&defs, SIGPIPE);
  sigaddset(&defs, SIGINT);
  sigaddset(&defs, SIGTERM);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &defs);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char *argv[] = {m->exe, AUTOTUNE_WORKER_ARG, (char *)mode, (char *)req, NULL};
  int rc = posix_spawn(&p->pid, m->exe, &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (pipe_out) close(fds[1]);
  if (rc) {
    if (pipe_out) close(fds[0]);
    return kiln_set_error("measure: cannot start the worker %s: %s", m->exe, strerror(rc));
  }
  if (pipe_out) {
    p->out_fd = fds[0];
    fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
  }
  p->start = kiln_now_seconds();
  return 0;
}

static void kill_proc(Proc *p) {
  kill(-p->pid, SIGKILL);
  kill(p->pid, SIGKILL);
  waitpid(p->pid, &p->status, 0);
  p->exited = true;
}

static bool poll_exit(Proc *p) {
  if (p->exited) return true;
  pid_t r = waitpid(p->pid, &p->status, WNOHANG);
  if (r == p->pid) {
    p->exited = true;
    kill(-p->pid, SIGKILL); /* anything it left behind in its group */
  }
  return p->exited;
}

static void read_ready(Proc *p) {
  if (p->out_fd < 0) return;
  char buf[64];
  ssize_t n;
  while ((n = read(p->out_fd, buf, sizeof buf)) > 0)
    if (memchr(buf, 'R', (size_t)n) && !p->ready) {
      p->ready = true;
      p->ready_at = kiln_now_seconds();
    }
}

static const char *death(const Proc *p, const char *log) {
  const char *tail = log_tail(log);
  if (WIFSIGNALED(p->status))
    return kfmt("killed by signal %d (%s)%s%s", WTERMSIG(p->status), strsignal(WTERMSIG(p->status)), *tail ? ": " : "", tail);
  return kfmt("exited with status %d without a result%s%s", WIFEXITED(p->status) ? WEXITSTATUS(p->status) : -1,
              *tail ? ": " : "", tail);
}

typedef struct Cand {
  const char *dir, *req, *res, *log, *so;
  cJSON *built; /* the build result */
  double build_time;
} Cand;

static void set_error(MeasureResult *r, int no, const char *msg) {
  r->error_no = no;
  r->msg = msg ? kstrdup(msg) : NULL;
  r->ncosts = 0;
}

static void build_all(Measurer *m, int n, ConfigEntity *const *cfgs, Cand *c, MeasureResult *out) {
  Proc *procs = KNEWN(Proc, n);
  int next = 0, running = 0;
  bool *live = KNEWN(bool, n);
  while (next < n || running) {
    while (running < m->o.parallel && next < n) {
      int i = next++;
      cJSON *req = cJSON_CreateObject();
      if (m->o.in_process) {
        /* the template runs here only: instantiate and generate C now */
        const char *msg = NULL;
        char *src = NULL;
        Workload *wl = wl_from_json(m->task, m->args);
        cJSON *info = cJSON_CreateObject();
        KBlob blobs[4];
        int nblobs = 0;
        int e = wl ? candidate_source(m->tm, m->target, wl, cfgs[i], !m->o.no_check, info, &src, blobs, &nblobs, &msg)
                   : (msg = one_line(kiln_get_error()), MEASURE_INSTANTIATION_ERROR);
        cJSON_AddItemToObject(req, "source_args", cJSON_DetachItemFromObject(info, "args"));
        cJSON_AddBoolToObject(req, "has_ref", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "has_ref")));
        cJSON_Delete(info);
        const char *path = kfmt("%s/candidate.c", c[i].dir);
        if (e == MEASURE_NO_ERROR && kiln_write_file(path, src, strlen(src)))
          e = MEASURE_UNKNOWN_ERROR, msg = one_line(kiln_get_error());
        free(src);
        if (e != MEASURE_NO_ERROR) {
          cJSON_Delete(req);
          set_error(&out[i], e, msg);
          continue;
        }
        cJSON_AddStringToObject(req, "source", path);
      }
      cJSON_AddStringToObject(req, "task", m->task);
      if (m->tm->template_key) cJSON_AddStringToObject(req, "template_key", m->tm->template_key);
      cJSON_AddStringToObject(req, "target", m->target->str);
      cJSON_AddStringToObject(req, "args", m->args);
      cJSON_AddStringToObject(req, "config", config_entity_json(cfgs[i]));
      cJSON_AddStringToObject(req, "so", c[i].so);
      cJSON_AddStringToObject(req, "result", c[i].res);
      cJSON_AddBoolToObject(req, "check", !m->o.no_check);
      if (m->cflags) cJSON_AddStringToObject(req, "cflags", m->cflags);
      int rc = write_json(c[i].req, req);
      cJSON_Delete(req);
      if (rc || spawn(m, "build", c[i].req, c[i].log, false, &procs[i])) {
        set_error(&out[i], MEASURE_UNKNOWN_ERROR, one_line(kiln_get_error()));
        continue;
      }
      live[i] = true;
      running++;
    }
    bool any = false;
    for (int i = 0; i < next; i++) {
      if (!live[i]) continue;
      Proc *p = &procs[i];
      if (!poll_exit(p) && kiln_now_seconds() - p->start > m->o.build_timeout) {
        kill_proc(p);
        p->timed_out = true;
      }
      if (!p->exited) continue;
      live[i] = false;
      running--;
      any = true;
      c[i].build_time = kiln_now_seconds() - p->start;
      if (p->timed_out) {
        set_error(&out[i], MEASURE_BUILD_TIMEOUT, kfmt("build timed out after %g s", m->o.build_timeout));
        continue;
      }
      cJSON *res = read_json(c[i].res);
      if (!res) {
        kiln_clear_error();
        set_error(&out[i], MEASURE_COMPILE_HOST, kfmt("build worker %s", death(p, c[i].log)));
        continue;
      }
      int eno = (int)jnum(res, "error_no", MEASURE_UNKNOWN_ERROR);
      if (eno != MEASURE_NO_ERROR) {
        set_error(&out[i], eno, jstr(res, "msg", ""));
        cJSON_Delete(res);
        continue;
      }
      c[i].built = res;
    }
    if (!any && running) usleep(2000);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void run_one(Measurer *m, Cand *c, MeasureResult *out) {
  cJSON *req = cJSON_CreateObject();
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(c->built, "args");
  char *sig = cJSON_PrintUnformatted(args);
  uint64_t h = hash_bytes(sig, strlen(sig), 0x6b696c6e);
  free(sig);
  cJSON_AddStringToObject(req, "so", c->so);
  cJSON_AddStringToObject(req, "result", c->res);
  cJSON_AddItemToObject(req, "args", cJSON_Duplicate(args, 1));
  cJSON_AddNumberToObject(req, "number", m->o.number);
  cJSON_AddNumberToObject(req, "repeat", m->o.repeat);
  cJSON_AddNumberToObject(req, "min_repeat_ms", m->o.min_repeat_ms);
  cJSON_AddNumberToObject(req, "threads", m->o.threads);
  cJSON_AddNumberToObject(req, "device_type", m->target->kind->device_type);
  cJSON_AddNumberToObject(req, "device_id", m->o.device_id);
  bool check = !m->o.no_check && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c->built, "has_ref"));
  cJSON_AddBoolToObject(req, "check", check);
  cJSON_AddStringToObject(req, "ref_cache", kfmt("%s/ref_%016llx.bin", m->dir, (unsigned long long)h));
  if (m->baseline_so) {
    cJSON_AddStringToObject(req, "baseline_so", m->baseline_so);
    cJSON_AddItemToObject(req, "baseline_args", cJSON_Duplicate(m->baseline_args, 1));
  }
  remove(c->res);
  int rc = write_json(c->req, req);
  cJSON_Delete(req);
  Proc p;
  if (rc || spawn(m, "run", c->req, c->log, true, &p)) {
    set_error(out, MEASURE_UNKNOWN_ERROR, one_line(kiln_get_error()));
    return;
  }
  /* setup and the reference get a generous limit, the candidate `timeout` */
  double setup_limit = fmax(60, 6 * m->o.timeout);
  while (!poll_exit(&p)) {
    read_ready(&p);
    double now = kiln_now_seconds();
    if ((p.ready && now - p.ready_at > m->o.timeout) || (!p.ready && now - p.start > setup_limit)) {
      kill_proc(&p);
      p.timed_out = true;
      break;
    }
    struct pollfd pf = {p.out_fd, POLLIN, 0};
    poll(&pf, 1, 2);
  }
  read_ready(&p);
  close(p.out_fd);
  double run_time = kiln_now_seconds() - p.start;
  out->all_cost = c->build_time + run_time;
  if (p.timed_out) {
    set_error(out, MEASURE_RUN_TIMEOUT,
              p.ready ? kfmt("the candidate ran longer than the %g s timeout", m->o.timeout)
                      : kfmt("setting up the run (loading, the reference) took longer than %g s", setup_limit));
    return;
  }
  cJSON *res = read_json(c->res);
  if (!res) {
    kiln_clear_error();
    set_error(out, MEASURE_RUNTIME_DEVICE, kfmt("the candidate crashed: run worker %s", death(&p, c->log)));
    return;
  }
  int eno = (int)jnum(res, "error_no", MEASURE_UNKNOWN_ERROR);
  if (eno != MEASURE_NO_ERROR) {
    set_error(out, eno, jstr(res, "msg", ""));
  } else {
    const cJSON *costs = cJSON_GetObjectItemCaseSensitive(res, "costs");
    int k = cJSON_GetArraySize(costs);
    out->error_no = MEASURE_NO_ERROR;
    out->costs = KNEWN(double, k > 0 ? k : 1);
    out->ncosts = 0;
    for (const cJSON *x = costs ? costs->child : NULL; x; x = x->next)
      if (cJSON_IsNumber(x)) out->costs[out->ncosts++] = x->valuedouble;
    if (out->ncosts == 0) set_error(out, MEASURE_UNKNOWN_ERROR, "the run worker reported no costs");
    /* scale by how much the baseline drifted since the first measurement */
    const cJSON *bc = cJSON_GetObjectItemCaseSensitive(res, "baseline_costs");
    int nbc = cJSON_GetArraySize(bc);
    if (out->ncosts && nbc > 0) {
      double *b = KNEWN(double, nbc);
      for (int i = 0; i < nbc; i++) b[i] = cJSON_GetArrayItem(bc, i)->valuedouble;
      qsort(b, (size_t)nbc, sizeof(double), cmp_double);
      double med = nbc % 2 ? b[nbc / 2] : (b[nbc / 2 - 1] + b[nbc / 2]) / 2;
      if (med > 0) {
        if (m->base_ref <= 0) m->base_ref = med;
        out->scale = m->base_ref / med;
        for (int i = 0; i < out->ncosts; i++) out->costs[i] *= out->scale;
      }
    }
  }
  cJSON_Delete(res);
}

/* The fallback config built once, timed beside every candidate; without
 * it (a fallback that does not build) measurements are not scaled. */
static void build_baseline(Measurer *m, const Workload *wl) {
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  ConfigEntity *fb = template_fallback(m->tm, m->target, wl);
  if (fb) {
    Cand c = {0};
    MeasureResult r;
    memset(&r, 0, sizeof r);
    r.error_no = -1;
    c.dir = kfmt("%s/baseline", m->dir);
    mkdir(c.dir, 0755);
    c.req = kfmt("%s/request.json", c.dir);
    c.res = kfmt("%s/result.json", c.dir);
    c.log = kfmt("%s/worker.log", c.dir);
    c.so = kfmt("%s/baseline.so", c.dir);
    bool no_check = m->o.no_check;
    m->o.no_check = true;
    build_all(m, 1, &fb, &c, &r);
    m->o.no_check = no_check;
    if (c.built) {
      m->baseline_so = xstrdup(c.so);
      m->baseline_args = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c.built, "args"), 1);
      cJSON_Delete(c.built);
    }
  }
  kiln_clear_error();
  kiln_arena_pop();
  kiln_arena_free(a);
}

int measurer_run(Measurer *m, int n, ConfigEntity *const *cfgs, MeasureResult *out) {
  if (n <= 0) return 0;
  Cand *c = KNEWN(Cand, n);
  int started = 0;
  for (int i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].error_no = -1;
    out[i].scale = 1;
    c[i].dir = kfmt("%s/c%05d", m->dir, m->next_id++);
    mkdir(c[i].dir, 0755);
    c[i].req = kfmt("%s/request.json", c[i].dir);
    c[i].res = kfmt("%s/result.json", c[i].dir);
    c[i].log = kfmt("%s/worker.log", c[i].dir);
    c[i].so = kfmt("%s/candidate.so", c[i].dir);
  }
  build_all(m, n, cfgs, c, out);
  for (int i = 0; i < n; i++) {
    if (c[i].built) {
      run_one(m, &c[i], &out[i]);
      cJSON_Delete(c[i].built);
      started++;
    } else {
      out[i].all_cost = c[i].build_time;
      started += out[i].error_no != MEASURE_UNKNOWN_ERROR;
    }
    out[i].timestamp = wall_seconds();
    if (!m->o.keep_files) kiln_rmtree(c[i].dir);
  }
  if (!started) return kiln_set_error("measure: no worker could be started (%s)", out[0].msg ? out[0].msg : "?");
  return 0;
}
