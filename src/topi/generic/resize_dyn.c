/*
 * resize_dyn.c - ONNX Resize whose scales or sizes are given at run time
 * (docs/symbolic_shapes.md, section 4e).
 *
 * The output's resized dimensions are run-time sizes (the shape Vars the
 * generated code binds from the output tensor); the coordinate transform
 * reads its scale in the kernel: the scales tensor's element (a float
 * read), out / in for sizes, or, for keep_aspect_ratio_policy, the
 * smallest (not_larger) or largest (not_smaller) of sizes[j] / in[j] over
 * the named axes.  The formulas are the static topi_resize's
 * (transform.c), with each decision on the output size (pytorch_half_pixel
 * and align_corners at an output of 1) a select on the run-time size.  An
 * axis named but left at scale 1 goes through the same arithmetic, which
 * is then the identity (a coordinate with no fraction).
 *
 * The interpolation after the coordinates (nearest rounding, the linear
 * and cubic taps and weights) is topi_resize_interp, which the static
 * topi_resize shares.
 *
 * Input dimensions along resized axes are constants; the others may be
 * symbolic (a previous resize along another axis: the importer chains one
 * node per axis for linear and cubic, which are separable, and resizes
 * every axis in one nearest node).
 */
#include <math.h>
#include <string.h>

#include "../topi.h"

static Expr *f64(double v) { return ir_float(v, DT_F64); }

/* The input coordinate (float64) of output index v on an axis of input
 * size in, output size out (float64) and scale. */
static Expr *coord(TopiCoordMode mode, Expr *v, int64_t in, Expr *out, Expr *scale) {
  Expr *x = ir_cast(DT_F64, v);
  Expr *hp = ir_sub(ir_div(ir_add(x, f64(0.5)), scale), f64(0.5));
  switch (mode) {
  case TOPI_COORD_HALF_PIXEL: return hp;
  case TOPI_COORD_PYTORCH_HALF_PIXEL: return ir_select(ir_le(out, f64(1)), f64(0), hp);
  case TOPI_COORD_ALIGN_CORNERS: {
    /* ONNX takes the resized length as in * scale, unrounded */
    Expr *len = ir_mul(f64((double)in), scale);
    return ir_select(ir_or(ir_le(out, f64(1)), ir_le(len, f64(1))), f64(0),
                     ir_div(ir_mul(x, f64((double)(in - 1))), ir_sub(len, f64(1))));
  }
  case TOPI_COORD_ASYMMETRIC: return ir_div(x, scale);
  case TOPI_COORD_TF_HALF_PIXEL_FOR_NEAREST: return ir_div(ir_add(x, f64(0.5)), scale);
  case TOPI_COORD_HALF_PIXEL_SYMMETRIC: {
    Expr *adj = ir_div(out, ir_mul(f64((double)in), scale));
    return ir_add(ir_mul(f64((double)in / 2), ir_sub(f64(1), adj)), hp);
  }
  }
  KUNREACHABLE();
}

static Expr *clamp_i(Expr *i, int64_t in) { return ir_max(ir_min(i, ir_i32(in - 1)), ir_i32(0)); }

/* The cubic convolution weight of distance s (>= 0) with coefficient a. */
static Expr *cubic_w(Expr *s, double a) {
  Expr *A = f64(a), *one = f64(1);
  Expr *near = ir_add(ir_mul(ir_mul(ir_sub(ir_mul(ir_add(A, f64(2)), s), ir_add(A, f64(3))), s), s), one);
  Expr *far = ir_sub(ir_mul(ir_add(ir_mul(ir_sub(ir_mul(A, s), ir_mul(f64(5), A)), s), ir_mul(f64(8), A)), s),
                     ir_mul(f64(4), A));
  return ir_select(ir_le(s, one), near, ir_select(ir_lt(s, f64(2)), far, f64(0)));
}

/* The scale (float64) of element i of the value tensor, which names axis
 * axes[i]. */
