/*
 * registry.c - the global function registry: name -> KilnFunction.
 *
 * This is TVM's Registry (see the seed note on its function bridge): the
 * compiler and the runtime register their entry points under dotted names,
 * and a language binding finds them by name and calls them through
 * kiln_func_call.  The map is a string-keyed PtrMap behind one mutex; it
 * holds one reference per entry and its keys are heap copies that live as
 * long as the process (names are never removed, only overridden).  A
 * function replaced by an override is released after the lock is dropped,
 * so a finalizer may itself use the registry.
 *
 * The runtime's own global functions are the `builtins` table below and
 * the tables other runtime files export (kiln_graph_builtins), registered
 * on the first use of the registry (explicit lists, no self-registering
 * initializers).
 *
 * Exports: kiln_func_register_global, kiln_func_get_global,
 * kiln_func_list_global_names.
 */
#include "runtime_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static PtrMap reg_funcs = {.strkeys = 1}; /* name (owned copy) -> KilnFunction * */
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

static const struct {
  const char *name;
  KilnPackedCFunc fn;
} builtins[] = {
    {"runtime.module_load", kiln_module_packed_load},
    {"runtime.module_get_function", kiln_module_packed_get_function},
};

static void register_one(const char *name, KilnPackedCFunc fn) {
  KilnFunction *f;
  KASSERT(kiln_func_create(fn, NULL, NULL, &f) == 0);
  pthread_mutex_lock(&reg_mu);
  pm_put(&reg_funcs, xstrdup(name), f);
  pthread_mutex_unlock(&reg_mu);
}

static void register_builtins(void) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    register_one(builtins[i].name, builtins[i].fn);
  /* other files' tables (graph_packed.c) */
  for (const KilnBuiltin *b = kiln_graph_builtins; b->name; b++) register_one(b->name, b->fn);
  for (const KilnBuiltin *b = kiln_string_builtins; b->name; b++) register_one(b->name, b->fn);
  for (const KilnBuiltin *b = kiln_datadep_builtins; b->name; b++) register_one(b->name, b->fn);
}

static int check_name(const char *what, const char *name) {
  if (!name || !*name) return kiln_set_error("%s: the name is empty", what);
  pthread_once(&builtins_once, register_builtins);
  return 0;
}

int kiln_func_register_global(const char *name, KilnFunction *f, int override) {
  if (check_name("register_global", name)) return -1;
  if (!f) return kiln_set_error("register_global: the function for '%s' is NULL", name);
  pthread_mutex_lock(&reg_mu);
  KilnFunction *old = pm_get(&reg_funcs, name);
  if (old && !override) {
    pthread_mutex_unlock(&reg_mu);
    return kiln_set_error("global function '%s' is already registered", name);
  }
  kiln_func_retain(f);
  /* An existing key keeps its stored copy; pm_put only replaces the value. */
  pm_put(&reg_funcs, old ? name : xstrdup(name), f);
  pthread_mutex_unlock(&reg_mu);
  kiln_func_free(old);
  return 0;
}

int kiln_func_get_global(const char *name, KilnFunction **out) {
  if (!out) return kiln_set_error("get_global: out is NULL");
  *out = NULL;
  if (check_name("get_global", name)) return -1;
  pthread_mutex_lock(&reg_mu);
  KilnFunction *f = pm_get(&reg_funcs, name);
  if (f) kiln_func_retain(f);
  pthread_mutex_unlock(&reg_mu);
  *out = f;
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int kiln_func_list_global_names(int *num, const char ***names) {
  if (!num || !names) return kiln_set_error("list_global_names: num or names is NULL");
  pthread_once(&builtins_once, register_builtins);
  /* One block per call: the pointer array, then the strings it points to. */
  pthread_mutex_lock(&reg_mu);
  size_t n = 0, chars = 0;
  for (int i = 0; i < reg_funcs.cap; i++)
    if (reg_funcs.keys[i]) n++, chars += strlen(reg_funcs.keys[i]) + 1;
  const char **list = xmalloc(n * sizeof(char *) + chars + 1);
  char *text = (char *)(list + n);
  size_t k = 0;
  for (int i = 0; i < reg_funcs.cap; i++) {
    if (!reg_funcs.keys[i]) continue;
    size_t len = strlen(reg_funcs.keys[i]) + 1;
    memcpy(text, reg_funcs.keys[i], len);
    list[k++] = text;
    text += len;
  }
  pthread_mutex_unlock(&reg_mu);
  qsort(list, n, sizeof *list, cmp_names);
  KilnThreadStore *s = kiln_thread_store();
  free(s->names);
  s->names = list;
  *num = (int)n;
  *names = list;
  return 0;
}
