/*
 * api_template.c - tuning templates written in a binding's language
 * (AutoTVM's @autotvm.template in Python), as rows of the same template
 * table the C templates are in (template_register).
 *
 * A binding registers a template with two functions:
 *   space(args_json) -> knobs_json: the knobs the template declares for a
 *       workload (the binding runs the template once, collecting its
 *       cfg.define_* calls):
 *       [{"name": "tile_y", "kind": "ot", "candidates": [1, 2, 4]},
 *        {"name": "tile_x", "kind": "sp", "extent": 64, "num_outputs": 2,
 *         "policy": "factors", "max_factor": 0},
 *        {"name": "order", "kind": "re", "naxes": 3, "policy": "all",
 *         "candidates": [[2, 0, 1], ...]},
 *        {"name": "ann", "kind": "an", "naxes": 2, "policy": "try_unroll",
 *         "candidates": [["none", "unroll"], ...]}]
 *   instantiate(args_json, entity_json) -> Array [schedule, tensors...]:
 *       the template's schedule for one config, built through the same
 *       schedule API the C templates use, and its arguments (inputs, then
 *       the output).
 * The row's fallback config is the space's first one (every knob's first
 * choice, TVM's fallback for a user template), and it has no compute of
 * its own: its candidates are checked against the unscheduled lowering of
 * the output tensor it returns.
 *
 * Measuring: a worker process cannot run the binding's code, so for these
 * templates the tuning process instantiates and lowers each candidate and
 * writes its C (MeasureOptions.in_process); the workers compile, check and
 * time it exactly as they do a C template's candidate.
 *
 * autotvm.space_info / space_entity give a binding the same enumeration
 * the tuners use (a config index -> knob choices), and autotvm.query_best
 * the dispatch context's best record for a workload (ApplyHistoryBest).
 */
#include "api.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../autotune/autotune.h"
#include "../graph/backend/build.h"
#include "../graph/backend/strategy.h"

#define MAX_FOREIGN 16

typedef struct Foreign {
  Template tm;
  char *name;
  KilnFunction *space, *inst;
} Foreign;

static Foreign foreign[MAX_FOREIGN];
static int nforeign;
static pthread_mutex_t foreign_lock = PTHREAD_MUTEX_INITIALIZER;

static Foreign *find_foreign(const char *name) {
  for (int i = 0; i < nforeign; i++)
    if (!strcmp(foreign[i].name, name)) return &foreign[i];
  return NULL;
}

bool api_template_in_process(const Template *tm) {
  for (int i = 0; i < nforeign; i++)
    if (tm == &foreign[i].tm) return true;
  return false;
}

/* ---- knobs from JSON ---- */

static int space_from_json(ConfigSpace *cs, const char *text) {
  cJSON *j = cJSON_Parse(text);
  if (!cJSON_IsArray(j)) {
    cJSON_Delete(j);
    return kiln_set_error("the knobs must be a JSON array, got %.80s", text);
  }
  int rc = 0;
  for (cJSON *k = j->child; k && !rc; k = k->next) {
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(k, "name"), *jk = cJSON_GetObjectItemCaseSensitive(k, "kind");
    const cJSON *cand = cJSON_GetObjectItemCaseSensitive(k, "candidates"),
                *pol = cJSON_GetObjectItemCaseSensitive(k, "policy");
    if (!cJSON_IsString(jn) || !cJSON_IsString(jk)) {
      rc = kiln_set_error("a knob needs a \"name\" and a \"kind\"");
      break;
    }
    const char *name = kstrdup(jn->valuestring), *kind = jk->valuestring;
    const char *policy = cJSON_IsString(pol) ? kstrdup(pol->valuestring) : NULL;
    int ncand = cJSON_GetArraySize(cand);
    if (!strcmp(kind, "ot")) {
      OptVal *v = KNEWN(OptVal, ncand + 1);
      int i = 0;
      for (const cJSON *x = cand ? cand->child : NULL; x; x = x->next, i++) {
        if (cJSON_IsBool(x)) v[i] = opt_bool(cJSON_IsTrue(x));
        else if (cJSON_IsNumber(x) && x->valuedouble == (double)(int64_t)x->valuedouble) v[i] = opt_int((int64_t)x->valuedouble);
        else if (cJSON_IsString(x)) v[i] = opt_str(kstrdup(x->valuestring));
        else rc = kiln_set_error("knob '%s': candidates must be ints, bools or strings", name);
      }
      if (!rc) rc = space_define_knob(cs, name, ncand, v);
    } else if (!strcmp(kind, "sp")) {
      SplitOpts so;
      memset(&so, 0, sizeof so);
      so.policy = policy;
      const cJSON *e = cJSON_GetObjectItemCaseSensitive(k, "extent"), *no = cJSON_GetObjectItemCaseSensitive(k, "num_outputs"),
                  *mf = cJSON_GetObjectItemCaseSensitive(k, "max_factor");
      so.nparts = cJSON_IsNumber(no) ? (int)no->valuedouble : 2;
      so.max_factor = cJSON_IsNumber(mf) ? (int64_t)mf->valuedouble : 0;
      if (!cJSON_IsNumber(e)) rc = kiln_set_error("knob '%s': a split needs the axis extent", name);
      else rc = space_define_split(cs, name, (int64_t)e->valuedouble, &so);
    } else if (!strcmp(kind, "re") || !strcmp(kind, "an")) {
      const cJSON *na = cJSON_GetObjectItemCaseSensitive(k, "naxes");
      int naxes = cJSON_IsNumber(na) ? (int)na->valuedouble : 0;
      if (!strcmp(kind, "re")) {
        int *perm = KNEWN(int, ncand * naxes + 1), i = 0;
        for (const cJSON *row = cand ? cand->child : NULL; row; row = row->next)
          for (const cJSON *x = row->child; x; x = x->next) perm[i++] = (int)x->valuedouble;
        rc = space_define_reorder(cs, name, naxes, policy, ncand, perm);
      } else {
        const char **anns = KNEWN(const char *, ncand * naxes + 1);
        int i = 0;
        for (const cJSON *row = cand ? cand->child : NULL; row; row = row->next)
          for (const cJSON *x = row->child; x; x = x->next) anns[i++] = cJSON_IsString(x) ? kstrdup(x->valuestring) : "none";
        rc = space_define_annotate(cs, name, naxes, policy, ncand, anns);
      }
    } else {
      rc = kiln_set_error("knob '%s': unknown kind '%s' (ot, sp, re, an)", name, kind);
    }
  }
  cJSON_Delete(j);
  return rc;
}

