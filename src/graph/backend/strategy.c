/*
 * strategy.c - schedule strategies for anchor ops: which tuning task
 * (template) a convolution or dense layer uses, its workload in TVM's
 * argument order, and the config it gets.  Configs come from the dispatch
 * context (tuned records, then the records Kiln ships), else the
 * template's fallback.  alter_layout asks graph_conv_config and
 * graph_dense_config for the blocks and records the config it chose on the
 * node it makes (GNode.config); the strategy of that node reads it back
 * (recorded_config) rather than choosing again, so the layout and the
 * schedule always agree.
 *
 * A 3x3 stride-1 conv2d may take the Winograd template instead of the
 * direct one (choose_conv_task: the switch, the shapes where it wins, the
 * records).  The NCHW[x]c computes of the x86 templates are built here
 * too.
 */
#include "strategy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "../ops/compute.h"
#include "../ops/util.h"

void strategy_attr_ints2(GNode *n, const char *key, int d, int out[2]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, key, &v);
  out[0] = out[1] = d;
  if (k == 1) out[0] = out[1] = (int)v[0];
  if (k >= 2) out[0] = (int)v[0], out[1] = (int)v[1];
}

void strategy_attr_pads4(GNode *n, int out[4]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, "padding", &v);
  for (int i = 0; i < 4; i++) out[i] = 0;
  if (k == 1) out[0] = out[1] = out[2] = out[3] = (int)v[0];
  if (k == 2) out[0] = out[2] = (int)v[0], out[1] = out[3] = (int)v[1];
  if (k == 4)
    for (int i = 0; i < 4; i++) out[i] = (int)v[i];
}

/* The NCHW data and OIHW kernel shapes of a conv node in any layout; ch
 * (NULL: the node's own) gives the input and output channel counts the
 * conv is compiled with when alter_layout pads them (plain and depthwise
 * convs only). */
static void conv_shapes_as(GNode *n, const int64_t *ch, int64_t d[4], int64_t k[4]);
static void conv_shapes(GNode *n, int64_t d[4], int64_t k[4]) { conv_shapes_as(n, NULL, d, k); }
static void conv_shapes_as(GNode *n, const int64_t *ch, int64_t d[4], int64_t k[4]) {
  const TType *dt = &n->args[0]->type, *kt = &n->args[1]->type;
  if (dt->ndim == 4) {
    for (int i = 0; i < 4; i++) d[i] = dt->shape[i];
  } else {
    d[0] = dt->shape[0], d[1] = dt->shape[1] * dt->shape[4], d[2] = dt->shape[2], d[3] = dt->shape[3];
  }
  if (kt->ndim == 4) {
    for (int i = 0; i < 4; i++) k[i] = kt->shape[i];
  } else if (kt->ndim == 5) { /* Winograd [alpha, alpha, O/ob, I, ob] */
    k[0] = kt->shape[2] * kt->shape[4], k[1] = kt->shape[3], k[2] = k[3] = 3;
  } else {
    k[0] = kt->shape[0] * kt->shape[5], k[1] = kt->shape[1] * kt->shape[4], k[2] = kt->shape[2], k[3] = kt->shape[3];
    /* a padded-group weight (group_pad) holds more rows than the conv keeps */
    int64_t keep = gattr_int(&n->attrs, "kept_channels", 0);
    if (keep > 0 && keep < k[0] && gattr_int(&n->attrs, "groups", 1) > 1) k[0] = keep;
    /* a grouped conv reading a wider block than its own may read only the
     * first channels of a padded input (infer_conv2d) */
    int64_t groups = gattr_int(&n->attrs, "groups", 1);
    if (groups > 1 && dt->ndim == 5 && k[1] * groups < d[1]) d[1] = k[1] * groups;
  }
  if (ch) {
    if (gattr_int(&n->attrs, "groups", 1) == 1) k[1] = ch[0]; /* depthwise kernels keep 1 */
    d[1] = ch[0], k[0] = ch[1];
  }
}

