/*
 * transformer.c - the operators of transformer models: ONNX's
 * Attention, RotaryEmbedding, RMSNormalization, GroupNormalization and the
 * newer activations (Gelu, Mish, Swish), and the com.microsoft operators
 * PyTorch's exporter and ONNX Runtime's transformer optimizer emit (Gelu,
 * FastGelu, BiasGelu, SkipLayerNormalization, SkipSimplifiedLayerNormalization,
 * SimplifiedLayerNormalization, Attention, MultiHeadAttention), and
 * ai.onnx.preview's FlexAttention.
 *
 * Each is lowered at import to existing graph calls (matmuls, softmax,
 * reductions, elementwise), so fusion and the schedules see ordinary ops.
 * Masks that depend only on shapes (causal, sliding window) are constants;
 * those that depend on an input (nonpad_kv_seqlen, a run-time attn_mask)
 * are computed by comparisons in the graph.  Half-precision attention is
 * computed in float32 (the scores and the softmax) and cast back, as ONNX
 * Runtime does.
 */
#include "ops.h"

static GNode *sc(Importer *im, double v, GNode *like) { return imp_scalar_like(im, v, like); }

static bool is_ms(Importer *im) { return !strcmp(N(im)->domain, "com.microsoft"); }

/* ---- activations ---- */

/* 0.5 x (1 + erf(x / sqrt 2)), or the tanh form */
static GNode *gelu(Importer *im, GNode *x, bool tanh_form) {
  if (!x) return NULL;
  GNode *inner;
  if (tanh_form) {
    GNode *x3 = bin(im, "multiply", bin(im, "multiply", x, x), x);
    GNode *t = bin(im, "add", x, bin(im, "multiply", x3, sc(im, 0.044715, x)));
    inner = un(im, "tanh", bin(im, "multiply", t, sc(im, sqrt(2.0 / M_PI), x)));
  } else {
    inner = un(im, "erf", bin(im, "multiply", x, sc(im, M_SQRT1_2, x)));
  }
  return bin(im, "multiply", bin(im, "multiply", x, sc(im, 0.5, x)), bin(im, "add", inner, sc(im, 1.0, x)));
}

static GNode *float_input(Importer *im, int i) {
  GNode *x = imp_input(im, i);
  if (x && !dt_is_float(x->type.dtype))
    return imp_error(im, "input %d is %s, expected a floating-point tensor", i, dt_str(x->type.dtype)), NULL;
  return x;
}

int onnx_h_Gelu(Importer *im) {
  GNode *x = float_input(im, 0);
  if (!x) return -1;
  const char *op = N(im)->op_type;
  bool tanh_form = !strcmp(op, "FastGelu");
  if (!is_ms(im)) {
    const char *ap = onnx_attr_string(N(im), "approximate", "none");
    if (strcmp(ap, "none") && strcmp(ap, "tanh"))
      return imp_error(im, "approximate = '%s' is not supported (none or tanh)", ap);
    tanh_form = !strcmp(ap, "tanh");
  } else if (imp_input(im, 1)) { /* FastGelu's and BiasGelu's bias */
    x = bin(im, "add", x, imp_input(im, 1));
  }
  return imp_set_output(im, 0, gelu(im, x, tanh_form));
}

int onnx_h_Mish(Importer *im) {
  GNode *x = float_input(im, 0);
  if (!x) return -1;
  return imp_set_output(im, 0, bin(im, "multiply", x, un(im, "tanh", un(im, "nn.softplus", x))));
}

int onnx_h_Swish(Importer *im) {
  GNode *x = float_input(im, 0);
  if (!x) return -1;
  double alpha = onnx_attr_float(N(im), "alpha", 1.0f);
  GNode *ax = alpha == 1.0 ? x : bin(im, "multiply", x, sc(im, alpha, x));
  return imp_set_output(im, 0, bin(im, "multiply", x, un(im, "sigmoid", ax)));
}

/* SwiGLU (opset 28): swish(a) * b, with swish(a) = a * sigmoid(alpha a) */
int onnx_h_SwiGLU(Importer *im) {
  GNode *a = float_input(im, 0), *b = imp_input(im, 1);
  if (!a || !b) return imp_error(im, "needs A and B");
  if (!ttype_eq(&a->type, &b->type)) return imp_error(im, "A %s and B %s must have the same type", ttype_str(&a->type), ttype_str(&b->type));
  double alpha = onnx_attr_float(N(im), "alpha", 1.0f);
  GNode *aa = alpha == 1.0 ? a : bin(im, "multiply", a, sc(im, alpha, a));
  return imp_set_output(im, 0, bin(im, "multiply", bin(im, "multiply", a, un(im, "sigmoid", aa)), b));
}

/* ---- normalizations ---- */

static int stash_check(Importer *im) {
  int64_t stash = onnx_attr_int(N(im), "stash_type", 1);
  if (stash != 1) return imp_error(im, "stash_type = %lld is not supported (1: float32)", (long long)stash);
  return 0;
}

/* x / sqrt(mean(x^2 over axes ax..) + eps), computed in float32 */
static GNode *rms_norm(Importer *im, GNode *x, int ax, double eps) {
  int nd = x->type.ndim;
  int64_t axes[MAXD];
  int na = 0;
  for (int i = ax; i < nd; i++) axes[na++] = i;
  GNode *xs = imp_cast(im, x, DT_F32);
  GNode *ms = imp_reduce(im, "mean", bin(im, "multiply", xs, xs), na, axes, true);
  GNode *inv = un(im, "rsqrt", bin(im, "add", ms, imp_scalar(im, eps, DT_F32)));
  return imp_cast(im, bin(im, "multiply", xs, inv), x->type.dtype);
}

int onnx_h_RMSNormalization(Importer *im) {
  GNode *x = float_input(im, 0), *w = imp_input(im, 1);
  if (!x || !w) return imp_error(im, "needs X and scale");
  if (stash_check(im)) return -1;
  int ax;
  if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", -1), x->type.ndim, &ax)) return -1;
  GNode *y = rms_norm(im, x, ax, onnx_attr_float(N(im), "epsilon", 1e-5f));
  return imp_set_output(im, 0, bin(im, "multiply", y, w));
}

/* com.microsoft SimplifiedLayerNormalization: RMSNormalization with the
 * attribute names of LayerNormalization. */
int onnx_h_SimplifiedLayerNormalization(Importer *im) { return onnx_h_RMSNormalization(im); }

