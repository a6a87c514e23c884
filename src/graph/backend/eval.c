/*
 * eval.c - evaluating one call on constant inputs at compile time, for
 * constant folding and for the frontend's shape arithmetic.
 *
 * The op's compute is built over placeholders for the inputs.  Results of
 * up to EVAL_INTERP_LIMIT elements are computed by the operator library's
 * reference interpreter (no C compiler round trip, which matters for the
 * many tiny shape computations of exported models); larger ones are
 * scheduled generically, compiled and run.  Such a kernel runs once (a
 * weight's relayout, a Winograd transform, a folded scale), so it is
 * compiled at -O1: gcc takes about a third of its -O3 time, and a cold
 * build of ResNet-50 compiles dozens of them (docs/compile_time.md).
 */
#include <string.h>

#include "../../codegen/codegen.h"
#include "../passes/passes.h"

#define EVAL_INTERP_LIMIT 65536

/* The flags of a fold kernel: the defaults' target and float semantics,
 * at -O1 (it runs once; $KILN_CFLAGS, for the model's kernels, is not
 * read here). */
static const CompileOptions fold_copt = {NULL, "-O1 -march=native -fno-math-errno -fno-trapping-math -fPIC -std=gnu11",
                                         NULL};

DLTensor *graph_eval_call(GNode *n, GNode **args) {
  if (!n->op->compute) return kiln_set_error("%s has no compute to evaluate", n->op->name), NULL;
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  DLTensor *result = NULL;
  Tensor **ins = KNEWN(Tensor *, n->nargs + 1);
  DLTensor **data = KNEWN(DLTensor *, n->nargs + 1);
  for (int i = 0; i < n->nargs; i++) {
    ins[i] = te_placeholder_c(kfmt("in%d", i), args[i]->type.ndim, args[i]->type.shape, args[i]->type.dtype);
    data[i] = args[i]->value;
  }
  /* the compute reads attributes and argument types from a node whose
   * arguments are the constants */
  GNode tmp = *n;
  tmp.args = args;
  Tensor *out = n->op->compute(&tmp, ins, NULL);
  DLDevice cpu = {kDLCPU, 0};
  if (out && kiln_array_empty(n->type.ndim, n->type.shape, n->type.dtype, cpu, &result) == 0) {
    int rc;
    if (ttype_numel(&n->type) <= EVAL_INTERP_LIMIT) {
      rc = topi_eval(out, n->nargs, ins, data, result);
    } else {
      Schedule *s = te_create_schedule(1, &out);
      rc = !s || topi_schedule_generic(s, 1, &out) ? -1 : 0;
      Tensor **args_t = KNEWN(Tensor *, n->nargs + 1);
      memcpy(args_t, ins, sizeof(Tensor *) * (size_t)n->nargs);
      args_t[n->nargs] = out;
      KilnModule *m = rc ? NULL : kiln_build(s, n->nargs + 1, args_t, "fold", NULL, &fold_copt);
      KilnFunction *f = NULL;
      if (!m || kiln_module_get_function(m, "fold", &f)) rc = -1;
      if (!rc) {
        KilnValue *av = KNEWN(KilnValue, n->nargs + 1);
        int *codes = KNEWN(int, n->nargs + 1);
        for (int i = 0; i < n->nargs; i++) {
          av[i].v_handle = data[i];
          codes[i] = KILN_DLTENSOR;
        }
        av[n->nargs].v_handle = result;
        codes[n->nargs] = KILN_DLTENSOR;
        KilnValue ret;
        int rcode;
        rc = kiln_func_call(f, av, codes, n->nargs + 1, &ret, &rcode);
      }
      kiln_func_free(f);
      kiln_module_free(m);
    }
    if (rc) {
      kiln_array_free(result);
      result = NULL;
    }
  }
  kiln_arena_pop();
  kiln_arena_free(scratch);
  if (!result) kiln_error_context("evaluating %s on constants", n->op->name);
  return result;
}
