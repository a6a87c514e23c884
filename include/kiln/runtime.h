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

/* KILN_API marks what the shared libraries export.  Kiln is built with
 * -fvisibility=hidden: everything else in libkiln_runtime.so and
 * libkiln.so (the base layer, the runtime's and the compiler's internals)
 * is private to the library, and tests/python/test_exports.py checks that
 * the exported names are exactly the functions declared in include/kiln/
 * (each of them with KILN_API). */
#if defined(__GNUC__) || defined(__clang__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

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

KILN_API const char *kiln_last_error(void);
/* Set the calling thread's error message (for functions written in other
 * languages and registered with kiln_func_create). */
KILN_API void kiln_set_last_error(const char *msg);
KILN_API const char *kiln_version(void);

/* ---- arrays ---- */

/* A new array, data aligned to 64 bytes, contents undefined.  A CPU array
 * of at least 2 MiB is aligned to 2 MiB and its whole 2 MiB pages are
 * advised MADV_HUGEPAGE (transparent huge pages where the system allows). */
KILN_API int kiln_array_empty(int ndim, const int64_t *shape, DLDataType dtype, DLDevice dev,
                     DLTensor **out);
/* A new array that views another (compact) Kiln array's memory with a new
 * shape of the same number of elements and bytes (the dtype may change to
 * one of the same size); the base is kept alive until the view is freed. */
KILN_API int kiln_array_view(DLTensor *base, int ndim, const int64_t *shape, DLDataType dtype,
                    DLTensor **out);
/* A new array over memory Kiln does not own; deleter(ctx), if not NULL,
 * runs when the array and its views are all freed. */
KILN_API int kiln_array_wrap(void *data, int ndim, const int64_t *shape, DLDataType dtype,
                    DLDevice dev, void (*deleter)(void *), void *ctx, DLTensor **out);
/* Copy between arrays of the same shape and dtype (any strides on from; to
 * must be compact).  These and kiln_array_nbytes take any DLTensor, not only
 * Kiln arrays. */
KILN_API int kiln_array_copy(const DLTensor *from, DLTensor *to);
KILN_API int kiln_array_copy_from_bytes(DLTensor *to, const void *data, size_t nbytes);
KILN_API int kiln_array_copy_to_bytes(const DLTensor *from, void *data, size_t nbytes);
/* Export as a DLManagedTensor (the array stays alive until its deleter). */
KILN_API int kiln_array_to_dlpack(DLTensor *t, DLManagedTensor **out);
/* Take ownership of a DLManagedTensor: its deleter runs once, when the new
 * array and its views are all freed.  On failure the caller keeps it. */
KILN_API int kiln_array_from_dlpack(DLManagedTensor *m, DLTensor **out);
/* Drop the handle of an array made by kiln_array_* (never a foreign
 * DLTensor); the memory goes when no view or DLPack export still uses it. */
KILN_API int kiln_array_free(DLTensor *t);
/* Bytes of a compact tensor: product(shape) * dtype size. */
KILN_API size_t kiln_array_nbytes(const DLTensor *t);

/* ---- string tensors ----
 *
 * DLPack has no string type; Kiln's is dtype {KILN_DL_STRING, 64, 1}
 * ("string"): each element is a const char * to NUL-terminated UTF-8 text
 * (NULL reads as "").  The characters live outside the element array:
 *   - an array from kiln_array_from_strings owns them (one block: the
 *     pointers, then the text);
 *   - in a graph executor, set_input copies an input's text in (it lives
 *     until the next set_input of that input), the text string operators
 *     make lives until the next run, and get_output copies it out;
 *   - kiln_array_copy copies the pointers only.
 * A string array exported with kiln_array_to_dlpack carries this private
 * code, which other frameworks do not read.  docs/strings.md has the
 * design. */
#define KILN_DL_STRING 200
/* A new CPU string array of the given shape holding copies of strs
 * (product(shape) entries; NULL entries, or strs NULL, are ""). */
KILN_API int kiln_array_from_strings(int ndim, const int64_t *shape, const char *const *strs, DLTensor **out);
/* 1 if t's dtype is Kiln's string type. */
KILN_API int kiln_dtype_is_string(DLDataType t);

/* ---- devices ----
 * CPU arrays are host memory.  Arrays on kDLCUDA hold a CUdeviceptr, on
 * kDLOpenCL a cl_mem, as their data; the drivers (libcuda.so.1,
 * libOpenCL.so.1, or $KILN_CUDA_DRIVER / $KILN_OPENCL_LIBRARY) are opened
 * on first use, and a missing driver or device is an error naming it. */