/* layer norm of x over the last axis, in float32 (mean and 1/std too) */
static GNode *layer_norm(Importer *im, GNode *x, double eps, GNode **mean_out, GNode **inv_out) {
  int64_t ax = x->type.ndim - 1;
  GNode *xs = imp_cast(im, x, DT_F32);
  GNode *mean = imp_reduce(im, "mean", xs, 1, &ax, true);
  GNode *d = bin(im, "subtract", xs, mean);
  GNode *var = imp_reduce(im, "mean", bin(im, "multiply", d, d), 1, &ax, true);
  GNode *inv = un(im, "rsqrt", bin(im, "add", var, imp_scalar(im, eps, DT_F32)));
  if (mean_out) *mean_out = mean;
  if (inv_out) *inv_out = inv;
  return imp_cast(im, bin(im, "multiply", d, inv), x->type.dtype);
}

/* com.microsoft SkipLayerNormalization (input, skip, gamma, beta?, bias?)
 * and SkipSimplifiedLayerNormalization (input, skip, gamma, bias?):
 * s = input + skip (+ bias); y = norm(s) * gamma (+ beta); outputs y,
 * mean, inv_std_var, s. */
int onnx_h_SkipLayerNormalization(Importer *im) {
  bool simplified = !strcmp(N(im)->op_type, "SkipSimplifiedLayerNormalization");
  GNode *x = float_input(im, 0), *skip = imp_input(im, 1), *gamma = imp_input(im, 2);
  if (!x || !skip || !gamma) return imp_error(im, "needs input, skip and gamma");
  GNode *beta = simplified ? NULL : imp_input(im, 3), *bias = imp_input(im, simplified ? 3 : 4);
  double eps = onnx_attr_float(N(im), "epsilon", 1e-12f);
  GNode *s = bin(im, "add", x, skip);
  if (bias) s = bin(im, "add", s, bias);
  GNode *mean = NULL, *inv = NULL, *y;
  if (simplified) y = rms_norm(im, s, s ? s->type.ndim - 1 : 0, eps);
  else y = layer_norm(im, s, eps, &mean, &inv);
  y = bin(im, "multiply", y, gamma);
  if (beta) y = bin(im, "add", y, beta);
  if (imp_set_output(im, 0, y)) return -1;
  if ((imp_want_output(im, 1) || imp_want_output(im, 2)) && simplified)
    return imp_error(im, "the mean and inv_std_var outputs are not supported");
  if (imp_want_output(im, 1) && imp_set_output(im, 1, mean)) return -1;
  if (imp_want_output(im, 2) && imp_set_output(im, 2, inv)) return -1;
  if (imp_want_output(im, 3) && imp_set_output(im, 3, s)) return -1;
  return 0;
}

/* GroupNormalization: x [N, C, ...] normalized over each group of C/G
 * channels and the spatial axes; scale and bias per group (version 18)
 * or per channel (version 21). */
int onnx_h_GroupNormalization(Importer *im) {
  GNode *x = float_input(im, 0), *scale = imp_input(im, 1), *bias = imp_input(im, 2);
  if (!x || !scale || !bias) return imp_error(im, "needs X, scale and bias");
  if (stash_check(im)) return -1;
  int nd = x->type.ndim;
  int64_t G = onnx_attr_int(N(im), "num_groups", 0);
  if (nd < 2) return imp_error(im, "X has rank %d, expected [N, C, ...]", nd);
  int64_t Nb = x->type.shape[0], C = x->type.shape[1];
  if (G <= 0 || C % G) return imp_error(im, "num_groups = %lld does not divide the %lld channels", (long long)G, (long long)C);
  bool per_channel = imp_opset(im) >= 21;
  int64_t want = per_channel ? C : G;
  if (ttype_numel(&scale->type) != want || ttype_numel(&bias->type) != want)
    return imp_error(im, "scale and bias must hold %lld values (one per %s) at opset %lld, got %s and %s", (long long)want,
                     per_channel ? "channel" : "group", (long long)imp_opset(im), ttype_str(&scale->type),
                     ttype_str(&bias->type));
  int64_t rest = 1;
  for (int i = 2; i < nd; i++) rest *= x->type.shape[i];
  int64_t s3[3] = {Nb, G, C / G * rest};
  int64_t ax = 2;
  GNode *xs = imp_cast(im, imp_reshape(im, x, 3, s3), DT_F32);
  GNode *mean = imp_reduce(im, "mean", xs, 1, &ax, true);
  GNode *d = bin(im, "subtract", xs, mean);
  GNode *var = imp_reduce(im, "mean", bin(im, "multiply", d, d), 1, &ax, true);
  GNode *y = bin(im, "multiply", d, un(im, "rsqrt", bin(im, "add", var, imp_scalar(im, onnx_attr_float(N(im), "epsilon", 1e-5f), DT_F32))));
  y = imp_cast(im, y, x->type.dtype);
  int64_t bshape[MAXD];
  if (per_channel) {
    y = imp_reshape(im, y, nd, x->type.shape);
    bshape[0] = C;
    for (int i = 1; i < nd - 1; i++) bshape[i] = 1;
    scale = imp_reshape(im, scale, nd - 1, bshape);
    bias = imp_reshape(im, bias, nd - 1, bshape);
    return imp_set_output(im, 0, bin(im, "add", bin(im, "multiply", y, scale), bias));
  }
  int64_t g2[2] = {G, 1};
  y = bin(im, "add", bin(im, "multiply", y, imp_reshape(im, scale, 2, g2)), imp_reshape(im, bias, 2, g2));
  return imp_set_output(im, 0, imp_reshape(im, y, nd, x->type.shape));
}

/* ---- rotary embedding ---- */

static GNode *slice_last(Importer *im, GNode *x, int64_t b, int64_t e, int64_t step) {
  if (!x) return NULL;
  GAttrs a = gattrs_new();
  int64_t ax = x->type.ndim - 1;
  ga_ints(&a, "begin", 1, &b);
  ga_ints(&a, "end", 1, &e);
  ga_ints(&a, "strides", 1, &step);
  ga_ints(&a, "axes", 1, &ax);
  return imp_call(im, "strided_slice", 1, &x, a);
}

static GNode *concat(Importer *im, int n, GNode **xs, int axis) {
  for (int i = 0; i < n; i++)
    if (!xs[i]) return NULL;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", axis < 0 ? axis + xs[0]->type.ndim : axis);
  return imp_call(im, "concatenate", n, xs, a);
}

/* x [B, S, H, D] rotated with cos, sin [B or 1, S, D'/2] over its first D'
 * channels (halves, or interleaved pairs). */
