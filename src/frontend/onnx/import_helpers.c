/*
 * import_helpers.c - the importer's API for op handlers (import.h): their
 * inputs and outputs (tensors, sequences, optionals, bfloat16 carried wide),
 * calls that fold constants as they are made, and the constant, shape and
 * symbol helpers handlers build graphs with.
 */
#include "import_internal.h"
#include "ops/ops.h" /* lowp_widen ... (bfloat16 arithmetic) */

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/passes/passes.h"
#include "../../topi/topi.h" /* topi_eval_budget_bytes */

/* Results up to this many elements are folded during import. */
#define IMPORT_FOLD_LIMIT 65536

int imp_error(Importer *im, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return kiln_set_error("%s node '%s' (opset %lld): %s", im->node->op_type, im->node->name, (long long)im->opset, buf);
}

/* Data types Kiln computes with: bfloat16 has a DLPack code but no C
 * arithmetic in the generated code (nor a NumPy type to hand results in). */
int imp_check_dtype(DType t, const char *what) {
  if (t.code == kDLBfloat) return kiln_set_error("%s: data type bfloat16 is not supported", what);
  return 0;
}

Graph *imp_graph(Importer *im) { return im->g; }
const OnnxNode *imp_node(Importer *im) { return im->node; }
int64_t imp_opset(Importer *im) { return im->opset; }
int imp_ninputs(Importer *im) { return im->node->ninputs; }

static DLTensor *tensor_to_array(const OnnxTensor *t) {
  DType dt;
  if (onnx_tensor_dtype(t, &dt)) return NULL;
  if (t->ndim > GRAPH_MAX_DIMS) return kiln_set_error("tensor '%s' has %d dimensions (at most %d)", t->name, t->ndim, GRAPH_MAX_DIMS), NULL;
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(t->ndim, t->dims, dt, cpu, &a)) return NULL;
  if (t->nbytes && kiln_array_copy_from_bytes(a, t->data, t->nbytes)) {
    kiln_array_free(a);
    return NULL;
  }
  return a;
}

/* The value named name: an imported node, or an initializer made a
 * constant on first use. */
GNode *imp_lookup(Importer *im, const char *name) {
  GNode *v = pm_get(&im->values, name);
  if (v) return v;
  const OnnxTensor *t = pm_get(&im->initializers, name);
  if (!t) return NULL;
  DLTensor *a = tensor_to_array(t);
  if (!a) return NULL;
  v = graph_const(im->g, name, a);
  if (v) pm_put(&im->values, kstrdup(name), v);
  return v;
}

ImpSeq *imp_input_seq(Importer *im, int i) {
  ImpSeq *q = i < im->node->ninputs && *im->node->inputs[i] ? pm_get(&im->seqs, im->node->inputs[i]) : NULL;
  if (!q) imp_error(im, "input %d ('%s') is not a sequence", i, i < im->node->ninputs ? im->node->inputs[i] : "");
  return q;
}

ImpSeq *imp_value_seq(Importer *im, const char *name) { return pm_get(&im->seqs, name); }

ImpOpt *imp_input_opt(Importer *im, int i) {
  return i < im->node->ninputs && *im->node->inputs[i] ? pm_get(&im->opts, im->node->inputs[i]) : NULL;
}

ImpOpt *imp_value_opt(Importer *im, const char *name) { return pm_get(&im->opts, name); }

int imp_set_output_opt(Importer *im, int i, ImpOpt *o) {
  if (!o) return -1;
  if (i >= im->node->noutputs || !*im->node->outputs[i]) return 0;
  pm_put(&im->opts, kstrdup(im->node->outputs[i]), o);
  return 0;
}

/* A name holds one kind of value at a time (a loop body's input is bound
 * again each iteration). */
void imp_bind_seq(Importer *im, const char *name, ImpSeq *s) {
  pm_put(&im->values, kstrdup(name), NULL);
  pm_put(&im->opts, kstrdup(name), NULL);
  pm_put(&im->seqs, kstrdup(name), s);
}

