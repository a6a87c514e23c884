/*
 * graph_executor.c - running a compiled model: TVM's graph executor in C.
 *
 * Creation does all the work once (TVM's GraphExecutor::Init, SetupStorage
 * and SetupOpExecs):
 *   1. graph_json.c parses and validates the JSON into a JsonGraph;
 *   2. the storage plan is the JSON's storage_id (and kiln_storage_offset),
 *      or kiln_graph_plan_memory_views' when it has none; each storage id
 *      becomes one 64-byte aligned CPU buffer, zeroed, sized for the
 *      largest entry sharing it, and each entry a DLTensor over its buffer
 *      at its offset (a view into a concatenation's output: the
 *      concatenation itself is then not called, check_views);
 *   3. each "tvm_op" node's function is looked up in the module (a missing
 *      one is an error naming the node and listing what the module has) and
 *      its argument list built -- inputs then outputs, one DLTensor each,
 *      flattened to 1-D when the node says flatten_data -- so run() is a loop
 *      of direct calls with nothing to look up or allocate;
 *   4. a module's "params" blob, if any, is loaded.
 *
 * Arguments (arg_nodes) whose names a loaded params blob holds are
 * parameters; the others are the inputs, indexed in arg_nodes order.
 * set_input copies in after checking shape and dtype; set_input_zero_copy
 * points the argument's entry (and every operator argument reading it) at
 * the caller's memory instead.
 *
 * Threads: an executor owns its arena, buffers and argument lists and
 * shares only the module (read-only code and blobs, refcounted with
 * atomics), so executors of one module run concurrently without locks.
 *
 * Exports: kiln_graph_executor_*; internally kiln_graph_op_error.
 */
#include "runtime_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---- */

static const char *node_name(const KilnGraphExecutor *ex, int n) { return ex->g.nodes[n].name; }

int kiln_graph_op_error(const KilnGraphExecutor *ex, const GraphOp *op) {
  if (!kiln_get_error()[0]) kiln_set_error("the function failed without setting an error");
  return kiln_error_context("graph executor: node %d ('%s', function '%s')", op->node,
                            node_name(ex, op->node), ex->g.nodes[op->node].func_name);
}

static int same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/* Check t against entry e: "<what>: shape (3, 4) does not match the
 * graph's (1, 4096)". */
static int check_tensor(const KilnGraphExecutor *ex, int e, const DLTensor *t, const char *what) {
  const DLTensor *want = &ex->entries[e];
  if (!t) return kiln_set_error("%s: the tensor is NULL", what);
  int ok = t->ndim == want->ndim && (t->ndim == 0 || t->shape);
  for (int d = 0; ok && d < t->ndim; d++) ok = t->shape[d] == want->shape[d];
  if (!ok) {
    StrBuf a = {0}, b = {0};
    if (t->ndim >= 0 && (t->ndim == 0 || t->shape)) kiln_put_shape(&a, t->ndim, t->shape, 0);
    else sb_printf(&a, "(ndim %d)", t->ndim);
    kiln_put_shape(&b, want->ndim, want->shape, 0);
    kiln_set_error("%s: shape %s does not match the graph's %s", what, a.data, b.data);
    sb_free(&a);
    sb_free(&b);
    return -1;
  }
  if (!same_dtype(t->dtype, want->dtype)) {
    char d1[48], d2[48];
    return kiln_set_error("%s: dtype %s does not match the graph's %s", what,
                          kiln_dtype_format(t->dtype, d1, sizeof d1),
                          kiln_dtype_format(want->dtype, d2, sizeof d2));
  }
  return 0;
}

/* Where entry e lives in its storage. */
static void *entry_data(const KilnGraphExecutor *ex, int e) {
  return (char *)ex->storage[ex->storage_id[e]] + ex->storage_offset[e];
}

/* Point every entry in storage s that is not bound to caller memory, and
 * every operator argument reading or writing one, at data. */
void kiln_graph_bind_storage(KilnGraphExecutor *ex, int s, void *data) {
  ex->storage[s] = data;
  for (int e = 0; e < ex->g.num_entries; e++)
    if (ex->storage_id[e] == s && !ex->zero_copy[e]) ex->entries[e].data = entry_data(ex, e);
  for (int i = 0; i < ex->num_ops; i++) {
    GraphOp *op = &ex->ops[i];
    for (int k = 0; k < op->nargs; k++)
      if (ex->storage_id[op->eids[k]] == s && !ex->zero_copy[op->eids[k]])
        op->tensors[k].data = entry_data(ex, op->eids[k]);
  }
}

/* Copy-on-write: before anything writes entry e's storage, give it memory
 * of its own if it reads the module's weights in place (mapped read-only). */
