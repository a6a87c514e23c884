"""ONNX Runtime's com.microsoft operators that PyTorch's exporter and ONNX
Runtime's transformer optimizer emit (Gelu, FastGelu, BiasGelu,
SkipLayerNormalization, SkipSimplifiedLayerNormalization,
SimplifiedLayerNormalization, Attention, MultiHeadAttention), compiled by
Kiln and compared with NumPy implementations of ONNX Runtime's contrib
operator specification, on fresh random inputs; and the refusals of what
Kiln does not support (past state).  ONNX's own operators of opset 18 and
later are checked by the newest onnx's node tests
(tests/onnx/newest_suite.sh).

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_contrib_ops.py
"""
import math
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))
RNG = np.random.default_rng()
MS = "com.microsoft"
erf = np.vectorize(math.erf)


def run(tmp_path, nodes, inputs, outputs, inits=(), opset=17):
    """Compile the graph (inputs: [(name, array)]) and run it; the outputs."""
    vis = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    g = helper.make_graph(nodes, "g", vis, outs, initializer=[numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    so = str(tmp_path / "m.so")
    r = subprocess.run([KILN, "compile", p, "-o", so], capture_output=True, text=True, env=ENV)
    if r.returncode:
        return r.stderr
    args = [KILN, "run", so, "-o", str(tmp_path / "o.npz")]
    for n, a in inputs:
        f = str(tmp_path / f"{n}.pb")
        with open(f, "wb") as fh:
            fh.write(numpy_helper.from_array(a, n).SerializeToString())
        args += ["--inputs", f]
    r = subprocess.run(args, capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(str(tmp_path / "o.npz")) as z:
        return [z[n] for n in z.files]  # the outputs in order, under the model's names


def close(got, ref):
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def gelu_ref(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def fast_gelu_ref(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def test_gelu_family(tmp_path):
    x, b = f32(3, 8, scale=2), f32(8)
    y = run(tmp_path, [helper.make_node("Gelu", ["x"], ["y"], domain=MS),
                       helper.make_node("FastGelu", ["x", "b"], ["z"], domain=MS),
                       helper.make_node("BiasGelu", ["x", "b"], ["w"], domain=MS)],
            [("x", x)], ["y", "z", "w"], inits=[("b", b)])
    close(y[0], gelu_ref(x))
    close(y[1], fast_gelu_ref(x + b))
    close(y[2], gelu_ref(x + b))


def layer_norm_ref(s, gamma, beta, eps, simplified=False):
    if simplified:
        return s / np.sqrt((s * s).mean(-1, keepdims=True) + eps) * gamma
    mu = s.mean(-1, keepdims=True)
    var = ((s - mu) ** 2).mean(-1, keepdims=True)
    return (s - mu) / np.sqrt(var + eps) * gamma + beta


def test_skip_layer_norm(tmp_path):
    x, skip, gamma, beta, bias = f32(2, 5, 16), f32(2, 5, 16), f32(16), f32(16), f32(16)
    y, s = run(tmp_path, [helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                                           ["y", "", "", "s"], domain=MS, epsilon=1e-5)],
               [("x", x), ("skip", skip)], ["y", "s"], inits=[("gamma", gamma), ("beta", beta), ("bias", bias)])
    close(s, x + skip + bias)
    close(y, layer_norm_ref(x + skip + bias, gamma, beta, 1e-5))


def test_simplified_layer_norms(tmp_path):
    x, skip, gamma = f32(2, 5, 16), f32(2, 5, 16), f32(16)
    y, z = run(tmp_path, [helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["y"],
                                           domain=MS, epsilon=1e-6),
                          helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["z"], epsilon=1e-6)],
               [("x", x), ("skip", skip)], ["y", "z"], inits=[("gamma", gamma)])
    close(y, layer_norm_ref(x + skip, gamma, None, 1e-6, simplified=True))
    close(z, layer_norm_ref(x, gamma, None, 1e-6, simplified=True))


def attention_ref(q, k, v, heads, bias=None):
    """[B, S, H*D] query/key/value: softmax(q k^T / sqrt(D) + bias) v."""
    B, S, HD = q.shape
    D = HD // heads

    def split(t):
        return t.reshape(B, t.shape[1], heads, -1).transpose(0, 2, 1, 3)
    s = split(q) @ split(k).transpose(0, 1, 3, 2) / math.sqrt(D)
    if bias is not None:
        s = s + bias
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ split(v)).transpose(0, 2, 1, 3).reshape(B, S, -1)


def test_packed_attention(tmp_path):
    B, S, H, heads = 2, 6, 16, 4
    x, w, b = f32(B, S, H), f32(H, 3 * H, scale=0.3), f32(3 * H, scale=0.1)
    mask = np.ones((B, S), np.int32)
    mask[1, 4:] = 0
    g = helper.make_graph([helper.make_node("Attention", ["x", "w", "b", "mask"], ["y"], domain=MS, num_heads=heads)],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, H]),
                                helper.make_tensor_value_info("mask", TensorProto.INT32, [B, S])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    so = str(tmp_path / "m.so")
    r = subprocess.run([KILN, "compile", p, "-o", so], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    files = []
    for n, a in (("x", x), ("mask", mask)):
        f = str(tmp_path / f"{n}.pb")
        with open(f, "wb") as fh:
            fh.write(numpy_helper.from_array(a, n).SerializeToString())
        files += ["--inputs", f]
    r = subprocess.run([KILN, "run", so, *files, "-o", str(tmp_path / "o.npz")], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(str(tmp_path / "o.npz")) as z:
        y = z[z.files[0]]  # the model's one output, by its ONNX name
    qkv = x @ w + b
    bias = np.where(mask[:, None, None, :] != 0, 0.0, -10000.0).astype(np.float32)
    close(y, attention_ref(qkv[..., :H], qkv[..., H:2 * H], qkv[..., 2 * H:], heads, bias))


def test_multi_head_attention(tmp_path):
    B, S, L, H, heads = 2, 5, 7, 12, 3
    q, k, v, b = f32(B, S, H), f32(B, L, H), f32(B, L, H), f32(3 * H, scale=0.1)
    ab = f32(1, heads, S, L)
    (y,) = run(tmp_path, [helper.make_node("MultiHeadAttention", ["q", "k", "v", "b", "", "ab"], ["y"], domain=MS,
                                           num_heads=heads)],
               [("q", q), ("k", k), ("v", v)], ["y"], inits=[("b", b), ("ab", ab)])
    close(y, attention_ref(q + b[:H], k + b[H:2 * H], v + b[2 * H:], heads, ab))


def test_past_state_is_refused(tmp_path):
    B, S, H, heads = 1, 4, 8, 2
    past = f32(2, B, heads, 3, H // heads)
    err = run(tmp_path, [helper.make_node("Attention", ["x", "w", "", "", "past"], ["y"], domain=MS, num_heads=heads)],
              [("x", f32(B, S, H))], ["y"], inits=[("w", f32(H, 3 * H)), ("past", past)])
    assert isinstance(err, str) and "past state, attention bias) is not supported" in err, err
