"""Malformed ONNX nodes get a clear error naming the op and the node, never
a crash: every operator of the importer's table with its inputs missing,
given as '' where they are required, or too many; every operator with an
attribute its version does not have, and attributes misplaced (an input
at the node's version), of the wrong type, missing or given twice; shapes
too large for Kiln's 32-bit index arithmetic; open (-1) input dimensions.

The table is read from src/frontend/onnx/ops/table.c, so a new row is
covered without touching this file.  Run with /usr/bin/python3 (Debian's
onnx); KILN_BUILD_DIR selects the build (default build/)."""
import concurrent.futures
import os
import re
import subprocess
import tempfile

import onnx
import pytest
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KILN = os.path.join(os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build")), "kiln")
TABLE = os.path.join(ROOT, "src", "frontend", "onnx", "ops", "table.c")
TRAINING = "ai.onnx.preview.training"

ROW = re.compile(r'^\s*\{(""|TRAINING|MS), "(\w+)", (\d+), (\d+), onnx_h_\w+, (\d+), (V|\d+), ([^}]+)\}')
DOMAINS = {'""': "", "TRAINING": TRAINING, "MS": "com.microsoft"}


def table_rows():
    """(domain, op, since, min, max or None, optional input set) per row."""
    rows = []
    for line in open(TABLE):
        m = ROW.match(line)
        if not m:
            continue
        dom, op, since, _until, lo, hi, opt = m.groups()
        optional = {int(i) for i in re.findall(r"O\((\d+)\)", opt)}
        rows.append((DOMAINS[dom], op, int(since), int(lo), None if hi == "V" else int(hi), optional))
    return rows


def latest_rows():
    """The newest row of each op that Kiln's opset range reaches."""
    best = {}
    for r in table_rows():
        key = (r[0], r[1])
        if key not in best or r[2] > best[key][2]:
            best[key] = r
    return sorted(best.values(), key=lambda r: r[1])


def write_model(path, node, opset, inputs, outputs=("y",), domain=""):
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in inputs],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs])
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    m = helper.make_model(g, opset_imports=imports)
    m.ir_version = 8
    onnx.save(m, path)


def show(path, *extra):
    return subprocess.run([KILN, "show", path, *extra], capture_output=True, text=True, timeout=60)


def check_clean_error(p, *needles):
    """A failed import: exit 1, one line on stderr naming what it must."""
    assert p.returncode == 1, f"exit {p.returncode} (a crash is negative or >= 128):\n{p.stderr}"
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("kiln show: "), p.stderr
    for n in needles:
        assert n in lines[0], f"expected {n!r} in: {lines[0]}"


def mutations(row):
    """(label, input names, expected text) for a row's bad arities."""
    dom, op, since, lo, hi, optional = row
    out = []
    if lo > 0:
        out.append(("no inputs", [], "has 0 inputs"))
    if lo > 1:
        out.append(("too few", ["x%d" % i for i in range(lo - 1)], "has %d input" % (lo - 1)))
    for i in range(lo):
        if i not in optional:
            names = ["x%d" % k for k in range(lo)]
            names[i] = ""
            out.append(("input %d empty" % i, names, "input %d is required" % i))
            break  # one required position per op keeps the test fast; the check is the same for all
    if hi is not None:
        out.append(("too many", ["x%d" % (i % 2) for i in range(hi + 1)], "has %d input" % (hi + 1)))
    return out


def test_every_op_bad_arity(tmp_path):
    cases = []
    for row in latest_rows():
        dom, op, since = row[0], row[1], row[2]
        opset = max(since, 7) if not dom else 17
        tag = (dom.replace(".", "_") + "_" if dom else "") + op
        for k, (label, names, expect) in enumerate(mutations(row)):
            path = str(tmp_path / f"{tag}_{k}.onnx")
            node = helper.make_node(op, names, ["y"], name=f"bad_{tag}_{k}", domain=dom)
            write_model(path, node, opset, sorted({n for n in names if n}) or ["x0"], domain=dom)
            cases.append((op, label, path, f"bad_{tag}_{k}", expect))
    assert len({c[0] for c in cases}) > 150, "the table should have well over 150 ops"
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
        results = list(ex.map(lambda c: show(c[2]), cases))
    bad = []
    for (op, label, path, name, expect), p in zip(cases, results):
        try:
            check_clean_error(p, op, f"node '{name}'", expect)
        except AssertionError as e:
            bad.append(f"{op} ({label}): {e}")
    assert not bad, f"{len(bad)} of {len(cases)} cases:\n" + "\n".join(bad[:20])