bool graph_conv_is_depthwise(GNode *n) {
  int64_t d[4], k[4];
  conv_shapes(n, d, k);
  int64_t groups = gattr_int(&n->attrs, "groups", 1);
  return groups > 1 && groups == d[1] && k[1] == 1;
}

int64_t graph_conv_padded_groups(GNode *n, int64_t out_channels) {
  int64_t groups = gattr_int(&n->attrs, "groups", 1);
  if (groups <= 1 || graph_conv_is_depthwise(n)) return groups;
  int64_t d[4], k[4];
  conv_shapes(n, d, k);
  return out_channels / (k[0] / groups);
}

/* The workload of a conv node for a task (NULL: the conv's own), or NULL
 * when no template covers it (non-float32).  Plain, depthwise and grouped
 * convolutions each have their task. */
static Workload *conv_workload(GNode *n, const int64_t *ch, const char *task) {
  int64_t d[4], k[4];
  conv_shapes_as(n, ch, d, k);
  int64_t groups = ch ? graph_conv_padded_groups(n, ch[1]) : gattr_int(&n->attrs, "groups", 1);
  bool dw = graph_conv_is_depthwise(n);
  if (!dt_eq(n->args[0]->type.dtype, DT_F32)) return NULL;
  int st[2], dl[2], pad[4];
  strategy_attr_ints2(n, "strides", 1, st);
  strategy_attr_ints2(n, "dilation", 1, dl);
  strategy_attr_pads4(n, pad);
  if (groups > 1 && !dw)
    return wl_group_conv2d(task ? task : "group_conv2d_NCHWc.x86", d, k, st, pad, dl, groups, "float32", "float32");
  if (!task) task = n->op->id == OP_CONV2D_WINOGRAD_NCHWC ? GRAPH_WINOGRAD_TASK
                    : dw                                                    ? "depthwise_conv2d_NCHWc.x86"
                                                                            : "conv2d_NCHWc.x86";
  if (dw || strcmp(task, "conv2d_NCHWc.x86")) return wl_conv2d(task, d, k, st, pad, dl, "float32", "float32");
  return wl_conv2d_real(task, d, k, st, pad, dl, graph_conv_real_in(n, ch), "float32", "float32");
}

/* The input channels a plain conv reduces over: where alter_layout pads
 * its input (ch[0] channels), the node's own count; on the blocked node
 * its `real_in_channels` attribute; else all of them. */
int64_t graph_conv_real_in(GNode *n, const int64_t *ch) {
  int64_t d[4], k[4];
  conv_shapes(n, d, k);
  if (ch) return d[1] < ch[0] ? d[1] : ch[0];
  int64_t r = gattr_int(&n->attrs, "real_in_channels", 0);
  return r > 0 && r < d[1] ? r : d[1];
}

bool graph_winograd_enabled(void) {
  const char *e = getenv("KILN_WINOGRAD");
  return !(e && !strcmp(e, "0"));
}

/* Where Winograd beats the direct kernels (bench/conv2d.c, fallback
 * configs, 1 and 2 threads): 3x3, stride 1, dilation 1, groups 1, at
 * least WINO_MIN_CHANNELS input and output channels and an output of at
 * least WINO_MIN_SIZE x WINO_MIN_SIZE (at 7x7 the transformed kernel's
 * bytes dominate and Winograd only breaks even), or a smaller output
 * whose batch gives enough tiles (topi_x86_winograd_batch_small), and
 * where the fallback's register block holds enough accumulators
 * (topi_x86_winograd_block_pays).  Narrower layers, down to
 * WINO_NARROW_CHANNELS (a 16-lane vector) on either side, take it from
 * an output of WINO_NARROW_SIZE x WINO_NARROW_SIZE: with so few channels
 * a tile's transforms weigh more against its GEMM, and at 4 x 4 tiles of
 * F(4x4) Winograd loses.  bench_conv2d --layer narrow. --cpu-time --cold
 * --epilogue, Winograd / direct, 1 thread (load 1.5-2.2): 16->64 @14
 * 0.83-0.88x, @16 0.92x, @18 1.54x, @20 1.76-1.82x, @28 1.82-2.04x;
 * SqueezeNet's 16->64 @55 1.59x (2 threads 1.27x); 16->16 @56 1.16-1.29x,
 * 32->16 @28 1.34x, 64->16 @56 1.27-1.34x; 8->32 @56 0.93-1.11x (below a
 * vector of channels: direct). */
