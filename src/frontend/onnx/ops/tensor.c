/*
 * tensor.c - ONNX's shape and data-movement operators (Constant,
 * Shape, Reshape, Flatten, Transpose, Squeeze/Unsqueeze, Concat, Split,
 * Slice, Gather, Pad, Tile, Expand, ConstantOfShape, Range, DepthToSpace).
 * The reductions are in reduce.c, the ops whose work is a mask that
 * depends only on shapes in shape_mask.c.
 *
 * Inputs that decide a shape (Reshape's shape, Slice's starts, Pad's pads,
 * Tile's repeats) must be known at compile time: imp_const_input_ints
 * reads them, and its error names the graph inputs to --bind otherwise.
 * Between opsets these moved from attributes to inputs; onnx_read_axes
 * and the opset tests in each handler decide which applies.
 */
#include "ops.h"

/* ---- shape and data movement ---- */

int onnx_h_constant(Importer *im) {
  const OnnxNode *n = N(im);
  const OnnxTensor *t = onnx_attr_tensor(n, "value");
  Graph *g = imp_graph(im);
  DLDevice cpu = {kDLCPU, 0};
  if (t) {
    DType dt;
    if (onnx_tensor_dtype(t, &dt)) return imp_error(im, "%s", kiln_get_error());
    DLTensor *a;
    if (kiln_array_empty(t->ndim, t->dims, dt, cpu, &a)) return -1;
    if (t->nbytes && kiln_array_copy_from_bytes(a, t->data, t->nbytes)) {
      kiln_array_free(a);
      return -1;
    }
    return out0(im, graph_const(g, n->outputs[0], a));
  }
  if (onnx_attr_has(n, "value_float")) return out0(im, imp_scalar(im, onnx_attr_float(n, "value_float", 0), DT_F32));
  if (onnx_attr_has(n, "value_int")) return out0(im, imp_scalar(im, (double)onnx_attr_int(n, "value_int", 0), DT_I64));
  int k;
  const int64_t *iv = onnx_attr_ints(n, "value_ints", &k);
  if (iv) return out0(im, imp_const_ints(im, k, iv));
  const float *fv = onnx_attr_floats(n, "value_floats", &k);
  if (fv) {
    DLTensor *a;
    int64_t len = k;
    if (kiln_array_empty(1, &len, DT_F32, cpu, &a)) return -1;
    memcpy(a->data, fv, sizeof(float) * (size_t)k);
    return out0(im, graph_const(g, NULL, a));
  }
  return imp_error(im, "no supported value attribute (sparse and string constants are not supported)");
}

/* Shape and Size of a tensor with symbolic dimensions are shape values:
 * constants at the representative sizes that carry their expressions
 * (shape_value.c), so the arithmetic exporters do on them folds over the
 * symbols and a Reshape to them keeps its symbolic dimensions. */
int onnx_h_shape(Importer *im) {
  GNode *x = in0(im);
  int64_t nd = x->type.ndim, start = onnx_attr_int(N(im), "start", 0), end = onnx_attr_int(N(im), "end", nd);
  if (start < 0) start += nd;
  if (end < 0) end += nd;
  if (start < 0) start = 0;
  if (end > nd) end = nd;
  if (end < start) end = start;
  return out0(im, imp_shape_value(im, x, start, end));
}

int onnx_h_size(Importer *im) { return out0(im, imp_size_value(im, in0(im))); }

/* Whether target entry k (expression e) is the input's dimension k. */
static bool copies_dim(GNode *x, int k, Expr *e, bool allowzero) {
  return !allowzero && k < x->type.ndim && ir_is_int_value(ir_simplify(ir_sub(e, ttype_dim_expr(&x->type, k))), 0);
}

/* A target shape with symbolic elements becomes reshape's codes: an
 * element equal to the input's dimension at its position is 0 (copy),
 * one other symbolic element is -1 (the rest of the element count); the
 * result's expressions are then checked against the target's.  With two
 * or more such elements ((S*B, 64) to [S, B, 64]) the codes cannot say
 * it: 1, and s is left as it was, for sym_exprs. */
static int sym_newshape(GNode *x, int n, int64_t *s, Expr **ex, bool allowzero) {
  int infer = -1;
  int64_t codes[MAXD];
  memcpy(codes, s, sizeof(int64_t) * (size_t)n);
  for (int k = 0; k < n; k++) {
    if (!ex[k]) {
      if (s[k] == -1) infer = infer < 0 ? k : infer;
      continue;
    }
    if (copies_dim(x, k, ex[k], allowzero)) {
      codes[k] = 0;
      continue;
    }
    if (infer >= 0) return 1;
    infer = k;
    codes[k] = -1;
  }
  memcpy(s, codes, sizeof(int64_t) * (size_t)n);
  return 0;
}

