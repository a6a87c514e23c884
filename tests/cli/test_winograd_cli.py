"""Winograd convolutions end to end: a small network whose 3x3 stride-1
convolutions qualify (odd sizes, so the last tiles are partial; a conv
without padding; bias, batch-norm, residual add and relu fused) compiles to
nn.contrib_conv2d_winograd_NCHWc kernels that match PyTorch; KILN_WINOGRAD=0
turns them off; kiln tasks lists and kiln tune tunes the Winograd task,
whose records apply; a user's record of the direct task alone keeps the
direct kernel."""
import json
import os

import numpy as np
import pytest

from e2e_common import kiln

torch = pytest.importorskip("torch")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(32, 48, 3, padding=1)
        self.c2 = torch.nn.Conv2d(48, 48, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(48)
        self.c3 = torch.nn.Conv2d(48, 32, 3, padding=0)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        z = torch.relu(self.bn(self.c2(y)) + y)
        return self.c3(z)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("wino")
    torch.manual_seed(7)
    net = Net().eval()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
        net.bn.weight.uniform_(0.5, 1.5)
        net.bn.bias.uniform_(-0.5, 0.5)
    path, ref = export(net, torch.randn(1, 32, 13, 13), d, "net.onnx")
    return d, path, ref


def export(net, x, d, name):
    """net as d/name (input x, output y), x as d/x.npy: the path and
    PyTorch's output."""
    path = str(d / name)
    torch.onnx.export(net, x, path, input_names=["x"], output_names=["y"], opset_version=13)
    with torch.no_grad():
        ref = net(x).numpy()
    np.save(str(d / "x.npy"), x.numpy())
    return path, ref


def run_model(d, so, env=None):
    out = str(d / "out.npz")
    kiln("run", so, "-i", str(d / "x.npy"), "-o", out, env=env)
    return np.load(out)["y"]


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def env_with(**kw):
    e = dict(os.environ)
    e.update(kw)
    return e


def test_winograd_matches_pytorch(model):
    d, path, ref = model
    so = str(d / "w.so")
    kiln("compile", path, "-o", so, "--quiet-fallback")
    got = run_model(d, so)
    assert rel(got, ref) < 1e-5
    prof = kiln("run", so, "--profile").stdout
    rows = [l for l in prof.splitlines() if l.startswith("fused_nn_contrib_conv2d_winograd_NCHWc")]
    assert len(rows) == 3, prof
    assert "fused_nn_contrib_conv2d_winograd_NCHWc_add_nn_relu " in prof
    assert "conv2d_NCHWc_winograd.x86 [(1,32,13,13),(48,32,3,3)] s1 p1 · fallback" in prof
    assert "nn.contrib_conv2d_NCHWc" not in prof


def test_switch_off(model):
    d, path, ref = model
    so = str(d / "d.so")
    off = env_with(KILN_WINOGRAD="0")
    kiln("compile", path, "-o", so, "--quiet-fallback", env=off)
    assert rel(run_model(d, so), ref) < 1e-5
    prof = kiln("run", so, "--profile").stdout
    assert "winograd" not in prof
    tasks = kiln("tasks", path, env=off).stdout
    assert "conv2d_NCHWc_winograd.x86" not in tasks and "conv2d_NCHWc.x86" in tasks


def test_tasks_tune_records(model, tmp_path):
    d, path, ref = model
    tasks = kiln("tasks", path).stdout
    assert "[Task  1/ 3] conv2d_NCHWc_winograd.x86 - Search space size:" in tasks
    assert "('TENSOR', (48, 48, 3, 3), 'float32')" in tasks
    log = str(tmp_path / "w.json")
    kiln("tune", path, "-o", log, "--tasks", "2", "--trials", "4", "--tuner", "random", "--number", "1",
         "--repeat", "1", "--parallel", "2", "--verify", "0", "--build-timeout", "300", "--timeout", "60")
    recs = [json.loads(l) for l in open(log)]
    assert len(recs) == 4
    for r in recs:
        assert r["version"] == 0.2 and r["input"][1] == "conv2d_NCHWc_winograd.x86"
        assert r["input"][2][1] == ["TENSOR", [48, 48, 3, 3], "float32"]
        assert [e[0] for e in r["config"]["entity"]] == ["tile_ic", "tile_oc", "tile_p", "tile_rows", "prefetch_w"]
        assert r["result"][1] == 0
    so = str(tmp_path / "t.so")
    kiln("compile", path, "-o", so, "--tuning-records", log, "--quiet-fallback")
    assert rel(run_model(d, so), ref) < 1e-5
    prof = kiln("run", so, "--profile").stdout
    assert "conv2d_NCHWc_winograd.x86 [(1,48,13,13),(48,48,3,3)] s1 p1 · w.json:" in prof


def test_direct_record_kept(model, tmp_path):
    """A user's record of the direct task and none of the Winograd one:
    that conv stays direct, the others take Winograd."""
    d, path, ref = model
    off = env_with(KILN_WINOGRAD="0")
    log = str(tmp_path / "d.json")
    kiln("tune", path, "-o", log, "--tasks", "2", "--trials", "2", "--tuner", "random", "--number", "1",
         "--repeat", "1", "--parallel", "2", "--verify", "0", "--build-timeout", "300", "--timeout", "60", env=off)
    recs = [json.loads(l) for l in open(log)]
    assert recs and all(r["input"][1] == "conv2d_NCHWc.x86" for r in recs)
    so = str(tmp_path / "k.so")
    kiln("compile", path, "-o", so, "--tuning-records", log, "--quiet-fallback")
    assert rel(run_model(d, so), ref) < 1e-5
    prof = kiln("run", so, "--profile").stdout
    assert "conv2d_NCHWc.x86 [(1,48,13,13),(48,48,3,3)] s1 p1 · d.json:" in prof
    assert len([l for l in prof.splitlines() if l.startswith("fused_nn_contrib_conv2d_winograd_NCHWc")]) == 2


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.c(x))


