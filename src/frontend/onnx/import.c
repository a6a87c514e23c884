/*
 * import.c - ONNX model -> Kiln graph (see import.h for the approach).
 *
 * This file is the driver: each node is looked up in the op table at its
 * version, checked (arity, attributes) and handed to its handler; subgraphs
 * and loop bodies import the same way; a model with symbolic sizes imports
 * again at other sizes of its symbols, which must agree with the first
 * import (check_second_pass).  The handlers' API is in
 * import_helpers.c, the graph inputs in import_inputs.c, the --input-shapes
 * text in input_shapes.c (shared state: import_internal.h).
 */
#include "import_internal.h"
#include "onnx_schema.h"
#include "ops/ops.h" /* lowp_widen ... (bfloat16 arithmetic) */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/passes/passes.h"

/* The table's row for node n at the node's version (onnx_version_resolve
 * finds it from the domain's opset; *version is set to it), or NULL + an
 * error naming the op, its domain and the node, or the op's version and
 * the versions Kiln has. */
static const OnnxOpEntry *find_op(Importer *im, const OnnxNode *n, int *version) {
  bool dflt = !*n->domain || !strcmp(n->domain, "ai.onnx");
  int64_t opset = dflt ? im->opset : onnx_model_opset(im->model, n->domain);
  const OnnxOpEntry *rows;
  int nrows = onnx_find_op_rows(n->domain, n->op_type, &rows);
  if (!nrows) {
    if (!dflt)
      kiln_set_error("unsupported operator '%s' of domain '%s' (node '%s')", n->op_type, n->domain, n->name);
    else
      kiln_set_error("unsupported ONNX operator '%s' (node '%s', opset %lld)", n->op_type, n->name, (long long)im->opset);
    return NULL;
  }
  int since[16], until[16];
  if (nrows > 16) nrows = 16;
  for (int i = 0; i < nrows; i++) since[i] = rows[i].since, until[i] = rows[i].until;
  int r = onnx_version_resolve(n->domain, n->op_type, opset < 1 ? 1 : opset, nrows, since, until, version);
  if (r < 0) {
    kiln_error_context("node '%s'", n->name);
    return NULL;
  }
  return &rows[r];
}

/* The node's inputs against the row: their number, and an empty name
 * only where the op's input is optional. */
static int check_arity(Importer *im, const OnnxOpEntry *e) {
  const OnnxNode *n = im->node;
  int lo = e->min_inputs, hi = e->max_inputs;
  if (n->ninputs < lo || (hi != ONNX_VARIADIC && n->ninputs > hi)) {
    const char *range = hi == ONNX_VARIADIC ? kfmt("at least %d", lo) : lo == hi ? kfmt("%d", lo) : kfmt("%d to %d", lo, hi);
    return imp_error(im, "has %d input%s, but %s takes %s at this opset: fix the model (onnx.checker.check_model "
                         "reports it too)",
                     n->ninputs, n->ninputs == 1 ? "" : "s", n->op_type, range);
  }
  for (int i = 0; i < n->ninputs; i++)
    if (!*n->inputs[i] && !(e->optional & (1u << (i < 31 ? i : 31))))
      return imp_error(im, "input %d is required, but the node gives it as '' (omitted)", i);
  return 0;
}

/* The node's attributes against its version's (onnx_attr_check.c). */
static int check_attrs(Importer *im, int version) {
  const OnnxNode *n = im->node;
  const OnnxOwnAttrs *own = onnx_own_attrs(n->domain, n->op_type);
  if (onnx_check_attrs(n, onnx_schema_find(n->domain, n->op_type), version, own ? own->attrs : NULL, own && own->open))
    return imp_error(im, "%s", kiln_get_error());
  return 0;
}

/* The node loop: each node's handler, with checks of its inputs and
 * attributes against its version, that its inputs exist, and that its
 * outputs were made with a supported data type. */