/* *out = 1 if dev is there (its driver loads and has that device id). */
KILN_API int kiln_device_exists(DLDevice dev, int *out);
/* Wait for the device's queued work. */
KILN_API int kiln_device_sync(DLDevice dev);
/* The device type Kiln runs on under this name ("cpu", "cuda", "opencl"),
 * or -1 with an error listing the names when it has no such device; the
 * names are the rows of the runtime's device table. */
KILN_API int kiln_device_type_from_name(const char *name);
/* A DLPack device type's short name ("cpu", "cuda", "opencl", "rocm"), or
 * "unknown": for messages. */
KILN_API const char *kiln_device_name(int device_type);

/* ---- functions ---- */

typedef struct KilnFunction KilnFunction;
typedef struct KilnModule KilnModule;

/* The packed calling convention every Kiln function uses.  Return 0 on
 * success; on failure call kiln_set_last_error and return -1.  A result, if
 * any, goes to ret/ret_code (ret_code KILN_NULL when there is none). */
typedef int (*KilnPackedCFunc)(KilnValue *args, int *type_codes, int num_args, KilnValue *ret,
                               int *ret_code, void *resource);

KILN_API int kiln_func_create(KilnPackedCFunc fn, void *resource, void (*finalizer)(void *resource),
                     KilnFunction **out);
/* Call f.  A string or bytes result (KILN_STR, KILN_BYTES) is copied and
 * stays valid until the next call on this thread; handle results
 * (KILN_MODULE, KILN_FUNC, KILN_NDARRAY) are owned by the caller.  ret and
 * ret_code may be NULL when the result is not wanted (a handle result is
 * then freed).  On failure *ret_code is KILN_NULL. */
KILN_API int kiln_func_call(KilnFunction *f, KilnValue *args, int *type_codes, int num_args,
                   KilnValue *ret, int *ret_code);
KILN_API int kiln_func_free(KilnFunction *f);
/* Take one more reference (each needs its own kiln_func_free). */
KILN_API int kiln_func_retain(KilnFunction *f);

/* Argument checks for packed functions, one wording for the runtime's and
 * the compiler's: the name of a type code ("int", "str", "ndarray"; TVM's
 * TypeCode2Str); 0 when min <= num_args <= max (max -1: no limit), else -1
 * with "fname: expected 2 arguments (a, b), got 3" (params, the parameter
 * list, may be NULL); and the error for argument i: "fname: argument 1
 * (axis) must be WANT, got str (type code 11)" (pname may be NULL; got_desc
 * NULL describes got_code).  Both return -1. */
KILN_API const char *kiln_type_code_name(int code);
KILN_API int kiln_check_argc(const char *fname, int num_args, int min, int max, const char *params);
KILN_API int kiln_arg_error(const char *fname, int i, const char *pname, const char *want, int got_code, const char *got_desc);

/* ---- the global registry ---- */

/* Register f under name; the registry takes a reference.  Registering a
 * name twice is an error unless override is non-zero. */
KILN_API int kiln_func_register_global(const char *name, KilnFunction *f, int override);
/* Look a name up; *out is a new reference, or NULL if there is none. */
KILN_API int kiln_func_get_global(const char *name, KilnFunction **out);
/* All registered names, sorted (valid until the next call on this thread).
 * The runtime registers runtime.module_load(str) -> module and
 * runtime.module_get_function(module, str) -> function. */
KILN_API int kiln_func_list_global_names(int *num, const char ***names);

/* ---- modules ---- */

/* Load a compiled Kiln module (.so).  Errors: missing file, not a shared
 * object, not a Kiln module. */
KILN_API int kiln_module_load(const char *path, KilnModule **out);
KILN_API int kiln_module_get_function(KilnModule *mod, const char *name, KilnFunction **out);
/* The kernel names, in the module's order; valid while mod is alive. */
KILN_API int kiln_module_list_functions(KilnModule *mod, int *num, const char ***names);
/* Extra data embedded in the module under a name (e.g. "graph_json",
 * "params", "lowered_ir"); *data is NULL when absent. */
KILN_API int kiln_module_get_blob(KilnModule *mod, const char *name, const void **data, size_t *size);
KILN_API const char *kiln_module_path(KilnModule *mod);
KILN_API int kiln_module_free(KilnModule *mod);
KILN_API int kiln_module_retain(KilnModule *mod);
/* A model module's embedded params as a TVM params blob (a heap copy;
 * release it with kiln_free): what `relay.save_param_dict` would write.
 * The weights are checked against their checksums first. */
KILN_API int kiln_module_save_params(KilnModule *mod, void **bytes, size_t *size);
/* Check the embedded weights against their checksums, once per module (on
 * the thread pool; later calls return the first answer).  Executors call
 * this before their first run; the file's other bytes are checked by
 * kiln_module_load itself.  An error names the param. */
