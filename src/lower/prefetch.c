/*
 * prefetch.c - stage_prefetch's loads ahead: at the start of each
 * iteration of a loop, touch every cache line of what the iteration
 * `offset` steps later will read of a tensor (TVM's prefetch_scope and
 * InjectPrefetch, then storage_flatten's Prefetch loops).
 *
 * The region comes from bound inference's interval evaluation
 * (lower_iteration_region): the loops inside the prefetched loop relaxed,
 * its variable shifted by the offset.  The tensor is stored whole and
 * row-major (an argument, or a stage realized at the root), so the region
 * is a nest of outer dimensions around one contiguous run: the innermost
 * dimensions it covers entirely, joined with the first one it covers only
 * in part.  Each run is touched a cache line apart, the address computed
 * as a flat offset of the tensor (T[0, ..., 0, flat]; flattening maps it
 * to the same element) and kept inside [0, size): a region past the end,
 * the iterations after the last, prefetches the last line instead.  As in
 * TVM the address arithmetic is row-major: a region reaching past a
 * dimension continues into the next row of the tensor (a kernel's next
 * output-channel chunk, for an offset of a whole ic loop).  Spread
 * (stage_prefetch_spread), iteration i of the loop touches only where
 * i % parts equals the enclosing loop's variable % parts.  Dealt into an
 * inner loop (stage_prefetch_into), the touches leave the loop's start:
 * iteration j of the inner loop (extent E) of the stage computed there
 * touches lines j, j + E, ... of them, counted through the nest row-major.
 */
#include "lower.h"

#include <string.h>

enum { CACHE_LINE_BYTES = 64 };

static bool covers(Analyzer *an, Range *r, Expr *dim) {
  return analyzer_can_prove(an, ir_eq(r->min, ir_i32(0))) &&
         analyzer_can_prove(an, ir_eq(r->extent, ir_cast(DT_I32, dim)));
}

/* The nest touching one tensor's region; with j, only the lines j, j + E,
 * ... of it (the nest's iterations counted row-major). */
static Stmt *touch(Bounds *b, Tensor *t, Range **region, Expr *locality, Expr *j, Expr *E) {
  int n = t->ndim;
  Expr **stride = KNEWN(Expr *, n);
  for (int d = n - 1; d >= 0; d--)
    stride[d] = d == n - 1 ? ir_i32(1) : analyzer_simplify(b->an, ir_mul(stride[d + 1], ir_cast(DT_I32, t->shape[d + 1])));
  Expr *size = analyzer_simplify(b->an, ir_mul(stride[0], ir_cast(DT_I32, t->shape[0])));
  /* dims [k, n) form one run: every dim after k is covered whole */
  int k = n - 1;
  Expr *run = region[n - 1]->extent;
  while (k > 0 && covers(b->an, region[k], t->shape[k])) {
    k--;
    run = ir_mul(run, region[k]->extent);
  }
  int64_t per_line = CACHE_LINE_BYTES / dt_bytes(t->dtype);
  if (per_line < 1) per_line = 1;
  Expr **vars = KNEWN(Expr *, k + 1);
  Expr *base = ir_i32(0);
  for (int d = 0; d < n; d++) {
    Expr *at = region[d]->min;
    if (d < k) {
      vars[d] = ir_var(kfmt("prefetch.%s.%d", t->name, d), DT_I32);
      at = ir_add(at, vars[d]);
    }
    base = ir_add(base, ir_mul(at, stride[d]));
  }
  /* a run starts on a line boundary (buffers are line-aligned) where the
   * strides up to its first dimension and its length are whole lines;
   * else it may straddle one line more: (run - 1) / per_line + 2 lines,
   * rounded up */
  bool aligned = true;
  int64_t sv;
  for (int d = 0; d <= k; d++) aligned &= ir_is_const_int(stride[d], &sv) && sv % per_line == 0;
  run = analyzer_simplify(b->an, run);
  aligned &= ir_is_const_int(run, &sv) && sv % per_line == 0;
  Expr *lines = aligned ? ir_floordiv(run, ir_i32(per_line))
                        : ir_add(ir_floordiv(ir_add(run, ir_i32(per_line - 2)), ir_i32(per_line)), ir_i32(1));
  lines = analyzer_simplify(b->an, lines);
  vars[k] = ir_var(kfmt("prefetch.%s.%d", t->name, k), DT_I32);
  Expr *flat = ir_add(base, ir_mul(vars[k], ir_i32(per_line)));
  flat = ir_max(ir_min(flat, ir_sub(size, ir_i32(1))), ir_i32(0));
  Expr **idx = KNEWN(Expr *, n);
  for (int d = 0; d < n; d++) idx[d] = d == n - 1 ? analyzer_simplify(b->an, flat) : ir_i32(0);
  Stmt *s = ir_evaluate(ir_call2(INTRIN_prefetch, ir_read(lower_stage_of(b->sch, t)->op, t->dtype, n, idx), locality));
  if (j) { /* vars[d] = (line / the lines inside d) % extent d, line = j + q E */
    Expr *q = ir_var(kfmt("prefetch.%s.q", t->name), DT_I32), *line = ir_add(j, ir_mul(q, E)), *inside = lines;
    PtrMap vm = {0};
    pm_put(&vm, vars[k], ir_floormod(line, lines));
    for (int d = k - 1; d >= 0; d--) {
      pm_put(&vm, vars[d], ir_floormod(ir_floordiv(line, inside), region[d]->extent));
      inside = ir_mul(inside, region[d]->extent);
    }
    s = ir_if(ir_lt(line, inside), ir_substitute_stmt(s, &vm), NULL);
    pm_free(&vm);
    Expr *rounds = analyzer_simplify(b->an, ir_floordiv(ir_add(inside, ir_sub(E, ir_i32(1))), E));
    return ir_for(q, ir_i32(0), rounds, FOR_SERIAL, s);
  }
  s = ir_for(vars[k], ir_i32(0), lines, FOR_SERIAL, s);
  for (int d = k - 1; d >= 0; d--) s = ir_for(vars[d], ir_i32(0), region[d]->extent, FOR_SERIAL, s);
  return s;
}

