/*
 * lowp.c - the low-precision ONNX types: bfloat16, float8 (E4M3FN,
 * E4M3FNUZ, E5M2, E5M2FNUZ), float4 (E2M1), int4/uint4 and int2/uint2.
 *
 * C has no arithmetic for them and DLPack/NumPy no common type, so the
 * importer carries each in a wider type (onnx_dtype_carrier):
 *
 *   bfloat16                    its 16 bits in a uint16
 *   float8 types, float4        their bits in a uint8 (float4 in the low 4)
 *   int4, int2 / uint4, uint2   their values in an int8 / uint8
 *
 * A model's inputs, outputs and initializers of these types are carriers
 * (kiln run reads them from ONNX .pb files, unpacking int4/int2/float4
 * one element a byte; it writes outputs as the carrier).  The importer
 * remembers which values hold a carried type (imp_value_lowp) and lets
 * only the ops that convert them - Cast, CastLike, QuantizeLinear,
 * DequantizeLinear - and Identity take them; any other op is refused, so
 * bits are never computed with as if they were numbers.
 *
 * Conversions are built from ordinary graph ops, so they fuse into one
 * elementwise kernel and need nothing new from the back ends:
 *
 *   decode (bits -> float32): sign, exponent field and mantissa by exact
 *     float32 arithmetic on the code, the value as significand times a
 *     power of two taken from a table, then NaN/Inf codes;
 *   encode (float32 -> bits), rounding to nearest even as ONNX says: the
 *     exponent of |x| is the number of powers of two in a table that are
 *     <= |x| (a small reduction; no log2, so no rounding error), the
 *     quantum 2^(e - mantissa bits) from a table, n = round_half_even(|x| /
 *     quantum) (exact: a division by a power of two), and the code
 *     (e - emin) * 2^M + n, which also lands subnormals and the carry of a
 *     round-up into the next binade right.  A code past the largest finite
 *     one is saturated (saturate = 1, float8) or becomes Inf/NaN as the
 *     type has them; NaN stays NaN; the sign is added last (negative zero
 *     kept where the type has one).
 *
 * Inputs of other float types are converted to float32 first: float16 is
 * exact, double rounds twice (a double within half a float32 ulp of a tie
 * can round the other way; ONNX's tests convert from float and float16).
 * The checks are against ONNX's reference implementation (ml_dtypes), in
 * tests/onnx/test_lowp.py.
 */
#include "ops.h"

typedef struct LowpFormat {
  int onnx;            /* ONNX data type */
  int width;           /* bits of a code */
  int ebits, mbits, bias;
  int maxcode;         /* the largest finite magnitude code */
  int nancode;         /* the code for NaN (-1: the type has none) */
  int infcode;         /* the code for +Inf (-1: none) */
  bool negzero;        /* has a negative zero (else the sign bit is NaN) */
  bool always_saturate; /* no Inf or NaN to overflow into: clamps */
} LowpFormat;

static const LowpFormat formats[] = {
    {ONNX_DT_BFLOAT16, 16, 8, 7, 127, 0x7F7F, 0x7FC0, 0x7F80, true, false},
    {ONNX_DT_FLOAT8E4M3FN, 8, 4, 3, 7, 0x7E, 0x7F, -1, true, false},
    {ONNX_DT_FLOAT8E4M3FNUZ, 8, 4, 3, 8, 0x7F, 0x80, -1, false, false},
    {ONNX_DT_FLOAT8E5M2, 8, 5, 2, 15, 0x7B, 0x7E, 0x7C, true, false},
    {ONNX_DT_FLOAT8E5M2FNUZ, 8, 5, 2, 16, 0x7F, 0x80, -1, false, false},
    /* float4 has no NaN: ONNX's reference (ml_dtypes) turns NaN into 0x8 */
    {ONNX_DT_FLOAT4E2M1, 4, 2, 1, 1, 0x7, 0x8, -1, true, true},
};

