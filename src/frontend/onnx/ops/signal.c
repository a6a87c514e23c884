/*
 * signal.c - ONNX's signal processing operators: the windows (Hann,
 * Hamming, Blackman) and the mel weight matrix are constants of their
 * (constant) sizes, a window of a size given at run time a kernel
 * (signal.window); DFT and STFT are products with constant cosine and
 * sine matrices, an STFT whose frame step or length is given at run time
 * one kernel (dyn.stft) that computes its twiddles.
 */
#include "ops.h"

/* ---- signal processing: windows and the mel matrix are constants of
 * their (constant) sizes; DFT and STFT are products with constant cosine
 * and sine matrices ---- */

static int output_dtype(Importer *im, DType *t) {
  return imp_attr_dtype(im, "output_datatype", 1, t);
}

/* A window whose size is a graph input (a scalar or one-element int64 or
 * int32): a signal.window kernel whose one dimension is the value symbol
 * of it (docs/symbolic_shapes.md, section 4b), 0 an empty window.  -2
 * when the size is not such an input. */
static int window_runtime(Importer *im, DType t, double a0, double a1, double a2) {
  GNode *v = imp_input(im, 0);
  if (!v || v->kind != GN_VAR || ttype_is_symbolic(&v->type) || ttype_numel(&v->type) != 1 || v->type.ndim > 1 ||
      v->type.dtype.code != kDLInt || (v->type.dtype.bits != 64 && v->type.dtype.bits != 32) || !dt_is_float(t))
    return -2;
  GSym *s = graph_value_sym(imp_graph(im), v->name, 0, 0, IMP_MAX_COUNT);
  if (!s) return imp_error(im, "input 0 ('%s'): %s", v->name, kiln_get_error());
  GAttrs a = gattrs_new();
  ga_int(&a, "size", s->rep);
  ga_int(&a, "periodic", onnx_attr_int(N(im), "periodic", 1) != 0);
  ga_float(&a, "a0", a0);
  ga_float(&a, "a1", a1);
  ga_float(&a, "a2", a2);
  ga_str(&a, "sym_dims", s->name);
  GNode *z = imp_scalar(im, 0, t);
  return imp_set_output(im, 0, imp_call(im, "signal.window", 1, &z, a));
}

/* Hann, Hamming, Blackman: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),
 * N = size (periodic) or size - 1; a constant of a constant size. */
static int window(Importer *im, double a0, double a1, double a2) {
  int64_t n;
  DType t;
  if (output_dtype(im, &t)) return -1;
  int rc = window_runtime(im, t, a0, a1, a2);
  if (rc != -2) return rc;
  if (imp_input_i64(im, 0, 0, IMP_MAX_COUNT, &n)) return -1;
  double span = onnx_attr_int(N(im), "periodic", 1) ? (double)n : (double)n - 1;
  void *p;
  GNode *c = imp_new_const(im, t, 1, &n, &p);
  if (!c) return -1;
  for (int64_t i = 0; i < n; i++) {
    double x = span > 0 ? (double)i / span : 0;
    imp_array_set(c->value, i, a0 - a1 * cos(2 * M_PI * x) + a2 * cos(4 * M_PI * x));
  }
  return imp_set_output(im, 0, c);
}

int onnx_h_HannWindow(Importer *im) { return window(im, 0.5, 0.5, 0); }
int onnx_h_HammingWindow(Importer *im) { return window(im, 25.0 / 46, 21.0 / 46, 0); }
int onnx_h_BlackmanWindow(Importer *im) { return window(im, 0.42, 0.5, 0.08); }

/* An int scalar graph input i as a value symbol in [lo, hi] (*s): 0; -2
 * when input i is not such an input; -1 + error. */
static int scalar_value(Importer *im, int i, int64_t lo, int64_t hi, GSym **s) {
  GNode *v = imp_input(im, i);
  if (!v || v->kind != GN_VAR || ttype_is_symbolic(&v->type) || ttype_numel(&v->type) != 1 || v->type.ndim > 1 ||
      v->type.dtype.code != kDLInt || (v->type.dtype.bits != 64 && v->type.dtype.bits != 32))
    return -2;
  if (!(*s = graph_value_sym(imp_graph(im), v->name, 0, lo, hi)))
    return imp_error(im, "input %d ('%s'): %s", i, v->name, kiln_get_error());
  return 0;
}

