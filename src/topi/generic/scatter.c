/*
 * scatter.c - scatters as loop nests (extern ops): the data copied to the
 * output, then each update written or combined at the position its index
 * names, in the updates' order.  Time linear in the data and the updates,
 * where a compute would compare every output position with every index.
 * ONNX's semantics: a negative index counts from the end of its axis, an
 * index outside the axis writes nothing, duplicate indices apply in order
 * (the last update wins without a reduction; with one, each combines).
 *
 * A GPU has no schedule for a loop nest: there the same scatters are
 * computes (the _dense forms), each output position reducing over the
 * updates whose index names it (the last one's position for none), with
 * the same results in quadratic time.
 */
#include "../topi.h"

static int static_shape(const char *op, Tensor *t, int64_t *s) {
  for (int d = 0; d < t->ndim; d++)
    if (!ir_is_const_int(t->shape[d], &s[d]))
      return kiln_set_error("%s: '%s' needs a static shape, got %s", op, t->name, topi_shape_str(t->ndim, t->shape));
  return 0;
}

static int check_operands(const char *op, Tensor *data, Tensor *indices, Tensor *updates, TopiScatterReduce red) {
  if (!dt_is_intlike(indices->dtype) || dt_is_bool(indices->dtype))
    return kiln_set_error("%s: indices must be integers, got %s", op, dt_str(indices->dtype));
  if (!dt_eq(data->dtype, updates->dtype))
    return kiln_set_error("%s: updates are %s, data %s; they must match", op, dt_str(updates->dtype), dt_str(data->dtype));
  if (red != TOPI_SCATTER_NONE && dt_is_bool(data->dtype))
    return kiln_set_error("%s: a reduction needs numbers, got bool", op);
  if (red < TOPI_SCATTER_NONE || red > TOPI_SCATTER_MIN) return kiln_set_error("%s: unknown reduction %d", op, (int)red);
  return 0;
}

/* The static sizes of a scatter's operands: ranks r, axis ax
 * (scatter_elements), data / indices dims, and for scatter_nd the index
 * depth k, the number of index rows nu and the elements each names. */
typedef struct Dims {
  int r, ax;
  int64_t *ds, *is, k, nu, rest, numel;
} Dims;

static int elements_dims(Tensor *data, Tensor *indices, Tensor *updates, int axis_in, TopiScatterReduce red, Dims *sd) {
  const char *op = "scatter_elements";
  if (!data || !indices || !updates) return -1;
  if (check_operands(op, data, indices, updates, red)) return -1;
  int r = data->ndim;
  if (indices->ndim != r || updates->ndim != r)
    return kiln_set_error("%s: data, indices and updates have ranks %d, %d and %d; they must be equal", op, r,
                          indices->ndim, updates->ndim);
  *sd = (Dims){.r = r, .ds = KNEWN(int64_t, r + 1), .is = KNEWN(int64_t, r + 1), .numel = 1};
  int64_t *us = KNEWN(int64_t, r + 1);
  if (topi_normalize_axis(op, axis_in, r, &sd->ax) || static_shape(op, data, sd->ds) ||
      static_shape(op, indices, sd->is) || static_shape(op, updates, us))
    return -1;
  for (int d = 0; d < r; d++) {
    if (sd->is[d] != us[d] || (d != sd->ax && sd->is[d] > sd->ds[d]))
      return kiln_set_error("%s: indices %s and updates %s must match and fit in data %s", op,
                            topi_shape_str(r, indices->shape), topi_shape_str(r, updates->shape),
                            topi_shape_str(r, data->shape));
    sd->numel *= sd->ds[d];
  }
  return 0;
}

