/*
 * alter_layout_gpu.c - alter_layout on a GPU target: the Winograd kernel
 * transform moved to build time.
 *
 * A GPU target keeps NCHW (the CUDA templates' layout); what changes is
 * the weight of a convolution whose config is a Winograd one (its best
 * record has the template key "winograd", backend/strategy_gpu.c): as
 * TVM's alter_op_layout for CUDA does, the conv2d becomes
 *
 *   nn.contrib_conv2d_winograd_without_weight_transform(data, U)
 *   U = reshape(nn.contrib_conv2d_winograd_weight_transform(w, tile_size=m,
 *               out_block=O), [alpha, alpha, I, O])
 *
 * and fold_constant, the next pass, computes U from the constant weight
 * (the transform G g G^T with the matrices the kernels use,
 * topi_winograd_matrices).  The kernel transform then no longer runs in
 * every inference: the group's function has three kernels (data
 * transform, batched GEMM, inverse transform), and its parameter is U,
 * (m + 2)^2 / 9 times the weight's size.  The new node keeps the
 * convolution's attributes (strides, padding, ...) and adds tile_size,
 * m = topi_cuda_winograd_tile_size(input height) as the template infers
 * it; its workload - what records and the profile's Task column name - is
 * still the plain convolution's.  A convolution whose weight is not a
 * constant keeps the transform in its kernel.
 */
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "../backend/strategy.h"
#include "passes.h"

static GNode *rewrite_gpu(Graph *ng, GNode *old, GNode **args, void *ud) {
  const PassContext *pc = ud;
  if (old->op->id != OP_CONV2D || old->nargs != 2 || args[1]->kind != GN_CONST || old->args[0]->type.ndim != 4 ||
      old->args[1]->type.ndim != 4)
    return GRAPH_KEEP;
  Strategy st;
  if (graph_gpu_strategy(old, pc->target, pc->dispatch, &st)) return NULL;
  if (!st.tmpl || !st.tmpl->template_key || strcmp(st.tmpl->template_key, "winograd")) return GRAPH_KEEP;
  int64_t m = topi_cuda_winograd_tile_size(old->args[0]->type.shape[2]);
  int64_t O = old->args[1]->type.shape[0], I = old->args[1]->type.shape[1];
  GAttrs wt = gattrs_new();
  ga_int(&wt, "tile_size", m);
  ga_int(&wt, "out_block", O);
  GNode *w = args[1];
  GNode *u = graph_call(ng, "nn.contrib_conv2d_winograd_weight_transform", 1, &w, wt, NULL);
  if (!u) return NULL;
  GAttrs rt = gattrs_new();
  ga_ints(&rt, "newshape", 4, (int64_t[]){m + 2, m + 2, I, O});
  GNode *u4 = graph_call(ng, "reshape", 1, &u, rt, NULL);
  if (!u4) return NULL;
  GAttrs at = gattrs_copy(&old->attrs);
  ga_int(&at, "tile_size", m);
  GNode *cargs[2] = {args[0], u4};
  return graph_call(ng, "nn.contrib_conv2d_winograd_without_weight_transform", 2, cargs, at, old->name);
}

Graph *pass_alter_layout_gpu(Graph *g, const PassContext *pc) { return graph_rewrite(g, rewrite_gpu, (void *)pc); }
