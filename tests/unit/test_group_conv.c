/*
 * test_group_conv.c - group_conv2d_NCHWc.x86, the grouped convolution
 * template.
 *
 * Random grouped workloads (2 to 8 groups of 1 to 8 input and output
 * channels, 1x1 and 3x3 windows, stride 1 and 2, asymmetric padding,
 * dilation), each with a random config drawn from the template's own
 * space, with and without a fused epilogue, built, run on random data and
 * compared with the unscheduled lowering of the same compute (1e-6) and
 * with a naive grouped convolution in double (1e-5); the same for groups
 * packed side by side in vectors (group_pack), whose input must be one
 * permuted load where the groups divide the vector.  Then: configs whose
 * blocks cross a group are rejected with the reason, the workload's key
 * and a tuning record of the task round-trip, and the fallback picks
 * per-group blocks.  Builds use -O1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "graph/graph.h"
#include "kernel_util.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

typedef struct GCase {
  int64_t N, C, H, W, O, G, KH, KW, OH, OW;
  int sh, sw, pt, pl, pb, pr, dh, dw;
} GCase;

/* The groups a case draws: up to 8 channels; 2 or 3 groups of 20, 24 or
 * 40 output channels (the group_pad knob's groups: more than one 16-lane
 * vector, not a whole number); or groups of 2, 4, 8 or 12 output channels
 * making whole 16-channel vectors (the group_pack knob's: 12 does not
 * divide 16, so a vector holds parts of two groups). */
typedef enum GForm { FORM_SMALL, FORM_WIDE, FORM_PACKED, FORM_PAIR, FORM_BLEND } GForm;

static GCase random_case(GForm form) {
  GCase c = {0};
  bool wide = form == FORM_WIDE;
  c.N = test_rand_between(1, 2);
  c.G = wide ? test_pick(2, (int64_t[]){2, 3}) : test_pick(5, (int64_t[]){2, 3, 4, 4, 8});
  c.C = c.G * test_pick(6, (int64_t[]){1, 2, 3, 4, 4, 8});
  c.O = c.G * (wide ? test_pick(3, (int64_t[]){20, 24, 40}) : test_pick(6, (int64_t[]){1, 2, 4, 6, 8, 8}));
  if (form == FORM_PAIR) { /* 2 to 5 groups of 24 or 40: two groups are 3 or 5 whole vectors */
    c.G = test_rand_between(2, 5);
    c.O = c.G * test_pick(3, (int64_t[]){24, 24, 40});
    c.C = c.G * test_pick(5, (int64_t[]){1, 3, 8, 16, 24});
  }
  if (form == FORM_PACKED || form == FORM_BLEND) { /* FORM_BLEND: two groups of 8 a vector */
    int64_t kpg = form == FORM_BLEND ? 8 : test_pick(6, (int64_t[]){2, 4, 4, 8, 8, 12});
    c.G = kpg == 12 ? 4 : 16 / kpg * test_pick(2, (int64_t[]){1, 2});
    c.O = c.G * kpg;
    int64_t cpg = kpg == 12 ? test_pick(3, (int64_t[]){3, 6, 12}) : test_pick(4, (int64_t[]){1, 2, 4, kpg});
    c.C = c.G * (cpg < kpg ? cpg : kpg); /* at most a vector of input channels for the groups of one */
  }
  c.KH = c.KW = test_pick(3, (int64_t[]){1, 3, 3});
  c.sh = (int)test_rand_between(1, 2);
  c.sw = test_rand() % 4 ? c.sh : 3 - c.sh;
  c.dh = c.dw = test_rand() % 6 == 0 ? 2 : 1;
  c.pt = (int)test_rand_between(0, 2), c.pl = (int)test_rand_between(0, 1);
  c.pb = (int)test_rand_between(0, 1), c.pr = (int)test_rand_between(0, 2);
  c.H = test_rand_between(5, 10), c.W = test_rand_between(5, 12);
  c.OH = (c.H + c.pt + c.pb - ((c.KH - 1) * c.dh + 1)) / c.sh + 1;
  c.OW = (c.W + c.pl + c.pr - ((c.KW - 1) * c.dw + 1)) / c.sw + 1;
  return c;
}

/* out[n, o, y, x] = sum over the input channels of o's group (NCHW, OIHW
 * with I = C / G), in double. */
