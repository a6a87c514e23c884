/*
 * build.c - graph build: from an optimized graph to one compiled module.
 *
 * The graph is partitioned into fused groups.  Each group becomes one
 * kernel: placeholders p0, p1, ... for its inputs (as TVM names a fused
 * function's parameters), the ops' computes in order, and the schedule of
 * its anchor (a tuned template chosen through the op's strategy) or the
 * generic schedule.  Constants of one element used inside a group are
 * folded into the kernel as immediates; every other constant becomes a
 * parameter ("p0", "p1", ... in the graph JSON) stored in the params blob.
 *
 * Groups that compute the same function (fuse.c) share one kernel: it is
 * built once, under the group's func_name, and every such node of the
 * graph JSON calls it (TVM's compile-engine cache).
 *
 * The kernels are generated as C split over a few translation units that
 * are compiled in parallel, and linked with the graph JSON (TVM's format,
 * plus Kiln's per-node "kiln_ops"/"kiln_task"/"kiln_config" attributes for
 * profiles), the params (an index and the data, each array 64-byte
 * aligned, so the executor uses them in place: docs/formats.md) and the
 * lowered IR embedded as binary blobs.
 */
#include "build.h"
#include "../../knob/knob.h"
#include "strategy.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A constant of one element is folded into kernels as an immediate. */
static bool inline_const(GNode *n) { return n->kind == GN_CONST && ttype_numel(&n->type) == 1 && n->type.ndim <= GRAPH_MAX_DIMS; }

/* A compute of the given type whose every element is the constant. */
static Tensor *const_tensor(GNode *n) {
  double v = gnode_scalar_value(n);
  Expr **vars = te_axis_vars(n->type.ndim, NULL);
  Expr **shape = KNEWN(Expr *, n->type.ndim + 1);
  for (int i = 0; i < n->type.ndim; i++) shape[i] = ir_i32(n->type.shape[i]);
  return te_compute(kfmt("const_%d", n->id), n->type.ndim, shape, vars, ir_const(v, n->type.dtype), "elemwise");
}

/* An identity compute over t (when an op's compute returns its input). */
static Tensor *copy_tensor(Tensor *t) {
  Expr **vars = te_axis_vars(t->ndim, NULL);
  return te_compute("T_copy", t->ndim, t->shape, vars, te_read(t, t->ndim, vars), "elemwise");
}

/* In place: a group of elementwise and broadcast ops reads each element of
 * an input shaped like its output only to compute the output's element at
 * the same index, so the output may take over that input's memory when
 * the group is its last reader (the memory planner decides).  The input
 * chosen is the first one computed by another kernel (arguments and
 * params keep their storage anyway); 1 + its index, or 0. */
static int inplace_input(const FusedGroup *fg, const GroupInfo *info) {
  for (int k = 0; k < fg->nodes.len; k++)
    if (((GNode *)fg->nodes.data[k])->op->pattern > PAT_BROADCAST) return 0;
  for (int i = 0; i < info->inputs.len; i++) {
    GNode *in = info->inputs.data[i];
    if (in->kind == GN_CALL && ttype_eq(&in->type, &fg->out->type)) return i + 1;
  }
  return 0;
}

/* A symbolic input's shape for a kernel.  The generated code takes a
 * symbol's value from the first argument dimension that is exactly that
 * Var, so a dimension that is an expression of the symbols (the
 * (H + 1) / 2 after a stride-2 convolution) becomes a Var of its own,
 * one per distinct expression in the group (`fresh`, keyed by its text);
 * the kernel's output shape then follows from its inputs' sizes, and the
 * generated code checks it against the shape the executor evaluated. */
static Expr **kernel_shape(const TType *t, PtrMap *fresh) {
  Expr **s = ttype_shape_exprs(t);
  for (int d = 0; d < t->ndim; d++) {
    if (!t->sym->dim[d] || t->sym->dim[d]->kind == EK_Var) continue;
    const char *key = ir_expr_str(t->sym->dim[d]);
    Expr *v = pm_get(fresh, key);
    if (!v) {
      v = ir_var(kfmt("sym%d", fresh->len), DT_I32);
      pm_put(fresh, key, v);
    }
    s[d] = v;
  }
  return s;
}