void imp_bind_opt(Importer *im, const char *name, ImpOpt *o) {
  pm_put(&im->values, kstrdup(name), NULL);
  pm_put(&im->seqs, kstrdup(name), NULL);
  pm_put(&im->opts, kstrdup(name), o);
}

int imp_set_output_seq(Importer *im, int i, ImpSeq *q) {
  if (!q) return -1;
  if (i >= im->node->noutputs || !*im->node->outputs[i]) return 0;
  pm_put(&im->seqs, kstrdup(im->node->outputs[i]), q);
  return 0;
}

/* The carried low-precision type of the value name (0: none). */
static int lowp_of(Importer *im, const char *name) {
  intptr_t c = (intptr_t)pm_get(&im->lowp, name);
  if (c) return (int)c;
  const OnnxTensor *t = pm_get(&im->initializers, name);
  DType dt;
  return t && onnx_dtype_carrier(t->elem_type, &dt) ? t->elem_type : 0;
}

int imp_input_lowp(Importer *im, int i) {
  if (i >= im->node->ninputs || !*im->node->inputs[i]) return 0;
  return lowp_of(im, im->node->inputs[i]);
}

void imp_set_output_lowp(Importer *im, int i, int code) {
  if (i >= im->node->noutputs || !*im->node->outputs[i]) return;
  pm_put(&im->lowp, kstrdup(im->node->outputs[i]), code ? (void *)(intptr_t)code : NULL);
}

/* The ops that take a carried low-precision value: those that convert
 * it, and Identity (which passes it on). */
