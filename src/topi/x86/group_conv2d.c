/*
 * x86/group_conv2d.c - group_conv2d_NCHWc.x86: grouped convolution (groups
 * > 1, not depthwise: ResNeXt's, RegNet's, ShuffleNet v1's) in the NCHW[x]c
 * layout, tunable with TVM's knobs for group_conv2d_nchw.x86 (tile_ic,
 * tile_oc, tile_ow, unroll_kw).
 *
 * Per-group channel blocking: every channel block lies inside one group.
 * The input block ic_bn divides CPG = IC / groups and the output block
 * oc_bn divides KPG = OC / groups, so the data keeps the plain NCHW[ic_bn]c
 * layout (a grouped conv's input and output flow through alter_layout like
 * any other conv's) and the kernel [OC, CPG, KH, KW] packs to
 * OIHW[ic_bn]i[oc_bn]o = [OC/oc_bn, CPG/ic_bn, KH, KW, ic_bn, oc_bn]:
 * output chunk occ, of group g = occ / (KPG/oc_bn), reduces over the
 * CPG/ic_bn input chunks g * CPG/ic_bn + ic.  The compute is conv2d.c's
 * with groups (x86_conv2d_NCHWc_compute) and so is the schedule: the
 * register block of tile_ow columns x oc_bn channels, the epilogue inlined.
 *
 * Where this departs from TVM: TVM's group_conv2d_nchw.x86 splits tile_ic
 * and tile_oc over all channels and packs NCHW to [N, G, CPG/ic_bn, H, W,
 * ic_bn] inside the kernel; a block that does not divide the per-group
 * channels then builds a wrong shape.  Here the two splits range over one
 * group's channels, so every point of the space is valid, and the data stays
 * NCHW[x]c between layers (no pack/unpack around each grouped conv).  The
 * workload is wl_group_conv2d's (knob.h).
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

Tensor *topi_x86_group_conv2d_NCHWc(Tensor *data, Tensor *kernel, const int strides[2], const int padding[4],
                                    const int dilation[2], int64_t groups, DType out_dtype) {
  return x86_conv2d_NCHWc_compute("group_conv2d_NCHWc", data, kernel, strides, padding, dilation, groups, out_dtype);
}

/* The workload, which must be a grouped one. */
static int parse(const Workload *wl, Conv2DWorkload *c) {
  if (wl_conv2d_parse(wl, c)) return -1;
  if (c->depthwise || c->groups < 2)
    return kiln_set_error("group_conv2d_NCHWc.x86: workload '%s' has groups = %lld; this task is for grouped "
                          "convolutions (plain ones are conv2d_NCHWc.x86, depthwise ones depthwise_conv2d_NCHWc.x86)",
                          wl->name, (long long)c->groups);
  return 0;
}

static bool ow_filter(const int64_t *sizes, int n, void *ud) {
  (void)ud;
  return sizes[n - 1] <= 64;
}

static int gconv_space(const Target *t, ConfigSpace *cs, const Workload *wl) {
  (void)t;
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  SplitOpts ow = {.filter = ow_filter};
  if (space_define_split(cs, "tile_ic", c.IC / c.groups, NULL) ||
      space_define_split(cs, "tile_oc", c.OC / c.groups, NULL) || space_define_split(cs, "tile_ow", c.OW, &ow))
    return -1;
  return space_define_knob(cs, "unroll_kw", 2, (OptVal[]){opt_bool(true), opt_bool(false)});
}

/* conv2d_NCHWc's heuristic inside one group: the widest power-of-two
 * output block up to the vector width, an input block no wider, as many
 * output columns as the registers hold. */
static int gconv_fallback(const Target *t, ConfigEntity *cfg, const Workload *wl) {
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  int64_t oc_bn = x86_channel_block(c.OC / c.groups, t->vector_lanes);
  int64_t ic_bn = x86_largest_divisor(c.IC / c.groups, oc_bn);
  config_set_split(cfg, "tile_ic", 2, (int64_t[]){-1, ic_bn});
  config_set_split(cfg, "tile_oc", 2, (int64_t[]){-1, oc_bn});
  config_set_split(cfg, "tile_ow", 2, (int64_t[]){-1, x86_conv_block_cols(c.OW, x86_reg_budget(t))});
  config_set_other(cfg, "unroll_kw", opt_bool(false));
  cfg->is_fallback = true;
  return 0;
}

static int gconv_check(const Target *t, const ConfigEntity *cfg, const Workload *wl) {
  (void)t;
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  if (x86_check_split(cfg, "tile_ic", 2, c.IC / c.groups, "input channels of a group", true) ||
      x86_check_split(cfg, "tile_oc", 2, c.OC / c.groups, "output channels of a group", true) ||
      x86_check_split(cfg, "tile_ow", 2, c.OW, "output columns", false)) /* a tail is guarded */
    return kiln_error_context("%s", wl->name);
  if (!config_get(cfg, "unroll_kw") || config_get(cfg, "unroll_kw")->kind != KNOB_OTHER)
    return kiln_set_error("%s: config has no 'unroll_kw' option", wl->name);
  return 0;
}

static Tensor *gconv_compute(const Target *t, const Workload *wl, const ConfigEntity *cfg, int nin, Tensor **in) {
  (void)t, (void)cfg;
  Conv2DWorkload c;
  if (parse(wl, &c)) return NULL;
  if (nin != 2) return kiln_set_error("%s: compute takes data and kernel, got %d inputs", wl->name, nin), NULL;
  return topi_x86_group_conv2d_NCHWc(in[0], in[1], (int[]){c.sh, c.sw}, (int[]){c.pt, c.pl, c.pb, c.pr},
                                     (int[]){c.dh, c.dw}, c.groups, c.out_dtype);
}

/* data NCHW[ic_bn]c, kernel OIHW[ic_bn]i[oc_bn]o of [OC, IC/groups, KH, KW] */
static int gconv_placeholders(const Target *t, const Workload *wl, const ConfigEntity *cfg, int *nin, Tensor ***in) {
  (void)t;
  Conv2DWorkload c;
  if (parse(wl, &c)) return -1;
  int64_t ic_bn = cfg_split_inner(cfg, "tile_ic"), oc_bn = cfg_split_inner(cfg, "tile_oc");
  if (ic_bn < 1 || oc_bn < 1) return kiln_error_context("%s", wl->name);
  *nin = 2;
  *in = KNEWN(Tensor *, 2);
  (*in)[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, c.IC / ic_bn, c.IH, c.IW, ic_bn}, c.dtype);
  (*in)[1] = te_placeholder_c("kernel", 6,
                              (int64_t[]){c.OC / oc_bn, c.IC / c.groups / ic_bn, c.KH, c.KW, ic_bn, oc_bn}, c.dtype);
  return 0;
}

const Template topi_x86_group_conv2d_NCHWc_template = {
    .name = "group_conv2d_NCHWc.x86", .anchor_tag = "group_conv2d_NCHWc", .key = "cpu",
    .define_space = gconv_space, .fallback = gconv_fallback, .check = gconv_check,
    .placeholders = gconv_placeholders, .compute = gconv_compute, .schedule = topi_x86_schedule_conv2d_NCHWc,
};