static GNode *rotate(Importer *im, GNode *x, GNode *cosc, GNode *sinc, int64_t rd, bool interleaved) {
  if (!x || !cosc || !sinc) return NULL;
  int64_t D = x->type.shape[3], half = rd / 2;
  GNode *xr = rd == D ? x : slice_last(im, x, 0, rd, 1);
  GNode *x1 = interleaved ? slice_last(im, xr, 0, rd, 2) : slice_last(im, xr, 0, half, 1);
  GNode *x2 = interleaved ? slice_last(im, xr, 1, rd, 2) : slice_last(im, xr, half, rd, 1);
  GNode *c = imp_expand_dims(im, cosc, 2), *s = imp_expand_dims(im, sinc, 2);
  GNode *real = bin(im, "subtract", bin(im, "multiply", c, x1), bin(im, "multiply", s, x2));
  GNode *imag = bin(im, "add", bin(im, "multiply", s, x1), bin(im, "multiply", c, x2));
  GNode *rot;
  if (interleaved) {
    GNode *pair[2] = {imp_expand_dims(im, real, 4), imp_expand_dims(im, imag, 4)};
    GNode *cc = concat(im, 2, pair, 4);
    int64_t s4[4] = {x->type.shape[0], x->type.shape[1], x->type.shape[2], rd};
    rot = imp_reshape(im, cc, 4, s4);
  } else {
    GNode *pair[2] = {real, imag};
    rot = concat(im, 2, pair, 3);
  }
  if (rd == D) return rot;
  GNode *parts[2] = {rot, slice_last(im, x, rd, D, 1)};
  return concat(im, 2, parts, 3);
}

int onnx_h_RotaryEmbedding(Importer *im) {
  GNode *x = float_input(im, 0), *cosc = imp_input(im, 1), *sinc = imp_input(im, 2), *pos = imp_input(im, 3);
  if (!x || !cosc || !sinc) return imp_error(im, "needs X, cos_cache and sin_cache");
  int nd = x->type.ndim;
  int64_t nh = onnx_attr_int(N(im), "num_heads", 0), rd = onnx_attr_int(N(im), "rotary_embedding_dim", 0);
  bool interleaved = onnx_attr_int(N(im), "interleaved", 0) != 0;
  int64_t perm[4] = {0, 2, 1, 3};
  GNode *x4;
  if (nd == 4) {
    x4 = imp_transpose(im, x, 4, perm); /* [B, H, S, D] -> [B, S, H, D] */
  } else if (nd == 3) {
    if (nh <= 0 || x->type.shape[2] % nh)
      return imp_error(im, "a 3-D input needs num_heads dividing its hidden size %lld, got %lld",
                       (long long)x->type.shape[2], (long long)nh);
    int64_t s4[4] = {x->type.shape[0], x->type.shape[1], nh, x->type.shape[2] / nh};
    x4 = imp_reshape(im, x, 4, s4);
  } else {
    return imp_error(im, "X has rank %d, expected 3 or 4", nd);
  }
  if (!x4) return -1;
  int64_t D = x4->type.shape[3];
  if (rd == 0) rd = D;
  if (rd < 0 || rd > D || rd % 2) return imp_error(im, "rotary_embedding_dim %lld must be even and at most the head size %lld",
                                         (long long)rd, (long long)D);
  if (pos) {
    GAttrs a0 = gattrs_new(), a1 = gattrs_new();
    ga_int(&a0, "axis", 0);
    ga_int(&a1, "axis", 0);
    GNode *ac[2] = {cosc, pos}, *as[2] = {sinc, pos};
    cosc = imp_call(im, "take", 2, ac, a0);
    sinc = imp_call(im, "take", 2, as, a1);
    if (!cosc || !sinc) return -1;
  }
  if (cosc->type.ndim != 3 || cosc->type.shape[2] != rd / 2 || !ttype_eq(&cosc->type, &sinc->type))
    return imp_error(im, "cos and sin caches must be [batch, sequence, %lld] (after position_ids), got %s and %s",
                     (long long)(rd / 2), ttype_str(&cosc->type), ttype_str(&sinc->type));
  GNode *y = rotate(im, x4, cosc, sinc, rd, interleaved);
  y = nd == 4 ? imp_transpose(im, y, 4, perm) : imp_reshape(im, y, 3, x->type.shape);
  return imp_set_output(im, 0, y);
}

/* ---- attention ---- */

/* [B, S, H*D] -> [B, H, S, D] */
static GNode *split_heads(Importer *im, GNode *x, int64_t h) {
  if (!x) return NULL;
  int64_t s4[4] = {x->type.shape[0], x->type.shape[1], h, x->type.shape[2] / h}, perm[4] = {0, 2, 1, 3};
  return imp_transpose(im, imp_reshape(im, x, 4, s4), 4, perm);
}

/* [B, H, S, D] -> [B, S, H*D] */
static GNode *merge_heads(Importer *im, GNode *x) {
  if (!x) return NULL;
  int64_t perm[4] = {0, 2, 1, 3}, s3[3] = {x->type.shape[0], x->type.shape[2], x->type.shape[1] * x->type.shape[3]};
  return imp_reshape(im, imp_transpose(im, x, 4, perm), 3, s3);
}

/* [B, Hkv, S, D] with each head repeated g times: [B, Hkv*g, S, D] */
static GNode *repeat_heads(Importer *im, GNode *x, int64_t g) {
  if (!x || g == 1) return x;
  int64_t B = x->type.shape[0], H = x->type.shape[1], S = x->type.shape[2], D = x->type.shape[3];
  int64_t s5[5] = {B, H, g, S, D}, s4[4] = {B, H * g, S, D};
  GNode *e = imp_expand_dims(im, x, 2);
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", 5, s5);
  GNode *b = e ? imp_call(im, "broadcast_to", 1, &e, a) : NULL;
  return imp_reshape(im, b, 4, s4);
}

/* A constant [Sq, Skv] additive bias: 0 where keep(i, j, off), else -inf. */
typedef bool (*KeepFn)(int64_t i, int64_t j, int64_t off, int64_t l, int64_t r);
static bool keep_causal(int64_t i, int64_t j, int64_t off, int64_t l, int64_t r) {
  (void)l, (void)r;
  return j <= i + off;
}
static bool keep_window(int64_t i, int64_t j, int64_t off, int64_t l, int64_t r) {
  int64_t d = i + off - j;
  return (l < 0 || d <= l) && (r < 0 || -d <= r);
}
static GNode *const_bias(Importer *im, int64_t sq, int64_t skv, KeepFn keep, int64_t off, int64_t l, int64_t r) {
  int64_t shape[2] = {sq, skv};
  void *p;
  GNode *c = imp_new_const(im, DT_F32, 2, shape, &p);
  if (!c) return NULL;
  float *d = p;
  for (int64_t i = 0; i < sq; i++)
    for (int64_t j = 0; j < skv; j++) d[i * skv + j] = keep(i, j, off, l, r) ? 0.0f : -INFINITY;
  return c;
}