static const char *const lowp_ops[] = {"Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "Identity", NULL};
/* Ops that select elements without computing with them take a carried
 * bfloat16 as it is (their handlers mark the outputs that carry it):
 * widened and narrowed again, Compress's and Unique's results would go
 * through conversions over a size the data decides. */
static const char *const lowp_select_ops[] = {"Compress", "Unique", NULL};

/* The node's carried inputs: fine for the conversion ops; bfloat16 for
 * any other op (*widen: it computes in float32, ops/lowp.c); an error
 * for the other types. */
int imp_check_lowp_inputs(Importer *im, bool *widen) {
  const OnnxNode *n = im->node;
  bool dflt = !*n->domain || !strcmp(n->domain, "ai.onnx"), conv = false;
  for (const char *const *o = lowp_ops; dflt && *o && !conv; o++) conv = !strcmp(*o, n->op_type);
  bool select = false;
  for (const char *const *o = lowp_select_ops; dflt && *o && !select; o++) select = !strcmp(*o, n->op_type);
  *widen = false;
  for (int k = 0; k < n->ninputs && !conv; k++) {
    int code = imp_input_lowp(im, k);
    if (code == ONNX_DT_BFLOAT16) {
      if (!select || k > 0) *widen = true;
    } else if (code)
      return imp_error(im, "input %d ('%s') is %s, which Kiln supports only as storage: it converts it with Cast, "
                           "CastLike, QuantizeLinear and DequantizeLinear and computes with nothing else; cast it "
                           "to float before %s (data type not supported here)",
                       k, n->inputs[k], onnx_data_type_name(code), n->op_type);
  }
  return 0;
}

GNode *imp_input(Importer *im, int i) {
  if (i >= im->node->ninputs || !*im->node->inputs[i]) return NULL;
  return imp_lookup(im, im->node->inputs[i]);
}

int imp_set_output(Importer *im, int i, GNode *v) {
  if (!v) return -1;
  if (i >= im->node->noutputs || !*im->node->outputs[i]) return 0; /* not requested */
  pm_put(&im->values, kstrdup(im->node->outputs[i]), v);
  return 0;
}

/* A call over sizes given at run time that Kiln cannot build says which
 * graph inputs give them, the way a value needed at compile time does, so
 * the model can still be compiled for one value of them with --bind. */
static void collect_vars(GNode *v, char *seen, StrBuf *sb);

static void runtime_value_hint(Importer *im) {
  StrBuf sb = {0};
  char *seen = xcalloc((size_t)im->g->nodes.len + 1, 1);
  for (int i = 0; i < im->g->syms.len; i++) {
    const GSym *s = im->g->syms.data[i];
    if (!s->value_of) continue;
    /* the graph input, or for a value kernels compute (dd.bind) the graph
     * inputs it comes from */
    GNode *from = NULL;
    for (int k = 0; k < im->g->nodes.len && !from; k++) {
      GNode *n = im->g->nodes.data[k];
      if ((n->kind == GN_VAR && !strcmp(n->name, s->value_of)) ||
          (n->kind == GN_CALL && (n->op->flags & OPF_BINDS_VALUES) &&
           !strcmp(gattr_str(&n->attrs, "value_of", ""), s->value_of)))
        from = n;
    }
    if (from) collect_vars(from, seen, &sb);
  }
  free(seen);
  if (sb.len) {
    char *why = xstrdup(kiln_get_error()); /* not the buffer kiln_set_error writes */
    kiln_set_error("%s; with sizes given at run time this is not supported yet: the value must be known at compile "
                   "time; it is computed from the graph input(s) %s: bind them to values with --bind NAME=FILE",
                   why, sb.data);
    free(why);
  }
  sb_free(&sb);
}

GNode *imp_call(Importer *im, const char *op, int nargs, GNode **args, GAttrs attrs) {
  for (int i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  GNode *n = graph_call(im->g, op, nargs, args, attrs, im->node->name);
  if (!n) {
    kiln_error_context("%s node '%s' (opset %lld)", im->node->op_type, im->node->name, (long long)im->opset);
    return runtime_value_hint(im), NULL;
  }
  if (n->op->compute && ttype_numel(&n->type) == 0 && !ttype_is_symbolic(&n->type)) {
    /* an empty result needs no kernel: it is an empty constant (one whose
     * size a run-time value decides is empty only at some values) */
    DLTensor *e;
    DLDevice cpu = {kDLCPU, 0};
    if (kiln_array_empty(n->type.ndim, n->type.shape, n->type.dtype, cpu, &e)) return NULL;
    return graph_const(im->g, NULL, e);
  }
  bool all_const = nargs > 0 && n->op->compute;
  for (int i = 0; i < nargs && all_const; i++) all_const = args[i]->kind == GN_CONST;
  if (all_const && !ttype_is_symbolic(&n->type) && ttype_numel(&n->type) <= IMPORT_FOLD_LIMIT) {
    DLTensor *v = graph_eval_call(n, args);
    if (!v) {
      kiln_error_context("%s node '%s'", im->node->op_type, im->node->name);
      return NULL;
    }
    GNode *c = graph_const(im->g, NULL, v);
    return c && symval_fold(im, op, nargs, args, &n->attrs, c) ? NULL : c;
  }
  if (im->shapevals.len && symval_refuse_data(im, op, nargs, args)) return NULL;
  return n;
}

GNode *imp_call_unfolded(Importer *im, const char *op, int nargs, GNode **args, GAttrs attrs) {
  for (int i = 0; i < nargs; i++)
    if (!args[i]) return NULL;
  GNode *n = graph_call(im->g, op, nargs, args, attrs, im->node->name);
  if (!n) kiln_error_context("%s node '%s' (opset %lld)", im->node->op_type, im->node->name, (long long)im->opset);
  return n;
}

GNode *imp_call1(Importer *im, const char *op, GNode *a) { return imp_call(im, op, 1, &a, gattrs_new()); }
GNode *imp_call2(Importer *im, const char *op, GNode *a, GNode *b) {
  GNode *args[2] = {a, b};
  return imp_call(im, op, 2, args, gattrs_new());
}

GNode *imp_const_ints(Importer *im, int n, const int64_t *v) {
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  int64_t len = n;
  if (kiln_array_empty(1, &len, DT_I64, cpu, &a)) return NULL;
  if (n) memcpy(a->data, v, sizeof(int64_t) * (size_t)n);
  return graph_const(im->g, NULL, a);
}

GNode *imp_scalar(Importer *im, double v, DType t) { return graph_scalar(im->g, v, t); }

GNode *imp_reshape(Importer *im, GNode *x, int n, const int64_t *shape) {
  if (!x) return NULL;
  GAttrs a = gattrs_new();
  ga_ints(&a, "newshape", n, shape);
  /* the shape is the literal result: a 0 is a size, not "copy the input's" */
  bool zero = false;
  for (int i = 0; i < n; i++) zero |= shape[i] == 0;
  if (zero) ga_int(&a, "allowzero", 1);
  return imp_call(im, "reshape", 1, &x, a);
}

GNode *imp_transpose(Importer *im, GNode *x, int n, const int64_t *perm) {
  if (!x) return NULL;
  bool id = true;
  for (int i = 0; i < n; i++) id = id && perm[i] == i;
  if (id) return x;
  GAttrs a = gattrs_new();
  ga_ints(&a, "axes", n, perm);
  return imp_call(im, "transpose", 1, &x, a);
}

GNode *imp_cast(Importer *im, GNode *x, DType t) {
  if (!x || dt_eq(x->type.dtype, t)) return x;
  GAttrs a = gattrs_new();
  ga_str(&a, "dtype", dt_str(t));
  return imp_call(im, "cast", 1, &x, a);
}

GNode *imp_reduce(Importer *im, const char *op, GNode *x, int naxes, const int64_t *axes, bool keepdims) {
  if (!x) return NULL;
  GAttrs a = gattrs_new();
  if (naxes) ga_ints(&a, "axis", naxes, axes);
  ga_int(&a, "keepdims", keepdims);
  return imp_call(im, op, 1, &x, a);
}

GNode *imp_expand_dims(Importer *im, GNode *x, int axis) {
  if (!x) return NULL;
  int64_t ax = axis;
  GAttrs a = gattrs_new();
  ga_ints(&a, "axes", 1, &ax);
  return imp_call(im, "expand_dims", 1, &x, a);
}

GNode *imp_squeeze(Importer *im, GNode *x, int axis) {
  if (!x) return NULL;
  int64_t ax = axis;
  GAttrs a = gattrs_new();
  ga_ints(&a, "axis", 1, &ax);
  return imp_call(im, "squeeze", 1, &x, a);
}

GNode *imp_where(Importer *im, GNode *c, GNode *a, GNode *b) {
  GNode *args[3] = {c, a, b};
  return imp_call(im, "where", 3, args, gattrs_new());
}

GNode *imp_scalar_like(Importer *im, double v, GNode *x) { return x ? graph_scalar(im->g, v, x->type.dtype) : NULL; }

GNode *imp_slice(Importer *im, GNode *x, int axis, int64_t b, int64_t e) {
  if (!x) return NULL;
  GAttrs a = gattrs_new();
  int64_t ax = axis, st = 1;
  ga_ints(&a, "begin", 1, &b);
  ga_ints(&a, "end", 1, &e);
  ga_ints(&a, "strides", 1, &st);
  ga_ints(&a, "axes", 1, &ax);
  return imp_call(im, "strided_slice", 1, &x, a);
}

GNode *imp_index0(Importer *im, GNode *x, int64_t i) { return imp_squeeze(im, imp_slice(im, x, 0, i, i + 1), 0); }

bool imp_want_output(Importer *im, int i) { return im->node->noutputs > i && *im->node->outputs[i]; }

int imp_norm_axis(Importer *im, int64_t axis, int ndim, int *out) {
  *out = 0;
  if (axis < -ndim || axis >= (ndim > 0 ? ndim : 1))
    return imp_error(im, "axis %lld is out of range for a tensor of rank %d", (long long)axis, ndim);
  *out = (int)(axis < 0 ? axis + ndim : axis);
  return 0;
}

int64_t imp_numel(int n, const int64_t *s) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s[i];
  return p;
}

GNode *imp_new_i64(Importer *im, int ndim, const int64_t *shape, int64_t **data) {
  void *p = NULL;
  GNode *c = imp_new_const(im, DT_I64, ndim, shape, &p);
  *data = p;
  return c;
}

GNode *imp_mask2d(Importer *im, int64_t n, int64_t m, int trailing, ImpMaskFn pred, int64_t k) {
  int64_t shape[GRAPH_MAX_DIMS] = {n, m};
  for (int t = 0; t < trailing; t++) shape[2 + t] = 1;
  void *p;
  GNode *c = imp_new_const(im, DT_BOOL, 2 + trailing, shape, &p);
  if (!c) return NULL;
  uint8_t *d = p;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) d[i * m + j] = pred(i, j, k);
  return c;
}

