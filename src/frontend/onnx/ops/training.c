/*
 * training.c - ONNX's training operators that have an inference
 * meaning: the losses (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss), the optimizers of ai.onnx.preview.training
 * (Adagrad, Adam, Momentum), one update step each, elementwise, and its
 * Gradient, differentiated when the model is imported
 * (src/graph/autodiff.c).
 */
#include "ops.h"

/* ---- losses ---- */

/* -logp[n, target[n, ...], ...] weighted, ignore_index masked, reduced. */
static GNode *nll(Importer *im, GNode *logp, GNode *target, GNode *weight) {
  if (!logp || !target) return NULL;
  const char *red = onnx_attr_string(N(im), "reduction", "mean");
  if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
    return imp_error(im, "reduction '%s' is not supported (none, sum, mean)", red), NULL;
  if (logp->type.ndim < 2) return imp_error(im, "input has rank %d, expected [N, C, ...]", logp->type.ndim), NULL;
  if (dt_is_float(target->type.dtype) || dt_is_bool(target->type.dtype))
    return imp_error(im, "target must hold integers, got %s", dt_str(target->type.dtype)), NULL;
  GNode *t = target, *mask = NULL;
  if (onnx_attr_has(N(im), "ignore_index")) {
    mask = bin(im, "not_equal", target, imp_scalar_like(im, (double)onnx_attr_int(N(im), "ignore_index", 0), target));
    t = imp_where(im, mask, target, imp_scalar_like(im, 0, target));
  }
  GAttrs ga = gattrs_new();
  ga_int(&ga, "axis", 1);
  GNode *args[2] = {logp, imp_expand_dims(im, t, 1)};
  GNode *picked = imp_squeeze(im, imp_call(im, "gather_elements", 2, args, ga), 1);
  GNode *loss = un(im, "negative", picked);
  GNode *w = NULL;
  if (weight) {
    GAttrs ta = gattrs_new();
    ga_int(&ta, "axis", 0);
    GNode *targs[2] = {weight, t};
    w = imp_call(im, "take", 2, targs, ta);
    if (mask) w = imp_where(im, mask, w, imp_scalar_like(im, 0, w));
  } else if (mask) {
    w = imp_cast(im, mask, logp->type.dtype);
  }
  if (w) loss = bin(im, "multiply", loss, w);
  if (!strcmp(red, "none")) return loss;
  GNode *sum = imp_reduce(im, "sum", loss, 0, NULL, false);
  if (!strcmp(red, "sum")) return sum;
  if (!w) return imp_reduce(im, "mean", loss, 0, NULL, false);
  return bin(im, "divide", sum, imp_reduce(im, "sum", w, 0, NULL, false));
}

int onnx_h_NegativeLogLikelihoodLoss(Importer *im) {
  return imp_set_output(im, 0, nll(im, imp_input(im, 0), imp_input(im, 1), imp_input(im, 2)));
}

int onnx_h_SoftmaxCrossEntropyLoss(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs scores");
  if (x->type.ndim < 2) return imp_error(im, "scores have rank %d, expected [N, C, ...]", x->type.ndim);
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", 1);
  GNode *logp = imp_call(im, "nn.log_softmax", 1, &x, a);
  if (imp_set_output(im, 0, nll(im, logp, imp_input(im, 1), imp_input(im, 2)))) return -1;
  if (imp_want_output(im, 1) && imp_set_output(im, 1, logp)) return -1;
  return 0;
}

/* ---- optimizers of ai.onnx.preview.training (Adagrad, Adam, Momentum):
 * one update step, elementwise, for each of the n tensors they take; the
 * iteration count T enters through where(T > 0, ...) ---- */

/* The inputs R, T and the groups of n tensors after them. */
static int optim_inputs(Importer *im, int groups, GNode **r, GNode **t, int *n) {
  int rest = imp_ninputs(im) - 2;
  if (rest < groups || rest % groups) return imp_error(im, "expected R, T and %d groups of equally many tensors", groups);
  *n = rest / groups;
  *r = imp_input(im, 0);
  *t = imp_input(im, 1);
  if (!*r || !*t) return imp_error(im, "needs R and T");
  return 0;
}

