/*
 * control.c - ONNX's control flow with a static schedule: If on a
 * constant condition inlines one branch, on a run-time one runs both and
 * selects (the branches must agree in type and shape); Loop and Scan are
 * unrolled (a
 * Loop needs a constant trip count or a condition that folds to a
 * constant each iteration).
 *
 * A body is imported into the current graph with imp_subgraph, its formal
 * inputs bound to the values of the iteration; scan outputs are stacked
 * along a new axis.
 */
#include "ops.h"

/* ---- control flow with a static schedule: If on a constant condition
 * inlines one branch; Loop and Scan are unrolled (a Loop needs a constant
 * trip count or a condition that folds to a constant each iteration) ---- */

#define MAX_UNROLL 4096

static GNode *subgraph_output(Importer *im, const OnnxGraph *g, int k) {
  GNode *v = imp_value(im, g->outputs[k].name);
  if (!v) imp_error(im, "subgraph output '%s' is not produced", g->outputs[k].name);
  return v;
}

/* A value of any kind a body passes on: a tensor, a sequence or an
 * optional (the last two compile-time structures, docs/sequences.md). */
typedef struct AnyVal {
  GNode *t;
  ImpSeq *s;
  ImpOpt *o;
} AnyVal;

static bool any_named(Importer *im, const char *name, AnyVal *v) {
  v->t = imp_value(im, name);
  v->s = v->t ? NULL : imp_value_seq(im, name);
  v->o = v->t || v->s ? NULL : imp_value_opt(im, name);
  return v->t || v->s || v->o;
}

static void any_bind(Importer *im, const char *name, const AnyVal *v) {
  if (v->t) imp_bind_value(im, name, v->t);
  else if (v->s) imp_bind_seq(im, name, v->s);
  else imp_bind_opt(im, name, v->o);
}

static int any_set_output(Importer *im, int k, const AnyVal *v) {
  return v->t ? imp_set_output(im, k, v->t) : v->s ? imp_set_output_seq(im, k, v->s) : imp_set_output_opt(im, k, v->o);
}

/* If on a condition known only at run time: both branches are imported
 * (and both run), each output a where() over the condition.  The branches
 * must then give each output one type and shape, and a sequence or
 * optional output one structure (the same length, each element selected;
 * docs/sequences.md); branches that disagree need the condition at
 * compile time. */
static GNode *if_select(Importer *im, GNode *cb, GNode *a, GNode *e, const char *what) {
  const TType *ta = &a->type, *te = &e->type;
  bool same = dt_eq(ta->dtype, te->dtype) && ta->ndim == te->ndim && !ttype_is_symbolic(ta) && !ttype_is_symbolic(te);
  for (int d = 0; same && d < ta->ndim; d++) same = ta->shape[d] == te->shape[d];
  if (!same) {
    imp_const_input(im, 0);
    kiln_set_error("%s (%s is %s in then_branch and %s in else_branch: a run-time condition runs both branches and "
                   "selects, so they must agree)",
                   kiln_get_error(), what, ttype_str(ta), ttype_str(te));
    return NULL;
  }
  return imp_where(im, cb, a, e);
}

/* The elements of two sequences of one length, selected. */
static ImpSeq *if_select_seq(Importer *im, GNode *cb, const ImpSeq *a, const ImpSeq *e, int k) {
  if (a->n != e->n) {
    imp_const_input(im, 0);
    kiln_set_error("%s (output %d is a sequence of %d in then_branch and of %d in else_branch: a run-time condition "
                   "selects between sequences of one length only; the structure is fixed at compile time)",
                   kiln_get_error(), k, a->n, e->n);
    return NULL;
  }
  ImpSeq *q = KNEW(ImpSeq);
  q->n = a->n;
  q->dtype = a->dtype;
  q->items = KNEWN(GNode *, q->n + 1);
  for (int i = 0; i < q->n; i++)
    if (!(q->items[i] = if_select(im, cb, a->items[i], e->items[i], kfmt("output %d's element %d", k, i)))) return NULL;
  return q;
}

