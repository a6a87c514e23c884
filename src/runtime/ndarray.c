/*
 * ndarray.c - Kiln arrays: DLTensors whose memory the runtime manages.
 *
 * A Kiln array is a KilnArray whose first member is its DLTensor, so the
 * DLTensor * handed out casts back.  Every array records who owns its
 * memory: its own aligned allocation (made through the device API table of
 * device.c), a base array it views, a user deleter (kiln_array_wrap) or a
 * DLManagedTensor taken over (kiln_array_from_dlpack).  Arrays are
 * refcounted: the handle holds one reference, and each view and each
 * DLPack export of an array holds another, so memory outlives a freed
 * handle for as long as something still shows it.  Shape (and strides,
 * when a DLPack tensor brings them) live in the same allocation.
 *
 * Only kiln_array_free, _view and _to_dlpack need a Kiln array (they touch
 * the refcount); copies and sizes take any DLTensor, so a tensor from NumPy
 * or PyTorch works there.  There is no magic cookie: passing a foreign
 * DLTensor where a Kiln array is required is the caller's bug.
 *
 * Exports: kiln_array_empty, _view, _wrap, _copy, _copy_from_bytes,
 * _copy_to_bytes, _to_dlpack, _from_dlpack, _free, _nbytes; internally the
 * dtype helpers and kiln_tensor_is_compact.
 */
#include "runtime_internal.h"

#include <stdlib.h>
#include <string.h>

typedef enum ArrayOwner {
  OWN_ALLOC,  /* dl.data came from the device API; freed through it */
  OWN_VIEW,   /* dl.data belongs to base */
  OWN_WRAP,   /* deleter(deleter_ctx) runs on the last release */
  OWN_DLPACK, /* managed->deleter(managed) runs on the last release */
} ArrayOwner;

typedef struct KilnArray {
  DLTensor dl;               /* first, so a DLTensor * casts back */
  atomic_int refs;           /* the handle, plus one per view and DLPack export */
  ArrayOwner owner;          /* who frees dl.data */
  struct KilnArray *base;    /* OWN_VIEW: the array whose memory this shows */
  void (*deleter)(void *);   /* OWN_WRAP: may be NULL */
  void *deleter_ctx;         /* OWN_WRAP: deleter's argument */
  DLManagedTensor *managed;  /* OWN_DLPACK: the tensor taken over */
  int64_t dims[];            /* shape[ndim], then strides[ndim] if any */
} KilnArray;

/* ---- dtypes ---- */

int kiln_dtype_check(DLDataType t) {
  int b = t.bits, ok;
  switch (t.code) {
  case kDLInt:
  case kDLUInt: ok = b == 1 || b == 8 || b == 16 || b == 32 || b == 64; break;
  case kDLFloat: ok = b == 16 || b == 32 || b == 64; break;
  case kDLBfloat: ok = b == 16; break;
  case kDLOpaqueHandle: ok = b == 64; break;
  case kDLComplex: ok = b == 64 || b == 128; break;
  case KILN_DL_STRING: ok = b == 64; break;
  default: ok = 0; break; /* t.code is a plain uint8_t */
  }
  if (ok && t.lanes >= 1) return 0;
  char buf[48];
  return kiln_set_error("dtype %s is not supported (code %d, %d bits, %d lanes)",
                        kiln_dtype_format(t, buf, sizeof buf), t.code, t.bits, t.lanes);
}

size_t kiln_dtype_bytes(DLDataType t) { return ((size_t)t.bits * t.lanes + 7) / 8; }

const char *kiln_dtype_format(DLDataType t, char *buf, size_t size) {
  static const char *const codes[] = {[kDLInt] = "int",         [kDLUInt] = "uint",
                                      [kDLFloat] = "float",     [kDLOpaqueHandle] = "handle",
                                      [kDLBfloat] = "bfloat",   [kDLComplex] = "complex"};
  int n;
  if (t.code == kDLUInt && t.bits == 1)
    n = snprintf(buf, size, "bool");
  else if (t.code == kDLOpaqueHandle)
    n = snprintf(buf, size, "handle");
  else if (t.code == KILN_DL_STRING)
    n = snprintf(buf, size, "string");
  else if (t.code < sizeof codes / sizeof codes[0])
    n = snprintf(buf, size, "%s%d", codes[t.code], t.bits);
  else
    n = snprintf(buf, size, "code%d_%d", t.code, t.bits);
  if (t.lanes != 1 && n >= 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, "x%d", t.lanes);
  return buf;
}

static int dtype_eq(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/* ---- shapes ---- */

static void put_shape(StrBuf *sb, int ndim, const int64_t *shape) {
  sb_putc(sb, '(');
  for (int i = 0; i < ndim; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)shape[i]);
  sb_putc(sb, ')');
}

