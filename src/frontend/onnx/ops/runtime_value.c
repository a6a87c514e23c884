/*
 * runtime_value.c - data movement whose offsets come from values given
 * at run time (docs/symbolic_shapes.md, section 4b): Slice whose starts,
 * ends, axes or steps are graph inputs, Split whose sizes are one.
 *
 * The sizes such a value decides are value symbols (graph_value_sym) and
 * the output's dimensions postfix expressions over them (the call's
 * sym_dims), which the executor evaluates at set_input; the offsets the
 * kernel needs are not sizes, so the kernel reads the value tensors
 * itself (a scalar read of each element inside the compute, as a gather
 * reads its indices).  An empty result is a dimension 0; a value that no
 * output could have (a Slice step of 0, axes named twice, Split sizes
 * that do not add up to the axis) makes a dimension -1, which the
 * executor refuses naming the node and the values.
 *
 * The representative values of these symbols are those of the identity
 * (starts 0, ends past the end, steps 1, axes 0, 1, ...; starts past the
 * end and ends before the start for a negative constant step), so the
 * compile-time inference sees the largest output the call can have: an
 * output empty there is empty at every value.
 */
#include "ops.h"

/* Clamping a run-time value first keeps every step of the expressions
 * inside int64 (an end of INT64_MAX means "to the end"); a dimension is at
 * most 2^31 - 1, so the clamp changes no result. */
#define RV_CLAMP "-2147483647 max 2147483647 min"

/* One element of a Slice operand: a value symbol or a constant. */
typedef struct {
  const GSym *sym;
  int64_t c;
} RtVal;

static void put_val(StrBuf *sb, const RtVal *v) {
  if (v->sym) sb_printf(sb, " %s " RV_CLAMP, v->sym->name);
  else sb_printf(sb, " %lld", (long long)(v->c < -2147483647 ? -2147483647 : v->c > 2147483647 ? 2147483647 : v->c));
}

/* b made non-negative against dimension D ("b 0 lt b D + b sel"), then
 * clamped into [lo, D + hi]. */
static void put_index(StrBuf *sb, const RtVal *b, int64_t D, int lo, int hi) {
  put_val(sb, b);
  sb_puts(sb, " 0 lt");
  put_val(sb, b);
  sb_printf(sb, " %lld +", (long long)D);
  put_val(sb, b);
  sb_printf(sb, " sel %d max %lld min", lo, (long long)D + hi);
}

/* The length of slice (b, e, s) of a dimension D, as ONNX defines it (-1
 * for a step of 0: no output). */
static void put_len(StrBuf *sb, const RtVal *b, const RtVal *e, const RtVal *s, int64_t D) {
  /* the step, with 0 made 1 for the divisions (the result is 0 then) */
  StrBuf st = {0};
  put_val(&st, s);
  put_val(&st, s);
  sb_puts(&st, " 0 eq +");
  /* -1 (no output) for a step of 0, else by the step's sign */
  put_val(sb, s);
  sb_puts(sb, " 0 ne");
  put_val(sb, s);
  sb_puts(sb, " 0 gt");
  /* forward: ceil((E - B) / s), at least 0 */
  put_index(sb, e, D, 0, 0);
  put_index(sb, b, D, 0, 0);
  sb_printf(sb, " -%s + 1 -%s fdiv 0 max", st.data, st.data);
  /* backward: ceil((B - E) / -s), at least 0 */
  put_index(sb, b, D, -1, -1);
  put_index(sb, e, D, -1, -1);
  sb_printf(sb, " - 0%s - + 1 - 0%s - fdiv 0 max sel -1 sel", st.data, st.data);
  sb_free(&st);
}

/* Element k of Slice input i (a constant, or a graph input or a value
 * kernels compute, whose elements become value symbols in [lo, hi] with
 * representative value rep; a computed one is bound after the kernels
 * through a dd.bind, section 4c): n elements into v.  Returns n, -2 when the input is neither, -1 + error. */
static int slice_operand(Importer *im, int i, int64_t lo, int64_t hi, const int64_t *rep, RtVal *v, GNode **node) {
  GNode *x = imp_input(im, i);
  *node = x;
  if (x->kind == GN_CONST) {
    int64_t c[GRAPH_MAX_DIMS];
    int n = gnode_const_ints(x, c, GRAPH_MAX_DIMS);
    if (n < 0) return imp_error(im, "input %d: %s", i, kiln_get_error());
    for (int k = 0; k < n; k++) v[k] = (RtVal){NULL, c[k]};
    return n;
  }
  if (x->kind != GN_VAR && x->kind != GN_CALL) return -2;
  int64_t n = x->type.ndim == 1 ? x->type.shape[0] : 0;
  if (n > GRAPH_MAX_DIMS) return -2;
  /* a graph input, or a value kernels compute (bound after them) */
  const char *name = imp_runtime_value_of(im, i);
  if (!name) return -2;
  Graph *g = imp_graph(im);
  for (int k = 0; k < n; k++) {
    int before = g->syms.len;
    GSym *s = graph_value_sym(g, name, k, lo, hi);
    if (!s) return imp_error(im, "input %d ('%s'): %s", i, name, kiln_get_error());
    if (g->syms.len > before) s->rep = rep[k];
    v[k] = (RtVal){s, 0};
  }
  return (int)n;
}

/* Slice (opset 10 and later) whose starts, ends, axes or steps are graph
 * inputs or computed by kernels (a Loop body's Unsqueeze of the iteration
 * number): dyn.strided_slice, the kernel reading starts, steps and axes.
 * -2 when no operand is given at run time. */
