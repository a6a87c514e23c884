/*
 * strategy_gpu.c - the strategies of anchor ops on a GPU target (cuda,
 * opencl): which of TVM 0.6's CUDA templates (src/topi/cuda, TopHub's
 * tasks) a conv2d or dense layer takes, its workload in TopHub's argument
 * order, and its config - the best record of the workload among the
 * user's records (a record of any GPU target applies, TVM's "gpu" key),
 * else the template's fallback.
 *
 *   nn.conv2d, groups 1, float32         topi_nn_conv2d (direct)
 *   nn.conv2d, depthwise, float32        topi_nn_depthwise_conv2d_nchw
 *   nn.dense, 2-D float32                topi_nn_dense
 *
 * The group's anchor is then computed by the template (its compute over
 * the node's NCHW/OIHW or [M, K]/[N, K] inputs) and the group scheduled by
 * it, the elementwise epilogue inlined into the kernel (build.c).  When
 * the workload's best record is a Winograd one (TopHub's
 * topi_nn_conv2d records with "t": "winograd"), the convolution takes
 * the Winograd template (topi/cuda/winograd.c); alter_layout then gives
 * it the kernel transform as its weight, computed at build time
 * (nn.contrib_conv2d_winograd_without_weight_transform, whose workload is
 * still the plain convolution's).  Anything else keeps the generic GPU
 * schedule.
 */
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "../ops/compute.h"
#include "../ops/util.h"
#include "strategy.h"

static Workload *gpu_conv_workload(GNode *n) {
  const TType *dt = &n->args[0]->type, *kt = &n->args[1]->type;
  if (dt->ndim != 4 || kt->ndim != 4 || !dt_eq(dt->dtype, DT_F32) || !dt_eq(n->type.dtype, DT_F32)) return NULL;
  int64_t groups = gattr_int(&n->attrs, "groups", 1);
  bool wowt = n->op->id == OP_CONV2D_WINOGRAD_WOWT; /* weight [alpha, alpha, I, O] */
  bool dw = !wowt && groups > 1 && groups == dt->shape[1] && kt->shape[1] == 1;
  if (groups != 1 && !dw) return NULL;
  int st[2], dl[2], pad[4];
  strategy_attr_ints2(n, "strides", 1, st);
  strategy_attr_ints2(n, "dilation", 1, dl);
  strategy_attr_pads4(n, pad);
  int64_t d[4], k[4];
  for (int i = 0; i < 4; i++) d[i] = dt->shape[i], k[i] = kt->shape[i];
  if (wowt) k[0] = kt->shape[3], k[1] = kt->shape[2], k[2] = k[3] = 3;
  if (dw) { /* TVM's NCHW depthwise kernel: [C, multiplier, KH, KW] */
    k[1] = k[0] / d[1];
    k[0] = d[1];
    return wl_cuda_conv2d("topi_nn_depthwise_conv2d_nchw", d, k, st, pad, dl, "float32", "float32");
  }
  return wl_cuda_conv2d("topi_nn_conv2d", d, k, st, pad, dl, "float32", "float32");
}

int graph_gpu_strategy(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  Workload *wl = NULL;
  if ((n->op->id == OP_CONV2D || n->op->id == OP_CONV2D_WINOGRAD_WOWT) && n->nargs == 2) {
    wl = gpu_conv_workload(n);
  } else if (n->op->id == OP_DENSE && n->nargs == 2) {
    const TType *d = &n->args[0]->type, *w = &n->args[1]->type;
    if (d->ndim == 2 && w->ndim == 2 && dt_eq(d->dtype, DT_F32) && dt_eq(n->type.dtype, DT_F32))
      wl = wl_dense("topi_nn_dense", d->shape[0], w->shape[0], w->shape[1], "float32", "float32");
  }
  if (!wl) return 0;
  bool wowt = n->op->id == OP_CONV2D_WINOGRAD_WOWT; /* the Winograd template only */
  const Template *tm = template_find(wl->name, wowt ? "winograd" : "direct", t);
  if (!tm) return wowt ? kiln_set_error("%s needs a GPU target", n->op->name) : 0;
  ConfigEntity *c = NULL;
  const char *src = NULL;
  /* the best record may be of another template of the task (Winograd) */
  const Template *rt = NULL;
  if (graph_dispatch_query(dc, t, wl, &c, &src) == 0 && c)
    rt = template_find(wl->name, c->template_key ? c->template_key : "direct", t);
  if (rt && rt->schedule && !wowt) tm = rt;
  if (c && rt == tm && (!tm->check || tm->check(t, c, wl) == 0)) {
    st->config = c;
    st->config_source = src;
  } else {
    kiln_clear_error();
    /* no record of its own: the nearest record of the template, as TVM's
     * CUDA templates fall back to TopHub's reference log */
    if (graph_dispatch_nearest(dc, t, tm, wl, &st->config, &st->config_source)) return -1;
    if (!st->config) {
      if (!(st->config = template_fallback(tm, t, wl))) return -1;
      st->config_source = "fallback";
      graph_dispatch_note_fallback(dc, t, wl);
    }
  }
  /* the profile's Task column names a template other than the task's
   * first: "topi_nn_conv2d (winograd)" */
  st->task_name = tm->template_key && strcmp(tm->template_key, "direct") ? kfmt("%s (%s)", wl->name, tm->template_key)
                                                                          : wl->name;
  st->tmpl = tm;
  st->wl = wl;
  st->target = t;
  st->task_desc = wl_describe(wl);
  return 0;
}

/* The Winograd convolution on the transformed weight, by the template's
 * compute (which sees the [alpha, alpha, I, O] weight as pre-computed). */
Tensor *compute_conv2d_winograd_gpu(GNode *n, Tensor **ins, const Strategy *st) {
  if (st && st->tmpl && st->wl) return st->tmpl->compute(st->target, st->wl, st->config, n->nargs, ins);
  Workload *wl = gpu_conv_workload(n);
  if (!wl) return kiln_set_error("%s: not a float32 NCHW convolution", n->op->name), NULL;
  return topi_cuda_conv2d_winograd_template.compute(NULL, wl, NULL, n->nargs, ins);
}
