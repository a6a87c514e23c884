/*
 * graph_sym.c - symbolic sizes in the graph executor: one compiled model
 * run at any batch (image size, sequence length) within its bounds.
 *
 * A graph JSON built from a symbolic graph carries, beside TVM's shapes
 * (the sizes at the symbols' representative values), the symbols with
 * their bounds and per entry its dimensions as postfix expressions
 * ("H 1 + 2 fdiv"; docs/symbolic_shapes.md).  The kernels read their
 * extents from their tensors' shapes (the generated code binds each
 * symbol from the first argument that has it and checks the others), so
 * running at a new size needs only the right shapes and big enough
 * buffers:
 *
 *   set_input with a shape other than the entry's binds the symbols that
 *   the input's dimensions name, checks their bounds, finds the binding's
 *   plan (every symbolic entry's dimensions and each storage id's bytes)
 *   among the last KILN_SYM_PLANS bindings or evaluates the expressions
 *   once and caches it, copies the shapes in place (the operators'
 *   argument tensors point at the same shape arrays) and grows each
 *   storage buffer that the new sizes no longer fit.  Buffers are shared
 *   by all bindings and only grow, so memory is one plan at the largest
 *   size seen and a size seen before reallocates nothing; the storage ids
 *   (which entries share a buffer) come from the build's liveness plan and
 *   hold at every size (docs/symbolic_shapes.md, "Memory").
 *
 * The batch as an outer loop: a model whose only symbol is a per-sample
 * batch is built at batch 1 with every template (attrs.kiln_batch and
 * kiln_batch_entry mark it).  Its entries that carry the batch are sized
 * for the current batch, and each kernel reading or writing them runs
 * once per sample on views of one sample (dimension 0 of 1, the data
 * advanced by a sample's bytes), so the kernels are the static ones.
 * Where the graph allows it the samples run one by one through every op,
 * in parallel on the thread pool (kiln_graph_batch_samples).
 *
 * A static graph has no symbols and never reaches this file's work.
 *
 * Batched variants: the same artifact may hold the model built as a static
 * graph at a few batches (attrs.kiln_batch_variants, blobs graph_json_b<K>;
 * kiln compile --batch-sizes).  run() takes the largest variant that fits
 * the current batch as often as it fits, then the next, each on views of
 * those samples of the inputs and outputs, and the samples left (fewer
 * than the smallest variant) through the batch-1 kernels: a batch of 8
 * with variants at 4 and 8 runs the batch-8 kernels once, a batch of 7
 * runs the batch-4 kernels once and three samples one at a time.  Each
 * variant's executor is made on first use.  The per-sample graph's
 * buffers that hold a graph input or output are sized for the whole batch
 * (the variants read and write their samples there); the others only for
 * the samples left to the batch-1 kernels, from their first byte (none at
 * a batch the variants take whole: they keep their bytes at creation).  The samples left run first:
 * the per-sample kernels reuse dead activations' buffers, and a graph
 * output's buffer may have held one before the output was written, so
 * they could overwrite outputs the variants wrote; the inputs' buffers
 * are never reused, so the variants still read them intact after.
 *
 * Data-dependent sizes: a host function of datadep.c (NonZero, Compress,
 * Unique, NonMaxSuppression) reports the size of one dimension of its
 * output, a symbol of its own.  Each run starts with those symbols at
 * their upper bounds (the node's kiln_report_cap), so the op's output
 * buffer fits whatever it writes; after the op the executor binds the
 * symbol to the reported size, plans the entries after it at that value
 * (a plan per binding, cached with the rest; the key also counts the
 * sizes bound so far), grows the buffers that must, keeping their
 * contents, and sets the shapes in place, so the next kernels and
 * get_output see the real sizes (docs/symbolic_shapes.md, section 4c).
 * A node with report_grow (StringSplit's pieces: nothing bounds them
 * before the run) has only a first guess for its cap: a larger size
 * reported (the function wrote nothing) grows its output to that size
 * and calls it again (grow_and_retry); the size is its next first guess.
 *
 * Exports: kiln_graph_sym_init, kiln_graph_sym_resize, kiln_graph_sym_free,
 * kiln_graph_sym_late_init, kiln_graph_sym_begin, kiln_graph_sym_report,
 * kiln_graph_batch_setup_op, kiln_graph_op_exec, kiln_graph_batch_samples, kiln_graph_batch_split,
 * kiln_graph_batch_run, kiln_graph_batch_start.
 */
#include "runtime_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum SymOp {
  SO_ADD, SO_SUB, SO_MUL, SO_FDIV, SO_FMOD, SO_DIV, SO_MOD, SO_MIN, SO_MAX,
  SO_EQ, SO_NE, SO_LT, SO_LE, SO_GT, SO_GE, SO_AND, SO_OR
} SymOp;

/* The postfix operators (the compiler's src/graph/symshape.c writes them). */
static const struct {
  const char *tok;
  SymOp op;
} sym_ops[] = {
    {"+", SO_ADD},     {"-", SO_SUB},    {"*", SO_MUL},    {"fdiv", SO_FDIV}, {"fmod", SO_FMOD},
    {"div", SO_DIV},   {"mod", SO_MOD},  {"min", SO_MIN},  {"max", SO_MAX},
    /* sizes that run-time values decide: comparisons and logic give 0 or
     * 1, and "c t f sel" (below) is t where c is not 0, else f */
    {"eq", SO_EQ},     {"ne", SO_NE},    {"lt", SO_LT},    {"le", SO_LE},
    {"gt", SO_GT},     {"ge", SO_GE},    {"and", SO_AND},  {"or", SO_OR},
};

static int apply(SymOp op, int64_t a, int64_t b, int64_t *out) {
  switch (op) {
  case SO_ADD: return __builtin_add_overflow(a, b, out) ? -1 : 0;
  case SO_SUB: return __builtin_sub_overflow(a, b, out) ? -1 : 0;
  case SO_MUL: return __builtin_mul_overflow(a, b, out) ? -1 : 0;
  case SO_MIN: *out = a < b ? a : b; return 0;
  case SO_MAX: *out = a > b ? a : b; return 0;
  case SO_EQ: *out = a == b; return 0;
  case SO_NE: *out = a != b; return 0;
  case SO_LT: *out = a < b; return 0;
  case SO_LE: *out = a <= b; return 0;
  case SO_GT: *out = a > b; return 0;
  case SO_GE: *out = a >= b; return 0;
  case SO_AND: *out = a && b; return 0;
  case SO_OR: *out = a || b; return 0;
  case SO_FDIV:
  case SO_FMOD:
  case SO_DIV:
  case SO_MOD: {
    if (b == 0 || (a == INT64_MIN && b == -1)) return -1;
    int64_t q = a / b, r = a % b;
    if ((op == SO_FDIV || op == SO_FMOD) && r != 0 && ((r < 0) != (b < 0))) q--, r += b;
    *out = op == SO_FDIV || op == SO_DIV ? q : r;
    return 0;
  }
  }
  return -1;
}

/* The text of dimension d of entry e's expressions (len in *len), or NULL
 * when the dimension is constant. */
static const char *dim_text(const JsonGraph *g, int e, int d, size_t *len) {
  const char *s = g->entry_sym ? g->entry_sym[e] : NULL;
  if (!s) return NULL;
  for (int k = 0; k < d && s; k++) {
    s = strchr(s, ';');
    if (s) s++;
  }
  if (!s) return NULL;
  const char *end = strchr(s, ';');
  *len = end ? (size_t)(end - s) : strlen(s);
  return *len ? s : NULL;
}

