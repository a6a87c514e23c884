/*
 * error.c - the user-error channel (a thread-local message buffer) and the
 * invariant channel (kiln_panic, which aborts with file and line).
 */
#include "base.h"

#include <stdlib.h>
#include <string.h>

#define ERRBUF_SIZE 8192

static _Thread_local char errbuf[ERRBUF_SIZE];

int kiln_set_error_v(const char *fmt, va_list ap) {
  vsnprintf(errbuf, sizeof errbuf, fmt, ap);
  return -1;
}

int kiln_set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_set_error_v(fmt, ap);
  va_end(ap);
  return -1;
}

int kiln_error_context(const char *fmt, ...) {
  char prefix[1024], old[ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, errbuf, sizeof old);
  size_t pl = strlen(prefix);
  if (pl + 2 >= sizeof errbuf) pl = sizeof errbuf - 3;
  memcpy(errbuf, prefix, pl);
  memcpy(errbuf + pl, ": ", 2);
  size_t ol = strlen(old);
  if (pl + 2 + ol >= sizeof errbuf) ol = sizeof errbuf - pl - 3;
  memcpy(errbuf + pl + 2, old, ol);
  errbuf[pl + 2 + ol] = 0;
  return -1;
}

const char *kiln_get_error(void) { return errbuf; }

void kiln_clear_error(void) { errbuf[0] = 0; }

void kiln_panic(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "kiln: internal error at %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  abort();
}

bool kiln_verify_enabled(void) {
#ifndef NDEBUG
  return true;
#else
  const char *e = getenv("KILN_VERIFY");
  return e && *e && strcmp(e, "0");
#endif
}
