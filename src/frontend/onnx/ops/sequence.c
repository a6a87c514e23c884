/*
 * sequence.c - ONNX's sequence operators.  Sequences exist only at
 * compile time, as lists of graph values (ImpSeq) held by the importer;
 * SequenceAt, ConcatFromSequence and SequenceLength turn them back into
 * tensors.  Positions must be constants.
 */
#include "ops.h"

/* ---- sequences, as compile-time lists (ImpSeq) ---- */

static ImpSeq *seq_new(int n, DType t) {
  ImpSeq *q = KNEW(ImpSeq);
  q->n = n;
  q->items = KNEWN(GNode *, n + 1);
  q->dtype = t;
  return q;
}

/* A position input (constant scalar), default dflt, wrapped and checked
 * against [0, hi]. */
static int seq_pos(Importer *im, int i, int64_t dflt, int n, int64_t hi, int64_t *out) {
  int64_t p = dflt;
  if (imp_input(im, i) && imp_input_i64(im, i, -(int64_t)n, hi, &p)) return -1;
  if (p < 0) p += n;
  if (p < 0 || p > hi) return imp_error(im, "position %lld is out of range for a sequence of %d", (long long)p, n);
  *out = p;
  return 0;
}

int onnx_h_SequenceEmpty(Importer *im) {
  DType t = DT_F32;
  if (onnx_attr_has(N(im), "dtype") && imp_attr_dtype(im, "dtype", 1, &t)) return -1;
  return imp_set_output_seq(im, 0, seq_new(0, t));
}

