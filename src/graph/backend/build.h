/*
 * build.h - graph build (build.c) and anchor scheduling through strategies
 * (schedule.c).
 */
#ifndef KILN_GRAPH_BUILD_H
#define KILN_GRAPH_BUILD_H

#include "../../codegen/codegen.h"
#include "../../target/target.h"
#include "../graph.h"

typedef struct GraphBuildOptions {
  int opt_level;
  const char *emit_dir;      /* also write C sources, graph.json, params.bin here */
  const Target *target;      /* compiled for: its templates, records, code
                              * generator and compiler (NULL: the host) */
  DispatchContext *dispatch; /* the records configs come from (NULL: a new
                              * context for this build, dispatch.c) */
  int nunits;                /* C translation units (0: by size) */
  void (*progress)(int done, int total, void *ud);
  void *progress_ud;
  CompileOptions copt;
  bool no_vector;            /* scalar loops only (standalone C for any C99 compiler) */
  const char *dump_lower;    /* print each kernel's loop IR after this lowering
                              * pass ("all") to stderr (--dump-after) */
  const char *batch_outer;   /* "N:lo:hi": the graph was specialized to batch 1
                              * from a symbolic batch N, and the executor calls
                              * its kernels once per sample (docs/symbolic_shapes.md) */
  /* With batch_outer: batched variants built into the same artifact, the
   * model specialized to batch variant_batch[i] (increasing, above 1) and
   * optimized as a static graph.  The executor runs a batch through the
   * largest variants that fit and the samples left through the batch-1
   * kernels ("batched variants", docs/symbolic_shapes.md). */
  Graph **variants;
  const int64_t *variant_batch;
  int nvariants;
} GraphBuildOptions;

typedef struct GraphBuildStats {
  int nkernels, nparams;
  size_t param_bytes;
} GraphBuildStats;

/* What the build learned about one fused group. */
typedef struct GroupInfo {
  AVec inputs;               /* GNode *: the kernel's inputs (not inlined) */
  const char *task;          /* "conv2d_NCHWc.x86 [(1,64,56,56),(64,64,3,3)] s1 p1" */
  const char *config_source; /* "fallback", "records.json:12", ... */
  int inplace;               /* 1 + the input the output may overwrite (an
                              * elementwise kernel), 0: none */
  const OpDef *host;         /* a host op's group (ops/strings.c): no kernel */
  bool alias;                /* reshapes only: no kernel, the output is the
                              * input's memory ("__nop", as TVM's reshape-only
                              * functions; graph_reshape_alias) */
} GroupInfo;

/* ===== build.c ===== */

/* The batches a symbolic batch bounded by hi gets batched variants at
 * when the user names none: 4 and 8, those within the bound.  Returns
 * how many (at most GRAPH_DEFAULT_BATCHES) into sizes.  Kept on although
 * compile time grows with each variant: at batch 8 the batch-8 kernels
 * (samples blocked into the register tile, conv2d_NCHWc.x86's tile_n) beat
 * the per-sample loop, and a variant costs no memory until a batch runs it
 * (docs/symbolic_shapes.md, "Why variants at 4 and 8 by default").  None
 * where the graph g's weights fit half of t's L3 and one sample's
 * largest activation is past its L2: the samples then reread the weights
 * from the L3, while the batch-N kernels would stream N times the
 * activations through it (SqueezeNet-1.1; ResNet-18's 47 MB of weights
 * keep the variants). */
#define GRAPH_DEFAULT_BATCHES 2
int graph_default_batches(const Graph *g, const Target *t, int64_t hi, int64_t *sizes);

/* For a static graph whose inputs all have the same batch n > 1 in
 * dimension 0, where its samples run faster one by one (the rule above):
 * --input-shapes text that imports the model again with that batch as a
 * symbol bounded to [n, n] ("data:[batch,3,224,224] batch>=8,batch<=8"),
 * so it is built at batch 1 and run per sample; malloc'd, else NULL. */
char *graph_batch_loop_shapes(const Graph *g, const Target *t);

/* Compile an optimized graph into one shared object at so_path. */
int graph_build(Graph *g, const GraphBuildOptions *opt, const char *so_path, GraphBuildStats *stats);
/* One fused group's kernel: placeholders p0, p1, ... for its inputs (one-
 * element constants folded in), the anchor's template and config, lowered
 * (NULL + error).  info gets the kernel's inputs, task and config source. */
