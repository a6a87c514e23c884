"""Numbers a model carries reach the importer's arithmetic only through its
checked conversions (src/frontend/onnx/import_checked.c): an attribute or
constant element out of its operator's range (negative, beyond 32 or 64
bits, NaN or infinite where an integer is needed, a list longer than the
rank it describes) is an error naming the node, the attribute or input and
the value, never undefined behaviour, a huge allocation or a silently
truncated result.  Values at the edge of int64 that are valid give the
exact result.

Each case is also kept as a model under tests/fuzz/regressions/onnx/
(checked-NAME.onnx), which the fuzz phase replays under AddressSanitizer
and UndefinedBehaviorSanitizer; `/usr/bin/python3
tests/onnx/test_checked_values.py` writes them.  Run with /usr/bin/python3
(Debian's onnx); KILN_BUILD_DIR selects the build (default build/)."""
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KILN = os.path.join(os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build")), "kiln")
REGRESSIONS = os.path.join(ROOT, "tests", "fuzz", "regressions", "onnx")
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def model(nodes, inputs, inits=(), opset=18, outputs=("y",)):
    g = helper.make_graph(nodes, "g", inputs, [vi(o, TensorProto.FLOAT, None) for o in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def scan_body(n_in, n_out):
    ins = [vi(f"b{i}", TensorProto.FLOAT, [3]) for i in range(n_in)]
    nodes = [helper.make_node("Identity", [f"b{i % n_in}"], [f"o{i}"]) for i in range(n_out)]
    return helper.make_graph(nodes, "body", ins, [vi(f"o{i}", TensorProto.FLOAT, [3]) for i in range(n_out)])


X23 = [vi("x", TensorProto.FLOAT, [2, 3])]


def int4_without_data(n):
    t = onnx.TensorProto()
    t.name, t.data_type = "w", 22  # INT4 (onnx 1.12 has no name for it)
    t.dims.extend([n])
    m = model([helper.make_node("Identity", ["w"], ["y"])], [], [t], opset=21)
    m.ir_version = 10
    return m


# name -> (model, the texts the error line must hold; None: imports cleanly)
CASES = {
    # an attribute far beyond any count: was truncated to int and sized an allocation
    "scan-num-scan-inputs-huge": (
        model([helper.make_node("Scan", ["s", "x"], ["y", "z"], name="n", body=scan_body(2, 2),
                                num_scan_inputs=2**40 + 1)],
              [vi("s", TensorProto.FLOAT, [3]), vi("x", TensorProto.FLOAT, [4, 3])], opset=11, outputs=("y", "z")),
        ["Scan node 'n'", "attribute 'num_scan_inputs' is 1099511627777", "it must be from 1 to 2"]),
    # a list longer than the scan outputs: was read past its end
    "scan-output-directions-short": (
        model([helper.make_node("Scan", ["s", "x"], ["y", "z"], name="n", body=scan_body(2, 3),
                                num_scan_inputs=1, scan_output_directions=[0])],
              [vi("s", TensorProto.FLOAT, [3]), vi("x", TensorProto.FLOAT, [4, 3])], opset=11, outputs=("y", "z")),
        ["scan_output_directions has 1 values for 2 scan outputs"]),
    "topk-k-beyond-axis": (
        model([helper.make_node("TopK", ["x", "k"], ["y", "i"], name="n")], X23,
              [const("k", [2**62], np.int64)], outputs=("y", "i")),
        ["TopK node 'n'", "input 1 ('k') is 4611686018427387904; it must be from 0 to 3"]),
    "onehot-depth-infinite": (
        model([helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="n")], [vi("i", TensorProto.INT64, [3])],
              [const("d", np.inf, np.float32), const("v", [0, 1], np.float32)]),
        ["OneHot node 'n'", "input 1 ('d') is inf"]),
    "loop-trip-count-nan": (
        model([helper.make_node("Loop", ["m", ""], ["y"], name="n",
                                body=helper.make_graph([helper.make_node("Identity", ["c"], ["co"])], "b",
                                                       [vi("it", TensorProto.INT64, []), vi("c", TensorProto.BOOL, [])],
                                                       [vi("co", TensorProto.BOOL, [])]))],
              [], [const("m", np.nan, np.float32)], opset=13, outputs=()),
        ["Loop node 'n'", "input 0 ('m') is nan"]),
    "cast-to-beyond-int": (
        model([helper.make_node("Cast", ["x"], ["y"], name="n", to=2**32 + 1)], X23),
        ["Cast node 'n'", "attribute 'to' is 4294967297"]),
    "eyelike-dtype-beyond-int": (
        model([helper.make_node("EyeLike", ["x"], ["y"], name="n", dtype=2**33 + 1)], X23),
        ["EyeLike node 'n'", "attribute 'dtype' is 8589934593", "not an ONNX data type"]),
    # more split sizes than the handler's table: was copied, then read past it
    "split-65-sizes": (
        model([helper.make_node("Split", ["x"], [f"y{i}" for i in range(65)], name="n", axis=1, split=[0] * 64 + [3])],
              X23, opset=11, outputs=tuple(f"y{i}" for i in range(65))),
        ["Split node 'n'", "attribute 'split' has 65 values; it may have at most 64"]),
    # more axes than dimensions: was copied into an 8-entry stack array
    "slice-v1-axes-too-many": (
        model([helper.make_node("Slice", ["x"], ["y"], name="n", starts=[0], ends=[1], axes=list(range(9)))], X23, opset=9),
        ["Slice node 'n'", "attribute 'axes' has 9 values; it may have at most 8"]),
    "col2im-pads-beyond-int64": (
        model([helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], name="n", pads=[2**62, 2**62, 0, 0])],
              [vi("x", TensorProto.FLOAT, [1, 4, 4])], [const("img", [3, 3], np.int64), const("blk", [2, 2], np.int64)]),
        ["Col2Im node 'n'", "attribute 'pads'[0] is 4611686018427387904"]),
    # batch dimensions that differ: the batch offsets were written past their constant
    "gathernd-batch-mismatch": (
        model([helper.make_node("GatherND", ["x", "i"], ["y"], name="n", batch_dims=1)],
              [vi("x", TensorProto.FLOAT, [4, 3]), vi("i", TensorProto.INT64, [1, 1])]),
        ["GatherND node 'n'", "differ in batch dimension 0"]),
    "gathernd-batch-dims-huge": (
        model([helper.make_node("GatherND", ["x", "i"], ["y"], name="n", batch_dims=I64_MAX)],
              [vi("x", TensorProto.FLOAT, [4, 3]), vi("i", TensorProto.INT64, [4, 1])]),
        ["attribute 'batch_dims' is 9223372036854775807; it must be from 0 to 1"]),
    "maxunpool-kernel-beyond-int32": (
        model([helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="n", kernel_shape=[2**40, 2])],
              [vi("x", TensorProto.FLOAT, [1, 1, 2, 2]), vi("i", TensorProto.INT64, [1, 1, 2, 2])]),
        ["MaxUnpool node 'n'", "attribute 'kernel_shape'[0] is 1099511627776"]),
    "lstm-sequence-too-long": (
        model([helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="n", hidden_size=1)],
              [vi("x", TensorProto.FLOAT, [5000, 1, 1])],
              [const("w", np.zeros((1, 4, 1)), np.float32), const("r", np.zeros((1, 4, 1)), np.float32)]),
        ["LSTM node 'n'", "a sequence of 5000 steps", "at most 4096"]),
    # was cut at 4096 parts without a word
    "split-to-sequence-too-many-parts": (
        model([helper.make_node("SplitToSequence", ["x", "c"], ["s"], name="n", axis=0),
               helper.make_node("SequenceLength", ["s"], ["y"])],
              [vi("x", TensorProto.FLOAT, [5000])], [const("c", 1, np.int64)]),
        ["SplitToSequence node 'n'", "more than 4096 parts"]),
    "melweightmatrix-edge-nan": (
        model([helper.make_node("MelWeightMatrix", ["m", "l", "r", "lo", "hi"], ["y"], name="n")], [],
              [const("m", 4, np.int64), const("l", 16, np.int64), const("r", 8000, np.int64),
               const("lo", 0, np.float32), const("hi", np.nan, np.float32)]),
        ["MelWeightMatrix node 'n'", "mel bin 0 (from lower_edge_hertz 0, upper_edge_hertz nan) is nan"]),
    "sequence-at-position-beyond-int64": (
        model([helper.make_node("SequenceConstruct", ["x"], ["s"]),
               helper.make_node("SequenceAt", ["s", "p"], ["y"], name="n")], X23, [const("p", 2**63, np.uint64)]),
        ["SequenceAt node 'n'", "input 1 ('p') is 9223372036854775808; it must be from -1 to 0"]),
    "stft-step-float-huge": (
        model([helper.make_node("STFT", ["x", "st", "", "fl"], ["y"], name="n")],
              [vi("x", TensorProto.FLOAT, [1, 16, 1])], [const("st", 1e30, np.float32), const("fl", 4, np.int64)],
              opset=17),
        ["STFT node 'n'", "input 1 ('st') is 1e+30"]),
    "conv-group-beyond-int32": (
        model([helper.make_node("Conv", ["x", "w"], ["y"], name="n", group=2**40)],
              [vi("x", TensorProto.FLOAT, [1, 1, 4, 4])], [const("w", np.zeros((1, 1, 3, 3)), np.float32)]),
        ["Conv node 'n'", "attribute 'group' is 1099511627776"]),
    "multinomial-sample-size-huge": (
        model([helper.make_node("Multinomial", ["x"], ["y"], name="n", sample_size=2**31)],
              [vi("x", TensorProto.FLOAT, [2, 3])]),
        ["Multinomial node 'n'", "attribute 'sample_size' is 2147483648"]),
    "randomuniform-shape-product-overflows": (
        model([helper.make_node("RandomUniform", [], ["y"], name="n", shape=[2**31 - 1] * 4)], []),
        ["RandomUniform node 'n'", "the output of shape (2147483647, 2147483647, 2147483647, 2147483647)"]),
    "affinegrid-size-negative": (
        model([helper.make_node("AffineGrid", ["t", "s"], ["y"], name="n")], [vi("t", TensorProto.FLOAT, [1, 2, 3])],
              [const("s", [1, 1, -4, 4], np.int64)], opset=20),
        ["AffineGrid node 'n'", "input 1 ('s')[2] is -4; it must be from 0 to"]),
    # a packed 4-bit tensor's byte count overflowed 64 bits (and 2^62 bytes were allocated)
    "int4-initializer-huge-no-data": (
        int4_without_data(2**62),
        ["tensor 'w': int32_data has 0 values, expected 2305843009213693952 packed bytes for INT4[4611686018427387904]"]),
    # block_size^2 overflowed int64 in the type relation
    "depthtospace-blocksize-2-to-32": (
        model([helper.make_node("DepthToSpace", ["x"], ["y"], name="n", blocksize=2**32)],
              [vi("x", TensorProto.FLOAT, [1, 4, 2, 2])]),
        ["DepthToSpace node 'n'", "attribute 'blocksize' is 4294967296; it must be from 1 to 2^31 - 1"]),
    "spacetodepth-blocksize-empty-input": (
        model([helper.make_node("SpaceToDepth", ["x"], ["y"], name="n", blocksize=2**40)],
              [vi("x", TensorProto.FLOAT, [1, 2, 0, 0])]),
        ["SpaceToDepth node 'n'", "attribute 'blocksize' is 1099511627776"]),
    "lrn-size-beyond-int32": (
        model([helper.make_node("LRN", ["x"], ["y"], name="n", size=2**40)], [vi("x", TensorProto.FLOAT, [1, 2, 2, 2])]),
        ["LRN node 'n'", "attribute 'size' is 1099511627776"]),
    # valid values at int64's edges: exact, not through doubles
    "range-int64-extremes": (
        model([helper.make_node("Range", ["a", "b", "d"], ["y"], name="n")], [],
              [const("a", I64_MIN, np.int64), const("b", I64_MAX, np.int64), const("d", 2**62, np.int64)]),
        None),
    "trilu-k-int64-min": (
        model([helper.make_node("Trilu", ["x", "k"], ["y"], name="n")], X23, [const("k", I64_MIN, np.int64)], opset=14),
        None),
    # a region of interest of any value (inf, NaN) samples outside the input
    "resize-crop-roi-infinite": (
        model([helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], name="n",
                                coordinate_transformation_mode="tf_crop_and_resize")],
              [vi("x", TensorProto.FLOAT, [1, 1, 4, 4])],
              [const("roi", [0, 0, -np.inf, np.nan, 1, 1, np.inf, 1e300], np.float32),
               const("sz", [1, 1, 3, 3], np.int64)], opset=13),
        None),
}