/* The same with a per-batch offset (a run-time [B] tensor): [B, 1, Sq, Skv]. */
static GNode *batch_bias(Importer *im, int64_t sq, int64_t skv, bool window, GNode *off, int64_t l, int64_t r) {
  int64_t shape[4] = {1, 1, sq, skv}, B = off->type.shape[0];
  void *p;
  GNode *ij = imp_new_const(im, DT_I64, 4, shape, &p); /* j - i */
  if (!ij) return NULL;
  int64_t *d = p;
  for (int64_t i = 0; i < sq; i++)
    for (int64_t j = 0; j < skv; j++) d[i * skv + j] = j - i;
  int64_t s4[4] = {B, 1, 1, 1};
  GNode *o = imp_reshape(im, imp_cast(im, off, DT_I64), 4, s4);
  GNode *keep;
  if (!window) {
    keep = bin(im, "less_equal", ij, o); /* j <= i + off */
  } else {
    GNode *dd = bin(im, "subtract", o, ij); /* i + off - j */
    keep = imp_scalar(im, 1, DT_BOOL);
    if (l >= 0) keep = bin(im, "logical_and", keep, bin(im, "less_equal", dd, imp_scalar(im, (double)l, DT_I64)));
    if (r >= 0) keep = bin(im, "logical_and", keep, bin(im, "greater_equal", dd, imp_scalar(im, (double)-r, DT_I64)));
  }
  return imp_where(im, keep, imp_scalar(im, 0, DT_F32), imp_scalar(im, -INFINITY, DT_F32));
}

static GNode *add_bias(Importer *im, GNode *a, GNode *b) { return !a ? b : !b ? a : bin(im, "add", a, b); }

typedef struct AttnArgs {
  GNode *q, *k, *v;      /* [B, H, S, D] (k, v with the past) */
  GNode *mask;           /* additive float32 bias or NULL */
  double scale;          /* 0: 1/sqrt(D) */
  double softcap;
  int mode;              /* qk_matmul_output_mode */
  DType softmax_t;       /* the softmax's precision (float32 or the inputs' type) */
  GNode *qk_out;         /* out: the qk_matmul_output */
} AttnArgs;

/* x rounded to t's precision (kept in float32): where ONNX's reference
 * rounds a half-precision attention's intermediate results, so does Kiln. */
static GNode *rnd(Importer *im, GNode *x, DType t) { return dt_eq(t, DT_F32) ? x : imp_cast(im, imp_cast(im, x, t), DT_F32); }

/* softmax(q k^T * scale + bias) v, in float32 with the intermediate
 * results rounded to the inputs' type; rows whose bias is all -inf give
 * zeros. */
static GNode *attention_core(Importer *im, AttnArgs *a) {
  GNode *q = a->q, *k = a->k, *v = a->v;
  if (!q || !k || !v) return NULL;
  DType t = q->type.dtype;
  q = imp_cast(im, q, DT_F32);
  k = imp_cast(im, k, DT_F32);
  v = imp_cast(im, v, DT_F32);
  double scale = a->scale ? a->scale : 1.0 / sqrt((double)q->type.shape[3]);
  GNode *rs = rnd(im, imp_scalar(im, sqrt(scale), DT_F32), t);
  q = rnd(im, bin(im, "multiply", q, rs), t);
  k = rnd(im, bin(im, "multiply", k, rs), t);
  int64_t perm[4] = {0, 1, 3, 2};
  GNode *s = rnd(im, bin(im, "nn.matmul", q, imp_transpose(im, k, 4, perm)), t);
  if (a->softcap > 0) {
    GNode *c = imp_scalar(im, a->softcap, DT_F32);
    s = rnd(im, bin(im, "multiply", un(im, "tanh", bin(im, "divide", s, c)), c), t);
  }
  GNode *qk = s;
  if (a->mask) s = rnd(im, bin(im, "add", s, a->mask), t);
  if (a->mode == 2) qk = s;
  GNode *p;
  if (dt_eq(a->softmax_t, DT_F32)) {
    GAttrs at = gattrs_new();
    ga_int(&at, "axis", 3);
    p = s ? imp_call(im, "nn.softmax", 1, &s, at) : NULL;
  } else {
    /* softmax in the inputs' half precision, each step rounded as ONNX's
     * reference computes it: exp(x - max) / sum */
    DType st = a->softmax_t;
    int64_t ax = 3;
    GNode *m = imp_reduce(im, "max", s, 1, &ax, true);
    m = imp_where(im, bin(im, "equal", m, imp_scalar(im, -INFINITY, DT_F32)), imp_scalar(im, 0, DT_F32), m);
    GNode *e = rnd(im, un(im, "exp", rnd(im, bin(im, "subtract", s, m), st)), st);
    GNode *sum = rnd(im, imp_reduce(im, "sum", e, 1, &ax, true), st);
    p = rnd(im, bin(im, "divide", e, sum), st);
  }
  if (a->mask) {
    int64_t ax = a->mask->type.ndim - 1;
    GNode *mx = imp_reduce(im, "max", a->mask, 1, &ax, true);
    GNode *dead = bin(im, "equal", mx, imp_scalar(im, -INFINITY, DT_F32));
    p = imp_where(im, dead, imp_scalar(im, 0, DT_F32), p);
  }
  p = rnd(im, p, t);
  if (a->mode == 3) qk = p;
  a->qk_out = imp_cast(im, qk, t);
  return imp_cast(im, bin(im, "nn.matmul", p, v), t);
}

/* The attn_mask as an additive float32 bias over Skv keys (a shorter mask
 * is padded with masked keys). */
static GNode *mask_bias(Importer *im, GNode *m, int64_t skv) {
  if (!m) return NULL;
  int nd = m->type.ndim;
  int64_t last = m->type.shape[nd - 1];
  if (last > skv) return imp_error(im, "attn_mask has %lld keys, more than the %lld of K", (long long)last, (long long)skv), NULL;
  bool is_bool = dt_is_bool(m->type.dtype);
  GNode *b = is_bool ? imp_where(im, m, imp_scalar(im, 0, DT_F32), imp_scalar(im, -INFINITY, DT_F32)) : imp_cast(im, m, DT_F32);
  if (last < skv) {
    int64_t pads[2 * MAXD] = {0};
    pads[2 * (nd - 1) + 1] = skv - last; /* Kiln's nn.pad: (begin, end) per axis */
    GAttrs a = gattrs_new();
    ga_ints(&a, "pads", 2 * nd, pads);
    ga_str(&a, "pad_mode", "constant");
    ga_float(&a, "pad_value", -INFINITY);
    b = b ? imp_call(im, "nn.pad", 1, &b, a) : NULL;
  }
  return b;
}

