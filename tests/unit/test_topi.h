/*
 * test_topi.h - the harness the operator tests share.
 *
 * A batch collects cases: each is an operator's output tensor, its inputs
 * (arrays filled with fresh random values), and a reference result the
 * test computes independently in plain C (direct loops, double
 * accumulation).  Every case is scheduled with topi_schedule_generic and
 * lowered to its own function; the batch builds all of them into one
 * module (one compiler run), runs each, and compares: relative L2 error
 * within the case's tolerance for floats, exact equality for integers and
 * bool.  A case can also ask for topi_eval to be checked against the
 * compiled kernel.
 */
#ifndef KILN_TEST_TOPI_H
#define KILN_TEST_TOPI_H

#include "kernel_util.h"
#include "topi/topi.h"

#define TB_MAX_CASES 64

typedef struct TCase {
  const char *label;
  int nin;
  Tensor *in[8];
  DLTensor *a[8]; /* input arrays, random unless the test refills them */
  Tensor *out;
  DLTensor *res, *ref; /* the kernel's result, the reference */
  double tol;          /* relative L2 error allowed; 0: exact */
  bool eval;           /* also compare topi_eval with the kernel */
  LoweredFunc *f;
} TCase;

typedef struct TBatch {
  TCase c[TB_MAX_CASES];
  int n;
} TBatch;

/* Add a case (NULL, with a failure recorded, if out is NULL or does not
 * schedule and lower). */
TCase *tb_add(TBatch *b, const char *label, int nin, Tensor **in, Tensor *out, double tol);
/* The reference computed by topi_eval (for compositions of operators
 * whose parts have independent references). */
void tb_ref_eval(TCase *c);
/* Build, run and compare every case, then free the arrays. */
void tb_run(TBatch *b);
/* The lowered text of out (one input, in) under the generic schedule;
 * NULL (a check failed) when it does not schedule or lower. */
const char *tt_generic_lowered(Tensor *in, Tensor *out);

/* Arrays. */
void fill_uniform(DLTensor *a, double lo, double hi);
void fill_int(DLTensor *a, int64_t lo, int64_t hi); /* inclusive */
void tset(DLTensor *a, int64_t i, double v);
double tget(const DLTensor *a, int64_t i);
int64_t numel(const DLTensor *a);
/* Row-major index helpers over an array's shape. */
void unravel(int64_t flat, int ndim, const int64_t *shape, int64_t *idx);
int64_t ravel(int ndim, const int64_t *shape, const int64_t *idx);

/* Random sizes: one of a set with odd sizes, 1 and powers of two. */
int64_t rnd_dim(void);
int64_t rnd_range(int64_t lo, int64_t hi);

/* Placeholders. */
Tensor *ph(const char *name, int ndim, const int64_t *shape, DType t);

/* The suites. */
extern const TestCase topi_tests[];
extern const TestCase topi_nn_tests[];
extern const TestCase topi_transform_tests[];
extern const TestCase topi_scatter_tests[];

#endif
