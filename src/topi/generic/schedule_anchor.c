/*
 * schedule_anchor.c - the generic CPU schedules of the anchor ops: conv2d
 * NCHW (also group, depthwise, transposed), dense, matmul and batch_matmul,
 * pooling, softmax and the norms, and the dispatcher the graph layer calls
 * on a fused group (topi_schedule_generic picks the schedule by the
 * anchor's tag).
 *
 * Each starts with schedule.c's traverse (injective stages inlined), finds
 * its anchors by tag, and computes an anchor inside its elementwise
 * epilogue's loops when it has one (place), at the root otherwise; what
 * is left goes to gs_schedule_rest.  A max pool on 8-bit integers or
 * float32 in a blocked layout keeps a block of columns' maxima in
 * registers, an average pool its sums (pool_blocked); the row ops (softmax, norms) compute every row
 * stage inside one parallel loop over the rows (row_anchor).
 */
#include "schedule_internal.h"

typedef int (*AnchorFn)(Schedule *s, Stage *anchor, AVec *done);

/* The anchor stages with one of the tags, walking all stages. */
static Stage *find_anchor(Schedule *s, const char *const *tags) {
  for (int i = s->stages.len - 1; i >= 0; i--) {
    Stage *st = s->stages.data[i];
    if (!is_compute(st->origin) || st->attach == ATTACH_INLINE) continue;
    for (int k = 0; tags[k]; k++)
      if (tag_is(st->origin, tags[k])) return st;
  }
  return NULL;
}

static int with_anchor(Schedule *s, int nout, Tensor **outs, const char *const *tags, AnchorFn fn) {
  if (!s || gs_inline_injective(s)) return -1;
  AVec done = {0};
  for (;;) {
    Stage *a = NULL;
    for (int i = s->stages.len - 1; i >= 0 && !a; i--) {
      Stage *st = s->stages.data[i];
      if (av_find(&done, st) >= 0 || !is_compute(st->origin) || st->attach == ATTACH_INLINE) continue;
      for (int k = 0; tags[k]; k++)
        if (tag_is(st->origin, tags[k])) a = st;
    }
    if (!a) break;
    av_push(&done, a);
    if (fn(s, a, &done)) return -1;
  }
  return gs_schedule_rest(s, nout, outs, &done);
}

/* The loop in which to compute anchor a: its epilogue's, if it has one
 * (the epilogue is then scheduled by the caller's split of it). */
typedef struct Placement {
  Stage *loops; /* the stage whose loops we lay out: a or its epilogue */
  bool fused;   /* a is computed inside loops */
} Placement;

static Placement place(Schedule *s, Stage *a, AVec *done) {
  Stage *o = gs_epilogue_of(s, a);
  if (o && av_find(done, o) < 0 && o->relations.len == 0) {
    av_push(done, o);
    return (Placement){o, true};
  }
  return (Placement){a, false};
}

/* conv2d NCHW (also group, depthwise, transposed): [n, f] fused and in
 * parallel, then output rows; the reduction over (rc, ry, rx) runs outside
 * the output row so the innermost loop walks x contiguously. */
/* [n, f, y, reduction..., x], or with a short reduction [n, f, y, x,
 * reduction...] with the reduction unrolled. */
static int conv_order(Stage *a, bool short_red) {
  Tensor *op = a->op;
  int m = op->nreduce;
  if (short_red) {
    for (int r = 0; r < m; r++)
      if (stage_unroll(a, op->reduce_axis[r])) return -1;
    return 0;
  }
  IterVar **order = KNEWN(IterVar *, 4 + m);
  int k = 0;
  for (int d = 0; d < 3; d++) order[k++] = op->axis[d];
  for (int r = 0; r < m; r++) order[k++] = op->reduce_axis[r];
  order[k++] = op->axis[3];
  return stage_reorder(a, k, order);
}

