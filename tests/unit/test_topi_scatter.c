/*
 * test_topi_scatter.c - the scatters (topi/generic/scatter.c) on random
 * shapes, axes, reductions and indices (duplicates, negative ones, and
 * ones outside the axis, which write nothing), and topk_indices
 * (topi/generic/topk.c) on rows with many ties: the loop nests and the
 * dense forms each against a direct loop (a stable qsort for topk).
 */
#include "test_topi.h"

#include <math.h>

static double combine(TopiScatterReduce red, double cur, double u) {
  switch (red) {
  case TOPI_SCATTER_ADD: return cur + u;
  case TOPI_SCATTER_MUL: return cur * u;
  case TOPI_SCATTER_MAX: return fmax(cur, u);
  case TOPI_SCATTER_MIN: return fmin(cur, u);
  case TOPI_SCATTER_NONE: break;
  }
  return u;
}

/* An index into an axis of dim, as ONNX reads it: -1 outside the axis. */
static int64_t wrapped(double j, int64_t dim) {
  int64_t w = (int64_t)j < 0 ? (int64_t)j + dim : (int64_t)j;
  return w >= 0 && w < dim ? w : -1;
}

static void ref_scatter_elements(TCase *c, int axis, TopiScatterReduce red) {
  DLTensor *d = c->a[0], *ix = c->a[1], *u = c->a[2];
  int r = d->ndim;
  int64_t idx[8];
  for (int64_t i = 0; i < numel(d); i++) tset(c->ref, i, tget(d, i));
  for (int64_t p = 0; p < numel(ix); p++) {
    unravel(p, r, ix->shape, idx);
    int64_t w = wrapped(tget(ix, p), d->shape[axis]);
    if (w < 0) continue;
    idx[axis] = w;
    int64_t o = ravel(r, d->shape, idx);
    tset(c->ref, o, combine(red, tget(c->ref, o), tget(u, p)));
  }
}

static void ref_scatter_nd(TCase *c, TopiScatterReduce red) {
  DLTensor *d = c->a[0], *ix = c->a[1], *u = c->a[2];
  int64_t k = ix->shape[ix->ndim - 1], nu = numel(ix) / (k ? k : 1), rest = 1;
  for (int j = (int)k; j < d->ndim; j++) rest *= d->shape[j];
  for (int64_t i = 0; i < numel(d); i++) tset(c->ref, i, tget(d, i));
  for (int64_t q = 0; q < nu; q++) {
    int64_t lin = 0;
    bool in = true;
    for (int64_t j = 0; j < k; j++) {
      int64_t w = wrapped(tget(ix, q * k + j), d->shape[j]);
      in = in && w >= 0;
      lin = lin * d->shape[j] + (w < 0 ? 0 : w);
    }
    for (int64_t t = 0; in && t < rest; t++)
      tset(c->ref, lin * rest + t, combine(red, tget(c->ref, lin * rest + t), tget(u, q * rest + t)));
  }
}

static void test_scatter_elements(void) {
  TBatch b = {0};
  for (int i = 0; i < 24; i++) {
    int r = (int)rnd_range(1, 3), axis = (int)rnd_range(0, r - 1);
    TopiScatterReduce red = (TopiScatterReduce)(i % 5);
    bool dense = i % 2;
    int64_t ds[3], is[3];
    for (int d = 0; d < r; d++) {
      ds[d] = rnd_range(1, 6);
      is[d] = d == axis ? rnd_range(1, 9) : rnd_range(1, ds[d]); /* more updates than positions: duplicates */
    }
    Tensor *in[3] = {ph("data", r, ds, DT_F32), ph("indices", r, is, i % 3 ? DT_I64 : DT_I32), ph("updates", r, is, DT_F32)};
    Tensor *out = dense ? topi_scatter_elements_dense(in[0], in[1], in[2], axis, red)
                        : topi_scatter_elements(in[0], in[1], in[2], axis, red);
    TCase *c = tb_add(&b, kfmt("scatter_elements %s axis %d red %d", dense ? "dense" : "loops", axis, (int)red), 3, in,
                      out, 1e-5);
    if (!c) continue;
    fill_int(c->a[1], -ds[axis] - 1, ds[axis]); /* one outside at each end */
    ref_scatter_elements(c, axis, red);
  }
  tb_run(&b);
}

