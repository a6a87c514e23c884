"""Run-time values the kernel reads (docs/symbolic_shapes.md, "Run-time
shape values"): a Slice whose starts, ends, axes and steps and a Split
whose sizes are graph inputs.  The output's sizes are expressions of the
values, the offsets a read of the value tensor inside the kernel.  Each
model is compiled once, without --bind, and run by `kiln run` at several
values against NumPy; a value no output can have is an error naming the
node.

The models are built with onnx's helper; run with /usr/bin/python3."""
import numpy as np
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from e2e_common import kiln
from onnx_build import build, i64, run, write_pb

RNG = np.random.default_rng(21)
BIG = np.iinfo(np.int64).max


def numpy_slice(x, starts, ends, axes, steps):
    sl = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        sl[a] = slice(s, e, st)
    return x[tuple(sl)]


def test_slice_with_every_operand_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"]),
               [("x", TP.FLOAT, [5, 6, 7]), ("s", TP.INT64, [2]), ("e", TP.INT64, [2]), ("a", TP.INT64, [2]),
                ("t", TP.INT64, [2])])
    x = RNG.standard_normal((5, 6, 7)).astype(np.float32)
    cases = [((0, 1), (3, 5), (0, 1), (1, 1)),
             ((1, -2), (BIG, -7), (2, 1), (2, -1)),       # to the end; backwards past the start
             ((-1, 4), (-1000, 1000), (-1, 0), (-3, 1)),  # negative axes and steps, clamped ends
             ((2, 0), (6, 7), (1, 2), (3, 3)),
             ((4, 0), (2, 5), (0, 1), (1, 1)),            # empty
             ((0, 1), (3, 5), (0, 1), (1, 1))]            # the first binding again (a cached plan)
    for s, e, a, t in cases:
        y = run(tmp_path, so, [x, i64(*s), i64(*e), i64(*a), i64(*t)])
        want = numpy_slice(x, s, e, [v % 3 for v in a], t)
        assert y.shape == want.shape, (s, e, a, t)
        np.testing.assert_array_equal(y, want)
    # values no output can have: the node is named
    for s, e, a, t, what in [((0, 0), (3, 5), (0, 0), (1, 1), "would have dimension 0 = -1"),   # axis twice
                             ((0, 0), (3, 5), (0, 1), (0, 1), "would have dimension 0 = -1")]:  # step 0
        p = run(tmp_path, so, [x, i64(*s), i64(*e), i64(*a), i64(*t)], check=False)
        assert p.returncode != 0 and "node 'fused_dyn_strided_slice'" in p.stderr and what in p.stderr, p.stderr
    # an empty slice is an empty result
    for s, e, a, t in [((4, 0), (2, 5), (0, 1), (1, 1)), ((0, 3), (5, 3), (0, 2), (1, 1))]:
        y = run(tmp_path, so, [x, i64(*s), i64(*e), i64(*a), i64(*t)])
        assert y.shape == numpy_slice(x, s, e, a, t).shape
    p = run(tmp_path, so, [x, i64(0, 0), i64(3, 5), i64(0, 3), i64(1, 1)], check=False)
    assert p.returncode != 0 and "element 1 is 3" in p.stderr and "outside the bounds [-3, 2]" in p.stderr, p.stderr


def test_slice_with_constant_axes_and_int32_values(tmp_path):
    """Starts and ends given at run time (int32), axes and steps constants."""
    axes = numpy_helper.from_array(i64(2, 0), "a")
    steps = numpy_helper.from_array(i64(-1, 2), "t")
    so = build(tmp_path, helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"]),
               [("x", TP.FLOAT, [4, 3, 8]), ("s", TP.INT32, [2]), ("e", TP.INT32, [2])], opset=13, name="c",
               inits=[axes, steps])
    x = RNG.standard_normal((4, 3, 8)).astype(np.float32)
    for s, e in [((7, 0), (0, 4)), ((-1, 1), (-9, 3)), ((3, 0), (2, 1))]:
        y = run(tmp_path, so, [x, np.array(s, np.int32), np.array(e, np.int32)])
        np.testing.assert_array_equal(y, numpy_slice(x, s, e, (2, 0), (-1, 2)))


def test_slice_whose_step_sign_is_given_at_run_time_needs_the_values(tmp_path):
    """Constant starts 5 and ends 0 with the step and axis given at run time:
    empty for a positive step, not for a negative one, so the shape cannot
    be compiled once; the error names the inputs to bind."""
    s, e = numpy_helper.from_array(i64(5), "s"), numpy_helper.from_array(i64(0), "e")
    p = build(tmp_path, helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"]),
              [("x", TP.FLOAT, [4, 3, 8]), ("a", TP.INT64, [1]), ("t", TP.INT64, [1])], opset=13, name="d",
              inits=[s, e], check=False)
    assert p.returncode != 0 and "must be known at compile time" in p.stderr and "--bind" in p.stderr, p.stderr


