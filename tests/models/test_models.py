"""End-to-end: the five torchvision models (seeded random weights, exported
to ONNX) compile with `kiln compile` and match PyTorch's output within 1e-4
relative L2 error when run with `kiln run`.  Also the bundled digits model:
Kiln's accuracy on the held-out set equals PyTorch's, and its logits match.

The benchmark suite's other architectures (tools/export_models.py SUITE:
vision and Swin transformers, ConvNeXt, EfficientNet, RegNet, ResNeXt,
ShuffleNet, MobileNetV3, DenseNet, GoogLeNet, Inception-v3, MnasNet, Wide
ResNet, transformer encoders) are checked the same way.  A CI run takes
the CI_SUITE subset (a transformer encoder, ShuffleNet, MobileNetV3-small:
about a minute on two cores); KILN_MODELS=all runs every one (about 15
minutes on two quiet cores).

Open batch: the five models exported with an open batch compile once with
a symbolic batch and run at batch 1, 5 and 8 against PyTorch; a CI run
takes SqueezeNet and MobileNetV2, KILN_MODELS=all all five."""
import os

import numpy as np
import pytest

from e2e_common import ROOT, kiln

MODELS = ["squeezenet1_1", "resnet18", "mobilenet_v2", "resnet50", "vgg16"]
SUITE = ["vit_b_16", "swin_t", "convnext_tiny", "efficientnet_b0", "regnet_y_400mf", "regnet_x_1_6gf",
         "resnext50_32x4d", "shufflenet_v2_x1_0", "mobilenet_v3_large", "mobilenet_v3_small", "densenet121",
         "googlenet", "inception_v3", "mnasnet1_0", "wide_resnet50_2", "encoder_32", "encoder_128", "encoder_384"]
CI_SUITE = ["encoder_32", "shufflenet_v2_x1_0", "mobilenet_v3_small"]


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("name", MODELS)
def test_model_matches_pytorch(name, exported, tmp_path):
    prefix = exported(name)
    so = str(tmp_path / (name + ".so"))
    kiln("compile", prefix + ".onnx", "-o", so, "--input-shapes", "data:[1,3,224,224]")
    out = str(tmp_path / "out.npz")
    kiln("run", so, "--inputs", prefix + ".input.npy", "-o", out)
    got = np.load(out)["logits"]
    ref = np.load(prefix + ".output.npy")
    assert got.shape == ref.shape
    err = rel_l2(got, ref)
    assert err <= 1e-4, f"{name}: relative L2 error {err:g}"
    if name == "vgg16":
        check_vgg16_profile(so)


def check_vgg16_profile(so):
    """VGG-16's profile lists shared kernels as the seeds' forum profile
    does (TVM: nodes fused_..._relu_1 and fused_..._relu_11 both call
    fused_..._relu_1): Ops is the function a node calls, identical layers
    call one kernel, a repeat's node name is the kernel's with a digit
    appended, and the op list has its own column."""
    p = kiln("run", so, "--profile", "--repeat", "1", "--number", "1")
    lines = p.stdout.splitlines()
    header = lines[0].split("  ")
    cols = [c.strip() for c in header if c.strip()]
    assert cols[:7] == ["Node Name", "Ops", "Time(us)", "Time(%)", "Shape", "Inputs", "Outputs"], cols
    assert "Op List" in cols
    rows = [ln.split() for ln in lines[2:] if ln.startswith("fused_")]
    assert len(rows) == 24, len(rows)  # 13 convs, 5 pools, 3 dense, transforms
    calls = {}
    for r in rows:
        calls.setdefault(r[1], []).append(r[0])
        assert r[0].startswith(r[1])
    shared = {k: sorted(v) for k, v in calls.items() if len(v) > 1}
    # conv3_2/conv3_3, conv4_2/conv4_3, conv5_1/conv5_2/conv5_3 are twins
    assert sorted(len(v) for v in shared.values()) == [2, 2, 3], shared
    for k, v in shared.items():
        assert v[0] == k and all(n == k + str(i) for i, n in enumerate(v[1:], 1)), (k, v)
    assert len(calls) == 20


