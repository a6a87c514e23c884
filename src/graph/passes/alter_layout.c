/*
 * alter_layout.c - convolutions to NCHW[x]c, transforms only at the edges.
 *
 * Every conv2d that an x86 template covers becomes
 * nn.contrib_conv2d_NCHWc (or the depthwise one) with the channel blocks
 * its config chooses (tile_ic and tile_oc's inner parts, the same config
 * the build will schedule it with); its weight gets a layout_transform to
 * OIHW[x]i[y]o that fold_constant evaluates at compile time.  A conv that
 * takes the Winograd template (op_strategy.c says which) becomes
 * nn.contrib_conv2d_winograd_NCHWc instead, its weight the kernel
 * transform nn.contrib_conv2d_winograd_weight_transform (also folded).
 * A dense layer with a constant weight becomes nn.contrib_dense_pack
 * (dense_pack.x86), its weight packed to [N/bn, K, bn] by a folded
 * layout_transform (TVM's dense_pack with a pre-packed weight).
 *
 * The blocked layout then flows forward through what can work on it
 * unchanged: elementwise ops, broadcasts whose other operand is a
 * per-channel constant (reshaped to [1, C/b, 1, 1, b]) or another blocked
 * tensor, pooling (its layout attribute becomes NCHW[b]c) and channel
 * concatenation.  Anything else gets its blocked inputs transformed back
 * to NCHW, and so do the graph's outputs.  A transform of a transform's
 * result back to its source layout is cancelled, and each tensor is
 * transformed to a given layout at most once.
 */
#include <stdlib.h>
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "../backend/strategy.h"
#include "passes.h"

typedef struct Alt {
  PtrMap blk;       /* new node -> block + 1 (absent: plain NCHW or not a feature map) */
  PtrMap cache;     /* (node, block) key -> transformed node */
  PtrMap origin;    /* transform node -> its input (for cancelling) */
  PtrMap origin_blk; /* transform node -> its input's block + 1 */
  int failed;
  const Target *target; /* whose templates and records choose the blocks */
} Alt;

static int blk_of(Alt *a, GNode *n) {
  intptr_t v = (intptr_t)pm_get(&a->blk, n);
  return v ? (int)v - 1 : 0;
}

static void set_blk(Alt *a, GNode *n, int b) {
  if (n && b > 0) pm_put(&a->blk, n, (void *)(intptr_t)(b + 1));
}

static const char *layout_name(int b) { return b > 0 ? kfmt("NCHW%dc", b) : "NCHW"; }

/* x (a feature map in block bx, 0 = NCHW) in block b. */
static GNode *to_block(Graph *ng, Alt *a, GNode *x, int b) {
  int bx = blk_of(a, x);
  if (bx == b) return x;
  GNode *src = pm_get(&a->origin, x);
  if (src && (int)(intptr_t)pm_get(&a->origin_blk, x) - 1 == b) return src; /* cancel a back-to-back pair */
  const char *key = kfmt("%p/%d", (void *)x, b);
  GNode *c = pm_get(&a->cache, key);
  if (c) return c;
  GAttrs at = gattrs_new();
  ga_str(&at, "src_layout", layout_name(bx));
  ga_str(&at, "dst_layout", layout_name(b));
  GNode *t = graph_call(ng, "layout_transform", 1, &x, at, NULL);
  if (!t) return NULL;
  set_blk(a, t, b);
  pm_put(&a->cache, key, t);
  pm_put(&a->origin, t, x);
  pm_put(&a->origin_blk, t, (void *)(intptr_t)(bx + 1));
  return t;
}

static GNode *to_nchw(Graph *ng, Alt *a, GNode *x) { return to_block(ng, a, x, 0); }

/* A per-channel operand of an NCHW result with C channels: shape [C,1,1],
 * [1,C,1,1] (or a scalar).  Returns C, 1 for scalars, 0 otherwise. */
static int64_t per_channel(const TType *t, int64_t C) {
  if (ttype_numel(t) == 1) return 1;
  if (t->ndim < 3 || t->ndim > 4) return 0;
  int c_axis = t->ndim - 3;
  for (int i = 0; i < t->ndim; i++)
    if (i != c_axis && t->shape[i] != 1) return 0;
  return t->shape[c_axis] == C ? C : 0;
}

static GNode *reshape_to(Graph *ng, GNode *x, int n, const int64_t *s) {
  GAttrs at = gattrs_new();
  ga_ints(&at, "newshape", n, s);
  return graph_call(ng, "reshape", 1, &x, at, NULL);
}

static bool is_binary_bcast(const GNode *old) {
  static const char *ops[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "nn.prelu", NULL};
  for (int i = 0; ops[i]; i++)
    if (!strcmp(old->op->name, ops[i])) return true;
  return false;
}

