/*
 * api_graph.c - graph.*: TVM's Relay model flow in the C API.  Import an
 * ONNX model into a graph (relay.frontend.from_onnx), print it, optimize
 * it, give its weights new values, and build it (relay.build) into a
 * loaded module that holds the kernels, the graph JSON and the params, for
 * the graph executor of kiln/runtime.h.  Also the executor's timer,
 * runtime.graph_executor.benchmark (TVM's time_evaluator over "run").
 *
 * A graph travels as a KILN_OBJECT handle to a KGraph (tag KOBJ_GRAPH).
 * Unlike the IR objects, which live in an arena until the process exits, a
 * graph owns memory - its arena and its constants' data, the weights
 * included - so it has a free function, graph.free, which the binding calls
 * once (Python: the finalizer); the handle is gone after it.  Functions
 * never change a graph: graph.optimize and graph.bind_params return a new
 * one, whose constants share the data of the old by view (kiln_array_view
 * keeps it alive), so a graph may be freed before the graphs made from it.
 *
 * The "params" of an imported graph are TVM's: the model's initializers
 * that the graph uses, by name, as constants (graph.param hands out views
 * of their data, no copies).  graph.optimize folds them into new constants
 * (batch-norm scales, layouts), so an optimized graph has none of its own.
 *
 * Built modules go to a private temporary directory that lives until the
 * process exits (as te builds do), so runtime.module_export can copy the
 * file later.
 */
#include "api.h"

#include <stdlib.h>
#include <string.h>

#include "../frontend/onnx/import.h"
#include "../graph/backend/build.h"

static int ret_array(KilnValue *ret, int *ret_code, DLTensor *t) {
  ret->v_handle = t;
  *ret_code = KILN_NDARRAY;
  return 0;
}

/* A new KGraph owning g (freed on failure).  Its params: the constants of g
 * named in names[0..n) (NULL: none). */
KGraph *api_kgraph_new(Graph *g, int opt_level, int n, const char *const *names) {
  KGraph *kg = calloc(1, sizeof *kg);
  GNode **params = calloc((size_t)(n > 0 ? n : 1), sizeof *params);
  if (!kg || !params) {
    free(kg);
    free(params);
    graph_free(g);
    return kiln_set_error("out of memory"), NULL;
  }
  kg->okind = KOBJ_GRAPH;
  kg->g = g;
  kg->opt_level = opt_level;
  kg->params = params;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes.len; k++) {
      GNode *node = g->nodes.data[k];
      if (node->kind == GN_CONST && !strcmp(node->name, names[i])) {
        kg->params[kg->nparams++] = node;
        break;
      }
    }
  return kg;
}

static void kgraph_free(KGraph *kg) {
  if (!kg) return;
  graph_free(kg->g);
  free(kg->params);
  kg->okind = KOBJ_NONE; /* a stale handle reads as no graph, not as a graph */
  free(kg);
}

static const char **param_names(const KGraph *kg) {
  const char **names = KNEWN(const char *, kg->nparams + 1);
  for (int i = 0; i < kg->nparams; i++) names[i] = kg->params[i]->name;
  return names;
}

/* A copy of g without its unreachable nodes (constants shared by view). */
static Graph *copy_graph(Graph *g) { return graph_rewrite(g, NULL, NULL); }

static int ret_graph(const ApiCall *c, KilnValue *ret, int *ret_code, KGraph *kg) {
  if (!kg) return api_fail(c);
  return api_ret_obj(c, ret, ret_code, kg);
}

void api_graph_text(StrBuf *sb, void *obj) {
  KGraph *kg = obj;
  char *text = graph_to_text(kg->g);
  sb_puts(sb, text);
  free(text);
}

/* ---- import ---- */

/* Input shapes from argument 1 on: nothing, one str ("data:[1,3,224,224]",
 * the CLI's syntax), or (name, dims) pairs with dims a list of ints. */
