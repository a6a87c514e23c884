/*
 * compute.c - the op table's compute adapters: read a node's
 * attributes and call the operator library (src/topi).  One function per
 * op family dispatches on the op name; each op's row in op_*.c points at
 * its family.
 */
#include "compute.h"

#include <math.h>
#include <string.h>

#include "../backend/strategy.h"
#include "util.h"

static const char *nm(GNode *n) { return n->op->name; }
static bool is(GNode *n, const char *s) { return !strcmp(n->op->name, s); }

static void get2(GNode *n, const char *key, int64_t d, int64_t out[2]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, key, &v);
  out[0] = out[1] = d;
  if (k == 1) out[0] = out[1] = v[0];
  if (k >= 2) out[0] = v[0], out[1] = v[1];
}

static void get_pad4(GNode *n, int64_t out[4]) {
  const int64_t *v;
  int k = gattr_ints(&n->attrs, "padding", &v);
  for (int i = 0; i < 4; i++) out[i] = 0;
  if (k == 1) out[0] = out[1] = out[2] = out[3] = v[0];
  if (k == 2) out[0] = out[2] = v[0], out[1] = out[3] = v[1];
  if (k == 4)
    for (int i = 0; i < 4; i++) out[i] = v[i];
}

Tensor *compute_elemwise(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const char *op = nm(n);
  const GAttrs *a = &n->attrs;
  if (is(n, "nn.relu")) return topi_unary(TOPI_relu, ins[0]);
  if (is(n, "copy")) return topi_unary(TOPI_identity, ins[0]);
  if (is(n, "nn.leaky_relu")) return topi_leaky_relu(ins[0], gattr_float(a, "alpha", 0.01));
  if (is(n, "nn.elu")) return topi_elu(ins[0], gattr_float(a, "alpha", 1.0));
  if (is(n, "nn.selu")) return topi_selu(ins[0], gattr_float(a, "alpha", 1.6732632423543772), gattr_float(a, "gamma", 1.0507009873554805));
  if (is(n, "nn.celu")) return topi_celu(ins[0], gattr_float(a, "alpha", 1.0));
  if (is(n, "nn.thresholded_relu")) return topi_thresholded_relu(ins[0], gattr_float(a, "alpha", 1.0));
  if (is(n, "nn.hard_sigmoid")) return topi_hard_sigmoid(ins[0], gattr_float(a, "alpha", 0.2), gattr_float(a, "beta", 0.5));
  if (is(n, "nn.softplus")) return topi_unary(TOPI_softplus, ins[0]);
  if (is(n, "nn.softsign")) return topi_unary(TOPI_softsign, ins[0]);
  if (is(n, "nn.hard_swish")) return topi_unary(TOPI_hard_swish, ins[0]);
  if (is(n, "nn.gelu")) return topi_unary(!strcmp(gattr_str(a, "approximate", "none"), "tanh") ? TOPI_gelu_tanh : TOPI_gelu, ins[0]);
  if (is(n, "clip")) return topi_clip(ins[0], gattr_float(a, "a_min", -INFINITY), gattr_float(a, "a_max", INFINITY));
  if (is(n, "cast")) return topi_cast(ins[0], n->type.dtype);
  if (is(n, "nn.prelu")) return topi_prelu(ins[0], ins[1]);
  if (is(n, "where")) return topi_where(ins[0], ins[1], ins[2]);
  if (is(n, "nn.bias_add")) {
    /* bias [C] broadcast along axis: view it as [C, 1, ..., 1] */
    int axis = (int)gattr_int(a, "axis", 1);
    int nd = ins[0]->ndim;
    if (axis < 0) axis += nd;
    int64_t shape[GRAPH_MAX_DIMS];
    int k = 0;
    shape[k++] = te_dim(ins[1], 0);
    for (int i = axis + 1; i < nd; i++) shape[k++] = 1;
    Tensor *b = k > 1 ? topi_reshape(ins[1], k, shape) : ins[1];
    return topi_binary(TOPI_add, ins[0], b);
  }
  if (n->nargs == 1) {
    int u = topi_unary_lookup(op);
    if (u >= 0) return topi_unary((TopiUnary)u, ins[0]);
  } else if (n->nargs == 2) {
    int b = topi_binary_lookup(op);
    if (b >= 0) return topi_binary((TopiBinary)b, ins[0], ins[1]);
  }
  return kiln_set_error("no compute for %s", op), NULL;
}

