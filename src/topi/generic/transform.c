/*
 * transform.c - data movement: reshape, transpose, squeeze, unsqueeze,
 * flatten, concat, split, strided_slice, gather, gather_elements, tile,
 * expand, resize, depth_to_space, space_to_depth, layout_transform,
 * one_hot and arange.  Every output is tag "injective": each element is a
 * function of input elements, no reduction.
 *
 * Index expressions use int32 (the axis variables' type); a row-major flat
 * index (reshape) is at most the element count, which fits for any tensor
 * a model holds.  Reads are never outside the input: gather clamps its
 * indices, concat selects the input that holds the element.
 */
#include <math.h>
#include <string.h>

#include "../topi.h"

static Expr *c32(int64_t v) { return ir_i32(v); }

static Tensor *inj(const char *name, int nd, Expr **shape, Expr **v, Expr *body) {
  return te_compute(name, nd, shape, v, body, "injective");
}

static int64_t cdim(const char *op, Tensor *t, int d) {
  int64_t v;
  if (!ir_is_const_int(t->shape[d], &v)) {
    kiln_set_error("%s: dimension %d of '%s' is symbolic (%s); it must be constant", op, d, t->name,
                   ir_expr_str(t->shape[d]));
    return -1;
  }
  return v;
}

static int const_shape(const char *op, Tensor *t, int64_t *out) {
  for (int d = 0; d < t->ndim; d++)
    if ((out[d] = cdim(op, t, d)) < 0) return -1;
  return 0;
}

/* Row-major flat index of idx in shape. */
static Expr *flat_index(int nd, Expr **idx, Expr **shape) {
  Expr *f = c32(0);
  for (int d = 0; d < nd; d++) f = ir_add(ir_mul(f, shape[d]), idx[d]);
  return ir_simplify(f);
}

/* Indices of flat index f in shape. */
static Expr **unravel(Expr *f, int nd, Expr **shape) {
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = nd - 1; d >= 0; d--) {
    if (d == 0) {
      idx[d] = f;
    } else {
      idx[d] = ir_floormod(f, shape[d]);
      f = ir_floordiv(f, shape[d]);
    }
  }
  return idx;
}

/* ---- reshape family ---- */

/* Reshape to a fully known shape (element counts already checked). */
static Tensor *reshape_to(const char *name, Tensor *x, int nd, Expr **shape) {
  Expr **v = te_axis_vars(nd, NULL);
  Expr *f = flat_index(nd, v, shape);
  Expr **idx = unravel(f, x->ndim, x->shape);
  return inj(name, nd, shape, v, te_read(x, x->ndim, idx));
}

Tensor *topi_reshape_expr(Tensor *x, int ndim, Expr **shape) {
  if (!x) return NULL;
  return reshape_to("T_reshape", x, ndim, shape);
}

Tensor *topi_reshape(Tensor *x, int ndim, const int64_t *shape) {
  const char *op = "reshape";
  if (!x) return NULL;
  if (ndim < 0 || (ndim > 0 && !shape)) return kiln_set_error("%s: no shape given", op), NULL;
  int64_t in[64];
  if (x->ndim > 64 || ndim > 64) return kiln_set_error("%s: rank too large", op), NULL;
  if (const_shape(op, x, in)) return NULL;
  int64_t total = 1;
  for (int d = 0; d < x->ndim; d++) total *= in[d];
  int64_t out[64], known = 1;
  int infer = -1;
  for (int d = 0; d < ndim; d++) {
    int64_t s = shape[d];
    if (s == 0) {
      if (d >= x->ndim)
        return kiln_set_error("%s: shape[%d] = 0 copies a dimension the input (rank %d) does not have", op, d, x->ndim),
               NULL;
      s = in[d];
    }
    if (s == -1) {
      if (infer >= 0) return kiln_set_error("%s: more than one -1 in the shape", op), NULL;
      infer = d;
      out[d] = -1;
      continue;
    }
    if (s < 0) return kiln_set_error("%s: shape[%d] = %lld is negative", op, d, (long long)s), NULL;
    out[d] = s;
    known *= s;
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      return kiln_set_error("%s: cannot infer the -1 dimension: %lld elements do not divide into parts of %lld", op,
                            (long long)total, (long long)known),
             NULL;
    out[infer] = total / known;
    known *= out[infer];
  }
  Expr **sh = KNEWN(Expr *, ndim > 0 ? ndim : 1);
  for (int d = 0; d < ndim; d++) sh[d] = c32(out[d]);
  if (known != total)
    return kiln_set_error("%s: cannot reshape %s (%lld elements) to %s (%lld elements)", op,
                          topi_shape_str(x->ndim, x->shape), (long long)total, topi_shape_str(ndim, sh), (long long)known),
           NULL;
  return reshape_to("T_reshape", x, ndim, sh);
}

Tensor *topi_flatten(Tensor *x, int axis_in) {
  const char *op = "flatten";
  if (!x) return NULL;
  int nd = x->ndim;
  int64_t axis = axis_in < 0 ? axis_in + nd : axis_in;
  if (axis < 0 || axis > nd)
    return kiln_set_error("%s: axis %d is out of range for a tensor of rank %d (expected -%d..%d)", op, axis_in, nd, nd,
                          nd),
           NULL;
  int64_t in[64];
  if (nd > 64 || const_shape(op, x, in)) return NULL;
  int64_t a = 1, b = 1;
  for (int d = 0; d < nd; d++) *(d < axis ? &a : &b) *= in[d];
  return reshape_to("T_flatten", x, 2, (Expr *[]){c32(a), c32(b)});
}

