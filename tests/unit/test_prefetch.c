/*
 * test_prefetch.c - stage_prefetch: the region each iteration touches (a
 * lowered text), spread over an enclosing loop, the C it prints, the
 * errors of the primitives and of their lowering, and conv2d_NCHWc.x86's prefetch_w and prefetch_data
 * and dense_pack.x86's prefetch_w knobs: their spaces, the fallback's rules, and every value against
 * the unscheduled lowering.
 */
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "codegen/codegen.h"
#include "kernel_util.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

/* B[i, j] = A[i, j] * 2 over A [rows, 20] float32. */
static Tensor *twice(int64_t rows, Tensor **a) {
  *a = te_placeholder_c("A", 2, (int64_t[]){rows, 20}, DT_F32);
  Expr **v = te_axis_vars(2, NULL);
  return te_compute("B", 2, (*a)->shape, v, ir_mul(te_read2(*a, v[0], v[1]), ir_f32(2)), NULL);
}

/* A prefetch one row ahead at the row loop: each iteration touches the
 * lines of the next row (20 floats from 20 * (i + 1), which need not
 * start a line: up to three lines), cut at the last element (the row
 * after the last is the last element's line). */
static void test_prefetch_text(void) {
  Tensor *a, *b = twice(4, &a);
  Schedule *s = te_create_schedule(1, &b);
  Stage *st = sch_stage(s, b);
  CHECK_OK(stage_prefetch(st, a, stage_axis(st, 0), ir_i32(1), 3));
  LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){a, b}, "f", NULL);
  CHECK_NN(f);
  if (!f) return;
  CHECK_STR(kiln_lowered_str(f), "produce B {\n"
                                 "  for (i, 0, 4) {\n"
                                 "    for (prefetch.A.0, 0, 3) {\n"
                                 "      prefetch(A[min((((i*20) + (prefetch.A.0*16)) + 20), 79)], 3)\n"
                                 "    }\n"
                                 "    for (j, 0, 20) {\n"
                                 "      B[((i*20) + j)] = (A[((i*20) + j)]*2f)\n"
                                 "    }\n"
                                 "  }\n"
                                 "}\n");
}

/* Spread along the row loop: column j touches (the element 16 columns
 * ahead, one line) only in the row i with i % 4 == j % 4 (i < 4). */
static void test_prefetch_spread_text(void) {
  Tensor *a, *b = twice(4, &a);
  Schedule *s = te_create_schedule(1, &b);
  Stage *st = sch_stage(s, b);
  IterVar *i = stage_axis(st, 0), *j = stage_axis(st, 1);
  CHECK_OK(stage_prefetch(st, a, j, ir_i32(16), 2));
  CHECK_OK(stage_prefetch_spread(st, j, i, 4));
  LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){a, b}, "f", NULL);
  CHECK_NN(f);
  if (!f) return;
  CHECK_STR(kiln_lowered_str(f), "produce B {\n"
                                 "  for (i, 0, 4) {\n"
                                 "    for (j, 0, 20) {\n"
                                 "      if ((floormod(j, 4) == i)) {\n"
                                 "        prefetch(A[min((((i*20) + j) + 16), 79)], 2)\n"
                                 "      }\n"
                                 "      B[((i*20) + j)] = (A[((i*20) + j)]*2f)\n"
                                 "    }\n"
                                 "  }\n"
                                 "}\n");
}

/* Built and run, the prefetch changes nothing (a hint); the C has the
 * builtin, the portable dialect and the GPU printer drop it. */
