/*
 * api.c - kiln_init, the api.* functions, and the argument readers and
 * result writers every table of the C API uses.
 *
 * kiln_init registers the tables of api.h in the runtime's global
 * registry, once per process (pthread_once), each entry as a KilnFunction
 * whose resource is the entry itself: that is how a function's messages
 * know its name and its parameter names.  There are no static
 * constructors: a program that never calls kiln_init registers nothing.
 *
 * The readers turn a (value, type code) pair into a checked C value.  A
 * handle's KObjKind tag is read before anything else, so a handle of the
 * wrong kind (a Tensor given as an axis) is a message, not a crash.
 */
#include "api.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- arrays and kinds ---- */

KArray *karray_new(int n, void *const *items) {
  KArray *a = KNEW(KArray);
  a->okind = KOBJ_ARRAY;
  a->n = n;
  a->items = KNEWN(void *, n > 0 ? n : 1);
  if (n > 0 && items) memcpy(a->items, items, sizeof(void *) * (size_t)n);
  return a;
}

const char *api_kind_name(const void *obj) {
  if (!obj) return NULL;
  switch ((int)*(const KObjKind *)obj) {
  case KOBJ_EXPR: return "Expr";
  case KOBJ_STMT: return "Stmt";
  case KOBJ_ITERVAR: return "IterVar";
  case KOBJ_TENSOR: return "Tensor";
  case KOBJ_STAGE: return "Stage";
  case KOBJ_SCHEDULE: return "Schedule";
  case KOBJ_FUNC: return "LoweredFunc";
  case KOBJ_REDUCER: return "Reducer";
  case KOBJ_ARRAY: return "Array";
  case KOBJ_GRAPH: return "Graph";
  case KOBJ_TARGET: return "Target";
  }
  return NULL;
}

/* "an Expr" / "a Tensor" for messages. */
static const char *with_article(const char *kind) {
  if (!kind) return "an object of unknown kind (not a Kiln compiler object)";
  return kfmt("%s %s", strchr("AEIOU", kind[0]) ? "an" : "a", kind);
}

static const char *want_name(KObjKind k) {
  KObjKind tmp = k;
  return with_article(api_kind_name(&tmp));
}

/* ---- errors and argument names ---- */

/* The name of parameter i from the entry's list: "stage, axis, factor";
 * a last name ending in "..." names every argument from there on. */
static const char *param_name(const ApiCall *c, int i) {
  const char *p = c->fn && c->fn->params ? c->fn->params : "";
  const char *start = p, *last = p;
  int k = 0;
  for (;;) {
    const char *end = strchr(start, ',');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    last = start;
    if (k == i) {
      char *name = kstrndup(start, len);
      char *q = strpbrk(name, "?=.");
      if (q) *q = 0;
      return name;
    }
    if (!end) break;
    start = end + 1;
    while (*start == ' ') start++;
    k++;
  }
  size_t len = strlen(last);
  if (len > 3 && !strcmp(last + len - 3, "...")) return kstrndup(last, len - 3);
  return "?";
}

static const char *fname(const ApiCall *c) { return c->fn ? c->fn->name : "api"; }

int api_error(const ApiCall *c, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_set_error("%s: %s", fname(c), msg);
}

int api_fail(const ApiCall *c) {
  if (!kiln_get_error()[0]) return kiln_set_error("%s failed", fname(c));
  /* Builders' messages may already name the function; don't repeat it. */
  if (strncmp(kiln_get_error(), fname(c), strlen(fname(c))) != 0) kiln_error_context("%s", fname(c));
  return -1;
}

/* The runtime's checkers (kiln/runtime.h) word the messages. */
int api_argc(const ApiCall *c, int min, int max) {
  return kiln_check_argc(fname(c), c->n, min, max, c->fn && c->fn->params ? c->fn->params : "");
}

static int bad_arg(const ApiCall *c, int i, const char *want) {
  if (i >= c->n) return api_error(c, "argument %d (%s) is missing", i, param_name(c, i));
  int code = c->codes[i];
  const char *got = NULL; /* the type code's name */
  if (code == KILN_OBJECT)
    got = c->args[i].v_handle ? with_article(api_kind_name(c->args[i].v_handle)) : "a NULL handle";
  return kiln_arg_error(fname(c), i, param_name(c, i), want, code, got);
}

/* ---- readers ---- */