Tensor *compute_nn(GNode *n, Tensor **ins, const Strategy *st) {
  const GAttrs *a = &n->attrs;
  int64_t strd[2], dl[2], pad[4];
  get2(n, "strides", 1, strd);
  get2(n, "dilation", 1, dl);
  get_pad4(n, pad);
  if (is(n, "nn.conv2d")) {
    int64_t groups = gattr_int(a, "groups", 1);
    return topi_conv2d_nchw(ins[0], ins[1], strd, pad, dl, (int)groups);
  }
  if (is(n, "nn.contrib_conv2d_NCHWc") || is(n, "nn.contrib_depthwise_conv2d_NCHWc") ||
      is(n, "nn.contrib_conv2d_winograd_NCHWc"))
    return graph_compute_conv2d_nchwc(n, ins, st);
  if (is(n, "nn.contrib_conv2d_winograd_weight_transform"))
    return topi_x86_winograd_weight_transform(ins[0], gattr_int(a, "tile_size", 0), gattr_int(a, "out_block", 0));
  if (is(n, "nn.conv2d_transpose")) {
    int64_t op[2];
    get2(n, "output_padding", 0, op);
    return topi_conv2d_transpose_nchw(ins[0], ins[1], strd, pad, op, dl, (int)gattr_int(a, "groups", 1));
  }
  if (is(n, "nn.contrib_dense_pack")) return graph_compute_dense(n, ins, st);
  if (is(n, "nn.dense")) {
    if (st && st->config && ins[0]->ndim == 2) return graph_compute_dense(n, ins, st);
    if (ins[0]->ndim == 2) return topi_dense(ins[0], ins[1], NULL);
    /* leading dims are batch: flatten them around the 2-D kernel */
    int nd = ins[0]->ndim;
    int64_t m = 1;
    for (int i = 0; i < nd - 1; i++) m *= te_dim(ins[0], i);
    int64_t s2[2] = {m, te_dim(ins[0], nd - 1)};
    Tensor *y = topi_dense(topi_reshape(ins[0], 2, s2), ins[1], NULL);
    return y ? topi_reshape(y, n->type.ndim, n->type.shape) : NULL;
  }
  if (is(n, "nn.matmul")) return graph_compute_matmul(n, ins, st);
  const char *layout = gattr_str(a, "layout", "NCHW");
  if (is(n, "nn.max_pool2d") || is(n, "nn.avg_pool2d")) {
    int64_t ps[2];
    get2(n, "pool_size", 1, ps);
    return topi_pool2d(ins[0], is(n, "nn.max_pool2d") ? TOPI_POOL_MAX : TOPI_POOL_AVG, ps, strd, dl, pad,
                       gattr_int(a, "ceil_mode", 0) != 0, gattr_int(a, "count_include_pad", 0) != 0, layout);
  }
  if (is(n, "nn.lp_pool2d")) {
    /* (sum over the window of |x|^p)^(1/p) = avg_pool(|x|^p, include pad) * k ^ (1/p) */
    int64_t ps[2];
    get2(n, "pool_size", 1, ps);
    double p = (double)gattr_int(a, "p", 2);
    Tensor *ax = topi_unary(TOPI_abs, ins[0]);
    Tensor *pw = topi_binary(TOPI_power, ax, topi_full(0, NULL, ins[0]->dtype, p));
    Tensor *avg = topi_pool2d(pw, TOPI_POOL_AVG, ps, strd, dl, pad, gattr_int(a, "ceil_mode", 0) != 0, true, layout);
    Tensor *sum = topi_binary(TOPI_multiply, avg, topi_full(0, NULL, ins[0]->dtype, (double)(ps[0] * ps[1])));
    return topi_binary(TOPI_power, sum, topi_full(0, NULL, ins[0]->dtype, 1.0 / p));
  }
  if (is(n, "nn.global_avg_pool2d")) return topi_global_pool2d(ins[0], TOPI_POOL_AVG, layout);
  if (is(n, "nn.global_max_pool2d")) return topi_global_pool2d(ins[0], TOPI_POOL_MAX, layout);
  if (is(n, "nn.adaptive_avg_pool2d")) {
    int64_t os[2];
    get2(n, "output_size", 1, os);
    return topi_adaptive_pool2d(ins[0], TOPI_POOL_AVG, os, layout);
  }
  int nd = ins[0]->ndim;
  if (is(n, "nn.softmax") || is(n, "nn.log_softmax")) {
    int axis;
    if (norm_axis("axis", gattr_int(a, "axis", -1), nd, &axis)) return NULL;
    return is(n, "nn.softmax") ? topi_softmax(ins[0], axis) : topi_log_softmax(ins[0], axis);
  }
  if (is(n, "nn.layer_norm")) {
    int axis;
    if (norm_axis("axis", gattr_int(a, "axis", -1), nd, &axis)) return NULL;
    return topi_layer_norm(ins[0], n->nargs > 1 ? ins[1] : NULL, n->nargs > 2 ? ins[2] : NULL, axis, gattr_float(a, "epsilon", 1e-5));
  }
  if (is(n, "nn.instance_norm")) return topi_instance_norm(ins[0], ins[1], ins[2], gattr_float(a, "epsilon", 1e-5));
  if (is(n, "nn.lrn"))
    return topi_lrn(ins[0], (int)gattr_int(a, "size", 1), gattr_float(a, "alpha", 1e-4), gattr_float(a, "beta", 0.75),
                    gattr_float(a, "bias", 1.0));
  return kiln_set_error("no compute for %s", nm(n)), NULL;
}