int onnx_slice_runtime(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (imp_opset(im) < 10 || !x || ttype_is_symbolic(&x->type)) return -2;
  int r = x->type.ndim;
  int64_t zeros[GRAPH_MAX_DIMS] = {0}, ones[GRAPH_MAX_DIMS], ends[GRAPH_MAX_DIMS], iota[GRAPH_MAX_DIMS];
  for (int k = 0; k < GRAPH_MAX_DIMS; k++) ones[k] = 1, ends[k] = 2147483647, iota[k] = k;
  /* per operand: bounds, representative values */
  const int64_t lo[5] = {0, INT64_MIN, INT64_MIN, -r, INT64_MIN}, hi[5] = {0, INT64_MAX, INT64_MAX, r - 1, INT64_MAX};
  const int64_t *rep[5] = {NULL, zeros, ends, iota, ones};
  RtVal v[5][GRAPH_MAX_DIMS];
  memset(v, 0, sizeof v);
  GNode *node[5] = {x};
  int cnt[5] = {0};
  bool runtime = false;
  for (int i = 1; i < 5; i++) {
    GNode *in = imp_input(im, i);
    if (!in) {
      cnt[i] = -3;
      continue;
    }
    bool var = in->kind == GN_VAR || in->kind == GN_CALL; /* a graph input, or computed by kernels */
    if (!var && in->kind != GN_CONST) return -2;
    runtime |= var;
  }
  if (!runtime) return -2;
  /* the steps first: where one is a negative constant, its start's and
   * end's representative values walk the whole axis backwards */
  int64_t back_starts[GRAPH_MAX_DIMS], back_ends[GRAPH_MAX_DIMS];
  static const int order[4] = {4, 3, 1, 2};
  for (int o = 0; o < 4; o++) {
    int i = order[o];
    if (i == 1 || i == 2) {
      int64_t *b = i == 1 ? back_starts : back_ends;
      for (int k = 0; k < GRAPH_MAX_DIMS; k++) {
        bool back = cnt[4] > k && !v[4][k].sym && v[4][k].c < 0;
        b[k] = back ? (i == 1 ? 2147483647 : -2147483647) : rep[i][k];
      }
      rep[i] = b;
    }
    if (cnt[i] == -3) continue;
    cnt[i] = slice_operand(im, i, lo[i], hi[i], rep[i], v[i], &node[i]);
    if (cnt[i] == -2) return -2;
    if (cnt[i] < 0) return -1;
  }
  int n = cnt[1];
  if (cnt[2] != n || (cnt[3] >= 0 && cnt[3] != n) || (cnt[4] >= 0 && cnt[4] != n))
    return imp_error(im, "starts, ends, axes and steps must have equal lengths (%d, %d, %d, %d)", cnt[1], cnt[2], cnt[3],
                     cnt[4]);
  if (n > r) return imp_error(im, "starts has %d elements for an input of rank %d", n, r);
  /* absent axes and steps: 0, 1, ... and 1s, as constants the kernel reads */
  for (int i = 3; i < 5; i++)
    if (cnt[i] == -3) {
      int64_t *d, len = n;
      node[i] = imp_new_i64(im, 1, &len, &d);
      if (!node[i]) return -1;
      for (int k = 0; k < n; k++) d[k] = i == 3 ? k : 1, v[i][k] = (RtVal){NULL, d[k]};
    }
  /* the attributes: the operands at their representative values */
  int64_t at[5][GRAPH_MAX_DIMS];
  for (int i = 1; i < 5; i++)
    for (int k = 0; k < n; k++) at[i][k] = v[i][k].sym ? v[i][k].sym->rep : v[i][k].c;
  StrBuf sd = {0};
  for (int d = 0; d < r; d++) {
    if (d) sb_puts(&sd, ",");
    StrBuf e = {0};
    int64_t D = x->type.shape[d];
    /* hit_j: axes_j names d; the dimension is sum_j hit_j * len_j, or D
     * where none does, and -1 where two do */
    bool any = false, dyn_axes = false;
    for (int j = 0; j < n; j++) {
      const RtVal *a = &v[3][j];
      if (!a->sym && a->c != d && a->c != d - r) continue;
      StrBuf h = {0};
      if (a->sym) {
        sb_printf(&h, " %s %d eq %s %d eq or", a->sym->name, d, a->sym->name, d - r);
        dyn_axes = true;
      } else {
        sb_puts(&h, " 1");
      }
      sb_puts(&e, h.data);
      put_len(&e, &v[1][j], &v[2][j], &v[4][j], D);
      sb_puts(&e, " *");
      if (any) sb_puts(&e, " +");
      sb_free(&h);
      any = true;
    }
    if (any) {
      /* (1 - hits) * D + ..., and -1 where two entries name d */
      StrBuf hits = {0};
      int nh = 0;
      for (int j = 0; j < n; j++) {
        const RtVal *a = &v[3][j];
        if (a->sym) sb_printf(&hits, " %s %d eq %s %d eq or", a->sym->name, d, a->sym->name, d - r);
        else if (a->c == d || a->c == d - r) sb_puts(&hits, " 1");
        else continue;
        if (nh++) sb_puts(&hits, " +");
      }
      sb_printf(&e, " 1%s - %lld * +", hits.data, (long long)D);
      if (dyn_axes || nh > 1) sb_printf(&sd, "%s 1 le%s -1 sel", hits.data + 1, e.data);
      else sb_puts(&sd, e.data + 1);
      sb_free(&hits);
    }
    sb_free(&e);
  }
  GAttrs a = gattrs_new();
  ga_ints(&a, "begin", n, at[1]);
  ga_ints(&a, "end", n, at[2]);
  ga_ints(&a, "axes", n, at[3]);
  ga_ints(&a, "strides", n, at[4]);
  ga_str(&a, "sym_dims", sd.data ? sd.data : "");
  sb_free(&sd);
  /* the ends decide only the shape */
  GNode *args[4] = {x, node[1], node[4], node[3]};
  GNode *y = imp_call(im, "dyn.strided_slice", 4, args, a);
  /* empty at the representative values, where a run-time step could
   * still make it non-empty (constant starts and ends, the step's sign
   * given at run time): the compile-time path, which asks for the values
   * (an empty call is a constant from here on) */
  for (int d = 0; y && d < y->type.ndim; d++)
    if (y->type.shape[d] == 0) return -2;
  return out0(im, y);
}

