/*
 * kernel_util.h - helpers for tests that build and run kernels: random
 * arrays, calling a module function on arrays, comparing results, a
 * schedule against its unscheduled lowering.
 */
#ifndef KILN_TEST_KERNEL_UTIL_H
#define KILN_TEST_KERNEL_UTIL_H

#include "codegen/codegen.h"
#include "knob/knob.h"
#include "test.h"

/* A float32 (or other dtype) array shaped like tensor t (constant shape). */
DLTensor *tk_array_for(Tensor *t);
DLTensor *tk_array(int ndim, const int64_t *shape, DType t);
void tk_fill_random(DLTensor *a);
void tk_fill(DLTensor *a, double v);
int64_t tk_numel(const DLTensor *a);
double tk_get(const DLTensor *a, int64_t i);
/* Call function name of mod on n arrays; 0 on success. */
int tk_call(KilnModule *mod, const char *name, int n, DLTensor **arrays);
/* Relative L2 error between two arrays of the same size. */
double tk_rel_err(const DLTensor *a, const DLTensor *b);
/* The number of random template cases: n, or $KILN_X86_CASES when set
 * (stress runs). */
int tk_template_cases(int n);
/* A config of template tm for workload wl to check its schedule with: the
 * fallback (*idx = -1), or a random point of the space (*idx its index),
 * checked by the template (a failed check fails the test); NULL, the test
 * failed, when there is no space or no config. */
ConfigEntity *tk_random_config(const Template *tm, const Workload *wl, bool fallback, int64_t *idx);
/* relu over a 5-D (NCHW[x]c) tensor: a fused epilogue for the template tests. */
Tensor *tk_relu5(Tensor *x);

/* A direct 2-D convolution in double, the reference of the NCHW[x]c conv
 * templates' tests: data [N, C/ib, H, W, ib] of any dtype tk_get reads,
 * the kernel OIHW [O, C, KH, KW] or packed [O/ob, C/ib, KH, KW, ib, ob],
 * the output float32 [N, O/ob, OH, OW, ob].  The sum runs over the first
 * `real` input channels, each product (x - zero) * w with the padding
 * contributing nothing; each output channel is then scaled (scale NULL:
 * by 1) and clamped at 0 when relu. */
typedef struct TkConv {
  int64_t N, C, H, W; /* data, C channels in blocks of ib */
  int64_t O, KH, KW;  /* kernel */
  int64_t ib, ob;     /* the channel blocks of data and output */
  int64_t real;       /* the input channels summed (at most C) */
  int stride, pad, dilation;
  bool packed;        /* the kernel packed in blocks (else OIHW) */
  double zero;        /* subtracted from each data value (a zero point) */
  const float *scale; /* per output channel, or NULL */
  bool relu;
} TkConv;
void tk_conv2d_ref(const TkConv *c, const DLTensor *data, const DLTensor *kernel, DLTensor *out);

/* The graph-runtime tests' elementwise kernels over n float32:
 * c = a + b (or a * b when mul), and c = max(a, 0). */
LoweredFunc *tk_lower_binary(const char *name, int64_t n, bool mul);
LoweredFunc *tk_lower_relu(const char *name, int64_t n);

/* Every schedule against its unscheduled lowering: build s and the default
 * schedule of the same output (args[na - 1]) over args, run both on the
 * same random inputs (the outputs filled with NaN first, so an element
 * the schedule skips shows), and compare within tol.  Returns the
 * scheduled run's arrays (the caller checks them against a reference of
 * its own, then frees them with tk_arrays_free), or NULL after a
 * test_fail naming desc. */
DLTensor **tk_run_vs_unscheduled(Schedule *s, int na, Tensor **args, const CompileOptions *copt, double tol,
                                 const char *desc);
void tk_arrays_free(int n, DLTensor **a);
/* tm's schedule of wl with config cfg for target t, instantiated and run
 * against its unscheduled lowering (tk_run_vs_unscheduled), its arrays
 * freed: false after a test_fail naming desc. */
bool tk_config_vs_unscheduled(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg,
                              const CompileOptions *copt, double tol, const char *desc);
/* The lowered text of tm's schedule of wl with config cfg for target t,
 * its schedule and arguments in *s, *na, *args; NULL after a test_fail
 * naming desc when it does not instantiate or lower. */
const char *tk_config_lowered(const Template *tm, const Target *t, const Workload *wl, const ConfigEntity *cfg,
                              Schedule **s, int *na, Tensor ***args, const char *desc);

#endif
