/*
 * strategy_int8.c - the strategies of the int8 layers of quantized models
 * (docs/int8.md): which int8 template a layer takes, with which config.
 * fake_quantization_to_integer asks graph_dense_vnni_config for the block
 * of the weight it packs and records the config on the node it makes;
 * strategy_dense_vnni reads it back.  The same for the convolutions:
 * alter_layout asks graph_conv_int8_config for the blocks of an
 * nn.contrib_conv2d_int8 (the pass's NCHW form) and records the config on
 * the nn.contrib_conv2d_NCHWc_int8 it makes; strategy_conv2d_int8 reads it
 * back.
 */
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "strategy.h"

#define DENSE_VNNI_TASK "dense_vnni.x86"
#define CONV_INT8_TASK "conv2d_NCHWc_int8.x86"

static int dense_vnni_task(GNode *n, int64_t M, int64_t N, int64_t K, const Target *t, DispatchContext *dc, Strategy *st) {
  /* TVM's workload: uint8 data, int8 weight, int32 accumulation */
  Workload *wl = wl_dense(DENSE_VNNI_TASK, M, N, K, "uint8", "int32");
  return graph_task_fill(n, wl, kfmt("[(%lld,%lld),(%lld,%lld)] u8s8", (long long)M, (long long)K, (long long)N, (long long)K),
                         t, dc, st);
}

int graph_dense_vnni_config(GNode *n, int64_t M, int64_t N, int64_t K, const Target *t, DispatchContext *dc, Strategy *st) {
  return dense_vnni_task(n, M, N, K, t, dc, st);
}

int strategy_dense_vnni(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  const TType *d = &n->args[0]->type, *w = &n->args[1]->type;
  return dense_vnni_task(n, d->shape[0], w->shape[0] * w->shape[2], d->shape[1], t, dc, st);
}

/* The int8 conv's workload: conv2d_NCHWc.x86's arguments (data NCHW,
 * kernel OIHW, strides, padding, dilation) with uint8 data and int32
 * accumulation. */
static int conv_int8_task(GNode *n, const int64_t d[4], const int64_t k[4], const Target *t, DispatchContext *dc,
                          Strategy *st) {
  int s[2], pad[4], dl[2];
  strategy_attr_ints2(n, "strides", 1, s);
  strategy_attr_ints2(n, "dilation", 1, dl);
  strategy_attr_pads4(n, pad);
  Workload *wl = wl_conv2d(CONV_INT8_TASK, d, k, s, pad, dl, "uint8", "int32");
  const char *desc = kfmt("[(%lld,%lld,%lld,%lld),(%lld,%lld,%lld,%lld)] s%d p%d u8s8", (long long)d[0],
                          (long long)d[1], (long long)d[2], (long long)d[3], (long long)k[0], (long long)k[1],
                          (long long)k[2], (long long)k[3], s[0], pad[0]);
  return graph_task_fill(n, wl, desc, t, dc, st);
}

int graph_conv_int8_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  const TType *dt = &n->args[0]->type, *kt = &n->args[1]->type;
  int64_t d[4] = {dt->shape[0], dt->shape[1], dt->shape[2], dt->shape[3]};
  int64_t k[4] = {kt->shape[0], kt->shape[1], kt->shape[2], kt->shape[3]};
  return conv_int8_task(n, d, k, t, dc, st);
}

int strategy_conv2d_int8(GNode *n, const Target *t, DispatchContext *dc, Strategy *st) {
  const TType *dt = &n->args[0]->type, *kt = &n->args[1]->type;
  int64_t d[4] = {dt->shape[0], dt->shape[1] * dt->shape[4], dt->shape[2], dt->shape[3]};
  int64_t k[4] = {kt->shape[0] * kt->shape[5], kt->shape[1] * kt->shape[4] * 4, kt->shape[2], kt->shape[3]};
  return conv_int8_task(n, d, k, t, dc, st);
}