static int shape_args(const ApiCall *c, int *n, InputShape **shapes) {
  *n = 0;
  *shapes = NULL;
  if (c->n == 1 || (c->n == 2 && c->codes[1] == KILN_NULL)) return 0;
  if (c->n == 2) {
    const char *text = api_str(c, 1);
    if (!text) return -1;
    *n = parse_input_shapes(text, shapes);
    return *n < 0 ? api_fail(c) : 0;
  }
  if ((c->n - 1) % 2)
    return api_error(c, "input shapes are one str or (name, dims) pairs; got %d arguments after "
                     "the model", c->n - 1);
  *n = (c->n - 1) / 2;
  *shapes = KNEWN(InputShape, *n);
  for (int k = 0; k < *n; k++) {
    int i = 1 + 2 * k, nd;
    InputShape *s = &(*shapes)[k];
    if (!(s->name = api_str(c, i))) return -1;
    if (c->codes[i + 1] != KILN_OBJECT || !c->args[i + 1].v_handle ||
        *(const KObjKind *)c->args[i + 1].v_handle != KOBJ_ARRAY)
      return api_error(c, "argument %d (the shape of '%s') must be a list of ints", i + 1, s->name);
    Expr **dims = api_array_exprs(c, i + 1, c->args[i + 1].v_handle, &nd);
    if (!dims) return -1;
    if (nd > GRAPH_MAX_DIMS)
      return api_error(c, "the shape of '%s' has %d dimensions (at most %d)", s->name, nd,
                       GRAPH_MAX_DIMS);
    s->ndim = nd;
    for (int d = 0; d < nd; d++)
      if (!ir_is_const_int(dims[d], &s->shape[d]) || s->shape[d] < 0)
        return api_error(c, "the shape of '%s': dimension %d must be a non-negative int", s->name,
                         d);
    for (int j = 0; j < k; j++)
      if (!strcmp((*shapes)[j].name, s->name))
        return api_error(c, "two shapes are given for '%s'", s->name);
  }
  return 0;
}

/* from_onnx(model, shapes...): model is a path (str) or the model's bytes. */
API_FUNC(graph_from_onnx) {
  API_CALL;
  if (api_argc(&c, 1, -1)) return -1;
  if (c.codes[0] != KILN_STR && c.codes[0] != KILN_BYTES)
    return api_error(&c, "argument 0 (model) must be a path (str) or the model's bytes");
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  int nshapes;
  InputShape *shapes;
  OnnxModel *m = NULL;
  Graph *g = NULL;
  KGraph *kg = NULL;
  if (shape_args(&c, &nshapes, &shapes) == 0) {
    if (c.codes[0] == KILN_STR) {
      m = onnx_model_load(c.args[0].v_str);
    } else {
      const KilnBytes *b = c.args[0].v_handle;
      if (!b || !b->size)
        kiln_set_error("the model's bytes are empty");
      else
        m = onnx_model_load_bytes(b->data, b->size, NULL);
    }
    if (m) g = onnx_import(m, nshapes, shapes);
    if (g) {
      /* the initializers the graph uses, without nodes folded away at import */
      Graph *used = copy_graph(g);
      graph_free(g);
      const OnnxGraph *og = m->graph;
      const char **names = KNEWN(const char *, og->ninitializers + 1);
      for (int i = 0; i < og->ninitializers; i++) names[i] = og->initializers[i].name;
      if (used) kg = api_kgraph_new(used, -1, og->ninitializers, names);
    }
    onnx_model_free(m);
    if (!kg) api_fail(&c);
  }
  kiln_arena_pop();
  kiln_arena_free(scratch);
  if (!kg) return -1;
  return api_ret_obj(&c, ret, ret_code, kg);
}

API_FUNC(graph_free_fn) {
  API_CALL;
  KGraph *kg;
  if (api_argc(&c, 1, 1) || !(kg = api_obj(&c, 0, KOBJ_GRAPH))) return -1;
  kgraph_free(kg);
  return api_ret_null(ret, ret_code);
}

/* ---- text ---- */

API_FUNC(graph_as_text) {
  API_CALL;
  KGraph *kg;
  if (api_argc(&c, 1, 1) || !(kg = api_obj(&c, 0, KOBJ_GRAPH))) return -1;
  return api_ret_text(&c, ret, ret_code, graph_to_text(kg->g));
}

static int opt_level_arg(const ApiCall *c, int i, int *level) {
  int64_t v;
  if (api_int(c, i, &v)) return -1;
  if (v < 0 || v > 3) return api_error(c, "opt_level must be 0 to 3, got %lld", (long long)v);
  *level = (int)v;
  return 0;
}

