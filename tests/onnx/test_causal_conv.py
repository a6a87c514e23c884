"""ONNX CausalConvWithState (opset 27; src/frontend/onnx/ops/nn.c)
against a NumPy reference on fresh random inputs: with and without bias
and past state, SiLU or none, kernel sizes 1 to 4; and its errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_causal_conv.py
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


def reference(x, w, b, past, act):
    k = w.shape[2]
    pad = past if past is not None else np.zeros(x.shape[:2] + (k - 1,), x.dtype)
    p = np.concatenate([pad, x], axis=2).astype(np.float64)
    out = sum(w[None, :, 0, j, None] * p[:, :, j:j + x.shape[2]] for j in range(k))
    if b is not None:
        out = out + b[None, :, None]
    if act == "silu":
        out = out / (1 + np.exp(-out))
    return out.astype(np.float32), p[:, :, p.shape[2] - (k - 1):].astype(np.float32)


def build(tmp_path, shapes, names, act):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in zip(names, shapes) if n]
    node = helper.make_node("CausalConvWithState", names, ["y", "state"], activation=act)
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                             helper.make_tensor_value_info("state", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)])
    m.ir_version = 8
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    return p


@pytest.mark.parametrize("k,bias,past,act", [(4, True, True, "silu"), (3, False, True, "none"),
                                             (2, True, False, "none"), (1, False, False, "silu")])
def test_causal_conv_matches_numpy(tmp_path, k, bias, past, act):
    bsz, c, length = int(RNG.integers(1, 3)), int(RNG.integers(1, 6)), int(RNG.integers(1, 9))
    x = RNG.standard_normal((bsz, c, length)).astype(np.float32)
    w = RNG.standard_normal((c, 1, k)).astype(np.float32)
    b = RNG.standard_normal(c).astype(np.float32) if bias else None
    ps = RNG.standard_normal((bsz, c, k - 1)).astype(np.float32) if past else None
    names = ["x", "w", "b" if bias else "", "past" if past else ""]
    while names[-1] == "":
        names.pop()
    vals = {"x": x, "w": w, "b": b, "past": ps}
    p = build(tmp_path, [vals[n].shape if n else () for n in names], names, act)
    so, out = str(tmp_path / "m.so"), str(tmp_path / "o.npz")
    r = kiln("compile", p, "-o", so)
    assert r.returncode == 0, r.stderr
    argv = ["run", so, "-o", out]
    for n in names:
        if n:
            f = str(tmp_path / f"{n}.npy")
            np.save(f, vals[n])
            argv += ["--inputs", f]
    r = kiln(*argv)
    assert r.returncode == 0, r.stderr
    want_y, want_s = reference(x, w, b, ps, act)
    with np.load(out) as z:
        got = [z[f] for f in z.files]
    np.testing.assert_allclose(got[0], want_y, rtol=1e-5, atol=1e-5)
    assert got[1].shape == want_s.shape
    np.testing.assert_array_equal(got[1], want_s)


@pytest.mark.parametrize("shapes,names,act,what", [
    ([(1, 3, 5), (3, 2, 4)], ["x", "w"], "none", "weight must be [channels = 3, 1, k >= 1]"),
    ([(1, 3, 5), (3, 1, 4), (3,), (1, 3, 2)], ["x", "w", "b", "p"], "none", "past_state must be [batch, channels, k - 1]"),
    ([(1, 3, 5), (3, 1, 4)], ["x", "w"], "relu", "activation 'relu': expected 'none', 'silu' or 'swish'"),
    ([(3, 5), (3, 1, 4)], ["x", "w"], "none", "input must be [batch, channels, length]"),
])
def test_causal_conv_errors(tmp_path, shapes, names, act, what):
    r = kiln("compile", build(tmp_path, shapes, names, act), "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and what in r.stderr, r.stderr
