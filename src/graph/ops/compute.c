/*
 * compute.c - the computes the op table's rows point at: each reads its
 * node's attributes and calls the operator library (src/topi).  One
 * function per op (or per group of ops that differ only in what the
 * operator library is asked for: the unary and binary ops it knows by
 * name, the reshapes); a row names its compute, so nothing here tests an
 * op's name.
 */
#include "compute.h"

#include <math.h>
#include <string.h>

#include "../backend/strategy.h"
#include "util.h"

static const char *nm(GNode *n) { return n->op->name; }

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

/* ---- elementwise ---- */

/* A unary or binary op the operator library knows by the op's name
 * (topi_unary_lookup / topi_binary_lookup: "exp", "add", ...). */
Tensor *compute_unary(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int u = topi_unary_lookup(nm(n));
  if (u < 0) return kiln_set_error("no compute for %s", nm(n)), NULL;
  return topi_unary((TopiUnary)u, ins[0]);
}

Tensor *compute_binary(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int b = topi_binary_lookup(nm(n));
  if (b < 0) return kiln_set_error("no compute for %s", nm(n)), NULL;
  return topi_binary((TopiBinary)b, ins[0], ins[1]);
}

/* A unary op whose compute is one call of the operator library with the
 * node's float attributes: COMPUTE_UNARY(name, call using a and x). */
#define COMPUTE_UNARY(fn, expr)                                    \
  Tensor *fn(GNode *n, Tensor **ins, const Strategy *st) {         \
    (void)st;                                                      \
    const GAttrs *a = &n->attrs;                                   \
    Tensor *x = ins[0];                                            \
    (void)a;                                                       \
    return expr;                                                   \
  }

COMPUTE_UNARY(compute_relu, topi_unary(TOPI_relu, x))
COMPUTE_UNARY(compute_copy, topi_unary(TOPI_identity, x))
COMPUTE_UNARY(compute_leaky_relu, topi_leaky_relu(x, gattr_float(a, "alpha", 0.01)))
COMPUTE_UNARY(compute_elu, topi_elu(x, gattr_float(a, "alpha", 1.0)))
COMPUTE_UNARY(compute_selu, topi_selu(x, gattr_float(a, "alpha", 1.6732632423543772), gattr_float(a, "gamma", 1.0507009873554805)))
COMPUTE_UNARY(compute_celu, topi_celu(x, gattr_float(a, "alpha", 1.0)))
COMPUTE_UNARY(compute_thresholded_relu, topi_thresholded_relu(x, gattr_float(a, "alpha", 1.0)))
COMPUTE_UNARY(compute_hard_sigmoid, topi_hard_sigmoid(x, gattr_float(a, "alpha", 0.2), gattr_float(a, "beta", 0.5)))
COMPUTE_UNARY(compute_softplus, topi_unary(TOPI_softplus, x))
COMPUTE_UNARY(compute_softsign, topi_unary(TOPI_softsign, x))
COMPUTE_UNARY(compute_hard_swish, topi_unary(TOPI_hard_swish, x))
COMPUTE_UNARY(compute_gelu, topi_unary(!strcmp(gattr_str(a, "approximate", "none"), "tanh") ? TOPI_gelu_tanh : TOPI_gelu, x))
COMPUTE_UNARY(compute_silu, topi_unary(TOPI_silu, x))
COMPUTE_UNARY(compute_clip, topi_clip(x, gattr_float(a, "a_min", -INFINITY), gattr_float(a, "a_max", INFINITY)))
COMPUTE_UNARY(compute_cast, topi_cast(x, n->type.dtype))

Tensor *compute_prelu(GNode *n, Tensor **ins, const Strategy *st) {
  (void)n, (void)st;
  return topi_prelu(ins[0], ins[1]);
}

Tensor *compute_where(GNode *n, Tensor **ins, const Strategy *st) {
  (void)n, (void)st;
  return topi_where(ins[0], ins[1], ins[2]);
}