static int parse_coord(const char *s, TopiCoordMode *m) {
  static const struct {
    const char *n;
    TopiCoordMode m;
  } t[] = {{"half_pixel", TOPI_COORD_HALF_PIXEL},
           {"align_corners", TOPI_COORD_ALIGN_CORNERS},
           {"asymmetric", TOPI_COORD_ASYMMETRIC},
           {"pytorch_half_pixel", TOPI_COORD_PYTORCH_HALF_PIXEL},
           {"tf_half_pixel_for_nearest", TOPI_COORD_TF_HALF_PIXEL_FOR_NEAREST},
           {"half_pixel_symmetric", TOPI_COORD_HALF_PIXEL_SYMMETRIC}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(s, t[i].n)) {
      *m = t[i].m;
      return 0;
    }
  return kiln_set_error("resize: coordinate_transformation_mode '%s' is not supported", s);
}

static int parse_nearest(const char *s, TopiNearestMode *m) {
  static const struct {
    const char *n;
    TopiNearestMode m;
  } t[] = {{"round_prefer_floor", TOPI_NEAREST_ROUND_PREFER_FLOOR},
           {"round_prefer_ceil", TOPI_NEAREST_ROUND_PREFER_CEIL},
           {"floor", TOPI_NEAREST_FLOOR},
           {"ceil", TOPI_NEAREST_CEIL}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(s, t[i].n)) {
      *m = t[i].m;
      return 0;
    }
  return kiln_set_error("resize: nearest_mode '%s' is not supported", s);
}

/* A symbolic reshape's output shape in terms of its input tensor's
 * (kernel-local) sizes: newshape's 0 copies, -1 is the rest over the
 * constants (the graph's inference checked the element count). */