static int if_runtime(Importer *im, GNode *c) {
  if (ttype_is_symbolic(&c->type) || ttype_numel(&c->type) != 1)
    return imp_error(im, "cond must hold one value, got %s", ttype_str(&c->type));
  const char *br[2] = {"then_branch", "else_branch"};
  const OnnxGraph *g[2];
  int nout = N(im)->noutputs;
  AnyVal *val[2];
  for (int b = 0; b < 2; b++) {
    if (!(g[b] = onnx_attr_graph(N(im), br[b]))) return imp_error(im, "missing attribute '%s'", br[b]);
    if (g[b]->noutputs != nout) return imp_error(im, "%s has %d outputs, the node %d", br[b], g[b]->noutputs, nout);
    if (imp_subgraph(im, g[b])) return -1;
    val[b] = KNEWN(AnyVal, nout + 1);
    for (int k = 0; k < nout; k++)
      if (!any_named(im, g[b]->outputs[k].name, &val[b][k])) return imp_error(im, "subgraph output '%s' is not produced", g[b]->outputs[k].name);
  }
  GNode *cb = dt_is_bool(c->type.dtype) ? c : bin(im, "not_equal", c, imp_scalar_like(im, 0, c));
  int64_t none[1] = {0};
  cb = imp_reshape(im, cb, 0, none); /* a scalar: it broadcasts to any output */
  for (int k = 0; k < nout; k++) {
    const AnyVal *a = &val[0][k], *e = &val[1][k];
    AnyVal r = {0};
    const char *kinds[2];
    for (int b = 0; b < 2; b++) {
      const AnyVal *v = &val[b][k];
      kinds[b] = v->t ? "a tensor" : v->s ? "a sequence" : !v->o->t && !v->o->s ? "an empty optional"
                 : v->o->t ? "an optional tensor" : "an optional sequence";
    }
    if (strcmp(kinds[0], kinds[1])) {
      imp_const_input(im, 0); /* the error that names the graph inputs to bind */
      return kiln_set_error("%s (output %d is %s in then_branch and %s in else_branch: a run-time condition selects "
                            "between values of one structure only; the structure of sequences and optionals is "
                            "fixed at compile time)",
                            kiln_get_error(), k, kinds[0], kinds[1]);
    }
    if (a->t) {
      if (!(r.t = if_select(im, cb, a->t, e->t, kfmt("output %d", k)))) return -1;
    } else if (a->s) {
      if (!(r.s = if_select_seq(im, cb, a->s, e->s, k))) return -1;
    } else {
      r.o = KNEW(ImpOpt);
      if (a->o->t && !(r.o->t = if_select(im, cb, a->o->t, e->o->t, kfmt("output %d", k)))) return -1;
      if (a->o->s && !(r.o->s = if_select_seq(im, cb, a->o->s, e->o->s, k))) return -1;
    }
    if (imp_want_output(im, k) && any_set_output(im, k, &r)) return -1;
  }
  return 0;
}

int onnx_h_If(Importer *im) {
  GNode *c0 = imp_input(im, 0);
  if (c0 && c0->kind != GN_CONST) return if_runtime(im, c0);
  GNode *c = imp_const_input(im, 0);
  if (!c) return -1;
  if (ttype_numel(&c->type) != 1) return imp_error(im, "cond must hold one value, got %s", ttype_str(&c->type));
  bool take = imp_const_at(c, 0) != 0;
  const OnnxGraph *g = onnx_attr_graph(N(im), take ? "then_branch" : "else_branch");
  if (!g) return imp_error(im, "missing attribute '%s'", take ? "then_branch" : "else_branch");
  if (g->noutputs != N(im)->noutputs)
    return imp_error(im, "the branch has %d outputs, the node %d", g->noutputs, N(im)->noutputs);
  if (imp_subgraph(im, g)) return -1;
  for (int k = 0; k < g->noutputs; k++) {
    AnyVal v;
    if (!any_named(im, g->outputs[k].name, &v)) return imp_error(im, "subgraph output '%s' is not produced", g->outputs[k].name);
    if (any_set_output(im, k, &v)) return -1;
  }
  return 0;
}

/* Stack per-iteration values along a new axis (scan outputs). */
static GNode *stack(Importer *im, int n, GNode **vals, int axis) {
  if (n == 0) return imp_error(im, "a scan output of zero iterations has no known shape"), NULL;
  GNode **e = KNEWN(GNode *, n);
  for (int i = 0; i < n; i++)
    if (!(e[i] = imp_expand_dims(im, vals[i], axis))) return NULL;
  if (n == 1) return e[0];
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", axis);
  return imp_call(im, "concatenate", n, e, a);
}

