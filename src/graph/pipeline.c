/*
 * pipeline.c - the optimization pipeline, one readable list.  A pass runs
 * when the opt level reaches its level; simplify_inference always runs
 * because batch_norm and dropout have no kernels of their own.  Each pass
 * works in a scratch arena that is dropped afterwards; the graphs own
 * their memory.
 */
#include <stdlib.h>
#include <string.h>

#include "../lower/lower.h"
#include "backend/strategy.h"
#include "passes/passes.h"

typedef struct PassDef {
  const char *name;
  int min_level;
  Graph *(*run)(Graph *g, const PassContext *pc);
} PassDef;

static const PassDef pipeline[] = {
    {"simplify_inference", 0, pass_simplify_inference},
    {"fake_quantization_to_integer", 3, pass_fake_quantization_to_integer},
    {"fold_constant", 1, pass_fold_constant},
    {"fuse_layer_norm", 2, pass_fuse_layer_norm},
    {"fuse_gelu", 2, pass_fuse_gelu},
    {"fuse_silu", 2, pass_fuse_silu},
    {"fold_pad_pool", 2, pass_fold_pad_pool},
    {"fold_scale_axis", 2, pass_fold_scale_axis},
    {"sink_reshape", 2, pass_sink_reshape},
    {"fold_constant", 2, pass_fold_constant},
    {"eliminate_common_subexpr", 2, pass_cse},
    {"alter_layout", 3, pass_alter_layout},
    {"fold_gate", 3, pass_fold_gate},
    {"fold_constant", 3, pass_fold_constant},
    {"dead_code_elimination", 0, pass_dce},
};
#define NPASSES (int)(sizeof pipeline / sizeof pipeline[0])

const char *const *graph_pass_names(int *n) {
  static const char *names[NPASSES + 1];
  int k = 0;
  for (int i = 0; i < NPASSES; i++) {
    bool dup = false;
    for (int j = 0; j < k; j++) dup |= !strcmp(names[j], pipeline[i].name);
    if (!dup) names[k++] = pipeline[i].name;
  }
  names[k] = NULL;
  *n = k;
  return names;
}

static void dump(const GraphOptions *opt, const char *pass, Graph *g) {
  if (!opt->dump_after) return;
  if (strcmp(opt->dump_after, "all") && strcmp(opt->dump_after, pass)) return;
  char *text = graph_to_text(g);
  FILE *f = opt->dump_to ? opt->dump_to : stderr;
  fprintf(f, "// after %s\n%s", pass, text);
  free(text);
}

static Graph *optimize(Graph *g, const GraphOptions *opt, const PassContext *pc);

/* The op table's ids (GRAPH_OP_IDS against the rows) are checked once per
 * process before the first graph is optimized: a row that lost its id would
 * otherwise make every pass that asks for it silently skip the op. */
static int op_table_checked_once(void) {
  static int state; /* 0 unchecked, 1 good, -1 bad */
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (!s) {
    int rc = op_table_check(); /* its error names the row */
    __atomic_store_n(&state, rc ? -1 : 1, __ATOMIC_RELEASE);
    return rc;
  }
  return s > 0 ? 0 : kiln_set_error("%s", "op table: GRAPH_OP_IDS and the op rows disagree (kiln_unit verify names the row)");
}

Graph *graph_optimize(Graph *g, const GraphOptions *opt) {
  if (op_table_checked_once()) {
    graph_free(g);
    return NULL;
  }
  GraphOptions defaults = {3, NULL, NULL, NULL, NULL, GRAPH_PRECISION_FP32};
  if (!opt) opt = &defaults;
  PassContext pc = {opt->target ? opt->target : target_host(), opt->dispatch, opt->precision};
  if (!pc.target || graph_precision_check(opt->precision, pc.target, opt->opt_level)) {
    graph_free(g);
    return NULL;
  }
  DispatchContext *own = NULL; /* made for this call when none is given */
  if (!pc.dispatch) pc.dispatch = own = dispatch_context_new();
  /* the Loops' bodies (Graph.bodies) are graphs of their own: each runs
   * the same pipeline, then goes with the optimized graph */
  Graph *held = graph_new();
  graph_move_bodies(held, g);
  for (int i = 0; i < held->bodies.len && g; i++) {
    Graph *b = optimize(held->bodies.data[i], opt, &pc);
    held->bodies.data[i] = b;
    if (!b) {
      kiln_error_context("the body of loop %d", i);
      graph_free(g);
      g = NULL;
    }
  }
  if (g) g = optimize(g, opt, &pc);
  if (g) graph_move_bodies(g, held);
  for (int i = 0; i < held->bodies.len; i++) /* a failed body was freed by optimize */
    if (!held->bodies.data[i]) av_remove(&held->bodies, i--);
  graph_free(held);
  dispatch_context_free(own);
  return g;
}

static Graph *optimize(Graph *g, const GraphOptions *opt, const PassContext *pc) {
  if (opt->dump_after && strcmp(opt->dump_after, "all")) {
    /* one list of names: the graph passes, then the lowering passes
     * (whose dumps the build prints, GraphBuildOptions.dump_lower) */
    bool known = false;
    for (int i = 0; i < NPASSES; i++) known |= !strcmp(pipeline[i].name, opt->dump_after);
    for (const char *const *l = lower_pass_names(); *l; l++) known |= !strcmp(*l, opt->dump_after);
    if (!known) {
      StrBuf sb = {0};
      int n;
      const char *const *names = graph_pass_names(&n);
      for (int i = 0; i < n; i++) sb_printf(&sb, "%s%s", i ? ", " : "", names[i]);
      for (const char *const *l = lower_pass_names(); *l; l++) sb_printf(&sb, ", %s", *l);
      kiln_set_error("unknown pass '%s' for --dump-after (passes: %s, or all)", opt->dump_after, sb.data);
      sb_free(&sb);
      return NULL;
    }
  }
  /* the invariants every pass keeps (verify.c), checked between passes in
   * debug builds and in the tests */
  bool verify = kiln_verify_enabled();
  if (verify && graph_verify(g, "import")) {
    graph_free(g);
    return NULL;
  }
  for (int i = 0; i < NPASSES; i++) {
    if (opt->opt_level < pipeline[i].min_level) continue;
    KArena *scratch = kiln_arena_new();
    kiln_arena_push(scratch);
    Graph *ng = pipeline[i].run(g, pc);
    kiln_arena_pop();
    kiln_arena_free(scratch);
    if (!ng) {
      kiln_error_context("pass %s", pipeline[i].name);
      graph_free(g);
      return NULL;
    }
    graph_free(g);
    g = ng;
    if (verify && graph_verify(g, pipeline[i].name)) {
      graph_free(g);
      return NULL;
    }
    dump(opt, pipeline[i].name, g);
  }
  return g;
}
