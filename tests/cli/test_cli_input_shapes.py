"""--input-shapes overrides any dimension a model declares (TVM's
behaviour): a CNN exported at batch 1 compiles and runs at batch 3 and
matches PyTorch; open dimensions written as -1 or 0 take the given size;
and where the graph's own constants cannot take the new shape (a Reshape
to a fixed size) the error names the node and the override.

Models are made here with seeded weights (PyTorch's exporter or onnx's
helper); run with /usr/bin/python3."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from e2e_common import kiln

torch = pytest.importorskip("torch")


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * 6 * 6, 5)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """A CNN exported with a fixed batch of 1 (the exporter's default)."""
    torch.manual_seed(19)
    net = SmallCNN().eval()
    path = str(tmp_path_factory.mktemp("cnn") / "cnn.onnx")
    torch.onnx.export(net, torch.randn(1, 3, 12, 12), path, input_names=["x"], output_names=["y"], opset_version=13)
    return net, path


def compile_run(tmp_path, model, shapes, inputs):
    so = str(tmp_path / "m.so")
    kiln("compile", model, "-o", so, "--input-shapes", shapes, "--quiet-fallback")
    np.savez(str(tmp_path / "in.npz"), **inputs)
    kiln("run", so, "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"))
    return np.load(str(tmp_path / "out.npz"))


def test_override_fixed_batch(cnn, tmp_path):
    net, path = cnn
    assert onnx.load(path).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1
    x = np.random.RandomState(3).randn(3, 3, 12, 12).astype(np.float32)
    out = compile_run(tmp_path, path, "x:[3,3,12,12]", {"x": x})["y"]
    with torch.no_grad():
        ref = net(torch.from_numpy(x)).numpy()
    assert out.shape == (3, 5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_override_image_size_refused_by_the_linear_layer(cnn, tmp_path):
    # a 16x16 image flattens to 8*8*8 features, which the fixed weight of
    # the Gemm cannot take: the error names that node and the override
    _, path = cnn
    p = kiln("show", path, "--input-shapes", "x:[1,3,16,16]", check=False)
    assert p.returncode == 1, p.stdout
    assert "Gemm node" in p.stderr and "input 'x' dimension 2 from 12 to 16" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "Assertion" not in p.stderr


def fixed_reshape_model(path):
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [1, 12])
    w = helper.make_tensor("w", TensorProto.FLOAT, [12, 4], np.random.RandomState(0).rand(48).astype(np.float32))
    g = helper.make_graph([helper.make_node("Reshape", ["a", "s"], ["r"], name="flat"),
                           helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape, w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_reshape_to_fixed_size_names_the_node(tmp_path):
    path = str(tmp_path / "fixed.onnx")
    fixed_reshape_model(path)
    p = kiln("show", path, "--input-shapes", "a:[8,3,4]", check=False)
    assert p.returncode == 1
    assert "Reshape node 'flat'" in p.stderr and "input 'a' dimension 0 from 1 to 8" in p.stderr, p.stderr
    assert "--input-shapes" in p.stderr
    # the declared shape, given or not, still works
    assert kiln("show", path, "--input-shapes", "a:[1,3,4]").returncode == 0
    # a rank that differs from the model's is an error of its own
    p = kiln("show", path, "--input-shapes", "a:[8,12]", check=False)
    assert p.returncode == 1 and "rank 3 in the model" in p.stderr, p.stderr


@pytest.mark.parametrize("open_dim", [-1, 0])
def test_open_dims_minus_one_and_zero(tmp_path, open_dim):
    # exporters write an open dimension as -1 (ONNX Runtime accepts it) or
    # 0; with --input-shapes giving the size the model compiles and runs
    path = str(tmp_path / "open.onnx")
    w = np.random.RandomState(1).randn(6, 4).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["m"], name="mm"),
                           helper.make_node("Relu", ["m"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [open_dim, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [open_dim, 4])],
                          [helper.make_tensor("w", TensorProto.FLOAT, [6, 4], w.ravel())])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    a = np.random.RandomState(2).randn(5, 6).astype(np.float32)
    out = compile_run(tmp_path, path, "a:[5,6]", {"a": a})["y"]
    np.testing.assert_allclose(out, np.maximum(a @ w, 0), rtol=1e-5, atol=1e-5)
    if open_dim == -1:
        p = kiln("show", path, check=False)
        assert p.returncode == 1 and "dynamic dimension 0" in p.stderr and "--input-shapes" in p.stderr, p.stderr
    assert os.path.exists(str(tmp_path / "m.so"))


# ---- symbolic dimensions (docs/symbolic_shapes.md) ----

class FCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1, stride=2)
        self.c2 = torch.nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


class ViewFlatten(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x.view(x.size(0), -1))