Tensor *topi_squeeze(Tensor *x, int naxes, const int64_t *axes) {
  const char *op = "squeeze";
  if (!x) return NULL;
  int nd = x->ndim;
  bool drop[64] = {0};
  if (nd > 64) return kiln_set_error("%s: rank too large", op), NULL;
  if (naxes < 0 || (naxes > 0 && !axes)) return kiln_set_error("%s: bad axes", op), NULL;
  for (int i = 0; i < naxes; i++) {
    int a;
    if (topi_normalize_axis(op, axes[i], nd, &a)) return NULL;
    if (drop[a]) return kiln_set_error("%s: axis %lld is listed twice", op, (long long)axes[i]), NULL;
    if (!ir_is_int_value(x->shape[a], 1))
      return kiln_set_error("%s: dimension %d has size %s, not 1", op, a, ir_expr_str(x->shape[a])), NULL;
    drop[a] = true;
  }
  if (naxes == 0)
    for (int d = 0; d < nd; d++) drop[d] = ir_is_int_value(x->shape[d], 1);
  int ond = 0;
  for (int d = 0; d < nd; d++) ond += !drop[d];
  Expr **shape = KNEWN(Expr *, ond > 0 ? ond : 1);
  Expr **v = te_axis_vars(ond, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  int o = 0;
  for (int d = 0; d < nd; d++) {
    if (drop[d]) {
      idx[d] = c32(0);
    } else {
      shape[o] = x->shape[d];
      idx[d] = v[o++];
    }
  }
  return inj("T_squeeze", ond, shape, v, te_read(x, nd, idx));
}

Tensor *topi_unsqueeze(Tensor *x, int naxes, const int64_t *axes) {
  const char *op = "unsqueeze";
  if (!x) return NULL;
  int ond = x->ndim + naxes;
  bool ins[64] = {0};
  if (ond > 64 || naxes < 0 || (naxes > 0 && !axes)) return kiln_set_error("%s: bad axes", op), NULL;
  for (int i = 0; i < naxes; i++) {
    int a;
    if (topi_normalize_axis(op, axes[i], ond, &a)) return NULL;
    if (ins[a]) return kiln_set_error("%s: axis %lld is listed twice", op, (long long)axes[i]), NULL;
    ins[a] = true;
  }
  Expr **shape = KNEWN(Expr *, ond > 0 ? ond : 1);
  Expr **v = te_axis_vars(ond, NULL);
  Expr **idx = KNEWN(Expr *, x->ndim > 0 ? x->ndim : 1);
  int k = 0;
  for (int d = 0; d < ond; d++) {
    if (ins[d]) {
      shape[d] = c32(1);
    } else {
      shape[d] = x->shape[k];
      idx[k++] = v[d];
    }
  }
  return inj("T_unsqueeze", ond, shape, v, te_read(x, x->ndim, idx));
}

Tensor *topi_transpose(Tensor *x, const int64_t *perm) {
  const char *op = "transpose";
  if (!x) return NULL;
  int nd = x->ndim;
  int p[64];
  bool seen[64] = {0};
  if (nd > 64) return kiln_set_error("%s: rank too large", op), NULL;
  for (int d = 0; d < nd; d++) {
    int64_t a = perm ? perm[d] : nd - 1 - d;
    if (a < 0) a += nd;
    if (a < 0 || a >= nd || seen[a]) {
      StrBuf sb = {0};
      for (int i = 0; i < nd; i++) sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)(perm ? perm[i] : nd - 1 - i));
      kiln_set_error("%s: perm [%s] is not a permutation of the %d axes", op, sb.data ? sb.data : "", nd);
      sb_free(&sb);
      return NULL;
    }
    seen[a] = true;
    p[d] = (int)a;
  }
  Expr **shape = KNEWN(Expr *, nd > 0 ? nd : 1);
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) {
    shape[d] = x->shape[p[d]];
    idx[p[d]] = v[d];
  }
  return inj("T_transpose", nd, shape, v, te_read(x, nd, idx));
}

/* ---- concat, split, slice ---- */

Tensor *topi_concat(int n, Tensor **xs, int axis_in) {
  const char *op = "concat";
  if (n <= 0 || !xs) return kiln_set_error("%s: no inputs", op), NULL;
  for (int i = 0; i < n; i++)
    if (!xs[i]) return NULL;
  Tensor *x0 = xs[0];
  int nd = x0->ndim, axis;
  if (topi_normalize_axis(op, axis_in, nd, &axis)) return NULL;
  for (int i = 1; i < n; i++) {
    Tensor *x = xs[i];
    if (!dt_eq(x->dtype, x0->dtype))
      return kiln_set_error("%s: input %d is %s, input 0 is %s", op, i, dt_str(x->dtype), dt_str(x0->dtype)), NULL;
    bool ok = x->ndim == nd;
    for (int d = 0; ok && d < nd; d++)
      if (d != axis) ok = ir_expr_equal(x->shape[d], x0->shape[d]) ||
                          (ir_is_const_int(x->shape[d], NULL) && ir_is_const_int(x0->shape[d], NULL) &&
                           x->shape[d]->int_value == x0->shape[d]->int_value);
    if (!ok)
      return kiln_set_error("%s: input %d has shape %s, input 0 has %s; they must agree on every axis but %d", op, i,
                            topi_shape_str(x->ndim, x->shape), topi_shape_str(nd, x0->shape), axis),
             NULL;
  }
  Expr **shape = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) shape[d] = x0->shape[d];
  Expr **offs = KNEWN(Expr *, n + 1);
  offs[0] = c32(0);
  for (int i = 0; i < n; i++) offs[i + 1] = ir_simplify(ir_add(offs[i], xs[i]->shape[axis]));
  shape[axis] = offs[n];
  Expr **v = te_axis_vars(nd, NULL);
  /* the last input by default, earlier ones where the index falls in them */
  Expr *body = NULL;
  for (int i = n - 1; i >= 0; i--) {
    Expr **idx = KNEWN(Expr *, nd);
    for (int d = 0; d < nd; d++) idx[d] = v[d];
    idx[axis] = ir_simplify(ir_sub(v[axis], offs[i]));
    Expr *rd = te_read(xs[i], nd, idx);
    if (!body) {
      body = rd;
      continue;
    }
    if (ir_is_int_value(xs[i]->shape[axis], 0)) continue;
    body = ir_select(ir_lt(v[axis], offs[i + 1]), rd, body);
  }
  return inj("T_concat", nd, shape, v, body);
}

/* A slice with a per-axis start and step (positive or negative) and the
 * output shape; indices in = start + out * step. */
static Tensor *slice_to(const char *name, Tensor *x, const int64_t *start, const int64_t *step, Expr **shape) {
  int nd = x->ndim;
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) idx[d] = ir_simplify(ir_add(c32(start[d]), ir_mul(v[d], c32(step[d]))));
  return inj(name, nd, shape, v, te_read(x, nd, idx));
}

