/*
 * params_embedded.c - the params as a compiled module embeds them: an index
 * and the raw data, so the executor reads the weights where the artifact
 * is mapped instead of copying them out of a TVM params blob.
 *
 * TVM's params blob (params.c) puts each array's bytes right after its
 * variable-length header, so no array is aligned and every loader copies.
 * Inside an artifact Kiln keeps two blobs instead (docs/formats.md):
 *
 *   param_index  little-endian:
 *     u64 magic "KILNPIX1", u64 data size, u64 chunk size (1 MiB),
 *     u64 chunk count C, C x u64 XXH64 of each chunk of the data,
 *     u64 array count N, then per array:
 *       u64 name length, the name's bytes,
 *       i32 ndim, u8 code, u8 bits, u16 lanes, i64 shape[ndim],
 *       u64 offset into the data (a multiple of 64), u64 byte size
 *   param_data   the arrays' bytes at their offsets, zeros between.
 *
 * The data section is 64-byte aligned in the file and so in memory (the
 * dynamic loader maps the file page by page), so every array is as aligned
 * as kiln_array_empty's.  The chunk hashes let the weights be checked in
 * parallel, once, before their first use (kiln_module_check_params); the
 * index itself is covered by the artifact's file checksum (artifact.c).
 *
 * Exports: kiln_params_save_embedded; internally kiln_param_index_parse,
 * kiln_param_chunks_check.
 */
#include "runtime_internal.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((uint64_t)1 << 20)
#define MAX_NDIM 64

/* "KILNPIX1" as a little-endian u64. */
static uint64_t index_magic(void) {
  static const char m[8] = {'K', 'I', 'L', 'N', 'P', 'I', 'X', '1'};
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | (unsigned char)m[i];
  return v;
}

static void put_u64(StrBuf *sb, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  sb_putn(sb, (const char *)b, 8);
}

static int host_is_little_endian(void) {
  uint16_t one = 1;
  unsigned char c;
  memcpy(&c, &one, 1);
  return c == 1;
}

int kiln_params_save_embedded(int n, const char *const *names, DLTensor *const *arrays,
                              void **index, size_t *index_size, void **data, size_t *data_size) {
  if (!index || !index_size || !data || !data_size)
    return kiln_set_error("params_save_embedded: an output is NULL");
  *index = *data = NULL;
  *index_size = *data_size = 0;
  if (!host_is_little_endian())
    return kiln_set_error("params_save_embedded: the embedded params are little-endian and "
                          "this host is not");
  if (kiln_params_check_arrays("params_save_embedded", n, names, arrays)) return -1;
  uint64_t *offset = xcalloc((size_t)n + 1, sizeof *offset);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    total = (total + KILN_ARRAY_ALIGN - 1) / KILN_ARRAY_ALIGN * KILN_ARRAY_ALIGN;
    offset[i] = total;
    total += kiln_array_nbytes(arrays[i]);
  }
  unsigned char *bytes = xcalloc(total ? (size_t)total : 1, 1);
  for (int i = 0; i < n; i++) {
    size_t nb = kiln_array_nbytes(arrays[i]);
    if (nb && kiln_array_copy_to_bytes(arrays[i], bytes + offset[i], nb)) {
      free(offset);
      free(bytes);
      return kiln_error_context("params_save_embedded: array %d ('%s')", i, names[i]);
    }
  }
  StrBuf sb = {0};
  uint64_t nchunks = (total + CHUNK_BYTES - 1) / CHUNK_BYTES;
  put_u64(&sb, index_magic());
  put_u64(&sb, total);
  put_u64(&sb, CHUNK_BYTES);
  put_u64(&sb, nchunks);
  for (uint64_t c = 0; c < nchunks; c++) {
    uint64_t lo = c * CHUNK_BYTES, len = total - lo < CHUNK_BYTES ? total - lo : CHUNK_BYTES;
    put_u64(&sb, kiln_xxh64(bytes + lo, (size_t)len, 0));
  }
  put_u64(&sb, (uint64_t)n);
  for (int i = 0; i < n; i++) {
    const DLTensor *t = arrays[i];
    size_t len = strlen(names[i]);
    put_u64(&sb, len);
    sb_putn(&sb, names[i], len);
    unsigned char hd[8] = {(unsigned char)t->ndim, (unsigned char)(t->ndim >> 8),
                           (unsigned char)(t->ndim >> 16), (unsigned char)(t->ndim >> 24),
                           t->dtype.code, t->dtype.bits, (unsigned char)t->dtype.lanes,
                           (unsigned char)(t->dtype.lanes >> 8)};
    sb_putn(&sb, (const char *)hd, 8);
    for (int d = 0; d < t->ndim; d++) put_u64(&sb, (uint64_t)t->shape[d]);
    put_u64(&sb, offset[i]);
    put_u64(&sb, kiln_array_nbytes(t));
  }
  free(offset);
  *index_size = sb.len;
  *index = sb_steal(&sb);
  *data = bytes;
  *data_size = (size_t)total;
  return 0;
}

