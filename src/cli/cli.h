/*
 * cli.h - the kiln command: one file per subcommand, and the small option
 * parser they share.
 *
 *   main.c         dispatch, --version, --help
 *   args.c         option parsing: flags, values, positionals, --help text
 *   cmd_compile.c  kiln compile, kiln show
 *   cmd_export_c.c kiln compile --emit c: standalone C sources
 *   cmd_inspect.c  kiln inspect MODULE.so
 *   cmd_run.c      kiln run MODEL.so
 *   cmd_tune.c     kiln tasks MODEL.onnx, kiln tune MODEL.onnx -o RECORDS.json,
 *                  kiln records RECORDS.json [--pick-best]
 *   npy.c          .npy / .npz files (npy.h)
 *
 * A subcommand returns 0, or on error prints one line "kiln <cmd>: <reason>"
 * to stderr and returns -1 (cli_error: the work failed, exit status 1) or
 * CLI_USAGE (cli_usage: the command line is wrong, exit status 2, as
 * docs/cli.md promises).  Only main() turns these into exit statuses.
 */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "kiln/runtime.h"

/* ===== args.c ===== */

typedef enum CliOptKind { OPT_FLAG, OPT_VALUE, OPT_MULTI } CliOptKind;

typedef struct Opt {
  const char *name;  /* "--repeat" */
  const char *alias; /* "-o" or NULL */
  CliOptKind kind;
  const char *metavar; /* "N" */
  const char *help;
  /* results */
  bool set;
  const char *value;   /* OPT_VALUE: last value */
  const char **values; /* OPT_MULTI: all values */
  int nvalues;
} Opt;

typedef struct Command {
  const char *name;    /* "inspect" */
  const char *usage;   /* "MODULE.so [options]" */
  const char *summary; /* one line */
  int npos_min, npos_max;
  Opt *opts; /* terminated by an entry with name NULL */
  int (*run)(struct Command *cmd, int npos, const char **pos);
} Command;

/* Parse argv (after the subcommand name).  Returns 0, 1 if --help was
 * printed, or -1 after printing an error. */
int cli_parse(Command *cmd, int argc, char **argv, int *npos, const char ***pos);
void cli_print_help(const Command *cmd, FILE *f);
Opt *cli_opt(Command *cmd, const char *name);
/* --precision (fp32 or bf16, docs/bf16.md) if cmd has it and it is set,
 * else fp32; -1 after printing a usage error. */
int cli_precision(Command *cmd, int *out /* GraphPrecision */);
int cli_error(const Command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define CLI_USAGE (-2)
/* A usage error: printed like cli_error, returns CLI_USAGE. */
int cli_usage(const Command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse a non-negative integer option value; CLI_USAGE on error (printed). */
int cli_int(Command *cmd, const char *name, long def, long *out);
/* Where a module's kernels run: "cpu", "cuda" or "opencl", from its
 * kiln_device blob (meta NULL: a CPU module). */
const char *cli_device_kind(const void *meta, size_t size);
const char *cli_module_target(KilnModule *m);
/* The same within [lo, hi] (the message names the bounds). */
int cli_int_range(Command *cmd, const char *name, long def, long lo, long hi, long *out);
/* Option `dep` is given without `on` (a flag it only works with). */
int cli_requires(Command *cmd, const char *dep, const char *on);

/* ===== cmd_compile.c ===== */

struct Graph;
/* Import MODEL (with --input-shapes, --bind) and optimize; NULL after
 * printing an error.  With batch_outer, a model whose only symbol is a
 * per-sample batch is specialized to batch 1 first and *batch_outer set
 * to "N:lo:hi" (for GraphBuildOptions.batch_outer), else left NULL. */
struct Target;
/* The batched variants of a symbolic batch (kiln compile --batch-sizes):
 * the model specialized to each batch and optimized. */
#define CLI_MAX_VARIANTS 8
typedef struct CliVariants {
  struct Graph *g[CLI_MAX_VARIANTS];
  int64_t batch[CLI_MAX_VARIANTS];
  int n;
} CliVariants;
/* With variants (and batch_outer), also the batched variants --batch-sizes
 * asks for (by default 4 and 8, those within the batch's bound). */
struct Graph *cli_load_and_optimize(Command *cmd, const char *path, long opt_level, const struct Target *t,
                                    const char **batch_outer, CliVariants *variants);
/* The command's dispatch context (records, shipped records, warnings),
 * made on first use and passed to everything that chooses configs. */
struct DispatchContext *cli_dispatch(void);
/* Fill it from --tuning-records, --no-shipped-records, --quiet-fallback;
 * -1 after printing an error. */
int cli_setup_dispatch(Command *cmd);

/* ===== cmd_export_c.c ===== */

/* kiln compile MODEL --emit c -o DIR [--prefix NAME] [--threads K] [--isa I]
 * [--freestanding] [--weights W] */
int cli_compile_emit_c(Command *cmd, const char *model, long opt_level, const struct Target *t);
/* kiln inspect DIR: describe an export and check its files. */
int cli_inspect_c_export(Command *cmd, const char *dir);

/* ===== the subcommands ===== */

extern Command cmd_compile;
extern Command cmd_show;
extern Command cmd_inspect;
extern Command cmd_tasks;
extern Command cmd_tune;
extern Command cmd_records;
extern Command cmd_run;

#endif
