/*
 * api_schedule.c - schedule.*: making schedules, every scheduling
 * primitive, and what a binding reads back from stages.
 *
 * Each primitive checks its handles here (a stage, axes of the right kind)
 * and leaves the schedule's own rules (a leaf axis, adjacent axes to fuse,
 * a legal compute_at) to te/schedule.c, whose message is prefixed with the
 * API name.  Primitives that make axes return them: split -> [outer,
 * inner], tile -> [x_outer, y_outer, x_inner, y_inner], fuse -> the fused
 * axis.
 */
#include "api.h"

#include <string.h>

API_FUNC(api_sch_create) {
  API_CALL;
  int n;
  Tensor **outs;
  if (api_argc(&c, 1, -1) || !(outs = (Tensor **)api_obj_list(&c, 0, KOBJ_TENSOR, &n))) return -1;
  return api_ret_obj(&c, ret, ret_code, te_create_schedule(n, outs));
}

API_FUNC(api_sch_stage_fn) {
  API_CALL;
  Schedule *s;
  Tensor *t;
  if (api_argc(&c, 2, 2) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE)) || !(t = api_obj(&c, 1, KOBJ_TENSOR)))
    return -1;
  return api_ret_obj(&c, ret, ret_code, sch_stage(s, t));
}

/* A primitive's stage and, when asked, its axis argument. */
static Stage *stage_arg(const ApiCall *c, int min, int max) {
  if (api_argc(c, min, max)) return NULL;
  return api_obj(c, 0, KOBJ_STAGE);
}

static int split_common(const ApiCall *c, KilnValue *ret, int *ret_code, bool nparts) {
  Stage *st;
  IterVar *iv, *outer, *inner;
  Expr *amount;
  if (!(st = stage_arg(c, 3, 3)) || !(iv = api_obj(c, 1, KOBJ_ITERVAR)) ||
      !(amount = api_expr_like(c, 2, iv->var)))
    return -1;
  int rc = nparts ? stage_split_nparts(st, iv, amount, &outer, &inner)
                  : stage_split(st, iv, amount, &outer, &inner);
  if (rc) return api_fail(c);
  return api_ret_obj(c, ret, ret_code, karray_new(2, (void *[]){outer, inner}));
}

API_FUNC(api_sch_split) {
  API_CALL;
  return split_common(&c, ret, ret_code, false);
}

API_FUNC(api_sch_split_nparts) {
  API_CALL;
  return split_common(&c, ret, ret_code, true);
}

API_FUNC(api_sch_tile) {
  API_CALL;
  Stage *st;
  IterVar *x, *y, *xo, *yo, *xi, *yi;
  Expr *fx, *fy;
  if (!(st = stage_arg(&c, 5, 5)) || !(x = api_obj(&c, 1, KOBJ_ITERVAR)) ||
      !(y = api_obj(&c, 2, KOBJ_ITERVAR)) || !(fx = api_expr_like(&c, 3, x->var)) ||
      !(fy = api_expr_like(&c, 4, y->var)))
    return -1;
  if (stage_tile(st, x, y, fx, fy, &xo, &yo, &xi, &yi)) return api_fail(&c);
  return api_ret_obj(&c, ret, ret_code, karray_new(4, (void *[]){xo, yo, xi, yi}));
}

/* fuse(stage, a, b, c...): fuses left to right, outermost first. */
API_FUNC(api_sch_fuse) {
  API_CALL;
  Stage *st;
  int n;
  IterVar **ivs;
  if (!(st = stage_arg(&c, 2, -1)) || !(ivs = (IterVar **)api_obj_list(&c, 1, KOBJ_ITERVAR, &n)))
    return -1;
  if (n == 0) return api_error(&c, "no axes given");
  IterVar *fused = ivs[0];
  for (int i = 1; i < n; i++)
    if (stage_fuse(st, fused, ivs[i], &fused)) return api_fail(&c);
  return api_ret_obj(&c, ret, ret_code, fused);
}

