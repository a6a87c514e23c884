/* test_runtime.c - arrays, functions, the registry, the thread pool and
 * module loading (with a module compiled by the test from hand-written C). */
#define _GNU_SOURCE /* sched_getcpu, CPU_SET, pthread_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "kiln/runtime.h"
#include "runtime/runtime_internal.h"
#include "test.h"

static const DLDevice cpu = {kDLCPU, 0};
static const DLDataType f32 = {kDLFloat, 32, 1};
static const DLDataType i32 = {kDLInt, 32, 1};

static float *fdata(DLTensor *t) { return (float *)((char *)t->data + t->byte_offset); }

/* ---- errors and version ---- */

static void test_errors_version(void) {
  CHECK_STR(kiln_version(), KILN_VERSION_STRING);
  kiln_set_last_error("something broke");
  CHECK_STR(kiln_last_error(), "something broke");
  kiln_set_last_error(NULL);
  CHECK_STR(kiln_last_error(), "(null)");
}

/* ---- arrays ---- */

static void test_array_empty(void) {
  int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {0, 4, 2}, {17, 1, 3}};
  for (int i = 0; i < 4; i++) {
    DLTensor *t;
    CHECK_OK(kiln_array_empty(3, shapes[i], f32, cpu, &t));
    CHECK(((uintptr_t)t->data & 63) == 0);
    CHECK(t->data != NULL);
    CHECK(t->strides == NULL && t->byte_offset == 0);
    CHECK_INT(t->ndim, 3);
    CHECK_INT(t->shape[1], shapes[i][1]);
    CHECK_INT(kiln_array_nbytes(t), shapes[i][0] * shapes[i][1] * shapes[i][2] * 4);
    kiln_array_free(t);
  }
  DLTensor *s;
  CHECK_OK(kiln_array_empty(0, NULL, (DLDataType){kDLFloat, 64, 1}, cpu, &s)); /* a scalar */
  CHECK_INT(kiln_array_nbytes(s), 8);
  kiln_array_free(s);
  CHECK_OK(kiln_array_empty(1, (int64_t[]){5}, (DLDataType){kDLUInt, 1, 1}, cpu, &s)); /* bool */
  CHECK_INT(kiln_array_nbytes(s), 5);
  kiln_array_free(s);
  CHECK_INT(kiln_array_free(NULL), 0);
  CHECK_INT(kiln_array_nbytes(NULL), 0);
  /* empty with extents whose product alone overflows int64 (a params blob
   * the fuzzer found, saved again): 0 bytes, no overflow */
  int64_t huge0[3] = {(int64_t)1 << 50, (int64_t)1 << 14, 0};
  CHECK_OK(kiln_array_empty(3, huge0, f32, cpu, &s));
  CHECK_INT(kiln_array_nbytes(s), 0);
  kiln_array_free(s);

  DLTensor *bad = (DLTensor *)1;
  int64_t shape[2] = {2, -3};
  CHECK_INT(kiln_array_empty(-1, shape, f32, cpu, &bad), -1);
  CHECK(bad == NULL);
  CHECK_STR(kiln_last_error(), "empty: ndim must be >= 0, got -1");
  CHECK_INT(kiln_array_empty(2, shape, f32, cpu, &bad), -1);
  CHECK_STR(kiln_last_error(), "empty: dimension 1 has negative extent -3");
  shape[1] = 3;
  CHECK_INT(kiln_array_empty(2, shape, (DLDataType){kDLFloat, 7, 1}, cpu, &bad), -1);
  CHECK_STR(kiln_last_error(), "empty: dtype float7 is not supported (code 2, 7 bits, 1 lanes)");
  CHECK_INT(kiln_array_empty(2, shape, (DLDataType){kDLFloat, 32, 0}, cpu, &bad), -1);
  CHECK_CONTAINS(kiln_last_error(), "0 lanes");
  CHECK_INT(kiln_array_empty(2, shape, f32, (DLDevice){kDLVulkan, 0}, &bad), -1);
  CHECK_STR(kiln_last_error(), "empty: device type 7 (vulkan) is not supported yet");
  int64_t huge[2] = {INT64_MAX / 2, 16};
  CHECK_INT(kiln_array_empty(2, huge, f32, cpu, &bad), -1);
  CHECK_CONTAINS(kiln_last_error(), "is too large");
}

/* The VmFlags of the mapping that holds addr (/proc/self/smaps), or "". */
static void vm_flags_of(const void *addr, char *out, size_t size) {
  out[0] = 0;
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  char line[512];
  int inside = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
    else if (inside && !strncmp(line, "VmFlags:", 8)) {
      snprintf(out, size, "%s", line + 8);
      break;
    }
  }
  fclose(f);
}

/* An array of at least 2 MiB starts on a 2 MiB boundary and its whole huge
 * pages are advised MADV_HUGEPAGE (VmFlags "hg"); a smaller one is not. */
static void test_array_huge_pages(void) {
  DLTensor *big, *small;
  CHECK_OK(kiln_array_empty(3, (int64_t[]){3, 256, 1024}, f32, cpu, &big)); /* 3 MiB */
  CHECK_OK(kiln_array_empty(2, (int64_t[]){64, 1024}, f32, cpu, &small)); /* 256 KiB */
  CHECK(((uintptr_t)big->data & ((2u << 20) - 1)) == 0);
  memset(big->data, 1, (size_t)kiln_array_nbytes(big));
  char flags[512];
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0) {
    vm_flags_of(big->data, flags, sizeof flags);
    CHECK(strstr(flags, " hg") != NULL);
    vm_flags_of(small->data, flags, sizeof flags);
    CHECK(flags[0] && strstr(flags, " hg") == NULL);
  }
  kiln_array_free(big);
  kiln_array_free(small);
}

