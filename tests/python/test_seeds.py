"""The seeds' Python examples, with tvm replaced by kiln."""
import numpy as np
import pytest

import kiln


def test_vector_add_prints(capsys):
    # 使用TVM进行向量加法.md
    m = 3
    ctx = kiln.cpu()
    A = kiln.placeholder((m,), name="A")
    B = kiln.compute((m,), lambda i: A[i] + 2, name="B")
    s = kiln.create_schedule(B.op)
    fm = kiln.build(s, [A, B], "cpu", target_host="llvm", name="mul")

    ff = fm.get_function("mul")
    ff = fm.entry_func

    a = kiln.nd.array(np.zeros(m, A.dtype), ctx)
    b = kiln.nd.array(np.zeros(m, A.dtype), ctx)
    res = ff(a, b)
    assert res is None
    print(b)
    assert capsys.readouterr().out == "[2. 2. 2.]\n"

    # the module itself is callable, as TVM's (its entry function)
    c = kiln.nd.array(np.zeros(m, A.dtype), ctx)
    fm(a, c)
    print(c)
    assert capsys.readouterr().out == "[2. 2. 2.]\n"
    assert fm.get_function("mul").__name__ == "mul"


def test_names_the_notes_use():
    from kiln import te, tir  # noqa: F401  pylint: disable=import-outside-toplevel
    from kiln.relay.frontend import from_onnx  # pylint: disable=import-outside-toplevel
    assert from_onnx is kiln.frontend.from_onnx
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    x = tir.const(2.0, "float32")
    for f in (te.exp, te.log, te.sqrt, te.tanh, te.sigmoid, tir.exp):
        assert "(" in str(f(x))
    s = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="s")
    mx = te.compute((1,), lambda i: te.max(A[k], axis=k), name="mx")
    mn = te.compute((1,), lambda i: te.min(te.if_then_else(A[k] > x, A[k], x), axis=k), name="mn")
    assert {t.name for t in (s, mx, mn)} == {"s", "mx", "mn"}


def test_lower_vector_add_text(capsys):
    # 通过计算图如何生成最简单的代码.md
    n = kiln.const(128, "int32")
    a = kiln.placeholder((n,), name="a")
    b = kiln.placeholder((n,), name="b")
    c = kiln.compute((n,), lambda i: a[i] + b[i], name="c")

    sch = kiln.create_schedule(c.op)
    ir = kiln.lower(sch, [a, b, c], simple_mode=True)
    print(ir)
    out = capsys.readouterr().out
    assert out in ("produce c {\n  for (i, 0, 128) {\n    c[i] = (a[i] + b[i])\n  }\n}\n",
                   "produce c {\n  for (i, 0, 128) {\n    c[i] = (a[i] + b[i])\n  }\n}\n\n")
    # the full LoweredFunc prints the same body
    f = kiln.lower(sch, [a, b, c])
    assert str(f) == str(ir)
    assert f.name == "default_function"
    assert [t.name for t in f.args] == ["a", "b", "c"]


def matmul_v1(N, L, M, dtype, tile_y, tile_x):
    # 最简单的Tuner分析.md, with the knobs given directly
    A = kiln.placeholder((N, L), name="A", dtype=dtype)
    B = kiln.placeholder((L, M), name="B", dtype=dtype)

    k = kiln.reduce_axis((0, L), name="k")
    C = kiln.compute((N, M), lambda i, j: kiln.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = kiln.create_schedule(C.op)

    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    yo, yi = s[C].split(y, tile_y)
    xo, xi = s[C].split(x, tile_x)

    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


@pytest.mark.parametrize("tile_y,tile_x", [(1, 1), (2, 4), (4, 8), (8, 16), (16, 2), (16, 16)])
def test_matmul_template(tile_y, tile_x):
    N, L, M = 37, 29, 41  # every tile leaves a tail
    s, (A, B, C) = matmul_v1(N, L, M, "float32", tile_y, tile_x)
    text = str(kiln.lower(s, [A, B, C], simple_mode=True))
    assert "k, 0, 29" in text
    f = kiln.build(s, [A, B, C], target="llvm", name="matmul")
    rng = np.random.default_rng(tile_y * 100 + tile_x)
    a = rng.uniform(-1, 1, (N, L)).astype("float32")
    b = rng.uniform(-1, 1, (L, M)).astype("float32")
    c = kiln.nd.empty((N, M), "float32", kiln.cpu())
    f["matmul"](kiln.nd.array(a), kiln.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-5)


def test_matmul_float64_numpy_args():
    s, (A, B, C) = matmul_v1(16, 8, 12, "float64", 4, 4)
    f = kiln.build(s, [A, B, C])
    a = np.random.rand(16, 8)
    b = np.random.rand(8, 12)
    c = np.zeros((16, 12))
    f.entry_func(a, b, c)  # NumPy arrays passed directly, written in place
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)
