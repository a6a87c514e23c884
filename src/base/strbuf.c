/* strbuf.c - a growable heap string used by printers and code generators,
 * and a UTF-8 validity check for text read from files. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

static void sb_reserve(StrBuf *sb, size_t extra) {
  if (sb->len + extra + 1 <= sb->cap) return;
  size_t cap = sb->cap ? sb->cap * 2 : 256;
  while (cap < sb->len + extra + 1) cap *= 2;
  sb->data = xrealloc(sb->data, cap);
  sb->cap = cap;
}

void sb_putn(StrBuf *sb, const char *s, size_t n) {
  sb_reserve(sb, n);
  if (n) memcpy(sb->data + sb->len, s, n); /* s may be NULL when n is 0 (an empty array) */
  sb->len += n;
  sb->data[sb->len] = 0;
}

void sb_putc(StrBuf *sb, char c) { sb_putn(sb, &c, 1); }

void sb_puts(StrBuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }

void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  sb_reserve(sb, (size_t)n);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  sb->len += (size_t)n;
}

void sb_printf(StrBuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(sb, fmt, ap);
  va_end(ap);
}

void sb_indent(StrBuf *sb, int n) {
  for (int i = 0; i < n; i++) sb_putc(sb, ' ');
}

void sb_free(StrBuf *sb) {
  free(sb->data);
  sb->data = NULL;
  sb->len = sb->cap = 0;
}

char *sb_steal(StrBuf *sb) {
  char *p = sb->data;
  if (!p) p = xcalloc(1, 1);
  sb->data = NULL;
  sb->len = sb->cap = 0;
  return p;
}

long utf8_invalid_at(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  for (long i = 0; p[i];) {
    unsigned c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    /* the sequence's length, and the range of its second byte, which
     * excludes overlong forms (E0, F0), surrogates (ED) and > U+10FFFF (F4) */
    int n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (int k = 2; k < n; k++)
      if ((p[i + k] & 0xc0) != 0x80) return i;
    i += n;
  }
  return -1;
}