LoweredFunc *graph_build_group(FusedGroup *fg, const GraphBuildOptions *opt, GroupInfo *info);
/* A group that calls an earlier group's kernel (fg->kernel != fg->id):
 * its inputs in the kernel's parameter order, and the kernel's task. */
void graph_build_share_group(FusedGroup *fg, const GroupInfo *kernel, GroupInfo *info);
/* Is fg reshapes only, run as a "__nop" that aliases its input? */
bool graph_reshape_alias(const Graph *g, const FusedGroup *fg, const GraphBuildOptions *opt);
/* Is fg one concatenation whose kernel inputs lie end to end in its output
 * (only 1s before the axis), in a static CPU graph without the batch loop,
 * each input computed by a kernel?  The memory plan may then write the
 * inputs in place ("kiln_concat"; export_c's plan the same way). */
bool graph_concat_view(const Graph *g, const FusedGroup *fg, const GroupInfo *info, const GraphBuildOptions *opt);
/* The parameters of a built graph, in order (p0, p1, ...): the constants
 * the kernels read, then constant outputs; pushed to params (GNode *). */
void graph_build_params(Graph *g, AVec *groups, GroupInfo *infos, AVec *params);

/* ===== export_c.c ===== */

typedef struct CExportOptions {
  const char *prefix;   /* NAME: NAME.h, NAME.c, NAME_run (C identifier) */
  CThreads threads;     /* parallel loops: none, pthreads, OpenMP */
  int isa;              /* a CExportIsa */
  bool freestanding;    /* no libm: Kiln's own math functions */
  bool separate_weights; /* weights in NAME.bin, passed to NAME_run */
  const char *model;    /* the source model's file name, for the header */
  int opt_level;        /* fusion and templates as for graph_build (3: all) */
  DispatchContext *dispatch; /* the records (NULL: a new context) */
  const Target *target; /* vector width, templates, records (NULL: target_host()) */
} CExportOptions;

typedef enum CExportIsa { CEXPORT_ISA_NATIVE, CEXPORT_ISA_GENERIC, CEXPORT_ISA_AVX2, CEXPORT_ISA_AVX512 } CExportIsa;

typedef struct CExportStats {
  int nkernels, nparams;
  size_t param_bytes;
  int64_t workspace_bytes;    /* NAME_WORKSPACE_BYTES */
  int64_t graph_plan_bytes;   /* the graph executor's plan for the same graph (intermediates) */
  int64_t naive_bytes;        /* one buffer per intermediate */
} CExportStats;

/* The SIMD width (float lanes) an ISA's kernels are scheduled for; 0 for
 * the machine's own. */
int cexport_isa_lanes(int isa);
/* Write an optimized graph as standalone C into dir (see docs/deploy_c.md). */
int graph_export_c(Graph *g, const CExportOptions *opt, const char *dir, CExportStats *stats);

/* ===== export_c_files.c ===== */

/* What an export directory holds (from its metadata.json), with each file
 * checked against the checksum written with it; -1 + error if dir is not
 * an export. */
int graph_export_c_describe(const char *dir, StrBuf *out);

/* ===== tasks.c ===== */

/* A tuning task of a model: a template and a workload, and the fused
 * functions that use it. */
typedef struct GraphTask {
  const struct Template *tmpl;
  struct Workload *wl;
  const char *desc;   /* "[(1,64,56,56),(64,64,3,3)] s1 p1" */
  AVec users;         /* const char *: fused function names, in graph order */
  int64_t space_size;
  double flops;
} GraphTask;

/* The distinct tasks of an optimized graph, in order of first use, pushed
 * to tasks (GraphTask *, current arena); configs and fallback warnings are
 * dc's (quiet while extracting; NULL: a new context). */
int graph_extract_tasks(Graph *g, int opt_level, const Target *t, DispatchContext *dc, AVec *tasks);

/* ===== schedule.c ===== */

/* Schedule a fused group (one output) whose anchor's strategy chose a
 * template and config. */
int graph_schedule_anchor(Schedule *s, Tensor *out, Tensor *anchor, const Strategy *st);

#endif