/* The target as expressions (reshape's sym_newshape, symshape.c): each
 * symbolic entry that is not a copy keeps its value at the representative
 * sizes in s (so the integer inference checks the element count) and its
 * expression in *out ("S;B;"); a copy is 0; a constant stays.  A -1 among
 * them would have to be inferred as well: an error. */
static int sym_exprs(Importer *im, GNode *x, int n, int64_t *s, Expr **ex, bool allowzero, const char **out) {
  StrBuf sb = {0};
  int rc = 0;
  for (int k = 0; k < n && !rc; k++) {
    if (k) sb_puts(&sb, ";");
    if (!ex[k]) {
      if (s[k] == -1)
        rc = imp_error(im,
                       "the target shape has entries computed from symbolic sizes and entry %d is -1: Kiln cannot "
                       "infer an entry beside them; give the sizes as numbers in --input-shapes",
                       k);
      continue;
    }
    if (copies_dim(x, k, ex[k], allowzero)) {
      s[k] = 0;
      continue;
    }
    StrBuf one = {0};
    if (sym_postfix(&one, ex[k])) rc = imp_error(im, "target entry %d: %s", k, kiln_get_error());
    else sb_puts(&sb, one.data);
    sb_free(&one);
  }
  *out = rc ? NULL : kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return rc;
}

static int check_target(Importer *im, GNode *y, int n, Expr **ex) {
  for (int k = 0; y && k < n && k < y->type.ndim; k++) {
    Expr *want = ex[k] ? ex[k] : NULL, *got = ttype_dim_expr(&y->type, k);
    if (want && !ir_is_int_value(ir_simplify(ir_sub(want, got)), 0))
      return imp_error(im,
                       "the target shape's entry %d is %s, but the result's dimension is %s: Kiln cannot give this "
                       "node a symbolic size there; give the sizes as numbers in --input-shapes",
                       k, ir_expr_str(want), ir_expr_str(got));
  }
  return 0;
}

/* Reshape to a shape given at run time (a graph input of k elements,
 * values in [-1, 2^31)): with t_d the element, or x's dimension d where
 * the element is 0 (without allowzero), and P the product of the t_d that
 * are not -1, dimension d is N / P where t_d is -1 (-1, an error, where
 * P is 0), else t_d; every
 * dimension is -1 (an error naming the node) unless their product is x's
 * element count N.  The representative values are N, 1, 1, ... (N last
 * in the second pass); with allowzero, or an empty x (N = 0), a
 * dimension may be 0. */
static int reshape_runtime(Importer *im, GNode *x, bool allowzero) {
  GSym *syms[MAXD] = {0};
  GNode *v = imp_input(im, 1);
  if (!x || !v || v->kind != GN_VAR || ttype_is_symbolic(&x->type)) return -2;
  int k = imp_runtime_shape_input(im, 1, syms, MAXD);
  if (k <= 0) return k == 0 ? -2 : k;
  Graph *g = imp_graph(im);
  int64_t N = ttype_numel(&x->type), reps[MAXD];
  int at = g->sym_pass ? k - 1 : 0; /* the element that is N */
  if (N == 0 && !allowzero) { /* a 0 copies x's dimension: one that is 0 */
    at = -1;
    for (int d = 0; d < k && d < x->type.ndim; d++)
      if (x->type.shape[d] == 0 && (at < 0 || g->sym_pass)) at = d;
    if (at < 0) return -2;
  }
  for (int d = 0; d < k; d++) {
    syms[d]->lo = -1;
    syms[d]->rep = d == at ? N : 1;
    reps[d] = syms[d]->rep;
  }
  const char *t[MAXD];
  for (int d = 0; d < k; d++)
    t[d] = allowzero || d >= x->type.ndim
               ? syms[d]->name
               : kfmt("%s 0 eq %lld %s sel", syms[d]->name, (long long)x->type.shape[d], syms[d]->name);
  StrBuf P = {0}; /* the product of the known dimensions */
  sb_puts(&P, "1");
  for (int d = 0; d < k; d++) sb_printf(&P, " %s -1 eq 1 %s sel *", t[d], t[d]);
  const char *out[MAXD];
  /* both sides of a sel are evaluated: N / max(P, 1), and -1 (an error)
   * for a -1 beside a 0 (allowzero), whose size nothing decides */
  for (int d = 0; d < k; d++)
    out[d] = kfmt("%s -1 eq %s 0 eq -1 %lld %s 1 max fdiv sel %s sel", t[d], P.data, (long long)N, P.data, t[d]);
  sb_free(&P);
  StrBuf prod = {0};
  sb_puts(&prod, "1");
  for (int d = 0; d < k; d++) sb_printf(&prod, " %s *", out[d]);
  StrBuf sd = {0};
  for (int d = 0; d < k; d++) sb_printf(&sd, "%s%s %lld eq %s -1 sel", d ? "," : "", prod.data, (long long)N, out[d]);
  sb_free(&prod);
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", k, reps);
  ga_int(&a, "allowzero", 1); /* the representative shape is literal (0 when x is empty) */
  ga_str(&a, "sym_dims", sd.data);
  sb_free(&sd);
  return out0(im, imp_call(im, "reshape", 1, &x, a));
}