def test_every_op_unknown_attribute(tmp_path):
    # each op of the table, at its newest row's first version, with an
    # attribute no version of any op has: refused, naming the attribute,
    # the op, its version and the node (onnx_attr_check.c)
    cases = []
    for dom, op, since, lo, hi, optional in latest_rows():
        opset = max(since, 7) if not dom else 17
        tag = (dom.replace(".", "_") + "_" if dom else "") + op
        path = str(tmp_path / f"{tag}.onnx")
        names = ["x%d" % i for i in range(lo)]
        node = helper.make_node(op, names, ["y"], name=f"attr_{tag}", domain=dom, kiln_no_such_attribute=1)
        write_model(path, node, opset, names or ["x0"], domain=dom)
        cases.append((op, path, f"attr_{tag}"))
    assert len(cases) > 150
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
        results = list(ex.map(lambda c: show(c[1]), cases))
    bad = []
    open_ops = {"LayerNormalization", "SimplifiedLayerNormalization"}  # see test_open_attributes_warn
    for (op, path, name), p in zip(cases, results):
        try:
            if op in open_ops:
                assert p.returncode == 0 and "attribute 'kiln_no_such_attribute' is not one of" in p.stderr, p.stderr
                continue
            check_clean_error(p, f"{op} node '{name}'", "attribute 'kiln_no_such_attribute' is not an attribute of "
                              f"{op} version", "remove it or correct its name")
        except AssertionError as e:
            bad.append(f"{op}: {e}")
    assert not bad, f"{len(bad)} of {len(cases)} cases:\n" + "\n".join(bad[:20])


def one_node(tmp_path, op, inputs, opset, initializers=(), domain="", **attrs):
    path = str(tmp_path / f"{op}.onnx")
    node = helper.make_node(op, inputs, ["y"], name="n1", domain=domain, **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(initializers))
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=imports)
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_attribute_now_an_input(tmp_path):
    # ReduceSum's axes is an attribute at versions 1 and 11 and input 1 from
    # 13: reading it at 13 would reduce over the wrong axes
    path = one_node(tmp_path, "ReduceSum", ["a"], 13, axes=[1])
    check_clean_error(show(path), "ReduceSum node 'n1' (opset 13)", "attribute 'axes' is not an attribute of "
                      "ReduceSum version 13", "as an attribute at versions 1, 11, and at version 13 as input 1",
                      "give it as the node's input 1")
    # at opset 11 the same node is ReduceSum-11's and imports
    p = show(one_node(tmp_path, "ReduceSum", ["a"], 11, axes=[1]))
    assert p.returncode == 0 and "sum(%p0, axis=[1], keepdims=1)" in p.stdout, p.stdout + p.stderr
    # Clip's min became an input at 11
    check_clean_error(show(one_node(tmp_path, "Clip", ["a"], 13, min=0.0)), "Clip node 'n1'",
                      "attribute 'min' is not an attribute of Clip version 13", "as input 1")


def test_attribute_of_older_versions_only(tmp_path):
    # BatchNormalization's spatial was dropped at 9
    ins = ["a", "s", "b", "m", "v"]
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [3], [1, 1, 1]) for n in ins[1:]]
    path = one_node(tmp_path, "BatchNormalization", ins, 14, inits, spatial=1)
    check_clean_error(show(path), "BatchNormalization node 'n1'", "attribute 'spatial' is not an attribute of "
                      "BatchNormalization version 14", "of BatchNormalization versions 1, 6, 7 only",
                      "import the model at an opset where")


