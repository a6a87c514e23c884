/*
 * index.c - ONNX's gathers, scatters and selections: ReverseSequence,
 * Compress, NonZero, TopK, GatherND, ScatterElements (and Scatter),
 * ScatterND, MaxUnpool.
 *
 * TopK is the graph's topk_indices (a heap per row, n log k) and a
 * gather of the values.  The scatters
 * (ScatterElements, ScatterND, MaxUnpool) are the graph's scatter ops,
 * loop nests linear in the data and the updates (ops/scatter.c).  Ops whose output shape depends
 * on data (NonZero, Compress) are computed here when their deciding input
 * is a constant, and are data-dependent host ops otherwise (datadep.c).
 */
#include "ops.h"

/* ---- data movement with constant index tensors ---- */

/* ReverseSequence whose sequence_lens is a graph input: the lengths are
 * data, the index where(t < L, L - 1 - t, t) computed from them in the
 * graph; each length is also a run-time value, only so that set_input
 * checks it is within [0, T] (a longer one would read past the
 * sequence). */
static int reverse_sequence_runtime(Importer *im, GNode *x, GNode *lens, int ba, int ta) {
  int nd = x->type.ndim;
  int64_t B = x->type.shape[ba], T = x->type.shape[ta];
  if (lens->type.ndim != 1 || lens->type.shape[0] != B || !dt_is_int(lens->type.dtype))
    return imp_error(im, "sequence_lens must be 1-D integers, one per batch entry (%lld), got %s", (long long)B,
                     ttype_str(&lens->type));
  for (int64_t b = 0; b < B; b++)
    if (!graph_value_sym(imp_graph(im), lens->name, (int)b, 0, T)) return imp_error(im, "%s", kiln_get_error());
  int64_t ts[MAXD], ls[MAXD], *td;
  for (int i = 0; i < nd; i++) ts[i] = i == ta ? T : 1, ls[i] = i == ba ? B : 1;
  GNode *t = imp_new_i64(im, nd, ts, &td);
  if (!t) return -1;
  for (int64_t i = 0; i < T; i++) td[i] = i;
  GNode *L = imp_reshape(im, imp_cast(im, lens, DT_I64), nd, ls);
  GNode *back = bin(im, "subtract", bin(im, "subtract", L, imp_scalar(im, 1, DT_I64)), t);
  GNode *idx = imp_where(im, bin(im, "less", t, L), back, t);
  GAttrs ba_ = gattrs_new();
  ga_ints(&ba_, "shape", nd, x->type.shape);
  idx = idx ? imp_call(im, "broadcast_to", 1, &idx, ba_) : NULL;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ta);
  GNode *args[2] = {x, idx};
  return imp_set_output(im, 0, idx ? imp_call(im, "gather_elements", 2, args, a) : NULL);
}

int onnx_h_ReverseSequence(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  GNode *rl = imp_input(im, 1);
  if (rl && rl->kind == GN_VAR && !ttype_is_symbolic(&x->type) && !ttype_is_symbolic(&rl->type)) {
    int ba, ta;
    if (imp_norm_axis(im, onnx_attr_int(N(im), "batch_axis", 1), x->type.ndim, &ba) ||
        imp_norm_axis(im, onnx_attr_int(N(im), "time_axis", 0), x->type.ndim, &ta))
      return -1;
    if (ba == ta) return imp_error(im, "batch_axis and time_axis are both %d", ba);
    return reverse_sequence_runtime(im, x, rl, ba, ta);
  }
  GNode *lens = imp_const_input(im, 1);
  if (!lens) return -1;
  int nd = x->type.ndim, ba, ta;
  if (imp_norm_axis(im, onnx_attr_int(N(im), "batch_axis", 1), nd, &ba) || imp_norm_axis(im, onnx_attr_int(N(im), "time_axis", 0), nd, &ta))
    return -1;
  if (ba == ta) return imp_error(im, "batch_axis and time_axis are both %d", ba);
  if (ttype_numel(&lens->type) != x->type.shape[ba])
    return imp_error(im, "sequence_lens has %lld values for a batch of %lld", (long long)ttype_numel(&lens->type),
                     (long long)x->type.shape[ba]);
  int64_t *d;
  GNode *idx = imp_new_i64(im, nd, x->type.shape, &d);
  if (!idx) return -1;
  int64_t total = ttype_numel(&x->type), T = x->type.shape[ta];
  for (int64_t e = 0; e < total; e++) {
    int64_t rem = e, c[MAXD];
    for (int i = nd - 1; i >= 0; i--) {
      c[i] = rem % x->type.shape[i];
      rem /= x->type.shape[i];
    }
    int64_t L, t = c[ta];
    if (imp_const_i64_at(im, 1, lens, c[ba], 0, T, &L)) return -1;
    d[e] = t < L ? L - 1 - t : t;
  }
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ta);
  GNode *args[2] = {x, idx};
  return imp_set_output(im, 0, imp_call(im, "gather_elements", 2, args, a));
}

