/*
 * text.c - ONNX's TfIdfVectorizer (integer pools): each n-gram
 * length and skip is a comparison of shifted slices with all pool n-grams
 * of that length at once; counts reach their output columns through a 0/1
 * matrix.
 */
#include "ops.h"

/* ---- TfIdfVectorizer (integer pools): each n-gram length and skip is a
 * comparison of shifted slices with all pool n-grams of that length at
 * once; counts reach their output columns through a 0/1 matrix ---- */

int onnx_h_TfIdfVectorizer(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  if (onnx_attr_has(N(im), "pool_strings")) return imp_error(im, "string pools (pool_strings) are not supported");
  if (!dt_is_int(x->type.dtype)) return imp_error(im, "input must hold integers, got %s", dt_str(x->type.dtype));
  if (x->type.ndim != 1 && x->type.ndim != 2) return imp_error(im, "input %s must be [C] or [B, C]", ttype_str(&x->type));
  int npool, ncounts, nidx, nw;
  const int64_t *pool = onnx_attr_ints(N(im), "pool_int64s", &npool), *counts = onnx_attr_ints(N(im), "ngram_counts", &ncounts),
                *idx = onnx_attr_ints(N(im), "ngram_indexes", &nidx);
  const float *weights = onnx_attr_floats(N(im), "weights", &nw);
  const char *mode = onnx_attr_string(N(im), "mode", "TF");
  int64_t minn = onnx_attr_int(N(im), "min_gram_length", 1), maxn = onnx_attr_int(N(im), "max_gram_length", 1),
          maxskip = onnx_attr_int(N(im), "max_skip_count", 0);
  int m = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
  if (m < 0) return imp_error(im, "mode '%s' is not supported", mode);
  if (!pool || !counts || !idx) return imp_error(im, "needs pool_int64s, ngram_counts and ngram_indexes");
  /* each count is where the n-grams of one length start in the pool */
  if (imp_attr_ints_in(im, "ngram_counts", -1, 0, npool, &counts, &ncounts)) return -1;
  int64_t O = 0;
  for (int i = 0; i < nidx; i++) {
    if (idx[i] < 0 || idx[i] >= ((int64_t)1 << 31))
      return imp_error(im, "ngram_indexes[%d] = %lld: an output index must lie in [0, 2^31)", i, (long long)idx[i]);
    O = idx[i] + 1 > O ? idx[i] + 1 : O;
  }
  GNode *x2 = x->type.ndim == 1 ? imp_expand_dims(im, x, 0) : x;
  if (!x2) return -1;
  int64_t B = x2->type.shape[0], C = x2->type.shape[1];
  GNode *out = NULL;
  int64_t g0 = 0; /* index of the first n-gram of the current length */
  for (int n = 1; n <= ncounts; n++) {
    int64_t start = counts[n - 1], end = n < ncounts ? counts[n] : npool, G = (end - start) / n;
    if (G < 0 || start + G * n > npool) return imp_error(im, "ngram_counts does not fit pool_int64s");
    if (G > 0 && n >= minn && n <= maxn) {
      GNode *cnt = NULL;
      for (int64_t k = 0; k <= (n == 1 ? 0 : maxskip); k++) {
        int64_t L = C - (int64_t)(n - 1) * (k + 1);
        if (L <= 0) break;
        GNode *hit = NULL;
        for (int j = 0; j < n; j++) {
          void *tp;
          GNode *tj = imp_new_const(im, x2->type.dtype, 1, &G, &tp);
          if (!tj) return -1;
          for (int64_t g = 0; g < G; g++) imp_array_set(tj->value, g, (double)pool[start + g * n + j]);
          GNode *xj = imp_expand_dims(im, imp_slice(im, x2, 1, j * (k + 1), j * (k + 1) + L), 2);
          GNode *eq = bin(im, "equal", xj, tj);
          hit = hit ? bin(im, "logical_and", hit, eq) : eq;
        }
        int64_t a1 = 1;
        GNode *c = imp_reduce(im, "sum", imp_cast(im, hit, DT_F32), 1, &a1, false); /* [B, G] */
        cnt = cnt ? bin(im, "add", cnt, c) : c;
      }
      if (cnt) {
        int64_t ws[2] = {O, G};
        if (O * G > ((int64_t)1 << 26)) /* O < 2^31 and G <= the pool's size: no overflow */
          return imp_error(im, "the selection of %lld %d-grams into %lld outputs would be a %lld-element matrix: Kiln "
                               "maps TfIdfVectorizer to a dense product and takes at most 2^26 elements",
                           (long long)G, n, (long long)O, (long long)(O * G));
        void *wp;
        GNode *W = imp_new_const(im, DT_F32, 2, ws, &wp), *wg = NULL;
        if (!W) return -1;
        for (int64_t g = 0; g < G; g++) {
          if (g0 + g >= nidx) return imp_error(im, "ngram_indexes has fewer entries than the pool's n-grams");
          ((float *)wp)[idx[g0 + g] * G + g] = 1;
        }
        if (weights && m) {
          void *vp;
          wg = imp_new_const(im, DT_F32, 1, &G, &vp);
          if (!wg) return -1;
          for (int64_t g = 0; g < G; g++) ((float *)vp)[g] = g0 + g < nw ? weights[g0 + g] : 1;
        }
        if (m == 1) cnt = imp_cast(im, bin(im, "greater", cnt, imp_scalar(im, 0, DT_F32)), DT_F32);
        if (wg) cnt = bin(im, "multiply", cnt, wg);
        GNode *y = dense(im, cnt, W);
        out = out ? bin(im, "add", out, y) : y;
      }
    }
    g0 += G;
  }
  if (!out) {
    int64_t os[2] = {B, O};
    if (O > 0 && B > ((int64_t)1 << 26) / O)
      return imp_error(im, "an all-zero output of %lld x %lld elements (no n-gram counted) is over Kiln's 2^26-element "
                           "limit for TfIdfVectorizer",
                       (long long)B, (long long)O);
    out = imp_new_const(im, DT_F32, 2, os, NULL);
  }
  if (x->type.ndim == 1) out = imp_reshape(im, out, 1, &O);
  return imp_set_output(im, 0, out);
}
