"""Spatial padding on blocked tensors (alter_layout): an nn.pad of the rows
and columns only (Inception-v3's average pooling with count_include_pad
imports as a pad before the pool) keeps the NCHW[x]c layout, so a conv, the
pad, the pool and the next conv run without layout transforms between
them.  Constant (with a value), reflect and edge padding, an asymmetric
pad, and a 58-channel feature map (padded to 64 channels) against PyTorch
on fresh random inputs; a pad of the channels still goes through NCHW."""
import os

import numpy as np
import pytest

from e2e_common import kiln

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
nn = torch.nn
F = nn.functional


class _Net(nn.Module):
    def __init__(self, c, mode, pads, value):
        super().__init__()
        self.a = nn.Conv2d(3, c, 3, padding=1)
        self.b = nn.Conv2d(c, 32, 1)
        self.mode, self.pads, self.value = mode, pads, value

    def forward(self, x):
        y = torch.relu(self.a(x))
        y = F.pad(y, self.pads, mode=self.mode, value=self.value) if self.mode == "constant" else \
            F.pad(y, self.pads, mode=self.mode)
        y = F.avg_pool2d(y, 3, 1)
        return self.b(y)


class _ChannelPad(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 32, 1)

    def forward(self, x):
        return F.pad(torch.relu(self.a(x)), (1, 1, 0, 0, 2, 0)) * 2


def _compile_and_run(net, tmp_path, shape):
    path = str(tmp_path / "m.onnx")
    torch.onnx.export(net, torch.zeros(shape), path, input_names=["x"], output_names=["y"], opset_version=13)
    so = str(tmp_path / "m.so")
    kiln("compile", path, "-o", so)
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    np.save(str(tmp_path / "x.npy"), x)
    out = str(tmp_path / "out.npz")
    kiln("run", so, "--inputs", str(tmp_path / "x.npy"), "-o", out)
    with np.load(out) as z:
        got = z[z.files[0]]
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    return path, got, want


@pytest.mark.parametrize("c,mode,pads,value", [
    (32, "constant", (1, 1, 1, 1), 0.0),
    (48, "constant", (2, 0, 1, 3), 0.5),
    (32, "reflect", (1, 1, 1, 1), 0.0),
    (32, "replicate", (0, 2, 1, 1), 0.0),
    (58, "constant", (1, 1, 1, 1), 0.0),
])
def test_spatial_pad_stays_blocked(c, mode, pads, value, tmp_path):
    torch.manual_seed(3)
    net = _Net(c, mode, pads, value).eval()
    path, got, want = _compile_and_run(net, tmp_path, (1, 3, 13, 11))
    assert got.shape == want.shape
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err < 1e-5, f"relative L2 error {err:g}"
    g = kiln("show", path, "--dump-after", "alter_layout").stdout
    # the model's pad (channel padding's own pads of weights have no mode)
    pad = [l for l in g.splitlines() if "nn.pad(" in l and "pad_mode=" in l]
    assert pad and all(l.split("pads=[")[1].split("]")[0].count(",") == 9 for l in pad), pad
    assert "dst_layout=\"NCHW\")" not in g.split("nn.avg_pool2d")[0], g


def test_channel_pad_goes_through_nchw(tmp_path):
    torch.manual_seed(4)
    net = _ChannelPad().eval()
    path, got, want = _compile_and_run(net, tmp_path, (1, 3, 6, 5))
    assert got.shape == want.shape
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
    g = kiln("show", path, "--dump-after", "alter_layout").stdout
    assert "dst_layout=\"NCHW\"" in g.split("nn.pad(")[0]