int onnx_h_reshape(Importer *im) {
  int64_t s[MAXD];
  Expr *ex[MAXD] = {0};
  int n;
  if (imp_opset(im) >= 5) {
    int rc = reshape_runtime(im, in0(im), onnx_attr_int(N(im), "allowzero", 0) != 0);
    if (rc != -2) return rc;
  }
  if (imp_opset(im) < 5) {
    const int64_t *v = onnx_attr_ints(N(im), "shape", &n);
    if (!v || n > MAXD) return imp_error(im, "bad shape attribute");
    memcpy(s, v, sizeof(int64_t) * (size_t)n);
  } else if ((n = imp_shape_input(im, 1, s, ex, MAXD)) < 0)
    return -1;
  bool allowzero = onnx_attr_int(N(im), "allowzero", 0) != 0, symbolic = false;
  GNode *x = in0(im);
  for (int k = 0; k < n; k++) symbolic |= ex[k] != NULL;
  const char *exprs = NULL;
  if (symbolic && sym_newshape(x, n, s, ex, allowzero) && sym_exprs(im, x, n, s, ex, allowzero, &exprs)) return -1;
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", n, s);
  ga_int(&a, "allowzero", allowzero);
  if (exprs) ga_str(&a, "sym_newshape", exprs);
  GNode *y = imp_call(im, "reshape", 1, &x, a);
  if (symbolic && check_target(im, y, n, ex)) return -1;
  return out0(im, y);
}

int onnx_h_flatten(Importer *im) {
  GNode *x = in0(im);
  int64_t axis = onnx_attr_int(N(im), "axis", 1), nd = x->type.ndim;
  if (axis < 0) axis += nd;
  if (axis < 0 || axis > nd) return imp_error(im, "axis out of range");
  int64_t a = 1, b = 1;
  bool sa = false, sb = false; /* a symbolic dimension before / after the axis */
  for (int i = 0; i < nd; i++) {
    *(i < axis ? &a : &b) *= x->type.shape[i];
    *(i < axis ? &sa : &sb) |= x->type.sym && x->type.sym->dim[i];
  }
  int64_t s[2] = {a, b};
  if (sa || sb) { /* keep the expressions: 0 copies dim 0, -1 is the rest */
    if (sa && sb && axis != 1) return imp_error(im, "symbolic dimensions on both sides of axis %lld", (long long)axis);
    s[0] = axis == 1 ? 0 : sa ? -1 : a;
    s[1] = sb || axis == 1 ? -1 : b;
    GAttrs at = gattrs_new();
    ga_ints(&at, "newshape", 2, s);
    return out0(im, imp_call(im, "reshape", 1, &x, at));
  }
  return out0(im, imp_reshape(im, x, 2, s));
}

int onnx_h_transpose(Importer *im) {
  GNode *x = in0(im);
  int n;
  const int64_t *p = onnx_attr_ints(N(im), "perm", &n);
  GAttrs a = gattrs_new();
  if (p) ga_ints(&a, "axes", n, p);
  return out0(im, imp_call(im, "transpose", 1, &x, a));
}

/* axes from the attribute (older opsets) or the optional input */
int onnx_read_axes(Importer *im, int input, int from_opset, int64_t *axes, bool *present) {
  int n = 0;
  *present = false;
  if (imp_opset(im) < from_opset) {
    const int64_t *v = onnx_attr_ints(N(im), "axes", &n);
    if (v) {
      if (n > MAXD) return imp_error(im, "too many axes");
      memcpy(axes, v, sizeof(int64_t) * (size_t)n);
      *present = true;
    }
    return n;
  }
  if (imp_input(im, input)) {
    *present = true;
    return imp_const_input_ints(im, input, axes, MAXD);
  }
  return 0;
}

/* Squeeze's axes given at run time: the dimensions they name dropped (a
 * reshape), valid when exactly k distinct dimensions of size 1 are named.
 * The representative axes are size-1 dimensions.  -2 when input 1 is not
 * such an input, or nothing would be left to carry the check. */
