/*
 * strings.c - string tensors: arrays that own their text, the executor's
 * text memory, and the host functions the string operators run as.
 *
 * A string tensor (dtype {KILN_DL_STRING, 64, 1}, include/kiln/runtime.h)
 * holds one const char * per element, to NUL-terminated UTF-8; NULL reads
 * as "".  The text is not in the element array, so whoever makes a string
 * tensor says who owns its text:
 *   - kiln_array_from_strings: one heap block, the pointers then the text,
 *     freed with the array;
 *   - a graph executor: set_input copies an input's text into an arena of
 *     that argument (kiln_strings_own_input), operators allocate the text
 *     they make from the run's arena (ex->str_run, dropped when the next
 *     run starts), get_output copies out (kiln_strings_copy_out).
 * Constants of string type are not embedded in modules: the compiler
 * refuses them (docs/strings.md).
 *
 * String operators are host functions, not generated kernels: the graph
 * JSON node names a global function (runtime.strings.*) and carries the
 * operator's attributes as a JSON object in attrs.kiln_host.  The executor
 * calls it with the input tensors, the output tensor, that JSON text
 * (KILN_STR) and a KILN_HANDLE to its KArena * of the run.  Each function
 * checks its arguments and reports bad data as an error naming the element.
 *
 * RegexFullMatch: ONNX specifies RE2's syntax.  Kiln uses POSIX regcomp
 * (glibc) with the C.UTF-8 locale, after translating the pattern: RE2's
 * escapes (\d \w \s \D \W \S, escaped punctuation) become explicit ASCII
 * bracket expressions, as RE2 defines them; what RE2 reads otherwise than
 * POSIX would (non-greedy and possessive quantifiers, (?...) groups and
 * flags, \b \B \A \z \p{..} \Q..\E, back-references, octal and hex
 * escapes, [[:word:]]-style classes RE2 and POSIX name differently) is
 * refused with an error that names it.  Full-match answers do not depend on
 * leftmost-longest (POSIX) against leftmost-first (RE2) choice, so what is
 * accepted gives RE2's answers.
 *
 * Exports: kiln_array_from_strings, kiln_dtype_is_string; internally
 * kiln_string_builtins and the kiln_strings_* executor helpers.
 */
#define _GNU_SOURCE
#include "runtime_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

int kiln_dtype_is_string(DLDataType t) { return t.code == KILN_DL_STRING && t.bits == 64 && t.lanes == 1; }

static int64_t numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

/* ---- arrays that own their text ---- */

int kiln_array_from_strings(int ndim, const int64_t *shape, const char *const *strs, DLTensor **out) {
  if (!out) return kiln_set_error("array_from_strings: out is NULL");
  *out = NULL;
  if (ndim < 0 || (ndim > 0 && !shape)) return kiln_set_error("array_from_strings: bad shape (ndim %d)", ndim);
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0) return kiln_set_error("array_from_strings: dimension %d is %lld", i, (long long)shape[i]);
  int64_t n = numel(ndim, shape);
  size_t text = 0;
  for (int64_t i = 0; strs && i < n; i++) text += (strs[i] ? strlen(strs[i]) : 0) + 1;
  if (!strs) text = (size_t)n;
  size_t head = (size_t)n * sizeof(char *);
  char *block = malloc(head + text + 1);
  if (!block) return kiln_set_error("array_from_strings: out of memory (%zu bytes)", head + text);
  char **ptrs = (char **)block, *p = block + head;
  for (int64_t i = 0; i < n; i++) {
    const char *s = strs && strs[i] ? strs[i] : "";
    size_t len = strlen(s);
    memcpy(p, s, len + 1);
    ptrs[i] = p;
    p += len + 1;
  }
  if (kiln_array_wrap(block, ndim, shape, (DLDataType){KILN_DL_STRING, 64, 1}, (DLDevice){kDLCPU, 0}, free, block,
                      out)) {
    free(block);
    return -1;
  }
  return 0;
}

/* Element i (row-major) of a CPU string tensor with any strides. */
static const char *str_at(const DLTensor *t, int64_t i) {
  const char *const *p = (const char *const *)((const char *)t->data + t->byte_offset);
  int64_t off = 0;
  if (t->strides) {
    for (int d = t->ndim - 1; d >= 0; d--) {
      off += (i % t->shape[d]) * t->strides[d];
      i /= t->shape[d];
    }
  } else {
    off = i;
  }
  return p[off] ? p[off] : "";
}

int kiln_strings_copy_out(const DLTensor *t, DLTensor **out) {
  if (t->device.device_type != kDLCPU) return kiln_set_error("string tensors live on the CPU only");
  int64_t n = numel(t->ndim, t->shape);
  const char **v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) return kiln_set_error("out of memory");
  for (int64_t i = 0; i < n; i++) v[i] = str_at(t, i);
  int rc = kiln_array_from_strings(t->ndim, t->shape, v, out);
  free(v);
  return rc;
}

/* ---- the executor's text ---- */

void kiln_strings_run_reset(KilnGraphExecutor *ex) {
  kiln_arena_free(ex->str_run);
  ex->str_run = kiln_arena_new();
}

int kiln_strings_own_input(KilnGraphExecutor *ex, int node, int e) {
  if (!ex->str_in) ex->str_in = kiln_arena_alloc(ex->arena, (size_t)ex->g.num_nodes * sizeof(KArena *) + 1);
  kiln_arena_free(ex->str_in[node]);
  KArena *a = ex->str_in[node] = kiln_arena_new();
  DLTensor *t = &ex->entries[e];
  const char **p = (const char **)t->data;
  int64_t n = numel(t->ndim, t->shape);
  for (int64_t i = 0; i < n; i++) {
    const char *s = p[i] ? p[i] : "";
    size_t len = strlen(s);
    char *c = kiln_arena_alloc(a, len + 1);
    memcpy(c, s, len + 1);
    p[i] = c;
  }
  return 0;
}

