/*
 * transform.c - op-table rows for data movement: reshape, transpose,
 * squeeze/expand_dims, concatenate, strided_slice, take (gather),
 * gather_elements, pad, tile, broadcast_to, resize, depth/space
 * rearrangements, layout_transform and one_hot.  All are injective.
 */
#include "util.h"

#include <stdlib.h>
#include <string.h>

#include "compute.h"

/* nn.batch_flatten: (N, d1, d2, ...) -> (N, d1 * d2 * ...) */
static int infer_batch_flatten(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  if (d->ndim < 1) return kiln_set_error("data must have a batch dimension, got a scalar");
  int64_t shape[2] = {d->shape[0], 1};
  for (int i = 1; i < d->ndim; i++) shape[1] *= d->shape[i];
  *out = ttype(d->dtype, 2, shape);
  return 0;
}

static int infer_reshape(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  const int64_t *ns;
  int k = gattr_ints(&n->attrs, "newshape", &ns);
  if (k > GRAPH_MAX_DIMS) return kiln_set_error("newshape has %d dimensions (at most %d)", k, GRAPH_MAX_DIMS);
  bool allowzero = gattr_int(&n->attrs, "allowzero", 0) != 0;
  TType r = *d;
  r.ndim = k;
  int infer_at = -1;
  int64_t known = 1;
  for (int i = 0; i < k; i++) {
    int64_t v = ns[i];
    if (v == 0 && !allowzero) {
      if (i >= d->ndim) return kiln_set_error("newshape[%d] = 0 copies a dimension the input (rank %d) lacks", i, d->ndim);
      v = d->shape[i];
    } else if (v == -1) {
      if (infer_at >= 0) return kiln_set_error("newshape has more than one -1");
      infer_at = i;
      r.shape[i] = -1;
      continue;
    } else if (v < 0) {
      return kiln_set_error("newshape[%d] = %lld is invalid", i, (long long)v);
    }
    r.shape[i] = v;
    if (__builtin_mul_overflow(known, v, &known))
      return kiln_set_error("newshape's dimensions multiply past 2^63 elements (at newshape[%d] = %lld)", i, (long long)v);
  }
  int64_t total = ttype_numel(d);
  if (infer_at >= 0) {
    if (known == 0 || total % known) return kiln_set_error("cannot reshape %s (%lld elements) into %d dimensions with -1",
                                                         shape_str(d), (long long)total, k);
    r.shape[infer_at] = total / known;
  } else if (known != total) {
    return kiln_set_error("cannot reshape %s (%lld elements) into %s (%lld elements)", shape_str(d), (long long)total,
                          shape_str(&r), (long long)known);
  }
  *out = r;
  return 0;
}

static int infer_transpose(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  const int64_t *ax;
  int k = gattr_ints(&n->attrs, "axes", &ax);
  TType r = *d;
  if (k == 0) {
    for (int i = 0; i < d->ndim; i++) r.shape[i] = d->shape[d->ndim - 1 - i];
    *out = r;
    return 0;
  }
  if (k != d->ndim) return kiln_set_error("axes has %d entries for a tensor of rank %d", k, d->ndim);
  bool used[GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < k; i++) {
    int a;
    if (norm_axis("axes entry", ax[i], d->ndim, &a)) return -1;
    if (used[a]) return kiln_set_error("axes repeats axis %d", a);
    used[a] = true;
    r.shape[i] = d->shape[a];
  }
  *out = r;
  return 0;
}

static int infer_squeeze(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  const int64_t *ax;
  int k = gattr_ints(&n->attrs, "axis", &ax);
  bool drop[GRAPH_MAX_DIMS] = {0};
  if (k == 0 && !gattr_find(&n->attrs, "axis")) {
    for (int i = 0; i < d->ndim; i++) drop[i] = d->shape[i] == 1;
  }
  for (int i = 0; i < k; i++) {
    int a;
    if (norm_axis("squeeze axis", ax[i], d->ndim, &a)) return -1;
    if (d->shape[a] != 1) return kiln_set_error("cannot squeeze axis %d of size %lld", a, (long long)d->shape[a]);
    drop[a] = true;
  }
  TType r = *d;
  r.ndim = 0;
  for (int i = 0; i < d->ndim; i++)
    if (!drop[i]) r.shape[r.ndim++] = d->shape[i];
  *out = r;
  return 0;
}

static int infer_expand_dims(GNode *n, TType *out) {
  /* axes: positions in the output (ONNX Unsqueeze) */
  const TType *d = arg_type(n, 0);
  const int64_t *ax;
  int k = gattr_ints(&n->attrs, "axes", &ax);
  int nd = d->ndim + k;
  if (nd > GRAPH_MAX_DIMS) return kiln_set_error("result would have rank %d (at most %d)", nd, GRAPH_MAX_DIMS);
  bool ins[GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < k; i++) {
    int a;
    if (norm_axis("unsqueeze axis", ax[i], nd, &a)) return -1;
    if (ins[a]) return kiln_set_error("axis %d repeated", a);
    ins[a] = true;
  }
  TType r = *d;
  r.ndim = nd;
  for (int i = 0, j = 0; i < nd; i++) r.shape[i] = ins[i] ? 1 : d->shape[j++];
  *out = r;
  return 0;
}