int onnx_h_Compress(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  if (imp_input(im, 1) && imp_input(im, 1)->kind != GN_CONST) return onnx_dd_compress(im);
  GNode *cond = imp_const_input(im, 1);
  if (!cond) return -1;
  if (cond->type.ndim != 1) return imp_error(im, "condition must be 1-D, got %s", ttype_str(&cond->type));
  int ax = 0;
  GNode *v = x;
  if (onnx_attr_has(N(im), "axis")) {
    if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", 0), x->type.ndim, &ax)) return -1;
  } else {
    int64_t n = ttype_numel(&x->type);
    v = imp_reshape(im, x, 1, &n);
  }
  if (!v) return -1;
  int64_t len = cond->type.shape[0], dim = v->type.shape[ax], cnt = 0;
  if (len > dim) return imp_error(im, "condition has %lld values for an axis of %lld", (long long)len, (long long)dim);
  int64_t *pos = KNEWN(int64_t, len + 1);
  for (int64_t i = 0; i < len; i++)
    if (imp_const_at(cond, i) != 0) pos[cnt++] = i;
  GNode *ic = imp_const_ints(im, (int)cnt, pos);
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ax);
  GNode *args[2] = {v, ic};
  if (imp_set_output(im, 0, imp_call(im, "take", 2, args, a))) return -1;
  imp_set_output_lowp(im, 0, imp_input_lowp(im, 0)); /* a carried bfloat16 selected as it is */
  return 0;
}

/* NonZero of a constant: the indices, computed at import. */
int onnx_h_NonZero(Importer *im) {
  if (imp_input(im, 0) && imp_input(im, 0)->kind != GN_CONST) return onnx_dd_nonzero(im);
  GNode *x = imp_const_input(im, 0);
  if (!x) return -1;
  int nd = x->type.ndim;
  if (nd < 1) return imp_error(im, "a scalar input is not supported");
  int64_t total = ttype_numel(&x->type), cnt = 0;
  for (int64_t e = 0; e < total; e++) cnt += imp_const_at(x, e) != 0;
  int64_t shape[2] = {nd, cnt}, *d;
  GNode *c = imp_new_i64(im, 2, shape, &d);
  if (!c) return -1;
  int64_t k = 0;
  for (int64_t e = 0; e < total; e++) {
    if (imp_const_at(x, e) == 0) continue;
    int64_t rem = e;
    for (int i = nd - 1; i >= 0; i--) {
      d[i * cnt + k] = rem % x->type.shape[i];
      rem /= x->type.shape[i];
    }
    k++;
  }
  return imp_set_output(im, 0, c);
}

/* ---- TopK ---- */

/* The axis moved last, topk_indices (a heap per row, ties to the lower
 * index) and the values gathered at them, moved back. */
