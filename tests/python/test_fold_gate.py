"""fold_gate: a squeeze-and-excitation gate (x * sigmoid(conv(relu(conv(
mean(x))))), one factor per channel) read by a conv is folded into that
conv's weights when they are smaller than the feature map: the kernels
then hold a "reshape_multiply" (the weights times the gate) and no
"sigmoid_multiply" pass over the map.  A 1x1 conv, a 3x3 stride-2 padded
conv (zero padding commutes with the per-channel product), a conv whose
weights outnumber the map's values, a product with a second use and a
batch of two (one gate per sample) are compiled; each matches NumPy on
seeded random inputs, and only the first two fold.  Two edge cases: a
product by a constant gate that is also a graph output is what the conv
reads, and weights read by a gated and an ungated conv stay unscaled for
the ungated one."""
import json

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_graph import build_graph  # noqa: E402

C, R, HW = 40, 10, 20  # 40 channels: padded to 48 in 16-lane blocks


def _conv(x, w, b, stride=1, pad=0):
    """NCHW conv in float64 (a reference, not fast)."""
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


def _model(tmp_path, batch, out_ch, k, stride, second_use):
    rng = np.random.default_rng(1)
    def f32(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = {"w0": f32(C, 3, 3, 3, scale=0.3), "b0": f32(C), "wa": f32(R, C, 1, 1, scale=0.3), "ba": f32(R),
             "wb": f32(C, R, 1, 1, scale=0.3), "bb": f32(C), "wc": f32(out_ch, C, k, k, scale=0.2), "bc": f32(out_ch)}
    pad = k // 2
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["d"]),
        helper.make_node("GlobalAveragePool", ["d"], ["p"]),
        helper.make_node("Conv", ["p", "wa", "ba"], ["s1"]),
        helper.make_node("Relu", ["s1"], ["s2"]),
        helper.make_node("Conv", ["s2", "wb", "bb"], ["s3"]),
        helper.make_node("Sigmoid", ["s3"], ["s"]),
        helper.make_node("Mul", ["d", "s"], ["g"]),
        helper.make_node("Conv", ["g", "wc", "bc"], ["y"], strides=[stride, stride], pads=[pad] * 4,
                         kernel_shape=[k, k]),
    ]
    shape = (batch, 3, HW, HW)
    oh = (HW + 2 * pad - k) // stride + 1
    outs = {"y": [batch, out_ch, oh, oh]}
    if second_use:
        outs["g"] = [batch, C, HW, HW]
    kernels, lib = build_graph(tmp_path, nodes, inits, {"x": shape}, outs)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))

    def ref(x):
        w = {n: v.astype(np.float64) for n, v in inits.items()}
        d = np.maximum(_conv(x.astype(np.float64), w["w0"], w["b0"], 1, 1), 0)
        s = np.maximum(_conv(d.mean((2, 3), keepdims=True), w["wa"], w["ba"]), 0)
        s = 1 / (1 + np.exp(-_conv(s, w["wb"], w["bb"])))
        g = d * s
        return [_conv(g, w["wc"], w["bc"], stride, pad)] + ([g] if second_use else [])

    return kernels, m, shape, ref


@pytest.mark.parametrize("batch,out_ch,k,stride,second_use,folds", [
    (1, 24, 1, 1, False, True),    # 1x1: 24 x 48 weights against 48 x 400 values
    (1, 16, 3, 2, False, True),    # 3x3 / 2, padded: 16 x 48 x 9 weights
    (1, 64, 3, 1, False, False),   # 64 x 48 x 9 weights outnumber the map
    (1, 24, 1, 1, True, False),    # the product is also an output
    (2, 24, 1, 1, False, False),   # two samples, two gates
])
def test_gate_folds_into_the_conv_weights(tmp_path, batch, out_ch, k, stride, second_use, folds):
    kernels, m, shape, ref = _model(tmp_path, batch, out_ch, k, stride, second_use)
    folded = any(n.startswith("fused_reshape_multiply") for n in kernels)
    gate_pass = any(n.endswith("sigmoid_multiply") for n in kernels)
    assert folded == folds and gate_pass != folds, kernels
    rng = np.random.default_rng(2)
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        m.set_input("x", x)
        m.run()
        for i, r in enumerate(ref(x)):
            got = m.get_output(i).numpy()
            assert got.shape == r.shape, (i, got.shape, r.shape)
            assert np.linalg.norm(got - r) / np.linalg.norm(r) < 1e-5, i


def _run(m, x, n_out):
    m.set_input("x", x)
    m.run()
    return [m.get_output(i).numpy() for i in range(n_out)]


