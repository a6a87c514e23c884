"""One model, any shape: compile a convolutional network once with a
symbolic batch, height and width, and run the one artifact at three
sizes, each against PyTorch."""
import os
import subprocess
import tempfile

import numpy as np
import torch

import kiln
from kiln import graph_executor


class FCN(torch.nn.Module):
    """A fully convolutional network: any image size gives an output."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1, stride=2)
        self.c2 = torch.nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


torch.manual_seed(0)
net = FCN().eval()
tmp = tempfile.mkdtemp()
onnx_path, so_path = os.path.join(tmp, "fcn.onnx"), os.path.join(tmp, "fcn.so")
torch.onnx.export(net, torch.randn(1, 3, 32, 32), onnx_path, input_names=["x"], output_names=["y"],
                  opset_version=13)

# N, H and W are symbols; N is at most 8.  `kiln show` prints the shapes.
shapes = "x:[N,3,H,W],N<=8"
show = subprocess.run(["kiln", "show", onnx_path, "--input-shapes", shapes], capture_output=True, text=True,
                      check=True).stdout
print(show[:show.index("\n}") + 2])
subprocess.run(["kiln", "compile", onnx_path, "-o", so_path, "--input-shapes", shapes, "--quiet-fallback"],
               check=True, capture_output=True)

m = graph_executor.GraphModule(kiln.runtime.load_module(so_path)["default"](kiln.cpu()))
for n, h, w in [(1, 160, 192), (3, 224, 224), (8, 320, 320)]:
    x = np.random.RandomState(n).randn(n, 3, h, w).astype(np.float32)
    m.set_input("x", x)
    m.run()
    y = m.get_output(0).numpy()
    with torch.no_grad():
        ref = net(torch.from_numpy(x)).numpy()
    err = np.abs(y - ref).max() / np.abs(ref).max()
    print("input %-16s -> output %-16s matches PyTorch: %s" % (x.shape, y.shape, err < 1e-4))

try:
    m.set_input("x", np.zeros((9, 3, 32, 32), np.float32))
except kiln.KilnError as e:
    print("batch 9:", str(e).split(" the model was")[0])
