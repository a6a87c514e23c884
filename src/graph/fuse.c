/*
 * fuse.c - operator fusion (DESIGN §4) and TVM's fused-function names.
 *
 * First each anchor (conv2d, dense, pooling, a reduction) takes the chain
 * of single-use elementwise/broadcast ops that follows it.  Then the other
 * nodes are visited consumers first; a call with exactly one use that is
 * not a graph output may join its consumer's group:
 *   - elementwise/broadcast ops join an injective or reduce consumer (and
 *     the elementwise epilogue of an anchored group);
 *   - injective ops join an injective consumer;
 *   - an out-elementwise-fusable op (conv2d, dense, pooling) or a
 *     reduction becomes the anchor of its consumer's group when that group
 *     is an elementwise/broadcast chain without an anchor;
 *   - opaque ops never fuse, except that a row op (softmax, layer norm:
 *     OPF_ROW_INPUT) takes the chain of producers that only move data
 *     (OPF_MOVES_DATA: a crop, transpose, relayout, reshape) as far as a
 *     row's innermost elements stay contiguous in what it reads
 *     (row_chain), which its row stages then read through their index
 *     maps: ViT's crop of the padded Q K^T before its softmax, ConvNeXt's
 *     NCHW16c -> NHWC transpose before its layer norms were kernels of
 *     their own, each a pass over the tensor.
 * A group therefore has one output and at most one anchor, and its
 * schedule is the anchor's with the rest inlined.  The single-use rule is
 * a conservative stand-in for TVM's post-dominator analysis: it gives the
 * same groups on chains (conv -> bias -> bn -> add -> relu) and never
 * makes a group whose intermediate value is needed outside it.  An
 * anchor's chain also takes a diamond: where a value has several uses
 * that all lead, through elementwise/broadcast ops, to one node (SiLU's
 * x * sigmoid(x), GELU written out), the whole diamond joins the anchor's
 * epilogue, as TVM's post-dominator fusion does.
 *
 * Names follow TVM.  Groups that compute the same function - the same ops
 * with the same attributes, wiring, input types and folded scalar
 * constants (group_key) - share one kernel, as TVM's compile engine
 * caches a primitive function by its structure: func_name counts the
 * distinct kernels of a base name (fused_nn_conv2d_add_nn_relu, then _1,
 * _2, ...), and each group's node name is its kernel's name made unique
 * as TVM's graph codegen does (a repeat gets "1", "2", ... appended:
 * fused_nn_contrib_conv2d_NCHWc_add_nn_relu_11 calls _1).
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

typedef struct GInfo {
  int group;          /* group index */
} GInfo;

typedef struct Grp {
  AVec nodes;
  GNode *anchor;
  int max_pattern; /* the largest pattern among non-anchor ops */
  bool rows;       /* started at an opaque row op (OPF_ROW_INPUT) */
  AVec row_chain;  /* GNode *: the producers such a group may take (row_chain) */
} Grp;

static bool is_anchor(const GNode *n) {
  return n->op->pattern == PAT_OUT_ELEMWISE_FUSABLE || n->op->pattern == PAT_COMM_REDUCE;
}

/* Can producer n (one use: consumer c) join c's group? */
static bool can_join(GNode *n, GNode *c, Grp *cg) {
  OpPattern pn = n->op->pattern, pc = c->op->pattern;
  if (cg->rows) return av_find(&cg->row_chain, n) >= 0;
  if (pn == PAT_OPAQUE || pc == PAT_OPAQUE) return false;
  if (pc == PAT_OUT_ELEMWISE_FUSABLE) return false; /* anchors fuse their outputs, not inputs */
  if (is_anchor(n)) return !cg->anchor && cg->max_pattern <= PAT_BROADCAST;
  if (pn <= PAT_BROADCAST) return pc <= PAT_INJECTIVE || pc == PAT_COMM_REDUCE;
  if (pn == PAT_INJECTIVE) return pc <= PAT_INJECTIVE && (!cg->anchor || cg->anchor->op->pattern != PAT_COMM_REDUCE);
  return false;
}

