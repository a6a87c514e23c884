/*
 * cuda/schedule.c - the generic GPU schedule: every operator of a model on
 * a GPU target (cuda or opencl, as TVM's cuda schedules serve both) before
 * tuned GPU templates exist.
 *
 * One kernel per fused function.  Injective stages are inlined into their
 * consumers; the output's axes are fused into one and split over blocks of
 * `threads` threads (blockIdx.x, threadIdx.x), one output element per
 * thread.  A reduction inside the function (conv2d, dense, pooling, the
 * max and sum of softmax) is computed by the thread that needs it, in
 * local memory, at the thread loop (TVM's schedule_injective with its
 * reductions computed at the output); a reduction that is the output
 * itself keeps its reduce loops inside the thread.  Untuned, but it runs
 * every model and is the reference the tuned templates are checked
 * against.
 */
#include "../topi.h"

#include <string.h>

int topi_schedule_gpu_generic(Schedule *s, Tensor *out, int threads) {
  if (threads <= 0) threads = 256;
  Stage *os = sch_stage(s, out);
  if (!os) return -1;
  if (os->op->kind != TE_COMPUTE)
    return kiln_set_error("GPU schedule: output '%s' is not a compute (an extern op has no GPU schedule)", out->name);
  if (os->op->ndim == 0)
    return kiln_set_error("GPU schedule: output '%s' is a scalar; a 0-d output has no GPU schedule yet", out->name);
  AVec reduces = {0};
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (st == os || st->op->kind == TE_PLACEHOLDER) continue;
    if (st->op->kind == TE_EXTERN)
      return kiln_set_error("GPU schedule: '%s' is an extern op, which has no GPU schedule", st->op->name);
    if (st->op->nreduce == 0) {
      if (stage_compute_inline(st)) return -1;
    } else {
      av_push(&reduces, st);
    }
  }
  IterVar *fused = os->op->axis[0];
  for (int d = 1; d < os->op->ndim; d++)
    if (stage_fuse(os, fused, os->op->axis[d], &fused)) return -1;
  IterVar *bx, *tx;
  if (stage_split(os, fused, ir_i32(threads), &bx, &tx) || stage_bind(os, bx, "blockIdx.x") ||
      stage_bind(os, tx, "threadIdx.x"))
    return -1;
  for (int i = 0; i < reduces.len; i++) {
    Stage *st = reduces.data[i];
    st->scope = "local";
    if (stage_compute_at(st, os, tx)) return -1;
  }
  return 0;
}