def test_split_with_sizes_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("Split", ["x", "s"], ["a", "b", "c"], axis=1),
               [("x", TP.FLOAT, [2, 9, 3]), ("s", TP.INT64, [3])], opset=18, name="s", outputs="abc")
    x = RNG.standard_normal((2, 9, 3)).astype(np.float32)
    for sizes in [(3, 3, 3), (1, 7, 1), (5, 2, 2), (4, 0, 5), (0, 9, 0), (3, 3, 3)]:
        p = str(tmp_path / "x.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(x).SerializeToString())
        q = str(tmp_path / "s.pb")
        with open(q, "wb") as f:
            f.write(numpy_helper.from_array(i64(*sizes)).SerializeToString())
        kiln("run", so, "--inputs", p, "--inputs", q, "-o", str(tmp_path / "o.npz"))
        with np.load(str(tmp_path / "o.npz")) as z:
            got = [z[k] for k in z.files]
        want = np.split(x, np.cumsum(sizes)[:-1], axis=1)
        assert len(got) == 3
        for a, b in zip(got, want):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    # sizes that do not add up to the axis, and a negative size
    p = kiln("run", so, "--inputs", str(tmp_path / "x.pb"), "--inputs", write_pb(tmp_path, i64(3, 3, 2)),
             "-o", str(tmp_path / "o.npz"), check=False)
    assert p.returncode != 0 and "node 'fused_dyn_split" in p.stderr and "= -1" in p.stderr, p.stderr
    p = kiln("run", so, "--inputs", str(tmp_path / "x.pb"), "--inputs", write_pb(tmp_path, i64(4, -1, 6)),
             "-o", str(tmp_path / "o.npz"), check=False)
    assert p.returncode != 0 and "element 1 is -1" in p.stderr and "outside the bounds [0, 9]" in p.stderr, p.stderr


def test_topk_with_k_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0),
               [("x", TP.FLOAT, [3, 6]), ("k", TP.INT64, [1])], opset=11, name="t", outputs="vi",
               out=[TP.FLOAT, TP.INT64])
    x = RNG.permutation(18).astype(np.float32).reshape(3, 6)
    xp = write_pb(tmp_path, x)
    order = np.argsort(x, axis=1, kind="stable")
    for k in [1, 4, 6, 0, 2]:
        kiln("run", so, "--inputs", xp, "--inputs", write_pb(tmp_path, i64(k)), "-o", str(tmp_path / "o.npz"))
        with np.load(str(tmp_path / "o.npz")) as z:
            v, i = z["v"], z["i"]
        np.testing.assert_array_equal(i, order[:, :k])
        np.testing.assert_array_equal(v, np.take_along_axis(x, order[:, :k], 1))
    for k in [-1, 7]:
        p = kiln("run", so, "--inputs", xp, "--inputs", write_pb(tmp_path, i64(k)), "-o", str(tmp_path / "o.npz"),
                 check=False)
        assert p.returncode != 0 and f"element 0 is {k}" in p.stderr and "outside the bounds [0, 6]" in p.stderr, p.stderr


def _pad_model(tmp_path, mode, name):
    return build(tmp_path, helper.make_node("Pad", ["x", "p", "v", "a"], ["y"], mode=mode),
                 [("x", TP.FLOAT, [3, 4]), ("p", TP.INT64, [2]), ("v", TP.FLOAT, []), ("a", TP.INT64, [1])],
                 opset=19, name=name)


def test_pad_with_pads_value_and_axes_given_at_run_time(tmp_path):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for mode in ["constant", "edge", "reflect", "wrap"]:
        so = _pad_model(tmp_path, mode, mode)
        for pads, axis, value in [((1, 2), 0, 1.5), ((3, 0), 1, -2.0), ((0, 2), -1, 0.0), ((2, 2), 0, 7.0)]:
            y = run(tmp_path, so, [x, i64(*pads), np.array(value, np.float32), i64(axis)])
            widths = [(0, 0), (0, 0)]
            widths[axis % 2] = pads
            kw = {"constant_values": value} if mode == "constant" else {}
            np.testing.assert_array_equal(y, np.pad(x, widths, mode=mode, **kw), err_msg=f"{mode} {pads} {axis}")
        # a negative pad crops first, as ONNX's reference does
        for pads, axis in [((-1, 2), 0), ((3, -2), 1)]:
            y = run(tmp_path, so, [x, i64(*pads), np.array(3.0, np.float32), i64(axis)])
            crop = x[1:] if axis == 0 else x[:, :2]
            widths = [(0, 0), (0, 0)]
            widths[axis] = tuple(max(v, 0) for v in pads)
            kw = {"constant_values": 3.0} if mode == "constant" else {}
            np.testing.assert_array_equal(y, np.pad(crop, widths, mode=mode, **kw), err_msg=f"{mode} {pads}")
        # edge, reflect and wrap need something left to repeat
        p = run(tmp_path, so, [x, i64(-3, 1), np.array(0, np.float32), i64(0)], check=False)
        if mode == "constant":
            assert p.returncode == 0, p.stderr
        else:
            assert p.returncode != 0 and "node 'fused_dyn_pad'" in p.stderr and "= -1" in p.stderr, p.stderr
    # a pad that leaves less than nothing names the node
    p = run(tmp_path, so, [x, i64(-2, -2), np.array(0, np.float32), i64(0)], check=False)
    assert p.returncode != 0 and "node 'fused_dyn_pad'" in p.stderr and "= -1" in p.stderr, p.stderr
    p = run(tmp_path, so, [x, i64(1, 1), np.array(0, np.float32), i64(2)], check=False)
    assert p.returncode != 0 and "element 0 is 2" in p.stderr and "outside the bounds [-2, 1]" in p.stderr, p.stderr


