/*
 * codegen_c.c - lowered functions to C translation units: module assembly.
 *
 * Every kernel has the packed signature of the module ABI (kiln/runtime.h):
 *   int32_t name(KilnValue *args, int32_t *type_codes, int32_t num_args)
 * and starts by checking its arguments — count, type codes, rank, dtype,
 * shape (binding symbolic dimensions on first sight), compact strides and
 * device — returning -1 with a message instead of touching bad memory.
 * This file prints those prologues, the prelude and module tables each unit
 * carries, deals the functions out over units, and holds the plain-kernel
 * API for standalone C.  The bodies come from the rest of the generator
 * (codegen_c_internal.h): statements (codegen_c_stmt.c), expressions
 * (codegen_c_expr.c), intrinsics and vector helpers (codegen_c_intrin.c),
 * C names and types (codegen_c_types.c).
 *
 * The text is meant to be read: loops keep their variable names (made
 * unique and C-safe), and each produce point is marked with a comment.
 */
#include "codegen_c_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- kernels ---- */

static const char *dtype_desc(DType t) { return dt_str(t); }

/* Emit the argument checks and buffer bindings of f's entry. */
static void prologue(CG *g, LoweredFunc *f, PtrMap *bound_shape_vars) {
  StrBuf *o = g->out;
  const char *fn = f->name;
  const char **tvs = KNEWN(const char *, f->nargs > 0 ? f->nargs : 1);
  sb_printf(o, "  if (num_args != %d) {\n    kiln_error(\"%s: expected %d arguments, got %%d\", (int)num_args);\n    return -1;\n  }\n",
            f->nargs, fn, f->nargs);
  for (int i = 0; i < f->nargs; i++) {
    Tensor *t = f->args[i];
    const char *tv = cgc_unique_name(g, kfmt("arg_%s", t->name));
    sb_printf(o, "  if (type_codes[%d] != 7 && type_codes[%d] != 13) {\n"
                 "    kiln_error(\"%s: argument %d (%s) must be a tensor, got type code %%d\", (int)type_codes[%d]);\n"
                 "    return -1;\n  }\n",
              i, i, fn, i, t->name, i);
    sb_printf(o, "  const kiln_tensor *%s = (const kiln_tensor *)args[%d].v_handle;\n", tv, i);
    sb_printf(o, "  if (!%s || (!%s->data && kiln_numel(%s) > 0)) {\n    kiln_error(\"%s: argument %d (%s) is a null tensor\");\n    return -1;\n  }\n",
              tv, tv, tv, fn, i, t->name);
    if (f->device_type == kDLCPU) {
      sb_printf(o, "  if (%s->device.device_type != 1) {\n    kiln_error(\"%s: argument %d (%s) is on device type %%d; this kernel runs on the CPU\", (int)%s->device.device_type);\n    return -1;\n  }\n",
                tv, fn, i, t->name, tv);
    } else {
      const char *dn = f->device_type == kDLCUDA ? "cuda" : "opencl";
      sb_printf(o, "  if (%s->device.device_type != %d) {\n    kiln_error(\"%s: argument %d (%s) is on device type %%d; this kernel runs on %s (device type %d): copy it there with kiln.nd.array(x, kiln.%s(0))\", (int)%s->device.device_type);\n    return -1;\n  }\n",
                tv, f->device_type, fn, i, t->name, dn, f->device_type, dn, tv);
      if (i == 0)
        sb_printf(o, "  const int32_t kiln_dev_id = %s->device.device_id;\n", tv);
      else
        sb_printf(o, "  if (%s->device.device_id != kiln_dev_id) {\n    kiln_error(\"%s: argument %d (%s) is on %s device %%d, argument 0 on device %%d; a kernel runs on one device\", (int)%s->device.device_id, (int)kiln_dev_id);\n    return -1;\n  }\n",
                  tv, fn, i, t->name, dn, tv);
      sb_printf(o, "  if (%s->byte_offset) {\n    kiln_error(\"%s: argument %d (%s) starts at a byte offset into device memory; pass a tensor of its own\");\n    return -1;\n  }\n",
                tv, fn, i, t->name);
    }
    sb_printf(o, "  if (%s->ndim != %d) {\n    kiln_error(\"%s: argument %d (%s) has %%d dimensions, expected %d\", (int)%s->ndim);\n    return -1;\n  }\n",
              tv, t->ndim, fn, i, t->name, t->ndim, tv);
    DType dt = t->dtype;
    int bits = dt.bits;
    /* bool tensors arrive as 8-bit storage (NumPy) or 1-bit (TVM style) */
    if (dt_is_bool(dt))
      sb_printf(o, "  if (!((%s->dtype.code == 1 || %s->dtype.code == 6) && (%s->dtype.bits == 1 || %s->dtype.bits == 8) && %s->dtype.lanes == 1)) {\n",
                tv, tv, tv, tv, tv);
    else
      sb_printf(o, "  if (%s->dtype.code != %d || %s->dtype.bits != %d || %s->dtype.lanes != %d) {\n", tv, dt.code, tv, bits, tv,
                dt.lanes);
    sb_printf(o, "    kiln_error(\"%s: argument %d (%s) has dtype %%s, expected %s\", kiln_dtype_name(%s->dtype));\n    return -1;\n  }\n",
              fn, i, t->name, dtype_desc(dt), tv);
    for (int d = 0; d < t->ndim; d++) {
      Expr *sd = t->shape[d];
      int64_t c;
      if (ir_is_const_int(sd, &c)) {
        sb_printf(o, "  if (%s->shape[%d] != %lld) {\n    kiln_error(\"%s: argument %d (%s) has shape[%d] = %%lld, expected %lld\", (long long)%s->shape[%d]);\n    return -1;\n  }\n",
                  tv, d, (long long)c, fn, i, t->name, d, (long long)c, tv, d);
      } else if (sd->kind == EK_Var && !pm_has(bound_shape_vars, sd)) {
        pm_put(bound_shape_vars, sd, sd);
        sb_printf(o, "  %s %s = (%s)%s->shape[%d];\n", cgc_ctype(g, sd->dtype), cgc_vname(g, sd), cgc_ctype(g, sd->dtype), tv, d);
      }
    }
    /* a symbolic shape is sized at run time: more elements than 32-bit
     * indices reach is an error there (a constant one was refused when the
     * tensor was made, te.h) */
    bool symbolic = false;
    for (int d = 0; d < t->ndim; d++) symbolic |= !ir_is_const_int(t->shape[d], NULL);
    if (symbolic)
      sb_printf(o, "  if (kiln_numel(%s) > 2147483647LL) {\n    kiln_error(\"%s: argument %d (%s) has %%lld elements, more "
                   "than Kiln's generated code indexes (2^31 - 1, with 32-bit integers); call it on smaller tensors\", "
                   "(long long)kiln_numel(%s));\n    return -1;\n  }\n",
                tv, fn, i, t->name, tv);
    sb_printf(o, "  if (%s->strides) {\n    int64_t expect = 1;\n    for (int d = %d - 1; d >= 0; d--) {\n"
                 "      if (%s->shape[d] != 1 && %s->strides[d] != expect) {\n"
                 "        kiln_error(\"%s: argument %d (%s) must be compact (row-major), got a strided tensor\");\n"
                 "        return -1;\n      }\n      expect *= %s->shape[d];\n    }\n  }\n",
              tv, t->ndim, tv, tv, fn, i, t->name, tv);
    const char *bn = cgc_vname(g, f->arg_bufs[i]);
    DType *et = KNEW(DType);
    *et = dt;
    pm_put(&g->buftype, f->arg_bufs[i], et);
    if (f->device_type == kDLCPU)
      sb_printf(o, "  %s *%s%s = (%s *)((char *)%s->data + %s->byte_offset);\n", cgc_scalar_ctype(dt), g->restrict_,
                bn, cgc_scalar_ctype(dt), tv, tv);
    else
      sb_printf(o, "  void *%s = %s->data; /* device memory */\n", bn, tv);
    tvs[i] = tv;
  }
  /* symbolic dims: each is checked once all variables are bound */
  for (int i = 0; i < f->nargs; i++) {
    Tensor *t = f->args[i];
    const char *tv = tvs[i];
    for (int d = 0; d < t->ndim; d++) {
      Expr *sd = t->shape[d];
      if (ir_is_const_int(sd, NULL)) continue;
      sb_printf(o, "  if (%s->shape[%d] != (int64_t)(", tv, d);
      cgc_expr(g, sd);
      sb_printf(o, ")) {\n    kiln_error(\"%s: argument %d (%s) has shape[%d] = %%lld, expected %%lld (%s)\", (long long)%s->shape[%d], (long long)(",
                fn, i, t->name, d, ir_expr_str(sd), tv, d);
      cgc_expr(g, sd);
      sb_puts(o, "));\n    return -1;\n  }\n");
    }
  }
}