static Expr **sym_reshape_shape(GNode *n, Tensor *x) {
  Expr **s = KNEWN(Expr *, n->type.ndim + 1);
  const int64_t *ns;
  int k = gattr_ints(&n->attrs, "newshape", &ns);
  if (is(n, "nn.batch_flatten")) {
    static const int64_t flat[2] = {0, -1};
    ns = flat, k = 2;
  }
  bool allowzero = gattr_int(&n->attrs, "allowzero", 0) != 0, copied[GRAPH_MAX_DIMS] = {0};
  int64_t known = 1;
  int infer = -1;
  for (int d = 0; d < k && d < n->type.ndim; d++) {
    if (ns[d] == 0 && !allowzero) s[d] = x->shape[d], copied[d] = true;
    else if (ns[d] == -1) infer = d;
    else s[d] = ir_i32(ns[d]), known *= ns[d];
  }
  if (infer >= 0) {
    Expr *rest = ir_i32(1);
    for (int d = 0; d < x->ndim; d++)
      if (!copied[d]) rest = ir_mul(rest, x->shape[d]);
    s[infer] = ir_simplify(ir_floordiv(rest, ir_i32(known)));
  }
  return s;
}

Tensor *compute_transform(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
  const int64_t *v;
  int k;
  if (is(n, "reshape") || is(n, "nn.batch_flatten"))
    return ttype_is_symbolic(&n->type) ? topi_reshape_expr(ins[0], n->type.ndim, sym_reshape_shape(n, ins[0]))
                                       : topi_reshape(ins[0], n->type.ndim, n->type.shape);
  if (is(n, "transpose")) {
    k = gattr_ints(a, "axes", &v);
    if (!k) return topi_transpose(ins[0], NULL);
    int64_t p[GRAPH_MAX_DIMS];
    for (int i = 0; i < k; i++) p[i] = v[i] < 0 ? v[i] + k : v[i];
    return topi_transpose(ins[0], p);
  }
  if (is(n, "squeeze")) return topi_reshape(ins[0], n->type.ndim, n->type.shape);
  if (is(n, "expand_dims")) return topi_reshape(ins[0], n->type.ndim, n->type.shape);
  if (is(n, "concatenate")) {
    int axis;
    if (norm_axis("axis", gattr_int(a, "axis", 0), ins[0]->ndim, &axis)) return NULL;
    return topi_concat(n->nargs, ins, axis);
  }
  if (is(n, "strided_slice")) {
    const int64_t *b, *e, *s, *ax;
    int nb = gattr_ints(a, "begin", &b);
    gattr_ints(a, "end", &e);
    int ns = gattr_ints(a, "strides", &s), na = gattr_ints(a, "axes", &ax);
    return topi_strided_slice(ins[0], nb, b, e, ns ? s : NULL, na ? ax : NULL);
  }
  if (is(n, "take")) {
    int axis;
    if (norm_axis("axis", gattr_int(a, "axis", 0), ins[0]->ndim, &axis)) return NULL;
    return topi_gather(ins[0], ins[1], axis);
  }
  if (is(n, "gather_elements")) {
    int axis;
    if (norm_axis("axis", gattr_int(a, "axis", 0), ins[0]->ndim, &axis)) return NULL;
    return topi_gather_elements(ins[0], ins[1], axis);
  }
  if (is(n, "nn.pad")) {
    k = gattr_ints(a, "pads", &v);
    const char *mode = gattr_str(a, "pad_mode", "constant");
    TopiPadMode m = !strcmp(mode, "reflect") ? TOPI_PAD_REFLECT : !strcmp(mode, "edge") ? TOPI_PAD_EDGE : TOPI_PAD_CONSTANT;
    return topi_pad(ins[0], v, m, gattr_float(a, "pad_value", 0));
  }
  if (is(n, "tile")) {
    gattr_ints(a, "reps", &v);
    return topi_tile(ins[0], v);
  }
  if (is(n, "broadcast_to")) return topi_expand(ins[0], n->type.ndim, n->type.shape);
  if (is(n, "image.resize2d")) {
    const char *m = gattr_str(a, "method", "nearest");
    TopiResizeMethod meth = !strcmp(m, "linear") ? TOPI_RESIZE_LINEAR : !strcmp(m, "cubic") ? TOPI_RESIZE_CUBIC : TOPI_RESIZE_NEAREST;
    TopiCoordMode cm = TOPI_COORD_HALF_PIXEL;
    TopiNearestMode nmode = TOPI_NEAREST_ROUND_PREFER_FLOOR;
    if (parse_coord(gattr_str(a, "coordinate_transformation_mode", "half_pixel"), &cm) ||
        parse_nearest(gattr_str(a, "nearest_mode", "round_prefer_floor"), &nmode))
      return NULL;
    const GAttr *sc = gattr_find(a, "scales");
    return topi_resize(ins[0], n->type.shape, sc && sc->kind == GA_FLOATS ? sc->floats : NULL, meth, cm, nmode,
                       gattr_float(a, "cubic_coeff_a", -0.75), gattr_int(a, "exclude_outside", 0) != 0);
  }
  if (is(n, "nn.depth_to_space"))
    return topi_depth_to_space(ins[0], (int)gattr_int(a, "block_size", 1), !strcmp(gattr_str(a, "mode", "DCR"), "CRD"));
  if (is(n, "nn.space_to_depth")) return topi_space_to_depth(ins[0], (int)gattr_int(a, "block_size", 1));
  if (is(n, "one_hot")) {
    int axis;
    if (norm_axis("axis", gattr_int(a, "axis", -1), n->type.ndim, &axis)) return NULL;
    return topi_one_hot(ins[0], gattr_int(a, "depth", 1), gattr_float(a, "on_value", 1), gattr_float(a, "off_value", 0), axis,
                        n->type.dtype);
  }
  if (is(n, "layout_transform"))
    return topi_layout_transform(ins[0], gattr_str(a, "src_layout", ""), gattr_str(a, "dst_layout", ""));
  return kiln_set_error("no compute for %s", nm(n)), NULL;
}