int imp_const_scalar(Importer *im, int i, double *out) {
  GNode *c = imp_const_input(im, i);
  if (!c) return -1;
  if (ttype_numel(&c->type) != 1) return imp_error(im, "input %d must hold one value, got %s", i, ttype_str(&c->type));
  *out = imp_const_at(c, 0);
  return 0;
}

GNode *imp_new_const(Importer *im, DType t, int ndim, const int64_t *shape, void **data) {
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  int64_t n;
  /* a table the importer computes (a mask, indices, weights): bounded like
   * the constants folding makes, so a shape from a model cannot ask for
   * gigabytes here */
  if (imp_numel_in(im, "a constant the importer builds", ndim, shape, IMP_MAX_COUNT, &n)) return NULL;
  uint64_t bytes = (uint64_t)n * (uint64_t)((t.bits + 7) / 8), budget = (uint64_t)topi_eval_budget_bytes();
  if (bytes > budget)
    return imp_error(im, "a constant the importer builds of %lld %s elements would take %llu bytes, more than compile-time "
                         "constants may hold (KILN_EVAL_MEMORY_MB, %llu MiB); use smaller sizes, or raise "
                         "KILN_EVAL_MEMORY_MB",
                     (long long)n, dt_str(t), (unsigned long long)bytes, (unsigned long long)(budget >> 20)),
           NULL;
  if (kiln_array_empty(ndim, shape, t, cpu, &a)) return NULL;
  memset(a->data, 0, kiln_array_nbytes(a));
  if (data) *data = a->data;
  return graph_const(im->g, NULL, a);
}

