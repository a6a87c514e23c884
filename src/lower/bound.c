/*
 * bound.c - bound inference: the range of every loop of every stage.
 *
 * Stages are visited consumers first.  A stage at the root covers its whole
 * shape.  A stage computed at (P, iv) covers the region its consumers read
 * while the loops enclosing that point (P's loops down to iv, and the loops
 * around P itself) are held fixed and every other loop runs over its range:
 * each read index is evaluated as an interval in which fixed loop variables
 * stay symbolic and the others are relaxed to [0, extent - 1].  Regions of
 * several reads are joined with min/max and simplified.
 *
 * Root ranges then flow down through the stage's relations to its leaf
 * loops (split: outer = ceil(extent / factor), inner = factor; fuse: the
 * product).  Each leaf gets a fresh loop variable running over [0, extent),
 * and every iter's value is rebuilt from those variables (split: parent =
 * outer * factor + inner; fuse: outer = fused / inner_extent, inner = fused
 * % inner_extent).  Where a split does not divide, or an attached stage's
 * region can reach outside its tensor, a guard condition is recorded for the
 * loop builder.
 */
#include "lower.h"

#include <stdlib.h>
#include <string.h>

Stage *lower_stage_of(Schedule *s, Tensor *t) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (av_find(&st->aliases, t) >= 0) return st;
  }
  return NULL;
}

StageBounds *bounds_of(Bounds *b, Stage *st) {
  for (int i = 0; i < b->n; i++)
    if (b->sb[i].st == st) return &b->sb[i];
  return NULL;
}

static Range *mk_range(Expr *min, Expr *extent) {
  Range *r = KNEW(Range);
  r->min = min;
  r->extent = extent;
  return r;
}

/* ---- interval evaluation ---- */

typedef struct Interval {
  Expr *lo, *hi; /* NULL: unbounded on that side */
} Interval;

typedef struct Relax {
  PtrMap vars; /* loop Var -> Interval* (relaxed variables) */
  Analyzer *an;
  int depth;
} Relax;

static Interval point(Expr *e) { return (Interval){e, e}; }
static Interval unbounded(void) { return (Interval){NULL, NULL}; }

static Expr *emin(Expr *a, Expr *b) { return a && b ? ir_min(a, b) : NULL; }
static Expr *emax(Expr *a, Expr *b) { return a && b ? ir_max(a, b) : NULL; }

static Interval ieval(Relax *r, Expr *e);

static Interval ieval_var(Relax *r, Expr *v) {
  Interval *rx = pm_get(&r->vars, v);
  if (!rx) return point(v);
  if (r->depth > 64) return unbounded(); /* a cycle would be a bug; stay safe */
  r->depth++;
  Interval lo = rx->lo ? ieval(r, rx->lo) : unbounded();
  Interval hi = rx->hi ? ieval(r, rx->hi) : unbounded();
  r->depth--;
  return (Interval){lo.lo, hi.hi};
}

static bool is_point(Interval a) { return a.lo && a.lo == a.hi; }

