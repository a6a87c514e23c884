/*
 * remove_noop.c - drop statements that do nothing: loops, branches,
 * allocations, attributes and lets whose bodies are empty, and constant
 * evaluations.
 */
#include "lower.h"

static Stmt *noop_stmt(IRMutator *m, Stmt *s) {
  Stmt *r = ir_mutate_stmt_children(m, s);
  if (!r) return NULL;
  switch (r->kind) {
  case SK_For:
    return ir_is_nop(r->for_.body) ? ir_nop() : r;
  case SK_Allocate:
    return ir_is_nop(r->alloc.body) ? ir_nop() : r;
  case SK_Attr:
    return ir_is_nop(r->attr.body) ? ir_nop() : r;
  case SK_LetStmt:
    return ir_is_nop(r->let.body) ? ir_nop() : r;
  case SK_IfThenElse:
    if (ir_is_nop(r->if_.then_) && ir_is_nop(r->if_.else_)) return ir_nop();
    if (r->if_.else_ && ir_is_nop(r->if_.else_)) return ir_if(r->if_.cond, r->if_.then_, NULL);
    return r;
  case SK_Realize:
    return ir_is_nop(r->realize.body) ? ir_nop() : r;
  case SK_Store:
  case SK_Provide:
  case SK_Seq:
  case SK_Evaluate:
  case SK_Produce:
    return r;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

Stmt *lower_remove_noop(Stmt *body) {
  IRMutator m = {NULL, noop_stmt, NULL};
  Stmt *r = ir_mutate_stmt(&m, body);
  return r ? r : ir_nop();
}
