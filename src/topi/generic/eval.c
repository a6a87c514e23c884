/*
 * eval.c - a reference interpreter for compute graphs.
 *
 * topi_eval materializes every tensor the output depends on, producers
 * first, element by element: each element binds the axis variables and
 * walks the body's expression tree with src/ir/eval.c's interpreter (the
 * one ir_eval uses, in its wrapping mode: the value the generated code
 * computes); this file gives it the variables' values and the two nodes
 * only it knows: a Read of a materialized tensor, and a Reduce, which
 * loops over its axes, skipping elements where its condition is false, and
 * folds with its combiner.  Values are held as int64 (integers, bool) or
 * double (floats, rounded to float after every float32 operation, as the
 * generated C does).
 *
 * It is slow (a tree walk per element) and meant for small tensors: the
 * graph layer folds shape computations with it at compile time, and tests
 * use it as an oracle.  What one evaluation holds (every tensor it
 * materializes, as 8-byte values) is bounded: KILN_EVAL_MEMORY_MB, 256 MiB
 * by default.  A constant-folded node whose result is small can still have
 * large intermediates (a padded input of a strided convolution), and a
 * malformed model must get an error here, not a multi-gigabyte allocation.  It checks what a kernel would not: every read must
 * be inside its tensor, and an integer division by zero is an error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../topi.h"

typedef IrScalar Val; /* src/ir/scalar.c: int64 for integers and bool, double for floats */

typedef struct Buf {
  Tensor *t;
  int ndim;
  int64_t *shape;
  Val *data;
} Buf;

typedef struct Ev {
  IrEval ev;         /* first: the walk's hooks get it (src/ir/eval.c) */
  PtrMap bufs;       /* Tensor -> Buf */
  PtrMap shape_vars; /* symbolic dim Var -> Val* */
  Expr *vars[256];   /* the axis variables bound now, innermost last */
  Val vals[256];
  int nv;
  const char *op; /* the tensor being computed, for messages */
  bool failed;
  int64_t bytes_left; /* of the evaluation's memory budget */
  AVec owned; /* heap blocks to free */
} Ev;

static bool ev_fail(Ev *c, const char *msg) {
  if (!c->failed) kiln_set_error("topi_eval: computing '%s': %s", c->op ? c->op : "?", msg);
  c->failed = true;
  return false;
}

/* The expression walk is src/ir/eval.c's, in its wrapping mode (the value
 * the generated x86 code computes); what it asks of this file: */

static bool hook_fail(IrEval *ev, const char *why) { return ev_fail((Ev *)ev, why); }

static bool ev(Ev *c, Expr *e, Val *out) { return !c->failed && ir_eval_expr(&c->ev, e, out); }

/* A free variable: an axis or reduce variable bound now, or a symbolic
 * dimension bound to an input's size. */
static bool lookup(IrEval *ev, Expr *var, Val *out) {
  Ev *c = (Ev *)ev;
  for (int i = c->nv - 1; i >= 0; i--)
    if (c->vars[i] == var) {
      *out = c->vals[i];
      return true;
    }
  Val *sv = pm_get(&c->shape_vars, var);
  if (sv) {
    *out = *sv;
    return true;
  }
  return ev_fail(c, kfmt("variable '%s' is not bound", var->var.name));
}

static bool push(Ev *c, Expr *var, Val v) {
  if (c->nv >= 256) return ev_fail(c, "expressions nest too deeply");
  c->vars[c->nv] = var;
  c->vals[c->nv++] = v;
  return true;
}

static bool read_elem(Ev *c, Expr *e, Val *out) {
  Buf *b = pm_get(&c->bufs, e->read.tensor);
  if (!b) return ev_fail(c, kfmt("tensor '%s' has no value", e->read.tensor->name));
  int64_t flat = 0;
  for (int d = 0; d < e->read.n; d++) {
    Val iv;
    if (!ev(c, e->read.idx[d], &iv)) return false;
    int64_t i = iv.i;
    if (i < 0 || i >= b->shape[d])
      return ev_fail(c, kfmt("reads '%s' at index %lld of dimension %d (size %lld)", b->t->name, (long long)i, d,
                             (long long)b->shape[d]));
    flat = flat * b->shape[d] + i;
  }
  *out = b->data[flat];
  return true;
}