/* Build the compute of one group and its schedule; fills args/nargs. */
LoweredFunc *graph_build_group(FusedGroup *fg, const GraphBuildOptions *opt, GroupInfo *info) {
  int nin = fg->inputs.len;
  Tensor **args = KNEWN(Tensor *, nin + 1);
  PtrMap map = {0}; /* GNode -> Tensor */
  PtrMap fresh = {0};
  fresh.strkeys = 1;
  int np = 0;
  for (int i = 0; i < nin; i++) {
    GNode *in = fg->inputs.data[i];
    if (inline_const(in)) {
      pm_put(&map, in, const_tensor(in));
      continue;
    }
    Tensor *p = ttype_is_symbolic(&in->type)
                    ? te_placeholder(kfmt("p%d", np), in->type.ndim, kernel_shape(&in->type, &fresh), in->type.dtype)
                    : te_placeholder_c(kfmt("p%d", np), in->type.ndim, in->type.shape, in->type.dtype);
    args[np++] = p;
    pm_put(&map, in, p);
    av_push(&info->inputs, in);
  }
  pm_free(&fresh);
  /* the anchor's strategy first: its template and config may shape the
   * compute (dense's lane count) as well as the schedule */
  Strategy st;
  memset(&st, 0, sizeof st);
  bool gpu = target_is_gpu(opt->target);
  /* a GPU target takes TVM's CUDA templates for conv2d and dense
   * (strategy_gpu.c), the generic GPU schedule for the rest */
  /* a symbolic group takes the generic schedule: templates and their
   * configs are per static workload (docs/symbolic_shapes.md) */
  bool symbolic = ttype_is_symbolic(&fg->out->type);
  if (!symbolic && fg->anchor && fg->anchor->op->strategy && opt->opt_level >= 1) {
    const Target *tg = opt->target ? opt->target : target_host();
    DispatchContext *own = opt->dispatch ? NULL : dispatch_context_new(), *dc = opt->dispatch ? opt->dispatch : own;
    int src = gpu ? graph_gpu_strategy(fg->anchor, tg, dc, &st) : fg->anchor->op->strategy(fg->anchor, tg, dc, &st);
    dispatch_context_free(own);
    if (src) {
      kiln_error_context("%s (node '%s')", fg->anchor->op->name, fg->anchor->name);
      pm_free(&map);
      return NULL;
    }
    if (st.task_name) {
      info->task = kfmt("%s %s", st.task_name, st.task_desc ? st.task_desc : "");
      info->config_source = st.config_source;
    }
  }
  Tensor *out = NULL, *anchor_t = NULL;
  /* the others' strategy: the target alone (the scatters take another form on a GPU) */
  Strategy bare = {.target = opt->target ? opt->target : target_host()};
  for (int k = 0; k < fg->nodes.len; k++) {
    GNode *n = fg->nodes.data[k];
    Tensor **ins = KNEWN(Tensor *, n->nargs + 1);
    for (int a = 0; a < n->nargs; a++) {
      ins[a] = pm_get(&map, n->args[a]);
      KASSERT(ins[a]);
    }
    if (n->op->host) {
      kiln_set_error("operator %s (node '%s') runs as a function of Kiln's runtime (%s), which has no kernel to "
                     "generate: a model with string operators runs only through Kiln's graph executor, not as "
                     "standalone C", n->op->name, n->name, n->op->host);
      pm_free(&map);
      return NULL;
    }
    if (!n->op->compute) {
      kiln_set_error("operator %s (node '%s') has no kernel; it should have been removed by an earlier pass", n->op->name,
                     n->name);
      pm_free(&map);
      return NULL;
    }
    Tensor *t = gpu && n == fg->anchor && st.task_name
                    ? st.tmpl->compute(st.target, st.wl, st.config, n->nargs, ins)
                    : n->op->compute(n, ins, n == fg->anchor && st.task_name ? &st : &bare);
    if (!t) {
      kiln_error_context("%s (node '%s')", n->op->name, n->name);
      pm_free(&map);
      return NULL;
    }
    pm_put(&map, n, t);
    if (n == fg->anchor) anchor_t = t;
    out = t;
  }
  pm_free(&map);
  if (out->kind == TE_PLACEHOLDER || (np && av_find(&(AVec){(void **)args, np, np}, out) >= 0)) out = copy_tensor(out);
  args[np] = out;
  Schedule *s = te_create_schedule(1, &out);
  if (!s) return NULL;
  int rc;
  if (st.task_name)
    rc = graph_schedule_anchor(s, out, anchor_t, &st);
  else if (gpu)
    rc = topi_schedule_gpu_generic(s, out, opt->target->max_threads_per_block < 256 ? opt->target->max_threads_per_block : 256);
  else
    rc = topi_schedule_generic(s, 1, &out);
  if (rc) {
    kiln_error_context("scheduling %s", fg->name);
    return NULL;
  }
  LowerOptions lo = {0};
  lo.no_vector = opt->no_vector;
  lo.dump_after = opt->dump_lower;
  lo.serial_small_parallel = true;
  if (gpu) target_lower_options(opt->target, &lo);
  LoweredFunc *f = kiln_lower(s, np + 1, args, fg->func_name, &lo);
  if (!f) kiln_error_context("lowering %s", fg->name);
  info->inplace = inplace_input(fg, info);
  if (f) f->may_alias = info->inplace > 0;
  return f;
}

/* A group of reshapes only computes nothing: the graph JSON names it
 * "__nop" (TVM's reshape-only functions) and the memory planner gives its
 * output the input's storage, so no kernel copies the tensor.  Only for a
 * static graph without the batch loop, and an input some kernel computes
 * (a model input or a parameter keeps its copy: an input's memory is the
 * caller's to change between runs). */
bool graph_reshape_alias(const Graph *g, const FusedGroup *fg, const GraphBuildOptions *opt) {
  if (g->syms.len || opt->batch_outer || fg->inputs.len != 1) return false;
  for (int k = 0; k < fg->nodes.len; k++)
    if (((GNode *)fg->nodes.data[k])->op->id != OP_RESHAPE) return false;
  const GNode *in = fg->inputs.data[0];
  return in->kind == GN_CALL && !in->op->host && !in->type.sym && !fg->out->type.sym &&
         in->type.dtype.code == fg->out->type.dtype.code && in->type.dtype.bits == fg->out->type.dtype.bits;
}

/* A group that is one concatenation along an axis with only 1s before it
 * (blocked channels at batch 1) writes its inputs end to end: the graph
 * JSON marks it "kiln_concat" and the memory planner may place the inputs
 * as views in its output, so its kernel need not run
 * (kiln_graph_plan_memory_views has the rule).  Only for a static CPU
 * graph without the batch loop, with the kernel's inputs the op's
 * arguments in order, each computed by a kernel. */
