/*
 * codegen.h - from lowered functions to a loaded native module.
 *
 *   codegen_c.c   lowered functions -> one readable C translation unit
 *                 (GCC/Clang vector extensions for vector code, parallel
 *                 loops outlined into closures run on the runtime's pool);
 *                 also plain kernels for standalone C (graph/backend/export_c.c).
 *                 Split by concern behind codegen_c_internal.h: _stmt.c,
 *                 _expr.c, _intrin.c, _types.c
 *   kiln_vmath.h  C source that generated code carries: branch-free
 *                 float32 exp/tanh/erf/sigmoid (documented accuracy)
 *   compiler.c    the C compiler driver: $CC -> shared object, with binary
 *                 blobs (graph JSON, params index and data) linked in through
 *                 .incbin, each in a .kiln.<name> section, then sealed with
 *                 the file's checksum
 *   codegen_gpu.c GPU kernels as CUDA C or OpenCL C (vector types:
 *                 codegen_gpu_vector.c)
 *   codegen_print.c  expression printing the C and GPU printers share
 *                 (operators, calls, literal digits, helper definitions)
 *   nvrtc.c       CUDA C -> PTX with NVRTC (opened at run time)
 *   build.c       lower + codegen + compile + load in one call
 */
#ifndef KILN_CODEGEN_H
#define KILN_CODEGEN_H

#include "../lower/lower.h"
#include "kiln/runtime.h"

/* A named binary blob embedded in the module (__kiln_blob_* tables). */
typedef struct KBlob {
  const char *name;
  const void *data;
  size_t size;
} KBlob;

/* ===== codegen_c.c ===== */

/* The text of kiln_vmath.h (Kiln's own float32 exp, tanh, erf, sigmoid;
 * built from the file by cmake/embed_text.cmake).  Generated code calls
 * these for float32 math instead of libm, so that lane loops vectorize. */
extern const char codegen_vmath_source[];

/* Generate the module's C source (heap string), or NULL + error. */
char *codegen_c(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs);
/* The same split over nunits translation units (compiled in parallel):
 * unit 0 holds the module tables.  Returns a heap array of heap strings. */
char **codegen_c_units(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs, int nunits);

/* Plain kernels for standalone C (graph/backend/export_c.c): static functions over
 * plain pointers, no runtime behind them. */
typedef enum CThreads { CTHREADS_NONE, CTHREADS_PTHREADS, CTHREADS_OPENMP } CThreads;

typedef struct CDialect {
  bool portable;      /* C99 only: no GNU builtins (with scalar lowering: no vector types) */
  bool freestanding;  /* math through the math file's kiln_expf, ... instead of libm */
  CThreads threads;   /* how a parallel loop runs */
  int64_t stack_bytes; /* allocations up to this size on the stack; larger ones in scratch */
} CDialect;

typedef struct CPlainUnit CPlainUnit;
CPlainUnit *codegen_c_plain_new(const CDialect *d); /* d must outlive the unit */
/* Append one kernel:
 *   static int cname(T0 *restrict p0, ..., T *restrict out, char *restrict kiln_scratch)
 * *scratch_bytes: the scratch it needs (64-byte aligned base). */
int codegen_c_plain_kernel(CPlainUnit *u, LoweredFunc *f, const char *cname, int64_t *scratch_bytes);
/* The kernels' text (heap); *helpers gets the typedefs and helpers they
 * use (heap), to place before them.  Frees the unit. */
char *codegen_c_plain_finish(CPlainUnit *u, char **helpers);

/* ===== codegen_gpu.c ===== */

typedef enum GpuDialect { GPU_CUDA, GPU_OPENCL } GpuDialect;

/* The device source of every kernel of funcs (heap string), or NULL +
 * error (a parallel loop, an unsupported dtype, a vector wider than the
 * dialect's widest). */
char *codegen_gpu(LoweredFunc **funcs, int nfuncs, GpuDialect dialect);
/* The kernels' parameter lists for the runtime, "kiln-device-v1 <kind>"
 * then one line "kernel <name> <n> <type>..." each, in launch-index order
 * (functions in order, their kernels in order); heap string. */
char *codegen_gpu_meta(LoweredFunc **funcs, int nfuncs, GpuDialect dialect);

/* ===== nvrtc.c ===== */

/* Whether NVRTC can be loaded (no error left behind). */
bool kiln_nvrtc_available(void);
/* CUDA C -> PTX for arch ("sm_90"): *ptx a heap string; with verbose, a
 * cubin is compiled too so the log holds ptxas's registers and spills;
 * *log (may be NULL) the compiler's messages, heap.  -1 + error (the log)
 * when it does not compile or NVRTC is missing. */
int kiln_nvrtc_compile(const char *source, const char *arch, bool verbose, char **ptx, char **log);

/* ===== compiler.c ===== */

typedef struct CompileOptions {
  const char *cc;     /* compiler; NULL: $KILN_CC, $CC, then "cc" */
  const char *cflags; /* NULL: $KILN_CFLAGS, then the defaults */
  const char *keep_dir; /* if set, also copy the sources there */
} CompileOptions;

/* The default flags: -O3 -march=native ... */
const char *kiln_default_cflags(void);
/* Compile C sources (several units compiled in parallel) and blobs into
 * the shared object so_path.  Error: the compiler's exit status and its
 * first lines of output, and where the sources were kept. */
int kiln_compile_c(int nunits, const char **sources, int nblobs, const KBlob *blobs,
                   const char *so_path, const CompileOptions *opt);

/* ===== build.c ===== */

/* For functions lowered for a GPU: the device blobs a module carries
 * ("kiln_device", "kiln_device_source", and "kiln_device_ptx" compiled by
 * NVRTC for CUDA), appended to blobs (room for 3 more); 0 blobs for CPU
 * functions.  Functions of different devices cannot share a module. */
int kiln_device_blobs(LoweredFunc **funcs, int nfuncs, const CompileOptions *opt, KBlob *blobs, int *nblobs);

/* Generate C, compile into a temporary .so and load it.  The file is
 * removed when the module is freed unless it was exported. */
KilnModule *kiln_build_funcs(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs,
                             const CompileOptions *opt);
/* The same with another code generator and compiler driver (a target's,
 * src/target: target_build). */
typedef char **(*CodegenFn)(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs, int nunits);
typedef int (*CompileFn)(int nunits, const char **sources, int nblobs, const KBlob *blobs, const char *so_path,
                         const CompileOptions *opt);
KilnModule *kiln_build_funcs_with(CodegenFn codegen, CompileFn compile, LoweredFunc **funcs, int nfuncs, int nblobs,
                                  const KBlob *blobs, const CompileOptions *opt);
/* The same for CPU functions, as nunits C units (at most one per function)
 * that the compiler driver builds in parallel, into one module. */
KilnModule *kiln_build_funcs_units(LoweredFunc **funcs, int nfuncs, int nunits, const CompileOptions *opt);
/* A new private temporary directory (named prefix + random) that lives
 * until the process exits, as the directories kiln_build_funcs builds
 * into do; the string belongs to Kiln.  NULL + error. */
char *kiln_build_tmp_dir(const char *prefix);
/* Convenience: one schedule, one function. */
KilnModule *kiln_build(Schedule *s, int nargs, Tensor **args, const char *name,
                       const LowerOptions *lopt, const CompileOptions *copt);

#endif