/* v clamped to [lo, hi], NaN as 0: converting a double outside the target
 * integer type's range is undefined in C, and a fuzzed model reaches here
 * with any value (a handler checks the ranges its operator defines). */
static double clamp_int(double v, double lo, double hi) {
  if (v != v) return 0;
  return v < lo ? lo : v > hi ? hi : v;
}

void imp_array_set(DLTensor *a, int64_t i, double v) {
  char *p = (char *)a->data + a->byte_offset;
  DLDataType d = a->dtype;
  /* the largest doubles below 2^63 and 2^64 */
  const double i64_hi = 9223372036854774784.0, u64_hi = 18446744073709549568.0;
  if (d.code == kDLFloat && d.bits == 32) ((float *)p)[i] = (float)v;
  else if (d.code == kDLFloat && d.bits == 64) ((double *)p)[i] = v;
  else if (d.code == kDLFloat && d.bits == 16) ((_Float16 *)p)[i] = (_Float16)v;
  else if (d.code == kDLInt && d.bits == 8) ((int8_t *)p)[i] = (int8_t)clamp_int(v, INT8_MIN, INT8_MAX);
  else if (d.code == kDLInt && d.bits == 16) ((int16_t *)p)[i] = (int16_t)clamp_int(v, INT16_MIN, INT16_MAX);
  else if (d.code == kDLInt && d.bits == 32) ((int32_t *)p)[i] = (int32_t)clamp_int(v, INT32_MIN, INT32_MAX);
  else if (d.code == kDLInt && d.bits == 64) ((int64_t *)p)[i] = (int64_t)clamp_int(v, -i64_hi - 1024.0, i64_hi);
  else if (d.code == kDLUInt && d.bits == 1) ((uint8_t *)p)[i] = v != 0;
  else if (d.code == kDLUInt && d.bits == 8) ((uint8_t *)p)[i] = (uint8_t)clamp_int(v, 0, UINT8_MAX);
  else if (d.code == kDLUInt && d.bits == 16) ((uint16_t *)p)[i] = (uint16_t)clamp_int(v, 0, UINT16_MAX);
  else if (d.code == kDLUInt && d.bits == 32) ((uint32_t *)p)[i] = (uint32_t)clamp_int(v, 0, UINT32_MAX);
  else if (d.code == kDLUInt && d.bits == 64) ((uint64_t *)p)[i] = (uint64_t)clamp_int(v, 0, u64_hi);
  else KASSERT(!"imp_array_set: unexpected dtype");
}

