/*
 * kiln/runtime.h - Kiln's runtime C API: arrays, compiled modules, and the
 * global function registry with its type-erased calling convention.
 *
 * This is all a deployed model needs: link libkiln_runtime, load the
 * model's .so, call.  It depends on nothing of the compiler.
 *
 * Conventions (as in SQLite and Lua):
 *   - every call returns 0 on success and -1 on failure; the reason is in
 *     kiln_last_error() (per thread) until the next failing call;
 *   - handles are distinct incomplete structs; *_free accepts NULL;
 *   - strings and arrays a call returns stay valid until the next call of
 *     the same function on the same thread, unless documented otherwise.
 *
 * Example: load a module and call a kernel that adds two vectors.
 *
 *     KilnModule *mod;
 *     KilnFunction *f;
 *     DLTensor *a, *b, *c;
 *     int64_t n = 128;
 *     DLDevice cpu = {kDLCPU, 0};
 *     DLDataType f32 = {kDLFloat, 32, 1};
 *     if (kiln_module_load("vadd.so", &mod) ||
 *         kiln_module_get_function(mod, "vadd", &f)) {
 *       fprintf(stderr, "%s\n", kiln_last_error());
 *       return 1;
 *     }
 *     kiln_array_empty(1, &n, f32, cpu, &a);   // likewise b and c
 *     ...fill a->data and b->data...
 *     KilnValue args[3] = {{.v_handle = a}, {.v_handle = b}, {.v_handle = c}};
 *     int codes[3] = {KILN_DLTENSOR, KILN_DLTENSOR, KILN_DLTENSOR};
 *     KilnValue ret;
 *     int ret_code;
 *     if (kiln_func_call(f, args, codes, 3, &ret, &ret_code))
 *       fprintf(stderr, "%s\n", kiln_last_error());
 *     kiln_func_free(f);
 *     kiln_module_free(mod);
 *     kiln_array_free(a);  // likewise b and c
 */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_VERSION_STRING "0.1.0"

/* ---- values and type codes (TVM's numbering) ---- */

typedef enum KilnTypeCode {
  KILN_INT = 0,
  KILN_UINT = 1,
  KILN_FLOAT = 2,
  KILN_HANDLE = 3,   /* an opaque pointer */
  KILN_NULL = 4,
  KILN_DTYPE = 5,    /* v_type */
  KILN_DEVICE = 6,   /* v_device */
  KILN_DLTENSOR = 7, /* a DLTensor * that Kiln does not own */
  KILN_OBJECT = 8,   /* a compiler object (expression, tensor, schedule...) */
  KILN_MODULE = 9,   /* a KilnModule * */
  KILN_FUNC = 10,    /* a KilnFunction * */
  KILN_STR = 11,     /* v_str, NUL-terminated */
  KILN_BYTES = 12,   /* v_handle points to a KilnBytes */
  KILN_NDARRAY = 13, /* a DLTensor * made by kiln_array_* */
} KilnTypeCode;

typedef union KilnValue {
  int64_t v_int64;
  double v_float64;
  void *v_handle;
  const char *v_str;
  DLDataType v_type;
  DLDevice v_device;
} KilnValue;

typedef struct KilnBytes {
  const char *data;
  size_t size;
} KilnBytes;

const char *kiln_last_error(void);
/* Set the calling thread's error message (for functions written in other
 * languages and registered with kiln_func_create). */
void kiln_set_last_error(const char *msg);
const char *kiln_version(void);

/* ---- arrays ---- */

/* A new array, data aligned to 64 bytes, contents undefined. */
int kiln_array_empty(int ndim, const int64_t *shape, DLDataType dtype, DLDevice dev,
                     DLTensor **out);
/* A new array that views another (compact) Kiln array's memory with a new
 * shape of the same number of elements and bytes (the dtype may change to
 * one of the same size); the base is kept alive until the view is freed. */
