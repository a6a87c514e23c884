/*
 * onnx_tensor.c - ONNX data types and tensor payloads.
 *
 * A TensorProto may carry its elements in one of seven places: raw_data
 * (fixed-width little-endian bytes), a typed repeated field (float_data,
 * int32_data, int64_data, double_data, uint64_data, string_data), or a file
 * named by external_data.  Decoding turns every one of them into the same
 * thing: numel * elem_size contiguous little-endian bytes, with the count
 * checked against the dims so a later reader can index the bytes without
 * looking back at the file.  int32_data is the one field that packs smaller
 * types (int8/16, uint8/16, bool, float16, bfloat16: one element per int32,
 * low bits), as the ONNX spec says; complex types use two floats/doubles per
 * element.
 *
 * raw_data buffers are taken over from protobuf-c when decoding for a model
 * (the model frees them) rather than copied; everything else is allocated
 * from the current arena.
 */
#define _GNU_SOURCE
#include "onnx_model.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX loader copies typed fields as host-order bytes: little-endian hosts only"
#endif

/* ---- data types ---- */

typedef struct DataTypeInfo {
  const char *name;
  int size, dl_code, dl_bits;
} DataTypeInfo;

static const DataTypeInfo data_types[] = {
#define X(n, code, sz, dl, bits) [code] = {#n, sz, dl, bits},
    ONNX_DATA_TYPES(X)
#undef X
};
#define NDATA_TYPES ((int)(sizeof data_types / sizeof data_types[0]))

static const DataTypeInfo *dt_info(int code) {
  if (code <= 0 || code >= NDATA_TYPES || !data_types[code].name) return NULL;
  return &data_types[code];
}

const char *onnx_data_type_name(int elem_type) {
  if (elem_type >= 0 && elem_type < NDATA_TYPES && data_types[elem_type].name)
    return data_types[elem_type].name;
  return kfmt("UNKNOWN(%d)", elem_type);
}

bool onnx_dtype_lookup(int elem_type, DType *out) {
  const DataTypeInfo *di = dt_info(elem_type);
  if (!di || !di->dl_bits) return false;
  *out = dt_make(di->dl_code, di->dl_bits, 1);
  return true;
}

int onnx_dtype_from_onnx(int elem_type, DType *out) {
  if (onnx_dtype_lookup(elem_type, out)) return 0;
  const DataTypeInfo *di = dt_info(elem_type);
  if (elem_type == ONNX_DT_UNDEFINED) return kiln_set_error("no ONNX data type given (UNDEFINED)");
  if (!di) return kiln_set_error("unknown ONNX data type %d", elem_type);
  return kiln_set_error("ONNX data type %s has no Kiln equivalent (not supported)", di->name);
}

/* The low-precision types and what carries them: packed elements are
 * unpacked one a byte, sign-extended for the signed integer types; the
 * float types keep their bits (a float4 in the low four of a byte, as
 * ml_dtypes holds it). */
static const struct {
  int code, bits;
  uint8_t dl;
} carriers[] = {
    {ONNX_DT_BFLOAT16, 16, kDLUInt},      {ONNX_DT_FLOAT8E4M3FN, 8, kDLUInt}, {ONNX_DT_FLOAT8E4M3FNUZ, 8, kDLUInt},
    {ONNX_DT_FLOAT8E5M2, 8, kDLUInt},     {ONNX_DT_FLOAT8E5M2FNUZ, 8, kDLUInt}, {ONNX_DT_UINT4, 4, kDLUInt},
    {ONNX_DT_INT4, 4, kDLInt},            {ONNX_DT_FLOAT4E2M1, 4, kDLUInt},   {ONNX_DT_UINT2, 2, kDLUInt},
    {ONNX_DT_INT2, 2, kDLInt},            {ONNX_DT_FLOAT8E8M0, 8, kDLUInt},
};

/* Bits an element of a carried type takes in a TensorProto (0: not one). */
static int carried_bits(int code) {
  for (size_t i = 0; i < sizeof carriers / sizeof carriers[0]; i++)
    if (carriers[i].code == code) return carriers[i].bits;
  return 0;
}

