/*
 * random.c - ONNX's random operators: RandomUniform, RandomNormal, their
 * *Like forms, Bernoulli and Multinomial.
 *
 * Kiln draws random numbers with a counter-based generator built from
 * ordinary graph ops, so it fuses into the consumer's kernel and needs no
 * state: element i of a draw is hash(i + key), where hash is a 32-bit
 * integer mixer (two multiply-xorshift rounds, "lowbias32", whose outputs
 * pass the usual avalanche tests) and key mixes the node's seed and the
 * stream (a second, independent stream for the second uniform of the
 * Box-Muller transform).  A uniform in [0, 1) is the top 24 bits times
 * 2^-24 (float32 resolution, also for double outputs).
 *
 *   RandomUniform    low + (high - low) * u
 *   RandomNormal     mean + scale * sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1]
 *   Bernoulli        u < p
 *   Dropout (training mode, nn.c) keeps x / (1 - ratio) where u >= ratio
 *   Multinomial      per sample, the first class whose cumulative
 *                    probability (softmax of the row's unnormalized log
 *                    probabilities) exceeds u
 *
 * Seeds: the seed attribute decides the numbers, so a model compiled twice
 * draws the same.  Without one, ONNX lets the runtime choose; Kiln derives
 * the seed from the node's name and output, so two unseeded nodes draw
 * different numbers but a compiled model draws the same numbers on every
 * run (there is no generator state carried between runs: a model that
 * needs fresh numbers per run must feed them as an input).  ONNX's
 * reference draws with NumPy's generator, so the node tests cannot be
 * matched value for value; tests/onnx/test_random.py checks Kiln's draws
 * by their statistics and the conformance runner compares the random
 * cases by their support (docs/onnx_opsets.md).
 */
#include "ops.h"

#define U32 dt_make(kDLUInt, 32, 1)

static uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

static GNode *u32(Importer *im, uint32_t v) { return imp_scalar(im, (double)v, U32); }

/* The flat element index of a tensor of shape s, as uint32: a sum of
 * per-axis aranges times strides (constants of sum(s) elements, not of
 * the tensor's size). */
static GNode *flat_index(Importer *im, int r, const int64_t *s) {
  GNode *acc = NULL;
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; d--) {
    void *data;
    int64_t shp[MAXD];
    for (int k = 0; k < r; k++) shp[k] = k == d ? s[d] : 1;
    GNode *c = imp_new_const(im, U32, r, shp, &data);
    if (!c) return NULL;
    for (int64_t i = 0; i < s[d]; i++) ((uint32_t *)data)[i] = (uint32_t)(i * stride);
    acc = acc ? bin(im, "add", acc, c) : c;
    stride *= s[d];
  }
  return acc ? acc : u32(im, 0);
}

/* hash(idx + key), idx uint32 */
static GNode *hash(Importer *im, GNode *idx, uint32_t key) {
  GNode *x = bin(im, "add", idx, u32(im, key));
  const uint32_t mul[2] = {0x7feb352dU, 0x846ca68bU};
  for (int round = 0; round < 2; round++) {
    x = bin(im, "bitwise_xor", x, bin(im, "right_shift", x, u32(im, round ? 15 : 16)));
    x = bin(im, "multiply", x, u32(im, mul[round]));
  }
  return bin(im, "bitwise_xor", x, bin(im, "right_shift", x, u32(im, 16)));
}

/* The node's key for stream k: from the seed attribute, or from the
 * node's name and first output when there is none. */
static uint32_t node_key(Importer *im, uint32_t k) {
  const OnnxAttr *s = onnx_attr_find(N(im), "seed");
  uint32_t h;
  if (s) {
    float f = s->f;
    memcpy(&h, &f, sizeof h);
  } else {
    h = 2166136261U; /* FNV-1a of name and output */
    const char *parts[2] = {N(im)->name, N(im)->noutputs ? N(im)->outputs[0] : ""};
    for (int p = 0; p < 2; p++)
      for (const char *c = parts[p]; c && *c; c++) h = (h ^ (unsigned char)*c) * 16777619U;
  }
  return mix32(mix32(h) + 0x9e3779b9U * (k + 1));
}