static void test_array_view(void) {
  DLTensor *base, *v, *w, *bad;
  int64_t bshape[2] = {2, 4}, vshape[1] = {8};
  CHECK_OK(kiln_array_empty(2, bshape, f32, cpu, &base));
  for (int i = 0; i < 8; i++) fdata(base)[i] = (float)i * 1.5f;
  CHECK_OK(kiln_array_view(base, 1, vshape, f32, &v));
  CHECK_OK(kiln_array_view(v, 3, (int64_t[]){2, 2, 2}, i32, &w)); /* a view of a view */
  CHECK(v->data == base->data);
  kiln_array_free(base); /* the views keep the memory alive */
  for (int i = 0; i < 8; i++) CHECK(fdata(v)[i] == (float)i * 1.5f);
  kiln_array_free(v);
  float f = 3.0f;
  int32_t bits;
  memcpy(&bits, &f, 4);
  CHECK_INT(((int32_t *)w->data)[2], bits);
  kiln_array_free(w);

  CHECK_OK(kiln_array_empty(2, bshape, f32, cpu, &base));
  CHECK_INT(kiln_array_view(base, 1, (int64_t[]){6}, f32, &bad), -1);
  CHECK_STR(kiln_last_error(), "view: shape (6) has 6 elements, the base array's (2, 4) has 8");
  CHECK_INT(kiln_array_view(base, 1, vshape, (DLDataType){kDLFloat, 64, 1}, &bad), -1);
  CHECK_STR(kiln_last_error(),
            "view: dtype float64 (64 bytes) does not match the base array's float32 (32 bytes)");
  kiln_array_free(base);
}

/* Counts deleter calls. */
static int deleter_calls;
static void count_deleter(void *ctx) {
  deleter_calls++;
  CHECK(ctx == &deleter_calls);
}

static void test_array_wrap(void) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  DLTensor *t, *v;
  deleter_calls = 0;
  CHECK_OK(kiln_array_wrap(buf, 2, (int64_t[]){2, 3}, f32, cpu, count_deleter, &deleter_calls, &t));
  CHECK(t->data == buf);
  CHECK_OK(kiln_array_view(t, 1, (int64_t[]){6}, f32, &v));
  kiln_array_free(t);
  CHECK_INT(deleter_calls, 0);
  kiln_array_free(v);
  CHECK_INT(deleter_calls, 1);
  CHECK_INT(kiln_array_wrap(NULL, 1, (int64_t[]){3}, f32, cpu, NULL, NULL, &t), -1);
  CHECK_CONTAINS(kiln_last_error(), "wrap: data is NULL");
}

static void test_array_copy(void) {
  /* A transposed view: buffer holds a 3x2 matrix m; the 2x3 tensor with
   * strides (1, 2) is its transpose. */
  float m[6] = {0, 1, 2, 3, 4, 5};
  int64_t tshape[2] = {2, 3}, tstrides[2] = {1, 2};
  DLTensor tr = {m, cpu, 2, f32, tshape, tstrides, 0};
  DLTensor *dst;
  CHECK_OK(kiln_array_empty(2, tshape, f32, cpu, &dst));
  CHECK_OK(kiln_array_copy(&tr, dst));
  float want[6] = {0, 2, 4, 1, 3, 5};
  for (int i = 0; i < 6; i++) CHECK(fdata(dst)[i] == want[i]);
  float out[6];
  CHECK_OK(kiln_array_copy_to_bytes(&tr, out, sizeof out)); /* strided source to bytes */
  CHECK(!memcmp(out, want, sizeof out));

  /* Every other row of a (4, 3, 4) tensor, starting at row 1 (byte_offset):
   * runs of 12 contiguous floats. */
  float big[48];
  for (int i = 0; i < 48; i++) big[i] = test_randf();
  int64_t sshape[3] = {2, 3, 4}, sstrides[3] = {24, 4, 1};
  DLTensor sl = {big, cpu, 3, f32, sshape, sstrides, 12 * sizeof(float)};
  DLTensor *d3;
  CHECK_OK(kiln_array_empty(3, sshape, f32, cpu, &d3));
  CHECK_OK(kiln_array_copy(&sl, d3));
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < 12; i++) CHECK(fdata(d3)[r * 12 + i] == big[(1 + 2 * r) * 12 + i]);
  /* A stride in the innermost dimension: every other element. */
  int64_t eshape[1] = {24}, estrides[1] = {2};
  DLTensor ev = {big, cpu, 1, f32, eshape, estrides, 0};
  float evens[24];
  CHECK_OK(kiln_array_copy_to_bytes(&ev, evens, sizeof evens));
  for (int i = 0; i < 24; i++) CHECK(evens[i] == big[2 * i]);

  /* Bytes in and out. */
  float src[6] = {6, 5, 4, 3, 2, 1};
  CHECK_OK(kiln_array_copy_from_bytes(dst, src, sizeof src));
  CHECK_OK(kiln_array_copy_to_bytes(dst, out, sizeof out));
  CHECK(!memcmp(out, src, sizeof src));
  CHECK_INT(kiln_array_copy_from_bytes(dst, src, 20), -1);
  CHECK_STR(kiln_last_error(), "copy_from_bytes: 20 bytes given, the array holds 24");
  CHECK_INT(kiln_array_copy_to_bytes(dst, out, 28), -1);
  CHECK_STR(kiln_last_error(), "copy_to_bytes: 28 bytes given, the array holds 24");

  /* What differs is named. */
  DLTensor *other, *ints;
  CHECK_OK(kiln_array_empty(2, (int64_t[]){3, 2}, f32, cpu, &other));
  CHECK_INT(kiln_array_copy(dst, other), -1);
  CHECK_STR(kiln_last_error(), "copy: shape (2, 3) does not match (3, 2)");
  CHECK_OK(kiln_array_empty(2, tshape, i32, cpu, &ints));
  CHECK_INT(kiln_array_copy(dst, ints), -1);
  CHECK_STR(kiln_last_error(), "copy: dtype float32 does not match int32");
  CHECK_INT(kiln_array_copy(dst, &tr), -1);
  CHECK_STR(kiln_last_error(), "copy: the destination must be compact (it has strides)");
  DLTensor gpu = *dst;
  gpu.device = (DLDevice){kDLVulkan, 0};
  CHECK_INT(kiln_array_copy(&gpu, dst), -1);
  CHECK_STR(kiln_last_error(), "copy: device type 7 (vulkan) is not supported yet");

  /* Zero-size arrays copy nothing, successfully. */
  DLTensor *z1, *z2;
  CHECK_OK(kiln_array_empty(2, (int64_t[]){0, 3}, f32, cpu, &z1));
  CHECK_OK(kiln_array_empty(2, (int64_t[]){0, 3}, f32, cpu, &z2));
  CHECK_OK(kiln_array_copy(z1, z2));
  CHECK_OK(kiln_array_copy_from_bytes(z1, NULL, 0));
  kiln_array_free(z1);
  kiln_array_free(z2);
  kiln_array_free(other);
  kiln_array_free(ints);
  kiln_array_free(dst);
  kiln_array_free(d3);
}

