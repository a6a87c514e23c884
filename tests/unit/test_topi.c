/*
 * test_topi.c - the operator test harness (test_topi.h), the elementwise
 * and broadcast operators, and the generic schedules' shape.
 *
 * References are computed in double from the same random inputs; floats
 * must match within a relative L2 error of 1e-5, integers and bools
 * exactly.  Bad inputs must return NULL with a message that names the
 * operator and the problem.
 */
#include "test_topi.h"

#include <math.h>

/* ---- the harness ---- */

static const CompileOptions fast_copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

int64_t numel(const DLTensor *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  return n;
}

void tset(DLTensor *a, int64_t i, double v) {
  char *p = (char *)a->data + a->byte_offset;
  DLDataType t = a->dtype;
  if (t.code == kDLFloat && t.bits == 32) ((float *)p)[i] = (float)v;
  else if (t.code == kDLFloat && t.bits == 64) ((double *)p)[i] = v;
  else if (t.code == kDLFloat && t.bits == 16) ((_Float16 *)p)[i] = (_Float16)v;
  else if (t.code == kDLUInt && t.bits == 1) ((uint8_t *)p)[i] = v != 0;
  else if (t.code == kDLInt && t.bits == 8) ((int8_t *)p)[i] = (int8_t)v;
  else if (t.code == kDLInt && t.bits == 16) ((int16_t *)p)[i] = (int16_t)v;
  else if (t.code == kDLInt && t.bits == 32) ((int32_t *)p)[i] = (int32_t)v;
  else if (t.code == kDLInt && t.bits == 64) ((int64_t *)p)[i] = (int64_t)v;
  else if (t.code == kDLUInt && t.bits == 8) ((uint8_t *)p)[i] = (uint8_t)v;
  else if (t.code == kDLUInt && t.bits == 32) ((uint32_t *)p)[i] = (uint32_t)v;
  else KASSERTF(0, "unsupported test dtype");
}

double tget(const DLTensor *a, int64_t i) {
  const char *p = (const char *)a->data + a->byte_offset;
  DLDataType t = a->dtype;
  if (t.code == kDLFloat && t.bits == 32) return ((const float *)p)[i];
  if (t.code == kDLFloat && t.bits == 64) return ((const double *)p)[i];
  if (t.code == kDLFloat && t.bits == 16) return (double)((const _Float16 *)p)[i];
  if (t.code == kDLUInt && t.bits == 1) return ((const uint8_t *)p)[i];
  if (t.code == kDLInt && t.bits == 8) return ((const int8_t *)p)[i];
  if (t.code == kDLInt && t.bits == 16) return ((const int16_t *)p)[i];
  if (t.code == kDLInt && t.bits == 32) return ((const int32_t *)p)[i];
  if (t.code == kDLInt && t.bits == 64) return (double)((const int64_t *)p)[i];
  if (t.code == kDLUInt && t.bits == 8) return ((const uint8_t *)p)[i];
  if (t.code == kDLUInt && t.bits == 32) return ((const uint32_t *)p)[i];
  KASSERTF(0, "unsupported test dtype");
  return 0;
}

void fill_uniform(DLTensor *a, double lo, double hi) {
  int64_t n = numel(a);
  for (int64_t i = 0; i < n; i++) tset(a, i, lo + (hi - lo) * (test_randf() + 1.0) / 2.0);
}

void fill_int(DLTensor *a, int64_t lo, int64_t hi) {
  int64_t n = numel(a);
  for (int64_t i = 0; i < n; i++) tset(a, i, (double)(lo + (int64_t)(test_rand() % (unsigned)(hi - lo + 1))));
}

void unravel(int64_t flat, int ndim, const int64_t *shape, int64_t *idx) {
  for (int d = ndim - 1; d >= 0; d--) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
}

int64_t ravel(int ndim, const int64_t *shape, const int64_t *idx) {
  int64_t f = 0;
  for (int d = 0; d < ndim; d++) f = f * shape[d] + idx[d];
  return f;
}

int64_t rnd_dim(void) {
  static const int64_t dims[] = {1, 3, 7, 13, 16, 5, 32, 2};
  return dims[test_rand() % (sizeof dims / sizeof dims[0])];
}

int64_t rnd_range(int64_t lo, int64_t hi) { return lo + (int64_t)(test_rand() % (unsigned)(hi - lo + 1)); }

Tensor *ph(const char *name, int ndim, const int64_t *shape, DType t) { return te_placeholder_c(name, ndim, shape, t); }

const char *tt_generic_lowered(Tensor *in, Tensor *out) {
  Schedule *s = te_create_schedule(1, &out);
  CHECK_OK(topi_schedule_generic(s, 1, &out));
  LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){in, out}, "f", NULL);
  CHECK_NN(f);
  return f ? kiln_lowered_str(f) : NULL;
}

static DLTensor *array_for(Tensor *t) {
  int64_t shape[16];
  KASSERT(t->ndim <= 16 && te_shape_const(t, shape));
  return tk_array(t->ndim, shape, t->dtype);
}

TCase *tb_add(TBatch *b, const char *label, int nin, Tensor **in, Tensor *out, double tol) {
  if (!out) {
    test_fail(__FILE__, __LINE__, "%s: the compute failed: %s", label, kiln_get_error());
    return NULL;
  }
  KASSERT(b->n < TB_MAX_CASES && nin <= 8);
  Schedule *s = te_create_schedule(1, &out);
  if (!s || topi_schedule_generic(s, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: scheduling failed: %s", label, kiln_get_error());
    return NULL;
  }
  Tensor *args[9];
  for (int i = 0; i < nin; i++) args[i] = in[i];
  args[nin] = out;
  LoweredFunc *f = kiln_lower(s, nin + 1, args, kfmt("f%d", b->n), NULL);
  if (!f) {
    test_fail(__FILE__, __LINE__, "%s: lowering failed: %s", label, kiln_get_error());
    return NULL;
  }
  TCase *c = &b->c[b->n++];
  memset(c, 0, sizeof *c);
  c->label = label;
  c->nin = nin;
  c->out = out;
  c->tol = tol;
  c->f = f;
  for (int i = 0; i < nin; i++) {
    c->in[i] = in[i];
    c->a[i] = array_for(in[i]);
    if (dt_is_float(in[i]->dtype))
      fill_uniform(c->a[i], -1, 1);
    else if (dt_is_bool(in[i]->dtype))
      fill_int(c->a[i], 0, 1);
    else
      fill_int(c->a[i], -3, 3);
  }
  c->res = array_for(out);
  c->ref = array_for(out);
  return c;
}

static void compare(TCase *c, const DLTensor *got, const char *what) {
  int64_t n = numel(c->ref);
  if (c->tol > 0) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
      double x = tget(got, i), y = tget(c->ref, i);
      if (isnan(x) != isnan(y) || (isinf(y) && x != y)) {
        test_fail(__FILE__, __LINE__, "%s (%s): element %lld is %g, expected %g", c->label, what, (long long)i, x, y);
        return;
      }
      if (isnan(x) || isinf(x)) continue;
      num += (x - y) * (x - y);
      den += y * y;
    }
    double err = den > 0 ? sqrt(num / den) : sqrt(num);
    if (!(err <= c->tol))
      test_fail(__FILE__, __LINE__, "%s (%s): relative L2 error %g > %g", c->label, what, err, c->tol);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double x = tget(got, i), y = tget(c->ref, i);
    if (x != y && !(isnan(x) && isnan(y))) {
      test_fail(__FILE__, __LINE__, "%s (%s): element %lld is %.17g, expected %.17g", c->label, what, (long long)i, x, y);
      return;
    }
  }
}