static bool reduce(Ev *c, Expr *e, Val *out) {
  Reducer *comb = e->reduce.comb;
  Val acc;
  if (!ev(c, comb->identity, &acc)) return false;
  int n = e->reduce.naxis;
  int64_t mins[16], exts[16], cur[16];
  if (n > 16) return ev_fail(c, "too many reduce axes");
  for (int i = 0; i < n; i++) {
    Val m, x;
    if (!ev(c, e->reduce.axis[i]->min, &m) || !ev(c, e->reduce.axis[i]->extent, &x)) return false;
    mins[i] = m.i;
    exts[i] = x.i;
    cur[i] = 0;
    if (exts[i] <= 0) {
      *out = acc;
      return true;
    }
  }
  int base = c->nv;
  for (int i = 0; i < n; i++)
    if (!push(c, e->reduce.axis[i]->var, (Val){mins[i], 0})) return false;
  for (;;) {
    for (int i = 0; i < n; i++) c->vals[base + i].i = mins[i] + cur[i];
    bool take = true;
    if (e->reduce.cond) {
      Val cv;
      if (!ev(c, e->reduce.cond, &cv)) return false;
      take = cv.i != 0;
    }
    if (take) {
      Val src;
      if (!ev(c, e->reduce.source, &src)) return false;
      int b2 = c->nv;
      if (!push(c, comb->lhs, acc) || !push(c, comb->rhs, src)) return false;
      bool ok = ev(c, comb->result, &acc);
      c->nv = b2;
      if (!ok) return false;
    }
    int i = n - 1;
    while (i >= 0 && ++cur[i] == exts[i]) cur[i--] = 0;
    if (i < 0) break;
  }
  c->nv = base;
  *out = acc;
  return true;
}

/* Read and Reduce, the nodes only this interpreter knows. */
static bool other(IrEval *ev, Expr *e, Val *out) {
  Ev *c = (Ev *)ev;
  return e->kind == EK_Read ? read_elem(c, e, out) : reduce(c, e, out);
}

/* ---- buffers ---- */

static int64_t numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++)
    if (__builtin_mul_overflow(n, shape[d], &n)) return INT64_MAX;
  return n;
}

#define EVAL_MEMORY_MB_DEFAULT 256

/* The evaluation's memory budget in bytes (KILN_EVAL_MEMORY_MB). */
int64_t topi_eval_budget_bytes(void) {
  const char *e = getenv("KILN_EVAL_MEMORY_MB");
  char *end;
  long long mb = e && *e ? strtoll(e, &end, 10) : EVAL_MEMORY_MB_DEFAULT;
  if (e && *e && (*end || mb <= 0 || mb > ((int64_t)1 << 40))) mb = EVAL_MEMORY_MB_DEFAULT;
  return (int64_t)mb << 20;
}

/* Room for n values of t, or an error saying how to get it. */
static int take_budget(Ev *c, Tensor *t, int64_t n) {
  if (n <= c->bytes_left / (int64_t)sizeof(Val)) {
    c->bytes_left -= n * (int64_t)sizeof(Val);
    return 0;
  }
  return kiln_set_error("topi_eval: '%s' has %s%lld elements, more than evaluating at compile time may hold "
                        "(KILN_EVAL_MEMORY_MB, %lld MiB, for all the tensors of one evaluation); make the values "
                        "graph inputs instead of constants, or raise KILN_EVAL_MEMORY_MB",
                        t->name, n == INT64_MAX ? "over " : "", (long long)n, (long long)(topi_eval_budget_bytes() >> 20));
}

static bool dl_dtype_ok(DLDataType d, DType t) {
  if (dt_is_bool(t)) return (d.code == kDLUInt || d.code == 6) && (d.bits == 1 || d.bits == 8) && d.lanes == 1;
  return d.code == t.code && d.bits == t.bits && d.lanes == t.lanes;
}

