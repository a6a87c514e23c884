/*
 * x86/dense.c - dense_nopack.x86 and dense_pack.x86 (TVM's
 * topi/x86/dense.py, same knobs; dense_pack's fallback is Kiln's own).
 *
 * dense_nopack (tile_y, tile_x, tile_k): the reduction over K is cut into
 * vec = tile_k's inner part lanes: a first stage sums data[y, k*vec + x] *
 * weight[n, k*vec + x] into [M, N, vec] partial sums (vectorized over the
 * lanes, computed per output tile), a second adds the lanes.  Good for
 * batch 1, where the weight streams once.
 *
 * dense_pack (tile_y, tile_x, tile_k, tile_inner; docs/gemm.md): the
 * weight packed as [N/bn, K, bn] (bn = tile_x's inner part) so a row of bn
 * outputs is one contiguous vector; the output is tiled (tile_y and tile_x
 * in three parts) and each inner tile of tile_y[-1] rows x bn columns
 * accumulates in a local cache (registers) over K, with the epilogue
 * applied as it is written.  tile_y need not divide M: the last row block
 * is guarded, and the space lists row blocks of 2..16 that do not divide
 * M after TVM's divisor splits (a prime M has register blocks to tune).
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static Expr *c32(int64_t v) { return ir_i32(v); }

static Expr *cast_to(Expr *e, DType t) { return e && !dt_eq(e->dtype, t) ? ir_cast(t, e) : e; }

static Tensor *add_bias(Tensor *c, Tensor *bias) {
  if (!bias) return c;
  Expr **v = te_axis_vars(2, NULL);
  Expr *b = cast_to(te_read1(bias, v[1]), c->dtype);
  return te_compute("T_add", 2, c->shape, v, ir_add(te_read2(c, v[0], v[1]), b), "broadcast");
}

static int dense_shapes(const char *op, Tensor *data, Tensor *weight, Tensor *bias, int64_t *M, int64_t *N,
                        int64_t *K) {
  int64_t d[2], w[3];
  if (!data || !weight) return -1;
  if (data->ndim != 2 || !te_shape_const(data, d))
    return kiln_set_error("%s: data must be 2-D [M, K] with a constant shape, got %d-D", op, data->ndim);
  if ((weight->ndim != 2 && weight->ndim != 3) || !te_shape_const(weight, w))
    return kiln_set_error("%s: weight must be [N, K] (or packed [N/bn, K, bn]) with a constant shape", op);
  *M = d[0], *K = d[1];
  *N = weight->ndim == 2 ? w[0] : w[0] * w[2];
  if (w[1] != *K && weight->ndim == 2) return kiln_set_error("%s: weight has K = %lld, data %lld", op, (long long)w[1], (long long)*K);
  if (weight->ndim == 3 && w[1] != *K) return kiln_set_error("%s: packed weight has K = %lld, data %lld", op, (long long)w[1], (long long)*K);
  if (bias && (bias->ndim != 1 || te_dim(bias, 0) != *N))
    return kiln_set_error("%s: bias must be 1-D of %lld elements", op, (long long)*N);
  return 0;
}

/* ---- dense_nopack ---- */

Tensor *topi_x86_dense_nopack(Tensor *data, Tensor *weight, Tensor *bias, const ConfigEntity *cfg, DType out_dtype) {
  int64_t M, N, K;
  if (dense_shapes("dense_nopack", data, weight, bias, &M, &N, &K)) return NULL;
  if (weight->ndim != 2) return kiln_set_error("dense_nopack: weight must be 2-D [N, K]"), NULL;
  int64_t vec = cfg_split_inner(cfg, "tile_k");
  if (vec < 1) return kiln_error_context("dense_nopack"), NULL;
  if (K % vec)
    return kiln_set_error("dense_nopack: config knob 'tile_k' inner part %lld does not divide K = %lld", (long long)vec,
                          (long long)K),
           NULL;
  IterVar *k = te_reduce_axis_c(K / vec, "k");
  Expr **v = te_axis_vars(3, (const char *[]){"z", "y", "x"});
  Expr *kx = ir_add(ir_mul(k->var, c32(vec)), v[2]);
  Expr *prod = ir_mul(cast_to(te_read2(data, v[0], kx), out_dtype), cast_to(te_read2(weight, v[1], kx), out_dtype));
  Tensor *cc = te_compute("dense_partial", 3, (Expr *[]){c32(M), c32(N), c32(vec)}, v, ir_sum(prod, 1, &k), "dense_partial");
  if (!cc) return NULL;
  IterVar *kk = te_reduce_axis_c(vec, "kk");
  v = te_axis_vars(2, (const char *[]){"y", "x"});
  Tensor *c = te_compute("dense_nopack", 2, (Expr *[]){c32(M), c32(N)}, v, ir_sum(te_read3(cc, v[0], v[1], kk->var), 1, &kk),
                         "dense_nopack");
  return add_bias(c, bias);
}

