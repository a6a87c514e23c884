/*
 * runtime_internal.h - what the runtime's files share with each other.
 *
 * The runtime implements include/kiln/runtime.h on top of the base layer
 * only (errors, heap helpers, maps): a deployed model links
 * libkiln_runtime and its own .so, never the compiler.  Each banner below
 * names a file and lists what it exports to the rest of the runtime; the
 * public functions each file implements are named in its opening comment.
 */
#ifndef KILN_RUNTIME_INTERNAL_H
#define KILN_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/base.h"
#include "kiln/runtime.h"

/* ===== error.c ===== */
/* kiln_last_error, kiln_set_last_error, kiln_version: no internal exports. */

/* ===== device.c ===== */

typedef struct KilnDeviceModule KilnDeviceModule;

/* One device type's primitives.  The table in device.c is indexed by
 * DLDeviceType: the CPU, CUDA (cuda.c) and OpenCL (opencl.c).  A GPU API
 * loads its driver on first use (dlopen), so the CPU path neither links
 * nor needs any GPU library; a missing driver or device is an error that
 * names what is missing. */
typedef struct KilnDeviceAPI {
  const char *name; /* for messages: "cpu", "cuda" */
  /* nbytes of memory aligned to `align` on dev (at least one byte, so the
   * pointer is never NULL); NULL with an error on failure. */
  void *(*alloc)(DLDevice dev, size_t nbytes, size_t align);
  void (*free)(DLDevice dev, void *ptr);
  /* Copy nbytes of contiguous memory where at least one side is on this
   * API's device (the other may be the CPU). */
  int (*copy)(const void *from, DLDevice from_dev, void *to, DLDevice to_dev, size_t nbytes);
  /* GPU APIs only (NULL on the CPU).  Wait for the device's work. */
  int (*sync)(DLDevice dev);
  /* Whether device dev exists (0/1), without setting an error. */
  int (*exists)(DLDevice dev);
  /* Build or load a module's kernels for device dev: a handle passed back
   * to launch and unload, or NULL + error (a build log on failure). */
  void *(*module_load)(const KilnDeviceModule *m, int dev_id);
  /* Run kernel k of a loaded module over ext (grid x/y/z, block x/y/z)
   * with its arguments (buffers as device pointers, scalars as KilnValue
   * int64/float64, converted to the kernel's parameter types). */
  int (*launch)(const KilnDeviceModule *m, void *loaded, int dev_id, int k, const int64_t *ext,
                const KilnValue *args);
  void (*module_unload)(void *loaded);
} KilnDeviceAPI;

/* The API of dev's type, or NULL with "device type N (...) is not supported
 * yet". */
const KilnDeviceAPI *kiln_device_api(DLDevice dev);

/* ===== cuda.c, opencl.c ===== */

/* A GPU driver library opened on first use (cuda.c, opencl.c): the
 * library ($env, else lib) is dlopen'ed once under the driver's lock, its
 * open hook resolves the entry points and opens the devices, and a
 * failure is remembered with its message, so every later call reports
 * the same reason without trying again.  Define one per driver with
 * KILN_DRIVER_INIT; the hook fills why and returns -1 on failure, else the
 * number of devices it opened (at least 1).  kiln_driver_device checks
 * the library and a device id: 0, or -1 with the error set unless quiet.
 * name (may be NULL) names device i in the "no device N" message. */
typedef struct KilnDriver {
  const char *prefix; /* "cuda": starts every message */
  const char *kind;   /* "CUDA": "this machine has 2 CUDA devices" */
  const char *what;   /* "CUDA driver": "cannot load the CUDA driver X" */
  const char *hint;   /* after "(dlerror); ": how to install it */
  const char *env, *lib;
  int (*open)(void *dl, const char *lib, char *why, size_t why_size);
  const char *(*name)(int i);
  pthread_mutex_t lock;
  int state; /* 0 not tried, 1 ready, -1 failed */
  int ndev;
  char why[512];
} KilnDriver;
#define KILN_DRIVER_INIT(prefix, kind, what, hint, env, lib, open, name)                             \
  {prefix, kind, what, hint, env, lib, open, name, PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}}
int kiln_driver_device(KilnDriver *d, int id, bool quiet);