/* The touches of a's prefetches at loop k of sb's stage (j, E: dealt
 * over an inner loop, see touch). */
static Stmt *touches(Bounds *b, StageBounds *sb, int k, IterAttr *a, Expr *j, Expr *E) {
  Stage *st = sb->st;
  const char *lname = ((IterVar *)st->leaf_iters.data[k])->var->var.name;
  Stmt **parts = KNEWN(Stmt *, a->prefetch_data.len);
  for (int i = 0; i < a->prefetch_data.len; i++) {
    Tensor *t = a->prefetch_data.data[i];
    Stage *ts = lower_stage_of(b->sch, t);
    if (!ts || (ts->op->kind != TE_PLACEHOLDER && ts->attach != ATTACH_ROOT))
      return kiln_set_error("prefetch: '%s' (at axis '%s' of stage '%s') must be stored whole - an input or a stage "
                            "computed at the root - to be prefetched",
                            t->name, lname, st->op->name),
             NULL;
    Range **region = KNEWN(Range *, t->ndim > 0 ? t->ndim : 1);
    if (t->ndim < 1 || lower_iteration_region(b, sb, t, k, a->prefetch_offset.data[i], region)) {
      kiln_error_context("prefetch of '%s' at axis '%s' of stage '%s'", t->name, lname, st->op->name);
      return NULL;
    }
    parts[i] = touch(b, t, region, a->prefetch_locality.data[i], j, E);
    if (!parts[i]) return NULL;
  }
  return ir_seq(a->prefetch_data.len, parts);
}

/* The touches a stage st is computed in deals into st's loop k
 * (stage_prefetch_into), or a no-op. */
static Stmt *dealt_in(Bounds *b, StageBounds *sb, int k) {
  Stage *st = sb->st;
  if (st->attach != ATTACH_SCOPE) return ir_nop();
  IterAttr *pa = stage_iter_attr(st->attach_stage, st->attach_iv, false);
  if (!pa || pa->prefetch_into != st->leaf_iters.data[k]) return ir_nop();
  Range *rg = pm_get(&sb->range, st->leaf_iters.data[k]);
  Expr *j = ir_sub(pm_get(&sb->loopvar, st->leaf_iters.data[k]), rg->min);
  return touches(b, bounds_of(b, st->attach_stage), stage_leaf_index(st->attach_stage, st->attach_iv), pa, j,
                 rg->extent);
}

/* The touches of st's own prefetches at its loop k. */
static Stmt *own_touches(Bounds *b, StageBounds *sb, int k) {
  Stage *st = sb->st;
  IterVar *leaf = st->leaf_iters.data[k];
  IterAttr *a = stage_iter_attr(st, leaf, false);
  if (!a || !a->prefetch_data.len) return ir_nop();
  const char *lname = leaf->var->var.name;
  if (a->fkind == FOR_VECTORIZED)
    return kiln_set_error("prefetch: axis '%s' of stage '%s' is vectorized; prefetch at an outer loop", lname,
                          st->op->name),
           NULL;
  if (a->prefetch_into) { /* dealt into a stage computed here (dealt_in); one must have the loop */
    for (int i = 0; i < b->sch->stages.len; i++) {
      Stage *in = b->sch->stages.data[i];
      if (in->attach == ATTACH_SCOPE && in->attach_stage == st && in->attach_iv == leaf &&
          stage_leaf_index(in, a->prefetch_into) >= 0)
        return ir_nop();
    }
    return kiln_set_error("prefetch_into: axis '%s' is not a loop of a stage computed at axis '%s' of stage '%s'",
                          a->prefetch_into->var->var.name, lname, st->op->name),
           NULL;
  }
  Stmt *all = touches(b, sb, k, a, NULL, NULL);
  if (!all) return NULL;
  if (!a->prefetch_along || a->prefetch_parts <= 1) return all;
  /* spread: the along loop's variable, from st or a stage it is computed in */
  Expr *along = NULL;
  int limit = k; /* along must be a loop outside this one: in st above k, in a parent up to the attach point */
  for (Stage *p = st; p && !along;) {
    int at = stage_leaf_index(p, a->prefetch_along);
    if (at >= 0 && at < limit) along = pm_get(&bounds_of(b, p)->loopvar, a->prefetch_along);
    if (p->attach != ATTACH_SCOPE) break;
    limit = stage_leaf_index(p->attach_stage, p->attach_iv) + 1;
    p = p->attach_stage;
  }
  if (!along)
    return kiln_set_error("prefetch_spread: axis '%s' (for axis '%s' of stage '%s') is not a loop enclosing it",
                          a->prefetch_along->var->var.name, lname, st->op->name),
           NULL;
  Expr *n = ir_i32(a->prefetch_parts), *kv = pm_get(&sb->loopvar, leaf);
  return ir_if(ir_eq(ir_floormod(kv, n), ir_floormod(along, n)), all, NULL);
}

Stmt *lower_prefetch(Bounds *b, StageBounds *sb, int k) {
  Stmt *own = own_touches(b, sb, k), *in = own ? dealt_in(b, sb, k) : NULL;
  return in ? ir_seq2(own, in) : NULL;
}
