/*
 * test_target.c - the target table (src/target): target strings parsed
 * once, every unsupported target refused with a message that lists what
 * Kiln can build for, the vector width reaching the templates through the
 * Target rather than the machine, and the target.* C API.
 */
#include "api/api.h"
#include "autotune/autotune.h"
#include "test.h"

static void test_parse(void) {
  const Target *t = target_parse("llvm -mcpu=skylake", NULL);
  CHECK_NN(t);
  CHECK_STR(t->kind->name, "llvm");
  CHECK_STR(t->str, "llvm -mcpu=skylake");
  CHECK_INT(t->vector_lanes, 8);
  CHECK_STR(target_records_stem(t), "x86_avx2");
  CHECK(target_has_key(t, "cpu"));
  CHECK(t->host == t);
  t = target_parse("  llvm   -mcpu=skylake-avx512 -keys=cpu,x86", NULL);
  CHECK_NN(t);
  CHECK_INT(t->vector_lanes, 16);
  CHECK_STR(t->str, "llvm -mcpu=skylake-avx512 -keys=cpu,x86");
  CHECK(target_has_key(t, "x86") && target_has_key(t, "cpu"));
  /* aliases name the same row; the canonical string uses the kind's name */
  t = target_parse("cpu", NULL);
  CHECK_NN(t);
  CHECK_STR(t->kind->name, "llvm");
  CHECK_STR(t->str, target_host()->str);
  t = target_parse("c -device=cpu -mtriple=x86_64-linux-gnu", NULL);
  CHECK_NN(t);
  CHECK_STR(t->kind->name, "c");
  CHECK_INT(t->kind->device_type, 1);
  /* a host target */
  t = target_parse("llvm", "c -mcpu=x86-64-v2");
  CHECK_NN(t);
  CHECK_STR(t->host->str, "c -mcpu=x86-64-v2");
  CHECK_INT(t->host->vector_lanes, 4);
  /* what a target without -mcpu means: this machine, whose width
   * KILN_SIMD_WIDTH moves; an explicit -mcpu does not move */
  const char *saved = getenv("KILN_SIMD_WIDTH");
  char *keep = saved ? xstrdup(saved) : NULL;
  setenv("KILN_SIMD_WIDTH", "8", 1);
  CHECK_INT(target_parse("llvm", NULL)->vector_lanes, 8);
  CHECK_STR(target_parse("llvm", NULL)->str, "llvm -mcpu=x86-64-v3");
  CHECK_INT(target_parse("llvm -mcpu=x86-64-v4", NULL)->vector_lanes, 16);
  if (keep) {
    setenv("KILN_SIMD_WIDTH", keep, 1);
    free(keep);
  } else {
    unsetenv("KILN_SIMD_WIDTH");
  }
}

static void expect_error(const char *str, const char *host, const char *msg) {
  CHECK_MSG(target_parse(str, host) == NULL, "'%s' was accepted", str);
  CHECK_CONTAINS(kiln_get_error(), msg);
}

/* The host's CPU row by cpuid: a family's rows name one core's models
 * (Zen 5: EPYC 9005 model 0x02 and 0x11, Ryzen AI 300 0x24, Ryzen 9000
 * 0x44, 0x70), not the family's later cores (family 26 models 0x50 and
 * 0x90: Zen 6), nor another vendor's family of the same number. */
