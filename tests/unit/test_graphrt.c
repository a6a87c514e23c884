/*
 * test_graphrt.c - the params blob, the memory planner, the graph executor
 * and executors on several threads, on the module of graphrt_fixture.h
 * (the debug executor and the registry: test_graphrt_debug.c).
 */
#include <pthread.h>

#include "graphrt_fixture.h"

static const DLDevice cpu = {kDLCPU, 0};
static const DLDataType f32 = {kDLFloat, 32, 1};

/* ---- params blobs ---- */

static void put_le(StrBuf *sb, uint64_t v, int n) {
  for (int i = 0; i < n; i++) sb_putc(sb, (char)(unsigned char)(v >> (8 * i)));
}

/* A blob written from the spec, byte by byte, for: "w" float32 (2, 3),
 * "idx" int64 (4,), "flag" bool (3,), "s" float64 () */
static char *spec_blob(size_t *size, DLTensor **arrays) {
  StrBuf sb = {0};
  const char *names[4] = {"w", "idx", "flag", "s"};
  put_le(&sb, 0xF7E58D4F05049CB7ull, 8);
  put_le(&sb, 0, 8);
  put_le(&sb, 4, 8);
  for (int i = 0; i < 4; i++) {
    put_le(&sb, strlen(names[i]), 8);
    sb_puts(&sb, names[i]);
  }
  put_le(&sb, 4, 8);
  for (int i = 0; i < 4; i++) {
    DLTensor *t = arrays[i];
    put_le(&sb, 0xDD5E40F096B4A13Full, 8);
    put_le(&sb, 0, 8);
    put_le(&sb, 1, 4); /* kDLCPU */
    put_le(&sb, 0, 4);
    put_le(&sb, (uint64_t)t->ndim, 4);
    put_le(&sb, t->dtype.code, 1);
    put_le(&sb, t->dtype.bits, 1);
    put_le(&sb, t->dtype.lanes, 2);
    for (int d = 0; d < t->ndim; d++) put_le(&sb, (uint64_t)t->shape[d], 8);
    size_t nb = kiln_array_nbytes(t);
    put_le(&sb, nb, 8);
    sb_putn(&sb, t->data, nb);
  }
  *size = sb.len;
  return sb_steal(&sb);
}

static void make_spec_arrays(DLTensor **a) {
  CHECK_OK(kiln_array_empty(2, (int64_t[]){2, 3}, f32, cpu, &a[0]));
  CHECK_OK(kiln_array_empty(1, (int64_t[]){4}, (DLDataType){kDLInt, 64, 1}, cpu, &a[1]));
  CHECK_OK(kiln_array_empty(1, (int64_t[]){3}, (DLDataType){kDLUInt, 1, 1}, cpu, &a[2]));
  CHECK_OK(kiln_array_empty(0, NULL, (DLDataType){kDLFloat, 64, 1}, cpu, &a[3]));
  for (int i = 0; i < 6; i++) fdata(a[0])[i] = test_randf();
  for (int i = 0; i < 4; i++) ((int64_t *)a[1]->data)[i] = (int64_t)test_rand() - (1ll << 40);
  for (int i = 0; i < 3; i++) ((uint8_t *)a[2]->data)[i] = (uint8_t)(i & 1);
  *(double *)a[3]->data = 3.25;
}

static void test_params_bytes(void) {
  DLTensor *a[4];
  make_spec_arrays(a);
  size_t spec_size;
  char *spec = spec_blob(&spec_size, a);
  const char *names[4] = {"w", "idx", "flag", "s"};
  void *bytes;
  size_t size;
  CHECK_OK(kiln_params_save(4, names, a, &bytes, &size));
  CHECK_INT(size, spec_size);
  CHECK(size == spec_size && memcmp(bytes, spec, size) == 0);

  int n;
  char **lnames;
  DLTensor **arrays;
  CHECK_OK(kiln_params_load(spec, spec_size, &n, &lnames, &arrays));
  CHECK_INT(n, 4);
  for (int i = 0; i < n && i < 4; i++) {
    CHECK_STR(lnames[i], names[i]);
    CHECK_INT(arrays[i]->ndim, a[i]->ndim);
    for (int d = 0; d < a[i]->ndim; d++) CHECK_INT(arrays[i]->shape[d], a[i]->shape[d]);
    CHECK(arrays[i]->dtype.code == a[i]->dtype.code && arrays[i]->dtype.bits == a[i]->dtype.bits &&
          arrays[i]->dtype.lanes == a[i]->dtype.lanes);
    CHECK(memcmp(arrays[i]->data, a[i]->data, kiln_array_nbytes(a[i])) == 0);
    CHECK(((uintptr_t)arrays[i]->data & 63) == 0);
  }
  /* and back: the same bytes */
  void *again;
  size_t again_size;
  CHECK_OK(kiln_params_save(n, (const char *const *)lnames, arrays, &again, &again_size));
  CHECK(again_size == spec_size && memcmp(again, spec, spec_size) == 0);
  kiln_free(again);
  kiln_params_free(n, lnames, arrays);

  /* a strided array saves as its compact contents */
  DLTensor strided = *a[0];
  int64_t shape[2] = {3, 2}, strides[2] = {1, 3}; /* the transpose */
  strided.shape = shape;
  strided.strides = strides;
  void *tb;
  size_t tsize;
  const char *tn = "t";
  DLTensor *tp = &strided;
  CHECK_OK(kiln_params_save(1, &tn, &tp, &tb, &tsize));
  CHECK_OK(kiln_params_load(tb, tsize, &n, &lnames, &arrays));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) CHECK(fdata(arrays[0])[i * 2 + j] == fdata(a[0])[j * 3 + i]);
  kiln_params_free(n, lnames, arrays);
  kiln_free(tb);

  /* the empty list */
  CHECK_OK(kiln_params_save(0, NULL, NULL, &tb, &tsize));
  CHECK_INT(tsize, 32);
  CHECK_OK(kiln_params_load(tb, tsize, &n, &lnames, &arrays));
  CHECK_INT(n, 0);
  kiln_params_free(n, lnames, arrays);
  kiln_free(tb);

  /* save errors */
  const char *dup[2] = {"w", "w"};
  CHECK(kiln_params_save(2, dup, a, &tb, &tsize) != 0);
  CHECK_STR(kiln_last_error(), "params_save: name 'w' is given twice (arrays 0 and 1)");
  kiln_free(bytes);
  free(spec);
  for (int i = 0; i < 4; i++) kiln_array_free(a[i]);
}