static int find_sym(const JsonGraph *g, const char *tok, size_t len) {
  for (int i = 0; i < g->num_syms; i++)
    if (strlen(g->sym_names[i]) == len && !strncmp(g->sym_names[i], tok, len)) return i;
  return -1;
}

/* Whether the expression names a run-time shape value, or a size whose
 * lower bound is 0 (one a data-dependent op reports): such a dimension
 * may be 0 (an empty tensor: a ConstantOfShape of 0, a Reduce over an
 * empty input, a NonZero that found nothing), while one given by sizes
 * alone must be at least 1 (0 there means the input is too small for the
 * model). */
static bool names_value(const JsonGraph *g, const char *s, size_t len) {
  const char *p = s, *end = s + len;
  while (p < end) {
    while (p < end && *p == ' ') p++;
    const char *q = p;
    while (q < end && *q != ' ') q++;
    int sym = q > p ? find_sym(g, p, (size_t)(q - p)) : -1;
    if (sym >= 0 && (g->sym_value_entry[sym] >= 0 || g->sym_lo[sym] == 0)) return true;
    p = q;
  }
  return false;
}

/* Evaluate a postfix expression; -1 + error naming what is wrong. */
static int eval_text(const JsonGraph *g, const char *s, size_t len, const int64_t *vals, int64_t *out) {
  int64_t st[32];
  int sp = 0;
  const char *p = s, *end = s + len;
  while (p < end) {
    while (p < end && *p == ' ') p++;
    const char *q = p;
    while (q < end && *q != ' ') q++;
    if (q == p) break;
    size_t n = (size_t)(q - p);
    int sym = find_sym(g, p, n);
    if (sym >= 0) {
      if (sp == 32) return kiln_set_error("shape expression '%.*s' is too deep", (int)len, s);
      st[sp++] = vals[sym];
    } else if ((*p >= '0' && *p <= '9') || (*p == '-' && n > 1)) {
      if (sp == 32) return kiln_set_error("shape expression '%.*s' is too deep", (int)len, s);
      st[sp++] = strtoll(p, NULL, 10);
    } else if (n == 3 && !strncmp(p, "sel", 3)) {
      if (sp < 3) return kiln_set_error("shape expression '%.*s': 'sel' needs three operands", (int)len, s);
      st[sp - 3] = st[sp - 3] ? st[sp - 2] : st[sp - 1];
      sp -= 2;
    } else {
      size_t k = 0, nops = sizeof sym_ops / sizeof sym_ops[0];
      while (k < nops && (strlen(sym_ops[k].tok) != n || strncmp(sym_ops[k].tok, p, n))) k++;
      if (k == nops || sp < 2)
        return kiln_set_error("shape expression '%.*s': bad token '%.*s'", (int)len, s, (int)n, p);
      if (apply(sym_ops[k].op, st[sp - 2], st[sp - 1], &st[sp - 2]))
        return kiln_set_error("shape expression '%.*s' has no value (division by zero or overflow)", (int)len, s);
      sp--;
    }
    p = q;
  }
  if (sp != 1) return kiln_set_error("shape expression '%.*s' is malformed", (int)len, s);
  *out = st[0];
  return 0;
}

/* ---- the batch as an outer loop ---- */

/* Which storage ids hold a graph input or output that carries the batch
 * (ex->storage_whole): those are sized for the whole batch; the others
 * only for the samples the batch-1 kernels run, which with batched
 * variants is the remainder the variants leave (none at a batch they
 * take whole). Inputs are never reused by the plan; an output's storage
 * may have held dead activations before it, which op by op order keeps
 * correct at either offset. A "__nop" view shares its source's storage,
 * so the whole storage id follows. */
static void batch_storage(KilnGraphExecutor *ex) {
  const JsonGraph *g = &ex->g;
  ex->storage_whole = kiln_arena_alloc(ex->arena, (size_t)ex->num_storage + 1);
  memset(ex->storage_whole, 0, (size_t)ex->num_storage + 1);
  for (int i = 0; i < g->num_args; i++) { /* params never carry the batch */
    int e = g->nodes[g->arg_nodes[i]].first_entry;
    if (g->entry_batch[e]) ex->storage_whole[ex->storage_id[e]] = 1;
  }
  for (int h = 0; h < g->num_heads; h++)
    if (g->entry_batch[g->heads[h]]) ex->storage_whole[ex->storage_id[g->heads[h]]] = 1;
}

int kiln_graph_batch_setup_op(KilnGraphExecutor *ex, GraphOp *op) {
  JsonGraph *g = &ex->g;
  if (!ex->storage_whole) batch_storage(ex);
  op->sample_bytes = kiln_arena_alloc(ex->arena, ((size_t)op->nargs + 1) * sizeof(uint64_t));
  for (int k = 0; k < op->nargs; k++) {
    int e = op->eids[k];
    if (!g->entry_batch[e]) continue;
    /* the kernel's view: a shape of its own, dimension 0 kept at 1 */
    int64_t *shape = kiln_arena_alloc(ex->arena, ((size_t)g->entry_ndim[e] + 1) * sizeof(int64_t));
    memcpy(shape, g->entry_shape[e], sizeof(int64_t) * (size_t)g->entry_ndim[e]);
    shape[0] = 1;
    op->tensors[k].shape = shape;
    op->sample_bytes[k] = kiln_dtype_bytes(g->entry_dtype[e]);
    for (int d = 1; d < g->entry_ndim[e]; d++) op->sample_bytes[k] *= (uint64_t)g->entry_shape[e][d];
    op->batched = 1;
  }
  return 0;
}

int kiln_graph_op_exec(KilnGraphExecutor *ex, GraphOp *op) {
  if (!op->batched || ex->batch == 1) return kiln_graph_op_call(op);
  int rc = 0;
  for (int64_t n = ex->batch_from; n < ex->batch && !rc; n++) {
    for (int k = 0; k < op->nargs; k++) {
      if (!op->sample_bytes[k]) continue;
      int64_t at = ex->storage_whole[ex->storage_id[op->eids[k]]] ? n : n - ex->batch_from;
      op->tensors[k].data = (char *)ex->entries[op->eids[k]].data + (size_t)at * op->sample_bytes[k];
    }
    rc = kiln_graph_op_call(op);
  }
  for (int k = 0; k < op->nargs; k++)
    if (op->sample_bytes[k]) op->tensors[k].data = ex->entries[op->eids[k]].data;
  return rc;
}

/* ---- samples one by one, in parallel ---- */

/* Op by op, each kernel runs every sample before the next kernel starts:
 * a batch of 8 streams 8 samples' activations (SqueezeNet's first maps,
 * 25 MB) through the caches between two kernels, and with T threads every
 * kernel splits its one sample's work T ways.  Sample by sample, each
 * sample runs through every op, its activations staying in the caches,
 * and the samples are the thread pool's tasks: each thread runs whole
 * samples on the batch-1 kernels (whose own parallel loops then run
 * serially), with no fork and join per kernel.  A sample only touches its
 * own part of each buffer, so samples may run in any order and at once,
 * as long as that part is the same for every entry sharing a buffer: here
 * a buffer's samples lie max-entry-bytes apart (they lie each entry's
 * bytes apart op by op), which the buffers' sizes (samples x the largest
 * entry) allow; a buffer holding a graph input or output keeps its
 * entry's layout, so it qualifies only when all its entries have one
 * size.  Only where every op carries the batch (none runs once for the
 * whole batch), none is a host function or reports a size, and no
 * argument list is longer than SAMPLE_ARGS. */
