/*
 * cuda/dense.c - TVM's CUDA dense template (topi/cuda/dense.py, TopHub
 * task "topi_nn_dense", template key "direct"), whose space depends on the
 * batch as TVM's does:
 *
 *   batch < 32 (TVM's schedule_dense_small_batch):
 *     tile_k    2-way split of the reduction
 *   batch >= 32 (schedule_dense_large_batch; the seeds' records use the
 *   space without TVM's pruning filter, which TVM drops when it leaves no
 *   choice):
 *     tile_x    4-way split of the batch:  [block, vthread, thread, inner]
 *     tile_y    4-way split of the outputs: the same
 *     tile_k    3-way split of the reduction: [outer, unrolled, inner]
 *
 * Large batch is TVM's schedule: the output tiled and bound (blockIdx.y/x,
 * vthread, threadIdx.y/x), a local accumulator per thread, the block's
 * slices of data and weight fetched into shared memory at k.outer by all
 * its threads and copied to local memory at k.middle.  Small batch differs
 * from TVM's: TVM cuts K with rfactor and sums the tile_k[1] partial sums
 * across the threads of a block (a cross-thread reduction), which Kiln's
 * lowering does not have; here a block computes one row of the batch for
 * a group of output columns, one column per thread, and walks K in chunks
 * of tile_k[1], fetching each chunk of the data row into shared memory
 * with all the block's threads.  The knob keeps TVM's meaning (the chunk
 * of K); the record's config applies, the kernel is not TVM's.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static int dense_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  if (d.M < 32) return space_define_split(cs, "tile_k", d.K, &(SplitOpts){.nparts = 2});
  SplitOpts four = {.nparts = 4};
  if (space_define_split(cs, "tile_x", d.M, &four) || space_define_split(cs, "tile_y", d.N, &four)) return -1;
  return space_define_split(cs, "tile_k", d.K, &(SplitOpts){.nparts = 3});
}

/* TVM's fallback for small batch (tile_k [-1, 64]); for large batch
 * Kiln's: 8 x 8 threads of 2 x 2 outputs, K in chunks of 8. */
static int dense_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  (void)t;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  if (d.M < 32) {
    config_set_split(cfg, "tile_k", 2, (int64_t[]){-1, cuda_divisor_at_most(d.K, 64)});
    return 0;
  }
  int64_t tx = cuda_divisor_at_most(d.M, 8), ty = cuda_divisor_at_most(d.N, 8);
  config_set_split(cfg, "tile_x", 4, (int64_t[]){-1, 1, tx, cuda_divisor_at_most(d.M / tx, 2)});
  config_set_split(cfg, "tile_y", 4, (int64_t[]){-1, 1, ty, cuda_divisor_at_most(d.N / ty, 2)});
  config_set_split(cfg, "tile_k", 3, (int64_t[]){-1, 1, cuda_divisor_at_most(d.K, 8)});
  return 0;
}

static int dense_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  if (d.M < 32) return cuda_check_split(cfg, "tile_k", 2, d.K, "reduction elements");
  if (cuda_check_split(cfg, "tile_x", 4, d.M, "batch rows") || cuda_check_split(cfg, "tile_y", 4, d.N, "output columns") ||
      cuda_check_split(cfg, "tile_k", 3, d.K, "reduction elements"))
    return -1;
  return cuda_check_threads(t, cfg, 2, (const char *const[]){"tile_x", "tile_y"});
}

static int dense_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t, (void)cfg;
  DenseWorkload d;
  if (wl_dense_parse(wl, &d)) return -1;
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 2, (int64_t[]){d.M, d.K}, d.dtype);
  (*in)[1] = te_placeholder_c("weight", 2, (int64_t[]){d.N, d.K}, d.dtype);
  return 0;
}

Tensor *topi_cuda_dense(Tensor *data, Tensor *weight) {
  int64_t ds[2], ws[2];
  if (!data || !weight) return NULL;
  if (data->ndim != 2 || weight->ndim != 2 || !te_shape_const(data, ds) || !te_shape_const(weight, ws) || ds[1] != ws[1])
    return kiln_set_error("topi_nn_dense: expected data [M, K] and weight [N, K] with constant shapes"), NULL;
  IterVar *k = te_reduce_axis_c(ds[1], "k");
  Expr **v = te_axis_vars(2, (const char *[]){"i", "j"});
  Expr *src = ir_mul(te_read2(data, v[0], k->var), te_read2(weight, v[1], k->var));
  Expr *shape[2] = {ir_i32(ds[0]), ir_i32(ws[0])};
  return te_compute("T_dense", 2, shape, v, ir_sum(src, 1, &k), "dense");
}

