/*
 * normalize.c - ONNX's normalizations: BatchNormalization (and its
 * training mode), InstanceNormalization, LayerNormalization (and its Mean
 * and InvStdDev outputs), LRN, LpNormalization, MeanVarianceNormalization
 * and GlobalLpPool.
 *
 * The inference forms are graph ops; the forms that also return
 * statistics, and the Lp and mean-variance normalizations, are
 * reductions and elementwise calls.
 */
#include "ops.h"

int onnx_h_batchnorm(Importer *im) {
  if (imp_opset(im) >= 14 && onnx_attr_int(N(im), "training_mode", 0)) return onnx_h_BatchNormTraining(im);
  if (N(im)->noutputs > 1)
    for (int i = 1; i < N(im)->noutputs; i++)
      if (*N(im)->outputs[i]) return imp_error(im, "training-mode outputs are not supported (inference only)");
  GNode *args[5];
  for (int i = 0; i < 5; i++)
    if (!(args[i] = imp_input(im, i))) return imp_error(im, "input %d is missing", i);
  if (imp_opset(im) < 9 && onnx_attr_int(N(im), "spatial", 1) == 0)
    return imp_error(im, "spatial = 0 (statistics per element) is not supported");
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 1);
  ga_float(&a, "epsilon", onnx_attr_float(N(im), "epsilon", 1e-5f));
  return out0(im, imp_call(im, "nn.batch_norm", 5, args, a));
}

int onnx_h_instancenorm(Importer *im) {
  GNode *args[3] = {in0(im), imp_input(im, 1), imp_input(im, 2)};
  GAttrs a = gattrs_new();
  ga_float(&a, "epsilon", onnx_attr_float(N(im), "epsilon", 1e-5f));
  return out0(im, imp_call(im, "nn.instance_norm", 3, args, a));
}

int onnx_h_layernorm(Importer *im) {
  for (int i = 1; i < N(im)->noutputs; i++)
    if (*N(im)->outputs[i]) return onnx_h_LayerNormStats(im);
  GNode *args[3];
  int n = 0;
  for (int i = 0; i < 3; i++)
    if ((args[n] = imp_input(im, i))) n++;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", onnx_attr_int(N(im), "axis", -1));
  ga_float(&a, "epsilon", onnx_attr_float(N(im), "epsilon", 1e-5f));
  return out0(im, imp_call(im, "nn.layer_norm", n, args, a));
}

int onnx_h_lrn(Importer *im) {
  GAttrs a = gattrs_new();
  int64_t size;
  if (imp_attr_i64(im, "size", 0, 1, IMP_MAX_COUNT, &size)) return -1;
  ga_int(&a, "size", size);
  ga_float(&a, "alpha", onnx_attr_float(N(im), "alpha", 1e-4f));
  ga_float(&a, "beta", onnx_attr_float(N(im), "beta", 0.75f));
  ga_float(&a, "bias", onnx_attr_float(N(im), "bias", 1.0f));
  GNode *x = in0(im);
  return out0(im, imp_call(im, "nn.lrn", 1, &x, a));
}

/* ---- normalization with statistics ---- */

/* BatchNormalization with training_mode = 1: batch statistics normalize,
 * and the running mean and variance are updated with momentum. */
int onnx_h_BatchNormTraining(Importer *im) {
  GNode *x = imp_input(im, 0), *s = imp_input(im, 1), *b = imp_input(im, 2), *mean = imp_input(im, 3),
        *var = imp_input(im, 4);
  if (!x || !s || !b || !mean || !var) return imp_error(im, "needs five inputs");
  int nd = x->type.ndim;
  if (nd < 2) return imp_error(im, "data has rank %d, expected at least 2", nd);
  double eps = onnx_attr_float(N(im), "epsilon", 1e-5f), mom = onnx_attr_float(N(im), "momentum", 0.9f);
  int64_t axes[MAXD], cs[MAXD];
  int na = 0;
  for (int i = 0; i < nd; i++)
    if (i != 1) axes[na++] = i;
  int64_t C = x->type.shape[1];
  cs[0] = C;
  for (int i = 1; i < nd - 1; i++) cs[i] = 1;
  GNode *bm = imp_reduce(im, "mean", x, na, axes, true);
  GNode *d = bin(im, "subtract", x, bm);
  GNode *bv = imp_reduce(im, "mean", bin(im, "multiply", d, d), na, axes, true);
  GNode *inv = un(im, "rsqrt", bin(im, "add", bv, imp_scalar_like(im, eps, x)));
  GNode *y = bin(im, "multiply", bin(im, "multiply", d, inv), imp_reshape(im, s, nd - 1, cs));
  y = bin(im, "add", y, imp_reshape(im, b, nd - 1, cs));
  if (imp_set_output(im, 0, y)) return -1;
  if (imp_want_output(im, 1)) {
    GNode *rm = bin(im, "add", bin(im, "multiply", mean, imp_scalar_like(im, mom, mean)),
                    bin(im, "multiply", imp_cast(im, imp_reshape(im, bm, 1, &C), mean->type.dtype), imp_scalar_like(im, 1 - mom, mean)));
    if (imp_set_output(im, 1, rm)) return -1;
  }
  if (imp_want_output(im, 2)) {
    GNode *rv = bin(im, "add", bin(im, "multiply", var, imp_scalar_like(im, mom, var)),
                    bin(im, "multiply", imp_cast(im, imp_reshape(im, bv, 1, &C), var->type.dtype), imp_scalar_like(im, 1 - mom, var)));
    if (imp_set_output(im, 2, rv)) return -1;
  }
  for (int i = 3; i < N(im)->noutputs; i++)
    if (imp_want_output(im, i)) return imp_error(im, "output %d is not supported", i);
  return 0;
}

