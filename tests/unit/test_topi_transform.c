/*
 * test_topi_transform.c - reductions, argmax/argmin, data movement
 * (reshape ... layout_transform), and the reference interpreter
 * (topi_eval) against compiled kernels and on its own errors.
 */
#include "test_topi.h"

#include <math.h>

#define F(a, i) tget(a, i)

/* ---- reductions ---- */

/* Reference of a reduction over the flagged axes of a (any op). */
static void ref_reduce(TCase *c, TopiReduce op, const bool *red, bool keepdims) {
  DLTensor *a = c->a[0];
  int nd = a->ndim;
  int64_t n = numel(c->ref);
  int64_t oshape[16], idx[16], oidx[16];
  int ond = 0;
  for (int d = 0; d < nd; d++)
    if (!red[d] || keepdims) oshape[ond++] = red[d] ? 1 : a->shape[d];
  double *acc = calloc((size_t)n, sizeof(double)), *mx = calloc((size_t)n, sizeof(double));
  int64_t *cnt = calloc((size_t)n, sizeof(int64_t));
  for (int64_t o = 0; o < n; o++) {
    acc[o] = op == TOPI_REDUCE_prod ? 1 : op == TOPI_REDUCE_max ? -INFINITY : op == TOPI_REDUCE_min ? INFINITY : 0;
    mx[o] = -INFINITY;
  }
  /* max first, for log_sum_exp */
  for (int pass = 0; pass < 2; pass++)
    for (int64_t i = 0; i < numel(a); i++) {
      unravel(i, nd, a->shape, idx);
      int k = 0;
      for (int d = 0; d < nd; d++)
        if (!red[d] || keepdims) oidx[k++] = red[d] ? 0 : idx[d];
      int64_t o = ravel(ond, oshape, oidx);
      double v = F(a, i);
      if (pass == 0) {
        mx[o] = fmax(mx[o], v);
        continue;
      }
      cnt[o]++;
      switch (op) {
      case TOPI_REDUCE_sum:
      case TOPI_REDUCE_mean:
      case TOPI_REDUCE_log_sum: acc[o] += v; break;
      case TOPI_REDUCE_max: acc[o] = fmax(acc[o], v); break;
      case TOPI_REDUCE_min: acc[o] = fmin(acc[o], v); break;
      case TOPI_REDUCE_prod: acc[o] *= v; break;
      case TOPI_REDUCE_l1: acc[o] += fabs(v); break;
      case TOPI_REDUCE_l2:
      case TOPI_REDUCE_sum_square: acc[o] += v * v; break;
      case TOPI_REDUCE_log_sum_exp: acc[o] += exp(v - mx[o]); break;
      case TOPI_REDUCE__COUNT: break;
      }
    }
  for (int64_t o = 0; o < n; o++) {
    double r = acc[o];
    if (op == TOPI_REDUCE_mean) r = dt_is_float(c->out->dtype) ? r / (double)cnt[o] : (double)((int64_t)r / cnt[o]);
    if (op == TOPI_REDUCE_l2) r = sqrt(r);
    if (op == TOPI_REDUCE_log_sum) r = log(r);
    if (op == TOPI_REDUCE_log_sum_exp) r = mx[o] + log(r);
    tset(c->ref, o, r);
  }
  free(acc);
  free(mx);
  free(cnt);
}

static void reduce_case(TBatch *b, TopiReduce op, int nd, const int64_t *shape, int naxes, const int64_t *axes,
                        bool keepdims, DType t) {
  Tensor *x = ph("x", nd, shape, t);
  Tensor *out = topi_reduce(op, x, naxes, axes, keepdims);
  StrBuf ax = {0};
  for (int i = 0; i < naxes; i++) sb_printf(&ax, "%s%lld", i ? "," : "", (long long)axes[i]);
  int64_t len = 1;
  bool red[16];
  for (int d = 0; d < nd; d++) red[d] = naxes == 0;
  for (int i = 0; i < naxes; i++) red[axes[i] < 0 ? axes[i] + nd : axes[i]] = true;
  for (int d = 0; d < nd; d++)
    if (red[d]) len *= shape[d];
  TCase *c = tb_add(b, kfmt("reduce_%s %s %s axes [%s]%s", topi_reduce_name(op), dt_str(t), topi_shape_str(nd, x->shape),
                            ax.data ? ax.data : "all", keepdims ? " keepdims" : ""),
                    1, &x, out, dt_is_float(t) ? (len > 100 ? 1e-4 : 1e-5) : 0);
  sb_free(&ax);
  if (!c) return;
  if (op == TOPI_REDUCE_prod && dt_is_float(t)) fill_uniform(c->a[0], 0.5, 1.5);
  if (op == TOPI_REDUCE_log_sum) fill_uniform(c->a[0], 0.1, 2);
  if (op == TOPI_REDUCE_log_sum_exp) fill_uniform(c->a[0], -20, 60);
  if (op == TOPI_REDUCE_prod && !dt_is_float(t)) fill_int(c->a[0], -2, 2);
  ref_reduce(c, op, red, keepdims);
}

static void test_reduce(void) {
  TBatch b = {0};
  int64_t s3[3] = {rnd_dim(), 7, rnd_dim()}, s4[4] = {2, 3, 5, 16};
  for (int op = 0; op < TOPI_REDUCE__COUNT; op++) {
    reduce_case(&b, (TopiReduce)op, 3, s3, 1, (int64_t[]){1}, op % 2 == 0, DT_F32);
    reduce_case(&b, (TopiReduce)op, 4, s4, 2, (int64_t[]){-1, 1}, op % 2 == 1, DT_F32);
    reduce_case(&b, (TopiReduce)op, 3, s3, 0, NULL, op % 3 == 0, DT_F32);
  }
  reduce_case(&b, TOPI_REDUCE_sum, 4, s4, 1, (int64_t[]){1}, false, DT_F32);
  reduce_case(&b, TOPI_REDUCE_mean, 4, (int64_t[]){1, 64, 56, 56}, 2, (int64_t[]){2, 3}, true, DT_F32);
  reduce_case(&b, TOPI_REDUCE_sum, 2, (int64_t[]){3, 13}, 1, (int64_t[]){0}, false, DT_I32);
  reduce_case(&b, TOPI_REDUCE_mean, 2, (int64_t[]){3, 13}, 1, (int64_t[]){1}, false, DT_I32);
  reduce_case(&b, TOPI_REDUCE_max, 3, (int64_t[]){4, 5, 6}, 2, (int64_t[]){0, 2}, true, DT_I64);
  reduce_case(&b, TOPI_REDUCE_prod, 2, (int64_t[]){5, 4}, 1, (int64_t[]){1}, false, DT_I64);
  reduce_case(&b, TOPI_REDUCE_min, 2, (int64_t[]){5, 4}, 1, (int64_t[]){0}, true, DT_I32);
  reduce_case(&b, TOPI_REDUCE_l1, 2, (int64_t[]){5, 4}, 1, (int64_t[]){0}, true, DT_I32);
  b.c[0].eval = b.c[4].eval = b.c[b.n - 1].eval = true;
  tb_run(&b);
}