API_FUNC(api_sch_reorder) {
  API_CALL;
  Stage *st;
  int n;
  IterVar **ivs;
  if (!(st = stage_arg(&c, 1, -1)) || !(ivs = (IterVar **)api_obj_list(&c, 1, KOBJ_ITERVAR, &n)))
    return -1;
  if (stage_reorder(st, n, ivs)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

/* vectorize, unroll, parallel: (stage, axis). */
static int annotate(const ApiCall *c, KilnValue *ret, int *ret_code, int (*prim)(Stage *, IterVar *)) {
  Stage *st;
  IterVar *iv;
  if (!(st = stage_arg(c, 2, 2)) || !(iv = api_obj(c, 1, KOBJ_ITERVAR))) return -1;
  if (prim(st, iv)) return api_fail(c);
  return api_ret_null(ret, ret_code);
}

API_FUNC(api_sch_vectorize) {
  API_CALL;
  return annotate(&c, ret, ret_code, stage_vectorize);
}

API_FUNC(api_sch_unroll) {
  API_CALL;
  return annotate(&c, ret, ret_code, stage_unroll);
}

API_FUNC(api_sch_parallel) {
  API_CALL;
  return annotate(&c, ret, ret_code, stage_parallel);
}

/* bind(stage, axis, thread): thread is a tag ("threadIdx.x") or a thread
 * axis made by te.thread_axis. */
API_FUNC(api_sch_bind) {
  API_CALL;
  Stage *st;
  IterVar *iv;
  const char *tag = NULL;
  if (!(st = stage_arg(&c, 3, 3)) || !(iv = api_obj(&c, 1, KOBJ_ITERVAR))) return -1;
  if (c.codes[2] == KILN_STR) {
    tag = api_str(&c, 2);
  } else {
    IterVar *t = api_obj(&c, 2, KOBJ_ITERVAR);
    if (!t) return -1;
    if (!t->thread_tag) return api_error(&c, "argument 2 (thread) is not a thread axis (make it with te.thread_axis)");
    tag = t->thread_tag;
  }
  if (!tag) return -1;
  if (stage_bind(st, iv, tag)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

API_FUNC(api_sch_pragma) {
  API_CALL;
  Stage *st;
  IterVar *iv;
  const char *key;
  Expr *value;
  if (!(st = stage_arg(&c, 3, 4)) || !(iv = api_obj(&c, 1, KOBJ_ITERVAR)) ||
      !(key = api_str(&c, 2)))
    return -1;
  if (c.n > 3 && c.codes[3] == KILN_STR)
    value = ir_str(c.args[3].v_str ? c.args[3].v_str : "");
  else if (api_opt_expr(&c, 3, &value))
    return -1;
  if (stage_pragma(st, iv, key, value)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

/* prefetch(stage, tensor, axis, offset, locality?): TVM's
 * s[stage].prefetch(tensor, var, offset); locality 3 unless given. */
API_FUNC(api_sch_prefetch) {
  API_CALL;
  Stage *st;
  Tensor *t;
  IterVar *iv;
  Expr *offset;
  int64_t locality = 3;
  if (!(st = stage_arg(&c, 4, 5)) || !(t = api_obj(&c, 1, KOBJ_TENSOR)) || !(iv = api_obj(&c, 2, KOBJ_ITERVAR)) ||
      !(offset = api_expr_like(&c, 3, iv->var)) || (c.n > 4 && api_int(&c, 4, &locality)))
    return -1;
  if (stage_prefetch(st, t, iv, offset, (int)locality)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

/* prefetch_spread(stage, axis, along, parts): stage_prefetch_spread. */
API_FUNC(api_sch_prefetch_spread) {
  API_CALL;
  Stage *st;
  IterVar *iv, *along;
  int64_t parts;
  if (!(st = stage_arg(&c, 4, 4)) || !(iv = api_obj(&c, 1, KOBJ_ITERVAR)) || !(along = api_obj(&c, 2, KOBJ_ITERVAR)) ||
      api_int(&c, 3, &parts))
    return -1;
  if (stage_prefetch_spread(st, iv, along, parts)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

static int attach_prim(const ApiCall *c, KilnValue *ret, int *ret_code, int (*prim)(Stage *)) {
  Stage *st;
  if (!(st = stage_arg(c, 1, 1))) return -1;
  if (prim(st)) return api_fail(c);
  return api_ret_null(ret, ret_code);
}

API_FUNC(api_sch_compute_inline) {
  API_CALL;
  return attach_prim(&c, ret, ret_code, stage_compute_inline);
}

API_FUNC(api_sch_set_scope) {
  API_CALL;
  Stage *st;
  const char *scope;
  if (!(st = stage_arg(&c, 2, 2)) || !(scope = api_str(&c, 1))) return -1;
  if (stage_set_scope(st, scope)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

API_FUNC(api_sch_compute_root) {
  API_CALL;
  return attach_prim(&c, ret, ret_code, stage_compute_root);
}

API_FUNC(api_sch_compute_at) {
  API_CALL;
  Stage *st, *parent;
  IterVar *iv;
  if (!(st = stage_arg(&c, 3, 3)) || !(parent = api_obj(&c, 1, KOBJ_STAGE)) ||
      !(iv = api_obj(&c, 2, KOBJ_ITERVAR)))
    return -1;
  if (st->owner && parent->owner && st->owner != parent->owner)
    return api_error(&c, "stages '%s' and '%s' belong to different schedules", st->op->name,
                     parent->op->name);
  if (stage_compute_at(st, parent, iv)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

API_FUNC(api_sch_cache_read) {
  API_CALL;
  Schedule *s;
  Tensor *t;
  const char *scope;
  int n;
  Tensor **readers;
  if (api_argc(&c, 4, -1) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE)) ||
      !(t = api_obj(&c, 1, KOBJ_TENSOR)) || !(scope = api_str(&c, 2)) ||
      !(readers = (Tensor **)api_obj_list(&c, 3, KOBJ_TENSOR, &n)))
    return -1;
  return api_ret_obj(&c, ret, ret_code, sch_cache_read(s, t, scope, n, readers));
}

API_FUNC(api_sch_cache_write) {
  API_CALL;
  Schedule *s;
  Tensor *t;
  const char *scope;
  if (api_argc(&c, 3, 3) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE)) ||
      !(t = api_obj(&c, 1, KOBJ_TENSOR)) || !(scope = api_str(&c, 2)))
    return -1;
  return api_ret_obj(&c, ret, ret_code, sch_cache_write(s, t, scope));
}

API_FUNC(api_sch_check) {
  API_CALL;
  Schedule *s;
  if (api_argc(&c, 1, 1) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE))) return -1;
  if (kiln_check_schedule(s)) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

/* ---- inspection ---- */

API_FUNC(api_sch_stage_op) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  return st ? api_ret_obj(&c, ret, ret_code, st->op) : -1;
}

API_FUNC(api_sch_stage_origin) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  return st ? api_ret_obj(&c, ret, ret_code, st->origin) : -1;
}

API_FUNC(api_sch_stage_axis) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  if (!st) return -1;
  int n = st->op->kind == TE_COMPUTE ? st->op->ndim : 0;
  return api_ret_obj(&c, ret, ret_code, karray_new(n, (void **)st->op->axis));
}

API_FUNC(api_sch_stage_reduce_axis) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  if (!st) return -1;
  int n = st->op->kind == TE_COMPUTE ? st->op->nreduce : 0;
  return api_ret_obj(&c, ret, ret_code, karray_new(n, (void **)st->op->reduce_axis));
}

API_FUNC(api_sch_stage_leaf_iters) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  return st ? api_ret_obj(&c, ret, ret_code, karray_new(st->leaf_iters.len, st->leaf_iters.data)) : -1;
}

API_FUNC(api_sch_stage_all_iters) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  return st ? api_ret_obj(&c, ret, ret_code, karray_new(st->all_iters.len, st->all_iters.data)) : -1;
}

API_FUNC(api_sch_stage_attach) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  if (!st) return -1;
  const char *k = "";
  switch (st->attach) {
  case ATTACH_ROOT: k = "root"; break;
  case ATTACH_INLINE: k = "inline"; break;
  case ATTACH_SCOPE: k = "scope"; break;
  }
  return api_ret_str(ret, ret_code, k);
}

API_FUNC(api_sch_stage_scope) {
  API_CALL;
  Stage *st = stage_arg(&c, 1, 1);
  return st ? api_ret_str(ret, ret_code, st->scope ? st->scope : "global") : -1;
}

API_FUNC(api_sch_schedule_stages) {
  API_CALL;
  Schedule *s;
  if (api_argc(&c, 1, 1) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE))) return -1;
  return api_ret_obj(&c, ret, ret_code, karray_new(s->stages.len, s->stages.data));
}