int onnx_h_TopK(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int r = x->type.ndim, ax;
  if (r < 1) return imp_error(im, "input must have rank >= 1");
  if (r + 1 > MAXD) return imp_error(im, "input rank %d is too large", r);
  if (imp_attr_axis(im, "axis", -1, r, &ax)) return -1;
  int64_t n = x->type.shape[ax], k;
  /* k given at run time: every entry ranked (k = n), then the first k */
  GSym *kv = NULL;
  int rc = imp_opset(im) < 10 || ttype_is_symbolic(&x->type) ? -2 : onnx_runtime_count(im, 1, 0, n, &kv);
  if (rc == -1) return -1;
  if (kv) k = n;
  else if (imp_opset(im) < 10 ? imp_attr_i64(im, "k", 0, 0, n, &k) : imp_input_i64(im, 1, 0, n, &k)) return -1;
  bool largest = onnx_attr_int(N(im), "largest", 1) != 0;
  int64_t perm[MAXD], inv[MAXD];
  int q = 0;
  for (int i = 0; i < r; i++)
    if (i != ax) perm[q++] = i;
  perm[q] = ax;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  GNode *xt = imp_transpose(im, x, r, perm);
  GAttrs ta = gattrs_new(), ga = gattrs_new();
  ga_int(&ta, "k", k);
  ga_int(&ta, "largest", largest);
  ga_int(&ga, "axis", r - 1);
  GNode *idx = xt ? imp_call(im, "topk_indices", 1, &xt, ta) : NULL, *gargs[2] = {xt, idx};
  GNode *vals = idx ? imp_call(im, "gather_elements", 2, gargs, ga) : NULL;
  GNode *yv = imp_transpose(im, vals, r, inv), *yi = imp_transpose(im, idx, r, inv);
  if (kv) yv = onnx_runtime_prefix(im, yv, ax, kv), yi = onnx_runtime_prefix(im, yi, ax, kv);
  if (imp_set_output(im, 0, yv)) return -1;
  return imp_set_output(im, 1, yi);
}

/* ---- GatherND and the scatters ---- */

/* Linear index over dims[0..k) of the last axis of idx (int64, negative
 * entries wrapped): sum_t idx[..., t] * stride[t]. */
static GNode *linear_index(Importer *im, GNode *idx, int k, const int64_t *dims) {
  int64_t ks = k, *dd, *st;
  GNode *dc = imp_new_i64(im, 1, &ks, &dd), *sc = imp_new_i64(im, 1, &ks, &st);
  if (!dc || !sc) return NULL;
  int64_t s = 1;
  for (int t = k - 1; t >= 0; t--) {
    dd[t] = dims[t];
    st[t] = s;
    s *= dims[t];
  }
  GNode *i64 = imp_cast(im, idx, DT_I64);
  GNode *w = imp_where(im, bin(im, "less", i64, imp_scalar(im, 0, DT_I64)), bin(im, "add", i64, dc), i64);
  int64_t last = idx->type.ndim - 1;
  return imp_reduce(im, "sum", bin(im, "multiply", w, sc), 1, &last, false);
}

int onnx_h_GatherND(Importer *im) {
  GNode *data = imp_input(im, 0), *idx = imp_input(im, 1);
  if (!data || !idx) return imp_error(im, "needs data and indices");
  int r = data->type.ndim, q = idx->type.ndim;
  if (q < 1) return imp_error(im, "indices must have rank >= 1");
  int64_t b, k = idx->type.shape[q - 1];
  int maxb = (r < q ? r : q) - 1; /* batch axes come before the index depth and the data's last axis */
  if (imp_attr_i64(im, "batch_dims", 0, 0, maxb > 0 ? maxb : 0, &b)) return -1;
  if (b + k > r || b >= q) return imp_error(im, "batch_dims %lld and index depth %lld do not fit data of rank %d", (long long)b, (long long)k, r);
  for (int i = 0; i < b; i++)
    if (idx->type.shape[i] != data->type.shape[i])
      return imp_error(im, "indices %s and data %s differ in batch dimension %d (batch_dims %lld)", ttype_str(&idx->type),
                       ttype_str(&data->type), i, (long long)b);
  int64_t B = imp_numel((int)b, data->type.shape), P = imp_numel((int)k, data->type.shape + b),
          R = imp_numel(r - (int)(b + k), data->type.shape + b + k);
  int64_t s2[2] = {B * P, R};
  GNode *d2 = imp_reshape(im, data, 2, s2);
  GNode *lin = linear_index(im, idx, (int)k, data->type.shape + b);
  if (b > 0 && lin) {
    int64_t bs[MAXD], *bd;
    for (int i = 0; i < q - 1; i++) bs[i] = i < b ? idx->type.shape[i] : 1;
    GNode *boff = imp_new_i64(im, q - 1, bs, &bd);
    if (!boff) return -1;
    for (int64_t i = 0; i < B; i++) bd[i] = i * P;
    lin = bin(im, "add", lin, boff);
  }
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 0);
  GNode *args[2] = {d2, lin};
  GNode *y = imp_call(im, "take", 2, args, a);
  int64_t os[MAXD];
  int no = 0;
  for (int i = 0; i < q - 1; i++) os[no++] = idx->type.shape[i];
  for (int i = (int)(b + k); i < r; i++) os[no++] = data->type.shape[i];
  if (no > MAXD) return imp_error(im, "result rank too large");
  return imp_set_output(im, 0, imp_reshape(im, y, no, os));
}