void tb_ref_eval(TCase *c) {
  if (!c) return;
  if (topi_eval(c->out, c->nin, c->in, c->a, c->ref))
    test_fail(__FILE__, __LINE__, "%s: topi_eval failed: %s", c->label, kiln_get_error());
}

void tb_run(TBatch *b) {
  if (b->n == 0) return;
  LoweredFunc *fs[TB_MAX_CASES];
  for (int i = 0; i < b->n; i++) fs[i] = b->c[i].f;
  KilnModule *mod = kiln_build_funcs(fs, b->n, 0, NULL, &fast_copt);
  if (!mod) test_fail(__FILE__, __LINE__, "build failed: %s", kiln_get_error());
  for (int i = 0; i < b->n && mod; i++) {
    TCase *c = &b->c[i];
    DLTensor *arrs[9];
    for (int k = 0; k < c->nin; k++) arrs[k] = c->a[k];
    arrs[c->nin] = c->res;
    /* stale values must be overwritten */
    for (int64_t e = 0; e < numel(c->res); e++) tset(c->res, e, dt_is_bool(c->out->dtype) ? 1 : 77);
    if (tk_call(mod, c->f->name, c->nin + 1, arrs)) {
      test_fail(__FILE__, __LINE__, "%s: the kernel failed: %s", c->label, kiln_last_error());
      continue;
    }
    compare(c, c->res, "kernel");
    if (c->eval) {
      DLTensor *ev = array_for(c->out);
      if (topi_eval(c->out, c->nin, c->in, c->a, ev))
        test_fail(__FILE__, __LINE__, "%s: topi_eval failed: %s", c->label, kiln_get_error());
      else
        compare(c, ev, "topi_eval");
      kiln_array_free(ev);
    }
  }
  for (int i = 0; i < b->n; i++) {
    TCase *c = &b->c[i];
    for (int k = 0; k < c->nin; k++) kiln_array_free(c->a[k]);
    kiln_array_free(c->res);
    kiln_array_free(c->ref);
  }
  if (mod) kiln_module_free(mod);
  b->n = 0;
}

/* ---- references ---- */

/* The element of a (NumPy-broadcast into an output of rank ond) at the
 * output index oidx. */
static double bget(const DLTensor *a, int ond, const int64_t *oidx) {
  int64_t idx[16];
  for (int d = 0; d < a->ndim; d++) {
    int od = d + ond - a->ndim;
    idx[d] = a->shape[d] == 1 ? 0 : oidx[od];
  }
  return tget(a, ravel(a->ndim, a->shape, idx));
}

typedef double (*Fn1)(double);
typedef double (*Fn2)(double, double);

static void ref_map1(TCase *c, Fn1 f) {
  if (!c) return;
  int64_t n = numel(c->ref);
  for (int64_t i = 0; i < n; i++) tset(c->ref, i, f(tget(c->a[0], i)));
}

static void ref_map2(TCase *c, Fn2 f) {
  if (!c) return;
  int64_t n = numel(c->ref), idx[16];
  for (int64_t i = 0; i < n; i++) {
    unravel(i, c->ref->ndim, c->ref->shape, idx);
    tset(c->ref, i, f(bget(c->a[0], c->ref->ndim, idx), bget(c->a[1], c->ref->ndim, idx)));
  }
}

/* unary references */
static double r_neg(double x) { return -x; }
static double r_abs(double x) { return fabs(x); }
static double r_recip(double x) { return 1 / x; }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_rsqrt(double x) { return 1 / sqrt(x); }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
static double r_softplus(double x) { return log1p(exp(x)); }
static double r_softsign(double x) { return x / (1 + fabs(x)); }
static double r_hard_swish(double x) { return x * fmin(fmax(x / 6 + 0.5, 0), 1); }
static double r_mish(double x) { return x * tanh(log1p(exp(x))); }
static double r_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double r_not(double x) { return x == 0; }
static double r_bnot(double x) { return (double)~(int32_t)x; }
static double r_isnan(double x) { return isnan(x) != 0; }
static double r_isinf(double x) { return isinf(x) != 0; }
static double r_ident(double x) { return x; }
static double r_round(double x) { return nearbyint(x); }

typedef struct UCase {
  TopiUnary op;
  Fn1 ref;
  double lo, hi;
} UCase;

static void test_unary_float(void) {
  UCase cases[] = {
      {TOPI_negative, r_neg, -2, 2},   {TOPI_abs, r_abs, -2, 2},          {TOPI_exp, exp, -3, 3},
      {TOPI_log, log, 0.05, 4},        {TOPI_sqrt, sqrt, 0, 4},           {TOPI_rsqrt, r_rsqrt, 0.1, 4},
      {TOPI_reciprocal, r_recip, 0.5, 2}, {TOPI_relu, r_relu, -1, 1},     {TOPI_sigmoid, r_sigmoid, -6, 6},
      {TOPI_tanh, tanh, -3, 3},        {TOPI_erf, erf, -2, 2},            {TOPI_gelu, r_gelu, -3, 3},
      {TOPI_gelu_tanh, r_gelu_tanh, -3, 3}, {TOPI_softplus, r_softplus, -8, 8}, {TOPI_softsign, r_softsign, -3, 3},
      {TOPI_hard_swish, r_hard_swish, -5, 5}, {TOPI_mish, r_mish, -4, 4}, {TOPI_floor, floor, -5, 5},
      {TOPI_ceil, ceil, -5, 5},        {TOPI_trunc, trunc, -5, 5},        {TOPI_sign, r_sign, -1, 1},
      {TOPI_sin, sin, -3, 3},          {TOPI_cos, cos, -3, 3},            {TOPI_tan, tan, -1.2, 1.2},
      {TOPI_asin, asin, -0.95, 0.95},  {TOPI_acos, acos, -0.95, 0.95},    {TOPI_atan, atan, -4, 4},
      {TOPI_sinh, sinh, -3, 3},        {TOPI_cosh, cosh, -3, 3},          {TOPI_asinh, asinh, -4, 4},
      {TOPI_acosh, acosh, 1, 5},       {TOPI_atanh, atanh, -0.9, 0.9},    {TOPI_identity, r_ident, -1, 1},
  };
  TBatch b = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t shape[3] = {rnd_dim(), rnd_dim(), i % 3 == 0 ? 64 : rnd_dim()};
    Tensor *x = ph("x", 3, shape, DT_F32);
    TCase *c = tb_add(&b, topi_unary_name(cases[i].op), 1, &x, topi_unary(cases[i].op, x), 1e-5);
    if (!c) continue;
    fill_uniform(c->a[0], cases[i].lo, cases[i].hi);
    ref_map1(c, cases[i].ref);
    c->eval = i % 4 == 0;
  }
  /* round: half to even, on values that are often exactly .5 */
  Tensor *x = ph("x", 1, (int64_t[]){37}, DT_F32);
  TCase *c = tb_add(&b, "round", 1, &x, topi_unary(TOPI_round, x), 1e-6);
  if (c) {
    fill_int(c->a[0], -9, 9);
    for (int i = 0; i < 37; i++) tset(c->a[0], i, tget(c->a[0], i) / 2 + (i % 3 == 0 ? 0.1 : 0));
    ref_map1(c, r_round);
    c->eval = true;
  }
  tb_run(&b);
}

