/*
 * test_ir.h - what the IR tests share (test_ir.c, test_simplify.c,
 * test_simplify_random.c): int32 constants, simplify-and-print, and a
 * tensor for the printer.
 */
#ifndef KILN_TEST_IR_H
#define KILN_TEST_IR_H

#include "test.h"

#include "ir/ir.h"
#include "te/te.h"

#define I(v) ir_i32(v)
#define SIMP_STR(e) ir_expr_str(ir_simplify(e))

/* A tensor good enough for the printer: only the name is read. */
Tensor *test_fake_tensor(const char *name);

#endif
