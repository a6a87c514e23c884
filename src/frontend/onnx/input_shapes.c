/*
 * input_shapes.c - the --input-shapes text: "name:[d0,d1,...]" entries and
 * bounds on symbols ("N<=64"), parsed into InputShape rows (import.h).
 */
#include "import.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int parse_input_shapes(const char *text, InputShape **out) {
  AVec v = {0}, v_bounds = {0};
  const char *p = text ? text : "";
  while (*p) {
    while (isspace((unsigned char)*p) || *p == ',' || *p == ';') p++;
    if (!*p) break;
    /* a bound on a symbol: N<=64, N>=2 */
    const char *id = p;
    while (isalnum((unsigned char)*id) || *id == '_') id++;
    if (id > p && (isalpha((unsigned char)*p) || *p == '_') && (id[0] == '<' || id[0] == '>') && id[1] == '=') {
      InputShape *b = KNEW(InputShape);
      b->name = kstrndup(p, (size_t)(id - p));
      b->bound = true;
      b->lo = 1;
      b->hi = INT64_MAX;
      char *end;
      errno = 0;
      long long bv = strtoll(id + 2, &end, 10);
      if (end == id + 2 || errno == ERANGE || bv < 1)
        return kiln_set_error("bad bound '%.30s': expected %s%c=<a positive integer>", p, b->name, id[0]);
      *(id[0] == '<' ? &b->hi : &b->lo) = bv;
      av_push(&v_bounds, b);
      p = end;
      continue;
    }
    const char *colon = strchr(p, ':');
    if (!colon) return kiln_set_error("bad input shape '%s': expected name:[d0,d1,...]", p);
    InputShape *s = KNEW(InputShape);
    const char *ne = colon;
    while (ne > p && isspace((unsigned char)ne[-1])) ne--;
    s->name = kstrndup(p, (size_t)(ne - p));
    if (!*s->name) return kiln_set_error("bad input shape '%s': empty input name", text);
    const char *q = colon + 1;
    while (isspace((unsigned char)*q)) q++;
    if (!strncmp(q, "seq(", 4) || (!strncmp(q, "none", 4) && !isalnum((unsigned char)q[4]) && q[4] != '_')) {
      /* a sequence's length or an empty optional (docs/sequences.md) */
      if (*q == 'n') {
        s->structure = IS_NONE;
        q += 4;
      } else {
        char *end;
        errno = 0;
        long long c = strtoll(q + 4, &end, 10);
        if (end == q + 4 || errno == ERANGE || c < 0 || c > 4096 || *end != ')')
          return kiln_set_error("bad input structure for '%s': expected seq(N) with N in [0, 4096] at \"%.20s\"",
                                s->name, q);
        s->structure = IS_SEQ;
        s->count = c;
        q = end + 1;
      }
      for (int i = 0; i < v.len; i++)
        if (!strcmp(((InputShape *)v.data[i])->name, s->name)) return kiln_set_error("input '%s' is given two shapes", s->name);
      av_push(&v, s);
      p = q;
      continue;
    }
    bool bracket = *q == '[';
    if (bracket) q++;
    s->ndim = 0;
    for (;;) {
      while (isspace((unsigned char)*q)) q++;
      if (bracket && *q == ']') {
        q++;
        break;
      }
      if (!bracket && (*q == 0 || *q == ',' || *q == ';' || isspace((unsigned char)*q))) break;
      char *end;
      errno = 0;
      if (isalpha((unsigned char)*q) || *q == '_') { /* a symbol */
        const char *e = q;
        while (isalnum((unsigned char)*e) || *e == '_') e++;
        if (s->ndim >= GRAPH_MAX_DIMS) return kiln_set_error("input shape for '%s' has more than %d dimensions", s->name, GRAPH_MAX_DIMS);
        s->sym[s->ndim] = kstrndup(q, (size_t)(e - q));
        s->shape[s->ndim++] = -1;
        end = (char *)e;
        goto next;
      }
      long long d = strtoll(q, &end, 10);
      if (end != q && errno == ERANGE)
        return kiln_set_error("bad input shape for '%s': \"%.20s\" does not fit in 64 bits", s->name, q);
      if (end == q || d < 0)
        return kiln_set_error("bad input shape for '%s': expected a non-negative integer or a symbol name at \"%.20s\"", s->name, q);
      if (s->ndim >= GRAPH_MAX_DIMS) return kiln_set_error("input shape for '%s' has more than %d dimensions", s->name, GRAPH_MAX_DIMS);
      s->shape[s->ndim++] = d;
    next:
      q = end;
      while (isspace((unsigned char)*q)) q++;
      if (bracket) {
        if (*q == ',') q++;
        else if (*q != ']') return kiln_set_error("bad input shape for '%s': expected ',' or ']' at \"%.20s\"", s->name, q);
      } else {
        if (*q == 'x' || *q == 'X') q++;
        else break;
      }
    }
    if (bracket && q[-1] != ']') return kiln_set_error("bad input shape for '%s': missing ']'", s->name);
    for (int i = 0; i < v.len; i++)
      if (!strcmp(((InputShape *)v.data[i])->name, s->name)) return kiln_set_error("input '%s' is given two shapes", s->name);
    av_push(&v, s);
    p = q;
  }
  for (int i = 0; i < v_bounds.len; i++) av_push(&v, v_bounds.data[i]);
  InputShape *arr = KNEWN(InputShape, v.len + 1);
  for (int i = 0; i < v.len; i++) arr[i] = *(InputShape *)v.data[i];
  *out = arr;
  return v.len;
}