/* The element count; 0 when any extent is 0 (even after extents whose
 * product alone would overflow: a loaded [2^50, 2^14, 0] array is empty),
 * saturated at INT64_MAX for a shape no constructor accepts. */
static int64_t num_elements(int ndim, const int64_t *shape) {
  for (int i = 0; i < ndim; i++)
    if (shape[i] == 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(n, shape[i], &n)) return INT64_MAX;
  return n;
}

/* Check a shape and dtype given to a constructor; *nbytes gets the size. */
static int check_shape(const char *what, int ndim, const int64_t *shape, DLDataType dtype,
                       size_t *nbytes) {
  if (ndim < 0) return kiln_set_error("%s: ndim must be >= 0, got %d", what, ndim);
  if (ndim > 0 && !shape) return kiln_set_error("%s: shape is NULL with ndim %d", what, ndim);
  if (kiln_dtype_check(dtype)) return kiln_error_context("%s", what);
  int empty = 0; /* a 0 extent anywhere */
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return kiln_set_error("%s: dimension %d has negative extent %lld", what, i,
                            (long long)shape[i]);
    empty |= shape[i] == 0;
  }
  uint64_t total = empty ? 0 : kiln_dtype_bytes(dtype);
  for (int i = 0; i < ndim && total; i++) {
    if (total > (uint64_t)INT64_MAX / (uint64_t)shape[i] ||
        (total *= (uint64_t)shape[i]) > SIZE_MAX) {
      StrBuf sb = {0};
      put_shape(&sb, ndim, shape);
      kiln_set_error("%s: shape %s is too large", what, sb.data);
      sb_free(&sb);
      return -1;
    }
  }
  *nbytes = (size_t)total;
  return 0;
}

int kiln_tensor_is_compact(const DLTensor *t) {
  if (!t->strides || num_elements(t->ndim, t->shape) == 0) return 1;
  int64_t expect = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->strides[d] != expect) return 0;
    expect *= t->shape[d];
  }
  return 1;
}

size_t kiln_array_nbytes(const DLTensor *t) {
  if (!t) return 0;
  return (size_t)num_elements(t->ndim, t->shape) * kiln_dtype_bytes(t->dtype);
}

/* ---- construction and release ---- */

static KilnArray *array_new(int ndim, const int64_t *shape, const int64_t *strides,
                            DLDataType dtype, DLDevice dev, ArrayOwner owner) {
  size_t ndims = (size_t)ndim * (strides ? 2 : 1);
  KilnArray *a = xcalloc(1, sizeof *a + ndims * sizeof(int64_t));
  atomic_init(&a->refs, 1);
  a->owner = owner;
  a->dl.device = dev;
  a->dl.ndim = ndim;
  a->dl.dtype = dtype;
  a->dl.shape = a->dims;
  if (ndim) memcpy(a->dims, shape, (size_t)ndim * sizeof(int64_t));
  if (strides) {
    a->dl.strides = a->dims + ndim;
    if (ndim) memcpy(a->dl.strides, strides, (size_t)ndim * sizeof(int64_t));
  }
  return a;
}

static void array_release(KilnArray *a) {
  if (atomic_fetch_sub(&a->refs, 1) != 1) return;
  switch (a->owner) {
  case OWN_ALLOC: {
    const KilnDeviceAPI *api = kiln_device_api(a->dl.device);
    KASSERT(api != NULL); /* it allocated the memory */
    api->free(a->dl.device, a->dl.data);
    break;
  }
  case OWN_VIEW: array_release(a->base); break;
  case OWN_WRAP:
    if (a->deleter) a->deleter(a->deleter_ctx);
    break;
  case OWN_DLPACK:
    if (a->managed->deleter) a->managed->deleter(a->managed);
    break;
  }
  free(a);
}

int kiln_array_empty(int ndim, const int64_t *shape, DLDataType dtype, DLDevice dev,
                     DLTensor **out) {
  size_t nbytes;
  if (!out) return kiln_set_error("empty: out is NULL");
  *out = NULL;
  if (check_shape("empty", ndim, shape, dtype, &nbytes)) return -1;
  const KilnDeviceAPI *api = kiln_device_api(dev);
  if (!api) return kiln_error_context("empty");
  void *data = api->alloc(dev, nbytes, KILN_ARRAY_ALIGN);
  if (!data) return kiln_error_context("empty");
  KilnArray *a = array_new(ndim, shape, NULL, dtype, dev, OWN_ALLOC);
  a->dl.data = data;
  *out = &a->dl;
  return 0;
}