KILN_API int kiln_module_check_params(KilnModule *mod);


/* ---- thread pool ---- */

/* Number of threads kernels may use, the calling thread included (default:
 * KILN_NUM_THREADS or the number of online cores).  n = 0 restores the
 * default.  Changing it stops the pool's workers; new ones start lazily on
 * the next launch.  Not allowed from inside a parallel task. */
KILN_API int kiln_set_num_threads(int n);
KILN_API int kiln_get_num_threads(void);

/* One task of a parallel loop: task_id in [0, num_tasks).  Return 0, or set
 * an error (kiln_set_last_error) and return non-zero. */
typedef int (*KilnParallelTask)(int task_id, int num_tasks, void *cdata);

/* Run fn(i, num_tasks, cdata) for i in [0, num_tasks) on Kiln's thread pool
 * and wait for all of them; the calling thread takes part.  Each thread
 * owns an equal contiguous range of task ids and runs it in order; a
 * thread that has finished its range takes tasks from the end of another
 * thread's, so num_tasks may exceed the pool size and a late thread does
 * not hold the others up.  num_tasks <= 0 leaves the count to the pool
 * (a few tasks per thread, or a single task when the pool has one thread);
 * a task then covers the share [id * n / num_tasks, (id + 1) * n /
 * num_tasks) of a loop of n iterations.  Tasks must not wait for each
 * other.
 *   - Returns -1 if any task failed, with the first failing task's message
 *     as this thread's error; tasks not yet started after a failure may be
 *     skipped.
 *   - A launch from inside a task (nested parallelism) runs all its tasks
 *     serially in the calling thread.
 *   - Launches from several application threads at once are serialized: the
 *     pool runs one launch at a time and the others wait for it.
 * Workers spin briefly after a launch before they sleep, so back-to-back
 * launches (one per layer) cost a few microseconds each.  A worker that
 * finds itself on the launching thread's core moves to the process's
 * other cores (its affinity mask; only when the pool has no more threads
 * than the process has cores; KILN_THREAD_AFFINITY=0: never). */
KILN_API int kiln_parallel_launch(KilnParallelTask fn, void *cdata, int num_tasks);

/* ---- params blobs (TVM's format) ----
 *
 * A params blob holds named arrays, byte for byte as TVM's SaveParams
 * writes them (little-endian): u64 magic 0xF7E58D4F05049CB7, u64 reserved,
 * the names (u64 count, then u64 length + bytes each), u64 array count, then
 * per array u64 magic 0xDD5E40F096B4A13F, u64 reserved, DLDevice (i32, i32;
 * always cpu 0), i32 ndim, DLDataType (u8 code, u8 bits, u16 lanes),
 * i64 shape[ndim], i64 byte size, the data. */

/* Serialize n named arrays (any device, any strides; names distinct) into a
 * new heap block *bytes of *size bytes; release it with kiln_free. */
KILN_API int kiln_params_save(int n, const char *const *names, DLTensor *const *arrays,
                     void **bytes, size_t *size);
/* Parse a blob into *n names (heap strings) and *n new CPU Kiln arrays, in
 * the blob's order; release both with kiln_params_free.  A truncated or
 * corrupt blob is an error naming the array, the field and what was
 * expected ("params blob is truncated: array 1 ('w'): the data needs 64
 * bytes at offset 180, only 12 remain"); nothing is read past size. */
KILN_API int kiln_params_load(const void *bytes, size_t size, int *n, char ***names,
                     DLTensor ***arrays);
/* The form a compiled module embeds (docs/formats.md): an index (names,
 * dtypes, shapes, offsets, a checksum of each 1 MiB of data) and the data,
 * each array at a 64-byte aligned offset, so an executor uses the weights
 * where the module is mapped.  Two heap blocks; release both with kiln_free. */
KILN_API int kiln_params_save_embedded(int n, const char *const *names, DLTensor *const *arrays,
                              void **index, size_t *index_size, void **data, size_t *data_size);
/* Free what kiln_params_load returned (NULLs are fine). */
KILN_API int kiln_params_free(int n, char **names, DLTensor **arrays);
/* Free a heap block a Kiln call handed to the caller (kiln_params_save's
 * bytes, kiln_graph_json_plan_memory's text).  NULL is fine. */
KILN_API int kiln_free(void *p);

