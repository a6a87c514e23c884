/*
 * api_relay.c - relay.*: building a graph from calls, as TVM's Python
 * builds Relay expressions (relay.var, relay.const, relay.nn.conv2d(...),
 * relay.Function, IRModule.from_expr).
 *
 * Expressions are nodes of one process-wide builder graph that only grows
 * (its memory lives until the process exits, as IR made from Python does);
 * a node travels as its int id.  Each call infers its type when it is made,
 * so a mistake is reported at the line that makes it, naming the op
 * ("relay.call: nn.conv2d: data has 3 channels, weight expects 4").
 * relay.function copies what a function's outputs reach into a new graph
 * (a KOBJ_GRAPH, as graph.from_onnx returns): its parameters become the
 * graph's inputs in the order given, constants are shared by view, and a
 * variable that is not a parameter is an error.
 *
 * The op table is the only list of operators: relay.ops describes every
 * row (name, arity, pattern, Relay's Python signature), and the binding
 * makes one function per row from it.  The builder is guarded by a mutex
 * (bindings may call from several threads).
 */
#include "api.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"

static pthread_mutex_t builder_lock = PTHREAD_MUTEX_INITIALIZER;
static Graph *builder;

/* Strings returned to the caller: kiln_func_call copies them after the
 * function returns, so each thread keeps its last one until the next. */
static Graph *get_builder(void) {
  if (!builder) builder = graph_new();
  return builder;
}

static int ret_node(const ApiCall *c, KilnValue *ret, int *ret_code, GNode *n) {
  pthread_mutex_unlock(&builder_lock);
  if (!n) return api_fail(c);
  return api_ret_int(ret, ret_code, n->id);
}

/* Argument i as a node id of the builder (call with the lock held). */
static GNode *node_arg(const ApiCall *c, int i) {
  int64_t id;
  if (api_int(c, i, &id)) return NULL;
  Graph *b = get_builder();
  if (id < 0 || id >= b->nodes.len) return api_error(c, "argument %d: no expression %lld", i, (long long)id), NULL;
  return b->nodes.data[id];
}

/* var(name, dtype, dims...) -> id */
API_FUNC(relay_var) {
  API_CALL;
  const char *name;
  DType dt;
  if (api_argc(&c, 2, 2 + GRAPH_MAX_DIMS) || !(name = api_str(&c, 0)) || api_dtype(&c, 1, &dt)) return -1;
  int64_t shape[GRAPH_MAX_DIMS];
  for (int i = 2; i < c.n; i++) {
    if (api_int(&c, i, &shape[i - 2])) return -1;
    if (shape[i - 2] < 0) return api_error(&c, "variable '%s': dimension %d is %lld", name, i - 2, (long long)shape[i - 2]);
  }
  pthread_mutex_lock(&builder_lock);
  return ret_node(&c, ret, ret_code, graph_var(get_builder(), name, ttype(dt, c.n - 2, shape)));
}

/* const(tensor, name?) -> id: a constant holding a copy of the tensor */
API_FUNC(relay_const) {
  API_CALL;
  const char *name = NULL;
  if (api_argc(&c, 1, 2) || api_opt_str(&c, 1, &name)) return -1;
  if (c.codes[0] != KILN_NDARRAY && c.codes[0] != KILN_DLTENSOR)
    return api_error(&c, "argument 0 (value) must be a tensor");
  const DLTensor *t = c.args[0].v_handle;
  DLTensor *a = NULL;
  if (kiln_array_empty(t->ndim, t->shape, t->dtype, (DLDevice){kDLCPU, 0}, &a) || kiln_array_copy(t, a)) {
    kiln_array_free(a);
    return api_fail(&c);
  }
  pthread_mutex_lock(&builder_lock);
  return ret_node(&c, ret, ret_code, graph_const(get_builder(), name, a));
}

/* Attributes from a JSON object: ints, bools (ints), strings, lists of
 * ints, and floats written {"f": x} / {"fs": [x, ...]} (JSON does not say
 * whether 1 is a float). */
