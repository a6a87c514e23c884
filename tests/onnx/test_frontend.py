"""ONNX frontend checks beside the conformance run: `kiln compile --bind`
(an input that decides a shape made a constant), the errors that name the
graph inputs to bind, clear "not supported" errors for data types and
operators Kiln does not handle, and a few lowered operators (TopK, Einsum,
ScatterND, CumSum) on models built here with random data, against NumPy,
and bidirectional LSTM/GRU exported from PyTorch, against PyTorch.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))
RNG = np.random.default_rng(7)


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV)


def save_model(tmp_path, nodes, inputs, outputs, opset=13, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    return p


def save_pb(tmp_path, name, arr):
    p = str(tmp_path / f"{name}.pb")
    with open(p, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())
    return p


def compile_run(tmp_path, model, inputs, extra=()):
    so = str(tmp_path / "m.so")
    p = kiln("compile", model, "-o", so, *extra)
    assert p.returncode == 0, p.stderr
    args = ["run", so, "-o", str(tmp_path / "out.npz")]
    for name, arr in inputs:
        args += ["--inputs", save_pb(tmp_path, name, arr)]
    p = kiln(*args)
    assert p.returncode == 0, p.stderr
    with np.load(str(tmp_path / "out.npz")) as z:
        return [z[k] for k in z.files]  # in output order, by the model's output names


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def test_bind_makes_a_shape_input_constant(tmp_path):
    # a shape computed from a graph input (not the input itself, which is a
    # run-time shape value: tests/cli/test_runtime_values.py) is needed at
    # compile time
    zero = numpy_helper.from_array(np.zeros(2, np.int64), "zero")
    model = save_model(tmp_path, [helper.make_node("Add", ["shape", "zero"], ["s2"]),
                                  helper.make_node("Reshape", ["x", "s2"], ["y"])],
                       [vi("x", TensorProto.FLOAT, [2, 6]), vi("shape", TensorProto.INT64, [2])],
                       [vi("y", TensorProto.FLOAT, None)], inits=[zero])
    p = kiln("compile", model, "-o", str(tmp_path / "m.so"))
    assert p.returncode != 0
    assert "must be known at compile time" in p.stderr and "graph input(s) 'shape'" in p.stderr
    assert "--bind" in p.stderr
    shape = np.array([3, 4], dtype=np.int64)
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    (y,) = compile_run(tmp_path, model, [("x", x)], ["--bind", f"shape={save_pb(tmp_path, 'shape', shape)}"])
    np.testing.assert_array_equal(y, x.reshape(3, 4))


def test_bind_errors(tmp_path):
    model = save_model(tmp_path, [helper.make_node("Reshape", ["x", "shape"], ["y"])],
                       [vi("x", TensorProto.FLOAT, [2, 6]), vi("shape", TensorProto.INT64, [2])],
                       [vi("y", TensorProto.FLOAT, None)])
    good = save_pb(tmp_path, "shape", np.array([3, 4], dtype=np.int64))
    p = kiln("compile", model, "--bind", f"nosuch={good}")
    assert p.returncode != 0 and "'nosuch', which is not an input" in p.stderr
    p = kiln("compile", model, "--bind", f"shape={save_pb(tmp_path, 'f', np.zeros(2, np.float32))}")
    assert p.returncode != 0 and "is int64 in the model" in p.stderr
    p = kiln("compile", model, "--bind", "shape")
    assert p.returncode != 0 and "expected NAME=FILE" in p.stderr


@pytest.mark.parametrize("dtype,op,what", [
    (17, "Relu", "input 0 ('x') is FLOAT8E4M3FN, which Kiln supports only as storage"),
    (TensorProto.STRING, "Relu", "input 0 ('x') is a string tensor: Kiln's string operators are")])
def test_unsupported_dtypes_are_clear_errors(tmp_path, dtype, op, what):
    """float8 is storage with conversions (tests/onnx/test_lowp.py):
    arithmetic on it is refused; strings only by the string operators
    (tests/onnx/test_strings.py)."""
    model = save_model(tmp_path, [helper.make_node(op, ["x"], ["y"])], [vi("x", dtype, [2])],
                       [vi("y", dtype, [2])])
    p = kiln("compile", model, "-o", str(tmp_path / "m.so"))
    assert p.returncode != 0 and what in p.stderr


def test_unsupported_op_names_op_node_and_opset(tmp_path):
    model = save_model(tmp_path, [helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], name="coin", pooled_shape=[1, 1])],
                       [vi("x", TensorProto.FLOAT, [1, 1, 2, 2]), vi("rois", TensorProto.FLOAT, [1, 5])],
                       [vi("y", TensorProto.FLOAT, None)], opset=15)
    p = kiln("compile", model, "-o", str(tmp_path / "m.so"))
    assert p.returncode != 0
    assert "unsupported ONNX operator 'MaxRoiPool' (node 'coin', opset 15)" in p.stderr


def test_topk_ties_and_axis(tmp_path):
    x = RNG.integers(0, 4, (3, 7, 2)).astype(np.float32)  # many ties
    k = np.array([4], dtype=np.int64)
    model = save_model(tmp_path, [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)],
                       [vi("x", TensorProto.FLOAT, [3, 7, 2])],
                       [vi("v", TensorProto.FLOAT, None), vi("i", TensorProto.INT64, None)],
                       inits=[numpy_helper.from_array(k, "k")])
    v, i = compile_run(tmp_path, model, [("x", x)])
    ref_i = np.argsort(-x, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(v, np.take_along_axis(x, ref_i, axis=1))


def topk_reference(x, k, axis, largest):
    """ONNX TopK: the k largest (smallest) along axis, ties to the lower index."""
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    i = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, i, axis=axis), i


@pytest.mark.parametrize("shape,axis,k,largest,dtype", [
    ((5, 40), 1, 7, 1, np.float32),
    ((33, 4), 0, 33, 0, np.float32),   # k = n: a full stable sort
    ((2, 300, 3), 1, 300, 1, np.float32),  # n x n past the import fold limit
    ((6, 50), -1, 10, 0, np.int32),
])
def test_topk_random_ties(tmp_path, shape, axis, k, largest, dtype):
    # few distinct values, so most elements tie with others
    x = RNG.integers(-3, 4, shape).astype(dtype)
    if dtype == np.float32:
        x[RNG.random(shape) < 0.3] = np.float32(RNG.standard_normal())  # one more tied value
    tp = TensorProto.FLOAT if dtype == np.float32 else TensorProto.INT32
    model = save_model(tmp_path, [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)],
                       [vi("x", tp, list(shape))], [vi("v", tp, None), vi("i", TensorProto.INT64, None)],
                       inits=[numpy_helper.from_array(np.array([k], dtype=np.int64), "k")])
    v, i = compile_run(tmp_path, model, [("x", x)])
    ref_v, ref_i = topk_reference(x, k, axis, largest)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(v, ref_v)


def test_topk_large_n(tmp_path):
    """n = 30000: the ranking used to build an n x n mask constant (900 MB
    here); now every value between the kernels is linear in n."""
    n, k = 30000, 5
    x = RNG.standard_normal((2, n)).astype(np.float32)
    x[:, 100:110] = x.max() + 1  # ties at the top
    model = save_model(tmp_path, [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)],
                       [vi("x", TensorProto.FLOAT, [2, n])],
                       [vi("v", TensorProto.FLOAT, None), vi("i", TensorProto.INT64, None)],
                       inits=[numpy_helper.from_array(np.array([k], dtype=np.int64), "k")])
    emit = tmp_path / "src"
    v, i = compile_run(tmp_path, model, [("x", x)], extra=("--emit-dir", str(emit)))
    ref_v, ref_i = topk_reference(x, k, 1, True)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(v, ref_v)
    import json
    with open(emit / "graph.json") as f:
        shapes = json.load(f)["attrs"]["shape"][1]
    assert max(int(np.prod(s)) for s in shapes) <= 4 * n, shapes


def test_constant_broadcast_below_the_keep_bound_is_folded(tmp_path):
    """A comparison of two constant index vectors (n x n = 262,144 elements,
    a Swin-style mask) reduced to n values folds to one n-element constant:
    only n x n broadcasts past graph_fold_keeps' bound (16M elements, TopK
    at n = 30,000) are computed at run time instead of stored."""
    n = 512
    row = numpy_helper.from_array(np.arange(n, dtype=np.int64).reshape(1, n), "row")
    col = numpy_helper.from_array(np.arange(n, dtype=np.int64).reshape(n, 1), "col")
    nodes = [helper.make_node("Greater", ["row", "col"], ["gt"]),
             helper.make_node("Cast", ["gt"], ["gtf"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["gtf", "ax"], ["cnt"], keepdims=0),
             helper.make_node("Add", ["x", "cnt"], ["y"])]
    ax = numpy_helper.from_array(np.array([1], dtype=np.int64), "ax")
    model = save_model(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [n])], [vi("y", TensorProto.FLOAT, [n])],
                       inits=[row, col, ax])
    x = RNG.standard_normal(n).astype(np.float32)
    emit = tmp_path / "src"
    (y,) = compile_run(tmp_path, model, [("x", x)], extra=("--emit-dir", str(emit)))
    np.testing.assert_allclose(y, x + (n - 1 - np.arange(n)).astype(np.float32), rtol=1e-6)
    import json
    with open(emit / "graph.json") as f:
        g = json.load(f)
    kernels = [nd["name"] for nd in g["nodes"] if nd["op"] == "tvm_op"]
    assert kernels == ["fused_add"], kernels  # the comparison and its sum were folded


@pytest.mark.parametrize("eq,shapes", [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                                       ("ii->i", [(4, 4)]),
                                       ("...ij,...jk", [(2, 3, 4), (4, 2)]),
                                       ("i,i", [(5,), (5,)])])
def test_einsum(tmp_path, eq, shapes):
    arrs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    names = [f"x{i}" for i in range(len(arrs))]
    model = save_model(tmp_path, [helper.make_node("Einsum", names, ["y"], equation=eq)],
                       [vi(n, TensorProto.FLOAT, list(a.shape)) for n, a in zip(names, arrs)],
                       [vi("y", TensorProto.FLOAT, None)], opset=12)
    (y,) = compile_run(tmp_path, model, list(zip(names, arrs)))
    np.testing.assert_allclose(y, np.einsum(eq, *arrs), rtol=1e-5, atol=1e-5)


def test_scatternd_and_cumsum(tmp_path):
    data = RNG.standard_normal((4, 3)).astype(np.float32)
    idx = np.array([[2], [0]], dtype=np.int64)
    upd = RNG.standard_normal((2, 3)).astype(np.float32)
    axis = np.array(0, dtype=np.int64)
    model = save_model(tmp_path, [helper.make_node("ScatterND", ["d", "i", "u"], ["s"]),
                                  helper.make_node("CumSum", ["s", "a"], ["y"], exclusive=1, reverse=1)],
                       [vi("d", TensorProto.FLOAT, [4, 3]), vi("u", TensorProto.FLOAT, [2, 3])],
                       [vi("y", TensorProto.FLOAT, None)],
                       inits=[numpy_helper.from_array(idx, "i"), numpy_helper.from_array(axis, "a")])
    (y,) = compile_run(tmp_path, model, [("d", data), ("u", upd)])
    s = data.copy()
    s[2], s[0] = upd[0], upd[1]
    ref = np.flip(np.cumsum(np.flip(s, 0), 0), 0) - s
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_bidirectional_rnn_from_pytorch(tmp_path, cell):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = getattr(torch.nn, cell)(input_size=5, hidden_size=4, num_layers=2, bidirectional=True, batch_first=True)
    net.eval()
    x = torch.randn(3, 6, 5)
    with torch.no_grad():
        ref, _ = net(x)
    model = str(tmp_path / "rnn.onnx")
    torch.onnx.export(net, (x,), model, input_names=["x"], output_names=["y"], opset_version=13)
    out = compile_run(tmp_path, model, [("x", x.numpy())])
    np.testing.assert_allclose(out[0], ref.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,pad,align", [(m, p, a) for m in ("nearest", "bilinear", "bicubic")
                                            for p, a in (("zeros", 0), ("border", 1), ("reflection", 0))])
def test_gridsample_vs_pytorch(tmp_path, mode, pad, align):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)
    model = save_model(tmp_path, [helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=pad,
                                                   align_corners=align)],
                       [vi("x", TensorProto.FLOAT, [2, 3, 5, 6]), vi("g", TensorProto.FLOAT, [2, 4, 7, 2])],
                       [vi("y", TensorProto.FLOAT, None)], opset=16)
    (y,) = compile_run(tmp_path, model, [("x", x), ("g", grid)])
    ref = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode=mode, padding_mode=pad,
                                          align_corners=bool(align)).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("k,s,p,d,ceil", [(3, 2, 1, 1, 0), (2, 2, 0, 1, 1), (3, 1, 1, 2, 0)])
def test_maxpool_indices_vs_pytorch(tmp_path, k, s, p, d, ceil):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)
    model = save_model(tmp_path, [helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[k, k], strides=[s, s],
                                                   pads=[p] * 4, dilations=[d, d], ceil_mode=ceil)],
                       [vi("x", TensorProto.FLOAT, [2, 3, 7, 8])],
                       [vi("y", TensorProto.FLOAT, None), vi("i", TensorProto.INT64, None)], opset=12)
    y, i = compile_run(tmp_path, model, [("x", x)])
    ry, ri = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, p, d, ceil_mode=bool(ceil), return_indices=True)
    np.testing.assert_array_equal(y, ry.numpy())
    plane = (np.arange(2 * 3) * 7 * 8).reshape(2, 3, 1, 1)
    np.testing.assert_array_equal(i, ri.numpy() + plane)


@pytest.mark.parametrize("n", [1, 3, 4])
def test_det(tmp_path, n):
    x = RNG.standard_normal((2, n, n)).astype(np.float32)
    model = save_model(tmp_path, [helper.make_node("Det", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, [2, n, n])],
                       [vi("y", TensorProto.FLOAT, None)])
    (y,) = compile_run(tmp_path, model, [("x", x)])
    np.testing.assert_allclose(y, np.linalg.det(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_resize_tf_crop_and_resize(tmp_path, mode):
    from onnx.backend.test.case.node.resize import interpolate_nd, linear_coeffs, nearest_coeffs
    x = RNG.standard_normal((1, 2, 6, 5)).astype(np.float32)
    roi = np.array([0, 0, -0.13, 0.3, 1, 1, 0.87, 1.3], dtype=np.float32)  # partly outside; no rounding ties
    sizes = np.array([1, 2, 4, 7], dtype=np.int64)
    model = save_model(tmp_path, [helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode=mode,
                                                   coordinate_transformation_mode="tf_crop_and_resize",
                                                   extrapolation_value=-5.0)],
                       [vi("x", TensorProto.FLOAT, [1, 2, 6, 5])], [vi("y", TensorProto.FLOAT, None)],
                       inits=[numpy_helper.from_array(roi, "roi"), numpy_helper.from_array(sizes, "sizes")])
    (y,) = compile_run(tmp_path, model, [("x", x)])
    coeffs = linear_coeffs if mode == "linear" else (lambda r: nearest_coeffs(r, mode="round_prefer_floor"))
    ref = interpolate_nd(x, coeffs, output_size=sizes, roi=roi, coordinate_transformation_mode="tf_crop_and_resize",
                         extrapolation_value=-5.0).astype(np.float32)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride,pad,dil,opad,groups", [(1, 0, 1, 0, 1), (2, 1, 1, 1, 2), (3, 2, 2, 0, 1)])
def test_conv_transpose_3d_vs_pytorch(tmp_path, stride, pad, dil, opad, groups):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 4, 3, 4, 5)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 2, 3)).astype(np.float32)
    b = RNG.standard_normal((3 * groups,)).astype(np.float32)
    model = save_model(tmp_path, [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[stride] * 3,
                                                   pads=[pad] * 6, dilations=[dil] * 3, output_padding=[opad] * 3,
                                                   group=groups)],
                       [vi("x", TensorProto.FLOAT, list(x.shape))], [vi("y", TensorProto.FLOAT, None)],
                       inits=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    (y,) = compile_run(tmp_path, model, [("x", x)])
    ref = torch.nn.functional.conv_transpose3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, pad, opad,
                                               groups, dil).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_optional_ops_on_plain_tensors(tmp_path):
    """OptionalHasElement/OptionalGetElement (opset 18) on a tensor, which
    is always present, and on no input (an empty optional); getting the
    element of an optional input compiled empty is an error naming it."""
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("OptionalHasElement", ["x"], ["has"]), helper.make_node("OptionalHasElement", [""], ["none"]),
             helper.make_node("OptionalHasElement", [], ["none2"]), helper.make_node("OptionalGetElement", ["x"], ["y0"]),
             helper.make_node("Relu", ["y0"], ["y"])]
    model = save_model(tmp_path, nodes, [vi("x", TensorProto.FLOAT, [3, 4])],
                       [vi("has", TensorProto.BOOL, []), vi("none", TensorProto.BOOL, []), vi("none2", TensorProto.BOOL, []),
                        vi("y", TensorProto.FLOAT, [3, 4])], opset=18)
    has, none, none2, y = compile_run(tmp_path, model, [("x", x)])
    assert has.dtype == np.bool_ and has.shape == () and bool(has) and not bool(none) and not bool(none2)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))
    model = save_model(tmp_path, [helper.make_node("OptionalGetElement", ["o"], ["z"])], [opt],
                       [vi("z", TensorProto.FLOAT, [2])], opset=18)
    p = kiln("compile", model, "-o", str(tmp_path / "m2.so"), "--input-shapes", "o:none")
    assert p.returncode != 0 and "the optional 'o' is empty" in p.stderr


def test_outputs_that_are_inputs_or_constants_keep_the_models_names(tmp_path):
    """An output that is a graph input passed through (Identity) or a constant
    (folded at compile time) is saved under the model's output name, not the
    input's name or the parameter's p<i>."""
    c = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "c")
    m = save_model(tmp_path, [helper.make_node("Identity", ["x"], ["passed"]),
                              helper.make_node("Neg", ["c"], ["folded"]),
                              helper.make_node("Relu", ["x"], ["computed"])],
                   [vi("x", TensorProto.FLOAT, [4])],
                   [vi("passed", TensorProto.FLOAT, [4]), vi("folded", TensorProto.FLOAT, [2, 3]),
                    vi("computed", TensorProto.FLOAT, [4])], inits=[c])
    x = np.random.default_rng().standard_normal(4).astype(np.float32)
    compile_run(tmp_path, m, [("x", x)])
    with np.load(str(tmp_path / "out.npz")) as z:
        assert z.files == ["passed", "folded", "computed"], z.files
        np.testing.assert_array_equal(z["passed"], x)
        np.testing.assert_array_equal(z["folded"], -np.arange(6, dtype=np.float32).reshape(2, 3))
        np.testing.assert_array_equal(z["computed"], np.maximum(x, 0))