static GNode *convert_conv(Graph *ng, Alt *a, GNode *old, GNode **args) {
  if (old->args[0]->type.ndim != 4 || args[1]->kind != GN_CONST) return GRAPH_KEEP;
  Strategy st;
  if (graph_conv_config(old, a->target, &st)) return NULL;
  if (!st.task_name) return GRAPH_KEEP;
  graph_conv_follow_block(old, a->target, &st, blk_of(a, args[0]));
  int64_t icb = cfg_split_inner(st.config, "tile_ic"), ocb = cfg_split_inner(st.config, "tile_oc");
  if (icb <= 0 || ocb <= 0) return NULL;
  bool dw = graph_conv_is_depthwise(old);
  GNode *data = to_block(ng, a, args[0], (int)icb);
  if (!strcmp(st.task_name, GRAPH_WINOGRAD_TASK)) {
    /* the kernel transform U = G g G^T, folded at compile time */
    int64_t m = topi_x86_winograd_tile_size(old->type.shape[2], old->type.shape[3]);
    GAttrs wt = gattrs_new();
    ga_int(&wt, "tile_size", m);
    ga_int(&wt, "out_block", ocb);
    GNode *w = args[1];
    GNode *u = graph_call(ng, "nn.contrib_conv2d_winograd_weight_transform", 1, &w, wt, NULL);
    if (!data || !u) return NULL;
    GAttrs at = gattrs_copy(&old->attrs);
    ga_str(&at, "data_layout", layout_name((int)icb));
    ga_str(&at, "out_layout", layout_name((int)ocb));
    ga_int(&at, "tile_size", m);
    GNode *r = graph_call(ng, "nn.contrib_conv2d_winograd_NCHWc", 2, (GNode *[]){data, u}, at, old->name);
    set_blk(a, r, (int)ocb);
    return r;
  }
  GAttrs kt = gattrs_new();
  ga_str(&kt, "src_layout", "OIHW");
  const char *klayout = dw ? kfmt("OIHW1i%lldo", (long long)ocb) : kfmt("OIHW%lldi%lldo", (long long)icb, (long long)ocb);
  ga_str(&kt, "dst_layout", klayout);
  GNode *w = args[1];
  GNode *kw = graph_call(ng, "layout_transform", 1, &w, kt, NULL);
  if (!data || !kw) return NULL;
  GAttrs at = gattrs_copy(&old->attrs);
  ga_str(&at, "data_layout", layout_name((int)icb));
  ga_str(&at, "kernel_layout", klayout);
  ga_str(&at, "out_layout", layout_name((int)ocb));
  GNode *cargs[2] = {data, kw};
  GNode *r = graph_call(ng, dw ? "nn.contrib_depthwise_conv2d_NCHWc" : "nn.contrib_conv2d_NCHWc", 2, cargs, at, old->name);
  set_blk(a, r, (int)ocb);
  return r;
}

/* nn.dense with a constant weight [N, K] -> nn.contrib_dense_pack with
 * the weight packed to [N/bn, K, bn] (layout NK[bn]n, folded at compile
 * time), bn = the dense_pack config's tile_x inner part. */