static void ref_gconv(const GCase *c, const float *d, const float *k, double *out) {
  int64_t cpg = c->C / c->G, kpg = c->O / c->G;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t o = 0; o < c->O; o++)
      for (int64_t y = 0; y < c->OH; y++)
        for (int64_t x = 0; x < c->OW; x++) {
          double s = 0;
          int64_t g = o / kpg;
          for (int64_t i = 0; i < cpg; i++)
            for (int64_t ky = 0; ky < c->KH; ky++)
              for (int64_t kx = 0; kx < c->KW; kx++) {
                int64_t ih = y * c->sh + ky * c->dh - c->pt, iw = x * c->sw + kx * c->dw - c->pl;
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                s += (double)d[((n * c->C + g * cpg + i) * c->H + ih) * c->W + iw] *
                     k[((o * cpg + i) * c->KH + ky) * c->KW + kx];
              }
          out[((n * c->O + o) * c->OH + y) * c->OW + x] = s;
        }
}

static Workload *case_workload(const GCase *c) {
  return wl_group_conv2d("group_conv2d_NCHWc.x86", (int64_t[]){c->N, c->C, c->H, c->W},
                         (int64_t[]){c->O, c->C / c->G, c->KH, c->KW}, (int[]){c->sh, c->sw},
                         (int[]){c->pt, c->pl, c->pb, c->pr}, (int[]){c->dh, c->dw}, c->G, "float32", "float32");
}

typedef enum Epi { EPI_NONE, EPI_BIAS_RELU, EPI_RESIDUAL_RELU, EPI__COUNT } Epi;
static const char *epi_name[] = {"none", "bias+relu", "residual+relu"};

/* wider_block: the data in a block 2 or 4 times the config's input block
 * (at most 16), with up to a block of padded channels (random values)
 * after the real ones, as alter_layout hands a grouped conv the tensor its
 * producer made; the compute reads it in place (its repack). */