void kiln_strings_free(KilnGraphExecutor *ex) {
  kiln_arena_free(ex->str_run);
  ex->str_run = NULL;
  for (int i = 0; ex->str_in && i < ex->g.num_nodes; i++) kiln_arena_free(ex->str_in[i]);
  ex->str_in = NULL;
}

/* ---- what every host function shares ---- */

typedef struct HostCall {
  const char *fname;
  int ntensors;
  DLTensor **t; /* inputs then outputs */
  cJSON *attrs;
  KArena *heap;
  int64_t *reported; /* a data-dependent op's size goes here (NULL: none) */
} HostCall;

/* Unpack args: ntensors tensors, the attributes, the heap, and when
 * may_report a KILN_HANDLE to the int64 where a data-dependent op
 * reports its output's size (datadep.c's convention). */
static int host_begin_r(HostCall *h, const char *fname, KilnValue *args, int *codes, int nargs, int ntensors,
                        bool may_report) {
  memset(h, 0, sizeof *h);
  h->fname = fname;
  if (kiln_check_argc(fname, nargs, ntensors + 2, ntensors + 2 + may_report, NULL)) return -1;
  if (nargs == ntensors + 3) {
    if (codes[ntensors + 2] != KILN_HANDLE || !args[ntensors + 2].v_handle)
      return kiln_arg_error(fname, ntensors + 2, "reported", "handle", codes[ntensors + 2], NULL);
    h->reported = args[ntensors + 2].v_handle;
  }
  h->t = xcalloc((size_t)ntensors, sizeof(DLTensor *));
  h->ntensors = ntensors;
  for (int i = 0; i < ntensors; i++) {
    if (codes[i] != KILN_DLTENSOR && codes[i] != KILN_NDARRAY) return kiln_arg_error(fname, i, NULL, "tensor", codes[i], NULL);
    h->t[i] = args[i].v_handle;
    if (!h->t[i] || h->t[i]->device.device_type != kDLCPU)
      return kiln_set_error("%s: argument %d must be a CPU tensor", fname, i);
  }
  if (codes[ntensors] != KILN_STR) return kiln_arg_error(fname, ntensors, "attrs", "str", codes[ntensors], NULL);
  if (codes[ntensors + 1] != KILN_HANDLE || !args[ntensors + 1].v_handle)
    return kiln_arg_error(fname, ntensors + 1, "heap", "handle", codes[ntensors + 1], NULL);
  h->heap = *(KArena **)args[ntensors + 1].v_handle;
  h->attrs = cJSON_Parse(args[ntensors].v_str);
  if (!h->attrs || !cJSON_IsObject(h->attrs)) return kiln_set_error("%s: the attributes are not a JSON object", fname);
  return 0;
}

static int host_begin(HostCall *h, const char *fname, KilnValue *args, int *codes, int nargs, int ntensors) {
  return host_begin_r(h, fname, args, codes, nargs, ntensors, false);
}

static int host_end(HostCall *h, int rc) {
  cJSON_Delete(h->attrs);
  free(h->t);
  return rc;
}

static const char *attr_s(HostCall *h, const char *key, const char *def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h->attrs, key);
  return cJSON_IsString(v) ? v->valuestring : def;
}

static int check_dtype(HostCall *h, int i, DLDataType want, const char *what) {
  DLDataType d = h->t[i]->dtype;
  if (d.code == want.code && d.bits == want.bits && d.lanes == want.lanes) return 0;
  char b[48];
  return kiln_set_error("%s: argument %d (%s) must be %s, got %s", h->fname, i, what,
                        kiln_dtype_format(want, (char[48]){0}, 48), kiln_dtype_format(d, b, sizeof b));
}

static const DLDataType STR = {KILN_DL_STRING, 64, 1}, BOOL = {kDLUInt, 1, 1};

static char *heap_str(HostCall *h, const char *s, size_t len) {
  char *c = kiln_arena_alloc(h->heap, len + 1);
  memcpy(c, s, len);
  c[len] = 0;
  return c;
}

/* Input element offsets for output element i under NumPy broadcasting
 * (in's dimensions align to out's last ones; an extent of 1 repeats). */
static int64_t bcast_index(const DLTensor *in, const DLTensor *out, int64_t i) {
  int64_t off = 0, stride = 1;
  for (int d = out->ndim - 1, k = in->ndim - 1; d >= 0; d--, k--) {
    int64_t c = i % out->shape[d];
    i /= out->shape[d];
    if (k < 0) continue;
    if (in->shape[k] != 1) off += c * stride;
    stride *= in->shape[k];
  }
  return off;
}

static int check_bcast(HostCall *h, const DLTensor *in, const DLTensor *out, int idx) {
  if (in->ndim > out->ndim) return kiln_set_error("%s: input %d has more dimensions than the output", h->fname, idx);
  for (int d = out->ndim - 1, k = in->ndim - 1; k >= 0; d--, k--)
    if (in->shape[k] != 1 && in->shape[k] != out->shape[d])
      return kiln_set_error("%s: input %d's dimension %d (%lld) does not broadcast to the output's %lld", h->fname, idx, k,
                            (long long)in->shape[k], (long long)out->shape[d]);
  return 0;
}

static int check_compact(HostCall *h) {
  for (int i = 0; i < h->ntensors; i++)
    if (!kiln_tensor_is_compact(h->t[i])) return kiln_set_error("%s: argument %d must be compact", h->fname, i);
  return 0;
}

static const char **sv(const DLTensor *t) { return (const char **)((char *)t->data + t->byte_offset); }
static const char *sget(const DLTensor *t, int64_t i) {
  const char *s = sv(t)[i];
  return s ? s : "";
}

