/*
 * module.c - loading compiled Kiln modules (.so files) and calling their
 * kernels.
 *
 * kiln_module_load checks the file exists, dlopens it (RTLD_NOW |
 * RTLD_LOCAL, so two modules may both define `vadd`), checks the ABI magic
 * and the kernel and blob tables documented at the bottom of
 * include/kiln/runtime.h, and fills the module's two optional function
 * pointers: __kiln_set_last_error_ptr (so a kernel's message lands in the
 * calling thread's error) and __kiln_parallel_launch_ptr (Kiln's thread
 * pool), and, when the module has them, __kiln_workspace_alloc_ptr and
 * __kiln_workspace_free_ptr (scratch buffers reused from run to run); a module with GPU kernels also
 * gets its device module (device_module.c).  The tables stay in the .so; the module keeps only pointers to
 * them, plus a heap copy of the kernel names to hand out.
 *
 * A KilnModule is refcounted: each handle and each KilnFunction made from
 * one of its kernels holds a reference, and dlclose runs when the last goes,
 * so freeing a module while one of its functions lives keeps the code
 * loaded.
 *
 * Exports: kiln_module_load, _get_function, _list_functions, _get_blob,
 * _path, _free, _retain; internally the packed forms registered as
 * runtime.module_load and runtime.module_get_function.
 */
#include "runtime_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct KilnModule {
  atomic_int refs;                    /* handles plus functions made from it */
  void *dl;                           /* the dlopen handle */
  char *path;                         /* as given to kiln_module_load */
  int num_kernels;                    /* entries in the two tables below */
  const char **kernel_names;          /* heap copy of __kiln_kernel_names */
  KilnKernelFunc const *kernel_funcs; /* __kiln_kernel_funcs, in the .so */
  int num_blobs;                      /* entries in the three tables below */
  const char *const *blob_names;      /* __kiln_blob_names, in the .so */
  const unsigned char *const *blob_data; /* __kiln_blob_data, in the .so */
  const uint64_t *blob_sizes;         /* __kiln_blob_sizes, in the .so */
  KArena *arena;                      /* the params index */
  int has_params;                     /* a param_index blob was found */
  KilnParamIndex params;              /* parsed at load */
  const unsigned char *param_data;    /* the param_data blob, in the .so (read-only) */
  pthread_mutex_t check_lock;         /* one check of the weights at a time */
  atomic_int params_state;            /* 0 not checked yet, 1 good, -1 corrupt */
  char *params_error;                 /* the message when corrupt */
  KilnDeviceModule *device;           /* its GPU kernels (device_module.c), or NULL */
};

_Static_assert(sizeof(int) == sizeof(int32_t), "type codes pass as int32_t to kernels");

/* The loader's two gifts to generated code, with the ABI's types. */
typedef void (*SetErrorFn)(const char *);
typedef int (*LaunchFn)(int (*)(int, int, void *), void *, int);
typedef void *(*WsAllocFn)(size_t);
typedef void (*WsFreeFn)(void *);

/* Read a table-size symbol and the tables it counts: the tables are needed
 * only when the count is present and positive. */
static int read_count(KilnModule *m, const char *sym, int *count) {
  const int32_t *p = dlsym(m->dl, sym);
  *count = p ? *p : 0;
  if (*count < 0) return kiln_set_error("'%s' is malformed: %s is %d", m->path, sym, *count);
  return 0;
}

static const void *need_table(KilnModule *m, const char *count_sym, int count, const char *sym) {
  const void *p = dlsym(m->dl, sym);
  if (!p) kiln_set_error("'%s' is malformed: %s is %d but %s is missing", m->path, count_sym,
                         count, sym);
  return p;
}

static int read_tables(KilnModule *m) {
  if (read_count(m, "__kiln_num_kernels", &m->num_kernels)) return -1;
  if (m->num_kernels > 0) {
    const char *const *names =
        need_table(m, "__kiln_num_kernels", m->num_kernels, "__kiln_kernel_names");
    if (!names || !(m->kernel_funcs = need_table(m, "__kiln_num_kernels", m->num_kernels,
                                                 "__kiln_kernel_funcs")))
      return -1;
    m->kernel_names = xcalloc((size_t)m->num_kernels, sizeof(char *));
    for (int i = 0; i < m->num_kernels; i++) {
      if (!names[i] || !m->kernel_funcs[i])
        return kiln_set_error("'%s' is malformed: kernel %d has no %s", m->path, i,
                              names[i] ? "function" : "name");
      m->kernel_names[i] = names[i];
    }
  }
  if (read_count(m, "__kiln_num_blobs", &m->num_blobs)) return -1;
  if (m->num_blobs > 0) {
    if (!(m->blob_names = need_table(m, "__kiln_num_blobs", m->num_blobs, "__kiln_blob_names")) ||
        !(m->blob_data = need_table(m, "__kiln_num_blobs", m->num_blobs, "__kiln_blob_data")) ||
        !(m->blob_sizes = need_table(m, "__kiln_num_blobs", m->num_blobs, "__kiln_blob_sizes")))
      return -1;
    for (int i = 0; i < m->num_blobs; i++)
      if (!m->blob_names[i]) return kiln_set_error("'%s' is malformed: blob %d has no name", m->path, i);
  }
  return 0;
}