enum { SAMPLE_ARGS = 64 };

static int sample_major_setup(KilnGraphExecutor *ex) {
  JsonGraph *g = &ex->g;
  if (ex->num_late || ex->str_run) return -1;
  uint64_t *stride = kiln_arena_alloc(ex->arena, ((size_t)ex->num_storage + 1) * sizeof(uint64_t));
  memset(stride, 0, ((size_t)ex->num_storage + 1) * sizeof(uint64_t));
  for (GraphOp *op = ex->ops; op < ex->ops + ex->num_ops; op++) {
    if (!op->batched || op->extra || op->reports || op->after || op->nargs > SAMPLE_ARGS) return -1;
    for (int k = 0; k < op->nargs; k++) {
      int e = op->eids[k], s = ex->storage_id[e];
      if (g->entry_node[e] == op->node && !op->sample_bytes[k]) return -1; /* an output for the whole batch */
      if (!op->sample_bytes[k]) continue;
      if (ex->storage_whole[s] && stride[s] && stride[s] != op->sample_bytes[k]) return -1;
      if (stride[s] < op->sample_bytes[k]) stride[s] = op->sample_bytes[k];
    }
  }
  ex->sample_stride = stride;
  return 1;
}

static int sample_task(int task, int num_tasks, void *cdata) {
  (void)num_tasks;
  KilnGraphExecutor *ex = cdata;
  int64_t n = ex->batch_from + task;
  DLTensor t[SAMPLE_ARGS];
  KilnValue a[SAMPLE_ARGS], ret;
  int ret_code;
  for (GraphOp *op = ex->ops; op < ex->ops + ex->num_ops; op++) {
    for (int k = 0; k < op->nargs; k++) {
      t[k] = op->tensors[k];
      if (op->sample_bytes[k]) {
        int s = ex->storage_id[op->eids[k]];
        int64_t at = ex->storage_whole[s] ? n : n - ex->batch_from;
        t[k].data = (char *)ex->entries[op->eids[k]].data + (size_t)at * ex->sample_stride[s];
      }
      a[k].v_handle = &t[k];
    }
    if (op->call(a, op->codes, op->nargs, &ret, &ret_code, op->resource)) return kiln_graph_op_error(ex, op);
  }
  return 0;
}

int kiln_graph_batch_samples(KilnGraphExecutor *ex, int *rc) {
  int64_t samples = ex->batch - ex->batch_from;
  if (!ex->g.batch_name || samples < 2 || samples > INT_MAX) return 0;
  if (!ex->sample_major) ex->sample_major = sample_major_setup(ex);
  if (ex->sample_major < 0) return 0;
  *rc = kiln_parallel_launch(sample_task, ex, (int)samples);
  return 1;
}

/* ---- batched variants ---- */

/* A view of samples [at, at + k) of entry e (shape in shape[]). */
static DLTensor sample_view(const KilnGraphExecutor *ex, int e, int64_t at, int64_t k, int64_t *shape) {
  const JsonGraph *g = &ex->g;
  DLTensor t = ex->entries[e];
  memcpy(shape, t.shape, sizeof(int64_t) * (size_t)t.ndim);
  uint64_t sample = kiln_dtype_bytes(g->entry_dtype[e]);
  for (int d = 1; d < t.ndim; d++) sample *= (uint64_t)shape[d];
  shape[0] = k;
  t.shape = shape;
  t.data = (char *)t.data + t.byte_offset + (size_t)at * sample;
  t.byte_offset = 0;
  return t;
}

/* Variant v's executor, made on first use from the module's
 * graph_json_b<K>; its outputs must be the main graph's, in order. */
static KilnGraphExecutor *variant(KilnGraphExecutor *ex, int v) {
  if (!ex->variant_ex) ex->variant_ex = kiln_arena_alloc(ex->arena, sizeof(KilnGraphExecutor *) * ((size_t)ex->g.num_variants + 1));
  if (ex->variant_ex[v]) return ex->variant_ex[v];
  char blob[64];
  snprintf(blob, sizeof blob, "graph_json_b%lld", (long long)ex->g.variant_batch[v]);
  KilnGraphExecutor *sub;
  if (kiln_graph_executor_create_blob(ex->mod, ex->dev, blob, &sub)) {
    kiln_error_context("the batched variant at batch %lld", (long long)ex->g.variant_batch[v]);
    return NULL;
  }
  int ok = sub->g.num_heads == ex->g.num_heads && sub->num_inputs == ex->num_inputs;
  for (int h = 0; ok && h < ex->g.num_heads; h++) ok = !strcmp(sub->output_names[h], ex->output_names[h]);
  if (!ok) {
    kiln_graph_executor_free(sub);
    kiln_set_error("the batched variant at batch %lld (blob %s) does not have the graph's inputs and outputs", 
                   (long long)ex->g.variant_batch[v], blob);
    return NULL;
  }
  return ex->variant_ex[v] = sub;
}

/* Samples [at, at + k) through variant v: its inputs are views of the
 * graph's (bound in place where aligned, else copied), its outputs copied
 * into the graph's at those samples. */
KilnGraphExecutor *kiln_graph_variant_bind(KilnGraphExecutor *ex, int v, int64_t at) {
  const JsonGraph *g = &ex->g;
  int64_t k = g->variant_batch[v];
  KilnGraphExecutor *sub = variant(ex, v);
  if (!sub) return NULL;
  int64_t shape[32]; /* a view's shape (checked below) */
  for (int i = 0; i < ex->num_inputs; i++) {
    const char *name = g->nodes[ex->inputs[i]].name;
    int e = g->nodes[ex->inputs[i]].first_entry;
    if (ex->entries[e].ndim > (int)(sizeof shape / sizeof shape[0]))
      return kiln_set_error("input '%s': too many dimensions", name), NULL;
    DLTensor t = g->entry_batch[e] ? sample_view(ex, e, at, k, shape) : ex->entries[e];
    int rc = (uintptr_t)t.data % KILN_ARRAY_ALIGN ? kiln_graph_executor_set_input_by_name(sub, name, &t)
                                                  : kiln_graph_executor_set_input_zero_copy(sub, name, &t);
    if (rc) return NULL;
  }
  return sub;
}

int kiln_graph_variant_collect(KilnGraphExecutor *ex, int v, int64_t at) {
  const JsonGraph *g = &ex->g;
  int64_t k = g->variant_batch[v], shape[32];
  KilnGraphExecutor *sub = variant(ex, v);
  if (!sub) return -1;
  for (int h = 0; h < g->num_heads; h++) {
    int e = g->heads[h];
    if (!g->entry_batch[e]) continue; /* a constant output: the graph's own */
    if (ex->entries[e].ndim > (int)(sizeof shape / sizeof shape[0])) return kiln_set_error("output %d: too many dimensions", h);
    DLTensor t = sample_view(ex, e, at, k, shape);
    if (kiln_graph_executor_copy_output(sub, h, &t)) return -1;
  }
  return 0;
}