static int infer_concat(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  int ax;
  if (norm_axis("concat axis", gattr_int(&n->attrs, "axis", 0), d->ndim, &ax)) return -1;
  TType r = *d;
  for (int i = 1; i < n->nargs; i++) {
    const TType *t = arg_type(n, i);
    if (t->ndim != d->ndim || !dt_eq(t->dtype, d->dtype))
      return kiln_set_error("input %d %s %s does not match input 0 %s %s", i, shape_str(t), dt_str(t->dtype), shape_str(d),
                            dt_str(d->dtype));
    for (int k = 0; k < d->ndim; k++)
      if (k != ax && t->shape[k] != d->shape[k])
        return kiln_set_error("input %d has shape %s, input 0 has %s: they differ outside axis %d", i, shape_str(t),
                              shape_str(d), ax);
    r.shape[ax] += t->shape[ax];
  }
  *out = r;
  return 0;
}

/* ONNX Slice semantics, normalized into begin/end/step per axis. */
int slice_normalize(const TType *d, GNode *n, int64_t *begin, int64_t *end, int64_t *step);
int slice_normalize(const TType *d, GNode *n, int64_t *begin, int64_t *end, int64_t *step) {
  const int64_t *b, *e, *s, *ax;
  int nb = gattr_ints(&n->attrs, "begin", &b), ne = gattr_ints(&n->attrs, "end", &e);
  int ns = gattr_ints(&n->attrs, "strides", &s), na = gattr_ints(&n->attrs, "axes", &ax);
  if (nb != ne) return kiln_set_error("begin has %d values, end %d", nb, ne);
  if (ns && ns != nb) return kiln_set_error("strides has %d values, begin %d", ns, nb);
  if (na && na != nb) return kiln_set_error("axes has %d values, begin %d", na, nb);
  for (int i = 0; i < d->ndim; i++) {
    begin[i] = 0;
    end[i] = d->shape[i];
    step[i] = 1;
  }
  for (int i = 0; i < nb; i++) {
    int a = i;
    if (na && norm_axis("slice axis", ax[i], d->ndim, &a)) return -1;
    if (!na && i >= d->ndim) return kiln_set_error("begin has more values than the rank %d", d->ndim);
    int64_t dim = d->shape[a], st = ns ? s[i] : 1;
    if (st == 0) return kiln_set_error("slice step 0 on axis %d", a);
    int64_t bb = b[i], ee = e[i];
    if (bb < 0) bb += dim;
    if (ee < 0 && ee > INT64_MIN / 2) ee += dim;
    if (st > 0) {
      bb = bb < 0 ? 0 : bb > dim ? dim : bb;
      ee = ee < 0 ? 0 : ee > dim ? dim : ee;
    } else {
      bb = bb < 0 ? -1 : bb > dim - 1 ? dim - 1 : bb;
      ee = ee < -1 ? -1 : ee > dim - 1 ? dim - 1 : ee;
    }
    begin[a] = bb;
    end[a] = ee;
    step[a] = st;
  }
  return 0;
}

static int infer_strided_slice(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  int64_t b[GRAPH_MAX_DIMS], e[GRAPH_MAX_DIMS], s[GRAPH_MAX_DIMS];
  if (slice_normalize(d, n, b, e, s)) return -1;
  TType r = *d;
  for (int i = 0; i < d->ndim; i++) {
    int64_t len = s[i] > 0 ? (e[i] - b[i] + s[i] - 1) / s[i] : (b[i] - e[i] + (-s[i]) - 1) / (-s[i]);
    r.shape[i] = len > 0 ? len : 0;
  }
  *out = r;
  return 0;
}

/* dyn.strided_slice (data, begin, strides, axes): begin/strides/axes
 * given as 1-D int tensors of one length, read at run time (end decides
 * only the shape); the attributes hold the representative values of all
 * four (the shape at those), and the call's sym_dims the shape as
 * expressions of the values. */
static int infer_dyn_strided_slice(GNode *n, TType *out) {
  const TType *b = arg_type(n, 1);
  for (int i = 1; i < 4; i++) {
    const TType *t = arg_type(n, i);
    if (t->ndim != 1 || !dt_is_int(t->dtype) || t->shape[0] != b->shape[0])
      return err_dtype(n, i, "a 1-D integer tensor as long as begin");
  }
  return infer_strided_slice(n, out);
}

