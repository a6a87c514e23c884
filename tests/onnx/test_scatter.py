"""ScatterElements, ScatterND and MaxUnpool against NumPy references of
ONNX's semantics on random inputs: every reduction (none, add, mul, max,
min), duplicate indices (applied in order: the last update wins without a
reduction), negative indices (from the end of the axis), indices smaller
than the data off the scatter axis, constant inputs (folded at compile
time), sizes a dense one-hot formulation (positions x updates) could
not reach, and the dense form OpenCL targets take (run on pocl)."""
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_frontend import compile_run, kiln, save_pb, save_model, vi  # noqa: E402

RNG = np.random.default_rng(11)
REDUCE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
TP = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def combine(cur, u, red):
    return u if red == "none" else REDUCE[red](cur, u)


def scatter_elements_ref(data, idx, upd, axis, red):
    out = data.copy()
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[axis] = idx[p] + data.shape[axis] if idx[p] < 0 else idx[p]
        out[tuple(q)] = combine(out[tuple(q)], upd[p], red)
    return out


def scatter_nd_ref(data, idx, upd, red):
    out = data.copy()
    k = idx.shape[-1]
    for p in np.ndindex(*idx.shape[:-1]):
        q = tuple(int(i) + data.shape[j] if i < 0 else int(i) for j, i in enumerate(idx[p]))
        out[q] = combine(out[q], upd[p], red)
    assert k <= data.ndim
    return out


def random_indices(shape, dim, dups=True):
    """Indices into an axis of `dim`, about a third negative; with dups
    drawn from few values so that many repeat."""
    hi = max(1, dim // 3) if dups else dim
    i = RNG.integers(0, hi, shape)
    neg = RNG.random(shape) < 0.35
    return np.where(neg, i - dim, i).astype(np.int64)


def compile_run_opencl(tmp_path, model, inputs):
    """compile_run for --target opencl, run on the OpenCL device."""
    so = str(tmp_path / "m.so")
    p = kiln("compile", model, "-o", so, "--target", "opencl")
    assert p.returncode == 0, p.stderr
    args = ["run", so, "--device", "opencl", "-o", str(tmp_path / "out.npz")]
    for name, arr in inputs:
        args += ["--inputs", save_pb(tmp_path, name, arr)]
    p = kiln(*args)
    assert p.returncode == 0, p.stderr
    with np.load(str(tmp_path / "out.npz")) as z:
        return [z[k] for k in z.files]


def run_scatter(tmp_path, node, data, idx, upd, opset, const=False, opencl=False):
    tp = TP[data.dtype.type]
    inits = [numpy_helper.from_array(idx, "i")]
    inputs = [vi("d", tp, list(data.shape)), vi("u", tp, list(upd.shape))]
    feeds = [("d", data), ("u", upd)]
    if const:  # every input a constant: the compiler evaluates the scatter
        inits += [numpy_helper.from_array(data, "d"), numpy_helper.from_array(upd, "u")]
        inputs = [vi("x", tp, [1])]
        node = [node, helper.make_node("Add", ["s", "x"], ["y"])]
        feeds = [("x", np.zeros(1, data.dtype))]
    else:
        node = [node, helper.make_node("Identity", ["s"], ["y"])]
    model = save_model(tmp_path, node, inputs, [vi("y", tp, None)], opset=opset, inits=inits)
    (y,) = (compile_run_opencl if opencl else compile_run)(tmp_path, model, feeds)
    return y


CASES_ELEMENTS = [((4, 6), (3, 6), 0), ((5, 7), (5, 9), 1), ((3, 4, 5), (2, 6, 3), 1), ((2, 3, 8), (2, 3, 12), -1),
                  ((9,), (20,), 0)]


@pytest.mark.parametrize("opencl", [False, True])
@pytest.mark.parametrize("red", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dshape,ishape,axis", CASES_ELEMENTS)
def test_scatter_elements_random(tmp_path, dshape, ishape, axis, red, opencl):
    data = RNG.standard_normal(dshape).astype(np.float32)
    ax = axis % len(dshape)
    idx = random_indices(ishape, dshape[ax])
    upd = RNG.standard_normal(ishape).astype(np.float32)
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["s"], axis=axis, reduction=red)
    y = run_scatter(tmp_path, node, data, idx, upd, opset=18, opencl=opencl)
    np.testing.assert_allclose(y, scatter_elements_ref(data, idx, upd, ax, red), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("red", ["none", "add"])
def test_scatter_elements_int_and_const(tmp_path, red):
    data = RNG.integers(-50, 50, (6, 5)).astype(np.int32)
    idx = random_indices((6, 8), 5)
    upd = RNG.integers(-50, 50, (6, 8)).astype(np.int32)
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["s"], axis=1, reduction=red)
    ref = scatter_elements_ref(data, idx, upd, 1, red)
    np.testing.assert_array_equal(run_scatter(tmp_path, node, data, idx, upd, opset=16), ref)
    np.testing.assert_array_equal(run_scatter(tmp_path, node, data, idx, upd, opset=16, const=True), ref)


@pytest.mark.parametrize("red", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dshape,qshape,k", [((6, 4), (5,), 1), ((5, 4, 3), (3, 4), 2), ((4, 3, 2), (7,), 3),
                                             ((3, 5), (2, 3), 1), ((8,), (30,), 1)])
