/*
 * error.c - the user-error channel (the calling thread's last message) and
 * the invariant channel (kiln_panic, which aborts with file and line).
 *
 * The message itself is kept by the runtime (kiln_last_error and
 * kiln_set_last_error in src/runtime/error.c), not here: libkiln_runtime.so
 * and libkiln.so each link a private copy of this base layer (it is hidden,
 * not exported), and a message set by either library must be the one
 * kiln_last_error() returns.  So these functions format into a local buffer
 * and hand the text to the runtime's public setter.
 */
#include "base.h"

#include <stdlib.h>
#include <string.h>

#include "kiln/runtime.h"

#define ERRBUF_SIZE 8192 /* as the runtime's buffer: longer messages are cut */

int kiln_set_error_v(const char *fmt, va_list ap) {
  char buf[ERRBUF_SIZE];
  vsnprintf(buf, sizeof buf, fmt, ap);
  kiln_set_last_error(buf);
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
  char prefix[1024], buf[ERRBUF_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  const char *old = kiln_last_error();
  size_t pl = strlen(prefix);
  if (pl + 2 >= sizeof buf) pl = sizeof buf - 3;
  memcpy(buf, prefix, pl);
  memcpy(buf + pl, ": ", 2);
  size_t ol = strlen(old);
  if (pl + 2 + ol >= sizeof buf) ol = sizeof buf - pl - 3;
  memcpy(buf + pl + 2, old, ol);
  buf[pl + 2 + ol] = 0;
  kiln_set_last_error(buf);
  return -1;
}

const char *kiln_get_error(void) { return kiln_last_error(); }

void kiln_clear_error(void) { kiln_set_last_error(""); }

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