static void argx_case(TBatch *b, bool is_max, int nd, const int64_t *shape, int axis, bool keepdims, bool last, DType t) {
  Tensor *x = ph("x", nd, shape, t);
  Tensor *out = is_max ? topi_argmax(x, axis, keepdims, last) : topi_argmin(x, axis, keepdims, last);
  TCase *c = tb_add(b, kfmt("%s %s axis %d%s%s", is_max ? "argmax" : "argmin", topi_shape_str(nd, x->shape), axis,
                            keepdims ? " keepdims" : "", last ? " last" : ""),
                    1, &x, out, 0);
  if (!c) return;
  if (dt_is_float(t)) { /* few distinct values: ties */
    fill_int(c->a[0], -2, 2);
    for (int64_t i = 0; i < numel(c->a[0]); i++) tset(c->a[0], i, tget(c->a[0], i) * 0.5);
  }
  CHECK(c->out->dtype.code == kDLInt && c->out->dtype.bits == 64);
  int a = axis < 0 ? axis + nd : axis;
  int64_t idx[8], oidx[8], oshape[8];
  int ond = 0;
  for (int d = 0; d < nd; d++)
    if (d != a || keepdims) oshape[ond++] = d == a ? 1 : shape[d];
  for (int64_t o = 0; o < numel(c->ref); o++) {
    unravel(o, ond, oshape, oidx);
    int k = 0;
    for (int d = 0; d < nd; d++) {
      if (d == a) {
        idx[d] = 0;
        if (keepdims) k++;
      } else {
        idx[d] = oidx[k++];
      }
    }
    int64_t best = 0;
    double bv = 0;
    for (int64_t j = 0; j < shape[a]; j++) {
      idx[a] = j;
      double v = F(c->a[0], ravel(nd, shape, idx));
      bool better = j == 0 || (is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv));
      if (better) {
        best = j;
        bv = v;
      }
    }
    tset(c->ref, o, (double)best);
  }
}

static void test_argmax(void) {
  TBatch b = {0};
  int64_t s[3] = {rnd_dim(), 9, 5};
  argx_case(&b, true, 3, s, 1, false, false, DT_F32);
  argx_case(&b, true, 3, s, -1, true, true, DT_F32);
  argx_case(&b, false, 3, s, 0, true, false, DT_F32);
  argx_case(&b, false, 3, s, 2, false, true, DT_F32);
  argx_case(&b, true, 2, (int64_t[]){6, 7}, 1, false, false, DT_I32);
  argx_case(&b, false, 1, (int64_t[]){13}, 0, false, false, DT_I64);
  b.c[1].eval = b.c[4].eval = true;
  tb_run(&b);
}

/* ---- data movement ---- */

/* out[i] = in[map(i)] for a generic index map. */
typedef void (*IdxMap)(const int64_t *oidx, int64_t *iidx, void *ud);

static void ref_gather_map(TCase *c, int in, IdxMap map, void *ud) {
  if (!c) return;
  int64_t oidx[16], iidx[16];
  DLTensor *a = c->a[in];
  for (int64_t o = 0; o < numel(c->ref); o++) {
    unravel(o, c->ref->ndim, c->ref->shape, oidx);
    map(oidx, iidx, ud);
    tset(c->ref, o, F(a, ravel(a->ndim, a->shape, iidx)));
  }
}

static void ref_copy_flat(TCase *c) {
  if (!c) return;
  for (int64_t i = 0; i < numel(c->ref); i++) tset(c->ref, i, F(c->a[0], i));
}

typedef struct Perm {
  int nd;
  const int64_t *p;
} Perm;
static void map_transpose(const int64_t *o, int64_t *i, void *ud) {
  Perm *p = ud;
  for (int d = 0; d < p->nd; d++) i[p->p[d]] = o[d];
}

static void test_reshape_family(void) {
  TBatch b = {0};
  int64_t s[4] = {2, rnd_dim(), 3, 4};
  Tensor *x = ph("x", 4, s, DT_F32);
  TCase *c = tb_add(&b, "reshape -1", 1, &x, topi_reshape(x, 3, (int64_t[]){0, -1, 6}), 0);
  ref_copy_flat(c);
  if (c) {
    CHECK_INT(c->ref->shape[0], 2);
    CHECK_INT(c->ref->shape[1], s[1] * 2);
    c->eval = true;
  }
  c = tb_add(&b, "reshape flat", 1, &x, topi_reshape(x, 1, (int64_t[]){-1}), 0);
  ref_copy_flat(c);
  c = tb_add(&b, "flatten 2", 1, &x, topi_flatten(x, 2), 0);
  ref_copy_flat(c);
  if (c) CHECK_INT(c->ref->shape[1], 12);
  c = tb_add(&b, "flatten 0", 1, &x, topi_flatten(x, 0), 0);
  ref_copy_flat(c);
  c = tb_add(&b, "flatten -1", 1, &x, topi_flatten(x, -1), 0);
  ref_copy_flat(c);
  Tensor *y = ph("y", 4, (int64_t[]){1, 5, 1, 3}, DT_I32);
  c = tb_add(&b, "squeeze all", 1, &y, topi_squeeze(y, 0, NULL), 0);
  ref_copy_flat(c);
  if (c) CHECK_INT(c->ref->ndim, 2);
  c = tb_add(&b, "squeeze -2", 1, &y, topi_squeeze(y, 1, (int64_t[]){-2}), 0);
  ref_copy_flat(c);
  if (c) CHECK_INT(c->ref->ndim, 3);
  c = tb_add(&b, "unsqueeze", 1, &y, topi_unsqueeze(y, 2, (int64_t[]){0, -1}), 0);
  ref_copy_flat(c);
  if (c) CHECK(c->ref->ndim == 6 && c->ref->shape[0] == 1 && c->ref->shape[5] == 1 && c->ref->shape[2] == 5);
  int64_t perms[][4] = {{0, 2, 3, 1}, {3, 2, 1, 0}, {1, 0, 2, 3}, {0, 1, 3, 2}};
  for (int k = 0; k < 4; k++) {
    Perm p = {4, perms[k]};
    c = tb_add(&b, kfmt("transpose %lld%lld%lld%lld", (long long)perms[k][0], (long long)perms[k][1],
                        (long long)perms[k][2], (long long)perms[k][3]),
               1, &x, topi_transpose(x, perms[k]), 0);
    ref_gather_map(c, 0, map_transpose, &p);
  }
  int64_t rev[4] = {3, 2, 1, 0};
  Perm pr = {4, rev};
  c = tb_add(&b, "transpose reverse", 1, &x, topi_transpose(x, NULL), 0);
  ref_gather_map(c, 0, map_transpose, &pr);
  if (c) c->eval = true;
  Tensor *big = ph("big", 3, (int64_t[]){64, 48, 32}, DT_F32);
  int64_t p3[3] = {1, 0, 2};
  Perm pb = {3, p3};
  c = tb_add(&b, "transpose big", 1, &big, topi_transpose(big, p3), 0);
  ref_gather_map(c, 0, map_transpose, &pb);
  tb_run(&b);
}

