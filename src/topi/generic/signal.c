/*
 * signal.c - signal kernels whose sizes are values given at run time
 * (docs/symbolic_shapes.md, section 4b): the STFT whose frame_step or
 * frame_length is a graph input.  The compile-time STFT is a product with
 * constant cosine and sine matrices (frontend/onnx/ops/signal.c); with
 * the frame length known only at run time the twiddles are computed in
 * the kernel from the length it reads.
 */
#include <math.h>

#include "../topi.h"

/* One integer element of a 0-d or one-element tensor, as int64. */
static Expr *scalar_i64(Tensor *t) {
  Expr *zero = ir_i32(0);
  return ir_cast(DT_I64, t->ndim ? te_read1(t, zero) : te_read(t, 0, &zero));
}

Tensor *topi_stft_dyn(Tensor *x, Tensor *step, Tensor *length, Tensor *window, int64_t lmax, Expr **oshape) {
  const char *op = "dyn.stft";
  if (!x || !step || !length || !oshape) return NULL;
  int64_t len, c;
  if (x->ndim != 3 || !ir_is_const_int(x->shape[1], &len) || !ir_is_const_int(x->shape[2], &c) || (c != 1 && c != 2))
    return kiln_set_error("%s: the signal must be [batch, length, 1 or 2] with a static length", op), NULL;
  if (!dt_is_int(step->dtype) || !dt_is_int(length->dtype) || step->ndim > 1 || length->ndim > 1)
    return kiln_set_error("%s: frame_step and frame_length must be one integer element each", op), NULL;
  if (window && (window->ndim != 1 || !dt_is_float(window->dtype)))
    return kiln_set_error("%s: the window must be a 1-D float tensor", op), NULL;
  if (lmax < 1 || lmax > len) return kiln_set_error("%s: the frames' bound %lld is outside [1, %lld]", op, (long long)lmax, (long long)len), NULL;
  Expr **v = te_axis_vars(4, (const char *[]){"b", "f", "k", "part"});
  IterVar *rj = te_reduce_axis_c(lmax, "rj");
  Expr *j = ir_cast(DT_I64, rj->var), *st = scalar_i64(step), *L = scalar_i64(length);
  /* sample f * step + j of the frame, inside the signal for the values
   * the shape function takes (clamped for the masked rest) */
  Expr *pos = ir_add(ir_mul(ir_cast(DT_I64, v[1]), st), j);
  Expr *p = ir_cast(DT_I32, ir_max(ir_min(pos, ir_i64(len - 1)), ir_i64(0)));
  /* the twiddle e^{-2 pi i k j / L}, its angle reduced mod L in integers */
  const DType f = DT_F64;
  Expr *kj = ir_mod(ir_mul(ir_cast(DT_I64, v[2]), j), ir_max(L, ir_i64(1)));
  Expr *th = ir_div(ir_mul(ir_float(2 * M_PI, f), ir_cast(f, kj)), ir_cast(f, ir_max(L, ir_i64(1))));
  Expr *cs = ir_call1(INTRIN_cos, th), *sn = ir_call1(INTRIN_sin, th);
  Expr *xr = ir_cast(f, te_read3(x, v[0], p, ir_i32(0)));
  Expr *xi = c == 2 ? ir_cast(f, te_read3(x, v[0], p, ir_i32(1))) : NULL;
  /* (xr + i xi)(cos - i sin) */
  Expr *re = ir_mul(xr, cs), *im = ir_sub(ir_float(0, f), ir_mul(xr, sn));
  if (xi) {
    re = ir_add(re, ir_mul(xi, sn));
    im = ir_add(im, ir_mul(xi, cs));
  }
  Expr *val = ir_select(ir_eq(v[3], ir_i32(0)), re, im);
  if (window) val = ir_mul(val, ir_cast(f, te_read1(window, ir_cast(DT_I32, ir_min(j, ir_i64(lmax - 1))))));
  Expr *src = ir_select(ir_lt(j, L), ir_cast(x->dtype, val), ir_cast(x->dtype, ir_i32(0)));
  return te_compute("T_stft", 4, oshape, v, ir_sum(src, 1, (IterVar *[]){rj}), "stft");
}
