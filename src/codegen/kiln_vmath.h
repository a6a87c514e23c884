/*
 * kiln_vmath.h - Kiln's own float32 exp, tanh, erf and sigmoid, written as
 * branch-free C so that a loop over vector lanes vectorizes.
 *
 * This file is C source that generated code carries: the C code generator
 * pastes it, verbatim, into every translation unit whose kernels call one of
 * these functions on float32 (src/codegen/codegen_c_intrin.c), and a lane loop
 * `for (l = 0; l < 16; l++) r[l] = kiln_expf(a[l]);` over GCC vector
 * extensions then compiles to straight SIMD code (AVX-512: 16 lanes per
 * instruction) instead of 16 calls into libm.  It needs no libm and no
 * other header than <stdint.h>, so a freestanding C export can carry it too.
 * The unit tests include it directly to measure its accuracy.
 *
 * Why not SLEEF (libsleef-dev): SLEEF is a library to link, its vector
 * entry points are per instruction set (Sleef_expf16_u10avx512f, ...) and
 * need the vector width at code-generation time, and a C file exported for
 * a machine without it could not use it.  These functions are 60 lines of
 * portable C whose vector width is whatever the compiler chooses.
 *
 * How, and the accuracy (max error in float32 ulps against the exact
 * result, measured by the unit test kiln_vmath_accuracy on a sweep of
 * every 7th float32 in the range and bounded there; see docs/vmath.md):
 *   kiln_expf     Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, a
 *                 degree-6 polynomial for e^r, 2^n in two factors so that
 *                 subnormal results come out right; +inf above 88.72,
 *                 0 below -103.97.                              <= 1 ulp
 *   kiln_tanhf    |x| < 0.625: Cephes' odd polynomial; else
 *                 1 - 2 / (e^2|x| + 1) with the sign of x.      <= 2 ulp
 *   kiln_sigmoidf e = e^-|x| (kiln_expf's method, one scale factor
 *                 2^(n+64) as the argument is <= 0); 1 / (1 + e),
 *                 or e / (1 + e) for x < 0, so that neither side
 *                 overflows.                                    <= 3 ulp
 *   kiln_erff     |x| < 1: x P(x^2), P of degree 6; 1 <= |x| < 4:
 *                 1 - e^(-x^2) Q(|x| - 1), Q of degree 8 fitted to
 *                 erfc(x) e^(x^2) (no division); |x| >= 4: +-1.
 *                                    <= 3 ulp (<= 1.15 on [1, 4))
 * NaN gives NaN; +-inf give the limits.  Both sides of each select are
 * computed (no branches), which is what lets the lane loop vectorize.
 */
#ifndef KILN_VMATH_H
#define KILN_VMATH_H

#include <stdint.h>

/* The four functions are always inlined: a fused kernel's unrolled
 * epilogue calls them many times, and past GCC's inlining limits it
 * called the scalar function once per lane (an out-of-line call with
 * branches) instead of vectorizing the lane loop. */
#if defined(__GNUC__)
#define KILN_VM_INLINE static inline __attribute__((always_inline))
#else
#define KILN_VM_INLINE static inline
#endif

/* Generated kernels that call these functions are defined with
 * KILN_VM_KERNEL: GCC only, they compile without RTL loop-invariant
 * motion, which hoisted the functions' vector constants out of a
 * convolution's reduction and made the register allocator spill
 * accumulators instead (docs/vmath.md).  Per function, so that the other
 * kernels of a unit keep GCC's default; the functions above are inlined
 * into such a kernel all the same. */
#if defined(__GNUC__) && !defined(__clang__)
#define KILN_VM_KERNEL __attribute__((optimize("no-move-loop-invariants")))
#else
#define KILN_VM_KERNEL
#endif

typedef union kiln_vm_fu {
  float f;
  uint32_t u;
} kiln_vm_fu;

static inline uint32_t kiln_vm_bits(float x) {
  kiln_vm_fu v;
  v.f = x;
  return v.u;
}

static inline float kiln_vm_float(uint32_t u) {
  kiln_vm_fu v;
  v.u = u;
  return v.f;
}

static inline float kiln_vm_abs(float x) { return kiln_vm_float(kiln_vm_bits(x) & 0x7fffffffu); }