/* LayerNormalization with its Mean and InvStdDev outputs (computed in
 * float32 when stash_type = 1, ONNX's default). */
int onnx_h_LayerNormStats(Importer *im) {
  GNode *x = imp_input(im, 0), *w = imp_input(im, 1), *b = imp_input(im, 2);
  if (!x || !w) return imp_error(im, "needs X and Scale");
  int nd = x->type.ndim, ax;
  if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", -1), nd, &ax)) return -1;
  double eps = onnx_attr_float(N(im), "epsilon", 1e-5f);
  int64_t stash = onnx_attr_int(N(im), "stash_type", 1);
  if (stash != 1) return imp_error(im, "stash_type = %lld is not supported (1: float32)", (long long)stash);
  int64_t axes[MAXD];
  int na = 0;
  for (int i = ax; i < nd; i++) axes[na++] = i;
  GNode *xs = imp_cast(im, x, DT_F32);
  GNode *mean = imp_reduce(im, "mean", xs, na, axes, true);
  GNode *d = bin(im, "subtract", xs, mean);
  GNode *var = imp_reduce(im, "mean", bin(im, "multiply", d, d), na, axes, true);
  GNode *inv = un(im, "rsqrt", bin(im, "add", var, imp_scalar_like(im, eps, xs)));
  GNode *y = imp_cast(im, bin(im, "multiply", d, inv), x->type.dtype);
  y = bin(im, "multiply", y, w);
  if (b) y = bin(im, "add", y, b);
  if (imp_set_output(im, 0, y)) return -1;
  if (imp_want_output(im, 1) && imp_set_output(im, 1, mean)) return -1;
  if (imp_want_output(im, 2) && imp_set_output(im, 2, inv)) return -1;
  return 0;
}

/* ---- normalizations and pooling as reductions ---- */

int onnx_h_MeanVarianceNormalization(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int n;
  const int64_t *v = onnx_attr_ints(N(im), "axes", &n);
  int64_t def[3] = {0, 2, 3};
  if (!v) v = def, n = 3;
  GNode *mean = imp_reduce(im, "mean", x, n, v, true);
  GNode *sqmean = imp_reduce(im, "mean", bin(im, "multiply", x, x), n, v, true);
  GNode *std = un(im, "sqrt", bin(im, "subtract", sqmean, bin(im, "multiply", mean, mean)));
  GNode *y = bin(im, "divide", bin(im, "subtract", x, mean), bin(im, "add", std, imp_scalar_like(im, 1e-9, x)));
  return imp_set_output(im, 0, y);
}

int onnx_h_LpNormalization(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int64_t p = onnx_attr_int(N(im), "p", 2), axis = onnx_attr_int(N(im), "axis", -1);
  if (p != 1 && p != 2) return imp_error(im, "p = %lld is not supported (1 or 2)", (long long)p);
  GNode *nrm = imp_reduce(im, p == 1 ? "l1_norm" : "l2_norm", x, 1, &axis, true);
  /* a zero vector stays zero (ONNX's reference since 1.20: 0, not 0/0) */
  GNode *zero = imp_scalar_like(im, 0, x);
  return imp_set_output(im, 0, imp_where(im, bin(im, "equal", nrm, zero), zero, bin(im, "divide", x, nrm)));
}

int onnx_h_GlobalLpPool(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  const OnnxAttr *pa = onnx_attr_find(N(im), "p");
  double p = !pa ? 2 : pa->type == ONNX_ATTR_FLOAT ? pa->f : (double)pa->i;
  int nd = x->type.ndim;
  if (nd < 3) return imp_error(im, "input has rank %d, expected [N, C, spatial...]", nd);
  int64_t axes[MAXD];
  int na = 0;
  for (int i = 2; i < nd; i++) axes[na++] = i;
  GNode *y;
  if (p == 1) y = imp_reduce(im, "l1_norm", x, na, axes, true);
  else if (p == 2) y = imp_reduce(im, "l2_norm", x, na, axes, true);
  else {
    GNode *s = imp_reduce(im, "sum", bin(im, "power", un(im, "abs", x), imp_scalar_like(im, p, x)), na, axes, true);
    y = bin(im, "power", s, imp_scalar_like(im, 1.0 / p, x));
  }
  return imp_set_output(im, 0, y);
}
