/*
 * graph_packed.c - the graph executor, the profiler and the memory planner
 * as packed functions in the global registry, for language bindings.
 *
 * An executor or a profile travels as an opaque KILN_HANDLE; the binding
 * owns it and calls the matching ".free" (the Python class does so in its
 * finalizer).  Each begins with a type tag (KilnHandleTag), which every
 * function here checks, so a profile passed where an executor is expected
 * (or a freed one) is an error, not a crash.  The
 * names and signatures are listed in include/kiln/runtime.h ("graph
 * executor in the registry"); registry.c registers kiln_graph_builtins
 * with its own table.
 *
 * Exports: kiln_graph_builtins.
 */
#include "runtime_internal.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define PACKED(name)                                                                               \
  static int name(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code,           \
                  void *resource)

static int is_tensor(int code) { return code == KILN_DLTENSOR || code == KILN_NDARRAY; }

int kiln_handle_check(const char *fname, const KilnValue *args, const int *codes, int i, KilnHandleTag tag,
                      const char *what) {
  char want[96];
  snprintf(want, sizeof want, "%s (type code %d)", what, KILN_HANDLE);
  if (codes[i] != KILN_HANDLE || !args[i].v_handle) return kiln_arg_error(fname, i, NULL, want, codes[i], NULL);
  uint32_t got = *(const uint32_t *)args[i].v_handle;
  if (got == (uint32_t)tag) return 0;
  const char *desc = got == KILN_TAG_EXECUTOR ? "an executor handle"
                     : got == KILN_TAG_PROFILE ? "a profile handle"
                                               : "a handle that is not a live executor or profile (freed, or not Kiln's)";
  return kiln_arg_error(fname, i, NULL, want, codes[i], desc);
}

/* Check there are min..max arguments, the first an executor handle. */
static int get_ex(const char *fname, KilnValue *args, int *codes, int nargs, int min, int max,
                  KilnGraphExecutor **ex) {
  if (kiln_check_argc(fname, nargs, min, max, NULL)) return -1;
  if (kiln_handle_check(fname, args, codes, 0, KILN_TAG_EXECUTOR, "an executor handle")) return -1;
  *ex = args[0].v_handle;
  return 0;
}

static int want_code(const char *fname, int *codes, int i, int code) {
  if (codes[i] == code) return 0;
  char w[64];
  snprintf(w, sizeof w, "%s (type code %d)", kiln_type_code_name(code), code);
  return kiln_arg_error(fname, i, NULL, w, codes[i], NULL);
}

static int want_tensor(const char *fname, int *codes, int i) {
  if (is_tensor(codes[i])) return 0;
  return kiln_arg_error(fname, i, NULL, "a tensor (type code 7 or 13)", codes[i], NULL);
}

/* An input given as an int (input index) or a str (argument name). */
static int input_ref(const char *fname, KilnValue *args, int *codes, int i) {
  if (codes[i] == KILN_INT || codes[i] == KILN_STR) return 0;
  return kiln_arg_error(fname, i, NULL, "an input index (int) or name (str)", codes[i], NULL);
}

static void ret_handle(KilnValue *ret, int *ret_code, void *h) {
  ret->v_handle = h;
  *ret_code = KILN_HANDLE;
}

static void ret_int(KilnValue *ret, int *ret_code, int64_t v) {
  ret->v_int64 = v;
  *ret_code = KILN_INT;
}

static void ret_str(KilnValue *ret, int *ret_code, const char *s) {
  ret->v_str = s; /* kiln_func_call copies it */
  *ret_code = KILN_STR;
}

static int ret_array(KilnValue *ret, int *ret_code, DLTensor *t) {
  ret->v_handle = t;
  *ret_code = KILN_NDARRAY;
  return 0;
}

/* ---- executor ---- */

