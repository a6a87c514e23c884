/*
 * util.c - what the operator files share: axis normalization, shape text
 * for error messages, NumPy broadcasting, and layout strings.
 *
 * Broadcasting follows NumPy: shapes align at their last dimension; two
 * dimensions agree when they are equal or one of them is 1, and the
 * result takes the other.  A symbolic dimension agrees with an equal
 * expression or with 1; against a constant other than 1 it is assumed to
 * be that constant (it will be checked when the kernel is called).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../topi.h"

int topi_normalize_axis(const char *op, int64_t axis, int ndim, int *out) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    return kiln_set_error("%s: axis %lld is out of range for a tensor of rank %d", op, (long long)axis,
                          ndim);
  *out = (int)a;
  return 0;
}

const char *topi_shape_str(int ndim, Expr **shape) {
  StrBuf sb = {0};
  sb_putc(&sb, '[');
  for (int i = 0; i < ndim; i++) {
    int64_t v;
    if (i) sb_puts(&sb, ", ");
    if (ir_is_const_int(shape[i], &v))
      sb_printf(&sb, "%lld", (long long)v);
    else
      sb_puts(&sb, ir_expr_str(shape[i]));
  }
  sb_putc(&sb, ']');
  char *h = sb_steal(&sb);
  const char *r = kstrdup(h);
  free(h);
  return r;
}

static bool dim_is(Expr *d, int64_t v) { return ir_is_int_value(d, v); }

static bool dims_equal(Expr *a, Expr *b) {
  int64_t x, y;
  if (ir_is_const_int(a, &x) && ir_is_const_int(b, &y)) return x == y;
  return ir_expr_equal(a, b);
}

int topi_broadcast_shapes(const char *op, int n, const int *ndims, Expr ***shapes, int *ndim_out,
                          Expr ***shape_out) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    if (ndims[i] > nd) nd = ndims[i];
  Expr **sh = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) sh[d] = NULL;
  for (int i = 0; i < n; i++) {
    for (int d = 0; d < ndims[i]; d++) {
      int od = d + nd - ndims[i];
      Expr *x = shapes[i][d];
      if (!sh[od] || (dim_is(sh[od], 1) && !dim_is(x, 1))) {
        sh[od] = x;
        continue;
      }
      if (dim_is(x, 1) || dims_equal(sh[od], x)) continue;
      int64_t a, b;
      bool ca = ir_is_const_int(sh[od], &a), cb = ir_is_const_int(x, &b);
      if (ca && cb) {
        StrBuf sb = {0};
        sb_printf(&sb, "%s: cannot broadcast shapes ", op);
        for (int k = 0; k < n; k++)
          sb_printf(&sb, "%s%s", k == 0 ? "" : k == n - 1 ? " and " : ", ", topi_shape_str(ndims[k], shapes[k]));
        sb_printf(&sb, " (dimension %d: %lld vs %lld)", od, (long long)a, (long long)b);
        kiln_set_error("%s", sb.data);
        sb_free(&sb);
        return -1;
      }
      if (!ca && !cb)
        return kiln_set_error("%s: cannot broadcast shapes %s and %s: symbolic dimensions %s and %s differ", op,
                              topi_shape_str(ndims[0], shapes[0]), topi_shape_str(ndims[i], shapes[i]),
                              ir_expr_str(sh[od]), ir_expr_str(x));
      if (cb) sh[od] = x; /* a symbolic dim against a constant: the constant */
    }
  }
  *ndim_out = nd;
  *shape_out = sh;
  return 0;
}

int topi_broadcast_shape(const char *op, int n, Tensor **ts, int *ndim_out, Expr ***shape_out) {
  int *nd = KNEWN(int, n > 0 ? n : 1);
  Expr ***sh = KNEWN(Expr **, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    if (!ts[i]) return -1;
    nd[i] = ts[i]->ndim;
    sh[i] = ts[i]->shape;
  }
  return topi_broadcast_shapes(op, n, nd, sh, ndim_out, shape_out);
}

Expr *topi_broadcast_read(Tensor *t, int out_ndim, Expr **vars, Expr **out_shape) {
  if (!t) return NULL;
  Expr **idx = KNEWN(Expr *, t->ndim > 0 ? t->ndim : 1);
  for (int d = 0; d < t->ndim; d++) {
    int od = d + out_ndim - t->ndim;
    KASSERT(od >= 0);
    if (dim_is(t->shape[d], 1) && !dim_is(out_shape[od], 1))
      idx[d] = ir_i32(0);
    else
      idx[d] = vars[od];
  }
  return te_read(t, t->ndim, idx);
}

int topi_layout_parse(const char *op, const char *s, TopiLayout *out) {
  memset(out, 0, sizeof *out);
  if (!s || !*s) return kiln_set_error("%s: empty layout", op);
  const char *p = s;
  while (*p) {
    int64_t f = 0;
    bool has_num = false;
    while (isdigit((unsigned char)*p)) {
      f = f * 10 + (*p - '0');
      has_num = true;
      if (f > 1 << 20) return kiln_set_error("%s: layout '%s': factor too large", op, s);
      p++;
    }
    char c = *p;
    if (!isalpha((unsigned char)c))
      return kiln_set_error("%s: layout '%s': expected a letter at '%s'", op, s, p);
    if (out->ndim >= 16) return kiln_set_error("%s: layout '%s' has too many axes", op, s);
    if (isupper((unsigned char)c)) {
      if (has_num)
        return kiln_set_error("%s: layout '%s': primal axis '%c' cannot have a factor", op, s, c);
    } else if (!has_num || f <= 0) {
      return kiln_set_error("%s: layout '%s': sub-axis '%c' needs a positive factor (e.g. 16%c)", op,
                            s, c, c);
    }
    for (int i = 0; i < out->ndim; i++)
      if (out->axis[i] == c) return kiln_set_error("%s: layout '%s': axis '%c' appears twice", op, s, c);
    out->axis[out->ndim] = c;
    out->factor[out->ndim] = isupper((unsigned char)c) ? 0 : f;
    out->ndim++;
    p++;
  }
  for (int i = 0; i < out->ndim; i++)
    if (islower((unsigned char)out->axis[i]) && topi_layout_find(out, (char)toupper((unsigned char)out->axis[i])) < 0)
      return kiln_set_error("%s: layout '%s': sub-axis '%c' has no primal axis '%c'", op, s, out->axis[i],
                            toupper((unsigned char)out->axis[i]));
  return 0;
}

int topi_layout_find(const TopiLayout *l, char axis) {
  for (int i = 0; i < l->ndim; i++)
    if (l->axis[i] == axis) return i;
  return -1;
}