/* Free variables of the body that no argument shape binds. */
static int check_unbound(CG *g, LoweredFunc *f, PtrMap *bound) {
  FreeVars fv = {{0}, {0}, {0}};
  for (int i = 0; i < f->nargs; i++) pm_put(&fv.bound, f->arg_bufs[i], f);
  IRVisitor v = {cgc_fv_expr, cgc_fv_stmt, &fv};
  ir_visit_stmt(&v, f->body);
  int rc = 0;
  for (int i = 0; i < fv.uses.len; i++) {
    Expr *x = fv.uses.data[i];
    if (!pm_has(bound, x)) {
      rc = kiln_set_error("codegen: function '%s' uses variable '%s', which no argument's shape "
                          "binds",
                          f->name, x->var.name);
      break;
    }
  }
  pm_free(&fv.bound);
  pm_free(&fv.seen);
  return rc;
}

static const char *prelude =
    "/* Generated by Kiln. */\n"
    /* gcc 12 emits masked vmovsh for _Float16 code on AVX512-FP16 machines,
     * which binutils 2.40 cannot assemble: half precision goes through
     * float32 instructions there instead */
    "#if defined(__AVX512FP16__) && defined(__GNUC__) && !defined(__clang__)\n#pragma GCC target(\"no-avx512fp16\")\n#endif\n"
    "#include <math.h>\n#include <stdarg.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
    "typedef union { int64_t v_int64; double v_float64; void *v_handle; const char *v_str; } KilnValue;\n"
    "typedef struct { uint8_t code, bits; uint16_t lanes; } kiln_dtype;\n"
    "typedef struct { int32_t device_type, device_id; } kiln_device;\n"
    "typedef struct {\n  void *data;\n  kiln_device device;\n  int32_t ndim;\n  kiln_dtype dtype;\n"
    "  int64_t *shape, *strides;\n  uint64_t byte_offset;\n} kiln_tensor; /* DLTensor */\n\n"
    "@GLOBALS@"
    "static void kiln_error(const char *fmt, ...) {\n  char msg[1024];\n  va_list ap;\n  va_start(ap, fmt);\n"
    "  vsnprintf(msg, sizeof msg, fmt, ap);\n  va_end(ap);\n  if (__kiln_set_last_error_ptr) __kiln_set_last_error_ptr(msg);\n}\n"
    "static inline int kiln_parallel(int (*fn)(int, int, void *), void *c) {\n"
    "  if (__kiln_parallel_launch_ptr) return __kiln_parallel_launch_ptr(fn, c, 0);\n  return fn(0, 1, c);\n}\n"
    "static inline void *kiln_alloc(size_t n) {\n  if (__kiln_workspace_alloc_ptr) return __kiln_workspace_alloc_ptr(n);\n"
    "  void *p = 0;\n  return posix_memalign(&p, 64, n ? n : 1) ? 0 : p;\n}\n"
    "static inline void kiln_free_ptr(void *pp) {\n  if (__kiln_workspace_free_ptr) __kiln_workspace_free_ptr(*(void **)pp);\n"
    "  else free(*(void **)pp);\n}\n"
    "static inline int64_t kiln_numel(const kiln_tensor *t) {\n  int64_t n = 1;\n"
    "  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];\n  return n;\n}\n"
    "static const char *kiln_dtype_name(kiln_dtype t) {\n  static __thread char buf[32];\n"
    "  const char *c = t.code == 0 ? \"int\" : t.code == 1 ? (t.bits == 1 ? \"bool\" : \"uint\") : t.code == 2 ? \"float\" : t.code == 6 ? \"bool\" : \"type\";\n"
    "  if ((t.code == 1 && t.bits == 1) || t.code == 6) snprintf(buf, sizeof buf, \"bool\");\n"
    "  else if (t.lanes > 1) snprintf(buf, sizeof buf, \"%s%dx%d\", c, t.bits, t.lanes);\n"
    "  else snprintf(buf, sizeof buf, \"%s%d\", c, t.bits);\n  return buf;\n}\n\n";

