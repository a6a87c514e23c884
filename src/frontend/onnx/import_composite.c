/*
 * import_composite.c - ONNX operators Kiln has no single graph op for,
 * lowered at import to a small graph of existing calls (elementwise,
 * reductions, gathers, one_hot), or computed at import when their inputs
 * are constants.
 *
 * Shapes are static, so masks that depend only on shapes (Trilu's
 * triangle, CumSum's prefix, TopK's tie order, Einsum's diagonals) are
 * constants.  Ops whose natural kernel is a sort or a scatter become dense
 * comparisons: TopK ranks every element against every other along the
 * axis, ScatterElements/ScatterND/MaxUnpool compare each target position
 * with every index (a one_hot) and reduce.  That costs n^2 along the axis
 * (or positions x updates), fine for the sizes these ops have in models
 * and tests, and it needs no new kernels.  Ops whose output shape depends
 * on data (NonZero, Compress) need their deciding input to be a constant
 * (bound with --bind when it is a graph input).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#define MAXD GRAPH_MAX_DIMS

static const OnnxNode *N(Importer *im) { return imp_node(im); }
static GNode *bin(Importer *im, const char *op, GNode *a, GNode *b) { return imp_call2(im, op, a, b); }
static GNode *un(Importer *im, const char *op, GNode *a) { return imp_call1(im, op, a); }

static int set_out(Importer *im, int i, GNode *v) {
  if (!v) return -1;
  return imp_set_output(im, i, v);
}

static bool want_output(Importer *im, int i) { return N(im)->noutputs > i && *N(im)->outputs[i]; }

static int norm_ax(Importer *im, int64_t axis, int ndim, int *out) {
  *out = 0;
  if (axis < -ndim || axis >= (ndim > 0 ? ndim : 1))
    return imp_error(im, "axis %lld is out of range for a tensor of rank %d", (long long)axis, ndim);
  *out = (int)(axis < 0 ? axis + ndim : axis);
  return 0;
}

static int64_t numel_of(int n, const int64_t *s) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

/* A constant int64 tensor of a shape, zero-filled; *data its elements. */
static GNode *new_i64(Importer *im, int ndim, const int64_t *shape, int64_t **data) {
  void *p;
  GNode *c = imp_new_const(im, DT_I64, ndim, shape, &p);
  *data = p;
  return c;
}

/* A constant bool tensor [n, m] (plus trailing size-1 dims) with
 * mask[i][j] = pred(i, j, k). */
typedef bool (*MaskFn)(int64_t i, int64_t j, int64_t k);
static GNode *mask2d(Importer *im, int64_t n, int64_t m, int trailing, MaskFn pred, int64_t k) {
  int64_t shape[MAXD] = {n, m};
  for (int t = 0; t < trailing; t++) shape[2 + t] = 1;
  void *p;
  GNode *c = imp_new_const(im, DT_BOOL, 2 + trailing, shape, &p);
  if (!c) return NULL;
  uint8_t *d = p;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) d[i * m + j] = pred(i, j, k);
  return c;
}

/* A scalar input that must be a constant (k of TopK, depth of OneHot). */
static int const_scalar(Importer *im, int i, double *out) {
  GNode *c = imp_const_input(im, i);
  if (!c) return -1;
  if (ttype_numel(&c->type) != 1) return imp_error(im, "input %d must hold one value, got %s", i, ttype_str(&c->type));
  *out = imp_const_at(c, 0);
  return 0;
}

/* ---- normalization with statistics ---- */

/* BatchNormalization with training_mode = 1: batch statistics normalize,
 * and the running mean and variance are updated with momentum. */
int onnx_h_BatchNormTraining(Importer *im) {
  GNode *x = imp_input(im, 0), *s = imp_input(im, 1), *b = imp_input(im, 2), *mean = imp_input(im, 3),
        *var = imp_input(im, 4);
  if (!x || !s || !b || !mean || !var) return imp_error(im, "needs five inputs");
  int nd = x->type.ndim;
  if (nd < 2) return imp_error(im, "data has rank %d, expected at least 2", nd);
  double eps = onnx_attr_float(N(im), "epsilon", 1e-5f), mom = onnx_attr_float(N(im), "momentum", 0.9f);
  int64_t axes[MAXD], cs[MAXD];
  int na = 0;
  for (int i = 0; i < nd; i++)
    if (i != 1) axes[na++] = i;
  int64_t C = x->type.shape[1];
  cs[0] = C;
  for (int i = 1; i < nd - 1; i++) cs[i] = 1;
  GNode *bm = imp_reduce(im, "mean", x, na, axes, true);
  GNode *d = bin(im, "subtract", x, bm);
  GNode *bv = imp_reduce(im, "mean", bin(im, "multiply", d, d), na, axes, true);
  GNode *inv = un(im, "rsqrt", bin(im, "add", bv, imp_scalar_like(im, eps, x)));
  GNode *y = bin(im, "multiply", bin(im, "multiply", d, inv), imp_reshape(im, s, nd - 1, cs));
  y = bin(im, "add", y, imp_reshape(im, b, nd - 1, cs));
  if (set_out(im, 0, y)) return -1;
  if (want_output(im, 1)) {
    GNode *rm = bin(im, "add", bin(im, "multiply", mean, imp_scalar_like(im, mom, mean)),
                    bin(im, "multiply", imp_cast(im, imp_reshape(im, bm, 1, &C), mean->type.dtype), imp_scalar_like(im, 1 - mom, mean)));
    if (set_out(im, 1, rm)) return -1;
  }
  if (want_output(im, 2)) {
    GNode *rv = bin(im, "add", bin(im, "multiply", var, imp_scalar_like(im, mom, var)),
                    bin(im, "multiply", imp_cast(im, imp_reshape(im, bv, 1, &C), var->type.dtype), imp_scalar_like(im, 1 - mom, var)));
    if (set_out(im, 2, rv)) return -1;
  }
  for (int i = 3; i < N(im)->noutputs; i++)
    if (want_output(im, i)) return imp_error(im, "output %d is not supported", i);
  return 0;
}

/* LayerNormalization with its Mean and InvStdDev outputs (computed in
 * float32 when stash_type = 1, ONNX's default). */
int onnx_h_LayerNormStats(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 1), *b = imp_input(im, 2);
  if (!x || !w) return imp_error(im, "needs X and Scale");
  int nd = x->type.ndim, ax;
  if (norm_ax(im, onnx_attr_int(N(im), "axis", -1), nd, &ax)) return -1;
  double eps = onnx_attr_float(N(im), "epsilon", 1e-5f);
  int64_t stash = onnx_attr_int(N(im), "stash_type", 1);
  if (stash != 1) return imp_error(im, "stash_type = %lld is not supported (1: float32)", (long long)stash);
  int64_t axes[MAXD];
  int na = 0;
  for (int i = ax; i < nd; i++) axes[na++] = i;
  GNode *xs = imp_cast(im, x, DT_F32);
  GNode *mean = imp_reduce(im, "mean", xs, na, axes, true);
  GNode *d = bin(im, "subtract", xs, mean);
  GNode *var = imp_reduce(im, "mean", bin(im, "multiply", d, d), na, axes, true);
  GNode *inv = un(im, "rsqrt", bin(im, "add", var, imp_scalar_like(im, eps, xs)));
  GNode *y = imp_cast(im, bin(im, "multiply", d, inv), x->type.dtype);
  y = bin(im, "multiply", y, w);
  if (b) y = bin(im, "add", y, b);
  if (set_out(im, 0, y)) return -1;
  if (want_output(im, 1) && set_out(im, 1, mean)) return -1;
  if (want_output(im, 2) && set_out(im, 2, inv)) return -1;
  return 0;
}

/* ---- losses ---- */

/* -logp[n, target[n, ...], ...] weighted, ignore_index masked, reduced. */
static GNode *nll(Importer *im, GNode *logp, GNode *target, GNode *weight) {
  if (!logp || !target) return NULL;
  const char *red = onnx_attr_string(N(im), "reduction", "mean");
  if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
    return imp_error(im, "reduction '%s' is not supported (none, sum, mean)", red), NULL;
  if (logp->type.ndim < 2) return imp_error(im, "input has rank %d, expected [N, C, ...]", logp->type.ndim), NULL;
  if (dt_is_float(target->type.dtype) || dt_is_bool(target->type.dtype))
    return imp_error(im, "target must hold integers, got %s", dt_str(target->type.dtype)), NULL;
  GNode *t = target, *mask = NULL;
  if (onnx_attr_has(N(im), "ignore_index")) {
    mask = bin(im, "not_equal", target, imp_scalar_like(im, (double)onnx_attr_int(N(im), "ignore_index", 0), target));
    t = imp_where(im, mask, target, imp_scalar_like(im, 0, target));
  }
  GAttrs ga = gattrs_new();
  ga_int(&ga, "axis", 1);
  GNode *args[2] = {logp, imp_expand_dims(im, t, 1)};
  GNode *picked = imp_squeeze(im, imp_call(im, "gather_elements", 2, args, ga), 1);
  GNode *loss = un(im, "negative", picked);
  GNode *w = NULL;
  if (weight) {
    GAttrs ta = gattrs_new();
    ga_int(&ta, "axis", 0);
    GNode *targs[2] = {weight, t};
    w = imp_call(im, "take", 2, targs, ta);
    if (mask) w = imp_where(im, mask, w, imp_scalar_like(im, 0, w));
  } else if (mask) {
    w = imp_cast(im, mask, logp->type.dtype);
  }
  if (w) loss = bin(im, "multiply", loss, w);
  if (!strcmp(red, "none")) return loss;
  GNode *sum = imp_reduce(im, "sum", loss, 0, NULL, false);
  if (!strcmp(red, "sum")) return sum;
  if (!w) return imp_reduce(im, "mean", loss, 0, NULL, false);
  return bin(im, "divide", sum, imp_reduce(im, "sum", w, 0, NULL, false));
}

int onnx_h_NegativeLogLikelihoodLoss(Importer *im) {
  return set_out(im, 0, nll(im, imp_input(im, 0), imp_input(im, 1), imp_input(im, 2)));
}

int onnx_h_SoftmaxCrossEntropyLoss(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs scores");
  if (x->type.ndim < 2) return imp_error(im, "scores have rank %d, expected [N, C, ...]", x->type.ndim);
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 1);
  GNode *logp = imp_call(im, "nn.log_softmax", 1, &x, a);
  if (set_out(im, 0, nll(im, logp, imp_input(im, 1), imp_input(im, 2)))) return -1;
  if (want_output(im, 1) && set_out(im, 1, logp)) return -1;
  return 0;
}

/* ---- masks from shapes ---- */

static bool tri_upper(int64_t i, int64_t j, int64_t k) { return j - i >= k; }
static bool tri_lower(int64_t i, int64_t j, int64_t k) { return j - i <= k; }

int onnx_h_Trilu(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int nd = x->type.ndim;
  if (nd < 2) return imp_error(im, "input has rank %d, expected at least 2", nd);
  double k = 0;
  if (imp_input(im, 1) && const_scalar(im, 1, &k)) return -1;
  bool upper = onnx_attr_int(N(im), "upper", 1) != 0;
  GNode *m = mask2d(im, x->type.shape[nd - 2], x->type.shape[nd - 1], 0, upper ? tri_upper : tri_lower, (int64_t)k);
  return set_out(im, 0, imp_where(im, m, x, imp_scalar_like(im, 0, x)));
}

static bool before_incl(int64_t j, int64_t i, int64_t k) { return k & 1 ? (k & 2 ? j > i : j < i) : (k & 2 ? j >= i : j <= i); }

/* CumSum: out[i] = sum of x[j] over j <= i (< i exclusive; >=, > reversed),
 * a masked sum over a new axis. */
int onnx_h_CumSum(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  double axv;
  if (const_scalar(im, 1, &axv)) return -1;
  int nd = x->type.ndim, ax;
  if (norm_ax(im, (int64_t)axv, nd, &ax)) return -1;
  if (nd + 1 > MAXD) return imp_error(im, "input rank %d is too large", nd);
  int64_t mode = (onnx_attr_int(N(im), "exclusive", 0) ? 1 : 0) | (onnx_attr_int(N(im), "reverse", 0) ? 2 : 0);
  int64_t n = x->type.shape[ax];
  GNode *m = mask2d(im, n, n, nd - 1 - ax, before_incl, mode);
  GNode *w = imp_where(im, m, imp_expand_dims(im, x, ax + 1), imp_scalar_like(im, 0, x));
  int64_t a = ax;
  return set_out(im, 0, imp_reduce(im, "sum", w, 1, &a, false));
}

static bool eye_k(int64_t i, int64_t j, int64_t k) { return j - i == k; }

int onnx_h_EyeLike(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  if (x->type.ndim != 2) return imp_error(im, "input has rank %d, expected 2", x->type.ndim);
  DType t = x->type.dtype;
  if (onnx_attr_has(N(im), "dtype") && onnx_dtype_from_onnx((int)onnx_attr_int(N(im), "dtype", 1), &t))
    return imp_error(im, "%s", kiln_get_error());
  int64_t k = onnx_attr_int(N(im), "k", 0);
  void *p;
  GNode *c = imp_new_const(im, t, 2, x->type.shape, &p);
  if (!c) return -1;
  for (int64_t i = 0; i < x->type.shape[0]; i++)
    for (int64_t j = 0; j < x->type.shape[1]; j++)
      if (eye_k(i, j, k)) imp_array_set(c->value, i * x->type.shape[1] + j, 1);
  return set_out(im, 0, c);
}

/* ---- elementwise compositions ---- */

int onnx_h_IsInf(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "input must be floating-point, got %s", dt_str(x->type.dtype));
  bool dp = onnx_attr_int(N(im), "detect_positive", 1) != 0, dn = onnx_attr_int(N(im), "detect_negative", 1) != 0;
  GNode *r = un(im, "isinf", x);
  if (!dp && !dn) r = bin(im, "logical_and", r, imp_scalar(im, 0, DT_BOOL));
  else if (!dn) r = bin(im, "logical_and", r, bin(im, "greater", x, imp_scalar_like(im, 0, x)));
  else if (!dp) r = bin(im, "logical_and", r, bin(im, "less", x, imp_scalar_like(im, 0, x)));
  return set_out(im, 0, r);
}

int onnx_h_Shrink(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  double l = onnx_attr_float(N(im), "lambd", 0.5f), b = onnx_attr_float(N(im), "bias", 0.0f);
  GNode *lo = bin(im, "less", x, imp_scalar_like(im, -l, x)), *hi = bin(im, "greater", x, imp_scalar_like(im, l, x));
  GNode *inner = imp_where(im, hi, bin(im, "subtract", x, imp_scalar_like(im, b, x)), imp_scalar_like(im, 0, x));
  return set_out(im, 0, imp_where(im, lo, bin(im, "add", x, imp_scalar_like(im, b, x)), inner));
}

/* Hardmax: one_hot of the (first) argmax along the axis. */
int onnx_h_Hardmax(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int nd = x->type.ndim, ax;
  bool old = imp_opset(im) < 13;
  if (norm_ax(im, onnx_attr_int(N(im), "axis", old ? 1 : -1), nd, &ax)) return -1;
  GNode *v = x;
  int vax = ax;
  if (old && ax != nd - 1) { /* before opset 13: over the flattened [:axis] x [axis:] */
    int64_t s[2] = {numel_of(ax, x->type.shape), numel_of(nd - ax, x->type.shape + ax)};
    v = imp_reshape(im, x, 2, s);
    vax = 1;
  }
  if (!v) return -1;
  GAttrs a = gattrs_new();
  int64_t a64 = vax;
  ga_ints(&a, "axis", 1, &a64);
  ga_int(&a, "keepdims", 0);
  GNode *am = imp_call(im, "argmax", 1, &v, a);
  GAttrs oa = gattrs_new();
  ga_int(&oa, "depth", v->type.shape[vax]);
  ga_int(&oa, "axis", vax);
  ga_str(&oa, "dtype", dt_str(x->type.dtype));
  GNode *y = am ? imp_call(im, "one_hot", 1, &am, oa) : NULL;
  if (v != x) y = imp_reshape(im, y, nd, x->type.shape);
  return set_out(im, 0, y);
}

