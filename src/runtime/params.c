/*
 * params.c - the params blob: named arrays in TVM's byte format.
 *
 * A model's weights travel as one blob, written by the graph build and
 * read by the graph executor, byte for byte what TVM's SaveParams /
 * LoadParams use (DESIGN.md §3), little-endian whatever the host:
 *
 *   u64 0xF7E58D4F05049CB7   list magic
 *   u64 0                    reserved
 *   u64 N, then N times: u64 length, the name's bytes (no NUL)
 *   u64 N                    the array count (must equal the name count)
 *   N times:
 *     u64 0xDD5E40F096B4A13F array magic
 *     u64 0                  reserved
 *     i32 device_type, i32 device_id      (always cpu, 0: TVM saves CPU arrays)
 *     i32 ndim
 *     u8 code, u8 bits, u16 lanes         the DLDataType
 *     i64 shape[ndim]
 *     i64 byte size                       product(shape) * element bytes
 *     the data, compact row-major
 *
 * Writing goes through a StrBuf; reading through a cursor that checks every
 * field against the bytes left before it touches them, so a truncated or
 * corrupt blob is an error naming the array, the field and what was
 * expected, never a read past the end.  Loaded arrays are new Kiln arrays
 * on the CPU.
 *
 * One divergence: TVM sizes an element as (bits + 7) / 8 and ignores lanes;
 * Kiln uses (bits * lanes + 7) / 8, the same for every scalar dtype (the
 * only kind TVM's graph build writes).
 *
 * Exports: kiln_params_save, kiln_params_load, kiln_params_free, kiln_free.
 */
#include "runtime_internal.h"

#include <stdlib.h>
#include <string.h>

#define LIST_MAGIC UINT64_C(0xF7E58D4F05049CB7)
#define ARRAY_MAGIC UINT64_C(0xDD5E40F096B4A13F)
#define MAX_NDIM 64 /* a sanity bound: more dimensions means a corrupt header */

/* ---- writing ---- */

static void put_u64(StrBuf *sb, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  sb_putn(sb, (const char *)b, 8);
}

static void put_u32(StrBuf *sb, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
  sb_putn(sb, (const char *)b, 4);
}

