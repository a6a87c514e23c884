/*
 * error.c - the runtime's error and version entry points.
 *
 * The runtime shares the base layer's per-thread message buffer, so a
 * message set anywhere in Kiln (compiler or runtime) is what
 * kiln_last_error() returns.  kiln_set_last_error is also the function the
 * module loader hands to generated code through __kiln_set_last_error_ptr.
 *
 * Exports: kiln_last_error, kiln_set_last_error, kiln_version.
 */
#include "runtime_internal.h"

const char *kiln_last_error(void) { return kiln_get_error(); }

void kiln_set_last_error(const char *msg) { kiln_set_error("%s", msg ? msg : "(null)"); }

const char *kiln_version(void) { return KILN_VERSION_STRING; }
