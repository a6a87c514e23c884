/*
 * datadep.c - ONNX ops whose output size the data decides: NonZero and
 * Compress (when the deciding input is not a constant; index.c computes
 * them at import when it is), Unique and NonMaxSuppression.
 *
 * Each becomes a data-dependent host op (src/graph/ops/datadep.c) that the
 * executor runs as a function of the runtime (src/runtime/datadep.c).
 * The dimension the data decides is a size symbol of its own, named after
 * the ONNX output ("y_n"), bounded by what the op can produce at most
 * (NonZero: the input's element count; Compress: the condition's length
 * or the axis; Unique: the slices along the axis; NonMaxSuppression:
 * batches x classes x boxes, or x max_output_boxes_per_class when that
 * is a constant).  That bound, as an expression over the input's
 * symbols, is the call's report_cap: the executor sizes the output's
 * buffer for it, the function reports the real size, and the executor
 * binds the symbol and plans the later kernels at it
 * (docs/symbolic_shapes.md, section 4c).  What follows is ordinary
 * symbolic shape inference: a Shape of the result is a shape value over
 * the symbol, so a NonZero's count feeding a Reshape needs nothing more.
 */
#include <ctype.h>

#include "ops.h"

/* A new size symbol for output `out` of the node, bounds [0, hi]. */
GSym *onnx_dd_size_sym(Importer *im, int out, int64_t hi) {
  const OnnxNode *n = imp_node(im);
  const char *b = out < n->noutputs && *n->outputs[out] ? n->outputs[out] : n->name;
  StrBuf sb = {0};
  sb_printf(&sb, "%s%s_n", isalpha((unsigned char)*b) || *b == '_' ? "" : "v", b);
  for (char *c = sb.data; *c; c++)
    if (!isalnum((unsigned char)*c) && *c != '_') *c = '_';
  while (graph_sym_find(imp_graph(im), sb.data)) sb_puts(&sb, "_");
  GSym *s = graph_sym(imp_graph(im), sb.data, 1, hi < 1 ? 1 : hi);
  if (!s) imp_error(im, "%s", kiln_get_error());
  else s->lo = 0; /* an empty result (its representative value stays a size) */
  sb_free(&sb);
  return s;
}

/* The product of t's dimensions [from, to) as an expression (simplified). */
static Expr *dims_product(Importer *im, const TType *t, int from, int to) {
  kiln_arena_push(imp_graph(im)->arena);
  Expr *e = ir_int(1, DT_I32);
  for (int d = from; d < to; d++) e = ir_mul(e, ttype_dim_expr(t, d));
  e = ir_simplify(e);
  kiln_arena_pop();
  return e;
}

/* e's value at the representative values when constant, else hi. */
static int64_t const_or(Expr *e, int64_t hi) {
  int64_t c;
  return ir_is_const_int(e, &c) ? c : hi;
}

static const char *postfix(Importer *im, Expr *e) {
  StrBuf sb = {0};
  int64_t c;
  if (ir_is_const_int(e, &c)) sb_printf(&sb, "%lld", (long long)c);
  else if (sym_postfix(&sb, e)) {
    sb_free(&sb);
    return imp_error(im, "%s", kiln_get_error()), NULL;
  }
  kiln_arena_push(imp_graph(im)->arena);
  const char *r = kstrdup(sb.data ? sb.data : "");
  kiln_arena_pop();
  sb_free(&sb);
  return r;
}

/* A data-dependent call: output dtype dt, nd dimensions where dims[d] is
 * the expression of dimension d (NULL: the constant shape[d]) and
 * dimension rdim (-1: none) is the size symbol s, whose upper bound is
 * cap; host_attrs for the runtime function. */
GNode *onnx_dd_call(Importer *im, const char *op, int nargs, GNode **args, DType dt, int nd, int64_t *shape,
                    Expr **dims, int rdim, GSym *s, Expr *cap, const char *host_attrs) {
  return onnx_dd_call_grow(im, op, nargs, args, dt, nd, shape, dims, rdim, s, cap, host_attrs, false);
}

/* The same, where grow says cap is only a first guess: nothing bounds the
 * size before the run, and the executor grows the output and calls the
 * function again when the size it reports is larger ("report_grow"). */
GNode *onnx_dd_call_grow(Importer *im, const char *op, int nargs, GNode **args, DType dt, int nd, int64_t *shape,
                         Expr **dims, int rdim, GSym *s, Expr *cap, const char *host_attrs, bool grow) {
  StrBuf sd = {0};
  bool sym = false;
  for (int d = 0; d < nd; d++) {
    if (d) sb_puts(&sd, ",");
    if (d == rdim) {
      sb_puts(&sd, s->name);
      shape[d] = s->rep;
      sym = true;
    } else if (dims && dims[d]) {
      const char *p = postfix(im, dims[d]);
      if (!p) return sb_free(&sd), NULL;
      sb_puts(&sd, p);
      sym = true;
    }
  }
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", nd, shape);
  ga_str(&a, "dtype", dt_str(dt));
  if (sym) ga_str(&a, "sym_dims", sd.data);
  sb_free(&sd);
  if (rdim >= 0) {
    const char *c = postfix(im, cap);
    if (!c) return NULL;
    ga_int(&a, "report", rdim);
    ga_str(&a, "report_cap", c);
    if (grow) ga_int(&a, "report_grow", 1);
  }
  ga_str(&a, "host_attrs", host_attrs);
  return imp_call(im, op, nargs, args, a);
}