/* MelWeightMatrix with some input given at run time: a
 * signal.mel_weight_matrix kernel, its size (dft_length / 2 + 1,
 * num_mel_bins) from the value symbols of those two (or their constant
 * values), dft_length, sample_rate and the edges read by the kernel
 * (sample_rate a value symbol for its bounds [1, 2^31-1]), the upper edge
 * after dd.mel_check, which refuses bins outside [0, L / 2 + 1] as the
 * compile-time path does.  -2 when every input is a constant. */
static int mel_runtime(Importer *im, DType t) {
  bool any = false;
  for (int i = 0; i < 5; i++) {
    GNode *v = imp_input(im, i);
    if (!v) return imp_error(im, "input %d is missing", i);
    any |= v->kind == GN_VAR;
  }
  if (!any || !dt_is_float(t)) return -2;
  GSym *sym[3];
  int64_t val[3];
  for (int i = 0; i < 3; i++) {
    GNode *v = imp_input(im, i);
    if (v->kind == GN_VAR) {
      int rc = scalar_value(im, i, 1, i == 2 ? INT32_MAX : IMP_MAX_COUNT, &sym[i]);
      if (rc) return rc;
      val[i] = sym[i]->rep;
    } else {
      sym[i] = NULL;
      if (imp_input_i64(im, i, 1, i == 2 ? INT32_MAX : IMP_MAX_COUNT, &val[i])) return -1;
    }
  }
  GNode *args[4];
  for (int i = 1; i < 5; i++) {
    GNode *v = imp_input(im, i);
    int64_t none[1] = {0};
    if (i >= 3 && !dt_is_float(v->type.dtype)) return imp_error(im, "input %d must be a float scalar", i);
    args[i - 1] = v->type.ndim ? imp_reshape(im, v, 0, none) : v; /* 0-d */
  }
  /* the upper edge through dd.mel_check: the bins of the values given at
   * run time must lie in the spectrum, as the compile-time path checks */
  int64_t none[1] = {0};
  GNode *m = imp_input(im, 0), *chk[5] = {m->type.ndim ? imp_reshape(im, m, 0, none) : m, args[0], args[1], args[2], args[3]};
  GAttrs ca = gattrs_new();
  ga_str(&ca, "host_attrs", "{}");
  if (!(args[3] = imp_call(im, "dd.mel_check", 5, chk, ca))) return -1;
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", 2, (int64_t[]){val[1] / 2 + 1, val[0]});
  ga_str(&a, "dtype", dt_str(t));
  const char *d0 = sym[1] ? kfmt("%s 2 fdiv 1 +", sym[1]->name) : "", *d1 = sym[0] ? sym[0]->name : "";
  ga_str(&a, "sym_dims", kfmt("%s,%s", d0, d1));
  return imp_set_output(im, 0, imp_call(im, "signal.mel_weight_matrix", 4, args, a));
}

int onnx_h_MelWeightMatrix(Importer *im) {
  double lo, hi;
  int64_t M, L, S;
  DType t;
  if (output_dtype(im, &t)) return -1;
  int rc = mel_runtime(im, t);
  if (rc != -2) return rc;
  if (imp_input_i64(im, 0, 1, IMP_MAX_COUNT, &M) || imp_input_i64(im, 1, 1, IMP_MAX_COUNT, &L) ||
      imp_input_i64(im, 2, 1, IMP_MAX_COUNT, &S) || imp_const_scalar(im, 3, &lo) || imp_const_scalar(im, 4, &hi) ||
      output_dtype(im, &t))
    return -1;
  /* the result first: its size check refuses a huge M or dft_length
   * before the bins are computed */
  int64_t nspec = L / 2 + 1, shape[2] = {nspec, M};
  void *p;
  GNode *c = imp_new_const(im, t, 2, shape, &p);
  if (!c) return -1;
  int64_t *bins = imp_alloc_n(im, "the mel bins", M + 2, sizeof(int64_t));
  if (!bins) return -1;
  double lmel = 2595 * log10(1 + lo / 700), hmel = 2595 * log10(1 + hi / 700), step = (hmel - lmel) / (double)(M + 2);
  for (int64_t i = 0; i < M + 2; i++) {
    double f = 700 * (pow(10, ((double)i * step + lmel) / 2595) - 1);
    if (imp_double_i64(im, kfmt("mel bin %lld (from lower_edge_hertz %g, upper_edge_hertz %g)", (long long)i, lo, hi),
                       floor((double)(L + 1) * f / (double)S), 0, nspec, &bins[i]))
      return -1;
  }
  for (int64_t i = 0; i < M; i++) {
    int64_t l = bins[i], ce = bins[i + 1], h = bins[i + 2];
    if (ce - l == 0) {
      if (ce < nspec) imp_array_set(c->value, ce * M + i, 1);
    } else {
      for (int64_t j = l; j <= ce && j < nspec; j++) imp_array_set(c->value, j * M + i, (double)(j - l) / (double)(ce - l));
    }
    if (h - ce > 0)
      for (int64_t j = ce; j < h && j < nspec; j++) imp_array_set(c->value, j * M + i, (double)(h - j) / (double)(h - ce));
  }
  return imp_set_output(im, 0, c);
}