bool onnx_dtype_carrier(int elem_type, DType *out) {
  for (size_t i = 0; i < sizeof carriers / sizeof carriers[0]; i++)
    if (carriers[i].code == elem_type) {
      *out = dt_make(carriers[i].dl, carriers[i].bits == 16 ? 16 : 8, 1);
      return true;
    }
  return false;
}

int onnx_tensor_dtype(const OnnxTensor *t, DType *out) {
  if (t->has_dtype) {
    *out = t->dtype;
    return 0;
  }
  onnx_dtype_from_onnx(t->elem_type, out);
  return kiln_error_context("tensor '%s'", t->name);
}

/* ---- payloads ---- */

static const char *dims_str(const OnnxTensor *t) {
  StrBuf sb = {0};
  sb_putc(&sb, '[');
  for (int i = 0; i < t->ndim; i++) sb_printf(&sb, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  sb_putc(&sb, ']');
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

/* A buffer for n payload bytes: on the heap and owned by the model when
 * there is one (weights should not be zero-filled and doubled in an arena
 * chunk), else from the current arena. */
static void *payload_alloc(OnnxDecoder *d, size_t n) {
  if (!d->model) return kalloc(n);
  void *p = xmalloc(n ? n : 1);
  pv_push(&d->model->owned, p);
  return p;
}

/* Which typed field carries a data type's elements. */
typedef enum Field { F_NONE, F_FLOAT, F_INT32, F_INT64, F_DOUBLE, F_UINT64, F_STRING } Field;

static Field typed_field(int code) {
  switch (code) {
  case ONNX_DT_FLOAT: case ONNX_DT_COMPLEX64: return F_FLOAT;
  case ONNX_DT_INT32: case ONNX_DT_INT16: case ONNX_DT_INT8: case ONNX_DT_UINT16:
  case ONNX_DT_UINT8: case ONNX_DT_BOOL: case ONNX_DT_FLOAT16: case ONNX_DT_BFLOAT16:
  case ONNX_DT_FLOAT8E4M3FN: case ONNX_DT_FLOAT8E4M3FNUZ: case ONNX_DT_FLOAT8E5M2: case ONNX_DT_FLOAT8E5M2FNUZ:
  case ONNX_DT_UINT4: case ONNX_DT_INT4: case ONNX_DT_FLOAT4E2M1: case ONNX_DT_UINT2: case ONNX_DT_INT2:
    return F_INT32;
  case ONNX_DT_INT64: return F_INT64;
  case ONNX_DT_DOUBLE: case ONNX_DT_COMPLEX128: return F_DOUBLE;
  case ONNX_DT_UINT32: case ONNX_DT_UINT64: return F_UINT64;
  case ONNX_DT_STRING: return F_STRING;
  default: return F_NONE;
  }
}

static const char *field_name(Field f) {
  static const char *names[] = {"none", "float_data", "int32_data", "int64_data",
                                "double_data", "uint64_data", "string_data"};
  return names[f];
}

static size_t field_count(const Onnx__TensorProto *p, Field f) {
  switch (f) {
  case F_NONE: return 0;
  case F_FLOAT: return p->n_float_data;
  case F_INT32: return p->n_int32_data;
  case F_INT64: return p->n_int64_data;
  case F_DOUBLE: return p->n_double_data;
  case F_UINT64: return p->n_uint64_data;
  case F_STRING: return p->n_string_data;
  }
  return 0;
}

/* Parse a non-negative decimal integer from external_data, strictly. */
static int parse_size(const char *key, const char *s, int64_t *out) {
  if (!s || !*s) return kiln_set_error("external_data '%s' is empty", key);
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end || errno || v < 0 || s[0] == '-' || s[0] == '+' || s[0] == ' ')
    return kiln_set_error("external_data '%s' is '%s', not a non-negative integer", key, s);
  *out = v;
  return 0;
}

/* Read t's payload from the file external_data names. */
static int read_external(OnnxDecoder *d, const Onnx__TensorProto *p, OnnxTensor *t) {
  const char *location = NULL;
  int64_t offset = 0, length = -1;
  for (size_t i = 0; i < p->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = p->external_data[i];
    if (!e || !e->key) continue;
    if (!strcmp(e->key, "location")) location = e->value;
    else if (!strcmp(e->key, "offset")) {
      if (parse_size("offset", e->value, &offset)) return -1;
    } else if (!strcmp(e->key, "length")) {
      if (parse_size("length", e->value, &length)) return -1;
    }
    /* "checksum" and unknown keys are ignored: a digest adds nothing to the
     * size checks below and no SHA-1 is at hand. */
  }
  if (!location || !*location) return kiln_set_error("external data without a 'location'");
  if (t->elem_size == 0) return kiln_set_error("external data for a STRING tensor is not supported");
  /* The spec says location is relative to the model's folder; refusing
   * absolute paths and ".." keeps a model from reading arbitrary files. */
  if (location[0] == '/' || !strcmp(location, "..") || !strncmp(location, "../", 3) ||
      strstr(location, "/../") || (strlen(location) >= 3 && !strcmp(location + strlen(location) - 3, "/..")))
    return kiln_set_error("external data location '%s' leaves the model's folder", location);
  if (!d->base_dir)
    return kiln_set_error("external data in '%s', but the model was loaded from memory "
                          "without a base directory", location);
  if (length >= 0 && (uint64_t)length != t->nbytes)
    return kiln_set_error("external data length %lld, expected %zu bytes for %s%s",
                          (long long)length, t->nbytes, onnx_data_type_name(t->elem_type),
                          dims_str(t));
  char *path = kfmt("%s/%s", d->base_dir, location);
  FILE *f = fopen(path, "rb");
  if (!f) return kiln_set_error("cannot open external data file '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return kiln_set_error("external data '%s' is not a regular file", path);
  }
  uint64_t fsize = (uint64_t)st.st_size;
  if ((uint64_t)offset > fsize || t->nbytes > fsize - (uint64_t)offset) {
    fclose(f);
    return kiln_set_error("external data '%s': offset %lld + %zu bytes runs past the file's "
                          "end (%llu bytes)", path, (long long)offset, t->nbytes,
                          (unsigned long long)fsize);
  }
  void *buf = NULL;
  if (t->nbytes) {
    buf = payload_alloc(d, t->nbytes);
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(buf, 1, t->nbytes, f) != t->nbytes) {
      fclose(f);
      return kiln_set_error("cannot read %zu bytes at offset %lld of '%s'", t->nbytes,
                            (long long)offset, path);
    }
  }
  fclose(f);
  t->data = buf;
  t->external = true;
  return 0;
}