static int reduction_kind(Importer *im, int *kind) {
  const char *red = onnx_attr_string(N(im), "reduction", "none");
  *kind = !strcmp(red, "none") ? 0 : !strcmp(red, "add") ? 1 : !strcmp(red, "mul") ? 2 : -1;
  if (imp_opset(im) >= 18 && *kind < 0) *kind = !strcmp(red, "max") ? 3 : !strcmp(red, "min") ? 4 : -1;
  if (*kind < 0)
    return imp_error(im, "reduction '%s' is not supported (none, add, mul%s)", red, imp_opset(im) >= 18 ? ", max, min" : "");
  return 0;
}

/* A scatter op ("scatter_elements" with its axis, "scatter_nd" with
 * axis < 0) with reduction_kind's reduction. */
static GNode *scatter_call(Importer *im, const char *op, GNode *data, GNode *idx, GNode *upd, int red, int axis) {
  static const char *const names[] = {"none", "add", "mul", "max", "min"};
  GAttrs a = gattrs_new();
  if (axis >= 0) ga_int(&a, "axis", axis);
  ga_str(&a, "reduction", names[red]);
  GNode *args[3] = {data, idx, upd};
  return data && idx && upd ? imp_call(im, op, 3, args, a) : NULL;
}

/* ScatterElements (and the older Scatter). */
int onnx_h_ScatterElements(Importer *im) {
  GNode *data = imp_input(im, 0), *idx = imp_input(im, 1), *upd = imp_input(im, 2);
  if (!data || !idx || !upd) return imp_error(im, "needs data, indices and updates");
  int red, r = data->type.ndim, ax;
  if (reduction_kind(im, &red) || imp_norm_axis(im, onnx_attr_int(N(im), "axis", 0), r, &ax)) return -1;
  if (idx->type.ndim != r || upd->type.ndim != r) return imp_error(im, "indices and updates must have the data's rank %d", r);
  if (r + 1 > MAXD) return imp_error(im, "data rank %d is too large", r);
  for (int i = 0; i < r; i++)
    if ((i != ax && idx->type.shape[i] > data->type.shape[i]) || upd->type.shape[i] != idx->type.shape[i])
      return imp_error(im, "indices %s and updates %s must match and fit in data %s", ttype_str(&idx->type),
                       ttype_str(&upd->type), ttype_str(&data->type));
  return imp_set_output(im, 0, scatter_call(im, "scatter_elements", data, idx, upd, red, ax));
}

int onnx_h_ScatterND(Importer *im) {
  GNode *data = imp_input(im, 0), *idx = imp_input(im, 1), *upd = imp_input(im, 2);
  if (!data || !idx || !upd) return imp_error(im, "needs data, indices and updates");
  int red, r = data->type.ndim, q = idx->type.ndim;
  if (reduction_kind(im, &red)) return -1;
  if (q < 1) return imp_error(im, "indices must have rank >= 1");
  int64_t k = idx->type.shape[q - 1];
  if (k > r) return imp_error(im, "index depth %lld exceeds the data's rank %d", (long long)k, r);
  int64_t R = imp_numel(r - (int)k, data->type.shape + k), Nu = imp_numel(q - 1, idx->type.shape);
  if (ttype_numel(&upd->type) != Nu * R) return imp_error(im, "updates %s do not match indices %s", ttype_str(&upd->type), ttype_str(&idx->type));
  /* updates of the right size in another shape are taken row-major */
  int64_t us[MAXD];
  int nu = 0;
  for (int i = 0; i < q - 1; i++) us[nu++] = idx->type.shape[i];
  for (int i = (int)k; i < r; i++) us[nu++] = data->type.shape[i];
  if (nu > MAXD) return imp_error(im, "updates rank %d is too large", nu);
  return imp_set_output(im, 0, scatter_call(im, "scatter_nd", data, idx, imp_reshape(im, upd, nu, us), red, -1));
}

