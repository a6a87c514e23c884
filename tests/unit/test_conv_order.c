/*
 * test_conv_order.c - conv2d_NCHWc.x86's loop orders: "occ_inner" (the
 * parallel loop steps a 1x1 layer's output-channel chunks inside its rows)
 * and "ic_outer" (a block of chunks computes its whole output, the
 * input-channel chunks outermost: x86/conv2d_stream.c).
 *
 * The knob is in the space of float32 1x1 layers only; the fallback sets
 * it by x86_conv_occ_inner_pays on a 1 MiB L2 (channel-reducing layers
 * whose input outgrows the L2 and whose weights fit a quarter of it, at
 * batch 1 and 8); a bfloat16 layer that takes the float32 fallback applies
 * its own rule, one that takes a record keeps the record's value.  Both
 * loop orders against the unscheduled lowering.  Builds use -O1.
 */
#include <string.h>

#include "autotune/autotune.h"
#include "kernel_util.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

static Workload *conv_wl(const Template *tm, int64_t n, int64_t ic, int64_t hw, int64_t oc, int64_t k) {
  int p = (int)(k / 2);
  return wl_conv2d(tm->name, (int64_t[]){n, ic, hw, hw}, (int64_t[]){oc, ic, k, k}, (int[]){1, 1}, (int[]){p, p, p, p},
                   (int[]){1, 1}, "float32", "float32");
}

/* The space and the fallback on ResNet-50's layers (want: the fallback's
 * occ_inner, -1 none; in_space: whether the knob is in the space). */
/* cfg's schedule of wl (into *s, *na, *args) lowered to text; NULL if it
 * failed (the failure checked) */
static const char *lowered_text(const Template *tm, const Target *t, Workload *wl, ConfigEntity *cfg, Schedule **s,
                                int *na, Tensor ***args) {
  CHECK_OK(template_instantiate(tm, t, wl, cfg, s, na, args));
  LoweredFunc *f = kiln_lower(*s, *na, *args, "f", NULL);
  CHECK_NN(f);
  return f ? kiln_lowered_str(f) : NULL;
}

static void test_occ_inner_rule(void) {
  const struct {
    int64_t n, ic, hw, oc, k;
    int want;
    bool in_space;
  } rows[] = {
      {1, 256, 56, 64, 1, 1, true},    /* 3.2 MB in, 64 KiB weights */
      {1, 256, 56, 128, 1, 1, true},   /* 128 KiB weights */
      {1, 512, 28, 128, 1, 1, true},   /* 256 KiB weights: a quarter of the L2 */
      {1, 512, 28, 256, 1, 0, true},   /* 512 KiB weights */
      {1, 64, 56, 64, 1, 0, true},     /* 784 KiB in: fits the L2 */
      {8, 64, 56, 64, 1, 1, true},     /* 8 samples: 6.3 MB in */
      {8, 1024, 14, 256, 1, 0, true},  /* 1 MiB weights */
      {1, 64, 56, 256, 1, 0, true},    /* more outputs than inputs */
      {1, 256, 56, 32, 1, 0, true},    /* 32 channels: one block of two chunks */
      {1, 128, 28, 128, 3, -1, false}, /* 3x3 */
  };
  const Target *t = target_parse("llvm -mcpu=znver5", NULL);
  const Template *tm = template_lookup("conv2d_NCHWc.x86"), *tb = template_lookup("conv2d_NCHWc_bf16.x86");
  CHECK(t && tm && tb);
  if (!t || !tm || !tb) return;
  CHECK(target_l2_bytes(t) == 1 << 20);
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    Workload *wl = conv_wl(tm, rows[r].n, rows[r].ic, rows[r].hw, rows[r].oc, rows[r].k);
    ConfigSpace *cs = template_space(tm, t, wl);
    ConfigEntity *fb = template_fallback(tm, t, wl);
    CHECK_NN(cs);
    CHECK_NN(fb);
    if (!cs || !fb) continue;
    CHECK_MSG(!space_knob(cs, "occ_inner") == !rows[r].in_space, "%s: space %s", wl->key,
              config_entity_json(space_get(cs, 0)));
    CHECK_MSG(cfg_other_int(fb, "occ_inner", -1) == rows[r].want, "%s: fallback %s, want occ_inner %d", wl->key,
              config_entity_json(fb), rows[r].want);
  }
  /* the bfloat16 space defines the knob once; 512->256 @28 (false in
   * float32's fallback) takes bfloat16's rule (256 KiB of bfloat16
   * weights), or keeps a record's false */
  Workload *wb = wl_conv2d(tb->name, (int64_t[]){1, 512, 28, 28}, (int64_t[]){256, 512, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  CHECK_NN(template_space(tb, t, wb));
  ConfigEntity *c = template_fallback(tm, t, conv_wl(tm, 1, 512, 28, 256, 1));
  CHECK_NN(c);
  if (!c) return;
  CHECK(cfg_other_int(c, "occ_inner", -1) == 0);
  ConfigEntity *rec = config_from_json(config_json(c));
  CHECK_OK(topi_x86_conv_bf16_from_float32(t, c, wb, false));
  CHECK(cfg_other_int(c, "occ_inner", -1) == 1);
  CHECK_OK(topi_x86_conv_bf16_from_float32(t, rec, wb, true));
  CHECK(cfg_other_int(rec, "occ_inner", -1) == 0);
}

/* 128->64 @12 (four chunks, blocks of two) with each order: the parallel
 * loop's fusion and the values against the unscheduled lowering. */
static void test_occ_inner_values(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  const Target *t = target_host();
  CHECK_NN(tm);
  if (!tm || t->vector_lanes < 16) return;
  Workload *wl = conv_wl(tm, 1, 128, 12, 64, 1);
  for (int o = 0; o < 2; o++) {
    ConfigEntity *cfg = template_fallback(tm, t, wl);
    CHECK_NN(cfg);
    if (!cfg) return;
    config_set_other(cfg, "occ_inner", opt_bool(o));
    Schedule *s;
    int na;
    Tensor **args;
    const char *text = lowered_text(tm, t, wl, cfg, &s, &na, &args);
    if (!text) return;
    CHECK_CONTAINS(text, o ? "parallel (n.oh.outer.fused.oc_chunk.outer.fused, 0, 24)" /* 12 rows x 2 blocks */
                           : "parallel (n.oc_chunk.outer.fused.oh.outer.fused, 0, 24)");
    DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, kfmt("128->64 @12, config %s", config_entity_json(cfg)));
    if (arr) tk_arrays_free(na, arr);
  }
}

