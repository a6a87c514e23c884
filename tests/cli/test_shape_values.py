"""Symbolic shape values (docs/symbolic_shapes.md, "Shape values"): Shape
and Size of a tensor with symbolic dimensions fold at import into
expressions over the size symbols, through each op exporters use on
shapes (Gather, Slice, Concat, Unsqueeze/Squeeze, Cast, Add/Sub/Mul/Div,
Equal/Where), so a Reshape or Expand to such a value keeps its symbolic
dimensions.  One small model per op, checked by the result type `kiln
show` prints; what cannot be followed is a one-line error naming the node.
A compiled case runs at two sizes against NumPy.

The models are built with onnx's helper; run with /usr/bin/python3."""
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

from e2e_common import kiln

I64 = TP.INT64


def c(name, vals, dims=None):
    """An int64 initializer (a scalar when dims is ())."""
    vals = list(vals) if isinstance(vals, (list, tuple)) else [vals]
    return helper.make_tensor(name, I64, [len(vals)] if dims is None else dims, vals)


def N(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def shape_nodes():
    """s = Shape(x); g0, g1, g2 = its elements (scalars); u0.. as [1]."""
    nodes = [N("Shape", ["x"], ["s"])]
    for i in range(3):
        nodes.append(N("Gather", ["s", f"i{i}"], [f"g{i}"], axis=0))
        nodes.append(N("Unsqueeze", [f"g{i}", "ax0"], [f"u{i}"]))
    return nodes


BASE_INITS = [c(f"i{i}", i, ()) for i in range(3)] + [c("ax0", [0]), c("m1", [-1]), c("one", 1, ()),
                                                      c("four", [4]), c("six", 6, ())]


def model(tmp_path, nodes, inits=(), x_dims=("N", 6, 4), op="Reshape", name="m"):
    """x -> [shape arithmetic producing 't'] -> op(x, t) -> y."""
    nodes = shape_nodes() + list(nodes) + [N(op, ["x", "t"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, list(x_dims))],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], BASE_INITS + list(inits))
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def result_type(path, shapes):
    out = kiln("show", path, "--input-shapes", shapes).stdout
    types = re.findall(r"ty=Tensor\[\((.*?)\), float32\]", out)
    assert types, out
    return types[-1].replace(" ", "")