static int import_nodes(Importer *im, const OnnxGraph *og) {
  int rc = 0;
  const OnnxNode *parent = im->node;
  for (int i = 0; i < og->nnodes && !rc; i++) {
    const OnnxNode *n = &og->nodes[i];
    im->node = n;
    int version = 0;
    const OnnxOpEntry *e = find_op(im, n, &version);
    if (!e) {
      rc = -1;
      break;
    }
    if ((rc = check_arity(im, e)) || (rc = check_attrs(im, version))) break;
    for (int k = 0; k < n->ninputs && !rc; k++)
      if (*n->inputs[k] && !imp_lookup(im, n->inputs[k]) && !pm_get(&im->seqs, n->inputs[k]) && !pm_get(&im->opts, n->inputs[k]))
        rc = pm_has(&im->initializers, n->inputs[k])
                 ? kiln_error_context("%s node '%s'", n->op_type, n->name)
                 : kiln_set_error("%s node '%s': input '%s' is not produced by any earlier node, initializer or graph input",
                                  n->op_type, n->name, n->inputs[k]);
    for (int k = 0; k < n->ninputs && !rc && !onnx_op_takes_strings(n->op_type); k++) {
      GNode *v = *n->inputs[k] ? imp_lookup(im, n->inputs[k]) : NULL;
      if (v && dt_is_string(v->type.dtype))
        rc = imp_error(im, "input %d ('%s') is a string tensor: Kiln's string operators are StringConcat, "
                           "StringNormalizer, RegexFullMatch, Equal, Cast, CastLike and LabelEncoder", k, n->inputs[k]);
    }
    bool widen;
    if (rc || (rc = imp_check_lowp_inputs(im, &widen))) break;
    GNode **saved = widen ? lowp_widen(im) : NULL;
    if (widen && !saved) {
      rc = -1;
      break;
    }
    rc = e->fn(im);
    if (widen) {
      lowp_restore(im, saved);
      if (!rc) rc = lowp_narrow(im);
    }
    if (rc && !parent && im->overrides.len) {
      char *msg = kstrdup(kiln_get_error());
      rc = kiln_set_error("%s (--input-shapes changed %s, which the model declares otherwise, and this node's own "
                          "constants cannot take the new shape: give the model's size there, or export the model "
                          "with that dimension open)",
                          msg, im->overrides.data);
    }
    if (!rc && !strcmp(n->op_type, "Identity") && n->noutputs) imp_set_output_lowp(im, 0, imp_input_lowp(im, 0));
    if (!rc && !strcmp(n->op_type, "Constant") && n->noutputs) { /* a Constant holding a carried type */
      const OnnxAttr *va = onnx_attr_find(n, "value");
      DType dt;
      if (va && va->type == ONNX_ATTR_TENSOR && onnx_dtype_carrier(va->t->elem_type, &dt))
        imp_set_output_lowp(im, 0, va->t->elem_type);
    }
    for (int k = 0; k < n->noutputs && !rc; k++) {
      GNode *o = *n->outputs[k] ? pm_get(&im->values, n->outputs[k]) : NULL;
      if (*n->outputs[k] && !o && !pm_get(&im->seqs, n->outputs[k]) && !pm_get(&im->opts, n->outputs[k]))
        rc = imp_error(im, "output %d ('%s') is not supported by Kiln", k, n->outputs[k]);
      else if (o && imp_check_dtype(o->type.dtype, kfmt("output %d ('%s')", k, n->outputs[k])))
        rc = imp_error(im, "%s", kiln_get_error());
    }
  }
  im->node = parent;
  return rc;
}

int imp_subgraph(Importer *im, const OnnxGraph *g) {
  for (int i = 0; i < g->ninitializers; i++) {
    pm_put(&im->initializers, g->initializers[i].name, (void *)&g->initializers[i]);
    /* a re-imported body (an unrolled loop) must see its own initializer */
    if (pm_has(&im->values, g->initializers[i].name)) pm_put(&im->values, kstrdup(g->initializers[i].name), NULL);
  }
  if (g->nsparse_initializers) return imp_error(im, "sparse initializers in a subgraph are not supported");
  return import_nodes(im, g);
}

GNode *imp_value(Importer *im, const char *name) { return imp_lookup(im, name); }

/* The names og (and the graphs in its nodes' attributes) reads from
 * outside: neither its inputs, its initializers nor an earlier node's
 * outputs; each once, in order of first use. */