/* Integer types carried as values: their range. */
static const struct {
  int onnx;
  int lo, hi;
} int_formats[] = {
    {ONNX_DT_INT4, -8, 7}, {ONNX_DT_UINT4, 0, 15}, {ONNX_DT_INT2, -2, 1}, {ONNX_DT_UINT2, 0, 3},
};

static const LowpFormat *float_format(int code) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (formats[i].onnx == code) return &formats[i];
  return NULL;
}

bool lowp_int_range(int code, int *lo, int *hi) {
  for (size_t i = 0; i < sizeof int_formats / sizeof int_formats[0]; i++)
    if (int_formats[i].onnx == code) {
      *lo = int_formats[i].lo, *hi = int_formats[i].hi;
      return true;
    }
  return false;
}

bool lowp_is_float(int code) { return float_format(code) != NULL || code == ONNX_DT_FLOAT8E8M0; }

/* emin and emax: the exponents of the smallest and largest normal binade. */
static int fmt_emin(const LowpFormat *f) { return 1 - f->bias; }
static int fmt_emax(const LowpFormat *f) { return (f->maxcode >> f->mbits) - f->bias; }

/* A float32 constant vector. */
static GNode *f32_table(Importer *im, int n, const double *v) {
  void *data;
  int64_t shape[1] = {n};
  GNode *c = imp_new_const(im, DT_F32, 1, shape, &data);
  if (!c) return NULL;
  for (int i = 0; i < n; i++) ((float *)data)[i] = (float)v[i];
  return c;
}

static GNode *fc(Importer *im, double v) { return imp_scalar(im, v, DT_F32); }

/* table[i] taken elementwise at the float32 indices idx (exact integers). */
static GNode *take(Importer *im, GNode *table, GNode *idx) {
  GNode *args[2] = {table, imp_cast(im, idx, DT_I32)};
  if (!args[1]) return NULL;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 0);
  return imp_call(im, "take", 2, args, a);
}

static GNode *decode_float(Importer *im, GNode *bits, const LowpFormat *f) {
  GNode *v = imp_cast(im, bits, DT_F32);
  double sb = ldexp(1, f->width - 1), mm = ldexp(1, f->mbits);
  GNode *neg = bin(im, "greater_equal", v, fc(im, sb));
  GNode *mag = imp_where(im, neg, bin(im, "subtract", v, fc(im, sb)), v);
  GNode *e = un(im, "floor", bin(im, "divide", mag, fc(im, mm)));
  GNode *m = bin(im, "subtract", mag, bin(im, "multiply", e, fc(im, mm)));
  /* scale[e] = 2^(max(e, 1) - bias - M): a subnormal (e = 0) is m quanta */
  int ne = 1 << f->ebits;
  double *sc = KNEWN(double, ne);
  for (int i = 0; i < ne; i++) sc[i] = ldexp(1, (i ? i : 1) - f->bias - f->mbits);
  GNode *n = imp_where(im, bin(im, "equal", e, fc(im, 0)), m, bin(im, "add", m, fc(im, mm)));
  GNode *val = bin(im, "multiply", n, take(im, f32_table(im, ne, sc), e));
  if (f->infcode >= 0) { /* the top exponent field: Inf (mantissa 0) or NaN */
    GNode *top = bin(im, "equal", e, fc(im, ne - 1));
    GNode *special = imp_where(im, bin(im, "equal", m, fc(im, 0)), fc(im, INFINITY), fc(im, NAN));
    val = imp_where(im, top, special, val);
  } else if (f->nancode >= 0 && !f->always_saturate) {
    GNode *isnan = f->negzero ? bin(im, "equal", mag, fc(im, f->nancode)) /* 0x7F and 0xFF */
                              : bin(im, "equal", v, fc(im, f->nancode));  /* 0x80 only */
    val = imp_where(im, isnan, fc(im, NAN), val);
  }
  /* times -1, not negated: a negation may be simplified into 0 - x,
   * which loses negative zero */
  return bin(im, "multiply", val, imp_where(im, neg, fc(im, -1), fc(im, 1)));
}

