/*
 * npy.c - NumPy .npy and .npz files, read and written by Kiln itself.
 *
 * .npy: magic "\x93NUMPY", version, a header dict ({'descr': '<f4',
 * 'fortran_order': False, 'shape': (1, 3), }) padded so the data starts on
 * a 64-byte boundary, then the data in C order.  .npz: a zip archive of
 * .npy members named KEY.npy, read and written through libzip.
 */
#include "npy.h"

#include <stdlib.h>
#include <string.h>
#include <zip.h>

static int descr_to_dtype(const char *d, DLDataType *t, const char *what) {
  char order = d[0];
  if (order != '<' && order != '|' && order != '=')
    return kiln_set_error("%s: big-endian data ('%s') is not supported", what, d);
  char kind = d[1];
  int size = atoi(d + 2);
  t->lanes = 1;
  if (kind == 'f' && (size == 4 || size == 8 || size == 2)) {
    t->code = kDLFloat;
    t->bits = (uint8_t)(size * 8);
  } else if (kind == 'i' && (size == 1 || size == 2 || size == 4 || size == 8)) {
    t->code = kDLInt;
    t->bits = (uint8_t)(size * 8);
  } else if (kind == 'u' && (size == 1 || size == 2 || size == 4 || size == 8)) {
    t->code = kDLUInt;
    t->bits = (uint8_t)(size * 8);
  } else if (kind == 'b' && size == 1) {
    t->code = kDLUInt;
    t->bits = 1;
  } else
    return kiln_set_error("%s: data type '%s' is not supported", what, d);
  return 0;
}

/* Text arrays are NumPy's fixed-width unicode ('<U8': 8 UTF-32 code
 * units an element, NUL-padded), converted to and from Kiln's string
 * tensors of UTF-8 (docs/strings.md). */
