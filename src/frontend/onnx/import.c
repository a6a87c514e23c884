/*
 * import.c - ONNX model -> Kiln graph (see import.h for the approach).
 */
#include "import.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/passes/passes.h"

/* Results up to this many elements are folded during import. */
#define IMPORT_FOLD_LIMIT 65536

struct Importer {
  const OnnxModel *model;
  Graph *g;
  PtrMap values;       /* name -> GNode * (string keys) */
  PtrMap initializers; /* name -> const OnnxTensor * (string keys) */
  const OnnxNode *node;
  int64_t opset;
};

int parse_input_shapes(const char *text, InputShape **out) {
  AVec v = {0};
  const char *p = text ? text : "";
  while (*p) {
    while (isspace((unsigned char)*p) || *p == ',' || *p == ';') p++;
    if (!*p) break;
    const char *colon = strchr(p, ':');
    if (!colon) return kiln_set_error("bad input shape '%s': expected name:[d0,d1,...]", p);
    InputShape *s = KNEW(InputShape);
    const char *ne = colon;
    while (ne > p && isspace((unsigned char)ne[-1])) ne--;
    s->name = kstrndup(p, (size_t)(ne - p));
    if (!*s->name) return kiln_set_error("bad input shape '%s': empty input name", text);
    const char *q = colon + 1;
    while (isspace((unsigned char)*q)) q++;
    bool bracket = *q == '[';
    if (bracket) q++;
    s->ndim = 0;
    for (;;) {
      while (isspace((unsigned char)*q)) q++;
      if (bracket && *q == ']') {
        q++;
        break;
      }
      if (!bracket && (*q == 0 || *q == ',' || *q == ';' || isspace((unsigned char)*q))) break;
      char *end;
      long long d = strtoll(q, &end, 10);
      if (end == q || d < 0)
        return kiln_set_error("bad input shape for '%s': expected a non-negative integer at \"%.20s\"", s->name, q);
      if (s->ndim >= GRAPH_MAX_DIMS) return kiln_set_error("input shape for '%s' has more than %d dimensions", s->name, GRAPH_MAX_DIMS);
      s->shape[s->ndim++] = d;
      q = end;
      while (isspace((unsigned char)*q)) q++;
      if (bracket) {
        if (*q == ',') q++;
        else if (*q != ']') return kiln_set_error("bad input shape for '%s': expected ',' or ']' at \"%.20s\"", s->name, q);
      } else {
        if (*q == 'x' || *q == 'X') q++;
        else break;
      }
    }
    if (bracket && q[-1] != ']') return kiln_set_error("bad input shape for '%s': missing ']'", s->name);
    for (int i = 0; i < v.len; i++)
      if (!strcmp(((InputShape *)v.data[i])->name, s->name)) return kiln_set_error("input '%s' is given two shapes", s->name);
    av_push(&v, s);
    p = q;
  }
  InputShape *arr = KNEWN(InputShape, v.len + 1);
  for (int i = 0; i < v.len; i++) arr[i] = *(InputShape *)v.data[i];
  *out = arr;
  return v.len;
}

int imp_error(Importer *im, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return kiln_set_error("%s node '%s' (opset %lld): %s", im->node->op_type, im->node->name, (long long)im->opset, buf);
}

Graph *imp_graph(Importer *im) { return im->g; }
const OnnxNode *imp_node(Importer *im) { return im->node; }
int64_t imp_opset(Importer *im) { return im->opset; }
int imp_ninputs(Importer *im) { return im->node->ninputs; }

static DLTensor *tensor_to_array(const OnnxTensor *t) {
  DType dt;
  if (onnx_tensor_dtype(t, &dt)) return NULL;
  if (t->ndim > GRAPH_MAX_DIMS) return kiln_set_error("tensor '%s' has %d dimensions (at most %d)", t->name, t->ndim, GRAPH_MAX_DIMS), NULL;
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(t->ndim, t->dims, dt, cpu, &a)) return NULL;
  if (t->nbytes && kiln_array_copy_from_bytes(a, t->data, t->nbytes)) {
    kiln_array_free(a);
    return NULL;
  }
  return a;
}

/* The value named name: an imported node, or an initializer made a
 * constant on first use. */
static GNode *lookup(Importer *im, const char *name) {
  GNode *v = pm_get(&im->values, name);
  if (v) return v;
  const OnnxTensor *t = pm_get(&im->initializers, name);
  if (!t) return NULL;
  DLTensor *a = tensor_to_array(t);
  if (!a) return NULL;
  v = graph_const(im->g, name, a);
  if (v) pm_put(&im->values, kstrdup(name), v);
  return v;
}

GNode *imp_input(Importer *im, int i) {
  if (i >= im->node->ninputs || !*im->node->inputs[i]) return NULL;
  return lookup(im, im->node->inputs[i]);
}

int imp_set_output(Importer *im, int i, GNode *v) {
  if (!v) return -1;
  if (i >= im->node->noutputs || !*im->node->outputs[i]) return 0; /* not requested */
  pm_put(&im->values, kstrdup(im->node->outputs[i]), v);
  return 0;
}

