/*
 * alter_layout.c - convolutions to NCHW[x]c, transforms only at the edges.
 *
 * Every conv2d that an x86 template covers becomes
 * nn.contrib_conv2d_NCHWc (or the depthwise one) with the channel blocks
 * its config chooses (tile_ic and tile_oc's inner parts); the config is
 * recorded on the new node (GNode.config), and the build schedules it with
 * that config rather than choosing again; its weight gets a layout_transform to
 * OIHW[x]i[y]o that fold_constant evaluates at compile time.  A conv that
 * takes the Winograd template (backend/strategy.c says which) becomes
 * nn.contrib_conv2d_winograd_NCHWc instead, its weight the kernel
 * transform nn.contrib_conv2d_winograd_weight_transform (also folded).
 * A dense layer with a constant weight becomes nn.contrib_dense_pack
 * (dense_pack.x86), its weight packed to [N/bn, K, bn] by a folded
 * layout_transform (TVM's dense_pack with a pre-packed weight).  With
 * --precision bf16 (docs/bf16.md) dense layers become
 * nn.contrib_dense_pack_bf16 and plain convolutions with an even channel
 * count (an odd one padded with a zero channel where that pays:
 * bf16_pair_channels) nn.contrib_conv2d_NCHWc_bf16, their weights rounded
 * to bfloat16 pairs by folded pack ops; the data stays float32 NCHW[x]c.  The int8
 * convs of a quantized model (nn.contrib_conv2d_int8, made by
 * fake_quantization_to_integer) become nn.contrib_conv2d_NCHWc_int8, their
 * uint8 input blocked, their int8 kernels packed by a folded op.
 *
 * The blocked layout then flows forward through what can work on it
 * unchanged: elementwise ops, broadcasts whose other operand is a
 * per-channel constant (reshaped to [1, C/b, 1, 1, b]) or another blocked
 * tensor, pooling (its layout attribute becomes NCHW[b]c; a mean over
 * the rows and columns becomes a global average pooling), padding of the
 * rows and columns only, and channel concatenation.  A broadcast over an
 * NCHW feature map that a conv already reads blocked reads the blocked
 * copy, so the layout flows on from there too.  Anything else gets
 * its blocked inputs transformed back to NCHW, and so do the graph's
 * outputs.  A transform of a transform's
 * result back to its source layout is cancelled, and each tensor is
 * transformed to a given layout at most once.
 *
 * Channel padding.  A channel count with no good block (ShuffleNet's 58,
 * 116, 232; MobileNetV3's 72, 120, 200: blocks of 2 to 8 lanes where the
 * vector has 16; MnasNet's and EfficientNet's 24 and 40: 8-lane blocks) is
 * padded up to a multiple of the vector width when the padded work costs
 * less than the small blocks' (pad_channels): a plain conv's output channels (its
 * weight gets zero rows), and the channels of a conv or depthwise conv
 * whose NCHW input is padded on the way in (zero weight columns; a
 * depthwise conv's channels and groups grow together).  The conv is then
 * compiled, and tuned, as the padded conv.  A padded tensor carries its
 * real channel count (Alt.real); the padded channels hold values that are
 * never read into a real one - convolutions multiply them by zero weights,
 * and only ops that keep them finite and per-channel (PAD_SAFE_OPS,
 * per-channel constants padded with zeros, pooling) flow through padded.
 * A plain conv reading a padded tensor reduces over its real channels
 * only (the node's `real_in_channels`, carried into conv2d_NCHWc.x86's
 * workload and compute): MnasNet's expand convs reading 24 of 32
 * channels did 1.33x their work.
 * Everything else, and every graph output, sees the tensor cropped back to
 * NCHW with its real channels (layout_transform then nn.pad with a
 * negative end).  The same for a batched MatMul's columns (convert_matmul:
 * attention's Q K^T over 197 or 49 tokens gets zero columns in K^T up to
 * a multiple of the vector width, and the product is cropped).
 * $KILN_CHANNEL_PAD=0 turns padding off.
 *
 * Padded groups.  A grouped conv whose config sets group_pad
 * (group_conv2d_NCHWc.x86: a group of 24 output channels computed as 32
 * in whole vectors) gets its weight's rows padded per group with zeros
 * (reshape, nn.pad, reshape: folded) and packed in full-vector output
 * blocks; the node keeps the real channels in blocks of tile_oc, and its
 * `kept_channels` attribute says how many (infer_conv2d), so nothing after it
 * sees the padding.  A grouped conv whose config pairs its groups
 * (group_pair: two groups of 24 in three 16-lane vectors) likewise keeps
 * the real channels in blocks of tile_oc; its weight, an odd group count's
 * with a zero group added (folded), is packed in full-vector output blocks,
 * and it carries a `group_pair` attribute (the strategy's compute).  A grouped conv whose input block divides its
 * producer's reads the producer's tensor, padded or not, in place
 * (reads_in_place: no layout_transform in front; its data_layout is the
 * producer's, its kernel's input block its own).  A grouped conv whose
 * config packs its groups side by side (group_pack: groups of 4 or 8
 * channels, several to an output vector) takes its data in blocks of
 * vector CPG / KPG channels (the producer's 16 for equal in and out
 * channels a group, read in place) and writes whole vectors, and carries
 * a `group_pack` attribute (the strategy's compute dispatches on it); where
 * such a conv's channels are not whole vectors it is padded by whole groups
 * (plan_group_padding: 104 channels in 13 groups of 8 -> 112 in 14).
 */
#include <stdlib.h>
#include <string.h>

#include "../../knob/knob.h"
#include "../../topi/topi.h"
#include "../backend/strategy.h"
#include "passes.h"