static int own_storage(KilnGraphExecutor *ex, int e) {
  int s = ex->storage_id[e];
  if (ex->owned[s]) return 0;
  size_t nbytes = (size_t)kiln_graph_entry_bytes(&ex->g, e);
  const KilnDeviceAPI *cpu = kiln_device_api((DLDevice){kDLCPU, 0});
  void *p = cpu->alloc((DLDevice){kDLCPU, 0}, nbytes, KILN_ARRAY_ALIGN);
  if (!p) return kiln_error_context("graph executor: a copy of param '%s' (%zu bytes)",
                                    ex->g.nodes[ex->g.entry_node[e]].name, nbytes);
  memcpy(p, ex->storage[s], nbytes);
  ex->owned[s] = 1;
  kiln_graph_bind_storage(ex, s, p);
  return 0;
}

/* Point entry e, and every operator argument reading or writing it, at data. */
static void bind_entry(KilnGraphExecutor *ex, int e, void *data) {
  ex->entries[e].data = data;
  for (int i = 0; i < ex->num_ops; i++) {
    GraphOp *op = &ex->ops[i];
    for (int k = 0; k < op->nargs; k++)
      if (op->eids[k] == e) op->tensors[k].data = data;
  }
}

static void restore_entry(KilnGraphExecutor *ex, int e) {
  if (!ex->zero_copy[e]) return;
  ex->zero_copy[e] = 0;
  bind_entry(ex, e, entry_data(ex, e));
}

/* The non-param arguments, in arg_nodes order. */
static void collect_inputs(KilnGraphExecutor *ex) {
  ex->num_inputs = 0;
  for (int i = 0; i < ex->g.num_args; i++) {
    int n = ex->g.arg_nodes[i];
    if (!ex->is_param[n]) ex->inputs[ex->num_inputs++] = n;
  }
}

/* ---- creation ---- */

/* The embedded params whose names are arguments of the graph: their
 * storage becomes their data in the module (when no other entry shares
 * that storage, which the planner guarantees for arguments) and they count
 * as parameters. */
static int bind_params(KilnGraphExecutor *ex, const KilnParamIndex *pi, const unsigned char *pdata,
                       int in_place) {
  if (!pi) return 0;
  JsonGraph *g = &ex->g;
  uint8_t *shared = kiln_arena_alloc(ex->arena, (size_t)ex->num_storage + 1);
  for (int e = 0; e < g->num_entries; e++) {
    const GraphNode *nd = &g->nodes[g->entry_node[e]];
    /* storage an operator writes is not a param's alone */
    if (nd->is_op && strcmp(nd->func_name, "__nop")) shared[ex->storage_id[e]] = 1;
  }
  for (int i = 0; i < pi->num; i++) {
    intptr_t node = (intptr_t)pm_get(&ex->arg_by_name, pi->names[i]);
    if (!node) continue; /* as TVM: a param the graph no longer uses */
    int e = g->nodes[node - 1].first_entry;
    DLTensor t = pi->tensors[i];
    t.data = (void *)(pdata + pi->offsets[i]);
    char what[200];
    snprintf(what, sizeof what, "the module's param '%.80s'", pi->names[i]);
    if (check_tensor(ex, e, &t, what)) return -1;
    ex->is_param[node - 1] = 1;
    int s = ex->storage_id[e];
    if (shared[s] || !in_place) continue; /* copied in after the buffers exist */
    ex->storage[s] = t.data;
    ex->params_in_place = 1;
  }
  return 0;
}

/* Storage: the JSON's ids (made dense) or a plan of our own; then the
 * buffers and the entry tensors.  A storage id that holds only an
 * embedded param (and "__nop" views of it) is the param's data in the
 * mapped module, not a buffer: inplace[s] is its address, or NULL. */