/* Split (opset 13 and later) whose sizes are a graph input: part i is
 * dyn.split, its size along the axis the value symbol split_i in [0, D]
 * (0 an empty part; -1, the executor's error, unless the sizes add up to
 * the axis), the kernel reading the sizes before it for its offset.  The representative sizes
 * split the axis evenly.  -2 when the sizes are not a graph input.
 * onnx_split_runtime_parts makes the parts (SplitToSequence's elements
 * too). */
int onnx_split_runtime(Importer *im) {
  GNode *x = imp_input(im, 0), *sz = imp_input(im, 1);
  if (imp_opset(im) < 13 || !x || !sz || sz->kind != GN_VAR || sz->type.ndim != 1 || ttype_is_symbolic(&sz->type))
    return -2;
  int axis;
  if (imp_attr_axis(im, "axis", 0, x->type.ndim, &axis)) return -1;
  int nout = N(im)->noutputs;
  if (sz->type.shape[0] != nout) return imp_error(im, "split has %lld sizes for %d outputs", (long long)sz->type.shape[0], nout);
  GNode **parts = KNEWN(GNode *, nout + 1);
  int rc = onnx_split_runtime_parts(im, x, sz, axis, parts);
  for (int i = 0; i < nout && !rc; i++)
    if (imp_want_output(im, i)) rc = imp_set_output(im, i, parts[i]);
  return rc;
}

int onnx_split_runtime_parts(Importer *im, GNode *x, GNode *sz, int axis, GNode **parts) {
  if (!x || !sz || sz->kind != GN_VAR || ttype_is_symbolic(&x->type) || sz->type.ndim != 1 ||
      sz->type.dtype.code != kDLInt || (sz->type.dtype.bits != 64 && sz->type.dtype.bits != 32) ||
      ttype_is_symbolic(&sz->type))
    return -2;
  int64_t n = sz->type.shape[0], D = x->type.shape[axis];
  if (n > 64) return imp_error(im, "too many outputs (%lld, at most 64)", (long long)n);
  /* representative sizes of at least 1, so that no part is empty at
   * compile time (an empty call is a constant from there on) unless every
   * part always is (an empty axis: the bounds [0, 0] hold the sizes at 0) */
  if (D < n && D > 0) return -2;
  Graph *g = imp_graph(im);
  GSym *syms[64];
  int64_t sum = 0;
  for (int k = 0; k < n; k++) {
    int before = g->syms.len;
    if (!(syms[k] = graph_value_sym(g, sz->name, k, 0, D))) return imp_error(im, "input 1 ('%s'): %s", sz->name, kiln_get_error());
    if (g->syms.len > before) syms[k]->rep = k < n - 1 ? D / n : D - (D / n) * (n - 1);
    sum += syms[k]->rep;
  }
  StrBuf total = {0};
  for (int k = 0; k < n; k++) sb_printf(&total, k ? " %s +" : "%s", syms[k]->name);
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    StrBuf sd = {0};
    for (int d = 0; d < x->type.ndim; d++)
      if (d == axis) sb_printf(&sd, "%s%s %lld eq %s -1 sel", d ? "," : "", total.data, (long long)D, syms[i]->name);
      else if (d) sb_puts(&sd, ",");
    GAttrs a = gattrs_new();
    ga_int(&a, "axis", axis);
    ga_int(&a, "index", i);
    ga_int(&a, "size", sum == D ? syms[i]->rep : -1);
    ga_str(&a, "sym_dims", sd.data ? sd.data : "");
    sb_free(&sd);
    GNode *args[2] = {x, sz};
    if (!(parts[i] = imp_call(im, "dyn.split", i ? 2 : 1, args, a))) rc = -1;
  }
  sb_free(&total);
  return rc;
}

int onnx_runtime_count(Importer *im, int i, int64_t lo, int64_t hi, GSym **out) {
  GNode *v = imp_input(im, i);
  if (!v || v->kind != GN_VAR || ttype_is_symbolic(&v->type) || v->type.ndim > 1 ||
      (v->type.ndim == 1 && v->type.shape[0] != 1) || v->type.dtype.code != kDLInt ||
      (v->type.dtype.bits != 64 && v->type.dtype.bits != 32))
    return -2;
  if (lo > hi) return -2; /* no value is possible: the compile-time path says why */
  Graph *g = imp_graph(im);
  int before = g->syms.len;
  if (!(*out = graph_value_sym(g, v->name, 0, lo, hi))) return imp_error(im, "input %d ('%s'): %s", i, v->name, kiln_get_error());
  if (g->syms.len > before) (*out)->rep = hi;
  return 0;
}