def test_small_output_at_batch(tmp_path):
    """A 7x7 output takes Winograd F(2x2, 3x3) at batch 8 (128 tiles over
    the batch) and matches PyTorch; at batch 1 (16 tiles) the direct
    kernel."""
    torch.manual_seed(3)
    path, ref = export(Small().eval(), torch.randn(8, 32, 7, 7), tmp_path, "s.onnx")
    so = str(tmp_path / "s8.so")
    kiln("compile", path, "-o", so, "--quiet-fallback")
    prof = kiln("run", so, "--profile").stdout
    assert "conv2d_NCHWc_winograd.x86 [(8,32,7,7),(32,32,3,3)] s1 p1" in prof, prof
    assert rel(run_model(tmp_path, so), ref) < 1e-5
    tasks = kiln("tasks", path, "--input-shapes", "x:[1,32,7,7]").stdout
    assert "conv2d_NCHWc_winograd.x86" not in tasks and "conv2d_NCHWc.x86" in tasks, tasks


def test_prime_tile_columns_take_direct(tmp_path):
    """A 147-column output has 37 F(4x4) tile columns, a prime: the
    Winograd fallback's register block would be one tile x two output
    vectors of 32 channels, so the direct kernel is chosen; 56 columns
    (14 tiles, blocks of 7) keep Winograd."""
    path, _ = export(Small().eval(), torch.randn(1, 32, 56, 56), tmp_path, "p.onnx")
    tasks = kiln("tasks", path, "--input-shapes", "x:[1,32,147,147]").stdout
    assert "conv2d_NCHWc_winograd.x86" not in tasks and "conv2d_NCHWc.x86" in tasks, tasks
    tasks = kiln("tasks", path).stdout
    assert "conv2d_NCHWc_winograd.x86" in tasks, tasks


class Narrow(torch.nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.c = torch.nn.Conv2d(cin, cout, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.c(x))


@pytest.mark.parametrize("cin,cout,size,wino", [
    (16, 64, 55, True),   # SqueezeNet's expand 3x3
    (32, 16, 28, True),   # 16 output channels
    (16, 64, 18, True),   # 5 x 5 tiles of F(4x4)
    (16, 64, 16, False),  # 4 x 4 tiles: direct
    (8, 32, 56, False),   # under a vector of channels: direct
])
def test_narrow_channels(tmp_path, cin, cout, size, wino):
    """From 16 channels on either side a 3x3 layer takes Winograd where
    its output is at least 18x18, and matches PyTorch; smaller outputs and
    fewer channels keep the direct kernel."""
    torch.manual_seed(5)
    path, ref = export(Narrow(cin, cout).eval(), torch.randn(1, cin, size, size), tmp_path, "n.onnx")
    so = str(tmp_path / "n.so")
    kiln("compile", path, "-o", so, "--quiet-fallback")
    prof = kiln("run", so, "--profile").stdout
    task = "[(1,%d,%d,%d),(%d,%d,3,3)] s1 p1" % (cin, size, size, cout, cin)
    assert ("conv2d_NCHWc_winograd.x86 " + task in prof) == wino, prof
    assert ("conv2d_NCHWc.x86 " + task in prof) != wino, prof
    assert rel(run_model(tmp_path, so), ref) < 1e-5