/* The kernels a device has launched and not yet been waited for (GPU
 * launches are asynchronous: cuda.c): their names in launch order, so an
 * error found at the next copy or synchronize can say which kernels may
 * have caused it.  A driver keeps one per device under its launch lock
 * and waits once KILN_MAX_PENDING are queued. */
#define KILN_MAX_PENDING 4096
typedef struct KilnPending {
  int n, cap;
  char **names; /* heap */
} KilnPending;
void kiln_pending_push(KilnPending *p, const char *name);
void kiln_pending_clear(KilnPending *p);
/* "kernel 'a'" for one, "one of the 3 kernels 'a', 'b', 'c'" (at most 4
 * names, then "... and N more"), into buf; returns buf. */
const char *kiln_pending_describe(const KilnPending *p, char *buf, size_t size);

extern const KilnDeviceAPI kiln_cuda_api;
extern const KilnDeviceAPI kiln_opencl_api;

/* ===== device_module.c ===== */

/* The device code a module carries (blobs "kiln_device" - the kernels'
 * parameter lists, see codegen_gpu_meta - "kiln_device_source", and for
 * CUDA "kiln_device_ptx"), loaded per device on first launch. */
#define KILN_MAX_DEVICES 16
#define KILN_MAX_PARAMS 64
typedef struct KilnDeviceKernelInfo {
  const char *name;
  int nparams;
  DLDataType ptype[KILN_MAX_PARAMS]; /* handle: kDLOpaqueHandle */
} KilnDeviceKernelInfo;

struct KilnDeviceModule {
  int device_type;                /* kDLCUDA or kDLOpenCL */
  const KilnDeviceAPI *api;
  const char *path;               /* the module's file, for messages */
  const char *source;             /* device source (NUL-terminated copy) */
  const char *ptx;                /* CUDA: PTX (NUL-terminated copy) or NULL */
  int num_kernels;
  KilnDeviceKernelInfo *kernels;
  void *loaded[KILN_MAX_DEVICES]; /* per device id: the api's handle */
  void *lock;                     /* a pthread mutex guarding loaded */
};

/* If the .so has device code, make its device module and fill the
 * generated code's device pointers; *out NULL for a CPU module. */
int kiln_device_module_attach(void *dl, const char *path, int num_blobs,
                              const char *const *blob_names, const unsigned char *const *blob_data,
                              const uint64_t *blob_sizes, KilnDeviceModule **out);
void kiln_device_module_free(KilnDeviceModule *m);

/* ===== ndarray.c ===== */

/* Alignment of array memory kiln_array_empty allocates, in bytes. */
#define KILN_ARRAY_ALIGN 64

/* 0 if Kiln can store arrays of dtype t, else -1 with a message naming it. */
int kiln_dtype_check(DLDataType t);
/* Bytes one element of t takes: (bits * lanes + 7) / 8. */
size_t kiln_dtype_bytes(DLDataType t);
/* t as text ("float32", "int8x4", "bool") into buf; returns buf. */
const char *kiln_dtype_format(DLDataType t, char *buf, size_t size);
/* Whether t's elements are laid out row-major without gaps (strides NULL,
 * or equal to the compact strides where the extent is above 1). */
int kiln_tensor_is_compact(const DLTensor *t);

/* ===== function.c ===== */

struct KilnFunction {
  KilnPackedCFunc fn;               /* the code */
  void *resource;                   /* passed to fn on each call */
  void (*finalizer)(void *resource); /* runs when the last reference goes */
  atomic_int refs;                  /* references held; freed at zero */
};

/* Results that "stay valid until the next call on this thread": one block
 * per thread, freed when the thread exits. */
typedef struct KilnThreadStore {
  char *ret_str;        /* copy of the last KILN_STR result of kiln_func_call */
  KilnBytes ret_bytes;  /* copy of the last KILN_BYTES result (data is heap) */
  void *names;          /* kiln_func_list_global_names' pointers and strings */
} KilnThreadStore;

KilnThreadStore *kiln_thread_store(void);

/* kiln_type_code_name, kiln_check_argc, kiln_arg_error: kiln/runtime.h.
 * 0 if there are `expected` arguments with the type codes `want`, else -1
 * with "fname: argument 1 must be str (type code 11), got ...". */