int kiln_array_view(DLTensor *base, int ndim, const int64_t *shape, DLDataType dtype,
                    DLTensor **out) {
  size_t nbytes;
  if (!out) return kiln_set_error("view: out is NULL");
  *out = NULL;
  if (!base) return kiln_set_error("view: the base array is NULL");
  if (check_shape("view", ndim, shape, dtype, &nbytes)) return -1;
  if (!kiln_tensor_is_compact(base)) return kiln_set_error("view: the base array is not compact");
  int64_t n = num_elements(ndim, shape), bn = num_elements(base->ndim, base->shape);
  size_t bbytes = kiln_array_nbytes(base);
  if (n != bn) {
    StrBuf a = {0}, b = {0};
    put_shape(&a, ndim, shape);
    put_shape(&b, base->ndim, base->shape);
    kiln_set_error("view: shape %s has %lld elements, the base array's %s has %lld", a.data,
                   (long long)n, b.data, (long long)bn);
    sb_free(&a);
    sb_free(&b);
    return -1;
  }
  if (nbytes != bbytes) {
    char d1[48], d2[48];
    return kiln_set_error("view: dtype %s (%zu bytes) does not match the base array's %s (%zu bytes)",
                          kiln_dtype_format(dtype, d1, sizeof d1), nbytes,
                          kiln_dtype_format(base->dtype, d2, sizeof d2), bbytes);
  }
  KilnArray *b = (KilnArray *)base;
  KilnArray *a = array_new(ndim, shape, NULL, dtype, base->device, OWN_VIEW);
  a->dl.data = base->data;
  a->dl.byte_offset = base->byte_offset;
  atomic_fetch_add(&b->refs, 1);
  a->base = b;
  *out = &a->dl;
  return 0;
}

int kiln_array_wrap(void *data, int ndim, const int64_t *shape, DLDataType dtype, DLDevice dev,
                    void (*deleter)(void *), void *ctx, DLTensor **out) {
  size_t nbytes;
  if (!out) return kiln_set_error("wrap: out is NULL");
  *out = NULL;
  if (check_shape("wrap", ndim, shape, dtype, &nbytes)) return -1;
  if (!data && nbytes) return kiln_set_error("wrap: data is NULL for %zu bytes", nbytes);
  KilnArray *a = array_new(ndim, shape, NULL, dtype, dev, OWN_WRAP);
  a->dl.data = data;
  a->deleter = deleter;
  a->deleter_ctx = ctx;
  *out = &a->dl;
  return 0;
}

int kiln_array_free(DLTensor *t) {
  if (t) array_release((KilnArray *)t);
  return 0;
}

/* ---- DLPack ---- */

static void dlpack_deleter(DLManagedTensor *m) {
  array_release(m->manager_ctx);
  free(m);
}

int kiln_array_to_dlpack(DLTensor *t, DLManagedTensor **out) {
  if (!out) return kiln_set_error("to_dlpack: out is NULL");
  *out = NULL;
  if (!t) return kiln_set_error("to_dlpack: the array is NULL");
  KilnArray *a = (KilnArray *)t;
  DLManagedTensor *m = xcalloc(1, sizeof *m);
  m->dl_tensor = a->dl; /* shape and strides point into a, which m keeps alive */
  m->manager_ctx = a;
  m->deleter = dlpack_deleter;
  atomic_fetch_add(&a->refs, 1);
  *out = m;
  return 0;
}

int kiln_array_from_dlpack(DLManagedTensor *m, DLTensor **out) {
  size_t nbytes;
  if (!out) return kiln_set_error("from_dlpack: out is NULL");
  *out = NULL;
  if (!m) return kiln_set_error("from_dlpack: the tensor is NULL");
  const DLTensor *t = &m->dl_tensor;
  if (check_shape("from_dlpack", t->ndim, t->shape, t->dtype, &nbytes)) return -1;
  if (!t->data && nbytes) return kiln_set_error("from_dlpack: data is NULL for %zu bytes", nbytes);
  KilnArray *a = array_new(t->ndim, t->shape, t->strides, t->dtype, t->device, OWN_DLPACK);
  a->dl.data = t->data;
  a->dl.byte_offset = t->byte_offset;
  a->managed = m;
  *out = &a->dl;
  return 0;
}

/* ---- copies ---- */

