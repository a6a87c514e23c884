/*
 * test_artifact.c - compiled modules as files: the params used in place
 * from the mapped module (read-only: a write faults), copy-on-write when a
 * param is set, the checksum (a flipped byte anywhere is an error, never a
 * crash or a wrong answer), reading an artifact without loading it, and
 * elementwise kernels planned in place.
 *
 * The module: out = (x + p_b) * p_w over N floats, two kernels, the params
 * embedded as Kiln embeds them (param_index + param_data).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel_util.h"
#include "runtime/runtime_internal.h"

#define N 300000 /* > 1 MiB of weights: two checksum chunks */

static const char graph[] =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
    " {\"op\": \"null\", \"name\": \"p_b\", \"inputs\": []},"
    " {\"op\": \"null\", \"name\": \"p_w\", \"inputs\": []},"
    " {\"op\": \"tvm_op\", \"name\": \"fused_add\", \"attrs\": {\"func_name\": \"fused_add\","
    "  \"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[0, 0, 0], [1, 0, 0]]},"
    " {\"op\": \"tvm_op\", \"name\": \"fused_multiply\", \"attrs\": {\"func_name\": \"fused_multiply\","
    "  \"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[3, 0, 0], [2, 0, 0]]}],"
    " \"arg_nodes\": [0, 1, 2], \"heads\": [[4, 0, 0]],"
    " \"attrs\": {\"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\", \"float32\", \"float32\"]],"
    "  \"shape\": [\"list_shape\", [[300000], [300000], [300000], [300000], [300000]]]},"
    " \"node_row_ptr\": [0, 1, 2, 3, 4, 5]}";

static DLTensor *g_b, *g_w;
static char *g_path; /* the module file */

static float *fdata(const DLTensor *t) { return (float *)((char *)t->data + t->byte_offset); }

/* The module's path (built once); extra_c, if not NULL, is appended to the
 * generated C (a constructor for the no-code-runs test) and the result
 * written to a new file. */
static char *build(const char *extra_c, const char *file) {
  int64_t n = N;
  if (!g_b) {
    g_b = tk_array(1, &n, DT_F32);
    g_w = tk_array(1, &n, DT_F32);
    tk_fill_random(g_b);
    tk_fill_random(g_w);
  }
  const char *names[2] = {"p_b", "p_w"};
  DLTensor *arrays[2] = {g_b, g_w};
  void *idx, *data;
  size_t isize, dsize;
  if (kiln_params_save_embedded(2, names, arrays, &idx, &isize, &data, &dsize)) return NULL;
  LoweredFunc *fs[2] = {tk_lower_binary("fused_add", N, false), tk_lower_binary("fused_multiply", N, true)};
  KBlob blobs[3] = {{"graph_json", graph, strlen(graph)}, {"param_index", idx, isize}, {"param_data", data, dsize}};
  char *src = codegen_c(fs, 2, 3, blobs);
  char *full = kfmt("%s\n%s", src, extra_c ? extra_c : "");
  free(src);
  int rc = kiln_compile_c(1, (const char **)&full, 3, blobs, file, NULL);
  kiln_free(idx);
  kiln_free(data);
  return rc ? NULL : xstrdup(file); /* heap: g_path outlives a test's arena */
}

static char *tmpdir(void) {
  static char *dir;
  if (!dir) dir = kiln_mkdtemp("kiln-artifact-test-");
  return dir;
}

static const char *module_path(void) {
  if (!g_path) g_path = build(NULL, kfmt("%s/m.so", tmpdir()));
  return g_path;
}

/* Run a fresh executor of the module at path on x; the output, or NULL
 * with the error in kiln_last_error(). */
static DLTensor *run_once(const char *path, DLTensor *x, int *load_failed) {
  KilnModule *m = NULL;
  KilnGraphExecutor *ex = NULL;
  DLTensor *out = NULL;
  *load_failed = 0;
  if (kiln_module_load(path, &m) || kiln_graph_executor_create(m, &ex)) {
    *load_failed = 1;
  } else if (kiln_graph_executor_set_input(ex, 0, x) == 0 && kiln_graph_executor_run(ex) == 0) {
    kiln_graph_executor_get_output(ex, 0, &out);
  }
  kiln_graph_executor_free(ex);
  kiln_module_free(m);
  return out;
}