/* A foreign DLManagedTensor whose deleter counts its calls. */
typedef struct Foreign {
  DLManagedTensor m;
  int64_t shape[2];
  float data[6];
  int *calls;
} Foreign;

static void foreign_deleter(DLManagedTensor *m) {
  Foreign *f = m->manager_ctx;
  (*f->calls)++;
  free(f);
}

static void test_dlpack(void) {
  /* Kiln -> DLPack -> Kiln: the memory lives until the last owner goes. */
  DLTensor *a, *b;
  int64_t shape[2] = {2, 3};
  CHECK_OK(kiln_array_empty(2, shape, f32, cpu, &a));
  for (int i = 0; i < 6; i++) fdata(a)[i] = (float)i;
  DLManagedTensor *m;
  CHECK_OK(kiln_array_to_dlpack(a, &m));
  CHECK(m->dl_tensor.data == a->data && m->dl_tensor.shape[1] == 3);
  kiln_array_free(a);
  CHECK_OK(kiln_array_from_dlpack(m, &b));
  for (int i = 0; i < 6; i++) CHECK(fdata(b)[i] == (float)i);
  kiln_array_free(b); /* runs m's deleter, which releases a */

  /* A consumer that calls the deleter itself. */
  CHECK_OK(kiln_array_empty(1, (int64_t[]){4}, f32, cpu, &a));
  CHECK_OK(kiln_array_to_dlpack(a, &m));
  kiln_array_free(a);
  m->deleter(m);

  /* A foreign tensor with strides: its deleter runs exactly once. */
  int calls = 0;
  Foreign *f = xcalloc(1, sizeof *f);
  f->shape[0] = 3, f->shape[1] = 2;
  for (int i = 0; i < 6; i++) f->data[i] = (float)i;
  int64_t strides[2] = {1, 3};
  f->calls = &calls;
  f->m.dl_tensor = (DLTensor){f->data, cpu, 2, f32, f->shape, strides, 0};
  f->m.manager_ctx = f;
  f->m.deleter = foreign_deleter;
  CHECK_OK(kiln_array_from_dlpack(&f->m, &b));
  CHECK(b->strides != strides && b->strides[1] == 3); /* copied */
  DLTensor *c;
  CHECK_OK(kiln_array_empty(2, f->shape, f32, cpu, &c));
  CHECK_OK(kiln_array_copy(b, c));
  float want[6] = {0, 3, 1, 4, 2, 5};
  CHECK(!memcmp(fdata(c), want, sizeof want));
  CHECK_INT(calls, 0);
  kiln_array_free(b);
  CHECK_INT(calls, 1);
  kiln_array_free(c);

  /* A rejected tensor stays the caller's. */
  DLManagedTensor badm = {{NULL, cpu, -2, f32, NULL, NULL, 0}, NULL, NULL};
  CHECK_INT(kiln_array_from_dlpack(&badm, &b), -1);
  CHECK_STR(kiln_last_error(), "from_dlpack: ndim must be >= 0, got -2");
}

/* ---- functions and the registry ---- */

static int add_ints(KilnValue *args, int *codes, int n, KilnValue *ret, int *ret_code, void *res) {
  if (n != 2 || codes[0] != KILN_INT || codes[1] != KILN_INT) {
    kiln_set_last_error("add: expected two ints");
    return -1;
  }
  ret->v_int64 = args[0].v_int64 + args[1].v_int64 + (res ? *(int64_t *)res : 0);
  *ret_code = KILN_INT;
  return 0;
}

static int greet(KilnValue *args, int *codes, int n, KilnValue *ret, int *ret_code, void *res) {
  static _Thread_local char buf[64];
  snprintf(buf, sizeof buf, "hello %s", n == 1 && codes[0] == KILN_STR ? args[0].v_str : "?");
  ret->v_str = buf;
  *ret_code = KILN_STR;
  return 0;
}

/* Returns what the function in its resource returns: the result aliases
 * the thread store kiln_func_call copies into. */
static int forward(KilnValue *args, int *codes, int n, KilnValue *ret, int *ret_code, void *res) {
  return kiln_func_call(res, args, codes, n, ret, ret_code);
}

static int fail_silently(KilnValue *args, int *codes, int n, KilnValue *ret, int *ret_code,
                         void *res) {
  return 1;
}

static int finalized;
static void count_finalizer(void *res) { finalized++; }

static void test_registry(void) {
  KilnFunction *f, *g, *h;
  int64_t bonus = 100;
  CHECK_OK(kiln_func_create(add_ints, NULL, NULL, &f));
  CHECK_OK(kiln_func_register_global("test.add", f, 0));
  kiln_func_free(f); /* the registry holds its own reference */
  CHECK_OK(kiln_func_get_global("test.add", &g));
  CHECK_NN(g);
  KilnValue args[2] = {{.v_int64 = 40}, {.v_int64 = 2}}, ret;
  int codes[2] = {KILN_INT, KILN_INT}, rc;
  CHECK_OK(kiln_func_call(g, args, codes, 2, &ret, &rc));
  CHECK_INT(rc, KILN_INT);
  CHECK_INT(ret.v_int64, 42);
  codes[1] = KILN_FLOAT;
  CHECK_INT(kiln_func_call(g, args, codes, 2, &ret, &rc), -1);
  CHECK_INT(rc, KILN_NULL);
  CHECK_STR(kiln_last_error(), "add: expected two ints");
  codes[1] = KILN_INT;
  kiln_func_free(g);

  CHECK_OK(kiln_func_create(add_ints, &bonus, NULL, &h));
  CHECK_INT(kiln_func_register_global("test.add", h, 0), -1);
  CHECK_STR(kiln_last_error(), "global function 'test.add' is already registered");
  CHECK_OK(kiln_func_register_global("test.add", h, 1));
  kiln_func_free(h);
  CHECK_OK(kiln_func_get_global("test.add", &g));
  CHECK_OK(kiln_func_call(g, args, codes, 2, &ret, &rc));
  CHECK_INT(ret.v_int64, 142);
  kiln_func_free(g);
  CHECK_OK(kiln_func_get_global("test.nothing", &g));
  CHECK(g == NULL);

  /* Strings come back copied, also through a nested call. */
  CHECK_OK(kiln_func_create(greet, NULL, NULL, &f));
  CHECK_OK(kiln_func_register_global("test.greet", f, 1));
  CHECK_OK(kiln_func_create(forward, f, NULL, &g));
  KilnValue sarg = {.v_str = "kiln"};
  int scode = KILN_STR;
  CHECK_OK(kiln_func_call(g, &sarg, &scode, 1, &ret, &rc));
  CHECK_INT(rc, KILN_STR);
  CHECK_STR(ret.v_str, "hello kiln");
  sarg.v_str = "world";
  CHECK_OK(kiln_func_call(f, &sarg, &scode, 1, NULL, NULL)); /* result not wanted */
  CHECK_OK(kiln_func_call(f, &sarg, &scode, 1, &ret, &rc));
  CHECK_STR(ret.v_str, "hello world");
  kiln_func_free(g);
  kiln_func_free(f);

  int num;
  const char **names;
  CHECK_OK(kiln_func_list_global_names(&num, &names));
  int seen_add = 0, seen_greet = 0, seen_load = 0;
  for (int i = 0; i < num; i++) {
    if (i) CHECK(strcmp(names[i - 1], names[i]) < 0);
    seen_add += !strcmp(names[i], "test.add");
    seen_greet += !strcmp(names[i], "test.greet");
    seen_load += !strcmp(names[i], "runtime.module_load");
  }
  CHECK(seen_add == 1 && seen_greet == 1 && seen_load == 1);
  CHECK_INT(kiln_func_register_global("", NULL, 0), -1);
  CHECK_STR(kiln_last_error(), "register_global: the name is empty");
  CHECK_INT(kiln_func_register_global("test.null", NULL, 0), -1);
  CHECK_STR(kiln_last_error(), "register_global: the function for 'test.null' is NULL");
}

