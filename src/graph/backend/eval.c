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
 *
 * Folding kernels are built in batches: before a fold_constant pass
 * rewrites anything, graph_fold_kernels_build finds every call the pass
 * will evaluate with a compiled kernel (its arguments constants, or calls
 * folded before it), lowers each once, merges those whose C source is the
 * same (the relayouts of equal-shaped weights) and builds them all into
 * one module: a few C units the compiler driver builds in parallel and
 * one link, where a kernel per call took a compile and a link each, one
 * after another.  graph_eval_call_in then finds a call's kernel by the C
 * source its own lowering gives, so a kernel the batch lacks (or a batch
 * that failed to build) only costs the one-at-a-time path.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../codegen/codegen.h"
#include "../passes/passes.h"

#define EVAL_INTERP_LIMIT 65536
#define FOLD_BROADCAST_ELEMS ((int64_t)1 << 24)
#define FOLD_BROADCAST_RATIO 64

bool graph_fold_keeps(const GNode *n) {
  if (n->kind != GN_CALL || ttype_is_symbolic(&n->type)) return false;
  int64_t out = ttype_numel(&n->type), in = 0;
  if (out <= FOLD_BROADCAST_ELEMS) return false;
  for (int a = 0; a < n->nargs; a++) in += ttype_numel(&n->args[a]->type);
  return out / FOLD_BROADCAST_RATIO > in;
}

/* The flags of a fold kernel: the defaults' target and float semantics,
 * at -O1 (it runs once; $KILN_CFLAGS, for the model's kernels, is not
 * read here). */
static const CompileOptions fold_copt = {NULL, "-O1 -march=native -fno-math-errno -fno-trapping-math -fPIC -std=gnu11",
                                         NULL};

struct FoldKernels {
  KArena *arena;      /* the keys and lowered functions */
  KilnModule *module; /* fold_0 ... fold_{n-1}; NULL when the build failed */
  int n;
  const char **source; /* each kernel's C source, built under the name "fold" */
};

/* The compute of n over placeholders of its arguments' types (ins[i]);
 * args: the nodes the compute reads attributes and types from. */
static Tensor *eval_compute(GNode *n, GNode **args, Tensor **ins) {
  for (int i = 0; i < n->nargs; i++)
    ins[i] = te_placeholder_c(kfmt("in%d", i), args[i]->type.ndim, args[i]->type.shape, args[i]->type.dtype);
  GNode tmp = *n;
  tmp.args = args;
  return n->op->compute(&tmp, ins, NULL);
}

/* The generic schedule of out over ins, lowered as "fold". */
static LoweredFunc *fold_lower(GNode *n, Tensor **ins, Tensor *out) {
  Schedule *s = te_create_schedule(1, &out);
  if (!s || topi_schedule_generic(s, 1, &out)) return NULL;
  Tensor **args_t = KNEWN(Tensor *, n->nargs + 1);
  memcpy(args_t, ins, sizeof(Tensor *) * (size_t)n->nargs);
  args_t[n->nargs] = out;
  return kiln_lower(s, n->nargs + 1, args_t, "fold", NULL);
}

/* f's C source (the key two calls share a kernel by), in the current arena. */
static const char *fold_source(LoweredFunc *f) {
  char **u = codegen_c_units(&f, 1, 0, NULL, 1);
  if (!u) return NULL;
  const char *r = kstrdup(u[0]);
  free(u[0]);
  free(u);
  return r;
}

static bool folds_compiled(GNode *n) {
  return n->kind == GN_CALL && n->op->compute && !ttype_is_symbolic(&n->type) &&
         ttype_numel(&n->type) > EVAL_INTERP_LIMIT;
}