static int dense_common_check(const ConfigEntity *cfg, const Workload *wl, DenseWorkload *d, int ny, int nx) {
  if (wl_dense_parse(wl, d)) return -1;
  if (x86_check_split(cfg, "tile_y", ny, d->M, "rows (M)", true) || x86_check_split(cfg, "tile_x", nx, d->N, "outputs (N)", true) ||
      x86_check_split(cfg, "tile_k", 2, d->K, "reduction length (K)", true))
    return kiln_error_context("%s", wl->name);
  return 0;
}

static int nopack_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  if (space_define_split(cs, "tile_y", d.M, NULL) || space_define_split(cs, "tile_x", d.N, NULL) ||
      space_define_split(cs, "tile_k", d.K, NULL))
    return -1;
  return 0;
}

static int nopack_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  int64_t lanes = t->vector_lanes, kb = 1;
  for (int64_t bn = lanes * 2; bn >= 1; bn--)
    if (d.K % bn == 0) {
      kb = bn;
      break;
    }
  config_set_split(cfg, "tile_y", 2, (int64_t[]){-1, d.M});
  config_set_split(cfg, "tile_x", 2, (int64_t[]){-1, 1});
  config_set_split(cfg, "tile_k", 2, (int64_t[]){-1, kb});
  cfg->is_fallback = true;
  return 0;
}

static int nopack_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  DenseWorkload d;
  return dense_common_check(cfg, wl, &d, 2, 2);
}

static Tensor *nopack_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return NULL;
  if (nin != 2 && nin != 3) return kiln_set_error("%s: compute takes data, weight and a bias, got %d inputs", wl->name, nin), NULL;
  return topi_x86_dense_nopack(in[0], in[1], nin == 3 ? in[2] : NULL, cfg, d.out_dtype);
}

/* data [M, K], weight [N, K] */
static int nopack_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t, (void)cfg;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 2, (int64_t[]){d.M, d.K}, d.dtype);
  (*in)[1] = te_placeholder_c("weight", 2, (int64_t[]){d.N, d.K}, d.dtype);
  return 0;
}

const Template topi_x86_dense_nopack_template = {
    .name = "dense_nopack.x86", .anchor_tag = "dense_nopack", .key = "cpu", .define_space = nopack_space,
    .fallback = nopack_fallback, .check = nopack_check, .placeholders = nopack_placeholders, .compute = nopack_compute,
    .schedule = topi_x86_schedule_dense_nopack,
};