/* A uniform float32 in [0, 1) per element of shape s (stream k); open01:
 * in (0, 1] instead. */
static GNode *uniform(Importer *im, int r, const int64_t *s, uint32_t k, bool open01) {
  GNode *h = hash(im, flat_index(im, r, s), node_key(im, k));
  GNode *top = imp_cast(im, bin(im, "right_shift", h, u32(im, 8)), DT_F32);
  if (open01) top = bin(im, "add", top, imp_scalar(im, 1, DT_F32));
  return bin(im, "multiply", top, imp_scalar(im, ldexp(1, -24), DT_F32));
}

/* The dtype attribute (a float type), or dflt. */
static int float_dtype(Importer *im, DType dflt, DType *t) {
  *t = dflt;
  if (!onnx_attr_has(N(im), "dtype")) return 0;
  if (imp_attr_dtype(im, "dtype", 1, t)) return -1;
  if (!dt_is_float(*t)) return imp_error(im, "dtype %s is not a float type (ONNX allows float16, float and double)", dt_str(*t));
  return 0;
}

/* The output shape: the shape attribute, or the input's (the *Like ops). */
static int out_shape(Importer *im, bool like, int *r, int64_t *s, DType *dflt) {
  if (like) {
    GNode *x = in0(im);
    *r = x->type.ndim;
    memcpy(s, x->type.shape, sizeof(int64_t) * (size_t)*r);
    *dflt = dt_is_float(x->type.dtype) ? x->type.dtype : DT_F32;
    return 0;
  }
  const OnnxAttr *a = onnx_attr_find(N(im), "shape");
  if (!a || a->type != ONNX_ATTR_INTS) return imp_error(im, "needs the attribute 'shape' (a list of ints)");
  if (a->n > MAXD) return imp_error(im, "shape has %d dimensions (at most %d)", a->n, MAXD);
  *r = a->n;
  for (int i = 0; i < a->n; i++) {
    if (a->ints[i] < 0) return imp_error(im, "shape[%d] is %lld: dimensions must be non-negative", i, (long long)a->ints[i]);
    s[i] = a->ints[i];
  }
  int64_t n;
  if (imp_numel_in(im, "the output", *r, s, IMP_MAX_COUNT, &n)) return -1;
  *dflt = DT_F32;
  return 0;
}

int onnx_h_random(Importer *im) {
  const char *op = N(im)->op_type;
  bool like = strstr(op, "Like") != NULL, normal = !strncmp(op, "RandomNormal", 12);
  int r = 0;
  int64_t s[MAXD];
  DType dflt = DT_F32, t;
  if (out_shape(im, like, &r, s, &dflt) || float_dtype(im, dflt, &t)) return -1;
  GNode *v;
  if (normal) {
    double mean = onnx_attr_float(N(im), "mean", 0), scale = onnx_attr_float(N(im), "scale", 1);
    GNode *u1 = uniform(im, r, s, 0, true), *u2 = uniform(im, r, s, 1, false);
    GNode *rad = un(im, "sqrt", bin(im, "multiply", imp_scalar(im, -2, DT_F32), un(im, "log", u1)));
    GNode *z = bin(im, "multiply", rad, un(im, "cos", bin(im, "multiply", u2, imp_scalar(im, 2 * M_PI, DT_F32))));
    v = bin(im, "add", bin(im, "multiply", z, imp_scalar(im, scale, DT_F32)), imp_scalar(im, mean, DT_F32));
  } else {
    double lo = onnx_attr_float(N(im), "low", 0), hi = onnx_attr_float(N(im), "high", 1);
    if (!(hi >= lo)) return imp_error(im, "high (%g) is below low (%g)", hi, lo);
    GNode *u = uniform(im, r, s, 0, false);
    v = bin(im, "add", bin(im, "multiply", u, imp_scalar(im, hi - lo, DT_F32)), imp_scalar(im, lo, DT_F32));
  }
  return out0(im, imp_cast(im, v, t));
}

