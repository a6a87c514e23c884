/*
 * error.c - the runtime's error and version entry points.
 *
 * The calling thread's last error message lives here, once per process:
 * the base layer's kiln_set_error / kiln_error_context / kiln_get_error
 * (src/base/error.c) are written on these two functions, so a message set
 * anywhere in Kiln - the compiler in libkiln.so, the runtime, generated
 * code - is what kiln_last_error() returns.  kiln_set_last_error is also
 * the function the module loader hands to generated code through
 * __kiln_set_last_error_ptr.
 *
 * Exports: kiln_last_error, kiln_set_last_error, kiln_version.
 */
#include "runtime_internal.h"

#include <string.h>

#define ERRBUF_SIZE 8192

static _Thread_local char errbuf[ERRBUF_SIZE];

const char *kiln_last_error(void) { return errbuf; }

void kiln_set_last_error(const char *msg) {
  if (!msg) msg = "(null)";
  size_t n = strlen(msg);
  if (n >= sizeof errbuf) n = sizeof errbuf - 1;
  memmove(errbuf, msg, n); /* msg may be the buffer itself */
  errbuf[n] = 0;
}

const char *kiln_version(void) { return KILN_VERSION_STRING; }