#define WINO_MIN_CHANNELS 32
#define WINO_MIN_SIZE 8
#define WINO_NARROW_CHANNELS 16
#define WINO_NARROW_SIZE 18

static bool winograd_shape(GNode *n, const int64_t *ch, const Target *t) {
  int64_t d[4], k[4];
  conv_shapes_as(n, ch, d, k);
  int st[2], dl[2], pad[4];
  strategy_attr_ints2(n, "strides", 1, st);
  strategy_attr_ints2(n, "dilation", 1, dl);
  strategy_attr_pads4(n, pad);
  if (gattr_int(&n->attrs, "groups", 1) != 1 || k[2] != 3 || k[3] != 3 || st[0] != 1 || st[1] != 1 || dl[0] != 1 ||
      dl[1] != 1)
    return false;
  int64_t OH = d[2] + pad[0] + pad[2] - 2, OW = d[3] + pad[1] + pad[3] - 2;
  int64_t narrow = d[1] < k[0] ? d[1] : k[0];
  bool wide = narrow >= WINO_MIN_CHANNELS &&
              ((OH >= WINO_MIN_SIZE && OW >= WINO_MIN_SIZE) || topi_x86_winograd_batch_small(d[0], OH, OW));
  return (wide || (narrow >= WINO_NARROW_CHANNELS && OH >= WINO_NARROW_SIZE && OW >= WINO_NARROW_SIZE)) &&
         topi_x86_winograd_block_pays(t, d[0], d[1], k[0], OH, OW);
}

/* The task a plain conv2d takes: the Winograd one where the switch is on
 * and the shape qualifies, unless the records say otherwise: with records
 * of both tasks the faster one; with a record of the user's for the
 * direct task only, the direct task (a tuned direct kernel is kept until
 * the Winograd task is tuned too). */
static Workload *choose_conv_task(GNode *n, const int64_t *ch, const Target *t, DispatchContext *dc) {
  Workload *direct = conv_workload(n, ch, NULL);
  if (!direct || !graph_winograd_enabled() || !winograd_shape(n, ch, t) || !dt_eq(n->type.dtype, DT_F32)) return direct;
  Workload *wino = conv_workload(n, ch, GRAPH_WINOGRAD_TASK);
  bool user_d, user_w;
  double cd = graph_dispatch_best_cost(dc, t, direct, &user_d), cw = graph_dispatch_best_cost(dc, t, wino, &user_w);
  if (isfinite(cw)) return cd < cw ? direct : wino;
  if (isfinite(cd) && user_d) return direct;
  return wino;
}

static const char *conv_desc(GNode *n) {
  int64_t d[4], k[4];
  conv_shapes(n, d, k);
  int st[2], pad[4];
  strategy_attr_ints2(n, "strides", 1, st);
  strategy_attr_pads4(n, pad);
  bool sym = pad[0] == pad[1] && pad[1] == pad[2] && pad[2] == pad[3];
  int64_t groups = gattr_int(&n->attrs, "groups", 1), real = graph_conv_real_in(n, NULL);
  return kfmt("[(%lld,%lld,%lld,%lld),(%lld,%lld,%lld,%lld)] s%d p%s%s%s", (long long)d[0], (long long)d[1],
              (long long)d[2], (long long)d[3], (long long)k[0], (long long)k[1], (long long)k[2], (long long)k[3], st[0],
              sym ? kfmt("%d", pad[0]) : kfmt("%d,%d,%d,%d", pad[0], pad[1], pad[2], pad[3]),
              groups > 1 && !graph_conv_is_depthwise(n) ? kfmt(" g%lld", (long long)groups) : "",
              real < d[1] ? kfmt(" real_ic %lld", (long long)real) : "");
}

