/*
 * test_graphrt_debug.c - the debug executor (profiles, traces, per-node
 * outputs) and the runtime's function registry, on the module of
 * graphrt_fixture.h.
 */
#include <cjson/cJSON.h>
#include <dlfcn.h>

#include "graphrt_fixture.h"

/* cJSON, to check the trace and JSON outputs independently.  It is the
 * runtime's private dependency, not linked into this binary, so reach the
 * copy the runtime loaded and walk the nodes by hand. */
static cJSON *j_parse(const char *text) {
  cJSON *(*parse)(const char *) = (cJSON * (*)(const char *)) dlsym(RTLD_DEFAULT, "cJSON_Parse");
  return parse ? parse(text) : NULL;
}

static void j_delete(cJSON *j) {
  void (*del)(cJSON *) = (void (*)(cJSON *))dlsym(RTLD_DEFAULT, "cJSON_Delete");
  if (del && j) del(j);
}

static int j_is(const cJSON *j, int type) { return j && (j->type & 0xFF) == type; }

static int j_size(const cJSON *j) {
  int n = 0;
  for (const cJSON *c = j ? j->child : NULL; c; c = c->next) n++;
  return n;
}

static cJSON *j_item(const cJSON *j, int i) {
  cJSON *c = j ? j->child : NULL;
  while (c && i--) c = c->next;
  return c;
}

static cJSON *j_get(const cJSON *j, const char *key) {
  for (cJSON *c = j_is(j, cJSON_Object) ? j->child : NULL; c; c = c->next)
    if (c->string && !strcmp(c->string, key)) return c;
  return NULL;
}

static const char *j_str(const cJSON *j) { return j_is(j, cJSON_String) ? j->valuestring : NULL; }

/* ---- the debug executor ---- */

/* Split a CSV line (RFC 4180 quoting) into at most max fields; returns the count. */
static int csv_fields(const char *line, char fields[][256], int max) {
  int n = 0;
  const char *p = line;
  for (;;) {
    char *f = fields[n];
    size_t k = 0;
    if (*p == '"') {
      for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
        if (*p == '"') p++;
        if (k < 255) f[k++] = *p;
      }
      if (*p == '"') p++;
    } else {
      for (; *p && *p != ',' && *p != '\r' && *p != '\n'; p++)
        if (k < 255) f[k++] = *p;
    }
    f[k] = 0;
    n++;
    if (*p != ',' || n == max) break;
    p++;
  }
  return n;
}

static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[n / 2];
}

/* Whether a profile's rows sum (total_us, the first try) to within a
 * factor 5 of a plain run, the median of 15 (and 500 us more: the graph
 * takes tens of us).  A machine shared with other work can preempt either
 * measurement for longer than the whole graph takes, so up to five tries,
 * each a fresh profile and fresh plain runs, the first that agrees
 * deciding; rows in the wrong unit or timing the wrong thing are off by
 * more on every try.  The last disagreement is the error. */
static bool profile_near_plain_run(KilnGraphExecutor *ex, double total_us) {
  for (int attempt = 0; attempt < 5; attempt++) {
    if (attempt) {
      KilnProfile *p;
      if (kiln_debug_profile(ex, 5, 3, &p)) return false;
      total_us = kiln_profile_total_us(p);
      kiln_profile_free(p);
    }
    double plain[15];
    for (int k = 0; k < 15; k++) {
      double t0 = kiln_now_seconds();
      if (kiln_graph_executor_run(ex)) return false;
      plain[k] = (kiln_now_seconds() - t0) * 1e6;
    }
    double plain_us = median(plain, 15);
    if (total_us < 5 * plain_us + 500 && total_us > plain_us / 5) return true;
    kiln_set_error("try %d: rows sum to %g us, a plain run takes %g us", attempt + 1, total_us, plain_us);
  }
  return false;
}

