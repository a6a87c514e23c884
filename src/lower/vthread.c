/*
 * vthread.c - virtual thread injection (TVM's InjectVirtualThread).
 *
 * A loop bound to "vthread" asks for more logical threads than the block
 * has.  Its body is not run once per virtual thread in turn: the virtual
 * threads are interleaved into the body, so one hardware thread issues
 * their instructions side by side and shares what they have in common.
 *
 *   - "touched" is what depends on the virtual thread variable v: v
 *     itself, let variables computed from it and buffers a touched
 *     statement stores to (to a fixed point);
 *   - a statement that touches nothing runs once for all virtual threads
 *     (a shared-memory fetch, a barrier, a loop's bookkeeping);
 *   - loops, branches on untouched conditions, sequences and allocations
 *     are kept, and the injection goes inside them;
 *   - any other statement that touches something (a store into the local
 *     accumulator, a branch on a touched condition) is replicated once per
 *     virtual thread with v replaced by 0, 1, ...: the copies sit next to
 *     each other, innermost, which is what interleaves them;
 *   - a local array allocated inside the loop and touched is expanded to
 *     one copy per virtual thread (its index offset by v times its size).
 *
 * Bound inference already sized a shared buffer for all virtual threads
 * and a local one for one, so this is correct for any schedule.  Where
 * the loop has a shape this does not handle - a loop bound or a shared
 * allocation that depends on v, an extent that is not constant - it stays
 * the simplest correct form: a serial loop run by each hardware thread.
 */
#include "lower.h"

#include <string.h>

typedef struct VT {
  Expr *var;
  int64_t n;
  PtrMap touched; /* Var (v, let vars, buffer vars) -> 1 */
  PtrMap expand;  /* buffer Var -> its size per virtual thread (Expr *) */
  bool fail;
} VT;

static void use_visit(IRVisitor *v, Expr *e) {
  VT *c = ((void **)v->ud)[0];
  if (e->kind == EK_Var && pm_has(&c->touched, e)) *(bool *)((void **)v->ud)[1] = true;
  ir_visit_expr_children(v, e);
}

static bool touches_expr(VT *c, Expr *e) {
  bool found = false;
  void *ud[2] = {c, &found};
  IRVisitor v = {use_visit, NULL, ud};
  ir_visit_expr(&v, e);
  return found;
}

static bool touches(VT *c, Stmt *s) {
  bool found = false;
  void *ud[2] = {c, &found};
  IRVisitor v = {use_visit, NULL, ud};
  ir_visit_stmt(&v, s);
  return found;
}

/* One pass of the touched analysis; *grew when the set grew. */
static void touch_stmt(IRVisitor *v, Stmt *s) {
  VT *c = ((void **)v->ud)[0];
  bool *grew = ((void **)v->ud)[1];
  if (s->kind == SK_Store && !pm_has(&c->touched, s->store.buf) &&
      (touches_expr(c, s->store.value) || touches_expr(c, s->store.index))) {
    pm_put(&c->touched, s->store.buf, (void *)1);
    *grew = true;
  } else if (s->kind == SK_LetStmt && !pm_has(&c->touched, s->let.var) && touches_expr(c, s->let.value)) {
    pm_put(&c->touched, s->let.var, (void *)1);
    *grew = true;
  }
  ir_visit_stmt_children(v, s);
}

static void touch_all(VT *c, Stmt *body) {
  for (bool grew = true; grew;) {
    grew = false;
    void *ud[2] = {c, &grew};
    IRVisitor v = {NULL, touch_stmt, ud};
    ir_visit_stmt(&v, body);
  }
}

/* Accesses of expanded buffers: index + v * size. */
static Expr *offset_expr(IRMutator *m, Expr *e) {
  VT *c = m->ud;
  Expr *r = ir_mutate_expr_children(m, e);
  if (r && r->kind == EK_Load) {
    Expr *size = pm_get(&c->expand, r->load.buf);
    if (size) {
      Expr *off = ir_mul(c->var, size);
      if (r->load.index->dtype.lanes > 1) off = ir_bcast(off, r->load.index->dtype.lanes);
      return ir_load(r->dtype, r->load.buf, ir_add(r->load.index, off));
    }
  }
  return r;
}

static Stmt *offset_stmt(IRMutator *m, Stmt *s) {
  VT *c = m->ud;
  Stmt *r = ir_mutate_stmt_children(m, s);
  if (r && r->kind == SK_Store) {
    Expr *size = pm_get(&c->expand, r->store.buf);
    if (size) {
      Expr *off = ir_mul(c->var, size);
      if (r->store.index->dtype.lanes > 1) off = ir_bcast(off, r->store.index->dtype.lanes);
      return ir_store(r->store.buf, r->store.value, ir_add(r->store.index, off));
    }
  }
  return r;
}