/* fused_text(graph, opt_level): the graph with its fused groups as
 * primitive functions named as TVM names them (kiln show); fuses the graph
 * as it is, so pass an optimized one to see what a build compiles. */
API_FUNC(graph_fused_text) {
  API_CALL;
  KGraph *kg;
  int level = 0;
  if (api_argc(&c, 2, 2) || !(kg = api_obj(&c, 0, KOBJ_GRAPH)) || opt_level_arg(&c, 1, &level))
    return -1;
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  AVec groups = {0};
  int rc = graph_fuse(kg->g, level, &groups);
  char *text = rc ? NULL : graph_to_text_fused(kg->g, &groups);
  kiln_arena_pop();
  kiln_arena_free(a);
  if (rc) return api_fail(&c);
  return api_ret_text(&c, ret, ret_code, text);
}

/* ---- transforms ---- */

static Graph *optimized_copy(Graph *g, int level, const Target *t, GraphPrecision precision);

int api_precision_arg(const ApiCall *c, int i, int *out) {
  const char *s;
  GraphPrecision p = GRAPH_PRECISION_FP32;
  if (api_opt_str(c, i, &s)) return -1;
  if (s && graph_precision_parse(s, &p)) return api_fail(c);
  *out = (int)p;
  return 0;
}

Graph *api_graph_optimized(KGraph *kg, int level, const Target *t, int precision) {
  if (kg->opt_level >= 0 && precision != GRAPH_PRECISION_FP32) {
    kiln_set_error("precision %s: the graph is already optimized; pass the precision to optimize (or build the "
                   "unoptimized graph)",
                   graph_precision_name((GraphPrecision)precision));
    return NULL;
  }
  return kg->opt_level >= 0 ? kg->g : optimized_copy(kg->g, level, t, (GraphPrecision)precision);
}

static Graph *optimized_copy(Graph *g, int level, const Target *t, GraphPrecision precision) {
  Graph *copy = copy_graph(g);
  if (!copy) return NULL;
  GraphOptions go = {level, NULL, NULL, t, api_dispatch(), precision};
  return graph_optimize(copy, &go); /* frees copy */
}

API_FUNC(graph_optimize_fn) {
  API_CALL;
  KGraph *kg;
  int level = 0;
  int prec = 0;
  if (api_argc(&c, 2, 3) || !(kg = api_obj(&c, 0, KOBJ_GRAPH)) || opt_level_arg(&c, 1, &level) ||
      api_precision_arg(&c, 2, &prec))
    return -1;
  Graph *g = optimized_copy(kg->g, level, NULL, (GraphPrecision)prec);
  return ret_graph(&c, ret, ret_code, g ? api_kgraph_new(g, level, 0, NULL) : NULL);
}

static bool same_shape(const DLTensor *t, const TType *ty) {
  if (t->ndim != ty->ndim || !dt_eq(t->dtype, ty->dtype)) return false;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != ty->shape[d]) return false;
  return true;
}

/* An input variable of g by name, or NULL. */
static GNode *input_by_name(const Graph *g, const char *name) {
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind == GN_VAR && !strcmp(n->name, name)) return n;
  }
  return NULL;
}

/* bind_params(graph, name, tensor, ...): a copy of the graph whose
 * parameters of those names hold copies of the tensors' values; an input
 * of that name (a graph built with relay.*) becomes such a parameter. */
