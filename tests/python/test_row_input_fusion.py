"""A softmax or layer norm (opaque ops) takes the chain of producers that
only move data (graph/fuse.c, OPF_MOVES_DATA): its row stages read through
the crop's, transpose's or relayout's index map instead of a copy written
by a kernel of its own.  ViT's crop of Q K^T (197 columns padded to 208 for
the matmul) was such a kernel (ConvNeXt's transposes before its layer
norms: test_residual_layout.py).  A producer that computes (a multiply)
stays out: the row stages read their input two or three times.  Outputs
match NumPy."""
import json
import re

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _build(path, shapes):
    mod, params = kiln.frontend.from_onnx(path, shapes)
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    nodes = [n for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]
    return [n["attrs"]["func_name"] for n in nodes], graph_executor.GraphModule(lib["default"](kiln.cpu()))


def _attention(shape, scale_scores):
    """softmax(Q K^T) V, scaled on Q (as ViT's export) or on the scores."""
    d = shape[-1]
    perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=perm)]
    if scale_scores:
        nodes += [helper.make_node("MatMul", ["q", "kt"], ["s0"]), helper.make_node("Mul", ["s0", "scale"], ["s"])]
    else:
        nodes += [helper.make_node("Mul", ["q", "scale"], ["qs"]), helper.make_node("MatMul", ["qs", "kt"], ["s"])]
    nodes += [helper.make_node("Softmax", ["s"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / np.sqrt(d)])
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in "qkv"]
    g = helper.make_graph(nodes, "attn", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
                          [scale])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("scale_scores", [False, True])
def test_crop_joins_softmax(tmp_path, scale_scores):
    # 37 tokens: Q K^T's right operand is padded to 48 columns and the
    # product cropped back (alter_layout's convert_matmul)
    shape = (3, 37, 32)
    path = str(tmp_path / "a.onnx")
    onnx.save(_attention(shape, scale_scores), path)
    kernels, m = _build(path, {n: shape for n in "qkv"})
    soft = [k for k in kernels if "softmax" in k]
    if scale_scores:
        # the multiply computes: it stays out of the softmax (the crop
        # joins the multiply's kernel instead)
        assert soft == ["fused_nn_softmax"], kernels
    else:
        assert soft == ["fused_nn_pad_nn_softmax"], kernels
        assert not [k for k in kernels if re.fullmatch(r"fused_nn_pad(_\d+)?", k)], kernels
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    for n, x in zip("qkv", (q, k, v)):
        m.set_input(n, x)
    m.run()
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) / np.sqrt(shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    want = (e / e.sum(-1, keepdims=True)) @ v.astype(np.float64)
    got = m.get_output(0).numpy()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


def test_strided_transpose_stays_out(tmp_path):
    # NCHW to channels-last: a row's channels are a plane apart, so the
    # norm reading through the transpose would gather every vector (2.3x
    # slower than the tiled transpose kernel and the norm together); the
    # transpose keeps its kernel
    c, h, w = 48, 6, 10
    gamma, beta = np.linspace(0.5, 1.5, c).astype(np.float32), np.linspace(-1, 1, c).astype(np.float32)
    g = helper.make_graph([helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 3, 1]),
                           helper.make_node("LayerNormalization", ["xt", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
                          "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, h, w, c])],
                          [numpy_helper.from_array(gamma, "g"), numpy_helper.from_array(beta, "b")])
    path = str(tmp_path / "l.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    kernels, m = _build(path, {"x": (1, c, h, w)})
    assert kernels == ["fused_transpose", "fused_nn_layer_norm"], kernels
    x = np.random.default_rng(3).standard_normal((1, c, h, w)).astype(np.float32)
    m.set_input("x", x)
    m.run()
    xt = x.astype(np.float64).transpose(0, 2, 3, 1)
    mu, var = xt.mean(-1, keepdims=True), xt.var(-1, keepdims=True)
    want = (xt - mu) / np.sqrt(var + 1e-5) * gamma + beta
    got = m.get_output(0).numpy()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


def test_pad_along_row_stays_out(tmp_path):
    # zeros appended to each row: read through, every vector of the row's
    # tail would select per lane; the pad keeps its kernel (a crop joins,
    # test_crop_joins_softmax)
    g = helper.make_graph([helper.make_node("Pad", ["x", "p"], ["xp"]),
                           helper.make_node("Softmax", ["xp"], ["y"], axis=-1)],
                          "ps", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 32])],
                          [numpy_helper.from_array(np.array([0, 0, 0, 12], np.int64), "p")])
    path = str(tmp_path / "p.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    kernels, m = _build(path, {"x": (6, 20)})
    assert kernels == ["fused_nn_pad", "fused_nn_softmax"], kernels
    x = np.random.default_rng(4).standard_normal((6, 20)).astype(np.float32)
    m.set_input("x", x)
    m.run()
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 12)))
    e = np.exp(xp - xp.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    assert np.abs(m.get_output(0).numpy() - want).max() < 1e-6
