/*
 * import_checked.c - checked conversions of the numbers a model carries.
 *
 * Attribute values and the elements of constant inputs are whatever the
 * file says: an int64 attribute may be -2^63, a float input may be NaN or
 * 1e30, a list may be longer than the rank it describes.  Handlers turn
 * them into the integers they compute with (counts, sizes, axes, data
 * type codes, loop bounds) only through these functions, never through a
 * bare cast:
 *
 *   - every value is checked against the range the operator allows
 *     before it is used, and an int64 is read exactly (not through a
 *     double, which rounds above 2^53);
 *   - a float element is converted to an integer only when it is finite
 *     and in range (C leaves the conversion undefined otherwise), and
 *     truncates toward zero as a cast would;
 *   - products of sizes (an allocation's element count, a shape's number
 *     of elements) are computed with overflow checks and bounded by
 *     IMP_MAX_COUNT, the most elements Kiln indexes (GRAPH_MAX_ELEMS);
 *   - an error names the node, its op and opset (imp_error), the attribute
 *     or input, the bad value and the range it must lie in, so the message
 *     says what to change in the model.
 *
 * What a value means beyond its range (that a kernel fits its input, that
 * two lists agree) stays the handler's check; these functions make sure
 * the arithmetic that check does is defined.
 */
#include "import_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* A bound as a message reads it: 2^31 - 1 and the int64 limits by name. */
static const char *bound_str(int64_t v) {
  if (v == INT64_MAX) return "2^63 - 1";
  if (v == INT64_MIN) return "-2^63";
  if (v == INT32_MAX) return "2^31 - 1 (2147483647)";
  if (v == -(int64_t)INT32_MAX - 1) return "-2^31";
  return kfmt("%" PRId64, v);
}

static int range_error(Importer *im, const char *what, const char *value, int64_t lo, int64_t hi) {
  if (lo == hi) return imp_error(im, "%s is %s; it must be %s", what, value, bound_str(lo));
  if (hi == INT64_MAX) return imp_error(im, "%s is %s; it must be at least %s", what, value, bound_str(lo));
  return imp_error(im, "%s is %s; it must be from %s to %s", what, value, bound_str(lo), bound_str(hi));
}

int imp_check_i64(Importer *im, const char *what, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return 0;
  return range_error(im, what, kfmt("%" PRId64, v), lo, hi);
}

