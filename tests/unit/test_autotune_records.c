/*
 * test_autotune_records.c - tuning records and compile-time dispatch:
 * every line of the seeds' TopHub logs (tests/data/tophub, v0.1, CUDA)
 * parses, is recognized as a conv2d / depthwise / dense task, never
 * matches the CPU target, and is written back byte for byte; v0.2 records
 * round-trip; Python's float repr; the target matching rule; dispatch
 * picks the fastest error-free matching record the template accepts, over
 * records of other targets, failed ones and the fallback; and a compiled
 * model's profile names the record in its Task column.
 */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include "autotune/autotune.h"
#include "frontend/onnx/import.h"
#include "graph/backend/build.h"
#include "graph/backend/strategy.h"
#include "kernel_util.h"

static const char *pyf(double v) {
  StrBuf sb = {0};
  pyjson_float(&sb, v);
  const char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

static void test_pyfloat(void) {
  CHECK_STR(pyf(1e9), "1000000000.0");
  CHECK_STR(pyf(0.1), "0.1");
  CHECK_STR(pyf(100.0), "100.0");
  CHECK_STR(pyf(1e16), "1e+16");
  CHECK_STR(pyf(1e15), "1000000000000000.0");
  CHECK_STR(pyf(0.0001), "0.0001");
  CHECK_STR(pyf(1e-5), "1e-05");
  CHECK_STR(pyf(6.899598885395827e-05), "6.899598885395827e-05");
  CHECK_STR(pyf(1576661867.8294497), "1576661867.8294497");
  CHECK_STR(pyf(-2.5), "-2.5");
  CHECK_STR(pyf(0.0), "0.0");
  CHECK_STR(pyf(1.0 / 3), "0.3333333333333333");
  CHECK_STR(pyf(1.5e-300), "1.5e-300");
}

/* Every seed record: parsed, recognized, written back identically. */
static void test_seed_records(void) {
  const char *dir = kfmt("%s/tests/data/tophub", test_root());
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  if (!d) return;
  int total = 0, files = 0, kinds[5] = {0}, winograd = 0, exact = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".log")) continue;
    files++;
    const char *path = kfmt("%s/%s", dir, e->d_name);
    AVec recs = {0};
    CHECK_OK(records_load(path, &recs));
    size_t len;
    char *text = kiln_read_file(path, &len);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    for (int i = 0; i < recs.len; i++, line = strtok_r(NULL, "\n", &save)) {
      TuneRecord *r = recs.data[i];
      total++;
      CHECK_INT(r->version, 1);
      CHECK_INT(r->error_no, 0);
      CHECK(r->ncosts > 0 && record_cost(r) > 0 && record_cost(r) < 1);
      CHECK(r->kind != TASK_OTHER);
      kinds[r->kind]++;
      CHECK_MSG(wl_flops(r->wl) > 0, "%s: no geometry in %s", r->wl->name, r->wl->key); /* shapes understood */
      CHECK(!target_matches_record(target_host(), r->target)); /* cuda: never on a CPU */
      if (r->config->template_key && !strcmp(r->config->template_key, "winograd")) winograd++;
      CHECK(r->line == i + 1);
      /* the v0.1 text comes back byte for byte */
      const char *back = record_json_v01(r);
      if (line && !strcmp(back, line)) exact++;
      else CHECK_STR(back, line);
      /* and through v0.2 the record is the same */
      TuneRecord *r2 = record_parse(record_json(r));
      CHECK_NN(r2);
      if (!r2) continue;
      CHECK_INT(r2->version, 2);
      CHECK_STR(r2->wl->key, r->wl->key);
      CHECK(config_equal(r2->config, r->config) && r2->config->index == r->config->index);
      CHECK(r2->ncosts == r->ncosts && r2->costs[0] == r->costs[0] && r2->timestamp == r->timestamp);
      CHECK_STR(record_json(r2), record_json(r));
    }
    free(text);
  }
  closedir(d);
  CHECK_INT(files, 9);
  CHECK_INT(total, 201);
  CHECK_INT(exact, 201);
  CHECK_INT(kinds[TASK_CONV2D], 156); /* 120 direct + 36 winograd */
  CHECK_INT(winograd, 36);
  CHECK_INT(kinds[TASK_DEPTHWISE_CONV2D], 30);
  CHECK_INT(kinds[TASK_DENSE], 15);
  /* TVM's older argument orders: conv2d with 2 paddings, NCHW depthwise
   * kernels [C, multiplier, KH, KW] */
  Workload *c = wl_from_json("topi_nn_conv2d", "[[\"TENSOR\", [1, 3, 224, 224], \"float32\"], [\"TENSOR\", [64, 3, 3, "
                                               "3], \"float32\"], [1, 1], [1, 1], [1, 1], \"NCHW\", \"float32\"]");
  CHECK(c && wl_flops(c) == 2.0 * 64 * 224 * 224 * 27);
  if (c) CHECK_STR(wl_describe(c), "[(1,3,224,224),(64,3,3,3)] s1 p1");
  Workload *dw = wl_from_json("topi_nn_depthwise_conv2d_nchw", "[[\"TENSOR\", [1, 32, 112, 112], \"float32\"], "
                                                               "[\"TENSOR\", [32, 2, 3, 3], \"float32\"], [2, 2], "
                                                               "[1, 1], [1, 1], \"float32\"]");
  CHECK(dw && wl_flops(dw) == 2.0 * 64 * 56 * 56 * 9);
}