/* The config for a task: dispatch (records) first, then the fallback. */
static int choose_config(const Target *t, DispatchContext *dc, const Template *tm, Workload *wl, ConfigEntity **cfg,
                         const char **source) {
  ConfigEntity *c = NULL;
  const char *src = NULL;
  if (graph_dispatch_query(dc, t, wl, &c, &src) == 0 && c && (!tm->check || tm->check(t, c, wl) == 0)) {
    *cfg = c;
    *source = src;
    return 0;
  }
  c = template_fallback(tm, t, wl);
  if (!c) return -1;
  *cfg = c;
  *source = "fallback";
  graph_dispatch_note_fallback(dc, t, wl);
  return 0;
}

/* The config alter_layout recorded on the node (GNode.config), if any:
 * 1 with *cfg and *source set, 0 when none was recorded, -1 + error when
 * the recorded text does not parse. */
static int recorded_config(GNode *n, ConfigEntity **cfg, const char **source) {
  if (!n->config) return 0;
  ConfigEntity *c = config_from_json(n->config);
  if (!c) return kiln_error_context("the config recorded on node '%s' (%s)", n->name ? n->name : "?", n->op->name);
  *cfg = c;
  *source = n->config_source ? n->config_source : "fallback";
  return 1;
}

/* The config a strategy uses for a task: the recorded one, else chosen
 * from the records or the fallback. */
static int task_config(GNode *n, const Target *t, DispatchContext *dc, const Template *tm, Workload *wl, Strategy *st) {
  int r = recorded_config(n, &st->config, &st->config_source);
  if (r) return r < 0 ? -1 : 0;
  return choose_config(t, dc, tm, wl, &st->config, &st->config_source);
}

int graph_task_config(GNode *n, const Target *t, DispatchContext *dc, const Template *tm, Workload *wl, Strategy *st) {
  return task_config(n, t, dc, tm, wl, st);
}

int graph_task_fill(GNode *n, Workload *wl, const char *desc, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  const Template *tm = template_lookup(wl->name);
  if (!tm) return -1;
  if (!template_serves(tm, t)) return 0; /* not this target's: the generic schedule */
  if (task_config(n, t, dc, tm, wl, st)) return -1;
  st->task_name = wl->name;
  st->tmpl = tm;
  st->wl = wl;
  st->target = t;
  st->task_desc = desc;
  return 0;
}

void graph_record_config(Graph *g, GNode *n, const Strategy *st) {
  if (!st->config) return;
  gnode_set_config(g, n, config_json(st->config), st->config_source);
}

int graph_conv_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  return graph_conv_config_as(n, NULL, t, dc, st);
}

int graph_conv_config_as(GNode *n, const int64_t *ch, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  Workload *wl = n->op->id == OP_CONV2D ? choose_conv_task(n, ch, t, dc) : conv_workload(n, ch, NULL);
  return wl ? graph_task_fill(n, wl, conv_desc(n), t, dc, st) : 0;
}

void graph_conv_follow_block(GNode *n, const Target *t, DispatchContext *dc, Strategy *st, int64_t b) {
  graph_conv_follow_block_as(n, NULL, t, dc, st, b);
}

void graph_conv_follow_block_as(GNode *n, const int64_t *ch, const Target *t, DispatchContext *dc, Strategy *st,
                                int64_t b) {
  if (!st->task_name || b <= 0) return;
  if (!st->config->is_fallback) {
    /* a tuned config: a record that reads this block, when nearly as
     * fast, saves the layout transform in front of the conv */
    ConfigEntity *c = NULL;
    const char *src = NULL;
    if (cfg_split_inner(st->config, "tile_ic") != b && graph_dispatch_query_block(dc, t, st->wl, b, &c, &src) == 0 && c) {
      st->config = c;
      st->config_source = src;
    }
    kiln_clear_error();
    return;
  }
  int64_t d[4], k[4];
  conv_shapes_as(n, ch, d, k);
  if (d[1] % b) return;
  int64_t groups = gattr_int(&n->attrs, "groups", 1);
  /* a grouped conv's input block must lie inside a group */
  if (groups > 1 && !graph_conv_is_depthwise(n) && k[1] % b) return;
  if (graph_conv_is_depthwise(n)) {
    if (k[0] % b || (b & (b - 1))) return;
    config_set_split(st->config, "tile_oc", 2, (int64_t[]){-1, b});
  }
  config_set_split(st->config, "tile_ic", 2, (int64_t[]){-1, b});
}