/* Load a modified copy of blob; return the error (or "" on success). */
static const char *load_error(const char *blob, size_t size) {
  int n;
  char **names;
  DLTensor **arrays;
  if (kiln_params_load(blob, size, &n, &names, &arrays)) return kiln_last_error();
  kiln_params_free(n, names, arrays);
  return "";
}

static void test_params_corrupt(void) {
  DLTensor *a[4];
  make_spec_arrays(a);
  size_t size;
  char *spec = spec_blob(&size, a);
  /* every truncation is an error; ASan checks nothing is read past the end */
  char *copy = xmalloc(size);
  for (size_t len = 0; len < size; len++) {
    memcpy(copy, spec, len);
    const char *e = load_error(copy, len);
    CHECK_MSG(strstr(e, "params blob is truncated"), "length %zu: %s", len, e);
  }
  free(copy);
  /* offsets: header 24, names (8+1, 8+3, 8+4, 8+1 = 41), count 8: array 0 at 73 */
  size_t a0 = 73, a0_data = a0 + 8 + 8 + 4 + 4 + 4 + 4 + 16 + 8, a1 = a0_data + 24;
  char *b = xmalloc(size + 8);
  memcpy(b, spec, size);
  CHECK_CONTAINS(load_error(b, size - 3), "params blob is truncated: array 3 ('s'): the data needs 8 bytes");
  CHECK_CONTAINS(load_error(b, a0_data + 10), "array 0 ('w'): the data needs 24 bytes at offset 129, only 10 remain");
  b[0] ^= 1;
  CHECK_CONTAINS(load_error(b, size), "params blob is corrupt: the header: list magic is 0xF7E58D4F05049CB6");
  b[0] ^= 1;
  b[a1] ^= 1;
  CHECK_CONTAINS(load_error(b, size), "params blob is corrupt: array 1 ('idx'): array magic is");
  b[a1] ^= 1;
  b[a0_data - 8] = 25; /* byte size 25, not 24 */
  CHECK_CONTAINS(load_error(b, size), "array 0 ('w'): byte size is 25, expected 24 for shape (2, 3) of float32");
  b[a0_data - 8] = 24;
  b[a0 + 16] = 2; /* device cuda */
  CHECK_CONTAINS(load_error(b, size), "array 0 ('w'): device type 2 (cuda), expected 1 (cpu)");
  b[a0 + 16] = 1;
  b[a0 + 24] = 100; /* ndim */
  CHECK_CONTAINS(load_error(b, size), "array 0 ('w'): ndim is 100, expected 0..64");
  b[a0 + 24] = 2;
  b[a0 + 28] = 2, b[a0 + 29] = 7; /* float7 */
  CHECK_CONTAINS(load_error(b, size), "array 0 ('w'): dtype float7 is not supported");
  b[a0 + 29] = 32;
  b[a0 + 39] = (char)0x80; /* shape[0] negative */
  CHECK_CONTAINS(load_error(b, size), "array 0 ('w'): shape[0] is");
  b[a0 + 39] = 0;
  b[a0 - 8] = 3; /* 3 arrays for 4 names */
  CHECK_CONTAINS(load_error(b, size), "the header: 3 arrays for 4 names");
  b[a0 - 8] = 4;
  b[16] = (char)0xff, b[17] = (char)0xff; /* absurd name count */
  CHECK_CONTAINS(load_error(b, size), "params blob is truncated: the header: 65535 names need at least 524280 bytes at offset 24");
  b[16] = 4, b[17] = 0;
  b[24] = 0x10, b[25] = 0x27; /* name 0 is 10000 bytes long */
  CHECK_CONTAINS(load_error(b, size), "params blob is truncated: name 0: its bytes needs 10000 bytes at offset 32");
  b[24] = 1, b[25] = 0;
  b[64] = 'w'; /* name 3 "s" -> "w" */
  CHECK_CONTAINS(load_error(b, size), "params blob is corrupt: name 3: 'w' is already the name of array 0");
  memcpy(b, spec, size);
  memset(b + size, 0, 8);
  CHECK_CONTAINS(load_error(b, size + 8), "8 bytes follow the last array");
  CHECK_STR(load_error(b, size), "");
  free(b);
  free(spec);
  for (int i = 0; i < 4; i++) kiln_array_free(a[i]);
}

