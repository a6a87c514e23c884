/*
 * graph_json.c - reading TVM's graph JSON into a validated JsonGraph.
 *
 * The format (DESIGN.md §3) is TVM's graph executor JSON:
 *
 *   {"nodes": [{"op": "null", "name": "data", "inputs": []},
 *              {"op": "tvm_op", "name": "fused_add",
 *               "attrs": {"func_name": "fused_add", "num_inputs": "2",
 *                         "num_outputs": "1", "flatten_data": "0"},
 *               "inputs": [[0, 0, 0], [1, 0, 0]]}, ...],
 *    "arg_nodes": [0, 1], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
 *    "attrs": {"shape": ["list_shape", [[1, 8], ...]],
 *              "dltype": ["list_str", ["float32", ...]],
 *              "storage_id": ["list_int", [0, 1, 2]],
 *              "device_index": ["list_int", [1, 1, 1]]}}
 *
 * An entry is one output of one node, numbered node_row_ptr[node] + index;
 * the graph-level attrs have one item per entry.  cJSON parses the text;
 * this file then walks the tree once, checking every field it uses (JSON
 * type, range, list lengths, inputs referring only to earlier nodes) and
 * naming the node or attribute in each message, so the executor can trust
 * the JsonGraph.  Fields it does not use are ignored, so Kiln's own node attrs
 * ("kiln_ops", "kiln_task", "kiln_config", kept for the profiler,
 * "kiln_inplace", the input an elementwise kernel may overwrite, read by the
 * memory planner, "kiln_output_name", the model's name of an output,
 * read by the executor; "kiln_report" and "kiln_report_cap", the output
 * dimension a data-dependent host function reports and its upper bound,
 * "kiln_report_grow": "1" when that bound is a first guess the executor
 * grows; "kiln_concat": "1", a concatenation whose inputs lie end to end
 * in its output, which the memory planner may make views of it)
 * do not disturb a TVM reader and TVM's extra fields
 * do not disturb this one.
 * Counts written as strings ("num_inputs": "2", as TVM writes them) or as
 * numbers are both accepted, and so are nodes' "attr" and "param" (older
 * spellings of "attrs").  storage_id and device_index are optional, and so
 * are Kiln's kiln_storage_id and kiln_storage_offset ["list_int", ...]: a
 * second plan, with views (an entry lying at a byte offset in a
 * concatenation's output's storage), which Kiln's executor uses in place of
 * storage_id; storage_id stays a plan without views, valid on its own, so
 * a TVM reader that ignores Kiln's attrs still runs the graph correctly
 * (the concatenation then copies).  An older JSON's kiln_storage_offset
 * without kiln_storage_id applies to storage_id.
 *
 * Also here: kiln_graph_json_plan_memory (plan a JSON's storage and write
 * storage_id back), as it is a JSON-to-JSON transformation.
 *
 * Exports: kiln_graph_json_plan_memory; internally kiln_graph_parse,
 * kiln_dtype_parse, kiln_graph_entry_bytes, kiln_graph_plan, kiln_graph_storage_ids,
 * kiln_graph_view_inputs,
 * kiln_put_shape.
 */
#include "runtime_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NDIM 64
#define MAX_OUTPUTS 65536

/* ---- small helpers ---- */

static const char *json_type(const cJSON *v) {
  if (!v) return "nothing";
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsArray(v)) return "an array";
  if (cJSON_IsObject(v)) return "an object";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNull(v)) return "null";
  return "an invalid value";
}

/* An integer in [lo, hi], given as a JSON number or a string of digits (TVM
 * writes node attrs as strings).  Sets a message without context. */
static int json_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out) {
  double d;
  if (cJSON_IsNumber(v)) {
    d = v->valuedouble;
  } else if (cJSON_IsString(v) && v->valuestring && *v->valuestring) {
    char *end;
    long long x = strtoll(v->valuestring, &end, 10);
    if (*end) return kiln_set_error("\"%.40s\" is not an integer", v->valuestring);
    d = (double)x;
  } else {
    return kiln_set_error("expected an integer, got %s", json_type(v));
  }
  if (!isfinite(d) || d != floor(d)) return kiln_set_error("%g is not an integer", d);
  if (d < (double)lo || d > (double)hi)
    return kiln_set_error("%.0f is outside %lld..%lld", d, (long long)lo, (long long)hi);
  *out = (int64_t)d;
  return 0;
}

static char *arena_strdup(KArena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = kiln_arena_alloc(a, n);
  memcpy(p, s, n);
  return p;
}

