/*
 * schedule.c - generic CPU schedules: injective, reductions, and one for
 * each anchor op (conv2d NCHW, dense, matmul, pooling, softmax and the
 * norms), plus the dispatcher the graph layer calls on a fused group.
 *
 * Every schedule starts like TVM's traverse_inline: each injective stage
 * that is not an output is inlined into its readers.  What remains are the
 * outputs and the non-injective stages (anchors and reductions).  An
 * anchor whose only reader is an output of its own shape that reads it
 * element for element (a fused elementwise epilogue: bias, batch-norm
 * scale, activation) is computed inside that output's loops, one block at
 * a time; any other anchor is computed at the root.
 *
 * Loops: the outer axes are fused into one loop that runs in parallel when
 * there is enough work.  The innermost axis is split by the vector width
 * (16 lanes, or 8) and vectorized only when that divides it and the reads
 * along it are contiguous, because the lowering has no loop partitioning
 * (a split that does not divide leaves a guard inside the loop, and the
 * vectorizer then keeps it scalar) and the simplifier does not undo fused
 * index arithmetic (a fused vector loop would gather).  Otherwise the
 * innermost loop stays a plain serial loop over a contiguous axis, which
 * the C compiler vectorizes itself.  The innermost axis is never fused
 * with the outer ones when the outer loop has enough iterations, so its
 * index needs no division.  Contiguity is decided with the axes' ranges
 * known (an inlined relayout's floormod(8 * c + lane, 16) is 8 *
 * floormod(c, 2) + lane), and an injective output with nothing computed
 * inside it (a relayout, crop or transpose) fuses only the outer axes that
 * make enough parallel tasks; the axes between stay loops.  A transpose
 * whose last axis reads with a stride while an outer axis reads
 * contiguously (attention's K^T) runs in 16 x 16 tiles of those two axes
 * instead (schedule_transpose_tiles), so every line it touches is used
 * whole while it is in L1.  A quantize into a blocked uint8 layout (an
 * int8 model's input) runs its rows in float vectors, the lanes of a
 * block unrolled inside (quantize_rows), and a max pool on 8-bit
 * integers or float32 keeps a block of columns' maxima in registers
 * (pool_blocked).
 */
#include <string.h>

#include "../topi.h"

#define PAR_MIN_WORK 32768 /* elements (times reduction length) worth a parallel loop */
#define OUTER_MIN_PAR 8    /* fewer outer iterations than this: parallelize more */

/* ---- small queries ---- */

static int vec_width(DType t) {
  int bytes = dt_is_bool(t) ? 4 : t.bits / 8;
  if (bytes <= 0) bytes = 1;
  int w = 64 / bytes;
  return w > 16 ? 16 : w;
}

/* Vector lanes for a loop of this extent: the largest power of two up to
 * the vector width that divides it, at least 8 (fewer lanes than that
 * the C compiler does as well on a plain loop); 0 for none. */
static int lanes_for(DType t, int64_t extent) {
  if (extent <= 0) return 0;
  for (int l = vec_width(t); l >= 8; l /= 2)
    if (extent % l == 0) return l;
  return 0;
}

static bool is_compute(Tensor *t) { return t && t->kind == TE_COMPUTE; }

static bool tag_is(Tensor *t, const char *tag) { return t->tag && !strcmp(t->tag, tag); }

static bool stage_injective(Stage *st) {
  return is_compute(st->origin) && st->origin->nreduce == 0 && topi_tag_is_injective(st->origin->tag);
}

static int64_t const_extent(Expr *e) {
  int64_t v;
  return ir_is_const_int(e, &v) ? v : -1;
}

/* Product of the extents of dims [from, to) of t, or -1 if not constant. */
static int64_t dims_product(Tensor *t, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++) {
    int64_t e = const_extent(t->shape[d]);
    if (e < 0) return -1;
    p *= e;
  }
  return p;
}

static int64_t reduce_length(Tensor *t) {
  int64_t p = 1;
  for (int i = 0; i < t->nreduce; i++) {
    int64_t e = const_extent(t->reduce_axis[i]->extent);
    p *= e > 0 ? e : 16;
  }
  return p;
}

static bool is_output(Schedule *s, Stage *st) {
  for (int i = 0; i < s->noutputs; i++)
    if (av_find(&st->aliases, s->outputs[i]) >= 0) return true;
  return false;
}

static Stage *stage_of(Schedule *s, Tensor *t) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (av_find(&st->aliases, t) >= 0) return st;
  }
  return NULL;
}

/* ---- inlined bodies (for analysis; the lowering does the real inlining) ---- */

typedef struct InlCtx {
  Schedule *s;
  int depth;
} InlCtx;