/* ---- the memory planner ---- */

static void test_plan_memory(void) {
  /* the test graph: 3 args, then the chain */
  int32_t in3[] = {0, 1}, in4[] = {3, 2}, in5[] = {4}, in6[] = {5, 2}, in7[] = {6, 3}, in8[] = {7};
  KilnPlanNode nodes[9] = {
      {KILN_PLAN_ARG, 0, NULL, 0, 1, 0}, {KILN_PLAN_ARG, 0, NULL, 1, 1, 0}, {KILN_PLAN_ARG, 0, NULL, 2, 1, 0},
      {KILN_PLAN_OP, 2, in3, 3, 1, 0},   {KILN_PLAN_OP, 2, in4, 4, 1, 0},   {KILN_PLAN_OP, 1, in5, 5, 1, 0},
      {KILN_PLAN_OP, 2, in6, 6, 1, 0},   {KILN_PLAN_OP, 2, in7, 7, 1, 0},   {KILN_PLAN_OP, 1, in8, 8, 1, 0},
  };
  uint64_t bytes[9];
  for (int e = 0; e < 9; e++) bytes[e] = 4 * N;
  int32_t heads[2] = {8, 5}, sid[9];
  KilnMemoryPlan plan;
  CHECK_OK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan));
  int32_t want[9] = {0, 1, 2, 3, 4, 5, 4, 6, 4}; /* what the hand-written JSON says */
  CHECK(memcmp(sid, want, sizeof want) == 0);
  CHECK_INT(plan.num_storage, 7);
  CHECK_INT(plan.planned_bytes, 7 * 4 * N);
  CHECK_INT(plan.naive_bytes, 9 * 4 * N);

  /* reuse only within a factor of 16, the larger size kept; never across devices */
  bytes[4] = 64;     /* e4 is small: e6 (4N) cannot reuse it */
  bytes[6] = 4 * N;
  CHECK_OK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan));
  CHECK(sid[6] != sid[4]);
  bytes[4] = N; /* 4N / 16 <= N: reused and grown */
  CHECK_OK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan));
  CHECK_INT(sid[6], sid[4]);
  CHECK_INT(plan.num_storage, 7);
  CHECK_INT(plan.planned_bytes, 7 * 4 * N);
  int32_t dev[9] = {1, 1, 1, 1, 2, 1, 1, 1, 1};
  CHECK_OK(kiln_graph_plan_memory(9, nodes, 9, bytes, dev, 2, heads, sid, &plan));
  CHECK(sid[6] != sid[4]);

  /* an alias (__nop) shares its input's storage */
  for (int e = 0; e < 9; e++) bytes[e] = 4 * N;
  nodes[5].kind = KILN_PLAN_ALIAS;
  CHECK_OK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan));
  CHECK_INT(sid[5], sid[4]);
  CHECK(sid[6] != sid[4]); /* e5 is a head: its storage (e4's) is kept */
  nodes[5].kind = KILN_PLAN_OP;

  /* a graph output takes only a free token of exactly its size that has
   * held no other size, so that with a batch its samples lie one stride
   * apart there (graph_sym.c, sample_major_setup) */
  bytes[8] = 2 * N; /* e6's token (4N) would fit e8: not a head's */
  CHECK_OK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan));
  CHECK(sid[8] != sid[6] && sid[8] != sid[3]);
  CHECK_INT(plan.num_storage, 8);
  bytes[8] = 4 * N;
  bytes[6] = 2 * N; /* e6 fits e4's token (4N), which would then hold two sizes: not a
                      * head's; a factor of 2 or less gives e6 a token of its own, e7
                      * e4's, e8 e3's: 2N fewer bytes than e6 in e4's and e7 in a new one */
  CHECK_OK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan));
  for (int e = 0; e < 9; e++) CHECK(sid[e] != sid[8] || bytes[e] == bytes[8]);
  CHECK(sid[6] != sid[4] && sid[7] == sid[4]);
  CHECK_INT(sid[8], sid[3]);
  CHECK_INT(plan.num_storage, 7);
  CHECK_INT(plan.planned_bytes, 6 * 4 * N + 2 * N);
  bytes[6] = 4 * N;

  /* errors */
  in8[0] = 9;
  CHECK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan) != 0);
  CHECK_STR(kiln_last_error(), "plan_memory: node 8: input 0 is entry 9, which no earlier node produces");
  in8[0] = 7;
  nodes[8].first_output = 7;
  CHECK(kiln_graph_plan_memory(9, nodes, 9, bytes, NULL, 2, heads, sid, &plan) != 0);
  CHECK_CONTAINS(kiln_last_error(), "entry 7 is an output of both node 7 and node 8");
}

/* Blocks of r -> a (S) -> b (S) -> f (4S) -> g (S) -> r' = g + r, as in a
 * ConvNeXt stage: with TVM's factor of 16 alone, an S tensor takes the one
 * free token, a grown 4S one, and the next f grows another; the planner
 * keeps the plan of the fewest bytes over its factors, where every f
 * shares one storage. */
