"""Run-time shape values (docs/symbolic_shapes.md, "Run-time shape
values"): a graph input that decides a shape (a Reshape's shape, an
Expand's or ConstantOfShape's shape, a Tile's repeats, a Reduce's axes)
stays an input; a size of 0 gives an empty tensor.  Each model is compiled once, without --bind, and run by
`kiln run` at several values against NumPy; a value the model cannot take
is an error naming the node and the value.

The models are built with onnx's helper; run with /usr/bin/python3."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from e2e_common import kiln
from onnx_build import build, i64, run

RNG = np.random.default_rng(20)


def test_reshape_to_a_shape_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("Reshape", ["x", "s"], ["y"]),
               [("x", TP.FLOAT, [2, 3, 4]), ("s", TP.INT64, [3])])
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    # plain sizes, -1 (the rest) and 0 (x's dimension) all from one build
    for s, want in [((4, 3, 2), (4, 3, 2)), ((2, -1, 3), (2, 4, 3)), ((0, 12, 1), (2, 12, 1)), ((24, 1, 1), (24, 1, 1))]:
        y = run(tmp_path, so, [x, i64(*s)])
        assert y.shape == want
        np.testing.assert_array_equal(y, x.reshape(want))
    # a shape that does not keep the 24 elements names the node
    p = run(tmp_path, so, [x, i64(5, 5, 1)], check=False)
    assert p.returncode != 0
    assert "node 'fused_reshape' would have dimension 0 = -1" in p.stderr
    assert "do not fit it (a Reshape's shape must keep the element count" in p.stderr


def test_constant_of_shape_expand_and_tile(tmp_path):
    cos = build(tmp_path, helper.make_node("ConstantOfShape", ["s"], ["y"],
                                           value=numpy_helper.from_array(np.array([1.5], np.float32))),
                [("s", TP.INT64, [2])], name="cos")
    for s in [(3, 4), (1, 7), (5, 2)]:
        y = run(tmp_path, cos, [i64(*s)])
        np.testing.assert_array_equal(y, np.full(s, 1.5, np.float32))
    # an empty size gives an empty result; a negative one names the node
    for s in [(3, 0), (0, 2), (0, 0), (2, 3)]:
        y = run(tmp_path, cos, [i64(*s)])
        assert y.shape == s
        np.testing.assert_array_equal(y, np.full(s, 1.5, np.float32))
    p = run(tmp_path, cos, [i64(3, -2)], check=False)
    assert p.returncode != 0
    assert "element 1 is -2, which is dimension 1 of node" in p.stderr and "outside the bounds [0, " in p.stderr

    exp = build(tmp_path, helper.make_node("Expand", ["x", "s"], ["y"]),
                [("x", TP.FLOAT, [3, 1]), ("s", TP.INT64, [3])], name="exp")
    x = RNG.standard_normal((3, 1)).astype(np.float32)
    for s in [(2, 1, 6), (1, 3, 2), (4, 3, 1)]:
        np.testing.assert_array_equal(run(tmp_path, exp, [x, i64(*s)]), x * np.ones(s, np.float32))
    p = run(tmp_path, exp, [x, i64(2, 4, 6)], check=False)  # 4 against 3
    assert p.returncode != 0 and "element 1 is 4" in p.stderr and "outside the bounds [1, 3]" in p.stderr

    tile = build(tmp_path, helper.make_node("Tile", ["x", "r"], ["y"]),
                 [("x", TP.FLOAT, [2, 3]), ("r", TP.INT64, [2])], name="tile")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for r in [(1, 1), (3, 2), (2, 5)]:
        np.testing.assert_array_equal(run(tmp_path, tile, [x, i64(*r)]), np.tile(x, r))


def test_empty_sizes_given_at_run_time(tmp_path):
    """A size of 0 makes an empty result (Expand, Tile; ConstantOfShape
    above), and a Reshape of an empty input keeps 0 elements."""
    exp = build(tmp_path, helper.make_node("Expand", ["x", "s"], ["y"]),
                [("x", TP.FLOAT, [3, 1]), ("s", TP.INT64, [2])], name="exp")
    x = RNG.standard_normal((3, 1)).astype(np.float32)
    for s in [(3, 0), (3, 2), (1, 0)]:
        y = run(tmp_path, exp, [x, i64(*s)])
        assert y.shape == np.broadcast_shapes((3, 1), s)
        np.testing.assert_array_equal(y, x * np.ones(s, np.float32))
    tile = build(tmp_path, helper.make_node("Tile", ["x", "r"], ["y"]),
                 [("x", TP.FLOAT, [2, 3]), ("r", TP.INT64, [2])], name="tile")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for r in [(0, 2), (2, 0), (1, 2)]:
        y = run(tmp_path, tile, [x, i64(*r)])
        assert y.shape == np.tile(x, r).shape
        np.testing.assert_array_equal(y, np.tile(x, r))
    for allowzero in [1, 0]:
        rs = build(tmp_path, helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=allowzero),
                   [("x", TP.FLOAT, [0, 3, 4]), ("s", TP.INT64, [3])], name=f"rs{allowzero}")
        x = np.zeros((0, 3, 4), np.float32)
        # with allowzero a 0 is a size; without, it is x's dimension
        cases = [((0, 2, 6), (0, 2, 6)), ((2, -1, 3), (2, 0, 3)), ((0, 3, 4), (0, 3, 4))]
        cases.append(((3, 4, 0), (3, 4, 0)) if allowzero else ((0, 0, 0), (0, 3, 4)))
        for s, want in cases:
            assert run(tmp_path, rs, [x, i64(*s)]).shape == want
        # the element count is still checked (without allowzero the last 0
        # is x's 4); a -1 beside a 0 has no size
        for bad in [(-1, 0, 2)] if allowzero else [(3, 4, 0)]:
            p = run(tmp_path, rs, [x, i64(*bad)], check=False)
            assert p.returncode != 0 and "= -1" in p.stderr, p.stderr


@pytest.mark.parametrize("keepdims", [1, 0])
@pytest.mark.parametrize("op,dt,ident", [("ReduceSum", np.float32, 0), ("ReduceProd", np.float32, 1),
                                         ("ReduceMax", np.float32, -np.inf), ("ReduceMin", np.int32, 2**31 - 1),
                                         ("ReduceMax", np.bool_, False), ("ReduceMin", np.bool_, True)])
def test_reduce_over_an_empty_input(tmp_path, op, dt, ident, keepdims):
    """x (2, 0, 4) has no element: reducing its empty dimension gives the
    reduction's identity, reducing another gives an empty result."""
    tp = {np.float32: TP.FLOAT, np.int32: TP.INT32, np.bool_: TP.BOOL}[dt]
    so = build(tmp_path, helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims),
               [("x", tp, [2, 0, 4]), ("axes", TP.INT64, [1])], opset=20, out=tp)
    x = np.zeros((2, 0, 4), dt)
    for axis in [1, -2, 0, 2]:
        y = run(tmp_path, so, [x, i64(axis)])
        shape = [1 if d == axis % 3 else n for d, n in enumerate(x.shape)] if keepdims else \
            [n for d, n in enumerate(x.shape) if d != axis % 3]
        assert y.shape == tuple(shape) and y.dtype == dt
        np.testing.assert_array_equal(y, np.full(shape, ident, dt))