int kiln_array_view(DLTensor *base, int ndim, const int64_t *shape, DLDataType dtype,
                    DLTensor **out);
/* A new array over memory Kiln does not own; deleter(ctx), if not NULL,
 * runs when the array and its views are all freed. */
int kiln_array_wrap(void *data, int ndim, const int64_t *shape, DLDataType dtype,
                    DLDevice dev, void (*deleter)(void *), void *ctx, DLTensor **out);
/* Copy between arrays of the same shape and dtype (any strides on from; to
 * must be compact).  These and kiln_array_nbytes take any DLTensor, not only
 * Kiln arrays. */
int kiln_array_copy(const DLTensor *from, DLTensor *to);
int kiln_array_copy_from_bytes(DLTensor *to, const void *data, size_t nbytes);
int kiln_array_copy_to_bytes(const DLTensor *from, void *data, size_t nbytes);
/* Export as a DLManagedTensor (the array stays alive until its deleter). */
int kiln_array_to_dlpack(DLTensor *t, DLManagedTensor **out);
/* Take ownership of a DLManagedTensor: its deleter runs once, when the new
 * array and its views are all freed.  On failure the caller keeps it. */
int kiln_array_from_dlpack(DLManagedTensor *m, DLTensor **out);
/* Drop the handle of an array made by kiln_array_* (never a foreign
 * DLTensor); the memory goes when no view or DLPack export still uses it. */
int kiln_array_free(DLTensor *t);
/* Bytes of a compact tensor: product(shape) * dtype size. */
size_t kiln_array_nbytes(const DLTensor *t);

/* ---- functions ---- */

typedef struct KilnFunction KilnFunction;
typedef struct KilnModule KilnModule;

/* The packed calling convention every Kiln function uses.  Return 0 on
 * success; on failure call kiln_set_last_error and return -1.  A result, if
 * any, goes to ret/ret_code (ret_code KILN_NULL when there is none). */
typedef int (*KilnPackedCFunc)(KilnValue *args, int *type_codes, int num_args, KilnValue *ret,
                               int *ret_code, void *resource);

int kiln_func_create(KilnPackedCFunc fn, void *resource, void (*finalizer)(void *resource),
                     KilnFunction **out);
/* Call f.  A string or bytes result (KILN_STR, KILN_BYTES) is copied and
 * stays valid until the next call on this thread; handle results
 * (KILN_MODULE, KILN_FUNC, KILN_NDARRAY) are owned by the caller.  ret and
 * ret_code may be NULL when the result is not wanted (a handle result is
 * then freed).  On failure *ret_code is KILN_NULL. */
int kiln_func_call(KilnFunction *f, KilnValue *args, int *type_codes, int num_args,
                   KilnValue *ret, int *ret_code);
int kiln_func_free(KilnFunction *f);
/* Take one more reference (each needs its own kiln_func_free). */
int kiln_func_retain(KilnFunction *f);

/* ---- the global registry ---- */

/* Register f under name; the registry takes a reference.  Registering a
 * name twice is an error unless override is non-zero. */
int kiln_func_register_global(const char *name, KilnFunction *f, int override);
/* Look a name up; *out is a new reference, or NULL if there is none. */
int kiln_func_get_global(const char *name, KilnFunction **out);
/* All registered names, sorted (valid until the next call on this thread).
 * The runtime registers runtime.module_load(str) -> module and
 * runtime.module_get_function(module, str) -> function. */
int kiln_func_list_global_names(int *num, const char ***names);

/* ---- modules ---- */

/* Load a compiled Kiln module (.so).  Errors: missing file, not a shared
 * object, not a Kiln module. */
int kiln_module_load(const char *path, KilnModule **out);
int kiln_module_get_function(KilnModule *mod, const char *name, KilnFunction **out);
/* The kernel names, in the module's order; valid while mod is alive. */
int kiln_module_list_functions(KilnModule *mod, int *num, const char ***names);
/* Extra data embedded in the module under a name (e.g. "graph_json",
 * "params", "lowered_ir"); *data is NULL when absent. */