static void test_plan_memory_ranges(void) {
  enum { BLOCKS = 3, PER = 5, NN = 1 + BLOCKS * PER };
  KilnPlanNode nodes[NN] = {{KILN_PLAN_ARG, 0, NULL, 0, 1, 0}};
  int32_t in[NN][2];
  uint64_t bytes[NN] = {N};
  int r = 0, n = 1;
  for (int b = 0; b < BLOCKS; b++) {
    for (int k = 0; k < PER; k++, n++) {
      in[n][0] = k ? n - 1 : r;
      in[n][1] = r;
      nodes[n] = (KilnPlanNode){KILN_PLAN_OP, k == PER - 1 ? 2 : 1, in[n], n, 1, 0};
      bytes[n] = k == 2 ? 4 * N : N;
    }
    r = n - 1;
  }
  int32_t heads[1] = {NN - 1}, sid[NN];
  KilnMemoryPlan plan;
  CHECK_OK(kiln_graph_plan_memory(NN, nodes, NN, bytes, NULL, 1, heads, sid, &plan));
  for (int b = 1; b < BLOCKS; b++) CHECK_INT(sid[1 + b * PER + 2], sid[1 + 2]);
  uint64_t sum = 0;
  int32_t seen[NN] = {0};
  for (int e = 0; e < NN; e++) /* each storage's largest entry, counted once */
    for (int f = 0; f < NN; f++)
      if (sid[f] == sid[e] && bytes[f] > bytes[e]) break;
      else if (f == NN - 1 && !seen[sid[e]]++) sum += bytes[e];
  CHECK_INT(plan.planned_bytes, sum);
  CHECK_INT(plan.planned_bytes, 8 * N);
}

/* ---- the executor ---- */

static void test_run_module(void) {
  KilnModule *mod = gr_module();
  CHECK_NN(mod);
  if (!mod) return;
  KilnGraphExecutor *ex;
  CHECK_OK(kiln_graph_executor_create(mod, &ex));
  if (!ex) return;
  CHECK_INT(kiln_graph_executor_num_inputs(ex), 1); /* p_b and p_w are params */
  CHECK_INT(kiln_graph_executor_num_outputs(ex), 2);
  KilnTensorInfo info;
  CHECK_OK(kiln_graph_executor_input_info(ex, 0, &info));
  CHECK_STR(info.name, "x");
  CHECK(info.ndim == 1 && info.shape[0] == N && info.dtype.code == kDLFloat && info.dtype.bits == 32);
  CHECK_OK(kiln_graph_executor_output_info(ex, 1, &info));
  CHECK_STR(info.name, "fused_nn_relu");
  CHECK_OK(kiln_graph_executor_output_info(ex, 0, &info));
  CHECK_STR(info.name, "fused_nn_relu_1");
  int idx = -1;
  CHECK_OK(kiln_graph_executor_input_index(ex, "x", &idx));
  CHECK_INT(idx, 0);
  CHECK(kiln_graph_executor_input_index(ex, "p_w", &idx) != 0);
  CHECK_STR(kiln_last_error(), "the graph has no input 'p_w' (its inputs: 'x')");

  DLTensor *x = gr_random_x();
  CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "x", x));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK(gr_check_outputs(ex, x) == 0);
  /* by index, new data */
  tk_fill_random(x);
  CHECK_OK(kiln_graph_executor_set_input(ex, 0, x));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK(gr_check_outputs(ex, x) == 0);
  DLTensor *back;
  CHECK_OK(kiln_graph_executor_get_input(ex, 0, &back));
  CHECK(memcmp(fdata(back), fdata(x), 4 * N) == 0);
  kiln_array_free(back);
  /* copy an output into the caller's array */
  int64_t n = N;
  DLTensor *o = tk_array(1, &n, DT_F32), *o1;
  CHECK_OK(kiln_graph_executor_copy_output(ex, 1, o));
  CHECK_OK(kiln_graph_executor_get_output(ex, 1, &o1));
  CHECK(memcmp(fdata(o), fdata(o1), 4 * N) == 0);
  kiln_array_free(o1);

  /* overriding a param by name changes the result */
  DLTensor *w2 = gr_random_x();
  CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "p_w", w2));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK(gr_check_outputs(ex, x) != 0);
  CHECK_OK(kiln_graph_executor_load_params(ex, gr_params, gr_params_size));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK(gr_check_outputs(ex, x) == 0);

  /* the memory plan of the embedded JSON (no storage_id): planned here */
  KilnMemoryPlan plan;
  int here = 0;
  CHECK_OK(kiln_graph_executor_memory(ex, &plan, &here));
  CHECK_INT(here, 1);
  CHECK_INT(plan.num_storage, 7);
  CHECK(plan.planned_bytes < plan.naive_bytes);
  CHECK_INT(plan.naive_bytes, 9 * 4 * N);
  CHECK_INT(plan.planned_bytes, 7 * 4 * N);

  kiln_array_free(o);
  kiln_array_free(w2);
  kiln_array_free(x);
  kiln_graph_executor_free(ex);
  CHECK_INT(kiln_graph_executor_free(NULL), 0);
}