int imp_double_i64(Importer *im, const char *what, double v, int64_t lo, int64_t hi, int64_t *out) {
  *out = 0;
  /* 2^63 is exact as a double; every double below it converts */
  if (!isfinite(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0)
    return range_error(im, what, kfmt("%g", v), lo, hi);
  int64_t t = (int64_t)v;
  if (t < lo || t > hi) return range_error(im, what, kfmt("%g", v), lo, hi);
  *out = t;
  return 0;
}

/* ---- attributes ---- */

static const char *attr_what(const char *name) { return kfmt("attribute '%s'", name); }

int imp_attr_i64(Importer *im, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t *out) {
  int64_t v = onnx_attr_int(im->node, name, dflt);
  *out = dflt;
  if (imp_check_i64(im, attr_what(name), v, lo, hi)) return -1;
  *out = v;
  return 0;
}

int imp_attr_int(Importer *im, const char *name, int64_t dflt, int lo, int hi, int *out) {
  int64_t v;
  *out = (int)dflt;
  if (imp_attr_i64(im, name, dflt, lo, hi, &v)) return -1;
  *out = (int)v;
  return 0;
}

int imp_attr_axis(Importer *im, const char *name, int64_t dflt, int ndim, int *out) {
  int64_t v = onnx_attr_int(im->node, name, dflt);
  *out = 0;
  if (v < -ndim || v >= (ndim > 0 ? ndim : 1))
    return imp_error(im, "attribute '%s' is %" PRId64 ", out of range for an input of rank %d (it must be from %d to %d)",
                     name, v, ndim, -ndim, ndim > 0 ? ndim - 1 : 0);
  *out = (int)(v < 0 ? v + ndim : v);
  return 0;
}

int imp_attr_dtype(Importer *im, const char *name, int64_t dflt, DType *out) {
  int64_t v = onnx_attr_int(im->node, name, dflt);
  if (v < 0 || v > INT32_MAX || onnx_dtype_from_onnx((int)v, out))
    return imp_error(im, "attribute '%s' is %" PRId64 ": %s", name, v,
                     v < 0 || v > INT32_MAX ? "not an ONNX data type (TensorProto.DataType)" : kiln_get_error());
  return 0;
}

int imp_attr_ints_in(Importer *im, const char *name, int max, int64_t lo, int64_t hi, const int64_t **v, int *n) {
  *v = onnx_attr_ints(im->node, name, n);
  if (!*v) return 0;
  if (max >= 0 && *n > max)
    return imp_error(im, "attribute '%s' has %d values; it may have at most %d", name, *n, max);
  for (int k = 0; k < *n; k++)
    if ((*v)[k] < lo || (*v)[k] > hi)
      return range_error(im, kfmt("attribute '%s'[%d]", name, k), kfmt("%" PRId64, (*v)[k]), lo, hi);
  return 0;
}

/* ---- constant inputs ---- */

static const char *input_what(Importer *im, int i) {
  const char *nm = i >= 0 && i < im->node->ninputs ? im->node->inputs[i] : "";
  return *nm ? kfmt("input %d ('%s')", i, nm) : kfmt("input %d", i);
}

int imp_const_i64_at(Importer *im, int i, const GNode *c, int64_t k, int64_t lo, int64_t hi, int64_t *out) {
  const DLTensor *a = c->value;
  const char *p = (const char *)a->data + a->byte_offset;
  DLDataType d = a->dtype;
  int64_t n = ttype_numel(&c->type);
  const char *what = n == 1 ? input_what(im, i) : kfmt("%s[%" PRId64 "]", input_what(im, i), k);
  *out = 0;
  if (d.code == kDLInt && d.bits == 64) return imp_check_i64(im, what, *out = ((const int64_t *)p)[k], lo, hi);
  if (d.code == kDLUInt && d.bits == 64) {
    uint64_t u = ((const uint64_t *)p)[k];
    if (u > (uint64_t)INT64_MAX) return range_error(im, what, kfmt("%" PRIu64, u), lo, hi);
    return imp_check_i64(im, what, *out = (int64_t)u, lo, hi);
  }
  if (d.code == kDLFloat) return imp_double_i64(im, what, imp_const_at(c, k), lo, hi, out);
  /* the narrower integer types are exact as doubles */
  *out = (int64_t)imp_const_at(c, k);
  return imp_check_i64(im, what, *out, lo, hi);
}

int64_t imp_const_i64_sat(const GNode *c, int64_t k) {
  const DLTensor *a = c->value;
  const char *p = (const char *)a->data + a->byte_offset;
  DLDataType d = a->dtype;
  if (d.code == kDLInt && d.bits == 64) return ((const int64_t *)p)[k];
  if (d.code == kDLUInt && d.bits == 64) {
    uint64_t u = ((const uint64_t *)p)[k];
    return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
  }
  double v = imp_const_at(c, k);
  if (v != v) return 0;
  return v >= 9223372036854775808.0 ? INT64_MAX : v < -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
}

int imp_input_i64(Importer *im, int i, int64_t lo, int64_t hi, int64_t *out) {
  *out = 0;
  GNode *c = imp_const_input(im, i);
  if (!c) return -1;
  if (ttype_numel(&c->type) != 1)
    return imp_error(im, "%s must hold one value, got %s", input_what(im, i), ttype_str(&c->type));
  return imp_const_i64_at(im, i, c, 0, lo, hi, out);
}

int imp_const_input_ints_in(Importer *im, int i, int64_t *out, int max, int64_t lo, int64_t hi) {
  int n = imp_const_input_ints(im, i, out, max);
  if (n < 0) return -1;
  for (int k = 0; k < n; k++)
    if (out[k] < lo || out[k] > hi)
      return range_error(im, kfmt("%s[%d]", input_what(im, i), k), kfmt("%" PRId64, out[k]), lo, hi);
  return n;
}

/* ---- sizes ---- */

int imp_mul_count(Importer *im, const char *what, int64_t a, int64_t b, int64_t limit, int64_t *out) {
  int64_t p;
  *out = 0;
  if (a < 0 || b < 0) return imp_error(im, "%s: a negative size (%" PRId64 " x %" PRId64 ")", what, a, b);
  if (__builtin_mul_overflow(a, b, &p) || p > limit)
    return imp_error(im, "%s has %" PRId64 " x %" PRId64 " elements, more than %s; use smaller sizes", what, a, b,
                     bound_str(limit));
  *out = p;
  return 0;
}

int imp_numel_in(Importer *im, const char *what, int n, const int64_t *dims, int64_t limit, int64_t *out) {
  int64_t p = 1;
  *out = 0;
  for (int i = 0; i < n; i++)
    if (dims[i] < 0) return imp_error(im, "%s: dimension %d is %" PRId64 " (negative)", what, i, dims[i]);
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(p, dims[i], &p) || p > limit) {
      /* a later zero makes the product 0 after all */
      for (int j = i + 1; j < n; j++)
        if (dims[j] == 0) return 0;
      StrBuf sb = {0};
      for (int j = 0; j < n; j++) sb_printf(&sb, "%s%" PRId64, j ? ", " : "", dims[j]);
      int rc = imp_error(im, "%s of shape (%s) has more than %s elements; use smaller sizes", what, sb.data ? sb.data : "",
                         bound_str(limit));
      sb_free(&sb);
      return rc;
    }
  *out = p;
  return 0;
}

void *imp_alloc_n(Importer *im, const char *what, int64_t n, size_t size) {
  if (n < 0 || n > IMP_MAX_COUNT || (uint64_t)n * size > IMP_MAX_ALLOC_BYTES)
    return imp_error(im, "%s would need %" PRId64 " entries of %zu bytes (at most %s entries, %d MiB)", what, n, size,
                     bound_str(IMP_MAX_COUNT), (int)(IMP_MAX_ALLOC_BYTES >> 20)),
           NULL;
  return kalloc(size * (size_t)(n > 0 ? n : 1));
}
