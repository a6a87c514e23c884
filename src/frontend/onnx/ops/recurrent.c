/*
 * recurrent.c - ONNX's recurrent layers (RNN, GRU, LSTM), unrolled
 * over the sequence, whose length is static.
 *
 * Each step is dense calls on the gates and the activations the node
 * names (with their alpha and beta); both directions of a bidirectional
 * layer are unrolled and their outputs stacked as ONNX lays them out.
 */
#include "ops.h"

/* ---- RNN, GRU, LSTM: unrolled over the (static) sequence ---- */

/* The longest sequence unrolled (as Loop and Scan in control.c). */
#define MAX_STEPS 4096

typedef struct Act {
  const char *name;
  double alpha, beta;
} Act;

static GNode *activate(Importer *im, const Act *a, GNode *x) {
  if (!x) return NULL;
  const char *n = a->name;
  if (!strcmp(n, "Sigmoid")) return un(im, "sigmoid", x);
  if (!strcmp(n, "Tanh")) return un(im, "tanh", x);
  if (!strcmp(n, "Relu")) return un(im, "nn.relu", x);
  if (!strcmp(n, "Softsign")) return un(im, "nn.softsign", x);
  if (!strcmp(n, "Softplus")) return un(im, "nn.softplus", x);
  GAttrs ga = gattrs_new();
  if (!strcmp(n, "LeakyRelu") || !strcmp(n, "Elu") || !strcmp(n, "ThresholdedRelu")) {
    double dflt = !strcmp(n, "LeakyRelu") ? 0.01 : 1.0;
    ga_float(&ga, "alpha", isnan(a->alpha) ? dflt : a->alpha);
    return imp_call(im, !strcmp(n, "LeakyRelu") ? "nn.leaky_relu" : !strcmp(n, "Elu") ? "nn.elu" : "nn.thresholded_relu", 1, &x, ga);
  }
  if (!strcmp(n, "HardSigmoid")) {
    ga_float(&ga, "alpha", isnan(a->alpha) ? 0.2 : a->alpha);
    ga_float(&ga, "beta", isnan(a->beta) ? 0.5 : a->beta);
    return imp_call(im, "nn.hard_sigmoid", 1, &x, ga);
  }
  if (!strcmp(n, "Affine"))
    return bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, isnan(a->alpha) ? 1 : a->alpha, x)),
               imp_scalar_like(im, isnan(a->beta) ? 0 : a->beta, x));
  if (!strcmp(n, "ScaledTanh"))
    return bin(im, "multiply", un(im, "tanh", bin(im, "multiply", x, imp_scalar_like(im, isnan(a->beta) ? 1 : a->beta, x))),
               imp_scalar_like(im, isnan(a->alpha) ? 1 : a->alpha, x));
  return imp_error(im, "activation '%s' is not supported", n), NULL;
}

static GNode *clip_to(Importer *im, GNode *x, double t) {
  if (!x) return NULL;
  GAttrs a = gattrs_new();
  ga_float(&a, "a_min", -t);
  ga_float(&a, "a_max", t);
  return imp_call(im, "clip", 1, &x, a);
}