static int conv_anchor(Schedule *s, Stage *a, AVec *done) {
  Tensor *op = a->op;
  if (op->ndim != 4) return gs_reduction_root(s, a, true);
  /* the padded input: at the root, filled once (inlining it would test
   * the border for every multiply-add) */
  for (int i = 0; i < op->ninputs; i++) {
    Stage *p = stage_of(s, op->inputs[i]);
    if (p && is_compute(p->op) && p->attach == ATTACH_INLINE && !strcmp(p->origin->name, "pad_data")) {
      if (stage_compute_root(p)) return -1;
      av_push(done, p);
      if (!gs_elementwise(s, p, NULL, true)) return -1;
    }
  }
  /* re-read after changing the pad stage's placement */
  op = a->op;
  int64_t ow = const_extent(op->shape[3]);
  int vw = lanes_for(op->dtype, ow);
  /* a depthwise window is a short reduction: summed in registers per
   * output, the window unrolled, rather than streamed over output rows */
  bool short_red = tag_is(a->origin, "depthwise_conv2d_nchw") && reduce_length(op) <= 49;
  bool vec_x = vw > 0 && !short_red;
  int64_t work = dims_product(op, 0, 4) * reduce_length(op);
  bool par_ok = work >= PAR_MIN_WORK;
  Placement pl = place(s, a, done);
  IterVar **ax = op->axis;
  if (pl.fused) {
    Stage *o = pl.loops;
    IterVar *nf, *xo = NULL, *xi = NULL;
    if (stage_fuse(o, o->op->axis[0], o->op->axis[1], &nf)) return -1;
    if (par_ok && stage_parallel(o, nf)) return -1;
    if (vec_x) {
      if (stage_split(o, o->op->axis[3], ir_i32(vw), &xo, &xi)) return -1;
      if (stage_vectorize(o, xi)) return -1;
    }
    if (stage_compute_at(a, o, o->op->axis[2])) return -1;
    /* the conv itself: one output row, the reduction outside x */
    if (conv_order(a, short_red)) return -1;
    if (vec_x) {
      if (stage_split(a, ax[3], ir_i32(vw), &xo, &xi)) return -1;
      if (stage_vectorize(a, xi)) return -1;
    }
    return 0;
  }
  if (conv_order(a, short_red)) return -1;
  IterVar *nf, *xo, *xi;
  if (stage_fuse(a, ax[0], ax[1], &nf)) return -1;
  if (par_ok && stage_parallel(a, nf)) return -1;
  if (vec_x) {
    if (stage_split(a, ax[3], ir_i32(vw), &xo, &xi)) return -1;
    if (stage_vectorize(a, xi)) return -1;
  }
  return 0;
}

/* A product whose sum was split in two (dense, batch_matmul with
 * transpose_b; see dot_product in nn.c): for each output element (in a
 * parallel loop over all of them), the partial sums of L lanes accumulate
 * in one vector over k / L steps, then the output adds the lanes. */
static Stage *partial_of(Schedule *s, Stage *a) {
  for (int i = 0; i < a->op->ninputs; i++) {
    Stage *p = stage_of(s, a->op->inputs[i]);
    if (p && is_compute(p->origin) && tag_is(p->origin, "dot_partial") && p->attach != ATTACH_INLINE) return p;
  }
  return NULL;
}

static int dot_anchor(Schedule *s, Stage *a, Stage *p, AVec *done) {
  av_push(done, p);
  Tensor *op = a->op, *pop = p->op;
  int n = op->ndim;
  Placement pl = place(s, a, done);
  Stage *o = pl.loops;
  int64_t work = dims_product(pop, 0, pop->ndim) * reduce_length(pop);
  IterVar *f = n > 0 ? gs_nest_outer(o, n, work >= PAR_MIN_WORK) : NULL;
  if (n > 0 && !f) return -1;
  if (f && pl.fused && stage_compute_at(a, o, f)) return -1;
  if (f && stage_compute_at(p, o, f)) return -1;
  IterVar *j = pop->axis[n], *ko = pop->reduce_axis[0];
  if (stage_reorder(p, 2, (IterVar *[]){ko, j})) return -1;
  return stage_vectorize(p, j);
}