typedef struct Alt {
  PtrMap blk;       /* new node -> block + 1 (absent: plain NCHW or not a feature map) */
  PtrMap real;      /* padded new node -> its real channel count + 1 (absent: not padded) */
  PtrMap cache;     /* (node, block) key -> transformed node */
  PtrMap origin;    /* transform node -> its input (for cancelling) */
  PtrMap origin_blk; /* transform node -> its input's block + 1 */
  PtrMap copy;      /* NCHW node -> its first blocked copy (to_layout) */
  int failed;
  const Target *target; /* whose templates and records choose the blocks */
  GraphPrecision precision; /* bf16: dense layers take dense_pack_bf16.x86 */
  DispatchContext *dispatch; /* the records */
} Alt;

static int blk_of(Alt *a, GNode *n) {
  intptr_t v = (intptr_t)pm_get(&a->blk, n);
  return v ? (int)v - 1 : 0;
}

static void set_blk(Alt *a, GNode *n, int b) {
  if (n && b > 0) pm_put(&a->blk, n, (void *)(intptr_t)(b + 1));
}

static const char *layout_name(int b) { return b > 0 ? kfmt("NCHW%dc", b) : "NCHW"; }

/* The channels a feature map holds (padded ones included), and its real
 * ones. */
static int64_t chans_of(Alt *a, GNode *x) {
  const TType *t = &x->type;
  return blk_of(a, x) > 0 && t->ndim == 5 ? t->shape[1] * t->shape[4] : t->ndim >= 2 ? t->shape[1] : 0;
}

static int64_t real_of(Alt *a, GNode *x) {
  intptr_t v = (intptr_t)pm_get(&a->real, x);
  return v ? (int64_t)v - 1 : chans_of(a, x);
}

static void set_real(Alt *a, GNode *n, int64_t real) {
  if (n && real < chans_of(a, n)) pm_put(&a->real, n, (void *)(intptr_t)(real + 1));
}

static bool is_padded(Alt *a, GNode *x) { return pm_get(&a->real, x) != NULL; }

/* Channel padding on or off ($KILN_CHANNEL_PAD=0: off). */
static bool channel_pad_enabled(void) {
  const char *e = getenv("KILN_CHANNEL_PAD");
  return !(e && !strcmp(e, "0"));
}

/* The channel count c is compiled with: c rounded up to a multiple of the
 * vector width when c has no block of a full vector and the padded count
 * costs less than the small block.  A count whose largest power-of-two
 * block b (at most a vector) is below the vector width runs its kernels on
 * b-lane vectors, at about b / lanes of the full-vector speed; the padded
 * count cp runs at full width but does cp / c of the work, and so do the
 * kernels that read the padded tensor (the next conv's reduction, adds,
 * pooling).  So pad when cp / c <= 2/3 * lanes / b: with 16 lanes, 24 -> 32
 * and 40 -> 48 (8-lane blocks; bench_conv2d's "mobile." layers, 1 thread:
 * 80->24 at 56x56 85 GFLOP/s, 80->32 174; 240->40 at 28x28 67, 240->48
 * 175, while the 1x1 reading 32 instead of 24 channels does 1.33x the
 * work at the same speed), 58 -> 64, 116 -> 128, 200 -> 208 (blocks of 2, 4
 * and 8); 17 or 20 -> 32.  $KILN_CHANNEL_PAD=0: no padding. */
static int64_t pad_channels(const Alt *a, int64_t c) {
  int64_t lanes = a->target ? a->target->vector_lanes : 0;
  if (!channel_pad_enabled() || lanes < 4 || c < lanes || c % lanes == 0) return c;
  int64_t cp = (c + lanes - 1) / lanes * lanes, b = c & -c;
  if (b > lanes) b = lanes;
  return cp * b * 3 <= c * lanes * 2 ? cp : c;
}

/* x padded along an axis (or cropped, by < 0) at the end: nn.pad. */
static GNode *pad_axis(Graph *ng, GNode *x, int axis, int64_t by, double value) {
  int nd = x->type.ndim;
  int64_t p[16] = {0};
  p[nd + axis] = by;
  GAttrs at = gattrs_new();
  ga_ints(&at, "pads", 2 * nd, p);
  if (value != 0) ga_float(&at, "pad_value", value);
  return graph_call(ng, "nn.pad", 1, &x, at, NULL);
}

/* x (a feature map in block bx, 0 = NCHW, with cx channels of which rx
 * are real) in block b with cp channels (cp >= rx; cp = rx: unpadded). */
static GNode *to_layout(Graph *ng, Alt *a, GNode *x, int b, int64_t cp) {
  int bx = blk_of(a, x);
  int64_t cx = chans_of(a, x), rx = real_of(a, x);
  if (bx == b && cx == cp) return x;
  GNode *src = pm_get(&a->origin, x);
  if (src && (int)(intptr_t)pm_get(&a->origin_blk, x) - 1 == b && chans_of(a, src) == cp)
    return src; /* cancel a back-to-back pair */
  const char *key = kfmt("%p/%d/%lld", (void *)x, b, (long long)cp);
  GNode *c = pm_get(&a->cache, key);
  if (c) return c;
  GNode *t = x;
  int bt = bx;
  if (cx != cp) { /* through NCHW, where the channels are padded or cropped */
    if (bt > 0) {
      GAttrs at = gattrs_new();
      ga_str(&at, "src_layout", layout_name(bt));
      ga_str(&at, "dst_layout", "NCHW");
      if (!(t = graph_call(ng, "layout_transform", 1, &t, at, NULL))) return NULL;
      bt = 0;
    }
    if (!(t = pad_axis(ng, t, 1, cp - cx, 0))) return NULL;
  }
  if (bt != b) {
    GAttrs at = gattrs_new();
    ga_str(&at, "src_layout", layout_name(bt));
    ga_str(&at, "dst_layout", layout_name(b));
    if (!(t = graph_call(ng, "layout_transform", 1, &t, at, NULL))) return NULL;
  }
  set_blk(a, t, b);
  set_real(a, t, rx);
  pm_put(&a->cache, key, t);
  if (bx == 0 && b > 0 && cx == cp && !pm_get(&a->copy, x)) pm_put(&a->copy, x, t);
  pm_put(&a->origin, t, x);
  pm_put(&a->origin_blk, t, (void *)(intptr_t)(bx + 1));
  return t;
}