static void test_prefetch_runs(void) {
  Tensor *a, *b = twice(64, &a);
  Schedule *s = te_create_schedule(1, &b);
  Stage *st = sch_stage(s, b);
  IterVar *jo, *ji;
  CHECK_OK(stage_split(st, stage_axis(st, 1), ir_i32(4), &jo, &ji));
  CHECK_OK(stage_prefetch(st, a, jo, ir_i32(8), 1));
  CHECK_OK(stage_vectorize(st, ji));
  LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){a, b}, "f", NULL);
  CHECK_NN(f);
  if (!f) return;
  char *src = codegen_c(&f, 1, 0, NULL);
  CHECK_NN(src);
  CHECK_CONTAINS(src, "__builtin_prefetch(&A[");
  CHECK_CONTAINS(src, ", 0, 1)");
  free(src);
  DLTensor **arr = tk_run_vs_unscheduled(s, 2, (Tensor *[]){a, b}, &copt, 1e-6, "prefetched 64x20 scale");
  if (arr) tk_arrays_free(2, arr);
  /* the GPU printer leaves the hint out */
  Tensor *ga, *gb = twice(64, &ga);
  Schedule *gs = te_create_schedule(1, &gb);
  Stage *gst = sch_stage(gs, gb);
  CHECK_OK(stage_bind(gst, stage_axis(gst, 0), "blockIdx.x"));
  CHECK_OK(stage_prefetch(gst, ga, stage_axis(gst, 1), ir_i32(4), 3));
  CHECK_OK(stage_bind(gst, stage_axis(gst, 1), "threadIdx.x"));
  LowerOptions lo = {.device_type = kDLCUDA};
  LoweredFunc *gf = kiln_lower(gs, 2, (Tensor *[]){ga, gb}, "g", &lo);
  CHECK_NN(gf);
  char *gpu = gf ? codegen_gpu(&gf, 1, GPU_CUDA) : NULL;
  CHECK_MSG(gpu != NULL, "%s", kiln_get_error());
  if (gpu) {
    CHECK(!strstr(gpu, "prefetch("));
    CHECK_CONTAINS(gpu, "(void)0;");
  }
  free(gpu);
}