static int run_variant(KilnGraphExecutor *ex, int v, int64_t at) {
  KilnGraphExecutor *sub = kiln_graph_variant_bind(ex, v, at);
  if (!sub || kiln_graph_executor_run(sub)) return -1;
  return kiln_graph_variant_collect(ex, v, at);
}

/* The samples, from the first, that the variants take at batch b. */
static int64_t split_at(const JsonGraph *g, int64_t b) {
  int64_t at = 0;
  for (int v = g->num_variants - 1; v >= 0; v--)
    while (b - at >= g->variant_batch[v]) at += g->variant_batch[v];
  return at;
}

int64_t kiln_graph_batch_split(const KilnGraphExecutor *ex) {
  return ex->batch > 1 ? split_at(&ex->g, ex->batch) : 0;
}

int kiln_graph_batch_run(KilnGraphExecutor *ex, int64_t upto) {
  const JsonGraph *g = &ex->g;
  int64_t at = 0;
  for (int v = g->num_variants - 1; v >= 0; v--)
    while (upto - at >= g->variant_batch[v]) {
      if (run_variant(ex, v, at))
        return kiln_error_context("run: samples %lld to %lld through the batched variant at batch %lld", (long long)at,
                                  (long long)(at + g->variant_batch[v] - 1), (long long)g->variant_batch[v]);
      at += g->variant_batch[v];
      ex->sym_stats.variant_runs++;
      ex->sym_stats.variant_samples += (uint64_t)g->variant_batch[v];
    }
  return 0;
}

/* ---- the plans of the last bindings ---- */

static void plan_clear(KilnSymPlan *p) {
  free(p->key);
  free(p->dims);
  free(p->bytes);
  memset(p, 0, sizeof *p);
}

void kiln_graph_sym_free(KilnGraphExecutor *ex) {
  for (int i = 0; i < ex->num_sym_plans; i++) plan_clear(&ex->sym_plans[i]);
  ex->num_sym_plans = 0;
}

/* The cached plan of the binding key[0..n), marked used, or NULL. */
static KilnSymPlan *plan_find(KilnGraphExecutor *ex, const int64_t *key, int n) {
  for (int i = 0; i < ex->num_sym_plans; i++) {
    KilnSymPlan *p = &ex->sym_plans[i];
    if (!memcmp(p->key, key, sizeof(int64_t) * (size_t)n)) {
      p->used = ++ex->sym_tick;
      ex->sym_stats.plan_hits++;
      return p;
    }
  }
  return NULL;
}

/* Cache a plan (taking key, dims and bytes, which must be malloc'd): a
 * free slot, else the least recently used one's. */
static KilnSymPlan *plan_put(KilnGraphExecutor *ex, int64_t *key, int64_t *dims, uint64_t *bytes) {
  KilnSymPlan *p = NULL;
  if (ex->num_sym_plans < KILN_SYM_PLANS) p = &ex->sym_plans[ex->num_sym_plans++];
  else {
    p = &ex->sym_plans[0];
    for (int i = 1; i < KILN_SYM_PLANS; i++)
      if (ex->sym_plans[i].used < p->used) p = &ex->sym_plans[i];
    plan_clear(p);
    ex->sym_stats.evictions++;
  }
  p->key = key;
  p->dims = dims;
  p->bytes = bytes;
  p->used = ++ex->sym_tick;
  ex->sym_stats.plan_misses++;
  return p;
}

/* Grow each owned storage buffer that bytes[] no longer fits: its
 * contents kept (a run may be half done when a reported size grows a
 * later entry's buffer), the rest zeroed as at creation. */
static int grow_storage(KilnGraphExecutor *ex, const uint64_t *bytes, const char *what) {
  DLDevice dev = ex->dev;
  const KilnDeviceAPI *api = kiln_device_api(dev);
  for (int s = 0; s < ex->num_storage; s++) {
    if (bytes[s] <= ex->storage_cap[s] || !ex->owned[s]) continue;
    void *p = api->alloc(dev, (size_t)bytes[s], KILN_ARRAY_ALIGN);
    if (!p) return kiln_error_context("%s: storage %d (%llu bytes)", what, s, (unsigned long long)bytes[s]);
    memcpy(p, ex->storage[s], (size_t)ex->storage_cap[s]);
    memset((char *)p + ex->storage_cap[s], 0, (size_t)(bytes[s] - ex->storage_cap[s]));
    api->free(dev, ex->storage[s]);
    ex->plan.planned_bytes += bytes[s] - ex->storage_cap[s];
    ex->storage_cap[s] = bytes[s];
    ex->sym_stats.reallocs++;
    kiln_graph_bind_storage(ex, s, p);
  }
  return 0;
}

/* set_input of a batch entry with a new batch: every batch entry's
 * dimension 0, and the buffers grown to fit. */
static int batch_resize(KilnGraphExecutor *ex, int e, const DLTensor *t, const char *what) {
  JsonGraph *g = &ex->g;
  if (!g->entry_batch[e] || !t || t->ndim != g->entry_ndim[e] || !t->shape || t->ndim < 1) return 0;
  int64_t b = t->shape[0];
  if (b == ex->batch) return 0;
  for (int d = 1; d < t->ndim; d++)
    if (t->shape[d] != g->entry_shape[e][d]) return 0; /* check_tensor names the mismatch */
  if (b < g->batch_lo || b > g->batch_hi)
    return kiln_set_error("%s: dimension 0 (%s) is %lld, outside the bounds [%lld, %lld] the model was compiled for "
                          "(compile with a wider bound, e.g. --input-shapes \"...,%s<=%lld\")",
                          what, g->batch_name, (long long)b, (long long)g->batch_lo, (long long)g->batch_hi,
                          g->batch_name, (long long)b);
  KilnSymPlan *p = plan_find(ex, &b, 1);
  if (!ex->storage_whole) batch_storage(ex);
  for (int x = 0; x < g->num_entries; x++)
    if (g->entry_batch[x]) g->entry_shape[x][0] = b;
  if (!p) { /* first visit: each storage id's bytes at this batch */
    uint64_t *bytes = calloc((size_t)ex->num_storage + 1, sizeof(uint64_t));
    int64_t *key = malloc(sizeof(int64_t));
    if (!bytes || !key) {
      free(bytes);
      free(key);
      for (int x = 0; x < g->num_entries; x++)
        if (g->entry_batch[x]) g->entry_shape[x][0] = ex->batch;
      return kiln_set_error("%s: out of memory", what);
    }
    /* entries in storage of their own (not an input's or an output's)
     * hold only the samples the batch-1 kernels run: none when the
     * variants take the whole batch, where one sample's bytes (the size
     * at creation) stay */
    int64_t left = b - (b > 1 ? split_at(g, b) : 0);
    for (int x = 0; x < g->num_entries; x++) {
      uint64_t n = kiln_graph_entry_bytes(g, x);
      if (g->entry_batch[x] && !ex->storage_whole[ex->storage_id[x]]) n = n / (uint64_t)b * (uint64_t)left;
      if (n > bytes[ex->storage_id[x]]) bytes[ex->storage_id[x]] = n;
    }
    *key = b;
    p = plan_put(ex, key, NULL, bytes);
  }
  int rc = grow_storage(ex, p->bytes, what);
  if (rc) /* back to the batch the buffers fit */
    for (int x = 0; x < g->num_entries; x++)
      if (g->entry_batch[x]) g->entry_shape[x][0] = ex->batch;
  if (!rc) ex->batch = b;
  return rc;
}

