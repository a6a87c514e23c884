/*
 * rt_model.c - a graph built, loaded and run in a unit test (rt_model.h).
 */
#include "rt_model.h"

#include "frontend/onnx/import.h"

bool rt_begin(RtModel *m, const char *prefix) {
  memset(m, 0, sizeof *m);
  m->dir = kiln_mkdtemp(prefix);
  CHECK_NN(m->dir);
  return m->dir != NULL;
}

static void rt_unload(RtModel *m) {
  kiln_graph_executor_free(m->ex);
  kiln_module_free(m->mod);
  m->ex = NULL;
  m->mod = NULL;
}

void rt_build(RtModel *m, Graph *g, const GraphBuildOptions *bo, const char *name) {
  rt_unload(m);
  const char *so = kfmt("%s/%s.so", m->dir, name);
  CHECK_OK(graph_build(g, bo, so, NULL));
  CHECK_OK(kiln_module_load(so, &m->mod));
  if (m->mod) CHECK_OK(kiln_graph_executor_create(m->mod, &m->ex));
}

void rt_build_at(RtModel *m, Graph *g, int opt_level, const char *name) {
  GraphBuildOptions bo;
  memset(&bo, 0, sizeof bo);
  bo.opt_level = opt_level;
  rt_build(m, g, &bo, name);
}

bool rt_open(RtModel *m, const char *file) {
  if (!rt_begin(m, "kiln-rtvalues-")) return false;
  m->g = kiln_import_onnx(kfmt("%s/tests/data/onnx/%s", test_root(), file), NULL);
  CHECK_MSG(m->g != NULL, "import %s: %s", file, kiln_get_error());
  if (m->g) rt_build_at(m, m->g, 3, "model");
  return true;
}

void rt_close(RtModel *m) {
  rt_unload(m);
  if (m->g) graph_free(m->g);
  kiln_rmtree(m->dir);
  free(m->dir);
  memset(m, 0, sizeof *m);
}