/* ---- graph memory planning ----
 *
 * TVM's GraphPlanMemory over a graph in run order: every entry (node
 * output) gets a storage id; an operator's outputs take storage freed by an
 * entry whose last consumer has already run, on the same device and of a
 * size within 16x of it (the larger of the two sizes is kept), else new
 * storage.  Inputs and parameters get storage of their own, and the graph's
 * outputs (heads) are never released, so neither is ever overwritten.  An
 * operator's outputs never share storage with its own inputs, except where
 * the node allows it (inplace_input: an elementwise kernel whose input dies
 * there; the graph build marks those with the node attr "kiln_inplace").  The graph
 * executor calls this when its JSON has no storage_id; the compiler may
 * call it at build time to write storage_id into the JSON. */

typedef enum KilnPlanNodeKind {
  KILN_PLAN_ARG = 0,   /* an input or parameter (op "null"): storage of its own */
  KILN_PLAN_OP = 1,    /* an operator: its outputs may reuse freed storage */
  KILN_PLAN_ALIAS = 2, /* computes nothing ("__nop": a reshape in place): its one
                        * output shares input 0's storage */
  KILN_PLAN_CONCAT = 3, /* an operator whose one output is its inputs laid end to
                         * end in order (a concatenation along an axis with only
                         * 1s before it): kiln_graph_plan_memory_views may make
                         * the inputs views into its storage; otherwise an OP */
} KilnPlanNodeKind;

typedef struct KilnPlanNode {
  int kind;              /* a KilnPlanNodeKind */
  int num_inputs;        /* entries read */
  const int32_t *inputs; /* their entry ids, produced by earlier nodes */
  int32_t first_output;  /* the outputs are entries first_output .. + num_outputs - 1 */
  int num_outputs;
  int inplace_input;     /* 1 + the index of an input whose storage the (single) output
                          * may take over when this node is that input's last use and
                          * the sizes match (an elementwise kernel that reads each
                          * element before it writes it); 0: none */
} KilnPlanNode;

typedef struct KilnMemoryPlan {
  int num_storage;        /* storage ids used: 0 .. num_storage - 1 */
  uint64_t planned_bytes; /* sum over storage ids of the largest entry using it */
  uint64_t naive_bytes;   /* one buffer per entry: the sum of all entries */
  int num_views;          /* entries placed inside a concatenation's storage */
} KilnMemoryPlan;

/* Plan storage for num_entries entries of entry_bytes[e] bytes on device
 * entry_device[e] (NULL: all on one device); heads are the graph's output
 * entries.  Every entry must be the output of exactly one node.  Writes
 * storage_id[num_entries] and, if plan is not NULL, the totals. */
KILN_API int kiln_graph_plan_memory(int num_nodes, const KilnPlanNode *nodes, int num_entries,
                           const uint64_t *entry_bytes, const int32_t *entry_device,
                           int num_heads, const int32_t *heads, int32_t *storage_id,
                           KilnMemoryPlan *plan);
/* The same, and a concatenation (KILN_PLAN_CONCAT) computes nothing where
 * it can: when its output is not a head and each input is read by it
 * alone, listed once, computed by a KILN_PLAN_OP node, not a head, on the
 * output's device and at an offset (the bytes of the inputs before it) that
 * is a multiple of 64, its storage is taken when its first input is
 * computed (storage freed lately, so the producers write warm lines) and
 * each input is written there in place, a view at byte storage_offset[e]
 * of the output's storage id (0 for every other entry).  The copy it saves
 * is a pass over the output and, at 2 threads, a fork/join; it also left
 * the output warm for its readers, but GoogLeNet (four readers of each)
 * measured 2-7 % faster without it as well. */
KILN_API int kiln_graph_plan_memory_views(int num_nodes, const KilnPlanNode *nodes, int num_entries,
                                          const uint64_t *entry_bytes, const int32_t *entry_device,
                                          int num_heads, const int32_t *heads, int32_t *storage_id,
                                          uint64_t *storage_offset, KilnMemoryPlan *plan);
/* The same on a graph JSON: parse and validate it, plan (with views: a
 * node with attrs.kiln_concat "1" is a KILN_PLAN_CONCAT), and return the
 * JSON (compact) with attrs.storage_id ["list_int", ...] set (replaced if
 * present) to a plan without views, valid for a TVM reader on its own, and,
 * when some entry is a view, Kiln's plan with views in attrs.kiln_storage_id
 * and attrs.kiln_storage_offset, which the executor then uses and *plan
 * describes, in *out, a heap string to release with kiln_free. */
KILN_API int kiln_graph_json_plan_memory(const char *json, size_t len, char **out, KilnMemoryPlan *plan);