static void test_unary_other_types(void) {
  TBatch b = {0};
  int64_t shape[2] = {rnd_dim(), 16};
  Tensor *xi = ph("xi", 2, shape, DT_I32);
  TCase *c;
  TopiUnary iops[] = {TOPI_negative, TOPI_abs, TOPI_relu, TOPI_sign, TOPI_floor, TOPI_round, TOPI_identity};
  Fn1 iref[] = {r_neg, r_abs, r_relu, r_sign, r_ident, r_ident, r_ident};
  for (int i = 0; i < 7; i++) {
    c = tb_add(&b, kfmt("%s int32", topi_unary_name(iops[i])), 1, &xi, topi_unary(iops[i], xi), 0);
    ref_map1(c, iref[i]);
  }
  c = tb_add(&b, "bitwise_not", 1, &xi, topi_unary(TOPI_bitwise_not, xi), 0);
  ref_map1(c, r_bnot);
  Tensor *xb = ph("xb", 2, shape, DT_BOOL);
  c = tb_add(&b, "logical_not", 1, &xb, topi_unary(TOPI_logical_not, xb), 0);
  ref_map1(c, r_not);
  if (c) c->eval = true;
  Tensor *xf = ph("xf", 2, shape, DT_F32);
  TopiUnary fops[] = {TOPI_isnan, TOPI_isinf, TOPI_logical_not};
  Fn1 fref[] = {r_isnan, r_isinf, r_not};
  for (int i = 0; i < 3; i++) {
    c = tb_add(&b, topi_unary_name(fops[i]), 1, &xf, topi_unary(fops[i], xf), 0);
    if (!c) continue;
    for (int64_t e = 0; e < numel(c->a[0]); e++)
      if (e % 5 == 1) tset(c->a[0], e, e % 3 ? NAN : (e % 2 ? INFINITY : -INFINITY));
      else if (e % 7 == 0) tset(c->a[0], e, 0);
    ref_map1(c, fref[i]);
  }
  Tensor *xd = ph("xd", 2, shape, DT_F64);
  c = tb_add(&b, "exp float64", 1, &xd, topi_unary(TOPI_exp, xd), 1e-12);
  ref_map1(c, exp);
  tb_run(&b);
}

/* binary references */
static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_idiv(double a, double b) { return b == 0 ? a : (double)((int64_t)a / (int64_t)b); }
static double r_pow(double a, double b) { return pow(a, b); }
static double r_min(double a, double b) { return fmin(a, b); }
static double r_max(double a, double b) { return fmax(a, b); }
static double r_fmod(double a, double b) { return fmod(a, b); }
static double r_imod(double a, double b) { return b == 0 ? 0 : (double)((int64_t)a % (int64_t)b); }
static double r_floormod(double a, double b) { return a - floor(a / b) * b; }
static double r_ifloormod(double a, double b) {
  if (b == 0) return 0;
  int64_t x = (int64_t)a, y = (int64_t)b, r = x % y;
  return (double)(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);
}
static double r_floordiv(double a, double b) { return floor(a / b); }
static double r_ifloordiv(double a, double b) { return b == 0 ? a : floor(a / b); }
static double r_eq(double a, double b) { return a == b; }
static double r_ne(double a, double b) { return a != b; }
static double r_lt(double a, double b) { return a < b; }
static double r_le(double a, double b) { return a <= b; }
static double r_gt(double a, double b) { return a > b; }
static double r_ge(double a, double b) { return a >= b; }
static double r_land(double a, double b) { return a != 0 && b != 0; }
static double r_lor(double a, double b) { return a != 0 || b != 0; }
static double r_lxor(double a, double b) { return (a != 0) != (b != 0); }
static double r_band(double a, double b) { return (double)((int32_t)a & (int32_t)b); }
static double r_bor(double a, double b) { return (double)((int32_t)a | (int32_t)b); }
static double r_bxor(double a, double b) { return (double)((int32_t)a ^ (int32_t)b); }
static double r_shl(double a, double b) { return (double)(int32_t)((uint32_t)(int32_t)a << (int)b); }
static double r_shr(double a, double b) { return (double)((int32_t)a >> (int)b); }

typedef struct BCase {
  TopiBinary op;
  Fn2 ref;
  DType t;
  double lo, hi;   /* a's range (floats) */
  double blo, bhi; /* b's range */
} BCase;

/* Pairs of broadcastable shapes, odd sizes and scalars among them. */
static void bshapes(int k, int *na, int64_t *sa, int *nb, int64_t *sb) {
  int64_t m = rnd_dim(), n = rnd_dim(), p = rnd_dim();
  switch (k % 6) {
  case 0: *na = 3; sa[0] = m; sa[1] = n; sa[2] = 16; *nb = 3; sb[0] = m; sb[1] = n; sb[2] = 16; break;
  case 1: *na = 3; sa[0] = m; sa[1] = 1; sa[2] = p; *nb = 2; sb[0] = n; sb[1] = p; break;
  case 2: *na = 1; sa[0] = p; *nb = 3; sb[0] = m; sb[1] = n; sb[2] = p; break;
  case 3: *na = 0; *nb = 2; sb[0] = m; sb[1] = 32; break;
  case 4: *na = 4; sa[0] = 2; sa[1] = m; sa[2] = 1; sa[3] = 7; *nb = 4; sb[0] = 1; sb[1] = 1; sb[2] = n; sb[3] = 1; break;
  default: *na = 2; sa[0] = m; sa[1] = n; *nb = 0; break;
  }
}

static void test_binary(void) {
  BCase cases[] = {
      {TOPI_add, r_add, DT_F32, -1, 1, -1, 1},
      {TOPI_subtract, r_sub, DT_F32, -1, 1, -1, 1},
      {TOPI_multiply, r_mul, DT_F32, -1, 1, -1, 1},
      {TOPI_divide, r_div, DT_F32, -1, 1, 0.5, 2},
      {TOPI_power, r_pow, DT_F32, 0.2, 2, -2, 2},
      {TOPI_minimum, r_min, DT_F32, -1, 1, -1, 1},
      {TOPI_maximum, r_max, DT_F32, -1, 1, -1, 1},
      {TOPI_mod, r_fmod, DT_F32, -5, 5, 0.7, 2},
      {TOPI_floor_mod, r_floormod, DT_F32, -5, 5, -2, -0.7},
      {TOPI_floor_divide, r_floordiv, DT_F32, -5, 5, 0.7, 2},
      {TOPI_add, r_add, DT_I32, -3, 3, -3, 3},
      {TOPI_subtract, r_sub, DT_I64, -3, 3, -3, 3},
      {TOPI_multiply, r_mul, DT_I8, -3, 3, -3, 3},
      {TOPI_divide, r_idiv, DT_I32, -9, 9, -3, 3},
      {TOPI_power, r_pow, DT_I32, -3, 3, 0, 4},
      {TOPI_mod, r_imod, DT_I32, -9, 9, -3, 3},
      {TOPI_floor_mod, r_ifloormod, DT_I64, -9, 9, -3, 3},
      {TOPI_floor_divide, r_ifloordiv, DT_I32, -9, 9, -3, 3},
      {TOPI_minimum, r_min, DT_I32, -3, 3, -3, 3},
      {TOPI_maximum, r_max, DT_I64, -3, 3, -3, 3},
      {TOPI_equal, r_eq, DT_I32, -2, 2, -2, 2},
      {TOPI_not_equal, r_ne, DT_F32, -1, 1, -1, 1},
      {TOPI_less, r_lt, DT_F32, -1, 1, -1, 1},
      {TOPI_less_equal, r_le, DT_I32, -2, 2, -2, 2},
      {TOPI_greater, r_gt, DT_I64, -2, 2, -2, 2},
      {TOPI_greater_equal, r_ge, DT_F32, -1, 1, -1, 1},
      {TOPI_logical_and, r_land, DT_BOOL, 0, 1, 0, 1},
      {TOPI_logical_or, r_lor, DT_BOOL, 0, 1, 0, 1},
      {TOPI_logical_xor, r_lxor, DT_BOOL, 0, 1, 0, 1},
      {TOPI_bitwise_and, r_band, DT_I32, -9, 9, -9, 9},
      {TOPI_bitwise_or, r_bor, DT_I32, -9, 9, -9, 9},
      {TOPI_bitwise_xor, r_bxor, DT_I32, -9, 9, -9, 9},
      {TOPI_left_shift, r_shl, DT_I32, -9, 9, 0, 5},
      {TOPI_right_shift, r_shr, DT_I32, -99, 99, 0, 5},
  };
  TBatch b = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    BCase *k = &cases[i];
    int na, nb;
    int64_t sa[4], sb[4];
    bshapes((int)i, &na, sa, &nb, sb);
    Tensor *x = ph("a", na, sa, k->t), *y = ph("b", nb, sb, k->t);
    bool fl = dt_is_float(k->t);
    TCase *c = tb_add(&b, kfmt("%s %s", topi_binary_name(k->op), dt_str(k->t)), 2, (Tensor *[]){x, y},
                      topi_binary(k->op, x, y), fl ? 1e-5 : 0);
    if (!c) continue;
    if (fl) {
      fill_uniform(c->a[0], k->lo, k->hi);
      fill_uniform(c->a[1], k->blo, k->bhi);
      if (k->op == TOPI_equal || k->op == TOPI_not_equal || k->op == TOPI_less_equal || k->op == TOPI_greater_equal)
        for (int64_t e = 0; e < numel(c->a[1]) && e < numel(c->a[0]); e += 3) tset(c->a[1], e, tget(c->a[0], e));
    } else {
      fill_int(c->a[0], (int64_t)k->lo, (int64_t)k->hi);
      fill_int(c->a[1], (int64_t)k->blo, (int64_t)k->bhi);
    }
    ref_map2(c, k->ref);
    c->eval = i % 5 == 0 || !fl;
  }
  tb_run(&b);
}