static void test_prefetch_errors(void) {
  Tensor *a, *b = twice(8, &a), *other = te_placeholder_c("C", 1, (int64_t[]){8}, DT_F32);
  Schedule *s = te_create_schedule(1, &b);
  Stage *st = sch_stage(s, b);
  IterVar *i = stage_axis(st, 0), *io, *ii;
  CHECK(stage_prefetch(st, other, i, ir_i32(1), 3) != 0);
  CHECK_CONTAINS(kiln_get_error(), "prefetch: stage 'B' does not read tensor 'C'");
  CHECK(stage_prefetch(st, a, i, ir_i32(1), 4) != 0);
  CHECK_CONTAINS(kiln_get_error(), "locality 4 for 'A' is not 0");
  CHECK(stage_prefetch(st, a, i, ir_f32(1), 3) != 0);
  CHECK_CONTAINS(kiln_get_error(), "the offset for axis 'i' of stage 'B' must be an integer");
  CHECK_OK(stage_split(st, i, ir_i32(2), &io, &ii));
  CHECK(stage_prefetch(st, a, i, ir_i32(1), 3) != 0);
  CHECK_CONTAINS(kiln_get_error(), "axis 'i' of stage 'B' is no longer a leaf");
  /* a vectorized axis has no loop to put the touches in */
  CHECK_OK(stage_prefetch(st, a, ii, ir_i32(1), 3));
  CHECK_OK(stage_vectorize(st, ii));
  CHECK(kiln_lower(s, 2, (Tensor *[]){a, b}, "f", NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "prefetch: axis 'i.inner' of stage 'B' is vectorized");
  /* spreading needs a prefetch, and a loop around it */
  Tensor *a3, *b3 = twice(8, &a3);
  Schedule *s3 = te_create_schedule(1, &b3);
  Stage *st3 = sch_stage(s3, b3);
  CHECK(stage_prefetch_spread(st3, stage_axis(st3, 0), stage_axis(st3, 1), 2) != 0);
  CHECK_CONTAINS(kiln_get_error(), "axis 'i' of stage 'B' has no prefetch to spread");
  CHECK_OK(stage_prefetch(st3, a3, stage_axis(st3, 0), ir_i32(1), 3));
  CHECK(stage_prefetch_spread(st3, stage_axis(st3, 0), stage_axis(st3, 1), 0) != 0);
  CHECK_CONTAINS(kiln_get_error(), "0 parts for axis 'i' of stage 'B'");
  CHECK_OK(stage_prefetch_spread(st3, stage_axis(st3, 0), stage_axis(st3, 1), 2));
  /* dealing over an inner loop needs a prefetch and a loop */
  CHECK(stage_prefetch_into(st3, stage_axis(st3, 1), stage_axis(st3, 0)) != 0);
  CHECK_CONTAINS(kiln_get_error(), "prefetch_into: axis 'j' of stage 'B' has no prefetch to deal out");
  CHECK(stage_prefetch_into(st3, stage_axis(st3, 0), NULL) != 0);
  CHECK_CONTAINS(kiln_get_error(), "prefetch_into: no inner axis given");
  CHECK(kiln_lower(s3, 2, (Tensor *[]){a3, b3}, "f", NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "axis 'j' (for axis 'i' of stage 'B') is not a loop enclosing it");
  /* a reduction whose update nest cannot place its touches fails
   * whole, rather than lowering to the init alone: dealt into a loop of
   * its own stage (not one computed at the prefetched axis) */
  Tensor *a4 = te_placeholder_c("A", 2, (int64_t[]){8, 20}, DT_F32);
  IterVar *k4 = te_reduce_axis_c(20, "k");
  Expr **v4 = te_axis_vars(1, NULL);
  Tensor *b4 = te_compute("S", 1, (Expr *[]){ir_i32(8)}, v4, ir_sum(te_read2(a4, v4[0], k4->var), 1, (IterVar *[]){k4}),
                          NULL);
  Schedule *s4 = te_create_schedule(1, &b4);
  Stage *st4 = sch_stage(s4, b4);
  IterVar *ko, *ki;
  CHECK_OK(stage_split(st4, stage_reduce_axis(st4, 0), ir_i32(4), &ko, &ki));
  CHECK_OK(stage_prefetch(st4, a4, ko, ir_i32(1), 3));
  CHECK_OK(stage_prefetch_into(st4, ko, ki));
  CHECK(kiln_lower(s4, 2, (Tensor *[]){a4, b4}, "f", NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "prefetch_into: axis 'k.inner' is not a loop of a stage computed at axis 'k.outer'");
  /* a tensor stored only in part (computed at a loop) */
  Tensor *a2, *b2 = twice(8, &a2);
  Expr **v = te_axis_vars(2, NULL);
  Tensor *c2 = te_compute("D", 2, b2->shape, v, ir_add(te_read2(b2, v[0], v[1]), ir_f32(1)), NULL);
  Schedule *s2 = te_create_schedule(1, &c2);
  Stage *sb = sch_stage(s2, b2), *sd = sch_stage(s2, c2);
  CHECK_OK(stage_compute_at(sb, sd, stage_axis(sd, 0)));
  CHECK_OK(stage_prefetch(sd, b2, stage_axis(sd, 1), ir_i32(1), 3));
  CHECK(kiln_lower(s2, 2, (Tensor *[]){a2, c2}, "f", NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "'B' (at axis 'j' of stage 'D') must be stored whole");
  /* the intrinsic takes an element and a constant locality */
  CHECK(ir_call2(INTRIN_prefetch, ir_f32(1), ir_i32(3)) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "prefetch: operand 1 must be one tensor element");
  CHECK(ir_call2(INTRIN_prefetch, te_read2(a, ir_i32(0), ir_i32(0)), ir_var("l", DT_I32)) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "prefetch: locality must be a constant 0 to 3");
}

/* tm's space and fallback config for wl on t: knob is in the space
 * exactly when want >= 0, and the fallback's value is want (-1: not
 * set).  Returns the fallback, or NULL after a failed check when there is
 * no space or no fallback. */
static ConfigEntity *check_knob(const Template *tm, const Target *t, const Workload *wl, const char *knob,
                                int64_t want, const char *desc) {
  ConfigSpace *cs = template_space(tm, t, wl);
  ConfigEntity *fb = template_fallback(tm, t, wl);
  CHECK_MSG(cs && fb, "%s: no space or no fallback: %s", desc, kiln_get_error());
  if (!cs || !fb) return NULL;
  CHECK_MSG(!space_knob(cs, knob) == (want < 0), "%s: '%s' %s the space %s", desc, knob,
            want < 0 ? "is in" : "is not in", config_entity_json(space_get(cs, 0)));
  CHECK_MSG(cfg_other_int(fb, knob, -1) == want, "%s: the fallback's '%s' is %lld, expected %lld (%s)", desc, knob,
            (long long)cfg_other_int(fb, knob, -1), (long long)want, config_entity_json(fb));
  return fb;
}

/* conv2d_NCHWc.x86: prefetch_w is in the space of layers with large
 * weights (or 32 KiB at stride 1: 3x3 32->64 @7, 72 KiB; not 16->32, 18
 * KiB) and small outputs only; the fallback takes 1 where a register
 * block's weights are at most 128 KiB; every value, on a 3x3 and a 1x1
 * layer, matches the unscheduled lowering, and the kernel's prefetches
 * touch the block d ahead. */
static void test_conv_prefetch_knob(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm) return;
  struct {
    int64_t ic, oc, k, hw;
    int want_fallback; /* -1: not in the space */
  } cases[] = {{256, 64, 3, 7, 0}, {512, 128, 1, 7, 1}, {64, 64, 3, 56, -1}, {32, 64, 3, 7, 1}, {16, 32, 3, 7, -1}};
  for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
    int64_t k = cases[n].k;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, cases[n].ic, cases[n].hw, cases[n].hw},
                             (int64_t[]){cases[n].oc, cases[n].ic, k, k}, (int[]){1, 1},
                             (int[]){(int)(k / 2), (int)(k / 2), (int)(k / 2), (int)(k / 2)}, (int[]){1, 1}, "float32",
                             "float32");
    const char *desc = kfmt("%lldx%lld conv %lld->%lld @%lld", (long long)k, (long long)k, (long long)cases[n].ic,
                            (long long)cases[n].oc, (long long)cases[n].hw);
    if (!check_knob(tm, target_host(), wl, "prefetch_w", cases[n].want_fallback, desc)) return;
    if (cases[n].want_fallback < 0) continue;
    for (int d = 0; d <= 2; d++) {
      ConfigEntity *c = template_fallback(tm, target_host(), wl);
      config_set_other(c, "prefetch_w", opt_int(d));
      /* the other loop forms: kw unrolled (the touches cover the 3 kw of
       * a step), two rows a block (4 row blocks for 7 rows, the last a
       * tail) */
      if (d == 2) config_set_other(c, k == 3 ? "unroll_kw" : "tile_oh", k == 3 ? opt_bool(true) : opt_int(2));
      Schedule *s;
      int na;
      Tensor **args;
      const char *text =
          tk_config_lowered(tm, target_host(), wl, c, &s, &na, &args, kfmt("%s, prefetch_w %d", desc, d));
      if (!text) return;
      /* d blocks of two 16-channel chunks ahead: 2 * d chunks of the
       * kernel's rows (IC * k * k * 16 floats each) */
      int64_t chunk = cases[n].ic * k * k * 16, size = cases[n].oc * cases[n].ic * k * k;
      CHECK_MSG(!d == !strstr(text, "prefetch(kernel["), "%s, prefetch_w %d:\n%s", desc, d, text);
      /* the touches spread over the block's 7 rows by the ic-block step (the
       * row's remainder bound once per parallel step: lower/hoist_divmod.c) */
      CHECK_MSG(!d || strstr(text, kfmt("if ((floormod(icb, %d) == n.oc_chunk.outer.fused.oh", d == 2 && k == 1 ? 4 : 7)),
                "%s, prefetch_w %d: no spread guard", desc, d);
      if (d && 2 * d * chunk < size)
        CHECK_CONTAINS(text, kfmt(" + %lld), %lld)]", (long long)(2 * d * chunk), (long long)(size - 1)));
      else if (d) /* every block's d-th successor is past the end: the last line */
        CHECK_CONTAINS(text, kfmt("prefetch(kernel[%lld], 3)", (long long)(size - 1)));
      DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, kfmt("%s, prefetch_w %d", desc, d));
      if (arr) tk_arrays_free(na, arr);
    }
  }
}

