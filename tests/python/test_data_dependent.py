"""Data-dependent output sizes (docs/symbolic_shapes.md, section 4c):
NonZero, Compress with its condition given at run time, Unique and
NonMaxSuppression write into a buffer at the upper bound and report the
size; the executor binds it after the call and plans what follows.  Each
model is compiled once and run on several fresh random inputs, whose
results have different sizes, against NumPy (for NonMaxSuppression a port
of ONNX's reference implementation); get_output returns the real shape.

Run with /usr/bin/python3 (onnx's helper builds the models)."""
import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402  pylint: disable=wrong-import-position
from onnx import helper  # noqa: E402  pylint: disable=wrong-import-position

RNG = np.random.default_rng(2026)


def build(nodes, inputs, outputs, inits=(), opset=13):
    """A module compiled once from the nodes; inputs are (name, type, dims)."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs], list(inits))
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    mod, params = kiln.frontend.from_onnx(model)
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    return graph_executor.GraphModule(lib["default"](kiln.cpu()))


def run(m, **inputs):
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def sparse(shape, p):
    """Random floats with about a fraction p of zeros (at least one nonzero)."""
    x = RNG.standard_normal(shape).astype(np.float32)
    x[RNG.random(shape) < p] = 0
    x.flat[RNG.integers(x.size)] = 1.5
    return x


def test_nonzero_sizes_in_sequence():
    m = build([helper.make_node("NonZero", ["x"], ["y"])], [("x", TP.FLOAT, [3, 4, 5])], [("y", TP.INT64)])
    sizes = set()
    for p in (0.5, 0.9, 0.0, 0.5, 0.97):  # one module, a different count each run
        x = sparse((3, 4, 5), p)
        (y,) = run(m, x=x)
        want = np.array(np.nonzero(x), np.int64)
        assert y.shape == want.shape
        np.testing.assert_array_equal(y, want)
        sizes.add(y.shape[1])
    assert len(sizes) >= 3


def test_nonzero_then_kernels_over_the_count():
    # the count flows on: Transpose, a Cast and a ReduceSum run over it, and
    # a Reshape whose target is computed from the result's Shape (the count
    # as a shape value) flattens it
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["t"], perm=[1, 0]),
             helper.make_node("Cast", ["t"], ["tf"], to=TP.FLOAT),
             helper.make_node("ReduceSum", ["tf"], ["s"], axes=[1], keepdims=0),
             helper.make_node("Shape", ["nz"], ["shp"]),
             helper.make_node("Slice", ["shp", "one", "two"], ["cnt"]),
             helper.make_node("Mul", ["cnt", "two"], ["numel"]),
             helper.make_node("Reshape", ["nz", "numel"], ["flat"])]
    inits = [helper.make_tensor("one", TP.INT64, [1], [1]), helper.make_tensor("two", TP.INT64, [1], [2])]
    m = build(nodes, [("x", TP.INT32, [4, 6])], [("s", TP.FLOAT), ("flat", TP.INT64)], inits, opset=11)
    for p in (0.3, 0.8, 0.5):
        x = (RNG.random((4, 6)) > p).astype(np.int32)
        x[0, 0] = 1
        s, flat = run(m, x=x)
        nz = np.array(np.nonzero(x), np.int64)
        np.testing.assert_array_equal(s, nz.T.sum(axis=1).astype(np.float32))
        np.testing.assert_array_equal(flat, nz.reshape(-1))


def test_compress_with_and_without_axis():
    for axis in (None, 0, 1, -1):
        kw = {} if axis is None else {"axis": axis}
        n = 3 * 4 * 5 if axis is None else (3, 4, 5)[axis]
        m = build([helper.make_node("Compress", ["x", "c"], ["y"], **kw)],
                  [("x", TP.FLOAT, [3, 4, 5]), ("c", TP.BOOL, [n])], [("y", TP.FLOAT)], opset=11)
        for p in (0.5, 0.2, 0.9):
            x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
            c = RNG.random(n) > p
            c[RNG.integers(n)] = True
            (y,) = run(m, x=x, c=c)
            want = np.compress(c, x, axis=axis)
            assert y.shape == want.shape
            np.testing.assert_array_equal(y, want)


def test_compress_then_nonzero():
    # two reported sizes in one run: NonZero's upper bound is Compress's
    # count, known only after Compress ran
    nodes = [helper.make_node("Compress", ["x", "c"], ["k"], axis=0), helper.make_node("NonZero", ["k"], ["y"])]
    m = build(nodes, [("x", TP.FLOAT, [6, 4]), ("c", TP.BOOL, [6])], [("y", TP.INT64)], opset=11)
    for p in (0.5, 0.2, 0.7, 0.5):
        x = sparse((6, 4), p)
        c = RNG.random(6) > 0.4
        c[int(np.nonzero(x)[0][0])] = True  # keep a row with a nonzero
        (y,) = run(m, x=x, c=c)
        np.testing.assert_array_equal(y, np.array(np.nonzero(np.compress(c, x, axis=0)), np.int64))


def unique_ref(x, axis, sorted_):
    """ONNX's Unique (onnx.reference.ops.op_unique)."""
    y, ind, inv, cnt = np.unique(x, True, True, True, axis=axis)
    if not sorted_:
        order = np.argsort(ind, kind="stable")
        pos = np.empty_like(order)
        pos[order] = np.arange(len(order))
        y = np.take(y, order, axis=0 if axis is None else axis)
        ind, cnt, inv = ind[order], cnt[order], pos[inv]
    return y, ind.astype(np.int64), inv.reshape(-1).astype(np.int64), cnt.astype(np.int64)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("sorted_", [1, 0])