/* Copy a typed field's values into little-endian element bytes. */
static void pack_typed(const Onnx__TensorProto *p, Field f, OnnxTensor *t, unsigned char *out) {
  size_t n = field_count(p, f);
  switch (f) {
  case F_FLOAT: memcpy(out, p->float_data, n * sizeof(float)); break;
  case F_DOUBLE: memcpy(out, p->double_data, n * sizeof(double)); break;
  case F_INT64: memcpy(out, p->int64_data, n * sizeof(int64_t)); break;
  case F_UINT64:
    if (t->elem_size == 8) memcpy(out, p->uint64_data, n * sizeof(uint64_t));
    else
      for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)p->uint64_data[i];
        memcpy(out + 4 * i, &v, 4);
      }
    break;
  case F_INT32:
    for (size_t i = 0; i < n; i++) {
      int32_t v = p->int32_data[i];
      if (t->elem_type == ONNX_DT_BOOL) out[i] = v != 0;
      else if (t->elem_size == 1) out[i] = (unsigned char)v;
      else if (t->elem_size == 2) {
        uint16_t h = (uint16_t)v; /* the low bits, as the spec packs them */
        memcpy(out + 2 * i, &h, 2);
      } else memcpy(out + 4 * i, &v, 4);
    }
    break;
  case F_NONE:
  case F_STRING: KUNREACHABLE();
  }
}

/* A 4- or 2-bit type: its packed bytes (raw_data, or int32_data holding
 * one byte each) unpacked one element a byte. */
