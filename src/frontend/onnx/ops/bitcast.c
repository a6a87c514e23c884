/*
 * bitcast.c - ONNX BitCast (opset 26): a tensor's bits read as another
 * type of the same width.
 *
 * Kiln's graph has no reinterpreting operation (every op computes values),
 * so a bit cast between a float and an integer type is computed exactly
 * from the value, with ordinary graph ops in float64 and int64:
 *
 *   float -> bits: the exponent e of |x| by bisection (a few compares of
 *     |x| with powers of two, no log2), the significand n = |x| / 2^(e - M)
 *     (exact: a division by a power of two of a value with M + 1 bits),
 *     the code (e - emin) * 2^M + n (which also covers subnormals), and the
 *     sign as the top bit, read signed or unsigned as the target is;
 *   bits -> float: exponent field and mantissa by shift and mask, the value
 *     n * 2^(e - bias - M) with the power of two taken from a table.
 *
 * +-0, subnormals, +-Inf come out bit-exact; a NaN comes out as the
 * canonical quiet NaN of its sign (its payload is not kept: the test is
 * isnan, not the bits).  Integer types of the same width convert by value
 * with wraparound (the same bits); bool and uint8/int8 are the same byte,
 * and a byte other than 0 or 1 read as bool is true.  Different widths
 * (which change the shape) are refused.
 */
#include "ops.h"

typedef struct FloatBits {
  int bits, ebits, mbits, bias;
} FloatBits;

static const FloatBits *float_bits(DType t) {
  static const FloatBits f16 = {16, 5, 10, 15}, f32 = {32, 8, 23, 127}, f64 = {64, 11, 52, 1023};
  if (!dt_is_float(t)) return NULL;
  return t.bits == 16 ? &f16 : t.bits == 32 ? &f32 : t.bits == 64 ? &f64 : NULL;
}

static GNode *f64(Importer *im, double v) { return imp_scalar(im, v, DT_F64); }
static GNode *i64(Importer *im, double v) { return imp_scalar(im, v, DT_I64); }

/* x (a float type) -> its bits as the integer type t of the same width. */
static GNode *float_to_bits(Importer *im, GNode *x, const FloatBits *f, DType t) {
  GNode *xd = imp_cast(im, x, DT_F64);
  GNode *a = un(im, "abs", xd);
  int emin = 1 - f->bias, span = (1 << f->ebits) - 3; /* largest e - emin */
  /* bisection: p = 2^e, the largest power of two <= |x| (2^emin below) */
  GNode *p = f64(im, ldexp(1, emin)), *k = i64(im, 0);
  int top = 0;
  while ((2 << top) <= span) top++;
  for (int b = top; b >= 0; b--) {
    int step = 1 << b;
    /* 2^1024 overflows a double: scale in two halves */
    GNode *next = step > 512 ? bin(im, "multiply", bin(im, "multiply", p, f64(im, ldexp(1, step / 2))), f64(im, ldexp(1, step / 2)))
                             : bin(im, "multiply", p, f64(im, ldexp(1, step)));
    GNode *ok = bin(im, "logical_and", bin(im, "greater_equal", a, next),
                    bin(im, "less_equal", bin(im, "add", k, i64(im, step)), i64(im, span)));
    p = imp_where(im, ok, next, p);
    k = imp_where(im, ok, bin(im, "add", k, i64(im, step)), k);
  }
  GNode *n = bin(im, "divide", a, bin(im, "divide", p, f64(im, ldexp(1, f->mbits)))); /* exact */
  GNode *special = bin(im, "logical_or", un(im, "isinf", xd), un(im, "isnan", xd));
  GNode *big = imp_where(im, special, f64(im, 0), n); /* no int conversion of Inf or NaN */
  GNode *mag = bin(im, "add", bin(im, "multiply", k, i64(im, ldexp(1, f->mbits))), imp_cast(im, big, DT_I64));
  int64_t expmask = ((int64_t)((1 << f->ebits) - 1)) << f->mbits;
  mag = imp_where(im, un(im, "isinf", xd), i64(im, (double)expmask), mag);
  mag = imp_where(im, un(im, "isnan", xd), i64(im, (double)(expmask | ((int64_t)1 << (f->mbits - 1)))), mag);
  /* the sign: x < 0, or -0 (1/x is -Inf); a NaN is the positive one */
  GNode *neg = bin(im, "logical_or", bin(im, "less", xd, f64(im, 0)),
                   bin(im, "logical_and", bin(im, "equal", xd, f64(im, 0)),
                       bin(im, "less", bin(im, "divide", f64(im, 1), xd), f64(im, 0))));
  double half = ldexp(1, f->bits - 1);
  GNode *out;
  if (t.code == kDLInt) /* signed: the top bit set is mag - 2^(w-1) */
    out = imp_where(im, neg, bin(im, "add", mag, i64(im, -half)), mag);
  else if (f->bits < 64)
    out = imp_where(im, neg, bin(im, "add", mag, i64(im, half)), mag);
  else { /* uint64: add 2^63 in uint64 */
    GNode *m = imp_cast(im, mag, DT_U64);
    out = imp_where(im, neg, bin(im, "add", m, imp_scalar(im, half, DT_U64)), m);
  }
  return imp_cast(im, out, t);
}