double imp_const_at(const GNode *c, int64_t i) {
  const DLTensor *a = c->value;
  const char *p = (const char *)a->data + a->byte_offset;
  DLDataType d = a->dtype;
  if (d.code == kDLFloat && d.bits == 32) return ((const float *)p)[i];
  if (d.code == kDLFloat && d.bits == 64) return ((const double *)p)[i];
  if (d.code == kDLFloat && d.bits == 16) return (double)((const _Float16 *)p)[i];
  if (d.code == kDLInt && d.bits == 8) return ((const int8_t *)p)[i];
  if (d.code == kDLInt && d.bits == 16) return ((const int16_t *)p)[i];
  if (d.code == kDLInt && d.bits == 32) return ((const int32_t *)p)[i];
  if (d.code == kDLInt && d.bits == 64) return (double)((const int64_t *)p)[i];
  if (d.code == kDLUInt && (d.bits == 1 || d.bits == 8)) return ((const uint8_t *)p)[i];
  if (d.code == kDLUInt && d.bits == 16) return ((const uint16_t *)p)[i];
  if (d.code == kDLUInt && d.bits == 32) return ((const uint32_t *)p)[i];
  if (d.code == kDLUInt && d.bits == 64) return (double)((const uint64_t *)p)[i];
  KASSERT(!"imp_const_at: unexpected dtype");
  return 0;
}

/* The graph inputs v is computed from, as "'a', 'b'" (NULL: none). */
static void collect_vars(GNode *v, char *seen, StrBuf *sb) {
  if (seen[v->id]) return;
  seen[v->id] = 1;
  if (v->kind == GN_VAR) sb_printf(sb, "%s'%s'", sb->len ? ", " : "", v->name);
  for (int i = 0; i < v->nargs; i++) collect_vars(v->args[i], seen, sb);
}

GNode *imp_const_input(Importer *im, int i) {
  GNode *v = imp_input(im, i);
  if (!v) return imp_error(im, "input %d is missing", i), NULL;
  if (v->kind == GN_CONST) return symval_refuse_const(im, i, v) ? NULL : v;
  /* a graph input with no elements has one value, known now (a Reduce's
   * empty axes given as an input) */
  if (v->kind == GN_VAR && !ttype_is_symbolic(&v->type) && ttype_numel(&v->type) == 0) {
    DLTensor *e;
    DLDevice cpu = {kDLCPU, 0};
    if (kiln_array_empty(v->type.ndim, v->type.shape, v->type.dtype, cpu, &e)) return NULL;
    return graph_const(im->g, NULL, e);
  }
  char *seen = xcalloc((size_t)im->g->nodes.len + 1, 1);
  StrBuf sb = {0};
  collect_vars(v, seen, &sb);
  free(seen);
  if (sb.len)
    imp_error(im,
              "input %d ('%s') must be known at compile time (a constant or computed from shapes); it is computed "
              "from the graph input(s) %s: bind them to values with --bind NAME=FILE",
              i, im->node->inputs[i], sb.data);
  else
    imp_error(im, "input %d ('%s') must be known at compile time (a constant or computed from shapes)", i,
              im->node->inputs[i]);
  sb_free(&sb);
  return NULL;
}

/* A value computed by kernels whose elements are run-time values: a
 * dd.bind node over it (one per value), from whose output the executor
 * binds them after it runs (docs/symbolic_shapes.md, section 4c). */
