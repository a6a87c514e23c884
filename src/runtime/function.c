/*
 * function.c - KilnFunction: a refcounted packed C function, and the call
 * that every language binding goes through.
 *
 * A function is {code, resource, finalizer}; the finalizer runs when the
 * last reference is dropped, which is how a kernel keeps its module loaded
 * and how a Python callback keeps its closure alive.  kiln_func_call resets
 * the result to KILN_NULL, clears the thread's error, calls, and on failure
 * makes sure a message is left.  A string or bytes result is copied into
 * the calling thread's KilnThreadStore, so the callee's storage need only
 * outlive its return, and the caller's copy lives until the next call on
 * the thread (TVM's TVMRetValue does the same).
 *
 * Exports: kiln_func_create, _call, _free, _retain; internally the
 * per-thread store, kiln_type_code_name and kiln_check_args.
 */
#include "runtime_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the per-thread store ---- */

static pthread_key_t store_key;
static pthread_once_t store_once = PTHREAD_ONCE_INIT;
static _Thread_local KilnThreadStore *tls_store; /* fast path; the key frees it */

static void store_destroy(void *p) {
  KilnThreadStore *s = p;
  free(s->ret_str);
  free((void *)s->ret_bytes.data);
  free(s->names);
  free(s);
}

static void store_key_init(void) { KASSERT(pthread_key_create(&store_key, store_destroy) == 0); }

KilnThreadStore *kiln_thread_store(void) {
  if (!tls_store) {
    pthread_once(&store_once, store_key_init);
    tls_store = xcalloc(1, sizeof *tls_store);
    KASSERT(pthread_setspecific(store_key, tls_store) == 0);
  }
  return tls_store;
}

/* ---- type codes and argument checks ---- */

const char *kiln_type_code_name(int code) {
  static const char *const names[] = {
      [KILN_INT] = "int",           [KILN_UINT] = "uint",       [KILN_FLOAT] = "float",
      [KILN_HANDLE] = "handle",     [KILN_NULL] = "null",       [KILN_DTYPE] = "dtype",
      [KILN_DEVICE] = "device",     [KILN_DLTENSOR] = "tensor", [KILN_OBJECT] = "object",
      [KILN_MODULE] = "module",     [KILN_FUNC] = "function",   [KILN_STR] = "str",
      [KILN_BYTES] = "bytes",       [KILN_NDARRAY] = "ndarray",
  };
  if (code >= 0 && (size_t)code < sizeof names / sizeof names[0]) return names[code];
  return "unknown";
}

int kiln_check_argc(const char *fname, int num_args, int min, int max, const char *params) {
  if (num_args >= min && (max < 0 || num_args <= max)) return 0;
  char p[512] = "";
  if (params) snprintf(p, sizeof p, " (%s)", params);
  if (min == max)
    return kiln_set_error("%s: expected %d argument%s%s, got %d", fname, min, min == 1 ? "" : "s", p, num_args);
  if (max < 0)
    return kiln_set_error("%s: expected at least %d argument%s%s, got %d", fname, min, min == 1 ? "" : "s", p,
                          num_args);
  return kiln_set_error("%s: expected %d to %d arguments%s, got %d", fname, min, max, p, num_args);
}

int kiln_arg_error(const char *fname, int i, const char *pname, const char *want, int got_code, const char *got_desc) {
  char got[128], pn[160] = "";
  if (!got_desc) {
    snprintf(got, sizeof got, "%s (type code %d)", kiln_type_code_name(got_code), got_code);
    got_desc = got;
  }
  if (pname) snprintf(pn, sizeof pn, " (%s)", pname);
  return kiln_set_error("%s: argument %d%s must be %s, got %s", fname, i, pn, want, got_desc);
}

int kiln_check_args(const char *fname, const int *type_codes, int num_args, int expected,
                    const int *want) {
  if (kiln_check_argc(fname, num_args, expected, expected, NULL)) return -1;
  for (int i = 0; i < expected; i++)
    if (type_codes[i] != want[i]) {
      char w[64];
      snprintf(w, sizeof w, "%s (type code %d)", kiln_type_code_name(want[i]), want[i]);
      return kiln_arg_error(fname, i, NULL, w, type_codes[i], NULL);
    }
  return 0;
}

/* ---- functions ---- */

int kiln_func_create(KilnPackedCFunc fn, void *resource, void (*finalizer)(void *resource),
                     KilnFunction **out) {
  if (!out) return kiln_set_error("func_create: out is NULL");
  *out = NULL;
  if (!fn) return kiln_set_error("func_create: the C function is NULL");
  KilnFunction *f = xcalloc(1, sizeof *f);
  f->fn = fn;
  f->resource = resource;
  f->finalizer = finalizer;
  atomic_init(&f->refs, 1);
  *out = f;
  return 0;
}

int kiln_func_retain(KilnFunction *f) {
  if (!f) return kiln_set_error("func_retain: the function is NULL");
  atomic_fetch_add(&f->refs, 1);
  return 0;
}

int kiln_func_free(KilnFunction *f) {
  if (!f || atomic_fetch_sub(&f->refs, 1) != 1) return 0;
  if (f->finalizer) f->finalizer(f->resource);
  free(f);
  return 0;
}

/* Copy a string or bytes result into the thread store.  The result may
 * already point into the store (a function returning what it got from a
 * nested call), so copy first, then free the old buffer. */
static void keep_result(int code, KilnValue *ret) {
  KilnThreadStore *s = kiln_thread_store();
  if (code == KILN_STR) {
    char *copy = xstrdup(ret->v_str ? ret->v_str : "");
    free(s->ret_str);
    s->ret_str = copy;
    ret->v_str = copy;
  } else if (code == KILN_BYTES) {
    const KilnBytes *b = ret->v_handle;
    size_t size = b ? b->size : 0;
    char *copy = xmalloc(size ? size : 1);
    if (size) memcpy(copy, b->data, size);
    free((void *)s->ret_bytes.data);
    s->ret_bytes.data = copy;
    s->ret_bytes.size = size;
    ret->v_handle = &s->ret_bytes;
  }
}

/* A result nobody asked for: free what the caller would have owned. */
static void drop_result(int code, KilnValue *ret) {
  if (code == KILN_MODULE) kiln_module_free(ret->v_handle);
  else if (code == KILN_FUNC) kiln_func_free(ret->v_handle);
  else if (code == KILN_NDARRAY) kiln_array_free(ret->v_handle);
}

int kiln_func_call(KilnFunction *f, KilnValue *args, int *type_codes, int num_args,
                   KilnValue *ret, int *ret_code) {
  KilnValue ret_local;
  int code_local;
  KilnValue *r = ret ? ret : &ret_local;
  int *rc = ret_code ? ret_code : &code_local;
  r->v_handle = NULL;
  *rc = KILN_NULL;
  if (!f) return kiln_set_error("func_call: the function is NULL");
  if (num_args < 0 || (num_args > 0 && (!args || !type_codes)))
    return kiln_set_error("func_call: bad argument list (%d arguments, args %s, type codes %s)",
                          num_args, args ? "set" : "NULL", type_codes ? "set" : "NULL");
  kiln_clear_error();
  if (f->fn(args, type_codes, num_args, r, rc, f->resource) != 0) {
    if (!kiln_get_error()[0]) kiln_set_error("a function failed without setting an error");
    *rc = KILN_NULL;
    return -1;
  }
  keep_result(*rc, r);
  if (!ret || !ret_code) drop_result(*rc, r);
  return 0;
}