GNode *onnx_random_uniform_like(Importer *im, GNode *x) {
  return x ? uniform(im, x->type.ndim, x->type.shape, 0, false) : NULL;
}

int onnx_h_Bernoulli(Importer *im) {
  GNode *p = in0(im);
  if (!dt_is_float(p->type.dtype)) return imp_error(im, "input must be a float tensor of probabilities, got %s", dt_str(p->type.dtype));
  DType t = p->type.dtype;
  if (onnx_attr_has(N(im), "dtype") && imp_attr_dtype(im, "dtype", 1, &t)) return -1;
  GNode *u = uniform(im, p->type.ndim, p->type.shape, 0, false);
  return out0(im, imp_cast(im, bin(im, "less", u, imp_cast(im, p, DT_F32)), t));
}

int onnx_h_Multinomial(Importer *im) {
  GNode *x = in0(im);
  if (x->type.ndim != 2 || !dt_is_float(x->type.dtype))
    return imp_error(im, "input must be a [batch_size, class_size] float tensor, got %s", ttype_str(&x->type));
  int64_t b = x->type.shape[0], c = x->type.shape[1], n, bn_total;
  if (imp_attr_i64(im, "sample_size", 1, 1, IMP_MAX_COUNT, &n) ||
      imp_mul_count(im, "the output (batch_size x sample_size)", b, n, IMP_MAX_COUNT, &bn_total))
    return -1;
  if (c < 1) return imp_error(im, "class_size is 0: there is no class to draw");
  if (c > 4096) return imp_error(im, "class_size %lld: Kiln's Multinomial takes at most 4096 classes", (long long)c);
  DType t = DT_I32;
  if (onnx_attr_has(N(im), "dtype") && imp_attr_dtype(im, "dtype", 6, &t)) return -1;
  if (!dt_eq(t, DT_I32) && !dt_eq(t, DT_I64)) return imp_error(im, "dtype %s: Multinomial outputs int32 or int64", dt_str(t));
  /* cumulative probabilities [b, c]: exp(x - max) times an upper-triangular ones matrix, normalized */
  int64_t ax = 1;
  GNode *xf = imp_cast(im, x, DT_F32);
  GNode *e = un(im, "exp", bin(im, "subtract", xf, imp_reduce(im, "max", xf, 1, &ax, true)));
  void *data;
  int64_t cc[2] = {c, c};
  GNode *tri = imp_new_const(im, DT_F32, 2, cc, &data);
  if (!tri) return -1;
  for (int64_t i = 0; i < c; i++)
    for (int64_t j = 0; j < c; j++) ((float *)data)[i * c + j] = j <= i ? 1.0f : 0.0f; /* row i: classes <= i */
  GNode *cdf = dense(im, e, tri); /* [b, c]: sum_{j <= i} e[j] */
  GNode *total = imp_slice(im, cdf, 1, c - 1, c);
  int64_t bn[2] = {b, n};
  GNode *u = bin(im, "multiply", uniform(im, 2, bn, 0, false), total); /* [b, n] */
  /* class = #{i < c - 1 : cdf[i] <= u} */
  GNode *head = imp_expand_dims(im, imp_slice(im, cdf, 1, 0, c - 1), 1); /* [b, 1, c-1] */
  GNode *cnt;
  if (c == 1) {
    cnt = imp_scalar(im, 0, t);
    int64_t shp[2] = {b, n};
    GAttrs a = gattrs_new();
    ga_ints(&a, "shape", 2, shp);
    cnt = imp_call(im, "broadcast_to", 1, &cnt, a);
    return out0(im, cnt);
  }
  GNode *le = bin(im, "less_equal", head, imp_expand_dims(im, u, 2)); /* [b, n, c-1] */
  int64_t last = 2;
  cnt = imp_reduce(im, "sum", imp_cast(im, le, DT_I32), 1, &last, false);
  return out0(im, imp_cast(im, cnt, t));
}