int topi_split(Tensor *x, int axis_in, int nout, const int64_t *sizes, Tensor **outs) {
  const char *op = "split";
  if (!x || !outs) return -1;
  if (nout <= 0) return kiln_set_error("%s: number of outputs %d, expected a positive number", op, nout);
  int axis;
  if (topi_normalize_axis(op, axis_in, x->ndim, &axis)) return -1;
  int64_t dim = cdim(op, x, axis);
  if (dim < 0) return -1;
  int64_t *sz = KNEWN(int64_t, nout);
  if (sizes) {
    int64_t total = 0;
    for (int i = 0; i < nout; i++) {
      if (sizes[i] < 0) return kiln_set_error("%s: size %d is %lld, negative", op, i, (long long)sizes[i]);
      sz[i] = sizes[i];
      total += sizes[i];
    }
    if (total != dim)
      return kiln_set_error("%s: sizes add up to %lld but axis %d has %lld elements", op, (long long)total, axis,
                            (long long)dim);
  } else {
    /* equal parts; the last is smaller when they do not divide (ONNX 18) */
    int64_t part = (dim + nout - 1) / nout;
    for (int i = 0; i < nout; i++) {
      int64_t b = i * part, e = b + part < dim ? b + part : dim;
      sz[i] = e > b ? e - b : 0;
    }
    if (dim % nout != 0 && (nout - 1) * part >= dim)
      return kiln_set_error("%s: cannot split %lld elements into %d parts", op, (long long)dim, nout);
  }
  int nd = x->ndim;
  int64_t *start = KNEWN(int64_t, nd), *step = KNEWN(int64_t, nd);
  for (int d = 0; d < nd; d++) step[d] = 1;
  int64_t off = 0;
  for (int i = 0; i < nout; i++) {
    Expr **shape = KNEWN(Expr *, nd);
    for (int d = 0; d < nd; d++) shape[d] = x->shape[d];
    shape[axis] = c32(sz[i]);
    start[axis] = off;
    outs[i] = slice_to(kfmt("T_split_%d", i), x, start, step, shape);
    if (!outs[i]) return -1;
    off += sz[i];
  }
  return 0;
}

Tensor *topi_strided_slice(Tensor *x, int naxes, const int64_t *begin, const int64_t *end, const int64_t *steps,
                           const int64_t *axes) {
  const char *op = "strided_slice";
  if (!x) return NULL;
  int nd = x->ndim;
  if (naxes < 0 || (naxes > 0 && (!begin || !end))) return kiln_set_error("%s: begin and end not given", op), NULL;
  int64_t *start = KNEWN(int64_t, nd > 0 ? nd : 1), *step = KNEWN(int64_t, nd > 0 ? nd : 1);
  Expr **shape = KNEWN(Expr *, nd > 0 ? nd : 1);
  bool seen[64] = {0};
  if (nd > 64) return kiln_set_error("%s: rank too large", op), NULL;
  for (int d = 0; d < nd; d++) {
    start[d] = 0;
    step[d] = 1;
    shape[d] = x->shape[d];
  }
  for (int i = 0; i < naxes; i++) {
    int a;
    if (topi_normalize_axis(op, axes ? axes[i] : i, nd, &a)) return NULL;
    if (seen[a]) return kiln_set_error("%s: axis %d is listed twice", op, a), NULL;
    seen[a] = true;
    int64_t s = steps ? steps[i] : 1;
    if (s == 0) return kiln_set_error("%s: step of axis %d is 0", op, a), NULL;
    int64_t dim = cdim(op, x, a);
    if (dim < 0) return NULL;
    int64_t b = begin[i], e = end[i];
    /* negative values count from the end; far below -dim means before 0 */
    if (b < 0) b = b < -dim ? -1 : b + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim;
    int64_t len;
    if (s > 0) {
      b = b < 0 ? 0 : b > dim ? dim : b;
      e = e < 0 ? 0 : e > dim ? dim : e;
      len = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      len = b > e ? (b - e + (-s) - 1) / (-s) : 0;
    }
    start[a] = len > 0 ? b : 0;
    step[a] = s;
    shape[a] = c32(len);
  }
  return slice_to("T_strided_slice", x, start, step, shape);
}

/* ONNX Slice whose starts, steps and axes are tensors read at run time
 * (dyn.strided_slice): the output's shape is given (Vars the kernel binds
 * from its output tensor); each dimension's first index and step are
 * computed inside the kernel from the 1-D int tensors, the same way as
 * topi_strided_slice's at compile time (a later entry naming the same
 * axis wins, as the shape expressions do). */
Tensor *topi_strided_slice_dyn(Tensor *x, Tensor *begin, Tensor *steps, Tensor *axes, Expr **oshape) {
  const char *op = "dyn.strided_slice";
  if (!x || !begin || !steps || !axes || !oshape) return NULL;
  Tensor *ts[3] = {begin, steps, axes};
  int64_t n = -1;
  for (int i = 0; i < 3; i++) {
    int64_t k;
    if (ts[i]->ndim != 1 || !dt_is_int(ts[i]->dtype) || !ir_is_const_int(ts[i]->shape[0], &k) || (n >= 0 && k != n))
      return kiln_set_error("%s: begin, steps and axes must be 1-D integer tensors of one constant length", op), NULL;
    n = k;
  }
  int nd = x->ndim;
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) {
    Expr *dim = ir_cast(DT_I64, x->shape[d]), *b = ir_i64(0), *s = ir_i64(1);
    for (int64_t j = 0; j < n; j++) {
      Expr *at = ir_i32(j);
      Expr *a = ir_cast(DT_I64, te_read1(axes, at)), *bj = ir_cast(DT_I64, te_read1(begin, at));
      Expr *sj = ir_cast(DT_I64, te_read1(steps, at));
      Expr *hit = ir_or(ir_eq(a, ir_i64(d)), ir_eq(a, ir_i64(d - nd)));
      Expr *w = ir_select(ir_lt(bj, ir_i64(0)), ir_add(bj, dim), bj);
      Expr *up = ir_max(ir_min(w, dim), ir_i64(0));
      Expr *down = ir_max(ir_min(w, ir_sub(dim, ir_i64(1))), ir_i64(-1));
      b = ir_select(hit, ir_select(ir_gt(sj, ir_i64(0)), up, down), b);
      s = ir_select(hit, sj, s);
    }
    idx[d] = n ? ir_cast(DT_I32, ir_add(b, ir_mul(ir_cast(DT_I64, v[d]), s))) : v[d];
  }
  return inj("T_strided_slice", nd, oshape, v, te_read(x, nd, idx));
}

/* Part index of a Split whose sizes are a 1-D int tensor read at run
 * time (dyn.split): the output's shape is given; along axis it starts at
 * the sum of the sizes before it (sizes NULL for part 0). */
Tensor *topi_split_dyn(Tensor *x, Tensor *sizes, int axis, int index, Expr **oshape) {
  const char *op = "dyn.split";
  if (!x || !oshape) return NULL;
  if (axis < 0 || axis >= x->ndim) return kiln_set_error("%s: axis %d is outside rank %d", op, axis, x->ndim), NULL;
  if (index > 0 && (!sizes || sizes->ndim != 1 || !dt_is_int(sizes->dtype)))
    return kiln_set_error("%s: part %d needs the sizes as a 1-D integer tensor", op, index), NULL;
  int nd = x->ndim;
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd);
  Expr *off = ir_i32(0);
  for (int k = 0; k < index; k++) off = ir_add(off, ir_cast(DT_I32, te_read1(sizes, ir_i32(k))));
  for (int d = 0; d < nd; d++) idx[d] = d == axis ? ir_add(v[d], off) : v[d];
  return inj(kfmt("T_split_%d", index), nd, oshape, v, te_read(x, nd, idx));
}

