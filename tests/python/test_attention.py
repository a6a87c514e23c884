"""Attention's MatMul - Softmax - MatMul (ONNX MatMul between two
activations of rank 3 and 4) takes the batch_matmul.x86 template and
matches NumPy on fresh random inputs: scores = Q K^T / sqrt(d) (K^T a
Transpose), softmax over the last axis, times V; sequence lengths 7 (row
blocks with a tail), 50, 197 (ViT-B/16's tokens) and 49 (Swin's windows:
197 and 49 columns have no vector block, so alter_layout pads Q K^T's right
operand to 208 and 64 columns and crops the product); a broadcast batch (a
[1, S, S] mask-like operand against [H, S, S]) stays generic and still
matches."""
import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def _model(shape_q, shape_k, perm):
    d = shape_q[-1]
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=perm),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / np.sqrt(d)])
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in (("q", shape_q), ("k", shape_k),
                                                                             ("v", shape_k))]
    out_shape = list(shape_q)
    g = helper.make_graph(nodes, "attn", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          [scale])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("shape", [(2, 7, 16), (1, 3, 50, 32), (4, 197, 64), (2, 3, 49, 32)])
def test_attention_matches_numpy(tmp_path, shape):
    perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
    path = str(tmp_path / "a.onnx")
    onnx.save(_model(list(shape), list(shape), perm), path)
    shapes = {n: shape for n in "qkv"}
    mod, params = kiln.frontend.from_onnx(path, shapes)
    with kiln.transform.PassContext(opt_level=3):
        tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
        lib = kiln.build(mod, target="cpu", params=params)
    assert [t.name for t in tasks] == ["batch_matmul.x86"] * 2, [t.name for t in tasks]
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    rng = np.random.default_rng()
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    for n, x in zip("qkv", (q, k, v)):
        m.set_input(n, x)
    m.run()
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    ref = _softmax(q64 @ np.swapaxes(k64, -1, -2) / np.sqrt(shape[-1])) @ v64
    y = m.get_output(0).numpy()
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-5


def test_broadcast_batch_stays_generic(tmp_path):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 9, 9])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 9, 5])
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "bc", [a, b],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 9, 5])])
    path = str(tmp_path / "b.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    mod, params = kiln.frontend.from_onnx(path, {"a": (1, 9, 9), "b": (3, 9, 5)})
    with kiln.transform.PassContext(opt_level=3):
        tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
        lib = kiln.build(mod, target="cpu", params=params)
    assert tasks == []
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    rng = np.random.default_rng()
    x, w = rng.standard_normal((1, 9, 9)).astype(np.float32), rng.standard_normal((3, 9, 5)).astype(np.float32)
    m.set_input("a", x)
    m.set_input("b", w)
    m.run()
    ref = x.astype(np.float64) @ w.astype(np.float64)
    assert np.linalg.norm(m.get_output(0).numpy() - ref) / np.linalg.norm(ref) < 1e-5