static int squeeze_runtime(Importer *im, GNode *x) {
  int64_t axes[MAXD];
  const char *mask[MAXD];
  int r = x->type.ndim, ones[MAXD], nones = 0;
  for (int d = 0; d < r; d++)
    if (x->type.shape[d] == 1) ones[nones++] = d;
  GNode *v = imp_input(im, 1);
  int64_t kk = v ? ttype_numel(&v->type) : 0;
  if (imp_opset(im) < 13 || !v || v->kind != GN_VAR || kk < 1 || kk > nones || kk >= r) return -2;
  int k = onnx_runtime_axes(im, 1, x, r, axes, mask);
  if (k < 0) return k;
  Graph *g = imp_graph(im);
  for (int j = 0; j < k; j++) {
    GSym *s = graph_value_sym(g, v->name, j, -r, r - 1);
    s->rep = ones[g->sym_pass ? nones - 1 - j : j];
    axes[j] = s->rep;
  }
  StrBuf valid = {0}; /* k dimensions named, none of size > 1 */
  sb_puts(&valid, "0");
  for (int d = 0; d < r; d++) sb_printf(&valid, " %s +", mask[d]);
  sb_printf(&valid, " %d eq 0", k);
  for (int d = 0; d < r; d++)
    if (x->type.shape[d] != 1) sb_printf(&valid, " %s +", mask[d]);
  sb_puts(&valid, " 0 eq and");
  GNode *y = onnx_drop_masked(im, x, r, x->type.shape, mask, k, axes, valid.data);
  sb_free(&valid);
  return out0(im, y);
}

/* Unsqueeze's axes given at run time: a reshape to rank r + k where a
 * named position is 1 and the others take x's dimensions in order, valid
 * when k distinct positions are named.  -2 when input 1 is not such an
 * input. */
static int unsqueeze_runtime(Importer *im, GNode *x) {
  int64_t axes[MAXD];
  const char *mask[MAXD];
  GNode *v = imp_input(im, 1);
  int r = x->type.ndim;
  int64_t kk = v ? ttype_numel(&v->type) : 0;
  if (imp_opset(im) < 13 || !v || v->kind != GN_VAR || kk < 1 || r + kk > MAXD) return -2;
  int R = r + (int)kk;
  int k = onnx_runtime_axes(im, 1, x, R, axes, mask);
  if (k < 0) return k;
  int64_t shape[MAXD];
  bool is_ax[MAXD] = {0};
  for (int j = 0; j < k; j++) is_ax[axes[j]] = true;
  for (int i = 0, d = 0; i < R; i++) shape[i] = is_ax[i] ? 1 : x->type.shape[d++];
  StrBuf cnt = {0};
  sb_puts(&cnt, "0");
  for (int i = 0; i < R; i++) sb_printf(&cnt, " %s +", mask[i]);
  sb_printf(&cnt, " %d eq", k);
  StrBuf out = {0};
  for (int i = 0; i < R; i++) {
    /* 1 where named, else x's dimension number (positions not named before i) */
    StrBuf before = {0}, e = {0};
    sb_puts(&before, "0");
    for (int p = 0; p < i; p++) sb_printf(&before, " 1 %s - +", mask[p]);
    sb_puts(&e, "0");
    for (int d = 0; d < r; d++) sb_printf(&e, " %s %d eq %lld 0 sel +", before.data, d, (long long)x->type.shape[d]);
    sb_printf(&out, "%s%s %s 1 %s sel -1 sel", i ? "," : "", cnt.data, mask[i], e.data);
    sb_free(&before);
    sb_free(&e);
  }
  sb_free(&cnt);
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", R, shape);
  if (ttype_numel(&x->type) == 0) ga_int(&a, "allowzero", 1); /* its 0s are sizes */
  ga_str(&a, "sym_dims", out.data);
  sb_free(&out);
  return out0(im, imp_call(im, "reshape", 1, &x, a));
}

int onnx_h_squeeze(Importer *im) {
  GNode *x0 = in0(im);
  int rc = x0 && !ttype_is_symbolic(&x0->type) ? squeeze_runtime(im, x0) : -2;
  if (rc != -2) return rc;
  int64_t axes[MAXD];
  bool present;
  int n = onnx_read_axes(im, 1, 13, axes, &present);
  if (n < 0) return -1;
  GNode *x = in0(im);
  GAttrs a = gattrs_new();
  if (present) ga_ints(&a, "axis", n, axes);
  return out0(im, imp_call(im, "squeeze", 1, &x, a));
}

int onnx_h_unsqueeze(Importer *im) {
  GNode *x0 = in0(im);
  int rc = x0 && !ttype_is_symbolic(&x0->type) ? unsqueeze_runtime(im, x0) : -2;
  if (rc != -2) return rc;
  int64_t axes[MAXD];
  bool present;
  int n = onnx_read_axes(im, 1, 13, axes, &present);
  if (n < 0) return -1;
  if (!present) return imp_error(im, "axes are required");
  GNode *x = in0(im);
  GAttrs a = gattrs_new();
  ga_ints(&a, "axes", n, axes);
  return out0(im, imp_call(im, "expand_dims", 1, &x, a));
}

int onnx_h_concat(Importer *im) {
  int n = imp_ninputs(im);
  GNode **args = KNEWN(GNode *, n + 1);
  int k = 0;
  GNode *empty = NULL;
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, i);
    /* an empty part adds nothing (and a kernel cannot read it) */
    if (x && ttype_numel(&x->type) == 0 && x->type.ndim > 0) empty = x;
    else if (x) args[k++] = x;
  }
  if (k == 0 && empty) args[k++] = empty;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", imp_opset(im) < 4 ? 1 : 0));
  if (k == 1 && args[0] != empty) return out0(im, args[0]);
  return out0(im, imp_call(im, "concatenate", k, args, a));
}