/* kind: 0 RNN, 1 GRU, 2 LSTM */
static int recurrent(Importer *im, int kind) {
  static const int ngates[3] = {1, 3, 4};
  static const int nacts[3] = {1, 2, 3};
  static const char *dacts[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  int G = ngates[kind];
  GNode *X = imp_input(im, 0), *W = imp_input(im, 1), *R = imp_input(im, 2), *B = imp_input(im, 3),
        *h0 = imp_input(im, 5), *c0 = kind == 2 ? imp_input(im, 6) : NULL, *P = kind == 2 ? imp_input(im, 7) : NULL;
  if (!X || !W || !R) return imp_error(im, "needs X, W and R");
  if (X->type.ndim != 3 || W->type.ndim != 3 || R->type.ndim != 3)
    return imp_error(im, "X, W and R must have rank 3, got %s, %s, %s", ttype_str(&X->type), ttype_str(&W->type), ttype_str(&R->type));
  const char *dir = onnx_attr_string(N(im), "direction", "forward");
  int ndir = !strcmp(dir, "bidirectional") ? 2 : 1;
  bool rev = !strcmp(dir, "reverse");
  if (!rev && ndir == 1 && strcmp(dir, "forward")) return imp_error(im, "direction '%s' is not supported", dir);
  int64_t layout = onnx_attr_int(N(im), "layout", 0);
  if (layout) {
    int64_t perm[3] = {1, 0, 2};
    X = imp_transpose(im, X, 3, perm);
    if (!X) return -1;
  }
  int64_t T = X->type.shape[0], batch = X->type.shape[1], H = R->type.shape[2];
  if (T <= 0 || batch <= 0 || H <= 0)
    return imp_error(im, "an empty sequence, batch or hidden state (X %s, R %s) is not supported", ttype_str(&X->type),
                     ttype_str(&R->type));
  if (T > MAX_STEPS)
    return imp_error(im, "a sequence of %lld steps: the recurrence is unrolled, one step per time step, and Kiln takes at "
                         "most %d", (long long)T, MAX_STEPS);
  if (onnx_attr_has(N(im), "hidden_size") && onnx_attr_int(N(im), "hidden_size", 0) != H)
    return imp_error(im, "hidden_size %lld differs from R's %lld", (long long)onnx_attr_int(N(im), "hidden_size", 0), (long long)H);
  if (W->type.shape[0] != ndir || W->type.shape[1] != G * H) return imp_error(im, "W has shape %s for %d direction(s) and hidden size %lld", ttype_str(&W->type), ndir, (long long)H);
  if (kind == 2 && onnx_attr_int(N(im), "input_forget", 0)) return imp_error(im, "input_forget = 1 is not supported");
  if (imp_input(im, 4)) {
    GNode *sl = imp_const_input(im, 4);
    if (!sl) return -1;
    for (int64_t b = 0; b < ttype_numel(&sl->type); b++) {
      int64_t len;
      if (imp_const_i64_at(im, 4, sl, b, INT64_MIN, INT64_MAX, &len)) return -1;
      if (len != T) return imp_error(im, "sequence_lens shorter than the sequence (%lld) are not supported", (long long)T);
    }
  }
  bool lbr = kind == 1 && onnx_attr_int(N(im), "linear_before_reset", 0) != 0;
  double clip = onnx_attr_float(N(im), "clip", 0);
  bool has_clip = onnx_attr_has(N(im), "clip");
  /* activations: per direction, nacts each */
  Act acts[2][3];
  int na, nal, nbe;
  const char **an = onnx_attr_strings(N(im), "activations", &na);
  const float *al = onnx_attr_floats(N(im), "activation_alpha", &nal), *be = onnx_attr_floats(N(im), "activation_beta", &nbe);
  if (an && na != nacts[kind] * ndir) return imp_error(im, "activations has %d entries, expected %d", na, nacts[kind] * ndir);
  for (int d = 0; d < ndir; d++)
    for (int k = 0; k < nacts[kind]; k++) {
      int i = d * nacts[kind] + k;
      acts[d][k].name = an ? an[i] : dacts[kind][k];
      acts[d][k].alpha = al && i < nal ? al[i] : NAN;
      acts[d][k].beta = be && i < nbe ? be[i] : NAN;
    }
  GNode *ys[2] = {NULL, NULL}, *hs[2] = {NULL, NULL}, *cs[2] = {NULL, NULL};
  int64_t hshape[2] = {batch, H};
  for (int d = 0; d < ndir; d++) {
    bool back = rev || d == 1;
    GNode *Wd = imp_index0(im, W, d), *Rd = imp_index0(im, R, d), *wb = NULL, *rb = NULL;
    if (B) {
      GNode *Bd = imp_index0(im, B, d);
      wb = imp_slice(im, Bd, 0, 0, G * H);
      rb = imp_slice(im, Bd, 0, G * H, 2 * G * H);
    }
    GNode *h = h0 ? imp_index0(im, h0, d) : imp_new_const(im, X->type.dtype, 2, hshape, NULL);
    GNode *c = kind == 2 ? (c0 ? imp_index0(im, c0, d) : imp_new_const(im, X->type.dtype, 2, hshape, NULL)) : NULL;
    GNode *pi = NULL, *po = NULL, *pf = NULL;
    if (P) {
      GNode *Pd = imp_index0(im, P, d);
      pi = imp_slice(im, Pd, 0, 0, H), po = imp_slice(im, Pd, 0, H, 2 * H), pf = imp_slice(im, Pd, 0, 2 * H, 3 * H);
    }
    /* GRU: the h gate's recurrence is applied apart from z and r */
    GNode *Rzr = kind == 1 ? imp_slice(im, Rd, 0, 0, 2 * H) : Rd, *Rh = kind == 1 ? imp_slice(im, Rd, 0, 2 * H, 3 * H) : NULL;
    GNode *rbzr = kind == 1 && rb ? imp_slice(im, rb, 0, 0, 2 * H) : rb, *rbh = kind == 1 && rb ? imp_slice(im, rb, 0, 2 * H, 3 * H) : NULL;
    GNode **steps = KNEWN(GNode *, T + 1);
    for (int64_t s = 0; s < T; s++) {
      int64_t t = back ? T - 1 - s : s;
      GNode *xw = dense(im, imp_index0(im, X, t), Wd);
      if (wb) xw = bin(im, "add", xw, wb);
      GNode *hr = dense(im, h, Rzr);
      if (rbzr) hr = bin(im, "add", hr, rbzr);
#define CLIP(v) (has_clip ? clip_to(im, v, clip) : (v))
      if (kind == 0) {
        h = activate(im, &acts[d][0], CLIP(bin(im, "add", xw, hr)));
      } else if (kind == 1) {
        GNode *zr = bin(im, "add", imp_slice(im, xw, 1, 0, 2 * H), hr);
        GNode *z = activate(im, &acts[d][0], CLIP(imp_slice(im, zr, 1, 0, H)));
        GNode *r = activate(im, &acts[d][0], CLIP(imp_slice(im, zr, 1, H, 2 * H)));
        GNode *xh = imp_slice(im, xw, 1, 2 * H, 3 * H), *rec;
        if (lbr) {
          rec = dense(im, h, Rh);
          if (rbh) rec = bin(im, "add", rec, rbh);
          rec = bin(im, "multiply", r, rec);
        } else {
          rec = dense(im, bin(im, "multiply", r, h), Rh);
          if (rbh) rec = bin(im, "add", rec, rbh);
        }
        GNode *hh = activate(im, &acts[d][1], CLIP(bin(im, "add", xh, rec)));
        /* (1 - z) * hh + z * h = hh + z * (h - hh) */
        h = bin(im, "add", hh, bin(im, "multiply", z, bin(im, "subtract", h, hh)));
      } else {
        GNode *g = bin(im, "add", xw, hr);
        GNode *gi = imp_slice(im, g, 1, 0, H), *go = imp_slice(im, g, 1, H, 2 * H), *gf = imp_slice(im, g, 1, 2 * H, 3 * H),
              *gc = imp_slice(im, g, 1, 3 * H, 4 * H);
        if (pi) gi = bin(im, "add", gi, bin(im, "multiply", pi, c));
        if (pf) gf = bin(im, "add", gf, bin(im, "multiply", pf, c));
        GNode *i = activate(im, &acts[d][0], CLIP(gi)), *f = activate(im, &acts[d][0], CLIP(gf));
        GNode *ct = activate(im, &acts[d][1], CLIP(gc));
        c = bin(im, "add", bin(im, "multiply", f, c), bin(im, "multiply", i, ct));
        if (po) go = bin(im, "add", go, bin(im, "multiply", po, c));
        GNode *o = activate(im, &acts[d][0], CLIP(go));
        h = bin(im, "multiply", o, activate(im, &acts[d][2], c));
      }
#undef CLIP
      if (!h) return -1;
      steps[t] = imp_expand_dims(im, h, 0); /* [1, batch, H] */
    }
    GAttrs ca = gattrs_new();
    ga_int(&ca, "axis", 0);
    ys[d] = T > 0 ? imp_call(im, "concatenate", (int)T, steps, ca) : NULL; /* [T, batch, H] */
    hs[d] = imp_expand_dims(im, h, 0);
    cs[d] = kind == 2 ? imp_expand_dims(im, c, 0) : NULL;
  }
  GAttrs a1 = gattrs_new(), a0 = gattrs_new();
  ga_int(&a1, "axis", 1);
  ga_int(&a0, "axis", 0);
  GNode *Y = NULL, *Yh, *Yc = NULL;
  for (int d = 0; d < ndir; d++) ys[d] = imp_expand_dims(im, ys[d], 1); /* [T, 1, batch, H] */
  Y = ndir == 2 ? imp_call(im, "concatenate", 2, ys, a1) : ys[0];
  Yh = ndir == 2 ? imp_call(im, "concatenate", 2, hs, a0) : hs[0];
  if (kind == 2) Yc = ndir == 2 ? imp_call(im, "concatenate", 2, cs, a0) : cs[0];
  if (layout) { /* [batch, T, dirs, H] and [batch, dirs, H] */
    int64_t p4[4] = {2, 0, 1, 3}, p3[3] = {1, 0, 2};
    Y = imp_transpose(im, Y, 4, p4);
    Yh = imp_transpose(im, Yh, 3, p3);
    if (Yc) Yc = imp_transpose(im, Yc, 3, p3);
  }
  if (imp_want_output(im, 0) && imp_set_output(im, 0, Y)) return -1;
  if (imp_want_output(im, 1) && imp_set_output(im, 1, Yh)) return -1;
  if (kind == 2 && imp_want_output(im, 2) && imp_set_output(im, 2, Yc)) return -1;
  return 0;
}

int onnx_h_RNN(Importer *im) { return recurrent(im, 0); }
int onnx_h_GRU(Importer *im) { return recurrent(im, 1); }
int onnx_h_LSTM(Importer *im) { return recurrent(im, 2); }
