/*
 * npy.h - NumPy .npy / .npz reading and writing (npy.c), for the kiln
 * command's inputs and outputs.
 */
#ifndef KILN_CLI_NPY_H
#define KILN_CLI_NPY_H

#include "base/base.h"
#include "kiln/runtime.h"

typedef struct NamedArray {
  char *name;      /* heap */
  DLTensor *array; /* a kiln array */
} NamedArray;

int npy_load(const char *path, DLTensor **out);
int npy_load_bytes(const void *data, size_t n, const char *what, DLTensor **out);
int npy_save(const char *path, const DLTensor *t);
char *npy_to_bytes(const DLTensor *t, size_t *size); /* heap */
int npz_load(const char *path, int *count, NamedArray **out);
int npz_save(const char *path, int count, const NamedArray *arrays);
void npz_free(int count, NamedArray *arrays);

#endif