static bool run_case(const Template *tm, Epi epi, int caseno, GForm form, bool wider_block) {
  GCase c = random_case(form);
  Workload *wl = case_workload(&c);
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_MSG(cs != NULL, "%s: %s", wl->key, kiln_get_error());
  if (!cs) return false;
  int64_t idx = (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)space_size(cs));
  ConfigEntity *cfg = space_get(cs, idx);
  if (form == FORM_PACKED || form == FORM_BLEND) config_set_other(cfg, "group_pack", opt_bool(true));
  if (form == FORM_BLEND) config_set_other(cfg, "pack_blend", opt_bool(true)); /* the two groups blended */
  if (form == FORM_PAIR) { /* kept blocks that divide the vector, where the form applies */
    config_set_other(cfg, "group_pair", opt_bool(true));
    if (16 % cfg_split_inner(cfg, "tile_oc")) config_set_split(cfg, "tile_oc", 2, (int64_t[]){-1, 8});
  }
  CHECK_OK(tm->check(target_host(), cfg, wl));
  const char *desc = kfmt("case %d: %s: config %lld %s, epilogue %s", caseno, wl->key, (long long)idx,
                          config_entity_json(cfg), epi_name[epi]);
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  int nin;
  Tensor **in;
  if (tm->placeholders(target_host(), wl, cfg, &nin, &in)) {
    test_fail(__FILE__, __LINE__, "%s: placeholders: %s", desc, kiln_get_error());
    return false;
  }
  if (wider_block) {
    int64_t ib0 = te_dim(in[0], 4), db = ib0 * test_pick(2, (int64_t[]){2, 4});
    if (db > 16) db = ib0;
    int64_t cp = (c.C + test_rand_between(0, db - 1) + db - 1) / db * db;
    in[0] = te_placeholder_c("data", 5, (int64_t[]){c.N, cp / db, c.H, c.W, db}, DT_F32);
    desc = kfmt("%s, data in blocks of %lld with %lld channels", desc, (long long)db, (long long)cp);
  }
  Tensor *data = in[0], *kernel = in[1];
  Tensor *conv = tm->compute(target_host(), wl, cfg, 2, in);
  CHECK_MSG(conv != NULL, "%s: %s", desc, kiln_get_error());
  if (!conv) return false;
  CHECK_MSG((cfg_other_int(cfg, "group_pack", 0) != 0) == !strcmp(conv->tag, "group_conv2d_NCHWc_packed"),
            "%s: compute tagged %s", desc, conv->tag);
  /* the output block; the kernel's (kb) is larger in the padded-group form,
   * whose kernel holds kpgp >= kpg output channels a group */
  int64_t ib = te_dim(data, 4), ob = te_dim(conv, 4), kb = te_dim(kernel, 5), dch = te_dim(data, 1) * ib;
  int64_t kib = te_dim(kernel, 4); /* the conv's input block (the data's or a divisor of it) */
  int64_t kpg = c.O / c.G, kpgp = te_dim(kernel, 0) * kb / c.G;
  /* the paired form: two groups a pair in whole chunks (row o is channel
   * o; an odd count's added group after the real ones) */
  bool pair = topi_x86_group_conv_paired(target_host(), c.O, c.G, cfg) != 0;
  int64_t occ = te_dim(conv, 1);
  if (pair) {
    CHECK_MSG(te_dim(kernel, 0) * kb == (c.G + 1) / 2 * 2 * kpg && occ == c.O / ob,
              "%s: paired kernel of %lld chunks, output of %lld", desc, (long long)te_dim(kernel, 0), (long long)occ);
    kpgp = kpg;
  } else {
    CHECK_MSG(kpgp == kpg || (kpgp > kpg && topi_x86_group_conv_padded(target_host(), c.O, c.G, cfg) == kpgp),
              "%s: kernel of %lld channels a group", desc, (long long)kpgp);
  }
  Tensor *bias = NULL, *res = NULL, *out = conv;
  if (epi == EPI_BIAS_RELU) {
    bias = te_placeholder_c("bias", 4, (int64_t[]){occ, 1, 1, ob}, DT_F32);
    Expr **v = te_axis_vars(5, NULL);
    out = tk_relu5(te_compute("T_add", 5, conv->shape, v,
                              ir_add(te_read(conv, 5, v), te_read4(bias, v[1], ir_i32(0), ir_i32(0), v[4])),
                              "broadcast"));
  } else if (epi == EPI_RESIDUAL_RELU) {
    res = te_placeholder_c("residual", 5, (int64_t[]){c.N, occ, c.OH, c.OW, ob}, DT_F32);
    Expr **v = te_axis_vars(5, NULL);
    out = tk_relu5(te_compute("T_add", 5, conv->shape, v, ir_add(te_read(conv, 5, v), te_read(res, 5, v)), "elemwise"));
  }
  Schedule *s = te_create_schedule(1, &out);
  if (tm->schedule(target_host(), s, cfg, conv, 1, &out)) {
    test_fail(__FILE__, __LINE__, "%s: schedule failed: %s", desc, kiln_get_error());
    return false;
  }
  Tensor *args[5];
  int na = 0;
  args[na++] = data;
  args[na++] = kernel;
  if (bias) args[na++] = bias;
  if (res) args[na++] = res;
  args[na++] = out;
  DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, desc);
  if (!arr) return false;
  int64_t cpg = c.C / c.G, no = c.N * c.O * c.OH * c.OW;
  /* NCHW data and OIHW kernel: the packed inputs unpacked */
  float *d = xmalloc(sizeof(float) * (size_t)(c.N * c.C * c.H * c.W)), *k = xmalloc(sizeof(float) * (size_t)(c.O * cpg * c.KH * c.KW));
  const float *pd = arr[0]->data, *pk = arr[1]->data;
  for (int64_t n = 0; n < c.N; n++)
    for (int64_t ch = 0; ch < c.C; ch++)
      for (int64_t y = 0; y < c.H; y++)
        for (int64_t x = 0; x < c.W; x++)
          d[((n * c.C + ch) * c.H + y) * c.W + x] =
              pd[(((n * (dch / ib) + ch / ib) * c.H + y) * c.W + x) * ib + ch % ib];
  for (int64_t o = 0; o < c.O; o++)
    for (int64_t i = 0; i < cpg; i++)
      for (int64_t y = 0; y < c.KH; y++)
        for (int64_t x = 0; x < c.KW; x++) {
          int64_t ko = o / kpg * kpgp + o % kpg; /* o's row of the (padded) kernel */
          k[((o * cpg + i) * c.KH + y) * c.KW + x] =
              pk[(((((ko / kb) * (cpg / kib) + i / kib) * c.KH + y) * c.KW + x) * kib + i % kib) * kb + ko % kb];
        }
  bool ok = true;
  {
    double *ref = xmalloc(sizeof(double) * (size_t)no);
    ref_gconv(&c, d, k, ref);
    DLTensor *want = tk_array_for(out);
    float *wv = want->data;
    const float *bv = bias ? arr[2]->data : NULL, *rv = res ? arr[2]->data : NULL;
    for (int64_t n = 0; n < c.N; n++)
      for (int64_t o = 0; o < c.O; o++)
        for (int64_t y = 0; y < c.OH; y++)
          for (int64_t x = 0; x < c.OW; x++) {
            int64_t i5 = (((n * occ + o / ob) * c.OH + y) * c.OW + x) * ob + o % ob;
            double v = ref[((n * c.O + o) * c.OH + y) * c.OW + x];
            if (bv) v = fmax(v + bv[o], 0);
            if (rv) v = fmax(v + rv[i5], 0);
            wv[i5] = (float)v;
          }
    double err = tk_rel_err(arr[na - 1], want);
    if (!(err < 1e-5)) {
      test_fail(__FILE__, __LINE__, "%s: relative error %g against a naive grouped convolution", desc, err);
      ok = false;
    }
    kiln_array_free(want);
    free(ref);
  }
  tk_arrays_free(na, arr);
  free(d), free(k);
  /* packed groups that divide the vector, on the data block they fill:
   * every lane reads its group's channel by a permuted load, no gather;
   * blended (pack_blend, two groups a vector): by two broadcasts, no
   * permuted load */
  if (ok && (form == FORM_PACKED || form == FORM_BLEND) && 16 % kpg == 0 && !wider_block &&
      target_host()->vector_lanes == 16) {
    bool blend = topi_x86_group_conv_pack_blend(target_host(), c.C, c.O, c.G, cfg);
    LoweredFunc *f = kiln_lower(s, na, args, "f", NULL);
    char *src = f ? codegen_c(&f, 1, 0, NULL) : NULL;
    CHECK_MSG(src && !strstr(src, "kiln_gather_") && (blend ? !strstr(src, "kiln_permld_") && strstr(src, "x_second")
                                                            : strstr(src, "kiln_permld_") != NULL),
              "%s: the packed lanes' input is not %s", desc, blend ? "two broadcasts" : "one permuted load");
    free(src);
  }
  return ok;
}