int topi_x86_schedule_dense_nopack(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *c, int nout, Tensor **outs) {
  if (!s || !c) return -1;
  if (!c->tag || strcmp(c->tag, "dense_nopack"))
    return kiln_set_error("dense_nopack.x86 schedule: anchor '%s' has tag '%s', expected dense_nopack", c->name,
                          c->tag ? c->tag : "");
  Tensor *cc = c->inputs[0];
  int64_t M = te_dim(c, 0), N = te_dim(c, 1), vec = te_dim(cc, 2);
  int ny, nx;
  const int64_t *ty = cfg_split(cfg, "tile_y", &ny), *tx = cfg_split(cfg, "tile_x", &nx);
  int64_t tk = cfg_split_inner(cfg, "tile_k");
  if (!ty || !tx || tk < 0) return kiln_error_context("dense_nopack.x86");
  if (tk != vec)
    return kiln_set_error("dense_nopack.x86: config knob 'tile_k' inner part %lld does not match the compute's %lld lanes",
                          (long long)tk, (long long)vec);
  int64_t yb = ty[ny - 1], xb = tx[nx - 1];
  if (M % yb || N % xb)
    return kiln_set_error("dense_nopack.x86: tile_y %lld / tile_x %lld must divide M = %lld / N = %lld", (long long)yb,
                          (long long)xb, (long long)M, (long long)N);
  if (x86_inline_group(s, c, NULL)) return -1;
  Tensor *main_out = x86_main_output(c, nout, outs);
  Stage *sc = sch_stage(s, c), *scc = sch_stage(s, cc), *so = sc;
  if (!sc || !scc) return -1;
  if (main_out && main_out != c) so = sch_stage(s, main_out);
  IterVar *yo, *yi, *xo, *xi, *xyo;
  if (stage_split(so, stage_axis(so, 0), c32(yb), &yo, &yi) || stage_split(so, stage_axis(so, 1), c32(xb), &xo, &xi) ||
      stage_reorder(so, 4, (IterVar *[]){yo, xo, yi, xi}) || stage_fuse(so, yo, xo, &xyo) || stage_parallel(so, xyo))
    return -1;
  if (so != sc) {
    if (x86_vec_or_unroll(t, so, xi, xb) || stage_compute_at(sc, so, xyo)) return -1;
  }
  if (stage_unroll(sc, stage_reduce_axis(sc, 0))) return -1;
  if (stage_compute_at(scc, so, xyo)) return -1;
  IterVar *z = stage_axis(scc, 0), *y = stage_axis(scc, 1), *x = stage_axis(scc, 2), *k = stage_reduce_axis(scc, 0), *yz;
  if (stage_fuse(scc, z, y, &yz) || stage_reorder(scc, 3, (IterVar *[]){k, yz, x})) return -1;
  if (yb * xb <= 64 && stage_unroll(scc, yz)) return -1;
  if (x86_vec_or_unroll(t, scc, x, vec)) return -1;
  return x86_schedule_others(s, so, c, t->vector_lanes);
}

/* ---- dense_pack ---- */

Tensor *topi_x86_pack_dense_weight(Tensor *weight, int64_t bn) {
  int64_t w[2];
  if (!weight) return NULL;
  if (weight->ndim != 2 || !te_shape_const(weight, w))
    return kiln_set_error("pack dense weight: expected [N, K] of constant shape"), NULL;
  if (bn < 1 || w[0] % bn)
    return kiln_set_error("pack dense weight: the block %lld does not divide N = %lld", (long long)bn, (long long)w[0]),
           NULL;
  Expr **v = te_axis_vars(3, (const char *[]){"z", "y", "x"});
  return te_compute("packed_weight", 3, (Expr *[]){c32(w[0] / bn), c32(w[1]), c32(bn)}, v,
                    te_read2(weight, ir_add(ir_mul(v[0], c32(bn)), v[2]), v[1]), "injective");
}

Tensor *topi_x86_dense_pack(Tensor *data, Tensor *weight, Tensor *bias, const ConfigEntity *cfg, DType out_dtype) {
  int64_t M, N, K;
  if (dense_shapes("dense_pack", data, weight, bias, &M, &N, &K)) return NULL;
  int64_t bn = weight->ndim == 3 ? te_dim(weight, 2) : cfg_split_inner(cfg, "tile_x");
  if (bn < 1) return kiln_error_context("dense_pack"), NULL;
  Tensor *packw = weight->ndim == 3 ? weight : topi_x86_pack_dense_weight(weight, bn);
  if (!packw) return NULL;
  IterVar *k = te_reduce_axis_c(K, "k");
  Expr **v = te_axis_vars(2, (const char *[]){"y", "x"});
  Expr *w = te_read3(packw, ir_floordiv(v[1], c32(bn)), k->var, ir_floormod(v[1], c32(bn)));
  Expr *prod = ir_mul(cast_to(te_read2(data, v[0], k->var), out_dtype), cast_to(w, out_dtype));
  Tensor *c = te_compute("dense_pack", 2, (Expr *[]){c32(M), c32(N)}, v, ir_sum(prod, 1, &k), "dense_pack");
  return add_bias(c, bias);
}

