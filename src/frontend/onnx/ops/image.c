/*
 * image.c - ONNX's image operators: Resize and Upsample (including
 * tf_crop_and_resize), GridSample and RoiAlign.
 *
 * Resize is the graph op image.resize2d with ONNX's coordinate modes; the
 * crop-and-resize mode, GridSample and RoiAlign gather at positions that
 * are constants or elementwise functions of the inputs.
 */
#include "ops.h"

/* ---- resize ---- */

static int resize_antialias(Importer *im, GNode *x, const int64_t *size, const double *scales);

int onnx_h_resize(Importer *im) {
  GNode *x = in0(im);
  int nd = x->type.ndim;
  int64_t size[MAXD];
  double scales[MAXD];
  bool have = false, use_scales = false;
  const char *op = N(im)->op_type;
  if (!strcmp(op, "Upsample") && imp_opset(im) < 7)
    return imp_error(im, "Upsample before opset 7 (height_scale and width_scale) is not supported");
  if (!strcmp(op, "Upsample") && imp_opset(im) < 9) {
    int n;
    const float *v = onnx_attr_floats(N(im), "scales", &n);
    if (!v || n != nd) return imp_error(im, "scales must have %d values", nd);
    for (int i = 0; i < nd; i++) scales[i] = v[i];
  } else {
    int si = !strcmp(op, "Upsample") ? 1 : imp_opset(im) >= 11 ? 2 : 1;
    GNode *sz = !strcmp(op, "Resize") && imp_opset(im) >= 11 ? imp_input(im, 3) : NULL;
    /* opset 18: scales or sizes may name only some axes */
    int64_t axes[MAXD];
    int na = nd;
    const int64_t *av = imp_opset(im) >= 18 ? onnx_attr_ints(N(im), "axes", &na) : NULL;
    if (av) {
      if (na > nd) return imp_error(im, "axes has %d values for a tensor of rank %d", na, nd);
      for (int i = 0; i < na; i++) {
        int ax;
        if (imp_norm_axis(im, av[i], nd, &ax)) return -1;
        axes[i] = ax;
      }
    } else {
      na = nd;
      for (int i = 0; i < nd; i++) axes[i] = i;
    }
    for (int i = 0; i < nd; i++) size[i] = x->type.shape[i], scales[i] = 1.0;
    /* scales or sizes given at run time (runtime_value.c) */
    GNode *sv = imp_input(im, si);
    if (sz && sz->kind == GN_VAR && ttype_numel(&sz->type) > 0)
      return onnx_resize_runtime(im, x, sz, true, na, axes,
                                 imp_opset(im) >= 18 ? onnx_attr_string(N(im), "keep_aspect_ratio_policy", "stretch") : "stretch");
    if (sv && sv->kind == GN_VAR && !(sz && ttype_numel(&sz->type) > 0))
      return onnx_resize_runtime(im, x, sv, false, na, axes, "stretch");
    if (sz && ttype_numel(&sz->type) > 0) {
      int64_t v[MAXD];
      int n = imp_const_input_ints_in(im, 3, v, MAXD, 0, IMP_MAX_COUNT);
      if (n < 0) return -1;
      if (n != na) return imp_error(im, "sizes has %d values, expected %d", n, na);
      const char *pol = imp_opset(im) >= 18 ? onnx_attr_string(N(im), "keep_aspect_ratio_policy", "stretch") : "stretch";
      if (!strcmp(pol, "stretch")) {
        for (int i = 0; i < na; i++) size[axes[i]] = v[i];
        have = true;
      } else if (!strcmp(pol, "not_larger") || !strcmp(pol, "not_smaller")) {
        /* one scale for the named axes, the smallest or largest ratio */
        double r = 0;
        for (int i = 0; i < na; i++) {
          double q = (double)v[i] / (double)x->type.shape[axes[i]];
          if (i == 0 || (pol[4] == 'l' ? q < r : q > r)) r = q;
        }
        for (int i = 0; i < na; i++) {
          scales[axes[i]] = r;
          if (imp_double_i64(im, kfmt("the output size of axis %d (keep_aspect_ratio_policy %s)", (int)axes[i], pol),
                             floor((double)x->type.shape[axes[i]] * r + 0.5), 0, IMP_MAX_COUNT, &size[axes[i]]))
            return -1;
        }
        have = use_scales = true; /* the coordinates follow the one scale */
      } else {
        return imp_error(im, "keep_aspect_ratio_policy '%s' is not supported (stretch, not_larger, not_smaller)", pol);
      }
    } else {
      if (!imp_input(im, si)) return imp_error(im, "needs scales or sizes");
      GNode *sc = imp_const_input(im, si);
      if (!sc) return -1;
      if (ttype_numel(&sc->type) != na || !dt_eq(sc->type.dtype, DT_F32))
        return imp_error(im, "scales must hold %d float32 values, got %s", na, ttype_str(&sc->type));
      for (int i = 0; i < na; i++) scales[axes[i]] = ((const float *)((char *)sc->value->data + sc->value->byte_offset))[i];
    }
  }
  if (!have)
    for (int i = 0; i < nd; i++) {
      double s = floor((double)x->type.shape[i] * scales[i]);
      if (!(scales[i] > 0) || !(s < (double)GRAPH_MAX_ELEMS))
        return imp_error(im, "scale %g of axis %d gives an output of %g elements along it: scales must be positive "
                             "and finite, and the output at most 2^31 - 1 elements", scales[i], i, s);
      size[i] = (int64_t)s;
    }
  if (!have) use_scales = true;
  if (!strcmp(op, "Resize") && imp_opset(im) >= 18 && onnx_attr_int(N(im), "antialias", 0)) {
    double sc[MAXD];
    for (int i = 0; i < nd; i++) sc[i] = use_scales ? scales[i] : (double)size[i] / (double)x->type.shape[i];
    return resize_antialias(im, x, size, sc);
  }
  if (!strcmp(onnx_attr_string(N(im), "coordinate_transformation_mode", ""), "tf_crop_and_resize"))
    return onnx_resize_crop(im, x, size);
  GAttrs a = gattrs_new();
  ga_ints(&a, "size", nd, size);
  if (use_scales) {
    ga_floats(&a, "scales", nd, scales);
  }
  const char *mode = onnx_attr_string(N(im), "mode", "nearest");
  ga_str(&a, "method", mode);
  ga_str(&a, "coordinate_transformation_mode",
         onnx_attr_string(N(im), "coordinate_transformation_mode", !strcmp(op, "Upsample") || imp_opset(im) < 11 ? "asymmetric" : "half_pixel"));
  ga_str(&a, "nearest_mode", onnx_attr_string(N(im), "nearest_mode", !strcmp(op, "Upsample") || imp_opset(im) < 11 ? "floor" : "round_prefer_floor"));
  ga_float(&a, "cubic_coeff_a", onnx_attr_float(N(im), "cubic_coeff_a", -0.75f));
  ga_int(&a, "exclude_outside", onnx_attr_int(N(im), "exclude_outside", 0));
  ga_float(&a, "extrapolation_value", onnx_attr_float(N(im), "extrapolation_value", 0.0f));
  return out0(im, imp_call(im, "image.resize2d", 1, &x, a));
}

