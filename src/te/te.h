/*
 * te.h - tensor expressions and schedules.
 *
 * A Tensor is the single output of an operation: a placeholder (an input), a
 * compute (one expression per output element, over axes and optional reduce
 * axes), or an extern (a hand-built loop statement over flat buffers).  The
 * body of a compute reads other tensors with Read nodes, so the tensors form
 * a dataflow graph.
 *
 * A Schedule has one Stage per operation reachable from its outputs, in
 * producer-before-consumer order.  Scheduling primitives change a stage's
 * loop structure (split, fuse, reorder, ...) or where it is computed
 * (compute_at, compute_inline, compute_root), and cache_read / cache_write
 * add stages.  Primitives never change the Tensors the user built: a stage
 * whose op must be rewritten gets a fresh copy, so one compute can be
 * scheduled in several ways side by side (the property tests do exactly
 * that).  Errors (an illegal schedule) return -1 / NULL with a message.
 */
#ifndef KILN_TE_H
#define KILN_TE_H

#include <stddef.h>

#include "../ir/ir.h"

/* ===== tensor.c ===== */

/* The most elements a tensor, and the largest extent an axis, may have:
 * generated code indexes tensors and runs loops with 32-bit integers (as
 * the graph's GRAPH_MAX_ELEMS).  Placeholders, computes, externs and
 * reduce axes with constant extents beyond it are refused where they are
 * made; a symbolic extent is the caller's to bound. */
#define TE_MAX_ELEMS ((int64_t)INT32_MAX)

typedef enum TensorKind { TE_PLACEHOLDER, TE_COMPUTE, TE_EXTERN } TensorKind;

typedef struct TAttr {
  const char *key;
  Expr *value; /* IntImm / FloatImm / StrImm */
} TAttr;

struct Tensor {
  KObjKind okind;
  TensorKind kind;
  const char *name;
  const char *tag; /* e.g. "elemwise", "broadcast", "conv2d_NCHWc" */
  DType dtype;
  int ndim;
  Expr **shape;
  /* compute */
  IterVar **axis; /* one per dimension, ranges [0, shape) */
  int nreduce;
  IterVar **reduce_axis;
  Expr *body;
  /* extern: the body reads input buffers and writes the output buffer */
  Stmt *extern_body;
  Expr **in_bufs; /* one handle Var per input (extern only) */
  Expr *out_buf;
  /* producers read by this op, each once */
  int ninputs;
  Tensor **inputs;
  /* key/value attributes that templates attach (e.g. "workload") */
  int nattrs;
  TAttr *attrs;
};

/* The IR reads a tensor's name through TensorHead (ir.h): Tensor begins
 * with the same members. */
_Static_assert(offsetof(struct Tensor, okind) == offsetof(TensorHead, okind) &&
                   offsetof(struct Tensor, kind) == offsetof(TensorHead, kind) &&
                   offsetof(struct Tensor, name) == offsetof(TensorHead, name) && sizeof(TensorKind) == sizeof(int),
               "struct Tensor must begin with TensorHead's members");

Tensor *te_placeholder(const char *name, int ndim, Expr **shape, DType t);
Tensor *te_placeholder_c(const char *name, int ndim, const int64_t *shape, DType t);

/* Make the axis variables for a compute of this rank; names are "i", "j",
 * "k", ... unless given.  Build the body over them, then call te_compute. */
Expr **te_axis_vars(int ndim, const char **names);
/* A compute: out[vars] = body.  body may be a Reduce (at top level only).
 * tag may be NULL. */
Tensor *te_compute(const char *name, int ndim, Expr **shape, Expr **vars, Expr *body,
                   const char *tag);
/* A reduce axis over [min, min + extent). */
IterVar *te_reduce_axis(Expr *min, Expr *extent, const char *name);
IterVar *te_reduce_axis_c(int64_t extent, const char *name);
/* An extern op.  The caller builds body over the given buffer Vars: in_bufs
 * (handles to inputs' flat data, made by te_extern_buffers) and out_buf. */
void te_extern_buffers(int ninputs, Tensor **inputs, const char *out_name, Expr ***in_bufs,
                       Expr **out_buf);
Tensor *te_extern(const char *name, int ndim, Expr **shape, DType t, int ninputs, Tensor **inputs,
                  Expr **in_bufs, Expr *out_buf, Stmt *body, const char *tag);

/* T[idx...]; checks the number of indices.  (Declared in ir.h.) */
Expr *te_read(Tensor *t, int n, Expr **idx);
Expr *te_read1(Tensor *t, Expr *i0);
Expr *te_read2(Tensor *t, Expr *i0, Expr *i1);
Expr *te_read3(Tensor *t, Expr *i0, Expr *i1, Expr *i2);
Expr *te_read4(Tensor *t, Expr *i0, Expr *i1, Expr *i2, Expr *i3);
Expr *te_read5(Tensor *t, Expr *i0, Expr *i1, Expr *i2, Expr *i3, Expr *i4);

void te_set_attr(Tensor *t, const char *key, Expr *value);
Expr *te_get_attr(const Tensor *t, const char *key);
bool te_shape_const(const Tensor *t, int64_t *out); /* all dims constant */
int64_t te_dim(const Tensor *t, int d);             /* constant dim or -1 */

/* ===== schedule.c ===== */

typedef enum RelKind { REL_SPLIT, REL_FUSE } RelKind;

typedef struct IterRel {
  RelKind kind;
  IterVar *parent, *outer, *inner; /* split: parent -> outer, inner */
  IterVar *fused;                  /* fuse: outer, inner -> fused */
  Expr *factor, *nparts;           /* split: one of them is set */
} IterRel;