/* ---- the row's functions: call the binding ---- */

static int call_binding(KilnFunction *f, int n, KilnValue *args, int *codes, KilnValue *ret, int *ret_code) {
  return kiln_func_call(f, args, codes, n, ret, ret_code) ? -1 : 0;
}

static int foreign_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t; /* a binding's template is for the host */
  pthread_mutex_lock(&foreign_lock);
  Foreign *fr = find_foreign(wl->name);
  pthread_mutex_unlock(&foreign_lock);
  if (!fr) return kiln_set_error("template '%s' is no longer registered", wl->name);
  KilnValue a = {.v_str = wl_args_json(wl)}, r;
  int code = KILN_STR, rcode;
  if (call_binding(fr->space, 1, &a, &code, &r, &rcode))
    return kiln_set_error("template '%s' (space): %s", wl->name, kiln_last_error());
  if (rcode != KILN_STR) return kiln_set_error("template '%s': the space function must return the knobs' JSON", wl->name);
  return space_from_json(cs, r.v_str);
}

static int foreign_instantiate(const Target *t, const Workload *wl, const ConfigEntity *cfg, Schedule **s, int *nargs,
                               Tensor ***targs) {
  (void)t;
  pthread_mutex_lock(&foreign_lock);
  Foreign *fr = find_foreign(wl->name);
  pthread_mutex_unlock(&foreign_lock);
  if (!fr) return kiln_set_error("template '%s' is no longer registered", wl->name);
  KilnValue a[2] = {{.v_str = wl_args_json(wl)}, {.v_str = config_entity_json(cfg)}}, r;
  int codes[2] = {KILN_STR, KILN_STR}, rcode;
  if (call_binding(fr->inst, 2, a, codes, &r, &rcode))
    return kiln_set_error("template '%s': %s", wl->name, kiln_last_error());
  KArray *arr = rcode == KILN_OBJECT ? r.v_handle : NULL;
  if (!arr || arr->okind != KOBJ_ARRAY || arr->n < 2 || !arr->items[0] || *(KObjKind *)arr->items[0] != KOBJ_SCHEDULE)
    return kiln_set_error("template '%s' must return (schedule, [tensors...])", wl->name);
  *s = arr->items[0];
  *nargs = arr->n - 1;
  *targs = KNEWN(Tensor *, arr->n);
  for (int i = 1; i < arr->n; i++) {
    if (!arr->items[i] || *(KObjKind *)arr->items[i] != KOBJ_TENSOR)
      return kiln_set_error("template '%s': argument %d it returned is not a tensor", wl->name, i - 1);
    (*targs)[i - 1] = arr->items[i];
  }
  return 0;
}

static int foreign_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  ConfigSpace cs;
  space_init(&cs);
  if (foreign_space(t, &cs, wl)) return -1;
  ConfigEntity *first = space_get(&cs, 0);
  if (!first) return -1;
  for (int i = 0; i < first->n; i++) config_set(cfg, &first->e[i]);
  return 0;
}