/* ---- Resize with antialias = 1 (opset 18), linear and cubic ----
 * Resize is separable: each resized axis is one product with a constant
 * [out, in] matrix whose rows hold the interpolation weights, computed
 * here as onnx's reference computes them (_interpolate_1d_along_axis):
 * when an axis shrinks, the kernel's support widens by 1 / scale and its
 * weights are normalized to sum to 1; neighbours past the edge repeat the
 * edge (or are dropped and the rest renormalized with exclude_outside).
 * The axis is moved last and multiplied with nn.dense. */
static double aa_cubic(double x, double A) {
  x = fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

static int resize_antialias(Importer *im, GNode *x, const int64_t *size, const double *scales) {
  const char *mode = onnx_attr_string(N(im), "mode", "nearest");
  const char *ctm = onnx_attr_string(N(im), "coordinate_transformation_mode", "half_pixel");
  bool cubic = !strcmp(mode, "cubic");
  if (!cubic && strcmp(mode, "linear"))
    return imp_error(im, "antialias = 1 needs mode linear or cubic, got '%s'", mode);
  int cm = !strcmp(ctm, "half_pixel") ? 0 : !strcmp(ctm, "pytorch_half_pixel") ? 1 : !strcmp(ctm, "align_corners") ? 2
         : !strcmp(ctm, "asymmetric") ? 3 : !strcmp(ctm, "half_pixel_symmetric") ? 4 : -1;
  if (cm < 0)
    return imp_error(im, "antialias = 1 with coordinate_transformation_mode '%s' is not supported (half_pixel, "
                         "pytorch_half_pixel, align_corners, asymmetric, half_pixel_symmetric)", ctm);
  if (!dt_is_float(x->type.dtype))
    return imp_error(im, "antialias = 1 needs a floating-point input, got %s", dt_str(x->type.dtype));
  double A = onnx_attr_float(N(im), "cubic_coeff_a", -0.75f);
  bool excl = onnx_attr_int(N(im), "exclude_outside", 0) != 0;
  int nd = x->type.ndim;
  GNode *y = x;
  for (int ax = 0; ax < nd && y; ax++) {
    int64_t in = x->type.shape[ax], out = size[ax];
    double sf = scales[ax];
    if (out == in && sf == 1.0) continue;
    if (out < 1 || in < 1) return imp_error(im, "axis %d resizes %lld to %lld elements", ax, (long long)in, (long long)out);
    if (out * in > ((int64_t)1 << 26))
      return imp_error(im, "axis %d: an antialiased resize of %lld to %lld elements needs a %lld-element weight "
                           "matrix (at most 2^26)", ax, (long long)in, (long long)out, (long long)(out * in));
    double s = sf < 1 ? sf : 1;
    int64_t start = cubic ? (int64_t)floor(-2 / s) + 1 : (int64_t)floor(-1 / s) + 1;
    int64_t n = 2 - 2 * start; /* taps start .. 1 - start */
    if (n > 4096) return imp_error(im, "axis %d: scale %g gives a kernel of %lld taps (at most 4096)", ax, sf, (long long)n);
    int64_t ms[2] = {out, in};
    void *md;
    GNode *m = imp_new_const(im, DT_F64, 2, ms, &md);
    if (!m) return -1;
    double *M = md, *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return imp_error(im, "out of memory");
    double ow = sf * (double)in;
    for (int64_t i = 0; i < out; i++) {
      double yv = (double)i, xo;
      switch (cm) {
      case 0: xo = (yv + 0.5) / sf - 0.5; break;
      case 1: xo = ow == 1 ? -0.5 : (yv + 0.5) / sf - 0.5; break;
      case 2: xo = ow == 1 ? 0 : yv * (double)(in - 1) / (ow - 1); break;
      case 3: xo = yv / sf; break;
      default: xo = (double)in / 2 * (1 - (double)out / ow) + (yv + 0.5) / sf - 0.5; break;
      }
      double fl = floor(xo), ratio = xo == fl ? 1.0 : xo - fl, sum = 0;
      for (int64_t j = 0; j < n; j++) {
        double a = s * ((double)(start + j) - ratio);
        c[j] = cubic ? aa_cubic(a, A) : fmax(0.0, 1 - fabs(a));
        sum += c[j];
      }
      for (int64_t j = 0; j < n; j++) c[j] /= sum;
      /* the n indexes nearest xo, ties to the smaller (onnx's _get_neighbor_idxes) */
      int64_t pw = (n + 1) / 2;
      double xp = xo + (double)pw, pp = floor(xp), frac = xp - pp;
      int64_t off = n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1) : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
      int64_t first = (int64_t)pp + off - pw;
      if (excl) {
        double t = 0;
        for (int64_t j = 0; j < n; j++) {
          if (first + j < 0 || first + j >= in) c[j] = 0;
          t += c[j];
        }
        if (t != 0)
          for (int64_t j = 0; j < n; j++) c[j] /= t;
      }
      for (int64_t j = 0; j < n; j++) {
        int64_t k = first + j < 0 ? 0 : first + j >= in ? in - 1 : first + j;
        M[i * in + k] += c[j];
      }
    }
    free(c);
    /* the axis last, one dense product, back */
    int64_t perm[MAXD], inv[MAXD], rows = 1, cur[MAXD];
    for (int i = 0, o = 0; i < nd; i++)
      if (i != ax) perm[o++] = i;
    perm[nd - 1] = ax;
    for (int i = 0; i < nd; i++) inv[perm[i]] = i;
    for (int i = 0; i < nd; i++) cur[i] = y->type.shape[perm[i]];
    for (int i = 0; i < nd - 1; i++) rows *= cur[i];
    int64_t s2[2] = {rows, in};
    GNode *t2 = imp_reshape(im, imp_transpose(im, y, nd, perm), 2, s2);
    GNode *r = dense(im, t2, imp_cast(im, m, x->type.dtype));
    cur[nd - 1] = out;
    y = imp_transpose(im, imp_reshape(im, r, nd, cur), nd, inv);
  }
  return out0(im, y);
}

/* ---- GridSample (PyTorch's grid_sample): coordinates computed with
 * elementwise ops, samples gathered from the input flattened to
 * [N * H * W, C] ([N * D * H * W, C] for a volumetric, 5-D input) ---- */

typedef struct Grid {
  GNode *xf;       /* [N * (D *) H * W, C] */
  GNode *batch;    /* [N, 1, 1(, 1)] int64: n * (D *) H * W */
  int64_t D, H, W; /* D = 1 for a 4-D input */
  int nd;          /* spatial axes: 2 or 3 */
  DType t;
  int pad;         /* 0 zeros, 1 border, 2 reflection */
  bool align;
} Grid;

static GNode *fscal(Importer *im, double v, const Grid *g) { return imp_scalar(im, v, g->t); }

/* Reflect x into [lo2 / 2, hi2 / 2] (PyTorch's reflect_coordinates). */
static GNode *reflect(Importer *im, const Grid *g, GNode *x, double lo2, double hi2) {
  if (lo2 == hi2) return bin(im, "multiply", x, fscal(im, 0, g));
  double mn = lo2 / 2, span = (hi2 - lo2) / 2;
  GNode *a = un(im, "abs", bin(im, "subtract", x, fscal(im, mn, g)));
  GNode *extra = bin(im, "mod", a, fscal(im, span, g));
  GNode *flips = un(im, "floor", bin(im, "divide", a, fscal(im, span, g)));
  GNode *even = bin(im, "equal", bin(im, "mod", flips, fscal(im, 2, g)), fscal(im, 0, g));
  return imp_where(im, even, bin(im, "add", extra, fscal(im, mn, g)), bin(im, "subtract", fscal(im, span + mn, g), extra));
}

