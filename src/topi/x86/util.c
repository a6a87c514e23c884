/*
 * x86/util.c - pieces the x86 templates share: the checks a config must
 * pass, the layout packers (pure computes the graph layer folds), and the
 * bookkeeping of a fused group (which stages to inline, which output
 * carries the anchor's loop structure, how other stages run).
 */
#include "../../knob/knob.h"
#include "../topi.h"

#include <string.h>

int x86_check_split(const ConfigEntity *cfg, const char *knob, int nparts, int64_t extent, const char *what,
                    bool divide) {
  int n;
  const int64_t *s = cfg_split(cfg, knob, &n);
  if (!s) return -1;
  if (n != nparts) return kiln_set_error("config knob '%s': %d parts, expected %d", knob, n, nparts);
  int64_t inner = 1;
  for (int i = 1; i < n; i++) {
    if (s[i] < 1) return kiln_set_error("config knob '%s': part %d is %lld, expected a positive size", knob, i, (long long)s[i]);
    inner *= s[i];
  }
  if (divide && extent % inner)
    return kiln_set_error("config knob '%s': the parts multiply to %lld, which does not divide the %lld %s", knob,
                          (long long)inner, (long long)extent, what);
  if (inner > extent)
    return kiln_set_error("config knob '%s': the parts multiply to %lld, more than the %lld %s", knob, (long long)inner,
                          (long long)extent, what);
  if (s[0] != -1 && s[0] != (extent + inner - 1) / inner)
    return kiln_set_error("config knob '%s': the outer part is %lld; with inner parts %lld it should be %lld (or -1) "
                          "for the %lld %s",
                          knob, (long long)s[0], (long long)inner, (long long)((extent + inner - 1) / inner),
                          (long long)extent, what);
  return 0;
}

int x86_conv_out_size(const char *op, int64_t H, int64_t W, int64_t KH, int64_t KW, const int strides[2],
                      const int padding[4], const int dilation[2], int64_t *OH, int64_t *OW) {
  if (strides[0] < 1 || strides[1] < 1 || dilation[0] < 1 || dilation[1] < 1 || padding[0] < 0 || padding[1] < 0 ||
      padding[2] < 0 || padding[3] < 0)
    return kiln_set_error("%s: strides and dilation must be positive and padding non-negative", op);
  *OH = (H + padding[0] + padding[2] - ((KH - 1) * dilation[0] + 1)) / strides[0] + 1;
  *OW = (W + padding[1] + padding[3] - ((KW - 1) * dilation[1] + 1)) / strides[1] + 1;
  if (*OH < 1 || *OW < 1) return kiln_set_error("%s: the kernel window is larger than the padded input", op);
  return 0;
}

int x86_prefetch_distance(const char *op, const ConfigEntity *cfg, const char *knob, const char *unit, int64_t *d) {
  *d = cfg_other_int(cfg, knob, 0);
  if (*d < 0)
    return kiln_set_error("%s: config knob '%s' = %lld, expected a number of %s ahead (0: none)", op, knob,
                          (long long)*d, unit);
  return 0;
}

/* ---- packing (pure computes) ---- */

static Expr *c32(int64_t v) { return ir_i32(v); }

Tensor *topi_x86_pack_data_NCHWc(Tensor *data, int64_t bn) {
  if (!data) return NULL;
  int64_t s[4];
  if (data->ndim != 4 || !te_shape_const(data, s))
    return kiln_set_error("pack NCHW%lldc: data must be a 4-D NCHW tensor of constant shape", (long long)bn), NULL;
  if (bn < 1 || s[1] % bn)
    return kiln_set_error("pack NCHW%lldc: the block %lld does not divide the %lld channels", (long long)bn,
                          (long long)bn, (long long)s[1]),
           NULL;
  Expr **v = te_axis_vars(5, (const char *[]){"n", "c", "h", "w", "cb"});
  Expr *body = te_read4(data, v[0], ir_add(ir_mul(v[1], c32(bn)), v[4]), v[2], v[3]);
  return te_compute("data_vec", 5, (Expr *[]){c32(s[0]), c32(s[1] / bn), c32(s[2]), c32(s[3]), c32(bn)}, v, body,
                    "injective");
}

Tensor *topi_x86_unpack_NCHWc(Tensor *data) {
  if (!data) return NULL;
  int64_t s[5];
  if (data->ndim != 5 || !te_shape_const(data, s))
    return kiln_set_error("unpack NCHWc: data must be a 5-D NCHW[x]c tensor of constant shape"), NULL;
  Expr **v = te_axis_vars(4, (const char *[]){"n", "c", "h", "w"});
  Expr *body = te_read5(data, v[0], ir_floordiv(v[1], c32(s[4])), v[2], v[3], ir_floormod(v[1], c32(s[4])));
  return te_compute("data_nchw", 4, (Expr *[]){c32(s[0]), c32(s[1] * s[4]), c32(s[2]), c32(s[3])}, v, body,
                    "injective");
}