static int parse_attrs(const ApiCall *c, const char *op, const char *text, GAttrs *out) {
  *out = gattrs_new();
  cJSON *j = cJSON_Parse(text);
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return api_error(c, "%s: the attributes must be a JSON object, got %s", op, text);
  }
  int rc = 0;
  for (cJSON *v = j->child; v && !rc; v = v->next) {
    const char *k = v->string;
    if (cJSON_IsBool(v)) {
      ga_int(out, k, cJSON_IsTrue(v));
    } else if (cJSON_IsNumber(v)) {
      if (v->valuedouble != (double)(int64_t)v->valuedouble)
        rc = api_error(c, "%s: attribute '%s' must be an integer, got %g", op, k, v->valuedouble);
      else
        ga_int(out, k, (int64_t)v->valuedouble);
    } else if (cJSON_IsObject(v) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(v, "f"))) {
      ga_float(out, k, cJSON_GetObjectItemCaseSensitive(v, "f")->valuedouble);
    } else if (cJSON_IsObject(v) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "fs"))) {
      const cJSON *l = cJSON_GetObjectItemCaseSensitive(v, "fs");
      int n = cJSON_GetArraySize(l), i = 0;
      double *fv = KNEWN(double, n + 1);
      for (const cJSON *x = l->child; x; x = x->next) fv[i++] = cJSON_IsNumber(x) ? x->valuedouble : 0;
      ga_floats(out, k, n, fv);
    } else if (cJSON_IsString(v)) {
      ga_str(out, k, v->valuestring);
    } else if (cJSON_IsArray(v)) {
      int n = cJSON_GetArraySize(v), i = 0;
      int64_t *iv = KNEWN(int64_t, n + 1);
      for (cJSON *x = v->child; x && !rc; x = x->next, i++) {
        if (!cJSON_IsNumber(x) || x->valuedouble != (double)(int64_t)x->valuedouble)
          rc = api_error(c, "%s: attribute '%s' must be a list of integers", op, k);
        else
          iv[i] = (int64_t)x->valuedouble;
      }
      if (!rc) ga_ints(out, k, n, iv);
    } else {
      rc = api_error(c, "%s: attribute '%s' has an unsupported value (numbers, strings, lists of numbers)", op,
                     k);
    }
  }
  cJSON_Delete(j);
  return rc;
}

/* call(op, attrs_json, args...) -> id */
API_FUNC(relay_call) {
  API_CALL;
  const char *op, *attrs_text;
  if (api_argc(&c, 2, -1) || !(op = api_str(&c, 0)) || !(attrs_text = api_str(&c, 1))) return -1;
  if (!op_lookup(op)) return api_error(&c, "unknown operator '%s' (relay.ops lists them)", op);
  GAttrs attrs;
  if (parse_attrs(&c, op, attrs_text, &attrs)) return -1;
  int nin = c.n - 2;
  GNode **argv = KNEWN(GNode *, nin + 1);
  pthread_mutex_lock(&builder_lock);
  for (int i = 0; i < nin; i++)
    if (!(argv[i] = node_arg(&c, i + 2))) {
      pthread_mutex_unlock(&builder_lock);
      return -1;
    }
  return ret_node(&c, ret, ret_code, graph_call(get_builder(), op, nin, argv, attrs, NULL));
}

/* info(id) -> JSON {"kind": "var"|"const"|"call", "name", "op", "dtype", "shape"} */
API_FUNC(relay_info) {
  API_CALL;
  if (api_argc(&c, 1, 1)) return -1;
  pthread_mutex_lock(&builder_lock);
  GNode *n = node_arg(&c, 0);
  if (!n) {
    pthread_mutex_unlock(&builder_lock);
    return -1;
  }
  cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "kind", n->kind == GN_VAR ? "var" : n->kind == GN_CONST ? "const" : "call");
  cJSON_AddStringToObject(o, "name", n->name ? n->name : "");
  if (n->kind == GN_CALL) cJSON_AddStringToObject(o, "op", n->op->name);
  cJSON_AddStringToObject(o, "dtype", dt_str(n->type.dtype));
  for (int d = 0; d < n->type.ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)n->type.shape[d]));
  cJSON_AddItemToObject(o, "shape", shape);
  pthread_mutex_unlock(&builder_lock);
  return api_ret_json(&c, ret, ret_code, o);
}

