/* dtype.c - names and limits of DLPack data types. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

const char *dt_str(DType t) {
  const char *base;
  char buf[32];
  if (t.code == kDLUInt && t.bits == 1)
    base = "bool";
  else if (t.code == kDLOpaqueHandle)
    base = "handle";
  else if (t.code == KILN_DL_STRING)
    base = "string";
  else {
    const char *c = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float" : t.code == kDLBfloat ? "bfloat" : "unknown";
    snprintf(buf, sizeof buf, "%s%d", c, t.bits);
    base = buf;
  }
  if (t.lanes > 1) return kfmt("%sx%d", base, t.lanes);
  return kstrdup(base);
}

int dt_parse(const char *s, DType *out) {
  int lanes = 1;
  const char *x = strchr(s, 'x');
  char head[32];
  size_t n = x ? (size_t)(x - s) : strlen(s);
  if (n >= sizeof head) return kiln_set_error("unknown data type '%s'", s);
  memcpy(head, s, n);
  head[n] = 0;
  if (x) {
    char *end;
    long l = strtol(x + 1, &end, 10);
    if (*end || l < 1 || l > 65535) return kiln_set_error("bad lane count in data type '%s'", s);
    lanes = (int)l;
  }
  if (!strcmp(head, "bool")) {
    *out = dt_make(kDLUInt, 1, lanes);
    return 0;
  }
  if (!strcmp(head, "string") && lanes == 1) {
    *out = DT_STRING;
    return 0;
  }
  if (!strcmp(head, "handle")) {
    *out = dt_make(kDLOpaqueHandle, 64, lanes);
    return 0;
  }
  struct {
    const char *p;
    int code;
  } pre[] = {{"uint", kDLUInt}, {"int", kDLInt}, {"float", kDLFloat}, {"bfloat", kDLBfloat}};
  for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
    size_t pl = strlen(pre[i].p);
    if (!strncmp(head, pre[i].p, pl)) {
      char *end;
      long bits = strtol(head + pl, &end, 10);
      if (*end || head[pl] == 0) break;
      int ok = 0;
      if (pre[i].code == kDLFloat) ok = bits == 16 || bits == 32 || bits == 64;
      else if (pre[i].code == kDLBfloat) ok = bits == 16;
      else ok = bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
      if (!ok) break;
      *out = dt_make(pre[i].code, (int)bits, lanes);
      return 0;
    }
  }
  return kiln_set_error("unknown data type '%s' (expected e.g. float32, int64, bool)", s);
}

int64_t dt_int_min(DType t) {
  if (t.code == kDLUInt) return 0;
  if (t.bits >= 64) return INT64_MIN;
  return -((int64_t)1 << (t.bits - 1));
}

int64_t dt_int_max(DType t) {
  if (t.code == kDLUInt) return t.bits >= 63 ? INT64_MAX : (((int64_t)1 << t.bits) - 1);
  if (t.bits >= 64) return INT64_MAX;
  return ((int64_t)1 << (t.bits - 1)) - 1;
}
