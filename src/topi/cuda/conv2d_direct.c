/*
 * cuda/conv2d_direct.c - TVM's CUDA conv2d NCHW template (topi/cuda/
 * conv2d_direct.py, the TopHub task "topi_nn_conv2d" with template key
 * "direct"), with its knobs in its order so that a TopHub record's index
 * and entity mean the same config here:
 *
 *   tile_f, tile_y, tile_x   4-way splits of the output channels, rows and
 *                            columns: [block, vthread, thread, inner]
 *   tile_rc, tile_ry, tile_rx  2-way splits of the reduction axes
 *   auto_unroll_max_step     0, 512, 1500
 *   unroll_explicit          0, 1
 *
 * The schedule is TVM's: the output is tiled and bound to blockIdx.z/y/x
 * (the batch fused into z), vthread and threadIdx.z/y/x; each thread keeps
 * its fi x yi x xi outputs in a local accumulator computed at its thread
 * loop; the reduction runs rc.outer, ry.outer, rx.outer around the inner
 * parts, and at rx.outer the block's slice of the padded input and of the
 * kernel are fetched into shared memory by all its threads (cooperative
 * fetching: the fetch's axes fused and cut into tz, ty, tx parts).  The
 * unroll knobs are pragmas on an outer loop of extent 1 (TVM's
 * kernel_scope).  An elementwise epilogue of the fused group (bias, relu,
 * a residual add) is inlined into the output stage, which reads the local
 * accumulator.  Two departures from TVM: tile_ry splits ry and tile_rx rx
 * (TVM applies tile_rx to ry and tile_ry to rx, the same thing for the
 * square kernels of every TopHub record), and virtual threads run one
 * after another (src/lower/vthread.c), so each repeats its shared fetch.
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

static int direct_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  SplitOpts four = {.nparts = 4}, two = {.nparts = 2};
  if (space_define_split(cs, "tile_f", c.OC, &four) || space_define_split(cs, "tile_y", c.OH, &four) ||
      space_define_split(cs, "tile_x", c.OW, &four) || space_define_split(cs, "tile_rc", c.IC, &two) ||
      space_define_split(cs, "tile_ry", c.KH, &two) || space_define_split(cs, "tile_rx", c.KW, &two))
    return -1;
  return cuda_define_unroll_knobs(cs, 512);
}

int64_t cuda_divisor_at_most(int64_t n, int64_t cap) {
  int64_t best = 1;
  for (int64_t d = 1; d <= n && d <= cap; d++)
    if (n % d == 0) best = d;
  return best;
}

int64_t cuda_max_threads(const Target *t) {
  int64_t m = t && t->max_threads_per_block > 0 ? t->max_threads_per_block : 256;
  return m < 256 ? m : 256;
}

/* Kiln's default where no record covers the workload (TVM takes the
 * nearest TopHub record instead): 16 threads along x, 4 along y, up to 4
 * along f (fewer where the block limit or the extents say so), 2 outputs
 * per thread along f, the reduction in chunks of up to 8 channels with the
 * whole kernel window. */
static int direct_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  int64_t limit = cuda_max_threads(t);
  int64_t tx = cuda_divisor_at_most(c.OW, 16), ty = cuda_divisor_at_most(c.OH, limit / tx < 4 ? limit / tx : 4);
  int64_t tf = cuda_divisor_at_most(c.OC, limit / (tx * ty) < 4 ? limit / (tx * ty) : 4);
  int64_t fi = cuda_divisor_at_most(c.OC / tf, 2);
  config_set_split(cfg, "tile_f", 4, (int64_t[]){-1, 1, tf, fi});
  config_set_split(cfg, "tile_y", 4, (int64_t[]){-1, 1, ty, 1});
  config_set_split(cfg, "tile_x", 4, (int64_t[]){-1, 1, tx, 1});
  config_set_split(cfg, "tile_rc", 2, (int64_t[]){-1, cuda_divisor_at_most(c.IC, 8)});
  config_set_split(cfg, "tile_ry", 2, (int64_t[]){-1, c.KH});
  config_set_split(cfg, "tile_rx", 2, (int64_t[]){-1, c.KW});
  config_set_other(cfg, "auto_unroll_max_step", opt_int(512));
  config_set_other(cfg, "unroll_explicit", opt_int(1));
  return 0;
}

int cuda_check_threads(const Target *t, const ConfigEntity *cfg, int n, const char *const *knobs) {
  int64_t threads = cuda_threads_of(cfg, n, knobs);
  if (threads < 0) return -1;
  int64_t limit = t && t->max_threads_per_block > 0 ? t->max_threads_per_block : 1024;
  if (threads > limit)
    return kiln_set_error("the config asks for %lld threads per block, more than the target's %lld "
                          "(-max_threads_per_block=N raises the limit where the device allows it)",
                          (long long)threads, (long long)limit);
  return 0;
}

