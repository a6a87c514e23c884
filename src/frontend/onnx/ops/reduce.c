/*
 * reduce.c - ONNX's reductions (ReduceSum, ReduceMean, ReduceMax, ...,
 * ArgMax/ArgMin), with axes from the attribute (older opsets), a constant
 * input, or a graph input given at run time (docs/symbolic_shapes.md):
 * then the reduced dimensions are a mask over symbols, and without
 * keepdims a reshape drops them (onnx_drop_masked, which Squeeze shares).
 */
#include "ops.h"

/* Axes given at run time (a Reduce's axes as a 1-D integer graph input
 * of k elements, docs/symbolic_shapes.md): element j is the value symbol
 * a_j in [-rank, rank - 1].  Dimension d is reduced when some a_j is d or
 * d - rank; mask[d] gets that condition as a postfix expression (0 or 1).
 * axes[] gets distinct valid axes as the representative values.  The
 * count k; -2 when the input is not such a graph input. */
int onnx_runtime_axes(Importer *im, int input, GNode *x, int r, int64_t *axes, const char **mask) {
  GSym *syms[MAXD] = {0};
  GNode *v = imp_input(im, input);
  if (!v || v->kind != GN_VAR || ttype_is_symbolic(&x->type) || ttype_numel(&v->type) > r || r > MAXD) return -2;
  int k = imp_runtime_shape_input(im, input, syms, MAXD);
  if (k < 0) return k;
  Graph *g = imp_graph(im);
  /* the representative axes: 0, 1, ... (r - 1, r - 2, ... in the second
   * pass); over an empty x (a Reduce's) its empty dimensions first, so
   * that the result at them is not empty */
  int order[MAXD], no = 0;
  bool empty = ttype_numel(&x->type) == 0 && r == x->type.ndim;
  for (int zero = 1; zero >= 0; zero--)
    for (int i = 0; i < r; i++) {
      int d = g->sym_pass ? r - 1 - i : i;
      if ((empty && x->type.shape[d] == 0) == zero) order[no++] = d;
    }
  for (int j = 0; j < k; j++) {
    if (graph_sym_bound(g, syms[j]->name, -r, r - 1)) return imp_error(im, "%s", kiln_get_error());
    syms[j]->lo = -r; /* graph_sym_bound keeps a size's lower bound of 1 */
    syms[j]->rep = order[j];
    axes[j] = syms[j]->rep;
  }
  for (int d = 0; d < r; d++) {
    StrBuf sb = {0};
    for (int j = 0; j < k; j++)
      sb_printf(&sb, "%s%s %d eq %s %d eq or%s", j ? " " : "", syms[j]->name, d, syms[j]->name, d - r, j ? " or" : "");
    kiln_arena_push(g->arena);
    mask[d] = kstrdup(sb.data);
    kiln_arena_pop();
    sb_free(&sb);
  }
  return k;
}

/* A Reduce whose axes are given at run time: the kept-dimension reduction
 * (dimension d is "mask 1 size sel"), then, without keepdims, a reshape
 * that drops the reduced dimensions: result dimension i is the size of
 * the i-th dimension not reduced, and -1 (an error naming the node) when
 * the values did not reduce exactly k distinct dimensions. */
static GNode *reduce_runtime_axes(Importer *im, const char *op, GNode *x, int k, const int64_t *axes,
                                  const char **mask, bool keep) {
  int r = x->type.ndim;
  const int64_t *n = x->type.shape;
  StrBuf sd = {0};
  for (int d = 0; d < r; d++) {
    if (d) sb_puts(&sd, ",");
    if (n[d] != 1) sb_printf(&sd, "%s 1 %lld sel", mask[d], (long long)n[d]); /* a 1 stays 1 */
  }
  const char *dims = kfmt("%s", sd.data ? sd.data : "");
  sb_free(&sd);
  GNode *y;
  if (ttype_numel(&x->type) == 0) {
    /* nothing to read: the reduction's identity (Kiln's reduction of an
     * empty tensor, folded now: 0 for a sum, 1 for a product, the lowest
     * value for a max) broadcast to the kept-dimension shape, which is
     * empty at run time where a dimension not reduced is empty */
    DLTensor *e;
    DLDevice cpu = {kDLCPU, 0};
    if (kiln_array_empty(r, n, x->type.dtype, cpu, &e)) return NULL;
    GNode *c = graph_const(imp_graph(im), NULL, e);
    int64_t all[MAXD], shape[MAXD];
    for (int d = 0; d < r; d++) all[d] = d, shape[d] = n[d];
    for (int j = 0; j < k; j++) shape[axes[j]] = 1;
    GAttrs ia = gattrs_new();
    ga_ints(&ia, "axis", r, all);
    ga_int(&ia, "keepdims", 0);
    GNode *id = imp_call(im, op, 1, &c, ia);
    if (id && id->kind != GN_CONST) return imp_error(im, "the identity of '%s' over an empty input did not fold", op), NULL;
    GAttrs a = gattrs_new();
    ga_ints(&a, "shape", r, shape);
    ga_str(&a, "sym_dims", dims);
    y = imp_call(im, "broadcast_to", 1, &id, a);
  } else {
    GAttrs a = gattrs_new();
    ga_ints(&a, "axis", k, axes);
    ga_int(&a, "keepdims", 1);
    ga_str(&a, "sym_dims", dims);
    y = imp_call(im, op, 1, &x, a);
  }
  if (!y || keep) return y;
  /* the count of reduced dimensions must be k */
  StrBuf cnt = {0};
  sb_puts(&cnt, "0");
  for (int d = 0; d < r; d++) sb_printf(&cnt, " %s +", mask[d]);
  sb_printf(&cnt, " %d eq", k);
  GNode *z = onnx_drop_masked(im, y, r, n, mask, k, axes, cnt.data);
  sb_free(&cnt);
  return z;
}

