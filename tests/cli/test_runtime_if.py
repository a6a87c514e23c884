"""If on a condition given at run time (src/frontend/onnx/ops/control.c):
both branches are imported and run, each output a select over the
condition, so one build answers either value; branches that disagree in
shape or type, or give sequences of different lengths, need the condition at compile time and
say so.  Each model is compiled once, without --bind, and run by `kiln run`
against NumPy.

The models are built with onnx's helper; run with /usr/bin/python3."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from e2e_common import kiln

RNG = np.random.default_rng(23)


def branch(name, nodes, outs):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in outs])


def model(tmp_path, then_g, else_g, cond_type=TP.BOOL, nout=1, name="m"):
    node = helper.make_node("If", ["c"], [f"y{i}" for i in range(nout)], then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", cond_type, [1]),
                                        helper.make_tensor_value_info("x", TP.FLOAT, [3, 4])],
                          [helper.make_tensor_value_info(f"y{i}", TP.FLOAT, None) for i in range(nout)])
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]), path)
    return path


def run(tmp_path, so, c, x):
    args = ["run", so, "-o", str(tmp_path / "out.npz")]
    for n, a in (("c", c), ("x", x)):
        p = str(tmp_path / f"{n}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
        args += ["--inputs", p]
    kiln(*args)
    with np.load(str(tmp_path / "out.npz")) as z:
        return [z[k] for k in sorted(z.files)]


def two():
    k = helper.make_tensor("k", TP.FLOAT, [], [2.0])
    then_g = branch("then", [helper.make_node("Constant", [], ["two"], value=k),
                             helper.make_node("Mul", ["x", "two"], ["t0"]), helper.make_node("Relu", ["x"], ["t1"])],
                    ["t0", "t1"])
    else_g = branch("else", [helper.make_node("Constant", [], ["two"], value=k),
                             helper.make_node("Add", ["x", "two"], ["e0"]), helper.make_node("Neg", ["x"], ["e1"])],
                    ["e0", "e1"])
    return then_g, else_g


@pytest.mark.parametrize("cond_type,npt", [(TP.BOOL, np.bool_), (TP.INT64, np.int64)])
def test_one_build_takes_either_branch(tmp_path, cond_type, npt):
    so = str(tmp_path / "m.so")
    kiln("compile", model(tmp_path, *two(), cond_type=cond_type, nout=2), "-o", so)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for c in ([True, False, True] if npt is np.bool_ else [3, 0, -1]):
        y0, y1 = run(tmp_path, so, np.array([c], npt), x)
        if c:
            np.testing.assert_allclose(y0, x * 2, rtol=1e-6)
            np.testing.assert_array_equal(y1, np.maximum(x, 0))
        else:
            np.testing.assert_allclose(y0, x + 2, rtol=1e-6)
            np.testing.assert_array_equal(y1, -x)


def test_branches_of_different_shapes_need_the_condition(tmp_path):
    then_g = branch("then", [helper.make_node("Relu", ["x"], ["t0"])], ["t0"])
    else_g = branch("else", [helper.make_node("ReduceSum", ["x"], ["e0"], keepdims=1)], ["e0"])
    p = kiln("compile", model(tmp_path, then_g, else_g), "-o", str(tmp_path / "m.so"), check=False)
    assert p.returncode != 0
    assert "input 0 ('c') must be known at compile time" in p.stderr and "--bind" in p.stderr
    assert "output 0 is Tensor[(3, 4), float32] in then_branch and Tensor[(1, 1), float32] in else_branch" in p.stderr
    # bound at compile time, the model compiles (one branch inlined)
    cpb = str(tmp_path / "c.pb")
    with open(cpb, "wb") as f:
        f.write(numpy_helper.from_array(np.array([False]), "c").SerializeToString())
    kiln("compile", model(tmp_path, then_g, else_g), "-o", str(tmp_path / "m.so"), "--bind", f"c={cpb}")