API_FUNC(api_sch_schedule_outputs) {
  API_CALL;
  Schedule *s;
  if (api_argc(&c, 1, 1) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE))) return -1;
  return api_ret_obj(&c, ret, ret_code, karray_new(s->noutputs, (void **)s->outputs));
}

const ApiEntry api_schedule_funcs[] = {
    {"schedule.create_schedule", api_sch_create, "outputs..."},
    {"schedule.Stage", api_sch_stage_fn, "schedule, tensor"},
    {"schedule.split", api_sch_split, "stage, axis, factor"},
    {"schedule.split_nparts", api_sch_split_nparts, "stage, axis, nparts"},
    {"schedule.tile", api_sch_tile, "stage, x_axis, y_axis, x_factor, y_factor"},
    {"schedule.fuse", api_sch_fuse, "stage, axes..."},
    {"schedule.reorder", api_sch_reorder, "stage, axes..."},
    {"schedule.vectorize", api_sch_vectorize, "stage, axis"},
    {"schedule.unroll", api_sch_unroll, "stage, axis"},
    {"schedule.parallel", api_sch_parallel, "stage, axis"},
    {"schedule.bind", api_sch_bind, "stage, axis, thread"},
    {"schedule.pragma", api_sch_pragma, "stage, axis, key, value?"},
    {"schedule.prefetch", api_sch_prefetch, "stage, tensor, axis, offset, locality?"},
    {"schedule.prefetch_spread", api_sch_prefetch_spread, "stage, axis, along, parts"},
    {"schedule.compute_inline", api_sch_compute_inline, "stage"},
    {"schedule.set_scope", api_sch_set_scope, "stage, scope"},
    {"schedule.compute_root", api_sch_compute_root, "stage"},
    {"schedule.compute_at", api_sch_compute_at, "stage, parent, axis"},
    {"schedule.cache_read", api_sch_cache_read, "schedule, tensor, scope, readers..."},
    {"schedule.cache_write", api_sch_cache_write, "schedule, tensor, scope"},
    {"schedule.check", api_sch_check, "schedule"},
    {"schedule.StageOp", api_sch_stage_op, "stage"},
    {"schedule.StageOrigin", api_sch_stage_origin, "stage"},
    {"schedule.StageAxis", api_sch_stage_axis, "stage"},
    {"schedule.StageReduceAxis", api_sch_stage_reduce_axis, "stage"},
    {"schedule.StageLeafIters", api_sch_stage_leaf_iters, "stage"},
    {"schedule.StageAllIters", api_sch_stage_all_iters, "stage"},
    {"schedule.StageAttach", api_sch_stage_attach, "stage"},
    {"schedule.StageScope", api_sch_stage_scope, "stage"},
    {"schedule.ScheduleStages", api_sch_schedule_stages, "schedule"},
    {"schedule.ScheduleOutputs", api_sch_schedule_outputs, "schedule"},
    {NULL, NULL, NULL},
};
