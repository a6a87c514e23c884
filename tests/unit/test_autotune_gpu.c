/*
 * test_autotune_gpu.c - measuring TVM's CUDA templates on a GPU target, in
 * worker processes (this test program is the worker, as in
 * test_autotune_tune.c).  On OpenCL (POCL runs it on the CPU): a direct
 * and a Winograd conv2d candidate run on the device, are checked against
 * the unscheduled compute on the host and get costs; a config whose block
 * has more threads than the device allows (the target's limit raised past
 * it) is error 4 (runtime error) naming the device's limit, not a crash;
 * a candidate that outlasts the timeout is error 7; a kernel whose
 * unrolled loop repeats its shared allocations builds.  On CUDA: without a
 * driver the tune is refused up front with the driver's error, and a
 * candidate still builds (NVRTC) and fails to run with error 4.
 */
#include <unistd.h>

#include "autotune/autotune.h"
#include "test.h"

static const char *conv_args(int oc) {
  return kfmt("[[\"TENSOR\", [1, 16, 8, 8], \"float32\"], [\"TENSOR\", [%d, 16, 3, 3], \"float32\"], [1, 1], [1, 1], "
              "[1, 1], \"NCHW\", \"float32\"]",
              oc);
}

static ConfigEntity *direct_cfg(int f, int y, int x) {
  return config_entity_from_json(
      kfmt("[[\"tile_f\", \"sp\", [-1, 1, %d, 1]], [\"tile_y\", \"sp\", [-1, 1, %d, 1]], [\"tile_x\", \"sp\", [-1, 1, "
           "%d, 1]], [\"tile_rc\", \"sp\", [-1, 4]], [\"tile_ry\", \"sp\", [-1, 1]], [\"tile_rx\", \"sp\", [-1, 1]], "
           "[\"auto_unroll_max_step\", \"ot\", 512], [\"unroll_explicit\", \"ot\", 1]]",
           f, y, x));
}

static bool have_opencl(void) {
  int there = 0;
  DLDevice d = {kDLOpenCL, 0};
  kiln_device_exists(d, &there);
  if (!there) test_skip("no OpenCL device");
  return there;
}

static MeasureOptions opts(void) {
  MeasureOptions mo;
  measure_options_default(&mo);
  mo.number = 2;
  mo.repeat = 2;
  mo.parallel = 2;
  mo.build_timeout = 120; /* a busy machine compiles slowly */
  mo.timeout = 60;
  return mo;
}

/* Measures one candidate of a conv2d template ("direct" or "winograd") on
 * target t; false (a failed check already counted) if any step before the
 * measurement failed.  The result's message lives in the arena. */
static bool measure_one(const Target *t, const char *tmpl, const char *args, ConfigEntity *cfg,
                        const MeasureOptions *mo, MeasureResult *res) {
  const Template *tm = template_find("topi_nn_conv2d", tmpl, t);
  Workload *wl = wl_from_json("topi_nn_conv2d", args);
  CHECK(tm && wl && cfg);
  if (!tm || !wl || !cfg) return false;
  CHECK_OK(tm->check(t, cfg, wl));
  Measurer *m = measurer_new(tm, t, wl, mo);
  CHECK_NN(m);
  if (!m) return false;
  int rc = measurer_run(m, 1, &cfg, res);
  CHECK_OK(rc);
  measurer_free(m);
  return rc == 0;
}

static void test_measure_opencl(void) {
  if (!have_opencl()) return;
  /* the target allows 8192 threads; POCL's device allows 4096 */
  const Target *t = target_parse("opencl -max_threads_per_block=8192", NULL);
  CHECK_OK(measure_device_check(t, NULL));
  const Template *tm = template_find("topi_nn_conv2d", "direct", t);
  Workload *wl = wl_from_json("topi_nn_conv2d", conv_args(128));
  CHECK(tm && wl);
  if (!tm || !wl) return;
  ConfigEntity *cfgs[2] = {direct_cfg(8, 4, 8), direct_cfg(128, 8, 8)}; /* 256 and 8192 threads */
  CHECK_OK(tm->check(t, cfgs[1], wl));
  MeasureOptions mo = opts();
  Measurer *m = measurer_new(tm, t, wl, &mo);
  CHECK_NN(m);
  if (!m) return;
  MeasureResult res[2];
  CHECK_OK(measurer_run(m, 2, cfgs, res));
  CHECK_MSG(res[0].error_no == MEASURE_NO_ERROR, "error %d: %s", res[0].error_no, res[0].msg ? res[0].msg : "");
  CHECK(res[0].ncosts == 2 && res[0].costs[0] > 0 && res[0].costs[0] < 1);
  CHECK(res[0].scale > 0.05 && res[0].scale < 20); /* the fallback was timed beside it */
  CHECK_INT(res[1].error_no, MEASURE_RUNTIME_DEVICE);
  CHECK_CONTAINS(res[1].msg, "8192 threads per block");
  CHECK_CONTAINS(res[1].msg, "allows 4096");
  measurer_free(m);
}

