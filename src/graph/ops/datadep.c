/*
 * datadep.c - the data-dependent ops: operators whose output size their
 * input's data decides (ONNX NonZero, Compress, Unique,
 * NonMaxSuppression), which the graph executor runs as functions of the
 * runtime (src/runtime/datadep.c), not as generated kernels.
 *
 * A row is a host op (PAT_OPAQUE, no compute; see ops/strings.c) with
 * OPF_DATA_DEPENDENT.  The importer gives each call:
 *   "shape", "dtype"  the output's shape at the symbols' representative
 *                     values and its dtype (the integer inference);
 *   "sym_dims"        the output's dimensions over the symbols: the
 *                     dimension the data decides is a symbol of its own;
 *   "report"          that dimension (absent: the output's size is known,
 *                     Unique's inverse indices);
 *   "report_cap"      its upper bound, a postfix expression over the
 *                     other symbols (the input's element count for
 *                     NonZero): the executor sizes the output's buffer
 *                     for it before the call;
 *   "host_attrs"      the runtime function's attributes (a JSON object).
 * The runtime function writes the output compact at the real size, which
 * it reports; the executor binds the symbol to it and plans the later
 * entries at that value (docs/symbolic_shapes.md, section 4c).
 *
 * dd.bind is the same step for a value a kernel computed (a shape from
 * Shape -> Gather -> Concat over data, a count): a copy of a 1-D integer
 * tensor whose elements are run-time values (GSym.value_of names the
 * node's attribute "value_of"); the graph keeps it though nothing uses
 * it (OPF_BINDS_VALUES), and the executor binds the values from its
 * output after it runs.
 */
#include <string.h>

#include "../graph.h"
#include "util.h"

static int infer_dd(GNode *n, TType *out) {
  const int64_t *shape;
  int nd = gattr_ints(&n->attrs, "shape", &shape);
  const char *dt = gattr_str(&n->attrs, "dtype", NULL);
  if (!dt || nd < 1 || nd > GRAPH_MAX_DIMS)
    return kiln_set_error("%s needs the attributes 'shape' (1 to %d dimensions) and 'dtype'", n->op->name,
                          GRAPH_MAX_DIMS);
  DType t;
  if (dt_parse(dt, &t)) return -1;
  for (int d = 0; d < nd; d++)
    if (shape[d] < 1) return kiln_set_error("%s: dimension %d of 'shape' is %lld", n->op->name, d, (long long)shape[d]);
  int64_t r = gattr_int(&n->attrs, "report", -1);
  if (r < -1 || r >= nd)
    return kiln_set_error("%s: 'report' is %lld, not a dimension of the output's %d", n->op->name, (long long)r, nd);
  if (r >= 0 && !gattr_str(&n->attrs, "report_cap", NULL))
    return kiln_set_error("%s: a reported dimension needs its upper bound 'report_cap'", n->op->name);
  for (int i = 0; i < n->nargs; i++)
    if (dt_is_string(arg_type(n, i)->dtype)) return err_dtype(n, i, "numeric");
  *out = ttype(t, nd, shape);
  return ttype_check(out, n->op->name);
}

/* loop.output: one output of a Loop the executor runs (its body is
 * Graph.bodies[body]); "shape"/"dtype" as above but of any rank and size
 * (a loop-carried scalar), a scan output reports its first dimension. */
static int infer_loop(GNode *n, TType *out) {
  const int64_t *shape;
  int nd = gattr_ints(&n->attrs, "shape", &shape);
  const char *dt = gattr_str(&n->attrs, "dtype", NULL);
  if (!dt || nd > GRAPH_MAX_DIMS)
    return kiln_set_error("%s needs the attributes 'shape' (at most %d dimensions) and 'dtype'", n->op->name,
                          GRAPH_MAX_DIMS);
  DType t;
  if (dt_parse(dt, &t)) return -1;
  int64_t r = gattr_int(&n->attrs, "report", -1);
  if (r != -1 && (r != 0 || nd < 1 || !gattr_str(&n->attrs, "report_cap", NULL)))
    return kiln_set_error("%s: a scan output reports its dimension 0 and needs 'report_cap'", n->op->name);
  *out = ttype(t, nd, shape);
  return ttype_check(out, n->op->name);
}

#define DD(name, lo, hi, fn) \
  {name, lo, hi, PAT_OPAQUE, infer_dd, NULL, NULL, NULL, OP_OTHER, OPF_DATA_DEPENDENT, fn}

/* dd.mel_check (num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
 * upper_edge_hertz): a copy of upper_edge_hertz after the runtime function
 * checked that every mel bin of these values lies in the spectrum (a
 * MelWeightMatrix whose values are given at run time reads its upper edge
 * from it, so the check runs first). */
static int infer_mel_check(GNode *n, TType *out) {
  for (int i = 0; i < 5; i++)
    if (ttype_numel(arg_type(n, i)) != 1 || arg_type(n, i)->ndim > 1 || ttype_is_symbolic(arg_type(n, i)))
      return err_dtype(n, i, "one element");
  *out = *arg_type(n, 4);
  return 0;
}

const OpDef ops_datadep[] = {
    DD("dd.nonzero", 1, 1, "runtime.dd.nonzero"),
    DD("dd.compress", 2, 2, "runtime.dd.compress"),
    DD("dd.unique", 1, 1, "runtime.dd.unique"),
    DD("dd.nms", 5, 5, "runtime.dd.nms"),
    /* a value computed by kernels that decides later shapes: its copy,
     * from whose elements the executor binds the run-time values that
     * name this node's "value_of" (graph_value_sym) after it runs */
    {"dd.bind", 1, 1, PAT_OPAQUE, infer_dd, NULL, NULL, NULL, OP_OTHER, OPF_DATA_DEPENDENT | OPF_BINDS_VALUES,
     "runtime.dd.bind"},
    {"dd.mel_check", 5, 5, PAT_OPAQUE, infer_mel_check, NULL, NULL, NULL, OP_OTHER, 0, "runtime.dd.mel_check"},
    /* an output of a Loop whose trip count or condition is known only at
     * run time: the executor runs the body (docs/symbolic_shapes.md 4d) */
    {"loop.output", 0, -1, PAT_OPAQUE, infer_loop, NULL, NULL, NULL, OP_OTHER, OPF_DATA_DEPENDENT, "runtime.loop"},
    {NULL, 0, 0, PAT_OPAQUE, NULL, NULL, NULL, NULL},
};
