/*
 * fold_constant.c - evaluate every call whose inputs are all constants and
 * replace it by the result.  Small results go through the operator
 * library's reference interpreter, large ones through a compiled kernel
 * (graph_eval_call decides).  Calls without a compute (none should remain
 * after simplify_inference) are kept, and so are calls whose result is
 * symbolic (a ConstantOfShape of a shape given at run time), and so are
 * large broadcasts of small constants (graph_fold_keeps).  The compiled
 * kernels of one pass are built together first (graph_fold_kernels_build:
 * a few C units in parallel and one link).
 */
#include "passes.h"

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  const FoldKernels *fk = ud;
  if (!old->op->compute) return GRAPH_KEEP;
  /* a shape given at run time (sym_dims) has no value to fold to */
  if (ttype_is_symbolic(&old->type)) return GRAPH_KEEP;
  for (int i = 0; i < old->nargs; i++)
    if (args[i]->kind != GN_CONST) return GRAPH_KEEP;
  /* a large broadcast of small constants is cheaper computed where it is
   * used than stored (graph_fold_keeps) */
  if (graph_fold_keeps(old)) return GRAPH_KEEP;
  DLTensor *v = graph_eval_call_in(old, args, fk);
  if (!v) return NULL;
  return graph_const(ng, NULL, v);
}

Graph *pass_fold_constant(Graph *g, const PassContext *pc) {
  (void)pc;
  FoldKernels *fk = graph_fold_kernels_build(g);
  Graph *r = graph_rewrite(g, rewrite, fk);
  graph_fold_kernels_free(fk);
  return r;
}