@pytest.mark.parametrize("case", ["type", "required", "twice", "contrib", "contrib_required"])
def test_attribute_errors(tmp_path, case):
    if case == "type":  # Softmax's axis as a float
        path = one_node(tmp_path, "Softmax", ["a"], 13, axis=1.0)
        need = ("attribute 'axis' is FLOAT, but Softmax version 13 takes it as INT",)
    elif case == "required":
        path = one_node(tmp_path, "Cast", ["a"], 13)
        need = ("required attribute 'to' (INT) is missing: Cast version 13 needs it",)
    elif case == "twice":
        path = one_node(tmp_path, "Softmax", ["a"], 13)
        m = onnx.load(path)
        m.graph.node[0].attribute.extend([helper.make_attribute("axis", 1), helper.make_attribute("axis", 0)])
        onnx.save(m, path)
        need = ("attribute 'axis' is given twice",)
    elif case == "contrib":  # ONNX Runtime's ops: the table's own lists
        inits = [helper.make_tensor(n, TensorProto.FLOAT, [3], [1, 1, 1]) for n in ("skip", "g")]
        path = one_node(tmp_path, "SkipLayerNormalization", ["a", "skip", "g"], 13, inits, "com.microsoft",
                        epsilon=1e-5, axis=-1)
        need = ("SkipLayerNormalization node 'n1'", "attribute 'axis' is not an attribute of SkipLayerNormalization "
                "version 1 (its attributes: epsilon)")
    else:
        w = helper.make_tensor("w", TensorProto.FLOAT, [3, 9], [0.0] * 27)
        path = one_node(tmp_path, "Attention", ["a", "w"], 13, [w], "com.microsoft")
        need = ("required attribute 'num_heads' (INT) is missing: Attention version 1 needs it",)
    check_clean_error(show(path), "node 'n1'", *need)


def test_open_attributes_warn(tmp_path):
    # LayerNormalization-17 accepts attributes it does not list (ONNX's
    # schema allows them), as ONNX Runtime's LayerNormalization-1 and
    # SimplifiedLayerNormalization do: imported, with a warning naming it
    inits = [helper.make_tensor("g", TensorProto.FLOAT, [3], [1, 1, 1])]
    for op, opset, version in [("LayerNormalization", 17, 17), ("LayerNormalization", 13, 1),
                               ("SimplifiedLayerNormalization", 13, 1)]:
        p = show(one_node(tmp_path, op, ["a", "g"], opset, inits, epsilon=1e-5, kiln_extra=1))
        assert p.returncode == 0, p.stderr
        assert (f"kiln: warning: {op} node 'n1': attribute 'kiln_extra' is not one of {op} version {version}'s "
                "(axis, epsilon, stash_type); ignored") in p.stderr, p.stderr
        # their listed attributes are still checked for type
        p = show(one_node(tmp_path, op, ["a", "g"], opset, inits, epsilon=1))
        check_clean_error(p, f"attribute 'epsilon' is INT, but {op} version {version} takes it as FLOAT")


def test_unnamed_node(tmp_path):
    # the loader names an unnamed node after its op and position
    path = str(tmp_path / "m.onnx")
    write_model(path, helper.make_node("MatMul", ["a"], ["logits"]), 13, ["a"], outputs=("logits",))
    check_clean_error(show(path), "MatMul node 'MatMul_0'", "has 1 input")