GNode *imp_call(Importer *im, const char *op, int nargs, GNode **args, GAttrs attrs) {
  for (int i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  GNode *n = graph_call(im->g, op, nargs, args, attrs, im->node->name);
  if (!n) {
    kiln_error_context("%s node '%s' (opset %lld)", im->node->op_type, im->node->name, (long long)im->opset);
    return NULL;
  }
  bool all_const = nargs > 0 && n->op->compute;
  for (int i = 0; i < nargs && all_const; i++) all_const = args[i]->kind == GN_CONST;
  if (all_const && ttype_numel(&n->type) <= IMPORT_FOLD_LIMIT) {
    DLTensor *v = graph_eval_call(n, args);
    if (!v) {
      kiln_error_context("%s node '%s'", im->node->op_type, im->node->name);
      return NULL;
    }
    return graph_const(im->g, NULL, v);
  }
  return n;
}

GNode *imp_call1(Importer *im, const char *op, GNode *a) { return imp_call(im, op, 1, &a, gattrs_new()); }
GNode *imp_call2(Importer *im, const char *op, GNode *a, GNode *b) {
  GNode *args[2] = {a, b};
  return imp_call(im, op, 2, args, gattrs_new());
}

GNode *imp_const_ints(Importer *im, int n, const int64_t *v) {
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  int64_t len = n;
  if (kiln_array_empty(1, &len, DT_I64, cpu, &a)) return NULL;
  if (n) memcpy(a->data, v, sizeof(int64_t) * (size_t)n);
  return graph_const(im->g, NULL, a);
}

GNode *imp_scalar(Importer *im, double v, DType t) { return graph_scalar(im->g, v, t); }

int imp_const_input_ints(Importer *im, int i, int64_t *out, int max) {
  GNode *v = imp_input(im, i);
  if (!v) return imp_error(im, "input %d is missing", i);
  if (v->kind != GN_CONST)
    return imp_error(im, "input %d ('%s') must be known at compile time (a constant or computed from shapes)", i,
                     im->node->inputs[i]);
  int n = gnode_const_ints(v, out, max);
  if (n < 0) return imp_error(im, "input %d: %s", i, kiln_get_error());
  return n;
}

static int bind_inputs(Importer *im, const OnnxGraph *og, int nshapes, const InputShape *shapes) {
  bool *used = xcalloc((size_t)nshapes + 1, sizeof(bool));
  int rc = 0;
  /* every given shape must name a graph input (checked first: a typo
   * should not surface as a missing binding of the real input) */
  for (int k = 0; k < nshapes && !rc; k++) {
    bool found = false;
    for (int i = 0; i < og->ninputs; i++)
      found |= !strcmp(og->inputs[i].name, shapes[k].name) && !pm_has(&im->initializers, og->inputs[i].name);
    if (found) continue;
    StrBuf sb = {0};
    for (int i = 0; i < og->ninputs; i++)
      if (!pm_has(&im->initializers, og->inputs[i].name)) sb_printf(&sb, "%s%s", sb.len ? ", " : "", og->inputs[i].name);
    rc = kiln_set_error("input shape given for '%s', which is not an input of the model (inputs: %s)", shapes[k].name,
                        sb.data ? sb.data : "none");
    sb_free(&sb);
  }
  for (int i = 0; i < og->ninputs && !rc; i++) {
    const OnnxValueInfo *vi = &og->inputs[i];
    if (pm_has(&im->initializers, vi->name)) continue; /* older exporters list weights as inputs */
    const InputShape *us = NULL;
    for (int k = 0; k < nshapes; k++)
      if (!strcmp(shapes[k].name, vi->name)) {
        us = &shapes[k];
        used[k] = true;
      }
    if (vi->type.kind != ONNX_TYPE_TENSOR) {
      rc = kiln_set_error("input '%s' is not a tensor (sequences, maps and optionals are not supported)", vi->name);
      break;
    }
    DType dt;
    if (onnx_dtype_from_onnx(vi->type.elem_type, &dt)) {
      rc = kiln_error_context("input '%s'", vi->name);
      break;
    }
    TType t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    if (us) {
      if (vi->type.ndim >= 0 && us->ndim != vi->type.ndim) {
        rc = kiln_set_error("input '%s' has rank %d in the model, but the given shape has %d dimensions", vi->name,
                            vi->type.ndim, us->ndim);
        break;
      }
      for (int d = 0; d < us->ndim && vi->type.ndim >= 0; d++)
        if (vi->type.dims[d].kind == ONNX_DIM_VALUE && vi->type.dims[d].value != us->shape[d]) {
          rc = kiln_set_error("input '%s': dimension %d is %lld in the model, but the given shape says %lld", vi->name, d,
                              (long long)vi->type.dims[d].value, (long long)us->shape[d]);
          break;
        }
      if (rc) break;
      t.ndim = us->ndim;
      for (int d = 0; d < us->ndim; d++) t.shape[d] = us->shape[d];
    } else {
      if (vi->type.ndim < 0) {
        rc = kiln_set_error("input '%s' has an unknown rank; give its shape with --input-shapes \"%s:[...]\"", vi->name,
                            vi->name);
        break;
      }
      if (vi->type.ndim > GRAPH_MAX_DIMS) {
        rc = kiln_set_error("input '%s' has %d dimensions (at most %d)", vi->name, vi->type.ndim, GRAPH_MAX_DIMS);
        break;
      }
      t.ndim = vi->type.ndim;
      for (int d = 0; d < t.ndim && !rc; d++) {
        const OnnxDim *dim = &vi->type.dims[d];
        if (dim->kind == ONNX_DIM_VALUE)
          t.shape[d] = dim->value;
        else
          rc = kiln_set_error("input '%s' has a dynamic dimension %d%s%s%s; bind it with --input-shapes \"%s:[...]\"",
                              vi->name, d, dim->kind == ONNX_DIM_PARAM ? " ('" : "",
                              dim->kind == ONNX_DIM_PARAM ? dim->param : "", dim->kind == ONNX_DIM_PARAM ? "')" : "",
                              vi->name);
      }
      if (rc) break;
    }
    GNode *v = graph_var(im->g, vi->name, t);
    pm_put(&im->values, kstrdup(vi->name), v);
  }
  free(used);
  return rc;
}

Graph *onnx_import(const OnnxModel *m, int nshapes, const InputShape *shapes) {
  const OnnxGraph *og = m->graph;
  int64_t opset = onnx_model_opset(m, "");
  if (opset < 0) opset = 1;
  if (opset < 7 || opset > 17)
    return kiln_set_error("%s: ONNX opset %lld is not supported (Kiln supports opsets 7 to 17)", m->path, (long long)opset),
           NULL;
  Importer im;
  memset(&im, 0, sizeof im);
  im.model = m;
  im.opset = opset;
  im.g = graph_new();
  pm_init_str(&im.values);
  pm_init_str(&im.initializers);
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  int rc = 0;
  for (int i = 0; i < og->ninitializers; i++) pm_put(&im.initializers, og->initializers[i].name, (void *)&og->initializers[i]);
  if (og->nsparse_initializers) rc = kiln_set_error("%s: sparse initializers are not supported", m->path);
  if (!rc) rc = bind_inputs(&im, og, nshapes, shapes);
  for (int i = 0; i < og->nnodes && !rc; i++) {
    const OnnxNode *n = &og->nodes[i];
    im.node = n;
    if (*n->domain && strcmp(n->domain, "ai.onnx")) {
      rc = kiln_set_error("unsupported operator '%s' of domain '%s' (node '%s')", n->op_type, n->domain, n->name);
      break;
    }
    OnnxHandler h = onnx_find_handler(n->op_type);
    if (!h) {
      rc = kiln_set_error("unsupported ONNX operator '%s' (node '%s', opset %lld)", n->op_type, n->name, (long long)opset);
      break;
    }
    for (int k = 0; k < n->ninputs && !rc; k++)
      if (*n->inputs[k] && !lookup(&im, n->inputs[k]))
        rc = pm_has(&im.initializers, n->inputs[k])
                 ? kiln_error_context("%s node '%s'", n->op_type, n->name)
                 : kiln_set_error("%s node '%s': input '%s' is not produced by any earlier node, initializer or graph input",
                                  n->op_type, n->name, n->inputs[k]);
    if (rc) break;
    rc = h(&im);
    for (int k = 0; k < n->noutputs && !rc; k++)
      if (*n->outputs[k] && !pm_has(&im.values, n->outputs[k]))
        rc = imp_error(&im, "output %d ('%s') is not supported by Kiln", k, n->outputs[k]);
  }
  for (int i = 0; i < og->noutputs && !rc; i++) {
    GNode *v = lookup(&im, og->outputs[i].name);
    if (!v) rc = kiln_set_error("graph output '%s' is not produced by any node", og->outputs[i].name);
    else graph_add_output(im.g, v);
  }
  if (!rc && og->noutputs == 0) rc = kiln_set_error("%s: the graph has no outputs", m->path);
  kiln_arena_pop();
  kiln_arena_free(scratch);
  pm_free(&im.values);
  pm_free(&im.initializers);
  if (rc) {
    graph_free(im.g);
    return NULL;
  }
  /* drop what the outputs do not use (folded shape arithmetic) */
  Graph *g = pass_dce(im.g);
  graph_free(im.g);
  return g;
}

Graph *kiln_import_onnx(const char *path, const char *input_shapes) {
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  InputShape *shapes = NULL;
  int n = parse_input_shapes(input_shapes, &shapes);
  Graph *g = NULL;
  if (n >= 0) {
    OnnxModel *m = onnx_model_load(path);
    if (m) {
      g = onnx_import(m, n, shapes);
      onnx_model_free(m);
    }
  }
  kiln_arena_pop();
  kiln_arena_free(scratch);
  return g;
}