int kiln_check_args(const char *fname, const int *type_codes, int num_args, int expected,
                    const int *want);

/* ===== registry.c ===== */
/* kiln_func_register_global, kiln_func_get_global,
 * kiln_func_list_global_names: no internal exports.  The built-in global
 * functions are listed there, registered on the first use of the registry. */

/* ===== artifact.c ===== */

/* XXH64, streaming (the reference algorithm: kiln_xxh64("", 0, 0) is
 * 0xEF46DB3751D8E999). */
typedef struct KilnXXH64 {
  uint64_t v[4], seed, total;
  unsigned char buf[32];
  unsigned nbuf;
} KilnXXH64;
void kiln_xxh64_init(KilnXXH64 *s, uint64_t seed);
void kiln_xxh64_update(KilnXXH64 *s, const void *data, size_t n);
uint64_t kiln_xxh64_digest(const KilnXXH64 *s);
uint64_t kiln_xxh64(const void *data, size_t n, uint64_t seed);
/* Check a module file's checksum (everything but the weights) before it is
 * loaded; 0 for a file with no .kiln.* section (a hand-written module). */
int kiln_artifact_check_file(const char *path);

/* ===== params_embedded.c ===== */

/* A parsed param_index blob; the arrays' data pointers are NULL (offsets
 * into param_data are in offsets). */
typedef struct KilnParamIndex {
  int num;
  const char **names;
  DLTensor *tensors;                 /* shape, dtype, device; data NULL */
  uint64_t *offsets;                 /* into the data, multiples of 64 */
  uint64_t data_size, chunk_bytes, num_chunks;
  const unsigned char *chunk_hashes; /* num_chunks little-endian u64, in the index */
} KilnParamIndex;

/* Parse and validate an index describing data_size bytes of data. */
int kiln_param_index_parse(const void *bytes, size_t size, size_t data_size, KArena *arena,
                           KilnParamIndex *pi);
/* Check the data against the chunk hashes (on the thread pool if parallel);
 * an error names the chunk and the param in it. */
int kiln_param_chunks_check(const KilnParamIndex *pi, const void *data, int parallel);

/* ===== module.c ===== */

/* Packed forms of the module API, registered as global functions so that
 * modules travel through the calling convention as KILN_MODULE values:
 *   runtime.module_load(str path) -> KILN_MODULE
 *   runtime.module_get_function(KILN_MODULE mod, str name) -> KILN_FUNC */
int kiln_module_packed_load(KilnValue *args, int *type_codes, int num_args, KilnValue *ret,
                            int *ret_code, void *resource);
int kiln_module_packed_get_function(KilnValue *args, int *type_codes, int num_args,
                                    KilnValue *ret, int *ret_code, void *resource);

/* The module's embedded params (NULL if it has none) and their data, in
 * the mapped file: read-only, checked by kiln_module_check_params. */
const KilnParamIndex *kiln_module_params(KilnModule *mod, const unsigned char **data);
/* The device a module's kernels run on: {kDLCPU, 0}, or device 0 of its
 * GPU kind (the graph executor's buffers live there). */
DLDevice kiln_module_device(const KilnModule *mod);

/* ===== params.c ===== */
/* Besides kiln_params_save, _load, _free and kiln_free: */

/* The checks params_save makes on its arguments (names present and
 * distinct, arrays present, ndim and dtype valid); errors start "fname: ". */
int kiln_params_check_arrays(const char *fname, int n, const char *const *names,
                             DLTensor *const *arrays);

/* ===== memory_plan.c ===== */
/* kiln_graph_plan_memory: no internal exports. */

/* ===== graph_json.c ===== */

