/*
 * schedule.c - schedules, stages and the scheduling primitives.
 *
 * A stage keeps TVM's bookkeeping: all_iters (every IterVar ever made for the
 * stage), leaf_iters (the current loop order, outermost first) and
 * relations (split: parent -> outer, inner; fuse: outer, inner -> fused)
 * that connect them.  Per-iter attributes (loop kind, thread binding,
 * pragmas) live in IterAttr records.  Where a stage is computed is its
 * attach kind: root, inline, or inside a loop of another stage.
 *
 * Primitives validate what a user can get wrong and say what and where:
 * the stage, the axis, and what was expected.
 */
#include "te.h"

#include <string.h>

static const char *ivname(const IterVar *iv) { return iv && iv->var ? iv->var->var.name : "?"; }
static const char *stname(const Stage *st) { return st->op->name; }

static Stage *new_stage(Tensor *op) {
  Stage *st = KNEW(Stage);
  st->okind = KOBJ_STAGE;
  st->op = op;
  st->origin = op;
  av_push(&st->aliases, op);
  if (op->kind == TE_COMPUTE) {
    for (int i = 0; i < op->ndim; i++) av_push(&st->all_iters, op->axis[i]);
    for (int i = 0; i < op->nreduce; i++) av_push(&st->all_iters, op->reduce_axis[i]);
    st->leaf_iters = av_copy(&st->all_iters);
  }
  st->attach = ATTACH_ROOT;
  st->scope = "global";
  return st;
}

static void post_dfs(Tensor *t, AVec *seen, AVec *order) {
  if (av_find(seen, t) >= 0) return;
  av_push(seen, t);
  for (int i = 0; i < t->ninputs; i++) post_dfs(t->inputs[i], seen, order);
  av_push(order, t);
}

Schedule *te_create_schedule(int noutputs, Tensor **outputs) {
  if (noutputs <= 0) return kiln_set_error("create_schedule: no output tensors"), NULL;
  for (int i = 0; i < noutputs; i++) {
    if (!outputs[i]) return NULL;
    if (outputs[i]->okind != KOBJ_TENSOR)
      return kiln_set_error("create_schedule: output %d is not a tensor", i), NULL;
    if (outputs[i]->kind == TE_PLACEHOLDER)
      return kiln_set_error("create_schedule: output '%s' is a placeholder, not a computed tensor",
                            outputs[i]->name),
             NULL;
  }
  Schedule *s = KNEW(Schedule);
  s->okind = KOBJ_SCHEDULE;
  s->noutputs = noutputs;
  s->outputs = kmemdup(outputs, sizeof(Tensor *) * (size_t)noutputs);
  AVec seen = {0}, order = {0};
  for (int i = 0; i < noutputs; i++) post_dfs(outputs[i], &seen, &order);
  for (int i = 0; i < order.len; i++) {
    Stage *st = new_stage(order.data[i]);
    st->owner = s;
    for (int j = 0; j < noutputs; j++)
      if (outputs[j] == order.data[i]) st->is_output = true;
    av_push(&s->stages, st);
  }
  return s;
}

Stage *sch_stage(Schedule *s, Tensor *t) {
  if (!s || !t) return NULL;
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (av_find(&st->aliases, t) >= 0) return st;
  }
  kiln_set_error("tensor '%s' is not part of this schedule", t->name);
  return NULL;
}

IterVar *stage_axis(Stage *st, int i) {
  if (!st || st->op->kind != TE_COMPUTE || i < 0 || i >= st->op->ndim) {
    kiln_set_error("stage '%s' has no axis %d", st ? stname(st) : "?", i);
    return NULL;
  }
  return st->op->axis[i];
}

IterVar *stage_reduce_axis(Stage *st, int i) {
  if (!st || st->op->kind != TE_COMPUTE || i < 0 || i >= st->op->nreduce) {
    kiln_set_error("stage '%s' has no reduce axis %d", st ? stname(st) : "?", i);
    return NULL;
  }
  return st->op->reduce_axis[i];
}

int stage_leaf_index(const Stage *st, const IterVar *iv) { return av_find(&st->leaf_iters, iv); }