Tensor *compute_bias_add(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  /* bias [C] broadcast along axis: view it as [C, 1, ..., 1] */
  int axis = (int)gattr_int(&n->attrs, "axis", 1);
  int nd = ins[0]->ndim;
  if (axis < 0) axis += nd;
  int64_t shape[GRAPH_MAX_DIMS];
  int k = 0;
  shape[k++] = te_dim(ins[1], 0);
  for (int i = axis + 1; i < nd; i++) shape[k++] = 1;
  Tensor *b = k > 1 ? topi_reshape(ins[1], k, shape) : ins[1];
  return topi_binary(TOPI_add, ins[0], b);
}

/* ---- nn ---- */

/* strides, dilation and padding of a convolution or pooling node */
typedef struct Window {
  int64_t strd[2], dl[2], pad[4];
} Window;

static Window window(GNode *n) {
  Window w;
  get2(n, "strides", 1, w.strd);
  get2(n, "dilation", 1, w.dl);
  get_pad4(n, w.pad);
  return w;
}

Tensor *compute_conv2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  Window w = window(n);
  return topi_conv2d_nchw(ins[0], ins[1], w.strd, w.pad, w.dl, (int)gattr_int(&n->attrs, "groups", 1));
}

Tensor *compute_winograd_weight_transform(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_x86_winograd_weight_transform(ins[0], gattr_int(&n->attrs, "tile_size", 0), gattr_int(&n->attrs, "out_block", 0));
}

Tensor *compute_conv2d_transpose(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  Window w = window(n);
  int64_t op[2];
  get2(n, "output_padding", 0, op);
  return topi_conv2d_transpose_nchw(ins[0], ins[1], w.strd, w.pad, op, w.dl, (int)gattr_int(&n->attrs, "groups", 1));
}

Tensor *compute_dense(GNode *n, Tensor **ins, const Strategy *st) {
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

/* batch_matmul.x86's compute when the strategy chose it (strategy.c) */
Tensor *compute_matmul(GNode *n, Tensor **ins, const Strategy *st) { return graph_compute_matmul(n, ins, st); }

static Tensor *pool2d(GNode *n, Tensor **ins, TopiPoolKind kind) {
  const GAttrs *a = &n->attrs;
  Window w = window(n);
  int64_t ps[2];
  get2(n, "pool_size", 1, ps);
  return topi_pool2d(ins[0], kind, ps, w.strd, w.dl, w.pad, gattr_int(a, "ceil_mode", 0) != 0,
                     gattr_int(a, "count_include_pad", 0) != 0, gattr_str(a, "layout", "NCHW"));
}

Tensor *compute_max_pool2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return pool2d(n, ins, TOPI_POOL_MAX);
}

Tensor *compute_avg_pool2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return pool2d(n, ins, TOPI_POOL_AVG);
}

Tensor *compute_lp_pool2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  /* (sum over the window of |x|^p)^(1/p) = avg_pool(|x|^p, include pad) * k ^ (1/p) */
  const GAttrs *a = &n->attrs;
  Window w = window(n);
  int64_t ps[2];
  get2(n, "pool_size", 1, ps);
  double p = (double)gattr_int(a, "p", 2);
  Tensor *ax = topi_unary(TOPI_abs, ins[0]);
  Tensor *pw = topi_binary(TOPI_power, ax, topi_full(0, NULL, ins[0]->dtype, p));
  Tensor *avg = topi_pool2d(pw, TOPI_POOL_AVG, ps, w.strd, w.dl, w.pad, gattr_int(a, "ceil_mode", 0) != 0, true,
                            gattr_str(a, "layout", "NCHW"));
  Tensor *sum = topi_binary(TOPI_multiply, avg, topi_full(0, NULL, ins[0]->dtype, (double)(ps[0] * ps[1])));
  return topi_binary(TOPI_power, sum, topi_full(0, NULL, ins[0]->dtype, 1.0 / p));
}

Tensor *compute_global_avg_pool2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_global_pool2d(ins[0], TOPI_POOL_AVG, gattr_str(&n->attrs, "layout", "NCHW"));
}

Tensor *compute_global_max_pool2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_global_pool2d(ins[0], TOPI_POOL_MAX, gattr_str(&n->attrs, "layout", "NCHW"));
}

Tensor *compute_adaptive_avg_pool2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int64_t os[2];
  get2(n, "output_size", 1, os);
  return topi_adaptive_pool2d(ins[0], TOPI_POOL_AVG, os, gattr_str(&n->attrs, "layout", "NCHW"));
}