/* The input axis that a data-movement op n (OPF_MOVES_DATA) reads along
 * its output's axis a, where consecutive elements along a stay consecutive
 * in the input (in runs of at least ROW_RUN where a blocked layout's lanes
 * are read, ConvNeXt's NCHW16c -> NCHW); -1 when they do not (a pad
 * along a, a stride, a transpose's moved axis, a reshape that regroups
 * the axis). */
enum { ROW_RUN = 16 };
static int moved_axis(const GNode *n, int a) {
  const TType *in = &n->args[0]->type, *out = &n->type;
  int last = out->ndim - 1;
  switch (n->op->id) {
  case OP_PAD: { /* a crop along a (a pad there would select per lane) */
    const int64_t *p;
    int k = gattr_ints(&n->attrs, "pads", &p);
    return k == 2 * in->ndim && p[a] <= 0 && p[a + in->ndim] <= 0 ? a : -1;
  }
  case OP_STRIDED_SLICE: {
    const int64_t *st;
    int k = gattr_ints(&n->attrs, "strides", &st);
    for (int i = 0; i < k; i++)
      if (st[i] != 1) return -1;
    return a;
  }
  case OP_TRANSPOSE: {
    const int64_t *p;
    int k = gattr_ints(&n->attrs, "axes", &p);
    return k == 0 ? in->ndim - 1 - a : k == out->ndim ? (int)p[a] : -1;
  }
  case OP_LAYOUT_TRANSFORM: {
    /* the output's axis letter, blocked in the source as its last
     * (lowercase) axis of a multiple of ROW_RUN lanes: NCHW16c -> NCHW */
    const char *src = gattr_str(&n->attrs, "src_layout", ""), *dst = gattr_str(&n->attrs, "dst_layout", "");
    size_t ls = strlen(src);
    if ((int)strlen(dst) != out->ndim || a > last || ls < 2 || src[ls - 1] < 'a' || src[ls - 1] > 'z') return -1;
    if (dst[a] != src[ls - 1] - 'a' + 'A' || in->shape[in->ndim - 1] % ROW_RUN) return -1;
    return in->ndim - 1;
  }
  default: /* reshape, squeeze, expand_dims, batch_flatten: the last axis kept */
    return a == last && in->ndim > 0 && in->shape[in->ndim - 1] == out->shape[last] ? in->ndim - 1 : -1;
  }
}

/* The single-use data-movement producers that row op r may take: the
 * chain below its data input, as far as the last point where the
 * elements of a row's innermost axis are still contiguous in the tensor
 * the kernel would read (its vector loads stay loads, not gathers).  An
 * NCHW map's transpose to channels-last does not qualify (each element a
 * plane apart: a layer norm of [56 x 56, 96] read so ran 2.3x slower than
 * the tiled transpose kernel and the norm together); a blocked one's does
 * (a 16-lane run per block). */
static void row_chain(GNode *r, const int *uses, const bool *is_out, AVec *out) {
  int a = r->type.ndim - 1, keep = 0;
  for (GNode *n = r->nargs ? r->args[0] : NULL; n && n->kind == GN_CALL && (n->op->flags & OPF_MOVES_DATA) &&
                                               n->op->pattern <= PAT_INJECTIVE && uses[n->id] == 1 && !is_out[n->id];
       n = n->args[0]) {
    if ((a = moved_axis(n, a)) < 0) break;
    av_push(out, n);
    if (a == n->args[0]->type.ndim - 1) keep = out->len;
  }
  out->len = keep;
}

/* A diamond below `top`, which has several uses: the elementwise and
 * broadcast calls that the uses lead to, up to the one node where they
 * meet again (x * sigmoid(x), GELU's x * 0.5 * (1 + erf(x / sqrt 2))).
 * Grown by expanding the open node (one with a use outside the set) of
 * the smallest id: the meeting node has the largest id of the diamond, so
 * it is the last one open.  Fails (returns NULL) on a use that is not an
 * ungrouped elementwise/broadcast call, a graph output inside, or more
 * than 16 nodes.  On success `set` holds the diamond, meeting node last. */