static GNode *encode_float(Importer *im, GNode *x, const LowpFormat *f, bool saturate) {
  x = imp_cast(im, x, DT_F32);
  if (!x) return NULL;
  GNode *a = un(im, "abs", x);
  int emin = fmt_emin(f), emax = fmt_emax(f), nk = emax - emin + 2;
  /* k = #{2^(emin + j) <= |x|, j = 0 .. emax - emin + 1}: |x| lies in
   * binade emin + k - 1 (capped one past the largest) */
  double *p2 = KNEWN(double, nk), *q = KNEWN(double, nk);
  for (int j = 0; j < nk; j++) p2[j] = ldexp(1, emin + j), q[j] = ldexp(1, emin + j - f->mbits);
  int r = x->type.ndim;
  int64_t shp[MAXD + 1];
  for (int i = 0; i < r; i++) shp[i] = 1;
  shp[r] = nk;
  GNode *pw = imp_reshape(im, f32_table(im, nk, p2), r + 1, shp);
  GNode *ge = bin(im, "less_equal", pw, imp_expand_dims(im, a, r));
  int64_t last = r;
  GNode *k = imp_reduce(im, "sum", imp_cast(im, ge, DT_F32), 1, &last, false);
  GNode *idx = bin(im, "maximum", bin(im, "subtract", k, fc(im, 1)), fc(im, 0));
  GNode *n = un(im, "round", bin(im, "divide", a, take(im, f32_table(im, nk, q), idx)));
  GNode *code = bin(im, "add", bin(im, "multiply", idx, fc(im, ldexp(1, f->mbits))), n);
  GNode *over = bin(im, "greater", code, fc(im, f->maxcode));
  bool sat = saturate || f->always_saturate;
  double ovf = sat ? f->maxcode : f->infcode >= 0 ? f->infcode : f->nancode;
  GNode *mag = imp_where(im, over, fc(im, ovf), code);
  /* the sign: x < 0, or x is -0 (1/x is -Inf) */
  GNode *neg = bin(im, "logical_or", bin(im, "less", x, fc(im, 0)),
                   bin(im, "logical_and", bin(im, "equal", x, fc(im, 0)),
                       bin(im, "less", bin(im, "divide", fc(im, 1), x), fc(im, 0))));
  if (!f->negzero) { /* no negative zero; an overflow into the NaN code has no sign either */
    GNode *keep = bin(im, "not_equal", mag, fc(im, 0));
    if (!sat) keep = bin(im, "logical_and", keep, un(im, "logical_not", over));
    neg = bin(im, "logical_and", neg, keep);
  }
  GNode *out = bin(im, "add", mag, imp_where(im, neg, fc(im, ldexp(1, f->width - 1)), fc(im, 0)));
  out = imp_where(im, un(im, "isnan", x), fc(im, f->nancode), out);
  DType carrier;
  onnx_dtype_carrier(f->onnx, &carrier);
  return imp_cast(im, out, carrier);
}

/* ---- float8 E8M0 (opset 24+): an exponent alone ----
 * Code e is 2^(e - 127); 0xFF is NaN; no sign, no zero.  Encoding follows
 * ONNX's reference (onnx.numpy_helper.to_float8e8m0), which works on the
 * float32 bits of x: the code is x's exponent field (0 for zero and
 * subnormals, sign dropped), NaN and Inf give 0xFF, and round_mode adds
 * one: "up" when any mantissa bit is set, "nearest" when the top mantissa
 * bit is set and (the field is non-zero or a lower bit is set), "down"
 * never; with saturate the largest code 0xFE is not incremented (without,
 * it becomes 0xFF).  The field is the count of 2^-126 .. 2^127 that are
 * <= |x|, as encode_float finds binades. */
