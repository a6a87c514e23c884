"""Grouped convolutions (ResNeXt-, RegNet-style: groups > 1, not
depthwise) take the group_conv2d_NCHWc.x86 template: a PyTorch block of
grouped convolutions (groups of 4, 8, 24 and 3 channels, strides 1 and 2, with
batch norm, ReLU, a residual add; groups reading a wider block, and a
padded one, in place; groups of 4 and 8 packed side by side in vectors,
and 5 groups of 8 padded to 6 to make whole vectors, those three marked
group_pack; 5 groups of 24 computed two at a time in three vectors, a
zero group added, marked group_pair)
exported to ONNX, built at opt level 3,
matches PyTorch on fresh random inputs, and the build's tuning tasks name
the template."""
import numpy as np
import pytest

import kiln
from kiln import graph_executor

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Conv2d(6, 64, 3, padding=1)
        self.g4 = nn.Conv2d(64, 64, 3, padding=1, groups=16, bias=False)    # 4 per group
        self.bn = nn.BatchNorm2d(64)
        self.g8 = nn.Conv2d(64, 64, 3, padding=1, groups=8)                 # 8 per group
        self.g24 = nn.Conv2d(64, 96, 3, stride=2, padding=1, groups=2)      # 32 in, 48 out per group
        self.g3 = nn.Conv2d(96, 96, 1, groups=32)                           # 3 per group, 1x1
        self.g_odd = nn.Conv2d(96, 72, (3, 1), padding=(1, 0), groups=24)  # 4 in, 3 out per group
        self.p72 = nn.Conv2d(72, 72, 1)                                     # 72 channels: padded to 80
        self.g24p = nn.Conv2d(72, 48, 3, padding=1, groups=3)              # reads the padded 16-blocks in place
        self.p120 = nn.Conv2d(48, 120, 1)                                   # 120 channels: padded to 128
        self.g24x5 = nn.Conv2d(120, 120, 3, padding=1, groups=5)            # 5 groups of 24: 3 pairs, group_pair
        self.p40 = nn.Conv2d(120, 40, 1)                                    # 40 channels: padded to 48
        self.g8p = nn.Conv2d(40, 40, 3, padding=1, groups=5)               # 5 groups of 8: padded to 6, packed

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.relu(self.bn(self.g4(x)) + x)
        x = torch.relu(self.g8(x))
        x = torch.relu(self.g24(x))
        x = self.g3(x) + x
        x = torch.relu(self.p72(self.g_odd(x)))
        x = self.g24p(x)
        x = torch.relu(self.g24x5(torch.relu(self.p120(x))))
        return self.g8p(torch.relu(self.p40(x)))


def test_grouped_block_matches_pytorch(tmp_path):
    torch.manual_seed(23)
    net = _Block().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 2.0)
    shape = (1, 6, 15, 13)
    path = str(tmp_path / "g.onnx")
    torch.onnx.export(net, torch.zeros(shape), path, input_names=["x"], output_names=["y"], opset_version=13)
    mod, params = kiln.frontend.from_onnx(path, {"x": shape})
    with kiln.transform.PassContext(opt_level=3):
        tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
        lib = kiln.build(mod, target="cpu", params=params)
        text = mod.optimize(3).astext()
    # the three convs of groups of 4 and 8 (g4, g8, g8p) are packed, and say
    # so in the attribute the strategy's compute dispatches on
    grouped = [ln for ln in text.splitlines() if "nn.contrib_conv2d_NCHWc(" in ln and "groups=1," not in ln]
    assert len(grouped) == 8 and sum("group_pack=1" in ln for ln in grouped) == 3, grouped
    # the 5 groups of 24 are computed in pairs (an added zero group), and
    # keep their 120 real channels
    assert sum("group_pair=1" in ln and "kept_channels=120" in ln for ln in grouped) == 1, grouped
    names = sorted(t.name for t in tasks)
    assert names.count("group_conv2d_NCHWc.x86") == 8, names
    # the 5 groups of 8 are compiled as 6 (48 channels, a zero group)
    assert any(t.name == "group_conv2d_NCHWc.x86" and t.args[1][1][:2] == [48, 8] and t.args[-4] == 6
               for t in tasks), [t.args for t in tasks]
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    rng = np.random.default_rng()  # fresh inputs each run
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        m.set_input("x", x)
        m.run()
        y = m.get_output(0).numpy()
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        assert y.shape == ref.shape
        assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-5