/* Rows a register block may have beside M's divisors (tile_y's tails). */
enum { DENSE_MAX_ROWS = 16 };

static bool inner_filter(const int64_t *sizes, int n, void *ud) {
  (void)ud;
  return sizes[n - 1] <= 16;
}

/* Whether a layer's space has "prefetch_w" (at each step of the
 * reduction, touch the packed weight the same step of the column group
 * d groups ahead will read):
 * - its weights are larger than the L2 (target_l2_bytes), so in a model
 *   they arrive from the L3 or memory;
 * - 2 to DENSE_PREFETCH_ROWS rows share each weight: a task's first row
 *   block reads its panel faster than memory supplies it (at 2 threads
 *   both cores stream at once), the blocks after it run from the L2;
 *   layers of many rows reread each panel for tens of row blocks, where
 *   the stream is hidden already (and lines touched a group ahead would
 *   be evicted before use).  One row (a GEMV) reads each weight once:
 *   the stream is the kernel and the hardware prefetcher keeps up;
 *   touches ahead only compete with it (1 x 4096 from 4096 1.2x the
 *   time, 1 x 1000 from 2048 level);
 * - a column block's panel of two vectors x K and the next one's fit the
 *   L2 together: VGG-16's 4096 from 25088 (3.2 MiB panels) ran 1.25x
 *   slower at 8 rows, the touched lines evicted before their use.
 * The next group's panel follows the current one in memory; the touches
 * of a group are spread over its row blocks (each row block takes the
 * reduction steps equal to its index modulo the row blocks), so that
 * panel arrives once, during this group's blocks.  ConvNeXt-T at 2
 * threads (per-node minima of 12 alternating runs, load 4-5): 49 x 3072
 * from 768 0.83-0.84x the time, 49 x 768 from 3072 0.87-0.93x, 196 x
 * 1536 from 384 (+GELU) 0.92-0.95x, 196 x 384 from 1536 0.94-0.98x;
 * ViT-B/16's four layers (197 rows) 0.96-0.98x; batch-8 classifiers
 * (8-column blocks, 1 thread, weights flushed) 8 x 1000 from 2048 0.33x,
 * 2 x 1000 from 2048 0.82x.  The encoders' 1 MiB layers (not in the
 * space) stay in the L3 from one run to the next and measured level. */
enum { DENSE_PREFETCH_ROWS = 256 };

static bool dense_prefetch_pays(const Target *t, const DenseWorkload *d) {
  int64_t bytes = dt_bytes(d->dtype), l2 = target_l2_bytes(t);
  return d->N * d->K * bytes > l2 && d->M >= 2 && d->M <= DENSE_PREFETCH_ROWS &&
         2 * 2 * t->vector_lanes * d->K * bytes <= l2;
}

static int pack_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  /* tile_y: TVM's divisor splits, then row blocks of 2..16 rows that do
   * not divide M (a guarded tail), so a prime M (ViT's 197 tokens) has
   * register blocks in the space and not only rows one at a time */
  int64_t tails[3 * DENSE_MAX_ROWS];
  int nt = 0;
  for (int64_t r = 2; r <= DENSE_MAX_ROWS && r < d.M; r++)
    if (d.M % r) tails[3 * nt] = -1, tails[3 * nt + 1] = 1, tails[3 * nt + 2] = r, nt++;
  SplitOpts ys = {.nparts = 3, .ncand = nt, .cand = tails}, three = {.nparts = 3}, inner = {.filter = inner_filter};
  if (space_define_split(cs, "tile_y", d.M, &ys) || space_define_split(cs, "tile_x", d.N, &three) ||
      space_define_split(cs, "tile_k", d.K, NULL) || space_define_split(cs, "tile_inner", d.M, &inner))
    return -1;
  if (dense_prefetch_pays(t, &d) && space_define_knob(cs, "prefetch_w", 3, (OptVal[]){opt_int(0), opt_int(1), opt_int(2)}))
    return -1;
  return 0;
}

