/*
 * schedule_internal.h - what the generic CPU schedules share.
 *
 * The generic schedules are split by concern:
 *   schedule.c         the traverse (inlining injective stages), injective
 *                      outputs and reductions
 *   schedule_anchor.c  one schedule for each anchor op (conv2d NCHW, dense,
 *                      matmul, pooling, softmax and the norms) and the
 *                      dispatcher the graph layer calls on a fused group
 * The small queries below are used by both, so they live here as static
 * inline functions; the shared steps are declared after them.
 */
#ifndef KILN_TOPI_GENERIC_SCHEDULE_INTERNAL_H
#define KILN_TOPI_GENERIC_SCHEDULE_INTERNAL_H

#include <string.h>

#include "../topi.h"

#define PAR_MIN_WORK 32768 /* elements (times reduction length) worth a parallel loop */
#define OUTER_MIN_PAR 8    /* fewer outer iterations than this: parallelize more */

/* ---- small queries ---- */

static inline int vec_width(DType t) {
  int bytes = dt_is_bool(t) ? 4 : t.bits / 8;
  if (bytes <= 0) bytes = 1;
  int w = 64 / bytes;
  return w > 16 ? 16 : w;
}

/* Vector lanes for a loop of this extent: the largest power of two up to
 * the vector width that divides it, at least 8 (fewer lanes than that
 * the C compiler does as well on a plain loop); 0 for none. */
static inline int lanes_for(DType t, int64_t extent) {
  if (extent <= 0) return 0;
  for (int l = vec_width(t); l >= 8; l /= 2)
    if (extent % l == 0) return l;
  return 0;
}

static inline bool is_compute(Tensor *t) { return t && t->kind == TE_COMPUTE; }

static inline bool tag_is(Tensor *t, const char *tag) { return t->tag && !strcmp(t->tag, tag); }

static inline int64_t const_extent(Expr *e) {
  int64_t v;
  return ir_is_const_int(e, &v) ? v : -1;
}

/* Product of the extents of dims [from, to) of t, or -1 if not constant. */
static inline int64_t dims_product(Tensor *t, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++) {
    int64_t e = const_extent(t->shape[d]);
    if (e < 0) return -1;
    p *= e;
  }
  return p;
}

static inline int64_t reduce_length(Tensor *t) {
  int64_t p = 1;
  for (int i = 0; i < t->nreduce; i++) {
    int64_t e = const_extent(t->reduce_axis[i]->extent);
    p *= e > 0 ? e : 16;
  }
  return p;
}

static inline bool is_output(Schedule *s, Stage *st) {
  for (int i = 0; i < s->noutputs; i++)
    if (av_find(&st->aliases, s->outputs[i]) >= 0) return true;
  return false;
}

static inline Stage *stage_of(Schedule *s, Tensor *t) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (av_find(&st->aliases, t) >= 0) return st;
  }
  return NULL;
}

static inline Expr *strip_reduce(Expr *b) { return b && b->kind == EK_Reduce ? b->reduce.source : b; }

/* A stage's inlined body and the reads in it, collected once for the
 * several questions a schedule asks of them. */
typedef struct Body {
  Expr *e;
  AVec reads;
} Body;

/* ---- shared steps (schedule.c) ---- */

/* The body of st with every inlined producer substituted. */
Expr *gs_inlined_body(Schedule *s, Stage *st);
/* Are the reads of body (of op) contiguous along var, op's innermost loop? */
bool gs_contiguous_along(Tensor *op, Expr *body, Expr *var);
/* Inline every injective stage that is not an output (the traverse). */
int gs_inline_injective(Schedule *s);
/* The output stage that forms an elementwise epilogue of anchor a, or NULL. */
Stage *gs_epilogue_of(Schedule *s, Stage *a);
/* Fuse the leaves [from, to) of st into one; returns it (or the only one). */
IterVar *gs_fuse_range(Stage *st, int from, int to);
/* Fuse the outer n - 1 of the first n leaves (all n when the outer ones
 * are few), parallel when par; returns the innermost of those loops. */
IterVar *gs_nest_outer(Stage *st, int n, bool par);
/* An elementwise-like stage's loops; returns the leaf an anchor attaches to. */
IterVar *gs_elementwise(Schedule *s, Stage *st, const Body *body, bool allow_parallel);
/* A reduction at the root: spatial axes outside (parallel), reduce inside. */
int gs_reduction_root(Schedule *s, Stage *st, bool allow_parallel);
/* A non-injective stage we know nothing about: at the root. */
int gs_default_stage(Schedule *s, Stage *st);
/* Schedule every stage not in done: reductions, then the outputs. */
int gs_schedule_rest(Schedule *s, int nout, Tensor **outs, AVec *done);

#endif
