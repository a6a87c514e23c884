/*
 * test_conv_real.c - conv2d_NCHWc.x86 reading a channel-padded input
 * (alter_layout pads 24 channels to 32): the reduction over the real
 * input channels only.
 *
 * Random workloads whose data holds real_ic real channels of a padded
 * count (random values in the padded channels and in the kernel's columns
 * for them, so a reduction that reads them shows), each with a random
 * config of the template's space, against the unscheduled lowering of the
 * same compute (1e-6) and a naive convolution over the real channels in
 * double (1e-5).  Then the workload keeps TVM's form where nothing is
 * padded.
 * Builds use -O1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "kernel_util.h"
#include "topi/topi.h"

static const CompileOptions copt = {NULL, "-O1 -march=native -fPIC -std=gnu11", NULL};

static Workload *real_workload(const Template *tm, int64_t N, int64_t C, int64_t R, int64_t O, int64_t H, int64_t W,
                               int64_t KH, int s, int p) {
  return wl_conv2d_real(tm->name, (int64_t[]){N, C, H, W}, (int64_t[]){O, C, KH, KH}, (int[]){s, s},
                        (int[]){p, p, p, p}, (int[]){1, 1}, R, "float32", "float32");
}

/* One random case: the scheduled conv against the unscheduled lowering,
 * then against sum over the first R channels of the packed data and
 * kernel the run used. */
static bool run_case(const Template *tm, int caseno) {
  int64_t R = test_pick(8, (int64_t[]){3, 5, 8, 12, 20, 24, 40, 72});
  int64_t pb = test_pick(2, (int64_t[]){8, 16});
  int64_t C = (R / pb + 1) * pb; /* at least one padded channel */
  int64_t N = test_rand_between(1, 2), O = test_pick(4, (int64_t[]){8, 16, 24, 32});
  int64_t KH = test_pick(3, (int64_t[]){1, 1, 3});
  int s = (int)test_rand_between(1, 2), p = KH == 3 ? (int)test_rand_between(0, 1) : 0;
  int64_t H = test_rand_between(4, 9), W = test_rand_between(4, 11);
  Workload *wl = real_workload(tm, N, C, R, O, H, W, KH, s, p);
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_MSG(cs != NULL, "%s: %s", wl->key, kiln_get_error());
  if (!cs) return false;
  int64_t idx = (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)space_size(cs));
  ConfigEntity *cfg = space_get(cs, idx);
  const char *desc = kfmt("case %d: %s: config %lld %s", caseno, wl->key, (long long)idx, config_entity_json(cfg));
  if (getenv("KILN_X86_VERBOSE")) fprintf(stderr, "  %s\n", desc);
  Schedule *sch;
  int na;
  Tensor **args;
  if (template_instantiate(tm, target_host(), wl, cfg, &sch, &na, &args)) {
    test_fail(__FILE__, __LINE__, "%s: %s", desc, kiln_get_error());
    return false;
  }
  DLTensor **arr = tk_run_vs_unscheduled(sch, na, args, &copt, 1e-6, desc);
  if (!arr) return false;
  DLTensor *want = tk_array_for(args[na - 1]);
  TkConv ref = {.N = N, .C = C, .H = H, .W = W, .O = O, .KH = KH, .KW = KH, .ib = te_dim(args[0], 4),
                .ob = te_dim(args[na - 1], 4), .real = R, .stride = s, .pad = p, .dilation = 1, .packed = true};
  tk_conv2d_ref(&ref, arr[0], arr[1], want);
  double err = tk_rel_err(arr[na - 1], want);
  bool ok = err < 1e-5;
  if (!ok) test_fail(__FILE__, __LINE__, "%s: relative error %g against the sum over %lld real channels", desc, err, (long long)R);
  kiln_array_free(want);
  tk_arrays_free(na, arr);
  return ok;
}

static void test_random(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  CHECK_NN(tm);
  for (int i = 0; tm && i < tk_template_cases(16); i++) run_case(tm, i);
}

/* TVM's workload where nothing is padded; the real count last otherwise,
 * parsed back; a count above the channels is refused. */
static void test_workload(void) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86");
  if (!tm) return;
  Workload *plain = wl_conv2d(tm->name, (int64_t[]){1, 32, 56, 56}, (int64_t[]){144, 32, 1, 1}, (int[]){1, 1},
                              (int[]){0, 0, 0, 0}, (int[]){1, 1}, "float32", "float32");
  CHECK_STR(real_workload(tm, 1, 32, 32, 144, 56, 56, 1, 1, 0)->key, plain->key);
  Workload *wl = real_workload(tm, 1, 32, 24, 144, 56, 56, 1, 1, 0);
  CHECK(strcmp(wl->key, plain->key) != 0);
  Conv2DWorkload c;
  CHECK_OK(wl_conv2d_parse(wl, &c));
  CHECK_INT(c.real_ic, 24);
  CHECK_INT(c.IC, 32);
  CHECK_OK(wl_conv2d_parse(plain, &c));
  CHECK_INT(c.real_ic, 32);
  wl = real_workload(tm, 1, 32, 24, 144, 56, 56, 1, 1, 0);
  wl->args[wl->nargs - 1].i = 40;
  CHECK(wl_conv2d_parse(wl, &c) != 0);
}

const TestCase conv_real_tests[] = {
    {"random", test_random},
    {"workload", test_workload},
    {NULL, NULL},
};