Tensor *compute_softmax(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int axis;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", -1), ins[0]->ndim, &axis)) return NULL;
  return topi_softmax(ins[0], axis);
}

Tensor *compute_log_softmax(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int axis;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", -1), ins[0]->ndim, &axis)) return NULL;
  return topi_log_softmax(ins[0], axis);
}

Tensor *compute_layer_norm(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int axis;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", -1), ins[0]->ndim, &axis)) return NULL;
  return topi_layer_norm(ins[0], n->nargs > 1 ? ins[1] : NULL, n->nargs > 2 ? ins[2] : NULL, axis,
                         gattr_float(&n->attrs, "epsilon", 1e-5));
}

Tensor *compute_instance_norm(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_instance_norm(ins[0], ins[1], ins[2], gattr_float(&n->attrs, "epsilon", 1e-5));
}

Tensor *compute_lrn(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
  return topi_lrn(ins[0], (int)gattr_int(a, "size", 1), gattr_float(a, "alpha", 1e-4), gattr_float(a, "beta", 0.75),
                  gattr_float(a, "bias", 1.0));
}

/* ---- transform ---- */

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
 * constants (the graph's inference checked the element count); a
 * batch_flatten is newshape (0, -1). */
static Expr **sym_reshape_shape(GNode *n, Tensor *x, bool flatten) {
  Expr **s = KNEWN(Expr *, n->type.ndim + 1);
  const int64_t *ns;
  int k = gattr_ints(&n->attrs, "newshape", &ns);
  if (flatten) {
    static const int64_t flat[2] = {0, -1};
    ns = flat, k = 2;
  }
  bool allowzero = gattr_int(&n->attrs, "allowzero", 0) != 0, copied[GRAPH_MAX_DIMS] = {0};
  const char *st = flatten ? NULL : gattr_str(&n->attrs, "sym_newshape", NULL);
  if (st) {
    /* entries computed from the symbols (symshape.c's rule_reshape_exprs):
     * a bare symbol is the symbol (the kernel's other tensors may carry it
     * too), an expression a size of the kernel's own; either is bound from
     * the output tensor, whose shape the executor evaluated, where no input
     * has it.  The graph checked the element count. */
    for (int d = 0; d < n->type.ndim; d++) {
      size_t len = 0;
      const char *t = d < k ? sym_newshape_entry(st, d, &len) : NULL;
      Expr *e = ttype_is_symbolic(&n->type) ? n->type.sym->dim[d] : NULL;
      if (t && len && e && e->kind == EK_Var) s[d] = e;
      else if (t && len) s[d] = ir_var(kfmt("reshape_dim%d", d), DT_I32);
      else if (d < k && ns[d] == 0 && !allowzero) s[d] = x->shape[d];
      else s[d] = ir_i32(n->type.shape[d]);
    }
    return s;
  }
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

/* The output shape of a kernel whose sizes are given at run time
 * (sym_dims): a dimension that is a value symbol stays its Var, one that
 * is an expression of it (a tile's x_1*3) becomes a Var of its own; the
 * generated code binds both from the output tensor's shape. */
static Expr **run_time_shape(const TType *t) {
  Expr **s = ttype_shape_exprs(t);
  for (int d = 0; d < t->ndim; d++)
    if (t->sym->dim[d] && t->sym->dim[d]->kind != EK_Var) s[d] = ir_var(kfmt("out_dim%d", d), DT_I32);
  return s;
}

static Tensor *reshape(GNode *n, Tensor **ins, bool flatten) {
  /* a shape given at run time (sym_dims) */
  if (ttype_is_symbolic(&n->type) && gattr_str(&n->attrs, "sym_dims", NULL))
    return topi_reshape_expr(ins[0], n->type.ndim, run_time_shape(&n->type));
  return ttype_is_symbolic(&n->type) ? topi_reshape_expr(ins[0], n->type.ndim, sym_reshape_shape(n, ins[0], flatten))
                                     : topi_reshape(ins[0], n->type.ndim, n->type.shape);
}

Tensor *compute_reshape(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return reshape(n, ins, false);
}

Tensor *compute_batch_flatten(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return reshape(n, ins, true);
}

/* squeeze, expand_dims: the inferred (static) shape */
Tensor *compute_to_type_shape(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_reshape(ins[0], n->type.ndim, n->type.shape);
}

Tensor *compute_transpose(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const int64_t *v;
  int k = gattr_ints(&n->attrs, "axes", &v);
  if (!k) return topi_transpose(ins[0], NULL);
  int64_t p[GRAPH_MAX_DIMS];
  for (int i = 0; i < k; i++) p[i] = v[i] < 0 ? v[i] + k : v[i];
  return topi_transpose(ins[0], p);
}

Tensor *compute_concatenate(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int axis;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", 0), ins[0]->ndim, &axis)) return NULL;
  return topi_concat(n->nargs, ins, axis);
}

Tensor *compute_strided_slice(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
  const int64_t *b, *e, *s, *ax;
  int nb = gattr_ints(a, "begin", &b);
  gattr_ints(a, "end", &e);
  int ns = gattr_ints(a, "strides", &s), na = gattr_ints(a, "axes", &ax);
  return topi_strided_slice(ins[0], nb, b, e, ns ? s : NULL, na ? ax : NULL);
}

/* dyn.strided_slice (data, begin, strides, axes): the shape is the call's
 * sym_dims; the kernel reads begin, strides and axes. */
Tensor *compute_dyn_strided_slice(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_strided_slice_dyn(ins[0], ins[1], ins[2], ins[3],
                                ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type));
}

/* dyn.split (data[, sizes]): part `index`, its shape the call's sym_dims. */
Tensor *compute_dyn_split(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_split_dyn(ins[0], n->nargs > 1 ? ins[1] : NULL, (int)gattr_int(&n->attrs, "axis", 0),
                        (int)gattr_int(&n->attrs, "index", 0),
                        ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type));
}