static void free_names(const OnnxGraph *og, PtrMap *defined, AVec *out) {
  for (int i = 0; i < og->ninputs; i++) pm_put(defined, og->inputs[i].name, (void *)1);
  for (int i = 0; i < og->ninitializers; i++) pm_put(defined, og->initializers[i].name, (void *)1);
  for (int i = 0; i < og->nnodes; i++) {
    const OnnxNode *n = &og->nodes[i];
    for (int k = 0; k < n->ninputs; k++)
      if (*n->inputs[k] && !pm_has(defined, n->inputs[k])) {
        pm_put(defined, n->inputs[k], (void *)1);
        av_push(out, (void *)n->inputs[k]);
      }
    for (int a = 0; a < n->nattrs; a++) {
      const OnnxAttr *at = &n->attrs[a];
      if (at->type == ONNX_ATTR_GRAPH && at->g) free_names(at->g, defined, out);
      for (int j = 0; at->type == ONNX_ATTR_GRAPHS && j < at->n; j++) free_names(at->graphs[j], defined, out);
    }
    for (int k = 0; k < n->noutputs; k++)
      if (*n->outputs[k]) pm_put(defined, n->outputs[k], (void *)1);
  }
  for (int i = 0; i < og->noutputs; i++)
    if (!pm_has(defined, og->outputs[i].name)) {
      pm_put(defined, og->outputs[i].name, (void *)1);
      av_push(out, (void *)og->outputs[i].name);
    }
}

Graph *imp_body_graph(Importer *im, const OnnxGraph *og, const TType *in_types, AVec *outer, AVec *outer_names) {
  Graph *outer_g = im->g, *bg = graph_new();
  bg->sym_pass = outer_g->sym_pass;
  PtrMap outer_values = im->values, defined = {0};
  pm_init_str(&defined);
  AVec names = {0};
  free_names(og, &defined, &names);
  pm_free(&defined);
  /* the body's own names, then the outer values it reads: constants are
   * copied in, the rest become inputs of the body */
  pm_init_str(&im->values);
  im->g = bg;
  int rc = 0;
  for (int i = 0; i < og->ninputs && !rc; i++) {
    TType t = sym_copy_type(bg, outer_g, &in_types[i]);
    GNode *v = graph_var(bg, og->inputs[i].name, t);
    if (!v) rc = -1;
    else pm_put(&im->values, kstrdup(og->inputs[i].name), v);
  }
  for (int i = 0; i < names.len && !rc; i++) {
    const char *name = names.data[i];
    PtrMap body_values = im->values; /* an outer lookup may add the constant it made */
    im->g = outer_g;
    im->values = outer_values;
    GNode *v = imp_lookup(im, name);
    outer_values = im->values;
    im->values = body_values;
    im->g = bg;
    if (!v) {
      if (pm_has(&im->seqs, name))
        rc = kiln_set_error("the body reads the sequence '%s' from outside: a loop run at run time takes tensors only",
                            name);
      continue; /* not produced anywhere: import_nodes says so */
    }
    GNode *b;
    if (v->kind == GN_CONST) {
      DLTensor *a;
      DLDevice cpu = {kDLCPU, 0};
      if (kiln_array_empty(v->value->ndim, v->value->shape, v->value->dtype, cpu, &a) || kiln_array_copy(v->value, a))
        rc = -1;
      b = rc ? NULL : graph_const(bg, name, a);
    } else {
      b = graph_var(bg, name, sym_copy_type(bg, outer_g, &v->type));
      av_push(outer, v);
      av_push(outer_names, (void *)name);
    }
    if (!b) rc = -1;
    else pm_put(&im->values, kstrdup(name), b);
  }
  if (!rc) rc = imp_subgraph(im, og);
  for (int i = 0; i < og->noutputs && !rc; i++) {
    GNode *v = pm_get(&im->values, og->outputs[i].name);
    if (!v && pm_has(&im->seqs, og->outputs[i].name))
      rc = kiln_set_error("body output %d ('%s') is a sequence: a loop run at run time gives tensors only", i,
                          og->outputs[i].name);
    else if (!v)
      rc = kiln_set_error("body output %d ('%s') is not produced", i, og->outputs[i].name);
    else if (!(rc = symval_refuse_output(im, og->outputs[i].name, v)))
      graph_add_named_output(bg, v, og->outputs[i].name);
  }
  pm_free(&im->values);
  im->values = outer_values;
  im->g = outer_g;
  if (rc) {
    graph_free(bg);
    return NULL;
  }
  return bg;
}