static void test_random(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(12); i++) run_case(tm, (Epi)(i % EPI__COUNT), i, FORM_SMALL, false);
}

/* The input read in place from a wider block, padded channels after the
 * real ones, in both forms (groups of up to 8 and of 20 to 40). */
static void test_random_wider_block(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(12); i++)
    run_case(tm, (Epi)(i % EPI__COUNT), i, i % 3 == 2 && target_host()->vector_lanes >= 16 ? FORM_WIDE : FORM_SMALL,
             true);
}

/* Groups of 20, 24 and 40 output channels: configs with and without the
 * padded-group form (group_pad), which computes a group as whole vectors
 * and keeps the real channels. */
static void test_random_padded(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm || target_host()->vector_lanes < 16) return;
  for (int i = 0; i < tk_template_cases(9); i++) run_case(tm, (Epi)(i % EPI__COUNT), i, FORM_WIDE, false);
}

/* Groups of 2 to 12 output channels packed side by side in 16-lane
 * vectors (group_pack set on a random point of the space), on their own
 * data block and (every other case) read from a wider one. */
static void test_random_packed(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm || target_host()->vector_lanes != 16) return;
  for (int i = 0; i < tk_template_cases(12); i++) run_case(tm, (Epi)(i % EPI__COUNT), i, FORM_PACKED, i % 2 == 1);
}

/* Two groups of 8 output channels a 16-lane vector read blended
 * (pack_blend: two broadcasts and a blend instead of a permuted load), on
 * their own data block and (every other case) read from a wider one. */
static void test_random_blended(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm || target_host()->vector_lanes != 16) return;
  for (int i = 0; i < tk_template_cases(8); i++) run_case(tm, (Epi)(i % EPI__COUNT), i, FORM_BLEND, i % 2 == 1);
}

/* Groups of 24 and 40 output channels two at a time in whole 16-lane
 * vectors (group_pair set on a random point of the space), odd group
 * counts included (a last pair of one real group), on their own data
 * block and (every other case) read from a wider one. */
static void test_random_paired(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  CHECK_NN(tm);
  if (!tm || target_host()->vector_lanes != 16) return;
  for (int i = 0; i < tk_template_cases(12); i++) run_case(tm, (Epi)(i % EPI__COUNT), i, FORM_PAIR, i % 2 == 1);
}