Tensor *topi_x86_pack_kernel_OIHWio(Tensor *kernel, int64_t ic_bn, int64_t oc_bn) {
  if (!kernel) return NULL;
  int64_t s[4];
  if (kernel->ndim != 4 || !te_shape_const(kernel, s))
    return kiln_set_error("pack OIHW%lldi%lldo: kernel must be a 4-D OIHW tensor of constant shape", (long long)ic_bn,
                          (long long)oc_bn),
           NULL;
  if (ic_bn < 1 || oc_bn < 1 || s[0] % oc_bn || s[1] % ic_bn)
    return kiln_set_error("pack OIHW%lldi%lldo: blocks must divide the kernel's %lld output and %lld input channels",
                          (long long)ic_bn, (long long)oc_bn, (long long)s[0], (long long)s[1]),
           NULL;
  Expr **v = te_axis_vars(6, (const char *[]){"oc", "ic", "kh", "kw", "icb", "ocb"});
  Expr *body = te_read4(kernel, ir_add(ir_mul(v[0], c32(oc_bn)), v[5]), ir_add(ir_mul(v[1], c32(ic_bn)), v[4]), v[2],
                        v[3]);
  return te_compute("kernel_vec", 6,
                    (Expr *[]){c32(s[0] / oc_bn), c32(s[1] / ic_bn), c32(s[2]), c32(s[3]), c32(ic_bn), c32(oc_bn)}, v,
                    body, "injective");
}

/* ---- fused groups ---- */

static bool is_input_of(Tensor *anchor, Tensor *t) {
  for (int i = 0; i < anchor->ninputs; i++)
    if (anchor->inputs[i] == t) return true;
  return false;
}

/* Elements of a tensor of constant shape; -1 when a dimension is not
 * constant. */
static int64_t numel(Tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) {
    int64_t x = te_dim(t, d);
    if (x < 0) return -1;
    n *= x;
  }
  return n;
}

/* Inline the group's injective stages into the outputs, except those with
 * fewer elements than the smallest output: an output that broadcasts such
 * a stage (a squeeze-and-excitation block's sigmoid(conv) times the
 * feature map) would recompute it - an expf and the layout and padding
 * index arithmetic in front of it - once per output element instead of
 * once per channel (RegNetY-400MF: 0.65 ms for 112 sigmoids broadcast
 * over 28x28).  Such a stage stays at the root, computed once into a
 * small buffer (x86_schedule_others schedules it). */
int x86_inline_group(Schedule *s, Tensor *anchor, Stage *keep) {
  int64_t min_out = -1;
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    int64_t n = st->is_output ? numel(st->op) : -1;
    if (n >= 0 && (min_out < 0 || n < min_out)) min_out = n;
  }
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (st == keep || st->is_output || st->op->kind != TE_COMPUTE || st->op->nreduce) continue;
    if (st->origin == anchor || is_input_of(anchor, st->origin) || st->attach != ATTACH_ROOT) continue;
    if (!topi_tag_is_injective(st->op->tag)) continue;
    int64_t n = numel(st->op);
    if (n >= 0 && min_out >= 0 && n < min_out) continue;
    if (stage_compute_inline(st)) return -1;
  }
  return 0;
}

static bool same_shape(Tensor *a, Tensor *b) {
  if (a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; d++) {
    int64_t x = te_dim(a, d), y = te_dim(b, d);
    if (x < 0 || x != y) return false;
  }
  return true;
}

Tensor *x86_main_output(Tensor *anchor, int nout, Tensor **outs) {
  for (int i = 0; i < nout; i++)
    if (outs[i] == anchor) return anchor;
  for (int i = nout - 1; i >= 0; i--)
    if (outs[i] && same_shape(outs[i], anchor)) return outs[i];
  return NULL;
}

/* The parallel iterations a root stage's fused outer axes stop at.  The
 * axes inside stay serial loops: fused into one counter, each vector's
 * indices were a division and modulo per axis (a squeeze-and-excitation
 * gate, sigmoid(conv) x [1, 9, 56, 56, 16] in one loop of 28,224 vectors,
 * ran at half the speed of a copy). */
enum { X86_PAR_GRAIN = 64 };

int x86_schedule_simple(Stage *st, int lanes_hint) {
  if (!st || st->op->kind != TE_COMPUTE || st->attach != ATTACH_ROOT) return 0;
  Tensor *op = st->op;
  int nd = op->ndim;
  if (nd == 0 || op->nreduce) return 0;
  int64_t last = te_dim(op, nd - 1);
  IterVar *vec = NULL;
  if (last > 1 && last <= 64 && (last & (last - 1)) == 0) vec = stage_axis(st, nd - 1);
  else if (lanes_hint > 1 && last > lanes_hint && last % lanes_hint == 0) {
    IterVar *o, *in;
    if (stage_split(st, stage_axis(st, nd - 1), ir_i32(lanes_hint), &o, &in)) return -1;
    vec = in;
  }
  if (nd >= 2) {
    IterVar *f = stage_axis(st, 0);
    int64_t par = te_dim(op, 0);
    for (int d = 1; d < nd - 1 && par < X86_PAR_GRAIN; d++) {
      if (stage_fuse(st, f, stage_axis(st, d), &f)) return -1;
      par *= te_dim(op, d);
    }
    if (stage_parallel(st, f)) return -1;
  }
  if (vec && stage_vectorize(st, vec)) return -1;
  return 0;
}

int x86_schedule_others(Schedule *s, Stage *main, Tensor *anchor, int lanes) {
  for (int i = 0; i < s->stages.len; i++) {
    Stage *st = s->stages.data[i];
    if (st == main || st->origin == anchor || st->attach != ATTACH_ROOT || st->op->kind != TE_COMPUTE) continue;
    if (st->relations.len || st->attrs.len) continue; /* already scheduled */
    if (x86_schedule_simple(st, lanes)) return -1;
  }
  return 0;
}

int64_t x86_largest_divisor(int64_t n, int64_t cap) {
  for (int64_t b = cap < n ? cap : n; b > 1; b--)
    if (n % b == 0) return b;
  return 1;
}

int64_t x86_channel_block(int64_t channels, int64_t lanes) {
  int64_t b = 1;
  while (b * 2 <= lanes && channels % (b * 2) == 0) b *= 2;
  return b;
}