static void test_concat_split(void) {
  TBatch b = {0};
  int64_t m = rnd_dim(), n = rnd_dim();
  Tensor *x0 = ph("x0", 3, (int64_t[]){m, 2, n}, DT_F32), *x1 = ph("x1", 3, (int64_t[]){m, 5, n}, DT_F32),
         *x2 = ph("x2", 3, (int64_t[]){m, 1, n}, DT_F32);
  TCase *c = tb_add(&b, "concat axis 1", 3, (Tensor *[]){x0, x1, x2}, topi_concat(3, (Tensor *[]){x0, x1, x2}, 1), 0);
  if (c) {
    int64_t idx[3];
    for (int64_t o = 0; o < numel(c->ref); o++) {
      unravel(o, 3, c->ref->shape, idx);
      int64_t j = idx[1], k = j < 2 ? 0 : j < 7 ? 1 : 2, off = k == 0 ? 0 : k == 1 ? 2 : 7;
      int64_t len = k == 0 ? 2 : k == 1 ? 5 : 1;
      tset(c->ref, o, F(c->a[k], (idx[0] * len + (j - off)) * n + idx[2]));
    }
    c->eval = true;
  }
  Tensor *y0 = ph("y0", 2, (int64_t[]){3, 4}, DT_I64), *y1 = ph("y1", 2, (int64_t[]){3, 7}, DT_I64);
  c = tb_add(&b, "concat axis -1", 2, (Tensor *[]){y0, y1}, topi_concat(2, (Tensor *[]){y0, y1}, -1), 0);
  if (c)
    for (int64_t o = 0; o < numel(c->ref); o++) {
      int64_t r = o / 11, col = o % 11;
      tset(c->ref, o, col < 4 ? F(c->a[0], r * 4 + col) : F(c->a[1], r * 7 + col - 4));
    }
  /* split: sizes, equal, and several outputs in one schedule */
  Tensor *x = ph("x", 2, (int64_t[]){5, 10}, DT_F32);
  Tensor *parts[3];
  CHECK_OK(topi_split(x, 1, 3, (int64_t[]){2, 3, 5}, parts));
  int64_t offs[3] = {0, 2, 5}, lens[3] = {2, 3, 5};
  for (int k = 0; k < 3; k++) {
    c = tb_add(&b, kfmt("split part %d", k), 1, &x, parts[k], 0);
    if (c)
      for (int64_t o = 0; o < numel(c->ref); o++) tset(c->ref, o, F(c->a[0], (o / lens[k]) * 10 + offs[k] + o % lens[k]));
  }
  Tensor *eq[4];
  Tensor *x7 = ph("x7", 1, (int64_t[]){7}, DT_F32);
  CHECK_OK(topi_split(x7, 0, 4, NULL, eq)); /* 2, 2, 2, 1 */
  c = tb_add(&b, "split equal last", 1, &x7, eq[3], 0);
  if (c) {
    CHECK_INT(c->ref->shape[0], 1);
    tset(c->ref, 0, F(c->a[0], 6));
  }
  tb_run(&b);
  /* the parts of one split scheduled and built together */
  Schedule *s = te_create_schedule(3, parts);
  CHECK_OK(topi_schedule_generic(s, 3, parts));
  LoweredFunc *f = kiln_lower(s, 4, (Tensor *[]){x, parts[0], parts[1], parts[2]}, "split3", NULL);
  CHECK_NN(f);
  KilnModule *mod = f ? kiln_build_funcs(&f, 1, 0, NULL, NULL) : NULL;
  if (mod) {
    DLTensor *a = tk_array(2, (int64_t[]){5, 10}, DT_F32), *o[3];
    tk_fill_random(a);
    for (int k = 0; k < 3; k++) o[k] = tk_array(2, (int64_t[]){5, lens[k]}, DT_F32);
    CHECK_OK(tk_call(mod, "split3", 4, (DLTensor *[]){a, o[0], o[1], o[2]}));
    for (int k = 0; k < 3; k++)
      for (int64_t e = 0; e < 5 * lens[k]; e++) CHECK(F(o[k], e) == F(a, (e / lens[k]) * 10 + offs[k] + e % lens[k]));
    kiln_array_free(a);
    for (int k = 0; k < 3; k++) kiln_array_free(o[k]);
    kiln_module_free(mod);
  }
}

typedef struct SliceP {
  int nd;
  int64_t start[4], step[4];
} SliceP;
static void map_slice(const int64_t *o, int64_t *i, void *ud) {
  SliceP *p = ud;
  for (int d = 0; d < p->nd; d++) i[d] = p->start[d] + o[d] * p->step[d];
}