API_FUNC(graph_bind_params) {
  API_CALL;
  KGraph *kg;
  if (api_argc(&c, 1, -1) || !(kg = api_obj(&c, 0, KOBJ_GRAPH))) return -1;
  if ((c.n - 1) % 2) return api_error(&c, "expected (name, tensor) pairs after the graph");
  for (int i = 1; i < c.n; i += 2) {
    const char *name = api_str(&c, i);
    if (!name) return -1;
    if (c.codes[i + 1] != KILN_NDARRAY && c.codes[i + 1] != KILN_DLTENSOR)
      return api_error(&c, "argument %d (the value of '%s') must be a tensor", i + 1, name);
    const DLTensor *t = c.args[i + 1].v_handle;
    int k = 0;
    while (k < kg->nparams && strcmp(kg->params[k]->name, name)) k++;
    GNode *in = k == kg->nparams ? input_by_name(kg->g, name) : NULL;
    if (in) {
      /* an input of a graph built with relay.*: TVM binds params to the
       * function's variables; here the variable becomes a constant */
      if (kg->opt_level >= 0) return api_error(&c, "bind '%s' before optimizing", name);
      if (!same_shape(t, &in->type)) {
        TType got = ttype(t->dtype, t->ndim, t->shape);
        return api_error(&c, "input '%s' is %s, the value given is %s", name, ttype_str(&in->type), ttype_str(&got));
      }
      continue;
    }
    if (k == kg->nparams) {
      StrBuf sb = {0};
      for (int j = 0; j < kg->nparams && j < 8; j++) sb_printf(&sb, "%s%s", j ? ", " : "", kg->params[j]->name);
      if (kg->nparams > 8) sb_printf(&sb, ", ... (%d in all)", kg->nparams);
      api_error(&c, "the graph has no parameter '%s' (%s%s)", name,
                kg->nparams ? "parameters: " : "it has no parameters",
                kg->nparams ? sb.data : (kg->opt_level >= 0 ? "; bind before optimizing" : ""));
      sb_free(&sb);
      return -1;
    }
    if (!same_shape(t, &kg->params[k]->type)) {
      TType got = ttype(t->dtype, t->ndim, t->shape);
      return api_error(&c, "parameter '%s' is %s, the value given is %s", name,
                       ttype_str(&kg->params[k]->type), ttype_str(&got));
    }
  }
  Graph *ng = copy_graph(kg->g);
  if (!ng) return api_fail(&c);
  const char **names = KNEWN(const char *, kg->nparams + c.n);
  int nn = kg->nparams;
  memcpy(names, param_names(kg), sizeof(const char *) * (size_t)nn);
  for (int i = 1; i < c.n; i += 2) {
    GNode *in = input_by_name(ng, c.args[i].v_str);
    if (!in) continue;
    DLTensor *a = NULL;
    const DLTensor *t = c.args[i + 1].v_handle;
    if (kiln_array_empty(t->ndim, t->shape, t->dtype, (DLDevice){kDLCPU, 0}, &a) || kiln_array_copy(t, a)) {
      kiln_array_free(a);
      graph_free(ng);
      return api_fail(&c);
    }
    in->kind = GN_CONST; /* same name, type and place in the order */
    in->value = a;
    av_push(&ng->owned, a);
    names[nn++] = in->name;
  }
  KGraph *nk = api_kgraph_new(ng, kg->opt_level, nn, names);
  if (!nk) return api_fail(&c);
  for (int i = 1; i < c.n; i += 2) {
    const DLTensor *t = c.args[i + 1].v_handle;
    GNode *p = NULL;
    if (input_by_name(kg->g, c.args[i].v_str)) continue; /* bound above */
    for (int k = 0; k < nk->nparams && !p; k++)
      if (!strcmp(nk->params[k]->name, c.args[i].v_str)) p = nk->params[k];
    DLTensor *a = NULL;
    if (!p) {
      kgraph_free(nk);
      return api_error(&c, "parameter '%s' is not used by the graph", c.args[i].v_str);
    }
    if (kiln_array_empty(t->ndim, t->shape, t->dtype, (DLDevice){kDLCPU, 0}, &a) ||
        kiln_array_copy(t, a)) {
      kiln_array_free(a);
      kgraph_free(nk);
      return api_fail(&c);
    }
    p->value = a; /* the old view stays in owned and goes with the graph */
    av_push(&ng->owned, a);
  }
  return api_ret_obj(&c, ret, ret_code, nk);
}