/* The fallback (docs/gemm.md), for any M, N, K:
 * - columns: bn = two vectors (32 floats with AVX-512) when they divide
 *   N, else the widest power of two up to one vector that does (a GEMV,
 *   one row, is memory-bound either way);
 * - rows: with two vectors, the most rows from 12 down to 8 that divide
 *   M, else the fewest blocks of at most 12 rows, as even as they go, and
 *   a guarded tail block (ViT's 197 tokens: 16 blocks of 12 and one of
 *   5; ConvNeXt's 49: 4 of 10 and one of 9): 24 accumulators (the FMA
 *   latency times two FMA ports needs 8 or more independent chains),
 *   and each k step's 2
 *   weight vectors serve 12 rows.  The K loop is not blocked, so the
 *   weight streams from L2 once per row block: that stream is what
 *   limits this kernel at large K, and 12 rows halve it against 6; with
 *   one vector, a divisor of M from 4 to 12, else even blocks (every
 *   choice is a point of the space: tuning measures the fallback first);
 * - K unrolled by 4, the block's accumulators in registers over all of K;
 * - blocks are parallel tasks, x_oi column blocks per task (the block's
 *   rows are read again from L1 or L2 across them) while the task's
 *   weight panel, x_oi * bn * K floats, stays within DENSE_PANEL_BYTES
 *   (the row blocks that follow on the same thread read it again from
 *   L2; at K = 3072 panels of 0.8-1.5 MiB ran 1.1-2x slower than one of
 *   0.4 MiB) and 16 or more tasks remain (a thread is never left idle on
 *   a small layer).
 * This departs from TVM's fallback (about 4 x 4 tasks, 8 x 32 blocks
 * dividing M), which leaves a thread idle on small layers and runs a
 * prime M one row at a time. */
enum { DENSE_PANEL_BYTES = 256 << 10 };

/* The most rows from hi down to lo that divide M, else the rows that
 * cut M into the fewest blocks of at most hi as evenly as they can, with
 * a guarded tail block (M itself when it is at most hi).  Even blocks,
 * not hi and whatever is left: ConvNeXt's 49 positions ran 4 blocks of
 * 12 and one of a single row, whose two accumulators wait on the FMA
 * latency (at 4 cycles, a third of a 12-row block's time for a twelfth
 * of its work); 4 blocks of 10 and one of 9 ran 1.07-1.11x. */
static int64_t dense_rows(int64_t M, int64_t lo, int64_t hi) {
  if (M <= hi) return M;
  for (int64_t r = hi; r >= lo; r--)
    if (M % r == 0) return r;
  int64_t blocks = (M + hi - 1) / hi;
  return (M + blocks - 1) / blocks;
}

/* A GEMV's column block in vectors: the fewest from 4 to 8 that divide
 * the layer's vectors, else the most up to 8, so that 4 or more
 * accumulators take turns behind the FMA latency (one vector is a single
 * chain).  bench_dense --cpu-time, 1 thread (load 1.3-1.7), 1 x 1000 (8
 * lanes) from K = 512 / 768 / 1280 / 2048, one vector / 5 vectors (40):
 * weights in the cache 30.9 / 21.3, 46.2 / 26.5, 85-99 / 58-76, 149 / 97
 * us; evicted (--cold) 56 / 55, 83 / 78, 141-154 / 132-140, 254 / 249; 1
 * x 1024 from 1024, 16 / 64 / 128 columns 72.9 / 53.2 / 56.4 us (cold
 * 105 / 106 / 103). */
static int64_t gemv_vectors(int64_t vectors) {
  for (int64_t m = 4; m <= 8; m++)
    if (vectors % m == 0) return m;
  for (int64_t m = 3; m > 1; m--)
    if (vectors % m == 0) return m;
  return 1;
}

