/*
 * test_cuda_templates.c - TVM 0.6's CUDA templates (src/topi/cuda): for
 * every record of the seeds' TopHub logs (tests/data/tophub: 120 direct and
 * 36 Winograd conv2d, 30 depthwise, 15 dense), the template the record
 * names (task name and template key) defines a space at the record's
 * workload in which the record's index is exactly the record's entity,
 * both ways, and whose check accepts it for a CUDA target; the template
 * key survives the v0.1 -> v0.2 conversion; the fallback configs are
 * points of their spaces; and the CUDA source of every batch-1 kernel the
 * seeds' configs give (direct, Winograd, depthwise, dense) and of their
 * batch-128 dense kernels compiles with NVRTC for sm_90 without a warning or a
 * spill (skipped where NVRTC is absent).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "codegen/codegen.h"
#include "graph/backend/strategy.h"
#include "knob/knob.h"
#include "lower/lower.h"
#include "test.h"
#include "topi/topi.h"

static void load_seeds(AVec *recs) {
  const char *dir = kfmt("%s/tests/data/tophub", test_root());
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n > 4 && !strcmp(e->d_name + n - 4, ".log")) CHECK_OK(records_load(kfmt("%s/%s", dir, e->d_name), recs));
  }
  closedir(d);
}

static void test_seed_index_entity(void) {
  AVec recs = {0};
  load_seeds(&recs);
  const Target *cuda = target_parse("cuda -model=unknown", NULL);
  CHECK_NN(cuda);
  int direct = 0, wino = 0, dw = 0, dense = 0;
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    const char *where = kfmt("%s:%d", r->file, r->line);
    const Template *tm = template_find(r->wl->name, r->config->template_key, cuda);
    CHECK_MSG(tm != NULL, "%s: no template for %s (%s)", where, r->wl->name, r->config->template_key);
    if (!tm) continue;
    CHECK_STR(tm->template_key, r->config->template_key ? r->config->template_key : "direct");
    ConfigSpace *cs = template_space(tm, cuda, r->wl);
    CHECK_MSG(cs != NULL, "%s: %s", where, kiln_get_error());
    if (!cs) continue;
    CHECK_MSG(r->config->index >= 0 && r->config->index < space_size(cs), "%s: index %lld outside a space of %lld",
              where, (long long)r->config->index, (long long)space_size(cs));
    ConfigEntity *got = space_get(cs, r->config->index);
    CHECK_NN(got);
    if (!got) continue;
    /* index -> entity: exactly the record's entity list, in its order */
    CHECK_MSG(!strcmp(config_entity_json(got), config_entity_json(r->config)), "%s: index %lld is %s, the record says %s",
              where, (long long)r->config->index, config_entity_json(got), config_entity_json(r->config));
    /* entity -> index */
    CHECK_MSG(space_index_of(cs, r->config) == r->config->index, "%s: entity maps to %lld, not %lld", where,
              (long long)space_index_of(cs, r->config), (long long)r->config->index);
    CHECK_MSG(tm->check(cuda, r->config, r->wl) == 0, "%s: check refuses the record: %s", where, kiln_get_error());
    if (tm == &topi_cuda_conv2d_direct_template) direct++;
    if (tm == &topi_cuda_conv2d_winograd_template) wino++;
    if (tm == &topi_cuda_depthwise_conv2d_template) dw++;
    if (tm == &topi_cuda_dense_template) dense++;
  }
  CHECK_INT(direct, 120);
  CHECK_INT(wino, 36);
  CHECK_INT(dw, 30);
  CHECK_INT(dense, 15);
}

/* A Winograd record read from v0.1 and written as v0.2 is still one. */
static void test_template_key_kept(void) {
  AVec recs = {0};
  CHECK_OK(records_load(kfmt("%s/tests/data/tophub/vgg16_bs_1.log", test_root()), &recs));
  int n = 0;
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    if (!r->config->template_key || strcmp(r->config->template_key, "winograd")) continue;
    n++;
    const char *v2 = record_json(r);
    CHECK_CONTAINS(v2, "\"template_key\": \"winograd\"");
    TuneRecord *back = record_parse(v2);
    CHECK_NN(back);
    if (back) CHECK_STR(back->config->template_key, "winograd");
  }
  CHECK_INT(n, 8);
}

/* Every template's fallback at every seed workload is a point of its space
 * that its check accepts, for cuda and for opencl's 256 threads. */