bool graph_concat_view(const Graph *g, const FusedGroup *fg, const GroupInfo *info, const GraphBuildOptions *opt) {
  const GNode *c = fg->out;
  if (g->syms.len || !opt || opt->batch_outer || (opt->target && target_is_gpu(opt->target)) || fg->nodes.len != 1 ||
      c->op->id != OP_CONCATENATE || info->host || info->alias || info->inputs.len != c->nargs || c->type.sym)
    return false;
  int64_t axis = gattr_int(&c->attrs, "axis", 0);
  if (axis < 0) axis += c->type.ndim;
  for (int d = 0; d < axis; d++)
    if (c->type.shape[d] != 1) return false;
  for (int i = 0; i < c->nargs; i++) {
    const GNode *in = c->args[i];
    if (info->inputs.data[i] != in || in->kind != GN_CALL || in->op->host || in->type.sym) return false;
  }
  return true;
}

/* A group that calls an earlier group's kernel: its inputs, as
 * build_group would list them, and the kernel's task. */
void graph_build_share_group(FusedGroup *fg, const GroupInfo *kernel, GroupInfo *info) {
  for (int i = 0; i < fg->inputs.len; i++) {
    GNode *in = fg->inputs.data[i];
    if (!inline_const(in)) av_push(&info->inputs, in);
  }
  info->task = kernel->task;
  info->config_source = kernel->config_source;
  info->inplace = kernel->inplace ? inplace_input(fg, info) : 0;
}

static cJSON *str_list(const char *tag, AVec *items) {
  cJSON *pair = cJSON_CreateArray(), *list = cJSON_CreateArray();
  cJSON_AddItemToArray(pair, cJSON_CreateString(tag));
  for (int i = 0; i < items->len; i++) cJSON_AddItemToArray(list, cJSON_CreateString(items->data[i]));
  cJSON_AddItemToArray(pair, list);
  return pair;
}

static const char *ops_list(FusedGroup *fg) {
  StrBuf sb = {0};
  for (int i = 0; i < fg->nodes.len; i++) sb_printf(&sb, "%s%s", i ? "," : "", ((GNode *)fg->nodes.data[i])->op->name);
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}

/* Whether run-time value s is an element of n: the graph input it names,
 * or the dd.bind node of a value computed by kernels. */
static bool holds_value(const GNode *n, const GSym *s) {
  if (n->kind == GN_VAR) return !strcmp(n->name, s->value_of);
  return n->kind == GN_CALL && (n->op->flags & OPF_BINDS_VALUES) &&
         !strcmp(gattr_str(&n->attrs, "value_of", ""), s->value_of);
}

/* The model's name for n when n is one of g's outputs (ONNX "logits"),
 * which the node's own name (an input's, a parameter's p<i>, a kernel's)
 * is not; NULL otherwise. */
static const char *model_output_name(const Graph *g, const GNode *n) {
  for (int k = 0; k < g->outputs.len; k++)
    if (g->outputs.data[k] == n && graph_output_name(g, k)) return graph_output_name(g, k);
  return NULL;
}

static void add_output_name(cJSON *o, const Graph *g, const GNode *n) {
  const char *name = model_output_name(g, n);
  if (!name) return;
  cJSON *attrs = cJSON_CreateObject();
  cJSON_AddStringToObject(attrs, "kiln_output_name", name);
  cJSON_AddItemToObject(o, "attrs", attrs);
}