/* t's dimension d as an expression, or NULL where it is constant. */
static Expr *sym_dim(const TType *t, int d) { return t->sym ? t->sym->dim[d] : NULL; }

/* ---- NonZero ---- */

int onnx_dd_nonzero(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int r = x->type.ndim;
  if (r < 1) return imp_error(im, "a scalar input is not supported");
  Expr *cap = dims_product(im, &x->type, 0, r);
  GSym *s = onnx_dd_size_sym(im, 0, const_or(cap, GRAPH_MAX_ELEMS));
  if (!s) return -1;
  int64_t shape[2] = {r, 0};
  return imp_set_output(im, 0, onnx_dd_call(im, "dd.nonzero", 1, &x, DT_I64, 2, shape, NULL, 1, s, cap, "{}"));
}

/* ---- Compress ---- */

int onnx_dd_compress(Importer *im) {
  GNode *x = imp_input(im, 0), *c = imp_input(im, 1);
  if (!x || !c) return imp_error(im, "needs an input and a condition");
  if (c->type.ndim != 1) return imp_error(im, "condition must be 1-D, got %s", ttype_str(&c->type));
  int ax = 0;
  GNode *v = x;
  if (onnx_attr_has(N(im), "axis")) {
    if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", 0), x->type.ndim, &ax)) return -1;
  } else if (x->type.ndim != 1) {
    int64_t all = -1;
    v = imp_reshape(im, x, 1, &all);
  }
  if (!v) return -1;
  Expr *dim = dims_product(im, &v->type, ax, ax + 1), *len = dims_product(im, &c->type, 0, 1);
  int64_t dl, ll;
  bool dc = ir_is_const_int(dim, &dl), lc = ir_is_const_int(len, &ll);
  if (dc && lc && ll > dl)
    return imp_error(im, "condition has %lld values for an axis of %lld", (long long)ll, (long long)dl);
  Expr *cap = lc ? len : dim; /* no more than either */
  GSym *s = onnx_dd_size_sym(im, 0, const_or(cap, GRAPH_MAX_ELEMS));
  if (!s) return -1;
  int nd = v->type.ndim;
  int64_t shape[MAXD];
  Expr *dims[MAXD];
  for (int d = 0; d < nd; d++) {
    shape[d] = v->type.shape[d];
    dims[d] = sym_dim(&v->type, d);
  }
  GNode *args[2] = {v, c};
  if (imp_set_output(im, 0, onnx_dd_call(im, "dd.compress", 2, args, v->type.dtype, nd, shape, dims, ax, s, cap,
                                     kfmt("{\"axis\": %d}", ax))))
    return -1;
  imp_set_output_lowp(im, 0, imp_input_lowp(im, 0)); /* a carried bfloat16 selected as it is */
  return 0;
}

/* ---- Unique ---- */

/* Outputs: Y (the unique values, or slices along the axis), indices (the
 * first occurrence of each), inverse_indices (each input slice's place
 * in Y), counts; each one the model uses is a call of its own (they agree
 * on the size, which the executor checks). */
int onnx_h_Unique(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  bool has_axis = onnx_attr_has(N(im), "axis");
  int ax = -1, r = x->type.ndim;
  if (has_axis && imp_norm_axis(im, onnx_attr_int(N(im), "axis", 0), r, &ax)) return -1;
  if (!has_axis && r < 1) return imp_error(im, "a scalar input is not supported");
  int64_t sorted = onnx_attr_int(N(im), "sorted", 1);
  Expr *n = has_axis ? dims_product(im, &x->type, ax, ax + 1) : dims_product(im, &x->type, 0, r);
  GSym *s = onnx_dd_size_sym(im, 0, const_or(n, GRAPH_MAX_ELEMS));
  if (!s) return -1;
  const OnnxNode *node = imp_node(im);
  for (int o = 0; o < node->noutputs && o < 4; o++) {
    if (!imp_want_output(im, o)) continue;
    /* a carried bfloat16 (its bits in a uint16) is compared as bfloat16 */
    const char *ha = kfmt("{\"axis\": %d, \"sorted\": %d, \"output\": %d, \"bfloat16\": %d}", ax, sorted != 0, o,
                          imp_input_lowp(im, 0) == ONNX_DT_BFLOAT16);
    int64_t shape[MAXD];
    Expr *dims[MAXD] = {0};
    GNode *y;
    if (o == 0 && has_axis) { /* the slices: x's shape with k along the axis */
      for (int d = 0; d < r; d++) {
        shape[d] = x->type.shape[d];
        dims[d] = sym_dim(&x->type, d);
      }
      y = onnx_dd_call(im, "dd.unique", 1, &x, x->type.dtype, r, shape, dims, ax, s, n, ha);
    } else if (o == 2) { /* one index per input slice: a size known before the call */
      shape[0] = has_axis ? x->type.shape[ax] : imp_numel(r, x->type.shape);
      int64_t c;
      dims[0] = ir_is_const_int(n, &c) ? NULL : n;
      y = onnx_dd_call(im, "dd.unique", 1, &x, DT_I64, 1, shape, dims, -1, NULL, NULL, ha);
    } else {
      y = onnx_dd_call(im, "dd.unique", 1, &x, o == 0 ? x->type.dtype : DT_I64, 1, shape, NULL, 0, s, n, ha);
    }
    if (imp_set_output(im, o, y)) return -1;
    if (o == 0) imp_set_output_lowp(im, 0, imp_input_lowp(im, 0));
  }
  return 0;
}