int onnx_h_split(Importer *im) {
  int rc = onnx_split_runtime(im);
  if (rc != -2) return rc;
  GNode *x = in0(im);
  int axis;
  if (imp_attr_axis(im, "axis", 0, x->type.ndim, &axis)) return -1;
  int nout = N(im)->noutputs;
  int64_t sizes[64], dim = x->type.shape[axis];
  int n = 0;
  if (imp_opset(im) < 13) {
    const int64_t *v;
    if (imp_attr_ints_in(im, "split", 64, 0, dim, &v, &n)) return -1;
    if (v) memcpy(sizes, v, sizeof(int64_t) * (size_t)n);
  } else if (imp_input(im, 1)) {
    n = imp_const_input_ints_in(im, 1, sizes, 64, 0, dim);
    if (n < 0) return -1;
  }
  if (n == 0) {
    if (nout > 64) return imp_error(im, "too many outputs");
    n = nout;
    int64_t chunk = (dim + nout - 1) / nout;
    for (int i = 0; i < nout; i++) sizes[i] = i < nout - 1 ? chunk : dim - chunk * (nout - 1);
  }
  if (n != nout) return imp_error(im, "split has %d sizes for %d outputs", n, nout);
  int64_t start = 0;
  for (int i = 0; i < n; i++) {
    if (imp_set_output(im, i, imp_slice(im, x, axis, start, start + sizes[i]))) return -1;
    start += sizes[i];
  }
  if (start != dim) return imp_error(im, "split sizes sum to %lld, axis has %lld", (long long)start, (long long)dim);
  return 0;
}

int onnx_h_slice(Importer *im) {
  int rc = onnx_slice_runtime(im);
  if (rc != -2) return rc;
  GNode *x = in0(im);
  int64_t st[MAXD], en[MAXD], ax[MAXD], sp[MAXD];
  int n, ne, na = 0, ns = 0;
  if (imp_opset(im) < 10) {
    const int64_t *v, *e, *a;
    if (imp_attr_ints_in(im, "starts", MAXD, INT64_MIN, INT64_MAX, &v, &n) ||
        imp_attr_ints_in(im, "ends", MAXD, INT64_MIN, INT64_MAX, &e, &ne) ||
        imp_attr_ints_in(im, "axes", MAXD, INT64_MIN, INT64_MAX, &a, &na))
      return -1;
    if (!v || !e || n != ne) return imp_error(im, "starts/ends must be given with equal lengths");
    memcpy(st, v, sizeof(int64_t) * (size_t)n);
    memcpy(en, e, sizeof(int64_t) * (size_t)n);
    if (a) memcpy(ax, a, sizeof(int64_t) * (size_t)na);
  } else {
    if ((n = imp_const_input_ints(im, 1, st, MAXD)) < 0 || (ne = imp_const_input_ints(im, 2, en, MAXD)) < 0) return -1;
    if (n != ne) return imp_error(im, "starts and ends have different lengths");
    if (imp_input(im, 3) && (na = imp_const_input_ints(im, 3, ax, MAXD)) < 0) return -1;
    if (imp_input(im, 4) && (ns = imp_const_input_ints(im, 4, sp, MAXD)) < 0) return -1;
  }
  if (!na) {
    na = n;
    for (int i = 0; i < n; i++) ax[i] = i;
  }
  if (!ns) {
    ns = n;
    for (int i = 0; i < n; i++) sp[i] = 1;
  }
  if (na != n || ns != n) return imp_error(im, "starts, ends, axes and steps must have equal lengths");
  GAttrs a = gattrs_new();
  ga_ints(&a, "begin", n, st);
  ga_ints(&a, "end", n, en);
  ga_ints(&a, "axes", n, ax);
  ga_ints(&a, "strides", n, sp);
  return out0(im, imp_call(im, "strided_slice", 1, &x, a));
}

int onnx_h_gather(Importer *im) {
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", 0));
  GNode *args[2] = {in0(im), imp_input(im, 1)};
  return out0(im, imp_call(im, !strcmp(N(im)->op_type, "GatherElements") ? "gather_elements" : "take", 2, args, a));
}

/* Pad's wrap mode (opset 19): each axis becomes the tail of the axis, the
 * axis, and its head, concatenated (a negative pad crops). */