/* x in block b with its real channels (a padded x is cropped). */
static GNode *to_block(Graph *ng, Alt *a, GNode *x, int b) { return to_layout(ng, a, x, b, real_of(a, x)); }

static GNode *to_nchw(Graph *ng, Alt *a, GNode *x) { return to_block(ng, a, x, 0); }

/* A per-channel operand of an NCHW result with C channels: shape [C,1,1],
 * [1,C,1,1] (or a scalar).  Returns C, 1 for scalars, 0 otherwise. */
static int64_t per_channel(const TType *t, int64_t C) {
  if (ttype_numel(t) == 1) return 1;
  if (t->ndim < 3 || t->ndim > 4) return 0;
  int c_axis = t->ndim - 3;
  for (int i = 0; i < t->ndim; i++)
    if (i != c_axis && t->shape[i] != 1) return 0;
  return t->shape[c_axis] == C ? C : 0;
}

static GNode *reshape_to(Graph *ng, GNode *x, int n, const int64_t *s) {
  GAttrs at = gattrs_new();
  ga_ints(&at, "newshape", n, s);
  return graph_call(ng, "reshape", 1, &x, at, NULL);
}

/* Whether old (a mean) reduces exactly axes 2 and 3 of a 4-D tensor. */
static bool is_spatial_mean(const GNode *old) {
  const int64_t *ax;
  int k = gattr_ints(&old->attrs, "axis", &ax);
  if (old->args[0]->type.ndim != 4 || k != 2 || gattr_int(&old->attrs, "exclude", 0)) return false;
  int m = 0;
  for (int i = 0; i < k; i++) m |= 1 << ((ax[i] + 4) % 4);
  return m == (1 << 2 | 1 << 3);
}

static bool is_binary_bcast(const GNode *old) { return (old->op->flags & OPF_BLOCKED_BROADCAST) != 0; }

/* Ops a padded tensor flows through (their rows' OPF_PAD_SAFE): per-channel,
 * and finite on finite values (so the padded channels, multiplied by zero
 * weights later, never leak a NaN or an infinity into real ones).  Binary
 * ones pad their per-channel operand with zeros.  Pooling is handled
 * apart. */
static bool pad_safe(const GNode *old) { return (old->op->flags & OPF_PAD_SAFE) != 0; }

/* A grouped conv whose groups are fewer channels than a vector (what
 * group_conv2d.c's group_pack packs side by side) but whose channels are
 * not whole vectors (RegNetY's 104 and 440: 13 and 55 groups of 8) is
 * compiled with whole groups added: 112 channels, 14 groups, the extra
 * group's weights zero, reading the input's padded channels (its producer
 * pads 104 to 112 too).  ch as plan_padding's; false where the padding of
 * input and output is not the same whole number of groups. */
static bool plan_group_padding(Alt *a, GNode *old, GNode *x, int64_t ch[2]) {
  int64_t C = old->args[0]->type.shape[1], O = old->args[1]->type.shape[0], groups = gattr_int(&old->attrs, "groups", 1);
  int64_t lanes = a->target ? a->target->vector_lanes : 0, cpg = C / groups, kpg = O / groups;
  if (graph_conv_is_depthwise(old) || kpg >= lanes || cpg > kpg) return false;
  int64_t in = is_padded(a, x) ? chans_of(a, x) : blk_of(a, x) == 0 ? pad_channels(a, C) : C, out = pad_channels(a, O);
  if (out == O || (out - O) % kpg || in - C != (out - O) / kpg * cpg) return false;
  ch[0] = in, ch[1] = out;
  return true;
}

/* The channels a plain or depthwise (multiplier 1) conv is compiled with
 * (ch = {in, out}): a padded input keeps its padding; an NCHW input is
 * padded when its count has no good block; a plain conv's output channels
 * are padded likewise, a depthwise conv's follow its input.  False when
 * nothing is padded. */
static bool plan_padding(Alt *a, GNode *old, GNode *x, int64_t ch[2]) {
  const TType *kt = &old->args[1]->type;
  int64_t C = old->args[0]->type.shape[1], O = kt->shape[0], groups = gattr_int(&old->attrs, "groups", 1);
  bool dw = graph_conv_is_depthwise(old) && O == C;
  if (groups != 1 && !dw) return plan_group_padding(a, old, x, ch);
  int64_t in = is_padded(a, x) ? chans_of(a, x) : blk_of(a, x) == 0 ? pad_channels(a, C) : C;
  ch[0] = in;
  ch[1] = dw ? in : pad_channels(a, O);
  return ch[0] != C || ch[1] != O;
}

/* The padded output channels a group of a grouped conv computes with
 * (its config's group_pad: group_conv2d_NCHWc.x86 computes a group of 24
 * output channels as 32, in whole vectors, and keeps the real ones), or 0. */
static int64_t group_pad_channels(const Alt *a, GNode *old, const Strategy *st) {
  int64_t groups = gattr_int(&old->attrs, "groups", 1);
  if (groups < 2 || graph_conv_is_depthwise(old) || !a->target) return 0;
  return topi_x86_group_conv_padded(a->target, old->args[1]->type.shape[0], groups, st->config);
}