/* dense_pack.x86: prefetch_w is in the space of layers whose weights are
 * larger than the L2 (1 MiB here; exactly 1 MiB is not), that have 2 to
 * 256 rows, and whose two-vector panels (32 x K floats) fit the L2 two
 * at a time (K = 4096, not 4104); the fallback takes 1 there; every value
 * matches the unscheduled lowering, the touches are d column groups
 * ahead (x_oi x K x bn floats a group) and spread over the row blocks (5
 * for 49 rows of 10; none for 8 rows in one block). */
static void test_dense_prefetch_knob(void) {
  const Template *tm = template_lookup("dense_pack.x86");
  CHECK_NN(tm);
  if (!tm || target_host()->vector_lanes != 16 || target_l2_bytes(target_host()) != 1 << 20) return;
  struct {
    int64_t m, n, k;
    int want_fallback; /* -1: not in the space */
  } cases[] = {{49, 1024, 288, 1}, {8, 1000, 288, 1},  {300, 1024, 288, -1}, {49, 1024, 256, -1},
               {1, 1000, 288, -1}, {2, 96, 4096, 1}, {2, 96, 4104, -1}};
  for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
    Workload *wl = wl_dense(tm->name, cases[n].m, cases[n].n, cases[n].k, "float32", "float32");
    const char *desc = kfmt("dense %s", wl->key);
    ConfigEntity *fb = check_knob(tm, target_host(), wl, "prefetch_w", cases[n].want_fallback, desc);
    if (!fb) return;
    if (cases[n].want_fallback < 0) continue;
    const int64_t *ty = cfg_split(fb, "tile_y", NULL), *tx = cfg_split(fb, "tile_x", NULL);
    int64_t blocks_y = (cases[n].m + ty[2] - 1) / ty[2], size = cases[n].n * cases[n].k;
    CHECK_INT(blocks_y, cases[n].m == 49 ? 5 : 1);
    for (int d = 0; d <= 2; d++) {
      ConfigEntity *c = template_fallback(tm, target_host(), wl);
      config_set_other(c, "prefetch_w", opt_int(d));
      Schedule *s;
      int na;
      Tensor **args;
      const char *text =
          tk_config_lowered(tm, target_host(), wl, c, &s, &na, &args, kfmt("%s, prefetch_w %d", desc, d));
      if (!text) return;
      int64_t group = tx[1] * tx[2] * cases[n].k;
      CHECK_MSG(!d == !strstr(text, "prefetch(packed_weight["), "%s, prefetch_w %d:\n%s", desc, d, text);
      if (d && d * group < size)
        CHECK_CONTAINS(text, kfmt(" + %lld), %lld)]", (long long)(d * group), (long long)(size - 1)));
      CHECK_MSG(!d || !strstr(text, kfmt("floormod(k.outer, %lld) == x.outer.y.outer.fused_mod", (long long)blocks_y)) == (blocks_y == 1),
                "%s, prefetch_w %d: the spread guard over %lld row blocks:\n%s", desc, d, (long long)blocks_y, text);
      DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, kfmt("%s, prefetch_w %d", desc, d));
      if (arr) tk_arrays_free(na, arr);
    }
  }
}

