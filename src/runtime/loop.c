/*
 * loop.c - ONNX Loop with a trip count or a condition known only at run
 * time (docs/symbolic_shapes.md section 4d).
 *
 * The compiler builds the body as a graph of its own into the same module
 * (blob graph_json_loop<K>, kernels loop<K>_...), and gives each output of
 * the Loop a node calling "runtime.loop" (the graph op loop.output) over
 *   [M] [cond] v_initial... outer...
 * (M and cond when the model gives them; the outer values the body reads,
 * after the carried ones).  Its attributes (attrs.kiln_host) say which:
 *   {"body": K, "output": o, "ncarry": N, "nscan": S, "m": 0|1,
 *    "cond": 0|1, "node": [the model's name of the Loop],
 *    "inputs": [iteration, condition, carried...],
 *    "outer": [names of the outer values in the body]}
 * The first of a body's nodes in run order runs the loop: it makes the
 * body's executor (once, from the blob), reads M and the condition, and
 * runs the body while i < M and the condition holds, feeding iteration
 * i + 1 the carried values iteration i gave and appending each scan
 * output's row.  It keeps the results; every node of the body then
 * copies its own output (carried value o, or scan output o - N: the rows
 * run, a size it reports like a NonZero's count, section 4c).
 *
 * Shapes: a carried value keeps its shape through the iterations and a
 * scan output keeps one row shape, the one the compiler planned; a body
 * that gives another shape is an error naming the iteration, not a
 * resize.  Each iteration copies the carried values in and out (the
 * body's outputs may share memory with its inputs).
 *
 * Exports: kiln_loop_setup_op, kiln_loop_free.
 */
#include "runtime_internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* One value a loop keeps between its nodes: a carried value, or a scan
 * output's rows. */
typedef struct LoopVal {
  DLDataType dtype;
  int ndim;            /* of a carried value, or of a row */
  int64_t shape[64];    /* the graph JSON's most dimensions */
  uint64_t row_bytes;  /* bytes of the value, or of a row */
  char *data;          /* capacity cap bytes */
  uint64_t cap;
} LoopVal;

struct KilnLoopState {
  KilnGraphExecutor *body; /* made on first use */
  int first_op;            /* the index in ex->ops of the node that runs the loop */
  int ncarry, nscan;
  LoopVal *carried, *next, *scans;
  int64_t iters;           /* iterations the last run made */
};

/* One node: its executor, its op, which output. */
typedef struct LoopOp {
  KilnGraphExecutor *ex;
  GraphOp *op;
  int body, output, ncarry, nscan, has_m, has_cond;
  int ninputs;             /* 2 + ncarry */
  char **inputs;           /* the body's formal inputs */
  int nouter;
  char **outer;            /* the body's names of the outer values */
  int nname;
  char **name;             /* the model's name of the Loop, for errors */
} LoopOp;

static void loop_op_free(void *p) {
  LoopOp *lo = p;
  for (int i = 0; lo && i < lo->ninputs; i++) free(lo->inputs[i]);
  for (int i = 0; lo && i < lo->nouter; i++) free(lo->outer[i]);
  for (int i = 0; lo && i < lo->nname; i++) free(lo->name[i]);
  if (lo) free(lo->inputs), free(lo->outer), free(lo->name);
  free(lo);
}

static int val_reserve(LoopVal *v, uint64_t bytes) {
  if (bytes <= v->cap) return 0;
  uint64_t cap = v->cap ? v->cap : 64;
  while (cap < bytes) cap *= 2;
  char *d = realloc(v->data, cap);
  if (!d) return kiln_set_error("out of memory (%llu bytes for a loop's values)", (unsigned long long)cap);
  v->data = d;
  v->cap = cap;
  return 0;
}

static uint64_t tensor_bytes(const DLTensor *t) {
  uint64_t n = kiln_dtype_bytes(t->dtype);
  for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
  return n;
}

static const void *tensor_data(const DLTensor *t) { return (const char *)t->data + t->byte_offset; }

static bool same_shape(int nd, const int64_t *s, const DLTensor *t) {
  if (t->ndim != nd) return false;
  for (int d = 0; d < nd; d++)
    if (t->shape[d] != s[d]) return false;
  return true;
}

