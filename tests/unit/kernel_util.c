/* kernel_util.c - see kernel_util.h. */
#include "kernel_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "target/target.h"

DLTensor *tk_array(int ndim, const int64_t *shape, DType t) {
  DLTensor *a = NULL;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(ndim, shape, t, cpu, &a)) return NULL;
  return a;
}

DLTensor *tk_array_for(Tensor *t) {
  int64_t shape[16];
  KASSERT(t->ndim <= 16 && te_shape_const(t, shape));
  return tk_array(t->ndim, shape, t->dtype);
}

int64_t tk_numel(const DLTensor *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  return n;
}

static void set(DLTensor *a, int64_t i, double v) {
  char *p = (char *)a->data + a->byte_offset;
  DLDataType t = a->dtype;
  if (t.code == kDLFloat && t.bits == 32) ((float *)p)[i] = (float)v;
  else if (t.code == kDLFloat && t.bits == 64) ((double *)p)[i] = v;
  else if (t.code == kDLInt && t.bits == 32) ((int32_t *)p)[i] = (int32_t)v;
  else if (t.code == kDLInt && t.bits == 64) ((int64_t *)p)[i] = (int64_t)v;
  else if (t.code == kDLInt && t.bits == 8) ((int8_t *)p)[i] = (int8_t)v;
  else if (t.code == kDLUInt && t.bits == 8) ((uint8_t *)p)[i] = (uint8_t)v;
  else if (t.code == kDLInt && t.bits == 16) ((int16_t *)p)[i] = (int16_t)v;
  else if (t.code == kDLUInt && t.bits == 16) ((uint16_t *)p)[i] = (uint16_t)v;
  else if (t.code == kDLUInt && t.bits == 32) ((uint32_t *)p)[i] = (uint32_t)(int64_t)v;
  else if (t.code == kDLUInt && t.bits == 1) ((uint8_t *)p)[i] = v != 0;
  else KASSERTF(0, "unsupported test dtype");
}

double tk_get(const DLTensor *a, int64_t i) {
  const char *p = (const char *)a->data + a->byte_offset;
  DLDataType t = a->dtype;
  if (t.code == kDLFloat && t.bits == 32) return ((const float *)p)[i];
  if (t.code == kDLFloat && t.bits == 64) return ((const double *)p)[i];
  if (t.code == kDLInt && t.bits == 32) return ((const int32_t *)p)[i];
  if (t.code == kDLInt && t.bits == 64) return (double)((const int64_t *)p)[i];
  if (t.code == kDLInt && t.bits == 8) return ((const int8_t *)p)[i];
  if (t.code == kDLUInt && t.bits == 8) return ((const uint8_t *)p)[i];
  if (t.code == kDLInt && t.bits == 16) return ((const int16_t *)p)[i];
  if (t.code == kDLUInt && t.bits == 16) return ((const uint16_t *)p)[i];
  if (t.code == kDLUInt && t.bits == 32) return ((const uint32_t *)p)[i];
  if (t.code == kDLUInt && t.bits == 1) return ((const uint8_t *)p)[i];
  KASSERTF(0, "unsupported test dtype");
  return 0;
}

void tk_fill_random(DLTensor *a) {
  int64_t n = tk_numel(a);
  if (a->dtype.code == kDLUInt && a->dtype.bits == 32) { /* bfloat16 pairs (--precision bf16's weights) */
    uint32_t *p = (uint32_t *)((char *)a->data + a->byte_offset);
    for (int64_t i = 0; i < n; i++) p[i] = ir_bf16_round(test_randf()) | ir_bf16_round(test_randf()) << 16;
    return;
  }
  for (int64_t i = 0; i < n; i++) set(a, i, a->dtype.code == kDLFloat ? test_randf() : (double)(test_rand() % 7) - 3);
}

void tk_fill(DLTensor *a, double v) {
  int64_t n = tk_numel(a);
  for (int64_t i = 0; i < n; i++) set(a, i, v);
}