int onnx_h_Attention(Importer *im) {
  if (is_ms(im)) return imp_error(im, "internal: com.microsoft Attention reached the ONNX handler");
  GNode *Q = float_input(im, 0), *K = imp_input(im, 1), *V = imp_input(im, 2);
  GNode *mask = imp_input(im, 3), *pk = imp_input(im, 4), *pv = imp_input(im, 5), *nonpad = imp_input(im, 6);
  if (!Q || !K || !V) return imp_error(im, "needs Q, K and V");
  int nd = Q->type.ndim;
  if (nd != K->type.ndim || nd != V->type.ndim || (nd != 3 && nd != 4))
    return imp_error(im, "Q, K and V must all be 3-D or all 4-D, got %s, %s, %s", ttype_str(&Q->type),
                     ttype_str(&K->type), ttype_str(&V->type));
  if (!pk != !pv) return imp_error(im, "past_key and past_value must be given together");
  if (nonpad && pk) return imp_error(im, "nonpad_kv_seqlen cannot be combined with past_key/past_value");
  int64_t qh = onnx_attr_int(N(im), "q_num_heads", 0), kvh = onnx_attr_int(N(im), "kv_num_heads", 0);
  if (nd == 3) {
    if (qh <= 0 || kvh <= 0 || Q->type.shape[2] % qh || K->type.shape[2] % kvh || V->type.shape[2] % kvh)
      return imp_error(im, "3-D inputs need q_num_heads and kv_num_heads dividing their hidden sizes");
    Q = split_heads(im, Q, qh);
    K = split_heads(im, K, kvh);
    V = split_heads(im, V, kvh);
    if (!Q || !K || !V) return -1;
  }
  qh = Q->type.shape[1];
  kvh = K->type.shape[1];
  if (V->type.shape[1] != kvh || qh % kvh)
    return imp_error(im, "%lld query heads cannot be grouped over %lld key and %lld value heads", (long long)qh,
                     (long long)kvh, (long long)V->type.shape[1]);
  int64_t past = 0;
  if (pk) {
    past = pk->type.shape[2];
    GNode *kk[2] = {pk, K}, *vv[2] = {pv, V};
    K = concat(im, 2, kk, 2);
    V = concat(im, 2, vv, 2);
    if (!K || !V) return -1;
  }
  int64_t sq = Q->type.shape[2], skv = K->type.shape[2];
  int64_t lw = onnx_attr_int(N(im), "left_window_size", -1), rw = onnx_attr_int(N(im), "right_window_size", -1);
  bool causal = onnx_attr_int(N(im), "is_causal", 0) != 0;
  GNode *bias = mask_bias(im, mask, skv);
  if (mask && !bias) return -1;
  GNode *off = NULL; /* nonpad_kv_seqlen - Sq, per batch */
  if (nonpad) {
    if (nonpad->type.ndim != 1 || nonpad->type.shape[0] != Q->type.shape[0])
      return imp_error(im, "nonpad_kv_seqlen must be [batch], got %s", ttype_str(&nonpad->type));
    off = bin(im, "subtract", imp_cast(im, nonpad, DT_I64), imp_scalar(im, (double)sq, DT_I64));
  }
  if (causal)
    bias = add_bias(im, bias, off ? batch_bias(im, sq, skv, false, off, 0, 0) : const_bias(im, sq, skv, keep_causal, past, 0, 0));
  if (lw >= 0 || rw >= 0)
    bias = add_bias(im, bias, off ? batch_bias(im, sq, skv, true, off, lw, rw) : const_bias(im, sq, skv, keep_window, past, lw, rw));
  if (nonpad) {
    int64_t shape[4] = {1, 1, 1, skv};
    void *p;
    GNode *j = imp_new_const(im, DT_I64, 4, shape, &p);
    if (!j) return -1;
    for (int64_t i = 0; i < skv; i++) ((int64_t *)p)[i] = i;
    int64_t s4[4] = {nonpad->type.shape[0], 1, 1, 1};
    GNode *keep = bin(im, "less", j, imp_reshape(im, imp_cast(im, nonpad, DT_I64), 4, s4));
    bias = add_bias(im, bias, imp_where(im, keep, imp_scalar(im, 0, DT_F32), imp_scalar(im, -INFINITY, DT_F32)));
  }
  if (bias && bias->type.ndim < 2) return imp_error(im, "attn_mask must have at least 2 dimensions");
  AttnArgs a = {0};
  a.softmax_t = Q->type.dtype; /* ONNX's reference: the inputs' type unless softmax_precision says */
  if (onnx_attr_has(N(im), "softmax_precision")) {
    int64_t sp = onnx_attr_int(N(im), "softmax_precision", 1);
    a.softmax_t = sp == 10 ? DT_F16 : DT_F32; /* float16, or float32 for float/double/bfloat16 */
  }
  a.q = Q;
  a.k = repeat_heads(im, K, qh / kvh);
  a.v = repeat_heads(im, V, qh / kvh);
  a.mask = bias;
  a.scale = onnx_attr_float(N(im), "scale", 0.0f);
  a.softcap = onnx_attr_float(N(im), "softcap", 0.0f);
  if (imp_attr_int(im, "qk_matmul_output_mode", 0, 0, 3, &a.mode)) return -1;
  GNode *y = attention_core(im, &a);
  if (nd == 3) y = merge_heads(im, y);
  if (imp_set_output(im, 0, y)) return -1;
  if (imp_want_output(im, 1) && imp_set_output(im, 1, K)) return -1;
  if (imp_want_output(im, 2) && imp_set_output(im, 2, V)) return -1;
  if (imp_want_output(im, 3) && imp_set_output(im, 3, a.qk_out)) return -1;
  return 0;
}

/* com.microsoft MultiHeadAttention (query, key, value, bias?,
 * key_padding_mask?, attention_bias?, past_key?, past_value?), 3-D query,
 * key and value [B, S, H*D]; attributes num_heads, scale, unidirectional. */