static Expr *inl_read(IRMutator *m, Expr *e) {
  InlCtx *c = m->ud;
  Expr *r = ir_mutate_expr_children(m, e);
  if (!r || r->kind != EK_Read) return r;
  Stage *st = stage_of(c->s, r->read.tensor);
  if (!st || st->attach != ATTACH_INLINE || c->depth > 64) return r;
  Tensor *op = st->op;
  PtrMap vm = {0};
  for (int d = 0; d < op->ndim; d++) pm_put(&vm, op->axis[d]->var, r->read.idx[d]);
  Expr *b = ir_substitute(op->body, &vm);
  pm_free(&vm);
  c->depth++;
  b = ir_mutate_expr(m, b);
  c->depth--;
  return b;
}

/* The body of st with every inlined producer substituted. */
static Expr *inlined_body(Schedule *s, Stage *st) {
  InlCtx c = {s, 0};
  IRMutator m = {inl_read, NULL, &c};
  return ir_mutate_expr(&m, st->op->body);
}

typedef struct ReadsCtx {
  AVec *reads;
} ReadsCtx;

static void collect_reads_v(IRVisitor *v, Expr *e) {
  ReadsCtx *c = v->ud;
  if (e->kind == EK_Read) av_push(c->reads, e);
  ir_visit_expr_children(v, e);
}

static void all_reads(Expr *e, AVec *out) {
  ReadsCtx c = {out};
  IRVisitor v = {collect_reads_v, NULL, &c};
  if (e) ir_visit_expr(&v, e);
}

/* A stage's inlined body and the reads in it, collected once for the
 * several questions a schedule asks of them. */
typedef struct Body {
  Expr *e;
  AVec reads;
} Body;

static Body body_of(Schedule *s, Stage *st) {
  Body b = {inlined_body(s, st), {0}};
  all_reads(b.e, &b.reads);
  return b;
}

static Expr *strip_reduce(Expr *b) { return b && b->kind == EK_Reduce ? b->reduce.source : b; }

/* Are the reads (of a body of op) contiguous along var (op's innermost loop)?
 * Each read either does not use var, or uses it only in its last index, as
 * var or var + (something without var).  The indices are simplified
 * knowing the ranges of op's axes, so an inlined relayout's
 * floormod(8 * c + var, 16) (a block of 16 channels read as blocks of 8)
 * counts as 8 * floormod(c, 2) + var: contiguous. */
static bool contiguous_impl(Tensor *op, const AVec *reads, Expr *var, int64_t vw) {
  Analyzer *an = analyzer_new();
  for (int d = 0; d < op->ndim; d++) analyzer_bind_range(an, op->axis[d]->var, op->axis[d]->min, op->axis[d]->extent);
  for (int d = 0; d < op->nreduce; d++)
    analyzer_bind_range(an, op->reduce_axis[d]->var, op->reduce_axis[d]->min, op->reduce_axis[d]->extent);
  Expr *whole = var, *vo = NULL;
  if (vw > 0) { /* var = vo * vw + vi, vi the lane */
    int64_t ext = const_extent(op->axis[op->ndim - 1]->extent);
    vo = ir_var("vo", var->dtype), var = ir_var("vi", var->dtype);
    analyzer_bind_const(an, vo, 0, ext / vw - 1);
    analyzer_bind_const(an, var, 0, vw - 1);
  }
  bool ok = true;
  for (int i = 0; ok && i < reads->len; i++) {
    Expr *r = reads->data[i];
    int n = r->read.n;
    Expr **idx = r->read.idx;
    if (vo) {
      idx = KNEWN(Expr *, n > 0 ? n : 1);
      for (int d = 0; d < n; d++) idx[d] = ir_substitute1(r->read.idx[d], whole, ir_add(ir_mul(vo, ir_i32(vw)), var));
    }
    for (int d = 0; d < n - 1 && ok; d++)
      if (ir_expr_uses_var(idx[d], var)) {
        /* a leading index may use var in a way that simplifies away */
        Expr *e = analyzer_simplify(an, idx[d]);
        ok = e && !ir_expr_uses_var(e, var);
      }
    if (!ok || n == 0) continue;
    Expr *last = idx[n - 1];
    if (!ir_expr_uses_var(last, var)) continue;
    Expr *diff = analyzer_simplify(an, ir_sub(last, var));
    ok = diff && !ir_expr_uses_var(diff, var);
  }
  analyzer_free(an);
  return ok;
}

static bool contiguous_along(Tensor *op, Expr *body, Expr *var) {
  AVec reads = {0};
  all_reads(body, &reads);
  return contiguous_impl(op, &reads, var, 0);
}

/* Contiguous along the last axis of op within each block of vw lanes (the
 * axis split by vw, the lanes the vector): a channels-last view of an
 * NCHW16c tensor reads floormod(c, 16), which is the lane itself. */
static bool contiguous_in_lanes(Tensor *op, const AVec *reads, int64_t vw) {
  Expr *var = op->axis[op->ndim - 1]->var;
  return contiguous_impl(op, reads, var, 0) || (vw > 1 && contiguous_impl(op, reads, var, vw));
}

