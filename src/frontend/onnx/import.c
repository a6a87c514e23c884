/*
 * import.c - ONNX model -> Kiln graph (see import.h for the approach).
 */
#include "import_internal.h"
#include "onnx_schema.h"
#include "ops/ops.h" /* lowp_widen ... (bfloat16 arithmetic) */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../graph/passes/passes.h"
#include "../../topi/topi.h" /* topi_eval_budget_bytes */

/* Results up to this many elements are folded during import. */
#define IMPORT_FOLD_LIMIT 65536


int parse_input_shapes(const char *text, InputShape **out) {
  AVec v = {0}, v_bounds = {0};
  const char *p = text ? text : "";
  while (*p) {
    while (isspace((unsigned char)*p) || *p == ',' || *p == ';') p++;
    if (!*p) break;
    /* a bound on a symbol: N<=64, N>=2 */
    const char *id = p;
    while (isalnum((unsigned char)*id) || *id == '_') id++;
    if (id > p && (isalpha((unsigned char)*p) || *p == '_') && (id[0] == '<' || id[0] == '>') && id[1] == '=') {
      InputShape *b = KNEW(InputShape);
      b->name = kstrndup(p, (size_t)(id - p));
      b->bound = true;
      b->lo = 1;
      b->hi = INT64_MAX;
      char *end;
      errno = 0;
      long long bv = strtoll(id + 2, &end, 10);
      if (end == id + 2 || errno == ERANGE || bv < 1)
        return kiln_set_error("bad bound '%.30s': expected %s%c=<a positive integer>", p, b->name, id[0]);
      *(id[0] == '<' ? &b->hi : &b->lo) = bv;
      av_push(&v_bounds, b);
      p = end;
      continue;
    }
    const char *colon = strchr(p, ':');
    if (!colon) return kiln_set_error("bad input shape '%s': expected name:[d0,d1,...]", p);
    InputShape *s = KNEW(InputShape);
    const char *ne = colon;
    while (ne > p && isspace((unsigned char)ne[-1])) ne--;
    s->name = kstrndup(p, (size_t)(ne - p));
    if (!*s->name) return kiln_set_error("bad input shape '%s': empty input name", text);
    const char *q = colon + 1;
    while (isspace((unsigned char)*q)) q++;
    if (!strncmp(q, "seq(", 4) || (!strncmp(q, "none", 4) && !isalnum((unsigned char)q[4]) && q[4] != '_')) {
      /* a sequence's length or an empty optional (docs/sequences.md) */
      if (*q == 'n') {
        s->structure = IS_NONE;
        q += 4;
      } else {
        char *end;
        errno = 0;
        long long c = strtoll(q + 4, &end, 10);
        if (end == q + 4 || errno == ERANGE || c < 0 || c > 4096 || *end != ')')
          return kiln_set_error("bad input structure for '%s': expected seq(N) with N in [0, 4096] at \"%.20s\"",
                                s->name, q);
        s->structure = IS_SEQ;
        s->count = c;
        q = end + 1;
      }
      for (int i = 0; i < v.len; i++)
        if (!strcmp(((InputShape *)v.data[i])->name, s->name)) return kiln_set_error("input '%s' is given two shapes", s->name);
      av_push(&v, s);
      p = q;
      continue;
    }
    bool bracket = *q == '[';
    if (bracket) q++;
    s->ndim = 0;
    for (;;) {
      while (isspace((unsigned char)*q)) q++;
      if (bracket && *q == ']') {
        q++;
        break;
      }
      if (!bracket && (*q == 0 || *q == ',' || *q == ';' || isspace((unsigned char)*q))) break;
      char *end;
      errno = 0;
      if (isalpha((unsigned char)*q) || *q == '_') { /* a symbol */
        const char *e = q;
        while (isalnum((unsigned char)*e) || *e == '_') e++;
        if (s->ndim >= GRAPH_MAX_DIMS) return kiln_set_error("input shape for '%s' has more than %d dimensions", s->name, GRAPH_MAX_DIMS);
        s->sym[s->ndim] = kstrndup(q, (size_t)(e - q));
        s->shape[s->ndim++] = -1;
        end = (char *)e;
        goto next;
      }
      long long d = strtoll(q, &end, 10);
      if (end != q && errno == ERANGE)
        return kiln_set_error("bad input shape for '%s': \"%.20s\" does not fit in 64 bits", s->name, q);
      if (end == q || d < 0)
        return kiln_set_error("bad input shape for '%s': expected a non-negative integer or a symbol name at \"%.20s\"", s->name, q);
      if (s->ndim >= GRAPH_MAX_DIMS) return kiln_set_error("input shape for '%s' has more than %d dimensions", s->name, GRAPH_MAX_DIMS);
      s->shape[s->ndim++] = d;
    next:
      q = end;
      while (isspace((unsigned char)*q)) q++;
      if (bracket) {
        if (*q == ',') q++;
        else if (*q != ']') return kiln_set_error("bad input shape for '%s': expected ',' or ']' at \"%.20s\"", s->name, q);
      } else {
        if (*q == 'x' || *q == 'X') q++;
        else break;
      }
    }
    if (bracket && q[-1] != ']') return kiln_set_error("bad input shape for '%s': missing ']'", s->name);
    for (int i = 0; i < v.len; i++)
      if (!strcmp(((InputShape *)v.data[i])->name, s->name)) return kiln_set_error("input '%s' is given two shapes", s->name);
    av_push(&v, s);
    p = q;
  }
  for (int i = 0; i < v_bounds.len; i++) av_push(&v, v_bounds.data[i]);
  InputShape *arr = KNEWN(InputShape, v.len + 1);
  for (int i = 0; i < v.len; i++) arr[i] = *(InputShape *)v.data[i];
  *out = arr;
  return v.len;
}

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
static int check_dtype(DType t, const char *what) {
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
static GNode *lookup(Importer *im, const char *name) {
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
static int check_lowp_inputs(Importer *im, bool *widen) {
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
  return lookup(im, im->node->inputs[i]);
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
  void *p;
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

/* A copy of a bound value as a constant named after the input, checked
 * against the input's type in the model. */
static GNode *bound_const(Importer *im, const char *name, const OnnxType *ty, const DLTensor *val, DType dt) {
  if (!dt_eq(dt, val->dtype))
    return kiln_set_error("input '%s' is %s in the model, but the value bound to it is %s", name, dt_str(dt),
                          dt_str(val->dtype)),
           NULL;
  if (ty->ndim >= 0) {
    bool ok = ty->ndim == val->ndim;
    for (int d = 0; ok && d < val->ndim; d++)
      if (ty->dims[d].kind == ONNX_DIM_VALUE && ty->dims[d].value != val->shape[d]) ok = false;
    if (!ok) return kiln_set_error("input '%s': the value bound to it has a shape the model does not allow", name), NULL;
  }
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(val->ndim, val->shape, val->dtype, cpu, &a)) return NULL;
  if (kiln_array_copy(val, a)) {
    kiln_array_free(a);
    return NULL;
  }
  return graph_const(im->g, name, a);
}

/* The graph input name of ONNX tensor type *ty (a tensor input, or an
 * element of a sequence or optional input), shaped by us when given. */
static int tensor_input(Importer *im, const char *name, const OnnxType *ty, const InputShape *us) {
  int rc = 0;
  DType dt;
  if (onnx_dtype_carrier(ty->elem_type, &dt))
    pm_put(&im->lowp, kstrdup(name), (void *)(intptr_t)ty->elem_type);
  else if (ty->elem_type == ONNX_DT_STRING)
    dt = DT_STRING; /* docs/strings.md */
  else if (onnx_dtype_from_onnx(ty->elem_type, &dt)) {
    rc = kiln_error_context("input '%s'", name);
    return rc;
  }
  if ((rc = check_dtype(dt, kfmt("input '%s'", name)))) return rc;
  const InputValue *bv = NULL;
  for (int k = 0; k < im->nbound; k++)
    if (!strcmp(im->bound[k].name, name)) bv = &im->bound[k];
  if (bv) {
    if (us) {
      rc = kiln_set_error("input '%s' is given both a shape and a value", name);
      return rc;
    }
    GNode *c = bound_const(im, name, ty, bv->value, dt);
    if (!c) {
      rc = -1;
      return rc;
    }
    pm_put(&im->values, kstrdup(name), c);
    return 0;
  }
  TType t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  if (us) {
    if (ty->ndim >= 0 && us->ndim != ty->ndim) {
      rc = kiln_set_error("input '%s' has rank %d in the model, but the given shape has %d dimensions", name,
                          ty->ndim, us->ndim);
      return rc;
    }
    /* A given size overrides any dimension, as in TVM: a model exported
     * at batch 1 runs at batch 8.  Where the graph's own constants
     * cannot take the new size (a Reshape to a fixed shape), the node
     * that refuses it fails, and import_nodes says which override it
     * was. */
    for (int d = 0; d < us->ndim && ty->ndim >= 0; d++)
      if (ty->dims[d].kind == ONNX_DIM_VALUE && (us->sym[d] || ty->dims[d].value != us->shape[d]))
        sb_printf(&im->overrides, "%sinput '%s' dimension %d from %lld to %s", im->overrides.len ? ", " : "", name,
                  d, (long long)ty->dims[d].value, us->sym[d] ? us->sym[d] : kfmt("%lld", (long long)us->shape[d]));
    t.ndim = us->ndim;
    SymDims *sd = NULL;
    for (int d = 0; d < us->ndim; d++) {
      t.shape[d] = us->shape[d];
      if (!us->sym[d]) continue;
      GSym *gs = graph_sym_find(im->g, us->sym[d]);
      if (!sd) {
        kiln_arena_push(im->g->arena);
        sd = KNEW(SymDims);
        kiln_arena_pop();
      }
      sd->dim[d] = gs->var;
      t.shape[d] = gs->rep;
    }
    t.sym = sd;
  } else {
    if (ty->ndim < 0) {
      rc = kiln_set_error("input '%s' has an unknown rank; give its shape with --input-shapes \"%s:[...]\"", name,
                          name);
      return rc;
    }
    if (ty->ndim > GRAPH_MAX_DIMS) {
      rc = kiln_set_error("input '%s' has %d dimensions (at most %d)", name, ty->ndim, GRAPH_MAX_DIMS);
      return rc;
    }
    t.ndim = ty->ndim;
    for (int d = 0; d < t.ndim && !rc; d++) {
      const OnnxDim *dim = &ty->dims[d];
      if (dim->kind == ONNX_DIM_VALUE)
        t.shape[d] = dim->value;
      else
        rc = kiln_set_error("input '%s' has a dynamic dimension %d%s%s%s; bind it with --input-shapes \"%s:[...]\"",
                            name, d, dim->kind == ONNX_DIM_PARAM ? " ('" : "",
                            dim->kind == ONNX_DIM_PARAM ? dim->param : "", dim->kind == ONNX_DIM_PARAM ? "')" : "",
                            name);
    }
    if (rc) return rc;
  }
  if ((rc = ttype_check(&t, kfmt("input '%s'", name)))) return rc;
  GNode *v = graph_var(im->g, name, t);
  pm_put(&im->values, kstrdup(name), v);
  return 0;
}

/* The shape given for name, or NULL. */
static const InputShape *given_shape(int nshapes, const InputShape *shapes, const char *name) {
  for (int k = 0; k < nshapes; k++)
    if (!shapes[k].bound && !strcmp(shapes[k].name, name)) return &shapes[k];
  return NULL;
}

/* A sequence input of us->count elements, the graph inputs NAME[i]. */
static ImpSeq *seq_input(Importer *im, const char *name, const OnnxType *ty, int nshapes, const InputShape *shapes) {
  const InputShape *us = given_shape(nshapes, shapes, name);
  if (!us || us->structure != IS_SEQ)
    return kiln_set_error("input '%s' is a sequence: give its length with --input-shapes \"%s:seq(N)\" (its elements "
                          "are then the inputs %s[0] .. %s[N-1]; where the model leaves their shapes open, give each "
                          "with \"%s[i]:[...]\")",
                          name, name, name, name, name),
           NULL;
  const OnnxType *et = ty->elem;
  if (!et || et->kind != ONNX_TYPE_TENSOR)
    return kiln_set_error("input '%s': only sequences of tensors are supported", name), NULL;
  ImpSeq *q = KNEW(ImpSeq);
  q->n = (int)us->count;
  q->items = KNEWN(GNode *, q->n + 1);
  for (int i = 0; i < q->n; i++) {
    const char *en = kfmt("%s[%d]", name, i);
    if (tensor_input(im, en, et, given_shape(nshapes, shapes, en))) return NULL;
    q->items[i] = pm_get(&im->values, en);
  }
  DType dt = DT_F32;
  if (!onnx_dtype_carrier(et->elem_type, &dt) && et->elem_type != ONNX_DT_STRING && onnx_dtype_from_onnx(et->elem_type, &dt))
    return kiln_error_context("input '%s'", name), NULL;
  if (et->elem_type == ONNX_DT_STRING) dt = DT_STRING;
  q->dtype = q->n ? q->items[0]->type.dtype : dt;
  return q;
}

/* A sequence or optional input: its elements become graph inputs, its
 * structure (given by --input-shapes) a line of the graph's boundary. */
static int structured_input(Importer *im, const OnnxValueInfo *vi, int nshapes, const InputShape *shapes) {
  const InputShape *us = given_shape(nshapes, shapes, vi->name);
  if (vi->type.kind == ONNX_TYPE_SEQUENCE) {
    ImpSeq *q = seq_input(im, vi->name, &vi->type, nshapes, shapes);
    if (!q) return -1;
    pm_put(&im->seqs, kstrdup(vi->name), q);
    graph_add_boundary(im->g, kfmt("in seq(%d) %s", q->n, vi->name));
    return 0;
  }
  if (vi->type.kind != ONNX_TYPE_OPTIONAL || !vi->type.elem)
    return kiln_set_error("input '%s' is a map or has no type: only tensors, sequences of tensors and optionals are "
                          "supported",
                          vi->name);
  ImpOpt *o = KNEW(ImpOpt);
  const OnnxType *et = vi->type.elem;
  if (us && us->structure == IS_NONE) {
    graph_add_boundary(im->g, kfmt("in opt(none) %s", vi->name));
  } else if (et->kind == ONNX_TYPE_SEQUENCE) {
    if (!(o->s = seq_input(im, vi->name, et, nshapes, shapes)))
      return kiln_set_error("%s (or \"%s:none\" for an empty optional)", kiln_get_error(), vi->name);
    graph_add_boundary(im->g, kfmt("in opt(seq(%d)) %s", o->s->n, vi->name));
  } else if (et->kind == ONNX_TYPE_TENSOR) {
    if (us && us->structure == IS_SEQ)
      return kiln_set_error("input '%s' is an optional tensor, not a sequence: give its shape (\"%s:[...]\") or "
                            "\"%s:none\" for an empty optional",
                            vi->name, vi->name, vi->name);
    if (tensor_input(im, vi->name, et, us)) return -1;
    o->t = pm_get(&im->values, vi->name);
    pm_put(&im->values, kstrdup(vi->name), NULL);
    graph_add_boundary(im->g, kfmt("in opt(tensor) %s", vi->name));
  } else {
    return kiln_set_error("input '%s': only optional tensors and optional sequences are supported", vi->name);
  }
  pm_put(&im->opts, kstrdup(vi->name), o);
  return 0;
}

/* Whether name is "B[i]", an element of the sequence or optional input B
 * (an input of the model whose i-th element the structure check bounds). */
static bool names_element(Importer *im, const OnnxGraph *og, const char *name) {
  const char *br = strrchr(name, '[');
  size_t len = strlen(name);
  if (!br || len < 3 || name[len - 1] != ']' || br + 1 == name + len - 1) return false;
  for (const char *c = br + 1; c < name + len - 1; c++)
    if (!isdigit((unsigned char)*c)) return false;
  for (int i = 0; i < og->ninputs; i++)
    if (og->inputs[i].type.kind != ONNX_TYPE_TENSOR && strlen(og->inputs[i].name) == (size_t)(br - name) &&
        !strncmp(og->inputs[i].name, name, (size_t)(br - name)) && !pm_has(&im->initializers, og->inputs[i].name))
      return true;
  return false;
}

static int bind_inputs(Importer *im, const OnnxGraph *og, int nshapes, const InputShape *shapes) {
  int rc = 0;
  /* every given shape must name a graph input (checked first: a typo
   * should not surface as a missing binding of the real input) */
  /* the symbols, in order of appearance, then their bounds */
  for (int k = 0; k < nshapes && !rc; k++)
    for (int d = 0; d < shapes[k].ndim && !shapes[k].bound && !rc; d++)
      if (shapes[k].sym[d] && !graph_sym(im->g, shapes[k].sym[d], 1, GRAPH_MAX_ELEMS))
        rc = kiln_error_context("input shape for '%s'", shapes[k].name);
  for (int k = 0; k < nshapes && !rc; k++)
    if (shapes[k].bound) rc = graph_sym_bound(im->g, shapes[k].name, shapes[k].lo, shapes[k].hi);
  for (int k = 0; k < nshapes && !rc; k++) {
    if (shapes[k].bound) continue;
    bool found = false;
    for (int i = 0; i < og->ninputs; i++)
      found |= !strcmp(og->inputs[i].name, shapes[k].name) && !pm_has(&im->initializers, og->inputs[i].name);
    if (found || names_element(im, og, shapes[k].name)) continue;
    StrBuf sb = {0};
    for (int i = 0; i < og->ninputs; i++)
      if (!pm_has(&im->initializers, og->inputs[i].name)) sb_printf(&sb, "%s%s", sb.len ? ", " : "", og->inputs[i].name);
    rc = kiln_set_error("input shape given for '%s', which is not an input of the model (inputs: %s)", shapes[k].name,
                        sb.data ? sb.data : "none");
    sb_free(&sb);
  }
  for (int i = 0; i < og->ninputs && !rc; i++) {
    const OnnxValueInfo *vi = &og->inputs[i];
    if (pm_has(&im->initializers, vi->name)) continue; /* older exporters list weights as inputs */
    const InputShape *us = given_shape(nshapes, shapes, vi->name);
    if (vi->type.kind != ONNX_TYPE_TENSOR) {
      rc = structured_input(im, vi, nshapes, shapes);
      continue;
    }
    if (us && us->structure != IS_SHAPE) {
      rc = kiln_set_error("input '%s' is a tensor: give its shape as \"%s:[...]\" (seq(N) and none are for sequence "
                          "and optional inputs)",
                          vi->name, vi->name);
      break;
    }
    rc = tensor_input(im, vi->name, &vi->type, us);
    /* a bound input is a constant of the build, not an input of the module */
    bool bound = false;
    for (int k = 0; k < im->nbound; k++) bound |= !strcmp(im->bound[k].name, vi->name);
    if (!rc && !bound) graph_add_boundary(im->g, kfmt("in tensor %s", vi->name));
  }
  for (int k = 0; k < im->nbound && !rc; k++) {
    bool found = false;
    for (int i = 0; i < og->ninputs; i++)
      if (!strcmp(og->inputs[i].name, im->bound[k].name) && !pm_has(&im->initializers, og->inputs[i].name)) found = true;
    if (!found) rc = kiln_set_error("a value is bound to '%s', which is not an input of the model", im->bound[k].name);
  }
  /* an element shape past the sequence's end is a mistake, not ignored */
  for (int k = 0; k < nshapes && !rc; k++) {
    if (shapes[k].bound || !names_element(im, og, shapes[k].name) || pm_has(&im->values, shapes[k].name)) continue;
    rc = kiln_set_error("input shape given for '%s', but that input has no such element (its length is given with "
                        "--input-shapes \"NAME:seq(N)\"; elements count from 0)",
                        shapes[k].name);
  }
  return rc;
}

/* The table's row for node n at the node's version (onnx_version_resolve
 * finds it from the domain's opset; *version is set to it), or NULL + an
 * error naming the op, its domain and the node, or the op's version and
 * the versions Kiln has. */
static const OnnxOpEntry *find_op(Importer *im, const OnnxNode *n, int *version) {
  bool dflt = !*n->domain || !strcmp(n->domain, "ai.onnx");
  int64_t opset = dflt ? im->opset : onnx_model_opset(im->model, n->domain);
  const OnnxOpEntry *rows;
  int nrows = onnx_find_op_rows(n->domain, n->op_type, &rows);
  if (!nrows) {
    if (!dflt)
      kiln_set_error("unsupported operator '%s' of domain '%s' (node '%s')", n->op_type, n->domain, n->name);
    else
      kiln_set_error("unsupported ONNX operator '%s' (node '%s', opset %lld)", n->op_type, n->name, (long long)im->opset);
    return NULL;
  }
  int since[16], until[16];
  if (nrows > 16) nrows = 16;
  for (int i = 0; i < nrows; i++) since[i] = rows[i].since, until[i] = rows[i].until;
  int r = onnx_version_resolve(n->domain, n->op_type, opset < 1 ? 1 : opset, nrows, since, until, version);
  if (r < 0) {
    kiln_error_context("node '%s'", n->name);
    return NULL;
  }
  return &rows[r];
}

/* The node's inputs against the row: their number, and an empty name
 * only where the op's input is optional. */
static int check_arity(Importer *im, const OnnxOpEntry *e) {
  const OnnxNode *n = im->node;
  int lo = e->min_inputs, hi = e->max_inputs;
  if (n->ninputs < lo || (hi != ONNX_VARIADIC && n->ninputs > hi)) {
    const char *range = hi == ONNX_VARIADIC ? kfmt("at least %d", lo) : lo == hi ? kfmt("%d", lo) : kfmt("%d to %d", lo, hi);
    return imp_error(im, "has %d input%s, but %s takes %s at this opset: fix the model (onnx.checker.check_model "
                         "reports it too)",
                     n->ninputs, n->ninputs == 1 ? "" : "s", n->op_type, range);
  }
  for (int i = 0; i < n->ninputs; i++)
    if (!*n->inputs[i] && !(e->optional & (1u << (i < 31 ? i : 31))))
      return imp_error(im, "input %d is required, but the node gives it as '' (omitted)", i);
  return 0;
}

/* The node's attributes against its version's (onnx_attr_check.c). */
static int check_attrs(Importer *im, int version) {
  const OnnxNode *n = im->node;
  const OnnxOwnAttrs *own = onnx_own_attrs(n->domain, n->op_type);
  if (onnx_check_attrs(n, onnx_schema_find(n->domain, n->op_type), version, own ? own->attrs : NULL, own && own->open))
    return imp_error(im, "%s", kiln_get_error());
  return 0;
}

/* The node loop: each node's handler, with checks of its inputs and
 * attributes against its version, that its inputs exist, and that its
 * outputs were made with a supported data type. */
static int import_nodes(Importer *im, const OnnxGraph *og) {
  int rc = 0;
  const OnnxNode *parent = im->node;
  for (int i = 0; i < og->nnodes && !rc; i++) {
    const OnnxNode *n = &og->nodes[i];
    im->node = n;
    int version = 0;
    const OnnxOpEntry *e = find_op(im, n, &version);
    if (!e) {
      rc = -1;
      break;
    }
    if ((rc = check_arity(im, e)) || (rc = check_attrs(im, version))) break;
    for (int k = 0; k < n->ninputs && !rc; k++)
      if (*n->inputs[k] && !lookup(im, n->inputs[k]) && !pm_get(&im->seqs, n->inputs[k]) && !pm_get(&im->opts, n->inputs[k]))
        rc = pm_has(&im->initializers, n->inputs[k])
                 ? kiln_error_context("%s node '%s'", n->op_type, n->name)
                 : kiln_set_error("%s node '%s': input '%s' is not produced by any earlier node, initializer or graph input",
                                  n->op_type, n->name, n->inputs[k]);
    for (int k = 0; k < n->ninputs && !rc && !onnx_op_takes_strings(n->op_type); k++) {
      GNode *v = *n->inputs[k] ? lookup(im, n->inputs[k]) : NULL;
      if (v && dt_is_string(v->type.dtype))
        rc = imp_error(im, "input %d ('%s') is a string tensor: Kiln's string operators are StringConcat, "
                           "StringNormalizer, RegexFullMatch, Equal, Cast, CastLike and LabelEncoder", k, n->inputs[k]);
    }
    bool widen;
    if (rc || (rc = check_lowp_inputs(im, &widen))) break;
    GNode **saved = widen ? lowp_widen(im) : NULL;
    if (widen && !saved) {
      rc = -1;
      break;
    }
    rc = e->fn(im);
    if (widen) {
      lowp_restore(im, saved);
      if (!rc) rc = lowp_narrow(im);
    }
    if (rc && !parent && im->overrides.len) {
      char *msg = kstrdup(kiln_get_error());
      rc = kiln_set_error("%s (--input-shapes changed %s, which the model declares otherwise, and this node's own "
                          "constants cannot take the new shape: give the model's size there, or export the model "
                          "with that dimension open)",
                          msg, im->overrides.data);
    }
    if (!rc && !strcmp(n->op_type, "Identity") && n->noutputs) imp_set_output_lowp(im, 0, imp_input_lowp(im, 0));
    if (!rc && !strcmp(n->op_type, "Constant") && n->noutputs) { /* a Constant holding a carried type */
      const OnnxAttr *va = onnx_attr_find(n, "value");
      DType dt;
      if (va && va->type == ONNX_ATTR_TENSOR && onnx_dtype_carrier(va->t->elem_type, &dt))
        imp_set_output_lowp(im, 0, va->t->elem_type);
    }
    for (int k = 0; k < n->noutputs && !rc; k++) {
      GNode *o = *n->outputs[k] ? pm_get(&im->values, n->outputs[k]) : NULL;
      if (*n->outputs[k] && !o && !pm_get(&im->seqs, n->outputs[k]) && !pm_get(&im->opts, n->outputs[k]))
        rc = imp_error(im, "output %d ('%s') is not supported by Kiln", k, n->outputs[k]);
      else if (o && check_dtype(o->type.dtype, kfmt("output %d ('%s')", k, n->outputs[k])))
        rc = imp_error(im, "%s", kiln_get_error());
    }
  }
  im->node = parent;
  return rc;
}

int imp_subgraph(Importer *im, const OnnxGraph *g) {
  for (int i = 0; i < g->ninitializers; i++) {
    pm_put(&im->initializers, g->initializers[i].name, (void *)&g->initializers[i]);
    /* a re-imported body (an unrolled loop) must see its own initializer */
    if (pm_has(&im->values, g->initializers[i].name)) pm_put(&im->values, kstrdup(g->initializers[i].name), NULL);
  }
  if (g->nsparse_initializers) return imp_error(im, "sparse initializers in a subgraph are not supported");
  return import_nodes(im, g);
}

GNode *imp_value(Importer *im, const char *name) { return lookup(im, name); }

/* The names og (and the graphs in its nodes' attributes) reads from
 * outside: neither its inputs, its initializers nor an earlier node's
 * outputs; each once, in order of first use. */
static void free_names(const OnnxGraph *og, PtrMap *defined, AVec *out) {
  for (int i = 0; i < og->ninputs; i++) pm_put(defined, og->inputs[i].name, (void *)1);
  for (int i = 0; i < og->ninitializers; i++) pm_put(defined, og->initializers[i].name, (void *)1);
  for (int i = 0; i < og->nnodes; i++) {
    const OnnxNode *n = &og->nodes[i];
    for (int k = 0; k < n->ninputs; k++)
      if (*n->inputs[k] && !pm_has(defined, n->inputs[k])) {
        pm_put(defined, n->inputs[k], (void *)1);
        av_push(out, (void *)n->inputs[k]);
      }
    for (int a = 0; a < n->nattrs; a++) {
      const OnnxAttr *at = &n->attrs[a];
      if (at->type == ONNX_ATTR_GRAPH && at->g) free_names(at->g, defined, out);
      for (int j = 0; at->type == ONNX_ATTR_GRAPHS && j < at->n; j++) free_names(at->graphs[j], defined, out);
    }
    for (int k = 0; k < n->noutputs; k++)
      if (*n->outputs[k]) pm_put(defined, n->outputs[k], (void *)1);
  }
  for (int i = 0; i < og->noutputs; i++)
    if (!pm_has(defined, og->outputs[i].name)) {
      pm_put(defined, og->outputs[i].name, (void *)1);
      av_push(out, (void *)og->outputs[i].name);
    }
}

Graph *imp_body_graph(Importer *im, const OnnxGraph *og, const TType *in_types, AVec *outer, AVec *outer_names) {
  Graph *outer_g = im->g, *bg = graph_new();
  bg->sym_pass = outer_g->sym_pass;
  PtrMap outer_values = im->values, defined = {0};
  pm_init_str(&defined);
  AVec names = {0};
  free_names(og, &defined, &names);
  pm_free(&defined);
  /* the body's own names, then the outer values it reads: constants are
   * copied in, the rest become inputs of the body */
  pm_init_str(&im->values);
  im->g = bg;
  int rc = 0;
  for (int i = 0; i < og->ninputs && !rc; i++) {
    TType t = sym_copy_type(bg, outer_g, &in_types[i]);
    GNode *v = graph_var(bg, og->inputs[i].name, t);
    if (!v) rc = -1;
    else pm_put(&im->values, kstrdup(og->inputs[i].name), v);
  }
  for (int i = 0; i < names.len && !rc; i++) {
    const char *name = names.data[i];
    PtrMap body_values = im->values; /* an outer lookup may add the constant it made */
    im->g = outer_g;
    im->values = outer_values;
    GNode *v = lookup(im, name);
    outer_values = im->values;
    im->values = body_values;
    im->g = bg;
    if (!v) {
      if (pm_has(&im->seqs, name))
        rc = kiln_set_error("the body reads the sequence '%s' from outside: a loop run at run time takes tensors only",
                            name);
      continue; /* not produced anywhere: import_nodes says so */
    }
    GNode *b;
    if (v->kind == GN_CONST) {
      DLTensor *a;
      DLDevice cpu = {kDLCPU, 0};
      if (kiln_array_empty(v->value->ndim, v->value->shape, v->value->dtype, cpu, &a) || kiln_array_copy(v->value, a))
        rc = -1;
      b = rc ? NULL : graph_const(bg, name, a);
    } else {
      b = graph_var(bg, name, sym_copy_type(bg, outer_g, &v->type));
      av_push(outer, v);
      av_push(outer_names, (void *)name);
    }
    if (!b) rc = -1;
    else pm_put(&im->values, kstrdup(name), b);
  }
  if (!rc) rc = imp_subgraph(im, og);
  for (int i = 0; i < og->noutputs && !rc; i++) {
    GNode *v = pm_get(&im->values, og->outputs[i].name);
    if (!v && pm_has(&im->seqs, og->outputs[i].name))
      rc = kiln_set_error("body output %d ('%s') is a sequence: a loop run at run time gives tensors only", i,
                          og->outputs[i].name);
    else if (!v)
      rc = kiln_set_error("body output %d ('%s') is not produced", i, og->outputs[i].name);
    else if (!(rc = symval_refuse_output(im, og->outputs[i].name, v)))
      graph_add_named_output(bg, v, og->outputs[i].name);
  }
  pm_free(&im->values);
  im->values = outer_values;
  im->g = outer_g;
  if (rc) {
    graph_free(bg);
    return NULL;
  }
  return bg;
}

void imp_bind_value(Importer *im, const char *name, GNode *v) { pm_put(&im->values, kstrdup(name), v); }

Graph *onnx_import(const OnnxModel *m, int nshapes, const InputShape *shapes) {
  return onnx_import_bound(m, nshapes, shapes, 0, NULL);
}

static Graph *import_pass(const OnnxModel *m, int nshapes, const InputShape *shapes, int nvalues,
                          const InputValue *values, int pass);

/* The second import of a symbolic model, at other representative sizes:
 * each output's expressions evaluated at them must give that import's
 * shapes, else a constant of the model (a shape the exporter computed, a
 * folded Shape) depends on a size. */
static int check_second_pass(const Graph *g, const Graph *g2) {
  int64_t *vals = KNEWN(int64_t, g->syms.len + 1);
  StrBuf at = {0};
  for (int i = 0; i < g->syms.len; i++) {
    const GSym *s = g->syms.data[i], *s2 = graph_sym_find(g2, s->name);
    vals[i] = s2 ? s2->rep : s->rep;
    sb_printf(&at, "%s%s=%lld", i ? ", " : "", s->name, (long long)vals[i]);
  }
  int rc = 0;
  for (int i = 0; i < g->outputs.len && i < g2->outputs.len && !rc; i++) {
    const TType *t = &((GNode *)g->outputs.data[i])->type, *t2 = &((GNode *)g2->outputs.data[i])->type;
    bool ok = t->ndim == t2->ndim;
    for (int d = 0; ok && d < t->ndim; d++) {
      int64_t v = t->shape[d];
      if (t->sym && t->sym->dim[d] && !sym_eval(g, t->sym->dim[d], vals, &v)) ok = false;
      ok = ok && v == t2->shape[d];
    }
    if (!ok) {
      const char *name = graph_output_name(g, i);
      rc = kiln_set_error("output %d ('%s') is %s, but at %s the model gives %s: a constant of the model depends on "
                          "a size (a shape the exporter computed); give the sizes as numbers in --input-shapes",
                          i, name ? name : "", ttype_str(t), at.data, ttype_str(t2));
    }
  }
  if (!rc && g->outputs.len != g2->outputs.len) rc = kiln_set_error("the model's outputs change with the sizes");
  sb_free(&at);
  return rc;
}

Graph *onnx_import_bound(const OnnxModel *m, int nshapes, const InputShape *shapes, int nvalues,
                         const InputValue *values) {
  Graph *g = import_pass(m, nshapes, shapes, nvalues, values, 0);
  if (!g || !g->syms.len) return g;
  Graph *g2 = import_pass(m, nshapes, shapes, nvalues, values, 1);
  int rc = g2 ? check_second_pass(g, g2) : kiln_error_context("at other sizes of its symbols");
  graph_free(g2);
  if (rc) {
    graph_free(g);
    return NULL;
  }
  return g;
}

/* Graph output vi: a tensor, or a sequence or optional whose elements
 * become the graph outputs NAME[i] (an optional tensor: NAME), its
 * structure a line of the graph's boundary (docs/sequences.md). */
static int add_output(Importer *im, const OnnxValueInfo *vi) {
  const char *name = vi->name;
  GNode *v = lookup(im, name);
  ImpSeq *q = v ? NULL : pm_get(&im->seqs, name);
  ImpOpt *o = v || q ? NULL : pm_get(&im->opts, name);
  if (!v && !q && !o) return kiln_set_error("graph output '%s' is not produced by any node", name);
  bool opt = vi->type.kind == ONNX_TYPE_OPTIONAL || o;
  if (o) v = o->t, q = o->s;
  const char *what;
  if (opt && !v && !q) what = "opt(none)";
  else if (v) what = opt ? "opt(tensor)" : "tensor";
  else what = kfmt(opt ? "opt(seq(%d))" : "seq(%d)", q->n);
  if (v && symval_refuse_output(im, name, v)) return -1;
  for (int k = 0; q && k < q->n; k++)
    if (symval_refuse_output(im, kfmt("%s[%d]", name, k), q->items[k])) return -1;
  if (v) graph_add_named_output(im->g, v, name);
  for (int k = 0; q && k < q->n; k++) graph_add_named_output(im->g, q->items[k], kfmt("%s[%d]", name, k));
  graph_add_boundary(im->g, kfmt("out %s %s", what, name));
  return 0;
}

static Graph *import_pass(const OnnxModel *m, int nshapes, const InputShape *shapes, int nvalues,
                          const InputValue *values, int pass) {
  const OnnxGraph *og = m->graph;
  int64_t opset = onnx_model_opset(m, "");
  if (opset < 0) opset = 1;
  if (opset > onnx_schema_newest_opset(""))
    return kiln_set_error("%s: ONNX opset %lld is not supported (Kiln supports opsets 1 to %d, those of onnx %s)", m->path,
                          (long long)opset, onnx_schema_newest_opset(""), onnx_schema_onnx_version),
           NULL;
  Importer im;
  memset(&im, 0, sizeof im);
  im.model = m;
  im.opset = opset;
  im.nbound = nvalues;
  im.bound = values;
  im.g = graph_new();
  im.g->sym_pass = pass;
  pm_init_str(&im.values);
  pm_init_str(&im.initializers);
  pm_init_str(&im.seqs);
  pm_init_str(&im.opts);
  pm_init_str(&im.lowp);
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  int rc = 0;
  for (int i = 0; i < og->ninitializers; i++) pm_put(&im.initializers, og->initializers[i].name, (void *)&og->initializers[i]);
  if (og->nsparse_initializers) rc = kiln_set_error("%s: sparse initializers are not supported", m->path);
  if (!rc) rc = bind_inputs(&im, og, nshapes, shapes);
  if (!rc) rc = import_nodes(&im, og);
  for (int i = 0; i < og->noutputs && !rc; i++) rc = add_output(&im, &og->outputs[i]);
  if (!rc && og->noutputs == 0) rc = kiln_set_error("%s: the graph has no outputs", m->path);
  if (!rc && im.g->outputs.len == 0)
    rc = kiln_set_error("%s: every output is an empty sequence or optional: there is nothing to compute", m->path);
  kiln_arena_pop();
  kiln_arena_free(scratch);
  pm_free(&im.values);
  pm_free(&im.initializers);
  pm_free(&im.seqs);
  pm_free(&im.opts);
  sb_free(&im.overrides);
  pm_free(&im.lowp);
  pm_free(&im.shapevals);
  if (rc) {
    graph_free(im.g);
    return NULL;
  }
  /* drop what the outputs do not use (folded shape arithmetic) */
  Graph *g = pass_dce(im.g, NULL);
  graph_free(im.g);
  return g;
}

Graph *kiln_import_onnx(const char *path, const char *input_shapes) {
  return kiln_import_onnx_bound(path, input_shapes, 0, NULL);
}

Graph *kiln_import_onnx_bound(const char *path, const char *input_shapes, int nvalues, const InputValue *values) {
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  InputShape *shapes = NULL;
  int n = parse_input_shapes(input_shapes, &shapes);
  Graph *g = NULL;
  if (n >= 0) {
    OnnxModel *m = onnx_model_load(path);
    if (m) {
      g = onnx_import_bound(m, n, shapes, nvalues, values);
      onnx_model_free(m);
    }
  }
  kiln_arena_pop();
  kiln_arena_free(scratch);
  return g;
}