int onnx_h_OneHot(Importer *im) {
  GNode *idx = imp_input(im, 0);
  if (!idx) return imp_error(im, "needs indices");
  double depth;
  if (const_scalar(im, 1, &depth)) return -1;
  GNode *vals = imp_const_input(im, 2);
  if (!vals) return -1;
  if (ttype_numel(&vals->type) != 2) return imp_error(im, "values must hold [off_value, on_value], got %s", ttype_str(&vals->type));
  GAttrs a = gattrs_new();
  ga_int(&a, "depth", (int64_t)depth);
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", -1));
  ga_float(&a, "off_value", imp_const_at(vals, 0));
  ga_float(&a, "on_value", imp_const_at(vals, 1));
  ga_str(&a, "dtype", dt_str(vals->type.dtype));
  return set_out(im, 0, imp_call(im, "one_hot", 1, &idx, a));
}

/* ---- normalizations and pooling as reductions ---- */

int onnx_h_MeanVarianceNormalization(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int n;
  const int64_t *v = onnx_attr_ints(N(im), "axes", &n);
  int64_t def[3] = {0, 2, 3};
  if (!v) v = def, n = 3;
  GNode *mean = imp_reduce(im, "mean", x, n, v, true);
  GNode *sqmean = imp_reduce(im, "mean", bin(im, "multiply", x, x), n, v, true);
  GNode *std = un(im, "sqrt", bin(im, "subtract", sqmean, bin(im, "multiply", mean, mean)));
  GNode *y = bin(im, "divide", bin(im, "subtract", x, mean), bin(im, "add", std, imp_scalar_like(im, 1e-9, x)));
  return set_out(im, 0, y);
}

int onnx_h_LpNormalization(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int64_t p = onnx_attr_int(N(im), "p", 2), axis = onnx_attr_int(N(im), "axis", -1);
  if (p != 1 && p != 2) return imp_error(im, "p = %lld is not supported (1 or 2)", (long long)p);
  GNode *nrm = imp_reduce(im, p == 1 ? "l1_norm" : "l2_norm", x, 1, &axis, true);
  return set_out(im, 0, bin(im, "divide", x, nrm));
}

int onnx_h_GlobalLpPool(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  const OnnxAttr *pa = onnx_attr_find(N(im), "p");
  double p = !pa ? 2 : pa->type == ONNX_ATTR_FLOAT ? pa->f : (double)pa->i;
  int nd = x->type.ndim;
  if (nd < 3) return imp_error(im, "input has rank %d, expected [N, C, spatial...]", nd);
  int64_t axes[MAXD];
  int na = 0;
  for (int i = 2; i < nd; i++) axes[na++] = i;
  GNode *y;
  if (p == 1) y = imp_reduce(im, "l1_norm", x, na, axes, true);
  else if (p == 2) y = imp_reduce(im, "l2_norm", x, na, axes, true);
  else {
    GNode *s = imp_reduce(im, "sum", bin(im, "power", un(im, "abs", x), imp_scalar_like(im, p, x)), na, axes, true);
    y = bin(im, "power", s, imp_scalar_like(im, 1.0 / p, x));
  }
  return set_out(im, 0, y);
}

/* ---- data movement with constant index tensors ---- */

int onnx_h_ReverseSequence(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  GNode *lens = imp_const_input(im, 1);
  if (!lens) return -1;
  int nd = x->type.ndim, ba, ta;
  if (norm_ax(im, onnx_attr_int(N(im), "batch_axis", 1), nd, &ba) || norm_ax(im, onnx_attr_int(N(im), "time_axis", 0), nd, &ta))
    return -1;
  if (ba == ta) return imp_error(im, "batch_axis and time_axis are both %d", ba);
  if (ttype_numel(&lens->type) != x->type.shape[ba])
    return imp_error(im, "sequence_lens has %lld values for a batch of %lld", (long long)ttype_numel(&lens->type),
                     (long long)x->type.shape[ba]);
  int64_t *d;
  GNode *idx = new_i64(im, nd, x->type.shape, &d);
  if (!idx) return -1;
  int64_t total = ttype_numel(&x->type), T = x->type.shape[ta];
  for (int64_t e = 0; e < total; e++) {
    int64_t rem = e, c[MAXD];
    for (int i = nd - 1; i >= 0; i--) {
      c[i] = rem % x->type.shape[i];
      rem /= x->type.shape[i];
    }
    int64_t L = (int64_t)imp_const_at(lens, c[ba]), t = c[ta];
    if (L < 0 || L > T) return imp_error(im, "sequence length %lld is outside [0, %lld]", (long long)L, (long long)T);
    d[e] = t < L ? L - 1 - t : t;
  }
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ta);
  GNode *args[2] = {x, idx};
  return set_out(im, 0, imp_call(im, "gather_elements", 2, args, a));
}

int onnx_h_Compress(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  GNode *cond = imp_const_input(im, 1);
  if (!cond) return -1;
  if (cond->type.ndim != 1) return imp_error(im, "condition must be 1-D, got %s", ttype_str(&cond->type));
  int ax = 0;
  GNode *v = x;
  if (onnx_attr_has(N(im), "axis")) {
    if (norm_ax(im, onnx_attr_int(N(im), "axis", 0), x->type.ndim, &ax)) return -1;
  } else {
    int64_t n = ttype_numel(&x->type);
    v = imp_reshape(im, x, 1, &n);
  }
  if (!v) return -1;
  int64_t len = cond->type.shape[0], dim = v->type.shape[ax], cnt = 0;
  if (len > dim) return imp_error(im, "condition has %lld values for an axis of %lld", (long long)len, (long long)dim);
  int64_t *pos = KNEWN(int64_t, len + 1);
  for (int64_t i = 0; i < len; i++)
    if (imp_const_at(cond, i) != 0) pos[cnt++] = i;
  GNode *ic = imp_const_ints(im, (int)cnt, pos);
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ax);
  GNode *args[2] = {v, ic};
  return set_out(im, 0, imp_call(im, "take", 2, args, a));
}

/* NonZero of a constant: the indices, computed at import. */
int onnx_h_NonZero(Importer *im) {
  GNode *x = imp_const_input(im, 0);
  if (!x) return -1;
  int nd = x->type.ndim;
  if (nd < 1) return imp_error(im, "a scalar input is not supported");
  int64_t total = ttype_numel(&x->type), cnt = 0;
  for (int64_t e = 0; e < total; e++) cnt += imp_const_at(x, e) != 0;
  int64_t shape[2] = {nd, cnt}, *d;
  GNode *c = new_i64(im, 2, shape, &d);
  if (!c) return -1;
  int64_t k = 0;
  for (int64_t e = 0; e < total; e++) {
    if (imp_const_at(x, e) == 0) continue;
    int64_t rem = e;
    for (int i = nd - 1; i >= 0; i--) {
      d[i * cnt + k] = rem % x->type.shape[i];
      rem /= x->type.shape[i];
    }
    k++;
  }
  return set_out(im, 0, c);
}

/* ---- TopK by ranking ---- */

static bool lower_strict(int64_t i, int64_t j, int64_t k) {
  (void)k;
  return j < i;
}

/* rank[i] = #{j : x[j] beats x[i], or ties it with j < i}; the r-th output
 * is the element of rank r. */
int onnx_h_TopK(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  double kv;
  if (imp_opset(im) < 10) kv = (double)onnx_attr_int(N(im), "k", 0);
  else if (const_scalar(im, 1, &kv)) return -1;
  int r = x->type.ndim, ax;
  if (r < 1) return imp_error(im, "input must have rank >= 1");
  if (r + 1 > MAXD) return imp_error(im, "input rank %d is too large", r);
  if (norm_ax(im, onnx_attr_int(N(im), "axis", -1), r, &ax)) return -1;
  int64_t n = x->type.shape[ax], k = (int64_t)kv;
  if (k < 0 || k > n) return imp_error(im, "k = %lld is outside [0, %lld]", (long long)k, (long long)n);
  bool largest = onnx_attr_int(N(im), "largest", 1) != 0;
  int64_t perm[MAXD], inv[MAXD];
  int q = 0;
  for (int i = 0; i < r; i++)
    if (i != ax) perm[q++] = i;
  perm[q] = ax;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  GNode *xt = imp_transpose(im, x, r, perm);
  GNode *xi = imp_expand_dims(im, xt, r), *xj = imp_expand_dims(im, xt, r - 1);
  GNode *beats = bin(im, largest ? "greater" : "less", xj, xi);
  GNode *tie = bin(im, "logical_and", bin(im, "equal", xj, xi), mask2d(im, n, n, 0, lower_strict, 0));
  int64_t last = r;
  GNode *rank = imp_reduce(im, "sum", imp_cast(im, bin(im, "logical_or", beats, tie), DT_I64), 1, &last, false);
  int64_t *ar, *col, ks = k, cs[2] = {n, 1};
  GNode *arange_k = new_i64(im, 1, &ks, &ar);
  for (int64_t i = 0; i < k; i++) ar[i] = i;
  GNode *arange_n = new_i64(im, 2, cs, &col);
  for (int64_t i = 0; i < n; i++) col[i] = i;
  GNode *sel = bin(im, "equal", imp_expand_dims(im, rank, r), arange_k);
  int64_t ia = r - 1;
  GNode *vals = imp_reduce(im, "sum", imp_where(im, sel, xi, imp_scalar_like(im, 0, x)), 1, &ia, false);
  GNode *idx = imp_reduce(im, "sum", imp_where(im, sel, arange_n, imp_scalar(im, 0, DT_I64)), 1, &ia, false);
  if (set_out(im, 0, imp_transpose(im, vals, r, inv))) return -1;
  return set_out(im, 1, imp_transpose(im, idx, r, inv));
}

/* ---- Einsum as broadcast products and sums ---- */

#define ELL 256 /* labels of ellipsis dims: ELL + position (above any letter) */

typedef struct Term {
  int n;           /* labels */
  int lab[MAXD];
  int ell;         /* position of "..." in the term, or -1 */
} Term;

static int parse_term(Importer *im, const char *s, size_t len, Term *t) {
  t->n = 0;
  t->ell = -1;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.' || t->ell >= 0) return imp_error(im, "bad ellipsis in the equation");
      t->ell = t->n;
      i += 2;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return imp_error(im, "unexpected character '%c' in the equation", c);
    if (t->n >= MAXD) return imp_error(im, "a term has more than %d labels", MAXD);
    t->lab[t->n++] = (unsigned char)c;
  }
  return 0;
}

/* Expand a term's "..." into ne ellipsis labels (right-aligned to E). */
static int expand_term(Importer *im, const Term *t, int ne, int E, int *out) {
  int k = 0;
  for (int i = 0; i <= t->n; i++) {
    if (i == t->ell)
      for (int e = 0; e < ne; e++) {
        if (k >= MAXD) return imp_error(im, "too many dimensions");
        out[k++] = ELL + (E - ne) + e;
      }
    if (i < t->n) {
      if (k >= MAXD) return imp_error(im, "too many dimensions");
      out[k++] = t->lab[i];
    }
  }
  return k;
}

static bool eye_mask(int64_t i, int64_t j, int64_t k) {
  (void)k;
  return i == j;
}

int onnx_h_Einsum(Importer *im) {
  const char *eq = onnx_attr_string(N(im), "equation", NULL);
  if (!eq) return imp_error(im, "missing attribute 'equation'");
  int nin = imp_ninputs(im);
  if (nin < 1 || nin > 8) return imp_error(im, "%d operands are not supported", nin);
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  Term terms[8], outt;
  int nt = 0;
  const char *p = eq;
  while (nt < nin) {
    const char *comma = memchr(p, ',', (size_t)(eq + lhs_len - p));
    size_t len = comma ? (size_t)(comma - p) : (size_t)(eq + lhs_len - p);
    if (parse_term(im, p, len, &terms[nt++])) return -1;
    if (!comma) break;
    p = comma + 1;
  }
  if (nt != nin) return imp_error(im, "the equation has %d operands, the node %d", nt, nin);
  GNode *ops[8];
  int labs[8][MAXD], nl[8], E = 0;
  for (int k = 0; k < nin; k++) {
    if (!(ops[k] = imp_input(im, k))) return imp_error(im, "operand %d is missing", k);
    int ne = ops[k]->type.ndim - terms[k].n;
    if (ne < 0 || (ne > 0 && terms[k].ell < 0))
      return imp_error(im, "operand %d has rank %d, its term %d labels", k, ops[k]->type.ndim, terms[k].n);
    if (ne > E) E = ne;
  }
  for (int k = 0; k < nin; k++) {
    int ne = ops[k]->type.ndim - terms[k].n;
    if ((nl[k] = expand_term(im, &terms[k], terms[k].ell >= 0 ? ne : 0, E, labs[k])) < 0) return -1;
  }
  int out[MAXD], no = 0;
  if (arrow) {
    if (parse_term(im, arrow + 2, strlen(arrow + 2), &outt)) return -1;
    if (outt.ell < 0 && E > 0) {
      /* NumPy allows dropping broadcast dims only when they are size 1;
       * keep it simple */
      return imp_error(im, "an output without '...' while operands have '...' is not supported");
    }
    if ((no = expand_term(im, &outt, outt.ell >= 0 ? E : 0, E, out)) < 0) return -1;
  } else {
    for (int e = 0; e < E; e++) out[no++] = ELL + e;
    for (int c = 'A'; c <= 'z'; c++) {
      int cnt = 0;
      for (int k = 0; k < nin; k++)
        for (int i = 0; i < nl[k]; i++) cnt += labs[k][i] == c;
      if (cnt == 1) {
        if (no >= MAXD) return imp_error(im, "too many output labels");
        out[no++] = c;
      }
    }
  }
  /* diagonals: a label repeated inside one operand */
  for (int k = 0; k < nin; k++) {
    for (bool again = true; again;) {
      again = false;
      for (int a = 0; a < nl[k] && !again; a++)
        for (int b = a + 1; b < nl[k] && !again; b++) {
          if (labs[k][a] != labs[k][b]) continue;
          GNode *x = ops[k];
          if (!x) return -1;
          int64_t n = x->type.shape[a];
          if (x->type.shape[b] != n) return imp_error(im, "operand %d: label repeated over sizes %lld and %lld", k, (long long)n, (long long)x->type.shape[b]);
          /* mask over axes a and b: shape with n at a and b, 1 elsewhere */
          GNode *m = mask2d(im, n, n, 0, eye_mask, 0);
          int64_t ms[MAXD];
          for (int i = a; i < nl[k]; i++) ms[i - a] = i == a || i == b ? n : 1;
          m = imp_reshape(im, m, nl[k] - a, ms);
          GNode *w = imp_where(im, m, x, imp_scalar_like(im, 0, x));
          int64_t bb = b;
          ops[k] = imp_reduce(im, "sum", w, 1, &bb, false);
          for (int i = b; i + 1 < nl[k]; i++) labs[k][i] = labs[k][i + 1];
          nl[k]--;
          again = true;
        }
    }
  }
  /* all labels: the output's, then the contracted ones */
  int all[MAXD], na = 0;
  for (int i = 0; i < no; i++) {
    for (int j = 0; j < i; j++)
      if (out[j] == out[i]) return imp_error(im, "output label repeated");
    all[na++] = out[i];
  }
  for (int k = 0; k < nin; k++)
    for (int i = 0; i < nl[k]; i++) {
      bool seen = false;
      for (int j = 0; j < na; j++) seen = seen || all[j] == labs[k][i];
      if (!seen) {
        if (na >= MAXD) return imp_error(im, "more than %d distinct labels are not supported", MAXD);
        all[na++] = labs[k][i];
      }
    }
  for (int i = 0; i < no; i++) {
    bool found = false;
    for (int k = 0; k < nin; k++)
      for (int j = 0; j < nl[k]; j++) found = found || labs[k][j] == out[i];
    if (!found) return imp_error(im, "output label '%c' is in no operand", out[i] < ELL ? (char)out[i] : '.');
  }
  GNode *acc = NULL;
  for (int k = 0; k < nin; k++) {
    GNode *x = ops[k];
    if (!x) return -1;
    int64_t perm[MAXD], shape[MAXD];
    int q = 0;
    for (int j = 0; j < na; j++)
      for (int i = 0; i < nl[k]; i++)
        if (labs[k][i] == all[j]) perm[q++] = i;
    x = imp_transpose(im, x, nl[k], perm);
    if (!x) return -1;
    q = 0;
    for (int j = 0; j < na; j++) {
      bool has = false;
      for (int i = 0; i < nl[k]; i++) has = has || labs[k][i] == all[j];
      shape[j] = has ? x->type.shape[q++] : 1;
    }
    if (na != nl[k]) x = imp_reshape(im, x, na, shape);
    acc = acc ? bin(im, "multiply", acc, x) : x;
  }
  if (na > no) {
    int64_t axes[MAXD];
    for (int j = no; j < na; j++) axes[j - no] = j;
    acc = imp_reduce(im, "sum", acc, na - no, axes, false);
  }
  return set_out(im, 0, acc);
}

