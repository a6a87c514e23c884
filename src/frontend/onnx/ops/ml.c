/*
 * ml.c - the ai.onnx.ml operators Kiln maps from ordinary graph ops.
 *
 * Binarizer: 1 where x > threshold, else 0 (NaN gives 0), in x's type.
 * For integer x the threshold is floored first, since x > t and
 * x > floor(t) agree on integers.
 *
 * ArrayFeatureExtractor: a take along the last axis with the indices
 * flattened, as onnx.reference does: the output is
 * [*X.shape[:-1], Y.size], and [1, Y.size] for a 1-D X.  Negative indices
 * count from the end (NumPy's indexing, which the reference uses).  Indices
 * known at import are checked against the axis; run-time ones outside it
 * clamp to the nearest end, like every take in Kiln.
 *
 * TreeEnsemble (opset 5) below; LabelEncoder is in strings.c; TreeEnsembleClassifier/Regressor and the
 * others are not mapped.
 */
#include "ops.h"

#include <math.h>

int onnx_h_Binarizer(Importer *im) {
  GNode *x = in0(im);
  if (!x) return -1;
  DType t = x->type.dtype;
  if (!dt_is_float(t) && !dt_is_int(t))
    return imp_error(im, "input X must be float, double, int32 or int64, got %s", dt_str(t));
  double th = onnx_attr_float(N(im), "threshold", 0.0f);
  if (dt_is_int(t)) {
    th = floor(th);
    double lo = t.bits == 64 ? -9.2e18 : -2147483648.0, hi = t.bits == 64 ? 9.2e18 : 2147483647.0;
    th = th < lo ? lo : th > hi ? hi : th;
  }
  GNode *c = bin(im, "greater", x, imp_scalar_like(im, th, x));
  return out0(im, imp_where(im, c, imp_scalar_like(im, 1, x), imp_scalar_like(im, 0, x)));
}

int onnx_h_ArrayFeatureExtractor(Importer *im) {
  GNode *x = in0(im), *y = imp_input(im, 1);
  if (!x || !y) return -1;
  int nd = x->type.ndim;
  if (nd < 1) return imp_error(im, "input X must have at least one axis, got a scalar");
  if (!(dt_is_int(y->type.dtype) && y->type.dtype.bits == 64))
    return imp_error(im, "input Y (the indices) must be int64, got %s", dt_str(y->type.dtype));
  int64_t n = 1, last = x->type.shape[nd - 1];
  for (int i = 0; i < y->type.ndim; i++) n *= y->type.shape[i];
  if (n > 0 && last == 0) return imp_error(im, "input X %s has an empty last axis to take from", ttype_str(&x->type));
  if (y->kind == GN_CONST) {
    const int64_t *v = (const int64_t *)((const char *)y->value->data + y->value->byte_offset);
    for (int64_t i = 0; i < n; i++)
      if (v[i] < -last || v[i] >= last)
        return imp_error(im, "index Y[%lld] = %lld is outside X's last axis of %lld (allowed: %lld .. %lld)",
                         (long long)i, (long long)v[i], (long long)last, (long long)-last, (long long)(last - 1));
  }
  GNode *flat = imp_reshape(im, y, 1, &n);
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", nd - 1);
  GNode *args[2] = {x, flat};
  GNode *z = flat ? imp_call(im, "take", 2, args, a) : NULL;
  if (z && nd == 1) {
    int64_t s2[2] = {1, n};
    z = imp_reshape(im, z, 2, s2);
  }
  return out0(im, z);
}

/* ---- TreeEnsemble (ai.onnx.ml 5): every root-to-leaf path of every tree
 * is one column.  A sample takes exactly one path per tree; path p is
 * taken when each node on it answers as the path goes, so with C [N, K]
 * the 0/1 answers of the K node visits, the count C @ A_true^T +
 * (1 - C) @ A_false^T of agreeing answers equals the path's depth only
 * on the taken paths.  Those indicators [N, P] times the leaves' weights
 * per target give SUM and AVERAGE; MIN and MAX reduce over the paths of
 * each target.  Node visits are in the reference's order (roots in
 * order, true branch first), which is also the order set-membership
 * nodes take their sets from membership_values. ---- */