/* Unit 0 defines the module's globals; the others refer to them. */
static const char *globals_def =
    "const char __kiln_module_magic[] = \"kiln-module-v1\";\n"
    "void (*__kiln_set_last_error_ptr)(const char *) = 0;\n"
    "int (*__kiln_parallel_launch_ptr)(int (*)(int, int, void *), void *, int) = 0;\n"
    "void *(*__kiln_workspace_alloc_ptr)(size_t) = 0;\n"
    "void (*__kiln_workspace_free_ptr)(void *) = 0;\n\n";
/* A module with GPU functions: the device runtime's entry points, filled
 * by the loader (kiln/runtime.h, "the device ABI"). */
static const char *device_globals_def =
    "void *__kiln_device_module = 0;\n"
    "int (*__kiln_device_launch_ptr)(void *, int32_t, int32_t, const int64_t *, KilnValue *, int32_t) = 0;\n"
    "void *(*__kiln_device_alloc_ptr)(void *, int32_t, uint64_t) = 0;\n"
    "void (*__kiln_device_free_ptr)(void *, int32_t, void *) = 0;\n";
static const char *device_globals_decl =
    "extern void *__kiln_device_module;\n"
    "extern int (*__kiln_device_launch_ptr)(void *, int32_t, int32_t, const int64_t *, KilnValue *, int32_t);\n"
    "extern void *(*__kiln_device_alloc_ptr)(void *, int32_t, uint64_t);\n"
    "extern void (*__kiln_device_free_ptr)(void *, int32_t, void *);\n";
