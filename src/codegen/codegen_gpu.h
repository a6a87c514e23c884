/*
 * codegen_gpu.h - the GPU printer's state and dialect rows, shared by
 * codegen_gpu.c (kernels, statements, scalar expressions) and
 * codegen_gpu_vector.c (vector types, loads and stores).  Private to
 * src/codegen.
 */
#ifndef KILN_CODEGEN_GPU_H
#define KILN_CODEGEN_GPU_H

#include "codegen_print.h"

/* Address spaces of a kernel's buffers (a helper taking a pointer is
 * qualified by it in OpenCL). */
typedef enum GpuSpace { SPACE_GLOBAL, SPACE_SHARED, SPACE_PRIVATE, SPACE__COUNT } GpuSpace;

typedef struct GG {
  GpuDialect d;
  StrBuf *out;
  StrBuf helpers;   /* helper functions, each once */
  PtrMap emitted;   /* helper name -> 1 (string keys) */
  PtrMap names;     /* Var -> name */
  PtrMap used;      /* name -> 1 (string keys) */
  PtrMap elem;      /* buffer Var -> DType * */
  PtrMap space;     /* buffer Var -> GpuSpace + 1 */
  PtrMap vecbuf;    /* buffer Var -> 1 when a vector load or store reads it */
  PtrMap lanewise;  /* lane-wise helper text -> its name (string keys) */
  int nlanewise;
  PtrMap thread_decl; /* "kernel\nname" of thread indices and local arrays declared -> 1 */
  DeviceKernel *k;
  Analyzer *an;
  int indent;
  int failed;
} GG;

/* One row per dialect: what its source spells differently. */
typedef struct GpuDialectRow {
  const char *name;             /* "cuda": the device blob's header */
  const char *bool_type;        /* a bool value */
  const char *byte_type;        /* a bool in memory (one byte) */
  const char *i8, *i64;         /* signed types whose names differ */
  const char *u8, *u16, *u32, *u64;
  const char *lit64, *ulit64;   /* 64-bit literal suffixes */
  const char *fn_prefix;        /* a helper function's qualifiers */
  bool f32_math_suffix;         /* expf for float (CUDA); OpenCL overloads exp */
  const char *thread_index[TAG__COUNT];
  const char *thread_index_fmt; /* wraps thread_index: "%s", "(int)%s" */
  const char *barrier;          /* a statement, with its ';' */
  const char *shared;           /* a shared buffer's qualifier */
  const char *buffer_space;     /* before a buffer parameter's type */
  const char *restrict_kw;      /* after its '*', unless it may alias */
  const char *fp64_pragma;      /* before the source when it uses double, or NULL */
  /* inf/nan of float (f32) or double */
  void (*nonfinite)(StrBuf *o, double v, bool f32);
  /* the kernel's qualifiers up to its name; threads / e[] when known */
  void (*kernel_head)(StrBuf *o, bool known, int64_t threads, const int64_t e[3]);
  /* ---- vectors (codegen_gpu_vector.c) ---- */
  int max_lanes;                /* the widest vector type */
  bool native_vectors;          /* operators, vloadN/vstoreN, convert_T, select on vectors */
  const char *vec_i64, *vec_u64; /* vector type stems of 64-bit ints */
  const char *wide_suffix;      /* after a 4-lane 64-bit vector type's name */
  const char *lane[16];         /* a lane's member name */
  const char *space_kw[SPACE__COUNT]; /* a pointer's address space in a helper's parameters */
  const char *vec_align;        /* before an array a vector access reads, or "" */
} GpuDialectRow;

const GpuDialectRow *gpu_row(GG *g);
void gpu_fail(GG *g, const char *msg);
void gpu_need(GG *g, const char *name, const char *def);
void gpu_line(GG *g);
const char *gpu_type(GG *g, DType t);  /* scalar or vector */
void gpu_expr(GG *g, Expr *e);         /* any expression */
void gpu_intrinsic(GG *g, Expr *e);    /* a call, as the scalar printer spells it */
const char *gpu_name(GG *g, Expr *var);
ExprPrinter gpu_printer(GG *g);        /* gpu_expr over g, for codegen_print.c */

/* codegen_gpu_vector.c */
const char *gpu_vector_type(GG *g, DType t);
void gpu_vector_expr(GG *g, Expr *e);  /* an expression with lanes > 1 */
void gpu_vector_store(GG *g, Stmt *s); /* a store with a vector index */
/* Record which buffers vector loads and stores touch (before printing a
 * kernel): their arrays are declared aligned. */
void gpu_vector_scan(GG *g, Stmt *body);

#endif