/* Padding applied to a source coordinate along an axis of size n. */
static GNode *pad_coord(Importer *im, const Grid *g, GNode *x, int64_t n) {
  GAttrs a = gattrs_new();
  ga_float(&a, "a_min", 0);
  ga_float(&a, "a_max", (double)(n - 1));
  if (g->pad == 0) return x;
  if (g->pad == 2) x = g->align ? reflect(im, g, x, 0, 2.0 * (double)(n - 1)) : reflect(im, g, x, -1, 2.0 * (double)n - 1);
  return x ? imp_call(im, "clip", 1, &x, a) : NULL;
}

/* Input values at integer coordinates (ix, iy and, volumetric, iz: float
 * tensors holding integers, [N, (Do,) Ho, Wo]); 0 outside the input.
 * Returns [N, (Do,) Ho, Wo, C]. */
static GNode *grid_at(Importer *im, const Grid *g, GNode *ix, GNode *iy, GNode *iz) {
  GNode *zero = fscal(im, 0, g);
  GNode *valid = bin(im, "logical_and",
                     bin(im, "logical_and", bin(im, "greater_equal", ix, zero), bin(im, "less", ix, fscal(im, (double)g->W, g))),
                     bin(im, "logical_and", bin(im, "greater_equal", iy, zero), bin(im, "less", iy, fscal(im, (double)g->H, g))));
  GAttrs cx = gattrs_new(), cy = gattrs_new();
  ga_float(&cx, "a_min", 0);
  ga_float(&cx, "a_max", (double)(g->W - 1));
  ga_float(&cy, "a_min", 0);
  ga_float(&cy, "a_max", (double)(g->H - 1));
  GNode *xc = ix ? imp_call(im, "clip", 1, &ix, cx) : NULL, *yc = iy ? imp_call(im, "clip", 1, &iy, cy) : NULL;
  GNode *row = yc;
  if (iz) {
    valid = bin(im, "logical_and", valid,
                bin(im, "logical_and", bin(im, "greater_equal", iz, zero), bin(im, "less", iz, fscal(im, (double)g->D, g))));
    GAttrs cz = gattrs_new();
    ga_float(&cz, "a_min", 0);
    ga_float(&cz, "a_max", (double)(g->D - 1));
    GNode *zc = imp_call(im, "clip", 1, &iz, cz);
    row = bin(im, "add", bin(im, "multiply", zc, fscal(im, (double)g->H, g)), yc);
  }
  GNode *lin = bin(im, "add", bin(im, "add", imp_cast(im, bin(im, "multiply", row, fscal(im, (double)g->W, g)), DT_I64), imp_cast(im, xc, DT_I64)),
                   g->batch);
  GAttrs ta = gattrs_new();
  ga_int(&ta, "axis", 0);
  GNode *args[2] = {g->xf, lin};
  GNode *v = imp_call(im, "take", 2, args, ta);
  return imp_where(im, imp_expand_dims(im, valid, g->nd + 1), v, imp_scalar_like(im, 0, v));
}

