/*
 * x86/batch_matmul.c - batch_matmul.x86: a batch of matrix products
 * between two activations, C[b..., y, x] = sum_k A[b..., y, k] *
 * B[b..., k, x] (ONNX MatMul of rank >= 3 with equal batch dimensions:
 * attention's Q K^T and P V), register-blocked and vectorized, tunable
 * with TVM's batch_matmul.x86 knobs (tile_y, tile_x, tile_k).
 *
 * B is read as it is: a row of B is contiguous, so a register block of
 * tile_y rows x tile_x columns takes, for each k, one broadcast of A[y, k]
 * per row and tile_x / lanes vector loads of B[k, x..], the dense_pack
 * kernel without the packing (B is an activation: packing it would be a
 * pass over memory per call, and the panel of tile_x columns of B a block
 * reads stays in L1 across the row blocks of one batch).  The block's
 * accumulators live in a "local" cache stage computed at the fused
 * (batch, row block, column block) loop, which runs in parallel; K is
 * split by tile_k's inner part and unrolled; the group's elementwise
 * epilogue is inlined into the output stage.  tile_y need not divide M
 * (the last row block has a tail: its space lists every row count up to
 * 16, not only divisors); tile_x must divide N.
 *
 * The workload is 3-D (wl_batch_matmul: [batch, M, K] x [batch, K, N]);
 * the compute takes the graph's rank (batch dimensions flattened into the
 * workload's batch).  Where this departs from TVM: TVM's batch_matmul
 * takes B as [batch, N, K] and reduces with rfactor; ONNX MatMul gives [K,
 * N] rows, which vectorize along N directly.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

/* Rows a register block may have (the tile_y candidates). */
enum { BMM_MAX_ROWS = 16 };

Tensor *topi_x86_batch_matmul(Tensor *a, Tensor *b, DType out_dtype) {
  if (!a || !b) return NULL;
  int r = a->ndim;
  int64_t sa[8], sb[8];
  if (r < 3 || r > 8 || b->ndim != r || !te_shape_const(a, sa) || !te_shape_const(b, sb))
    return kiln_set_error("batch_matmul.x86: operands must have one rank from 3 to 8 and constant shapes, got rank %d "
                          "and %d",
                          a->ndim, b->ndim),
           NULL;
  for (int i = 0; i < r - 2; i++)
    if (sa[i] != sb[i])
      return kiln_set_error("batch_matmul.x86: batch dimension %d differs (%lld vs %lld); broadcasting batches take "
                            "the generic matmul",
                            i, (long long)sa[i], (long long)sb[i]),
             NULL;
  int64_t M = sa[r - 2], K = sa[r - 1], N = sb[r - 1];
  if (sb[r - 2] != K)
    return kiln_set_error("batch_matmul.x86: a is [..., %lld, %lld] and b [..., %lld, %lld]: the inner dimensions "
                          "differ",
                          (long long)M, (long long)K, (long long)sb[r - 2], (long long)N),
           NULL;
  IterVar *k = te_reduce_axis_c(K, "k");
  Expr **v = te_axis_vars(r, NULL);
  Expr *ia[8], *ib[8], *shape[8];
  for (int i = 0; i < r - 2; i++) ia[i] = ib[i] = v[i], shape[i] = c32(sa[i]);
  ia[r - 2] = v[r - 2], ia[r - 1] = k->var;
  ib[r - 2] = k->var, ib[r - 1] = v[r - 1];
  shape[r - 2] = c32(M), shape[r - 1] = c32(N);
  Expr *x = te_read(a, r, ia), *y = te_read(b, r, ib);
  if (!x || !y) return NULL;
  if (!dt_eq(x->dtype, out_dtype)) x = ir_cast(out_dtype, x);
  if (!dt_eq(y->dtype, out_dtype)) y = ir_cast(out_dtype, y);
  return te_compute("batch_matmul", r, shape, v, ir_sum(ir_mul(x, y), 1, &k), "batch_matmul_x86");
}