static void test_scatter_nd(void) {
  TBatch b = {0};
  for (int i = 0; i < 24; i++) {
    int r = (int)rnd_range(1, 3), q = (int)rnd_range(1, 2);
    int64_t k = rnd_range(1, r);
    TopiScatterReduce red = (TopiScatterReduce)(i % 5);
    bool dense = i % 2;
    int64_t ds[3], is[3], us[6];
    int nus = 0;
    for (int d = 0; d < r; d++) ds[d] = rnd_range(1, 5);
    for (int d = 0; d < q - 1; d++) is[d] = us[nus++] = rnd_range(1, 7);
    is[q - 1] = k;
    for (int d = (int)k; d < r; d++) us[nus++] = ds[d];
    if (!nus) us[nus++] = 1; /* a single update of a single element */
    Tensor *in[3] = {ph("data", r, ds, DT_F32), ph("indices", q, is, DT_I64), ph("updates", nus, us, DT_F32)};
    Tensor *out = dense ? topi_scatter_nd_dense(in[0], in[1], in[2], red) : topi_scatter_nd(in[0], in[1], in[2], red);
    TCase *c = tb_add(&b, kfmt("scatter_nd %s k %lld red %d", dense ? "dense" : "loops", (long long)k, (int)red), 3, in,
                      out, 1e-5);
    if (!c) continue;
    fill_int(c->a[1], -ds[0] - 1, ds[0]);
    for (int64_t e = 0; e < numel(c->a[1]); e++) /* each component within one outside its own axis */
      tset(c->a[1], e, fmod(tget(c->a[1], e), (double)ds[e % k] + 1));
    ref_scatter_nd(c, red);
  }
  tb_run(&b);
}

/* ---- topk_indices ---- */

static const DLTensor *cmp_row;
static int64_t cmp_base;
static int cmp_largest;

/* the stable order: better value first, then the lower index */
static int cmp_topk(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  double xa = tget(cmp_row, cmp_base + a), xb = tget(cmp_row, cmp_base + b);
  if (xa != xb) return (cmp_largest ? xa > xb : xa < xb) ? -1 : 1;
  return a < b ? -1 : a > b;
}

static void ref_topk(TCase *c, int64_t n, int64_t k, bool largest) {
  int64_t rows = numel(c->a[0]) / n, *ord = malloc(sizeof(int64_t) * (size_t)n);
  cmp_row = c->a[0], cmp_largest = largest;
  for (int64_t row = 0; row < rows; row++) {
    for (int64_t i = 0; i < n; i++) ord[i] = i;
    cmp_base = row * n;
    qsort(ord, (size_t)n, sizeof(int64_t), cmp_topk);
    for (int64_t q = 0; q < k; q++) tset(c->ref, row * k + q, (double)ord[q]);
  }
  free(ord);
}

static void test_topk(void) {
  TBatch b = {0};
  for (int i = 0; i < 24; i++) {
    int r = (int)rnd_range(1, 3);
    int64_t s[3];
    for (int d = 0; d < r; d++) s[d] = rnd_range(1, 5);
    int64_t n = s[r - 1] = i % 4 == 0 ? rnd_range(200, 700) : rnd_range(1, 40);
    int64_t k = i % 3 == 0 ? n : rnd_range(1, n); /* k = n: a full stable sort */
    bool largest = i % 2, dense = (i / 2) % 2;
    DType t = i % 5 == 0 ? DT_I32 : DT_F32;
    Tensor *x = ph("x", r, s, t);
    Tensor *out = dense ? topi_topk_indices_dense(x, k, largest) : topi_topk_indices(x, k, largest);
    TCase *c = tb_add(&b, kfmt("topk %s n %lld k %lld largest %d", dense ? "dense" : "heap", (long long)n, (long long)k,
                               (int)largest),
                      1, &x, out, 0);
    if (!c) continue;
    fill_int(c->a[0], -3, 3); /* few values: most elements tie */
    ref_topk(c, n, k, largest);
  }
  tb_run(&b);
}

static void test_scatter_errors(void) {
  Tensor *d = ph("d", 2, (int64_t[]){4, 5}, DT_F32), *i = ph("i", 2, (int64_t[]){5, 5}, DT_I64);
  Tensor *u = ph("u", 2, (int64_t[]){5, 5}, DT_F32), *fi = ph("fi", 2, (int64_t[]){2, 5}, DT_F32);
  CHECK(topi_scatter_elements(d, i, u, 1, TOPI_SCATTER_NONE) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "scatter_elements: indices [5, 5] and updates [5, 5] must match and fit in data [4, 5]");
  CHECK(topi_scatter_elements(d, fi, fi, 0, TOPI_SCATTER_ADD) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "scatter_elements: indices must be integers, got float32");
  CHECK(topi_scatter_nd(d, ph("k", 2, (int64_t[]){3, 1}, DT_I64), ph("w", 2, (int64_t[]){3, 4}, DT_F32),
                        TOPI_SCATTER_NONE) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "scatter_nd: updates [3, 4] do not match indices [3, 1] and data [4, 5]");
}

const TestCase topi_scatter_tests[] = {
    {"scatter_elements", test_scatter_elements},
    {"scatter_nd", test_scatter_nd},
    {"topk", test_topk},
    {"errors", test_scatter_errors},
    {NULL, NULL},
};
