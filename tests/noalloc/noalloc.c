/*
 * noalloc.c - the graph executor allocates nothing per run.
 *
 * This program defines malloc, calloc, realloc, free, posix_memalign,
 * aligned_alloc and memalign itself (forwarding to glibc's __libc_*), so
 * every allocation in the process -- the runtime's, the thread pool's,
 * the loaded module's kernels' -- passes through a counter.  It builds two
 * models: the bundled digits network (through graph.from_onnx and
 * graph.build, as `kiln compile` does) and a small graph whose kernel keeps
 * a 1 MB intermediate buffer (too large for the stack: the kernel asks the
 * runtime's workspace pool for it on every call) and runs its loops on the
 * thread pool.  Each is run twice to warm up (the thread pool starts, the weights
 * are checked, the workspace pools fill), then 20 more times with the
 * counter on: the count must stay at zero.
 *
 * Not built under the sanitizers, which replace malloc themselves.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "kiln/kiln.h"
#include "te/te.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_int counting;
static atomic_long allocations;

static void count(void) {
  if (atomic_load_explicit(&counting, memory_order_relaxed))
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

void *malloc(size_t n) {
  count();
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t m) {
  count();
  return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n) {
  count();
  return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
int posix_memalign(void **p, size_t align, size_t n) {
  count();
  *p = __libc_memalign(align, n);
  return *p ? 0 : 12 /* ENOMEM */;
}
void *aligned_alloc(size_t align, size_t n) {
  count();
  return __libc_memalign(align, n);
}
void *memalign(size_t align, size_t n);
void *memalign(size_t align, size_t n) {
  count();
  return __libc_memalign(align, n);
}

#define N (1 << 18) /* 1 MB of float32 */

static const char graph[] =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
    " {\"op\": \"null\", \"name\": \"p_w\", \"inputs\": []},"
    " {\"op\": \"tvm_op\", \"name\": \"fused_scale\", \"attrs\": {\"func_name\": \"fused_scale\","
    "  \"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[0, 0, 0], [1, 0, 0]]}],"
    " \"arg_nodes\": [0, 1], \"heads\": [[2, 0, 0]],"
    " \"attrs\": {\"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\"]],"
    "  \"shape\": [\"list_shape\", [[262144], [262144], [262144]]]},"
    " \"node_row_ptr\": [0, 1, 2, 3]}";

/* out = (x + 1) * w with x + 1 kept in a buffer of its own, the loops
 * parallel: the kernel allocates that buffer on each call. */