static Tensor *pad_dyn(Tensor *x, Tensor *pads, Tensor *axes, Tensor *value, TopiPadMode mode, Expr **oshape,
                       bool center) {
  const char *op = center ? "dyn.center_crop_pad" : "dyn.pad";
  if (!x || !pads || !axes || !oshape || (mode == TOPI_PAD_CONSTANT && !value && !center)) return NULL;
  int64_t k, np;
  if (axes->ndim != 1 || !dt_is_int(axes->dtype) || !ir_is_const_int(axes->shape[0], &k) || pads->ndim != 1 ||
      !dt_is_int(pads->dtype) || !ir_is_const_int(pads->shape[0], &np) || np != (center ? k : 2 * k))
    return kiln_set_error("%s: %s must be a 1-D integer tensor %s as axes", op, center ? "sizes" : "pads",
                          center ? "as long" : "twice as long"),
           NULL;
  if (value && (value->ndim > 1 || !dt_eq(value->dtype, x->dtype)))
    return kiln_set_error("%s: the value must be one element of the data's type", op), NULL;
  int nd = x->ndim;
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  Expr *inside = NULL;
  /* a negative pad crops first (ONNX's reference slices, then pads): the
   * modes index the cropped axis, [c0, c0 + D') of x */
  for (int d = 0; d < nd; d++) {
    Expr *pb = ir_i64(0), *pe = ir_i64(0);
    for (int64_t j = 0; j < k; j++) {
      Expr *a = ir_cast(DT_I64, te_read1(axes, ir_i32(j)));
      Expr *hit = ir_or(ir_eq(a, ir_i64(d)), ir_eq(a, ir_i64(d - nd)));
      if (center) { /* the pads that take D to size around its centre */
        Expr *D = ir_cast(DT_I64, x->shape[d]), *size = ir_cast(DT_I64, te_read1(pads, ir_i32(j)));
        Expr *b = ir_sub(ir_i64(0), ir_div(ir_sub(D, size), ir_i64(2)));
        pb = ir_select(hit, b, pb);
        pe = ir_select(hit, ir_sub(ir_sub(size, D), b), pe);
        continue;
      }
      pb = ir_select(hit, ir_cast(DT_I64, te_read1(pads, ir_i32(j))), pb);
      pe = ir_select(hit, ir_cast(DT_I64, te_read1(pads, ir_i32(j + k))), pe);
    }
    Expr *c0 = ir_max(ir_sub(ir_i64(0), pb), ir_i64(0));
    /* at least 1 (the shape function refuses an axis cropped away in
     * these modes), so no division below is by 0 */
    Expr *dim = ir_max(ir_sub(ir_sub(ir_cast(DT_I64, x->shape[d]), c0), ir_max(ir_sub(ir_i64(0), pe), ir_i64(0))),
                       ir_i64(1));
    Expr *src = ir_sub(ir_cast(DT_I64, v[d]), ir_max(pb, ir_i64(0))), *i;
    Expr *last = ir_sub(dim, ir_i64(1));
    switch (mode) {
    case TOPI_PAD_WRAP: i = ir_floormod(src, dim); break;
    case TOPI_PAD_REFLECT: {
      /* period 2 (D' - 1): r, or the way back; an axis of 1 repeats it */
      Expr *per = ir_max(ir_mul(ir_i64(2), last), ir_i64(1));
      Expr *r = ir_floormod(src, per);
      i = ir_select(ir_eq(dim, ir_i64(1)), ir_i64(0), ir_select(ir_lt(r, dim), r, ir_sub(per, r)));
      break;
    }
    case TOPI_PAD_CONSTANT: {
      Expr *in = ir_and(ir_ge(src, ir_i64(0)), ir_lt(src, dim));
      inside = inside ? ir_and(inside, in) : in;
      i = ir_max(ir_min(src, last), ir_i64(0));
      break;
    }
    default: i = ir_max(ir_min(src, last), ir_i64(0)); break; /* edge */
    }
    idx[d] = ir_cast(DT_I32, ir_add(i, c0));
  }
  Expr *body = te_read(x, nd, idx);
  if (inside) {
    Expr *zero = ir_i32(0);
    Expr *pad = value ? te_read(value, value->ndim, &zero)
                      : dt_is_bool(x->dtype) ? ir_bool(false) : ir_cast(x->dtype, ir_i32(0));
    body = ir_select(inside, body, pad);
  }
  return inj("T_pad", nd, oshape, v, body);
}

Tensor *topi_pad_dyn(Tensor *x, Tensor *pads, Tensor *axes, Tensor *value, TopiPadMode mode, Expr **oshape) {
  return pad_dyn(x, pads, axes, value, mode, oshape, false);
}

Tensor *topi_center_crop_pad_dyn(Tensor *x, Tensor *sizes, Tensor *axes, Expr **oshape) {
  return pad_dyn(x, sizes, axes, NULL, TOPI_PAD_CONSTANT, oshape, true);
}

Tensor *topi_arange_dyn(Tensor *start, Tensor *delta, Expr *len) {
  if (!start || !delta || !len) return NULL;
  if (!dt_is_int(start->dtype) || !dt_eq(start->dtype, delta->dtype) || start->ndim > 1 || delta->ndim > 1)
    return kiln_set_error("dyn.arange: start and delta must be one integer element each, of one type"), NULL;
  Expr *zero = ir_i32(0);
  Expr **v = te_axis_vars(1, NULL);
  Expr *body = ir_add(ir_cast(DT_I64, te_read(start, start->ndim, &zero)),
                      ir_mul(ir_cast(DT_I64, v[0]), ir_cast(DT_I64, te_read(delta, delta->ndim, &zero))));
  return inj("T_arange", 1, (Expr *[]){len}, v, ir_cast(start->dtype, body));
}

/* ---- gather ---- */

static int check_indices(const char *op, Tensor *ind) {
  if (!dt_is_int(ind->dtype) && !dt_is_uint(ind->dtype))
    return kiln_set_error("%s: indices must be integers, got %s", op, dt_str(ind->dtype));
  return 0;
}

/* An index read from indices, wrapped (negative counts from the end) and
 * clamped into [0, dim). */
static Expr *wrap_clamp(Expr *i, Expr *dim) {
  Expr *d = ir_cast(i->dtype, dim);
  Expr *iv = ir_var("idx", i->dtype);
  Expr *w = dt_is_int(i->dtype) ? ir_select(ir_lt(iv, ir_int(0, i->dtype)), ir_add(iv, d), iv) : iv;
  Expr *c = ir_max(ir_min(w, ir_sub(d, ir_int(1, i->dtype))), ir_int(0, i->dtype));
  return ir_cast(DT_I32, ir_let(iv, i, c));
}

