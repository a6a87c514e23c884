/*
 * verify.c - ir_verify: the loop IR's invariants, checked after every
 * lowering pass (lower.c) in debug builds and in the tests
 * (kiln_verify_enabled), as QBE's ssacheck checks its IR.
 *
 *   - a variable bound in the function (a loop variable, a Let, an
 *     Allocate's buffer) is used only inside its binding (variables never
 *     bound are the function's parameters: buffer handles, shape vars);
 *   - after flattening there is no Provide, Realize or tensor Read left;
 *   - after flattening every Load and Store is on an argument's buffer or
 *     on a buffer allocated around it;
 *   - lanes agree: a binary operation's operands have its lanes, a
 *     Store's value and index the same lanes, a Load's index the Load's.
 * A violation is an error naming the pass that broke it and the rule; it
 * is a bug in that pass.
 */
#include <stdint.h>
#include <string.h>

#include "lower.h"

typedef struct Check {
  const LoweredFunc *f;
  const char *after;
  bool flattened;
  PtrMap bound;  /* Var -> (void *)1 when bound anywhere in the function */
  PtrMap scope;  /* Var -> depth + 1 while in scope, NULL outside */
  int failed;
} Check;

static int fail(Check *c, const char *what, const char *detail) {
  if (c->failed++) return -1;
  return kiln_set_error("ir_verify after %s in '%s': %s%s", c->after, c->f->name ? c->f->name : "?", what,
                        detail ? detail : "");
}

/* ---- which variables are bound somewhere ---- */

static void collect_stmt(IRVisitor *v, Stmt *s) {
  Check *c = v->ud;
  if (s->kind == SK_For) pm_put(&c->bound, s->for_.var, (void *)1);
  if (s->kind == SK_LetStmt) pm_put(&c->bound, s->let.var, (void *)1);
  if (s->kind == SK_Allocate) pm_put(&c->bound, s->alloc.buf, (void *)1);
  ir_visit_stmt_children(v, s);
}

static void collect_expr(IRVisitor *v, Expr *e) {
  Check *c = v->ud;
  if (e->kind == EK_Let) pm_put(&c->bound, e->let.var, (void *)1);
  ir_visit_expr_children(v, e);
}

/* ---- the walk ---- */

static void check_stmt(Check *c, Stmt *s);

static int lanes(const Expr *e) { return e ? e->dtype.lanes : 1; }

static void enter(Check *c, Expr *var) { pm_put(&c->scope, var, (void *)1); }
static void leave(Check *c, Expr *var) { pm_put(&c->scope, var, NULL); }

static bool is_buffer(Check *c, const Expr *buf) {
  for (int i = 0; i < c->f->nargs; i++)
    if (c->f->arg_bufs[i] == buf) return true;
  return pm_get(&c->scope, buf) != NULL;
}

static void check_expr(Check *c, Expr *e) {
  if (!e || c->failed) return;
  switch (e->kind) {
  case EK_Var:
    if (pm_get(&c->bound, e) && !pm_get(&c->scope, e)) fail(c, "variable used outside its binding: ", e->var.name);
    return;
  case EK_Let:
    check_expr(c, e->let.value);
    enter(c, e->let.var);
    check_expr(c, e->let.body);
    leave(c, e->let.var);
    return;
  case EK_Read:
    if (c->flattened) fail(c, "a tensor read is left after flattening: ", e->read.tensor ? e->read.tensor->name : "?");
    for (int i = 0; i < e->read.n; i++) check_expr(c, e->read.idx[i]);
    return;
  case EK_Load:
    if (c->flattened && !is_buffer(c, e->load.buf))
      fail(c, "a load from a buffer that is neither an argument nor allocated around it: ",
           e->load.buf && e->load.buf->kind == EK_Var ? e->load.buf->var.name : "?");
    if (lanes(e->load.index) != lanes(e)) fail(c, "a load's index and value have different lanes", NULL);
    check_expr(c, e->load.index);
    return;
  case EK_Ramp:
    if (lanes(e) != e->ramp.lanes) fail(c, "a ramp's type and lane count disagree", NULL);
    check_expr(c, e->ramp.base);
    check_expr(c, e->ramp.stride);
    return;
  default:
    break;
  }
  if (ir_is_binary(e->kind) && e->bin.a && e->bin.b &&
      (lanes(e->bin.a) != lanes(e->bin.b) || lanes(e->bin.a) != lanes(e)))
    fail(c, "operands with different lanes: ", expr_kind_name(e->kind));
  switch (e->kind) {
  case EK_Select:
    check_expr(c, e->select.cond);
    check_expr(c, e->select.t);
    check_expr(c, e->select.f);
    return;
  case EK_Call:
    for (int i = 0; i < e->call.nargs; i++) check_expr(c, e->call.args[i]);
    return;
  case EK_Broadcast:
    check_expr(c, e->bcast.value);
    return;
  case EK_Reduce:
    check_expr(c, e->reduce.source);
    check_expr(c, e->reduce.cond);
    return;
  case EK_Not:
  case EK_Cast:
    check_expr(c, e->bin.a);
    return;
  default:
    if (ir_is_binary(e->kind)) {
      check_expr(c, e->bin.a);
      check_expr(c, e->bin.b);
    }
    return;
  }
}

