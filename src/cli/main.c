/* main.c - the kiln command: dispatches subcommands. */
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: kiln <command> [options]\n"
          "\n"
          "Kiln is a deep-learning compiler: it turns models into fast native code.\n"
          "\n"
          "commands:\n"
          "  --version   print the version\n"
          "  --help      print this help\n");
}

int main(int argc, char **argv) {
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
  fprintf(stderr, "kiln: unknown command '%s' (see kiln --help)\n", argv[1]);
  return 2;
}