/* updates: indices[..., :-1] + data[k:], in any shape of that size */
static int nd_dims(Tensor *data, Tensor *indices, Tensor *updates, TopiScatterReduce red, Dims *sd) {
  const char *op = "scatter_nd";
  if (!data || !indices || !updates) return -1;
  if (check_operands(op, data, indices, updates, red)) return -1;
  int r = data->ndim, q = indices->ndim;
  if (q < 1) return kiln_set_error("%s: indices must have rank >= 1", op);
  *sd = (Dims){.r = r, .ds = KNEWN(int64_t, r + 1), .is = KNEWN(int64_t, q + 1), .nu = 1, .rest = 1, .numel = 1};
  int64_t *us = KNEWN(int64_t, updates->ndim + 1), un = 1;
  if (static_shape(op, data, sd->ds) || static_shape(op, indices, sd->is) || static_shape(op, updates, us)) return -1;
  sd->k = sd->is[q - 1];
  for (int d = 0; d < q - 1; d++) sd->nu *= sd->is[d];
  for (int d = 0; d < r; d++) sd->numel *= sd->ds[d];
  for (int d = (int)sd->k; d < r; d++) sd->rest *= sd->ds[d];
  for (int d = 0; d < updates->ndim; d++) un *= us[d];
  if (sd->k > r || un != sd->nu * sd->rest)
    return kiln_set_error("%s: updates %s do not match indices %s and data %s", op,
                          topi_shape_str(updates->ndim, updates->shape), topi_shape_str(q, indices->shape),
                          topi_shape_str(r, data->shape));
  return 0;
}

/* The value stored where an update u lands on the current value cur. */
static Expr *combine(TopiScatterReduce red, Expr *cur, Expr *u) {
  switch (red) {
  case TOPI_SCATTER_ADD:
    return ir_add(cur, u);
  case TOPI_SCATTER_MUL:
    return ir_mul(cur, u);
  case TOPI_SCATTER_MAX:
    return ir_max(cur, u);
  case TOPI_SCATTER_MIN:
    return ir_min(cur, u);
  case TOPI_SCATTER_NONE:
    break;
  }
  return u;
}

/* out[off] = combine(out[off], updates[uoff]) */
static Stmt *update(TopiScatterReduce red, DType t, Expr *out, Expr *off, Expr *upd, Expr *uoff) {
  return ir_store(out, combine(red, ir_load(t, out, off), ir_load(t, upd, uoff)), off);
}

/* 0 <= w < dim */
static Expr *in_range(Expr *w, int64_t dim) {
  return ir_and(ir_le(ir_int(0, w->dtype), w), ir_lt(w, ir_int(dim, w->dtype)));
}

/* let j = index; let w = j < 0 ? j + dim : j; body */
static Stmt *let_wrapped(Expr *w, Expr *index, int64_t dim, Stmt *body) {
  DType it = index->dtype;
  Expr *j = ir_var(kfmt("j%s", w->var.name + 1), it);
  return ir_let_stmt(j, index, ir_let_stmt(w, ir_select(ir_lt(j, ir_int(0, it)), ir_add(j, ir_int(dim, it)), j), body));
}

/* The extern: out = data, then body. */
static Tensor *scatter_extern(const char *name, Tensor *data, Tensor *indices, Tensor *updates, Expr **ib, Expr *ob,
                              int64_t numel, Stmt *body) {
  Tensor *ins[3] = {data, indices, updates};
  Expr *i = ir_var("i", DT_I32);
  Stmt *copy = ir_for(i, ir_i32(0), ir_i32(numel), FOR_SERIAL, ir_store(ob, ir_load(data->dtype, ib[0], i), i));
  return te_extern(name, data->ndim, data->shape, data->dtype, 3, ins, ib, ob, ir_seq2(copy, body), "scatter");
}

Tensor *topi_scatter_elements(Tensor *data, Tensor *indices, Tensor *updates, int axis_in, TopiScatterReduce red) {
  Dims sd;
  if (elements_dims(data, indices, updates, axis_in, red, &sd)) return NULL;
  int r = sd.r, ax = sd.ax;
  const int64_t *ds = sd.ds, *is = sd.is;
  Expr **ib, *ob;
  Tensor *ins[3] = {data, indices, updates};
  te_extern_buffers(3, ins, "T_scatter_elements", &ib, &ob);
  /* one update per index, in row-major order over the indices */
  Expr **v = te_axis_vars(r, NULL);
  Expr *uoff = ir_i32(0), *off = ir_i32(0), *w = ir_var("w", indices->dtype);
  for (int d = 0; d < r; d++) {
    uoff = ir_add(ir_mul(uoff, ir_i32(is[d])), v[d]);
    off = ir_add(ir_mul(off, ir_i32(ds[d])), d == ax ? ir_cast(DT_I32, w) : v[d]);
  }
  Stmt *body = let_wrapped(w, ir_load(indices->dtype, ib[1], uoff), ds[ax],
                           ir_if(in_range(w, ds[ax]), update(red, data->dtype, ob, off, ib[2], uoff), NULL));
  for (int d = r - 1; d >= 0; d--) body = ir_for(v[d], ir_i32(0), ir_i32(is[d]), FOR_SERIAL, body);
  return scatter_extern("T_scatter_elements", data, indices, updates, ib, ob, sd.numel, body);
}