/* Every primitive that changes loops needs a compute stage and a leaf axis. */
static int check_leaf(Stage *st, IterVar *iv, const char *prim) {
  if (!st) return -1;
  if (!iv) return kiln_set_error("%s: no axis given", prim);
  if (st->okind != KOBJ_STAGE) return kiln_set_error("%s: not a stage", prim);
  if (st->op->kind != TE_COMPUTE)
    return kiln_set_error("%s: stage '%s' is a %s and has no loops to schedule", prim, stname(st),
                          st->op->kind == TE_PLACEHOLDER ? "placeholder" : "extern op");
  if (iv->okind != KOBJ_ITERVAR) return kiln_set_error("%s: not an axis", prim);
  if (av_find(&st->leaf_iters, iv) >= 0) return 0;
  if (av_find(&st->all_iters, iv) >= 0)
    return kiln_set_error("%s: axis '%s' of stage '%s' is no longer a leaf (it was already split or "
                          "fused; use the axes that split/fuse returned)",
                          prim, ivname(iv), stname(st));
  return kiln_set_error("%s: axis '%s' does not belong to stage '%s'", prim, ivname(iv),
                        stname(st));
}

static IterVar *derived_iv(IterVar *parent, const char *suffix) {
  return ir_itervar(ir_var(kfmt("%s.%s", ivname(parent), suffix), parent->var->dtype), NULL, NULL,
                    parent->kind);
}

static int do_split(Stage *st, IterVar *parent, Expr *factor, Expr *nparts, IterVar **outer,
                    IterVar **inner) {
  const char *prim = factor ? "split" : "split(nparts)";
  if (check_leaf(st, parent, prim)) return -1;
  Expr *amount = factor ? factor : nparts;
  if (!amount) return kiln_set_error("%s: no factor given", prim);
  if (!dt_is_intlike(amount->dtype))
    return kiln_set_error("%s of '%s' in stage '%s': factor must be an integer", prim,
                          ivname(parent), stname(st));
  int64_t v;
  if (ir_is_const_int(amount, &v) && v <= 0)
    return kiln_set_error("%s of '%s' in stage '%s': factor must be positive, got %lld", prim,
                          ivname(parent), stname(st), (long long)v);
  if (parent->kind == ITER_THREAD)
    return kiln_set_error("%s: axis '%s' of stage '%s' is bound to a thread", prim, ivname(parent),
                          stname(st));
  IterRel *r = KNEW(IterRel);
  r->kind = REL_SPLIT;
  r->parent = parent;
  r->outer = derived_iv(parent, "outer");
  r->inner = derived_iv(parent, "inner");
  r->factor = factor;
  r->nparts = nparts;
  av_push(&st->relations, r);
  av_push(&st->all_iters, r->outer);
  av_push(&st->all_iters, r->inner);
  int pos = av_find(&st->leaf_iters, parent);
  st->leaf_iters.data[pos] = r->inner;
  av_insert(&st->leaf_iters, pos, r->outer);
  if (outer) *outer = r->outer;
  if (inner) *inner = r->inner;
  return 0;
}

int stage_split(Stage *st, IterVar *parent, Expr *factor, IterVar **outer, IterVar **inner) {
  if (!factor) return kiln_set_error("split: no factor given");
  return do_split(st, parent, factor, NULL, outer, inner);
}

int stage_split_nparts(Stage *st, IterVar *parent, Expr *nparts, IterVar **outer,
                       IterVar **inner) {
  if (!nparts) return kiln_set_error("split: no nparts given");
  return do_split(st, parent, NULL, nparts, outer, inner);
}

int stage_tile(Stage *st, IterVar *x, IterVar *y, Expr *fx, Expr *fy, IterVar **xo, IterVar **yo,
               IterVar **xi, IterVar **yi) {
  IterVar *a, *b, *c, *d;
  if (stage_split(st, x, fx, &a, &b) || stage_split(st, y, fy, &c, &d)) return -1;
  IterVar *order[4] = {a, c, b, d};
  if (stage_reorder(st, 4, order)) return -1;
  if (xo) *xo = a;
  if (yo) *yo = c;
  if (xi) *xi = b;
  if (yi) *yi = d;
  return 0;
}