static int matches(const DLTensor *out, const DLTensor *x) {
  const float *xs = fdata(x), *b = fdata(g_b), *w = fdata(g_w), *o = fdata(out);
  for (int i = 0; i < N; i++)
    if (o[i] != (xs[i] + b[i]) * w[i]) return 0;
  return 1;
}

static DLTensor *random_x(void) {
  int64_t n = N;
  DLTensor *x = tk_array(1, &n, DT_F32);
  tk_fill_random(x);
  return x;
}

static void test_xxh64(void) {
  /* the reference implementation's values */
  CHECK(kiln_xxh64("", 0, 0) == UINT64_C(0xEF46DB3751D8E999));
  CHECK(kiln_xxh64("abc", 3, 0) == UINT64_C(0x44BC2CF5AD770999));
  /* streaming in odd pieces gives the one-shot hash */
  char buf[1000];
  for (int i = 0; i < 1000; i++) buf[i] = (char)(i * 7 + 3);
  KilnXXH64 s;
  kiln_xxh64_init(&s, 5);
  for (int at = 0, step = 1; at < 1000; at += step, step = step * 3 % 41 + 1)
    kiln_xxh64_update(&s, buf + at, (size_t)(at + step > 1000 ? 1000 - at : step));
  CHECK(kiln_xxh64_digest(&s) == kiln_xxh64(buf, 1000, 5));
}

/* The params are read where the module is mapped, read-only; set_input of
 * a param copies it (for that executor only). */
static void test_params_in_place(void) {
  const char *path = module_path();
  CHECK_NN(path);
  KilnModule *m;
  KilnGraphExecutor *ex, *ex2;
  CHECK_OK(kiln_module_load(path, &m));
  CHECK_OK(kiln_graph_executor_create(m, &ex));
  CHECK_OK(kiln_graph_executor_create(m, &ex2));
  CHECK_INT(kiln_graph_executor_num_inputs(ex), 1);
  const void *pdata;
  size_t psize;
  CHECK_OK(kiln_module_get_blob(m, "param_data", &pdata, &psize));
  CHECK(psize >= 2 * N * sizeof(float));
  CHECK((uintptr_t)pdata % 64 == 0);
  /* both params' entries point into the module's data, and no buffer was
   * allocated for them */
  int in_place = 0;
  for (int e = 0; e < ex->g.num_entries; e++) {
    const char *d = ex->entries[e].data;
    if (d >= (const char *)pdata && d < (const char *)pdata + psize) in_place++;
  }
  CHECK_INT(in_place, 2);
  KilnMemoryPlan plan;
  CHECK_OK(kiln_graph_executor_memory(ex, &plan, NULL));
  CHECK(plan.planned_bytes <= 3 * N * sizeof(float)); /* x and two activations at most */

  DLTensor *x = random_x(), *out;
  CHECK_OK(kiln_graph_executor_set_input(ex, 0, x));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK_OK(kiln_graph_executor_get_output(ex, 0, &out));
  CHECK(matches(out, x));
  kiln_array_free(out);

  /* a write to the mapped weights faults (they are never written in place) */
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL); /* not a sanitizer's handler: die of the fault */
    signal(SIGBUS, SIG_DFL);
    ((volatile float *)pdata)[0] = 1.0f;
    _exit(0);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK_MSG(WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGBUS),
            "writing the mapped params should fault (status %d)", st);

  /* copy-on-write: setting p_w to 2 changes ex's output only */
  int64_t n = N;
  DLTensor *two = tk_array(1, &n, DT_F32);
  for (int i = 0; i < N; i++) fdata(two)[i] = 2.0f;
  CHECK_OK(kiln_graph_executor_set_input_by_name(ex, "p_w", two));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK_OK(kiln_graph_executor_get_output(ex, 0, &out));
  int ok = 1;
  for (int i = 0; i < N && ok; i++) ok = fdata(out)[i] == (fdata(x)[i] + fdata(g_b)[i]) * 2.0f;
  CHECK(ok);
  kiln_array_free(out);
  /* the module's copy is untouched: ex2 still computes with it */
  const unsigned char *md;
  const KilnParamIndex *pi = kiln_module_params(m, &md);
  CHECK(pi && pi->num == 2 && md == pdata);
  CHECK(memcmp(md + pi->offsets[1], fdata(g_w), N * sizeof(float)) == 0);
  CHECK_OK(kiln_graph_executor_set_input(ex2, 0, x));
  CHECK_OK(kiln_graph_executor_run(ex2));
  CHECK_OK(kiln_graph_executor_get_output(ex2, 0, &out));
  CHECK(matches(out, x));
  kiln_array_free(out);

  /* the params as a TVM blob, for tools */
  void *bytes;
  size_t size;
  int np;
  char **pn;
  DLTensor **pa;
  CHECK_OK(kiln_module_save_params(m, &bytes, &size));
  CHECK_OK(kiln_params_load(bytes, size, &np, &pn, &pa));
  CHECK_INT(np, 2);
  CHECK_STR(pn[1], "p_w");
  CHECK(memcmp(fdata(pa[1]), fdata(g_w), N * sizeof(float)) == 0);
  kiln_params_free(np, pn, pa);
  kiln_free(bytes);
  kiln_array_free(two);
  kiln_array_free(x);
  kiln_graph_executor_free(ex);
  kiln_graph_executor_free(ex2);
  kiln_module_free(m);
}

