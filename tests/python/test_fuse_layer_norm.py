"""fuse_layer_norm: a layer norm as PyTorch exports it below opset 17
(ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, then Mul gamma
and Add beta) compiles to one nn.layer_norm kernel, over the last axis of
a transformer's [1, S, D] tensor and over channels-last C of ConvNeXt's
[1, H, W, C], and over the two last axes; it matches NumPy on fresh random
inputs.  Patterns that are not a layer norm (the two means over different
axes, a square that is not of x - mean, an eps that is not a scalar) are
left as ops and
still match; a gamma that does not broadcast to the normalized axes stays a multiply
after the norm, and a beta whose operand is used elsewhere an add."""

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_graph import build_graph  # noqa: E402


def _ln_nodes(x="x", axes=(-1,), axes2=None, sq="Pow", eps="eps", gamma="g", beta="b", out="y", extra=()):
    axes2 = axes if axes2 is None else axes2
    nodes = [
        helper.make_node("ReduceMean", [x], ["m"], axes=list(axes), keepdims=1),
        helper.make_node("Sub", [x, "m"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["p"]) if sq == "Pow" else helper.make_node("Mul", [sq, sq], ["p"]),
        helper.make_node("ReduceMean", ["p"], ["v"], axes=list(axes2), keepdims=1),
        helper.make_node("Add", ["v", eps], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["s"]),
        helper.make_node("Div", ["d", "s"], ["n"]),
    ]
    if gamma:
        nodes.append(helper.make_node("Mul", ["n", gamma], ["ng"]))
    if beta:
        nodes.append(helper.make_node("Add", [beta, "ng" if gamma else "n"], [out]))
    return nodes + list(extra)


def _build(tmp_path, nodes, inits, shape, outs):
    kernels, lib = build_graph(tmp_path, nodes, inits, {"x": shape}, dict.fromkeys(outs))
    return kernels, graph_executor.GraphModule(lib["default"](kiln.cpu()))


def _run(m, x, n=1):
    m.set_input("x", x)
    m.run()
    return [m.get_output(i).numpy() for i in range(n)]


def _ref(x, axes, g, b, eps):
    mu = x.mean(axis=axes, keepdims=True, dtype=np.float64)
    d = x - mu
    y = d / np.sqrt((d * d).mean(axis=axes, keepdims=True) + eps)
    return y * g + b


def _inits(rng, gshape, eps=1e-5):
    return {"g": rng.standard_normal(gshape).astype(np.float32), "b": rng.standard_normal(gshape).astype(np.float32),
            "two": np.array(2, np.float32), "eps": np.array(eps, np.float32)}


def _close(got, want):
    assert np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max()), np.abs(got - want).max()


@pytest.mark.parametrize("shape,axes,gshape,sq", [
    ((1, 37, 96), (-1,), (96,), "Pow"),          # a transformer's tokens
    ((1, 7, 5, 48), (3,), (48,), "d"),           # ConvNeXt: channels last, the square as d * d
    ((2, 6, 10, 16), (-2, -1), (10, 16), "Pow"),  # two trailing axes
])
def test_layer_norm_is_one_kernel(tmp_path, shape, axes, gshape, sq):
    rng = np.random.default_rng()
    inits = _inits(rng, gshape, 1e-6)
    kernels, m = _build(tmp_path, _ln_nodes(axes=axes, sq=sq), inits, shape, ["y"])
    assert len(kernels) == 1 and "layer_norm" in kernels[0], kernels
    for _ in range(2):
        x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
        ax = tuple(a % len(shape) for a in axes)
        _close(_run(m, x)[0], _ref(x.astype(np.float64), ax, inits["g"], inits["b"], 1e-6))


@pytest.mark.parametrize("case", ["axes_differ", "square_of_x", "gamma_wide", "eps_vector", "gamma_shared"])
def test_non_layer_norms_stay_ops_and_match(tmp_path, case):
    rng = np.random.default_rng()
    shape = (1, 9, 24)
    inits = _inits(rng, (24,))
    kw, outs, gamma_used = {}, ["y"], True
    if case == "axes_differ":
        kw = {"axes": (-1,), "axes2": (-2, -1)}
    elif case == "square_of_x":
        kw = {"sq": "x"}
    elif case == "gamma_wide":
        inits["g"] = rng.standard_normal((9, 1)).astype(np.float32)
    elif case == "eps_vector":
        inits["eps"] = np.full((24,), 1e-5, np.float32)
    elif case == "gamma_shared":  # n * g also an output: the norm keeps no gamma
        outs = ["y", "ng"]
    kernels, m = _build(tmp_path, _ln_nodes(**kw), inits, shape, outs)
    x = rng.standard_normal(shape).astype(np.float32)
    got = _run(m, x, len(outs))
    xd = x.astype(np.float64)
    mu = xd.mean(-1, keepdims=True)
    d = xd - mu
    sqv = xd * xd if case == "square_of_x" else d * d
    v = sqv.mean(axis=(-2, -1) if case == "axes_differ" else -1, keepdims=True)
    n = d / np.sqrt(v + inits["eps"])
    ng = n * inits["g"]
    _close(got[0], ng + inits["b"])
    fused = any("layer_norm" in k for k in kernels)
    if case == "gamma_shared":  # the norm takes gamma, beta's add stays
        _close(got[1], ng)
        assert kernels == ["fused_nn_layer_norm", "fused_add"], kernels
    elif case == "gamma_wide":  # the norm fuses, gamma stays a multiply
        assert fused and any("multiply" in k for k in kernels), kernels
    else:
        assert not fused, kernels