static char *arena_strndup(KArena *a, const char *s, size_t n) {
  char *p = kiln_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void kiln_put_shape(StrBuf *sb, int ndim, const int64_t *shape, int python_tuple) {
  sb_putc(sb, '(');
  for (int i = 0; i < ndim; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (python_tuple && ndim == 1) sb_putc(sb, ',');
  sb_putc(sb, ')');
}

int kiln_dtype_parse(const char *s, DLDataType *t) {
  static const struct {
    const char *prefix;
    int code;
  } kinds[] = {{"uint", kDLUInt},     {"int", kDLInt},        {"float", kDLFloat},
               {"bfloat", kDLBfloat}, {"complex", kDLComplex}};
  if (!s) return kiln_set_error("dtype is NULL");
  if (!strcmp(s, "bool")) {
    *t = (DLDataType){kDLUInt, 1, 1};
    return 0;
  }
  if (!strcmp(s, "handle")) {
    *t = (DLDataType){kDLOpaqueHandle, 64, 1};
    return 0;
  }
  if (!strcmp(s, "string")) {
    *t = (DLDataType){KILN_DL_STRING, 64, 1};
    return 0;
  }
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    size_t n = strlen(kinds[k].prefix);
    if (strncmp(s, kinds[k].prefix, n) || !(s[n] >= '0' && s[n] <= '9')) continue;
    char *end;
    long bits = strtol(s + n, &end, 10), lanes = 1;
    if (*end == 'x' && end[1] >= '0' && end[1] <= '9') lanes = strtol(end + 1, &end, 10);
    if (*end || bits <= 0 || bits > 255 || lanes <= 0 || lanes > 65535) break;
    *t = (DLDataType){(uint8_t)kinds[k].code, (uint8_t)bits, (uint16_t)lanes};
    if (kiln_dtype_check(*t)) return -1;
    return 0;
  }
  return kiln_set_error("'%.40s' is not a dtype (expected e.g. float32, int8, uint8, bool)", s);
}

uint64_t kiln_graph_entry_bytes(const JsonGraph *g, int e) {
  uint64_t n = kiln_dtype_bytes(g->entry_dtype[e]);
  for (int d = 0; d < g->entry_ndim[e]; d++) n *= (uint64_t)g->entry_shape[e][d];
  return n;
}

/* ---- the parser ---- */

typedef struct Parser {
  KArena *a;
  JsonGraph *g;
} Parser;

/* "node 4 ('fused_add')" into buf. */
static const char *node_desc(const JsonGraph *g, int n, char *buf, size_t size) {
  const char *name = g->nodes && g->nodes[n].name ? g->nodes[n].name : NULL;
  if (name) snprintf(buf, size, "node %d ('%.80s')", n, name);
  else snprintf(buf, size, "node %d", n);
  return buf;
}

/* "output 0 of node 4 ('fused_add')" for entry e. */
static const char *entry_desc(const JsonGraph *g, int e, char *buf, size_t size) {
  char nd[128];
  int n = g->entry_node[e];
  snprintf(buf, size, "entry %d = output %d of %s", e, e - g->nodes[n].first_entry,
           node_desc(g, n, nd, sizeof nd));
  return buf;
}

/* A [node, index(, version)] reference; *node and *index are checked
 * against the nodes before `before` (num_nodes for heads). */
static int parse_ref(const JsonGraph *g, const cJSON *v, int before, int32_t *node, int32_t *index) {
  int n = cJSON_GetArraySize(v);
  if (!cJSON_IsArray(v) || n < 2 || n > 3)
    return kiln_set_error("expected [node, index, version], got %s%s", json_type(v),
                          cJSON_IsArray(v) ? " of the wrong length" : "");
  int64_t nid, idx, ver;
  if (json_int(cJSON_GetArrayItem(v, 0), INT32_MIN, INT32_MAX, &nid))
    return kiln_error_context("its node");
  if (json_int(cJSON_GetArrayItem(v, 1), INT32_MIN, INT32_MAX, &idx))
    return kiln_error_context("its index");
  if (n == 3 && json_int(cJSON_GetArrayItem(v, 2), INT32_MIN, INT32_MAX, &ver))
    return kiln_error_context("its version");
  if (nid < 0 || nid >= g->num_nodes)
    return kiln_set_error("it refers to node %lld, which does not exist (the graph has %d nodes)",
                          (long long)nid, g->num_nodes);
  if (nid >= before)
    return kiln_set_error("it refers to node %lld, which does not come before it (nodes must be "
                          "in run order)", (long long)nid);
  if (idx < 0 || idx >= g->nodes[nid].num_outputs) {
    char nd[128];
    return kiln_set_error("it refers to output %lld of %s, which has %d output%s", (long long)idx,
                          node_desc(g, (int)nid, nd, sizeof nd), g->nodes[nid].num_outputs,
                          g->nodes[nid].num_outputs == 1 ? "" : "s");
  }
  *node = (int32_t)nid;
  *index = (int32_t)idx;
  return 0;
}

/* A node attribute as an optional string (absent or non-string: NULL). */
static const char *attr_str(Parser *p, const cJSON *attrs, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(attrs, key);
  return cJSON_IsString(v) && v->valuestring ? arena_strdup(p->a, v->valuestring) : NULL;
}

/* First pass over a node: everything but its inputs' references. */
static int parse_node(Parser *p, const cJSON *v, int i) {
  JsonGraph *g = p->g;
  GraphNode *nd = &g->nodes[i];
  char desc[128];
  if (!cJSON_IsObject(v))
    return kiln_set_error("graph JSON: node %d must be an object, got %s", i, json_type(v));
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
  if (!cJSON_IsString(name))
    return kiln_set_error("graph JSON: node %d: \"name\" must be a string, got %s", i,
                          json_type(name));
  nd->name = arena_strdup(p->a, name->valuestring);
  node_desc(g, i, desc, sizeof desc);
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(v, "op");
  if (!cJSON_IsString(op))
    return kiln_set_error("graph JSON: %s: \"op\" must be a string, got %s", desc, json_type(op));
  if (!strcmp(op->valuestring, "tvm_op")) nd->is_op = 1;
  else if (strcmp(op->valuestring, "null"))
    return kiln_set_error("graph JSON: %s: op is \"%.40s\", expected \"null\" or \"tvm_op\"", desc,
                          op->valuestring);
  const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(v, "attrs");
  if (!attrs) attrs = cJSON_GetObjectItemCaseSensitive(v, "attr");
  if (!attrs) attrs = cJSON_GetObjectItemCaseSensitive(v, "param");
  if (attrs && !cJSON_IsObject(attrs))
    return kiln_set_error("graph JSON: %s: \"attrs\" must be an object, got %s", desc,
                          json_type(attrs));
  const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(v, "inputs");
  if (inputs && !cJSON_IsArray(inputs))
    return kiln_set_error("graph JSON: %s: \"inputs\" must be an array, got %s", desc,
                          json_type(inputs));
  nd->num_inputs = cJSON_GetArraySize(inputs);
  nd->num_outputs = 1;
  if (!nd->is_op) {
    if (nd->num_inputs)
      return kiln_set_error("graph JSON: %s: a \"null\" node has no inputs, it has %d", desc,
                            nd->num_inputs);
    /* an input or a parameter that is also an output of the model, under
     * the model's name for that output */
    if (attrs) nd->kiln_output_name = attr_str(p, attrs, "kiln_output_name");
    return 0;
  }
  if (!attrs)
    return kiln_set_error("graph JSON: %s: a \"tvm_op\" node needs \"attrs\" with \"func_name\"",
                          desc);
  const cJSON *fn = cJSON_GetObjectItemCaseSensitive(attrs, "func_name");
  if (!cJSON_IsString(fn) || !*fn->valuestring)
    return kiln_set_error("graph JSON: %s: attrs.func_name must be a non-empty string, got %s",
                          desc, json_type(fn));
  nd->func_name = arena_strdup(p->a, fn->valuestring);
  int64_t x;
  const cJSON *a;
  if ((a = cJSON_GetObjectItemCaseSensitive(attrs, "num_outputs"))) {
    if (json_int(a, 1, MAX_OUTPUTS, &x))
      return kiln_error_context("graph JSON: %s: attrs.num_outputs", desc);
    nd->num_outputs = (int)x;
  }
  if ((a = cJSON_GetObjectItemCaseSensitive(attrs, "num_inputs"))) {
    if (json_int(a, 0, INT32_MAX, &x))
      return kiln_error_context("graph JSON: %s: attrs.num_inputs", desc);
    if (x != nd->num_inputs)
      return kiln_set_error("graph JSON: %s: attrs.num_inputs is %lld but \"inputs\" lists %d",
                            desc, (long long)x, nd->num_inputs);
  }
  if ((a = cJSON_GetObjectItemCaseSensitive(attrs, "flatten_data"))) {
    if (json_int(a, 0, 1, &x)) return kiln_error_context("graph JSON: %s: attrs.flatten_data", desc);
    nd->flatten_data = (int)x;
  }
  if ((a = cJSON_GetObjectItemCaseSensitive(attrs, "kiln_inplace"))) {
    if (json_int(a, 0, nd->num_inputs ? nd->num_inputs - 1 : 0, &x) || !nd->num_inputs)
      return kiln_error_context("graph JSON: %s: attrs.kiln_inplace (an input index)", desc);
    nd->inplace_input = (int)x + 1;
  }
  nd->kiln_ops = attr_str(p, attrs, "kiln_ops");
  nd->kiln_task = attr_str(p, attrs, "kiln_task");
  nd->kiln_config = attr_str(p, attrs, "kiln_config");
  nd->kiln_output_name = attr_str(p, attrs, "kiln_output_name");
  nd->kiln_host = attr_str(p, attrs, "kiln_host");
  const char *concat = attr_str(p, attrs, "kiln_concat");
  nd->concat_view = concat && !strcmp(concat, "1");
  nd->report_dim = -1;
  if ((a = cJSON_GetObjectItemCaseSensitive(attrs, "kiln_report"))) {
    if (json_int(a, 0, MAX_NDIM - 1, &x) || !nd->kiln_host)
      return kiln_error_context("graph JSON: %s: attrs.kiln_report (the output dimension a host function reports)", desc);
    nd->report_dim = (int)x;
    nd->report_cap = attr_str(p, attrs, "kiln_report_cap");
    if (!nd->report_cap || !*nd->report_cap)
      return kiln_set_error("graph JSON: %s: attrs.kiln_report needs attrs.kiln_report_cap (its upper bound)", desc);
    const char *grow = attr_str(p, attrs, "kiln_report_grow");
    nd->report_grow = grow && !strcmp(grow, "1");
  }
  return 0;
}

/* attrs.<key> = ["<tag>", [items...]] with one item per entry; *list gets
 * the items (NULL when optional and absent). */
static int graph_list(Parser *p, const cJSON *attrs, const char *key, const char *tag,
                      int required, const cJSON **list) {
  *list = NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(attrs, key);
  if (!v) {
    if (!required) return 0;
    return kiln_set_error("graph JSON: attrs.%s is missing (expected [\"%s\", [...]] with one item "
                          "per entry)", key, tag);
  }
  const cJSON *t = cJSON_GetArrayItem(v, 0), *items = cJSON_GetArrayItem(v, 1);
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || !cJSON_IsString(t) ||
      strcmp(t->valuestring, tag) || !cJSON_IsArray(items))
    return kiln_set_error("graph JSON: attrs.%s must be [\"%s\", [...]], got %s%s%s%s", key, tag,
                          json_type(v), cJSON_IsString(t) ? " tagged \"" : "",
                          cJSON_IsString(t) ? t->valuestring : "", cJSON_IsString(t) ? "\"" : "");
  int n = cJSON_GetArraySize(items);
  if (n != p->g->num_entries)
    return kiln_set_error("graph JSON: attrs.%s has %d items, expected %d (one per entry: the "
                          "nodes' outputs)", key, n, p->g->num_entries);
  *list = items;
  return 0;
}