int onnx_h_MultiHeadAttention(Importer *im) {
  GNode *q = float_input(im, 0), *k = imp_input(im, 1), *v = imp_input(im, 2), *bias = imp_input(im, 3);
  int64_t h = onnx_attr_int(N(im), "num_heads", 0);
  if (!q || !k || !v) return imp_error(im, "needs query, key and value (packed QKV is not supported)");
  if (q->type.ndim != 3 || k->type.ndim != 3 || v->type.ndim != 3)
    return imp_error(im, "query, key and value must be 3-D [batch, sequence, hidden] (other layouts are not supported)");
  for (int i = 4; i < imp_ninputs(im); i++)
    if (imp_input(im, i) && i != 5) return imp_error(im, "input %d (masks, past state) is not supported", i);
  if (h <= 0 || q->type.shape[2] % h || k->type.shape[2] % h || v->type.shape[2] % h)
    return imp_error(im, "num_heads = %lld must divide the hidden sizes", (long long)h);
  if (bias) {
    int64_t hq = q->type.shape[2], hk = k->type.shape[2], hv = v->type.shape[2];
    if (ttype_numel(&bias->type) != hq + hk + hv) return imp_error(im, "bias must hold %lld values", (long long)(hq + hk + hv));
    q = bin(im, "add", q, slice_last(im, bias, 0, hq, 1));
    k = bin(im, "add", k, slice_last(im, bias, hq, hq + hk, 1));
    v = bin(im, "add", v, slice_last(im, bias, hq + hk, hq + hk + hv, 1));
  }
  AttnArgs a = {0};
  a.softmax_t = DT_F32;
  a.q = split_heads(im, q, h);
  a.k = split_heads(im, k, h);
  a.v = split_heads(im, v, h);
  if (!a.q || !a.k || !a.v) return -1;
  GNode *ab = imp_input(im, 5);
  a.mask = ab ? imp_cast(im, ab, DT_F32) : NULL;
  if (onnx_attr_int(N(im), "unidirectional", 0))
    a.mask = add_bias(im, a.mask, const_bias(im, a.q->type.shape[2], a.k->type.shape[2], keep_causal, 0, 0, 0));
  a.scale = onnx_attr_float(N(im), "scale", 0.0f);
  for (int i = 1; i < N(im)->noutputs; i++)
    if (imp_want_output(im, i)) return imp_error(im, "output %d (present state) is not supported", i);
  return imp_set_output(im, 0, merge_heads(im, attention_core(im, &a)));
}

/* com.microsoft Attention (input [B, S, Hin], weights [Hin, 3*H*D], bias
 * [3*H*D], mask_index?): the packed-QKV self-attention of ONNX Runtime's
 * transformer optimizer.  mask_index as a [B, S_kv] 0/1 key mask only. */
int onnx_h_MsAttention(Importer *im) {
  GNode *x = float_input(im, 0), *w = imp_input(im, 1), *b = imp_input(im, 2), *mi = imp_input(im, 3);
  int64_t h = onnx_attr_int(N(im), "num_heads", 0);
  if (!x || !w) return imp_error(im, "needs input and weights");
  if (x->type.ndim != 3 || w->type.ndim != 2 || w->type.shape[0] != x->type.shape[2])
    return imp_error(im, "input must be [batch, sequence, hidden] and weights [hidden, 3 * hidden], got %s and %s",
                     ttype_str(&x->type), ttype_str(&w->type));
  for (int i = 4; i < imp_ninputs(im); i++)
    if (imp_input(im, i)) return imp_error(im, "input %d (past state, attention bias) is not supported", i);
  int n;
  const int64_t *qkv;
  int64_t hs[3], tot = w->type.shape[1];
  if (imp_attr_ints_in(im, "qkv_hidden_sizes", 3, 0, tot, &qkv, &n)) return -1;
  if (qkv && n == 3) memcpy(hs, qkv, sizeof hs);
  else hs[0] = hs[1] = hs[2] = tot / 3;
  if (hs[0] + hs[1] + hs[2] != tot || h <= 0 || hs[0] % h || hs[1] % h || hs[2] % h)
    return imp_error(im, "weights of %lld columns do not split into Q, K, V over %lld heads", (long long)tot, (long long)h);
  int64_t B = x->type.shape[0], S = x->type.shape[1], Hin = x->type.shape[2];
  int64_t s2[2] = {B * S, Hin}, perm[2] = {1, 0};
  GNode *y = bin(im, "nn.dense", imp_reshape(im, x, 2, s2), imp_transpose(im, w, 2, perm));
  if (b) y = bin(im, "add", y, b);
  int64_t s3[3] = {B, S, tot};
  y = imp_reshape(im, y, 3, s3);
  AttnArgs a = {0};
  a.softmax_t = DT_F32;
  a.q = split_heads(im, slice_last(im, y, 0, hs[0], 1), h);
  a.k = split_heads(im, slice_last(im, y, hs[0], hs[0] + hs[1], 1), h);
  a.v = split_heads(im, slice_last(im, y, hs[0] + hs[1], tot, 1), h);
  if (!a.q || !a.k || !a.v) return -1;
  if (mi) {
    if (mi->type.ndim != 2 || mi->type.shape[0] != B || mi->type.shape[1] != S)
      return imp_error(im, "mask_index of shape %s is not supported (only a [batch, sequence] key mask)", ttype_str(&mi->type));
    int64_t s4[4] = {B, 1, 1, S};
    GNode *keep = bin(im, "not_equal", imp_reshape(im, mi, 4, s4), imp_scalar_like(im, 0, mi));
    a.mask = imp_where(im, keep, imp_scalar(im, 0, DT_F32), imp_scalar(im, -10000.0, DT_F32));
  }
  if (onnx_attr_int(N(im), "unidirectional", 0))
    a.mask = add_bias(im, a.mask, const_bias(im, S, S, keep_causal, 0, 0, 0));
  a.scale = onnx_attr_float(N(im), "scale", 0.0f);
  if (imp_want_output(im, 1)) return imp_error(im, "output 1 (present state) is not supported");
  return imp_set_output(im, 0, merge_heads(im, attention_core(im, &a)));
}

/* ---- FlexAttention (ai.onnx.preview 1) ----
 * softmax(score_mod(Q K^T * scale)) -> prob_mod -> @ V over rank-4 [B, H,
 * S, D] inputs, the modifiers being one-input, one-output subgraphs
 * imported inline on the score and probability tensors (their Shape/Range
 * arithmetic folds, the shapes being static).  As ONNX's reference: Q and
 * K are each scaled by sqrt(scale) and multiplied in the inputs' type (a
 * half-precision product is computed in float32 and rounded), the scores
 * cast to the softmax precision (float32 for half inputs, else the
 * inputs' type, unless softmax_precision says), the softmax, prob_mod and
 * the product with V computed in it, the result cast to V's type. */