static Interval ieval(Relax *r, Expr *e) {
  if (!dt_is_intlike(e->dtype) || e->dtype.lanes != 1) return unbounded();
  /* an expression of fixed variables only is one point, whatever its
   * operators (a fused index's div and mod): each case below keeps it
   * one expression, so bounds stay exact */
  switch (e->kind) {
  case EK_IntImm:
    return point(e);
  case EK_Var:
    return ieval_var(r, e);
  case EK_Add: {
    Interval a = ieval(r, e->bin.a), b = ieval(r, e->bin.b);
    if (is_point(a) && is_point(b)) return point(ir_add(a.lo, b.lo));
    return (Interval){a.lo && b.lo ? ir_add(a.lo, b.lo) : NULL, a.hi && b.hi ? ir_add(a.hi, b.hi) : NULL};
  }
  case EK_Sub: {
    Interval a = ieval(r, e->bin.a), b = ieval(r, e->bin.b);
    if (is_point(a) && is_point(b)) return point(ir_sub(a.lo, b.lo));
    return (Interval){a.lo && b.hi ? ir_sub(a.lo, b.hi) : NULL, a.hi && b.lo ? ir_sub(a.hi, b.lo) : NULL};
  }
  case EK_Mul: {
    Interval a = ieval(r, e->bin.a), b = ieval(r, e->bin.b);
    if (is_point(a) && is_point(b)) return point(ir_mul(a.lo, b.lo));
    int64_t c;
    if (b.lo && b.lo == b.hi && ir_is_const_int(b.lo, &c)) {
    } else if (a.lo && a.lo == a.hi && ir_is_const_int(a.lo, &c)) {
      Interval t = a;
      a = b;
      b = t;
    } else {
      if (a.lo && a.lo == a.hi && b.lo && b.lo == b.hi) return point(ir_mul(a.lo, b.lo));
      int64_t al, ah, bl, bh;
      if (a.lo && a.hi && b.lo && b.hi && ir_is_const_int(ir_simplify(a.lo), &al) &&
          ir_is_const_int(ir_simplify(a.hi), &ah) && ir_is_const_int(ir_simplify(b.lo), &bl) &&
          ir_is_const_int(ir_simplify(b.hi), &bh)) {
        int64_t p[4] = {al * bl, al * bh, ah * bl, ah * bh}, lo = p[0], hi = p[0];
        for (int i = 1; i < 4; i++) {
          if (p[i] < lo) lo = p[i];
          if (p[i] > hi) hi = p[i];
        }
        return (Interval){ir_int(lo, e->dtype), ir_int(hi, e->dtype)};
      }
      return unbounded();
    }
    Expr *ce = b.lo;
    if (c >= 0)
      return (Interval){a.lo ? ir_mul(a.lo, ce) : NULL, a.hi ? ir_mul(a.hi, ce) : NULL};
    return (Interval){a.hi ? ir_mul(a.hi, ce) : NULL, a.lo ? ir_mul(a.lo, ce) : NULL};
  }
  case EK_Div:
  case EK_FloorDiv: {
    int64_t c;
    Interval a = ieval(r, e->bin.a);
    if (is_point(a)) {
      Interval b = ieval(r, e->bin.b);
      if (is_point(b)) return point(ir_binary(e->kind, a.lo, b.lo));
    }
    if (!ir_is_const_int(e->bin.b, &c) || c <= 0) return unbounded();
    if (e->kind == EK_Div) {
      /* truncation equals floor only for a non-negative dividend */
      int64_t lo, hi;
      if (!a.lo || !analyzer_const_bound(r->an, a.lo, &lo, &hi) || lo < 0) return unbounded();
    }
    return (Interval){a.lo ? ir_floordiv(a.lo, e->bin.b) : NULL,
                      a.hi ? ir_floordiv(a.hi, e->bin.b) : NULL};
  }
  case EK_Mod:
  case EK_FloorMod: {
    int64_t c;
    Interval a = ieval(r, e->bin.a);
    if (is_point(a)) {
      Interval b = ieval(r, e->bin.b);
      if (is_point(b)) return point(ir_binary(e->kind, a.lo, b.lo));
    }
    if (!ir_is_const_int(e->bin.b, &c) || c <= 0) return unbounded();
    if (a.lo && a.lo == a.hi) return point(e->kind == EK_Mod ? ir_mod(a.lo, e->bin.b) : ir_floormod(a.lo, e->bin.b));
    if (e->kind == EK_Mod) {
      int64_t lo, hi;
      if (!a.lo || !analyzer_const_bound(r->an, a.lo, &lo, &hi) || lo < 0) return unbounded();
    }
    return (Interval){ir_int(0, e->dtype), ir_int(c - 1, e->dtype)};
  }
  case EK_Min: {
    Interval a = ieval(r, e->bin.a), b = ieval(r, e->bin.b);
    if (is_point(a) && is_point(b)) return point(ir_min(a.lo, b.lo));
    return (Interval){emin(a.lo, b.lo), a.hi && b.hi ? ir_min(a.hi, b.hi) : (a.hi ? a.hi : b.hi)};
  }
  case EK_Max: {
    Interval a = ieval(r, e->bin.a), b = ieval(r, e->bin.b);
    if (is_point(a) && is_point(b)) return point(ir_max(a.lo, b.lo));
    return (Interval){a.lo && b.lo ? ir_max(a.lo, b.lo) : (a.lo ? a.lo : b.lo), emax(a.hi, b.hi)};
  }
  case EK_Select: {
    Interval a = ieval(r, e->select.t), b = ieval(r, e->select.f);
    return (Interval){emin(a.lo, b.lo), emax(a.hi, b.hi)};
  }
  case EK_Cast: {
    if (!dt_is_intlike(e->bin.a->dtype)) return unbounded();
    Interval a = ieval(r, e->bin.a);
    if (is_point(a)) return point(ir_cast(e->dtype, a.lo));
    return (Interval){a.lo ? ir_cast(e->dtype, a.lo) : NULL, a.hi ? ir_cast(e->dtype, a.hi) : NULL};
  }
  case EK_Let:
    return ieval(r, ir_substitute1(e->let.body, e->let.var, e->let.value));
  case EK_FloatImm:
  case EK_StrImm:
  case EK_EQ:
  case EK_NE:
  case EK_LT:
  case EK_LE:
  case EK_GT:
  case EK_GE:
  case EK_And:
  case EK_Or:
  case EK_Not:
  case EK_Call:
  case EK_Read:
  case EK_Load:
  case EK_Ramp:
  case EK_Broadcast:
  case EK_Reduce:
    return unbounded();
  case EK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* ---- per-stage work ---- */

static bool is_arg(Stage *st, int nargs, Tensor **args) {
  for (int i = 0; i < nargs; i++)
    if (av_find(&st->aliases, args[i]) >= 0) return true;
  return false;
}

/* Storage rank of a scope and thread rank of a tag, as TVM ranks them:
 * global 0 < shared 1 < local 3; blockIdx 0, threadIdx and vthread 1. */
static int scope_rank(const char *scope) {
  if (!scope || !strcmp(scope, "global")) return 0;
  if (!strcmp(scope, "shared")) return 1;
  return 3;
}
static int thread_rank(const char *tag) { return !strncmp(tag, "blockIdx.", 9) ? 0 : 1; }

/* Loop variables enclosing the point where st is computed, held fixed while
 * its region is inferred.  An enclosing loop bound to a GPU thread is
 * relaxed instead when threads of that rank share st's storage (TVM's
 * NeedRelax): a global buffer serves every block and thread, a shared one
 * every thread of a block (and every virtual thread), a local one only its
 * own thread. */
static void enclosing_vars(Bounds *b, Stage *st, PtrMap *out) {
  int rank = scope_rank(st->scope);
  for (Stage *s = st; s && s->attach == ATTACH_SCOPE; s = s->attach_stage) {
    Stage *p = s->attach_stage;
    StageBounds *pb = bounds_of(b, p);
    int k = stage_leaf_index(p, s->attach_iv);
    for (int i = 0; i <= k; i++) {
      IterAttr *a = stage_iter_attr(p, p->leaf_iters.data[i], false);
      if (a && a->fkind == FOR_THREAD && rank <= thread_rank(a->thread_tag)) continue;
      Expr *v = pm_get(&pb->loopvar, p->leaf_iters.data[i]);
      if (v) pm_put(out, v, v);
    }
  }
}

typedef struct {
  Stage *target;
  AVec *reads; /* Expr * (Read nodes) */
} ReadCollect;

static void collect_target_reads(IRVisitor *v, Expr *e) {
  ReadCollect *c = v->ud;
  if (e->kind == EK_Read && av_find(&c->target->aliases, e->read.tensor) >= 0) av_push(c->reads, e);
  ir_visit_expr_children(v, e);
}

/* The value map of consumer c as a substitution of its root and reduce vars. */
static void root_subst(StageBounds *cb, PtrMap *vm) {
  Tensor *op = cb->st->op;
  for (int d = 0; d < op->ndim; d++) pm_put(vm, op->axis[d]->var, pm_get(&cb->value, op->axis[d]));
  for (int d = 0; d < op->nreduce; d++)
    pm_put(vm, op->reduce_axis[d]->var, pm_get(&cb->value, op->reduce_axis[d]));
}

/* Relax the loop variables of sb's leaves from index `from` on over their
 * ranges ([0, extent - 1]), except those in fixed (may be NULL). */
static void relax_leaves(Relax *rx, StageBounds *sb, int from, const PtrMap *fixed) {
  for (int k = from; k < sb->st->leaf_iters.len; k++) {
    IterVar *leaf = sb->st->leaf_iters.data[k];
    Expr *v = pm_get(&sb->loopvar, leaf);
    Range *rg = pm_get(&sb->range, leaf);
    if (!v || !rg || (fixed && pm_has(fixed, v))) continue;
    Interval *iv = KNEW(Interval);
    iv->lo = ir_int(0, v->dtype);
    iv->hi = ir_sub(rg->extent, ir_int(1, v->dtype));
    pm_put(&rx->vars, v, iv);
  }
}

/* Widen acc to cover iv (the first one: acc = iv): the lower ends' min and
 * the upper ends' max, simplified; a side unbounded in either stays
 * unbounded.  The one join of the regions several reads cover. */
static void join_interval(Analyzer *an, Interval *acc, Interval iv, bool first) {
  if (iv.lo) iv.lo = analyzer_simplify(an, iv.lo);
  if (iv.hi) iv.hi = analyzer_simplify(an, iv.hi);
  if (first) {
    *acc = iv;
    return;
  }
  acc->lo = emin(acc->lo, iv.lo);
  acc->hi = emax(acc->hi, iv.hi);
  if (acc->lo) acc->lo = analyzer_simplify(an, acc->lo);
  if (acc->hi) acc->hi = analyzer_simplify(an, acc->hi);
}

/* [lo, hi] as an int32 range (min, extent). */
static Range *interval_range(Analyzer *an, Expr *lo, Expr *hi) {
  lo = ir_cast(DT_I32, lo);
  hi = ir_cast(DT_I32, hi);
  Expr *ext = analyzer_simplify(an, ir_add(ir_sub(hi, lo), ir_i32(1)));
  return mk_range(analyzer_simplify(an, lo), ext);
}

/* The region of st that its consumers read, relaxed outside its attach point. */
static int infer_region(Bounds *b, int si, Range **region) {
  Schedule *s = b->sch;
  Stage *st = s->stages.data[si];
  Tensor *op = st->op;
  PtrMap fixed = {0};
  enclosing_vars(b, st, &fixed);
  Relax rx = {{0}, b->an, 0};
  for (int j = si + 1; j < s->stages.len; j++) relax_leaves(&rx, &b->sb[j], 0, &fixed);
  Interval *acc = KNEWN(Interval, op->ndim > 0 ? op->ndim : 1);
  bool any = false;
  for (int j = si + 1; j < s->stages.len; j++) {
    StageBounds *cb = &b->sb[j];
    Stage *c = cb->st;
    if (c->attach == ATTACH_INLINE || c->op->kind == TE_PLACEHOLDER) continue;
    if (c->op->kind == TE_EXTERN) {
      bool reads = false;
      for (int k = 0; k < c->op->ninputs; k++) reads |= av_find(&st->aliases, c->op->inputs[k]) >= 0;
      if (reads) { /* an extern may read anything: the whole tensor */
        any = false;
        break;
      }
      continue;
    }
    AVec reads = {0};
    ReadCollect rc = {st, &reads};
    IRVisitor vis = {collect_target_reads, NULL, &rc};
    ir_visit_expr(&vis, c->op->body);
    if (!reads.len) continue;
    PtrMap vm = {0};
    root_subst(cb, &vm);
    for (int k = 0; k < reads.len; k++) {
      Expr *rd = reads.data[k];
      for (int d = 0; d < op->ndim; d++) {
        Expr *idx = ir_substitute(rd->read.idx[d], &vm);
        join_interval(b->an, &acc[d], ieval(&rx, idx), !any);
      }
      any = true;
    }
    pm_free(&vm);
  }
  for (int d = 0; d < op->ndim; d++) {
    Expr *lo = any && acc[d].lo ? acc[d].lo : ir_int(0, op->shape[d]->dtype);
    Expr *hi = any && acc[d].hi ? acc[d].hi : ir_sub(op->shape[d], ir_int(1, op->shape[d]->dtype));
    region[d] = interval_range(b->an, lo, hi);
  }
  pm_free(&fixed);
  pm_free(&rx.vars);
  return 0;
}

/* What one iteration of a stage's loop reads of t (prefetch.c): the
 * leaves inside loop k run over their ranges, loop k's variable is
 * shifted by offset, the loops outside stay symbolic. */
int lower_iteration_region(Bounds *b, StageBounds *sb, Tensor *t, int k, Expr *offset, Range **region) {
  Stage *st = sb->st, *ts = lower_stage_of(b->sch, t);
  if (!ts) return kiln_set_error("tensor '%s' is not part of the schedule", t->name);
  Relax rx = {{0}, b->an, 0};
  relax_leaves(&rx, sb, k + 1, NULL);
  Expr *kv = pm_get(&sb->loopvar, st->leaf_iters.data[k]);
  AVec reads = {0};
  ReadCollect rc = {ts, &reads};
  IRVisitor vis = {collect_target_reads, NULL, &rc};
  ir_visit_expr(&vis, st->op->body);
  PtrMap vm = {0};
  root_subst(sb, &vm);
  int err = reads.len ? 0 : kiln_set_error("stage '%s' does not read '%s'", st->op->name, t->name);
  Interval *acc = KNEWN(Interval, t->ndim > 0 ? t->ndim : 1);
  for (int r = 0; r < reads.len && !err; r++) {
    Expr *rd = reads.data[r];
    for (int d = 0; d < t->ndim && !err; d++) {
      Expr *idx = ir_substitute1(ir_substitute(rd->read.idx[d], &vm), kv, ir_add(kv, offset));
      Interval iv = ieval(&rx, idx);
      if (!iv.lo || !iv.hi) {
        err = kiln_set_error("the index %s of '%s' has no bound", ir_expr_str(idx), t->name);
        break;
      }
      join_interval(b->an, &acc[d], iv, r == 0);
    }
  }
  for (int d = 0; d < t->ndim && !err; d++) region[d] = interval_range(b->an, acc[d].lo, acc[d].hi);
  pm_free(&vm);
  pm_free(&rx.vars);
  return err;
}

/* A constant upper bound of a (symbolic) extent, or the extent itself. */
static Expr *const_extent(Analyzer *an, Expr *ext) {
  int64_t lo, hi;
  if (ir_is_const_int(ext, NULL)) return ext;
  if (analyzer_const_bound(an, ext, &lo, &hi) && hi >= 0) return ir_i32(hi);
  return ext;
}

static void add_cond(Analyzer *an, StageBounds *sb, Expr *cond) {
  cond = analyzer_simplify(an, cond);
  if (analyzer_can_prove(an, cond)) return;
  av_push(&sb->conds, cond);
}

/* Ranges of every iter, loop variables for the leaves, values and guards. */
static int pass_down(Bounds *b, StageBounds *sb) {
  Stage *st = sb->st;
  Analyzer *an = b->an;
  for (int i = 0; i < st->relations.len; i++) {
    IterRel *r = st->relations.data[i];
    if (r->kind == REL_SPLIT) {
      Range *p = pm_get(&sb->range, r->parent);
      KASSERT(p);
      Expr *ext = p->extent;
      Expr *f = r->factor, *np = r->nparts;
      int64_t ce, cf;
      Expr *outer_ext, *inner_ext;
      if (f) {
        f = ir_cast(DT_I32, f);
        if (ir_is_const_int(ext, &ce) && ir_is_const_int(f, &cf) && ce <= cf) {
          outer_ext = ir_i32(1);
          inner_ext = ext;
        } else {
          outer_ext = analyzer_simplify(an, ir_floordiv(ir_add(ext, ir_sub(f, ir_i32(1))), f));
          inner_ext = f;
        }
      } else {
        np = ir_cast(DT_I32, np);
        outer_ext = np;
        inner_ext = analyzer_simplify(an, ir_floordiv(ir_add(ext, ir_sub(np, ir_i32(1))), np));
      }
      pm_put(&sb->range, r->outer, mk_range(ir_i32(0), outer_ext));
      pm_put(&sb->range, r->inner, mk_range(ir_i32(0), inner_ext));
    } else {
      Range *o = pm_get(&sb->range, r->outer), *in = pm_get(&sb->range, r->inner);
      KASSERT(o && in);
      pm_put(&sb->range, r->fused, mk_range(ir_i32(0), analyzer_simplify(an, ir_mul(o->extent, in->extent))));
    }
  }
  /* loop variables for the leaves, known to the analyzer */
  for (int i = 0; i < st->leaf_iters.len; i++) {
    IterVar *leaf = st->leaf_iters.data[i];
    Range *rg = pm_get(&sb->range, leaf);
    KASSERT(rg);
    rg->extent = const_extent(an, rg->extent);
    Expr *v = ir_var(leaf->var->var.name, DT_I32);
    pm_put(&sb->loopvar, leaf, v);
    analyzer_bind_range(an, v, ir_i32(0), rg->extent);
    pm_put(&sb->value, leaf, analyzer_simplify(an, ir_add(rg->min, v)));
  }
  /* values flow up, last relation first */
  for (int i = st->relations.len - 1; i >= 0; i--) {
    IterRel *r = st->relations.data[i];
    if (r->kind == REL_SPLIT) {
      Range *p = pm_get(&sb->range, r->parent), *in = pm_get(&sb->range, r->inner);
      Expr *ov = pm_get(&sb->value, r->outer), *iv = pm_get(&sb->value, r->inner);
      Expr *step = r->factor ? ir_cast(DT_I32, r->factor) : in->extent;
      int64_t ce, cf;
      if (r->factor && ir_is_const_int(p->extent, &ce) && ir_is_const_int(step, &cf) && ce <= cf)
        step = p->extent;
      Expr *rel = ir_add(ir_mul(ov, step), iv);
      pm_put(&sb->value, r->parent, analyzer_simplify(an, ir_add(p->min, rel)));
      /* guard a split that does not divide */
      Range *o = pm_get(&sb->range, r->outer);
      Expr *covered = analyzer_simplify(an, ir_mul(o->extent, step));
      int64_t cc, pe;
      if (!(ir_is_const_int(covered, &cc) && ir_is_const_int(p->extent, &pe) && cc == pe))
        add_cond(an, sb, ir_lt(rel, p->extent));
    } else {
      Range *in = pm_get(&sb->range, r->inner), *o = pm_get(&sb->range, r->outer);
      Expr *fv = pm_get(&sb->value, r->fused);
      pm_put(&sb->value, r->outer, analyzer_simplify(an, ir_add(o->min, ir_floordiv(fv, in->extent))));
      pm_put(&sb->value, r->inner, analyzer_simplify(an, ir_add(in->min, ir_floormod(fv, in->extent))));
    }
  }
  return 0;
}

/* Is c's body executed inside loop number k (a leaf index) of p? */
static bool inside(Stage *c, Stage *p, int k) {
  for (Stage *x = c; x;) {
    if (x == p) return true;
    if (x->attach != ATTACH_SCOPE) return false;
    if (x->attach_stage == p) return stage_leaf_index(p, x->attach_iv) >= k;
    x = x->attach_stage;
  }
  return false;
}

int lower_check_attach(Schedule *s) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (st->attach != ATTACH_SCOPE) continue;
    Stage *p = st->attach_stage;
    int k = stage_leaf_index(p, st->attach_iv);
    if (k < 0)
      return kiln_set_error("compute_at: '%s' is computed at axis '%s' of '%s', which was split or "
                            "fused afterwards; attach it to one of the new axes",
                            st->op->name, st->attach_iv->var->var.name, p->op->name);
    if (p->attach == ATTACH_INLINE)
      return kiln_set_error("compute_at: '%s' is computed inside '%s', which is inlined",
                            st->op->name, p->op->name);
    for (int j = 0; j < s->stages.len; j++) {
      Stage *c = s->stages.data[j];
      if (c == st || c->attach == ATTACH_INLINE) continue;
      bool reads = false;
      for (int q = 0; q < c->op->ninputs && !reads; q++) reads = av_find(&st->aliases, c->op->inputs[q]) >= 0;
      if (reads && !inside(c, p, k))
        return kiln_set_error("compute_at: '%s' is computed inside loop '%s' of '%s', but its "
                              "consumer '%s' runs outside that loop; compute '%s' at a loop that "
                              "encloses all its consumers",
                              st->op->name, st->attach_iv->var->var.name, p->op->name, c->op->name,
                              st->op->name);
    }
  }
  return 0;
}