/* ResNeXt-50's first grouped layer: 32 groups of 4 channels. */
static Workload *resnext_wl(void) {
  return wl_group_conv2d("group_conv2d_NCHWc.x86", (int64_t[]){1, 128, 56, 56}, (int64_t[]){128, 4, 3, 3},
                         (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, 32, "float32", "float32");
}

/* A RegNetY-style grouped 3x3 layer: groups of 8 channels, input
 * hw x hw, stride s, padding 1. */
static Workload *regnety_wl(const Template *tm, int64_t ch, int64_t hw, int s) {
  return wl_group_conv2d(tm->name, (int64_t[]){1, ch, hw, hw}, (int64_t[]){ch, 8, 3, 3}, (int[]){s, s},
                         (int[]){1, 1, 1, 1}, (int[]){1, 1}, ch / 8, "float32", "float32");
}

static void test_space_and_fallback(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  if (!tm) return;
  Workload *wl = resnext_wl();
  /* the splits range over one group's channels (4: blocks 1, 2, 4),
   * tile_ow over the 56 columns (8 divisors), unroll_kw 2, and with 16
   * lanes group_pack 2 */
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_NN(cs);
  if (cs) CHECK_INT(space_size(cs), 3 * 3 * 8 * 2 * (target_host()->vector_lanes == 16 ? 2 : 1));
  ConfigEntity *fb = template_fallback(tm, target_host(), wl);
  CHECK_NN(fb);
  if (fb) {
    CHECK_INT(cfg_split_inner(fb, "tile_ic"), 4);
    CHECK_INT(cfg_split_inner(fb, "tile_oc"), 4);
    CHECK(fb->index >= 0); /* the fallback is a point of the space */
    if (target_host()->vector_lanes == 16) { /* four groups a vector, 14 columns, kw unrolled */
      CHECK_INT(cfg_other_int(fb, "group_pack", -1), 1);
      CHECK_INT(topi_x86_group_conv_packed(target_host(), 128, 128, 32, fb), 16);
      CHECK_INT(cfg_split_inner(fb, "tile_ow"), 14);
    }
  }
  /* RegNet-style groups of 24: a power-of-two block dividing 24 */
  Workload *rg = wl_group_conv2d(tm->name, (int64_t[]){1, 168, 28, 28}, (int64_t[]){168, 24, 3, 3}, (int[]){2, 2},
                                 (int[]){1, 1, 1, 1}, (int[]){1, 1}, 7, "float32", "float32");
  ConfigEntity *f2 = template_fallback(tm, target_host(), rg);
  CHECK(f2 && cfg_split_inner(f2, "tile_oc") == (target_host()->vector_lanes >= 8 ? 8 : target_host()->vector_lanes));
  if (f2 && target_host()->vector_lanes == 16) {
    /* in the paired-group form (two groups of 24 in 3 chunks): 7 columns
     * x 3 chunks; group_pad (24 computed as 32) set beneath it */
    CHECK_INT(cfg_other_int(f2, "group_pair", -1), 1);
    CHECK_INT(cfg_other_int(f2, "group_pad", -1), 1);
    CHECK_INT(cfg_split_inner(f2, "tile_ow"), 7);
    CHECK_INT(topi_x86_group_conv_paired(target_host(), 168, 7, f2), 16);
    CHECK_INT(topi_x86_group_conv_padded(target_host(), 168, 7, f2), 32);
    ConfigSpace *rs = template_space(tm, target_host(), rg);
    CHECK(rs && space_size(rs) == 8 * 8 * 4 * 2 * 2 * 2); /* tile_ic, tile_oc over 24; tile_ow over 14; three bools */
    /* a block that does not divide the vector: group_pad changes nothing */
    ConfigEntity *c24 = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 8]], [\"tile_oc\", \"sp\", [-1, 24]], "
                                                "[\"tile_ow\", \"sp\", [-1, 7]], [\"unroll_kw\", \"ot\", false], "
                                                "[\"group_pad\", \"ot\", true]]");
    CHECK_OK(tm->check(target_host(), c24, rg));
    CHECK_INT(topi_x86_group_conv_padded(target_host(), 168, 7, c24), 0);
  }
  /* RegNetY's groups of 8, two a vector: blended at stride 1 only */
  if (target_host()->vector_lanes == 16) {
    ConfigEntity *b1 = template_fallback(tm, target_host(), regnety_wl(tm, 208, 14, 1)),
                 *b2 = template_fallback(tm, target_host(), regnety_wl(tm, 208, 28, 2));
    CHECK(b1 && b2);
    if (b1 && b2) {
      CHECK_INT(cfg_other_int(b1, "pack_blend", -1), 1);
      CHECK(topi_x86_group_conv_pack_blend(target_host(), 208, 208, 26, b1));
      CHECK_INT(cfg_other_int(b2, "pack_blend", -1), 0);
    }
    if (fb) CHECK_INT(cfg_other_int(fb, "pack_blend", -1), -1); /* ResNeXt's four groups a vector: no knob */
  }
  CHECK(wl_flops(rg) == 2.0 * 168 * 14 * 14 * 24 * 9);
  CHECK_STR(wl_describe(rg), "[(1,168,28,28),(168,24,3,3)] s2 p1 g7");
}