@pytest.mark.parametrize("keepdims", [1, 0])
@pytest.mark.parametrize("op,ref", [("ReduceSum", np.sum), ("ReduceMax", np.max), ("ReduceMean", np.mean)])
def test_reduce_over_axes_given_at_run_time(tmp_path, op, ref, keepdims):
    so = build(tmp_path, helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims),
               [("x", TP.FLOAT, [3, 4, 5]), ("axes", TP.INT64, [2])])
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    for axes in [(0, 1), (2, 0), (-1, 1), (-3, -2)]:
        y = run(tmp_path, so, [x, i64(*axes)])
        want = ref(x, axis=axes, keepdims=bool(keepdims))
        assert y.shape == want.shape
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    p = run(tmp_path, so, [x, i64(3, 0)], check=False)
    assert p.returncode != 0 and "element 0 is 3" in p.stderr and "outside the bounds [-3, 2]" in p.stderr
    if not keepdims:  # the same axis twice reduces one dimension, not two
        p = run(tmp_path, so, [x, i64(1, 1)], check=False)
        assert p.returncode != 0 and "would have dimension 0 = -1" in p.stderr


@pytest.mark.parametrize("upper", [1, 0])
def test_trilu_k_given_at_run_time(tmp_path, upper):
    """Trilu's k decides no shape: it is data the mask compares with."""
    so = build(tmp_path, helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper),
               [("x", TP.FLOAT, [2, 4, 5]), ("k", TP.INT64, [])], opset=14)
    x = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    for k in [0, 2, -1, 7, -9]:
        want = np.triu(x, k) if upper else np.tril(x, k)
        np.testing.assert_array_equal(run(tmp_path, so, [x, np.array(k, np.int64)]), want)