/* A matrix product whose right operand is contiguous along the output's
 * last axis (matmul, batch_matmul without transpose_b): for each output
 * row, the reduction outside and the row inside, vectorized.  With a
 * transposed right operand (dense, transpose_b): blocks of vw outputs
 * accumulate together while the reduction streams, so the products of
 * one block are independent (a gather of vw weights per step). */
static int matmul_anchor(Schedule *s, Stage *a, AVec *done) {
  Stage *part = partial_of(s, a);
  if (part && av_find(done, part) < 0) return dot_anchor(s, a, part, done);
  Tensor *op = a->op;
  int n = op->ndim;
  if (n == 0 || op->nreduce != 1) return gs_reduction_root(s, a, true);
  IterVar *k = op->reduce_axis[0];
  int64_t last = const_extent(op->shape[n - 1]);
  int vw = lanes_for(op->dtype, last);
  Expr *src = strip_reduce(gs_inlined_body(s, a));
  bool contig = gs_contiguous_along(op, src, op->axis[n - 1]->var);
  bool vec = vw > 0;
  int64_t work = dims_product(op, 0, n) * reduce_length(op);
  bool par_ok = work >= PAR_MIN_WORK;
  Placement pl = place(s, a, done);
  if (n == 1 && !vec) { /* a vector times a matrix, unvectorizable: plain */
    if (pl.fused) {
      if (par_ok && stage_parallel(pl.loops, pl.loops->op->axis[0])) return -1;
      return stage_compute_at(a, pl.loops, pl.loops->op->axis[0]);
    }
    return par_ok ? stage_parallel(a, op->axis[0]) : 0;
  }
  if (!contig && !vec) {
    /* dot products: [outer..., last, k], the outer part in parallel */
    if (pl.fused) {
      Stage *o = pl.loops;
      IterVar *at = gs_nest_outer(o, n, par_ok);
      return at ? stage_compute_at(a, o, at) : -1;
    }
    return gs_nest_outer(a, n, par_ok) ? 0 : -1;
  }
  /* block the last axis (by vw when it divides, else whole rows) */
  if (pl.fused) {
    Stage *o = pl.loops;
    IterVar *lo = NULL, *li = NULL, *at;
    if (vec) {
      if (stage_split(o, o->op->axis[n - 1], ir_i32(vw), &lo, &li)) return -1;
      if (stage_vectorize(o, li)) return -1;
    }
    /* outer axes (and the column blocks when the rows are few) in parallel */
    int64_t outer = dims_product(op, 0, n - 1);
    bool blocks_outer = vec && (!contig || (outer >= 0 && outer < OUTER_MIN_PAR));
    IterVar *f = gs_fuse_range(o, 0, blocks_outer ? n : n - 1);
    if (n == 1 && !blocks_outer) f = NULL;
    if (f && par_ok && stage_parallel(o, f)) return -1;
    at = blocks_outer ? f : (f ? f : NULL);
    if (!at) at = o->leaf_iters.data[0];
    if (stage_compute_at(a, o, at)) return -1;
  }
  IterVar *lo = NULL, *li = NULL;
  if (vec) {
    if (stage_split(a, op->axis[n - 1], ir_i32(vw), &lo, &li)) return -1;
  }
  /* [outer..., (lo,) k, li | last] */
  IterVar **order = KNEWN(IterVar *, n + 2);
  int c = 0;
  for (int d = 0; d < n - 1; d++) order[c++] = op->axis[d];
  if (vec) order[c++] = lo;
  order[c++] = k;
  order[c++] = vec ? li : op->axis[n - 1];
  if (stage_reorder(a, c, order)) return -1;
  if (vec && stage_vectorize(a, li)) return -1;
  if (!pl.fused) {
    int64_t outer = dims_product(op, 0, n - 1);
    bool blocks_outer = vec && (!contig || (outer >= 0 && outer < OUTER_MIN_PAR));
    IterVar *f = gs_fuse_range(a, 0, blocks_outer ? n : n - 1);
    if (f && par_ok && stage_parallel(a, f)) return -1;
  }
  return 0;
}

