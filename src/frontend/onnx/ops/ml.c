/*
 * ml.c - the ai.onnx.ml operators Kiln maps from ordinary graph ops.
 *
 * Binarizer: 1 where x > threshold, else 0 (NaN gives 0), in x's type.
 * For integer x the threshold is floored first, since x > t and
 * x > floor(t) agree on integers.
 *
 * ArrayFeatureExtractor: a take along the last axis with the indices
 * flattened, as onnx.reference does: the output is
 * [*X.shape[:-1], Y.size], and [1, Y.size] for a 1-D X.  Negative indices
 * count from the end (NumPy's indexing, which the reference uses).  Indices
 * known at import are checked against the axis; run-time ones outside it
 * clamp to the nearest end, like every take in Kiln.
 *
 * The tree ensembles, LabelEncoder (strings) and the others are not mapped.
 */
#include "ops.h"

#include <math.h>

int onnx_h_Binarizer(Importer *im) {
  GNode *x = in0(im);
  if (!x) return -1;
  DType t = x->type.dtype;
  if (!dt_is_float(t) && !dt_is_int(t))
    return imp_error(im, "input X must be float, double, int32 or int64, got %s", dt_str(t));
  double th = onnx_attr_float(N(im), "threshold", 0.0f);
  if (dt_is_int(t)) {
    th = floor(th);
    double lo = t.bits == 64 ? -9.2e18 : -2147483648.0, hi = t.bits == 64 ? 9.2e18 : 2147483647.0;
    th = th < lo ? lo : th > hi ? hi : th;
  }
  GNode *c = bin(im, "greater", x, imp_scalar_like(im, th, x));
  return out0(im, imp_where(im, c, imp_scalar_like(im, 1, x), imp_scalar_like(im, 0, x)));
}

int onnx_h_ArrayFeatureExtractor(Importer *im) {
  GNode *x = in0(im), *y = imp_input(im, 1);
  if (!x || !y) return -1;
  int nd = x->type.ndim;
  if (nd < 1) return imp_error(im, "input X must have at least one axis, got a scalar");
  if (!(dt_is_int(y->type.dtype) && y->type.dtype.bits == 64))
    return imp_error(im, "input Y (the indices) must be int64, got %s", dt_str(y->type.dtype));
  int64_t n = 1, last = x->type.shape[nd - 1];
  for (int i = 0; i < y->type.ndim; i++) n *= y->type.shape[i];
  if (n > 0 && last == 0) return imp_error(im, "input X %s has an empty last axis to take from", ttype_str(&x->type));
  if (y->kind == GN_CONST) {
    const int64_t *v = (const int64_t *)((const char *)y->value->data + y->value->byte_offset);
    for (int64_t i = 0; i < n; i++)
      if (v[i] < -last || v[i] >= last)
        return imp_error(im, "index Y[%lld] = %lld is outside X's last axis of %lld (allowed: %lld .. %lld)",
                         (long long)i, (long long)v[i], (long long)last, (long long)-last, (long long)(last - 1));
  }
  GNode *flat = imp_reshape(im, y, 1, &n);
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", nd - 1);
  GNode *args[2] = {x, flat};
  GNode *z = flat ? imp_call(im, "take", 2, args, a) : NULL;
  if (z && nd == 1) {
    int64_t s2[2] = {1, n};
    z = imp_reshape(im, z, 2, s2);
  }
  return out0(im, z);
}