/* Flip one byte at each of many places of the file: loading or running
 * fails with a clear error, or (a byte nothing reads) the answer is right. */
static void test_flipped_bytes(void) {
  const char *path = module_path();
  CHECK_NN(path);
  size_t len;
  char *bytes = kiln_read_file(path, &len);
  CHECK_NN(bytes);
  KilnArtifact *a;
  char *flip = kfmt("%s/flip.so", tmpdir());
  DLTensor *x = random_x();
  int load_errors = 0, run_errors = 0, right = 0;
  uint64_t seed = 12345;
  for (int k = 0; k < 48; k++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t at = k < 8 ? (size_t)k * 9 : (size_t)(seed >> 20) % len; /* the ELF header, then anywhere */
    bytes[at] ^= (char)(1 << (k % 8));
    CHECK_OK(kiln_write_file(flip, bytes, len));
    bytes[at] ^= (char)(1 << (k % 8));
    int load_failed;
    DLTensor *out = run_once(flip, x, &load_failed);
    if (load_failed) {
      load_errors++;
      CHECK_MSG(strstr(kiln_last_error(), "corrupt") || strstr(kiln_last_error(), "ELF") ||
                    strstr(kiln_last_error(), "truncated") || strstr(kiln_last_error(), "malformed"),
                "byte %zu: %s", at, kiln_last_error());
    } else if (!out) {
      run_errors++;
      CHECK_MSG(strstr(kiln_last_error(), "the weights are corrupt"), "byte %zu: %s", at, kiln_last_error());
    } else {
      CHECK_MSG(matches(out, x), "byte %zu flipped: a wrong answer", at);
      right++;
    }
    kiln_array_free(out);
  }
  CHECK(load_errors > 0);
  /* a byte of the weights: caught before the first run */
  const char *pfile = bytes;
  size_t woff = 0;
  for (size_t i = 0; i + 64 <= len; i += 64)
    if (!memcmp(pfile + i, fdata(g_w), 64)) {
      woff = i;
      break;
    }
  CHECK(woff > 0);
  bytes[woff + 100] ^= 0x10;
  CHECK_OK(kiln_write_file(flip, bytes, len));
  bytes[woff + 100] ^= 0x10;
  int lf;
  DLTensor *out = run_once(flip, x, &lf);
  CHECK(!lf && !out);
  CHECK_CONTAINS(kiln_last_error(), "the weights are corrupt");
  CHECK_CONTAINS(kiln_last_error(), "'p_w')");
  /* and kiln inspect --verify's check finds it too */
  CHECK_OK(kiln_artifact_open(flip, &a));
  CHECK_INT(kiln_artifact_verify_params(a), -1);
  CHECK_CONTAINS(kiln_last_error(), "the weights are corrupt");
  kiln_artifact_free(a);
  kiln_array_free(x);
  free(bytes);
  unlink(flip);
}

/* An artifact is read without running any of its code: this one aborts in
 * a constructor if it is ever loaded. */
