/*
 * schedule.c - generic CPU schedules: the traverse, injective outputs and
 * reductions (the anchor ops' schedules and the dispatcher the graph layer
 * calls on a fused group are in schedule_anchor.c).
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
 * block unrolled inside (quantize_rows).
 */
#include <string.h>

#include "schedule_internal.h"

/* ---- small queries (the rest are in schedule_internal.h) ---- */

static bool stage_injective(Stage *st) {
  return is_compute(st->origin) && st->origin->nreduce == 0 && topi_tag_is_injective(st->origin->tag);
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
Expr *gs_inlined_body(Schedule *s, Stage *st) {
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


static Body body_of(Schedule *s, Stage *st) {
  Body b = {gs_inlined_body(s, st), {0}};
  all_reads(b.e, &b.reads);
  return b;
}


/* Are the reads (of a body of op) contiguous along var (op's innermost loop)?
 * Each read either does not use var, or uses it only in its last index, as
 * var or var + (something without var).  The indices are simplified
 * knowing the ranges of op's axes, so an inlined relayout's
 * floormod(8 * c + var, 16) (a block of 16 channels read as blocks of 8)
 * counts as 8 * floormod(c, 2) + var: contiguous.  Trailing axes of
 * extent 1 are left out: ConvNeXt's layer scale [C, 1, 1] read at (c, 0,
 * 0) is contiguous along c. */
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
    /* trailing axes of extent 1 (a per-channel [C, 1, 1] operand) hold
     * no stride: the last index that counts is the one before them */
    while (n > 1 && r->read.tensor && const_extent(r->read.tensor->shape[n - 1]) == 1) n--;
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

bool gs_contiguous_along(Tensor *op, Expr *body, Expr *var) {
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
    all_reads(gs_inlined_body(s, c), &reads);
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

int gs_inline_injective(Schedule *s) {
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
Stage *gs_epilogue_of(Schedule *s, Stage *a) {
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
  all_reads(gs_inlined_body(s, o), &reads);
  for (int k = 0; k < reads.len; k++) {
    Expr *r = reads.data[k];
    if (av_find(&a->aliases, r->read.tensor) < 0) continue;
    for (int d = 0; d < ot->ndim; d++)
      if (r->read.idx[d] != ot->axis[d]->var) return NULL;
  }
  return o;
}

/* Fuse the leaves [from, to) of st into one; returns it (or the only one). */
IterVar *gs_fuse_range(Stage *st, int from, int to) {
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
IterVar *gs_nest_outer(Stage *st, int n, bool par) {
  if (n <= 0) return NULL;
  int64_t outer = dims_product(st->op, 0, n - 1);
  bool all = n == 1 || (outer >= 0 && outer < OUTER_MIN_PAR);
  IterVar *f = gs_fuse_range(st, 0, all ? n : n - 1);
  if (!f || (par && stage_parallel(st, f))) return NULL;
  return all ? f : st->leaf_iters.data[stage_leaf_index(st, f) + 1];
}

/* ---- injective ---- */

/* Fuse the outer axes of an elementwise-like stage, parallelize them when
 * worthwhile, and vectorize the innermost axis when it splits evenly.
 * body is st's (NULL: built here).  Returns the leaf at which an anchor
 * can be computed (the innermost outer loop), or NULL for a rank-0 stage. */
IterVar *gs_elementwise(Schedule *s, Stage *st, const Body *body, bool allow_parallel) {
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
    par = gs_fuse_range(st, 0, n); /* outer axes and the vector blocks */
  else if (n > 1)
    par = gs_fuse_range(st, 0, n - 1);
  else
    par = vec ? lo : st->leaf_iters.data[0];
  if (!par) return NULL;
  if (par_ok && stage_parallel(st, par)) return NULL;
  if (vec && stage_vectorize(st, li)) return NULL;
  return par;
}

/* An injective output that nothing is computed inside (a relayout, a
 * crop, a transpose): as gs_elementwise, but only the fewest outer
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
  IterVar *par = gs_fuse_range(st, 0, p);
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
    return gs_elementwise(s, st, &body, true) ? 0 : -1;
  if (swapped) p = p < n - 2 ? p : n - 2;
  IterVar *lo = NULL, *li = NULL;
  if (vec && stage_split(st, op->axis[n - 1], ir_i32(vw), &lo, &li)) return -1;
  IterVar *par = gs_fuse_range(st, 0, p);
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
  if (gs_inline_injective(s)) return -1;
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
 * stays a loop of its own (gs_nest_outer), so the reads' indices need no
 * division: a 3x3 pool over NCHW16c 28x28 with / and % by the row length
 * in every read ran 1.7x slower. */
int gs_reduction_root(Schedule *s, Stage *st, bool allow_parallel) {
  Tensor *op = st->op;
  int n = op->ndim, m = op->nreduce;
  if (st->relations.len) return 0; /* already scheduled */
  int64_t total = dims_product(op, 0, n);
  int64_t work = total < 0 ? -1 : total * reduce_length(op);
  bool par_ok = allow_parallel && work >= PAR_MIN_WORK;
  if (n == 0) return 0;
  Expr *src = strip_reduce(gs_inlined_body(s, st));
  int64_t last = const_extent(op->shape[n - 1]);
  bool inner = m > 0 && last >= 4 && gs_contiguous_along(op, src, op->axis[n - 1]->var);
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
    if (n > 1 && !gs_nest_outer(st, n - 1, par_ok)) return -1;
    return 0;
  }
  return gs_nest_outer(st, n, par_ok) ? 0 : -1;
}

/* A non-injective stage we know nothing about: at the root, its outer axes
 * in parallel. */
int gs_default_stage(Schedule *s, Stage *st) {
  if (st->op->nreduce > 0) return gs_reduction_root(s, st, true);
  if (st->relations.len) return 0;
  return gs_elementwise(s, st, NULL, true) || st->op->ndim == 0 ? 0 : -1;
}

/* A reduction read element for element by its elementwise epilogue: the
 * epilogue's loops outside, the reduction per element inside (unless the
 * reduction has a better loop order of its own at the root). */
static int schedule_reduce_anchor(Schedule *s, Stage *st, AVec *done) {
  Stage *o = gs_epilogue_of(s, st);
  if (o && av_find(done, o) < 0) {
    Tensor *op = st->op;
    int n = op->ndim;
    Expr *src = strip_reduce(gs_inlined_body(s, st));
    bool inner = n > 0 && const_extent(op->shape[n - 1]) >= 4 && gs_contiguous_along(op, src, op->axis[n - 1]->var);
    if (!inner && n > 0) {
      int64_t work = dims_product(op, 0, n) * reduce_length(op);
      IterVar *at = gs_nest_outer(o, n, work >= PAR_MIN_WORK);
      if (!at || stage_compute_at(st, o, at)) return -1;
      av_push(done, o);
      av_push(done, st);
      return 0;
    }
  }
  av_push(done, st);
  return gs_reduction_root(s, st, true);
}

/* Schedule every stage not yet done: anchors and reductions with their own
 * schedules, then the outputs. */
int gs_schedule_rest(Schedule *s, int nout, Tensor **outs, AVec *done) {
  for (int i = s->stages.len - 1; i >= 0; i--) {
    Stage *st = s->stages.data[i];
    if (av_find(done, st) >= 0 || !is_compute(st->op) || st->attach == ATTACH_INLINE) continue;
    if (stage_injective(st)) continue; /* an output: below */
    if (st->op->nreduce > 0) {
      if (schedule_reduce_anchor(s, st, done)) return -1;
    } else {
      av_push(done, st);
      if (gs_default_stage(s, st)) return -1;
    }
  }
  return schedule_outputs_injective(s, nout, outs, done);
}

int topi_schedule_reduce(Schedule *s, int nout, Tensor **outs) {
  if (!s || gs_inline_injective(s)) return -1;
  AVec done = {0};
  return gs_schedule_rest(s, nout, outs, &done);
}