/* ---- graph executor ----
 *
 * Runs a compiled model: TVM's graph JSON (nodes of op "null" or "tvm_op"
 * with attrs func_name, num_inputs, num_outputs, flatten_data; arg_nodes,
 * heads, node_row_ptr; attrs shape, dltype, storage_id, device_index) over
 * the kernels of a loaded module.  Node attrs it does not know (Kiln's
 * "kiln_ops", "kiln_task", "kiln_config") are kept for the profiler or
 * ignored.  Creation validates the whole graph (a missing function, an
 * input out of range, a list of the wrong length, a wrong JSON type: an
 * error naming the node), allocates one 64-byte aligned CPU buffer per
 * storage id (sized for the largest entry sharing it; planned with
 * kiln_graph_plan_memory when the JSON has no storage_id), and binds each
 * operator's function and argument tensors once, so run() is a loop of
 * calls.
 *
 * The graph's arguments (arg_nodes) are its parameters (names found in a
 * params blob loaded into the executor) and its inputs (the others); input
 * indices count inputs only, in arg_nodes order.  Each executor owns its
 * buffers and shares only the read-only module, so several executors of one
 * module may run at once on different threads; one executor is not to be
 * used from two threads at once.  An executor's buffers live where its
 * module's kernels run: the CPU, or device 0 of a GPU module's kind
 * (cuda, opencl); set_input and load_params copy there (parameters once),
 * get_output copies back to a CPU array. */

typedef struct KilnGraphExecutor KilnGraphExecutor;

/* What an input or output is.  The pointers stay valid while the executor
 * lives. */
typedef struct KilnTensorInfo {
  const char *name;     /* inputs: the node's name; outputs: the node's, with
                         * ":k" appended for output k of a multi-output node */
  int ndim;
  const int64_t *shape;
  DLDataType dtype;
} KilnTensorInfo;

/* An executor for a loaded module's embedded "graph_json" blob, with the
 * "params" blob (if any) loaded. */
KILN_API int kiln_graph_executor_create(KilnModule *mod, KilnGraphExecutor **out);
/* An executor for graph JSON text (len bytes; len 0: NUL-terminated) over
 * mod's kernels; no params are loaded. */
KILN_API int kiln_graph_executor_create_from_json(const char *json, size_t len, KilnModule *mod,
                                         KilnGraphExecutor **out);
/* The same on device dev of the module's kind (the two above use device
 * 0): storage, params and kernels live on dev.  A device the machine does
 * not have is an error naming how many it has. */
KILN_API int kiln_graph_executor_create_on(KilnModule *mod, DLDevice dev, KilnGraphExecutor **out);
KILN_API int kiln_graph_executor_create_from_json_on(const char *json, size_t len, KilnModule *mod, DLDevice dev,
                                                     KilnGraphExecutor **out);
KILN_API int kiln_graph_executor_free(KilnGraphExecutor *ex);
/* Copy a params blob's arrays into the arguments of the same names (each
 * must match the argument's shape and dtype) and count those arguments as
 * parameters from now on.  Names the graph does not have are skipped, as
 * TVM does. */
KILN_API int kiln_graph_executor_load_params(KilnGraphExecutor *ex, const void *bytes, size_t size);

KILN_API int kiln_graph_executor_num_inputs(const KilnGraphExecutor *ex);
KILN_API int kiln_graph_executor_num_outputs(const KilnGraphExecutor *ex);
KILN_API int kiln_graph_executor_input_info(const KilnGraphExecutor *ex, int index, KilnTensorInfo *info);
KILN_API int kiln_graph_executor_output_info(const KilnGraphExecutor *ex, int index, KilnTensorInfo *info);
/* The index of the input called name; an error lists the inputs. */
KILN_API int kiln_graph_executor_input_index(const KilnGraphExecutor *ex, const char *name, int *index);

/* Copy t into input `index` (or into the argument called name, parameters
 * included).  t's shape and dtype must be the argument's; any device and
 * strides.  Undoes an earlier zero-copy binding of that argument. */
KILN_API int kiln_graph_executor_set_input(KilnGraphExecutor *ex, int index, const DLTensor *t);
KILN_API int kiln_graph_executor_set_input_by_name(KilnGraphExecutor *ex, const char *name,
                                          const DLTensor *t);
/* Make the argument called name read t's memory directly (no copy) until
 * the next set_input of it.  t must match shape and dtype, be compact, on
 * the CPU and 64-byte aligned, and outlive its use.  A way for several
 * executors to share one copy of the weights. */
KILN_API int kiln_graph_executor_set_input_zero_copy(KilnGraphExecutor *ex, const char *name, DLTensor *t);
/* Copy input `index` as the executor holds it into a new Kiln array. */
KILN_API int kiln_graph_executor_get_input(KilnGraphExecutor *ex, int index, DLTensor **out);

/* Run every operator once, in order.  An operator's failure is an error
 * naming the node: "node 7 ('fused_add_1', function 'fused_add'): ...".
 * On a GPU the kernels are queued and run asynchronously, as in TVM:
 * get_output (every copy back) waits for them, and a kernel that failed
 * is reported there by its name. */
