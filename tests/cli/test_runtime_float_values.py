"""Float run-time values (docs/symbolic_shapes.md, section 4e): a Resize
whose scales (float32) or sizes are graph inputs, OneHot's float depth,
Dropout's ratio.  A float value decides a size as floor(x * scale) of its
element x; the kernel reads the value itself where it needs more than
the size (Resize's coordinate transform).  Each model is compiled once,
without --bind, and run by `kiln run` at several values on fresh random
data against NumPy (ONNX's own NumPy Resize, onnx.backend.test.case.node.
resize); a value no output can have is an error naming it.

The models are built with onnx's helper; run with /usr/bin/python3."""
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper
from onnx.backend.test.case.node.resize import (cubic_coeffs, interpolate_nd, interpolate_nd_with_x, linear_coeffs,
                                                nearest_coeffs)

from e2e_common import kiln
from onnx_build import build, run

RNG = np.random.default_rng()


def resize_model(tmp_path, name, by, shape, opset=13, **attrs):
    """Resize of x (float32, shape) by a scales or sizes graph input."""
    n = len(attrs["axes"]) if "axes" in attrs else len(shape)
    ins = ["x", "", "v"] if by == "scales" else ["x", "", "", "v"]
    return build(tmp_path, helper.make_node("Resize", ins, ["y"], **attrs),
                 [("x", TP.FLOAT, shape), ("v", TP.FLOAT if by == "scales" else TP.INT64, [n])], opset=opset,
                 name=name)


def coeffs(mode, nearest_mode="round_prefer_floor", a=-0.75):
    if mode == "nearest":
        return lambda r: nearest_coeffs(r, mode=nearest_mode)
    if mode == "linear":
        return linear_coeffs
    return lambda r: cubic_coeffs(r, A=a)


def test_resize_by_scales_given_at_run_time(tmp_path):
    shape = (1, 2, 4, 5)
    for mode, ctm, nm in [("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_ceil"),
                          ("linear", "half_pixel", None), ("linear", "align_corners", None),
                          ("cubic", "pytorch_half_pixel", None), ("cubic", "asymmetric", None)]:
        attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
        if nm:
            attrs["nearest_mode"] = nm
        so = resize_model(tmp_path, f"{mode}_{ctm}", "scales", shape, **attrs)
        for sc in [(1, 1, 2, 1.5), (1, 1, 0.5, 0.6), (1, 2, 1.7, 3), (1, 1, 2, 1.5)]:
            x = RNG.standard_normal(shape).astype(np.float32)
            v = np.array(sc, np.float32)
            y = run(tmp_path, so, [x, v])
            want = interpolate_nd(x, coeffs(mode, nm or "round_prefer_floor"), scale_factors=v.astype(np.float64),
                                  coordinate_transformation_mode=ctm).astype(np.float32)
            assert y.shape == want.shape, (mode, ctm, sc, y.shape, want.shape)
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5, err_msg=f"{mode} {ctm} {sc}")


def test_resize_by_sizes_given_at_run_time(tmp_path):
    shape = (2, 3, 5, 4)
    for mode in ["nearest", "linear", "cubic"]:
        so = resize_model(tmp_path, f"s_{mode}", "sizes", shape, mode=mode)
        for sz in [(2, 3, 9, 7), (2, 3, 2, 3), (1, 3, 5, 11)]:
            x = RNG.standard_normal(shape).astype(np.float32)
            y = run(tmp_path, so, [x, np.array(sz, np.int64)])
            want = interpolate_nd(x, coeffs(mode), output_size=list(sz)).astype(np.float32)
            assert y.shape == tuple(sz)
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5, err_msg=f"{mode} {sz}")