int stage_fuse(Stage *st, IterVar *outer, IterVar *inner, IterVar **fused) {
  if (check_leaf(st, outer, "fuse") || check_leaf(st, inner, "fuse")) return -1;
  int po = av_find(&st->leaf_iters, outer), pi = av_find(&st->leaf_iters, inner);
  if (po == pi) return kiln_set_error("fuse: cannot fuse axis '%s' with itself", ivname(outer));
  if (pi != po + 1)
    return kiln_set_error("fuse: axes '%s' and '%s' of stage '%s' are not adjacent with '%s' "
                          "outside (reorder them first)",
                          ivname(outer), ivname(inner), stname(st), ivname(outer));
  if ((outer->kind == ITER_REDUCE) != (inner->kind == ITER_REDUCE))
    return kiln_set_error("fuse: cannot fuse a reduce axis with a data axis ('%s', '%s' in '%s')",
                          ivname(outer), ivname(inner), stname(st));
  IterRel *r = KNEW(IterRel);
  r->kind = REL_FUSE;
  r->outer = outer;
  r->inner = inner;
  r->fused = ir_itervar(
      ir_var(kfmt("%s.%s.fused", ivname(outer), ivname(inner)), outer->var->dtype), NULL, NULL,
      outer->kind);
  av_push(&st->relations, r);
  av_push(&st->all_iters, r->fused);
  st->leaf_iters.data[po] = r->fused;
  av_remove(&st->leaf_iters, pi);
  if (fused) *fused = r->fused;
  return 0;
}

int stage_reorder(Stage *st, int n, IterVar **order) {
  for (int i = 0; i < n; i++) {
    if (check_leaf(st, order[i], "reorder")) return -1;
    for (int j = 0; j < i; j++)
      if (order[i] == order[j])
        return kiln_set_error("reorder: axis '%s' listed twice", ivname(order[i]));
  }
  int *pos = KNEWN(int, n);
  for (int i = 0; i < n; i++) pos[i] = av_find(&st->leaf_iters, order[i]);
  /* sort the positions; put the given axes into them in the given order */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && pos[j - 1] > pos[j]; j--) {
      int t = pos[j];
      pos[j] = pos[j - 1];
      pos[j - 1] = t;
    }
  for (int i = 0; i < n; i++) st->leaf_iters.data[pos[i]] = order[i];
  return 0;
}

IterAttr *stage_iter_attr(Stage *st, IterVar *iv, bool create) {
  for (int i = 0; i < st->attrs.len; i++) {
    IterAttr *a = st->attrs.data[i];
    if (a->iv == iv) return a;
  }
  if (!create) return NULL;
  IterAttr *a = KNEW(IterAttr);
  a->iv = iv;
  a->fkind = FOR_SERIAL;
  av_push(&st->attrs, a);
  return a;
}

static int set_kind(Stage *st, IterVar *iv, ForKind k, const char *prim) {
  if (check_leaf(st, iv, prim)) return -1;
  if (k == FOR_PARALLEL && iv->kind == ITER_REDUCE)
    return kiln_set_error("parallel: axis '%s' of stage '%s' is a reduction axis; a parallel "
                          "reduction would race",
                          ivname(iv), stname(st));
  IterAttr *a = stage_iter_attr(st, iv, true);
  if (a->fkind == FOR_THREAD)
    return kiln_set_error("%s: axis '%s' of stage '%s' is bound to %s", prim, ivname(iv),
                          stname(st), a->thread_tag);
  a->fkind = k;
  return 0;
}

int stage_vectorize(Stage *st, IterVar *iv) { return set_kind(st, iv, FOR_VECTORIZED, "vectorize"); }
int stage_unroll(Stage *st, IterVar *iv) { return set_kind(st, iv, FOR_UNROLLED, "unroll"); }
int stage_parallel(Stage *st, IterVar *iv) { return set_kind(st, iv, FOR_PARALLEL, "parallel"); }