/* register_template(name, space_fn, instantiate_fn) */
API_FUNC(at_register_template) {
  API_CALL;
  const char *name;
  if (api_argc(&c, 3, 3) || !(name = api_str(&c, 0))) return -1;
  for (int i = 1; i < 3; i++)
    if (c.codes[i] != KILN_FUNC || !c.args[i].v_handle) return api_error(&c, "argument %d must be a function", i);
  pthread_mutex_lock(&foreign_lock);
  Foreign *fr = find_foreign(name);
  int rc = 0;
  if (!fr && template_lookup(name)) rc = api_error(&c, "a built-in template is named '%s'", name);
  kiln_clear_error();
  if (!rc && !fr) {
    if (nforeign == MAX_FOREIGN) {
      rc = api_error(&c, "at most %d templates can be registered", MAX_FOREIGN);
    } else {
      fr = &foreign[nforeign];
      memset(fr, 0, sizeof *fr);
      fr->name = strdup(name);
      fr->tm.name = fr->name;
      fr->tm.anchor_tag = "";
      fr->tm.key = "cpu";
      fr->tm.define_space = foreign_space;
      fr->tm.fallback = foreign_fallback;
      fr->tm.instantiate = foreign_instantiate;
      if (template_register(&fr->tm)) rc = api_fail(&c);
      else nforeign++;
    }
  }
  if (!rc) {
    /* a template registered again (a re-imported module) takes the new functions */
    KilnFunction *old[2] = {fr->space, fr->inst};
    fr->space = c.args[1].v_handle;
    fr->inst = c.args[2].v_handle;
    kiln_func_retain(fr->space);
    kiln_func_retain(fr->inst);
    for (int i = 0; i < 2; i++)
      if (old[i]) kiln_func_free(old[i]);
  }
  pthread_mutex_unlock(&foreign_lock);
  return rc ? -1 : api_ret_null(ret, ret_code);
}

static const char *kind_name(KnobKind k) {
  switch (k) {
  case KNOB_SPLIT: return "sp";
  case KNOB_REORDER: return "re";
  case KNOB_ANNOTATE: return "an";
  case KNOB_OTHER: return "ot";
  }
  return "?";
}

/* space_info(knobs_json) -> {"size": n, "knobs": [{"name", "kind", "len", "desc"}]} */
API_FUNC(at_space_info) {
  API_CALL;
  const char *text;
  if (api_argc(&c, 1, 1) || !(text = api_str(&c, 0))) return -1;
  ConfigSpace cs;
  space_init(&cs);
  if (space_from_json(&cs, text)) return api_fail(&c);
  cJSON *o = cJSON_CreateObject(), *ks = cJSON_CreateArray();
  cJSON_AddNumberToObject(o, "size", (double)space_size(&cs));
  for (int i = 0; i < cs.nknobs; i++) {
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "name", cs.knobs[i].name);
    cJSON_AddStringToObject(k, "kind", kind_name(cs.knobs[i].kind));
    cJSON_AddNumberToObject(k, "len", (double)cs.knobs[i].nchoices);
    cJSON_AddItemToArray(ks, k);
  }
  cJSON_AddItemToObject(o, "knobs", ks);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return api_ret_text(&c, ret, ret_code, s);
}

/* space_entity(knobs_json, index) -> the config's entity JSON */
API_FUNC(at_space_entity) {
  API_CALL;
  const char *text;
  int64_t index;
  if (api_argc(&c, 2, 2) || !(text = api_str(&c, 0)) || api_int(&c, 1, &index)) return -1;
  ConfigSpace cs;
  space_init(&cs);
  if (space_from_json(&cs, text)) return api_fail(&c);
  if (index < 0 || index >= space_size(&cs))
    return api_error(&c, "config index %lld is outside the space (%lld configs)", (long long)index,
                     (long long)space_size(&cs));
  ConfigEntity *e = space_get(&cs, index);
  if (!e) return api_fail(&c);
  return api_ret_text(&c, ret, ret_code, strdup(config_entity_json(e)));
}

/* query_best(task_name, args_json) -> the best record's config JSON
 * ({"index", "code_hash", "entity"}) in the dispatch context, or "" */
API_FUNC(at_query_best) {
  API_CALL;
  const char *name, *args_json;
  if (api_argc(&c, 2, 2) || !(name = api_str(&c, 0)) || !(args_json = api_str(&c, 1))) return -1;
  Workload *wl = wl_from_json(name, args_json);
  if (!wl) return api_fail(&c);
  ConfigEntity *cfg = NULL;
  const char *source = NULL;
  if (graph_dispatch_query(api_dispatch(), target_host(), wl, &cfg, &source)) return api_fail(&c);
  return api_ret_text(&c, ret, ret_code, strdup(cfg ? config_json(cfg) : ""));
}

const ApiEntry api_template_funcs[] = {
    {"autotvm.register_template", at_register_template, "name, space, instantiate"},
    {"autotvm.space_info", at_space_info, "knobs_json"},
    {"autotvm.space_entity", at_space_entity, "knobs_json, index"},
    {"autotvm.query_best", at_query_best, "task_name, args_json"},
    {NULL, NULL, NULL},
};