static int setup_storage(KilnGraphExecutor *ex, const KilnParamIndex *pi,
                         const unsigned char *pdata) {
  JsonGraph *g = &ex->g;
  int ne = g->num_entries;
  ex->storage_id = kiln_arena_alloc(ex->arena, (size_t)ne * sizeof(int32_t) + 1);
  ex->storage_offset = kiln_arena_alloc(ex->arena, (size_t)ne * sizeof(uint64_t) + 1);
  if (g->device_type)
    for (int e = 0; e < ne; e++)
      if (g->device_type[e] != kDLCPU)
        return kiln_set_error("graph executor: attrs.device_index[%d] (output %d of node %d '%s') "
                              "is device type %d (%s); this executor runs on the cpu (1) only", e,
                              e - g->nodes[g->entry_node[e]].first_entry, g->entry_node[e],
                              node_name(ex, g->entry_node[e]), g->device_type[e],
                              kiln_device_name(g->device_type[e]));
  if (kiln_graph_storage_ids(g, ex->storage_id, ex->storage_offset, &ex->num_storage,
                             &ex->planned_here))
    return kiln_error_context("graph executor");
  uint64_t *bytes = kiln_arena_alloc(ex->arena, (size_t)ex->num_storage * sizeof(uint64_t) + 1);
  ex->plan.naive_bytes = 0;
  uint8_t *is_view = kiln_arena_alloc(ex->arena, (size_t)ne + 1);
  ex->plan.num_views = kiln_graph_view_inputs(g, ex->storage_id, is_view);
  for (int e = 0; e < ne; e++) {
    uint64_t b = kiln_graph_entry_bytes(g, e), at = ex->storage_offset[e];
    ex->plan.naive_bytes += b;
    if (at) {
      const GraphNode *nd = &g->nodes[g->entry_node[e]];
      /* a view is plain memory at an offset: a kernel's output on the CPU
       * in a graph of static sizes, read by a kiln_concat node sharing its
       * storage (which check_views lays out): any other entry at an offset
       * would overlap another */
      if (ex->dev.device_type != kDLCPU || g->batch_name || g->num_syms || !nd->is_op ||
          !strcmp(nd->func_name, "__nop") || at % KILN_ARRAY_ALIGN || !is_view[e])
        return kiln_set_error("graph executor: attrs.kiln_storage_offset[%d] (output %d of node %d "
                              "'%s') is %llu: only a kernel's output in a static CPU graph that a "
                              "kiln_concat node sharing its storage reads may lie at an offset, a "
                              "multiple of %d", e, e - nd->first_entry,
                              g->entry_node[e], nd->name, (unsigned long long)at, KILN_ARRAY_ALIGN);
    }
    if (bytes[ex->storage_id[e]] < at + b) bytes[ex->storage_id[e]] = at + b;
  }
  ex->plan.num_storage = ex->num_storage;
  ex->plan.planned_bytes = 0;
  ex->storage_cap = bytes;
  ex->storage = kiln_arena_alloc(ex->arena, (size_t)ex->num_storage * sizeof(void *) + 1);
  ex->owned = kiln_arena_alloc(ex->arena, (size_t)ex->num_storage + 1);
  ex->entries = kiln_arena_alloc(ex->arena, (size_t)ne * sizeof(DLTensor) + 1);
  ex->zero_copy = kiln_arena_alloc(ex->arena, (size_t)ne + 1);
  /* the buffers live where the module's kernels run: the CPU, or its GPU */
  DLDevice dev = ex->dev;
  const KilnDeviceAPI *api = kiln_device_api(dev);
  if (!api) return kiln_error_context("graph executor");
  int on_cpu = dev.device_type == kDLCPU;
  for (int e = 0; e < ne; e++) {
    DLTensor *t = &ex->entries[e];
    t->device = dev;
    t->ndim = g->entry_ndim[e];
    t->dtype = g->entry_dtype[e];
    t->shape = g->entry_shape[e];
  }
  /* params stay in the mapped file on the CPU; a GPU gets them uploaded once */
  if (bind_params(ex, pi, pdata, on_cpu)) return -1;
  for (int s = 0; s < ex->num_storage; s++) {
    if (ex->storage[s]) { /* a param, in place */
      ex->plan.num_storage--;
      continue;
    }
    ex->plan.planned_bytes += bytes[s];
    if (bytes[s] > SIZE_MAX) return kiln_set_error("graph executor: storage %d is too large", s);
    ex->storage[s] = api->alloc(dev, (size_t)bytes[s], KILN_ARRAY_ALIGN);
    if (!ex->storage[s])
      return kiln_error_context("graph executor: storage %d (%llu bytes)", s,
                                (unsigned long long)bytes[s]);
    if (on_cpu) memset(ex->storage[s], 0, (size_t)bytes[s]);
    ex->owned[s] = 1;
  }
  for (int e = 0; e < ne; e++) ex->entries[e].data = entry_data(ex, e);
  /* params that could not stay in place (their storage is shared): copied */
  for (int i = 0; pi && i < pi->num; i++) {
    intptr_t node = (intptr_t)pm_get(&ex->arg_by_name, pi->names[i]);
    if (!node) continue;
    int e = g->nodes[node - 1].first_entry;
    if (!ex->owned[ex->storage_id[e]]) continue;
    size_t nb = (size_t)kiln_graph_entry_bytes(g, e);
    if (on_cpu)
      memcpy(ex->entries[e].data, pdata + pi->offsets[i], nb);
    else if (api->copy(pdata + pi->offsets[i], (DLDevice){kDLCPU, 0}, ex->entries[e].data, dev, nb))
      return kiln_error_context("graph executor: uploading param '%s'", pi->names[i]);
  }
  return 0;
}

/* Whether concatenation node n's inputs are views laid end to end in its
 * output's storage, so it has nothing to do (1), or none of them shares
 * that storage, so it copies (0).  Anything between is a broken plan: the
 * copy would read what it writes. */