GNode *onnx_runtime_prefix(Importer *im, GNode *y, int axis, const GSym *k) {
  if (!y) return NULL;
  int64_t one = 1, *b, *s, *a;
  GNode *begin = imp_new_i64(im, 1, &one, &b), *steps = imp_new_i64(im, 1, &one, &s), *axes = imp_new_i64(im, 1, &one, &a);
  if (!begin || !steps || !axes) return NULL;
  b[0] = 0, s[0] = 1, a[0] = axis;
  StrBuf sd = {0};
  for (int d = 0; d < y->type.ndim; d++) sb_printf(&sd, "%s%s", d ? "," : "", d == axis ? k->name : "");
  GAttrs at = gattrs_new();
  int64_t end = k->rep;
  ga_ints(&at, "begin", 1, b);
  ga_ints(&at, "end", 1, &end);
  ga_ints(&at, "axes", 1, a);
  ga_ints(&at, "strides", 1, s);
  ga_str(&at, "sym_dims", sd.data ? sd.data : "");
  sb_free(&sd);
  GNode *args[4] = {y, begin, steps, axes};
  return imp_call(im, "dyn.strided_slice", 4, args, at);
}

/* Pad (opset 11 and later) whose pads, constant value or axes are graph
 * inputs: dyn.pad(data, pads, axes[, value]), dimension d being D plus the
 * pads of the entries whose axis is d (-1 where that is negative or two
 * entries name d), the kernel reading pads, axes and the value.  The
 * representative pads are 0.  -2 when no operand is a graph input. */
int onnx_pad_runtime(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (imp_opset(im) < 11 || !x || ttype_is_symbolic(&x->type)) return -2;
  int nd = x->type.ndim;
  bool runtime = false;
  for (int i = 1; i < 4; i++) {
    GNode *in = imp_input(im, i);
    if (!in) continue;
    if (in->kind != GN_VAR && in->kind != GN_CONST) return -2;
    runtime |= in->kind == GN_VAR;
  }
  if (!runtime) return -2;
  const char *mode = onnx_attr_string(N(im), "mode", "constant");
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
      (strcmp(mode, "wrap") || imp_opset(im) < 19))
    return imp_error(im, "mode '%s' is not supported", mode);
  int64_t zeros[2 * GRAPH_MAX_DIMS] = {0}, iota[GRAPH_MAX_DIMS];
  for (int k = 0; k < GRAPH_MAX_DIMS; k++) iota[k] = k;
  RtVal pv[2 * GRAPH_MAX_DIMS], av[GRAPH_MAX_DIMS];
  memset(pv, 0, sizeof pv);
  memset(av, 0, sizeof av);
  GNode *pads = NULL, *axes = NULL, *value = imp_input(im, 2);
  int k = nd;
  if (imp_opset(im) >= 18 && imp_input(im, 3)) {
    k = slice_operand(im, 3, -nd, nd - 1, iota, av, &axes);
    if (k < 0) return k;
  } else {
    int64_t len = nd, *d;
    if (!(axes = imp_new_i64(im, 1, &len, &d))) return -1;
    for (int j = 0; j < nd; j++) d[j] = j, av[j] = (RtVal){NULL, j};
  }
  GNode *pin = imp_input(im, 1);
  if (pin->kind == GN_VAR && (pin->type.ndim != 1 || pin->type.shape[0] > 2 * GRAPH_MAX_DIMS)) return -2;
  int np = pin->kind == GN_VAR ? (int)pin->type.shape[0] : 2 * GRAPH_MAX_DIMS;
  if (pin->kind == GN_VAR) {
    Graph *g = imp_graph(im);
    for (int j = 0; j < np; j++) {
      int before = g->syms.len;
      GSym *s = graph_value_sym(g, pin->name, j, -2147483647, 2147483647);
      if (!s) return imp_error(im, "input 1 ('%s'): %s", pin->name, kiln_get_error());
      if (g->syms.len > before) s->rep = 0;
      pv[j] = (RtVal){s, 0};
    }
    if (pin->type.dtype.code != kDLInt) return -2;
    pads = pin;
  } else {
    np = slice_operand(im, 1, 0, 0, zeros, pv, &pads);
    if (np < 0) return np;
  }
  if (np != 2 * k) return imp_error(im, "pads has %d values for %d axes, expected %d", np, k, 2 * k);
  /* the value: a graph input of one element, a constant, or 0 */
  if (value && (ttype_numel(&value->type) != 1 || !dt_eq(value->type.dtype, x->type.dtype) || value->type.ndim > 1))
    return imp_error(im, "constant_value must be one element of the data's type %s", dt_str(x->type.dtype));
  if (!value) value = imp_scalar(im, 0, x->type.dtype);
  if (!value) return -1;
  StrBuf sd = {0};
  int64_t shape[GRAPH_MAX_DIMS];
  bool bad = false;
  bool constant = !strcmp(mode, "constant");
  for (int d = 0; d < nd; d++) {
    if (d) sb_puts(&sd, ",");
    int64_t D = x->type.shape[d], rep = D, crop = D;
    int reps_hit = 0, nh = 0;
    bool dyn = false;
    StrBuf side[2] = {{0}, {0}}, hits = {0};
    for (int sd2 = 0; sd2 < 2; sd2++) sb_puts(&side[sd2], " 0");
    for (int j = 0; j < k; j++) {
      const RtVal *a = &av[j];
      if (!a->sym && a->c != d && a->c != d - nd) continue;
      StrBuf h = {0};
      if (a->sym) sb_printf(&h, " %s %d eq %s %d eq or", a->sym->name, d, a->sym->name, d - nd);
      else sb_puts(&h, " 1");
      for (int sd2 = 0; sd2 < 2; sd2++) {
        const RtVal *p = &pv[j + sd2 * k];
        sb_puts(&side[sd2], h.data);
        put_val(&side[sd2], p);
        sb_puts(&side[sd2], " * +");
        dyn |= p->sym != NULL;
      }
      sb_puts(&hits, h.data);
      if (nh++) sb_puts(&hits, " +");
      dyn |= a->sym != NULL;
      int64_t ar = a->sym ? a->sym->rep : a->c;
      if (ar == d || ar == d - nd) {
        reps_hit++;
        for (int sd2 = 0; sd2 < 2; sd2++) {
          int64_t pr = pv[j + sd2 * k].sym ? pv[j + sd2 * k].sym->rep : pv[j + sd2 * k].c;
          rep += pr;
          crop += pr < 0 ? pr : 0;
        }
      }
      sb_free(&h);
    }
    /* D + begin + end, or -1 where that is negative, two entries name d,
     * or (edge, reflect, wrap) the crops leave nothing to repeat */
    shape[d] = reps_hit > 1 || (!constant && crop < 1 && rep > 0) ? -1 : rep;
    if (shape[d] < 1 && D > 0) bad = true;
    if (dyn) {
      StrBuf X = {0};
      sb_printf(&X, " %lld%s +%s +", (long long)D, side[0].data, side[1].data);
      sb_printf(&sd, "%s 0 ge", X.data + 1);
      if (nh > 1 || dyn) sb_printf(&sd, "%s 1 le and", hits.data);
      if (!constant) sb_printf(&sd, " %lld%s 0 min +%s 0 min + 1 ge and", (long long)D, side[0].data, side[1].data);
      sb_printf(&sd, "%s -1 sel", X.data);
      sb_free(&X);
    }
    for (int sd2 = 0; sd2 < 2; sd2++) sb_free(&side[sd2]);
    sb_free(&hits);
  }
  if (bad) { /* no output at the representative values: the compile-time path */
    sb_free(&sd);
    return -2;
  }
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", nd, shape);
  ga_str(&a, "pad_mode", mode);
  ga_str(&a, "sym_dims", sd.data ? sd.data : "");
  sb_free(&sd);
  /* the value only in constant mode, where the kernel reads it */
  GNode *args[4] = {x, pads, axes, value};
  return out0(im, imp_call(im, "dyn.pad", constant ? 4 : 3, args, a));
}