/* One node of a graph JSON, validated.  Strings live in the graph's arena. */
typedef struct GraphNode {
  const char *name;
  int is_op;               /* op "tvm_op"; 0 for "null" (an argument) */
  const char *func_name;   /* attrs.func_name (tvm_op), else NULL */
  const char *kiln_ops;    /* attrs.kiln_ops, kiln_task, kiln_config, or NULL */
  const char *kiln_task;
  const char *kiln_config;
  const char *kiln_output_name; /* attrs.kiln_output_name: the model's name of this output */
  const char *kiln_host;   /* attrs.kiln_host: a host function's attributes (JSON), or NULL
                            * for a kernel of the module (strings.c) */
  int num_inputs;          /* length of inputs */
  int32_t *inputs;         /* entry ids */
  int num_outputs;         /* attrs.num_outputs (1 for "null") */
  int flatten_data;        /* attrs.flatten_data */
  int inplace_input;       /* 1 + attrs.kiln_inplace, else 0 (KilnPlanNode's field) */
  bool concat_view;        /* attrs.kiln_concat "1": its inputs lie end to end in its
                            * output (KILN_PLAN_CONCAT) */
  int32_t first_entry;     /* node_row_ptr[node]: its outputs are the next num_outputs entries */
  /* attrs.kiln_report: a data-dependent host function (datadep.c) reports
   * the size of this dimension of its output, a symbol the executor binds
   * after the call; attrs.kiln_report_cap: its upper bound, a postfix
   * expression over the other symbols.  -1 and NULL otherwise.
   * report_grow (attrs.kiln_report_grow "1"): the cap is a first guess
   * (nothing bounds the size before the run): a larger size reported
   * grows the output and the call is made again (grow-and-retry). */
  int report_dim;
  const char *report_cap;
  bool report_grow;
} GraphNode;

/* A parsed graph JSON. */
typedef struct JsonGraph {
  int num_nodes;
  GraphNode *nodes;
  int num_args;
  int32_t *arg_nodes;      /* node ids */
  int num_heads;
  int32_t *heads;          /* entry ids */
  int num_entries;
  int *entry_ndim;         /* attrs.shape */
  int64_t **entry_shape;
  DLDataType *entry_dtype; /* attrs.dltype */
  int32_t *storage_id;     /* attrs.storage_id, or NULL when absent */
  uint64_t *storage_offset; /* attrs.kiln_storage_offset (bytes), or NULL when absent */
  int32_t *device_type;    /* attrs.device_index, or NULL when absent */
  int32_t *entry_node;     /* the node producing each entry */
  /* symbolic sizes (attrs.kiln_symbols, kiln_sym_shape; graph_sym.c):
   * none in a static graph */
  int num_syms;
  const char **sym_names;
  int64_t *sym_lo, *sym_hi; /* inclusive bounds */
  /* run-time shape values ("NAME:lo:hi:ENTRY:ELEM"): per symbol, the input
   * entry whose data element sym_value_elem it is, or -1 for a size */
  int32_t *sym_value_entry, *sym_value_elem;
  /* a float value ("NAME:lo:hi:ENTRY:ELEM:SCALE"): the symbol is
   * floor(x * SCALE) of the float element x; 0 for an integer value */
  double *sym_value_scale;
  const char **entry_sym;  /* per entry: dims' postfix expressions joined by ';', or NULL */
  /* the batch as an outer loop (attrs.kiln_batch, kiln_batch_entry): the
   * kernels are batch-1 ones, called once per sample */
  const char *batch_name;  /* NULL: none */
  int64_t batch_lo, batch_hi;
  uint8_t *entry_batch;    /* per entry: carries the batch in dimension 0 */
  int num_variants;        /* attrs.kiln_batch_variants: batched variants of */
  int64_t *variant_batch;  /* the graph at these batches (blobs graph_json_b<K>) */
  /* the model's inputs and outputs as values (attrs.kiln_values,
   * graph_values.c): "in|out KIND NAME" lines, none when every value is a
   * tensor */
  int num_value_lines;
  const char **value_lines;
} JsonGraph;

/* Parse and validate graph JSON text (len bytes, not necessarily
 * NUL-terminated) into g, allocating from arena.  Errors name the node or
 * the attribute and what was expected. */
int kiln_graph_parse(const char *json, size_t len, KArena *arena, JsonGraph *g);
/* Parse a dtype name as TVM writes it ("float32", "int8", "bool",
 * "float32x4"); -1 with an error if it is not one. */
int kiln_dtype_parse(const char *s, DLDataType *t);
/* Bytes of entry e (its shape times its dtype's size). */
uint64_t kiln_graph_entry_bytes(const JsonGraph *g, int e);
/* Plan g's memory (kiln_graph_plan_memory_views over its nodes; views only
 * in a static graph without the batch loop) into storage_id and
 * storage_offset. */