FoldKernels *graph_fold_kernels_build(Graph *g) {
  FoldKernels *fk = xcalloc(1, sizeof *fk);
  fk->arena = kiln_arena_new();
  kiln_arena_push(fk->arena);
  int nn = g->nodes.len;
  /* what the outputs use, and which calls fold (fold_constant's rule:
   * every argument a constant or a call that folds) */
  char *used = KNEWN(char, nn + 1), *folds = KNEWN(char, nn + 1);
  int64_t edges = g->outputs.len;
  for (int i = 0; i < nn; i++)
    if (((GNode *)g->nodes.data[i])->kind == GN_CALL) edges += ((GNode *)g->nodes.data[i])->nargs;
  GNode **stack = KNEWN(GNode *, edges + 1); /* a node is pushed once per use at most */
  int64_t sp = 0;
  for (int i = 0; i < g->outputs.len; i++) stack[sp++] = g->outputs.data[i];
  while (sp > 0) {
    GNode *n = stack[--sp];
    if (used[n->id]) continue;
    used[n->id] = 1;
    for (int a = 0; n->kind == GN_CALL && a < n->nargs; a++)
      if (!used[n->args[a]->id]) stack[sp++] = n->args[a];
  }
  LoweredFunc **funcs = KNEWN(LoweredFunc *, nn + 1);
  const char **src = KNEWN(const char *, nn + 1);
  int nf = 0;
  for (int i = 0; i < nn; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind != GN_CALL || !n->op->compute || ttype_is_symbolic(&n->type)) continue;
    bool all = true;
    for (int a = 0; a < n->nargs && all; a++) all = n->args[a]->kind == GN_CONST || folds[n->args[a]->id];
    all = all && !graph_fold_keeps(n);
    folds[n->id] = all;
    if (!all || !used[n->id] || !folds_compiled(n)) continue;
    /* a compute that needs an argument's value (not there before the
     * pass) fails here: that call takes the one-at-a-time path */
    Tensor **ins = KNEWN(Tensor *, n->nargs + 1);
    Tensor *out = eval_compute(n, n->args, ins);
    LoweredFunc *f = out ? fold_lower(n, ins, out) : NULL;
    const char *s = f ? fold_source(f) : NULL;
    if (!s) {
      kiln_clear_error();
      continue;
    }
    bool dup = false;
    for (int j = 0; j < nf && !dup; j++) dup = !strcmp(src[j], s);
    if (dup) continue;
    f->name = kfmt("fold_%d", nf);
    src[nf] = s;
    funcs[nf++] = f;
  }
  if (nf > 0) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nunits = ncpu > 1 ? (int)(ncpu < 8 ? ncpu : 8) : 1;
    fk->module = kiln_build_funcs_units(funcs, nf, nunits, &fold_copt);
    if (!fk->module) kiln_clear_error(); /* each call builds its own kernel */
  }
  fk->n = fk->module ? nf : 0;
  fk->source = src;
  kiln_arena_pop();
  return fk;
}

void graph_fold_kernels_free(FoldKernels *fk) {
  if (!fk) return;
  kiln_module_free(fk->module);
  kiln_arena_free(fk->arena);
  free(fk);
}

int graph_fold_kernels_count(const FoldKernels *fk) { return fk ? fk->n : 0; }

/* Run f (taking the arguments' values, then the result) on data. */
static int call_fold(KilnFunction *f, int nargs, DLTensor **data, DLTensor *result) {
  KilnValue *av = KNEWN(KilnValue, nargs + 1);
  int *codes = KNEWN(int, nargs + 1);
  for (int i = 0; i < nargs; i++) {
    av[i].v_handle = data[i];
    codes[i] = KILN_DLTENSOR;
  }
  av[nargs].v_handle = result;
  codes[nargs] = KILN_DLTENSOR;
  KilnValue ret;
  int rcode;
  return kiln_func_call(f, av, codes, nargs + 1, &ret, &rcode);
}

/* Evaluate through a compiled kernel: fk's when it has this source, else
 * one built for this call. */
static int eval_compiled(GNode *n, Tensor **ins, Tensor *out, DLTensor **data, DLTensor *result,
                         const FoldKernels *fk) {
  LoweredFunc *f = fold_lower(n, ins, out);
  if (!f) return -1;
  if (fk && fk->n > 0) {
    const char *s = fold_source(f);
    if (!s) return -1;
    for (int j = 0; j < fk->n; j++)
      if (!strcmp(fk->source[j], s)) {
        KilnFunction *kf = NULL;
        int rc = kiln_module_get_function(fk->module, kfmt("fold_%d", j), &kf) ? -1
                 : call_fold(kf, n->nargs, data, result);
        kiln_func_free(kf);
        return rc;
      }
  }
  KilnModule *m = kiln_build_funcs(&f, 1, 0, NULL, &fold_copt);
  KilnFunction *kf = NULL;
  int rc = !m || kiln_module_get_function(m, "fold", &kf) ? -1 : call_fold(kf, n->nargs, data, result);
  kiln_func_free(kf);
  kiln_module_free(m);
  return rc;
}

DLTensor *graph_eval_call(GNode *n, GNode **args) { return graph_eval_call_in(n, args, NULL); }

DLTensor *graph_eval_call_in(GNode *n, GNode **args, const FoldKernels *fk) {
  if (!n->op->compute) return kiln_set_error("%s has no compute to evaluate", n->op->name), NULL;
  KArena *scratch = kiln_arena_new();
  kiln_arena_push(scratch);
  DLTensor *result = NULL;
  Tensor **ins = KNEWN(Tensor *, n->nargs + 1);
  DLTensor **data = KNEWN(DLTensor *, n->nargs + 1);
  for (int i = 0; i < n->nargs; i++) data[i] = args[i]->value;
  /* the compute reads attributes and argument types from a node whose
   * arguments are the constants */
  Tensor *out = eval_compute(n, args, ins);
  DLDevice cpu = {kDLCPU, 0};
  if (out && kiln_array_empty(n->type.ndim, n->type.shape, n->type.dtype, cpu, &result) == 0) {
    /* the interpreter evaluates computes only: an extern (a scatter) is compiled */
    int rc = ttype_numel(&n->type) <= EVAL_INTERP_LIMIT && out->kind != TE_EXTERN
                 ? topi_eval(out, n->nargs, ins, data, result)
                 : eval_compiled(n, ins, out, data, result, fk);
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
