/*
 * device.c - the device API table: how to allocate, free and copy memory on
 * each kind of device.
 *
 * The table is indexed by DLDeviceType: the CPU here, CUDA in cuda.c and
 * OpenCL in opencl.c; the array code picks each up unchanged.  A device
 * type without an entry gets "device type N (name) is not supported yet".
 * A GPU API opens its driver library through kiln_driver_device: loaded
 * once under a lock, a failure remembered, device N looked up.
 */
#define _GNU_SOURCE /* madvise, MADV_HUGEPAGE */
#include "runtime_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* An array of at least a huge page (the graph's large activations) starts
 * on a huge-page boundary and its whole huge pages are advised
 * MADV_HUGEPAGE, so the kernel backs them with transparent huge pages
 * where it may (THP "madvise" or "always"; nothing changes with "never";
 * the tail past the last whole huge page keeps small pages, so the
 * resident size does not grow).  A kernel streaming a 5 MB activation
 * then walks 3 pages rather than 1,200, and the activation's place in the
 * physically indexed caches no longer depends on which small pages the
 * process got.  Per-node minima, MobileNet-V2, 1 thread, 20 alternating
 * profiles, load 6: the kernels that read or write the 112x112 and 56x56
 * activations 5-10 % faster (expand 1x1 16->96 @112 172 -> 162 us,
 * depthwise 32 @112 56 -> 51, 144 @56 75 -> 70, 96 /2 @112 64 -> 61). */
enum { HUGE_PAGE_BYTES = 2 << 20 };

static void *cpu_alloc(DLDevice dev, size_t nbytes, size_t align) {
  void *p = NULL;
  if (nbytes == 0) nbytes = 1; /* a 0-element array still gets a real pointer */
  int huge = nbytes >= HUGE_PAGE_BYTES;
  int rc = posix_memalign(&p, huge && align < HUGE_PAGE_BYTES ? HUGE_PAGE_BYTES : align, nbytes);
  if (rc != 0) {
    kiln_set_error("cannot allocate %zu bytes on the cpu: %s", nbytes, strerror(rc));
    return NULL;
  }
#ifdef MADV_HUGEPAGE
  if (huge) (void)madvise(p, nbytes & ~(size_t)(HUGE_PAGE_BYTES - 1), MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
  return p;
}

static void cpu_free(DLDevice dev, void *ptr) { free(ptr); }

static int cpu_copy(const void *from, DLDevice from_dev, void *to, DLDevice to_dev,
                    size_t nbytes) {
  if (nbytes) memmove(to, from, nbytes);
  return 0;
}

static const KilnDeviceAPI cpu_api = {"cpu", cpu_alloc, cpu_free, cpu_copy, NULL, NULL, NULL, NULL, NULL};

static const KilnDeviceAPI *const device_apis[kDLCUDAManaged + 1] = {
    [kDLCPU] = &cpu_api,
    [kDLCUDA] = &kiln_cuda_api,
    [kDLOpenCL] = &kiln_opencl_api,
};

const char *kiln_device_name(int device_type) {
  static const char *const names[] = {
      [kDLCPU] = "cpu",         [kDLCUDA] = "cuda",      [kDLCUDAHost] = "cuda_host",
      [kDLOpenCL] = "opencl",   [kDLVulkan] = "vulkan",  [kDLMetal] = "metal",
      [kDLVPI] = "vpi",         [kDLROCM] = "rocm",      [kDLROCMHost] = "rocm_host",
      [kDLExtDev] = "ext_dev",  [kDLCUDAManaged] = "cuda_managed",
  };
  if (device_type >= 0 && (size_t)device_type < sizeof names / sizeof names[0] &&
      names[device_type])
    return names[device_type];
  return "unknown";
}

int kiln_device_type_from_name(const char *name) {
  for (int t = 0; t < (int)(sizeof device_apis / sizeof device_apis[0]); t++)
    if (device_apis[t] && name && !strcmp(device_apis[t]->name, name)) return t;
  char known[128] = "";
  for (int t = 0; t < (int)(sizeof device_apis / sizeof device_apis[0]); t++)
    if (device_apis[t])
      snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? ", " : "", device_apis[t]->name);
  kiln_set_error("no device named '%s' (Kiln runs on: %s)", name ? name : "(null)", known);
  return -1;
}