/* CenterCropPad whose shape is a graph input: dyn.center_crop_pad, axis
 * axes[j]'s size the value shape_j (in [0, 2^31 - 1]; representative
 * value the axis's own size), the kernel reading the sizes for the
 * offsets.  -2 when the shape is not a graph input. */
int onnx_center_crop_pad_runtime(Importer *im) {
  GNode *x = imp_input(im, 0), *sh = imp_input(im, 1);
  if (!x || !sh || sh->kind != GN_VAR || ttype_is_symbolic(&x->type) || sh->type.ndim != 1 ||
      sh->type.dtype.code != kDLInt || (sh->type.dtype.bits != 64 && sh->type.dtype.bits != 32) ||
      ttype_is_symbolic(&sh->type))
    return -2;
  int nd = x->type.ndim, na = nd;
  const int64_t *av = onnx_attr_ints(N(im), "axes", &na);
  if (!av) na = nd;
  if (sh->type.shape[0] != na) return imp_error(im, "shape has %lld values for %d axes", (long long)sh->type.shape[0], na);
  int64_t len = na, *axd, shape[GRAPH_MAX_DIMS];
  GNode *axes = imp_new_i64(im, 1, &len, &axd);
  if (!axes) return -1;
  GSym *dims[GRAPH_MAX_DIMS] = {0};
  Graph *g = imp_graph(im);
  for (int d = 0; d < nd; d++) shape[d] = x->type.shape[d];
  for (int j = 0; j < na; j++) {
    int ax = j;
    if (av && imp_norm_axis(im, av[j], nd, &ax)) return -1;
    if (dims[ax]) return imp_error(im, "axis %d is named twice", ax);
    axd[j] = ax;
    int before = g->syms.len;
    if (!(dims[ax] = graph_value_sym(g, sh->name, j, 0, GRAPH_MAX_ELEMS)))
      return imp_error(im, "input 1 ('%s'): %s", sh->name, kiln_get_error());
    if (g->syms.len > before) dims[ax]->rep = x->type.shape[ax];
    shape[ax] = dims[ax]->rep;
    if (shape[ax] < 1 && x->type.shape[ax] > 0) return -2; /* empty at compile time: the compile-time path */
  }
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", nd, shape);
  ga_str(&a, "sym_dims", imp_sym_dims(im, nd, dims, NULL));
  GNode *args[3] = {x, sh, axes};
  return out0(im, imp_call(im, "dyn.center_crop_pad", 3, args, a));
}

/* Range over int32/int64 whose start, limit or delta is a graph input:
 * dyn.arange(start, delta), its length max(ceil((limit - start) / delta),
 * 0) as an expression of the values (-1 for a delta of 0), the kernel
 * reading start and delta.  Representative values 0, 1, 1 (one element).
 * -2 when none is a graph input. */
