/*
 * graphrt_fixture.c - the module, graph JSON and reference the graph-runtime
 * tests share (graphrt_fixture.h says what they are).
 */
#include "graphrt_fixture.h"

/* ---- the graph JSON ---- */


char *gr_graph_json(GraphOpts o) {
  StrBuf sb = {0};
  sb_puts(&sb, "{\n  \"nodes\": [\n");
  sb_puts(&sb, "    {\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n");
  sb_puts(&sb, "    {\"op\": \"null\", \"name\": \"p_b\", \"inputs\": []},\n");
  sb_puts(&sb, "    {\"op\": \"null\", \"name\": \"p_w\", \"inputs\": []},\n");
  sb_printf(&sb, "    {\"op\": \"tvm_op\", \"name\": \"fused_add\", \"attrs\": {\"func_name\": "
                 "\"fused_add\", \"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": "
                 "\"%d\", \"kiln_ops\": \"add\"}, \"inputs\": [[0, 0, 0], [1, 0, 0]]},\n",
            o.x2d && o.flatten);
  sb_puts(&sb, "    {\"op\": \"tvm_op\", \"name\": \"fused_multiply\", \"attrs\": {\"func_name\": "
               "\"fused_multiply\", \"num_inputs\": \"2\", \"num_outputs\": \"1\", "
               "\"flatten_data\": \"0\", \"kiln_ops\": \"multiply\", \"kiln_task\": "
               "\"dense_nopack.x86 [(1,65536),(65536,)]\", \"kiln_config\": \"records.json:12\"}, "
               "\"inputs\": [[3, 0, 0], [2, 0, 0]]},\n");
  sb_puts(&sb, "    {\"op\": \"tvm_op\", \"name\": \"fused_nn_relu\", \"attrs\": {\"func_name\": "
               "\"fused_nn_relu\", \"num_inputs\": \"1\", \"num_outputs\": \"1\", "
               "\"flatten_data\": \"0\"}, \"inputs\": [[4, 0, 0]]},\n");
  sb_puts(&sb, "    {\"op\": \"tvm_op\", \"name\": \"fused_multiply_1\", \"attrs\": {\"func_name\": "
               "\"fused_multiply\", \"num_inputs\": 2, \"num_outputs\": 1, \"flatten_data\": 0, "
               "\"kiln_task\": {\"not\": \"a string\"}}, \"inputs\": [[5, 0, 0], [2, 0, 0]]},\n");
  sb_puts(&sb, "    {\"op\": \"tvm_op\", \"name\": \"fused_add_1\", \"attrs\": {\"func_name\": "
               "\"fused_add\", \"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": "
               "\"0\"}, \"inputs\": [[6, 0, 0], [3, 0, 0]]},\n");
  sb_puts(&sb, "    {\"op\": \"tvm_op\", \"name\": \"fused_nn_relu_1\", \"attrs\": {\"func_name\": "
               "\"fused_nn_relu\", \"num_inputs\": \"1\", \"num_outputs\": \"1\", "
               "\"flatten_data\": \"0\"}, \"inputs\": [[7, 0, 0]]}\n");
  sb_puts(&sb, "  ],\n  \"arg_nodes\": [0, 1, 2],\n  \"heads\": [[8, 0, 0], [5, 0, 0]],\n");
  sb_puts(&sb, "  \"attrs\": {\n    \"dltype\": [\"list_str\", [\"float32\", \"float32\", "
               "\"float32\", \"float32\", \"float32\", \"float32\", \"float32\", \"float32\", "
               "\"float32\"]],\n");
  if (o.storage_id)
    sb_puts(&sb, "    \"storage_id\": [\"list_int\", [0, 1, 2, 3, 4, 5, 4, 6, 4]],\n");
  sb_puts(&sb, "    \"device_index\": [\"list_int\", [1, 1, 1, 1, 1, 1, 1, 1, 1]],\n");
  sb_puts(&sb, "    \"shape\": [\"list_shape\", [");
  for (int e = 0; e < 9; e++) {
    if (e == 0 && o.x2d) sb_printf(&sb, "[256, %d]", N / 256);
    else sb_printf(&sb, "%s[%d]", e ? ", " : "", N);
  }
  sb_puts(&sb, "]]\n  },\n  \"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n}\n");
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

/* ---- the module ---- */

DLTensor *gr_b, *gr_w;        /* the params */
void *gr_params;             /* their blob */
size_t gr_params_size;
static KilnModule *gr_mod;

KilnModule *gr_module(void) {
  if (gr_mod) return gr_mod;
  int64_t n = N;
  gr_b = tk_array(1, &n, DT_F32);
  gr_w = tk_array(1, &n, DT_F32);
  tk_fill_random(gr_b);
  tk_fill_random(gr_w);
  const char *names[2] = {"p_b", "p_w"};
  DLTensor *arrays[2] = {gr_b, gr_w};
  if (kiln_params_save(2, names, arrays, &gr_params, &gr_params_size)) return NULL;
  LoweredFunc *fs[3] = {tk_lower_binary("fused_add", N, false), tk_lower_binary("fused_multiply", N, true),
                        tk_lower_relu("fused_nn_relu", N)};
  char *json = gr_graph_json((GraphOpts){0});
  KBlob blobs[2] = {{"graph_json", json, strlen(json)}, {"params", gr_params, gr_params_size}};
  gr_mod = kiln_build_funcs(fs, 3, 2, blobs, NULL);
  return gr_mod;
}

/* The outputs for input x, in C. */
void gr_reference(const float *x, float *out0, float *out1) {
  const float *b = fdata(gr_b), *w = fdata(gr_w);
  for (int i = 0; i < N; i++) {
    float e3 = x[i] + b[i], e4 = e3 * w[i], e5 = e4 > 0 ? e4 : 0, e6 = e5 * w[i], e7 = e6 + e3;
    out0[i] = e7 > 0 ? e7 : 0;
    out1[i] = e5;
  }
}

/* Run ex on x and compare both outputs with the reference; 0 if equal. */
int gr_check_outputs(KilnGraphExecutor *ex, DLTensor *x) {
  static float r0[N], r1[N];
  gr_reference(fdata(x), r0, r1);
  DLTensor *o0 = NULL, *o1 = NULL;
  int bad = 0;
  if (kiln_graph_executor_get_output(ex, 0, &o0) || kiln_graph_executor_get_output(ex, 1, &o1)) {
    test_fail(__FILE__, __LINE__, "get_output: %s", kiln_last_error());
    bad = 1;
  } else {
    bad = memcmp(fdata(o0), r0, sizeof r0) != 0 || memcmp(fdata(o1), r1, sizeof r1) != 0;
  }
  kiln_array_free(o0);
  kiln_array_free(o1);
  return bad;
}

DLTensor *gr_random_x(void) {
  int64_t n = N;
  DLTensor *x = tk_array(1, &n, DT_F32);
  tk_fill_random(x);
  return x;
}