static size_t utf8_encode(uint32_t c, char *o) {
  if (c < 0x80) { o[0] = (char)c; return 1; }
  if (c < 0x800) { o[0] = (char)(0xC0 | (c >> 6)); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
  if (c < 0x10000) {
    o[0] = (char)(0xE0 | (c >> 12)); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (c >> 18)); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

/* UTF-8 s as code points into out (NULL: count only); -1 when s is not UTF-8. */
static int64_t utf8_decode(const char *s, uint32_t *out) {
  int64_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    uint32_t c;
    int k = *p < 0x80 ? 0 : (*p >> 5) == 6 ? 1 : (*p >> 4) == 14 ? 2 : (*p >> 3) == 30 ? 3 : -1;
    if (k < 0) return -1;
    c = k == 0 ? *p : k == 1 ? *p & 0x1F : k == 2 ? *p & 0x0F : *p & 0x07;
    p++;
    for (int j = 0; j < k; j++, p++) {
      if ((*p & 0xC0) != 0x80) return -1;
      c = (c << 6) | (*p & 0x3F);
    }
    if (out) out[n] = c;
    n++;
  }
  return n;
}

/* The bytes ndim extents of elem bytes each take; -1 when that overflows. */
static int shape_bytes(int ndim, const int64_t *shape, size_t elem, uint64_t *out) {
  uint64_t b = elem;
  for (int i = 0; i < ndim; i++)
    if (shape[i] == 0) b = 0;
  for (int i = 0; i < ndim && b; i++)
    if (__builtin_mul_overflow(b, (uint64_t)shape[i], &b)) return -1;
  *out = b;
  return 0;
}

static int load_unicode(const unsigned char *data, size_t avail, int ndim, const int64_t *shape, int width,
                        const char *what, DLTensor **out) {
  uint64_t cnt, need;
  /* the data must hold what the header claims before anything is allocated */
  if (shape_bytes(ndim, shape, 1, &cnt) || shape_bytes(ndim, shape, (size_t)width * 4, &need) || need > avail)
    return kiln_set_error("%s: truncated data (the header's shape and width claim more than the %zu bytes present)",
                          what, avail);
  if (width < 1 && cnt > 0) return kiln_set_error("%s: unicode elements of width %d", what, width);
  int64_t n = (int64_t)cnt;
  char **strs = xcalloc((size_t)n + 1, sizeof(char *));
  for (int64_t i = 0; i < n; i++) {
    char *s = xmalloc((size_t)width * 4 + 1), *o = s;
    for (int j = 0; j < width; j++) {
      const unsigned char *q = data + ((size_t)i * (size_t)width + (size_t)j) * 4;
      uint32_t c = (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) | ((uint32_t)q[3] << 24);
      if (!c) break;
      if (c > 0x10FFFF) {
        for (int64_t k = 0; k <= i; k++) free(k < i ? strs[k] : s);
        free(strs);
        return kiln_set_error("%s: element %lld holds code point %u, which is not Unicode", what, (long long)i, c);
      }
      o += utf8_encode(c, o);
    }
    *o = 0;
    strs[i] = s;
  }
  int rc = kiln_array_from_strings(ndim, shape, (const char *const *)strs, out);
  for (int64_t i = 0; i < n; i++) free(strs[i]);
  free(strs);
  return rc;
}

static const char *dtype_to_descr(DLDataType t) {
  if (t.code == kDLUInt && t.bits == 1) return "|b1";
  static __thread char buf[16];
  char kind = t.code == kDLFloat ? 'f' : t.code == kDLInt ? 'i' : 'u';
  snprintf(buf, sizeof buf, "%c%c%d", t.bits == 8 ? '|' : '<', kind, t.bits / 8);
  return buf;
}

static size_t elem_bytes(DLDataType t) { return t.bits == 1 ? 1 : (size_t)t.bits / 8 * t.lanes; }

int npy_load_bytes(const void *data, size_t n, const char *what, DLTensor **out) {
  const unsigned char *p = data;
  if (n < 10 || memcmp(p, "\x93NUMPY", 6)) return kiln_set_error("%s is not a .npy file (bad magic)", what);
  int major = p[6];
  size_t hlen, off;
  if (major == 1) {
    hlen = (size_t)p[8] | ((size_t)p[9] << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) return kiln_set_error("%s: truncated header", what);
    hlen = (size_t)p[8] | ((size_t)p[9] << 8) | ((size_t)p[10] << 16) | ((size_t)p[11] << 24);
    off = 12;
  } else
    return kiln_set_error("%s: .npy version %d is not supported", what, major);
  if (off + hlen > n) return kiln_set_error("%s: truncated header", what);
  char *h = kstrndup((const char *)p + off, hlen);
  const char *dk = strstr(h, "'descr'"), *fk = strstr(h, "'fortran_order'"), *sk = strstr(h, "'shape'");
  if (!dk || !fk || !sk) return kiln_set_error("%s: malformed header %s", what, h);
  const char *q1 = strchr(dk + 7, '\'');
  const char *q2 = q1 ? strchr(q1 + 1, '\'') : NULL;
  if (!q2) return kiln_set_error("%s: malformed descr in %s", what, h);
  char descr[16];
  snprintf(descr, sizeof descr, "%.*s", (int)(q2 - q1 - 1), q1 + 1);
  if (strstr(fk, "True") && strstr(fk, "True") < sk + 1000 && strstr(fk, "True") < strchr(fk, ','))
    return kiln_set_error("%s: Fortran-ordered arrays are not supported (save with np.ascontiguousarray)", what);
  DLDataType dt;
  int uwidth = -1; /* '<U8': text */
  if ((descr[0] == '<' || descr[0] == '|' || descr[0] == '=') && descr[1] == 'U') uwidth = atoi(descr + 2);
  else if (descr[1] == 'O')
    return kiln_set_error("%s: object arrays are pickled Python objects, which Kiln does not read; save text as "
                          "NumPy unicode (arr.astype(str))", what);
  else if (descr_to_dtype(descr, &dt, what)) return -1;
  const char *lp = strchr(sk, '(');
  const char *rp = lp ? strchr(lp, ')') : NULL;
  if (!rp) return kiln_set_error("%s: malformed shape in %s", what, h);
  int64_t shape[16];
  int ndim = 0;
  for (const char *s = lp + 1; s < rp;) {
    while (s < rp && (*s == ' ' || *s == ',')) s++;
    if (s >= rp) break;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || ndim >= 16) return kiln_set_error("%s: malformed shape in %s", what, h);
    shape[ndim++] = v;
    s = end;
  }
  if (uwidth >= 0) return load_unicode(p + off + hlen, n - off - hlen, ndim, shape, uwidth, what, out);
  /* the data must hold what the header claims before anything is allocated */
  uint64_t need;
  if (shape_bytes(ndim, shape, elem_bytes(dt), &need) || need > n - off - hlen)
    return kiln_set_error("%s: truncated data (the header's shape claims more than the %zu bytes present)", what,
                          n - off - hlen);
  size_t nbytes = (size_t)need;
  DLTensor *a;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(ndim, shape, dt, cpu, &a)) return -1;
  memcpy(a->data, p + off + hlen, nbytes);
  *out = a;
  return 0;
}

