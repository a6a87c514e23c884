/*
 * feature.c - what the cost model sees of a config.
 *
 * Two parts, concatenated into one fixed-length float vector per space:
 *
 *  - the knobs (AutoTVM's "knob" features): for each knob in space order,
 *    its choice's position among the knob's choices, then the choice's
 *    values: a split's inner parts as log2, a reorder's permutation, an
 *    annotation's codes (none 0, unroll 1, vec 2, parallel 3, other 4), an
 *    option's value (strings by position);
 *
 *  - the loop nest (AutoTVM's "itervar" features, simplified): the
 *    template's schedule is instantiated and lowered as far as the loop
 *    nest (schedule_ops: cheap, well under a millisecond), and the
 *    statement inside the most loops - the anchor's reduction update - is
 *    taken as the main one.  For its innermost FEATURE_LOOPS loops that
 *    loop (extent > 1), innermost first: log2(1 + extent), three flags (parallel, vectorized,
 *    unrolled), log2(1 + iterations from this loop inward), and for the
 *    first three buffers it touches (the one written, then those read)
 *    log2(1 + bytes touched from this loop inward): the element size times
 *    the extents of the inner loops the buffer's indices depend on.  That
 *    is what says "this block fits in registers, that one streams the
 *    kernel from L2" without running anything.
 */
#include "autotune.h"

#include <math.h>
#include <string.h>

#include "../lower/lower.h"

#define LOOP_FEATS 8
#define NBUF 3
#define MAX_DEPTH 64

static int knob_len(const Knob *k) {
  const KnobEntity *e = k->nchoices ? &k->choices[0] : NULL;
  switch (k->kind) {
  case KNOB_SPLIT:
    return 1 + (e ? e->n - 1 : 0);
  case KNOB_REORDER:
  case KNOB_ANNOTATE:
    return 1 + (e ? e->n : 0);
  case KNOB_OTHER:
    return 2;
  }
  KUNREACHABLE();
}

int feature_len(const ConfigSpace *cs) {
  int n = 0;
  for (int i = 0; i < cs->nknobs; i++) n += knob_len(&cs->knobs[i]);
  return n + FEATURE_LOOPS * LOOP_FEATS;
}

static float ann_code(const char *a) {
  if (!a || !strcmp(a, "none")) return 0;
  if (!strcmp(a, "unroll")) return 1;
  if (!strcmp(a, "vec")) return 2;
  if (!strcmp(a, "parallel")) return 3;
  return 4;
}

static float lg(double x) { return (float)log2(1 + (x > 0 ? x : 0)); }

/* The knob part; returns the number of floats written. */
static int knob_features(const ConfigSpace *cs, const ConfigEntity *cfg, float *out) {
  int64_t idx = cfg->index >= 0 ? cfg->index : space_index_of(cs, cfg);
  kiln_clear_error();
  int n = 0;
  for (int i = 0; i < cs->nknobs; i++) {
    const Knob *k = &cs->knobs[i];
    int len = knob_len(k);
    int64_t pos = -1;
    if (idx >= 0 && k->nchoices > 0) {
      pos = idx % k->nchoices;
      idx /= k->nchoices;
    }
    const KnobEntity *e = config_get(cfg, k->name);
    memset(out + n, 0, sizeof(float) * (size_t)len);
    out[n] = (float)pos;
    if (e && e->kind == k->kind) {
      switch (k->kind) {
      case KNOB_SPLIT:
        for (int p = 1; p < e->n && p < len; p++) out[n + p] = (float)log2((double)(e->ints[p] > 0 ? e->ints[p] : 1));
        break;
      case KNOB_REORDER:
        for (int p = 0; p < e->n && p + 1 < len; p++) out[n + 1 + p] = (float)e->ints[p];
        break;
      case KNOB_ANNOTATE:
        for (int p = 0; p < e->n && p + 1 < len; p++) out[n + 1 + p] = ann_code(e->anns[p]);
        break;
      case KNOB_OTHER:
        out[n + 1] = e->val.kind == OPT_STR ? (float)pos : (float)e->val.i;
        break;
      }
    }
    n += len;
  }
  return n;
}

/* ---- the loop nest ---- */

typedef struct Walk {
  Stmt *stack[MAX_DEPTH];
  int depth;
  Stmt *best_stack[MAX_DEPTH];
  int best_depth;
  Stmt *best;
} Walk;