int onnx_range_runtime(Importer *im) {
  GNode *in[3];
  bool runtime = false;
  for (int i = 0; i < 3; i++) {
    in[i] = imp_input(im, i);
    if (!in[i] || (in[i]->kind != GN_VAR && in[i]->kind != GN_CONST)) return -2;
    runtime |= in[i]->kind == GN_VAR;
  }
  DType dt = in[0]->type.dtype;
  if (!runtime || dt.code != kDLInt || (dt.bits != 32 && dt.bits != 64)) return -2;
  static const int64_t reps[3] = {0, 1, 1};
  RtVal v[3];
  for (int i = 0; i < 3; i++) {
    if (!dt_eq(in[i]->type.dtype, dt) || ttype_numel(&in[i]->type) != 1 || in[i]->type.ndim > 1)
      return imp_error(im, "start, limit and delta must be scalars of one integer type");
    if (in[i]->kind == GN_CONST) {
      v[i] = (RtVal){NULL, (int64_t)gnode_scalar_value(in[i])};
      continue;
    }
    GSym *s = NULL;
    Graph *g = imp_graph(im);
    int before = g->syms.len;
    if (!(s = graph_value_sym(g, in[i]->name, 0, -2147483647, 2147483647)))
      return imp_error(im, "input %d ('%s'): %s", i, in[i]->name, kiln_get_error());
    if (g->syms.len > before) s->rep = reps[i];
    v[i] = (RtVal){s, 0};
  }
  int64_t a = v[0].sym ? v[0].sym->rep : v[0].c, b = v[1].sym ? v[1].sym->rep : v[1].c,
          st = v[2].sym ? v[2].sym->rep : v[2].c;
  if (st == 0) return -2;
  int64_t span = st > 0 ? b - a : a - b, step = st > 0 ? st : -st, len = span > 0 ? (span + step - 1) / step : 0;
  if (len < 1) return -2; /* empty at compile time: the compile-time path */
  StrBuf e = {0}, dd = {0};
  put_val(&dd, &v[2]);
  put_val(&dd, &v[2]);
  sb_puts(&dd, " 0 eq +"); /* delta, 0 made 1 for the divisions */
  put_val(&e, &v[2]);
  sb_puts(&e, " 0 ne");
  put_val(&e, &v[2]);
  sb_puts(&e, " 0 gt");
  put_val(&e, &v[1]);
  put_val(&e, &v[0]);
  sb_printf(&e, " -%s + 1 -%s fdiv", dd.data, dd.data);
  put_val(&e, &v[0]);
  put_val(&e, &v[1]);
  sb_printf(&e, " - 0%s - + 1 - 0%s - fdiv sel 0 max -1 sel", dd.data, dd.data);
  GAttrs at = gattrs_new();
  ga_int(&at, "len", len);
  ga_str(&at, "sym_dims", e.data + 1);
  sb_free(&e);
  sb_free(&dd);
  GNode *args[2] = {in[0], in[2]};
  return out0(im, imp_call(im, "dyn.arange", 2, args, at));
}

/* ---- Resize and Upsample with scales or sizes given at run time ---- */

/* Resize (or Upsample) whose scales (float) or sizes (int64) are the
 * graph input val, element i for axis axes[i]: dyn.resize, the kernel
 * reading the value for its coordinate transform.  Each resized
 * dimension is a value symbol: floor(D * scale) of a scale (a float
 * value, section 4e of docs/symbolic_shapes.md), the size itself, or, for
 * keep_aspect_ratio_policy, the smallest (not_larger) or largest
 * (not_smaller) over the named axes j of floor((2 D s_j + D_j) / (2 D_j)),
 * which is ONNX's round_half_up(D * s_j / D_j) in exact arithmetic.  The
 * representative values are those of the identity (the input's size).
 * Nearest resizes every axis in one call; linear and cubic, which are
 * separable, resize one axis per call. */