/* ---- GatherND and the scatters ---- */

/* Linear index over dims[0..k) of the last axis of idx (int64, negative
 * entries wrapped): sum_t idx[..., t] * stride[t]. */
static GNode *linear_index(Importer *im, GNode *idx, int k, const int64_t *dims) {
  int64_t ks = k, *dd, *st;
  GNode *dc = new_i64(im, 1, &ks, &dd), *sc = new_i64(im, 1, &ks, &st);
  if (!dc || !sc) return NULL;
  int64_t s = 1;
  for (int t = k - 1; t >= 0; t--) {
    dd[t] = dims[t];
    st[t] = s;
    s *= dims[t];
  }
  GNode *i64 = imp_cast(im, idx, DT_I64);
  GNode *w = imp_where(im, bin(im, "less", i64, imp_scalar(im, 0, DT_I64)), bin(im, "add", i64, dc), i64);
  int64_t last = idx->type.ndim - 1;
  return imp_reduce(im, "sum", bin(im, "multiply", w, sc), 1, &last, false);
}

int onnx_h_GatherND(Importer *im) {
  GNode *data = imp_input(im, 0), *idx = imp_input(im, 1);
  if (!data || !idx) return imp_error(im, "needs data and indices");
  int r = data->type.ndim, q = idx->type.ndim;
  int64_t b = onnx_attr_int(N(im), "batch_dims", 0);
  if (q < 1) return imp_error(im, "indices must have rank >= 1");
  int64_t k = idx->type.shape[q - 1];
  if (b < 0 || b + k > r || b >= q) return imp_error(im, "batch_dims %lld and index depth %lld do not fit data of rank %d", (long long)b, (long long)k, r);
  int64_t B = numel_of((int)b, data->type.shape), P = numel_of((int)k, data->type.shape + b),
          R = numel_of(r - (int)(b + k), data->type.shape + b + k);
  int64_t s2[2] = {B * P, R};
  GNode *d2 = imp_reshape(im, data, 2, s2);
  GNode *lin = linear_index(im, idx, (int)k, data->type.shape + b);
  if (b > 0 && lin) {
    int64_t bs[MAXD], *bd;
    for (int i = 0; i < q - 1; i++) bs[i] = i < b ? idx->type.shape[i] : 1;
    GNode *boff = new_i64(im, q - 1, bs, &bd);
    if (!boff) return -1;
    for (int64_t i = 0; i < B; i++) bd[i] = i * P;
    lin = bin(im, "add", lin, boff);
  }
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 0);
  GNode *args[2] = {d2, lin};
  GNode *y = imp_call(im, "take", 2, args, a);
  int64_t os[MAXD];
  int no = 0;
  for (int i = 0; i < q - 1; i++) os[no++] = idx->type.shape[i];
  for (int i = (int)(b + k); i < r; i++) os[no++] = data->type.shape[i];
  if (no > MAXD) return imp_error(im, "result rank too large");
  return set_out(im, 0, imp_reshape(im, y, no, os));
}

static int reduction_kind(Importer *im, int *kind) {
  const char *red = onnx_attr_string(N(im), "reduction", "none");
  *kind = !strcmp(red, "none") ? 0 : !strcmp(red, "add") ? 1 : !strcmp(red, "mul") ? 2 : -1;
  if (*kind < 0) return imp_error(im, "reduction '%s' is not supported (none, add, mul)", red);
  return 0;
}

/* out[p, :] from updates u[n, :] with one-hot m[n, p] (n over axis 0 of
 * both): none: u where hit else base; add: base + sum; mul: base * prod. */
static GNode *scatter_onehot(Importer *im, GNode *base, GNode *m3, GNode *u3, int red, int axis) {
  int64_t ax = axis;
  if (red == 2) {
    GNode *prod = imp_reduce(im, "prod", imp_where(im, m3, u3, imp_scalar_like(im, 1, u3)), 1, &ax, false);
    return bin(im, "multiply", base, prod);
  }
  GNode *sum = imp_reduce(im, "sum", imp_where(im, m3, u3, imp_scalar_like(im, 0, u3)), 1, &ax, false);
  if (red == 1) return bin(im, "add", base, sum);
  GNode *hits = imp_reduce(im, "sum", imp_cast(im, m3, DT_I32), 1, &ax, false);
  return imp_where(im, bin(im, "greater", hits, imp_scalar(im, 0, DT_I32)), sum, base);
}

/* ScatterElements (and the older Scatter). */
int onnx_h_ScatterElements(Importer *im) {
  GNode *data = imp_input(im, 0), *idx = imp_input(im, 1), *upd = imp_input(im, 2);
  if (!data || !idx || !upd) return imp_error(im, "needs data, indices and updates");
  int red, r = data->type.ndim, ax;
  if (reduction_kind(im, &red) || norm_ax(im, onnx_attr_int(N(im), "axis", 0), r, &ax)) return -1;
  if (idx->type.ndim != r || upd->type.ndim != r) return imp_error(im, "indices and updates must have the data's rank %d", r);
  if (r + 1 > MAXD) return imp_error(im, "data rank %d is too large", r);
  for (int i = 0; i < r; i++)
    if (idx->type.shape[i] > data->type.shape[i] || upd->type.shape[i] != idx->type.shape[i])
      return imp_error(im, "indices %s and updates %s must match and fit in data %s", ttype_str(&idx->type),
                       ttype_str(&upd->type), ttype_str(&data->type));
  int64_t dim = data->type.shape[ax];
  GNode *i64 = imp_cast(im, idx, DT_I64);
  GNode *w = imp_where(im, bin(im, "less", i64, imp_scalar(im, 0, DT_I64)), bin(im, "add", i64, imp_scalar(im, (double)dim, DT_I64)), i64);
  GAttrs oa = gattrs_new();
  ga_int(&oa, "depth", dim);
  ga_int(&oa, "axis", ax + 1);
  ga_str(&oa, "dtype", "bool");
  GNode *m = w ? imp_call(im, "one_hot", 1, &w, oa) : NULL;
  GNode *ue = imp_expand_dims(im, upd, ax + 1);
  /* reduce over the indices' axis: [.., dim at ax, ..] with the indices'
   * other dims; pad those up to the data's */
  int64_t pads[2 * MAXD];
  bool pad = false;
  for (int i = 0; i < r; i++) {
    pads[i] = 0;
    pads[r + i] = i == ax ? 0 : data->type.shape[i] - idx->type.shape[i];
    pad = pad || pads[r + i] != 0;
  }
  GNode *out;
  if (!pad) {
    out = scatter_onehot(im, data, m, ue, red, ax);
  } else {
    /* scatter into a base of the indices' extent, then pad with the
     * identity of the reduction (or a hit mask for none) */
    int64_t ax64 = ax;
    GNode *contrib = red == 2 ? imp_reduce(im, "prod", imp_where(im, m, ue, imp_scalar_like(im, 1, ue)), 1, &ax64, false)
                              : imp_reduce(im, "sum", imp_where(im, m, ue, imp_scalar_like(im, 0, ue)), 1, &ax64, false);
    GAttrs pa = gattrs_new();
    ga_ints(&pa, "pads", 2 * r, pads);
    ga_str(&pa, "pad_mode", "constant");
    ga_float(&pa, "pad_value", red == 2 ? 1 : 0);
    GNode *cp = contrib ? imp_call(im, "nn.pad", 1, &contrib, pa) : NULL;
    if (red == 1) out = bin(im, "add", data, cp);
    else if (red == 2) out = bin(im, "multiply", data, cp);
    else {
      GNode *hits = imp_reduce(im, "sum", imp_cast(im, m, DT_I32), 1, &ax64, false);
      GAttrs ha = gattrs_new();
      ga_ints(&ha, "pads", 2 * r, pads);
      ga_str(&ha, "pad_mode", "constant");
      ga_float(&ha, "pad_value", 0);
      GNode *hp = hits ? imp_call(im, "nn.pad", 1, &hits, ha) : NULL;
      out = imp_where(im, bin(im, "greater", hp, imp_scalar(im, 0, DT_I32)), cp, data);
    }
  }
  return set_out(im, 0, out);
}

int onnx_h_ScatterND(Importer *im) {
  GNode *data = imp_input(im, 0), *idx = imp_input(im, 1), *upd = imp_input(im, 2);
  if (!data || !idx || !upd) return imp_error(im, "needs data, indices and updates");
  int red, r = data->type.ndim, q = idx->type.ndim;
  if (reduction_kind(im, &red)) return -1;
  if (q < 1) return imp_error(im, "indices must have rank >= 1");
  int64_t k = idx->type.shape[q - 1];
  if (k > r) return imp_error(im, "index depth %lld exceeds the data's rank %d", (long long)k, r);
  int64_t P = numel_of((int)k, data->type.shape), R = numel_of(r - (int)k, data->type.shape + k),
          Nu = numel_of(q - 1, idx->type.shape);
  if (ttype_numel(&upd->type) != Nu * R) return imp_error(im, "updates %s do not match indices %s", ttype_str(&upd->type), ttype_str(&idx->type));
  GNode *lin = imp_reshape(im, linear_index(im, idx, (int)k, data->type.shape), 1, &Nu);
  GAttrs oa = gattrs_new();
  ga_int(&oa, "depth", P);
  ga_int(&oa, "axis", 1);
  ga_str(&oa, "dtype", "bool");
  GNode *m = lin ? imp_call(im, "one_hot", 1, &lin, oa) : NULL;
  int64_t m3s[3] = {Nu, P, 1}, u3s[3] = {Nu, 1, R}, d2s[2] = {P, R};
  GNode *out = scatter_onehot(im, imp_reshape(im, data, 2, d2s), imp_reshape(im, m, 3, m3s), imp_reshape(im, upd, 3, u3s), red, 0);
  return set_out(im, 0, imp_reshape(im, out, r, data->type.shape));
}

int onnx_h_MaxUnpool(Importer *im) {
  GNode *x = imp_input(im, 0), *idx = imp_input(im, 1);
  if (!x || !idx) return imp_error(im, "needs X and I");
  int nd = x->type.ndim;
  if (nd < 3) return imp_error(im, "X has rank %d, expected [N, C, spatial...]", nd);
  /* the indices address the unpooled shape the attributes give; an
   * output_shape larger than that pads it at the end (as ONNX's
   * reference does) */
  int64_t os[MAXD], want[MAXD];
  int nk, ns, np;
  const int64_t *ks = onnx_attr_ints(N(im), "kernel_shape", &nk), *st = onnx_attr_ints(N(im), "strides", &ns),
                *pd = onnx_attr_ints(N(im), "pads", &np);
  if (!ks || nk != nd - 2) return imp_error(im, "kernel_shape must give %d values", nd - 2);
  os[0] = x->type.shape[0], os[1] = x->type.shape[1];
  for (int i = 0; i < nd - 2; i++) {
    int64_t s = st && ns == nd - 2 ? st[i] : 1, pb = pd && np == 2 * (nd - 2) ? pd[i] : 0,
            pe = pd && np == 2 * (nd - 2) ? pd[nd - 2 + i] : 0;
    os[2 + i] = (x->type.shape[2 + i] - 1) * s + ks[i] - pb - pe;
  }
  memcpy(want, os, sizeof os);
  if (imp_input(im, 2)) {
    int n = imp_const_input_ints(im, 2, want, MAXD);
    if (n < 0) return -1;
    if (n != nd) return imp_error(im, "output_shape has %d values, expected %d", n, nd);
    for (int i = 0; i < nd; i++)
      if (want[i] < os[i] || (i < 2 && want[i] != os[i]))
        return imp_error(im, "output_shape dimension %d is %lld, the unpooled size is %lld", i, (long long)want[i], (long long)os[i]);
  }
  int64_t P = numel_of(nd, os), Nu = ttype_numel(&x->type);
  GNode *lin = imp_reshape(im, imp_cast(im, idx, DT_I64), 1, &Nu);
  GAttrs oa = gattrs_new();
  ga_int(&oa, "depth", P);
  ga_int(&oa, "axis", 1);
  ga_str(&oa, "dtype", "bool");
  GNode *m = lin ? imp_call(im, "one_hot", 1, &lin, oa) : NULL;
  int64_t us[2] = {Nu, 1}, a0 = 0;
  GNode *sum = imp_reduce(im, "sum", imp_where(im, m, imp_reshape(im, x, 2, us), imp_scalar_like(im, 0, x)), 1, &a0, false);
  GNode *y = imp_reshape(im, sum, nd, os);
  if (memcmp(want, os, sizeof(int64_t) * (size_t)nd)) {
    int64_t pads[2 * MAXD];
    for (int i = 0; i < nd; i++) pads[i] = 0, pads[nd + i] = want[i] - os[i];
    GAttrs pa = gattrs_new();
    ga_ints(&pa, "pads", 2 * nd, pads);
    ga_str(&pa, "pad_mode", "constant");
    ga_float(&pa, "pad_value", 0);
    y = y ? imp_call(im, "nn.pad", 1, &y, pa) : NULL;
  }
  return set_out(im, 0, y);
}

/* ---- RNN, GRU, LSTM: unrolled over the (static) sequence ---- */

static GNode *slice_axis(Importer *im, GNode *x, int axis, int64_t b, int64_t e) {
  if (!x) return NULL;
  GAttrs a = gattrs_new();
  int64_t ax = axis, st = 1;
  ga_ints(&a, "begin", 1, &b);
  ga_ints(&a, "end", 1, &e);
  ga_ints(&a, "strides", 1, &st);
  ga_ints(&a, "axes", 1, &ax);
  return imp_call(im, "strided_slice", 1, &x, a);
}

/* x[i] of a tensor's first axis, that axis dropped. */
static GNode *index0(Importer *im, GNode *x, int64_t i) { return imp_squeeze(im, slice_axis(im, x, 0, i, i + 1), 0); }

typedef struct Act {
  const char *name;
  double alpha, beta;
} Act;

