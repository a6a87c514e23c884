/*
 * unswitch.c - loop unswitching of tail guards (CPU): a serial loop whose
 * body holds `if (likely(c))` guards (schedule_ops.c's guards of a split
 * that does not divide, with no else) whose conditions do not change
 * inside the loop becomes
 *
 *   if (likely(c1 && c2 && ...)) loop with the guards dropped
 *   else                         the loop as it was
 *
 * so the full blocks run without a compare and branch per guarded row in
 * every step, and only the one tail block takes the guarded copy.  A
 * dense layer with 197 rows in blocks of 12 has 7 guarded rows in its
 * last block: before, each of its k steps carried those 7 branches in
 * every block.  TVM's LoopPartition does the same job by cutting the loop
 * range; here the guards' conditions are on outer loop variables (often a
 * fused parallel one, `block % 17`), which a range cut cannot express.
 *
 * A condition qualifies when it reads no memory (no Load, Read or Call)
 * and uses no variable bound inside the loop (its own variable, inner
 * loops' and Lets').  The outermost serial loop where a condition
 * qualifies is unswitched for it, so the test runs once per iteration of
 * the loops outside.  The guarded copy is left as it is (unswitching it
 * again would only grow the code); the fast copy is unswitched further
 * for conditions that vary inside it.  A loop body of more than
 * UNSWITCH_MAX_STMTS statements is not copied (its inner loops still may
 * be).  GPU kernels are left alone: a branch on a thread index around a
 * barrier would not be reached by every thread.
 *
 * Selects between two reads the same way: a concatenation picks the input
 * an element comes from by a chain of selects on the channel block
 * (`c < 16 ? A[..] : c < 32 ? B[..] : ...`), the chain's conditions on an
 * outer loop's variable, yet tested per element: DenseNet-121's
 * concatenations of 20-27 inputs (fused with the next layer's batch norm
 * and relu) moved 40-55 GB/s against 80-100 with 4-8 inputs.  A serial
 * loop whose body holds a select of two arms that both read memory (or
 * call a function), its condition invariant in the loop (as above),
 * becomes
 *
 *   if (c) the loop with the select's true arm, else with its false arm
 *
 * and each copy is unswitched further, so a chain of k selects gives k + 1
 * copies of the loop, each reading one input, the chain tested once per
 * iteration of the loops outside.  A select with a constant arm (padding)
 * is left to the C compiler.  The copies are bounded: a loop body of more
 * than SELECT_MAX_STMTS statements is not split for a select, and a
 * function gets at most SELECT_BUDGET statements of copies.  DenseNet-121's
 * 58 concatenation kernels, sums of in-model per-kernel minima over
 * alternating profiles: 1231 -> 1073 and 1272 -> 1153 us on one thread,
 * 858 -> 808 on two (load 7-10); its outputs bit-identical.
 */
#include "lower.h"

enum { UNSWITCH_MAX_STMTS = 16384, SELECT_MAX_STMTS = 64, SELECT_BUDGET = 16384 };

/* ---- what the loop binds, and whether a condition is pure ---- */

typedef struct Scan {
  AVec bound;   /* Expr *: variables bound inside the loop */
  AVec guards;  /* Expr *: the `likely` guards' conditions, without the call */
  AVec selects; /* Expr *: conditions of selects between two reads */
  int64_t nstmts;
} Scan;

static bool impure(Expr *e);

static void scan_expr(IRVisitor *v, Expr *e) {
  Scan *s = v->ud;
  if (e->kind == EK_Let) av_push(&s->bound, e->let.var);
  if (e->kind == EK_Select && e->select.cond->dtype.lanes == 1 && impure(e->select.t) && impure(e->select.f))
    av_push(&s->selects, e->select.cond);
  ir_visit_expr_children(v, e);
}

static bool is_guard(const Stmt *s) {
  return s->kind == SK_IfThenElse && !s->if_.else_ && s->if_.cond->kind == EK_Call &&
         s->if_.cond->call.op == INTRIN_likely && s->if_.cond->call.nargs == 1;
}

static void scan_stmt(IRVisitor *v, Stmt *st) {
  Scan *s = v->ud;
  s->nstmts++;
  if (st->kind == SK_For) av_push(&s->bound, st->for_.var);
  if (st->kind == SK_LetStmt) av_push(&s->bound, st->let.var);
  if (st->kind == SK_Allocate) av_push(&s->bound, st->alloc.buf);
  if (is_guard(st)) av_push(&s->guards, st->if_.cond->call.args[0]);
  ir_visit_stmt_children(v, st);
}