/* ---- StringConcat, Equal ---- */

static int f_concat(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  HostCall h;
  int rc = host_begin(&h, "runtime.strings.concat", args, codes, nargs, 3);
  if (!rc) rc = check_dtype(&h, 0, STR, "x") || check_dtype(&h, 1, STR, "y") || check_dtype(&h, 2, STR, "out") ||
                check_compact(&h) || check_bcast(&h, h.t[0], h.t[2], 0) || check_bcast(&h, h.t[1], h.t[2], 1);
  int64_t n = rc ? 0 : numel(h.t[2]->ndim, h.t[2]->shape);
  for (int64_t i = 0; i < n; i++) {
    const char *a = sget(h.t[0], bcast_index(h.t[0], h.t[2], i)), *b = sget(h.t[1], bcast_index(h.t[1], h.t[2], i));
    size_t la = strlen(a), lb = strlen(b);
    char *c = kiln_arena_alloc(h.heap, la + lb + 1);
    memcpy(c, a, la);
    memcpy(c + la, b, lb + 1);
    sv(h.t[2])[i] = c;
  }
  return host_end(&h, rc ? -1 : 0);
}

static int f_equal(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  HostCall h;
  int rc = host_begin(&h, "runtime.strings.equal", args, codes, nargs, 3);
  if (!rc) rc = check_dtype(&h, 0, STR, "a") || check_dtype(&h, 1, STR, "b") || check_dtype(&h, 2, BOOL, "out") ||
                check_compact(&h) || check_bcast(&h, h.t[0], h.t[2], 0) || check_bcast(&h, h.t[1], h.t[2], 1);
  int64_t n = rc ? 0 : numel(h.t[2]->ndim, h.t[2]->shape);
  uint8_t *o = rc ? NULL : (uint8_t *)h.t[2]->data + h.t[2]->byte_offset;
  for (int64_t i = 0; i < n; i++)
    o[i] = !strcmp(sget(h.t[0], bcast_index(h.t[0], h.t[2], i)), sget(h.t[1], bcast_index(h.t[1], h.t[2], i)));
  return host_end(&h, rc ? -1 : 0);
}

/* ---- StringNormalizer ---- */

static locale_t utf8_loc;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static void utf8_init(void) {
  utf8_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  if (!utf8_loc) utf8_loc = newlocale(LC_CTYPE_MASK, "C.utf8", (locale_t)0);
}
/* C.UTF-8's character tables (made once), or 0 where the system has none. */
static locale_t utf8_locale(void) {
  pthread_once(&utf8_once, utf8_init);
  return utf8_loc;
}

/* s with every character's case changed (up: upper), decoded as UTF-8
 * under C.UTF-8's case tables; -1 + error on text that is not UTF-8. */
static int change_case(HostCall *h, const char *s, int up, int64_t elem, const char **out) {
  locale_t loc = utf8_locale();
  size_t len = strlen(s);
  bool ascii = true;
  for (size_t i = 0; i < len; i++) ascii = ascii && !((unsigned char)s[i] & 0x80);
  char *c = kiln_arena_alloc(h->heap, 4 * len + 1);
  if (ascii) {
    for (size_t i = 0; i <= len; i++) c[i] = (char)(up ? toupper((unsigned char)s[i]) : tolower((unsigned char)s[i]));
    *out = c;
    return 0;
  }
  if (!loc) return kiln_set_error("%s: element %lld is not ASCII and this system has no C.UTF-8 locale for its case",
                                  h->fname, (long long)elem);
  mbstate_t in = {0}, o = {0};
  size_t k = 0;
  locale_t old = uselocale(loc);
  int rc = 0;
  for (size_t i = 0; i < len;) {
    wchar_t w;
    size_t r = mbrtowc(&w, s + i, len - i, &in);
    if (r == (size_t)-1 || r == (size_t)-2 || r == 0) {
      rc = kiln_set_error("%s: element %lld is not valid UTF-8 (at byte %zu)", h->fname, (long long)elem, i);
      break;
    }
    i += r;
    wchar_t x = up ? towupper_l((wint_t)w, loc) : towlower_l((wint_t)w, loc);
    size_t m = wcrtomb(c + k, x, &o);
    if (m == (size_t)-1) m = wcrtomb(c + k, w, &o);
    k += m;
  }
  uselocale(old);
  c[k] = 0;
  *out = c;
  return rc;
}

/* Whether word s is one of the stopwords sw: exactly, or (insensitive)
 * after lower-casing both. */
static int is_stopword(HostCall *h, const char *s, const cJSON *sw, bool sensitive, int64_t elem, bool *stop) {
  const char *ls = s;
  *stop = false;
  if (!sensitive && change_case(h, s, 0, elem, &ls)) return -1;
  const cJSON *w;
  cJSON_ArrayForEach(w, sw) {
    const char *t = cJSON_IsString(w) ? w->valuestring : "", *lt = t;
    if (!sensitive && change_case(h, t, 0, -1, &lt)) return -1;
    if (!strcmp(ls, lt)) return *stop = true, 0;
  }
  return 0;
}

/* StringNormalizer: every word case-changed; with stopwords
 * ("strings.normalize_words") the words that are stopwords dropped, the
 * rest written compact and their count reported (an input of stopwords
 * only gives one empty string, as ONNX specifies). */
