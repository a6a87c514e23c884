/*
 * lower.h - from a schedule to a loop-IR function, and the loop-IR passes.
 *
 * The pipeline (lower.c) is one readable list:
 *   inline.c        compute_inline: substitute inlined bodies into consumers
 *   bound.c         bound inference: the range of every loop of every stage
 *   schedule_ops.c  loop nests, attach points, Realize/Produce/Provide
 *   flatten.c       tensors -> flat buffers: Allocate/Store/Load
 *   (simplify)      ir_simplify_stmt (src/ir/simplify.c)
 *   vectorize.c     innermost vectorized loops -> vector expressions
 *   unroll.c        unrolled loops and auto_unroll_max_step pragmas
 *   remove_noop.c   drop empty loops, allocations and no-op statements
 * Each pass is one file with one entry point.
 */
#ifndef KILN_LOWER_H
#define KILN_LOWER_H

#include "../te/te.h"

/* A lowered function: its parameters are tensors bound to flat buffers. */
typedef struct LoweredFunc {
  KObjKind okind;
  const char *name;
  int nargs;
  Tensor **args;    /* the tensors, in call order */
  Expr **arg_bufs;  /* one handle Var per argument */
  Stmt *body;
  AVec notes;       /* const char *: what a pass could not do, and why */
  bool may_alias;   /* the output may share memory with an input (an in-place
                     * elementwise kernel): no `restrict` on the arguments */
} LoweredFunc;

/* Options for the lowering pipeline. */
typedef struct LowerOptions {
  bool simple_mode;     /* stop before the last cleanups TVM skips */
  const char *dump_after; /* print the IR after this pass to stderr ("all") */
  int auto_unroll_max_step; /* unroll inner loops up to this many steps (0 off) */
  bool no_vector;       /* vectorized loops stay scalar loops (plain C99 output) */
} LowerOptions;

/* ===== lower.c ===== */

/* Lower a schedule to a function over args (placeholders and outputs, in
 * call order).  NULL + error on an illegal schedule. */
LoweredFunc *kiln_lower(Schedule *s, int nargs, Tensor **args, const char *name,
                        const LowerOptions *opt);
/* The text of a lowered function's body, as TVM's simple_mode prints it. */
const char *kiln_lowered_str(LoweredFunc *f);

/* ===== inline.c ===== */

/* Substitute every inlined stage's body into its readers (rewriting the
 * readers' ops in place in the schedule's stages). */
int lower_inline(Schedule *s);

/* ===== bound.c ===== */

typedef struct Range {
  Expr *min, *extent;
} Range;

/* Per-stage facts bound inference computes and loop building uses. */
typedef struct StageBounds {
  Stage *st;
  PtrMap range;    /* IterVar -> Range: every iter of the stage */
  PtrMap loopvar;  /* leaf IterVar -> the loop Var made for it */
  PtrMap value;    /* IterVar -> Expr: its value in terms of loop vars */
  AVec conds;      /* guards (Expr, bool) the loop body needs */
} StageBounds;

typedef struct Bounds {
  Schedule *sch;
  int n;
  StageBounds *sb; /* parallel to sch->stages */
  Analyzer *an;    /* knows every loop variable's constant range */
} Bounds;

int lower_infer_bounds(Schedule *s, int nargs, Tensor **args, Bounds *out);
/* Every compute_at must still name a leaf axis and enclose all consumers
 * of the attached stage (on an inlined schedule copy). */
int lower_check_attach(Schedule *s);
/* The same check on a user's schedule (before lowering). */
int kiln_check_schedule(Schedule *s);
void lower_bounds_free(Bounds *b);
StageBounds *bounds_of(Bounds *b, Stage *st);
/* The stage a tensor resolves to (through aliases); NULL if none. */
Stage *lower_stage_of(Schedule *s, Tensor *t);

/* ===== schedule_ops.c ===== */

/* Build the loop nest of the whole schedule (before flattening). */
Stmt *lower_schedule_ops(Schedule *s, Bounds *b, int nargs, Tensor **args);

/* ===== flatten.c ===== */

/* Realize/Provide/Read -> Allocate/Store/Load.  Arguments bind to arg_bufs. */
Stmt *lower_flatten(Stmt *body, Schedule *s, int nargs, Tensor **args, Expr **arg_bufs);

/* ===== vectorize.c ===== */

/* Rewrite vectorized loops into vector expressions; loops that cannot be
 * vectorized become serial loops and a note says why. */
Stmt *lower_vectorize(Stmt *body, AVec *notes);
/* Every vectorized loop becomes a serial loop: code for a target without
 * vector types (standalone C with --isa generic). */
Stmt *lower_scalarize(Stmt *body);

/* ===== unroll.c ===== */

Stmt *lower_unroll(Stmt *body, int auto_max_step);

/* ===== remove_noop.c ===== */

Stmt *lower_remove_noop(Stmt *body);

#endif