/* ---- the template ---- */

static bool x_filter(const int64_t *sizes, int n, void *ud) {
  int64_t lanes = *(const int64_t *)ud;
  return sizes[n - 1] <= 2 * lanes; /* up to two vectors a row */
}

static int bmm_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  BatchMatmulWorkload w;
  if (wl_batch_matmul_parse(wl, &w)) return -1;
  /* every row count up to 16 (a tail where it does not divide M) */
  int64_t cand[2 * BMM_MAX_ROWS];
  int nc = 0;
  for (int64_t y = 1; y <= BMM_MAX_ROWS && y <= w.M; y++) cand[2 * nc] = -1, cand[2 * nc + 1] = y, nc++;
  int64_t lanes = t->vector_lanes;
  SplitOpts ys = {.policy = "candidate", .ncand = nc, .cand = cand}, xs = {.filter = x_filter, .filter_ud = &lanes};
  if (space_define_split(cs, "tile_y", w.M, &ys) || space_define_split(cs, "tile_x", w.N, &xs) ||
      space_define_split(cs, "tile_k", w.K, NULL))
    return -1;
  return 0;
}

/* dense_pack's register block: two vectors of columns where they divide
 * N and M > 1 (attention's P V, N = 64: 12 x 32 ran 1.07x the 12 x 16
 * block, bench_dense --bmm, docs/gemm.md), else one vector (or N's
 * largest power-of-two divisor below it); a divisor of M from 4 to 12
 * rows, else min(M, 12) rows with a tail; K unrolled by 4 where it
 * divides. */
static int bmm_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  BatchMatmulWorkload w;
  if (wl_batch_matmul_parse(wl, &w)) return -1;
  int64_t x_i = 1, lanes = t->vector_lanes;
  for (int64_t bn = lanes; bn >= 1; bn /= 2)
    if (w.N % bn == 0) {
      x_i = bn;
      break;
    }
  if (lanes > 1 && w.M > 1 && w.N % (2 * lanes) == 0) x_i = 2 * lanes;
  int64_t y_i = w.M < 12 ? w.M : 12;
  for (int64_t r = 12; r >= 4 && w.M > 12; r--)
    if (w.M % r == 0) {
      y_i = r;
      break;
    }
  int64_t k_i = w.K % 4 == 0 ? 4 : w.K % 2 == 0 ? 2 : 1;
  config_set_split(cfg, "tile_y", 2, (int64_t[]){-1, y_i});
  config_set_split(cfg, "tile_x", 2, (int64_t[]){-1, x_i});
  config_set_split(cfg, "tile_k", 2, (int64_t[]){-1, k_i});
  cfg->is_fallback = true;
  return 0;
}

static int bmm_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  (void)t;
  BatchMatmulWorkload w;
  if (wl_batch_matmul_parse(wl, &w)) return -1;
  if (x86_check_split(cfg, "tile_y", 2, w.M, "rows (M)", false) ||
      x86_check_split(cfg, "tile_x", 2, w.N, "columns (N)", true) ||
      x86_check_split(cfg, "tile_k", 2, w.K, "reduction length (K)", true))
    return kiln_error_context("%s", wl->name);
  return 0;
}

static Tensor *bmm_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  BatchMatmulWorkload w;
  if (wl_batch_matmul_parse(wl, &w)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes a and b, got %d inputs", wl->name, nin), NULL;
  return topi_x86_batch_matmul(in[0], in[1], w.out_dtype);
}

static int bmm_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t, (void)cfg;
  BatchMatmulWorkload w;
  if (wl_batch_matmul_parse(wl, &w)) return -1;
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("a", 3, (int64_t[]){w.batch, w.M, w.K}, w.dtype);
  (*in)[1] = te_placeholder_c("b", 3, (int64_t[]){w.batch, w.K, w.N}, w.dtype);
  return 0;
}