void imp_bind_value(Importer *im, const char *name, GNode *v) { pm_put(&im->values, kstrdup(name), v); }

Graph *onnx_import(const OnnxModel *m, int nshapes, const InputShape *shapes) {
  return onnx_import_bound(m, nshapes, shapes, 0, NULL);
}

static Graph *import_pass(const OnnxModel *m, int nshapes, const InputShape *shapes, int nvalues,
                          const InputValue *values, int pass);

/* The second import of a symbolic model, at other representative sizes:
 * each output's expressions evaluated at them must give that import's
 * shapes, else a constant of the model (a shape the exporter computed, a
 * folded Shape) depends on a size. */
static int check_second_pass(const Graph *g, const Graph *g2) {
  int64_t *vals = KNEWN(int64_t, g->syms.len + 1);
  StrBuf at = {0};
  for (int i = 0; i < g->syms.len; i++) {
    const GSym *s = g->syms.data[i], *s2 = graph_sym_find(g2, s->name);
    vals[i] = s2 ? s2->rep : s->rep;
    sb_printf(&at, "%s%s=%lld", i ? ", " : "", s->name, (long long)vals[i]);
  }
  int rc = 0;
  for (int i = 0; i < g->outputs.len && i < g2->outputs.len && !rc; i++) {
    const TType *t = &((GNode *)g->outputs.data[i])->type, *t2 = &((GNode *)g2->outputs.data[i])->type;
    bool ok = t->ndim == t2->ndim;
    for (int d = 0; ok && d < t->ndim; d++) {
      int64_t v = t->shape[d];
      if (t->sym && t->sym->dim[d] && !sym_eval(g, t->sym->dim[d], vals, &v)) ok = false;
      ok = ok && v == t2->shape[d];
    }
    if (!ok) {
      const char *name = graph_output_name(g, i);
      rc = kiln_set_error("output %d ('%s') is %s, but at %s the model gives %s: a constant of the model depends on "
                          "a size (a shape the exporter computed); give the sizes as numbers in --input-shapes",
                          i, name ? name : "", ttype_str(t), at.data, ttype_str(t2));
    }
  }
  if (!rc && g->outputs.len != g2->outputs.len) rc = kiln_set_error("the model's outputs change with the sizes");
  sb_free(&at);
  return rc;
}

Graph *onnx_import_bound(const OnnxModel *m, int nshapes, const InputShape *shapes, int nvalues,
                         const InputValue *values) {
  Graph *g = import_pass(m, nshapes, shapes, nvalues, values, 0);
  if (!g || !g->syms.len) return g;
  Graph *g2 = import_pass(m, nshapes, shapes, nvalues, values, 1);
  int rc = g2 ? check_second_pass(g, g2) : kiln_error_context("at other sizes of its symbols");
  graph_free(g2);
  if (rc) {
    graph_free(g);
    return NULL;
  }
  return g;
}

/* Graph output vi: a tensor, or a sequence or optional whose elements
 * become the graph outputs NAME[i] (an optional tensor: NAME), its
 * structure a line of the graph's boundary (docs/sequences.md). */
