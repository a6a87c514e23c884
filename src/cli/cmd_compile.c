/*
 * cmd_compile.c - kiln compile MODEL.onnx -o MODEL.so: import, optimize,
 * fuse, generate and compile one shared object holding the kernels, the
 * graph JSON and the parameters.  --bind NAME=FILE turns an input into a
 * constant (a shape or an axis list fed as an input).  Also kiln show:
 * print the optimized graph with its fused functions named as TVM names
 * them.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "frontend/onnx/import.h"
#include "graph/backend/build.h"
#include "graph/backend/strategy.h"
#include "npy.h"

static void progress(int done, int total, void *ud) {
  (void)ud;
  fprintf(stderr, "\rkiln: building kernels %d/%d", done, total);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* A value for --bind NAME=FILE: an ONNX TensorProto (.pb) or a .npy. */
static DLTensor *load_value(Command *cmd, const char *path) {
  size_t len = strlen(path);
  DLTensor *t = NULL;
  if (len > 3 && !strcmp(path + len - 3, ".pb")) {
    KArena *a = kiln_arena_new();
    kiln_arena_push(a);
    OnnxTensor *ot = onnx_tensor_load_pb(path);
    DType dt;
    DLDevice cpu = {kDLCPU, 0};
    if (!ot || onnx_tensor_dtype(ot, &dt) || kiln_array_empty(ot->ndim, ot->dims, dt, cpu, &t) ||
        (ot->nbytes && kiln_array_copy_from_bytes(t, ot->data, ot->nbytes))) {
      cli_error(cmd, "--bind: %s", kiln_get_error());
      kiln_array_free(t);
      t = NULL;
    }
    kiln_arena_pop();
    kiln_arena_free(a);
  } else if (len > 4 && !strcmp(path + len - 4, ".npy")) {
    if (npy_load(path, &t)) cli_error(cmd, "--bind: %s", kiln_get_error());
  } else {
    cli_error(cmd, "--bind: value file '%s': expected .pb or .npy", path);
  }
  return t;
}

/* Import (with --input-shapes and --bind) and optimize; NULL after
 * printing an error. */
/* --batch-sizes: the batches to build variants at ("4,8", "none"), within
 * [2, hi]; without the flag graph_default_batches' for g on t.  -1 after
 * printing an error. */
static int batch_sizes(Command *cmd, const Graph *g, const Target *t, const GSym *bs, int64_t *sizes, int *n) {
  Opt *o = cli_opt(cmd, "--batch-sizes");
  *n = 0;
  if (!o || !o->set) {
    *n = graph_default_batches(g, t, bs->hi, sizes);
    return 0;
  }
  if (!strcmp(o->value, "none")) return 0;
  const char *s = o->value;
  while (*s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || (*end && *end != ',') || v < 2 || v > bs->hi || (*n && v <= sizes[*n - 1]) ||
        *n == CLI_MAX_VARIANTS)
      return cli_usage(cmd,
                       "--batch-sizes '%s': expected up to %d increasing batches from 2 to the bound %s<=%lld, "
                       "separated by commas (e.g. 4,8), or none",
                       o->value, CLI_MAX_VARIANTS, bs->name, (long long)bs->hi);
    sizes[(*n)++] = v;
    s = *end ? end + 1 : end;
  }
  return 0;
}

