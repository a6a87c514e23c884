/*
 * pyjson.c - JSON text as Python's json.dumps writes it (", " and ": "
 * separators, floats as repr(), strings ASCII-escaped), so records Kiln
 * writes are the bytes AutoTVM writes, and a v0.1 log read and written
 * again comes back unchanged.
 *
 * A float is repr()'s shortest text that reads back to the same double:
 * fixed notation with at least one digit after the point when the decimal
 * exponent is in (-4, 16], else d.ddde+XX; json.dumps spells the
 * non-finite values Infinity, -Infinity and NaN.
 */
#include "knob.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int pyjson_int64(const cJSON *j, int64_t *out) {
  if (!cJSON_IsNumber(j)) return 0;
  double v = j->valuedouble;
  /* 9223372036854775808.0 = 2^63 is the first double int64_t cannot hold */
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || v != floor(v)) return 0;
  *out = (int64_t)v;
  return 1;
}

void pyjson_float(StrBuf *sb, double v) {
  if (isnan(v)) {
    sb_puts(sb, "NaN");
    return;
  }
  if (isinf(v)) {
    sb_puts(sb, v < 0 ? "-Infinity" : "Infinity");
    return;
  }
  if (v == 0) {
    sb_puts(sb, signbit(v) ? "-0.0" : "0.0");
    return;
  }
  /* the shortest correctly rounded digits that read back the same */
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (strtod(buf, NULL) == v) break;
  }
  /* buf: [-]d[.ddd]e[+-]XX -> digits and decimal point position */
  const char *p = buf;
  if (*p == '-') {
    sb_putc(sb, '-');
    p++;
  }
  char digits[32];
  int nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9') digits[nd++] = *p;
  while (nd > 1 && digits[nd - 1] == '0') nd--; /* %.*e may pad with zeros */
  digits[nd] = 0;
  int exp10 = atoi(p + 1);
  int decpt = exp10 + 1; /* value = 0.DIGITS x 10^decpt */
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      sb_puts(sb, "0.");
      for (int i = 0; i < -decpt; i++) sb_putc(sb, '0');
      sb_puts(sb, digits);
    } else if (decpt >= nd) {
      sb_puts(sb, digits);
      for (int i = nd; i < decpt; i++) sb_putc(sb, '0');
      sb_puts(sb, ".0");
    } else {
      sb_putn(sb, digits, (size_t)decpt);
      sb_putc(sb, '.');
      sb_puts(sb, digits + decpt);
    }
    return;
  }
  sb_putc(sb, digits[0]);
  if (nd > 1) {
    sb_putc(sb, '.');
    sb_puts(sb, digits + 1);
  }
  int e = decpt - 1;
  sb_printf(sb, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
}

void pyjson_str(StrBuf *sb, const char *s) {
  sb_putc(sb, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    unsigned c = *p;
    switch (c) {
    case '"':
      sb_puts(sb, "\\\"");
      continue;
    case '\\':
      sb_puts(sb, "\\\\");
      continue;
    case '\n':
      sb_puts(sb, "\\n");
      continue;
    case '\r':
      sb_puts(sb, "\\r");
      continue;
    case '\t':
      sb_puts(sb, "\\t");
      continue;
    case '\b':
      sb_puts(sb, "\\b");
      continue;
    case '\f':
      sb_puts(sb, "\\f");
      continue;
    default:
      break;
    }
    if (c < 0x20 || c == 0x7f) {
      sb_printf(sb, "\\u%04x", c);
      continue;
    }
    if (c < 0x80) {
      sb_putc(sb, (char)c);
      continue;
    }
    /* ensure_ascii: UTF-8 -> \uXXXX (surrogate pairs above the BMP) */
    unsigned cp = 0;
    int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
    cp = extra == 3 ? c & 7 : extra == 2 ? c & 15 : extra == 1 ? c & 31 : c;
    for (int i = 0; i < extra && (p[1] & 0xc0) == 0x80; i++) cp = (cp << 6) | (*++p & 0x3f);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      sb_printf(sb, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
    } else {
      sb_printf(sb, "\\u%04x", cp);
    }
  }
  sb_putc(sb, '"');
}

void pyjson_value(StrBuf *sb, const struct cJSON *j) {
  if (!j || cJSON_IsNull(j)) {
    sb_puts(sb, "null");
  } else if (cJSON_IsTrue(j)) {
    sb_puts(sb, "true");
  } else if (cJSON_IsFalse(j)) {
    sb_puts(sb, "false");
  } else if (cJSON_IsNumber(j)) {
    double v = j->valuedouble;
    /* JSON keeps no int/float distinction: whole numbers are ints */
    if (v == floor(v) && fabs(v) < 9e15) sb_printf(sb, "%lld", (long long)v);
    else pyjson_float(sb, v);
  } else if (cJSON_IsString(j)) {
    pyjson_str(sb, j->valuestring);
  } else if (cJSON_IsArray(j)) {
    sb_putc(sb, '[');
    int i = 0;
    for (const cJSON *c = j->child; c; c = c->next, i++) {
      if (i) sb_puts(sb, ", ");
      pyjson_value(sb, c);
    }
    sb_putc(sb, ']');
  } else if (cJSON_IsObject(j)) {
    sb_putc(sb, '{');
    int i = 0;
    for (const cJSON *c = j->child; c; c = c->next, i++) {
      if (i) sb_puts(sb, ", ");
      pyjson_str(sb, c->string ? c->string : "");
      sb_puts(sb, ": ");
      pyjson_value(sb, c);
    }
    sb_putc(sb, '}');
  } else {
    sb_puts(sb, "null");
  }
}

char *pyjson_dumps(const struct cJSON *j) {
  StrBuf sb = {0};
  pyjson_value(&sb, j);
  char *s = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return s;
}