static Expr *scale_of(Tensor *val, TopiResizeBy by, int nax, const int *axes, const int64_t *in_shape, int i) {
  switch (by) {
  case TOPI_RESIZE_BY_SCALES: return ir_cast(DT_F64, te_read1(val, ir_i32(i)));
  case TOPI_RESIZE_BY_SIZES: /* the output size over the input's */
    return ir_div(ir_cast(DT_F64, te_read1(val, ir_i32(i))), f64((double)in_shape[axes[i]]));
  case TOPI_RESIZE_NOT_LARGER:
  case TOPI_RESIZE_NOT_SMALLER: {
    Expr *r = NULL;
    for (int j = 0; j < nax; j++) {
      Expr *q = ir_div(ir_cast(DT_F64, te_read1(val, ir_i32(j))), f64((double)in_shape[axes[j]]));
      r = !r ? q : by == TOPI_RESIZE_NOT_LARGER ? ir_min(r, q) : ir_max(r, q);
    }
    return r;
  }
  }
  KUNREACHABLE();
}

/* The interpolation of both resizes (topi_resize, topi_resize_dyn): see
 * topi.h. */
Expr *topi_resize_interp(Tensor *x, Expr **v, int na, const int *active, const int64_t *in, Expr **cs,
                         TopiResizeMethod method, TopiNearestMode nearest, double cubic_a, bool exclude_outside) {
  int nd = x->ndim;
  Expr **base = KNEWN(Expr *, nd > 0 ? nd : 1);
  for (int d = 0; d < nd; d++) base[d] = v[d];
  if (method != TOPI_RESIZE_NEAREST && na > 3)
    return kiln_set_error("resize: %d resized axes; interpolation handles up to 3", na), NULL;
  if (method == TOPI_RESIZE_NEAREST) {
    for (int k = 0; k < na; k++) {
      Expr *c = cs[k], *r;
      switch (nearest) {
      case TOPI_NEAREST_ROUND_PREFER_FLOOR: r = ir_call1(INTRIN_ceil, ir_sub(c, f64(0.5))); break;
      case TOPI_NEAREST_ROUND_PREFER_CEIL: r = ir_call1(INTRIN_floor, ir_add(c, f64(0.5))); break;
      case TOPI_NEAREST_FLOOR: r = ir_call1(INTRIN_floor, c); break;
      case TOPI_NEAREST_CEIL: r = ir_call1(INTRIN_ceil, c); break;
      default: return kiln_set_error("resize: unknown nearest mode %d", (int)nearest), NULL;
      }
      /* clamp in float first: a far coordinate must not overflow int32 */
      r = ir_max(ir_min(r, f64((double)(in[k] - 1))), f64(0));
      base[active[k]] = ir_cast(DT_I32, r);
    }
    return te_read(x, nd, base);
  }
  int taps = method == TOPI_RESIZE_LINEAR ? 2 : 4;
  Expr *i0[3], *frac[3], *lets_v[9], *lets_e[9];
  int nlets = 0;
  for (int k = 0; k < na; k++) {
    Expr *c = cs[k];
    if (method == TOPI_RESIZE_LINEAR) c = ir_max(ir_min(c, f64((double)(in[k] - 1))), f64(0));
    Expr *cv = ir_var(kfmt("c%d", k), DT_F64);
    lets_v[nlets] = cv;
    lets_e[nlets++] = c;
    Expr *iv = ir_var(kfmt("i%d", k), DT_I32);
    lets_v[nlets] = iv;
    lets_e[nlets++] = ir_cast(DT_I32, ir_call1(INTRIN_floor, cv));
    i0[k] = method == TOPI_RESIZE_LINEAR ? iv : ir_sub(iv, ir_i32(1));
    frac[k] = ir_sub(cv, ir_cast(DT_F64, iv));
  }
  Expr *w[3][4];
  for (int k = 0; k < na; k++) {
    for (int j = 0; j < taps; j++) {
      if (method == TOPI_RESIZE_LINEAR) {
        w[k][j] = j == 0 ? ir_sub(f64(1), frac[k]) : frac[k];
      } else {
        /* tap j sits at i0 + j, distance |frac + 1 - j| */
        w[k][j] = cubic_w(ir_call1(INTRIN_fabs, ir_sub(ir_add(frac[k], f64(1)), f64(j))), cubic_a);
        if (exclude_outside) {
          Expr *pos = ir_add(i0[k], ir_i32(j));
          w[k][j] = ir_select(ir_and(ir_ge(pos, ir_i32(0)), ir_lt(pos, ir_i32(in[k]))), w[k][j], f64(0));
        }
      }
    }
    if (method == TOPI_RESIZE_CUBIC && exclude_outside) { /* renormalize */
      Expr *sum = w[k][0];
      for (int j = 1; j < taps; j++) sum = ir_add(sum, w[k][j]);
      Expr *sv = ir_var(kfmt("ws%d", k), DT_F64);
      for (int j = 0; j < taps; j++) w[k][j] = ir_div(w[k][j], sv);
      lets_v[nlets] = sv;
      lets_e[nlets++] = sum;
    }
  }
  int ncomb = 1;
  for (int k = 0; k < na; k++) ncomb *= taps;
  Expr *acc = NULL;
  for (int cb = 0; cb < ncomb; cb++) {
    int rem = cb;
    Expr **idx = KNEWN(Expr *, nd > 0 ? nd : 1);
    for (int d = 0; d < nd; d++) idx[d] = v[d];
    Expr *wt = NULL;
    for (int k = na - 1; k >= 0; k--) {
      int j = rem % taps;
      rem /= taps;
      idx[active[k]] = clamp_i(ir_add(i0[k], ir_i32(j)), in[k]);
      wt = wt ? ir_mul(wt, w[k][j]) : w[k][j];
    }
    Expr *term = ir_mul(ir_cast(DT_F64, te_read(x, nd, idx)), wt ? wt : f64(1));
    acc = acc ? ir_add(acc, term) : term;
  }
  Expr *body = ir_cast(x->dtype, acc);
  /* the lets of the weights' sums come last: they use the coordinates */
  for (int i = nlets - 1; i >= 0; i--) body = ir_let(lets_v[i], lets_e[i], body);
  return body;
}

