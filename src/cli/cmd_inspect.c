/* cmd_inspect.c - kiln inspect MODULE.so: what a compiled module holds. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kiln/runtime.h"

static Opt opts[] = {
    {"--ir", NULL, OPT_FLAG, NULL, "print the lowered loop IR of every kernel", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

static int run(Command *cmd, int npos, const char **pos) {
  (void)npos;
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
  printf("module %s\nkernels (%d):\n", pos[0], n);
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

Command cmd_inspect = {"inspect", "MODULE.so [--ir]", "Show what a compiled Kiln module holds: its kernels and embedded data.",
                       1, 1, opts, run};