static int decode_packed(OnnxDecoder *d, Onnx__TensorProto *p, OnnxTensor *t, int bits) {
  /* numel * bits in 64 bits: numel may be up to 2^63 - 1 here */
  size_t packed = (size_t)(t->numel / 8) * (size_t)bits + ((size_t)(t->numel % 8) * (size_t)bits + 7) / 8;
  if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return kiln_set_error("external data for a %s tensor is not supported (save it inside the model)",
                          onnx_data_type_name(t->elem_type));
  const unsigned char *src = NULL;
  unsigned char *tmp = NULL;
  if (p->has_raw_data && p->raw_data.len) {
    if (p->n_int32_data) return kiln_set_error("both raw_data and int32_data are set");
    if (p->raw_data.len != packed)
      return kiln_set_error("raw_data has %zu bytes, expected %zu for %s%s (%lld elements, %d bits each, packed)",
                            p->raw_data.len, packed, onnx_data_type_name(t->elem_type), dims_str(t),
                            (long long)t->numel, bits);
    src = p->raw_data.data;
  } else if (p->n_int32_data || t->numel) {
    if (p->n_int32_data != packed)
      return kiln_set_error("int32_data has %zu values, expected %zu packed bytes for %s%s", p->n_int32_data, packed,
                            onnx_data_type_name(t->elem_type), dims_str(t));
    tmp = xmalloc(packed + 1);
    for (size_t i = 0; i < packed; i++) tmp[i] = (unsigned char)p->int32_data[i];
    src = tmp;
  }
  if (t->nbytes) {
    unsigned char *out = payload_alloc(d, t->nbytes);
    bool sign = t->elem_type == ONNX_DT_INT4 || t->elem_type == ONNX_DT_INT2;
    int per = 8 / bits, mask = (1 << bits) - 1;
    for (int64_t i = 0; i < t->numel; i++) {
      int v = (src[i / per] >> ((i % per) * bits)) & mask;
      if (sign && v >= (1 << (bits - 1))) v -= 1 << bits;
      out[i] = (unsigned char)v;
    }
    t->data = out;
  }
  free(tmp);
  return 0;
}

static int decode_payload(OnnxDecoder *d, Onnx__TensorProto *p, OnnxTensor *t) {
  Field want = typed_field(t->elem_type);
  int cb = carried_bits(t->elem_type);
  if (cb && cb < 8) {
    for (Field f = F_FLOAT; f <= F_STRING; f++)
      if (f != F_INT32 && field_count(p, f))
        return kiln_set_error("type %s, but the data is in %s", onnx_data_type_name(t->elem_type), field_name(f));
    return decode_packed(d, p, t, cb);
  }
  /* A field that belongs to another type is a malformed tensor, not one to
   * guess at. */
  for (Field f = F_FLOAT; f <= F_STRING; f++)
    if (f != want && field_count(p, f))
      return kiln_set_error("type %s, but the data is in %s", onnx_data_type_name(t->elem_type),
                            field_name(f));

  if (t->elem_type == ONNX_DT_STRING) {
    if (p->has_raw_data && p->raw_data.len)
      return kiln_set_error("a STRING tensor cannot use raw_data");
    if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
      return kiln_set_error("external data for a STRING tensor is not supported");
    if ((int64_t)p->n_string_data != t->numel)
      return kiln_set_error("string_data has %zu strings, expected %lld for %s", p->n_string_data,
                            (long long)t->numel, dims_str(t));
    const char **s = KNEWN(const char *, p->n_string_data + 1);
    size_t *lens = KNEWN(size_t, p->n_string_data + 1);
    for (size_t i = 0; i < p->n_string_data; i++) {
      const ProtobufCBinaryData *b = &p->string_data[i];
      size_t len = b->data ? b->len : 0;
      char *c = kalloc(len + 1); /* memcpy, not kstrndup: strings may hold NULs */
      if (len) memcpy(c, b->data, len);
      s[i] = c;
      lens[i] = len;
    }
    t->strings = s;
    t->string_lens = lens;
    return 0;
  }

  if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    if ((p->has_raw_data && p->raw_data.len) || field_count(p, want))
      return kiln_set_error("marked EXTERNAL but also carries data in the file");
    return read_external(d, p, t);
  }

  if (p->has_raw_data && p->raw_data.len) {
    if (field_count(p, want))
      return kiln_set_error("both raw_data and %s are set", field_name(want));
    if (p->raw_data.len != t->nbytes)
      return kiln_set_error("raw_data has %zu bytes, expected %zu for %s%s (%lld elements of %zu)",
                            p->raw_data.len, t->nbytes, onnx_data_type_name(t->elem_type),
                            dims_str(t), (long long)t->numel, t->elem_size);
    if (d->model) { /* take the buffer over: no copy of the weights */
      t->data = p->raw_data.data;
      pv_push(&d->model->owned, p->raw_data.data);
      p->raw_data.data = NULL;
      p->raw_data.len = 0;
    } else {
      t->data = kmemdup(p->raw_data.data, p->raw_data.len);
    }
    return 0;
  }

  size_t per = (t->elem_type == ONNX_DT_COMPLEX64 || t->elem_type == ONNX_DT_COMPLEX128) ? 2 : 1;
  size_t n = field_count(p, want);
  if (n != (size_t)t->numel * per) {
    if (n == 0)
      return kiln_set_error("no data for %s%s (%lld elements expected)",
                            onnx_data_type_name(t->elem_type), dims_str(t), (long long)t->numel);
    return kiln_set_error("%s has %zu values, expected %lld for %s%s", field_name(want), n,
                          (long long)(t->numel * (int64_t)per), onnx_data_type_name(t->elem_type),
                          dims_str(t));
  }
  if (t->nbytes == 0) return 0;
  unsigned char *out = payload_alloc(d, t->nbytes);
  pack_typed(p, want, t, out);
  t->data = out;
  return 0;
}