def test_suite_lists_match_the_exporter():
    import importlib.util
    spec = importlib.util.spec_from_file_location("export_models", os.path.join(ROOT, "tools", "export_models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.SUITE == SUITE and mod.MODELS == sorted(MODELS, key=mod.MODELS.index)


@pytest.mark.parametrize("name", SUITE if os.environ.get("KILN_MODELS") == "all" else CI_SUITE)
def test_suite_model_matches_pytorch(name, exported, tmp_path):
    prefix = exported(name)
    so = str(tmp_path / (name + ".so"))
    kiln("compile", prefix + ".onnx", "-o", so)
    out = str(tmp_path / "out.npz")
    kiln("run", so, "--inputs", prefix + ".input.npy", "-o", out)
    with np.load(out) as z:  # the model's one output, under the name the model gives it
        got = z[z.files[0]]
    ref = np.load(prefix + ".output.npy")
    assert got.shape == ref.shape
    err = rel_l2(got, ref)
    assert err <= 1e-4, f"{name}: relative L2 error {err:g}"


def test_digits_accuracy_equals_pytorch(tmp_path):
    d = os.path.join(ROOT, "models", "digits")
    held = np.load(os.path.join(d, "heldout.npz"))
    images, labels, logits = held["image"], held["label"], held["logits"]
    n = len(images)
    so = str(tmp_path / "digits.so")
    kiln("compile", os.path.join(d, "digits.onnx"), "-o", so, "--input-shapes", f"image:[{n},1,8,8]")
    inp = str(tmp_path / "in.npz")
    np.savez(inp, image=images)
    out = str(tmp_path / "out.npz")
    kiln("run", so, "--inputs", inp, "-o", out)
    got = np.load(out)["logits"]
    assert rel_l2(got, logits) <= 1e-4
    correct = int((got.argmax(1) == labels).sum())
    ref = dict(line.split() for line in open(os.path.join(d, "reference.txt")))
    assert correct == int(ref["pytorch_correct"]), (correct, ref)
    assert correct / n > 0.95


# Open-batch builds: the smallest two by default, all five with KILN_MODELS=all
OPEN_BATCH = MODELS if os.environ.get("KILN_MODELS") == "all" else ["squeezenet1_1", "mobilenet_v2"]


@pytest.mark.parametrize("name", OPEN_BATCH)
def test_open_batch_model_matches_pytorch(name, tmp_path):
    """A torchvision model exported with an open batch (dim_param 'batch')
    compiles once with a bounded symbolic batch (docs/symbolic_shapes.md:
    batch-1 kernels called per sample, batched variants at 4 and 8 in the
    same module where the weights are past half the L3) and runs at
    batch 1 (per sample), 5 (the batch-4 kernels, then one sample) and 8
    (the batch-8 kernels; without variants the samples one by one) against
    PyTorch."""
    import sys  # pylint: disable=import-outside-toplevel
    import torch  # pylint: disable=import-outside-toplevel
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import export_models  # pylint: disable=import-outside-toplevel
    net = export_models.build(name)  # the exporter's seeded weights
    onnx_path = str(tmp_path / (name + "_open.onnx"))
    torch.onnx.export(net, torch.randn(1, 3, 224, 224), onnx_path, input_names=["data"], output_names=["logits"],
                      opset_version=13, dynamic_axes={"data": {0: "batch"}, "logits": {0: "batch"}})
    so = str(tmp_path / (name + ".so"))
    kiln("compile", onnx_path, "-o", so, "--input-shapes", "data:[batch,3,224,224],batch<=8", "--quiet-fallback")
    info = kiln("inspect", so).stdout
    # SqueezeNet's 5 MB and MobileNet-V2's 14 MB of weights fit half the L3
    # and a sample's 3 / 4.8 MB largest map is past the L2: no variants
    # (graph_default_batches)
    variants = name not in ("squeezenet1_1", "mobilenet_v2")
    assert "batch in [1, 8]" in info and ("batched variants" in info and " 4 8" in info) == variants, info
    for b in (1, 5, 8):
        x = np.random.RandomState(b).randn(b, 3, 224, 224).astype(np.float32)
        np.save(str(tmp_path / "x.npy"), x)
        kiln("run", so, "--inputs", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npz"))
        got = np.load(str(tmp_path / "y.npz"))["logits"]
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        assert got.shape == (b, 1000)
        assert rel_l2(got, ref) <= 1e-4, f"{name} at batch {b}: relative L2 error {rel_l2(got, ref):g}"
