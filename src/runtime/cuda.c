/*
 * cuda.c - the CUDA device API on the driver API, opened at run time.
 *
 * libcuda.so.1 (or $KILN_CUDA_DRIVER) is dlopen'ed on first use: Kiln links
 * no CUDA library, and a compiled model needs only the driver (its kernels
 * are PTX that NVRTC made at build time).  The few entry points used are
 * declared here with the driver API's types.  Each device uses its
 * primary context, made current on the calling thread before every call;
 * a DLTensor's data on a CUDA device is the CUdeviceptr.  A module's PTX
 * is loaded for a device on its first launch; the JIT log is the error
 * when that fails.
 *
 * Launches are asynchronous, as in TVM (and as opencl.c's): a launch
 * queues the kernel on the context's stream and returns; what the driver
 * refuses at once (a bad grid, too many threads) is that launch's error.
 * A kernel that fails while running makes the context's error sticky,
 * found at the next copy or synchronize, which first waits for the queue
 * (cuCtxSynchronize): the error then names the kernels launched since the
 * last wait (their names are kept per device, KilnPending; one launch in
 * flight is named exactly).  KILN_CUDA_SYNC=1 waits after every launch,
 * so a failure is reported by the launch that caused it, by name.  After
 * KILN_MAX_PENDING launches without a wait, a launch waits.  Copies are
 * synchronous (cuMemcpy*).
 */
#include "runtime_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1

#define CU_FUNCS(X)                                                                                \
  X(cuInit, (unsigned int))                                                                        \
  X(cuDeviceGetCount, (int *))                                                                     \
  X(cuDeviceGet, (CUdevice *, int))                                                                \
  X(cuDeviceGetName, (char *, int, CUdevice))                                                      \
  X(cuDeviceGetAttribute, (int *, int, CUdevice))                                                  \
  X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                             \
  X(cuCtxSetCurrent, (CUcontext))                                                                  \
  X(cuCtxSynchronize, (void))                                                                      \
  X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                                                        \
  X(cuMemFree_v2, (CUdeviceptr))                                                                   \
  X(cuMemcpyHtoD_v2, (CUdeviceptr, const void *, size_t))                                          \
  X(cuMemcpyDtoH_v2, (void *, CUdeviceptr, size_t))                                                \
  X(cuMemcpyDtoD_v2, (CUdeviceptr, CUdeviceptr, size_t))                                           \
  X(cuModuleLoadDataEx, (CUmodule *, const void *, unsigned int, int *, void **))                  \
  X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))                                   \
  X(cuModuleUnload, (CUmodule))                                                                    \
  X(cuLaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, \
                     unsigned int, unsigned int, CUstream, void **, void **))                      \
  X(cuGetErrorName, (CUresult, const char **))

static struct {
#define X(name, args) CUresult(*name) args;
  CU_FUNCS(X)
#undef X
} cu;

typedef struct CuDevice {
  CUdevice dev;
  CUcontext ctx;
  char name[128];
  int max_threads;
  KilnPending pending; /* launched, not waited for (under launch_lock) */
} CuDevice;

static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static CuDevice cu_devs[KILN_MAX_DEVICES];

static const char *cu_err(CUresult r) {
  const char *s = NULL;
  if (cu.cuGetErrorName && cu.cuGetErrorName(r, &s) == 0 && s) return s;
  return "CUDA_ERROR";
}

/* The driver's open hook: its entry points and every device's primary
 * context. */