static GNode *pad_wrap(Importer *im, GNode *x, const int64_t *pads) {
  int nd = x->type.ndim;
  for (int i = 0; i < nd && x; i++) {
    int64_t b = pads[i], e = pads[i + nd], len = x->type.shape[i];
    if (b > len || e > len || b < -len || e < -len)
      return imp_error(im, "wrap padding %lld/%lld is larger than axis %d (%lld) either way", (long long)b, (long long)e, i,
                       (long long)len),
             NULL;
    if (b < 0) x = imp_slice(im, x, i, -b, len), b = 0, len = x ? x->type.shape[i] : 0;
    if (e < 0) x = imp_slice(im, x, i, 0, len + e), e = 0, len = x ? x->type.shape[i] : 0;
    if (!x || (b == 0 && e == 0)) continue;
    GNode *parts[3];
    int k = 0;
    if (b) parts[k++] = imp_slice(im, x, i, len - b, len);
    parts[k++] = x;
    if (e) parts[k++] = imp_slice(im, x, i, 0, e);
    GAttrs a = gattrs_new();
    ga_int(&a, "axis", i);
    x = imp_call(im, "concatenate", k, parts, a);
  }
  return x;
}

int onnx_h_pad(Importer *im) {
  int rc = onnx_pad_runtime(im);
  if (rc != -2) return rc;
  GNode *x = in0(im);
  int nd = x->type.ndim;
  int64_t pads[2 * MAXD];
  int n;
  double value = 0;
  if (imp_opset(im) < 11) {
    const int64_t *v = onnx_attr_ints(N(im), imp_opset(im) < 2 ? "paddings" : "pads", &n);
    if (!v || n != 2 * nd) return imp_error(im, "pads must have %d values", 2 * nd);
    memcpy(pads, v, sizeof(int64_t) * (size_t)n);
    value = onnx_attr_float(N(im), "value", 0);
  } else {
    if ((n = imp_const_input_ints(im, 1, pads, 2 * MAXD)) < 0) return -1;
    if (imp_opset(im) >= 18 && imp_input(im, 3)) {
      /* axes (opset 18): pads gives (begins, ends) for these axes only */
      int64_t axes[MAXD], full[2 * MAXD] = {0};
      int na = imp_const_input_ints(im, 3, axes, MAXD);
      if (na < 0) return -1;
      if (n != 2 * na) return imp_error(im, "pads has %d values for %d axes, expected %d", n, na, 2 * na);
      for (int i = 0; i < na; i++) {
        int ax;
        if (imp_norm_axis(im, axes[i], nd, &ax)) return -1;
        full[ax] = pads[i];
        full[ax + nd] = pads[i + na];
      }
      memcpy(pads, full, sizeof(int64_t) * (size_t)(2 * nd));
      n = 2 * nd;
    }
    if (n != 2 * nd) return imp_error(im, "pads has %d values, expected %d", n, 2 * nd);
    GNode *cv = imp_input(im, 2) ? imp_const_input(im, 2) : NULL;
    if (imp_input(im, 2) && !cv) return -1;
    if (cv) {
      if (!gnode_is_scalar_const(cv)) return imp_error(im, "constant_value must be a scalar");
      value = gnode_scalar_value(cv);
    }
  }
  const char *mode = onnx_attr_string(N(im), "mode", "constant");
  if (!strcmp(mode, "wrap") && imp_opset(im) >= 19) return out0(im, pad_wrap(im, x, pads));
  GAttrs a = gattrs_new();
  ga_ints(&a, "pads", n, pads);
  ga_str(&a, "pad_mode", mode);
  ga_float(&a, "pad_value", value);
  return out0(im, imp_call(im, "nn.pad", 1, &x, a));
}

/* Tile and Expand: input 0 through one graph op whose one attribute is
 * the integer list input 1 holds (Tile's repeats, Expand's target shape).
 * Tile's list must be constant.  Expand's may be a shape value with
 * symbolic elements: it works where each such element is the input's
 * dimension it lines up with (broadcasting keeps that dimension's
 * expression); expanding a size-1 dimension to a symbolic size fails the
 * check, naming the entry. */
static int op_of_list_input(Importer *im, const char *op, const char *attr, bool symbolic) {
  int64_t v[MAXD];
  Expr *ex[MAXD] = {0};
  int n = symbolic ? imp_shape_input(im, 1, v, ex, MAXD) : imp_const_input_ints(im, 1, v, MAXD);
  if (n < 0) return -1;
  GAttrs a = gattrs_new();
  ga_ints(&a, attr, n, v);
  GNode *x = in0(im);
  GNode *y = imp_call(im, op, 1, &x, a);
  if (symbolic && y && y->type.ndim == n && check_target(im, y, n, ex)) return -1;
  return out0(im, y);
}

/* Tile's repeats given at run time (a graph input): dimension d is x's
 * times the element.  -2 when input 1 is not such an input. */
static int tile_runtime(Importer *im) {
  int64_t r[MAXD];
  GSym *syms[MAXD] = {0};
  GNode *x = in0(im);
  int n = x && !ttype_is_symbolic(&x->type) ? imp_runtime_shape_input(im, 1, syms, MAXD) : -2;
  if (n < 0) return n;
  if (n != x->type.ndim) return imp_error(im, "repeats has %d elements for an input of rank %d", n, x->type.ndim);
  GAttrs a = gattrs_new();
  for (int d = 0; d < n; d++) r[d] = syms[d]->rep;
  ga_str(&a, "sym_dims", imp_sym_dims(im, n, syms, x->type.shape));
  ga_ints(&a, "reps", n, r);
  return out0(im, imp_call(im, "tile", 1, &x, a));
}