/* The DFT of x along axis (x's last axis holds 1 or 2 values: real,
 * imaginary), over L points (x truncated or zero-padded), keeping
 * nout = L or L / 2 + 1 (onesided) frequencies.  Returns [..., nout at
 * axis, ..., 2]. */
static GNode *dft(Importer *im, GNode *x, int axis, int64_t L, bool onesided, bool inverse) {
  if (!x) return NULL;
  int r = x->type.ndim;
  if (r < 2 || (x->type.shape[r - 1] != 1 && x->type.shape[r - 1] != 2))
    return imp_error(im, "input %s must end in an axis of 1 (real) or 2 (complex) values", ttype_str(&x->type)), NULL;
  if (axis < 0 || axis >= r - 1) return imp_error(im, "axis %d must be a signal axis (not the last)", axis), NULL;
  bool cplx = x->type.shape[r - 1] == 2;
  int64_t n = x->type.shape[axis], nout = onesided ? L / 2 + 1 : L;
  if (L <= 0) return imp_error(im, "dft_length %lld is not positive", (long long)L), NULL;
  /* cos and sin matrices [nout, n], scaled for the inverse; samples past L
   * are truncated (zero columns) */
  int64_t ms[2] = {nout, n};
  void *pc, *ps;
  DType t = x->type.dtype;
  GNode *C = imp_new_const(im, t, 2, ms, &pc), *S = imp_new_const(im, t, 2, ms, &ps);
  if (!C || !S) return NULL;
  double scale = inverse ? 1.0 / (double)L : 1.0;
  for (int64_t k = 0; k < nout; k++)
    for (int64_t j = 0; j < n && j < L; j++) {
      double th = 2 * M_PI * (double)((k * j) % L) / (double)L;
      imp_array_set(C->value, k * n + j, cos(th) * scale);
      imp_array_set(S->value, k * n + j, sin(th) * scale);
    }
  /* real and imaginary parts with the signal axis last */
  int64_t perm[MAXD], inv[MAXD];
  int q = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != axis) perm[q++] = i;
  perm[q] = axis;
  for (int i = 0; i < r - 1; i++) inv[perm[i]] = i;
  GNode *xr = imp_transpose(im, imp_squeeze(im, imp_slice(im, x, r - 1, 0, 1), r - 1), r - 1, perm);
  GNode *xi = cplx ? imp_transpose(im, imp_squeeze(im, imp_slice(im, x, r - 1, 1, 2), r - 1), r - 1, perm) : NULL;
  /* forward: (xr + i xi)(cos - i sin); inverse: (xr + i xi)(cos + i sin) */
  GNode *yr = dense(im, xr, C), *yi = un(im, "negative", dense(im, xr, S));
  if (inverse) yi = dense(im, xr, S);
  if (xi) {
    GNode *xic = dense(im, xi, C), *xis = dense(im, xi, S);
    yr = inverse ? bin(im, "subtract", yr, xis) : bin(im, "add", yr, xis);
    yi = bin(im, "add", yi, xic);
  }
  GNode *parts[2] = {imp_expand_dims(im, imp_transpose(im, yr, r - 1, inv), r - 1),
                     imp_expand_dims(im, imp_transpose(im, yi, r - 1, inv), r - 1)};
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", r - 1);
  return imp_call(im, "concatenate", 2, parts, a);
}

