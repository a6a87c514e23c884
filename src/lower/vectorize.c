/*
 * vectorize.c - turn vectorized loops into vector expressions.
 *
 * Inside a loop `vectorized (v, min, L)` the variable becomes
 * ramp(min, 1, L); rebuilding each expression through the IR builders then
 * broadcasts scalar operands, turns loads with vector indices into vector
 * loads and stores with vector indices into vector stores.  The loop
 * disappears.  Innermost vectorized loops are handled first.
 *
 * Where the body cannot be executed lane-parallel — a store whose index
 * does not vary with v (a reduction along v would race), a branch or an
 * inner loop bound depending on v, an allocation, a select with a vector
 * condition over loads (both sides would be read, possibly out of bounds),
 * nested vectorization — the loop stays a scalar loop and a note says why.
 *
 * lower_scalarize makes every vectorized loop a serial one, for targets
 * without vector types (standalone C for any C99 compiler).
 */
#include "lower.h"

typedef struct Vec {
  Expr *var, *ramp;
  int lanes;
  const char *fail;
  PtrMap letvars; /* scalar let var -> vector var */
} Vec;

static bool has_load(Expr *e);

static void load_visit(IRVisitor *v, Expr *e) {
  if (e->kind == EK_Load) *(bool *)v->ud = true;
  ir_visit_expr_children(v, e);
}

static bool has_load(Expr *e) {
  bool found = false;
  IRVisitor v = {load_visit, NULL, &found};
  ir_visit_expr(&v, e);
  return found;
}

static Expr *vec_expr(IRMutator *m, Expr *e) {
  Vec *c = m->ud;
  if (c->fail) return e;
  switch (e->kind) {
  case EK_Var: {
    if (e == c->var) return c->ramp;
    Expr *r = pm_get(&c->letvars, e);
    return r ? r : e;
  }
  case EK_Ramp:
  case EK_Broadcast:
    if (ir_expr_uses_var(e, c->var)) c->fail = "nested vectorization";
    return e;
  case EK_Let: {
    Expr *val = ir_mutate_expr(m, e->let.value);
    if (!val) return NULL;
    Expr *var = e->let.var;
    if (val->dtype.lanes > 1) {
      Expr *nv = ir_var(var->var.name, val->dtype);
      pm_put(&c->letvars, var, nv);
      var = nv;
    }
    Expr *body = ir_mutate_expr(m, e->let.body);
    return ir_let(var, val, body);
  }
  case EK_Select: {
    Expr *r = ir_mutate_expr_children(m, e);
    if (r && r->kind == EK_Select && r->select.cond->dtype.lanes > 1 &&
        (has_load(r->select.t) || has_load(r->select.f)))
      c->fail = "a select with a lane-dependent condition over memory reads would read both "
                "branches";
    return r;
  }
  default:
    return ir_mutate_expr_children(m, e);
  }
}

static Stmt *vec_stmt(IRMutator *m, Stmt *s) {
  Vec *c = m->ud;
  if (c->fail) return s;
  switch (s->kind) {
  case SK_Store: {
    Stmt *r = ir_mutate_stmt_children(m, s);
    if (!r) return NULL;
    int li = r->store.index->dtype.lanes, lv = r->store.value->dtype.lanes;
    if (li == 1 && (lv > 1 || ir_stmt_uses_var(s, c->var)))
      c->fail = "a store's index does not depend on the vectorized variable (a reduction along it "
                "would race)";
    else if (li == 1)
      c->fail = "the loop body does not depend on the vectorized variable";
    else if (lv == 1)
      r = ir_store(r->store.buf, ir_bcast(r->store.value, li), r->store.index);
    return r;
  }
  case SK_For:
    if (ir_expr_uses_var(s->for_.min, c->var) || ir_expr_uses_var(s->for_.extent, c->var)) {
      c->fail = "an inner loop's bounds depend on the vectorized variable";
      return s;
    }
    if (s->for_.fkind == FOR_PARALLEL) {
      c->fail = "a parallel loop inside a vectorized loop";
      return s;
    }
    return ir_mutate_stmt_children(m, s);
  case SK_IfThenElse:
    if (ir_expr_uses_var(s->if_.cond, c->var)) {
      c->fail = "a condition depends on the vectorized variable (e.g. the guard of a split that "
                "does not divide)";
      return s;
    }
    return ir_mutate_stmt_children(m, s);
  case SK_Allocate:
    c->fail = "an allocation inside the vectorized loop";
    return s;
  case SK_LetStmt: {
    Expr *val = ir_mutate_expr(m, s->let.value);
    if (!val) return NULL;
    Expr *var = s->let.var;
    if (val->dtype.lanes > 1) {
      Expr *nv = ir_var(var->var.name, val->dtype);
      pm_put(&c->letvars, var, nv);
      var = nv;
    }
    Stmt *body = ir_mutate_stmt(m, s->let.body);
    return ir_let_stmt(var, val, body);
  }
  default:
    return ir_mutate_stmt_children(m, s);
  }
}

typedef struct Outer {
  AVec *notes;
} Outer;

static Stmt *outer_stmt(IRMutator *m, Stmt *s) {
  Outer *o = m->ud;
  Stmt *r = ir_mutate_stmt_children(m, s); /* innermost first */
  if (!r || r->kind != SK_For || r->for_.fkind != FOR_VECTORIZED) return r;
  int64_t lanes;
  const char *name = r->for_.var->var.name;
  if (!ir_is_const_int(r->for_.extent, &lanes)) {
    av_push(o->notes, kfmt("vectorize: loop '%s' left scalar: its extent is not constant", name));
  } else if (lanes <= 1) {
    return ir_for(r->for_.var, r->for_.min, r->for_.extent, FOR_SERIAL, r->for_.body);
  } else if ((lanes & (lanes - 1)) != 0 || lanes > 64) {
    av_push(o->notes, kfmt("vectorize: loop '%s' left scalar: %lld lanes (vector code needs a power "
                           "of two up to 64; split by such a factor)",
                           name, (long long)lanes));
  } else {
    Vec c = {r->for_.var, ir_ramp(r->for_.min, ir_i32(1), (int)lanes), (int)lanes, NULL, {0}};
    IRMutator vm = {vec_expr, vec_stmt, &c};
    Stmt *body = ir_mutate_stmt(&vm, r->for_.body);
    pm_free(&c.letvars);
    if (!c.fail && body) return body;
    av_push(o->notes, kfmt("vectorize: loop '%s' left scalar: %s", name, c.fail ? c.fail : kiln_get_error()));
  }
  return ir_for(r->for_.var, r->for_.min, r->for_.extent, FOR_SERIAL, r->for_.body);
}

Stmt *lower_vectorize(Stmt *body, AVec *notes) {
  Outer o = {notes};
  IRMutator m = {NULL, outer_stmt, &o};
  return ir_mutate_stmt(&m, body);
}

static Stmt *scalar_stmt(IRMutator *m, Stmt *s) {
  Stmt *r = ir_mutate_stmt_children(m, s);
  if (!r || r->kind != SK_For || r->for_.fkind != FOR_VECTORIZED) return r;
  return ir_for(r->for_.var, r->for_.min, r->for_.extent, FOR_SERIAL, r->for_.body);
}

Stmt *lower_scalarize(Stmt *body) {
  IRMutator m = {NULL, scalar_stmt, NULL};
  return ir_mutate_stmt(&m, body);
}