/* Symbolic sizes (Kiln's attrs; docs/symbolic_shapes.md): kiln_symbols
 * ["list_str", ["N:1:64", ...]] and kiln_sym_shape, one string per entry
 * of its dimensions' postfix expressions joined by ';' ("" where static).
 * The expressions are checked when they are evaluated (graph_sym.c). */
/* The batch as an outer loop: kiln_batch ["list_str", ["N:lo:hi"]] and
 * kiln_batch_entry, per entry 1 where it carries the batch. */
static int parse_batch(Parser *p, const cJSON *attrs) {
  JsonGraph *g = p->g;
  const cJSON *flags;
  if (graph_list(p, attrs, "kiln_batch_entry", "list_int", 0, &flags)) return -1;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(attrs, "kiln_batch");
  if (!flags && !v) return 0;
  const cJSON *item = cJSON_GetArrayItem(cJSON_GetArrayItem(v, 1), 0);
  char name[64];
  long long lo, hi;
  if (!flags || !cJSON_IsString(item) || sscanf(item->valuestring, "%63[A-Za-z0-9_]:%lld:%lld", name, &lo, &hi) != 3 ||
      lo < 1 || lo > hi)
    return kiln_set_error("graph JSON: attrs.kiln_batch must be [\"list_str\", [\"N:lo:hi\"]] with "
                          "attrs.kiln_batch_entry");
  g->batch_name = arena_strdup(p->a, name);
  g->batch_lo = lo;
  g->batch_hi = hi;
  g->entry_batch = kiln_arena_alloc(p->a, (size_t)g->num_entries + 1);
  int e = 0;
  for (const cJSON *s = flags->child; s; s = s->next, e++) {
    int64_t f;
    if (json_int(s, 0, 1, &f)) return kiln_error_context("graph JSON: attrs.kiln_batch_entry[%d]", e);
    if (f && (g->entry_ndim[e] < 1 || g->entry_shape[e][0] != 1))
      return kiln_set_error("graph JSON: entry %d carries the batch but its dimension 0 is not 1", e);
    g->entry_batch[e] = (uint8_t)f;
  }
  /* kiln_batch_variants ["list_int", [4, 8]]: the batches of the batched
   * variants in the same module (blobs graph_json_b4, graph_json_b8) */
  const cJSON *bv = cJSON_GetObjectItemCaseSensitive(attrs, "kiln_batch_variants");
  if (!bv) return 0;
  const cJSON *tag = cJSON_GetArrayItem(bv, 0), *vl = cJSON_GetArrayItem(bv, 1);
  if (!cJSON_IsArray(bv) || cJSON_GetArraySize(bv) != 2 || !cJSON_IsString(tag) || strcmp(tag->valuestring, "list_int") ||
      !cJSON_IsArray(vl) || cJSON_GetArraySize(vl) > 64)
    return kiln_set_error("graph JSON: attrs.kiln_batch_variants must be [\"list_int\", [batches...]]");
  g->num_variants = cJSON_GetArraySize(vl);
  g->variant_batch = kiln_arena_alloc(p->a, sizeof(int64_t) * ((size_t)g->num_variants + 1));
  int i = 0;
  for (const cJSON *s = vl->child; s; s = s->next, i++)
    if (json_int(s, i ? g->variant_batch[i - 1] + 1 : 2, hi, &g->variant_batch[i]))
      return kiln_error_context("graph JSON: attrs.kiln_batch_variants[%d] (increasing batches from 2 to %lld)", i,
                                hi);
  return 0;
}

