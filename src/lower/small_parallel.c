/*
 * small_parallel.c - a parallel loop with too little work to share runs
 * serially.
 *
 * A parallel loop is a fork and a join on the runtime's thread pool: the
 * other threads see the job, take their tasks and report back, and the
 * loop's output ends up spread over several cores' caches.  That costs
 * about half a microsecond on a quiet machine and a scheduler time slice
 * when another process holds a core the job waits for - more than a loop
 * of a few hundred instructions (a squeeze-and-excitation gate's bias
 * add, a 1x1 convolution of a pooled vector) gains from a second core.
 *
 * The cost rule: a loop's work is its extent times its body's, a store's
 * is one plus its value's operations (a vector operation counts once, a
 * math intrinsic INTRIN_OPS), a branch costs its larger arm, and index
 * arithmetic is free (the C compiler strength-reduces it).  A parallel
 * loop whose whole work is below SMALL_PARALLEL_OPS becomes a serial loop;
 * one whose work is not a constant (a symbolic extent) stays parallel.
 * The threshold is about a microsecond of one core on a memory-bound loop:
 * MobileNetV3-Small's pointwise and pooling kernels run 5,000-8,000 of
 * these operations per microsecond, FMA loops 35,000-110,000.  The rule
 * looks at the lowered loop, so it holds for every template and shape
 * alike; lowering applies it when LowerOptions.serial_small_parallel asks
 * (the model compiler and the tuner's measurements).
 */
#include "lower.h"

enum {
  INTRIN_OPS = 20, /* a math intrinsic (exp, tanh, erf): a short polynomial */
};

/* Saturating: the work of a loop nest bigger than the threshold only needs
 * to stay bigger than it. */
static const int64_t MANY = (int64_t)1 << 40;

static int64_t sat_add(int64_t a, int64_t b) { return a + b < MANY ? a + b : MANY; }

static int64_t sat_mul(int64_t a, int64_t b) {
  if (!a || !b) return 0;
  return a < MANY / b ? a * b : MANY;
}

/* A call's operations beyond its arguments': the transcendental functions
 * are short polynomials (kiln_vmath.h), the rest (0 here) one instruction
 * or a few. */
static const int64_t call_cost[INTRIN__COUNT] = {
    [INTRIN_exp] = INTRIN_OPS,     [INTRIN_exp_normal] = INTRIN_OPS, [INTRIN_exp_approx] = INTRIN_OPS, [INTRIN_log] = INTRIN_OPS,
    [INTRIN_tanh] = INTRIN_OPS,    [INTRIN_erf] = INTRIN_OPS,        [INTRIN_pow] = INTRIN_OPS,
    [INTRIN_sigmoid] = INTRIN_OPS, [INTRIN_sin] = INTRIN_OPS,        [INTRIN_cos] = INTRIN_OPS,
    [INTRIN_tan] = INTRIN_OPS,     [INTRIN_asin] = INTRIN_OPS,       [INTRIN_acos] = INTRIN_OPS,
    [INTRIN_atan] = INTRIN_OPS,    [INTRIN_sinh] = INTRIN_OPS,       [INTRIN_cosh] = INTRIN_OPS,
    [INTRIN_asinh] = INTRIN_OPS,   [INTRIN_acosh] = INTRIN_OPS,      [INTRIN_atanh] = INTRIN_OPS,
    [INTRIN_fmod] = INTRIN_OPS,
};

/* The operations of a value (not of its indices). */
static int64_t expr_ops(const Expr *e) {
  if (!e) return 0;
  switch (e->kind) {
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Var:
  case EK_Ramp:
    return 0;
  KILN_EXPR_BINARY_CASES
    return sat_add(1, sat_add(expr_ops(e->bin.a), expr_ops(e->bin.b)));
  case EK_Not:
  case EK_Cast:
    return sat_add(1, expr_ops(e->bin.a));
  case EK_Broadcast:
    return expr_ops(e->bcast.value);
  case EK_Select:
    return sat_add(1, sat_add(expr_ops(e->select.cond), sat_add(expr_ops(e->select.t), expr_ops(e->select.f))));
  case EK_Load:
    return 1;
  case EK_Let:
    return sat_add(expr_ops(e->let.value), expr_ops(e->let.body));
  case EK_Call: {
    int64_t n = call_cost[e->call.op] ? call_cost[e->call.op] : 1;
    for (int i = 0; i < e->call.nargs; i++) n = sat_add(n, expr_ops(e->call.args[i]));
    return n;
  }
  case EK_Read:
  case EK_Reduce:
    return MANY; /* not after flattening */
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* The operations one run of s performs. */
static int64_t stmt_ops(const Stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case SK_For: {
    int64_t extent;
    if (!ir_is_const_int(s->for_.extent, &extent)) return MANY;
    return sat_mul(extent > 0 ? extent : 0, sat_add(1, stmt_ops(s->for_.body)));
  }
  case SK_Store:
    return sat_add(1, expr_ops(s->store.value));
  case SK_IfThenElse: {
    int64_t t = stmt_ops(s->if_.then_), f = stmt_ops(s->if_.else_);
    return sat_add(1, t > f ? t : f);
  }
  case SK_Seq: {
    int64_t n = 0;
    for (int i = 0; i < s->seq.n; i++) n = sat_add(n, stmt_ops(s->seq.s[i]));
    return n;
  }
  case SK_Evaluate:
    return expr_ops(s->eval.value);
  case SK_Allocate:
    return stmt_ops(s->alloc.body);
  case SK_Attr:
    return stmt_ops(s->attr.body);
  case SK_Produce:
    return stmt_ops(s->produce.body);
  case SK_LetStmt:
    return sat_add(expr_ops(s->let.value), stmt_ops(s->let.body));
  case SK_Provide:
  case SK_Realize:
    return MANY; /* not after flattening */
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

int64_t lower_loop_ops(const Stmt *s) { return stmt_ops(s); }

static Stmt *small_stmt(IRMutator *m, Stmt *s) {
  if (s->kind != SK_For || s->for_.fkind != FOR_PARALLEL) return ir_mutate_stmt_children(m, s);
  /* the outermost parallel loop is the one launched; those inside it run
   * in its tasks already */
  if (stmt_ops(s) >= SMALL_PARALLEL_OPS) return s;
  /* serial now, so a parallel loop inside it would be launched once per
   * iteration: it is smaller still, and turns serial too */
  Stmt *body = ir_mutate_stmt(m, s->for_.body);
  return ir_for(s->for_.var, s->for_.min, s->for_.extent, FOR_SERIAL, body);
}

Stmt *lower_small_parallel(Stmt *body) {
  IRMutator m = {NULL, small_stmt, NULL};
  return ir_mutate_stmt(&m, body);
}