Tensor *topi_scatter_nd(Tensor *data, Tensor *indices, Tensor *updates, TopiScatterReduce red) {
  Dims sd;
  if (nd_dims(data, indices, updates, red, &sd)) return NULL;
  const int64_t *ds = sd.ds, k = sd.k, nu = sd.nu, rest = sd.rest;
  Expr **ib, *ob;
  Tensor *ins[3] = {data, indices, updates};
  te_extern_buffers(3, ins, "T_scatter_nd", &ib, &ob);
  /* update row u: indices[u, :] names a slice of `rest` elements */
  Expr *u = ir_var("u", DT_I32), *t = ir_var("t", DT_I32), *lin = ir_i32(0), *ok_all = ir_bool(true);
  Expr **w = KNEWN(Expr *, k + 1);
  for (int64_t j = 0; j < k; j++) {
    w[j] = ir_var(kfmt("w%lld", (long long)j), indices->dtype);
    lin = ir_add(ir_mul(lin, ir_i32(ds[j])), ir_cast(DT_I32, w[j]));
    ok_all = ir_and(ok_all, in_range(w[j], ds[j]));
  }
  Stmt *body = ir_for(t, ir_i32(0), ir_i32(rest), FOR_SERIAL,
                      update(red, data->dtype, ob, ir_add(ir_mul(lin, ir_i32(rest)), t), ib[2],
                             ir_add(ir_mul(u, ir_i32(rest)), t)));
  body = ir_if(ok_all, body, NULL);
  for (int64_t j = k - 1; j >= 0; j--)
    body = let_wrapped(w[j], ir_load(indices->dtype, ib[1], ir_add(ir_mul(u, ir_i32(k)), ir_i32(j))), ds[j], body);
  body = ir_for(u, ir_i32(0), ir_i32(nu), FOR_SERIAL, body);
  return scatter_extern("T_scatter_nd", data, indices, updates, ib, ob, sd.numel, body);
}

/* ---- the dense forms (GPU) ---- */

/* j wrapped: j < 0 ? j + dim : j, as int32 (-1 outside [0, dim)) */
static Expr *wrapped_or_minus1(Expr *j, int64_t dim) {
  DType it = j->dtype;
  Expr *v = ir_var("jv", it), *w = ir_var("jw", it);
  Expr *wr = ir_select(ir_lt(v, ir_int(0, it)), ir_add(v, ir_int(dim, it)), v);
  return ir_let(v, j, ir_let(w, wr, ir_select(in_range(w, dim), ir_cast(DT_I32, w), ir_i32(-1))));
}

/* acc[v]: red over the updates upd_n that hit v (reduce axis n), or for
 * none the largest n that hits (INT32_MIN where none does). */
static Tensor *reduce_hits(const char *name, Tensor *data, int r, Expr **v, IterVar *n, Expr *hit, Expr *upd_n,
                           TopiScatterReduce red) {
  static const ReduceKind kinds[] = {[TOPI_SCATTER_NONE] = RED_MAX, [TOPI_SCATTER_ADD] = RED_SUM,
                                     [TOPI_SCATTER_MUL] = RED_PROD, [TOPI_SCATTER_MAX] = RED_MAX,
                                     [TOPI_SCATTER_MIN] = RED_MIN};
  Expr *src = red == TOPI_SCATTER_NONE ? n->var : upd_n;
  Expr *body = ir_reduce(ir_reducer(kinds[red], src->dtype), src, 1, &n, hit);
  return te_compute(kfmt("%s_%s", name, red == TOPI_SCATTER_NONE ? "last" : "acc"), r, data->shape, v, body,
                    "comm_reduce");
}