/* ic_outer's space and fallback on ResNet's and VGG-16's windows (want:
 * the fallback's value, -1 not in the space). */
static void test_ic_outer_rule(void) {
  const struct {
    int64_t n, ic, hw, oc, k, s;
    int want;
  } rows[] = {
      {1, 512, 7, 512, 3, 1, 1},    /* 576 KiB a block of two chunks */
      {1, 512, 14, 512, 3, 2, 1},   /* 3x3/2 @14 -> 7 */
      {1, 256, 28, 256, 3, 2, 1},   /* 3x3/2 @28 -> 14: 288 KiB, 8 blocks, 25 KiB of outputs */
      {1, 256, 14, 256, 3, 1, 1},   /* 3x3 256 @14 (direct) */
      {1, 128, 28, 256, 3, 2, 0},   /* 144 KiB a block: prefetch_w's */
      {1, 512, 14, 512, 3, 1, 1},   /* VGG-16's 3x3 512 @14 (direct) */
      {1, 256, 7, 128, 3, 1, 0},    /* 288 KiB, but 4 blocks */
      {1, 512, 28, 512, 3, 1, -1},  /* 784 outputs a weight */
      {8, 512, 7, 512, 3, 1, -1},   /* batch 8 */
      {1, 1024, 14, 2048, 1, 2, -1}, /* 1x1 */
  };
  const Target *t = target_parse("llvm -mcpu=znver5", NULL);
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK(t && tm);
  if (!t || !tm) return;
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    int p = (int)(rows[r].k / 2), st = (int)rows[r].s;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){rows[r].n, rows[r].ic, rows[r].hw, rows[r].hw},
                             (int64_t[]){rows[r].oc, rows[r].ic, rows[r].k, rows[r].k}, (int[]){st, st},
                             (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    ConfigSpace *cs = template_space(tm, t, wl);
    ConfigEntity *fb = template_fallback(tm, t, wl);
    CHECK_NN(cs);
    CHECK_NN(fb);
    if (!cs || !fb) continue;
    CHECK_MSG(!space_knob(cs, "ic_outer") == (rows[r].want < 0), "%s: space %s", wl->key,
              config_entity_json(space_get(cs, 0)));
    CHECK_MSG(cfg_other_int(fb, "ic_outer", -1) == rows[r].want, "%s: fallback %s, want ic_outer %d", wl->key,
              config_entity_json(fb), rows[r].want);
    if (rows[r].want < 0) { /* set where the space has no such knob: the check names it */
      config_set_other(fb, "ic_outer", opt_bool(true));
      Schedule *s;
      int na;
      Tensor **args;
      CHECK(template_instantiate(tm, t, wl, fb, &s, &na, &args) != 0);
      CHECK_CONTAINS(kiln_get_error(), "config knob 'ic_outer' is set");
    }
  }
}

/* 3x3 256->256 @7 (eight chunks, blocks of two; the knob in its space) with
 * TVM's nest and with ic_outer, kw rolled and unrolled: the parallel loop
 * over the blocks, the reduction's input-channel chunks outside the
 * unrolled rows, and the values against the unscheduled lowering. */
static void test_ic_outer_values(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  const Target *t = target_host();
  CHECK_NN(tm);
  if (!tm || t->vector_lanes < 16) return;
  Workload *wl = conv_wl(tm, 1, 256, 7, 256, 3);
  for (int o = 0; o < 3; o++) {
    ConfigEntity *cfg = template_fallback(tm, t, wl);
    CHECK_NN(cfg);
    if (!cfg) return;
    CHECK(config_get(cfg, "ic_outer") != NULL);
    config_set_other(cfg, "ic_outer", opt_bool(o > 0));
    config_set_other(cfg, "unroll_kw", opt_bool(o == 2));
    Schedule *s;
    int na;
    Tensor **args;
    const char *text = lowered_text(tm, t, wl, cfg, &s, &na, &args);
    if (!text) return;
    if (o) {
      CHECK_CONTAINS(text, "parallel (n.oc_chunk.outer.fused, 0, 8)");
      CHECK_CONTAINS(text, "for (ic, 0, 16)");
      CHECK(!strstr(text, "for (oh.c, 0, 7)")); /* the rows unrolled */
    } else {
      CHECK_CONTAINS(text, "parallel (n.oc_chunk.outer.fused.oh.fused, 0, 56)");
    }
    DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-5, kfmt("3x3 256->256 @7, config %s", config_entity_json(cfg)));
    if (arr) tk_arrays_free(na, arr);
  }
}

const TestCase conv_order_tests[] = {
    {"occ_inner_rule", test_occ_inner_rule},
    {"occ_inner_values", test_occ_inner_values},
    {"ic_outer_rule", test_ic_outer_rule},
    {"ic_outer_values", test_ic_outer_values},
    {NULL, NULL},
};
