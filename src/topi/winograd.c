/*
 * winograd.c - what the Winograd convolutions of every target share: the
 * Cook-Toom transform matrices of F(m, r) and the two expression builders
 * their transforms are written with (x86/winograd.c's NCHW[x]c template,
 * cuda/winograd.c's TVM CUDA template).
 *
 * A transform is not a reduction over a constant matrix: each output
 * element is a select over the transform indices (constant once unrolled)
 * whose branches are the explicit sums of the nonzero terms, so an
 * unrolled transform is exactly its sparse arithmetic.
 */
#include "topi.h"

#include <math.h>
#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

/* ---- the matrices ---- */

int topi_winograd_matrices(int m, int r, double *AT, double *G, double *BT) {
  static const double pts[] = {0, 1, -1, 0.5, -0.5, 2, -2, 0.25, -0.25};
  int alpha = m + r - 1;
  if (m < 1 || r < 1 || alpha - 1 > (int)(sizeof pts / sizeof pts[0]))
    return kiln_set_error(
        "winograd: F(%d, %d) is not supported (at most %d points)", m, r,
        (int)(sizeof pts / sizeof pts[0]) + 1);
  int np = alpha - 1;
  memset(AT, 0, sizeof(double) * (size_t)(m * alpha));
  memset(G, 0, sizeof(double) * (size_t)(alpha * r));
  memset(BT, 0, sizeof(double) * (size_t)(alpha * alpha));
  double poly[16];
  for (int j = 0; j < np; j++) {
    double nrm = 1;
    int deg = 0;
    poly[0] = 1;
    for (int l = 0; l < np; l++) {
      if (l == j)
        continue;
      nrm *= pts[j] - pts[l];
      /* poly *= (x - pts[l]) */
      poly[deg + 1] = 0;
      for (int q = deg + 1; q >= 1; q--)
        poly[q] = poly[q - 1] - pts[l] * poly[q];
      poly[0] = -pts[l] * poly[0];
      deg++;
    }
    for (int i = 0; i < m; i++)
      AT[i * alpha + j] = pow(pts[j], i);
    for (int k = 0; k < r; k++)
      G[j * r + k] = pow(pts[j], k) / nrm;
    for (int q = 0; q <= deg; q++)
      BT[j * alpha + q] = poly[q];
  }
  /* the point at infinity */
  AT[(m - 1) * alpha + alpha - 1] = 1;
  G[(alpha - 1) * r + r - 1] = 1;
  int deg = 0;
  poly[0] = 1;
  for (int l = 0; l < np; l++) {
    poly[deg + 1] = 0;
    for (int q = deg + 1; q >= 1; q--)
      poly[q] = poly[q - 1] - pts[l] * poly[q];
    poly[0] = -pts[l] * poly[0];
    deg++;
  }
  for (int q = 0; q <= deg; q++)
    BT[(alpha - 1) * alpha + q] = poly[q];
  return 0;
}

/* ---- the transforms' expressions ---- */

/* sum over (i, j) of coef(i, j) * term(i, j), skipping zero coefficients;
 * a zero when every coefficient is. */
Expr *topi_winograd_sparse_sum(int ni, int nj, const double *ci,
                               const double *cj, TopiWinogradTerm term,
                               void *ud, DType t) {
  Expr *sum = NULL;
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++) {
      double c = ci[i] * cj[j];
      if (c == 0)
        continue;
      Expr *x = term(i, j, ud);
      Expr *p = c == 1 ? x : c == -1 ? ir_neg(x) : ir_mul(ir_float(c, t), x);
      sum = sum ? (c == -1 ? ir_sub(sum, x) : ir_add(sum, p)) : p;
    }
  return sum ? sum : ir_float(0, t);
}

/* sum over j of cj[j] * (sum over i of ci[i] * term(i, j)), each sum
 * skipping zero coefficients: the value of topi_winograd_sparse_sum (up
 * to rounding), but the inner sum of column j is one expression for every
 * cj, so the unrolled elements of a transform that share ci (a row of the
 * transformed tile) share it and the C compiler computes it once: the
 * transform separates into B^T d, then (B^T d) B.  Where the stores cannot
 * alias what the transform reads (x86/winograd.c computes both transforms
 * into local buffers), GCC's code for F(4x4) does 228 vector operations a
 * tile and channel block for the input transform instead of 484, 146 for
 * the output transform instead of 324. */
typedef struct ColumnCtx {
  TopiWinogradTerm term;
  void *ud;
  int j;
} ColumnCtx;

static Expr *column_term(int i, int j, void *ud) {
  (void)j;
  ColumnCtx *c = ud;
  return c->term(i, c->j, c->ud);
}

Expr *topi_winograd_nested_sum(int ni, int nj, const double *ci, const double *cj, TopiWinogradTerm term, void *ud,
                               DType t) {
  Expr *sum = NULL;
  double one = 1;
  for (int j = 0; j < nj; j++) {
    double c = cj[j];
    if (c == 0) continue;
    ColumnCtx cc = {term, ud, j};
    Expr *x = topi_winograd_sparse_sum(ni, 1, ci, &one, column_term, &cc, t);
    Expr *p = c == 1 ? x : c == -1 ? ir_neg(x) : ir_mul(ir_float(c, t), x);
    sum = sum ? (c == -1 ? ir_sub(sum, x) : ir_add(sum, p)) : p;
  }
  return sum ? sum : ir_float(0, t);
}

/* select(a == 0 && b == 0, br[0], select(a == 0 && b == 1, br[1], ...)):
 * after unrolling a and b, the simplifier keeps one branch. */
Expr *topi_winograd_select_2d(Expr *a, Expr *b, int na, int nb, Expr **br) {
  Expr *e = br[na * nb - 1];
  for (int i = na - 1; i >= 0; i--)
    for (int j = nb - 1; j >= 0; j--) {
      if (i == na - 1 && j == nb - 1)
        continue;
      Expr *cond = ir_and(ir_eq(a, c32(i)), ir_eq(b, c32(j)));
      e = ir_select(cond, br[i * nb + j], e);
    }
  return e;
}