#define TREE_MAX (1 << 16)

typedef struct TreeCtx {
  Importer *im;
  int nnodes, nleaves;
  const int64_t *tnode, *fnode, *tleaf, *fleaf, *feat, *tracks;
  int ntracks;
  const OnnxTensor *modes, *splits, *members;
  int64_t member_pos;
  /* node visits (K) */
  int64_t K, P;
  int64_t *kfeat, *kmode, *ktracks;
  double *ksplit;
  int64_t *mem_node, nmem; /* (visit, value) pairs of set membership */
  double *mem_val;
  /* paths */
  int64_t *pleaf, *pdepth;
  int64_t *pk;             /* per path: up to depth visit ids, then */
  uint8_t *pbranch;        /* their branches (1 true) */
  int64_t pk_len, pk_cap;
  int64_t *poff;           /* start of each path in pk */
  int64_t stack_k[4096];
  uint8_t stack_b[4096];
  int64_t stack_node[4096];
} TreeCtx;

static double tensor_at(const OnnxTensor *t, int64_t i) {
  const char *p = t->data;
  switch (t->elem_type) {
  case ONNX_DT_FLOAT: return ((const float *)p)[i];
  case ONNX_DT_DOUBLE: return ((const double *)p)[i];
  case ONNX_DT_FLOAT16: return (double)((const _Float16 *)p)[i];
  case ONNX_DT_UINT8: return ((const uint8_t *)p)[i];
  case ONNX_DT_INT32: return ((const int32_t *)p)[i];
  case ONNX_DT_INT64: return (double)((const int64_t *)p)[i];
  default: return NAN;
  }
}

static bool tree_grow(void **p, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return true;
  int64_t c = *cap ? *cap * 2 : 64;
  while (c < need) c *= 2;
  void *q = kalloc((size_t)c * elem);
  if (*p) memcpy(q, *p, (size_t)*cap * elem);
  *p = q;
  *cap = c;
  return true;
}

typedef struct TreeCaps {
  int64_t k, p, m;
} TreeCaps;

