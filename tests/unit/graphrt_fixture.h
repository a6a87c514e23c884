/*
 * graphrt_fixture.h - the module the graph-runtime tests share: three
 * kernels over N floats (fused_add, fused_multiply, fused_nn_relu), a graph
 * JSON written by hand in TVM's format and a params blob, embedded as the
 * "graph_json" and "params" blobs; the graph is a chain of six operators
 *
 *   e3 = x + b        (fused_add)          e6 = e5 * w   (fused_multiply_1)
 *   e4 = e3 * w       (fused_multiply)     e7 = e6 + e3  (fused_add_1)
 *   e5 = relu(e4)     (fused_nn_relu)      e8 = relu(e7) (fused_nn_relu_1)
 *
 * with outputs e8 and e5, and the same arithmetic in C to check results.
 * The tests are test_graphrt.c (params, planner, executor, threads) and
 * test_graphrt_debug.c (the debug executor and the function registry).
 */
#ifndef KILN_TEST_GRAPHRT_FIXTURE_H
#define KILN_TEST_GRAPHRT_FIXTURE_H

#include "kernel_util.h"

#define N 65536

static inline float *fdata(const DLTensor *t) { return (float *)((char *)t->data + t->byte_offset); }

typedef struct GraphOpts {
  int storage_id; /* write attrs.storage_id */
  int x2d;        /* x is (256, N/256) and node 3 flattens its data */
  int flatten;    /* with x2d: write flatten_data "1" on node 3 */
} GraphOpts;

/* The graph JSON with the options above (caller frees). */
char *gr_graph_json(GraphOpts o);

extern DLTensor *gr_b, *gr_w; /* the params */
extern void *gr_params;      /* their blob */
extern size_t gr_params_size;

/* The shared module, built on first use; NULL (a failure reported) if it
 * cannot be built. */
KilnModule *gr_module(void);
/* The outputs for input x, in C. */
void gr_reference(const float *x, float *out0, float *out1);
/* Run ex on x and compare both outputs with the reference; 0 if equal. */
int gr_check_outputs(KilnGraphExecutor *ex, DLTensor *x);
DLTensor *gr_random_x(void);

/* test_graphrt_debug.c's cases, in test_graphrt.c's table */
void test_debug_profile(void);
void test_registry(void);

#endif
