/* test_base.c - arenas, strings, vectors and maps. */
#include "test.h"

static void test_arena(void) {
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  char *p = kalloc(100);
  CHECK(p != NULL);
  CHECK(((uintptr_t)p & 15) == 0);
  for (int i = 0; i < 100; i++) CHECK(p[i] == 0);
  void *big = kalloc(1 << 20); /* larger than a chunk */
  CHECK(big != NULL);
  CHECK(kiln_arena_bytes(a) >= (1 << 20) + 100);
  CHECK_STR(kfmt("%d-%s", 7, "x"), "7-x");
  kiln_arena_pop();
  kiln_arena_free(a);
}

static void test_strbuf(void) {
  StrBuf sb = {0};
  for (int i = 0; i < 1000; i++) sb_printf(&sb, "%d,", i);
  CHECK(sb.len > 2000);
  CHECK(strncmp(sb.data, "0,1,2,", 6) == 0);
  char *s = sb_steal(&sb);
  CHECK(sb.data == NULL);
  free(s);
}

static void test_vec_map(void) {
  AVec v = {0};
  int xs[50];
  for (int i = 0; i < 50; i++) av_push(&v, &xs[i]);
  CHECK_INT(v.len, 50);
  av_remove(&v, 0);
  CHECK(v.data[0] == &xs[1]);
  av_insert(&v, 0, &xs[0]);
  CHECK_INT(av_find(&v, &xs[49]), 49);
  PtrMap m = {0};
  for (int i = 0; i < 50; i++) pm_put(&m, &xs[i], &xs[49 - i]);
  for (int i = 0; i < 50; i++) CHECK(pm_get(&m, &xs[i]) == &xs[49 - i]);
  CHECK(!pm_has(&m, &v));
  pm_free(&m);
  PtrMap sm;
  pm_init_str(&sm);
  char k1[] = "alpha", k2[] = "alpha";
  pm_put(&sm, k1, xs);
  CHECK(pm_get(&sm, k2) == xs);
  pm_free(&sm);
}

static void test_errors(void) {
  CHECK_INT(kiln_set_error("bad %s", "thing"), -1);
  CHECK_STR(kiln_get_error(), "bad thing");
  kiln_error_context("in %s", "f");
  CHECK_STR(kiln_get_error(), "in f: bad thing");
}

const TestCase base_tests[] = {
    {"arena", test_arena},
    {"strbuf", test_strbuf},
    {"vec_map", test_vec_map},
    {"errors", test_errors},
    {NULL, NULL},
};