static GNode *activate(Importer *im, const Act *a, GNode *x) {
  if (!x) return NULL;
  const char *n = a->name;
  if (!strcmp(n, "Sigmoid")) return un(im, "sigmoid", x);
  if (!strcmp(n, "Tanh")) return un(im, "tanh", x);
  if (!strcmp(n, "Relu")) return un(im, "nn.relu", x);
  if (!strcmp(n, "Softsign")) return un(im, "nn.softsign", x);
  if (!strcmp(n, "Softplus")) return un(im, "nn.softplus", x);
  GAttrs ga = gattrs_new();
  if (!strcmp(n, "LeakyRelu") || !strcmp(n, "Elu") || !strcmp(n, "ThresholdedRelu")) {
    double dflt = !strcmp(n, "LeakyRelu") ? 0.01 : 1.0;
    ga_float(&ga, "alpha", isnan(a->alpha) ? dflt : a->alpha);
    return imp_call(im, !strcmp(n, "LeakyRelu") ? "nn.leaky_relu" : !strcmp(n, "Elu") ? "nn.elu" : "nn.thresholded_relu", 1, &x, ga);
  }
  if (!strcmp(n, "HardSigmoid")) {
    ga_float(&ga, "alpha", isnan(a->alpha) ? 0.2 : a->alpha);
    ga_float(&ga, "beta", isnan(a->beta) ? 0.5 : a->beta);
    return imp_call(im, "nn.hard_sigmoid", 1, &x, ga);
  }
  if (!strcmp(n, "Affine"))
    return bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, isnan(a->alpha) ? 1 : a->alpha, x)),
               imp_scalar_like(im, isnan(a->beta) ? 0 : a->beta, x));
  if (!strcmp(n, "ScaledTanh"))
    return bin(im, "multiply", un(im, "tanh", bin(im, "multiply", x, imp_scalar_like(im, isnan(a->beta) ? 1 : a->beta, x))),
               imp_scalar_like(im, isnan(a->alpha) ? 1 : a->alpha, x));
  return imp_error(im, "activation '%s' is not supported", n), NULL;
}

static GNode *dense(Importer *im, GNode *x, GNode *w) { return bin(im, "nn.dense", x, w); }

static GNode *clip_to(Importer *im, GNode *x, double t) {
  if (!x) return NULL;
  GAttrs a = gattrs_new();
  ga_float(&a, "a_min", -t);
  ga_float(&a, "a_max", t);
  return imp_call(im, "clip", 1, &x, a);
}

/* kind: 0 RNN, 1 GRU, 2 LSTM */
static int recurrent(Importer *im, int kind) {
  static const int ngates[3] = {1, 3, 4};
  static const int nacts[3] = {1, 2, 3};
  static const char *dacts[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  int G = ngates[kind];
  GNode *X = imp_input(im, 0), *W = imp_input(im, 1), *R = imp_input(im, 2), *B = imp_input(im, 3),
        *h0 = imp_input(im, 5), *c0 = kind == 2 ? imp_input(im, 6) : NULL, *P = kind == 2 ? imp_input(im, 7) : NULL;
  if (!X || !W || !R) return imp_error(im, "needs X, W and R");
  if (X->type.ndim != 3 || W->type.ndim != 3 || R->type.ndim != 3)
    return imp_error(im, "X, W and R must have rank 3, got %s, %s, %s", ttype_str(&X->type), ttype_str(&W->type), ttype_str(&R->type));
  const char *dir = onnx_attr_string(N(im), "direction", "forward");
  int ndir = !strcmp(dir, "bidirectional") ? 2 : 1;
  bool rev = !strcmp(dir, "reverse");
  if (!rev && ndir == 1 && strcmp(dir, "forward")) return imp_error(im, "direction '%s' is not supported", dir);
  int64_t layout = onnx_attr_int(N(im), "layout", 0);
  if (layout) {
    int64_t perm[3] = {1, 0, 2};
    X = imp_transpose(im, X, 3, perm);
    if (!X) return -1;
  }
  int64_t T = X->type.shape[0], batch = X->type.shape[1], H = R->type.shape[2];
  if (onnx_attr_has(N(im), "hidden_size") && onnx_attr_int(N(im), "hidden_size", 0) != H)
    return imp_error(im, "hidden_size %lld differs from R's %lld", (long long)onnx_attr_int(N(im), "hidden_size", 0), (long long)H);
  if (W->type.shape[0] != ndir || W->type.shape[1] != G * H) return imp_error(im, "W has shape %s for %d direction(s) and hidden size %lld", ttype_str(&W->type), ndir, (long long)H);
  if (kind == 2 && onnx_attr_int(N(im), "input_forget", 0)) return imp_error(im, "input_forget = 1 is not supported");
  if (imp_input(im, 4)) {
    GNode *sl = imp_const_input(im, 4);
    if (!sl) return -1;
    for (int64_t b = 0; b < ttype_numel(&sl->type); b++)
      if ((int64_t)imp_const_at(sl, b) != T)
        return imp_error(im, "sequence_lens shorter than the sequence (%lld) are not supported", (long long)T);
  }
  bool lbr = kind == 1 && onnx_attr_int(N(im), "linear_before_reset", 0) != 0;
  double clip = onnx_attr_float(N(im), "clip", 0);
  bool has_clip = onnx_attr_has(N(im), "clip");
  /* activations: per direction, nacts each */
  Act acts[2][3];
  int na, nal, nbe;
  const char **an = onnx_attr_strings(N(im), "activations", &na);
  const float *al = onnx_attr_floats(N(im), "activation_alpha", &nal), *be = onnx_attr_floats(N(im), "activation_beta", &nbe);
  if (an && na != nacts[kind] * ndir) return imp_error(im, "activations has %d entries, expected %d", na, nacts[kind] * ndir);
  for (int d = 0; d < ndir; d++)
    for (int k = 0; k < nacts[kind]; k++) {
      int i = d * nacts[kind] + k;
      acts[d][k].name = an ? an[i] : dacts[kind][k];
      acts[d][k].alpha = al && i < nal ? al[i] : NAN;
      acts[d][k].beta = be && i < nbe ? be[i] : NAN;
    }
  GNode *ys[2] = {NULL, NULL}, *hs[2] = {NULL, NULL}, *cs[2] = {NULL, NULL};
  int64_t hshape[2] = {batch, H};
  for (int d = 0; d < ndir; d++) {
    bool back = rev || d == 1;
    GNode *Wd = index0(im, W, d), *Rd = index0(im, R, d), *wb = NULL, *rb = NULL;
    if (B) {
      GNode *Bd = index0(im, B, d);
      wb = slice_axis(im, Bd, 0, 0, G * H);
      rb = slice_axis(im, Bd, 0, G * H, 2 * G * H);
    }
    GNode *h = h0 ? index0(im, h0, d) : imp_new_const(im, X->type.dtype, 2, hshape, NULL);
    GNode *c = kind == 2 ? (c0 ? index0(im, c0, d) : imp_new_const(im, X->type.dtype, 2, hshape, NULL)) : NULL;
    GNode *pi = NULL, *po = NULL, *pf = NULL;
    if (P) {
      GNode *Pd = index0(im, P, d);
      pi = slice_axis(im, Pd, 0, 0, H), po = slice_axis(im, Pd, 0, H, 2 * H), pf = slice_axis(im, Pd, 0, 2 * H, 3 * H);
    }
    /* GRU: the h gate's recurrence is applied apart from z and r */
    GNode *Rzr = kind == 1 ? slice_axis(im, Rd, 0, 0, 2 * H) : Rd, *Rh = kind == 1 ? slice_axis(im, Rd, 0, 2 * H, 3 * H) : NULL;
    GNode *rbzr = kind == 1 && rb ? slice_axis(im, rb, 0, 0, 2 * H) : rb, *rbh = kind == 1 && rb ? slice_axis(im, rb, 0, 2 * H, 3 * H) : NULL;
    GNode **steps = KNEWN(GNode *, T + 1);
    for (int64_t s = 0; s < T; s++) {
      int64_t t = back ? T - 1 - s : s;
      GNode *xw = dense(im, index0(im, X, t), Wd);
      if (wb) xw = bin(im, "add", xw, wb);
      GNode *hr = dense(im, h, Rzr);
      if (rbzr) hr = bin(im, "add", hr, rbzr);
#define CLIP(v) (has_clip ? clip_to(im, v, clip) : (v))
      if (kind == 0) {
        h = activate(im, &acts[d][0], CLIP(bin(im, "add", xw, hr)));
      } else if (kind == 1) {
        GNode *zr = bin(im, "add", slice_axis(im, xw, 1, 0, 2 * H), hr);
        GNode *z = activate(im, &acts[d][0], CLIP(slice_axis(im, zr, 1, 0, H)));
        GNode *r = activate(im, &acts[d][0], CLIP(slice_axis(im, zr, 1, H, 2 * H)));
        GNode *xh = slice_axis(im, xw, 1, 2 * H, 3 * H), *rec;
        if (lbr) {
          rec = dense(im, h, Rh);
          if (rbh) rec = bin(im, "add", rec, rbh);
          rec = bin(im, "multiply", r, rec);
        } else {
          rec = dense(im, bin(im, "multiply", r, h), Rh);
          if (rbh) rec = bin(im, "add", rec, rbh);
        }
        GNode *hh = activate(im, &acts[d][1], CLIP(bin(im, "add", xh, rec)));
        /* (1 - z) * hh + z * h = hh + z * (h - hh) */
        h = bin(im, "add", hh, bin(im, "multiply", z, bin(im, "subtract", h, hh)));
      } else {
        GNode *g = bin(im, "add", xw, hr);
        GNode *gi = slice_axis(im, g, 1, 0, H), *go = slice_axis(im, g, 1, H, 2 * H), *gf = slice_axis(im, g, 1, 2 * H, 3 * H),
              *gc = slice_axis(im, g, 1, 3 * H, 4 * H);
        if (pi) gi = bin(im, "add", gi, bin(im, "multiply", pi, c));
        if (pf) gf = bin(im, "add", gf, bin(im, "multiply", pf, c));
        GNode *i = activate(im, &acts[d][0], CLIP(gi)), *f = activate(im, &acts[d][0], CLIP(gf));
        GNode *ct = activate(im, &acts[d][1], CLIP(gc));
        c = bin(im, "add", bin(im, "multiply", f, c), bin(im, "multiply", i, ct));
        if (po) go = bin(im, "add", go, bin(im, "multiply", po, c));
        GNode *o = activate(im, &acts[d][0], CLIP(go));
        h = bin(im, "multiply", o, activate(im, &acts[d][2], c));
      }
#undef CLIP
      if (!h) return -1;
      steps[t] = imp_expand_dims(im, h, 0); /* [1, batch, H] */
    }
    GAttrs ca = gattrs_new();
    ga_int(&ca, "axis", 0);
    ys[d] = T > 0 ? imp_call(im, "concatenate", (int)T, steps, ca) : NULL; /* [T, batch, H] */
    hs[d] = imp_expand_dims(im, h, 0);
    cs[d] = kind == 2 ? imp_expand_dims(im, c, 0) : NULL;
  }
  GAttrs a1 = gattrs_new(), a0 = gattrs_new();
  ga_int(&a1, "axis", 1);
  ga_int(&a0, "axis", 0);
  GNode *Y = NULL, *Yh, *Yc = NULL;
  for (int d = 0; d < ndir; d++) ys[d] = imp_expand_dims(im, ys[d], 1); /* [T, 1, batch, H] */
  Y = ndir == 2 ? imp_call(im, "concatenate", 2, ys, a1) : ys[0];
  Yh = ndir == 2 ? imp_call(im, "concatenate", 2, hs, a0) : hs[0];
  if (kind == 2) Yc = ndir == 2 ? imp_call(im, "concatenate", 2, cs, a0) : cs[0];
  if (layout) { /* [batch, T, dirs, H] and [batch, dirs, H] */
    int64_t p4[4] = {2, 0, 1, 3}, p3[3] = {1, 0, 2};
    Y = imp_transpose(im, Y, 4, p4);
    Yh = imp_transpose(im, Yh, 3, p3);
    if (Yc) Yc = imp_transpose(im, Yc, 3, p3);
  }
  if (want_output(im, 0) && set_out(im, 0, Y)) return -1;
  if (want_output(im, 1) && set_out(im, 1, Yh)) return -1;
  if (kind == 2 && want_output(im, 2) && set_out(im, 2, Yc)) return -1;
  return 0;
}

int onnx_h_RNN(Importer *im) { return recurrent(im, 0); }
int onnx_h_GRU(Importer *im) { return recurrent(im, 1); }
int onnx_h_LSTM(Importer *im) { return recurrent(im, 2); }

/* ---- quantization: integer arithmetic in int32, requantization in
 * float32 with round-half-to-even and saturation ---- */

/* A per-axis parameter (scale or zero point, [C] or one value) shaped to
 * broadcast along axis of a rank-r tensor. */
static GNode *along_axis(Importer *im, GNode *v, int axis, int r) {
  if (!v || ttype_numel(&v->type) == 1 || v->type.ndim != 1) return v;
  int64_t s[MAXD];
  int n = 0;
  s[n++] = v->type.shape[0];
  for (int i = axis + 1; i < r; i++) s[n++] = 1;
  return imp_reshape(im, v, n, s);
}

/* saturate(round(x) + zp) as t (x float32, zp NULL for 0). */
static GNode *quantize_to(Importer *im, GNode *x, GNode *zp, DType t) {
  if (!x) return NULL;
  if (t.code != kDLInt && t.code != kDLUInt) return imp_error(im, "quantized type %s is not supported", dt_str(t)), NULL;
  if (t.bits != 8 && t.bits != 16 && t.bits != 32) return imp_error(im, "quantized type %s is not supported", dt_str(t)), NULL;
  GNode *q = un(im, "round", x);
  if (zp) q = bin(im, "add", q, imp_cast(im, zp, DT_F32));
  GAttrs a = gattrs_new();
  ga_float(&a, "a_min", t.code == kDLInt ? (double)dt_int_min(t) : 0);
  ga_float(&a, "a_max", (double)dt_int_max(t));
  q = q ? imp_call(im, "clip", 1, &q, a) : NULL;
  return imp_cast(im, q, t);
}

/* The axis of a per-axis scale (only checked when the scale has several
 * values: a per-tensor scale ignores it). */
static int quant_axis(Importer *im, GNode *x, GNode *scale, int *axis) {
  *axis = 0;
  if (ttype_numel(&scale->type) == 1) return 0;
  return norm_ax(im, onnx_attr_int(N(im), "axis", 1), x->type.ndim, axis);
}

int onnx_h_QuantizeLinear(Importer *im) {
  GNode *x = imp_input(im, 0), *scale = imp_input(im, 1), *zp = imp_input(im, 2);
  if (!x || !scale) return imp_error(im, "needs x and y_scale");
  int ax;
  if (quant_axis(im, x, scale, &ax)) return -1;
  int r = x->type.ndim;
  GNode *v = bin(im, "divide", imp_cast(im, x, DT_F32), along_axis(im, imp_cast(im, scale, DT_F32), ax, r));
  return set_out(im, 0, quantize_to(im, v, along_axis(im, zp, ax, r), zp ? zp->type.dtype : DT_U8));
}

int onnx_h_DequantizeLinear(Importer *im) {
  GNode *x = imp_input(im, 0), *scale = imp_input(im, 1), *zp = imp_input(im, 2);
  if (!x || !scale) return imp_error(im, "needs x and x_scale");
  int ax;
  if (quant_axis(im, x, scale, &ax)) return -1;
  int r = x->type.ndim;
  GNode *v = imp_cast(im, x, DT_F32);
  if (zp) v = bin(im, "subtract", v, along_axis(im, imp_cast(im, zp, DT_F32), ax, r));
  return set_out(im, 0, bin(im, "multiply", v, along_axis(im, imp_cast(im, scale, DT_F32), ax, r)));
}

int onnx_h_DynamicQuantizeLinear(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs x");
  if (!dt_eq(x->type.dtype, DT_F32)) return imp_error(im, "x must be float32, got %s", dt_str(x->type.dtype));
  GNode *zero = imp_scalar(im, 0, DT_F32);
  GNode *lo = bin(im, "minimum", imp_reduce(im, "min", x, 0, NULL, false), zero);
  GNode *hi = bin(im, "maximum", imp_reduce(im, "max", x, 0, NULL, false), zero);
  GNode *scale = bin(im, "divide", bin(im, "subtract", hi, lo), imp_scalar(im, 255, DT_F32));
  GNode *zp = quantize_to(im, bin(im, "divide", un(im, "negative", lo), scale), NULL, DT_U8);
  GNode *y = quantize_to(im, bin(im, "divide", x, scale), zp, DT_U8);
  if (set_out(im, 0, y)) return -1;
  if (want_output(im, 1) && set_out(im, 1, scale)) return -1;
  if (want_output(im, 2) && set_out(im, 2, zp)) return -1;
  return 0;
}

/* x - zp in int32; zp per row (axis 0 of a matrix) or per output channel
 * when it has that many values. */
static GNode *centered(Importer *im, GNode *x, GNode *zp, int axis) {
  GNode *v = imp_cast(im, x, DT_I32);
  if (!zp) return v;
  return bin(im, "subtract", v, along_axis(im, imp_cast(im, zp, DT_I32), axis, x->type.ndim));
}

static GNode *matmul_int(Importer *im, GNode *a, GNode *azp, GNode *b, GNode *bzp) {
  if (!a || !b) return imp_error(im, "needs A and B"), NULL;
  /* a's zero point is per row (axis -2), b's per column (the last axis,
   * which broadcasting already lines up) */
  GNode *ac = centered(im, a, azp, a->type.ndim >= 2 ? a->type.ndim - 2 : 0);
  GNode *bc = bin(im, "subtract", imp_cast(im, b, DT_I32), bzp ? imp_cast(im, bzp, DT_I32) : imp_scalar(im, 0, DT_I32));
  return bin(im, "nn.matmul", ac, bc);
}

int onnx_h_MatMulInteger(Importer *im) {
  return set_out(im, 0, matmul_int(im, imp_input(im, 0), imp_input(im, 2), imp_input(im, 1), imp_input(im, 3)));
}

int onnx_h_ConvInteger(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 1);
  if (!x || !w) return imp_error(im, "needs x and w");
  return set_out(im, 0, onnx_conv(im, centered(im, x, imp_input(im, 2), 1), centered(im, w, imp_input(im, 3), 0), NULL));
}

