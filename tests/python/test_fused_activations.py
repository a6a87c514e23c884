"""Activations in the producer's epilogue: SiLU (x * sigmoid(x)) after a
convolution and GELU written out with Erf after a MatMul fuse into the
anchor's kernel as diamonds (the anchor's value has two uses that meet
again), and match NumPy; a diamond one of whose values is also a graph
output does not fuse.  The float32 exp/erf/sigmoid in the generated code
are Kiln's own (src/codegen/kiln_vmath.h), checked here end to end."""
import math

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _build(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _run(model, tmp_path, feeds, shapes):
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    mod, params = kiln.frontend.from_onnx(path, shapes)
    with kiln.transform.PassContext(opt_level=3):
        fused = mod.fused_text()
        lib = kiln.build(mod, target="cpu", params=params)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return fused, [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def _conv(x, w, b):
    n, c, h, wd = x.shape
    f = w.shape[0]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, f, h, wd), np.float64)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,fc->nfhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out + b[None, :, None, None]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_conv_silu_fuses(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 8, 10, 10)).astype(np.float32) * 3
    w = rng.standard_normal((32, 8, 3, 3)).astype(np.float32) * 0.5
    b = rng.standard_normal(32).astype(np.float32)
    model = _build(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Sigmoid", ["c"], ["s"]),
         helper.make_node("Mul", ["c", "s"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 10, 10])],
        {"w": w, "b": b})
    fused, (y,) = _run(model, tmp_path, {"x": x}, {"x": (1, 8, 10, 10)})
    # fuse_silu makes the diamond one nn.silu, fused as the conv's epilogue
    assert "fused_nn_contrib_conv2d_NCHWc_add_nn_silu = fn (" in fused, fused
    c = _conv(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64))
    ref = c * _sigmoid(c)
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-5


def test_matmul_gelu_erf_fuses(tmp_path):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 48)) * 0.3).astype(np.float32)
    model = _build(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Div", ["h", "sqrt2"], ["d"]),
         helper.make_node("Erf", ["d"], ["e"]),
         helper.make_node("Add", ["e", "one"], ["a"]),
         helper.make_node("Mul", ["h", "a"], ["m"]),
         helper.make_node("Mul", ["m", "half"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 48])],
        {"w": w, "sqrt2": np.array(math.sqrt(2), np.float32), "one": np.array(1, np.float32),
         "half": np.array(0.5, np.float32)})
    fused, (y,) = _run(model, tmp_path, {"x": x}, {"x": (16, 64)})
    groups = [line for line in fused.splitlines() if line.startswith("fused_") and "= fn (" in line]
    # fuse_gelu makes the written-out GELU one nn.gelu, fused as one op
    assert len(groups) == 1 and "gelu" in groups[0], fused
    h = x.astype(np.float64) @ w.astype(np.float64)
    ref = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-5


def test_diamond_with_an_output_inside_does_not_fuse(tmp_path):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    w = rng.standard_normal((32, 32)).astype(np.float32) * 0.2
    model = _build(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Sigmoid", ["h"], ["s"]),
         helper.make_node("Mul", ["h", "s"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [4, 32])],
        {"w": w})
    fused, (y, s) = _run(model, tmp_path, {"x": x}, {"x": (4, 32)})
    h = x.astype(np.float64) @ w.astype(np.float64)
    assert np.allclose(s, _sigmoid(h), rtol=1e-5, atol=1e-6)
    assert np.allclose(y, h * _sigmoid(h), rtol=1e-5, atol=1e-6)
    groups = [line for line in fused.splitlines() if line.startswith("fused_") and "= fn (" in line]
    assert not any("sigmoid_multiply" in g and ("dense" in g or "matmul" in g) for g in groups), fused