static int pack_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  int64_t lanes = t->vector_lanes;
  int64_t x_ii = 1, y_ii;
  if (lanes > 1 && d.M > 1 && d.N % (2 * lanes) == 0) {
    x_ii = 2 * lanes;
    y_ii = dense_rows(d.M, 8, 12);
  } else {
    for (int64_t bn = lanes; bn >= 1; bn /= 2)
      if (d.N % bn == 0) {
        x_ii = bn;
        break;
      }
    if (d.M == 1 && lanes > 1) x_ii *= gemv_vectors(d.N / x_ii);
    y_ii = dense_rows(d.M, 4, 12);
  }
  int64_t k_ii = d.K % 4 == 0 ? 4 : d.K % 2 == 0 ? 2 : 1;
  int64_t blocks_y = (d.M + y_ii - 1) / y_ii, blocks_x = d.N / x_ii, x_oi = 1;
  while (x_oi < 8 && blocks_x % (x_oi * 2) == 0 && blocks_y * (blocks_x / (x_oi * 2)) >= 16 &&
         x_oi * 2 * x_ii * d.K * 4 <= DENSE_PANEL_BYTES)
    x_oi *= 2;
  config_set_split(cfg, "tile_y", 3, (int64_t[]){-1, 1, y_ii});
  config_set_split(cfg, "tile_x", 3, (int64_t[]){-1, x_oi, x_ii});
  config_set_split(cfg, "tile_k", 2, (int64_t[]){-1, k_ii});
  config_set_split(cfg, "tile_inner", 2, (int64_t[]){-1, 1});
  if (dense_prefetch_pays(t, &d)) config_set_other(cfg, "prefetch_w", opt_int(1));
  cfg->is_fallback = true;
  return 0;
}

static int pack_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  /* tile_y need not divide M: the last row block has a tail */
  if (x86_check_split(cfg, "tile_y", 3, d.M, "rows (M)", false) || x86_check_split(cfg, "tile_x", 3, d.N, "outputs (N)", true) ||
      x86_check_split(cfg, "tile_k", 2, d.K, "reduction length (K)", true) ||
      x86_check_split(cfg, "tile_inner", 2, d.M, "rows (M)", true))
    return kiln_error_context("%s", wl->name);
  return 0;
}

static Tensor *pack_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return NULL;
  if (nin != 2 && nin != 3) return kiln_set_error("%s: compute takes data, weight and a bias, got %d inputs", wl->name, nin), NULL;
  return topi_x86_dense_pack(in[0], in[1], nin == 3 ? in[2] : NULL, cfg, d.out_dtype);
}

/* data [M, K], the weight packed [N/bn, K, bn] (bn = tile_x's inner part) */
static int pack_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  int64_t bn = cfg_split_inner(cfg, "tile_x");
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 2, (int64_t[]){d.M, d.K}, d.dtype);
  (*in)[1] = te_placeholder_c("packed_weight", 3, (int64_t[]){d.N / bn, d.K, bn}, d.dtype);
  return 0;
}

const Template topi_x86_dense_pack_template = {
    .name = "dense_pack.x86", .anchor_tag = "dense_pack", .key = "cpu", .define_space = pack_space,
    .fallback = pack_fallback, .check = pack_check, .placeholders = pack_placeholders, .compute = pack_compute,
    .schedule = topi_x86_schedule_dense_pack,
};

/* The bn columns of a block: one vector when bn is at most the SIMD width;
 * a wider block (tile_x's inner part 32, 48, 64) is cut into vectors of
 * the width, unrolled, so each is one register (a single 32- or 64-lane
 * vector type went through memory and ran 5x slower than 16 lanes). */
int x86_vec_cols(const Target *t, Stage *st, IterVar *x, int64_t bn) {
  int64_t lanes = t->vector_lanes;
  if (lanes > 1 && bn > lanes && bn % lanes == 0) {
    IterVar *xo, *xi;
    if (stage_split(st, x, c32(lanes), &xo, &xi)) return -1;
    return stage_unroll(st, xo) || stage_vectorize(st, xi) ? -1 : 0;
  }
  return x86_vec_or_unroll(t, st, x, bn);
}

/* Apply a split entity [-1, a, b, ...] as TVM's SplitEntity.apply: split
 * by the product of the inner parts, then the inner axis again. */
static int apply_split(Stage *st, IterVar *ax, int n, const int64_t *sz, IterVar **out) {
  for (int i = 1; i < n; i++) {
    int64_t f = 1;
    for (int j = i; j < n; j++) f *= sz[j];
    IterVar *o, *in;
    if (stage_split(st, ax, c32(f), &o, &in)) return -1;
    out[i - 1] = o;
    ax = in;
  }
  out[n - 1] = ax;
  return 0;
}