static int f_normalize(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  HostCall h;
  int rc = host_begin_r(&h, "runtime.strings.normalize", args, codes, nargs, 2, true);
  if (!rc) rc = check_dtype(&h, 0, STR, "x") || check_dtype(&h, 1, STR, "out") || check_compact(&h);
  const char *mode = rc ? "" : attr_s(&h, "case_change_action", "NONE");
  int up = !strcmp(mode, "UPPER") ? 1 : !strcmp(mode, "LOWER") ? 0 : -1;
  const cJSON *sw = rc ? NULL : cJSON_GetObjectItemCaseSensitive(h.attrs, "stopwords");
  const cJSON *cs = rc ? NULL : cJSON_GetObjectItemCaseSensitive(h.attrs, "is_case_sensitive");
  bool filter = cJSON_IsArray(sw) && cJSON_GetArraySize(sw) > 0, sensitive = cJSON_IsTrue(cs) || (cJSON_IsNumber(cs) && cs->valueint);
  if (!rc && filter != (h.reported != NULL))
    rc = kiln_set_error("%s: %s", h.fname, filter ? "stopwords need a place to report the words kept"
                                                  : "a reported size needs stopwords");
  int64_t n = rc ? 0 : numel(h.t[0]->ndim, h.t[0]->shape), room = rc ? 0 : numel(h.t[1]->ndim, h.t[1]->shape);
  if (!rc && (filter ? room < 1 : room != n))
    rc = kiln_set_error("%s: the output holds %lld words for an input of %lld", h.fname, (long long)room, (long long)n);
  int64_t k = 0;
  for (int64_t i = 0; i < n && !rc; i++) {
    const char *s = sget(h.t[0], i), *o = s;
    bool stop = false;
    if (filter && (rc = is_stopword(&h, s, sw, sensitive, i, &stop))) break;
    if (stop) continue;
    if (k >= room) {
      rc = kiln_set_error("%s: more than the %lld words its output holds are kept", h.fname, (long long)room);
      break;
    }
    if (up >= 0) rc = change_case(&h, s, up, i, &o);
    else o = heap_str(&h, s, strlen(s));
    sv(h.t[1])[k++] = o;
  }
  if (!rc && filter) {
    if (k == 0) sv(h.t[1])[k++] = heap_str(&h, "", 0);
    *h.reported = k;
  }
  return host_end(&h, rc ? -1 : 0);
}

/* ---- RegexFullMatch ---- */

/* RE2's classes as ASCII bracket contents. */
static const char *class_body(char c) {
  switch (c) {
  case 'd': return "0-9";
  case 'w': return "0-9A-Za-z_";
  case 's': return "\t\n\f\r ";
  default: return NULL;
  }
}

/* Translate RE2 pattern p into POSIX ERE anchored at both ends; -1 + error
 * naming what Kiln does not translate.  *word: the pattern has \b or \B,
 * which glibc reads with the locale's word characters (RE2: ASCII ones). */
static int re2_to_posix(const char *p, StrBuf *sb, const char *fname, bool *word) {
  *word = false;
  /* RE2's limits: a repetition count above 1000 is an error there; Kiln
   * also bounds the pattern and the product of its counts, since regcomp
   * expands counted repetitions (a{1000}){1000} into a million states */
  if (strlen(p) > 4096) return kiln_set_error("%s: the pattern is longer than 4096 bytes", fname);
  double product = 1;
  for (const char *q = strchr(p, '{'); q; q = strchr(q + 1, '{')) {
    if (q > p && q[-1] == '\\') continue;
    char *end;
    long a = strtol(q + 1, &end, 10), b = a;
    if (end == q + 1) continue;
    if (*end == ',') b = isdigit((unsigned char)end[1]) ? strtol(end + 1, &end, 10) : a;
    if (a > 1000 || b > 1000)
      return kiln_set_error("%s: the repetition count in '%.12s' is above 1000, which RE2 refuses too", fname, q);
    product *= (double)(b > 0 ? b : 1);
  }
  if (product > 100000)
    return kiln_set_error("%s: the pattern's counted repetitions multiply to more than 100000 states; Kiln's POSIX "
                          "engine expands them, so it refuses such a pattern", fname);
  sb_puts(sb, "^(");
  int depth = 0;
  for (size_t i = 0; p[i];) {
    char c = p[i];
    if (c == '\\') {
      char e = p[i + 1];
      if (!e) return kiln_set_error("%s: the pattern ends with a lone '\\'", fname);
      const char *body = class_body((char)tolower((unsigned char)e));
      if (body) {
        sb_printf(sb, "[%s%s]", isupper((unsigned char)e) ? "^" : "", body);
      } else if (ispunct((unsigned char)e)) {
        if (e == '^') sb_puts(sb, "\\^");
        else sb_printf(sb, "[%c]", e);
      } else if (e == 'n' || e == 't' || e == 'r' || e == 'f' || e == 'v') {
        sb_putc(sb, e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'f' ? '\f' : '\v');
      } else if (e == 'b' || e == 'B') { /* glibc's word boundaries (a GNU extension of ERE) */
        sb_printf(sb, "\\%c", e);
        *word = true;
      } else {
        return kiln_set_error("%s: the escape '\\%c' (RE2 syntax) is not supported by Kiln's POSIX regex engine "
                              "(supported: \\d \\w \\s \\D \\W \\S \\b \\B, \\n \\t \\r \\f \\v and escaped "
                              "punctuation)", fname, e);
      }
      i += 2;
      continue;
    }
    if (c == '[') { /* a bracket expression: escapes become literal members */
      size_t j = i + 1;
      StrBuf b = {0};
      bool neg = p[j] == '^', dash = false, close = false;
      if (neg) j++;
      if (p[j] == ']') { close = true; j++; }
      while (p[j] && p[j] != ']') {
        if (p[j] == '[' && p[j + 1] == ':') {
          const char *end = strstr(p + j, ":]");
          if (!end) { sb_free(&b); return kiln_set_error("%s: an unterminated [: in the pattern", fname); }
          if (!strncmp(p + j, "[:word:]", 8) || !strncmp(p + j, "[:ascii:]", 9)) {
            sb_free(&b);
            return kiln_set_error("%s: the class %.*s is not supported", fname, (int)(end + 2 - (p + j)), p + j);
          }
          sb_printf(&b, "%.*s", (int)(end + 2 - (p + j)), p + j);
          j = (size_t)(end + 2 - p);
          continue;
        }
        if (p[j] == '\\') {
          char e = p[j + 1];
          const char *body = class_body(e);
          if (body) sb_puts(&b, body);
          else if (e == '-') dash = true;
          else if (e == ']') close = true;
          else if (e == 'n' || e == 't' || e == 'r' || e == 'f') sb_putc(&b, e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : '\f');
          else if (e && ispunct((unsigned char)e)) sb_putc(&b, e);
          else {
            sb_free(&b);
            return kiln_set_error("%s: the escape '\\%c' inside [...] is not supported by Kiln's POSIX regex engine "
                                  "(supported there: \\d \\w \\s, \\n \\t \\r \\f, escaped punctuation)", fname, e ? e : ' ');
          }
          j += 2;
          continue;
        }
        sb_putc(&b, p[j++]);
      }
      if (p[j] != ']') { sb_free(&b); return kiln_set_error("%s: an unterminated [ in the pattern", fname); }
      /* POSIX: ']' first, '-' last, '^' not first */
      const char *body = b.data ? b.data : "";
      if (!*body && !close && !dash) {
        sb_free(&b);
        return kiln_set_error("%s: an empty [] in the pattern", fname);
      }
      if (body[0] == '^') {
        sb_printf(sb, "[%s%s%s^%s]", neg ? "^" : "", close ? "]" : "", body + 1, dash ? "-" : "");
      } else {
        sb_printf(sb, "[%s%s%s%s]", neg ? "^" : "", close ? "]" : "", body, dash ? "-" : "");
      }
      sb_free(&b);
      i = j + 1;
      continue;
    }
    if (c == '(') {
      if (p[i + 1] == '?')
        return kiln_set_error("%s: '(?' groups and flags (RE2 syntax) are not supported by Kiln's POSIX regex engine",
                              fname);
      depth++;
    }
    if (c == ')') depth--;
    if ((c == '*' || c == '+' || c == '?' || c == '}') && (p[i + 1] == '?' || p[i + 1] == '+'))
      return kiln_set_error("%s: non-greedy or possessive quantifiers ('%c%c') are not supported by Kiln's POSIX regex "
                            "engine", fname, c, p[i + 1]);
    sb_putc(sb, c);
    i++;
  }
  (void)depth;
  sb_puts(sb, ")$");
  return 0;
}