const Template topi_x86_batch_matmul_template = {
    .name = "batch_matmul.x86", .anchor_tag = "batch_matmul_x86", .key = "cpu", .define_space = bmm_space,
    .fallback = bmm_fallback, .check = bmm_check, .placeholders = bmm_placeholders, .compute = bmm_compute,
    .schedule = topi_x86_schedule_batch_matmul,
};

/* ---- the schedule ---- */

int topi_x86_schedule_batch_matmul(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *c, int nout,
                                   Tensor **outs) {
  if (!s || !c) return -1;
  if (!c->tag || strcmp(c->tag, "batch_matmul_x86"))
    return kiln_set_error("batch_matmul.x86 schedule: anchor '%s' has tag '%s', expected batch_matmul_x86", c->name,
                          c->tag ? c->tag : "");
  int r = c->ndim;
  int64_t M = te_dim(c, r - 2), N = te_dim(c, r - 1), K = te_dim(c->inputs[0], r - 1);
  int64_t yb = cfg_split_inner(cfg, "tile_y"), xb = cfg_split_inner(cfg, "tile_x"), kb = cfg_split_inner(cfg, "tile_k");
  if (yb < 1 || xb < 1 || kb < 1) return kiln_error_context("batch_matmul.x86");
  if (N % xb || K % kb || yb > M)
    return kiln_set_error("batch_matmul.x86: config tile_x %lld and tile_k %lld must divide N = %lld and K = %lld, "
                          "tile_y %lld be at most M = %lld",
                          (long long)xb, (long long)kb, (long long)N, (long long)K, (long long)yb, (long long)M);
  if (x86_inline_group(s, c, NULL)) return -1;
  Tensor *main_out = x86_main_output(c, nout, outs);
  Stage *sc = sch_stage(s, c);
  if (!sc) return -1;
  Tensor *cc = sch_cache_write(s, c, "local");
  if (!cc) return -1;
  Stage *scc = sch_stage(s, cc), *so = sc;
  if (main_out && main_out != c) {
    if (stage_compute_inline(sc)) return -1;
    so = sch_stage(s, main_out);
  }
  /* the output: (batch..., row block, column block) fused and parallel */
  IterVar *yo, *yi, *xo, *xi, *f = NULL;
  if (stage_split(so, stage_axis(so, r - 2), c32(yb), &yo, &yi) ||
      stage_split(so, stage_axis(so, r - 1), c32(xb), &xo, &xi))
    return -1;
  IterVar *order[12];
  int no = 0;
  for (int i = 0; i < r - 2; i++) order[no++] = stage_axis(so, i);
  order[no++] = yo, order[no++] = xo, order[no++] = yi, order[no++] = xi;
  if (stage_reorder(so, no, order)) return -1;
  f = order[0];
  for (int i = 1; i < r; i++)
    if (stage_fuse(so, f, order[i], &f)) return -1;
  if (stage_parallel(so, f) || stage_unroll(so, yi) || x86_vec_cols(t, so, xi, xb)) return -1;
  if (stage_compute_at(scc, so, f)) return -1;
  /* the block: k outer, then the unrolled k step, rows and columns */
  IterVar *ko, *ki, *cy = stage_axis(scc, r - 2), *cx = stage_axis(scc, r - 1);
  if (stage_split(scc, stage_reduce_axis(scc, 0), c32(kb), &ko, &ki)) return -1;
  IterVar *corder[12];
  int nc = 0;
  for (int i = 0; i < r - 2; i++) corder[nc++] = stage_axis(scc, i);
  corder[nc++] = ko, corder[nc++] = ki, corder[nc++] = cy, corder[nc++] = cx;
  if (stage_reorder(scc, nc, corder) || stage_unroll(scc, ki) || stage_unroll(scc, cy)) return -1;
  if (x86_vec_cols(t, scc, cx, xb)) return -1; /* last: it may split cx */
  return x86_schedule_others(s, so, c, t->vector_lanes);
}