/* A max (or min) pool on 8-bit integers or float32 in a blocked layout of
 * 16 lanes (an int8 model's stem max pool on uint8 NCHW16c; a float32
 * model's max pools in NCHW16c), as the group's output.  gs_reduction_root's order (the window outside the lanes)
 * kept the running maximum in memory: a load, a max and a store of 16
 * bytes per tap.  Here the output row is cut into blocks of up to 8
 * columns (the largest count that divides the row: 7 of a 35-column
 * row, where halving 8 left blocks of one), the block's maxima computed in a local cache at the block (the
 * window outside, the columns unrolled, the lanes vectorized: 8 registers
 * the C compiler keeps) and stored once.  ResNet-18's [1, 4, 56, 56, 16]
 * 3x3/2 pool, in-model per-kernel minimum of 16 alternating profiles
 * (load 5-6): 65 -> 33 us on one thread, 33 -> 13 us on two.  Float32
 * (16 lanes: one register a column): GoogLeNet's thirteen max pools, sums
 * of per-kernel minima over 10 alternating profiles (load 2): 347 -> 230
 * us on one thread, 256 -> 159 on two; SqueezeNet's 87 -> 70.
 *
 * A float32 sum pool (an average pool: the sum, then its elementwise
 * division by the window's count) is blocked the same way with the
 * division's stage as the block's loops: the sums of a block of columns
 * are computed at the block and divided as they are stored, where the
 * root schedule kept the running sums of the whole tensor in memory and
 * read them back in a second pass.  The window's columns are unrolled
 * too, so that the C compiler reads an input vector once for the block's
 * columns whose windows share it: GoogLeNet's max pools, sums of
 * per-kernel minima over 10 alternating profiles (load 2.4-3), 238 -> 214
 * us on one thread (its 3x3 stride-1 pools at 14x14 36 -> 25, 12.5 ->
 * 9.1), 141 -> 127 on two; Inception-v3's 8x8 average pools 28 -> 19 and
 * 19 -> 11, its 35x35 and 17x17 ones and SqueezeNet's stride-2 pools
 * level.  Returns 1 when it scheduled a, 0 when a is not such a pool; done
 * gains the cache (or division) stage. */
