/*
 * linalg.c - ONNX's linear algebra: Gemm, MatMul, Einsum, Det.
 *
 * Gemm and a MatMul whose right operand is a constant matrix become
 * nn.dense (fast, packed weights); other MatMuls are nn.matmul.  Einsum is
 * parsed into labels and lowered to broadcast products and sums, with
 * repeated labels (diagonals) as constant masks.  Det of matrices up to
 * 4 x 4 is the Leibniz formula.
 */
#include "ops.h"

/* ---- dense ---- */

int onnx_h_gemm(Importer *im) {
  GNode *A = in0(im), *B = imp_input(im, 1), *C = imp_input(im, 2);
  double alpha = onnx_attr_float(N(im), "alpha", 1.0f), beta = onnx_attr_float(N(im), "beta", 1.0f);
  bool ta = onnx_attr_int(N(im), "transA", 0) != 0, tb = onnx_attr_int(N(im), "transB", 0) != 0;
  if (A->type.ndim != 2 || B->type.ndim != 2) return imp_error(im, "A and B must be matrices");
  int64_t perm[2] = {1, 0};
  if (ta) A = imp_transpose(im, A, 2, perm);
  GNode *W = tb ? B : imp_transpose(im, B, 2, perm); /* dense wants [N, K] */
  if (alpha != 1.0) A = imp_call2(im, "multiply", A, imp_scalar_like(im, alpha, A));
  GNode *y = imp_call2(im, "nn.dense", A, W);
  if (C) {
    if (beta != 1.0) C = imp_call2(im, "multiply", C, imp_scalar_like(im, beta, C));
    y = imp_call2(im, "add", y, C);
  }
  return out0(im, y);
}

/* A reshape whose -1 entry stands for a symbolic dimension (not the
 * literal sizes of imp_reshape). */
static GNode *sym_reshape(Importer *im, GNode *x, int n, const int64_t *shape) {
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", n, shape);
  return imp_call(im, "reshape", 1, &x, a);
}

int onnx_h_matmul(Importer *im) {
  GNode *A = in0(im), *B = imp_input(im, 1);
  /* a constant 2-D right operand is a dense layer: fast, packed weights */
  if (B->kind == GN_CONST && B->type.ndim == 2 && A->type.ndim >= 2) {
    int64_t perm[2] = {1, 0};
    GNode *W = imp_transpose(im, B, 2, perm);
    if (A->type.ndim == 2) return out0(im, imp_call2(im, "nn.dense", A, W));
    /* a symbolic leading dimension (a sequence length) becomes -1 in both
     * reshapes, which keeps its expression; two of them take nn.matmul */
    int nsym = 0, dsym = -1;
    for (int i = 0; i < A->type.ndim - 1; i++)
      if (A->type.sym && A->type.sym->dim[i]) nsym++, dsym = i;
    if (nsym > 1) return out0(im, imp_call2(im, "nn.matmul", A, B));
    int64_t m = 1;
    for (int i = 0; i < A->type.ndim - 1; i++) m *= A->type.shape[i];
    int64_t s2[2] = {nsym ? -1 : m, A->type.shape[A->type.ndim - 1]};
    GNode *y = imp_call2(im, "nn.dense", nsym ? sym_reshape(im, A, 2, s2) : imp_reshape(im, A, 2, s2), W);
    int64_t so[MAXD];
    for (int i = 0; i < A->type.ndim - 1; i++) so[i] = i == dsym ? -1 : A->type.shape[i];
    so[A->type.ndim - 1] = B->type.shape[1];
    if (!y) return out0(im, NULL);
    return out0(im, nsym ? sym_reshape(im, y, A->type.ndim, so) : imp_reshape(im, y, A->type.ndim, so));
  }
  return out0(im, imp_call2(im, "nn.matmul", A, B));
}

/* ---- Einsum as broadcast products and sums ---- */

#define ELL 256 /* labels of ellipsis dims: ELL + position (above any letter) */

typedef struct Term {
  int n;           /* labels */
  int lab[MAXD];
  int ell;         /* position of "..." in the term, or -1 */
} Term;

static int parse_term(Importer *im, const char *s, size_t len, Term *t) {
  t->n = 0;
  t->ell = -1;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.' || t->ell >= 0) return imp_error(im, "bad ellipsis in the equation");
      t->ell = t->n;
      i += 2;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return imp_error(im, "unexpected character '%c' in the equation", c);
    if (t->n >= MAXD) return imp_error(im, "a term has more than %d labels", MAXD);
    t->lab[t->n++] = (unsigned char)c;
  }
  return 0;
}