/* dyn.split (data[, sizes]): part `index` of a Split along `axis` whose
 * sizes are a 1-D int tensor read at run time (absent for part 0, which
 * needs none); `size` is the part's size at the representative values,
 * the call's sym_dims the shape as an expression of the values. */
static int infer_dyn_split(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  int ax;
  if (norm_axis("split axis", gattr_int(&n->attrs, "axis", 0), d->ndim, &ax)) return -1;
  int64_t index = gattr_int(&n->attrs, "index", 0), size = gattr_int(&n->attrs, "size", -1);
  if (index < 0 || (index > 0 && n->nargs < 2)) return kiln_set_error("dyn.split: part %lld needs the sizes", (long long)index);
  if (n->nargs > 1) {
    const TType *s = arg_type(n, 1);
    if (s->ndim != 1 || !dt_is_int(s->dtype) || s->shape[0] <= index) return err_dtype(n, 1, "1-D integer sizes");
  }
  if (size < 0 || size > d->shape[ax])
    return kiln_set_error("dyn.split: size %lld of axis %d (%lld)", (long long)size, ax, (long long)d->shape[ax]);
  *out = *d;
  out->shape[ax] = size;
  return 0;
}

/* dyn.pad (data, pads, axes[, value]): pads (2k begins and ends), axes (k)
 * and, in constant mode, the value (one element of data's type) read at
 * run time;
 * the attribute `shape` is the result's shape at the representative
 * values, the call's sym_dims the shape as expressions of the values. */
static int infer_dyn_pad(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *p = arg_type(n, 1), *a = arg_type(n, 2);
  const TType *v = n->nargs > 3 ? arg_type(n, 3) : NULL;
  bool constant = !strcmp(gattr_str(&n->attrs, "pad_mode", "constant"), "constant");
  if (constant != (v != NULL)) return kiln_set_error("dyn.pad: the value is given in constant mode, and only there");
  if (a->ndim != 1 || !dt_is_int(a->dtype)) return err_dtype(n, 2, "1-D integer axes");
  if (p->ndim != 1 || !dt_is_int(p->dtype) || p->shape[0] != 2 * a->shape[0])
    return err_dtype(n, 1, "1-D integer pads twice as long as the axes");
  if (v && (v->ndim > 1 || ttype_numel(v) != 1 || !dt_eq(v->dtype, d->dtype)))
    return err_dtype(n, 3, "one element of the data's type");
  const int64_t *s;
  int k = gattr_ints(&n->attrs, "shape", &s);
  if (k != d->ndim) return kiln_set_error("dyn.pad: shape has %d dimensions for data of rank %d", k, d->ndim);
  *out = *d;
  for (int i = 0; i < k; i++) {
    if (s[i] < 0) return kiln_set_error("dyn.pad: dimension %d would be %lld", i, (long long)s[i]);
    out->shape[i] = s[i];
  }
  return 0;
}

/* dyn.center_crop_pad (data, sizes, axes): axis axes[j] cropped or padded
 * to sizes[j] around its centre, both read at run time; `shape` is the
 * result at the representative sizes, sym_dims the shape as expressions
 * of the values. */
static int infer_dyn_center_crop_pad(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *s = arg_type(n, 1), *a = arg_type(n, 2);
  if (a->ndim != 1 || !dt_is_int(a->dtype)) return err_dtype(n, 2, "1-D integer axes");
  if (s->ndim != 1 || !dt_is_int(s->dtype) || s->shape[0] != a->shape[0])
    return err_dtype(n, 1, "1-D integer sizes as long as the axes");
  const int64_t *sh;
  int k = gattr_ints(&n->attrs, "shape", &sh);
  if (k != d->ndim) return kiln_set_error("dyn.center_crop_pad: shape has %d dimensions for data of rank %d", k, d->ndim);
  *out = *d;
  for (int i = 0; i < k; i++) {
    if (sh[i] < 0) return kiln_set_error("dyn.center_crop_pad: dimension %d would be %lld", i, (long long)sh[i]);
    out->shape[i] = sh[i];
  }
  return 0;
}

/* dyn.col2im (data, image_shape, block_shape): Col2Im with both sizes
 * read at run time; attributes pads, dilations, strides (constants),
 * `shape` the result at the representative values, sym_dims the shape as
 * expressions of the values. */
static int infer_dyn_col2im(GNode *n, TType *out) {
  const TType *x = arg_type(n, 0), *im = arg_type(n, 1), *bl = arg_type(n, 2);
  if (x->ndim != 3 || ttype_is_symbolic(x)) return err_dtype(n, 0, "static [N, C * prod(block_shape), L] data");
  if (im->ndim != 1 || !dt_is_int(im->dtype) || bl->ndim != 1 || !dt_is_int(bl->dtype) || im->shape[0] != bl->shape[0])
    return err_dtype(n, 1, "1-D integer image_shape as long as block_shape");
  const int64_t *sh;
  int k = gattr_ints(&n->attrs, "shape", &sh);
  if (k != im->shape[0] + 2) return kiln_set_error("dyn.col2im: shape has %d dimensions for %lld spatial axes", k, (long long)im->shape[0]);
  *out = *x;
  out->ndim = k;
  for (int i = 0; i < k; i++) {
    if (sh[i] < 1) return kiln_set_error("dyn.col2im: dimension %d would be %lld", i, (long long)sh[i]);
    out->shape[i] = sh[i];
  }
  return 0;
}

