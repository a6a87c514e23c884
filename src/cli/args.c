/*
 * args.c - option parsing shared by the subcommands: "--name value",
 * "--name=value", short aliases, repeated options, positionals, and a
 * --help text generated from the same table (so the reference can be
 * checked against it).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

Opt *cli_opt(Command *cmd, const char *name) {
  for (Opt *o = cmd->opts; o && o->name; o++)
    if (!strcmp(o->name, name)) return o;
  return NULL;
}

int cli_error(const Command *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "kiln %s: ", cmd->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return -1;
}

int cli_usage(const Command *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "kiln %s: ", cmd->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_USAGE;
}

void cli_print_help(const Command *cmd, FILE *f) {
  fprintf(f, "usage: kiln %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
  if (cmd->opts && cmd->opts->name) fprintf(f, "\noptions:\n");
  for (Opt *o = cmd->opts; o && o->name; o++) {
    char head[96];
    if (o->alias)
      snprintf(head, sizeof head, "%s, %s%s%s", o->alias, o->name, o->kind == OPT_FLAG ? "" : " ", o->kind == OPT_FLAG ? "" : o->metavar);
    else
      snprintf(head, sizeof head, "%s%s%s", o->name, o->kind == OPT_FLAG ? "" : " ", o->kind == OPT_FLAG ? "" : o->metavar);
    fprintf(f, "  %-28s %s\n", head, o->help);
  }
  fprintf(f, "  %-28s %s\n", "-h, --help", "show this help");
}

int cli_parse(Command *cmd, int argc, char **argv, int *npos, const char ***pos) {
  const char **p = calloc((size_t)argc + 1, sizeof(char *));
  int np = 0;
  bool only_pos = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (only_pos || a[0] != '-' || !strcmp(a, "-")) {
      p[np++] = a;
      continue;
    }
    if (!strcmp(a, "--")) {
      only_pos = true;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cli_print_help(cmd, stdout);
      free(p);
      return 1;
    }
    const char *eq = strchr(a, '=');
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    Opt *o = NULL;
    for (Opt *q = cmd->opts; q && q->name; q++)
      if ((strlen(q->name) == nl && !strncmp(q->name, a, nl)) || (q->alias && strlen(q->alias) == nl && !strncmp(q->alias, a, nl))) o = q;
    if (!o) {
      cli_error(cmd, "unknown option '%.*s' (see kiln %s --help)", (int)nl, a, cmd->name);
      free(p);
      return -1;
    }
    o->set = true;
    if (o->kind == OPT_FLAG) {
      if (eq) {
        cli_error(cmd, "option %s takes no value", o->name);
        free(p);
        return -1;
      }
      continue;
    }
    const char *val = eq ? eq + 1 : NULL;
    if (!val) {
      if (i + 1 >= argc) {
        cli_error(cmd, "option %s needs a value (%s)", o->name, o->metavar);
        free(p);
        return -1;
      }
      val = argv[++i];
    }
    o->value = val;
    if (o->kind == OPT_MULTI) {
      o->values = realloc(o->values, sizeof(char *) * (size_t)(o->nvalues + 1));
      o->values[o->nvalues++] = val;
    }
  }
  if (np < cmd->npos_min || (cmd->npos_max >= 0 && np > cmd->npos_max)) {
    if (np < cmd->npos_min)
      cli_error(cmd, "missing argument (usage: kiln %s %s)", cmd->name, cmd->usage);
    else
      cli_error(cmd, "unexpected argument '%s' (usage: kiln %s %s)", p[cmd->npos_max], cmd->name, cmd->usage);
    free(p);
    return -1;
  }
  *npos = np;
  *pos = p;
  return 0;
}

int cli_int(Command *cmd, const char *name, long def, long *out) {
  Opt *o = cli_opt(cmd, name);
  if (!o || !o->set) {
    *out = def;
    return 0;
  }
  char *end;
  errno = 0;
  long v = strtol(o->value, &end, 10);
  if (*o->value == 0 || *end || v < 0 || errno == ERANGE)
    return cli_usage(cmd, "option %s expects a non-negative integer, got '%s'", name, o->value);
  *out = v;
  return 0;
}

const char *cli_device_kind(const void *meta, size_t size) {
  if (!meta) return "cpu";
  /* "kiln-device-v1 KIND\n...": KIND is a row of the runtime's device table */
  char kind[32] = {0};
  size_t n = size < 64 ? size : 64;
  char head[65];
  memcpy(head, meta, n);
  head[n] = 0;
  if (sscanf(head, "kiln-device-v1 %31s", kind) != 1) return "unknown";
  int t = kiln_device_type_from_name(kind);
  return t < 0 ? "unknown" : kiln_device_name(t);
}

const char *cli_module_target(KilnModule *m) {
  const void *data;
  size_t size;
  if (kiln_module_get_blob(m, "kiln_device", &data, &size)) return "cpu";
  return cli_device_kind(data, size);
}

int cli_int_range(Command *cmd, const char *name, long def, long lo, long hi, long *out) {
  int rc = cli_int(cmd, name, def, out);
  if (rc) return rc;
  if (cli_opt(cmd, name)->set && (*out < lo || *out > hi))
    return cli_usage(cmd, "option %s must be %ld to %ld, got %ld", name, lo, hi, *out);
  return 0;
}

int cli_requires(Command *cmd, const char *dep, const char *on) {
  if (cli_opt(cmd, dep)->set && !cli_opt(cmd, on)->set)
    return cli_usage(cmd, "%s works only with %s (add %s, or drop %s)", dep, on, on, dep);
  return 0;
}