static GNode *f32s(Importer *im, double v) { return imp_scalar(im, v, DT_F32); }

int onnx_h_Adagrad(Importer *im) {
  GNode *r = NULL, *t = NULL;
  int n = 0;
  if (optim_inputs(im, 3, &r, &t, &n)) return -1;
  double norm = onnx_attr_float(N(im), "norm_coefficient", 0), eps = onnx_attr_float(N(im), "epsilon", 1e-6f),
         decay = onnx_attr_float(N(im), "decay_factor", 0);
  GNode *rf = imp_cast(im, r, DT_F32), *tf = imp_cast(im, t, DT_F32);
  GNode *radj = bin(im, "divide", rf, bin(im, "add", f32s(im, 1), bin(im, "multiply", tf, f32s(im, decay))));
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, 2 + i), *g = imp_input(im, 2 + n + i), *h = imp_input(im, 2 + 2 * n + i);
    if (!x || !g || !h) return imp_error(im, "tensor group %d is incomplete", i);
    GNode *gr = bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, norm, x)), g);
    GNode *hn = bin(im, "add", h, bin(im, "multiply", gr, gr));
    GNode *hs = bin(im, "add", un(im, "sqrt", hn), imp_scalar_like(im, eps, x));
    GNode *xn = bin(im, "subtract", x, bin(im, "divide", bin(im, "multiply", imp_cast(im, radj, x->type.dtype), gr), hs));
    if (imp_set_output(im, i, xn) || imp_set_output(im, n + i, hn)) return -1;
  }
  return 0;
}

int onnx_h_Adam(Importer *im) {
  GNode *r = NULL, *t = NULL;
  int n = 0;
  if (optim_inputs(im, 4, &r, &t, &n)) return -1;
  double norm = onnx_attr_float(N(im), "norm_coefficient", 0), post = onnx_attr_float(N(im), "norm_coefficient_post", 0),
         alpha = onnx_attr_float(N(im), "alpha", 0.9f), beta = onnx_attr_float(N(im), "beta", 0.999f),
         eps = onnx_attr_float(N(im), "epsilon", 1e-6f);
  GNode *rf = imp_cast(im, r, DT_F32), *tf = imp_cast(im, t, DT_F32);
  /* bias correction r sqrt(1 - beta^t) / (1 - alpha^t) once t > 0 */
  GNode *corr = bin(im, "divide", un(im, "sqrt", bin(im, "subtract", f32s(im, 1), bin(im, "power", f32s(im, beta), tf))),
                    bin(im, "subtract", f32s(im, 1), bin(im, "power", f32s(im, alpha), tf)));
  GNode *radj = imp_where(im, bin(im, "greater", t, imp_scalar_like(im, 0, t)), bin(im, "multiply", rf, corr), rf);
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, 2 + i), *g = imp_input(im, 2 + n + i), *v = imp_input(im, 2 + 2 * n + i),
          *h = imp_input(im, 2 + 3 * n + i);
    if (!x || !g || !v || !h) return imp_error(im, "tensor group %d is incomplete", i);
    GNode *gr = bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, norm, x)), g);
    GNode *vn = bin(im, "add", bin(im, "multiply", v, imp_scalar_like(im, alpha, v)), bin(im, "multiply", gr, imp_scalar_like(im, 1 - alpha, gr)));
    GNode *hn = bin(im, "add", bin(im, "multiply", h, imp_scalar_like(im, beta, h)),
                    bin(im, "multiply", bin(im, "multiply", gr, gr), imp_scalar_like(im, 1 - beta, gr)));
    GNode *hs = bin(im, "add", un(im, "sqrt", hn), imp_scalar_like(im, eps, x));
    GNode *xn = bin(im, "subtract", x, bin(im, "multiply", imp_cast(im, radj, x->type.dtype), bin(im, "divide", vn, hs)));
    xn = bin(im, "multiply", xn, imp_scalar_like(im, 1 - post, x));
    if (imp_set_output(im, i, xn) || imp_set_output(im, n + i, vn) || imp_set_output(im, 2 * n + i, hn)) return -1;
  }
  return 0;
}