int stage_bind(Stage *st, IterVar *iv, const char *tag) {
  if (check_leaf(st, iv, "bind")) return -1;
  static const char *tags[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x",
                               "threadIdx.y", "threadIdx.z", "vthread"};
  bool ok = false;
  for (size_t i = 0; tag && i < sizeof tags / sizeof tags[0]; i++) ok |= !strcmp(tag, tags[i]);
  if (!ok)
    return kiln_set_error("bind: unknown thread tag '%s' (expected blockIdx.x/y/z, "
                          "threadIdx.x/y/z or vthread)",
                          tag ? tag : "(null)");
  IterAttr *a = stage_iter_attr(st, iv, true);
  a->fkind = FOR_THREAD;
  a->thread_tag = kstrdup(tag);
  return 0;
}

int stage_pragma(Stage *st, IterVar *iv, const char *key, Expr *value) {
  if (check_leaf(st, iv, "pragma")) return -1;
  if (!key || !*key) return kiln_set_error("pragma: empty key");
  IterAttr *a = stage_iter_attr(st, iv, true);
  av_push(&a->pragma_keys, (void *)kstrdup(key));
  av_push(&a->pragma_vals, value ? value : ir_i32(1));
  return 0;
}

/* Whether op reads t, itself or through stages of s inlined into it. */
static bool reads_tensor(Schedule *s, Tensor *op, Tensor *t) {
  for (int i = 0; i < op->ninputs; i++) {
    Stage *in = s ? sch_stage(s, op->inputs[i]) : NULL;
    if (op->inputs[i] == t || (in && in->attach == ATTACH_INLINE && reads_tensor(s, op->inputs[i], t))) return true;
  }
  return false;
}

int stage_prefetch(Stage *st, Tensor *t, IterVar *iv, Expr *offset, int locality) {
  if (check_leaf(st, iv, "prefetch")) return -1;
  if (!t || t->okind != KOBJ_TENSOR) return kiln_set_error("prefetch: no tensor given");
  if (!reads_tensor(st->owner, st->op, t))
    return kiln_set_error("prefetch: stage '%s' does not read tensor '%s' (prefetch a tensor the stage reads)",
                          stname(st), t->name);
  if (!offset || !dt_is_intlike(offset->dtype) || offset->dtype.lanes != 1)
    return kiln_set_error("prefetch: the offset for axis '%s' of stage '%s' must be an integer scalar", ivname(iv),
                          stname(st));
  if (locality < 0 || locality > 3)
    return kiln_set_error("prefetch: locality %d for '%s' is not 0 (no temporal locality) to 3 (keep in every cache "
                          "level)",
                          locality, t->name);
  IterAttr *a = stage_iter_attr(st, iv, true);
  av_push(&a->prefetch_data, t);
  av_push(&a->prefetch_offset, ir_cast(DT_I32, offset));
  av_push(&a->prefetch_locality, ir_i32(locality));
  return 0;
}

/* The attributes of a leaf axis that already carries prefetches, for a
 * primitive that rearranges them (prim names it in the error), or NULL. */
static IterAttr *prefetched_attr(Stage *st, IterVar *iv, const char *prim, const char *verb) {
  if (check_leaf(st, iv, prim)) return NULL;
  IterAttr *a = stage_iter_attr(st, iv, false);
  if (!a || !a->prefetch_data.len) {
    kiln_set_error("%s: axis '%s' of stage '%s' has no prefetch to %s (call prefetch first)", prim, ivname(iv),
                   stname(st), verb);
    return NULL;
  }
  return a;
}

int stage_prefetch_spread(Stage *st, IterVar *iv, IterVar *along, int64_t parts) {
  IterAttr *a = prefetched_attr(st, iv, "prefetch_spread", "spread");
  if (!a) return -1;
  if (!along || along->okind != KOBJ_ITERVAR) return kiln_set_error("prefetch_spread: no enclosing axis given");
  if (parts < 1)
    return kiln_set_error("prefetch_spread: %lld parts for axis '%s' of stage '%s'; expected at least 1",
                          (long long)parts, ivname(iv), stname(st));
  a->prefetch_along = along;
  a->prefetch_parts = parts;
  return 0;
}