/* The inverse real DFT (inverse = 1, onesided = 1), as NumPy's irfft
 * that ONNX's reference calls: x holds the first m frequencies of a
 * Hermitian spectrum along axis; the L real samples are
 * y[j] = 1/L sum_{k < K} w_k (Re X_k cos t - Im X_k sin t), t = 2 pi k j / L,
 * K = min(m, L/2 + 1), w_0 = 1, w_{L/2} = 1 for even L, 2 otherwise (the
 * imaginary parts of X_0 and X_{L/2} drop out: sin t is 0 there).
 * Returns [..., L at axis, ..., 1]. */
static GNode *irfft(Importer *im, GNode *x, int axis, int64_t L) {
  int r = x->type.ndim;
  if (r < 2 || (x->type.shape[r - 1] != 1 && x->type.shape[r - 1] != 2))
    return imp_error(im, "input %s must end in an axis of 1 (real) or 2 (complex) values", ttype_str(&x->type)), NULL;
  if (L <= 0) return imp_error(im, "dft_length %lld is not positive", (long long)L), NULL;
  int64_t m = x->type.shape[axis], K = m < L / 2 + 1 ? m : L / 2 + 1, ms[2] = {L, m};
  void *pc, *ps;
  DType t = x->type.dtype;
  GNode *C = imp_new_const(im, t, 2, ms, &pc), *S = imp_new_const(im, t, 2, ms, &ps);
  if (!C || !S) return NULL;
  for (int64_t j = 0; j < L; j++)
    for (int64_t k = 0; k < K; k++) {
      double w = (k == 0 || 2 * k == L) ? 1.0 : 2.0, th = 2 * M_PI * (double)((k * j) % L) / (double)L;
      imp_array_set(C->value, j * m + k, w * cos(th) / (double)L);
      imp_array_set(S->value, j * m + k, -w * sin(th) / (double)L);
    }
  int64_t perm[MAXD], inv[MAXD];
  int q = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != axis) perm[q++] = i;
  perm[q] = axis;
  for (int i = 0; i < r - 1; i++) inv[perm[i]] = i;
  GNode *xr = imp_transpose(im, imp_squeeze(im, imp_slice(im, x, r - 1, 0, 1), r - 1), r - 1, perm);
  GNode *y = dense(im, xr, C);
  if (x->type.shape[r - 1] == 2)
    y = bin(im, "add", y, dense(im, imp_transpose(im, imp_squeeze(im, imp_slice(im, x, r - 1, 1, 2), r - 1), r - 1, perm), S));
  return imp_expand_dims(im, imp_transpose(im, y, r - 1, inv), r - 1);
}

/* The DFT of x along axis ax (the node's attributes and dft_length). */
static GNode *dft_along(Importer *im, GNode *x, int ax) {
  if (ax == x->type.ndim - 1) return imp_error(im, "axis %d is the real/imaginary axis", ax), NULL;
  bool onesided = onnx_attr_int(N(im), "onesided", 0) != 0, inverse = onnx_attr_int(N(im), "inverse", 0) != 0;
  /* the inverse real DFT's default length is 2 (m - 1), as the reference's */
  int64_t L = onesided && inverse ? 2 * (x->type.shape[ax] - 1) : x->type.shape[ax];
  if (imp_input(im, 1) && imp_input_i64(im, 1, 1, IMP_MAX_COUNT, &L)) return NULL;
  if (onesided && inverse) return irfft(im, x, ax, L);
  if (onesided && x->type.shape[x->type.ndim - 1] == 2)
    return imp_error(im, "onesided = 1 with a complex input and inverse = 0 is not supported (a onesided forward DFT "
                         "takes a real input)"),
           NULL;
  return dft(im, x, ax, L, onesided, inverse);
}