Graph *cli_load_and_optimize(Command *cmd, const char *path, long opt_level, const Target *t, const char **batch_outer,
                             CliVariants *variants) {
  Opt *shapes = cli_opt(cmd, "--input-shapes");
  Opt *bind = cli_opt(cmd, "--bind");
  int nb = bind && bind->set ? bind->nvalues : 0;
  InputValue *vals = calloc((size_t)nb + 1, sizeof(InputValue));
  char **names = calloc((size_t)nb + 1, sizeof(char *));
  int ok = 1;
  for (int i = 0; i < nb && ok; i++) {
    const char *eq = strchr(bind->values[i], '=');
    if (!eq || eq == bind->values[i]) {
      cli_error(cmd, "--bind '%s': expected NAME=FILE", bind->values[i]);
      ok = 0;
      break;
    }
    size_t nl = (size_t)(eq - bind->values[i]);
    names[i] = malloc(nl + 1);
    memcpy(names[i], bind->values[i], nl);
    names[i][nl] = 0;
    vals[i].name = names[i];
    if (!(vals[i].value = load_value(cmd, eq + 1))) ok = 0;
  }
  Graph *g = NULL;
  KArena *scratch = kiln_arena_new(); /* the model, loaded once for both imports */
  kiln_arena_push(scratch);
  OnnxModel *m = ok ? onnx_model_load(path) : NULL;
  if (ok) {
    g = m ? onnx_import_text(m, shapes && shapes->set ? shapes->value : NULL, nb, vals) : NULL;
    if (!g) cli_error(cmd, "%s", kiln_get_error());
  }
  /* a static batch whose samples run faster one by one: imported again
   * with the batch a symbol bounded to itself, so that it is built at
   * batch 1 and the executor runs the samples (graph_batch_loop_shapes) */
  Opt *sizes_opt = cli_opt(cmd, "--batch-sizes");
  if (g && batch_outer && (!t || !target_is_gpu(t)) && !(sizes_opt && sizes_opt->set)) {
    char *loop = graph_batch_loop_shapes(g, t);
    Graph *gl = loop ? onnx_import_text(m, loop, nb, vals) : NULL;
    if (gl && graph_batch_symbol(gl)) {
      graph_free(g);
      g = gl;
    } else {
      graph_free(gl);
    }
    kiln_clear_error();
    free(loop);
  }
  onnx_model_free(m);
  kiln_arena_pop();
  kiln_arena_free(scratch);
  for (int i = 0; i < nb; i++) {
    free(names[i]);
    kiln_array_free((DLTensor *)vals[i].value);
  }
  free(names);
  free(vals);
  if (!g) return NULL;
  /* a symbolic batch alone, with per-sample ops: build at batch 1 (every
   * template and record applies) and let the executor loop over the
   * samples (docs/symbolic_shapes.md) */
  const GSym *bs = batch_outer && (!t || !target_is_gpu(t)) ? graph_batch_symbol(g) : NULL;
  Opt *bso = cli_opt(cmd, "--batch-sizes");
  if (!bs && bso && bso->set) {
    cli_usage(cmd, "--batch-sizes applies to a model whose only symbolic size is a batch (e.g. --input-shapes "
                   "\"data:[N,3,224,224],N<=8\"); this one has %s",
              graph_is_symbolic(g) ? "other symbolic sizes" : "none");
    graph_free(g);
    return NULL;
  }
  int prec;
  if (cli_precision(cmd, &prec)) {
    graph_free(g);
    return NULL;
  }
  GraphOptions go = {(int)opt_level, NULL, stdout, t, cli_dispatch(), (GraphPrecision)prec};
  Opt *dump = cli_opt(cmd, "--dump-after");
  if (dump && dump->set) go.dump_after = dump->value;
  if (bs && variants) { /* each variant: the model at that batch, optimized as a static graph */
    int64_t sizes[CLI_MAX_VARIANTS];
    int n;
    if (batch_sizes(cmd, g, t, bs, sizes, &n)) {
      graph_free(g);
      return NULL;
    }
    for (int i = 0; i < n; i++) {
      Graph *gk = graph_specialize(g, &sizes[i]);
      if (gk) gk = graph_optimize(gk, &go);
      if (!gk) {
        cli_error(cmd, "batched variant at batch %lld: %s", (long long)sizes[i], kiln_get_error());
        graph_free(g);
        return NULL;
      }
      variants->g[variants->n] = gk;
      variants->batch[variants->n++] = sizes[i];
    }
  }
  if (bs) {
    static char spec[128];
    snprintf(spec, sizeof spec, "%s:%lld:%lld", bs->name, (long long)bs->lo, (long long)bs->hi);
    int64_t one = 1;
    Graph *g1 = graph_specialize(g, &one);
    graph_free(g);
    if (!(g = g1)) {
      cli_error(cmd, "%s", kiln_get_error());
      return NULL;
    }
    *batch_outer = spec;
  }
  g = graph_optimize(g, &go);
  if (!g) cli_error(cmd, "%s", kiln_get_error());
  return g;
}

int cli_precision(Command *cmd, int *out) {
  Opt *o = cli_opt(cmd, "--precision");
  GraphPrecision p = GRAPH_PRECISION_FP32;
  if (o && o->set && graph_precision_parse(o->value, &p)) {
    cli_usage(cmd, "--precision: %s", kiln_get_error());
    return -1;
  }
  *out = (int)p;
  return 0;
}

static int get_opt_level(Command *cmd, long *lvl) {
  return cli_int_range(cmd, "-O", 3, 0, 3, lvl);
}

/* --target parsed once (src/target); the error lists what Kiln can
 * build for. */
static const Target *get_target(Command *cmd) {
  Opt *o = cli_opt(cmd, "--target");
  const Target *t = target_parse(o->set ? o->value : NULL, NULL);
  if (!t) cli_error(cmd, "%s", kiln_get_error());
  return t;
}