/* The embedded params: index parsed and checked against the data's size
 * and alignment; the data itself is checked lazily (kiln_module_check_params). */
static int read_params(KilnModule *m) {
  const void *idx, *data;
  size_t isize, dsize;
  kiln_module_get_blob(m, "param_index", &idx, &isize);
  kiln_module_get_blob(m, "param_data", &data, &dsize);
  if (!idx) return 0;
  if (!data) return kiln_set_error("'%s' is malformed: it has a param_index blob but no param_data",
                                   m->path);
  if ((uintptr_t)data % KILN_ARRAY_ALIGN)
    return kiln_set_error("'%s' is malformed: its param_data is not %d-byte aligned", m->path,
                          KILN_ARRAY_ALIGN);
  m->arena = kiln_arena_new();
  if (kiln_param_index_parse(idx, isize, dsize, m->arena, &m->params))
    return kiln_error_context("'%s'", m->path);
  m->param_data = data;
  m->has_params = 1;
  return 0;
}

static void module_destroy(KilnModule *m) {
  kiln_device_module_free(m->device);
  if (m->dl) dlclose(m->dl);
  kiln_arena_free(m->arena);
  free(m->params_error);
  pthread_mutex_destroy(&m->check_lock);
  free(m->kernel_names);
  free(m->path);
  free(m);
}

/* dlopen maps a file; a truncated one faults (SIGBUS) when the loader
 * touches a segment past its end.  Check, before dlopen, that the file is
 * a 64-bit little-endian ELF whose program segments and section table all
 * lie inside it. */
static int check_elf(const char *path, off_t size) {
  FILE *f = fopen(path, "rb");
  if (!f) return kiln_set_error("cannot load module '%s': %s", path, strerror(errno));
  Elf64_Ehdr eh;
  int rc = 0;
  if (fread(&eh, 1, sizeof eh, f) != sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG))
    rc = kiln_set_error("cannot load module '%s': not a shared object (no ELF header)", path);
  else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    rc = kiln_set_error("cannot load module '%s': not a 64-bit little-endian ELF file", path);
  else if (eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize > (uint64_t)size ||
           eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > (uint64_t)size)
    rc = kiln_set_error("cannot load module '%s': the file is truncated (%lld bytes; its headers need more)", path,
                        (long long)size);
  for (int i = 0; !rc && i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (fseek(f, (long)(eh.e_phoff + (uint64_t)i * sizeof ph), SEEK_SET) || fread(&ph, 1, sizeof ph, f) != sizeof ph) {
      rc = kiln_set_error("cannot load module '%s': unreadable program header %d", path, i);
      break;
    }
    if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > (uint64_t)size)
      rc = kiln_set_error("cannot load module '%s': the file is truncated (segment %d needs %llu bytes, the file has %lld)",
                          path, i, (unsigned long long)(ph.p_offset + ph.p_filesz), (long long)size);
  }
  fclose(f);
  return rc;
}

