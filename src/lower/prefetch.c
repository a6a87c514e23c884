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
 * i % parts equals the enclosing loop's variable % parts.
 */
#include "lower.h"

#include <string.h>

enum { CACHE_LINE_BYTES = 64 };

static bool covers(Analyzer *an, Range *r, Expr *dim) {
  return analyzer_can_prove(an, ir_eq(r->min, ir_i32(0))) &&
         analyzer_can_prove(an, ir_eq(r->extent, ir_cast(DT_I32, dim)));
}

/* The nest touching one tensor's region. */
static Stmt *touch(Bounds *b, Tensor *t, Range **region, Expr *locality) {
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
  s = ir_for(vars[k], ir_i32(0), lines, FOR_SERIAL, s);
  for (int d = k - 1; d >= 0; d--) s = ir_for(vars[d], ir_i32(0), region[d]->extent, FOR_SERIAL, s);
  return s;
}

Stmt *lower_prefetch(Bounds *b, StageBounds *sb, int k) {
  Stage *st = sb->st;
  IterVar *leaf = st->leaf_iters.data[k];
  IterAttr *a = stage_iter_attr(st, leaf, false);
  if (!a || !a->prefetch_data.len) return ir_nop();
  const char *lname = leaf->var->var.name;
  if (a->fkind == FOR_VECTORIZED)
    return kiln_set_error("prefetch: axis '%s' of stage '%s' is vectorized; prefetch at an outer loop", lname,
                          st->op->name),
           NULL;
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
    parts[i] = touch(b, t, region, a->prefetch_locality.data[i]);
    if (!parts[i]) return NULL;
  }
  Stmt *all = ir_seq(a->prefetch_data.len, parts);
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