/* Expand's shape given at run time (a graph input): where x's dimension
 * is 1 (or x has none) the result's is the element; where x's is k > 1
 * the result keeps k and the element must be 1 or k (bounds [1, k]).  -2
 * when input 1 is not such an input. */
static int expand_runtime(Importer *im) {
  int64_t s[MAXD];
  GSym *syms[MAXD] = {0};
  GNode *x = in0(im);
  int n = x && !ttype_is_symbolic(&x->type) ? imp_runtime_shape_input(im, 1, syms, MAXD) : -2;
  if (n < 0) return n;
  int r = n > x->type.ndim ? n : x->type.ndim;
  GSym *out[MAXD] = {0};
  for (int d = 0; d < n; d++) {
    int xd = d - (n - x->type.ndim);
    int64_t k = xd >= 0 ? x->type.shape[xd] : 1;
    if (k == 1) {
      s[d] = syms[d]->rep;
      out[d + (r - n)] = syms[d];
    } else {
      s[d] = 1;
      if (graph_sym_bound(imp_graph(im), syms[d]->name, 1, k)) return imp_error(im, "%s", kiln_get_error());
    }
  }
  GAttrs a = gattrs_new();
  ga_str(&a, "sym_dims", imp_sym_dims(im, r, out, NULL));
  ga_ints(&a, "shape", n, s);
  return out0(im, imp_call(im, "broadcast_to", 1, &x, a));
}

int onnx_h_tile(Importer *im) {
  if (imp_opset(im) < 6) return imp_error(im, "Tile before opset 6 (tiles and axis inputs) is not supported");
  int rc = tile_runtime(im);
  return rc != -2 ? rc : op_of_list_input(im, "tile", "reps", false);
}

int onnx_h_expand(Importer *im) {
  int rc = expand_runtime(im);
  return rc != -2 ? rc : op_of_list_input(im, "broadcast_to", "shape", true);
}

int onnx_h_constant_of_shape(Importer *im) {
  int64_t s[MAXD];
  GSym *syms[MAXD] = {0};
  const char *dims = NULL;
  int n = imp_runtime_shape_input(im, 0, syms, MAXD);
  if (n >= 0) { /* a shape given at run time: each dimension an element */
    for (int d = 0; d < n; d++) s[d] = syms[d]->rep;
    dims = imp_sym_dims(im, n, syms, NULL);
  }
  if (n == -2) n = imp_const_input_ints(im, 0, s, MAXD);
  if (n < 0) return -1;
  const OnnxTensor *t = onnx_attr_tensor(N(im), "value");
  double v = 0;
  DType dt = DT_F32;
  if (t) {
    if (onnx_tensor_dtype(t, &dt)) return imp_error(im, "%s", kiln_get_error());
    if (t->numel != 1) return imp_error(im, "value must hold one element");
    DLTensor *tmp;
    DLDevice cpu = {kDLCPU, 0};
    if (kiln_array_empty(0, NULL, dt, cpu, &tmp)) return -1;
    kiln_array_copy_from_bytes(tmp, t->data, t->nbytes);
    GNode *c = graph_const(imp_graph(im), NULL, tmp);
    v = gnode_scalar_value(c);
  }
  GNode *sc = imp_scalar(im, v, dt);
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", n, s);
  if (dims) ga_str(&a, "sym_dims", dims);
  return out0(im, imp_call(im, "broadcast_to", 1, &sc, a));
}

/* Range over int64 in exact integer arithmetic (through doubles, values
 * beyond 2^53 would round, and start + i * delta can overflow on the way
 * to an element that does not). */
static int range_i64(Importer *im, GNode *s, GNode *l, GNode *d) {
  int64_t a, b, st;
  if (imp_const_i64_at(im, 0, s, 0, INT64_MIN, INT64_MAX, &a) || imp_const_i64_at(im, 1, l, 0, INT64_MIN, INT64_MAX, &b) ||
      imp_const_i64_at(im, 2, d, 0, INT64_MIN, INT64_MAX, &st))
    return -1;
  uint64_t span = st > 0 ? (b > a ? (uint64_t)b - (uint64_t)a : 0) : (a > b ? (uint64_t)a - (uint64_t)b : 0);
  uint64_t step = st > 0 ? (uint64_t)st : (uint64_t)0 - (uint64_t)st;
  uint64_t cnt = span / step + (span % step != 0);
  if (cnt > (uint64_t)IMP_MAX_COUNT)
    return imp_error(im, "Range(%lld, %lld, %lld) would have %llu elements (at most 2^31 - 1)", (long long)a, (long long)b,
                     (long long)st, (unsigned long long)cnt);
  int64_t n = (int64_t)cnt, *out;
  GNode *c = imp_new_i64(im, 1, &n, &out);
  if (!c) return -1;
  /* unsigned arithmetic wraps; every element lies between start and limit */
  for (int64_t i = 0; i < n; i++) out[i] = (int64_t)((uint64_t)a + (uint64_t)st * (uint64_t)i);
  return out0(im, c);
}