static void test_strided_slice(void) {
  TBatch b = {0};
  int64_t s[3] = {7, 9, 5};
  Tensor *x = ph("x", 3, s, DT_F32);
  struct {
    int n;
    int64_t begin[3], end[3], steps[3], axes[3];
    int64_t exp_start[3], exp_step[3], exp_len[3];
  } cases[] = {
      {3, {1, 0, 0}, {5, 9, 5}, {1, 2, 1}, {0, 1, 2}, {1, 0, 0}, {1, 2, 1}, {4, 5, 5}},
      {1, {-1}, {INT64_MIN}, {-1}, {1}, {0, 8, 0}, {1, -1, 1}, {7, 9, 5}},
      {2, {-2, 100}, {-100, 1}, {-2, -3}, {0, 1}, {5, 8, 0}, {-2, -3, 1}, {3, 3, 5}},
      {1, {2}, {INT64_MAX}, {2}, {-1}, {0, 0, 2}, {1, 1, 2}, {7, 9, 2}},
      {1, {4}, {2}, {1}, {0}, {0, 0, 0}, {1, 1, 1}, {0, 9, 5}},
      {2, {-100, 3}, {3, -2}, {1, 1}, {0, 1}, {0, 3, 0}, {1, 1, 1}, {3, 4, 5}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    Tensor *out = topi_strided_slice(x, cases[k].n, cases[k].begin, cases[k].end, cases[k].steps, cases[k].axes);
    CHECK_NN(out);
    if (!out) continue;
    bool empty = false;
    for (int d = 0; d < 3; d++) {
      CHECK_INT(te_dim(out, d), cases[k].exp_len[d]);
      empty |= cases[k].exp_len[d] == 0;
    }
    if (empty) continue;
    TCase *c = tb_add(&b, kfmt("strided_slice %zu", k), 1, &x, out, 0);
    SliceP p = {3, {0}, {0}};
    for (int d = 0; d < 3; d++) {
      p.start[d] = cases[k].exp_start[d];
      p.step[d] = cases[k].exp_step[d];
    }
    ref_gather_map(c, 0, map_slice, &p);
  }
  /* axes NULL: the first n axes */
  Tensor *out = topi_strided_slice(x, 2, (int64_t[]){1, 2}, (int64_t[]){3, 4}, NULL, NULL);
  TCase *c = tb_add(&b, "strided_slice no axes", 1, &x, out, 0);
  SliceP p = {3, {1, 2, 0}, {1, 1, 1}};
  ref_gather_map(c, 0, map_slice, &p);
  if (c) c->eval = true;
  tb_run(&b);
}

static void test_gather(void) {
  TBatch b = {0};
  int64_t ds[3] = {5, 7, 3};
  Tensor *data = ph("data", 3, ds, DT_F32);
  for (int axis = -1; axis < 3; axis++) {
    int a = axis < 0 ? axis + 3 : axis;
    Tensor *ind = ph("ind", 2, (int64_t[]){2, 4}, axis % 2 ? DT_I64 : DT_I32);
    TCase *c = tb_add(&b, kfmt("gather axis %d", axis), 2, (Tensor *[]){data, ind}, topi_gather(data, ind, axis), 0);
    if (!c) continue;
    fill_int(c->a[1], -ds[a], ds[a] - 1);
    int64_t o[4], i[3];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 4, c->ref->shape, o);
      int k = 0;
      for (int d = 0; d < a; d++) i[d] = o[k++];
      int64_t iv = (int64_t)F(c->a[1], o[a] * 4 + o[a + 1]);
      k += 2;
      i[a] = iv < 0 ? iv + ds[a] : iv;
      for (int d = a + 1; d < 3; d++) i[d] = o[k++];
      tset(c->ref, e, F(c->a[0], ravel(3, ds, i)));
    }
    c->eval = axis == 1;
  }
  /* a scalar index drops the axis */
  Tensor *i0 = ph("i0", 0, NULL, DT_I64);
  TCase *c = tb_add(&b, "gather scalar", 2, (Tensor *[]){data, i0}, topi_gather(data, i0, 1), 0);
  if (c) {
    tset(c->a[1], 0, -2);
    CHECK_INT(c->ref->ndim, 2);
    for (int64_t e = 0; e < numel(c->ref); e++) tset(c->ref, e, F(c->a[0], (e / 3) * 21 + 5 * 3 + e % 3));
  }
  /* gather_elements */
  for (int axis = 0; axis < 3; axis++) {
    int64_t is[3] = {ds[0], ds[1], ds[2]};
    is[axis] = 4;
    if (axis != 2) is[2] = 2;
    Tensor *ind = ph("ind", 3, is, DT_I64);
    c = tb_add(&b, kfmt("gather_elements axis %d", axis), 2, (Tensor *[]){data, ind},
               topi_gather_elements(data, ind, axis), 0);
    if (!c) continue;
    fill_int(c->a[1], -ds[axis], ds[axis] - 1);
    int64_t o[3];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 3, is, o);
      int64_t iv = (int64_t)F(c->a[1], e);
      o[axis] = iv < 0 ? iv + ds[axis] : iv;
      tset(c->ref, e, F(c->a[0], ravel(3, ds, o)));
    }
    c->eval = axis == 2;
  }
  tb_run(&b);
}

typedef struct PadP {
  int nd;
  const int64_t *pads, *shape;
  TopiPadMode mode;
} PadP;

static void test_pad_tile_expand(void) {
  TBatch b = {0};
  int64_t s[3] = {3, 5, 4};
  Tensor *x = ph("x", 3, s, DT_F32);
  int64_t padsets[][6] = {{0, 1, 2, 1, 0, 3}, {1, 0, -1, 0, 2, 1}, {2, 4, 3, 2, 4, 3}, {0, -2, 0, 0, -1, 2}};
  for (int mode = 0; mode < 3; mode++)
    for (int k = 0; k < 4; k++) {
      const int64_t *pads = padsets[k];
      if (mode == TOPI_PAD_REFLECT && k == 2) continue; /* pads >= dims */
      Tensor *out = topi_pad(x, pads, (TopiPadMode)mode, 1.5);
      TCase *c = tb_add(&b, kfmt("pad mode %d set %d", mode, k), 1, &x, out, 0);
      if (!c) continue;
      int64_t o[3], i[3];
      for (int64_t e = 0; e < numel(c->ref); e++) {
        unravel(e, 3, c->ref->shape, o);
        bool outside = false;
        for (int d = 0; d < 3; d++) {
          int64_t v = o[d] - pads[d];
          if (mode == TOPI_PAD_REFLECT) {
            if (v < 0) v = -v;
            if (v >= s[d]) v = 2 * (s[d] - 1) - v;
          } else if (mode == TOPI_PAD_EDGE) {
            v = v < 0 ? 0 : v >= s[d] ? s[d] - 1 : v;
          }
          outside |= v < 0 || v >= s[d];
          i[d] = v;
        }
        tset(c->ref, e, outside ? 1.5 : F(c->a[0], ravel(3, s, i)));
      }
      c->eval = k == 1;
    }
  int64_t reps[3] = {2, 1, 3};
  TCase *c = tb_add(&b, "tile", 1, &x, topi_tile(x, reps), 0);
  if (c) {
    int64_t o[3];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 3, c->ref->shape, o);
      for (int d = 0; d < 3; d++) o[d] %= s[d];
      tset(c->ref, e, F(c->a[0], ravel(3, s, o)));
    }
  }
  Tensor *y = ph("y", 2, (int64_t[]){5, 1}, DT_I32);
  c = tb_add(&b, "expand", 1, &y, topi_expand(y, 3, (int64_t[]){2, 1, 6}), 0);
  if (c) {
    CHECK(c->ref->ndim == 3 && c->ref->shape[1] == 5 && c->ref->shape[2] == 6);
    int64_t o[3];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 3, c->ref->shape, o);
      tset(c->ref, e, F(c->a[0], o[1]));
    }
  }
  tb_run(&b);
}