/* The vector width when the config packs a grouped conv's groups side by
 * side in whole vectors (group_conv2d_NCHWc.x86's group_pack: ResNeXt's
 * groups of 4, four to a 16-lane output block, the data in blocks of
 * 16 CPG / KPG channels), or 0. */
static int64_t group_pack_lanes(const Alt *a, GNode *old, int64_t C, int64_t O, int64_t groups, const Strategy *st) {
  if (groups < 2 || graph_conv_is_depthwise(old) || !a->target || st->tmpl != &topi_x86_group_conv2d_NCHWc_template)
    return 0;
  return topi_x86_group_conv_packed(a->target, C, O, groups, st->config);
}

/* The vector width when the config computes a grouped conv's groups in
 * pairs of whole vectors (group_conv2d_NCHWc.x86's group_pair: RegNetX's
 * groups of 24, two in three 16-lane chunks; an odd count gets a zero
 * group), or 0. */
static int64_t group_pair_lanes(const Alt *a, GNode *old, int64_t O, int64_t groups, const Strategy *st) {
  if (groups < 2 || graph_conv_is_depthwise(old) || !a->target || st->tmpl != &topi_x86_group_conv2d_NCHWc_template)
    return 0;
  return topi_x86_group_conv_paired(a->target, O, groups, st->config);
}

/* A grouped conv reads x (blocked, maybe padded) in place when its input
 * block divides x's and its schedule folds the repack into the padded
 * input it copies anyway (group_conv2d_NCHWc.x86): RegNetX's and RegNetY's
 * grouped convs then need no layout_transform (and no crop of the padded
 * channels) in front. */
static bool reads_in_place(Alt *a, GNode *old, GNode *x, int64_t icb, const Strategy *st) {
  int64_t groups = gattr_int(&old->attrs, "groups", 1), bx = blk_of(a, x);
  const TType *kt = &old->args[1]->type;
  if (groups < 2 || graph_conv_is_depthwise(old) || bx <= 0 || !st->tmpl ||
      st->tmpl != &topi_x86_group_conv2d_NCHWc_template)
    return false;
  int64_t C = old->args[0]->type.shape[1];
  return real_of(a, x) == C && chans_of(a, x) - C < bx &&
         topi_x86_group_conv_reads_block(kt->shape[2], kt->shape[3], icb, bx, st->config);
}

/* The float32 config of a conv compiled with the channels ch (NULL: its
 * own), its block following the input's. */
static int conv_config(Alt *a, GNode *old, GNode *x, const int64_t *ch, Strategy *st) {
  if (graph_conv_config_as(old, ch, a->target, a->dispatch, st)) return -1;
  if (st->task_name) graph_conv_follow_block_as(old, ch, a->target, a->dispatch, st, blk_of(a, x));
  return 0;
}

/* --precision bf16: a plain conv with an odd number of input channels (an
 * RGB stem's 3) gets one zero channel more, so they pair into bfloat16
 * words (a zero input channel under zero weights), where the bfloat16
 * strategy then takes the layer in the vdpbf16ps form, if it does enough
 * work per input value to pay for the padding (graph_conv_bf16_pad_pays).
 * In the fma form (a CPU whose VDPBF16PS is slower than its FMAs, or a
 * record that says so) the zero channel is a third more FMAs and buys
 * nothing, so the layer stays float32: ResNet-18's 7x7/2 3->64 @224 on
 * the Xeon (docs/bf16.md), 1 thread, per-node medians of 8 alternating
 * profiles, float32 / bfloat16 fma form 1743 / 2564 us, and the ops
 * without a task (the input's blocking, the pool) 373 / 506 us (load 2).
 * Sets ch and *sb: 1 if so, 0 if not, -1 on error. */
static int bf16_pair_channels(Alt *a, GNode *old, GNode *x, bool padded, int64_t ch[2], Strategy *sb) {
  int64_t in = padded ? ch[0] : old->args[0]->type.shape[1], p[2] = {in + 1, padded ? ch[1] : old->args[1]->type.shape[0]};
  if (in % 2 == 0 || gattr_int(&old->attrs, "groups", 1) != 1 || !graph_conv_bf16_pad_pays(old)) return 0;
  Strategy f;
  if (conv_config(a, old, x, p, &f)) return -1;
  if (!f.task_name) return 0;
  if (graph_conv_bf16_config(old, p, &f, a->target, a->dispatch, sb)) return -1;
  if (!sb->task_name || topi_x86_conv_bf16_dot_is_fma(sb->config) != 0) {
    kiln_clear_error();
    memset(sb, 0, sizeof *sb);
    return 0;
  }
  ch[0] = p[0], ch[1] = p[1];
  return 1;
}