static GNode *cubic_w(Importer *im, const Grid *g, GNode *t, int i) {
  const double A = -0.75;
  GNode *one = fscal(im, 1, g);
  GNode *s = i == 0 ? bin(im, "add", t, one) : i == 1 ? t : i == 2 ? bin(im, "subtract", one, t) : bin(im, "subtract", fscal(im, 2, g), t);
  if (i == 0 || i == 3) /* ((A s - 5A) s + 8A) s - 4A */
    return bin(im, "subtract",
               bin(im, "multiply", bin(im, "add", bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", s, fscal(im, A, g)), fscal(im, 5 * A, g)), s), fscal(im, 8 * A, g)), s),
               fscal(im, 4 * A, g));
  /* ((A + 2) s - (A + 3)) s s + 1 */
  return bin(im, "add", bin(im, "multiply", bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", s, fscal(im, A + 2, g)), fscal(im, A + 3, g)), s), s), one);
}

int onnx_h_GridSample(Importer *im) {
  GNode *x = imp_input(im, 0), *grid = imp_input(im, 1);
  if (!x || !grid) return imp_error(im, "needs X and grid");
  int xr = x->type.ndim, nd = xr - 2;
  if ((xr != 4 && xr != 5) || grid->type.ndim != xr || grid->type.shape[xr - 1] != nd || grid->type.shape[0] != x->type.shape[0])
    return imp_error(im, "X %s and grid %s must be [N, C, H, W] and [N, H_out, W_out, 2], or [N, C, D, H, W] and "
                     "[N, D_out, H_out, W_out, 3] (other ranks are not supported)",
                     ttype_str(&x->type), ttype_str(&grid->type));
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "X must be floating-point, got %s", dt_str(x->type.dtype));
  /* opset 20 renamed the modes (linear, cubic) and made linear the default */
  const char *mode = onnx_attr_string(N(im), "mode", imp_opset(im) >= 20 ? "linear" : "bilinear"),
             *pm = onnx_attr_string(N(im), "padding_mode", "zeros");
  if (imp_opset(im) >= 20) mode = !strcmp(mode, "linear") ? "bilinear" : !strcmp(mode, "cubic") ? "bicubic" : !strcmp(mode, "nearest") ? mode : "";
  Grid g;
  g.t = x->type.dtype;
  g.align = onnx_attr_int(N(im), "align_corners", 0) != 0;
  g.pad = !strcmp(pm, "zeros") ? 0 : !strcmp(pm, "border") ? 1 : !strcmp(pm, "reflection") ? 2 : -1;
  if (g.pad < 0) return imp_error(im, "padding_mode '%s' is not supported", pm);
  int m = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "bilinear") ? 1 : !strcmp(mode, "bicubic") ? 2 : -1;
  if (m < 0) return imp_error(im, "mode '%s' is not supported", mode);
  if (m == 2 && nd == 3) return imp_error(im, "mode 'cubic' is for 4-D inputs only (ONNX defines no volumetric cubic)");
  int64_t N = x->type.shape[0], C = x->type.shape[1];
  g.nd = nd;
  g.D = nd == 3 ? x->type.shape[2] : 1, g.H = x->type.shape[xr - 2], g.W = x->type.shape[xr - 1];
  int64_t p[5] = {0, 2, 3, 4, 1}, fs[2] = {N * g.D * g.H * g.W, C}, bs[4] = {N, 1, 1, 1}, *bd;
  p[xr - 1] = 1;
  g.xf = imp_reshape(im, imp_transpose(im, x, xr, p), 2, fs);
  g.batch = imp_new_i64(im, xr - 1, bs, &bd);
  if (!g.batch) return -1;
  for (int64_t n = 0; n < N; n++) bd[n] = n * g.D * g.H * g.W;
  GNode *gr = imp_cast(im, grid, g.t);
  int ga = xr - 1;
  GNode *gx = imp_squeeze(im, imp_slice(im, gr, ga, 0, 1), ga), *gy = imp_squeeze(im, imp_slice(im, gr, ga, 1, 2), ga);
  GNode *gz = nd == 3 ? imp_squeeze(im, imp_slice(im, gr, ga, 2, 3), ga) : NULL;
  /* unnormalize: align_corners ? (v + 1) / 2 (n - 1) : ((v + 1) n - 1) / 2 */
  GNode *one = fscal(im, 1, &g), *half = fscal(im, 0.5, &g);
  GNode *ux = g.align ? bin(im, "multiply", bin(im, "multiply", bin(im, "add", gx, one), half), fscal(im, (double)(g.W - 1), &g))
                      : bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", bin(im, "add", gx, one), fscal(im, (double)g.W, &g)), one), half);
  GNode *uy = g.align ? bin(im, "multiply", bin(im, "multiply", bin(im, "add", gy, one), half), fscal(im, (double)(g.H - 1), &g))
                      : bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", bin(im, "add", gy, one), fscal(im, (double)g.H, &g)), one), half);
  GNode *uz = !gz ? NULL
             : g.align ? bin(im, "multiply", bin(im, "multiply", bin(im, "add", gz, one), half), fscal(im, (double)(g.D - 1), &g))
                       : bin(im, "multiply", bin(im, "subtract", bin(im, "multiply", bin(im, "add", gz, one), fscal(im, (double)g.D, &g)), one), half);
  GNode *out = NULL;
  if (nd == 3) { /* nearest or trilinear */
    GNode *c[3] = {pad_coord(im, &g, ux, g.W), pad_coord(im, &g, uy, g.H), pad_coord(im, &g, uz, g.D)};
    if (m == 0) {
      out = grid_at(im, &g, un(im, "round", c[0]), un(im, "round", c[1]), un(im, "round", c[2]));
    } else {
      GNode *lo[3], *hi[3], *w1[3], *w0[3];
      for (int d = 0; d < 3; d++) {
        lo[d] = un(im, "floor", c[d]), hi[d] = bin(im, "add", lo[d], one);
        w1[d] = bin(im, "subtract", c[d], lo[d]), w0[d] = bin(im, "subtract", one, w1[d]);
      }
      for (int k = 0; k < 8; k++) {
        int bx = k & 1, by = (k >> 1) & 1, bz = (k >> 2) & 1;
        GNode *w = bin(im, "multiply", bin(im, "multiply", bz ? w1[2] : w0[2], by ? w1[1] : w0[1]), bx ? w1[0] : w0[0]);
        GNode *term = bin(im, "multiply", grid_at(im, &g, bx ? hi[0] : lo[0], by ? hi[1] : lo[1], bz ? hi[2] : lo[2]),
                          imp_expand_dims(im, w, 4));
        out = out ? bin(im, "add", out, term) : term;
      }
    }
    int64_t back5[5] = {0, 4, 1, 2, 3};
    return imp_set_output(im, 0, imp_transpose(im, out, 5, back5));
  }
  if (m == 0 || m == 1) {
    GNode *cx = pad_coord(im, &g, ux, g.W), *cy = pad_coord(im, &g, uy, g.H);
    if (m == 0) {
      out = grid_at(im, &g, un(im, "round", cx), un(im, "round", cy), NULL);
    } else {
      GNode *x0 = un(im, "floor", cx), *y0 = un(im, "floor", cy);
      GNode *x1 = bin(im, "add", x0, one), *y1 = bin(im, "add", y0, one);
      GNode *wx1 = bin(im, "subtract", cx, x0), *wy1 = bin(im, "subtract", cy, y0);
      GNode *wx0 = bin(im, "subtract", one, wx1), *wy0 = bin(im, "subtract", one, wy1);
      GNode *xs[2] = {x0, x1}, *ys[2] = {y0, y1}, *wxs[2] = {wx0, wx1}, *wys[2] = {wy0, wy1};
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          GNode *w = imp_expand_dims(im, bin(im, "multiply", wys[i], wxs[j]), 3);
          GNode *term = bin(im, "multiply", grid_at(im, &g, xs[j], ys[i], NULL), w);
          out = out ? bin(im, "add", out, term) : term;
        }
    }
  } else {
    GNode *x0 = un(im, "floor", ux), *y0 = un(im, "floor", uy);
    GNode *tx = bin(im, "subtract", ux, x0), *ty = bin(im, "subtract", uy, y0);
    for (int i = 0; i < 4; i++) {
      GNode *yi = un(im, "trunc", pad_coord(im, &g, bin(im, "add", y0, fscal(im, i - 1, &g)), g.H));
      GNode *row = NULL;
      for (int j = 0; j < 4; j++) {
        GNode *xj = un(im, "trunc", pad_coord(im, &g, bin(im, "add", x0, fscal(im, j - 1, &g)), g.W));
        GNode *term = bin(im, "multiply", grid_at(im, &g, xj, yi, NULL), imp_expand_dims(im, cubic_w(im, &g, tx, j), 3));
        row = row ? bin(im, "add", row, term) : term;
      }
      GNode *term = bin(im, "multiply", row, imp_expand_dims(im, cubic_w(im, &g, ty, i), 3));
      out = out ? bin(im, "add", out, term) : term;
    }
  }
  int64_t back[4] = {0, 3, 1, 2};
  return imp_set_output(im, 0, imp_transpose(im, out, 4, back));
}

/* ---- RoiAlign (ONNX Runtime's algorithm, a fixed sampling grid) ---- */

int onnx_h_RoiAlign(Importer *im) {
  GNode *x = imp_input(im, 0), *rois = imp_input(im, 1), *bidx = imp_input(im, 2);
  if (!x || !rois || !bidx) return imp_error(im, "needs X, rois and batch_indices");
  if (x->type.ndim != 4 || rois->type.ndim != 2 || rois->type.shape[1] != 4 || bidx->type.ndim != 1 ||
      bidx->type.shape[0] != rois->type.shape[0])
    return imp_error(im, "X %s, rois %s and batch_indices %s must be [N, C, H, W], [R, 4] and [R]", ttype_str(&x->type),
                     ttype_str(&rois->type), ttype_str(&bidx->type));
  if (!dt_is_float(x->type.dtype)) return imp_error(im, "X must be floating-point");
  int64_t PH, PW, G = onnx_attr_int(N(im), "sampling_ratio", 0);
  if (imp_attr_i64(im, "output_height", 1, 1, IMP_MAX_COUNT, &PH) || imp_attr_i64(im, "output_width", 1, 1, IMP_MAX_COUNT, &PW))
    return -1;
  double scale = onnx_attr_float(N(im), "spatial_scale", 1.0f);
  const char *mode = onnx_attr_string(N(im), "mode", "avg");
  const char *ct = onnx_attr_string(N(im), "coordinate_transformation_mode", imp_opset(im) >= 16 ? "half_pixel" : "output_half_pixel");
  bool maxm = !strcmp(mode, "max"), half = !strcmp(ct, "half_pixel");
  if (!maxm && strcmp(mode, "avg")) return imp_error(im, "mode '%s' is not supported", mode);
  if (!half && strcmp(ct, "output_half_pixel")) return imp_error(im, "coordinate_transformation_mode '%s' is not supported", ct);
  if (G <= 0) return imp_error(im, "sampling_ratio = %lld (adaptive, data-dependent) is not supported", (long long)G);
  if (imp_attr_i64(im, "sampling_ratio", 0, 1, IMP_MAX_COUNT, &G)) return -1;
  int64_t R = rois->type.shape[0], N = x->type.shape[0], C = x->type.shape[1], H = x->type.shape[2], W = x->type.shape[3];
  DType t = x->type.dtype;
  Grid g = {0};
  g.t = t;
  GNode *rf = imp_cast(im, rois, t);
  GNode *c[4];
  for (int i = 0; i < 4; i++) c[i] = bin(im, "subtract", bin(im, "multiply", imp_squeeze(im, imp_slice(im, rf, 1, i, i + 1), 1), fscal(im, scale, &g)), fscal(im, half ? 0.5 : 0, &g));
  GNode *rw = bin(im, "subtract", c[2], c[0]), *rh = bin(im, "subtract", c[3], c[1]);
  if (!half) rw = bin(im, "maximum", rw, fscal(im, 1, &g)), rh = bin(im, "maximum", rh, fscal(im, 1, &g));
  /* sample positions: start + bin * (p + (i + 0.5) / G), [R, P * G] */
  GNode *pos[2];
  int64_t P[2] = {PH, PW}, n2[2] = {H, W};
  GNode *start[2] = {c[1], c[0]}, *size[2] = {rh, rw};
  GNode *lo[2], *hi[2], *wl[2], *wh[2], *ok[2];
  for (int a = 0; a < 2; a++) {
    int64_t len;
    if (imp_mul_count(im, a ? "output_width x sampling_ratio" : "output_height x sampling_ratio", P[a], G, IMP_MAX_COUNT, &len))
      return -1;
    void *kp;
    GNode *kc = imp_new_const(im, t, 1, &len, &kp);
    if (!kc) return -1;
    for (int64_t p = 0; p < P[a]; p++)
      for (int64_t i = 0; i < G; i++) imp_array_set(kc->value, p * G + i, (double)p + ((double)i + 0.5) / (double)G);
    GNode *bin_sz = bin(im, "divide", size[a], fscal(im, (double)P[a], &g));
    pos[a] = bin(im, "add", imp_expand_dims(im, start[a], 1), bin(im, "multiply", imp_expand_dims(im, bin_sz, 1), kc));
    /* bilinear taps with ONNX Runtime's edge rules */
    GNode *v = pos[a], *dim = fscal(im, (double)n2[a], &g), *last = fscal(im, (double)(n2[a] - 1), &g);
    ok[a] = bin(im, "logical_and", bin(im, "greater_equal", v, fscal(im, -1, &g)), bin(im, "less_equal", v, dim));
    v = bin(im, "maximum", v, fscal(im, 0, &g));
    GNode *fl = un(im, "floor", v);
    GNode *edge = bin(im, "greater_equal", fl, last);
    lo[a] = imp_where(im, edge, last, fl);
    hi[a] = imp_where(im, edge, last, bin(im, "add", fl, fscal(im, 1, &g)));
    v = imp_where(im, edge, last, v);
    wh[a] = bin(im, "subtract", v, lo[a]);           /* weight of the high tap */
    wl[a] = bin(im, "subtract", fscal(im, 1, &g), wh[a]);
  }
  /* gather from X as [N * H * W, C] at [R, PH*G, PW*G] positions */
  int64_t p4[4] = {0, 2, 3, 1}, fs[2] = {N * H * W, C};
  GNode *xf = imp_reshape(im, imp_transpose(im, x, 4, p4), 2, fs);
  int64_t b3[3] = {R, 1, 1};
  GNode *boff = bin(im, "multiply", imp_reshape(im, imp_cast(im, bidx, DT_I64), 3, b3), imp_scalar(im, (double)(H * W), DT_I64));
  GNode *valid = bin(im, "logical_and", imp_expand_dims(im, ok[0], 2), imp_expand_dims(im, ok[1], 1));
  GNode *ys[2] = {lo[0], hi[0]}, *xs[2] = {lo[1], hi[1]}, *wys[2] = {wl[0], wh[0]}, *wxs[2] = {wl[1], wh[1]};
  GNode *acc = NULL;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      GNode *lin = bin(im, "add", bin(im, "add", boff, imp_expand_dims(im, imp_cast(im, bin(im, "multiply", ys[i], fscal(im, (double)W, &g)), DT_I64), 2)),
                       imp_expand_dims(im, imp_cast(im, xs[j], DT_I64), 1));
      GAttrs ta = gattrs_new();
      ga_int(&ta, "axis", 0);
      GNode *args[2] = {xf, lin};
      GNode *v = imp_call(im, "take", 2, args, ta); /* [R, PH*G, PW*G, C] */
      GNode *w = bin(im, "multiply", imp_expand_dims(im, wys[i], 2), imp_expand_dims(im, wxs[j], 1));
      w = imp_where(im, valid, w, fscal(im, 0, &g));
      GNode *term = bin(im, "multiply", v, imp_expand_dims(im, w, 3));
      acc = !acc ? term : bin(im, maxm ? "maximum" : "add", acc, term);
    }
  int64_t s6[6] = {R, PH, G, PW, G, C}, red[2] = {2, 4};
  GNode *y = imp_reduce(im, maxm ? "max" : "sum", imp_reshape(im, acc, 6, s6), 2, red, false);
  if (!maxm) y = bin(im, "divide", y, fscal(im, (double)(G * G), &g));
  int64_t back[4] = {0, 3, 1, 2};
  return imp_set_output(im, 0, imp_transpose(im, y, 4, back));
}