static void impure_expr(IRVisitor *v, Expr *e) {
  if (e->kind == EK_Load || e->kind == EK_Read || e->kind == EK_Call || e->kind == EK_Reduce) *(bool *)v->ud = true;
  ir_visit_expr_children(v, e);
}

/* Reads memory or calls something. */
static bool impure(Expr *e) {
  bool r = false;
  IRVisitor v = {impure_expr, NULL, &r};
  ir_visit_expr(&v, e);
  return r;
}

static bool invariant(Scan *s, Expr *c) {
  int64_t k;
  if (ir_is_const_int(c, &k) || c->dtype.lanes != 1) return false; /* a constant: simplify's job */
  if (impure(c)) return false;
  for (int i = 0; i < s->bound.len; i++)
    if (ir_expr_uses_var(c, s->bound.data[i])) return false;
  return true;
}

/* ---- the rewrite ---- */

typedef struct Drop {
  AVec conds; /* Expr *: guards to drop (their conditions hold) */
} Drop;

static Stmt *drop_stmt(IRMutator *m, Stmt *s) {
  Drop *d = m->ud;
  if (is_guard(s))
    for (int i = 0; i < d->conds.len; i++)
      if (ir_expr_equal(s->if_.cond->call.args[0], d->conds.data[i])) return ir_mutate_stmt(m, s->if_.then_);
  return ir_mutate_stmt_children(m, s);
}

/* A select on `cond`: its true (or false) arm. */
typedef struct Pick {
  Expr *cond;
  bool arm;
} Pick;

static Expr *pick_expr(IRMutator *m, Expr *e) {
  Pick *p = m->ud;
  if (e->kind == EK_Select && ir_expr_equal(e->select.cond, p->cond))
    return ir_mutate_expr(m, p->arm ? e->select.t : e->select.f);
  return ir_mutate_expr_children(m, e);
}

/* The loop s split on the first invariant select condition of sc, each
 * copy unswitched further; NULL when none qualifies (or on error). */
static Stmt *unswitch_select(IRMutator *m, Stmt *s, Scan *sc) {
  int64_t *budget = m->ud;
  if (sc->nstmts > SELECT_MAX_STMTS || *budget < 2 * sc->nstmts) return NULL;
  for (int i = 0; i < sc->selects.len; i++) {
    Expr *c = sc->selects.data[i];
    if (!invariant(sc, c)) continue;
    *budget -= 2 * sc->nstmts;
    Stmt *arm[2];
    for (int k = 0; k < 2; k++) {
      Pick p = {c, k == 0};
      IRMutator pm = {pick_expr, NULL, &p};
      arm[k] = ir_mutate_stmt(&pm, s);
      if (arm[k]) arm[k] = ir_mutate_stmt(m, arm[k]);
      if (!arm[k]) return NULL;
    }
    return ir_if(ir_simplify(c), arm[0], arm[1]);
  }
  return NULL;
}

static Stmt *unswitch_stmt(IRMutator *m, Stmt *s) {
  if (s->kind != SK_For || s->for_.fkind != FOR_SERIAL) return ir_mutate_stmt_children(m, s);
  Scan sc = {0};
  av_push(&sc.bound, s->for_.var);
  IRVisitor v = {scan_expr, scan_stmt, &sc};
  ir_visit_stmt(&v, s->for_.body);
  Drop d = {0};
  Expr *all = NULL;
  if (sc.nstmts <= UNSWITCH_MAX_STMTS)
    for (int i = 0; i < sc.guards.len; i++) {
      Expr *c = sc.guards.data[i];
      bool seen = false;
      for (int j = 0; j < d.conds.len && !seen; j++) seen = ir_expr_equal(c, d.conds.data[j]);
      if (seen || !invariant(&sc, c)) continue;
      av_push(&d.conds, c);
      all = all ? ir_and(all, c) : c;
    }
  if (!all) {
    Stmt *split = unswitch_select(m, s, &sc);
    return split ? split : ir_mutate_stmt_children(m, s);
  }
  IRMutator dm = {NULL, drop_stmt, &d};
  Stmt *body = ir_mutate_stmt(&dm, s->for_.body);
  if (!body) return NULL;
  body = ir_mutate_stmt(m, body); /* conditions that vary inside the fast copy */
  if (!body) return NULL;
  Stmt *fast = ir_for(s->for_.var, s->for_.min, s->for_.extent, FOR_SERIAL, body);
  return ir_if(ir_call1(INTRIN_likely, ir_simplify(all)), fast, s);
}

Stmt *lower_unswitch(Stmt *body) {
  int64_t budget = SELECT_BUDGET;
  IRMutator m = {NULL, unswitch_stmt, &budget};
  return ir_mutate_stmt(&m, body);
}