static int direct_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  if (c.depthwise) return kiln_set_error("topi_nn_conv2d (direct): '%s' is a depthwise workload", wl->name);
  if (cuda_check_split(cfg, "tile_f", 4, c.OC, "output channels") || cuda_check_split(cfg, "tile_y", 4, c.OH, "output rows") ||
      cuda_check_split(cfg, "tile_x", 4, c.OW, "output columns") ||
      cuda_check_split(cfg, "tile_rc", 2, c.IC, "input channels") ||
      cuda_check_split(cfg, "tile_ry", 2, c.KH, "kernel rows") || cuda_check_split(cfg, "tile_rx", 2, c.KW, "kernel columns") ||
      cuda_check_unroll_knobs(cfg, 512))
    return -1;
  return cuda_check_threads(t, cfg, 3, (const char *const[]){"tile_f", "tile_y", "tile_x"});
}

int cuda_conv_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t, (void)cfg;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return -1;
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 4, (int64_t[]){c.N, c.IC, c.IH, c.IW}, c.dtype);
  (*in)[1] = te_placeholder_c("kernel", 4, (int64_t[]){c.OC, c.depthwise ? 1 : c.IC, c.KH, c.KW}, c.dtype);
  return 0;
}

Tensor *cuda_conv_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  Conv2DWorkload c;
  if (wl_conv2d_parse(wl, &c)) return NULL;
  if (nin < 2) return kiln_set_error("%s: expected data and kernel", wl->name), NULL;
  int64_t st[2] = {c.sh, c.sw}, pad[4] = {c.pt, c.pl, c.pb, c.pr}, dil[2] = {c.dh, c.dw};
  if (c.depthwise) return topi_depthwise_conv2d_nchw(in[0], in[1], st, pad, dil);
  return topi_conv2d_nchw(in[0], in[1], st, pad, dil, 1);
}

int topi_cuda_schedule_conv2d_direct(const Target *t, Schedule *s, const ConfigEntity *cfg, Tensor *conv, int nout,
                                     Tensor **outs) {
  (void)t;
  if (!s || !conv) return -1;
  if (!conv->tag || strcmp(conv->tag, "conv2d_nchw") || conv->ninputs < 2)
    return kiln_set_error("topi_nn_conv2d (direct) schedule: anchor '%s' has tag '%s', expected conv2d_nchw",
                          conv->name, conv->tag ? conv->tag : "");
  Tensor *pad_data = conv->inputs[0], *kernel = conv->inputs[1];
  Tensor *output, *OL;
  if (cuda_group_epilogue(s, conv, nout ? outs[0] : conv, 0, NULL, &output, &OL)) return -1;
  Tensor *AA = sch_cache_read(s, pad_data, "shared", 1, &OL);
  Tensor *WW = AA ? sch_cache_read(s, kernel, "shared", 1, &OL) : NULL;
  if (!WW) return -1;

  Stage *so = sch_stage(s, output);
  IterVar *n = stage_axis(so, 0), *kscope, *f[4], *y[4], *x[4], *bf;
  if (stage_split_nparts(so, n, ir_i32(1), &kscope, &n) || cuda_apply_split(so, stage_axis(so, 1), cfg, "tile_f", 4, f) ||
      cuda_apply_split(so, stage_axis(so, 2), cfg, "tile_y", 4, y) ||
      cuda_apply_split(so, stage_axis(so, 3), cfg, "tile_x", 4, x) || stage_fuse(so, n, f[0], &bf))
    return -1;
  f[0] = bf;
  if (cuda_tile_bind(so, kscope, 3, (IterVar *const *const[]){f, y, x})) return -1;
  Stage *sl = sch_stage(s, OL);
  if (stage_compute_at(sl, so, x[2])) return -1;

  IterVar *rc[2], *ry[2], *rx[2];
  if (cuda_apply_split(sl, stage_reduce_axis(sl, 0), cfg, "tile_rc", 2, rc) ||
      cuda_apply_split(sl, stage_reduce_axis(sl, 1), cfg, "tile_ry", 2, ry) ||
      cuda_apply_split(sl, stage_reduce_axis(sl, 2), cfg, "tile_rx", 2, rx))
    return -1;
  IterVar *lorder[10] = {rc[0], ry[0], rx[0], rc[1], ry[1], rx[1], stage_axis(sl, 0), stage_axis(sl, 1),
                         stage_axis(sl, 2), stage_axis(sl, 3)};
  if (stage_reorder(sl, 10, lorder) || stage_compute_at(sch_stage(s, AA), sl, rx[0]) ||
      stage_compute_at(sch_stage(s, WW), sl, rx[0]))
    return -1;
  int64_t threads[3] = {cuda_split_part(cfg, "tile_f", 2), cuda_split_part(cfg, "tile_y", 2),
                        cuda_split_part(cfg, "tile_x", 2)};
  if (cuda_coop_fetch(s, AA, threads, true) || cuda_coop_fetch(s, WW, threads, true)) return -1;
  return cuda_unroll_pragmas(so, kscope, cfg);
}

const Template topi_cuda_conv2d_direct_template = {
    .name = "topi_nn_conv2d",
    .anchor_tag = "conv2d_nchw",
    .key = "gpu",
    .template_key = "direct",
    .define_space = direct_space,
    .fallback = direct_fallback,
    .check = direct_check,
    .placeholders = cuda_conv_placeholders,
    .compute = cuda_conv_compute,
    .schedule = topi_cuda_schedule_conv2d_direct,
};