/* saturate(round(acc * (sa * sb / sy)) + zy), the multiplier along axis
 * (per output channel) when sb has several values. */
static GNode *requantize(Importer *im, GNode *acc, GNode *sa, GNode *sb, GNode *sy, GNode *zy, int axis) {
  if (!acc || !sa || !sb || !sy) return imp_error(im, "missing a scale"), NULL;
  int r = acc->type.ndim;
  GNode *m = bin(im, "divide", bin(im, "multiply", imp_cast(im, sa, DT_F32), along_axis(im, imp_cast(im, sb, DT_F32), axis, r)),
                 imp_cast(im, sy, DT_F32));
  GNode *v = bin(im, "multiply", imp_cast(im, acc, DT_F32), m);
  return quantize_to(im, v, zy, zy ? zy->type.dtype : DT_U8);
}

int onnx_h_QLinearMatMul(Importer *im) {
  GNode *a = imp_input(im, 0), *b = imp_input(im, 3);
  GNode *acc = matmul_int(im, a, imp_input(im, 2), b, imp_input(im, 5));
  int last = acc ? acc->type.ndim - 1 : 0;
  return set_out(im, 0, requantize(im, acc, imp_input(im, 1), imp_input(im, 4), imp_input(im, 6), imp_input(im, 7), last));
}

int onnx_h_QLinearConv(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 3);
  if (!x || !w) return imp_error(im, "needs x and w");
  GNode *acc = onnx_conv(im, centered(im, x, imp_input(im, 2), 1), centered(im, w, imp_input(im, 5), 0), imp_input(im, 8));
  return set_out(im, 0, requantize(im, acc, imp_input(im, 1), imp_input(im, 4), imp_input(im, 6), imp_input(im, 7), 1));
}

/* ---- control flow with a static schedule: If on a constant condition
 * inlines one branch; Loop and Scan are unrolled (a Loop needs a constant
 * trip count or a condition that folds to a constant each iteration) ---- */

#define MAX_UNROLL 4096

static GNode *subgraph_output(Importer *im, const OnnxGraph *g, int k) {
  GNode *v = imp_value(im, g->outputs[k].name);
  if (!v) imp_error(im, "subgraph output '%s' is not produced", g->outputs[k].name);
  return v;
}

int onnx_h_If(Importer *im) {
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
    ImpSeq *q = imp_value(im, g->outputs[k].name) ? NULL : imp_value_seq(im, g->outputs[k].name);
    if (q ? imp_set_output_seq(im, k, q) : set_out(im, k, subgraph_output(im, g, k))) return -1;
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

int onnx_h_Loop(Importer *im) {
  const OnnxGraph *body = onnx_attr_graph(N(im), "body");
  if (!body) return imp_error(im, "missing attribute 'body'");
  int nin = imp_ninputs(im), ncarry = nin - 2;
  if (ncarry < 0 || body->ninputs != ncarry + 2 || body->noutputs < ncarry + 1)
    return imp_error(im, "the body's inputs and outputs do not match the node's");
  int nscan = body->noutputs - 1 - ncarry;
  int64_t trips = -1;
  if (imp_input(im, 0)) {
    double m;
    if (const_scalar(im, 0, &m)) return -1;
    trips = (int64_t)m;
  }
  bool cond = true;
  if (imp_input(im, 1)) {
    double cv;
    if (const_scalar(im, 1, &cv)) return -1;
    cond = cv != 0;
  }
  if (trips < 0 && !imp_input(im, 1)) return imp_error(im, "a loop with neither a trip count nor a condition never ends");
  GNode **carry = KNEWN(GNode *, ncarry + 1);
  for (int i = 0; i < ncarry; i++)
    if (!(carry[i] = imp_input(im, 2 + i))) return imp_error(im, "loop-carried input %d is missing", i);
  AVec *scans = KNEWN(AVec, nscan + 1);
  int64_t it = 0;
  for (; cond && (trips < 0 || it < trips); it++) {
    if (it >= MAX_UNROLL) return imp_error(im, "more than %d iterations are not supported (the loop is unrolled)", MAX_UNROLL);
    imp_bind_value(im, body->inputs[0].name, imp_scalar(im, (double)it, DT_I64));
    imp_bind_value(im, body->inputs[1].name, imp_scalar(im, 1, DT_BOOL));
    for (int i = 0; i < ncarry; i++) imp_bind_value(im, body->inputs[2 + i].name, carry[i]);
    if (imp_subgraph(im, body)) return -1;
    GNode *co = subgraph_output(im, body, 0);
    if (!co) return -1;
    if (co->kind != GN_CONST || ttype_numel(&co->type) != 1)
      return imp_error(im, "the loop condition must be known at compile time (the loop is unrolled)");
    cond = imp_const_at(co, 0) != 0;
    for (int i = 0; i < ncarry; i++)
      if (!(carry[i] = subgraph_output(im, body, 1 + i))) return -1;
    for (int s = 0; s < nscan; s++) {
      GNode *v = subgraph_output(im, body, 1 + ncarry + s);
      if (!v) return -1;
      av_push(&scans[s], v);
    }
  }
  for (int i = 0; i < ncarry; i++)
    if (set_out(im, i, carry[i])) return -1;
  for (int s = 0; s < nscan; s++)
    if (want_output(im, ncarry + s) && set_out(im, ncarry + s, stack(im, scans[s].len, (GNode **)scans[s].data, 0))) return -1;
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
  int64_t M = onnx_attr_int(N(im), "num_scan_inputs", 0);
  bool v8 = imp_opset(im) < 9; /* opset 8: a leading batch axis and sequence_lens */
  int first = v8 ? 1 : 0, nin = imp_ninputs(im) - first, nstate = nin - (int)M;
  int nscan_out = body->noutputs - nstate;
  if (M < 1 || nstate < 0 || body->ninputs != nin || nscan_out < 0)
    return imp_error(im, "the body's inputs and outputs do not match the node's");
  if (v8 && imp_input(im, 0)) return imp_error(im, "sequence_lens is not supported");
  int n;
  const int64_t *in_axes = onnx_attr_ints(N(im), "scan_input_axes", &n);
  if (in_axes && n != M) return imp_error(im, "scan_input_axes has %d values for %lld scan inputs", n, (long long)M);
  const int64_t *in_dirs = onnx_attr_ints(N(im), v8 ? "directions" : "scan_input_directions", &n);
  const int64_t *out_axes = onnx_attr_ints(N(im), "scan_output_axes", &n);
  const int64_t *out_dirs = onnx_attr_ints(N(im), "scan_output_directions", &n);
  GNode **state0 = KNEWN(GNode *, nstate + 1), **xs0 = KNEWN(GNode *, M + 1);
  for (int i = 0; i < nstate; i++)
    if (!(state0[i] = imp_input(im, first + i))) return imp_error(im, "state input %d is missing", i);
  for (int k = 0; k < M; k++)
    if (!(xs0[k] = imp_input(im, first + nstate + k))) return imp_error(im, "scan input %d is missing", k);
  int64_t B = v8 ? xs0[0]->type.shape[0] : 1;
  GNode ***finals = KNEWN(GNode **, B + 1);
  AVec **outs = KNEWN(AVec *, B + 1);
  for (int64_t b = 0; b < B; b++) {
    GNode **state = KNEWN(GNode *, nstate + 1);
    GNode ***xs = KNEWN(GNode **, M + 1);
    int64_t T = -1;
    for (int i = 0; i < nstate; i++) state[i] = v8 ? index0(im, state0[i], b) : state0[i];
    for (int k = 0; k < M; k++) {
      GNode *x = v8 ? index0(im, xs0[k], b) : xs0[k];
      if (!x) return -1;
      int ax;
      if (norm_ax(im, in_axes ? in_axes[k] : 0, x->type.ndim, &ax)) return -1;
      int64_t len = x->type.shape[ax];
      if (T >= 0 && len != T) return imp_error(im, "scan inputs have different lengths %lld and %lld", (long long)T, (long long)len);
      T = len;
      if (T > MAX_UNROLL) return imp_error(im, "more than %d steps are not supported (the scan is unrolled)", MAX_UNROLL);
      bool rev = in_dirs && in_dirs[k];
      xs[k] = KNEWN(GNode *, T + 1);
      for (int64_t t = 0; t < T; t++) {
        int64_t src = rev ? T - 1 - t : t;
        xs[k][t] = imp_squeeze(im, slice_axis(im, x, ax, src, src + 1), ax);
      }
    }
    outs[b] = KNEWN(AVec, nscan_out + 1);
    if (scan_run(im, body, nstate, state, (int)M, xs, T, nscan_out, outs[b])) return -1;
    finals[b] = state;
  }
  for (int i = 0; i < nstate; i++) {
    GNode *v = finals[0][i];
    if (v8) {
      GNode **per = KNEWN(GNode *, B + 1);
      for (int64_t b = 0; b < B; b++) per[b] = finals[b][i];
      v = stack(im, (int)B, per, 0);
    }
    if (set_out(im, i, v)) return -1;
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
      if (out_axes && first_v && norm_ax(im, out_axes[s], first_v->type.ndim + 1, &ax)) return -1;
      per[b] = stack(im, o->len, (GNode **)o->data, ax);
    }
    GNode *v = v8 ? stack(im, (int)B, per, 0) : per[0];
    if (want_output(im, nstate + s) && set_out(im, nstate + s, v)) return -1;
  }
  return 0;
}

/* ---- signal processing: windows and the mel matrix are constants of
 * their (constant) sizes; DFT and STFT are products with constant cosine
 * and sine matrices ---- */

static int output_dtype(Importer *im, DType *t) {
  if (onnx_dtype_from_onnx((int)onnx_attr_int(N(im), "output_datatype", 1), t)) return imp_error(im, "%s", kiln_get_error());
  return 0;
}

/* Hann, Hamming, Blackman: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),
 * N = size (periodic) or size - 1. */
static int window(Importer *im, double a0, double a1, double a2) {
  double size;
  DType t;
  if (const_scalar(im, 0, &size) || output_dtype(im, &t)) return -1;
  int64_t n = (int64_t)size;
  if (n < 0) return imp_error(im, "size %lld is negative", (long long)n);
  double span = onnx_attr_int(N(im), "periodic", 1) ? (double)n : (double)n - 1;
  void *p;
  GNode *c = imp_new_const(im, t, 1, &n, &p);
  if (!c) return -1;
  for (int64_t i = 0; i < n; i++) {
    double x = span > 0 ? (double)i / span : 0;
    imp_array_set(c->value, i, a0 - a1 * cos(2 * M_PI * x) + a2 * cos(4 * M_PI * x));
  }
  return set_out(im, 0, c);
}

int onnx_h_HannWindow(Importer *im) { return window(im, 0.5, 0.5, 0); }
int onnx_h_HammingWindow(Importer *im) { return window(im, 25.0 / 46, 21.0 / 46, 0); }
int onnx_h_BlackmanWindow(Importer *im) { return window(im, 0.42, 0.5, 0.08); }

int onnx_h_MelWeightMatrix(Importer *im) {
  double nmel, dftlen, rate, lo, hi;
  DType t;
  if (const_scalar(im, 0, &nmel) || const_scalar(im, 1, &dftlen) || const_scalar(im, 2, &rate) || const_scalar(im, 3, &lo) ||
      const_scalar(im, 4, &hi) || output_dtype(im, &t))
    return -1;
  int64_t M = (int64_t)nmel, L = (int64_t)dftlen, S = (int64_t)rate, nspec = L / 2 + 1;
  if (M <= 0 || L <= 0 || S <= 0) return imp_error(im, "num_mel_bins, dft_length and sample_rate must be positive");
  int64_t *bins = KNEWN(int64_t, M + 2);
  double lmel = 2595 * log10(1 + lo / 700), hmel = 2595 * log10(1 + hi / 700), step = (hmel - lmel) / (double)(M + 2);
  for (int64_t i = 0; i < M + 2; i++) {
    double f = 700 * (pow(10, ((double)i * step + lmel) / 2595) - 1);
    bins[i] = (int64_t)floor((double)(L + 1) * f / (double)S);
    if (bins[i] < 0 || bins[i] >= nspec + 1) return imp_error(im, "mel bin %lld falls outside the spectrum", (long long)i);
  }
  int64_t shape[2] = {nspec, M};
  void *p;
  GNode *c = imp_new_const(im, t, 2, shape, &p);
  if (!c) return -1;
  for (int64_t i = 0; i < M; i++) {
    int64_t l = bins[i], ce = bins[i + 1], h = bins[i + 2];
    if (ce - l == 0) {
      if (ce < nspec) imp_array_set(c->value, ce * M + i, 1);
    } else {
      for (int64_t j = l; j <= ce && j < nspec; j++) imp_array_set(c->value, j * M + i, (double)(j - l) / (double)(ce - l));
    }
    if (h - ce > 0)
      for (int64_t j = ce; j < h && j < nspec; j++) imp_array_set(c->value, j * M + i, (double)(h - j) / (double)(h - ce));
  }
  return set_out(im, 0, c);
}

/* The DFT of x along axis (x's last axis holds 1 or 2 values: real,
 * imaginary), over L points (x truncated or zero-padded), keeping
 * nout = L or L / 2 + 1 (onesided) frequencies.  Returns [..., nout at
 * axis, ..., 2]. */