/* Does m have a use outside {set}? */
static bool used_outside(Graph *g, GNode *m, const AVec *set) {
  for (int i = m->id + 1; i < g->nodes.len; i++) {
    GNode *c = g->nodes.data[i];
    for (int a = 0; a < c->nargs; a++)
      if (c->args[a] == m && av_find(set, c) < 0) return true;
  }
  return false;
}

static GNode *diamond_below(Graph *g, GNode *top, const int *gid, const bool *is_out, AVec *set) {
  set->len = 0;
  for (;;) {
    GNode *first = NULL; /* the open node of the smallest id */
    int nopen = 0;
    for (int k = -1; k < set->len; k++) {
      GNode *m = k < 0 ? top : set->data[k];
      if (!used_outside(g, m, set)) continue;
      if (!first) first = m;
      nopen++;
    }
    if (!first) return NULL; /* a diamond with no way out: not below an output */
    if (nopen == 1 && first != top) {
      /* the meeting node comes last; nothing else in the set is an output */
      if (set->data[set->len - 1] != first) return NULL;
      for (int k = 0; k < set->len - 1; k++)
        if (is_out[((GNode *)set->data[k])->id]) return NULL;
      return first;
    }
    if (first != top && is_out[first->id]) return NULL;
    for (int i = first->id + 1; i < g->nodes.len; i++) {
      GNode *c = g->nodes.data[i];
      bool uses = false;
      for (int a = 0; a < c->nargs && !uses; a++) uses = c->args[a] == first;
      if (!uses || av_find(set, c) >= 0) continue;
      if (c->kind != GN_CALL || c->op->pattern > PAT_BROADCAST || gid[c->id] >= 0 || set->len >= 16) return NULL;
      /* keep the set sorted by id, so that open nodes are seen in id order */
      av_push(set, c);
      for (int k = set->len - 1; k > 0 && ((GNode *)set->data[k - 1])->id > c->id; k--) {
        set->data[k] = set->data[k - 1];
        set->data[k - 1] = c;
      }
    }
  }
}

static const char *fused_base_name(AVec *nodes) {
  StrBuf sb = {0};
  sb_puts(&sb, "fused");
  for (int i = 0; i < nodes->len; i++) {
    GNode *n = nodes->data[i];
    sb_putc(&sb, '_');
    for (const char *p = n->op->name; *p; p++) sb_putc(&sb, *p == '.' ? '_' : *p);
  }
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}

/* What makes two groups compute the same function: per node its op,
 * attributes, type and where each argument comes from (an earlier node of
 * the group, or input k with its type, and the value of a one-element
 * constant, which the build folds into the kernel).  Names and node ids
 * are left out; everything the build's compute and strategy read is in. */