/* conv2d_NCHWc.x86: prefetch_data is in the space of 1x1 layers whose
 * input (the batch's, or a strided layer's sampled copy) is at least 512
 * KiB, or whose input and two prefetched weight blocks are (2048->64 @7:
 * 392 KiB + 2 x 256 KiB; not 512->256 @7: 98 KiB + 2 x 64 KiB); the
 * fallback takes 1 where its block's samples' input is, or with the two
 * blocks (at batch 2: 0 at 256 KiB a sample, 1 at 512); every value, on a 1x1 and a
 * strided 1x1 layer and 1x1 layers at batch 2, matches the unscheduled
 * lowering, and the input chunk d ahead is touched at the input-channel
 * chunk loop. */
static void test_conv_prefetch_data_knob(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm) return;
  struct {
    int64_t ic, oc, k, hw, stride;
    bool want; /* in the space (the fallback's 1 but for the last case's 0) */
    const char *input; /* the tensor the conv reads */
    int64_t batch;
  } cases[] = {{128, 32, 1, 32, 1, true, "data", 1},  {128, 32, 1, 64, 2, true, "data_sub", 1},
               {64, 16, 3, 46, 1, false, NULL, 1}, {64, 32, 1, 32, 1, false, NULL, 1},
               {128, 32, 1, 62, 2, false, NULL, 1}, {128, 32, 1, 32, 1, true, "data", 2},
               {2048, 64, 1, 7, 1, true, "data", 1},  {512, 256, 1, 7, 1, false, NULL, 1},
               {64, 32, 1, 32, 1, true, "data", 2}};
  for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
    int64_t k = cases[n].k, hw = cases[n].hw;
    int p = (int)(k / 2), st = (int)cases[n].stride;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){cases[n].batch, cases[n].ic, hw, hw},
                             (int64_t[]){cases[n].oc, cases[n].ic, k, k},
                             (int[]){st, st}, (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    const char *desc = kfmt("%lldx%lld/%d conv %lld->%lld @%lld batch %lld", (long long)k, (long long)k, st,
                            (long long)cases[n].ic, (long long)cases[n].oc, (long long)hw, (long long)cases[n].batch);
    bool last = n + 1 == sizeof cases / sizeof cases[0]; /* a 256 KiB sample: its fallback 0 */
    if (!check_knob(tm, target_host(), wl, "prefetch_data", cases[n].want ? !last : -1, desc)) return;
    if (!cases[n].want) continue;
    for (int d = 0; d <= 2; d++) {
      ConfigEntity *c = template_fallback(tm, target_host(), wl);
      config_set_other(c, "prefetch_data", opt_int(d));
      if (d == 2 && k == 1) config_set_other(c, "tile_oh", opt_int(2)); /* two rows a block */
      Schedule *s;
      int na;
      Tensor **args;
      const char *text =
          tk_config_lowered(tm, target_host(), wl, c, &s, &na, &args, kfmt("%s, prefetch_data %d", desc, d));
      if (!text) return;
      /* the touch sits in the ic loop and reaches d chunks (a feature map
       * of ic_bn channels each) further */
      const char *touch = kfmt("prefetch(%s[", cases[n].input);
      CHECK_MSG(!d == !strstr(text, touch), "%s, prefetch_data %d:\n%s", desc, d, text);
      const char *at = strstr(text, "for (ic, 0, ");
      CHECK_MSG(!d || (at && strstr(at, touch)), "%s, prefetch_data %d: no touch inside the ic loop", desc, d);
      int64_t map = (hw / st) * (hw / st) * 16;
      if (d) CHECK_CONTAINS(text, kfmt(" + %lld)", (long long)(d * map)));
      DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-5, kfmt("%s, prefetch_data %d", desc, d));
      if (arr) tk_arrays_free(na, arr);
    }
  }
}