static void test_inspect_no_load(void) {
  char *path = build("#include <stdlib.h>\n__attribute__((constructor)) static void kiln_test_boom(void) { abort(); }\n",
                     kfmt("%s/boom.so", tmpdir()));
  CHECK_NN(path);
  KilnArtifact *a;
  const KilnArtifactInfo *info;
  CHECK_OK(kiln_artifact_open(path, &a));
  CHECK_OK(kiln_artifact_info(a, &info));
  CHECK_INT(info->num_inputs, 1);
  CHECK_STR(info->inputs[0].name, "x");
  CHECK(info->inputs[0].ndim == 1 && info->inputs[0].shape[0] == N);
  CHECK_INT(info->num_outputs, 1);
  CHECK_STR(info->outputs[0].name, "fused_multiply");
  CHECK_INT(info->num_params, 2);
  CHECK(info->param_bytes == 2 * N * sizeof(float));
  CHECK_INT(info->num_kernels, 2);
  CHECK_STR(info->kernels[0], "fused_add");
  CHECK_STR(info->kernels[1], "fused_multiply");
  CHECK(info->plan.planned_bytes > 0 && info->plan.planned_bytes < info->plan.naive_bytes);
  int found = 0;
  for (int i = 0; i < info->num_blobs; i++) found += !strcmp(info->blob_names[i], "graph_json");
  CHECK_INT(found, 1);
  CHECK_OK(kiln_artifact_verify_params(a));
  kiln_artifact_free(a);
  unlink(path);
  free(path);
  /* not a Kiln artifact; not a file */
  CHECK_INT(kiln_artifact_open("/proc/self/exe", &a), -1);
  CHECK_CONTAINS(kiln_last_error(), "is not a Kiln artifact");
  CHECK_INT(kiln_artifact_open(kfmt("%s/nope.so", tmpdir()), &a), -1);
  CHECK_CONTAINS(kiln_last_error(), "no such file");
}


/* ---- in-place elementwise kernels ---- */

/* The planner: an op marked in place takes its input's storage when it is
 * that input's last reader and the sizes match; never an argument's. */
static void test_inplace_plan(void) {
  /* e0 = x; e1 = A(e0), A in place (but e0 is an argument); e2 = B(e1),
   * e3 = C(e2), e4 = D(e3), all in place, e4 the head */
  int32_t i1[] = {0}, i2[] = {1}, i3[] = {2}, i4[] = {3};
  KilnPlanNode nodes[] = {{KILN_PLAN_ARG, 0, NULL, 0, 1, 0}, {KILN_PLAN_OP, 1, i1, 1, 1, 1},
                          {KILN_PLAN_OP, 1, i2, 2, 1, 1},    {KILN_PLAN_OP, 1, i3, 3, 1, 1},
                          {KILN_PLAN_OP, 1, i4, 4, 1, 1}};
  uint64_t bytes[] = {400, 400, 400, 400, 400};
  int32_t heads[] = {4}, sid[5];
  KilnMemoryPlan plan;
  CHECK_OK(kiln_graph_plan_memory(5, nodes, 5, bytes, NULL, 1, heads, sid, &plan));
  CHECK(sid[1] != sid[0]); /* the argument keeps its storage */
  CHECK_INT(sid[2], sid[1]);
  CHECK(sid[3] == sid[2] && sid[4] == sid[3]);
  CHECK_INT(plan.num_storage, 2);
  /* C = C(e1, e2) reads e1 as well: B may not overwrite it, C may */
  int32_t k3[] = {1, 2};
  KilnPlanNode nodes2[] = {{KILN_PLAN_ARG, 0, NULL, 0, 1, 0}, {KILN_PLAN_OP, 1, i1, 1, 1, 1},
                           {KILN_PLAN_OP, 1, i2, 2, 1, 1},    {KILN_PLAN_OP, 2, k3, 3, 1, 1},
                           {KILN_PLAN_OP, 1, i4, 4, 1, 1}};
  CHECK_OK(kiln_graph_plan_memory(5, nodes2, 5, bytes, NULL, 1, heads, sid, &plan));
  CHECK(sid[2] != sid[1]);  /* e1 lives on until C */
  CHECK_INT(sid[3], sid[1]); /* C is e1's last reader */
  /* different sizes: no */
  uint64_t bytes3[] = {400, 400, 800, 800, 800};
  CHECK_OK(kiln_graph_plan_memory(5, nodes, 5, bytes3, NULL, 1, heads, sid, &plan));
  CHECK(sid[2] != sid[1]);
  /* an input index out of range is ignored, not a crash */
  KilnPlanNode bad[] = {{KILN_PLAN_ARG, 0, NULL, 0, 1, 0}, {KILN_PLAN_OP, 1, i1, 1, 1, 7}};
  int32_t h1[] = {1};
  CHECK_OK(kiln_graph_plan_memory(2, bad, 2, bytes, NULL, 1, h1, sid, &plan));
  CHECK(sid[1] != sid[0]);
}