/* dyn.pad (data, pads, axes[, value]): the shape is the call's sym_dims;
 * the kernel reads pads, axes and (constant mode) the value. */
Tensor *compute_dyn_pad(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const char *mode = gattr_str(&n->attrs, "pad_mode", "constant");
  TopiPadMode m = !strcmp(mode, "reflect") ? TOPI_PAD_REFLECT
                  : !strcmp(mode, "edge")  ? TOPI_PAD_EDGE
                  : !strcmp(mode, "wrap")  ? TOPI_PAD_WRAP
                                           : TOPI_PAD_CONSTANT;
  return topi_pad_dyn(ins[0], ins[1], ins[2], n->nargs > 3 ? ins[3] : NULL, m,
                      ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type));
}

/* dyn.center_crop_pad (data, sizes, axes): the shape is the call's
 * sym_dims; the kernel reads the sizes and axes. */
Tensor *compute_dyn_center_crop_pad(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_center_crop_pad_dyn(ins[0], ins[1], ins[2],
                                  ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type));
}

/* dyn.col2im (data, image_shape, block_shape): the shape is the call's
 * sym_dims; the kernel reads both sizes. */
Tensor *compute_dyn_col2im(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const int64_t *pads, *dil, *str;
  int d = n->type.ndim - 2;
  if (gattr_ints(&n->attrs, "pads", &pads) != 2 * d || gattr_ints(&n->attrs, "dilations", &dil) != d ||
      gattr_ints(&n->attrs, "strides", &str) != d)
    return kiln_set_error("dyn.col2im needs pads (%d values), dilations and strides (%d each)", 2 * d, d), NULL;
  return topi_col2im_dyn(ins[0], ins[1], ins[2], pads, dil, str,
                         ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type));
}

/* dyn.stft (signal, frame_step, frame_length[, window]): the shape is the
 * call's sym_dims; the kernel reads the step and the length. */
Tensor *compute_dyn_stft(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_stft_dyn(ins[0], ins[1], ins[2], n->nargs > 3 ? ins[3] : NULL, gattr_int(&n->attrs, "lmax", 0),
                       ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type));
}

/* dyn.arange (start, delta): the length is the call's sym_dims. */
Tensor *compute_dyn_arange(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  Expr **s = ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type);
  return topi_arange_dyn(ins[0], ins[1], s[0]);
}

