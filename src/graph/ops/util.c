/* util.c - shape helpers for the op-table rows (see util.h). */
#include "util.h"

#include <string.h>

const char *shape_str(const TType *t) {
  StrBuf sb = {0};
  sb_putc(&sb, '(');
  for (int i = 0; i < t->ndim; i++) sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  sb_putc(&sb, ')');
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}

int bcast_shapes(const TType *a, const TType *b, TType *out) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  TType r;
  memset(&r, 0, sizeof r);
  r.ndim = nd;
  r.dtype = a->dtype;
  for (int i = 0; i < nd; i++) {
    int ia = a->ndim - nd + i, ib = b->ndim - nd + i;
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return kiln_set_error("shapes %s and %s cannot be broadcast together (dimension %d: %lld vs %lld)", shape_str(a),
                            shape_str(b), i, (long long)da, (long long)db);
    r.shape[i] = da == 1 ? db : da;
  }
  *out = r;
  return 0;
}

int norm_axis(const char *what, int64_t axis, int ndim, int *out) {
  if (axis < -ndim || axis >= (ndim > 0 ? ndim : 1))
    return kiln_set_error("%s %lld is out of range for a tensor of rank %d", what, (long long)axis, ndim);
  *out = (int)(axis < 0 ? axis + ndim : axis);
  return 0;
}

int gnode_const_ints(GNode *n, int64_t *out, int max) {
  if (n->kind != GN_CONST)
    return kiln_set_error("input '%s' must be a constant (known at compile time)", n->name);
  DLTensor *v = n->value;
  if (v->ndim > 1) return kiln_set_error("input '%s' must be a 1-D tensor, got rank %d", n->name, v->ndim);
  int64_t len = v->ndim ? v->shape[0] : 1;
  if (len > max) return kiln_set_error("input '%s' has %lld values, at most %d supported", n->name, (long long)len, max);
  const char *p = (const char *)v->data + v->byte_offset;
  for (int64_t i = 0; i < len; i++) {
    double f;
    if (v->dtype.code == kDLInt && v->dtype.bits == 64) {
      out[i] = ((const int64_t *)p)[i];
      continue;
    } else if (v->dtype.code == kDLInt && v->dtype.bits == 32) {
      out[i] = ((const int32_t *)p)[i];
      continue;
    } else if (v->dtype.code == kDLFloat && v->dtype.bits == 32) f = ((const float *)p)[i];
    else if (v->dtype.code == kDLFloat && v->dtype.bits == 64) f = ((const double *)p)[i];
    else return kiln_set_error("input '%s' must hold integers, got %s", n->name, dt_str(v->dtype));
    /* a float outside int64's range (or NaN) has no integer value: C leaves the conversion undefined */
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0))
      return kiln_set_error("input '%s' element %lld is %g, not an integer int64 holds", n->name, (long long)i, f);
    out[i] = (int64_t)f;
  }
  return (int)len;
}

int err_dtype(GNode *n, int arg, const char *expected) {
  return kiln_set_error("input %d has type %s, expected %s", arg, dt_str(arg_type(n, arg)->dtype), expected);
}