/* v (an integer type of f's width) -> the float whose bits it holds. */
static GNode *bits_to_float(Importer *im, GNode *v, const FloatBits *f, DType t) {
  DType vt = v->type.dtype;
  double half = ldexp(1, f->bits - 1);
  GNode *neg, *mag;
  if (vt.code == kDLInt) {
    GNode *w = imp_cast(im, v, DT_I64);
    neg = bin(im, "less", w, i64(im, 0));
    mag = imp_where(im, neg, bin(im, "subtract", w, i64(im, -half)), w);
  } else {
    GNode *w = imp_cast(im, v, DT_U64);
    neg = bin(im, "greater_equal", w, imp_scalar(im, half, DT_U64));
    mag = imp_cast(im, imp_where(im, neg, bin(im, "subtract", w, imp_scalar(im, half, DT_U64)), w), DT_I64);
  }
  GNode *e = bin(im, "right_shift", mag, i64(im, f->mbits));
  GNode *m = bin(im, "bitwise_and", mag, i64(im, ldexp(1, f->mbits) - 1));
  int ne = 1 << f->ebits;
  void *data;
  int64_t shp[1] = {ne};
  GNode *tab = imp_new_const(im, DT_F64, 1, shp, &data);
  if (!tab) return NULL;
  for (int i = 0; i < ne; i++) ((double *)data)[i] = ldexp(1, (i ? i : 1) - f->bias - f->mbits);
  GNode *args[2] = {tab, e};
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 0);
  GNode *scale = imp_call(im, "take", 2, args, a);
  GNode *md = imp_cast(im, m, DT_F64);
  GNode *n = imp_where(im, bin(im, "equal", e, i64(im, 0)), md, bin(im, "add", md, f64(im, ldexp(1, f->mbits))));
  GNode *val = bin(im, "multiply", n, scale);
  GNode *special = imp_where(im, bin(im, "equal", m, i64(im, 0)), f64(im, INFINITY), f64(im, NAN));
  val = imp_where(im, bin(im, "equal", e, i64(im, ne - 1)), special, val);
  val = bin(im, "multiply", val, imp_where(im, neg, f64(im, -1), f64(im, 1))); /* keeps -0 */
  return imp_cast(im, val, t);
}

int onnx_h_BitCast(Importer *im) {
  GNode *x = in0(im);
  DType to;
  if (imp_attr_dtype(im, "to", 0, &to)) return -1;
  DType from = x->type.dtype;
  int wf = dt_is_bool(from) ? 8 : from.bits, wt = dt_is_bool(to) ? 8 : to.bits;
  if (wf != wt)
    return imp_error(im, "a bit cast from %s to %s changes the element width (%d to %d bits) and so the shape: "
                         "not supported (Kiln casts between types of one width)",
                     dt_str(from), dt_str(to), wf, wt);
  const FloatBits *ff = float_bits(from), *ft = float_bits(to);
  if (ff && ft) return out0(im, x); /* the same float type: same bits */
  if (ff) return out0(im, float_to_bits(im, x, ff, to));
  if (ft) return out0(im, bits_to_float(im, x, ft, to));
  if (!dt_is_intlike(from) || !dt_is_intlike(to))
    return imp_error(im, "a bit cast from %s to %s is not supported", dt_str(from), dt_str(to));
  if (dt_is_bool(to)) return out0(im, imp_cast(im, x, to)); /* nonzero byte: true */
  if (to.code == kDLInt && from.code == kDLUInt && to.bits < 64) { /* wrap without an out-of-range cast */
    GNode *w = imp_cast(im, x, DT_I64);
    double half = ldexp(1, to.bits - 1);
    w = imp_where(im, bin(im, "greater_equal", w, i64(im, half)), bin(im, "subtract", w, i64(im, 2 * half)), w);
    return out0(im, imp_cast(im, w, to));
  }
  return out0(im, imp_cast(im, x, to)); /* signed -> unsigned wraps in C; uint64 -> int64 as the compiler does */
}
