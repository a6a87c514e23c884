/*
 * api_target.c - target.*: the target table (src/target) for bindings.
 *
 * A Target crosses as a KILN_OBJECT handle (tag KOBJ_TARGET), allocated in
 * the calling thread's current arena like the IR.  Every function that
 * takes a target (driver.build, graph.build, autotvm.extract_tasks)
 * takes either such a handle or a target string, parsed by api_target.
 */
#include "api.h"

#include <string.h>

const Target *api_target(const ApiCall *c, int i) {
  if (i < c->n && c->codes[i] == KILN_OBJECT) return api_obj(c, i, KOBJ_TARGET);
  const char *s = api_str(c, i);
  if (!s) return NULL;
  const Target *t = target_parse(s, NULL);
  if (!t) api_fail(c);
  return t;
}

/* create(target, host?) -> Target */
API_FUNC(tgt_create) {
  API_CALL;
  const char *s, *host;
  if (api_argc(&c, 1, 2) || !(s = api_str(&c, 0)) || api_opt_str(&c, 1, &host)) return -1;
  const Target *t = target_parse(s, host);
  if (!t) return api_fail(&c);
  return api_ret_obj(&c, ret, ret_code, (void *)t);
}

static const Target *target0(const ApiCall *c) {
  if (api_argc(c, 1, 1)) return NULL;
  return api_obj(c, 0, KOBJ_TARGET);
}

API_FUNC(tgt_str) {
  API_CALL;
  const Target *t = target0(&c);
  return t ? api_ret_str(ret, ret_code, t->str) : -1;
}

API_FUNC(tgt_kind) {
  API_CALL;
  const Target *t = target0(&c);
  return t ? api_ret_str(ret, ret_code, t->kind->name) : -1;
}

/* Keys(target) -> "cpu" (comma-separated) */
API_FUNC(tgt_keys) {
  API_CALL;
  const Target *t = target0(&c);
  if (!t) return -1;
  StrBuf sb = {0};
  for (int i = 0; i < t->nkeys; i++) sb_printf(&sb, "%s%s", i ? "," : "", t->keys[i]);
  const char *s = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return api_ret_str(ret, ret_code, s);
}

/* Attr(target, name) -> the attribute as written, or null */
API_FUNC(tgt_attr) {
  API_CALL;
  const Target *t;
  const char *name;
  if (api_argc(&c, 2, 2) || !(t = api_obj(&c, 0, KOBJ_TARGET)) || !(name = api_str(&c, 1))) return -1;
  if (name[0] == '-') name++;
  for (int a = 0; a < TA_COUNT; a++)
    if (!strcmp(name, target_attr_name((TargetAttr)a)))
      return t->attr[a] ? api_ret_str(ret, ret_code, t->attr[a]) : api_ret_null(ret, ret_code);
  return api_error(&c, "no target attribute '%s'", name);
}

#define INT_GETTER(fn, field)                                                  \
  API_FUNC(fn) {                                                               \
    API_CALL;                                                                  \
    const Target *t = target0(&c);                                             \
    return t ? api_ret_int(ret, ret_code, t->field) : -1;                      \
  }
INT_GETTER(tgt_vector_lanes, vector_lanes)
INT_GETTER(tgt_device_type, kind->device_type)
INT_GETTER(tgt_max_threads, max_threads_per_block)
INT_GETTER(tgt_max_shared, max_shared_memory_per_block)
INT_GETTER(tgt_warp, thread_warp_size)

API_FUNC(tgt_host) {
  API_CALL;
  const Target *t = target0(&c);
  return t ? api_ret_obj(&c, ret, ret_code, (void *)t->host) : -1;
}

/* Kinds() -> "llvm, cpu, c": every name a target string may start with */
API_FUNC(tgt_kinds) {
  API_CALL;
  if (api_argc(&c, 0, 0)) return -1;
  return api_ret_str(ret, ret_code, target_kind_names());
}

const ApiEntry api_target_funcs[] = {
    {"target.create", tgt_create, "target, host?"},
    {"target.Str", tgt_str, "target"},
    {"target.Kind", tgt_kind, "target"},
    {"target.Keys", tgt_keys, "target"},
    {"target.Attr", tgt_attr, "target, name"},
    {"target.VectorLanes", tgt_vector_lanes, "target"},
    {"target.DeviceType", tgt_device_type, "target"},
    {"target.Host", tgt_host, "target"},
    {"target.MaxThreadsPerBlock", tgt_max_threads, "target"},
    {"target.MaxSharedMemoryPerBlock", tgt_max_shared, "target"},
    {"target.ThreadWarpSize", tgt_warp, "target"},
    {"target.Kinds", tgt_kinds, ""},
    {NULL, NULL, NULL},
};