void *api_obj(const ApiCall *c, int i, KObjKind want) {
  if (i >= c->n || c->codes[i] != KILN_OBJECT || !c->args[i].v_handle ||
      *(const KObjKind *)c->args[i].v_handle != want)
    return bad_arg(c, i, want_name(want)), NULL;
  return c->args[i].v_handle;
}

int api_opt_obj(const ApiCall *c, int i, KObjKind want, void **out) {
  *out = NULL;
  if (i >= c->n || c->codes[i] == KILN_NULL) return 0;
  if (c->codes[i] != KILN_OBJECT || !c->args[i].v_handle ||
      *(const KObjKind *)c->args[i].v_handle != want)
    return bad_arg(c, i, kfmt("%s or null", want_name(want)));
  *out = c->args[i].v_handle;
  return 0;
}

/* A number as an expression: of type t when t is a scalar number type,
 * else int32/int64 for ints and float32 for floats (TVM's const). */
static Expr *number_expr(const KilnValue *v, int code, const DType *t) {
  bool like = t && t->lanes == 1 && (dt_is_float(*t) || (dt_is_intlike(*t) && !dt_is_bool(*t)));
  if (code == KILN_FLOAT) {
    if (like && dt_is_float(*t)) return ir_float(v->v_float64, *t);
    return ir_f32(v->v_float64);
  }
  int64_t x = v->v_int64;
  if (like && dt_is_float(*t)) return ir_float((double)x, *t);
  if (like && x >= dt_int_min(*t) && x <= dt_int_max(*t)) return ir_int(x, *t);
  if (code == KILN_UINT && (uint64_t)x > INT64_MAX) return ir_int(x, DT_U64);
  return x >= INT32_MIN && x <= INT32_MAX ? ir_i32(x) : ir_i64(x);
}

static Expr *expr_arg(const ApiCall *c, int i, const Expr *other) {
  if (i < c->n) {
    int code = c->codes[i];
    if (code == KILN_INT || code == KILN_UINT || code == KILN_FLOAT)
      return number_expr(&c->args[i], code, other ? &other->dtype : NULL);
    if (code == KILN_OBJECT && c->args[i].v_handle) {
      const KObjKind k = *(const KObjKind *)c->args[i].v_handle;
      if (k == KOBJ_EXPR) return c->args[i].v_handle;
      if (k == KOBJ_ITERVAR) return ((IterVar *)c->args[i].v_handle)->var;
    }
  }
  bad_arg(c, i, "an Expr, an IterVar or a number");
  return NULL;
}

Expr *api_expr(const ApiCall *c, int i) { return expr_arg(c, i, NULL); }
Expr *api_expr_like(const ApiCall *c, int i, const Expr *other) { return expr_arg(c, i, other); }

int api_opt_expr(const ApiCall *c, int i, Expr **out) {
  *out = NULL;
  if (i >= c->n || c->codes[i] == KILN_NULL) return 0;
  *out = api_expr(c, i);
  return *out ? 0 : -1;
}

const char *api_str(const ApiCall *c, int i) {
  if (i >= c->n || c->codes[i] != KILN_STR || !c->args[i].v_str) return bad_arg(c, i, "a str"), NULL;
  return c->args[i].v_str;
}

int api_opt_str(const ApiCall *c, int i, const char **out) {
  *out = NULL;
  if (i >= c->n || c->codes[i] == KILN_NULL) return 0;
  *out = api_str(c, i);
  return *out ? 0 : -1;
}

int api_int(const ApiCall *c, int i, int64_t *out) {
  if (i < c->n && (c->codes[i] == KILN_INT || c->codes[i] == KILN_UINT)) {
    *out = c->args[i].v_int64;
    return 0;
  }
  if (i < c->n && c->codes[i] == KILN_OBJECT && c->args[i].v_handle &&
      *(const KObjKind *)c->args[i].v_handle == KOBJ_EXPR &&
      ir_is_const_int(c->args[i].v_handle, out))
    return 0;
  return bad_arg(c, i, "an int");
}

int api_dtype(const ApiCall *c, int i, DType *out) {
  if (i < c->n && c->codes[i] == KILN_DTYPE) {
    *out = c->args[i].v_type;
    return 0;
  }
  if (i < c->n && c->codes[i] == KILN_STR && c->args[i].v_str) {
    if (dt_parse(c->args[i].v_str, out) == 0) return 0;
    return api_error(c, "argument %d (%s): '%s' is not a data type (e.g. float32, int64, bool)", i,
                     param_name(c, i), c->args[i].v_str);
  }
  return bad_arg(c, i, "a data type (str such as \"float32\")");
}