PACKED(ge_create) {
  const char *f = "runtime.graph_executor.create";
  KilnGraphExecutor *ex = NULL;
  /* a trailing (device_type, device_id): the device to run on */
  bool on = nargs >= 3 && codes[nargs - 1] == KILN_INT && codes[nargs - 2] == KILN_INT;
  DLDevice dev = {kDLCPU, 0};
  if (on) {
    dev = (DLDevice){(DLDeviceType)args[nargs - 2].v_int64, (int32_t)args[nargs - 1].v_int64};
    nargs -= 2;
  }
  if (nargs == 1) {
    if (want_code(f, codes, 0, KILN_MODULE)) return -1;
    if (!on) dev = kiln_module_device(args[0].v_handle);
    if (kiln_graph_executor_create_on(args[0].v_handle, dev, &ex)) return -1;
  } else if (nargs == 2 || nargs == 3) {
    if (want_code(f, codes, 0, KILN_STR) || want_code(f, codes, 1, KILN_MODULE) ||
        (nargs == 3 && want_code(f, codes, 2, KILN_BYTES)))
      return -1;
    if (!on) dev = kiln_module_device(args[1].v_handle);
    if (kiln_graph_executor_create_from_json_on(args[0].v_str, strlen(args[0].v_str), args[1].v_handle, dev, &ex))
      return -1;
    const KilnBytes *b = nargs == 3 ? args[2].v_handle : NULL;
    if (b && kiln_graph_executor_load_params(ex, b->data, b->size)) {
      kiln_graph_executor_free(ex);
      return -1;
    }
  } else {
    return kiln_set_error("%s: expected (module) or (str json, module[, bytes params]), then optionally "
                          "(int device_type, int device_id), got %d arguments", f, nargs);
  }
  ret_handle(ret, ret_code, ex);
  return 0;
}

PACKED(ge_free) {
  KilnGraphExecutor *ex = NULL;
  if (get_ex("runtime.graph_executor.free", args, codes, nargs, 1, 1, &ex)) return -1;
  return kiln_graph_executor_free(ex);
}

PACKED(ge_load_params) {
  const char *f = "runtime.graph_executor.load_params";
  KilnGraphExecutor *ex = NULL;
  if (get_ex(f, args, codes, nargs, 2, 2, &ex) || want_code(f, codes, 1, KILN_BYTES)) return -1;
  const KilnBytes *b = args[1].v_handle;
  return kiln_graph_executor_load_params(ex, b ? b->data : NULL, b ? b->size : 0);
}

PACKED(ge_set_input) {
  const char *f = "runtime.graph_executor.set_input";
  KilnGraphExecutor *ex = NULL;
  if (get_ex(f, args, codes, nargs, 3, 3, &ex) || input_ref(f, args, codes, 1) ||
      want_tensor(f, codes, 2))
    return -1;
  if (codes[1] == KILN_STR)
    return kiln_graph_executor_set_input_by_name(ex, args[1].v_str, args[2].v_handle);
  if (args[1].v_int64 < 0 || args[1].v_int64 > INT32_MAX)
    return kiln_set_error("%s: input %lld does not exist", f, (long long)args[1].v_int64);
  return kiln_graph_executor_set_input(ex, (int)args[1].v_int64, args[2].v_handle);
}

/* The name of input ref (an index or a name). */
static const char *input_name(KilnGraphExecutor *ex, KilnValue *args, int *codes, int i) {
  if (codes[i] == KILN_STR) return args[i].v_str;
  KilnTensorInfo info;
  int64_t idx = args[i].v_int64;
  if (idx < INT32_MIN || idx > INT32_MAX) idx = -1;
  if (kiln_graph_executor_input_info(ex, (int)idx, &info)) return NULL;
  return info.name;
}

PACKED(ge_set_input_zero_copy) {
  const char *f = "runtime.graph_executor.set_input_zero_copy";
  KilnGraphExecutor *ex = NULL;
  if (get_ex(f, args, codes, nargs, 3, 3, &ex) || input_ref(f, args, codes, 1) ||
      want_tensor(f, codes, 2))
    return -1;
  const char *name = input_name(ex, args, codes, 1);
  return name ? kiln_graph_executor_set_input_zero_copy(ex, name, args[2].v_handle) : -1;
}

PACKED(ge_get_input) {
  const char *f = "runtime.graph_executor.get_input";
  KilnGraphExecutor *ex = NULL;
  int index;
  DLTensor *t;
  if (get_ex(f, args, codes, nargs, 2, 2, &ex) || input_ref(f, args, codes, 1)) return -1;
  if (codes[1] == KILN_STR) {
    if (kiln_graph_executor_input_index(ex, args[1].v_str, &index)) return -1;
  } else {
    index = args[1].v_int64 < 0 || args[1].v_int64 > INT32_MAX ? -1 : (int)args[1].v_int64;
  }
  if (kiln_graph_executor_get_input(ex, index, &t)) return -1;
  return ret_array(ret, ret_code, t);
}

