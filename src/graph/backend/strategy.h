/*
 * strategy.h - schedule strategies: which tuning task (template) an
 * anchor op uses, with which config (strategy.c); and the dispatch of
 * configs from tuning records (dispatch.c).
 */
#ifndef KILN_GRAPH_OP_STRATEGY_H
#define KILN_GRAPH_OP_STRATEGY_H

#include "../../target/target.h"
#include "../graph.h"

/* ===== strategy.c ===== */

int strategy_conv2d(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
int strategy_dense(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
int strategy_matmul(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* nn.matmul's compute: batch_matmul.x86's when its strategy chose it. */
Tensor *graph_compute_matmul(GNode *n, Tensor **ins, const Strategy *st);
/* The task and config of a conv2d node (any layout); st->task_name NULL
 * when no template covers it.  The config is the one recorded on the node
 * (GNode.config) if any, else chosen from dc's records or the fallback. */
int graph_conv_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* Record st's config on a node alter_layout made (gnode_set_config), for
 * its strategy to read back. */
void graph_record_config(Graph *g, GNode *n, const Strategy *st);
/* A fallback config's input-channel block follows the block its data
 * already has (and, for depthwise, the output block too), so blocked
 * layouts flow from layer to layer without transforms.  A tuned config
 * gives way to the workload's best record with that input block when
 * that one is nearly as fast (graph_dispatch_query_block). */
void graph_conv_follow_block(GNode *n, const Target *t, DispatchContext *dc, Strategy *st, int64_t data_block);
bool graph_conv_is_depthwise(GNode *n);
/* A grouped conv's group count once its output channels are padded to
 * out_channels by whole groups (alter_layout's plan_group_padding): the
 * groups keep their size.  Depthwise and plain convs keep their count. */
int64_t graph_conv_padded_groups(GNode *n, int64_t out_channels);
/* The same for the conv compiled with other channel counts: ch = {input
 * channels, output channels} (alter_layout's channel padding of plain and
 * depthwise convs; a depthwise conv's are equal). */
int graph_conv_config_as(GNode *n, const int64_t *ch, const Target *t, DispatchContext *dc, Strategy *st);
void graph_conv_follow_block_as(GNode *n, const int64_t *ch, const Target *t, DispatchContext *dc, Strategy *st,
                                int64_t data_block);
/* The input channels a plain conv's reduction reads: with ch (the
 * channels alter_layout compiles it with), the node's own count when its
 * input is padded; without, the blocked node's `real_in_channels`
 * attribute (alter_layout's), else all.  conv2d_NCHWc.x86's workload
 * carries it when it is fewer (wl_conv2d_real). */
int64_t graph_conv_real_in(GNode *n, const int64_t *ch);
/* strategy_gpu.c: the CUDA template, workload and config of a conv2d or
 * dense node on a GPU target; st->task_name NULL when none covers it. */
int graph_gpu_strategy(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* A conv/pool attribute of one or two ints as [2] (d when absent), and
 * "padding" of 1, 2 or 4 ints as [top, left, bottom, right]: what the CPU
 * and GPU strategies read from a node. */
void strategy_attr_ints2(GNode *n, const char *key, int d, int out[2]);
void strategy_attr_pads4(GNode *n, int out[4]);
/* The packed task (dense_pack.x86) and config of an nn.dense node with a
 * 2-D float32 weight, as alter_layout packs it; st->task_name NULL when it
 * stays unpacked (not float32 2-D, or a record for dense_nopack.x86 and
 * none for dense_pack.x86). */
int graph_dense_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* The common tail of the CPU strategies: the template named by wl (-1 +
 * error when the table has none), 0 with st cleared when it is not t's
 * (the generic schedule), else st filled with the template, the workload,
 * desc (the profile's task description) and the config graph_task_config
 * gives. */
int graph_task_fill(GNode *n, struct Workload *wl, const char *desc, const Target *t, DispatchContext *dc, Strategy *st);
/* The config a strategy uses for a task: the one recorded on n
 * (GNode.config), else the best of dc's records, else the fallback. */
int graph_task_config(GNode *n, const Target *t, DispatchContext *dc, const struct Template *tm, struct Workload *wl,
                      Strategy *st);
/* strategy_bf16.c (--precision bf16, docs/bf16.md): the task and config
 * of an nn.dense node with a constant float32 [N, K] weight as
 * dense_pack_bf16.x86 (st->task_name NULL when it does not apply), and
 * the strategy of nn.contrib_dense_pack_bf16. */
int graph_dense_bf16_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
int strategy_dense_bf16(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* The task (conv2d_NCHWc_bf16.x86, or conv2d_NCHWc_winograd_bf16.x86 for
 * a layer fp32 runs as Winograd) and config of an nn.conv2d node (groups
 * 1, an even number of input channels; ch: the padded channel counts or
 * NULL) as alter_layout builds it in bfloat16: a bfloat16 record, else the
 * float32 strategy fp32's config (the same knobs; the blocks it chose),
 * else the fallback; st->task_name NULL when it does not apply, and when
 * fp32 is the Winograd task and float32 Winograd stays (by the records,
 * else by the target's VDPBF16PS rate against the tasks' estimated gains;
 * strategy_bf16.c).  And the strategy of nn.contrib_conv2d_NCHWc_bf16. */
int graph_conv_bf16_config(GNode *n, const int64_t *ch, const Strategy *fp32, const Target *t, DispatchContext *dc,
                           Strategy *st);
int strategy_conv2d_bf16(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* Whether a plain conv with an odd number of input channels (an RGB
 * stem) does enough work per input value to gain from running in
 * bfloat16 with a zero channel added (strategy_bf16.c). */
bool graph_conv_bf16_pad_pays(const GNode *n);
/* The strategy of nn.contrib_conv2d_winograd_NCHWc_bf16, and its task's
 * name (graph_conv_bf16_config gives it to a layer float32 runs as
 * Winograd where the target's VDPBF16PS rate makes it the fastest). */
int strategy_conv2d_winograd_bf16(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
#define GRAPH_WINOGRAD_BF16_TASK "conv2d_NCHWc_winograd_bf16.x86"
/* strategy_int8.c (quantized models, docs/int8.md): the task
 * (dense_vnni.x86) and config of an M x K by N x K uint8 x int8 dense layer
 * (n: the node whose recorded config to use, or the node being replaced;
 * st->task_name NULL when the target has no such template), and the
 * strategy of nn.contrib_dense_vnni. */
int graph_dense_vnni_config(GNode *n, int64_t M, int64_t N, int64_t K, const Target *t, DispatchContext *dc, Strategy *st);
int strategy_dense_vnni(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* The task (conv2d_NCHWc_int8.x86) and config of an nn.contrib_conv2d_int8
 * node (uint8 NCHW data, int8 OIHW kernel; st->task_name NULL when the
 * target has no such template; the fallback fails for input channels that
 * are not a multiple of 4), and the strategy of nn.contrib_conv2d_NCHWc_int8. */
int graph_conv_int8_config(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
int strategy_conv2d_int8(GNode *n, const Target *t, DispatchContext *dc, Strategy *st);
/* Whether Winograd may be chosen: $KILN_WINOGRAD is not "0". */
bool graph_winograd_enabled(void);
/* The Winograd tuning task's name. */
#define GRAPH_WINOGRAD_TASK "conv2d_NCHWc_winograd.x86"
Tensor *graph_compute_dense(GNode *n, Tensor **ins, const Strategy *st);

/* ===== dispatch.c: ApplyHistoryBest ===== */

/* The records and settings configs are chosen from (see dispatch.c); made
 * by whoever compiles and passed down explicitly.  A new context uses the
 * shipped records and warns about fallbacks. */
DispatchContext *dispatch_context_new(void);
void dispatch_context_free(DispatchContext *dc);
/* The best config for a workload from the context's records, if any:
 * 0 with *cfg NULL when none applies; *source is "FILE:LINE" (the file's
 * name) for the user's records, "shipped" for Kiln's. */
int graph_dispatch_query(DispatchContext *dc, const Target *t, struct Workload *wl, struct ConfigEntity **cfg,
                         const char **source);
/* The best record of the workload whose input-channel block (tile_ic)
 * is `block`, when it is slower than the best record by less than a
 * layout transform of the data would cost (its bytes at 2.5 GB/s), from
 * the same source the plain query uses: what a conv whose data arrives in
 * that block takes instead of the best (a greedy, per-edge stand-in for
 * TVM's graph tuner).  0 with *cfg NULL when there is none. */
int graph_dispatch_query_block(DispatchContext *dc, const Target *t, struct Workload *wl, int64_t block,
                               struct ConfigEntity **cfg, const char **source);
/* The cost in seconds of the workload's best record (the user's records
 * first, then the shipped ones; *user says which), INFINITY if none. */
/* A workload without a record of its own takes the nearest record of the
 * same template (TVM's fallback_with_reference_log, the reference being
 * each other workload's best user record): the one whose split knobs'
 * extents share the most divisors with this workload's, its tiling
 * mimicked (inner parts bounded by the record's, as TVM's fallback_split)
 * and its other knobs copied.  *cfg NULL when no record of the template
 * fits; *source "nearest FILE:LINE". */
int graph_dispatch_nearest(DispatchContext *dc, const Target *t, const struct Template *tm, struct Workload *wl,
                           struct ConfigEntity **cfg, const char **source);
double graph_dispatch_best_cost(DispatchContext *dc, const Target *t, struct Workload *wl, bool *user);
/* One warning per workload and context that falls back to the heuristic
 * config (on stderr, unless quiet). */
void graph_dispatch_note_fallback(DispatchContext *dc, const Target *t, struct Workload *wl);
/* Use a record file (kiln compile --tuning-records; several may be
 * added): -1 + "path:line: reason" if it cannot be read or parsed. */
int graph_dispatch_add_records(DispatchContext *dc, const char *path);
/* Whether the records Kiln ships for the target's ISA class are used
 * (default yes), and the file they come from (NULL if none is found or
 * off). */
void graph_dispatch_use_shipped(DispatchContext *dc, bool on);
const char *graph_dispatch_shipped_file(DispatchContext *dc, const Target *t);
/* Silence the fallback warnings; returns the previous setting. */
bool graph_dispatch_set_quiet(DispatchContext *dc, bool quiet);
/* Forget the records, the warnings given and the settings. */
void graph_dispatch_reset(DispatchContext *dc);

#endif