def test_open_dimension_minus_one(tmp_path):
    # some exporters write an open dimension as -1: it is dynamic, and
    # --input-shapes gives its size
    path = str(tmp_path / "neg.onnx")
    g = helper.make_graph([helper.make_node("Relu", ["a"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [-1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    check_clean_error(show(path), "input 'a' has a dynamic dimension 0", "--input-shapes")
    p = show(path, "--input-shapes", "a:[4,3]")
    assert p.returncode == 0 and "Tensor[(4, 3), float32]" in p.stdout, p.stdout + p.stderr
    # other negative sizes are still errors
    g.input[0].type.tensor_type.shape.dim[0].dim_value = -2
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    p = show(path, "--input-shapes", "a:[4,3]")
    assert p.returncode == 1 and "negative" in p.stderr, p.stderr


def test_shapes_beyond_32_bit_indexing(tmp_path):
    path = str(tmp_path / "big.onnx")
    g = helper.make_graph([helper.make_node("Relu", ["a"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    # 2^31 elements: refused (generated code indexes with 32-bit integers)
    p = show(path, "--input-shapes", "a:[715827883,3]")
    assert p.returncode == 1 and "more than Kiln supports" in p.stderr and "input 'a'" in p.stderr, p.stderr
    p = show(path, "--input-shapes", "a:[715827882,3]")  # 2^31 - 2 elements is allowed
    assert p.returncode == 0, p.stderr
    # 2^63 does not fit: an error, not a silent clamp
    p = show(path, "--input-shapes", "a:[9223372036854775808,3]")
    assert p.returncode == 1 and "does not fit in 64 bits" in p.stderr, p.stderr
    # a product that overflows 64 bits
    p = show(path, "--input-shapes", "a:[9223372036854775807,3]")
    assert p.returncode == 1 and "more than Kiln supports" in p.stderr, p.stderr
    # a call whose result is too large (Expand to 2^32 elements)
    expand = str(tmp_path / "expand.onnx")
    shape = helper.make_tensor("s", TensorProto.INT64, [3], [65536, 65536, 3])
    g = helper.make_graph([helper.make_node("Expand", ["a", "s"], ["y"], name="ex")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), expand)
    p = show(expand)
    assert p.returncode == 1 and "more than Kiln supports" in p.stderr and "'ex'" in p.stderr, p.stderr


@pytest.mark.parametrize("case", ["pad-sum-overflows-int64", "pad-beyond-32-bit-offsets", "tile-repeats-overflow",
                                  "conv-fold-huge-padded-intermediate", "conv-dilation-overflow",
                                  "convtranspose-stride-overflow", "maxpool-dilation-overflow",
                                  "tfidf-huge-ngram-index"])
def test_sizes_from_attributes_and_inputs(case):
    # models kept in tests/fuzz/regressions/onnx: sizes computed from pads,
    # repeats, strides and dilations beyond 64 bits or 32-bit offsets, and
    # a constant Conv whose padded intermediate would take 12 GB to fold
    p = show(os.path.join(ROOT, "tests", "fuzz", "regressions", "onnx", case + ".onnx"))
    need = {"pad-sum-overflows-int64": "pads[0] = 4611686018427387904 is beyond +-(2^31 - 1)",
            "pad-beyond-32-bit-offsets": "pads[0] = 1099511627776 is beyond +-(2^31 - 1)",
            "tile-repeats-overflow": "repeating axis 0 (3) 4611686018427387904 times overflows 64 bits",
            "conv-fold-huge-padded-intermediate": "more than evaluating at compile time may hold (KILN_EVAL_MEMORY_MB",
            "conv-dilation-overflow": "attribute 'dilations'[0] is 4611686018427387904; it must be from 1 to 2^31 - 1",
            "convtranspose-stride-overflow": "attribute 'strides'[0] is 4611686018427387904; it must be from 1 to 2^31 - 1",
            "maxpool-dilation-overflow": "attribute 'dilations'[0] is 4611686018427387904; it must be from 1 to 2^31 - 1",
            "tfidf-huge-ngram-index": "a 3623706618-element matrix: Kiln maps TfIdfVectorizer to a dense product"}
    check_clean_error(p, need[case])


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), 1e30, -2.0])
def test_resize_scale_out_of_range(tmp_path, scale):
    path = str(tmp_path / "resize.onnx")
    scales = helper.make_tensor("sc", TensorProto.FLOAT, [4], [1, 1, scale, 2])
    roi = helper.make_tensor("roi", TensorProto.FLOAT, [0], [])
    g = helper.make_graph([helper.make_node("Resize", ["a", "roi", "sc"], ["y"], name="rz")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [scales, roi])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    check_clean_error(show(path), "Resize node 'rz'", "axis 2")
