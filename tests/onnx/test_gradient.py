"""ONNX's Gradient (ai.onnx.preview.training): reverse-mode differentiation
when the model is imported (src/graph/autodiff.c).

Each case builds a small forward graph, asks for the gradient of its
output with respect to some of its inputs (the others held constant, as
zs), compiles it with Kiln and compares the gradients with PyTorch's
autograd of the same function (the gradient of the sum of y's elements)
on fresh random inputs.  The last tests check that what Kiln cannot
differentiate is a clear error naming the op and the node.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_gradient.py
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from onnx_env import ENV, KILN


def save(tmp_path, nodes, inputs, outputs, name="m.onnx"):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("ai.onnx.preview.training", 1)])
    m.ir_version = 7
    p = str(tmp_path / name)
    onnx.save(m, p)
    return p


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def compile_run(tmp_path, model, feeds):
    so = str(tmp_path / "m.so")
    r = subprocess.run([KILN, "compile", model, "-o", so], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    np.savez(tmp_path / "in.npz", **feeds)
    r = subprocess.run([KILN, "run", so, "-i", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz")],
                       capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "out.npz") as z:
        return {k: z[k] for k in z.files}


# (name, forward nodes producing "y", input shapes, torch function of the inputs, xs)
# xs: the inputs differentiated; the rest are zs.
CASES = [
    ("add_mul_broadcast", [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Mul", ["c", "a"], ["y"])],
     {"a": [3, 4], "b": [4]}, lambda a, b: (a + b) * a, ["a", "b"]),
    ("sub_div", [helper.make_node("Sub", ["a", "b"], ["c"]), helper.make_node("Div", ["c", "b"], ["y"])],
     {"a": [2, 3, 4], "b": [3, 1]}, lambda a, b: (a - b) / b, ["a", "b"]),
    ("activations", [helper.make_node("Relu", ["a"], ["r"]), helper.make_node("Sigmoid", ["b"], ["s"]),
                     helper.make_node("Tanh", ["r"], ["t"]), helper.make_node("Mul", ["t", "s"], ["m"]),
                     helper.make_node("Exp", ["m"], ["y"])],
     {"a": [5, 6], "b": [5, 6]}, lambda a, b: torch.exp(torch.tanh(torch.relu(a)) * torch.sigmoid(b)), ["a", "b"]),
    ("log_sqrt_pow_neg", [helper.make_node("Abs", ["a"], ["aa"]), helper.make_node("Sqrt", ["aa"], ["s"]),
                          helper.make_node("Log", ["s"], ["l"]), helper.make_node("Pow", ["aa", "b"], ["p"]),
                          helper.make_node("Neg", ["p"], ["np"]), helper.make_node("Add", ["l", "np"], ["y"])],
     {"a": [4, 4], "b": [4, 4]},
     lambda a, b: torch.log(torch.sqrt(torch.abs(a))) - torch.abs(a) ** b, ["a", "b"]),
    ("matmul_reduce", [helper.make_node("MatMul", ["a", "b"], ["c"]),
                       helper.make_node("ReduceMean", ["c"], ["y"], axes=[1], keepdims=0)],
     {"a": [3, 5], "b": [5, 4]}, lambda a, b: (a @ b).mean(dim=1), ["a", "b"]),
    ("transpose_reshape_sum", [helper.make_node("Transpose", ["a"], ["t"], perm=[2, 0, 1]),
                               helper.make_node("Reshape", ["t", "shape"], ["r"]),
                               helper.make_node("Mul", ["r", "b"], ["m"]),
                               helper.make_node("ReduceSum", ["m", "ax"], ["y"], keepdims=1)],
     {"a": [2, 3, 4], "b": [4, 6]},
     lambda a, b: (a.permute(2, 0, 1).reshape(4, 6) * b).sum(dim=0, keepdim=True), ["a"]),
    ("sin_cos_reciprocal_held_constant", [helper.make_node("Sin", ["a"], ["s"]), helper.make_node("Cos", ["b"], ["c"]),
                                          helper.make_node("Reciprocal", ["c"], ["r"]),
                                          helper.make_node("Mul", ["s", "r"], ["y"])],
     {"a": [7], "b": [7]}, lambda a, b: torch.sin(a) / torch.cos(b), ["a"]),
    ("unused_input_gets_zeros", [helper.make_node("Mul", ["a", "a"], ["y"])],
     {"a": [3], "b": [2, 2]}, lambda a, b: a * a + 0 * b.sum(), ["a", "b"]),
]


@pytest.mark.parametrize("name,nodes,shapes,fn,xs", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_autograd(tmp_path, name, nodes, shapes, fn, xs):
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    feeds = {k: rng.uniform(0.5, 1.5, s).astype(np.float32) * rng.choice([-1, 1], s).astype(np.float32)
             if name not in ("log_sqrt_pow_neg", "sin_cos_reciprocal_held_constant") else
             rng.uniform(0.3, 1.2, s).astype(np.float32) for k, s in shapes.items()}
    inits = []
    if name == "transpose_reshape_sum":
        inits = [helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(np.array([4, 6], np.int64))),
                 helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(np.array([0], np.int64)))]
    zs = [k for k in shapes if k not in xs]
    grads = [f"d_{x}" for x in xs]
    attrs = dict(xs=xs, y="y", **({"zs": zs} if zs else {}))  # an empty list would be written as INTS
    gnode = helper.make_node("Gradient", xs + zs, grads, domain="ai.onnx.preview.training", **attrs)
    model = save(tmp_path, inits + nodes + [gnode], [vi(k, s) for k, s in shapes.items()],
                 [vi("y", None)] + [vi(g, shapes[x]) for g, x in zip(grads, xs)])
    got = compile_run(tmp_path, model, feeds)
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in feeds.items()}
    y = fn(*[t[k] for k in shapes])
    y.sum().backward()
    np.testing.assert_allclose(got["y"], y.detach().numpy(), rtol=1e-4, atol=1e-5)
    for g, x in zip(grads, xs):
        want = t[x].grad.numpy() if t[x].grad is not None else np.zeros(shapes[x])
        assert got[g].shape == tuple(shapes[x]), (g, got[g].shape)
        np.testing.assert_allclose(got[g], want, rtol=1e-4, atol=1e-5, err_msg=g)


def compile_err(tmp_path, nodes, inputs, outputs):
    model = save(tmp_path, nodes, inputs, outputs)
    return subprocess.run([KILN, "compile", model, "-o", str(tmp_path / "m.so")], capture_output=True, text=True, env=ENV)


def grad(xs, y, outs=None, inputs=None):
    return helper.make_node("Gradient", inputs or xs, outs or [f"d_{x}" for x in xs],
                            domain="ai.onnx.preview.training", xs=xs, y=y, name="grad")


def test_op_without_a_rule_is_a_clear_error(tmp_path):
    r = compile_err(tmp_path, [helper.make_node("Floor", ["a"], ["f"], name="fl"),
                               helper.make_node("Mul", ["f", "a"], ["y"]), grad(["a"], "y")],
                    [vi("a", [3])], [vi("d_a", [3])])
    assert r.returncode != 0
    assert "floor (node 'fl'), which has no derivative rule" in r.stderr and "Kiln differentiates: add" in r.stderr, \
        r.stderr


def test_integer_path_is_a_clear_error(tmp_path):
    r = compile_err(tmp_path, [helper.make_node("Cast", ["a"], ["i"], to=TensorProto.INT32, name="c"),
                               helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT), grad(["a"], "y")],
                    [vi("a", [3])], [vi("d_a", [3])])
    assert r.returncode != 0 and "which is not a float tensor" in r.stderr, r.stderr


def test_unknown_y_is_a_clear_error(tmp_path):
    r = compile_err(tmp_path, [helper.make_node("Neg", ["a"], ["n"]), grad(["a"], "nope")],
                    [vi("a", [3])], [vi("d_a", [3])])
    assert r.returncode != 0 and "y names 'nope', which is not a value computed before this node" in r.stderr, r.stderr


def test_inputs_must_be_xs_then_zs(tmp_path):
    r = compile_err(tmp_path, [helper.make_node("Mul", ["a", "b"], ["y"]), grad(["a"], "y", inputs=["b"])],
                    [vi("a", [3]), vi("b", [3])], [vi("d_a", [3])])
    assert r.returncode != 0 and "input 0 must be the value xs[0] names ('a')" in r.stderr, r.stderr