/* s once per virtual thread, side by side. */
static Stmt *replicate(VT *c, Stmt *s) {
  Stmt **copies = KNEWN(Stmt *, c->n);
  for (int64_t i = 0; i < c->n; i++) copies[i] = ir_substitute_stmt1(s, c->var, ir_int(i, c->var->dtype));
  return ir_seq((int)c->n, copies);
}

static Stmt *inject(VT *c, Stmt *s) {
  if (c->fail || !touches(c, s)) return s;
  switch (s->kind) {
  case SK_For:
    if (touches_expr(c, s->for_.min) || touches_expr(c, s->for_.extent)) {
      c->fail = true;
      return s;
    }
    {
      Stmt *n = KNEW(Stmt);
      *n = *s; /* its kind and thread tag */
      n->for_.body = inject(c, s->for_.body);
      return n;
    }
  case SK_Seq: {
    Stmt **parts = KNEWN(Stmt *, s->seq.n > 0 ? s->seq.n : 1);
    for (int i = 0; i < s->seq.n; i++) parts[i] = inject(c, s->seq.s[i]);
    return ir_seq(s->seq.n, parts);
  }
  case SK_IfThenElse:
    if (touches_expr(c, s->if_.cond)) return replicate(c, s);
    return ir_if(s->if_.cond, inject(c, s->if_.then_), s->if_.else_ ? inject(c, s->if_.else_) : NULL);
  case SK_Attr:
    if (touches_expr(c, s->attr.value)) return replicate(c, s);
    return ir_attr(s->attr.key, s->attr.node, s->attr.value, inject(c, s->attr.body));
  case SK_Produce:
    return ir_produce(s->produce.tensor, inject(c, s->produce.body));
  case SK_Allocate: {
    if (touches_expr(c, s->alloc.size)) {
      c->fail = true;
      return s;
    }
    Expr *size = s->alloc.size;
    if (pm_has(&c->touched, s->alloc.buf)) {
      if (s->alloc.scope && !strcmp(s->alloc.scope, "shared")) { /* written per virtual thread */
        c->fail = true;
        return s;
      }
      size = ir_simplify(ir_mul(s->alloc.size, ir_int(c->n, s->alloc.size->dtype)));
    }
    return ir_allocate(s->alloc.buf, s->alloc.dtype, size, s->alloc.scope, inject(c, s->alloc.body));
  }
  default: /* a store, an evaluation, a let over touched values: one per virtual thread */
    return replicate(c, s);
  }
}

/* Expanded allocations: every touched local array inside the loop. */
static void find_expand(IRVisitor *v, Stmt *s) {
  VT *c = v->ud;
  if (s->kind == SK_Allocate && pm_has(&c->touched, s->alloc.buf) &&
      !(s->alloc.scope && !strcmp(s->alloc.scope, "shared")))
    pm_put(&c->expand, s->alloc.buf, s->alloc.size);
  ir_visit_stmt_children(v, s);
}

static Stmt *interleave(Stmt *loop) {
  VT c = {loop->for_.var, 0, {0}, {0}, false};
  if (!ir_is_const_int(loop->for_.extent, &c.n) || c.n < 1 || !ir_is_int_value(loop->for_.min, 0)) return NULL;
  pm_put(&c.touched, c.var, (void *)1);
  touch_all(&c, loop->for_.body);
  IRVisitor fv = {NULL, find_expand, &c};
  ir_visit_stmt(&fv, loop->for_.body);
  IRMutator om = {offset_expr, offset_stmt, &c};
  Stmt *body = c.expand.len ? ir_mutate_stmt(&om, loop->for_.body) : loop->for_.body;
  Stmt *r = body ? inject(&c, body) : NULL;
  bool ok = r && !c.fail;
  pm_free(&c.touched);
  pm_free(&c.expand);
  return ok ? ir_simplify_stmt(r) : NULL;
}

static Stmt *vt_stmt(IRMutator *m, Stmt *s) {
  Stmt *r = ir_mutate_stmt_children(m, s); /* innermost first */
  if (r && r->kind == SK_For && r->for_.fkind == FOR_THREAD && r->for_.thread_tag &&
      !strcmp(r->for_.thread_tag, "vthread")) {
    Stmt *in = interleave(r);
    return in ? in : ir_for(r->for_.var, r->for_.min, r->for_.extent, FOR_SERIAL, r->for_.body);
  }
  return r;
}

Stmt *lower_inject_virtual_thread(Stmt *body) {
  IRMutator m = {NULL, vt_stmt, NULL};
  return ir_mutate_stmt(&m, body);
}
