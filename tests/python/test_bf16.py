"""--precision bf16 through the Python package (docs/bf16.md): a model's
dense layers (ONNX Gemm, and MatMul of a 3-D activation by a constant)
compiled under PassContext(config={"kiln.precision": "bf16"}) take the
dense_pack_bf16.x86 template and match NumPy's float64 result within the
documented bound (relative L2 error 1e-2) on fresh random inputs; odd
sizes (K = 129, N = 10) included.  On a CPU without AVX512-BF16 the build
is refused with the reason instead.  Unknown config keys and values are
refused."""
import json
import os

import numpy as np
import pytest

import kiln
from kiln import graph_executor

from e2e_common import cpu_has_bf16

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


# Targets whose CPU description (src/target's table) puts VDPBF16PS below and
# above the FMAs' rate: the bfloat16 fallbacks' form and the Winograd rule
# follow it.
SLOW_DOT = "llvm -mcpu=emeraldrapids"
FAST_DOT = "llvm -mcpu=znver5"


def _model(rng):
    w1 = rng.standard_normal((64, 129)).astype(np.float32) * 0.1   # Gemm transB: [N, K]
    b1 = rng.standard_normal(64).astype(np.float32)
    w2 = rng.standard_normal((64, 10)).astype(np.float32) * 0.1    # MatMul: [K, N]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["r3"]),
        helper.make_node("MatMul", ["r3", "w2"], ["y"]),
    ]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2"),
             numpy_helper.from_array(np.array([2, 3, 64], np.int64), "shape")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 129])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), (w1, b1, w2)


def test_bf16_dense_matches_numpy(tmp_path):
    rng = np.random.default_rng()
    model, (w1, b1, w2) = _model(rng)
    path = str(tmp_path / "mlp.onnx")
    onnx.save(model, path)
    mod, params = kiln.frontend.from_onnx(path, {"x": (6, 129)})
    with kiln.transform.PassContext(opt_level=3, config={"kiln.precision": "bf16"}):
        if not cpu_has_bf16():
            with pytest.raises(kiln.KilnError, match="needs a CPU with AVX512-BF16"):
                kiln.build(mod, target="cpu", params=params)
            return
        tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
        lib = kiln.build(mod, target="cpu", params=params)
    assert [t.name for t in tasks] == ["dense_pack_bf16.x86"] * 2, [t.name for t in tasks]
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    x = rng.standard_normal((6, 129)).astype(np.float32)
    m.set_input("x", x)
    m.run()
    h = np.maximum(x.astype(np.float64) @ w1.T.astype(np.float64) + b1, 0)
    ref = (h @ w2.astype(np.float64)).reshape(2, 3, 10)
    y = m.get_output(0).numpy()
    err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    assert err < 1e-2, err
    assert err > 1e-7, "bf16 rounding leaves no trace: the fp32 kernels ran"  # not the fp32 path
    # fp32 in the same process is unchanged
    with kiln.transform.PassContext(opt_level=3):
        tasks32 = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target="llvm")
    assert "dense_pack_bf16.x86" not in [t.name for t in tasks32]


def test_bf16_without_the_cpu_feature(tmp_path, monkeypatch):
    model, _ = _model(np.random.default_rng(0))
    path = str(tmp_path / "mlp.onnx")
    onnx.save(model, path)
    mod, params = kiln.frontend.from_onnx(path, {"x": (6, 129)})
    monkeypatch.setenv("KILN_CPU_NO_BF16", "1")
    with kiln.transform.PassContext(opt_level=3, config={"kiln.precision": "bf16"}):
        with pytest.raises(kiln.KilnError, match="needs a CPU with AVX512-BF16.*--precision fp32"):
            kiln.build(mod, target="cpu", params=params)


