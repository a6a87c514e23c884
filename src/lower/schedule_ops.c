/*
 * schedule_ops.c - build the loop nest of a schedule (before flattening).
 *
 * Every stage becomes `realize T(region) { produce T { loops } ; rest }`:
 * root stages nest in producer-before-consumer order, and a stage computed
 * at (P, iv) is placed inside P's loop over iv, before the rest of that
 * loop's body.  A stage's loops follow its leaf order; each leaf's loop runs
 * over [0, extent) and the stage's root axes are replaced by the values
 * bound inference rebuilt from the loop variables.  A guard (a split that
 * does not divide, a region reaching outside its tensor) goes just inside
 * the innermost loop whose variable it uses.
 *
 * A reduction splits into an init nest and an update nest below the first
 * reduce loop: the init nest repeats the spatial loops found there and
 * stores the reducer's identity; the update nest combines the element with
 * the new value, under the reduction's condition if it has one.
 */
#include "lower.h"

#include <string.h>

typedef struct Ctx {
  Schedule *s;
  Bounds *b;
  int nargs;
  Tensor **args;
} Ctx;

static bool is_arg(Ctx *c, Stage *st) {
  for (int i = 0; i < c->nargs; i++)
    if (av_find(&st->aliases, c->args[i]) >= 0) return true;
  return false;
}

/* Reads resolve to the op of the stage that computes them. */
static Expr *canon_read(IRMutator *m, Expr *e) {
  Schedule *s = m->ud;
  Expr *r = ir_mutate_expr_children(m, e);
  if (r && r->kind == EK_Read) {
    Stage *st = lower_stage_of(s, r->read.tensor);
    if (st && st->op != r->read.tensor) return ir_read(st->op, r->dtype, r->read.n, r->read.idx);
  }
  return r;
}

static Expr *canon(Ctx *c, Expr *e) {
  if (!e) return NULL;
  IRMutator m = {canon_read, NULL, c->s};
  return ir_mutate_expr(&m, e);
}

static Stmt *realize_produce(Ctx *c, Stage *st, Stmt *rest);

/* Stages attached at (parent, iv), wrapped around body. */
static Stmt *attach_pipeline(Ctx *c, Stage *parent, IterVar *iv, Stmt *body) {
  for (int i = c->s->stages.len - 1; i >= 0 && body; i--) {
    Stage *st = c->s->stages.data[i];
    if (st->attach == ATTACH_SCOPE && st->attach_stage == parent && st->attach_iv == iv)
      body = realize_produce(c, st, body);
  }
  return body;
}

static const char *ivname(IterVar *iv) { return iv->var->var.name; }

static Stmt *make_for(Ctx *c, StageBounds *sb, IterVar *leaf, Stmt *body) {
  Stage *st = sb->st;
  IterAttr *a = stage_iter_attr(st, leaf, false);
  ForKind k = a ? a->fkind : FOR_SERIAL;
  Range *rg = pm_get(&sb->range, leaf);
  Expr *v = pm_get(&sb->loopvar, leaf);
  int64_t ext;
  bool cext = ir_is_const_int(rg->extent, &ext);
  if (k == FOR_VECTORIZED && !cext) {
    kiln_set_error("vectorize: axis '%s' of stage '%s' has a non-constant extent (%s); split it "
                   "by a constant factor and vectorize the inner axis",
                   ivname(leaf), st->op->name, ir_expr_str(rg->extent));
    return NULL;
  }
  if (k == FOR_UNROLLED && !cext) {
    kiln_set_error("unroll: axis '%s' of stage '%s' has a non-constant extent (%s)", ivname(leaf),
                   st->op->name, ir_expr_str(rg->extent));
    return NULL;
  }
  Stmt *f = ir_for(v, ir_i32(0), rg->extent, k, body);
  if (f && k == FOR_THREAD) f->for_.thread_tag = a->thread_tag;
  if (a)
    for (int i = a->pragma_keys.len - 1; i >= 0; i--)
      f = ir_attr(kfmt("pragma_%s", (const char *)a->pragma_keys.data[i]), leaf,
                  a->pragma_vals.data[i], f);
  (void)c;
  return f;
}

/* The leaf index of the innermost loop a condition uses (-1: none). */
static int cond_level(StageBounds *sb, Expr *cond) {
  int lvl = -1;
  for (int i = 0; i < sb->st->leaf_iters.len; i++) {
    Expr *v = pm_get(&sb->loopvar, sb->st->leaf_iters.data[i]);
    if (v && ir_expr_uses_var(cond, v)) lvl = i;
  }
  return lvl;
}

static bool uses_reduce_loop(StageBounds *sb, Expr *cond) {
  for (int i = 0; i < sb->st->leaf_iters.len; i++) {
    IterVar *leaf = sb->st->leaf_iters.data[i];
    if (leaf->kind == ITER_REDUCE && ir_expr_uses_var(cond, pm_get(&sb->loopvar, leaf))) return true;
  }
  return false;
}

static Stmt *guard(StageBounds *sb, int level, bool init_nest, Stmt *body) {
  for (int k = sb->conds.len - 1; k >= 0 && body; k--) {
    Expr *cnd = sb->conds.data[k];
    if (cond_level(sb, cnd) != level) continue;
    if (init_nest && uses_reduce_loop(sb, cnd)) continue;
    body = ir_if(ir_call1(INTRIN_likely, cnd), body, NULL);
  }
  return body;
}