static double g_p0, g_p1;
static double r_leaky(double x) { return x < 0 ? g_p0 * x : x; }
static double r_elu(double x) { return x < 0 ? g_p0 * (exp(x) - 1) : x; }
static double r_selu(double x) { return g_p1 * (x < 0 ? g_p0 * (exp(x) - 1) : x); }
static double r_celu(double x) { return fmax(0, x) + fmin(0, g_p0 * (exp(x / g_p0) - 1)); }
static double r_thresh(double x) { return x > g_p0 ? x : 0; }
static double r_hsig(double x) { return fmax(0, fmin(1, g_p0 * x + g_p1)); }
static double r_clip(double x) { return fmin(fmax(x, g_p0), g_p1); }
static double r_f2i(double x) { return trunc(x); }
static double r_f2b(double x) { return x != 0; }
static double r_i2i8(double x) { return (double)(int8_t)(int32_t)x; }

static void test_activations(void) {
  TBatch b = {0};
  int64_t shape[3] = {rnd_dim(), 3, 32};
  Tensor *x = ph("x", 3, shape, DT_F32);
  TCase *c;
  g_p0 = 0.13;
  g_p1 = 1.7;
  c = tb_add(&b, "leaky_relu", 1, &x, topi_leaky_relu(x, g_p0), 1e-6);
  ref_map1(c, r_leaky);
  tb_run(&b);
  g_p0 = 1.3;
  c = tb_add(&b, "elu", 1, &x, topi_elu(x, g_p0), 1e-6);
  ref_map1(c, r_elu);
  tb_run(&b);
  g_p0 = 1.6732632;
  g_p1 = 1.0507010;
  c = tb_add(&b, "selu", 1, &x, topi_selu(x, g_p0, g_p1), 1e-6);
  ref_map1(c, r_selu);
  tb_run(&b);
  g_p0 = 0.7;
  c = tb_add(&b, "celu", 1, &x, topi_celu(x, g_p0), 1e-6);
  ref_map1(c, r_celu);
  tb_run(&b);
  g_p0 = 0.25;
  c = tb_add(&b, "thresholded_relu", 1, &x, topi_thresholded_relu(x, g_p0), 1e-6);
  ref_map1(c, r_thresh);
  tb_run(&b);
  g_p0 = 0.2;
  g_p1 = 0.5;
  c = tb_add(&b, "hard_sigmoid", 1, &x, topi_hard_sigmoid(x, g_p0, g_p1), 1e-6);
  if (c) fill_uniform(c->a[0], -4, 4);
  ref_map1(c, r_hsig);
  tb_run(&b);
  g_p0 = -0.3;
  g_p1 = 0.6;
  c = tb_add(&b, "clip", 1, &x, topi_clip(x, g_p0, g_p1), 1e-6);
  ref_map1(c, r_clip);
  if (c) c->eval = true;
  Tensor *xi = ph("xi", 3, shape, DT_I32);
  g_p0 = -1;
  g_p1 = 2;
  c = tb_add(&b, "clip int32", 1, &xi, topi_clip(xi, -1.5, 2.5), 0);
  ref_map1(c, r_clip);
  tb_run(&b);
  g_p0 = -INFINITY;
  g_p1 = 0.5;
  c = tb_add(&b, "clip max only", 1, &x, topi_clip(x, -INFINITY, 0.5), 0);
  ref_map1(c, r_clip);
  /* casts */
  c = tb_add(&b, "cast f32->i32", 1, &x, topi_cast(x, DT_I32), 0);
  if (c) fill_uniform(c->a[0], -50, 50);
  ref_map1(c, r_f2i);
  c = tb_add(&b, "cast f32->bool", 1, &x, topi_cast(x, DT_BOOL), 0);
  if (c)
    for (int64_t e = 0; e < numel(c->a[0]); e += 3) tset(c->a[0], e, 0);
  ref_map1(c, r_f2b);
  Tensor *xb = ph("xb", 3, shape, DT_BOOL);
  c = tb_add(&b, "cast bool->f32", 1, &xb, topi_cast(xb, DT_F32), 0);
  ref_map1(c, r_ident);
  c = tb_add(&b, "cast i32->i8", 1, &xi, topi_cast(xi, DT_I8), 0);
  if (c) fill_int(c->a[0], -300, 300);
  ref_map1(c, r_i2i8);
  c = tb_add(&b, "cast i32->i64", 1, &xi, topi_cast(xi, DT_I64), 0);
  ref_map1(c, r_ident);
  c = tb_add(&b, "cast i32->f64", 1, &xi, topi_cast(xi, DT_F64), 0);
  ref_map1(c, r_ident);
  Tensor *xh = ph("xh", 3, shape, DT_F16);
  c = tb_add(&b, "cast f32->f16", 1, &x, topi_cast(x, DT_F16), 1e-3);
  ref_map1(c, r_ident);
  c = tb_add(&b, "cast f16->f32", 1, &xh, topi_cast(xh, DT_F32), 0);
  ref_map1(c, r_ident);
  if (c) c->eval = true;
  c = tb_add(&b, "cast i32->bool", 1, &xi, topi_cast(xi, DT_BOOL), 0);
  ref_map1(c, r_f2b);
  if (c) c->eval = true;
  /* full */
  Tensor *fz = topi_full(2, (int64_t[]){3, 5}, DT_F32, 2.5);
  c = tb_add(&b, "full", 0, NULL, fz, 0);
  if (c)
    for (int e = 0; e < 15; e++) tset(c->ref, e, 2.5);
  tb_run(&b);
}

