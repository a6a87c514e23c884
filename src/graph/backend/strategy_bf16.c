/*
 * strategy_bf16.c - the strategies of `--precision bf16` (docs/bf16.md):
 * which bfloat16 template a layer takes, with which config.  alter_layout
 * asks graph_dense_bf16_config for the block of the weight it packs and
 * records the config on the node it makes; strategy_dense_bf16 reads it
 * back.
 */
#include <math.h>
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "strategy.h"

#define DENSE_BF16_TASK "dense_pack_bf16.x86"
#define CONV_BF16_TASK "conv2d_NCHWc_bf16.x86"

static int dense_bf16_task(GNode *n, int64_t M, int64_t N, int64_t K, const Target *t, DispatchContext *dc, Strategy *st) {
  Workload *wl = wl_dense(DENSE_BF16_TASK, M, N, K, "float32", "float32");
  return graph_task_fill(n, wl, kfmt("[(%lld,%lld),(%lld,%lld)] bf16", (long long)M, (long long)K, (long long)N, (long long)K),
                         t, dc, st);
}

int graph_dense_bf16_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  const TType *d = &n->args[0]->type, *w = &n->args[1]->type;
  if (!dt_eq(d->dtype, DT_F32) || !dt_eq(w->dtype, DT_F32) || d->ndim != 2 || w->ndim != 2) return 0;
  return dense_bf16_task(n, d->shape[0], w->shape[0], w->shape[1], t, dc, st);
}

int strategy_dense_bf16(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  const TType *d = &n->args[0]->type, *w = &n->args[1]->type;
  return dense_bf16_task(n, d->shape[0], w->shape[0] * w->shape[2], d->shape[1], t, dc, st);
}

/* The bfloat16 conv's workload: conv2d_NCHWc.x86's arguments (data and
 * kernel NCHW/OIHW, strides, padding, dilation) under its own name. */
static Workload *conv_bf16_workload(const int64_t d[4], const int64_t k[4], GNode *n) {
  int st[2], pad[4], dl[2];
  strategy_attr_ints2(n, "strides", 1, st);
  strategy_attr_ints2(n, "dilation", 1, dl);
  strategy_attr_pads4(n, pad);
  return wl_conv2d(CONV_BF16_TASK, d, k, st, pad, dl, "float32", "float32");
}

static int conv_bf16_task(GNode *n, Workload *wl, const Target *t, DispatchContext *dc, const Strategy *fp32,
                          Strategy *st) {
  memset(st, 0, sizeof *st);
  const Template *tm = template_lookup(wl->name);
  if (!tm) return -1;
  if (!template_serves(tm, t)) return 0;
  ConfigEntity *c = NULL;
  const char *src = NULL;
  if (n->config) {
    if (graph_task_config(n, t, dc, tm, wl, st)) return -1;
  } else if (graph_dispatch_query(dc, t, wl, &c, &src) == 0 && c && tm->check(t, c, wl) == 0) {
    st->config = c, st->config_source = src;
  } else if (fp32 && fp32->config && fp32->tmpl == &topi_x86_conv2d_NCHWc_template &&
             (c = config_from_json(config_json(fp32->config))) &&
             topi_x86_conv_bf16_from_float32(t, c, wl, !fp32->config->is_fallback) == 0 && tm->check(t, c, wl) == 0) {
    /* no bfloat16 record: the float32 layer's config (the same knobs, and
     * bf16_dot and occ_inner as the fallback's), which keeps the blocks
     * the float32 layers around it chose */
    c->index = -1; /* a point of the bfloat16 space, but not numbered in it */
    st->config = c;
    st->config_source = kfmt("%s, as float32", fp32->config_source ? fp32->config_source : "fallback");
  } else {
    if (!(st->config = template_fallback(tm, t, wl))) return -1;
    st->config_source = "fallback";
    graph_dispatch_note_fallback(dc, t, wl);
  }
  st->task_name = wl->name;
  st->tmpl = tm;
  st->wl = wl;
  st->target = t;
  return 0;
}