PACKED(ge_run) {
  KilnGraphExecutor *ex = NULL;
  if (get_ex("runtime.graph_executor.run", args, codes, nargs, 1, 1, &ex)) return -1;
  return kiln_graph_executor_run(ex);
}

static int int_arg(const char *fname, KilnValue *args, int *codes, int i, int *v) {
  if (want_code(fname, codes, i, KILN_INT)) return -1;
  int64_t x = args[i].v_int64;
  *v = x < INT32_MIN || x > INT32_MAX ? -1 : (int)x;
  return 0;
}

PACKED(ge_get_output) {
  const char *f = "runtime.graph_executor.get_output";
  KilnGraphExecutor *ex = NULL;
  int index;
  if (get_ex(f, args, codes, nargs, 2, 3, &ex) || int_arg(f, args, codes, 1, &index)) return -1;
  if (nargs == 3) {
    if (want_tensor(f, codes, 2)) return -1;
    return kiln_graph_executor_copy_output(ex, index, args[2].v_handle);
  }
  DLTensor *t;
  if (kiln_graph_executor_get_output(ex, index, &t)) return -1;
  return ret_array(ret, ret_code, t);
}

PACKED(ge_get_num_inputs) {
  KilnGraphExecutor *ex = NULL;
  if (get_ex("runtime.graph_executor.get_num_inputs", args, codes, nargs, 1, 1, &ex)) return -1;
  ret_int(ret, ret_code, kiln_graph_executor_num_inputs(ex));
  return 0;
}

PACKED(ge_get_num_outputs) {
  KilnGraphExecutor *ex = NULL;
  if (get_ex("runtime.graph_executor.get_num_outputs", args, codes, nargs, 1, 1, &ex)) return -1;
  ret_int(ret, ret_code, kiln_graph_executor_num_outputs(ex));
  return 0;
}

/* What the info getters return. */
typedef enum InfoPart { INFO_NAME, INFO_SHAPE, INFO_DTYPE } InfoPart;

static int info_getter(const char *fname, int output, InfoPart part, KilnValue *args, int *codes,
                       int nargs, KilnValue *ret, int *ret_code) {
  KilnGraphExecutor *ex = NULL;
  int index;
  KilnTensorInfo info;
  if (get_ex(fname, args, codes, nargs, 2, 2, &ex) || int_arg(fname, args, codes, 1, &index))
    return -1;
  if (output ? kiln_graph_executor_output_info(ex, index, &info)
             : kiln_graph_executor_input_info(ex, index, &info))
    return kiln_error_context("%s", fname);
  switch (part) {
  case INFO_NAME: ret_str(ret, ret_code, info.name); return 0;
  case INFO_DTYPE: {
    /* the text must outlive this frame: kiln_func_call copies it after we return */
    static _Thread_local char buf[48];
    ret_str(ret, ret_code, kiln_dtype_format(info.dtype, buf, sizeof buf));
    return 0;
  }
  case INFO_SHAPE: {
    DLTensor *t;
    int64_t n = info.ndim;
    if (kiln_array_empty(1, &n, (DLDataType){kDLInt, 64, 1}, (DLDevice){kDLCPU, 0}, &t)) return -1;
    if (n) memcpy(t->data, info.shape, (size_t)n * sizeof(int64_t));
    return ret_array(ret, ret_code, t);
  }
  }
  KUNREACHABLE();
  return -1;
}

#define INFO(fn, name, output, part)                                                               \
  PACKED(fn) {                                                                                     \
    return info_getter("runtime.graph_executor." name, output, part, args, codes, nargs, ret,       \
                       ret_code);                                                                  \
  }