int strategy_conv2d(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  /* plain NCHW convolutions (opt level < 3, or no template) are generic */
  if (n->op->id == OP_CONV2D) return 0;
  if (graph_conv_config(n, t, dc, st)) return -1;
  /* a node alter_layout made carries its choice; one made otherwise (a
   * graph built by hand) gets the adjustment alter_layout would make */
  if (!n->config) graph_conv_follow_block(n, t, dc, st, n->args[0]->type.ndim == 5 ? n->args[0]->type.shape[4] : 0);
  return 0;
}

/* A dense layer's task: dense_pack.x86 for a packed weight (alter_layout
 * packs every constant one, see graph_dense_config), else dense_nopack. */
static int dense_task(GNode *n, const Target *t, DispatchContext *dc, Strategy *st, const char *task) {
  memset(st, 0, sizeof *st);
  const TType *d = &n->args[0]->type, *w = &n->args[1]->type;
  if (!dt_eq(d->dtype, DT_F32) || d->ndim != 2) return 0;
  bool packed = w->ndim == 3;
  int64_t N = packed ? w->shape[0] * w->shape[2] : w->shape[0], K = w->shape[1];
  Workload *wl = wl_dense(task, d->shape[0], N, K, "float32", "float32");
  return graph_task_fill(n, wl, kfmt("[(%lld,%lld),(%lld,%lld)]", (long long)d->shape[0], (long long)K, (long long)N,
                                     (long long)K),
                         t, dc, st);
}

int strategy_dense(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  bool packed = n->op->id == OP_DENSE_PACK;
  return dense_task(n, t, dc, st, packed ? "dense_pack.x86" : "dense_nopack.x86");
}

/* nn.matmul between two tensors of one rank >= 3 with equal batch
 * dimensions (attention's Q K^T and P V): batch_matmul.x86 with the batch
 * dimensions flattened; anything else (broadcast batches, a vector, 2-D,
 * transposed operands, not float32, symbolic dimensions) stays generic. */
int strategy_matmul(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  const TType *a = &n->args[0]->type, *b = &n->args[1]->type;
  if (!dt_eq(a->dtype, DT_F32) || !dt_eq(b->dtype, DT_F32) || !dt_eq(n->type.dtype, DT_F32)) return 0;
  if (a->ndim < 3 || a->ndim > 8 || b->ndim != a->ndim) return 0;
  if (gattr_int(&n->attrs, "transpose_a", 0) || gattr_int(&n->attrs, "transpose_b", 0)) return 0;
  int r = a->ndim;
  int64_t batch = 1;
  for (int i = 0; i < r; i++)
    if (a->shape[i] < 1 || b->shape[i] < 1 || (i < r - 2 && a->shape[i] != b->shape[i])) return 0;
  for (int i = 0; i < r - 2; i++) batch *= a->shape[i];
  int64_t M = a->shape[r - 2], K = a->shape[r - 1], N = b->shape[r - 1];
  Workload *wl = wl_batch_matmul("batch_matmul.x86", batch, M, N, K, "float32", "float32");
  return graph_task_fill(n, wl, kfmt("[(%lld,%lld,%lld),(%lld,%lld,%lld)]", (long long)batch, (long long)M,
                                     (long long)K, (long long)batch, (long long)K, (long long)N),
                         t, dc, st);
}

Tensor *graph_compute_matmul(GNode *n, Tensor **ins, const Strategy *st) {
  if (st && st->tmpl == &topi_x86_batch_matmul_template) return topi_x86_batch_matmul(ins[0], ins[1], n->type.dtype);
  return topi_matmul(ins[0], ins[1], gattr_int(&n->attrs, "transpose_a", 0) != 0,
                     gattr_int(&n->attrs, "transpose_b", 0) != 0);
}