/* ---- NonMaxSuppression ---- */

int onnx_h_NonMaxSuppression(Importer *im) {
  GNode *boxes = imp_input(im, 0), *scores = imp_input(im, 1);
  if (!boxes || !scores) return imp_error(im, "needs boxes and scores");
  const TType *bt = &boxes->type, *st = &scores->type;
  if (bt->ndim != 3 || bt->shape[2] != 4 || sym_dim(bt, 2) || st->ndim != 3)
    return imp_error(im, "boxes must be (batches, boxes, 4) and scores (batches, classes, boxes), got %s and %s",
                     ttype_str(bt), ttype_str(st));
  if (bt->dtype.code != kDLFloat || (bt->dtype.bits != 32 && bt->dtype.bits != 64) || !dt_eq(bt->dtype, st->dtype))
    return imp_error(im, "boxes and scores must both be float32 or both float64, got %s and %s", dt_str(bt->dtype),
                     dt_str(st->dtype));
  if (!ttype_is_symbolic(bt) && !ttype_is_symbolic(st) && (bt->shape[0] != st->shape[0] || bt->shape[1] != st->shape[2]))
    return imp_error(im, "boxes %s and scores %s disagree on the batches or the boxes", ttype_str(bt), ttype_str(st));
  /* the optional inputs: a scalar standing in for a missing one, and the
   * runtime function told which are missing */
  GNode *args[5] = {boxes, scores, imp_input(im, 2), imp_input(im, 3), imp_input(im, 4)};
  static const DType want[3] = {{kDLInt, 64, 1}, {kDLFloat, 32, 1}, {kDLFloat, 32, 1}};
  for (int i = 2; i < 5; i++) {
    if (!args[i]) {
      args[i] = imp_scalar(im, 0, want[i - 2]);
      continue;
    }
    if (ttype_numel(&args[i]->type) > 1 || !dt_eq(args[i]->type.dtype, want[i - 2]))
      return imp_error(im, "input %d must be one %s, got %s", i, dt_str(want[i - 2]), ttype_str(&args[i]->type));
  }
  kiln_arena_push(imp_graph(im)->arena);
  Expr *cap = ir_mul(ir_mul(ttype_dim_expr(bt, 0), ttype_dim_expr(st, 1)), ttype_dim_expr(bt, 1));
  kiln_arena_pop();
  int64_t maxo = -1; /* absent: 0, so nothing is selected */
  if (args[2]->kind == GN_CONST) {
    maxo = (int64_t)imp_const_at(args[2], 0);
    int64_t nb;
    if (maxo < 0) maxo = 0; /* as ONNX's reference: none selected */
    if (ir_is_const_int(ir_simplify(ttype_dim_expr(bt, 1)), &nb) && maxo < nb) {
      kiln_arena_push(imp_graph(im)->arena);
      cap = ir_mul(ir_mul(ttype_dim_expr(bt, 0), ttype_dim_expr(st, 1)), ir_int(maxo, DT_I32));
      kiln_arena_pop();
    }
  }
  kiln_arena_push(imp_graph(im)->arena);
  cap = ir_simplify(cap);
  kiln_arena_pop();
  GSym *s = onnx_dd_size_sym(im, 0, const_or(cap, GRAPH_MAX_ELEMS));
  if (!s) return -1;
  int64_t shape[2] = {0, 3};
  const char *ha = kfmt("{\"center_point_box\": %lld, \"score_threshold\": %d}",
                        (long long)onnx_attr_int(N(im), "center_point_box", 0), imp_input(im, 4) != NULL);
  return imp_set_output(im, 0, onnx_dd_call(im, "dd.nms", 5, args, DT_I64, 2, shape, NULL, 0, s, cap, ha));
}