static void test_prelu_where(void) {
  TBatch b = {0};
  int64_t n = rnd_dim(), C = 3, h = rnd_dim(), w = 16;
  Tensor *x = ph("x", 4, (int64_t[]){n, C, h, w}, DT_F32);
  Tensor *slope = ph("slope", 3, (int64_t[]){C, 1, 1}, DT_F32);
  TCase *c = tb_add(&b, "prelu", 2, (Tensor *[]){x, slope}, topi_prelu(x, slope), 1e-6);
  if (c) {
    int64_t idx[4];
    for (int64_t i = 0; i < numel(c->ref); i++) {
      unravel(i, 4, c->ref->shape, idx);
      double v = tget(c->a[0], i), s = tget(c->a[1], idx[1]);
      tset(c->ref, i, v < 0 ? s * v : v);
    }
    c->eval = true;
  }
  Tensor *cond = ph("cond", 2, (int64_t[]){h, 1}, DT_BOOL);
  Tensor *y = ph("y", 1, (int64_t[]){w}, DT_F32);
  c = tb_add(&b, "where", 3, (Tensor *[]){cond, x, y}, topi_where(cond, x, y), 0);
  if (c) {
    int64_t idx[4];
    for (int64_t i = 0; i < numel(c->ref); i++) {
      unravel(i, 4, c->ref->shape, idx);
      double cv = tget(c->a[0], idx[2]);
      tset(c->ref, i, cv != 0 ? tget(c->a[1], i) : tget(c->a[2], idx[3]));
    }
    c->eval = true;
  }
  Tensor *ci = ph("ci", 1, (int64_t[]){w}, DT_I32);
  Tensor *xi = ph("xi", 2, (int64_t[]){h, w}, DT_I64), *yi = ph("yi", 0, NULL, DT_I64);
  c = tb_add(&b, "where int cond", 3, (Tensor *[]){ci, xi, yi}, topi_where(ci, xi, yi), 0);
  if (c) {
    int64_t idx[2];
    for (int64_t i = 0; i < numel(c->ref); i++) {
      unravel(i, 2, c->ref->shape, idx);
      tset(c->ref, i, tget(c->a[0], idx[1]) != 0 ? tget(c->a[1], i) : tget(c->a[2], 0));
    }
  }
  tb_run(&b);
}

/* A chain of elementwise ops and a big tensor: vectorized and parallel. */
static void test_injective_schedule(void) {
  int64_t shape[4] = {2, 8, 40, 64};
  Tensor *x = ph("x", 4, shape, DT_F32), *y = ph("y", 1, (int64_t[]){64}, DT_F32);
  Tensor *t = topi_unary(TOPI_relu, topi_binary(TOPI_multiply, topi_unary(TOPI_sigmoid, x), y));
  CHECK_NN(t);
  if (!t) return;
  Schedule *s = te_create_schedule(1, &t);
  CHECK_OK(topi_schedule_injective(s, 1, &t));
  LoweredFunc *f = kiln_lower(s, 3, (Tensor *[]){x, y, t}, "f", NULL);
  CHECK_NN(f);
  if (!f) return;
  const char *txt = kiln_lowered_str(f);
  CHECK_CONTAINS(txt, "parallel (");
  CHECK_CONTAINS(txt, "ramp(");
  CHECK(strstr(txt, "T_sigmoid[") == NULL); /* inlined */
  /* an odd last dimension: no vector split, a plain inner loop */
  Tensor *x2 = ph("x2", 2, (int64_t[]){300, 131}, DT_F32);
  Tensor *t2 = topi_unary(TOPI_exp, x2);
  Schedule *s2 = te_create_schedule(1, &t2);
  CHECK_OK(topi_schedule_generic(s2, 1, &t2));
  LoweredFunc *f2 = kiln_lower(s2, 2, (Tensor *[]){x2, t2}, "f", NULL);
  CHECK_NN(f2);
  if (f2) {
    CHECK_CONTAINS(kiln_lowered_str(f2), "parallel (");
    CHECK(strstr(kiln_lowered_str(f2), "ramp(") == NULL);
  }
  /* a last dimension of 24: 8 lanes */
  Tensor *x3 = ph("x3", 3, (int64_t[]){50, 40, 24}, DT_F32);
  Tensor *t3 = topi_unary(TOPI_tanh, x3);
  Schedule *s3 = te_create_schedule(1, &t3);
  CHECK_OK(topi_schedule_generic(s3, 1, &t3));
  LoweredFunc *f3 = kiln_lower(s3, 2, (Tensor *[]){x3, t3}, "f", NULL);
  CHECK_NN(f3);
  if (f3) CHECK_CONTAINS(kiln_lowered_str(f3), ", 1, 8)");
  /* and all run correctly */
  TBatch b = {0};
  TCase *c = tb_add(&b, "chain", 2, (Tensor *[]){x, y}, t, 1e-6);
  if (c) {
    int64_t idx[4];
    for (int64_t i = 0; i < numel(c->ref); i++) {
      unravel(i, 4, shape, idx);
      double v = 1 / (1 + exp(-tget(c->a[0], i))) * tget(c->a[1], idx[3]);
      tset(c->ref, i, v > 0 ? v : 0);
    }
  }
  c = tb_add(&b, "exp odd", 1, &x2, t2, 1e-6);
  ref_map1(c, exp);
  c = tb_add(&b, "tanh 8 lanes", 1, &x3, t3, 1e-6);
  ref_map1(c, tanh);
  tb_run(&b);
}

/* A relayout between channel blocks (NCHW16c -> NCHW8c, channel
 * padding's crops): its 8-lane inner loop reads 8 contiguous floats once
 * the index is simplified knowing the lane's range, so it is a vector
 * copy; only the outer axes that make enough parallel tasks are fused,
 * the others stay loops (no division of a fused index per vector).  A
 * channels-last view of NCHW16c is a vector copy per block of 16. */
