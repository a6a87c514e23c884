/*
 * ir.h - Kiln's loop-level IR: data types, expressions, statements, and the
 * machinery every pass uses on them (builders, mutator/visitor, structural
 * equality and hash, the arithmetic simplifier, the printer).
 *
 * Nodes are immutable once built and live in the current arena (base.h).
 * Passes rebuild only the nodes they change and share every unchanged
 * subtree.  A variable is identified by its node pointer, never by its name.
 *
 * Two stages of the IR share these nodes.  Before storage flattening,
 * tensors are read with Read (tensor + one index per dimension) and written
 * with Provide inside Realize scopes.  After flattening, memory is a 1-D
 * buffer named by a handle-typed Var: Load / Store / Allocate.  A Load
 * normally has its buffer's element type; one whose type is wider than the
 * buffer's elements is a reinterpreting load (made only by
 * lower/combine_loads.c, on the CPU): each lane reads the consecutive
 * elements from its index on as one little-endian value (a uint32 from a
 * uint8 buffer at byte i: bytes i .. i + 3).  A Store whose value is wider
 * than the buffer's elements is a reinterpreting store, the same on the
 * write side (also made only by lower/combine_loads.c): a vector of words
 * at a ramp of the word's stride, one contiguous write.
 *
 * Integer arithmetic means what it means in the C Kiln generates.
 * Unsigned types, int8 and int16 wrap to their width (two's complement):
 * a node's value is always a value of its type, as ONNX's (and NumPy's)
 * narrow Add, Sub and Mul give, so the C and GPU printers cast a scalar 8-
 * or 16-bit result back to its type (C, OpenCL C and CUDA compute it in
 * int; cgp_arith) and vector lanes wrap by themselves.  An int32 or int64 +, - or * whose exact result
 * does not fit has no one value (C leaves it undefined): passes may
 * assume it does not happen (the simplifier's bounds do, as TVM's), but
 * never fold it into a wrapped constant; ir_eval has no value for it.
 *
 * Node kinds are listed once, in X-macro lists; the enums and the name tables
 * come from those lists, and visitors switch over them without a default so
 * that -Wswitch finds every place a new kind must be handled.
 */
#ifndef KILN_IR_H
#define KILN_IR_H

#include <dlpack/dlpack.h>
#include <stdbool.h>

#include "../base/base.h"
#include "kiln/runtime.h"

/* Every object that crosses the C API starts with this tag, so a handle can
 * be checked before it is used. */
typedef enum KObjKind {
  KOBJ_NONE = 0,
  KOBJ_EXPR = 0x4b01,
  KOBJ_STMT,
  KOBJ_ITERVAR,
  KOBJ_TENSOR,
  KOBJ_STAGE,
  KOBJ_SCHEDULE,
  KOBJ_FUNC, /* a lowered function */
  KOBJ_REDUCER,
} KObjKind;

/* ===== dtype.c ===== */

/* Data types are DLPack's DLDataType, so they cross every boundary as is.
 * bool is uint1; a handle (buffer pointer) is opaque handle 64. */
typedef DLDataType DType;

static inline DType dt_make(int code, int bits, int lanes) {
  DType t;
  t.code = (uint8_t)code;
  t.bits = (uint8_t)bits;
  t.lanes = (uint16_t)lanes;
  return t;
}
#define DT_F32 dt_make(kDLFloat, 32, 1)
#define DT_F64 dt_make(kDLFloat, 64, 1)
#define DT_F16 dt_make(kDLFloat, 16, 1)
#define DT_I8 dt_make(kDLInt, 8, 1)
#define DT_I16 dt_make(kDLInt, 16, 1)
#define DT_I32 dt_make(kDLInt, 32, 1)
#define DT_I64 dt_make(kDLInt, 64, 1)
#define DT_U8 dt_make(kDLUInt, 8, 1)
#define DT_U16 dt_make(kDLUInt, 16, 1)
#define DT_U32 dt_make(kDLUInt, 32, 1)
#define DT_U64 dt_make(kDLUInt, 64, 1)
#define DT_BOOL dt_make(kDLUInt, 1, 1)
#define DT_HANDLE dt_make(kDLOpaqueHandle, 64, 1)
/* A string tensor's elements: const char * to UTF-8 (include/kiln/runtime.h,
 * docs/strings.md); graph values only, never an expression's type. */
