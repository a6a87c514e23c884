/*
 * test_conv_order.c - conv2d_NCHWc.x86's "occ_inner" (the parallel loop
 * steps a 1x1 layer's output-channel chunks inside its rows).
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
    CHECK_OK(template_instantiate(tm, t, wl, cfg, &s, &na, &args));
    LoweredFunc *f = kiln_lower(s, na, args, "f", NULL);
    CHECK_NN(f);
    if (!f) return;
    const char *text = kiln_lowered_str(f);
    CHECK_CONTAINS(text, o ? "parallel (n.oh.outer.fused.oc_chunk.outer.fused, 0, 24)" /* 12 rows x 2 blocks */
                           : "parallel (n.oc_chunk.outer.fused.oh.outer.fused, 0, 24)");
    DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, kfmt("128->64 @12, config %s", config_entity_json(cfg)));
    if (arr) tk_arrays_free(na, arr);
  }
}

const TestCase conv_order_tests[] = {
    {"occ_inner_rule", test_occ_inner_rule},
    {"occ_inner_values", test_occ_inner_values},
    {NULL, NULL},
};