static int check_views(const KilnGraphExecutor *ex, int n) {
  const JsonGraph *g = &ex->g;
  const GraphNode *nd = &g->nodes[n];
  int out = nd->first_entry, shared = 0;
  uint64_t at = ex->storage_offset[out];
  for (int i = 0; i < nd->num_inputs; i++) {
    int e = nd->inputs[i];
    if (ex->storage_id[e] == ex->storage_id[out]) shared++;
    if (ex->storage_id[e] == ex->storage_id[out] && ex->storage_offset[e] != at)
      return kiln_set_error("graph executor: node %d ('%s'): input %d (entry %d) lies at byte %llu "
                            "of the output's storage %d, not at %llu where the concatenation "
                            "puts it", n, nd->name, i, e,
                            (unsigned long long)ex->storage_offset[e], ex->storage_id[out],
                            (unsigned long long)at);
    at += kiln_graph_entry_bytes(g, e);
  }
  if (shared && (shared != nd->num_inputs || nd->num_outputs != 1 ||
                 at - ex->storage_offset[out] != kiln_graph_entry_bytes(g, out)))
    return kiln_set_error("graph executor: node %d ('%s'): %d of its %d inputs share the output's "
                          "storage %d; a concatenation's inputs are all views of its output or "
                          "none is", n, nd->name, shared, nd->num_inputs, ex->storage_id[out]);
  return shared > 0;
}

static int setup_ops(KilnGraphExecutor *ex) {
  JsonGraph *g = &ex->g;
  ex->ops = kiln_arena_alloc(ex->arena, (size_t)g->num_nodes * sizeof(GraphOp) + 1);
  for (int n = 0; n < g->num_nodes; n++) {
    GraphNode *nd = &g->nodes[n];
    if (!nd->is_op) continue;
    if (!strcmp(nd->func_name, "__nop")) {
      /* computes nothing: its output must already be its input's memory */
      if (nd->num_inputs < 1 || nd->num_outputs != 1 ||
          ex->storage_id[nd->first_entry] != ex->storage_id[nd->inputs[0]] ||
          ex->storage_offset[nd->first_entry] != ex->storage_offset[nd->inputs[0]])
        return kiln_set_error("graph executor: node %d ('%s'): a \"__nop\" node needs one output "
                              "sharing storage and offset with its first input", n, nd->name);
      continue;
    }
    if (nd->concat_view) { /* its inputs were written in place: nothing to copy */
      int views = check_views(ex, n);
      if (views < 0) return -1;
      if (views) continue;
    }
    GraphOp *op = &ex->ops[ex->num_ops];
    op->node = n;
    if (nd->kiln_host) { /* a host function of the runtime (strings.c) */
      if (kiln_module_device(ex->mod).device_type != kDLCPU)
        return kiln_set_error("graph executor: node %d ('%s') calls host function '%s', which runs on the CPU only; "
                              "compile the model for the CPU", n, nd->name, nd->func_name);
      bool loop = !strcmp(nd->func_name, "runtime.loop"); /* the executor runs a Loop's body (loop.c) */
      if (!loop && strncmp(nd->func_name, "runtime.strings.", 16) && strncmp(nd->func_name, "runtime.dd.", 11))
        return kiln_set_error("graph executor: node %d ('%s'): host function '%s' is not one of the runtime's "
                              "(runtime.strings.*, runtime.dd.*, runtime.loop)", n, nd->name, nd->func_name);
      if (loop ? kiln_loop_setup_op(ex, op) : kiln_func_get_global(nd->func_name, &op->fn)) return -1;
      if (!op->fn)
        return kiln_set_error("graph executor: node %d ('%s') calls host function '%s', which this runtime does not "
                              "have (a runtime older than the compiler?)", n, nd->name, nd->func_name);
      op->extra = 2;
      if (!ex->str_run) ex->str_run = kiln_arena_new();
    } else if (kiln_module_get_function(ex->mod, nd->func_name, &op->fn))
      return kiln_error_context("graph executor: node %d ('%s')", n, nd->name);
    ex->num_ops++; /* counted once it holds a reference, for the cleanup */
    op->call = op->fn->fn;
    op->resource = op->fn->resource;
    op->nargs = nd->num_inputs + nd->num_outputs;
    size_t na = (size_t)op->nargs + 3;
    op->args = kiln_arena_alloc(ex->arena, na * sizeof(KilnValue));
    op->codes = kiln_arena_alloc(ex->arena, na * sizeof(int));
    op->tensors = kiln_arena_alloc(ex->arena, na * sizeof(DLTensor));
    op->eids = kiln_arena_alloc(ex->arena, na * sizeof(int32_t));
    int64_t *flat = nd->flatten_data ? kiln_arena_alloc(ex->arena, na * sizeof(int64_t)) : NULL;
    for (int k = 0; k < op->nargs; k++) {
      int32_t e = k < nd->num_inputs ? nd->inputs[k] : nd->first_entry + (k - nd->num_inputs);
      op->eids[k] = e;
      op->tensors[k] = ex->entries[e];
      if (flat) {
        flat[k] = 1;
        for (int d = 0; d < ex->entries[e].ndim; d++) flat[k] *= ex->entries[e].shape[d];
        op->tensors[k].ndim = 1;
        op->tensors[k].shape = &flat[k];
      }
      op->args[k].v_handle = &op->tensors[k];
      op->codes[k] = KILN_DLTENSOR;
    }
    if (op->extra) {
      op->args[op->nargs].v_str = nd->kiln_host;
      op->codes[op->nargs] = KILN_STR;
      op->args[op->nargs + 1].v_handle = &ex->str_run;
      op->codes[op->nargs + 1] = KILN_HANDLE;
    }
    if (op->extra && nd->report_dim >= 0) { /* a data-dependent op: where it reports its size */
      op->extra = 3;
      op->args[op->nargs + 2].v_handle = &op->reported;
      op->codes[op->nargs + 2] = KILN_HANDLE;
    }
    if (g->batch_name && kiln_graph_batch_setup_op(ex, op)) return -1;
  }
  return 0;
}