int onnx_h_MaxUnpool(Importer *im) {
  GNode *x = imp_input(im, 0), *idx = imp_input(im, 1);
  if (!x || !idx) return imp_error(im, "needs X and I");
  int nd = x->type.ndim;
  if (nd < 3) return imp_error(im, "X has rank %d, expected [N, C, spatial...]", nd);
  /* the indices address the unpooled shape the attributes give; an
   * output_shape larger than that pads it at the end (as ONNX's
   * reference does) */
  int64_t os[MAXD], want[MAXD];
  int nk, ns, np;
  const int64_t *ks, *st, *pd;
  if (imp_attr_ints_in(im, "kernel_shape", MAXD, 1, INT32_MAX, &ks, &nk) ||
      imp_attr_ints_in(im, "strides", MAXD, 1, INT32_MAX, &st, &ns) || imp_attr_ints_in(im, "pads", 2 * MAXD, 0, INT32_MAX, &pd, &np))
    return -1;
  if (!ks || nk != nd - 2) return imp_error(im, "kernel_shape must give %d values", nd - 2);
  os[0] = x->type.shape[0], os[1] = x->type.shape[1];
  for (int i = 0; i < nd - 2; i++) {
    int64_t s = st && ns == nd - 2 ? st[i] : 1, pb = pd && np == 2 * (nd - 2) ? pd[i] : 0,
            pe = pd && np == 2 * (nd - 2) ? pd[nd - 2 + i] : 0;
    os[2 + i] = (x->type.shape[2 + i] - 1) * s + ks[i] - pb - pe;
    if (os[2 + i] < 1)
      return imp_error(im, "the unpooled size of spatial axis %d is %lld (pads larger than the window)", i, (long long)os[2 + i]);
  }
  memcpy(want, os, sizeof os);
  GNode *osv = imp_input(im, 2);
  bool runtime = osv && osv->kind == GN_VAR;
  if (runtime && (osv->type.ndim != 1 || ttype_is_symbolic(&osv->type) || osv->type.shape[0] != nd ||
                  !dt_eq(osv->type.dtype, DT_I64)))
    return imp_error(im, "output_shape ('%s') must be %d int64 values, got %s", osv->name, nd, ttype_str(&osv->type));
  if (osv && !runtime) {
    int n = imp_const_input_ints(im, 2, want, MAXD);
    if (n < 0) return -1;
    if (n != nd) return imp_error(im, "output_shape has %d values, expected %d", n, nd);
    for (int i = 0; i < nd; i++)
      if (want[i] < os[i] || (i < 2 && want[i] != os[i]))
        return imp_error(im, "output_shape dimension %d is %lld, the unpooled size is %lld", i, (long long)want[i], (long long)os[i]);
  }
  int64_t P, Nu = ttype_numel(&x->type);
  if (imp_numel_in(im, "the unpooled output", nd, want, IMP_MAX_COUNT, &P) || imp_numel_in(im, "the unpooled output", nd, os, IMP_MAX_COUNT, &P))
    return -1;
  /* each X written at its flat index into zeros (ONNX assigns: of two
   * equal indices the later X wins) */
  int64_t ls[2] = {Nu, 1};
  GAttrs za = gattrs_new();
  ga_ints(&za, "shape", 1, &P);
  GNode *zero = imp_scalar_like(im, 0, x);
  GNode *zeros = zero ? imp_call(im, "broadcast_to", 1, &zero, za) : NULL;
  GNode *flat = scatter_call(im, "scatter_nd", zeros, imp_reshape(im, imp_cast(im, idx, DT_I64), 2, ls),
                             imp_reshape(im, x, 1, &Nu), 0, -1);
  GNode *y = imp_reshape(im, flat, nd, os);
  if (runtime && y) return onnx_unpool_pad_runtime(im, y, osv);
  if (memcmp(want, os, sizeof(int64_t) * (size_t)nd)) {
    int64_t pads[2 * MAXD];
    for (int i = 0; i < nd; i++) pads[i] = 0, pads[nd + i] = want[i] - os[i];
    GAttrs pa = gattrs_new();
    ga_ints(&pa, "pads", 2 * nd, pads);
    ga_str(&pa, "pad_mode", "constant");
    ga_float(&pa, "pad_value", 0);
    y = y ? imp_call(im, "nn.pad", 1, &y, pa) : NULL;
  }
  return imp_set_output(im, 0, y);
}

