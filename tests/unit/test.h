/*
 * test.h - Kiln's small unit-test runner.
 *
 * Each test file defines a table of TestCase and main.c lists the tables
 * (no self-registration).  A check that fails records file, line and the
 * expression and the test goes on; the runner prints one line per test and
 * a closing "N passed, N failed".  Each test runs inside its own arena, so
 * what it builds is freed after it.
 */
#ifndef KILN_TEST_H
#define KILN_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

typedef struct TestCase {
  const char *name;
  void (*fn)(void);
} TestCase;

typedef struct TestSuite {
  const char *name;
  const TestCase *cases;
} TestSuite;

extern int test_failures; /* failures in the running test */
void test_fail(const char *file, int line, const char *fmt, ...) KILN_PRINTF(3, 4);
/* The running test cannot check anything on this machine (no device, one
 * CPU): it says why and returns; the runner lists it as "skip", not "ok",
 * and counts it apart. */
void test_skip(const char *fmt, ...) KILN_PRINTF(1, 2);
/* The repository root (KILN_ROOT, or found from the working directory). */
const char *test_root(void);
/* A fresh deterministic random generator for a test. */
unsigned test_rand(void);
float test_randf(void); /* uniform in [-1, 1) */
int64_t test_rand_between(int64_t lo, int64_t hi); /* uniform in [lo, hi] */
int64_t test_pick(int n, const int64_t *v);        /* one of v[0..n-1] */

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) test_fail(__FILE__, __LINE__, "CHECK(%s)", #c);                  \
  } while (0)
#define CHECK_MSG(c, ...)                                                      \
  do {                                                                         \
    if (!(c)) test_fail(__FILE__, __LINE__, __VA_ARGS__);                      \
  } while (0)
#define CHECK_INT(a, b)                                                        \
  do {                                                                         \
    long long _a = (long long)(a), _b = (long long)(b);                        \
    if (_a != _b)                                                              \
      test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, _a, _b); \
  } while (0)
#define CHECK_STR(a, b)                                                        \
  do {                                                                         \
    const char *_a = (a), *_b = (b);                                           \
    if (!_a || !_b || strcmp(_a, _b))                                          \
      test_fail(__FILE__, __LINE__, "%s == %s:\n--- got:\n%s\n--- expected:\n%s", #a, #b, \
                _a ? _a : "(null)", _b ? _b : "(null)");                       \
  } while (0)
#define CHECK_CONTAINS(hay, needle)                                            \
  do {                                                                         \
    const char *_h = (hay), *_n = (needle);                                    \
    if (!_h || !strstr(_h, _n))                                                \
      test_fail(__FILE__, __LINE__, "%s contains \"%s\"; got: %s", #hay, _n, _h ? _h : "(null)"); \
  } while (0)
/* A call that must succeed (return 0 / non-NULL); prints the error if not. */
#define CHECK_OK(call)                                                         \
  do {                                                                         \
    if ((call) != 0) test_fail(__FILE__, __LINE__, "%s failed: %s", #call, kiln_get_error()); \
  } while (0)
#define CHECK_NN(p)                                                            \
  do {                                                                         \
    if (!(p)) test_fail(__FILE__, __LINE__, "%s is NULL: %s", #p, kiln_get_error()); \
  } while (0)

#endif
