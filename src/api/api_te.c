/*
 * api_te.c - te.*: placeholders, computes, reduce and thread axes, tensor
 * reads, and what a binding reads back from tensors and axes.
 *
 * A compute crosses the API in the same two steps as in C (te.h): the
 * binding asks for axis variables (te.axis_vars), builds the body over
 * them (a Python lambda calls ir.* and te.read), then te.compute wraps it.
 * Shapes and index lists accept plain numbers, converted to int32 (int64
 * when they do not fit).
 */
#include "api.h"

#include <string.h>

API_FUNC(te_placeholder_fn) {
  API_CALL;
  const char *name;
  DType t;
  int ndim;
  Expr **shape;
  if (api_argc(&c, 2, -1) || !(name = api_str(&c, 0)) || api_dtype(&c, 1, &t) ||
      !(shape = api_expr_list(&c, 2, &ndim)))
    return -1;
  if (dt_is_handle(t)) return api_error(&c, "a placeholder cannot hold handles");
  return api_ret_obj(&c, ret, ret_code, te_placeholder(name, ndim, shape, t));
}

API_FUNC(te_axis_vars_fn) {
  API_CALL;
  int64_t ndim;
  if (api_argc(&c, 1, -1) || api_int(&c, 0, &ndim)) return -1;
  if (ndim < 0 || ndim > 64) return api_error(&c, "ndim %lld is out of range [0, 64]", (long long)ndim);
  if (c.n > 1 && c.n - 1 != ndim)
    return api_error(&c, "%lld axes but %d names", (long long)ndim, c.n - 1);
  const char **names = KNEWN(const char *, ndim > 0 ? ndim : 1);
  for (int i = 1; i < c.n; i++)
    if (api_opt_str(&c, i, &names[i - 1])) return -1;
  Expr **v = te_axis_vars((int)ndim, names);
  return api_ret_obj(&c, ret, ret_code, karray_new((int)ndim, (void **)v));
}

API_FUNC(te_compute_fn) {
  API_CALL;
  const char *name, *tag;
  KArray *shape_arr, *vars_arr;
  Expr *body;
  if (api_argc(&c, 5, 5) || !(name = api_str(&c, 0)) || api_opt_str(&c, 1, &tag) ||
      !(shape_arr = api_obj(&c, 2, KOBJ_ARRAY)) || !(vars_arr = api_obj(&c, 3, KOBJ_ARRAY)) ||
      !(body = api_expr(&c, 4)))
    return -1;
  int ndim;
  Expr **shape = api_array_exprs(&c, 2, shape_arr, &ndim);
  if (!shape) return -1;
  if (vars_arr->n != ndim)
    return api_error(&c, "the shape has %d dimensions but %d axis variables were given", ndim,
                     vars_arr->n);
  Expr **vars = KNEWN(Expr *, ndim > 0 ? ndim : 1);
  for (int i = 0; i < ndim; i++) {
    Expr *v = vars_arr->items[i];
    if (v && v->okind == KOBJ_ITERVAR) v = ((IterVar *)vars_arr->items[i])->var;
    if (!v || v->okind != KOBJ_EXPR || v->kind != EK_Var)
      return api_error(&c, "argument 3 (vars): item %d is not a variable", i);
    vars[i] = v;
  }
  return api_ret_obj(&c, ret, ret_code, te_compute(name, ndim, shape, vars, body, tag));
}

API_FUNC(te_reduce_axis_fn) {
  API_CALL;
  Expr *min, *extent;
  const char *name;
  if (api_argc(&c, 2, 3) || !(min = api_expr(&c, 0)) || !(extent = api_expr_like(&c, 1, min)) ||
      api_opt_str(&c, 2, &name))
    return -1;
  if (!dt_is_intlike(min->dtype) || !dt_is_intlike(extent->dtype))
    return api_error(&c, "the range must be integers, got %s and %s", dt_str(min->dtype),
                     dt_str(extent->dtype));
  return api_ret_obj(&c, ret, ret_code, te_reduce_axis(min, extent, name ? name : "rv"));
}

API_FUNC(te_thread_axis_fn) {
  API_CALL;
  const char *tag;
  Expr *extent;
  if (api_argc(&c, 1, 2) || !(tag = api_str(&c, 0)) || api_opt_expr(&c, 1, &extent)) return -1;
  if (!*tag) return api_error(&c, "the thread tag is empty");
  IterVar *iv = ir_itervar(ir_var(tag, DT_I32), extent ? ir_i32(0) : NULL, extent, ITER_THREAD);
  iv->thread_tag = kstrdup(tag);
  return api_ret_obj(&c, ret, ret_code, iv);
}

API_FUNC(te_read_fn) {
  API_CALL;
  Tensor *t;
  int n;
  Expr **idx;
  if (api_argc(&c, 1, -1) || !(t = api_obj(&c, 0, KOBJ_TENSOR)) || !(idx = api_expr_list(&c, 1, &n)))
    return -1;
  return api_ret_obj(&c, ret, ret_code, te_read(t, n, idx));
}

/* ---- tensors ---- */

static Tensor *tensor0(const ApiCall *c) {
  if (api_argc(c, 1, 1)) return NULL;
  return api_obj(c, 0, KOBJ_TENSOR);
}

API_FUNC(te_tensor_name) {
  API_CALL;
  Tensor *t = tensor0(&c);
  return t ? api_ret_str(ret, ret_code, t->name) : -1;
}

API_FUNC(te_tensor_tag) {
  API_CALL;
  Tensor *t = tensor0(&c);
  return t ? api_ret_str(ret, ret_code, t->tag ? t->tag : "") : -1;
}

