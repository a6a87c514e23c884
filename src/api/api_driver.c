/*
 * api_driver.c - driver.*: lowering and building, and reading lowered
 * functions back; plus runtime.module_export, the one module operation
 * that needs the file system beyond the runtime's loader.
 *
 * Targets are parsed by src/target (api_target): a string or a Target
 * object; one Kiln cannot build for is an error that lists the kinds it
 * can.  A GPU target (cuda, opencl) lowers into host code and kernels,
 * whose device blobs the build adds (src/codegen/build.c).
 */
#include "api.h"

#include <stdlib.h>
#include <string.h>

/* check_target(target) -> the canonical target string */
API_FUNC(drv_check_target) {
  API_CALL;
  const Target *t;
  if (api_argc(&c, 1, 1) || !(t = api_target(&c, 0))) return -1;
  return api_ret_str(ret, ret_code, t->str);
}

/* lower(schedule, name, simple_mode, args...) */
API_FUNC(drv_lower) {
  API_CALL;
  Schedule *s;
  const char *name;
  int n;
  int64_t simple;
  Tensor **targs;
  LowerOptions opt = {0};
  if (api_argc(&c, 3, -1) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE)) || !(name = api_str(&c, 1)) ||
      api_int(&c, 2, &simple) || !(targs = (Tensor **)api_obj_list(&c, 3, KOBJ_TENSOR, &n)))
    return -1;
  (void)simple; /* TVM's flag, accepted: Kiln's lowering has one mode */
  if (n == 0) return api_error(&c, "no argument tensors given");
  return api_ret_obj(&c, ret, ret_code, kiln_lower(s, n, targs, name, &opt));
}

/* lower_target(schedule, name, simple_mode, target, args...): lowering for
 * a target; a GPU target splits host code from its kernels. */
API_FUNC(drv_lower_target) {
  API_CALL;
  Schedule *s;
  const char *name;
  const Target *target;
  int n;
  int64_t simple;
  Tensor **targs;
  LowerOptions opt;
  if (api_argc(&c, 4, -1) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE)) || !(name = api_str(&c, 1)) ||
      api_int(&c, 2, &simple) || !(target = api_target(&c, 3)) ||
      !(targs = (Tensor **)api_obj_list(&c, 4, KOBJ_TENSOR, &n)))
    return -1;
  target_lower_options(target, &opt);
  (void)simple; /* TVM's flag, accepted: Kiln's lowering has one mode */
  if (n == 0) return api_error(&c, "no argument tensors given");
  return api_ret_obj(&c, ret, ret_code, kiln_lower(s, n, targs, name, &opt));
}

/* nvrtc_compile(source, arch, verbose) -> the compiler's log (the PTX is
 * checked, not returned); an error when NVRTC is missing or the source
 * does not compile. */
API_FUNC(drv_nvrtc_compile) {
  API_CALL;
  const char *src, *arch;
  int64_t verbose;
  if (api_argc(&c, 3, 3) || !(src = api_str(&c, 0)) || !(arch = api_str(&c, 1)) || api_int(&c, 2, &verbose))
    return -1;
  char *ptx = NULL, *log = NULL;
  if (kiln_nvrtc_compile(src, arch, verbose != 0, &ptx, &log)) return api_fail(&c);
  const char *r = kstrdup(log ? log : "");
  free(ptx);
  free(log);
  return api_ret_str(ret, ret_code, r);
}

/* The device source of a module's GPU kernels ("" for a CPU module). */
API_FUNC(drv_device_source) {
  API_CALL;
  if (api_argc(&c, 1, 1)) return -1;
  if (c.codes[0] != KILN_MODULE || !c.args[0].v_handle) return api_error(&c, "argument 0 (module) must be a module");
  const void *data;
  size_t size;
  if (kiln_module_get_blob(c.args[0].v_handle, "kiln_device_source", &data, &size)) return api_fail(&c);
  return api_ret_str(ret, ret_code, data ? kstrndup(data, size) : "");
}

/* build(schedule, name, target, args...) -> module */
API_FUNC(drv_build) {
  API_CALL;
  Schedule *s;
  const char *name;
  const Target *target;
  int n;
  Tensor **targs;
  if (api_argc(&c, 3, -1) || !(s = api_obj(&c, 0, KOBJ_SCHEDULE)) || !(name = api_str(&c, 1)) ||
      !(target = api_target(&c, 2)) || !(targs = (Tensor **)api_obj_list(&c, 3, KOBJ_TENSOR, &n)))
    return -1;
  if (n == 0) return api_error(&c, "no argument tensors given");
  LowerOptions lo;
  target_lower_options(target, &lo); /* a GPU target splits host code from its kernels */
  LoweredFunc *f = kiln_lower(s, n, targs, name, &lo);
  KilnModule *m = f ? target_build(target, &f, 1, NULL) : NULL;
  if (!m) return api_fail(&c);
  ret->v_handle = m;
  *ret_code = KILN_MODULE;
  return 0;
}