/* How much faster than the direct float32 kernel a Winograd layer with an
 * OH x OW output runs (fallback configs): F(m x m, 3 x 3) does
 * 9 m^2 / (m + 2)^2 fewer multiply-adds (4 for m = 4), and reaches that
 * only with enough tiles per image, each transformed weight serving one
 * GEMM row per tile - below WINO_FULL_TILES tiles the gain shrinks in
 * proportion.  Measured (bench_conv2d --layer resnet50.3x3, Zen 5, load
 * 7): 2.4-2.6x at 56 x 56 (196 tiles), 2.7x at 28 x 28 (49), 0.96x at
 * 14 x 14 (16); the estimate gives 4, 3.1 and 1.0.  A bfloat16 direct
 * kernel runs at up to bf16_dot_rate times the float32 one (1.5-1.9x on
 * the same layers); conv2d_NCHWc_winograd_bf16.x86 (m = 2) at about both
 * gains, its GEMM's multiply-adds bf16_dot_rate times as fast. */
#define WINO_FULL_TILES 64

/* A layer float32 runs as Winograd with fewer than BF16_WINO_MIN_CHANNELS
 * channels on either side (src/graph/backend/strategy.c takes it from 16)
 * runs the bfloat16 direct kernel without records: the estimate above
 * misjudges so few channels.  SqueezeNet-1.1's two 3x3 16->64 @55, 1
 * thread, per-node minima of 8 alternating profiles (load 2), both
 * together: bfloat16 direct 250 us, bfloat16 Winograd F(2x2) 281, float32
 * Winograd 315 (float32 direct 496). */
#define BF16_WINO_MIN_CHANNELS 32

static double winograd_gain(int64_t m, int64_t OH, int64_t OW) {
  double tiles = (double)((OH + m - 1) / m) * (double)((OW + m - 1) / m);
  double saving = 9.0 * (double)(m * m) / (double)((m + 2) * (m + 2));
  return tiles < WINO_FULL_TILES ? saving * tiles / WINO_FULL_TILES : saving;
}

/* The bfloat16 Winograd task's workload: the conv's arguments (NCHW/OIHW,
 * padding; stride and dilation 1). */
static Workload *wino_bf16_workload(const int64_t d[4], const int64_t k[4], GNode *n) {
  int pad[4];
  strategy_attr_pads4(n, pad);
  return wl_conv2d(GRAPH_WINOGRAD_BF16_TASK, d, k, (int[]){1, 1}, pad, (int[]){1, 1}, "float32", "float32");
}

int graph_conv_bf16_config(GNode *n, const int64_t *ch, const Strategy *fp32, const Target *t, DispatchContext *dc,
                           Strategy *st) {
  memset(st, 0, sizeof *st);
  const TType *dt = &n->args[0]->type, *kt = &n->args[1]->type;
  if (dt->ndim != 4 || kt->ndim != 4 || !dt_eq(dt->dtype, DT_F32) || !dt_eq(kt->dtype, DT_F32)) return 0;
  if (gattr_int(&n->attrs, "groups", 1) != 1) return 0;
  int64_t d[4] = {dt->shape[0], ch ? ch[0] : dt->shape[1], dt->shape[2], dt->shape[3]};
  int64_t k[4] = {ch ? ch[1] : kt->shape[0], ch ? ch[0] : kt->shape[1], kt->shape[2], kt->shape[3]};
  if (d[1] % 2) return 0; /* channels that cannot be paired stay float32 */
  Workload *wl = conv_bf16_workload(d, k, n);
  if (fp32 && fp32->wl && fp32->tmpl == &topi_x86_conv2d_winograd_NCHWc_template) {
    /* A layer float32 runs as Winograd: float32 Winograd, the bfloat16
     * direct kernel or bfloat16 Winograd F(2 x 2).  Records decide when
     * there are some (the fastest task with a record, the rule float32
     * applies between its direct and Winograd tasks); without records,
     * the largest estimated gain over the direct float32 kernel (above);
     * the bfloat16 ones only where the target's VDPBF16PS out-runs the
     * FMAs (where it does not, the direct kernel's "fma" form runs at
     * about float32's speed and Winograd stays, as float32 chose). */
    Workload *ww = wino_bf16_workload(d, k, n);
    bool u;
    double cost[3] = {graph_dispatch_best_cost(dc, t, fp32->wl, &u), graph_dispatch_best_cost(dc, t, wl, &u),
                      graph_dispatch_best_cost(dc, t, ww, &u)};
    int pad[4], best = 0;
    strategy_attr_pads4(n, pad);
    int64_t OH = d[2] + pad[0] + pad[2] - 2, OW = d[3] + pad[1] + pad[3] - 2;
    if (isfinite(cost[0]) || isfinite(cost[1]) || isfinite(cost[2])) {
      for (int i = 1; i < 3; i++)
        if (cost[i] < cost[best]) best = i;
    } else if (target_bf16_dot_faster(t) && (d[1] < BF16_WINO_MIN_CHANNELS || k[0] < BF16_WINO_MIN_CHANNELS)) {
      best = 1;
    } else if (target_bf16_dot_faster(t)) {
      double gain[3] = {winograd_gain(topi_x86_winograd_tile_size(d[1], k[0], OH, OW), OH, OW), t->bf16_dot_rate,
                        t->bf16_dot_rate * winograd_gain(2, OH, OW)};
      for (int i = 1; i < 3; i++)
        if (gain[i] > gain[best]) best = i;
    }
    if (best == 0) return 0;
    if (best == 2) wl = ww;
  }
  if (conv_bf16_task(n, wl, t, dc, fp32, st)) return -1;
  if (st->task_name) st->task_desc = kfmt("%s bf16", fp32 && fp32->task_desc ? fp32->task_desc : "");
  return 0;
}