/* A graph whose last two kernels are marked in place: they run over one
 * buffer and the answer is the same. */
static void test_inplace_run(void) {
  static const char g2[] =
      "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
      " {\"op\": \"null\", \"name\": \"p_b\", \"inputs\": []},"
      " {\"op\": \"null\", \"name\": \"p_w\", \"inputs\": []},"
      " {\"op\": \"tvm_op\", \"name\": \"fused_add\", \"attrs\": {\"func_name\": \"fused_add\","
      "  \"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[0, 0, 0], [1, 0, 0]]},"
      " {\"op\": \"tvm_op\", \"name\": \"fused_nn_relu\", \"attrs\": {\"func_name\": \"fused_nn_relu\","
      "  \"num_inputs\": \"1\", \"num_outputs\": \"1\", \"flatten_data\": \"0\", \"kiln_inplace\": \"0\"}, \"inputs\": [[3, 0, 0]]},"
      " {\"op\": \"tvm_op\", \"name\": \"fused_multiply\", \"attrs\": {\"func_name\": \"fused_multiply\","
      "  \"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\", \"kiln_inplace\": \"0\"}, \"inputs\": [[4, 0, 0], [2, 0, 0]]}],"
      " \"arg_nodes\": [0, 1, 2], \"heads\": [[5, 0, 0]],"
      " \"attrs\": {\"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\", \"float32\", \"float32\", \"float32\"]],"
      "  \"shape\": [\"list_shape\", [[300000], [300000], [300000], [300000], [300000], [300000]]]},"
      " \"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6]}";
  module_path(); /* the params */
  const char *names[2] = {"p_b", "p_w"};
  DLTensor *arrays[2] = {g_b, g_w};
  void *idx, *data;
  size_t isize, dsize;
  CHECK_OK(kiln_params_save_embedded(2, names, arrays, &idx, &isize, &data, &dsize));
  LoweredFunc *fs[3] = {tk_lower_binary("fused_add", N, false), tk_lower_relu("fused_nn_relu", N),
                        tk_lower_binary("fused_multiply", N, true)};
  if (fs[1]) fs[1]->may_alias = true;
  fs[2]->may_alias = true;
  KBlob blobs[3] = {{"graph_json", g2, strlen(g2)}, {"param_index", idx, isize}, {"param_data", data, dsize}};
  KilnModule *m = kiln_build_funcs(fs, 3, 3, blobs, NULL);
  kiln_free(idx);
  kiln_free(data);
  CHECK_NN(m);
  KilnGraphExecutor *ex;
  CHECK_OK(kiln_graph_executor_create(m, &ex));
  CHECK(ex->entries[3].data == ex->entries[4].data && ex->entries[4].data == ex->entries[5].data);
  KilnMemoryPlan plan;
  CHECK_OK(kiln_graph_executor_memory(ex, &plan, NULL));
  CHECK_INT(plan.num_storage, 2); /* x, and one buffer for the three activations */
  DLTensor *x = random_x(), *out;
  CHECK_OK(kiln_graph_executor_set_input(ex, 0, x));
  CHECK_OK(kiln_graph_executor_run(ex));
  CHECK_OK(kiln_graph_executor_get_output(ex, 0, &out));
  const float *xs = fdata(x), *b = fdata(g_b), *w = fdata(g_w), *o = fdata(out);
  int ok = 1;
  for (int i = 0; i < N && ok; i++) {
    float r = xs[i] + b[i];
    ok = o[i] == (r > 0 ? r : 0) * w[i];
  }
  CHECK(ok);
  /* the C has no restrict on an in-place kernel's arguments */
  char *src = codegen_c(fs + 1, 1, 0, NULL);
  CHECK(src && !strstr(src, "*restrict"));
  free(src);
  kiln_array_free(out);
  kiln_array_free(x);
  kiln_graph_executor_free(ex);
  kiln_module_free(m);
}

/* A module whose blob is large (17 MiB, past compiler.c's BIG_BLOBS) is
 * assembled beside its units and linked with lld where `cc -fuse-ld=lld`
 * works, else with the compiler's own linker: both give a sealed module
 * that loads, with the blob byte for byte and a kernel that runs. */