static void test_function_refs(void) {
  KilnFunction *f;
  finalized = 0;
  CHECK_OK(kiln_func_create(fail_silently, NULL, count_finalizer, &f));
  CHECK_OK(kiln_func_retain(f));
  CHECK_INT(kiln_func_call(f, NULL, NULL, 0, NULL, NULL), -1);
  CHECK_STR(kiln_last_error(), "a function failed without setting an error");
  kiln_func_free(f);
  CHECK_INT(finalized, 0);
  kiln_func_free(f);
  CHECK_INT(finalized, 1);
  CHECK_INT(kiln_func_free(NULL), 0);
  CHECK_INT(kiln_func_retain(NULL), -1);
  CHECK_INT(kiln_func_call(NULL, NULL, NULL, 0, NULL, NULL), -1);
  CHECK_INT(kiln_func_create(NULL, NULL, NULL, &f), -1);

  /* A registered function lives until the registry lets go of it. */
  CHECK_OK(kiln_func_create(add_ints, NULL, count_finalizer, &f));
  CHECK_OK(kiln_func_register_global("test.refs", f, 1));
  kiln_func_free(f);
  CHECK_INT(finalized, 1);
  CHECK_OK(kiln_func_create(add_ints, NULL, NULL, &f));
  CHECK_OK(kiln_func_register_global("test.refs", f, 1)); /* releases the first */
  kiln_func_free(f);
  CHECK_INT(finalized, 2);
}

/* ---- the thread pool ---- */

typedef struct SumJob {
  atomic_long sum;  /* sum of task ids seen */
  atomic_int calls; /* tasks run */
  atomic_int seen_n; /* the num_tasks the first task saw (0: none yet) */
  atomic_int bad;   /* tasks that saw another num_tasks, or a bad id */
} SumJob;

static int sum_task(int id, int n, void *cdata) {
  SumJob *j = cdata;
  int zero = 0;
  atomic_compare_exchange_strong(&j->seen_n, &zero, n);
  if (n != atomic_load(&j->seen_n) || id < 0 || id >= n) atomic_fetch_add(&j->bad, 1);
  atomic_fetch_add(&j->sum, id);
  atomic_fetch_add(&j->calls, 1);
  return 0;
}

/* Runs `launches` launches of num_tasks tasks (0: the pool's choice, at
 * least one per thread, or one when the pool has a single thread); every
 * task id in [0, n) must run exactly once (their sum and count); 0 on
 * success. */
static int sum_launches(int launches, int num_tasks) {
  int size = kiln_get_num_threads();
  for (int i = 0; i < launches; i++) {
    SumJob j = {0};
    if (kiln_parallel_launch(sum_task, &j, num_tasks) != 0) return -1;
    long n = j.seen_n;
    if (num_tasks > 0 ? n != num_tasks : size == 1 ? n != 1 : n < size) return -1;
    if (j.sum != n * (n - 1) / 2 || j.calls != n || j.bad) return -1;
  }
  return 0;
}

static void test_threadpool_sum(void) {
  int sizes[3] = {1, 2, 4};
  for (int s = 0; s < 3; s++) {
    CHECK_OK(kiln_set_num_threads(sizes[s]));
    CHECK_INT(kiln_get_num_threads(), sizes[s]);
    CHECK_OK(sum_launches(2000, 0));
    CHECK_OK(sum_launches(500, 7));
    CHECK_OK(sum_launches(50, 1000));
  }
  setenv("KILN_NUM_THREADS", "3", 1);
  CHECK_OK(kiln_set_num_threads(0)); /* back to the default, which reads the variable */
  CHECK_INT(kiln_get_num_threads(), 3);
  unsetenv("KILN_NUM_THREADS");
  CHECK_INT(kiln_set_num_threads(-1), -1);
  CHECK_INT(kiln_parallel_launch(NULL, NULL, 2), -1);
  CHECK_OK(kiln_set_num_threads(0));
  CHECK(kiln_get_num_threads() >= 1);
}

typedef struct NestJob {
  atomic_int inner_calls;
  atomic_int wrong_thread;
  atomic_int failed;
} NestJob;

typedef struct Inner {
  NestJob *job;
  pthread_t outer; /* the thread running the outer task */
} Inner;

static int inner_task(int id, int n, void *cdata) {
  Inner *in = cdata;
  if (!pthread_equal(pthread_self(), in->outer)) atomic_fetch_add(&in->job->wrong_thread, 1);
  atomic_fetch_add(&in->job->inner_calls, 1);
  return 0;
}

static int outer_task(int id, int n, void *cdata) {
  Inner in = {cdata, pthread_self()};
  if (kiln_parallel_launch(inner_task, &in, 5)) atomic_fetch_add(&in.job->failed, 1);
  if (kiln_set_num_threads(3) == 0) atomic_fetch_add(&in.job->failed, 1); /* not allowed here */
  return 0;
}

