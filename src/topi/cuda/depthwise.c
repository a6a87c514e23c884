/*
 * cuda/depthwise.c - TVM's CUDA depthwise conv2d NCHW template
 * (topi/cuda/depthwise_conv2d.py, TopHub task
 * "topi_nn_depthwise_conv2d_nchw"), knobs in its order:
 *
 *   tile_f, tile_y, tile_x   4-way splits of the output channels, rows and
 *                            columns: [block, vthread, thread, inner]
 *   auto_unroll_max_step     0, 256, 1500
 *   unroll_explicit          0, 1
 *
 * TVM's schedule: the output tiled and bound as in the direct conv2d
 * template; the block's slice of the padded input and of the kernel are
 * fetched into shared memory once per block (at blockIdx.x, cooperative
 * fetching with tx, ty, tz factor splits from the inside), each thread
 * copies what it reads into local memory and accumulates its outputs in a
 * local buffer; an elementwise epilogue is inlined into the output stage.
 * The kernel is [C * multiplier, 1, KH, KW] here and [C, multiplier, KH,
 * KW] in TVM's workload: the same bytes.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static int dw_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  SplitOpts four = {.nparts = 4};
  if (space_define_split(cs, "tile_f", c.OC, &four) || space_define_split(cs, "tile_y", c.OH, &four) ||
      space_define_split(cs, "tile_x", c.OW, &four))
    return -1;
  return cuda_define_unroll_knobs(cs, 256);
}

/* Kiln's default: 16 threads along x, 4 along y, up to 4 along f. */
static int dw_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t limit = cuda_max_threads(t);
  int64_t tx = cuda_divisor_at_most(c.OW, 16), ty = cuda_divisor_at_most(c.OH, limit / tx < 4 ? limit / tx : 4);
  int64_t tf = cuda_divisor_at_most(c.OC, limit / (tx * ty) < 4 ? limit / (tx * ty) : 4);
  config_set_split(cfg, "tile_f", 4, (int64_t[]){-1, 1, tf, 1});
  config_set_split(cfg, "tile_y", 4, (int64_t[]){-1, 1, ty, 1});
  config_set_split(cfg, "tile_x", 4, (int64_t[]){-1, 1, tx, 1});
  config_set_other(cfg, "auto_unroll_max_step", opt_int(256));
  config_set_other(cfg, "unroll_explicit", opt_int(1));
  return 0;
}

static int dw_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (!c.depthwise) return kiln_set_error("topi_nn_depthwise_conv2d_nchw: '%s' is not a depthwise workload", wl->name);
  if (cuda_check_split(cfg, "tile_f", 4, c.OC, "output channels") || cuda_check_split(cfg, "tile_y", 4, c.OH, "output rows") ||
      cuda_check_split(cfg, "tile_x", 4, c.OW, "output columns") || cuda_check_unroll_knobs(cfg, 256))
    return -1;
  return cuda_check_threads(t, cfg, 3, (const char *const[]){"tile_f", "tile_y", "tile_x"});
}

int topi_cuda_schedule_depthwise_conv2d(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *conv, int nout,
                                        Tensor **outs) {
  (void)t;
  if (!s || !conv) return -1;
  if (!conv->tag || strcmp(conv->tag, "depthwise_conv2d_nchw") || conv->ninputs < 2)
    return kiln_set_error("topi_nn_depthwise_conv2d_nchw schedule: anchor '%s' has tag '%s', expected "
                          "depthwise_conv2d_nchw",
                          conv->name, conv->tag ? conv->tag : "");
  Tensor *pad_data = conv->inputs[0], *kernel = conv->inputs[1];
  Tensor *output, *OL;
  if (cuda_group_epilogue(s, conv, nout ? outs[0] : conv, 0, NULL, &output, &OL)) return -1;
  Tensor *AA = sch_cache_read(s, pad_data, "shared", 1, &OL);
  Tensor *WW = AA ? sch_cache_read(s, kernel, "shared", 1, &OL) : NULL;
  Tensor *AL = WW ? sch_cache_read(s, AA, "local", 1, &OL) : NULL;
  Tensor *WL = AL ? sch_cache_read(s, WW, "local", 1, &OL) : NULL;
  if (!WL) return -1;

  Stage *so = sch_stage(s, output);
  IterVar *f[4], *y[4], *x[4], *kscope, *n, *bf;
  if (cuda_apply_split(so, stage_axis(so, 1), cfg, "tile_f", 4, f) ||
      cuda_apply_split(so, stage_axis(so, 2), cfg, "tile_y", 4, y) ||
      cuda_apply_split(so, stage_axis(so, 3), cfg, "tile_x", 4, x) ||
      stage_split_nparts(so, stage_axis(so, 0), ir_i32(1), &kscope, &n) || stage_fuse(so, n, f[0], &bf))
    return -1;
  f[0] = bf;
  if (cuda_tile_bind(so, kscope, 3, (IterVar *const *const[]){f, y, x})) return -1;
  if (stage_compute_at(sch_stage(s, OL), so, x[2]) || stage_compute_at(sch_stage(s, AA), so, x[0]) ||
      stage_compute_at(sch_stage(s, WW), so, x[0]) || stage_compute_at(sch_stage(s, AL), so, x[2]) ||
      stage_compute_at(sch_stage(s, WL), so, x[2]))
    return -1;
  int64_t threads[3] = {cuda_split_part(cfg, "tile_f", 2), cuda_split_part(cfg, "tile_y", 2),
                        cuda_split_part(cfg, "tile_x", 2)};
  if (cuda_coop_fetch(s, AA, threads, false) || cuda_coop_fetch(s, WW, threads, false)) return -1;
  return cuda_unroll_pragmas(so, kscope, cfg);
}

const Template topi_cuda_depthwise_conv2d_template = {
    .name = "topi_nn_depthwise_conv2d_nchw",
    .anchor_tag = "depthwise_conv2d_nchw",
    .key = "gpu",
    .template_key = "direct",
    .define_space = dw_space,
    .fallback = dw_fallback,
    .check = dw_check,
    .placeholders = cuda_conv_placeholders,
    .compute = cuda_conv_compute,
    .schedule = topi_cuda_schedule_depthwise_conv2d,
};