static GNode *convert_conv(Graph *ng, Alt *a, GNode *old, GNode **args) {
  if (old->args[0]->type.ndim != 4 || args[1]->kind != GN_CONST) return GRAPH_KEEP;
  int64_t ch[2];
  bool padded = plan_padding(a, old, args[0], ch);
  Strategy st;
  if (conv_config(a, old, args[0], padded ? ch : NULL, &st)) return NULL;
  if (!st.task_name) return GRAPH_KEEP;
  bool dw = graph_conv_is_depthwise(old), bf16 = false;
  if (a->precision == GRAPH_PRECISION_BF16 && !dw) { /* docs/bf16.md */
    Strategy sb;
    if (graph_conv_bf16_config(old, padded ? ch : NULL, &st, a->target, a->dispatch, &sb)) return NULL;
    int r = sb.task_name ? 0 : bf16_pair_channels(a, old, args[0], padded, ch, &sb);
    if (r < 0) return NULL;
    if (r) padded = true;
    if (sb.task_name) st = sb, bf16 = true;
  }
  int64_t icb = cfg_split_inner(st.config, "tile_ic"), ocb = cfg_split_inner(st.config, "tile_oc");
  if (icb <= 0 || ocb <= 0) return NULL;
  int64_t C = old->args[0]->type.shape[1], O = old->args[1]->type.shape[0], groups = gattr_int(&old->attrs, "groups", 1);
  int64_t gp = padded ? graph_conv_padded_groups(old, ch[1]) : groups; /* padded by whole groups */
  int64_t pack = group_pack_lanes(a, old, padded ? ch[0] : C, padded ? ch[1] : O, gp, &st), db = pack ? pack * C / O : 0;
  if (pack) ocb = pack; /* group_pack: whole vectors of groups out, data blocks of db in */
  int64_t pair = pack || bf16 || padded ? 0 : group_pair_lanes(a, old, O, groups, &st);
  bool in_place = pack ? blk_of(a, args[0]) == db && real_of(a, args[0]) == C : reads_in_place(a, old, args[0], icb, &st);
  GNode *data = in_place ? args[0] : to_layout(ng, a, args[0], (int)(pack ? db : icb), padded ? ch[0] : C);
  int64_t dblk = in_place ? blk_of(a, data) : pack ? db : icb;
  GNode *w = args[1];
  GAttrs at = gattrs_copy(&old->attrs);
  if (pack) ga_int(&at, "group_pack", 1); /* the compute the strategy picks (strategy.c) */
  if (pair) ga_int(&at, "group_pair", 1);
  if (padded) { /* zero weights for the padded channels (folded) */
    if (ch[1] > O && !(w = pad_axis(ng, w, 0, ch[1] - O, 0))) return NULL;
    if (!dw && groups == 1 && ch[0] > C && !(w = pad_axis(ng, w, 1, ch[0] - C, 0))) return NULL;
    if (dw) ga_int(&at, "groups", ch[0]);
    else if (groups > 1) ga_int(&at, "groups", gp); /* the added groups' weights are zero */
  }
  GNode *r;
  if (st.tmpl == &topi_x86_conv2d_winograd_NCHWc_template) {
    /* the kernel transform U = G g G^T, folded at compile time */
    Conv2DWorkload cw; /* the task's shapes: the template's tile size */
    if (wl_conv2d_parse(st.wl, &cw)) return NULL;
    int64_t m = topi_x86_winograd_tile_size(cw.IC, cw.OC, cw.OH, cw.OW);
    GAttrs wt = gattrs_new();
    ga_int(&wt, "tile_size", m);
    ga_int(&wt, "out_block", ocb);
    GNode *u = graph_call(ng, "nn.contrib_conv2d_winograd_weight_transform", 1, &w, wt, NULL);
    if (!data || !u) return NULL;
    ga_str(&at, "data_layout", layout_name((int)icb));
    ga_str(&at, "out_layout", layout_name((int)ocb));
    ga_int(&at, "tile_size", m);
    r = graph_call(ng, "nn.contrib_conv2d_winograd_NCHWc", 2, (GNode *[]){data, u}, at, old->name);
  } else if (bf16) {
    /* the kernel rounded to bfloat16 pairs of input channels (folded; for
     * bfloat16 Winograd, after its transform) */
    bool wino = st.tmpl == &topi_x86_conv2d_winograd_NCHWc_bf16_template;
    GAttrs kt = gattrs_new();
    ga_int(&kt, "ic_block", icb);
    ga_int(&kt, "oc_block", ocb);
    GNode *kw = graph_call(ng, wino ? "nn.contrib_conv2d_winograd_bf16_weight_transform" : "nn.contrib_conv2d_bf16_weight_pack",
                           1, &w, kt, NULL);
    if (!data || !kw) return NULL;
    ga_str(&at, "data_layout", layout_name((int)icb));
    ga_str(&at, "out_layout", layout_name((int)ocb));
    r = graph_call(ng, wino ? "nn.contrib_conv2d_winograd_NCHWc_bf16" : "nn.contrib_conv2d_NCHWc_bf16", 2,
                   (GNode *[]){data, kw}, at, old->name);
  } else {
    GAttrs kt = gattrs_new();
    ga_str(&kt, "src_layout", "OIHW");
    int64_t kb = pair ? pair : ocb, kpgp = pair ? 0 : group_pad_channels(a, old, &st);
    /* group_pair: an odd group count's weight gets a zero group (folded);
     * the node keeps the real channels in blocks of tile_oc */
    int64_t rows = pair ? (groups + 1) / 2 * 2 * (O / groups) : O;
    if (rows > O && !(w = pad_axis(ng, w, 0, rows - O, 0))) return NULL;
    if (pair) ga_int(&at, "kept_channels", O);
    if (kpgp) { /* group_pad: each group's weight rows padded with zeros to kpgp (folded) */
      int64_t kpg = O / groups;
      const TType *wt = &old->args[1]->type;
      int64_t per = wt->shape[1] * wt->shape[2] * wt->shape[3];
      if (!(w = reshape_to(ng, w, 3, (int64_t[]){groups, kpg, per})) || !(w = pad_axis(ng, w, 1, kpgp - kpg, 0)) ||
          !(w = reshape_to(ng, w, 4, (int64_t[]){groups * kpgp, wt->shape[1], wt->shape[2], wt->shape[3]})))
        return NULL;
      kb = a->target->vector_lanes;
      ga_int(&at, "kept_channels", O);
    }
    /* a padded input's zero channels are left out of the reduction */
    if (padded && !dw && groups == 1 && ch[0] > C) ga_int(&at, "real_in_channels", C);
    const char *klayout =
        dw ? kfmt("OIHW1i%lldo", (long long)ocb) : kfmt("OIHW%lldi%lldo", (long long)icb, (long long)kb);
    ga_str(&kt, "dst_layout", klayout);
    GNode *kw = graph_call(ng, "layout_transform", 1, &w, kt, NULL);
    if (!data || !kw) return NULL;
    ga_str(&at, "data_layout", layout_name((int)dblk));
    ga_str(&at, "kernel_layout", klayout);
    ga_str(&at, "out_layout", layout_name((int)ocb));
    GNode *cargs[2] = {data, kw};
    r = graph_call(ng, dw ? "nn.contrib_depthwise_conv2d_NCHWc" : "nn.contrib_conv2d_NCHWc", 2, cargs, at, old->name);
  }
  if (!r) return NULL;
  graph_record_config(ng, r, &st);
  set_blk(a, r, (int)ocb);
  set_real(a, r, O);
  return r;
}

