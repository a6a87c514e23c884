#!/usr/bin/env python3
"""Export the benchmark/test models to ONNX with seeded random weights,
plus PyTorch's output for a fixed input.

Run with Debian's interpreter (it owns torch and torchvision):
    /usr/bin/python3 tools/export_models.py [--out DIR] [NAME ...]
NAME: resnet18 resnet50 mobilenet_v2 vgg16 squeezenet1_1 (default: all).
For each model DIR gets NAME.onnx, NAME.input.npy ([1, 3, 224, 224]) and
NAME.output.npy (PyTorch's logits for that input).  Files already present
and newer than this script are kept, so repeated test runs are cheap.

Weights are torchvision's default initialization under a fixed seed; the
batch-norm statistics and affine parameters are randomized too (seeded),
so that folding them into convolutions is really exercised.
"""
import argparse
import os
import sys

import numpy as np
import torch
import torchvision

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "vgg16", "squeezenet1_1"]


def build(name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
    return model.eval()


def export(name, out):
    onnx_path = os.path.join(out, name + ".onnx")
    inp_path = os.path.join(out, name + ".input.npy")
    ref_path = os.path.join(out, name + ".output.npy")
    script_time = os.path.getmtime(os.path.abspath(__file__))
    if all(os.path.exists(p) and os.path.getmtime(p) >= script_time for p in (onnx_path, inp_path, ref_path)):
        return
    model = build(name)
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        y = model(x).numpy()
    torch.onnx.export(model, x, onnx_path, input_names=["data"], output_names=["logits"], opset_version=13)
    np.save(inp_path, x.numpy())
    np.save(ref_path, y)
    print(f"exported {name}: {os.path.getsize(onnx_path) / 1e6:.1f} MB", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "build", "models"))
    ap.add_argument("names", nargs="*", default=MODELS)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for n in a.names:
        if n not in MODELS:
            sys.exit(f"unknown model '{n}' (known: {', '.join(MODELS)})")
        export(n, a.out)


if __name__ == "__main__":
    main()