def test_unique_all_outputs(axis, sorted_):
    kw = {"sorted": sorted_}
    if axis is not None:
        kw["axis"] = axis
    node = helper.make_node("Unique", ["x"], ["y", "ind", "inv", "cnt"], **kw)
    m = build([node], [("x", TP.INT64, [6, 3])],
              [("y", TP.INT64), ("ind", TP.INT64), ("inv", TP.INT64), ("cnt", TP.INT64)], opset=11)
    for hi in (3, 2, 5):
        x = RNG.integers(-hi // 2, hi, (6, 3)).astype(np.int64)
        if axis == 0:  # repeat a slice so that there is something to merge
            x[4] = x[1]
        elif axis == 1:
            x[:, 2] = x[:, 0]
        got = run(m, x=x)
        for g, w in zip(got, unique_ref(x, axis, sorted_)):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_unique_floats_sorted():
    m = build([helper.make_node("Unique", ["x"], ["y", "ind", "inv", "cnt"])], [("x", TP.FLOAT, [20])],
              [("y", TP.FLOAT), ("ind", TP.INT64), ("inv", TP.INT64), ("cnt", TP.INT64)], opset=11)
    for k in (3, 7, 20):
        x = RNG.choice(RNG.standard_normal(k).astype(np.float32), 20)
        for g, w in zip(run(m, x=x), unique_ref(x, None, 1)):
            np.testing.assert_array_equal(g, w)


def nms_ref(boxes, scores, max_out, iou, score_thr, center):
    """ONNX's NonMaxSuppression (onnx.reference.ops.op_non_max_suppression), in float32."""
    def corners(b):
        if center:
            return b[0] - b[2] / 2, b[0] + b[2] / 2, b[1] - b[3] / 2, b[1] + b[3] / 2
        return min(b[1], b[3]), max(b[1], b[3]), min(b[0], b[2]), max(b[0], b[2])

    def suppress(b1, b2):
        x1n, x1x, y1n, y1x = corners(b1)
        x2n, x2x, y2n, y2x = corners(b2)
        ixn, ixx, iyn, iyx = max(x1n, x2n), min(x1x, x2x), max(y1n, y2n), min(y1x, y2x)
        if ixx <= ixn or iyx <= iyn:
            return False
        inter = (ixx - ixn) * (iyx - iyn)
        a1, a2 = (x1x - x1n) * (y1x - y1n), (x2x - x2n) * (y2x - y2n)
        union = a1 + a2 - inter
        if inter <= 0 or a1 <= 0 or a2 <= 0 or union <= 0:
            return False
        return inter / union > iou

    out = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            cand = [i for i in range(boxes.shape[1]) if score_thr is None or scores[b, c, i] > score_thr]
            cand.sort(key=lambda i: (-scores[b, c, i], i))
            sel = []
            for i in cand:
                if len(sel) >= max_out:
                    break
                if not any(suppress(boxes[b, i], boxes[b, j]) for j in sel):
                    sel.append(i)
                    out.append((b, c, i))
    return np.array(out, np.int64).reshape(-1, 3)


@pytest.mark.parametrize("center", [0, 1])
def test_nms_against_the_reference(center):
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score"], ["sel"],
                            center_point_box=center)
    m = build([node], [("boxes", TP.FLOAT, [2, 12, 4]), ("scores", TP.FLOAT, [2, 3, 12]), ("max_out", TP.INT64, [1]),
                       ("iou", TP.FLOAT, [1]), ("score", TP.FLOAT, [1])], [("sel", TP.INT64)], opset=11)
    for max_out, iou, thr in ((5, 0.5, 0.2), (12, 0.3, 0.0), (2, 0.7, 0.5), (8, 0.1, -1.0)):
        xy = RNG.random((2, 12, 2)).astype(np.float32) * 4
        wh = RNG.random((2, 12, 2)).astype(np.float32) + 0.5
        boxes = np.concatenate([xy, xy + wh] if not center else [xy, wh], axis=2).astype(np.float32)
        scores = RNG.random((2, 3, 12)).astype(np.float32)
        (sel,) = run(m, boxes=boxes, scores=scores, max_out=np.array([max_out], np.int64),
                     iou=np.array([iou], np.float32), score=np.array([thr], np.float32))
        want = nms_ref(boxes, scores, max_out, np.float32(iou), np.float32(thr), center)
        assert sel.shape == want.shape
        np.testing.assert_array_equal(sel, want)


def test_empty_results():
    # a count of 0 is an empty tensor that flows on (a Transpose over it),
    # and the same module runs non-empty inputs before and after
    nodes = [helper.make_node("Compress", ["x", "c"], ["k"], axis=0), helper.make_node("NonZero", ["k"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["t"])]
    m = build(nodes, [("x", TP.FLOAT, [4, 2]), ("c", TP.BOOL, [4])], [("k", TP.FLOAT), ("t", TP.INT64)], opset=11)
    for c in ([0, 0, 0, 0], [1, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 0]):
        x = sparse((4, 2), 0.5)
        k, t = run(m, x=x, c=np.array(c, bool))
        want = np.compress(np.array(c, bool), x, axis=0)
        assert k.shape == want.shape and t.shape == (np.count_nonzero(want), 2)
        np.testing.assert_array_equal(k, want)
        np.testing.assert_array_equal(t, np.array(np.nonzero(want), np.int64).T)
    # no box selected: max_output_boxes_per_class absent (0)
    m = build([helper.make_node("NonMaxSuppression", ["b", "s"], ["y"])], [("b", TP.FLOAT, [1, 3, 4]), ("s", TP.FLOAT, [1, 1, 3])],
              [("y", TP.INT64)], opset=11)
    (y,) = run(m, b=RNG.random((1, 3, 4)).astype(np.float32), s=RNG.random((1, 1, 3)).astype(np.float32))
    assert y.shape == (0, 3)