static GNode *dft(Importer *im, GNode *x, int axis, int64_t L, bool onesided, bool inverse) {
  if (!x) return NULL;
  int r = x->type.ndim;
  if (r < 2 || (x->type.shape[r - 1] != 1 && x->type.shape[r - 1] != 2))
    return imp_error(im, "input %s must end in an axis of 1 (real) or 2 (complex) values", ttype_str(&x->type)), NULL;
  if (axis < 0 || axis >= r - 1) return imp_error(im, "axis %d must be a signal axis (not the last)", axis), NULL;
  bool cplx = x->type.shape[r - 1] == 2;
  int64_t n = x->type.shape[axis], nout = onesided ? L / 2 + 1 : L;
  if (L <= 0) return imp_error(im, "dft_length %lld is not positive", (long long)L), NULL;
  /* cos and sin matrices [nout, n], scaled for the inverse; samples past L
   * are truncated (zero columns) */
  int64_t ms[2] = {nout, n};
  void *pc, *ps;
  DType t = x->type.dtype;
  GNode *C = imp_new_const(im, t, 2, ms, &pc), *S = imp_new_const(im, t, 2, ms, &ps);
  if (!C || !S) return NULL;
  double scale = inverse ? 1.0 / (double)L : 1.0;
  for (int64_t k = 0; k < nout; k++)
    for (int64_t j = 0; j < n && j < L; j++) {
      double th = 2 * M_PI * (double)((k * j) % L) / (double)L;
      imp_array_set(C->value, k * n + j, cos(th) * scale);
      imp_array_set(S->value, k * n + j, sin(th) * scale);
    }
  /* real and imaginary parts with the signal axis last */
  int64_t perm[MAXD], inv[MAXD];
  int q = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != axis) perm[q++] = i;
  perm[q] = axis;
  for (int i = 0; i < r - 1; i++) inv[perm[i]] = i;
  GNode *xr = imp_transpose(im, imp_squeeze(im, slice_axis(im, x, r - 1, 0, 1), r - 1), r - 1, perm);
  GNode *xi = cplx ? imp_transpose(im, imp_squeeze(im, slice_axis(im, x, r - 1, 1, 2), r - 1), r - 1, perm) : NULL;
  /* forward: (xr + i xi)(cos - i sin); inverse: (xr + i xi)(cos + i sin) */
  GNode *yr = dense(im, xr, C), *yi = un(im, "negative", dense(im, xr, S));
  if (inverse) yi = dense(im, xr, S);
  if (xi) {
    GNode *xic = dense(im, xi, C), *xis = dense(im, xi, S);
    yr = inverse ? bin(im, "subtract", yr, xis) : bin(im, "add", yr, xis);
    yi = bin(im, "add", yi, xic);
  }
  GNode *parts[2] = {imp_expand_dims(im, imp_transpose(im, yr, r - 1, inv), r - 1),
                     imp_expand_dims(im, imp_transpose(im, yi, r - 1, inv), r - 1)};
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", r - 1);
  return imp_call(im, "concatenate", 2, parts, a);
}

int onnx_h_DFT(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int ax;
  if (norm_ax(im, onnx_attr_int(N(im), "axis", 1), x->type.ndim, &ax)) return -1;
  double L = (double)x->type.shape[ax];
  if (imp_input(im, 1) && const_scalar(im, 1, &L)) return -1;
  bool onesided = onnx_attr_int(N(im), "onesided", 0) != 0, inverse = onnx_attr_int(N(im), "inverse", 0) != 0;
  if (onesided && x->type.shape[x->type.ndim - 1] == 2) return imp_error(im, "onesided = 1 needs a real input");
  if (onesided && inverse) return imp_error(im, "onesided = 1 with inverse = 1 is not supported");
  return set_out(im, 0, dft(im, x, ax, (int64_t)L, onesided, inverse));
}

int onnx_h_STFT(Importer *im) {
  GNode *x = imp_input(im, 0), *win = imp_input(im, 2);
  if (!x) return imp_error(im, "needs a signal");
  if (x->type.ndim != 3) return imp_error(im, "signal %s must be [batch, length, 1 or 2]", ttype_str(&x->type));
  double step, flen = -1;
  if (const_scalar(im, 1, &step)) return -1;
  if (imp_input(im, 3) && const_scalar(im, 3, &flen)) return -1;
  if (flen < 0 && !win) return imp_error(im, "needs a window or a frame_length");
  int64_t L = flen >= 0 ? (int64_t)flen : win->type.shape[0], st = (int64_t)step, len = x->type.shape[1];
  if (win && (win->type.ndim != 1 || win->type.shape[0] != L)) return imp_error(im, "window %s does not match frame length %lld", ttype_str(&win->type), (long long)L);
  if (st <= 0 || L <= 0 || L > len) return imp_error(im, "frame_step %lld and frame length %lld do not fit a signal of %lld", (long long)st, (long long)L, (long long)len);
  bool onesided = onnx_attr_int(N(im), "onesided", 1) != 0;
  if (onesided && x->type.shape[2] == 2) return imp_error(im, "onesided = 1 needs a real signal");
  int64_t nf = 1 + (len - L) / st, fs[2] = {nf, L}, *d;
  GNode *idx = new_i64(im, 2, fs, &d);
  if (!idx) return -1;
  for (int64_t f = 0; f < nf; f++)
    for (int64_t j = 0; j < L; j++) d[f * L + j] = f * st + j;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 1);
  GNode *args[2] = {x, idx};
  GNode *frames = imp_call(im, "take", 2, args, a); /* [batch, nf, L, c] */
  if (win) {
    int64_t ws[2] = {L, 1};
    frames = bin(im, "multiply", frames, imp_reshape(im, imp_cast(im, win, x->type.dtype), 2, ws));
  }
  return set_out(im, 0, dft(im, frames, 2, L, onesided, false));
}

/* ---- GridSample (PyTorch's grid_sample): coordinates computed with
 * elementwise ops, samples gathered from the input flattened to
 * [N * H * W, C] ---- */

typedef struct Grid {
  GNode *xf;       /* [N * H * W, C] */
  GNode *batch;    /* [N, 1, 1] int64: n * H * W */
  int64_t H, W;
  DType t;
  int pad;         /* 0 zeros, 1 border, 2 reflection */
  bool align;
} Grid;

static GNode *fscal(Importer *im, double v, const Grid *g) { return imp_scalar(im, v, g->t); }

/* Reflect x into [lo2 / 2, hi2 / 2] (PyTorch's reflect_coordinates). */
static GNode *reflect(Importer *im, const Grid *g, GNode *x, double lo2, double hi2) {
  if (lo2 == hi2) return bin(im, "multiply", x, fscal(im, 0, g));
  double mn = lo2 / 2, span = (hi2 - lo2) / 2;
  GNode *a = un(im, "abs", bin(im, "subtract", x, fscal(im, mn, g)));
  GNode *extra = bin(im, "mod", a, fscal(im, span, g));
  GNode *flips = un(im, "floor", bin(im, "divide", a, fscal(im, span, g)));
  GNode *even = bin(im, "equal", bin(im, "mod", flips, fscal(im, 2, g)), fscal(im, 0, g));
  return imp_where(im, even, bin(im, "add", extra, fscal(im, mn, g)), bin(im, "subtract", fscal(im, span + mn, g), extra));
}

/* Padding applied to a source coordinate along an axis of size n. */
static GNode *pad_coord(Importer *im, const Grid *g, GNode *x, int64_t n) {
  GAttrs a = gattrs_new();
  ga_float(&a, "a_min", 0);
  ga_float(&a, "a_max", (double)(n - 1));
  if (g->pad == 0) return x;
  if (g->pad == 2) x = g->align ? reflect(im, g, x, 0, 2.0 * (double)(n - 1)) : reflect(im, g, x, -1, 2.0 * (double)n - 1);
  return x ? imp_call(im, "clip", 1, &x, a) : NULL;
}

/* Input values at integer coordinates (ix, iy: float tensors holding
 * integers, [N, Ho, Wo]); 0 outside the input.  Returns [N, Ho, Wo, C]. */
static GNode *grid_at(Importer *im, const Grid *g, GNode *ix, GNode *iy) {
  GNode *zero = fscal(im, 0, g);
  GNode *valid = bin(im, "logical_and",
                     bin(im, "logical_and", bin(im, "greater_equal", ix, zero), bin(im, "less", ix, fscal(im, (double)g->W, g))),
                     bin(im, "logical_and", bin(im, "greater_equal", iy, zero), bin(im, "less", iy, fscal(im, (double)g->H, g))));
  GAttrs cx = gattrs_new(), cy = gattrs_new();
  ga_float(&cx, "a_min", 0);
  ga_float(&cx, "a_max", (double)(g->W - 1));
  ga_float(&cy, "a_min", 0);
  ga_float(&cy, "a_max", (double)(g->H - 1));
  GNode *xc = ix ? imp_call(im, "clip", 1, &ix, cx) : NULL, *yc = iy ? imp_call(im, "clip", 1, &iy, cy) : NULL;
  GNode *lin = bin(im, "add", bin(im, "add", imp_cast(im, bin(im, "multiply", yc, fscal(im, (double)g->W, g)), DT_I64), imp_cast(im, xc, DT_I64)),
                   g->batch);
  GAttrs ta = gattrs_new();
  ga_int(&ta, "axis", 0);
  GNode *args[2] = {g->xf, lin};
  GNode *v = imp_call(im, "take", 2, args, ta);
  return imp_where(im, imp_expand_dims(im, valid, 3), v, imp_scalar_like(im, 0, v));
}

static GNode *cubic_w(Importer *im, const Grid *g, GNode *t, int i) {
  const double A = -0.75;
  GNode *one = fscal(im, 1, g);
  GNode *s = i == 0 ? bin(im, "add", t, one) : i == 1 ? t : i == 2 ? bin(im, "subtract", one, t) : bin(im, "subtract", fscal(im, 2, g), t);
  if (i == 0 || i == 3) /* ((A s - 5A) s + 8A) s - 4A */
    return bin(im, "subtract",
               bin(im, "multiply", bin(im, "add", bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", s, fscal(im, A, g)), fscal(im, 5 * A, g)), s), fscal(im, 8 * A, g)), s),
               fscal(im, 4 * A, g));
  /* ((A + 2) s - (A + 3)) s s + 1 */
  return bin(im, "add", bin(im, "multiply", bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", s, fscal(im, A + 2, g)), fscal(im, A + 3, g)), s), s), one);
}

int onnx_h_GridSample(Importer *im) {
  GNode *x = imp_input(im, 0), *grid = imp_input(im, 1);
  if (!x || !grid) return imp_error(im, "needs X and grid");
  if (x->type.ndim != 4 || grid->type.ndim != 4 || grid->type.shape[3] != 2 || grid->type.shape[0] != x->type.shape[0])
    return imp_error(im, "X %s and grid %s must be [N, C, H, W] and [N, H_out, W_out, 2]", ttype_str(&x->type), ttype_str(&grid->type));
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "X must be floating-point, got %s", dt_str(x->type.dtype));
  const char *mode = onnx_attr_string(N(im), "mode", "bilinear"), *pm = onnx_attr_string(N(im), "padding_mode", "zeros");
  Grid g;
  g.t = x->type.dtype;
  g.align = onnx_attr_int(N(im), "align_corners", 0) != 0;
  g.pad = !strcmp(pm, "zeros") ? 0 : !strcmp(pm, "border") ? 1 : !strcmp(pm, "reflection") ? 2 : -1;
  if (g.pad < 0) return imp_error(im, "padding_mode '%s' is not supported", pm);
  int m = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "bilinear") ? 1 : !strcmp(mode, "bicubic") ? 2 : -1;
  if (m < 0) return imp_error(im, "mode '%s' is not supported", mode);
  int64_t N = x->type.shape[0], C = x->type.shape[1];
  g.H = x->type.shape[2], g.W = x->type.shape[3];
  int64_t p[4] = {0, 2, 3, 1}, fs[2] = {N * g.H * g.W, C}, bs[3] = {N, 1, 1}, *bd;
  g.xf = imp_reshape(im, imp_transpose(im, x, 4, p), 2, fs);
  g.batch = new_i64(im, 3, bs, &bd);
  if (!g.batch) return -1;
  for (int64_t n = 0; n < N; n++) bd[n] = n * g.H * g.W;
  GNode *gr = imp_cast(im, grid, g.t);
  GNode *gx = imp_squeeze(im, slice_axis(im, gr, 3, 0, 1), 3), *gy = imp_squeeze(im, slice_axis(im, gr, 3, 1, 2), 3);
  /* unnormalize: align_corners ? (v + 1) / 2 (n - 1) : ((v + 1) n - 1) / 2 */
  GNode *one = fscal(im, 1, &g), *half = fscal(im, 0.5, &g);
  GNode *ux = g.align ? bin(im, "multiply", bin(im, "multiply", bin(im, "add", gx, one), half), fscal(im, (double)(g.W - 1), &g))
                      : bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", bin(im, "add", gx, one), fscal(im, (double)g.W, &g)), one), half);
  GNode *uy = g.align ? bin(im, "multiply", bin(im, "multiply", bin(im, "add", gy, one), half), fscal(im, (double)(g.H - 1), &g))
                      : bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", bin(im, "add", gy, one), fscal(im, (double)g.H, &g)), one), half);
  GNode *out = NULL;
  if (m == 0 || m == 1) {
    GNode *cx = pad_coord(im, &g, ux, g.W), *cy = pad_coord(im, &g, uy, g.H);
    if (m == 0) {
      out = grid_at(im, &g, un(im, "round", cx), un(im, "round", cy));
    } else {
      GNode *x0 = un(im, "floor", cx), *y0 = un(im, "floor", cy);
      GNode *x1 = bin(im, "add", x0, one), *y1 = bin(im, "add", y0, one);
      GNode *wx1 = bin(im, "subtract", cx, x0), *wy1 = bin(im, "subtract", cy, y0);
      GNode *wx0 = bin(im, "subtract", one, wx1), *wy0 = bin(im, "subtract", one, wy1);
      GNode *xs[2] = {x0, x1}, *ys[2] = {y0, y1}, *wxs[2] = {wx0, wx1}, *wys[2] = {wy0, wy1};
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          GNode *w = imp_expand_dims(im, bin(im, "multiply", wys[i], wxs[j]), 3);
          GNode *term = bin(im, "multiply", grid_at(im, &g, xs[j], ys[i]), w);
          out = out ? bin(im, "add", out, term) : term;
        }
    }
  } else {
    GNode *x0 = un(im, "floor", ux), *y0 = un(im, "floor", uy);
    GNode *tx = bin(im, "subtract", ux, x0), *ty = bin(im, "subtract", uy, y0);
    for (int i = 0; i < 4; i++) {
      GNode *yi = un(im, "trunc", pad_coord(im, &g, bin(im, "add", y0, fscal(im, i - 1, &g)), g.H));
      GNode *row = NULL;
      for (int j = 0; j < 4; j++) {
        GNode *xj = un(im, "trunc", pad_coord(im, &g, bin(im, "add", x0, fscal(im, j - 1, &g)), g.W));
        GNode *term = bin(im, "multiply", grid_at(im, &g, xj, yi), imp_expand_dims(im, cubic_w(im, &g, tx, j), 3));
        row = row ? bin(im, "add", row, term) : term;
      }
      GNode *term = bin(im, "multiply", row, imp_expand_dims(im, cubic_w(im, &g, ty, i), 3));
      out = out ? bin(im, "add", out, term) : term;
    }
  }
  int64_t back[4] = {0, 3, 1, 2};
  return set_out(im, 0, imp_transpose(im, out, 4, back));
}

/* ---- Det by the Leibniz formula (n <= 4: at most 24 products) ---- */

static int perms(int n, int k, int *p, bool *used, int (*out)[4], int *sign, int *cnt) {
  if (k == n) {
    int inv = 0;
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++) inv += p[i] > p[j];
    memcpy(out[*cnt], p, sizeof(int) * (size_t)n);
    sign[(*cnt)++] = inv % 2 ? -1 : 1;
    return 0;
  }
  for (int v = 0; v < n; v++) {
    if (used[v]) continue;
    used[v] = true;
    p[k] = v;
    perms(n, k + 1, p, used, out, sign, cnt);
    used[v] = false;
  }
  return 0;
}