/* The body of onnx_decode_tensor; errors here lack the tensor's name. */
static int decode_tensor(OnnxDecoder *d, Onnx__TensorProto *p, OnnxTensor *t) {
  if (p->segment) return kiln_set_error("segmented tensors are not supported");
  if (!p->has_data_type || p->data_type == ONNX_DT_UNDEFINED)
    return kiln_set_error("no data type");
  t->elem_type = p->data_type;
  const DataTypeInfo *di = dt_info(p->data_type);
  if (!di) return kiln_set_error("unknown data type %d", p->data_type);
  if (!di->dl_bits && p->data_type > ONNX_DT_BFLOAT16 && !carried_bits(p->data_type))
    return kiln_set_error("data type %s is not supported (Kiln has no storage for it)", di->name);
  t->elem_size = (size_t)di->size;
  t->has_dtype = onnx_dtype_lookup(p->data_type, &t->dtype) || onnx_dtype_carrier(p->data_type, &t->dtype);
  if (p->n_dims > 64) return kiln_set_error("%zu dims (at most 64)", p->n_dims);
  t->ndim = (int)p->n_dims;
  int64_t *dims = KNEWN(int64_t, t->ndim + 1);
  int64_t numel = 1;
  for (int i = 0; i < t->ndim; i++) {
    dims[i] = p->dims[i];
    if (dims[i] < 0) return kiln_set_error("dim %d is %lld (negative)", i, (long long)dims[i]);
    if (__builtin_mul_overflow(numel, dims[i], &numel))
      return kiln_set_error("the element count of its dims overflows");
  }
  t->dims = dims;
  t->numel = numel;
  size_t nbytes;
  if (__builtin_mul_overflow((size_t)numel, t->elem_size, &nbytes) || nbytes > (size_t)INT64_MAX)
    return kiln_set_error("its size in bytes overflows");
  t->nbytes = nbytes;
  return decode_payload(d, p, t);
}

int onnx_decode_tensor(OnnxDecoder *d, Onnx__TensorProto *p, OnnxTensor *t) {
  memset(t, 0, sizeof *t);
  t->name = p->name ? kstrdup(p->name) : "";
  if (decode_tensor(d, p, t) == 0) return 0;
  return kiln_error_context("tensor '%s'", t->name);
}

/* ---- .pb tensor files ---- */

OnnxTensor *onnx_tensor_load_pb_bytes(const void *data, size_t n, const char *what) {
  if (onnx_wire_check(data, n, &onnx__tensor_proto__descriptor)) {
    kiln_error_context("%s: not a valid TensorProto", what);
    return NULL;
  }
  Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, n, data);
  if (!p) {
    kiln_set_error("%s: not a valid TensorProto (protobuf-c could not decode it)", what);
    return NULL;
  }
  OnnxTensor *t = KNEW(OnnxTensor);
  OnnxDecoder d = {NULL, NULL};
  int rc = onnx_decode_tensor(&d, p, t);
  onnx__tensor_proto__free_unpacked(p, NULL);
  if (rc) {
    kiln_error_context("%s", what);
    return NULL;
  }
  return t;
}

