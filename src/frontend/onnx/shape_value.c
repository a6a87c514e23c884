/*
 * shape_value.c - symbolic shape values: what `Shape` of a tensor with
 * symbolic dimensions gives at import (docs/symbolic_shapes.md, "Shape
 * values").
 *
 * Exporters compute the target shapes of Reshape, Expand and
 * ConstantOfShape from the input's shape: Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape, with integer arithmetic on the way (a head count
 * times a batch, a size divided by the heads) and Equal/Where for -1.
 * With a symbolic input these values are expressions over the graph's
 * size symbols.  TVM's ONNX importer builds such shape subgraphs as
 * graph ops evaluated at run time; Kiln folds them at import instead:
 *
 *   - A shape value is an int64 (or bool) constant of at most one
 *     dimension, holding the value at the symbols' representative sizes
 *     (so every handler and every fold runs unchanged), plus, in the
 *     importer's side table, one expression per element (NULL where the
 *     element is a constant, the same at every size).
 *   - imp_call folds a call whose arguments are constants; when one of
 *     them is a shape value, symval_fold computes the result's element
 *     expressions by the row of `fold_rules` for the op (take,
 *     strided_slice, concatenate, expand_dims, squeeze, reshape, cast,
 *     add, subtract, multiply, divide, equal, where).  A result whose
 *     elements are all constant drops out of the table: it is an ordinary
 *     constant (the head size of `Shape -> Gather(2) -> Div(heads)`).
 *   - An op without a row, or a row that cannot express an element
 *     (a division by a symbolic value), makes the result opaque: it keeps
 *     the reason, and a consumer that needs it fails with an error naming
 *     the node and the value (never a silent fold at the representative
 *     size).
 *   - Consumers: imp_shape_input gives a shape input's values and
 *     expressions (Reshape takes them); imp_const_input refuses a shape
 *     value with symbolic elements, and imp_call refuses one used as data
 *     by a call it cannot fold.
 *
 * Invariant: an entry's expressions, evaluated at the representative
 * sizes, equal the constant's elements (checked when an entry is made).
 */
#include "import_internal.h"

#include <string.h>

typedef int (*FoldRule)(Importer *im, int nargs, GNode **args, const GAttrs *a, GNode *out, Expr **e);

static ShapeVal *sv_get(Importer *im, const GNode *v) { return v ? pm_get(&im->shapevals, v) : NULL; }

/* Element i of argument v as an expression (its entry's, or the constant). */
static Expr *elem(Importer *im, GNode *v, int64_t i) {
  ShapeVal *s = sv_get(im, v);
  if (s && s->e[i]) return s->e[i];
  return dt_is_bool(v->type.dtype) ? ir_bool(imp_const_at(v, i) != 0) : ir_i64(imp_const_i64_sat(v, i));
}

/* Elements in order: reshape, expand_dims, squeeze, and an integer cast. */
static int fold_copy(Importer *im, int nargs, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)nargs, (void)a;
  int64_t n = ttype_numel(&out->type);
  for (int64_t i = 0; i < n; i++) e[i] = elem(im, args[0], i);
  return 0;
}

static int fold_cast(Importer *im, int nargs, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  DType t = out->type.dtype;
  if (t.code != kDLInt && t.code != kDLUInt) return kiln_set_error("a cast to %s", dt_str(t));
  return fold_copy(im, nargs, args, a, out, e);
}

/* take (Gather) along axis 0 of a 1-D value, with constant indices. */
static int fold_take(Importer *im, int nargs, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)nargs;
  GNode *d = args[0], *ix = args[1];
  if (d->type.ndim != 1 || gattr_int(a, "axis", 0) != 0) return kiln_set_error("a gather from a value of rank %d", d->type.ndim);
  if (sv_get(im, ix)) return kiln_set_error("gather indices that are themselves a shape value");
  int64_t n = ttype_numel(&out->type), len = d->type.shape[0];
  for (int64_t i = 0; i < n; i++) {
    int64_t k = imp_const_i64_sat(ix, i);
    if (k < 0) k += len;
    if (k < 0 || k >= len) return kiln_set_error("index %lld out of range", (long long)k);
    e[i] = elem(im, d, k);
  }
  return 0;
}