static void test_relayout_schedule(void) {
  int64_t shape[5] = {1, 5, 30, 56, 16};
  Tensor *x = ph("x", 5, shape, DT_F32);
  Tensor *t = topi_layout_transform(x, "NCHW16c", "NCHW8c");
  CHECK_NN(t);
  if (!t) return;
  const char *txt = tt_generic_lowered(x, t);
  if (txt) {
    CHECK_CONTAINS(txt, "parallel (");
    CHECK_CONTAINS(txt, ", 1, 8)"); /* ramp(base, 1, 8): the 8 lanes one vector */
    CHECK_CONTAINS(txt, "for (l, 0, 56)"); /* the W axis a loop of its own */
  }
  TBatch b = {0};
  TCase *c = tb_add(&b, "NCHW16c -> NCHW8c", 1, &x, t, 0);
  if (c) {
    int64_t o[5] = {1, 10, 30, 56, 8};
    for (int64_t i = 0; i < numel(c->ref); i++) {
      int64_t idx[5];
      unravel(i, 5, o, idx);
      int64_t ch = idx[1] * 8 + idx[4];
      tset(c->ref, i, tget(c->a[0], ravel(5, shape, (int64_t[]){0, ch / 16, idx[2], idx[3], ch % 16})));
    }
  }
  /* a channels-last view of NCHW16c (ConvNeXt's transpose before its
   * norm): contiguous within each block of 16 lanes, one vector each */
  Tensor *x2 = ph("x2", 5, (int64_t[]){1, 6, 14, 14, 16}, DT_F32);
  Tensor *t2 = topi_transpose(topi_layout_transform(x2, "NCHW16c", "NCHW"), (int64_t[]){0, 2, 3, 1});
  CHECK_NN(t2);
  if (!t2) return;
  Schedule *s2 = te_create_schedule(1, &t2);
  CHECK_OK(topi_schedule_generic(s2, 1, &t2));
  LoweredFunc *f2 = kiln_lower(s2, 2, (Tensor *[]){x2, t2}, "f", NULL);
  CHECK_NN(f2);
  if (f2) CHECK_CONTAINS(kiln_lowered_str(f2), ", 1, 16)");
  c = tb_add(&b, "NCHW16c -> NHWC", 1, &x2, t2, 0);
  if (c) {
    int64_t o[4] = {1, 14, 14, 96};
    for (int64_t i = 0; i < numel(c->ref); i++) {
      int64_t idx[4];
      unravel(i, 4, o, idx);
      tset(c->ref, i, tget(c->a[0], ravel(5, (int64_t[]){1, 6, 14, 14, 16}, (int64_t[]){0, idx[3] / 16, idx[1], idx[2], idx[3] % 16})));
    }
  }
  /* ConvNeXt's block end before a downsampling norm: the MLP's output
   * [HW, C] as NCHW, times the layer scale [C, 1, 1] (read at (c, 0, 0):
   * its trailing axes of extent 1 hold no stride), plus the blocked
   * residual, back to channels-last: one vector per block of 16 */
  Tensor *y = ph("y", 2, (int64_t[]){196, 96}, DT_F32), *sc = ph("sc", 3, (int64_t[]){96, 1, 1}, DT_F32);
  Tensor *t3 = topi_transpose(topi_reshape(y, 4, (int64_t[]){1, 14, 14, 96}), (int64_t[]){0, 3, 1, 2});
  t3 = topi_layout_transform(topi_binary(TOPI_multiply, t3, sc), "NCHW", "NCHW16c");
  t3 = topi_transpose(topi_layout_transform(topi_binary(TOPI_add, t3, x2), "NCHW16c", "NCHW"), (int64_t[]){0, 2, 3, 1});
  CHECK_NN(t3);
  if (!t3) return;
  Schedule *s3 = te_create_schedule(1, &t3);
  CHECK_OK(topi_schedule_generic(s3, 1, &t3));
  LoweredFunc *f3 = kiln_lower(s3, 4, (Tensor *[]){y, sc, x2, t3}, "f", NULL);
  CHECK_NN(f3);
  if (f3) CHECK_CONTAINS(kiln_lowered_str(f3), ", 1, 16)");
  c = tb_add(&b, "scaled NHWC + NCHW16c -> NHWC", 3, (Tensor *[]){y, sc, x2}, t3, 1e-6);
  if (c) {
    int64_t o[4] = {1, 14, 14, 96};
    for (int64_t i = 0; i < numel(c->ref); i++) {
      int64_t idx[4];
      unravel(i, 4, o, idx);
      double r = tget(c->a[2], ravel(5, (int64_t[]){1, 6, 14, 14, 16}, (int64_t[]){0, idx[3] / 16, idx[1], idx[2], idx[3] % 16}));
      tset(c->ref, i, tget(c->a[0], (idx[1] * 14 + idx[2]) * 96 + idx[3]) * tget(c->a[1], idx[3]) + r);
    }
  }
  tb_run(&b);
}

/* A transpose whose last axis reads with a stride and an outer axis
 * contiguously (attention's K^T: a slice of the QKV activation, split
 * into heads, tokens moved last; ViT's pads the tokens too) runs in
 * tiles of 16 x 16: both axes split, the tile loops outside.  Checked
 * against direct references; a last axis read contiguously (a head split
 * keeping the head dimension last) stays one vector copy. */
static void test_transpose_tiles(void) {
  Tensor *x = ph("x", 2, (int64_t[]){48, 96}, DT_F32);
  Tensor *kt = topi_transpose(topi_reshape(topi_strided_slice(x, 1, (int64_t[]){32}, (int64_t[]){96}, NULL, (int64_t[]){1}),
                                           3, (int64_t[]){48, 2, 32}),
                              (int64_t[]){1, 2, 0});
  Tensor *ktp = topi_pad(kt, (int64_t[]){0, 0, 0, 0, 0, 16}, TOPI_PAD_CONSTANT, 0);
  Tensor *t2 = topi_transpose(x, (int64_t[]){1, 0});
  Tensor *q = topi_transpose(topi_reshape(x, 3, (int64_t[]){48, 3, 32}), (int64_t[]){1, 0, 2});
  CHECK(kt && ktp && t2 && q);
  if (!kt || !ktp || !t2 || !q) return;
  Tensor *outs[4] = {kt, ktp, t2, q};
  const char *want[4] = {"inner, 0, 16)", "inner, 0, 16)", "inner, 0, 16)", ", 1, 16)"};
  for (int i = 0; i < 4; i++) {
    Schedule *s = te_create_schedule(1, &outs[i]);
    CHECK_OK(topi_schedule_generic(s, 1, &outs[i]));
    LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){x, outs[i]}, "f", NULL);
    CHECK_NN(f);
    if (!f) continue;
    const char *txt = kiln_lowered_str(f);
    CHECK_MSG(strstr(txt, want[i]) != NULL, "case %d: no '%s' in\n%s", i, want[i], txt);
    if (i < 3) CHECK_MSG(strstr(txt, "ramp(") == NULL, "case %d: a transpose tile is plain loops\n%s", i, txt);
  }
  TBatch b = {0};
  TCase *c = tb_add(&b, "K^T [48, 96] -> [2, 32, 48]", 1, &x, kt, 0);
  TCase *cp = tb_add(&b, "K^T padded [2, 32, 64]", 1, &x, ktp, 0);
  TCase *c2 = tb_add(&b, "transpose [48, 96] -> [96, 48]", 1, &x, t2, 0);
  TCase *cq = tb_add(&b, "head split [3, 48, 32]", 1, &x, q, 0);
  for (int64_t h = 0; h < 3; h++)
    for (int64_t d = 0; d < 32; d++)
      for (int64_t tok = 0; tok < 64; tok++) {
        if (h < 2 && c && tok < 48) tset(c->ref, (h * 32 + d) * 48 + tok, tget(c->a[0], tok * 96 + 32 + h * 32 + d));
        if (h < 2 && cp)
          tset(cp->ref, (h * 32 + d) * 64 + tok, tok < 48 ? tget(cp->a[0], tok * 96 + 32 + h * 32 + d) : 0);
        if (cq && tok < 48) tset(cq->ref, (h * 48 + tok) * 32 + d, tget(cq->a[0], tok * 96 + h * 32 + d));
      }
  for (int64_t i = 0; c2 && i < 96 * 48; i++) tset(c2->ref, i, tget(c2->a[0], (i % 48) * 96 + i / 48));
  tb_run(&b);
}

/* ShuffleNetV2's channel shuffle written as NCHW16c: half the channels
 * sliced from an NCHW tensor, half cropped from a padded NCHW16c one,
 * concatenated, shuffled (reshape, transpose, reshape), padded to whole
 * blocks and blocked again.  Lane m of a block reads one input and lane
 * m + 1 the other, so the lanes loop outside the row: the innermost loop
 * copies one source along W (of 4 or more).  Random shapes, against a
 * direct reference. */