static GNode *convert_dense(Graph *ng, Alt *a, GNode *old, GNode **args) {
  if (args[1]->kind != GN_CONST || old->args[1]->type.ndim != 2) return GRAPH_KEEP;
  Strategy st;
  if (graph_dense_config(old, a->target, &st)) return NULL;
  if (!st.task_name) return GRAPH_KEEP;
  int64_t bn = cfg_split_inner(st.config, "tile_x");
  if (bn <= 0) return NULL;
  GAttrs kt = gattrs_new();
  ga_str(&kt, "src_layout", "NK");
  ga_str(&kt, "dst_layout", kfmt("NK%lldn", (long long)bn));
  GNode *w = args[1];
  GNode *pw = graph_call(ng, "layout_transform", 1, &w, kt, NULL);
  if (!pw) return NULL;
  GAttrs at = gattrs_copy(&old->attrs);
  ga_str(&at, "weight_layout", kfmt("NK%lldn", (long long)bn));
  return graph_call(ng, "nn.contrib_dense_pack", 2, (GNode *[]){args[0], pw}, at, old->name);
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  Alt *a = ud;
  const char *op = old->op->name;
  /* symbolic shapes stay NCHW: the templates' configs are per static
   * workload (docs/symbolic_shapes.md) */
  if (ttype_is_symbolic(&old->type)) return GRAPH_KEEP;
  if (!strcmp(op, "nn.conv2d")) {
    GNode *r = convert_conv(ng, a, old, args);
    if (r != GRAPH_KEEP) return r;
  }
  if (!strcmp(op, "nn.dense")) {
    GNode *r = convert_dense(ng, a, old, args);
    if (r != GRAPH_KEEP) return r;
  }
  int b = 0;
  for (int i = 0; i < old->nargs; i++)
    if (blk_of(a, args[i]) > 0) {
      b = blk_of(a, args[i]);
      break;
    }
  if (b == 0) return GRAPH_KEEP; /* nothing blocked flows in */
  const TType *ot = &old->type;
  bool fmap = ot->ndim == 4 && ot->shape[1] % b == 0;
  GNode **na = KNEWN(GNode *, old->nargs + 1);
  memcpy(na, args, sizeof(GNode *) * (size_t)old->nargs);
  /* elementwise on one blocked input */
  if (fmap && old->op->pattern == PAT_ELEMWISE && old->nargs == 1) {
    GNode *r = graph_call(ng, op, 1, na, old->attrs, old->name);
    set_blk(a, r, b);
    return r;
  }
  /* broadcasts against blocked tensors and per-channel constants */
  if (fmap && (is_binary_bcast(old) || !strcmp(op, "nn.bias_add"))) {
    int64_t C = ot->shape[1];
    bool ok = true;
    for (int i = 0; i < old->nargs && ok; i++) {
      const TType *t = &old->args[i]->type;
      if (blk_of(a, na[i]) > 0) {
        na[i] = to_block(ng, a, na[i], b);
      } else if (ttype_eq(t, ot)) {
        na[i] = to_block(ng, a, na[i], b);
      } else if (!strcmp(op, "nn.bias_add") && i == 1) {
        int64_t s[5] = {1, C / b, 1, 1, b};
        na[i] = reshape_to(ng, na[i], 5, s);
      } else {
        int64_t pc = per_channel(t, C);
        if (pc == C) {
          int64_t s[5] = {1, C / b, 1, 1, b};
          na[i] = reshape_to(ng, na[i], 5, s);
        } else if (pc != 1) {
          ok = false;
        }
      }
      if (!na[i]) return NULL;
    }
    if (ok) {
      GNode *r = !strcmp(op, "nn.bias_add") ? graph_call(ng, "add", 2, na, gattrs_new(), old->name)
                                            : graph_call(ng, op, old->nargs, na, old->attrs, old->name);
      set_blk(a, r, b);
      return r;
    }
    memcpy(na, args, sizeof(GNode *) * (size_t)old->nargs);
  }
  /* pooling keeps the layout */
  if (!strcmp(op, "nn.max_pool2d") || !strcmp(op, "nn.avg_pool2d") || !strcmp(op, "nn.global_avg_pool2d") ||
      !strcmp(op, "nn.global_max_pool2d")) {
    GAttrs at = gattrs_copy(&old->attrs);
    ga_str(&at, "layout", layout_name(b));
    GNode *r = graph_call(ng, op, 1, na, at, old->name);
    set_blk(a, r, b);
    return r;
  }
  /* channel concatenation of blocked tensors */
  if (!strcmp(op, "concatenate") && ot->ndim == 4 && (gattr_int(&old->attrs, "axis", 0) == 1 || gattr_int(&old->attrs, "axis", 0) == -3)) {
    bool ok = true;
    for (int i = 0; i < old->nargs; i++) ok &= old->args[i]->type.ndim == 4 && old->args[i]->type.shape[1] % b == 0;
    if (ok) {
      for (int i = 0; i < old->nargs; i++)
        if (!(na[i] = to_block(ng, a, na[i], b))) return NULL;
      GAttrs at = gattrs_copy(&old->attrs);
      ga_int(&at, "axis", 1);
      GNode *r = graph_call(ng, op, old->nargs, na, at, old->name);
      set_blk(a, r, b);
      return r;
    }
  }
  /* everything else works on NCHW */
  for (int i = 0; i < old->nargs; i++)
    if (blk_of(a, na[i]) > 0 && !(na[i] = to_nchw(ng, a, na[i]))) return NULL;
  return graph_call(ng, op, old->nargs, na, old->attrs, old->name);
}

Graph *pass_alter_layout(Graph *g, const PassContext *pc) {
  /* the NCHW[x]c blocks are the CPU templates'; a GPU target keeps NCHW
   * for the generic GPU schedule */
  if (pc->target && pc->target->kind->device_type != kDLCPU) return graph_rewrite(g, NULL, NULL);
  Alt a;
  memset(&a, 0, sizeof a);
  a.target = pc->target;
  pm_init_str(&a.cache);
  Graph *ng = graph_rewrite(g, rewrite, &a);
  if (ng) {
    for (int i = 0; i < ng->outputs.len; i++) {
      GNode *o = ng->outputs.data[i];
      if (blk_of(&a, o) > 0) {
        GNode *t = to_nchw(ng, &a, o);
        if (!t) {
          graph_free(ng);
          ng = NULL;
          break;
        }
        ng->outputs.data[i] = t;
      }
    }
  }
  pm_free(&a.blk);
  pm_free(&a.cache);
  pm_free(&a.origin);
  pm_free(&a.origin_blk);
  return ng;
}
