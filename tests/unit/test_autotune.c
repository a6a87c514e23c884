/*
 * test_autotune.c - config spaces, entities and workloads: the mixed-radix
 * index order (first knob least significant) on a hand-computed example,
 * TVM's enumeration order of split choices, index <-> entity and entity
 * <-> JSON round trips, workload keys, the x86 templates' spaces and
 * fallback configs, and the errors for configs that are not in a space.
 */
#include <stdlib.h>

#include "autotune/autotune.h"
#include "kernel_util.h"

static void check_split(const KnobEntity *e, int64_t a, int64_t b) {
  CHECK_INT(e->kind, KNOB_SPLIT);
  CHECK_INT(e->n, 2);
  CHECK_INT(e->ints[0], a);
  CHECK_INT(e->ints[1], b);
}

/* tile_x: split of 8 (factors 1, 2, 4, 8: 4 choices), unroll: ot [true,
 * false] (2), order: reorder of 3 axes, all (6): 48 configs. */
static ConfigSpace *small_space(void) {
  ConfigSpace *cs = KNEW(ConfigSpace);
  space_init(cs);
  CHECK_OK(space_define_split(cs, "tile_x", 8, NULL));
  CHECK_OK(space_define_knob(cs, "unroll", 2, (OptVal[]){opt_bool(true), opt_bool(false)}));
  CHECK_OK(space_define_reorder(cs, "order", 3, "all", 0, NULL));
  return cs;
}

static void test_mixed_radix(void) {
  ConfigSpace *cs = small_space();
  CHECK_INT(space_size(cs), 48);
  /* 13 = 1 + 4 * (1 + 2 * 1): tile_x choice 1, unroll choice 1, order choice 1 */
  ConfigEntity *c = space_get(cs, 13);
  CHECK_NN(c);
  if (!c) return;
  CHECK_INT(c->index, 13);
  check_split(config_get(c, "tile_x"), -1, 2);
  CHECK_INT(config_get(c, "unroll")->val.kind, OPT_BOOL);
  CHECK_INT(config_get(c, "unroll")->val.i, 0);
  const KnobEntity *o = config_get(c, "order");
  CHECK_INT(o->ints[0], 0);
  CHECK_INT(o->ints[1], 2);
  CHECK_INT(o->ints[2], 1);
  CHECK_STR(config_entity_json(c), "[[\"tile_x\", \"sp\", [-1, 2]], [\"unroll\", \"ot\", false], [\"order\", \"re\", [0, 2, 1]]]");
  /* the first knob varies fastest */
  check_split(config_get(space_get(cs, 0), "tile_x"), -1, 1);
  check_split(config_get(space_get(cs, 3), "tile_x"), -1, 8);
  check_split(config_get(space_get(cs, 4), "tile_x"), -1, 1);
  CHECK_INT(config_get(space_get(cs, 4), "unroll")->val.i, 0);
  CHECK_INT(config_get(space_get(cs, 8), "order")->ints[2], 1);
  /* permutations in lexicographic order: the last one is [2, 1, 0] */
  o = config_get(space_get(cs, 47), "order");
  CHECK(o->ints[0] == 2 && o->ints[1] == 1 && o->ints[2] == 0);
  /* every index round-trips */
  for (int64_t i = 0; i < space_size(cs); i++) {
    ConfigEntity *e = space_get(cs, i);
    CHECK_INT(space_index_of(cs, e), i);
  }
  CHECK(space_get(cs, 48) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "outside the space (size 48)");
}