def show(path):
    return subprocess.run([KILN, "show", path], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", sorted(CASES))
def test_checked_values(tmp_path, name):
    m, needles = CASES[name]
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(m, path)
    p = show(path)
    if needles is None:
        assert p.returncode == 0, p.stderr
        return
    assert p.returncode == 1, f"exit {p.returncode} (a crash is negative or >= 128):\n{p.stderr}"
    lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith("kiln: warning:")]
    assert len(lines) == 1 and lines[0].startswith("kiln show: "), p.stderr
    for n in needles:
        assert n in lines[0], f"expected {n!r} in: {lines[0]}"


def test_range_int64_extremes_exact(tmp_path):
    # start -2^63, limit 2^63 - 1, delta 2^62: four elements, the last two
    # reached through an intermediate (3 * 2^62) beyond int64.  The import
    # folds Range and NonZero; the Reshape to [4] type-checks only when all
    # four elements equal the expected ones.
    want = [I64_MIN, -(2**62), 0, 2**62]
    m = model([helper.make_node("Range", ["a", "b", "d"], ["r"]), helper.make_node("Equal", ["r", "w"], ["eq"]),
               helper.make_node("NonZero", ["eq"], ["nz"]), helper.make_node("Reshape", ["nz", "four"], ["f"]),
               helper.make_node("Add", ["x", "f"], ["y"])],
              [vi("x", TensorProto.INT64, [4])],
              [const("a", I64_MIN, np.int64), const("b", I64_MAX, np.int64), const("d", 2**62, np.int64),
               const("w", want, np.int64), const("four", [4], np.int64)])
    path = str(tmp_path / "range.onnx")
    onnx.save(m, path)
    p = show(path)
    assert p.returncode == 0, p.stderr
    bad = model(m.graph.node, [vi("x", TensorProto.INT64, [4])],
                [const("a", I64_MIN, np.int64), const("b", I64_MAX, np.int64), const("d", 2**62, np.int64),
                 const("w", [I64_MIN, -(2**62), 0, 2**62 + 1], np.int64), const("four", [4], np.int64)])
    onnx.save(bad, path)
    assert show(path).returncode == 1  # the check can fail


def test_regressions_are_kept():
    for name in CASES:
        assert os.path.exists(os.path.join(REGRESSIONS, f"checked-{name}.onnx")), name


if __name__ == "__main__":
    for name, (m, _) in CASES.items():
        onnx.save(m, os.path.join(REGRESSIONS, f"checked-{name}.onnx"))
    print(f"wrote {len(CASES)} models to {REGRESSIONS}", file=sys.stderr)