Tensor *topi_gather(Tensor *data, Tensor *indices, int axis_in) {
  const char *op = "gather";
  if (!data || !indices) return NULL;
  if (check_indices(op, indices)) return NULL;
  int axis;
  if (topi_normalize_axis(op, axis_in, data->ndim, &axis)) return NULL;
  int dn = data->ndim, in = indices->ndim, ond = dn - 1 + in;
  Expr **shape = KNEWN(Expr *, ond > 0 ? ond : 1);
  int o = 0;
  for (int d = 0; d < axis; d++) shape[o++] = data->shape[d];
  for (int d = 0; d < in; d++) shape[o++] = indices->shape[d];
  for (int d = axis + 1; d < dn; d++) shape[o++] = data->shape[d];
  Expr **v = te_axis_vars(ond, NULL);
  Expr *i = te_read(indices, in, v + axis);
  if (!i) return NULL;
  Expr **idx = KNEWN(Expr *, dn);
  for (int d = 0; d < axis; d++) idx[d] = v[d];
  idx[axis] = wrap_clamp(i, data->shape[axis]);
  for (int d = axis + 1; d < dn; d++) idx[d] = v[d - 1 + in];
  return inj("T_gather", ond, shape, v, te_read(data, dn, idx));
}

Tensor *topi_gather_elements(Tensor *data, Tensor *indices, int axis_in) {
  const char *op = "gather_elements";
  if (!data || !indices) return NULL;
  if (check_indices(op, indices)) return NULL;
  int nd = data->ndim, axis;
  if (indices->ndim != nd)
    return kiln_set_error("%s: indices have rank %d, data %d; they must be equal", op, indices->ndim, nd), NULL;
  if (topi_normalize_axis(op, axis_in, nd, &axis)) return NULL;
  for (int d = 0; d < nd; d++) {
    int64_t a, b;
    if (d != axis && ir_is_const_int(indices->shape[d], &a) && ir_is_const_int(data->shape[d], &b) && a > b)
      return kiln_set_error("%s: indices %s are larger than data %s on axis %d", op,
                            topi_shape_str(nd, indices->shape), topi_shape_str(nd, data->shape), d),
             NULL;
  }
  Expr **v = te_axis_vars(nd, NULL);
  Expr *i = te_read(indices, nd, v);
  if (!i) return NULL;
  Expr **idx = KNEWN(Expr *, nd);
  for (int d = 0; d < nd; d++) idx[d] = v[d];
  idx[axis] = wrap_clamp(i, data->shape[axis]);
  return inj("T_gather_elements", nd, indices->shape, v, te_read(data, nd, idx));
}

/* ---- tile, expand ---- */

Tensor *topi_tile(Tensor *x, const int64_t *repeats) {
  const char *op = "tile";
  if (!x) return NULL;
  int nd = x->ndim;
  if (nd > 0 && !repeats) return kiln_set_error("%s: repeats not given", op), NULL;
  Expr **shape = KNEWN(Expr *, nd > 0 ? nd : 1);
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) {
    if (repeats[d] < 0) return kiln_set_error("%s: repeats[%d] = %lld is negative", op, d, (long long)repeats[d]), NULL;
    shape[d] = ir_simplify(ir_mul(x->shape[d], c32(repeats[d])));
    idx[d] = repeats[d] == 1 ? v[d] : ir_floormod(v[d], x->shape[d]);
  }
  return inj("T_tile", nd, shape, v, te_read(x, nd, idx));
}

Tensor *topi_tile_expr(Tensor *x, Expr **oshape) {
  if (!x) return NULL;
  int nd = x->ndim;
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) idx[d] = ir_floormod(v[d], x->shape[d]);
  return inj("T_tile", nd, oshape, v, te_read(x, nd, idx));
}

Tensor *topi_expand(Tensor *x, int ndim, const int64_t *shape) {
  const char *op = "expand";
  if (!x) return NULL;
  if (ndim < 0 || (ndim > 0 && !shape)) return kiln_set_error("%s: no shape given", op), NULL;
  Expr **sh = KNEWN(Expr *, ndim > 0 ? ndim : 1);
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return kiln_set_error("%s: shape[%d] = %lld is negative", op, d, (long long)shape[d]), NULL;
    sh[d] = c32(shape[d]);
  }
  return topi_expand_expr(x, ndim, sh);
}

Tensor *topi_expand_expr(Tensor *x, int ndim, Expr **sh) {
  const char *op = "expand";
  if (!x) return NULL;
  int nd;
  Expr **oshape;
  if (topi_broadcast_shapes(op, 2, (int[]){x->ndim, ndim}, (Expr **[]){x->shape, sh}, &nd, &oshape)) return NULL;
  Expr **v = te_axis_vars(nd, NULL);
  return inj("T_expand", nd, oshape, v, topi_broadcast_read(x, nd, v, oshape));
}

/* ---- resize ---- */

/* The input coordinate (float64) of output index v on one axis. */
static Expr *coord(TopiCoordMode mode, Expr *v, int64_t in, int64_t out, double scale) {
  Expr *x = ir_cast(DT_F64, v);
  switch (mode) {
  case TOPI_COORD_HALF_PIXEL:
    return ir_sub(ir_div(ir_add(x, ir_float(0.5, DT_F64)), ir_float(scale, DT_F64)), ir_float(0.5, DT_F64));
  case TOPI_COORD_PYTORCH_HALF_PIXEL:
    if (out <= 1) return ir_float(0, DT_F64);
    return ir_sub(ir_div(ir_add(x, ir_float(0.5, DT_F64)), ir_float(scale, DT_F64)), ir_float(0.5, DT_F64));
  case TOPI_COORD_ALIGN_CORNERS: {
    /* ONNX takes the resized length as in * scale, unrounded */
    double len = (double)in * scale;
    if (out <= 1 || len <= 1) return ir_float(0, DT_F64);
    return ir_mul(x, ir_float((double)(in - 1) / (len - 1), DT_F64));
  }
  case TOPI_COORD_ASYMMETRIC:
    return ir_div(x, ir_float(scale, DT_F64));
  case TOPI_COORD_TF_HALF_PIXEL_FOR_NEAREST:
    return ir_div(ir_add(x, ir_float(0.5, DT_F64)), ir_float(scale, DT_F64));
  case TOPI_COORD_HALF_PIXEL_SYMMETRIC: {
    /* ONNX 19: half_pixel shifted so the resized image stays centred when
     * in * scale is not a whole number */
    double adj = (double)out / ((double)in * scale), off = (double)in / 2 * (1 - adj);
    return ir_add(ir_float(off, DT_F64),
                  ir_sub(ir_div(ir_add(x, ir_float(0.5, DT_F64)), ir_float(scale, DT_F64)), ir_float(0.5, DT_F64)));
  }
  }
  KUNREACHABLE();
}