/* A conv with an odd number of input channels runs in bfloat16 with one
 * zero channel added (alter_layout pads its input, a pass over every
 * input value, and adds a zero weight column) where it does at least
 * PAIR_PAD_WORK multiply-adds per input value: KH KW OC / (SH SW).  In
 * one model of three stems, 1 thread, each kernel's minimum of 30
 * alternating profiles (load 6), float32 (3 channels) / bfloat16 (4), us:
 * ResNet's 7x7/2 3->64 @224 (784 a value) 966 / 720, VGG's 3x3 3->64 @224
 * (576) 735 / 567, MobileNet-V2's 3x3/2 3->32 (72) 136 / 150; the pad
 * and blocking of the 224 x 224 input 100 against the float32 blocking's
 * 26. */
#define PAIR_PAD_WORK 256

bool graph_conv_bf16_pad_pays(const GNode *n) {
  const TType *kt = &n->args[1]->type;
  if (kt->ndim != 4) return false;
  int s[2];
  strategy_attr_ints2((GNode *)n, "strides", 1, s);
  return kt->shape[0] * kt->shape[2] * kt->shape[3] >= (int64_t)PAIR_PAD_WORK * s[0] * s[1];
}

int strategy_conv2d_bf16(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  const TType *dt = &n->args[0]->type, *kt = &n->args[1]->type;
  int64_t d[4] = {dt->shape[0], dt->shape[1] * dt->shape[4], dt->shape[2], dt->shape[3]};
  int64_t k[4] = {kt->shape[0] * kt->shape[5], kt->shape[1] * kt->shape[4] * 2, kt->shape[2], kt->shape[3]};
  if (conv_bf16_task(n, conv_bf16_workload(d, k, n), t, dc, NULL, st)) return -1;
  int pad[4], s[2];
  strategy_attr_ints2(n, "strides", 1, s);
  strategy_attr_pads4(n, pad);
  st->task_desc = kfmt("[(%lld,%lld,%lld,%lld),(%lld,%lld,%lld,%lld)] s%d p%d bf16", (long long)d[0], (long long)d[1],
                       (long long)d[2], (long long)d[3], (long long)k[0], (long long)k[1], (long long)k[2], (long long)k[3],
                       s[0], pad[0]);
  return 0;
}

int strategy_conv2d_winograd_bf16(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  const TType *dt = &n->args[0]->type, *kt = &n->args[1]->type;
  int64_t d[4] = {dt->shape[0], dt->shape[1] * dt->shape[4], dt->shape[2], dt->shape[3]};
  int64_t k[4] = {kt->shape[2] * kt->shape[4], kt->shape[3] * 2, 3, 3};
  if (conv_bf16_task(n, wino_bf16_workload(d, k, n), t, dc, NULL, st)) return -1;
  int pad[4];
  strategy_attr_pads4(n, pad);
  st->task_desc = kfmt("[(%lld,%lld,%lld,%lld),(%lld,%lld,3,3)] s1 p%d winograd bf16", (long long)d[0], (long long)d[1],
                       (long long)d[2], (long long)d[3], (long long)k[0], (long long)k[1], pad[0]);
  return 0;
}