def test_bf16_config_errors():
    with pytest.raises(kiln.KilnError, match="config 'kiln.precision' must be one of fp32, bf16, got 'fp16'"):
        kiln.transform.PassContext(opt_level=3, config={"kiln.precision": "fp16"})
    with pytest.raises(kiln.KilnError, match="config key 'relay.FuseOps.max_depth' is not supported"):
        kiln.transform.PassContext(opt_level=3, config={"relay.FuseOps.max_depth": 4})
    assert os.environ.get("KILN_CPU_NO_BF16") is None


def test_bf16_convolutions_match_pytorch(tmp_path):
    """1x1 and strided 3x3 convolutions (batch-norm, a residual add and
    ReLU fused) take conv2d_NCHWc_bf16.x86; the first conv's 3 input
    channels stay float32 (too little work a value to pay for pairing
    them: test_bf16_odd_channels_paired_where_the_work_pays), as does the 3x3 stride-1
    conv float32 runs as Winograd on a CPU whose VDPBF16PS is slower than
    its FMAs (-mcpu=emeraldrapids); the result matches PyTorch within the
    documented bound."""
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c0 = torch.nn.Conv2d(3, 32, 3, stride=2, padding=1)
            self.c1 = torch.nn.Conv2d(32, 64, 1)
            self.bn = torch.nn.BatchNorm2d(64)
            self.c2 = torch.nn.Conv2d(64, 64, 3, padding=1)
            self.c3 = torch.nn.Conv2d(64, 48, 3, stride=2, padding=1, bias=False)
            self.fc = torch.nn.Linear(48, 10)

        def forward(self, x):
            y = torch.relu(self.bn(self.c1(torch.relu(self.c0(x)))))
            y = torch.relu(self.c2(y) + y)
            return self.fc(self.c3(y).mean((2, 3)))

    torch.manual_seed(int(np.random.randint(1 << 30)))
    m = Net().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 30, 30)
    path = str(tmp_path / "cnn.onnx")
    torch.onnx.export(m, x, path, input_names=["x"], output_names=["y"], opset_version=13)
    mod, params = kiln.frontend.from_onnx(path, {"x": (1, 3, 30, 30)})
    if not cpu_has_bf16():
        return  # the refusal is test_bf16_without_the_cpu_feature's
    with kiln.transform.PassContext(opt_level=3, config={"kiln.precision": "bf16"}):
        tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target=SLOW_DOT)
        lib = kiln.build(mod, target=SLOW_DOT, params=params)
    assert sorted(t.name for t in tasks) == ["conv2d_NCHWc.x86"] + ["conv2d_NCHWc_bf16.x86"] * 2 + \
        ["conv2d_NCHWc_winograd.x86", "dense_pack_bf16.x86"], [t.name for t in tasks]
    g = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    g.set_input("x", x.numpy())
    g.run()
    ref = m(x).detach().numpy().astype(np.float64)
    err = np.linalg.norm(g.get_output(0).numpy() - ref) / np.linalg.norm(ref)
    assert 1e-7 < err < 1e-2, err