static void test_blocked_shuffle(void) {
  static const int64_t halves[] = {6, 10, 24, 29, 58};
  TBatch b = {0};
  for (int k = 0; k < 4; k++) {
    int64_t n = rnd_range(1, 2), c = halves[test_rand() % 5], h = rnd_range(2, 7), w = rnd_range(4, 30);
    int64_t cb = (c + 15) / 16, ob = (2 * c + 15) / 16;
    Tensor *a = ph("a", 4, (int64_t[]){n, 2 * c, h, w}, DT_F32);
    Tensor *bb = ph("b", 5, (int64_t[]){n, cb, h, w, 16}, DT_F32);
    Tensor *x1 = topi_strided_slice(a, 1, (int64_t[]){0}, (int64_t[]){c}, NULL, (int64_t[]){1});
    Tensor *x2 = topi_strided_slice(topi_layout_transform(bb, "NCHW16c", "NCHW"), 1, (int64_t[]){0}, (int64_t[]){c},
                                    NULL, (int64_t[]){1});
    Tensor *cat = topi_concat(2, (Tensor *[]){x1, x2}, 1);
    Tensor *sh = topi_reshape(topi_transpose(topi_reshape(cat, 5, (int64_t[]){n, 2, c, h, w}), (int64_t[]){0, 2, 1, 3, 4}),
                              4, (int64_t[]){n, 2 * c, h, w});
    Tensor *t = topi_layout_transform(topi_pad(sh, (int64_t[]){0, 0, 0, 0, 0, ob * 16 - 2 * c, 0, 0}, TOPI_PAD_CONSTANT, 0),
                                      "NCHW", "NCHW16c");
    CHECK_NN(t);
    if (!t) return;
    TCase *tc = tb_add(&b, kfmt("shuffle n%lld c%lld h%lld w%lld", (long long)n, (long long)c, (long long)h, (long long)w),
                       2, (Tensor *[]){a, bb}, t, 0);
    if (!tc) continue;
    const char *txt = kiln_lowered_str(tc->f);
    const char *lanes = strstr(txt, "for (m, 0, 16)"), *row = strstr(txt, kfmt("for (l, 0, %lld)", (long long)w));
    CHECK_MSG(lanes && row && lanes < row, "the lanes do not loop outside the row:\n%s", txt);
    int64_t o[5] = {n, ob, h, w, 16};
    for (int64_t i = 0; i < numel(tc->ref); i++) {
      int64_t idx[5];
      unravel(i, 5, o, idx);
      int64_t ch = idx[1] * 16 + idx[4], j = ch / 2;
      double v = 0;
      if (ch < 2 * c && ch % 2 == 0)
        v = tget(tc->a[0], ravel(4, (int64_t[]){n, 2 * c, h, w}, (int64_t[]){idx[0], j, idx[2], idx[3]}));
      else if (ch < 2 * c)
        v = tget(tc->a[1], ravel(5, (int64_t[]){n, cb, h, w, 16}, (int64_t[]){idx[0], j / 16, idx[2], idx[3], j % 16}));
      tset(tc->ref, i, v);
    }
  }
  tb_run(&b);
}

/* A concatenation of 2 to 8 NCHW16c inputs along the channel blocks, with
 * a relu after it (DenseNet's concatenation with the next layer's batch
 * norm and relu, fused): the selects that pick the input test the
 * channel block, an outer loop's variable, so unswitch.c splits the row
 * loop (5-14 columns, enough rows that it stays a loop of its own) into a
 * copy per input and no select is left in the lowered function.  Random
 * shapes, against topi_eval; fails without the select unswitching. */
static void test_concat_unswitched(void) {
  TBatch b = {0};
  for (int k = 0; k < 4; k++) {
    int n = (int)rnd_range(2, 8);
    int64_t h = rnd_range(5, 9), w = rnd_range(5, 14);
    Tensor *xs[8];
    for (int i = 0; i < n; i++) xs[i] = ph(kfmt("x%d", i), 5, (int64_t[]){1, rnd_range(2, 6), h, w, 16}, DT_F32);
    Tensor *t = topi_unary(TOPI_relu, topi_concat(n, xs, 1));
    CHECK_NN(t);
    if (!t) return;
    TCase *tc = tb_add(&b, kfmt("concat of %d, h%lld w%lld", n, (long long)h, (long long)w), n, xs, t, 0);
    if (!tc) continue;
    const char *txt = kiln_lowered_str(tc->f);
    CHECK_MSG(!strstr(txt, "select("), "a select is left in the loops:\n%s", txt);
    if (getenv("KILN_TEST_DUMP")) fprintf(stderr, "%s\n", txt);
    tb_ref_eval(tc);
  }
  tb_run(&b);
}

/* An int8 model's input quantize into the blocked layout: float32 NCHW
 * times 1 / scale, rounded, plus the zero point, clipped to 0..255,
 * uint8, the channels padded to 4 and blocked NCHW4c.  Where the width is
 * a whole number of 16-lane vectors the lanes loop outside the row and
 * the row runs in vectors (quantize_rows: a float load, the rounding and
 * the conversion on 16 lanes, a strided byte store), elsewhere as before.
 * The inputs are multiples of 1/8 times a scale of 4, so every product is
 * exact and half of them lie on a rounding tie (to even); clipped at both
 * ends.  Random shapes, exact against a direct reference. */
static void test_blocked_quantize(void) {
  TBatch b = {0};
  for (int k = 0; k < 4; k++) {
    int64_t n = rnd_range(1, 2), c = rnd_range(1, 4), h = rnd_range(1, 5), w = k < 3 ? 16 * rnd_range(1, 4) : rnd_range(5, 30);
    double zp = (double)rnd_range(0, 255);
    Tensor *x = ph("x", 4, (int64_t[]){n, c, h, w}, DT_F32);
    Tensor *q = topi_binary(TOPI_add, topi_unary(TOPI_round, topi_binary(TOPI_multiply, x, topi_full(0, NULL, DT_F32, 4))),
                            topi_full(0, NULL, DT_F32, zp));
    Tensor *u = topi_cast(topi_clip(q, 0, 255), DT_U8);
    Tensor *t = topi_layout_transform(topi_pad(u, (int64_t[]){0, 0, 0, 0, 0, 4 - c, 0, 0}, TOPI_PAD_CONSTANT, 0), "NCHW",
                                      "NCHW4c");
    CHECK_NN(t);
    if (!t) return;
    TCase *tc = tb_add(&b, kfmt("quantize n%lld c%lld h%lld w%lld zp %g", (long long)n, (long long)c, (long long)h,
                                (long long)w, zp),
                       1, &x, t, 0);
    if (!tc) continue;
    const char *txt = kiln_lowered_str(tc->f);
    CHECK_MSG((strstr(txt, "ramp(") != NULL) == (w % 16 == 0), "w %lld: the row is%s vectorized:\n%s", (long long)w,
              w % 16 ? "" : " not", txt);
    for (int64_t i = 0; i < numel(tc->a[0]); i++) tset(tc->a[0], i, (double)rnd_range(-1200, 1200) / 8);
    int64_t o[5] = {n, 1, h, w, 4};
    for (int64_t i = 0; i < numel(tc->ref); i++) {
      int64_t idx[5];
      unravel(i, 5, o, idx);
      double v = 0;
      if (idx[4] < c) {
        v = nearbyint(4 * tget(tc->a[0], ravel(4, (int64_t[]){n, c, h, w}, (int64_t[]){idx[0], idx[4], idx[2], idx[3]}))) + zp;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
      }
      tset(tc->ref, i, v);
    }
  }
  tb_run(&b);
}

/* A max pool on uint8 (an int8 model's stem pool) or float32 NCHW16c: the
 * block of columns in a local cache (pool_blocked), stored once; random
 * windows, strides, padding and widths (with blocks of 1 to 8 columns), full-range bytes, exact against a direct reference.  An
 * average pool (float32, padding counted or not) is blocked the same way:
 * the sums at the block of the division's loops, within 1e-6. */