static int add_output(Importer *im, const OnnxValueInfo *vi) {
  const char *name = vi->name;
  GNode *v = imp_lookup(im, name);
  ImpSeq *q = v ? NULL : pm_get(&im->seqs, name);
  ImpOpt *o = v || q ? NULL : pm_get(&im->opts, name);
  if (!v && !q && !o) return kiln_set_error("graph output '%s' is not produced by any node", name);
  bool opt = vi->type.kind == ONNX_TYPE_OPTIONAL || o;
  if (o) v = o->t, q = o->s;
  const char *what;
  if (opt && !v && !q) what = "opt(none)";
  else if (v) what = opt ? "opt(tensor)" : "tensor";
  else what = kfmt(opt ? "opt(seq(%d))" : "seq(%d)", q->n);
  if (v && symval_refuse_output(im, name, v)) return -1;
  for (int k = 0; q && k < q->n; k++)
    if (symval_refuse_output(im, kfmt("%s[%d]", name, k), q->items[k])) return -1;
  if (v) graph_add_named_output(im->g, v, name);
  for (int k = 0; q && k < q->n; k++) graph_add_named_output(im->g, q->items[k], kfmt("%s[%d]", name, k));
  graph_add_boundary(im->g, kfmt("out %s %s", what, name));
  return 0;
}

static Graph *import_pass(const OnnxModel *m, int nshapes, const InputShape *shapes, int nvalues,
                          const InputValue *values, int pass) {
  const OnnxGraph *og = m->graph;
  int64_t opset = onnx_model_opset(m, "");
  if (opset < 0) opset = 1;
  if (opset > onnx_schema_newest_opset(""))
    return kiln_set_error("%s: ONNX opset %lld is not supported (Kiln supports opsets 1 to %d, those of onnx %s)", m->path,
                          (long long)opset, onnx_schema_newest_opset(""), onnx_schema_onnx_version),
           NULL;
  Importer im;
  memset(&im, 0, sizeof im);
  im.model = m;
  im.opset = opset;
  im.nbound = nvalues;
  im.bound = values;
  im.g = graph_new();
  im.g->sym_pass = pass;
  pm_init_str(&im.values);
  pm_init_str(&im.initializers);
  pm_init_str(&im.seqs);
  pm_init_str(&im.opts);
  pm_init_str(&im.lowp);
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  int rc = 0;
  for (int i = 0; i < og->ninitializers; i++) pm_put(&im.initializers, og->initializers[i].name, (void *)&og->initializers[i]);
  if (og->nsparse_initializers) rc = kiln_set_error("%s: sparse initializers are not supported", m->path);
  if (!rc) rc = imp_bind_inputs(&im, og, nshapes, shapes);
  if (!rc) rc = import_nodes(&im, og);
  for (int i = 0; i < og->noutputs && !rc; i++) rc = add_output(&im, &og->outputs[i]);
  if (!rc && og->noutputs == 0) rc = kiln_set_error("%s: the graph has no outputs", m->path);
  if (!rc && im.g->outputs.len == 0)
    rc = kiln_set_error("%s: every output is an empty sequence or optional: there is nothing to compute", m->path);
  kiln_arena_pop();
  kiln_arena_free(scratch);
  pm_free(&im.values);
  pm_free(&im.initializers);
  pm_free(&im.seqs);
  pm_free(&im.opts);
  sb_free(&im.overrides);
  pm_free(&im.lowp);
  pm_free(&im.shapevals);
  if (rc) {
    graph_free(im.g);
    return NULL;
  }
  /* drop what the outputs do not use (folded shape arithmetic) */
  Graph *g = pass_dce(im.g, NULL);
  graph_free(im.g);
  return g;
}

Graph *kiln_import_onnx(const char *path, const char *input_shapes) {
  return kiln_import_onnx_bound(path, input_shapes, 0, NULL);
}

Graph *onnx_import_text(const OnnxModel *m, const char *input_shapes, int nvalues, const InputValue *values) {
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  InputShape *shapes = NULL;
  int n = parse_input_shapes(input_shapes, &shapes);
  Graph *g = n >= 0 ? onnx_import_bound(m, n, shapes, nvalues, values) : NULL;
  kiln_arena_pop();
  kiln_arena_free(scratch);
  return g;
}

/* No scratch arena here: the model owns its arena, and onnx_import_text
 * pushes the import's own. */
Graph *kiln_import_onnx_bound(const char *path, const char *input_shapes, int nvalues, const InputValue *values) {
  OnnxModel *m = onnx_model_load(path);
  Graph *g = m ? onnx_import_text(m, input_shapes, nvalues, values) : NULL;
  onnx_model_free(m);
  return g;
}