/* dyn.stft (signal, frame_step, frame_length[, window]): the STFT with
 * the step and length read at run time; attributes onesided, lmax (a
 * static bound of the frame length), `shape` the result at the
 * representative values, sym_dims its shape as expressions of them. */
static int infer_dyn_stft(GNode *n, TType *out) {
  const TType *x = arg_type(n, 0);
  if (x->ndim != 3 || ttype_is_symbolic(x) || !dt_is_float(x->dtype))
    return err_dtype(n, 0, "a static float [batch, length, 1 or 2] signal");
  for (int i = 1; i < 3; i++)
    if (arg_type(n, i)->ndim > 1 || ttype_numel(arg_type(n, i)) != 1 || !dt_is_int(arg_type(n, i)->dtype))
      return err_dtype(n, i, "one integer element");
  const int64_t *sh;
  if (gattr_ints(&n->attrs, "shape", &sh) != 4) return kiln_set_error("dyn.stft needs 'shape' of 4 dimensions");
  *out = *x;
  out->ndim = 4;
  for (int i = 0; i < 4; i++) {
    if (sh[i] < 1) return kiln_set_error("dyn.stft: dimension %d would be %lld", i, (long long)sh[i]);
    out->shape[i] = sh[i];
  }
  return 0;
}

/* dyn.arange (start, delta): one int element each (of one type), read at
 * run time; `len` is the length at the representative values, the call's
 * sym_dims the length as an expression of the values. */
static int infer_dyn_arange(GNode *n, TType *out) {
  const TType *s = arg_type(n, 0), *d = arg_type(n, 1);
  for (int i = 0; i < 2; i++) {
    const TType *t = arg_type(n, i);
    if (t->ndim > 1 || ttype_numel(t) != 1 || !dt_is_int(t->dtype) || !dt_eq(t->dtype, s->dtype))
      return err_dtype(n, i, "one integer element of start's type");
  }
  (void)d;
  int64_t len = gattr_int(&n->attrs, "len", -1);
  if (len < 0) return kiln_set_error("dyn.arange: length %lld", (long long)len);
  *out = ttype(s->dtype, 1, &len);
  return 0;
}

/* dyn.resize (data, value): ONNX Resize whose scales (float) or sizes
 * (integer) are the 1-D tensor `value`, read at run time, element i for
 * axis axes[i]; `by` says which (scales, sizes, not_larger,
 * not_smaller), `resize` which elements' axes this call resizes,
 * `in_shape` the original input's shape, `shape` the result at the
 * representative values and sym_dims the run-time shape; the method
 * attributes are image.resize2d's. */
static int infer_dyn_resize(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *v = arg_type(n, 1);
  const int64_t *s, *ax;
  int k = gattr_ints(&n->attrs, "shape", &s), na = gattr_ints(&n->attrs, "axes", &ax);
  bool scales = !strcmp(gattr_str(&n->attrs, "by", "scales"), "scales");
  if (v->ndim != 1 || v->shape[0] != na || (scales ? !dt_is_float(v->dtype) : !dt_is_int(v->dtype)))
    return err_dtype(n, 1, scales ? "1-D float scales, one per named axis" : "1-D integer sizes, one per named axis");
  if (k != d->ndim) return kiln_set_error("dyn.resize: shape has %d dimensions for data of rank %d", k, d->ndim);
  const char *m = gattr_str(&n->attrs, "method", "nearest");
  if (strcmp(m, "nearest") && strcmp(m, "linear") && strcmp(m, "cubic"))
    return kiln_set_error("resize method '%s' is not supported", m);
  *out = ttype(d->dtype, k, s);
  return 0;
}

/* dyn.affine_grid (theta [N, k, k + 1], size [k + 2] int): AffineGrid's
 * grid [N, (D,) H, W, k], `shape` at the representative sizes, sym_dims
 * the run-time ones, attribute align_corners. */
static int infer_dyn_affine_grid(GNode *n, TType *out) {
  const TType *t = arg_type(n, 0), *sz = arg_type(n, 1);
  const int64_t *s;
  int k = gattr_ints(&n->attrs, "shape", &s) - 2;
  if (k != 2 && k != 3) return kiln_set_error("dyn.affine_grid: shape must have 4 or 5 dimensions");
  if (t->ndim != 3 || t->shape[0] != s[0] || t->shape[1] != k || t->shape[2] != k + 1 || !dt_is_float(t->dtype))
    return err_dtype(n, 0, "a float theta [N, k, k + 1]");
  if (sz->ndim != 1 || sz->shape[0] != k + 2 || !dt_is_int(sz->dtype)) return err_dtype(n, 1, "an integer size [k + 2]");
  *out = ttype(t->dtype, k + 2, s);
  return 0;
}