int stage_prefetch_into(Stage *st, IterVar *iv, IterVar *inner) {
  IterAttr *a = prefetched_attr(st, iv, "prefetch_into", "deal out");
  if (!a) return -1;
  if (!inner || inner->okind != KOBJ_ITERVAR) return kiln_set_error("prefetch_into: no inner axis given");
  a->prefetch_into = inner;
  return 0;
}

static int check_movable(Stage *st, const char *prim) {
  if (!st) return -1;
  if (st->okind != KOBJ_STAGE) return kiln_set_error("%s: not a stage", prim);
  if (st->op->kind == TE_PLACEHOLDER)
    return kiln_set_error("%s: stage '%s' is a placeholder (an input); it is not computed", prim,
                          stname(st));
  return 0;
}

int stage_compute_inline(Stage *st) {
  if (check_movable(st, "compute_inline")) return -1;
  if (st->op->kind == TE_EXTERN)
    return kiln_set_error("compute_inline: stage '%s' is an extern op and cannot be inlined",
                          stname(st));
  if (st->op->nreduce > 0)
    return kiln_set_error("compute_inline: stage '%s' is a reduction and cannot be inlined",
                          stname(st));
  if (st->is_output)
    return kiln_set_error("compute_inline: stage '%s' is an output of the schedule", stname(st));
  st->attach = ATTACH_INLINE;
  st->attach_stage = NULL;
  st->attach_iv = NULL;
  return 0;
}

int stage_compute_root(Stage *st) {
  if (check_movable(st, "compute_root")) return -1;
  st->attach = ATTACH_ROOT;
  st->attach_stage = NULL;
  st->attach_iv = NULL;
  return 0;
}

static bool reads_from(Tensor *t, Stage *target, Schedule *s, AVec *seen) {
  if (av_find(seen, t) >= 0) return false;
  av_push(seen, t);
  for (int i = 0; i < t->ninputs; i++) {
    Tensor *in = t->inputs[i];
    Stage *ps = NULL;
    for (int k = 0; k < s->stages.len && !ps; k++) {
      Stage *c = s->stages.data[k];
      if (av_find(&c->aliases, in) >= 0) ps = c;
    }
    if (ps == target) return true;
    if (ps && reads_from(ps->op, target, s, seen)) return true;
  }
  return false;
}

bool sch_reads_from(Schedule *s, Stage *a, Stage *b) {
  AVec seen = {0};
  return reads_from(a->op, b, s, &seen);
}

int stage_compute_at(Stage *st, Stage *parent, IterVar *iv) {
  if (check_movable(st, "compute_at")) return -1;
  if (st->op->kind == TE_EXTERN)
    return kiln_set_error("compute_at: stage '%s' is an extern op; extern ops are computed at the "
                          "root",
                          stname(st));
  if (!parent || parent->okind != KOBJ_STAGE) return kiln_set_error("compute_at: no parent stage");
  if (parent == st)
    return kiln_set_error("compute_at: stage '%s' cannot be computed inside itself", stname(st));
  if (st->is_output)
    return kiln_set_error("compute_at: stage '%s' is an output of the schedule and must stay at "
                          "the root",
                          stname(st));
  if (check_leaf(parent, iv, "compute_at")) return -1;
  if (parent->attach == ATTACH_INLINE)
    return kiln_set_error("compute_at: target stage '%s' is inlined", stname(parent));
  for (Stage *p = parent; p; p = p->attach == ATTACH_SCOPE ? p->attach_stage : NULL)
    if (p == st)
      return kiln_set_error("compute_at: attaching '%s' inside '%s' creates a cycle ('%s' is "
                            "already computed inside '%s')",
                            stname(st), stname(parent), stname(parent), stname(st));
  Schedule *s = st->owner;
  if (!s || parent->owner != s)
    return kiln_set_error("compute_at: stages '%s' and '%s' belong to different schedules",
                          stname(st), stname(parent));
  if (!sch_reads_from(s, parent, st))
    return kiln_set_error("compute_at: stage '%s' does not read '%s' (directly or through other "
                          "stages), so it is an unrelated stage to compute it in",
                          stname(parent), stname(st));
  st->attach = ATTACH_SCOPE;
  st->attach_stage = parent;
  st->attach_iv = iv;
  return 0;
}

