/*
 * x86/conv2d_stream.c - conv2d_NCHWc.x86's "ic_outer" (false/true; not
 * TVM's): a block of output channels computes its whole output at once,
 * the input-channel chunk loop outside the rows, so each weight is read
 * once, in address order.
 *
 * TVM's loop nest computes a register block (a row's columns x the block's
 * output-channel chunks) over the whole reduction, then the next row with
 * the same weights.  On a small output whose weights are large (ResNet's
 * 3x3 512->512 @7: 9.4 MB, 576 KiB for a block of two chunks) the first
 * row of each block waits for its weights from memory, and the other rows
 * reread them from the L2 while the memory bus idles; a prefetch of the
 * next block's weights does not help, as two blocks no longer fit the L2
 * beside the input (prefetch_w: level to slower).  With ic_outer the
 * block's accumulators for all its rows live in a local buffer (7 x 7 x 2
 * chunks of 16 floats: 6 KiB; 25 KiB at 14x14) and the reduction's
 * outermost loop steps the input-channel chunks: each step reads the
 * chunks' weights for one block of input channels (18 KiB for 16
 * channels of a 3x3 window and two chunks), uses them for every row while
 * they sit in the L1, and moves on, so the weights stream from memory in
 * order, at the rate the FMAs consume them, the hardware prefetcher
 * running ahead.  The rows are unrolled: each row's register block
 * (columns x chunks) then has constant indices into the buffer, and the C
 * compiler keeps it in registers over the row's window and channel
 * block, loading and storing it once a step (the partial sums of 16
 * input channels x the window, 144 FMAs a value between a load and a
 * store).  The sums run in the same order as TVM's nest, so the outputs
 * are bitwise the same.
 *
 * In the space of float32 layers at batch 1 with a window larger than
 * 1x1 and "prefetch_w" (weights shared by at most 256 outputs), whose
 * output of a block fits 32 KiB; the fallback sets it where the block's
 * weights exceed 256 KiB (prefetch_w's fallback is then 0) and the layer
 * has at least 8 blocks, so two threads share them evenly.
 *
 * Exports: x86_conv_has_ic_outer, x86_conv_ic_outer_fallback,
 * x86_conv_schedule_ic_outer.
 */
#include "../../knob/knob.h"
#include "../topi.h"

enum {
  IC_OUTER_BUFFER_BYTES = 32 << 10,   /* a block's outputs: the local buffer */
  IC_OUTER_BLOCK_WEIGHTS = 256 << 10, /* past it the fallback streams */
  IC_OUTER_MIN_BLOCKS = 8,            /* blocks of chunks for two threads */
};

/* The fallback's output-channel chunk and chunks a block (as
 * conv2d_NCHWc.x86's fallback takes them at batch 1). */
static void fallback_block(const Target *t, const Conv2DWorkload *c, int64_t *oc_bn, int64_t *occ) {
  *oc_bn = x86_channel_block(c->OC, t->vector_lanes);
  *occ = x86_conv_occ_block(t, 1, c->OC / *oc_bn);
}

bool x86_conv_has_ic_outer(const Target *t, const Conv2DWorkload *c) {
  if (c->N != 1 || c->groups != 1 || c->depthwise || (c->KH == 1 && c->KW == 1) || !x86_conv_prefetch_pays(c))
    return false;
  int64_t oc_bn, occ;
  fallback_block(t, c, &oc_bn, &occ);
  return c->OH * c->OW * occ * oc_bn * 4 <= IC_OUTER_BUFFER_BYTES;
}

bool x86_conv_ic_outer_fallback(const Target *t, const Conv2DWorkload *c) {
  if (!x86_conv_has_ic_outer(t, c)) return false;
  int64_t oc_bn, occ;
  fallback_block(t, c, &oc_bn, &occ);
  int64_t block = occ * oc_bn * c->IC * c->KH * c->KW * dt_bytes(c->dtype);
  return block > IC_OUTER_BLOCK_WEIGHTS && c->OC / (oc_bn * occ) >= IC_OUTER_MIN_BLOCKS;
}

int x86_conv_schedule_ic_outer(const Target *t, Stage *so, Stage *scc, IterVar *n, IterVar *occo, IterVar *occi,
                               IterVar *owi, IterVar *ocb, int64_t reg_n, int64_t oc_bn, bool unroll_kw) {
  /* the output: a parallel loop over the blocks of chunks, the block's
   * whole output computed at it */
  IterVar *f;
  if (stage_fuse(so, n, occo, &f) || stage_parallel(so, f) || stage_unroll(so, owi) ||
      x86_vec_or_unroll(t, so, ocb, oc_bn) || (occi && stage_unroll(so, occi)) || stage_compute_at(scc, so, f))
    return -1;
  /* the block: input-channel chunks outermost, then each row's column
   * blocks over the window and the channel block */
  IterVar *cn = stage_axis(scc, 0), *cocc = stage_axis(scc, 1), *coh = stage_axis(scc, 2), *cow = stage_axis(scc, 3),
          *cocb = stage_axis(scc, 4), *cowo, *cowi;
  IterVar *ric = stage_reduce_axis(scc, 0), *rkh = stage_reduce_axis(scc, 1), *rkw = stage_reduce_axis(scc, 2),
          *ricb = stage_reduce_axis(scc, 3);
  if (stage_split(scc, cow, ir_i32(reg_n), &cowo, &cowi)) return -1;
  if (unroll_kw ? stage_reorder(scc, 10, (IterVar *[]){cn, ric, coh, cowo, rkh, ricb, rkw, cowi, cocc, cocb}) ||
                      stage_unroll(scc, rkw)
                : stage_reorder(scc, 10, (IterVar *[]){cn, ric, coh, cowo, rkh, rkw, ricb, cowi, cocc, cocb}))
    return -1;
  return stage_unroll(scc, coh) || stage_unroll(scc, cowi) || stage_unroll(scc, cocc) ||
                 x86_vec_or_unroll(t, scc, cocb, oc_bn)
             ? -1
             : 0;
}
