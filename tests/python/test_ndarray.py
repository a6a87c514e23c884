"""Arrays shared with NumPy without copies."""
import numpy as np
import pytest

import kiln


def addr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int32", "int64", "uint8", "uint16", "bool"])
def test_round_trip_no_copy(dtype):
    x = (np.arange(24) % 3 == 0) if dtype == "bool" else np.arange(24).astype(dtype)
    x = x.reshape(2, 3, 4)
    before = addr(x)
    a = kiln.nd.array(x, kiln.cpu())
    assert a.shape == (2, 3, 4)
    assert a.dtype == dtype
    assert a.data_ptr == before
    y = a.numpy()
    assert addr(y) == before
    assert addr(a.asnumpy()) == before
    assert addr(np.asarray(a)) == before
    np.testing.assert_array_equal(y, x)
    # writes through either side are seen by the other
    y.flat[5] = 1
    assert x.flat[5] == 1


def test_non_contiguous_copies_once():
    base = np.arange(40, dtype="float32").reshape(5, 8)
    view = base[:, ::2]
    assert not view.flags.c_contiguous
    a = kiln.nd.array(view)
    assert a.data_ptr != addr(base)
    y = a.numpy()
    assert addr(y) == a.data_ptr
    assert y.flags.c_contiguous
    np.testing.assert_array_equal(y, view)


def test_empty_numpy_shares_memory():
    a = kiln.nd.empty((3, 5), "float32", kiln.cpu())
    assert a.shape == (3, 5) and a.dtype == "float32"
    assert a.device == kiln.cpu(0)
    y = a.numpy()
    assert addr(y) == a.data_ptr
    y[:] = 7
    z = a.numpy()
    assert addr(z) == addr(y)
    assert (z == 7).all()
    # the NumPy view keeps the Kiln array alive
    del a
    assert (y == 7).all()
    a = kiln.nd.empty(4, "int64")
    assert a.shape == (4,)
    a.copyfrom(np.arange(4))
    assert list(a.numpy()) == [0, 1, 2, 3]


def test_array_outlives_numpy_name():
    a = kiln.nd.array(np.full(1000, 3.0, "float32"))
    import gc
    gc.collect()
    assert (a.numpy() == 3.0).all()


def test_kernel_writes_numpy_memory():
    n = 100
    A = kiln.placeholder((n,), name="A")
    B = kiln.compute((n,), lambda i: A[i] * 3 - 1, name="B")
    s = kiln.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = kiln.build(s, [A, B], name="f")
    x = np.random.rand(n).astype("float32")
    out = np.empty(n, "float32")
    b = kiln.nd.array(out)
    f["f"](kiln.nd.array(x), b)
    np.testing.assert_allclose(out, x * 3 - 1, rtol=1e-5, atol=1e-6)
    assert addr(b.numpy()) == addr(out)


def test_str_and_repr():
    a = kiln.nd.array(np.zeros(3, "float32"))
    assert str(a) == "[0. 0. 0.]"
    assert "cpu(0)" in repr(a)


def test_bad_arrays():
    with pytest.raises(kiln.KilnError, match="cannot be a Kiln array"):
        kiln.nd.array(np.array([1 + 2j]))
    with pytest.raises(kiln.KilnError, match="only when it holds text"):
        kiln.nd.array(np.array(["a", 3], dtype=object))
    with pytest.raises(kiln.KilnError, match="not a data type"):
        kiln.nd.empty((2,), "floaty")
    with pytest.raises(kiln.KilnError, match=r"not supported \(supported: cpu, cuda, opencl\)"):
        kiln.device("rocm")
    assert kiln.device("cpu") == kiln.context("llvm") == kiln.cpu()