int tk_call(KilnModule *mod, const char *name, int n, DLTensor **arrays) {
  KilnFunction *f = NULL;
  if (kiln_module_get_function(mod, name, &f)) return -1;
  KilnValue args[32];
  int codes[32];
  KASSERT(n <= 32);
  for (int i = 0; i < n; i++) {
    args[i].v_handle = arrays[i];
    codes[i] = KILN_DLTENSOR;
  }
  KilnValue ret;
  int rc_code;
  int rc = kiln_func_call(f, args, codes, n, &ret, &rc_code);
  kiln_func_free(f);
  return rc;
}

double tk_rel_err(const DLTensor *a, const DLTensor *b) {
  int64_t n = tk_numel(a);
  if (n != tk_numel(b)) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = tk_get(a, i), y = tk_get(b, i);
    if (isnan(x) != isnan(y)) return INFINITY;
    if (isnan(x)) continue;
    num += (x - y) * (x - y);
    den += y * y;
  }
  if (den == 0) return sqrt(num);
  return sqrt(num / den);
}

int tk_template_cases(int n) {
  const char *e = getenv("KILN_X86_CASES");
  return e && atoi(e) > 0 ? atoi(e) : n;
}

Tensor *tk_relu5(Tensor *x) {
  Expr **v = te_axis_vars(5, NULL);
  return te_compute("T_relu", 5, x->shape, v, ir_max(te_read(x, 5, v), ir_f32(0)), "elemwise");
}

DLTensor **tk_run_vs_unscheduled(Schedule *s, int na, Tensor **args, const CompileOptions *copt, double tol,
                                 const char *desc) {
  Tensor *out = args[na - 1];
  Schedule *naive = te_create_schedule(1, &out);
  KilnModule *mod = kiln_build(s, na, args, "f", NULL, copt);
  KilnModule *ref_mod = mod ? kiln_build(naive, na, args, "f", NULL, copt) : NULL;
  if (!mod || !ref_mod) {
    test_fail(__FILE__, __LINE__, "%s: build failed: %s", desc, kiln_get_error());
    kiln_module_free(mod);
    kiln_module_free(ref_mod);
    return NULL;
  }
  DLTensor **arr = xcalloc((size_t)na, sizeof(DLTensor *)), **arr2 = xcalloc((size_t)na, sizeof(DLTensor *));
  for (int i = 0; i < na; i++) {
    arr[i] = tk_array_for(args[i]);
    if (i < na - 1) tk_fill_random(arr[i]);
    else tk_fill(arr[i], NAN); /* every output element must be written */
    arr2[i] = tk_array_for(args[i]);
    memcpy(arr2[i]->data, arr[i]->data, (size_t)tk_numel(arr[i]) * (size_t)((arr[i]->dtype.bits + 7) / 8));
  }
  bool ok = true;
  if (tk_call(mod, "f", na, arr) || tk_call(ref_mod, "f", na, arr2)) {
    test_fail(__FILE__, __LINE__, "%s: run failed: %s", desc, kiln_last_error());
    ok = false;
  }
  double err = ok ? tk_rel_err(arr[na - 1], arr2[na - 1]) : 0;
  if (ok && !(err < tol)) {
    test_fail(__FILE__, __LINE__, "%s: relative error %g against the unscheduled lowering (bound %g)", desc, err, tol);
    ok = false;
  }
  tk_arrays_free(na, arr2);
  kiln_module_free(mod);
  kiln_module_free(ref_mod);
  if (!ok) {
    tk_arrays_free(na, arr);
    return NULL;
  }
  return arr;
}

bool tk_config_vs_unscheduled(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg,
                              const CompileOptions *copt, double tol, const char *desc) {
  Schedule *s = NULL;
  int na = 0;
  Tensor **args = NULL;
  if (template_instantiate(tm, t, wl, cfg, &s, &na, &args)) {
    test_fail(__FILE__, __LINE__, "%s: instantiate failed: %s", desc, kiln_get_error());
    return false;
  }
  DLTensor **arr = tk_run_vs_unscheduled(s, na, args, copt, tol, desc);
  if (!arr) return false;
  tk_arrays_free(na, arr);
  return true;
}

