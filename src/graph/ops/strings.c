/*
 * strings.c - the host ops: operators on string tensors, which the graph
 * executor runs as functions of the runtime (src/runtime/strings.c), not
 * as generated kernels.
 *
 * A row names its runtime function in `host`; it is PAT_OPAQUE and has no
 * compute, so it fuses with nothing, constant folding leaves it alone and
 * the build (backend/build.c) writes a graph JSON node calling that
 * function with the node's "host_attrs" attribute (a JSON object the
 * importer wrote) as attrs.kiln_host.  Types are inferred here from the
 * typed attributes the inference needs ("dtype": the output's).
 * docs/strings.md has the design.
 */
#include <string.h>

#include "../graph.h"
#include "util.h"

static int need_strings(GNode *n, int i) {
  if (!dt_is_string(arg_type(n, i)->dtype)) return err_dtype(n, i, "string");
  return 0;
}

/* concat, equal: NumPy broadcasting of two string tensors */
static int infer_bcast(GNode *n, TType *out) {
  if (need_strings(n, 0) || need_strings(n, 1) || bcast_shapes(arg_type(n, 0), arg_type(n, 1), out)) return -1;
  out->dtype = !strcmp(n->op->name, "strings.equal") ? DT_BOOL : DT_STRING;
  return 0;
}

static int infer_same(GNode *n, TType *out) {
  if (need_strings(n, 0)) return -1;
  *out = *arg_type(n, 0);
  if (!strcmp(n->op->name, "strings.regex_full_match")) out->dtype = DT_BOOL;
  return 0;
}

/* cast, label_encode: the shape of the input, the dtype of attribute "dtype" */
static int infer_to(GNode *n, TType *out) {
  const char *to = gattr_str(&n->attrs, "dtype", NULL);
  DType t;
  if (!to) return kiln_set_error("missing attribute 'dtype'");
  if (dt_parse(to, &t)) return -1;
  *out = *arg_type(n, 0);
  out->dtype = t;
  return 0;
}

/* normalize_words (StringNormalizer with stopwords): a data-dependent
 * host op (ops/datadep.c's attributes "shape", "dtype", "report",
 * "report_cap"); the words kept are its last dimension */
static int infer_reported(GNode *n, TType *out) {
  if (need_strings(n, 0)) return -1;
  const int64_t *shape;
  int nd = gattr_ints(&n->attrs, "shape", &shape);
  int64_t r = gattr_int(&n->attrs, "report", -1);
  if (nd != arg_type(n, 0)->ndim || r != nd - 1 || !gattr_str(&n->attrs, "report_cap", NULL))
    return kiln_set_error("%s needs 'shape' of its input's rank, 'report' its last dimension and 'report_cap'",
                          n->op->name);
  *out = ttype(DT_STRING, nd, shape);
  return ttype_check(out, n->op->name);
}

/* split (StringSplit's pieces): the input's shape and one more dimension,
 * the most pieces any string splits into, which the runtime function
 * reports; "report_grow" set when "report_cap" is only a first guess
 * (no bound is known before the run: the executor grows the output and
 * calls again when the pieces do not fit).  split_count: the pieces per
 * string, int64 of the input's shape. */
static int infer_split(GNode *n, TType *out) {
  if (need_strings(n, 0)) return -1;
  if (!strcmp(n->op->name, "strings.split_count")) {
    *out = *arg_type(n, 0);
    out->dtype = DT_I64;
    return 0;
  }
  const int64_t *shape;
  int nd = gattr_ints(&n->attrs, "shape", &shape);
  if (nd != arg_type(n, 0)->ndim + 1 || gattr_int(&n->attrs, "report", -1) != nd - 1 ||
      !gattr_str(&n->attrs, "report_cap", NULL))
    return kiln_set_error("%s needs 'shape' of one more dimension than its input, 'report' its last dimension and "
                          "'report_cap'",
                          n->op->name);
  *out = ttype(DT_STRING, nd, shape);
  return ttype_check(out, n->op->name);
}

const OpDef ops_strings[] = {
    {"strings.concat", 2, 2, PAT_OPAQUE, infer_bcast, NULL, NULL, NULL, OP_OTHER, 0, "runtime.strings.concat"},
    {"strings.equal", 2, 2, PAT_OPAQUE, infer_bcast, NULL, NULL, NULL, OP_OTHER, 0, "runtime.strings.equal"},
    {"strings.normalize", 1, 1, PAT_OPAQUE, infer_same, NULL, NULL, NULL, OP_OTHER, 0, "runtime.strings.normalize"},
    {"strings.normalize_words", 1, 1, PAT_OPAQUE, infer_reported, NULL, NULL, NULL, OP_OTHER, OPF_DATA_DEPENDENT,
     "runtime.strings.normalize"},
    {"strings.regex_full_match", 1, 1, PAT_OPAQUE, infer_same, NULL, NULL, NULL, OP_OTHER, 0,
     "runtime.strings.regex_full_match"},
    {"strings.cast", 1, 1, PAT_OPAQUE, infer_to, NULL, NULL, NULL, OP_OTHER, 0, "runtime.strings.cast"},
    {"strings.label_encode", 1, 1, PAT_OPAQUE, infer_to, NULL, NULL, NULL, OP_OTHER, 0, "runtime.strings.label_encode"},
    {"strings.split", 1, 1, PAT_OPAQUE, infer_split, NULL, NULL, NULL, OP_OTHER, OPF_DATA_DEPENDENT,
     "runtime.strings.split"},
    {"strings.split_count", 1, 1, PAT_OPAQUE, infer_split, NULL, NULL, NULL, OP_OTHER, 0, "runtime.strings.split"},
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