int onnx_h_Det(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int r = x->type.ndim;
  if (r < 2 || x->type.shape[r - 1] != x->type.shape[r - 2]) return imp_error(im, "input %s is not a batch of square matrices", ttype_str(&x->type));
  int n = (int)x->type.shape[r - 1];
  if (n < 1 || n > 4) return imp_error(im, "determinants of %dx%d matrices are not supported (at most 4x4)", n, n);
  GNode *a[4][4];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      a[i][j] = imp_squeeze(im, imp_squeeze(im, slice_axis(im, slice_axis(im, x, r - 2, i, i + 1), r - 1, j, j + 1), r - 1), r - 2);
  int ps[24][4], sign[24], cnt = 0, p[4];
  bool used[4] = {false, false, false, false};
  perms(n, 0, p, used, ps, sign, &cnt);
  GNode *acc = NULL;
  for (int k = 0; k < cnt; k++) {
    GNode *t = a[0][ps[k][0]];
    for (int i = 1; i < n; i++) t = bin(im, "multiply", t, a[i][ps[k][i]]);
    acc = !acc ? (sign[k] > 0 ? t : un(im, "negative", t)) : bin(im, sign[k] > 0 ? "add" : "subtract", acc, t);
  }
  return set_out(im, 0, acc);
}

/* ---- MaxPool's Indices output: a running argmax over the window
 * offsets (first maximum wins), each offset a strided slice of the input
 * padded with -inf; indices are flat over the input (storage_order 1:
 * column-major within each image) ---- */

int onnx_maxpool_indices(Importer *im, GNode *x, const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb,
                         const int64_t *pe, bool ceil_mode, GNode **out) {
  *out = NULL;
  if (x->type.ndim != 4) return imp_error(im, "the Indices output is supported for 2-D pooling only");
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "the Indices output needs a floating-point input");
  int64_t NB = x->type.shape[0], C = x->type.shape[1], H = x->type.shape[2], W = x->type.shape[3], o[2];
  int64_t in[2] = {H, W};
  for (int i = 0; i < 2; i++) {
    int64_t span = in[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1);
    o[i] = ceil_mode ? (span + s[i] - 1) / s[i] + 1 : span / s[i] + 1;
    if (ceil_mode && (o[i] - 1) * s[i] >= in[i] + pb[i]) o[i]--;
  }
  /* pad so every window lies inside */
  int64_t pads[8] = {0, 0, pb[0], pb[1], 0, 0, 0, 0};
  for (int i = 0; i < 2; i++) {
    int64_t need = (o[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - (in[i] + pb[i]);
    pads[6 + i] = need > 0 ? need : 0;
  }
  GAttrs pa = gattrs_new();
  ga_ints(&pa, "pads", 8, pads);
  ga_str(&pa, "pad_mode", "constant");
  ga_float(&pa, "pad_value", -INFINITY);
  GNode *xp = imp_call(im, "nn.pad", 1, &x, pa);
  bool colmajor = onnx_attr_int(N(im), "storage_order", 0) != 0;
  GNode *best = NULL, *idx = NULL;
  int64_t os[4] = {NB, C, o[0], o[1]};
  for (int64_t kh = 0; kh < k[0]; kh++)
    for (int64_t kw = 0; kw < k[1]; kw++) {
      GAttrs sa = gattrs_new();
      int64_t b[2] = {kh * d[0], kw * d[1]}, e[2] = {kh * d[0] + (o[0] - 1) * s[0] + 1, kw * d[1] + (o[1] - 1) * s[1] + 1},
              ax[2] = {2, 3};
      ga_ints(&sa, "begin", 2, b);
      ga_ints(&sa, "end", 2, e);
      ga_ints(&sa, "strides", 2, s);
      ga_ints(&sa, "axes", 2, ax);
      GNode *v = xp ? imp_call(im, "strided_slice", 1, &xp, sa) : NULL;
      int64_t *id;
      GNode *ic = new_i64(im, 4, os, &id);
      if (!ic) return -1;
      for (int64_t nc = 0; nc < NB * C; nc++)
        for (int64_t i = 0; i < o[0]; i++)
          for (int64_t j = 0; j < o[1]; j++) {
            int64_t h = i * s[0] - pb[0] + kh * d[0], w = j * s[1] - pb[1] + kw * d[1];
            if (h < 0 || h >= H) h = h < 0 ? 0 : H - 1; /* a padded position never wins */
            if (w < 0 || w >= W) w = w < 0 ? 0 : W - 1;
            id[(nc * o[0] + i) * o[1] + j] = nc * H * W + (colmajor ? w * H + h : h * W + w);
          }
      if (!best) {
        best = v, idx = ic;
        continue;
      }
      GNode *upd = bin(im, "greater", v, best);
      best = imp_where(im, upd, v, best);
      idx = imp_where(im, upd, ic, idx);
    }
  *out = idx;
  return idx ? 0 : -1;
}

/* ---- RoiAlign (ONNX Runtime's algorithm, a fixed sampling grid) ---- */

int onnx_h_RoiAlign(Importer *im) {
  GNode *x = imp_input(im, 0), *rois = imp_input(im, 1), *bidx = imp_input(im, 2);
  if (!x || !rois || !bidx) return imp_error(im, "needs X, rois and batch_indices");
  if (x->type.ndim != 4 || rois->type.ndim != 2 || rois->type.shape[1] != 4 || bidx->type.ndim != 1 ||
      bidx->type.shape[0] != rois->type.shape[0])
    return imp_error(im, "X %s, rois %s and batch_indices %s must be [N, C, H, W], [R, 4] and [R]", ttype_str(&x->type),
                     ttype_str(&rois->type), ttype_str(&bidx->type));
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "X must be floating-point");
  int64_t PH = onnx_attr_int(N(im), "output_height", 1), PW = onnx_attr_int(N(im), "output_width", 1),
          G = onnx_attr_int(N(im), "sampling_ratio", 0);
  double scale = onnx_attr_float(N(im), "spatial_scale", 1.0f);
  const char *mode = onnx_attr_string(N(im), "mode", "avg");
  const char *ct = onnx_attr_string(N(im), "coordinate_transformation_mode", imp_opset(im) >= 16 ? "half_pixel" : "output_half_pixel");
  bool maxm = !strcmp(mode, "max"), half = !strcmp(ct, "half_pixel");
  if (!maxm && strcmp(mode, "avg")) return imp_error(im, "mode '%s' is not supported", mode);
  if (!half && strcmp(ct, "output_half_pixel")) return imp_error(im, "coordinate_transformation_mode '%s' is not supported", ct);
  if (G <= 0) return imp_error(im, "sampling_ratio = %lld (adaptive, data-dependent) is not supported", (long long)G);
  int64_t R = rois->type.shape[0], N = x->type.shape[0], C = x->type.shape[1], H = x->type.shape[2], W = x->type.shape[3];
  DType t = x->type.dtype;
  Grid g = {0};
  g.t = t;
  GNode *rf = imp_cast(im, rois, t);
  GNode *c[4];
  for (int i = 0; i < 4; i++) c[i] = bin(im, "subtract", bin(im, "multiply", imp_squeeze(im, slice_axis(im, rf, 1, i, i + 1), 1), fscal(im, scale, &g)), fscal(im, half ? 0.5 : 0, &g));
  GNode *rw = bin(im, "subtract", c[2], c[0]), *rh = bin(im, "subtract", c[3], c[1]);
  if (!half) rw = bin(im, "maximum", rw, fscal(im, 1, &g)), rh = bin(im, "maximum", rh, fscal(im, 1, &g));
  /* sample positions: start + bin * (p + (i + 0.5) / G), [R, P * G] */
  GNode *pos[2];
  int64_t P[2] = {PH, PW}, n2[2] = {H, W};
  GNode *start[2] = {c[1], c[0]}, *size[2] = {rh, rw};
  GNode *lo[2], *hi[2], *wl[2], *wh[2], *ok[2];
  for (int a = 0; a < 2; a++) {
    int64_t len = P[a] * G;
    void *kp;
    GNode *kc = imp_new_const(im, t, 1, &len, &kp);
    if (!kc) return -1;
    for (int64_t p = 0; p < P[a]; p++)
      for (int64_t i = 0; i < G; i++) imp_array_set(kc->value, p * G + i, (double)p + ((double)i + 0.5) / (double)G);
    GNode *bin_sz = bin(im, "divide", size[a], fscal(im, (double)P[a], &g));
    pos[a] = bin(im, "add", imp_expand_dims(im, start[a], 1), bin(im, "multiply", imp_expand_dims(im, bin_sz, 1), kc));
    /* bilinear taps with ONNX Runtime's edge rules */
    GNode *v = pos[a], *dim = fscal(im, (double)n2[a], &g), *last = fscal(im, (double)(n2[a] - 1), &g);
    ok[a] = bin(im, "logical_and", bin(im, "greater_equal", v, fscal(im, -1, &g)), bin(im, "less_equal", v, dim));
    v = bin(im, "maximum", v, fscal(im, 0, &g));
    GNode *fl = un(im, "floor", v);
    GNode *edge = bin(im, "greater_equal", fl, last);
    lo[a] = imp_where(im, edge, last, fl);
    hi[a] = imp_where(im, edge, last, bin(im, "add", fl, fscal(im, 1, &g)));
    v = imp_where(im, edge, last, v);
    wh[a] = bin(im, "subtract", v, lo[a]);           /* weight of the high tap */
    wl[a] = bin(im, "subtract", fscal(im, 1, &g), wh[a]);
  }
  /* gather from X as [N * H * W, C] at [R, PH*G, PW*G] positions */
  int64_t p4[4] = {0, 2, 3, 1}, fs[2] = {N * H * W, C};
  GNode *xf = imp_reshape(im, imp_transpose(im, x, 4, p4), 2, fs);
  int64_t b3[3] = {R, 1, 1};
  GNode *boff = bin(im, "multiply", imp_reshape(im, imp_cast(im, bidx, DT_I64), 3, b3), imp_scalar(im, (double)(H * W), DT_I64));
  GNode *valid = bin(im, "logical_and", imp_expand_dims(im, ok[0], 2), imp_expand_dims(im, ok[1], 1));
  GNode *ys[2] = {lo[0], hi[0]}, *xs[2] = {lo[1], hi[1]}, *wys[2] = {wl[0], wh[0]}, *wxs[2] = {wl[1], wh[1]};
  GNode *acc = NULL;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      GNode *lin = bin(im, "add", bin(im, "add", boff, imp_expand_dims(im, imp_cast(im, bin(im, "multiply", ys[i], fscal(im, (double)W, &g)), DT_I64), 2)),
                       imp_expand_dims(im, imp_cast(im, xs[j], DT_I64), 1));
      GAttrs ta = gattrs_new();
      ga_int(&ta, "axis", 0);
      GNode *args[2] = {xf, lin};
      GNode *v = imp_call(im, "take", 2, args, ta); /* [R, PH*G, PW*G, C] */
      GNode *w = bin(im, "multiply", imp_expand_dims(im, wys[i], 2), imp_expand_dims(im, wxs[j], 1));
      w = imp_where(im, valid, w, fscal(im, 0, &g));
      GNode *term = bin(im, "multiply", v, imp_expand_dims(im, w, 3));
      acc = !acc ? term : bin(im, maxm ? "maximum" : "add", acc, term);
    }
  int64_t s6[6] = {R, PH, G, PW, G, C}, red[2] = {2, 4};
  GNode *y = imp_reduce(im, maxm ? "max" : "sum", imp_reshape(im, acc, 6, s6), 2, red, false);
  if (!maxm) y = bin(im, "divide", y, fscal(im, (double)(G * G), &g));
  int64_t back[4] = {0, 3, 1, 2};
  return set_out(im, 0, imp_transpose(im, y, 4, back));
}

/* ---- sequences, as compile-time lists (ImpSeq) ---- */

static ImpSeq *seq_new(int n, DType t) {
  ImpSeq *q = KNEW(ImpSeq);
  q->n = n;
  q->items = KNEWN(GNode *, n + 1);
  q->dtype = t;
  return q;
}

/* A position input (constant scalar), default dflt, wrapped and checked
 * against [0, hi]. */
static int seq_pos(Importer *im, int i, int64_t dflt, int n, int64_t hi, int64_t *out) {
  double v = (double)dflt;
  if (imp_input(im, i) && const_scalar(im, i, &v)) return -1;
  int64_t p = (int64_t)v;
  if (p < 0) p += n;
  if (p < 0 || p > hi) return imp_error(im, "position %lld is out of range for a sequence of %d", (long long)v, n);
  *out = p;
  return 0;
}

int onnx_h_SequenceEmpty(Importer *im) {
  DType t = DT_F32;
  if (onnx_attr_has(N(im), "dtype") && onnx_dtype_from_onnx((int)onnx_attr_int(N(im), "dtype", 1), &t))
    return imp_error(im, "%s", kiln_get_error());
  return imp_set_output_seq(im, 0, seq_new(0, t));
}