/* The model's sequences and optionals: kiln_values ["list_str", ["in
 * seq(3) x", ...]] (docs/sequences.md; checked by graph_values.c). */
static int parse_values(Parser *p, const cJSON *attrs) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(attrs, "kiln_values");
  if (!v) return 0;
  const cJSON *tag = cJSON_GetArrayItem(v, 0), *items = cJSON_GetArrayItem(v, 1);
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || !cJSON_IsString(tag) || strcmp(tag->valuestring, "list_str") ||
      !cJSON_IsArray(items))
    return kiln_set_error("graph JSON: attrs.kiln_values must be [\"list_str\", [\"in|out KIND NAME\", ...]]");
  p->g->num_value_lines = cJSON_GetArraySize(items);
  p->g->value_lines = kiln_arena_alloc(p->a, sizeof(char *) * ((size_t)p->g->num_value_lines + 1));
  int i = 0;
  for (const cJSON *s = items->child; s; s = s->next, i++) {
    if (!cJSON_IsString(s)) return kiln_set_error("graph JSON: attrs.kiln_values[%d] must be a string", i);
    p->g->value_lines[i] = arena_strdup(p->a, s->valuestring);
  }
  return 0;
}

static int parse_symbols(Parser *p, const cJSON *attrs) {
  JsonGraph *g = p->g;
  const cJSON *exprs;
  if (parse_batch(p, attrs) || parse_values(p, attrs)) return -1;
  if (graph_list(p, attrs, "kiln_sym_shape", "list_str", 0, &exprs)) return -1;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(attrs, "kiln_symbols");
  if (!exprs && !v) return 0;
  const cJSON *items = cJSON_GetArrayItem(v, 1);
  if (!exprs || !cJSON_IsArray(v) || !cJSON_IsArray(items))
    return kiln_set_error("graph JSON: attrs.kiln_symbols and attrs.kiln_sym_shape come together, "
                          "kiln_symbols as [\"list_str\", [\"N:lo:hi\", ...]]");
  int n = cJSON_GetArraySize(items);
  g->num_syms = n;
  g->sym_names = kiln_arena_alloc(p->a, (size_t)n * sizeof(char *) + 1);
  g->sym_lo = kiln_arena_alloc(p->a, (size_t)n * sizeof(int64_t) + 1);
  g->sym_hi = kiln_arena_alloc(p->a, (size_t)n * sizeof(int64_t) + 1);
  g->sym_value_entry = kiln_arena_alloc(p->a, (size_t)n * sizeof(int32_t) + 1);
  g->sym_value_elem = kiln_arena_alloc(p->a, (size_t)n * sizeof(int32_t) + 1);
  g->sym_value_scale = kiln_arena_alloc(p->a, (size_t)n * sizeof(double) + 1);
  int i = 0;
  for (const cJSON *s = items->child; s; s = s->next, i++) {
    /* the name, of any length (the compiler names a reported size after
     * the model's output), then the numbers */
    const char *txt = cJSON_IsString(s) ? s->valuestring : "", *colon = txt;
    while (*colon == '_' || isalnum((unsigned char)*colon)) colon++;
    char *name = arena_strndup(p->a, txt, (size_t)(colon - txt));
    long long lo, hi;
    int ve = -1, vi = -1, nf = 0;
    double scale = 0;
    if (!cJSON_IsString(s) || colon == txt ||
        ((nf = sscanf(colon, ":%lld:%lld:%d:%d:%lf", &lo, &hi, &ve, &vi, &scale) + 1) != 3 && nf != 5 && nf != 6) ||
        (lo < 0 && nf < 5) || lo > hi || (nf >= 5 && (ve < 0 || ve >= g->num_entries || vi < 0)) ||
        (nf == 6 && !(scale > 0 && scale < 1e18)))
      return kiln_set_error("graph JSON: attrs.kiln_symbols[%d] must be \"NAME:lo:hi\" (a size), "
                          "\"NAME:lo:hi:ENTRY:ELEMENT\" (a run-time shape value: an element of an input entry, or of an "
                          "operator's output, bound after it runs) or \"NAME:lo:hi:ENTRY:ELEMENT:SCALE\" (a float "
                          "run-time value, floor(element * SCALE), SCALE > 0)",
                          i);
    g->sym_names[i] = name;
    g->sym_lo[i] = lo;
    g->sym_hi[i] = hi;
    g->sym_value_entry[i] = nf >= 5 ? ve : -1;
    g->sym_value_elem[i] = nf >= 5 ? vi : -1;
    g->sym_value_scale[i] = nf == 6 ? scale : 0;
  }
  g->entry_sym = kiln_arena_alloc(p->a, (size_t)g->num_entries * sizeof(char *) + 1);
  int e = 0;
  for (const cJSON *s = exprs->child; s; s = s->next, e++) {
    if (!cJSON_IsString(s)) return kiln_set_error("graph JSON: attrs.kiln_sym_shape[%d] must be a string", e);
    g->entry_sym[e] = *s->valuestring ? arena_strdup(p->a, s->valuestring) : NULL;
  }
  return 0;
}