/* build(graph, opt_level, target[, precision]) -> module */
API_FUNC(graph_build_fn) {
  API_CALL;
  KGraph *kg;
  int level = 0;
  const Target *target;
  int prec = 0;
  if (api_argc(&c, 3, 4) || !(kg = api_obj(&c, 0, KOBJ_GRAPH)) || opt_level_arg(&c, 1, &level) ||
      !(target = api_target(&c, 2)) || api_precision_arg(&c, 3, &prec))
    return -1;
  /* a symbolic batch alone, on the CPU: as kiln compile builds it, at
   * batch 1 called per sample, with batched variants at the default
   * batches in the same module (docs/symbolic_shapes.md) */
  const GSym *bs = kg->opt_level < 0 && !target_is_gpu(target) ? graph_batch_symbol(kg->g) : NULL;
  int64_t vb[GRAPH_DEFAULT_BATCHES], one = 1;
  Graph *vg[GRAPH_DEFAULT_BATCHES] = {0};
  int nv = bs ? graph_default_batches(kg->g, target, bs->hi, vb) : 0;
  char spec[128];
  if (bs) snprintf(spec, sizeof spec, "%s:%lld:%lld", bs->name, (long long)bs->lo, (long long)bs->hi);
  const char *batch_outer = bs ? spec : NULL;
  Graph *g;
  if (bs) {
    GraphOptions go = {level, NULL, NULL, target, api_dispatch(), (GraphPrecision)prec};
    int bad = 0;
    for (int i = 0; i < nv && !bad; i++) {
      Graph *gk = graph_specialize(kg->g, &vb[i]);
      if (!gk || !(vg[i] = graph_optimize(gk, &go))) bad = 1;
    }
    g = bad ? NULL : graph_specialize(kg->g, &one);
    if (g) g = graph_optimize(g, &go);
  } else {
    g = api_graph_optimized(kg, level, target, prec);
  }
  if (!g) {
    for (int i = 0; i < nv; i++) graph_free(vg[i]);
    return api_fail(&c);
  }
  char *dir = kiln_build_tmp_dir("kiln-graph-");
  KilnModule *m = NULL;
  int rc = -1;
  if (dir) {
    GraphBuildOptions bo;
    memset(&bo, 0, sizeof bo);
    bo.opt_level = level;
    bo.target = target;
    bo.dispatch = api_dispatch();
    bo.batch_outer = batch_outer;
    bo.variants = vg;
    bo.variant_batch = vb;
    bo.nvariants = nv;
    char *so = malloc(strlen(dir) + 16);
    if (so) {
      sprintf(so, "%s/model.so", dir);
      rc = graph_build(g, &bo, so, NULL);
      if (!rc) rc = kiln_module_load(so, &m);
      free(so);
    } else {
      kiln_set_error("out of memory");
    }
  }
  if (g != kg->g) graph_free(g);
  for (int i = 0; i < nv; i++) graph_free(vg[i]);
  if (rc) return api_fail(&c);
  ret->v_handle = m;
  *ret_code = KILN_MODULE;
  return 0;
}

/* standalone_c(graph, opt_level, dir, prefix, threads, isa, freestanding,
 * separate_weights): the model as standalone C in dir (graph/backend/export_c.c);
 * threads and isa are the CLI's words.  The ISA's vector width holds while
 * the graph is optimized and built (alter_layout blocks by it). */
API_FUNC(graph_export_c_fn) {
  API_CALL;
  KGraph *kg;
  int level = 0;
  const char *dir, *prefix, *threads, *isa;
  int64_t fs, sep;
  if (api_argc(&c, 8, 8) || !(kg = api_obj(&c, 0, KOBJ_GRAPH)) || opt_level_arg(&c, 1, &level) ||
      !(dir = api_str(&c, 2)) || !(prefix = api_str(&c, 3)) || !(threads = api_str(&c, 4)) || !(isa = api_str(&c, 5)) ||
      api_int(&c, 6, &fs) || api_int(&c, 7, &sep))
    return -1;
  static const char *const isas[] = {"native", "generic", "avx2", "avx512"};
  static const char *const kinds[] = {"none", "pthreads", "openmp"};
  CExportOptions eo;
  memset(&eo, 0, sizeof eo);
  int ti = -1;
  eo.isa = -1;
  for (int i = 0; i < 4; i++)
    if (!strcmp(isa, isas[i])) eo.isa = i;
  for (int i = 0; i < 3; i++)
    if (!strcmp(threads, kinds[i])) ti = i;
  if (eo.isa < 0) return api_error(&c, "isa '%s': expected native, generic, avx2 or avx512", isa);
  if (ti < 0) return api_error(&c, "threads '%s': expected none, pthreads or openmp", threads);
  eo.threads = (CThreads)ti;
  eo.prefix = prefix;
  eo.freestanding = fs != 0;
  eo.separate_weights = sep != 0;
  eo.opt_level = level;
  eo.model = "(python)";
  eo.dispatch = api_dispatch();
  int lanes = cexport_isa_lanes(eo.isa);
  eo.target = lanes > 0 ? target_host_lanes(lanes) : NULL;
  /* the graph is optimized again here: its layout depends on the ISA */
  Graph *g = kg->opt_level >= 0 && lanes == 0 ? kg->g : optimized_copy(kg->g, level, eo.target, GRAPH_PRECISION_FP32);
  int rc = g ? graph_export_c(g, &eo, dir, NULL) : -1;
  if (g && g != kg->g) graph_free(g);
  if (rc) return api_fail(&c);
  return api_ret_int(ret, ret_code, 0);
}