static void test_record_v02(void) {
  const char *v2 = "{\"input\": [\"llvm -mcpu=x86-64-v4\", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 64, 56, 56], "
                   "\"float32\"], [\"TENSOR\", [64, 64, 3, 3], \"float32\"], [1, 1], [1, 1, 1, 1], [1, 1], \"NCHW\", "
                   "\"NCHW\", \"float32\"], {}], \"config\": {\"index\": 228, \"code_hash\": null, \"entity\": "
                   "[[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], [\"tile_ow\", \"sp\", [-1, 8]], "
                   "[\"unroll_kw\", \"ot\", true]]}, \"result\": [[0.000123, 0.000125], 0, 1.25, 1700000000.5], "
                   "\"version\": 0.2}";
  TuneRecord *r = record_parse(v2);
  CHECK_NN(r);
  if (!r) return;
  CHECK_INT(r->version, 2);
  CHECK_STR(r->target, "llvm -mcpu=x86-64-v4");
  CHECK_STR(r->wl->name, "conv2d_NCHWc.x86");
  CHECK_INT(r->kind, TASK_CONV2D);
  CHECK_INT(r->config->index, 228);
  CHECK_INT(r->ncosts, 2);
  CHECK(fabs(record_cost(r) - 0.000124) < 1e-12);
  CHECK_STR(record_json(r), v2);
  /* the same record read as v0.1 and back */
  TuneRecord *r1 = record_parse(record_json_v01(r));
  CHECK(r1 && r1->version == 1 && config_equal(r1->config, r->config));
  if (r1) CHECK_STR(record_json(r1), v2);
  /* a failure is written with AutoTVM's 1e9 cost, and costs nothing */
  r->error_no = MEASURE_RUN_TIMEOUT;
  CHECK_CONTAINS(record_json(r), "\"result\": [[1000000000.0], 7, 1.25, 1700000000.5]");
  CHECK(isinf(record_cost(record_parse(record_json(r)))));
  /* errors name the problem */
  CHECK(record_parse("{\"input\": [\"llvm\"]}") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "\"input\" must be [target, task_name, args, kwargs]");
  CHECK(record_parse("[1, 2]") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "expected a JSON object");
  CHECK(record_parse("{\"foo\": 1}") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "neither v0.2");
  /* a cost beyond double's range reads as infinity, which could not be
   * written back as JSON (a fuzzer's finding) */
  {
    char *big = strdup(v2);
    char *c = strstr(big, "0.000125");
    memcpy(c, "1.25e999", 8);
    CHECK(record_parse(big) == NULL);
    CHECK_CONTAINS(kiln_get_error(), "cost 1 of the result is not a finite number of seconds");
    free(big);
  }
  /* integers beyond int64 (a fuzzer's finding: converting them was undefined) */
  {
    char *big = strdup(v2);
    char *c = strstr(big, "[-1, 16]");
    memcpy(c, "[-7e40] ", 8);
    CHECK(record_parse(big) == NULL);
    CHECK_CONTAINS(kiln_get_error(), "element 0 is not an integer (of 64 bits)");
    free(big);
  }
  /* a string that is not UTF-8 could not be written back as read: an
   * error naming the column (a fuzzer's finding); non-ASCII text that is
   * UTF-8 is kept and written back escaped, as json.dumps does */
  CHECK(record_parse("{\"input\": [\"llvm\", \"dense_n\xbc\xbcopack.x86\", [], {}]}") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "not valid UTF-8 at column 28 (byte 0xbc)");
  CHECK_INT(utf8_invalid_at("caf\xc3\xa9 \xf0\x9f\x94\xa5"), -1);
  CHECK_INT(utf8_invalid_at("ab\xc0\xaf"), 2);          /* overlong '/' */
  CHECK_INT(utf8_invalid_at("\xed\xa0\x80"), 0);       /* a surrogate */
  CHECK_INT(utf8_invalid_at("x\xf4\x90\x80\x80"), 1); /* above U+10FFFF */
  CHECK_INT(utf8_invalid_at("\xe2\x82"), 0);            /* cut short */
  StrBuf sb = {0};
  pyjson_str(&sb, "caf\xc3\xa9 \xf0\x9f\x94\xa5");
  CHECK_STR(sb.data, "\"caf\\u00e9 \\ud83d\\udd25\"");
  sb_free(&sb);
  char *dir = kiln_mkdtemp("kiln-rec-");
  const char *path = kfmt("%s/bad.json", dir);
  kiln_write_file(path, "\n# a comment\n{\"input\": [\"llvm\", \"x\", [1], {}], \"config\": {\"index\": 0, \"entity\": []}, "
                        "\"result\": [[1.0], 0, 1.0, 1.0], \"version\": 0.2}\n{oops\n", 140);
  AVec recs = {0};
  CHECK(records_load(path, &recs) != 0);
  CHECK_CONTAINS(kiln_get_error(), "bad.json:4");
  CHECK_INT(recs.len, 1);
  kiln_rmtree(dir);
  free(dir);
}