static int parse_entries(Parser *p, const cJSON *attrs) {
  JsonGraph *g = p->g;
  int ne = g->num_entries;
  char ed[200];
  const cJSON *shapes, *dtypes, *sids, *ksids, *offs, *devs;
  if (graph_list(p, attrs, "shape", "list_shape", 1, &shapes) ||
      graph_list(p, attrs, "dltype", "list_str", 1, &dtypes) ||
      graph_list(p, attrs, "storage_id", "list_int", 0, &sids) ||
      graph_list(p, attrs, "kiln_storage_id", "list_int", 0, &ksids) ||
      graph_list(p, attrs, "kiln_storage_offset", "list_int", 0, &offs) ||
      graph_list(p, attrs, "device_index", "list_int", 0, &devs))
    return -1;
  g->entry_ndim = kiln_arena_alloc(p->a, (size_t)ne * sizeof(int) + 1);
  g->entry_shape = kiln_arena_alloc(p->a, (size_t)ne * sizeof(int64_t *) + 1);
  g->entry_dtype = kiln_arena_alloc(p->a, (size_t)ne * sizeof(DLDataType) + 1);
  int e = 0;
  for (const cJSON *s = shapes->child; s; s = s->next, e++) {
    if (!cJSON_IsArray(s))
      return kiln_set_error("graph JSON: attrs.shape[%d] (%s) must be an array, got %s", e,
                            entry_desc(g, e, ed, sizeof ed), json_type(s));
    int nd = cJSON_GetArraySize(s);
    if (nd > MAX_NDIM)
      return kiln_set_error("graph JSON: attrs.shape[%d] (%s) has %d dimensions, at most %d", e,
                            entry_desc(g, e, ed, sizeof ed), nd, MAX_NDIM);
    g->entry_ndim[e] = nd;
    g->entry_shape[e] = kiln_arena_alloc(p->a, (size_t)nd * sizeof(int64_t) + 1);
    int d = 0;
    for (const cJSON *x = s->child; x; x = x->next, d++) {
      int64_t v = 0;
      if (json_int(x, 0, INT64_MAX / 2, &v))
        return kiln_error_context("graph JSON: attrs.shape[%d][%d] (%s)", e, d,
                                  entry_desc(g, e, ed, sizeof ed));
      g->entry_shape[e][d] = v;
    }
  }
  e = 0;
  for (const cJSON *s = dtypes->child; s; s = s->next, e++) {
    if (!cJSON_IsString(s))
      return kiln_set_error("graph JSON: attrs.dltype[%d] (%s) must be a string, got %s", e,
                            entry_desc(g, e, ed, sizeof ed), json_type(s));
    if (kiln_dtype_parse(s->valuestring, &g->entry_dtype[e]))
      return kiln_error_context("graph JSON: attrs.dltype[%d] (%s)", e,
                                entry_desc(g, e, ed, sizeof ed));
  }
  /* sizes must fit: check the product without overflow */
  for (e = 0; e < ne; e++) {
    uint64_t n = kiln_dtype_bytes(g->entry_dtype[e]);
    for (int d = 0; d < g->entry_ndim[e] && n; d++) {
      uint64_t x = (uint64_t)g->entry_shape[e][d];
      if (x && n > (uint64_t)INT64_MAX / x) {
        StrBuf sb = {0};
        kiln_put_shape(&sb, g->entry_ndim[e], g->entry_shape[e], 0);
        kiln_set_error("graph JSON: attrs.shape[%d] (%s): %s is too large", e,
                       entry_desc(g, e, ed, sizeof ed), sb.data);
        sb_free(&sb);
        return -1;
      }
      n *= x;
    }
  }
  /* Kiln's plan with views, when present, is the one Kiln uses */
  const char *sid_key = ksids ? "kiln_storage_id" : "storage_id";
  if (ksids && !offs)
    return kiln_set_error("graph JSON: attrs.kiln_storage_id needs attrs.kiln_storage_offset");
  if (ksids) sids = ksids;
  if (sids) {
    g->storage_id = kiln_arena_alloc(p->a, (size_t)ne * sizeof(int32_t) + 1);
    e = 0;
    for (const cJSON *s = sids->child; s; s = s->next, e++) {
      int64_t v = 0;
      if (json_int(s, 0, INT32_MAX, &v))
        return kiln_error_context("graph JSON: attrs.%s[%d] (%s)", sid_key, e,
                                  entry_desc(g, e, ed, sizeof ed));
      g->storage_id[e] = (int32_t)v;
    }
  }
  if (offs && !sids)
    return kiln_set_error("graph JSON: attrs.kiln_storage_offset needs attrs.storage_id");
  if (offs) {
    g->storage_offset = kiln_arena_alloc(p->a, (size_t)ne * sizeof(uint64_t) + 1);
    e = 0;
    for (const cJSON *s = offs->child; s; s = s->next, e++) {
      int64_t v = 0;
      if (json_int(s, 0, INT64_MAX / 2, &v))
        return kiln_error_context("graph JSON: attrs.kiln_storage_offset[%d] (%s)", e,
                                  entry_desc(g, e, ed, sizeof ed));
      g->storage_offset[e] = (uint64_t)v;
    }
  }
  if (devs) {
    g->device_type = kiln_arena_alloc(p->a, (size_t)ne * sizeof(int32_t) + 1);
    e = 0;
    for (const cJSON *s = devs->child; s; s = s->next, e++) {
      int64_t v = 0;
      if (json_int(s, 0, INT32_MAX, &v))
        return kiln_error_context("graph JSON: attrs.device_index[%d] (%s)", e,
                                  entry_desc(g, e, ed, sizeof ed));
      g->device_type[e] = (int32_t)v;
    }
  }
  return parse_symbols(p, attrs);
}