static Stmt *wrap_loops(Ctx *c, StageBounds *sb, int from, int to, Stmt *inner, bool init_nest) {
  Stage *st = sb->st;
  for (int i = to - 1; i >= from && inner; i--) {
    IterVar *leaf = st->leaf_iters.data[i];
    if (init_nest && leaf->kind == ITER_REDUCE) continue;
    inner = guard(sb, i, init_nest, inner);
    if (!init_nest) inner = attach_pipeline(c, st, leaf, inner);
    if (inner && !init_nest) { /* stage_prefetch's touches open the iteration */
      Stmt *ahead = lower_prefetch(c->b, sb, i);
      inner = ahead ? ir_seq2(ahead, inner) : NULL;
    }
    if (inner) inner = make_for(c, sb, leaf, inner);
  }
  return inner;
}

static Stmt *compute_body(Ctx *c, Stage *st) {
  StageBounds *sb = bounds_of(c->b, st);
  Tensor *op = st->op;
  PtrMap vm = {0};
  Expr **idx = KNEWN(Expr *, op->ndim > 0 ? op->ndim : 1);
  for (int d = 0; d < op->ndim; d++) {
    idx[d] = pm_get(&sb->value, op->axis[d]);
    pm_put(&vm, op->axis[d]->var, idx[d]);
  }
  for (int d = 0; d < op->nreduce; d++)
    pm_put(&vm, op->reduce_axis[d]->var, pm_get(&sb->value, op->reduce_axis[d]));
  int n = st->leaf_iters.len;
  Stmt *body;
  if (op->body->kind == EK_Reduce) {
    Expr *red = op->body;
    Reducer *comb = red->reduce.comb;
    Expr *src = canon(c, ir_substitute(red->reduce.source, &vm));
    Expr *cur = ir_read(op, op->dtype, op->ndim, idx);
    PtrMap cm = {0};
    pm_put(&cm, comb->lhs, cur);
    pm_put(&cm, comb->rhs, src);
    Expr *val = ir_substitute(comb->result, &cm);
    pm_free(&cm);
    Stmt *update = ir_provide(op, val, op->ndim, idx);
    if (red->reduce.cond) update = ir_if(canon(c, ir_substitute(red->reduce.cond, &vm)), update, NULL);
    Stmt *init = ir_provide(op, comb->identity, op->ndim, idx);
    int k0 = n;
    for (int i = 0; i < n; i++)
      if (((IterVar *)st->leaf_iters.data[i])->kind == ITER_REDUCE) {
        k0 = i;
        break;
      }
    /* a nest that failed (an error set: a vectorized or unrolled loop of
     * no constant extent, a prefetch that cannot be placed) fails the
     * stage; ir_seq2 would drop it and leave the init alone */
    Stmt *upd = wrap_loops(c, sb, k0, n, update, false);
    Stmt *ini = upd ? wrap_loops(c, sb, k0, n, init, true) : NULL;
    body = upd && ini ? wrap_loops(c, sb, 0, k0, ir_seq2(ini, upd), false) : NULL;
  } else {
    Expr *val = canon(c, ir_substitute(op->body, &vm));
    body = wrap_loops(c, sb, 0, n, ir_provide(op, val, op->ndim, idx), false);
  }
  pm_free(&vm);
  return body ? guard(sb, -1, false, body) : NULL;
}

static Stmt *realize_produce(Ctx *c, Stage *st, Stmt *rest) {
  Tensor *op = st->op;
  Stmt *nest = op->kind == TE_EXTERN ? op->extern_body : compute_body(c, st);
  if (!nest) return NULL;
  Stmt *seq = ir_seq2(ir_produce(op, nest), rest);
  if (is_arg(c, st)) return seq;
  Expr **mn = KNEWN(Expr *, op->ndim > 0 ? op->ndim : 1);
  Expr **ex = KNEWN(Expr *, op->ndim > 0 ? op->ndim : 1);
  StageBounds *sb = bounds_of(c->b, st);
  for (int d = 0; d < op->ndim; d++) {
    Range *r = op->kind == TE_COMPUTE ? pm_get(&sb->range, op->axis[d]) : NULL;
    mn[d] = r ? r->min : ir_i32(0);
    ex[d] = r ? r->extent : op->shape[d];
  }
  return ir_realize(op, op->ndim, mn, ex, st->scope, seq);
}

Stmt *lower_schedule_ops(Schedule *s, Bounds *b, int nargs, Tensor **args) {
  Ctx c = {s, b, nargs, args};
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (st->is_output && !is_arg(&c, st))
      return kiln_set_error("output '%s' is not in the argument list", st->op->name), NULL;
  }
  Stmt *body = ir_nop();
  for (int i = s->stages.len - 1; i >= 0 && body; i--) {
    Stage *st = s->stages.data[i];
    if (st->op->kind == TE_PLACEHOLDER || st->attach != ATTACH_ROOT) continue;
    body = realize_produce(&c, st, body);
  }
  return body;
}