INFO(ge_get_input_name, "get_input_name", 0, INFO_NAME)
INFO(ge_get_output_name, "get_output_name", 1, INFO_NAME)
INFO(ge_get_input_shape, "get_input_shape", 0, INFO_SHAPE)
INFO(ge_get_output_shape, "get_output_shape", 1, INFO_SHAPE)
INFO(ge_get_input_dtype, "get_input_dtype", 0, INFO_DTYPE)
INFO(ge_get_output_dtype, "get_output_dtype", 1, INFO_DTYPE)
#undef INFO

/* ---- the model's values (graph_values.c; docs/sequences.md) ---- */

PACKED(ge_get_num_values) {
  const char *f = "runtime.graph_executor.get_num_values";
  KilnGraphExecutor *ex = NULL;
  if (get_ex(f, args, codes, nargs, 2, 2, &ex) || want_code(f, codes, 1, KILN_INT)) return -1;
  int n = args[1].v_int64 ? kiln_graph_executor_num_output_values(ex) : kiln_graph_executor_num_input_values(ex);
  if (n < 0) return -1;
  ret_int(ret, ret_code, n);
  return 0;
}

/* "KIND HOLDS HAS_VALUE NUM_TENSORS FIRST_TENSOR" then the name and each
 * tensor's name, a line each (names hold no newline: they are ONNX's). */
PACKED(ge_get_value_info) {
  const char *f = "runtime.graph_executor.get_value_info";
  KilnGraphExecutor *ex = NULL;
  KilnValueInfo v;
  if (get_ex(f, args, codes, nargs, 3, 3, &ex) || want_code(f, codes, 1, KILN_INT) || want_code(f, codes, 2, KILN_INT))
    return -1;
  int idx = args[2].v_int64 < 0 || args[2].v_int64 > INT32_MAX ? -1 : (int)args[2].v_int64;
  if (args[1].v_int64 ? kiln_graph_executor_output_value_info(ex, idx, &v) : kiln_graph_executor_input_value_info(ex, idx, &v))
    return -1;
  StrBuf sb = {0};
  sb_printf(&sb, "%d %d %d %d %d\n%s", (int)v.kind, (int)v.holds, v.has_value, v.num_tensors, v.first_tensor, v.name);
  for (int k = 0; k < v.num_tensors; k++) sb_printf(&sb, "\n%s", v.tensor_names[k]);
  static __thread char *text;
  free(text);
  text = sb.data;
  ret_str(ret, ret_code, text);
  return 0;
}

/* set_input_value(handle, int index, int present, tensor...) */
PACKED(ge_set_input_value) {
  const char *f = "runtime.graph_executor.set_input_value";
  KilnGraphExecutor *ex = NULL;
  if (get_ex(f, args, codes, nargs, 3, 3 + 4096, &ex) || want_code(f, codes, 1, KILN_INT) || want_code(f, codes, 2, KILN_INT))
    return -1;
  int n = nargs - 3;
  const DLTensor **ts = calloc((size_t)n + 1, sizeof *ts);
  if (!ts) return kiln_set_error("%s: out of memory", f);
  for (int k = 0; k < n; k++) {
    if (want_tensor(f, codes, 3 + k)) {
      free(ts);
      return -1;
    }
    ts[k] = args[3 + k].v_handle;
  }
  int idx = args[1].v_int64 < 0 || args[1].v_int64 > INT32_MAX ? -1 : (int)args[1].v_int64;
  int rc = kiln_graph_executor_set_input_value(ex, idx, args[2].v_int64 != 0, ts, n);
  free(ts);
  return rc;
}

static int memory_getter(const char *fname, int naive, KilnValue *args, int *codes, int nargs,
                         KilnValue *ret, int *ret_code) {
  KilnGraphExecutor *ex = NULL;
  KilnMemoryPlan plan;
  if (get_ex(fname, args, codes, nargs, 1, 1, &ex) || kiln_graph_executor_memory(ex, &plan, NULL))
    return -1;
  ret_int(ret, ret_code, (int64_t)(naive ? plan.naive_bytes : plan.planned_bytes));
  return 0;
}

PACKED(ge_get_planned_bytes) {
  return memory_getter("runtime.graph_executor.get_planned_bytes", 0, args, codes, nargs, ret,
                       ret_code);
}

PACKED(ge_get_naive_bytes) {
  return memory_getter("runtime.graph_executor.get_naive_bytes", 1, args, codes, nargs, ret,
                       ret_code);
}

