"""ai.onnx.preview FlexAttention through Kiln against onnx.reference on
fresh random cases: random batch, head counts (grouped-query attention
among them), sequence lengths and head sizes (V's differing from Q's),
float32, float64 and float16 inputs, a given or default scale, each
softmax_precision (float, double, float16), and score_mod / prob_mod
subgraphs (an additive bias, a causal mask built from the score's Shape,
a soft cap; a probability scale).  Runs under the newest onnx (the venv
of tests/onnx/newest_suite.sh); called by test_flex_attention.py.

Usage: flex_attention_check.py KILN WORKDIR SEED
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

KILN, WORK, SEED = sys.argv[1], sys.argv[2], int(sys.argv[3])
RNG = np.random.default_rng(SEED)
ONNX_T = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}


def c(name, v, t):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_v", t, [], [v]))


def score_mod(kind, t):
    inp = helper.make_tensor_value_info("s", t, None)
    out = helper.make_tensor_value_info("s_out", t, None)
    if kind == "bias":
        nodes = [c("b", float(RNG.uniform(-1, 1)), t), helper.make_node("Add", ["s", "b"], ["s_out"])]
    elif kind == "cap":
        nodes = [c("cap", float(RNG.uniform(0.5, 3)), t), helper.make_node("Div", ["s", "cap"], ["d"]),
                 helper.make_node("Tanh", ["d"], ["th"]), helper.make_node("Mul", ["th", "cap"], ["s_out"])]
    else:  # causal: Where(q >= k, s, -inf), the indices from the score's Shape
        i64 = TensorProto.INT64
        nodes = [helper.make_node("Shape", ["s"], ["sh"]),
                 helper.make_node("Constant", [], ["i2"], value=helper.make_tensor("i2v", i64, [1], [2])),
                 helper.make_node("Constant", [], ["i3"], value=helper.make_tensor("i3v", i64, [1], [3])),
                 helper.make_node("Gather", ["sh", "i2"], ["L"], axis=0), helper.make_node("Gather", ["sh", "i3"], ["S"], axis=0),
                 helper.make_node("Squeeze", ["L"], ["Ls"]), helper.make_node("Squeeze", ["S"], ["Ss"]),
                 c("zero", 0, i64), c("one", 1, i64),
                 helper.make_node("Range", ["zero", "Ls", "one"], ["qr"]), helper.make_node("Range", ["zero", "Ss", "one"], ["kr"]),
                 helper.make_node("Constant", [], ["qs"], value=helper.make_tensor("qsv", i64, [4], [1, 1, -1, 1])),
                 helper.make_node("Constant", [], ["ks"], value=helper.make_tensor("ksv", i64, [4], [1, 1, 1, -1])),
                 helper.make_node("Reshape", ["qr", "qs"], ["qi"]), helper.make_node("Reshape", ["kr", "ks"], ["ki"]),
                 helper.make_node("GreaterOrEqual", ["qi", "ki"], ["m"]), c("ninf", float("-inf"), t),
                 helper.make_node("Where", ["m", "s", "ninf"], ["s_out"])]
    return helper.make_graph(nodes, "score_mod_" + kind, [inp], [out])


def prob_mod(t):
    return helper.make_graph([c("k", float(RNG.uniform(0.5, 2)), t), helper.make_node("Mul", ["p", "k"], ["p_out"])],
                             "prob_mod", [helper.make_tensor_value_info("p", t, None)],
                             [helper.make_tensor_value_info("p_out", t, None)])


def case(k):
    npdt = [np.float32, np.float64, np.float16][k % 3]
    B, hkv, g = int(RNG.integers(1, 3)), int(RNG.integers(1, 3)), int(RNG.choice([1, 2, 3]))
    sq, skv, d, dv = (int(RNG.integers(1, 9)) for _ in range(4))
    if k % 4 == 1:
        sq = skv  # a causal mask over a square score
    attrs = {}
    if RNG.random() < 0.5:
        attrs["scale"] = float(RNG.uniform(0.1, 1))
    sp = [None, 1, 11, 10][k % 4] if npdt != np.float16 else [None, 1][k % 2]
    if sp is not None:
        attrs["softmax_precision"] = sp
    st = {None: TensorProto.DOUBLE if npdt == np.float64 else TensorProto.FLOAT, 1: TensorProto.FLOAT,
          11: TensorProto.DOUBLE, 10: TensorProto.FLOAT16}[sp]
    kind = ["bias", "causal", "cap", None][k % 4]
    if kind:
        attrs["score_mod"] = score_mod(kind, st)
    if k % 3 == 2:
        attrs["prob_mod"] = prob_mod(st)
    t = ONNX_T[npdt]
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], domain="ai.onnx.preview", **attrs)
    shapes = {"Q": [B, hkv * g, sq, d], "K": [B, hkv, skv, d], "V": [B, hkv, skv, dv]}
    gr = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, s) for n, s in shapes.items()],
                           [helper.make_tensor_value_info("Y", t, None)])
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)])
    m.ir_version = 11
    feeds = {n: RNG.standard_normal(s).astype(npdt) for n, s in shapes.items()}
    desc = f"{np.dtype(npdt).name} {shapes} softmax_precision {sp} score_mod {kind} prob_mod {'prob_mod' in attrs}"
    # the bound follows the coarser of the inputs' type and the softmax's precision
    tol = 2e-3 if npdt == np.float16 or st == TensorProto.FLOAT16 else 1e-12 if st == TensorProto.DOUBLE and npdt == np.float64 else 1e-5
    return m, feeds, desc, tol


def run(name, m, feeds, tol):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "m.onnx")
    onnx.save(m, p)
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    np.savez(os.path.join(d, "in.npz"), **feeds)
    r = subprocess.run([KILN, "compile", p, "-o", os.path.join(d, "m.so")], capture_output=True, text=True)
    if r.returncode:
        return f"compile failed: {r.stderr}"
    r = subprocess.run([KILN, "run", os.path.join(d, "m.so"), "--inputs", os.path.join(d, "in.npz"), "-o", os.path.join(d, "o.npz")],
                       capture_output=True, text=True)
    if r.returncode:
        return f"run failed: {r.stderr}"
    with np.load(os.path.join(d, "o.npz")) as z:
        got = z[z.files[0]]
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
    if not np.allclose(got, want, rtol=tol, atol=tol):
        i = np.argmax(~np.isclose(got, want, rtol=tol, atol=tol))
        return f"values differ, e.g. at {np.unravel_index(i, got.shape)}: got {got.ravel()[i]} expected {want.ravel()[i]}"
    return None


fails = 0
for k in range(12):
    m, feeds, desc, tol = case(k)
    why = run(f"c{k}", m, feeds, tol)
    print(("FAIL " if why else "ok ") + f"case {k} ({desc})" + (f": {why}" if why else ""))
    fails += why is not None
sys.exit(1 if fails else 0)