/* ---- inputs, outputs, params ---- */

static GNode *input_node(const Graph *g, int64_t index) {
  int64_t k = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind == GN_VAR && k++ == index) return n;
  }
  return NULL;
}

static int count_inputs(const Graph *g) {
  int k = 0;
  for (int i = 0; i < g->nodes.len; i++) k += ((GNode *)g->nodes.data[i])->kind == GN_VAR;
  return k;
}

API_FUNC(graph_num_inputs) {
  API_CALL;
  KGraph *kg;
  if (api_argc(&c, 1, 1) || !(kg = api_obj(&c, 0, KOBJ_GRAPH))) return -1;
  return api_ret_int(ret, ret_code, count_inputs(kg->g));
}

API_FUNC(graph_num_outputs) {
  API_CALL;
  KGraph *kg;
  if (api_argc(&c, 1, 1) || !(kg = api_obj(&c, 0, KOBJ_GRAPH))) return -1;
  return api_ret_int(ret, ret_code, kg->g->outputs.len);
}

API_FUNC(graph_opt_level) {
  API_CALL;
  KGraph *kg;
  if (api_argc(&c, 1, 1) || !(kg = api_obj(&c, 0, KOBJ_GRAPH))) return -1;
  return api_ret_int(ret, ret_code, kg->opt_level);
}

API_FUNC(graph_num_params) {
  API_CALL;
  KGraph *kg;
  if (api_argc(&c, 1, 1) || !(kg = api_obj(&c, 0, KOBJ_GRAPH))) return -1;
  return api_ret_int(ret, ret_code, kg->nparams);
}

typedef enum Which { W_INPUT, W_OUTPUT, W_PARAM } Which;
typedef enum Part { P_NAME, P_SHAPE, P_DTYPE, P_VALUE } Part;

/* (graph, index) -> the node; an error names the count. */
static GNode *indexed(const ApiCall *c, Which w) {
  KGraph *kg;
  int64_t i;
  if (api_argc(c, 2, 2) || !(kg = api_obj(c, 0, KOBJ_GRAPH)) || api_int(c, 1, &i)) return NULL;
  static const char *const what[] = {"input", "output", "parameter"};
  int n = w == W_INPUT ? count_inputs(kg->g) : w == W_OUTPUT ? kg->g->outputs.len : kg->nparams;
  if (i < 0 || i >= n)
    return api_error(c, "%s %lld does not exist (the graph has %d)", what[w], (long long)i, n), NULL;
  if (w == W_INPUT) return input_node(kg->g, i);
  return w == W_OUTPUT ? kg->g->outputs.data[i] : kg->params[i];
}

static int info(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res,
                Which w, Part part) {
  API_CALL;
  GNode *n = indexed(&c, w);
  if (!n) return -1;
  switch (part) {
  case P_NAME: return api_ret_str(ret, ret_code, n->name);
  case P_DTYPE: return api_ret_str(ret, ret_code, dt_str(n->type.dtype));
  case P_SHAPE: {
    DLTensor *t;
    int64_t nd = n->type.ndim;
    if (kiln_array_empty(1, &nd, (DLDataType){kDLInt, 64, 1}, (DLDevice){kDLCPU, 0}, &t))
      return api_fail(&c);
    if (nd) memcpy(t->data, n->type.shape, (size_t)nd * sizeof(int64_t));
    return ret_array(ret, ret_code, t);
  }
  case P_VALUE: {
    DLTensor *t;
    if (kiln_array_view(n->value, n->value->ndim, n->value->shape, n->value->dtype, &t))
      return api_fail(&c);
    return ret_array(ret, ret_code, t);
  }
  }
  KUNREACHABLE();
  return -1;
}