/* The axis given at run time (a scalar or one-element integer graph
 * input): the DFT along each possible axis, each zero-padded to the
 * largest extent of every dimension, picked by where(axis == d or axis ==
 * d - rank), as CumSum's axis, then cut to the run-time shape by a
 * dyn.strided_slice whose dimensions are expressions of the axis: the
 * transformed dimension e is the DFT's size along e where the axis is e
 * (a onesided DFT's n / 2 + 1, an inverse one's dft_length), the input's
 * elsewhere.  The axis is a value symbol in [-rank, rank - 2]; -1 (the
 * real/imaginary axis, between the valid negative and non-negative ones)
 * makes dimension 0 -1, which the executor refuses naming the node.  -2
 * when the axis is not such an input or some axis has no DFT. */
static int dft_runtime_axis(Importer *im, GNode *x) {
  GNode *av = imp_input(im, 2);
  int nd = x->type.ndim;
  if (!av || av->kind != GN_VAR || ttype_numel(&av->type) != 1 || av->type.ndim > 1 || av->type.dtype.code != kDLInt ||
      ttype_is_symbolic(&x->type) || nd < 2)
    return -2;
  GNode *y[MAXD];
  int64_t top[MAXD];
  int last = -1; /* the last axis with a DFT */
  for (int d = 0; d < nd - 1; d++) {
    /* no DFT along d (an inverse real DFT of one frequency): that axis is
     * refused at run time */
    if (!(y[d] = dft_along(im, x, d))) {
      kiln_clear_error();
      continue;
    }
    if (y[d]->type.ndim != nd || (last >= 0 && y[d]->type.shape[nd - 1] != y[last]->type.shape[nd - 1])) return -2;
    for (int e = 0; e < nd; e++) top[e] = last >= 0 && top[e] > y[d]->type.shape[e] ? top[e] : y[d]->type.shape[e];
    last = d;
  }
  if (last < 0) return -2; /* no axis has one: the compile-time path says why */
  Graph *g = imp_graph(im);
  int before = g->syms.len;
  GSym *s = graph_value_sym(g, av->name, 0, -nd, nd - 2);
  if (!s) return imp_error(im, "%s", kiln_get_error());
  if (g->syms.len > before) s->rep = last;
  int rep = (int)(s->rep < 0 ? s->rep + nd : s->rep);
  if (rep < 0 || rep > nd - 2 || !y[rep]) return -2;
  GNode *a64 = av->type.dtype.bits == 64 ? av : imp_cast(im, av, DT_I64), *r = NULL;
  for (int d = nd - 2; d >= 0; d--) {
    GNode *yd = y[d];
    if (!yd) continue;
    int64_t pads[2 * MAXD] = {0};
    bool pad = false;
    for (int e = 0; e < nd; e++) pad |= (pads[nd + e] = top[e] - yd->type.shape[e]) > 0;
    if (pad) {
      GAttrs pa = gattrs_new();
      ga_ints(&pa, "pads", 2 * nd, pads);
      ga_str(&pa, "pad_mode", "constant");
      ga_float(&pa, "pad_value", 0);
      yd = imp_call(im, "nn.pad", 1, &yd, pa);
    }
    if (!r) {
      r = yd;
      continue;
    }
    GNode *hit = imp_call2(im, "logical_or", imp_call2(im, "equal", a64, imp_scalar(im, (double)d, DT_I64)),
                           imp_call2(im, "equal", a64, imp_scalar(im, (double)(d - nd), DT_I64)));
    r = imp_where(im, hit, yd, r);
  }
  /* the run-time shape: dimension e is y[e]'s where the axis is e, the
   * input's (any other DFT's) elsewhere */
  int64_t *b, *st, *ax, len = nd, end[MAXD];
  GNode *begin = imp_new_i64(im, 1, &len, &b), *steps = imp_new_i64(im, 1, &len, &st), *axes = imp_new_i64(im, 1, &len, &ax);
  if (!begin || !steps || !axes || !r) return -1;
  StrBuf sd = {0};
  for (int e = 0; e < nd; e++) {
    b[e] = 0, st[e] = 1, ax[e] = e;
    end[e] = y[rep]->type.shape[e];
    if (e) sb_puts(&sd, ",");
    if (e == 0) { /* -1 for the real/imaginary axis and the axes without a DFT */
      sb_printf(&sd, "%s -1 eq", s->name);
      for (int d = 0; d < nd - 1; d++)
        if (!y[d]) sb_printf(&sd, " %s %d eq or %s %d eq or", s->name, d, s->name, d - nd);
      sb_puts(&sd, " -1 ");
    }
    if (e < nd - 1 && y[e]) /* another axis's DFT keeps the input's dimension e */
      sb_printf(&sd, "%s %d eq %s %d eq or %lld %lld sel", s->name, e, s->name, e - nd, (long long)y[e]->type.shape[e],
                (long long)x->type.shape[e]);
    else
      sb_printf(&sd, "%s 0 * %lld +", s->name, (long long)y[last]->type.shape[e]);
    if (e == 0) sb_puts(&sd, " sel");
  }
  GAttrs at = gattrs_new();
  ga_ints(&at, "begin", nd, b);
  ga_ints(&at, "end", nd, end);
  ga_ints(&at, "axes", nd, ax);
  ga_ints(&at, "strides", nd, st);
  ga_str(&at, "sym_dims", sd.data);
  sb_free(&sd);
  GNode *args[4] = {r, begin, steps, axes};
  return imp_set_output(im, 0, imp_call(im, "dyn.strided_slice", 4, args, at));
}

