#!/usr/bin/env python3
"""Export the benchmark/test models to ONNX with seeded random weights,
plus PyTorch's output for a fixed input.

Run with Debian's interpreter (it owns torch and torchvision):
    /usr/bin/python3 tools/export_models.py [--out DIR] [NAME ...]
NAME: one of MODELS (the five CNNs, the default) or SUITE (more
architectures: vision transformer, Swin, ConvNeXt, EfficientNet, RegNet,
ResNeXt, ShuffleNet, MobileNetV3, DenseNet, GoogLeNet and Inception-v3, and
a transformer encoder at 32, 128 and 384 tokens), or "suite" for all of
SUITE.  For each model DIR gets NAME.onnx, NAME.input.npy (an image batch
of one, [1, 3, 224, 224] or [1, 3, 299, 299] for Inception-v3; token
embeddings [1, S, 256] for the encoders) and NAME.output.npy (PyTorch's
output for that input).  Files already present and newer than this script
are kept, so repeated test runs are cheap.

Weights are torchvision's default initialization under a fixed seed; the
batch-norm statistics and affine parameters are randomized too (seeded),
so that folding them into convolutions is really exercised; a layer
initialized to zeros (ViT's head) gets seeded random weights.
"""
import argparse
import os
import sys

import numpy as np
import torch
import torchvision

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "vgg16", "squeezenet1_1"]
# torchvision architectures beyond the five, and transformer encoders
# (torch.nn.TransformerEncoder, 4 layers, d_model 256, 4 heads, GELU MLP of
# 1024) at several sequence lengths: "encoder_S" takes [1, S, 256]
SUITE = ["vit_b_16", "swin_t", "convnext_tiny", "efficientnet_b0", "regnet_y_400mf", "regnet_x_1_6gf",
         "resnext50_32x4d", "shufflenet_v2_x1_0", "mobilenet_v3_large", "mobilenet_v3_small", "densenet121",
         "googlenet", "inception_v3", "mnasnet1_0", "wide_resnet50_2", "encoder_32", "encoder_128", "encoder_384"]


def input_shape(name):
    if name.startswith("encoder_"):
        return (1, int(name.split("_")[1]), 256)
    if name == "inception_v3":
        return (1, 3, 299, 299)
    return (1, 3, 224, 224)


def build(name):
    torch.manual_seed(0)
    if name.startswith("encoder_"):
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True)
        return torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval()
    kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, name)(weights=None, **kw)
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)) and not m.weight.data.any():
            # a zero-initialized layer (ViT's head) would make every output 0
            # and the comparison with PyTorch meaningless
            m.weight.data.copy_(torch.randn(m.weight.shape, generator=g) * 0.02)
    return model.eval()


def export(name, out):
    onnx_path = os.path.join(out, name + ".onnx")
    inp_path = os.path.join(out, name + ".input.npy")
    ref_path = os.path.join(out, name + ".output.npy")
    script_time = os.path.getmtime(os.path.abspath(__file__))
    if all(os.path.exists(p) and os.path.getmtime(p) >= script_time for p in (onnx_path, inp_path, ref_path)):
        return
    model = build(name)
    x = torch.randn(*input_shape(name), generator=torch.Generator().manual_seed(2))
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
    names = [m for n in a.names for m in (SUITE if n == "suite" else [n])]
    for n in names:
        if n not in MODELS + SUITE:
            sys.exit(f"unknown model '{n}' (known: {', '.join(MODELS + SUITE)}, suite)")
        export(n, a.out)


if __name__ == "__main__":
    main()
