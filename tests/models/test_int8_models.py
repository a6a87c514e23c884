"""int8 models (docs/int8.md): float32 models quantized by ONNX Runtime's
own tool (tools/quantize_models.py: quantize_static, QDQ, per-channel,
uint8 activations, int8 weights, calibrated on seeded inputs) compile with
`kiln compile`, run their quantized layers on int8 kernels
(nn.contrib_dense_vnni, dense_vnni.x86; nn.contrib_conv2d_NCHWc_int8,
conv2d_NCHWc_int8.x86) where the CPU has AVX512-VNNI, and
match ONNX Runtime: Kiln's int8 output is as close to the float32 model's
as ONNX Runtime's int8 output is (within 1.25x of ONNX Runtime's own
deviation plus 1e-3), and closer to ONNX Runtime's int8 output than that
deviation.

The quantization needs onnxruntime: the Python in $KILN_ORT_PYTHON, else
build/ort-venv (tests/models/ort_venv.sh makes it; tools/test.sh runs that
in CI), else the `python3` on PATH if it has onnxruntime; the tests skip
only when none of them has it.
"""
import os

import numpy as np

from e2e_common import ROOT, cpu_has, kiln, ort_fixture, run

QUANTIZE = os.path.join(ROOT, "tools", "quantize_models.py")


def has_vnni():
    return cpu_has("avx512_vnni") and os.environ.get("KILN_CPU_NO_VNNI", "0") in ("", "0")


ortpy = ort_fixture("onnxruntime.quantization")


def quantize(ortpy, prefix):
    p = run([ortpy, QUANTIZE, prefix + ".onnx"])
    assert p.returncode == 0, p.stderr