static void test_threadpool_nested(void) {
  CHECK_OK(kiln_set_num_threads(4));
  for (int i = 0; i < 50; i++) {
    NestJob j = {0};
    CHECK_OK(kiln_parallel_launch(outer_task, &j, 6));
    CHECK_INT(j.inner_calls, 6 * 5);
    CHECK_INT(j.wrong_thread, 0);
    CHECK_INT(j.failed, 0);
  }
  CHECK_OK(kiln_set_num_threads(0));
}

static int failing_task(int id, int n, void *cdata) {
  if (id != 2) return 0;
  if (cdata) kiln_set_last_error("task 2 broke");
  return 7;
}

static void test_threadpool_failure(void) {
  int sizes[2] = {1, 4};
  for (int s = 0; s < 2; s++) {
    CHECK_OK(kiln_set_num_threads(sizes[s]));
    for (int i = 0; i < 20; i++) {
      CHECK_INT(kiln_parallel_launch(failing_task, "msg", 6), -1);
      CHECK_STR(kiln_last_error(), "task 2 broke");
      CHECK_INT(kiln_parallel_launch(failing_task, NULL, 4), -1);
      CHECK_STR(kiln_last_error(),
                "parallel task 2 of 4 failed (returned 7) without setting an error");
      CHECK_OK(kiln_parallel_launch(failing_task, NULL, 2)); /* no task 2 */
    }
  }
  CHECK_OK(kiln_set_num_threads(0));
}

/* Tasks that wait (with a time limit) until all of them have started, so
 * they must run on num_tasks different threads at once. */
typedef struct Gather {
  atomic_int started;
  atomic_int timed_out;
  pthread_t threads[8];
} Gather;

static int gather_task(int id, int n, void *cdata) {
  Gather *g = cdata;
  g->threads[id] = pthread_self();
  atomic_fetch_add(&g->started, 1);
  double t0 = kiln_now_seconds();
  while (atomic_load(&g->started) < n) {
    if (kiln_now_seconds() - t0 > 5.0) {
      atomic_fetch_add(&g->timed_out, 1);
      break;
    }
    sched_yield(); /* lets valgrind, which runs one thread at a time, switch */
  }
  return 0;
}

static void test_threadpool_workers(void) {
  int sizes[2] = {2, 4};
  for (int s = 0; s < 2; s++) {
    CHECK_OK(kiln_set_num_threads(sizes[s]));
    for (int round = 0; round < 3; round++) {
      if (round == 2) usleep(20000); /* let the workers fall asleep first */
      Gather g = {0}; /* one task per thread: each owns one, none can steal */
      CHECK_OK(kiln_parallel_launch(gather_task, &g, sizes[s]));
      CHECK_INT(g.started, sizes[s]);
      CHECK_INT(g.timed_out, 0);
      CHECK(pthread_equal(g.threads[0], pthread_self())); /* the caller runs task 0 */
      for (int i = 0; i < sizes[s]; i++)
        for (int j = 0; j < i; j++) CHECK(!pthread_equal(g.threads[i], g.threads[j]));
    }
  }
  CHECK_OK(kiln_set_num_threads(0));
}

/* Two tasks: the worker's takes 3 ms and the launcher's waits (with a
 * time limit) until the worker has started, so the launcher, done with
 * its own, waits past its spin for the worker's and sleeps until that
 * task's end wakes it.  When the launch returns both tasks have finished
 * (a launch that returned early would leave the worker's unset), with the
 * worker awake or asleep at the start. */
typedef struct SlowJob {
  pthread_t launcher;
  atomic_int worker_started, timed_out;
  atomic_int finished[2];
} SlowJob;

static int slow_task(int id, int n, void *cdata) {
  SlowJob *j = cdata;
  double t0 = kiln_now_seconds();
  if (pthread_equal(pthread_self(), j->launcher)) {
    while (!atomic_load(&j->worker_started))
      if (kiln_now_seconds() - t0 > 5.0) {
        atomic_store(&j->timed_out, 1);
        break;
      }
  } else {
    atomic_store(&j->worker_started, 1);
    while (kiln_now_seconds() - t0 < 0.003) {
    }
  }
  atomic_store(&j->finished[id], 1);
  return 0;
}

static void test_threadpool_join(void) {
  CHECK_OK(kiln_set_num_threads(2));
  for (int round = 0; round < 8; round++) {
    if (round % 2) usleep(5000); /* let the worker fall asleep */
    SlowJob j = {.launcher = pthread_self()};
    CHECK_OK(kiln_parallel_launch(slow_task, &j, 2));
    CHECK_INT(atomic_load(&j.timed_out), 0);
    for (int k = 0; k < 2; k++) CHECK_INT(atomic_load(&j.finished[k]), 1);
  }
  CHECK_OK(kiln_set_num_threads(0));
}

/* A launching thread pinned to one core starts the workers, which inherit
 * its pinning: the worker and the launcher share that core.  Joining a
 * job, the worker moves to the process's other cores; with
 * KILN_THREAD_AFFINITY=0 it stays where it is.  (Needs two cores.) */
typedef struct CoreJob {
  pthread_t launcher;
  atomic_int started, worker_cpu, timed_out;
} CoreJob;

static int core_task(int id, int n, void *cdata) {
  CoreJob *j = cdata;
  if (!pthread_equal(pthread_self(), j->launcher)) atomic_store(&j->worker_cpu, sched_getcpu());
  atomic_fetch_add(&j->started, 1);
  double t0 = kiln_now_seconds();
  while (atomic_load(&j->started) < n) {
    if (kiln_now_seconds() - t0 > 5.0) {
      atomic_store(&j->timed_out, 1);
      break;
    }
    sched_yield(); /* the two threads may share a core: let the other run */
  }
  return 0;
}

typedef struct CoreRun {
  int cpu;        /* the core the launcher is pinned to */
  int worker_cpu; /* the worker's core in the last job, -1 if none ran */
  int bad;
} CoreRun;

static void *core_launcher(void *arg) {
  CoreRun *r = arg;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(r->cpu, &one);
  if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) || kiln_set_num_threads(2)) {
    r->bad = 1;
    return NULL;
  }
  r->worker_cpu = -1;
  for (int i = 0; i < 20; i++) {
    CoreJob j = {.launcher = pthread_self(), .worker_cpu = -1};
    if (kiln_parallel_launch(core_task, &j, 2) || j.timed_out) r->bad = 1;
    r->worker_cpu = atomic_load(&j.worker_cpu);
  }
  return NULL;
}