PACKED(plan_memory) {
  static const int want[] = {KILN_STR};
  char *text;
  if (kiln_check_args("runtime.graph_plan_memory", codes, nargs, 1, want) ||
      kiln_graph_json_plan_memory(args[0].v_str, strlen(args[0].v_str), &text, NULL))
    return -1;
  /* the copy kiln_func_call makes must be taken before this frame frees
   * text: hand the text to the thread store through a KILN_STR result */
  KilnThreadStore *s = kiln_thread_store();
  free(s->ret_str);
  s->ret_str = text;
  ret_str(ret, ret_code, text);
  return 0;
}

/* ---- profiling ---- */

PACKED(debug_profile) {
  const char *f = "runtime.debug_executor.profile";
  KilnGraphExecutor *ex = NULL;
  int number, repeat;
  KilnProfile *p;
  if (get_ex(f, args, codes, nargs, 3, 3, &ex) || int_arg(f, args, codes, 1, &number) ||
      int_arg(f, args, codes, 2, &repeat) || kiln_debug_profile(ex, number, repeat, &p))
    return -1;
  ret_handle(ret, ret_code, p);
  return 0;
}

PACKED(profile_format) {
  static const int want[] = {KILN_HANDLE, KILN_STR};
  static const char *const kinds[] = {"table", "csv", "trace", "json"};
  const char *text;
  if (kiln_check_args("runtime.profile.format", codes, nargs, 2, want) ||
      kiln_handle_check("runtime.profile.format", args, codes, 0, KILN_TAG_PROFILE, "a profile handle"))
    return -1;
  for (int k = 0; k < 4; k++)
    if (!strcmp(args[1].v_str, kinds[k])) {
      if (kiln_profile_format(args[0].v_handle, (KilnProfileFormat)k, &text)) return -1;
      ret_str(ret, ret_code, text);
      return 0;
    }
  return kiln_set_error("runtime.profile.format: format '%s' is not one of table, csv, trace, json",
                        args[1].v_str);
}

PACKED(profile_free) {
  static const int want[] = {KILN_HANDLE};
  if (kiln_check_args("runtime.profile.free", codes, nargs, 1, want) ||
      kiln_handle_check("runtime.profile.free", args, codes, 0, KILN_TAG_PROFILE, "a profile handle"))
    return -1;
  return kiln_profile_free(args[0].v_handle);
}

const KilnBuiltin kiln_graph_builtins[] = {
    {"runtime.graph_executor.create", ge_create},
    {"runtime.graph_executor.free", ge_free},
    {"runtime.graph_executor.load_params", ge_load_params},
    {"runtime.graph_executor.set_input", ge_set_input},
    {"runtime.graph_executor.set_input_zero_copy", ge_set_input_zero_copy},
    {"runtime.graph_executor.get_input", ge_get_input},
    {"runtime.graph_executor.run", ge_run},
    {"runtime.graph_executor.get_output", ge_get_output},
    {"runtime.graph_executor.get_num_inputs", ge_get_num_inputs},
    {"runtime.graph_executor.get_num_outputs", ge_get_num_outputs},
    {"runtime.graph_executor.get_input_name", ge_get_input_name},
    {"runtime.graph_executor.get_output_name", ge_get_output_name},
    {"runtime.graph_executor.get_input_shape", ge_get_input_shape},
    {"runtime.graph_executor.get_output_shape", ge_get_output_shape},
    {"runtime.graph_executor.get_input_dtype", ge_get_input_dtype},
    {"runtime.graph_executor.get_output_dtype", ge_get_output_dtype},
    {"runtime.graph_executor.get_num_values", ge_get_num_values},
    {"runtime.graph_executor.get_value_info", ge_get_value_info},
    {"runtime.graph_executor.set_input_value", ge_set_input_value},
    {"runtime.graph_executor.get_planned_bytes", ge_get_planned_bytes},
    {"runtime.graph_executor.get_naive_bytes", ge_get_naive_bytes},
    {"runtime.graph_plan_memory", plan_memory},
    {"runtime.debug_executor.profile", debug_profile},
    {"runtime.profile.format", profile_format},
    {"runtime.profile.free", profile_free},
    {NULL, NULL},
};