int kiln_graph_batch_start(KilnGraphExecutor *ex) {
  JsonGraph *g = &ex->g;
  if (!g->batch_name || g->batch_lo <= 1) return 0;
  for (int i = 0; i < ex->num_inputs; i++) {
    int e = g->nodes[ex->inputs[i]].first_entry;
    int64_t shape[32];
    if (!g->entry_batch[e] || g->entry_ndim[e] < 1 || g->entry_ndim[e] > (int)(sizeof shape / sizeof shape[0])) continue;
    memcpy(shape, g->entry_shape[e], sizeof(int64_t) * (size_t)g->entry_ndim[e]);
    shape[0] = g->batch_lo;
    DLTensor t = ex->entries[e];
    t.shape = shape;
    return batch_resize(ex, e, &t, "graph executor: the batch's lower bound");
  }
  return 0;
}

int kiln_graph_sym_init(KilnGraphExecutor *ex) {
  JsonGraph *g = &ex->g;
  ex->batch = 1;
  if (!g->num_syms) return 0;
  if (ex->dev.device_type != kDLCPU)
    return kiln_set_error("graph executor: symbolic sizes run on the cpu only");
  for (int n = 0; n < g->num_nodes; n++)
    if (g->nodes[n].is_op && g->nodes[n].flatten_data)
      return kiln_set_error("graph executor: node %d ('%s') flattens its data, which a graph with symbolic sizes "
                            "cannot do",
                            n, g->nodes[n].name);
  ex->sym_val = kiln_arena_alloc(ex->arena, (size_t)g->num_syms * sizeof(int64_t) + 1);
  ex->sym_given = kiln_arena_alloc(ex->arena, (size_t)g->num_syms + 1);
  memset(ex->sym_given, 0, (size_t)g->num_syms + 1);
  /* Start at the smallest sizes, so that creating an executor allocates
   * for a batch of one rather than for the representative sizes (97 when
   * unbounded); buffers grow when set_input brings larger sizes.  Where
   * the lower bounds give no valid shape (an image too small for the
   * model), keep the JSON's shapes, at the representative sizes. */
  int64_t **shapes = calloc((size_t)g->num_entries + 1, sizeof(int64_t *));
  int ok = shapes != NULL;
  for (int e = 0; e < g->num_entries && ok; e++) {
    if (!g->entry_sym || !g->entry_sym[e]) continue;
    if (!(shapes[e] = malloc(sizeof(int64_t) * ((size_t)g->entry_ndim[e] + 1)))) ok = 0;
    for (int d = 0; ok && d < g->entry_ndim[e]; d++) {
      size_t len;
      const char *t = dim_text(g, e, d, &len);
      int64_t v = g->entry_shape[e][d];
      if (t && eval_text(g, t, len, g->sym_lo, &v)) ok = 0;
      if (v < (t && names_value(g, t, len) ? 0 : 1)) ok = 0;
      shapes[e][d] = v;
    }
  }
  kiln_clear_error();
  for (int e = 0; ok && e < g->num_entries; e++)
    if (shapes[e]) memcpy(g->entry_shape[e], shapes[e], sizeof(int64_t) * (size_t)g->entry_ndim[e]);
  for (int e = 0; shapes && e < g->num_entries; e++) free(shapes[e]);
  free(shapes);
  /* the symbols' values: where a dimension is the bare symbol */
  for (int i = 0; i < g->num_syms; i++) ex->sym_val[i] = g->sym_lo[i];
  for (int e = 0; e < g->num_entries; e++)
    for (int d = 0; d < g->entry_ndim[e]; d++) {
      size_t len;
      const char *t = dim_text(g, e, d, &len);
      int s = t ? find_sym(g, t, len) : -1;
      if (s >= 0) ex->sym_val[s] = g->entry_shape[e][d];
    }
  return 0;
}

/* Whether some symbol is a run-time shape value. */
static bool has_values(const JsonGraph *g) {
  for (int s = 0; s < g->num_syms; s++)
    if (g->sym_value_entry[s] >= 0) return true;
  return false;
}

/* "N=8, H=224" */
static const char *bindings(const JsonGraph *g, const int64_t *vals, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < g->num_syms && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, "%s%s=%lld", i ? ", " : "", g->sym_names[i], (long long)vals[i]);
  return buf;
}

/* The first node with a dimension that is exactly symbol s, for an
 * error message: its name, and the dimension in *dim. */
static const char *sym_user(const JsonGraph *g, int s, int *dim) {
  for (int x = 0; x < g->num_entries; x++)
    for (int d = 0; d < g->entry_ndim[x]; d++) {
      size_t len;
      const char *t = dim_text(g, x, d, &len);
      if (t && find_sym(g, t, len) == s && g->nodes[g->entry_node[x]].is_op) {
        *dim = d;
        return g->nodes[g->entry_node[x]].name;
      }
    }
  *dim = -1;
  return "?";
}

/* Whether symbol s is a run-time value an input's data gives (not one an
 * operator computes, bound during the run). */
static bool input_value(const JsonGraph *g, int s) {
  return g->sym_value_entry[s] >= 0 && !g->nodes[g->entry_node[g->sym_value_entry[s]]].is_op;
}

/* Whether a binding that plans no valid shape is final: every run-time
 * value given (now, in set, or before). */
static bool pending_ok(const KilnGraphExecutor *ex, const uint8_t *set) {
  const JsonGraph *g = &ex->g;
  for (int s = 0; s < g->num_syms; s++)
    if (input_value(g, s) && !ex->sym_given[s] && !set[s]) return false;
  return true;
}

/* Element k of t as the value of symbol s: the integer itself, or, for a
 * float value (sym_value_scale), floor(x * scale) in *v with x in *x.
 * -1 when t's type is not the symbol's kind or x is NaN, infinite or too
 * large for any size (*v is then left alone). */
static int read_value(const JsonGraph *g, int s, const DLTensor *t, int k, int64_t *v, double *x) {
  const char *base = (const char *)t->data + t->byte_offset;
  double scale = g->sym_value_scale ? g->sym_value_scale[s] : 0;
  if (scale == 0) {
    if (t->dtype.code != kDLInt || (t->dtype.bits != 64 && t->dtype.bits != 32)) return -1;
    *v = t->dtype.bits == 64 ? ((const int64_t *)base)[k] : ((const int32_t *)base)[k];
    *x = (double)*v;
    return 0;
  }
  if (t->dtype.code != kDLFloat || (t->dtype.bits != 32 && t->dtype.bits != 64)) return -1;
  *x = t->dtype.bits == 64 ? ((const double *)base)[k] : (double)((const float *)base)[k];
  double y = floor(*x * scale);
  if (!(y > -4e18 && y < 4e18)) return -2; /* NaN, infinite, or past any bound */
  *v = (int64_t)y;
  return 0;
}

/* Bind the run-time shape values that are elements of input entry e
 * from t's data (docs/symbolic_shapes.md, "Run-time shape values"); a
 * float value is floor(x * scale) of its element x (section 4e). */
