/*
 * onnx_attr_check.c - a node's attributes against its op version's list.
 *
 * ONNX fixes, per op version, which attributes a node may carry, their
 * types and which are required (onnx_schema.c, generated from onnx.defs).
 * The importer's handlers read attributes leniently (an absent or
 * mistyped attribute gives the default, onnx_attr.c), so without this
 * check an attribute the version does not have would be ignored and the
 * node imported with a different meaning than its author wrote: the
 * opset-13 ReduceSum with an `axes` attribute (axes is input 1 from
 * version 13) would reduce over every axis.  onnx.checker and ONNX Runtime
 * refuse such nodes; so does Kiln, with an error that names the attribute
 * and the op version and says where the attribute belongs.
 *
 * What counts as a mistake, in the order it is reported:
 *   - an attribute the version does not list; the message says whether
 *     the name is one of the version's inputs (the attribute moved to an
 *     input) or an attribute of other versions of the op.  A version that
 *     accepts any attribute (LayerNormalization-17 in ONNX's schema; ONNX
 *     Runtime's LayerNormalization-1 and SimplifiedLayerNormalization)
 *     gets a warning instead, as ONNX Runtime runs such nodes;
 *   - an attribute of another type than the version's (an attribute whose
 *     file left out the type and whose value says nothing, an empty list,
 *     has no type to compare and passes);
 *   - a required attribute that is missing.
 * Ops ONNX does not define (ONNX Runtime's) are checked against the list
 * the importer's table gives for them (ops/table.c).
 */
#include "onnx_schema.h"

#include <stdio.h>
#include <string.h>

#include "../../base/base.h"
#include "onnx_model.h"

int onnx_schema_version_index(const OnnxSchemaOp *s, int version) {
  for (int i = 0; s && i < ONNX_SCHEMA_MAX_VERSIONS && s->versions[i]; i++)
    if (s->versions[i] == version) return i;
  return -1;
}

static const OnnxSchemaAttr *find_attr(const OnnxSchemaAttr *list, const char *name) {
  for (; list && list->name; list++)
    if (!strcmp(list->name, name)) return list;
  return NULL;
}

/* "a, b, c" of a list (or "none") */
static const char *attr_names(const OnnxSchemaAttr *list) {
  StrBuf sb = {0};
  for (; list && list->name; list++) sb_printf(&sb, "%s%s", sb.len ? ", " : "", list->name);
  const char *r = kfmt("%s", sb.len ? sb.data : "none");
  sb_free(&sb);
  return r;
}

/* Why attribute `name` is not one of version vi's, as a clause the error
 * ends with: where it is an input, where it is an attribute, or neither. */
static const char *where_else(const OnnxSchemaOp *s, int vi, const char *op, const char *name) {
  StrBuf with = {0};
  for (int k = 0; s && k < ONNX_SCHEMA_MAX_VERSIONS && s->versions[k]; k++)
    if (find_attr(s->attrs[k], name)) sb_printf(&with, "%s%d", with.len ? ", " : "", s->versions[k]);
  const char *r;
  int input = -1;
  for (int k = 0; s && vi >= 0 && s->inputs[vi][k]; k++)
    if (!strcmp(s->inputs[vi][k], name)) input = k;
  int v = s && vi >= 0 ? s->versions[vi] : 0;
  if (input >= 0 && with.len)
    r = kfmt("%s takes '%s' as an attribute at version%s %s, and at version %d as input %d: give it as the node's "
             "input %d (a constant initializer), or import the model at an opset where %s has the attribute",
             op, name, strchr(with.data, ',') ? "s" : "", with.data, v, input, input, op);
  else if (with.len)
    r = kfmt("it is an attribute of %s version%s %s only: remove it, or import the model at an opset where %s has it",
             op, strchr(with.data, ',') ? "s" : "", with.data, op);
  else
    r = kfmt("no version of %s has it: remove it or correct its name", op);
  sb_free(&with);
  return r;
}

int onnx_check_attrs(const OnnxNode *n, const OnnxSchemaOp *s, int version, const OnnxSchemaAttr *own, bool own_open) {
  int vi = onnx_schema_version_index(s, version);
  const OnnxSchemaAttr *list = vi >= 0 ? s->attrs[vi] : own;
  if (vi < 0 && !own) return 0; /* no list to check against (a unit test keeps the table from having such rows) */
  bool open = vi >= 0 ? (s->open_attrs >> vi & 1) : own_open;
  for (int i = 0; i < n->nattrs; i++) {
    const OnnxAttr *a = &n->attrs[i];
    const OnnxSchemaAttr *sa = find_attr(list, a->name);
    for (int j = 0; j < i; j++)
      if (!strcmp(n->attrs[j].name, a->name))
        return kiln_set_error("attribute '%s' is given twice: keep one", a->name);
    if (!sa && open) {
      fprintf(stderr,
              "kiln: warning: %s node '%s': attribute '%s' is not one of %s version %d's (%s); ignored, as ONNX "
              "Runtime does for this op (remove it if it was meant to change the result)\n",
              n->op_type, n->name, a->name, n->op_type, version, attr_names(list));
      continue;
    }
    if (!sa)
      return kiln_set_error("attribute '%s' is not an attribute of %s version %d (%s %s); %s", a->name, n->op_type,
                            version, list && list->name ? "its attributes:" : "it has", attr_names(list),
                            where_else(vi >= 0 ? s : NULL, vi, n->op_type, a->name));
    if (a->type != ONNX_ATTR_UNDEFINED && (int)a->type != sa->type)
      return kiln_set_error("attribute '%s' is %s, but %s version %d takes it as %s: fix the model", a->name,
                            onnx_attr_type_name(a->type), n->op_type, version,
                            onnx_attr_type_name((OnnxAttrType)sa->type));
  }
  for (const OnnxSchemaAttr *sa = list; sa && sa->name; sa++)
    if (sa->required && !onnx_attr_find(n, sa->name))
      return kiln_set_error("required attribute '%s' (%s) is missing: %s version %d needs it", sa->name,
                            onnx_attr_type_name((OnnxAttrType)sa->type), n->op_type, version);
  return 0;
}