void test_debug_profile(void) {
  KilnModule *mod = gr_module();
  if (!mod) return;
  KilnGraphExecutor *ex;
  CHECK_OK(kiln_graph_executor_create(mod, &ex));
  if (!ex) return;
  DLTensor *x = gr_random_x();
  CHECK_OK(kiln_graph_executor_set_input(ex, 0, x));
  KilnProfile *p;
  CHECK(kiln_debug_profile(ex, 0, 1, &p) != 0);
  CHECK_STR(kiln_last_error(), "debug_profile: number and repeat must be at least 1, got 0 and 1");
  CHECK_OK(kiln_debug_profile(ex, 5, 3, &p));
  if (!p) return;
  CHECK(gr_check_outputs(ex, x) == 0); /* a profile leaves the outputs of a run */

  static const char *const names[6] = {"fused_add", "fused_multiply", "fused_nn_relu",
                                        "fused_multiply_1", "fused_add_1", "fused_nn_relu_1"};
  CHECK_INT(kiln_profile_num_rows(p), 6);
  double sum = 0;
  for (int i = 0; i < kiln_profile_num_rows(p); i++) {
    const KilnProfileRow *r = kiln_profile_row(p, i);
    CHECK_STR(r->name, names[i]);
    CHECK_INT(r->node, i + 3);
    CHECK(r->time_us > 0);
    CHECK(r->ndim == 1 && r->shape[0] == N);
    sum += r->time_us;
    if (i) CHECK(r->start_us >= kiln_profile_row(p, i - 1)->start_us);
  }
  CHECK(kiln_profile_row(p, 6) == NULL);
  CHECK(fabs(sum - kiln_profile_total_us(p)) < 1e-6 * sum + 1e-9);
  /* Ops: the function the node calls (fused_add_1 calls fused_add, as
   * TVM's debug executor shows it); Op List: kiln_ops, else that name */
  CHECK_STR(kiln_profile_row(p, 0)->ops, "fused_add");
  CHECK_STR(kiln_profile_row(p, 0)->op_list, "add");
  CHECK_STR(kiln_profile_row(p, 4)->ops, "fused_add");
  CHECK_STR(kiln_profile_row(p, 4)->op_list, "fused_add");
  CHECK_STR(kiln_profile_row(p, 1)->task, "dense_nopack.x86 [(1,65536),(65536,)] \xc2\xb7 records.json:12");
  CHECK_STR(kiln_profile_row(p, 2)->ops, "fused_nn_relu");
  CHECK_STR(kiln_profile_row(p, 2)->op_list, "fused_nn_relu");
  CHECK_STR(kiln_profile_row(p, 3)->task, "-"); /* a non-string kiln_task is ignored */
  CHECK_INT(kiln_profile_row(p, 4)->num_inputs, 2);
  CHECK_INT(kiln_profile_row(p, 5)->num_inputs, 1);

  /* the rows sum to about a plain run: never more than the timed runs
   * themselves, and within a sane factor of untimed ones */
  double run_us = kiln_profile_run_us(p), total = kiln_profile_total_us(p);
  CHECK_MSG(total <= run_us * 1.0001, "rows %g us, timed run %g us", total, run_us);
  CHECK_MSG(profile_near_plain_run(ex, total), "%s", kiln_last_error());

  /* the table */
  const char *table;
  CHECK_OK(kiln_profile_format(p, KILN_PROFILE_TABLE, &table));
  if (getenv("KILN_TEST_VERBOSE")) printf("%s", table);
  CHECK(strncmp(table, "Node Name ", 10) == 0);
  CHECK_CONTAINS(table, "Time(us)");
  CHECK_CONTAINS(table, "Task");
  CHECK_CONTAINS(table, "\n---------  ");
  CHECK_CONTAINS(table, "\nTotal_time ");
  for (int i = 0; i < 6; i++) CHECK_CONTAINS(table, kfmt("\n%s ", names[i]));
  CHECK_CONTAINS(table, "(65536,)");
  CHECK_CONTAINS(table, "dense_nopack.x86 [(1,65536),(65536,)] \xc2\xb7 records.json:12");
  /* sorted by time: each row's time is at most the previous one's */
  const char *line = strchr(strchr(table, '\n') + 1, '\n') + 1;
  double prev = INFINITY;
  int rows = 0;
  for (; strncmp(line, "Total_time", 10); line = strchr(line, '\n') + 1, rows++) {
    char name[64], ops[64];
    double t;
    CHECK(sscanf(line, "%63s %63s %lf", name, ops, &t) == 3);
    CHECK(t <= prev);
    prev = t;
  }
  CHECK_INT(rows, 6);

  /* CSV: header plus six rows of nine fields */
  const char *csv;
  CHECK_OK(kiln_profile_format(p, KILN_PROFILE_CSV, &csv));
  const char *header = "Node Name,Ops,Time(us),Time(%),Shape,Inputs,Outputs,Op List,Task\r\n";
  CHECK(strncmp(csv, header, strlen(header)) == 0);
  int nlines = 0;
  for (const char *l = csv; *l; l = strchr(l, '\n') + 1, nlines++) {
    char fields[10][256];
    CHECK_INT(csv_fields(l, fields, 10), 9);
    if (nlines) {
      CHECK_STR(fields[4], "(65536,)");
      /* Ops is the function called (TVM's meaning), Op List the graph ops */
      CHECK(!strncmp(fields[0], fields[1], strlen(fields[1])));
      CHECK(!strcmp(fields[7], "add") || !strcmp(fields[7], "multiply") || !strcmp(fields[7], fields[1]));
      CHECK(atof(fields[2]) > 0);
    }
  }
  CHECK_INT(nlines, 7);

  /* the Chrome trace: an array of complete events in run order */
  const char *trace;
  CHECK_OK(kiln_profile_format(p, KILN_PROFILE_TRACE, &trace));
  cJSON *tr = j_parse(trace);
  CHECK_NN(tr);
  CHECK(j_is(tr, cJSON_Array) && j_size(tr) == 6);
  double last_ts = -1;
  for (int i = 0; i < j_size(tr); i++) {
    cJSON *e = j_item(tr, i);
    CHECK_STR(j_str(j_get(e, "name")), names[i]);
    CHECK_STR(j_str(j_get(e, "ph")), "X");
    CHECK_STR(j_str(j_get(e, "cat")), "op");
    CHECK(j_is(j_get(e, "ts"), cJSON_Number) && j_is(j_get(e, "dur"), cJSON_Number));
    CHECK(j_is(j_get(e, "pid"), cJSON_Number) && j_is(j_get(e, "tid"), cJSON_Number));
    double ts = j_get(e, "ts")->valuedouble;
    CHECK(ts >= last_ts);
    last_ts = ts;
    cJSON *args = j_get(e, "args");
    CHECK(j_is(args, cJSON_Object));
    CHECK(j_is(j_get(args, "task"), cJSON_String));
  }
  j_delete(tr);

  /* JSON rows for bindings */
  const char *js;
  CHECK_OK(kiln_profile_format(p, KILN_PROFILE_JSON, &js));
  cJSON *j = j_parse(js);
  CHECK_NN(j);
  CHECK_INT(j_size(j_get(j, "rows")), 6);
  CHECK_INT(j_get(j, "repeat")->valuedouble, 3);
  j_delete(j);
  CHECK(kiln_profile_format(p, (KilnProfileFormat)7, &js) != 0);

  /* files */
  char *dir = kiln_mkdtemp("kiln-graphrt-");
  CHECK_NN(dir);
  if (dir) {
    const char *path = kfmt("%s/profile.csv", dir);
    CHECK_OK(kiln_profile_write(p, KILN_PROFILE_CSV, path));
    size_t flen;
    char *back = kiln_read_file(path, &flen);
    CHECK(back && !strcmp(back, csv));
    free(back);
    CHECK(kiln_profile_write(p, KILN_PROFILE_TRACE, kfmt("%s/no/such/dir/t.json", dir)) != 0);
    kiln_rmtree(dir);
    free(dir);
  }
  kiln_profile_free(p);
  CHECK_INT(kiln_profile_free(NULL), 0);
  kiln_array_free(x);
  kiln_graph_executor_free(ex);
}

