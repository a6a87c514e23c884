/*
 * bf16.c - the op rows of `--precision bf16` (docs/bf16.md): a dense layer
 * whose weight is bfloat16 pairs packed for dense_pack_bf16.x86, and the
 * op that packs a float32 weight so (alter_layout makes it; fold_constant
 * evaluates it at compile time, so the module stores the bfloat16 weight).
 *
 *   nn.contrib_dense_bf16_weight_pack  weight float32 [N, K], block=bn
 *                                      -> uint32 [N/bn, ceil(K/2), bn]
 *   nn.contrib_dense_pack_bf16         data float32 [M, K], that weight
 *                                      -> float32 [M, N]
 */
#include "../../topi/topi.h"
#include "../backend/strategy.h"
#include "util.h"

static int infer_weight_pack(GNode *n, TType *out) {
  const TType *w = arg_type(n, 0);
  int64_t bn = gattr_int(&n->attrs, "block", 0);
  if (w->ndim != 2 || !dt_eq(w->dtype, DT_F32)) return kiln_set_error("weight must be float32 [N, K], got %s %s", dt_str(w->dtype), shape_str(w));
  if (bn < 1 || w->shape[0] % bn)
    return kiln_set_error("block = %lld must be positive and divide N = %lld", (long long)bn, (long long)w->shape[0]);
  int64_t s[3] = {w->shape[0] / bn, (w->shape[1] + 1) / 2, bn};
  *out = ttype(DT_U32, 3, s);
  return 0;
}

static Tensor *compute_weight_pack(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_x86_pack_dense_weight_bf16(ins[0], gattr_int(&n->attrs, "block", 0));
}

static int infer_dense_pack_bf16(GNode *n, TType *out) {
  const TType *d = arg_type(n, 0), *w = arg_type(n, 1);
  if (d->ndim != 2 || !dt_eq(d->dtype, DT_F32)) return kiln_set_error("data must be float32 [M, K], got %s %s", dt_str(d->dtype), shape_str(d));
  if (w->ndim != 3 || !dt_eq(w->dtype, DT_U32))
    return kiln_set_error("weight must be bfloat16 pairs packed as uint32 [N/bn, ceil(K/2), bn] "
                          "(nn.contrib_dense_bf16_weight_pack), got %s %s",
                          dt_str(w->dtype), shape_str(w));
  if (w->shape[1] != (d->shape[1] + 1) / 2)
    return kiln_set_error("data %s has K = %lld, the packed weight %s holds %lld pairs", shape_str(d), (long long)d->shape[1],
                          shape_str(w), (long long)w->shape[1]);
  int64_t s[2] = {d->shape[0], w->shape[0] * w->shape[2]};
  *out = ttype(DT_F32, 2, s);
  return 0;
}

static Tensor *compute_dense_pack_bf16(GNode *n, Tensor **ins, const Strategy *st) {
  (void)n, (void)st;
  return topi_x86_dense_pack_bf16(ins[0], ins[1], NULL);
}

const OpDef ops_bf16[] = {
    {"nn.contrib_dense_bf16_weight_pack", 1, 1, PAT_OPAQUE, infer_weight_pack, compute_weight_pack, NULL, "weight, block=16"},
    {"nn.contrib_dense_pack_bf16", 2, 2, PAT_OUT_ELEMWISE_FUSABLE, infer_dense_pack_bf16, compute_dense_pack_bf16,
     strategy_dense_bf16},
    {NULL},
};
