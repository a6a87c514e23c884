/*
 * dispatch.c - which config a task gets at compile time (TVM's
 * ApplyHistoryBest, with TopHub behind it): the fastest error-free record
 * of the workload among the record files the user gave (--tuning-records),
 * else among the records Kiln ships for this machine's ISA, else the
 * template's fallback with one warning per workload.
 *
 * A record applies when its task name and arguments are the workload's
 * (the workload key), its target matches the target being compiled for
 * (target_matches_record: "llvm"/"c"/"cpu" of the same ISA class), it
 * measured without error, and the template accepts its config (tm->check);
 * a config measured more than once counts with its newest record (kiln
 * tune re-measures its best candidates at the end); the lowest mean cost
 * wins (a convolution whose data arrives in another block may take the
 * best record with that input block instead, when it is slower by less
 * than the transform it saves would cost: graph_dispatch_query_block).  The source it came from goes to the
 * profile's Task column: "records.json:12" (file name and line),
 * "shipped", or "fallback".
 *
 * The shipped records (our TopHub) are one file per ISA class,
 * records/<isa>.json (x86_avx512.json, x86_avx2.json, ...: the target's
 * target_records_stem), and one per GPU kind (cuda.json: TopHub's CUDA
 * logs, the seeds' tests/data/tophub), found in
 * $KILN_RECORDS_PATH (folders or files, ':'-separated; set but empty turns
 * them off), else beside the Kiln library or the running program:
 * <dir>/../records, <dir>/../share/kiln/records.  They are read on first
 * use.
 *
 * A DispatchContext holds the records, the settings (shipped records on or
 * off, quiet) and the warnings given; it is passed explicitly to whatever
 * chooses configs (GraphOptions.dispatch for alter_layout,
 * GraphBuildOptions.dispatch for the strategies, graph_extract_tasks).  A
 * command makes one (kiln compile with its --tuning-records); the C API
 * keeps the one its apply_history_best contexts fill (TVM's
 * DispatchContext.current, src/api/api_autotvm.c).  The records live in the
 * context's arena until graph_dispatch_reset or dispatch_context_free.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "strategy.h"

struct DispatchContext {
  KArena *arena;     /* records, keys, labels */
  PtrMap user;       /* workload key -> AVec * of TuneRecord * */
  PtrMap shipped;
  PtrMap warned;     /* workload key -> (void *)1 */
  bool no_shipped, quiet;
  const char *shipped_stem; /* the class whose shipped file is loaded */
  const char *shipped_file;
};

static void init(DispatchContext *dc) {
  if (dc->arena) return;
  dc->arena = kiln_arena_new();
  pm_init_str(&dc->user);
  pm_init_str(&dc->shipped);
  pm_init_str(&dc->warned);
}

DispatchContext *dispatch_context_new(void) {
  DispatchContext *dc = xmalloc(sizeof *dc);
  memset(dc, 0, sizeof *dc);
  init(dc);
  return dc;
}

void graph_dispatch_reset(DispatchContext *dc) {
  if (!dc->arena) return;
  pm_free(&dc->user);
  pm_free(&dc->shipped);
  pm_free(&dc->warned);
  kiln_arena_free(dc->arena);
  memset(dc, 0, sizeof *dc);
  init(dc);
}

void dispatch_context_free(DispatchContext *dc) {
  if (!dc) return;
  pm_free(&dc->user);
  pm_free(&dc->shipped);
  pm_free(&dc->warned);
  kiln_arena_free(dc->arena);
  free(dc);
}

void graph_dispatch_use_shipped(DispatchContext *dc, bool on) { dc->no_shipped = !on; }

bool graph_dispatch_set_quiet(DispatchContext *dc, bool quiet) {
  bool was = dc->quiet;
  dc->quiet = quiet;
  return was;
}

/* Keep the usable records of a file in a map (in the context's arena). */
static int load_into(DispatchContext *dc, PtrMap *map, const char *path) {
  kiln_arena_push(dc->arena);
  AVec recs = {0};
  int rc = records_load(path, &recs);
  for (int i = 0; !rc && i < recs.len; i++) {
    TuneRecord *r = recs.data[i];
    if (r->error_no != MEASURE_NO_ERROR || isinf(record_cost(r))) continue;
    AVec *list = pm_get(map, r->wl->key);
    if (!list) {
      list = KNEW(AVec);
      pm_put(map, r->wl->key, list);
    }
    av_push(list, r);
  }
  kiln_arena_pop();
  return rc;
}

