/*
 * kernel_util.h - helpers for tests that build and run kernels: random
 * arrays, calling a module function on arrays, comparing results.
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

#endif