static int bind_values(const JsonGraph *g, int e, const DLTensor *t, const char *what, int64_t *vals, uint8_t *set) {
  for (int s = 0; s < g->num_syms; s++) {
    if (g->sym_value_entry[s] != e) continue;
    int k = g->sym_value_elem[s];
    bool flt = g->sym_value_scale && g->sym_value_scale[s] != 0;
    int64_t len = t->ndim == 0 ? 1 : t->ndim == 1 && t->shape ? t->shape[0] : 0;
    int64_t v = 0;
    double x = 0;
    int rc = -1;
    if (t->device.device_type == kDLCPU && t->data && t->ndim <= 1 && t->dtype.lanes == 1 && len > k)
      rc = read_value(g, s, t, k, &v, &x);
    if (rc == -1)
      return kiln_set_error("%s: this input gives sizes at run time (element %d is %s), so it must be a 1-D (or "
                            "scalar) %s tensor in cpu memory with at least %d elements",
                            what, k, g->sym_names[s], flt ? "float32 or float64" : "int64 or int32", k + 1);
    int dim;
    if (rc == -2 || v < g->sym_lo[s] || v > g->sym_hi[s]) {
      const char *node = sym_user(g, s, &dim);
      char use[160], val[96];
      if (dim >= 0) snprintf(use, sizeof use, "which is dimension %d of node '%s' (the size %s)", dim, node,
                             g->sym_names[s]);
      else snprintf(use, sizeof use, "the value %s", g->sym_names[s]);
      if (!flt) snprintf(val, sizeof val, "%lld", (long long)v);
      else if (rc == -2) snprintf(val, sizeof val, "%g, which gives no size (floor(x * %.10g))", x, g->sym_value_scale[s]);
      else snprintf(val, sizeof val, "%g, giving floor(%g * %.10g) = %lld", x, x, g->sym_value_scale[s], (long long)v);
      return kiln_set_error("%s: element %d is %s, %s, outside the bounds [%lld, %lld] the model was compiled "
                            "for",
                            what, k, val, use, (long long)g->sym_lo[s], (long long)g->sym_hi[s]);
    }
    vals[s] = v;
    set[s] = 1;
  }
  return 0;
}

/* Whether postfix text s names symbol sym (sym -1: a symbol of
 * late_syms[nbound..], one a data-dependent op has not reported yet in
 * this run). */
static bool names_sym(const KilnGraphExecutor *ex, const char *s, size_t len, int sym, int nbound) {
  const JsonGraph *g = &ex->g;
  const char *p = s, *end = s + len;
  while (p < end) {
    while (p < end && *p == ' ') p++;
    const char *q = p;
    while (q < end && *q != ' ') q++;
    int k = q > p ? find_sym(g, p, (size_t)(q - p)) : -1;
    if (k >= 0 && (sym >= 0 ? k == sym : ex->late_pos && ex->late_pos[k] >= nbound)) return true;
    p = q;
  }
  return false;
}

/* Plan the binding vals (late_syms[0..nbound) reported, the rest at
 * their upper bounds): the cached plan, or every symbolic entry's shape
 * and the bytes each storage id needs, evaluated once; then the buffers
 * grown (keeping their contents: a run may be half done) and the shapes
 * set in place.  An entry whose shape names an unbound size is sized at
 * the upper bounds and never an error: its real shape is planned when
 * the size is reported. */
static int replan(KilnGraphExecutor *ex, const int64_t *vals, int nbound, const char *what, bool *no_plan) {
  JsonGraph *g = &ex->g;
  int nkey = g->num_syms + (ex->num_late ? 1 : 0);
  size_t ndims = 0; /* the symbolic entries' dimensions, all together */
  for (int x = 0; x < g->num_entries; x++)
    if (g->entry_sym[x]) ndims += (size_t)g->entry_ndim[x];
  int64_t *key = malloc(sizeof(int64_t) * ((size_t)nkey + 1));
  if (!key) return kiln_set_error("%s: out of memory", what);
  memcpy(key, vals, sizeof(int64_t) * (size_t)g->num_syms);
  if (ex->num_late) key[g->num_syms] = nbound;
  int rc = 0;
  char buf[256];
  KilnSymPlan *plan = plan_find(ex, key, nkey);
  if (!plan) {
    int64_t *dims = malloc(sizeof(int64_t) * (ndims + 1));
    uint64_t *bytes = calloc((size_t)ex->num_storage + 1, sizeof(uint64_t));
    if (!dims || !bytes) rc = kiln_set_error("%s: out of memory", what);
    size_t at = 0;
    for (int x = 0; x < g->num_entries && !rc; x++) {
      if (!g->entry_sym[x]) continue;
      uint64_t n = kiln_dtype_bytes(g->entry_dtype[x]);
      for (int d = 0; d < g->entry_ndim[x] && !rc; d++) {
        size_t len;
        const char *txt = dim_text(g, x, d, &len);
        int64_t v = g->entry_shape[x][d];
        bool pending = txt && ex->num_late && names_sym(ex, txt, len, -1, nbound);
        /* a dimension that a run-time value decides may be 0 (empty);
         * its expression gives -1 for values the op cannot take */
        if (txt && eval_text(g, txt, len, vals, &v)) {
          if (pending) v = 1, kiln_clear_error();
          else rc = kiln_error_context("%s: entry %d", what, x);
        } else if (pending && (v < 1 || v > INT32_MAX)) v = 1;
        else if (txt && (v < (names_value(g, txt, len) ? 0 : 1) || v > INT32_MAX)) /* a constant one is the build's */
          rc = kiln_set_error("%s: at %s, node '%s' would have dimension %d = %lld: the input is too %s for the "
                              "model%s",
                              what, bindings(g, vals, buf, sizeof buf), g->nodes[g->entry_node[x]].name, d,
                              (long long)v, v < 1 ? "small" : "large",
                              has_values(g) || ex->num_late
                                  ? ", or the values given at run time (or computed from its data) do not fit it (a "
                                    "Reshape's shape must keep the element count, a Squeeze or Reduce must name "
                                    "distinct axes)"
                                  : "");
        dims[at++] = v;
        n *= (uint64_t)(v > 0 ? v : 0);
      }
      if (n > bytes[ex->storage_id[x]]) bytes[ex->storage_id[x]] = n;
    }
    /* the static entries keep their bytes at every binding */
    for (int x = 0; x < g->num_entries && !rc; x++) {
      if (g->entry_sym[x]) continue;
      uint64_t n = kiln_graph_entry_bytes(g, x);
      if (n > bytes[ex->storage_id[x]]) bytes[ex->storage_id[x]] = n;
    }
    if (!rc) {
      plan = plan_put(ex, key, dims, bytes);
      key = NULL;
      dims = NULL;
      bytes = NULL;
    }
    free(dims);
    free(bytes);
  }
  free(key);
  if (rc && no_plan) *no_plan = true;
  /* commit: buffers grown, shapes in place */
  if (!rc) rc = grow_storage(ex, plan->bytes, what);
  if (!rc) {
    size_t at = 0;
    for (int x = 0; x < g->num_entries; x++) {
      if (!g->entry_sym[x]) continue;
      memcpy(g->entry_shape[x], plan->dims + at, sizeof(int64_t) * (size_t)g->entry_ndim[x]);
      at += (size_t)g->entry_ndim[x];
    }
    memcpy(ex->sym_val, vals, sizeof(int64_t) * (size_t)g->num_syms);
    ex->late_bound = nbound;
  }
  return rc;
}

/* The sizes late_syms[from..] not reported yet: each at its upper bound
 * (its op's kiln_report_cap at the values before it, in op order). */