def numpy_center_crop_pad(x, shape):
    """ONNX's reference: crop around the centre, or pad with 0 around it."""
    y = x
    for a, s in enumerate(shape):
        d = y.shape[a]
        if s < d:
            b = (d - s) // 2
            y = np.take(y, range(b, b + s), axis=a)
        elif s > d:
            w = [(0, 0)] * y.ndim
            w[a] = ((s - d) // 2, s - d - (s - d) // 2)
            y = np.pad(y, w)
    return y


def test_center_crop_pad_with_the_shape_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("CenterCropPad", ["x", "s"], ["y"]),
               [("x", TP.FLOAT, [5, 4]), ("s", TP.INT64, [2])], name="ccp")
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    for s in [(3, 6), (5, 4), (8, 1), (2, 7), (0, 4)]:
        y = run(tmp_path, so, [x, i64(*s)])
        np.testing.assert_array_equal(y, numpy_center_crop_pad(x, s), err_msg=str(s))
    p = run(tmp_path, so, [x, i64(3, -1)], check=False)
    assert p.returncode != 0 and "element 1 is -1" in p.stderr and "outside the bounds [0, " in p.stderr, p.stderr


def test_reverse_sequence_with_lengths_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("ReverseSequence", ["x", "l"], ["y"], batch_axis=1, time_axis=0),
               [("x", TP.FLOAT, [5, 3]), ("l", TP.INT64, [3])], name="rs")
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    for lens in [(5, 1, 3), (0, 2, 5), (4, 4, 4)]:
        want = x.copy()
        for b, n in enumerate(lens):
            want[:n, b] = x[:n, b][::-1]
        np.testing.assert_array_equal(run(tmp_path, so, [x, i64(*lens)]), want, err_msg=str(lens))
    p = run(tmp_path, so, [x, i64(1, 6, 2)], check=False)
    assert p.returncode != 0 and "element 1 is 6" in p.stderr and "outside the bounds [0, 5]" in p.stderr, p.stderr


def test_dropout_with_training_mode_and_ratio_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], seed=3),
               [("x", TP.FLOAT, [40, 50]), ("r", TP.FLOAT, []), ("t", TP.BOOL, [])], opset=13, name="do",
               outputs="ym", out=[TP.FLOAT, TP.BOOL])
    x = RNG.uniform(1, 2, (40, 50)).astype(np.float32)
    for ratio, train in [(0.5, False), (0.5, True), (0.0, True), (0.8, True)]:
        args = ["run", so, "-o", str(tmp_path / "o.npz"), "--inputs", write_pb(tmp_path, x),
                "--inputs", write_pb(tmp_path, np.array(ratio, np.float32)), "--inputs", write_pb(tmp_path, np.array(train))]
        kiln(*args)
        with np.load(str(tmp_path / "o.npz")) as z:
            y, m = z["y"], z["m"]
        if not train:
            np.testing.assert_array_equal(y, x)
            assert m.all()
            continue
        # every element dropped (0) or kept and scaled, as the mask says
        np.testing.assert_allclose(y[m], x[m] / (1 - ratio), rtol=1e-6)
        assert (y[~m] == 0).all()
        assert abs((~m).mean() - ratio) < 0.05, ((~m).mean(), ratio)


def test_range_with_start_limit_and_delta_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("Range", ["s", "l", "d"], ["y"]), [(n, TP.INT64, []) for n in "sld"],
               opset=11, name="r", out=TP.INT64)
    for s, l, d in [(0, 5, 1), (10, 1, -3), (-4, 9, 5), (5, 0, 1), (0, 5, 1)]:
        y = run(tmp_path, so, [np.array(s), np.array(l), np.array(d)])
        np.testing.assert_array_equal(y, np.arange(s, l, d), err_msg=str((s, l, d)))
    p = run(tmp_path, so, [np.array(0), np.array(5), np.array(0)], check=False)
    assert p.returncode != 0 and "node 'fused_dyn_arange'" in p.stderr and "= -1" in p.stderr, p.stderr
