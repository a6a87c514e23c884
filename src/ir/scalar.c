/*
 * scalar.c - the value semantics of scalar operations, shared by Kiln's
 * two interpreters: ir_eval (eval.c, the simplifier's test oracle) and the
 * operator library's topi_eval (constant folding).  One definition keeps
 * what folding computes identical to what the generated C computes.
 *
 * A value is an int64 (integers, bool; the canonical sign-extended bit
 * pattern of its type) or a double (floats, rounded to float32 when the
 * type is).  Operations whose C result is undefined (a zero divisor, an
 * overflowing quotient, a shift by the width) report why instead of
 * producing a number.
 */
#include <math.h>

#include "ir.h"

int64_t ir_scalar_norm(uint64_t u, DType t) {
  if (dt_is_bool(t)) return (u & 1) != 0;
  int b = t.bits;
  if (b >= 64) return (int64_t)u;
  u &= ((uint64_t)1 << b) - 1;
  if (t.code == kDLInt && (u >> (b - 1)) & 1) u |= ~(uint64_t)0 << b;
  return (int64_t)u;
}

double ir_scalar_round(double v, DType t) { return t.bits == 32 ? (double)(float)v : v; }

double ir_scalar_as_double(IrScalar v, DType t) {
  if (dt_is_float(t)) return v.f;
  if (t.code == kDLInt || dt_is_bool(t)) return (double)v.i;
  return (double)(uint64_t)v.i;
}

const char *ir_scalar_int_div(ExprKind k, int64_t a, int64_t b, DType t, int64_t *out) {
  if (b == 0) return "integer division by zero";
  if (t.code != kDLInt) {
    uint64_t x = (uint64_t)a, y = (uint64_t)b;
    *out = ir_scalar_norm((k == EK_Div || k == EK_FloorDiv) ? x / y : x % y, t);
    return NULL;
  }
  if (b == -1 && a == dt_int_min(t)) return "integer division overflows";
  int64_t q = a / b, r = a % b;
  bool floor_fix = r != 0 && ((r < 0) != (b < 0)); /* truncation went the wrong way */
  if (k == EK_Div)
    *out = q;
  else if (k == EK_Mod)
    *out = r;
  else if (k == EK_FloorDiv)
    *out = floor_fix ? q - 1 : q;
  else
    *out = floor_fix ? r + b : r;
  *out = ir_scalar_norm((uint64_t)*out, t);
  return NULL;
}

/* bfloat16: the upper half of a float32.  Rounding to nearest even, as
 * AVX512-BF16's VCVTNE2PS2BF16 does; a NaN stays a (quiet) NaN. */
uint32_t ir_bf16_round(float x) {
  union {
    float f;
    uint32_t u;
  } v = {x};
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (v.u >> 16) | 0x40u;
  return (v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16;
}

float ir_bf16_float(uint32_t h) {
  union {
    uint32_t u;
    float f;
  } v = {(h & 0xffffu) << 16};
  return v.f;
}

const char *ir_scalar_call(Intrinsic op, DType t, DType at, const IrScalar *a, IrScalar *out) {
  double x = a[0].f, y = a[1].f, r = 0;
  out->i = 0;
  out->f = 0;
  switch (op) {
  case INTRIN_exp: case INTRIN_exp_normal: case INTRIN_exp_approx: r = exp(x); break;
  case INTRIN_log: r = log(x); break;
  case INTRIN_sqrt: r = sqrt(x); break;
  case INTRIN_rsqrt: r = 1.0 / sqrt(x); break;
  case INTRIN_tanh: r = tanh(x); break;
  case INTRIN_erf: r = erf(x); break;
  case INTRIN_pow: r = pow(x, y); break;
  case INTRIN_fabs:
    if (!dt_is_float(t)) {
      if (t.code == kDLInt && a[0].i == dt_int_min(t)) return "the absolute value overflows";
      out->i = t.code == kDLInt && a[0].i < 0 ? -a[0].i : a[0].i;
      return NULL;
    }
    r = fabs(x);
    break;
  case INTRIN_floor: r = floor(x); break;
  case INTRIN_ceil: r = ceil(x); break;
  case INTRIN_round: r = nearbyint(x); break;
  case INTRIN_trunc: r = trunc(x); break;
  case INTRIN_sigmoid: r = 1.0 / (1.0 + exp(-x)); break;
  case INTRIN_sin: r = sin(x); break;
  case INTRIN_cos: r = cos(x); break;
  case INTRIN_tan: r = tan(x); break;
  case INTRIN_asin: r = asin(x); break;
  case INTRIN_acos: r = acos(x); break;
  case INTRIN_atan: r = atan(x); break;
  case INTRIN_sinh: r = sinh(x); break;
  case INTRIN_cosh: r = cosh(x); break;
  case INTRIN_asinh: r = asinh(x); break;
  case INTRIN_acosh: r = acosh(x); break;
  case INTRIN_atanh: r = atanh(x); break;
  case INTRIN_fmod: r = fmod(x, y); break;
  case INTRIN_isnan: out->i = dt_is_float(at) && isnan(x); return NULL;
  case INTRIN_isinf: out->i = dt_is_float(at) && isinf(x); return NULL;
  case INTRIN_likely: out->i = a[0].i; return NULL;
  case INTRIN_shift_left:
  case INTRIN_shift_right: {
    int64_t s = a[1].i;
    if (s < 0 || s >= t.bits) return "shift amount out of range";
    if (op == INTRIN_shift_left)
      out->i = ir_scalar_norm((uint64_t)a[0].i << s, t);
    else if (t.code == kDLInt)
      out->i = a[0].i >> s; /* arithmetic, as gcc does */
    else
      out->i = ir_scalar_norm((uint64_t)a[0].i >> s, t);
    return NULL;
  }
  case INTRIN_bitwise_and: out->i = ir_scalar_norm((uint64_t)(a[0].i & a[1].i), t); return NULL;
  case INTRIN_bitwise_or: out->i = ir_scalar_norm((uint64_t)(a[0].i | a[1].i), t); return NULL;
  case INTRIN_bitwise_xor: out->i = ir_scalar_norm((uint64_t)(a[0].i ^ a[1].i), t); return NULL;
  case INTRIN_bitwise_not: out->i = ir_scalar_norm(~(uint64_t)a[0].i, t); return NULL;
  case INTRIN_bf16_pack2:
    out->i = (int64_t)(ir_bf16_round((float)x) | (ir_bf16_round((float)y) << 16));
    return NULL;
  case INTRIN_bf16_dot2: {
    uint32_t p = (uint32_t)a[0].i, q = (uint32_t)a[1].i;
    out->f = (double)(ir_bf16_float(p) * ir_bf16_float(q) + ir_bf16_float(p >> 16) * ir_bf16_float(q >> 16));
    return NULL;
  }
  case INTRIN_bf16_half:
    out->f = (double)ir_bf16_float((uint32_t)a[0].i >> ((a[1].i & 1) * 16));
    return NULL;
  case INTRIN_u8s8_dot4: {
    uint32_t p = (uint32_t)a[0].i, q = (uint32_t)a[1].i;
    int64_t sum = 0;
    for (int j = 0; j < 4; j++) sum += (int64_t)((p >> (8 * j)) & 0xffu) * (int8_t)(uint8_t)(q >> (8 * j));
    out->i = sum;
    return NULL;
  }
  case INTRIN_prefetch: return NULL; /* a hint: int32 0 */
  case INTRIN__COUNT: return "unknown intrinsic";
  }
  if (!dt_is_float(t)) return "a math intrinsic on an integer type";
  out->f = ir_scalar_round(r, t);
  return NULL;
}