static int pool_blocked(Schedule *s, Stage *a, AVec *done) {
  Tensor *op = a->op;
  int n = op->ndim, m = op->nreduce;
  Expr *b = gs_inlined_body(s, a);
  bool f32 = op->dtype.bits == 32 && op->dtype.code == kDLFloat;
  if (n != 5 || m < 1 || !((op->dtype.bits == 8 && op->dtype.code != kDLFloat) || f32) || a->relations.len ||
      const_extent(op->shape[4]) != 16 || !b || b->kind != EK_Reduce ||
      !gs_contiguous_along(op, strip_reduce(b), op->axis[4]->var))
    return 0;
  ReduceKind comb = b->reduce.comb->kind;
  Stage *so = NULL, *sl = NULL;
  if ((comb == RED_MAX || comb == RED_MIN) && is_output(s, a)) {
    Tensor *cl = sch_cache_write(s, op, "local");
    sl = cl ? sch_stage(s, cl) : NULL, so = sch_stage(s, op);
    if (!sl || !so) return -1;
    av_push(done, sl); /* the cache is the pool's compute too: not an anchor of its own */
  } else if (comb == RED_SUM && f32 && (so = gs_epilogue_of(s, a)) && av_find(done, so) < 0 && !so->relations.len) {
    sl = a;
    av_push(done, so);
  } else {
    return 0;
  }
  int64_t ow = const_extent(op->shape[3]), cols = 8;
  while (cols > 1 && (ow < 0 || ow % cols)) cols--;
  IterVar *wo, *wi, *f;
  if (stage_split(so, stage_axis(so, 3), ir_i32(cols), &wo, &wi) ||
      stage_fuse(so, stage_axis(so, 0), stage_axis(so, 1), &f) || stage_fuse(so, f, stage_axis(so, 2), &f) ||
      (dims_product(op, 0, n) * reduce_length(op) >= PAR_MIN_WORK && stage_parallel(so, f)) || stage_unroll(so, wi) ||
      stage_vectorize(so, stage_axis(so, 4)) || stage_compute_at(sl, so, wo))
    return -1;
  IterVar **order = KNEWN(IterVar *, n + m);
  int k = 0;
  for (int d = 0; d < 3; d++) order[k++] = stage_axis(sl, d);
  for (int r = 0; r < m; r++) order[k++] = stage_reduce_axis(sl, r);
  order[k++] = stage_axis(sl, 3), order[k++] = stage_axis(sl, 4);
  if (stage_reorder(sl, k, order) || stage_unroll(sl, stage_reduce_axis(sl, m - 1)) ||
      stage_unroll(sl, stage_axis(sl, 3)) || stage_vectorize(sl, stage_axis(sl, 4)))
    return -1;
  return 1;
}

static int pool_anchor(Schedule *s, Stage *a, AVec *done) {
  int blocked = pool_blocked(s, a, done);
  if (blocked) return blocked < 0 ? -1 : 0;
  return gs_reduction_root(s, a, true);
}

/* rows a row loop iteration reduces at once (their chains interleave),
 * for rows shorter than ROW_PAIR_MAX_BYTES (16 vectors of float32) */
enum { ROW_PAIR = 2, ROW_PAIR_MAX_BYTES = 1024 };

/* A row loop vectorized in pieces of 16 (or 8) lanes when its length is a
 * multiple of 8, at least 16. */
static int row_vectorize_last(Stage *st, IterVar *iv, int64_t len) {
  if (len < 16 || len % 8) return 0;
  IterVar *o, *i;
  if (stage_split(st, iv, ir_i32(len % 16 == 0 ? 16 : 8), &o, &i)) return -1;
  return stage_vectorize(st, i);
}

/* A row stage inside the row loop: a partial reduction ("row_partial",
 * see row_reduce in nn.c) runs its lanes as one vector (32 lanes: two
 * vectors of 16, unrolled: two independent chains), the reduction
 * outside; a per-row temporary (softmax's exponentials) is vectorized
 * along its last axis.  When the row loop covers ROW_PAIR rows (row axis
 * rax of the stage, else -1), a reduction runs them unrolled inside its
 * reduction loop: the rows' dependent chains interleave. */
static int row_vectorize(Stage *st, int rax) {
  Tensor *op = st->op;
  int n = op->ndim;
  if (n == 0) return 0;
  IterVar *row = rax >= 0 && rax < n && op->nreduce == 1 ? op->axis[rax] : NULL;
  if (tag_is(st->origin, "row_partial") && op->nreduce == 1) {
    IterVar *j = op->axis[n - 1], *ko = op->reduce_axis[0], *jo, *ji;
    if (const_extent(op->shape[n - 1]) > 16) {
      if (stage_split(st, j, ir_i32(16), &jo, &ji) ||
          (row ? stage_reorder(st, 4, (IterVar *[]){ko, row, jo, ji}) || stage_unroll(st, row)
               : stage_reorder(st, 3, (IterVar *[]){ko, jo, ji})) ||
          stage_unroll(st, jo))
        return -1;
      return stage_vectorize(st, ji);
    }
    if (row ? stage_reorder(st, 3, (IterVar *[]){ko, row, j}) || stage_unroll(st, row)
            : stage_reorder(st, 2, (IterVar *[]){ko, j}))
      return -1;
    return stage_vectorize(st, j);
  }
  if (tag_is(st->origin, "row_temp") && !op->nreduce) {
    /* the folds of the partial lanes (16 or fewer) of both rows: unrolled */
    if (rax >= 0 && rax < n - 1 && const_extent(op->shape[n - 1]) <= 16 && stage_unroll(st, op->axis[rax])) return -1;
    return row_vectorize_last(st, op->axis[n - 1], dims_product(op, n - 1, n));
  }
  if (row && tag_is(st->origin, "row_reduce"))
    return stage_reorder(st, 2, (IterVar *[]){op->reduce_axis[0], row}) || stage_unroll(st, row) ? -1 : 0;
  return 0;
}