/* |m| with the sign of s */
static inline float kiln_vm_copysign(float m, float s) {
  return kiln_vm_float((kiln_vm_bits(m) & 0x7fffffffu) | (kiln_vm_bits(s) & 0x80000000u));
}

/* e^xc = p * 2^ni for a clamped xc in [-103.97, 88.72]: the range
 * reduction and polynomial kiln_expf and kiln_sigmoidf share; returns p
 * (in [0.7, 1.5]) and ni in *ni. */
KILN_VM_INLINE float kiln_vm_exp_reduced(float xc, int32_t *ni) {
  /* n = round(x / ln2): adding 1.5 * 2^23 leaves n in the low mantissa bits */
  const float magic = 12582912.0f;
  float t = xc * 1.44269504088896341f + magic;
  float n = t - magic;
  *ni = (int32_t)(kiln_vm_bits(t) - kiln_vm_bits(magic));
  /* r = x - n ln2 in two steps (ln2's first part has 9 bits: n * it is exact) */
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float z = r * r;
  /* e^r = 1 + r + r^2 P(r), P of degree 4 fitted for relative error on
   * |r| <= ln2/2: 3.1e-9 (0.05 ulp).  Cephes' P of degree 5 (5e-11) was
   * one FMA longer on the FMA ports that bound the sigmoid and erf lane
   * loops, for accuracy a float32 result cannot show. */
  float p = 1.3814174042e-03f;
  p = p * r + 8.3689154458e-03f;
  p = p * r + 4.1668407543e-02f;
  p = p * r + 1.6666518987e-01f;
  p = p * r + 4.9999993336e-01f;
  return p * z + r + 1.0f;
}

/* e^x for an x whose result is a normal float (x in [-87.3, 88.3], as
 * erf's e^(-x^2) for 1 <= |x| <= 4): 2^n is one normal factor and no
 * select is needed, so the same value as kiln_expf for half the work
 * (p * 2^n is exact while it stays normal). */
KILN_VM_INLINE float kiln_vm_exp_normal(float x) {
  int32_t ni;
  float p = kiln_vm_exp_reduced(x, &ni);
  return p * kiln_vm_float((uint32_t)(ni + 127) << 23);
}

/* e^x for x in [-87, 88] (a normal result) to a relative error of 4e-7
 * (1.9e-7 for |x| <= 10; every 7th float32 there): where the target has
 * FMA a one-step reduction, r = fma(-n, ln2, x) with ln2 rounded to
 * float32 (r is off by n * 1.9e-9, most of the error at the ends; the
 * product rounded apart would be off by up to 4e-6), elsewhere
 * kiln_vm_exp_reduced's two steps; e^r as a degree-5 polynomial (relative
 * error 1.1e-7 on |r| <= ln2/2, fitted for it; c0 = c1 = 1),
 * and 2^n added to p's exponent field as an integer (the shifter's low
 * bits hold n, and t's bits shifted by 23 are n << 23).  Five operations
 * fewer than kiln_vm_exp_normal, for a result needed as a ratio's both
 * sides (SiLU's x / (1 + e^-x): 0.89x its time in a lane loop). */
KILN_VM_INLINE float kiln_vm_exp_approx(float x) {
  const float magic = 12582912.0f;
  float t = x * 1.44269504088896341f + magic;
  float n = t - magic;
#if defined(__FMA__) && defined(__GNUC__)
  float r = __builtin_fmaf(-n, 0.693147182f, x);
#else
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
#endif
  float p = 8.312855847e-03f;
  p = p * r + 4.188906401e-02f;
  p = p * r + 1.666711122e-01f;
  p = p * r + 4.999924302e-01f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return kiln_vm_float(kiln_vm_bits(p) + (kiln_vm_bits(t) << 23));
}

/* The argument is not clamped: out of range, the reduction's n is
 * clamped instead (an integer, so the scale factors stay normal floats)
 * and the two selects at the end give the result.  Clamping x itself
 * let GCC fold the clamped paths to constants and run the whole lane
 * loop under AVX-512 masks (three k-register ops and a zero-masked
 * chain): softmax's exponentials ran 1.2x slower than in this form. */