/* strided_slice of a 1-D value: element i is begin + i*stride, begin
 * normalised as NumPy does (the count is the fold's). */
static int fold_slice(Importer *im, int nargs, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)nargs;
  GNode *d = args[0];
  if (d->type.ndim != 1) return kiln_set_error("a slice of a value of rank %d", d->type.ndim);
  const int64_t *b, *st;
  int nb = gattr_ints(a, "begin", &b), ns = gattr_ints(a, "strides", &st);
  int64_t len = d->type.shape[0], s = ns ? st[0] : 1, beg = nb ? b[0] : 0;
  if (s == 0) return kiln_set_error("a slice with step 0");
  if (beg < 0) beg += len;
  if (s > 0) beg = beg < 0 ? 0 : beg > len ? len : beg;
  else beg = beg < 0 ? -1 : beg > len - 1 ? len - 1 : beg;
  int64_t n = ttype_numel(&out->type);
  for (int64_t i = 0; i < n; i++) e[i] = elem(im, d, beg + i * s);
  return 0;
}

/* concatenate of 1-D values along axis 0. */
static int fold_concat(Importer *im, int nargs, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)a, (void)out;
  int64_t k = 0;
  for (int j = 0; j < nargs; j++) {
    if (args[j]->type.ndim != 1) return kiln_set_error("a concatenation of values of rank %d", args[j]->type.ndim);
    for (int64_t i = 0; i < args[j]->type.shape[0]; i++) e[k++] = elem(im, args[j], i);
  }
  return 0;
}

/* Element i of a broadcast argument of a 0-D or 1-D result. */
static Expr *belem(Importer *im, GNode *v, int64_t i) { return elem(im, v, ttype_numel(&v->type) == 1 ? 0 : i); }

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_EQ } BinOp;

static int fold_binary(Importer *im, GNode **args, GNode *out, Expr **e, BinOp op) {
  if (out->type.ndim > 1) return kiln_set_error("a result of rank %d", out->type.ndim);
  if (op != BIN_EQ && out->type.dtype.code != kDLInt) return kiln_set_error("%s arithmetic", dt_str(out->type.dtype));
  int64_t n = ttype_numel(&out->type);
  for (int64_t i = 0; i < n; i++) {
    Expr *x = belem(im, args[0], i), *y = belem(im, args[1], i);
    int64_t c;
    switch (op) {
    case BIN_ADD: e[i] = ir_add(x, y); break;
    case BIN_SUB: e[i] = ir_sub(x, y); break;
    case BIN_MUL: e[i] = ir_mul(x, y); break;
    case BIN_DIV:
      /* sizes are non-negative, so C's (ONNX's) truncating division is
       * floor division when the divisor is a positive constant */
      if (!ir_is_const_int(y, &c) || c <= 0) return kiln_set_error("a division by %s", ir_expr_str(y));
      e[i] = ir_floordiv(x, y);
      break;
    case BIN_EQ: e[i] = ir_eq(x, y); break;
    }
  }
  return 0;
}
static int fold_add(Importer *im, int na, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)na, (void)a;
  return fold_binary(im, args, out, e, BIN_ADD);
}
static int fold_sub(Importer *im, int na, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)na, (void)a;
  return fold_binary(im, args, out, e, BIN_SUB);
}
static int fold_mul(Importer *im, int na, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)na, (void)a;
  return fold_binary(im, args, out, e, BIN_MUL);
}
static int fold_div(Importer *im, int na, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)na, (void)a;
  return fold_binary(im, args, out, e, BIN_DIV);
}
static int fold_eq(Importer *im, int na, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)na, (void)a;
  return fold_binary(im, args, out, e, BIN_EQ);
}

static int fold_where(Importer *im, int nargs, GNode **args, const GAttrs *a, GNode *out, Expr **e) {
  (void)nargs, (void)a;
  if (out->type.ndim > 1) return kiln_set_error("a result of rank %d", out->type.ndim);
  int64_t n = ttype_numel(&out->type);
  for (int64_t i = 0; i < n; i++) e[i] = ir_select(belem(im, args[0], i), belem(im, args[1], i), belem(im, args[2], i));
  return 0;
}

typedef struct FoldRow {
  const char *op;
  FoldRule rule;
} FoldRow;

