/*
 * topk.c - the indices of the k largest (or smallest) values along the
 * last axis, in order, ties to the lower index (ONNX TopK; the values are
 * a gather of them).
 *
 * On the CPU a loop nest per row keeps the k best seen so far in a heap
 * in the output row, the worst at the root (O(n log k)), then sorts the
 * heap (O(k log k)); memory: the output and one position.  The order
 * "a beats b" (x[a] > x[b], or equal and a < b) is strict and total, so
 * the result is exactly a stable sort's first k.  A GPU has no schedule
 * for a loop nest: there it is a compute that ranks each element against
 * every other (O(n^2)) and picks the element of each rank.
 */
#include "../topi.h"

/* Whether element a beats element b of the row (values x at base + a). */
static Expr *beats(Tensor *xt, Expr *xbuf, Expr *base, Expr *a, Expr *b, bool largest) {
  DType t = xt->dtype;
  Expr *xa = ir_load(t, xbuf, ir_add(base, ir_cast(DT_I32, a))), *xb = ir_load(t, xbuf, ir_add(base, ir_cast(DT_I32, b)));
  return ir_or(largest ? ir_gt(xa, xb) : ir_lt(xa, xb), ir_and(ir_eq(xa, xb), ir_lt(a, b)));
}

typedef struct Heap {
  Tensor *x;
  Expr *xbuf, *xbase; /* the row's values */
  Expr *h, *hbase;    /* the heap: int64 positions h[hbase + 0 .. size) */
  Expr *p;            /* a one-element int32 buffer: the sifted position */
  int64_t levels;     /* sift steps enough for k elements */
  bool largest;
} Heap;

static Expr *slot(Heap *hp, Expr *i) { return ir_load(DT_I64, hp->h, ir_add(hp->hbase, i)); }
static Stmt *set_slot(Heap *hp, Expr *i, Expr *v) { return ir_store(hp->h, v, ir_add(hp->hbase, i)); }

/* Move the element at `start` down the heap of `size` elements until
 * both its children beat it (the root is the worst kept). */
static Stmt *sift_down(Heap *hp, Expr *start, Expr *size, const char *tag) {
  Expr *it = ir_var(kfmt("s%s", tag), DT_I32), *pp = ir_var(kfmt("pp%s", tag), DT_I32);
  Expr *l = ir_var(kfmt("l%s", tag), DT_I32), *c = ir_var(kfmt("c%s", tag), DT_I32);
  Expr *r = ir_add(l, ir_i32(1));
  /* c: the worse child (the one the other beats) */
  Expr *cv = ir_select(ir_and(ir_lt(r, size), beats(hp->x, hp->xbuf, hp->xbase, slot(hp, l), slot(hp, r), hp->largest)),
                       r, l);
  Expr *hc = slot(hp, c), *hpp = slot(hp, pp);
  Expr *tv = ir_var(kfmt("t%s", tag), DT_I64);
  Stmt *do_swap = ir_let_stmt(tv, hpp,
                              ir_seq(3, (Stmt *[]){set_slot(hp, pp, hc), set_slot(hp, c, tv),
                                                   ir_store(hp->p, c, ir_i32(0))}));
  Stmt *step = ir_if(beats(hp->x, hp->xbuf, hp->xbase, hpp, hc, hp->largest), do_swap,
                     ir_store(hp->p, size, ir_i32(0)));
  Stmt *body = ir_let_stmt(pp, ir_load(DT_I32, hp->p, ir_i32(0)),
                           ir_let_stmt(l, ir_add(ir_mul(pp, ir_i32(2)), ir_i32(1)),
                                       ir_if(ir_lt(l, size), ir_let_stmt(c, cv, step), NULL)));
  return ir_seq2(ir_store(hp->p, start, ir_i32(0)), ir_for(it, ir_i32(0), ir_i32(hp->levels), FOR_SERIAL, body));
}

