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
  int64_t p;
  if (seq_pos(im, 2, s->n, s->n, s->n, &p)) return -1;
  ImpSeq *q = seq_new(s->n + 1, x->type.dtype);
  for (int i = 0, j = 0; i < q->n; i++) q->items[i] = i == p ? x : s->items[j++];
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceErase(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  if (s->n == 0) return imp_error(im, "erasing from an empty sequence");
  int64_t p;
  if (seq_pos(im, 1, -1, s->n, s->n - 1, &p)) return -1;
  ImpSeq *q = seq_new(s->n - 1, s->dtype);
  for (int i = 0, j = 0; i < s->n; i++)
    if (i != p) q->items[j++] = s->items[i];
  return imp_set_output_seq(im, 0, q);
}

int onnx_h_SequenceAt(Importer *im) {
  ImpSeq *s = imp_input_seq(im, 0);
  if (!s) return -1;
  int64_t p;
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

/* ---- OptionalHasElement, OptionalGetElement on plain tensors (opset
 * 18 lets both take a tensor, which is always present; a missing input
 * is an empty optional).  Optional-typed values (graph inputs, the
 * Optional op) are not supported. ---- */

int onnx_h_OptionalHasElement(Importer *im) {
  bool present = imp_ninputs(im) > 0 && *N(im)->inputs[0];
  if (present && !imp_input(im, 0)) return imp_error(im, "only a tensor input (always present) or none is supported");
  void *p;
  GNode *c = imp_new_const(im, DT_BOOL, 0, NULL, &p);
  if (!c) return -1;
  *(uint8_t *)p = present;
  return out0(im, c);
}

int onnx_h_OptionalGetElement(Importer *im) {
  GNode *x = imp_input(im, 0);
  if (!x) return imp_error(im, "only a tensor input is supported (optional values are not)");
  return out0(im, x);
}