/* The JSON list of names, for the runtime's attributes. */
static void json_names(StrBuf *sb, const char *key, int n, const char *const *names) {
  sb_printf(sb, ",\"%s\":[", key);
  for (int i = 0; i < n; i++) {
    sb_puts(sb, i ? ",\"" : "\"");
    for (const char *c = names[i]; *c; c++) {
      if (*c == '"' || *c == '\\') sb_puts(sb, "\\");
      sb_printf(sb, "%c", *c);
    }
    sb_puts(sb, "\"");
  }
  sb_puts(sb, "]");
}

/* The loop cannot run at run time (why): the error that names the graph
 * inputs to bind for the unrolled loop, with the reason. */
static int runtime_refused(Importer *im, GNode *m, const char *why) {
  char *w = kstrdup(why);
  imp_const_input(im, m && m->kind != GN_CONST ? 0 : 1);
  return kiln_set_error("%s (run at run time, the loop is not supported: %s)", kiln_get_error(), w);
}

/* A Loop whose trip count or condition is known only at run time
 * (docs/symbolic_shapes.md section 4d): the body becomes a graph of its
 * own (Graph.bodies), which the executor runs while i < M and the
 * condition holds; each output of the node is a loop.output call over
 * [M] [cond] the carried values and the outer values the body reads.  A
 * carried value keeps its shape; a scan output's first dimension is the
 * number of iterations run, a reported size bounded by M. */