/* Compile RE2 pattern pat for full matches (under C.UTF-8, which the
 * caller must have made current for regexec too); -1 + error. */
static int regex_compile(const char *fname, const char *pat, regex_t *re, bool *word) {
  StrBuf sb = {0};
  int rc = re2_to_posix(pat, &sb, fname, word);
  if (!rc && !utf8_locale()) rc = kiln_set_error("%s: this system has no C.UTF-8 locale, which Kiln's regex engine needs", fname);
  if (!rc) {
    locale_t old = uselocale(utf8_locale());
    int e = regcomp(re, sb.data, REG_EXTENDED | REG_NOSUB);
    uselocale(old);
    if (e) {
      char msg[200];
      regerror(e, re, msg, sizeof msg);
      rc = kiln_set_error("%s: pattern '%s': %s", fname, pat, msg);
    }
  }
  sb_free(&sb);
  return rc;
}

static bool is_ascii(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s & 0x80) return false;
  return true;
}

static int f_regex(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  HostCall h;
  int rc = host_begin(&h, "runtime.strings.regex_full_match", args, codes, nargs, 2);
  if (!rc) rc = check_dtype(&h, 0, STR, "X") || check_dtype(&h, 1, BOOL, "Y") || check_compact(&h);
  const char *pat = rc ? "" : attr_s(&h, "pattern", NULL);
  if (!rc && !pat) rc = kiln_set_error("%s: no pattern", h.fname);
  regex_t re;
  bool word = false;
  if (!rc) rc = regex_compile(h.fname, pat, &re, &word);
  if (rc) return host_end(&h, -1);
  int64_t n = numel(h.t[0]->ndim, h.t[0]->shape);
  uint8_t *o = (uint8_t *)h.t[1]->data + h.t[1]->byte_offset;
  locale_t old = uselocale(utf8_locale());
  for (int64_t i = 0; i < n && !rc; i++) {
    const char *s = sget(h.t[0], i);
    if (word && !is_ascii(s))
      rc = kiln_set_error("%s: element %lld is not ASCII and the pattern has \\b or \\B, whose word characters are "
                          "ASCII in RE2 but the locale's in Kiln's POSIX engine: not supported", h.fname, (long long)i);
    else
      o[i] = regexec(&re, s, 0, NULL, 0) == 0;
  }
  uselocale(old);
  regfree(&re);
  return host_end(&h, rc ? -1 : 0);
}

/* runtime.strings.regex_check(str pattern): 0, or an error saying why Kiln's
 * engine does not take the pattern (the importer asks at compile time). */
static int f_regex_check(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  const char *fname = "runtime.strings.regex_check";
  if (kiln_check_argc(fname, nargs, 1, 1, "pattern")) return -1;
  if (codes[0] != KILN_STR) return kiln_arg_error(fname, 0, "pattern", "str", codes[0], NULL);
  regex_t re;
  bool word;
  if (regex_compile("RegexFullMatch", args[0].v_str, &re, &word)) return -1;
  regfree(&re);
  return 0;
}

/* ---- numbers to and from text (Cast, LabelEncoder) ---- */