CASES = {
    # name: (nodes computing t, extra initializers, expected result dims)
    "gather_unsqueeze_concat": ([N("Concat", ["u0", "m1"], ["t"], axis=0)], [], "N,24"),
    "slice": ([N("Slice", ["s", "st", "en"], ["sl"]), N("Concat", ["sl", "m1"], ["t"], axis=0)],
              [c("st", [0]), c("en", [1])], "N,24"),
    "slice_negative_step": ([N("Slice", ["s", "st", "en", "ax0", "stp"], ["sl"]),
                             N("Concat", ["sl", "six1"], ["t"], axis=0)],
                            [c("st", [-1]), c("en", [-4]), c("stp", [-2]), c("six1", [6])], "4,N,6"),
    "mul": ([N("Mul", ["g0", "six"], ["p"]), N("Unsqueeze", ["p", "ax0"], ["up"]),
             N("Concat", ["up", "four"], ["t"], axis=0)], [], "(N*6),4"),
    "add_sub": ([N("Add", ["g0", "one"], ["a"]), N("Sub", ["a", "one"], ["b"]), N("Mul", ["b", "g1"], ["p"]),
                 N("Unsqueeze", ["p", "ax0"], ["up"]), N("Concat", ["up", "four"], ["t"], axis=0)], [], "(N*6),4"),
    "div": ([N("Mul", ["g0", "g1"], ["p"]), N("Mul", ["p", "g2"], ["q"]), N("Div", ["q", "two"], ["d"]),
             N("Unsqueeze", ["d", "ax0"], ["ud"]), N("Concat", ["ud", "two1"], ["t"], axis=0)],
            [c("two", 2, ()), c("two1", [2])], "(N*12),2"),
    "cast": ([N("Cast", ["u0"], ["k"], to=TP.INT32), N("Cast", ["k"], ["k2"], to=TP.INT64),
              N("Concat", ["k2", "m1"], ["t"], axis=0)], [], "N,24"),
    "squeeze": ([N("Squeeze", ["u0", "ax0"], ["q"]), N("Unsqueeze", ["q", "ax0"], ["uq"]),
                 N("Concat", ["uq", "m1"], ["t"], axis=0)], [], "N,24"),
    "equal_where": ([N("Concat", ["u0", "tw"], ["t0"], axis=0), N("Equal", ["t0", "m1"], ["e"]),
                     N("Where", ["e", "one", "t0"], ["t"])], [c("tw", [24])], "N,24"),
    "mul_cancels": ([N("Mul", ["g0", "g1"], ["p"]), N("Mul", ["p", "g2"], ["q"]), N("Div", ["q", "eight"], ["d"]),
                     N("Unsqueeze", ["d", "ax0"], ["ud"]), N("Concat", ["ud", "eight1"], ["t"], axis=0)],
                    [c("eight", 8, ()), c("eight1", [8])], "(N*3),8"),
    "size": ([N("Size", ["x"], ["n"]), N("Div", ["n", "four_s"], ["d"]), N("Unsqueeze", ["d", "ax0"], ["ud"]),
              N("Concat", ["ud", "four"], ["t"], axis=0)], [c("four_s", 4, ())], "(N*6),4"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fold_over_symbols(tmp_path, case):
    nodes, inits, want = CASES[case]
    path = model(tmp_path, nodes, inits)
    assert result_type(path, "x:[N,6,4],N<=64") == want


def test_expand_to_shape_value(tmp_path):
    """Expand of a [1, 6, 4] bias to Shape(x) of x [N, 6, 4] fails (the
    size-1 dimension would become N); Expand of x to its own shape keeps N."""
    path = model(tmp_path, [N("Identity", ["s"], ["t"])], op="Expand")
    assert result_type(path, "x:[N,6,4]") == "N,6,4"
    nodes = [N("Shape", ["x"], ["s"]), N("Expand", ["b", "s"], ["e"]), N("Add", ["x", "e"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 6, 4])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          [helper.make_tensor("b", TP.FLOAT, [1, 6, 4], [0.5] * 24)])
    p2 = str(tmp_path / "bias.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), p2)
    p = kiln("show", p2, "--input-shapes", "x:[N,6,4]", check=False)
    assert p.returncode == 1
    assert "Expand node" in p.stderr and "entry 0 is N" in p.stderr


def test_compiled_once_runs_at_two_sizes(tmp_path):
    """The Size/Div/Concat case compiled once, run at N = 3 and 5."""
    nodes, inits, _ = CASES["size"]
    path = model(tmp_path, nodes, inits)
    so = str(tmp_path / "m.so")
    kiln("compile", path, "-o", so, "--input-shapes", "x:[N,6,4],N<=8", "--quiet-fallback")
    for n in (3, 5):
        x = np.random.RandomState(n).randn(n, 6, 4).astype(np.float32)
        np.savez(str(tmp_path / "in.npz"), x=x)
        kiln("run", so, "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"))
        y = np.load(str(tmp_path / "out.npz"))["y"]
        assert y.shape == (n * 6, 4)
        np.testing.assert_array_equal(y, x.reshape(n * 6, 4))


def check_error(path, shapes, *needles):
    p = kiln("show", path, "--input-shapes", shapes, check=False)
    assert p.returncode == 1, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], f"expected {n!r} in: {lines[0]}"


def test_op_without_fold_rule_names_node_and_value(tmp_path):
    """Max on a shape value is not followed: the Reshape that needs it says
    which input, from which Shape node, through which op."""
    path = model(tmp_path, [N("Max", ["u0", "four"], ["mx"], name="clamp"),
                            N("Concat", ["mx", "m1"], ["t"], axis=0)])
    check_error(path, "x:[N,6,4]", "Reshape node", "input 1 ('t')", "Shape node", "cannot follow it through",
                "'clamp'", "--input-shapes")


def test_shape_value_as_data_refused(tmp_path):
    """A shape value cast to float and added to the data would be baked in
    at one size: refused, naming the Shape node."""
    nodes = [N("Shape", ["x"], ["s"], name="shp"), N("Cast", ["s"], ["f"], to=TP.FLOAT), N("Add", ["x", "f"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    path = str(tmp_path / "data.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    check_error(path, "x:[N,2]", "Add node", "Shape node 'shp'", "used as data", "--input-shapes")


def test_shape_value_as_output_refused(tmp_path):
    """Shape of a symbolic input as a model output would hold the sizes Kiln
    compiled with, not the run's: refused, naming the output and the Shape
    node; with every size given it compiles and gives the real shape."""
    nodes = [N("Shape", ["x"], ["s"], name="shp"), N("Relu", ["x"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("s", I64, [2]), helper.make_tensor_value_info("y", TP.FLOAT, None)])
    path = str(tmp_path / "shape_out.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    check_error(path, "x:[N,3]", "graph output 's'", "Shape node 'shp'", "not supported", "--input-shapes")
    so = str(tmp_path / "s.so")
    kiln("compile", path, "-o", so, "--input-shapes", "x:[5,3]")
    out = kiln("run", so).stdout
    assert re.search(r"output 0 \(s\): \[2\] int", out), out


def test_two_symbolic_entries(tmp_path):
    """[N*6, W] from x [N, 6, W]: two target entries computed from the
    symbols, neither the input's dimension at its position (reshape's
    codes infer one): the reshape keeps both expressions, and one build
    runs at two sizes of each symbol."""
    path = model(tmp_path, [N("Mul", ["g0", "g1"], ["p"]), N("Unsqueeze", ["p", "ax0"], ["up"]),
                            N("Concat", ["up", "u2"], ["t"], axis=0)], x_dims=("N", 6, "W"))
    assert result_type(path, "x:[N,6,W]") == "(N*6),W"
    so = str(tmp_path / "two.so")
    kiln("compile", path, "-o", so, "--input-shapes", "x:[N,6,W],N<=8,W<=8", "--quiet-fallback")
    for n, w in ((2, 3), (5, 8), (1, 1)):
        x = np.random.RandomState(n).randn(n, 6, w).astype(np.float32)
        np.savez(str(tmp_path / "in.npz"), x=x)
        kiln("run", so, "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"))
        np.testing.assert_array_equal(np.load(str(tmp_path / "out.npz"))["y"], x.reshape(n * 6, w))
    # the same model with W given as a number takes one inferred entry
    assert result_type(path, "x:[N,6,5]") == "(N*6),5"


def test_static_shapes_fold_as_before(tmp_path):
    """With numbers only there are no symbols and the Shape arithmetic is
    folded to constants, as before."""
    nodes, inits, _ = CASES["div"]
    path = model(tmp_path, nodes, inits)
    assert result_type(path, "x:[3,6,4]") == "36,2"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """torch.nn.TransformerEncoder (d_model 64, 4 heads, 2 layers,
    batch_first) with seeded weights, exported with an open sequence length:
    its attention reshapes compute their targets from Shape."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(20)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    net = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    path = str(tmp_path_factory.mktemp("enc") / "encoder.onnx")
    torch.onnx.export(net, torch.randn(1, 16, 64), path, input_names=["src"], output_names=["out"],
                      dynamic_axes={"src": {1: "S"}, "out": {1: "S"}}, opset_version=13)
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"Shape", "Gather", "Concat", "Unsqueeze", "Reshape"} <= ops, ops
    return torch, net, path


def run_encoder(tmp_path, so, torch, net, s, b=1):
    x = np.random.RandomState(s).randn(b, s, 64).astype(np.float32)
    np.savez(str(tmp_path / "in.npz"), src=x)
    kiln("run", so, "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"))
    y = np.load(str(tmp_path / "out.npz"))["out"]
    with torch.no_grad():
        ref = net(torch.from_numpy(x)).numpy()
    assert y.shape == (b, s, 64)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_transformer_encoder_batch_and_sequence_length(encoder, tmp_path):
    """The encoder exported with an open batch and sequence length, both
    symbolic: the attention's (S*B, 64) -> [S, B, 64] reshape has two
    target entries computed from the symbols (reshape keeps both
    expressions).  Compiled once, run at (B, S) = (1, 7), (3, 64), (8, 128)
    and (2, 1); B = 9 is outside the bound."""
    torch, net, _ = encoder
    path = str(tmp_path / "encoder_bs.onnx")
    torch.onnx.export(net, torch.randn(2, 16, 64), path, input_names=["src"], output_names=["out"],
                      dynamic_axes={"src": {0: "B", 1: "S"}, "out": {0: "B", 1: "S"}}, opset_version=13)
    out = kiln("show", path, "--input-shapes", "src:[B,S,64]").stdout
    assert "Tensor[(S, B, 64)" in out, out
    so = str(tmp_path / "enc_bs.so")
    kiln("compile", path, "-o", so, "--input-shapes", "src:[B,S,64],B<=8,S<=128", "--quiet-fallback")
    for b, s in ((1, 7), (3, 64), (8, 128), (2, 1)):
        run_encoder(tmp_path, so, torch, net, s, b)
    np.savez(str(tmp_path / "big.npz"), src=np.zeros((9, 4, 64), np.float32))
    p = kiln("run", so, "--inputs", str(tmp_path / "big.npz"), check=False)
    assert p.returncode != 0 and "dimension 0 (B) is 9" in p.stderr and "B<=9" in p.stderr, p.stderr


def test_transformer_encoder_any_sequence_length(encoder, tmp_path):
    """Compiled once with S symbolic (S<=128), run at S = 7, 64 and 128."""
    torch, net, path = encoder
    so = str(tmp_path / "enc.so")
    kiln("compile", path, "-o", so, "--input-shapes", "src:[1,S,64],S<=128", "--quiet-fallback")
    for s in (7, 64, 128):
        run_encoder(tmp_path, so, torch, net, s)
    p = kiln("run", so, "--inputs", str(tmp_path / "in.npz"), check=False)
    assert p.returncode == 0
    np.savez(str(tmp_path / "big.npz"), src=np.zeros((1, 129, 64), np.float32))
    p = kiln("run", so, "--inputs", str(tmp_path / "big.npz"), check=False)
    assert p.returncode != 0 and "S<=129" in p.stderr, p.stderr


def test_transformer_encoder_static_as_before(encoder, tmp_path):
    """Given as a number the sequence length makes no symbol: the shape
    arithmetic folds to constants and the build is static."""
    torch, net, path = encoder
    out = kiln("show", path, "--input-shapes", "src:[1,16,64]").stdout
    assert "S" not in re.findall(r"ty=Tensor\[\((.*?)\)", out)[-1]
    so = str(tmp_path / "enc16.so")
    kiln("compile", path, "-o", so, "--input-shapes", "src:[1,16,64]", "--quiet-fallback")
    run_encoder(tmp_path, so, torch, net, 16)


def test_constant_of_shape_of_a_shape_value_refused(tmp_path):
    """ConstantOfShape has no tensor to carry a symbolic size: refused,
    naming the input and the Shape node it comes from."""
    nodes = [N("Shape", ["x"], ["s"], name="shp"), N("ConstantOfShape", ["s"], ["z"], name="zeros"),
             N("Add", ["x", "z"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    path = str(tmp_path / "cos.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    check_error(path, "x:[N,2]", "ConstantOfShape node 'zeros'", "input 0 ('s') is a shape value [N, c]",
                "Shape node 'shp'", "must be known at compile time")
    assert result_type(path, "x:[3,2]") == "3,2"
