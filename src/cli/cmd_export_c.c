/*
 * cmd_export_c.c - kiln compile MODEL.onnx --emit c -o DIR: the model as
 * standalone C (graph/backend/export_c.c), with the same import, passes, tuning
 * records and Winograd choices as the shared-library build.
 *
 * --isa picks the vector width the templates block for (and so which
 * shipped records apply) before the graph is optimized: alter_layout's
 * channel blocks depend on it.  Left out (native), the code is for this
 * machine, or for the CPU --target names with -mcpu: its kernels, its
 * records and its -march.  An --isa that disagrees with that -mcpu is an
 * error.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "graph/backend/build.h"

typedef struct Choice {
  const char *name;
  int value;
} Choice;

static const Choice isa_choices[] = {{"native", CEXPORT_ISA_NATIVE}, {"generic", CEXPORT_ISA_GENERIC}, {"avx2", CEXPORT_ISA_AVX2},
                                     {"avx512", CEXPORT_ISA_AVX512}, {NULL, 0}};
static const Choice thread_choices[] = {{"none", CTHREADS_NONE}, {"pthreads", CTHREADS_PTHREADS}, {"openmp", CTHREADS_OPENMP}, {NULL, 0}};
static const Choice weight_choices[] = {{"embedded", 0}, {"separate", 1}, {NULL, 0}};

/* The value of an option among its choices (def when unset); -1 after an error. */
static int choose(Command *cmd, const char *opt, const Choice *choices, int def, int *out) {
  Opt *o = cli_opt(cmd, opt);
  *out = def;
  if (!o->set) return 0;
  StrBuf known = {0};
  for (int i = 0; choices[i].name; i++) {
    if (!strcmp(o->value, choices[i].name)) {
      *out = choices[i].value;
      sb_free(&known);
      return 0;
    }
    sb_printf(&known, "%s%s", i ? ", " : "", choices[i].name);
  }
  cli_error(cmd, "%s '%s': expected one of %s", opt, o->value, known.data);
  sb_free(&known);
  return -1;
}

/* The default prefix: the model's file name without folder and extension,
 * as a C identifier. */
static char *default_prefix(const char *model) {
  const char *base = strrchr(model, '/');
  base = base ? base + 1 : model;
  char *p = strdup(base);
  char *dot = strrchr(p, '.');
  if (dot && dot != p) *dot = 0;
  for (char *c = p; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
  if (!*p || (*p >= '0' && *p <= '9')) {
    char *q = malloc(strlen(p) + 7);
    sprintf(q, "model_%s", p);
    free(p);
    p = q;
  }
  return p;
}

int cli_compile_emit_c(Command *cmd, const char *model, long opt_level, const Target *t) {
  CExportOptions eo;
  memset(&eo, 0, sizeof eo);
  int threads, isa, sep;
  if (choose(cmd, "--threads", thread_choices, CTHREADS_NONE, &threads) || choose(cmd, "--isa", isa_choices, 0, &isa) ||
      choose(cmd, "--weights", weight_choices, 0, &sep))
    return -1;
  if (cli_opt(cmd, "--emit-dir")->set) return cli_error(cmd, "--emit-dir is for the shared library; --emit c writes its sources to -o DIR");
  eo.threads = (CThreads)threads;
  eo.isa = isa;
  eo.separate_weights = sep != 0;
  eo.freestanding = cli_opt(cmd, "--freestanding")->set;
  eo.model = model;
  eo.opt_level = (int)opt_level;
  eo.dispatch = cli_dispatch();
  Opt *pre = cli_opt(cmd, "--prefix");
  char *prefix = pre->set ? strdup(pre->value) : default_prefix(model);
  eo.prefix = prefix;
  Opt *o = cli_opt(cmd, "--output");
  char *dir;
  if (o->set) {
    dir = strdup(o->value);
  } else {
    dir = malloc(strlen(model) + 3);
    strcpy(dir, model);
    char *dot = strrchr(dir, '.');
    if (dot && !strchr(dot, '/')) *dot = 0;
    strcat(dir, "_c");
  }
  /* the vector width the templates block for, from alter_layout on: --isa
   * picks the CPU class at that width; native keeps the machine's, or the
   * CPU --target names with -mcpu (the code is then built for it) */
  int lanes = cexport_isa_lanes(isa);
  const char *mcpu = t->attr[TA_MCPU];
  if (mcpu && isa == CEXPORT_ISA_NATIVE && cli_opt(cmd, "--isa")->set) {
    free(prefix);
    free(dir);
    return cli_error(cmd, "--isa native builds for this machine (-march=native), but --target '%s' names -mcpu=%s: "
                          "leave --isa out to build for %s, or leave -mcpu out to build for this machine",
                     t->str, mcpu, mcpu);
  }
  if (mcpu && lanes > 0 && lanes != t->vector_lanes) {
    free(prefix);
    free(dir);
    return cli_error(cmd, "--isa %s blocks for %d float lanes, but --target '%s' names a CPU with %d: leave --isa "
                          "out to build for -mcpu=%s, or pick the ISA of that width",
                     cli_opt(cmd, "--isa")->value, lanes, t->str, t->vector_lanes, mcpu);
  }
  const Target *xt = lanes > 0 ? target_host_lanes(lanes) : mcpu ? t : NULL;
  eo.target = xt;
  int rc = -1;
  double t0 = kiln_now_seconds();
  if (cli_setup_dispatch(cmd) == 0) {
    Graph *g = cli_load_and_optimize(cmd, model, opt_level, xt ? xt : t, NULL, NULL);
    if (g) {
      CExportStats st;
      if (graph_export_c(g, &eo, dir, &st)) {
        cli_error(cmd, "%s", kiln_get_error());
      } else {
        printf("kiln: exported %s -> %s/%s.c (%d kernels, %d weights, %.1f MB, workspace %lld bytes, %.1f s)\n", model, dir,
               prefix, st.nkernels, st.nparams, (double)st.param_bytes / 1e6, (long long)st.workspace_bytes,
               kiln_now_seconds() - t0);
        rc = 0;
      }
      graph_free(g);
    }
  }
  free(prefix);
  free(dir);
  return rc;
}

int cli_inspect_c_export(Command *cmd, const char *dir) {
  if (cli_opt(cmd, "--ir")->set) return cli_error(cmd, "--ir: a standalone C export's kernels are its C source (%s/*.c)", dir);
  StrBuf sb = {0};
  if (graph_export_c_describe(dir, &sb)) {
    sb_free(&sb);
    return cli_error(cmd, "%s", kiln_get_error());
  }
  fputs(sb.data, stdout);
  sb_free(&sb);
  return 0;
}