static int tree_visit(TreeCtx *c, TreeCaps *cap, int64_t node, int depth) {
  Importer *im = c->im;
  if (node < 0 || node >= c->nnodes) return imp_error(im, "node index %lld is outside the %d nodes", (long long)node, c->nnodes);
  if (depth >= 4096) return imp_error(im, "a tree deeper than 4096 nodes is not supported");
  for (int d = 0; d < depth; d++)
    if (c->stack_node[d] == node) return imp_error(im, "node %lld is its own descendant: the trees have a cycle", (long long)node);
  if (c->K >= TREE_MAX) return imp_error(im, "more than %d node visits: Kiln maps TreeEnsemble to dense products and takes at most that many", TREE_MAX);
  /* this visit */
  int64_t k = c->K++;
  if (k >= cap->k) {
    int64_t old = cap->k;
    tree_grow((void **)&c->kfeat, &old, k + 1, sizeof(int64_t));
    old = cap->k;
    tree_grow((void **)&c->kmode, &old, k + 1, sizeof(int64_t));
    old = cap->k;
    tree_grow((void **)&c->ktracks, &old, k + 1, sizeof(int64_t));
    old = cap->k;
    tree_grow((void **)&c->ksplit, &old, k + 1, sizeof(double));
    cap->k = old;
  }
  int64_t mode = (int64_t)tensor_at(c->modes, node);
  if (mode < 0 || mode > 6) return imp_error(im, "nodes_modes[%lld] = %lld is not a mode (0-6)", (long long)node, (long long)mode);
  c->kfeat[k] = c->feat[node];
  c->kmode[k] = mode;
  c->ktracks[k] = c->tracks && node < c->ntracks ? c->tracks[node] != 0 : 0;
  c->ksplit[k] = tensor_at(c->splits, node);
  if (mode == 6) { /* the next set of membership_values, up to a NaN */
    if (!c->members) return imp_error(im, "node %lld is a set membership node but there is no membership_values", (long long)node);
    for (;;) {
      if (c->member_pos >= c->members->numel)
        return imp_error(im, "membership_values ends before the set of node %lld (each set ends with a NaN)", (long long)node);
      double v = tensor_at(c->members, c->member_pos++);
      if (isnan(v)) break;
      if (c->nmem >= TREE_MAX) return imp_error(im, "more than %d set members", TREE_MAX);
      int64_t old = cap->m;
      tree_grow((void **)&c->mem_node, &old, c->nmem + 1, sizeof(int64_t));
      old = cap->m;
      tree_grow((void **)&c->mem_val, &old, c->nmem + 1, sizeof(double));
      cap->m = old;
      c->mem_node[c->nmem] = k;
      c->mem_val[c->nmem++] = v;
    }
  }
  c->stack_node[depth] = node;
  c->stack_k[depth] = k;
  for (int br = 1; br >= 0; br--) {
    c->stack_b[depth] = (uint8_t)br;
    int64_t next = br ? c->tnode[node] : c->fnode[node];
    bool leaf = br ? c->tleaf[node] != 0 : c->fleaf[node] != 0;
    if (!leaf) {
      if (tree_visit(c, cap, next, depth + 1)) return -1;
      continue;
    }
    if (next < 0 || next >= c->nleaves) return imp_error(im, "leaf index %lld is outside the %d leaves", (long long)next, c->nleaves);
    if (c->P >= TREE_MAX) return imp_error(im, "more than %d leaves reached: not supported", TREE_MAX);
    int64_t p = c->P++, old = cap->p;
    tree_grow((void **)&c->pleaf, &old, p + 1, sizeof(int64_t));
    old = cap->p;
    tree_grow((void **)&c->pdepth, &old, p + 1, sizeof(int64_t));
    old = cap->p;
    tree_grow((void **)&c->poff, &old, p + 1, sizeof(int64_t));
    cap->p = old;
    c->pleaf[p] = next;
    c->pdepth[p] = depth + 1;
    c->poff[p] = c->pk_len;
    int64_t pc = c->pk_cap;
    tree_grow((void **)&c->pk, &pc, c->pk_len + depth + 1, sizeof(int64_t));
    pc = c->pk_cap;
    tree_grow((void **)&c->pbranch, &pc, c->pk_len + depth + 1, 1);
    c->pk_cap = pc;
    for (int d = 0; d <= depth; d++) {
      c->pk[c->pk_len] = c->stack_k[d];
      c->pbranch[c->pk_len++] = c->stack_b[d];
    }
  }
  return 0;
}