static void test_storage_id(void) {
  KilnModule *mod = gr_module();
  if (!mod) return;
  DLTensor *x = gr_random_x();
  for (int with = 0; with < 2; with++) {
    char *json = gr_graph_json((GraphOpts){.storage_id = with});
    KilnGraphExecutor *ex;
    CHECK_OK(kiln_graph_executor_create_from_json(json, 0, mod, &ex));
    if (!ex) continue;
    CHECK_INT(kiln_graph_executor_num_inputs(ex), 3); /* no params loaded yet */
    CHECK_OK(kiln_graph_executor_load_params(ex, gr_params, gr_params_size));
    CHECK_INT(kiln_graph_executor_num_inputs(ex), 1);
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, x));
    CHECK_OK(kiln_graph_executor_run(ex));
    CHECK(gr_check_outputs(ex, x) == 0);
    KilnMemoryPlan plan;
    int here;
    CHECK_OK(kiln_graph_executor_memory(ex, &plan, &here));
    CHECK_INT(here, !with);
    CHECK_INT(plan.num_storage, 7);
    CHECK(plan.planned_bytes < plan.naive_bytes);
    kiln_graph_executor_free(ex);
  }
  /* a JSON with its own (sparse) numbering, one buffer per tensor */
  char *json = gr_graph_json((GraphOpts){.storage_id = 1});
  char *p = strstr(json, "[0, 1, 2, 3, 4, 5, 4, 6, 4]");
  CHECK_NN(p);
  char *sparse = kfmt("%.*s[90, 81, 72, 63, 54, 45, 36, 27, 18]%s", (int)(p - json), json, p + 27);
  KilnGraphExecutor *ex;
  CHECK_OK(kiln_graph_executor_create_from_json(sparse, 0, mod, &ex));
  if (ex) {
    KilnMemoryPlan plan;
    CHECK_OK(kiln_graph_executor_memory(ex, &plan, NULL));
    CHECK_INT(plan.num_storage, 9);
    CHECK_INT(plan.planned_bytes, plan.naive_bytes);
    CHECK_OK(kiln_graph_executor_load_params(ex, gr_params, gr_params_size));
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, x));
    CHECK_OK(kiln_graph_executor_run(ex));
    CHECK(gr_check_outputs(ex, x) == 0);
    kiln_graph_executor_free(ex);
  }
  /* the JSON-to-JSON planner writes the same plan */
  char *planned;
  KilnMemoryPlan plan;
  CHECK_OK(kiln_graph_json_plan_memory(gr_graph_json((GraphOpts){0}), 0, &planned, &plan));
  CHECK_CONTAINS(planned, "\"storage_id\":[\"list_int\",[0,1,2,3,4,5,4,6,4]]");
  CHECK_CONTAINS(planned, "\"kiln_task\":\"dense_nopack.x86");
  CHECK_INT(plan.num_storage, 7);
  kiln_free(planned);
  CHECK_OK(kiln_graph_json_plan_memory(sparse, 0, &planned, NULL)); /* replaced */
  CHECK_CONTAINS(planned, "\"storage_id\":[\"list_int\",[0,1,2,3,4,5,4,6,4]]");
  kiln_free(planned);
  kiln_array_free(x);
}

static void test_set_input_errors(void) {
  KilnModule *mod = gr_module();
  if (!mod) return;
  KilnGraphExecutor *ex;
  CHECK_OK(kiln_graph_executor_create(mod, &ex));
  if (!ex) return;
  int64_t shape[2] = {2, N / 2}, n = N;
  DLTensor *bad_shape = tk_array(2, shape, DT_F32), *bad_dtype = tk_array(1, &n, DT_I32);
  DLTensor *x = gr_random_x();
  CHECK(kiln_graph_executor_set_input_by_name(ex, "y", x) != 0);
  CHECK_STR(kiln_last_error(), "set_input: the graph has no input or param 'y' (its inputs: 'x')");
  CHECK(kiln_graph_executor_set_input(ex, 1, x) != 0);
  CHECK_STR(kiln_last_error(), "set_input: input 1 does not exist (the graph has 1 input)");
  CHECK(kiln_graph_executor_set_input(ex, -1, x) != 0);
  CHECK(kiln_graph_executor_set_input_by_name(ex, "x", bad_shape) != 0);
  CHECK_STR(kiln_last_error(), "set_input 'x': shape (2, 32768) does not match the graph's (65536)");
  CHECK(kiln_graph_executor_set_input(ex, 0, bad_dtype) != 0);
  CHECK_STR(kiln_last_error(), "set_input 'x': dtype int32 does not match the graph's float32");
  CHECK(kiln_graph_executor_set_input_by_name(ex, "p_b", bad_dtype) != 0);
  CHECK_STR(kiln_last_error(), "set_input 'p_b': dtype int32 does not match the graph's float32");
  CHECK(kiln_graph_executor_set_input(ex, 0, NULL) != 0);
  CHECK_STR(kiln_last_error(), "set_input 'x': the tensor is NULL");
  DLTensor *o;
  CHECK(kiln_graph_executor_get_output(ex, 2, &o) != 0);
  CHECK_STR(kiln_last_error(), "get_output: output 2 does not exist (the graph has 2 outputs)");
  CHECK(kiln_graph_executor_copy_output(ex, 0, bad_shape) != 0);
  CHECK_STR(kiln_last_error(), "copy_output 0 ('fused_nn_relu_1'): shape (2, 32768) does not match the graph's (65536)");
  /* a params blob whose array does not fit the graph */
  const char *names[1] = {"p_w"};
  void *pb;
  size_t ps;
  CHECK_OK(kiln_params_save(1, names, &bad_shape, &pb, &ps));
  CHECK(kiln_graph_executor_load_params(ex, pb, ps) != 0);
  CHECK_STR(kiln_last_error(), "load_params: param 'p_w' (array 0 of the blob): shape (2, 32768) does not match the graph's (65536)");
  kiln_free(pb);
  CHECK(kiln_graph_executor_load_params(ex, "junk", 4) != 0);
  CHECK_CONTAINS(kiln_last_error(), "load_params: params blob is truncated");

  /* zero copy: misaligned is refused; aligned is used in place */
  DLTensor view = *x;
  view.byte_offset = 4;
  view.shape = &n;
  n = N;
  CHECK(kiln_graph_executor_set_input_zero_copy(ex, "x", &view) != 0);
  CHECK_CONTAINS(kiln_last_error(), "set_input_zero_copy 'x': the data must be 64-byte aligned");
  CHECK(kiln_graph_executor_set_input_zero_copy(ex, "nope", x) != 0);
  CHECK_CONTAINS(kiln_last_error(), "set_input_zero_copy: the graph has no input or param 'nope'");
  CHECK_OK(kiln_graph_executor_set_input_zero_copy(ex, "x", x));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK(gr_check_outputs(ex, x) == 0);
  tk_fill_random(x); /* the executor sees the change without a set_input */
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK(gr_check_outputs(ex, x) == 0);
  DLTensor *x2 = gr_random_x();
  CHECK_OK(kiln_graph_executor_set_input(ex, 0, x2)); /* back to its own buffer */
  tk_fill_random(x);
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK(gr_check_outputs(ex, x2) == 0);
  /* zero-copy params: a second executor reads the first's weights */
  KilnGraphExecutor *ex2;
  CHECK_OK(kiln_graph_executor_create_from_json(gr_graph_json((GraphOpts){0}), 0, mod, &ex2));
  if (ex2) {
    CHECK_OK(kiln_graph_executor_set_input_zero_copy(ex2, "p_b", gr_b));
    CHECK_OK(kiln_graph_executor_set_input_zero_copy(ex2, "p_w", gr_w));
    CHECK_OK(kiln_graph_executor_set_input_by_name(ex2, "x", x2));
    CHECK_OK(kiln_graph_executor_run(ex2));
    CHECK(gr_check_outputs(ex2, x2) == 0);
    kiln_graph_executor_free(ex2);
  }
  kiln_array_free(x2);
  kiln_array_free(x);
  kiln_array_free(bad_shape);
  kiln_array_free(bad_dtype);
  kiln_graph_executor_free(ex);
}