int onnx_h_DFT(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int ax;
  int64_t axis = 1; /* an attribute (default 1) before opset 20, then an input (default -2) */
  if (imp_opset(im) >= 20) {
    int rc = dft_runtime_axis(im, x);
    if (rc != -2) return rc;
    axis = -2;
    if (imp_input(im, 2) && imp_input_i64(im, 2, INT64_MIN, INT64_MAX, &axis)) return -1;
  } else {
    axis = onnx_attr_int(N(im), "axis", 1);
  }
  if (imp_norm_axis(im, axis, x->type.ndim, &ax)) return -1;
  return imp_set_output(im, 0, dft_along(im, x, ax));
}

/* STFT whose frame_step or frame_length is a graph input: dyn.stft, one
 * kernel reading both (docs/symbolic_shapes.md, section 4b).  The frames
 * are 1 + (len - L) / step, the bins L / 2 + 1 (onesided) or L, from the
 * value symbols (step in [1, 2^31 - 1], representative 1; L in [1, len],
 * representative the window's length or len); -1 frames when L does not
 * fit the signal or differs from the window's length, which the executor
 * refuses naming the node.  -2 when neither is a graph input. */
static int stft_runtime(Importer *im, GNode *x, GNode *win) {
  GNode *sv = imp_input(im, 1), *lv = imp_input(im, 3);
  bool srt = sv && sv->kind == GN_VAR, lrt = lv && lv->kind == GN_VAR;
  if ((!srt && !lrt) || ttype_is_symbolic(&x->type) || (win && ttype_is_symbolic(&win->type))) return -2;
  if (!dt_is_float(x->type.dtype) || (x->type.shape[2] != 1 && x->type.shape[2] != 2))
    return imp_error(im, "signal %s must be float [batch, length, 1 or 2]", ttype_str(&x->type));
  if (win && (win->type.ndim != 1 || !dt_is_float(win->type.dtype)))
    return imp_error(im, "window %s must be a 1-D float tensor", ttype_str(&win->type));
  bool onesided = onnx_attr_int(N(im), "onesided", 1) != 0;
  if (onesided && x->type.shape[2] == 2) return imp_error(im, "onesided = 1 needs a real signal");
  Graph *g = imp_graph(im);
  int64_t len = x->type.shape[1], wl = win ? win->type.shape[0] : -1, st = 1, L = wl > 0 ? wl : len;
  GSym *ss = NULL, *ls = NULL;
  int before = g->syms.len, rc;
  if (srt) {
    if ((rc = scalar_value(im, 1, 1, GRAPH_MAX_ELEMS, &ss))) return rc == -2 ? imp_error(im, "frame_step must be one int32 or int64 element") : -1;
    if (g->syms.len > before) ss->rep = 1;
    st = ss->rep;
  } else if (imp_input_i64(im, 1, 1, IMP_MAX_COUNT, &st)) {
    return -1;
  }
  before = g->syms.len;
  if (lrt) {
    if ((rc = scalar_value(im, 3, 1, len, &ls))) return rc == -2 ? imp_error(im, "frame_length must be one int32 or int64 element") : -1;
    if (g->syms.len > before) ls->rep = wl > 0 && wl <= len ? wl : len;
    L = ls->rep;
  } else if (lv && imp_input_i64(im, 3, 1, IMP_MAX_COUNT, &L)) {
    return -1;
  } else if (!lv && !win) {
    return imp_error(im, "needs a window or a frame_length");
  }
  if (!lrt && (L > len || (win && L != wl)))
    return imp_error(im, "frame length %lld does not fit a signal of %lld%s", (long long)L, (long long)len,
                     win ? " or the window" : "");
  int64_t lmax = win ? wl : lrt ? len : L;
  if (lmax > len) return imp_error(im, "window of %lld does not fit a signal of %lld", (long long)wl, (long long)len);
  const char *Lt = ls ? ls->name : kfmt("%lld", (long long)L), *St = ss ? ss->name : kfmt("%lld", (long long)st);
  const char *ok = win ? kfmt("%s %lld le %s %lld eq and", Lt, (long long)len, Lt, (long long)wl)
                       : kfmt("%s %lld le", Lt, (long long)len);
  const char *nf = kfmt("%s %lld %s - %s fdiv 1 + -1 sel", ok, (long long)len, Lt, St);
  const char *bins = !ls ? "" : onesided ? kfmt("%s 2 fdiv 1 +", Lt) : Lt;
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", 4, (int64_t[]){x->type.shape[0], 1 + (len - L) / st, onesided ? L / 2 + 1 : L, 2});
  ga_str(&a, "sym_dims", kfmt(",%s,%s,", nf, bins));
  ga_int(&a, "onesided", onesided);
  ga_int(&a, "lmax", lmax);
  GNode *args[4] = {x, sv, lv ? lv : imp_scalar(im, (double)L, DT_I64), win};
  return imp_set_output(im, 0, imp_call(im, "dyn.stft", win ? 4 : 3, args, a));
}