/* dense_pack's output tiling, which dense_pack_bf16.x86 shares: the group
 * inlined but the anchor c (and c too when the group's output is another
 * stage), a local accumulator of c computed at the fused (y1, x1) tile of
 * the output's nest [x0*y0 parallel, y1*x1, y2 unrolled, x2 vectorized by
 * bn], and its first reduction axis split by tk1.  *so is the stage
 * tiled (the output), *scc the accumulator's; *ko, *ki the reduction's
 * parts. */
void x86_dense_lowp_fallback(const Target *t, ConfigEntity *cfg, int64_t M, int64_t N, int64_t K, int64_t kgroup,
                             int64_t ymax, int64_t ymin) {
  int64_t KG = (K + kgroup - 1) / kgroup, x_ii = 1;
  for (int64_t bn = t->vector_lanes; bn >= 1; bn /= 2)
    if (N % bn == 0) {
      x_ii = bn;
      break;
    }
  int64_t y_ii = M < ymax ? M : ymax;
  for (int64_t r = ymax; r >= ymin && M > ymax; r--)
    if (M % r == 0) {
      y_ii = r;
      break;
    }
  int64_t k_ii = KG % 4 == 0 ? 4 : KG % 2 == 0 ? 2 : 1;
  int64_t blocks_y = (M + y_ii - 1) / y_ii, blocks_x = N / x_ii, x_oi = 1;
  while (x_oi < 8 && blocks_x % (x_oi * 2) == 0 && blocks_y * (blocks_x / (x_oi * 2)) >= 16) x_oi *= 2;
  config_set_split(cfg, "tile_y", 3, (int64_t[]){-1, 1, y_ii});
  config_set_split(cfg, "tile_x", 3, (int64_t[]){-1, x_oi, x_ii});
  config_set_split(cfg, "tile_k", 2, (int64_t[]){-1, k_ii});
  cfg->is_fallback = true;
}

int x86_dense_pack_tiling(const Target *t, Schedule *s, Tensor *c, int nout, Tensor **outs, const int64_t *ty,
                          const int64_t *tx, int64_t bn, int64_t tk1, Stage **so_out, Stage **scc_out, IterVar **ko,
                          IterVar **ki) {
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
  IterVar *ys[3], *xs[3], *xyt, *xyo;
  if (apply_split(so, stage_axis(so, 0), 3, ty, ys) || apply_split(so, stage_axis(so, 1), 3, tx, xs)) return -1;
  if (stage_reorder(so, 6, (IterVar *[]){xs[0], ys[0], ys[1], xs[1], ys[2], xs[2]})) return -1;
  if (stage_fuse(so, xs[0], ys[0], &xyt) || stage_parallel(so, xyt) || stage_fuse(so, ys[1], xs[1], &xyo)) return -1;
  if (stage_unroll(so, ys[2]) || x86_vec_cols(t, so, xs[2], bn)) return -1;
  if (stage_compute_at(scc, so, xyo)) return -1;
  if (stage_split(scc, stage_reduce_axis(scc, 0), c32(tk1), ko, ki)) return -1;
  *so_out = so, *scc_out = scc;
  return 0;
}

/* "prefetch_w" = d (dense_prefetch_pays): at each step ko of the
 * reduction, touch the packed weight's lines the same step of the block
 * d column groups ahead reads: [N/bn, K, bn] is row-major, so that is d x
 * x_oi x K / tk steps further on.  Spread over the row blocks: the
 * parallel axis (column groups outer, row blocks inner, fused) modulo
 * the row blocks is the row block's index.  A weight packed in the
 * function (not an argument) is not prefetched. */
