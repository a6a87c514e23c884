"""Loop with a trip count and a condition given at run time
(docs/symbolic_shapes.md, section 4d): the body is built into the module as
a graph of its own and the executor runs it.  One model, compiled once
without --bind, is run by `kiln run` at several trip counts and stopping
points on fresh random inputs and compared with ONNX Runtime (run in a
Python that has it: $KILN_ORT_PYTHON, build/ort-venv from
tests/models/ort_venv.sh, or python3 on PATH); a negative trip count is an
error naming the Loop.

The models are built with onnx's helper; run with /usr/bin/python3."""
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from e2e_common import kiln, ort_fixture, ort_run

RNG = np.random.default_rng()


ortpy = ort_fixture()


def loop_model(path):
    """x' = tanh(x * w + i) and a step count carried, each x' scanned; the
    body stops once sum(x') > limit (w, limit: outer graph inputs)."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT),
         helper.make_node("Mul", ["x_in", "w"], ["xw"]),
         helper.make_node("Add", ["xw", "fi"], ["xa"]),
         helper.make_node("Tanh", ["xa"], ["x_out"]),
         helper.make_node("Add", ["n_in", "one"], ["n_out"]),
         helper.make_node("ReduceSum", ["x_out"], ["tot"], keepdims=0),
         helper.make_node("Less", ["tot", "limit"], ["c_out"]),
         helper.make_node("Identity", ["x_out"], ["x_row"])],
        "body",
        [helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("c_in", TP.BOOL, []),
         helper.make_tensor_value_info("x_in", TP.FLOAT, [2, 3]), helper.make_tensor_value_info("n_in", TP.INT64, [])],
        [helper.make_tensor_value_info("c_out", TP.BOOL, []), helper.make_tensor_value_info("x_out", TP.FLOAT, [2, 3]),
         helper.make_tensor_value_info("n_out", TP.INT64, []), helper.make_tensor_value_info("x_row", TP.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array(1, np.int64), "one")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["m", "c", "x0", "n0"], ["x_final", "n_final", "x_scan"], name="the_loop", body=body)],
        "runtime_loop",
        [helper.make_tensor_value_info("m", TP.INT64, []), helper.make_tensor_value_info("c", TP.BOOL, []),
         helper.make_tensor_value_info("x0", TP.FLOAT, [2, 3]), helper.make_tensor_value_info("n0", TP.INT64, []),
         helper.make_tensor_value_info("w", TP.FLOAT, [2, 3]), helper.make_tensor_value_info("limit", TP.FLOAT, [])],
        [helper.make_tensor_value_info("x_final", TP.FLOAT, [2, 3]), helper.make_tensor_value_info("n_final", TP.INT64, []),
         helper.make_tensor_value_info("x_scan", TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def kiln_run(tmp_path, so, feeds, check=True):
    args = ["run", so, "-o", str(tmp_path / "out.npz")]
    for name, a in feeds.items():
        p = str(tmp_path / f"{name}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
        args += ["--inputs", p]
    p = kiln(*args, check=check)
    if not check:
        return p
    with np.load(str(tmp_path / "out.npz")) as z:
        return [z[k] for k in z.files]


def test_loop_at_run_time_against_onnxruntime(tmp_path, ortpy):
    path = str(tmp_path / "loop.onnx")
    loop_model(path)
    so = str(tmp_path / "loop.so")
    kiln("compile", path, "-o", so)
    # trip counts 0, 1, many, again 1; stopped early by the condition
    # (a low limit), never entered (c false); fresh values each time
    for m, c, limit in [(0, True, 1e9), (1, True, 1e9), (9, True, 1e9), (1, True, 1e9), (30, True, 2.5),
                        (6, False, 1e9), (12, True, -10.0)]:
        feeds = {"m": np.array(m, np.int64), "c": np.array(c), "x0": RNG.standard_normal((2, 3)).astype(np.float32),
                 "n0": np.array(RNG.integers(0, 100), np.int64), "w": RNG.standard_normal((2, 3)).astype(np.float32),
                 "limit": np.array(limit, np.float32)}
        got = kiln_run(tmp_path, so, feeds)
        want = ort_run(ortpy, tmp_path, path, feeds)
        assert len(got) == 3
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
        assert got[1] == want[1]
        iters = int(want[1] - feeds["n0"])
        assert got[2].shape == (iters, 2, 3), (m, c, limit, got[2].shape)
        if iters:
            np.testing.assert_allclose(got[2], want[2].reshape(iters, 2, 3), rtol=1e-5, atol=1e-6)
        # the condition stops the loop early: tanh(x * w + i) sums past 2.5
        # within a few steps (on some random data after the first one); a
        # limit of -10 ends it after the first
        if limit == 2.5:
            assert 1 <= iters < 30
        if limit == -10.0:
            assert iters == 1
        if not c:
            assert iters == 0
    # a negative trip count names the Loop and the value
    feeds["m"] = np.array(-4, np.int64)
    p = kiln_run(tmp_path, so, feeds, check=False)
    assert p.returncode != 0
    assert "the_loop" in p.stderr and "-4" in p.stderr, p.stderr


def test_loop_body_slices_at_the_iteration_number(tmp_path, ortpy):
    """test_loop11's kind: the body slices an outer tensor at [i, i + 1)
    (starts and ends computed by kernels from the iteration number, bound
    after them) and adds the slice to a carried [1] (a shape the body
    decides at run time, checked each iteration), scanning the carried
    value; past the end the slice is empty and the carried value would
    change shape: an error naming the iteration."""
    body = helper.make_graph(
        [helper.make_node("Unsqueeze", ["i", "axes"], ["s"]),
         helper.make_node("Add", ["s", "one"], ["e"]),
         helper.make_node("Slice", ["data", "s", "e"], ["part"]),
         helper.make_node("Add", ["acc_in", "part"], ["acc_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Identity", ["acc_in"], ["acc_row"])],
        "body",
        [helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("c_in", TP.BOOL, []),
         helper.make_tensor_value_info("acc_in", TP.FLOAT, [1])],
        [helper.make_tensor_value_info("c_out", TP.BOOL, []), helper.make_tensor_value_info("acc_out", TP.FLOAT, None),
         helper.make_tensor_value_info("acc_row", TP.FLOAT, [1])],
        [numpy_helper.from_array(np.array([0], np.int64), "axes"), numpy_helper.from_array(np.array([1], np.int64), "one")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "acc0"], ["acc", "accs"], name="slicer", body=body)],
        "slice_loop",
        [helper.make_tensor_value_info("m", TP.INT64, []), helper.make_tensor_value_info("acc0", TP.FLOAT, [1]),
         helper.make_tensor_value_info("data", TP.FLOAT, [12])],
        [helper.make_tensor_value_info("acc", TP.FLOAT, [1]), helper.make_tensor_value_info("accs", TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = str(tmp_path / "slice_loop.onnx")
    onnx.save(m, path)
    so = str(tmp_path / "slice_loop.so")
    kiln("compile", path, "-o", so)
    for trips in (0, 3, 12, 5):
        feeds = {"m": np.array(trips, np.int64), "acc0": RNG.standard_normal(1).astype(np.float32),
                 "data": RNG.standard_normal(12).astype(np.float32)}
        got = kiln_run(tmp_path, so, feeds)
        want = ort_run(ortpy, tmp_path, path, feeds)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
        assert got[1].shape == (trips, 1)
        np.testing.assert_allclose(got[1], want[1].reshape(trips, 1), rtol=1e-5, atol=1e-5)
    # iteration 12 slices past the end: (0,) + (1,) gives the carried value (0,)
    feeds["m"] = np.array(13, np.int64)
    p = kiln_run(tmp_path, so, feeds, check=False)
    assert p.returncode != 0
    assert "Loop 'slicer': iteration 12 of the loop: the body gives carried value 0 the shape (0,)" in p.stderr, p.stderr