/* Copy n (and what it reaches) into ng; map: builder id -> new node. */
static GNode *copy_node(const ApiCall *c, Graph *ng, GNode *n, GNode **map) {
  if (map[n->id]) return map[n->id];
  GNode *r = NULL;
  switch (n->kind) {
  case GN_VAR:
    return api_error(c, "variable %%%s is free: make it a parameter of the function", n->name), NULL;
  case GN_CONST:
    r = graph_share_const(ng, n);
    break;
  case GN_CALL: {
    GNode **args = KNEWN(GNode *, n->nargs + 1);
    for (int a = 0; a < n->nargs; a++)
      if (!(args[a] = copy_node(c, ng, n->args[a], map))) return NULL;
    r = graph_copy_call(ng, n, args);
    break;
  }
  }
  if (!r) return api_fail(c), NULL;
  return map[n->id] = r;
}

/* function(nparams, params..., outputs...) -> Graph */
API_FUNC(relay_function) {
  API_CALL;
  int64_t np;
  if (api_argc(&c, 2, -1) || api_int(&c, 0, &np)) return -1;
  if (np < 0 || np > c.n - 2) return api_error(&c, "bad parameter count %lld", (long long)np);
  int nout = c.n - 1 - (int)np;
  pthread_mutex_lock(&builder_lock);
  Graph *b = get_builder();
  GNode **map = xcalloc((size_t)b->nodes.len + 1, sizeof *map);
  Graph *ng = graph_new();
  int rc = 0;
  for (int i = 0; i < np && !rc; i++) {
    GNode *p = node_arg(&c, 1 + i);
    if (!p) rc = -1;
    else if (p->kind != GN_VAR) rc = api_error(&c, "parameter %d is not a variable (relay.var)", i);
    else if (map[p->id]) rc = api_error(&c, "parameter %%%s is listed twice", p->name);
    else {
      for (int k = 0; k < i && !rc; k++)
        if (!strcmp(((GNode *)b->nodes.data[c.args[1 + k].v_int64])->name, p->name))
          rc = api_error(&c, "two parameters are named %%%s", p->name);
      if (!rc && !(map[p->id] = graph_var(ng, p->name, p->type))) rc = api_fail(&c);
    }
  }
  for (int i = 0; i < nout && !rc; i++) {
    GNode *o = node_arg(&c, 1 + (int)np + i);
    GNode *r = o ? copy_node(&c, ng, o, map) : NULL;
    if (!r) rc = -1;
    else graph_add_output(ng, r);
  }
  free(map);
  pthread_mutex_unlock(&builder_lock);
  if (rc) {
    graph_free(ng);
    return -1;
  }
  KGraph *kg = api_kgraph_new(ng, -1, 0, NULL);
  if (!kg) return api_fail(&c);
  return api_ret_obj(&c, ret, ret_code, kg);
}

/* ops() -> JSON array of {"name", "min_args", "max_args", "pattern", "params"} */
API_FUNC(relay_ops) {
  API_CALL;
  if (api_argc(&c, 0, 0)) return -1;
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < op_count(); i++) {
    const OpDef *d = op_at(i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddNumberToObject(o, "min_args", d->min_args);
    cJSON_AddNumberToObject(o, "max_args", d->max_args);
    cJSON_AddNumberToObject(o, "pattern", d->pattern);
    if (d->params) cJSON_AddStringToObject(o, "params", d->params);
    else cJSON_AddNullToObject(o, "params");
    cJSON_AddItemToArray(a, o);
  }
  return api_ret_json(&c, ret, ret_code, a);
}

const ApiEntry api_relay_funcs[] = {
    {"relay.ops", relay_ops, ""},
    {"relay.var", relay_var, "name, dtype, dims..."},
    {"relay.const", relay_const, "value, name?"},
    {"relay.call", relay_call, "op, attrs_json, args..."},
    {"relay.info", relay_info, "expr"},
    {"relay.function", relay_function, "nparams, params..., outputs..."},
    {NULL, NULL, NULL},
};