def test_symbolic_shapes_through_inference(tmp_path):
    path = str(tmp_path / "fcn.onnx")
    torch.onnx.export(FCN().eval(), torch.randn(1, 3, 32, 32), path, input_names=["x"], output_names=["y"],
                      opset_version=13)
    out = kiln("show", path, "--input-shapes", "x:[N,3,H,W]").stdout
    assert "%x: Tensor[(N, 3, H, W), float32]" in out, out
    assert "Tensor[(N, 4, floordiv((H + 1), 2), floordiv((W + 1), 2)), float32]" in out, out
    # the batch alone, bounded
    out = kiln("show", path, "--input-shapes", "x:[N,3,32,32],N<=64").stdout
    assert "Tensor[(N, 4, 16, 16), float32]" in out, out
    # tuning tasks over a symbolic image size: a clear error, no tasks at
    # made-up sizes (a symbolic batch alone lists its batch-1 tasks:
    # test_symbolic_batch_tasks_and_tune)
    p = kiln("tasks", path, "--input-shapes", "x:[N,3,H,W]", check=False)
    assert p.returncode == 1 and "needs static shapes" in p.stderr, p.stderr
    # numbers give today's static build
    assert "Tensor[(2, 4, 16, 16), float32]" in kiln("show", path, "--input-shapes", "x:[2,3,32,32]").stdout


def test_symbolic_batch_tasks_and_tune(tmp_path):
    # a symbolic batch alone runs the batch-1 kernels once per sample, so
    # its first tasks are the batch-1 tasks (listed with the batch named);
    # the batched variants' tasks (at 4 and 8 by default, as kiln compile
    # builds them) follow, used by their b4_/b8_ kernels; records tuned for
    # either serve the symbolic build
    path = str(tmp_path / "fcn.onnx")
    torch.onnx.export(FCN().eval(), torch.randn(1, 3, 32, 32), path, input_names=["x"], output_names=["y"],
                      opset_version=13)
    shapes = "x:[N,3,32,32],N<=16"
    loop = kiln("tasks", path, "--input-shapes", shapes, "--batch-sizes", "none").stdout
    static = kiln("tasks", path, "--input-shapes", "x:[1,3,32,32]").stdout
    assert loop.splitlines()[0] == ("symbolic batch N in [1, 16]: the kernels are built at batch 1 and called once "
                                    "per sample, so these are the batch-1 tasks; their records serve every N"), loop
    assert loop.count("(one sample of (N, ...))") == 2, loop
    # apart from those notes, exactly the static batch-1 listing
    assert loop.split("\n", 1)[1].replace("  (one sample of (N, ...))", "") == static, (loop, static)
    assert "workload: [(1,3,32,32),(8,3,3,3)] s2 p1" in loop and "workload: [(1,8,16,16),(4,8,3,3)] s1 p1" in loop
    out = kiln("tasks", path, "--input-shapes", shapes).stdout
    assert out.splitlines()[0] == ("symbolic batch N in [1, 16]: tasks 1-2 are the batch-1 tasks (kernels called once "
                                   "per sample; their records serve every N), the rest those of the batched "
                                   "variants at N = 4, 8 (--batch-sizes)"), out
    assert "[Task  6/ 6]" in out and out.count("(batched variant, N = 4)") == 2 and out.count("N = 8)") == 2, out
    assert "workload: [(8,3,32,32),(8,3,3,3)] s2 p1" in out, out
    assert "used by: b8_fused_nn_contrib_conv2d_NCHWc_add" in out, out
    assert "[Task  4/ 4]" in kiln("tasks", path, "--input-shapes", shapes, "--batch-sizes", "8").stdout
    p = kiln("tasks", path, "--input-shapes", shapes, "--batch-sizes", "4,2", check=False)
    assert p.returncode != 0 and "expected up to 8 increasing batches" in p.stderr, p.stderr
    log = str(tmp_path / "r.json")
    p = kiln("tune", path, "-o", log, "--input-shapes", shapes, "--trials", "2", "--tasks", "1,5", "--verify", "0",
             "--parallel", "1")
    assert "symbolic batch N: tuning the batch-1 tasks (1-2)" in p.stderr and "variants at N = 4, 8" in p.stderr, \
        p.stderr
    rec = open(log).read()
    assert '["TENSOR", [1, 3, 32, 32], "float32"]' in rec and '["TENSOR", [8, 3, 32, 32], "float32"]' in rec, rec
    p = kiln("compile", path, "--input-shapes", shapes, "--tuning-records", log, "-o", str(tmp_path / "f.so"))
    # tasks 1 and 5 found their records; the others (not tuned) take the fallback
    assert "no tuning record for conv2d_NCHWc.x86 [(1,8,16,16)" in p.stderr, p.stderr
    assert "no tuning record for conv2d_NCHWc.x86 [(4,3,32,32)" in p.stderr, p.stderr
    assert "[(1,3,32,32)" not in p.stderr and "[(8,3,32,32)" not in p.stderr, p.stderr


