/*
 * strategy_bf16.c - the strategies of `--precision bf16` (docs/bf16.md):
 * which bfloat16 template a layer takes, with which config.  alter_layout
 * asks graph_dense_bf16_config for the block of the weight it packs and
 * records the config on the node it makes; strategy_dense_bf16 reads it
 * back.
 */
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "strategy.h"

#define DENSE_BF16_TASK "dense_pack_bf16.x86"

static int dense_bf16_task(GNode *n, int64_t M, int64_t N, int64_t K, const Target *t, DispatchContext *dc, Strategy *st) {
  memset(st, 0, sizeof *st);
  Workload *wl = wl_dense(DENSE_BF16_TASK, M, N, K, "float32", "float32");
  const Template *tm = template_lookup(wl->name);
  if (!tm) return -1;
  if (!template_serves(tm, t)) return 0;
  if (graph_task_config(n, t, dc, tm, wl, st)) return -1;
  st->task_name = wl->name;
  st->tmpl = tm;
  st->wl = wl;
  st->target = t;
  st->task_desc = kfmt("[(%lld,%lld),(%lld,%lld)] bf16", (long long)M, (long long)K, (long long)N, (long long)K);
  return 0;
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
