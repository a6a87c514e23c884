"""Tensor expressions, reductions and schedule primitives from Python,
each checked against NumPy."""
import numpy as np
import pytest

import kiln
from kiln import te


def run(s, args, inputs, name="f"):
    """Build s over args, run on inputs (+ zeroed outputs), return outputs."""
    f = kiln.build(s, args, name=name)
    arrays = [kiln.nd.array(x) for x in inputs]
    outs = [kiln.nd.array(np.zeros([int(d) for d in t.shape], t.dtype)) for t in args[len(inputs):]]
    f[name](*arrays, *outs)
    return [o.numpy() for o in outs]


def test_expressions_and_promotion():
    A = te.placeholder((4,), name="A")
    i = te.var("i")
    n64 = te.var("n", "int64")
    assert str(A[i] + 2) == "(A[i] + 2f)"
    assert str(2 * A[i]) == "(2f*A[i])"
    assert str(-A[i]) == "(0f - A[i])"
    assert (n64 * 4).dtype == "int64"
    assert (i + 0.5).dtype == "float32"
    assert (A[i] < 1).dtype == "bool"
    assert str(i // 4) == "floordiv(i, 4)"
    assert str(i % 4) == "floormod(i, 4)"
    assert str(i / 4) == "(i/4)"
    assert str((i < 3) & (i > 0)) == "((i < 3) && (i > 0))"
    assert str(te.exp(A[i])) == "exp(A[i])"
    assert str(A[i].astype("float64")) == "float64(A[i])"
    assert str(te.if_then_else(i < 2, A[i], 0)) == "select((i < 2), A[i], 0f)"
    c = kiln.const(3)
    assert isinstance(c, kiln.expr.IntImm) and c.value == 3 and int(c) == 3
    assert kiln.const(2.5).value == 2.5 and kiln.const(1, "float64").dtype == "float64"
    assert kiln.const(1 << 40).dtype == "int64"
    assert (i == i) and not (i != i)
    assert (c == 3) and bool(c != 4)
    assert {i: 1}[i] == 1
    assert str(kiln.capi.ir.Simplify(kiln.const(2) + 3)) == "5"
    e = A[i] * 2
    assert e.kind == "Mul" and str(e.operands[0]) == "A[i]"
    assert e.operands[0].tensor.same_as(A)


def test_elementwise_math():
    n = 50
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: te.sqrt(A[i]) + te.log(B[i]) * te.tanh(A[i]) - te.sigmoid(B[i]),
                   name="C")
    D = te.compute((n,), lambda i: te.max(A[i], B[i]) + te.min(A[i], 0.5) + te.power(A[i], 2.0),
                   name="D")
    s = te.create_schedule([C.op, D.op])
    a = np.random.rand(n).astype("float32") + 0.1
    b = np.random.rand(n).astype("float32") + 0.1
    c, d = run(s, [A, B, C, D], [a, b])
    np.testing.assert_allclose(c, np.sqrt(a) + np.log(b) * np.tanh(a) - 1 / (1 + np.exp(-b)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, np.maximum(a, b) + np.minimum(a, 0.5) + a ** 2, rtol=1e-5, atol=1e-6)


def test_reductions():
    n, m = 13, 17
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="S")
    k2 = te.reduce_axis((0, m), name="k2")
    M = te.compute((n,), lambda i: te.max(A[i, k2], axis=k2, where=A[i, k2] < 0.8), name="M")
    k3 = te.reduce_axis((0, m), name="k3")
    P = te.compute((n,), lambda i: te.prod(A[i, k3] + 1, axis=[k3]), name="P")
    r = te.reduce_axis((0, n), name="r")
    c = te.reduce_axis((0, m), name="c")
    T = te.compute((1,), lambda i: te.min(A[r, c], axis=[r, c]), name="T")
    s = te.create_schedule([S.op, M.op, P.op, T.op])
    a = np.random.rand(n, m).astype("float32")
    outs = run(s, [A, S, M, P, T], [a])
    np.testing.assert_allclose(outs[0], a.sum(1), rtol=1e-5)
    np.testing.assert_allclose(outs[1], np.where(a < 0.8, a, -np.inf).max(1), rtol=1e-6)
    np.testing.assert_allclose(outs[2], (a + 1).prod(1), rtol=1e-4)
    np.testing.assert_allclose(outs[3], [a.min()], rtol=1e-6)
    assert [x.name for x in S.op.reduce_axis] == ["k"]
    assert str(k.dom.extent) == "17" and k.iter_type == "reduce"