static int infer_take(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *idx = arg_type(n, 1);
  int ax;
  if (!dt_is_intlike(idx->dtype) || dt_is_bool(idx->dtype)) return err_dtype(n, 1, "an integer index type");
  if (norm_axis("gather axis", gattr_int(&n->attrs, "axis", 0), d->ndim, &ax)) return -1;
  int nd = d->ndim - 1 + idx->ndim;
  if (nd > GRAPH_MAX_DIMS) return kiln_set_error("result would have rank %d", nd);
  TType r = *d;
  r.ndim = 0;
  for (int i = 0; i < ax; i++) r.shape[r.ndim++] = d->shape[i];
  for (int i = 0; i < idx->ndim; i++) r.shape[r.ndim++] = idx->shape[i];
  for (int i = ax + 1; i < d->ndim; i++) r.shape[r.ndim++] = d->shape[i];
  *out = r;
  return 0;
}

static int infer_gather_elements(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *idx = arg_type(n, 1);
  int ax;
  if (!dt_is_intlike(idx->dtype) || dt_is_bool(idx->dtype)) return err_dtype(n, 1, "an integer index type");
  if (idx->ndim != d->ndim) return kiln_set_error("indices have rank %d, data %d", idx->ndim, d->ndim);
  if (norm_axis("gather axis", gattr_int(&n->attrs, "axis", 0), d->ndim, &ax)) return -1;
  *out = *idx;
  out->dtype = d->dtype;
  return 0;
}

static int infer_pad(GNode *n, TType *out) {
  /* pads: ONNX order [b0, b1, ..., e0, e1, ...]; negative crops */
  const TType *d = arg_type(n, 0);
  const int64_t *p;
  int k = gattr_ints(&n->attrs, "pads", &p);
  if (k != 2 * d->ndim) return kiln_set_error("pads has %d values, expected %d (2 x rank)", k, 2 * d->ndim);
  const char *mode = gattr_str(&n->attrs, "pad_mode", "constant");
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge"))
    return kiln_set_error("pad mode '%s' is not supported (constant, reflect, edge)", mode);
  TType r = *d;
  for (int i = 0; i < 2 * d->ndim; i++)
    if (p[i] > GRAPH_MAX_ELEMS || p[i] < -GRAPH_MAX_ELEMS)
      return kiln_set_error("pads[%d] = %lld is beyond +-(2^31 - 1), which generated code's 32-bit index arithmetic "
                            "reaches; fix the pads", i, (long long)p[i]);
  for (int i = 0; i < d->ndim; i++) {
    r.shape[i] = d->shape[i] + p[i] + p[i + d->ndim]; /* each term within 2^31: no overflow */
    if (r.shape[i] < 0) return kiln_set_error("pads make axis %d negative", i);
    if (!strcmp(mode, "reflect") && (p[i] >= d->shape[i] || p[i + d->ndim] >= d->shape[i]) && (p[i] > 0 || p[i + d->ndim] > 0))
      return kiln_set_error("reflect padding %lld/%lld must be smaller than the axis size %lld", (long long)p[i],
                            (long long)p[i + d->ndim], (long long)d->shape[i]);
  }
  *out = r;
  return 0;
}

static int infer_tile(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  const int64_t *rp;
  int k = gattr_ints(&n->attrs, "reps", &rp);
  if (k != d->ndim) return kiln_set_error("reps has %d values for a tensor of rank %d", k, d->ndim);
  TType r = *d;
  for (int i = 0; i < k; i++) {
    if (rp[i] < 0) return kiln_set_error("negative repeat %lld", (long long)rp[i]);
    if (__builtin_mul_overflow(r.shape[i], rp[i], &r.shape[i]))
      return kiln_set_error("repeating axis %d (%lld) %lld times overflows 64 bits", i, (long long)d->shape[i],
                            (long long)rp[i]);
  }
  *out = r;
  return 0;
}

static int infer_broadcast_to(GNode *n, TType *out) {
  const int64_t *s;
  int k = gattr_ints(&n->attrs, "shape", &s);
  if (k > GRAPH_MAX_DIMS) return kiln_set_error("shape has too many dimensions");
  TType t = ttype(arg_type(n, 0)->dtype, k, s);
  /* ONNX Expand is bidirectional: the result is the broadcast of both */
  return bcast_shapes(arg_type(n, 0), &t, out);
}