static int setup_names(KilnGraphExecutor *ex) {
  JsonGraph *g = &ex->g;
  ex->arg_by_name.strkeys = 1;
  for (int i = 0; i < g->num_args; i++) {
    int n = g->arg_nodes[i];
    intptr_t other = (intptr_t)pm_get(&ex->arg_by_name, g->nodes[n].name);
    if (other)
      return kiln_set_error("graph executor: arguments node %d and node %d are both called '%s'",
                            (int)other - 1, n, g->nodes[n].name);
    pm_put(&ex->arg_by_name, g->nodes[n].name, (void *)(intptr_t)(n + 1));
  }
  ex->is_param = kiln_arena_alloc(ex->arena, (size_t)g->num_nodes + 1);
  ex->inputs = kiln_arena_alloc(ex->arena, (size_t)g->num_args * sizeof(int32_t) + 1);
  collect_inputs(ex);
  ex->output_names = kiln_arena_alloc(ex->arena, (size_t)g->num_heads * sizeof(char *) + 1);
  for (int h = 0; h < g->num_heads; h++) {
    int e = g->heads[h], n = g->entry_node[e];
    const GraphNode *nd = &g->nodes[n];
    if (nd->kiln_output_name && *nd->kiln_output_name) {
      ex->output_names[h] = nd->kiln_output_name;
    } else if (nd->num_outputs == 1) {
      ex->output_names[h] = nd->name;
    } else {
      size_t len = strlen(nd->name) + 16;
      char *s = kiln_arena_alloc(ex->arena, len);
      snprintf(s, len, "%s:%d", nd->name, e - nd->first_entry);
      ex->output_names[h] = s;
    }
  }
  return 0;
}

/* An executor over json and mod's kernels, with the params of pi (if not
 * NULL) bound in place from pdata. */
static int check_device(KilnModule *mod, DLDevice dev) {
  DLDevice built = kiln_module_device(mod);
  if (dev.device_type != built.device_type)
    return kiln_set_error("graph_executor_create: module '%s' runs on %s, not on %s (build it for that target)",
                          kiln_module_path(mod), kiln_device_name(built.device_type), kiln_device_name(dev.device_type));
  if (dev.device_type == kDLCPU) {
    if (dev.device_id != 0) return kiln_set_error("graph_executor_create: the cpu is device 0, not %d", dev.device_id);
    return 0;
  }
  const KilnDeviceAPI *api = kiln_device_api(dev);
  /* a synchronize names the device's absence (and how many there are) */
  if (!api || api->sync(dev)) return kiln_error_context("graph_executor_create");
  return 0;
}

static int create(const char *json, size_t len, KilnModule *mod, DLDevice dev, const KilnParamIndex *pi,
                  const unsigned char *pdata, KilnGraphExecutor **out) {
  if (!out) return kiln_set_error("graph_executor_create: out is NULL");
  *out = NULL;
  if (!mod) return kiln_set_error("graph_executor_create: the module is NULL");
  if (!json) return kiln_set_error("graph_executor_create: the graph JSON is NULL");
  if (check_device(mod, dev)) return -1;
  if (!len) len = strlen(json);
  KilnGraphExecutor *ex = xcalloc(1, sizeof *ex);
  ex->tag = KILN_TAG_EXECUTOR;
  ex->arena = kiln_arena_new();
  ex->mod = mod;
  ex->dev = dev;
  kiln_module_retain(mod);
  if (kiln_graph_parse(json, len, ex->arena, &ex->g) || setup_names(ex) || kiln_graph_values_init(ex) || kiln_graph_sym_init(ex) ||
      setup_storage(ex, pi, pdata) || setup_ops(ex) || kiln_graph_sym_late_init(ex)) {
    kiln_graph_executor_free(ex);
    return -1;
  }
  collect_inputs(ex);
  if (kiln_graph_batch_start(ex)) {
    kiln_graph_executor_free(ex);
    return -1;
  }
  *out = ex;
  return 0;
}

int kiln_graph_executor_create_from_json_on(const char *json, size_t len, KilnModule *mod, DLDevice dev,
                                            KilnGraphExecutor **out) {
  return create(json, len, mod, dev, NULL, NULL, out);
}

int kiln_graph_executor_create_from_json(const char *json, size_t len, KilnModule *mod,
                                         KilnGraphExecutor **out) {
  return create(json, len, mod, kiln_module_device(mod), NULL, NULL, out);
}