def test_symbolic_shape_errors(cnn, tmp_path):
    _, path = cnn
    for shapes, expect in [("x:[N,3,12,12],N<=0", "bad bound 'N<=0'"),
                           ("x:[N,3,12,12],M<=4", "a bound is given for 'M', which no input shape uses"),
                           ("x:[N,3,12,12],N>=9,N<=4", "symbol 'N' has empty bounds [9, 4]"),
                           ("x:[N,C,12,12]", "expects 3 input channels")]:
        p = kiln("show", path, "--input-shapes", shapes, check=False)
        assert p.returncode == 1 and expect in p.stderr, (shapes, p.stderr)
    # a shape computed from x.size(0) (exported with an open batch) is a
    # shape value over N: the view keeps N (tests/cli/test_shape_values.py)
    vpath = str(tmp_path / "view.onnx")
    torch.onnx.export(ViewFlatten(), torch.randn(2, 3, 4), vpath, input_names=["x"], output_names=["y"],
                      opset_version=13, dynamic_axes={"x": {0: "batch"}})
    assert "-> Tensor[(N, 12), float32]" in kiln("show", vpath, "--input-shapes", "x:[N,3,4]").stdout
    assert kiln("show", vpath, "--input-shapes", "x:[5,3,4]").returncode == 0


