/*
 * thread_sync.c - barrier insertion in a kernel (TVM's ThreadSync for
 * shared memory).
 *
 * Shared memory is written by some threads of a block and read by others,
 * so a barrier must separate a write from a later read (read after write)
 * and a read from a later write of the same buffer (write after read: the
 * next tile must not overwrite data another thread is still reading).
 * The pass walks each sequence keeping the shared buffers written and read
 * since the last barrier, and puts a barrier before the first statement
 * that conflicts with them.  A serial loop whose body both writes and
 * reads one shared buffer gets a barrier at the top of its body, for the
 * conflict between one iteration's reads and the next one's writes.
 *
 * Every thread of a block must reach every barrier, so a barrier may not
 * go inside a branch on a thread index or inside a thread loop shorter
 * than its launch extent; that is an error naming the kernel and the
 * buffer, since the schedule has to change (split evenly, bind loops of
 * one extent to a tag).
 */
#include "lower.h"

#include <string.h>

typedef struct Sync {
  DeviceKernel *k;
  PtrMap shared;     /* shared buffer Vars of the kernel */
  PtrMap thread_var; /* loop Vars bound to threadIdx */
  const char *divergent; /* why the current point is not reached by every thread, or NULL */
  int failed;
} Sync;

typedef struct Acc {
  Sync *sy;
  PtrMap rd, wr; /* shared buffer Vars read / written */
} Acc;

static void acc_expr(IRVisitor *v, Expr *e) {
  Acc *a = v->ud;
  if (e->kind == EK_Load && pm_has(&a->sy->shared, e->load.buf)) pm_put(&a->rd, e->load.buf, e);
  ir_visit_expr_children(v, e);
}

static void acc_stmt(IRVisitor *v, Stmt *s) {
  Acc *a = v->ud;
  if (s->kind == SK_Store && pm_has(&a->sy->shared, s->store.buf)) pm_put(&a->wr, s->store.buf, s);
  ir_visit_stmt_children(v, s);
}

static void accesses(Sync *sy, Stmt *s, Acc *a) {
  memset(a, 0, sizeof *a);
  a->sy = sy;
  IRVisitor v = {acc_expr, acc_stmt, a};
  ir_visit_stmt(&v, s);
}

static void acc_free(Acc *a) {
  pm_free(&a->rd);
  pm_free(&a->wr);
}

/* A key of `m` that `set` also holds, or NULL. */
static const Expr *overlap(const PtrMap *m, const PtrMap *set) {
  for (int i = 0; i < m->cap; i++)
    if (m->keys && m->keys[i] && pm_has(set, m->keys[i])) return m->keys[i];
  return NULL;
}

static void merge(PtrMap *into, const PtrMap *from) {
  for (int i = 0; i < from->cap; i++)
    if (from->keys && from->keys[i]) pm_put(into, from->keys[i], from->vals[i]);
}

static Stmt *barrier(Sync *sy, const Expr *buf) {
  if (sy->divergent && !sy->failed) {
    kiln_set_error("kernel '%s': shared buffer '%s' needs a barrier %s, where not every thread "
                   "of the block would reach it; split the thread-bound axes evenly and bind "
                   "loops of one extent to each thread tag",
                   sy->k->name, buf->var.name, sy->divergent);
    sy->failed = 1;
  }
  return ir_attr("device_barrier", NULL, ir_str("shared"), ir_nop());
}

static Stmt *sync(Sync *sy, Stmt *s);

static Stmt *sync_seq(Sync *sy, Stmt *s) {
  PtrMap w = {0}, r = {0};
  AVec out = {0};
  for (int i = 0; i < s->seq.n; i++) {
    Stmt *c = sync(sy, s->seq.s[i]);
    Acc a;
    accesses(sy, c, &a);
    const Expr *hit = overlap(&a.rd, &w);
    if (!hit) hit = overlap(&a.wr, &r);
    if (hit) {
      av_push(&out, barrier(sy, hit));
      pm_free(&w);
      pm_free(&r);
    }
    merge(&w, &a.wr);
    merge(&r, &a.rd);
    acc_free(&a);
    av_push(&out, c);
  }
  pm_free(&w);
  pm_free(&r);
  return ir_seq(out.len, (Stmt **)out.data);
}

static Stmt *sync_stmt(IRMutator *m, Stmt *s) {
  Sync *sy = m->ud;
  switch (s->kind) {
  case SK_Seq:
    return sync_seq(sy, s);
  case SK_For: {
    const char *saved = sy->divergent;
    if (s->for_.fkind == FOR_THREAD) {
      if (lower_thread_tag(s->for_.thread_tag) >= TAG_THREAD_X) pm_put(&sy->thread_var, s->for_.var, s);
      if (!lower_thread_loop_full(sy->k, s))
        sy->divergent = kfmt("inside loop '%s' (%s extent %s, launched with %s)", s->for_.var->var.name,
                             s->for_.thread_tag, ir_expr_str(s->for_.extent),
                             ir_expr_str(sy->k->extent[lower_thread_tag(s->for_.thread_tag)]));
    }
    Stmt *r = ir_mutate_stmt_children(m, s);
    sy->divergent = saved;
    if (r->for_.fkind == FOR_THREAD) return r;
    Acc a;
    accesses(sy, r->for_.body, &a);
    const Expr *hit = overlap(&a.wr, &a.rd);
    acc_free(&a);
    if (!hit) return r;
    Stmt *body = ir_seq2(barrier(sy, hit), r->for_.body);
    Stmt *n = ir_for(r->for_.var, r->for_.min, r->for_.extent, r->for_.fkind, body);
    n->for_.thread_tag = r->for_.thread_tag;
    return n;
  }
  case SK_IfThenElse: {
    const char *saved = sy->divergent;
    if (ir_expr_uses_any(s->if_.cond, &sy->thread_var))
      sy->divergent = kfmt("inside the branch 'if %s'", ir_expr_str(s->if_.cond));
    Stmt *r = ir_mutate_stmt_children(m, s);
    sy->divergent = saved;
    return r;
  }
  case SK_Allocate:
    if (s->alloc.scope && !strcmp(s->alloc.scope, "shared")) pm_put(&sy->shared, s->alloc.buf, s);
    return ir_mutate_stmt_children(m, s);
  case SK_Store:
  case SK_Provide:
  case SK_Realize:
  case SK_Evaluate:
  case SK_Attr:
  case SK_Produce:
  case SK_LetStmt:
    return ir_mutate_stmt_children(m, s);
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

static Stmt *sync(Sync *sy, Stmt *s) {
  IRMutator m = {NULL, sync_stmt, sy};
  return ir_mutate_stmt(&m, s);
}

int lower_thread_sync(DeviceKernel *k) {
  Sync sy;
  memset(&sy, 0, sizeof sy);
  sy.k = k;
  Stmt *body = sync(&sy, k->body);
  pm_free(&sy.shared);
  pm_free(&sy.thread_var);
  if (sy.failed) return -1;
  k->body = body;
  return 0;
}
