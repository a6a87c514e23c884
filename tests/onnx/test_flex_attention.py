"""ai.onnx.preview FlexAttention (src/frontend/onnx/ops/transformer.c).

test_against_reference runs tests/onnx/flex_attention_check.py under the
venv's newest onnx (build/onnx-venv, made by bash tests/onnx/newest_suite.sh
--setup): 12 fresh random cases (float32/float64/float16, grouped-query
heads, every softmax_precision, score_mod and prob_mod subgraphs) compared
with onnx.reference.  The others check that malformed nodes are clear
errors.  Models are built with Debian's onnx 1.12, which writes the node
without knowing the op.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_flex_attention.py
"""
import subprocess

import pytest
from onnx import TensorProto, helper

from onnx_env import KILN, ENV


def test_against_reference(newest_onnx_check):
    newest_onnx_check("flex_attention_check.py", 12)


def mod_graph(nout=1, shape_change=False):
    nodes = [helper.make_node("Identity", ["s"], ["o0"])]
    if shape_change:
        nodes = [helper.make_node("ReduceSum", ["s"], ["o0"], keepdims=1)]
    outs = [helper.make_tensor_value_info("o0", TensorProto.FLOAT, None)]
    for i in range(1, nout):
        nodes.append(helper.make_node("Identity", ["s"], [f"o{i}"]))
        outs.append(helper.make_tensor_value_info(f"o{i}", TensorProto.FLOAT, None))
    return helper.make_graph(nodes, "mod", [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)], outs)


def compile_err(tmp_path, q, k, v, **attrs):
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], domain="ai.onnx.preview", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                        for n, s in (("Q", q), ("K", k), ("V", v))],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.preview", 1)])
    m.ir_version = 10
    p = str(tmp_path / "m.onnx")
    with open(p, "wb") as f:
        f.write(m.SerializeToString())
    return subprocess.run([KILN, "compile", p, "-o", str(tmp_path / "m.so")], capture_output=True, text=True, env=ENV)


S4 = [1, 2, 3, 4]


@pytest.mark.parametrize("q,k,v,attrs,what", [
    ([2, 3, 4], [2, 3, 4], [2, 3, 4], {}, "Q, K and V must be rank-4"),
    (S4, [1, 2, 3, 5], S4, {}, "do not agree"),
    ([1, 3, 3, 4], S4, S4, {}, "3 query heads cannot be grouped over 2 key/value heads"),
    (S4, S4, S4, {"softmax_precision": 16}, "softmax_precision 16 is not supported"),
    (S4, S4, S4, {"score_mod": mod_graph(2)}, "score_mod must have one input and one output, got 1 and 2"),
    (S4, S4, S4, {"prob_mod": mod_graph(shape_change=True)}, "prob_mod must return a tensor of its input's shape"),
])
def test_errors(tmp_path, q, k, v, attrs, what):
    r = compile_err(tmp_path, q, k, v, **attrs)
    assert r.returncode != 0
    assert "FlexAttention" in r.stderr and what in r.stderr, r.stderr


def test_plain_compiles(tmp_path):
    r = compile_err(tmp_path, S4, S4, S4, scale=0.5)
    assert r.returncode == 0, r.stderr