/* Graph JSON in TVM's format; entry ids equal node ids (one output each). */
static char *graph_json(Graph *g, AVec *groups, GroupInfo *infos, AVec *params, PtrMap *param_index, PtrMap *node_of,
                        const int64_t *storage, const GraphBuildOptions *opt) {
  const char *batch_outer = opt ? opt->batch_outer : NULL;
  /* a run-time shape value is an element of a graph input the graph takes
   * or of a value it computes (dd.bind) */
  for (int i = 0; i < g->syms.len; i++) {
    const GSym *s = g->syms.data[i];
    bool found = !s->value_of;
    for (int k = 0; k < g->nodes.len && !found; k++) found = holds_value(g->nodes.data[k], s);
    if (!found)
      return kiln_set_error("the run-time shape value '%s' is element %d of the value '%s', which the built "
                            "graph does not take or compute",
                            s->name, s->value_elem, s->value_of),
             NULL;
  }
  cJSON *root = cJSON_CreateObject(), *nodes = cJSON_CreateArray(), *argn = cJSON_CreateArray(), *heads = cJSON_CreateArray(),
        *rowptr = cJSON_CreateArray();
  AVec shapes = {0}, dtypes = {0};
  int nid = 0;
  cJSON *shape_list = cJSON_CreateArray();
  /* inputs, then parameters, then kernels, in that order */
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind != GN_VAR) continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", "null");
    cJSON_AddStringToObject(o, "name", n->name);
    cJSON_AddItemToObject(o, "inputs", cJSON_CreateArray());
    add_output_name(o, g, n);
    cJSON_AddItemToArray(nodes, o);
    cJSON_AddItemToArray(argn, cJSON_CreateNumber(nid));
    pm_put(node_of, n, (void *)(intptr_t)(nid + 1));
    av_push(&shapes, n);
    nid++;
  }
  for (int i = 0; i < params->len; i++) {
    GNode *n = params->data[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", "null");
    /* a param's name is its index among the artifact's params (the
     * batched variants share them) */
    intptr_t gi = param_index ? (intptr_t)pm_get(param_index, n) - 1 : i;
    cJSON_AddStringToObject(o, "name", kfmt("p%d", (int)gi));
    cJSON_AddItemToObject(o, "inputs", cJSON_CreateArray());
    add_output_name(o, g, n);
    cJSON_AddItemToArray(nodes, o);
    cJSON_AddItemToArray(argn, cJSON_CreateNumber(nid));
    pm_put(node_of, n, (void *)(intptr_t)(nid + 1));
    av_push(&shapes, n);
    nid++;
  }
  for (int i = 0; i < groups->len; i++) {
    FusedGroup *fg = groups->data[i];
    GroupInfo *info = &infos[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", "tvm_op");
    cJSON_AddStringToObject(o, "name", fg->name);
    cJSON *attrs = cJSON_CreateObject();
    cJSON_AddStringToObject(attrs, "func_name", info->host ? info->host->host : info->alias ? "__nop" : fg->func_name);
    if (info->host) cJSON_AddStringToObject(attrs, "kiln_host", gattr_str(&fg->out->attrs, "host_attrs", "{}"));
    /* a data-dependent op (ops/datadep.c): the output dimension it reports
     * and that dimension's upper bound, which the executor binds and sizes
     * (or with kiln_report_grow, its first guess, grown when too small) */
    if (info->host && gattr_int(&fg->out->attrs, "report", -1) >= 0) {
      cJSON_AddStringToObject(attrs, "kiln_report", kfmt("%lld", (long long)gattr_int(&fg->out->attrs, "report", -1)));
      cJSON_AddStringToObject(attrs, "kiln_report_cap", gattr_str(&fg->out->attrs, "report_cap", ""));
      if (gattr_int(&fg->out->attrs, "report_grow", 0)) cJSON_AddStringToObject(attrs, "kiln_report_grow", "1");
    }
    cJSON_AddStringToObject(attrs, "num_inputs", kfmt("%d", info->inputs.len));
    cJSON_AddStringToObject(attrs, "num_outputs", "1");
    cJSON_AddStringToObject(attrs, "flatten_data", "0");
    cJSON_AddStringToObject(attrs, "kiln_ops", ops_list(fg));
    if (info->task) cJSON_AddStringToObject(attrs, "kiln_task", info->task);
    if (info->config_source) cJSON_AddStringToObject(attrs, "kiln_config", info->config_source);
    if (info->inplace) cJSON_AddStringToObject(attrs, "kiln_inplace", kfmt("%d", info->inplace - 1));
    if (graph_concat_view(g, fg, info, opt)) cJSON_AddStringToObject(attrs, "kiln_concat", "1");
    /* the model's name for this output (ONNX "logits"), which the node's
     * name (the kernel's) is not */
    if (model_output_name(g, fg->out)) cJSON_AddStringToObject(attrs, "kiln_output_name", model_output_name(g, fg->out));
    cJSON_AddItemToObject(o, "attrs", attrs);
    cJSON *ins = cJSON_CreateArray();
    for (int k = 0; k < info->inputs.len; k++) {
      intptr_t id = (intptr_t)pm_get(node_of, info->inputs.data[k]);
      KASSERT(id > 0);
      cJSON *e = cJSON_CreateArray();
      cJSON_AddItemToArray(e, cJSON_CreateNumber((double)(id - 1)));
      cJSON_AddItemToArray(e, cJSON_CreateNumber(0));
      cJSON_AddItemToArray(e, cJSON_CreateNumber(0));
      cJSON_AddItemToArray(ins, e);
    }
    cJSON_AddItemToObject(o, "inputs", ins);
    cJSON_AddItemToArray(nodes, o);
    pm_put(node_of, fg->out, (void *)(intptr_t)(nid + 1));
    av_push(&shapes, fg->out);
    nid++;
  }
  for (int i = 0; i < g->outputs.len; i++) {
    intptr_t id = (intptr_t)pm_get(node_of, g->outputs.data[i]);
    KASSERT(id > 0);
    cJSON *e = cJSON_CreateArray();
    cJSON_AddItemToArray(e, cJSON_CreateNumber((double)(id - 1)));
    cJSON_AddItemToArray(e, cJSON_CreateNumber(0));
    cJSON_AddItemToArray(e, cJSON_CreateNumber(0));
    cJSON_AddItemToArray(heads, e);
  }
  for (int i = 0; i <= nid; i++) cJSON_AddItemToArray(rowptr, cJSON_CreateNumber(i));
  for (int i = 0; i < shapes.len; i++) {
    GNode *n = shapes.data[i];
    cJSON *s = cJSON_CreateArray();
    for (int d = 0; d < n->type.ndim; d++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)n->type.shape[d]));
    cJSON_AddItemToArray(shape_list, s);
    av_push(&dtypes, (void *)dt_str(n->type.dtype));
  }
  cJSON_AddItemToObject(root, "nodes", nodes);
  cJSON_AddItemToObject(root, "arg_nodes", argn);
  cJSON_AddItemToObject(root, "heads", heads);
  cJSON *attrs = cJSON_CreateObject();
  cJSON *sp = cJSON_CreateArray();
  cJSON_AddItemToArray(sp, cJSON_CreateString("list_shape"));
  cJSON_AddItemToArray(sp, shape_list);
  cJSON_AddItemToObject(attrs, "shape", sp);
  cJSON_AddItemToObject(attrs, "dltype", str_list("list_str", &dtypes));
  /* symbolic sizes (docs/symbolic_shapes.md): the symbols "N:lo:hi", and
   * per entry its dimensions' postfix expressions joined by ';' ("" for a
   * constant dimension, "" for a static entry) */
  bool values = false; /* a run-time value that only its bounds check (CumSum's axis) */
  for (int i = 0; i < g->syms.len; i++) values |= ((const GSym *)g->syms.data[i])->value_of != NULL;
  if (graph_is_symbolic(g) || values) {
    AVec syms = {0}, exprs = {0};
    for (int i = 0; i < g->syms.len; i++) {
      const GSym *s = g->syms.data[i];
      if (!s->value_of) {
        av_push(&syms, (void *)kfmt("%s:%lld:%lld", s->name, (long long)s->lo, (long long)s->hi));
        continue;
      }
      /* a run-time shape value: "NAME:lo:hi:ENTRY:ELEM", the entry of the
       * graph input (or of the dd.bind node) whose element it is */
      int e = -1;
      for (int k = 0; k < shapes.len && e < 0; k++) {
        const GNode *n = shapes.data[k];
        if (holds_value(n, s)) e = k;
      }
      if (s->value_scale != 0) /* a float value: "...:SCALE", the symbol floor(x * SCALE) */
        av_push(&syms, (void *)kfmt("%s:%lld:%lld:%d:%d:%.17g", s->name, (long long)s->lo, (long long)s->hi, e,
                                    s->value_elem, s->value_scale));
      else
        av_push(&syms, (void *)kfmt("%s:%lld:%lld:%d:%d", s->name, (long long)s->lo, (long long)s->hi, e, s->value_elem));
    }
    for (int i = 0; i < shapes.len; i++) {
      const TType *t = &((GNode *)shapes.data[i])->type;
      StrBuf sb = {0};
      for (int d = 0; ttype_is_symbolic(t) && d < t->ndim; d++) {
        StrBuf one = {0};
        if (t->sym->dim[d]) sym_postfix(&one, t->sym->dim[d]); /* checked by graph_build */
        sb_printf(&sb, "%s%s", d ? ";" : "", one.data ? one.data : "");
        sb_free(&one);
      }
      av_push(&exprs, (void *)kstrdup(sb.data ? sb.data : ""));
      sb_free(&sb);
    }
    cJSON_AddItemToObject(attrs, "kiln_symbols", str_list("list_str", &syms));
    cJSON_AddItemToObject(attrs, "kiln_sym_shape", str_list("list_str", &exprs));
  }
  /* the model's sequences and optionals (docs/sequences.md): every input
   * and output value, in order */
  if (graph_has_structure(g)) cJSON_AddItemToObject(attrs, "kiln_values", str_list("list_str", &g->boundary));
  /* the batch as an outer loop: which entries carry the batch (the inputs
   * and every kernel's output; not the parameters) */
  if (batch_outer) {
    AVec b = {0};
    av_push(&b, (void *)batch_outer);
    cJSON_AddItemToObject(attrs, "kiln_batch", str_list("list_str", &b));
    cJSON *be = cJSON_CreateArray(), *l = cJSON_CreateArray();
    cJSON_AddItemToArray(be, cJSON_CreateString("list_int"));
    for (int i = 0; i < shapes.len; i++) {
      GNode *n = shapes.data[i];
      cJSON_AddItemToArray(l, cJSON_CreateNumber(n->kind != GN_CONST ? 1 : 0));
    }
    cJSON_AddItemToArray(be, l);
    cJSON_AddItemToObject(attrs, "kiln_batch_entry", be);
    /* the batched variants in the same artifact: graph_json_b<K> each */
    if (opt->nvariants > 0) {
      cJSON *bv = cJSON_CreateArray(), *vl = cJSON_CreateArray();
      cJSON_AddItemToArray(bv, cJSON_CreateString("list_int"));
      for (int v = 0; v < opt->nvariants; v++) cJSON_AddItemToArray(vl, cJSON_CreateNumber((double)opt->variant_batch[v]));
      cJSON_AddItemToArray(bv, vl);
      cJSON_AddItemToObject(attrs, "kiln_batch_variants", bv);
    }
  }
  if (storage) {
    cJSON *sid = cJSON_CreateArray(), *l = cJSON_CreateArray();
    cJSON_AddItemToArray(sid, cJSON_CreateString("list_int"));
    for (int i = 0; i < nid; i++) cJSON_AddItemToArray(l, cJSON_CreateNumber((double)storage[i]));
    cJSON_AddItemToArray(sid, l);
    cJSON_AddItemToObject(attrs, "storage_id", sid);
  }
  cJSON_AddItemToObject(root, "attrs", attrs);
  cJSON_AddItemToObject(root, "node_row_ptr", rowptr);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