/* ---- Resize with tf_crop_and_resize: per axis, gathers at constant
 * source positions inside the region of interest (linear: two taps with
 * constant weights), and extrapolation_value outside the input ---- */

int onnx_resize_crop(Importer *im, GNode *x, const int64_t *size) {
  if (!x) return -1;
  int nd = x->type.ndim;
  GNode *roi = imp_const_input(im, 1);
  if (!roi) return -1;
  /* the region per axis: (start, end) from roi, for the named axes only
   * when the axes attribute (opset 18) is given */
  double rs[MAXD], re[MAXD];
  int na = nd;
  const int64_t *av = imp_opset(im) >= 18 ? onnx_attr_ints(N(im), "axes", &na) : NULL;
  if (!av) na = nd;
  if (ttype_numel(&roi->type) != 2 * na) return imp_error(im, "roi has %lld values, expected %d", (long long)ttype_numel(&roi->type), 2 * na);
  for (int a = 0; a < nd; a++) rs[a] = 0, re[a] = 1;
  for (int i = 0; i < na; i++) {
    int ax = i;
    if (av && imp_norm_axis(im, av[i], nd, &ax)) return -1;
    rs[ax] = imp_const_at(roi, i);
    re[ax] = imp_const_at(roi, na + i);
  }
  const char *mode = onnx_attr_string(N(im), "mode", "nearest"), *nm = onnx_attr_string(N(im), "nearest_mode", "round_prefer_floor");
  bool linear = !strcmp(mode, "linear");
  if (!linear && strcmp(mode, "nearest"))
    return imp_error(im, "mode '%s' with tf_crop_and_resize is not supported (nearest, linear)", mode);
  int rnd = !strcmp(nm, "round_prefer_floor") ? 0 : !strcmp(nm, "round_prefer_ceil") ? 1 : !strcmp(nm, "floor") ? 2 : !strcmp(nm, "ceil") ? 3 : -1;
  if (rnd < 0) return imp_error(im, "nearest_mode '%s' is not supported", nm);
  double ext = onnx_attr_float(N(im), "extrapolation_value", 0.0f);
  GNode *y = x, *mask = NULL;
  for (int a = 0; a < nd; a++) {
    int64_t n = x->type.shape[a], o = size[a];
    double s = rs[a], e = re[a];
    if (o == n && s == 0 && e == 1) continue; /* the identity */
    int64_t *i0, *i1, shp[MAXD];
    for (int k = 0; k < nd - a; k++) shp[k] = k == 0 ? o : 1;
    GNode *c0 = imp_new_i64(im, 1, &o, &i0), *c1 = imp_new_i64(im, 1, &o, &i1);
    void *w0p, *w1p, *mp;
    GNode *w0 = imp_new_const(im, x->type.dtype, nd - a, shp, &w0p), *w1 = imp_new_const(im, x->type.dtype, nd - a, shp, &w1p);
    GNode *mk = imp_new_const(im, DT_BOOL, nd - a, shp, &mp);
    if (!c0 || !c1 || !w0 || !w1 || !mk) return -1;
    for (int64_t j = 0; j < o; j++) {
      double xo = o == 1 ? (e - s) * (double)(n - 1) / 2 : (double)j * (e - s) * (double)(n - 1) / (double)(o - 1);
      xo += s * (double)(n - 1);
      ((uint8_t *)mp)[j] = xo >= 0 && xo <= (double)(n - 1);
      /* positions outside the input are masked: clamped first, so that a
       * roi of any value (inf, NaN, 1e300) converts to an index */
      double xc = xo != xo ? -2 : xo < -2 ? -2 : xo > (double)n + 1 ? (double)n + 1 : xo;
      double lo = floor(xc), r = xc - lo;
      int64_t l, h;
      if (linear) {
        l = (int64_t)lo, h = l + 1;
      } else {
        double f = rnd == 2 ? floor(xc) : rnd == 3 ? ceil(xc) : r == 0.5 ? (rnd == 0 ? lo : lo + 1) : round(xc);
        l = h = (int64_t)f, r = 0;
      }
      i0[j] = l < 0 ? 0 : l > n - 1 ? n - 1 : l;
      i1[j] = h < 0 ? 0 : h > n - 1 ? n - 1 : h;
      imp_array_set(w0->value, j, 1 - r);
      imp_array_set(w1->value, j, r);
    }
    GAttrs ta = gattrs_new();
    ga_int(&ta, "axis", a);
    GNode *a0[2] = {y, c0}, *a1[2] = {y, c1};
    GNode *g0 = imp_call(im, "take", 2, a0, ta);
    y = linear ? bin(im, "add", bin(im, "multiply", g0, w0), bin(im, "multiply", imp_call(im, "take", 2, a1, ta), w1)) : g0;
    mask = mask ? bin(im, "logical_and", mask, mk) : mk;
  }
  if (mask) y = imp_where(im, mask, y, imp_scalar_like(im, ext, y));
  return imp_set_output(im, 0, y == x ? un(im, "copy", x) : y);
}