/* Which stages (not inlined) read st, after inlining? */
static int count_readers(Schedule *s, Stage *st, Stage **only) {
  int n = 0;
  for (int i = 0; i < s->stages.len; i++) {
    Stage *c = s->stages.data[i];
    if (c == st || c->attach == ATTACH_INLINE || !is_compute(c->op)) continue;
    AVec reads = {0};
    all_reads(inlined_body(s, c), &reads);
    for (int k = 0; k < reads.len; k++) {
      Expr *r = reads.data[k];
      if (av_find(&st->aliases, r->read.tensor) >= 0) {
        n++;
        if (only) *only = c;
        break;
      }
    }
  }
  return n;
}

/* ---- the traverse ---- */

/* Does an extern op read st?  It needs st in memory. */
static bool read_by_extern(Schedule *s, Stage *st) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *c = s->stages.data[i];
    if (c->op->kind != TE_EXTERN) continue;
    for (int k = 0; k < c->op->ninputs; k++)
      if (av_find(&st->aliases, c->op->inputs[k]) >= 0) return true;
  }
  return false;
}

static int inline_injective(Schedule *s) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (!stage_injective(st) || st->is_output || is_output(s, st) || st->attach == ATTACH_INLINE) continue;
    if (read_by_extern(s, st)) continue;
    if (stage_compute_inline(st)) return -1;
  }
  return 0;
}

/* The output stage that forms an elementwise epilogue of anchor a: the
 * only reader of a, an output of a's shape, every read of a in its
 * (inlined) body at the output's own indices. */
static Stage *epilogue_of(Schedule *s, Stage *a) {
  if (a->is_output || is_output(s, a)) return NULL;
  Stage *o = NULL;
  if (count_readers(s, a, &o) != 1 || !o || !is_output(s, o) || !stage_injective(o)) return NULL;
  Tensor *ot = o->op, *at = a->op;
  if (ot->ndim != at->ndim) return NULL;
  for (int d = 0; d < ot->ndim; d++) {
    int64_t x = const_extent(ot->shape[d]), y = const_extent(at->shape[d]);
    if (x < 0 || x != y) return NULL;
  }
  AVec reads = {0};
  all_reads(inlined_body(s, o), &reads);
  for (int k = 0; k < reads.len; k++) {
    Expr *r = reads.data[k];
    if (av_find(&a->aliases, r->read.tensor) < 0) continue;
    for (int d = 0; d < ot->ndim; d++)
      if (r->read.idx[d] != ot->axis[d]->var) return NULL;
  }
  return o;
}

/* Fuse the leaves [from, to) of st into one; returns it (or the only one). */
static IterVar *fuse_range(Stage *st, int from, int to) {
  if (to <= from) return NULL;
  IterVar *f = st->leaf_iters.data[from];
  for (int i = from + 1; i < to; i++) {
    IterVar *next = st->leaf_iters.data[from + 1];
    if (stage_fuse(st, f, next, &f)) return NULL;
  }
  return f;
}

/* Fuse the outer n - 1 of the first n leaves into one loop, parallel when
 * par, and keep the n-th as its own loop, so that its index needs no
 * division; with few outer iterations all n are fused instead.  Returns
 * the innermost of those loops (where a per-element producer attaches),
 * or NULL with an error. */
static IterVar *nest_outer(Stage *st, int n, bool par) {
  if (n <= 0) return NULL;
  int64_t outer = dims_product(st->op, 0, n - 1);
  bool all = n == 1 || (outer >= 0 && outer < OUTER_MIN_PAR);
  IterVar *f = fuse_range(st, 0, all ? n : n - 1);
  if (!f || (par && stage_parallel(st, f))) return NULL;
  return all ? f : st->leaf_iters.data[stage_leaf_index(st, f) + 1];
}

/* ---- injective ---- */

/* Fuse the outer axes of an elementwise-like stage, parallelize them when
 * worthwhile, and vectorize the innermost axis when it splits evenly.
 * body is st's (NULL: built here).  Returns the leaf at which an anchor
 * can be computed (the innermost outer loop), or NULL for a rank-0 stage. */
static IterVar *schedule_elementwise(Schedule *s, Stage *st, const Body *body, bool allow_parallel) {
  Tensor *op = st->op;
  int n = op->ndim;
  if (n == 0) return NULL;
  int64_t total = dims_product(op, 0, n);
  int64_t last = const_extent(op->shape[n - 1]);
  int vw = lanes_for(op->dtype, last);
  Body own;
  if (!body && vw > 0) own = body_of(s, st), body = &own;
  bool vec = vw > 0 && contiguous_in_lanes(op, &body->reads, vw);
  IterVar *lo = NULL, *li = NULL;
  if (vec && stage_split(st, op->axis[n - 1], ir_i32(vw), &lo, &li)) return NULL;
  int64_t outer = dims_product(op, 0, n - 1);
  IterVar *par;
  bool par_ok = allow_parallel && total >= PAR_MIN_WORK;
  if (vec && (outer >= 0 && outer < OUTER_MIN_PAR) && last / vw > 1)
    par = fuse_range(st, 0, n); /* outer axes and the vector blocks */
  else if (n > 1)
    par = fuse_range(st, 0, n - 1);
  else
    par = vec ? lo : st->leaf_iters.data[0];
  if (!par) return NULL;
  if (par_ok && stage_parallel(st, par)) return NULL;
  if (vec && stage_vectorize(st, li)) return NULL;
  return par;
}