static int write_emit(const char *dir, int nunits, char **units, const char *json, const void *params, size_t psize) {
  mkdir(dir, 0755);
  for (int u = 0; u < nunits; u++)
    if (kiln_write_file(kfmt("%s/module%d.c", dir, u), units[u], strlen(units[u]))) return -1;
  if (kiln_write_file(kfmt("%s/graph.json", dir), json, strlen(json))) return -1;
  return kiln_write_file(kfmt("%s/params.bin", dir), params, psize);
}

/* Whether two constants hold the same type and bytes. */
static bool same_const(GNode *a, GNode *b) {
  if (!ttype_eq(&a->type, &b->type)) return false;
  size_t n = kiln_array_nbytes(a->value);
  return n == kiln_array_nbytes(b->value) &&
         !memcmp((char *)a->value->data + a->value->byte_offset, (char *)b->value->data + b->value->byte_offset, n);
}

/* The params of one graph (local) among the artifact's (global): the
 * constants its kernels read, and its constant outputs.  A constant equal
 * to one already taken, by this graph or an earlier one of the artifact
 * (a weight two layers share, transformed alike for each; a weight a
 * batched variant lays out as the batch-1 graph does), is replaced by it,
 * so the same bytes are embedded once.  by_hash: content hash -> the first
 * constant with it, kept across the artifact's graphs. */
