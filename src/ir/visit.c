/*
 * visit.c - the generic mutator and visitor, and the small utilities built
 * on them (substitution, variable use, collecting tensor reads).
 *
 * A mutator rebuilds a node only when one of its children changed, so an
 * unchanged subtree is shared, never copied.
 */
#include "ir.h"

#include <string.h>

Expr *ir_mutate_expr(IRMutator *m, Expr *e) {
  if (!e) return NULL;
  return m->expr ? m->expr(m, e) : ir_mutate_expr_children(m, e);
}

Stmt *ir_mutate_stmt(IRMutator *m, Stmt *s) {
  if (!s) return NULL;
  return m->stmt ? m->stmt(m, s) : ir_mutate_stmt_children(m, s);
}

static Expr *clone_expr(Expr *e) {
  Expr *c = KNEW(Expr);
  *c = *e;
  return c;
}

/* Mutate an array of expressions; returns the original array if unchanged. */
static Expr **mutate_array(IRMutator *m, int n, Expr **a, bool *changed) {
  Expr **r = NULL;
  for (int i = 0; i < n; i++) {
    Expr *x = ir_mutate_expr(m, a[i]);
    if (x != a[i] && !r) {
      r = KNEWN(Expr *, n);
      memcpy(r, a, sizeof(Expr *) * (size_t)n);
    }
    if (r) r[i] = x;
  }
  if (r) *changed = true;
  return r ? r : a;
}