int onnx_h_Momentum(Importer *im) {
  GNode *r = NULL, *t = NULL;
  int n = 0;
  if (optim_inputs(im, 3, &r, &t, &n)) return -1;
  double norm = onnx_attr_float(N(im), "norm_coefficient", 0), alpha = onnx_attr_float(N(im), "alpha", 0),
         beta = onnx_attr_float(N(im), "beta", 0);
  const char *mode = onnx_attr_string(N(im), "mode", "standard");
  bool nesterov = !strcmp(mode, "nesterov");
  if (!nesterov && strcmp(mode, "standard")) return imp_error(im, "mode '%s' is not supported (standard, nesterov)", mode);
  /* the gradient's coefficient is 1 at the first iteration */
  GNode *badj = imp_where(im, bin(im, "greater", t, imp_scalar_like(im, 0, t)), f32s(im, beta), f32s(im, 1));
  for (int i = 0; i < n; i++) {
    GNode *x = imp_input(im, 2 + i), *g = imp_input(im, 2 + n + i), *v = imp_input(im, 2 + 2 * n + i);
    if (!x || !g || !v) return imp_error(im, "tensor group %d is incomplete", i);
    GNode *rr = imp_cast(im, r, x->type.dtype);
    GNode *gr = bin(im, "add", bin(im, "multiply", x, imp_scalar_like(im, norm, x)), g);
    GNode *vn = bin(im, "add", bin(im, "multiply", v, imp_scalar_like(im, alpha, v)), bin(im, "multiply", gr, imp_cast(im, badj, x->type.dtype)));
    GNode *step = nesterov ? bin(im, "add", gr, bin(im, "multiply", vn, imp_scalar_like(im, alpha, vn))) : vn;
    GNode *xn = bin(im, "subtract", x, bin(im, "multiply", rr, step));
    if (imp_set_output(im, i, xn) || imp_set_output(im, n + i, vn)) return -1;
  }
  return 0;
}

/* ---- Gradient: the gradient of y with respect to xs ----
 *
 * The node's inputs are the values named by xs, then by zs (the inputs
 * held constant); y names a value computed before it.  Each output is the
 * gradient, with respect to one x, of the sum of y's elements (y's adjoint
 * is a tensor of ones, as ONNX Runtime's training seeds it), computed by
 * reverse-mode differentiation of the graph built so far. */
int onnx_h_Gradient(Importer *im) {
  int nx = 0, nz = 0;
  const char **xs = onnx_attr_strings(N(im), "xs", &nx), **zs = onnx_attr_strings(N(im), "zs", &nz);
  const char *yname = onnx_attr_string(N(im), "y", NULL);
  (void)zs;
  if (!yname || !*yname) return imp_error(im, "needs the attribute y (the name of the value to differentiate)");
  if (nx < 1) return imp_error(im, "needs the attribute xs (the names of the values to differentiate with respect to)");
  if (imp_ninputs(im) != nx + nz)
    return imp_error(im, "has %d inputs, but xs and zs name %d values (its inputs are xs, then zs)", imp_ninputs(im),
                     nx + nz);
  if (N(im)->noutputs != nx)
    return imp_error(im, "has %d outputs, but xs names %d values (one gradient each)", N(im)->noutputs, nx);
  GNode *y = imp_value(im, yname);
  if (!y) return imp_error(im, "y names '%s', which is not a value computed before this node", yname);
  GNode **x = KNEWN(GNode *, nx), **dx = KNEWN(GNode *, nx);
  for (int i = 0; i < nx; i++) {
    x[i] = imp_input(im, i);
    if (!x[i] || x[i] != imp_value(im, xs[i]))
      return imp_error(im, "input %d must be the value xs[%d] names ('%s')", i, i, xs[i]);
  }
  if (graph_gradient(imp_graph(im), y, nx, x, dx))
    return imp_error(im, "the gradient of '%s': %s", yname, kiln_get_error());
  for (int i = 0; i < nx; i++)
    if (imp_set_output(im, i, dx[i])) return -1;
  return 0;
}