int onnx_h_STFT(Importer *im) {
  GNode *x = imp_input(im, 0), *win = imp_input(im, 2);
  if (!x) return imp_error(im, "needs a signal");
  if (x->type.ndim != 3) return imp_error(im, "signal %s must be [batch, length, 1 or 2]", ttype_str(&x->type));
  int rc = stft_runtime(im, x, win);
  if (rc != -2) return rc;
  int64_t st, flen = -1;
  if (imp_input_i64(im, 1, 1, IMP_MAX_COUNT, &st)) return -1;
  if (imp_input(im, 3) && imp_input_i64(im, 3, 1, IMP_MAX_COUNT, &flen)) return -1;
  if (flen < 0 && !win) return imp_error(im, "needs a window or a frame_length");
  int64_t L = flen >= 0 ? flen : win->type.shape[0], len = x->type.shape[1];
  if (win && (win->type.ndim != 1 || win->type.shape[0] != L)) return imp_error(im, "window %s does not match frame length %lld", ttype_str(&win->type), (long long)L);
  if (st <= 0 || L <= 0 || L > len) return imp_error(im, "frame_step %lld and frame length %lld do not fit a signal of %lld", (long long)st, (long long)L, (long long)len);
  bool onesided = onnx_attr_int(N(im), "onesided", 1) != 0;
  if (onesided && x->type.shape[2] == 2) return imp_error(im, "onesided = 1 needs a real signal");
  int64_t nf = 1 + (len - L) / st, fs[2] = {nf, L}, *d;
  GNode *idx = imp_new_i64(im, 2, fs, &d);
  if (!idx) return -1;
  for (int64_t f = 0; f < nf; f++)
    for (int64_t j = 0; j < L; j++) d[f * L + j] = f * st + j;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 1);
  GNode *args[2] = {x, idx};
  GNode *frames = imp_call(im, "take", 2, args, a); /* [batch, nf, L, c] */
  if (win) {
    int64_t ws[2] = {L, 1};
    frames = bin(im, "multiply", frames, imp_reshape(im, imp_cast(im, win, x->type.dtype), 2, ws));
  }
  return imp_set_output(im, 0, dft(im, frames, 2, L, onesided, false));
}
