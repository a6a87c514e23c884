"""sink_reshape: a transformer MLP block as ONNX exports it (MatMul of a
[B, S, D] activation by a weight imports as reshape -> dense -> reshape;
then the bias Add, GELU written out with Erf, the second MatMul and its
bias, the residual Add, an Add of a [1, 1, D] constant and a scalar Mul)
compiles to two dense kernels that carry the bias, GELU and residual in
their epilogues, and matches NumPy on fresh random inputs.  A reshape that
changes the trailing dimension (the operand of an Add is then not a
per-column bias) is not moved, and still matches.  A Transpose that moves
only an axis of length 1 (PyTorch's batch_first encoder: [1, S, D] ->
[S, 1, D] and back) is a reshape, so the residual around it fuses too; one
that moves data stays a transpose.  A group of reshapes only over a
kernel's output runs as "__nop": the output is the input's memory.
Each model also runs under the debug executor (its profile leaves the
"__nop"s out)."""
import math

import numpy as np
import pytest

import kiln
from kiln import debug_executor, graph_executor

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_graph import build_graph  # noqa: E402


def _erf(x):
    return np.vectorize(math.erf)(x)


def _build(tmp_path, nodes, inits, shape, out_shape):
    kernels, lib = build_graph(tmp_path, nodes, inits, {"x": shape}, {"y": out_shape})
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    dbg = debug_executor.create(lib.get_graph_json(), lib, kiln.cpu())
    dbg.set_input("x", np.ones(shape, np.float32))
    dbg.run()
    return kernels, m


def _run(m, x):
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


@pytest.mark.parametrize("seq", [7, 64])
def test_mlp_block_fuses_into_dense_epilogues(tmp_path, seq):
    d, h = 32, 64
    rng = np.random.default_rng()
    w1, b1 = rng.standard_normal((d, h)).astype(np.float32) * 0.2, rng.standard_normal(h).astype(np.float32)
    w2, b2 = rng.standard_normal((h, d)).astype(np.float32) * 0.2, rng.standard_normal(d).astype(np.float32)
    c = rng.standard_normal((1, 1, d)).astype(np.float32)
    inits = {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "c": c, "r2": np.array(math.sqrt(2), np.float32),
             "one": np.array(1, np.float32), "half": np.array(0.5, np.float32), "three": np.array(3, np.float32)}
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]),
        helper.make_node("Add", ["b1", "m1"], ["a1"]),
        helper.make_node("Div", ["a1", "r2"], ["g1"]),
        helper.make_node("Erf", ["g1"], ["g2"]),
        helper.make_node("Add", ["g2", "one"], ["g3"]),
        helper.make_node("Mul", ["a1", "g3"], ["g4"]),
        helper.make_node("Mul", ["g4", "half"], ["g5"]),
        helper.make_node("MatMul", ["g5", "w2"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["a2"]),
        helper.make_node("Add", ["x", "a2"], ["r"]),
        helper.make_node("Add", ["r", "c"], ["rc"]),
        helper.make_node("Mul", ["rc", "three"], ["y"]),
    ]
    shape = (1, seq, d)
    kernels, m = _build(tmp_path, nodes, inits, shape, shape)
    dense = [k for k in kernels if "dense" in k]
    assert len(dense) == 2, kernels
    assert "nn_gelu" in dense[0], kernels
    # the reshape back to [1, S, D] (the graph output) computes nothing: it
    # is the second dense kernel's memory; the model input's stays a copy
    assert kernels[-1] == "__nop" and kernels[0] == "fused_reshape", kernels
    assert dense[1].count("add") >= 3 and dense[1].endswith("multiply"), kernels
    x = rng.standard_normal(shape).astype(np.float32)
    x64 = x.astype(np.float64)
    a1 = x64 @ w1 + b1
    g = a1 * (_erf(a1 / math.sqrt(2)) + 1) * 0.5
    ref = (x64 + g @ w2 + b2 + c) * 3
    y = _run(m, x)
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-5


def test_reshape_of_the_last_axis_stays(tmp_path):
    # [1, 6, 8] -> MatMul -> [1, 6, 8] -> Reshape [1, 12, 4] + a [4] bias: the
    # bias's axis is not one of the matmul's columns, so the Add cannot move
    rng = np.random.default_rng()
    w, b = rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    inits = {"w": w, "b": b, "s": np.array([1, 12, 4], np.int64)}
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Reshape", ["m", "s"], ["r"]),
        helper.make_node("Add", ["r", "b"], ["y"]),
    ]
    kernels, m = _build(tmp_path, nodes, inits, (1, 6, 8), (1, 12, 4))
    assert not any("dense" in k and "add" in k for k in kernels), kernels
    x = rng.standard_normal((1, 6, 8)).astype(np.float32)
    ref = (x.astype(np.float64) @ w).reshape(1, 12, 4) + b
    y = _run(m, x)
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.parametrize("perm,fused", [((1, 0, 2), True), ((0, 2, 1), False)])
def test_transpose_of_a_unit_axis_is_a_reshape(tmp_path, perm, fused):
    s_, d = 9, 16
    rng = np.random.default_rng()
    w, b = rng.standard_normal((d, d)).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    shape = (1, s_, d) if fused else (1, d, d)
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=list(perm)),
        helper.make_node("MatMul", ["t", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Transpose", ["a"], ["u"], perm=list(perm)),
        helper.make_node("Add", ["u", "x"], ["y"]),
    ]
    kernels, m = _build(tmp_path, nodes, {"w": w, "b": b}, shape, shape)
    dense = [k for k in kernels if "dense" in k]
    assert len(dense) == 1 and (dense[0].endswith("add_add") == fused), kernels
    assert any("transpose" in k for k in kernels) != fused, kernels
    x = rng.standard_normal(shape).astype(np.float32)
    x64 = x.astype(np.float64)
    ref = np.transpose(np.transpose(x64, perm) @ w + b, perm) + x64
    y = _run(m, x)
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-5