static void test_split_policies(void) {
  ConfigSpace cs;
  space_init(&cs);
  /* 3 parts of 12: TVM's DFS, entity [-1] + reversed(stack): the part next
   * to the remainder varies fastest; 18 = sum of tau(d) over d | 12 */
  CHECK_OK(space_define_split(&cs, "t3", 12, &(SplitOpts){.nparts = 3}));
  const Knob *k = space_knob(&cs, "t3");
  CHECK_INT(k->nchoices, 18);
  int64_t want[][3] = {{-1, 1, 1}, {-1, 2, 1}, {-1, 3, 1}, {-1, 4, 1}, {-1, 6, 1}, {-1, 12, 1}, {-1, 1, 2}, {-1, 2, 2}};
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 3; j++) CHECK_INT(k->choices[i].ints[j], want[i][j]);
  CHECK_INT(k->choices[17].ints[2], 12);
  /* power2 allows tails: 1, 2, 4, 8 for 10 */
  CHECK_OK(space_define_split(&cs, "p2", 10, &(SplitOpts){.policy = "power2"}));
  k = space_knob(&cs, "p2");
  CHECK_INT(k->nchoices, 4);
  CHECK_INT(k->choices[3].ints[1], 8);
  /* verbose: factors and powers of two of 12: 1 2 3 4 6 8 12 */
  CHECK_OK(space_define_split(&cs, "vb", 12, &(SplitOpts){.policy = "verbose"}));
  CHECK_INT(space_knob(&cs, "vb")->nchoices, 7);
  /* max_factor and candidate */
  CHECK_OK(space_define_split(&cs, "mf", 64, &(SplitOpts){.max_factor = 16}));
  CHECK_INT(space_knob(&cs, "mf")->nchoices, 5);
  CHECK_OK(space_define_split(&cs, "cd", 64, &(SplitOpts){.policy = "candidate", .ncand = 2, .cand = (int64_t[]){-1, 4, 4, 16}}));
  CHECK_INT(space_knob(&cs, "cd")->choices[1].ints[1], 16);
  /* annotate: none/unroll per axis, the first axis slowest */
  CHECK_OK(space_define_annotate(&cs, "ann", 2, "try_unroll", 0, NULL));
  k = space_knob(&cs, "ann");
  CHECK_INT(k->nchoices, 4);
  CHECK_STR(k->choices[1].anns[0], "none");
  CHECK_STR(k->choices[1].anns[1], "unroll");
  CHECK_OK(space_define_annotate(&cs, "annv", 2, "try_unroll_vec", 0, NULL));
  CHECK_INT(space_knob(&cs, "annv")->nchoices, 6); /* 2 x 3: vec only on the last axis */
  /* errors */
  CHECK(space_define_split(&cs, "t3", 12, NULL) != 0);
  CHECK_CONTAINS(kiln_get_error(), "knob 't3' defined twice");
  CHECK(space_define_split(&cs, "bad", 12, &(SplitOpts){.policy = "random"}) != 0);
  CHECK_CONTAINS(kiln_get_error(), "unknown policy 'random'");
}

static void test_entity_json(void) {
  const char *text = "[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], [\"tile_ow\", \"sp\", [-1, 8]], "
                     "[\"unroll_kw\", \"ot\", true]]";
  ConfigEntity *c = config_entity_from_json(text);
  CHECK_NN(c);
  if (!c) return;
  CHECK_INT(c->n, 4);
  CHECK_INT(cfg_split_inner(c, "tile_ow"), 8);
  CHECK_INT(cfg_other_int(c, "unroll_kw", -1), 1);
  CHECK_STR(config_entity_json(c), text);
  /* other kinds, compact input */
  const char *t2 = "[[\"a\",\"an\",[\"none\",\"unroll\",\"vec\"]],[\"b\",\"re\",[2,0,1]],[\"c\",\"ot\",\"fast\"],[\"d\",\"ot\",1500]]";
  ConfigEntity *c2 = config_entity_from_json(t2);
  CHECK_NN(c2);
  if (c2) {
    CHECK_STR(config_entity_json(c2), "[[\"a\", \"an\", [\"none\", \"unroll\", \"vec\"]], [\"b\", \"re\", [2, 0, 1]], "
                                      "[\"c\", \"ot\", \"fast\"], [\"d\", \"ot\", 1500]]");
    ConfigEntity *back = config_entity_from_json(config_entity_json(c2));
    CHECK(back && config_equal(back, c2));
  }
  /* the record's config object, v0.2 written, v0.1 and v0.2 read */
  c->index = 228;
  const char *v2 = config_json(c);
  CHECK_STR(v2, "{\"index\": 228, \"code_hash\": null, \"entity\": [[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", "
                "[-1, 16]], [\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", true]]}");
  ConfigEntity *r2 = config_from_json(v2);
  CHECK(r2 && r2->index == 228 && config_equal(r2, c));
  ConfigEntity *r1 = config_from_json("{\"i\": 714385, \"t\": \"winograd\", \"c\": null, \"e\": [[\"tile_b\", \"sp\", [36, 1, 1, 1]], "
                                      "[\"auto_unroll_max_step\", \"ot\", 1500]]}");
  CHECK_NN(r1);
  if (r1) {
    CHECK_INT(r1->index, 714385);
    CHECK_STR(r1->template_key, "winograd");
    CHECK_INT(config_get(r1, "tile_b")->ints[0], 36);
    CHECK_INT(cfg_other_int(r1, "auto_unroll_max_step", 0), 1500);
  }
  /* errors */
  CHECK(config_entity_from_json("[[\"x\", \"zz\", 1]]") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "unknown knob kind 'zz'");
  CHECK(config_entity_from_json("[[\"x\", \"sp\", [-1, 0]]]") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "part 1 is 0");
  CHECK(config_entity_from_json("[[\"x\", \"sp\"]]") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "expected [name, kind, value]");
  CHECK(config_entity_from_json("{") == NULL);
}

