"""fold_pad_pool: a zero Pad of the height and width before an
AveragePool (PyTorch's export of a padded average pool that counts the
padding, Inception-v3's and DenseNet-121's) becomes the pool's own padding
with count_include_pad: no pad kernel, the output that of padding then
averaging (float64 NumPy).  A pad with another value, a pool in ceil mode,
and a pool with padding of its own that does not count it keep the pad
kernel and still match."""

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_graph import build_graph  # noqa: E402


def _ref(x, pads, value, k, s, pool_pads, ceil):
    """Pad (ONNX pads of NCHW), then average k x k windows at stride s over
    the padded tensor, the pool's own padding not counted."""
    n, c, h, w = x.shape
    xp = np.pad(x.astype(np.float64), [(pads[i], pads[i + 4]) for i in range(4)], constant_values=value)
    ph, pw = xp.shape[2], xp.shape[3]
    t, l, b, r = pool_pads
    out_h = (ph + t + b - k + (s - 1 if ceil else 0)) // s + 1
    out_w = (pw + l + r - k + (s - 1 if ceil else 0)) // s + 1
    y = np.zeros((n, c, out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            h0, w0 = i * s - t, j * s - l
            hs, ws = slice(max(h0, 0), min(h0 + k, ph)), slice(max(w0, 0), min(w0 + k, pw))
            win = xp[:, :, hs, ws]
            y[:, :, i, j] = win.sum(axis=(2, 3)) / (win.shape[2] * win.shape[3])
    return y


@pytest.mark.parametrize("case", ["fold", "fold_zero_pads", "value", "ceil", "own_pads"])
def test_pad_avg_pool(tmp_path, case):
    shape = (1, 32, 11, 13)
    pads = [0, 0, 1, 2, 0, 0, 1, 0] if case != "fold_zero_pads" else [0] * 8
    value = 0.5 if case == "value" else 0.0
    k, s, ceil = 3, (2 if case == "ceil" else 1), case == "ceil"
    pool_pads = [1, 1, 1, 1] if case == "own_pads" else [0, 0, 0, 0]
    inits = {"pads": np.array(pads, np.int64), "v": np.array(value, np.float32)}
    nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["p"], mode="constant"),
             helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=pool_pads,
                              ceil_mode=int(ceil), count_include_pad=0)]
    kernels, lib = build_graph(tmp_path, nodes, inits, {"x": shape}, {"y": None})
    folded = case.startswith("fold")
    assert any("pad" in f for f in kernels) != folded, kernels
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.set_input("x", x)
    m.run()
    y = m.get_output(0).numpy()
    want = _ref(x, pads, value, k, s, pool_pads, ceil)
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
