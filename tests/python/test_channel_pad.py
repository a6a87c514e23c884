"""Channel padding (alter_layout): channel counts with no good block (58,
116, 200: blocks of 2 to 8 where the vector holds 16) are compiled padded
to a multiple of the vector width, and the model still matches PyTorch on
fresh random inputs: a ShuffleNet-v2 unit (channel split, 1x1 - depthwise
3x3 - 1x1 branch, concat, channel shuffle), a squeeze-excitation block
(its per-channel scale multiplies a padded tensor), padded tensors through
ReLU6, hard-swish, sigmoid (the padded channels then hold 0.5: the next
conv must give them zero weights), max pooling, a residual add of two padded
tensors, an op the padding must not flow through (exp) and a padded conv as
the graph's output.  The tasks show the padded shapes, and a conv that
reads a padded tensor its real input channels (its reduction leaves the
zero ones out); with
KILN_CHANNEL_PAD=0 they are the model's own (58, 200)."""
import numpy as np
import pytest

import kiln
from e2e_common import cpu_has
from kiln import graph_executor

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
nn = torch.nn


def _cbr(i, o, k=1, s=1, g=1, act=True):
    layers = [nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o)]
    return nn.Sequential(*layers, nn.ReLU()) if act else nn.Sequential(*layers)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = _cbr(3, 116, 3, 2)
        self.branch = nn.Sequential(_cbr(58, 58), _cbr(58, 58, 3, 1, 58, act=False), _cbr(58, 58))
        self.expand = nn.Conv2d(116, 200, 1)
        self.dw = nn.Conv2d(200, 200, 3, padding=1, groups=200)
        self.se1 = nn.Conv2d(200, 50, 1)
        self.se2 = nn.Conv2d(50, 200, 1)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.side = nn.Conv2d(116, 200, 1)
        self.head = nn.Conv2d(200, 58, 1)

    def forward(self, x):
        x = self.stem(x)
        a, b = x.chunk(2, dim=1)
        y = torch.cat([a, self.branch(b)], 1)
        n, c, h, w = y.shape
        y = y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)  # channel shuffle
        e = torch.clamp(self.expand(y), 0, 6)
        d = nn.functional.hardswish(self.dw(e))
        s = torch.sigmoid(self.se2(torch.relu(self.se1(d.mean((2, 3), keepdim=True)))))
        d = d * s + self.side(y)                         # SE scale, a residual of two padded tensors
        d = self.pool(d)
        # exp: not padded; sigmoid: the padded channels hold 0.5, read by the
        # head conv with zero weights
        return self.head(torch.exp(d * 0.1)), self.head(torch.sigmoid(d))


def _build(path, shape):
    mod, params = kiln.frontend.from_onnx(path, {"x": shape})
    with kiln.transform.PassContext(opt_level=3):
        tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
        lib = kiln.build(mod, target="cpu", params=params)
    return tasks, graph_executor.GraphModule(lib["default"](kiln.cpu()))


def _channels(tasks):
    return sorted({t.args[0][1][1] for t in tasks if "conv2d" in t.name})


def test_padded_channels_match_pytorch(tmp_path, monkeypatch):
    torch.manual_seed(5)
    net = _Net().eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
    shape = (1, 3, 30, 26)
    path = str(tmp_path / "p.onnx")
    torch.onnx.export(net, torch.zeros(shape), path, input_names=["x"], output_names=["y", "z"], opset_version=13)
    monkeypatch.delenv("KILN_CHANNEL_PAD", raising=False)
    tasks, m = _build(path, shape)
    chans = _channels(tasks)
    assert 58 not in chans, chans  # 58 -> 64 with AVX-512 or AVX2 (60 with 4-lane vectors)
    # a conv reading a padded tensor reduces over its real channels only:
    # its workload ends with their count (none does without padding)
    real = {t.args[-1] for t in tasks if t.name == "conv2d_NCHWc.x86" and isinstance(t.args[-1], int)}
    assert real and real <= {50, 58, 116, 200}, real
    rng = np.random.default_rng()
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        m.set_input("x", x)
        m.run()
        with torch.no_grad():
            refs = [r.numpy() for r in net(torch.from_numpy(x))]
        for i, ref in enumerate(refs):
            got = m.get_output(i).numpy()
            assert got.shape == ref.shape
            assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5, i
    monkeypatch.setenv("KILN_CHANNEL_PAD", "0")
    tasks, _ = _build(path, shape)
    chans = _channels(tasks)
    assert 58 in chans and 200 in chans, chans
    assert not [t for t in tasks if t.name == "conv2d_NCHWc.x86" and isinstance(t.args[-1], int)]


class _Narrow(nn.Module):
    """MnasNet/EfficientNet-style inverted residuals with 24 and 40 channels
    (8-lane blocks): compiled padded to 32 and 48 with 16-lane vectors."""

    def __init__(self):
        super().__init__()
        self.stem = _cbr(3, 24, 3, 2)
        self.block = nn.Sequential(_cbr(24, 72), _cbr(72, 72, 3, 1, 72), _cbr(72, 24, act=False))
        self.down = nn.Sequential(_cbr(24, 72), _cbr(72, 72, 5, 2, 72), _cbr(72, 40, act=False))
        self.head = nn.Conv2d(40, 40, 1)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.block(x)
        y = self.down(x)
        return self.head(y * torch.sigmoid(y)) + y


def test_narrow_channels_padded(tmp_path, monkeypatch):
    torch.manual_seed(7)
    net = _Narrow().eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
    shape = (1, 3, 34, 30)
    path = str(tmp_path / "n.onnx")
    torch.onnx.export(net, torch.zeros(shape), path, input_names=["x"], output_names=["y"], opset_version=13)
    monkeypatch.delenv("KILN_CHANNEL_PAD", raising=False)
    tasks, m = _build(path, shape)
    chans = _channels(tasks)
    if cpu_has("avx512f"):  # 16 lanes; with 8 (AVX2) 24 and 40 have full blocks
        assert 24 not in chans and 40 not in chans and 32 in chans and 48 in chans, chans
    rng = np.random.default_rng()
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        m.set_input("x", x)
        m.run()
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        got = m.get_output(0).numpy()
        assert got.shape == ref.shape
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5
    monkeypatch.setenv("KILN_CHANNEL_PAD", "0")
    tasks, _ = _build(path, shape)
    chans = _channels(tasks)
    assert 24 in chans and 40 in chans, chans