KILN_API int kiln_graph_executor_run(KilnGraphExecutor *ex);
/* Wait until the executor's device has run every queued kernel (nothing
 * on the CPU); a kernel that failed is the error, by its name. */
KILN_API int kiln_graph_executor_sync(KilnGraphExecutor *ex);

/* Output `index` (of the graph's heads) as a new Kiln array (a copy). */
KILN_API int kiln_graph_executor_get_output(KilnGraphExecutor *ex, int index, DLTensor **out);
/* Copy output `index` into the caller's array (same shape and dtype,
 * compact). */
KILN_API int kiln_graph_executor_copy_output(KilnGraphExecutor *ex, int index, DLTensor *to);

/* The memory plan in use: storage count, planned bytes, and the bytes one
 * buffer per tensor would take.  *planned_here is 1 when the executor
 * planned it (the JSON had no storage_id); it may be NULL. */
KILN_API int kiln_graph_executor_memory(const KilnGraphExecutor *ex, KilnMemoryPlan *plan,
                               int *planned_here);

/* ---- sequences and optionals at the graph's boundary ----
 *
 * A model's input or output may be a sequence of tensors (elements may
 * differ in shape) or an optional (empty, or holding a tensor or a
 * sequence).  Its structure -- a sequence's length, whether an optional
 * holds a value -- is fixed when the model is compiled (kiln compile
 * --input-shapes "s:seq(3),o:none"; docs/sequences.md); its elements are
 * ordinary tensor inputs and outputs: input element i of sequence s is the
 * input named "s[i]" (an optional tensor is the input named like the
 * optional), bound like any input (their sizes from the data where the
 * compile left them symbolic), and an output value's tensors are
 * consecutive outputs.  The calls below see the model's values; the
 * tensor calls above keep seeing the tensors.  A model without sequences
 * or optionals has one value per tensor, in the same order. */

typedef enum KilnValueKind {
  KILN_VALUE_TENSOR = 0,
  KILN_VALUE_SEQUENCE = 1,
  KILN_VALUE_OPTIONAL = 2,
} KilnValueKind;

/* A model input or output.  The pointers stay valid while the executor
 * lives. */
typedef struct KilnValueInfo {
  const char *name;      /* the model's name */
  KilnValueKind kind;
  KilnValueKind holds;   /* an optional holding a value: TENSOR or SEQUENCE;
                          * otherwise kind */
  int has_value;         /* an optional: 0 when compiled empty; otherwise 1 */
  int num_tensors;       /* the tensors carrying it: 1 for a tensor, a
                          * sequence's length, 0 for an empty optional */
  const char *const *tensor_names; /* inputs: their input names; outputs:
                                    * the elements' names ("y[0]", ...) */
  int first_tensor;      /* outputs: the index of its first tensor among the
                          * outputs (the others follow); inputs: -1 */
} KilnValueInfo;

KILN_API int kiln_graph_executor_num_input_values(const KilnGraphExecutor *ex);
KILN_API int kiln_graph_executor_num_output_values(const KilnGraphExecutor *ex);
KILN_API int kiln_graph_executor_input_value_info(const KilnGraphExecutor *ex, int index, KilnValueInfo *info);
KILN_API int kiln_graph_executor_output_value_info(const KilnGraphExecutor *ex, int index, KilnValueInfo *info);
/* The index of the input value called name; an error lists them. */
KILN_API int kiln_graph_executor_input_value_index(const KilnGraphExecutor *ex, const char *name, int *index);
/* Set input value `index`: present 0 gives an empty optional (tensors
 * ignored); otherwise tensors[0 .. n-1] are a tensor (n 1), a sequence's
 * elements, or what an optional holds.  The structure must be the one
 * compiled (an error names the input, what it was compiled as and how to
 * compile for this one); each tensor is copied as set_input does (its
 * dtype and shape checked, an error naming the element). */
KILN_API int kiln_graph_executor_set_input_value(KilnGraphExecutor *ex, int index, int present,
                                                 const DLTensor *const *tensors, int n);

/* ---- artifacts: a module read as a file, no code run ----
 *
 * kiln_module_load dlopens a module, which runs the loader on it.  An
 * artifact is the same .so opened as data: its ELF section table is parsed
 * and its checksum checked (every byte but the weights, as
 * kiln_module_load does), and its embedded blobs, kernel names and graph
 * summary read from the sections -- no dlopen, nothing of its code run.
 * `kiln inspect` uses it.  The layout is in docs/formats.md. */

typedef struct KilnArtifact KilnArtifact;