/* ---- resize ---- */

static double coord_ref(TopiCoordMode m, double x, int64_t in, int64_t out, double scale) {
  switch (m) {
  case TOPI_COORD_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
  case TOPI_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  case TOPI_COORD_ALIGN_CORNERS: return out > 1 ? x * (double)(in - 1) / (double)(out - 1) : 0;
  case TOPI_COORD_ASYMMETRIC: return x / scale;
  case TOPI_COORD_TF_HALF_PIXEL_FOR_NEAREST: return (x + 0.5) / scale;
  case TOPI_COORD_HALF_PIXEL_SYMMETRIC: {
    double adj = (double)out / ((double)in * scale);
    return (double)in / 2 * (1 - adj) + (x + 0.5) / scale - 0.5;
  }
  }
  return 0;
}

static int64_t clampi(int64_t v, int64_t n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }

static double cubic_ref(double s, double a) {
  s = fabs(s);
  if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0;
}

/* The 1-D taps (index, weight) of output o on one axis. */
static int taps_ref(TopiResizeMethod meth, TopiCoordMode cm, TopiNearestMode nm, int64_t o, int64_t in, int64_t out,
                    double scale, double ca, bool excl, int64_t *ti, double *tw) {
  double x = coord_ref(cm, (double)o, in, out, scale);
  if (meth == TOPI_RESIZE_NEAREST) {
    double r = nm == TOPI_NEAREST_ROUND_PREFER_FLOOR ? (x == floor(x) + 0.5 ? floor(x) : round(x))
               : nm == TOPI_NEAREST_ROUND_PREFER_CEIL ? (x == floor(x) + 0.5 ? ceil(x) : round(x))
               : nm == TOPI_NEAREST_FLOOR            ? floor(x)
                                                     : ceil(x);
    ti[0] = clampi((int64_t)r, in);
    tw[0] = 1;
    return 1;
  }
  if (meth == TOPI_RESIZE_LINEAR) {
    x = fmin(fmax(x, 0), (double)(in - 1));
    int64_t x0 = (int64_t)floor(x);
    ti[0] = x0;
    ti[1] = clampi(x0 + 1, in);
    tw[1] = x - (double)x0;
    tw[0] = 1 - tw[1];
    return 2;
  }
  int64_t x0 = (int64_t)floor(x);
  double f = x - (double)x0, sum = 0;
  for (int j = 0; j < 4; j++) {
    int64_t p = x0 - 1 + j;
    tw[j] = cubic_ref(f + 1 - j, ca);
    if (excl && (p < 0 || p >= in)) tw[j] = 0;
    sum += tw[j];
    ti[j] = clampi(p, in);
  }
  if (excl)
    for (int j = 0; j < 4; j++) tw[j] /= sum;
  return 4;
}

static void resize_case(TBatch *b, TopiResizeMethod meth, TopiCoordMode cm, TopiNearestMode nm, int64_t H, int64_t W,
                        int64_t OH, int64_t OW, const double *scales, bool excl) {
  int64_t s[4] = {1, 2, H, W};
  Tensor *x = ph("x", 4, s, DT_F32);
  double ca = -0.75;
  Tensor *out = topi_resize(x, (int64_t[]){1, 2, OH, OW}, scales, meth, cm, nm, ca, excl);
  TCase *c = tb_add(b, kfmt("resize m%d c%d n%d %lldx%lld -> %lldx%lld%s%s", meth, cm, nm, (long long)H, (long long)W,
                            (long long)OH, (long long)OW, scales ? " scales" : "", excl ? " excl" : ""),
                    1, &x, out, 1e-6);
  if (!c) return;
  double sh = scales ? scales[2] : (double)OH / (double)H, sw = scales ? scales[3] : (double)OW / (double)W;
  for (int64_t ch = 0; ch < 2; ch++)
    for (int64_t y = 0; y < OH; y++)
      for (int64_t xo = 0; xo < OW; xo++) {
        int64_t yi[4], xi[4];
        double yw[4], xw[4];
        int ny = taps_ref(meth, cm, nm, y, H, OH, sh, ca, excl, yi, yw);
        int nx = taps_ref(meth, cm, nm, xo, W, OW, sw, ca, excl, xi, xw);
        double v = 0;
        for (int p = 0; p < ny; p++)
          for (int q = 0; q < nx; q++) v += yw[p] * xw[q] * F(c->a[0], (ch * H + yi[p]) * W + xi[q]);
        tset(c->ref, (ch * OH + y) * OW + xo, v);
      }
}

/* Three resized axes (channels too), cubic with exclude_outside: the most
 * lets the interpolation makes (two per axis, one renormalization each). */
static void resize3_case(TBatch *b, TopiCoordMode cm) {
  int64_t C = 3, H = 4, W = 5, OC = 5, OH = 6, OW = 3;
  Tensor *x = ph("x", 4, (int64_t[]){1, C, H, W}, DT_F32);
  double ca = -0.5;
  Tensor *out = topi_resize(x, (int64_t[]){1, OC, OH, OW}, NULL, TOPI_RESIZE_CUBIC, cm, TOPI_NEAREST_FLOOR, ca, true);
  TCase *c = tb_add(b, kfmt("resize cubic c%d 3 axes excl", cm), 1, &x, out, 1e-6);
  if (!c) return;
  for (int64_t co = 0; co < OC; co++)
    for (int64_t y = 0; y < OH; y++)
      for (int64_t xo = 0; xo < OW; xo++) {
        int64_t ci[4], yi[4], xi[4];
        double cw[4], yw[4], xw[4];
        taps_ref(TOPI_RESIZE_CUBIC, cm, TOPI_NEAREST_FLOOR, co, C, OC, (double)OC / (double)C, ca, true, ci, cw);
        taps_ref(TOPI_RESIZE_CUBIC, cm, TOPI_NEAREST_FLOOR, y, H, OH, (double)OH / (double)H, ca, true, yi, yw);
        taps_ref(TOPI_RESIZE_CUBIC, cm, TOPI_NEAREST_FLOOR, xo, W, OW, (double)OW / (double)W, ca, true, xi, xw);
        double v = 0;
        for (int r = 0; r < 4; r++)
          for (int p = 0; p < 4; p++)
            for (int q = 0; q < 4; q++) v += cw[r] * yw[p] * xw[q] * F(c->a[0], (ci[r] * H + yi[p]) * W + xi[q]);
        tset(c->ref, (co * OH + y) * OW + xo, v);
      }
}