static void test_flatten_data(void) {
  KilnModule *mod = gr_module();
  if (!mod) return;
  DLTensor *x = gr_random_x(), *x2d;
  CHECK_OK(kiln_array_view(x, 2, (int64_t[]){256, N / 256}, f32, &x2d));
  KilnGraphExecutor *ex;
  CHECK_OK(kiln_graph_executor_create_from_json(gr_graph_json((GraphOpts){.x2d = 1, .flatten = 1}), 0,
                                                mod, &ex));
  if (ex) {
    CHECK_OK(kiln_graph_executor_load_params(ex, gr_params, gr_params_size));
    CHECK(kiln_graph_executor_set_input(ex, 0, x) != 0); /* (65536) is not (256, 256) */
    CHECK_OK(kiln_graph_executor_set_input(ex, 0, x2d));
    CHECK_OK(kiln_graph_executor_run(ex));
    CHECK(gr_check_outputs(ex, x) == 0);
    kiln_graph_executor_free(ex);
  }
  /* without flatten_data the kernel refuses the 2-D input: the error names the node */
  CHECK_OK(kiln_graph_executor_create_from_json(gr_graph_json((GraphOpts){.x2d = 1}), 0, mod, &ex));
  if (ex) {
    CHECK(kiln_graph_executor_run(ex) != 0);
    CHECK_CONTAINS(kiln_last_error(), "graph executor: node 3 ('fused_add', function 'fused_add'): ");
    CHECK_CONTAINS(kiln_last_error(), "has 2 dimensions, expected 1");
    kiln_graph_executor_free(ex);
  }
  kiln_array_free(x2d);
  kiln_array_free(x);
}

/* The error of creating an executor from json with `from` replaced by `to`. */
static const char *json_error(const char *from, const char *to) {
  const char *json = gr_graph_json((GraphOpts){.storage_id = 1});
  const char *p = strstr(json, from);
  if (!p) return "(the test's pattern is not in the JSON)";
  const char *bad = kfmt("%.*s%s%s", (int)(p - json), json, to, p + strlen(from));
  KilnGraphExecutor *ex;
  if (kiln_graph_executor_create_from_json(bad, 0, gr_module(), &ex) == 0) {
    kiln_graph_executor_free(ex);
    return "(no error)";
  }
  return kstrdup(kiln_last_error());
}

