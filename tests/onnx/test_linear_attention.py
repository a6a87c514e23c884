"""ONNX LinearAttention (opset 27; src/frontend/onnx/ops/transformer.c)
against a NumPy transcription of its recurrence on fresh random inputs:
the four update rules, GQA, per-head and per-key decay, a past state;
and its errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_linear_attention.py
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))
RNG = np.random.default_rng()


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV)


def heads(x, h):
    b, t, hd = x.shape
    return x.reshape(b, t, h, hd // h).transpose(0, 2, 1, 3).astype(np.float64)


def reference(q, k, v, past, decay, beta, hq, hk, rule):
    b, t, _ = q.shape
    q4, k4, v4 = heads(q, hq), heads(k, hk), heads(v, hk)
    dk, dv = q4.shape[-1], v4.shape[-1]
    s = past.astype(np.float64) if past is not None else np.zeros((b, hk, dk, dv))
    g4 = heads(decay, hk) if decay is not None else None
    b4 = heads(beta, beta.shape[-1]) if beta is not None else None
    out = np.zeros((b, hq, t, dv))
    for i in range(t):
        kt, vt = k4[:, :, i], v4[:, :, i]
        if g4 is not None:
            s = s * np.exp(g4[:, :, i])[..., None]
        if b4 is not None:
            vt = b4[:, :, i] * (vt - np.einsum("bhdm,bhd->bhm", s, kt))
        s = s + kt[..., :, None] * vt[..., None, :]
        out[:, :, i] = np.einsum("bhd,bhdm->bhm", q4[:, :, i], np.repeat(s, hq // hk, axis=1)) / np.sqrt(dk)
    return out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv).astype(np.float32), s.astype(np.float32)


@pytest.mark.parametrize("rule,hq,hk,per_key,past", [("linear", 2, 2, False, False), ("gated", 4, 2, True, True),
                                                     ("delta", 2, 1, False, True), ("gated_delta", 4, 2, False, False)])
def test_linear_attention_matches_numpy(tmp_path, rule, hq, hk, per_key, past):
    b, t, dk, dv = 2, int(RNG.integers(1, 5)), 4, 3
    feeds = {"q": RNG.standard_normal((b, t, hq * dk)).astype(np.float32) * 0.5,
             "k": RNG.standard_normal((b, t, hk * dk)).astype(np.float32) * 0.5,
             "v": RNG.standard_normal((b, t, hk * dv)).astype(np.float32)}
    names = ["q", "k", "v", "", "", ""]
    if past:
        feeds["p"] = RNG.standard_normal((b, hk, dk, dv)).astype(np.float32)
        names[3] = "p"
    if "gated" in rule:
        feeds["g"] = -RNG.uniform(0.05, 1, (b, t, hk * dk if per_key else hk)).astype(np.float32)
        names[4] = "g"
    if "delta" in rule:
        feeds["be"] = RNG.uniform(0.1, 1, (b, t, hk)).astype(np.float32)
        names[5] = "be"
    while names[-1] == "":
        names.pop()
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(feeds[n].shape)) for n in names if n]
    node = helper.make_node("LinearAttention", names, ["y", "s"], q_num_heads=hq, kv_num_heads=hk, update_rule=rule)
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("s", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)])
    m.ir_version = 8
    p, so, out = str(tmp_path / "m.onnx"), str(tmp_path / "m.so"), str(tmp_path / "o.npz")
    onnx.save(m, p)
    r = kiln("compile", p, "-o", so)
    assert r.returncode == 0, r.stderr
    argv = ["run", so, "-o", out]
    for n in names:
        if n:
            argv += ["--inputs", str(tmp_path / f"{n}.npy")]
            np.save(argv[-1], feeds[n])
    r = kiln(*argv)
    assert r.returncode == 0, r.stderr
    want = reference(feeds["q"], feeds["k"], feeds["v"], feeds.get("p"), feeds.get("g"), feeds.get("be"), hq, hk, rule)
    with np.load(out) as z:
        got = [z[f] for f in z.files]
    for gv, wv in zip(got, want):
        np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs,t,what", [
    ({"q_num_heads": 3, "kv_num_heads": 2, "update_rule": "linear"}, 2, "must be a positive multiple of kv_num_heads"),
    ({"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "gated"}, 2, "update_rule 'gated' needs the decay input"),
    ({"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "fast"}, 2, "update_rule 'fast': expected"),
    ({"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"}, 5000, "5000 tokens: Kiln unrolls the recurrence"),
])
def test_linear_attention_errors(tmp_path, attrs, t, what):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, t, 8]) for n in "qkv"]
    g = helper.make_graph([helper.make_node("LinearAttention", ["q", "k", "v"], ["y"], **attrs)], "g", ins,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)])
    m.ir_version = 8
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    r = kiln("compile", p, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and what in r.stderr, r.stderr
