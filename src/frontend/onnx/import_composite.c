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