int kiln_graph_plan(const JsonGraph *g, int32_t *storage_id, uint64_t *storage_offset,
                    KilnMemoryPlan *plan);
/* The storage id and byte offset of every entry, ids dense from 0: the
 * JSON's storage_id renumbered in order of first use (and its
 * kiln_storage_offset), or a plan made here (*planned_here 1) when the JSON
 * has none. */
int kiln_graph_storage_ids(const JsonGraph *g, int32_t *storage_id, uint64_t *storage_offset,
                           int *num_storage, int *planned_here);
/* Mark in is_view (one byte per entry) the views of a storage plan: the
 * inputs of a kiln_concat node that share its output's storage id; returns
 * how many (KilnMemoryPlan.num_views). */
int kiln_graph_view_inputs(const JsonGraph *g, const int32_t *storage_id, uint8_t *is_view);
/* "(1, 3, 224, 224)"; with python_tuple, a 1-D shape is "(n,)" as Python
 * prints it (the profile table's style). */
void kiln_put_shape(StrBuf *sb, int ndim, const int64_t *shape, int python_tuple);

/* ===== graph_executor.c ===== */

/* One operator call, bound once at load. */
typedef struct GraphOp {
  int node;                 /* index in the graph's nodes */
  KilnFunction *fn;         /* a reference to the module function */
  KilnPackedCFunc call;     /* fn->fn and fn->resource, called directly by run */
  void *resource;
  int nargs;                /* inputs then outputs */
  int extra;                /* host functions: 2 more arguments after the tensors
                             * (the attributes, the string heap: strings.c) */
  KilnValue *args;          /* v_handle: &tensors[i] */
  int *codes;               /* all KILN_DLTENSOR */
  DLTensor *tensors;        /* the argument tensors: entries, flat if flatten_data */
  int32_t *eids;            /* the entry of each argument */
  int batched;              /* called once per sample (graph_sym.c) */
  /* a data-dependent host function (datadep.c): 1 + the symbol its
   * output's reported dimension is (0: none), and the size it reported
   * (its last extra argument points here); the executor binds the symbol
   * after the call (kiln_graph_sym_report) */
  int reports;
  int64_t reported;
  /* late_syms[late_first, + late_count): the symbols this op binds first
   * (its reported size, or run-time values its output holds); after: the
   * executor has work after the call (kiln_graph_sym_report) */
  int late_first, late_count;
  int after;
  uint64_t *sample_bytes;   /* batched: per argument, one sample's bytes (0: not batched) */
} GraphOp;

/* Type tags of the handles the registry hands out as KILN_HANDLE: the first
 * member of an executor and of a profile, as every compiler object begins
 * with its KObjKind.  A packed function checks the tag of the handle it
 * gets (kiln_handle_check), so a profile passed where an executor is
 * expected is an error naming both, not a crash; freeing clears it. */
typedef enum KilnHandleTag {
  KILN_TAG_NONE = 0,
  KILN_TAG_EXECUTOR = 0x4b4c4e45, /* "KLNE" */
  KILN_TAG_PROFILE = 0x4b4c4e50,  /* "KLNP" */
} KilnHandleTag;
/* 0 if argument i of fname is a live handle with the tag, else -1 with
 * "fname: argument 0 must be an executor handle (type code 3), got a
 * profile handle" (what: "an executor handle"). */
int kiln_handle_check(const char *fname, const KilnValue *args, const int *codes, int i, KilnHandleTag tag,
                      const char *what);

/* One binding of a symbolic graph's sizes, planned once (graph_sym.c):
 * the symbols' values (on the batch loop, the batch), every symbolic
 * entry's dimensions at them, and the bytes each storage id needs.  The
 * executor keeps the last KILN_SYM_PLANS bindings, least recently used
 * evicted; set_input with a binding it holds evaluates no expression. */
#define KILN_SYM_PLANS 8
typedef struct KilnSymPlan {
  int64_t *key;    /* num_syms values (1 on the batch loop) */
  int64_t *dims;   /* the symbolic entries' dimensions, entry by entry; NULL on the batch loop */
  uint64_t *bytes; /* per storage id */
  uint64_t used;   /* sym_tick at the last use */
} KilnSymPlan;