static void test_json_errors(void) {
  KilnModule *mod = gr_module();
  if (!mod) return;
  /* every truncation is an error, never a crash */
  const char *json = gr_graph_json((GraphOpts){.storage_id = 1});
  size_t len = strlen(json);
  for (size_t cut = 0; cut + 2 < len; cut += 7) {
    KilnGraphExecutor *ex;
    int rc = kiln_graph_executor_create_from_json(json, cut ? cut : 1, mod, &ex);
    CHECK_MSG(rc != 0 && strstr(kiln_last_error(), "graph JSON does not parse"), "cut at %zu: %s",
              cut, kiln_last_error());
  }
  CHECK_CONTAINS(json_error("\n}\n", "\n"), "graph JSON does not parse: it ends too early");
  CHECK_CONTAINS(json_error("\"arg_nodes\": [0, 1, 2],", "\"arg_nodes\": [0, 1, 2],,"),
                 "graph JSON does not parse: error at line 13");
  CHECK_CONTAINS(json_error("\n}\n", "\n} x"), "graph JSON has text after its top-level object");
  /* wrong types */
  CHECK_STR(json_error("\"nodes\": [", "\"nodes\": 3, \"x\": ["),
            "graph JSON: \"nodes\" must be an array, got a number");
  CHECK_STR(json_error("[[0, 0, 0], [1, 0, 0]]", "[[0, 0, 0], \"x\"]"),
            "graph JSON: node 3 ('fused_add'): input 1: expected [node, index, version], got a string");
  CHECK_STR(json_error("[[0, 0, 0], [1, 0, 0]]", "[[0, 0, 0], [\"one\", 0, 0]]"),
            "graph JSON: node 3 ('fused_add'): input 1: its node: \"one\" is not an integer");
  CHECK_STR(json_error("\"shape\": [\"list_shape\", [", "\"shape\": [\"list_str\", ["),
            "graph JSON: attrs.shape must be [\"list_shape\", [...]], got an array tagged \"list_str\"");
  CHECK_STR(json_error("\"shape\": [\"list_shape\", [[", "\"shape\": [\"list_shape\", [\"a\", ["),
            "graph JSON: attrs.shape has 10 items, expected 9 (one per entry: the nodes' outputs)");
  CHECK_STR(json_error("\"shape\": [\"list_shape\", [[", "\"shape\": [\"list_shape\", [{}, ["),
            "graph JSON: attrs.shape has 10 items, expected 9 (one per entry: the nodes' outputs)");
  CHECK_STR(json_error("\"shape\": [\"list_shape\", [[65536]", "\"shape\": [\"list_shape\", [\"x\""),
            "graph JSON: attrs.shape[0] (entry 0 = output 0 of node 0 ('x')) must be an array, got a string");
  CHECK_STR(json_error("[65536], [65536]]]", "[65536], [-2]]]"),
            "graph JSON: attrs.shape[8][0] (entry 8 = output 0 of node 8 ('fused_nn_relu_1')): -2 is outside 0..4611686018427387903");
  CHECK_STR(json_error("[\"list_str\", [\"float32\"", "[\"list_str\", [\"float33\""),
            "graph JSON: attrs.dltype[0] (entry 0 = output 0 of node 0 ('x')): dtype float33 is not supported (code 2, 33 bits, 1 lanes)");
  CHECK_STR(json_error("[\"list_str\", [\"float32\"", "[\"list_str\", [\"f32\""),
            "graph JSON: attrs.dltype[0] (entry 0 = output 0 of node 0 ('x')): 'f32' is not a dtype (expected e.g. float32, int8, uint8, bool)");
  CHECK_STR(json_error("[0, 1, 2, 3, 4, 5, 4, 6, 4]", "[0, 1, 2, 3, 4, 5, 4, 6]"),
            "graph JSON: attrs.storage_id has 8 items, expected 9 (one per entry: the nodes' outputs)");
  CHECK_STR(json_error("[0, 1, 2, 3, 4, 5, 4, 6, 4]", "[0, 1, 2, 3, 4, 5, 4, 6, -1]"),
            "graph JSON: attrs.storage_id[8] (entry 8 = output 0 of node 8 ('fused_nn_relu_1')): -1 is outside 0..2147483647");
  CHECK_STR(json_error("\"attrs\": {\n", "\"attrs\": [\n"),
            "graph JSON does not parse: error at line 16, column 13 (byte 1473 of 1881) near \": [\"list_str\", [\"");
  CHECK_STR(json_error("\"op\": \"null\", \"name\": \"p_b\"", "\"op\": \"nul\", \"name\": \"p_b\""),
            "graph JSON: node 1 ('p_b'): op is \"nul\", expected \"null\" or \"tvm_op\"");
  CHECK_STR(json_error("\"name\": \"p_w\"", "\"name\": 7"),
            "graph JSON: node 2: \"name\" must be a string, got a number");
  CHECK_STR(json_error("\"num_inputs\": \"1\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[4",
                       "\"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[4"),
            "graph JSON: node 5 ('fused_nn_relu'): attrs.num_inputs is 2 but \"inputs\" lists 1");
  CHECK_STR(json_error("\"func_name\": \"fused_nn_relu\", \"num_inputs\": \"1\", \"num_outputs\": \"1\"",
                       "\"func_name\": \"fused_nn_relu\", \"num_inputs\": \"1\", \"num_outputs\": \"x\""),
            "graph JSON: node 5 ('fused_nn_relu'): attrs.num_outputs: \"x\" is not an integer");
  /* references */
  CHECK_STR(json_error("[[4, 0, 0]]", "[[9, 0, 0]]"),
            "graph JSON: node 5 ('fused_nn_relu'): input 0: it refers to node 9, which does not exist (the graph has 9 nodes)");
  CHECK_STR(json_error("[[4, 0, 0]]", "[[6, 0, 0]]"),
            "graph JSON: node 5 ('fused_nn_relu'): input 0: it refers to node 6, which does not come before it (nodes must be in run order)");
  CHECK_STR(json_error("[[4, 0, 0]]", "[[4, 1, 0]]"),
            "graph JSON: node 5 ('fused_nn_relu'): input 0: it refers to output 1 of node 4 ('fused_multiply'), which has 1 output");
  CHECK_STR(json_error("\"heads\": [[8, 0, 0]", "\"heads\": [[8, 0, 0, 0]"),
            "graph JSON: heads[0]: expected [node, index, version], got an array of the wrong length");
  CHECK_STR(json_error("\"arg_nodes\": [0, 1, 2]", "\"arg_nodes\": [0, 1, 3]"),
            "graph JSON: arg_nodes[2] is node 3 ('fused_add'), a \"tvm_op\" node; arguments are \"null\" nodes");
  CHECK_STR(json_error("\"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "\"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 8, 9, 10]"),
            "graph JSON: node_row_ptr[7] is 8, expected 7 (node 6 ('fused_multiply_1') has 1 output)");
  CHECK_STR(json_error("\"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "\"node_row_ptr\": {}"),
            "graph JSON: \"node_row_ptr\" must be an array of 10 integers (one per node, plus one), got an object");
  /* a function the module lacks */
  CHECK_CONTAINS(json_error("\"func_name\": \"fused_nn_relu\"", "\"func_name\": \"fused_nn_conv2d\""),
                 "graph executor: node 5 ('fused_nn_relu'): module '");
  CHECK_CONTAINS(json_error("\"func_name\": \"fused_nn_relu\"", "\"func_name\": \"fused_nn_conv2d\""),
                 "has no function 'fused_nn_conv2d' (it has: fused_add, fused_multiply, fused_nn_relu)");
  CHECK_STR(json_error("\"func_name\": \"fused_nn_relu\"", "\"func_name\": 3"),
            "graph JSON: node 5 ('fused_nn_relu'): attrs.func_name must be a non-empty string, got a number");
  CHECK_STR(json_error("[1, 1, 1, 1, 1, 1, 1, 1, 1]", "[1, 1, 1, 1, 2, 1, 1, 1, 1]"),
            "graph executor: attrs.device_index[4] (output 0 of node 4 'fused_multiply') is device type 2 (cuda); this executor runs on the cpu (1) only");
  /* a module without a graph */
  KilnGraphExecutor *ex;
  CHECK(kiln_graph_executor_create(NULL, &ex) != 0);
  CHECK_STR(kiln_last_error(), "graph_executor_create: the module is NULL");
}