def test_cumsum_axis_given_at_run_time(tmp_path):
    """CumSum's axis picks the result along each possible axis; its bounds
    [-rank, rank - 1] are checked at set_input."""
    so = build(tmp_path, helper.make_node("CumSum", ["x", "axis"], ["y"]),
               [("x", TP.FLOAT, [3, 4]), ("axis", TP.INT32, [])], opset=14)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for axis in [0, 1, -1, -2]:
        np.testing.assert_allclose(run(tmp_path, so, [x, np.array(axis, np.int32)]), np.cumsum(x, axis=axis),
                                   rtol=1e-5, atol=1e-6)
    p = run(tmp_path, so, [x, np.array(2, np.int32)], check=False)
    assert p.returncode != 0 and "element 0 is 2" in p.stderr and "outside the bounds [-2, 1]" in p.stderr


def test_squeeze_and_unsqueeze_axes_given_at_run_time(tmp_path):
    sq = build(tmp_path, helper.make_node("Squeeze", ["x", "axes"], ["y"]),
               [("x", TP.FLOAT, [1, 3, 1, 4, 1]), ("axes", TP.INT64, [2])], opset=13, name="sq")
    x = RNG.standard_normal((1, 3, 1, 4, 1)).astype(np.float32)
    for axes in [(0, 2), (4, -5), (2, -1)]:
        np.testing.assert_array_equal(run(tmp_path, sq, [x, i64(*axes)]), np.squeeze(x, axis=axes))
    p = run(tmp_path, sq, [x, i64(0, 1)], check=False)  # dimension 1 has size 3
    assert p.returncode != 0 and "would have dimension 0 = -1" in p.stderr
    un = build(tmp_path, helper.make_node("Unsqueeze", ["x", "axes"], ["y"]),
               [("x", TP.FLOAT, [3, 4]), ("axes", TP.INT64, [2])], opset=13, name="un")
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for axes in [(0, 1), (1, 3), (-1, 0), (2, -4)]:
        np.testing.assert_array_equal(run(tmp_path, un, [x, i64(*axes)]), np.expand_dims(x, axis=axes))
    p = run(tmp_path, un, [x, i64(1, 1)], check=False)
    assert p.returncode != 0 and "would have dimension 0 = -1" in p.stderr


@pytest.mark.parametrize("op,a", [("HannWindow", (0.5, 0.5, 0)), ("HammingWindow", (25 / 46, 21 / 46, 0)),
                                  ("BlackmanWindow", (0.42, 0.5, 0.08))])
def test_window_of_a_size_given_at_run_time(tmp_path, op, a):
    """One build per window and periodic flag, run at sizes 0 (empty), 1
    (a symmetric window of one point), 2, 10 and 33."""
    for periodic in [1, 0]:
        so = build(tmp_path, helper.make_node(op, ["n"], ["y"], periodic=periodic), [("n", TP.INT64, [])],
                   opset=17, name=f"{op}{periodic}")
        for n in [10, 0, 1, 2, 33]:
            span = n if periodic else n - 1
            i = np.arange(n) / max(span, 1)
            want = a[0] - a[1] * np.cos(2 * np.pi * i) + a[2] * np.cos(4 * np.pi * i)
            y = run(tmp_path, so, [np.array(n, np.int64)])
            assert y.shape == (n,) and y.dtype == np.float32
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
        p = run(tmp_path, so, [np.array(-1, np.int64)], check=False)
        assert p.returncode != 0 and "element 0 is -1" in p.stderr, p.stderr


def test_dft_axis_given_at_run_time(tmp_path):
    """DFT's axis picks the transform along each possible axis, negative
    ones too; its bounds [-rank, rank - 2] are checked at set_input, and
    -1 (the last axis holds the real and imaginary parts) is refused
    naming the node."""
    so = build(tmp_path, helper.make_node("DFT", ["x", "", "axis"], ["y"]),
               [("x", TP.FLOAT, [2, 4, 4, 2]), ("axis", TP.INT64, [])], opset=20)
    x = RNG.standard_normal((2, 4, 4, 2)).astype(np.float32)
    xc = x[..., 0] + 1j * x[..., 1]
    for axis in [1, 0, 2, -2, -4, -3]:
        y = run(tmp_path, so, [x, np.array(axis, np.int64)])
        want = np.fft.fft(xc, axis=axis % 4)
        np.testing.assert_allclose(y, np.stack([want.real, want.imag], -1), rtol=1e-4, atol=1e-4)
    for axis in [3, -5]:
        p = run(tmp_path, so, [x, np.array(axis, np.int64)], check=False)
        assert p.returncode != 0 and f"element 0 is {axis}" in p.stderr and "outside the bounds [-4, 2]" in p.stderr
    p = run(tmp_path, so, [x, np.array(-1, np.int64)], check=False)
    assert p.returncode != 0 and "dyn_strided_slice' would have dimension 0 = -1" in p.stderr, p.stderr