int onnx_h_range(Importer *im) {
  int rc = onnx_range_runtime(im);
  if (rc != -2) return rc;
  GNode *s = imp_const_input(im, 0), *l = s ? imp_const_input(im, 1) : NULL, *d = l ? imp_const_input(im, 2) : NULL;
  if (!d) return -1;
  if (!gnode_is_scalar_const(s) || !gnode_is_scalar_const(l) || !gnode_is_scalar_const(d))
    return imp_error(im, "start, limit and delta must be scalars");
  double a = gnode_scalar_value(s), b = gnode_scalar_value(l), st = gnode_scalar_value(d);
  if (st == 0) return imp_error(im, "delta is zero");
  DType dt = s->type.dtype;
  if (dt.code == kDLInt && dt.bits == 64) return range_i64(im, s, l, d);
  bool half = dt.code == kDLFloat && dt.bits == 16;
  /* float16 follows NumPy's arange, which the reference calls: the length is
   * ceil of (limit - start) / delta in float16 arithmetic, the second element
   * is float16(start + delta), and element i is float16(start + i*step) in
   * float32 with step = second - start. */
  double cnt = half ? ceil((double)(_Float16)((float)(_Float16)((float)b - (float)a) / (float)st)) : ceil((b - a) / st);
  if (!(cnt <= (double)(1LL << 31)))
    return imp_error(im, "Range(%g, %g, %g) would have %g elements (at most 2^31)", a, b, st, cnt);
  int64_t n = cnt > 0 ? (int64_t)cnt : 0;
  float hstep = (float)(_Float16)((float)a + (float)st) - (float)a;
  DLTensor *arr;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(1, &n, dt, cpu, &arr)) return -1;
  for (int64_t i = 0; i < n; i++) {
    double v = a + st * (double)i;
    if (dt.code == kDLFloat && dt.bits == 32) ((float *)arr->data)[i] = (float)v;
    else if (dt.code == kDLFloat && dt.bits == 64) ((double *)arr->data)[i] = v;
    else if (half) ((_Float16 *)arr->data)[i] = i == 0 ? (_Float16)a : (_Float16)((float)a + (float)i * hstep);
    else if (dt.code == kDLInt && dt.bits == 32) ((int32_t *)arr->data)[i] = (int32_t)(int64_t)(a + st * (double)i);
    else if (dt.code == kDLInt && dt.bits == 16) ((int16_t *)arr->data)[i] = (int16_t)(int64_t)v;
    else {
      kiln_array_free(arr);
      return imp_error(im, "type %s is not supported", dt_str(dt));
    }
  }
  return out0(im, graph_const(imp_graph(im), NULL, arr));
}

int onnx_h_depth_space(Importer *im) {
  GAttrs a = gattrs_new();
  int64_t b;
  if (imp_attr_i64(im, "blocksize", 0, 1, IMP_MAX_COUNT, &b)) return -1;
  ga_int(&a, "block_size", b);
  GNode *x = in0(im);
  if (!strcmp(N(im)->op_type, "DepthToSpace")) {
    ga_str(&a, "mode", onnx_attr_string(N(im), "mode", "DCR"));
    return out0(im, imp_call(im, "nn.depth_to_space", 1, &x, a));
  }
  const char *mode = imp_opset(im) >= 28 ? onnx_attr_string(N(im), "mode", "DCR") : "DCR";
  if (!strcmp(mode, "CRD")) {
    /* opset 28's column-row-depth order: [N, C, H/b, b, W/b, b] with the
     * two block axes moved after C */
    if (x->type.ndim != 4 || x->type.shape[2] % b || x->type.shape[3] % b)
      return imp_error(im, "input %s must be [N, C, H, W] with H and W multiples of blocksize %lld", ttype_str(&x->type),
                       (long long)b);
    const int64_t *d = x->type.shape;
    int64_t s6[6] = {d[0], d[1], d[2] / b, b, d[3] / b, b}, perm[6] = {0, 1, 3, 5, 2, 4}, s4[4] = {d[0], d[1] * b * b, d[2] / b, d[3] / b};
    return out0(im, imp_reshape(im, imp_transpose(im, imp_reshape(im, x, 6, s6), 6, perm), 4, s4));
  }
  if (strcmp(mode, "DCR")) return imp_error(im, "mode '%s' is not supported (DCR, CRD)", mode);
  return out0(im, imp_call(im, "nn.space_to_depth", 1, &x, a));
}