/* ---- cache stages ---- */

/* Replace reads of any tensor resolving to stage `from` with reads of `to`. */
typedef struct {
  Schedule *s;
  Stage *from;
  Tensor *to;
  bool hit;
} ReplCtx;

static Expr *repl_read(IRMutator *m, Expr *e) {
  ReplCtx *c = m->ud;
  Expr *r = ir_mutate_expr_children(m, e);
  if (r && r->kind == EK_Read && av_find(&c->from->aliases, r->read.tensor) >= 0) {
    c->hit = true;
    return ir_read(c->to, c->to->dtype, r->read.n, r->read.idx);
  }
  return r;
}


static Stage *stage_of_op(Schedule *s, Tensor *t, int *index) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (av_find(&st->aliases, t) >= 0) {
      if (index) *index = i;
      return st;
    }
  }
  return NULL;
}

static bool valid_scope(const char *scope) {
  return scope && (!strcmp(scope, "global") || !strcmp(scope, "local") || !strcmp(scope, "shared"));
}

static Tensor *make_copy_compute(Tensor *src, const char *name) {
  Expr **vars = KNEWN(Expr *, src->ndim > 0 ? src->ndim : 1);
  for (int i = 0; i < src->ndim; i++) vars[i] = ir_var(kfmt("ax%d", i), DT_I32);
  Expr *body = te_read(src, src->ndim, vars);
  return te_compute(name, src->ndim, src->shape, vars, body, src->tag);
}

int stage_set_scope(Stage *st, const char *scope) {
  if (check_movable(st, "set_scope")) return -1;
  if (!valid_scope(scope))
    return kiln_set_error("set_scope: unknown scope '%s' for stage '%s' (expected global, local or shared)",
                          scope ? scope : "(null)", stname(st));
  if (st->is_output && strcmp(scope, "global"))
    return kiln_set_error("set_scope: stage '%s' is an output of the schedule; its buffer is the caller's "
                          "(global); cache_write it to compute it in %s memory",
                          stname(st), scope);
  st->scope = kstrdup(scope);
  return 0;
}

Tensor *sch_cache_read(Schedule *s, Tensor *t, const char *scope, int nreaders,
                       Tensor **readers) {
  if (!s || !t) return NULL;
  if (!valid_scope(scope))
    return kiln_set_error("cache_read: unknown scope '%s' (expected global, local or shared)",
                          scope ? scope : "(null)"),
           NULL;
  int idx;
  Stage *ts = stage_of_op(s, t, &idx);
  if (!ts) return kiln_set_error("cache_read: tensor '%s' is not part of this schedule", t->name), NULL;
  if (nreaders <= 0) return kiln_set_error("cache_read: no readers given for '%s'", t->name), NULL;
  Tensor *cache = make_copy_compute(t, kfmt("%s.%s", t->name, scope));
  if (!cache) return NULL;
  cache->inputs[0] = t; /* reads resolve through t's stage */
  for (int i = 0; i < nreaders; i++) {
    Stage *rs = stage_of_op(s, readers[i], NULL);
    if (!rs)
      return kiln_set_error("cache_read: reader '%s' is not part of this schedule",
                            readers[i] ? readers[i]->name : "?"),
             NULL;
    if (rs->op->kind != TE_COMPUTE)
      return kiln_set_error("cache_read: reader '%s' is not a compute op", rs->op->name), NULL;
    ReplCtx c = {s, ts, cache, false};
    IRMutator m = {repl_read, NULL, &c};
    Expr *nb = ir_mutate_expr(&m, rs->op->body);
    if (!nb) return NULL;
    if (!c.hit)
      return kiln_set_error("cache_read: '%s' does not read '%s'", rs->op->name, t->name), NULL;
    rs->op = te_copy_with_body(rs->op, nb);
    av_push(&rs->aliases, rs->op);
  }
  Stage *cs = new_stage(cache);
  cs->owner = s;
  cs->scope = kstrdup(scope);
  av_insert(&s->stages, idx + 1, cs);
  return cache;
}