int kiln_graph_executor_create(KilnModule *mod, KilnGraphExecutor **out) {
  return kiln_graph_executor_create_on(mod, kiln_module_device(mod), out);
}

int kiln_graph_executor_create_on(KilnModule *mod, DLDevice dev, KilnGraphExecutor **out) {
  return kiln_graph_executor_create_blob(mod, dev, "graph_json", out);
}

int kiln_graph_executor_create_blob(KilnModule *mod, DLDevice dev, const char *blob, KilnGraphExecutor **out) {
  const void *json;
  size_t len;
  if (!out) return kiln_set_error("graph_executor_create: out is NULL");
  *out = NULL;
  if (!mod) return kiln_set_error("graph_executor_create: the module is NULL");
  if (kiln_module_get_blob(mod, blob, &json, &len)) return -1;
  if (!json || !len)
    return kiln_set_error("graph_executor_create: module '%s' has no \"%s\" blob (was it "
                          "built from a graph?)", kiln_module_path(mod), blob);
  const unsigned char *pdata;
  const KilnParamIndex *pi = kiln_module_params(mod, &pdata);
  if (create(json, len, mod, dev, pi, pdata, out))
    return kiln_error_context("module '%s'", kiln_module_path(mod));
  /* a module that embeds a TVM params blob instead (written by hand or by
   * another tool): copied in */
  const void *params;
  size_t plen;
  if (!pi && !kiln_module_get_blob(mod, "params", &params, &plen) && params &&
      kiln_graph_executor_load_params(*out, params, plen)) {
    kiln_error_context("module '%s': its \"params\" blob", kiln_module_path(mod));
    kiln_graph_executor_free(*out);
    *out = NULL;
    return -1;
  }
  return 0;
}

int kiln_graph_executor_free(KilnGraphExecutor *ex) {
  if (!ex) return 0;
  ex->tag = KILN_TAG_NONE;
  for (int i = 0; i < ex->num_ops; i++) kiln_func_free(ex->ops[i].fn);
  kiln_loop_free(ex);
  if (ex->storage) {
    DLDevice dev = ex->dev;
    const KilnDeviceAPI *api = kiln_device_api(dev);
    for (int s = 0; s < ex->num_storage; s++)
      if (ex->storage[s] && ex->owned[s] && api) api->free(dev, ex->storage[s]);
  }
  kiln_graph_sym_free(ex);
  for (int v = 0; ex->variant_ex && v < ex->g.num_variants; v++) kiln_graph_executor_free(ex->variant_ex[v]);
  kiln_strings_free(ex);
  pm_free(&ex->arg_by_name);
  kiln_module_free(ex->mod);
  kiln_arena_free(ex->arena);
  free(ex);
  return 0;
}

/* ---- params ---- */

int kiln_graph_executor_load_params(KilnGraphExecutor *ex, const void *bytes, size_t size) {
  if (!ex) return kiln_set_error("load_params: the executor is NULL");
  int n;
  char **names;
  DLTensor **arrays;
  if (kiln_params_load(bytes, size, &n, &names, &arrays)) return kiln_error_context("load_params");
  int rc = 0;
  /* check everything before copying anything */
  for (int i = 0; i < n && !rc; i++) {
    intptr_t node = (intptr_t)pm_get(&ex->arg_by_name, names[i]);
    if (!node) continue; /* as TVM: a param the graph no longer uses */
    char what[200];
    snprintf(what, sizeof what, "load_params: param '%.80s' (array %d of the blob)", names[i], i);
    rc = check_tensor(ex, ex->g.nodes[node - 1].first_entry, arrays[i], what);
  }
  for (int i = 0; i < n && !rc; i++) {
    intptr_t node = (intptr_t)pm_get(&ex->arg_by_name, names[i]);
    if (!node) continue;
    int e = ex->g.nodes[node - 1].first_entry;
    restore_entry(ex, e);
    rc = own_storage(ex, e);
    if (!rc) rc = kiln_array_copy(arrays[i], &ex->entries[e]);
    ex->is_param[node - 1] = 1;
  }
  kiln_params_free(n, names, arrays);
  collect_inputs(ex);
  return rc;
}

/* ---- inputs and outputs ---- */

int kiln_graph_executor_num_inputs(const KilnGraphExecutor *ex) { return ex ? ex->num_inputs : 0; }

int kiln_graph_executor_num_outputs(const KilnGraphExecutor *ex) {
  return ex ? ex->g.num_heads : 0;
}

static void fill_info(const KilnGraphExecutor *ex, int e, const char *name, KilnTensorInfo *info) {
  info->name = name;
  info->ndim = ex->entries[e].ndim;
  info->shape = ex->entries[e].shape;
  info->dtype = ex->entries[e].dtype;
}

static int check_input_index(const KilnGraphExecutor *ex, const char *fname, int index) {
  if (!ex) return kiln_set_error("%s: the executor is NULL", fname);
  if (index < 0 || index >= ex->num_inputs)
    return kiln_set_error("%s: input %d does not exist (the graph has %d input%s)", fname, index,
                          ex->num_inputs, ex->num_inputs == 1 ? "" : "s");
  return 0;
}

