/*
 * rt_model.h - a graph built, loaded and run in a unit test: the temporary
 * folder it is built in, the module and its graph executor, made and freed
 * together (test_runtime_values.c, test_symshape.c).
 */
#ifndef KILN_TEST_RT_MODEL_H
#define KILN_TEST_RT_MODEL_H

#include "graph/backend/build.h"
#include "graph/graph.h"
#include "kiln/runtime.h"
#include "test.h"

typedef struct RtModel {
  char *dir;               /* the temporary folder (removed by rt_close) */
  Graph *g;                /* the model's graph, freed by rt_close (may be NULL) */
  KilnModule *mod;         /* the last module rt_build loaded */
  KilnGraphExecutor *ex;   /* its executor; NULL when the build or load failed */
} RtModel;

/* An empty model with its temporary folder (prefix names it): false (a
 * failed check counted) when the folder cannot be made. */
bool rt_begin(RtModel *m, const char *prefix);
/* Build g with bo into the folder as name.so, load it and make its
 * executor (replacing any earlier module of m); a failed build or load
 * is a failed check and leaves m->ex NULL, so the test checks what it can. */
void rt_build(RtModel *m, Graph *g, const GraphBuildOptions *bo, const char *name);
/* The same with the default options at opt_level. */
void rt_build_at(RtModel *m, Graph *g, int opt_level, const char *name);
/* A model of tests/data/onnx imported into m->g and built at opt level 3:
 * false only when the folder cannot be made. */
bool rt_open(RtModel *m, const char *file);
/* Free the executor, module, m->g and the folder. */
void rt_close(RtModel *m);

#endif