static int infer_resize(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  const int64_t *s;
  int k = gattr_ints(&n->attrs, "size", &s);
  if (k != d->ndim) return kiln_set_error("size has %d values for a tensor of rank %d", k, d->ndim);
  const char *m = gattr_str(&n->attrs, "method", "nearest");
  if (strcmp(m, "nearest") && strcmp(m, "linear") && strcmp(m, "cubic"))
    return kiln_set_error("resize method '%s' is not supported", m);
  *out = ttype(d->dtype, k, s);
  return 0;
}

static int infer_depth_to_space(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  int64_t b = gattr_int(&n->attrs, "block_size", 0);
  if (d->ndim != 4) return kiln_set_error("data has rank %d, expected 4", d->ndim);
  int64_t bb;
  if (b <= 0 || __builtin_mul_overflow(b, b, &bb) || d->shape[1] % bb)
    return kiln_set_error("channels %lld not divisible by block_size^2 (block_size %lld)", (long long)d->shape[1], (long long)b);
  int64_t s[4] = {d->shape[0], d->shape[1] / (b * b), d->shape[2] * b, d->shape[3] * b};
  *out = ttype(d->dtype, 4, s);
  return 0;
}

static int infer_space_to_depth(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  int64_t b = gattr_int(&n->attrs, "block_size", 0);
  if (d->ndim != 4) return kiln_set_error("data has rank %d, expected 4", d->ndim);
  if (b <= 0 || d->shape[2] % b || d->shape[3] % b) return kiln_set_error("spatial size not divisible by block_size %lld", (long long)b);
  int64_t c;
  if (__builtin_mul_overflow(d->shape[1], b, &c) || __builtin_mul_overflow(c, b, &c))
    return kiln_set_error("channels %lld times block_size^2 (block_size %lld) overflow 64 bits", (long long)d->shape[1], (long long)b);
  int64_t s[4] = {d->shape[0], d->shape[1] * b * b, d->shape[2] / b, d->shape[3] / b};
  *out = ttype(d->dtype, 4, s);
  return 0;
}

/* one_hot: depth (> 0), axis of the new dimension in the output,
 * on_value, off_value, dtype. */
static int infer_one_hot(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  if (dt_is_bool(d->dtype)) return err_dtype(n, 0, "an integer or floating-point index type");
  int64_t depth = gattr_int(&n->attrs, "depth", 0);
  if (depth <= 0) return kiln_set_error("depth = %lld, expected a positive value", (long long)depth);
  if (d->ndim + 1 > GRAPH_MAX_DIMS) return kiln_set_error("result would have rank %d", d->ndim + 1);
  int ax;
  if (norm_axis("one_hot axis", gattr_int(&n->attrs, "axis", -1), d->ndim + 1, &ax)) return -1;
  DType t;
  if (dt_parse(gattr_str(&n->attrs, "dtype", "float32"), &t)) return -1;
  TType r = *d;
  r.dtype = t;
  r.ndim = d->ndim + 1;
  for (int i = 0, j = 0; i < r.ndim; i++) r.shape[i] = i == ax ? depth : d->shape[j++];
  *out = r;
  return 0;
}

/* dyn.one_hot (indices, values): one_hot whose [off_value, on_value] are
 * read at run time (the output's type is values'), its depth the
 * attribute (the representative value when sym_dims says it is given at
 * run time). */
static int infer_dyn_one_hot(GNode *n, TType *out) {
  const TType *v = arg_type(n, 1);
  if (v->ndim != 1 || v->shape[0] != 2) return err_dtype(n, 1, "[off_value, on_value]: 1-D, 2 elements");
  if (infer_one_hot(n, out)) return -1;
  out->dtype = v->dtype;
  return 0;
}

/* signal.window (scalar): a cosine window of `size` points (attributes
 * periodic, a0, a1, a2), of the scalar's type; the size may be a value
 * given at run time (sym_dims). */
static int infer_window(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  if (!dt_is_float(d->dtype)) return err_dtype(n, 0, "a floating-point type (the window's)");
  int64_t size = gattr_int(&n->attrs, "size", -1);
  if (size < 0) return kiln_set_error("size = %lld, expected at least 0", (long long)size);
  *out = ttype(d->dtype, 1, &size);
  return 0;
}

/* signal.mel_weight_matrix (dft_length, sample_rate, lower_edge_hertz,
 * upper_edge_hertz), 0-d each: a matrix of the attribute `shape` (the
 * representative sizes; sym_dims the run-time ones) and `dtype`. */