/* The arguments from `start` as a list: one Array argument (returned), or
 * the rest of the arguments (NULL). */
static KArray *list_array(const ApiCall *c, int start) {
  if (c->n == start + 1 && c->codes[start] == KILN_OBJECT && c->args[start].v_handle &&
      *(const KObjKind *)c->args[start].v_handle == KOBJ_ARRAY)
    return c->args[start].v_handle;
  return NULL;
}

void **api_obj_list(const ApiCall *c, int start, KObjKind want, int *n) {
  KArray *arr = list_array(c, start);
  int count = arr ? arr->n : (c->n > start ? c->n - start : 0);
  void **out = KNEWN(void *, count > 0 ? count : 1);
  for (int k = 0; k < count; k++) {
    if (arr) {
      void *it = arr->items[k];
      if (!it || *(const KObjKind *)it != want)
        return api_error(c, "argument %d (%s): item %d must be %s, got %s", start,
                         param_name(c, start), k, want_name(want),
                         it ? with_article(api_kind_name(it)) : "null"),
               NULL;
      out[k] = it;
    } else if (!(out[k] = api_obj(c, start + k, want)))
      return NULL;
  }
  *n = count;
  return out;
}

Expr **api_array_exprs(const ApiCall *c, int i, const KArray *arr, int *n) {
  Expr **out = KNEWN(Expr *, arr->n > 0 ? arr->n : 1);
  for (int k = 0; k < arr->n; k++) {
    void *it = arr->items[k];
    KObjKind kind = it ? *(const KObjKind *)it : KOBJ_NONE;
    if (kind == KOBJ_EXPR)
      out[k] = it;
    else if (kind == KOBJ_ITERVAR)
      out[k] = ((IterVar *)it)->var;
    else
      return api_error(c, "argument %d (%s): item %d must be an Expr or an IterVar, got %s", i,
                       param_name(c, i), k, it ? with_article(api_kind_name(it)) : "null"),
             NULL;
  }
  *n = arr->n;
  return out;
}

Expr **api_expr_list(const ApiCall *c, int start, int *n) {
  KArray *arr = list_array(c, start);
  if (arr) return api_array_exprs(c, start, arr, n);
  int count = c->n > start ? c->n - start : 0;
  Expr **out = KNEWN(Expr *, count > 0 ? count : 1);
  for (int k = 0; k < count; k++)
    if (!(out[k] = api_expr(c, start + k))) return NULL;
  *n = count;
  return out;
}

/* ---- results ---- */

int api_ret_obj(const ApiCall *c, KilnValue *ret, int *ret_code, void *obj) {
  if (!obj) return api_fail(c);
  ret->v_handle = obj;
  *ret_code = KILN_OBJECT;
  return 0;
}

int api_ret_int(KilnValue *ret, int *ret_code, int64_t v) {
  ret->v_int64 = v;
  *ret_code = KILN_INT;
  return 0;
}

int api_ret_float(KilnValue *ret, int *ret_code, double v) {
  ret->v_float64 = v;
  *ret_code = KILN_FLOAT;
  return 0;
}

int api_ret_str(KilnValue *ret, int *ret_code, const char *s) {
  ret->v_str = s; /* kiln_func_call copies it before the caller sees it */
  *ret_code = KILN_STR;
  return 0;
}

int api_ret_null(KilnValue *ret, int *ret_code) {
  ret->v_handle = NULL;
  *ret_code = KILN_NULL;
  return 0;
}

/* Text results: kiln_func_call copies them after the function returns, so
 * each thread keeps its last one until the next. */
static _Thread_local char *last_text;

int api_ret_text(const ApiCall *c, KilnValue *ret, int *ret_code, char *s) {
  if (!s) return api_error(c, "out of memory");
  free(last_text);
  last_text = s;
  return api_ret_str(ret, ret_code, s);
}

int api_ret_json(const ApiCall *c, KilnValue *ret, int *ret_code, cJSON *root) {
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return api_ret_text(c, ret, ret_code, s);
}

/* ---- api.* ---- */

static const char *object_kind_arg(const ApiCall *c, void **obj) {
  if (c->n < 1 || c->codes[0] != KILN_OBJECT || !c->args[0].v_handle)
    return bad_arg(c, 0, "a compiler object"), NULL;
  *obj = c->args[0].v_handle;
  const char *k = api_kind_name(*obj);
  if (!k) bad_arg(c, 0, "a compiler object");
  return k;
}