/* "(1, 3)"; two live at once (an error names two shapes). */
static const char *shape_str(int nd, const int64_t *s) {
  static __thread char bufs[2][160];
  static __thread int next;
  char *buf = bufs[next ^= 1];
  StrBuf sb = {0};
  kiln_put_shape(&sb, nd, s, 1);
  snprintf(buf, sizeof bufs[0], "%s", sb.data ? sb.data : "()");
  sb_free(&sb);
  return buf;
}

void kiln_loop_free(KilnGraphExecutor *ex) {
  for (int b = 0; b < ex->num_loops; b++) {
    KilnLoopState *st = &ex->loops[b];
    kiln_graph_executor_free(st->body);
    for (int i = 0; i < st->ncarry; i++) free(st->carried[i].data), free(st->next[i].data);
    for (int i = 0; i < st->nscan; i++) free(st->scans[i].data);
    free(st->carried);
    free(st->next);
    free(st->scans);
  }
  free(ex->loops);
  ex->loops = NULL;
  ex->num_loops = 0;
}

/* Set body input `name` to t (a copy); a name the body dropped is skipped. */
static int set_body_input(KilnGraphExecutor *body, const char *name, const DLTensor *t) {
  int idx;
  if (kiln_graph_executor_input_index(body, name, &idx)) {
    kiln_set_error("%s", ""); /* an input the body does not read */
    return 0;
  }
  return kiln_graph_executor_set_input(body, idx, t);
}

static int run_loop(LoopOp *lo, KilnLoopState *st) {
  KilnGraphExecutor *ex = lo->ex;
  GraphOp *op = lo->op;
  int a = 0;
  int64_t m = INT64_MAX;
  if (lo->has_m) {
    const DLTensor *t = &op->tensors[a++];
    m = *(const int64_t *)tensor_data(t);
    if (m < 0) return kiln_set_error("the trip count M is %lld: a Loop's trip count must be 0 or more", (long long)m);
  }
  uint8_t cond = 1;
  if (lo->has_cond) cond = *(const uint8_t *)tensor_data(&op->tensors[a++]) != 0;
  if (!st->body) {
    char blob[48];
    snprintf(blob, sizeof blob, "graph_json_loop%d", lo->body);
    if (kiln_graph_executor_create_blob(ex->mod, ex->dev, blob, &st->body))
      return kiln_error_context("the loop's body (blob %s)", blob);
    if (kiln_graph_executor_num_outputs(st->body) != 1 + st->ncarry + st->nscan)
      return kiln_set_error("the loop's body (blob %s) has %d outputs, not %d", blob,
                            kiln_graph_executor_num_outputs(st->body), 1 + st->ncarry + st->nscan);
  }
  KilnGraphExecutor *body = st->body;
  /* the carried values' first iteration, and the outer values (set once:
   * an input's buffer is the body's own, never reused) */
  for (int i = 0; i < st->ncarry; i++) {
    const DLTensor *t = &op->tensors[a++];
    LoopVal *v = &st->carried[i];
    v->dtype = t->dtype;
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    v->row_bytes = tensor_bytes(t);
    if (val_reserve(v, v->row_bytes) || val_reserve(&st->next[i], v->row_bytes)) return -1;
    if (v->row_bytes) memcpy(v->data, tensor_data(t), v->row_bytes);
  }
  for (int i = 0; i < lo->nouter; i++)
    if (set_body_input(body, lo->outer[i], &op->tensors[a++]))
      return kiln_error_context("the loop's outer value '%s'", lo->outer[i]);
  /* each scan output's row: its node's output without the first dimension */
  for (int s = 0; s < st->nscan; s++) st->scans[s].row_bytes = UINT64_MAX; /* set by the first iteration */
  int64_t i = 0;
  int64_t zero_shape[1] = {0};
  for (; i < m && cond; i++) {
    DLTensor it = {&i, {kDLCPU, 0}, 0, {kDLInt, 64, 1}, zero_shape, NULL, 0};
    uint8_t cv = 1;
    DLTensor ct = {&cv, {kDLCPU, 0}, 0, {kDLUInt, 1, 1}, zero_shape, NULL, 0};
    if (set_body_input(body, lo->inputs[0], &it) || set_body_input(body, lo->inputs[1], &ct))
      return kiln_error_context("iteration %lld of the loop", (long long)i);
    for (int c = 0; c < st->ncarry; c++) {
      LoopVal *v = &st->carried[c];
      DLTensor t = {v->data, {kDLCPU, 0}, v->ndim, v->dtype, v->shape, NULL, 0};
      if (set_body_input(body, lo->inputs[2 + c], &t))
        return kiln_error_context("iteration %lld of the loop: carried value %d", (long long)i, c);
    }
    if (kiln_graph_executor_run(body)) return kiln_error_context("iteration %lld of the loop's body", (long long)i);
    const JsonGraph *bg = &body->g;
    const DLTensor *co = &body->entries[bg->heads[0]];
    cond = *(const uint8_t *)tensor_data(co) != 0;
    for (int c = 0; c < st->ncarry; c++) {
      const DLTensor *o = &body->entries[bg->heads[1 + c]];
      LoopVal *v = &st->carried[c];
      if (!same_shape(v->ndim, v->shape, o))
        return kiln_set_error("iteration %lld of the loop: the body gives carried value %d the shape %s, but it is %s "
                              "(a loop run at run time keeps each carried value's shape)",
                              (long long)i, c, shape_str(o->ndim, o->shape), shape_str(v->ndim, v->shape));
      /* through next: an output may be the body's input itself */
      if (v->row_bytes) memcpy(st->next[c].data, tensor_data(o), v->row_bytes);
    }
    for (int c = 0; c < st->ncarry; c++) {
      char *d = st->carried[c].data;
      st->carried[c].data = st->next[c].data;
      st->next[c].data = d;
      uint64_t cap = st->carried[c].cap;
      st->carried[c].cap = st->next[c].cap;
      st->next[c].cap = cap;
    }
    for (int s = 0; s < st->nscan; s++) {
      const DLTensor *o = &body->entries[bg->heads[1 + st->ncarry + s]];
      LoopVal *v = &st->scans[s];
      if (!same_shape(v->ndim, v->shape, o))
        return kiln_set_error("iteration %lld of the loop: the body gives scan output %d the shape %s, but its rows "
                              "are %s (a loop run at run time keeps one row shape)",
                              (long long)i, s, shape_str(o->ndim, o->shape), shape_str(v->ndim, v->shape));
      uint64_t rb = tensor_bytes(o);
      if (val_reserve(v, (uint64_t)(i + 1) * rb)) return -1;
      if (rb) memcpy(v->data + (uint64_t)i * rb, tensor_data(o), rb);
      v->row_bytes = rb;
    }
  }
  st->iters = i;
  return 0;
}