static void test_target_rule(void) {
  const char *saved = getenv("KILN_SIMD_WIDTH");
  char *keep = saved ? xstrdup(saved) : NULL;
  setenv("KILN_SIMD_WIDTH", "16", 1);
  CHECK_STR(target_host()->str, "llvm -mcpu=x86-64-v4");
  CHECK_STR(target_records_stem(target_host()), "x86_avx512");
  CHECK(target_matches_record(target_host(), "llvm -mcpu=x86-64-v4"));
  CHECK(target_matches_record(target_host(), "llvm -keys=cpu -mcpu=skylake-avx512"));
  CHECK(target_matches_record(target_host(), "llvm -mcpu=znver4"));
  CHECK(target_matches_record(target_host(), "llvm"));           /* no -mcpu: any CPU, as in TVM */
  CHECK(target_matches_record(target_host(), "c -mcpu=icelake-server"));
  CHECK(!target_matches_record(target_host(), "llvm -mcpu=core-avx2"));
  CHECK(!target_matches_record(target_host(), "llvm -mcpu=x86-64-v3"));
  CHECK(!target_matches_record(target_host(), "llvm -mcpu=cortex-a72"));
  CHECK(!target_matches_record(target_host(), "llvm -device=arm_cpu"));
  CHECK(!target_matches_record(target_host(), "llvm -mtriple=aarch64-linux-gnu"));
  CHECK(!target_matches_record(target_host(), "cuda -model=unknown"));
  CHECK(!target_matches_record(target_host(), "opencl"));
  setenv("KILN_SIMD_WIDTH", "8", 1);
  CHECK_STR(target_host()->str, "llvm -mcpu=x86-64-v3");
  CHECK(target_matches_record(target_host(), "llvm -mcpu=haswell"));
  CHECK(!target_matches_record(target_host(), "llvm -mcpu=x86-64-v4"));
  if (keep) {
    setenv("KILN_SIMD_WIDTH", keep, 1);
    free(keep);
  } else {
    unsetenv("KILN_SIMD_WIDTH");
  }
}

static const char *conv_args = "[[\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", [64, 64, 3, 3], \"float32\"], [1, 1], "
                               "[1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", \"float32\"]";