static int check_array(const char *what, Tensor *t, DLTensor *a, int64_t *shape) {
  if (!a) return kiln_set_error("topi_eval: no array for %s '%s'", what, t->name);
  if (a->device.device_type != kDLCPU) return kiln_set_error("topi_eval: %s '%s' is not on the CPU", what, t->name);
  if (a->ndim != t->ndim)
    return kiln_set_error("topi_eval: %s '%s' has %d dimensions, the array %d", what, t->name, t->ndim, a->ndim);
  if (!dl_dtype_ok(a->dtype, t->dtype))
    return kiln_set_error("topi_eval: %s '%s' is %s, the array is not", what, t->name, dt_str(t->dtype));
  for (int d = 0; d < t->ndim; d++)
    if (shape[d] != a->shape[d])
      return kiln_set_error("topi_eval: %s '%s' has shape[%d] = %lld, the array %lld", what, t->name, d,
                            (long long)shape[d], (long long)a->shape[d]);
  if (a->strides) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (a->shape[d] != 1 && a->strides[d] != expect)
        return kiln_set_error("topi_eval: the array of %s '%s' is not compact", what, t->name);
      expect *= a->shape[d];
    }
  }
  return 0;
}

static Val load_elem(const DLTensor *a, int64_t i, DType t) {
  const char *p = (const char *)a->data + a->byte_offset;
  Val v = {0, 0};
  if (dt_is_float(t)) {
    if (t.bits == 32) v.f = ((const float *)p)[i];
    else if (t.bits == 64) v.f = ((const double *)p)[i];
    else if (t.bits == 16) v.f = (double)((const _Float16 *)p)[i];
    return v;
  }
  if (dt_is_bool(t)) {
    v.i = ((const uint8_t *)p)[i] != 0;
    return v;
  }
  uint64_t u = 0;
  switch (t.bits) {
  case 8: u = ((const uint8_t *)p)[i]; break;
  case 16: u = ((const uint16_t *)p)[i]; break;
  case 32: u = ((const uint32_t *)p)[i]; break;
  default: u = ((const uint64_t *)p)[i]; break;
  }
  v.i = ir_scalar_norm(u, t);
  return v;
}

static void store_elem(DLTensor *a, int64_t i, DType t, Val v) {
  char *p = (char *)a->data + a->byte_offset;
  if (dt_is_float(t)) {
    if (t.bits == 32) ((float *)p)[i] = (float)v.f;
    else if (t.bits == 64) ((double *)p)[i] = v.f;
    else if (t.bits == 16) ((_Float16 *)p)[i] = (_Float16)v.f;
    return;
  }
  if (dt_is_bool(t)) {
    ((uint8_t *)p)[i] = v.i != 0;
    return;
  }
  switch (t.bits) {
  case 8: ((uint8_t *)p)[i] = (uint8_t)v.i; break;
  case 16: ((uint16_t *)p)[i] = (uint16_t)v.i; break;
  case 32: ((uint32_t *)p)[i] = (uint32_t)v.i; break;
  default: ((uint64_t *)p)[i] = (uint64_t)v.i; break;
  }
}

static void *own(Ev *c, size_t n) {
  void *p = xcalloc(n ? n : 1, 1);
  av_push(&c->owned, p);
  return p;
}

/* The constant (or bound) shape of t. */
static int eval_shape(Ev *c, Tensor *t, int64_t *shape) {
  for (int d = 0; d < t->ndim; d++) {
    Val v;
    c->op = t->name;
    if (!ev(c, t->shape[d], &v)) return -1;
    if (v.i < 0) return kiln_set_error("topi_eval: '%s' has a negative dimension %d", t->name, d);
    shape[d] = v.i;
  }
  return 0;
}

