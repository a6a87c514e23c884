/* cmd_inspect.c - kiln inspect MODULE.so: what a compiled module holds;
 * kiln inspect DIR: what a standalone C export holds (cmd_export_c.c). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "kiln/runtime.h"

static const char *shape_text(int ndim, const int64_t *shape) {
  static char buf[256];
  size_t k = (size_t)snprintf(buf, sizeof buf, "(");
  for (int i = 0; i < ndim && k < sizeof buf; i++) k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (k < sizeof buf) snprintf(buf + k, sizeof buf - k, ")");
  return buf;
}

static const char *dtype_text(DLDataType t) {
  static char buf[32];
  if ((t.code == kDLUInt && t.bits == 1) || t.code == 6) return "bool";
  snprintf(buf, sizeof buf, "%s%d", t.code == kDLFloat ? "float" : t.code == kDLInt ? "int" : "uint", t.bits);
  return buf;
}

static Opt opts[] = {
    {"--ir", NULL, OPT_FLAG, NULL, "print the lowered loop IR of every kernel", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

static int run(Command *cmd, int npos, const char **pos) {
  (void)npos;
  struct stat st;
  if (stat(pos[0], &st) == 0 && S_ISDIR(st.st_mode)) return cli_inspect_c_export(cmd, pos[0]);
  KilnModule *m;
  if (kiln_module_load(pos[0], &m)) return cli_error(cmd, "%s", kiln_last_error());
  int n;
  const char **names;
  kiln_module_list_functions(m, &n, &names);
  if (cli_opt(cmd, "--ir")->set) {
    const void *data;
    size_t size;
    kiln_module_get_blob(m, "lowered_ir", &data, &size);
    if (!data) {
      kiln_module_free(m);
      return cli_error(cmd, "%s holds no lowered IR", pos[0]);
    }
    fwrite(data, 1, size, stdout);
    kiln_module_free(m);
    return 0;
  }
  printf("module %s\n", pos[0]);
  /* a compiled model: its graph's inputs, outputs and memory */
  const void *gj;
  size_t gjn;
  kiln_module_get_blob(m, "graph_json", &gj, &gjn);
  KilnGraphExecutor *ex = NULL;
  if (gj && kiln_graph_executor_create(m, &ex) == 0) {
    int ni = kiln_graph_executor_num_inputs(ex), no = kiln_graph_executor_num_outputs(ex);
    printf("inputs (%d):\n", ni);
    for (int i = 0; i < ni; i++) {
      KilnTensorInfo t;
      kiln_graph_executor_input_info(ex, i, &t);
      printf("  %-24s %s %s\n", t.name, shape_text(t.ndim, t.shape), dtype_text(t.dtype));
    }
    printf("outputs (%d):\n", no);
    for (int i = 0; i < no; i++) {
      KilnTensorInfo t;
      kiln_graph_executor_output_info(ex, i, &t);
      printf("  %-24s %s %s\n", t.name, shape_text(t.ndim, t.shape), dtype_text(t.dtype));
    }
    const void *pb;
    size_t pn;
    kiln_module_get_blob(m, "params", &pb, &pn);
    int np = 0;
    char **pnames = NULL;
    DLTensor **parr = NULL;
    uint64_t pbytes = 0;
    if (pb && kiln_params_load(pb, pn, &np, &pnames, &parr) == 0) {
      for (int i = 0; i < np; i++) pbytes += kiln_array_nbytes(parr[i]);
      kiln_params_free(np, pnames, parr);
    }
    printf("parameters: %d arrays, %llu bytes\n", np, (unsigned long long)pbytes);
    KilnMemoryPlan plan;
    if (kiln_graph_executor_memory(ex, &plan, NULL) == 0)
      printf("planned memory: %llu bytes in %d buffers (one buffer per tensor would take %llu bytes)\n",
             (unsigned long long)plan.planned_bytes, plan.num_storage, (unsigned long long)plan.naive_bytes);
    kiln_graph_executor_free(ex);
  } else if (gj) {
    kiln_module_free(m);
    return cli_error(cmd, "%s: %s", pos[0], kiln_last_error());
  }
  printf("kernels (%d):\n", n);
  for (int i = 0; i < n; i++) printf("  %s\n", names[i]);
  static const char *known[] = {"graph_json", "params", "lowered_ir"};
  printf("embedded data:\n");
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    const void *data;
    size_t size;
    kiln_module_get_blob(m, known[i], &data, &size);
    if (data) printf("  %-12s %zu bytes\n", known[i], size);
  }
  kiln_module_free(m);
  return 0;
}

Command cmd_inspect = {"inspect", "MODULE.so|DIR [--ir]",
                       "Show what a compiled Kiln module (or a directory from --emit c) holds: inputs, outputs, parameters, memory plan, kernels.",
                       1, 1, opts, run};