static void test_cpu_rows(void) {
  const int zen5[] = {0x02, 0x11, 0x24, 0x44, 0x70};
  for (size_t i = 0; i < sizeof zen5 / sizeof zen5[0]; i++)
    CHECK_STR(target_cpu_of("AuthenticAMD", 0x1a, zen5[i]), "znver5");
  CHECK(target_cpu_of("AuthenticAMD", 0x1a, 0x50) == NULL);
  CHECK(target_cpu_of("AuthenticAMD", 0x1a, 0x90) == NULL);
  CHECK(target_cpu_of("GenuineIntel", 0x1a, 0x02) == NULL);
  CHECK_STR(target_cpu_of("AuthenticAMD", 0x19, 0x11), "znver4");
  CHECK(target_cpu_of("AuthenticAMD", 0x19, 0x21) == NULL); /* Zen 3 */
  CHECK_STR(target_cpu_of("GenuineIntel", 6, 0xcf), "emeraldrapids");
  /* the caches cache rules compare against: the row's, or Zen 5's where
   * the row leaves them open or no row describes the CPU */
  const Target *z5 = target_parse("llvm -mcpu=znver5", NULL), *emr = target_parse("llvm -mcpu=emeraldrapids", NULL),
               *v4 = target_parse("llvm -mcpu=x86-64-v4", NULL);
  CHECK_NN(z5 && emr && v4);
  if (!z5 || !emr || !v4) return;
  CHECK_INT(target_l2_bytes(z5), 1 << 20);
  CHECK_INT(target_l3_bytes(z5), 32 << 20);
  CHECK_INT(target_l2_bytes(emr), 2 << 20);
  CHECK_INT(target_l3_bytes(emr), 32 << 20);
  CHECK_INT(target_l2_bytes(v4), 1 << 20);
  CHECK_INT(v4->l2_bytes, 0);
}

static void test_errors(void) {
  expect_error("rocm", NULL, "target 'rocm' is not supported (supported: llvm, cpu, c, cuda, opencl)");
  expect_error("tpu -model=v4", NULL, "target 'tpu -model=v4' is not supported (supported: llvm, cpu, c, cuda, opencl)");
  expect_error("cuda -arch=compute_90", NULL, "-arch=compute_90 is not a CUDA architecture like sm_90");
  expect_error("opencl -arch=sm_90", NULL, "opencl takes no attribute -arch");
  expect_error("cuda -mcpu=skylake", NULL, "cuda takes no attribute -mcpu");
  expect_error("", NULL, "target '' is not supported");
  expect_error("llvm -mcpu=pentium9", NULL, "unknown -mcpu=pentium9 (Kiln knows: x86-64-v4, skylake-avx512");
  expect_error("llvm -mtriple=aarch64-linux-gnu", NULL, "-mtriple=aarch64-linux-gnu names another architecture");
  expect_error("llvm -device=arm_cpu", NULL, "-device=arm_cpu is not supported");
  expect_error("llvm -model=unknown", NULL,
               "llvm takes no attribute -model (it takes -mcpu, -mtriple, -device, -keys)");
  expect_error("llvm -max_threads_per_block=4", NULL, "llvm takes no attribute -max_threads_per_block");
  expect_error("llvm mcpu=skylake", NULL, "'mcpu=skylake' is not an attribute (write -name=value");
  expect_error("llvm -mcpu", NULL, "'-mcpu' is not an attribute");
  expect_error("llvm -mcpu=haswell -mcpu=skylake", NULL, "-mcpu is given twice");
  expect_error("llvm", "opencl", "target host 'opencl' is not a CPU target");
  /* the GPU rows: TVM's limits unless given, the host a CPU target */
  const Target *g = target_parse("cuda -arch=sm_80 -model=unknown", NULL);
  CHECK(g && g->max_threads_per_block == 1024 && g->max_shared_memory_per_block == 48 * 1024);
  CHECK(g && g->host && target_has_key(g->host, "cpu") && target_has_key(g, "gpu") && target_has_key(g, "cuda"));
  if (g) CHECK_STR(g->str, "cuda -model=unknown -arch=sm_80");
  g = target_parse("opencl -max_threads_per_block=128", NULL);
  CHECK(g && g->max_threads_per_block == 128 && g->kind->device_type == 4);
}

/* The vector width a template sizes its blocks by comes from the Target
 * it is given, not from the machine. */
static void test_template_lanes(void) {
  const Template *tm = template_lookup("dense_nopack.x86");
  CHECK_NN(tm);
  Workload *wl = wl_dense("dense_nopack.x86", 1, 64, 96, "float32", "float32");
  const Target *t8 = target_parse("llvm -mcpu=haswell", NULL), *t16 = target_parse("llvm -mcpu=icelake-server", NULL);
  ConfigEntity *c8 = template_fallback(tm, t8, wl), *c16 = template_fallback(tm, t16, wl);
  CHECK_NN(c8);
  CHECK_NN(c16);
  CHECK_INT(cfg_split_inner(c8, "tile_k"), 16);  /* the largest divisor of 96 up to 2 x 8 */
  CHECK_INT(cfg_split_inner(c16, "tile_k"), 32); /* up to 2 x 16 */
}