/* ---- AffineGrid (opset 20): theta [N, k, k+1] applied to the homogeneous
 * coordinates (x, y[, z], 1) of a regular grid over [-1, 1] (pixel centres,
 * or the corners with align_corners); a constant grid and one matmul ---- */

int onnx_h_AffineGrid(Importer *im) {
  GNode *theta = imp_input(im, 0);
  GNode *sv = imp_input(im, 1);
  if (sv && sv->kind == GN_VAR) return onnx_affine_grid_runtime(im);
  int64_t size[MAXD];
  int ns = imp_const_input_ints_in(im, 1, size, MAXD, 0, IMP_MAX_COUNT);
  if (ns < 0) return -1;
  if (ns != 4 && ns != 5) return imp_error(im, "size has %d values, expected 4 ([N, C, H, W]) or 5 ([N, C, D, H, W])", ns);
  int k = ns - 2;
  if (theta->type.ndim != 3 || theta->type.shape[0] != size[0] || theta->type.shape[1] != k || theta->type.shape[2] != k + 1)
    return imp_error(im, "theta %s must be [%lld, %d, %d]", ttype_str(&theta->type), (long long)size[0], k, k + 1);
  bool ac = onnx_attr_int(N(im), "align_corners", 0) != 0;
  int64_t P;
  if (imp_numel_in(im, "the grid", k, size + 2, IMP_MAX_COUNT, &P)) return -1;
  int64_t bs[3] = {1, P, k + 1};
  void *p;
  GNode *base = imp_new_const(im, DT_F32, 3, bs, &p);
  if (!base) return -1;
  float *d = p;
  for (int64_t e = 0; e < P; e++) {
    int64_t rem = e;
    /* spatial index (row-major over D, H, W); coordinate c of the output
     * is the index along the (k - 1 - c)-th spatial axis: x along W */
    int64_t idx[3];
    for (int a = k - 1; a >= 0; a--) idx[a] = rem % size[2 + a], rem /= size[2 + a];
    for (int c = 0; c < k; c++) {
      int a = k - 1 - c;
      double n = (double)size[2 + a], v;
      if (ac) v = n > 1 ? -1.0 + 2.0 * (double)idx[a] / (n - 1) : -1.0;
      else v = -1.0 + (2.0 * (double)idx[a] + 1.0) / n;
      d[e * (k + 1) + c] = (float)v;
    }
    d[e * (k + 1) + k] = 1.0f;
  }
  int64_t perm[3] = {0, 2, 1}, full[3] = {size[0], P, k + 1};
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", 3, full);
  GNode *b = imp_call(im, "broadcast_to", 1, &base, a);
  GNode *g = bin(im, "nn.matmul", b, imp_transpose(im, imp_cast(im, theta, DT_F32), 3, perm)); /* [N, P, k] */
  int64_t os[MAXD];
  os[0] = size[0];
  for (int i = 0; i < k; i++) os[1 + i] = size[2 + i];
  os[1 + k] = k;
  return imp_set_output(im, 0, imp_cast(im, imp_reshape(im, g, k + 2, os), theta->type.dtype));
}

/* ---- Col2Im (opset 18) ----
 * The inverse of im2col: input [N, C * prod(block), L] holds, for each
 * block offset k and each of the L sliding positions, one value; the
 * image [N, C, *image_shape] sums every value into the pixel it came from.
 * Built as one term per block offset: that offset's [N, C, *out] slice,
 * spread by the strides (each axis reshaped to [out, 1], zero-padded to
 * [out, stride], merged), shifted by offset * dilation into the padded
 * image and summed; the pads are cropped off at the end.  With
 * image_shape or block_shape given at run time: dyn.col2im (below). */

/* The attributes for d spatial axes (defaults: dilations and strides 1,
 * pads 0). */
static int col2im_attrs(Importer *im, int d, int64_t *dil, int64_t *str, int64_t *pads) {
  for (int i = 0; i < d; i++) dil[i] = str[i] = 1, pads[i] = pads[i + d] = 0;
  const int64_t *v;
  int nv;
  if (imp_attr_ints_in(im, "dilations", -1, 1, IMP_MAX_COUNT, &v, &nv)) return -1;
  if (v && nv) {
    if (nv != d) return imp_error(im, "dilations has %d values, expected %d", nv, d);
    memcpy(dil, v, sizeof(int64_t) * (size_t)d);
  }
  if (imp_attr_ints_in(im, "strides", -1, 1, IMP_MAX_COUNT, &v, &nv)) return -1;
  if (v && nv) {
    if (nv != d) return imp_error(im, "strides has %d values, expected %d", nv, d);
    memcpy(str, v, sizeof(int64_t) * (size_t)d);
  }
  if (imp_attr_ints_in(im, "pads", -1, 0, IMP_MAX_COUNT, &v, &nv)) return -1;
  if (v && nv) {
    if (nv != 2 * d) return imp_error(im, "pads has %d values, expected %d", nv, 2 * d);
    memcpy(pads, v, sizeof(int64_t) * (size_t)(2 * d));
  }
  return 0;
}