int kiln_module_load(const char *path, KilnModule **out) {
  if (!out) return kiln_set_error("module_load: out is NULL");
  *out = NULL;
  if (!path || !*path) return kiln_set_error("module_load: the path is empty");
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT) return kiln_set_error("cannot load module '%s': no such file", path);
    return kiln_set_error("cannot load module '%s': %s", path, strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return kiln_set_error("cannot load module '%s': it is a directory", path);
  if (check_elf(path, st.st_size) || kiln_artifact_check_file(path)) return -1;

  /* A bare name would make dlopen search the library path; we mean a file. */
  char *open_path = NULL;
  if (!strchr(path, '/')) {
    size_t n = strlen(path) + 3;
    open_path = xmalloc(n);
    snprintf(open_path, n, "./%s", path);
  }
  void *dl = dlopen(open_path ? open_path : path, RTLD_NOW | RTLD_LOCAL);
  free(open_path);
  if (!dl) {
    const char *e = dlerror();
    return kiln_set_error("cannot load module '%s': %s", path, e ? e : "unknown dlopen error");
  }

  KilnModule *m = xcalloc(1, sizeof *m);
  atomic_init(&m->refs, 1);
  pthread_mutex_init(&m->check_lock, NULL);
  m->dl = dl;
  m->path = xstrdup(path);
  const char *magic = dlsym(dl, "__kiln_module_magic");
  if (!magic) {
    kiln_set_error("'%s' is not a Kiln module (no __kiln_module_magic symbol)", path);
    module_destroy(m);
    return -1;
  }
  if (strncmp(magic, KILN_MODULE_MAGIC, sizeof KILN_MODULE_MAGIC) != 0) {
    kiln_set_error("'%s' is a Kiln module of another ABI: its magic is \"%.32s\", this runtime "
                   "reads \"%s\"", path, magic, KILN_MODULE_MAGIC);
    module_destroy(m);
    return -1;
  }
  if (read_tables(m) || read_params(m)) {
    module_destroy(m);
    return -1;
  }
  SetErrorFn *set_error = dlsym(dl, "__kiln_set_last_error_ptr");
  if (set_error) *set_error = kiln_set_last_error;
  LaunchFn *launch = dlsym(dl, "__kiln_parallel_launch_ptr");
  if (launch) *launch = kiln_parallel_launch;
  WsAllocFn *ws_alloc = dlsym(dl, "__kiln_workspace_alloc_ptr");
  WsFreeFn *ws_free = dlsym(dl, "__kiln_workspace_free_ptr");
  if (ws_alloc && ws_free) {
    *ws_alloc = kiln_workspace_alloc;
    *ws_free = kiln_workspace_free;
  }
  if (kiln_device_module_attach(dl, path, m->num_blobs, m->blob_names, m->blob_data, m->blob_sizes,
                                &m->device)) {
    module_destroy(m);
    return -1;
  }
  *out = m;
  return 0;
}

int kiln_module_retain(KilnModule *mod) {
  if (!mod) return kiln_set_error("module_retain: the module is NULL");
  atomic_fetch_add(&mod->refs, 1);
  return 0;
}

int kiln_module_free(KilnModule *mod) {
  if (mod && atomic_fetch_sub(&mod->refs, 1) == 1) module_destroy(mod);
  return 0;
}

const char *kiln_module_path(KilnModule *mod) { return mod ? mod->path : NULL; }

DLDevice kiln_module_device(const KilnModule *mod) {
  if (mod && mod->device) return (DLDevice){(DLDeviceType)mod->device->device_type, 0};
  return (DLDevice){kDLCPU, 0};
}

/* ---- kernels as functions ---- */

typedef struct KernelClosure {
  KilnModule *mod;     /* a reference: keeps the code loaded */
  KilnKernelFunc fn;   /* the kernel */
  const char *name;    /* in mod->kernel_names */
} KernelClosure;

static int kernel_call(KilnValue *args, int *type_codes, int num_args, KilnValue *ret,
                       int *ret_code, void *resource) {
  KernelClosure *k = resource;
  if (k->fn(args, (int32_t *)type_codes, num_args) == 0) return 0;
  if (!kiln_get_error()[0])
    kiln_set_error("kernel '%s' of module '%s' failed without setting an error", k->name,
                   k->mod->path);
  return -1;
}

static void kernel_finalize(void *resource) {
  KernelClosure *k = resource;
  kiln_module_free(k->mod);
  free(k);
}

/* "a, b, c" (the first 16, then how many more) for "has no function" messages. */
static void put_names(StrBuf *sb, KilnModule *mod) {
  enum { SHOWN = 16 };
  if (!mod->num_kernels) sb_puts(sb, "no functions");
  for (int i = 0; i < mod->num_kernels && i < SHOWN; i++)
    sb_printf(sb, "%s%s", i ? ", " : "", mod->kernel_names[i]);
  if (mod->num_kernels > SHOWN) sb_printf(sb, ", ... %d more", mod->num_kernels - SHOWN);
}

