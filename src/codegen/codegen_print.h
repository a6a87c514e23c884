/*
 * codegen_print.h - the printing the C printer (codegen_c_expr.c,
 * codegen_c_stmt.c) and the GPU printer (codegen_gpu.c,
 * codegen_gpu_vector.c) share: operator spellings, parenthesized binary
 * operations and calls over a printer's own sub-expression callback, float
 * literal digits, a left shift (a signed one as unsigned bits), the text
 * of the helper functions both define (integer floor division and modulo,
 * float floor modulo, min/max), each qualified as the printer's dialect
 * wants, and the statements both write alike (if/else, sequences,
 * evaluations, produce comments, let blocks).  Private to src/codegen.
 */
#ifndef KILN_CODEGEN_PRINT_H
#define KILN_CODEGEN_PRINT_H

#include "codegen.h"

/* Where a shared piece prints and how it prints a sub-expression: the
 * printer's own expression function over its own state. */
typedef struct ExprPrinter {
  StrBuf *out;
  void (*expr)(void *state, Expr *e);
  void *state;
} ExprPrinter;

/* "(a op b)" */
void cgp_binary(ExprPrinter p, const char *op, Expr *a, Expr *b);
/* e, a +, -, *, / or % node: as cgp_binary, except that a scalar 8- or
 * 16-bit integer result is cast back to its type, ctype (C, OpenCL C and
 * CUDA compute it in int; the IR's value wraps, ir.h), a 16-bit unsigned
 * product taken in u32, the 32-bit unsigned type (65535 * 65535 overflows
 * int). */
void cgp_arith(ExprPrinter p, Expr *e, const char *ctype, const char *u32);
/* Whether a scalar of type t is an 8- or 16-bit integer, which C, OpenCL C
 * and CUDA compute in int while the IR's value wraps to t (ir.h). */
bool cgp_narrow_int(DType t);
/* Whether intrinsic op's scalar result of type t is cast back to t: a
 * narrow integer's ~ and abs and a narrow unsigned one's << (uint8 ~200 is
 * -201 in int, 200 << 1 is 400, int8 abs(-128) is 128; their values are
 * 55, 144 and -128); a signed << is cast back by cgp_shift_left. */
bool cgp_intrin_wraps(Intrinsic op, DType t);
/* The text of a << b for a scalar of type t on operand texts a and b (heap
 * via kfmt), type naming a scalar type in the printer's language.  C's,
 * OpenCL C's and CUDA's << of a negative value, or into int's sign bit, is
 * undefined, while the IR's (and NumPy's) int8 -3 << 1 is -6 and 100 << 1
 * is -56: a signed value shifts as unsigned bits, 32 of them or 64 for a
 * 64-bit t (the conversion keeps the value's low bits), and converts back
 * to t, the bits past the sign dropped.  An unsigned one is "(a << b)". */
const char *cgp_shift_left(DType t, const char *a, const char *b, const char *(*type)(void *state, DType t),
                           void *state);
/* "fn(args[0], ..., args[n-1])" */
void cgp_call(ExprPrinter p, const char *fn, int n, Expr **args);

/* C's operator for a binary expression kind (+ - * / %, the comparisons,
 * && ||); NULL for the other kinds. */
const char *cgp_binary_op(ExprKind k);

/* Whether an integer floor division or modulo is C's / or %: unsigned, or
 * a positive constant divisor and a dividend `an` proves non-negative. */
bool cgp_floordiv_is_plain(Analyzer *an, Expr *e);

/* The shortest digits that read back as v at float32 (f32) or float64,
 * with ".0" added where they would read as an integer; v is finite. */
void cgp_float_digits(char buf[64], double v, bool f32);

/* Helper definitions ("QUAL T NAME(T a, T b) { ... }\n", heap via kfmt):
 * integer floor division or modulo (is_mod) rounding toward minus infinity,
 * float floor modulo a - floor_fn(a / b) * b, and min/max (is_min). */
const char *cgp_int_floordiv_def(const char *qual, const char *tn, const char *name, bool is_mod);
const char *cgp_float_floormod_def(const char *qual, const char *tn, const char *name, const char *floor_fn);
const char *cgp_minmax_def(const char *qual, const char *tn, const char *name, bool is_min);

/* How a printer prints the shared statements: its expression printer, its
 * indentation (spaces, changed by 2 around a nested block), and its own
 * functions for a sub-statement and a variable's type and name. */
typedef struct StmtPrinter {
  ExprPrinter e;
  int *indent;
  void (*stmt)(void *state, Stmt *s);
  const char *(*type)(void *state, DType t);
  const char *(*name)(void *state, Expr *var);
} StmtPrinter;

/* The statements both printers write alike, as case labels for their
 * switches (as ir.h's KILN_EXPR_BINARY_CASES). */
#define CGP_STMT_CASES                                                                                                 \
  case SK_IfThenElse:                                                                                                  \
  case SK_Seq:                                                                                                         \
  case SK_Evaluate:                                                                                                    \
  case SK_Produce:                                                                                                     \
  case SK_LetStmt

/* Print s if it is one of CGP_STMT_CASES and return true; false, printing
 * nothing, for the other kinds. */
bool cgp_stmt(StmtPrinter p, Stmt *s);

#endif
