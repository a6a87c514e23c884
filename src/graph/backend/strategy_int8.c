/*
 * strategy_int8.c - the strategies of the int8 layers of quantized models
 * (docs/int8.md): which int8 template a layer takes, with which config.
 * fake_quantization_to_integer asks graph_dense_vnni_config for the block
 * of the weight it packs and records the config on the node it makes;
 * strategy_dense_vnni reads it back.
 */
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "strategy.h"

#define DENSE_VNNI_TASK "dense_vnni.x86"

static int dense_vnni_task(GNode *n, int64_t M, int64_t N, int64_t K, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  /* TVM's workload: uint8 data, int8 weight, int32 accumulation */
  Workload *wl = wl_dense(DENSE_VNNI_TASK, M, N, K, "uint8", "int32");
  const Template *tm = template_lookup(wl->name);
  if (!tm) return -1;
  if (!template_serves(tm, t)) return 0;
  if (graph_task_config(n, t, dc, tm, wl, st)) return -1;
  st->task_name = wl->name;
  st->tmpl = tm;
  st->wl = wl;
  st->target = t;
  st->task_desc = kfmt("[(%lld,%lld),(%lld,%lld)] u8s8", (long long)M, (long long)K, (long long)N, (long long)K);
  return 0;
}

int graph_dense_vnni_config(GNode *n, int64_t M, int64_t N, int64_t K, const Target *t, DispatchContext *dc, Strategy *st) {
  return dense_vnni_task(n, M, N, K, t, dc, st);
}

int strategy_dense_vnni(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  const TType *d = &n->args[0]->type, *w = &n->args[1]->type;
  return dense_vnni_task(n, d->shape[0], w->shape[0] * w->shape[2], d->shape[1], t, dc, st);
}