int graph_dispatch_add_records(DispatchContext *dc, const char *path) {
  if (access(path, R_OK)) return kiln_set_error("tuning records '%s': cannot read the file", path);
  return load_into(dc, &dc->user, path);
}

static bool readable(const char *p) { return access(p, R_OK) == 0; }

static const char *find_shipped(const Target *t) {
  const char *file = kfmt("%s.json", target_records_stem(t));
  const char *env = getenv("KILN_RECORDS_PATH");
  if (env) {
    char *copy = kstrdup(env);
    for (char *save = NULL, *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
      const char *dir_file = kfmt("%s/%s", p, file);
      if (readable(dir_file)) return dir_file;
      size_t n = strlen(p);
      if (n > 5 && !strcmp(p + n - 5, ".json") && readable(p)) return kstrdup(p);
    }
    return NULL;
  }
  const char *bases[2] = {NULL, NULL};
  Dl_info info;
  if (dladdr((void *)graph_dispatch_query, &info) && info.dli_fname) bases[0] = kstrdup(info.dli_fname);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    bases[1] = kstrdup(exe);
  }
  for (int i = 0; i < 2; i++) {
    if (!bases[i]) continue;
    char *d = dirname(kstrdup(bases[i]));
    const char *c1 = kfmt("%s/../records/%s", d, file), *c2 = kfmt("%s/../share/kiln/records/%s", d, file);
    if (readable(c1)) return c1;
    if (readable(c2)) return c2;
  }
  return NULL;
}

const char *graph_dispatch_shipped_file(DispatchContext *dc, const Target *t) {
  if (dc->no_shipped) return NULL;
  const char *stem = target_records_stem(t);
  if (!dc->shipped_stem || strcmp(dc->shipped_stem, stem)) {
    pm_free(&dc->shipped);
    pm_init_str(&dc->shipped);
    dc->shipped_file = NULL;
    kiln_arena_push(dc->arena);
    dc->shipped_stem = kstrdup(stem);
    const char *f = find_shipped(t);
    kiln_arena_pop();
    if (f) {
      if (load_into(dc, &dc->shipped, f)) {
        /* a broken shipped file must not break compiles: say so once */
        fprintf(stderr, "kiln: warning: ignoring the shipped tuning records: %s\n", kiln_get_error());
        kiln_clear_error();
      } else {
        dc->shipped_file = f;
      }
    }
  }
  return dc->shipped_file;
}

static int by_cost(const void *a, const void *b) {
  double x = record_cost(*(TuneRecord *const *)a), y = record_cost(*(TuneRecord *const *)b);
  return x < y ? -1 : x > y;
}

/* The best record of a list whose target matches t and whose config the
 * template accepts; a config measured more than once counts with its
 * newest record. */
static TuneRecord *best_of(const Target *t, AVec *list, const Template *tm, Workload *wl) {
  if (!list || !list->len) return NULL;
  AVec latest = {0};
  for (int i = 0; i < list->len; i++)
    if (target_matches_record(t, ((TuneRecord *)list->data[i])->target)) av_push(&latest, list->data[i]);
  records_keep_latest(&latest);
  qsort(latest.data, (size_t)latest.len, sizeof(TuneRecord *), by_cost);
  TuneRecord *best = NULL;
  for (int i = 0; i < latest.len && !best; i++) {
    TuneRecord *r = latest.data[i];
    /* a record of another template of the task ("winograd" of
     * topi_nn_conv2d) is checked by that template */
    const Template *rt = tm && r->config->template_key ? template_find(wl->name, r->config->template_key, t) : tm;
    if (!rt) continue;
    if (!rt->check || rt->check(t, r->config, wl) == 0) best = r;
  }
  kiln_clear_error();
  return best;
}

/* The record a compile uses for a workload: the user's best, else the
 * shipped best (*user says which), or NULL. */
static TuneRecord *dispatch_best(DispatchContext *dc, const Target *t, Workload *wl, bool *user) {
  *user = false;
  if (!wl->key) wl_finish(wl);
  const Template *tm = template_lookup(wl->name);
  kiln_clear_error();
  TuneRecord *r = best_of(t, pm_get(&dc->user, wl->key), tm, wl);
  if (r) {
    *user = true;
    return r;
  }
  return graph_dispatch_shipped_file(dc, t) ? best_of(t, pm_get(&dc->shipped, wl->key), tm, wl) : NULL;
}