static char *data_ptr(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

/* Copy a CPU tensor with any strides into compact CPU memory: the innermost
 * dimensions that are contiguous in `from` go as one memcpy, and an
 * odometer walks the others. */
static void strided_copy_cpu(const DLTensor *from, char *to) {
  size_t elem = kiln_dtype_bytes(from->dtype);
  int64_t total = num_elements(from->ndim, from->shape);
  if (total == 0) return;
  if (kiln_tensor_is_compact(from)) {
    memmove(to, data_ptr(from), (size_t)total * elem); /* to may be from itself */
    return;
  }
  int d = from->ndim - 1;
  int64_t run = 1; /* elements per contiguous run */
  while (d >= 0 && (from->shape[d] == 1 || from->strides[d] == run)) run *= from->shape[d--];
  int outer = d + 1; /* dimensions [0, outer) are walked */
  int64_t *idx = xcalloc((size_t)outer, sizeof *idx);
  const char *src = data_ptr(from);
  size_t chunk = (size_t)run * elem;
  for (int64_t done = 0; done < total; done += run) {
    int64_t off = 0;
    for (int i = 0; i < outer; i++) off += idx[i] * from->strides[i];
    memcpy(to, src + off * (int64_t)elem, chunk);
    to += chunk;
    for (int i = outer - 1; i >= 0 && ++idx[i] == from->shape[i]; i--) idx[i] = 0;
  }
  free(idx);
}

/* Copy from (any strides) into to (compact); shapes and dtypes match. */
static int copy_tensor(const char *what, const DLTensor *from, const DLTensor *to) {
  int fcpu = from->device.device_type == kDLCPU, tcpu = to->device.device_type == kDLCPU;
  if (fcpu && tcpu) {
    strided_copy_cpu(from, data_ptr(to));
    return 0;
  }
  if (!fcpu && !tcpu && from->device.device_type != to->device.device_type)
    return kiln_set_error("%s: copies between %s and %s are not supported", what,
                          kiln_device_name(from->device.device_type),
                          kiln_device_name(to->device.device_type));
  const KilnDeviceAPI *api = kiln_device_api(fcpu ? to->device : from->device);
  if (!api) return kiln_error_context("%s", what);
  if (!kiln_tensor_is_compact(from))
    return kiln_set_error("%s: a strided source on %s is not supported yet", what, api->name);
  if (api->copy(data_ptr(from), from->device, data_ptr(to), to->device, kiln_array_nbytes(to)))
    return kiln_error_context("%s", what);
  return 0;
}

int kiln_array_copy(const DLTensor *from, DLTensor *to) {
  if (!from || !to) return kiln_set_error("copy: %s array is NULL", from ? "the destination" : "the source");
  int same_shape = from->ndim == to->ndim;
  for (int i = 0; same_shape && i < from->ndim; i++) same_shape = from->shape[i] == to->shape[i];
  if (!same_shape) {
    StrBuf a = {0}, b = {0};
    put_shape(&a, from->ndim, from->shape);
    put_shape(&b, to->ndim, to->shape);
    kiln_set_error("copy: shape %s does not match %s", a.data, b.data);
    sb_free(&a);
    sb_free(&b);
    return -1;
  }
  if (!dtype_eq(from->dtype, to->dtype)) {
    char d1[48], d2[48];
    return kiln_set_error("copy: dtype %s does not match %s",
                          kiln_dtype_format(from->dtype, d1, sizeof d1),
                          kiln_dtype_format(to->dtype, d2, sizeof d2));
  }
  if (!kiln_tensor_is_compact(to))
    return kiln_set_error("copy: the destination must be compact (it has strides)");
  return copy_tensor("copy", from, to);
}

/* A compact CPU tensor over user memory, shaped like t. */
static DLTensor bytes_tensor(const DLTensor *t, void *data) {
  DLTensor b = *t;
  b.data = data;
  b.device = (DLDevice){kDLCPU, 0};
  b.strides = NULL;
  b.byte_offset = 0;
  return b;
}

int kiln_array_copy_from_bytes(DLTensor *to, const void *data, size_t nbytes) {
  if (!to) return kiln_set_error("copy_from_bytes: the array is NULL");
  size_t want = kiln_array_nbytes(to);
  if (nbytes != want)
    return kiln_set_error("copy_from_bytes: %zu bytes given, the array holds %zu", nbytes, want);
  if (!kiln_tensor_is_compact(to))
    return kiln_set_error("copy_from_bytes: the array must be compact (it has strides)");
  if (!data && nbytes) return kiln_set_error("copy_from_bytes: data is NULL");
  DLTensor src = bytes_tensor(to, (void *)data);
  return copy_tensor("copy_from_bytes", &src, to);
}

int kiln_array_copy_to_bytes(const DLTensor *from, void *data, size_t nbytes) {
  if (!from) return kiln_set_error("copy_to_bytes: the array is NULL");
  size_t want = kiln_array_nbytes(from);
  if (nbytes != want)
    return kiln_set_error("copy_to_bytes: %zu bytes given, the array holds %zu", nbytes, want);
  if (!data && nbytes) return kiln_set_error("copy_to_bytes: data is NULL");
  DLTensor dst = bytes_tensor(from, data);
  return copy_tensor("copy_to_bytes", from, &dst);
}
