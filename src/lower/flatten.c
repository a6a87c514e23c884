/*
 * flatten.c - storage flattening: tensors become flat buffers.
 *
 * A Realize of region (min, extent) per dimension becomes an Allocate of
 * prod(extent) elements; within it, T[i, j] (Provide and Read) becomes
 * buf[(i - min0) * extent1 + (j - min1)], row-major.  Function arguments
 * are bound to their parameter buffers with min 0 and their full shape.
 * An extern op's buffer variables are replaced by the real buffers.
 */
#include "lower.h"

#include <string.h>

typedef struct BufInfo {
  Expr *buf;
  int ndim;
  Expr **min, **extent;
} BufInfo;

typedef struct Flat {
  Schedule *s;
  PtrMap bufs; /* Tensor (stage op) -> BufInfo */
  bool failed;
} Flat;

static BufInfo *lookup(Flat *f, Tensor *t) {
  BufInfo *b = pm_get(&f->bufs, t);
  if (b) return b;
  Stage *st = lower_stage_of(f->s, t);
  if (st) b = pm_get(&f->bufs, st->op);
  return b;
}

static Expr *flat_index(BufInfo *b, int n, Expr **idx) {
  Expr *flat = ir_i32(0);
  for (int d = 0; d < n; d++) {
    Expr *i = idx[d];
    if (!dt_eq(i->dtype, DT_I32)) i = ir_cast(DT_I32, i);
    Expr *off = ir_sub(i, ir_cast(DT_I32, b->min[d]));
    flat = ir_add(ir_mul(flat, ir_cast(DT_I32, b->extent[d])), off);
  }
  return ir_simplify(flat);
}

static Expr *flat_expr(IRMutator *m, Expr *e) {
  Flat *f = m->ud;
  Expr *r = ir_mutate_expr_children(m, e);
  if (!r || r->kind != EK_Read) return r;
  BufInfo *b = lookup(f, r->read.tensor);
  if (!b) {
    if (!f->failed)
      kiln_set_error("tensor '%s' is read but is neither computed here nor an argument of the "
                     "function (add it to the argument list)",
                     r->read.tensor->name);
    f->failed = true;
    return NULL;
  }
  return ir_load(r->dtype, b->buf, flat_index(b, r->read.n, r->read.idx));
}

static Stmt *flat_stmt(IRMutator *m, Stmt *s) {
  Flat *f = m->ud;
  switch (s->kind) {
  case SK_Realize: {
    Tensor *t = s->realize.tensor;
    BufInfo *b = KNEW(BufInfo);
    b->buf = ir_var(t->name, DT_HANDLE);
    b->ndim = s->realize.n;
    b->min = s->realize.min;
    b->extent = s->realize.extent;
    pm_put(&f->bufs, t, b);
    Stmt *body = ir_mutate_stmt(m, s->realize.body);
    Expr *size = ir_i32(1);
    for (int d = 0; d < b->ndim; d++) size = ir_mul(size, ir_cast(DT_I32, b->extent[d]));
    return ir_allocate(b->buf, t->dtype, ir_simplify(size), s->realize.scope, body);
  }
  case SK_Provide: {
    BufInfo *b = lookup(f, s->provide.tensor);
    KASSERT(b);
    Expr *v = ir_mutate_expr(m, s->provide.value);
    bool ok = true;
    Expr **idx = KNEWN(Expr *, s->provide.n > 0 ? s->provide.n : 1);
    for (int d = 0; d < s->provide.n; d++) ok &= (idx[d] = ir_mutate_expr(m, s->provide.idx[d])) != NULL;
    if (!v || !ok) return NULL;
    return ir_store(b->buf, v, flat_index(b, s->provide.n, idx));
  }
  case SK_Produce: {
    Tensor *t = s->produce.tensor;
    if (t->kind == TE_EXTERN) {
      PtrMap vm = {0};
      for (int i = 0; i < t->ninputs; i++) {
        BufInfo *b = lookup(f, t->inputs[i]);
        if (!b) {
          kiln_set_error("extern op '%s' reads '%s', which is neither computed here nor an "
                         "argument",
                         t->name, t->inputs[i]->name);
          f->failed = true;
          return NULL;
        }
        pm_put(&vm, t->in_bufs[i], b->buf);
      }
      BufInfo *ob = lookup(f, t);
      KASSERT(ob);
      pm_put(&vm, t->out_buf, ob->buf);
      Stmt *body = ir_substitute_stmt(s->produce.body, &vm);
      pm_free(&vm);
      return ir_produce(t, body);
    }
    return ir_mutate_stmt_children(m, s);
  }
  case SK_For:
  case SK_Store:
  case SK_Allocate:
  case SK_IfThenElse:
  case SK_Seq:
  case SK_Evaluate:
  case SK_Attr:
  case SK_LetStmt:
    return ir_mutate_stmt_children(m, s);
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

Stmt *lower_flatten(Stmt *body, Schedule *s, int nargs, Tensor **args, Expr **arg_bufs) {
  Flat f = {s, {0}, false};
  for (int i = 0; i < nargs; i++) {
    BufInfo *b = KNEW(BufInfo);
    Tensor *t = args[i];
    b->buf = arg_bufs[i];
    b->ndim = t->ndim;
    b->min = KNEWN(Expr *, t->ndim > 0 ? t->ndim : 1);
    for (int d = 0; d < t->ndim; d++) b->min[d] = ir_i32(0);
    b->extent = t->shape;
    pm_put(&f.bufs, t, b);
    Stage *st = lower_stage_of(s, t);
    if (st) pm_put(&f.bufs, st->op, b);
  }
  IRMutator m = {flat_expr, flat_stmt, &f};
  Stmt *r = ir_mutate_stmt(&m, body);
  pm_free(&f.bufs);
  if (f.failed) return NULL;
  return r;
}