int onnx_resize_runtime(Importer *im, GNode *x, GNode *val, bool sizes, int na, const int64_t *axes, const char *policy) {
  const char *op = N(im)->op_type;
  const char *mode = onnx_attr_string(N(im), "mode", "nearest");
  bool old = !strcmp(op, "Upsample") || imp_opset(im) < 11;
  const char *ctm = onnx_attr_string(N(im), "coordinate_transformation_mode", old ? "asymmetric" : "half_pixel");
  const char *what = sizes ? "sizes" : "scales";
  if (!strcmp(ctm, "tf_crop_and_resize"))
    return imp_error(im, "coordinate_transformation_mode 'tf_crop_and_resize' with %s given at run time is not supported "
                         "(bind input '%s' with --bind)", what, val->name);
  if (!strcmp(op, "Resize") && imp_opset(im) >= 18 && onnx_attr_int(N(im), "antialias", 0))
    return imp_error(im, "antialias = 1 with %s given at run time is not supported (bind input '%s' with --bind)", what,
                     val->name);
  if (ttype_is_symbolic(&x->type))
    return imp_error(im, "%s given at run time need an input of static shape, got %s", what, ttype_str(&x->type));
  int nd = x->type.ndim;
  if (val->type.ndim != 1 || ttype_is_symbolic(&val->type) || val->type.shape[0] != na)
    return imp_error(im, "%s ('%s') must be 1-D with %d elements, got %s", what, val->name, na, ttype_str(&val->type));
  if (sizes ? !dt_eq(val->type.dtype, DT_I64) : !dt_eq(val->type.dtype, DT_F32))
    return imp_error(im, "%s ('%s') must be %s, got %s", what, val->name, sizes ? "int64" : "float32", dt_str(val->type.dtype));
  for (int i = 0; i < na; i++)
    if (x->type.shape[axes[i]] < 1)
      return imp_error(im, "axis %d of the input is empty: a resize needs at least one element", (int)axes[i]);
  Graph *g = imp_graph(im);
  GSym *sym[MAXD] = {0};
  for (int i = 0; i < na; i++) {
    int before = g->syms.len;
    int64_t D = x->type.shape[axes[i]];
    GSym *s = sizes ? graph_value_sym(g, val->name, i, 1, GRAPH_MAX_ELEMS)
                    : graph_float_value_sym(g, val->name, i, (double)D, NULL, 1, GRAPH_MAX_ELEMS);
    if (!s) return imp_error(im, "input '%s': %s", val->name, kiln_get_error());
    if (g->syms.len > before) s->rep = D;
    sym[i] = s;
  }
  bool keep = sizes && strcmp(policy, "stretch");
  /* the output's dimensions at the representative values, and as postfix */
  int64_t rep[MAXD];
  char *dims[MAXD] = {0};
  for (int d = 0; d < nd; d++) rep[d] = x->type.shape[d];
  for (int i = 0; i < na; i++) {
    int64_t D = x->type.shape[axes[i]];
    StrBuf e = {0};
    if (!keep) {
      rep[axes[i]] = sym[i]->rep;
      sb_puts(&e, sym[i]->name);
    } else {
      int64_t r = 0;
      for (int j = 0; j < na; j++) {
        int64_t Dj = x->type.shape[axes[j]], v = (2 * D * sym[j]->rep + Dj) / (2 * Dj);
        r = j == 0 ? v : policy[4] == 'l' ? (v < r ? v : r) : (v > r ? v : r);
        sb_printf(&e, "%s%s %lld * %lld + %lld fdiv%s", j ? " " : "", sym[j]->name, (long long)(2 * D), (long long)Dj,
                  (long long)(2 * Dj), j == 0 ? "" : policy[4] == 'l' ? " min" : " max");
      }
      rep[axes[i]] = r;
    }
    kiln_arena_push(g->arena);
    dims[axes[i]] = kstrdup(e.data);
    kiln_arena_pop();
    sb_free(&e);
  }
  int nodes = !strcmp(mode, "nearest") ? 1 : na;
  GNode *y = x;
  int64_t cur[MAXD], ax[MAXD], ins[MAXD];
  char *cdims[MAXD] = {0};
  for (int d = 0; d < nd; d++) cur[d] = ins[d] = x->type.shape[d];
  for (int i = 0; i < na; i++) ax[i] = axes[i];
  for (int k = 0; k < nodes; k++) {
    int64_t res[MAXD];
    int nr = 0;
    if (nodes == 1)
      for (int i = 0; i < na; i++) res[nr++] = i;
    else
      res[nr++] = k;
    for (int r = 0; r < nr; r++) {
      cur[axes[res[r]]] = rep[axes[res[r]]];
      cdims[axes[res[r]]] = dims[axes[res[r]]];
    }
    StrBuf sd = {0};
    for (int d = 0; d < nd; d++) sb_printf(&sd, "%s%s", d ? "," : "", cdims[d] ? cdims[d] : "");
    GAttrs a = gattrs_new();
    ga_str(&a, "by", sizes ? (keep ? policy : "sizes") : "scales");
    ga_ints(&a, "axes", na, ax);
    ga_ints(&a, "resize", nr, res);
    ga_ints(&a, "in_shape", nd, ins);
    ga_ints(&a, "shape", nd, cur);
    ga_str(&a, "method", mode);
    ga_str(&a, "coordinate_transformation_mode", ctm);
    ga_str(&a, "nearest_mode", onnx_attr_string(N(im), "nearest_mode", old ? "floor" : "round_prefer_floor"));
    ga_float(&a, "cubic_coeff_a", onnx_attr_float(N(im), "cubic_coeff_a", -0.75f));
    ga_int(&a, "exclude_outside", onnx_attr_int(N(im), "exclude_outside", 0));
    kiln_arena_push(g->arena);
    ga_str(&a, "sym_dims", kstrdup(sd.data ? sd.data : ""));
    kiln_arena_pop();
    sb_free(&sd);
    GNode *args[2] = {y, val};
    y = imp_call(im, "dyn.resize", 2, args, a);
    if (!y) return -1;
  }
  return out0(im, y);
}

/* ---- OneHot with depth or values given at run time ---- */

/* OneHot whose depth or values are graph inputs: dyn.one_hot(indices,
 * values), the kernel reading [off_value, on_value] (any tensor: a graph
 * input, a constant, or computed).  A depth given at
 * run time is a value symbol in [1, 2^31 - 1], the new dimension: ONNX
 * casts a float depth to int64, which for a positive depth is floor(x * 1)
 * (a float value, section 4e of docs/symbolic_shapes.md). */
int onnx_one_hot_runtime(Importer *im) {
  GNode *idx = imp_input(im, 0), *dn = imp_input(im, 1), *vals = imp_input(im, 2);
  if (!idx || !dn || !vals) return imp_error(im, "needs indices, depth and values");
  if (ttype_is_symbolic(&idx->type)) return imp_error(im, "indices of symbolic shape %s with depth or values given at run time are not supported", ttype_str(&idx->type));
  if (vals->type.ndim != 1 || vals->type.shape[0] != 2 || ttype_is_symbolic(&vals->type))
    return imp_error(im, "values must hold [off_value, on_value], got %s", ttype_str(&vals->type));
  if (dn->kind != GN_VAR && dn->kind != GN_CONST) return imp_error(im, "depth must be a graph input or a constant");
  int nd = idx->type.ndim + 1, ax;
  if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", -1), nd, &ax)) return -1;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ax);
  if (dn->kind == GN_CONST) {
    int64_t depth;
    if (imp_input_i64(im, 1, 1, IMP_MAX_COUNT, &depth)) return -1;
    ga_int(&a, "depth", depth);
  } else {
    /* a bfloat16 result is narrowed after the float32 kernel by ops that
     * take static shapes (ops/lowp.c) */
    if (imp_input_lowp(im, 2) == ONNX_DT_BFLOAT16)
      return imp_error(im, "bfloat16 values with a depth given at run time are not supported (bind input '%s' with "
                           "--bind)", dn->name);
    DType dt = dn->type.dtype;
    if (ttype_numel(&dn->type) != 1 || dn->type.ndim > 1 ||
        !(dt_eq(dt, DT_F32) || dt_eq(dt, DT_F64) || dt_eq(dt, DT_I64) || dt_eq(dt, DT_I32)))
      return imp_error(im, "depth ('%s') must be one float32, float64, int32 or int64 element, got %s", dn->name,
                       ttype_str(&dn->type));
    Graph *g = imp_graph(im);
    GSym *s = dt_is_float(dt) ? graph_float_value_sym(g, dn->name, 0, 1.0, NULL, 1, GRAPH_MAX_ELEMS)
                              : graph_value_sym(g, dn->name, 0, 1, GRAPH_MAX_ELEMS);
    if (!s) return imp_error(im, "depth ('%s'): %s", dn->name, kiln_get_error());
    GSym *dims[MAXD] = {0};
    dims[ax] = s;
    ga_int(&a, "depth", s->rep);
    ga_str(&a, "sym_dims", imp_sym_dims(im, nd, dims, NULL));
  }
  GNode *args[2] = {idx, vals};
  return out0(im, imp_call(im, "dyn.one_hot", 2, args, a));
}