Tensor *topi_topk_indices(Tensor *x, int64_t k, bool largest) {
  const char *op = "topk_indices";
  if (!x) return NULL;
  int r = x->ndim;
  int64_t n = 0, rows = 1;
  if (r < 1) return kiln_set_error("%s: input must have rank >= 1", op), NULL;
  for (int d = 0; d < r; d++) {
    int64_t s;
    if (!ir_is_const_int(x->shape[d], &s))
      return kiln_set_error("%s: '%s' needs a static shape, got %s", op, x->name, topi_shape_str(r, x->shape)), NULL;
    if (d < r - 1) rows *= s;
    else n = s;
  }
  if (k < 0 || k > n) return kiln_set_error("%s: k = %lld is not within [0, %lld]", op, (long long)k, (long long)n), NULL;
  Expr **shape = KNEWN(Expr *, r);
  for (int d = 0; d < r - 1; d++) shape[d] = x->shape[d];
  shape[r - 1] = ir_i32(k);
  Expr **ib, *ob;
  te_extern_buffers(1, &x, "T_topk_indices", &ib, &ob);
  Expr *row = ir_var("row", DT_I32), *i = ir_var("i", DT_I32), *e = ir_var("e", DT_I32);
  Heap hp = {x, ib[0], ir_mul(row, ir_i32(n)), ob, ir_mul(row, ir_i32(k)), ir_var("pos", DT_HANDLE), 1, largest};
  while ((int64_t)1 << hp.levels <= k) hp.levels++;
  Expr *kk = ir_i32(k);
  /* the first k in place, heapified from the last parent up */
  Stmt *init = ir_for(i, ir_i32(0), kk, FOR_SERIAL, set_slot(&hp, i, ir_cast(DT_I64, i)));
  Stmt *heapify = ir_for(i, ir_i32(0), ir_i32(k / 2), FOR_SERIAL,
                         sift_down(&hp, ir_sub(ir_i32(k / 2 - 1), i), kk, "h"));
  /* each later element that beats the root replaces it */
  Expr *ie = ir_cast(DT_I64, i);
  Stmt *scan = ir_for(i, kk, ir_i32(n - k), FOR_SERIAL,
                      ir_if(beats(x, hp.xbuf, hp.xbase, ie, slot(&hp, ir_i32(0)), largest),
                            ir_seq2(set_slot(&hp, ir_i32(0), ie), sift_down(&hp, ir_i32(0), kk, "s")), NULL));
  /* heap sort: the worst to the end, k - 1 times */
  Expr *end = ir_sub(ir_i32(k - 1), e), *tv = ir_var("tmp", DT_I64);
  Stmt *sort = ir_for(e, ir_i32(0), ir_i32(k > 1 ? k - 1 : 0), FOR_SERIAL,
                      ir_let_stmt(tv, slot(&hp, ir_i32(0)),
                                  ir_seq(3, (Stmt *[]){set_slot(&hp, ir_i32(0), slot(&hp, end)), set_slot(&hp, end, tv),
                                                       sift_down(&hp, ir_i32(0), end, "e")})));
  Stmt *body = k == 0 ? ir_nop() /* nothing to keep */
                      : ir_allocate(hp.p, DT_I32, ir_i32(1), "local", ir_seq(4, (Stmt *[]){init, heapify, scan, sort}));
  body = ir_for(row, ir_i32(0), ir_i32(rows), FOR_SERIAL, body);
  return te_extern("T_topk_indices", r, shape, DT_I64, 1, &x, ib, ob, body, "topk");
}

Tensor *topi_topk_indices_dense(Tensor *x, int64_t k, bool largest) {
  const char *op = "topk_indices";
  if (!x) return NULL;
  int r = x->ndim;
  int64_t n;
  if (r < 1) return kiln_set_error("%s: input must have rank >= 1", op), NULL;
  if (!ir_is_const_int(x->shape[r - 1], &n))
    return kiln_set_error("%s: '%s' needs a static last axis, got %s", op, x->name, topi_shape_str(r, x->shape)), NULL;
  if (k < 0 || k > n) return kiln_set_error("%s: k = %lld is not within [0, %lld]", op, (long long)k, (long long)n), NULL;
  /* rank[.., i] = #{j : x[j] beats x[i]} */
  Expr **v = te_axis_vars(r, NULL), **vj = KNEWN(Expr *, r);
  IterVar *j = te_reduce_axis_c(n, "j");
  for (int d = 0; d < r; d++) vj[d] = d == r - 1 ? j->var : v[d];
  Expr *xi = te_read(x, r, v), *xj = te_read(x, r, vj);
  Expr *b = ir_or(largest ? ir_gt(xj, xi) : ir_lt(xj, xi), ir_and(ir_eq(xj, xi), ir_lt(j->var, v[r - 1])));
  Tensor *rank = te_compute("T_topk_rank", r, x->shape, v,
                            ir_reduce(ir_reducer(RED_SUM, DT_I32), ir_cast(DT_I32, b), 1, &j, NULL), "comm_reduce");
  /* out[.., q] = the i of rank q */
  Expr **w = te_axis_vars(r, NULL), **wi = KNEWN(Expr *, r), **shape = KNEWN(Expr *, r);
  IterVar *ii = te_reduce_axis_c(n, "i");
  for (int d = 0; d < r; d++) wi[d] = d == r - 1 ? ii->var : w[d], shape[d] = d == r - 1 ? ir_i32(k) : x->shape[d];
  Expr *sel = ir_select(ir_eq(te_read(rank, r, wi), w[r - 1]), ir_cast(DT_I64, ii->var), ir_i64(0));
  return te_compute("T_topk_indices", r, shape, w, ir_reduce(ir_reducer(RED_SUM, DT_I64), sel, 1, &ii, NULL),
                    "comm_reduce");
}