/* An injective output that nothing is computed inside (a relayout, a
 * crop, a transpose): as schedule_elementwise, but only the fewest outer
 * axes that make PAR_MIN_TASKS iterations are fused into the parallel
 * loop; the axes between stay loops of their own, so their indices are
 * counters, not a division and a remainder of the fused index per
 * vector (a [1, 9, 112, 112, 8] relayout: one division per row of 112
 * vectors, not five per vector). */
#define PAR_MIN_TASKS 64

/* Does one of the reads index with var: in its last dimension
 * (last_only), or in any? */
static bool read_uses_var(const AVec *reads, Expr *var, bool last_only) {
  for (int i = 0; i < reads->len; i++) {
    Expr *r = reads->data[i];
    for (int d = last_only ? r->read.n - 1 : 0; d >= 0 && d < r->read.n; d++)
      if (ir_expr_uses_var(r->read.idx[d], var)) return true;
  }
  return false;
}

/* A transpose (attention's K^T, a head split that moves the token axis
 * last): the output's last axis reads with a stride, and an outer axis a
 * reads contiguously.  Both are cut into tiles of TRANSPOSE_TILE, the
 * tile loops outside (the axes other than a and the last, a's tiles and
 * the last's tiles, fused while fewer than PAR_MIN_TASKS, in parallel),
 * the tile inside: its TRANSPOSE_TILE input rows and output rows stay in
 * L1 while every line is used whole, where the untiled loop read one
 * element of each input line per output row (a 384 x 256 slice of a [384,
 * 768] QKV into [4, 64, 384]: 90 -> 17 us on one core).  The tile's loops
 * are plain; the C compiler vectorizes them as it can.  Returns 1 when it
 * scheduled st, 0 when st is not such a transpose. */
enum { TRANSPOSE_TILE = 16 };
static int schedule_transpose_tiles(Stage *st, const Body *body) {
  Tensor *op = st->op;
  int n = op->ndim, a = -1;
  const int64_t T = TRANSPOSE_TILE;
  if (n < 2) return 0;
  int64_t last = const_extent(op->shape[n - 1]);
  if (last < T || last % T || !read_uses_var(&body->reads, op->axis[n - 1]->var, false) ||
      contiguous_in_lanes(op, &body->reads, lanes_for(op->dtype, last)))
    return 0;
  for (int d = n - 2; d >= 0 && a < 0; d--) {
    int64_t e = const_extent(op->shape[d]);
    Expr *v = op->axis[d]->var;
    if (e >= T && e % T == 0 && read_uses_var(&body->reads, v, true) && contiguous_impl(op, &body->reads, v, 0))
      a = d;
  }
  if (a < 0) return 0;
  IterVar *ao, *ai, *lo, *li;
  if (stage_split(st, op->axis[a], ir_i32(T), &ao, &ai) || stage_split(st, op->axis[n - 1], ir_i32(T), &lo, &li))
    return -1;
  IterVar **order = KNEWN(IterVar *, n + 2);
  int64_t *ext = KNEWN(int64_t, n + 2);
  int c = 0;
  for (int d = 0; d < n - 1; d++)
    if (d != a) ext[c] = const_extent(op->shape[d]), order[c++] = op->axis[d];
  ext[c] = const_extent(op->shape[a]) / T, order[c++] = ao;
  ext[c] = last / T, order[c++] = lo;
  order[c++] = ai, order[c++] = li;
  if (stage_reorder(st, c, order)) return -1;
  /* the tile loops (all but the last two), fused while too few */
  int p = 1;
  int64_t iters = ext[0];
  while (p < c - 2 && (iters < 0 || iters < PAR_MIN_TASKS)) iters *= ext[p++];
  IterVar *par = fuse_range(st, 0, p);
  if (!par) return -1;
  if (dims_product(op, 0, n) >= PAR_MIN_WORK && stage_parallel(st, par)) return -1;
  return 1;
}

/* Does a select in body that picks between reads (a concatenate's
 * sources, a pad's data) have a condition using var? */
typedef struct SelCtx {
  Analyzer *an; /* op's axes bound to their ranges */
  Expr *var;
  bool found;
} SelCtx;

static void select_cond_v(IRVisitor *v, Expr *e) {
  SelCtx *c = v->ud;
  if (c->found) return;
  if (e->kind == EK_Select && ir_expr_uses_var(e->select.cond, c->var)) {
    AVec reads = {0};
    all_reads(e->select.t, &reads);
    all_reads(e->select.f, &reads);
    /* a reshape's fused index may use var only to drop it again */
    Expr *cond = reads.len ? analyzer_simplify(c->an, e->select.cond) : NULL;
    if (reads.len && (!cond || ir_expr_uses_var(cond, c->var))) c->found = true;
  }
  ir_visit_expr_children(v, e);
}