/* ---- AffineGrid with the size given at run time ---- */

/* AffineGrid whose size ([N, C, H, W] or [N, C, D, H, W], int64) is a
 * graph input: dyn.affine_grid(theta, size), each output element theta
 * applied to its grid coordinates, computed in the kernel from the
 * run-time sizes.  N must be theta's (a value symbol with bounds
 * [N, N]); C is not read; D, H, W are value symbols. */
int onnx_affine_grid_runtime(Importer *im) {
  GNode *theta = imp_input(im, 0), *sv = imp_input(im, 1);
  if (!theta || !sv) return imp_error(im, "needs theta and size");
  if (sv->type.ndim != 1 || ttype_is_symbolic(&sv->type) || (sv->type.shape[0] != 4 && sv->type.shape[0] != 5) ||
      !dt_eq(sv->type.dtype, DT_I64))
    return imp_error(im, "size ('%s') must be 4 or 5 int64 values, got %s", sv->name, ttype_str(&sv->type));
  int k = (int)sv->type.shape[0] - 2;
  if (ttype_is_symbolic(&theta->type) || theta->type.ndim != 3 || theta->type.shape[1] != k ||
      theta->type.shape[2] != k + 1 || !dt_is_float(theta->type.dtype))
    return imp_error(im, "theta %s must be a float [N, %d, %d]", ttype_str(&theta->type), k, k + 1);
  int64_t batch = theta->type.shape[0];
  Graph *g = imp_graph(im);
  GSym *dims[MAXD] = {0};
  int64_t shape[MAXD];
  shape[0] = batch;
  shape[k + 1] = k;
  /* size[0] must be theta's N: a symbol only its bounds check */
  if (!graph_value_sym(g, sv->name, 0, batch, batch)) return imp_error(im, "size ('%s'): %s", sv->name, kiln_get_error());
  for (int a = 0; a < k; a++) {
    GSym *s = graph_value_sym(g, sv->name, 2 + a, 1, GRAPH_MAX_ELEMS);
    if (!s) return imp_error(im, "size ('%s'): %s", sv->name, kiln_get_error());
    dims[1 + a] = s;
    shape[1 + a] = s->rep;
  }
  GAttrs a = gattrs_new();
  ga_int(&a, "align_corners", onnx_attr_int(N(im), "align_corners", 0) != 0);
  ga_ints(&a, "shape", k + 2, shape);
  ga_str(&a, "sym_dims", imp_sym_dims(im, k + 2, dims, NULL));
  GNode *args[2] = {theta, sv};
  return out0(im, imp_call(im, "dyn.affine_grid", 2, args, a));
}

/* ---- MaxUnpool with output_shape given at run time ---- */

/* MaxUnpool's unpooled result y padded at the end of each axis to
 * output_shape (the graph input osv), as ONNX's reference does:
 * dyn.pad(y, [0, ..., osv - shape(y)], axes), each dimension the value
 * symbol osv_d, in [D, 2^31 - 1] (N and C: exactly D), representative
 * value D (no padding). */
int onnx_unpool_pad_runtime(Importer *im, GNode *y, GNode *osv) {
  int nd = y->type.ndim;
  Graph *g = imp_graph(im);
  GSym *dims[MAXD] = {0};
  int64_t shape[MAXD], iota[MAXD], ps[1] = {2 * nd};
  for (int d = 0; d < nd; d++) {
    int64_t D = y->type.shape[d];
    int before = g->syms.len;
    GSym *s = graph_value_sym(g, osv->name, d, D, d < 2 ? D : GRAPH_MAX_ELEMS);
    if (!s) return imp_error(im, "output_shape ('%s'): %s", osv->name, kiln_get_error());
    if (g->syms.len > before) s->rep = D;
    dims[d] = s;
    shape[d] = s->rep;
    iota[d] = d;
  }
  void *p, *q;
  GNode *zeros = imp_new_const(im, DT_I64, 1, (int64_t[]){nd}, &p), *cur = imp_new_const(im, DT_I64, 1, (int64_t[]){nd}, &q);
  if (!zeros || !cur) return -1;
  memset(p, 0, sizeof(int64_t) * (size_t)nd);
  memcpy(q, y->type.shape, sizeof(int64_t) * (size_t)nd);
  GNode *axes = imp_new_const(im, DT_I64, 1, (int64_t[]){nd}, &p);
  if (!axes) return -1;
  memcpy(p, iota, sizeof(int64_t) * (size_t)nd);
  GNode *parts[2] = {zeros, bin(im, "subtract", osv, cur)};
  GAttrs ca = gattrs_new();
  ga_int(&ca, "axis", 0);
  GNode *pads = parts[1] ? imp_call(im, "concatenate", 2, parts, ca) : NULL;
  if (!pads || pads->type.shape[0] != ps[0]) return imp_error(im, "output_shape: could not build the pads");
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", nd, shape);
  ga_str(&a, "pad_mode", "constant");
  ga_str(&a, "sym_dims", imp_sym_dims(im, nd, dims, NULL));
  GNode *args[4] = {y, pads, axes, imp_scalar_like(im, 0, y)};
  return out0(im, imp_call(im, "dyn.pad", 4, args, a));
}