def rel(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


def check(prefix, tmp_path, int8_ops):
    """Compile PREFIX.int8.onnx, run it on PREFIX.input.npy; compare with
    ONNX Runtime's int8 and float32 outputs; the int8 ops the graph must
    (with VNNI) or must not (without) contain."""
    so, out = str(tmp_path / "m.so"), str(tmp_path / "out.npz")
    kiln("compile", prefix + ".int8.onnx", "-o", so)
    kiln("run", so, "--inputs", prefix + ".input.npy", "-o", out)
    got = np.load(out)[np.load(out).files[0]]
    ort8, fp32 = np.load(prefix + ".int8.ort.npy"), np.load(prefix + ".fp32.ort.npy")
    dev_ort, dev_kiln, between = rel(ort8, fp32), rel(got, fp32), rel(got, ort8)
    assert dev_kiln <= 1.25 * dev_ort + 1e-3, (dev_kiln, dev_ort)
    assert between <= max(dev_ort, 1e-6), (between, dev_ort)
    kernels = kiln("inspect", so).stdout
    for op in int8_ops:
        assert ("fused_" + op.replace(".", "_") in kernels) == has_vnni(), (op, has_vnni(), kernels)
    return dev_kiln, dev_ort, between


def make_mlp(prefix, shape=(4, 64)):
    """A Gemm + ReLU + MatMul + bias MLP (K 64 -> 96 -> 10, batch 4), seeded;
    with a 3-D input shape [B, S, 64] the first layer is a MatMul + Add
    (a transformer's projection)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((64, 96)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(96) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((96, 10)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    first = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"])] if len(shape) == 2 else \
        [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h"])]
    nodes = first + [helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["m"]),
                     helper.make_node("Add", ["m", "b2"], ["y"])]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape[:-1]) + [10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, prefix + ".onnx")
    np.save(prefix + ".input.npy", np.random.default_rng(5).standard_normal(shape).astype(np.float32))


def make_convnet(prefix):
    """A small seeded CNN with the int8 conv's cases: a 3-channel stem
    (its channels padded to 4), a padded max pool (on uint8), a 3x3 padded
    conv with ReLU, a
    strided 3x3 and a strided 1x1 (a downsampling residual block: the
    residual add of two dequantized tensors), a depthwise 3x3 (stays
    float32), a 1x1, global pooling and a Gemm."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    inits, nodes = [], []

    def conv(x, y, cin, cout, k, stride=1, pad=0, group=1, relu=True):
        w = (rng.standard_normal((cout, cin // group, k, k)) * (1.5 / np.sqrt(cin // group * k * k))).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, y + "_w"), numpy_helper.from_array(b, y + "_b")])
        out = y + "_c" if relu else y
        nodes.append(helper.make_node("Conv", [x, y + "_w", y + "_b"], [out], kernel_shape=[k, k], strides=[stride] * 2,
                                      pads=[pad] * 4, group=group))
        if relu:
            nodes.append(helper.make_node("Relu", [out], [y]))

    conv("x", "s0", 3, 16, 3, pad=1)
    nodes.append(helper.make_node("MaxPool", ["s0"], ["s"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]))
    conv("s", "a", 16, 32, 3, stride=2, pad=1)
    conv("a", "a2", 32, 32, 3, pad=1, relu=False)
    conv("s", "sc", 16, 32, 1, stride=2, relu=False)
    nodes += [helper.make_node("Add", ["a2", "sc"], ["r0"]), helper.make_node("Relu", ["r0"], ["r"])]
    conv("r", "d", 32, 32, 3, pad=1, group=32)
    conv("d", "e", 32, 48, 1)
    wf = (rng.standard_normal((48, 10)) * 0.2).astype(np.float32)
    inits.append(numpy_helper.from_array(wf, "wf"))
    nodes += [helper.make_node("GlobalAveragePool", ["e"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
              helper.make_node("MatMul", ["f", "wf"], ["y"])]
    g = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 20, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, prefix + ".onnx")
    np.save(prefix + ".input.npy", np.random.default_rng(5).standard_normal((1, 3, 20, 20)).astype(np.float32))


def test_int8_convnet_matches_onnxruntime(ortpy, tmp_path):
    """The stem (3 channels padded to 4), 3x3 (padded with the input's zero
    point), strided 3x3 and 1x1, a residual add and a 1x1 on int8 kernels;
    the depthwise conv float32."""
    prefix = str(tmp_path / "convnet")
    make_convnet(prefix)
    quantize(ortpy, prefix)
    check(prefix, tmp_path, ["nn.contrib_conv2d_NCHWc_int8"])
    shown = kiln("show", prefix + ".int8.onnx").stdout
    assert (shown.count("nn.contrib_conv2d_NCHWc_int8(") == 5) == has_vnni(), shown
    # a layer whose input zero point is 0 (after a ReLU) has no compensation
    # input: its epilogue does not subtract the zeros
    convs = [ln for ln in shown.splitlines() if "nn.contrib_conv2d_NCHWc_int8(" in ln]
    for ln in convs:
        nargs = ln.split("(", 1)[1].split("strides=")[0].count("%")
        assert nargs == (3 if "input_zero_point=0," in ln else 4), ln
    assert any("input_zero_point=0," in ln for ln in convs) == has_vnni(), convs
    # the requantize epilogues (src/graph/passes/requantize.c): QuantizeLinear's
    # divide by its scale a multiply, its add of a zero point 0 gone, and the
    # residual branch's quantize-dequantize pair without the casts to uint8
    # and back or the zero point added and taken away (the float32 model
    # keeps all of them)
    names = set(w for w in shown.replace("(", " ").split() if w.startswith("fused_"))
    assert any("divide_round" in f for f in names) != has_vnni(), names
    assert any("clip_cast_cast_subtract" in f for f in names) != has_vnni(), names
    assert any("round_clip_multiply_add" in f for f in names) == has_vnni(), names
    # the pool's dequantize and requantize with the same scale and zero point
    # gone: the pool kernel reads and writes uint8 and does nothing else
    assert ("fused_nn_max_pool2d" in names) == has_vnni(), names


def test_int8_mlp_matches_onnxruntime(ortpy, tmp_path):
    prefix = str(tmp_path / "mlp")
    make_mlp(prefix)
    quantize(ortpy, prefix)
    check(prefix, tmp_path, ["nn.contrib_dense_vnni"])


def test_int8_3d_matmul_matches_onnxruntime(ortpy, tmp_path):
    """[2, 8, 64] x [64, 96]: the uint8 activation is reshaped to [16, 64]
    for the int8 dense layer and the result back to [2, 8, 96]."""
    prefix = str(tmp_path / "mlp3")
    make_mlp(prefix, (2, 8, 64))
    quantize(ortpy, prefix)
    check(prefix, tmp_path, ["nn.contrib_dense_vnni"])


def test_int8_mlp_without_vnni_stays_float32(ortpy, tmp_path, monkeypatch):
    """$KILN_CPU_NO_VNNI=1: the QDQ layers run as before, in float32 (the
    fake-quantized arithmetic), and still match."""
    monkeypatch.setenv("KILN_CPU_NO_VNNI", "1")
    prefix = str(tmp_path / "mlp")
    make_mlp(prefix)
    quantize(ortpy, prefix)
    check(prefix, tmp_path, ["nn.contrib_dense_vnni"])


def test_int8_resnet18_matches_onnxruntime(ortpy, exported, tmp_path):
    prefix = exported("resnet18")
    quantize(ortpy, prefix)
    check(prefix, tmp_path, ["nn.contrib_dense_vnni", "nn.contrib_conv2d_NCHWc_int8"])
