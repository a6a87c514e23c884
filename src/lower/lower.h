/*
 * lower.h - from a schedule to a loop-IR function, and the loop-IR passes.
 *
 * The pipeline (lower.c) is one readable list:
 *   inline.c        compute_inline: substitute inlined bodies into consumers
 *   bound.c         bound inference: the range of every loop of every stage
 *   schedule_ops.c  loop nests, attach points, Realize/Produce/Provide
 *   prefetch.c      stage_prefetch's cache-line touches at a loop's start
 *   flatten.c       tensors -> flat buffers: Allocate/Store/Load
 *   (simplify)      ir_simplify_stmt (src/ir/simplify.c)
 *   vectorize.c     innermost vectorized loops -> vector expressions
 *   unroll.c        unrolled loops and auto_unroll_max_step pragmas
 *   remove_noop.c   drop empty loops, allocations and no-op statements
 * and, for the CPU:
 *   unswitch.c      loops whose tail guards do not change inside them ->
 *                   a guard-free copy for the full blocks, the loop as it
 *                   was for the tail; a select between two reads whose
 *                   condition does not change inside -> a copy per arm
 *   combine_loads.c byte loads that assemble a word -> one reinterpreting load
 *                   (and byte stores that write one -> one reinterpreting store)
 *   small_parallel.c parallel loops with too little work to share -> serial
 * and, for a GPU target (LowerOptions.device_type not the CPU):
 *   vthread.c       virtual threads -> loops each thread runs in turn
 *   split_host_device.c  kernels out of the host function: thread extent
 *                   inference, launch extents, kernel parameters, the
 *                   limits of the target (threads, shared memory)
 *   thread_sync.c   barriers where shared memory one thread wrote is read
 *                   by another (or rewritten while others may still read)
 * Each pass is one file with one entry point.
 */
#ifndef KILN_LOWER_H
#define KILN_LOWER_H

#include "../te/te.h"

/* One GPU kernel split out of a lowered function (split_host_device.c).
 * Its body runs once per thread: a loop bound to a thread tag is that
 * thread's index (and a guard where the loop is shorter than the launch),
 * a shared Allocate is one buffer per block, a local one per thread. */
typedef enum ThreadTag {
  TAG_BLOCK_X, TAG_BLOCK_Y, TAG_BLOCK_Z, TAG_THREAD_X, TAG_THREAD_Y, TAG_THREAD_Z, TAG__COUNT
} ThreadTag;
/* "blockIdx.x" ... "threadIdx.z" -> ThreadTag, or -1 ("vthread", unknown). */
int lower_thread_tag(const char *tag);
extern const char *const lower_thread_tag_names[TAG__COUNT];

typedef struct DeviceKernel {
  const char *name;   /* "<function>_kernel<k>", as TVM names them */
  Stmt *body;
  int nparams;
  Expr **params;      /* buffer (handle) Vars first, then scalar Vars */
  DType *ptype;       /* per param: a buffer's element type, a scalar's type */
  Expr *extent[TAG__COUNT]; /* launch extents over host variables (1: unused) */
  int64_t shared_bytes;     /* shared memory the kernel allocates per block */
} DeviceKernel;

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
  int device_type;  /* where the buffers live: kDLCPU, or kDLCUDA / kDLOpenCL */
  const char *gpu_arch; /* CUDA: the -arch its kernels are compiled for ("sm_90") */
  int nkernels;     /* GPU: the kernels the body launches (Attr "device_launch") */
  DeviceKernel **kernels;
} LoweredFunc;

/* Options for the lowering pipeline. */
typedef struct LowerOptions {
  const char *dump_after; /* print the IR after this pass to stderr ("all") */
  int auto_unroll_max_step; /* unroll inner loops up to this many steps (0 off) */
  bool no_vector;       /* vectorized loops stay scalar loops (plain C99 output) */
  /* CPU: a parallel loop with less work than SMALL_PARALLEL_OPS runs
   * serially (small_parallel.c; what the model compiler and the tuner's
   * measurements ask for - a schedule lowered on its own keeps its loops
   * as written) */
  bool serial_small_parallel;
  /* A GPU target: 0 (or kDLCPU) lowers for the CPU. */
  int device_type;          /* kDLCUDA or kDLOpenCL */
  int max_threads_per_block; /* the target's limit (0: 1024) */
  int64_t max_shared_bytes;  /* shared memory per block (0: 48 KiB) */
  const char *gpu_arch;      /* CUDA: "sm_90" (NULL: sm_90) */
} LowerOptions;

/* ===== lower.c ===== */

/* Lower a schedule to a function over args (placeholders and outputs, in
 * call order).  NULL + error on an illegal schedule. */