static int infer_mel_weight_matrix(GNode *n, TType *out) {
  for (int i = 0; i < 4; i++)
    if (arg_type(n, i)->ndim != 0 || dt_is_bool(arg_type(n, i)->dtype) || (i < 2) != dt_is_int(arg_type(n, i)->dtype))
      return err_dtype(n, i, i < 2 ? "a 0-d integer tensor" : "a 0-d floating-point tensor");
  const int64_t *s;
  if (gattr_ints(&n->attrs, "shape", &s) != 2 || s[0] < 1 || s[1] < 1)
    return kiln_set_error("mel_weight_matrix: shape must be two positive sizes");
  DType t;
  if (dt_parse(gattr_str(&n->attrs, "dtype", "float32"), &t)) return -1;
  if (!dt_is_float(t)) return kiln_set_error("mel_weight_matrix: dtype %s is not a floating-point type", dt_str(t));
  *out = ttype(t, 2, s);
  return 0;
}

/* NCHW <-> NCHW<b>c, OIHW -> OIHW<i>i<o>o, and a dense weight NK ->
 * NK<b>n ([N, K] -> [N/b, K, b], dense_pack's packed weight) */
static int parse_layout(const char *l, int *bi, int *bo, char *kind) {
  *bi = *bo = 0;
  if (!strcmp(l, "NCHW")) { *kind = 'd'; return 0; }
  if (!strcmp(l, "OIHW")) { *kind = 'k'; return 0; }
  if (!strcmp(l, "NK")) { *kind = 'w'; return 0; }
  char *end;
  if (!strncmp(l, "NK", 2)) {
    long b = strtol(l + 2, &end, 10);
    if (b > 0 && !strcmp(end, "n")) { *bo = (int)b; *kind = 'w'; return 0; }
  }
  if (!strncmp(l, "NCHW", 4)) {
    long b = strtol(l + 4, &end, 10);
    if (b > 0 && !strcmp(end, "c")) { *bi = (int)b; *kind = 'd'; return 0; }
  }
  if (!strncmp(l, "OIHW", 4)) {
    long b1 = strtol(l + 4, &end, 10);
    if (b1 > 0 && *end == 'i') {
      long b2 = strtol(end + 1, &end, 10);
      if (b2 > 0 && !strcmp(end, "o")) { *bi = (int)b1; *bo = (int)b2; *kind = 'k'; return 0; }
    }
  }
  return kiln_set_error("unsupported layout '%s'", l);
}

static int infer_layout_transform(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0);
  const char *src = gattr_str(&n->attrs, "src_layout", ""), *dst = gattr_str(&n->attrs, "dst_layout", "");
  int si, so, di, dout;
  char sk, dk;
  if (parse_layout(src, &si, &so, &sk) || parse_layout(dst, &di, &dout, &dk)) return -1;
  if (sk != dk) return kiln_set_error("cannot transform %s to %s", src, dst);
  int64_t N, C, H, W, O = 0, I = 0;
  if (sk == 'w') {
    if (so != 0 || d->ndim != 2) return kiln_set_error("dense weight transforms start from NK ([N, K]), got %s %s", src, shape_str(d));
    if (dout == 0) {
      *out = *d;
      return 0;
    }
    if (d->shape[0] % dout) return kiln_set_error("dense weight %s does not divide into %s", shape_str(d), dst);
    int64_t s[3] = {d->shape[0] / dout, d->shape[1], dout};
    *out = ttype(d->dtype, 3, s);
    return 0;
  }
  if (sk == 'd') {
    if (si == 0) {
      if (d->ndim != 4) return kiln_set_error("data %s is not %s", shape_str(d), src);
      N = d->shape[0], C = d->shape[1], H = d->shape[2], W = d->shape[3];
    } else {
      if (d->ndim != 5 || d->shape[4] != si) return kiln_set_error("data %s is not %s", shape_str(d), src);
      N = d->shape[0], C = d->shape[1] * si, H = d->shape[2], W = d->shape[3];
    }
    if (di == 0) {
      int64_t s[4] = {N, C, H, W};
      *out = ttype(d->dtype, 4, s);
    } else {
      if (C % di) return kiln_set_error("%lld channels are not a multiple of the block %d", (long long)C, di);
      int64_t s[5] = {N, C / di, H, W, di};
      *out = ttype(d->dtype, 5, s);
    }
    return 0;
  }
  if (si != 0 || d->ndim != 4) return kiln_set_error("kernel transforms start from OIHW");
  O = d->shape[0], I = d->shape[1];
  if (di == 0) {
    *out = *d;
    return 0;
  }
  if (O % dout || I % di) return kiln_set_error("kernel %s does not divide into %s", shape_str(d), dst);
  int64_t s[6] = {O / dout, I / di, d->shape[2], d->shape[3], di, dout};
  *out = ttype(d->dtype, 6, s);
  return 0;
}

/* OPF_MOVES_DATA: index maps only (an opaque row op may read through them) */
#define MD OPF_MOVES_DATA