/* reduce axes of the node (see reduce.c) */
int reduce_axes(GNode *n, const TType *d, bool *mask);

Tensor *compute_reduce(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
  bool keep = gattr_int(a, "keepdims", 0) != 0;
  const TType *d = &n->args[0]->type;
  if (is(n, "argmax") || is(n, "argmin")) {
    const int64_t *v;
    gattr_ints(a, "axis", &v);
    int axis;
    if (norm_axis("axis", v[0], d->ndim, &axis)) return NULL;
    bool last = gattr_int(a, "select_last_index", 0) != 0;
    return is(n, "argmax") ? topi_argmax(ins[0], axis, keep, last) : topi_argmin(ins[0], axis, keep, last);
  }
  bool mask[GRAPH_MAX_DIMS];
  if (reduce_axes(n, d, mask)) return NULL;
  int64_t axes[GRAPH_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < d->ndim; i++)
    if (mask[i]) axes[k++] = i;
  static const struct {
    const char *g;
    TopiReduce t;
  } m[] = {{"sum", TOPI_REDUCE_sum},       {"mean", TOPI_REDUCE_mean},   {"max", TOPI_REDUCE_max},
           {"min", TOPI_REDUCE_min},       {"prod", TOPI_REDUCE_prod},   {"l1_norm", TOPI_REDUCE_l1},
           {"l2_norm", TOPI_REDUCE_l2},    {"sum_square", TOPI_REDUCE_sum_square},
           {"logsumexp", TOPI_REDUCE_log_sum_exp}};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (is(n, m[i].g)) {
      if (k == 0 && d->ndim > 0) { /* reduce nothing: identity copy */
        return topi_unary(TOPI_identity, ins[0]);
      }
      if (d->ndim == 0) return topi_unary(TOPI_identity, ins[0]);
      return topi_reduce(m[i].t, ins[0], k, axes, keep);
    }
  return kiln_set_error("no compute for %s", nm(n)), NULL;
}