/* ---- reading ---- */

typedef struct Cur {
  const unsigned char *p;
  size_t size, pos;
} Cur;

static int cur_u64(Cur *c, uint64_t *v, const char *what) {
  if (c->size - c->pos < 8)
    return kiln_set_error("params index is truncated: %s needs 8 bytes at offset %zu, %zu remain",
                          what, c->pos, c->size - c->pos);
  *v = 0;
  for (int i = 7; i >= 0; i--) *v = (*v << 8) | c->p[c->pos + (size_t)i];
  c->pos += 8;
  return 0;
}

int kiln_param_index_parse(const void *bytes, size_t size, size_t data_size, KArena *arena,
                           KilnParamIndex *pi) {
  memset(pi, 0, sizeof *pi);
  Cur c = {bytes, size, 0};
  uint64_t magic = 0, dsize = 0, csize = 0, nchunks = 0, n = 0;
  if (cur_u64(&c, &magic, "the magic")) return -1;
  if (magic != index_magic())
    return kiln_set_error("params index is corrupt: its magic is 0x%016llx, expected \"KILNPIX1\"",
                          (unsigned long long)magic);
  if (cur_u64(&c, &dsize, "the data size") || cur_u64(&c, &csize, "the chunk size") ||
      cur_u64(&c, &nchunks, "the chunk count"))
    return -1;
  if (dsize != data_size)
    return kiln_set_error("params index is corrupt: it describes %llu bytes of data, the module "
                          "holds %zu", (unsigned long long)dsize, data_size);
  if (csize == 0 || nchunks != (dsize + csize - 1) / csize || nchunks > (c.size - c.pos) / 8)
    return kiln_set_error("params index is corrupt: %llu chunks of %llu bytes for %llu bytes",
                          (unsigned long long)nchunks, (unsigned long long)csize,
                          (unsigned long long)dsize);
  pi->data_size = dsize;
  pi->chunk_bytes = csize;
  pi->num_chunks = nchunks;
  pi->chunk_hashes = c.p + c.pos;
  c.pos += (size_t)nchunks * 8;
  if (cur_u64(&c, &n, "the array count")) return -1;
  if (n > (c.size - c.pos) / 32)
    return kiln_set_error("params index is corrupt: %llu arrays in %zu bytes",
                          (unsigned long long)n, c.size - c.pos);
  pi->num = (int)n;
  pi->names = kiln_arena_alloc(arena, (size_t)n * sizeof(char *) + 1);
  pi->tensors = kiln_arena_alloc(arena, (size_t)n * sizeof(DLTensor) + 1);
  pi->offsets = kiln_arena_alloc(arena, (size_t)n * sizeof(uint64_t) + 1);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t len = 0, off = 0, nbytes = 0;
    if (cur_u64(&c, &len, "a name length")) return -1;
    if (len > c.size - c.pos || len > 4096)
      return kiln_set_error("params index is corrupt: array %llu's name is %llu bytes",
                            (unsigned long long)i, (unsigned long long)len);
    char *name = kiln_arena_alloc(arena, (size_t)len + 1);
    memcpy(name, c.p + c.pos, (size_t)len);
    c.pos += (size_t)len;
    if (c.size - c.pos < 8)
      return kiln_set_error("params index is truncated at array %llu ('%s')", (unsigned long long)i,
                            name);
    const unsigned char *h = c.p + c.pos;
    int32_t ndim = (int32_t)((uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                             (uint32_t)h[3] << 24);
    DLDataType t = {h[4], h[5], (uint16_t)(h[6] | h[7] << 8)};
    c.pos += 8;
    if (ndim < 0 || ndim > MAX_NDIM || kiln_dtype_check(t))
      return kiln_set_error("params index is corrupt: array %llu ('%s') has ndim %d or a bad dtype",
                            (unsigned long long)i, name, ndim);
    int64_t *shape = kiln_arena_alloc(arena, (size_t)ndim * sizeof(int64_t) + 1);
    uint64_t elems = 1;
    for (int d = 0; d < ndim; d++) {
      uint64_t v = 0;
      if (cur_u64(&c, &v, "a shape")) return -1;
      if ((int64_t)v < 0 || (v && elems > UINT64_MAX / v / 16))
        return kiln_set_error("params index is corrupt: array %llu ('%s') has shape[%d] = %lld",
                              (unsigned long long)i, name, d, (long long)v);
      elems *= v;
      shape[d] = (int64_t)v;
    }
    if (cur_u64(&c, &off, "an offset") || cur_u64(&c, &nbytes, "a byte size")) return -1;
    if (nbytes != elems * kiln_dtype_bytes(t) || off % KILN_ARRAY_ALIGN || off > dsize ||
        nbytes > dsize - off)
      return kiln_set_error("params index is corrupt: array %llu ('%s'): %llu bytes at offset "
                            "%llu do not fit its shape or the %llu bytes of data",
                            (unsigned long long)i, name, (unsigned long long)nbytes,
                            (unsigned long long)off, (unsigned long long)dsize);
    pi->names[i] = name;
    pi->offsets[i] = off;
    DLTensor *tt = &pi->tensors[i];
    tt->device = (DLDevice){kDLCPU, 0};
    tt->ndim = ndim;
    tt->dtype = t;
    tt->shape = shape;
  }
  if (c.pos != c.size)
    return kiln_set_error("params index is corrupt: %zu bytes follow the last array",
                          c.size - c.pos);
  return 0;
}