/* What the symbolic executor did, for tests and the debug profile. */
typedef struct KilnSymStats {
  uint64_t plan_hits;   /* set_input found the binding's plan */
  uint64_t plan_misses; /* ... evaluated the expressions and cached the plan */
  uint64_t evictions;   /* plans dropped for a newer binding */
  uint64_t reallocs;    /* storage buffers allocated after creation (buffers only grow) */
  uint64_t regrows;     /* calls made again after a size larger than the guess (report_grow) */
  uint64_t variant_runs;    /* runs of a batched variant (kiln_graph_batch_run) */
  uint64_t variant_samples; /* ... and the samples they took */
} KilnSymStats;

struct KilnGraphExecutor {
  uint32_t tag;             /* KILN_TAG_EXECUTOR */
  KArena *arena;            /* the graph, the ops, names: freed at once */
  KilnModule *mod;          /* a reference */
  DLDevice dev;             /* where storage lives and kernels run */
  JsonGraph g;
  DLTensor *entries;        /* one tensor per entry, data in its storage */
  int32_t *storage_id;      /* the plan in use (g.storage_id or planned here) */
  uint64_t *storage_offset; /* per entry: its byte offset in its storage (a view) */
  int num_storage;
  void **storage;           /* the buffers, 64-byte aligned */
  uint8_t *owned;           /* per storage id: allocated here (else a param's
                             * data in the mapped module: read-only) */
  int params_in_place;      /* some storage reads the module's weights */
  int params_checked;       /* kiln_module_check_params passed */
  uint8_t *zero_copy;       /* per entry: bound to caller memory */
  int num_ops;
  GraphOp *ops;             /* the tvm_op nodes, in run order ("__nop"s and
                             * concatenations of views left out) */
  uint8_t *is_param;        /* per node: named in a loaded params blob */
  int num_inputs;
  int32_t *inputs;          /* node ids: the arguments that are not params */
  const char **output_names;
  KilnMemoryPlan plan;
  int planned_here;         /* the JSON had no storage_id */
  PtrMap arg_by_name;       /* argument name -> node id + 1 */
  int64_t *sym_val;         /* the symbols' current values (graph_sym.c), or NULL */
  uint8_t *sym_given;       /* per symbol: a run-time value set_input has bound */
  const char *sym_pending;  /* a binding no plan could take yet: the error, while some
                               run-time values are not given (graph_sym.c) */
  int64_t batch;            /* the batch as an outer loop: the current batch */
  int64_t batch_from;       /* ... the first sample the batch-1 kernels run */
  uint8_t *storage_whole;   /* ... per storage id: holds a graph input or output, so
                             * it is sized for the whole batch and sample n is at
                             * n; the others hold only the samples the batch-1
                             * kernels run, sample n at n - batch_from (graph_sym.c) */
  int sample_major;         /* ... 1: the samples run one after another (or in parallel),
                             * each through every op; -1: op by op (kiln_graph_batch_samples) */
  uint64_t *sample_stride;  /* ... sample_major: per storage id, the bytes between samples */
  KilnGraphExecutor **variant_ex; /* per g.variant_batch: its executor, made on first use */
  uint64_t *storage_cap;    /* per storage id: bytes allocated */
  /* symbolic sizes: the plans of the last bindings seen (graph_sym.c) */
  KilnSymPlan sym_plans[KILN_SYM_PLANS];
  int num_sym_plans;
  uint64_t sym_tick;        /* the LRU clock */
  KilnSymStats sym_stats;
  /* sizes reported by data-dependent host functions (graph_sym.c): the
   * symbols bound during a run, in the order of the ops that first
   * report them, their upper bounds (postfix), and how many the run has
   * bound so far (part of a plan's key) */
  int num_late;
  int32_t *late_syms;
  const char **late_cap;
  int32_t *late_pos;        /* per symbol: its index in late_syms, or -1 */
  int64_t *late_seen;       /* per late_syms index: of a node with report_grow, the
                             * largest size it reported (its next first guess), else 0 */
  int late_bound;
  /* string tensors (strings.c): the text operators made in this run, and
   * per argument node the text set_input copied in */
  KArena *str_run;          /* NULL when the graph has no host function */
  KArena **str_in;          /* per node, or NULL */
  /* the model's inputs and outputs as values (graph_values.c) */
  int num_in_values, num_out_values;
  KilnValueInfo *in_values, *out_values;
  /* Loops run at run time (loop.c): per body, its executor and values */
  struct KilnLoopState *loops;
  int num_loops;
};