int onnx_h_SequenceConstruct(Importer *im) {
  int n = imp_ninputs(im);
  if (n < 1) return imp_error(im, "needs at least one input");
  ImpSeq *q = seq_new(n, DT_F32);
  for (int i = 0; i < n; i++) {
    if (!(q->items[i] = imp_input(im, i))) return imp_error(im, "input %d is not a tensor", i);
    if (!dt_eq(q->items[i]->type.dtype, q->items[0]->type.dtype)) return imp_error(im, "inputs have different types");
  }
  q->dtype = q->items[0]->type.dtype;
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceInsert(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  GNode *x = imp_input(im, 1);
  if (!s) return -1;
  if (!x) return imp_error(im, "input 1 must be a tensor");
  if (s->n && !dt_eq(x->type.dtype, s->dtype)) return imp_error(im, "a %s tensor inserted into a %s sequence", dt_str(x->type.dtype), dt_str(s->dtype));
  int64_t p = 0;
  if (seq_pos(im, 2, s->n, s->n, s->n, &p)) return -1;
  ImpSeq *q = seq_new(s->n + 1, x->type.dtype);
  for (int i = 0, j = 0; i < q->n; i++) q->items[i] = i == p ? x : s->items[j++];
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceErase(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  if (s->n == 0) return imp_error(im, "erasing from an empty sequence");
  int64_t p = 0;
  if (seq_pos(im, 1, -1, s->n, s->n - 1, &p)) return -1;
  ImpSeq *q = seq_new(s->n - 1, s->dtype);
  for (int i = 0, j = 0; i < s->n; i++)
    if (i != p) q->items[j++] = s->items[i];
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceAt(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  int64_t p = 0;
  if (!imp_input(im, 1)) return imp_error(im, "needs a position");
  if (s->n == 0 || seq_pos(im, 1, 0, s->n, s->n - 1, &p)) return s->n ? -1 : imp_error(im, "the sequence is empty");
  return imp_set_output(im, 0, s->items[p]);
}

int onnx_h_SequenceLength(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  return imp_set_output(im, 0, imp_scalar(im, s->n, DT_I64));
}

int onnx_h_SplitToSequence(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "needs an input");
  int r = x->type.ndim, ax;
  if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", 0), r, &ax)) return -1;
  int64_t dim = x->type.shape[ax], sizes[4096];
  int n = 0;
  bool squeeze = false;
  GNode *rsz = imp_input(im, 1);
  if (rsz && rsz->kind == GN_VAR && rsz->type.ndim == 1 && !ttype_is_symbolic(&rsz->type)) {
    /* sizes given at run time: their count is the input's length */
    ImpSeq *q = seq_new((int)rsz->type.shape[0], x->type.dtype);
    int rc = onnx_split_runtime_parts(im, x, rsz, ax, q->items);
    if (rc != -2) return rc ? rc : imp_set_output_seq(im, 0, q);
  }
  if (imp_input(im, 1)) {
    GNode *sp = imp_const_input(im, 1);
    if (!sp) return -1;
    if (sp->type.ndim == 0) {
      int64_t c;
      if (imp_const_i64_at(im, 1, sp, 0, 1, IMP_MAX_COUNT, &c)) return -1;
      if ((dim + c - 1) / c > 4096)
        return imp_error(im, "split %lld cuts the axis of %lld into more than 4096 parts (not supported)", (long long)c,
                         (long long)dim);
      for (int64_t b = 0; b < dim; b += c) sizes[n++] = b + c <= dim ? c : dim - b;
    } else {
      n = (int)ttype_numel(&sp->type);
      if (n > 4096) return imp_error(im, "more than 4096 parts are not supported");
      int64_t sum = 0;
      for (int i = 0; i < n; i++) {
        if (imp_const_i64_at(im, 1, sp, i, 0, dim, &sizes[i])) return -1;
        sum += sizes[i];
      }
      if (sum != dim) return imp_error(im, "split sizes sum to %lld, the axis has %lld", (long long)sum, (long long)dim);
    }
  } else {
    if (dim > 4096) return imp_error(im, "more than 4096 parts are not supported");
    for (int64_t i = 0; i < dim; i++) sizes[n++] = 1;
    squeeze = onnx_attr_int(N(im), "keepdims", 1) == 0;
  }
  ImpSeq *q = seq_new(n, x->type.dtype);
  int64_t b = 0;
  for (int i = 0; i < n; i++) {
    GNode *part = imp_slice(im, x, ax, b, b + sizes[i]);
    q->items[i] = squeeze ? imp_squeeze(im, part, ax) : part;
    if (!q->items[i]) return -1;
    b += sizes[i];
  }
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_ConcatFromSequence(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  if (s->n == 0) return imp_error(im, "concatenating an empty sequence");
  bool newax = onnx_attr_int(N(im), "new_axis", 0) != 0;
  int r = s->items[0]->type.ndim + (newax ? 1 : 0), ax;
  if (imp_norm_axis(im, onnx_attr_int(N(im), "axis", 0), r, &ax)) return -1;
  GNode **parts = KNEWN(GNode *, s->n + 1);
  for (int i = 0; i < s->n; i++)
    if (!(parts[i] = newax ? imp_expand_dims(im, s->items[i], ax) : s->items[i])) return -1;
  GAttrs a = gattrs_new();
  ga_int(&a, "axis", ax);
  return imp_set_output(im, 0, imp_call(im, "concatenate", s->n, parts, a));
}

/* ---- optionals, as compile-time values (ImpOpt): the Optional op, graph
 * inputs given empty or holding a value (docs/sequences.md).  Opset 18
 * lets OptionalHasElement/OptionalGetElement take a plain tensor or
 * sequence, which is always present; a missing input is an empty
 * optional. ---- */

int onnx_h_Optional(Importer *im) {
  ImpOpt *o = KNEW(ImpOpt);
  if (imp_ninputs(im) > 0 && *N(im)->inputs[0]) {
    o->t = imp_input(im, 0);
    o->s = o->t ? NULL : imp_value_seq(im, N(im)->inputs[0]);
    if (!o->t && !o->s) return imp_error(im, "input 0 must be a tensor or a sequence");
  } else if (!onnx_attr_has(N(im), "type")) {
    return imp_error(im, "an empty Optional needs its 'type' attribute");
  }
  return imp_set_output_opt(im, 0, o);
}

int onnx_h_OptionalHasElement(Importer *im) {
  bool present = imp_ninputs(im) > 0 && *N(im)->inputs[0];
  ImpOpt *o = imp_input_opt(im, 0);
  if (o) present = o->t || o->s;
  else if (present && !imp_input(im, 0) && !imp_value_seq(im, N(im)->inputs[0]))
    return imp_error(im, "input 0 must be an optional, a tensor or a sequence");
  void *p;
  GNode *c = imp_new_const(im, DT_BOOL, 0, NULL, &p);
  if (!c) return -1;
  *(uint8_t *)p = present;
  return out0(im, c);
}

int onnx_h_OptionalGetElement(Importer *im) {
  ImpOpt *o = imp_input_opt(im, 0);
  if (o) {
    if (!o->t && !o->s)
      return imp_error(im, "the optional '%s' is empty (compiled so: its structure is known at compile time)", N(im)->inputs[0]);
    return o->t ? out0(im, o->t) : imp_set_output_seq(im, 0, o->s);
  }
  ImpSeq *q = imp_ninputs(im) > 0 && *N(im)->inputs[0] ? imp_value_seq(im, N(im)->inputs[0]) : NULL;
  if (q) return imp_set_output_seq(im, 0, q);
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "input 0 must be an optional, a tensor or a sequence");
  return out0(im, x);
}

/* Identity passes a sequence or an optional through as itself. */
int onnx_h_Identity(Importer *im) {
  const char *in = imp_ninputs(im) > 0 ? N(im)->inputs[0] : "";
  ImpOpt *o = imp_input_opt(im, 0);
  if (o) return imp_set_output_opt(im, 0, o);
  ImpSeq *q = *in && !imp_input(im, 0) ? imp_value_seq(im, in) : NULL;
  if (q) return imp_set_output_seq(im, 0, q);
  return onnx_h_unary(im);
}

/* ---- SequenceMap: the body imported once per position, its formal
 * inputs bound to element i of each sequence input and to each tensor
 * input as is; body output k collects into output sequence k. ---- */

int onnx_h_SequenceMap(Importer *im) {
  const OnnxGraph *body = onnx_attr_graph(N(im), "body");
  if (!body) return imp_error(im, "missing attribute 'body'");
  int nin = imp_ninputs(im), nout = N(im)->noutputs;
  if (body->ninputs != nin || body->noutputs != nout)
    return imp_error(im, "the body has %d inputs and %d outputs, the node %d and %d", body->ninputs, body->noutputs, nin, nout);
  ImpSeq **seqs = KNEWN(ImpSeq *, nin + 1);
  GNode **tens = KNEWN(GNode *, nin + 1);
  if (!(seqs[0] = imp_input_seq(im, 0))) return -1;
  int n = seqs[0]->n;
  for (int j = 1; j < nin; j++) {
    tens[j] = imp_input(im, j);
    seqs[j] = tens[j] ? NULL : imp_value_seq(im, N(im)->inputs[j]);
    if (!tens[j] && !seqs[j]) return imp_error(im, "input %d must be a tensor or a sequence", j);
    if (seqs[j] && seqs[j]->n != n)
      return imp_error(im, "input %d is a sequence of %d, input 0 of %d: they must have the same length", j,
                       seqs[j]->n, n);
  }
  ImpSeq **outs = KNEWN(ImpSeq *, nout + 1);
  for (int k = 0; k < nout; k++) outs[k] = seq_new(n, DT_F32);
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < nin; j++) imp_bind_value(im, body->inputs[j].name, seqs[j] ? seqs[j]->items[i] : tens[j]);
    if (imp_subgraph(im, body)) return -1;
    for (int k = 0; k < nout; k++) {
      GNode *v = imp_value(im, body->outputs[k].name);
      if (!v) return imp_error(im, "the body's output %d ('%s') is not a tensor", k, body->outputs[k].name);
      if (i && !dt_eq(v->type.dtype, outs[k]->dtype))
        return imp_error(im, "the body's output %d is %s at position %d but %s before", k, dt_str(v->type.dtype), i,
                         dt_str(outs[k]->dtype));
      outs[k]->items[i] = v;
      outs[k]->dtype = v->type.dtype;
    }
  }
  /* an empty input gives empty outputs of the body's declared types */
  for (int k = 0; k < nout && n == 0; k++) {
    const OnnxType *t = &body->outputs[k].type;
    DType dt;
    if (t->kind == ONNX_TYPE_TENSOR && !onnx_dtype_from_onnx(t->elem_type, &dt)) outs[k]->dtype = dt;
  }
  for (int k = 0; k < nout; k++)
    if (imp_set_output_seq(im, k, outs[k])) return -1;
  return 0;
}