Tensor *sch_cache_write(Schedule *s, Tensor *t, const char *scope) {
  if (!s || !t) return NULL;
  if (!valid_scope(scope))
    return kiln_set_error("cache_write: unknown scope '%s' (expected global, local or shared)",
                          scope ? scope : "(null)"),
           NULL;
  int idx;
  Stage *st = stage_of_op(s, t, &idx);
  if (!st) return kiln_set_error("cache_write: tensor '%s' is not part of this schedule", t->name), NULL;
  Tensor *op = st->op;
  if (op->kind != TE_COMPUTE)
    return kiln_set_error("cache_write: '%s' is not a compute op", op->name), NULL;
  if (st->relations.len > 0)
    return kiln_set_error("cache_write: stage '%s' was already split or fused; call cache_write "
                          "before scheduling its axes",
                          op->name),
           NULL;
  if (st->attach == ATTACH_INLINE)
    return kiln_set_error("cache_write: stage '%s' is inlined", op->name), NULL;
  /* the cache computes the original body over fresh axis variables */
  Expr **vars = KNEWN(Expr *, op->ndim > 0 ? op->ndim : 1);
  PtrMap vm = {0};
  for (int i = 0; i < op->ndim; i++) {
    vars[i] = ir_var(kfmt("%s.c", ivname(op->axis[i])), DT_I32);
    pm_put(&vm, op->axis[i]->var, vars[i]);
  }
  Expr *body = ir_substitute(op->body, &vm);
  pm_free(&vm);
  Tensor *cache = te_compute(kfmt("%s.%s", op->name, scope), op->ndim, op->shape, vars, body, op->tag);
  if (!cache) return NULL;
  cache->nattrs = op->nattrs;
  cache->attrs = op->attrs;
  /* the stage now copies from the cache over its original axes */
  Expr **ov = KNEWN(Expr *, op->ndim > 0 ? op->ndim : 1);
  for (int i = 0; i < op->ndim; i++) ov[i] = op->axis[i]->var;
  Tensor *copy = KNEW(Tensor);
  *copy = *op;
  copy->body = te_read(cache, op->ndim, ov);
  copy->nreduce = 0;
  copy->reduce_axis = NULL;
  copy->ninputs = 1;
  copy->inputs = KNEWN(Tensor *, 1);
  copy->inputs[0] = cache;
  st->op = copy;
  av_push(&st->aliases, copy);
  st->all_iters = (AVec){0};
  for (int i = 0; i < op->ndim; i++) av_push(&st->all_iters, op->axis[i]);
  st->leaf_iters = av_copy(&st->all_iters);
  st->attrs = (AVec){0};
  Stage *cs = new_stage(cache);
  cs->owner = s;
  cs->scope = kstrdup(scope);
  av_insert(&s->stages, idx, cs);
  return cache;
}


Schedule *sch_copy(Schedule *s) {
  Schedule *c = KNEW(Schedule);
  *c = *s;
  c->stages = (AVec){0};
  PtrMap remap = {0};
  for (int i = 0; i < s->stages.len; i++) {
    Stage *o = s->stages.data[i];
    Stage *n = KNEW(Stage);
    *n = *o;
    n->owner = c;
    n->aliases = av_copy(&o->aliases);
    n->all_iters = av_copy(&o->all_iters);
    n->leaf_iters = av_copy(&o->leaf_iters);
    n->relations = av_copy(&o->relations);
    n->attrs = av_copy(&o->attrs);
    pm_put(&remap, o, n);
    av_push(&c->stages, n);
  }
  for (int i = 0; i < c->stages.len; i++) {
    Stage *n = c->stages.data[i];
    if (n->attach_stage) n->attach_stage = pm_get(&remap, n->attach_stage);
  }
  pm_free(&remap);
  return c;
}