static void test_threadpool_leaves_launcher_core(void) {
  cpu_set_t all;
  if (sched_getaffinity(0, sizeof all, &all) || CPU_COUNT(&all) < 2) {
    test_skip("one CPU in this process's affinity mask: no other core for the worker");
    return;
  }
  int core = 0;
  while (!CPU_ISSET(core, &all)) core++;
  for (int opt_out = 0; opt_out < 2; opt_out++) {
    if (opt_out) setenv("KILN_THREAD_AFFINITY", "0", 1);
    CoreRun r = {.cpu = core};
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, core_launcher, &r), 0);
    pthread_join(th, NULL);
    CHECK_INT(r.bad, 0);
    if (opt_out ? r.worker_cpu != core : r.worker_cpu == core || r.worker_cpu < 0)
      test_fail(__FILE__, __LINE__, "%s: the worker ran on core %d, the launcher's is %d",
                opt_out ? "KILN_THREAD_AFFINITY=0" : "default", r.worker_cpu, core);
    unsetenv("KILN_THREAD_AFFINITY");
    CHECK_OK(kiln_set_num_threads(0)); /* stops the workers the pinned thread started */
  }
}

static void *app_thread(void *arg) {
  (void)arg;
  intptr_t bad = sum_launches(300, 0) != 0 || sum_launches(100, 9) != 0;
  return (void *)bad;
}

static void test_threadpool_concurrent(void) {
  CHECK_OK(kiln_set_num_threads(4));
  pthread_t th[4];
  for (int i = 0; i < 4; i++) CHECK_INT(pthread_create(&th[i], NULL, app_thread, NULL), 0);
  for (int i = 0; i < 4; i++) {
    void *bad;
    pthread_join(th[i], &bad);
    CHECK(bad == NULL);
  }
  CHECK_OK(kiln_set_num_threads(0));
}

/* ---- modules ---- */

/* A module written by hand against the ABI at the bottom of runtime.h. */
static const char vadd_source[] =
    "#include <kiln/runtime.h>\n"
    "#include <stdio.h>\n"
    "const char __kiln_module_magic[] = \"kiln-module-v1\";\n"
    "void (*__kiln_set_last_error_ptr)(const char *);\n"
    "int (*__kiln_parallel_launch_ptr)(int (*)(int, int, void *), void *, int);\n"
    "static int32_t fail(const char *msg) {\n"
    "  if (__kiln_set_last_error_ptr) __kiln_set_last_error_ptr(msg);\n"
    "  return -1;\n"
    "}\n"
    "static int32_t check(KilnValue *args, int32_t *codes, int32_t n, const char *name) {\n"
    "  static _Thread_local char msg[256];\n"
    "  if (n != 3) {\n"
    "    snprintf(msg, sizeof msg, \"%s: expected 3 arguments, got %d\", name, (int)n);\n"
    "    return fail(msg);\n"
    "  }\n"
    "  for (int i = 0; i < 3; i++) {\n"
    "    if (codes[i] != KILN_DLTENSOR && codes[i] != KILN_NDARRAY) {\n"
    "      snprintf(msg, sizeof msg, \"%s: argument %d must be a tensor\", name, i);\n"
    "      return fail(msg);\n"
    "    }\n"
    "    DLTensor *t = args[i].v_handle, *a = args[0].v_handle;\n"
    "    if (t->ndim != 1 || t->dtype.code != kDLFloat || t->dtype.bits != 32 ||\n"
    "        t->dtype.lanes != 1 || t->shape[0] != a->shape[0]) {\n"
    "      snprintf(msg, sizeof msg, \"%s: argument %d must be float32 of shape (%lld)\",\n"
    "               name, i, (long long)a->shape[0]);\n"
    "      return fail(msg);\n"
    "    }\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "#define PTR(i) ((float *)((char *)((DLTensor *)args[i].v_handle)->data + \\\n"
    "                ((DLTensor *)args[i].v_handle)->byte_offset))\n"
    "static int32_t vadd(KilnValue *args, int32_t *codes, int32_t n) {\n"
    "  if (check(args, codes, n, \"vadd\")) return -1;\n"
    "  int64_t len = ((DLTensor *)args[0].v_handle)->shape[0];\n"
    "  float *a = PTR(0), *b = PTR(1), *c = PTR(2);\n"
    "  for (int64_t i = 0; i < len; i++) c[i] = a[i] + b[i];\n"
    "  return 0;\n"
    "}\n"
    "typedef struct { float *a, *b, *c; int64_t len; } Closure;\n"
    "static int vadd_task(int id, int num, void *cdata) {\n"
    "  Closure *k = cdata;\n"
    "  int64_t chunk = (k->len + num - 1) / num, lo = id * chunk;\n"
    "  int64_t hi = lo + chunk < k->len ? lo + chunk : k->len;\n"
    "  for (int64_t i = lo; i < hi; i++) k->c[i] = k->a[i] + k->b[i];\n"
    "  return 0;\n"
    "}\n"
    "static int32_t vadd_parallel(KilnValue *args, int32_t *codes, int32_t n) {\n"
    "  if (check(args, codes, n, \"vadd_parallel\")) return -1;\n"
    "  Closure k = {PTR(0), PTR(1), PTR(2), ((DLTensor *)args[0].v_handle)->shape[0]};\n"
    "  if (!__kiln_parallel_launch_ptr) return fail(\"vadd_parallel: no thread pool\");\n"
    "  return __kiln_parallel_launch_ptr(vadd_task, &k, 0);\n"
    "}\n"
    "const int32_t __kiln_num_kernels = 2;\n"
    "const char *const __kiln_kernel_names[] = {\"vadd\", \"vadd_parallel\"};\n"
    "KilnKernelFunc const __kiln_kernel_funcs[] = {vadd, vadd_parallel};\n"
    "const int32_t __kiln_num_blobs = 1;\n"
    "const char *const __kiln_blob_names[] = {\"note\"};\n"
    "const unsigned char *const __kiln_blob_data[] = {(const unsigned char *)\"hi there\"};\n"
    "const uint64_t __kiln_blob_sizes[] = {8};\n";

/* Compile C source into dir/name.so; 0 on success. */
static int compile_so(const char *dir, const char *name, const char *source) {
  char src[4200], so[4200], cmd[13000];
  snprintf(src, sizeof src, "%s/%s.c", dir, name);
  snprintf(so, sizeof so, "%s/%s.so", dir, name);
  if (kiln_write_file(src, source, strlen(source))) return -1;
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O2 -I'%s/include' -o '%s' '%s'", test_root(), so,
           src);
  return system(cmd) == 0 ? 0 : -1;
}

