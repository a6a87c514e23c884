"""Misuse raises KilnError (with the C message), never crashes."""
import gc

import numpy as np
import pytest

import kiln
from kiln import te


@pytest.fixture(scope="module")
def add2():
    A = te.placeholder((3,), name="A")
    B = te.compute((3,), lambda i: A[i] + 2, name="B")
    s = te.create_schedule(B.op)
    return kiln.build(s, [A, B], name="add2"), A, B, s


def test_wrong_shape(add2):
    mod = add2[0]
    with pytest.raises(kiln.KilnError, match=r"argument 0 \(A\) has shape\[0\] = 4, expected 3"):
        mod["add2"](np.zeros(4, "float32"), np.zeros(3, "float32"))
    with pytest.raises(kiln.KilnError, match="2 dimensions, expected 1"):
        mod["add2"](kiln.nd.empty((3, 1)), kiln.nd.empty(3))


def test_wrong_dtype(add2):
    with pytest.raises(kiln.KilnError, match="dtype int32, expected float32"):
        add2[0]["add2"](np.zeros(3, "int32"), np.zeros(3, "float32"))
    with pytest.raises(kiln.KilnError, match="dtype float64, expected float32"):
        add2[0].entry_func(kiln.nd.empty(3), kiln.nd.empty(3, "float64"))


def test_wrong_arg_count(add2):
    with pytest.raises(kiln.KilnError, match="expected 2 arguments, got 1"):
        add2[0]["add2"](np.zeros(3, "float32"))
    with pytest.raises(kiln.KilnError, match="expected 2 arguments, got 3"):
        add2[0]["add2"](*[np.zeros(3, "float32")] * 3)


def test_wrong_argument_types(add2):
    mod, A, B, s = add2
    with pytest.raises(kiln.KilnError, match=r"argument 0 \(A\) must be a tensor"):
        mod["add2"]("A", np.zeros(3, "float32"))
    with pytest.raises(kiln.KilnError):
        mod["add2"](1.5, np.zeros(3, "float32"))
    # a str where a tensor goes, in the compiler API
    with pytest.raises(kiln.KilnError, match="schedule.create_schedule: argument 0 .* must be a Tensor, got str"):
        te.create_schedule("B")
    with pytest.raises(kiln.KilnError, match=r"schedule.Stage: argument 1 \(tensor\) must be a Tensor, got str"):
        s["B"]
    with pytest.raises(kiln.KilnError, match="driver.lower: .* must be a Tensor, got str"):
        kiln.lower(s, ["A", B])
    with pytest.raises(kiln.KilnError, match=r"schedule.vectorize: argument 1 \(axis\) must be an IterVar, got a Tensor"):
        s[B].vectorize(A)
    with pytest.raises(kiln.KilnError, match=r"schedule.split: argument 0 \(stage\) must be a Stage, got a Schedule"):
        kiln.capi.schedule.split(s, B.op.axis[0], 2)
    with pytest.raises(kiln.KilnError, match=r"te.read: argument 1 \(indices\) must be an Expr"):
        A["i"]
    with pytest.raises(kiln.KilnError, match="cannot pass a dict"):
        kiln.capi.te.read({}, 1)
    with pytest.raises(kiln.KilnError, match="expected 3 arguments"):
        kiln.capi.ir.BinaryOp("add", 1)
    with pytest.raises(kiln.KilnError, match="is not a data type"):
        te.placeholder((3,), dtype="floaty")
    with pytest.raises(kiln.KilnError, match="function takes 1 arguments but the shape has 2"):
        te.compute((3, 2), lambda i: A[i])
    with pytest.raises(kiln.KilnError, match="cannot be used in arithmetic"):
        A + 1
    with pytest.raises(kiln.KilnError, match="as a Python bool"):
        if A[0] < 1:
            pass
    with pytest.raises(kiln.KilnError, match=r"ir.BinaryOp: argument 2 \(b\) must be an Expr, an IterVar or a number, got str"):
        A[0] < "x"