static void test_resize(void) {
  TBatch b = {0};
  for (int cm = 0; cm <= TOPI_COORD_HALF_PIXEL_SYMMETRIC; cm++) {
    for (int nm = 0; nm <= TOPI_NEAREST_CEIL; nm++)
      resize_case(&b, TOPI_RESIZE_NEAREST, (TopiCoordMode)cm, (TopiNearestMode)nm, 5, 7, 9, 3, NULL, false);
    resize_case(&b, TOPI_RESIZE_LINEAR, (TopiCoordMode)cm, TOPI_NEAREST_FLOOR, 5, 7, 11, 4, NULL, false);
    resize_case(&b, TOPI_RESIZE_LINEAR, (TopiCoordMode)cm, TOPI_NEAREST_FLOOR, 4, 4, 1, 8, NULL, false);
    resize_case(&b, TOPI_RESIZE_CUBIC, (TopiCoordMode)cm, TOPI_NEAREST_FLOOR, 6, 5, 12, 7, NULL, cm % 2 == 0);
  }
  double sc[4] = {1, 1, 2.5, 0.6};
  resize_case(&b, TOPI_RESIZE_LINEAR, TOPI_COORD_HALF_PIXEL, TOPI_NEAREST_FLOOR, 4, 10, 10, 6, sc, false);
  resize_case(&b, TOPI_RESIZE_NEAREST, TOPI_COORD_ASYMMETRIC, TOPI_NEAREST_FLOOR, 4, 10, 10, 6, sc, false);
  resize3_case(&b, TOPI_COORD_HALF_PIXEL);
  resize3_case(&b, TOPI_COORD_ALIGN_CORNERS);
  b.c[0].eval = b.c[5].eval = b.c[6].eval = true;
  tb_run(&b);
}

/* ---- depth/space, layout, one_hot, arange ---- */

static void test_depth_space_layout(void) {
  TBatch b = {0};
  int64_t N = 2, C = 8, H = 3, W = 5, bs = 2;
  Tensor *x = ph("x", 4, (int64_t[]){N, C, H, W}, DT_F32);
  for (int crd = 0; crd < 2; crd++) {
    TCase *c = tb_add(&b, crd ? "depth_to_space CRD" : "depth_to_space DCR", 1, &x, topi_depth_to_space(x, (int)bs, crd), 0);
    if (!c) continue;
    int64_t oc = C / (bs * bs), o[4];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 4, c->ref->shape, o);
      int64_t i = o[2] % bs, j = o[3] % bs;
      int64_t ch = crd ? o[1] * bs * bs + i * bs + j : (i * bs + j) * oc + o[1];
      tset(c->ref, e, F(c->a[0], ((o[0] * C + ch) * H + o[2] / bs) * W + o[3] / bs));
    }
  }
  Tensor *y = ph("y", 4, (int64_t[]){1, 3, 4, 6}, DT_F32);
  TCase *c = tb_add(&b, "space_to_depth", 1, &y, topi_space_to_depth(y, 2), 0);
  if (c) {
    int64_t o[4];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 4, c->ref->shape, o);
      int64_t blk = o[1] / 3, ch = o[1] % 3, i = blk / 2, j = blk % 2;
      tset(c->ref, e, F(c->a[0], (ch * 4 + o[2] * 2 + i) * 6 + o[3] * 2 + j));
    }
    c->eval = true;
  }
  /* NCHW -> NCHW4c (C = 8), NCHW -> NCHW16c (C = 5, padded), and back */
  Tensor *z = ph("z", 4, (int64_t[]){2, 8, 3, 5}, DT_F32);
  c = tb_add(&b, "layout NCHW->NCHW4c", 1, &z, topi_layout_transform(z, "NCHW", "NCHW4c"), 0);
  if (c) {
    int64_t o[5];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 5, c->ref->shape, o);
      tset(c->ref, e, F(c->a[0], ((o[0] * 8 + o[1] * 4 + o[4]) * 3 + o[2]) * 5 + o[3]));
    }
  }
  Tensor *z5 = ph("z5", 4, (int64_t[]){1, 5, 2, 3}, DT_F32);
  c = tb_add(&b, "layout NCHW->NCHW16c padded", 1, &z5, topi_layout_transform(z5, "NCHW", "NCHW16c"), 0);
  if (c) {
    int64_t o[5];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 5, c->ref->shape, o);
      int64_t ch = o[1] * 16 + o[4];
      tset(c->ref, e, ch < 5 ? F(c->a[0], (ch * 2 + o[2]) * 3 + o[3]) : 0);
    }
    c->eval = true;
  }
  Tensor *zc = ph("zc", 5, (int64_t[]){2, 2, 3, 5, 4}, DT_F32);
  c = tb_add(&b, "layout NCHW4c->NCHW", 1, &zc, topi_layout_transform(zc, "NCHW4c", "NCHW"), 0);
  if (c) {
    int64_t o[4];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 4, c->ref->shape, o);
      tset(c->ref, e, F(c->a[0], (((o[0] * 2 + o[1] / 4) * 3 + o[2]) * 5 + o[3]) * 4 + o[1] % 4));
    }
  }
  c = tb_add(&b, "layout NCHW4c->NCHW2c", 1, &zc, topi_layout_transform(zc, "NCHW4c", "NCHW2c"), 0);
  if (c) {
    int64_t o[5];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 5, c->ref->shape, o);
      int64_t ch = o[1] * 2 + o[4];
      tset(c->ref, e, F(c->a[0], (((o[0] * 2 + ch / 4) * 3 + o[2]) * 5 + o[3]) * 4 + ch % 4));
    }
  }
  Tensor *k = ph("k", 4, (int64_t[]){8, 6, 3, 3}, DT_F32);
  c = tb_add(&b, "layout OIHW->OIHW2i4o", 1, &k, topi_layout_transform(k, "OIHW", "OIHW2i4o"), 0);
  if (c) {
    CHECK(c->ref->ndim == 6 && c->ref->shape[0] == 2 && c->ref->shape[1] == 3 && c->ref->shape[4] == 2 &&
          c->ref->shape[5] == 4);
    int64_t o[6];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 6, c->ref->shape, o);
      int64_t oc = o[0] * 4 + o[5], ic = o[1] * 2 + o[4];
      tset(c->ref, e, F(c->a[0], ((oc * 6 + ic) * 3 + o[2]) * 3 + o[3]));
    }
  }
  Tensor *nh = ph("nh", 4, (int64_t[]){1, 3, 4, 5}, DT_F32);
  c = tb_add(&b, "layout NCHW->NHWC", 1, &nh, topi_layout_transform(nh, "NCHW", "NHWC"), 0);
  if (c) {
    int64_t o[4];
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 4, c->ref->shape, o);
      tset(c->ref, e, F(c->a[0], (o[3] * 4 + o[1]) * 5 + o[2]));
    }
  }
  /* one_hot, arange */
  Tensor *ind = ph("ind", 2, (int64_t[]){3, 4}, DT_I64);
  for (int axis = -1; axis < 3; axis += 2) {
    c = tb_add(&b, kfmt("one_hot axis %d", axis), 1, &ind, topi_one_hot(ind, 5, 2.0, -1.0, axis, DT_F32), 0);
    if (!c) continue;
    fill_int(c->a[0], -6, 6);
    int64_t o[3];
    int a = axis < 0 ? 2 : axis;
    for (int64_t e = 0; e < numel(c->ref); e++) {
      unravel(e, 3, c->ref->shape, o);
      int64_t d = o[a], r = a == 2 ? o[0] : o[0], col = a == 2 ? o[1] : o[2];
      if (a == 1) col = o[2];
      int64_t iv = (int64_t)F(c->a[0], r * 4 + col);
      if (iv < 0) iv += 5;
      tset(c->ref, e, iv == d ? 2.0 : -1.0);
    }
  }
  Tensor *ar = topi_arange(-3, 10, 2.5, DT_F32);
  c = tb_add(&b, "arange f32", 0, NULL, ar, 0);
  if (c) {
    CHECK_INT(c->ref->shape[0], 6);
    for (int i = 0; i < 6; i++) tset(c->ref, i, -3 + 2.5 * i);
  }
  Tensor *ai = topi_arange(10, 1, -3, DT_I64);
  c = tb_add(&b, "arange i64", 0, NULL, ai, 0);
  if (c) {
    CHECK_INT(c->ref->shape[0], 3);
    for (int i = 0; i < 3; i++) tset(c->ref, i, 10 - 3 * i);
    c->eval = true;
  }
  tb_run(&b);
}

