/*
 * verify.c - graph_verify: the invariants every pass must keep, checked
 * between passes (pipeline.c) in debug builds and in the tests
 * (kiln_verify_enabled), as QBE's ssacheck checks its IR.
 *
 *   - the node list is in topological order and each node's id is its
 *     position: every argument of a call is an earlier node of the graph;
 *   - every call has an op and an argument count the op's row allows;
 *   - every call's type is what its op infers from its arguments now (the
 *     types re-inferred), every constant's type is its value's;
 *   - every output is a node of the graph.
 * A violation is an error naming the pass that broke it, the node and the
 * rule; it is a bug in that pass, never in the model.
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"


static int bad(const char *after, const GNode *n, const char *fmt, const char *detail) {
  return kiln_set_error("graph_verify%s%s: node %d ('%s'%s%s): %s%s", after ? " after " : "", after ? after : "",
                        n ? n->id : -1, n && n->name ? n->name : "", n && n->op ? ", " : "", n && n->op ? n->op->name : "",
                        fmt, detail ? detail : "");
}

int graph_verify(Graph *g, const char *after) {
  if (!g) return kiln_set_error("graph_verify%s%s: no graph", after ? " after " : "", after ? after : "");
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (!n) return bad(after, NULL, "a NULL node in the node list", NULL);
    if (n->id != i) return bad(after, n, "its id is not its position in the node list", NULL);
    if (n->kind == GN_CONST) {
      if (!n->value) return bad(after, n, "a constant without a value", NULL);
      if (n->type.ndim != n->value->ndim) return bad(after, n, "the constant's type does not match its value", NULL);
      continue;
    }
    if (n->kind != GN_CALL) continue;
    if (!n->op) return bad(after, n, "a call without an op", NULL);
    if (n->nargs < n->op->min_args || (n->op->max_args >= 0 && n->nargs > n->op->max_args))
      return bad(after, n, "wrong number of arguments for the op: ", kfmt("%d", n->nargs));
    for (int a = 0; a < n->nargs; a++) {
      GNode *x = n->args[a];
      if (!x || x->id < 0 || x->id >= i || g->nodes.data[x->id] != x)
        return bad(after, n, "an argument that is not an earlier node of the graph (topological order): argument ",
                   kfmt("%d", a));
    }
    if (n->op->infer) {
      TType t;
      memset(&t, 0, sizeof t);
      if (n->op->infer(n, &t)) return bad(after, n, "its type no longer infers: ", kiln_get_error());
      if (sym_infer(g, n, &t)) return bad(after, n, "its symbolic dimensions no longer infer: ", kiln_get_error());
      if (!ttype_eq(&t, &n->type))
        return bad(after, n, "its type is not the one inferred from its arguments: ",
                   kfmt("%s, inferred %s", ttype_str(&n->type), ttype_str(&t)));
    }
  }
  for (int i = 0; i < g->outputs.len; i++) {
    GNode *o = g->outputs.data[i];
    if (!o || o->id < 0 || o->id >= g->nodes.len || g->nodes.data[o->id] != o)
      return kiln_set_error("graph_verify%s%s: output %d is not a node of the graph", after ? " after " : "",
                            after ? after : "", i);
  }
  return 0;
}