/* Expand a term's "..." into ne ellipsis labels (right-aligned to E). */
static int expand_term(Importer *im, const Term *t, int ne, int E, int *out) {
  int k = 0;
  for (int i = 0; i <= t->n; i++) {
    if (i == t->ell)
      for (int e = 0; e < ne; e++) {
        if (k >= MAXD) return imp_error(im, "too many dimensions");
        out[k++] = ELL + (E - ne) + e;
      }
    if (i < t->n) {
      if (k >= MAXD) return imp_error(im, "too many dimensions");
      out[k++] = t->lab[i];
    }
  }
  return k;
}

static bool eye_mask(int64_t i, int64_t j, int64_t k) {
  (void)k;
  return i == j;
}

int onnx_h_Einsum(Importer *im) {
  const char *eq = onnx_attr_string(N(im), "equation", NULL);
  if (!eq) return imp_error(im, "missing attribute 'equation'");
  int nin = imp_ninputs(im);
  if (nin < 1 || nin > 8) return imp_error(im, "%d operands are not supported", nin);
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  Term terms[8], outt;
  int nt = 0;
  const char *p = eq;
  while (nt < nin) {
    const char *comma = memchr(p, ',', (size_t)(eq + lhs_len - p));
    size_t len = comma ? (size_t)(comma - p) : (size_t)(eq + lhs_len - p);
    if (parse_term(im, p, len, &terms[nt++])) return -1;
    if (!comma) break;
    p = comma + 1;
  }
  if (nt != nin) return imp_error(im, "the equation has %d operands, the node %d", nt, nin);
  GNode *ops[8];
  int labs[8][MAXD], nl[8], E = 0;
  for (int k = 0; k < nin; k++) {
    if (!(ops[k] = imp_input(im, k))) return imp_error(im, "operand %d is missing", k);
    int ne = ops[k]->type.ndim - terms[k].n;
    if (ne < 0 || (ne > 0 && terms[k].ell < 0))
      return imp_error(im, "operand %d has rank %d, its term %d labels", k, ops[k]->type.ndim, terms[k].n);
    if (ne > E) E = ne;
  }
  for (int k = 0; k < nin; k++) {
    int ne = ops[k]->type.ndim - terms[k].n;
    if ((nl[k] = expand_term(im, &terms[k], terms[k].ell >= 0 ? ne : 0, E, labs[k])) < 0) return -1;
  }
  int out[MAXD], no = 0;
  if (arrow) {
    if (parse_term(im, arrow + 2, strlen(arrow + 2), &outt)) return -1;
    if (outt.ell < 0 && E > 0) {
      /* NumPy allows dropping broadcast dims only when they are size 1;
       * keep it simple */
      return imp_error(im, "an output without '...' while operands have '...' is not supported");
    }
    if ((no = expand_term(im, &outt, outt.ell >= 0 ? E : 0, E, out)) < 0) return -1;
  } else {
    for (int e = 0; e < E; e++) out[no++] = ELL + e;
    for (int c = 'A'; c <= 'z'; c++) {
      int cnt = 0;
      for (int k = 0; k < nin; k++)
        for (int i = 0; i < nl[k]; i++) cnt += labs[k][i] == c;
      if (cnt == 1) {
        if (no >= MAXD) return imp_error(im, "too many output labels");
        out[no++] = c;
      }
    }
  }
  /* diagonals: a label repeated inside one operand */
  for (int k = 0; k < nin; k++) {
    for (bool again = true; again;) {
      again = false;
      for (int a = 0; a < nl[k] && !again; a++)
        for (int b = a + 1; b < nl[k] && !again; b++) {
          if (labs[k][a] != labs[k][b]) continue;
          GNode *x = ops[k];
          if (!x) return -1;
          int64_t n = x->type.shape[a];
          if (x->type.shape[b] != n) return imp_error(im, "operand %d: label repeated over sizes %lld and %lld", k, (long long)n, (long long)x->type.shape[b]);
          /* mask over axes a and b: shape with n at a and b, 1 elsewhere */
          GNode *m = imp_mask2d(im, n, n, 0, eye_mask, 0);
          int64_t ms[MAXD];
          for (int i = a; i < nl[k]; i++) ms[i - a] = i == a || i == b ? n : 1;
          m = imp_reshape(im, m, nl[k] - a, ms);
          GNode *w = imp_where(im, m, x, imp_scalar_like(im, 0, x));
          int64_t bb = b;
          ops[k] = imp_reduce(im, "sum", w, 1, &bb, false);
          for (int i = b; i + 1 < nl[k]; i++) labs[k][i] = labs[k][i + 1];
          nl[k]--;
          again = true;
        }
    }
  }
  /* all labels: the output's, then the contracted ones */
  int all[MAXD], na = 0;
  for (int i = 0; i < no; i++) {
    for (int j = 0; j < i; j++)
      if (out[j] == out[i]) return imp_error(im, "output label repeated");
    all[na++] = out[i];
  }
  for (int k = 0; k < nin; k++)
    for (int i = 0; i < nl[k]; i++) {
      bool seen = false;
      for (int j = 0; j < na; j++) seen = seen || all[j] == labs[k][i];
      if (!seen) {
        if (na >= MAXD) return imp_error(im, "more than %d distinct labels are not supported", MAXD);
        all[na++] = labs[k][i];
      }
    }
  for (int i = 0; i < no; i++) {
    bool found = false;
    for (int k = 0; k < nin; k++)
      for (int j = 0; j < nl[k]; j++) found = found || labs[k][j] == out[i];
    if (!found) return imp_error(im, "output label '%c' is in no operand", out[i] < ELL ? (char)out[i] : '.');
  }
  GNode *acc = NULL;
  for (int k = 0; k < nin; k++) {
    GNode *x = ops[k];
    if (!x) return -1;
    int64_t perm[MAXD], shape[MAXD];
    int q = 0;
    for (int j = 0; j < na; j++)
      for (int i = 0; i < nl[k]; i++)
        if (labs[k][i] == all[j]) perm[q++] = i;
    x = imp_transpose(im, x, nl[k], perm);
    if (!x) return -1;
    q = 0;
    for (int j = 0; j < na; j++) {
      bool has = false;
      for (int i = 0; i < nl[k]; i++) has = has || labs[k][i] == all[j];
      shape[j] = has ? x->type.shape[q++] : 1;
    }
    if (na != nl[k]) x = imp_reshape(im, x, na, shape);
    acc = acc ? bin(im, "multiply", acc, x) : x;
  }
  if (na > no) {
    int64_t axes[MAXD];
    for (int j = no; j < na; j++) axes[j - no] = j;
    acc = imp_reduce(im, "sum", acc, na - no, axes, false);
  }
  return imp_set_output(im, 0, acc);
}