static void collect_params(Graph *g, AVec *groups, GroupInfo *infos, AVec *local, AVec *global, PtrMap *by_hash) {
  for (int i = 0; i < groups->len; i++)
    for (int k = 0; k < infos[i].inputs.len; k++) {
      GNode *in = infos[i].inputs.data[k];
      if (in->kind != GN_CONST || av_find(local, in) >= 0) continue;
      DLTensor *v = in->value;
      uint64_t h = hash_bytes((char *)v->data + v->byte_offset, kiln_array_nbytes(v), (uint64_t)in->type.ndim) | 1;
      GNode *first = pm_get(by_hash, (void *)(uintptr_t)h);
      if (first && same_const(first, in)) {
        infos[i].inputs.data[k] = first;
        if (av_find(local, first) < 0) av_push(local, first);
        continue;
      }
      if (!first) pm_put(by_hash, (void *)(uintptr_t)h, in);
      av_push(local, in);
      av_push(global, in);
    }
  for (int i = 0; i < g->outputs.len; i++) {
    GNode *o = g->outputs.data[i];
    if (o->kind != GN_CONST || av_find(local, o) >= 0) continue;
    av_push(local, o);
    if (av_find(global, o) < 0) av_push(global, o);
  }
}

void graph_build_params(Graph *g, AVec *groups, GroupInfo *infos, AVec *params) {
  PtrMap by_hash = {0};
  AVec global = {0};
  collect_params(g, groups, infos, params, &global, &by_hash);
  pm_free(&by_hash);
}

/* Whether a batch runs faster sample by sample through the batch-1
 * kernels than through kernels built at the batch: where the graph's
 * constants (its weights) fit half of t's L3 and one sample's largest
 * activation is past its L2 (build.h; docs/symbolic_shapes.md: MobileNet-V2,
 * 14 MB of weights, ran batch 8 17 % faster one sample at a time, ResNet-18,
 * 47 MB, 5 % slower).  A sample's bytes: a batch-
 * symbolic tensor's over its batch, or, in a static graph at batch n > 1,
 * those of a tensor whose dimension 0 is n over n. */
static bool samples_pay(const Graph *g, const Target *t, int64_t n) {
  int64_t weights = 0, sample = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const GNode *nd = g->nodes.data[i];
    int64_t numel = ttype_numel(&nd->type);
    if (nd->kind == GN_VAR || numel > INT64_MAX / 16) continue;
    int64_t b = numel * dt_bytes(nd->type.dtype);
    if (nd->kind == GN_CONST) weights += b;
    else if (nd->type.ndim) {
      if (nd->type.sym && nd->type.sym->dim[0] && nd->type.shape[0] > 0) b /= nd->type.shape[0];
      else if (n > 1 && nd->type.shape[0] == n) b /= n;
      if (b > sample) sample = b;
    }
  }
  return weights <= target_l3_bytes(t) / 2 && sample > target_l2_bytes(t);
}

char *graph_batch_loop_shapes(const Graph *g, const Target *t) {
  if (graph_is_symbolic(g)) return NULL;
  StrBuf sb = {0};
  int64_t n = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const GNode *nd = g->nodes.data[i];
    if (nd->kind != GN_VAR) continue;
    if (nd->type.ndim < 1 || nd->type.shape[0] < 2 || (n && nd->type.shape[0] != n) || strpbrk(nd->name, ":[],; ")) {
      sb_free(&sb);
      return NULL;
    }
    n = nd->type.shape[0];
    sb_printf(&sb, "%s:[batch", nd->name);
    for (int d = 1; d < nd->type.ndim; d++) sb_printf(&sb, ",%lld", (long long)nd->type.shape[d]);
    sb_puts(&sb, "] ");
  }
  if (!n || !samples_pay(g, t, n)) {
    sb_free(&sb);
    return NULL;
  }
  sb_printf(&sb, "batch>=%lld,batch<=%lld", (long long)n, (long long)n);
  return sb_steal(&sb);
}

int graph_default_batches(const Graph *g, const Target *t, int64_t hi, int64_t *sizes) {
  static const int64_t def[GRAPH_DEFAULT_BATCHES] = {4, 8};
  if (samples_pay(g, t, 0)) return 0;
  int n = 0;
  for (int i = 0; i < GRAPH_DEFAULT_BATCHES; i++)
    if (def[i] <= hi) sizes[n++] = def[i];
  return n;
}

/* The graph JSON of one of the artifact's graphs, with its memory planned
 * (the storage ids travel in the JSON, as TVM plans at build time). */
static char *planned_json(Graph *g, AVec *groups, GroupInfo *infos, AVec *params, PtrMap *param_index,
                          const GraphBuildOptions *opt) {
  PtrMap node_of = {0};
  char *json = graph_json(g, groups, infos, params, param_index, &node_of, NULL, opt);
  pm_free(&node_of);
  if (!json) return NULL;
  char *planned = NULL;
  if (kiln_graph_json_plan_memory(json, strlen(json), &planned, NULL) == 0) {
    free(json);
    json = strdup(planned);
    kiln_free(planned);
  }
  return json;
}

/* String tensors flow only between inputs, host ops and outputs
 * (docs/strings.md): no kernel reads or writes one, no constant holds one
 * (params carry no text), and host ops run on the CPU with static shapes
 * (but the data-dependent ones, whose outputs are symbolic by nature). */
static int graph_check_strings(Graph *g, const GraphBuildOptions *opt) {
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    bool str = dt_is_string(n->type.dtype);
    for (int a = 0; n->kind == GN_CALL && a < n->nargs; a++) str = str || dt_is_string(n->args[a]->type.dtype);
    if (n->kind == GN_CONST && str)
      return kiln_set_error("constant '%s' is a string tensor: Kiln does not embed text in modules; feed it as an "
                            "input instead", n->name);
    if (n->kind != GN_CALL) continue;
    if (n->op->host && opt && opt->target && target_is_gpu(opt->target))
      return kiln_set_error("%s (node '%s') runs on the CPU only: compile the model for the CPU", n->op->name, n->name);
    if (n->op->host && !(n->op->flags & OPF_DATA_DEPENDENT) && ttype_is_symbolic(&n->type))
      return kiln_set_error("%s (node '%s') needs static shapes: give the sizes with --input-shapes", n->op->name,
                            n->name);
    if (str && !n->op->host)
      return kiln_set_error("%s (node '%s') on string tensors: Kiln runs only its string operators on strings "
                            "(StringConcat, StringNormalizer, RegexFullMatch, Equal, Cast, LabelEncoder)",
                            n->op->name, n->name);
  }
  return 0;
}