const OpDef ops_transform[] = {
    {"reshape", 1, 1, PAT_INJECTIVE, infer_reshape, compute_reshape, NULL, "data, newshape", OP_RESHAPE, MD},
    {"nn.batch_flatten", 1, 1, PAT_INJECTIVE, infer_batch_flatten, compute_batch_flatten, NULL, "data", OP_OTHER, MD},
    {"transpose", 1, 1, PAT_INJECTIVE, infer_transpose, compute_transpose, NULL, "data, axes=None", OP_TRANSPOSE, MD},
    {"squeeze", 1, 1, PAT_INJECTIVE, infer_squeeze, compute_to_type_shape, NULL, "data, axis=None", OP_OTHER, MD},
    {"expand_dims", 1, 1, PAT_BROADCAST, infer_expand_dims, compute_to_type_shape, NULL, "data, axis, num_newaxis=1", OP_OTHER, MD},
    {"concatenate", 1, -1, PAT_INJECTIVE, infer_concat, compute_concatenate, NULL, "data, axis", OP_CONCATENATE},
    {"strided_slice", 1, 1, PAT_INJECTIVE, infer_strided_slice, compute_strided_slice, NULL,
     "data, begin, end, strides=None, axes=None", OP_STRIDED_SLICE, MD},
    {"dyn.strided_slice", 4, 4, PAT_INJECTIVE, infer_dyn_strided_slice, compute_dyn_strided_slice, NULL,
     "data, begin, strides, axes"},
    {"dyn.split", 1, 2, PAT_INJECTIVE, infer_dyn_split, compute_dyn_split, NULL, "data, sizes=None, axis=0, index=0"},
    {"dyn.pad", 3, 4, PAT_INJECTIVE, infer_dyn_pad, compute_dyn_pad, NULL, "data, pads, axes, value, pad_mode='constant'"},
    {"dyn.center_crop_pad", 3, 3, PAT_INJECTIVE, infer_dyn_center_crop_pad, compute_dyn_center_crop_pad, NULL,
     "data, sizes, axes"},
    {"dyn.arange", 2, 2, PAT_INJECTIVE, infer_dyn_arange, compute_dyn_arange, NULL, "start, delta"},
    {"dyn.stft", 3, 4, PAT_OPAQUE, infer_dyn_stft, compute_dyn_stft, NULL,
     "signal, frame_step, frame_length, window=None, onesided=1, lmax=None"},
    {"dyn.col2im", 3, 3, PAT_OPAQUE, infer_dyn_col2im, compute_dyn_col2im, NULL,
     "data, image_shape, block_shape, pads=None, dilations=None, strides=None"},
    /* opaque: chained one axis per call (linear, cubic), inlining them
     * would multiply the taps (4^4 reads per element for a cubic NCHW) */
    {"dyn.affine_grid", 2, 2, PAT_INJECTIVE, infer_dyn_affine_grid, compute_dyn_affine_grid, NULL, NULL},
    {"dyn.one_hot", 2, 2, PAT_INJECTIVE, infer_dyn_one_hot, compute_dyn_one_hot, NULL, NULL},
    {"dyn.resize", 2, 2, PAT_OPAQUE, infer_dyn_resize, compute_dyn_resize, NULL, NULL},
    {"take", 2, 2, PAT_INJECTIVE, infer_take, compute_take, NULL, "data, indices, axis=None, mode='clip'"},
    {"gather_elements", 2, 2, PAT_INJECTIVE, infer_gather_elements, compute_gather_elements, NULL, NULL},
    {"nn.pad", 1, 1, PAT_INJECTIVE, infer_pad, compute_pad, NULL, NULL, OP_PAD, MD},
    {"tile", 1, 1, PAT_INJECTIVE, infer_tile, compute_tile, NULL, "data, reps"},
    {"broadcast_to", 1, 1, PAT_BROADCAST, infer_broadcast_to, compute_broadcast_to, NULL, "data, shape"},
    {"image.resize2d", 1, 1, PAT_INJECTIVE, infer_resize, compute_resize2d, NULL, NULL},
    {"nn.depth_to_space", 1, 1, PAT_INJECTIVE, infer_depth_to_space, compute_depth_to_space, NULL,
     "data, block_size, layout='NCHW', mode='DCR'"},
    {"nn.space_to_depth", 1, 1, PAT_INJECTIVE, infer_space_to_depth, compute_space_to_depth, NULL,
     "data, block_size, layout='NCHW'"},
    {"layout_transform", 1, 1, PAT_INJECTIVE, infer_layout_transform, compute_layout_transform, NULL,
     "data, src_layout, dst_layout", OP_LAYOUT_TRANSFORM, MD},
    {"one_hot", 1, 1, PAT_INJECTIVE, infer_one_hot, compute_one_hot, NULL, NULL},
    {"signal.mel_weight_matrix", 4, 4, PAT_INJECTIVE, infer_mel_weight_matrix, compute_mel_weight_matrix, NULL,
     "dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, shape, dtype"},
    {"signal.window", 1, 1, PAT_INJECTIVE, infer_window, compute_window, NULL, "dtype_of, size, periodic, a0, a1, a2"},
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