static int loop_runtime(Importer *im, const OnnxGraph *body, int ncarry, int nscan) {
  GNode *m = imp_input(im, 0), *c = imp_input(im, 1);
  if (m && (ttype_is_symbolic(&m->type) || ttype_numel(&m->type) != 1 || !dt_eq(m->type.dtype, DT_I64)))
    return imp_error(im, "the trip count M must be one int64, got %s", ttype_str(&m->type));
  if (c && (ttype_is_symbolic(&c->type) || ttype_numel(&c->type) != 1 || !dt_is_bool(c->type.dtype)))
    return imp_error(im, "the condition must be one bool, got %s", ttype_str(&c->type));
  if (nscan && !m)
    return imp_error(im, "a loop with scan outputs needs the trip count M (their bound): one run by its condition "
                         "alone has no size for them");
  TType *types = KNEWN(TType, ncarry + 3);
  const char **names = KNEWN(const char *, ncarry + 3);
  types[0] = ttype(DT_I64, 0, NULL);
  types[1] = ttype(DT_BOOL, 0, NULL);
  GNode **carry = KNEWN(GNode *, ncarry + 1);
  for (int i = 0; i < ncarry; i++) {
    AnyVal any;
    if (!(carry[i] = imp_input(im, 2 + i))) {
      if (*N(im)->inputs[2 + i] && any_named(im, N(im)->inputs[2 + i], &any))
        return runtime_refused(im, m, kfmt("loop-carried input %d is a %s: a loop run at run time carries tensors "
                                           "only", i, any.s ? "sequence" : "optional"));
      return imp_error(im, "loop-carried input %d is missing", i);
    }
    types[2 + i] = carry[i]->type;
  }
  for (int i = 0; i < ncarry + 2; i++) names[i] = body->inputs[i].name;
  AVec outer = {0}, outer_names = {0};
  Graph *bg = imp_body_graph(im, body, types, &outer, &outer_names);
  if (!bg) return runtime_refused(im, m, kiln_get_error());
  /* the body's outputs: the condition, the carried values (their shapes
   * kept), the scan outputs (one row shape) */
  const TType *co = &((GNode *)bg->outputs.data[0])->type;
  const char *bad = NULL;
  if (ttype_is_symbolic(co) || ttype_numel(co) != 1 || !dt_is_bool(co->dtype)) bad = "its condition output is not one bool";
  for (int i = 0; i < ncarry && !bad; i++) {
    const TType *o = &((GNode *)bg->outputs.data[1 + i])->type, *t = &carry[i]->type;
    bool same = dt_eq(o->dtype, t->dtype) && o->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++)
      same = (o->sym && o->sym->dim[d]) || (t->sym && t->sym->dim[d]) || o->shape[d] == t->shape[d];
    if (!same)
      bad = kfmt("loop-carried value %d is %s, but the body gives %s (a loop run at run time keeps each carried "
                 "value's shape)", i, ttype_str(t), ttype_str(o));
  }
  for (int i = 0; i < nscan && !bad; i++) {
    const TType *o = &((GNode *)bg->outputs.data[1 + ncarry + i])->type;
    if (ttype_is_symbolic(o))
      bad = kfmt("the rows of scan output %d are %s, sizes the body decides at run time (a loop run at run time "
                 "stacks rows of one shape known at compile time)", i, ttype_str(o));
  }
  if (bad) {
    graph_free(bg);
    return runtime_refused(im, m, bad);
  }
  int b = imp_graph(im)->bodies.len;
  graph_add_body(imp_graph(im), bg);
  int nargs = (m ? 1 : 0) + (c ? 1 : 0) + ncarry + outer.len;
  GNode **args = KNEWN(GNode *, nargs + 1);
  int k = 0;
  if (m) args[k++] = m;
  if (c) args[k++] = c;
  for (int i = 0; i < ncarry; i++) args[k++] = carry[i];
  for (int i = 0; i < outer.len; i++) args[k++] = outer.data[i];
  GSym *ms = NULL;
  if (nscan && !(ms = imp_value_sym(im, m, kfmt("%s_trips", N(im)->name), 0, GRAPH_MAX_ELEMS)))
    return imp_error(im, "the trip count: %s", kiln_get_error());
  for (int o = 0; o < ncarry + nscan; o++) {
    if (!imp_want_output(im, o)) continue;
    StrBuf ha = {0};
    sb_printf(&ha, "{\"body\":%d,\"output\":%d,\"ncarry\":%d,\"nscan\":%d,\"m\":%d,\"cond\":%d", b, o, ncarry,
              nscan, m ? 1 : 0, c ? 1 : 0);
    json_names(&ha, "node", 1, &N(im)->name);
    json_names(&ha, "inputs", ncarry + 2, names);
    json_names(&ha, "outer", outer_names.len, (const char *const *)outer_names.data);
    sb_puts(&ha, "}");
    kiln_arena_push(imp_graph(im)->arena);
    const char *host = kstrdup(ha.data);
    kiln_arena_pop();
    sb_free(&ha);
    GNode *v;
    if (o < ncarry) {
      const TType *t = &carry[o]->type;
      int64_t shape[GRAPH_MAX_DIMS];
      Expr *dims[GRAPH_MAX_DIMS] = {0};
      for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->shape[d];
        if (t->sym) dims[d] = t->sym->dim[d];
      }
      v = onnx_dd_call(im, "loop.output", nargs, args, t->dtype, t->ndim, shape, dims, -1, NULL, NULL, host);
    } else {
      const TType *r = &((GNode *)bg->outputs.data[1 + o])->type; /* a row: its shape at the body's representative sizes */
      if (r->ndim + 1 > GRAPH_MAX_DIMS) return imp_error(im, "scan output %d has too many dimensions", o - ncarry);
      GSym *s = onnx_dd_size_sym(im, o, GRAPH_MAX_ELEMS);
      if (!s) return -1;
      int64_t shape[GRAPH_MAX_DIMS];
      shape[0] = 0;
      for (int d = 0; d < r->ndim; d++) shape[1 + d] = r->shape[d];
      kiln_arena_push(imp_graph(im)->arena);
      Expr *cap = ms->var;
      kiln_arena_pop();
      v = onnx_dd_call(im, "loop.output", nargs, args, r->dtype, r->ndim + 1, shape, NULL, 0, s, cap, host);
    }
    if (!v || imp_set_output(im, o, v)) return -1;
  }
  return 0;
}