def test_resize_keep_aspect_ratio_with_sizes_given_at_run_time(tmp_path):
    """opset 18: sizes for axes 2 and 3, one scale (the smallest or largest
    ratio), the output round(D * scale)."""
    shape = (1, 2, 4, 6)
    for policy, pick in [("not_larger", min), ("not_smaller", max)]:
        so = resize_model(tmp_path, policy, "sizes", shape, opset=18, mode="linear", axes=[2, 3],
                          keep_aspect_ratio_policy=policy)
        for sz in [(8, 20), (2, 9), (12, 12), (5, 3)]:
            x = RNG.standard_normal(shape).astype(np.float32)
            y = run(tmp_path, so, [x, np.array(sz, np.int64)])
            r = pick(sz[0] / 4, sz[1] / 6)
            out = [1, 2, int(4 * r + 0.5), int(6 * r + 0.5)]
            assert list(y.shape) == out, (policy, sz, y.shape)
            # ONNX's NumPy Resize at that scale, at each output position
            want = np.zeros(out, np.float32)
            for idx in np.ndindex(*out):
                want[idx] = interpolate_nd_with_x(x, 4, np.array([1, 1, r, r]), np.array(idx), linear_coeffs)
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5, err_msg=f"{policy} {sz}")


def test_upsample_scales_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest"),
               [("x", TP.FLOAT, [1, 1, 3, 2]), ("s", TP.FLOAT, [4])], opset=9, name="up")
    for sc in [(1, 1, 2, 3), (1, 2, 1, 2.5)]:
        x = RNG.standard_normal((1, 1, 3, 2)).astype(np.float32)
        y = run(tmp_path, so, [x, np.array(sc, np.float32)])
        want = interpolate_nd(x, lambda r: nearest_coeffs(r, mode="floor"), scale_factors=np.array(sc, np.float64),
                              coordinate_transformation_mode="asymmetric").astype(np.float32)
        np.testing.assert_array_equal(y, want)


def test_resize_scales_that_give_no_output_are_refused(tmp_path):
    so = resize_model(tmp_path, "bad", "scales", (1, 1, 4, 4), mode="nearest")
    x = RNG.standard_normal((1, 1, 4, 4)).astype(np.float32)
    for sc, what in [((1, 1, 0.1, 1), "element 2 is 0.1, giving floor(0.1 * 4) = 0"),
                     ((1, 1, 1, -2), "element 3 is -2, giving floor(-2 * 4) = -8"),
                     ((1, 1, np.nan, 1), "element 2 is nan, which gives no size"),
                     ((1, 1, 1, np.inf), "element 3 is inf, which gives no size")]:
        p = run(tmp_path, so, [x, np.array(sc, np.float32)], check=False)
        assert p.returncode != 0 and what in p.stderr and "outside the bounds [1, " in p.stderr, p.stderr
    # the same build still runs at a good scale after the errors
    y = run(tmp_path, so, [x, np.array((1, 1, 2, 0.5), np.float32)])
    assert y.shape == (1, 1, 8, 2)


def test_one_hot_with_a_float_depth_given_at_run_time(tmp_path):
    so = build(tmp_path, helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=1),
               [("i", TP.INT64, [2, 3]), ("d", TP.FLOAT, []), ("v", TP.FLOAT, [2])], opset=11, name="oh")
    for depth in [5.0, 3.0, 7.9, 1.0]:
        i = RNG.integers(-8, 8, (2, 3)).astype(np.int64)
        v = RNG.standard_normal(2).astype(np.float32)
        y = run(tmp_path, so, [i, np.array(depth, np.float32), v])
        d = int(depth)
        w = np.where(i < 0, i + d, i)
        want = np.where(np.arange(d)[None, :, None] == w[:, None, :], v[1], v[0]).astype(np.float32)
        assert y.shape == (2, d, 3)
        np.testing.assert_array_equal(y, want, err_msg=str(depth))
    p = run(tmp_path, so, [i, np.array(0.5, np.float32), v], check=False)
    assert p.returncode != 0 and "element 0 is 0.5, giving floor(0.5 * 1) = 0" in p.stderr, p.stderr