/* Build ex->in_values / out_values from g.value_lines (each input and
 * output a tensor when there are none); checks they cover the graph's
 * inputs and outputs exactly. */
int kiln_graph_values_init(KilnGraphExecutor *ex);

/* ===== loop.c ===== */

/* ONNX Loop with a run-time trip count or condition (docs/symbolic_shapes.md
 * section 4d).  setup: bind op, a node calling "runtime.loop", to its
 * body's state (op->fn made here); free: the bodies' executors and
 * values. */
typedef struct KilnLoopState KilnLoopState;
int kiln_loop_setup_op(KilnGraphExecutor *ex, GraphOp *op);
void kiln_loop_free(KilnGraphExecutor *ex);

/* graph_executor.c: point every entry in storage s not bound to caller
 * memory, and every operator argument reading or writing one, at data. */
void kiln_graph_bind_storage(KilnGraphExecutor *ex, int s, void *data);

/* ===== graph_sym.c ===== */

/* A symbolic graph's executor, before its storage: every entry's shape
 * at the symbols' lower bounds (else the JSON's representative sizes),
 * and the symbols' values. */
int kiln_graph_sym_init(KilnGraphExecutor *ex);
/* A batch loop bounded below by lo > 1 (a static batch-n build run per
 * sample, batch in [n, n]) starts at lo: inputs and outputs of lo samples
 * before any set_input.  After the executor's inputs are collected. */
int kiln_graph_batch_start(KilnGraphExecutor *ex);
/* Before input entry e takes t: when t's shape differs from the entry's,
 * bind the symbols from it, check their bounds, evaluate every entry's
 * shape and grow the buffers that must (what names the caller, for
 * errors).  A no-op for a static graph. */
int kiln_graph_sym_resize(KilnGraphExecutor *ex, int e, const DLTensor *t, const char *what);
/* 0, or -1 + error when a binding waits for run-time values not given yet
 * (or planned no valid shape once they were): run calls it first. */
int kiln_graph_sym_check_run(const KilnGraphExecutor *ex);
/* Data-dependent sizes (docs/symbolic_shapes.md, section 4c).  After
 * setup_ops: find the ops that report a size or compute run-time values
 * (an entry of "NAME:lo:hi:ENTRY:ELEM" that an op writes) and the
 * symbols they bind.
 * kiln_graph_sym_begin, at the start of a run of a graph that has such
 * symbols: every one unbound, at its upper bound (so each reporting op's
 * output buffer fits whatever it writes), and the entries after planned
 * at those values.  kiln_graph_sym_report, after op reported a size:
 * bind its symbol, plan the later entries at it (cached per binding like
 * set_input's plans), grow the buffers that must (their contents kept)
 * and set the shapes in place before the next op runs. */
int kiln_graph_sym_late_init(KilnGraphExecutor *ex);
int kiln_graph_sym_begin(KilnGraphExecutor *ex);
int kiln_graph_sym_report(KilnGraphExecutor *ex, GraphOp *op);
/* Free the cached plans (kiln_graph_executor_free). */
void kiln_graph_sym_free(KilnGraphExecutor *ex);
/* A batched graph's operator: its own batch-1 shapes for the arguments
 * that carry the batch, and one sample's bytes of each (setup_ops). */
int kiln_graph_batch_setup_op(KilnGraphExecutor *ex, GraphOp *op);
/* Run one operator: once, or once per sample of the current batch (from
 * ex->batch_from). */
int kiln_graph_op_exec(KilnGraphExecutor *ex, GraphOp *op);
/* Run the samples from ex->batch_from through the batch-1 kernels sample by
 * sample, in parallel on the thread pool, where the graph allows it (every
 * op batched, no data-dependent sizes): 1 when it ran them (rc in *rc), 0
 * when the ops must run op by op (kiln_graph_op_exec). */