static const char *group_key(const FusedGroup *fg) {
  StrBuf sb = {0};
  for (int k = 0; k < fg->nodes.len; k++) {
    GNode *n = fg->nodes.data[k];
    sb_printf(&sb, "%s(", n->op->name);
    for (int a = 0; a < n->nargs; a++) {
      GNode *in = n->args[a];
      int local = av_find((AVec *)&fg->nodes, in);
      if (local >= 0 && local < k) {
        sb_printf(&sb, "%%%d,", local);
        continue;
      }
      sb_printf(&sb, "p%d:%s", av_find((AVec *)&fg->inputs, in), ttype_str(&in->type));
      if (in->kind == GN_CONST && ttype_numel(&in->type) == 1) {
        double v = gnode_scalar_value(in);
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        sb_printf(&sb, "=%llx", (unsigned long long)bits);
      }
      sb_putc(&sb, ',');
    }
    for (int a = 0; a < n->attrs.n; a++) {
      const GAttr *at = &n->attrs.a[a];
      sb_printf(&sb, "%s=%d:", at->key, (int)at->kind);
      switch (at->kind) {
      case GA_INT: sb_printf(&sb, "%lld", (long long)at->i); break;
      case GA_FLOAT: sb_printf(&sb, "%.17g", at->f); break;
      case GA_STR: sb_puts(&sb, at->s ? at->s : ""); break;
      case GA_INTS:
        for (int j = 0; j < at->n; j++) sb_printf(&sb, "%lld.", (long long)at->ints[j]);
        break;
      case GA_FLOATS:
        for (int j = 0; j < at->n; j++) sb_printf(&sb, "%.17g.", at->floats[j]);
        break;
      }
      sb_putc(&sb, ';');
    }
    sb_printf(&sb, ")%s\n", ttype_str(&n->type));
  }
  const char *r = kstrdup(sb.data);
  sb_free(&sb);
  return r;
}

/* TVM's GetUniqueName: the name itself the first time, then the name with
 * 1, 2, ... appended (itself made unique the same way). */
static const char *unique_name(PtrMap *used, const char *name) {
  for (;;) {
    intptr_t count = (intptr_t)pm_get(used, name);
    pm_put(used, name, (void *)(count + 1));
    if (!count) return name;
    name = kfmt("%s%d", name, (int)count);
  }
}

static int cmp_id(const void *a, const void *b) {
  const GNode *x = *(GNode *const *)a, *y = *(GNode *const *)b;
  return x->id - y->id;
}