static void check_stmt(Check *c, Stmt *s) {
  if (!s || c->failed) return;
  switch (s->kind) {
  case SK_For:
    check_expr(c, s->for_.min);
    check_expr(c, s->for_.extent);
    enter(c, s->for_.var);
    check_stmt(c, s->for_.body);
    leave(c, s->for_.var);
    return;
  case SK_LetStmt:
    check_expr(c, s->let.value);
    enter(c, s->let.var);
    check_stmt(c, s->let.body);
    leave(c, s->let.var);
    return;
  case SK_Allocate:
    check_expr(c, s->alloc.size);
    enter(c, s->alloc.buf);
    check_stmt(c, s->alloc.body);
    leave(c, s->alloc.buf);
    return;
  case SK_Store:
    if (c->flattened && !is_buffer(c, s->store.buf))
      fail(c, "a store to a buffer that is neither an argument nor allocated around it: ",
           s->store.buf && s->store.buf->kind == EK_Var ? s->store.buf->var.name : "?");
    if (lanes(s->store.value) != lanes(s->store.index)) fail(c, "a store's value and index have different lanes", NULL);
    check_expr(c, s->store.value);
    check_expr(c, s->store.index);
    return;
  case SK_Provide:
    if (c->flattened) fail(c, "a Provide is left after flattening: ", s->provide.tensor ? s->provide.tensor->name : "?");
    check_expr(c, s->provide.value);
    for (int i = 0; i < s->provide.n; i++) check_expr(c, s->provide.idx[i]);
    return;
  case SK_Realize:
    if (c->flattened) fail(c, "a Realize is left after flattening: ", s->realize.tensor ? s->realize.tensor->name : "?");
    check_stmt(c, s->realize.body);
    return;
  case SK_IfThenElse:
    check_expr(c, s->if_.cond);
    check_stmt(c, s->if_.then_);
    check_stmt(c, s->if_.else_);
    return;
  case SK_Seq:
    for (int i = 0; i < s->seq.n; i++) check_stmt(c, s->seq.s[i]);
    return;
  case SK_Evaluate:
    check_expr(c, s->eval.value);
    return;
  case SK_Attr:
    check_expr(c, s->attr.value);
    check_stmt(c, s->attr.body);
    return;
  case SK_Produce:
    check_stmt(c, s->produce.body);
    return;
  default:
    return;
  }
}

int ir_verify(const LoweredFunc *f, const char *after, bool flattened) {
  Check c;
  memset(&c, 0, sizeof c);
  c.f = f;
  c.after = after ? after : "?";
  c.flattened = flattened;
  IRVisitor v = {collect_expr, collect_stmt, &c};
  if (f->body) ir_visit_stmt(&v, f->body);
  check_stmt(&c, f->body);
  pm_free(&c.bound);
  pm_free(&c.scope);
  return c.failed ? -1 : 0;
}