static void test_measure_opencl_winograd(void) {
  if (!have_opencl()) return;
  ConfigEntity *cfg = config_entity_from_json(
      "[[\"tile_b\", \"sp\", [-1, 1, 1, 1]], [\"tile_y\", \"sp\", [-1, 1, 8, 1]], [\"tile_x\", \"sp\", [-1, 1, 4, 1]], "
      "[\"tile_rc\", \"sp\", [-1, 4]], [\"auto_unroll_max_step\", \"ot\", 128], [\"unroll_explicit\", \"ot\", 1]]");
  MeasureOptions mo = opts();
  mo.baseline = false;
  MeasureResult res;
  if (!measure_one(target_parse("opencl", NULL), "winograd", conv_args(32), cfg, &mo, &res)) return;
  CHECK_MSG(res.error_no == MEASURE_NO_ERROR, "error %d: %s", res.error_no, res.msg ? res.msg : "");
  CHECK(res.ncosts == 2 && res.costs[0] > 0);
}

/* A config whose unrolled reduction loop repeats the shared allocations
 * (tile_ry [-1, 3], auto_unroll_max_step 512): each shared buffer is
 * declared once at the top of the kernel (it was declared three times, a
 * build error of the kernel on the device). */
static const char *unrolled_args = "[[\"TENSOR\", [1, 1, 8, 8], \"float32\"], [\"TENSOR\", [16, 1, 3, 3], \"float32\"], "
                                   "[1, 1], [1, 1], [1, 1], \"NCHW\", \"float32\"]";
static const char *unrolled_cfg =
    "[[\"tile_f\", \"sp\", [-1, 1, 8, 2]], [\"tile_y\", \"sp\", [-1, 8, 1, 1]], [\"tile_x\", \"sp\", [-1, 2, 4, 1]], "
    "[\"tile_rc\", \"sp\", [-1, 1]], [\"tile_ry\", \"sp\", [-1, 3]], [\"tile_rx\", \"sp\", [-1, 1]], "
    "[\"auto_unroll_max_step\", \"ot\", 512], [\"unroll_explicit\", \"ot\", 1]]";

static void test_measure_opencl_unrolled_shared(void) {
  if (!have_opencl()) return;
  MeasureOptions mo = opts();
  mo.baseline = false;
  MeasureResult res;
  if (!measure_one(target_parse("opencl", NULL), "direct", unrolled_args, config_entity_from_json(unrolled_cfg), &mo,
                   &res))
    return;
  CHECK_MSG(res.error_no == MEASURE_NO_ERROR, "error %d: %s", res.error_no, res.msg ? res.msg : "");
}

/* 2000 launches cannot finish in 5 ms: the worker is killed, error 7. */
static void test_measure_opencl_timeout(void) {
  if (!have_opencl()) return;
  MeasureOptions mo = opts();
  mo.baseline = false;
  mo.no_check = true;
  mo.number = 2000;
  mo.timeout = 0.005;
  MeasureResult res;
  if (!measure_one(target_parse("opencl", NULL), "direct", conv_args(32), direct_cfg(8, 4, 8), &mo, &res)) return;
  CHECK_INT(res.error_no, MEASURE_RUN_TIMEOUT);
  CHECK_CONTAINS(res.msg, "timeout");
}

/* Without a CUDA driver: the tune is refused with the driver's error; a
 * candidate builds (its kernels through NVRTC) and fails to run. */
static void test_measure_cuda_no_driver(void) {
  const Target *t = target_parse("cuda", NULL);
  int there = 0;
  kiln_device_exists((DLDevice){kDLCUDA, 0}, &there);
  if (there) {
    printf("  (a CUDA device is present: the no-driver path is not reachable)\n");
    return;
  }
  CHECK(measure_device_check(t, NULL) != 0);
  CHECK_CONTAINS(kiln_get_error(), "measures every candidate on the device");
  CHECK_CONTAINS(kiln_get_error(), "cuda");
  kiln_clear_error();
  MeasureOptions mo = opts();
  mo.baseline = false;
  MeasureResult res;
  if (!measure_one(t, "direct", unrolled_args, config_entity_from_json(unrolled_cfg), &mo, &res)) return;
  /* NVRTC compiled the kernels (a source it refuses is error 3 with its
   * log); then the run finds no driver.  NVRTC missing: a device compile error; present: the run finds no driver */
  CHECK_MSG(res.error_no == MEASURE_RUNTIME_DEVICE || res.error_no == MEASURE_COMPILE_DEVICE, "error %d: %s",
            res.error_no, res.msg ? res.msg : "");
  CHECK_CONTAINS(res.msg, "cuda");
  printf("  (error %d: %s)\n", res.error_no, res.msg ? res.msg : "");
}

const TestCase autotune_gpu_tests[] = {
    {"measure_opencl", test_measure_opencl},
    {"measure_opencl_winograd", test_measure_opencl_winograd},
    {"measure_opencl_unrolled_shared", test_measure_opencl_unrolled_shared},
    {"measure_opencl_timeout", test_measure_opencl_timeout},
    {"measure_cuda_no_driver", test_measure_cuda_no_driver},
    {NULL, NULL},
};