/* runtime.loop: run the loop (the first of its nodes), then copy this
 * node's output. */
static int loop_call(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *resource) {
  (void)args, (void)codes, (void)nargs, (void)ret;
  if (ret_code) *ret_code = KILN_NULL;
  LoopOp *lo = resource;
  KilnGraphExecutor *ex = lo->ex;
  GraphOp *op = lo->op;
  KilnLoopState *st = &ex->loops[lo->body];
  const char *name = lo->nname == 1 ? lo->name[0] : "?";
  if (op - ex->ops == st->first_op && run_loop(lo, st)) return kiln_error_context("Loop '%s'", name);
  DLTensor *out = &op->tensors[op->nargs - 1];
  char *dst = (char *)out->data + out->byte_offset;
  if (lo->output < lo->ncarry) {
    const LoopVal *v = &st->carried[lo->output];
    if (!same_shape(v->ndim, v->shape, out))
      return kiln_set_error("carried value %d is %s, but the output was planned as %s", lo->output,
                            shape_str(v->ndim, v->shape), shape_str(out->ndim, out->shape));
    if (v->row_bytes) memcpy(dst, v->data, v->row_bytes);
    return 0;
  }
  const LoopVal *v = &st->scans[lo->output - lo->ncarry];
  int64_t n = st->iters;
  if (n > out->shape[0])
    return kiln_set_error("the loop ran %lld iterations, more than the %lld rows its scan output %d was sized for",
                          (long long)n, (long long)out->shape[0], lo->output - lo->ncarry);
  if (n && v->row_bytes && memcmp(v->shape, out->shape + 1, sizeof(int64_t) * (size_t)v->ndim))
    return kiln_set_error("scan output %d has rows %s, but the output was planned with rows %s", lo->output - lo->ncarry,
                          shape_str(v->ndim, v->shape), shape_str(out->ndim - 1, out->shape + 1));
  if (n && v->row_bytes) memcpy(dst, v->data, (size_t)n * v->row_bytes);
  op->reported = n;
  return 0;
}