def test_comm_reducer():
    n, m = 9, 11
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    absmax = te.comm_reducer(lambda x, y: te.max(te.abs(x), te.abs(y)),
                             lambda t: kiln.const(0, t), name="absmax")
    B = te.compute((n,), lambda i: absmax(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    a = np.random.uniform(-1, 1, (n, m)).astype("float32")
    (b,) = run(s, [A, B], [a])
    np.testing.assert_allclose(b, np.abs(a).max(1), rtol=1e-6)


def test_symbolic_shape():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2 + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    f = kiln.build(s, [A, B], name="f")
    for length in (1, 7, 64):
        a = np.random.rand(length).astype("float32")
        b = np.zeros(length, "float32")
        f["f"](a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    with pytest.raises(kiln.KilnError):
        f["f"](np.zeros(3, "float32"), np.zeros(4, "float32"))


def test_schedule_primitives():
    N, M, L = 32, 24, 16
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((N, M), lambda i, j: te.max(C[i, j], 0.0), name="D")
    a = np.random.uniform(-1, 1, (N, L)).astype("float32")
    b = np.random.uniform(-1, 1, (L, M)).astype("float32")
    ref = np.maximum(a @ b, 0)

    # tile + vectorize + unroll + parallel + compute_at
    s = te.create_schedule(D.op)
    yo, xo, yi, xi = s[D].tile(D.op.axis[0], D.op.axis[1], 8, 8)
    s[D].vectorize(xi)
    s[D].unroll(yi)
    fused = s[D].fuse(yo, xo)
    s[D].parallel(fused)
    s[C].compute_at(s[D], fused)
    assert [v.name for v in s[D].leaf_iter_vars] == ["i.outer.j.outer.fused", "i.inner", "j.inner"]
    assert s[C].attach_type == "scope"
    (d,) = run(s, [A, B, D], [a, b])
    np.testing.assert_allclose(d, ref, rtol=1e-4, atol=1e-5)

    # compute_inline of the elementwise stage, split by nparts, pragma
    s = te.create_schedule(D.op)
    E = te.compute((N, M), lambda i, j: D[i, j] * 2, name="E")
    s = te.create_schedule(E.op)
    s[D].compute_inline()
    io, ii = s[E].split(E.op.axis[0], nparts=4)
    s[E].pragma(io, "auto_unroll_max_step", 16)
    assert s[D].attach_type == "inline"
    (e,) = run(s, [A, B, E], [a, b])
    np.testing.assert_allclose(e, 2 * ref, rtol=1e-4, atol=1e-5)


def test_prefetch():
    # TVM's s[B].prefetch(A, axis, offset): the next row's lines touched at
    # the start of each row, the result unchanged
    N, M = 16, 32
    A = te.placeholder((N, M), name="A")
    B = te.compute((N, M), lambda i, j: A[i, j] * 3, name="B")
    s = te.create_schedule(B.op)
    s[B].prefetch(A, B.op.axis[0], 1)
    text = str(kiln.lower(s, [A, B], simple_mode=True))
    assert "prefetch(A[min((((i*32) + (prefetch.A.0*16)) + 32), 511)], 3)" in text
    a = np.random.rand(N, M).astype("float32")
    (b,) = run(s, [A, B], [a])
    np.testing.assert_allclose(b, 3 * a, rtol=1e-6)
    with pytest.raises(kiln.KilnError, match="locality 5 for 'A' is not 0"):
        s[B].prefetch(A, B.op.axis[1], 1, locality=5)
    # spread over the rows: column j touches in the rows i % 2 == j % 2
    s = te.create_schedule(B.op)
    s[B].prefetch(A, B.op.axis[1], 16)
    s[B].prefetch_spread(B.op.axis[1], B.op.axis[0], 2)
    text = str(kiln.lower(s, [A, B], simple_mode=True))
    assert "if ((floormod(j, 2) == i_mod2))" in text  # i % 2 bound once per row (hoist_divmod)
    (b,) = run(s, [A, B], [a])
    np.testing.assert_allclose(b, 3 * a, rtol=1e-6)


def test_cache_read_write():
    N, M, L = 16, 16, 8
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    CC = s.cache_write(C, "local")
    assert isinstance(AA, kiln.Tensor) and isinstance(CC, kiln.Tensor)
    assert len(s.stages) == 5
    yo, yi = s[C].split(C.op.axis[0], factor=4)
    s[CC].compute_at(s[C], yo)
    s[AA].compute_at(s[CC], s[CC].op.reduce_axis[0])
    a = np.random.rand(N, L).astype("float32")
    b = np.random.rand(L, M).astype("float32")
    (c,) = run(s, [A, B, C], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_export_and_load(tmp_path):
    A = te.placeholder((5,), name="A")
    B = te.compute((5,), lambda i: A[i] - 1, name="B")
    s = te.create_schedule(B.op)
    mod = kiln.build(s, [A, B], name="minus1")
    assert mod.function_names == ["minus1"]
    src = mod.get_source()
    assert "minus1" in src and KILN_MAGIC in src
    path = tmp_path / "minus1.so"
    mod.export_library(str(path))
    mod.free()
    loaded = kiln.runtime.load_module(str(path))
    assert loaded.entry_func.__name__ == "minus1"
    a = np.arange(5, dtype="float32")
    b = np.zeros(5, "float32")
    loaded["minus1"](a, b)
    assert list(b) == [-1, 0, 1, 2, 3]
    # also through the registry's packed module functions
    m2 = kiln.get_global_func("runtime.module_load")(str(path))
    f = kiln.get_global_func("runtime.module_get_function")(m2, "minus1")
    f(a, b)
    assert list(b) == [-1, 0, 1, 2, 3]


KILN_MAGIC = "kiln-module-v1"


def test_build_lowered_funcs():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * A[i], name="B")
    C = te.compute((6,), lambda i: A[i] + A[i], name="C")
    f1 = kiln.lower(te.create_schedule(B.op), [A, B], name="square")
    f2 = kiln.lower(te.create_schedule(C.op), [A, C], name="double")
    assert isinstance(f1, kiln.LoweredFunc) and f1.name == "square"
    mod = kiln.build([f1, f2])
    assert sorted(mod.function_names) == ["double", "square"]
    a = np.arange(6, dtype="float32")
    out = np.zeros(6, "float32")
    mod["square"](a, out)
    assert list(out) == list(a * a)
    mod["double"](a, out)
    assert list(out) == list(2 * a)
    with pytest.raises(kiln.KilnError, match="two functions are named 'square'"):
        kiln.build([f1, f1])


def test_tensor_properties():
    A = te.placeholder((3, 4), name="A", dtype="int32")
    B = te.compute((3, 4), lambda i, j: A[i, j] + 1, name="B", tag="elemwise")
    assert A.shape == (3, 4) and A.shape[0] == 3 and A.dtype == "int32" and A.ndim == 2
    assert B.op.tag == "elemwise" and B.op.kind == "compute" and A.op.kind == "placeholder"
    assert [v.name for v in B.op.axis] == ["i", "j"]
    assert B.op.input_tensors == [A]
    assert B.op.output(0).same_as(B)
    assert repr(B) == "Tensor(shape=[3, 4], op.name=B)"
    s = te.create_schedule(B.op)
    assert s[B].op.axis[0].same_as(B.op.axis[0])
    assert s[B].op == B.op and s[B.op].same_as(s[B])
    assert repr(B.op.axis[0]) == "iter_var(i, range(min=0, ext=3))"
    assert str(B.op.axis[0].dom) == "range(min=0, ext=3)"
    xo, xi = s[B].split(B.op.axis[1], factor=2)
    assert xo.dom is None and xo.name == "j.outer"