/* ---- Det by the Leibniz formula (n <= 4: at most 24 products) ---- */

static int perms(int n, int k, int *p, bool *used, int (*out)[4], int *sign, int *cnt) {
  if (k == n) {
    int inv = 0;
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++) inv += p[i] > p[j];
    memcpy(out[*cnt], p, sizeof(int) * (size_t)n);
    sign[(*cnt)++] = inv % 2 ? -1 : 1;
    return 0;
  }
  for (int v = 0; v < n; v++) {
    if (used[v]) continue;
    used[v] = true;
    p[k] = v;
    perms(n, k + 1, p, used, out, sign, cnt);
    used[v] = false;
  }
  return 0;
}

int onnx_h_Det(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int r = x->type.ndim;
  if (r < 2 || x->type.shape[r - 1] != x->type.shape[r - 2]) return imp_error(im, "input %s is not a batch of square matrices", ttype_str(&x->type));
  int n = (int)x->type.shape[r - 1];
  if (n < 1 || n > 4) return imp_error(im, "determinants of %dx%d matrices are not supported (at most 4x4)", n, n);
  GNode *a[4][4];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      a[i][j] = imp_squeeze(im, imp_squeeze(im, imp_slice(im, imp_slice(im, x, r - 2, i, i + 1), r - 1, j, j + 1), r - 1), r - 2);
  int ps[24][4], sign[24], cnt = 0, p[4];
  bool used[4] = {false, false, false, false};
  perms(n, 0, p, used, ps, sign, &cnt);
  GNode *acc = NULL;
  for (int k = 0; k < cnt; k++) {
    GNode *t = a[0][ps[k][0]];
    for (int i = 1; i < n; i++) t = bin(im, "multiply", t, a[i][ps[k][i]]);
    acc = !acc ? (sign[k] > 0 ? t : un(im, "negative", t)) : bin(im, sign[k] > 0 ? "add" : "subtract", acc, t);
  }
  return imp_set_output(im, 0, acc);
}