int graph_dense_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  const TType *d = &n->args[0]->type, *w = &n->args[1]->type;
  if (!dt_eq(d->dtype, DT_F32) || d->ndim != 2 || w->ndim != 2) return 0;
  /* a record for the unpacked template and none for the packed one: the
   * user tuned nopack, keep it */
  Workload *pk = wl_dense("dense_pack.x86", d->shape[0], w->shape[0], w->shape[1], "float32", "float32");
  Workload *np = wl_dense("dense_nopack.x86", d->shape[0], w->shape[0], w->shape[1], "float32", "float32");
  bool user;
  if (isinf(graph_dispatch_best_cost(dc, t, pk, &user)) && !isinf(graph_dispatch_best_cost(dc, t, np, &user))) return 0;
  return dense_task(n, t, dc, st, "dense_pack.x86");
}

/* The NCHW[x]c convolutions' strides, padding and dilation. */
typedef struct ConvArgs {
  int strides[2], dil[2], pad[4];
} ConvArgs;

static ConvArgs conv_args(GNode *n) {
  ConvArgs c;
  strategy_attr_ints2(n, "strides", 1, c.strides);
  strategy_attr_ints2(n, "dilation", 1, c.dil);
  strategy_attr_pads4(n, c.pad);
  return c;
}

Tensor *compute_conv2d_nchwc(GNode *n, Tensor **ins, const Strategy *st) {
  ConvArgs c = conv_args(n);
  int64_t groups = gattr_int(&n->attrs, "groups", 1);
  if (groups > 1 && gattr_int(&n->attrs, "group_pack", 0)) /* alter_layout packed several groups a block */
    return topi_x86_group_conv2d_NCHWc_packed(ins[0], ins[1], c.strides, c.pad, c.dil, groups,
                                              st && st->config && cfg_other_int(st->config, "pack_blend", 0),
                                              n->type.dtype);
  if (groups > 1 && n->type.ndim == 5 && gattr_int(&n->attrs, "group_pair", 0)) /* two groups in whole vectors */
    return topi_x86_group_conv2d_NCHWc_pair(ins[0], ins[1], c.strides, c.pad, c.dil, groups,
                                            n->type.shape[1] * n->type.shape[4], n->type.shape[4], n->type.dtype);
  if (groups > 1 && n->type.ndim == 5 && gattr_int(&n->attrs, "kept_channels", 0) > 0) /* group_pad: the real channels */
    return topi_x86_group_conv2d_NCHWc_padded(ins[0], ins[1], c.strides, c.pad, c.dil, groups,
                                              n->type.shape[1] * n->type.shape[4], n->type.shape[4], n->type.dtype);
  if (groups > 1) return topi_x86_group_conv2d_NCHWc(ins[0], ins[1], c.strides, c.pad, c.dil, groups, n->type.dtype);
  return topi_x86_conv2d_NCHWc_real(ins[0], ins[1], c.strides, c.pad, c.dil, graph_conv_real_in(n, NULL),
                                    n->type.dtype);
}

Tensor *compute_depthwise_conv2d_nchwc(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  ConvArgs c = conv_args(n);
  return topi_x86_depthwise_conv2d_NCHWc(ins[0], ins[1], c.strides, c.pad, c.dil, n->type.dtype);
}

Tensor *compute_conv2d_winograd_nchwc(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  ConvArgs c = conv_args(n);
  return topi_x86_conv2d_winograd_NCHWc(ins[0], ins[1], gattr_int(&n->attrs, "tile_size", 0), c.pad, n->type.dtype);
}

Tensor *compute_dense_pack(GNode *n, Tensor **ins, const Strategy *st) {
  if (!st || !st->config) return NULL;
  return topi_x86_dense_pack(ins[0], ins[1], NULL, st->config, n->type.dtype);
}

Tensor *graph_compute_dense(GNode *n, Tensor **ins, const Strategy *st) {
  if (!st || !st->config) return NULL;
  return topi_x86_dense_nopack(ins[0], ins[1], NULL, st->config, n->type.dtype);
}