static int dense_prefetch_w(Stage *scc, const ConfigEntity *cfg, Tensor *packw, IterVar *ko, IterVar *tasks,
                            const int64_t *ty, const int64_t *tx, int64_t tk, int64_t M) {
  int64_t pf;
  if (x86_prefetch_distance("dense_pack.x86", cfg, "prefetch_w", "column groups", &pf)) return -1;
  if (pf == 0 || packw->kind != TE_PLACEHOLDER) return 0;
  int64_t blocks_y = (M + ty[1] * ty[2] - 1) / (ty[1] * ty[2]);
  if (stage_prefetch(scc, packw, ko, c32(pf * tx[1] * te_dim(packw, 1) / tk), 3)) return -1;
  return blocks_y > 1 ? stage_prefetch_spread(scc, ko, tasks, blocks_y) : 0;
}

int topi_x86_schedule_dense_pack(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *c, int nout, Tensor **outs) {
  if (!s || !c) return -1;
  if (!c->tag || strcmp(c->tag, "dense_pack"))
    return kiln_set_error("dense_pack.x86 schedule: anchor '%s' has tag '%s', expected dense_pack", c->name,
                          c->tag ? c->tag : "");
  Tensor *packw = NULL;
  for (int i = 0; i < c->ninputs; i++)
    if (c->inputs[i]->ndim == 3) packw = c->inputs[i];
  if (!packw) return kiln_set_error("dense_pack.x86 schedule: '%s' reads no packed weight", c->name);
  int64_t M = te_dim(c, 0), N = te_dim(c, 1), bn = te_dim(packw, 2);
  int ny, nx, nk, ni;
  const int64_t *ty = cfg_split(cfg, "tile_y", &ny), *tx = cfg_split(cfg, "tile_x", &nx);
  const int64_t *tk = cfg_split(cfg, "tile_k", &nk), *tin = cfg_split(cfg, "tile_inner", &ni);
  if (!ty || !tx || !tk || !tin) return kiln_error_context("dense_pack.x86");
  if (ny != 3 || nx != 3 || nk != 2 || ni != 2)
    return kiln_set_error("dense_pack.x86: tile_y and tile_x need 3 parts, tile_k and tile_inner 2");
  if (tx[2] != bn)
    return kiln_set_error("dense_pack.x86: config knob 'tile_x' inner part %lld does not match the packed weight's block "
                          "%lld",
                          (long long)tx[2], (long long)bn);
  if (N % (tx[1] * tx[2]) || te_dim(packw, 1) % tk[1])
    return kiln_set_error("dense_pack.x86: tiles %lld x %lld (k %lld) must divide %lld x %lld (K %lld)",
                          (long long)(ty[1] * ty[2]), (long long)(tx[1] * tx[2]), (long long)tk[1], (long long)M,
                          (long long)N, (long long)te_dim(packw, 1));
  int64_t tile_inner = tin[1]; /* splits the block's rows (a tail when it does not divide, as in TVM) */

  Stage *so, *scc;
  IterVar *ko, *ki;
  if (x86_dense_pack_tiling(t, s, c, nout, outs, ty, tx, bn, tk[1], &so, &scc, &ko, &ki)) return -1;
  IterVar *y = stage_axis(scc, 0), *x = stage_axis(scc, 1);
  if (tile_inner > 1) {
    IterVar *yo, *yi;
    if (stage_split(scc, y, c32(tile_inner), &yo, &yi) || stage_reorder(scc, 5, (IterVar *[]){ko, yo, ki, yi, x}) ||
        stage_unroll(scc, yo) || stage_unroll(scc, ki) || stage_unroll(scc, yi))
      return -1;
  } else {
    if (stage_reorder(scc, 4, (IterVar *[]){ko, ki, y, x}) || stage_unroll(scc, ki) || stage_unroll(scc, y)) return -1;
  }
  if (dense_prefetch_w(scc, cfg, packw, ko, so->leaf_iters.data[0], ty, tx, tk[1], M)) return -1;
  if (x86_vec_cols(t, scc, x, bn)) return -1; /* last: it may split x */
  if (packw->kind == TE_COMPUTE) { /* packed in the function: parallel over blocks */
    Stage *sp = sch_stage(s, packw);
    if (!sp || stage_parallel(sp, stage_axis(sp, 0)) || x86_vec_or_unroll(t, sp, stage_axis(sp, 2), bn)) return -1;
  }
  return x86_schedule_others(s, so, c, (int)bn);
}
