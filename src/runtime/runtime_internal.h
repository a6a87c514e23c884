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

#include <stdatomic.h>

#include "base/base.h"
#include "kiln/runtime.h"

/* ===== error.c ===== */
/* kiln_last_error, kiln_set_last_error, kiln_version: no internal exports. */

/* ===== device.c ===== */

/* One device type's memory primitives.  The table in device.c is indexed by
 * DLDeviceType; only the CPU entry is filled for now, a CUDA entry slots in
 * beside it without touching the array code. */
typedef struct KilnDeviceAPI {
  const char *name; /* for messages: "cpu", "cuda" */
  /* nbytes of memory aligned to `align` on dev (at least one byte, so the
   * pointer is never NULL); NULL with an error on failure. */
  void *(*alloc)(DLDevice dev, size_t nbytes, size_t align);
  void (*free)(DLDevice dev, void *ptr);
  /* Copy nbytes of contiguous memory where at least one side is on this
   * API's device (the other may be the CPU). */
  int (*copy)(const void *from, DLDevice from_dev, void *to, DLDevice to_dev, size_t nbytes);
} KilnDeviceAPI;

/* The API of dev's type, or NULL with "device type N (...) is not supported
 * yet". */
const KilnDeviceAPI *kiln_device_api(DLDevice dev);
/* A short name for a device type ("cpu", "cuda", "device7"), for messages. */
const char *kiln_device_name(int device_type);

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

/* A type code's name for messages: "int", "str", "ndarray"... */
const char *kiln_type_code_name(int code);
/* 0 if there are `expected` arguments with the type codes `want`, else -1
 * with "fname: argument 1 must be str (type code 11), got ...". */
int kiln_check_args(const char *fname, const int *type_codes, int num_args, int expected,
                    const int *want);

/* ===== registry.c ===== */
/* kiln_func_register_global, kiln_func_get_global,
 * kiln_func_list_global_names: no internal exports.  The built-in global
 * functions are listed there, registered on the first use of the registry. */

/* ===== module.c ===== */

/* Packed forms of the module API, registered as global functions so that
 * modules travel through the calling convention as KILN_MODULE values:
 *   runtime.module_load(str path) -> KILN_MODULE
 *   runtime.module_get_function(KILN_MODULE mod, str name) -> KILN_FUNC */
int kiln_module_packed_load(KilnValue *args, int *type_codes, int num_args, KilnValue *ret,
                            int *ret_code, void *resource);
int kiln_module_packed_get_function(KilnValue *args, int *type_codes, int num_args,
                                    KilnValue *ret, int *ret_code, void *resource);

/* ===== threadpool.c ===== */
/* kiln_parallel_launch, kiln_set_num_threads, kiln_get_num_threads: no
 * internal exports; module.c hands kiln_parallel_launch to loaded modules. */

#endif