static Opt compile_opts[] = {
    {"--output", "-o", OPT_VALUE, "MODEL.so", "where to write the compiled module (default: MODEL.so beside the model; with --emit c: a directory, default MODEL_c)", false, NULL, NULL, 0},
    {"--emit", NULL, OPT_VALUE, "KIND", "so: a shared library (default); c: standalone C sources with no runtime (docs/deploy_c.md)", false, NULL, NULL, 0},
    {"--prefix", NULL, OPT_VALUE, "NAME", "--emit c: name of the files and the API, NAME.h with NAME_run (default: the model's file name)", false, NULL, NULL, 0},
    {"--threads", NULL, OPT_VALUE, "KIND", "--emit c: parallel loops on none (default), pthreads or openmp", false, NULL, NULL, 0},
    {"--isa", NULL, OPT_VALUE, "ISA", "--emit c: native (default: this machine, or the CPU --target names with -mcpu), generic (plain C99, no vector extensions), avx2 or avx512", false, NULL, NULL, 0},
    {"--freestanding", NULL, OPT_FLAG, NULL, "--emit c: no C library at all (Kiln's own exp, log, tanh, erf, ...)", false, NULL, NULL, 0},
    {"--weights", NULL, OPT_VALUE, "WHERE", "--emit c: embedded (C arrays, default) or separate (NAME.bin, passed to NAME_run)", false, NULL, NULL, 0},
    {"--input-shapes", NULL, OPT_VALUE, "SHAPES", "input shapes; a size given overrides the model's, e.g. \"data:[8,3,224,224]\"", false, NULL, NULL, 0},
    {"--bind", NULL, OPT_MULTI, "NAME=FILE", "make input NAME a constant with the value in FILE (.pb or .npy); repeatable", false, NULL, NULL, 0},
    {"--batch-sizes", NULL, OPT_VALUE, "LIST", "a symbolic batch: also build batched kernels at these batches, e.g. 4,8 (default: 4 and 8 within the bound), or none", false, NULL, NULL, 0},
    {"-O", NULL, OPT_VALUE, "LEVEL", "optimization level 0-3 (default 3)", false, NULL, NULL, 0},
    {"--target", NULL, OPT_VALUE, "TARGET", "code generation target: cpu (default), cuda [-arch=sm_NN], opencl", false, NULL, NULL, 0},
    {"--precision", NULL, OPT_VALUE, "P", "fp32 (default) or bf16: dense layers and convolutions with bfloat16 weights on AVX512-BF16, float32 accumulation and outputs (docs/bf16.md)", false, NULL, NULL, 0},
    {"--emit-dir", NULL, OPT_VALUE, "DIR", "also write the C sources (and GPU kernels), graph JSON and params there", false, NULL, NULL, 0},
    {"--dump-after", NULL, OPT_VALUE, "PASS", "print the graph after a graph pass to stdout, or each kernel's loop IR after a lowering pass to stderr (or all)", false, NULL, NULL, 0},
    {"--tuning-records", NULL, OPT_MULTI, "FILE", "use the best configs of these tuning records (AutoTVM v0.1/v0.2 JSON lines; repeatable)", false, NULL, NULL, 0},
    {"--no-shipped-records", NULL, OPT_FLAG, NULL, "ignore the tuning records Kiln ships for this machine", false, NULL, NULL, 0},
    {"--quiet-fallback", NULL, OPT_FLAG, NULL, "no warning for tasks that take the fallback config", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

/* The dispatch context: the user's records, shipped ones, warnings.  A
 * kiln process runs one command, which owns this context. */
DispatchContext *cli_dispatch(void) {
  static DispatchContext *dc;
  if (!dc) dc = dispatch_context_new();
  return dc;
}

int cli_setup_dispatch(Command *cmd) {
  DispatchContext *dc = cli_dispatch();
  Opt *tr = cli_opt(cmd, "--tuning-records");
  for (int i = 0; tr && i < tr->nvalues; i++)
    if (graph_dispatch_add_records(dc, tr->values[i])) return cli_error(cmd, "%s", kiln_get_error());
  if (cli_opt(cmd, "--no-shipped-records")->set) graph_dispatch_use_shipped(dc, false);
  if (cli_opt(cmd, "--quiet-fallback")->set) graph_dispatch_set_quiet(dc, true);
  return 0;
}

static int run_compile(Command *cmd, int npos, const char **pos) {
  (void)npos;
  long lvl;
  const Target *target;
  int rc;
  if ((rc = get_opt_level(cmd, &lvl))) return rc;
  if (!(target = get_target(cmd))) return CLI_USAGE;
  Opt *emit = cli_opt(cmd, "--emit");
  if (emit->set && !strcmp(emit->value, "c")) {
    if (target_is_gpu(target))
      return cli_error(cmd, "--emit c is plain C for the CPU; target '%s' runs on a GPU (leave --emit out)", target->str);
    return cli_compile_emit_c(cmd, pos[0], lvl, target);
  }
  if (emit->set && strcmp(emit->value, "so"))
    return cli_usage(cmd, "--emit '%s': expected so (a shared library, the default) or c (standalone C sources)", emit->value);
  static const char *const c_only[] = {"--prefix", "--threads", "--isa", "--freestanding", "--weights", NULL};
  for (int i = 0; c_only[i]; i++)
    if (cli_opt(cmd, c_only[i])->set) return cli_usage(cmd, "%s applies to standalone C only: add --emit c", c_only[i]);
  if (cli_setup_dispatch(cmd)) return -1;
  Opt *o = cli_opt(cmd, "--output");
  char *out;
  if (o->set) {
    out = strdup(o->value);
  } else {
    size_t n = strlen(pos[0]);
    out = malloc(n + 4);
    strcpy(out, pos[0]);
    char *dot = strrchr(out, '.');
    if (dot && !strchr(dot, '/')) *dot = 0;
    strcat(out, ".so");
  }
  double t0 = kiln_now_seconds();
  const char *batch_outer = NULL;
  CliVariants vars;
  memset(&vars, 0, sizeof vars);
  Graph *g = cli_load_and_optimize(cmd, pos[0], lvl, target, &batch_outer, &vars);
  if (!g) {
    for (int i = 0; i < vars.n; i++) graph_free(vars.g[i]);
    free(out);
    return -1;
  }
  GraphBuildOptions bo;
  memset(&bo, 0, sizeof bo);
  bo.opt_level = (int)lvl;
  bo.target = target;
  bo.dispatch = cli_dispatch();
  bo.batch_outer = batch_outer;
  bo.variants = vars.g;
  bo.variant_batch = vars.batch;
  bo.nvariants = vars.n;
  Opt *dump = cli_opt(cmd, "--dump-after");
  if (dump->set) bo.dump_lower = dump->value; /* the lowering passes' names; graph passes dump while optimizing */
  Opt *ed = cli_opt(cmd, "--emit-dir");
  if (ed->set) bo.emit_dir = ed->value;
  if (isatty(2)) bo.progress = progress;
  GraphBuildStats st;
  rc = graph_build(g, &bo, out, &st);
  graph_free(g);
  for (int i = 0; i < vars.n; i++) graph_free(vars.g[i]);
  if (rc) {
    free(out);
    return cli_error(cmd, "%s", kiln_get_error());
  }
  printf("kiln: compiled %s -> %s (%d kernels, %d parameters, %.1f MB, %.1f s)\n", pos[0], out, st.nkernels, st.nparams,
         (double)st.param_bytes / 1e6, kiln_now_seconds() - t0);
  free(out);
  return 0;
}

Command cmd_compile = {"compile", "MODEL.onnx [-o MODEL.so] [options]",
                       "Compile an ONNX model into one shared object (kernels, graph and parameters), or into standalone C (--emit c).", 1, 1, compile_opts,
                       run_compile};

static Opt show_opts[] = {
    {"--input-shapes", NULL, OPT_VALUE, "SHAPES", "input shapes; a size given overrides the model's, e.g. \"data:[8,3,224,224]\"", false, NULL, NULL, 0},
    {"--bind", NULL, OPT_MULTI, "NAME=FILE", "make input NAME a constant with the value in FILE (.pb or .npy); repeatable", false, NULL, NULL, 0},
    {"-O", NULL, OPT_VALUE, "LEVEL", "optimization level 0-3 (default 3)", false, NULL, NULL, 0},
    {"--dump-after", NULL, OPT_VALUE, "PASS", "also print the graph after a pass (or all)", false, NULL, NULL, 0},
    {"--unfused", NULL, OPT_FLAG, NULL, "print the optimized graph before fusion", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

static int run_show(Command *cmd, int npos, const char **pos) {
  (void)npos;
  long lvl;
  int rc = get_opt_level(cmd, &lvl);
  if (rc) return rc;
  graph_dispatch_set_quiet(cli_dispatch(), true);
  Graph *g = cli_load_and_optimize(cmd, pos[0], lvl, target_host(), NULL, NULL);
  if (!g) return -1;
  char *text;
  if (cli_opt(cmd, "--unfused")->set) {
    text = graph_to_text(g);
  } else {
    KArena *a = kiln_arena_new();
    kiln_arena_push(a);
    AVec groups = {0};
    graph_fuse(g, (int)lvl, &groups);
    text = graph_to_text_fused(g, &groups);
    kiln_arena_pop();
    kiln_arena_free(a);
  }
  fputs(text, stdout);
  free(text);
  graph_free(g);
  return 0;
}

Command cmd_show = {"show", "MODEL.onnx [options]", "Print a model's graph after the optimization passes, with its fused functions.",
                    1, 1, show_opts, run_show};
