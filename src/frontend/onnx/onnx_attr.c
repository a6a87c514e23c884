/*
 * onnx_attr.c - lookups over decoded nodes and graphs.
 *
 * The typed getters are lenient on purpose (absent or mistyped gives the
 * default) so op mappings read like ONNX's operator tables:
 * `onnx_attr_int(n, "group", 1)`.  A mapping that must reject a mistyped
 * attribute calls onnx_attr_expect first, which leaves a message naming the
 * node, its op, the attribute and both types.  Lookups are linear: nodes
 * have a handful of attributes and a graph is walked once by the importer.
 */
#include "onnx_model.h"

#include <string.h>

const char *onnx_attr_type_name(OnnxAttrType t) {
  switch (t) {
#define X(n, code) case ONNX_ATTR_##n: return #n;
    ONNX_ATTR_TYPES(X)
#undef X
  }
  return "UNKNOWN";
}

const OnnxAttr *onnx_attr_find(const OnnxNode *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
  return NULL;
}

bool onnx_attr_has(const OnnxNode *n, const char *name) { return onnx_attr_find(n, name) != NULL; }

static const OnnxAttr *typed(const OnnxNode *n, const char *name, OnnxAttrType t) {
  const OnnxAttr *a = onnx_attr_find(n, name);
  return a && a->type == t ? a : NULL;
}

int64_t onnx_attr_int(const OnnxNode *n, const char *name, int64_t dflt) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_INT);
  return a ? a->i : dflt;
}

float onnx_attr_float(const OnnxNode *n, const char *name, float dflt) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_FLOAT);
  return a ? a->f : dflt;
}

const char *onnx_attr_string(const OnnxNode *n, const char *name, const char *dflt) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_STRING);
  return a ? a->s : dflt;
}

const int64_t *onnx_attr_ints(const OnnxNode *n, const char *name, int *count) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_INTS);
  if (count) *count = a ? a->n : 0;
  return a ? a->ints : NULL;
}

const float *onnx_attr_floats(const OnnxNode *n, const char *name, int *count) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_FLOATS);
  if (count) *count = a ? a->n : 0;
  return a ? a->floats : NULL;
}

const char **onnx_attr_strings(const OnnxNode *n, const char *name, int *count) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_STRINGS);
  if (count) *count = a ? a->n : 0;
  return a ? a->strings : NULL;
}

const OnnxTensor *onnx_attr_tensor(const OnnxNode *n, const char *name) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_TENSOR);
  return a ? a->t : NULL;
}

const OnnxGraph *onnx_attr_graph(const OnnxNode *n, const char *name) {
  const OnnxAttr *a = typed(n, name, ONNX_ATTR_GRAPH);
  return a ? a->g : NULL;
}

int onnx_attr_expect(const OnnxNode *n, const char *name, OnnxAttrType t) {
  const OnnxAttr *a = onnx_attr_find(n, name);
  if (!a || a->type == t) return 0;
  return kiln_set_error("node '%s' (%s): attribute '%s' is %s, expected %s", n->name, n->op_type,
                        name, onnx_attr_type_name(a->type), onnx_attr_type_name(t));
}

const OnnxTensor *onnx_graph_initializer(const OnnxGraph *g, const char *name) {
  for (int i = 0; i < g->ninitializers; i++)
    if (!strcmp(g->initializers[i].name, name)) return &g->initializers[i];
  return NULL;
}

const OnnxValueInfo *onnx_graph_value_info(const OnnxGraph *g, const char *name) {
  for (int i = 0; i < g->ninputs; i++)
    if (!strcmp(g->inputs[i].name, name)) return &g->inputs[i];
  for (int i = 0; i < g->noutputs; i++)
    if (!strcmp(g->outputs[i].name, name)) return &g->outputs[i];
  for (int i = 0; i < g->nvalue_info; i++)
    if (!strcmp(g->value_info[i].name, name)) return &g->value_info[i];
  return NULL;
}