static void test_workload_key(void) {
  Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 64, 56, 56}, (int64_t[]){64, 64, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  CHECK_STR(wl->key, "[\"conv2d_NCHWc.x86\", [\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", [64, 64, 3, 3], "
                     "\"float32\"], [1, 1], [1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", \"float32\"]");
  const char *args = wl_args_json(wl);
  CHECK_STR(args, "[[\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", [64, 64, 3, 3], \"float32\"], [1, 1], "
                  "[1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", \"float32\"]");
  Workload *back = wl_from_json("conv2d_NCHWc.x86", args);
  CHECK(back && wl_equal(back, wl));
  Conv2DWorkload c;
  CHECK_OK(wl_conv2d_parse(wl, &c));
  CHECK(c.OH == 56 && c.OW == 56 && c.IC == 64 && c.KH == 3 && !c.depthwise);
  Workload *d = wl_dense("dense_pack.x86", 1, 1000, 2048, "float32", NULL);
  CHECK_STR(d->key, "[\"dense_pack.x86\", [\"TENSOR\", [1, 2048], \"float32\"], [\"TENSOR\", [1000, 2048], \"float32\"], "
                    "null, \"float32\"]");
  DenseWorkload dn;
  CHECK_OK(wl_dense_parse(d, &dn));
  CHECK(dn.M == 1 && dn.N == 1000 && dn.K == 2048);
  Workload *f = wl_from_json("x", "[0.5, 2.0, \"s\", null, [1, 2]]");
  CHECK(f && !strcmp(f->key, "[\"x\", 0.5, 2, \"s\", null, [1, 2]]"));
  CHECK(wl_from_json("x", "[[\"TENSOR\", [1, 2]]]") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "expected [\"TENSOR\", shape, dtype]");
  Workload *bad = wl_from_json("conv2d_NCHWc.x86", "[[\"TENSOR\", [1, 8, 5, 5], \"float32\"], [\"TENSOR\", [4, 3, 3, 3], "
                                                   "\"float32\"], [1, 1], [0, 0, 0, 0], [1, 1], \"NCHW\", \"NCHW\", \"float32\"]");
  CHECK(bad && wl_conv2d_parse(bad, &c) != 0);
  CHECK_CONTAINS(kiln_get_error(), "kernel has 3 input channels, data has 8");
}

