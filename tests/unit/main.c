/* main.c - runs the unit-test suites; an argument filters tests by name. */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "autotune/autotune.h"
#include "test.h"

/* test_autotune_tune.c: its test-only template, which workers need too */
void test_autotune_register(void);

/* The suites, one per test file. */
extern const TestCase api_tests[];
extern const TestCase autotune_tests[];
extern const TestCase autotune_records_tests[];
extern const TestCase autotune_tune_tests[];
extern const TestCase autotune_gpu_tests[];
extern const TestCase base_tests[];
extern const TestCase graphrt_tests[];
extern const TestCase plan_views_tests[];
extern const TestCase artifact_tests[];
extern const TestCase ir_tests[];
extern const TestCase ir_simplify_tests[];
extern const TestCase ir_simplify_random_tests[];
extern const TestCase lower_tests[];
extern const TestCase prefetch_tests[];
extern const TestCase onnx_tests[];
extern const TestCase prop_tests[];
extern const TestCase runtime_tests[];
extern const TestCase topi_tests[];
extern const TestCase topi_nn_tests[];
extern const TestCase topi_transform_tests[];
extern const TestCase topi_scatter_tests[];
extern const TestCase vmath_tests[];
extern const TestCase target_tests[];
extern const TestCase verify_tests[];
extern const TestCase x86_tests[];
extern const TestCase group_conv_tests[];
extern const TestCase conv_real_tests[];
extern const TestCase conv_order_tests[];
extern const TestCase batch_matmul_tests[];
extern const TestCase bf16_tests[];
extern const TestCase int8_tests[];
extern const TestCase winograd_tests[];
extern const TestCase cuda_template_tests[];
extern const TestCase symshape_tests[];
extern const TestCase rtvalues_tests[];
extern const TestCase fold_tests[];
extern const TestCase codegen_units_tests[];
extern const TestCase sequences_tests[];

static const TestSuite suites[] = {
    {"base", base_tests},
    {"api", api_tests},
    {"ir", ir_tests},
    {"ir", ir_simplify_tests},        /* test_simplify.c */
    {"ir", ir_simplify_random_tests}, /* test_simplify_random.c */
    {"lower", lower_tests},
    {"prefetch", prefetch_tests},
    {"onnx", onnx_tests},
    {"prop", prop_tests},
    {"runtime", runtime_tests},
    {"graphrt", graphrt_tests},
    {"plan_views", plan_views_tests},
    {"target", target_tests},
    {"verify", verify_tests},
    {"artifact", artifact_tests},
    {"autotune", autotune_tests},
    {"autotune_records", autotune_records_tests},
    {"autotune_tune", autotune_tune_tests},
    {"autotune_gpu", autotune_gpu_tests},
    {"vmath", vmath_tests},
    {"x86", x86_tests},
    {"group_conv", group_conv_tests},
    {"conv_real", conv_real_tests},
    {"conv_order", conv_order_tests},
    {"batch_matmul", batch_matmul_tests},
    {"bf16", bf16_tests},
    {"int8", int8_tests},
    {"winograd", winograd_tests},
    {"cuda_templates", cuda_template_tests},
    {"symshape", symshape_tests},
    {"rtvalues", rtvalues_tests},
    {"fold", fold_tests},
    {"codegen_units", codegen_units_tests},
    {"sequences", sequences_tests},
    {"topi", topi_tests},
    {"topi_nn", topi_nn_tests},
    {"topi_transform", topi_transform_tests},
    {"topi_scatter", topi_scatter_tests},
};

int test_failures;
static unsigned rng_state;
static char skip_why[256]; /* the running test's test_skip reason */

void test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "  %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  test_failures++;
}

void test_skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(skip_why, sizeof skip_why, fmt, ap);
  va_end(ap);
  if (!skip_why[0]) snprintf(skip_why, sizeof skip_why, "skipped");
}

unsigned test_rand(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return rng_state >> 8;
}

float test_randf(void) { return (float)(test_rand() % 2000000) / 1000000.0f - 1.0f; }

int64_t test_rand_between(int64_t lo, int64_t hi) { return lo + (int64_t)(test_rand() % (unsigned)(hi - lo + 1)); }

int64_t test_pick(int n, const int64_t *v) { return v[test_rand() % (unsigned)n]; }

const char *test_root(void) {
  static char buf[4096];
  const char *r = getenv("KILN_ROOT");
  if (r && *r) return r;
  if (!getcwd(buf, sizeof buf)) return ".";
  for (;;) { /* walk up to the folder holding CMakeLists.txt and src/ */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/src/base/base.h", buf);
    if (access(probe, R_OK) == 0) return buf;
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return ".";
    *slash = 0;
  }
}

int main(int argc, char **argv) {
  /* the tuning tests measure candidates in workers that are this program */
  if (argc > 1 && !strcmp(argv[1], AUTOTUNE_WORKER_ARG)) {
    test_autotune_register();
    return autotune_worker_main(argc - 2, argv + 2);
  }
  const char *filter = argc > 1 ? argv[1] : NULL;
  /* every pipeline checks its IR between passes (graph_verify, ir_verify) */
  setenv("KILN_VERIFY", "1", 0);
  int passed = 0, failed = 0, skipped = 0;
  for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
    for (const TestCase *t = suites[s].cases; t->name; t++) {
      char full[256];
      snprintf(full, sizeof full, "%s.%s", suites[s].name, t->name);
      if (filter && !strstr(full, filter)) continue;
      test_failures = 0;
      skip_why[0] = 0;
      rng_state = 12345u + (unsigned)(t - suites[s].cases) * 7919u;
      kiln_clear_error();
      KArena *a = kiln_arena_new();
      kiln_arena_push(a);
      double t0 = kiln_now_seconds();
      t->fn();
      double dt = kiln_now_seconds() - t0;
      kiln_arena_pop();
      kiln_arena_free(a);
      if (test_failures) {
        failed++;
        printf("FAIL %s\n", full);
      } else if (skip_why[0]) {
        skipped++;
        printf("skip %s: %s\n", full, skip_why);
      } else {
        passed++;
        printf("ok   %s (%.2fs)\n", full, dt);
      }
      fflush(stdout);
    }
  }
  printf("%d passed, %d failed", passed, failed);
  if (skipped) printf(", %d skipped", skipped);
  printf("\n");
  return failed ? 1 : 0;
}