#define DT_STRING dt_make(KILN_DL_STRING, 64, 1)

static inline bool dt_eq(DType a, DType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
static inline bool dt_is_float(DType t) { return t.code == kDLFloat; }
static inline bool dt_is_int(DType t) { return t.code == kDLInt; }
static inline bool dt_is_uint(DType t) { return t.code == kDLUInt && t.bits != 1; }
static inline bool dt_is_bool(DType t) { return t.code == kDLUInt && t.bits == 1; }
static inline bool dt_is_intlike(DType t) { return t.code == kDLInt || t.code == kDLUInt; }
static inline bool dt_is_handle(DType t) { return t.code == kDLOpaqueHandle; }
static inline bool dt_is_string(DType t) { return t.code == KILN_DL_STRING; }
static inline bool dt_is_vector(DType t) { return t.lanes > 1; }
static inline DType dt_with_lanes(DType t, int lanes) {
  t.lanes = (uint16_t)lanes;
  return t;
}
static inline DType dt_scalar(DType t) { return dt_with_lanes(t, 1); }
static inline int dt_bytes(DType t) { return (t.bits * t.lanes + 7) / 8; }

/* "float32", "int64x4", "bool", "handle" (arena string). */
const char *dt_str(DType t);
/* Parse "float32", "int8", "uint1"/"bool", "float32x16", "handle". */
int dt_parse(const char *s, DType *out);
/* Smallest and largest value of an integer type (saturating at int64). */
int64_t dt_int_min(DType t);
int64_t dt_int_max(DType t);

/* ===== expr.c ===== */

/* X(kind, operands): BINARY for the kinds whose operands are bin.a and
 * bin.b, OTHER for the rest. */
#define KILN_EXPR_KINDS(X)                                                     \
  X(IntImm, OTHER)                                                             \
  X(FloatImm, OTHER)                                                           \
  X(StrImm, OTHER)                                                             \
  X(Var, OTHER)                                                                \
  X(Add, BINARY)                                                               \
  X(Sub, BINARY)                                                               \
  X(Mul, BINARY)                                                               \
  X(Div, BINARY)      /* C semantics: truncating for ints */                   \
  X(Mod, BINARY)      /* C semantics: truncating remainder */                  \
  X(FloorDiv, BINARY) /* rounds toward minus infinity */                       \
  X(FloorMod, BINARY) /* result has the divisor's sign */                      \
  X(Min, BINARY)                                                               \
  X(Max, BINARY)                                                               \
  X(EQ, BINARY)                                                                \
  X(NE, BINARY)                                                                \
  X(LT, BINARY)                                                                \
  X(LE, BINARY)                                                                \
  X(GT, BINARY)                                                                \
  X(GE, BINARY)                                                                \
  X(And, BINARY)                                                               \
  X(Or, BINARY)                                                                \
  X(Not, OTHER)                                                                \
  X(Select, OTHER)                                                             \
  X(Cast, OTHER)                                                               \
  X(Call, OTHER)                                                               \
  X(Read, OTHER)  /* tensor read before flattening: T[i, j] */                 \
  X(Load, OTHER)  /* flat buffer read after flattening: buf[index] */          \
  X(Ramp, OTHER)  /* base, base+stride, ... (lanes) */                         \
  X(Broadcast, OTHER)                                                          \
  X(Let, OTHER)                                                                \
  X(Reduce, OTHER)

/* The case labels of every BINARY kind, for a switch that treats them
 * alike (visitors, structural equality and order):
 *   switch (e->kind) { KILN_EXPR_BINARY_CASES return f(e->bin.a, e->bin.b); ... } */
#define KILN_EXPR_CASE_BINARY(n) case EK_##n:
#define KILN_EXPR_CASE_OTHER(n)
#define KILN_EXPR_CASE_IF_BINARY(n, operands) KILN_EXPR_CASE_##operands(n)
#define KILN_EXPR_BINARY_CASES KILN_EXPR_KINDS(KILN_EXPR_CASE_IF_BINARY)

typedef enum ExprKind {
#define X(n, operands) EK_##n,
  KILN_EXPR_KINDS(X)
#undef X
      EK__COUNT
} ExprKind;

/* Intrinsic calls: name, number of arguments. */
#define KILN_INTRINSICS(X)                                                     \
  X(exp, 1)                                                                    \
  X(exp_normal, 1) /* e^x where the result is a normal float (x in             \
                      [-87.3, 88.3]): no overflow or subnormal handling */     \
  X(exp_approx, 1) /* exp_normal to a relative error of 4e-7 (2e-7 for         \
                      |x| <= 10), for SiLU's quotient */                       \
  X(log, 1)                                                                    \
  X(sqrt, 1)                                                                   \
  X(rsqrt, 1)                                                                  \
  X(tanh, 1)                                                                   \
  X(erf, 1)                                                                    \
  X(pow, 2)                                                                    \
  X(fabs, 1)                                                                   \
  X(floor, 1)                                                                  \
  X(ceil, 1)                                                                   \
  X(round, 1) /* half to even, like nearbyint and ONNX Round */              \
  X(trunc, 1)                                                                  \
  X(sigmoid, 1)                                                                \
  X(sin, 1)                                                                    \
  X(cos, 1)                                                                    \
  X(tan, 1)                                                                    \
  X(asin, 1)                                                                   \
  X(acos, 1)                                                                   \
  X(atan, 1)                                                                   \
  X(sinh, 1)                                                                   \
  X(cosh, 1)                                                                   \
  X(asinh, 1)                                                                  \
  X(acosh, 1)                                                                  \
  X(atanh, 1)                                                                  \
  X(fmod, 2)                                                                   \
  X(isnan, 1)                                                                  \
  X(isinf, 1)                                                                  \
  X(shift_left, 2)                                                             \
  X(shift_right, 2)                                                            \
  X(bitwise_and, 2)                                                            \
  X(bitwise_or, 2)                                                             \
  X(bitwise_xor, 2)                                                            \
  X(bitwise_not, 1)                                                            \
  X(likely, 1) /* a condition that is almost always true: a hint */     \
  X(bf16_pack2, 2) /* float32 lo, hi -> uint32: both rounded to bfloat16  \
                      (to nearest even), lo in the low half */            \
  X(bf16_dot2, 2)  /* uint32 a, b (two bfloat16 each) -> float32         \
                      a.lo * b.lo + a.hi * b.hi (AVX512-BF16's pair) */   \
  X(bf16_half, 2)  /* uint32 a, j (0 or 1) -> float32: a.lo (j = 0) or    \
                      a.hi (j = 1) */                                     \
  X(u8s8_dot4, 2)  /* uint32 a (four uint8), b (four int8) -> int32: the \
                      sum of the four byte products (AVX512-VNNI's        \
                      VPDPBUSD on one lane, before its accumulate) */ \
  X(prefetch, 2)   /* element, locality -> int32 0: bring the cache line   \
                      holding the element (a scalar Read, a Load once    \
                      flattened) in for reading; locality 0 (none) to 3  \
                      (keep in every level), as __builtin_prefetch's.    \
                      A hint, evaluated for its effect (TVM's            \
                      tir.prefetch; te's stage_prefetch makes them) */

typedef enum Intrinsic {
#define X(n, a) INTRIN_##n,
  KILN_INTRINSICS(X)
#undef X
      INTRIN__COUNT
} Intrinsic;

typedef enum ReduceKind { RED_SUM, RED_PROD, RED_MAX, RED_MIN, RED_CUSTOM } ReduceKind;

typedef struct Expr Expr;
typedef struct Stmt Stmt;
typedef struct IterVar IterVar;
typedef struct Tensor Tensor;

/* What the IR reads of the tensors its Read, Provide, Realize and Produce
 * nodes name: their name (the printer, the simplifier's ordering).  A
 * Tensor (src/te/te.h, which the IR does not include) begins with these
 * members in this order, as every object begins with its KObjKind; te.h
 * asserts it. */
typedef struct TensorHead {
  KObjKind okind;
  int kind;
  const char *name;
} TensorHead;

static inline const char *ir_tensor_name(const Tensor *t) { return ((const TensorHead *)(const void *)t)->name; }

/* A commutative reducer: result(lhs, rhs) combines an accumulated value lhs
 * with a new value rhs; identity is the starting value. */
typedef struct Reducer {
  KObjKind okind;
  ReduceKind kind;
  Expr *lhs, *rhs; /* Vars */
  Expr *result;
  Expr *identity;
} Reducer;

struct Expr {
  KObjKind okind;
  ExprKind kind;
  DType dtype;
  union {
    int64_t int_value;   /* IntImm */
    double float_value;  /* FloatImm */
    const char *str;     /* StrImm */
    struct {
      const char *name;
    } var;
    struct {
      Expr *a, *b;
    } bin; /* Add .. Or; Not uses a only; Cast uses a */
    struct {
      Expr *cond, *t, *f;
    } select;
    struct {
      Intrinsic op;
      int nargs;
      Expr **args;
    } call;
    struct {
      Tensor *tensor;
      int n;
      Expr **idx;
    } read;
    struct {
      Expr *buf; /* a handle Var */
      Expr *index;
    } load;
    struct {
      Expr *base, *stride;
      int lanes;
    } ramp;
    struct {
      Expr *value;
      int lanes;
    } bcast;
    struct {
      Expr *var, *value, *body;
    } let;
    struct {
      Reducer *comb;
      Expr *source;
      int naxis;
      IterVar **axis;
      Expr *cond; /* NULL = always */
    } reduce;
  };
};

typedef enum IterKind {
  ITER_DATA_PAR, /* a spatial axis */
  ITER_REDUCE,   /* a reduction axis */
  ITER_THREAD,   /* a thread index (bound) */
  ITER_OPAQUE,
} IterKind;

/* An iteration variable with its range [min, min + extent). Range may be
 * unset (NULL) for axes made by split/fuse until bound inference. */
struct IterVar {
  KObjKind okind;
  Expr *var;
  Expr *min, *extent;
  IterKind kind;
  const char *thread_tag;
};

const char *expr_kind_name(ExprKind k);
const char *intrin_name(Intrinsic op);
int intrin_nargs(Intrinsic op);
int intrin_lookup(const char *name); /* -1 if none */

/* Builders.  Every builder returns NULL when an operand is NULL, without
 * touching the error message, so a chain of calls reports the first
 * failure.  Binary builders promote operand types as TVM does: int with
 * float becomes float, narrower ints widen, a scalar with a vector is
 * broadcast; a mismatch they cannot reconcile is an error. */
Expr *ir_int(int64_t v, DType t);
Expr *ir_i32(int64_t v);
Expr *ir_i64(int64_t v);
Expr *ir_float(double v, DType t);
Expr *ir_f32(double v);
Expr *ir_bool(bool v);
Expr *ir_str(const char *s);
Expr *ir_const(double v, DType t); /* int or float immediate of type t */
Expr *ir_var(const char *name, DType t);

Expr *ir_binary(ExprKind k, Expr *a, Expr *b);
Expr *ir_add(Expr *a, Expr *b);
Expr *ir_sub(Expr *a, Expr *b);
Expr *ir_mul(Expr *a, Expr *b);
Expr *ir_div(Expr *a, Expr *b);
Expr *ir_mod(Expr *a, Expr *b);
Expr *ir_floordiv(Expr *a, Expr *b);
Expr *ir_floormod(Expr *a, Expr *b);
Expr *ir_min(Expr *a, Expr *b);
Expr *ir_max(Expr *a, Expr *b);
Expr *ir_eq(Expr *a, Expr *b);
Expr *ir_ne(Expr *a, Expr *b);
Expr *ir_lt(Expr *a, Expr *b);
Expr *ir_le(Expr *a, Expr *b);
Expr *ir_gt(Expr *a, Expr *b);
Expr *ir_ge(Expr *a, Expr *b);
Expr *ir_and(Expr *a, Expr *b);
Expr *ir_or(Expr *a, Expr *b);
Expr *ir_not(Expr *a);
Expr *ir_neg(Expr *a);
Expr *ir_select(Expr *cond, Expr *t, Expr *f);
Expr *ir_cast(DType t, Expr *a);
Expr *ir_call(Intrinsic op, int nargs, Expr **args);
Expr *ir_call1(Intrinsic op, Expr *a);
Expr *ir_call2(Intrinsic op, Expr *a, Expr *b);
/* A raw tensor read of element type t (te_read checks the rank). */
Expr *ir_read(Tensor *tensor, DType t, int n, Expr **idx);
Expr *ir_load(DType t, Expr *buf, Expr *index);
Expr *ir_ramp(Expr *base, Expr *stride, int lanes);
Expr *ir_bcast(Expr *value, int lanes);
Expr *ir_let(Expr *var, Expr *value, Expr *body);
/* A reduction of source over axes (reduce IterVars) where cond holds. */
Expr *ir_reduce(Reducer *comb, Expr *source, int naxis, IterVar **axis, Expr *cond);
Reducer *ir_reducer(ReduceKind k, DType t);
/* A custom reducer: result is an expression in lhs and rhs. */
Reducer *ir_reducer_custom(Expr *lhs, Expr *rhs, Expr *result, Expr *identity);
Expr *ir_sum(Expr *src, int naxis, IterVar **axis);
Expr *ir_max_reduce(Expr *src, int naxis, IterVar **axis);
Expr *ir_min_reduce(Expr *src, int naxis, IterVar **axis);
Expr *ir_prod(Expr *src, int naxis, IterVar **axis);
/* Largest/smallest finite value of t (used as max/min identities). */
Expr *ir_max_value(DType t);
Expr *ir_min_value(DType t);

IterVar *ir_itervar(Expr *var, Expr *min, Expr *extent, IterKind kind);

/* Queries. */
bool ir_is_const_int(const Expr *e, int64_t *out);
bool ir_is_const(const Expr *e); /* IntImm or FloatImm (or a broadcast of one) */
bool ir_is_int_value(const Expr *e, int64_t v);
bool ir_is_binary(ExprKind k); /* Add .. Or */
bool ir_is_compare(ExprKind k);

/* ===== stmt.c ===== */

#define KILN_STMT_KINDS(X)                                                     \
  X(For)                                                                       \
  X(Store)    /* buf[index] = value (after flattening) */                      \
  X(Provide)  /* T[i, j] = value (before flattening) */                        \
  X(Allocate) /* a flat buffer for the body */                                 \
  X(Realize)  /* a tensor region for the body (before flattening) */           \
  X(IfThenElse)                                                                \
  X(Seq)                                                                       \
  X(Evaluate)                                                                  \
  X(Attr)    /* key = value over a body: pragmas, storage scopes */            \
  X(Produce) /* marks where a tensor is produced */                            \
  X(LetStmt)

typedef enum StmtKind {
#define X(n) SK_##n,
  KILN_STMT_KINDS(X)
#undef X
      SK__COUNT
} StmtKind;

#define KILN_FOR_KINDS(X)                                                      \
  X(SERIAL, "for")                                                             \
  X(PARALLEL, "parallel")                                                      \
  X(VECTORIZED, "vectorized")                                                  \
  X(UNROLLED, "unrolled")                                                      \
  X(THREAD, "thread")

typedef enum ForKind {
#define X(n, s) FOR_##n,
  KILN_FOR_KINDS(X)
#undef X
} ForKind;

struct Stmt {
  KObjKind okind;
  StmtKind kind;
  union {
    struct {
      Expr *var, *min, *extent;
      ForKind fkind;
      const char *thread_tag; /* FOR_THREAD: e.g. "threadIdx.x" */
      Stmt *body;
    } for_;
    struct {
      Expr *buf, *value, *index;
    } store;
    struct {
      Tensor *tensor;
      Expr *value;
      int n;
      Expr **idx;
    } provide;
    struct {
      Expr *buf; /* handle Var */
      DType dtype;
      Expr *size; /* elements */
      const char *scope;
      Stmt *body;
    } alloc;
    struct {
      Tensor *tensor;
      int n;
      Expr **min, **extent;
      const char *scope;
      Stmt *body;
    } realize;
    struct {
      Expr *cond;
      Stmt *then_, *else_;
    } if_;
    struct {
      int n;
      Stmt **s;
    } seq;
    struct {
      Expr *value;
    } eval;
    struct {
      const char *key;
      void *node; /* an IterVar, Var, Tensor or NULL */
      Expr *value;
      Stmt *body;
    } attr;
    struct {
      Tensor *tensor;
      Stmt *body;
    } produce;
    struct {
      Expr *var, *value;
      Stmt *body;
    } let;
  };
};

const char *stmt_kind_name(StmtKind k);
const char *for_kind_name(ForKind k);

Stmt *ir_for(Expr *var, Expr *min, Expr *extent, ForKind k, Stmt *body);
Stmt *ir_store(Expr *buf, Expr *value, Expr *index);
Stmt *ir_provide(Tensor *t, Expr *value, int n, Expr **idx);
Stmt *ir_allocate(Expr *buf, DType t, Expr *size, const char *scope, Stmt *body);
Stmt *ir_realize(Tensor *t, int n, Expr **min, Expr **extent, const char *scope,
                 Stmt *body);
Stmt *ir_if(Expr *cond, Stmt *then_, Stmt *else_);
/* A sequence; NULL entries and no-ops are dropped, nested sequences are
 * flattened, and a one-element sequence is its element. */
Stmt *ir_seq(int n, Stmt **s);
Stmt *ir_seq2(Stmt *a, Stmt *b);
Stmt *ir_evaluate(Expr *e);
Stmt *ir_attr(const char *key, void *node, Expr *value, Stmt *body);
Stmt *ir_produce(Tensor *t, Stmt *body);
Stmt *ir_let_stmt(Expr *var, Expr *value, Stmt *body);
Stmt *ir_nop(void); /* Evaluate(0) */
bool ir_is_nop(const Stmt *s);

/* ===== visit.c ===== */

/* A mutator rebuilds a tree.  Set expr/stmt to intercept nodes; from the
 * hook call ir_mutate_*_children for the default (rebuild the node from its
 * mutated children, returning the same node when nothing changed). */
typedef struct IRMutator IRMutator;
struct IRMutator {
  Expr *(*expr)(IRMutator *m, Expr *e);
  Stmt *(*stmt)(IRMutator *m, Stmt *s);
  void *ud;
};
Expr *ir_mutate_expr(IRMutator *m, Expr *e);
Stmt *ir_mutate_stmt(IRMutator *m, Stmt *s);
Expr *ir_mutate_expr_children(IRMutator *m, Expr *e);
Stmt *ir_mutate_stmt_children(IRMutator *m, Stmt *s);

/* A visitor walks a tree; same hook convention, returning nothing. */
typedef struct IRVisitor IRVisitor;
struct IRVisitor {
  void (*expr)(IRVisitor *v, Expr *e);
  void (*stmt)(IRVisitor *v, Stmt *s);
  void *ud;
};
void ir_visit_expr(IRVisitor *v, Expr *e);
void ir_visit_stmt(IRVisitor *v, Stmt *s);
void ir_visit_expr_children(IRVisitor *v, Expr *e);
void ir_visit_stmt_children(IRVisitor *v, Stmt *s);

/* Replace variables (keys: Var nodes) by expressions. */
Expr *ir_substitute(Expr *e, const PtrMap *vmap);
Stmt *ir_substitute_stmt(Stmt *s, const PtrMap *vmap);
Expr *ir_substitute1(Expr *e, Expr *var, Expr *value);
Stmt *ir_substitute_stmt1(Stmt *s, Expr *var, Expr *value);
bool ir_expr_uses_var(Expr *e, const Expr *var);
bool ir_stmt_uses_var(Stmt *s, const Expr *var);
/* Does e use any variable in the set (keys of vars)? */
bool ir_expr_uses_any(Expr *e, const PtrMap *vars);
/* Collect the tensors read (Read nodes) by e, each once, in order. */
void ir_collect_reads(Expr *e, AVec *tensors);

/* ===== equal.c ===== */

/* Structural equality and hash.  Free variables compare by identity;
 * variables bound inside (loop and let variables) compare by position. */
bool ir_expr_equal(Expr *a, Expr *b);
bool ir_stmt_equal(Stmt *a, Stmt *b);
uint64_t ir_expr_hash(Expr *e);
uint64_t ir_stmt_hash(Stmt *s);

/* ===== simplify.c ===== */

/* The analyzer holds what is known about variables (constant ranges) and
 * answers questions about expressions under that knowledge. */
typedef struct Analyzer Analyzer;

Analyzer *analyzer_new(void); /* heap; free with analyzer_free */
void analyzer_free(Analyzer *an);
/* var lies in [min, min + extent); constant bounds are taken from the
 * simplified endpoints. */
void analyzer_bind_range(Analyzer *an, Expr *var, Expr *min, Expr *extent);
void analyzer_bind_const(Analyzer *an, Expr *var, int64_t lo, int64_t hi);
/* Constant bounds of an integer expression; returns false if unbounded. */
bool analyzer_const_bound(Analyzer *an, Expr *e, int64_t *lo, int64_t *hi);
/* Whether cond is provably true. */
bool analyzer_can_prove(Analyzer *an, Expr *cond);
Expr *analyzer_simplify(Analyzer *an, Expr *e);

/* Simplify with no outside knowledge. */
Expr *ir_simplify(Expr *e);
/* Simplify a statement: loop ranges become known to the analyzer inside
 * their loops; conditions proven true or false are removed. */
Stmt *ir_simplify_stmt(Stmt *s);

/* ===== printer.c ===== */

/* TVM-style text: "(a + b)", "for (i, 0, 128) {" ... */
void ir_print_expr(StrBuf *sb, Expr *e);
void ir_print_stmt(StrBuf *sb, Stmt *s, int indent);
const char *ir_expr_str(Expr *e); /* arena string */
const char *ir_stmt_str(Stmt *s); /* arena string */

/* ===== scalar.c ===== */

/* The value semantics of scalar operations, shared by ir_eval and the
 * operator library's interpreter (constant folding). */
typedef struct IrScalar {
  int64_t i; /* integers and bool: the sign-extended bit pattern */
  double f;  /* floats, rounded to float32 for float32 */
} IrScalar;

/* bfloat16 bits (in the low 16 bits) of x rounded to nearest even, and the
 * float32 value of bfloat16 bits: the semantics of bf16_pack2/bf16_dot2. */
uint32_t ir_bf16_round(float x);
float ir_bf16_float(uint32_t h);

int64_t ir_scalar_norm(uint64_t u, DType t);
double ir_scalar_round(double v, DType t);
double ir_scalar_as_double(IrScalar v, DType t);
/* Div, Mod, FloorDiv, FloorMod on integers: NULL, or why C leaves the
 * result undefined (zero divisor, overflowing quotient). */
const char *ir_scalar_int_div(ExprKind k, int64_t a, int64_t b, DType t, int64_t *out);
/* An intrinsic on values a[0], a[1] of type at giving type t: NULL, or why
 * it has no defined result. */
const char *ir_scalar_call(Intrinsic op, DType t, DType at, const IrScalar *a, IrScalar *out);

/* ===== eval.c ===== */

/* The expression interpreter both ir_eval and topi_eval (the operator
 * library's compute-graph interpreter) are written on: one walk of a
 * scalar expression, its semantics chosen by mode, its free variables and
 * foreign nodes left to the caller's hooks (see eval.c's essay). */
typedef enum IrEvalMode {
  IR_EVAL_STRICT, /* no value where C has none: int32/int64 overflow, a float-to-int cast out of range, float16 */
  IR_EVAL_WRAP,   /* as the x86 code: signed arithmetic wraps, float-to-int saturates (NaN: 0) */
} IrEvalMode;

typedef struct IrEvalScope { /* Let bindings, innermost first */
  const Expr *var;
  IrScalar v;
  const struct IrEvalScope *up;
} IrEvalScope;

typedef struct IrEval IrEval;
struct IrEval {
  IrEvalMode mode;
  /* A variable no Let in the walk binds: its value, or false (after
   * calling fail, to say why). */
  bool (*lookup)(IrEval *ev, Expr *var, IrScalar *out);
  /* Read and Reduce nodes (NULL: not supported); may recurse into
   * ir_eval_expr. */
  bool (*other)(IrEval *ev, Expr *e, IrScalar *out);
  /* Told why the walk fails (NULL: fail silently); returns false. */
  bool (*fail)(IrEval *ev, const char *why);
  const IrEvalScope *scope; /* NULL to start */
};

/* Evaluate e; false where it has no value (reported through ev->fail). */
bool ir_eval_expr(IrEval *ev, Expr *e, IrScalar *out);

/* The reference interpreter for scalar expressions (IR_EVAL_STRICT), used
 * to test the simplifier and other passes.  env maps Var nodes to `double *` values
 * (an integer variable's value must be a whole number in its type's range).
 * Integers are computed exactly in their own type (unsigned wraps), floats
 * in double rounded to float after each float32 operation; the result is
 * stored in *out.  Returns false, without an error message, where C would
 * have no defined answer (division by zero, int32/int64 overflow, an out-of-range
 * float-to-int cast or shift), for an unbound variable, and for what is not
 * a scalar value: Read, Load, Reduce, StrImm, vectors, float16. */
bool ir_eval(Expr *e, const PtrMap *env, double *out);

#endif
