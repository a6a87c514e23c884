/*
 * device_module.c - the device half of a compiled GPU module.
 *
 * A module built for a GPU target is still a host .so: its packed
 * functions check their arguments, allocate global intermediates and
 * launch kernels through four pointers the loader fills (the device ABI in
 * include/kiln/runtime.h).  The kernels themselves travel as blobs:
 * "kiln_device" (the kind and each kernel's parameter types),
 * "kiln_device_source" (CUDA C or OpenCL C) and, for CUDA,
 * "kiln_device_ptx" (compiled by NVRTC at build time, so a machine with a
 * driver and no toolkit runs it).  Nothing touches a driver until the
 * first launch on a device: then the API builds (OpenCL) or loads (CUDA)
 * the kernels for that device once, under the module's lock, so loading a
 * GPU module on a machine without the driver works and its first launch
 * says what is missing.
 */
#include "runtime_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char *blob(int n, const char *const *names, const unsigned char *const *data,
                                 const uint64_t *sizes, const char *name, uint64_t *size) {
  for (int i = 0; i < n; i++)
    if (names[i] && !strcmp(names[i], name)) {
      *size = sizes[i];
      return data[i];
    }
  return NULL;
}

static char *copy_text(const unsigned char *p, uint64_t n) {
  char *s = xmalloc((size_t)n + 1);
  memcpy(s, p, (size_t)n);
  s[n] = 0;
  return s;
}

static int parse_meta(KilnDeviceModule *m, const char *text) {
  char kind[32] = {0};
  if (sscanf(text, "kiln-device-v1 %31s", kind) != 1)
    return kiln_set_error("'%s': the kiln_device blob is malformed (no header)", m->path);
  int type = kiln_device_type_from_name(kind);
  if (type < 0 || type == kDLCPU)
    return kiln_set_error("'%s': unknown device kind '%s' in the kiln_device blob", m->path, kind);
  m->device_type = (DLDeviceType)type;
  int cap = 0;
  for (const char *p = strchr(text, '\n'); p && *++p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char *ln = xmalloc(len + 1);
    memcpy(ln, p, len);
    ln[len] = 0;
    char *save = NULL, *tok = strtok_r(ln, " ", &save);
    if (tok && !strcmp(tok, "kernel")) {
      if (m->num_kernels == cap) {
        cap = cap ? cap * 2 : 8;
        m->kernels = xrealloc(m->kernels, (size_t)cap * sizeof *m->kernels);
      }
      KilnDeviceKernelInfo *k = &m->kernels[m->num_kernels];
      memset(k, 0, sizeof *k);
      char *name = strtok_r(NULL, " ", &save), *np = strtok_r(NULL, " ", &save);
      if (!name || !np || atoi(np) < 0 || atoi(np) > KILN_MAX_PARAMS) {
        free(ln);
        return kiln_set_error("'%s': the kiln_device blob is malformed (kernel %d)", m->path, m->num_kernels);
      }
      k->name = xstrdup(name);
      k->nparams = atoi(np);
      for (int i = 0; i < k->nparams; i++) {
        char *t = strtok_r(NULL, " ", &save);
        if (!t) {
          free(ln);
          return kiln_set_error("'%s': kernel '%s' lists too few parameter types", m->path, k->name);
        }
        if (!strcmp(t, "handle"))
          k->ptype[i] = (DLDataType){kDLOpaqueHandle, 64, 1};
        else if (kiln_dtype_parse(t, &k->ptype[i])) {
          free(ln);
          return -1;
        }
      }
      m->num_kernels++;
    }
    free(ln);
    p = end;
    if (!p) break;
  }
  return 0;
}

/* ---- the entry points generated code calls ---- */

static void *loaded_for(KilnDeviceModule *m, int dev) {
  if (dev < 0 || dev >= KILN_MAX_DEVICES) {
    kiln_set_error("%s device %d: Kiln handles device ids 0 to %d", m->api->name, dev, KILN_MAX_DEVICES - 1);
    return NULL;
  }
  pthread_mutex_lock(m->lock);
  void *l = m->loaded[dev];
  if (!l) l = m->loaded[dev] = m->api->module_load(m, dev);
  pthread_mutex_unlock(m->lock);
  return l;
}