static bool select_cond_uses(Tensor *op, Expr *body, Expr *var) {
  Analyzer *an = analyzer_new();
  for (int d = 0; d < op->ndim; d++) analyzer_bind_range(an, op->axis[d]->var, op->axis[d]->min, op->axis[d]->extent);
  SelCtx c = {an, var, false};
  IRVisitor v = {select_cond_v, NULL, &c};
  if (body) ir_visit_expr(&v, body);
  analyzer_free(an);
  return c.found;
}

/* A blocked output (a last axis of at most 16 lanes) whose lanes pick
 * their source by a condition on the lane: a channel shuffle or a
 * concatenate written as NCHW16c, where lane c of a block reads one input
 * and lane c + 1 another (and the padded lanes read nothing).  The C
 * compiler leaves such a lane loop scalar (a select over two loads) and
 * computes the condition's and indices' divisions and remainders per
 * element.  When the axis before the lanes is free of the conditions and
 * the reads run along it (the width), it becomes the innermost loop: per
 * lane the condition and the index arithmetic are loop-invariant, so the
 * compiler hoists them and the inner loop copies one source (ShuffleNetV2's
 * [1, 8, 28, 28, 16] shuffle: 48 -> 28 us on one core; its [1, 29, 7, 7,
 * 16] one 30 -> 12 us in the model).  Returns 1 when it reordered st, 0
 * when st is not such an output. */
enum { LANE_AXIS_MAX = 16, ROW_MIN = 4 };
static int lanes_outside_row(Stage *st, const Body *body) {
  Tensor *op = st->op;
  int n = op->ndim;
  if (n < 3) return 0; /* [row, lanes]: the elementwise schedule, in parallel */
  int64_t last = const_extent(op->shape[n - 1]), row = const_extent(op->shape[n - 2]);
  Expr *lane = op->axis[n - 1]->var, *w = op->axis[n - 2]->var;
  if (last < 2 || last > LANE_AXIS_MAX || row < ROW_MIN || !select_cond_uses(op, body->e, lane) ||
      select_cond_uses(op, body->e, w) || !read_uses_var(&body->reads, w, false))
    return 0;
  IterVar **order = KNEWN(IterVar *, n);
  for (int d = 0; d < n - 2; d++) order[d] = op->axis[d];
  order[n - 2] = op->axis[n - 1], order[n - 1] = op->axis[n - 2];
  return stage_reorder(st, n, order) ? -1 : 1;
}

/* Does body convert float to an 8-bit integer (a QuantizeLinear's cast)? */
static void f32_to_int8_v(IRVisitor *v, Expr *e) {
  bool *found = v->ud;
  if (e->kind == EK_Cast && e->dtype.bits == 8 && e->bin.a->dtype.code == kDLFloat) *found = true;
  ir_visit_expr_children(v, e);
}

/* A quantize into a blocked layout (an int8 model's input: float32 NCHW
 * to uint8 NCHW4c, the channels padded): after lanes_outside_row, each
 * lane of the block is a loop over the row whose reads are contiguous,
 * but its value is a rounding and a conversion per element, which the C
 * compiler left scalar (nearbyintf, then a byte store with a stride of the
 * block).  Here the row is cut into vectors of 16 float32 lanes, the lane
 * loop moved inside that loop and unrolled (the padded lanes' condition
 * folds per lane; a block's bytes are written together): per lane a
 * vector load, the rounding and the conversion on 16 lanes, and a strided
 * store of 16 bytes.  ResNet-50's [1, 1, 224, 224, 4] input quantize on
 * one core: 185 -> 42 us (in-model profile, per-kernel minimum of 6,
 * load 9).  Only where the output has 8-bit integer elements and at most
 * 4 lanes (a word), the reads are float32, the body converts float to an
 * 8-bit integer and the row is whole vectors.  Returns 1 when it scheduled
 * the row, 0 when not. */
static int quantize_rows(Stage *st, const Body *body, IterVar *lane, IterVar *row) {
  Tensor *op = st->op;
  int64_t len = const_extent(op->shape[op->ndim - 2]), lanes = const_extent(op->shape[op->ndim - 1]);
  bool cast = false;
  IRVisitor v = {f32_to_int8_v, NULL, &cast};
  ir_visit_expr(&v, body->e);
  if (op->dtype.bits != 8 || op->dtype.code == kDLFloat || !cast || lanes > 4 || len % vec_width(DT_F32)) return 0;
  for (int i = 0; i < body->reads.len; i++)
    if (!dt_eq(((Expr *)body->reads.data[i])->dtype, DT_F32)) return 0;
  IterVar *ro, *ri;
  if (stage_split(st, row, ir_i32(vec_width(DT_F32)), &ro, &ri) || stage_reorder(st, 3, (IterVar *[]){ro, lane, ri}) ||
      stage_unroll(st, lane) || stage_vectorize(st, ri))
    return -1;
  return 1;
}