def test_split_of_non_leaf_axis():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    i = s[B].op.axis[0]
    xo, xi = s[B].split(i, factor=8)
    with pytest.raises(kiln.KilnError, match="axis 'i' of stage 'B' is no longer a leaf"):
        s[B].split(i, factor=4)
    with pytest.raises(kiln.KilnError, match="factor must be positive"):
        s[B].split(xi, factor=0)
    with pytest.raises(kiln.KilnError, match="not adjacent"):
        s[B].fuse(xi, xo)
    with pytest.raises(kiln.KilnError, match="exactly one of factor and nparts"):
        s[B].split(xi)
    # the schedule is still usable after the errors
    f = kiln.build(s, [A, B])
    x = np.arange(64, dtype="float32")
    y = np.zeros(64, "float32")
    f.entry_func(x, y)
    np.testing.assert_array_equal(y, 2 * x)


def test_freed_module(add2):
    A, B, s = add2[1:]
    mod = kiln.build(s, [A, B], name="g")
    g = mod["g"]
    entry = mod.entry_func
    mod.free()
    mod.free()  # twice is fine
    a, b = np.zeros(3, "float32"), np.zeros(3, "float32")
    with pytest.raises(kiln.KilnError, match="called after its module was freed"):
        g(a, b)
    with pytest.raises(kiln.KilnError, match="called after its module was freed"):
        entry(a, b)
    with pytest.raises(kiln.KilnError, match="the module was freed"):
        mod["g"]
    with pytest.raises(kiln.KilnError, match="the module was freed"):
        mod.export_library("/tmp/never.so")
    # a module released by the garbage collector while a function lives
    mod2 = kiln.build(s, [A, B], name="h")
    h = mod2["h"]
    del mod2
    gc.collect()
    h(a, b)  # the function keeps its module
    assert list(b) == [2, 2, 2]


def test_unsupported_target(add2):
    A, B, s = add2[1:]
    with pytest.raises(kiln.KilnError, match=r"target 'rocm' is not supported \(supported: llvm, cpu, c, cuda, opencl\)"):
        kiln.build(s, [A, B], target="rocm")
    with pytest.raises(kiln.KilnError, match="target_host 'opencl' is not a CPU target"):
        kiln.build(s, [A, B], target="cpu", target_host="opencl")
    with pytest.raises(kiln.KilnError, match="stage 'B' has no loop bound to a GPU thread"):
        kiln.build(s, [A, B], target="cuda")


def test_missing_function(add2):
    with pytest.raises(kiln.KilnError, match="has no function 'nope' \\(it has: add2\\)"):
        add2[0]["nope"]
    with pytest.raises(kiln.KilnError, match="no such file"):
        kiln.runtime.load_module("/nonexistent/x.so")


def test_illegal_schedules():
    A = te.placeholder((16, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((16,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(kiln.KilnError, match="is a reduction and cannot be inlined"):
        s[B].compute_inline()
    with pytest.raises(kiln.KilnError, match="reduce axis with a data axis"):
        s[B].fuse(s[B].op.axis[0], s[B].op.reduce_axis[0])
    with pytest.raises(kiln.KilnError, match="no longer a leaf|does not belong"):
        s[C].parallel(s[B].op.axis[0])
    with pytest.raises(kiln.KilnError, match="not a reduce axis|must be an IterVar"):
        te.compute((16,), lambda i: te.sum(A[i, 0], axis=[C.op.axis[0]]))


def test_tensor_beyond_32_bit_indexing():
    # generated code indexes with 32-bit integers: 2^31 elements or more is
    # an error where the tensor is made (TE), or the call (relay)
    with pytest.raises(kiln.KilnError, match=r"placeholder 'A': shape \(65536, 65536\) has 4294967296 elements, "
                                             r"more than Kiln supports \(2\^31 - 1"):
        te.placeholder((65536, 65536), name="A")
    with pytest.raises(kiln.KilnError, match=r"placeholder 'B': shape \(1099511627776\) has"):
        te.placeholder((2 ** 40,), name="B")
    A = te.placeholder((4,), name="A")
    with pytest.raises(kiln.KilnError, match=r"compute 'C': shape \(65536, 65536\)"):
        te.compute((65536, 65536), lambda i, j: A[0], name="C")
    with pytest.raises(kiln.KilnError, match="reduce axis 'k': extent 4294967296 is too large"):
        te.reduce_axis((0, 2 ** 32), name="k")
    from kiln import relay
    x = relay.var("x", shape=(65536, 65536))
    with pytest.raises(kiln.KilnError, match="4294967296 elements, more than Kiln supports"):
        relay.nn.relu(x)