int kiln_graph_batch_samples(KilnGraphExecutor *ex, int *rc);
/* A batched graph with batched variants at the current batch: how many
 * samples, from the first, the variants take (the largest that fits, as
 * often as it fits, then the next); the rest run through the batch-1
 * kernels (from ex->batch_from). */
int64_t kiln_graph_batch_split(const KilnGraphExecutor *ex);
/* Run samples [0, upto) (kiln_graph_batch_split's) through the variants,
 * after the samples left ran through the batch-1 kernels: 0, or -1 with
 * an error. */
int kiln_graph_batch_run(KilnGraphExecutor *ex, int64_t upto);
/* One variant run in steps (the debug profile times the middle one op by
 * op): bind samples [at, at + batch) of the inputs to variant v's
 * executor (made on first use) and return it, NULL with an error; after
 * it ran, copy its outputs into the graph's at those samples. */
KilnGraphExecutor *kiln_graph_variant_bind(KilnGraphExecutor *ex, int v, int64_t at);
int kiln_graph_variant_collect(KilnGraphExecutor *ex, int v, int64_t at);
/* graph_executor.c: an executor on dev over the module's graph JSON blob
 * `blob` and its embedded params. */
int kiln_graph_executor_create_blob(KilnModule *mod, DLDevice dev, const char *blob, KilnGraphExecutor **out);

/* Call one bound operator (no checks, no error context: run's and the
 * profiler's inner loop); non-zero on failure. */
static inline int kiln_graph_op_call(GraphOp *op) {
  KilnValue ret;
  int ret_code;
  return op->call(op->args, op->codes, op->nargs + op->extra, &ret, &ret_code, op->resource);
}
/* The error after op failed: "node 7 ('fused_add_1', function 'fused_add'): ..." */
int kiln_graph_op_error(const KilnGraphExecutor *ex, const GraphOp *op);

/* ===== graph_packed.c ===== */

/* A table of global functions for the registry, ended by {NULL, NULL}. */
typedef struct KilnBuiltin {
  const char *name;
  KilnPackedCFunc fn;
} KilnBuiltin;

/* runtime.graph_executor.*, runtime.debug_executor.*, runtime.profile.*,
 * runtime.graph_plan_memory (listed in include/kiln/runtime.h). */
extern const KilnBuiltin kiln_graph_builtins[];

/* ===== strings.c ===== */

/* Host functions: graph nodes whose attrs carry "kiln_host" call a global
 * function of the runtime (runtime.strings.*) instead of a module kernel,
 * with the tensors, then the attributes as a JSON string (KILN_STR), then
 * a KILN_HANDLE to the executor's KArena * for the text they make. */
extern const KilnBuiltin kiln_string_builtins[];
/* The start of a run: drop the text the last run made. */
void kiln_strings_run_reset(KilnGraphExecutor *ex);
/* After set_input copied t's pointers into argument node's entry e: copy
 * the text too, into memory of the executor's for that node. */
int kiln_strings_own_input(KilnGraphExecutor *ex, int node, int e);
/* A new CPU array holding a copy of string tensor t (any strides). */
int kiln_strings_copy_out(const DLTensor *t, DLTensor **out);
void kiln_strings_free(KilnGraphExecutor *ex);

/* ===== datadep.c ===== */

/* Host functions of the data-dependent ops (runtime.dd.*: NonZero,
 * Compress, Unique, NonMaxSuppression): strings.c's convention, plus a
 * last KILN_HANDLE to the int64 where a node with attrs.kiln_report
 * writes the size it found. */
extern const KilnBuiltin kiln_datadep_builtins[];

/* ===== debug_executor.c ===== */
/* kiln_debug_profile and kiln_profile_*: no internal exports. */

/* ===== workspace.c ===== */

/* Scratch memory for kernels from the calling thread's pool (64-byte
 * aligned; NULL when out of memory), and its release (same thread).  The
 * blocks are kept for the next run: modules get these two through
 * __kiln_workspace_alloc_ptr / __kiln_workspace_free_ptr. */
void *kiln_workspace_alloc(size_t size);
void kiln_workspace_free(void *ptr);

/* ===== threadpool.c ===== */
/* kiln_parallel_launch, kiln_set_num_threads, kiln_get_num_threads: no
 * internal exports; module.c hands kiln_parallel_launch to loaded modules. */

#endif
