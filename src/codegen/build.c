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
    sb_puts(&sb, ir_stmt_str(funcs[i]->body));
    for (int n = 0; n < funcs[i]->notes.len; n++) sb_printf(&sb, "// note: %s\n", (const char *)funcs[i]->notes.data[n]);
  }
  char *text = sb_steal(&sb);
  KBlob b = {"lowered_ir", kstrdup(text), strlen(text)};
  free(text);
  return b;
}

KilnModule *kiln_build_funcs(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs,
                             const CompileOptions *opt) {
  return kiln_build_funcs_with(codegen_c_units, kiln_compile_c, funcs, nfuncs, nblobs, blobs, opt);
}

KilnModule *kiln_build_funcs_with(CodegenFn codegen, CompileFn compile, LoweredFunc **funcs, int nfuncs, int nblobs,
                                  const KBlob *blobs, const CompileOptions *opt) {
  KilnModule *m = NULL;
  KBlob *all = KNEWN(KBlob, nblobs + 1);
  int nall = 0;
  bool has_ir = false;
  for (int i = 0; i < nblobs; i++) {
    all[nall++] = blobs[i];
    has_ir |= !strcmp(blobs[i].name, "lowered_ir");
  }
  for (int i = 0; i < nfuncs && !has_ir; i++)
    if (!funcs[i] || funcs[i]->okind != KOBJ_FUNC) return kiln_set_error("build: function %d is not a lowered function", i), NULL;
  if (!has_ir) all[nall++] = lowered_ir_blob(funcs, nfuncs);
  blobs = all;
  nblobs = nall;
  char **units = codegen(funcs, nfuncs, nblobs, blobs, 1);
  if (!units) return NULL;
  char *dir = kiln_mkdtemp("kiln-mod-");
  int rc = -1;
  if (dir) {
    remember_tmp_dir(dir);
    const char *so = kfmt("%s/module.so", dir);
    rc = compile(1, (const char **)units, nblobs, blobs, so, opt);
    if (!rc) rc = kiln_module_load(so, &m);
  }
  free(units[0]);
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