/* Sliding positions f[i..d) whose product is L, each at least minf[i]. */
static bool col2im_factor(int64_t L, int d, int i, const int64_t *minf, int64_t *f) {
  if (i == d - 1) return f[i] = L, L >= minf[i];
  for (int64_t q = 1; q * q <= L; q++) {
    if (L % q) continue;
    int64_t two[2] = {q, L / q};
    for (int t = 0; t < 2; t++)
      if (two[t] >= minf[i] && (f[i] = two[t], col2im_factor(L / two[t], d, i + 1, minf, f))) return true;
  }
  return false;
}

/* One of Col2Im's size inputs: its n values, each a constant (sym NULL)
 * or a value symbol of a graph input in [lo, hi]; false when the input is
 * neither (the compile-time path says what to bind). */
static bool col2im_sizes(Importer *im, int i, int64_t hi, GSym **sym, int64_t *val, bool *fresh, int *n) {
  GNode *v = imp_input(im, i);
  if (v->kind == GN_CONST) {
    *n = gnode_const_ints(v, val, MAXD);
    for (int k = 0; k < *n; k++) sym[k] = NULL, fresh[k] = false;
    return *n > 0;
  }
  if (v->kind != GN_VAR || v->type.ndim != 1 || v->type.dtype.code != kDLInt || ttype_is_symbolic(&v->type) ||
      v->type.shape[0] < 1 || v->type.shape[0] > MAXD - 2)
    return false;
  *n = (int)v->type.shape[0];
  Graph *g = imp_graph(im);
  for (int k = 0; k < *n; k++) {
    int before = g->syms.len;
    sym[k] = graph_value_sym(g, v->name, k, 1, hi);
    if (!sym[k]) return false;
    fresh[k] = g->syms.len > before;
    val[k] = sym[k]->rep;
  }
  return true;
}

/* Representative values for Col2Im's sizes given at run time: blocks
 * (the fresh ones searched from 1 up) whose product divides the rows and
 * an image (the fresh axes) whose sliding positions multiply to L. */
typedef struct Col2ImFit {
  int d;
  int64_t CK, L;
  const int64_t *dil, *str, *pads;
  const bool *ifresh, *bfresh;
  int64_t *img, *blk;
  long budget; /* block combinations left to try */
} Col2ImFit;

static bool col2im_fit_image(Col2ImFit *c) {
  int64_t K = 1, rest = c->L, minf[MAXD], ff[MAXD];
  int nfree = 0, d = c->d;
  for (int i = 0; i < d; i++) K *= c->blk[i];
  if (c->CK % K) return false;
  for (int i = 0; i < d; i++) {
    int64_t P = c->pads[i] + c->pads[i + d], span = c->dil[i] * (c->blk[i] - 1) + 1;
    if (c->ifresh[i]) { /* (f - 1) * s + span - P >= 1 */
      int64_t need = 1 + P - span;
      minf[nfree++] = 1 + (need > 0 ? (need + c->str[i] - 1) / c->str[i] : 0);
      continue;
    }
    int64_t room = c->img[i] + P - span, f = room < 0 ? 0 : room / c->str[i] + 1;
    if (f < 1 || rest % f) return false;
    rest /= f;
  }
  if (!nfree) return rest == 1;
  if (!col2im_factor(rest, nfree, 0, minf, ff)) return false;
  for (int i = 0, j = 0; i < d; i++)
    if (c->ifresh[i])
      c->img[i] = (ff[j++] - 1) * c->str[i] + c->dil[i] * (c->blk[i] - 1) + 1 - c->pads[i] - c->pads[i + d];
  return true;
}

static bool col2im_fit(Col2ImFit *c, int i) {
  if (i == c->d) return c->budget-- > 0 && col2im_fit_image(c);
  if (!c->bfresh[i]) return col2im_fit(c, i + 1);
  for (int64_t b = 1; b <= c->CK && c->budget > 0; b++) {
    c->blk[i] = b;
    if (!c->ifresh[i] && c->dil[i] * (b - 1) + 1 > c->img[i] + c->pads[i] + c->pads[i + c->d]) break;
    if (col2im_fit(c, i + 1)) return true;
  }
  return false;
}

static void put_size(StrBuf *sb, const GSym *s, int64_t c) {
  if (s) sb_printf(sb, " %s", s->name);
  else sb_printf(sb, " %lld", (long long)c);
}

/* Col2Im with image_shape or block_shape a graph input: dyn.col2im, the
 * kernel reading both.  The image's sizes are value symbols in [1, 2^31 -
 * 1] and the output's spatial dimensions; block sizes value symbols in
 * [1, C * prod(block)].  Dimension 1 (C) is C * prod(block) / prod(block)
 * when the block divides it and the sliding positions multiply to L (and
 * the padded image holds the block on every axis), else -1: the executor
 * refuses such values naming the node.  Representative values: blocks of
 * 1 and an image whose positions factor L.  -2 when no representative
 * values fit the input (the compile-time path then asks for --bind). */
static int col2im_runtime(Importer *im, GNode *x) {
  GSym *isym[MAXD], *bsym[MAXD];
  int64_t img[MAXD], blk[MAXD], dil[MAXD], str[MAXD], pads[2 * MAXD];
  int d, db;
  bool ifresh[MAXD], bfresh[MAXD];
  if (x->type.ndim != 3 || ttype_is_symbolic(&x->type) ||
      !col2im_sizes(im, 1, GRAPH_MAX_ELEMS, isym, img, ifresh, &d) ||
      !col2im_sizes(im, 2, x->type.shape[1], bsym, blk, bfresh, &db))
    return -2;
  if (d != db) return imp_error(im, "image_shape has %d values and block_shape %d: they must match", d, db);
  if (col2im_attrs(im, d, dil, str, pads)) return -1;
  int64_t n = x->type.shape[0], CK = x->type.shape[1], L = x->type.shape[2], K = 1;
  Col2ImFit c = {d, CK, L, dil, str, pads, ifresh, bfresh, img, blk, 100000};
  if (!col2im_fit(&c, 0)) return -2;
  for (int i = 0; i < d; i++) {
    if (bfresh[i]) bsym[i]->rep = blk[i]; /* a symbol made before keeps its value */
    if (ifresh[i]) isym[i]->rep = img[i];
    K *= blk[i];
  }
  /* the shape: [N, C, *image] */
  int64_t shape[MAXD];
  shape[0] = n;
  shape[1] = CK / K;
  StrBuf sd = {0}, cond = {0}, kx = {0}, prod = {0};
  sb_puts(&kx, " 1");
  sb_puts(&prod, " 1");
  for (int i = 0; i < d; i++) {
    shape[2 + i] = img[i];
    put_size(&kx, bsym[i], blk[i]);
    sb_printf(&kx, " * %lld min", (long long)CK + 1);
    /* the padded image less the block's span; its positions */
    StrBuf room = {0};
    put_size(&room, isym[i], img[i]);
    sb_printf(&room, " %lld +", (long long)(pads[i] + pads[i + d]));
    sb_printf(&room, " %lld", (long long)dil[i]);
    put_size(&room, bsym[i], blk[i]);
    sb_puts(&room, " 1 - * 1 + -");
    sb_printf(&cond, "%s 0 ge%s", room.data, i ? " and" : "");
    sb_printf(&prod, "%s %lld fdiv 1 + * %lld min", room.data, (long long)str[i], (long long)L + 1);
    sb_free(&room);
  }
  sb_printf(&sd, ",%s %lld%s mod 0 eq and%s %lld eq and %lld%s div -1 sel", cond.data, (long long)CK, kx.data,
            prod.data, (long long)L, (long long)CK, kx.data);
  for (int i = 0; i < d; i++) sb_printf(&sd, ",%s", isym[i] ? isym[i]->name : "");
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", d + 2, shape);
  ga_str(&a, "sym_dims", sd.data);
  ga_ints(&a, "pads", 2 * d, pads);
  ga_ints(&a, "dilations", d, dil);
  ga_ints(&a, "strides", d, str);
  sb_free(&sd);
  sb_free(&cond);
  sb_free(&kx);
  sb_free(&prod);
  GNode *args[3] = {x, imp_input(im, 1), imp_input(im, 2)};
  return out0(im, imp_call(im, "dyn.col2im", 3, args, a));
}