static int check_output_index(const KilnGraphExecutor *ex, const char *fname, int index) {
  if (!ex) return kiln_set_error("%s: the executor is NULL", fname);
  if (index < 0 || index >= ex->g.num_heads)
    return kiln_set_error("%s: output %d does not exist (the graph has %d output%s)", fname, index,
                          ex->g.num_heads, ex->g.num_heads == 1 ? "" : "s");
  return 0;
}

int kiln_graph_executor_input_info(const KilnGraphExecutor *ex, int index, KilnTensorInfo *info) {
  if (check_input_index(ex, "input_info", index)) return -1;
  if (!info) return kiln_set_error("input_info: info is NULL");
  int n = ex->inputs[index];
  fill_info(ex, ex->g.nodes[n].first_entry, ex->g.nodes[n].name, info);
  return 0;
}

int kiln_graph_executor_output_info(const KilnGraphExecutor *ex, int index, KilnTensorInfo *info) {
  if (check_output_index(ex, "output_info", index)) return -1;
  if (!info) return kiln_set_error("output_info: info is NULL");
  fill_info(ex, ex->g.heads[index], ex->output_names[index], info);
  return 0;
}

/* "'a', 'b', 'c'" (the first 16) */
static void put_input_names(StrBuf *sb, const KilnGraphExecutor *ex) {
  if (!ex->num_inputs) sb_puts(sb, "none");
  for (int i = 0; i < ex->num_inputs && i < 16; i++)
    sb_printf(sb, "%s'%s'", i ? ", " : "", node_name(ex, ex->inputs[i]));
  if (ex->num_inputs > 16) sb_printf(sb, ", ... %d more", ex->num_inputs - 16);
}

int kiln_graph_executor_input_index(const KilnGraphExecutor *ex, const char *name, int *index) {
  if (!ex || !name || !index) return kiln_set_error("input_index: a NULL argument");
  for (int i = 0; i < ex->num_inputs; i++)
    if (!strcmp(node_name(ex, ex->inputs[i]), name)) {
      *index = i;
      return 0;
    }
  StrBuf sb = {0};
  put_input_names(&sb, ex);
  kiln_set_error("the graph has no input '%s' (its inputs: %s)", name, sb.data);
  sb_free(&sb);
  return -1;
}

/* The node of the argument called name (inputs and params), or -1 + error. */
static int arg_node(const KilnGraphExecutor *ex, const char *fname, const char *name) {
  intptr_t n = (intptr_t)pm_get(&ex->arg_by_name, name);
  if (n) return (int)n - 1;
  StrBuf sb = {0};
  put_input_names(&sb, ex);
  kiln_set_error("%s: the graph has no input or param '%s' (its inputs: %s)", fname, name, sb.data);
  sb_free(&sb);
  return -1;
}

static int set_arg(KilnGraphExecutor *ex, int node, const DLTensor *t) {
  char what[160];
  snprintf(what, sizeof what, "set_input '%.100s'", node_name(ex, node));
  int e = ex->g.nodes[node].first_entry;
  if (kiln_graph_sym_resize(ex, e, t, what) || check_tensor(ex, e, t, what)) return -1;
  restore_entry(ex, e);
  if (own_storage(ex, e)) return -1;
  if (kiln_array_copy(t, &ex->entries[e])) return kiln_error_context("%s", what);
  if (kiln_dtype_is_string(t->dtype) && kiln_strings_own_input(ex, node, e)) return kiln_error_context("%s", what);
  return 0;
}

int kiln_graph_executor_set_input(KilnGraphExecutor *ex, int index, const DLTensor *t) {
  if (check_input_index(ex, "set_input", index)) return -1;
  return set_arg(ex, ex->inputs[index], t);
}

int kiln_graph_executor_set_input_by_name(KilnGraphExecutor *ex, const char *name,
                                          const DLTensor *t) {
  if (!ex || !name) return kiln_set_error("set_input: the executor or the name is NULL");
  int n = arg_node(ex, "set_input", name);
  return n < 0 ? -1 : set_arg(ex, n, t);
}