/* Softmax, log-softmax, layer and instance norm: a set of "row" stages
 * (reductions over some axes, and per-row temporaries) feeding the output.
 * The output's axes that are not reduced are fused into one parallel
 * loop, and every row stage is computed inside it, one row at a time. */
static int row_anchor(Schedule *s, Stage *a, AVec *done) {
  Tensor *op = a->op;
  int n = op->ndim;
  Stage *o = a;
  Stage *epi = gs_epilogue_of(s, a);
  if (!a->is_output && !is_output(s, a)) {
    if (!epi || av_find(done, epi) >= 0 || epi->relations.len) {
      /* not ours to fuse: everything at the root */
      return gs_default_stage(s, a);
    }
    /* the normalized output is elementwise: inline it into the epilogue */
    if (stage_compute_inline(a)) return -1;
    o = epi;
    av_push(done, epi);
  }
  /* which axes are reduced: from the attribute the compute recorded */
  Expr *ax_attr = te_get_attr(op, "axis"), *nax_attr = te_get_attr(op, "naxes");
  int64_t axis = 0, naxes = 1;
  if (!ax_attr || !ir_is_const_int(ax_attr, &axis)) return gs_default_stage(s, a);
  if (nax_attr) ir_is_const_int(nax_attr, &naxes);
  if (axis < 0 || axis + naxes > n) return gs_default_stage(s, a);
  IterVar **order = KNEWN(IterVar *, n);
  int c = 0, nouter = 0;
  for (int d = 0; d < n; d++)
    if (d < axis || d >= axis + naxes) order[c++] = o->op->axis[d];
  nouter = c;
  for (int d = (int)axis; d < axis + naxes; d++) order[c++] = o->op->axis[d];
  if (stage_reorder(o, n, order)) return -1;
  if (nouter == 0) return 0; /* one row: everything at the root */
  /* a row over the last axis long enough to reduce in partial lanes (see
   * row_reduce in nn.c) but shorter than ROW_PAIR_MAX_BYTES: the row loop
   * takes ROW_PAIR rows at a time, split off the innermost row axis of an
   * even extent (a ViT's heads when its 197 tokens are odd) and moved
   * inside the others, and its reductions interleave them.  A short row's
   * time is its reductions' dependent chains; over a longer one the core
   * already overlaps a row's chains with the next row's loads.  Layer
   * norms of 512 rows paired, 1 thread: rows of 64-192 0.82-0.88x, 256
   * 0.95x, 320-512 0.98-1.09x */
  int rax = -1;
  int64_t row_len = const_extent(op->shape[n - 1]);
  if (naxes == 1 && axis == n - 1 && nouter == n - 1 && o->op->ndim == n && row_len >= 32 &&
      row_len * (int64_t)(op->dtype.bits / 8) < ROW_PAIR_MAX_BYTES && dims_product(op, 0, n - 1) > ROW_PAIR) {
    for (int d = n - 2; d >= 0 && rax < 0; d--)
      if (const_extent(o->op->shape[d]) % ROW_PAIR == 0) rax = d;
  }
  if (rax >= 0) {
    IterVar *ro, *ri, **inner = KNEWN(IterVar *, n);
    if (stage_split(o, o->op->axis[rax], ir_i32(ROW_PAIR), &ro, &ri)) return -1;
    int k = 0;
    for (int d = rax + 1; d < n - 1; d++) inner[k++] = o->op->axis[d];
    inner[k++] = ri;
    if (stage_reorder(o, k, inner)) return -1;
  }
  IterVar *f = gs_fuse_range(o, 0, nouter);
  if (!f) return -1;
  int64_t total = dims_product(op, 0, n);
  if (total >= PAR_MIN_WORK / 4 && dims_product(op, 0, n) / dims_product(op, (int)axis, (int)(axis + naxes)) > 1 &&
      stage_parallel(o, f))
    return -1;
  /* every other non-inlined stage feeding o (the row stages) goes inside */
  for (int i = s->stages.len - 1; i >= 0; i--) {
    Stage *st = s->stages.data[i];
    if (st == o || st->attach == ATTACH_INLINE || !is_compute(st->op) || av_find(done, st) >= 0) continue;
    if (st->is_output || is_output(s, st)) continue;
    if (!sch_reads_from(s, o, st)) continue;
    /* only the stages this op made: they carry the row tags */
    const char *t = st->origin->tag;
    if (!t || strncmp(t, "row_", 4)) continue;
    if (stage_compute_at(st, o, f)) return -1;
    av_push(done, st);
    if (row_vectorize(st, rax)) return -1;
  }
  /* the row itself, when it is the last axis */
  if (axis + naxes == n && o->op->ndim == n && row_vectorize_last(o, o->op->axis[n - 1], dims_product(op, n - 1, n)))
    return -1;
  return 0;
}