int onnx_h_Col2Im(Importer *im) {
  GNode *x = in0(im);
  GNode *is = imp_input(im, 1), *bs = imp_input(im, 2);
  if (x && is && bs && (is->kind == GN_VAR || bs->kind == GN_VAR)) {
    int rc = col2im_runtime(im, x);
    if (rc != -2) return rc;
  }
  int64_t img[MAXD], blk[MAXD];
  int d = imp_const_input_ints_in(im, 1, img, MAXD, 1, IMP_MAX_COUNT);
  if (d < 0) return -1;
  int db = imp_const_input_ints_in(im, 2, blk, MAXD, 1, IMP_MAX_COUNT);
  if (db < 0) return -1;
  if (d == 0 || d != db) return imp_error(im, "image_shape has %d values and block_shape %d: they must match (one per spatial axis)", d, db);
  if (x->type.ndim != 3) return imp_error(im, "input must be [N, C * prod(block_shape), L], got %s", ttype_str(&x->type));
  if (d + 2 > MAXD) return imp_error(im, "%d spatial axes (at most %d)", d, MAXD - 2);
  int64_t dil[MAXD], str[MAXD], pads[2 * MAXD];
  if (col2im_attrs(im, d, dil, str, pads)) return -1;
  int64_t K = 1, L = 1, outs[MAXD], padded[MAXD];
  for (int i = 0; i < d; i++) {
    if (img[i] < 1 || blk[i] < 1 || dil[i] < 1 || str[i] < 1 || pads[i] < 0 || pads[i + d] < 0)
      return imp_error(im, "axis %d: image %lld, block %lld, dilation %lld, stride %lld, pads %lld/%lld: sizes, "
                           "dilations and strides must be positive and pads non-negative",
                       i, (long long)img[i], (long long)blk[i], (long long)dil[i], (long long)str[i],
                       (long long)pads[i], (long long)pads[i + d]);
    padded[i] = img[i] + pads[i] + pads[i + d];
    int64_t span = dil[i] * (blk[i] - 1) + 1;
    if (padded[i] < span)
      return imp_error(im, "axis %d: the block spans %lld, more than the padded image's %lld", i, (long long)span,
                       (long long)padded[i]);
    outs[i] = (padded[i] - span) / str[i] + 1;
    if (imp_mul_count(im, "block_shape", K, blk[i], IMP_MAX_COUNT, &K) ||
        imp_mul_count(im, "the block positions", L, outs[i], IMP_MAX_COUNT, &L))
      return -1;
  }
  int64_t n = x->type.shape[0], ck = x->type.shape[1];
  if (ck % K || x->type.shape[2] != L)
    return imp_error(im, "input %s: dimension 1 must be a multiple of prod(block_shape) = %lld and dimension 2 the "
                         "number of block positions, %lld",
                     ttype_str(&x->type), (long long)K, (long long)L);
  if (K > 4096)
    return imp_error(im, "prod(block_shape) = %lld: Kiln builds one term per block offset and takes at most 4096",
                     (long long)K);
  int64_t c = ck / K;
  int64_t s4[4] = {n, c, K, L};
  GNode *x4 = imp_reshape(im, x, 4, s4), *acc = NULL;
  for (int64_t kk = 0; kk < K && x4; kk++) {
    int64_t off[MAXD], rem = kk;
    for (int i = d - 1; i >= 0; i--) off[i] = rem % blk[i], rem /= blk[i];
    int64_t sh[MAXD + 2] = {n, c};
    for (int i = 0; i < d; i++) sh[2 + i] = outs[i];
    GNode *t = imp_reshape(im, imp_squeeze(im, imp_slice(im, x4, 2, kk, kk + 1), 2), d + 2, sh);
    for (int i = 0; i < d && t; i++) { /* spread axis 2 + i by its stride, then shift into place */
      int r = t->type.ndim, ax = 2 + i;
      if (str[i] > 1) {
        int64_t s5[MAXD + 1], p5[2 * (MAXD + 1)] = {0}, s4b[MAXD];
        for (int j = 0, o = 0; j < r; j++) {
          s5[o++] = t->type.shape[j];
          if (j == ax) s5[o++] = 1;
        }
        p5[ax + 1 + (r + 1)] = str[i] - 1;
        GNode *e = imp_reshape(im, t, r + 1, s5);
        GAttrs pa = gattrs_new();
        ga_ints(&pa, "pads", 2 * (r + 1), p5);
        ga_str(&pa, "pad_mode", "constant");
        ga_float(&pa, "pad_value", 0);
        e = e ? imp_call(im, "nn.pad", 1, &e, pa) : NULL;
        memcpy(s4b, t->type.shape, sizeof(int64_t) * (size_t)r);
        s4b[ax] = outs[i] * str[i];
        t = imp_reshape(im, e, r, s4b);
      }
      int64_t begin = off[i] * dil[i], len = t ? t->type.shape[ax] : 0;
      if (begin + len > padded[i]) { /* the stride's trailing zeros past the image */
        t = imp_slice(im, t, ax, 0, padded[i] - begin);
        len = padded[i] - begin;
      }
      int64_t pp[2 * (MAXD + 2)] = {0};
      pp[ax] = begin;
      pp[ax + r] = padded[i] - begin - len;
      GAttrs pa = gattrs_new();
      ga_ints(&pa, "pads", 2 * r, pp);
      ga_str(&pa, "pad_mode", "constant");
      ga_float(&pa, "pad_value", 0);
      t = t ? imp_call(im, "nn.pad", 1, &t, pa) : NULL;
    }
    acc = acc ? bin(im, "add", acc, t) : t;
  }
  for (int i = 0; i < d && acc; i++)
    if (pads[i] || pads[i + d]) acc = imp_slice(im, acc, 2 + i, pads[i], pads[i] + img[i]);
  return out0(im, acc);
}

/* ---- ImageDecoder (opset 20): refused with the reason ----
 * Decoding JPEG, PNG, BMP, TIFF, WebP, PNM or JPEG 2000 bytes needs image
 * codecs, which Kiln's generated code does not link; a row here makes the
 * error say so instead of "unsupported operator". */
int onnx_h_ImageDecoder(Importer *im) {
  return imp_error(im, "ImageDecoder is not supported: Kiln links no image codecs (JPEG, PNG, BMP, TIFF, WebP, PNM, "
                       "JPEG 2000); decode the image before the model and feed its pixels as a uint8 tensor");
}