def test_dropout_ratio_given_at_run_time_is_checked(tmp_path):
    """A ratio outside [0, 1) is an error naming the Dropout node, in
    training and in inference mode, never ratio-scaled output."""
    g = helper.make_graph([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop1", seed=3)], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [4, 5]),
                           helper.make_tensor_value_info("r", TP.FLOAT, []),
                           helper.make_tensor_value_info("t", TP.BOOL, [])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    path = str(tmp_path / "do.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    so = str(tmp_path / "do.so")
    kiln("compile", path, "-o", so)
    x = RNG.uniform(1, 2, (4, 5)).astype(np.float32)
    for ratio in [1.0, 1.5, -0.25, np.nan]:
        for train in [True, False]:
            p = run(tmp_path, so, [x, np.array(ratio, np.float32), np.array(train)], check=False)
            assert p.returncode != 0 and "Dropout_drop1_ratio" in p.stderr, p.stderr
            assert "outside the bounds [0, 16777215]" in p.stderr, p.stderr
    # the largest float32 below 1 is a ratio
    r = np.nextafter(np.float32(1), np.float32(0))
    y = run(tmp_path, so, [x, np.array(r, np.float32), np.array(False)])
    np.testing.assert_array_equal(y, x)


def numpy_affine_grid(theta, size, align_corners):
    """AffineGrid as ONNX defines it: theta applied to (x, y[, z], 1)."""
    spatial = size[2:]
    axes = []
    for n in spatial:
        if align_corners:
            axes.append(np.linspace(-1, 1, n) if n > 1 else np.array([-1.0]))
        else:
            axes.append((2 * np.arange(n) + 1) / n - 1)
    grids = np.meshgrid(*axes, indexing="ij")  # D, H, W order
    pts = np.stack([g for g in reversed(grids)] + [np.ones_like(grids[0])], axis=-1)  # x, y[, z], 1
    return np.einsum("...j,ncj->n...c", pts, theta.astype(np.float64)).astype(np.float32)


def test_affine_grid_with_the_size_given_at_run_time(tmp_path):
    for k, ac in [(2, 0), (2, 1), (3, 1)]:
        so = build(tmp_path, helper.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=ac),
                   [("t", TP.FLOAT, [2, k, k + 1]), ("s", TP.INT64, [k + 2])], opset=20, name=f"ag{k}{ac}")
        for sp in ([5, 3], [1, 4], [7, 2]) if k == 2 else ([2, 3, 4], [1, 1, 5]):
            theta = RNG.standard_normal((2, k, k + 1)).astype(np.float32)
            size = np.array([2, 3] + sp, np.int64)
            y = run(tmp_path, so, [theta, size])
            want = numpy_affine_grid(theta, list(size), ac)
            assert y.shape == want.shape, (k, ac, sp)
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6, err_msg=f"{k} {ac} {sp}")
    # the batch must be theta's
    p = run(tmp_path, so, [theta, np.array([3, 3, 2, 2, 2], np.int64)], check=False)
    assert p.returncode != 0 and "element 0 is 3" in p.stderr and "outside the bounds [2, 2]" in p.stderr, p.stderr


def test_max_unpool_with_output_shape_given_at_run_time(tmp_path):
    """The unpooled [1, 2, 4, 4] padded at the end to output_shape."""
    so = build(tmp_path, helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
               [("x", TP.FLOAT, [1, 2, 2, 2]), ("i", TP.INT64, [1, 2, 2, 2]), ("s", TP.INT64, [4])], opset=11,
               name="unpool")
    for want in [(1, 2, 4, 4), (1, 2, 5, 7), (1, 2, 4, 9)]:
        x = RNG.standard_normal((1, 2, 2, 2)).astype(np.float32)
        i = np.stack([RNG.choice(16, 4, replace=False) + 16 * c for c in range(2)]).reshape(1, 2, 2, 2)
        y = run(tmp_path, so, [x, i.astype(np.int64), np.array(want, np.int64)])
        z = np.zeros(32, np.float32)
        z[i.ravel()] = x.ravel()
        ref = np.pad(z.reshape(1, 2, 4, 4), [(0, w - d) for w, d in zip(want, (1, 2, 4, 4))])
        np.testing.assert_array_equal(y, ref, err_msg=str(want))
    # smaller than the unpooled shape, or another batch: refused naming the element
    for bad, what in [((1, 2, 3, 4), "element 2 is 3"), ((2, 2, 4, 4), "element 0 is 2")]:
        p = run(tmp_path, so, [x, i.astype(np.int64), np.array(bad, np.int64)], check=False)
        assert p.returncode != 0 and what in p.stderr and "outside the bounds" in p.stderr, p.stderr
