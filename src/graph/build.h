/*
 * build.h - graph build (build.c) and anchor scheduling through strategies
 * (schedule.c).
 */
#ifndef KILN_GRAPH_BUILD_H
#define KILN_GRAPH_BUILD_H

#include "../codegen/codegen.h"
#include "graph.h"

typedef struct GraphBuildOptions {
  int opt_level;
  const char *emit_dir;      /* also write C sources, graph.json, params.bin here */
  const char *target;        /* "cpu" (NULL: cpu) */
  int nunits;                /* C translation units (0: by size) */
  void (*progress)(int done, int total, void *ud);
  void *progress_ud;
  CompileOptions copt;
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
} GroupInfo;

/* ===== build.c ===== */

/* Compile an optimized graph into one shared object at so_path. */
int graph_build(Graph *g, const GraphBuildOptions *opt, const char *so_path, GraphBuildStats *stats);

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
 * to tasks (GraphTask *, current arena). */
int graph_extract_tasks(Graph *g, int opt_level, AVec *tasks);

/* ===== schedule.c ===== */

/* Schedule a fused group (one output) whose anchor's strategy chose a
 * template and config. */
int graph_schedule_anchor(Schedule *s, Tensor *out, Tensor *anchor, const Strategy *st);

#endif