static GNode *bind_node(Importer *im, GNode *v, const char *name) {
  for (int k = 0; k < im->g->nodes.len; k++) {
    GNode *n = im->g->nodes.data[k];
    if (n->kind == GN_CALL && (n->op->flags & OPF_BINDS_VALUES) && !strcmp(gattr_str(&n->attrs, "value_of", ""), name))
      return n;
  }
  GAttrs a = gattrs_new();
  ga_ints(&a, "shape", 1, v->type.shape);
  ga_str(&a, "dtype", dt_str(v->type.dtype));
  ga_str(&a, "value_of", name);
  ga_str(&a, "host_attrs", "{}");
  return graph_call(im->g, "dd.bind", 1, &v, a, kfmt("%s_bind", im->node->name));
}

int imp_runtime_shape_input(Importer *im, int i, GSym **syms, int max) {
  GNode *v = imp_input(im, i);
  if (!v || (v->kind != GN_VAR && v->kind != GN_CALL) || v->type.ndim != 1 || v->type.dtype.code != kDLInt ||
      (v->type.dtype.bits != 64 && v->type.dtype.bits != 32) || ttype_is_symbolic(&v->type))
    return -2;
  /* a graph input's values come with its data; a value kernels compute is
   * bound after they run */
  const char *name = v->kind == GN_VAR ? v->name : im->node->inputs[i];
  if (v->kind == GN_CALL && !bind_node(im, v, name)) return imp_error(im, "input %d ('%s'): %s", i, name, kiln_get_error());
  int64_t n = v->type.shape[0];
  if (n > max) return imp_error(im, "input %d ('%s') has %lld elements, at most %d", i, name, (long long)n, max);
  for (int64_t k = 0; k < n; k++)
    if (!(syms[k] = graph_value_sym(im->g, name, (int)k, 0, GRAPH_MAX_ELEMS)))
      return imp_error(im, "input %d ('%s'): %s", i, name, kiln_get_error());
  return (int)n;
}

const char *imp_runtime_value_of(Importer *im, int i) {
  GNode *v = imp_input(im, i);
  if (!v || (v->kind != GN_VAR && v->kind != GN_CALL) || v->type.ndim != 1 || v->type.dtype.code != kDLInt ||
      (v->type.dtype.bits != 64 && v->type.dtype.bits != 32) || ttype_is_symbolic(&v->type))
    return NULL;
  if (v->kind == GN_VAR) return v->name;
  const char *name = im->node->inputs[i];
  return bind_node(im, v, name) ? name : NULL;
}

GSym *imp_value_sym(Importer *im, GNode *v, const char *name, int64_t lo, int64_t hi) {
  bool i64 = v->type.dtype.code == kDLInt && (v->type.dtype.bits == 64 || v->type.dtype.bits == 32);
  if (v->kind == GN_VAR && i64 && v->type.ndim == 1 && !ttype_is_symbolic(&v->type) && v->type.shape[0] == 1)
    return graph_value_sym(im->g, v->name, 0, lo, hi);
  int64_t one = 1;
  GNode *r = imp_reshape(im, i64 ? v : imp_cast(im, v, DT_I64), 1, &one);
  if (!r || !bind_node(im, r, name)) return NULL;
  return graph_value_sym(im->g, name, 0, lo, hi);
}

const char *imp_sym_dims(Importer *im, int n, GSym *const *syms, const int64_t *times) {
  StrBuf sb = {0};
  for (int d = 0; d < n; d++) {
    if (d) sb_puts(&sb, ",");
    if (!syms[d]) continue;
    sb_puts(&sb, syms[d]->name);
    if (times && times[d] != 1) sb_printf(&sb, " %lld *", (long long)times[d]);
  }
  kiln_arena_push(im->g->arena);
  const char *r = kstrdup(sb.data ? sb.data : "");
  kiln_arena_pop();
  sb_free(&sb);
  return r;
}

int imp_const_input_ints(Importer *im, int i, int64_t *out, int max) {
  GNode *v = imp_const_input(im, i);
  if (!v) return -1;
  int n = gnode_const_ints(v, out, max);
  if (n < 0) return imp_error(im, "input %d: %s", i, kiln_get_error());
  return n;
}
