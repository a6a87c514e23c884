"""Sequences and optionals as a model's inputs and outputs
(docs/sequences.md): the structure given at compile time (--input-shapes
"s:seq(N)", "s[i]:[...]", "o:none"), the elements bound at run time.
Each model is compiled once and run by `kiln run` on ONNX SequenceProto /
OptionalProto .pb files and by the Python package, on fresh random inputs,
against NumPy; every structure mistake is an error naming the input.

The models are built with onnx's helper; run with /usr/bin/python3."""
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from e2e_common import BUILD, ROOT, kiln

RNG = np.random.default_rng()


def seq_type(shape, dtype=TP.FLOAT):
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(dtype, shape))


def opt_type(inner):
    return helper.make_optional_type_proto(inner)


def save(tmp_path, nodes, ins, outs, name="m", opset=17):
    path = str(tmp_path / f"{name}.onnx")
    g = helper.make_graph(nodes, name, ins, outs)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def seq_map_model(tmp_path):
    """y, w = SequenceMap(s, t) (body: c = a * b + 1, d = Neg(b)), h =
    OptionalHasElement(o), g = OptionalGetElement(o) * 2 (o an optional
    sequence), z = Identity(s)."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["a", "b"], ["m"]), helper.make_node("Add", ["m", "one"], ["c"]),
         helper.make_node("Neg", ["b"], ["d"])], "body",
        [helper.make_tensor_value_info("a", TP.FLOAT, ["N", 3]), helper.make_tensor_value_info("b", TP.FLOAT, [3])],
        [helper.make_tensor_value_info("c", TP.FLOAT, ["N", 3]), helper.make_tensor_value_info("d", TP.FLOAT, [3])],
        [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    nodes = [helper.make_node("SequenceMap", ["s", "t"], ["y", "shapes"], body=body),
             helper.make_node("OptionalHasElement", ["o"], ["h"]),
             helper.make_node("OptionalGetElement", ["o"], ["q"]),
             helper.make_node("SequenceLength", ["q"], ["qlen"]),
             helper.make_node("Identity", ["s"], ["z"])]
    ins = [helper.make_value_info("s", seq_type(["N", 3])), helper.make_tensor_value_info("t", TP.FLOAT, [3]),
           helper.make_value_info("o", opt_type(seq_type([2])))]
    outs = [helper.make_value_info("y", seq_type(["N", 3])), helper.make_value_info("shapes", seq_type([3])),
            helper.make_tensor_value_info("h", TP.BOOL, []), helper.make_tensor_value_info("qlen", TP.INT64, []),
            helper.make_value_info("z", seq_type(["N", 3]))]
    return save(tmp_path, nodes, ins, outs)


def write(tmp_path, name, proto):
    p = str(tmp_path / f"{name}.pb")
    with open(p, "wb") as f:
        f.write(proto.SerializeToString())
    return p


def test_sequence_and_optional_inputs_with_kiln_run(tmp_path):
    """One compile with symbolic element rows runs at fresh element shapes;
    the outputs are saved as y[0], y[1], ... and compared with NumPy."""
    m = seq_map_model(tmp_path)
    so = str(tmp_path / "m.so")
    kiln("compile", m, "-o", so, "--input-shapes", "s:seq(3),s[0]:[A,3],s[1]:[B,3],s[2]:[C,3],o:seq(2)")
    for trial in range(2):
        rows = RNG.integers(1, 9, size=3)
        s = [RNG.standard_normal((int(r), 3)).astype(np.float32) for r in rows]
        t = RNG.standard_normal(3).astype(np.float32)
        o = [RNG.standard_normal(2).astype(np.float32) for _ in range(2)]
        files = [write(tmp_path, "s", numpy_helper.from_list(s, "s")), write(tmp_path, "t", numpy_helper.from_array(t, "t")),
                 write(tmp_path, "o", numpy_helper.from_optional(o, "o"))]
        out = str(tmp_path / "out.npz")
        args = ["run", so, "-o", out]
        for f in files:
            args += ["--inputs", f]
        kiln(*args)
        with np.load(out) as z:
            assert z.files == ["y[0]", "y[1]", "y[2]", "shapes[0]", "shapes[1]", "shapes[2]", "h", "qlen",
                               "z[0]", "z[1]", "z[2]"], z.files
            for i in range(3):
                np.testing.assert_allclose(z[f"y[{i}]"], s[i] * t + 1, rtol=1e-5, atol=1e-6)
                np.testing.assert_array_equal(z[f"shapes[{i}]"], -t)
                np.testing.assert_array_equal(z[f"z[{i}]"], s[i])
            assert bool(z["h"]) and int(z["qlen"]) == 2
    p = kiln("run", so, *sum((["--inputs", f] for f in files), []))
    assert "output 0 (y): sequence of 3: " in p.stdout, p.stdout


def test_structure_errors_name_the_input(tmp_path):
    m = seq_map_model(tmp_path)
    so = str(tmp_path / "m.so")
    p = kiln("compile", m, "-o", so, "--input-shapes", "s[0]:[2,3]", check=False)
    assert p.returncode != 0 and "input 's' is a sequence: give its length with --input-shapes \"s:seq(N)\"" in p.stderr
    p = kiln("compile", m, "-o", so, "--input-shapes", "s:seq(1),s[0]:[2,3],s[4]:[2,3],o:seq(1)", check=False)
    assert p.returncode != 0 and "input shape given for 's[4]', but that input has no such element" in p.stderr
    p = kiln("compile", m, "-o", so, "--input-shapes", "s:seq(1),s[0]:[2,3],t:none,o:seq(1)", check=False)
    assert p.returncode != 0 and "input 't' is a tensor" in p.stderr
    p = kiln("compile", m, "-o", so, "--input-shapes", "s:seq(x)", check=False)
    assert p.returncode != 0 and "bad input structure for 's': expected seq(N)" in p.stderr
    p = kiln("compile", m, "-o", so, "--input-shapes", "s:seq(1),s[0]:[2,3],o:none", check=False)
    assert p.returncode != 0 and "the optional 'o' is empty" in p.stderr
    kiln("compile", m, "-o", so, "--input-shapes", "s:seq(2),s[0]:[2,3],s[1]:[N,3],o:seq(1)")
    t = write(tmp_path, "t", numpy_helper.from_array(np.zeros(3, np.float32), "t"))
    o = write(tmp_path, "o", numpy_helper.from_optional([np.zeros(2, np.float32)], "o"))
    cases = [  # (s's elements, what the error says)
        ([np.zeros((2, 3), np.float32)], "input 's' was compiled as a sequence of 2 tensors, but got 1 tensor"),
        ([np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int32)], "input 's' element 1 ('s[1]')"),
        ([np.zeros((5, 3), np.float32), np.zeros((2, 3), np.float32)], "input 's' element 0 ('s[0]')"),
        ([np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)], "input 's' element 1 ('s[1]')"),
    ]
    for elems, want in cases:
        s = write(tmp_path, "s", numpy_helper.from_list(elems, "s"))
        p = kiln("run", so, "--inputs", s, "--inputs", t, "--inputs", o, check=False)
        assert p.returncode != 0 and want in p.stderr, (want, p.stderr)
    s = write(tmp_path, "s", numpy_helper.from_list([np.zeros((2, 3), np.float32)] * 2, "s"))
    empty = write(tmp_path, "e", numpy_helper.from_optional(None, "o", dtype=onnx.OptionalProto.SEQUENCE))
    p = kiln("run", so, "--inputs", s, "--inputs", t, "--inputs", empty, check=False)
    assert p.returncode != 0 and "input 'o' was compiled as an optional holding a sequence of 1, but got none" in p.stderr
    assert "\"o:none\"" in p.stderr


def test_optional_outputs_and_empty_optional_input(tmp_path):
    """An optional tensor input compiled empty ("o:none") and present; the
    Optional op's output holding a tensor and empty."""
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["h"]),
             helper.make_node("Optional", ["x"], ["ox"]),
             helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(TP.FLOAT, [2])),
             helper.make_node("Relu", ["x"], ["r"])]
    ot = opt_type(helper.make_tensor_type_proto(TP.FLOAT, [2]))
    m = save(tmp_path, nodes, [helper.make_value_info("o", ot), helper.make_tensor_value_info("x", TP.FLOAT, [4])],
             [helper.make_tensor_value_info("h", TP.BOOL, []), helper.make_value_info("ox", ot),
              helper.make_value_info("none", ot), helper.make_tensor_value_info("r", TP.FLOAT, [4])], opset=18)
    x = RNG.standard_normal(4).astype(np.float32)
    xf = write(tmp_path, "x", numpy_helper.from_array(x, "x"))
    for shapes, o, has in (("o:none", None, False), ("", RNG.standard_normal(2).astype(np.float32), True)):
        so = str(tmp_path / "m.so")
        kiln("compile", m, "-o", so, *(["--input-shapes", shapes] if shapes else []))
        of = write(tmp_path, "o", numpy_helper.from_optional(o, "o", dtype=onnx.OptionalProto.TENSOR))
        out = str(tmp_path / "out.npz")
        p = kiln("run", so, "--inputs", of, "--inputs", xf, "-o", out)
        with np.load(out) as z:
            assert z.files == ["h", "ox", "r"], z.files  # the empty optional output has no entry
            assert bool(z["h"]) == has
            np.testing.assert_array_equal(z["ox"], x)
            np.testing.assert_array_equal(z["r"], np.maximum(x, 0))
        p = kiln("run", so, "--inputs", of, "--inputs", xf)
        assert "output 2 (none): none (an empty optional)" in p.stdout, p.stdout