def test_mel_weight_matrix_of_values_given_at_run_time(tmp_path):
    """One build with every input given at run time, against the matrix
    Kiln computes at compile time from the same values as constants."""
    names = ["m", "l", "s", "lo", "hi"]
    inputs = [(n, TP.INT32, []) for n in names[:3]] + [(n, TP.FLOAT, []) for n in names[3:]]
    so = build(tmp_path, helper.make_node("MelWeightMatrix", names, ["y"]), inputs, opset=17, name="mel")
    for k, vals in enumerate([(8, 16, 8192, 0.0, 4096.0), (10, 64, 16000, 20.0, 8000.0), (5, 31, 22050, 100.0, 5000.0)]):
        arrays = [np.array(v, np.int32) for v in vals[:3]] + [np.array(v, np.float32) for v in vals[3:]]
        y = run(tmp_path, so, arrays)
        consts = [numpy_helper.from_array(a, f"c{i}") for i, a in enumerate(arrays)]
        g = helper.make_graph([helper.make_node("MelWeightMatrix", [c.name for c in consts], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)], consts)
        path = str(tmp_path / f"melc{k}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        kiln("compile", path, "-o", str(tmp_path / f"melc{k}.so"))
        want = run(tmp_path, str(tmp_path / f"melc{k}.so"), [])
        assert y.shape == (vals[1] // 2 + 1, vals[0])
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-7)
    p = run(tmp_path, so, [np.array(8, np.int32), np.array(16, np.int32), np.array(0, np.int32),
                           np.array(0, np.float32), np.array(4096, np.float32)], check=False)
    assert p.returncode != 0 and "element 0 is 0" in p.stderr and "outside the bounds [1, " in p.stderr, p.stderr
    # edges past sample_rate / 2 give bins outside the spectrum: an error at
    # run time, as at compile time (never a matrix that drops them)
    for k, vals in enumerate([(8, 16, 8192, 0.0, 8000.0), (4, 32, 16000, 9000.0, 12000.0)]):
        arrays = [np.array(v, np.int32) for v in vals[:3]] + [np.array(v, np.float32) for v in vals[3:]]
        p = run(tmp_path, so, arrays, check=False)
        assert p.returncode != 0 and "MelWeightMatrix: mel bin" in p.stderr and f"outside [0, {vals[1] // 2 + 1}]" in p.stderr, p.stderr
        consts = [numpy_helper.from_array(a, f"c{i}") for i, a in enumerate(arrays)]
        g = helper.make_graph([helper.make_node("MelWeightMatrix", [c.name for c in consts], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)], consts)
        path = str(tmp_path / f"melbad{k}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        p = kiln("compile", path, "-o", str(tmp_path / f"melbad{k}.so"), check=False)
        assert p.returncode != 0 and "mel bin" in p.stderr, p.stderr


def test_squeeze_and_unsqueeze_of_an_empty_input_with_axes_at_run_time(tmp_path):
    """An empty input keeps its 0 through a Squeeze or Unsqueeze whose
    axes are given at run time (the reshape's 0 is a size); squeezing a
    dimension that is not 1 (the empty one too) names the node."""
    so = build(tmp_path, helper.make_node("Squeeze", ["x", "a"], ["y"]),
               [("x", TP.FLOAT, [0, 1, 3, 1]), ("a", TP.INT64, [1])], opset=13, name="sq")
    x = np.zeros((0, 1, 3, 1), np.float32)
    for axes in [(1,), (-1,), (3,), (-3,)]:
        y = run(tmp_path, so, [x, i64(*axes)])
        assert y.shape == np.squeeze(x, axes).shape, axes
    for axes in [(0,), (2,)]:
        p = run(tmp_path, so, [x, i64(*axes)], check=False)
        assert p.returncode != 0 and "node 'fused_reshape' would have dimension 0 = -1" in p.stderr, p.stderr
    so = build(tmp_path, helper.make_node("Unsqueeze", ["x", "a"], ["y"]),
               [("x", TP.FLOAT, [2, 0]), ("a", TP.INT64, [2])], opset=13, name="usq")
    x = np.zeros((2, 0), np.float32)
    for axes in [(0, 1), (0, 3), (-1, 1), (2, 3)]:
        y = run(tmp_path, so, [x, i64(*axes)])
        assert y.shape == np.expand_dims(x, axes).shape, axes
    p = run(tmp_path, so, [x, i64(1, 1)], check=False)
    assert p.returncode != 0 and "would have dimension 0 = -1" in p.stderr, p.stderr