Expr *ir_mutate_expr_children(IRMutator *m, Expr *e) {
  switch (e->kind) {
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Var:
    return e;
  KILN_EXPR_BINARY_CASES {
    Expr *a = ir_mutate_expr(m, e->bin.a), *b = ir_mutate_expr(m, e->bin.b);
    if (a == e->bin.a && b == e->bin.b) return e;
    if (!a || !b) return NULL;
    if (dt_eq(a->dtype, e->bin.a->dtype) && dt_eq(b->dtype, e->bin.b->dtype)) {
      Expr *c = clone_expr(e);
      c->bin.a = a;
      c->bin.b = b;
      return c;
    }
    return ir_binary(e->kind, a, b);
  }
  case EK_Not: {
    Expr *a = ir_mutate_expr(m, e->bin.a);
    return a == e->bin.a ? e : ir_not(a);
  }
  case EK_Cast: {
    Expr *a = ir_mutate_expr(m, e->bin.a);
    if (a == e->bin.a) return e;
    if (!a) return NULL;
    return ir_cast(dt_with_lanes(e->dtype, a->dtype.lanes), a);
  }
  case EK_Select: {
    Expr *c = ir_mutate_expr(m, e->select.cond), *t = ir_mutate_expr(m, e->select.t),
         *f = ir_mutate_expr(m, e->select.f);
    if (c == e->select.cond && t == e->select.t && f == e->select.f) return e;
    return ir_select(c, t, f);
  }
  case EK_Call: {
    bool ch = false;
    Expr **a = mutate_array(m, e->call.nargs, e->call.args, &ch);
    if (!ch) return e;
    for (int i = 0; i < e->call.nargs; i++)
      if (!a[i]) return NULL;
    bool same = true;
    for (int i = 0; i < e->call.nargs; i++) same &= dt_eq(a[i]->dtype, e->call.args[i]->dtype);
    if (same) {
      Expr *c = clone_expr(e);
      c->call.args = a;
      return c;
    }
    return ir_call(e->call.op, e->call.nargs, a);
  }
  case EK_Read: {
    bool ch = false;
    Expr **a = mutate_array(m, e->read.n, e->read.idx, &ch);
    if (!ch) return e;
    for (int i = 0; i < e->read.n; i++)
      if (!a[i]) return NULL;
    Expr *c = clone_expr(e);
    c->read.idx = a;
    return c;
  }
  case EK_Load: {
    Expr *b = ir_mutate_expr(m, e->load.buf), *i = ir_mutate_expr(m, e->load.index);
    if (b == e->load.buf && i == e->load.index) return e;
    if (!b || !i) return NULL;
    return ir_load(dt_with_lanes(e->dtype, i->dtype.lanes), b, i);
  }
  case EK_Ramp: {
    Expr *b = ir_mutate_expr(m, e->ramp.base), *s = ir_mutate_expr(m, e->ramp.stride);
    if (b == e->ramp.base && s == e->ramp.stride) return e;
    return ir_ramp(b, s, e->ramp.lanes);
  }
  case EK_Broadcast: {
    Expr *v = ir_mutate_expr(m, e->bcast.value);
    if (v == e->bcast.value) return e;
    return ir_bcast(v, e->bcast.lanes);
  }
  case EK_Let: {
    Expr *var = ir_mutate_expr(m, e->let.var), *v = ir_mutate_expr(m, e->let.value),
         *b = ir_mutate_expr(m, e->let.body);
    if (var == e->let.var && v == e->let.value && b == e->let.body) return e;
    return ir_let(var, v, b);
  }
  case EK_Reduce: {
    Expr *src = ir_mutate_expr(m, e->reduce.source);
    Expr *cond = ir_mutate_expr(m, e->reduce.cond);
    if (src == e->reduce.source && cond == e->reduce.cond) return e;
    if (!src || (e->reduce.cond && !cond)) return NULL;
    Expr *c = clone_expr(e);
    c->reduce.source = src;
    c->reduce.cond = cond;
    c->dtype = src->dtype;
    return c;
  }
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

static Stmt *clone_stmt(Stmt *s) {
  Stmt *c = KNEW(Stmt);
  *c = *s;
  return c;
}

Stmt *ir_mutate_stmt_children(IRMutator *m, Stmt *s) {
  switch (s->kind) {
  case SK_For: {
    Expr *v = ir_mutate_expr(m, s->for_.var), *mn = ir_mutate_expr(m, s->for_.min),
         *ex = ir_mutate_expr(m, s->for_.extent);
    Stmt *b = ir_mutate_stmt(m, s->for_.body);
    if (v == s->for_.var && mn == s->for_.min && ex == s->for_.extent && b == s->for_.body) return s;
    if (!v || !mn || !ex || !b) return NULL;
    Stmt *c = clone_stmt(s);
    c->for_.var = v;
    c->for_.min = mn;
    c->for_.extent = ex;
    c->for_.body = b;
    return c;
  }
  case SK_Store: {
    Expr *b = ir_mutate_expr(m, s->store.buf), *v = ir_mutate_expr(m, s->store.value),
         *i = ir_mutate_expr(m, s->store.index);
    if (b == s->store.buf && v == s->store.value && i == s->store.index) return s;
    return ir_store(b, v, i);
  }
  case SK_Provide: {
    Expr *v = ir_mutate_expr(m, s->provide.value);
    bool ch = v != s->provide.value;
    Expr **idx = mutate_array(m, s->provide.n, s->provide.idx, &ch);
    if (!ch) return s;
    return ir_provide(s->provide.tensor, v, s->provide.n, idx);
  }
  case SK_Allocate: {
    Expr *buf = ir_mutate_expr(m, s->alloc.buf), *sz = ir_mutate_expr(m, s->alloc.size);
    Stmt *b = ir_mutate_stmt(m, s->alloc.body);
    if (buf == s->alloc.buf && sz == s->alloc.size && b == s->alloc.body) return s;
    return ir_allocate(buf, s->alloc.dtype, sz, s->alloc.scope, b);
  }
  case SK_Realize: {
    bool ch = false;
    Expr **mn = mutate_array(m, s->realize.n, s->realize.min, &ch);
    Expr **ex = mutate_array(m, s->realize.n, s->realize.extent, &ch);
    Stmt *b = ir_mutate_stmt(m, s->realize.body);
    if (!ch && b == s->realize.body) return s;
    return ir_realize(s->realize.tensor, s->realize.n, mn, ex, s->realize.scope, b);
  }
  case SK_IfThenElse: {
    Expr *c = ir_mutate_expr(m, s->if_.cond);
    Stmt *t = ir_mutate_stmt(m, s->if_.then_), *e = ir_mutate_stmt(m, s->if_.else_);
    if (c == s->if_.cond && t == s->if_.then_ && e == s->if_.else_) return s;
    return ir_if(c, t, e);
  }
  case SK_Seq: {
    Stmt **r = NULL;
    for (int i = 0; i < s->seq.n; i++) {
      Stmt *x = ir_mutate_stmt(m, s->seq.s[i]);
      if (x != s->seq.s[i] && !r) {
        r = KNEWN(Stmt *, s->seq.n);
        memcpy(r, s->seq.s, sizeof(Stmt *) * (size_t)s->seq.n);
      }
      if (r) r[i] = x;
    }
    if (!r) return s;
    for (int i = 0; i < s->seq.n; i++)
      if (!r[i]) return NULL;
    return ir_seq(s->seq.n, r);
  }
  case SK_Evaluate: {
    Expr *v = ir_mutate_expr(m, s->eval.value);
    return v == s->eval.value ? s : ir_evaluate(v);
  }
  case SK_Attr: {
    Expr *v = ir_mutate_expr(m, s->attr.value);
    Stmt *b = ir_mutate_stmt(m, s->attr.body);
    if (v == s->attr.value && b == s->attr.body) return s;
    if (!b) return NULL;
    Stmt *c = clone_stmt(s);
    c->attr.value = v;
    c->attr.body = b;
    return c;
  }
  case SK_Produce: {
    Stmt *b = ir_mutate_stmt(m, s->produce.body);
    return b == s->produce.body ? s : ir_produce(s->produce.tensor, b);
  }
  case SK_LetStmt: {
    Expr *var = ir_mutate_expr(m, s->let.var), *v = ir_mutate_expr(m, s->let.value);
    Stmt *b = ir_mutate_stmt(m, s->let.body);
    if (var == s->let.var && v == s->let.value && b == s->let.body) return s;
    return ir_let_stmt(var, v, b);
  }
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

void ir_visit_expr(IRVisitor *v, Expr *e) {
  if (!e) return;
  if (v->expr)
    v->expr(v, e);
  else
    ir_visit_expr_children(v, e);
}

void ir_visit_stmt(IRVisitor *v, Stmt *s) {
  if (!s) return;
  if (v->stmt)
    v->stmt(v, s);
  else
    ir_visit_stmt_children(v, s);
}

void ir_visit_expr_children(IRVisitor *v, Expr *e) {
  switch (e->kind) {
  case EK_IntImm:
  case EK_FloatImm:
  case EK_StrImm:
  case EK_Var:
    return;
  KILN_EXPR_BINARY_CASES
    ir_visit_expr(v, e->bin.a);
    ir_visit_expr(v, e->bin.b);
    return;
  case EK_Not:
  case EK_Cast:
    ir_visit_expr(v, e->bin.a);
    return;
  case EK_Select:
    ir_visit_expr(v, e->select.cond);
    ir_visit_expr(v, e->select.t);
    ir_visit_expr(v, e->select.f);
    return;
  case EK_Call:
    for (int i = 0; i < e->call.nargs; i++) ir_visit_expr(v, e->call.args[i]);
    return;
  case EK_Read:
    for (int i = 0; i < e->read.n; i++) ir_visit_expr(v, e->read.idx[i]);
    return;
  case EK_Load:
    ir_visit_expr(v, e->load.buf);
    ir_visit_expr(v, e->load.index);
    return;
  case EK_Ramp:
    ir_visit_expr(v, e->ramp.base);
    ir_visit_expr(v, e->ramp.stride);
    return;
  case EK_Broadcast:
    ir_visit_expr(v, e->bcast.value);
    return;
  case EK_Let:
    ir_visit_expr(v, e->let.var);
    ir_visit_expr(v, e->let.value);
    ir_visit_expr(v, e->let.body);
    return;
  case EK_Reduce:
    ir_visit_expr(v, e->reduce.source);
    ir_visit_expr(v, e->reduce.cond);
    return;
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

void ir_visit_stmt_children(IRVisitor *v, Stmt *s) {
  switch (s->kind) {
  case SK_For:
    ir_visit_expr(v, s->for_.var);
    ir_visit_expr(v, s->for_.min);
    ir_visit_expr(v, s->for_.extent);
    ir_visit_stmt(v, s->for_.body);
    return;
  case SK_Store:
    ir_visit_expr(v, s->store.buf);
    ir_visit_expr(v, s->store.value);
    ir_visit_expr(v, s->store.index);
    return;
  case SK_Provide:
    ir_visit_expr(v, s->provide.value);
    for (int i = 0; i < s->provide.n; i++) ir_visit_expr(v, s->provide.idx[i]);
    return;
  case SK_Allocate:
    ir_visit_expr(v, s->alloc.buf);
    ir_visit_expr(v, s->alloc.size);
    ir_visit_stmt(v, s->alloc.body);
    return;
  case SK_Realize:
    for (int i = 0; i < s->realize.n; i++) {
      ir_visit_expr(v, s->realize.min[i]);
      ir_visit_expr(v, s->realize.extent[i]);
    }
    ir_visit_stmt(v, s->realize.body);
    return;
  case SK_IfThenElse:
    ir_visit_expr(v, s->if_.cond);
    ir_visit_stmt(v, s->if_.then_);
    ir_visit_stmt(v, s->if_.else_);
    return;
  case SK_Seq:
    for (int i = 0; i < s->seq.n; i++) ir_visit_stmt(v, s->seq.s[i]);
    return;
  case SK_Evaluate:
    ir_visit_expr(v, s->eval.value);
    return;
  case SK_Attr:
    ir_visit_expr(v, s->attr.value);
    ir_visit_stmt(v, s->attr.body);
    return;
  case SK_Produce:
    ir_visit_stmt(v, s->produce.body);
    return;
  case SK_LetStmt:
    ir_visit_expr(v, s->let.var);
    ir_visit_expr(v, s->let.value);
    ir_visit_stmt(v, s->let.body);
    return;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* ---- substitution ---- */

static Expr *subst_expr(IRMutator *m, Expr *e) {
  if (e->kind == EK_Var) {
    Expr *r = pm_get(m->ud, e);
    return r ? r : e;
  }
  return ir_mutate_expr_children(m, e);
}

Expr *ir_substitute(Expr *e, const PtrMap *vmap) {
  if (!vmap->len) return e;
  IRMutator m = {subst_expr, NULL, (void *)vmap};
  return ir_mutate_expr(&m, e);
}

Stmt *ir_substitute_stmt(Stmt *s, const PtrMap *vmap) {
  if (!vmap->len) return s;
  IRMutator m = {subst_expr, NULL, (void *)vmap};
  return ir_mutate_stmt(&m, s);
}

Expr *ir_substitute1(Expr *e, Expr *var, Expr *value) {
  PtrMap m = {0};
  pm_put(&m, var, value);
  Expr *r = ir_substitute(e, &m);
  pm_free(&m);
  return r;
}

Stmt *ir_substitute_stmt1(Stmt *s, Expr *var, Expr *value) {
  PtrMap m = {0};
  pm_put(&m, var, value);
  Stmt *r = ir_substitute_stmt(s, &m);
  pm_free(&m);
  return r;
}

typedef struct {
  const PtrMap *vars;
  const Expr *one;
  bool found;
} UseCtx;

static void use_expr(IRVisitor *v, Expr *e) {
  UseCtx *c = v->ud;
  if (c->found) return;
  if (e->kind == EK_Var) {
    if (e == c->one || (c->vars && pm_has(c->vars, e))) c->found = true;
    return;
  }
  ir_visit_expr_children(v, e);
}

bool ir_expr_uses_var(Expr *e, const Expr *var) {
  UseCtx c = {NULL, var, false};
  IRVisitor v = {use_expr, NULL, &c};
  ir_visit_expr(&v, e);
  return c.found;
}

bool ir_stmt_uses_var(Stmt *s, const Expr *var) {
  UseCtx c = {NULL, var, false};
  IRVisitor v = {use_expr, NULL, &c};
  ir_visit_stmt(&v, s);
  return c.found;
}

bool ir_expr_uses_any(Expr *e, const PtrMap *vars) {
  if (!vars->len) return false;
  UseCtx c = {vars, NULL, false};
  IRVisitor v = {use_expr, NULL, &c};
  ir_visit_expr(&v, e);
  return c.found;
}

static void reads_expr(IRVisitor *v, Expr *e) {
  if (e->kind == EK_Read) {
    AVec *out = v->ud;
    if (av_find(out, e->read.tensor) < 0) av_push(out, e->read.tensor);
  }
  ir_visit_expr_children(v, e);
}

void ir_collect_reads(Expr *e, AVec *tensors) {
  IRVisitor v = {reads_expr, NULL, tensors};
  ir_visit_expr(&v, e);
}