static void walk(Walk *w, Stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case SK_For:
    if (w->depth < MAX_DEPTH) w->stack[w->depth] = s;
    w->depth++;
    walk(w, s->for_.body);
    w->depth--;
    return;
  case SK_Provide:
  case SK_Store:
    if (w->depth > w->best_depth || !w->best) {
      w->best = s;
      w->best_depth = w->depth < MAX_DEPTH ? w->depth : MAX_DEPTH;
      memcpy(w->best_stack, w->stack, sizeof(Stmt *) * (size_t)w->best_depth);
    }
    return;
  case SK_Allocate:
    walk(w, s->alloc.body);
    return;
  case SK_Realize:
    walk(w, s->realize.body);
    return;
  case SK_IfThenElse:
    walk(w, s->if_.then_);
    walk(w, s->if_.else_);
    return;
  case SK_Seq:
    for (int i = 0; i < s->seq.n; i++) walk(w, s->seq.s[i]);
    return;
  case SK_Evaluate:
    return;
  case SK_Attr:
    walk(w, s->attr.body);
    return;
  case SK_Produce:
    walk(w, s->produce.body);
    return;
  case SK_LetStmt:
    walk(w, s->let.body);
    return;
  case SK__COUNT:
    break;
  }
  KUNREACHABLE();
}

/* A buffer the main statement touches, and its index expressions. */
typedef struct Buf {
  Tensor *t;
  int bytes; /* per element */
  AVec idx;  /* Expr * */
} Buf;

typedef struct Reads {
  Buf buf[NBUF];
  int n;
} Reads;

static Buf *buf_for(Reads *r, Tensor *t) {
  for (int i = 0; i < r->n; i++)
    if (r->buf[i].t == t) return &r->buf[i];
  if (r->n == NBUF) return NULL;
  Buf *b = &r->buf[r->n++];
  b->t = t;
  b->bytes = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  return b;
}

static void collect(IRVisitor *v, Expr *e) {
  if (e->kind == EK_Read) {
    Buf *b = buf_for(v->ud, e->read.tensor);
    for (int i = 0; b && i < e->read.n; i++) av_push(&b->idx, e->read.idx[i]);
  }
  ir_visit_expr_children(v, e);
}

static bool uses(const Buf *b, const Expr *var) {
  for (int i = 0; i < b->idx.len; i++)
    if (ir_expr_uses_var(b->idx.data[i], var)) return true;
  return false;
}

static int loop_features(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg, float *out) {
  memset(out, 0, sizeof(float) * FEATURE_LOOPS * LOOP_FEATS);
  Schedule *s = NULL;
  int na = 0;
  Tensor **args = NULL;
  if (template_instantiate(tm, t, wl, cfg, &s, &na, &args)) return -1;
  Schedule *c = sch_copy(s);
  if (lower_inline(c)) return -1;
  Bounds b;
  if (lower_infer_bounds(c, na, args, &b)) {
    lower_bounds_free(&b);
    return -1;
  }
  Stmt *body = lower_schedule_ops(c, &b, na, args);
  lower_bounds_free(&b);
  if (!body) return -1;
  Walk w;
  memset(&w, 0, sizeof w);
  walk(&w, body);
  if (!w.best || w.best->kind != SK_Provide) return 0;
  Reads r;
  memset(&r, 0, sizeof r);
  Buf *ob = buf_for(&r, w.best->provide.tensor);
  for (int i = 0; i < w.best->provide.n; i++) av_push(&ob->idx, w.best->provide.idx[i]);
  IRVisitor v = {collect, NULL, &r};
  ir_visit_expr(&v, w.best->provide.value);
  double iters = 1, bytes[NBUF];
  for (int k = 0; k < NBUF; k++) bytes[k] = k < r.n ? r.buf[k].bytes : 0;
  for (int d = w.best_depth - 1, j = 0; d >= 0; d--) {
    Stmt *f = w.best_stack[d];
    int64_t ext = 1;
    if (!ir_is_const_int(f->for_.extent, &ext)) ext = 1;
    if (ext == 1) continue; /* loops that do not loop say nothing */
    iters *= (double)ext;
    for (int k = 0; k < r.n; k++)
      if (uses(&r.buf[k], f->for_.var)) bytes[k] *= (double)ext;
    if (j >= FEATURE_LOOPS) continue;
    float *o = out + j++ * LOOP_FEATS;
    o[0] = lg((double)ext);
    o[1] = f->for_.fkind == FOR_PARALLEL;
    o[2] = f->for_.fkind == FOR_VECTORIZED;
    o[3] = f->for_.fkind == FOR_UNROLLED;
    o[4] = lg(iters);
    for (int k = 0; k < NBUF; k++) o[5 + k] = lg(bytes[k]);
  }
  return 0;
}

int feature_extract(const Template *tm, const Target *t, const Workload *wl, const ConfigSpace *cs,
                    const ConfigEntity *cfg, float *out) {
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  int n = knob_features(cs, cfg, out);
  int rc = loop_features(tm, t, wl, cfg, out + n);
  kiln_arena_pop();
  kiln_arena_free(scratch);
  return rc;
}