static int call3(KilnFunction *f, DLTensor *a, DLTensor *b, DLTensor *c, int code) {
  KilnValue args[3] = {{.v_handle = a}, {.v_handle = b}, {.v_handle = c}};
  int codes[3] = {code, code, code};
  KilnValue ret;
  int rc;
  return kiln_func_call(f, args, codes, 3, &ret, &rc);
}

static void test_module(void) {
  char *dir = kiln_mkdtemp("kiln-rt-");
  CHECK_NN(dir);
  if (!dir) return;
  CHECK_OK(compile_so(dir, "vadd", vadd_source));
  char *path = kfmt("%s/vadd.so", dir);
  KilnModule *mod;
  CHECK_OK(kiln_module_load(path, &mod));
  if (test_failures) goto out;
  CHECK_STR(kiln_module_path(mod), path);

  int num;
  const char **names;
  CHECK_OK(kiln_module_list_functions(mod, &num, &names));
  CHECK_INT(num, 2);
  CHECK_STR(names[0], "vadd");
  CHECK_STR(names[1], "vadd_parallel");
  const void *data;
  size_t size;
  CHECK_OK(kiln_module_get_blob(mod, "note", &data, &size));
  CHECK(size == 8 && !memcmp(data, "hi there", 8));
  CHECK_OK(kiln_module_get_blob(mod, "params", &data, &size));
  CHECK(data == NULL && size == 0);

  int64_t n = 1000;
  DLTensor *a, *b, *c;
  CHECK_OK(kiln_array_empty(1, &n, f32, cpu, &a));
  CHECK_OK(kiln_array_empty(1, &n, f32, cpu, &b));
  CHECK_OK(kiln_array_empty(1, &n, f32, cpu, &c));
  for (int i = 0; i < n; i++) fdata(a)[i] = test_randf(), fdata(b)[i] = test_randf();

  KilnFunction *vadd, *vpar;
  CHECK_OK(kiln_module_get_function(mod, "vadd", &vadd));
  CHECK_OK(kiln_module_get_function(mod, "vadd_parallel", &vpar));
  kiln_module_free(mod); /* the functions keep the code loaded */
  CHECK_OK(call3(vadd, a, b, c, KILN_NDARRAY));
  for (int i = 0; i < n; i++) CHECK(fdata(c)[i] == fdata(a)[i] + fdata(b)[i]);
  memset(c->data, 0, (size_t)n * 4);
  CHECK_OK(kiln_set_num_threads(4));
  CHECK_OK(call3(vpar, a, b, c, KILN_DLTENSOR));
  for (int i = 0; i < n; i++) CHECK(fdata(c)[i] == fdata(a)[i] + fdata(b)[i]);
  CHECK_OK(kiln_set_num_threads(0));

  /* The kernel's own checks, reported through __kiln_set_last_error_ptr. */
  CHECK_INT(call3(vadd, a, b, c, KILN_INT), -1);
  CHECK_STR(kiln_last_error(), "vadd: argument 0 must be a tensor");
  DLTensor *short_c;
  CHECK_OK(kiln_array_empty(1, (int64_t[]){10}, f32, cpu, &short_c));
  CHECK_INT(call3(vadd, a, b, short_c, KILN_NDARRAY), -1);
  CHECK_STR(kiln_last_error(), "vadd: argument 2 must be float32 of shape (1000)");
  CHECK_INT(kiln_func_call(vadd, NULL, NULL, 0, NULL, NULL), -1);
  CHECK_STR(kiln_last_error(), "vadd: expected 3 arguments, got 0");
  kiln_func_free(vadd);
  kiln_func_free(vpar);

  /* The same through the packed builtins: modules as KILN_MODULE values. */
  KilnFunction *load, *getf;
  CHECK_OK(kiln_func_get_global("runtime.module_load", &load));
  CHECK_OK(kiln_func_get_global("runtime.module_get_function", &getf));
  KilnValue arg = {.v_str = path}, ret;
  int code = KILN_STR, rc;
  CHECK_OK(kiln_func_call(load, &arg, &code, 1, &ret, &rc));
  CHECK_INT(rc, KILN_MODULE);
  KilnModule *m2 = ret.v_handle;
  KilnValue gargs[2] = {{.v_handle = m2}, {.v_str = "vadd"}};
  int gcodes[2] = {KILN_MODULE, KILN_STR};
  CHECK_OK(kiln_func_call(getf, gargs, gcodes, 2, &ret, &rc));
  CHECK_INT(rc, KILN_FUNC);
  memset(c->data, 0, (size_t)n * 4);
  CHECK_OK(call3(ret.v_handle, a, b, c, KILN_NDARRAY));
  CHECK(fdata(c)[7] == fdata(a)[7] + fdata(b)[7]);
  kiln_func_free(ret.v_handle);
  gcodes[0] = KILN_HANDLE;
  CHECK_INT(kiln_func_call(getf, gargs, gcodes, 2, &ret, &rc), -1);
  CHECK_STR(kiln_last_error(), "runtime.module_get_function: argument 0 must be module "
                               "(type code 9), got handle (type code 3)");
  CHECK_OK(kiln_func_call(load, &arg, &code, 1, NULL, NULL)); /* result dropped, not leaked */
  kiln_module_free(m2);
  kiln_func_free(load);
  kiln_func_free(getf);
  kiln_array_free(a);
  kiln_array_free(b);
  kiln_array_free(c);
  kiln_array_free(short_c);
out:
  kiln_rmtree(dir);
  free(dir);
}