int npy_load(const char *path, DLTensor **out) {
  size_t n;
  char *data = kiln_read_file(path, &n);
  if (!data) return -1;
  int rc = npy_load_bytes(data, n, path, out);
  free(data);
  return rc;
}

char *npy_to_bytes(const DLTensor *t, size_t *size) {
  StrBuf h = {0};
  int64_t count = 1, width = 0;
  for (int i = 0; i < t->ndim; i++) count *= t->shape[i];
  bool text = kiln_dtype_is_string(t->dtype);
  const char *const *strs = text ? (const char *const *)((const char *)t->data + t->byte_offset) : NULL;
  for (int64_t i = 0; text && i < count; i++) {
    int64_t w = utf8_decode(strs[i] ? strs[i] : "", NULL);
    if (w > width) width = w; /* invalid UTF-8 (-1) is written as an empty string */
  }
  if (text && width == 0) width = 1;
  if (text) sb_printf(&h, "{'descr': '<U%lld', 'fortran_order': False, 'shape': (", (long long)width);
  else sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", dtype_to_descr(t->dtype));
  for (int i = 0; i < t->ndim; i++) sb_printf(&h, "%lld%s", (long long)t->shape[i], t->ndim == 1 || i < t->ndim - 1 ? ", " : "");
  sb_puts(&h, "), }");
  while ((10 + h.len + 1) % 64) sb_putc(&h, ' ');
  sb_putc(&h, '\n');
  size_t nbytes = text ? (size_t)width * 4 : elem_bytes(t->dtype);
  for (int i = 0; i < t->ndim; i++) nbytes *= (size_t)t->shape[i];
  size_t total = 10 + h.len + nbytes;
  char *buf = xmalloc(total);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(h.len & 0xff);
  buf[9] = (char)(h.len >> 8);
  memcpy(buf + 10, h.data, h.len);
  if (text) {
    uint32_t *cp = xcalloc((size_t)width + 1, sizeof *cp);
    for (int64_t i = 0; i < count; i++) {
      memset(cp, 0, ((size_t)width + 1) * sizeof *cp);
      if (utf8_decode(strs[i] ? strs[i] : "", NULL) >= 0) utf8_decode(strs[i] ? strs[i] : "", cp);
      for (int64_t j = 0; j < width; j++)
        for (int b = 0; b < 4; b++) buf[10 + h.len + ((size_t)i * (size_t)width + (size_t)j) * 4 + (size_t)b] = (char)(cp[j] >> (8 * b));
    }
    free(cp);
  } else {
    memcpy(buf + 10 + h.len, (const char *)t->data + t->byte_offset, nbytes);
  }
  sb_free(&h);
  *size = total;
  return buf;
}