/* ---- the registry ---- */

static int call(const char *name, int n, KilnValue *args, int *codes, KilnValue *ret, int *rc) {
  KilnFunction *f = NULL;
  if (kiln_func_get_global(name, &f) || !f) {
    test_fail(__FILE__, __LINE__, "no global function %s", name);
    return -1;
  }
  int r = kiln_func_call(f, args, codes, n, ret, rc);
  kiln_func_free(f);
  return r;
}

void test_registry(void) {
  KilnModule *mod = gr_module();
  if (!mod) return;
  KilnValue a[4], ret;
  int c[4], rc;
  a[0].v_handle = mod;
  c[0] = KILN_MODULE;
  CHECK_OK(call("runtime.graph_executor.create", 1, a, c, &ret, &rc));
  CHECK_INT(rc, KILN_HANDLE);
  void *h = ret.v_handle;
  KilnValue hv = {.v_handle = h};
  DLTensor *x = gr_random_x();
  a[0] = hv, c[0] = KILN_HANDLE;
  CHECK_OK(call("runtime.graph_executor.get_num_inputs", 1, a, c, &ret, &rc));
  CHECK(rc == KILN_INT && ret.v_int64 == 1);
  CHECK_OK(call("runtime.graph_executor.get_num_outputs", 1, a, c, &ret, &rc));
  CHECK(rc == KILN_INT && ret.v_int64 == 2);
  a[1].v_int64 = 0, c[1] = KILN_INT;
  CHECK_OK(call("runtime.graph_executor.get_input_name", 2, a, c, &ret, &rc));
  CHECK(rc == KILN_STR && !strcmp(ret.v_str, "x"));
  CHECK_OK(call("runtime.graph_executor.get_input_dtype", 2, a, c, &ret, &rc));
  CHECK(rc == KILN_STR && !strcmp(ret.v_str, "float32"));
  CHECK_OK(call("runtime.graph_executor.get_output_name", 2, a, c, &ret, &rc));
  CHECK(rc == KILN_STR && !strcmp(ret.v_str, "fused_nn_relu_1"));
  CHECK_OK(call("runtime.graph_executor.get_output_shape", 2, a, c, &ret, &rc));
  CHECK_INT(rc, KILN_NDARRAY);
  if (rc == KILN_NDARRAY) {
    DLTensor *s = ret.v_handle;
    CHECK(s->ndim == 1 && s->shape[0] == 1 && ((int64_t *)s->data)[0] == N);
    kiln_array_free(s);
  }
  a[1].v_str = "x", c[1] = KILN_STR;
  a[2].v_handle = x, c[2] = KILN_NDARRAY;
  CHECK_OK(call("runtime.graph_executor.set_input", 3, a, c, &ret, &rc));
  CHECK_OK(call("runtime.graph_executor.run", 1, a, c, &ret, &rc));
  a[1].v_int64 = 0, c[1] = KILN_INT;
  CHECK_OK(call("runtime.graph_executor.get_output", 2, a, c, &ret, &rc));
  CHECK_INT(rc, KILN_NDARRAY);
  if (rc == KILN_NDARRAY) {
    static float r0[N], r1[N];
    gr_reference(fdata(x), r0, r1);
    CHECK(memcmp(fdata(ret.v_handle), r0, sizeof r0) == 0);
    kiln_array_free(ret.v_handle);
  }
  CHECK_OK(call("runtime.graph_executor.get_planned_bytes", 1, a, c, &ret, &rc));
  CHECK(rc == KILN_INT && ret.v_int64 == 7 * 4 * N);
  CHECK_OK(call("runtime.graph_executor.get_naive_bytes", 1, a, c, &ret, &rc));
  CHECK(rc == KILN_INT && ret.v_int64 == 9 * 4 * N);
  KilnBytes pb = {gr_params, gr_params_size};
  a[1].v_handle = &pb, c[1] = KILN_BYTES;
  CHECK_OK(call("runtime.graph_executor.load_params", 2, a, c, &ret, &rc));
  /* errors name the function and the argument */
  c[1] = KILN_FLOAT;
  CHECK(call("runtime.graph_executor.set_input", 3, a, c, &ret, &rc) != 0);
  CHECK_STR(kiln_last_error(), "runtime.graph_executor.set_input: argument 1 must be an input index (int) or name (str), got float (type code 2)");
  CHECK(call("runtime.graph_executor.run", 0, a, c, &ret, &rc) != 0);
  CHECK_STR(kiln_last_error(), "runtime.graph_executor.run: expected 1 argument, got 0");

  /* profile */
  a[1].v_int64 = 2, c[1] = KILN_INT;
  a[2].v_int64 = 2, c[2] = KILN_INT;
  CHECK_OK(call("runtime.debug_executor.profile", 3, a, c, &ret, &rc));
  CHECK_INT(rc, KILN_HANDLE);
  KilnValue pv = {.v_handle = ret.v_handle};
  a[0] = pv;
  a[1].v_str = "table", c[1] = KILN_STR;
  CHECK_OK(call("runtime.profile.format", 2, a, c, &ret, &rc));
  CHECK(rc == KILN_STR && strstr(ret.v_str, "Total_time"));
  a[1].v_str = "json";
  CHECK_OK(call("runtime.profile.format", 2, a, c, &ret, &rc));
  CHECK(rc == KILN_STR && strstr(ret.v_str, "\"rows\":["));
  a[1].v_str = "xml";
  CHECK(call("runtime.profile.format", 2, a, c, &ret, &rc) != 0);
  CHECK_CONTAINS(kiln_last_error(), "format 'xml' is not one of table, csv, trace, json");
  /* handles carry type tags: a profile is not an executor, nor the reverse */
  CHECK(call("runtime.graph_executor.get_num_inputs", 1, a, c, &ret, &rc) != 0);
  CHECK_STR(kiln_last_error(), "runtime.graph_executor.get_num_inputs: argument 0 must be an executor handle (type "
                               "code 3), got a profile handle");
  a[0] = hv;
  a[1].v_str = "table";
  CHECK(call("runtime.profile.format", 2, a, c, &ret, &rc) != 0);
  CHECK_STR(kiln_last_error(), "runtime.profile.format: argument 0 must be a profile handle (type code 3), got an "
                               "executor handle");
  a[0] = pv;
  CHECK_OK(call("runtime.profile.free", 1, a, c, &ret, &rc));
  a[0] = hv;
  CHECK_OK(call("runtime.graph_executor.free", 1, a, c, &ret, &rc));

  /* from JSON text, with params */
  a[0].v_str = gr_graph_json((GraphOpts){0}), c[0] = KILN_STR;
  a[1].v_handle = mod, c[1] = KILN_MODULE;
  a[2].v_handle = &pb, c[2] = KILN_BYTES;
  CHECK_OK(call("runtime.graph_executor.create", 3, a, c, &ret, &rc));
  a[0].v_handle = ret.v_handle, c[0] = KILN_HANDLE;
  CHECK_OK(call("runtime.graph_executor.get_num_inputs", 1, a, c, &ret, &rc));
  CHECK_INT(ret.v_int64, 1);
  CHECK_OK(call("runtime.graph_executor.free", 1, a, c, &ret, &rc));
  a[0].v_str = gr_graph_json((GraphOpts){0}), c[0] = KILN_STR;
  CHECK_OK(call("runtime.graph_plan_memory", 1, a, c, &ret, &rc));
  CHECK(rc == KILN_STR && strstr(ret.v_str, "\"storage_id\":[\"list_int\",[0,1,2,3,4,5,4,6,4]]"));
  kiln_array_free(x);
}