static const char *rec_line(const char *target, const char *args, const char *entity, double cost, int eno) {
  return kfmt("{\"input\": [\"%s\", \"conv2d_NCHWc.x86\", %s, {}], \"config\": {\"index\": -1, \"code_hash\": null, "
              "\"entity\": %s}, \"result\": [[%g], %d, 1.0, 1700000000.0], \"version\": 0.2}\n",
              target, args, entity, cost, eno);
}

static const char *ent(int ic, int oc, int ow) {
  return kfmt("[[\"tile_ic\", \"sp\", [-1, %d]], [\"tile_oc\", \"sp\", [-1, %d]], [\"tile_ow\", \"sp\", [-1, %d]], "
              "[\"unroll_kw\", \"ot\", true]]",
              ic, oc, ow);
}

static void test_dispatch_best(void) {
  DispatchContext *dc = dispatch_context_new();
  graph_dispatch_use_shipped(dc, false);
  char *dir = kiln_mkdtemp("kiln-disp-");
  const char *path = kfmt("%s/recs.json", dir);
  const char *me = target_host()->str;
  StrBuf sb = {0};
  sb_puts(&sb, rec_line(me, conv_args, ent(16, 16, 8), 5e-4, 0));                     /* 1: valid, slow */
  sb_puts(&sb, rec_line("cuda -model=unknown", conv_args, ent(8, 8, 8), 1e-4, 0));    /* 2: other target */
  sb_puts(&sb, rec_line(me, conv_args, ent(4, 4, 4), 5e-5, 4));                      /* 3: crashed */
  sb_puts(&sb, rec_line(me, conv_args, ent(16, 32, 14), 2e-4, 0));                   /* 4: the best */
  sb_puts(&sb, rec_line("llvm -mcpu=cortex-a72", conv_args, ent(8, 16, 8), 1e-5, 0)); /* 5: other ISA */
  sb_puts(&sb, rec_line(me, conv_args, ent(7, 16, 8), 1e-6, 0));                     /* 6: rejected by check */
  sb_puts(&sb, rec_line(me, conv_args, ent(32, 16, 8), 2.1e-4, 0));                  /* 7: input block 32, ~best */
  sb_puts(&sb, rec_line(me, conv_args, ent(4, 16, 8), 9e-4, 0));                     /* 8: input block 4, slow */
  kiln_write_file(path, sb.data, sb.len);
  sb_free(&sb);
  CHECK_OK(graph_dispatch_add_records(dc, path));
  Workload *wl = wl_from_json("conv2d_NCHWc.x86", conv_args);
  ConfigEntity *cfg = NULL;
  const char *src = NULL;
  CHECK_OK(graph_dispatch_query(dc, target_host(), wl, &cfg, &src));
  CHECK_NN(cfg);
  if (cfg) {
    CHECK_INT(cfg_split_inner(cfg, "tile_oc"), 32);
    CHECK_INT(cfg_split_inner(cfg, "tile_ow"), 14);
  }
  CHECK_STR(src, "recs.json:4");
  /* data arriving in another block: that block's best, if slower by less
   * than the transform (802816 bytes at 2.5 GB/s: 321 us) */
  CHECK_OK(graph_dispatch_query_block(dc, target_host(), wl, 32, &cfg, &src));
  CHECK(cfg && cfg_split_inner(cfg, "tile_ic") == 32);
  CHECK_STR(src, "recs.json:7");
  CHECK_OK(graph_dispatch_query_block(dc, target_host(), wl, 4, &cfg, &src)); /* 700 us slower: keep the best */
  CHECK(cfg == NULL);
  CHECK_OK(graph_dispatch_query_block(dc, target_host(), wl, 16, &cfg, &src));
  CHECK_STR(src, "recs.json:4");
  /* a workload without records: nothing, so the fallback */
  Workload *other = wl_conv2d("conv2d_NCHWc.x86", (int64_t[]){1, 32, 28, 28}, (int64_t[]){32, 32, 3, 3}, (int[]){1, 1},
                              (int[]){1, 1, 1, 1}, (int[]){1, 1}, "float32", "float32");
  CHECK_OK(graph_dispatch_query(dc, target_host(), other, &cfg, &src));
  CHECK(cfg == NULL && src == NULL);
  /* a later file with a faster record wins; a missing file is an error */
  const char *p2 = kfmt("%s/more.json", dir);
  const char *l = rec_line(me, conv_args, ent(32, 16, 28), 1e-4, 0);
  kiln_write_file(p2, l, strlen(l));
  CHECK_OK(graph_dispatch_add_records(dc, p2));
  CHECK_OK(graph_dispatch_query(dc, target_host(), wl, &cfg, &src));
  CHECK_STR(src, "more.json:1");
  CHECK(graph_dispatch_add_records(dc, kfmt("%s/none.json", dir)) != 0);
  CHECK_CONTAINS(kiln_get_error(), "cannot read");
  dispatch_context_free(dc);
  kiln_rmtree(dir);
  free(dir);
}