int onnx_h_TreeEnsemble(Importer *im) {
  GNode *x = in0(im);
  const OnnxNode *n = N(im);
  DType t = x->type.dtype;
  if (!dt_is_float(t)) return imp_error(im, "input X must be float, double or float16, got %s", dt_str(t));
  if (x->type.ndim != 2) return imp_error(im, "input X must be [N, F], got %s", ttype_str(&x->type));
  TreeCtx c;
  memset(&c, 0, sizeof c);
  c.im = im;
  int ntn, nfn, ntl, nfl, nft, nlt, nroots;
  c.tnode = onnx_attr_ints(n, "nodes_truenodeids", &ntn);
  c.fnode = onnx_attr_ints(n, "nodes_falsenodeids", &nfn);
  c.tleaf = onnx_attr_ints(n, "nodes_trueleafs", &ntl);
  c.fleaf = onnx_attr_ints(n, "nodes_falseleafs", &nfl);
  c.feat = onnx_attr_ints(n, "nodes_featureids", &nft);
  c.tracks = onnx_attr_ints(n, "nodes_missing_value_tracks_true", &c.ntracks);
  const int64_t *ltarget = onnx_attr_ints(n, "leaf_targetids", &nlt);
  const int64_t *roots = onnx_attr_ints(n, "tree_roots", &nroots);
  c.modes = onnx_attr_tensor(n, "nodes_modes");
  c.splits = onnx_attr_tensor(n, "nodes_splits");
  c.members = onnx_attr_has(n, "membership_values") ? onnx_attr_tensor(n, "membership_values") : NULL;
  const OnnxTensor *lw = onnx_attr_tensor(n, "leaf_weights");
  int64_t ntargets = onnx_attr_int(n, "n_targets", 0), agg = onnx_attr_int(n, "aggregate_function", 1),
          post = onnx_attr_int(n, "post_transform", 0);
  if (!c.tnode || !c.fnode || !c.tleaf || !c.fleaf || !c.feat || !ltarget || !roots || !c.modes || !c.splits || !lw)
    return imp_error(im, "needs the nodes_*, leaf_* and tree_roots attributes");
  c.nnodes = ntn;
  c.nleaves = nlt;
  if (nfn != ntn || ntl != ntn || nfl != ntn || nft != ntn || c.modes->numel != ntn || c.splits->numel != ntn)
    return imp_error(im, "the nodes_* attributes must all have one entry per node (%d)", ntn);
  if (lw->numel != nlt) return imp_error(im, "leaf_weights has %lld entries, leaf_targetids %d", (long long)lw->numel, nlt);
  if (ntargets < 1 || ntargets > TREE_MAX) return imp_error(im, "n_targets must be in [1, %d], got %lld", TREE_MAX, (long long)ntargets);
  for (int i = 0; i < nlt; i++)
    if (ltarget[i] < 0 || ltarget[i] >= ntargets)
      return imp_error(im, "leaf_targetids[%d] = %lld is outside [0, n_targets = %lld)", i, (long long)ltarget[i], (long long)ntargets);
  if (agg < 0 || agg > 3) return imp_error(im, "aggregate_function %lld is not one of 0-3", (long long)agg);
  if (post != 0)
    return imp_error(im, "post_transform %lld is not supported (only NONE: ONNX's reference applies none)", (long long)post);
  if (nroots < 1) return imp_error(im, "needs at least one tree (tree_roots)");
  int64_t F = x->type.shape[1];
  for (int i = 0; i < ntn; i++)
    if (c.feat[i] < 0 || c.feat[i] >= F)
      return imp_error(im, "nodes_featureids[%d] = %lld is outside X's %lld features", i, (long long)c.feat[i], (long long)F);
  TreeCaps cap = {0, 0, 0};
  /* per tree, the paths (a degenerate tree is one leaf: the reference
   * takes the root's index as the leaf's) */
  int64_t *tree_const_leaf = KNEWN(int64_t, nroots + 1);
  for (int r = 0; r < nroots; r++) {
    int64_t root = roots[r];
    tree_const_leaf[r] = -1;
    if (root < 0 || root >= ntn) return imp_error(im, "tree_roots[%d] = %lld is outside the %d nodes", r, (long long)root, ntn);
    if (c.tleaf[root] && c.fleaf[root] && c.tnode[root] == c.fnode[root]) {
      if (root >= nlt) return imp_error(im, "tree %d is a single leaf %lld, outside the %d leaves", r, (long long)root, nlt);
      tree_const_leaf[r] = root;
      continue;
    }
    if (tree_visit(&c, &cap, root, 0)) return -1;
  }
  if (c.member_pos < (c.members ? c.members->numel : 0))
    return imp_error(im, "membership_values has more sets than set membership nodes");
  int64_t N = x->type.shape[0], K = c.K, P = c.P, T = ntargets;
  if (K * P > ((int64_t)1 << 26) || T * P > ((int64_t)1 << 26))
    return imp_error(im, "%lld paths over %lld node visits: Kiln maps TreeEnsemble to dense products and takes at most "
                         "2^26 elements a matrix", (long long)P, (long long)K);
  DType ct = t.bits == 64 ? DT_F64 : DT_F32; /* float16 computes in float32 */
  GNode *xc = dt_eq(t, ct) ? x : imp_cast(im, x, ct);
  GNode *Y = NULL;
  if (P > 0) {
    /* the answers C [N, K] */
    int64_t *fi;
    GNode *fidx = imp_new_i64(im, 1, &K, &fi);
    if (!fidx) return -1;
    for (int64_t k = 0; k < K; k++) fi[k] = c.kfeat[k];
    GAttrs a = gattrs_new();
    ga_int(&a, "axis", 1);
    GNode *ta[2] = {xc, fidx};
    GNode *xs = imp_call(im, "take", 2, ta, a); /* [N, K] */
    void *sp, *mp, *tp;
    GNode *split = imp_new_const(im, ct, 1, &K, &sp), *mode = imp_new_const(im, DT_I64, 1, &K, &mp),
          *track = imp_new_const(im, DT_BOOL, 1, &K, &tp);
    if (!split || !mode || !track || !xs) return -1;
    for (int64_t k = 0; k < K; k++) {
      imp_array_set(split->value, k, c.ksplit[k]);
      ((int64_t *)mp)[k] = c.kmode[k];
      ((uint8_t *)tp)[k] = (uint8_t)c.ktracks[k];
    }
    static const char *const cmp[6] = {"less_equal", "less", "greater_equal", "greater", "equal", "not_equal"};
    GNode *cond = NULL;
    for (int m = 5; m >= 0; m--) {
      GNode *ck = bin(im, cmp[m], xs, split);
      cond = cond ? imp_where(im, bin(im, "equal", mode, imp_scalar(im, m, DT_I64)), ck, cond) : ck;
    }
    if (c.nmem > 0) { /* set membership: any member equal */
      int64_t M = c.nmem, *mf;
      GNode *midx = imp_new_i64(im, 1, &M, &mf);
      void *vp, *wp;
      GNode *mval = imp_new_const(im, ct, 1, &M, &vp);
      int64_t ws[2] = {K, M};
      GNode *sel = imp_new_const(im, DT_F32, 2, ws, &wp);
      if (!midx || !mval || !sel) return -1;
      for (int64_t j = 0; j < M; j++) {
        mf[j] = c.kfeat[c.mem_node[j]];
        imp_array_set(mval->value, j, c.mem_val[j]);
        ((float *)wp)[c.mem_node[j] * M + j] = 1;
      }
      GAttrs a2 = gattrs_new();
      ga_int(&a2, "axis", 1);
      GNode *tb[2] = {xc, midx};
      GNode *hit = imp_cast(im, bin(im, "equal", imp_call(im, "take", 2, tb, a2), mval), DT_F32); /* [N, M] */
      GNode *member = bin(im, "greater", dense(im, hit, sel), imp_scalar(im, 0.5, DT_F32));  /* [N, K] */
      cond = imp_where(im, bin(im, "equal", mode, imp_scalar(im, 6, DT_I64)), member, cond);
    }
    cond = bin(im, "logical_or", cond, bin(im, "logical_and", un(im, "isnan", xs), track));
    GNode *C = imp_cast(im, cond, DT_F32);
    /* the agreeing answers per path */
    int64_t as[2] = {P, K};
    void *atp, *afp;
    GNode *At = imp_new_const(im, DT_F32, 2, as, &atp), *Af = imp_new_const(im, DT_F32, 2, as, &afp);
    if (!At || !Af || !C) return -1;
    for (int64_t p = 0; p < P; p++)
      for (int64_t d = 0; d < c.pdepth[p]; d++) {
        int64_t q = c.poff[p] + d;
        ((float *)(c.pbranch[q] ? atp : afp))[p * K + c.pk[q]] += 1;
      }
    GNode *agree = bin(im, "add", dense(im, C, At), dense(im, bin(im, "subtract", imp_scalar(im, 1, DT_F32), C), Af));
    void *dp;
    GNode *depth = imp_new_const(im, DT_F32, 1, &P, &dp);
    if (!depth) return -1;
    for (int64_t p = 0; p < P; p++) ((float *)dp)[p] = (float)c.pdepth[p];
    GNode *taken = bin(im, "equal", agree, depth); /* [N, P] */
    if (agg <= 1) {
      int64_t ws[2] = {T, P};
      void *wp;
      GNode *W = imp_new_const(im, ct, 2, ws, &wp);
      if (!W) return -1;
      for (int64_t p = 0; p < P; p++)
        imp_array_set(W->value, ltarget[c.pleaf[p]] * P + p, tensor_at(lw, c.pleaf[p]) / (agg == 0 ? (double)nroots : 1.0));
      Y = dense(im, imp_cast(im, taken, ct), W);
    } else {
      int64_t ms[2] = {T, P};
      void *mp2, *wp;
      GNode *tmask = imp_new_const(im, DT_BOOL, 2, ms, &mp2), *w = imp_new_const(im, ct, 1, &P, &wp);
      if (!tmask || !w) return -1;
      for (int64_t p = 0; p < P; p++) {
        ((uint8_t *)mp2)[ltarget[c.pleaf[p]] * P + p] = 1;
        imp_array_set(w->value, p, tensor_at(lw, c.pleaf[p]));
      }
      double init = agg == 2 ? (t.bits == 16 ? 65504.0 : t.bits == 32 ? 3.4028234663852886e38 : 1.7976931348623157e308)
                             : (t.bits == 16 ? -65504.0 : t.bits == 32 ? -3.4028234663852886e38 : -1.7976931348623157e308);
      GNode *on = bin(im, "logical_and", imp_expand_dims(im, taken, 1), tmask); /* [N, T, P] */
      GNode *vals = imp_where(im, on, w, imp_scalar(im, init, ct));
      int64_t ax = 2;
      Y = imp_reduce(im, agg == 2 ? "min" : "max", vals, 1, &ax, false);
    }
  }
  /* trees that are a single leaf add the same to every sample */
  for (int r = 0; r < nroots; r++) {
    if (tree_const_leaf[r] < 0) continue;
    int64_t leaf = tree_const_leaf[r], tgt = ltarget[leaf];
    if (tgt < 0 || tgt >= T) return imp_error(im, "leaf_targetids[%lld] is outside the targets", (long long)leaf);
    int64_t one[2] = {1, T};
    void *vp;
    GNode *row = imp_new_const(im, ct, 2, one, &vp), *mask = NULL;
    if (!row) return -1;
    double w = tensor_at(lw, leaf);
    if (agg <= 1) {
      imp_array_set(row->value, tgt, w / (agg == 0 ? (double)nroots : 1.0));
      Y = Y ? bin(im, "add", Y, row) : bin(im, "add", imp_scalar(im, 0, ct), row);
    } else {
      void *mp3;
      mask = imp_new_const(im, DT_BOOL, 2, one, &mp3);
      if (!mask) return -1;
      ((uint8_t *)mp3)[tgt] = 1;
      imp_array_set(row->value, tgt, w);
      double init = agg == 2 ? 3.4e38 : -3.4e38;
      if (!Y) Y = imp_where(im, mask, row, imp_scalar(im, init, ct));
      else Y = imp_where(im, mask, bin(im, agg == 2 ? "minimum" : "maximum", Y, row), Y);
    }
  }
  if (!Y) return imp_error(im, "no tree reaches a leaf");
  /* a constant row broadcast to [N, T] when every tree was a single leaf */
  if (Y->type.shape[0] != N) {
    int64_t zs[2] = {N, T};
    void *zp;
    GNode *z = imp_new_const(im, ct, 2, zs, &zp);
    if (!z) return -1;
    Y = bin(im, "add", z, Y);
  }
  return out0(im, dt_eq(t, ct) ? Y : imp_cast(im, Y, t));
}
