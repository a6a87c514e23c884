/*
 * tensor.c - placeholders, computes and externs, and reading tensors.
 *
 * A compute is built in two steps so C code needs no callbacks: make the
 * axis variables (te_axis_vars), build the body over them, then te_compute
 * wraps vars into IterVars with ranges [0, shape) and records the producers
 * the body reads.  A Reduce may appear only at the top of a body; its axes
 * become the op's reduce axes.
 */
#include "te.h"

#include <string.h>

static Tensor *new_tensor(TensorKind k, const char *name, int ndim, Expr **shape, DType t) {
  Tensor *x = KNEW(Tensor);
  x->okind = KOBJ_TENSOR;
  x->kind = k;
  x->name = kstrdup(name ? name : "T");
  x->dtype = t;
  x->ndim = ndim;
  x->shape = KNEWN(Expr *, ndim > 0 ? ndim : 1);
  for (int i = 0; i < ndim; i++) x->shape[i] = shape[i];
  return x;
}

/* The shape's extents: integers, none negative, and the product of the
 * constant ones within TE_MAX_ELEMS (the product saturates, so no shape
 * overflows the check). */
static int check_shape(const char *what, const char *name, int ndim, Expr **shape) {
  if (ndim < 0) return kiln_set_error("%s '%s': negative rank %d", what, name, ndim);
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    if (!shape[i]) return -1;
    if (!dt_is_intlike(shape[i]->dtype) || shape[i]->dtype.lanes != 1)
      return kiln_set_error("%s '%s': shape[%d] must be an integer, got %s", what, name, i,
                            dt_str(shape[i]->dtype));
    int64_t v;
    if (ir_is_const_int(shape[i], &v) && v < 0)
      return kiln_set_error("%s '%s': shape[%d] = %lld is negative", what, name, i, (long long)v);
    if (ir_is_const_int(shape[i], &v) && __builtin_mul_overflow(numel, v, &numel)) numel = INT64_MAX;
  }
  if (numel > TE_MAX_ELEMS) {
    StrBuf sb = {0};
    for (int i = 0; i < ndim; i++) {
      int64_t v;
      if (ir_is_const_int(shape[i], &v)) sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)v);
      else sb_printf(&sb, "%s?", i ? ", " : "");
    }
    kiln_set_error("%s '%s': shape (%s) has %s%lld elements, more than Kiln supports (2^31 - 1: generated code "
                   "indexes tensors with 32-bit integers); split the computation over smaller tensors",
                   what, name, sb.data, numel == INT64_MAX ? "over " : "", (long long)numel);
    sb_free(&sb);
    return -1;
  }
  return 0;
}

Tensor *te_placeholder(const char *name, int ndim, Expr **shape, DType t) {
  if (check_shape("placeholder", name ? name : "T", ndim, shape)) return NULL;
  return new_tensor(TE_PLACEHOLDER, name, ndim, shape, t);
}

Tensor *te_placeholder_c(const char *name, int ndim, const int64_t *shape, DType t) {
  Expr **s = KNEWN(Expr *, ndim > 0 ? ndim : 1);
  for (int i = 0; i < ndim; i++) s[i] = ir_i32(shape[i]);
  return te_placeholder(name, ndim, s, t);
}