static const char *device_helpers =
    "static inline int kiln_device_launch(int32_t dev, int32_t k, const int64_t *ext, KilnValue *a, int32_t n) {\n"
    "  if (!__kiln_device_launch_ptr) {\n"
    "    kiln_error(\"this module's kernels run on a GPU; load it with kiln_module_load\");\n"
    "    return -1;\n  }\n"
    "  return __kiln_device_launch_ptr(__kiln_device_module, dev, k, ext, a, n);\n}\n"
    "static inline void *kiln_device_alloc(int32_t dev, uint64_t n) {\n"
    "  if (!__kiln_device_alloc_ptr) {\n"
    "    kiln_error(\"this module's kernels run on a GPU; load it with kiln_module_load\");\n"
    "    return 0;\n  }\n"
    "  return __kiln_device_alloc_ptr(__kiln_device_module, dev, n);\n}\n"
    "static inline void kiln_device_free(int32_t dev, void *p) {\n"
    "  if (__kiln_device_free_ptr) __kiln_device_free_ptr(__kiln_device_module, dev, p);\n}\n\n";

static const char *globals_decl =
    "extern void (*__kiln_set_last_error_ptr)(const char *);\n"
    "extern int (*__kiln_parallel_launch_ptr)(int (*)(int, int, void *), void *, int);\n"
    "extern void *(*__kiln_workspace_alloc_ptr)(size_t);\n"
    "extern void (*__kiln_workspace_free_ptr)(void *);\n\n";

/* ---- units ---- */

static void count_expr(IRVisitor *v, Expr *e) {
  (*(int64_t *)v->ud)++;
  ir_visit_expr_children(v, e);
}

static void count_stmt(IRVisitor *v, Stmt *s) {
  (*(int64_t *)v->ud)++;
  ir_visit_stmt_children(v, s);
}

/* Which unit each function goes to: the C compiler's time grows with the
 * code it reads, so the functions, largest first by IR nodes (loops are
 * already unrolled), each go to the unit with the fewest nodes so far.
 * Dealing them out in turn left ResNet-50's four units at 1.0 to 2.9 s
 * of gcc time (docs/compile_time.md). */