static int cu_open(void *dl, const char *lib, char *why, size_t why_size) {
#define X(name, args)                                                                              \
  if (!(cu.name = (CUresult(*) args)dlsym(dl, #name))) {                                           \
    snprintf(why, why_size, "cuda: %s lacks %s; it is not a CUDA driver library", lib, #name);     \
    return -1;                                                                                     \
  }
  CU_FUNCS(X)
#undef X
  CUresult r = cu.cuInit(0);
  int n = 0, ndev = 0;
  if (r == 0) r = cu.cuDeviceGetCount(&n);
  if (r != 0 || n == 0) {
    snprintf(why, why_size, "cuda: no CUDA device found (%s)", r ? cu_err(r) : "0 devices");
    return -1;
  }
  for (int i = 0; i < n && ndev < KILN_MAX_DEVICES; i++) {
    CuDevice *d = &cu_devs[ndev];
    if (cu.cuDeviceGet(&d->dev, i)) continue;
    cu.cuDeviceGetName(d->name, sizeof d->name - 1, d->dev);
    cu.cuDeviceGetAttribute(&d->max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d->dev);
    if (cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev)) continue;
    ndev++;
  }
  if (!ndev) {
    snprintf(why, why_size, "cuda: no usable CUDA device (contexts could not be made)");
    return -1;
  }
  return ndev;
}

static KilnDriver cu_driver =
    KILN_DRIVER_INIT("cuda", "CUDA", "CUDA driver",
                     "running CUDA code needs an NVIDIA GPU with its driver installed (the CUDA toolkit is not "
                     "needed to run)",
                     "KILN_CUDA_DRIVER", "libcuda.so.1", cu_open, NULL);

/* The device, made current on this thread. */
static CuDevice *cu_device(int id, bool quiet) {
  if (kiln_driver_device(&cu_driver, id, quiet)) return NULL;
  CUresult r = cu.cuCtxSetCurrent(cu_devs[id].ctx);
  if (r) {
    if (!quiet) kiln_set_error("cuda: cannot make device %d current: %s", id, cu_err(r));
    return NULL;
  }
  return &cu_devs[id];
}

static void *cuda_alloc(DLDevice dev, size_t nbytes, size_t align) {
  (void)align;
  CuDevice *d = cu_device(dev.device_id, false);
  if (!d) return NULL;
  CUdeviceptr p = 0;
  CUresult r = cu.cuMemAlloc_v2(&p, nbytes ? nbytes : 1);
  if (r) {
    kiln_set_error("cuda: out of device memory: cannot allocate %zu bytes on device %d (%s): %s", nbytes,
                   dev.device_id, d->name, cu_err(r));
    return NULL;
  }
  return (void *)(uintptr_t)p;
}

static void cuda_free(DLDevice dev, void *p) {
  if (p && cu_device(dev.device_id, true)) cu.cuMemFree_v2((CUdeviceptr)(uintptr_t)p);
}

/* Wait for d's queue (current on this thread); a failure names the
 * kernels launched since the last wait.  Under launch_lock. */
static int drain(CuDevice *d, int dev_id, const char *at) {
  CUresult r = cu.cuCtxSynchronize();
  int rc = 0;
  if (r) {
    char which[400];
    rc = kiln_set_error("cuda: %s failed on device %d (%s): %s (found at %s: kernels run asynchronously%s)",
                        kiln_pending_describe(&d->pending, which, sizeof which), dev_id, d->name, cu_err(r), at,
                        d->pending.n > 1 ? "; KILN_CUDA_SYNC=1 waits after each launch and names the one" : "");
  }
  kiln_pending_clear(&d->pending);
  return rc;
}

static int drain_locked(CuDevice *d, int dev_id, const char *at) {
  pthread_mutex_lock(&launch_lock);
  int rc = drain(d, dev_id, at);
  pthread_mutex_unlock(&launch_lock);
  return rc;
}

static int cuda_copy(const void *from, DLDevice fd, void *to, DLDevice td, size_t nbytes) {
  if (!nbytes) return 0;
  bool fdev = fd.device_type == kDLCUDA, tdev = td.device_type == kDLCUDA;
  int dev_id = fdev ? fd.device_id : td.device_id;
  CuDevice *d = cu_device(dev_id, false);
  if (!d || drain_locked(d, dev_id, "a copy")) return -1;
  CUresult r;
  if (fdev && tdev)
    r = cu.cuMemcpyDtoD_v2((CUdeviceptr)(uintptr_t)to, (CUdeviceptr)(uintptr_t)from, nbytes);
  else if (fdev)
    r = cu.cuMemcpyDtoH_v2(to, (CUdeviceptr)(uintptr_t)from, nbytes);
  else
    r = cu.cuMemcpyHtoD_v2((CUdeviceptr)(uintptr_t)to, from, nbytes);
  return r ? kiln_set_error("cuda: copying %zu bytes failed: %s", nbytes, cu_err(r)) : 0;
}

static int cuda_sync(DLDevice dev) {
  CuDevice *d = cu_device(dev.device_id, false);
  return d ? drain_locked(d, dev.device_id, "a synchronize") : -1;
}

static int cuda_exists(DLDevice dev) { return cu_device(dev.device_id, true) != NULL; }

typedef struct CuLoaded {
  CUmodule mod;
  int nkernels;
  CUfunction *fn;
} CuLoaded;

static void cuda_unload(void *p) {
  CuLoaded *l = p;
  if (!l) return;
  if (l->mod) cu.cuModuleUnload(l->mod);
  free(l->fn);
  free(l);
}

static void *cuda_module_load(const KilnDeviceModule *m, int dev_id) {
  if (!cu_device(dev_id, false)) return NULL;
  if (!m->ptx) {
    kiln_set_error("cuda: '%s' carries no PTX (it was built without NVRTC)", m->path);
    return NULL;
  }
  char log[4096] = {0};
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)(sizeof log - 1)};
  CuLoaded *l = xcalloc(1, sizeof *l);
  CUresult r = cu.cuModuleLoadDataEx(&l->mod, m->ptx, 2, opts, vals);
  if (r) {
    kiln_set_error("cuda: loading the PTX of '%s' on device %d failed (%s): %s", m->path, dev_id, cu_err(r), log);
    cuda_unload(l);
    return NULL;
  }
  l->nkernels = m->num_kernels;
  l->fn = xcalloc((size_t)(m->num_kernels > 0 ? m->num_kernels : 1), sizeof(CUfunction));
  for (int i = 0; i < m->num_kernels; i++)
    if ((r = cu.cuModuleGetFunction(&l->fn[i], l->mod, m->kernels[i].name))) {
      kiln_set_error("cuda: '%s' has no kernel '%s': %s", m->path, m->kernels[i].name, cu_err(r));
      cuda_unload(l);
      return NULL;
    }
  return l;
}

