/*
 * passes.h - the graph passes, one per file, each Graph -> new Graph (NULL
 * + error on failure); pipeline.c runs them in order.
 *
 *   simplify_inference.c  batch_norm -> multiply/add; dropout removed
 *   fold_constant.c       evaluate calls whose inputs are all constants
 *   fuse_layer_norm.c     a layer norm written out in ops -> nn.layer_norm
 *   fuse_gelu.c           GELU written out with erf -> nn.gelu
 *   fuse_silu.c           x * sigmoid(x) -> nn.silu
 *   fold_pad_pool.c       a zero nn.pad folded into the avg_pool2d reading it
 *   fold_scale_axis.c     per-channel scales folded into conv/dense weights
 *   cse.c                 merge identical calls
 *   sink_reshape.c        reshapes moved below elementwise ops, chains folded
 *   dce.c                 drop what the outputs do not use
 *   alter_layout.c        conv2d -> NCHW[x]c with transforms at the edges
 *   fold_gate.c           a per-channel gate (x * g) folded into the weights
 *                         of the blocked conv reading it
 *   fake_quant.c          QDQ layers of quantized models -> int8 ops
 *   requantize.c          (called by fake_quant.c) their requantize
 *                         epilogues simplified
 *   alter_layout_gpu.c    on a GPU target: Winograd weights transformed at
 *                         build time (called by pass_alter_layout)
 */
#ifndef KILN_GRAPH_PASSES_H
#define KILN_GRAPH_PASSES_H

#include "../../target/target.h"
#include "../graph.h"

/* What a pass may read besides the graph: the target compiled for and
 * the records (alter_layout asks the target's templates and the dispatch
 * context's records for the blocks). */
typedef struct PassContext {
  const Target *target;      /* never NULL */
  DispatchContext *dispatch; /* where alter_layout's configs come from; never NULL */
  GraphPrecision precision;  /* bf16: alter_layout picks the bfloat16 templates */
} PassContext;

/* n is a call of the op with that id (the fuse_* passes' patterns) */
static inline bool pass_is_op(const GNode *n, OpId id) { return n && n->kind == GN_CALL && n->op->id == id; }

Graph *pass_simplify_inference(Graph *g, const PassContext *pc);
Graph *pass_fold_constant(Graph *g, const PassContext *pc);
Graph *pass_fuse_layer_norm(Graph *g, const PassContext *pc);
Graph *pass_fuse_gelu(Graph *g, const PassContext *pc);
Graph *pass_fuse_silu(Graph *g, const PassContext *pc);
Graph *pass_fold_pad_pool(Graph *g, const PassContext *pc);
Graph *pass_fold_scale_axis(Graph *g, const PassContext *pc);
Graph *pass_cse(Graph *g, const PassContext *pc);
Graph *pass_sink_reshape(Graph *g, const PassContext *pc);
Graph *pass_dce(Graph *g, const PassContext *pc);
Graph *pass_alter_layout(Graph *g, const PassContext *pc);
Graph *pass_fold_gate(Graph *g, const PassContext *pc);
Graph *pass_fake_quantization_to_integer(Graph *g, const PassContext *pc);
/* Whether this CPU runs AVX512-VNNI ($KILN_CPU_NO_VNNI=1: as if not). */
bool graph_cpu_has_vnni(void);
/* The value of a one-element float32 constant (fake_quant.c). */
bool graph_scalar_f32(const GNode *c, float *v);
/* The int8 layers' requantize epilogues simplified (requantize.c). */
Graph *graph_simplify_requantize(Graph *g);
Graph *pass_alter_layout_gpu(Graph *g, const PassContext *pc);

/* ===== eval.c (graph/) ===== */
/* Evaluate one call on constant arguments (used by fold_constant and by
 * the frontend for shape computations). Returns a new kiln array. */
DLTensor *graph_eval_call(GNode *n, GNode **args);
/* The compiled folding kernels of one fold_constant pass over g, built
 * together before it runs (eval.c); a call they lack is built on its own. */
typedef struct FoldKernels FoldKernels;
FoldKernels *graph_fold_kernels_build(Graph *g);
/* The distinct kernels the batch holds (0 when it failed to build). */
int graph_fold_kernels_count(const FoldKernels *fk);
void graph_fold_kernels_free(FoldKernels *fk);
/* Whether fold_constant keeps call n although its arguments are constants:
 * a broadcast (a result of more than FOLD_BROADCAST_ELEMS elements and more
 * than FOLD_BROADCAST_RATIO times its arguments' elements together) is
 * computed in the kernel it fuses into rather than stored in the module:
 * TopK's n x n index comparison is linear in memory that way. */
bool graph_fold_keeps(const GNode *n);
/* graph_eval_call with fk's kernels (fk may be NULL). */
DLTensor *graph_eval_call_in(GNode *n, GNode **args, const FoldKernels *fk);

#endif