Tensor *topi_resize(Tensor *x, const int64_t *out_shape, const double *scales, TopiResizeMethod method,
                    TopiCoordMode coord_mode, TopiNearestMode nearest, double cubic_a, bool exclude_outside) {
  const char *op = "resize";
  if (!x) return NULL;
  if (!out_shape) return kiln_set_error("%s: output shape not given", op), NULL;
  if ((int)method < 0 || method > TOPI_RESIZE_CUBIC) return kiln_set_error("%s: unknown method %d", op, (int)method), NULL;
  if ((int)coord_mode < 0 || coord_mode > TOPI_COORD_HALF_PIXEL_SYMMETRIC)
    return kiln_set_error("%s: unknown coordinate transformation mode %d", op, (int)coord_mode), NULL;
  if ((int)nearest < 0 || nearest > TOPI_NEAREST_CEIL)
    return kiln_set_error("%s: unknown nearest mode %d", op, (int)nearest), NULL;
  if (method != TOPI_RESIZE_NEAREST && !dt_is_float(x->dtype))
    return kiln_set_error("%s: linear and cubic interpolation need a float tensor, got %s", op, dt_str(x->dtype)), NULL;
  int nd = x->ndim;
  int64_t in[64];
  if (nd > 64 || const_shape(op, x, in)) return NULL;
  Expr **shape = KNEWN(Expr *, nd > 0 ? nd : 1);
  int active[64], na = 0;
  double sc[64];
  for (int d = 0; d < nd; d++) {
    if (out_shape[d] <= 0)
      return kiln_set_error("%s: output shape[%d] = %lld, expected a positive size", op, d, (long long)out_shape[d]), NULL;
    if (in[d] <= 0) return kiln_set_error("%s: input dimension %d is empty", op, d), NULL;
    shape[d] = c32(out_shape[d]);
    sc[d] = scales ? scales[d] : (double)out_shape[d] / (double)in[d];
    if (!(sc[d] > 0)) return kiln_set_error("%s: scale[%d] = %g, expected a positive value", op, d, sc[d]), NULL;
    if (out_shape[d] != in[d] || sc[d] != 1.0) active[na++] = d;
  }
  int max_axes = method == TOPI_RESIZE_NEAREST ? 64 : 3;
  if (na > max_axes) return kiln_set_error("%s: %d resized axes; interpolation handles up to 3", op, na), NULL;
  Expr **v = te_axis_vars(nd, NULL);
  /* per resized axis its size and the source coordinate of v (float64) */
  int64_t in_k[64];
  Expr *cs[64];
  for (int k = 0; k < na; k++) {
    int d = active[k];
    in_k[k] = in[d];
    cs[k] = coord(coord_mode, v[d], in[d], out_shape[d], sc[d]);
  }
  Expr *body = topi_resize_interp(x, v, na, active, in_k, cs, method, nearest, cubic_a, exclude_outside);
  return body ? inj("T_resize", nd, shape, v, body) : NULL;
}

/* ---- depth/space ---- */

static int d2s_check(const char *op, Tensor *x, int block, int64_t *dims) {
  if (!x) return -1;
  if (x->ndim != 4) return kiln_set_error("%s: input has %d dimensions, expected 4 (NCHW)", op, x->ndim);
  if (block <= 0) return kiln_set_error("%s: blocksize = %d, expected a positive value", op, block);
  return const_shape(op, x, dims);
}

Tensor *topi_depth_to_space(Tensor *x, int b, bool crd) {
  const char *op = "depth_to_space";
  int64_t s[4];
  if (d2s_check(op, x, b, s)) return NULL;
  if (s[1] % ((int64_t)b * b) != 0)
    return kiln_set_error("%s: %lld channels are not divisible by blocksize^2 = %d", op, (long long)s[1], b * b), NULL;
  int64_t oc = s[1] / ((int64_t)b * b);
  Expr **v = te_axis_vars(4, NULL);
  Expr *i = ir_floormod(v[2], c32(b)), *j = ir_floormod(v[3], c32(b));
  Expr *ch = crd ? ir_add(ir_mul(v[1], c32((int64_t)b * b)), ir_add(ir_mul(i, c32(b)), j))
                 : ir_add(ir_mul(ir_add(ir_mul(i, c32(b)), j), c32(oc)), v[1]);
  Expr *body = te_read4(x, v[0], ch, ir_floordiv(v[2], c32(b)), ir_floordiv(v[3], c32(b)));
  Expr *shape[4] = {x->shape[0], c32(oc), c32(s[2] * b), c32(s[3] * b)};
  return inj("T_depth_to_space", 4, shape, v, body);
}

Tensor *topi_space_to_depth(Tensor *x, int b) {
  const char *op = "space_to_depth";
  int64_t s[4];
  if (d2s_check(op, x, b, s)) return NULL;
  if (s[2] % b != 0 || s[3] % b != 0)
    return kiln_set_error("%s: spatial size %lldx%lld is not divisible by blocksize %d", op, (long long)s[2],
                          (long long)s[3], b),
           NULL;
  Expr **v = te_axis_vars(4, NULL);
  Expr *c = ir_floormod(v[1], c32(s[1]));
  Expr *blk = ir_floordiv(v[1], c32(s[1]));
  Expr *i = ir_floordiv(blk, c32(b)), *j = ir_floormod(blk, c32(b));
  Expr *body = te_read4(x, v[0], c, ir_add(ir_mul(v[2], c32(b)), i), ir_add(ir_mul(v[3], c32(b)), j));
  Expr *shape[4] = {x->shape[0], c32(s[1] * b * b), c32(s[2] / b), c32(s[3] / b)};
  return inj("T_space_to_depth", 4, shape, v, body);
}

/* ---- layout_transform ---- */