static void test_module_errors(void) {
  char *dir = kiln_mkdtemp("kiln-rt-");
  CHECK_NN(dir);
  if (!dir) return;
  KilnModule *mod = (KilnModule *)1;
  char *missing = kfmt("%s/missing.so", dir);
  CHECK_INT(kiln_module_load(missing, &mod), -1);
  CHECK(mod == NULL);
  CHECK_STR(kiln_last_error(), kfmt("cannot load module '%s': no such file", missing));

  char *text = kfmt("%s/text.so", dir);
  CHECK_OK(kiln_write_file(text, "not a shared object\n", 20));
  CHECK_INT(kiln_module_load(text, &mod), -1);
  CHECK_CONTAINS(kiln_last_error(), kfmt("cannot load module '%s': ", text));
  CHECK_CONTAINS(kiln_last_error(), "not a shared object (no ELF header)");

  /* a truncated shared object is refused before dlopen (which would fault) */
  CHECK_OK(compile_so(dir, "whole", "int whole_function(void) { return 1; }\n"));
  char *whole = kfmt("%s/whole.so", dir), *cut = kfmt("%s/cut.so", dir);
  size_t wlen;
  char *wdata = kiln_read_file(whole, &wlen);
  CHECK_NN(wdata);
  CHECK_OK(kiln_write_file(cut, wdata, wlen / 2));
  free(wdata);
  CHECK_INT(kiln_module_load(cut, &mod), -1);
  CHECK_CONTAINS(kiln_last_error(), "the file is truncated");

  CHECK_OK(compile_so(dir, "plain", "int plain_function(void) { return 1; }\n"));
  char *plain = kfmt("%s/plain.so", dir);
  CHECK_INT(kiln_module_load(plain, &mod), -1);
  CHECK_STR(kiln_last_error(), kfmt("'%s' is not a Kiln module (no __kiln_module_magic symbol)", plain));

  CHECK_OK(compile_so(dir, "v2", "const char __kiln_module_magic[] = \"kiln-module-v2\";\n"));
  char *v2 = kfmt("%s/v2.so", dir);
  CHECK_INT(kiln_module_load(v2, &mod), -1);
  CHECK_CONTAINS(kiln_last_error(), "of another ABI: its magic is \"kiln-module-v2\"");

  CHECK_OK(compile_so(dir, "bad_tables",
                      "const char __kiln_module_magic[] = \"kiln-module-v1\";\n"
                      "const int __kiln_num_kernels = 2;\n"));
  char *bad = kfmt("%s/bad_tables.so", dir);
  CHECK_INT(kiln_module_load(bad, &mod), -1);
  CHECK_STR(kiln_last_error(), kfmt("'%s' is malformed: __kiln_num_kernels is 2 but "
                                    "__kiln_kernel_names is missing", bad));

  /* Blobs only, no kernels: loads; asking for a kernel names none. */
  CHECK_OK(compile_so(dir, "empty", "const char __kiln_module_magic[] = \"kiln-module-v1\";\n"));
  CHECK_OK(kiln_module_load(kfmt("%s/empty.so", dir), &mod));
  KilnFunction *f = (KilnFunction *)1;
  CHECK_INT(kiln_module_get_function(mod, "vadd", &f), -1);
  CHECK(f == NULL);
  CHECK_CONTAINS(kiln_last_error(), "has no function 'vadd' (it has: no functions)");
  kiln_module_free(mod);

  CHECK_OK(compile_so(dir, "vadd", vadd_source));
  char *path = kfmt("%s/vadd.so", dir);
  CHECK_OK(kiln_module_load(path, &mod));
  CHECK_INT(kiln_module_get_function(mod, "vsub", &f), -1);
  CHECK_STR(kiln_last_error(),
            kfmt("module '%s' has no function 'vsub' (it has: vadd, vadd_parallel)", path));
  CHECK_OK(kiln_module_retain(mod));
  kiln_module_free(mod);
  kiln_module_free(mod);
  CHECK_INT(kiln_module_free(NULL), 0);
  kiln_rmtree(dir);
  free(dir);
}

/* Device names are the rows of the device table, both ways. */
static void test_device_names(void) {
  CHECK_INT(kiln_device_type_from_name("cpu"), kDLCPU);
  CHECK_INT(kiln_device_type_from_name("cuda"), kDLCUDA);
  CHECK_INT(kiln_device_type_from_name("opencl"), kDLOpenCL);
  CHECK_STR(kiln_device_name(kDLOpenCL), "opencl");
  CHECK_STR(kiln_device_name(kDLVulkan), "vulkan");
  CHECK_STR(kiln_device_name(999), "unknown");
  /* a device DLPack names but Kiln does not run on is an error listing the ones it does */
  CHECK_INT(kiln_device_type_from_name("vulkan"), -1);
  CHECK_STR(kiln_last_error(), "no device named 'vulkan' (Kiln runs on: cpu, cuda, opencl)");
  CHECK_INT(kiln_device_type_from_name(NULL), -1);
  CHECK_INT(kiln_device_type_from_name("CPU"), -1);
}

/* The kernels a GPU queue holds between waits (cuda.c names them when an
 * asynchronous failure is found at a copy or synchronize; reachable here
 * without a driver). */
static void test_pending_kernels(void) {
  KilnPending p = {0};
  char buf[400];
  CHECK_STR(kiln_pending_describe(&p, buf, sizeof buf), "no kernel");
  kiln_pending_push(&p, "f_kernel0");
  CHECK_STR(kiln_pending_describe(&p, buf, sizeof buf), "kernel 'f_kernel0'");
  for (int i = 1; i < 6; i++) kiln_pending_push(&p, kfmt("f_kernel%d", i));
  CHECK_STR(kiln_pending_describe(&p, buf, sizeof buf),
            "one of the 6 kernels 'f_kernel0', 'f_kernel1', 'f_kernel2', 'f_kernel3' and 2 more");
  char small[24];
  kiln_pending_describe(&p, small, sizeof small); /* truncated, terminated */
  CHECK(strlen(small) == sizeof small - 1);
  for (int i = 0; i < KILN_MAX_PENDING; i++) kiln_pending_push(&p, "g");
  CHECK_INT(p.n, KILN_MAX_PENDING + 6);
  kiln_pending_clear(&p);
  CHECK_INT(p.n, 0);
  CHECK_STR(kiln_pending_describe(&p, buf, sizeof buf), "no kernel");
  free(p.names);
}

const TestCase runtime_tests[] = {
    {"device_names", test_device_names},
    {"pending_kernels", test_pending_kernels},
    {"errors_version", test_errors_version},
    {"array_empty", test_array_empty},
    {"array_huge_pages", test_array_huge_pages},
    {"array_view", test_array_view},
    {"array_wrap", test_array_wrap},
    {"array_copy", test_array_copy},
    {"dlpack", test_dlpack},
    {"registry", test_registry},
    {"function_refs", test_function_refs},
    {"threadpool_sum", test_threadpool_sum},
    {"threadpool_workers", test_threadpool_workers},
    {"threadpool_join", test_threadpool_join},
    {"threadpool_leaves_launcher_core", test_threadpool_leaves_launcher_core},
    {"threadpool_nested", test_threadpool_nested},
    {"threadpool_failure", test_threadpool_failure},
    {"threadpool_concurrent", test_threadpool_concurrent},
    {"module", test_module},
    {"module_errors", test_module_errors},
    {NULL, NULL},
};