static GNode *flex_mod(Importer *im, const char *attr, GNode *x, DType st) {
  const OnnxGraph *g = onnx_attr_graph(N(im), attr);
  if (!g || !x) return x;
  if (g->ninputs != 1 || g->noutputs != 1)
    return imp_error(im, "%s must have one input and one output, got %d and %d", attr, g->ninputs, g->noutputs), NULL;
  GNode *in = dt_eq(st, x->type.dtype) ? x : imp_cast(im, x, st);
  imp_bind_value(im, g->inputs[0].name, in);
  if (imp_subgraph(im, g)) return NULL;
  GNode *y = imp_value(im, g->outputs[0].name);
  if (!y) return imp_error(im, "%s's output '%s' is not produced", attr, g->outputs[0].name), NULL;
  if (y->type.ndim != 4 || memcmp(y->type.shape, in->type.shape, sizeof(int64_t) * 4) || !dt_eq(y->type.dtype, st))
    return imp_error(im, "%s must return a tensor of its input's shape and type %s, got %s", attr, ttype_str(&in->type),
                     ttype_str(&y->type)),
           NULL;
  return dt_eq(st, x->type.dtype) ? y : imp_cast(im, y, x->type.dtype);
}

/* x (computed in wt) rounded to t's precision */
static GNode *flex_round(Importer *im, GNode *x, DType t, DType wt) {
  return dt_eq(t, wt) ? x : imp_cast(im, imp_cast(im, x, t), wt);
}

int onnx_h_FlexAttention(Importer *im) {
  GNode *Q = float_input(im, 0), *K = float_input(im, 1), *V = float_input(im, 2);
  if (!Q || !K || !V) return -1;
  if (Q->type.ndim != 4 || K->type.ndim != 4 || V->type.ndim != 4)
    return imp_error(im, "Q, K and V must be rank-4 [batch, heads, sequence, head_size], got %s, %s, %s",
                     ttype_str(&Q->type), ttype_str(&K->type), ttype_str(&V->type));
  const int64_t *q = Q->type.shape, *k = K->type.shape, *v = V->type.shape;
  if (k[0] != q[0] || v[0] != q[0] || v[1] != k[1] || v[2] != k[2] || k[3] != q[3])
    return imp_error(im, "Q %s, K %s and V %s do not agree (one batch; K and V one head count and sequence; Q and K one "
                         "head size)",
                     ttype_str(&Q->type), ttype_str(&K->type), ttype_str(&V->type));
  if (k[1] <= 0 || q[1] % k[1])
    return imp_error(im, "%lld query heads cannot be grouped over %lld key/value heads", (long long)q[1], (long long)k[1]);
  DType t = Q->type.dtype, vt = V->type.dtype;
  if (!dt_eq(K->type.dtype, t)) return imp_error(im, "Q is %s but K is %s", dt_str(t), dt_str(K->type.dtype));
  DType st = dt_eq(t, DT_F64) ? DT_F64 : DT_F32; /* the softmax's precision */
  if (onnx_attr_has(N(im), "softmax_precision")) {
    int64_t sp = onnx_attr_int(N(im), "softmax_precision", 1);
    if (sp == 1) st = DT_F32;
    else if (sp == 10) st = DT_F16;
    else if (sp == 11) st = DT_F64;
    else return imp_error(im, "softmax_precision %lld is not supported (1 float, 10 float16, 11 double)", (long long)sp);
  }
  DType wt = dt_eq(t, DT_F64) || dt_eq(st, DT_F64) ? DT_F64 : DT_F32; /* where Kiln computes */
  double scale = onnx_attr_has(N(im), "scale") ? onnx_attr_float(N(im), "scale", 0) : 1.0 / sqrt((double)q[3]);
  GNode *rs = flex_round(im, imp_scalar(im, sqrtf((float)scale), wt), t, wt); /* sqrt(float32(scale)) in Q's type */
  GNode *qs = flex_round(im, bin(im, "multiply", imp_cast(im, Q, wt), rs), t, wt);
  GNode *ks = flex_round(im, bin(im, "multiply", imp_cast(im, repeat_heads(im, K, q[1] / k[1]), wt), rs), t, wt);
  int64_t perm[4] = {0, 1, 3, 2};
  GNode *s = flex_round(im, flex_round(im, bin(im, "nn.matmul", qs, imp_transpose(im, ks, 4, perm)), t, wt), st, wt);
  s = flex_mod(im, "score_mod", s, st);
  if (!s) return -1;
  int64_t ax = 3;
  GNode *m = imp_reduce(im, "max", s, 1, &ax, true);
  GNode *e = flex_round(im, un(im, "exp", flex_round(im, bin(im, "subtract", s, m), st, wt)), st, wt);
  GNode *sum = flex_round(im, imp_reduce(im, "sum", e, 1, &ax, true), st, wt);
  GNode *p = flex_mod(im, "prob_mod", flex_round(im, bin(im, "divide", e, sum), st, wt), st);
  if (!p) return -1;
  GNode *vv = flex_round(im, imp_cast(im, repeat_heads(im, V, q[1] / k[1]), wt), st, wt);
  GNode *y = imp_cast(im, flex_round(im, bin(im, "nn.matmul", p, vv), st, wt), vt);
  return imp_set_output(im, 0, y);
}

/* ---- LinearAttention (opset 27) ----
 * The recurrent linear attention of Gated DeltaNet and friends, unrolled
 * over the T tokens at compile time (T is static): a state S [B, H_kv,
 * d_k, d_v] per KV head, per token decayed by exp(g) (gated rules),
 * corrected by beta * (v - S^T k) (delta rules), updated by k (x) v, and
 * read by each query head of its group: o = scale * q^T S.  Computes in
 * float32 like ONNX's reference; output in the query's type, the present
 * state in the past state's (else the query's).  A long prefill unrolls
 * into a long graph: it compiles slowly. */
static GNode *unpack_heads(Importer *im, GNode *x, int64_t h) {
  int64_t b = x->type.shape[0], t = x->type.shape[1], d = x->type.shape[2] / h;
  int64_t s4[4] = {b, t, h, d}, perm[4] = {0, 2, 1, 3};
  return imp_transpose(im, imp_reshape(im, imp_cast(im, x, DT_F32), 4, s4), 4, perm);
}

static GNode *step(Importer *im, GNode *x4, int64_t i) { return imp_squeeze(im, imp_slice(im, x4, 2, i, i + 1), 2); }

