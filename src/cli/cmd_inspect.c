/*
 * cmd_inspect.c - kiln inspect MODULE.so: what a compiled module holds;
 * kiln inspect DIR: what a standalone C export holds (cmd_export_c.c).
 *
 * The module is read as a file (kiln_artifact_open: its ELF sections and
 * checksum), never loaded: inspecting an artifact runs none of its code.
 */
#include <stdio.h>
#include <stdlib.h>
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
    {"--verify", NULL, OPT_FLAG, NULL, "also check the weights against their checksums (the rest of the file is always checked)", false, NULL, NULL, 0},
    {NULL, NULL, 0, NULL, NULL, false, NULL, NULL, 0},
};

/* A module compiled with symbolic sizes lists its symbols in the graph
 * JSON (attrs.kiln_symbols: ["list_str", ["N:1:64", ...]], written by
 * Kiln's build), or its batch symbol (attrs.kiln_batch, the batch as an
 * outer loop): print them, and at what sizes the shapes below are. */
static void print_symbols(const char *json, size_t n, bool batch) {
  const char *key = batch ? "\"kiln_batch\"" : "\"kiln_symbols\"", *p = NULL;
  size_t kl = strlen(key);
  for (size_t i = 0; i + kl <= n && !p; i++)
    if (!memcmp(json + i, key, kl)) p = json + i + kl;
  if (!p) return;
  const char *end = json + n, *list = memchr(p, '[', (size_t)(end - p));
  list = list ? memchr(list + 1, '[', (size_t)(end - list - 1)) : NULL;
  if (!list) return;
  if (batch)
    printf("batch (kernels built at batch 1 and called once per sample; shapes below are at batch 1):\n");
  else
    printf("symbols (the module runs at any size within the bounds; shapes below are at representative sizes):\n");
  for (const char *q = list + 1; q < end && *q != ']'; q++) {
    if (*q != '"') continue;
    const char *e = memchr(q + 1, '"', (size_t)(end - q - 1));
    if (!e) break;
    char name[64];
    long long lo, hi;
    if (sscanf(q + 1, "%63[A-Za-z0-9_]:%lld:%lld", name, &lo, &hi) == 3) printf("  %s in [%lld, %lld]\n", name, lo, hi);
    q = e;
  }
  /* the batched variants (attrs.kiln_batch_variants ["list_int", [4, 8]]) */
  static const char vkey[] = "\"kiln_batch_variants\"";
  const char *v = NULL;
  for (size_t i = 0; batch && i + sizeof vkey - 1 <= n && !v; i++)
    if (!memcmp(json + i, vkey, sizeof vkey - 1)) v = json + i + sizeof vkey - 1;
  const char *vl = v ? memchr(v, '[', (size_t)(end - v)) : NULL;
  vl = vl ? memchr(vl + 1, '[', (size_t)(end - vl - 1)) : NULL;
  if (!vl) return;
  printf("  batched variants (the same model built at these batches; a run takes the largest that fit, the rest "
         "per sample):");
  for (const char *q = vl + 1; q < end && *q != ']'; q++) {
    char *e;
    long long b = strtoll(q, &e, 10);
    if (e == q) continue;
    printf(" %lld", b);
    q = e - 1;
  }
  printf("\n");
}

static int run(Command *cmd, int npos, const char **pos) {
  (void)npos;
  struct stat st;
  if (stat(pos[0], &st) == 0 && S_ISDIR(st.st_mode)) return cli_inspect_c_export(cmd, pos[0]);
  KilnArtifact *a;
  const KilnArtifactInfo *info;
  if (kiln_artifact_open(pos[0], &a)) return cli_error(cmd, "%s", kiln_last_error());
  if (cli_opt(cmd, "--verify")->set && kiln_artifact_verify_params(a)) {
    int rc = cli_error(cmd, "%s", kiln_last_error());
    kiln_artifact_free(a);
    return rc;
  }
  if (cli_opt(cmd, "--ir")->set) {
    const void *data;
    size_t size;
    kiln_artifact_get_blob(a, "lowered_ir", &data, &size);
    if (!data) {
      kiln_artifact_free(a);
      return cli_error(cmd, "%s holds no lowered IR", pos[0]);
    }
    fwrite(data, 1, size, stdout);
    kiln_artifact_free(a);
    return 0;
  }
  if (kiln_artifact_info(a, &info)) {
    int rc = cli_error(cmd, "%s", kiln_last_error());
    kiln_artifact_free(a);
    return rc;
  }
  printf("module %s\n", pos[0]);
  const void *dmeta;
  size_t dn;
  kiln_artifact_get_blob(a, "kiln_device", &dmeta, &dn);
  const char *kind = cli_device_kind(dmeta, dn);
  printf("target: %s\n", kind);
  const void *gj;
  size_t gjn;
  kiln_artifact_get_blob(a, "graph_json", &gj, &gjn);
  if (gj) { /* a compiled model: its graph's inputs, outputs and memory */
    print_symbols(gj, gjn, false);
    print_symbols(gj, gjn, true);
    printf("inputs (%d):\n", info->num_inputs);
    for (int i = 0; i < info->num_inputs; i++)
      printf("  %-24s %s %s\n", info->inputs[i].name, shape_text(info->inputs[i].ndim, info->inputs[i].shape),
             dtype_text(info->inputs[i].dtype));
    printf("outputs (%d):\n", info->num_outputs);
    for (int i = 0; i < info->num_outputs; i++)
      printf("  %-24s %s %s\n", info->outputs[i].name, shape_text(info->outputs[i].ndim, info->outputs[i].shape),
             dtype_text(info->outputs[i].dtype));
    printf("parameters: %d arrays, %llu bytes (used in place from the mapped file)\n", info->num_params,
           (unsigned long long)info->param_bytes);
    printf("planned memory: %llu bytes in %d buffers (one buffer per tensor would take %llu bytes)\n",
           (unsigned long long)info->plan.planned_bytes, info->plan.num_storage, (unsigned long long)info->plan.naive_bytes);
  }
  printf("kernels (%d):\n", info->num_kernels);
  for (int i = 0; i < info->num_kernels; i++) printf("  %s\n", info->kernels[i]);
  if (dmeta) { /* the GPU kernels they launch: "kernel NAME NPARAMS TYPES..." lines */
    const char *m = dmeta;
    int nk = 0;
    for (size_t i = 0; i + 7 <= dn; i++) nk += !strncmp(m + i, "kernel ", 7) && (i == 0 || m[i - 1] == '\n');
    printf("device kernels (%d, %s):\n", nk, kind);
    for (size_t i = 0; i + 7 <= dn; i++) {
      if (strncmp(m + i, "kernel ", 7) || (i && m[i - 1] != '\n')) continue;
      size_t k = strcspn(m + i + 7, " \n");
      printf("  %.*s\n", (int)k, m + i + 7);
    }
  }
  printf("embedded data:\n");
  for (int i = 0; i < info->num_blobs; i++) printf("  %-12s %llu bytes\n", info->blob_names[i], (unsigned long long)info->blob_sizes[i]);
  printf("checksum: verified (%s)\n", cli_opt(cmd, "--verify")->set ? "the whole file" : "all but the weights; --verify checks them too");
  kiln_artifact_free(a);
  return 0;
}

Command cmd_inspect = {"inspect", "MODULE.so|DIR [--ir] [--verify]",
                       "Show what a compiled Kiln module (or a directory from --emit c) holds: inputs, outputs, parameters, memory plan, kernels. A module is read as a file: none of its code runs.",
                       1, 1, opts, run};