typedef struct IterAttr {
  IterVar *iv;
  ForKind fkind;
  const char *thread_tag;
  AVec pragma_keys; /* const char * */
  AVec pragma_vals; /* Expr * */
  AVec prefetch_data;     /* Tensor *: prefetched at this loop's start */
  AVec prefetch_offset;   /* Expr *: ... for the iteration this far ahead */
  AVec prefetch_locality; /* Expr *: int32 0-3, __builtin_prefetch's */
  IterVar *prefetch_along;   /* stage_prefetch_spread: an enclosing loop... */
  int64_t prefetch_parts;    /* ... over whose iterations the touches are shared */
  IterVar *prefetch_into;    /* stage_prefetch_into: the inner loop its touches are dealt over */
} IterAttr;

typedef enum AttachKind { ATTACH_ROOT, ATTACH_INLINE, ATTACH_SCOPE } AttachKind;

typedef struct Stage Stage;
typedef struct Schedule Schedule;
struct Stage {
  KObjKind okind;
  Schedule *owner; /* the schedule this stage belongs to */
  Tensor *op;     /* the op this stage computes (a copy once rewritten) */
  Tensor *origin; /* the op the user made */
  AVec aliases;   /* every Tensor that resolves to this stage */
  AVec all_iters, leaf_iters;
  AVec relations; /* IterRel * */
  AVec attrs;     /* IterAttr * */
  AttachKind attach;
  Stage *attach_stage;
  IterVar *attach_iv;
  bool is_output;
  const char *scope; /* storage scope of the op's buffer */
};

struct Schedule {
  KObjKind okind;
  AVec stages; /* producers before consumers */
  int noutputs;
  Tensor **outputs;
};

Schedule *te_create_schedule(int noutputs, Tensor **outputs);
/* The stage that computes t (t may be an op the schedule rewrote). */
Stage *sch_stage(Schedule *s, Tensor *t);
/* Stage axes by position (root data-parallel axes / reduce axes). */
IterVar *stage_axis(Stage *st, int i);
IterVar *stage_reduce_axis(Stage *st, int i);

int stage_split(Stage *st, IterVar *parent, Expr *factor, IterVar **outer, IterVar **inner);
int stage_split_nparts(Stage *st, IterVar *parent, Expr *nparts, IterVar **outer,
                       IterVar **inner);
int stage_tile(Stage *st, IterVar *x, IterVar *y, Expr *fx, Expr *fy, IterVar **xo,
               IterVar **yo, IterVar **xi, IterVar **yi);
int stage_fuse(Stage *st, IterVar *outer, IterVar *inner, IterVar **fused);
int stage_reorder(Stage *st, int n, IterVar **order);
int stage_vectorize(Stage *st, IterVar *iv);
int stage_unroll(Stage *st, IterVar *iv);
int stage_parallel(Stage *st, IterVar *iv);
int stage_bind(Stage *st, IterVar *iv, const char *thread_tag);
int stage_pragma(Stage *st, IterVar *iv, const char *key, Expr *value);
/* TVM's s[st].prefetch(t, iv, offset): at the start of each iteration of
 * loop iv, touch the cache lines of what iteration iv + offset will read
 * of t (the loops inside iv over their ranges), with __builtin_prefetch's
 * locality (0-3; TVM's is 3).  t must be an input of the stage (or of a
 * stage inlined into it: a residual an output stage's fused epilogue
 * adds), stored whole: a placeholder or a stage computed at the root.
 * A region past t's end is cut at its last element. */
int stage_prefetch(Stage *st, Tensor *t, IterVar *iv, Expr *offset, int locality);
/* Share loop iv's prefetches among `parts` iterations of an enclosing loop
 * `along` (a loop of st, or of a stage st is computed in): iteration i of
 * iv touches only where i % parts == along % parts.  For data that every
 * iteration of `along` reads again (a register block's weights, read by
 * each of its output rows), the region is then touched once over parts
 * iterations instead of on each. */
int stage_prefetch_spread(Stage *st, IterVar *iv, IterVar *along, int64_t parts);
/* Deal loop iv's prefetches out over the iterations of `inner`, a loop of
 * a stage computed at iv (a register block's reduction): iteration j of
 * inner touches lines j, j + E, j + 2E, ... of them (E its extent)
 * instead of all at iv's start.  A burst of misses at once (a residual's
 * lines of a whole block) fills the core's miss buffers and stalls the
 * loads behind it; one or two lines an iteration hide under the
 * reduction. */
int stage_prefetch_into(Stage *st, IterVar *iv, IterVar *inner);
int stage_compute_inline(Stage *st);
int stage_compute_root(Stage *st);
int stage_compute_at(Stage *st, Stage *parent, IterVar *iv);
/* The storage scope of the stage's buffer: "global", "shared" or "local". */
int stage_set_scope(Stage *st, const char *scope);
/* Read t through a new stage in scope for the given readers; returns it. */
Tensor *sch_cache_read(Schedule *s, Tensor *t, const char *scope, int nreaders, Tensor **readers);
/* Compute t into a new stage in scope, then copy; returns the cache. */
Tensor *sch_cache_write(Schedule *s, Tensor *t, const char *scope);

/* A copy of the schedule whose stages can be changed without touching the
 * original (lowering works on one). */
Schedule *sch_copy(Schedule *s);
/* A copy of a compute op with another body (inputs recomputed). */
Tensor *te_copy_with_body(Tensor *t, Expr *body);

IterAttr *stage_iter_attr(Stage *st, IterVar *iv, bool create);
int stage_leaf_index(const Stage *st, const IterVar *iv);
/* Does stage a (transitively) read the output of stage b? */
bool sch_reads_from(Schedule *s, Stage *a, Stage *b);

#endif