/* NumPy's str() of a float (as x.astype(np.str_) writes it): the shortest
 * digits that read back as the same value of its width, positional for
 * 1e-4 <= |x| < 1e16 (with ".0" when integral), else scientific with a
 * two-digit exponent at least. */
static void format_float(double v, int bits, char *buf, size_t size) {
  if (isnan(v)) { snprintf(buf, size, "nan"); return; }
  if (isinf(v)) { snprintf(buf, size, v < 0 ? "-inf" : "inf"); return; }
  int prec;
  char tmp[64];
  for (prec = 1; prec < 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    double back = strtod(tmp, NULL);
    if (bits == 32 ? (float)back == (float)v : bits == 16 ? (_Float16)back == (_Float16)v : back == v) break;
  }
  snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
  /* tmp: [-]d.ddde[+-]XX */
  char *e = strchr(tmp, 'e');
  int exp10 = atoi(e + 1);
  char digits[40];
  size_t nd = 0;
  for (char *q = tmp; q < e; q++)
    if (isdigit((unsigned char)*q)) digits[nd++] = *q;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  const char *sign = v < 0 || (v == 0 && signbit(v)) ? "-" : "";
  double a = fabs(v);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    StrBuf sb = {0};
    sb_puts(&sb, sign);
    if (a == 0) sb_puts(&sb, "0.0");
    else if (exp10 >= 0) {
      for (int k = 0; k <= exp10; k++) sb_putc(&sb, k < (int)nd ? digits[k] : '0');
      sb_putc(&sb, '.');
      if ((int)nd > exp10 + 1) sb_puts(&sb, digits + exp10 + 1);
      else sb_putc(&sb, '0');
    } else {
      sb_puts(&sb, "0.");
      for (int k = 0; k < -exp10 - 1; k++) sb_putc(&sb, '0');
      sb_puts(&sb, digits);
    }
    snprintf(buf, size, "%s", sb.data);
    sb_free(&sb);
  } else {
    snprintf(buf, size, "%s%c%s%s%se%c%02d", sign, digits[0], nd > 1 ? "." : "", nd > 1 ? digits + 1 : "", "",
             exp10 < 0 ? '-' : '+', abs(exp10));
  }
}