def test_python_set_input_list_and_none_get_output_list_and_none(tmp_path):
    os.environ.setdefault("KILN_LIBRARY_PATH", BUILD)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import kiln as K  # pylint: disable=import-outside-toplevel
    m = seq_map_model(tmp_path)
    mod, params = K.frontend.from_onnx(m, {"s": "seq(2)", "s[0]": ("A", 3), "s[1]": ("B", 3), "o": "seq(1)"})
    lib = K.build(mod, target="cpu", params=params)
    gm = K.graph_executor.GraphModule(lib["default"](K.cpu()))
    assert gm.get_num_outputs() == 5 and gm.get_output_names() == ["y", "shapes", "h", "qlen", "z"]
    for _ in range(2):
        s = [RNG.standard_normal((int(RNG.integers(1, 7)), 3)).astype(np.float32) for _ in range(2)]
        t = RNG.standard_normal(3).astype(np.float32)
        gm.set_input("s", s)
        gm.set_input("t", t)
        gm.set_input("o", [np.zeros(2, np.float32)])
        gm.run()
        y = gm.get_output(0)
        assert isinstance(y, list) and len(y) == 2
        for a, b in zip(y, s):
            np.testing.assert_allclose(a.numpy(), b * t + 1, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal([v.numpy() for v in gm.get_output("shapes")], [-t, -t])
        assert bool(gm.get_output(2).numpy())
    with pytest.raises(K.KilnError, match="input 's' was compiled as a sequence of 2 tensors, but got 3"):
        gm.set_input("s", s + s[:1])
    with pytest.raises(K.KilnError, match=r"input 's' element 1 \('s\[1\]'\)"):
        gm.set_input("s", [s[0], np.zeros((2, 5), np.float32)])
    with pytest.raises(K.KilnError, match="input 'o' was compiled as an optional holding a sequence of 1"):
        gm.set_input("o", None)
    with pytest.raises(K.KilnError, match="input 's' is a sequence"):
        gm.set_input("s", s[0])
    # an optional input compiled empty takes None; its output is None
    ot = opt_type(helper.make_tensor_type_proto(TP.FLOAT, [2]))
    m2 = save(tmp_path, [helper.make_node("Identity", ["o"], ["oo"]), helper.make_node("OptionalHasElement", ["o"], ["h"])],
              [helper.make_value_info("o", ot)], [helper.make_value_info("oo", ot), helper.make_tensor_value_info("h", TP.BOOL, [])],
              name="m2", opset=18)
    mod, params = K.frontend.from_onnx(m2, {"o": "none"})
    gm = K.graph_executor.GraphModule(K.build(mod, target="cpu", params=params)["default"](K.cpu()))
    gm.set_input("o", None)
    gm.run()
    assert gm.get_output(0) is None and not bool(gm.get_output(1).numpy())


def test_split_to_sequence_with_sizes_given_at_run_time(tmp_path):
    """SplitToSequence whose split sizes are an input: their count (the
    input's length) fixes the sequence's length, their values come at run
    time (the parts' sizes along the axis are run-time values)."""
    m = save(tmp_path, [helper.make_node("SplitToSequence", ["x", "split"], ["y"], axis=1)],
             [helper.make_tensor_value_info("x", TP.FLOAT, [2, 9]), helper.make_tensor_value_info("split", TP.INT64, [3])],
             [helper.make_value_info("y", seq_type([2, None]))], opset=12)
    so = str(tmp_path / "m.so")
    kiln("compile", m, "-o", so)
    x = RNG.standard_normal((2, 9)).astype(np.float32)
    xf = write(tmp_path, "x", numpy_helper.from_array(x, "x"))
    for sizes in ([2, 3, 4], [0, 9, 0], [5, 1, 3]):
        sf = write(tmp_path, "split", numpy_helper.from_array(np.array(sizes, np.int64), "split"))
        out = str(tmp_path / "out.npz")
        kiln("run", so, "--inputs", xf, "--inputs", sf, "-o", out)
        with np.load(out) as z:
            assert z.files == ["y[0]", "y[1]", "y[2]"]
            for got, want in zip((z["y[0]"], z["y[1]"], z["y[2]"]), np.split(x, np.cumsum(sizes)[:-1], axis=1)):
                np.testing.assert_array_equal(got, want)
    sf = write(tmp_path, "split", numpy_helper.from_array(np.array([2, 2, 2], np.int64), "split"))
    p = kiln("run", so, "--inputs", xf, "--inputs", sf, check=False)
    assert p.returncode != 0 and "split_2=2" in p.stderr and "would have dimension 1 = -1" in p.stderr, p.stderr


def test_if_on_a_run_time_condition_selects_sequences_of_one_length(tmp_path):
    """Both branches give a sequence of 2: each element is selected by the
    condition given at run time; branches of different lengths need the
    condition at compile time and say why."""
    def branch(name, a, b):
        return helper.make_graph([helper.make_node("SequenceConstruct", [a, b], [name])], name, [],
                                 [helper.make_value_info(name, seq_type([3]))])
    for lens in ((("x", "y"), ("y", "x")), (("x", "y"), ("x", "x"))):
        m = save(tmp_path, [helper.make_node("If", ["c"], ["s"], then_branch=branch("t", *lens[0]),
                                              else_branch=branch("e", *lens[1]))],
                 [helper.make_tensor_value_info("c", TP.BOOL, [1]), helper.make_tensor_value_info("x", TP.FLOAT, [3]),
                  helper.make_tensor_value_info("y", TP.FLOAT, [3])], [helper.make_value_info("s", seq_type([3]))])
        so = str(tmp_path / "m.so")
        kiln("compile", m, "-o", so)
        x, y = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
        env = {"x": x, "y": y}
        for c in (True, False):
            files = [write(tmp_path, n, numpy_helper.from_array(v, n))
                     for n, v in (("c", np.array([c])), ("x", x), ("y", y))]
            out = str(tmp_path / "out.npz")
            kiln("run", so, *sum((["--inputs", f] for f in files), []), "-o", out)
            want = lens[0] if c else lens[1]
            with np.load(out) as z:
                np.testing.assert_array_equal(z["s[0]"], env[want[0]])
                np.testing.assert_array_equal(z["s[1]"], env[want[1]])
    short = helper.make_graph([helper.make_node("SequenceConstruct", ["x"], ["e"])], "e", [],
                              [helper.make_value_info("e", seq_type([3]))])
    m = save(tmp_path, [helper.make_node("If", ["c"], ["s"], then_branch=branch("t", "x", "y"), else_branch=short)],
             [helper.make_tensor_value_info("c", TP.BOOL, [1]), helper.make_tensor_value_info("x", TP.FLOAT, [3]),
              helper.make_tensor_value_info("y", TP.FLOAT, [3])], [helper.make_value_info("s", seq_type([3]))])
    p = kiln("compile", m, "-o", str(tmp_path / "m2.so"), check=False)
    assert p.returncode != 0 and "output 0 is a sequence of 2 in then_branch and of 1 in else_branch" in p.stderr, p.stderr
    assert "--bind" in p.stderr


def test_bound_tensor_input_beside_a_sequence(tmp_path):
    """A tensor input bound at compile time (--bind) is a constant of the
    build, not an input of the module: the sequence's structure lists only
    what is still an input (the module failed to load: "input 'pos' has no
    tensor input")."""
    m = save(tmp_path, [helper.make_node("SequenceAt", ["s", "pos"], ["y"])],
             [helper.make_value_info("s", seq_type([3])), helper.make_tensor_value_info("pos", TP.INT64, [])],
             [helper.make_tensor_value_info("y", TP.FLOAT, [3])])
    pos = write(tmp_path, "pos", numpy_helper.from_array(np.array(1, np.int64), "pos"))
    so = str(tmp_path / "m.so")
    kiln("compile", m, "-o", so, "--input-shapes", "s:seq(2)", "--bind", f"pos={pos}")
    s = [RNG.standard_normal(3).astype(np.float32) for _ in range(2)]
    out = str(tmp_path / "out.npz")
    kiln("run", so, "-o", out, "--inputs", write(tmp_path, "s", numpy_helper.from_list(s, "s")))
    with np.load(out) as z:
        np.testing.assert_array_equal(z["y"], s[1])