/* The graph ops the ONNX shape arithmetic becomes (Gather, Slice, Concat,
 * Unsqueeze, Squeeze, Reshape, Cast, Add, Sub, Mul, Div, Equal, Where). */
static const FoldRow fold_rules[] = {
    {"take", fold_take},         {"strided_slice", fold_slice}, {"concatenate", fold_concat}, {"expand_dims", fold_copy},
    {"squeeze", fold_copy},      {"reshape", fold_copy},        {"cast", fold_cast},          {"add", fold_add},
    {"subtract", fold_sub},      {"multiply", fold_mul},        {"divide", fold_div},         {"equal", fold_eq},
    {"where", fold_where},
};

/* The bounds of every symbol of the graph, for the analyzer that decides
 * comparisons (S == -1 is false for S >= 1). */
static Expr *simplify_in(Importer *im, Expr *e) {
  Analyzer *an = analyzer_new();
  for (int i = 0; i < im->g->syms.len; i++) {
    const GSym *s = im->g->syms.data[i];
    analyzer_bind_const(an, s->var, s->lo, s->hi);
  }
  Expr *r = analyzer_simplify(an, e);
  if (dt_is_bool(r->dtype)) {
    if (analyzer_can_prove(an, r)) r = ir_bool(true);
    else if (analyzer_can_prove(an, ir_not(r))) r = ir_bool(false);
  }
  analyzer_free(an);
  return r;
}

/* Record e (n elements, NULL where constant) for v after checking each
 * at the representative sizes; no entry when all are constant. */
static int record(Importer *im, GNode *v, int64_t n, Expr **e, const char *origin) {
  bool any = false;
  int64_t *reps = KNEWN(int64_t, im->g->syms.len + 1);
  for (int k = 0; k < im->g->syms.len; k++) reps[k] = ((const GSym *)im->g->syms.data[k])->rep;
  for (int64_t i = 0; i < n; i++) {
    if (!e[i]) continue;
    e[i] = simplify_in(im, e[i]);
    int64_t c;
    if (ir_is_const_int(e[i], &c)) {
      e[i] = NULL;
      continue;
    }
    int64_t got;
    if (!sym_eval(im->g, e[i], reps, &got) || got != imp_const_i64_sat(v, i))
      return imp_error(im, "internal: the shape value's element %lld, %s, is not %lld at the representative sizes",
                       (long long)i, ir_expr_str(e[i]), (long long)imp_const_i64_sat(v, i));
    any = true;
  }
  if (!any) return 0;
  ShapeVal *s = KNEW(ShapeVal);
  s->n = n;
  s->e = KNEWN(Expr *, n + 1);
  memcpy(s->e, e, sizeof(Expr *) * (size_t)n);
  s->origin = origin;
  pm_put(&im->shapevals, v, s);
  return 0;
}

GNode *imp_shape_value(Importer *im, GNode *x, int64_t start, int64_t end) {
  GNode *v = imp_const_ints(im, (int)(end - start), x->type.shape + start);
  if (!v || !ttype_is_symbolic(&x->type)) return v;
  Expr *e[GRAPH_MAX_DIMS];
  for (int64_t d = start; d < end; d++) e[d - start] = x->type.sym->dim[d];
  return record(im, v, end - start, e, im->node->name) ? NULL : v;
}

GNode *imp_size_value(Importer *im, GNode *x) {
  GNode *v = imp_scalar(im, (double)ttype_numel(&x->type), DT_I64);
  if (!v || !ttype_is_symbolic(&x->type)) return v;
  Expr *p = ir_i64(1);
  for (int d = 0; d < x->type.ndim; d++) p = ir_mul(p, ttype_dim_expr(&x->type, d));
  return record(im, v, 1, &p, im->node->name) ? NULL : v;
}

bool imp_is_shape_value(Importer *im, const GNode *v) { return sv_get(im, v) != NULL; }