static void assign_units(LoweredFunc **funcs, int nfuncs, int nunits, int *unit_of) {
  int64_t *cost = KNEWN(int64_t, nfuncs + 1), *load = KNEWN(int64_t, nunits + 1);
  int *order = KNEWN(int, nfuncs + 1);
  for (int k = 0; k < nfuncs; k++) {
    IRVisitor v = {count_expr, count_stmt, &cost[k]};
    if (funcs[k] && funcs[k]->okind == KOBJ_FUNC && funcs[k]->body) ir_visit_stmt(&v, funcs[k]->body);
    order[k] = k;
  }
  for (int i = 1; i < nfuncs; i++) /* by cost, largest first; ties keep their order */
    for (int j = i; j > 0 && cost[order[j]] > cost[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 0; i < nfuncs; i++) {
    int best = 0;
    for (int u = 1; u < nunits; u++)
      if (load[u] < load[best]) best = u;
    unit_of[order[i]] = best;
    load[best] += cost[order[i]];
  }
}

char **codegen_c_units(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs, int nunits) {
  if (nunits < 1) nunits = 1;
  if (nunits > nfuncs && nfuncs > 0) nunits = nfuncs;
  CG g;
  memset(&g, 0, sizeof g);
  pm_init_str(&g.used);
  pm_init_str(&g.emitted);
  StrBuf *kernels = xcalloc((size_t)nunits, sizeof(StrBuf));
  StrBuf *helpers = xcalloc((size_t)nunits, sizeof(StrBuf));
  PtrMap *emitted = xcalloc((size_t)nunits, sizeof(PtrMap));
  for (int u = 0; u < nunits; u++) pm_init_str(&emitted[u]);
  const char **cnames = KNEWN(const char *, nfuncs > 0 ? nfuncs : 1);
  int rc = 0, nkern = 0;
  bool device = false;
  for (int k = 0; k < nfuncs; k++) device |= funcs[k] && funcs[k]->okind == KOBJ_FUNC && funcs[k]->device_type != kDLCPU;
  int *unit_of = KNEWN(int, nfuncs > 0 ? nfuncs : 1);
  assign_units(funcs, nfuncs, nunits, unit_of);
  for (int k = 0; k < nfuncs && !rc; k++) {
    LoweredFunc *f = funcs[k];
    int unit = unit_of[k];
    g.helpers = helpers[unit];
    g.emitted = emitted[unit];
    if (!f || f->okind != KOBJ_FUNC) {
      rc = kiln_set_error("codegen: function %d is not a lowered function", k);
      break;
    }
    for (int j = 0; j < k; j++)
      if (!strcmp(funcs[j]->name, f->name)) {
        rc = kiln_set_error("codegen: two functions are named '%s'", f->name);
        break;
      }
    if (rc) break;
    /* names are per kernel, except the kernels' own */
    pm_free(&g.names);
    PtrMap keep;
    pm_init_str(&keep);
    for (int j = 0; j < k; j++) pm_put(&keep, cnames[j], (void *)1);
    pm_free(&g.used);
    g.used = keep;
    cnames[k] = cgc_unique_name(&g, f->name);
    g.fname = cnames[k];
    g.restrict_ = f->may_alias ? "" : "restrict ";
    g.f = f;
    g.kernel_base = nkern;
    g.ndev = 0;
    nkern += f->nkernels;
    g.npar = 0;
    g.an = analyzer_new();
    g.vmath_calls = g.bf16_calls = 0;
    PtrMap bound = {0};
    StrBuf body = {0};
    g.out = &body;
    sb_printf(&body, "int32_t %s(KilnValue *args, int32_t *type_codes, int32_t num_args) {\n", g.fname);
    prologue(&g, f, &bound);
    rc = check_unbound(&g, f, &bound);
    g.indent = 2;
    if (!rc) cgc_stmt(&g, f->body);
    sb_puts(&body, "  return 0;\n}\n\n");
    analyzer_free(g.an);
    pm_free(&bound);
    pm_free(&g.buftype);
    if (g.failed) rc = -1;
    if (!rc) {
      if (g.outlined.len) sb_puts(&kernels[unit], g.outlined.data);
      cgc_put_function(&kernels[unit], body.data, 0, &g);
    }
    helpers[unit] = g.helpers;
    emitted[unit] = g.emitted;
    sb_free(&g.outlined);
    sb_free(&body);
  }
  char **units = xcalloc((size_t)nunits, sizeof(char *));
  for (int u = 0; u < nunits && !rc; u++) {
    StrBuf src = {0};
    const char *mark = strstr(prelude, "@GLOBALS@"), *line2 = strchr(prelude, '\n') + 1;
    sb_putn(&src, prelude, (size_t)(line2 - prelude)); /* the banner */
    sb_putn(&src, line2, (size_t)(mark - line2));
    sb_puts(&src, u == 0 ? globals_def : globals_decl);
    if (device) sb_puts(&src, u == 0 ? device_globals_def : device_globals_decl);
    sb_puts(&src, mark + strlen("@GLOBALS@"));
    if (device) sb_puts(&src, device_helpers);
    if (helpers[u].len) {
      sb_puts(&src, helpers[u].data);
      sb_putc(&src, '\n');
    }
    if (u == 0)
      for (int k = 0; k < nfuncs; k++)
        if (unit_of[k]) sb_printf(&src, "int32_t %s(KilnValue *args, int32_t *type_codes, int32_t num_args);\n", cnames[k]);
    sb_puts(&src, kernels[u].data ? kernels[u].data : "");
    if (u > 0) {
      units[u] = sb_steal(&src);
      continue;
    }
    sb_printf(&src, "const int32_t __kiln_num_kernels = %d;\n", nfuncs);
    sb_puts(&src, "const char *const __kiln_kernel_names[] = {");
    for (int k = 0; k < nfuncs; k++) sb_printf(&src, "%s\"%s\"", k ? ", " : "", funcs[k]->name);
    if (!nfuncs) sb_puts(&src, "0");
    sb_puts(&src, "};\n");
    /* the names again, NUL-separated in a section of their own, for
     * readers that do not load the module (kiln_artifact_info) */
    sb_puts(&src, "__attribute__((section(\".kiln.kernels\"), used)) static const char __kiln_kernel_list[] = \"");
    for (int k = 0; k < nfuncs; k++) sb_printf(&src, "%s\\000", funcs[k]->name);
    sb_puts(&src, "\";\n");
    sb_puts(&src, "int32_t (*const __kiln_kernel_funcs[])(KilnValue *, int32_t *, int32_t) = {");
    for (int k = 0; k < nfuncs; k++) sb_printf(&src, "%s%s", k ? ", " : "", cnames[k]);
    if (!nfuncs) sb_puts(&src, "0");
    sb_puts(&src, "};\n");
    sb_printf(&src, "const int32_t __kiln_num_blobs = %d;\n", nblobs);
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "extern const unsigned char __kiln_blob_%d[];\n", b);
    sb_puts(&src, "const char *const __kiln_blob_names[] = {");
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "%s\"%s\"", b ? ", " : "", blobs[b].name);
    if (!nblobs) sb_puts(&src, "0");
    sb_puts(&src, "};\nconst unsigned char *const __kiln_blob_data[] = {");
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "%s__kiln_blob_%d", b ? ", " : "", b);
    if (!nblobs) sb_puts(&src, "0");
    sb_puts(&src, "};\nconst uint64_t __kiln_blob_sizes[] = {");
    for (int b = 0; b < nblobs; b++) sb_printf(&src, "%s%lluu", b ? ", " : "", (unsigned long long)blobs[b].size);
    if (!nblobs) sb_puts(&src, "0");
    sb_puts(&src, "};\n");
    units[0] = sb_steal(&src);
  }
  for (int u = 0; u < nunits; u++) {
    sb_free(&kernels[u]);
    sb_free(&helpers[u]);
    pm_free(&emitted[u]);
  }
  free(kernels);
  free(helpers);
  free(emitted);
  pm_free(&g.names);
  pm_free(&g.used);
  if (rc) {
    for (int u = 0; u < nunits; u++) free(units[u]);
    free(units);
    return NULL;
  }
  return units;
}

