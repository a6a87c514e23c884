/*
 * opencl.c - the OpenCL device API: memory, copies and kernels through the
 * ICD loader, opened at run time.
 *
 * libOpenCL.so.1 (or $KILN_OPENCL_LIBRARY) is dlopen'ed on first use, so
 * Kiln links no GPU library; the few entry points used are declared here
 * with OpenCL 1.2's types.  Device ids number every device of every
 * platform in the loader's order (POCL's CPU device on a machine without
 * a GPU).  Each device gets one context and one in-order queue; a buffer
 * is a cl_mem, and a DLTensor's data on an OpenCL device is that cl_mem.
 * A module's kernels are built from their OpenCL C source for a device on
 * its first launch; the build log is the error when the build fails.
 * Kernel objects are shared, so setting arguments and enqueueing happen
 * under one lock.  Copies are blocking, so memory is ready when a copy
 * returns; kernels run in queue order and a copy back waits for them.
 */
#include "runtime_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_MEM_READ_WRITE 1u
#define CL_TRUE 1u
#define CL_PLATFORM_NAME 0x0902
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_NAME 0x102B
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_EVENT_COMMAND_EXECUTION_STATUS 0x11D3

#define CL_FUNCS(X)                                                                                \
  X(clGetPlatformIDs, cl_int, (cl_uint, cl_platform_id *, cl_uint *))                              \
  X(clGetDeviceIDs, cl_int, (cl_platform_id, cl_ulong, cl_uint, cl_device_id *, cl_uint *))        \
  X(clGetDeviceInfo, cl_int, (cl_device_id, cl_uint, size_t, void *, size_t *))                    \
  X(clCreateContext, cl_context,                                                                   \
    (const intptr_t *, cl_uint, const cl_device_id *, void (*)(const char *, const void *, size_t, void *), \
     void *, cl_int *))                                                                            \
  X(clCreateCommandQueue, cl_command_queue, (cl_context, cl_device_id, cl_ulong, cl_int *))       \
  X(clCreateBuffer, cl_mem, (cl_context, cl_ulong, size_t, void *, cl_int *))                      \
  X(clReleaseMemObject, cl_int, (cl_mem))                                                          \
  X(clEnqueueWriteBuffer, cl_int,                                                                  \
    (cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *)) \
  X(clEnqueueReadBuffer, cl_int,                                                                   \
    (cl_command_queue, cl_mem, cl_uint, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *)) \
  X(clEnqueueCopyBuffer, cl_int,                                                                   \
    (cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *)) \
  X(clCreateProgramWithSource, cl_program, (cl_context, cl_uint, const char **, const size_t *, cl_int *)) \
  X(clBuildProgram, cl_int,                                                                        \
    (cl_program, cl_uint, const cl_device_id *, const char *, void (*)(cl_program, void *), void *)) \
  X(clGetProgramBuildInfo, cl_int, (cl_program, cl_device_id, cl_uint, size_t, void *, size_t *))  \
  X(clCreateKernel, cl_kernel, (cl_program, const char *, cl_int *))                               \
  X(clSetKernelArg, cl_int, (cl_kernel, cl_uint, size_t, const void *))                            \
  X(clEnqueueNDRangeKernel, cl_int,                                                                \
    (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint, \
     const cl_event *, cl_event *))                                                                \
  X(clFinish, cl_int, (cl_command_queue))                                                          \
  X(clReleaseKernel, cl_int, (cl_kernel))                                                          \
  X(clReleaseProgram, cl_int, (cl_program))                                                        \
  X(clGetEventInfo, cl_int, (cl_event, cl_uint, size_t, void *, size_t *))                         \
  X(clReleaseEvent, cl_int, (cl_event))

static struct {
#define X(name, ret, args) ret(*name) args;
  CL_FUNCS(X)
#undef X
} cl;

typedef struct ClDevice {
  cl_device_id id;
  cl_context ctx;
  cl_command_queue queue;
  char name[128];
  size_t max_group;       /* work-items per work-group */
  cl_ulong local_mem;     /* bytes of __local memory */
  cl_ulong max_alloc;     /* largest buffer */
  /* launches not yet known to have finished (under launch_lock): their
   * events and kernels' names, checked at the next copy or synchronize */
  struct ClPending {
    cl_event ev;
    char *name;
  } *pending;
  int npending, cap_pending;
} ClDevice;

static ClDevice cl_devs[KILN_MAX_DEVICES];