/* "error at line 3, column 14 (byte 57 of 120)" */
static int parse_error(const char *json, size_t len, const char *at) {
  size_t off = at && at >= json && at <= json + len ? (size_t)(at - json) : len;
  int line = 1, col = 1;
  for (size_t i = 0; i < off; i++) {
    if (json[i] == '\n') line++, col = 1;
    else col++;
  }
  size_t rest = off;
  while (rest < len && strchr(" \t\r\n", json[rest])) rest++; /* NUL counts as blank */
  if (rest >= len)
    return kiln_set_error("graph JSON does not parse: it ends too early (after %zu bytes, line %d, "
                          "column %d): truncated?", len, line, col);
  char near[24];
  size_t n = len - off < 16 ? len - off : 16;
  memcpy(near, json + off, n);
  near[n] = 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)near[i] < 32) near[i] = ' ';
  return kiln_set_error("graph JSON does not parse: error at line %d, column %d (byte %zu of %zu) "
                        "near \"%s\"", line, col, off, len, near);
}

static int parse_tree(Parser *p, const cJSON *root) {
  JsonGraph *g = p->g;
  KArena *a = p->a;
  char desc[128];
  if (!cJSON_IsObject(root))
    return kiln_set_error("graph JSON: the top level must be an object, got %s", json_type(root));
  const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
  if (!cJSON_IsArray(nodes))
    return kiln_set_error("graph JSON: \"nodes\" must be an array, got %s", json_type(nodes));
  g->num_nodes = cJSON_GetArraySize(nodes);
  g->nodes = kiln_arena_alloc(a, (size_t)g->num_nodes * sizeof(GraphNode) + 1);
  int i = 0;
  for (const cJSON *v = nodes->child; v; v = v->next, i++)
    if (parse_node(p, v, i)) return -1;

  /* node_row_ptr: checked against num_outputs, or computed */
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "node_row_ptr");
  int64_t total = 0;
  if (rows && (!cJSON_IsArray(rows) || cJSON_GetArraySize(rows) != g->num_nodes + 1))
    return kiln_set_error("graph JSON: \"node_row_ptr\" must be an array of %d integers (one per "
                          "node, plus one), got %s%s", g->num_nodes + 1, json_type(rows),
                          cJSON_IsArray(rows) ? " of the wrong length" : "");
  const cJSON *r = rows ? rows->child : NULL;
  for (i = 0; i <= g->num_nodes; i++) {
    if (r) {
      int64_t v = 0;
      if (json_int(r, 0, INT32_MAX, &v)) return kiln_error_context("graph JSON: node_row_ptr[%d]", i);
      if (v != total)
        return kiln_set_error("graph JSON: node_row_ptr[%d] is %lld, expected %lld (%s has %d "
                              "output%s)", i, (long long)v, (long long)total,
                              i ? node_desc(g, i - 1, desc, sizeof desc) : "nothing",
                              i ? g->nodes[i - 1].num_outputs : 0,
                              i && g->nodes[i - 1].num_outputs == 1 ? "" : "s");
      r = r->next;
    }
    if (i < g->num_nodes) {
      g->nodes[i].first_entry = (int32_t)total;
      total += g->nodes[i].num_outputs;
      if (total > INT32_MAX / 2) return kiln_set_error("graph JSON: too many entries");
    }
  }
  g->num_entries = (int)total;
  g->entry_node = kiln_arena_alloc(a, (size_t)total * sizeof(int32_t) + 1);
  for (i = 0; i < g->num_nodes; i++)
    for (int k = 0; k < g->nodes[i].num_outputs; k++) g->entry_node[g->nodes[i].first_entry + k] = i;

  /* inputs, now that every node's outputs are known */
  i = 0;
  for (const cJSON *v = nodes->child; v; v = v->next, i++) {
    GraphNode *nd = &g->nodes[i];
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(v, "inputs");
    nd->inputs = kiln_arena_alloc(a, (size_t)nd->num_inputs * sizeof(int32_t) + 1);
    int k = 0;
    for (const cJSON *in = inputs ? inputs->child : NULL; in; in = in->next, k++) {
      int32_t nid, idx;
      if (parse_ref(g, in, i, &nid, &idx))
        return kiln_error_context("graph JSON: %s: input %d", node_desc(g, i, desc, sizeof desc), k);
      nd->inputs[k] = g->nodes[nid].first_entry + idx;
    }
  }

  /* arg_nodes: "null" nodes, each once; computed when absent */
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(root, "arg_nodes");
  if (args && !cJSON_IsArray(args))
    return kiln_set_error("graph JSON: \"arg_nodes\" must be an array, got %s", json_type(args));
  uint8_t *seen = kiln_arena_alloc(a, (size_t)g->num_nodes + 1);
  if (args) {
    g->num_args = cJSON_GetArraySize(args);
    g->arg_nodes = kiln_arena_alloc(a, (size_t)g->num_args * sizeof(int32_t) + 1);
    i = 0;
    for (const cJSON *v = args->child; v; v = v->next, i++) {
      int64_t nid;
      if (json_int(v, 0, g->num_nodes - 1, &nid))
        return kiln_error_context("graph JSON: arg_nodes[%d] (a node id)", i);
      if (g->nodes[nid].is_op)
        return kiln_set_error("graph JSON: arg_nodes[%d] is %s, a \"tvm_op\" node; arguments are "
                              "\"null\" nodes", i, node_desc(g, (int)nid, desc, sizeof desc));
      if (seen[nid])
        return kiln_set_error("graph JSON: arg_nodes[%d]: %s is listed twice", i,
                              node_desc(g, (int)nid, desc, sizeof desc));
      seen[nid] = 1;
      g->arg_nodes[i] = (int32_t)nid;
    }
  } else {
    g->arg_nodes = kiln_arena_alloc(a, (size_t)g->num_nodes * sizeof(int32_t) + 1);
    for (i = 0; i < g->num_nodes; i++)
      if (!g->nodes[i].is_op) g->arg_nodes[g->num_args++] = i;
  }

  const cJSON *heads = cJSON_GetObjectItemCaseSensitive(root, "heads");
  if (!cJSON_IsArray(heads))
    return kiln_set_error("graph JSON: \"heads\" must be an array of [node, index, version], got %s",
                          json_type(heads));
  g->num_heads = cJSON_GetArraySize(heads);
  g->heads = kiln_arena_alloc(a, (size_t)g->num_heads * sizeof(int32_t) + 1);
  i = 0;
  for (const cJSON *v = heads->child; v; v = v->next, i++) {
    int32_t nid, idx;
    if (parse_ref(g, v, g->num_nodes, &nid, &idx))
      return kiln_error_context("graph JSON: heads[%d]", i);
    g->heads[i] = g->nodes[nid].first_entry + idx;
  }

  const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(root, "attrs");
  if (!cJSON_IsObject(attrs))
    return kiln_set_error("graph JSON: \"attrs\" must be an object (with shape, dltype, "
                          "storage_id), got %s", json_type(attrs));
  return parse_entries(p, attrs);
}

