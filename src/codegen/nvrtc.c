/*
 * nvrtc.c - CUDA C to PTX at build time with NVRTC, opened at run time.
 *
 * libnvrtc is looked for as $KILN_NVRTC, then by its soname on the library
 * path, then under $CUDA_HOME/lib64 and /usr/local/cuda/lib64: a machine
 * without the toolkit builds CPU code as before and gets a clear error
 * only when it builds for CUDA.  The PTX is what a CUDA module embeds; the
 * compiler's log (warnings, and with `verbose` ptxas's register and spill
 * counts from a cubin compile of the same source) is handed back so tests
 * can bound them.
 */
#include "codegen.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
  nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
  nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*log_size)(nvrtcProgram, size_t *);
  nvrtcResult (*log)(nvrtcProgram, char *);
  nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
  nvrtcResult (*ptx)(nvrtcProgram, char *);
  nvrtcResult (*destroy)(nvrtcProgram *);
  const char *(*err)(nvrtcResult);
  nvrtcResult (*version)(int *, int *);
} nv;

static pthread_mutex_t nv_lock = PTHREAD_MUTEX_INITIALIZER;
static int nv_state;
static char nv_why[512];

static void *open_nvrtc(void) {
  const char *env = getenv("KILN_NVRTC");
  if (env && *env) return dlopen(env, RTLD_NOW | RTLD_LOCAL);
  static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (dl) return dl;
  }
  const char *home = getenv("CUDA_HOME");
  const char *dirs[2] = {home, "/usr/local/cuda"};
  for (int i = 0; i < 2; i++) {
    if (!dirs[i] || !*dirs[i]) continue;
    void *dl = dlopen(kfmt("%s/lib64/libnvrtc.so", dirs[i]), RTLD_NOW | RTLD_LOCAL);
    if (dl) return dl;
  }
  return NULL;
}

static int nv_init(void) {
  pthread_mutex_lock(&nv_lock);
  if (!nv_state) {
    void *dl = open_nvrtc();
    const char *env = getenv("KILN_NVRTC");
    if (!dl) {
      snprintf(nv_why, sizeof nv_why,
               "cuda: NVRTC (libnvrtc.so) was not found%s%s; building for CUDA compiles kernels to PTX "
               "with it: install the CUDA toolkit, or set KILN_NVRTC or CUDA_HOME",
               env && *env ? " at KILN_NVRTC=" : "", env && *env ? env : "");
      nv_state = -1;
    } else {
      nv_state = 1;
#define SYM(f, s) if (!(*(void **)&nv.f = dlsym(dl, s))) nv_state = -1;
      SYM(create, "nvrtcCreateProgram")
      SYM(compile, "nvrtcCompileProgram")
      SYM(log_size, "nvrtcGetProgramLogSize")
      SYM(log, "nvrtcGetProgramLog")
      SYM(ptx_size, "nvrtcGetPTXSize")
      SYM(ptx, "nvrtcGetPTX")
      SYM(destroy, "nvrtcDestroyProgram")
      SYM(err, "nvrtcGetErrorString")
      SYM(version, "nvrtcVersion")
#undef SYM
      if (nv_state < 0) snprintf(nv_why, sizeof nv_why, "cuda: the NVRTC library found lacks an entry point");
    }
  }
  int st = nv_state;
  pthread_mutex_unlock(&nv_lock);
  if (st < 0) kiln_set_error("%s", nv_why);
  return st < 0 ? -1 : 0;
}

bool kiln_nvrtc_available(void) {
  if (nv_init()) {
    kiln_clear_error();
    return false;
  }
  return true;
}

/* Compute capability digits of "sm_90" / "sm_86" ("90"), or NULL. */
static const char *arch_digits(const char *arch) {
  if (!arch || strncmp(arch, "sm_", 3) || !arch[3]) return NULL;
  for (const char *p = arch + 3; *p; p++)
    if ((*p < '0' || *p > '9') && !(*p == 'a' && !p[1])) return NULL;
  return arch + 3;
}

int kiln_nvrtc_compile(const char *source, const char *arch, bool verbose, char **ptx, char **log) {
  *ptx = NULL;
  if (log) *log = NULL;
  const char *digits = arch_digits(arch ? arch : "sm_90");
  if (!digits) return kiln_set_error("cuda: -arch=%s is not an architecture like sm_90", arch);
  if (nv_init()) return -1;
  StrBuf all = {0};
  for (int pass = 0; pass < (verbose ? 2 : 1); pass++) {
    nvrtcProgram prog;
    nvrtcResult r = nv.create(&prog, source, "kiln_kernels.cu", 0, NULL, NULL);
    if (r) {
      sb_free(&all);
      return kiln_set_error("cuda: nvrtcCreateProgram failed: %s", nv.err(r));
    }
    /* pass 0: PTX for the virtual architecture (what the module embeds);
     * pass 1: a cubin for the real one, for ptxas's resource report */
    const char *opts[3] = {pass == 0 ? kfmt("--gpu-architecture=compute_%s", digits)
                                     : kfmt("--gpu-architecture=sm_%s", digits),
                           "--ptxas-options=-v", NULL};
    r = nv.compile(prog, pass == 0 ? 1 : 2, opts);
    size_t n = 0;
    nv.log_size(prog, &n);
    char *text = xcalloc(n + 1, 1);
    if (n) nv.log(prog, text);
    sb_puts(&all, text);
    if (r) {
      kiln_set_error("cuda: NVRTC could not compile the kernels for %s (%s):\n%.3000s", arch ? arch : "sm_90",
                     nv.err(r), text);
      free(text);
      nv.destroy(&prog);
      sb_free(&all);
      return -1;
    }
    free(text);
    if (pass == 0) {
      nv.ptx_size(prog, &n);
      *ptx = xcalloc(n + 1, 1);
      nv.ptx(prog, *ptx);
    }
    nv.destroy(&prog);
  }
  if (log)
    *log = sb_steal(&all);
  else
    sb_free(&all);
  return 0;
}