static void test_invalid(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  if (!tm) return;
  Workload *wl = resnext_wl();
  /* a block over two groups */
  ConfigEntity *c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 8]], [\"tile_oc\", \"sp\", [-1, 4]], "
                                            "[\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", false]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_ic': the parts multiply to 8, which does not divide the 4 input channels of a group");
  c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 4]], [\"tile_oc\", \"sp\", [-1, 3]], "
                              "[\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", false]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "'tile_oc': the parts multiply to 3, which does not divide the 4 output channels of a group");
  /* group_pad where a group is one vector or less */
  c = config_entity_from_json("[[\"tile_ic\", \"sp\", [-1, 4]], [\"tile_oc\", \"sp\", [-1, 4]], "
                              "[\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", false], "
                              "[\"group_pad\", \"ot\", true]]");
  CHECK(tm->check(target_host(), c, wl) != 0);
  CHECK_CONTAINS(kiln_get_error(), "config knob 'group_pad' is set, but the 4 output channels of a group are not");
  /* the compute refuses a block that crosses a group */
  Tensor *data = te_placeholder_c("data", 5, (int64_t[]){1, 16, 8, 8, 8}, DT_F32);
  Tensor *kernel = te_placeholder_c("kernel", 6, (int64_t[]){32, 1, 3, 3, 8, 4}, DT_F32);
  CHECK(topi_x86_group_conv2d_NCHWc(data, kernel, (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, 32, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "kernel input channels 1 x 8 do not match data's 4 channels per group (32 groups) "
                                   "in blocks of 8");
  kernel = te_placeholder_c("kernel", 6, (int64_t[]){8, 1, 3, 3, 8, 16}, DT_F32);
  CHECK(topi_x86_group_conv2d_NCHWc(data, kernel, (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, 16, DT_F32) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "must divide the 8 input and 8 output channels of each of the 16 groups");
  /* a plain workload is not this task's; groups that do not divide */
  Workload *plain = wl_conv2d(tm->name, (int64_t[]){1, 8, 8, 8}, (int64_t[]){8, 8, 3, 3}, (int[]){1, 1},
                              (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  CHECK(template_space(tm, target_host(), plain) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "this task is for grouped convolutions");
  Workload *bad = wl_group_conv2d(tm->name, (int64_t[]){1, 12, 8, 8}, (int64_t[]){8, 2, 3, 3}, (int[]){1, 1},
                                  (int[]){1, 1, 1, 1}, (int[]){1, 1}, 5, "float32", "float32");
  Conv2DWorkload cw;
  CHECK(wl_conv2d_parse(bad, &cw) != 0);
  CHECK_CONTAINS(kiln_get_error(), "groups = 5 must be positive and divide the 12 input and 8 output channels");
}

/* The task's workload key and a record of it round-trip. */
static void test_record_round_trip(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  if (!tm) return;
  Workload *wl = resnext_wl();
  Workload *back = wl_from_json(wl->name, wl_args_json(wl));
  CHECK(back && wl_equal(back, wl));
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  if (!cs) return;
  int64_t idx = space_size(cs) - 2;
  ConfigEntity *cfg = space_get(cs, idx);
  const char *line =
      kfmt("{\"input\": [\"llvm -mcpu=x86-64-v4\", \"group_conv2d_NCHWc.x86\", %s, {}], \"config\": {\"index\": %lld, "
           "\"code_hash\": null, \"entity\": %s}, \"result\": [[0.000123], 0, 1.25, 1700000000.5], \"version\": 0.2}",
           wl_args_json(wl), (long long)idx, config_entity_json(cfg));
  TuneRecord *r = record_parse(line);
  CHECK_MSG(r != NULL, "%s", kiln_get_error());
  if (!r) return;
  CHECK_STR(record_json(r), line);
  CHECK(wl_equal(r->wl, wl));
  CHECK_INT(r->kind, TASK_CONV2D);
  CHECK_INT(space_index_of(cs, r->config), idx);
  CHECK_OK(tm->check(target_host(), r->config, r->wl));
  CHECK_CONTAINS(line, "[1, 1], 32, \"NCHW\", \"NCHW\", \"float32\"]");
}

/* The padded input is made per slab inside the parallel loop (one group's
 * input chunks and the rows a block of output rows reads), not padded whole
 * at the root; a 7-column block spans the group's three 8-channel chunks
 * (21 accumulators); both forms, and a slab of several row blocks, run
 * against the unscheduled lowering. */
static LoweredFunc *lower_cfg(const Template *tm, Workload *wl, ConfigEntity *cfg) {
  Schedule *s;
  int na;
  Tensor **args;
  int rc = template_instantiate(tm, target_host(), wl, cfg, &s, &na, &args);
  CHECK_OK(rc);
  if (rc) return NULL;
  LoweredFunc *f = kiln_lower(s, na, args, "f", NULL);
  CHECK_NN(f);
  return f;
}

static void test_slab(void) {
  const Template *tm = template_lookup("group_conv2d_NCHWc.x86");
  if (!tm || target_host()->vector_lanes < 16) return;
  /* RegNetX-1.6GF's first grouped layer: 3 groups of 24, 3x3/2 at 112.
   * Slabs of 2 output rows: 5 padded rows x 113 columns (the right
   * padding is never read) x 24 channels; 3 groups x 28 row blocks. */
  Workload *wl = wl_group_conv2d(tm->name, (int64_t[]){1, 72, 112, 112}, (int64_t[]){72, 24, 3, 3}, (int[]){2, 2},
                                 (int[]){1, 1, 1, 1}, (int[]){1, 1}, 3, "float32", "float32");
  ConfigEntity *fb = template_fallback(tm, target_host(), wl);
  config_set_other(fb, "group_pad", opt_bool(false));
  config_set_other(fb, "group_pair", opt_bool(false));
  LoweredFunc *f = lower_cfg(tm, wl, fb);
  if (f) {
    const char *text = kiln_lowered_str(f);
    const char *par = strstr(text, "parallel (n.oc_chunk.outer.fused.oh.outer.fused, 0, 84)");
    const char *alloc = strstr(text, "allocate data_pad[float32 * 13560]");
    CHECK_MSG(par && alloc && par < alloc, "the padded slab is not made inside the parallel loop:\n%s", text);
  }
  /* RegNetY's 48-channel layer at 112, stride 2, packed groups of 8: a
   * slab of one output row (3 input rows of 114 columns x 16 channels,
   * 22 KiB) fits the L1, 4 rows (66 KiB) do not: 3 chunks x 56 rows */
  wl = wl_group_conv2d(tm->name, (int64_t[]){1, 48, 112, 112}, (int64_t[]){48, 8, 3, 3}, (int[]){2, 2},
                       (int[]){1, 1, 1, 1}, (int[]){1, 1}, 6, "float32", "float32");
  fb = template_fallback(tm, target_host(), wl);
  if (fb && cfg_other_int(fb, "group_pack", 0) && (f = lower_cfg(tm, wl, fb)))
    CHECK_CONTAINS(kiln_lowered_str(f), "parallel (n.oc_chunk.outer.fused.oh.outer.fused, 0, 168)");
  /* RegNetX's 912-channel layer at 7x7: a 7-column block of the group's 3
   * chunks of 8, or (group_pad) of its 2 padded chunks of 16, the 3 real
   * blocks of 8 cropped from them, or (the fallback, group_pair) of a
   * pair's 3 chunks of 16, two groups' input lanes blended in the middle
   * one */
  wl = wl_group_conv2d(tm->name, (int64_t[]){1, 912, 7, 7}, (int64_t[]){912, 24, 3, 3}, (int[]){1, 1},
                       (int[]){1, 1, 1, 1}, (int[]){1, 1}, 38, "float32", "float32");
  fb = template_fallback(tm, target_host(), wl);
  f = lower_cfg(tm, wl, fb);
  if (f) {
    const char *text = kiln_lowered_str(f);
    CHECK_CONTAINS(text, "allocate group_conv2d_NCHWc.local[float32 * 336]");
    CHECK_CONTAINS(text, "allocate data_pair[float32 * ");
  }
  /* RegNetX's 408 @14: 9 pairs of 14 rows would split 5 : 4 over two
   * threads; slabs of 7 rows make 18 */
  Workload *w408 = wl_group_conv2d(tm->name, (int64_t[]){1, 408, 14, 14}, (int64_t[]){408, 24, 3, 3}, (int[]){1, 1},
                                   (int[]){1, 1, 1, 1}, (int[]){1, 1}, 17, "float32", "float32");
  ConfigEntity *f408 = template_fallback(tm, target_host(), w408);
  LoweredFunc *l408 = f408 ? lower_cfg(tm, w408, f408) : NULL;
  if (l408) CHECK_CONTAINS(kiln_lowered_str(l408), "parallel (n.oc_chunk.outer.fused.oh.outer.fused, 0, 18)");
  /* RegNetY's packed 448 @7: 129 KiB of weights read by 49 outputs each,
   * stride 1, prefetched; its 208/2 @28 (stride 2) not */
  Workload *y448 = regnety_wl(tm, 448, 7, 1);
  ConfigEntity *f448 = template_fallback(tm, target_host(), y448),
               *f208 = template_fallback(tm, target_host(), regnety_wl(tm, 208, 28, 2));
  CHECK(f448 && f208);
  if (f448 && f208) {
    CHECK_INT(cfg_other_int(f448, "prefetch_w", -1), 1);
    CHECK_INT(cfg_other_int(f208, "prefetch_w", -1), -1);
    LoweredFunc *l448 = lower_cfg(tm, y448, f448);
    if (l448) CHECK_CONTAINS(kiln_lowered_str(l448), "prefetch(kernel[");
  }
  config_set_other(fb, "group_pair", opt_bool(false));
  config_set_split(fb, "tile_ow", 2, (int64_t[]){-1, 7});
  f = lower_cfg(tm, wl, fb);
  if (f) {
    const char *text = kiln_lowered_str(f);
    CHECK_CONTAINS(text, "allocate group_conv2d_NCHWc.local[float32 * 224]");
    CHECK_CONTAINS(text, "group_conv2d_NCHWc_crop[ramp(");
    /* 788 KiB of weights read by 49 outputs each: the fallback touches
     * the next group's weights among this group's FMAs */
    CHECK_INT(cfg_other_int(fb, "prefetch_w", -1), 1);
    CHECK_CONTAINS(text, "prefetch(kernel[");
  }
  config_set_other(fb, "group_pad", opt_bool(false));
  f = lower_cfg(tm, wl, fb);
  if (f) CHECK_CONTAINS(kiln_lowered_str(f), "allocate group_conv2d_NCHWc.local[float32 * 168]");
  /* smaller layers of both forms against the unscheduled lowering: a
   * stride-2 slab of 2 row blocks, a 3-chunk block, a dilated window,
   * groups of 16 (one chunk) and of 8 (two a vector: group_pack), 7
   * groups of 24 (group_pair: a last pair of one group), 5 (3 pairs: slabs
   * of half the rows) */
  const struct {
    int64_t c, w, g;
    int s, d;
  } cases[] = {{48, 20, 2, 2, 1}, {72, 7, 3, 1, 1}, {48, 12, 2, 1, 2}, {72, 9, 3, 2, 1}, {64, 8, 4, 1, 1}, {32, 8, 4, 2, 1}, {168, 14, 7, 1, 1},
               {168, 15, 7, 2, 1}, {120, 8, 5, 1, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t c = cases[i].c, w = cases[i].w;
    int d = cases[i].d;
    Workload *cw = wl_group_conv2d(tm->name, (int64_t[]){1, c, w, w}, (int64_t[]){c, c / cases[i].g, 3, 3},
                                   (int[]){cases[i].s, cases[i].s}, (int[]){d, d, d, d}, (int[]){d, d}, cases[i].g,
                                   "float32", "float32");
    /* each also with the weights prefetched 1 and 2 blocks ahead (the
     * knob is in the space of larger layers only; the schedule reads it
     * from any config) */
    for (int pf = 0; pf <= 2; pf++) {
      ConfigEntity *cfg = template_fallback(tm, target_host(), cw);
      if (pf) config_set_other(cfg, "prefetch_w", opt_int(pf));
      Schedule *s;
      int na;
      Tensor **args;
      if (template_instantiate(tm, target_host(), cw, cfg, &s, &na, &args)) {
        test_fail(__FILE__, __LINE__, "%s: %s", cw->key, kiln_get_error());
        continue;
      }
      DLTensor **arr = tk_run_vs_unscheduled(s, na, args, &copt, 1e-6, cw->key);
      if (arr) tk_arrays_free(na, arr);
    }
  }
}

/* The blocked grouped conv node with a padded-group weight: 'kept_channels'
 * keeps the real output channels (3 groups of 24 from a weight of 3 x 32),
 * and a count that is not a multiple of the groups, or more than the
 * weight holds, is refused with the reason. */
static void test_channels_attr(void) {
  for (int k = 0; k < 3; k++) {
    static const int64_t keep[3] = {72, 70, 120};
    Graph *g = graph_new();
    GNode *x = graph_var(g, "x", ttype(DT_F32, 5, (int64_t[]){1, 9, 14, 14, 8}));
    GNode *w = graph_var(g, "w", ttype(DT_F32, 6, (int64_t[]){6, 3, 3, 3, 8, 16}));
    GAttrs at = gattrs_new();
    ga_ints(&at, "padding", 4, (int64_t[]){1, 1, 1, 1});
    ga_int(&at, "groups", 3);
    ga_int(&at, "kept_channels", keep[k]);
    ga_str(&at, "data_layout", "NCHW8c");
    ga_str(&at, "kernel_layout", "OIHW8i16o");
    ga_str(&at, "out_layout", "NCHW8c");
    GNode *c = graph_call(g, "nn.contrib_conv2d_NCHWc", 2, (GNode *[]){x, w}, at, NULL);
    if (k == 0) {
      CHECK_MSG(c != NULL, "%s", kiln_get_error());
      if (c) CHECK_STR(ttype_str(&c->type), "Tensor[(1, 9, 14, 14, 8), float32]");
    } else {
      CHECK(c == NULL);
      CHECK_CONTAINS(kiln_get_error(), kfmt("attribute 'kept_channels' = %lld must be a multiple of groups = 3 and "
                                            "at most the weight's 96 output channels",
                                            (long long)keep[k]));
    }
    graph_free(g);
  }
}

const TestCase group_conv_tests[] = {
    {"random", test_random},
    {"random_padded", test_random_padded},
    {"random_packed", test_random_packed},
    {"random_paired", test_random_paired},
    {"random_blended", test_random_blended},
    {"random_wider_block", test_random_wider_block},
    {"space_and_fallback", test_space_and_fallback},
    {"invalid", test_invalid},
    {"record_round_trip", test_record_round_trip},
    {"slab", test_slab},
    {"channels_attr", test_channels_attr},
    {NULL, NULL},
};