@pytest.mark.parametrize("opencl", [False, True])
def test_scatter_nd_random(tmp_path, dshape, qshape, k, red, opencl):
    data = RNG.standard_normal(dshape).astype(np.float32)
    idx = np.stack([random_indices(qshape, dshape[j]) for j in range(k)], axis=-1)
    upd = RNG.standard_normal(qshape + dshape[k:]).astype(np.float32)
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["s"], reduction=red)
    y = run_scatter(tmp_path, node, data, idx, upd, opset=18, opencl=opencl)
    np.testing.assert_allclose(y, scatter_nd_ref(data, idx, upd, red), rtol=1e-5, atol=1e-6)


def test_scatter_nd_const(tmp_path):
    data = RNG.standard_normal((5, 4)).astype(np.float32)
    idx = random_indices((6, 1), 5)
    upd = RNG.standard_normal((6, 4)).astype(np.float32)
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["s"], reduction="add")
    y = run_scatter(tmp_path, node, data, idx, upd, opset=16, const=True)
    np.testing.assert_allclose(y, scatter_nd_ref(data, idx, upd, "add"), rtol=1e-5, atol=1e-6)


def test_scatter_large(tmp_path):
    """1M positions and 200k updates: 2e11 one-hot comparisons, a moment
    for the loop nest."""
    n, m = 1 << 20, 200000
    data = RNG.standard_normal(n).astype(np.float32)
    idx = RNG.integers(-n, n, (m,)).astype(np.int64)
    upd = RNG.standard_normal(m).astype(np.float32)
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["s"], axis=0, reduction="add")
    y = run_scatter(tmp_path, node, data, idx, upd, opset=16)
    ref = data.copy()
    np.add.at(ref, np.where(idx < 0, idx + n, idx), upd)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def maxunpool_ref(x, ind, shape):
    y = np.zeros(int(np.prod(shape)), x.dtype)
    for v, i in zip(x.ravel(), ind.ravel()):  # ONNX's reference: each X assigned in order
        y[i] = v
    return y.reshape(shape)


@pytest.mark.parametrize("opencl", [False, True])
def test_maxunpool_duplicate_indices(tmp_path, opencl):
    """Overlapping windows (kernel 3, stride 1) pick the same maximum
    twice: ONNX writes it once, a sum of the hits wrote it twice."""
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    ind = np.stack([RNG.integers(0, 36, (4, 4)) + 36 * c for c in range(2)])[None].astype(np.int64)
    ind[0, 0, 0, 1] = ind[0, 0, 0, 0]  # one index twice, different X
    node = helper.make_node("MaxUnpool", ["x", "ind"], ["y"], kernel_shape=[3, 3], strides=[1, 1])
    model = save_model(tmp_path, [node], [vi("x", TensorProto.FLOAT, list(x.shape))], [vi("y", TensorProto.FLOAT, None)],
                       opset=11, inits=[numpy_helper.from_array(ind, "ind")])
    (y,) = (compile_run_opencl if opencl else compile_run)(tmp_path, model, [("x", x)])
    np.testing.assert_array_equal(y, maxunpool_ref(x, ind, (1, 2, 6, 6)))