/* y (whose dimensions are n[0..r), or 1 where masked) reshaped without
 * the dimensions mask[] (postfix, 0 or 1) selects: result dimension i is
 * the size of the i-th dimension not masked, and -1 (an error naming the
 * node) where the postfix condition valid is 0.  axes[0..k) are the
 * masked dimensions at the representative values. */
GNode *onnx_drop_masked(Importer *im, GNode *y, int r, const int64_t *n, const char **mask, int k,
                        const int64_t *axes, const char *valid) {
  int64_t shape[MAXD];
  int on = 0;
  StrBuf out = {0};
  for (int d = 0; d < r; d++) {
    bool red = false;
    for (int j = 0; j < k; j++) red |= axes[j] == d;
    if (!red) shape[on++] = n[d];
  }
  for (int i = 0; i < on; i++) {
    /* sum over d of (kept_d and (kept dimensions before d) == i) * n_d */
    StrBuf e = {0};
    sb_puts(&e, "0");
    for (int d = 0; d < r; d++) {
      StrBuf before = {0};
      sb_puts(&before, "0");
      for (int c = 0; c < d; c++) sb_printf(&before, " 1 %s - +", mask[c]);
      sb_printf(&e, " 1 %s - %s %d eq and %lld 0 sel +", mask[d], before.data, i, (long long)n[d]);
      sb_free(&before);
    }
    sb_printf(&out, "%s%s %s -1 sel", i ? "," : "", valid, e.data);
    sb_free(&e);
  }
  GAttrs ra = gattrs_new();
  ga_ints(&ra, "newshape", on, shape);
  for (int i = 0; i < on; i++)
    if (!shape[i]) { /* an empty input: its 0 is a size, not "copy the dimension" */
      ga_int(&ra, "allowzero", 1);
      break;
    }
  ga_str(&ra, "sym_dims", out.data ? out.data : "");
  sb_free(&out);
  return imp_call(im, "reshape", 1, &y, ra);
}

int onnx_h_reduce(Importer *im) {
  static const OpMap m[] = {{"ReduceSum", "sum"},       {"ReduceMean", "mean"},         {"ReduceMax", "max"},
                            {"ReduceMin", "min"},       {"ReduceProd", "prod"},         {"ReduceL1", "l1_norm"},
                            {"ReduceL2", "l2_norm"},    {"ReduceSumSquare", "sum_square"}, {"ReduceLogSumExp", "logsumexp"},
                            {"ReduceLogSum", "sum"},    {NULL, NULL}};
  const char *op = N(im)->op_type, *k = NULL;
  for (const OpMap *p = m; p->onnx; p++)
    if (!strcmp(p->onnx, op)) k = p->kiln;
  int64_t axes[MAXD];
  bool present;
  int from = !strcmp(op, "ReduceSum") ? 13 : 18;
  GNode *x = in0(im);
  bool keep = onnx_attr_int(N(im), "keepdims", 1) != 0;
  const char *mask[MAXD];
  /* ReduceMax/ReduceMin 20 take bool (False < True): reduced as uint8 */
  bool boolean = x && dt_is_bool(x->type.dtype) && (!strcmp(k, "max") || !strcmp(k, "min"));
  int zeros = 0; /* x's empty dimensions: at most k, or the result is empty at every axes */
  for (int d = 0; x && d < x->type.ndim; d++) zeros += x->type.shape[d] == 0;
  int rt = x && imp_opset(im) >= from && (boolean || !dt_is_bool(x->type.dtype))
               ? onnx_runtime_axes(im, 1, x, x->type.ndim, axes, mask)
               : -2;
  if (rt == -1) return -1;
  if (rt > 0 && (keep || rt < x->type.ndim) && zeros <= rt) { /* axes given at run time */
    GNode *y = reduce_runtime_axes(im, k, boolean ? imp_cast(im, x, DT_U8) : x, rt, axes, mask, keep);
    if (boolean) y = imp_cast(im, y, DT_BOOL);
    if (!strcmp(op, "ReduceLogSum") && y) y = imp_call1(im, "log", y);
    return out0(im, y);
  }
  int n = onnx_read_axes(im, 1, from, axes, &present);
  if (n < 0) return -1;
  if (n == 0 && onnx_attr_int(N(im), "noop_with_empty_axes", 0)) return out0(im, x);
  GAttrs a = gattrs_new();
  if (n) ga_ints(&a, "axis", n, axes);
  ga_int(&a, "keepdims", onnx_attr_int(N(im), "keepdims", 1));
  if (boolean) x = imp_cast(im, x, DT_U8);
  GNode *y = x ? imp_call(im, k, 1, &x, a) : NULL;
  if (boolean) y = imp_cast(im, y, DT_BOOL);
  if (!strcmp(op, "ReduceLogSum") && y) y = imp_call1(im, "log", y);
  return out0(im, y);
}

int onnx_h_argreduce(Importer *im) {
  GAttrs a = gattrs_new();
  int64_t ax = onnx_attr_int(N(im), "axis", 0);
  ga_ints(&a, "axis", 1, &ax);
  ga_int(&a, "keepdims", onnx_attr_int(N(im), "keepdims", 1));
  ga_int(&a, "select_last_index", onnx_attr_int(N(im), "select_last_index", 0));
  GNode *x = in0(im);
  return out0(im, imp_call(im, !strcmp(N(im)->op_type, "ArgMax") ? "argmax" : "argmin", 1, &x, a));
}
