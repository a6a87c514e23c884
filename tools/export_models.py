#!/usr/bin/env python3
"""Export the benchmark/test models to ONNX with seeded random weights,
plus PyTorch's output for a fixed input.

Run with Debian's interpreter (it owns torch and torchvision):
    /usr/bin/python3 tools/export_models.py [--out DIR] [--reexport] [NAME ...]
NAME: one of MODELS (the five CNNs, the default) or SUITE (more
architectures: vision transformer, Swin, ConvNeXt, EfficientNet, RegNet,
ResNeXt, ShuffleNet, MobileNetV3, DenseNet, GoogLeNet and Inception-v3, and
a transformer encoder at 32, 128 and 384 tokens), or "suite" for all of
SUITE.  For each model DIR gets NAME.onnx, NAME.input.npy (an image batch
of one, [1, 3, 224, 224] or [1, 3, 299, 299] for Inception-v3; token
embeddings [1, S, 256] for the encoders) and NAME.output.npy (PyTorch's
output for that input), and last NAME.export.json, the stamp: a hash of
this script, the torch and torchvision versions and the model's export
options.  A model whose three files are present and whose stamp matches is
kept (repeated test and benchmark runs are cheap; a checkout or a copy that
changes the files' times does not matter); anything else re-exports it, and
so does --reexport.

Weights are torchvision's default initialization under a fixed seed; the
batch-norm statistics and affine parameters are randomized too (seeded),
so that folding them into convolutions is really exercised; a layer
initialized to zeros (ViT's head) gets seeded random weights.
"""
import argparse
import hashlib
import json
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


OPSET = 13


def input_shape(name):
    if name.startswith("encoder_"):
        return (1, int(name.split("_")[1]), 256)
    if name == "inception_v3":
        return (1, 3, 299, 299)
    return (1, 3, 224, 224)


def model_kwargs(name):
    """The torchvision constructor's keyword arguments beyond weights=None."""
    return {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}


def stamp(name):
    """What an exported model depends on, as the text of its stamp file."""
    with open(os.path.abspath(__file__), "rb") as f:
        exporter = hashlib.sha256(f.read()).hexdigest()
    return json.dumps({"exporter": exporter, "torch": torch.__version__, "torchvision": torchvision.__version__,
                       "options": {"input_shape": list(input_shape(name)), "kwargs": model_kwargs(name),
                                   "opset": OPSET}}, sort_keys=True) + "\n"


def build(name):
    torch.manual_seed(0)
    if name.startswith("encoder_"):
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True)
        return torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval()
    model = getattr(torchvision.models, name)(weights=None, **model_kwargs(name))
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


def export(name, out, force=False):
    """Export name into out unless its files are there and its stamp
    matches (force: export anyway).  Returns whether it exported."""
    onnx_path = os.path.join(out, name + ".onnx")
    inp_path = os.path.join(out, name + ".input.npy")
    ref_path = os.path.join(out, name + ".output.npy")
    stamp_path = os.path.join(out, name + ".export.json")
    want = stamp(name)
    if not force and all(os.path.exists(p) for p in (onnx_path, inp_path, ref_path, stamp_path)):
        with open(stamp_path, encoding="utf-8") as f:
            if f.read() == want:
                return False
    if os.path.exists(stamp_path):  # no stamp while the files are half written
        os.remove(stamp_path)
    model = build(name)
    x = torch.randn(*input_shape(name), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        y = model(x).numpy()
    torch.onnx.export(model, x, onnx_path, input_names=["data"], output_names=["logits"], opset_version=OPSET)
    np.save(inp_path, x.numpy())
    np.save(ref_path, y)
    with open(stamp_path, "w", encoding="utf-8") as f:
        f.write(want)
    print(f"exported {name}: {os.path.getsize(onnx_path) / 1e6:.1f} MB", file=sys.stderr)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "build", "models"))
    ap.add_argument("--reexport", action="store_true", help="export even the models whose stamp matches")
    ap.add_argument("names", nargs="*", default=MODELS)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = [m for n in a.names for m in (SUITE if n == "suite" else [n])]
    for n in names:
        if n not in MODELS + SUITE:
            sys.exit(f"unknown model '{n}' (known: {', '.join(MODELS + SUITE)}, suite)")
        export(n, a.out, a.reexport)


if __name__ == "__main__":
    main()