static int provisional(KilnGraphExecutor *ex, int64_t *vals, int from) {
  JsonGraph *g = &ex->g;
  for (int k = from; k < ex->num_late; k++) {
    int s = ex->late_syms[k];
    int64_t v = g->sym_lo[s]; /* a run-time value: any value until bound */
    if (ex->late_cap[k] && eval_text(g, ex->late_cap[k], strlen(ex->late_cap[k]), vals, &v))
      return kiln_error_context("the upper bound of the size %s", g->sym_names[s]);
    if (ex->late_seen[k] > v) v = ex->late_seen[k]; /* a grown guess */
    if (v > g->sym_hi[s]) v = g->sym_hi[s];
    vals[s] = v < g->sym_lo[s] ? g->sym_lo[s] : v;
  }
  return 0;
}

/* Make s a late symbol bound by op: -1 + error when an entry before the
 * op has a shape it decides. */
static int add_late(KilnGraphExecutor *ex, GraphOp *op, int s, const char *cap) {
  const JsonGraph *g = &ex->g;
  for (int x = 0; x < g->num_entries; x++)
    for (int d = 0; d < g->entry_ndim[x] && g->entry_node[x] < op->node; d++) {
      size_t len;
      const char *t = dim_text(g, x, d, &len);
      if (t && names_sym(ex, t, len, s, 0))
        return kiln_set_error("graph executor: node %d ('%s') has a shape that %s decides, which node %d ('%s') "
                              "computes only later",
                              g->entry_node[x], g->nodes[g->entry_node[x]].name, g->sym_names[s], op->node,
                              g->nodes[op->node].name);
    }
  if (!op->late_count) op->late_first = ex->num_late;
  op->late_count++;
  op->after = 1;
  ex->late_pos[s] = ex->num_late;
  ex->late_syms[ex->num_late] = s;
  ex->late_cap[ex->num_late++] = cap;
  return 0;
}

int kiln_graph_sym_late_init(KilnGraphExecutor *ex) {
  JsonGraph *g = &ex->g;
  int n = 0;
  for (int i = 0; i < ex->num_ops; i++) n += g->nodes[ex->ops[i].node].report_dim >= 0;
  for (int s = 0; s < g->num_syms; s++)
    n += g->sym_value_entry[s] >= 0 && g->nodes[g->entry_node[g->sym_value_entry[s]]].is_op;
  if (!n) return 0;
  if (!ex->sym_val || g->batch_name)
    return kiln_set_error("graph executor: a node reports a size, but the graph has no symbols to bind it to");
  ex->late_syms = kiln_arena_alloc(ex->arena, sizeof(int32_t) * ((size_t)n + 1));
  ex->late_cap = kiln_arena_alloc(ex->arena, sizeof(char *) * ((size_t)n + 1));
  ex->late_pos = kiln_arena_alloc(ex->arena, sizeof(int32_t) * ((size_t)g->num_syms + 1));
  ex->late_seen = kiln_arena_alloc(ex->arena, sizeof(int64_t) * ((size_t)n + 1));
  memset(ex->late_seen, 0, sizeof(int64_t) * ((size_t)n + 1));
  for (int s = 0; s < g->num_syms; s++) ex->late_pos[s] = -1;
  for (int i = 0; i < ex->num_ops; i++) {
    GraphOp *op = &ex->ops[i];
    const GraphNode *nd = &g->nodes[op->node];
    int e = nd->first_entry;
    if (nd->report_dim >= 0) { /* a size the host function reports */
      size_t len = 0;
      const char *t = nd->report_dim < g->entry_ndim[e] ? dim_text(g, e, nd->report_dim, &len) : NULL;
      int s = t ? find_sym(g, t, len) : -1;
      if (s < 0 || g->sym_value_entry[s] >= 0)
        return kiln_set_error("graph executor: node %d ('%s') reports dimension %d of its output, which is not a "
                              "size symbol of its own",
                              op->node, nd->name, nd->report_dim);
      op->reports = s + 1;
      op->after = 1;
      /* a sibling may have reported it first (Unique's outputs) */
      if (ex->late_pos[s] < 0 && add_late(ex, op, s, nd->report_cap)) return -1;
    }
    /* run-time values its output holds, in element order */
    for (int k = 0; k < nd->num_outputs; k++)
      for (int el = 0;; el++) {
        int s = -1;
        for (int j = 0; j < g->num_syms && s < 0; j++)
          if (g->sym_value_entry[j] == e + k && g->sym_value_elem[j] == el) s = j;
        if (s < 0) break;
        DLDataType dt = g->entry_dtype[e + k];
        if (g->entry_ndim[e + k] != 1 || (g->entry_sym && g->entry_sym[e + k]) || el >= g->entry_shape[e + k][0] ||
            dt.code != kDLInt || (dt.bits != 64 && dt.bits != 32) || dt.lanes != 1 || g->sym_value_scale[s] != 0)
          return kiln_set_error("graph executor: the run-time value %s is element %d of output %d of node %d ('%s'), "
                                "which is not a static 1-D int64 or int32 tensor with that element",
                                g->sym_names[s], el, k, op->node, nd->name);
        if (ex->late_pos[s] < 0 && add_late(ex, op, s, NULL)) return -1;
      }
  }
  for (int s = 0; s < g->num_syms; s++)
    if (g->sym_value_entry[s] >= 0 && g->nodes[g->entry_node[g->sym_value_entry[s]]].is_op && ex->late_pos[s] < 0)
      return kiln_set_error("graph executor: the run-time value %s is element %d of entry %d, which no operator "
                            "computes (or the elements before it are missing)",
                            g->sym_names[s], g->sym_value_elem[s], g->sym_value_entry[s]);
  return 0;
}

int kiln_graph_sym_begin(KilnGraphExecutor *ex) {
  const JsonGraph *g = &ex->g;
  int64_t *vals = malloc(sizeof(int64_t) * ((size_t)g->num_syms + 1));
  if (!vals) return kiln_set_error("run: out of memory");
  memcpy(vals, ex->sym_val, sizeof(int64_t) * (size_t)g->num_syms);
  int rc = provisional(ex, vals, 0);
  if (!rc) rc = replan(ex, vals, 0, "run", NULL);
  free(vals);
  return rc;
}

/* Grow-and-retry: op (a node with report_grow, whose cap is only a first
 * guess) reported a size larger than its output holds, and wrote nothing.
 * Remember the size as the op's next first guess, plan the entries with
 * the op's size at it (still unbound), grow the buffers and call the op
 * again, which must now report the same size, within its output. */
static int grow_and_retry(KilnGraphExecutor *ex, GraphOp *op) {
  const JsonGraph *g = &ex->g;
  int k = op->late_first, t = ex->late_syms[k];
  int64_t v = op->reported;
  if (v > g->sym_hi[t])
    return kiln_set_error("the size %s is %lld, above its bound %lld", g->sym_names[t], (long long)v,
                          (long long)g->sym_hi[t]);
  ex->late_seen[k] = v;
  int64_t *vals = malloc(sizeof(int64_t) * ((size_t)g->num_syms + 1));
  if (!vals) return kiln_set_error("out of memory");
  memcpy(vals, ex->sym_val, sizeof(int64_t) * (size_t)g->num_syms);
  int rc = provisional(ex, vals, k);
  if (!rc) rc = replan(ex, vals, k, "growing the output for the size reported", NULL);
  free(vals);
  if (rc) return -1;
  ex->sym_stats.regrows++;
  if (kiln_graph_op_exec(ex, op)) return kiln_error_context("called again with its output grown");
  if (op->reported != v)
    return kiln_set_error("reported the size %s = %lld when called again with its output grown, but %lld before (a "
                          "function that grows its output must report the same size for the same inputs)",
                          g->sym_names[t], (long long)op->reported, (long long)v);
  return 0;
}