Tensor *compute_take(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int axis;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", 0), ins[0]->ndim, &axis)) return NULL;
  return topi_gather(ins[0], ins[1], axis);
}

Tensor *compute_gather_elements(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int axis;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", 0), ins[0]->ndim, &axis)) return NULL;
  return topi_gather_elements(ins[0], ins[1], axis);
}

Tensor *compute_pad(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
  const int64_t *v;
  gattr_ints(a, "pads", &v);
  const char *mode = gattr_str(a, "pad_mode", "constant");
  TopiPadMode m = !strcmp(mode, "reflect") ? TOPI_PAD_REFLECT : !strcmp(mode, "edge") ? TOPI_PAD_EDGE : TOPI_PAD_CONSTANT;
  return topi_pad(ins[0], v, m, gattr_float(a, "pad_value", 0));
}

Tensor *compute_tile(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  if (ttype_is_symbolic(&n->type)) return topi_tile_expr(ins[0], run_time_shape(&n->type));
  const int64_t *v;
  gattr_ints(&n->attrs, "reps", &v);
  return topi_tile(ins[0], v);
}

Tensor *compute_broadcast_to(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  if (ttype_is_symbolic(&n->type)) return topi_expand_expr(ins[0], n->type.ndim, run_time_shape(&n->type));
  return topi_expand(ins[0], n->type.ndim, n->type.shape);
}

Tensor *compute_resize2d(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
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

/* dyn.resize (data, value): the shape is the call's sym_dims; the kernel
 * reads the scales or sizes for its coordinate transform. */
Tensor *compute_dyn_resize(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
  const char *m = gattr_str(a, "method", "nearest"), *by = gattr_str(a, "by", "scales");
  TopiResizeMethod meth = !strcmp(m, "linear") ? TOPI_RESIZE_LINEAR : !strcmp(m, "cubic") ? TOPI_RESIZE_CUBIC : TOPI_RESIZE_NEAREST;
  TopiResizeBy b = !strcmp(by, "sizes")        ? TOPI_RESIZE_BY_SIZES
                   : !strcmp(by, "not_larger")  ? TOPI_RESIZE_NOT_LARGER
                   : !strcmp(by, "not_smaller") ? TOPI_RESIZE_NOT_SMALLER
                                                : TOPI_RESIZE_BY_SCALES;
  TopiCoordMode cm = TOPI_COORD_HALF_PIXEL;
  TopiNearestMode nmode = TOPI_NEAREST_ROUND_PREFER_FLOOR;
  if (parse_coord(gattr_str(a, "coordinate_transformation_mode", "half_pixel"), &cm) ||
      parse_nearest(gattr_str(a, "nearest_mode", "round_prefer_floor"), &nmode))
    return NULL;
  const int64_t *ax, *res, *ins_shape;
  int na = gattr_ints(a, "axes", &ax), nr = gattr_ints(a, "resize", &res);
  if (gattr_ints(a, "in_shape", &ins_shape) != ins[0]->ndim || na > GRAPH_MAX_DIMS || nr > GRAPH_MAX_DIMS)
    return kiln_set_error("dyn.resize: in_shape, axes and resize must describe the input"), NULL;
  int axes[GRAPH_MAX_DIMS], r[GRAPH_MAX_DIMS];
  for (int i = 0; i < na; i++) axes[i] = (int)ax[i];
  for (int i = 0; i < nr; i++) r[i] = (int)res[i];
  return topi_resize_dyn(ins[0], ins[1], ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type),
                         b, na, axes, ins_shape, nr, r, meth, cm, nmode, gattr_float(a, "cubic_coeff_a", -0.75),
                         gattr_int(a, "exclude_outside", 0) != 0);
}

Tensor *compute_depth_to_space(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_depth_to_space(ins[0], (int)gattr_int(&n->attrs, "block_size", 1), !strcmp(gattr_str(&n->attrs, "mode", "DCR"), "CRD"));
}

Tensor *compute_space_to_depth(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_space_to_depth(ins[0], (int)gattr_int(&n->attrs, "block_size", 1));
}

Tensor *compute_one_hot(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  const GAttrs *a = &n->attrs;
  int axis;
  if (norm_axis("axis", gattr_int(a, "axis", -1), n->type.ndim, &axis)) return NULL;
  return topi_one_hot(ins[0], gattr_int(a, "depth", 1), gattr_float(a, "on_value", 1), gattr_float(a, "off_value", 0), axis,
                      n->type.dtype);
}

