/*
 * codegen_c_internal.h - the C code generator's private declarations.
 *
 * The generator is one printer state (CG) threaded through four files by
 * concern:
 *   codegen_c.c         module assembly: argument-checking prologues, the
 *                       prelude and module tables, units, plain kernels
 *   codegen_c_stmt.c    statements: loops, parallel outlining, allocation,
 *                       device launches
 *   codegen_c_expr.c    expressions: scalar C and vector-extension code
 *   codegen_c_intrin.c  intrinsics, the bf16/int8 dot-accumulate rows and
 *                       lane-loop vector helpers
 *   codegen_c_types.c   C names (unique, C-safe) and C types
 *   codegen_c_requant.c int8 epilogues' round-clip-narrow as conversions
 * Helpers a unit needs (typedefs, inline functions) go to g->helpers once
 * each, keyed by name (cgc_need); statements go to g->out.
 */
#ifndef KILN_CODEGEN_C_INTERNAL_H
#define KILN_CODEGEN_C_INTERNAL_H

#include "codegen.h"

typedef struct CG {
  StrBuf *out;      /* where statements go now */
  StrBuf helpers;   /* typedefs and helper functions, each emitted once */
  StrBuf outlined;  /* parallel closures */
  PtrMap names;     /* Var -> C name */
  PtrMap used;      /* C name -> (void*)1 (string keys) */
  PtrMap buftype;   /* buffer Var -> DType* (element type) */
  PtrMap emitted;   /* helper name -> (void*)1 (string keys) */
  Analyzer *an;     /* loop ranges, to prove floordiv operands non-negative */
  const char *fname;
  const char *restrict_; /* "restrict " on argument pointers, "" when they may alias */
  LoweredFunc *f;   /* the function being printed */
  int kernel_base;  /* launch index of f's first kernel (GPU functions) */
  int ndev;         /* device buffers allocated so far in f (labels) */
  int indent;
  int npar;
  bool failed;
  const CDialect *dialect; /* plain kernels for standalone C, or NULL (module ABI) */
  int64_t scratch_off;     /* plain kernels: scratch bytes in use at this point */
  int64_t scratch_max;     /* ... and the most ever in use */
  int par_depth;           /* plain kernels: parallel loops around this point */
  int vmath_calls;         /* calls into kiln_vmath.h in the function being printed (not its outlined loops) */
  int bf16_calls;          /* ... and into the bfloat16 dot-accumulate helpers */
} CG;

/* ---- codegen_c_types.c ---- */

/* Record the first error (fmt with one %s) and mark the function failed. */
void cgc_fail(CG *g, const char *fmt, const char *arg);
/* base made C-safe and unique in the kernel (never a keyword or kiln_*). */
const char *cgc_unique_name(CG *g, const char *base);
/* The C name of variable v, assigned on first use. */
const char *cgc_vname(CG *g, Expr *v);
const char *cgc_scalar_ctype(DType t);
/* Short name of a scalar type for helper names: f32, i64, u8; i32 for bool (masks). */
const char *cgc_short_name(DType t);
/* Append text to the unit's helpers unless key was emitted already. */
void cgc_need(CG *g, const char *key, const char *text);
/* The C type of t: a scalar type, int32_t for bool, kv_* for vectors. */
const char *cgc_ctype(CG *g, DType t);
/* The mask type matching a vector type of the same element width. */
const char *cgc_mask_of(CG *g, DType t);

/* ---- codegen_c_intrin.c ---- */

/* The bf16 and int8 scalar helpers generated code carries (once each). */
extern const char cgc_bf16_source[];
extern const char cgc_int8_source[];
/* A helper over vector operands defined by a lane loop body (a[l], b[l]). */
const char *cgc_lane_helper(CG *g, const char *op, DType rt, int nargs, DType *at, const char *lane_expr);
bool cgc_intrin_uses_vmath(Intrinsic op, DType t);
/* Append function text fn to dst, with KILN_VM_KERNEL before its
 * definition (at byte sig_at) when its own body calls kiln_vmath.h and no
 * bfloat16 helper (g's counts). */
void cgc_put_function(StrBuf *dst, const char *fn, size_t sig_at, const CG *g);
/* Scalar C expression of an intrinsic on scalar operand names a, b. */
const char *cgc_intrin_scalar(const CG *g, Intrinsic op, DType t, const char *a, const char *b);
/* e = acc + dot(a, b) on vectors: one dot-accumulate helper call, true. */
bool cgc_emit_dot_acc(CG *g, Expr *e);
/* Whether the freestanding math file (graph/backend/export_c_math.c) covers op. */
bool cgc_freestanding_has(Intrinsic op, DType t);

/* ---- codegen_c_requant.c ---- */

/* e = cast<8-bit>(clip(round(x), lo, hi)) on 16 float32 lanes, integer
 * bounds in the type's range: one saturating-conversion helper call
 * (VCVTPS2UDQ/VPMOVUSDB), true; false otherwise. */
bool cgc_emit_requant(CG *g, Expr *e);

/* ---- codegen_c_expr.c ---- */

void cgc_expr(CG *g, Expr *e);
bool cgc_is_contiguous_ramp(Expr *idx);

/* ---- codegen_c_stmt.c ---- */

/* Indent the next line. */
void cgc_line(CG *g);
void cgc_stmt(CG *g, Stmt *s);

/* The free variables of a statement (cgc_fv_expr / cgc_fv_stmt visitors). */
typedef struct FreeVars {
  PtrMap bound; /* vars bound inside */
  AVec uses;    /* free vars in first-use order */
  PtrMap seen;
} FreeVars;
void cgc_fv_expr(IRVisitor *v, Expr *e);
void cgc_fv_stmt(IRVisitor *v, Stmt *s);

#endif