int onnx_h_Loop(Importer *im) {
  const OnnxGraph *body = onnx_attr_graph(N(im), "body");
  if (!body) return imp_error(im, "missing attribute 'body'");
  int nin = imp_ninputs(im), ncarry = nin - 2;
  if (ncarry < 0 || body->ninputs != ncarry + 2 || body->noutputs < ncarry + 1)
    return imp_error(im, "the body's inputs and outputs do not match the node's");
  int nscan = body->noutputs - 1 - ncarry;
  GNode *m0 = imp_input(im, 0), *c0 = imp_input(im, 1);
  if ((m0 && m0->kind != GN_CONST) || (c0 && c0->kind != GN_CONST)) return loop_runtime(im, body, ncarry, nscan);
  int64_t trips = -1;
  if (imp_input(im, 0)) {
    if (imp_input_i64(im, 0, INT64_MIN, INT64_MAX, &trips)) return -1;
  }
  bool cond = true;
  if (imp_input(im, 1)) {
    double cv;
    if (imp_const_scalar(im, 1, &cv)) return -1;
    cond = cv != 0;
  }
  if (trips < 0 && !imp_input(im, 1)) return imp_error(im, "a loop with neither a trip count nor a condition never ends");
  AnyVal *carry = KNEWN(AnyVal, ncarry + 1);
  for (int i = 0; i < ncarry; i++)
    if (!*N(im)->inputs[2 + i] || !any_named(im, N(im)->inputs[2 + i], &carry[i]))
      return imp_error(im, "loop-carried input %d is missing", i);
  AVec *scans = KNEWN(AVec, nscan + 1);
  int64_t it = 0;
  for (; cond && (trips < 0 || it < trips); it++) {
    if (it >= MAX_UNROLL) return imp_error(im, "more than %d iterations are not supported (the loop is unrolled)", MAX_UNROLL);
    imp_bind_value(im, body->inputs[0].name, imp_scalar(im, (double)it, DT_I64));
    imp_bind_value(im, body->inputs[1].name, imp_scalar(im, 1, DT_BOOL));
    for (int i = 0; i < ncarry; i++) any_bind(im, body->inputs[2 + i].name, &carry[i]);
    if (imp_subgraph(im, body)) return -1;
    GNode *co = subgraph_output(im, body, 0);
    if (!co) return -1;
    if (co->kind != GN_CONST || ttype_numel(&co->type) != 1)
      return imp_error(im, "the loop condition must be known at compile time (the loop is unrolled)");
    cond = imp_const_at(co, 0) != 0;
    for (int i = 0; i < ncarry; i++)
      if (!any_named(im, body->outputs[1 + i].name, &carry[i]))
        return imp_error(im, "subgraph output '%s' is not produced", body->outputs[1 + i].name);
    for (int s = 0; s < nscan; s++) {
      GNode *v = subgraph_output(im, body, 1 + ncarry + s);
      if (!v) return -1;
      av_push(&scans[s], v);
    }
  }
  for (int i = 0; i < ncarry; i++)
    if (any_set_output(im, i, &carry[i])) return -1;
  for (int s = 0; s < nscan; s++)
    if (imp_want_output(im, ncarry + s) && imp_set_output(im, ncarry + s, stack(im, scans[s].len, (GNode **)scans[s].data, 0))) return -1;
  return 0;
}

/* One Scan over scan inputs already sliced per step: step t reads
 * xs[k][t]; returns the final states and the per-step scan outputs. */
static int scan_run(Importer *im, const OnnxGraph *body, int nstate, GNode **state, int nscan_in, GNode ***xs, int64_t T,
                    int nscan_out, AVec *outs) {
  for (int64_t t = 0; t < T; t++) {
    for (int i = 0; i < nstate; i++) imp_bind_value(im, body->inputs[i].name, state[i]);
    for (int k = 0; k < nscan_in; k++) imp_bind_value(im, body->inputs[nstate + k].name, xs[k][t]);
    if (imp_subgraph(im, body)) return -1;
    for (int i = 0; i < nstate; i++)
      if (!(state[i] = subgraph_output(im, body, i))) return -1;
    for (int s = 0; s < nscan_out; s++) {
      GNode *v = subgraph_output(im, body, nstate + s);
      if (!v) return -1;
      av_push(&outs[s], v);
    }
  }
  return 0;
}