/* The lowered functions from argument `first` on, names all distinct. */
static LoweredFunc **func_list(const ApiCall *c, int first, int *n) {
  LoweredFunc **fs = (LoweredFunc **)api_obj_list(c, first, KOBJ_FUNC, n);
  if (!fs) return NULL;
  if (*n == 0) return api_error(c, "no lowered functions given"), NULL;
  for (int i = 0; i < *n; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(fs[i]->name, fs[j]->name))
        return api_error(c, "two functions are named '%s'", fs[i]->name), NULL;
  return fs;
}

/* build_funcs(funcs...) -> module (for the CPU; check a target name
 * first with driver.check_target) */
API_FUNC(drv_build_funcs) {
  API_CALL;
  int n;
  LoweredFunc **fs;
  if (api_argc(&c, 1, -1) || !(fs = func_list(&c, 0, &n))) return -1;
  KilnModule *m = kiln_build_funcs(fs, n, 0, NULL, NULL);
  if (!m) return api_fail(&c);
  ret->v_handle = m;
  *ret_code = KILN_MODULE;
  return 0;
}

API_FUNC(drv_codegen_c) {
  API_CALL;
  int n;
  LoweredFunc **fs;
  if (api_argc(&c, 1, -1) || !(fs = func_list(&c, 0, &n))) return -1;
  char *src = codegen_c(fs, n, 0, NULL);
  if (!src) return api_fail(&c);
  const char *s = kstrdup(src);
  free(src);
  return api_ret_str(ret, ret_code, s);
}

static LoweredFunc *func0(const ApiCall *c) {
  if (api_argc(c, 1, 1)) return NULL;
  return api_obj(c, 0, KOBJ_FUNC);
}

API_FUNC(drv_func_name) {
  API_CALL;
  LoweredFunc *f = func0(&c);
  return f ? api_ret_str(ret, ret_code, f->name) : -1;
}

API_FUNC(drv_func_args) {
  API_CALL;
  LoweredFunc *f = func0(&c);
  return f ? api_ret_obj(&c, ret, ret_code, karray_new(f->nargs, (void **)f->args)) : -1;
}

API_FUNC(drv_func_body) {
  API_CALL;
  LoweredFunc *f = func0(&c);
  return f ? api_ret_obj(&c, ret, ret_code, f->body) : -1;
}

/* The notes passes left (what they could not do), one a line. */
API_FUNC(drv_func_notes) {
  API_CALL;
  LoweredFunc *f = func0(&c);
  if (!f) return -1;
  StrBuf sb = {0};
  for (int i = 0; i < f->notes.len; i++) sb_printf(&sb, "%s%s", i ? "\n" : "", (const char *)f->notes.data[i]);
  const char *s = kstrdup(sb.data ? sb.data : "");
  sb_free(&sb);
  return api_ret_str(ret, ret_code, s);
}

/* ---- runtime extras ---- */

/* module_export(module, path): copy the module's shared object to path, so
 * it outlives the process's temporary build directory. */
API_FUNC(rt_module_export) {
  API_CALL;
  const char *path;
  if (api_argc(&c, 2, 2)) return -1;
  if (c.codes[0] != KILN_MODULE || !c.args[0].v_handle)
    return api_error(&c, "argument 0 (module) must be a module");
  if (!(path = api_str(&c, 1))) return -1;
  const char *from = kiln_module_path(c.args[0].v_handle);
  if (!from) return api_error(&c, "the module has no file");
  size_t len;
  char *data = kiln_read_file(from, &len);
  if (!data) return api_fail(&c);
  int rc = kiln_write_file(path, data, len);
  free(data);
  if (rc) return api_fail(&c);
  return api_ret_null(ret, ret_code);
}

const ApiEntry api_driver_funcs[] = {
    {"driver.check_target", drv_check_target, "target"},
    {"driver.lower", drv_lower, "schedule, name, simple_mode, args..."},
    {"driver.lower_target", drv_lower_target, "schedule, name, simple_mode, target, args..."},
    {"driver.device_source", drv_device_source, "module"},
    {"driver.nvrtc_compile", drv_nvrtc_compile, "source, arch, verbose"},
    {"driver.build", drv_build, "schedule, name, target, args..."},
    {"driver.build_funcs", drv_build_funcs, "funcs..."},
    {"driver.codegen_c", drv_codegen_c, "funcs..."},
    {"driver.FuncName", drv_func_name, "func"},
    {"driver.FuncArgs", drv_func_args, "func"},
    {"driver.FuncBody", drv_func_body, "func"},
    {"driver.FuncNotes", drv_func_notes, "func"},
    {"runtime.module_export", rt_module_export, "module, path"},
    {NULL, NULL, NULL},
};