def test_symbolic_batch_compiled_once_runs_at_three_sizes(cnn, tmp_path):
    # one artifact, batch 1, 3 and 8, each against PyTorch; a batch beyond
    # the declared bound is an error naming the symbol and the bound
    net, path = cnn
    so = str(tmp_path / "sym.so")
    kiln("compile", path, "-o", so, "--input-shapes", "x:[N,3,12,12],N<=16", "--quiet-fallback")
    info = kiln("inspect", so).stdout
    assert "batch (kernels built at batch 1" in info and "  N in [1, 16]" in info, info
    # batched variants at 4 and 8 in the same module: 8 runs the batch-8
    # kernels, 7 the batch-4 kernels and three samples one at a time
    assert "batched variants" in info and info.split("batched variants")[1].split("\n")[0].endswith(": 4 8"), info
    for b in (1, 3, 7, 8):
        x = np.random.RandomState(b).randn(b, 3, 12, 12).astype(np.float32)
        np.save(str(tmp_path / "x.npy"), x)
        kiln("run", so, "--inputs", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npz"))
        out = np.load(str(tmp_path / "y.npz"))["y"]
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        assert out.shape == (b, 5)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    # a batch alone is the batch as an outer loop: batch-1 kernels (the
    # NCHW[x]c templates) called per sample; the profile shows the run's shapes
    prof = kiln("run", so, "--inputs", str(tmp_path / "x.npy"), "--profile").stdout
    assert "(8, 5)" in prof and "conv2d_NCHWc" in prof, prof
    np.save(str(tmp_path / "big.npy"), np.zeros((17, 3, 12, 12), np.float32))
    p = kiln("run", so, "--inputs", str(tmp_path / "big.npy"), check=False)
    assert p.returncode == 1 and "dimension 0 (N) is 17, outside the bounds [1, 16]" in p.stderr, p.stderr


def test_batch_sizes_errors(cnn, tmp_path):
    _, path = cnn
    so = str(tmp_path / "e.so")
    for shapes, sizes, expect in [
            ("x:[N,3,12,12],N<=16", "8,4", "--batch-sizes '8,4': expected up to 8 increasing batches from 2 to the "
                                           "bound N<=16"),
            ("x:[N,3,12,12],N<=16", "32", "to the bound N<=16"),
            ("x:[N,3,12,12],N<=16", "1", "increasing batches from 2"),
            ("x:[N,3,12,12],N<=16", "4,x", "--batch-sizes '4,x'"),
            ("x:[2,3,12,12]", "4", "--batch-sizes applies to a model whose only symbolic size is a batch")]:
        p = kiln("compile", path, "-o", so, "--input-shapes", shapes, "--batch-sizes", sizes, check=False)
        assert p.returncode != 0 and expect in p.stderr, (shapes, sizes, p.stderr)
        assert not os.path.exists(so)
    # none: the batch-1 kernels alone
    kiln("compile", path, "-o", so, "--input-shapes", "x:[N,3,12,12],N<=16", "--batch-sizes", "none",
         "--quiet-fallback")
    assert "batched variants" not in kiln("inspect", so).stdout


class WideStem(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return torch.flatten(self.pool(torch.relu(self.conv(x))), 1)


def compile_stem(tmp_path, seed, shapes, dynamic):
    """WideStem (its weights from seed) exported at 256x256, the batch a
    dynamic axis where dynamic, and compiled with --input-shapes shapes:
    the net, the .onnx, the .so and kiln inspect's text of it."""
    torch.manual_seed(seed)
    net = WideStem().eval()
    path, so = str(tmp_path / "stem.onnx"), str(tmp_path / "stem.so")
    torch.onnx.export(net, torch.randn(1, 3, 256, 256), path, input_names=["x"], output_names=["y"],
                      opset_version=13, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None)
    kiln("compile", path, "-o", so, "--input-shapes", shapes, "--quiet-fallback")
    return net, path, so, kiln("inspect", so).stdout


def run_vs_torch(net, so, tmp_path, seed):
    """Run so on a random batch of 8 256x256 images against net; the batch."""
    x = np.random.RandomState(seed).randn(8, 3, 256, 256).astype(np.float32)
    np.save(str(tmp_path / "x.npy"), x)
    kiln("run", so, "--inputs", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npz"))
    with torch.no_grad():
        ref = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.load(str(tmp_path / "y.npz"))["y"], ref, rtol=1e-4, atol=1e-5)
    return x


def test_symbolic_batch_no_default_variants_for_small_weights(tmp_path):
    # weights within half the L3 and one sample's activation past
    # the L2 (16 x 256 x 256 floats, 4 MiB): no batched variants unless
    # --batch-sizes names them (graph_default_batches); the samples run
    # through the batch-1 kernels and match PyTorch
    net, path, so, info = compile_stem(tmp_path, 5, "x:[N,3,256,256],N<=8", dynamic=True)
    assert "batch (kernels built at batch 1" in info and "  N in [1, 8]" in info, info
    assert "batched variants" not in info, info
    run_vs_torch(net, so, tmp_path, 8)
    kiln("compile", path, "-o", so, "--input-shapes", "x:[N,3,256,256],N<=8", "--batch-sizes", "4,8",
         "--quiet-fallback")
    assert "batched variants" in kiln("inspect", so).stdout


def test_static_batch_runs_per_sample_for_small_weights(tmp_path):
    # a static batch of 8 where the samples run faster one by one (the rule
    # above): built at batch 1 with the batch a symbol bounded to [8, 8];
    # the module starts at batch 8 (kiln run without inputs), matches
    # PyTorch, and refuses another batch; at 12x12 (activations within the
    # L2) the static batch-8 kernels stay
    net, _, so, info = compile_stem(tmp_path, 6, "x:[8,3,256,256]", dynamic=False)
    assert "batch (kernels built at batch 1" in info and "  batch in [8, 8]" in info, info
    assert "batched variants" not in info, info
    kiln("run", so, "-o", str(tmp_path / "z.npz"))
    assert np.load(str(tmp_path / "z.npz"))["y"].shape == (8, 16)
    x = run_vs_torch(net, so, tmp_path, 9)
    np.save(str(tmp_path / "x3.npy"), x[:3])
    p = kiln("run", so, "--inputs", str(tmp_path / "x3.npy"), check=False)
    assert p.returncode == 1 and "outside the bounds [8, 8]" in p.stderr, p.stderr
    small = str(tmp_path / "small.onnx")
    torch.onnx.export(net, torch.randn(1, 3, 12, 12), small, input_names=["x"], output_names=["y"], opset_version=13)
    kiln("compile", small, "-o", so, "--input-shapes", "x:[8,3,12,12]", "--quiet-fallback")
    assert "batch (kernels built at batch 1" not in kiln("inspect", so).stdout


def test_symbolic_image_size_too_small_at_run_time(tmp_path):
    # a 3x3 convolution without padding over a symbolic height and width:
    # compiled once, it runs at 5x6; a 2x2 image has no valid output, and
    # set_input says so naming the node, instead of running
    path, so = str(tmp_path / "conv.onnx"), str(tmp_path / "conv.so")
    w = np.random.RandomState(4).randn(2, 1, 3, 3).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="c3", kernel_shape=[3, 3])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("w", TensorProto.FLOAT, [2, 1, 3, 3], w.ravel())])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    kiln("compile", path, "-o", so, "--input-shapes", "x:[1,1,H,W]", "--quiet-fallback")
    x = np.random.RandomState(5).randn(1, 1, 5, 6).astype(np.float32)
    np.save(str(tmp_path / "x.npy"), x)
    kiln("run", so, "--inputs", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npz"))
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    np.testing.assert_allclose(np.load(str(tmp_path / "y.npz"))["y"], ref, rtol=1e-4, atol=1e-5)
    np.save(str(tmp_path / "small.npy"), np.zeros((1, 1, 2, 2), np.float32))
    p = kiln("run", so, "--inputs", str(tmp_path / "small.npy"), check=False)
    assert p.returncode == 1 and "at H=2, W=2, node" in p.stderr and "too small for the model" in p.stderr, p.stderr