static const char *const conv_tags[] = {"conv2d_nchw", "group_conv2d_nchw", "depthwise_conv2d_nchw",
                                        "conv2d_transpose_nchw", NULL};
static const char *const dense_tags[] = {"dense", NULL};
static const char *const matmul_tags[] = {"matmul", "batch_matmul", NULL};
static const char *const pool_tags[] = {"pool", "adaptive_pool", NULL};
static const char *const row_tags[] = {"softmax_output", "log_softmax_output", "norm_output", NULL};

int topi_schedule_conv2d_nchw(Schedule *s, int nout, Tensor **outs) {
  return with_anchor(s, nout, outs, conv_tags, conv_anchor);
}
int topi_schedule_dense(Schedule *s, int nout, Tensor **outs) {
  return with_anchor(s, nout, outs, dense_tags, matmul_anchor);
}
int topi_schedule_matmul(Schedule *s, int nout, Tensor **outs) {
  return with_anchor(s, nout, outs, matmul_tags, matmul_anchor);
}
int topi_schedule_pool(Schedule *s, int nout, Tensor **outs) {
  return with_anchor(s, nout, outs, pool_tags, pool_anchor);
}
int topi_schedule_softmax(Schedule *s, int nout, Tensor **outs) {
  return with_anchor(s, nout, outs, row_tags, row_anchor);
}

int topi_schedule_generic(Schedule *s, int nout, Tensor **outs) {
  if (!s) return -1;
  for (int i = 0; i < nout; i++)
    if (!outs[i] || !sch_stage(s, outs[i])) return -1;
  if (find_anchor(s, conv_tags)) return topi_schedule_conv2d_nchw(s, nout, outs);
  if (find_anchor(s, dense_tags)) return topi_schedule_dense(s, nout, outs);
  if (find_anchor(s, matmul_tags)) return topi_schedule_matmul(s, nout, outs);
  if (find_anchor(s, pool_tags)) return topi_schedule_pool(s, nout, outs);
  if (find_anchor(s, row_tags)) return topi_schedule_softmax(s, nout, outs);
  return topi_schedule_reduce(s, nout, outs);
}