static int schedule_injective_output(Schedule *s, Stage *st) {
  Tensor *op = st->op;
  int n = op->ndim;
  int64_t total = dims_product(op, 0, n), last = const_extent(op->shape[n - 1]);
  int vw = lanes_for(op->dtype, last);
  Body body = body_of(s, st);
  int tiled = schedule_transpose_tiles(st, &body);
  if (tiled) return tiled < 0 ? -1 : 0;
  bool vec = vw > 0 && contiguous_in_lanes(op, &body.reads, vw);
  int swapped = vec ? 0 : lanes_outside_row(st, &body);
  if (swapped < 0) return -1;
  int p = 1;
  while (p < n - 1 && dims_product(op, 0, p) >= 0 && dims_product(op, 0, p) < PAR_MIN_TASKS) p++;
  if (!swapped && (n < 3 || p >= n - 1 || dims_product(op, 0, p) < PAR_MIN_TASKS))
    return schedule_elementwise(s, st, &body, true) ? 0 : -1;
  if (swapped) p = p < n - 2 ? p : n - 2;
  IterVar *lo = NULL, *li = NULL;
  if (vec && stage_split(st, op->axis[n - 1], ir_i32(vw), &lo, &li)) return -1;
  IterVar *par = fuse_range(st, 0, p);
  if (!par) return -1;
  if (total >= PAR_MIN_WORK && stage_parallel(st, par)) return -1;
  int at = stage_leaf_index(st, par);
  if (swapped && at + 3 == st->leaf_iters.len &&
      quantize_rows(st, &body, st->leaf_iters.data[at + 1], st->leaf_iters.data[at + 2]) < 0)
    return -1;
  return vec ? stage_vectorize(st, li) : 0;
}

static int schedule_outputs_injective(Schedule *s, int nout, Tensor **outs, AVec *done) {
  for (int i = 0; i < nout; i++) {
    Stage *st = sch_stage(s, outs[i]);
    if (!st) return -1;
    if (av_find(done, st) >= 0 || !is_compute(st->op)) continue;
    av_push(done, st);
    if (st->op->nreduce > 0) continue; /* scheduled as a reduction */
    if (st->relations.len == 0 && st->op->ndim > 0 && schedule_injective_output(s, st)) return -1;
  }
  return 0;
}

int topi_schedule_injective(Schedule *s, int nout, Tensor **outs) {
  if (!s) return -1;
  if (inline_injective(s)) return -1;
  AVec done = {0};
  return schedule_outputs_injective(s, nout, outs, &done);
}

/* ---- reductions ---- */

/* A reduction (or any compute with reduce axes) at the root: the spatial
 * axes outside, parallel; the reduce axes inside; the last spatial axis
 * moved innermost when the reads are contiguous along it (reducing over
 * channels of NCHW, pooling in NCHW16c), vectorized when it splits evenly.
 * Then the spatial axes outside the reduction but the innermost of them
 * (a pool's output row) are fused into the parallel loop and that one
 * stays a loop of its own (nest_outer), so the reads' indices need no
 * division: a 3x3 pool over NCHW16c 28x28 with / and % by the row length
 * in every read ran 1.7x slower. */
static int schedule_reduction_root(Schedule *s, Stage *st, bool allow_parallel) {
  Tensor *op = st->op;
  int n = op->ndim, m = op->nreduce;
  if (st->relations.len) return 0; /* already scheduled */
  int64_t total = dims_product(op, 0, n);
  int64_t work = total < 0 ? -1 : total * reduce_length(op);
  bool par_ok = allow_parallel && work >= PAR_MIN_WORK;
  if (n == 0) return 0;
  Expr *src = strip_reduce(inlined_body(s, st));
  int64_t last = const_extent(op->shape[n - 1]);
  bool inner = m > 0 && last >= 4 && contiguous_along(op, src, op->axis[n - 1]->var);
  if (inner) {
    int vw = lanes_for(op->dtype, last);
    IterVar **order = KNEWN(IterVar *, n + m + 1);
    int k = 0;
    for (int d = 0; d < n - 1; d++) order[k++] = op->axis[d];
    for (int r = 0; r < m; r++) order[k++] = op->reduce_axis[r];
    order[k++] = op->axis[n - 1];
    if (stage_reorder(st, k, order)) return -1;
    IterVar *li = NULL, *lo = NULL;
    if (vw > 0) {
      if (stage_split(st, op->axis[n - 1], ir_i32(vw), &lo, &li)) return -1;
      if (stage_vectorize(st, li)) return -1;
    }
    if (n > 1 && !nest_outer(st, n - 1, par_ok)) return -1;
    return 0;
  }
  return nest_outer(st, n, par_ok) ? 0 : -1;
}

/* A non-injective stage we know nothing about: at the root, its outer axes
 * in parallel. */
