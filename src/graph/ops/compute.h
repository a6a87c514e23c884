/*
 * compute.h - the compute adapters of the op table: each turns a graph
 * node and its input tensors into a call of the operator library
 * (src/topi), reading the node's attributes.
 *
 *   compute.c   elementwise, nn, transform and reduce adapters
 */
#ifndef KILN_GRAPH_OP_COMPUTE_H
#define KILN_GRAPH_OP_COMPUTE_H

#include "../graph.h"

Tensor *compute_elemwise(GNode *n, Tensor **ins, const Strategy *st);
Tensor *compute_nn(GNode *n, Tensor **ins, const Strategy *st);
Tensor *compute_transform(GNode *n, Tensor **ins, const Strategy *st);
Tensor *compute_reduce(GNode *n, Tensor **ins, const Strategy *st);
/* NCHW[x]c convolutions (x86 templates), in backend/strategy.c */
Tensor *graph_compute_conv2d_nchwc(GNode *n, Tensor **ins, const Strategy *st);

#endif