/* nn.contrib_conv2d_int8 (fake_quantization_to_integer's int8 conv, uint8
 * NCHW in) -> nn.contrib_conv2d_NCHWc_int8 with the blocks of its config
 * (conv2d_NCHWc_int8.x86; tile_ic a multiple of 4), the uint8 input
 * blocked like any feature map and the int8 kernel packed to quadruples of
 * input channels by a folded nn.contrib_conv2d_int8_weight_pack; the
 * float32 result is NCHW[ocb]c, so the requantize chain after it (and the
 * uint8 tensor it writes) stays blocked (docs/int8.md). */
static GNode *convert_conv_int8(Graph *ng, Alt *a, GNode *old, GNode **args) {
  if (args[1]->kind != GN_CONST) return GRAPH_KEEP;
  Strategy st;
  if (graph_conv_int8_config(old, a->target, a->dispatch, &st)) return NULL;
  if (!st.task_name) return GRAPH_KEEP;
  int64_t icb = cfg_split_inner(st.config, "tile_ic"), ocb = cfg_split_inner(st.config, "tile_oc");
  if (icb <= 0 || ocb <= 0) return NULL;
  int64_t C = old->args[0]->type.shape[1], O = old->args[1]->type.shape[0];
  GNode *data = to_layout(ng, a, args[0], (int)icb, C);
  GAttrs kt = gattrs_new();
  ga_int(&kt, "ic_block", icb);
  ga_int(&kt, "oc_block", ocb);
  GNode *w = args[1];
  GNode *kw = graph_call(ng, "nn.contrib_conv2d_int8_weight_pack", 1, &w, kt, NULL);
  if (!data || !kw) return NULL;
  GAttrs at = gattrs_copy(&old->attrs);
  ga_str(&at, "data_layout", layout_name((int)icb));
  ga_str(&at, "out_layout", layout_name((int)ocb));
  GNode *r = graph_call(ng, "nn.contrib_conv2d_NCHWc_int8", old->nargs, (GNode *[]){data, kw, args[2], args[old->nargs - 1]},
                        at, old->name);
  if (!r) return NULL;
  graph_record_config(ng, r, &st);
  set_blk(a, r, (int)ocb);
  set_real(a, r, O);
  return r;
}

/* nn.dense with a constant weight [N, K] -> nn.contrib_dense_pack with
 * the weight packed to [N/bn, K, bn] (layout NK[bn]n, folded at compile
 * time), bn = the dense_pack config's tile_x inner part. */
static GNode *convert_dense_bf16(Graph *ng, Alt *a, GNode *old, GNode **args);

static GNode *convert_dense(Graph *ng, Alt *a, GNode *old, GNode **args) {
  if (args[1]->kind != GN_CONST || old->args[1]->type.ndim != 2) return GRAPH_KEEP;
  if (a->precision == GRAPH_PRECISION_BF16) {
    GNode *r = convert_dense_bf16(ng, a, old, args);
    if (r != GRAPH_KEEP) return r;
  }
  Strategy st;
  if (graph_dense_config(old, a->target, a->dispatch, &st)) return NULL;
  if (!st.task_name) return GRAPH_KEEP;
  int64_t bn = cfg_split_inner(st.config, "tile_x");
  if (bn <= 0) return NULL;
  GAttrs kt = gattrs_new();
  ga_str(&kt, "src_layout", "NK");
  ga_str(&kt, "dst_layout", kfmt("NK%lldn", (long long)bn));
  GNode *w = args[1];
  GNode *pw = graph_call(ng, "layout_transform", 1, &w, kt, NULL);
  if (!pw) return NULL;
  GAttrs at = gattrs_copy(&old->attrs);
  ga_str(&at, "weight_layout", kfmt("NK%lldn", (long long)bn));
  GNode *r = graph_call(ng, "nn.contrib_dense_pack", 2, (GNode *[]){args[0], pw}, at, old->name);
  if (r) graph_record_config(ng, r, &st);
  return r;
}

/* --precision bf16 (docs/bf16.md): nn.dense with a constant float32
 * weight -> nn.contrib_dense_pack_bf16, the weight rounded to bfloat16
 * pairs and packed [N/bn, ceil(K/2), bn] by a folded
 * nn.contrib_dense_bf16_weight_pack (bn = tile_x's inner part). */
static GNode *convert_dense_bf16(Graph *ng, Alt *a, GNode *old, GNode **args) {
  Strategy st;
  if (graph_dense_bf16_config(old, a->target, a->dispatch, &st)) return NULL;
  if (!st.task_name) return GRAPH_KEEP;
  int64_t bn = cfg_split_inner(st.config, "tile_x");
  if (bn <= 0) return NULL;
  GAttrs kt = gattrs_new();
  ga_int(&kt, "block", bn);
  GNode *w = args[1];
  GNode *pw = graph_call(ng, "nn.contrib_dense_bf16_weight_pack", 1, &w, kt, NULL);
  GNode *r = pw ? graph_call(ng, "nn.contrib_dense_pack_bf16", 2, (GNode *[]){args[0], pw}, gattrs_new(), old->name) : NULL;
  if (r) graph_record_config(ng, r, &st);
  return r;
}