API_FUNC(te_tensor_ndim) {
  API_CALL;
  Tensor *t = tensor0(&c);
  return t ? api_ret_int(ret, ret_code, t->ndim) : -1;
}

API_FUNC(te_tensor_dtype) {
  API_CALL;
  Tensor *t = tensor0(&c);
  return t ? api_ret_str(ret, ret_code, dt_str(t->dtype)) : -1;
}

API_FUNC(te_tensor_shape) {
  API_CALL;
  Tensor *t = tensor0(&c);
  return t ? api_ret_obj(&c, ret, ret_code, karray_new(t->ndim, (void **)t->shape)) : -1;
}

API_FUNC(te_tensor_axis) {
  API_CALL;
  Tensor *t = tensor0(&c);
  if (!t) return -1;
  int n = t->kind == TE_COMPUTE ? t->ndim : 0;
  return api_ret_obj(&c, ret, ret_code, karray_new(n, (void **)t->axis));
}

API_FUNC(te_tensor_reduce_axis) {
  API_CALL;
  Tensor *t = tensor0(&c);
  if (!t) return -1;
  int n = t->kind == TE_COMPUTE ? t->nreduce : 0;
  return api_ret_obj(&c, ret, ret_code, karray_new(n, (void **)t->reduce_axis));
}

API_FUNC(te_tensor_op_kind) {
  API_CALL;
  Tensor *t = tensor0(&c);
  if (!t) return -1;
  const char *k = "";
  switch (t->kind) {
  case TE_PLACEHOLDER: k = "placeholder"; break;
  case TE_COMPUTE: k = "compute"; break;
  case TE_EXTERN: k = "extern"; break;
  }
  return api_ret_str(ret, ret_code, k);
}

API_FUNC(te_tensor_body) {
  API_CALL;
  Tensor *t = tensor0(&c);
  if (!t) return -1;
  if (t->kind == TE_COMPUTE) return api_ret_obj(&c, ret, ret_code, t->body);
  if (t->kind == TE_EXTERN) return api_ret_obj(&c, ret, ret_code, t->extern_body);
  return api_ret_null(ret, ret_code);
}

API_FUNC(te_tensor_inputs) {
  API_CALL;
  Tensor *t = tensor0(&c);
  return t ? api_ret_obj(&c, ret, ret_code, karray_new(t->ninputs, (void **)t->inputs)) : -1;
}

/* ---- iteration variables ---- */

static IterVar *itervar0(const ApiCall *c) {
  if (api_argc(c, 1, 1)) return NULL;
  return api_obj(c, 0, KOBJ_ITERVAR);
}

API_FUNC(te_itervar_var) {
  API_CALL;
  IterVar *iv = itervar0(&c);
  return iv ? api_ret_obj(&c, ret, ret_code, iv->var) : -1;
}

API_FUNC(te_itervar_name) {
  API_CALL;
  IterVar *iv = itervar0(&c);
  return iv ? api_ret_str(ret, ret_code, iv->var->var.name) : -1;
}

/* [min, extent], or null while the range is unknown (split/fuse results). */
API_FUNC(te_itervar_range) {
  API_CALL;
  IterVar *iv = itervar0(&c);
  if (!iv) return -1;
  if (!iv->min || !iv->extent) return api_ret_null(ret, ret_code);
  return api_ret_obj(&c, ret, ret_code, karray_new(2, (void *[]){iv->min, iv->extent}));
}

API_FUNC(te_itervar_kind) {
  API_CALL;
  IterVar *iv = itervar0(&c);
  if (!iv) return -1;
  const char *k = "";
  switch (iv->kind) {
  case ITER_DATA_PAR: k = "data_par"; break;
  case ITER_REDUCE: k = "reduce"; break;
  case ITER_THREAD: k = "thread"; break;
  case ITER_OPAQUE: k = "opaque"; break;
  }
  return api_ret_str(ret, ret_code, k);
}

API_FUNC(te_itervar_thread_tag) {
  API_CALL;
  IterVar *iv = itervar0(&c);
  if (!iv) return -1;
  return iv->thread_tag ? api_ret_str(ret, ret_code, iv->thread_tag) : api_ret_null(ret, ret_code);
}

const ApiEntry api_te_funcs[] = {
    {"te.placeholder", te_placeholder_fn, "name, dtype, shape..."},
    {"te.axis_vars", te_axis_vars_fn, "ndim, names..."},
    {"te.compute", te_compute_fn, "name, tag, shape, vars, body"},
    {"te.reduce_axis", te_reduce_axis_fn, "min, extent, name?"},
    {"te.thread_axis", te_thread_axis_fn, "tag, extent?"},
    {"te.read", te_read_fn, "tensor, indices..."},
    {"te.TensorName", te_tensor_name, "tensor"},
    {"te.TensorTag", te_tensor_tag, "tensor"},
    {"te.TensorNDim", te_tensor_ndim, "tensor"},
    {"te.TensorDType", te_tensor_dtype, "tensor"},
    {"te.TensorShape", te_tensor_shape, "tensor"},
    {"te.TensorAxis", te_tensor_axis, "tensor"},
    {"te.TensorReduceAxis", te_tensor_reduce_axis, "tensor"},
    {"te.TensorOpKind", te_tensor_op_kind, "tensor"},
    {"te.TensorBody", te_tensor_body, "tensor"},
    {"te.TensorInputs", te_tensor_inputs, "tensor"},
    {"te.IterVarVar", te_itervar_var, "itervar"},
    {"te.IterVarName", te_itervar_name, "itervar"},
    {"te.IterVarRange", te_itervar_range, "itervar"},
    {"te.IterVarKind", te_itervar_kind, "itervar"},
    {"te.IterVarThreadTag", te_itervar_thread_tag, "itervar"},
    {NULL, NULL, NULL},
};