typedef struct ChunkJob {
  const KilnParamIndex *pi;
  const unsigned char *data;
  atomic_llong bad_chunk; /* the first failing chunk + 1, else 0 */
} ChunkJob;

static int check_chunk(int id, int num, void *cdata) {
  ChunkJob *j = cdata;
  const KilnParamIndex *pi = j->pi;
  uint64_t lo = pi->num_chunks * (uint64_t)id / (uint64_t)num;
  uint64_t hi = pi->num_chunks * (uint64_t)(id + 1) / (uint64_t)num;
  for (uint64_t c = lo; c < hi; c++) {
    uint64_t start = c * pi->chunk_bytes;
    uint64_t len = pi->data_size - start < pi->chunk_bytes ? pi->data_size - start : pi->chunk_bytes;
    const unsigned char *h = pi->chunk_hashes + c * 8;
    uint64_t want = 0;
    for (int i = 7; i >= 0; i--) want = (want << 8) | h[i];
    if (kiln_xxh64(j->data + start, (size_t)len, 0) != want) {
      long long none = 0;
      atomic_compare_exchange_strong(&j->bad_chunk, &none, (long long)c + 1);
      return 0;
    }
  }
  return 0;
}

int kiln_param_chunks_check(const KilnParamIndex *pi, const void *data, int parallel) {
  if (!pi->num_chunks) return 0;
  ChunkJob j = {pi, data, 0};
  int tasks = pi->num_chunks < 64 ? (int)pi->num_chunks : 64;
  if (parallel && tasks > 1) {
    if (kiln_parallel_launch(check_chunk, &j, tasks)) return -1;
  } else {
    check_chunk(0, 1, &j);
  }
  long long c = atomic_load(&j.bad_chunk);
  if (!c) return 0;
  uint64_t lo = (uint64_t)(c - 1) * pi->chunk_bytes;
  uint64_t hi = pi->data_size - lo < pi->chunk_bytes ? pi->data_size : lo + pi->chunk_bytes;
  int first = -1, last = -1;
  for (int i = 0; i < pi->num; i++) {
    uint64_t nb = kiln_array_nbytes(&pi->tensors[i]);
    if (pi->offsets[i] < hi && pi->offsets[i] + nb > lo) {
      if (first < 0) first = i;
      last = i;
    }
  }
  StrBuf who = {0};
  if (first < 0) sb_puts(&who, "padding between params");
  else if (first == last) sb_printf(&who, "param '%s'", pi->names[first]);
  else sb_printf(&who, "params '%s' to '%s'", pi->names[first], pi->names[last]);
  kiln_set_error("the weights are corrupt: bytes %llu..%llu of the params data (%s) do not match "
                 "their checksum; rebuild the module (kiln compile) or copy it again",
                 (unsigned long long)lo, (unsigned long long)(hi - 1), who.data);
  sb_free(&who);
  return -1;
}