/* Element i of a numeric tensor as a double or an int64. */
static int is_float(DLDataType d) { return d.code == kDLFloat; }
static double get_f(const DLTensor *t, int64_t i) {
  const char *p = (const char *)t->data + t->byte_offset;
  switch (t->dtype.bits) {
  case 16: return (double)((const _Float16 *)p)[i];
  case 32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}
static int64_t get_i(const DLTensor *t, int64_t i) {
  const char *p = (const char *)t->data + t->byte_offset;
  bool u = t->dtype.code == kDLUInt;
  switch (t->dtype.bits) {
  case 1:
  case 8: return u ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
  case 16: return u ? ((const uint16_t *)p)[i] : ((const int16_t *)p)[i];
  case 32: return u ? (int64_t)((const uint32_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
  default: return ((const int64_t *)p)[i];
  }
}
static void set_f(DLTensor *t, int64_t i, double v) {
  char *p = (char *)t->data + t->byte_offset;
  switch (t->dtype.bits) {
  case 16: ((_Float16 *)p)[i] = (_Float16)v; break;
  case 32: ((float *)p)[i] = (float)v; break;
  default: ((double *)p)[i] = v; break;
  }
}
static void set_i(DLTensor *t, int64_t i, int64_t v) {
  char *p = (char *)t->data + t->byte_offset;
  switch (t->dtype.bits) {
  case 1:
  case 8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case 16: ((uint16_t *)p)[i] = (uint16_t)v; break;
  case 32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  default: ((int64_t *)p)[i] = v; break;
  }
}

static bool numeric(DLDataType d) {
  return d.lanes == 1 && ((d.code == kDLFloat && (d.bits == 16 || d.bits == 32 || d.bits == 64)) ||
                          ((d.code == kDLInt || d.code == kDLUInt) && (d.bits == 1 || d.bits == 8 || d.bits == 16 ||
                                                                        d.bits == 32 || d.bits == 64)));
}

/* Element i of t as text, NumPy's way (bool: True/False). */
static const char *num_to_text(HostCall *h, const DLTensor *t, int64_t i) {
  char buf[64];
  DLDataType d = t->dtype;
  if (d.code == kDLUInt && d.bits == 1) snprintf(buf, sizeof buf, "%s", get_i(t, i) ? "True" : "False");
  else if (is_float(d)) format_float(get_f(t, i), d.bits, buf, sizeof buf);
  else if (d.code == kDLUInt && d.bits == 64) snprintf(buf, sizeof buf, "%llu", (unsigned long long)get_i(t, i));
  else snprintf(buf, sizeof buf, "%lld", (long long)get_i(t, i));
  return heap_str(h, buf, strlen(buf));
}

/* Text s into element i of numeric t: floats as strtod reads them (NaN,
 * INF, +INF, -INF included), integers in decimal; anything else an error. */
static int text_to_num(HostCall *h, const char *s, DLTensor *t, int64_t i) {
  char *end;
  errno = 0;
  if (is_float(t->dtype)) {
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (end == s || *end) return kiln_set_error("%s: element %lld ('%.40s') is not a number", h->fname, (long long)i, s);
    set_f(t, i, v);
    return 0;
  }
  if (t->dtype.code == kDLUInt && t->dtype.bits == 1) {
    if (!strcmp(s, "True") || !strcmp(s, "true") || !strcmp(s, "1")) set_i(t, i, 1);
    else if (!strcmp(s, "False") || !strcmp(s, "false") || !strcmp(s, "0")) set_i(t, i, 0);
    else return kiln_set_error("%s: element %lld ('%.40s') is not a boolean", h->fname, (long long)i, s);
    return 0;
  }
  long long v = strtoll(s, &end, 10);
  while (isspace((unsigned char)*end)) end++;
  if (end == s || *end || errno == ERANGE)
    return kiln_set_error("%s: element %lld ('%.40s') is not an integer of 64 bits", h->fname, (long long)i, s);
  set_i(t, i, v);
  return 0;
}

static int f_cast(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  HostCall h;
  int rc = host_begin(&h, "runtime.strings.cast", args, codes, nargs, 2) || check_compact(&h);
  DLTensor *x = rc ? NULL : h.t[0], *y = rc ? NULL : h.t[1];
  bool from = !rc && kiln_dtype_is_string(x->dtype), to = !rc && kiln_dtype_is_string(y->dtype);
  if (!rc && (from == to || !numeric(from ? y->dtype : x->dtype)))
    rc = kiln_set_error("%s: casts between a string tensor and a number tensor only", h.fname);
  int64_t n = rc ? 0 : numel(x->ndim, x->shape);
  if (!rc && numel(y->ndim, y->shape) != n) rc = kiln_set_error("%s: the output's size differs from the input's", h.fname);
  for (int64_t i = 0; i < n && !rc; i++) {
    if (to) sv(y)[i] = num_to_text(&h, x, i);
    else rc = text_to_num(&h, sget(x, i), y, i);
  }
  return host_end(&h, rc ? -1 : 0);
}

/* ---- LabelEncoder: keys and values (strings, or numbers as text) ---- */

typedef struct LabelMap {
  int n;
  const char **skeys; /* string keys */
  double *fkeys;      /* float keys */
  int64_t *ikeys;     /* integer keys */
  const cJSON *values;
} LabelMap;

static int f_label(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  HostCall h;
  int rc = host_begin(&h, "runtime.strings.label_encode", args, codes, nargs, 2) || check_compact(&h);
  DLTensor *x = rc ? NULL : h.t[0], *y = rc ? NULL : h.t[1];
  const cJSON *keys = rc ? NULL : cJSON_GetObjectItemCaseSensitive(h.attrs, "keys");
  const cJSON *vals = rc ? NULL : cJSON_GetObjectItemCaseSensitive(h.attrs, "values");
  const cJSON *def = rc ? NULL : cJSON_GetObjectItemCaseSensitive(h.attrs, "default");
  if (!rc && (!cJSON_IsArray(keys) || !cJSON_IsArray(vals) || !cJSON_IsString(def) ||
              cJSON_GetArraySize(keys) != cJSON_GetArraySize(vals)))
    rc = kiln_set_error("%s: the attributes need keys and values (lists of one length) and a default", h.fname);
  bool xs = !rc && kiln_dtype_is_string(x->dtype), ys = !rc && kiln_dtype_is_string(y->dtype);
  if (!rc && ((!xs && !numeric(x->dtype)) || (!ys && !numeric(y->dtype))))
    rc = kiln_set_error("%s: keys and values must be strings or numbers", h.fname);
  int nk = rc ? 0 : cJSON_GetArraySize(keys);
  /* the keys in x's type, parsed once */
  const char **sk = xcalloc((size_t)nk + 1, sizeof *sk);
  double *fk = xcalloc((size_t)nk + 1, sizeof *fk);
  int64_t *ik = xcalloc((size_t)nk + 1, sizeof *ik);
  const cJSON *k = keys ? keys->child : NULL;
  for (int j = 0; j < nk && !rc; j++, k = k->next) {
    if (!cJSON_IsString(k)) rc = kiln_set_error("%s: key %d is not text", h.fname, j);
    else if (xs) sk[j] = k->valuestring;
    else if (is_float(x->dtype)) fk[j] = strtod(k->valuestring, NULL);
    else ik[j] = strtoll(k->valuestring, NULL, 10);
  }
  int64_t n = rc ? 0 : numel(x->ndim, x->shape);
  if (!rc && numel(y->ndim, y->shape) != n) rc = kiln_set_error("%s: the output's size differs from the input's", h.fname);
  /* a value (text) into y[i] */
  for (int64_t i = 0; i < n && !rc; i++) {
    int hit = -1;
    if (xs) {
      const char *s = sget(x, i);
      for (int j = 0; j < nk && hit < 0; j++)
        if (!strcmp(s, sk[j])) hit = j;
    } else if (is_float(x->dtype)) {
      double v = get_f(x, i);
      for (int j = 0; j < nk && hit < 0; j++)
        if (v == fk[j] || (isnan(v) && isnan(fk[j]))) hit = j;
    } else {
      int64_t v = get_i(x, i);
      for (int j = 0; j < nk && hit < 0; j++)
        if (v == ik[j]) hit = j;
    }
    const char *text = hit < 0 ? def->valuestring : cJSON_GetArrayItem(vals, hit)->valuestring;
    if (!text) rc = kiln_set_error("%s: value %d is not text", h.fname, hit);
    else if (ys) sv(y)[i] = heap_str(&h, text, strlen(text));
    else rc = text_to_num(&h, text, y, i);
  }
  free(sk);
  free(fk);
  free(ik);
  return host_end(&h, rc ? -1 : 0);
}

/* ---- StringSplit ---- */

/* The bytes of the whitespace character at p (Python's str.isspace, which
 * ONNX's reference splits on: ASCII \t-\r, \x1c-\x1f and space, and the
 * Unicode spaces in UTF-8), or 0. */
static int ws_len(const char *p) {
  const unsigned char *u = (const unsigned char *)p;
  if (u[0] == ' ' || (u[0] >= '\t' && u[0] <= '\r') || (u[0] >= 0x1c && u[0] <= 0x1f)) return 1;
  if (u[0] == 0xC2 && (u[1] == 0x85 || u[1] == 0xA0)) return 2;
  if (u[0] == 0xE1 && u[1] == 0x9A && u[2] == 0x80) return 3;                     /* U+1680 */
  if (u[0] == 0xE2 && u[1] == 0x80 && ((u[2] >= 0x80 && u[2] <= 0x8A) || u[2] == 0xA8 || u[2] == 0xA9 || u[2] == 0xAF))
    return 3;                                                                     /* U+2000-200A, 2028, 2029, 202F */
  if (u[0] == 0xE2 && u[1] == 0x81 && u[2] == 0x9F) return 3;                     /* U+205F */
  if (u[0] == 0xE3 && u[1] == 0x80 && u[2] == 0x80) return 3;                     /* U+3000 */
  return 0;
}

/* One string's pieces, as Python's str.split(sep, maxsplit) makes them
 * (ONNX's reference): with a delimiter every occurrence splits, empty
 * pieces kept; without (ws), runs of whitespace split and none is kept
 * at either end; after max splits (max < 0: no limit) the rest is one
 * piece (in ws mode its leading whitespace dropped). */
typedef struct Splitter {
  const char *p, *sep;
  size_t seplen;
  int64_t max, n; /* n: the pieces given so far */
  bool ws, done;
} Splitter;

static bool split_next(Splitter *sp, const char **b, size_t *len) {
  if (sp->done) return false;
  const char *q;
  if (sp->ws) {
    while (ws_len(sp->p)) sp->p += ws_len(sp->p);
    if (!*sp->p) return sp->done = true, false;
    q = sp->p;
    if (sp->max >= 0 && sp->n == sp->max) q += strlen(q);
    else
      while (*q && !ws_len(q)) q++;
    *b = sp->p;
    *len = (size_t)(q - sp->p);
    sp->p = q;
  } else {
    q = sp->max >= 0 && sp->n == sp->max ? NULL : strstr(sp->p, sp->sep);
    *b = sp->p;
    *len = q ? (size_t)(q - sp->p) : strlen(sp->p);
    if (q) sp->p = q + sp->seplen;
    else sp->done = true;
  }
  sp->n++;
  return true;
}

static void split_start(Splitter *sp, const char *s, const char *sep, int64_t max) {
  memset(sp, 0, sizeof *sp);
  sp->p = s;
  sp->sep = sep;
  sp->seplen = strlen(sep);
  sp->ws = !sp->seplen;
  sp->max = max;
}

/* StringSplit.  runtime.strings.split(x, y, attrs, heap[, reported]):
 * with a place to report (the pieces, y of shape x.shape + [M]) it
 * counts every string's pieces first and reports the most; when that is
 * more than y's last dimension holds it writes nothing (the executor
 * grows y and calls again: docs/symbolic_shapes.md section 4c), else it
 * writes each string's pieces padded with "".  Without one, y (int64, of
 * x's shape) gets each string's count of pieces. */
static int f_split(KilnValue *args, int *codes, int nargs, KilnValue *ret, int *ret_code, void *res) {
  (void)ret, (void)ret_code, (void)res;
  HostCall h;
  int rc = host_begin_r(&h, "runtime.strings.split", args, codes, nargs, 2, true);
  bool pieces = !rc && h.reported;
  if (!rc) rc = check_dtype(&h, 0, STR, "x") || check_compact(&h);
  if (!rc) rc = check_dtype(&h, 1, pieces ? STR : (DLDataType){kDLInt, 64, 1}, pieces ? "pieces" : "counts");
  const char *sep = rc ? "" : attr_s(&h, "delimiter", "");
  const cJSON *mx = rc ? NULL : cJSON_GetObjectItemCaseSensitive(h.attrs, "maxsplit");
  int64_t max = cJSON_IsNumber(mx) && mx->valuedouble >= 0 ? (int64_t)mx->valuedouble : -1;
  const DLTensor *x = rc ? NULL : h.t[0], *y = rc ? NULL : h.t[1];
  int64_t n = rc ? 0 : numel(x->ndim, x->shape);
  if (!rc && (y->ndim != x->ndim + pieces || memcmp(y->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim)))
    rc = kiln_set_error("%s: the output's shape is not the input's%s", h.fname, pieces ? " and one more dimension" : "");
  int64_t most = 0;
  for (int64_t i = 0; i < n && !rc; i++) {
    Splitter sp;
    const char *b;
    size_t len;
    split_start(&sp, sget(x, i), sep, max);
    while (split_next(&sp, &b, &len)) {}
    if (!pieces) ((int64_t *)((char *)y->data + y->byte_offset))[i] = sp.n;
    if (sp.n > most) most = sp.n;
  }
  if (!rc && pieces) {
    int64_t room = y->shape[x->ndim];
    *h.reported = most;
    for (int64_t i = 0; i < n && most <= room; i++) {
      Splitter sp;
      const char *b;
      size_t len;
      const char **row = sv(y) + i * most; /* compact at the real size */
      split_start(&sp, sget(x, i), sep, max);
      while (split_next(&sp, &b, &len)) row[sp.n - 1] = heap_str(&h, b, len);
      for (int64_t k = sp.n; k < most; k++) row[k] = "";
    }
  }
  return host_end(&h, rc ? -1 : 0);
}

const KilnBuiltin kiln_string_builtins[] = {
    {"runtime.strings.concat", f_concat},
    {"runtime.strings.equal", f_equal},
    {"runtime.strings.normalize", f_normalize},
    {"runtime.strings.regex_full_match", f_regex},
    {"runtime.strings.regex_check", f_regex_check},
    {"runtime.strings.cast", f_cast},
    {"runtime.strings.label_encode", f_label},
    {"runtime.strings.split", f_split},
    {NULL, NULL},
};