int kiln_graph_sym_report(KilnGraphExecutor *ex, GraphOp *op) {
  const JsonGraph *g = &ex->g;
  int s = op->reports - 1;
  if (!op->late_count) { /* reported before by a sibling: the same size */
    if (op->reported != ex->sym_val[s])
      return kiln_set_error("reported the size %s = %lld, but an earlier node reported %lld", g->sym_names[s],
                            (long long)op->reported, (long long)ex->sym_val[s]);
    return 0;
  }
  if (op->late_first != ex->late_bound)
    return kiln_set_error("binds %s out of order (the executor expected %s first)", g->sym_names[ex->late_syms[op->late_first]],
                          g->sym_names[ex->late_syms[ex->late_bound]]);
  if (g->nodes[op->node].report_grow && op->reports && op->reported > ex->sym_val[op->reports - 1] &&
      grow_and_retry(ex, op))
    return -1;
  int64_t *vals = malloc(sizeof(int64_t) * ((size_t)g->num_syms + 1));
  if (!vals) return kiln_set_error("out of memory");
  memcpy(vals, ex->sym_val, sizeof(int64_t) * (size_t)g->num_syms);
  int rc = 0;
  for (int k = op->late_first; k < op->late_first + op->late_count && !rc; k++) {
    int t = ex->late_syms[k];
    int64_t v = op->reported;
    if (g->sym_value_entry[t] >= 0) { /* a value the op computed */
      const DLTensor *o = &ex->entries[g->sym_value_entry[t]];
      const char *p = (const char *)o->data + o->byte_offset;
      int el = g->sym_value_elem[t];
      v = o->dtype.bits == 64 ? ((const int64_t *)p)[el] : ((const int32_t *)p)[el];
      if (v < g->sym_lo[t] || v > g->sym_hi[t])
        rc = kiln_set_error("element %d of its result is %lld, the run-time value %s, outside the bounds [%lld, %lld]%s",
                            el, (long long)v, g->sym_names[t], (long long)g->sym_lo[t], (long long)g->sym_hi[t],
                            v < 1 && g->sym_lo[t] == 1 ? " (an empty dimension is not supported for a size computed at run time)" : "");
    } else if (v < g->sym_lo[t] || v > ex->sym_val[t])
      rc = kiln_set_error("the size %s is %lld, outside [%lld, %lld] (its lower bound, and the upper bound its "
                          "output was sized for)",
                          g->sym_names[t], (long long)v, (long long)g->sym_lo[t], (long long)ex->sym_val[t]);
    vals[t] = v;
  }
  int nb = op->late_first + op->late_count;
  if (!rc) rc = provisional(ex, vals, nb);
  if (!rc) rc = replan(ex, vals, nb, "after the call", NULL);
  free(vals);
  return rc;
}

int kiln_graph_sym_resize(KilnGraphExecutor *ex, int e, const DLTensor *t, const char *what) {
  JsonGraph *g = &ex->g;
  if (g->batch_name) return batch_resize(ex, e, t, what);
  if (!ex->sym_val || !t) return 0;
  bool values = false;
  for (int s = 0; s < g->num_syms; s++) values |= g->sym_value_entry[s] == e;
  bool resized = g->entry_sym && g->entry_sym[e] && t->ndim == g->entry_ndim[e] && t->shape &&
              memcmp(t->shape, g->entry_shape[e], sizeof(int64_t) * (size_t)t->ndim);
  if (!values && !resized) return 0;
  int64_t *vals = malloc(sizeof(int64_t) * ((size_t)g->num_syms + 1));
  uint8_t *set = calloc((size_t)g->num_syms + 1, 1);
  int rc = !vals || !set ? kiln_set_error("%s: out of memory", what) : 0;
  if (!rc) memcpy(vals, ex->sym_val, sizeof(int64_t) * (size_t)g->num_syms);
  /* 1. the symbols the input's dimensions name, and the run-time shape
   * values its data holds */
  if (!rc && values) rc = bind_values(g, e, t, what, vals, set);
  for (int d = 0; resized && d < t->ndim && !rc; d++) {
    size_t len;
    const char *txt = dim_text(g, e, d, &len);
    int s = txt ? find_sym(g, txt, len) : -1;
    if (s < 0) continue;
    if (set[s] && vals[s] != t->shape[d])
      rc = kiln_set_error("%s: dimension %d is %s, which another dimension gives as %lld, but it is %lld", what, d,
                          g->sym_names[s], (long long)vals[s], (long long)t->shape[d]);
    else if (t->shape[d] < g->sym_lo[s] || t->shape[d] > g->sym_hi[s])
      rc = kiln_set_error("%s: dimension %d (%s) is %lld, outside the bounds [%lld, %lld] the model was compiled "
                          "for (compile with a wider bound, e.g. --input-shapes \"...,%s<=%lld\")",
                          what, d, g->sym_names[s], (long long)t->shape[d], (long long)g->sym_lo[s],
                          (long long)g->sym_hi[s], g->sym_names[s], (long long)t->shape[d]);
    vals[s] = t->shape[d];
    set[s] = 1;
  }
  bool bound = !rc;
  /* 2. the binding's plan, 3. buffers grown and shapes in place; the
   * sizes data-dependent ops report are unbound until the run */
  bool no_plan = false;
  if (!rc && ex->num_late) rc = provisional(ex, vals, 0);
  if (!rc) rc = replan(ex, vals, 0, what, &no_plan);
  /* A binding with no valid shape while other run-time values are still
   * to come (a Slice's starts given before its ends: the ends still at
   * their lower bound) waits for them: the values are kept, the shapes
   * stay the last good ones, and run refuses until a binding plans. */
  if (rc && bound && no_plan && values && !pending_ok(ex, set)) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kiln_get_error());
    kiln_arena_push(ex->arena);
    ex->sym_pending = kstrdup(msg);
    kiln_arena_pop();
    for (int s = 0; s < g->num_syms; s++) ex->sym_given[s] |= set[s];
    memcpy(ex->sym_val, vals, sizeof(int64_t) * (size_t)g->num_syms);
    kiln_clear_error();
    free(set);
    free(vals);
    return 0;
  }
  if (!rc) {
    for (int s = 0; s < g->num_syms; s++) ex->sym_given[s] |= set[s];
    ex->sym_pending = NULL;
  }
  free(set);
  free(vals);
  return rc;
}

int kiln_graph_sym_check_run(const KilnGraphExecutor *ex) {
  if (!ex->sym_pending) return 0;
  const JsonGraph *g = &ex->g;
  for (int s = 0; s < g->num_syms; s++)
    if (input_value(g, s) && !ex->sym_given[s])
      return kiln_set_error("run: input '%s' gives sizes at run time and has not been set (%s)",
                            g->nodes[g->entry_node[g->sym_value_entry[s]]].name, ex->sym_pending);
  return kiln_set_error("run: %s", ex->sym_pending);
}