int kiln_module_get_function(KilnModule *mod, const char *name, KilnFunction **out) {
  if (!out) return kiln_set_error("module_get_function: out is NULL");
  *out = NULL;
  if (!mod) return kiln_set_error("module_get_function: the module is NULL");
  if (!name) return kiln_set_error("module_get_function: the name is NULL");
  for (int i = 0; i < mod->num_kernels; i++) {
    if (strcmp(mod->kernel_names[i], name)) continue;
    KernelClosure *k = xcalloc(1, sizeof *k);
    k->mod = mod;
    k->fn = mod->kernel_funcs[i];
    k->name = mod->kernel_names[i];
    kiln_module_retain(mod);
    return kiln_func_create(kernel_call, k, kernel_finalize, out);
  }
  StrBuf sb = {0};
  put_names(&sb, mod);
  kiln_set_error("module '%s' has no function '%s' (it has: %s)", mod->path, name, sb.data);
  sb_free(&sb);
  return -1;
}

int kiln_module_list_functions(KilnModule *mod, int *num, const char ***names) {
  if (!mod || !num || !names) return kiln_set_error("module_list_functions: a NULL argument");
  *num = mod->num_kernels;
  *names = mod->kernel_names;
  return 0;
}

int kiln_module_get_blob(KilnModule *mod, const char *name, const void **data, size_t *size) {
  if (!mod || !name || !data || !size) return kiln_set_error("module_get_blob: a NULL argument");
  *data = NULL;
  *size = 0;
  for (int i = 0; i < mod->num_blobs; i++) {
    if (strcmp(mod->blob_names[i], name)) continue;
    *data = mod->blob_data[i];
    *size = (size_t)mod->blob_sizes[i];
    break;
  }
  return 0;
}

/* ---- embedded params ---- */

const KilnParamIndex *kiln_module_params(KilnModule *mod, const unsigned char **data) {
  *data = mod->param_data;
  return mod->has_params ? &mod->params : NULL;
}

int kiln_module_check_params(KilnModule *mod) {
  if (!mod) return kiln_set_error("module_check_params: the module is NULL");
  int st = atomic_load_explicit(&mod->params_state, memory_order_acquire);
  if (st == 0) {
    pthread_mutex_lock(&mod->check_lock);
    st = atomic_load_explicit(&mod->params_state, memory_order_acquire);
    if (st == 0) {
      if (mod->has_params && kiln_param_chunks_check(&mod->params, mod->param_data, 1)) {
        kiln_error_context("module '%s'", mod->path);
        mod->params_error = xstrdup(kiln_get_error());
        st = -1;
      } else {
        st = 1;
      }
      atomic_store_explicit(&mod->params_state, st, memory_order_release);
    }
    pthread_mutex_unlock(&mod->check_lock);
  }
  if (st < 0) return kiln_set_error("%s", mod->params_error);
  return 0;
}

int kiln_module_save_params(KilnModule *mod, void **bytes, size_t *size) {
  if (!mod || !bytes || !size) return kiln_set_error("module_save_params: a NULL argument");
  *bytes = NULL;
  *size = 0;
  if (!mod->has_params) return kiln_params_save(0, NULL, NULL, bytes, size);
  if (kiln_module_check_params(mod)) return -1;
  const KilnParamIndex *pi = &mod->params;
  DLTensor *views = xcalloc((size_t)pi->num + 1, sizeof *views);
  DLTensor **arrays = xcalloc((size_t)pi->num + 1, sizeof *arrays);
  for (int i = 0; i < pi->num; i++) {
    views[i] = pi->tensors[i];
    views[i].data = (void *)(mod->param_data + pi->offsets[i]);
    arrays[i] = &views[i];
  }
  int rc = kiln_params_save(pi->num, pi->names, arrays, bytes, size);
  free(views);
  free(arrays);
  return rc;
}

/* ---- packed forms ---- */

int kiln_module_packed_load(KilnValue *args, int *type_codes, int num_args, KilnValue *ret,
                            int *ret_code, void *resource) {
  static const int want[] = {KILN_STR};
  KilnModule *m;
  if (kiln_check_args("runtime.module_load", type_codes, num_args, 1, want) ||
      kiln_module_load(args[0].v_str, &m))
    return -1;
  ret->v_handle = m;
  *ret_code = KILN_MODULE;
  return 0;
}

int kiln_module_packed_get_function(KilnValue *args, int *type_codes, int num_args,
                                    KilnValue *ret, int *ret_code, void *resource) {
  static const int want[] = {KILN_MODULE, KILN_STR};
  KilnFunction *f;
  if (kiln_check_args("runtime.module_get_function", type_codes, num_args, 2, want) ||
      kiln_module_get_function(args[0].v_handle, args[1].v_str, &f))
    return -1;
  ret->v_handle = f;
  *ret_code = KILN_FUNC;
  return 0;
}
