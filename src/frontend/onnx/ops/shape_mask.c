/*
 * shape_mask.c - ONNX ops whose work is a mask that depends only on shapes:
 * Trilu, CumSum (a masked sum over a new axis), EyeLike, and
 * CenterCropPad (crop or zero-pad each named axis around its centre).
 */
#include "ops.h"

static bool tri_upper(int64_t i, int64_t j, int64_t k) { return j - i >= k; }
static bool tri_lower(int64_t i, int64_t j, int64_t k) { return j - i <= k; }

int onnx_h_Trilu(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int nd = x->type.ndim;
  if (nd < 2) return imp_error(im, "input has rank %d, expected at least 2", nd);
  int64_t k = 0;
  bool upper = onnx_attr_int(N(im), "upper", 1) != 0;
  GNode *kv = imp_input(im, 1);
  if (kv && kv->kind == GN_VAR && ttype_numel(&kv->type) == 1 && kv->type.dtype.code == kDLInt) {
    /* k given at run time is data, not a size: the mask compares the
     * constant j - i with it (j - i >= k keeps the upper part) */
    int64_t h = x->type.shape[nd - 2], w = x->type.shape[nd - 1], shape[2] = {h, w};
    void *p;
    GNode *diag = imp_new_const(im, DT_I64, 2, shape, &p);
    if (!diag) return -1;
    for (int64_t i = 0; i < h; i++)
      for (int64_t j = 0; j < w; j++) ((int64_t *)p)[i * w + j] = j - i;
    GNode *kk = kv->type.dtype.bits == 64 ? kv : imp_cast(im, kv, DT_I64);
    GNode *m = imp_call2(im, upper ? "greater_equal" : "less_equal", diag, kk);
    return imp_set_output(im, 0, imp_where(im, m, x, imp_scalar_like(im, 0, x)));
  }
  if (kv && imp_input_i64(im, 1, INT64_MIN, INT64_MAX, &k)) return -1;
  GNode *m = imp_mask2d(im, x->type.shape[nd - 2], x->type.shape[nd - 1], 0, upper ? tri_upper : tri_lower, k);
  return imp_set_output(im, 0, imp_where(im, m, x, imp_scalar_like(im, 0, x)));
}

static bool before_incl(int64_t j, int64_t i, int64_t k) { return k & 1 ? (k & 2 ? j > i : j < i) : (k & 2 ? j >= i : j <= i); }

/* CumSum: out[i] = sum of x[j] over j <= i (< i exclusive; >=, > reversed),
 * a masked sum over a new axis. */
static GNode *cum_along(Importer *im, GNode *x, int ax, int64_t mode, bool prod) {
  int nd = x->type.ndim;
  int64_t n = x->type.shape[ax];
  GNode *m = imp_mask2d(im, n, n, nd - 1 - ax, before_incl, mode);
  GNode *w = imp_where(im, m, imp_expand_dims(im, x, ax + 1), imp_scalar_like(im, prod ? 1 : 0, x));
  int64_t a = ax;
  return imp_reduce(im, prod ? "prod" : "sum", w, 1, &a, false);
}

int onnx_h_CumSum(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int nd = x->type.ndim, ax;
  if (nd + 1 > MAXD) return imp_error(im, "input rank %d is too large", nd);
  int64_t mode = (onnx_attr_int(N(im), "exclusive", 0) ? 1 : 0) | (onnx_attr_int(N(im), "reverse", 0) ? 2 : 0);
  bool prod = !strcmp(N(im)->op_type, "CumProd"); /* opset 26: the same with products */
  GNode *av = imp_input(im, 1);
  if (av && av->kind == GN_VAR && ttype_numel(&av->type) == 1 && av->type.ndim <= 1 && av->type.dtype.code == kDLInt &&
      nd >= 1 && !ttype_is_symbolic(&x->type)) {
    /* the axis given at run time: a run-time value only for its bounds
     * [-rank, rank - 1] (checked at set_input), and data that picks the
     * result along each possible axis */
    if (!graph_value_sym(imp_graph(im), av->name, 0, -nd, nd - 1)) return imp_error(im, "%s", kiln_get_error());
    GNode *a64 = av->type.dtype.bits == 64 ? av : imp_cast(im, av, DT_I64);
    GNode *y = cum_along(im, x, nd - 1, mode, prod);
    for (int d = nd - 2; d >= 0 && y; d--) {
      GNode *is_d = imp_call2(im, "logical_or", imp_call2(im, "equal", a64, imp_scalar(im, (double)d, DT_I64)),
                              imp_call2(im, "equal", a64, imp_scalar(im, (double)(d - nd), DT_I64)));
      y = imp_where(im, is_d, cum_along(im, x, d, mode, prod), y);
    }
    return imp_set_output(im, 0, y);
  }
  int64_t axv;
  if (imp_input_i64(im, 1, INT64_MIN, INT64_MAX, &axv)) return -1;
  if (imp_norm_axis(im, axv, nd, &ax)) return -1;
  return imp_set_output(im, 0, cum_along(im, x, ax, mode, prod));
}

/* CenterCropPad (opset 18): each named axis cropped or zero-padded to the
 * given size around its centre (the odd unit goes to the end). */
int onnx_h_CenterCropPad(Importer *im) {
  int rc = onnx_center_crop_pad_runtime(im);
  if (rc != -2) return rc;
  GNode *x = in0(im);
  int nd = x->type.ndim, na = nd;
  int64_t sz[MAXD];
  int n = imp_const_input_ints(im, 1, sz, MAXD);
  if (n < 0) return -1;
  const int64_t *av = onnx_attr_ints(N(im), "axes", &na);
  if (!av) na = nd;
  if (n != na) return imp_error(im, "shape has %d values for %d axes", n, na);
  int64_t pads[2 * MAXD] = {0};
  bool pad = false;
  GNode *y = x;
  for (int i = 0; i < na; i++) {
    int ax = i;
    if (av && imp_norm_axis(im, av[i], nd, &ax)) return -1;
    int64_t dim = x->type.shape[ax], want = sz[i];
    if (want < 0) return imp_error(im, "shape[%d] = %lld is negative", i, (long long)want);
    if (want < dim) {
      int64_t b = (dim - want) / 2;
      y = imp_slice(im, y, ax, b, b + want);
    } else if (want > dim) {
      pads[ax] = (want - dim) / 2;
      pads[ax + nd] = want - dim - pads[ax];
      pad = true;
    }
  }
  if (pad && y) {
    GAttrs a = gattrs_new();
    ga_ints(&a, "pads", 2 * nd, pads);
    ga_str(&a, "pad_mode", "constant");
    ga_float(&a, "pad_value", 0);
    y = imp_call(im, "nn.pad", 1, &y, a);
  }
  return out0(im, y);
}

static bool eye_k(int64_t i, int64_t j, int64_t k) { return j - i == k; }

int onnx_h_EyeLike(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  if (x->type.ndim != 2) return imp_error(im, "input has rank %d, expected 2", x->type.ndim);
  DType t = x->type.dtype;
  if (onnx_attr_has(N(im), "dtype") && imp_attr_dtype(im, "dtype", 1, &t)) return -1;
  int64_t k = onnx_attr_int(N(im), "k", 0);
  void *p;
  GNode *c = imp_new_const(im, t, 2, x->type.shape, &p);
  if (!c) return -1;
  for (int64_t i = 0; i < x->type.shape[0]; i++)
    for (int64_t j = 0; j < x->type.shape[1]; j++)
      if (eye_k(i, j, k)) imp_array_set(c->value, i * x->type.shape[1] + j, 1);
  return imp_set_output(im, 0, c);
}
