/*
 * import_inputs.c - the graph's inputs: tensors (their shapes as declared,
 * overridden by --input-shapes, or bound to values with --bind), sequences
 * and structured values, each made a graph input or a constant.
 */
#include "import_internal.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
  if ((rc = imp_check_dtype(dt, kfmt("input '%s'", name)))) return rc;
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

int imp_bind_inputs(Importer *im, const OnnxGraph *og, int nshapes, const InputShape *shapes) {
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