/* Records shipped for the machine's class: $KILN_RECORDS_PATH (a folder
 * with <isa>.json, or a file), behind the user's records; set but empty
 * turns them off. */
static void test_dispatch_shipped(void) {
  const char *saved = getenv("KILN_RECORDS_PATH");
  char *keep = saved ? xstrdup(saved) : NULL;
  char *dir = kiln_mkdtemp("kiln-ship-");
  const char *ship = kfmt("%s/%s.json", dir, target_records_stem(target_host())), *user = kfmt("%s/mine.json", dir);
  const char *l1 = rec_line(target_host()->str, conv_args, ent(16, 16, 8), 3e-4, 0);
  const char *l2 = rec_line(target_host()->str, conv_args, ent(16, 16, 14), 4e-4, 0);
  kiln_write_file(ship, l1, strlen(l1));
  kiln_write_file(user, l2, strlen(l2));
  Workload *wl = wl_from_json("conv2d_NCHWc.x86", conv_args);
  ConfigEntity *cfg = NULL;
  const char *src = NULL;
  setenv("KILN_RECORDS_PATH", dir, 1);
  DispatchContext *dc = dispatch_context_new();
  CHECK_OK(graph_dispatch_query(dc, target_host(), wl, &cfg, &src));
  CHECK_STR(src, "shipped");
  CHECK(cfg && cfg_split_inner(cfg, "tile_ow") == 8);
  CHECK_STR(graph_dispatch_shipped_file(dc, target_host()), ship);
  /* the user's records come first, even when slower */
  CHECK_OK(graph_dispatch_add_records(dc, user));
  CHECK_OK(graph_dispatch_query(dc, target_host(), wl, &cfg, &src));
  CHECK_STR(src, "mine.json:1");
  /* a file in the path works too; empty: none */
  setenv("KILN_RECORDS_PATH", ship, 1);
  graph_dispatch_reset(dc);
  CHECK_OK(graph_dispatch_query(dc, target_host(), wl, &cfg, &src));
  CHECK_STR(src, "shipped");
  setenv("KILN_RECORDS_PATH", "", 1);
  graph_dispatch_reset(dc);
  CHECK_OK(graph_dispatch_query(dc, target_host(), wl, &cfg, &src));
  CHECK(cfg == NULL && graph_dispatch_shipped_file(dc, target_host()) == NULL);
  /* --no-shipped-records */
  setenv("KILN_RECORDS_PATH", dir, 1);
  graph_dispatch_reset(dc);
  graph_dispatch_use_shipped(dc, false);
  CHECK_OK(graph_dispatch_query(dc, target_host(), wl, &cfg, &src));
  CHECK(cfg == NULL);
  dispatch_context_free(dc);
  if (keep) {
    setenv("KILN_RECORDS_PATH", keep, 1);
    free(keep);
  } else {
    unsetenv("KILN_RECORDS_PATH");
  }
  kiln_rmtree(dir);
  free(dir);
}

/* The digits model compiled with a record for its second convolution:
 * the profile's Task column names the record, the others their source. */