static void test_blocked_pool(void) {
  TBatch b = {0};
  for (int k = 0; k < 7; k++) {
    bool f32 = k >= 4, avg = k >= 5, counted = avg && rnd_range(0, 1);
    int64_t n = rnd_range(1, 2), cb = rnd_range(1, 3), h = rnd_range(3, 12), w = rnd_range(3, 20);
    int64_t kh = rnd_range(1, 3), kw = rnd_range(1, 3), sh = rnd_range(1, 2), sw = rnd_range(1, 2);
    int64_t pt = rnd_range(0, kh - 1), pl = rnd_range(0, kw - 1), pb = rnd_range(0, kh - 1), pr = rnd_range(0, kw - 1);
    int64_t oh = (h + pt + pb - kh) / sh + 1, ow = (w + pl + pr - kw) / sw + 1;
    Tensor *x = ph("x", 5, (int64_t[]){n, cb, h, w, 16}, f32 ? DT_F32 : DT_U8);
    Tensor *t = topi_pool2d(x, avg ? TOPI_POOL_AVG : TOPI_POOL_MAX, (int64_t[]){kh, kw}, (int64_t[]){sh, sw},
                            (int64_t[]){1, 1}, (int64_t[]){pt, pl, pb, pr}, false, counted, "NCHW16c");
    CHECK_NN(t);
    if (!t) return;
    TCase *tc = tb_add(&b, kfmt("%s pool%s%s [%lld, %lld, %lld, %lld, 16] %lldx%lld/%lldx%lld pad %lld %lld %lld %lld",
                                avg ? "avg" : "max", f32 ? " float32" : "", counted ? " counted" : "", (long long)n,
                                (long long)cb, (long long)h, (long long)w, (long long)kh, (long long)kw, (long long)sh,
                                (long long)sw, (long long)pt, (long long)pl, (long long)pb, (long long)pr),
                       1, &x, t, avg ? 1e-6 : 0);
    if (!tc) continue;
    const char *txt = kiln_lowered_str(tc->f);
    if (avg) {
      int64_t cols = 8;
      while (cols > 1 && ow % cols) cols--;
      CHECK_MSG(strstr(txt, kfmt("allocate T_pool_sum[float32 * %lld]", (long long)(cols * 16))) != NULL,
                "the pool's sums are not a block of %lld columns:\n%s", (long long)cols, txt);
    } else {
      CHECK_MSG(strstr(txt, ".local") != NULL, "the pool's block is not in a local cache:\n%s", txt);
    }
    if (!f32) fill_int(tc->a[0], 0, 255);
    int64_t in[5] = {n, cb, h, w, 16}, o[5] = {n, cb, oh, ow, 16};
    for (int64_t i = 0; i < numel(tc->ref); i++) {
      int64_t idx[5];
      unravel(i, 5, o, idx);
      double v = -INFINITY, sum = 0;
      int64_t cnt = 0;
      for (int64_t r = 0; r < kh; r++)
        for (int64_t c = 0; c < kw; c++) {
          int64_t y = idx[2] * sh + r - pt, xx = idx[3] * sw + c - pl;
          if (counted) cnt++;
          if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
          if (!counted) cnt++;
          double e = tget(tc->a[0], ravel(5, in, (int64_t[]){idx[0], idx[1], y, xx, idx[4]}));
          v = e > v ? e : v;
          sum += e;
        }
      tset(tc->ref, i, avg ? sum / (double)cnt : v);
    }
  }
  tb_run(&b);
}

/* An injective stage read by an extern op stays in memory. */
static void test_schedule_extern(void) {
  int64_t n = 37;
  Tensor *x = ph("x", 1, &n, DT_F32);
  Tensor *r = topi_unary(TOPI_relu, x);
  Expr **ib, *ob;
  te_extern_buffers(1, &r, "ext", &ib, &ob);
  Expr *i = ir_var("i", DT_I32);
  Stmt *body = ir_for(i, ir_i32(0), ir_i32(n), FOR_SERIAL,
                      ir_store(ob, ir_mul(ir_load(DT_F32, ib[0], i), ir_f32(2)), i));
  Tensor *ext = te_extern("ext", 1, x->shape, DT_F32, 1, &r, ib, ob, body, NULL);
  Tensor *out = topi_unary(TOPI_negative, ext);
  TBatch b = {0};
  TCase *c = tb_add(&b, "relu -> extern -> negative", 1, &x, out, 0);
  if (c)
    for (int64_t e = 0; e < n; e++) tset(c->ref, e, -2 * fmax(tget(c->a[0], e), 0));
  tb_run(&b);
}

static void test_elemwise_errors(void) {
  Tensor *a = ph("a", 2, (int64_t[]){2, 3}, DT_F32), *b = ph("b", 1, (int64_t[]){4}, DT_F32);
  Tensor *i = ph("i", 2, (int64_t[]){2, 3}, DT_I32);
  CHECK(topi_binary(TOPI_add, a, b) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "add: cannot broadcast shapes [2, 3] and [4]");
  CHECK(topi_binary(TOPI_multiply, a, i) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "multiply: operand dtypes differ: float32 ('a') and int32 ('i')");
  CHECK(topi_unary(TOPI_exp, i) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "exp: expected a float tensor, got int32 'i'");
  CHECK(topi_binary(TOPI_left_shift, a, a) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "left_shift: expected integer tensors, got float32");
  Tensor *c3 = ph("c", 3, (int64_t[]){5, 1, 3}, DT_BOOL);
  CHECK(topi_where(c3, a, b) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "where: cannot broadcast shapes [5, 1, 3], [2, 3] and [4]");
  CHECK(topi_where(c3, a, i) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "where: operand dtypes differ");
  Tensor *slope = ph("slope", 2, (int64_t[]){4, 3}, DT_F32);
  CHECK(topi_prelu(a, slope) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "prelu: cannot broadcast shapes [2, 3] and [4, 3]");
  Tensor *slope2 = ph("slope2", 3, (int64_t[]){1, 2, 3}, DT_F32);
  CHECK(topi_prelu(a, slope2) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "prelu: slope shape [1, 2, 3] does not broadcast to the input shape [2, 3]");
  CHECK(topi_clip(a, 1, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "clip: min 1 is greater than max 0");
  CHECK(topi_unary((TopiUnary)999, a) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "unknown operator");
  CHECK(topi_binary(TOPI_add, NULL, a) == NULL);
  CHECK(topi_unary_lookup("gelu") == TOPI_gelu);
  CHECK(topi_binary_lookup("floor_mod") == TOPI_floor_mod);
  CHECK(topi_unary_lookup("nope") == -1);
  CHECK_STR(topi_binary_name(TOPI_power), "power");
  /* symbolic shapes broadcast */
  Expr *n = ir_var("n", DT_I32);
  Tensor *sa = te_placeholder("sa", 2, (Expr *[]){n, ir_i32(3)}, DT_F32);
  Tensor *sb = te_placeholder("sb", 2, (Expr *[]){ir_i32(1), ir_i32(3)}, DT_F32);
  Tensor *sc = topi_binary(TOPI_add, sa, sb);
  CHECK_NN(sc);
  if (sc) CHECK(sc->shape[0] == n);
}

const TestCase topi_tests[] = {
    {"unary_float", test_unary_float},
    {"unary_other_types", test_unary_other_types},
    {"binary", test_binary},
    {"activations", test_activations},
    {"prelu_where", test_prelu_where},
    {"injective_schedule", test_injective_schedule},
    {"relayout_schedule", test_relayout_schedule},
    {"transpose_tiles", test_transpose_tiles},
    {"blocked_shuffle", test_blocked_shuffle},
    {"concat_unswitched", test_concat_unswitched},
    {"blocked_quantize", test_blocked_quantize},
    {"blocked_pool", test_blocked_pool},
    {"schedule_extern", test_schedule_extern},
    {"elemwise_errors", test_elemwise_errors},
    {NULL, NULL},
};