#define INFO(fn, w, part)                                                                          \
  API_FUNC(fn) { return info(args, codes, nargs, ret, ret_code, res, w, part); }
INFO(graph_input_name, W_INPUT, P_NAME)
INFO(graph_input_shape, W_INPUT, P_SHAPE)
INFO(graph_input_dtype, W_INPUT, P_DTYPE)
INFO(graph_output_shape, W_OUTPUT, P_SHAPE)
INFO(graph_output_dtype, W_OUTPUT, P_DTYPE)
INFO(graph_param_name, W_PARAM, P_NAME)
INFO(graph_param_value, W_PARAM, P_VALUE)
#undef INFO

/* ---- the executor's timer ---- */

/* benchmark(executor, number, repeat) -> float64 array [repeat]: the mean
 * time of one run, in ms, in each of `repeat` measurements of `number`
 * runs, after one warm-up run (TVM's time_evaluator). */
API_FUNC(ge_benchmark) {
  API_CALL;
  int64_t number, repeat;
  if (api_argc(&c, 3, 3)) return -1;
  if (c.codes[0] != KILN_HANDLE || !c.args[0].v_handle)
    return api_error(&c, "argument 0 (executor) must be an executor handle");
  if (api_int(&c, 1, &number) || api_int(&c, 2, &repeat)) return -1;
  if (number < 1 || repeat < 1 || number > INT32_MAX || repeat > INT32_MAX)
    return api_error(&c, "number and repeat must be at least 1, got %lld and %lld",
                     (long long)number, (long long)repeat);
  KilnGraphExecutor *ex = c.args[0].v_handle;
  DLTensor *t;
  if (kiln_array_empty(1, &repeat, (DLDataType){kDLFloat, 64, 1}, (DLDevice){kDLCPU, 0}, &t))
    return api_fail(&c);
  double *ms = t->data;
  int rc = kiln_graph_executor_run(ex);
  for (int64_t r = 0; r < repeat && !rc; r++) {
    double t0 = kiln_now_seconds();
    for (int64_t k = 0; k < number && !rc; k++) rc = kiln_graph_executor_run(ex);
    if (!rc) rc = kiln_graph_executor_sync(ex); /* GPU kernels run asynchronously */
    ms[r] = (kiln_now_seconds() - t0) * 1e3 / (double)number;
  }
  if (rc) {
    kiln_array_free(t);
    return api_fail(&c);
  }
  return ret_array(ret, ret_code, t);
}

const ApiEntry api_graph_funcs[] = {
    {"graph.from_onnx", graph_from_onnx, "model, shapes..."},
    {"graph.free", graph_free_fn, "graph"},
    {"graph.as_text", graph_as_text, "graph"},
    {"graph.fused_text", graph_fused_text, "graph, opt_level"},
    {"graph.optimize", graph_optimize_fn, "graph, opt_level, precision=None"},
    {"graph.bind_params", graph_bind_params, "graph, pairs..."},
    {"graph.build", graph_build_fn, "graph, opt_level, target, precision=None"},
    {"graph.standalone_c", graph_export_c_fn, "graph, opt_level, dir, prefix, threads, isa, freestanding, separate_weights"},
    {"graph.opt_level", graph_opt_level, "graph"},
    {"graph.num_inputs", graph_num_inputs, "graph"},
    {"graph.input_name", graph_input_name, "graph, index"},
    {"graph.input_shape", graph_input_shape, "graph, index"},
    {"graph.input_dtype", graph_input_dtype, "graph, index"},
    {"graph.num_outputs", graph_num_outputs, "graph"},
    {"graph.output_shape", graph_output_shape, "graph, index"},
    {"graph.output_dtype", graph_output_dtype, "graph, index"},
    {"graph.num_params", graph_num_params, "graph"},
    {"graph.param_name", graph_param_name, "graph, index"},
    {"graph.param", graph_param_value, "graph, index"},
    {"runtime.graph_executor.benchmark", ge_benchmark, "executor, number, repeat"},
    {NULL, NULL, NULL},
};