int graph_dispatch_query(DispatchContext *dc, const Target *t, Workload *wl, ConfigEntity **cfg, const char **source) {
  bool user;
  TuneRecord *r = dispatch_best(dc, t, wl, &user);
  *cfg = r ? r->config : NULL;
  *source = !r ? NULL : user ? kfmt("%s:%d", basename(kstrdup(r->file)), r->line) : "shipped";
  return 0;
}

/* ---- the nearest record (TVM's fallback_with_reference_log) ----
 * For a GPU workload without a record of its own (graph_gpu_strategy asks
 * after graph_dispatch_query): the reference log is the user's records,
 * else the shipped ones. */

/* The divisors of n, ascending (TVM's get_factors); their count. */
static int divisors(int64_t n, int64_t *out, int cap) {
  int k = 0;
  for (int64_t i = 1; i * i <= n && k < cap; i++)
    if (n % i == 0) {
      out[k++] = i;
      if (i != n / i && k < cap) out[k++] = n / i;
    }
  for (int i = 1; i < k; i++) /* insertion sort */
    for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
      int64_t x = out[j];
      out[j] = out[j - 1];
      out[j - 1] = x;
    }
  return k;
}

/* |{divisors of a} ∩ {divisors of b}| / |divisors of a| */
static double shared_factors(int64_t a, int64_t b) {
  int64_t fa[512], fb[512];
  int na = divisors(a, fa, 512), nb = divisors(b, fb, 512), common = 0;
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++)
      if (fa[i] == fb[j]) common++;
  return na ? (double)common / na : 0;
}

static int by_place(const void *a, const void *b) {
  const TuneRecord *x = *(TuneRecord *const *)a, *y = *(TuneRecord *const *)b;
  int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
  return c ? c : (x->line > y->line) - (x->line < y->line);
}

static bool same_key(const char *a, const char *b) { return !strcmp(a ? a : "direct", b ? b : "direct"); }

/* The nearest of one record set's references to wl: each other
 * workload's best record of tm's template, in the log's order, scored by
 * the split knobs' extents - the share of this workload's divisors each
 * reference's extent has, summed over knobs (TVM compares as it sums,
 * knob by knob); NULL when none scores. */
static TuneRecord *nearest_in(PtrMap *set, const Target *t, const Template *tm, Workload *wl, const ConfigSpace *cs) {
  AVec refs = {0};
  for (int m = 0; m < set->cap; m++) {
    AVec *list = set->keys[m] ? set->vals[m] : NULL;
    if (!list || !list->len) continue;
    AVec mine = {0};
    for (int i = 0; i < list->len; i++) {
      TuneRecord *r = list->data[i];
      if (r->wl && !strcmp(r->wl->name, wl->name) && same_key(r->config->template_key, tm->template_key))
        av_push(&mine, r);
    }
    TuneRecord *b = mine.len ? best_of(t, &mine, tm, ((TuneRecord *)mine.data[0])->wl) : NULL;
    if (b) av_push(&refs, b);
  }
  if (refs.len > 1) qsort(refs.data, (size_t)refs.len, sizeof(TuneRecord *), by_place); /* the log's order */
  TuneRecord *best = NULL;
  double best_score = 0;
  for (int i = 0; i < refs.len; i++) {
    TuneRecord *r = refs.data[i];
    ConfigSpace rs;
    space_init(&rs);
    if (tm->define_space(t, &rs, r->wl)) {
      kiln_clear_error();
      continue;
    }
    double score = 0;
    for (int k = 0; k < cs->nknobs; k++) {
      if (cs->knobs[k].kind != KNOB_SPLIT) continue;
      const Knob *rk = space_knob(&rs, cs->knobs[k].name);
      if (!rk) continue;
      score += shared_factors(cs->knobs[k].extent, rk->extent);
      if (score > best_score) best_score = score, best = r;
    }
  }
  return best;
}