static void test_conv_space(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm) return;
  Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 64, 56, 56}, (int64_t[]){64, 64, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (!cs) return;
  CHECK_INT(cs->nknobs, 4);
  CHECK_STR(cs->knobs[0].name, "tile_ic");
  CHECK_STR(cs->knobs[3].name, "unroll_kw");
  CHECK_INT(space_size(cs), 7 * 7 * 8 * 2);
  /* tile_ic [-1, 16] is factor 4 of 64, tile_oc too, tile_ow [-1, 8] is 4
   * of 56's factors, unroll_kw true is 0: 4 + 7 * (4 + 7 * (4 + 8 * 0)) */
  ConfigEntity *c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                            "[\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", true]]");
  CHECK_INT(space_index_of(cs, c), 228);
  CHECK(config_equal(space_get(cs, 228), c));
  /* an explicit outer part is accepted when it multiplies out */
  ConfigEntity *c2 = config_entity_from_json("[[\"tile_ic\", \"sp\", [4, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                             "[\"tile_ow\", \"sp\", [7, 8]], [\"unroll_kw\", \"ot\", true]]");
  CHECK_INT(space_index_of(cs, c2), 228);
  /* not in the space: a reason */
  ConfigEntity *bad = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 7]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                              "[\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", true]]");
  CHECK_INT(space_index_of(cs, bad), -1);
  CHECK_CONTAINS(kiln_get_error(), "knob 'tile_ic': [-1, 7] is not one of its 7 choices");
  CHECK(tm->check(target_host(), bad, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_ic': the parts multiply to 7, which does not divide the 64 input channels");
  ConfigEntity *bad2 = config_entity_from_json("[[\"tile_ic\", \"sp\", [3, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
                                               "[\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", true]]");
  CHECK_INT(space_index_of(cs, bad2), -1);
  CHECK_CONTAINS(kiln_get_error(), "does not split extent 64");
  CHECK(tm->check(target_host(), bad2, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "the outer part is 3");
  ConfigEntity *missing = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 16]]]");
  CHECK_INT(space_index_of(cs, missing), -1);
  CHECK_CONTAINS(kiln_get_error(), "config has no value for knob 'tile_oc'");
  /* 1x1 kernels have tile_oh instead of unroll_kw */
  Workload *w1 = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 256, 14, 14}, (int64_t[]){1024, 256, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  ConfigSpace *cs1 = template_space(tm, target_host(), w1);
  CHECK(cs1 && space_knob(cs1, "tile_oh") && !space_knob(cs1, "unroll_kw"));
  CHECK(template_lookup("conv2d_nchw.cuda") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "no schedule template named 'conv2d_nchw.cuda' (known: conv2d_NCHWc.x86");
}