static char **json_strs(const cJSON *attrs, const char *key, int *n) {
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(attrs, key);
  *n = cJSON_IsArray(l) ? cJSON_GetArraySize(l) : -1;
  if (*n < 0) return NULL;
  char **r = xcalloc((size_t)*n + 1, sizeof(char *));
  for (int i = 0; i < *n; i++) {
    const cJSON *s = cJSON_GetArrayItem(l, i);
    r[i] = strdup(cJSON_IsString(s) ? s->valuestring : "");
  }
  return r;
}

int kiln_loop_setup_op(KilnGraphExecutor *ex, GraphOp *op) {
  const GraphNode *nd = &ex->g.nodes[op->node];
  cJSON *attrs = cJSON_Parse(nd->kiln_host ? nd->kiln_host : "");
  LoopOp *lo = xcalloc(1, sizeof *lo);
  lo->ex = ex;
  lo->op = op;
  int rc = 0;
  const char *keys[6] = {"body", "output", "ncarry", "nscan", "m", "cond"};
  int *vals[6] = {&lo->body, &lo->output, &lo->ncarry, &lo->nscan, &lo->has_m, &lo->has_cond};
  for (int k = 0; k < 6 && !rc; k++) {
    const cJSON *v = attrs ? cJSON_GetObjectItemCaseSensitive(attrs, keys[k]) : NULL;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e6) rc = -1;
    else *vals[k] = (int)v->valuedouble;
  }
  if (!rc) {
    lo->inputs = json_strs(attrs, "inputs", &lo->ninputs);
    lo->outer = json_strs(attrs, "outer", &lo->nouter);
    lo->name = json_strs(attrs, "node", &lo->nname);
    if (lo->nname < 0) lo->nname = 0;
  }
  cJSON_Delete(attrs);
  int ntensors = nd->num_inputs;
  if (rc || lo->ninputs != 2 + lo->ncarry || lo->nouter < 0 || lo->output >= lo->ncarry + lo->nscan ||
      ntensors != lo->has_m + lo->has_cond + lo->ncarry + lo->nouter || nd->num_outputs != 1 ||
      (lo->output >= lo->ncarry) != (nd->report_dim == 0)) {
    if (lo->ninputs < 0) lo->ninputs = 0;
    if (lo->nouter < 0) lo->nouter = 0;
    loop_op_free(lo);
    return kiln_set_error("graph executor: node %d ('%s') calls runtime.loop with attributes that do not match its "
                          "inputs (body, output, ncarry, nscan, m, cond, inputs, outer)",
                          op->node, nd->name);
  }
  if (lo->body >= ex->num_loops) { /* the loops' states, made as their nodes appear */
    KilnLoopState *l = realloc(ex->loops, sizeof *l * (size_t)(lo->body + 1));
    if (!l) return loop_op_free(lo), kiln_set_error("out of memory");
    memset(l + ex->num_loops, 0, sizeof *l * (size_t)(lo->body + 1 - ex->num_loops));
    for (int b = ex->num_loops; b <= lo->body; b++) l[b].first_op = -1;
    ex->loops = l;
    ex->num_loops = lo->body + 1;
  }
  KilnLoopState *st = &ex->loops[lo->body];
  if (st->first_op < 0) {
    st->first_op = (int)(op - ex->ops);
    st->ncarry = lo->ncarry;
    st->nscan = lo->nscan;
    st->carried = xcalloc((size_t)lo->ncarry + 1, sizeof(LoopVal));
    st->next = xcalloc((size_t)lo->ncarry + 1, sizeof(LoopVal));
    st->scans = xcalloc((size_t)lo->nscan + 1, sizeof(LoopVal));
  } else if (st->ncarry != lo->ncarry || st->nscan != lo->nscan) {
    loop_op_free(lo);
    return kiln_set_error("graph executor: node %d ('%s'): loop %d's nodes disagree on its outputs", op->node, nd->name,
                          lo->body);
  }
  if (lo->output >= lo->ncarry) { /* the row shape the compiler planned */
    LoopVal *v = &st->scans[lo->output - lo->ncarry];
    const int e = nd->first_entry;
    v->dtype = ex->g.entry_dtype[e];
    v->ndim = ex->g.entry_ndim[e] - 1;
    memcpy(v->shape, ex->g.entry_shape[e] + 1, sizeof(int64_t) * (size_t)v->ndim);
  }
  if (kiln_func_create(loop_call, lo, loop_op_free, &op->fn)) return loop_op_free(lo), -1;
  return 0;
}