int graph_dispatch_nearest(DispatchContext *dc, const Target *t, const Template *tm, Workload *wl, ConfigEntity **cfg,
                           const char **source) {
  *cfg = NULL;
  *source = NULL;
  if (!tm || !tm->define_space) return 0;
  ConfigSpace cs;
  space_init(&cs);
  if (tm->define_space(t, &cs, wl)) {
    kiln_clear_error();
    return 0;
  }
  /* the reference log: the user's records, else the shipped ones (TVM
   * falls back to TopHub's log; a user's log, being for this model or
   * machine, comes first) */
  TuneRecord *best = nearest_in(&dc->user, t, tm, wl, &cs);
  bool shipped = false;
  if (!best && graph_dispatch_shipped_file(dc, t)) {
    best = nearest_in(&dc->shipped, t, tm, wl, &cs);
    shipped = best != NULL;
  }
  if (!best) return 0;
  /* mimic its tiling: each split's inner parts as upper bounds (TVM's
   * fallback_split), outermost part the remainder; other knobs copied */
  ConfigEntity *c = config_new();
  c->template_key = tm->template_key;
  c->is_fallback = true;
  for (int k = 0; k < cs.nknobs; k++) {
    const Knob *kn = &cs.knobs[k];
    const KnobEntity *re = config_get(best->config, kn->name);
    if (!re) {
      kiln_clear_error();
      return 0;
    }
    if (kn->kind != KNOB_SPLIT) {
      config_set(c, re);
      continue;
    }
    int n = re->n;
    int64_t *sz = KNEWN(int64_t, n > 0 ? n : 1), now = kn->extent, f[512];
    for (int p = n - 1; p >= 0; p--) {
      int nf = divisors(now, f, 512), pick = nf - 1;
      int64_t bound = p == 0 ? INT64_MAX : re->ints[p];
      for (int j = 0; j < nf; j++)
        if (f[j] > bound) {
          pick = j - 1;
          break;
        }
      if (pick < 0) return 0;
      sz[p] = f[pick];
      now /= f[pick];
    }
    config_set_split(c, kn->name, n, sz);
  }
  if (tm->check && tm->check(t, c, wl)) { /* e.g. more threads than the target allows */
    kiln_clear_error();
    return 0;
  }
  c->index = space_index_of(&cs, c);
  kiln_clear_error();
  *cfg = c;
  *source = kfmt("nearest %s%s:%d", shipped ? "shipped " : "", basename(kstrdup(best->file)), best->line);
  return 0;
}

double graph_dispatch_best_cost(DispatchContext *dc, const Target *t, Workload *wl, bool *user) {
  TuneRecord *r = dispatch_best(dc, t, wl, user);
  return r ? record_cost(r) : INFINITY;
}

/* What a layout_transform between channel blocks costs per byte of the
 * tensor: about 2.5 GB/s here (small blocks read and write with strides;
 * ResNet-18's measured 2.6-4 GB/s). */
#define TRANSFORM_S_PER_BYTE (1 / 2.5e9)

/* The bytes of the workload's data tensor (its first argument). */
static double data_bytes(const Workload *wl) {
  if (wl->nargs < 1 || wl->args[0].kind != WARG_TENSOR) return 0;
  double n = 4;
  for (int i = 0; i < wl->args[0].n; i++) n *= (double)wl->args[0].ints[i];
  return n;
}

int graph_dispatch_query_block(DispatchContext *dc, const Target *t, Workload *wl, int64_t block, ConfigEntity **cfg,
                               const char **source) {
  *cfg = NULL;
  *source = NULL;
  if (!wl->key) wl_finish(wl);
  const Template *tm = template_lookup(wl->name);
  kiln_clear_error();
  AVec *list = pm_get(&dc->user, wl->key);
  TuneRecord *best = best_of(t, list, tm, wl);
  bool shipped = false;
  if (!best && graph_dispatch_shipped_file(dc, t)) {
    list = pm_get(&dc->shipped, wl->key);
    best = best_of(t, list, tm, wl);
    shipped = true;
  }
  if (!best) return 0;
  AVec same = {0};
  for (int i = 0; i < list->len; i++) {
    TuneRecord *r = list->data[i];
    if (cfg_split_inner(r->config, "tile_ic") == block) av_push(&same, r);
  }
  kiln_clear_error();
  TuneRecord *b = best_of(t, &same, tm, wl);
  if (!b || record_cost(b) > record_cost(best) + data_bytes(wl) * TRANSFORM_S_PER_BYTE) return 0;
  *cfg = b->config;
  *source = shipped ? "shipped" : kfmt("%s:%d", basename(kstrdup(b->file)), b->line);
  return 0;
}

void graph_dispatch_note_fallback(DispatchContext *dc, const Target *t, Workload *wl) {
  if (dc->quiet || pm_get(&dc->warned, wl->key)) return;
  kiln_arena_push(dc->arena);
  pm_put(&dc->warned, kstrdup(wl->key), (void *)1);
  kiln_arena_pop();
  fprintf(stderr,
          "kiln: warning: no tuning record for %s %s (target %s); using the fallback config, which may be slow "
          "(kiln tune finds a better one)\n",
          wl->name, wl_describe(wl), t->str);
}