static int schedule_default_stage(Schedule *s, Stage *st) {
  if (st->op->nreduce > 0) return schedule_reduction_root(s, st, true);
  if (st->relations.len) return 0;
  return schedule_elementwise(s, st, NULL, true) || st->op->ndim == 0 ? 0 : -1;
}

/* A reduction read element for element by its elementwise epilogue: the
 * epilogue's loops outside, the reduction per element inside (unless the
 * reduction has a better loop order of its own at the root). */
static int schedule_reduce_anchor(Schedule *s, Stage *st, AVec *done) {
  Stage *o = epilogue_of(s, st);
  if (o && av_find(done, o) < 0) {
    Tensor *op = st->op;
    int n = op->ndim;
    Expr *src = strip_reduce(inlined_body(s, st));
    bool inner = n > 0 && const_extent(op->shape[n - 1]) >= 4 && contiguous_along(op, src, op->axis[n - 1]->var);
    if (!inner && n > 0) {
      int64_t work = dims_product(op, 0, n) * reduce_length(op);
      IterVar *at = nest_outer(o, n, work >= PAR_MIN_WORK);
      if (!at || stage_compute_at(st, o, at)) return -1;
      av_push(done, o);
      av_push(done, st);
      return 0;
    }
  }
  av_push(done, st);
  return schedule_reduction_root(s, st, true);
}

/* Schedule every stage not yet done: anchors and reductions with their own
 * schedules, then the outputs. */
static int schedule_rest(Schedule *s, int nout, Tensor **outs, AVec *done) {
  for (int i = s->stages.len - 1; i >= 0; i--) {
    Stage *st = s->stages.data[i];
    if (av_find(done, st) >= 0 || !is_compute(st->op) || st->attach == ATTACH_INLINE) continue;
    if (stage_injective(st)) continue; /* an output: below */
    if (st->op->nreduce > 0) {
      if (schedule_reduce_anchor(s, st, done)) return -1;
    } else {
      av_push(done, st);
      if (schedule_default_stage(s, st)) return -1;
    }
  }
  return schedule_outputs_injective(s, nout, outs, done);
}

int topi_schedule_reduce(Schedule *s, int nout, Tensor **outs) {
  if (!s || inline_injective(s)) return -1;
  AVec done = {0};
  return schedule_rest(s, nout, outs, &done);
}

/* ---- anchors ---- */

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
  if (!s || inline_injective(s)) return -1;
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
  return schedule_rest(s, nout, outs, &done);
}

/* The loop in which to compute anchor a: its epilogue's, if it has one
 * (the epilogue is then scheduled by the caller's split of it). */
typedef struct Placement {
  Stage *loops; /* the stage whose loops we lay out: a or its epilogue */
  bool fused;   /* a is computed inside loops */
} Placement;

static Placement place(Schedule *s, Stage *a, AVec *done) {
  Stage *o = epilogue_of(s, a);
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
  if (op->ndim != 4) return schedule_reduction_root(s, a, true);
  /* the padded input: at the root, filled once (inlining it would test
   * the border for every multiply-add) */
  for (int i = 0; i < op->ninputs; i++) {
    Stage *p = stage_of(s, op->inputs[i]);
    if (p && is_compute(p->op) && p->attach == ATTACH_INLINE && !strcmp(p->origin->name, "pad_data")) {
      if (stage_compute_root(p)) return -1;
      av_push(done, p);
      if (!schedule_elementwise(s, p, NULL, true)) return -1;
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
  IterVar *f = n > 0 ? nest_outer(o, n, work >= PAR_MIN_WORK) : NULL;
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
  if (n == 0 || op->nreduce != 1) return schedule_reduction_root(s, a, true);
  IterVar *k = op->reduce_axis[0];
  int64_t last = const_extent(op->shape[n - 1]);
  int vw = lanes_for(op->dtype, last);
  Expr *src = strip_reduce(inlined_body(s, a));
  bool contig = contiguous_along(op, src, op->axis[n - 1]->var);
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
      IterVar *at = nest_outer(o, n, par_ok);
      return at ? stage_compute_at(a, o, at) : -1;
    }
    return nest_outer(a, n, par_ok) ? 0 : -1;
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
    IterVar *f = fuse_range(o, 0, blocks_outer ? n : n - 1);
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
    IterVar *f = fuse_range(a, 0, blocks_outer ? n : n - 1);
    if (f && par_ok && stage_parallel(a, f)) return -1;
  }
  return 0;
}

/* A max (or min) pool on 8-bit integers or float32 in a blocked layout of
 * 16 lanes (an int8 model's stem max pool on uint8 NCHW16c; a float32
 * model's max pools in NCHW16c), as the group's output.  schedule_reduction_root's order (the window outside the lanes)
 * kept the running maximum in memory: a load, a max and a store of 16
 * bytes per tap.  Here the output row is cut into blocks of up to 8
 * columns, the block's maxima computed in a local cache at the block (the
 * window outside, the columns unrolled, the lanes vectorized: 8 registers
 * the C compiler keeps) and stored once.  ResNet-18's [1, 4, 56, 56, 16]
 * 3x3/2 pool, in-model per-kernel minimum of 16 alternating profiles
 * (load 5-6): 65 -> 33 us on one thread, 33 -> 13 us on two.  Float32
 * (16 lanes: one register a column): GoogLeNet's thirteen max pools, sums
 * of per-kernel minima over 10 alternating profiles (load 2): 347 -> 230
 * us on one thread, 256 -> 159 on two; SqueezeNet's 87 -> 70.  Returns 1
 * when it scheduled a, 0 when a is not such a pool; done gains the
 * cache stage. */