def _rel(got, ref):
    assert got.shape == ref.shape, (got.shape, ref.shape)
    return np.linalg.norm(got - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("const_gate", [False, True])
def test_shared_weights_fold_for_the_gated_conv_only(tmp_path, const_gate):
    """Two 1x1 convs read the same weights: one reads the gated map, the
    other the ungated one.  The fold scales a copy of the weights for the
    first; the second still computes with the original weights (today
    alter_layout packs the weights once per conv, so the pass sees two
    weight nodes; the test holds the property if they are ever shared).
    The gate is a squeeze-and-excitation branch, or a constant.  The case
    of one weight node read by both convs is kiln_unit
    fold_gate.shared_weights."""
    rng = np.random.default_rng(3)
    def f32(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = {"w0": f32(C, 3, 3, 3, scale=0.3), "b0": f32(C), "wc": f32(24, C, 1, 1, scale=0.3), "bc": f32(24)}
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["d"])]
    if const_gate:
        inits["s"] = (rng.uniform(0.5, 1.5, (1, C, 1, 1))).astype(np.float32)
    else:
        inits.update({"wa": f32(C, C, 1, 1, scale=0.3), "ba": f32(C)})
        nodes += [helper.make_node("GlobalAveragePool", ["d"], ["p"]),
                  helper.make_node("Conv", ["p", "wa", "ba"], ["s1"]),
                  helper.make_node("Sigmoid", ["s1"], ["s"])]
    nodes += [helper.make_node("Mul", ["d", "s"], ["g"]),
              helper.make_node("Conv", ["g", "wc", "bc"], ["y"]),
              helper.make_node("Conv", ["d", "wc", "bc"], ["z"])]
    shape = (1, 3, HW, HW)
    kernels, lib = build_graph(tmp_path, nodes, inits, {"x": shape}, {"y": [1, 24, HW, HW], "z": [1, 24, HW, HW]})
    # the SE gate folds (a weight-scaling kernel); a constant one is folded
    # into a constant copy of the weights at compile time
    assert any(n.startswith("fused_reshape_multiply") for n in kernels) != const_gate, kernels
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    w = {n: v.astype(np.float64) for n, v in inits.items()}
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        d = np.maximum(_conv(x.astype(np.float64), w["w0"], w["b0"], 1, 1), 0)
        s = w["s"] if const_gate else 1 / (1 + np.exp(-_conv(d.mean((2, 3), keepdims=True), w["wa"], w["ba"])))
        y, z = _run(m, x, 2)
        assert _rel(y, _conv(d * s, w["wc"], w["bc"])) < 1e-5
        assert _rel(z, _conv(d, w["wc"], w["bc"])) < 1e-5


def _conv_reads_a_product(graph_json):
    """Does a conv kernel of the graph JSON read a kernel that multiplies?"""
    nodes = json.loads(graph_json)["nodes"]
    ops = [n.get("attrs", {}).get("kiln_ops", "").split(",") for n in nodes]
    return any(o[0] == "nn.contrib_conv2d_NCHWc" and any("multiply" in ops[i[0]] for i in n["inputs"])
               for n, o in zip(nodes, ops))


def test_gated_product_as_output_keeps_its_value(tmp_path):
    """The product by a constant gate is a graph output and feeds a conv
    whose weights are smaller than the map: the product has a second use,
    so the gate does not fold into the conv's weights (a constant gate
    would fold into constant weights with no kernel to show it): the conv
    reads the output's product, and both match NumPy."""
    rng = np.random.default_rng(4)
    inits = {"w0": (rng.standard_normal((C, 3, 3, 3)) * 0.3).astype(np.float32),
             "s": rng.uniform(0.5, 1.5, (1, C, 1, 1)).astype(np.float32),
             "wc": (rng.standard_normal((24, C, 1, 1)) * 0.3).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["d"]),
             helper.make_node("Mul", ["d", "s"], ["g"]),
             helper.make_node("Conv", ["g", "wc"], ["y"])]
    shape = (1, 3, HW, HW)
    kernels, lib = build_graph(tmp_path, nodes, inits, {"x": shape}, {"g": [1, C, HW, HW], "y": [1, 24, HW, HW]})
    assert not any(n.startswith("fused_reshape_multiply") for n in kernels), kernels
    assert _conv_reads_a_product(lib.get_graph_json()), lib.get_graph_json()
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    w = {n: v.astype(np.float64) for n, v in inits.items()}
    x = rng.standard_normal(shape).astype(np.float32)
    d = np.maximum(_conv(x.astype(np.float64), w["w0"], np.zeros(C), 1, 1), 0)
    g, y = _run(m, x, 2)
    assert _rel(g, d * w["s"]) < 1e-5
    assert _rel(y, _conv(d * w["s"], w["wc"], np.zeros(24))) < 1e-5