def test_bf16_odd_channels_paired_where_the_work_pays(tmp_path):
    """A conv of 3 input channels with at least 256 multiply-adds per
    input value (7x7/2 to 64: 784) runs in bfloat16, its input padded to 4
    channels (a zero channel under zero weights), on a CPU whose VDPBF16PS
    outruns its FMAs; one with fewer (3x3/2 to 32: 72) stays float32, and
    so does the first on a CPU whose bfloat16 convs take the fma form (the
    zero channel would be a third more FMAs).  Both match PyTorch."""
    torch = pytest.importorskip("torch")
    if not cpu_has_bf16():
        pytest.skip("the CPU has no AVX512-BF16")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.big = torch.nn.Conv2d(3, 64, 7, stride=2, padding=3)
            self.small = torch.nn.Conv2d(3, 32, 3, stride=2, padding=1)

        def forward(self, x):
            return torch.relu(self.big(x)), self.small(x)

    torch.manual_seed(int(np.random.randint(1 << 30)))
    m = Net().eval()
    x = torch.randn(1, 3, 33, 35)
    path = str(tmp_path / "stem.onnx")
    torch.onnx.export(m, x, path, input_names=["x"], output_names=["a", "b"], opset_version=13)
    mod, params = kiln.frontend.from_onnx(path, {"x": (1, 3, 33, 35)})
    for target, want, lows in ((FAST_DOT, [("conv2d_NCHWc.x86", 3, 32), ("conv2d_NCHWc_bf16.x86", 4, 64)], (1e-5, 0)),
                               (SLOW_DOT, [("conv2d_NCHWc.x86", 3, 32), ("conv2d_NCHWc.x86", 3, 64)], (0, 0))):
        with kiln.transform.PassContext(opt_level=3, config={"kiln.precision": "bf16"}):
            tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target=target)
            lib = kiln.build(mod, target=target, params=params)
        got = sorted((t.name, t.args[0][1][1], t.args[1][1][0]) for t in tasks)
        assert got == want, (target, got)
        g = graph_executor.GraphModule(lib["default"](kiln.cpu()))
        g.set_input("x", x.numpy())
        g.run()
        for i, (ref, lo) in enumerate(zip(m(x), lows)):
            ref = ref.detach().numpy().astype(np.float64)
            err = np.linalg.norm(g.get_output(i).numpy() - ref) / np.linalg.norm(ref)
            hi = 1e-2 if lo else 1e-5
            assert lo <= err < hi, (target, i, err)  # a bfloat16 conv rounds, a float32 one does not


def test_bf16_winograd_layer_unless_a_faster_bf16_record(tmp_path):
    """A 3x3 stride-1 conv float32 runs as Winograd stays float32 Winograd
    under --precision bf16 on a CPU whose VDPBF16PS is slower than its FMAs
    (docs/bf16.md: fewer multiply-adds than any direct kernel); a bfloat16
    record faster than every Winograd record of the layer makes it a
    bfloat16 conv.  Both builds match PyTorch."""
    torch = pytest.importorskip("torch")
    if not cpu_has_bf16():
        pytest.skip("the CPU has no AVX512-BF16")
    conv = torch.nn.Conv2d(64, 64, 3, padding=1).eval()
    x = torch.randn(1, 64, 15, 15)
    path = str(tmp_path / "w.onnx")
    torch.onnx.export(conv, x, path, input_names=["x"], output_names=["y"], opset_version=13)
    mod, params = kiln.frontend.from_onnx(path, {"x": (1, 64, 15, 15)})
    ref = conv(x).detach().numpy().astype(np.float64)

    def build():
        with kiln.transform.PassContext(opt_level=3, config={"kiln.precision": "bf16"}):
            tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target=SLOW_DOT)
            lib = kiln.build(mod, target=SLOW_DOT, params=params)
        g = graph_executor.GraphModule(lib["default"](kiln.cpu()))
        g.set_input("x", x.numpy())
        g.run()
        err = np.linalg.norm(g.get_output(0).numpy() - ref) / np.linalg.norm(ref)
        return [t for t in tasks], err

    tasks, err = build()
    assert [t.name for t in tasks] == ["conv2d_NCHWc_winograd.x86"]
    assert err < 1e-4, err  # float32 Winograd: no bfloat16 rounding
    wargs, target = tasks[0].args, str(tasks[0].target)

    def record(task, entity, cost):
        return json.dumps({"input": [target, task, wargs, {}], "config": {"index": 0, "code_hash": None, "entity": entity},
                           "result": [[cost], 0, 0.1, 1.0], "version": 0.2})

    bf16 = [["tile_ic", "sp", [-1, 16]], ["tile_oc", "sp", [-1, 16]], ["tile_ow", "sp", [-1, 5]], ["unroll_kw", "ot", False],
            ["bf16_dot", "ot", "fma"]]
    wino = [["tile_ic", "sp", [-1, 16]], ["tile_oc", "sp", [-1, 1, 16]], ["tile_p", "sp", [-1, 1]], ["tile_rows", "sp", [-1, 1]]]
    wino2 = [["tile_ic", "sp", [-1, 16]], ["tile_oc", "sp", [-1, 1, 16]], ["tile_p", "sp", [-1, 2]], ["tile_rows", "sp", [-1, 1]]]
    for wcost, w2cost, want in ((None, None, "conv2d_NCHWc_bf16.x86"), (1e-3, None, "conv2d_NCHWc_bf16.x86"),
                                (1e-7, None, "conv2d_NCHWc_winograd.x86"),
                                (1e-7, 1e-8, "conv2d_NCHWc_winograd_bf16.x86")):
        log = tmp_path / "r.log"
        lines = [record("conv2d_NCHWc_bf16.x86", bf16, 1e-6)]
        if wcost is not None:
            lines.append(record("conv2d_NCHWc_winograd.x86", wino, wcost))
        if w2cost is not None:
            lines.append(record("conv2d_NCHWc_winograd_bf16.x86", wino2, w2cost))
        log.write_text("\n".join(lines) + "\n")
        with kiln.autotvm.apply_history_best(str(log)):
            tasks, err = build()
        assert [t.name for t in tasks] == [want], (wcost, [t.name for t in tasks])
        assert err < 1e-2, err
        if want != "conv2d_NCHWc_winograd.x86":
            assert err > 1e-5, err  # the weights were rounded to bfloat16