/* conv2d_NCHWc_winograd.x86 (float32): prefetch_w is in the space, the
 * fallback takes 1 where the stages run at the root (the GEMM streams the
 * transformed kernel U once: 32 @14, 128 @28) and 0 in blocks of tile
 * rows (VGG's 64 @224: U stays in L2); the bfloat16 template's space has
 * no knob.  Every value on 32 @14 (4 tile rows, F(4x4)) matches the
 * unscheduled lowering, and the GEMM's touches of U reach d blocks of
 * reg_c = 2 chunks x 32 channels x 16 floats ahead, spread over the 4 tile
 * rows by the channel step. */
static void test_winograd_prefetch_knob(void) {
  const Template *tm = template_lookup("conv2d_NCHWc_winograd.x86"),
                 *bf = template_lookup("conv2d_NCHWc_winograd_bf16.x86");
  CHECK_NN(tm);
  CHECK_NN(bf);
  if (!tm || !bf) return;
  struct {
    int64_t c, hw;
    int want_fallback;
  } cases[] = {{32, 14, 1}, {128, 28, 1}, {64, 224, 0}};
  for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
    int64_t c = cases[n].c, hw = cases[n].hw;
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, c, hw, hw}, (int64_t[]){c, c, 3, 3}, (int[]){1, 1},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    if (!check_knob(tm, target_host(), wl, "prefetch_w", cases[n].want_fallback,
                    kfmt("winograd %lld @%lld", (long long)c, (long long)hw)))
      return;
    Workload *wb = wl_conv2d(bf->name, (int64_t[]){1, c, hw, hw}, (int64_t[]){c, c, 3, 3}, (int[]){1, 1},
                             (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigSpace *bs = template_space(bf, target_host(), wb);
    CHECK_NN(bs);
    CHECK(!bs || !space_knob(bs, "prefetch_w"));
  }
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 14, 14}, (int64_t[]){32, 32, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  for (int d = 0; d <= 2; d++) {
    ConfigEntity *c = template_fallback(tm, target_host(), wl);
    CHECK_NN(c);
    if (!c) return;
    int no = 0;
    const int64_t *toc = cfg_split(c, "tile_oc", &no);
    CHECK(toc && no == 3 && toc[1] == 2 && toc[2] == 16);
    config_set_other(c, "prefetch_w", opt_int(d));
    Schedule *s;
    int na;
    Tensor **args;
    const char *text =
        tk_config_lowered(tm, target_host(), wl, c, &s, &na, &args, kfmt("winograd 32->32 @14, prefetch_w %d", d));
    if (!text) return;
    if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "%s\n", text);
    CHECK_MSG(!d == !strstr(text, "prefetch(kernel["), "prefetch_w %d:\n%s", d, text);
    if (d) {
      CHECK_CONTAINS(text, kfmt(" + %d), %d)]", d * 2 * 32 * 16, 36 * 32 * 32 - 1));
      CHECK_CONTAINS(text, "if ((floormod(cb, 4) == th))");
    }
    DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, kfmt("winograd 32 @14, prefetch_w %d", d));
    if (arr) tk_arrays_free(na, arr);
  }
}