static void test_transform_errors(void) {
  Tensor *x = ph("x", 3, (int64_t[]){2, 3, 4}, DT_F32);
  CHECK(topi_reshape(x, 2, (int64_t[]){5, 5}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "reshape: cannot reshape [2, 3, 4] (24 elements) to [5, 5] (25 elements)");
  CHECK(topi_reshape(x, 2, (int64_t[]){-1, -1}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "more than one -1");
  CHECK(topi_reshape(x, 2, (int64_t[]){5, -1}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "cannot infer the -1 dimension");
  CHECK(topi_transpose(x, (int64_t[]){0, 0, 1}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "transpose: perm [0, 0, 1] is not a permutation of the 3 axes");
  CHECK(topi_transpose(x, (int64_t[]){0, 3, 1}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "perm [0, 3, 1]");
  CHECK(topi_squeeze(x, 1, (int64_t[]){1}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "squeeze: dimension 1 has size 3, not 1");
  CHECK(topi_unsqueeze(x, 1, (int64_t[]){5}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "unsqueeze: axis 5 is out of range for a tensor of rank 4");
  CHECK(topi_flatten(x, 4) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "flatten: axis 4 is out of range");
  Tensor *y = ph("y", 3, (int64_t[]){2, 5, 5}, DT_F32), *yi = ph("yi", 3, (int64_t[]){2, 3, 4}, DT_I32);
  CHECK(topi_concat(2, (Tensor *[]){x, y}, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "concat: input 1 has shape [2, 5, 5], input 0 has [2, 3, 4]; they must agree on every axis but 1");
  CHECK(topi_concat(2, (Tensor *[]){x, yi}, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "concat: input 1 is int32, input 0 is float32");
  CHECK(topi_concat(2, (Tensor *[]){x, x}, -4) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "concat: axis -4 is out of range");
  CHECK(topi_concat(0, NULL, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "concat: no inputs");
  Tensor *parts[2];
  CHECK(topi_split(x, 2, 2, (int64_t[]){1, 2}, parts) != 0);
  CHECK_CONTAINS(kiln_get_error(), "split: sizes add up to 3 but axis 2 has 4 elements");
  CHECK(topi_strided_slice(x, 1, (int64_t[]){0}, (int64_t[]){2}, (int64_t[]){0}, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "strided_slice: step of axis 0 is 0");
  CHECK(topi_strided_slice(x, 2, (int64_t[]){0, 0}, (int64_t[]){2, 2}, NULL, (int64_t[]){1, -2}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "strided_slice: axis 1 is listed twice");
  Tensor *fi = ph("fi", 1, (int64_t[]){2}, DT_F32);
  CHECK(topi_gather(x, fi, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "gather: indices must be integers, got float32");
  Tensor *ii = ph("ii", 2, (int64_t[]){2, 3}, DT_I32);
  CHECK(topi_gather_elements(x, ii, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "gather_elements: indices have rank 2, data 3");
  CHECK(topi_gather(x, ii, 3) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "gather: axis 3 is out of range for a tensor of rank 3");
  CHECK(topi_expand(x, 2, (int64_t[]){5, 4}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "expand: cannot broadcast shapes [2, 3, 4] and [5, 4]");
  CHECK(topi_depth_to_space(x, 2, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "depth_to_space: input has 3 dimensions, expected 4 (NCHW)");
  Tensor *x4 = ph("x4", 4, (int64_t[]){1, 6, 4, 4}, DT_F32);
  CHECK(topi_depth_to_space(x4, 2, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "6 channels are not divisible by blocksize^2 = 4");
  CHECK(topi_space_to_depth(x4, 3) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "spatial size 4x4 is not divisible by blocksize 3");
  CHECK(topi_layout_transform(x4, "NCHW", "NCDW") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "do not have the same axes");
  CHECK(topi_layout_transform(x4, "NCHW", "NCHWc") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "sub-axis 'c' needs a positive factor");
  CHECK(topi_layout_transform(x4, "NCH", "NCH") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "input has 4 dimensions but layout 'NCH' has 3");
  CHECK(topi_layout_transform(x4, "NCHW", "NCHW8k") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "sub-axis 'k' has no primal axis 'K'");
  CHECK(topi_resize(x4, (int64_t[]){1, 6, 0, 4}, NULL, TOPI_RESIZE_LINEAR, TOPI_COORD_HALF_PIXEL,
                    TOPI_NEAREST_FLOOR, -0.75, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "resize: output shape[2] = 0");
  CHECK(topi_resize(x4, (int64_t[]){2, 7, 5, 5}, NULL, TOPI_RESIZE_LINEAR, TOPI_COORD_HALF_PIXEL, TOPI_NEAREST_FLOOR,
                    -0.75, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "resize: 4 resized axes; interpolation handles up to 3");
  CHECK(topi_one_hot(ii, 0, 1, 0, -1, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "one_hot: depth = 0");
  CHECK(topi_arange(0, 5, 0, DT_I32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "arange: delta must be non-zero");
  CHECK(topi_tile(x, (int64_t[]){1, -1, 1}) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "tile: repeats[1] = -1 is negative");
  /* reductions */
  CHECK(topi_reduce(TOPI_REDUCE_sum, x, 2, (int64_t[]){1, -2}, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "reduce_sum: axis -2 is listed twice");
  CHECK(topi_reduce(TOPI_REDUCE_max, x, 1, (int64_t[]){3}, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "reduce_max: axis 3 is out of range for a tensor of rank 3");
  CHECK(topi_reduce(TOPI_REDUCE_l2, yi, 0, NULL, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "reduce_l2: expected a float tensor, got int32");
  CHECK(topi_argmax(x, -4, false, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "argmax: axis -4 is out of range");
  CHECK(topi_reduce_lookup("log_sum_exp") == TOPI_REDUCE_log_sum_exp);
  CHECK_STR(topi_reduce_name(TOPI_REDUCE_l1), "l1");
}

/* ---- topi_eval on its own ---- */

static void test_eval(void) {
  /* shape arithmetic, as the graph layer folds it: a shape tensor, gather,
   * multiply, concat */
  Tensor *shape = ph("shape", 1, (int64_t[]){4}, DT_I64);
  Tensor *idx = ph("idx", 1, (int64_t[]){2}, DT_I64);
  Tensor *g = topi_gather(shape, idx, 0);
  Tensor *p = topi_reduce(TOPI_REDUCE_prod, g, 0, NULL, true);
  Tensor *out = topi_concat(2, (Tensor *[]){topi_strided_slice(shape, 1, (int64_t[]){0}, (int64_t[]){1}, NULL, NULL), p}, 0);
  CHECK_NN(out);
  if (!out) return;
  DLTensor *sd = tk_array(1, (int64_t[]){4}, DT_I64), *id = tk_array(1, (int64_t[]){2}, DT_I64);
  DLTensor *od = tk_array(1, (int64_t[]){2}, DT_I64);
  int64_t sv[4] = {8, 3, 224, 224};
  for (int i = 0; i < 4; i++) ((int64_t *)sd->data)[i] = sv[i];
  ((int64_t *)id->data)[0] = 2;
  ((int64_t *)id->data)[1] = -1;
  CHECK_OK(topi_eval(out, 2, (Tensor *[]){shape, idx}, (DLTensor *[]){sd, id}, od));
  CHECK_INT(((int64_t *)od->data)[0], 8);
  CHECK_INT(((int64_t *)od->data)[1], 224 * 224);
  /* errors: a missing input, a wrong array, an extern op */
  CHECK(topi_eval(out, 1, (Tensor *[]){shape}, (DLTensor *[]){sd}, od) != 0);
  CHECK_CONTAINS(kiln_get_error(), "topi_eval: placeholder 'idx' is read but not among the inputs");
  DLTensor *bad = tk_array(1, (int64_t[]){3}, DT_I64);
  CHECK(topi_eval(out, 2, (Tensor *[]){shape, idx}, (DLTensor *[]){sd, id}, bad) != 0);
  CHECK_CONTAINS(kiln_get_error(), "topi_eval: output 'T_concat' has shape[0] = 2, the array 3");
  Tensor *x = ph("x", 1, (int64_t[]){4}, DT_F32);
  Expr **ib, *ob;
  te_extern_buffers(1, &x, "ext", &ib, &ob);
  Tensor *ext = te_extern("ext", 1, x->shape, DT_F32, 1, &x, ib, ob, ir_nop(), NULL);
  Tensor *after = topi_unary(TOPI_relu, ext);
  DLTensor *xd = tk_array(1, (int64_t[]){4}, DT_F32), *xo = tk_array(1, (int64_t[]){4}, DT_F32);
  tk_fill_random(xd);
  CHECK(topi_eval(after, 1, &x, &xd, xo) != 0);
  CHECK_CONTAINS(kiln_get_error(), "topi_eval: extern op 'ext' is not supported");
  /* a symbolic dimension binds from the input array */
  Expr *n = ir_var("n", DT_I32);
  Tensor *xs = te_placeholder("xs", 1, &n, DT_F32);
  Tensor *ys = topi_reduce(TOPI_REDUCE_sum, topi_unary(TOPI_exp, xs), 0, NULL, false);
  DLTensor *y0 = tk_array(0, NULL, DT_F32);
  CHECK_OK(topi_eval(ys, 1, &xs, &xd, y0));
  double s = 0;
  for (int i = 0; i < 4; i++) s += exp(tk_get(xd, i));
  CHECK(fabs(tk_get(y0, 0) - s) < 1e-5 * s);
  /* integer division by zero is reported, not a trap */
  Tensor *ia = ph("ia", 1, (int64_t[]){2}, DT_I32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *dz = te_compute("dz", 1, ia->shape, v, ir_div(te_read1(ia, v[0]), ir_i32(0)), NULL);
  DLTensor *iad = tk_array(1, (int64_t[]){2}, DT_I32), *dzo = tk_array(1, (int64_t[]){2}, DT_I32);
  tk_fill(iad, 1);
  CHECK(topi_eval(dz, 1, &ia, &iad, dzo) != 0);
  CHECK_CONTAINS(kiln_get_error(), "integer division by zero");
  DLTensor *arrs[] = {sd, id, od, bad, xd, xo, y0, iad, dzo};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) kiln_array_free(arrs[i]);
}

const TestCase topi_transform_tests[] = {
    {"reduce", test_reduce},
    {"argmax", test_argmax},
    {"reshape_family", test_reshape_family},
    {"concat_split", test_concat_split},
    {"strided_slice", test_strided_slice},
    {"gather", test_gather},
    {"pad_tile_expand", test_pad_tile_expand},
    {"resize", test_resize},
    {"depth_space_layout", test_depth_space_layout},
    {"errors", test_transform_errors},
    {"eval", test_eval},
    {NULL, NULL},
};