/* target.* through the registry, as a binding calls it. */
static int call(const char *name, int n, KilnValue *args, int *codes, KilnValue *ret, int *code) {
  KilnFunction *f = NULL;
  if (kiln_func_get_global(name, &f) || !f) return test_fail(__FILE__, __LINE__, "no global %s", name), -1;
  int rc = kiln_func_call(f, args, codes, n, ret, code);
  kiln_func_free(f);
  return rc;
}

static void test_api(void) {
  CHECK_OK(kiln_init());
  KilnValue r, h;
  int code;
  CHECK_OK(call("target.create", 2, (KilnValue[]){{.v_str = "llvm -mcpu=znver3"}, {.v_str = NULL}},
                (int[]){KILN_STR, KILN_NULL}, &h, &code));
  CHECK_INT(code, KILN_OBJECT);
  int O = KILN_OBJECT;
  CHECK_OK(call("target.Str", 1, &h, &O, &r, &code));
  CHECK_STR(r.v_str, "llvm -mcpu=znver3");
  CHECK_OK(call("target.Kind", 1, &h, &O, &r, &code));
  CHECK_STR(r.v_str, "llvm");
  CHECK_OK(call("target.Keys", 1, &h, &O, &r, &code));
  CHECK_STR(r.v_str, "cpu");
  CHECK_OK(call("target.VectorLanes", 1, &h, &O, &r, &code));
  CHECK_INT(r.v_int64, 8);
  CHECK_OK(call("target.DeviceType", 1, &h, &O, &r, &code));
  CHECK_INT(r.v_int64, 1);
  CHECK_OK(call("target.MaxThreadsPerBlock", 1, &h, &O, &r, &code));
  CHECK_INT(r.v_int64, 0);
  CHECK_OK(call("target.Attr", 2, (KilnValue[]){h, {.v_str = "mcpu"}}, (int[]){O, KILN_STR}, &r, &code));
  CHECK_STR(r.v_str, "znver3");
  CHECK_OK(call("target.Attr", 2, (KilnValue[]){h, {.v_str = "-mtriple"}}, (int[]){O, KILN_STR}, &r, &code));
  CHECK_INT(code, KILN_NULL);
  CHECK(call("target.Attr", 2, (KilnValue[]){h, {.v_str = "color"}}, (int[]){O, KILN_STR}, &r, &code) != 0);
  CHECK_CONTAINS(kiln_last_error(), "target.Attr: no target attribute 'color'");
  CHECK_OK(call("target.Kinds", 0, NULL, NULL, &r, &code));
  CHECK_STR(r.v_str, "llvm, cpu, c, cuda, opencl");
  /* the errors the parser gives, through the API */
  CHECK(call("target.create", 1, (KilnValue[]){{.v_str = "rocm"}}, (int[]){KILN_STR}, &r, &code) != 0);
  CHECK_CONTAINS(kiln_last_error(), "target.create: target 'rocm' is not supported (supported: llvm, cpu, c, cuda, opencl)");
  CHECK(call("driver.check_target", 1, (KilnValue[]){{.v_str = "llvm -mtriple=riscv64"}}, (int[]){KILN_STR}, &r,
             &code) != 0);
  CHECK_CONTAINS(kiln_last_error(), "driver.check_target: target 'llvm -mtriple=riscv64': -mtriple=riscv64 names");
  /* a Target handle where a target is expected */
  CHECK_OK(call("driver.check_target", 1, &h, &O, &r, &code));
  CHECK_STR(r.v_str, "llvm -mcpu=znver3");
}

const TestCase target_tests[] = {
    {"parse", test_parse},
    {"cpu_rows", test_cpu_rows},
    {"errors", test_errors},
    {"template_lanes", test_template_lanes},
    {"api", test_api},
    {NULL, NULL},
};