int npy_save(const char *path, const DLTensor *t) {
  size_t n;
  char *b = npy_to_bytes(t, &n);
  int rc = kiln_write_file(path, b, n);
  free(b);
  return rc;
}

int npz_load(const char *path, int *count, NamedArray **out) {
  int err = 0;
  zip_t *z = zip_open(path, ZIP_RDONLY, &err);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    int rc = kiln_set_error("cannot open '%s' as .npz: %s", path, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return rc;
  }
  zip_int64_t n = zip_get_num_entries(z, 0);
  NamedArray *arr = xcalloc((size_t)n + 1, sizeof(NamedArray));
  int k = 0, rc = 0;
  for (zip_int64_t i = 0; i < n && !rc; i++) {
    const char *name = zip_get_name(z, (zip_uint64_t)i, 0);
    zip_stat_t st;
    if (!name || zip_stat_index(z, (zip_uint64_t)i, 0, &st)) {
      rc = kiln_set_error("'%s': unreadable member %lld", path, (long long)i);
      break;
    }
    /* read what the member holds, not what its header claims (a header
     * can claim terabytes): the buffer grows with the data actually read */
    zip_file_t *f = (st.valid & ZIP_STAT_SIZE) ? zip_fopen_index(z, (zip_uint64_t)i, 0) : NULL;
    size_t cap = 0, len = 0;
    char *buf = NULL;
    zip_int64_t got = f ? 1 : -1;
    while (f && len < st.size) {
      if (len == cap) {
        size_t want = cap ? cap * 2 : 65536;
        if (want > st.size) want = (size_t)st.size;
        char *nb = realloc(buf, want + 1);
        if (!nb) {
          got = -1;
          break;
        }
        buf = nb;
        cap = want;
      }
      got = zip_fread(f, buf + len, cap - len);
      if (got <= 0) break;
      len += (size_t)got;
    }
    if (f) zip_fclose(f);
    if (got < 0 || len != st.size) {
      free(buf);
      rc = kiln_set_error("'%s': cannot read member '%s' (%llu of the %llu bytes its header gives)", path, name,
                          (unsigned long long)len, (unsigned long long)st.size);
      break;
    }
    if (!buf) buf = xmalloc(1);
    char *key = xstrdup(name);
    size_t kl = strlen(key);
    if (kl > 4 && !strcmp(key + kl - 4, ".npy")) key[kl - 4] = 0;
    char what[512];
    snprintf(what, sizeof what, "%s:%s", path, name);
    rc = npy_load_bytes(buf, st.size, what, &arr[k].array);
    free(buf);
    arr[k].name = key;
    if (!rc) k++;
    else free(key);
  }
  zip_discard(z);
  if (rc) {
    npz_free(k, arr);
    return -1;
  }
  *count = k;
  *out = arr;
  return 0;
}

int npz_save(const char *path, int count, const NamedArray *arrays) {
  int err = 0;
  zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) return kiln_set_error("cannot create '%s'", path);
  for (int i = 0; i < count; i++) {
    size_t n;
    char *b = npy_to_bytes(arrays[i].array, &n);
    zip_source_t *src = zip_source_buffer(z, b, n, 1); /* libzip frees b */
    char member[512];
    snprintf(member, sizeof member, "%s.npy", arrays[i].name);
    if (!src || zip_file_add(z, member, src, ZIP_FL_OVERWRITE) < 0) {
      if (src) zip_source_free(src);
      int rc = kiln_set_error("cannot write '%s' into '%s': %s", member, path, zip_strerror(z));
      zip_discard(z);
      return rc;
    }
  }
  if (zip_close(z) < 0) {
    int rc = kiln_set_error("cannot write '%s': %s", path, zip_strerror(z));
    zip_discard(z);
    return rc;
  }
  return 0;
}

void npz_free(int count, NamedArray *arrays) {
  if (!arrays) return;
  for (int i = 0; i < count; i++) {
    free(arrays[i].name);
    kiln_array_free(arrays[i].array);
  }
  free(arrays);
}