static GNode *decode_e8m0(Importer *im, GNode *bits) {
  double *v = KNEWN(double, 256);
  for (int i = 0; i < 255; i++) v[i] = ldexp(1, i - 127);
  v[255] = NAN;
  return take(im, f32_table(im, 256, v), imp_cast(im, bits, DT_F32));
}

static GNode *encode_e8m0(Importer *im, GNode *x, bool saturate, int round_mode) {
  x = imp_cast(im, x, DT_F32);
  if (!x) return NULL;
  GNode *a = un(im, "abs", x);
  double *p2 = KNEWN(double, 254), *base = KNEWN(double, 255);
  for (int j = 0; j < 254; j++) p2[j] = ldexp(1, j - 126);
  for (int e = 0; e < 255; e++) base[e] = e ? ldexp(1, e - 127) : 0;
  int r = x->type.ndim;
  int64_t shp[MAXD + 1];
  for (int i = 0; i < r; i++) shp[i] = 1;
  shp[r] = 254;
  GNode *pw = imp_reshape(im, f32_table(im, 254, p2), r + 1, shp);
  int64_t last = r;
  GNode *e = imp_reduce(im, "sum", imp_cast(im, bin(im, "less_equal", pw, imp_expand_dims(im, a, r)), DT_F32), 1, &last, false);
  GNode *b = take(im, f32_table(im, 255, base), e);
  GNode *up = NULL;
  if (round_mode == 1) { /* up: a mantissa bit is set */
    up = bin(im, "not_equal", a, b);
  } else if (round_mode == 2) { /* nearest: |x| >= 1.5 * 2^E when E > 0; |x| > 2^-127 when E = 0 */
    GNode *normal = bin(im, "greater_equal", a, bin(im, "multiply", b, fc(im, 1.5)));
    GNode *sub = bin(im, "greater", a, fc(im, ldexp(1, -127)));
    up = imp_where(im, bin(im, "equal", e, fc(im, 0)), sub, normal);
  }
  if (up && saturate) up = bin(im, "logical_and", up, bin(im, "not_equal", e, fc(im, 254)));
  if (up) e = bin(im, "add", e, imp_cast(im, up, DT_F32));
  GNode *special = bin(im, "logical_or", un(im, "isnan", x), un(im, "isinf", x));
  e = imp_where(im, special, fc(im, 255), e);
  return imp_cast(im, e, DT_U8);
}

int lowp_e8m0_round_mode(const char *s) {
  return !strcmp(s, "down") ? 0 : !strcmp(s, "up") ? 1 : !strcmp(s, "nearest") ? 2 : -1;
}

GNode *lowp_decode(Importer *im, GNode *x, int code) {
  if (!x) return NULL;
  if (code == ONNX_DT_FLOAT8E8M0) return decode_e8m0(im, x);
  const LowpFormat *f = float_format(code);
  if (f) return decode_float(im, x, f);
  return imp_cast(im, x, DT_F32); /* int4 and friends: the carrier holds the value */
}

GNode *lowp_encode_float(Importer *im, GNode *x, int code, bool saturate) {
  const LowpFormat *f = float_format(code);
  if (x && code == ONNX_DT_FLOAT8E8M0) return encode_e8m0(im, x, saturate, 1);
  if (!x || !f) return NULL;
  return encode_float(im, x, f, saturate);
}

/* x (a value of a Kiln type) cast to an integer type carried as values,
 * as ONNX's reference (ml_dtypes) casts: an integer wraps to the type's
 * bits; a float is truncated toward zero, and one outside the type's
 * range (or NaN) becomes 0. */