static int materialize(Ev *c, Tensor *t, int nin, Tensor **inputs, DLTensor **in_data, int depth) {
  if (pm_has(&c->bufs, t)) return 0;
  if (depth > 10000) return kiln_set_error("topi_eval: the graph is too deep");
  if (t->kind == TE_EXTERN)
    return kiln_set_error("topi_eval: extern op '%s' is not supported (only compute ops can be evaluated)", t->name);
  Buf *b = own(c, sizeof(Buf));
  b->t = t;
  b->ndim = t->ndim;
  b->shape = own(c, sizeof(int64_t) * (size_t)(t->ndim > 0 ? t->ndim : 1));
  if (t->kind == TE_PLACEHOLDER) {
    int k = -1;
    for (int i = 0; i < nin; i++)
      if (inputs[i] == t) k = i;
    if (k < 0) return kiln_set_error("topi_eval: placeholder '%s' is read but not among the inputs", t->name);
    DLTensor *a = in_data[k];
    if (eval_shape(c, t, b->shape)) return -1;
    if (check_array("input", t, a, b->shape)) return -1;
    int64_t n = numel(t->ndim, b->shape);
    if (take_budget(c, t, n)) return -1;
    b->data = own(c, sizeof(Val) * (size_t)n);
    for (int64_t i = 0; i < n; i++) b->data[i] = load_elem(a, i, t->dtype);
    pm_put(&c->bufs, t, b);
    return 0;
  }
  for (int i = 0; i < t->ninputs; i++)
    if (materialize(c, t->inputs[i], nin, inputs, in_data, depth + 1)) return -1;
  if (eval_shape(c, t, b->shape)) return -1;
  int64_t n = numel(t->ndim, b->shape);
  if (take_budget(c, t, n)) return -1;
  b->data = own(c, sizeof(Val) * (size_t)n);
  c->op = t->name;
  c->nv = 0;
  for (int d = 0; d < t->ndim; d++)
    if (!push(c, t->axis[d]->var, (Val){0, 0})) return -1;
  int64_t cur[64] = {0};
  if (t->ndim > 64) return kiln_set_error("topi_eval: rank too large");
  for (int64_t i = 0; i < n; i++) {
    for (int d = 0; d < t->ndim; d++) c->vals[d].i = cur[d];
    if (!ev(c, t->body, &b->data[i])) return -1;
    for (int d = t->ndim - 1; d >= 0 && ++cur[d] == b->shape[d]; d--) cur[d] = 0;
  }
  c->nv = 0;
  pm_put(&c->bufs, t, b);
  return 0;
}

/* Bind each placeholder's symbolic dims (plain variables) to its array. */
static int bind_shapes(Ev *c, int nin, Tensor **inputs, DLTensor **in_data) {
  for (int i = 0; i < nin; i++) {
    Tensor *t = inputs[i];
    if (!t || !in_data || !in_data[i]) return kiln_set_error("topi_eval: input %d is missing", i);
    if (t->kind != TE_PLACEHOLDER) return kiln_set_error("topi_eval: input '%s' is not a placeholder", t->name);
    if (in_data[i]->ndim != t->ndim)
      return kiln_set_error("topi_eval: input '%s' has %d dimensions, the array %d", t->name, t->ndim,
                            in_data[i]->ndim);
    for (int d = 0; d < t->ndim; d++) {
      Expr *s = t->shape[d];
      if (s->kind != EK_Var || pm_has(&c->shape_vars, s)) continue;
      Val *v = own(c, sizeof(Val));
      v->i = in_data[i]->shape[d];
      pm_put(&c->shape_vars, s, v);
    }
  }
  return 0;
}

int topi_eval(Tensor *out, int ninputs, Tensor **inputs, DLTensor **in_data, DLTensor *out_data) {
  if (!out || out->okind != KOBJ_TENSOR) return kiln_set_error("topi_eval: no output tensor");
  Ev *c = xcalloc(1, sizeof(Ev));
  c->ev = (IrEval){IR_EVAL_WRAP, lookup, other, hook_fail, NULL};
  c->bytes_left = topi_eval_budget_bytes();
  int rc = bind_shapes(c, ninputs, inputs, in_data);
  if (!rc) rc = materialize(c, out, ninputs, inputs, in_data, 0);
  if (!rc) {
    Buf *b = pm_get(&c->bufs, out);
    rc = check_array("output", out, out_data, b->shape);
    if (!rc) {
      int64_t n = numel(b->ndim, b->shape);
      for (int64_t i = 0; i < n; i++) store_elem(out_data, i, out->dtype, b->data[i]);
    }
  }
  for (int i = 0; i < c->owned.len; i++) free(c->owned.data[i]);
  pm_free(&c->bufs);
  pm_free(&c->shape_vars);
  free(c);
  return rc;
}
