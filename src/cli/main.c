/* main.c - the kiln command: dispatches subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/autotune.h"
#include "cli.h"

static Command *commands[] = {&cmd_compile, &cmd_run, &cmd_show, &cmd_inspect, &cmd_tasks, &cmd_tune, &cmd_records};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
  fprintf(f,
          "usage: kiln <command> [options]\n"
          "\n"
          "Kiln is a deep-learning compiler: it turns models into fast native code.\n"
          "\n"
          "commands:\n");
  for (int i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f,
          "\n"
          "  --version  print the version\n"
          "  --help     print this help\n"
          "\n"
          "Run 'kiln <command> --help' for a command's options.\n");
}

int main(int argc, char **argv) {
  /* kiln tune's measure workers are this program (never listed) */
  if (argc > 1 && !strcmp(argv[1], AUTOTUNE_WORKER_ARG)) return autotune_worker_main(argc - 2, argv + 2);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    printf("kiln %s\n", KILN_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  for (int i = 0; i < NCOMMANDS; i++) {
    Command *c = commands[i];
    if (strcmp(argv[1], c->name)) continue;
    int npos;
    const char **pos;
    int rc = cli_parse(c, argc - 2, argv + 2, &npos, &pos);
    if (rc) return rc > 0 ? 0 : 2;
    rc = c->run(c, npos, pos);
    free(pos);
    return rc == CLI_USAGE ? 2 : rc ? 1 : 0;
  }
  fprintf(stderr, "kiln: unknown command '%s' (see kiln --help)\n", argv[1]);
  return 2;
}