LoweredFunc *kiln_lower(Schedule *s, int nargs, Tensor **args, const char *name,
                        const LowerOptions *opt);
/* The text of a lowered function's body, as TVM's simple_mode prints it. */
const char *kiln_lowered_str(LoweredFunc *f);
/* The lowering passes' names, in order, NULL-terminated: what
 * LowerOptions.dump_after (and --dump-after, with the graph passes)
 * takes. */
const char *const *lower_pass_names(void);
/* The loop IR's invariants after the pass `after` (verify.c): 0, or -1 +
 * an error naming the pass and the rule. */
int ir_verify(const LoweredFunc *f, const char *after, bool flattened);

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

/* The region of t one iteration of sb's leaf loop k reads (its inner
 * loops relaxed, its variable shifted by offset, the outer loops symbolic),
 * per dimension of t: 0, or -1 + an error. */
int lower_iteration_region(Bounds *b, StageBounds *sb, Tensor *t, int k, Expr *offset, Range **region);
/* ===== prefetch.c ===== */
/* The prefetches (stage_prefetch) of sb's leaf loop k: a nest that touches
 * each cache line of the region iteration k + offset reads, to run at the
 * start of iteration k; a no-op where the loop has none; NULL + error. */
Stmt *lower_prefetch(Bounds *b, StageBounds *sb, int k);
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

/* ===== unswitch.c ===== */

/* A serial loop with `likely` guards that do not change inside it ->
 * if (all hold) the loop without them else the loop; one with a select
 * between two reads whose condition does not -> if (cond) the loop with
 * the true arm else with the false arm (CPU only). */
Stmt *lower_unswitch(Stmt *body);

/* ===== combine_loads.c ===== */

/* (uint32)B[i] | (uint32)B[i + 1] << 8 | ... from a uint8 buffer (an
 * argument of f or allocated in body) -> the reinterpreting Load(uint32, B,
 * i) (ir.h); scalar and vector, 2, 4 or 8 bytes.  And k = 2, 4 or 8
 * consecutive vector stores of byte j into B at ramp(i + j, k, L) -> one
 * reinterpreting Store of L words at ramp(i, k, L). */
Stmt *lower_combine_loads(Stmt *body, const LoweredFunc *f);

/* ===== hoist_divmod.c ===== */

/* A serial or parallel loop whose variable v appears as v / c or v % c (a
 * constant c > 1) inside a loop nested in it -> those bound once at the top
 * of its body, `let v_div_c = v / c` (CPU). */
Stmt *lower_hoist_divmod(Stmt *body);

/* ===== small_parallel.c ===== */

/* A parallel loop whose work is below SMALL_PARALLEL_OPS operations (about
 * a microsecond of one core on a memory-bound loop) -> a serial loop:
 * sharing it costs more than it gains (CPU, with
 * LowerOptions.serial_small_parallel; small_parallel.c has the cost rule). */
enum { SMALL_PARALLEL_OPS = 5000 };
Stmt *lower_small_parallel(Stmt *body);
/* The operations one run of s performs by that rule, saturating at 2^40. */
int64_t lower_loop_ops(const Stmt *s);

/* ===== vthread.c ===== */

/* Loops bound to "vthread" become serial loops: each thread runs its
 * virtual threads one after the other (TVM interleaves them; Kiln keeps
 * them in sequence, which is correct for every schedule but repeats a
 * shared-memory fetch placed inside one). */
Stmt *lower_inject_virtual_thread(Stmt *body);

/* ===== split_host_device.c ===== */

/* Split f's body into kernels (f->kernels) and a host body that allocates
 * global intermediates and launches them (Attr "device_launch", value the
 * kernel's name).  Errors: a stage whose loops no thread is bound to (it
 * would run on the host), a thread-bound loop inside another kernel's
 * host loop, threads per block or shared memory over opt's limits, a
 * shared or local buffer of non-constant size, or outside a kernel. */
int lower_split_host_device(LoweredFunc *f, const LowerOptions *opt);
/* Whether a thread-bound loop of k covers its tag's whole launch extent (a
 * shorter one runs under `index < extent`). */
bool lower_thread_loop_full(const DeviceKernel *k, const Stmt *loop);

/* ===== thread_sync.c ===== */

/* Insert barriers (Attr "device_barrier") in k's body: before a statement
 * that reads shared memory written since the last barrier, or writes
 * shared memory read since it, and at the top of a loop whose body does
 * both.  Error: a barrier that not every thread of a block would reach (in
 * a branch on a thread index, or a thread loop shorter than the launch). */
int lower_thread_sync(DeviceKernel *k);

#endif