/* ---- TensorScatter (opset 24): a KV-cache write ----
 * present = past_cache with update[b, ..., i, ...] written at position
 * write_indices[b] + i along axis (mode 'circular': modulo the cache
 * length).  Built elementwise, so write_indices may be a run-time input:
 * for each cache position s, rel = s - w[b] (mod the length when
 * circular); positions with 0 <= rel < update's length take update at rel
 * (a one-hot selection over the update's positions), the others keep the
 * cache. */
int onnx_h_TensorScatter(Importer *im) {
  GNode *past = imp_input(im, 0), *upd = imp_input(im, 1), *w = imp_input(im, 2);
  int r = past->type.ndim, ax;
  if (r < 2 || upd->type.ndim != r)
    return imp_error(im, "past_cache %s and update %s must have one rank of at least 2", ttype_str(&past->type),
                     ttype_str(&upd->type));
  if (!dt_eq(past->type.dtype, upd->type.dtype))
    return imp_error(im, "update is %s but past_cache is %s", dt_str(upd->type.dtype), dt_str(past->type.dtype));
  if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", -2), r, &ax)) return -1;
  if (ax == 0) return imp_error(im, "axis 0 is the batch axis: the sequence axis must be another");
  const char *mode = onnx_attr_string(N(im), "mode", "linear");
  bool circ = !strcmp(mode, "circular");
  if (!circ && strcmp(mode, "linear")) return imp_error(im, "mode '%s': expected 'linear' or 'circular'", mode);
  int64_t B = past->type.shape[0], S = past->type.shape[ax], U = upd->type.shape[ax];
  for (int d = 0; d < r; d++)
    if (d != ax && upd->type.shape[d] != past->type.shape[d])
      return imp_error(im, "update %s differs from past_cache %s outside axis %d", ttype_str(&upd->type),
                       ttype_str(&past->type), ax);
  if (U > S) return imp_error(im, "update has %lld positions along axis %d, more than the cache's %lld", (long long)U, ax, (long long)S);
  if (w && (w->type.ndim != 1 || w->type.shape[0] != B || !dt_is_intlike(w->type.dtype)))
    return imp_error(im, "write_indices must be [batch] = [%lld] integers, got %s", (long long)B, ttype_str(&w->type));
  /* rel[b, s, u] == u marks where update position u lands: shapes [B, S, U] */
  int64_t sh3[3] = {B, 1, 1};
  GNode *wb = w ? imp_reshape(im, imp_cast(im, w, DT_I64), 3, sh3) : imp_scalar(im, 0, DT_I64);
  int64_t *sv, *uv, s3[3] = {1, S, 1}, u3[3] = {1, 1, U};
  GNode *sc = imp_new_i64(im, 3, s3, &sv), *uc = imp_new_i64(im, 3, u3, &uv);
  if (!sc || !uc) return -1;
  for (int64_t i = 0; i < S; i++) sv[i] = i;
  for (int64_t i = 0; i < U; i++) uv[i] = i;
  GNode *rel = bin(im, "subtract", sc, wb);
  if (circ) rel = bin(im, "floor_mod", rel, imp_scalar(im, (double)S, DT_I64));
  GNode *hit = bin(im, "equal", rel, uc); /* [B, S, U] */
  /* to the data's layout: [B, 1.., S, U, 1..] with S at axis, U after it */
  int64_t hs[MAXD + 1];
  int n = 0;
  for (int d = 0; d <= r; d++) hs[n++] = d == 0 ? B : d == ax ? S : d == ax + 1 ? U : 1;
  hit = imp_reshape(im, hit, r + 1, hs);
  int64_t us[MAXD + 1];
  n = 0;
  for (int d = 0; d < r; d++) {
    us[n++] = d == ax ? 1 : upd->type.shape[d];
    if (d == ax) us[n++] = U;
  }
  GNode *u5 = imp_reshape(im, upd, r + 1, us); /* update with a unit axis for S */
  int64_t last = ax + 1;
  GNode *sel = imp_reduce(im, "sum", imp_where(im, hit, u5, imp_scalar_like(im, 0, upd)), 1, &last, false);
  GNode *any = imp_reduce(im, "max", imp_cast(im, hit, DT_I32), 1, &last, false);
  GNode *take = bin(im, "not_equal", any, imp_scalar(im, 0, DT_I32));
  return out0(im, imp_where(im, take, sel, past));
}