Tensor *topi_resize_dyn(Tensor *x, Tensor *val, Expr **oshape, TopiResizeBy by, int nax, const int *axes,
                        const int64_t *in_shape, int nres, const int *res, TopiResizeMethod method,
                        TopiCoordMode coord_mode, TopiNearestMode nearest, double cubic_a, bool exclude_outside) {
  const char *op = "dyn.resize";
  if (!x || !val || !oshape) return NULL;
  int nd = x->ndim;
  int64_t nv = -1;
  if (val->ndim != 1 || !ir_is_const_int(val->shape[0], &nv) || nv != nax ||
      (by == TOPI_RESIZE_BY_SCALES ? !dt_is_float(val->dtype) : !dt_is_int(val->dtype)))
    return kiln_set_error("%s: the %s must be a 1-D %s tensor of %d elements", op,
                          by == TOPI_RESIZE_BY_SCALES ? "scales" : "sizes", by == TOPI_RESIZE_BY_SCALES ? "float" : "integer",
                          nax),
           NULL;
  if (method != TOPI_RESIZE_NEAREST && !dt_is_float(x->dtype))
    return kiln_set_error("%s: linear and cubic interpolation need a float tensor, got %s", op, dt_str(x->dtype)), NULL;
  if (nres < 0 || nres > nax || (method != TOPI_RESIZE_NEAREST && nres > 3))
    return kiln_set_error("%s: %d resized axes; interpolation handles up to 3 per node", op, nres), NULL;
  int64_t in[64];
  int active[64], elem[64];
  if (nd > 64) return kiln_set_error("%s: rank %d", op, nd), NULL;
  for (int k = 0; k < nres; k++) {
    int i = res[k];
    if (i < 0 || i >= nax || axes[i] < 0 || axes[i] >= nd) return kiln_set_error("%s: bad resized axis", op), NULL;
    active[k] = axes[i];
    elem[k] = i;
    if (!ir_is_const_int(x->shape[axes[i]], &in[k]) || in[k] != in_shape[axes[i]] || in[k] < 1)
      return kiln_set_error("%s: input dimension %d must be the constant %lld", op, axes[i], (long long)in_shape[axes[i]]),
             NULL;
  }
  Expr **v = te_axis_vars(nd, NULL);
  Expr *cs[64];
  for (int k = 0; k < nres; k++) {
    int d = active[k];
    Expr *out = ir_cast(DT_F64, oshape[d]);
    cs[k] = coord(coord_mode, v[d], in[k], out, scale_of(val, by, nax, axes, in_shape, elem[k]));
  }
  Expr *body = topi_resize_interp(x, v, nres, active, in, cs, method, nearest, cubic_a, exclude_outside);
  return body ? te_compute("T_resize", nd, oshape, v, body, "injective") : NULL;
}