static void test_fallbacks_in_space(void) {
  AVec recs = {0};
  load_seeds(&recs);
  const Target *ts[2] = {target_parse("cuda", NULL), target_parse("opencl", NULL)};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < recs.len; i++) {
      TuneRecord *r = recs.data[i];
      const Template *tm = template_find(r->wl->name, r->config->template_key, ts[k]);
      CHECK_NN(tm);
      if (!tm) continue;
      ConfigEntity *fb = template_fallback(tm, ts[k], r->wl);
      CHECK_NN(fb);
      if (!fb) continue;
      CHECK_MSG(fb->index >= 0, "%s:%d: fallback %s is not in the space", r->file, r->line, config_entity_json(fb));
      CHECK_MSG(tm->check(ts[k], fb, r->wl) == 0, "%s:%d: %s", r->file, r->line, kiln_get_error());
    }
}

/* A config with too many threads for the target is refused, naming the fix. */
static void test_thread_limit(void) {
  AVec recs = {0};
  CHECK_OK(records_load(kfmt("%s/tests/data/tophub/mobilenet_v2_bs_1.log", test_root()), &recs));
  const Target *ocl = target_parse("opencl", NULL);
  int refused = 0;
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    const Template *tm = template_find(r->wl->name, r->config->template_key, ocl);
    if (tm && tm->check(ocl, r->config, r->wl)) {
      refused++;
      CHECK_CONTAINS(kiln_get_error(), "-max_threads_per_block");
    }
  }
  CHECK(refused > 0);
}

/* The ptxas lines of a verbose NVRTC log: "N bytes spill stores" must be
 * 0 wherever it appears. */
static bool spills(const char *log) {
  for (const char *p = log; (p = strstr(p, "bytes spill stores")); p++) {
    const char *q = p;
    while (q > log && q[-1] == ' ') q--;
    while (q > log && q[-1] >= '0' && q[-1] <= '9') q--;
    if (atoi(q) != 0) return true;
  }
  return false;
}

static void test_seed_kernels_nvrtc(void) {
  if (!kiln_nvrtc_available()) {
    test_skip("NVRTC is not available on this machine");
    return;
  }
  AVec recs = {0};
  load_seeds(&recs);
  const Target *cuda = target_parse("cuda -arch=sm_90", NULL);
  int compiled = 0;
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    /* batch 1, and the large-batch dense template (batch 128) */
    if (r->wl->args[0].ints[0] != 1 && !(r->kind == TASK_DENSE && r->wl->args[0].ints[0] >= 32)) continue;
    const Template *tm = template_find(r->wl->name, r->config->template_key, cuda);
    CHECK_NN(tm);
    if (!tm) continue;
    const char *where = kfmt("%s:%d", r->file, r->line);
    Schedule *s;
    int nargs;
    Tensor **args;
    if (template_instantiate(tm, cuda, r->wl, r->config, &s, &nargs, &args)) {
      CHECK_MSG(0, "%s: %s", where, kiln_get_error());
      continue;
    }
    LowerOptions lo = {0};
    target_lower_options(cuda, &lo);
    LoweredFunc *f = kiln_lower(s, nargs, args, "layer", &lo);
    CHECK_MSG(f != NULL, "%s: %s", where, kiln_get_error());
    if (!f) continue;
    char *src = codegen_gpu(&f, 1, GPU_CUDA);
    CHECK_MSG(src != NULL, "%s: %s", where, kiln_get_error());
    char *ptx = NULL, *log = NULL;
    int rc = src ? kiln_nvrtc_compile(src, "sm_90", true, &ptx, &log) : -1;
    CHECK_MSG(rc == 0, "%s: %s", where, kiln_get_error());
    if (rc == 0) {
      compiled++;
      CHECK_MSG(!strstr(log ? log : "", "warning"), "%s: NVRTC warns:\n%s", where, log);
      CHECK_MSG(strstr(log ? log : "", "spill stores") != NULL, "%s: no ptxas report in the log:\n%s", where, log);
      CHECK_MSG(!spills(log ? log : ""), "%s: spills:\n%s", where, log);
    }
    free(ptx);
    free(log);
    free(src);
  }
  CHECK_INT(compiled, 72);
}

/* Kiln's shipped CUDA records (records/cuda.json: the seeds' TopHub logs)
 * apply to cuda: a seed workload takes its record ("shipped"), a workload
 * no record has takes the nearest shipped record, a user's log is the
 * reference before them; opencl has no shipped records. */