static int dm_launch(void *mod, int32_t dev, int32_t k, const int64_t *ext, KilnValue *args, int32_t n) {
  KilnDeviceModule *m = mod;
  if (!m) return kiln_set_error("device launch: the module has no device code");
  if (k < 0 || k >= m->num_kernels)
    return kiln_set_error("'%s': kernel index %d out of range (%d kernels)", m->path, k, m->num_kernels);
  if (n != m->kernels[k].nparams)
    return kiln_set_error("'%s': kernel '%s' takes %d arguments, got %d", m->path, m->kernels[k].name,
                          m->kernels[k].nparams, n);
  for (int i = 0; i < 6; i++)
    if (ext[i] <= 0) return 0; /* an empty launch: nothing to compute */
  void *l = loaded_for(m, dev);
  if (!l) return -1;
  return m->api->launch(m, l, dev, k, ext, args);
}

static void *dm_alloc(void *mod, int32_t dev, uint64_t n) {
  KilnDeviceModule *m = mod;
  return m->api->alloc((DLDevice){(DLDeviceType)m->device_type, dev}, (size_t)n, KILN_ARRAY_ALIGN);
}

static void dm_free(void *mod, int32_t dev, void *p) {
  KilnDeviceModule *m = mod;
  m->api->free((DLDevice){(DLDeviceType)m->device_type, dev}, p);
}

typedef int (*DevLaunchFn)(void *, int32_t, int32_t, const int64_t *, KilnValue *, int32_t);
typedef void *(*DevAllocFn)(void *, int32_t, uint64_t);
typedef void (*DevFreeFn)(void *, int32_t, void *);

int kiln_device_module_attach(void *dl, const char *path, int num_blobs, const char *const *blob_names,
                              const unsigned char *const *blob_data, const uint64_t *blob_sizes,
                              KilnDeviceModule **out) {
  *out = NULL;
  void **slot = dlsym(dl, "__kiln_device_module");
  if (!slot) return 0;
  uint64_t nmeta = 0, nsrc = 0, nptx = 0;
  const unsigned char *meta = blob(num_blobs, blob_names, blob_data, blob_sizes, "kiln_device", &nmeta);
  const unsigned char *src = blob(num_blobs, blob_names, blob_data, blob_sizes, "kiln_device_source", &nsrc);
  const unsigned char *ptx = blob(num_blobs, blob_names, blob_data, blob_sizes, "kiln_device_ptx", &nptx);
  if (!meta || !src)
    return kiln_set_error("'%s' is malformed: it launches GPU kernels but carries no %s blob", path,
                          meta ? "kiln_device_source" : "kiln_device");
  KilnDeviceModule *m = xcalloc(1, sizeof *m);
  m->path = xstrdup(path);
  char *mt = copy_text(meta, nmeta);
  int rc = parse_meta(m, mt);
  free(mt);
  if (rc) {
    kiln_device_module_free(m);
    return -1;
  }
  m->api = m->device_type == kDLCUDA ? &kiln_cuda_api : &kiln_opencl_api;
  m->source = copy_text(src, nsrc);
  if (ptx) m->ptx = copy_text(ptx, nptx);
  m->lock = xmalloc(sizeof(pthread_mutex_t));
  pthread_mutex_init(m->lock, NULL);
  *slot = m;
  DevLaunchFn *l = dlsym(dl, "__kiln_device_launch_ptr");
  DevAllocFn *a = dlsym(dl, "__kiln_device_alloc_ptr");
  DevFreeFn *f = dlsym(dl, "__kiln_device_free_ptr");
  if (l) *l = dm_launch;
  if (a) *a = dm_alloc;
  if (f) *f = dm_free;
  *out = m;
  return 0;
}

void kiln_device_module_free(KilnDeviceModule *m) {
  if (!m) return;
  for (int d = 0; d < KILN_MAX_DEVICES; d++)
    if (m->loaded[d]) m->api->module_unload(m->loaded[d]);
  for (int i = 0; i < m->num_kernels; i++) free((char *)m->kernels[i].name);
  free(m->kernels);
  free((char *)m->source);
  free((char *)m->ptx);
  free((char *)m->path);
  if (m->lock) {
    pthread_mutex_destroy(m->lock);
    free(m->lock);
  }
  free(m);
}