Tensor *topi_layout_transform(Tensor *x, const char *src, const char *dst) {
  const char *op = "layout_transform";
  if (!x) return NULL;
  TopiLayout ls, ld;
  if (topi_layout_parse(op, src, &ls) || topi_layout_parse(op, dst, &ld)) return NULL;
  if (x->ndim != ls.ndim)
    return kiln_set_error("%s: input has %d dimensions but layout '%s' has %d", op, x->ndim, src, ls.ndim), NULL;
  /* the same primal axes on both sides */
  for (int i = 0; i < ls.ndim; i++)
    if (ls.factor[i] == 0 && topi_layout_find(&ld, ls.axis[i]) < 0)
      return kiln_set_error("%s: '%s' and '%s' do not have the same axes ('%c')", op, src, dst, ls.axis[i]), NULL;
  for (int i = 0; i < ld.ndim; i++)
    if (ld.factor[i] == 0 && topi_layout_find(&ls, ld.axis[i]) < 0)
      return kiln_set_error("%s: '%s' and '%s' do not have the same axes ('%c')", op, src, dst, ld.axis[i]), NULL;
  int64_t in[16];
  if (const_shape(op, x, in)) return NULL;
  /* full extent of each primal axis in the source (sub-axis included) */
  int64_t full[26];
  for (int i = 0; i < ls.ndim; i++) {
    if (ls.factor[i]) {
      if (in[i] != ls.factor[i])
        return kiln_set_error("%s: axis '%c' of '%s' has %lld elements, expected %lld", op, ls.axis[i], src,
                              (long long)in[i], (long long)ls.factor[i]),
               NULL;
      continue;
    }
    int64_t f = 1;
    int sub = topi_layout_find(&ls, (char)(ls.axis[i] - 'A' + 'a'));
    if (sub >= 0) f = ls.factor[sub];
    full[ls.axis[i] - 'A'] = in[i] * f;
  }
  /* destination shape */
  Expr **shape = KNEWN(Expr *, ld.ndim);
  for (int i = 0; i < ld.ndim; i++) {
    if (ld.factor[i]) {
      shape[i] = c32(ld.factor[i]);
      continue;
    }
    int64_t f = 1;
    int sub = topi_layout_find(&ld, (char)(ld.axis[i] - 'A' + 'a'));
    if (sub >= 0) f = ld.factor[sub];
    shape[i] = c32((full[ld.axis[i] - 'A'] + f - 1) / f);
  }
  Expr **v = te_axis_vars(ld.ndim, NULL);
  /* the value of each primal axis from the destination indices */
  Expr *val[26] = {0};
  Expr *cond = NULL;
  for (int i = 0; i < ld.ndim; i++) {
    if (ld.factor[i]) continue;
    int a = ld.axis[i] - 'A';
    int sub = topi_layout_find(&ld, (char)('a' + a));
    val[a] = sub >= 0 ? ir_add(ir_mul(v[i], c32(ld.factor[sub])), v[sub]) : v[i];
    if (sub >= 0 && full[a] % ld.factor[sub] != 0) { /* padded: zeros past the end */
      Expr *c = ir_lt(val[a], c32(full[a]));
      cond = cond ? ir_and(cond, c) : c;
    }
  }
  Expr **idx = KNEWN(Expr *, ls.ndim);
  for (int i = 0; i < ls.ndim; i++) {
    char c = ls.axis[i];
    if (ls.factor[i]) {
      idx[i] = ir_floormod(val[c - 'a'], c32(ls.factor[i]));
    } else {
      int sub = topi_layout_find(&ls, (char)(c - 'A' + 'a'));
      idx[i] = sub >= 0 ? ir_floordiv(val[c - 'A'], c32(ls.factor[sub])) : val[c - 'A'];
    }
    idx[i] = ir_simplify(idx[i]);
  }
  Expr *body = te_read(x, ls.ndim, idx);
  if (cond) body = ir_select(cond, body, ir_const(0, x->dtype));
  return inj("T_layout_trans", ld.ndim, shape, v, body);
}

/* ---- one_hot, arange ---- */

Tensor *topi_one_hot(Tensor *indices, int64_t depth, double on_value, double off_value, int axis_in, DType t) {
  const char *op = "one_hot";
  if (!indices) return NULL;
  /* ONNX casts non-integer indices to int64 */
  if (dt_is_float(indices->dtype)) indices = topi_cast(indices, DT_I64);
  if (!indices || check_indices(op, indices)) return NULL;
  if (depth <= 0) return kiln_set_error("%s: depth = %lld, expected a positive value", op, (long long)depth), NULL;
  int nd = indices->ndim + 1, axis;
  if (topi_normalize_axis(op, axis_in, nd, &axis)) return NULL;
  Expr **shape = KNEWN(Expr *, nd);
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd);
  int k = 0;
  for (int d = 0; d < nd; d++) {
    if (d == axis) {
      shape[d] = c32(depth);
      continue;
    }
    shape[d] = indices->shape[k];
    idx[k++] = v[d];
  }
  Expr *i = te_read(indices, indices->ndim, idx);
  if (!i) return NULL;
  Expr *iv = ir_var("idx", i->dtype);
  Expr *w = dt_is_int(i->dtype) ? ir_select(ir_lt(iv, ir_int(0, i->dtype)), ir_add(iv, ir_int(depth, i->dtype)), iv) : iv;
  Expr *hit = ir_eq(w, ir_cast(i->dtype, v[axis]));
  Expr *on = dt_is_bool(t) ? ir_bool(on_value != 0) : ir_const(on_value, t);
  Expr *off = dt_is_bool(t) ? ir_bool(off_value != 0) : ir_const(off_value, t);
  return inj("T_one_hot", nd, shape, v, ir_let(iv, i, ir_select(hit, on, off)));
}

Tensor *topi_one_hot_dyn(Tensor *indices, Tensor *values, Expr *depth, int axis) {
  const char *op = "dyn.one_hot";
  if (!indices || !values || !depth) return NULL;
  if (dt_is_float(indices->dtype)) indices = topi_cast(indices, DT_I64);
  if (!indices || check_indices(op, indices)) return NULL;
  if (values->ndim != 1) return kiln_set_error("%s: values must be 1-D [off_value, on_value]", op), NULL;
  int nd = indices->ndim + 1;
  if (axis < 0 || axis >= nd) return kiln_set_error("%s: axis %d for a result of rank %d", op, axis, nd), NULL;
  Expr **shape = KNEWN(Expr *, nd);
  Expr **v = te_axis_vars(nd, NULL);
  Expr **idx = KNEWN(Expr *, nd);
  for (int d = 0, k = 0; d < nd; d++) {
    if (d == axis) {
      shape[d] = depth;
      continue;
    }
    shape[d] = indices->shape[k];
    idx[k++] = v[d];
  }
  Expr *i = te_read(indices, indices->ndim, idx);
  if (!i) return NULL;
  Expr *iv = ir_var("idx", i->dtype);
  Expr *w = ir_select(ir_lt(iv, ir_int(0, i->dtype)), ir_add(iv, ir_cast(i->dtype, depth)), iv);
  Expr *hit = ir_eq(w, ir_cast(i->dtype, v[axis]));
  return inj("T_one_hot", nd, shape, v,
             ir_let(iv, i, ir_select(hit, te_read1(values, c32(1)), te_read1(values, c32(0)))));
}

