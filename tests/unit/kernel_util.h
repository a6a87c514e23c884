/*
 * kernel_util.h - helpers for tests that build and run kernels: random
 * arrays, calling a module function on arrays, comparing results, a
 * schedule against its unscheduled lowering.
 */
#ifndef KILN_TEST_KERNEL_UTIL_H
#define KILN_TEST_KERNEL_UTIL_H

#include "codegen/codegen.h"
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
/* relu over a 5-D (NCHW[x]c) tensor: a fused epilogue for the template tests. */
Tensor *tk_relu5(Tensor *x);

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

#endif