static Tensor *dense_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  if (nin < 2) return kiln_set_error("%s: expected data and weight", wl->name), NULL;
  return topi_cuda_dense(in[0], in[1]);
}

static int small_batch(Schedule *s, const ConfigEntity *cfg, Tensor *output, Tensor *OL, Tensor *data, const Target *t) {
  Stage *so = sch_stage(s, output), *sl = sch_stage(s, OL);
  int64_t N = te_dim(output, 1);
  int64_t threads = cuda_divisor_at_most(N, cuda_max_threads(t) < 64 ? cuda_max_threads(t) : 64);
  IterVar *bx, *tx, *k[2];
  if (stage_split(so, stage_axis(so, 1), ir_i32(threads), &bx, &tx) || stage_bind(so, stage_axis(so, 0), "blockIdx.y") ||
      stage_bind(so, bx, "blockIdx.x") || stage_bind(so, tx, "threadIdx.x") || stage_compute_at(sl, so, tx) ||
      cuda_apply_split(sl, stage_reduce_axis(sl, 0), cfg, "tile_k", 2, k))
    return -1;
  Tensor *AA = sch_cache_read(s, data, "shared", 1, &OL);
  if (!AA || stage_reorder(sl, 4, (IterVar *[]){k[0], k[1], stage_axis(sl, 0), stage_axis(sl, 1)}) ||
      stage_compute_at(sch_stage(s, AA), sl, k[0]))
    return -1;
  return cuda_coop_fetch(s, AA, (int64_t[]){1, 1, threads}, true);
}

static int large_batch(Schedule *s, const ConfigEntity *cfg, Tensor *output, Tensor *OL, Tensor *data, Tensor *weight) {
  Tensor *AA = sch_cache_read(s, data, "shared", 1, &OL);
  Tensor *BB = AA ? sch_cache_read(s, weight, "shared", 1, &OL) : NULL;
  Tensor *AL = BB ? sch_cache_read(s, AA, "local", 1, &OL) : NULL;
  Tensor *BL = AL ? sch_cache_read(s, BB, "local", 1, &OL) : NULL;
  if (!BL) return -1;
  Stage *so = sch_stage(s, output), *sl = sch_stage(s, OL);
  IterVar *x[4], *y[4], *k[3];
  if (cuda_apply_split(so, stage_axis(so, 0), cfg, "tile_x", 4, x) ||
      cuda_apply_split(so, stage_axis(so, 1), cfg, "tile_y", 4, y))
    return -1;
  if (cuda_tile_bind(so, NULL, 2, (IterVar *const *const[]){y, x}) || stage_compute_at(sl, so, x[2])) return -1;
  if (cuda_apply_split(sl, stage_reduce_axis(sl, 0), cfg, "tile_k", 3, k) ||
      stage_reorder(sl, 5, (IterVar *[]){k[0], k[1], k[2], stage_axis(sl, 0), stage_axis(sl, 1)}) ||
      stage_compute_at(sch_stage(s, AA), sl, k[0]) || stage_compute_at(sch_stage(s, BB), sl, k[0]) ||
      stage_unroll(sl, k[1]) || stage_compute_at(sch_stage(s, AL), sl, k[1]) ||
      stage_compute_at(sch_stage(s, BL), sl, k[1]))
    return -1;
  int64_t threads[3] = {1, cuda_split_part(cfg, "tile_y", 2), cuda_split_part(cfg, "tile_x", 2)};
  if (cuda_coop_fetch(s, AA, threads, true)) return -1;
  return cuda_coop_fetch(s, BB, threads, true);
}

int topi_cuda_schedule_dense(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *c, int nout, Tensor **outs) {
  if (!s || !c) return -1;
  if (!c->tag || strcmp(c->tag, "dense") || c->ninputs < 2)
    return kiln_set_error("topi_nn_dense schedule: anchor '%s' has tag '%s', expected dense", c->name,
                          c->tag ? c->tag : "");
  Tensor *data = c->inputs[0], *weight = c->inputs[1];
  Tensor *output, *OL;
  if (cuda_group_epilogue(s, c, nout ? outs[0] : c, 0, NULL, &output, &OL)) return -1;
  if (te_dim(c, 0) < 32) return small_batch(s, cfg, output, OL, data, t);
  return large_batch(s, cfg, output, OL, data, weight);
}

const Template topi_cuda_dense_template = {
    .name = "topi_nn_dense",
    .anchor_tag = "dense",
    .key = "gpu",
    .template_key = "direct",
    .define_space = dense_space,
    .fallback = dense_fallback,
    .check = dense_check,
    .placeholders = dense_placeholders,
    .compute = dense_compute,
    .schedule = topi_cuda_schedule_dense,
};