/* A batched MatMul between activations (batch_matmul.x86) whose column
 * count N has no block of 8 or more (ViT's 197 tokens, Swin's 49):
 * the right operand gets zero columns up to a multiple of the vector
 * width when that adds at most a third, and the product is cropped back
 * (the template's column block must divide N; a block of 1 runs at a
 * tenth of the speed). */
static GNode *convert_matmul(Graph *ng, Alt *a, GNode *old, GNode **args) {
  const TType *ta = &old->args[0]->type, *tb = &old->args[1]->type;
  int r = ta->ndim;
  int64_t lanes = a->target ? a->target->vector_lanes : 0;
  if (!channel_pad_enabled() || lanes < 8 || r < 3 || tb->ndim != r || !dt_eq(ta->dtype, DT_F32) ||
      !dt_eq(tb->dtype, DT_F32) || gattr_int(&old->attrs, "transpose_a", 0) || gattr_int(&old->attrs, "transpose_b", 0))
    return GRAPH_KEEP;
  for (int i = 0; i < r - 2; i++)
    if (ta->shape[i] != tb->shape[i] || ta->shape[i] < 1) return GRAPH_KEEP;
  int64_t N = tb->shape[r - 1];
  if (N < lanes || (N & -N) >= 8) return GRAPH_KEEP;
  int64_t np = (N + lanes - 1) / lanes * lanes;
  if ((np - N) * 3 > N) return GRAPH_KEEP;
  GNode *bp = pad_axis(ng, args[1], r - 1, np - N, 0);
  GNode *mm = bp ? graph_call(ng, "nn.matmul", 2, (GNode *[]){args[0], bp}, old->attrs, old->name) : NULL;
  return mm ? pad_axis(ng, mm, r - 1, N - np, 0) : NULL;
}