int onnx_h_Scan(Importer *im) {
  const OnnxGraph *body = onnx_attr_graph(N(im), "body");
  if (!body) return imp_error(im, "missing attribute 'body'");
  bool v8 = imp_opset(im) < 9; /* opset 8: a leading batch axis and sequence_lens */
  int first = v8 ? 1 : 0, nin = imp_ninputs(im) - first, M;
  if (imp_attr_int(im, "num_scan_inputs", 0, 1, nin > 1 ? nin : 1, &M)) return -1;
  int nstate = nin - M, nscan_out = body->noutputs - nstate;
  if (nstate < 0 || body->ninputs != nin || nscan_out < 0)
    return imp_error(im, "the body's inputs and outputs do not match the node's");
  if (v8 && imp_input(im, 0)) return imp_error(im, "sequence_lens is not supported");
  int n;
  const int64_t *in_axes = onnx_attr_ints(N(im), "scan_input_axes", &n);
  if (in_axes && n != M) return imp_error(im, "scan_input_axes has %d values for %d scan inputs", n, M);
  const int64_t *in_dirs = onnx_attr_ints(N(im), v8 ? "directions" : "scan_input_directions", &n);
  if (in_dirs && n != M) return imp_error(im, "%s has %d values for %d scan inputs", v8 ? "directions" : "scan_input_directions", n, M);
  const int64_t *out_axes = onnx_attr_ints(N(im), "scan_output_axes", &n);
  if (out_axes && n != nscan_out) return imp_error(im, "scan_output_axes has %d values for %d scan outputs", n, nscan_out);
  const int64_t *out_dirs = onnx_attr_ints(N(im), "scan_output_directions", &n);
  if (out_dirs && n != nscan_out)
    return imp_error(im, "scan_output_directions has %d values for %d scan outputs", n, nscan_out);
  GNode **state0 = KNEWN(GNode *, nstate + 1), **xs0 = KNEWN(GNode *, M + 1);
  for (int i = 0; i < nstate; i++)
    if (!(state0[i] = imp_input(im, first + i))) return imp_error(im, "state input %d is missing", i);
  for (int k = 0; k < M; k++)
    if (!(xs0[k] = imp_input(im, first + nstate + k))) return imp_error(im, "scan input %d is missing", k);
  if (v8 && xs0[0]->type.ndim < 1) return imp_error(im, "scan input 0 has no batch axis (opset 8 Scan takes [batch, ...])");
  int64_t B = v8 ? xs0[0]->type.shape[0] : 1;
  if (B < 1 || B > MAX_UNROLL)
    return imp_error(im, "a batch of %lld is not supported (1 to %d; the scan is unrolled)", (long long)B, MAX_UNROLL);
  GNode ***finals = KNEWN(GNode **, B + 1);
  AVec **outs = KNEWN(AVec *, B + 1);
  for (int64_t b = 0; b < B; b++) {
    GNode **state = KNEWN(GNode *, nstate + 1);
    GNode ***xs = KNEWN(GNode **, M + 1);
    int64_t T = -1;
    for (int i = 0; i < nstate; i++) state[i] = v8 ? imp_index0(im, state0[i], b) : state0[i];
    for (int k = 0; k < M; k++) {
      GNode *x = v8 ? imp_index0(im, xs0[k], b) : xs0[k];
      if (!x) return -1;
      int ax;
      if (imp_norm_axis(im, in_axes ? in_axes[k] : 0, x->type.ndim, &ax)) return -1;
      int64_t len = x->type.shape[ax];
      if (T >= 0 && len != T) return imp_error(im, "scan inputs have different lengths %lld and %lld", (long long)T, (long long)len);
      T = len;
      if (T > MAX_UNROLL) return imp_error(im, "more than %d steps are not supported (the scan is unrolled)", MAX_UNROLL);
      bool rev = in_dirs && in_dirs[k];
      xs[k] = KNEWN(GNode *, T + 1);
      for (int64_t t = 0; t < T; t++) {
        int64_t src = rev ? T - 1 - t : t;
        xs[k][t] = imp_squeeze(im, imp_slice(im, x, ax, src, src + 1), ax);
      }
    }
    outs[b] = KNEWN(AVec, nscan_out + 1);
    if (scan_run(im, body, nstate, state, M, xs, T, nscan_out, outs[b])) return -1;
    finals[b] = state;
  }
  for (int i = 0; i < nstate; i++) {
    GNode *v = finals[0][i];
    if (v8) {
      GNode **per = KNEWN(GNode *, B + 1);
      for (int64_t b = 0; b < B; b++) per[b] = finals[b][i];
      v = stack(im, (int)B, per, 0);
    }
    if (imp_set_output(im, i, v)) return -1;
  }
  for (int s = 0; s < nscan_out; s++) {
    GNode **per = KNEWN(GNode *, B + 1);
    for (int64_t b = 0; b < B; b++) {
      AVec *o = &outs[b][s];
      if (out_dirs && out_dirs[s]) /* reversed: the last step first */
        for (int i = 0, j = o->len - 1; i < j; i++, j--) {
          void *tmp = o->data[i];
          o->data[i] = o->data[j];
          o->data[j] = tmp;
        }
      GNode *first_v = o->len ? (GNode *)o->data[0] : NULL;
      int ax = 0;
      if (out_axes && first_v && imp_norm_axis(im, out_axes[s], first_v->type.ndim + 1, &ax)) return -1;
      per[b] = stack(im, o->len, (GNode **)o->data, ax);
    }
    GNode *v = v8 ? stack(im, (int)B, per, 0) : per[0];
    if (imp_want_output(im, nstate + s) && imp_set_output(im, nstate + s, v)) return -1;
  }
  return 0;
}