int onnx_h_LinearAttention(Importer *im) {
  GNode *q = imp_input(im, 0), *k = imp_input(im, 1), *v = imp_input(im, 2);
  GNode *past = imp_input(im, 3), *decay = imp_input(im, 4), *beta = imp_input(im, 5);
  int64_t hq = onnx_attr_int(N(im), "q_num_heads", 0), hk = onnx_attr_int(N(im), "kv_num_heads", 0);
  if (hq <= 0 || hk <= 0 || hq % hk)
    return imp_error(im, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld); both are required",
                     (long long)hq, (long long)hk);
  const char *rule = onnx_attr_string(N(im), "update_rule", "gated_delta");
  bool gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gating && !delta && strcmp(rule, "linear"))
    return imp_error(im, "update_rule '%s': expected 'linear', 'gated', 'delta' or 'gated_delta'", rule);
  if (gating != (decay != NULL)) return imp_error(im, "update_rule '%s' %s the decay input", rule, gating ? "needs" : "forbids");
  if (delta != (beta != NULL)) return imp_error(im, "update_rule '%s' %s the beta input", rule, delta ? "needs" : "forbids");
  GNode *qkv[3] = {q, k, v};
  for (int i = 0; i < 3; i++)
    if (qkv[i]->type.ndim != 3 || qkv[i]->type.shape[0] != q->type.shape[0] || qkv[i]->type.shape[1] != q->type.shape[1])
      return imp_error(im, "query, key and value must be [B, T, heads * head_size] with one B and T, got %s, %s, %s",
                       ttype_str(&q->type), ttype_str(&k->type), ttype_str(&v->type));
  int64_t B = q->type.shape[0], T = q->type.shape[1];
  if (T > 4096)
    return imp_error(im, "%lld tokens: Kiln unrolls the recurrence over the sequence at compile time and takes at most "
                         "4096 (run a long prefill in chunks)",
                     (long long)T);
  if (q->type.shape[2] % hq || k->type.shape[2] % hk || v->type.shape[2] % hk)
    return imp_error(im, "the last dimensions (%lld, %lld, %lld) must divide by q_num_heads %lld and kv_num_heads %lld",
                     (long long)q->type.shape[2], (long long)k->type.shape[2], (long long)v->type.shape[2], (long long)hq,
                     (long long)hk);
  int64_t dk = q->type.shape[2] / hq, dv = v->type.shape[2] / hk, G = hq / hk;
  if (k->type.shape[2] / hk != dk) return imp_error(im, "key's head size %lld differs from query's %lld", (long long)(k->type.shape[2] / hk), (long long)dk);
  GNode *q4 = unpack_heads(im, q, hq), *k4 = unpack_heads(im, k, hk), *v4 = unpack_heads(im, v, hk), *g4 = NULL, *b4 = NULL;
  if (decay) {
    int64_t last = decay->type.shape[decay->type.ndim - 1];
    if (decay->type.ndim != 3 || (last != hk && last != hk * dk))
      return imp_error(im, "decay must be [B, T, kv_num_heads] or [B, T, kv_num_heads * d_k], got %s", ttype_str(&decay->type));
    g4 = unpack_heads(im, decay, hk); /* [B, H, T, 1 or d_k] */
  }
  if (beta) {
    int64_t last = beta->type.shape[beta->type.ndim - 1];
    if (beta->type.ndim != 3 || (last != hk && last != 1))
      return imp_error(im, "beta must be [B, T, kv_num_heads] or [B, T, 1], got %s", ttype_str(&beta->type));
    b4 = unpack_heads(im, beta, last); /* [B, H or 1, T, 1] */
  }
  GNode *S;
  int64_t ss[4] = {B, hk, dk, dv};
  if (past) {
    if (past->type.ndim != 4 || memcmp(past->type.shape, ss, sizeof ss))
      return imp_error(im, "past_state must be [B, kv_num_heads, d_k, d_v] = [%lld, %lld, %lld, %lld], got %s", (long long)B,
                       (long long)hk, (long long)dk, (long long)dv, ttype_str(&past->type));
    S = imp_cast(im, past, DT_F32);
  } else {
    GNode *z = imp_scalar(im, 0, DT_F32);
    GAttrs a = gattrs_new();
    ga_ints(&a, "shape", 4, ss);
    S = imp_call(im, "broadcast_to", 1, &z, a);
  }
  double scale = onnx_attr_float(N(im), "scale", 0);
  if (scale == 0) scale = 1 / sqrt((double)dk);
  GNode **outs = KNEWN(GNode *, T + 1);
  for (int64_t i = 0; i < T && S; i++) {
    GNode *kt = step(im, k4, i), *vt = step(im, v4, i), *qt = step(im, q4, i);
    if (g4) S = bin(im, "multiply", S, imp_expand_dims(im, un(im, "exp", step(im, g4, i)), 3));
    if (b4) {
      int64_t ax2 = 2;
      GNode *ret = imp_reduce(im, "sum", bin(im, "multiply", S, imp_expand_dims(im, kt, 3)), 1, &ax2, false);
      vt = bin(im, "multiply", step(im, b4, i), bin(im, "subtract", vt, ret));
    }
    S = bin(im, "add", S, bin(im, "multiply", imp_expand_dims(im, kt, 3), imp_expand_dims(im, vt, 2)));
    GNode *Sr = S;
    if (G > 1) {
      int64_t s5[5] = {B, hk, G, dk, dv}, s4[4] = {B, hq, dk, dv};
      GNode *e = imp_expand_dims(im, S, 2);
      GAttrs a = gattrs_new();
      ga_ints(&a, "shape", 5, s5);
      Sr = imp_reshape(im, e ? imp_call(im, "broadcast_to", 1, &e, a) : NULL, 4, s4);
    }
    int64_t ax2 = 2;
    GNode *o = imp_reduce(im, "sum", bin(im, "multiply", imp_expand_dims(im, qt, 3), Sr), 1, &ax2, false);
    outs[i] = imp_expand_dims(im, bin(im, "multiply", o, imp_scalar(im, scale, DT_F32)), 2); /* [B, Hq, 1, dv] */
  }
  if (!S) return -1;
  for (int64_t i = 0; i < T; i++)
    if (!outs[i]) return -1;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 2);
  GNode *o = T == 1 ? outs[0] : imp_call(im, "concatenate", (int)T, outs, a);
  int64_t perm[4] = {0, 2, 1, 3}, s3[3] = {B, T, hq * dv};
  o = imp_reshape(im, imp_transpose(im, o, 4, perm), 3, s3);
  if (imp_want_output(im, 1) && imp_set_output(im, 1, imp_cast(im, S, past ? past->type.dtype : q->type.dtype))) return -1;
  return out0(im, imp_cast(im, o, q->type.dtype));
}