@pytest.mark.parametrize("size", [8, 15, 30])
def test_bf16_winograd_layer_by_the_targets_rate(tmp_path, size):
    """Without records, a Winograd layer takes the task of the largest
    estimated gain over the direct float32 kernel: on znver5 (VDPBF16PS
    1.87x the FMA) bfloat16 Winograd F(2x2) (2.25x fewer multiply-adds at
    1.87x, full from 64 tiles: 4.2x) at 15 x 15 (64 tiles; float32 F(4x4)
    has 16, estimated 1.0x) and at 30 x 30 (F(4x4) 4x), the bfloat16 direct
    kernel (1.87x) at 8 x 8 (16 F(2x2) tiles, 1.05x); on emeraldrapids
    (0.48x) all stay float32 Winograd.  The bfloat16 builds' fallback form
    is vdpbf16ps, and they match PyTorch."""
    torch = pytest.importorskip("torch")
    if not cpu_has_bf16():
        pytest.skip("the CPU has no AVX512-BF16")
    conv = torch.nn.Conv2d(64, 64, 3, padding=1).eval()
    x = torch.randn(1, 64, size, size)
    path = str(tmp_path / "w.onnx")
    torch.onnx.export(conv, x, path, input_names=["x"], output_names=["y"], opset_version=13)
    mod, params = kiln.frontend.from_onnx(path, {"x": (1, 64, size, size)})
    ref = conv(x).detach().numpy().astype(np.float64)
    for target, want in ((SLOW_DOT, "conv2d_NCHWc_winograd.x86"),
                         (FAST_DOT, "conv2d_NCHWc_bf16.x86" if size == 8 else "conv2d_NCHWc_winograd_bf16.x86")):
        with kiln.transform.PassContext(opt_level=3, config={"kiln.precision": "bf16"}):
            tasks = kiln.autotvm.task.extract_from_program(mod["main"], params=params, target=target)
            lib = kiln.build(mod, target=target, params=params)
        assert [t.name for t in tasks] == [want], (target, [t.name for t in tasks])
        g = graph_executor.GraphModule(lib["default"](kiln.cpu()))
        g.set_input("x", x.numpy())
        g.run()
        err = np.linalg.norm(g.get_output(0).numpy() - ref) / np.linalg.norm(ref)
        if want != "conv2d_NCHWc_winograd.x86":
            assert 1e-5 < err < 1e-2, err  # weights and activations (or their transforms) rounded to bfloat16
        else:
            assert err < 1e-4, err  # float32 Winograd