static void put_u16(StrBuf *sb, uint16_t v) {
  unsigned char b[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  sb_putn(sb, (const char *)b, 2);
}

static int is_little_endian(void) {
  uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

/* Element data in little-endian order: a byte swap per element on a
 * big-endian host. */
static void put_data(StrBuf *sb, const unsigned char *data, size_t nbytes, DLDataType t) {
  size_t unit = t.bits >= 8 ? (size_t)t.bits / 8 : 1;
  if (is_little_endian() || unit == 1) {
    sb_putn(sb, (const char *)data, nbytes);
    return;
  }
  for (size_t off = 0; off + unit <= nbytes; off += unit)
    for (size_t k = unit; k-- > 0;) sb_putc(sb, (char)data[off + k]);
}

int kiln_params_check_arrays(const char *fname, int n, const char *const *names,
                             DLTensor *const *arrays) {
  if (n < 0) return kiln_set_error("%s: the count is negative (%d)", fname, n);
  if (n > 0 && (!names || !arrays)) return kiln_set_error("%s: names or arrays is NULL", fname);
  PtrMap seen = {.strkeys = 1};
  for (int i = 0; i < n; i++) {
    const DLTensor *t = arrays[i];
    if (!names[i]) {
      pm_free(&seen);
      return kiln_set_error("%s: array %d has no name", fname, i);
    }
    if (pm_has(&seen, names[i])) {
      int first = (int)(intptr_t)pm_get(&seen, names[i]) - 1;
      pm_free(&seen);
      return kiln_set_error("%s: name '%s' is given twice (arrays %d and %d)", fname, names[i],
                            first, i);
    }
    pm_put(&seen, names[i], (void *)(intptr_t)(i + 1));
    if (!t) {
      pm_free(&seen);
      return kiln_set_error("%s: array %d ('%s') is NULL", fname, i, names[i]);
    }
    if (t->ndim < 0 || t->ndim > MAX_NDIM || (t->ndim > 0 && !t->shape)) {
      pm_free(&seen);
      return kiln_set_error("%s: array %d ('%s') has ndim %d with shape %s", fname, i,
                            names[i], t->ndim, t->shape ? "set" : "NULL");
    }
    if (kiln_dtype_check(t->dtype)) {
      pm_free(&seen);
      return kiln_error_context("%s: array %d ('%s')", fname, i, names[i]);
    }
  }
  pm_free(&seen);
  return 0;
}

int kiln_params_save(int n, const char *const *names, DLTensor *const *arrays,
                     void **bytes, size_t *size) {
  if (!bytes || !size) return kiln_set_error("params_save: bytes or size is NULL");
  *bytes = NULL;
  *size = 0;
  if (kiln_params_check_arrays("params_save", n, names, arrays)) return -1;

  StrBuf sb = {0};
  put_u64(&sb, LIST_MAGIC);
  put_u64(&sb, 0);
  put_u64(&sb, (uint64_t)n);
  for (int i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    put_u64(&sb, (uint64_t)len);
    sb_putn(&sb, names[i], len);
  }
  put_u64(&sb, (uint64_t)n);
  void *tmp = NULL;
  size_t tmp_cap = 0;
  for (int i = 0; i < n; i++) {
    const DLTensor *t = arrays[i];
    size_t nbytes = kiln_array_nbytes(t);
    put_u64(&sb, ARRAY_MAGIC);
    put_u64(&sb, 0);
    put_u32(&sb, (uint32_t)kDLCPU); /* as TVM: params are always saved as CPU arrays */
    put_u32(&sb, 0);
    put_u32(&sb, (uint32_t)t->ndim);
    sb_putc(&sb, (char)t->dtype.code);
    sb_putc(&sb, (char)t->dtype.bits);
    put_u16(&sb, t->dtype.lanes);
    for (int d = 0; d < t->ndim; d++) put_u64(&sb, (uint64_t)t->shape[d]);
    put_u64(&sb, (uint64_t)nbytes);
    if (nbytes > tmp_cap) {
      free(tmp);
      tmp = xmalloc(nbytes);
      tmp_cap = nbytes;
    }
    /* through a compact CPU copy: the array may be strided or on a device */
    if (nbytes && kiln_array_copy_to_bytes(t, tmp, nbytes)) {
      free(tmp);
      sb_free(&sb);
      return kiln_error_context("params_save: array %d ('%s')", i, names[i]);
    }
    put_data(&sb, tmp, nbytes, t->dtype);
  }
  free(tmp);
  *size = sb.len;
  *bytes = sb_steal(&sb);
  return 0;
}

/* ---- reading ---- */

typedef struct Cursor {
  const unsigned char *p; /* the blob */
  size_t size, pos;       /* its length and the read position */
  char where[160];        /* what is being read, for messages: "array 2 ('w')" */
} Cursor;

/* Check that `n` bytes of `field` remain. */
static int need(Cursor *c, size_t n, const char *field) {
  if (c->size - c->pos >= n) return 0;
  return kiln_set_error("params blob is truncated: %s%s%s needs %zu bytes at offset %zu, only %zu "
                        "remain (the blob has %zu bytes)",
                        c->where, c->where[0] ? ": " : "", field, n, c->pos, c->size - c->pos,
                        c->size);
}

static uint64_t get_le(Cursor *c, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)c->p[c->pos + (size_t)i] << (8 * i);
  c->pos += (size_t)n;
  return v;
}

static int read_u64(Cursor *c, const char *field, uint64_t *v) {
  if (need(c, 8, field)) return -1;
  *v = get_le(c, 8);
  return 0;
}

static int read_u32(Cursor *c, const char *field, uint32_t *v) {
  if (need(c, 4, field)) return -1;
  *v = (uint32_t)get_le(c, 4);
  return 0;
}

static int bad(Cursor *c, const char *fmt, ...) KILN_PRINTF(2, 3);
static int bad(Cursor *c, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_set_error("params blob is corrupt: %s%s%s", c->where, c->where[0] ? ": " : "", msg);
}

static void copy_data(unsigned char *to, const unsigned char *from, size_t nbytes, DLDataType t) {
  size_t unit = t.bits >= 8 ? (size_t)t.bits / 8 : 1;
  if (is_little_endian() || unit == 1) {
    if (nbytes) memcpy(to, from, nbytes);
    return;
  }
  for (size_t off = 0; off + unit <= nbytes; off += unit)
    for (size_t k = 0; k < unit; k++) to[off + k] = from[off + unit - 1 - k];
}

/* One array; the cursor stands at its magic. */
static int read_array(Cursor *c, DLTensor **out) {
  uint64_t magic, reserved, nbytes;
  uint32_t dev_type, dev_id, ndim_u;
  if (read_u64(c, "the array magic", &magic)) return -1;
  if (magic != ARRAY_MAGIC)
    return bad(c, "array magic is 0x%016llX at offset %zu, expected 0x%016llX",
               (unsigned long long)magic, c->pos - 8, (unsigned long long)ARRAY_MAGIC);
  if (read_u64(c, "the reserved word", &reserved) || read_u32(c, "the device type", &dev_type) ||
      read_u32(c, "the device id", &dev_id) || read_u32(c, "ndim", &ndim_u))
    return -1;
  if ((int32_t)dev_type != kDLCPU)
    return bad(c, "device type %d (%s), expected %d (cpu): params blobs hold CPU arrays",
               (int32_t)dev_type, kiln_device_name((int32_t)dev_type), kDLCPU);
  int32_t ndim = (int32_t)ndim_u;
  if (ndim < 0 || ndim > MAX_NDIM) return bad(c, "ndim is %d, expected 0..%d", ndim, MAX_NDIM);
  if (need(c, 4, "the dtype")) return -1;
  DLDataType t;
  t.code = c->p[c->pos];
  t.bits = c->p[c->pos + 1];
  c->pos += 2;
  t.lanes = (uint16_t)get_le(c, 2);
  if (kiln_dtype_check(t)) return bad(c, "%s", kiln_get_error());
  int64_t shape[MAX_NDIM];
  uint64_t elems = 1;
  int overflow = 0;
  for (int d = 0; d < ndim; d++) {
    char field[32];
    uint64_t v;
    snprintf(field, sizeof field, "shape[%d]", d);
    if (read_u64(c, field, &v)) return -1;
    shape[d] = (int64_t)v;
    if (shape[d] < 0) return bad(c, "shape[%d] is %lld, expected >= 0", d, (long long)shape[d]);
    if (v && elems > UINT64_MAX / v) overflow = 1;
    else elems *= v;
  }
  if (read_u64(c, "the byte size", &nbytes)) return -1;
  uint64_t esize = kiln_dtype_bytes(t);
  if (overflow || (esize && elems > UINT64_MAX / esize) || elems * esize != nbytes) {
    StrBuf sb = {0};
    for (int d = 0; d < ndim; d++) sb_printf(&sb, "%s%lld", d ? ", " : "", (long long)shape[d]);
    char dt[48];
    if (overflow || (esize && elems > UINT64_MAX / esize))
      bad(c, "shape (%s) is too large", sb.data ? sb.data : "");
    else
      bad(c, "byte size is %llu, expected %llu for shape (%s) of %s", (unsigned long long)nbytes,
          (unsigned long long)(elems * esize), sb.data ? sb.data : "",
          kiln_dtype_format(t, dt, sizeof dt));
    sb_free(&sb);
    return -1;
  }
  if (nbytes > SIZE_MAX) return bad(c, "byte size %llu does not fit in memory", (unsigned long long)nbytes);
  if (need(c, (size_t)nbytes, "the data")) return -1;
  DLTensor *a;
  if (kiln_array_empty(ndim, shape, t, (DLDevice){kDLCPU, 0}, &a))
    return kiln_error_context("params blob: %s", c->where);
  copy_data((unsigned char *)a->data, c->p + c->pos, (size_t)nbytes, t);
  c->pos += (size_t)nbytes;
  *out = a;
  return 0;
}

/* A name, printable in messages (at most 64 bytes shown). */
static void set_where_array(Cursor *c, uint64_t i, const char *name) {
  snprintf(c->where, sizeof c->where, "array %llu ('%.64s%s')", (unsigned long long)i, name,
           strlen(name) > 64 ? "..." : "");
}

int kiln_params_load(const void *bytes, size_t size, int *n, char ***names_out,
                     DLTensor ***arrays_out) {
  if (!n || !names_out || !arrays_out) return kiln_set_error("params_load: an output is NULL");
  *n = 0;
  *names_out = NULL;
  *arrays_out = NULL;
  if (!bytes && size) return kiln_set_error("params_load: bytes is NULL with size %zu", size);
  Cursor c = {.p = bytes, .size = size};
  uint64_t magic, reserved, nnames, narrays;
  snprintf(c.where, sizeof c.where, "the header");
  if (read_u64(&c, "the list magic", &magic)) return -1;
  if (magic != LIST_MAGIC)
    return bad(&c, "list magic is 0x%016llX, expected 0x%016llX (not a params blob?)",
               (unsigned long long)magic, (unsigned long long)LIST_MAGIC);
  if (read_u64(&c, "the reserved word", &reserved) || read_u64(&c, "the name count", &nnames))
    return -1;
  if (nnames > INT32_MAX) return bad(&c, "name count is %llu", (unsigned long long)nnames);
  /* every name takes at least its 8-byte length */
  if (nnames > (c.size - c.pos) / 8) {
    return kiln_set_error("params blob is truncated: the header: %llu names need at least %llu "
                          "bytes at offset %zu, only %zu remain (the blob has %zu bytes)",
                          (unsigned long long)nnames, (unsigned long long)nnames * 8, c.pos,
                          c.size - c.pos, c.size);
  }
  char **names = xcalloc(nnames ? (size_t)nnames : 1, sizeof *names);
  DLTensor **arrays = xcalloc(nnames ? (size_t)nnames : 1, sizeof *arrays);
  PtrMap seen = {.strkeys = 1};
  int rc = -1;
  for (uint64_t i = 0; i < nnames; i++) {
    uint64_t len;
    snprintf(c.where, sizeof c.where, "name %llu", (unsigned long long)i);
    if (read_u64(&c, "its length", &len)) goto done;
    if (len > c.size - c.pos) {
      need(&c, len > SIZE_MAX ? SIZE_MAX : (size_t)len, "its bytes");
      goto done;
    }
    names[i] = xmalloc((size_t)len + 1);
    memcpy(names[i], c.p + c.pos, (size_t)len);
    names[i][len] = 0;
    c.pos += (size_t)len;
    if (strlen(names[i]) != len) {
      bad(&c, "the name contains a NUL byte");
      goto done;
    }
    if (pm_has(&seen, names[i])) {
      bad(&c, "'%.64s' is already the name of array %d", names[i],
          (int)(intptr_t)pm_get(&seen, names[i]) - 1);
      goto done;
    }
    pm_put(&seen, names[i], (void *)(intptr_t)(i + 1));
  }
  snprintf(c.where, sizeof c.where, "the header");
  if (read_u64(&c, "the array count", &narrays)) goto done;
  if (narrays != nnames) {
    bad(&c, "%llu arrays for %llu names", (unsigned long long)narrays, (unsigned long long)nnames);
    goto done;
  }
  for (uint64_t i = 0; i < narrays; i++) {
    set_where_array(&c, i, names[i]);
    if (read_array(&c, &arrays[i])) goto done;
  }
  c.where[0] = 0;
  if (c.pos != c.size) {
    bad(&c, "%zu bytes follow the last array (offset %zu of %zu)", c.size - c.pos, c.pos, c.size);
    goto done;
  }
  rc = 0;
done:
  pm_free(&seen);
  if (rc) {
    kiln_params_free((int)nnames, names, arrays);
    return -1;
  }
  *n = (int)nnames;
  *names_out = names;
  *arrays_out = arrays;
  return 0;
}

int kiln_params_free(int n, char **names, DLTensor **arrays) {
  for (int i = 0; i < n; i++) {
    if (names) free(names[i]);
    if (arrays) kiln_array_free(arrays[i]);
  }
  free(names);
  free(arrays);
  return 0;
}

int kiln_free(void *p) {
  free(p);
  return 0;
}