char *codegen_c(LoweredFunc **funcs, int nfuncs, int nblobs, const KBlob *blobs) {
  char **u = codegen_c_units(funcs, nfuncs, nblobs, blobs, 1);
  if (!u) return NULL;
  char *r = u[0];
  free(u);
  return r;
}

/* ---- plain kernels (standalone C) ----
 *
 * The same statements and expressions, under another calling convention:
 *   static int NAME(float *restrict p0, ..., float *restrict T_out, char *restrict kiln_scratch)
 * with every shape static, no argument checks (the caller's executor is
 * generated with the kernels), no runtime to report errors to, and
 * allocations on the stack or in the kernel's scratch area (plain_alloc).
 * The unit's text needs the macros KILN_ALIGN64 and KILN_UNROLL(n), and
 * for pthreads a kiln_parallel(fn, closure) launcher, from its includer. */

struct CPlainUnit {
  CG g;
  StrBuf kernels;
  AVec cnames; /* the kernels' C names, kept unique across the unit */
};

CPlainUnit *codegen_c_plain_new(const CDialect *d) {
  CPlainUnit *u = xcalloc(1, sizeof *u);
  u->g.dialect = d;
  pm_init_str(&u->g.used);
  pm_init_str(&u->g.emitted);
  return u;
}

int codegen_c_plain_kernel(CPlainUnit *u, LoweredFunc *f, const char *cname, int64_t *scratch_bytes) {
  CG *g = &u->g;
  if (!f || f->okind != KOBJ_FUNC) return kiln_set_error("codegen: '%s' is not a lowered function", cname);
  for (int j = 0; j < u->cnames.len; j++)
    if (!strcmp(u->cnames.data[j], cname)) return kiln_set_error("codegen: two functions are named '%s'", cname);
  av_push(&u->cnames, kstrdup(cname));
  /* names are per kernel, except the kernels' own */
  pm_free(&g->names);
  pm_free(&g->used);
  pm_init_str(&g->used);
  for (int j = 0; j < u->cnames.len; j++) pm_put(&g->used, u->cnames.data[j], (void *)1);
  pm_put(&g->used, "kiln_scratch", (void *)1);
  g->fname = cname;
  g->restrict_ = f->may_alias ? "" : "restrict ";
  g->npar = 0;
  g->scratch_off = g->scratch_max = 0;
  g->par_depth = 0;
  g->failed = false;
  g->an = analyzer_new();
  g->vmath_calls = g->bf16_calls = 0;
  StrBuf body = {0};
  g->out = &body;
  sb_printf(&body, "static int %s(", cname);
  for (int i = 0; i < f->nargs; i++) {
    DType dt = f->args[i]->dtype;
    DType *et = KNEW(DType);
    *et = dt;
    pm_put(&g->buftype, f->arg_bufs[i], et);
    sb_printf(&body, "%s *%s%s, ", cgc_scalar_ctype(dt), g->restrict_, cgc_vname(g, f->arg_bufs[i]));
  }
  sb_puts(&body, "char *restrict kiln_scratch) {\n");
  for (int i = 0; i < f->nargs; i++) sb_printf(&body, "  (void)%s;\n", cgc_vname(g, f->arg_bufs[i]));
  sb_puts(&body, "  (void)kiln_scratch;\n");
  PtrMap bound = {0};
  int rc = check_unbound(g, f, &bound);
  g->indent = 2;
  if (!rc) cgc_stmt(g, f->body);
  sb_puts(&body, "  return 0;\n}\n\n");
  analyzer_free(g->an);
  g->an = NULL;
  pm_free(&bound);
  pm_free(&g->buftype);
  if (g->failed) rc = -1;
  if (!rc) {
    if (g->outlined.len) sb_puts(&u->kernels, g->outlined.data);
    cgc_put_function(&u->kernels, body.data, 0, g);
    *scratch_bytes = g->scratch_max;
  } else {
    kiln_error_context("kernel %s", cname);
  }
  sb_free(&g->outlined);
  sb_free(&body);
  return rc;
}

char *codegen_c_plain_finish(CPlainUnit *u, char **helpers) {
  *helpers = sb_steal(&u->g.helpers);
  char *k = sb_steal(&u->kernels);
  pm_free(&u->g.names);
  pm_free(&u->g.used);
  pm_free(&u->g.emitted);
  free(u);
  return k;
}
