"""A mean over the rows and columns of a blocked feature map (MnasNet's
and ShuffleNetV2's heads, x.mean([2, 3])) is computed as a global average
pooling in the blocked layout (alter_layout): only its [N, C, 1, 1] result
goes back to NCHW, not the whole map in a layout_transform of its own
before a mean kernel.  Channel counts that fill whole vectors and one that
is padded (24), both axis spellings, keepdims 0 and 1, one and two
samples; each matches NumPy on seeded random inputs.  A mean over other
axes stays a mean."""
import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_graph import build_graph  # noqa: E402

HW = 9


def _model(tmp_path, batch, ch, axes, keepdims):
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((ch, 8, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(ch).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ReduceMean", ["r"], ["y"], axes=axes, keepdims=keepdims)]
    kernels, lib = build_graph(tmp_path, nodes, {"w": w, "b": b}, {"x": (batch, 8, HW, HW)}, {"y": None})
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))

    def ref(x):
        x, wd = x.astype(np.float64), w.astype(np.float64)
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        c = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + HW, j:j + HW], wd[:, :, i, j])
                for i in range(3) for j in range(3))
        r = np.maximum(c + b.reshape(1, -1, 1, 1), 0)
        return r.mean(tuple(axes), keepdims=bool(keepdims))

    return kernels, m, ref


@pytest.mark.parametrize("batch,ch,axes,keepdims,pooled", [
    (1, 32, [2, 3], 0, True),    # MnasNet's head: [N, C]
    (1, 24, [2, 3], 0, True),    # padded to 32 channels: the result is cropped
    (2, 32, [-1, -2], 1, True),  # two samples, [N, C, 1, 1], negative axes
    (1, 32, [1, 2, 3], 0, False),  # over the channels too: a mean
    (1, 32, [3], 1, False),      # the columns only: a mean
])
def test_spatial_mean_pools_blocked(tmp_path, batch, ch, axes, keepdims, pooled):
    kernels, m, ref = _model(tmp_path, batch, ch, axes, keepdims)
    assert any("global_avg_pool2d" in k for k in kernels) == pooled, kernels
    assert any(k.startswith("fused_mean") for k in kernels) != pooled, kernels
    rng = np.random.default_rng(6)
    for _ in range(2):
        x = rng.standard_normal((batch, 8, HW, HW)).astype(np.float32)
        m.set_input("x", x)
        m.run()
        got, want = m.get_output(0).numpy(), ref(x)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5