int graph_build(Graph *g, const GraphBuildOptions *opt, const char *so_path, GraphBuildStats *stats) {
  if (graph_is_symbolic(g) && opt && opt->target && target_is_gpu(opt->target))
    return graph_require_static(g, "building for a GPU target");
  for (int i = 0; opt && opt->batch_outer && i < g->nodes.len; i++) { /* per-sample kernels: batch 1 everywhere */
    const GNode *n = g->nodes.data[i];
    if (n->kind != GN_CONST && (n->type.ndim < 1 || n->type.shape[0] != 1))
      return kiln_set_error("the batch as an outer loop needs batch 1 in every tensor, but '%s' is %s", n->name,
                            ttype_str(&n->type));
  }
  int nv = opt && opt->batch_outer ? opt->nvariants : 0;
  for (int v = 0; v < nv; v++) {
    const Graph *vg = opt->variants[v];
    if (graph_is_symbolic(vg) || opt->variant_batch[v] < 2 || (v && opt->variant_batch[v] <= opt->variant_batch[v - 1]))
      return kiln_set_error("batched variant %d (batch %lld): the variants must be static graphs at increasing batches "
                            "above 1", v, (long long)opt->variant_batch[v]);
  }
  if (graph_check_strings(g, opt)) return -1;
  for (int i = 0; i < g->nodes.len; i++) { /* every shape expression must be one the runtime evaluates */
    const TType *ty = &((GNode *)g->nodes.data[i])->type;
    for (int d = 0; ttype_is_symbolic(ty) && d < ty->ndim; d++) {
      StrBuf sb = {0};
      int bad = ty->sym->dim[d] ? sym_postfix(&sb, ty->sym->dim[d]) : 0;
      sb_free(&sb);
      if (bad) return kiln_error_context("node '%s'", ((GNode *)g->nodes.data[i])->name);
    }
  }
  GraphBuildOptions defaults;
  memset(&defaults, 0, sizeof defaults);
  defaults.opt_level = 3;
  if (!opt) opt = &defaults;
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  /* one target for every group: the caller's, else the host */
  GraphBuildOptions with_target = *opt;
  if (!with_target.target) with_target.target = target_host();
  DispatchContext *own = NULL; /* made for this build when none is given */
  if (!with_target.dispatch) with_target.dispatch = own = dispatch_context_new();
  opt = &with_target;
  const Target *t = opt->target;
  int rc = 0;
  /* the graphs of the artifact: g, then its batched variants (the same
   * model specialized to batch K), whose kernels are named b<K>_... */
  /* ... then the bodies of its run-time Loops (Graph.bodies), kernels
   * named loop<K>_... */
  int nb = g->bodies.len;
  int ng = 1 + nv + nb, total = 0, done = 0;
  Graph **gs = KNEWN(Graph *, ng + 1);
  AVec *groups = KNEWN(AVec, ng + 1);
  GroupInfo **infos = KNEWN(GroupInfo *, ng + 1);
  gs[0] = g;
  for (int v = 0; v < nv; v++) gs[v + 1] = opt->variants[v];
  for (int b = 0; b < nb; b++) gs[1 + nv + b] = g->bodies.data[b];
  for (int k = 1 + nv; k < ng && !rc; k++) {
    if (((Graph *)gs[k])->bodies.len)
      rc = kiln_set_error("the body of loop %d holds a Loop of its own with a run-time trip count or condition: "
                          "nested run-time loops are not supported", k - 1 - nv);
    else if (graph_check_strings(gs[k], opt))
      rc = kiln_error_context("the body of loop %d", k - 1 - nv);
  }
  for (int k = 0; k < ng && !rc; k++) {
    graph_fuse(gs[k], opt->opt_level, &groups[k]);
    infos[k] = KNEWN(GroupInfo, groups[k].len + 1);
    total += groups[k].len;
    for (int i = 0; k && i < groups[k].len; i++) {
      FusedGroup *fg = groups[k].data[i];
      if (fg->kernel != fg->id) fg->func_name = ((FusedGroup *)groups[k].data[fg->kernel])->func_name;
      else if (k <= nv) fg->func_name = kfmt("b%lld_%s", (long long)opt->variant_batch[k - 1], fg->func_name);
      else fg->func_name = kfmt("loop%d_%s", k - 1 - nv, fg->func_name);
    }
  }
  LoweredFunc **funcs = KNEWN(LoweredFunc *, total + 1);
  int nfuncs = 0;
  for (int k = 0; k < ng && !rc; k++) {
    GraphBuildOptions ko = *opt;
    if (k) ko.batch_outer = NULL; /* a variant is a static graph */
    /* owner[j]: the group whose built function kernel j's groups call (the
     * first of them that is not an alias), -1 before it is built */
    int *owner = KNEWN(int, groups[k].len + 1);
    for (int i = 0; i < groups[k].len; i++) owner[i] = -1;
    for (int i = 0; i < groups[k].len && !rc; i++) {
      FusedGroup *fg = groups[k].data[i];
      if (fg->out->op->host) { /* a function of the runtime: its inputs, no kernel */
        infos[k][i].host = fg->out->op;
        for (int j = 0; j < fg->inputs.len; j++) av_push(&infos[k][i].inputs, fg->inputs.data[j]);
      } else if (graph_reshape_alias(gs[k], fg, &ko)) {
        av_push(&infos[k][i].inputs, fg->inputs.data[0]);
        infos[k][i].alias = true;
      } else if (fg->kernel != fg->id && owner[fg->kernel] >= 0) {
        graph_build_share_group(fg, &infos[k][owner[fg->kernel]], &infos[k][i]);
      } else {
        owner[fg->kernel] = i;
        funcs[nfuncs] = graph_build_group(fg, &ko, &infos[k][i]);
        if (!funcs[nfuncs++]) rc = -1;
      }
      if (opt->progress) opt->progress(++done, total, opt->progress_ud);
    }
  }
  /* the params: one list for the artifact (named p0, p1, ... in it), each
   * graph naming the ones it reads */
  AVec params = {0};
  AVec *local = KNEWN(AVec, ng + 1);
  PtrMap by_hash = {0}, param_index = {0};
  for (int k = 0; k < ng && !rc; k++) collect_params(gs[k], &groups[k], infos[k], &local[k], &params, &by_hash);
  for (int i = 0; i < params.len; i++) pm_put(&param_index, params.data[i], (void *)(intptr_t)(i + 1));
  char **jsons = KNEWN(char *, ng + 1);
  void *pbytes = NULL, *pindex = NULL, *pdata = NULL;
  size_t psize = 0, pindex_size = 0, pdata_size = 0;
  if (!rc) {
    for (int k = 0; k < ng && !rc; k++) {
      GraphBuildOptions ko = *opt;
      if (k) ko.batch_outer = NULL;
      if (k > nv) ko.nvariants = 0;
      jsons[k] = planned_json(gs[k], &groups[k], infos[k], &local[k], &param_index, &ko);
      if (!jsons[k]) rc = -1;
    }
    const char **names = KNEWN(const char *, params.len + 1);
    DLTensor **arrays = KNEWN(DLTensor *, params.len + 1);
    for (int i = 0; i < params.len; i++) {
      names[i] = kfmt("p%d", i);
      arrays[i] = ((GNode *)params.data[i])->value;
    }
    /* TVM's params blob only for --emit; the module embeds them aligned,
     * to be used in place (docs/formats.md) */
    if (!rc && opt->emit_dir) rc = kiln_params_save(params.len, names, arrays, &pbytes, &psize);
    if (!rc) rc = kiln_params_save_embedded(params.len, names, arrays, &pindex, &pindex_size, &pdata, &pdata_size);
  }
  if (!rc) {
    int nunits = opt->nunits > 0 ? opt->nunits : (nfuncs > 24 ? 4 : nfuncs > 6 ? 2 : 1);
    StrBuf ir = {0};
    for (int i = 0; i < nfuncs; i++) {
      sb_printf(&ir, "// function %s\n", funcs[i]->name);
      sb_puts(&ir, kiln_lowered_str(funcs[i]));
    }
    KBlob *blobs = KNEWN(KBlob, 8 + nv + nb);
    blobs[0] = (KBlob){"graph_json", jsons[0], strlen(jsons[0])};
    blobs[1] = (KBlob){"param_index", pindex, pindex_size};
    blobs[2] = (KBlob){"param_data", pdata, pdata_size};
    blobs[3] = (KBlob){"lowered_ir", ir.data ? ir.data : "", ir.len};
    int nblobs = 4;
    for (int v = 0; v < nv; v++)
      blobs[nblobs++] = (KBlob){kfmt("graph_json_b%lld", (long long)opt->variant_batch[v]), jsons[v + 1], strlen(jsons[v + 1])};
    for (int b = 0; b < nb; b++)
      blobs[nblobs++] = (KBlob){kfmt("graph_json_loop%d", b), jsons[1 + nv + b], strlen(jsons[1 + nv + b])};
    CompileOptions dco = opt->copt;
    if (opt->emit_dir) dco.keep_dir = opt->emit_dir;
    if (kiln_device_blobs(funcs, nfuncs, &dco, blobs, &nblobs)) rc = -1;
    char **units = rc ? NULL : t->kind->codegen(funcs, nfuncs, nblobs, blobs, nunits);
    if (!units) rc = -1;
    if (units && nfuncs < nunits) nunits = nfuncs > 0 ? nfuncs : 1;
    if (!rc && opt->emit_dir) rc = write_emit(opt->emit_dir, nunits, units, jsons[0], pbytes, psize);
    for (int v = 0; v < nv && !rc && opt->emit_dir; v++)
      rc = kiln_write_file(kfmt("%s/graph_b%lld.json", opt->emit_dir, (long long)opt->variant_batch[v]), jsons[v + 1],
                           strlen(jsons[v + 1]));
    if (!rc) rc = t->kind->compile(nunits, (const char **)units, nblobs, blobs, so_path, &opt->copt);
    sb_free(&ir);
    for (int u = 0; units && u < nunits; u++) free(units[u]);
    free(units);
  }
  if (!rc && stats) {
    stats->nkernels = nfuncs;
    stats->nparams = params.len;
    stats->param_bytes = 0;
    for (int i = 0; i < params.len; i++) stats->param_bytes += kiln_array_nbytes(((GNode *)params.data[i])->value);
  }
  for (int k = 0; k < ng; k++) free(jsons[k]);
  kiln_free(pbytes);
  kiln_free(pindex);
  kiln_free(pdata);
  pm_free(&by_hash);
  pm_free(&param_index);
  kiln_arena_pop();
  kiln_arena_free(scratch);
  dispatch_context_free(own);
  return rc;
}