OnnxTensor *onnx_tensor_load_pb(const char *path) {
  size_t n;
  char *buf = kiln_read_file(path, &n);
  if (!buf) return NULL;
  OnnxTensor *t = onnx_tensor_load_pb_bytes(buf, n, path);
  free(buf);
  return t;
}

/* ---- .pb sequence and optional files (onnx-data.proto's SequenceProto
 * and OptionalProto, read with a small wire reader: Debian's libonnx-dev
 * does not install that schema).  Both: name = 1, elem_type = 2; a
 * sequence's tensor_values = 3 (repeated); an optional's tensor_value = 3,
 * sequence_value = 5. ---- */

static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 64; sh += 7) {
    if (*p >= end) return -1;
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* One field: its number, wire type, and for a length-delimited one its
 * bytes; -1 at a malformed field. */
static int wire_field(const uint8_t **p, const uint8_t *end, int *field, int *wt, const uint8_t **data, size_t *len,
                      uint64_t *num) {
  uint64_t key;
  if (wire_varint(p, end, &key)) return -1;
  *field = (int)(key >> 3);
  *wt = (int)(key & 7);
  if (*wt == 0) return wire_varint(p, end, num);
  if (*wt == 2) {
    uint64_t l;
    if (wire_varint(p, end, &l) || l > (uint64_t)(end - *p)) return -1;
    *data = *p;
    *len = (size_t)l;
    *p += l;
    return 0;
  }
  size_t skip = *wt == 1 ? 8 : *wt == 5 ? 4 : 0;
  if (!skip || (size_t)(end - *p) < skip) return -1;
  *p += skip;
  return 0;
}

static int decode_value(const uint8_t *b, size_t n, bool optional, OnnxValue *v, const char *what, int depth) {
  const uint8_t *p = b, *end = b + n;
  AVec ts = {0};
  int elem_type = 0;
  bool seq_seen = false;
  while (p < end) {
    int f, wt;
    const uint8_t *d = NULL;
    size_t len = 0;
    uint64_t num = 0;
    if (wire_field(&p, end, &f, &wt, &d, &len, &num))
      return kiln_set_error("%s: not a valid %s", what, optional ? "OptionalProto" : "SequenceProto");
    if (f == 1 && wt == 2 && !v->name) v->name = kstrndup((const char *)d, len);
    else if (f == 2 && wt == 0) elem_type = (int)num;
    else if (f == 3 && wt == 2) {
      OnnxTensor *t = onnx_tensor_load_pb_bytes(d, len, kfmt("%s: element %d", what, ts.len));
      if (!t) return -1;
      av_push(&ts, t);
    } else if (optional && f == 5 && wt == 2) {
      if (depth > 0) return kiln_set_error("%s: nested optionals are not supported", what);
      v->is_sequence = true;
      seq_seen = true;
      if (decode_value(d, len, false, v, what, depth + 1)) return -1;
    } else if (f >= 4 && f <= 7 && wt == 2) {
      return kiln_set_error("%s: sparse tensors, maps and nested %s are not supported", what,
                            optional ? "optionals" : "sequences");
    }
  }
  if (!optional) {
    /* a sequence: its elements (UNDEFINED or TENSOR elem_type) */
    if (elem_type > 1) return kiln_set_error("%s: a sequence of elem_type %d: only tensors are supported", what, elem_type);
    v->present = true;
    v->is_sequence = true;
    v->n = ts.len;
    v->tensors = KNEWN(OnnxTensor *, ts.len + 1);
    for (int i = 0; i < ts.len; i++) v->tensors[i] = ts.data[i];
    return 0;
  }
  if (seq_seen) return 0;
  v->present = ts.len > 0;
  v->n = ts.len;
  v->tensors = KNEWN(OnnxTensor *, ts.len + 1);
  for (int i = 0; i < ts.len; i++) v->tensors[i] = ts.data[i];
  if (ts.len > 1) return kiln_set_error("%s: an optional holds one tensor, this one %d", what, ts.len);
  return 0;
}

OnnxValue *onnx_value_load_pb(const char *path, bool optional) {
  size_t n;
  char *buf = kiln_read_file(path, &n);
  if (!buf) return NULL;
  OnnxValue *v = KNEW(OnnxValue);
  int rc = decode_value((const uint8_t *)buf, n, optional, v, path, 0);
  free(buf);
  if (!v->name) v->name = "";
  return rc ? NULL : v;
}
