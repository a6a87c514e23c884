/*
 * vthread.c - virtual thread injection.
 *
 * A loop bound to "vthread" asks for more logical threads than the block
 * has: TVM replicates the loop body once per virtual thread and
 * interleaves the copies so their memory accesses stay apart.  Kiln keeps
 * the simplest form with the same meaning: the loop becomes a serial loop
 * run by each hardware thread, so every virtual thread's work is done by
 * the thread that owns it, in turn.  Bound inference already treats a
 * virtual thread like a thread (a shared buffer covers all of them, a
 * local one only its own), so the result is correct for any schedule; a
 * shared-memory fetch placed inside a virtual thread loop is repeated once
 * per virtual thread instead of shared.
 */
#include "lower.h"

#include <string.h>

static Stmt *vt_stmt(IRMutator *m, Stmt *s) {
  Stmt *r = ir_mutate_stmt_children(m, s);
  if (r && r->kind == SK_For && r->for_.fkind == FOR_THREAD && r->for_.thread_tag &&
      !strcmp(r->for_.thread_tag, "vthread"))
    return ir_for(r->for_.var, r->for_.min, r->for_.extent, FOR_SERIAL, r->for_.body);
  return r;
}

Stmt *lower_inject_virtual_thread(Stmt *body) {
  IRMutator m = {NULL, vt_stmt, NULL};
  return ir_mutate_stmt(&m, body);
}