int onnx_h_SequenceConstruct(Importer *im) {
  int n = imp_ninputs(im);
  if (n < 1) return imp_error(im, "needs at least one input");
  ImpSeq *q = seq_new(n, DT_F32);
  for (int i = 0; i < n; i++) {
    if (!(q->items[i] = imp_input(im, i))) return imp_error(im, "input %d is not a tensor", i);
    if (!dt_eq(q->items[i]->type.dtype, q->items[0]->type.dtype)) return imp_error(im, "inputs have different types");
  }
  q->dtype = q->items[0]->type.dtype;
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceInsert(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  GNode *x = imp_input(im, 1);
  if (!s) return -1;
  if (!x) return imp_error(im, "input 1 must be a tensor");
  if (s->n && !dt_eq(x->type.dtype, s->dtype)) return imp_error(im, "a %s tensor inserted into a %s sequence", dt_str(x->type.dtype), dt_str(s->dtype));
  int64_t p;
  if (seq_pos(im, 2, s->n, s->n, s->n, &p)) return -1;
  ImpSeq *q = seq_new(s->n + 1, x->type.dtype);
  for (int i = 0, j = 0; i < q->n; i++) q->items[i] = i == p ? x : s->items[j++];
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceErase(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  if (s->n == 0) return imp_error(im, "erasing from an empty sequence");
  int64_t p;
  if (seq_pos(im, 1, -1, s->n, s->n - 1, &p)) return -1;
  ImpSeq *q = seq_new(s->n - 1, s->dtype);
  for (int i = 0, j = 0; i < s->n; i++)
    if (i != p) q->items[j++] = s->items[i];
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceAt(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  int64_t p;
  if (!imp_input(im, 1)) return imp_error(im, "needs a position");
  if (s->n == 0 || seq_pos(im, 1, 0, s->n, s->n - 1, &p)) return s->n ? -1 : imp_error(im, "the sequence is empty");
  return set_out(im, 0, s->items[p]);
}

int onnx_h_SequenceLength(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  return set_out(im, 0, imp_scalar(im, s->n, DT_I64));
}

int onnx_h_SplitToSequence(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int r = x->type.ndim, ax;
  if (norm_ax(im, onnx_attr_int(N(im), "axis", 0), r, &ax)) return -1;
  int64_t dim = x->type.shape[ax], sizes[4096];
  int n = 0;
  bool squeeze = false;
  if (imp_input(im, 1)) {
    GNode *sp = imp_const_input(im, 1);
    if (!sp) return -1;
    if (sp->type.ndim == 0) {
      int64_t c = (int64_t)imp_const_at(sp, 0);
      if (c <= 0) return imp_error(im, "split %lld is not positive", (long long)c);
      for (int64_t b = 0; b < dim && n < 4096; b += c) sizes[n++] = b + c <= dim ? c : dim - b;
    } else {
      n = (int)ttype_numel(&sp->type);
      if (n > 4096) return imp_error(im, "more than 4096 parts are not supported");
      int64_t sum = 0;
      for (int i = 0; i < n; i++) sum += sizes[i] = (int64_t)imp_const_at(sp, i);
      if (sum != dim) return imp_error(im, "split sizes sum to %lld, the axis has %lld", (long long)sum, (long long)dim);
    }
  } else {
    if (dim > 4096) return imp_error(im, "more than 4096 parts are not supported");
    for (int64_t i = 0; i < dim; i++) sizes[n++] = 1;
    squeeze = onnx_attr_int(N(im), "keepdims", 1) == 0;
  }
  ImpSeq *q = seq_new(n, x->type.dtype);
  int64_t b = 0;
  for (int i = 0; i < n; i++) {
    GNode *part = slice_axis(im, x, ax, b, b + sizes[i]);
    q->items[i] = squeeze ? imp_squeeze(im, part, ax) : part;
    if (!q->items[i]) return -1;
    b += sizes[i];
  }
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_ConcatFromSequence(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  if (s->n == 0) return imp_error(im, "concatenating an empty sequence");
  bool newax = onnx_attr_int(N(im), "new_axis", 0) != 0;
  int r = s->items[0]->type.ndim + (newax ? 1 : 0), ax;
  if (norm_ax(im, onnx_attr_int(N(im), "axis", 0), r, &ax)) return -1;
  GNode **parts = KNEWN(GNode *, s->n + 1);
  for (int i = 0; i < s->n; i++)
    if (!(parts[i] = newax ? imp_expand_dims(im, s->items[i], ax) : s->items[i])) return -1;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ax);
  return set_out(im, 0, imp_call(im, "concatenate", s->n, parts, a));
}

/* ---- TfIdfVectorizer (integer pools): each n-gram length and skip is a
 * comparison of shifted slices with all pool n-grams of that length at
 * once; counts reach their output columns through a 0/1 matrix ---- */

int onnx_h_TfIdfVectorizer(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  if (onnx_attr_has(N(im), "pool_strings")) return imp_error(im, "string pools (pool_strings) are not supported");
  if (!dt_is_int(x->type.dtype)) return imp_error(im, "input must hold integers, got %s", dt_str(x->type.dtype));
  if (x->type.ndim != 1 && x->type.ndim != 2) return imp_error(im, "input %s must be [C] or [B, C]", ttype_str(&x->type));
  int npool, ncounts, nidx, nw;
  const int64_t *pool = onnx_attr_ints(N(im), "pool_int64s", &npool), *counts = onnx_attr_ints(N(im), "ngram_counts", &ncounts),
                *idx = onnx_attr_ints(N(im), "ngram_indexes", &nidx);
  const float *weights = onnx_attr_floats(N(im), "weights", &nw);
  const char *mode = onnx_attr_string(N(im), "mode", "TF");
  int64_t minn = onnx_attr_int(N(im), "min_gram_length", 1), maxn = onnx_attr_int(N(im), "max_gram_length", 1),
          maxskip = onnx_attr_int(N(im), "max_skip_count", 0);
  int m = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
  if (m < 0) return imp_error(im, "mode '%s' is not supported", mode);
  if (!pool || !counts || !idx) return imp_error(im, "needs pool_int64s, ngram_counts and ngram_indexes");
  int64_t O = 0;
  for (int i = 0; i < nidx; i++) O = idx[i] + 1 > O ? idx[i] + 1 : O;
  GNode *x2 = x->type.ndim == 1 ? imp_expand_dims(im, x, 0) : x;
  if (!x2) return -1;
  int64_t B = x2->type.shape[0], C = x2->type.shape[1];
  GNode *out = NULL;
  int64_t g0 = 0; /* index of the first n-gram of the current length */
  for (int n = 1; n <= ncounts; n++) {
    int64_t start = counts[n - 1], end = n < ncounts ? counts[n] : npool, G = (end - start) / n;
    if (G < 0 || start + G * n > npool) return imp_error(im, "ngram_counts does not fit pool_int64s");
    if (G > 0 && n >= minn && n <= maxn) {
      GNode *cnt = NULL;
      for (int64_t k = 0; k <= (n == 1 ? 0 : maxskip); k++) {
        int64_t L = C - (int64_t)(n - 1) * (k + 1);
        if (L <= 0) break;
        GNode *hit = NULL;
        for (int j = 0; j < n; j++) {
          void *tp;
          GNode *tj = imp_new_const(im, x2->type.dtype, 1, &G, &tp);
          if (!tj) return -1;
          for (int64_t g = 0; g < G; g++) imp_array_set(tj->value, g, (double)pool[start + g * n + j]);
          GNode *xj = imp_expand_dims(im, slice_axis(im, x2, 1, j * (k + 1), j * (k + 1) + L), 2);
          GNode *eq = bin(im, "equal", xj, tj);
          hit = hit ? bin(im, "logical_and", hit, eq) : eq;
        }
        int64_t a1 = 1;
        GNode *c = imp_reduce(im, "sum", imp_cast(im, hit, DT_F32), 1, &a1, false); /* [B, G] */
        cnt = cnt ? bin(im, "add", cnt, c) : c;
      }
      if (cnt) {
        int64_t ws[2] = {O, G};
        void *wp;
        GNode *W = imp_new_const(im, DT_F32, 2, ws, &wp), *wg = NULL;
        if (!W) return -1;
        for (int64_t g = 0; g < G; g++) {
          if (g0 + g >= nidx) return imp_error(im, "ngram_indexes has fewer entries than the pool's n-grams");
          ((float *)wp)[idx[g0 + g] * G + g] = 1;
        }
        if (weights && m) {
          void *vp;
          wg = imp_new_const(im, DT_F32, 1, &G, &vp);
          if (!wg) return -1;
          for (int64_t g = 0; g < G; g++) ((float *)vp)[g] = g0 + g < nw ? weights[g0 + g] : 1;
        }
        if (m == 1) cnt = imp_cast(im, bin(im, "greater", cnt, imp_scalar(im, 0, DT_F32)), DT_F32);
        if (wg) cnt = bin(im, "multiply", cnt, wg);
        GNode *y = dense(im, cnt, W);
        out = out ? bin(im, "add", out, y) : y;
      }
    }
    g0 += G;
  }
  if (!out) {
    int64_t os[2] = {B, O};
    out = imp_new_const(im, DT_F32, 2, os, NULL);
  }
  if (x->type.ndim == 1) out = imp_reshape(im, out, 1, &O);
  return set_out(im, 0, out);
}

/* ---- Resize with tf_crop_and_resize: per axis, gathers at constant
 * source positions inside the region of interest (linear: two taps with
 * constant weights), and extrapolation_value outside the input ---- */

int onnx_resize_crop(Importer *im, GNode *x, const int64_t *size) {
  if (!x) return -1;
  int nd = x->type.ndim;
  GNode *roi = imp_const_input(im, 1);
  if (!roi) return -1;
  if (ttype_numel(&roi->type) != 2 * nd) return imp_error(im, "roi has %lld values, expected %d", (long long)ttype_numel(&roi->type), 2 * nd);
  const char *mode = onnx_attr_string(N(im), "mode", "nearest"), *nm = onnx_attr_string(N(im), "nearest_mode", "round_prefer_floor");
  bool linear = !strcmp(mode, "linear");
  if (!linear && strcmp(mode, "nearest"))
    return imp_error(im, "mode '%s' with tf_crop_and_resize is not supported (nearest, linear)", mode);
  int rnd = !strcmp(nm, "round_prefer_floor") ? 0 : !strcmp(nm, "round_prefer_ceil") ? 1 : !strcmp(nm, "floor") ? 2 : !strcmp(nm, "ceil") ? 3 : -1;
  if (rnd < 0) return imp_error(im, "nearest_mode '%s' is not supported", nm);
  double ext = onnx_attr_float(N(im), "extrapolation_value", 0.0f);
  GNode *y = x, *mask = NULL;
  for (int a = 0; a < nd; a++) {
    int64_t n = x->type.shape[a], o = size[a];
    double s = imp_const_at(roi, a), e = imp_const_at(roi, nd + a);
    if (o == n && s == 0 && e == 1) continue; /* the identity */
    int64_t *i0, *i1, shp[MAXD];
    for (int k = 0; k < nd - a; k++) shp[k] = k == 0 ? o : 1;
    GNode *c0 = new_i64(im, 1, &o, &i0), *c1 = new_i64(im, 1, &o, &i1);
    void *w0p, *w1p, *mp;
    GNode *w0 = imp_new_const(im, x->type.dtype, nd - a, shp, &w0p), *w1 = imp_new_const(im, x->type.dtype, nd - a, shp, &w1p);
    GNode *mk = imp_new_const(im, DT_BOOL, nd - a, shp, &mp);
    if (!c0 || !c1 || !w0 || !w1 || !mk) return -1;
    for (int64_t j = 0; j < o; j++) {
      double xo = o == 1 ? (e - s) * (double)(n - 1) / 2 : (double)j * (e - s) * (double)(n - 1) / (double)(o - 1);
      xo += s * (double)(n - 1);
      ((uint8_t *)mp)[j] = xo >= 0 && xo <= (double)(n - 1);
      double lo = floor(xo), r = xo - lo;
      int64_t l, h;
      if (linear) {
        l = (int64_t)lo, h = l + 1;
      } else {
        double f = rnd == 2 ? floor(xo) : rnd == 3 ? ceil(xo) : r == 0.5 ? (rnd == 0 ? lo : lo + 1) : round(xo);
        l = h = (int64_t)f, r = 0;
      }
      i0[j] = l < 0 ? 0 : l > n - 1 ? n - 1 : l;
      i1[j] = h < 0 ? 0 : h > n - 1 ? n - 1 : h;
      imp_array_set(w0->value, j, 1 - r);
      imp_array_set(w1->value, j, r);
    }
    GAttrs ta = gattrs_new();
    ga_int(&ta, "axis", a);
    GNode *a0[2] = {y, c0}, *a1[2] = {y, c1};
    GNode *g0 = imp_call(im, "take", 2, a0, ta);
    y = linear ? bin(im, "add", bin(im, "multiply", g0, w0), bin(im, "multiply", imp_call(im, "take", 2, a1, ta), w1)) : g0;
    mask = mask ? bin(im, "logical_and", mask, mk) : mk;
  }
  if (mask) y = imp_where(im, mask, y, imp_scalar_like(im, ext, y));
  return set_out(im, 0, y == x ? un(im, "copy", x) : y);
}

/* ---- optimizers of ai.onnx.preview.training (Adagrad, Adam, Momentum):
 * one update step, elementwise, for each of the n tensors they take; the
 * iteration count T enters through where(T > 0, ...) ---- */

/* The inputs R, T and the groups of n tensors after them. */
static int optim_inputs(Importer *im, int groups, GNode **r, GNode **t, int *n) {
  int rest = imp_ninputs(im) - 2;
  if (rest < groups || rest % groups) return imp_error(im, "expected R, T and %d groups of equally many tensors", groups);
  *n = rest / groups;
  *r = imp_input(im, 0);
  *t = imp_input(im, 1);
  if (!*r || !*t) return imp_error(im, "needs R and T");
  return 0;
}

static GNode *f32s(Importer *im, double v) { return imp_scalar(im, v, DT_F32); }

int onnx_h_Adagrad(Importer *im) {
  GNode *r, *t;
  int n;
  if (optim_inputs(im, 3, &r, &t, &n)) return -1;
  double norm = onnx_attr_float(N(im), "norm_coefficient", 0), eps = onnx_attr_float(N(im), "epsilon", 1e-6f),
         decay = onnx_attr_float(N(im), "decay_factor", 0);
  GNode *rf = imp_cast(im, r, DT_F32), *tf = imp_cast(im, t, DT_F32);
  GNode *radj = bin(im, "divide", rf, bin(im, "add", f32s(im, 1), bin(im, "multiply", tf, f32s(im, decay))));
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, 2 + i), *g = imp_input(im, 2 + n + i), *h = imp_input(im, 2 + 2 * n + i);
    if (!x || !g || !h) return imp_error(im, "tensor group %d is incomplete", i);
    GNode *gr = bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, norm, x)), g);
    GNode *hn = bin(im, "add", h, bin(im, "multiply", gr, gr));
    GNode *hs = bin(im, "add", un(im, "sqrt", hn), imp_scalar_like(im, eps, x));
    GNode *xn = bin(im, "subtract", x, bin(im, "divide", bin(im, "multiply", imp_cast(im, radj, x->type.dtype), gr), hs));
    if (set_out(im, i, xn) || set_out(im, n + i, hn)) return -1;
  }
  return 0;
}

int onnx_h_Adam(Importer *im) {
  GNode *r, *t;
  int n;
  if (optim_inputs(im, 4, &r, &t, &n)) return -1;
  double norm = onnx_attr_float(N(im), "norm_coefficient", 0), post = onnx_attr_float(N(im), "norm_coefficient_post", 0),
         alpha = onnx_attr_float(N(im), "alpha", 0.9f), beta = onnx_attr_float(N(im), "beta", 0.999f),
         eps = onnx_attr_float(N(im), "epsilon", 1e-6f);
  GNode *rf = imp_cast(im, r, DT_F32), *tf = imp_cast(im, t, DT_F32);
  /* bias correction r sqrt(1 - beta^t) / (1 - alpha^t) once t > 0 */
  GNode *corr = bin(im, "divide", un(im, "sqrt", bin(im, "subtract", f32s(im, 1), bin(im, "power", f32s(im, beta), tf))),
                    bin(im, "subtract", f32s(im, 1), bin(im, "power", f32s(im, alpha), tf)));
  GNode *radj = imp_where(im, bin(im, "greater", t, imp_scalar_like(im, 0, t)), bin(im, "multiply", rf, corr), rf);
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, 2 + i), *g = imp_input(im, 2 + n + i), *v = imp_input(im, 2 + 2 * n + i),
          *h = imp_input(im, 2 + 3 * n + i);
    if (!x || !g || !v || !h) return imp_error(im, "tensor group %d is incomplete", i);
    GNode *gr = bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, norm, x)), g);
    GNode *vn = bin(im, "add", bin(im, "multiply", v, imp_scalar_like(im, alpha, v)), bin(im, "multiply", gr, imp_scalar_like(im, 1 - alpha, gr)));
    GNode *hn = bin(im, "add", bin(im, "multiply", h, imp_scalar_like(im, beta, h)),
                    bin(im, "multiply", bin(im, "multiply", gr, gr), imp_scalar_like(im, 1 - beta, gr)));
    GNode *hs = bin(im, "add", un(im, "sqrt", hn), imp_scalar_like(im, eps, x));
    GNode *xn = bin(im, "subtract", x, bin(im, "multiply", imp_cast(im, radj, x->type.dtype), bin(im, "divide", vn, hs)));
    xn = bin(im, "multiply", xn, imp_scalar_like(im, 1 - post, x));
    if (set_out(im, i, xn) || set_out(im, n + i, vn) || set_out(im, 2 * n + i, hn)) return -1;
  }
  return 0;
}

int onnx_h_Momentum(Importer *im) {
  GNode *r, *t;
  int n;
  if (optim_inputs(im, 3, &r, &t, &n)) return -1;
  double norm = onnx_attr_float(N(im), "norm_coefficient", 0), alpha = onnx_attr_float(N(im), "alpha", 0),
         beta = onnx_attr_float(N(im), "beta", 0);
  const char *mode = onnx_attr_string(N(im), "mode", "standard");
  bool nesterov = !strcmp(mode, "nesterov");
  if (!nesterov && strcmp(mode, "standard")) return imp_error(im, "mode '%s' is not supported (standard, nesterov)", mode);
  /* the gradient's coefficient is 1 at the first iteration */
  GNode *badj = imp_where(im, bin(im, "greater", t, imp_scalar_like(im, 0, t)), f32s(im, beta), f32s(im, 1));
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, 2 + i), *g = imp_input(im, 2 + n + i), *v = imp_input(im, 2 + 2 * n + i);
    if (!x || !g || !v) return imp_error(im, "tensor group %d is incomplete", i);
    GNode *rr = imp_cast(im, r, x->type.dtype);
    GNode *gr = bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, norm, x)), g);
    GNode *vn = bin(im, "add", bin(im, "multiply", v, imp_scalar_like(im, alpha, v)), bin(im, "multiply", gr, imp_cast(im, badj, x->type.dtype)));
    GNode *step = nesterov ? bin(im, "add", gr, bin(im, "multiply", vn, imp_scalar_like(im, alpha, vn))) : vn;
    GNode *xn = bin(im, "subtract", x, bin(im, "multiply", rr, step));
    if (set_out(im, i, xn) || set_out(im, n + i, vn)) return -1;
  }
  return 0;
}