API_FUNC(api_object_kind) {
  API_CALL;
  void *obj;
  const char *k;
  if (api_argc(&c, 1, 1) || !(k = object_kind_arg(&c, &obj))) return -1;
  return api_ret_str(ret, ret_code, k);
}

/* "Expr.Add", "Stmt.For", or the object kind. */
API_FUNC(api_type_key) {
  API_CALL;
  void *obj;
  const char *k;
  if (api_argc(&c, 1, 1) || !(k = object_kind_arg(&c, &obj))) return -1;
  if (*(KObjKind *)obj == KOBJ_EXPR) k = kfmt("Expr.%s", expr_kind_name(((Expr *)obj)->kind));
  if (*(KObjKind *)obj == KOBJ_STMT) k = kfmt("Stmt.%s", stmt_kind_name(((Stmt *)obj)->kind));
  return api_ret_str(ret, ret_code, k);
}

API_FUNC(api_array) {
  API_CALL;
  KArray *a = karray_new(c.n, NULL);
  for (int i = 0; i < c.n; i++) {
    int code = c.codes[i];
    if (code == KILN_NULL)
      a->items[i] = NULL;
    else if (code == KILN_OBJECT && c.args[i].v_handle && api_kind_name(c.args[i].v_handle))
      a->items[i] = c.args[i].v_handle;
    else if (code == KILN_INT || code == KILN_UINT || code == KILN_FLOAT)
      a->items[i] = number_expr(&c.args[i], code, NULL);
    else
      return bad_arg(&c, i, "a compiler object, a number or null");
  }
  return api_ret_obj(&c, ret, ret_code, a);
}

API_FUNC(api_array_size) {
  API_CALL;
  KArray *a;
  if (api_argc(&c, 1, 1) || !(a = api_obj(&c, 0, KOBJ_ARRAY))) return -1;
  return api_ret_int(ret, ret_code, a->n);
}

API_FUNC(api_array_get_item) {
  API_CALL;
  KArray *a;
  int64_t i;
  if (api_argc(&c, 2, 2) || !(a = api_obj(&c, 0, KOBJ_ARRAY)) || api_int(&c, 1, &i)) return -1;
  if (i < 0 || i >= a->n) return api_error(&c, "index %lld out of range for an array of %d", (long long)i, a->n);
  if (!a->items[i]) return api_ret_null(ret, ret_code);
  return api_ret_obj(&c, ret, ret_code, a->items[i]);
}

static const ApiEntry *find_entry(const char *name);

API_FUNC(api_func_params) {
  API_CALL;
  const char *name;
  if (api_argc(&c, 1, 1) || !(name = api_str(&c, 0))) return -1;
  const ApiEntry *e = find_entry(name);
  if (!e) return api_error(&c, "'%s' is not a function of the compiler API", name);
  return api_ret_str(ret, ret_code, e->params);
}

static const ApiEntry api_base_funcs[] = {
    {"api.ObjectKind", api_object_kind, "obj"},
    {"api.TypeKey", api_type_key, "obj"},
    {"api.Array", api_array, "items..."},
    {"api.ArraySize", api_array_size, "array"},
    {"api.ArrayGetItem", api_array_get_item, "array, index"},
    {"api.FuncParams", api_func_params, "name"},
    {NULL, NULL, NULL},
};

/* ---- kiln_init ---- */

static const ApiEntry *const tables[] = {
    api_base_funcs, api_ir_funcs, api_te_funcs, api_schedule_funcs, api_driver_funcs,
    api_graph_funcs, api_relay_funcs, api_autotvm_funcs, api_template_funcs, api_target_funcs,
};

static const ApiEntry *find_entry(const char *name) {
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (const ApiEntry *e = tables[t]; e->name; e++)
      if (!strcmp(e->name, name)) return e;
  return NULL;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_status;
static char init_error[512];

static void init_all(void) {
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
    for (const ApiEntry *e = tables[t]; e->name; e++) {
      KilnFunction *f;
      if (kiln_func_create(e->fn, (void *)e, NULL, &f) ||
          kiln_func_register_global(e->name, f, 0)) {
        kiln_func_free(f);
        snprintf(init_error, sizeof init_error, "kiln_init: registering %s: %s", e->name,
                 kiln_get_error());
        init_status = -1;
        return;
      }
      kiln_func_free(f); /* the registry holds its own reference */
    }
  }
}

int kiln_init(void) {
  pthread_once(&init_once, init_all);
  if (init_status) return kiln_set_error("%s", init_error);
  return 0;
}