static KilnModule *scratch_module(void) {
  int64_t n = N;
  Tensor *x = te_placeholder_c("x", 1, &n, DT_F32), *w = te_placeholder_c("w", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *t = te_compute("t", 1, (Expr *[]){ir_i32(N)}, v, ir_add(te_read1(x, v[0]), ir_f32(1)), NULL);
  Expr **u = te_axis_vars(1, NULL);
  Tensor *o = te_compute("o", 1, (Expr *[]){ir_i32(N)}, u, ir_mul(te_read1(t, u[0]), te_read1(w, u[0])), NULL);
  Schedule *s = te_create_schedule(1, &o);
  Stage *so = sch_stage(s, o), *st = sch_stage(s, t);
  if (stage_parallel(so, so->leaf_iters.data[0]) || stage_parallel(st, st->leaf_iters.data[0])) return NULL;
  LoweredFunc *f = kiln_lower(s, 3, (Tensor *[]){x, w, o}, "fused_scale", NULL);
  DLTensor *wt;
  DLDataType f32 = {kDLFloat, 32, 1};
  if (!f || kiln_array_empty(1, &n, f32, (DLDevice){kDLCPU, 0}, &wt)) return NULL;
  for (int i = 0; i < N; i++) ((float *)wt->data)[i] = (float)(i % 7);
  const char *names[1] = {"p_w"};
  void *idx, *data;
  size_t isize, dsize;
  if (kiln_params_save_embedded(1, names, &wt, &idx, &isize, &data, &dsize)) return NULL;
  KBlob blobs[3] = {{"graph_json", graph, strlen(graph)}, {"param_index", idx, isize}, {"param_data", data, dsize}};
  KilnModule *m = kiln_build_funcs(&f, 1, 3, blobs, NULL);
  kiln_free(idx);
  kiln_free(data);
  kiln_array_free(wt);
  return m;
}

static KilnModule *digits_module(const char *root) {
  KilnFunction *from_onnx, *build;
  KilnValue a[3], ret;
  int codes[3], rc;
  if (kiln_func_get_global("graph.from_onnx", &from_onnx) || kiln_func_get_global("graph.build", &build))
    return NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/models/digits/digits.onnx", root);
  a[0].v_str = path;
  a[1].v_str = "image:[1,1,8,8]";
  codes[0] = codes[1] = KILN_STR;
  if (kiln_func_call(from_onnx, a, codes, 2, &ret, &rc)) return NULL;
  void *g = ret.v_handle;
  a[0].v_handle = g;
  codes[0] = rc;
  a[1].v_int64 = 3;
  codes[1] = KILN_INT;
  a[2].v_str = "llvm";
  codes[2] = KILN_STR;
  KilnModule *m = NULL;
  if (kiln_func_call(build, a, codes, 3, &ret, &rc) == 0) m = ret.v_handle;
  KilnFunction *gfree;
  if (kiln_func_get_global("graph.free", &gfree) == 0) {
    a[0].v_handle = g;
    codes[0] = KILN_OBJECT;
    kiln_func_call(gfree, a, codes, 1, NULL, NULL);
    kiln_func_free(gfree);
  }
  kiln_func_free(from_onnx);
  kiln_func_free(build);
  return m;
}

/* Warm up, then count the allocations of 20 runs. */
static long allocations_per_runs(const char *what, KilnModule *m) {
  KilnGraphExecutor *ex;
  if (!m || kiln_graph_executor_create(m, &ex)) {
    fprintf(stderr, "noalloc: %s: %s\n", what, kiln_last_error());
    return -1;
  }
  DLTensor *x;
  KilnTensorInfo info;
  kiln_graph_executor_input_info(ex, 0, &info);
  kiln_array_empty(info.ndim, info.shape, info.dtype, (DLDevice){kDLCPU, 0}, &x);
  memset(x->data, 0, kiln_array_nbytes(x));
  long n = -1;
  if (kiln_graph_executor_set_input(ex, 0, x) || kiln_graph_executor_run(ex) || kiln_graph_executor_run(ex)) {
    fprintf(stderr, "noalloc: %s: %s\n", what, kiln_last_error());
  } else {
    atomic_store(&allocations, 0);
    atomic_store(&counting, 1);
    int rc = 0;
    for (int i = 0; i < 20 && !rc; i++) rc = kiln_graph_executor_run(ex);
    atomic_store(&counting, 0);
    n = rc ? -1 : atomic_load(&allocations);
    printf("%s: %ld allocations in 20 runs\n", what, n);
  }
  kiln_array_free(x);
  kiln_graph_executor_free(ex);
  return n;
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : ".";
  if (kiln_init()) {
    fprintf(stderr, "noalloc: %s\n", kiln_last_error());
    return 1;
  }
  kiln_set_num_threads(2);
  KilnModule *scratch = scratch_module(), *digits = digits_module(root);
  long a = allocations_per_runs("a kernel with a 1 MB scratch buffer", scratch);
  long b = allocations_per_runs("the digits model", digits);
  kiln_module_free(scratch);
  kiln_module_free(digits);
  if (a != 0 || b != 0) {
    fprintf(stderr, "noalloc: FAILED: the executor must allocate nothing per run\n");
    return 1;
  }
  return 0;
}