typedef struct BigBuild {
  const char *cc; /* NULL: the default compiler */
  const char *path;
  const unsigned char *bytes;
  size_t size;
  int ok;
  char err[256]; /* the error of a failed build (the thread's) */
} BigBuild;

static void build_big(BigBuild *b) {
  b->ok = 0;
  int64_t n = 64;
  Tensor *a = te_placeholder_c("a", 1, &n, DT_F32), *o = NULL;
  Expr **v = te_axis_vars(1, NULL);
  o = te_compute("o", 1, (Expr *[]){ir_i32(n)}, v, ir_mul(te_read1(a, v[0]), ir_f32(2)), NULL);
  LoweredFunc *f = kiln_lower(te_create_schedule(1, &o), 2, (Tensor *[]){a, o}, "twice", NULL);
  KBlob blob = {"big", b->bytes, b->size};
  char *src = f ? codegen_c(&f, 1, 1, &blob) : NULL;
  CompileOptions opt = {b->cc, NULL, NULL};
  if (!src || kiln_compile_c(1, (const char **)&src, 1, &blob, b->path, &opt)) {
    free(src);
    snprintf(b->err, sizeof b->err, "%s", kiln_last_error());
    return;
  }
  free(src);
  KilnModule *m = NULL;
  const void *data = NULL;
  size_t size = 0;
  KilnFunction *fn = NULL;
  if (kiln_module_load(b->path, &m) || kiln_module_get_blob(m, "big", &data, &size) ||
      kiln_module_get_function(m, "twice", &fn)) {
    snprintf(b->err, sizeof b->err, "%s", kiln_last_error());
    kiln_module_free(m);
    return;
  }
  DLTensor *x = tk_array(1, &n, DT_F32), *y = tk_array(1, &n, DT_F32);
  tk_fill_random(x);
  KilnValue av[2] = {{.v_handle = x}, {.v_handle = y}};
  int codes[2] = {KILN_DLTENSOR, KILN_DLTENSOR}, rcode;
  KilnValue ret;
  int good = !kiln_func_call(fn, av, codes, 2, &ret, &rcode);
  for (int i = 0; i < n && good; i++) good = fdata(y)[i] == 2 * fdata(x)[i];
  b->ok = good && size == b->size && !memcmp(data, b->bytes, size) ? 1 : -1;
  snprintf(b->err, sizeof b->err, "wrong blob or kernel");
  kiln_array_free(x);
  kiln_array_free(y);
  kiln_func_free(fn);
  kiln_module_free(m);
}

static void *build_big_thread(void *ud) {
  KArena *arena = kiln_arena_new();
  kiln_arena_push(arena);
  build_big(ud);
  kiln_arena_pop();
  kiln_arena_free(arena);
  return NULL;
}

static void test_big_blobs_linked(void) {
  size_t size = (size_t)17 << 20;
  unsigned char *bytes = malloc(size);
  for (size_t i = 0; i < size; i++) bytes[i] = (unsigned char)test_rand();
  BigBuild b = {NULL, kfmt("%s/big.so", tmpdir()), bytes, size, 0, ""};
  build_big(&b);
  CHECK_MSG(b.ok == 1, "default compiler: %s", b.err);
  /* a compiler that cannot use lld: the default linker, learned in a
   * fresh thread (what was learned is per thread) */
  const char *cc = kfmt("%s/no-lld-cc", tmpdir());
  const char *script = "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -fuse-ld=lld ] && { echo 'no lld' >&2; exit 1; }; done\n"
                       "exec cc \"$@\"\n";
  CHECK(!kiln_write_file(cc, script, strlen(script)) && !chmod(cc, 0755));
  BigBuild nb = {cc, kfmt("%s/big_nolld.so", tmpdir()), bytes, size, 0, ""};
  pthread_t th;
  CHECK(!pthread_create(&th, NULL, build_big_thread, &nb) && !pthread_join(th, NULL));
  CHECK_MSG(nb.ok == 1, "compiler without lld: %s", nb.err);
  free(bytes);
}

const TestCase artifact_tests[] = {
    {"xxh64", test_xxh64},
    {"params_in_place", test_params_in_place},
    {"flipped_bytes", test_flipped_bytes},
    {"inspect_no_load", test_inspect_no_load},
    {"inplace_plan", test_inplace_plan},
    {"inplace_run", test_inplace_run},
    {"big_blobs_linked", test_big_blobs_linked},
    {NULL, NULL},
};