static void test_nearest_shipped(void) {
  const char *saved = getenv("KILN_RECORDS_PATH");
  char *keep = saved ? xstrdup(saved) : NULL;
  setenv("KILN_RECORDS_PATH", kfmt("%s/records", test_root()), 1);
  const Target *cuda = target_parse("cuda", NULL), *ocl = target_parse("opencl", NULL);
  DispatchContext *dc = dispatch_context_new();
  CHECK_CONTAINS(graph_dispatch_shipped_file(dc, cuda), "cuda.json");
  /* vgg16_bs_1.log:1, the first record of the file */
  Workload *seed = wl_cuda_conv2d("topi_nn_conv2d", (int64_t[]){1, 3, 224, 224}, (int64_t[]){64, 3, 3, 3},
                                  (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *c = NULL;
  const char *src = NULL;
  CHECK_OK(graph_dispatch_query(dc, cuda, seed, &c, &src));
  CHECK(c != NULL);
  CHECK_STR(src, "shipped");
  /* 1x1, 96 -> 192 at 7x7: no record of its own */
  Workload *wl = wl_cuda_conv2d("topi_nn_conv2d", (int64_t[]){1, 96, 7, 7}, (int64_t[]){192, 96, 1, 1},
                                (int[]){1, 1}, (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  const Template *tm = template_find(wl->name, "direct", cuda);
  CHECK_OK(graph_dispatch_query(dc, cuda, wl, &c, &src));
  CHECK(c == NULL);
  CHECK_OK(graph_dispatch_nearest(dc, cuda, tm, wl, &c, &src));
  CHECK(c != NULL);
  int line = 0;
  CHECK_MSG(src && sscanf(src, "nearest shipped cuda.json:%d", &line) == 1 && line >= 1 && line <= 201, "%s",
            src ? src : "(null)");
  if (c) CHECK_OK(tm->check(cuda, c, wl));
  /* opencl: no shipped file, so no nearest record without the user's */
  CHECK(graph_dispatch_shipped_file(dc, ocl) == NULL);
  CHECK_OK(graph_dispatch_nearest(dc, ocl, tm, wl, &c, &src));
  CHECK(c == NULL);
  /* the user's log comes first */
  CHECK_OK(graph_dispatch_add_records(dc, kfmt("%s/tests/data/tophub/mobilenet_v2_bs_1.log", test_root())));
  CHECK_OK(graph_dispatch_nearest(dc, cuda, tm, wl, &c, &src));
  CHECK(c != NULL && src && !strncmp(src, "nearest mobilenet_v2_bs_1.log:", 30));
  dispatch_context_free(dc);
  /* shipped records off: the template's own fallback */
  dc = dispatch_context_new();
  graph_dispatch_use_shipped(dc, false);
  CHECK_OK(graph_dispatch_nearest(dc, cuda, tm, wl, &c, &src));
  CHECK(c == NULL);
  dispatch_context_free(dc);
  if (keep) setenv("KILN_RECORDS_PATH", keep, 1);
  else unsetenv("KILN_RECORDS_PATH");
  free(keep);
}

/* Tuning on a GPU target measures on the device: on a machine without it
 * (no CUDA driver here) autotune_tune stops before measuring, with the
 * driver's error and what to do (test_autotune_gpu.c measures on OpenCL). */
static void test_tune_gpu_needs_device(void) {
  const Target *cuda = target_parse("cuda", NULL);
  int there = 0;
  kiln_device_exists((DLDevice){kDLCUDA, 0}, &there);
  if (there) return;
  Workload *wl = wl_dense("topi_nn_dense", 1, 10, 64, "float32", "float32");
  TuneSummary sum;
  CHECK(autotune_tune(&topi_cuda_dense_template, cuda, wl, NULL, &sum) != 0);
  CHECK_CONTAINS(kiln_get_error(), "tuning for 'cuda' measures every candidate on the device");
  CHECK_CONTAINS(kiln_get_error(), "--tuning-records");
  CHECK_INT(sum.measured, 0);
}

/* Whether each split knob's extent in tm's space at a divides its extent
 * at b (all equal when same is set). */
static bool extents_divide(const Target *t, const Template *tm, const Workload *a, const Workload *b, bool same) {
  ConfigSpace ca, cb;
  space_init(&ca);
  space_init(&cb);
  if (tm->define_space(t, &ca, a) || tm->define_space(t, &cb, b)) return false;
  for (int k = 0; k < ca.nknobs; k++) {
    if (ca.knobs[k].kind != KNOB_SPLIT) continue;
    const Knob *kb = space_knob(&cb, ca.knobs[k].name);
    if (!kb || kb->extent % ca.knobs[k].extent || (same && kb->extent != ca.knobs[k].extent)) return false;
  }
  return true;
}

/* TVM's nearest-record fallback over the seeds' log.  Its score gives a
 * knob the share of this workload's extent's divisors that divide the
 * record's extent: full marks for a multiple.  So a workload of the log
 * takes the first record (in the log's order) whose extents are all
 * multiples of its own, and when that record's extents equal its own,
 * mimicking its tiling gives back exactly its config.  A workload the log
 * lacks gets a valid config whose other knobs are the named record's and
 * whose inner split parts stay within the record's. */
static void test_nearest_record(void) {
  const char *log = kfmt("%s/tests/data/tophub/mobilenet_v2_bs_1.log", test_root());
  AVec recs = {0};
  CHECK_OK(records_load(log, &recs));
  DispatchContext *dc = dispatch_context_new();
  CHECK_OK(graph_dispatch_add_records(dc, log));
  const Target *t = target_parse("cuda", NULL);
  int checked = 0, exact = 0;
  for (int i = 0; i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    const Template *tm = template_find(r->wl->name, r->config->template_key, t);
    if (!tm) continue;
    TuneRecord *first = NULL;
    for (int j = 0; j < recs.len && !first; j++) {
      TuneRecord *q = recs.data[j];
      if (!strcmp(q->wl->name, r->wl->name) && template_find(q->wl->name, q->config->template_key, t) == tm &&
          extents_divide(t, tm, r->wl, q->wl, false))
        first = q;
    }
    ConfigEntity *c;
    const char *src;
    CHECK_OK(graph_dispatch_nearest(dc, t, tm, r->wl, &c, &src));
    CHECK_MSG(c != NULL, "%s:%d: no nearest record", r->file, r->line);
    if (!c || !first) continue;
    CHECK_STR(src, kfmt("nearest mobilenet_v2_bs_1.log:%d", first->line));
    checked++;
    if (!extents_divide(t, tm, r->wl, first->wl, true)) continue;
    exact++;
    for (int k = 0; k < first->config->n; k++) {
      const KnobEntity *a = &first->config->e[k], *b = config_get(c, a->name);
      CHECK_MSG(b && b->n == a->n, "%s:%d: knob %s", r->file, r->line, a->name);
      for (int p = a->kind == KNOB_SPLIT ? 1 : 0; b && p < a->n; p++) CHECK(a->ints[p] == b->ints[p]);
      if (b && a->kind == KNOB_OTHER) CHECK(a->val.i == b->val.i);
    }
  }
  CHECK(checked >= 25 && exact >= 10);
  /* a workload the log lacks: 1x1, 96 -> 192 at 7x7 */
  Workload *wl = wl_cuda_conv2d("topi_nn_conv2d", (int64_t[]){1, 96, 7, 7}, (int64_t[]){192, 96, 1, 1},
                                (int[]){1, 1}, (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  const Template *tm = template_find(wl->name, "direct", t);
  ConfigEntity *c;
  const char *src;
  CHECK_OK(graph_dispatch_nearest(dc, t, tm, wl, &c, &src));
  CHECK(c != NULL);
  if (c) {
    CHECK_OK(tm->check(t, c, wl));
    int line = 0;
    CHECK(sscanf(src, "nearest mobilenet_v2_bs_1.log:%d", &line) == 1);
    TuneRecord *ref = line >= 1 && line <= recs.len ? recs.data[line - 1] : NULL;
    CHECK(ref && !strcmp(ref->wl->name, "topi_nn_conv2d"));
    for (int k = 0; ref && k < ref->config->n; k++) {
      const KnobEntity *a = &ref->config->e[k], *b = config_get(c, a->name);
      CHECK(b != NULL);
      if (!b) continue;
      if (a->kind == KNOB_OTHER) CHECK(a->val.i == b->val.i);
      for (int p = 1; a->kind == KNOB_SPLIT && p < a->n; p++) CHECK(b->ints[p] <= a->ints[p]);
    }
  }
  dispatch_context_free(dc);
}

const TestCase cuda_template_tests[] = {
    {"nearest_record", test_nearest_record},
    {"nearest_shipped", test_nearest_shipped},
    {"tune_gpu_needs_device", test_tune_gpu_needs_device},
    {"seed_kernels_nvrtc", test_seed_kernels_nvrtc},
    {"seed_index_entity", test_seed_index_entity},
    {"template_key_kept", test_template_key_kept},
    {"fallbacks_in_space", test_fallbacks_in_space},
    {"thread_limit", test_thread_limit},
    {NULL, NULL},
};