static void test_fallbacks(void) {
  const char *saved = getenv("KILN_SIMD_WIDTH");
  char *keep = saved ? xstrdup(saved) : NULL;
  setenv("KILN_SIMD_WIDTH", "16", 1);
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  Workload *wl = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 64, 56, 56}, (int64_t[]){64, 64, 3, 3}, (int[]){1, 1},
                           (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *f = template_fallback(tm, target_host(), wl);
  CHECK_NN(f);
  if (f) {
    CHECK(f->is_fallback);
    /* 14 columns x 2 output-channel chunks (the schedule's two-chunk
     * block) rather than TVM's 28 x 1 */
    CHECK_STR(config_entity_json(f), "[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], [\"tile_ow\", "
                                     "\"sp\", [-1, 14]], [\"unroll_kw\", \"ot\", false]]");
    CHECK(f->index >= 0);
    CHECK_OK(tm->check(target_host(), f, wl));
  }
  /* a 3-channel stem with overlapping windows at batch 1: kw unrolled,
   * 7 columns (x 2 chunks in the schedule); at batch 8, and a patchifying
   * window (stride = width), the general rule: the widest block */
  Workload *stem = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 3, 224, 224}, (int64_t[]){64, 3, 7, 7}, (int[]){2, 2},
                             (int[]){3, 3, 3, 3}, (int[]){1, 1}, "float32", "float32");
  ConfigEntity *fs = template_fallback(tm, target_host(), stem);
  CHECK_NN(fs);
  if (fs) {
    CHECK_INT(cfg_split_inner(fs, "tile_ow"), 7);
    CHECK(cfg_other_int(fs, "unroll_kw", 0) == 1);
    CHECK(fs->index >= 0);
  }
  Workload *stem8 = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){8, 3, 224, 224}, (int64_t[]){64, 3, 7, 7}, (int[]){2, 2},
                              (int[]){3, 3, 3, 3}, (int[]){1, 1}, "float32", "float32");
  fs = template_fallback(tm, target_host(), stem8);
  CHECK(fs && cfg_split_inner(fs, "tile_ow") == 28 && cfg_other_int(fs, "unroll_kw", 1) == 0);
  Workload *patch = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 3, 224, 224}, (int64_t[]){768, 3, 16, 16},
                              (int[]){16, 16}, (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  fs = template_fallback(tm, target_host(), patch);
  CHECK(fs && cfg_split_inner(fs, "tile_ow") == 14 && cfg_other_int(fs, "unroll_kw", 1) == 0);
  /* output channels the SIMD width does not divide: the largest power of two
   * that divides them (vector code); input channels: the largest divisor */
  Workload *w3 = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 3, 224, 224}, (int64_t[]){24, 3, 7, 7}, (int[]){2, 2},
                           (int[]){3, 3, 3, 3}, (int[]){1, 1}, "float32", "float32");
  f = template_fallback(tm, target_host(), w3);
  CHECK(f && cfg_split_inner(f, "tile_ic") == 3 && cfg_split_inner(f, "tile_oc") == 8 && cfg_split_inner(f, "tile_ow") == 7 &&
        cfg_other_int(f, "unroll_kw", 0) == 1);
  /* (its three chunks of 8 make one block: a stem's 7 columns x 3 chunks) */
  Workload *w4 = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 512, 13, 13}, (int64_t[]){1000, 512, 1, 1}, (int[]){1, 1},
                           (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  f = template_fallback(tm, target_host(), w4);
  CHECK(f && cfg_split_inner(f, "tile_oc") == 8 && cfg_split_inner(f, "tile_ic") == 8);
  setenv("KILN_SIMD_WIDTH", "8", 1); /* AVX2 */
  f = template_fallback(tm, target_host(), wl);
  CHECK(f && cfg_split_inner(f, "tile_ic") == 8 && cfg_split_inner(f, "tile_oc") == 8 && cfg_split_inner(f, "tile_ow") == 8);
  setenv("KILN_SIMD_WIDTH", "16", 1);
  /* every CPU template's fallback passes its own check on a few workloads
   * (the CUDA ones: test_cuda_templates.c, at every seed workload) */
  for (int i = 0; i < template_count(); i++) {
    const Template *t = template_at(i);
    if (!template_serves(t, target_host())) continue;
    Workload *w;
    if (strstr(t->name, "batch_matmul"))
      w = wl_batch_matmul(t->name, 3, 13, 32, 20, "float32", "float32");
    else if (strstr(t->name, "dense"))
      w = wl_dense(t->name, 1, 1000, 2048, "float32", "float32");
    else if (strstr(t->name, "group_conv2d"))
      w = wl_group_conv2d(t->name, (int64_t[]){1, 256, 28, 28}, (int64_t[]){256, 8, 3, 3}, (int[]){2, 2},
                          (int[]){1, 1, 1, 1}, (int[]){1, 1}, 32, "float32", "float32");
    else if (strstr(t->name, "depthwise"))
      w = wl_conv2d(t->name, (int64_t[]){1, 32, 112, 112}, (int64_t[]){32, 1, 3, 3}, (int[]){1, 1}, (int[]){1, 1, 1, 1},
                    (int[]){1, 1}, "float32", "float32");
    else if (strstr(t->name, "winograd")) /* 3x3 stride 1 only */
      w = wl_conv2d(t->name, (int64_t[]){1, 256, 14, 14}, (int64_t[]){256, 256, 3, 3}, (int[]){1, 1},
                    (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
    else
      w = wl_conv2d(t->name, (int64_t[]){1, 256, 14, 14}, (int64_t[]){1024, 256, 1, 1}, (int[]){1, 1},
                    (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
    ConfigEntity *fc = template_fallback(t, target_host(), w);
    CHECK_MSG(fc != NULL, "%s: %s", t->name, kiln_get_error());
    if (!fc) continue;
    CHECK_MSG(t->check(target_host(), fc, w) == 0, "%s fallback %s: %s", t->name, config_entity_json(fc), kiln_get_error());
    ConfigSpace *cs = template_space(t, target_host(), w);
    CHECK_MSG(cs && fc->index >= 0 && space_index_of(cs, fc) == fc->index, "%s: fallback %s not in its space", t->name,
              config_entity_json(fc));
  }
  if (keep) {
    setenv("KILN_SIMD_WIDTH", keep, 1);
    free(keep);
  } else {
    unsetenv("KILN_SIMD_WIDTH");
  }
}

const TestCase autotune_tests[] = {
    {"mixed_radix", test_mixed_radix},
    {"split_policies", test_split_policies},
    {"entity_json", test_entity_json},
    {"workload_key", test_workload_key},
    {"conv_space", test_conv_space},
    {"fallbacks", test_fallbacks},
    {NULL, NULL},
};