Tensor *topi_affine_grid_dyn(Tensor *theta, Tensor *size, Expr **oshape, int k, bool align_corners) {
  const char *op = "dyn.affine_grid";
  if (!theta || !size || !oshape) return NULL;
  if ((k != 2 && k != 3) || theta->ndim != 3 || size->ndim != 1 || !dt_is_float(theta->dtype))
    return kiln_set_error("%s: theta must be [N, k, k + 1] (k 2 or 3) and size 1-D", op), NULL;
  int nd = k + 2;
  Expr **v = te_axis_vars(nd, NULL);
  Expr *c = v[nd - 1], *acc = NULL;
  for (int j = 0; j <= k; j++) {
    Expr *t = ir_cast(DT_F64, te_read(theta, 3, (Expr *[]){v[0], c, c32(j)}));
    if (j < k) {
      /* coordinate j runs along spatial axis k - 1 - j (x along W) */
      int a = k - 1 - j;
      Expr *i = ir_cast(DT_F64, v[1 + a]), *n = ir_cast(DT_F64, te_read1(size, c32(2 + a)));
      Expr *one = ir_float(1, DT_F64), *two = ir_float(2, DT_F64);
      Expr *pos = align_corners ? ir_select(ir_gt(n, one), ir_sub(ir_div(ir_mul(two, i), ir_sub(n, one)), one),
                                            ir_float(-1, DT_F64))
                                : ir_sub(ir_div(ir_add(ir_mul(two, i), one), n), one);
      t = ir_mul(t, pos);
    }
    acc = acc ? ir_add(acc, t) : t;
  }
  return inj("T_affine_grid", nd, oshape, v, ir_cast(theta->dtype, acc));
}

Tensor *topi_arange(double start, double limit, double delta, DType t) {
  const char *op = "arange";
  if (delta == 0 || isnan(delta)) return kiln_set_error("%s: delta must be non-zero", op), NULL;
  double n = ceil((limit - start) / delta);
  if (!(n >= 0)) n = 0;
  if (n > 2147483647.0) return kiln_set_error("%s: %g elements are too many", op, n), NULL;
  Expr *shape[1] = {c32((int64_t)n)};
  Expr **v = te_axis_vars(1, NULL);
  Expr *body;
  if (dt_is_float(t))
    body = ir_add(ir_float(start, t), ir_mul(ir_cast(t, v[0]), ir_float(delta, t)));
  else
    body = ir_add(ir_int((int64_t)start, t), ir_mul(ir_cast(t, v[0]), ir_int((int64_t)delta, t)));
  return inj("T_arange", 1, shape, v, body);
}

Tensor *topi_window(Expr *n, bool periodic, double a0, double a1, double a2, DType t) {
  if (!n) return kiln_set_error("window: no size given"), NULL;
  DType ct = dt_eq(t, DT_F64) ? DT_F64 : DT_F32;
  Expr **v = te_axis_vars(1, NULL);
  Expr *span = periodic ? n : ir_sub(n, c32(1));
  /* i / s as a float (s = 0 only for one point, where i is 0) */
  Expr *x = ir_div(ir_cast(ct, v[0]), ir_cast(ct, ir_max(span, c32(1))));
  Expr *two_pi = ir_float(2 * M_PI, ct);
  Expr *w = ir_sub(ir_float(a0, ct), ir_mul(ir_float(a1, ct), ir_call1(INTRIN_cos, ir_mul(two_pi, x))));
  if (a2 != 0) w = ir_add(w, ir_mul(ir_float(a2, ct), ir_call1(INTRIN_cos, ir_mul(ir_float(4 * M_PI, ct), x))));
  Expr **shape = KNEWN(Expr *, 1);
  shape[0] = n;
  return inj("T_window", 1, shape, v, dt_eq(t, ct) ? w : ir_cast(t, w));
}

Tensor *topi_mel_weight_matrix(Tensor *L, Tensor *S, Tensor *lo, Tensor *hi, Expr **shape, DType t) {
  if (!L || !S || !lo || !hi || !shape) return NULL;
  const DType f = DT_F64;
  Expr *Ld = ir_cast(f, te_read(L, 0, NULL)), *Sd = ir_cast(f, te_read(S, 0, NULL));
  Expr *lod = ir_cast(f, te_read(lo, 0, NULL)), *hid = ir_cast(f, te_read(hi, 0, NULL));
  if (!Ld || !Sd || !lod || !hid) return NULL;
  Expr *ln10 = ir_float(log(10.0), f), *c700 = ir_float(700, f), *c2595 = ir_float(2595, f), *one = ir_float(1, f);
  Expr *lmel = ir_div(ir_mul(c2595, ir_call1(INTRIN_log, ir_add(one, ir_div(lod, c700)))), ln10);
  Expr *hmel = ir_div(ir_mul(c2595, ir_call1(INTRIN_log, ir_add(one, ir_div(hid, c700)))), ln10);
  Expr *step = ir_div(ir_sub(hmel, lmel), ir_cast(f, ir_add(shape[1], c32(2))));
  Expr **v = te_axis_vars(2, NULL);
  Expr *bin[3];
  for (int k = 0; k < 3; k++) {
    /* the mel grid's point i + k in Hz, and its spectrum bin */
    Expr *mel = ir_add(ir_mul(ir_cast(f, ir_add(v[1], c32(k))), step), lmel);
    Expr *hz = ir_mul(c700, ir_sub(ir_call2(INTRIN_pow, ir_float(10, f), ir_div(mel, c2595)), one));
    bin[k] = ir_call1(INTRIN_floor, ir_div(ir_mul(ir_add(Ld, one), hz), Sd));
  }
  Expr *lv = ir_var("lower", f), *cv = ir_var("center", f), *hv = ir_var("upper", f), *j = ir_cast(f, v[0]);
  Expr *zero = ir_float(0, f);
  /* rising edge [lower, center] (one point where they meet), falling edge [center, upper) */
  Expr *up = ir_select(ir_gt(cv, lv), ir_select(ir_and(ir_le(lv, j), ir_le(j, cv)), ir_div(ir_sub(j, lv), ir_sub(cv, lv)), zero),
                       ir_select(ir_eq(j, cv), one, zero));
  Expr *w = ir_select(ir_and(ir_gt(hv, cv), ir_and(ir_le(cv, j), ir_lt(j, hv))), ir_div(ir_sub(hv, j), ir_sub(hv, cv)), up);
  Expr *body = ir_let(lv, bin[0], ir_let(cv, bin[1], ir_let(hv, bin[2], dt_eq(t, f) ? w : ir_cast(t, w))));
  Expr **sh = KNEWN(Expr *, 2);
  sh[0] = shape[0];
  sh[1] = shape[1];
  return inj("T_mel_weight_matrix", 2, sh, v, body);
}