const KilnDeviceAPI *kiln_device_api(DLDevice dev) {
  int t = (int)dev.device_type;
  if (t >= 0 && (size_t)t < sizeof device_apis / sizeof device_apis[0] && device_apis[t])
    return device_apis[t];
  kiln_set_error("device type %d (%s) is not supported yet", t, kiln_device_name(t));
  return NULL;
}

int kiln_device_exists(DLDevice dev, int *out) {
  if (!out) return kiln_set_error("device_exists: out is NULL");
  int t = (int)dev.device_type;
  *out = 0;
  if (t == kDLCPU) {
    *out = dev.device_id == 0;
    return 0;
  }
  if (t >= 0 && (size_t)t < sizeof device_apis / sizeof device_apis[0] && device_apis[t] && device_apis[t]->exists)
    *out = device_apis[t]->exists(dev);
  return 0;
}

int kiln_device_sync(DLDevice dev) {
  const KilnDeviceAPI *api = kiln_device_api(dev);
  if (!api) return -1;
  return api->sync ? api->sync(dev) : 0;
}

/* Load d's library and open its devices, once; d->lock is held. */
static int driver_init_locked(KilnDriver *d) {
  if (d->state) return d->state;
  const char *lib = getenv(d->env);
  if (!lib || !*lib) lib = d->lib;
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    snprintf(d->why, sizeof d->why, "%s: cannot load the %s %s (%s); %s", d->prefix, d->what, lib,
             e ? e : "not found", d->hint);
    return d->state = -1;
  }
  int n = d->open(dl, lib, d->why, sizeof d->why);
  if (n <= 0) return d->state = -1;
  d->ndev = n;
  return d->state = 1;
}

int kiln_driver_device(KilnDriver *d, int id, bool quiet) {
  pthread_mutex_lock(&d->lock);
  int st = driver_init_locked(d);
  pthread_mutex_unlock(&d->lock);
  if (st < 0) {
    if (!quiet) kiln_set_error("%s", d->why);
    return -1;
  }
  if (id < 0 || id >= d->ndev) {
    if (!quiet) {
      char first[160] = "";
      if (d->name) snprintf(first, sizeof first, ": 0 is %s", d->name(0));
      kiln_set_error("%s: no device %d (this machine has %d %s device%s%s)", d->prefix, id, d->ndev, d->kind,
                     d->ndev == 1 ? "" : "s", first);
    }
    return -1;
  }
  return 0;
}

/* ---- kernels launched and not yet waited for ---- */

void kiln_pending_push(KilnPending *p, const char *name) {
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 64;
    p->names = xrealloc(p->names, (size_t)p->cap * sizeof *p->names);
  }
  p->names[p->n++] = xstrdup(name ? name : "?");
}

void kiln_pending_clear(KilnPending *p) {
  for (int i = 0; i < p->n; i++) free(p->names[i]);
  p->n = 0;
}

const char *kiln_pending_describe(const KilnPending *p, char *buf, size_t size) {
  if (!size) return buf;
  if (p->n == 0) {
    snprintf(buf, size, "no kernel");
  } else if (p->n == 1) {
    snprintf(buf, size, "kernel '%s'", p->names[0]);
  } else {
    size_t k = (size_t)snprintf(buf, size, "one of the %d kernels", p->n);
    for (int i = 0; i < p->n && i < 4 && k < size; i++)
      k += (size_t)snprintf(buf + k, size - k, "%s'%s'", i ? ", " : " ", p->names[i]);
    if (p->n > 4 && k < size) snprintf(buf + k, size - k, " and %d more", p->n - 4);
  }
  return buf;
}