static void test_dispatch_task_column(void) {
  DispatchContext *dc = dispatch_context_new();
  graph_dispatch_use_shipped(dc, false);
  graph_dispatch_set_quiet(dc, true);
  char *dir = kiln_mkdtemp("kiln-disp-");
  const char *path = kfmt("%s/digits.json", dir);
  const char *args = "[[\"TENSOR\", [1, 16, 4, 4], \"float32\"], [\"TENSOR\", [32, 16, 3, 3], \"float32\"], [1, 1], "
                     "[1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", \"float32\"]";
  StrBuf sb = {0};
  sb_puts(&sb, "# tuned by hand for the test\n");
  sb_puts(&sb, rec_line(target_host()->str, args, ent(8, 8, 2), 1e-6, 0));
  kiln_write_file(path, sb.data, sb.len);
  sb_free(&sb);
  CHECK_OK(graph_dispatch_add_records(dc, path));
  Graph *g = kiln_import_onnx(kfmt("%s/models/digits/digits.onnx", test_root()), "image:[1,1,8,8]");
  CHECK_NN(g);
  GraphOptions go = {3, NULL, NULL, NULL, dc, GRAPH_PRECISION_FP32};
  if (g) g = graph_optimize(g, &go);
  CHECK_NN(g);
  if (!g) {
    dispatch_context_free(dc);
    kiln_rmtree(dir);
    free(dir);
    return;
  }
  /* alter_layout recorded its choice on each blocked convolution */
  int recorded = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    GNode *n = g->nodes.data[i];
    if (n->kind == GN_CALL && n->op->id == OP_CONV2D_NCHWC) {
      CHECK_NN(n->config);
      recorded += n->config && n->config_source && !strcmp(n->config_source, "digits.json:2");
    }
  }
  CHECK_INT(recorded, 1);
  /* the tasks list names the functions that use each */
  AVec tasks = {0};
  CHECK_OK(graph_extract_tasks(g, 3, target_host(), dc, &tasks));
  CHECK_INT(tasks.len, 4);
  if (tasks.len == 4) {
    GraphTask *t = tasks.data[1];
    CHECK_STR(t->tmpl->name, "conv2d_NCHWc.x86");
    CHECK_INT(t->space_size, 180);
    CHECK_STR((const char *)t->users.data[0], "fused_nn_contrib_conv2d_NCHWc_add_nn_relu_1");
  }
  const char *so = kfmt("%s/digits.so", dir);
  /* the build reads the recorded configs back: a context without the
   * records (and without shipped ones) changes nothing */
  DispatchContext *empty = dispatch_context_new();
  graph_dispatch_use_shipped(empty, false);
  graph_dispatch_set_quiet(empty, true);
  GraphBuildOptions bo;
  memset(&bo, 0, sizeof bo);
  bo.opt_level = 3;
  bo.dispatch = empty;
  CHECK_OK(graph_build(g, &bo, so, NULL));
  dispatch_context_free(empty);
  graph_free(g);
  KilnModule *mod = NULL;
  KilnGraphExecutor *ex = NULL;
  KilnProfile *p = NULL;
  CHECK_OK(kiln_module_load(so, &mod));
  if (mod) CHECK_OK(kiln_graph_executor_create(mod, &ex));
  if (ex) CHECK_OK(kiln_debug_profile(ex, 1, 1, &p));
  int found = 0, fallback = 0;
  for (int i = 0; p && i < kiln_profile_num_rows(p); i++) {
    const KilnProfileRow *row = kiln_profile_row(p, i);
    if (!strcmp(row->name, "fused_nn_contrib_conv2d_NCHWc_add_nn_relu_1")) {
      CHECK_STR(row->task, "conv2d_NCHWc.x86 [(1,16,4,4),(32,16,3,3)] s1 p1 · digits.json:2");
      found++;
    } else if (strstr(row->task, "fallback")) {
      fallback++;
    }
  }
  CHECK_INT(found, 1);
  CHECK_INT(fallback, 3);
  kiln_profile_free(p);
  kiln_graph_executor_free(ex);
  kiln_module_free(mod);
  dispatch_context_free(dc);
  kiln_rmtree(dir);
  free(dir);
}

const TestCase autotune_records_tests[] = {
    {"pyfloat", test_pyfloat},
    {"seed_records", test_seed_records},
    {"record_v02", test_record_v02},
    {"target_rule", test_target_rule},
    {"dispatch_best", test_dispatch_best},
    {"dispatch_shipped", test_dispatch_shipped},
    {"dispatch_task_column", test_dispatch_task_column},
    {NULL, NULL},
};