Expr **te_axis_vars(int ndim, const char **names) {
  static const char *defaults[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
  Expr **v = KNEWN(Expr *, ndim > 0 ? ndim : 1);
  for (int i = 0; i < ndim; i++) {
    const char *n = names && names[i] ? names[i] : NULL;
    char buf[16];
    if (!n) {
      if (i < 8)
        n = defaults[i];
      else {
        snprintf(buf, sizeof buf, "ax%d", i);
        n = buf;
      }
    }
    v[i] = ir_var(n, DT_I32);
  }
  return v;
}

static void set_inputs(Tensor *t, Expr *body) {
  AVec r = {0};
  ir_collect_reads(body, &r);
  t->ninputs = r.len;
  t->inputs = (Tensor **)r.data;
}

/* Reject Reduce nodes anywhere but at the top of a body. */
typedef struct {
  Expr *top;
  bool nested;
} NestCtx;

static void find_nested_reduce(IRVisitor *v, Expr *e) {
  NestCtx *c = v->ud;
  if (e->kind == EK_Reduce && e != c->top) c->nested = true;
  ir_visit_expr_children(v, e);
}

Tensor *te_compute(const char *name, int ndim, Expr **shape, Expr **vars, Expr *body,
                   const char *tag) {
  const char *nm = name ? name : "compute";
  if (!body) return NULL;
  if (check_shape("compute", nm, ndim, shape)) return NULL;
  for (int i = 0; i < ndim; i++)
    if (!vars[i] || vars[i]->kind != EK_Var)
      return kiln_set_error("compute '%s': axis %d is not a variable", nm, i), NULL;
  if (body->dtype.lanes != 1)
    return kiln_set_error("compute '%s': body must be a scalar, got %s", nm, dt_str(body->dtype)),
           NULL;
  NestCtx nc = {body, false};
  IRVisitor vis = {find_nested_reduce, NULL, &nc};
  ir_visit_expr(&vis, body);
  if (nc.nested)
    return kiln_set_error("compute '%s': a reduction may only be the whole body "
                          "(split it into two computes)", nm),
           NULL;
  Tensor *t = new_tensor(TE_COMPUTE, nm, ndim, shape, body->dtype);
  t->tag = tag ? kstrdup(tag) : "";
  t->axis = KNEWN(IterVar *, ndim > 0 ? ndim : 1);
  for (int i = 0; i < ndim; i++) t->axis[i] = ir_itervar(vars[i], ir_i32(0), shape[i], ITER_DATA_PAR);
  if (body->kind == EK_Reduce) {
    t->nreduce = body->reduce.naxis;
    t->reduce_axis = body->reduce.axis;
    for (int i = 0; i < t->nreduce; i++)
      for (int j = 0; j < i; j++)
        if (t->reduce_axis[i] == t->reduce_axis[j])
          return kiln_set_error("compute '%s': reduce axis '%s' listed twice", nm,
                                t->reduce_axis[i]->var->var.name),
                 NULL;
  }
  t->body = body;
  set_inputs(t, body);
  return t;
}

IterVar *te_reduce_axis(Expr *min, Expr *extent, const char *name) {
  if (!min || !extent) return NULL;
  int64_t lo, n;
  if (ir_is_const_int(extent, &n) && (n < 0 || n > TE_MAX_ELEMS))
    return kiln_set_error("reduce axis '%s': extent %lld is %s; reduce over at most 2^31 - 1 values (loops count "
                          "with 32-bit integers), in steps if need be", name ? name : "rv", (long long)n,
                          n < 0 ? "negative" : "too large"),
           NULL;
  if (ir_is_const_int(min, &lo) && ir_is_const_int(extent, &n) && (lo < INT32_MIN || lo > TE_MAX_ELEMS - n))
    return kiln_set_error("reduce axis '%s': [%lld, %lld + %lld) leaves the 32-bit range loops count in", name ? name : "rv",
                          (long long)lo, (long long)lo, (long long)n),
           NULL;
  return ir_itervar(ir_var(name ? name : "rv", DT_I32), min, extent, ITER_REDUCE);
}

IterVar *te_reduce_axis_c(int64_t extent, const char *name) {
  return te_reduce_axis(ir_i32(0), ir_i32(extent), name);
}

void te_extern_buffers(int ninputs, Tensor **inputs, const char *out_name, Expr ***in_bufs,
                       Expr **out_buf) {
  Expr **b = KNEWN(Expr *, ninputs > 0 ? ninputs : 1);
  for (int i = 0; i < ninputs; i++) b[i] = ir_var(inputs[i]->name, DT_HANDLE);
  *in_bufs = b;
  *out_buf = ir_var(out_name, DT_HANDLE);
}

Tensor *te_extern(const char *name, int ndim, Expr **shape, DType t, int ninputs, Tensor **inputs,
                  Expr **in_bufs, Expr *out_buf, Stmt *body, const char *tag) {
  const char *nm = name ? name : "extern";
  if (!body) return NULL;
  if (check_shape("extern", nm, ndim, shape)) return NULL;
  Tensor *x = new_tensor(TE_EXTERN, nm, ndim, shape, t);
  x->tag = tag ? kstrdup(tag) : "";
  x->extern_body = body;
  x->ninputs = ninputs;
  x->inputs = kmemdup(inputs, sizeof(Tensor *) * (size_t)ninputs);
  x->in_bufs = kmemdup(in_bufs, sizeof(Expr *) * (size_t)ninputs);
  x->out_buf = out_buf;
  return x;
}

Expr *te_read(Tensor *t, int n, Expr **idx) {
  if (!t) return NULL;
  if (n != t->ndim) {
    kiln_set_error("tensor '%s' has %d dimensions, indexed with %d", t->name, t->ndim, n);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (!idx[i]) return NULL;
    if (!dt_is_intlike(idx[i]->dtype) || dt_is_bool(idx[i]->dtype)) {
      kiln_set_error("tensor '%s': index %d must be an integer, got %s", t->name, i,
                     dt_str(idx[i]->dtype));
      return NULL;
    }
  }
  return ir_read(t, t->dtype, n, idx);
}

Expr *te_read1(Tensor *t, Expr *i0) { return te_read(t, 1, (Expr *[]){i0}); }
Expr *te_read2(Tensor *t, Expr *i0, Expr *i1) { return te_read(t, 2, (Expr *[]){i0, i1}); }
Expr *te_read3(Tensor *t, Expr *i0, Expr *i1, Expr *i2) {
  return te_read(t, 3, (Expr *[]){i0, i1, i2});
}
Expr *te_read4(Tensor *t, Expr *i0, Expr *i1, Expr *i2, Expr *i3) {
  return te_read(t, 4, (Expr *[]){i0, i1, i2, i3});
}
Expr *te_read5(Tensor *t, Expr *i0, Expr *i1, Expr *i2, Expr *i3, Expr *i4) {
  return te_read(t, 5, (Expr *[]){i0, i1, i2, i3, i4});
}

void te_set_attr(Tensor *t, const char *key, Expr *value) {
  for (int i = 0; i < t->nattrs; i++)
    if (!strcmp(t->attrs[i].key, key)) {
      t->attrs[i].value = value;
      return;
    }
  TAttr *a = KNEWN(TAttr, t->nattrs + 1);
  if (t->nattrs) memcpy(a, t->attrs, sizeof(TAttr) * (size_t)t->nattrs);
  a[t->nattrs].key = kstrdup(key);
  a[t->nattrs].value = value;
  t->attrs = a;
  t->nattrs++;
}

Expr *te_get_attr(const Tensor *t, const char *key) {
  for (int i = 0; i < t->nattrs; i++)
    if (!strcmp(t->attrs[i].key, key)) return t->attrs[i].value;
  return NULL;
}

bool te_shape_const(const Tensor *t, int64_t *out) {
  for (int i = 0; i < t->ndim; i++)
    if (!ir_is_const_int(t->shape[i], out ? &out[i] : NULL)) return false;
  return true;
}

int64_t te_dim(const Tensor *t, int d) {
  int64_t v;
  return ir_is_const_int(t->shape[d], &v) ? v : -1;
}

Tensor *te_copy_with_body(Tensor *t, Expr *body) {
  if (!body) return NULL;
  Tensor *c = KNEW(Tensor);
  *c = *t;
  c->body = body;
  set_inputs(c, body);
  return c;
}
