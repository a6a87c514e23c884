/*
 * build.c - lower, generate, compile and load in one call.
 *
 * The shared object goes to a private temporary directory that lives until
 * the process exits (a loaded module can still be exported by copying its
 * file); an exit handler removes all of them.
 */
#include "codegen.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static pthread_mutex_t tmp_lock = PTHREAD_MUTEX_INITIALIZER;
static PtrVec tmp_dirs;
static int atexit_set;

static void remove_tmp_dirs(void) {
  pthread_mutex_lock(&tmp_lock);
  for (int i = 0; i < tmp_dirs.len; i++) {
    kiln_rmtree(tmp_dirs.data[i]);
    free(tmp_dirs.data[i]);
  }
  pv_free(&tmp_dirs);
  pthread_mutex_unlock(&tmp_lock);
}

static void remember_tmp_dir(char *dir) {
  pthread_mutex_lock(&tmp_lock);
  if (!atexit_set) {
    atexit(remove_tmp_dirs);
    atexit_set = 1;
  }
  pv_push(&tmp_dirs, dir);
  pthread_mutex_unlock(&tmp_lock);
}

char *kiln_build_tmp_dir(const char *prefix) {
  char *dir = kiln_mkdtemp(prefix);
  if (dir) remember_tmp_dir(dir);
  return dir;
}

/* The lowered IR of every function, embedded so `kiln inspect --ir` can
 * show what a module runs. */
static KBlob lowered_ir_blob(LoweredFunc **funcs, int nfuncs) {
  StrBuf sb = {0};
  for (int i = 0; i < nfuncs; i++) {
    sb_printf(&sb, "// function %s(", funcs[i]->name);
    for (int a = 0; a < funcs[i]->nargs; a++) sb_printf(&sb, "%s%s", a ? ", " : "", funcs[i]->args[a]->name);
    sb_puts(&sb, ")\n");
    sb_puts(&sb, kiln_lowered_str(funcs[i]));
    for (int n = 0; n < funcs[i]->notes.len; n++) sb_printf(&sb, "// note: %s\n", (const char *)funcs[i]->notes.data[n]);
  }
  char *text = sb_steal(&sb);
  KBlob b = {"lowered_ir", kstrdup(text), strlen(text)};
  free(text);
  return b;
}

static KBlob text_blob(const char *name, char *text) {
  KBlob b = {name, kstrdup(text), strlen(text)};
  free(text);
  return b;
}

int kiln_device_blobs(LoweredFunc **funcs, int nfuncs, const CompileOptions *opt, KBlob *blobs, int *nblobs) {
  int dev = kDLCPU;
  for (int i = 0; i < nfuncs; i++) {
    if (funcs[i]->device_type == kDLCPU) continue;
    if (dev != kDLCPU && funcs[i]->device_type != dev)
      return kiln_set_error("build: function '%s' is for another device than the others; build each "
                            "target into its own module",
                            funcs[i]->name);
    dev = funcs[i]->device_type;
  }
  if (dev == kDLCPU) return 0;
  const char *arch = "sm_90";
  for (int i = 0; i < nfuncs; i++)
    if (funcs[i]->gpu_arch) arch = funcs[i]->gpu_arch;
  GpuDialect d = dev == kDLCUDA ? GPU_CUDA : GPU_OPENCL;
  char *src = codegen_gpu(funcs, nfuncs, d);
  if (!src) return -1;
  if (d == GPU_CUDA) {
    char *ptx = NULL;
    if (kiln_nvrtc_compile(src, arch, false, &ptx, NULL)) {
      free(src);
      return -1;
    }
    blobs[(*nblobs)++] = text_blob("kiln_device_ptx", ptx);
  }
  if (opt && opt->keep_dir) {
    mkdir(opt->keep_dir, 0755);
    if (kiln_write_file(kfmt("%s/kernels.%s", opt->keep_dir, d == GPU_CUDA ? "cu" : "cl"), src, strlen(src))) {
      free(src);
      return -1;
    }
  }
  blobs[(*nblobs)++] = text_blob("kiln_device_source", src);
  blobs[(*nblobs)++] = text_blob("kiln_device", codegen_gpu_meta(funcs, nfuncs, d));
  return 0;
}

KilnModule *kiln_build_funcs(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs,
                             const CompileOptions *opt) {
  return kiln_build_funcs_with(codegen_c_units, kiln_compile_c, funcs, nfuncs, nblobs, blobs, opt);
}

static KilnModule *build_units(CodegenFn codegen, CompileFn compile, LoweredFunc **funcs, int nfuncs, int nblobs,
                               const KBlob *blobs, int nunits, const CompileOptions *opt);

KilnModule *kiln_build_funcs_with(CodegenFn codegen, CompileFn compile, LoweredFunc **funcs, int nfuncs, int nblobs,
                                  const KBlob *blobs, const CompileOptions *opt) {
  return build_units(codegen, compile, funcs, nfuncs, nblobs, blobs, 1, opt);
}

KilnModule *kiln_build_funcs_units(LoweredFunc **funcs, int nfuncs, int nunits, const CompileOptions *opt) {
  if (nunits > nfuncs) nunits = nfuncs;
  if (nunits < 1) nunits = 1;
  return build_units(codegen_c_units, kiln_compile_c, funcs, nfuncs, 0, NULL, nunits, opt);
}

static KilnModule *build_units(CodegenFn codegen, CompileFn compile, LoweredFunc **funcs, int nfuncs, int nblobs,
                               const KBlob *blobs, int nunits, const CompileOptions *opt) {
  KilnModule *m = NULL;
  KBlob *all = KNEWN(KBlob, nblobs + 4);
  int nall = 0;
  bool has_ir = false;
  for (int i = 0; i < nblobs; i++) {
    all[nall++] = blobs[i];
    has_ir |= !strcmp(blobs[i].name, "lowered_ir");
  }
  for (int i = 0; i < nfuncs && !has_ir; i++)
    if (!funcs[i] || funcs[i]->okind != KOBJ_FUNC) return kiln_set_error("build: function %d is not a lowered function", i), NULL;
  if (!has_ir) all[nall++] = lowered_ir_blob(funcs, nfuncs);
  if (kiln_device_blobs(funcs, nfuncs, opt, all, &nall)) return NULL;
  blobs = all;
  nblobs = nall;
  char **units = codegen(funcs, nfuncs, nblobs, blobs, nunits);
  if (!units) return NULL;
  char *dir = kiln_mkdtemp("kiln-mod-");
  int rc = -1;
  if (dir) {
    remember_tmp_dir(dir);
    const char *so = kfmt("%s/module.so", dir);
    rc = compile(nunits, (const char **)units, nblobs, blobs, so, opt);
    if (!rc) rc = kiln_module_load(so, &m);
  }
  for (int u = 0; u < nunits; u++) free(units[u]);
  free(units);
  if (rc) return NULL;
  return m;
}

KilnModule *kiln_build(Schedule *s, int nargs, Tensor **args, const char *name,
                       const LowerOptions *lopt, const CompileOptions *copt) {
  LoweredFunc *f = kiln_lower(s, nargs, args, name, lopt);
  if (!f) return NULL;
  return kiln_build_funcs(&f, 1, 0, NULL, copt);
}
