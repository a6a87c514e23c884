"""fuse_silu: SiLU written as x * sigmoid(x) (Sigmoid and Mul, either
operand order; PyTorch's export of nn.SiLU) compiles to one nn.silu kernel
and matches x * sigmoid(x) in float64 within 2 ulps of max(|x|, |y|) on
fresh random inputs, the tails included; after a conv it is the conv
kernel's epilogue.  A product that is not SiLU (x * sigmoid(y), a gate, or
x * sigmoid(2x)) stays as ops and still matches its own formula."""

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_graph import build_graph  # noqa: E402


def _run(tmp_path, nodes, inits, inputs, feed):
    kernels, lib = build_graph(tmp_path, nodes, inits, inputs, {"y": None})
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    for k, v in feed.items():
        m.set_input(k, v)
    m.run()
    return kernels, m.get_output(0).numpy()


def _x(rng, shape):
    x = (rng.standard_normal(shape) * 6).astype(np.float32)
    x.flat[:10] = [0, -0.0, 1e-30, -1e-40, -20, -87.5, -90, -200, 40, 100]
    return x


def _silu(x):
    x = x.astype(np.float64)
    with np.errstate(over="ignore"):
        return x / (1 + np.exp(-x))


def _max_ulps(y, want, x):
    m = np.maximum(np.abs(want), np.abs(x.astype(np.float64)))
    ulp = np.exp2(np.floor(np.log2(np.maximum(m, 2.0 ** -126))) - 23)
    return np.abs(y - want) / ulp


@pytest.mark.parametrize("order", ["xs", "sx"])
def test_silu_is_one_op(tmp_path, order):
    rng = np.random.default_rng()
    shape = (4, 33, 40)
    x = _x(rng, shape)
    mul = ["x", "s"] if order == "xs" else ["s", "x"]
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", mul, ["y"])]
    kernels, y = _run(tmp_path, nodes, {}, {"x": shape}, {"x": x})
    assert len(kernels) == 1 and "silu" in kernels[0] and "sigmoid" not in kernels[0], kernels
    err = _max_ulps(y, _silu(x), x)
    assert err.max() <= 2, (err.max(), x.flat[err.argmax()])
    assert np.isnan(_run(tmp_path, nodes, {}, {"x": (1, 16)}, {"x": np.full((1, 16), np.nan, np.float32)})[1]).all()


def test_conv_silu_epilogue(tmp_path):
    rng = np.random.default_rng()
    x = rng.standard_normal((1, 16, 14, 14)).astype(np.float32)
    w = (rng.standard_normal((48, 16, 1, 1)) * 0.5).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"]), helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", ["c", "s"], ["y"])]
    kernels, y = _run(tmp_path, nodes, {"w": w, "b": b}, {"x": x.shape}, {"x": x})
    assert any("conv2d" in k and "silu" in k for k in kernels) and not any("sigmoid" in k for k in kernels), kernels
    c = np.einsum("oi,nihw->nohw", w[:, :, 0, 0].astype(np.float64), x.astype(np.float64)) + b[None, :, None, None]
    want = _silu(c)
    assert np.abs(y - want).max() <= 1e-5 * np.abs(want).max()


def test_not_silu_stays(tmp_path):
    rng = np.random.default_rng()
    shape = (3, 50)
    x, g = _x(rng, shape), _x(rng, shape)
    gate = [helper.make_node("Sigmoid", ["g"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    kernels, y = _run(tmp_path, gate, {}, {"x": shape, "g": shape}, {"x": x, "g": g})
    assert not any("silu" in k for k in kernels), kernels
    with np.errstate(over="ignore"):
        want = x.astype(np.float64) / (1 + np.exp(-g.astype(np.float64)))
    assert np.abs(y - want).max() <= 1e-6 * np.abs(want).max()
    twice = [helper.make_node("Add", ["x", "x"], ["t"]), helper.make_node("Sigmoid", ["t"], ["s"]),
             helper.make_node("Mul", ["x", "s"], ["y"])]
    kernels, y = _run(tmp_path, twice, {}, {"x": shape}, {"x": x})
    assert not any("silu" in k for k in kernels), kernels
    with np.errstate(over="ignore"):
        want = x.astype(np.float64) / (1 + np.exp(-2 * x.astype(np.float64)))
    assert np.abs(y - want).max() <= 1e-6 * np.abs(want).max()