const char *tk_config_lowered(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg,
                              Schedule **s, int *na, Tensor ***args, const char *desc) {
  *s = NULL;
  if (template_instantiate(tm, t, wl, cfg, s, na, args)) {
    test_fail(__FILE__, __LINE__, "%s: instantiate failed: %s", desc, kiln_get_error());
    return NULL;
  }
  LoweredFunc *f = kiln_lower(*s, *na, *args, "f", NULL);
  if (!f) {
    test_fail(__FILE__, __LINE__, "%s: lowering failed: %s", desc, kiln_get_error());
    return NULL;
  }
  return kiln_lowered_str(f);
}

void tk_conv2d_ref(const TkConv *c, const DLTensor *data, const DLTensor *kernel, DLTensor *out) {
  int64_t C = c->C, H = c->H, W = c->W, KH = c->KH, KW = c->KW, ib = c->ib, ob = c->ob;
  int64_t OH = (H + 2 * c->pad - (KH - 1) * c->dilation - 1) / c->stride + 1;
  int64_t OW = (W + 2 * c->pad - (KW - 1) * c->dilation - 1) / c->stride + 1;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t o = 0; o < c->O; o++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          double acc = 0;
          for (int64_t i = 0; i < c->real; i++)
            for (int64_t ky = 0; ky < KH; ky++)
              for (int64_t kx = 0; kx < KW; kx++) {
                int64_t ih = y * c->stride + ky * c->dilation - c->pad, iw = x * c->stride + kx * c->dilation - c->pad;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t k = c->packed ? (((((o / ob) * (C / ib) + i / ib) * KH + ky) * KW + kx) * ib + i % ib) * ob + o % ob
                                      : ((o * C + i) * KH + ky) * KW + kx;
                acc += (tk_get(data, (((n * (C / ib) + i / ib) * H + ih) * W + iw) * ib + i % ib) - c->zero) *
                       tk_get(kernel, k);
              }
          if (c->scale) acc *= c->scale[o];
          if (c->relu && acc < 0) acc = 0;
          set(out, (((n * (c->O / ob) + o / ob) * OH + y) * OW + x) * ob + o % ob, acc);
        }
}

LoweredFunc *tk_lower_binary(const char *name, int64_t n, bool mul) {
  Tensor *a = te_placeholder_c("a", 1, &n, DT_F32), *b = te_placeholder_c("b", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Expr *x = te_read1(a, v[0]), *y = te_read1(b, v[0]);
  Tensor *c = te_compute("c", 1, (Expr *[]){ir_i32(n)}, v, mul ? ir_mul(x, y) : ir_add(x, y), NULL);
  return kiln_lower(te_create_schedule(1, &c), 3, (Tensor *[]){a, b, c}, name, NULL);
}

LoweredFunc *tk_lower_relu(const char *name, int64_t n) {
  Tensor *a = te_placeholder_c("a", 1, &n, DT_F32);
  Expr **v = te_axis_vars(1, NULL);
  Tensor *c = te_compute("c", 1, (Expr *[]){ir_i32(n)}, v, ir_max(te_read1(a, v[0]), ir_f32(0)), NULL);
  return kiln_lower(te_create_schedule(1, &c), 2, (Tensor *[]){a, c}, name, NULL);
}

void tk_arrays_free(int n, DLTensor **a) {
  if (!a) return;
  for (int i = 0; i < n; i++) kiln_array_free(a[i]);
  free(a);
}

ConfigEntity *tk_random_config(const Template *tm, const Workload *wl, bool fallback, int64_t *idx) {
  ConfigSpace *cs = template_space(tm, target_host(), wl);
  CHECK_MSG(cs != NULL, "%s: %s", wl->key, kiln_get_error());
  if (!cs) return NULL;
  *idx = fallback ? -1 : (int64_t)(((uint64_t)test_rand() << 24 | test_rand()) % (uint64_t)space_size(cs));
  ConfigEntity *cfg = fallback ? template_fallback(tm, target_host(), wl) : space_get(cs, *idx);
  CHECK_MSG(cfg != NULL, "%s: no config: %s", wl->key, kiln_get_error());
  if (!cfg) return NULL;
  CHECK_OK(tm->check(target_host(), cfg, wl));
  return cfg;
}