int kiln_module_get_blob(KilnModule *mod, const char *name, const void **data, size_t *size);
const char *kiln_module_path(KilnModule *mod);
int kiln_module_free(KilnModule *mod);
int kiln_module_retain(KilnModule *mod);

/* ---- thread pool ---- */

/* Number of threads kernels may use, the calling thread included (default:
 * KILN_NUM_THREADS or the number of online cores).  n = 0 restores the
 * default.  Changing it stops the pool's workers; new ones start lazily on
 * the next launch.  Not allowed from inside a parallel task. */
int kiln_set_num_threads(int n);
int kiln_get_num_threads(void);

/* One task of a parallel loop: task_id in [0, num_tasks).  Return 0, or set
 * an error (kiln_set_last_error) and return non-zero. */
typedef int (*KilnParallelTask)(int task_id, int num_tasks, void *cdata);

/* Run fn(i, num_tasks, cdata) for i in [0, num_tasks) on Kiln's thread pool
 * and wait for all of them; the calling thread runs task 0 itself, and the
 * tasks are handed out to threads dynamically, so num_tasks may exceed the
 * pool size.  num_tasks <= 0 means one task per pool thread
 * (kiln_get_num_threads()).  Tasks must not wait for each other.
 *   - Returns -1 if any task failed, with the first failing task's message
 *     as this thread's error; tasks not yet started after a failure may be
 *     skipped.
 *   - A launch from inside a task (nested parallelism) runs all its tasks
 *     serially in the calling thread.
 *   - Launches from several application threads at once are serialized: the
 *     pool runs one launch at a time and the others wait for it.
 * Workers spin briefly after a launch before they sleep, so back-to-back
 * launches (one per layer) cost a few microseconds each. */
int kiln_parallel_launch(KilnParallelTask fn, void *cdata, int num_tasks);

/*
 * ---- the module ABI (what generated code exports) ----
 *
 * A compiled module is a shared object whose C source Kiln generated.  It
 * exports:
 *   const char __kiln_module_magic[]      = "kiln-module-v1";
 *   const int32_t __kiln_num_kernels;
 *   const char *const __kiln_kernel_names[];
 *   KilnKernelFunc const __kiln_kernel_funcs[];
 *   const int32_t __kiln_num_blobs;
 *   const char *const __kiln_blob_names[];
 *   const unsigned char *const __kiln_blob_data[];
 *   const uint64_t __kiln_blob_sizes[];
 *   void (*__kiln_set_last_error_ptr)(const char *);   -- filled by the loader
 *   int (*__kiln_parallel_launch_ptr)(int (*)(int, int, void *), void *, int);
 *                                                       -- filled by the loader
 * A kernel checks its arguments (count, type codes, rank, dtype, shape) and
 * returns 0, or sets an error through __kiln_set_last_error_ptr and returns
 * -1.  The kernel tables may be absent when __kiln_num_kernels is, and the
 * blob tables likewise; the two pointers are optional and, being written by
 * the loader, must be plain (non-const) data.
 *
 * The parallel ABI: a parallel loop becomes a task function
 * `int task(int task_id, int num_tasks, void *cdata)` that runs its share of
 * the iterations, and the kernel calls
 * `__kiln_parallel_launch_ptr(task, &closure, 0)` (0: one task per pool
 * thread), which is kiln_parallel_launch.  A task reports failure as a
 * kernel does (set the error, return -1) and the launch returns -1.  A
 * kernel should run the tasks serially itself when the pointer is NULL (the
 * .so was loaded without kiln_module_load).
 */
#define KILN_MODULE_MAGIC "kiln-module-v1"
typedef int32_t (*KilnKernelFunc)(KilnValue *args, int32_t *type_codes, int32_t num_args);

#ifdef __cplusplus
}
#endif
#endif
