"""A residual stream that starts in NCHW (alter_layout): ConvNeXt's stem
ends in a layer norm over channels-last transposed back, so the stream's
first tensor is NCHW, while its blocks' depthwise convs read it blocked.
The residual add that reads that tensor reads the convs' blocked copy
instead and computes blocked, so the stream stays blocked from its first
add on: one NCHW -> NCHW16c transform (fused into the stem's transpose),
not one in front of every block's conv.  The model still matches PyTorch
on a random input."""
import json
import re

import numpy as np
import pytest

import kiln
from kiln import graph_executor

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
nn = torch.nn


class _Block(nn.Module):
    """ConvNeXt's block: depthwise 7x7, channels-last layer norm and MLP,
    a per-channel layer scale, the residual add."""

    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.fc1 = nn.Linear(c, 4 * c)
        self.fc2 = nn.Linear(4 * c, c)
        self.scale = nn.Parameter(torch.rand(c, 1, 1) + 0.5)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(nn.functional.gelu(self.fc1(self.norm(y)))).permute(0, 3, 1, 2)
        return x + self.scale * y


class _Net(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 4, 4)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.blocks = nn.Sequential(_Block(c), _Block(c), _Block(c))

    def forward(self, x):
        x = self.norm(self.stem(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.blocks(x).mean((2, 3))


def _build(path, shape):
    mod, params = kiln.frontend.from_onnx(path, {"x": shape})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    nodes = [n for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]
    return [n["attrs"]["func_name"] for n in nodes], graph_executor.GraphModule(lib["default"](kiln.cpu()))


def test_residual_stream_turns_blocked(tmp_path):
    torch.manual_seed(3)
    net = _Net().eval()
    shape = (1, 3, 56, 48)
    path = str(tmp_path / "c.onnx")
    torch.onnx.export(net, torch.zeros(shape), path, input_names=["x"], output_names=["y"], opset_version=13)
    kernels, m = _build(path, shape)
    # the only kernel that is a relayout or a transpose alone is the
    # image's (NCHW -> NCHW3c for the stem): the stem's transpose back
    # carries the stream's one transform to NCHW16c, and no block is
    # preceded by one (before: a transpose and three relayouts)
    alone = [k for k in kernels if re.fullmatch(r"fused_(layout_transform|transpose)(_\d+)?", k)]
    assert alone == ["fused_layout_transform"], kernels
    # each block's residual add computes blocked: its MLP's output is
    # relayouted inside the add's kernel
    adds = [k for k in kernels if k.startswith("fused_reshape_transpose_multiply")]
    assert len(adds) == 3 and all("layout_transform_add" in k for k in adds), kernels
    # each layer norm reads the blocked map channels-last through the
    # transpose (graph/fuse.c, OPF_MOVES_DATA): no transpose kernel of its own
    norms = [k for k in kernels if "layer_norm" in k]
    assert len(norms) == 4 and all(re.match(r"fused_(layout_transform_)?transpose_nn_layer_norm", k) for k in norms), kernels
    x = np.random.standard_normal(shape).astype(np.float32)
    m.set_input("x", x)
    m.run()
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    got = m.get_output(0).numpy()
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert got.shape == want.shape and err < 1e-5, err
