/*
 * inline.c - compute_inline: replace every read of an inlined tensor by its
 * body with the axis variables bound to the read's indices.  Stages are
 * visited producers first, so a chain of inlined stages collapses fully.
 * Works on the lowering's private copy of the schedule.
 */
#include "lower.h"

typedef struct {
  Stage *inl;
  bool hit;
} InlCtx;

static Expr *inline_read(IRMutator *m, Expr *e) {
  InlCtx *c = m->ud;
  Expr *r = ir_mutate_expr_children(m, e);
  if (r && r->kind == EK_Read && av_find(&c->inl->aliases, r->read.tensor) >= 0) {
    Tensor *op = c->inl->op;
    PtrMap vm = {0};
    /* simplified indices keep a chain of inlined reshapes linear in size
     * instead of nesting every index expression inside the next */
    for (int d = 0; d < op->ndim; d++) pm_put(&vm, op->axis[d]->var, ir_simplify(r->read.idx[d]));
    Expr *b = ir_substitute(op->body, &vm);
    pm_free(&vm);
    c->hit = true;
    return b;
  }
  return r;
}

int lower_inline(Schedule *s) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *inl = s->stages.data[i];
    if (inl->attach != ATTACH_INLINE) continue;
    for (int j = i + 1; j < s->stages.len; j++) {
      Stage *rs = s->stages.data[j];
      if (rs->op->kind == TE_PLACEHOLDER) continue;
      if (rs->op->kind == TE_EXTERN) {
        for (int k = 0; k < rs->op->ninputs; k++)
          if (av_find(&inl->aliases, rs->op->inputs[k]) >= 0)
            return kiln_set_error("compute_inline: '%s' is read by extern op '%s', which needs it "
                                  "in memory",
                                  inl->op->name, rs->op->name);
        continue;
      }
      InlCtx c = {inl, false};
      IRMutator m = {inline_read, NULL, &c};
      Expr *nb = ir_mutate_expr(&m, rs->op->body);
      if (!nb) return -1;
      if (c.hit) {
        Tensor *nop = te_copy_with_body(rs->op, nb);
        /* a Reduce body keeps its reduce axes; te_copy_with_body kept them */
        rs->op = nop;
        av_push(&rs->aliases, nop);
      }
    }
  }
  return 0;
}