int graph_fuse(Graph *g, int opt_level, AVec *out) {
  int n = g->nodes.len;
  int *uses = graph_use_counts(g);
  bool *is_out = xcalloc((size_t)n + 1, sizeof(bool));
  for (int i = 0; i < g->outputs.len; i++) is_out[((GNode *)g->outputs.data[i])->id] = true;
  int *gid = xcalloc((size_t)n + 1, sizeof(int));
  for (int i = 0; i < n; i++) gid[i] = -1;
  AVec grps = {0};
  /* the single consumer of each node with one use */
  GNode **consumer = xcalloc((size_t)n + 1, sizeof(GNode *));
  for (int i = 0; i < n; i++) {
    GNode *c = g->nodes.data[i];
    for (int a = 0; a < c->nargs; a++) consumer[c->args[a]->id] = c;
  }
  /* phase 1, producers first: each anchor takes the elementwise chain
   * that follows it, as long as each link has a single use (conv -> bias
   * -> residual add -> relu).  Visiting anchors in graph order gives the
   * chain to the first anchor that reaches it, as TVM's post-dominator
   * fusion does on residual blocks. */
  if (opt_level > 0)
    for (int i = 0; i < n; i++) {
      GNode *node = g->nodes.data[i];
      if (node->kind != GN_CALL || !is_anchor(node) || gid[node->id] >= 0) continue;
      Grp *ng = KNEW(Grp);
      av_push(&ng->nodes, node);
      ng->anchor = node;
      gid[node->id] = grps.len;
      av_push(&grps, ng);
      AVec diamond = {0};
      for (GNode *cur = node;;) {
        if (uses[cur->id] > 1 && !is_out[cur->id]) {
          GNode *meet = diamond_below(g, cur, gid, is_out, &diamond);
          if (!meet) break;
          for (int k = 0; k < diamond.len; k++) {
            GNode *m = diamond.data[k];
            av_push(&ng->nodes, m);
            gid[m->id] = gid[node->id];
            if ((int)m->op->pattern > ng->max_pattern) ng->max_pattern = m->op->pattern;
          }
          cur = meet;
          continue;
        }
        GNode *c = consumer[cur->id];
        if (uses[cur->id] != 1 || is_out[cur->id] || !c || c->kind != GN_CALL || gid[c->id] >= 0) break;
        if (c->op->pattern > PAT_BROADCAST || node->op->pattern == PAT_OPAQUE) break;
        av_push(&ng->nodes, c);
        gid[c->id] = gid[node->id];
        if ((int)c->op->pattern > ng->max_pattern) ng->max_pattern = c->op->pattern;
        cur = c;
      }
    }
  /* phase 2, consumers first: the remaining ops join their consumer's
   * group where the patterns allow, else start a group of their own */
  for (int i = n - 1; i >= 0; i--) {
    GNode *node = g->nodes.data[i];
    if (node->kind != GN_CALL || gid[node->id] >= 0) continue;
    GNode *c = consumer[node->id];
    bool joined = false;
    if (opt_level > 0 && uses[node->id] == 1 && !is_out[node->id] && c && c->kind == GN_CALL) {
      /* a node used twice by the same consumer counts as two uses above */
      Grp *cg = grps.data[gid[c->id]];
      if (can_join(node, c, cg)) {
        av_push(&cg->nodes, node);
        gid[node->id] = gid[c->id];
        if (is_anchor(node)) cg->anchor = node;
        else if ((int)node->op->pattern > cg->max_pattern) cg->max_pattern = node->op->pattern;
        joined = true;
      }
    }
    if (!joined) {
      Grp *ng = KNEW(Grp);
      av_push(&ng->nodes, node);
      if (is_anchor(node)) ng->anchor = node;
      else ng->max_pattern = node->op->pattern;
      ng->rows = (node->op->flags & OPF_ROW_INPUT) != 0;
      if (ng->rows) row_chain(node, uses, is_out, &ng->row_chain);
      gid[node->id] = grps.len;
      av_push(&grps, ng);
    }
  }
  /* groups in topological order of their outputs; names by TVM's rule */
  PtrMap seen_names, kernels, node_names;
  pm_init_str(&seen_names);
  pm_init_str(&kernels);
  pm_init_str(&node_names);
  AVec result = {0};
  for (int i = 0; i < n; i++) {
    GNode *node = g->nodes.data[i];
    if (node->kind != GN_CALL) continue;
    Grp *gr = grps.data[gid[node->id]];
    GNode *outn = NULL;
    for (int k = 0; k < gr->nodes.len; k++) {
      GNode *m = gr->nodes.data[k];
      if (!outn || m->id > outn->id) outn = m;
    }
    if (outn != node) continue;
    FusedGroup *fg = KNEW(FusedGroup);
    fg->id = result.len;
    fg->nodes = av_copy(&gr->nodes);
    qsort(fg->nodes.data, (size_t)fg->nodes.len, sizeof(void *), cmp_id);
    fg->out = outn;
    fg->anchor = gr->anchor;
    for (int k = 0; k < fg->nodes.len; k++) {
      GNode *m = fg->nodes.data[k];
      for (int a = 0; a < m->nargs; a++) {
        GNode *in = m->args[a];
        bool inside = in->kind == GN_CALL && gid[in->id] == gid[node->id];
        if (!inside && av_find(&fg->inputs, in) < 0) av_push(&fg->inputs, in);
      }
    }
    const char *key = group_key(fg);
    FusedGroup *same = opt_level > 0 ? pm_get(&kernels, key) : NULL;
    if (same) {
      fg->func_name = same->func_name;
      fg->kernel = same->id;
    } else {
      const char *base = fused_base_name(&fg->nodes);
      intptr_t count = (intptr_t)pm_get(&seen_names, base);
      fg->func_name = count ? kfmt("%s_%d", base, (int)count) : base;
      pm_put(&seen_names, base, (void *)(count + 1));
      fg->kernel = fg->id;
      pm_put(&kernels, key, fg);
    }
    fg->name = unique_name(&node_names, fg->func_name);
    av_push(&result, fg);
  }
  pm_free(&seen_names);
  pm_free(&kernels);
  pm_free(&node_names);
  free(uses);
  free(is_out);
  free(gid);
  free(consumer);
  *out = result;
  return 0;
}