static GNode *encode_int(Importer *im, GNode *x, int code) {
  int lo, hi;
  lowp_int_range(code, &lo, &hi);
  DType carrier;
  onnx_dtype_carrier(code, &carrier);
  if (dt_is_bool(x->type.dtype) || dt_is_intlike(x->type.dtype)) {
    GNode *v = imp_cast(im, x, DT_I64);
    GNode *span = imp_scalar(im, (double)hi - lo + 1, DT_I64), *l = imp_scalar(im, lo, DT_I64);
    return imp_cast(im, bin(im, "add", bin(im, "floor_mod", bin(im, "subtract", v, l), span), l), carrier);
  }
  GNode *t = un(im, "trunc", imp_cast(im, x, DT_F32));
  GNode *out = bin(im, "logical_or", bin(im, "less", t, fc(im, lo)), bin(im, "greater", t, fc(im, hi)));
  out = bin(im, "logical_or", out, un(im, "isnan", t));
  return imp_cast(im, imp_where(im, out, fc(im, 0), t), carrier);
}

/* Cast x (carrying ONNX type from, or a plain Kiln value when from is 0)
 * to ONNX type to (a carried type) or to the Kiln type to_t (to is 0). */
GNode *lowp_convert(Importer *im, GNode *x, int from, int to, DType to_t, bool saturate) {
  return lowp_convert_rounding(im, x, from, to, to_t, saturate, 1);
}

GNode *lowp_convert_rounding(Importer *im, GNode *x, int from, int to, DType to_t, bool saturate, int round_mode) {
  if (!x) return NULL;
  const LowpFormat *ff = float_format(from), *tf = float_format(to);
  int lo, hi;
  if (ff) x = decode_float(im, x, ff);
  if (from == ONNX_DT_FLOAT8E8M0) x = decode_e8m0(im, x);
  if (!x) return NULL;
  if (to == ONNX_DT_FLOAT8E8M0) return encode_e8m0(im, x, saturate, round_mode);
  if (tf) return encode_float(im, x, tf, saturate);
  if (lowp_int_range(to, &lo, &hi)) return encode_int(im, x, to);
  return imp_cast(im, x, to_t);
}

/* ---- bfloat16 arithmetic in float32 ----
 * An op that is not a conversion and is given bfloat16 inputs computes in
 * float32: the importer rebinds each bfloat16 input's name to its decoded
 * float32 value while the op's handler runs (lowp_widen, lowp_restore),
 * and rounds each float32 output of the op to bfloat16 (lowp_narrow), as
 * ONNX's reference rounds after every op.  (Every output type ONNX lets
 * such an op give as float is its input type T; non-float outputs, such
 * as Shape's or ArgMax's, stay as they are.) */

GNode **lowp_widen(Importer *im) {
  const OnnxNode *n = imp_node(im);
  GNode **saved = KNEWN(GNode *, n->ninputs + 1);
  for (int k = 0; k < n->ninputs; k++) {
    if (imp_input_lowp(im, k) != ONNX_DT_BFLOAT16) continue;
    bool seen = false; /* an input named twice (Mul(a, a)) is decoded once */
    for (int j = 0; j < k && !seen; j++) seen = saved[j] && !strcmp(n->inputs[j], n->inputs[k]);
    if (seen) continue;
    saved[k] = imp_value(im, n->inputs[k]);
    GNode *d = lowp_decode(im, saved[k], ONNX_DT_BFLOAT16);
    if (!d) return NULL;
    imp_bind_value(im, n->inputs[k], d);
  }
  return saved;
}

void lowp_restore(Importer *im, GNode **saved) {
  const OnnxNode *n = imp_node(im);
  for (int k = n->ninputs - 1; k >= 0; k--)
    if (saved[k]) imp_bind_value(im, n->inputs[k], saved[k]);
}

int lowp_narrow(Importer *im) {
  const OnnxNode *n = imp_node(im);
  for (int k = 0; k < n->noutputs; k++) {
    GNode *v = *n->outputs[k] ? imp_value(im, n->outputs[k]) : NULL;
    if (!v || !dt_eq(v->type.dtype, DT_F32)) continue;
    GNode *b = lowp_encode_float(im, v, ONNX_DT_BFLOAT16, false);
    if (!b || imp_set_output(im, k, b)) return -1;
    imp_set_output_lowp(im, k, ONNX_DT_BFLOAT16);
  }
  return 0;
}