/* conv2d_NCHWc.x86: prefetch_epilogue is in the space of float32 1x1
 * layers whose output is at least 512 KiB; the fallback takes 1 where the
 * output is at least the target's L2 and the reduction at most 8 vectors
 * or the weights fit the L2 (32->256 @32 and 512->256 @32: 1 MiB out;
 * not 512->2048 @16, 4 MiB of weights), else 0.  The touches are dealt over the block's input-channel
 * loop (a q loop of lines inside it), not made at the block's start.  On
 * 32->256 @32 with a residual add and relu fused, every value matches the
 * unscheduled lowering, and the output stage touches the residual (not
 * the conv's input) of the column block d ahead: 8 columns x 16 floats a
 * block (8 x 2 chunks). */
static void test_conv_prefetch_epilogue_knob(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm) return;
  const Target *t = target_host();
  struct {
    int64_t ic, oc, k, hw;
    bool want;
  } cases[] = {{32, 256, 1, 32, true},   {256, 128, 1, 32, true},  {512, 256, 1, 32, true}, {512, 2048, 1, 16, true},
               {256, 1024, 1, 14, true}, {512, 1024, 1, 14, true}, {32, 32, 1, 16, false}, {32, 256, 3, 32, false}};
  for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
    int64_t ic = cases[n].ic, oc = cases[n].oc, hw = cases[n].hw, k = cases[n].k;
    int p = (int)(k / 2);
    Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, ic, hw, hw}, (int64_t[]){oc, ic, k, k}, (int[]){1, 1},
                             (int[]){p, p, p, p}, (int[]){1, 1}, "float32", "float32");
    int64_t l2 = target_l2_bytes(t);
    int64_t want = !cases[n].want ? -1 : oc * hw * hw * 4 >= l2 / 2 && (ic <= 8 * t->vector_lanes || oc * ic * 4 <= l2);
    if (!check_knob(tm, t, wl, "prefetch_epilogue", want,
                    kfmt("%lld->%lld @%lld", (long long)ic, (long long)oc, (long long)hw)))
      return;
  }
  Workload *wl = wl_conv2d(tm->name, (int64_t[]){1, 32, 32, 32}, (int64_t[]){256, 32, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  for (int d = 0; d <= 2; d++) {
    ConfigEntity *c = template_fallback(tm, t, wl);
    CHECK_NN(c);
    if (!c) return;
    CHECK_INT(cfg_split_inner(c, "tile_ow"), 8);
    config_set_other(c, "prefetch_epilogue", opt_int(d));
    Tensor *data = te_placeholder_c("data", 5, (int64_t[]){1, 2, 32, 32, 16}, DT_F32);
    Tensor *kernel = te_placeholder_c("kernel", 6, (int64_t[]){16, 2, 1, 1, 16, 16}, DT_F32);
    Tensor *res = te_placeholder_c("residual", 5, (int64_t[]){1, 16, 32, 32, 16}, DT_F32);
    Tensor *conv = tm->compute(t, wl, c, 2, (Tensor *[]){data, kernel});
    CHECK_NN(conv);
    if (!conv) return;
    Expr **v = te_axis_vars(5, NULL);
    Tensor *out = tk_relu5(te_compute("T_add", 5, conv->shape, v, ir_add(te_read(conv, 5, v), te_read(res, 5, v)),
                                      "elemwise"));
    Schedule *s = te_create_schedule(1, &out);
    CHECK_OK(tm->schedule(t, s, c, conv, 1, &out));
    Tensor *args[] = {data, kernel, res, out};
    LoweredFunc *f = kiln_lower(s, 4, args, "f", NULL);
    CHECK_NN(f);
    if (!f) return;
    const char *text = kiln_lowered_str(f);
    CHECK_MSG(!d == !strstr(text, "prefetch(residual["), "prefetch_epilogue %d:\n%s", d, text);
    CHECK_MSG(!d == !strstr(text, "prefetch.residual.q"), "prefetch_epilogue %d not dealt over the reduction:\n%s", d,
              text);
    CHECK_MSG(!strstr(text, "prefetch(data["), "prefetch_epilogue %d touches the conv's input", d);
    if (d) CHECK_CONTAINS(text, kfmt(" + %d), %d)]", d * 8 * 16, 256 * 32 * 32 - 1));
    DLTensor **arr = tk_run_vs_unscheduled(s, 4, args, &copt, 1e-5, kfmt("32->256 @32 + residual, prefetch_epilogue %d", d));
    if (arr) tk_arrays_free(4, arr);
  }
}

/* A negative prefetch distance is refused by each template that reads
 * one, naming the template, the knob and what it counts (prefetch_epilogue,
 * read where a 1x1 layer has an epilogue, has the same check). */
static void test_prefetch_knob_negative(void) {
  struct {
    const char *tmpl, *knob, *unit;
  } cases[] = {{"conv2d_NCHWc.x86", "prefetch_w", "register blocks"},
               {"conv2d_NCHWc.x86", "prefetch_data", "input-channel chunks"},
               {"conv2d_NCHWc_winograd.x86", "prefetch_w", "register blocks"},
               {"dense_pack.x86", "prefetch_w", "column groups"}};
  for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
    const Template *tm = template_lookup(cases[n].tmpl);
    CHECK_NN(tm);
    if (!tm) continue;
    Workload *wl = strstr(tm->name, "dense")
                       ? wl_dense(tm->name, 49, 1024, 288, "float32", "float32")
                       : wl_conv2d(tm->name, (int64_t[]){1, 256, 7, 7}, (int64_t[]){64, 256, 3, 3}, (int[]){1, 1},
                                   (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *c = template_fallback(tm, target_host(), wl);
    CHECK_NN(c);
    if (!c) continue;
    config_set_other(c, cases[n].knob, opt_int(-1));
    Schedule *s = NULL;
    int na;
    Tensor **args;
    CHECK_MSG(template_instantiate(tm, target_host(), wl, c, &s, &na, &args) != 0, "%s %s = -1 instantiated",
              cases[n].tmpl, cases[n].knob);
    CHECK_CONTAINS(kiln_get_error(), kfmt("%s: config knob '%s' = -1, expected a number of %s ahead (0: none)",
                                          cases[n].tmpl, cases[n].knob, cases[n].unit));
  }
}

const TestCase prefetch_tests[] = {
    {"prefetch_text", test_prefetch_text},
    {"prefetch_spread_text", test_prefetch_spread_text},
    {"prefetch_runs", test_prefetch_runs},
    {"prefetch_errors", test_prefetch_errors},
    {"conv_prefetch_knob", test_conv_prefetch_knob},
    {"conv_prefetch_data_knob", test_conv_prefetch_data_knob},
    {"winograd_prefetch_knob", test_winograd_prefetch_knob},
    {"dense_prefetch_knob", test_dense_prefetch_knob},
    {"conv_prefetch_epilogue_knob", test_conv_prefetch_epilogue_knob},
    {"prefetch_knob_negative", test_prefetch_knob_negative},
    {NULL, NULL},
};