KILN_VM_INLINE float kiln_expf(float x) {
  const float hi = 88.7228394f, lo = -103.972084f;
  int32_t ni;
  float p = kiln_vm_exp_reduced(x, &ni); /* NaN gives NaN here */
  ni = ni < -150 ? -150 : ni;
  ni = ni > 128 ? 128 : ni;
  /* 2^n as 2^n1 * 2^n2, each a normal float for n in [-150, 128] (n1
   * rounds down: the shift is arithmetic, as with every compiler Kiln
   * drives) */
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float s1 = kiln_vm_float((uint32_t)(n1 + 127) << 23);
  float s2 = kiln_vm_float((uint32_t)(n2 + 127) << 23);
  float y = p * s1 * s2;
  y = x > hi ? kiln_vm_float(0x7f800000u) : y;
  return x < lo ? 0.0f : y;
}

KILN_VM_INLINE float kiln_tanhf(float x) {
  float ax = kiln_vm_abs(x);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = p * z * x + x;
  float e = kiln_expf(ax + ax); /* +inf for large |x|: 2 / inf = 0 */
  float big = kiln_vm_copysign(1.0f - 2.0f / (e + 1.0f), x);
  return ax < 0.625f ? small : big;
}

/* e = e^-|x| by kiln_expf's reduction and polynomial, specialized to a
 * non-positive argument: no upper clamp, and 2^n (n in [-150, 0]) as the
 * one normal factor 2^(n+64), the 2^-64 applied to e itself (exact) and
 * after the quotient for x < 0, so a subnormal result still comes out right
 * (one factor and no selects for the overflow side: 1.5x faster than
 * kiln_expf inside the same formula). */
KILN_VM_INLINE float kiln_sigmoidf(float x) {
  const float lo = -103.972084f;
  float t = -kiln_vm_abs(x);
  float tc = t < lo ? lo : t; /* NaN passes through */
  int32_t ni;
  float p = kiln_vm_exp_reduced(tc, &ni);
  float eb = p * kiln_vm_float((uint32_t)(ni + 127 + 64) << 23); /* e * 2^64 */
  float q = 1.0f / (1.0f + eb * 5.42101086242752217e-20f);
  float neg = t < lo ? 0.0f : (eb * q) * 5.42101086242752217e-20f; /* 2^-64 */
  return x >= 0.0f ? q : neg;
}

KILN_VM_INLINE float kiln_erff(float x) {
  float ax = kiln_vm_abs(x);
  float z = x * x;
  float p = 7.854026285e-05f;
  p = p * z - 8.010247648e-04f;
  p = p * z + 5.188334501e-03f;
  p = p * z - 2.685381607e-02f;
  p = p * z + 1.128358527e-01f;
  p = p * z - 3.761262584e-01f;
  p = p * z + 1.128379166e+00f;
  float small = x * p;
  float a = ax > 4.0f ? 4.0f : ax; /* erfc(4) < 2^-25: 1 - it rounds to 1 */
  a = a < 1.0f ? 1.0f : a;
  /* erfc(a) e^(a^2) as a polynomial in u = a - 1 (in a itself, not in
   * 1/a: no divide, which with the select below was 4 % of ConvNeXt's
   * first GELU dense kernel; centred at 1, where erf needs it most
   * accurate, the coefficients fall from 0.43 and do not cancel); fitted
   * for the error of erf, i.e. weighted by e^(-a^2) */
  float u = a - 1.0f;
  float q = 1.068373234e-04f;
  q = q * u - 1.057016319e-03f;
  q = q * u + 4.911180695e-03f;
  q = q * u - 1.511001860e-02f;
  q = q * u + 3.687488728e-02f;
  q = q * u - 7.905331126e-02f;
  q = q * u + 1.543505492e-01f;
  q = q * u - 2.732110761e-01f;
  q = q * u + 4.275835696e-01f;
  /* -a^2 in [-16, -1]; a NaN x stays NaN through the clamps (both
   * compares are false), q and the exponential, so it needs no select */
  float big = kiln_vm_copysign(1.0f - kiln_vm_exp_normal(-a * a) * q, x);
  return ax < 1.0f ? small : big;
}

#endif /* KILN_VMATH_H */
