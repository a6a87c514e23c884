/*
 * cuda/winograd.c - the config space of TVM's CUDA Winograd conv2d
 * template (topi/cuda/conv2d_winograd.py, TopHub task "topi_nn_conv2d"
 * with template key "winograd"), knobs in its order:
 *
 *   tile_b    4-way split of alpha * alpha (the transformed tile's
 *             elements), filtered to [-1, 1, 1, 1] as TVM does
 *   tile_y    4-way split of the output channels (CO)
 *   tile_x    4-way split of P = N * ceil(OH / m) * ceil(OW / m), the
 *             number of m x m output tiles
 *   tile_rc   2-way split of the input channels
 *   auto_unroll_max_step  0, 128, 1500
 *   unroll_explicit       0, 1
 *
 * m, the output tile, is TVM's _infer_tile_size: 4 when the input height
 * is a multiple of 8, else 2; alpha = m + 3 - 1.  The workload is the
 * plain conv2d's (TopHub keys Winograd records by the untransformed
 * convolution).
 *
 * Only the space is here: Kiln has no Winograd schedule for GPUs yet.  A
 * record of this template is listed, indexed and checked like any other;
 * a compile that finds one takes the direct template's fallback config
 * for that convolution instead (op_strategy.c says so in a warning).
 */
#include "../../knob/knob.h"
#include "../topi.h"

int64_t topi_cuda_winograd_tile_size(int64_t in_height) { return in_height % 8 == 0 ? 4 : 2; }

static bool tile_b_filter(const int64_t *sizes, int n, void *ud) {
  (void)ud;
  return n == 4 && sizes[1] == 1 && sizes[2] == 1 && sizes[3] == 1;
}

typedef struct WinoDims {
  int64_t alpha, m, P, CO, CI;
} WinoDims;

static int wino_dims(const Workload *wl, WinoDims *w) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (c.depthwise || c.KH != 3 || c.KW != 3 || c.sh != 1 || c.sw != 1 || c.dh != 1 || c.dw != 1)
    return kiln_set_error("topi_nn_conv2d (winograd): the workload is not a 3x3 stride-1 undilated convolution");
  w->m = topi_cuda_winograd_tile_size(c.IH);
  w->alpha = w->m + c.KW - 1;
  w->P = c.N * ((c.OH + w->m - 1) / w->m) * ((c.OW + w->m - 1) / w->m);
  w->CO = c.OC, w->CI = c.IC;
  return 0;
}

static int wino_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  WinoDims w;
  if (wino_dims(wl, &w)) return -1;
  SplitOpts b = {.nparts = 4, .filter = tile_b_filter}, four = {.nparts = 4}, two = {.nparts = 2};
  if (space_define_split(cs, "tile_b", w.alpha * w.alpha, &b) || space_define_split(cs, "tile_y", w.CO, &four) ||
      space_define_split(cs, "tile_x", w.P, &four) || space_define_split(cs, "tile_rc", w.CI, &two))
    return -1;
  return cuda_define_unroll_knobs(cs, 128);
}

static int wino_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  WinoDims w;
  if (wino_dims(wl, &w)) return -1;
  int64_t limit = cuda_max_threads(t);
  int64_t tx = cuda_divisor_at_most(w.P, 16), ty = cuda_divisor_at_most(w.CO, limit / tx < 8 ? limit / tx : 8);
  config_set_split(cfg, "tile_b", 4, (int64_t[]){-1, 1, 1, 1});
  config_set_split(cfg, "tile_y", 4, (int64_t[]){-1, 1, ty, 1});
  config_set_split(cfg, "tile_x", 4, (int64_t[]){-1, 1, tx, 1});
  config_set_split(cfg, "tile_rc", 2, (int64_t[]){-1, cuda_divisor_at_most(w.CI, 8)});
  config_set_other(cfg, "auto_unroll_max_step", opt_int(128));
  config_set_other(cfg, "unroll_explicit", opt_int(1));
  return 0;
}

static int wino_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  WinoDims w;
  if (wino_dims(wl, &w)) return -1;
  if (cuda_check_split(cfg, "tile_b", 4, w.alpha * w.alpha, "transformed tile elements") ||
      cuda_check_split(cfg, "tile_y", 4, w.CO, "output channels") || cuda_check_split(cfg, "tile_x", 4, w.P, "tiles") ||
      cuda_check_split(cfg, "tile_rc", 2, w.CI, "input channels") || cuda_check_unroll_knobs(cfg, 128))
    return -1;
  return cuda_check_threads(t, cfg, 3, (const char *const[]){"tile_b", "tile_y", "tile_x"});
}

const Template topi_cuda_conv2d_winograd_template = {
    .name = "topi_nn_conv2d",
    .anchor_tag = "conv2d_nchw_winograd",
    .key = "gpu",
    .template_key = "winograd",
    .define_space = wino_space,
    .fallback = wino_fallback,
    .check = wino_check,
};