typedef struct KilnArtifactInfo {
  int num_inputs;                  /* the graph's inputs (not params), arg_nodes order */
  const KilnTensorInfo *inputs;
  int num_outputs;                 /* its heads */
  const KilnTensorInfo *outputs;
  int num_params;                  /* embedded params, used in place from the file */
  uint64_t param_bytes;            /* their data */
  KilnMemoryPlan plan;             /* what an executor allocates: inputs and
                                    * activations (params excluded: they are mapped) */
  int num_kernels;
  const char *const *kernels;      /* kernel names, in the module's order */
  int num_blobs;
  const char *const *blob_names;   /* "graph_json", "param_index", ... */
  const uint64_t *blob_sizes;
} KilnArtifactInfo;

/* Open path, check its checksum; errors: not an ELF file, not a Kiln
 * artifact, corrupt (naming what does not match). */
KILN_API int kiln_artifact_open(const char *path, KilnArtifact **out);
/* What it holds; *info lives as long as a.  A module without a graph has
 * no inputs or outputs. */
KILN_API int kiln_artifact_info(KilnArtifact *a, const KilnArtifactInfo **info);
/* An embedded blob's bytes (read-only, mapped); *data NULL when absent. */
KILN_API int kiln_artifact_get_blob(KilnArtifact *a, const char *name, const void **data, size_t *size);
/* Check the weights too (what kiln_module_check_params does at first run). */
KILN_API int kiln_artifact_verify_params(KilnArtifact *a);
KILN_API int kiln_artifact_free(KilnArtifact *a);
/* Write the checksum of a freshly linked module into its .kiln.checksum
 * section (the compiler driver calls this after the link). */
KILN_API int kiln_artifact_seal(const char *path);

/* ---- debug executor (profiling) ----
 *
 * kiln_debug_profile runs an executor's graph operator by operator with a
 * monotonic clock read around each call, in the shape of TVM's
 * time_evaluator: one warm-up run, then `repeat` measurements of `number`
 * runs each; a node's time in a measurement is its mean over the `number`
 * runs, and its reported time is the mean over the measurements.  Outputs
 * are left as a plain run leaves them.
 *
 * The report has one row per operator node (not "null" nodes, not
 * "__nop"s): the columns of TVM's debug runtime table (Node Name, Ops,
 * Time(us), Time(%), Shape, Inputs, Outputs) - Ops is, as there, the
 * function the node calls, so nodes sharing a kernel show the same name -
 * then Op List, the node attr "kiln_ops" (the graph ops fused into the
 * kernel; the function name if absent), and Task, from the node attrs
 * "kiln_task" and "kiln_config" ("-" when absent). */

typedef struct KilnProfile KilnProfile;

typedef struct KilnProfileRow {
  int node;              /* index in the graph's nodes */
  const char *name;      /* Node Name */
  const char *func_name; /* the module function it calls */
  const char *ops;       /* Ops: as in TVM's debug executor, the kernel (function)
                          * name; identical fused functions share one */
  const char *task;      /* Task: "conv2d_NCHWc.x86 [...] · records.json:12", or "-" */
  double time_us;        /* Time(us): mean over the measurements */
  double std_us;         /* standard deviation over the measurements */
  double percent;        /* Time(%): of the sum of all rows' times */
  double start_us;       /* mean start of the call from the start of a run */
  int ndim;              /* Shape: of output 0 */
  const int64_t *shape;
  DLDataType dtype;      /* of output 0 */
  int num_inputs, num_outputs; /* Inputs, Outputs */
  const char *op_list;   /* Op List: the graph ops fused into the kernel,
                          * "nn.conv2d,add,nn.relu" (the func_name when unknown) */
} KilnProfileRow;

typedef enum KilnProfileFormat {
  KILN_PROFILE_TABLE = 0, /* TVM's table, sorted by time (descending), then Total_time */
  KILN_PROFILE_CSV = 1,   /* the table's header and rows, in its order, RFC 4180 quoting */
  KILN_PROFILE_TRACE = 2, /* Chrome trace JSON (chrome://tracing, Perfetto): an array of
                           * complete events {"name","cat","ph":"X","ts","dur","pid",
                           * "tid","args"} in run order, ts/dur in us */
  KILN_PROFILE_JSON = 3,  /* {"number","repeat","total_us","run_us","rows":[{...}]},
                           * rows in run order: the rows for Python */
} KilnProfileFormat;

/* Profile ex (number, repeat >= 1) into a new report. */
KILN_API int kiln_debug_profile(KilnGraphExecutor *ex, int number, int repeat, KilnProfile **out);
/* Rows in run order; a row's pointers live as long as the report.
 * kiln_profile_row gives NULL (and an error) for an index out of range. */