static const char *cl_err(cl_int e) {
  switch (e) {
  case -1: return "CL_DEVICE_NOT_FOUND";
  case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
  case -5: return "CL_OUT_OF_RESOURCES";
  case -6: return "CL_OUT_OF_HOST_MEMORY";
  case -11: return "CL_BUILD_PROGRAM_FAILURE";
  case -30: return "CL_INVALID_VALUE";
  case -38: return "CL_INVALID_MEM_OBJECT";
  case -46: return "CL_INVALID_KERNEL_NAME";
  case -48: return "CL_INVALID_KERNEL";
  case -51: return "CL_INVALID_ARG_SIZE";
  case -52: return "CL_INVALID_KERNEL_ARGS";
  case -54: return "CL_INVALID_WORK_GROUP_SIZE";
  case -61: return "CL_INVALID_BUFFER_SIZE";
  case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
  default: return "an OpenCL error";
  }
}

/* The driver's open hook: the loader's entry points, then a context and
 * a queue for every device of every platform. */
static int cl_open(void *dl, const char *lib, char *why, size_t why_size) {
#define X(name, ret, args)                                                                         \
  if (!(cl.name = (ret(*) args)dlsym(dl, #name))) {                                                \
    snprintf(why, why_size, "opencl: %s lacks %s; it is not an OpenCL 1.2 library", lib, #name);   \
    return -1;                                                                                     \
  }
  CL_FUNCS(X)
#undef X
  cl_platform_id plats[8];
  cl_uint np = 0;
  int ndev = 0;
  cl_int e = cl.clGetPlatformIDs(8, plats, &np);
  if (e != CL_SUCCESS || np == 0) {
    snprintf(why, why_size,
             "opencl: no OpenCL platform found (%s); the loader found no driver: install one "
             "(e.g. pocl-opencl-icd) or check OCL_ICD_VENDORS",
             e != CL_SUCCESS ? cl_err(e) : "0 platforms");
    return -1;
  }
  for (cl_uint p = 0; p < np && p < 8; p++) {
    cl_device_id ids[KILN_MAX_DEVICES];
    cl_uint nd = 0;
    if (cl.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, KILN_MAX_DEVICES, ids, &nd) != CL_SUCCESS) continue;
    for (cl_uint d = 0; d < nd && ndev < KILN_MAX_DEVICES; d++) {
      ClDevice *dv = &cl_devs[ndev];
      dv->id = ids[d];
      cl.clGetDeviceInfo(ids[d], CL_DEVICE_NAME, sizeof dv->name - 1, dv->name, NULL);
      cl.clGetDeviceInfo(ids[d], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dv->max_group, &dv->max_group, NULL);
      cl.clGetDeviceInfo(ids[d], CL_DEVICE_LOCAL_MEM_SIZE, sizeof dv->local_mem, &dv->local_mem, NULL);
      cl.clGetDeviceInfo(ids[d], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof dv->max_alloc, &dv->max_alloc, NULL);
      dv->ctx = cl.clCreateContext(NULL, 1, &ids[d], NULL, NULL, &e);
      if (!dv->ctx || e != CL_SUCCESS) continue;
      dv->queue = cl.clCreateCommandQueue(dv->ctx, ids[d], 0, &e);
      if (!dv->queue || e != CL_SUCCESS) continue;
      ndev++;
    }
  }
  if (!ndev) {
    snprintf(why, why_size, "opencl: the OpenCL platforms have no usable device");
    return -1;
  }
  return ndev;
}

static const char *cl_name(int i) { return cl_devs[i].name; }

static KilnDriver cl_driver =
    KILN_DRIVER_INIT("opencl", "OpenCL", "OpenCL library",
                     "install an OpenCL loader and driver (Debian: ocl-icd-libopencl1 and pocl-opencl-icd, or "
                     "a GPU vendor's driver)",
                     "KILN_OPENCL_LIBRARY", "libOpenCL.so.1", cl_open, cl_name);

static ClDevice *cl_device(int dev_id, bool quiet) {
  return kiln_driver_device(&cl_driver, dev_id, quiet) ? NULL : &cl_devs[dev_id];
}

static void *cl_alloc(DLDevice dev, size_t nbytes, size_t align) {
  (void)align;
  ClDevice *d = cl_device(dev.device_id, false);
  if (!d) return NULL;
  if (nbytes == 0) nbytes = 1;
  if (d->max_alloc && nbytes > d->max_alloc) {
    kiln_set_error("opencl: out of device memory: cannot allocate %zu bytes on device %d (%s); its "
                   "largest buffer is %llu bytes",
                   nbytes, dev.device_id, d->name, (unsigned long long)d->max_alloc);
    return NULL;
  }
  cl_int e = 0;
  cl_mem m = cl.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, nbytes, NULL, &e);
  if (!m || e != CL_SUCCESS) {
    kiln_set_error("opencl: out of device memory: cannot allocate %zu bytes on device %d (%s): %s", nbytes,
                   dev.device_id, d->name, cl_err(e));
    return NULL;
  }
  return m;
}

static void cl_free(DLDevice dev, void *p) {
  (void)dev;
  if (p && cl.clReleaseMemObject) cl.clReleaseMemObject((cl_mem)p);
}

/* Launches do not wait for their kernels (the queue is in order): a copy
 * or a synchronize waits for everything queued, then checks each launch's
 * event, so a kernel that failed is reported by its name there.
 * KILN_OPENCL_FAIL_KERNEL=<name> makes that kernel's check fail (how the
 * tests reach this path: POCL runs every valid kernel to completion). */
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static int drain(ClDevice *d, int dev_id, const char *at) {
  cl_int e = cl.clFinish(d->queue);
  const char *inject = getenv("KILN_OPENCL_FAIL_KERNEL");
  int rc = 0;
  for (int i = 0; i < d->npending; i++) {
    struct ClPending *p = &d->pending[i];
    cl_int st = 0, qe = cl.clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (qe == CL_SUCCESS && inject && !strcmp(inject, p->name)) st = -5; /* CL_OUT_OF_RESOURCES */
    if (!rc && (qe != CL_SUCCESS || st < 0))
      rc = kiln_set_error("opencl: kernel '%s' failed on device %d (%s): %s (found at %s: kernels run "
                          "asynchronously)",
                          p->name, dev_id, d->name, cl_err(qe != CL_SUCCESS ? qe : st), at);
    cl.clReleaseEvent(p->ev);
    free(p->name);
  }
  d->npending = 0;
  if (!rc && e != CL_SUCCESS) rc = kiln_set_error("opencl: waiting for device %d failed: %s", dev_id, cl_err(e));
  return rc;
}

static int cl_copy(const void *from, DLDevice fd, void *to, DLDevice td, size_t nbytes) {
  if (!nbytes) return 0;
  bool fdev = fd.device_type == kDLOpenCL, tdev = td.device_type == kDLOpenCL;
  int dev_id = fdev ? fd.device_id : td.device_id;
  ClDevice *d = cl_device(dev_id, false);
  if (!d) return -1;
  pthread_mutex_lock(&launch_lock);
  int rc = drain(d, dev_id, "a copy");
  pthread_mutex_unlock(&launch_lock);
  if (rc) return -1;
  cl_int e;
  if (fdev && tdev) {
    if (fd.device_id != td.device_id)
      return kiln_set_error("opencl: copies between devices %d and %d are not supported", fd.device_id, td.device_id);
    e = cl.clEnqueueCopyBuffer(d->queue, (cl_mem)from, (cl_mem)to, 0, 0, nbytes, 0, NULL, NULL);
    if (e == CL_SUCCESS) e = cl.clFinish(d->queue);
  } else if (fdev) {
    e = cl.clEnqueueReadBuffer(d->queue, (cl_mem)from, CL_TRUE, 0, nbytes, to, 0, NULL, NULL);
  } else {
    e = cl.clEnqueueWriteBuffer(d->queue, (cl_mem)to, CL_TRUE, 0, nbytes, from, 0, NULL, NULL);
  }
  if (e != CL_SUCCESS) return kiln_set_error("opencl: copying %zu bytes failed: %s", nbytes, cl_err(e));
  return 0;
}

static int cl_sync(DLDevice dev) {
  ClDevice *d = cl_device(dev.device_id, false);
  if (!d) return -1;
  pthread_mutex_lock(&launch_lock);
  int rc = drain(d, dev.device_id, "a synchronize");
  pthread_mutex_unlock(&launch_lock);
  return rc;
}

static int cl_exists(DLDevice dev) { return cl_device(dev.device_id, true) != NULL; }

typedef struct ClLoaded {
  cl_program prog;
  int nkernels;
  cl_kernel *kernels;
} ClLoaded;

static void cl_unload(void *p) {
  ClLoaded *l = p;
  if (!l) return;
  for (int i = 0; i < l->nkernels; i++)
    if (l->kernels[i]) cl.clReleaseKernel(l->kernels[i]);
  if (l->prog) cl.clReleaseProgram(l->prog);
  free(l->kernels);
  free(l);
}

static void *cl_module_load(const KilnDeviceModule *m, int dev_id) {
  ClDevice *d = cl_device(dev_id, false);
  if (!d) return NULL;
  cl_int e = 0;
  const char *src = m->source;
  ClLoaded *l = xcalloc(1, sizeof *l);
  l->prog = cl.clCreateProgramWithSource(d->ctx, 1, &src, NULL, &e);
  if (!l->prog || e != CL_SUCCESS) {
    kiln_set_error("opencl: cannot create the program of '%s': %s", m->path, cl_err(e));
    cl_unload(l);
    return NULL;
  }
  e = cl.clBuildProgram(l->prog, 1, &d->id, "", NULL, NULL);
  if (e != CL_SUCCESS) {
    size_t n = 0;
    cl.clGetProgramBuildInfo(l->prog, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = xcalloc(n + 1, 1);
    cl.clGetProgramBuildInfo(l->prog, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    kiln_set_error("opencl: building the kernels of '%s' for %s failed (%s):\n%.2000s", m->path, d->name,
                   cl_err(e), log);
    free(log);
    cl_unload(l);
    return NULL;
  }
  l->nkernels = m->num_kernels;
  l->kernels = xcalloc((size_t)(m->num_kernels > 0 ? m->num_kernels : 1), sizeof(cl_kernel));
  for (int i = 0; i < m->num_kernels; i++) {
    l->kernels[i] = cl.clCreateKernel(l->prog, m->kernels[i].name, &e);
    if (!l->kernels[i] || e != CL_SUCCESS) {
      kiln_set_error("opencl: '%s' has no kernel '%s': %s", m->path, m->kernels[i].name, cl_err(e));
      cl_unload(l);
      return NULL;
    }
  }
  return l;
}

static int cl_launch(const KilnDeviceModule *m, void *loaded, int dev_id, int k, const int64_t *ext,
                     const KilnValue *args) {
  ClLoaded *l = loaded;
  ClDevice *d = &cl_devs[dev_id];
  const KilnDeviceKernelInfo *ki = &m->kernels[k];
  size_t local[3], global[3];
  for (int i = 0; i < 3; i++) {
    local[i] = (size_t)ext[3 + i];
    global[i] = (size_t)(ext[i] * ext[3 + i]);
  }
  size_t threads = local[0] * local[1] * local[2];
  if (threads > d->max_group)
    return kiln_set_error("opencl: kernel '%s' launches %zu threads per block (%zu x %zu x %zu); device %d "
                          "(%s) allows %zu; bind smaller split factors to threadIdx",
                          ki->name, threads, local[0], local[1], local[2], dev_id, d->name, d->max_group);
  pthread_mutex_lock(&launch_lock);
  cl_int e = CL_SUCCESS;
  for (int i = 0; i < ki->nparams && e == CL_SUCCESS; i++) {
    DLDataType t = ki->ptype[i];
    union {
      cl_mem mem;
      int8_t i8;
      int16_t i16;
      int32_t i32;
      int64_t i64;
      float f32;
      double f64;
    } v;
    size_t size;
    if (t.code == kDLOpaqueHandle) {
      v.mem = (cl_mem)args[i].v_handle;
      size = sizeof v.mem;
    } else if (t.code == kDLFloat) {
      if (t.bits == 32) v.f32 = (float)args[i].v_float64, size = 4;
      else v.f64 = args[i].v_float64, size = 8;
    } else if (t.bits == 1 || t.bits == 32) {
      v.i32 = (int32_t)args[i].v_int64, size = 4; /* bool passes as int */
    } else if (t.bits == 8) {
      v.i8 = (int8_t)args[i].v_int64, size = 1;
    } else if (t.bits == 16) {
      v.i16 = (int16_t)args[i].v_int64, size = 2;
    } else {
      v.i64 = args[i].v_int64, size = 8;
    }
    e = cl.clSetKernelArg(l->kernels[k], (cl_uint)i, size, &v);
  }
  cl_event ev = NULL;
  if (e == CL_SUCCESS) e = cl.clEnqueueNDRangeKernel(d->queue, l->kernels[k], 3, NULL, global, local, 0, NULL, &ev);
  int late = 0;
  if (e == CL_SUCCESS && ev) { /* checked at the next copy or synchronize */
    if (d->npending == d->cap_pending) {
      d->cap_pending = d->cap_pending ? 2 * d->cap_pending : 64;
      d->pending = xrealloc(d->pending, (size_t)d->cap_pending * sizeof *d->pending);
    }
    d->pending[d->npending++] = (struct ClPending){ev, xstrdup(ki->name)};
    if (d->npending >= 4096) late = drain(d, dev_id, "a launch (4096 kernels were waiting)");
  }
  pthread_mutex_unlock(&launch_lock);
  if (late) return -1;
  if (e != CL_SUCCESS)
    return kiln_set_error("opencl: launching kernel '%s' (grid %lld x %lld x %lld, block %lld x %lld x %lld) "
                          "failed: %s",
                          ki->name, (long long)ext[0], (long long)ext[1], (long long)ext[2], (long long)ext[3],
                          (long long)ext[4], (long long)ext[5], cl_err(e));
  return 0;
}

const KilnDeviceAPI kiln_opencl_api = {"opencl", cl_alloc, cl_free, cl_copy, cl_sync, cl_exists,
                                       cl_module_load, cl_launch, cl_unload};