/* dyn.one_hot (indices, values): the depth is the output's dimension at
 * axis (a run-time size where sym_dims gives it); the kernel reads the
 * values. */
Tensor *compute_dyn_one_hot(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  int axis;
  if (norm_axis("axis", gattr_int(&n->attrs, "axis", -1), n->type.ndim, &axis)) return NULL;
  Expr **s = ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type);
  return topi_one_hot_dyn(ins[0], ins[1], s[axis], axis);
}

/* dyn.affine_grid (theta, size): the grid's sizes are the output's (run
 * time where sym_dims gives them). */
Tensor *compute_dyn_affine_grid(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  Expr **s = ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type);
  return topi_affine_grid_dyn(ins[0], ins[1], s, n->type.ndim - 2, gattr_int(&n->attrs, "align_corners", 0) != 0);
}

/* signal.window: its size from the output's shape when a value given at
 * run time decides it. */
Tensor *compute_window(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  (void)ins;
  const GAttrs *a = &n->attrs;
  Expr *size = ttype_is_symbolic(&n->type) ? run_time_shape(&n->type)[0] : ir_i32(n->type.shape[0]);
  return topi_window(size, gattr_int(a, "periodic", 1) != 0, gattr_float(a, "a0", 0), gattr_float(a, "a1", 0),
                     gattr_float(a, "a2", 0), n->type.dtype);
}

Tensor *compute_mel_weight_matrix(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_mel_weight_matrix(ins[0], ins[1], ins[2], ins[3],
                                ttype_is_symbolic(&n->type) ? run_time_shape(&n->type) : ttype_shape_exprs(&n->type),
                                n->type.dtype);
}

Tensor *compute_layout_transform(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return topi_layout_transform(ins[0], gattr_str(&n->attrs, "src_layout", ""), gattr_str(&n->attrs, "dst_layout", ""));
}

/* ---- reduce ---- */

/* reduce axes of the node (see reduce.c) */
int reduce_axes(GNode *n, const TType *d, bool *mask);

static Tensor *argreduce(GNode *n, Tensor **ins, bool max) {
  const GAttrs *a = &n->attrs;
  const TType *d = &n->args[0]->type;
  const int64_t *v;
  gattr_ints(a, "axis", &v);
  int axis;
  if (norm_axis("axis", v[0], d->ndim, &axis)) return NULL;
  bool keep = gattr_int(a, "keepdims", 0) != 0, last = gattr_int(a, "select_last_index", 0) != 0;
  return max ? topi_argmax(ins[0], axis, keep, last) : topi_argmin(ins[0], axis, keep, last);
}

Tensor *compute_argmax(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return argreduce(n, ins, true);
}

Tensor *compute_argmin(GNode *n, Tensor **ins, const Strategy *st) {
  (void)st;
  return argreduce(n, ins, false);
}

static Tensor *reduce(GNode *n, Tensor **ins, TopiReduce r) {
  /* axes given at run time (sym_dims, kept dimensions) */
  if (ttype_is_symbolic(&n->type) && gattr_str(&n->attrs, "sym_dims", NULL))
    return topi_reduce_runtime(r, ins[0], run_time_shape(&n->type));
  bool keep = gattr_int(&n->attrs, "keepdims", 0) != 0;
  const TType *d = &n->args[0]->type;
  bool mask[GRAPH_MAX_DIMS];
  if (reduce_axes(n, d, mask)) return NULL;
  int64_t axes[GRAPH_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < d->ndim; i++)
    if (mask[i]) axes[k++] = i;
  /* reduce nothing, or a scalar: an identity copy */
  if (k == 0 || d->ndim == 0) return topi_unary(TOPI_identity, ins[0]);
  return topi_reduce(r, ins[0], k, axes, keep);
}

#define X(fn, r)                                                  \
  Tensor *fn(GNode *n, Tensor **ins, const Strategy *st) {        \
    (void)st;                                                     \
    return reduce(n, ins, r);                                     \
  }
COMPUTE_REDUCES(X)
#undef X