static int cuda_launch(const KilnDeviceModule *m, void *loaded, int dev_id, int k, const int64_t *ext,
                       const KilnValue *args) {
  CuLoaded *l = loaded;
  CuDevice *d = cu_device(dev_id, false);
  if (!d) return -1;
  const KilnDeviceKernelInfo *ki = &m->kernels[k];
  int64_t threads = ext[3] * ext[4] * ext[5];
  if (d->max_threads && threads > d->max_threads)
    return kiln_set_error("cuda: kernel '%s' launches %lld threads per block; device %d (%s) allows %d", ki->name,
                          (long long)threads, dev_id, d->name, d->max_threads);
  union {
    CUdeviceptr ptr;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    bool b;
  } vals[KILN_MAX_PARAMS];
  void *ptrs[KILN_MAX_PARAMS];
  for (int i = 0; i < ki->nparams; i++) {
    DLDataType t = ki->ptype[i];
    if (t.code == kDLOpaqueHandle) vals[i].ptr = (CUdeviceptr)(uintptr_t)args[i].v_handle;
    else if (t.code == kDLFloat && t.bits == 32) vals[i].f32 = (float)args[i].v_float64;
    else if (t.code == kDLFloat) vals[i].f64 = args[i].v_float64;
    else if (t.bits == 1) vals[i].b = args[i].v_int64 != 0;
    else if (t.bits == 8) vals[i].i8 = (int8_t)args[i].v_int64;
    else if (t.bits == 16) vals[i].i16 = (int16_t)args[i].v_int64;
    else if (t.bits == 32) vals[i].i32 = (int32_t)args[i].v_int64;
    else vals[i].i64 = args[i].v_int64;
    ptrs[i] = &vals[i];
  }
  pthread_mutex_lock(&launch_lock);
  CUresult r = cu.cuLaunchKernel(l->fn[k], (unsigned)ext[0], (unsigned)ext[1], (unsigned)ext[2], (unsigned)ext[3],
                                 (unsigned)ext[4], (unsigned)ext[5], 0, NULL, ptrs, NULL);
  int late = 0;
  char before[440] = "";
  if (!r) {
    kiln_pending_push(&d->pending, ki->name);
    const char *sync = getenv("KILN_CUDA_SYNC");
    if (sync && *sync && strcmp(sync, "0")) late = drain(d, dev_id, "its launch (KILN_CUDA_SYNC)");
    else if (d->pending.n >= KILN_MAX_PENDING) late = drain(d, dev_id, "a launch (4096 kernels were waiting)");
  } else if (d->pending.n) {
    /* a sticky error of a kernel still queued shows at the next launch */
    char which[400];
    snprintf(before, sizeof before, "; or earlier, by %s, still running when it was launched",
             kiln_pending_describe(&d->pending, which, sizeof which));
    kiln_pending_clear(&d->pending);
  }
  pthread_mutex_unlock(&launch_lock);
  if (late) return -1;
  if (r)
    return kiln_set_error("cuda: launching kernel '%s' (grid %lld x %lld x %lld, block %lld x %lld x %lld) failed: "
                          "%s%s",
                          ki->name, (long long)ext[0], (long long)ext[1], (long long)ext[2], (long long)ext[3],
                          (long long)ext[4], (long long)ext[5], cu_err(r), before);
  return 0;
}

const KilnDeviceAPI kiln_cuda_api = {"cuda", cuda_alloc, cuda_free, cuda_copy, cuda_sync, cuda_exists,
                                     cuda_module_load, cuda_launch, cuda_unload};