static GNode *rewrite(Graph *ng, GNode *old, GNode **args, void *ud) {
  Alt *a = ud;
  const char *op = old->op->name;
  /* symbolic shapes stay NCHW: the templates' configs are per static
   * workload (docs/symbolic_shapes.md) */
  if (ttype_is_symbolic(&old->type)) return GRAPH_KEEP;
  OpId id = old->op->id;
  if (id == OP_CONV2D) {
    GNode *r = convert_conv(ng, a, old, args);
    if (r != GRAPH_KEEP) return r;
  }
  if (id == OP_CONV2D_INT8) {
    GNode *r = convert_conv_int8(ng, a, old, args);
    if (r != GRAPH_KEEP) return r;
  }
  if (id == OP_DENSE) {
    GNode *r = convert_dense(ng, a, old, args);
    if (r != GRAPH_KEEP) return r;
  }
  if (id == OP_MATMUL) {
    GNode *r = convert_matmul(ng, a, old, args);
    if (r != GRAPH_KEEP) return r;
  }
  /* a broadcast reading an NCHW feature map of its own shape that a conv
   * already reads blocked (a copy made by to_layout) reads that copy and
   * computes blocked: a residual stream that starts in NCHW (ConvNeXt's
   * stem ends in a layer norm over channels-last, transposed back) turns
   * blocked at its first add, as one that starts at a conv is, instead of
   * staying NCHW with a transform in front of every conv that reads it */
  if (old->type.ndim == 4 && (is_binary_bcast(old) || id == OP_BIAS_ADD)) {
    GNode **ca = NULL;
    for (int i = 0; i < old->nargs; i++) {
      GNode *c = blk_of(a, args[i]) == 0 && ttype_eq(&old->args[i]->type, &old->type) ? pm_get(&a->copy, args[i]) : NULL;
      if (!c) continue;
      if (!ca) ca = memcpy(KNEWN(GNode *, old->nargs), args, sizeof(GNode *) * (size_t)old->nargs);
      ca[i] = c;
    }
    if (ca) args = ca;
  }
  int b = 0;
  GNode *first = NULL; /* the first blocked input */
  for (int i = 0; i < old->nargs; i++)
    if (blk_of(a, args[i]) > 0) {
      b = blk_of(a, args[i]);
      first = args[i];
      break;
    }
  if (b == 0) return GRAPH_KEEP; /* nothing blocked flows in */
  const TType *ot = &old->type;
  /* the channels the result has: a padded input's padding flows through
   * ops that keep the padded channels finite and to themselves */
  int64_t C = ot->ndim == 4 ? ot->shape[1] : 0, cp = C;
  if (ot->ndim == 4 && is_padded(a, first) && real_of(a, first) == C && pad_safe(old)) cp = chans_of(a, first);
  bool fmap = ot->ndim == 4 && cp % b == 0;
  GNode **na = KNEWN(GNode *, old->nargs + 1);
  memcpy(na, args, sizeof(GNode *) * (size_t)old->nargs);
  /* elementwise on one blocked input */
  if (fmap && old->op->pattern == PAT_ELEMWISE && old->nargs == 1) {
    if (!(na[0] = to_layout(ng, a, na[0], b, cp))) return NULL;
    GNode *r = graph_call(ng, op, 1, na, old->attrs, old->name);
    set_blk(a, r, b);
    set_real(a, r, C);
    return r;
  }
  /* broadcasts against blocked tensors and per-channel operands (padded
   * with zeros where the result is padded) */
  if (fmap && (is_binary_bcast(old) || id == OP_BIAS_ADD)) {
    bool ok = true;
    for (int i = 0; i < old->nargs && ok; i++) {
      const TType *t = &old->args[i]->type;
      if (blk_of(a, na[i]) > 0 || ttype_eq(t, ot)) {
        na[i] = to_layout(ng, a, na[i], b, cp);
      } else if ((id == OP_BIAS_ADD && i == 1) || per_channel(t, C) == C) {
        GNode *v = na[i];
        if (cp > C) v = pad_axis(ng, reshape_to(ng, v, 1, (int64_t[]){C}), 0, cp - C, 0);
        na[i] = v ? reshape_to(ng, v, 5, (int64_t[]){1, cp / b, 1, 1, b}) : NULL;
      } else if (per_channel(t, C) != 1) {
        ok = false;
      }
      if (!na[i]) return NULL;
    }
    if (ok) {
      GNode *r = id == OP_BIAS_ADD ? graph_call(ng, "add", 2, na, gattrs_new(), old->name)
                                            : graph_call(ng, op, old->nargs, na, old->attrs, old->name);
      set_blk(a, r, b);
      set_real(a, r, C);
      return r;
    }
    memcpy(na, args, sizeof(GNode *) * (size_t)old->nargs);
  }
  /* pooling keeps the layout (and the padding) */
  if (old->op->flags & OPF_BLOCKED_LAYOUT) {
    GAttrs at = gattrs_copy(&old->attrs);
    ga_str(&at, "layout", layout_name(b));
    GNode *r = graph_call(ng, op, 1, na, at, old->name);
    set_blk(a, r, b);
    set_real(a, r, real_of(a, na[0]));
    return r;
  }
  /* channel concatenation of blocked tensors */
  if (id == OP_CONCATENATE && ot->ndim == 4 && (gattr_int(&old->attrs, "axis", 0) == 1 || gattr_int(&old->attrs, "axis", 0) == -3)) {
    bool ok = true;
    for (int i = 0; i < old->nargs; i++) ok &= old->args[i]->type.ndim == 4 && old->args[i]->type.shape[1] % b == 0;
    if (ok) {
      for (int i = 0; i < old->nargs; i++)
        if (!(na[i] = to_block(ng, a, na[i], b))) return NULL;
      GAttrs at = gattrs_copy(&old->attrs);
      ga_int(&at, "axis", 1);
      GNode *r = graph_call(ng, op, old->nargs, na, at, old->name);
      set_blk(a, r, b);
      return r;
    }
  }
  /* a mean over the rows and columns (MnasNet's and ShuffleNetV2's heads,
   * x.mean([2, 3])) is a global average pooling: blocked, and only its
   * [N, C, 1, 1] result goes back to NCHW (reshaped to [N, C] without
   * keepdims), not the whole feature map before it */
  if (id == OP_MEAN && is_spatial_mean(old)) {
    GAttrs at = gattrs_new();
    ga_str(&at, "layout", layout_name(b));
    GNode *p = graph_call(ng, "nn.global_avg_pool2d", 1, na, at, old->name);
    if (!p) return NULL;
    set_blk(a, p, b);
    set_real(a, p, real_of(a, na[0]));
    GNode *r = to_nchw(ng, a, p);
    if (r && ot->ndim == 2) r = reshape_to(ng, r, 2, ot->shape);
    return r;
  }
  /* padding of the rows and columns only (Inception-v3's average pooling
   * with count_include_pad imports as nn.pad before the pool) keeps the
   * layout and the channel padding: its pads gain the block axis, zero.
   * Any mode works: each channel's plane is padded on its own */
  const int64_t *pads;
  if (id == OP_PAD && ot->ndim == 4 && gattr_ints(&old->attrs, "pads", &pads) == 8 && !pads[0] && !pads[1] &&
      !pads[4] && !pads[5]) {
    GAttrs at = gattrs_copy(&old->attrs);
    ga_ints(&at, "pads", 10, (int64_t[]){0, 0, pads[2], pads[3], 0, 0, 0, pads[6], pads[7], 0});
    GNode *r = graph_call(ng, op, 1, na, at, old->name);
    set_blk(a, r, b);
    set_real(a, r, real_of(a, na[0]));
    return r;
  }
  /* everything else works on NCHW */
  for (int i = 0; i < old->nargs; i++)
    if (blk_of(a, na[i]) > 0 && !(na[i] = to_nchw(ng, a, na[i]))) return NULL;
  return graph_call(ng, op, old->nargs, na, old->attrs, old->name);
}

Graph *pass_alter_layout(Graph *g, const PassContext *pc) {
  /* the NCHW[x]c blocks are the CPU templates'; a GPU target keeps NCHW
   * (its Winograd weights: alter_layout_gpu.c) */
  if (pc->target && pc->target->kind->device_type != kDLCPU) return pass_alter_layout_gpu(g, pc);
  Alt a;
  memset(&a, 0, sizeof a);
  a.target = pc->target;
  a.dispatch = pc->dispatch;
  a.precision = pc->precision;
  pm_init_str(&a.cache);
  Graph *ng = graph_rewrite(g, rewrite, &a);
  if (ng) {
    for (int i = 0; i < ng->outputs.len; i++) {
      GNode *o = ng->outputs.data[i];
      if (blk_of(&a, o) > 0) {
        GNode *t = to_nchw(ng, &a, o);
        if (!t) {
          graph_free(ng);
          ng = NULL;
          break;
        }
        ng->outputs.data[i] = t;
      }
    }
  }
  pm_free(&a.blk);
  pm_free(&a.real);
  pm_free(&a.cache);
  pm_free(&a.origin);
  pm_free(&a.origin_blk);
  pm_free(&a.copy);
  return ng;
}