/* A short description of why v's value is needed and where it came from. */
static const char *describe(Importer *im, int i, const ShapeVal *s) {
  if (s->opaque)
    return kfmt("input %d ('%s') depends on the size symbols (through the Shape node '%s'), and Kiln cannot follow it "
                "through %s; give the sizes as numbers in --input-shapes",
                i, im->node->inputs[i], s->origin, s->opaque);
  StrBuf sb = {0};
  for (int64_t k = 0; k < s->n; k++) sb_printf(&sb, "%s%s", k ? ", " : "", s->e[k] ? ir_expr_str(s->e[k]) : "c");
  const char *r = kfmt("input %d ('%s') is a shape value [%s] over the size symbols (from the Shape node '%s')", i,
                       im->node->inputs[i], sb.data ? sb.data : "", s->origin);
  sb_free(&sb);
  return r;
}

int symval_fold(Importer *im, const char *op, int nargs, GNode **args, const GAttrs *attrs, GNode *out) {
  const ShapeVal *from = NULL;
  for (int i = 0; i < nargs && !from; i++) from = sv_get(im, args[i]);
  if (!from) return 0;
  int64_t n = ttype_numel(&out->type);
  const char *why = NULL;
  for (int i = 0; i < nargs && !why; i++)
    if (sv_get(im, args[i]) && sv_get(im, args[i])->opaque) why = sv_get(im, args[i])->opaque;
  FoldRule rule = NULL;
  for (size_t r = 0; r < sizeof fold_rules / sizeof fold_rules[0] && !why; r++)
    if (!strcmp(fold_rules[r].op, op)) rule = fold_rules[r].rule;
  if (!why && !rule) why = kfmt("'%s' (node '%s')", op, im->node->name);
  Expr **e = KNEWN(Expr *, n + 1);
  if (!why && out->type.ndim > 1) why = kfmt("'%s' (node '%s'), whose result has rank %d", op, im->node->name, out->type.ndim);
  if (!why && rule(im, nargs, args, attrs, out, e)) why = kfmt("'%s' (node '%s': %s)", op, im->node->name, kiln_get_error());
  for (int64_t i = 0; i < n && !why; i++) /* a rule sets every element; NULL is a builder's error */
    if (!e[i]) why = kfmt("'%s' (node '%s': %s)", op, im->node->name, kiln_get_error());
  if (!why) return record(im, out, n, e, from->origin);
  ShapeVal *s = KNEW(ShapeVal);
  s->n = n;
  s->e = e;
  s->origin = from->origin;
  s->opaque = why;
  pm_put(&im->shapevals, out, s);
  return 0;
}

int symval_refuse_data(Importer *im, const char *op, int nargs, GNode **args) {
  for (int i = 0; i < nargs; i++) {
    const ShapeVal *s = sv_get(im, args[i]);
    if (!s) continue;
    return imp_error(im,
                     "argument %d of '%s' is a value computed from the symbolic shape of a tensor (Shape node '%s'), "
                     "used as data, which is not supported: shape values are folded at compile time and cannot feed "
                     "a kernel; give the sizes as numbers in --input-shapes",
                     i, op, s->origin);
  }
  return 0;
}

int symval_refuse_output(Importer *im, const char *name, GNode *v) {
  const ShapeVal *s = sv_get(im, v);
  if (!s) return 0;
  return kiln_set_error("graph output '%s' is a value computed from the symbolic shape of a tensor (Shape node '%s'), "
                        "which is not supported: shape values are folded at compile time, so the output would hold "
                        "the sizes Kiln compiled with, not the run's; give the sizes as numbers in --input-shapes",
                        name, s->origin);
}

int symval_refuse_const(Importer *im, int i, GNode *v) {
  const ShapeVal *s = sv_get(im, v);
  if (!s) return 0;
  return imp_error(im, "%s; this input must be known at compile time", describe(im, i, s));
}

int imp_shape_input(Importer *im, int i, int64_t *vals, Expr **exprs, int max) {
  GNode *v = imp_input(im, i);
  const ShapeVal *s = sv_get(im, v);
  if (s && s->opaque) return imp_error(im, "%s", describe(im, i, s));
  if (!v || v->kind != GN_CONST) return imp_const_input_ints(im, i, vals, max);
  int n = gnode_const_ints(v, vals, max);
  if (n < 0) return imp_error(im, "input %d: %s", i, kiln_get_error());
  for (int k = 0; k < n; k++) exprs[k] = s ? s->e[k] : NULL;
  return n;
}