Tensor *topi_scatter_elements_dense(Tensor *data, Tensor *indices, Tensor *updates, int axis_in, TopiScatterReduce red) {
  Dims sd;
  if (elements_dims(data, indices, updates, axis_in, red, &sd)) return NULL;
  int r = sd.r, ax = sd.ax;
  const int64_t *ds = sd.ds, *is = sd.is;
  Expr **v = te_axis_vars(r, NULL);
  IterVar *n = te_reduce_axis_c(is[ax], "n");
  /* the update at (v off the axis, n on it), clamped into the indices'
   * extent where v is beyond it (no hit there) */
  Expr *inside = ir_bool(true), **q = KNEWN(Expr *, r + 1);
  for (int d = 0; d < r; d++) {
    if (d != ax && is[d] < ds[d]) inside = ir_and(inside, ir_lt(v[d], ir_i32(is[d])));
    q[d] = d == ax ? n->var : is[d] < ds[d] ? ir_min(v[d], ir_i32(is[d] - 1)) : v[d];
  }
  Expr *hit = ir_and(inside, ir_eq(wrapped_or_minus1(te_read(indices, r, q), ds[ax]), v[ax]));
  Tensor *acc = reduce_hits("T_scatter_elements", data, r, v, n, hit, te_read(updates, r, q), red);
  Expr **w = te_axis_vars(r, NULL);
  Expr **wi = KNEWN(Expr *, r + 1);
  Expr *a = te_read(acc, r, w), *old = te_read(data, r, w), *out;
  if (red == TOPI_SCATTER_NONE) { /* the last hit's update, or the data */
    for (int d = 0; d < r; d++)
      wi[d] = d == ax ? ir_max(a, ir_i32(0)) : is[d] < ds[d] ? ir_min(w[d], ir_i32(is[d] - 1)) : w[d];
    out = ir_select(ir_ge(a, ir_i32(0)), te_read(updates, r, wi), old);
  } else {
    out = combine(red, old, a);
  }
  return te_compute("T_scatter_elements", r, data->shape, w, out, "injective");
}

Tensor *topi_scatter_nd_dense(Tensor *data, Tensor *indices, Tensor *updates, TopiScatterReduce red) {
  Dims sd;
  if (nd_dims(data, indices, updates, red, &sd)) return NULL;
  int r = sd.r;
  const int64_t *ds = sd.ds, k = sd.k, nu = sd.nu, rest = sd.rest;
  /* k = 0: no index components, every update hits everything */
  Tensor *i2 = k > 0 ? topi_reshape(indices, 2, (int64_t[]){nu, k}) : NULL;
  Tensor *u2 = topi_reshape(updates, 2, (int64_t[]){nu, rest});
  Expr **v = te_axis_vars(r, NULL);
  IterVar *n = te_reduce_axis_c(nu, "n");
  Expr *hit = ir_bool(true), *t = ir_i32(0);
  for (int64_t j = 0; j < k; j++)
    hit = ir_and(hit, ir_eq(wrapped_or_minus1(te_read2(i2, n->var, ir_i32(j)), ds[j]), v[j]));
  for (int d = (int)k; d < r; d++) t = ir_add(ir_mul(t, ir_i32(ds[d])), v[d]);
  Tensor *acc = reduce_hits("T_scatter_nd", data, r, v, n, hit, te_read2(u2, n->var, t), red);
  Expr **w = te_axis_vars(r, NULL);
  Expr *a = te_read(acc, r, w), *old = te_read(data, r, w), *out;
  if (red == TOPI_SCATTER_NONE) {
    Expr *tw = ir_i32(0);
    for (int d = (int)k; d < r; d++) tw = ir_add(ir_mul(tw, ir_i32(ds[d])), w[d]);
    out = ir_select(ir_ge(a, ir_i32(0)), te_read2(u2, ir_max(a, ir_i32(0)), tw), old);
  } else {
    out = combine(red, old, a);
  }
  return te_compute("T_scatter_nd", r, data->shape, w, out, "injective");
}