int kiln_graph_executor_set_input_zero_copy(KilnGraphExecutor *ex, const char *name, DLTensor *t) {
  if (!ex || !name) return kiln_set_error("set_input_zero_copy: the executor or the name is NULL");
  int n = arg_node(ex, "set_input_zero_copy", name);
  if (n < 0) return -1;
  char what[160];
  snprintf(what, sizeof what, "set_input_zero_copy '%.100s'", name);
  int e = ex->g.nodes[n].first_entry;
  if (kiln_graph_sym_resize(ex, e, t, what) || check_tensor(ex, e, t, what)) return -1;
  if (t->device.device_type != ex->entries[e].device.device_type)
    return kiln_set_error("%s: the tensor is on %s; this executor's memory is on %s (use set_input, which copies)",
                          what, kiln_device_name(t->device.device_type),
                          kiln_device_name(ex->entries[e].device.device_type));
  if (!kiln_tensor_is_compact(t)) return kiln_set_error("%s: the tensor must be compact", what);
  if (kiln_dtype_is_string(t->dtype))
    return kiln_set_error("%s: string tensors are copied in (use set_input): the executor keeps its own copy of "
                          "the text", what);
  char *data = (char *)t->data + t->byte_offset;
  if ((uintptr_t)data % KILN_ARRAY_ALIGN)
    return kiln_set_error("%s: the data must be %d-byte aligned (it is at %p)", what,
                          KILN_ARRAY_ALIGN, (void *)data);
  if (!data && kiln_array_nbytes(t)) return kiln_set_error("%s: the data is NULL", what);
  bind_entry(ex, e, data);
  ex->zero_copy[e] = 1;
  return 0;
}

static int copy_out(const KilnGraphExecutor *ex, int e, const char *what, DLTensor **out) {
  const DLTensor *t = &ex->entries[e];
  if (kiln_dtype_is_string(t->dtype)) /* the text too: it lives only until the next run */
    return kiln_strings_copy_out(t, out) ? kiln_error_context("%s", what) : 0;
  /* a copy on the host, wherever the executor's memory is */
  if (kiln_array_empty(t->ndim, t->shape, t->dtype, (DLDevice){kDLCPU, 0}, out) || kiln_array_copy(t, *out)) {
    kiln_array_free(*out);
    *out = NULL;
    return kiln_error_context("%s", what);
  }
  return 0;
}

int kiln_graph_executor_get_input(KilnGraphExecutor *ex, int index, DLTensor **out) {
  if (!out) return kiln_set_error("get_input: out is NULL");
  *out = NULL;
  if (check_input_index(ex, "get_input", index)) return -1;
  return copy_out(ex, ex->g.nodes[ex->inputs[index]].first_entry, "get_input", out);
}

int kiln_graph_executor_get_output(KilnGraphExecutor *ex, int index, DLTensor **out) {
  if (!out) return kiln_set_error("get_output: out is NULL");
  *out = NULL;
  if (check_output_index(ex, "get_output", index)) return -1;
  return copy_out(ex, ex->g.heads[index], "get_output", out);
}

int kiln_graph_executor_copy_output(KilnGraphExecutor *ex, int index, DLTensor *to) {
  if (check_output_index(ex, "copy_output", index)) return -1;
  char what[160];
  snprintf(what, sizeof what, "copy_output %d ('%.100s')", index, ex->output_names[index]);
  if (check_tensor(ex, ex->g.heads[index], to, what)) return -1;
  if (kiln_array_copy(&ex->entries[ex->g.heads[index]], to)) return kiln_error_context("%s", what);
  return 0;
}

/* ---- running ---- */

int kiln_graph_executor_run(KilnGraphExecutor *ex) {
  if (!ex) return kiln_set_error("run: the executor is NULL");
  if (ex->params_in_place && !ex->params_checked) {
    if (kiln_module_check_params(ex->mod)) return kiln_error_context("run");
    ex->params_checked = 1;
  }
  if (ex->sym_pending && kiln_graph_sym_check_run(ex)) return -1;
  if (ex->str_run) kiln_strings_run_reset(ex);
  /* with batched variants: the samples they do not take first, through
   * the batch-1 kernels, then theirs (graph_sym.c says why this order) */
  int64_t upto = ex->g.num_variants && ex->batch > 1 ? kiln_graph_batch_split(ex) : 0;
  int rc = 0;
  if (upto < ex->batch) {
    ex->batch_from = upto;
    GraphOp *op = ex->ops, *end = ex->ops + ex->num_ops;
    /* sizes that data-dependent ops report: unbound until they run */
    if (ex->num_late && kiln_graph_sym_begin(ex)) return kiln_error_context("run");
    if (kiln_graph_batch_samples(ex, &rc)) op = end;
    for (; op < end && !rc; op++)
      if (kiln_graph_op_exec(ex, op) || (op->after && kiln_graph_sym_report(ex, op))) rc = kiln_graph_op_error(ex, op);
    ex->batch_from = 0;
  }
  if (!rc && upto) rc = kiln_graph_batch_run(ex, upto);
  return rc;
}

int kiln_graph_executor_sync(KilnGraphExecutor *ex) {
  if (!ex) return kiln_set_error("sync: the executor is NULL");
  if (ex->dev.device_type == kDLCPU) return 0;
  return kiln_device_sync(ex->dev) ? kiln_error_context("sync") : 0;
}

int kiln_graph_executor_memory(const KilnGraphExecutor *ex, KilnMemoryPlan *plan,
                               int *planned_here) {
  if (!ex || !plan) return kiln_set_error("graph_executor_memory: a NULL argument");
  *plan = ex->plan;
  if (planned_here) *planned_here = ex->planned_here;
  return 0;
}