KILN_API int kiln_profile_num_rows(const KilnProfile *p);
KILN_API const KilnProfileRow *kiln_profile_row(const KilnProfile *p, int index);
/* The sum of the rows' times, and the mean wall time of one whole run
 * measured around the run (timers included), in us. */
KILN_API double kiln_profile_total_us(const KilnProfile *p);
KILN_API double kiln_profile_run_us(const KilnProfile *p);
/* The report as text; valid while p lives. */
KILN_API int kiln_profile_format(KilnProfile *p, KilnProfileFormat format, const char **text);
/* The same, written to a file. */
KILN_API int kiln_profile_write(KilnProfile *p, KilnProfileFormat format, const char *path);
KILN_API int kiln_profile_free(KilnProfile *p);

/* ---- graph executor in the registry ----
 *
 * For bindings (Python), the executor and the profile travel as opaque
 * handles (type code KILN_HANDLE) that the caller frees with the matching
 * ".free".  "tensor" below accepts KILN_DLTENSOR or KILN_NDARRAY; "input"
 * is an int (input index) or a str (argument name).
 *   runtime.graph_executor.create(module)                       -> handle
 *   runtime.graph_executor.create(str json, module[, bytes params]) -> handle
 *   runtime.graph_executor.free(handle)
 *   runtime.graph_executor.load_params(handle, bytes)
 *   runtime.graph_executor.set_input(handle, input, tensor)
 *   runtime.graph_executor.set_input_zero_copy(handle, input, tensor)
 *   runtime.graph_executor.get_input(handle, input)             -> ndarray
 *   runtime.graph_executor.run(handle)
 *   runtime.graph_executor.get_output(handle, int)              -> ndarray
 *   runtime.graph_executor.get_output(handle, int, tensor)         (copy into)
 *   runtime.graph_executor.get_num_inputs(handle)               -> int
 *   runtime.graph_executor.get_num_outputs(handle)              -> int
 *   runtime.graph_executor.get_input_name(handle, int)          -> str
 *   runtime.graph_executor.get_output_name(handle, int)         -> str
 *   runtime.graph_executor.get_input_shape(handle, int)         -> ndarray (int64)
 *   runtime.graph_executor.get_output_shape(handle, int)        -> ndarray (int64)
 *   runtime.graph_executor.get_input_dtype(handle, int)         -> str
 *   runtime.graph_executor.get_output_dtype(handle, int)        -> str
 *   runtime.graph_executor.get_num_values(handle, int output)   -> int
 *   runtime.graph_executor.get_value_info(handle, int output, int) -> str
 *       "KIND HOLDS HAS_VALUE NUM_TENSORS FIRST_TENSOR\nNAME\nTENSOR..."
 *   runtime.graph_executor.set_input_value(handle, int, int present, tensor...)
 *   runtime.graph_executor.get_planned_bytes(handle)            -> int
 *   runtime.graph_executor.get_naive_bytes(handle)              -> int
 *   runtime.graph_plan_memory(str json)                         -> str json
 *   runtime.debug_executor.profile(handle, int number, int repeat) -> handle
 *   runtime.profile.format(handle, str "table"|"csv"|"trace"|"json") -> str
 *   runtime.profile.free(handle)
 */

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
 *   void *(*__kiln_workspace_alloc_ptr)(size_t);       -- optional, filled by the
 *   void (*__kiln_workspace_free_ptr)(void *);            loader: scratch buffers
 *                                                          kept from run to run
 * A kernel checks its arguments (count, type codes, rank, dtype, shape) and
 * returns 0, or sets an error through __kiln_set_last_error_ptr and returns
 * -1.  The kernel tables may be absent when __kiln_num_kernels is, and the
 * blob tables likewise; the two pointers are optional and, being written by
 * the loader, must be plain (non-const) data.
 *
 * A module built for a GPU also exports, for the loader to fill:
 *   void *__kiln_device_module;
 *   int (*__kiln_device_launch_ptr)(void *module, int32_t device_id, int32_t kernel,
 *                                   const int64_t extents[6], KilnValue *args, int32_t nargs);
 *   void *(*__kiln_device_alloc_ptr)(void *module, int32_t device_id, uint64_t nbytes);
 *   void (*__kiln_device_free_ptr)(void *module, int32_t device_id, void *ptr);
 * and carries its kernels as blobs: "kiln_device" ("kiln-device-v1 cuda|opencl",
 * then "kernel <name> <nparams> <type>..." a line, "handle" for a buffer),
 * "kiln_device_source" (CUDA C or OpenCL C) and, for CUDA, "kiln_device_ptx".
 * A launch's extents are grid x, y, z then block x, y, z; buffers pass as
 * device pointers (v_handle), scalars as v_int64 / v_float64.
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