static int pool_blocked(Schedule *s, Stage *a, AVec *done) {
  Tensor *op = a->op;
  int n = op->ndim, m = op->nreduce;
  Expr *b = inlined_body(s, a);
  if (n != 5 || m < 1 || !((op->dtype.bits == 8 && op->dtype.code != kDLFloat) || (op->dtype.bits == 32 && op->dtype.code == kDLFloat)) || a->relations.len || !is_output(s, a) ||
      const_extent(op->shape[4]) != 16 || !b || b->kind != EK_Reduce ||
      (b->reduce.comb->kind != RED_MAX && b->reduce.comb->kind != RED_MIN) ||
      !contiguous_along(op, strip_reduce(b), op->axis[4]->var))
    return 0;
  int64_t ow = const_extent(op->shape[3]), cols = 8;
  while (cols > 1 && (ow < 0 || ow % cols)) cols /= 2;
  Tensor *cl = sch_cache_write(s, op, "local");
  Stage *sl = cl ? sch_stage(s, cl) : NULL, *so = sch_stage(s, op);
  if (!sl || !so) return -1;
  av_push(done, sl); /* the cache is the pool's compute too: not an anchor of its own */
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
  if (stage_reorder(sl, k, order) || stage_unroll(sl, stage_axis(sl, 3)) || stage_vectorize(sl, stage_axis(sl, 4)))
    return -1;
  return 1;
}

static int pool_anchor(Schedule *s, Stage *a, AVec *done) {
  int blocked = pool_blocked(s, a, done);
  if (blocked) return blocked < 0 ? -1 : 0;
  return schedule_reduction_root(s, a, true);
}

/* A row loop vectorized in pieces of 16 (or 8) lanes when its length is a
 * multiple of 8, at least 16. */
static int row_vectorize_last(Stage *st, IterVar *iv, int64_t len) {
  if (len < 16 || len % 8) return 0;
  IterVar *o, *i;
  if (stage_split(st, iv, ir_i32(len % 16 == 0 ? 16 : 8), &o, &i)) return -1;
  return stage_vectorize(st, i);
}

/* A row stage inside the row loop: a partial reduction ("row_partial",
 * see row_reduce in nn.c) runs its lanes as one vector, the reduction
 * outside; a per-row temporary (softmax's exponentials) is vectorized
 * along its last axis. */
static int row_vectorize(Stage *st) {
  Tensor *op = st->op;
  int n = op->ndim;
  if (n == 0) return 0;
  if (tag_is(st->origin, "row_partial") && op->nreduce == 1) {
    IterVar *j = op->axis[n - 1], *ko = op->reduce_axis[0];
    if (stage_reorder(st, 2, (IterVar *[]){ko, j})) return -1;
    return stage_vectorize(st, j);
  }
  if (tag_is(st->origin, "row_temp") && !op->nreduce) return row_vectorize_last(st, op->axis[n - 1], dims_product(op, n - 1, n));
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
  Stage *epi = epilogue_of(s, a);
  if (!a->is_output && !is_output(s, a)) {
    if (!epi || av_find(done, epi) >= 0 || epi->relations.len) {
      /* not ours to fuse: everything at the root */
      return schedule_default_stage(s, a);
    }
    /* the normalized output is elementwise: inline it into the epilogue */
    if (stage_compute_inline(a)) return -1;
    o = epi;
    av_push(done, epi);
  }
  /* which axes are reduced: from the attribute the compute recorded */
  Expr *ax_attr = te_get_attr(op, "axis"), *nax_attr = te_get_attr(op, "naxes");
  int64_t axis = 0, naxes = 1;
  if (!ax_attr || !ir_is_const_int(ax_attr, &axis)) return schedule_default_stage(s, a);
  if (nax_attr) ir_is_const_int(nax_attr, &naxes);
  if (axis < 0 || axis + naxes > n) return schedule_default_stage(s, a);
  IterVar **order = KNEWN(IterVar *, n);
  int c = 0, nouter = 0;
  for (int d = 0; d < n; d++)
    if (d < axis || d >= axis + naxes) order[c++] = o->op->axis[d];
  nouter = c;
  for (int d = (int)axis; d < axis + naxes; d++) order[c++] = o->op->axis[d];
  if (stage_reorder(o, n, order)) return -1;
  if (nouter == 0) return 0; /* one row: everything at the root */
  IterVar *f = fuse_range(o, 0, nouter);
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
    if (row_vectorize(st)) return -1;
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