/* ---- threads ---- */

typedef struct Worker {
  KilnGraphExecutor *ex;
  DLTensor *x;
  DLTensor *out0;  /* the last run's output 0 */
  int runs, failures;
} Worker;

static void *worker_main(void *arg) {
  Worker *w = arg;
  for (int i = 0; i < w->runs; i++) {
    if (kiln_graph_executor_set_input(w->ex, 0, w->x) || kiln_graph_executor_run(w->ex)) {
      w->failures++;
      continue;
    }
    DLTensor *o = NULL;
    if (kiln_graph_executor_get_output(w->ex, 0, &o)) {
      w->failures++;
      continue;
    }
    if (w->out0 && memcmp(fdata(o), fdata(w->out0), 4 * N)) w->failures++; /* changed under us */
    kiln_array_free(w->out0);
    w->out0 = o;
  }
  return NULL;
}

static void test_threads(void) {
  KilnModule *mod = gr_module();
  if (!mod) return;
  DLTensor *xa = gr_random_x(), *xb = gr_random_x();
  static float r0[N], r1[N];
  for (int round = 0; round < 2; round++) {
    /* round 0: the same input in both (identical results); round 1:
     * different inputs (no crosstalk) */
    Worker w[2] = {{.x = xa, .runs = 40}, {.x = round ? xb : xa, .runs = 40}};
    for (int i = 0; i < 2; i++) CHECK_OK(kiln_graph_executor_create(mod, &w[i].ex));
    if (!w[0].ex || !w[1].ex) return;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
      CHECK_INT(w[i].failures, 0);
      CHECK_NN(w[i].out0);
      if (!w[i].out0) continue;
      gr_reference(fdata(w[i].x), r0, r1);
      CHECK(memcmp(fdata(w[i].out0), r0, sizeof r0) == 0);
    }
    if (!round && w[0].out0 && w[1].out0)
      CHECK(memcmp(fdata(w[0].out0), fdata(w[1].out0), 4 * N) == 0);
    for (int i = 0; i < 2; i++) {
      kiln_array_free(w[i].out0);
      kiln_graph_executor_free(w[i].ex);
    }
  }
  kiln_array_free(xa);
  kiln_array_free(xb);
}

const TestCase graphrt_tests[] = {
    {"params_bytes", test_params_bytes},
    {"params_corrupt", test_params_corrupt},
    {"plan_memory", test_plan_memory},
    {"plan_memory_ranges", test_plan_memory_ranges},
    {"run_module", test_run_module},
    {"storage_id", test_storage_id},
    {"set_input_errors", test_set_input_errors},
    {"flatten_data", test_flatten_data},
    {"json_errors", test_json_errors},
    {"threads", test_threads},
    {"debug_profile", test_debug_profile},
    {"registry", test_registry},
    {NULL, NULL},
};