int kiln_check_schedule(Schedule *s) {
  Schedule *c = sch_copy(s);
  if (lower_inline(c)) return -1;
  return lower_check_attach(c);
}

int lower_infer_bounds(Schedule *s, int nargs, Tensor **args, Bounds *b) {
  memset(b, 0, sizeof *b);
  if (lower_check_attach(s)) return -1;
  b->sch = s;
  b->n = s->stages.len;
  b->sb = xcalloc((size_t)b->n, sizeof(StageBounds));
  b->an = analyzer_new();
  for (int i = 0; i < b->n; i++) b->sb[i].st = s->stages.data[i];
  for (int si = b->n - 1; si >= 0; si--) {
    StageBounds *sb = &b->sb[si];
    Stage *st = sb->st;
    Tensor *op = st->op;
    if (op->kind != TE_COMPUTE || st->attach == ATTACH_INLINE) continue;
    Range **region = KNEWN(Range *, op->ndim > 0 ? op->ndim : 1);
    /* an argument is bound to the caller's whole buffer */
    if (st->attach == ATTACH_SCOPE && !is_arg(st, nargs, args)) {
      if (infer_region(b, si, region)) return -1;
    } else {
      for (int d = 0; d < op->ndim; d++) region[d] = mk_range(ir_i32(0), ir_cast(DT_I32, op->shape[d]));
    }
    for (int d = 0; d < op->ndim; d++) pm_put(&sb->range, op->axis[d], region[d]);
    for (int d = 0; d < op->nreduce; d++) {
      IterVar *rv = op->reduce_axis[d];
      pm_put(&sb->range, rv, mk_range(ir_cast(DT_I32, rv->min), ir_cast(DT_I32, rv->extent)));
    }
    if (pass_down(b, sb)) return -1;
    if (st->attach == ATTACH_SCOPE && !is_arg(st, nargs, args)) {
      /* the region may reach outside the tensor where a consumer's split
       * does not divide: guard the root values */
      for (int d = 0; d < op->ndim; d++) {
        Expr *v = pm_get(&sb->value, op->axis[d]);
        add_cond(b->an, sb, ir_ge(v, ir_i32(0)));
        add_cond(b->an, sb, ir_lt(v, ir_cast(DT_I32, op->shape[d])));
      }
    }
  }
  return 0;
}

void lower_bounds_free(Bounds *b) {
  if (!b->sb) return;
  for (int i = 0; i < b->n; i++) {
    pm_free(&b->sb[i].range);
    pm_free(&b->sb[i].loopvar);
    pm_free(&b->sb[i].value);
  }
  free(b->sb);
  analyzer_free(b->an);
  memset(b, 0, sizeof *b);
}