/* Parse text into a cJSON tree; trailing whitespace and NULs are fine. */
static cJSON *parse_text(const char *json, size_t len) {
  if (!json) {
    kiln_set_error("graph JSON is NULL");
    return NULL;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!root) {
    parse_error(json, len, end);
    return NULL;
  }
  for (const char *q = end; q && q < json + len; q++) {
    if (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r' || *q == 0) continue;
    parse_error(json, len, q);
    kiln_error_context("graph JSON has text after its top-level object");
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

int kiln_graph_parse(const char *json, size_t len, KArena *arena, JsonGraph *g) {
  memset(g, 0, sizeof *g);
  cJSON *root = parse_text(json, len);
  if (!root) return -1;
  Parser p = {arena, g};
  int rc = parse_tree(&p, root);
  cJSON_Delete(root);
  return rc;
}

/* ---- planning ---- */

int kiln_graph_plan(const JsonGraph *g, int32_t *storage_id, uint64_t *storage_offset,
                    KilnMemoryPlan *plan) {
  KilnPlanNode *nodes = xcalloc((size_t)g->num_nodes + 1, sizeof *nodes);
  uint64_t *bytes = xcalloc((size_t)g->num_entries + 1, sizeof *bytes);
  /* views only where asked for (storage_offset) and every entry has one
   * static size and is plain memory */
  bool views = storage_offset && !g->batch_name && !g->num_syms;
  for (int i = 0; i < g->num_nodes; i++) {
    const GraphNode *nd = &g->nodes[i];
    nodes[i].kind = !nd->is_op                       ? KILN_PLAN_ARG
                    : !strcmp(nd->func_name, "__nop") ? KILN_PLAN_ALIAS
                    : nd->concat_view && views       ? KILN_PLAN_CONCAT
                                                      : KILN_PLAN_OP;
    nodes[i].num_inputs = nd->num_inputs;
    nodes[i].inputs = nd->inputs;
    nodes[i].first_output = nd->first_entry;
    nodes[i].num_outputs = nd->num_outputs;
    nodes[i].inplace_input = nd->inplace_input;
  }
  for (int e = 0; e < g->num_entries; e++) bytes[e] = kiln_graph_entry_bytes(g, e);
  int rc = storage_offset
               ? kiln_graph_plan_memory_views(g->num_nodes, nodes, g->num_entries, bytes, g->device_type,
                                              g->num_heads, g->heads, storage_id, storage_offset, plan)
               : kiln_graph_plan_memory(g->num_nodes, nodes, g->num_entries, bytes, g->device_type,
                                        g->num_heads, g->heads, storage_id, plan);
  free(nodes);
  free(bytes);
  return rc;
}

int kiln_graph_view_inputs(const JsonGraph *g, const int32_t *storage_id, uint8_t *is_view) {
  int n_views = 0;
  memset(is_view, 0, (size_t)g->num_entries);
  for (int n = 0; n < g->num_nodes; n++) {
    const GraphNode *nd = &g->nodes[n];
    if (!nd->is_op || !nd->concat_view || nd->num_outputs != 1) continue;
    for (int i = 0; i < nd->num_inputs; i++) {
      int e = nd->inputs[i];
      if (storage_id[e] != storage_id[nd->first_entry] || is_view[e]) continue;
      is_view[e] = 1;
      n_views++;
    }
  }
  return n_views;
}

int kiln_graph_storage_ids(const JsonGraph *g, int32_t *storage_id, uint64_t *storage_offset,
                           int *num_storage, int *planned_here) {
  *num_storage = 0;
  *planned_here = 0;
  if (g->storage_id) {
    /* dense ids in order of first use, whatever numbers the JSON chose */
    PtrMap ids = {0};
    for (int e = 0; e < g->num_entries; e++) {
      void *key = (void *)(intptr_t)((int64_t)g->storage_id[e] + 1);
      intptr_t id = (intptr_t)pm_get(&ids, key);
      if (!id) pm_put(&ids, key, (void *)(id = ++*num_storage));
      storage_id[e] = (int32_t)(id - 1);
      storage_offset[e] = g->storage_offset ? g->storage_offset[e] : 0;
    }
    pm_free(&ids);
    return 0;
  }
  KilnMemoryPlan plan;
  if (kiln_graph_plan(g, storage_id, storage_offset, &plan)) return -1;
  *num_storage = plan.num_storage;
  *planned_here = 1;
  return 0;
}

/* attrs[key] = ["list_int", [v...]], replacing one there */
static void put_list_int(cJSON *attrs, const char *key, int n, const int32_t *v32, const uint64_t *v64) {
  cJSON *list = cJSON_CreateArray(), *vals = cJSON_CreateArray();
  cJSON_AddItemToArray(list, cJSON_CreateString("list_int"));
  for (int e = 0; e < n; e++)
    cJSON_AddItemToArray(vals, cJSON_CreateNumber(v32 ? (double)v32[e] : (double)v64[e]));
  cJSON_AddItemToArray(list, vals);
  cJSON_DeleteItemFromObjectCaseSensitive(attrs, key);
  cJSON_AddItemToObject(attrs, key, list);
}

int kiln_graph_json_plan_memory(const char *json, size_t len, char **out, KilnMemoryPlan *plan) {
  if (!out) return kiln_set_error("graph_json_plan_memory: out is NULL");
  *out = NULL;
  if (json && !len) len = strlen(json);
  KArena *a = kiln_arena_new();
  JsonGraph g;
  cJSON *root = NULL;
  int rc = -1;
  if (kiln_graph_parse(json, len, a, &g)) goto done;
  int32_t *sid = kiln_arena_alloc(a, (size_t)g.num_entries * sizeof(int32_t) + 1);
  int32_t *view_sid = kiln_arena_alloc(a, (size_t)g.num_entries * sizeof(int32_t) + 1);
  uint64_t *off = kiln_arena_alloc(a, (size_t)g.num_entries * sizeof(uint64_t) + 1);
  KilnMemoryPlan made;
  if (!plan) plan = &made;
  /* Kiln's plan (with views), and storage_id without views for TVM's
   * readers, which ignore kiln_storage_id and kiln_storage_offset */
  if (kiln_graph_plan(&g, view_sid, off, plan)) goto done;
  if (plan->num_views && kiln_graph_plan(&g, sid, NULL, NULL)) goto done;
  root = parse_text(json, len);
  KASSERT(root != NULL); /* it parsed above */
  cJSON *attrs = cJSON_GetObjectItemCaseSensitive(root, "attrs");
  put_list_int(attrs, "storage_id", g.num_entries, plan->num_views ? sid : view_sid, NULL);
  cJSON_DeleteItemFromObjectCaseSensitive(attrs, "kiln_storage_id");
  cJSON_DeleteItemFromObjectCaseSensitive(attrs, "kiln_storage_offset");
  if (plan->num_views) {
    put_list_int(attrs, "kiln_storage_id", g.num_entries, view_sid, NULL);
    put_list_int(attrs, "kiln_storage_offset", g.num_entries, NULL, off);
  }
  char *text = cJSON_PrintUnformatted(root);
  KASSERT(text != NULL);
  *out = xstrdup(text); /* cJSON's allocator may not be ours: hand out a copy */
  cJSON_free(text);
  rc = 0;
done:
  cJSON_Delete(root);
  kiln_arena_free(a);
  return rc;
}
