"""ONNX's random operators (src/frontend/onnx/ops/random.c) by their
statistics: ONNX's reference draws with NumPy's generator, which Kiln does
not reproduce, so its draws are checked the way a generator is - large
samples against the distribution (Kolmogorov-Smirnov distance, mean and
variance within 5 standard errors, a chi-square over Multinomial's
classes), the support, seeds (the same seed draws the same numbers, other
seeds and unseeded nodes differ) - with fresh random parameters each run.
Thresholds sit at p < 1e-5 for a correct generator, so a failure means a
broken one, not bad luck.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_random.py
"""
import math
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
N = 200_000


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV)


def run(tmp_path, nodes, inputs, outputs, feeds=(), opset=15, tag="m"):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                          opset_imports=[helper.make_opsetid("", opset)])
    p, so, out = str(tmp_path / f"{tag}.onnx"), str(tmp_path / f"{tag}.so"), str(tmp_path / f"{tag}.npz")
    onnx.save(m, p)
    r = kiln("compile", p, "-o", so)
    assert r.returncode == 0, r.stderr
    argv = ["run", so, "-o", out]
    for i, a in enumerate(feeds):
        f = str(tmp_path / f"{tag}_in{i}.npy")
        np.save(f, a)
        argv += ["--inputs", f]
    r = kiln(*argv)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        return [z[k] for k in z.files]


def ks_distance(x, cdf):
    x = np.sort(x.astype(np.float64))
    f = cdf(x)
    n = x.size
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


KS_LIMIT = 2.4 / math.sqrt(N)  # Kolmogorov's distribution: P(D > 2.4/sqrt(n)) ~ 2e-5


def test_random_uniform(tmp_path):
    lo = float(RNG.uniform(-5, 0))
    hi = lo + float(RNG.uniform(0.5, 10))
    seed = float(RNG.integers(0, 1000))
    y = run(tmp_path, [helper.make_node("RandomUniform", [], ["y"], shape=[N], low=lo, high=hi, seed=seed)], [],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])])[0]
    assert y.dtype == np.float32 and y.shape == (N,)
    # low and high are float attributes: the model holds them in float32,
    # and lo + u * (hi - lo) rounded to float32 may land on either bound
    assert y.min() >= np.float32(lo) and y.max() <= np.float32(hi)
    assert ks_distance(y, lambda v: (v - lo) / (hi - lo)) < KS_LIMIT
    se = (hi - lo) / math.sqrt(12 * N)
    assert abs(y.mean() - (lo + hi) / 2) < 5 * se
    # neighbouring elements are not correlated
    c = np.corrcoef(y[:-1], y[1:])[0, 1]
    assert abs(c) < 5 / math.sqrt(N)


def test_random_normal_and_seeds(tmp_path):
    mean, scale = float(RNG.uniform(-3, 3)), float(RNG.uniform(0.5, 4))
    nodes = [helper.make_node("RandomNormal", [], ["a"], shape=[N], mean=mean, scale=scale, seed=7.0),
             helper.make_node("RandomNormal", [], ["b"], shape=[N], mean=mean, scale=scale, seed=7.0),
             helper.make_node("RandomNormal", [], ["c"], shape=[N], mean=mean, scale=scale, seed=8.0),
             helper.make_node("RandomNormal", [], ["d"], shape=[N], mean=mean, scale=scale),
             helper.make_node("RandomNormal", [], ["e"], shape=[N], mean=mean, scale=scale, dtype=TensorProto.DOUBLE)]
    outs = [helper.make_tensor_value_info(n, TensorProto.DOUBLE if n == "e" else TensorProto.FLOAT, [N])
            for n in "abcde"]
    a, b, c, d, e = run(tmp_path, nodes, [], outs)
    assert e.dtype == np.float64
    np.testing.assert_array_equal(a, b)  # same seed, same numbers
    assert np.mean(a == c) < 0.01 and np.mean(a == d) < 0.01 and np.mean(d == e) < 0.01
    erf = np.vectorize(math.erf)
    for y in (a, c, d, e):
        assert abs(y.mean() - mean) < 5 * scale / math.sqrt(N)
        assert abs(y.std() / scale - 1) < 5 / math.sqrt(2 * N)
        assert ks_distance(y, lambda v: 0.5 * (1 + erf((v - mean) / (scale * math.sqrt(2))))) < KS_LIMIT


def test_random_like_takes_shape_and_type(tmp_path):
    x = np.zeros((3, 50, 40), np.float64)
    y = run(tmp_path, [helper.make_node("RandomUniformLike", ["x"], ["y"], low=2.0, high=3.0)],
            [helper.make_tensor_value_info("x", TensorProto.DOUBLE, list(x.shape))],
            [helper.make_tensor_value_info("y", TensorProto.DOUBLE, list(x.shape))], feeds=[x])[0]
    assert y.dtype == np.float64 and y.shape == x.shape and y.min() >= 2 and y.max() < 3
    assert len(np.unique(y)) > 0.99 * y.size


def test_bernoulli(tmp_path):
    p = RNG.uniform(0, 1, N).astype(np.float32)
    p[:100], p[100:200] = 0, 1
    y = run(tmp_path, [helper.make_node("Bernoulli", ["p"], ["y"], seed=float(RNG.integers(0, 100)))],
            [helper.make_tensor_value_info("p", TensorProto.FLOAT, [N])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])], feeds=[p])[0]
    assert y.dtype == np.float32 and np.isin(y, [0, 1]).all()
    assert (y[:100] == 0).all() and (y[100:200] == 1).all()
    sd = math.sqrt(float(np.sum(p * (1 - p))))
    assert abs(float(y.sum()) - float(p.sum())) < 5 * sd
    # the draws follow p: the high-p half has many more ones
    hi = p > 0.5
    assert y[hi].mean() > 0.7 and y[~hi].mean() < 0.3


def test_multinomial(tmp_path):
    logits = RNG.normal(0, 1.5, (2, 5)).astype(np.float32)
    n = 50_000
    y = run(tmp_path, [helper.make_node("Multinomial", ["x"], ["y"], sample_size=n, seed=3.0,
                                        dtype=TensorProto.INT64)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
            [helper.make_tensor_value_info("y", TensorProto.INT64, [2, n])], feeds=[logits])[0]
    assert y.dtype == np.int64 and y.shape == (2, n) and y.min() >= 0 and y.max() <= 4
    for b in range(2):
        prob = np.exp(logits[b] - logits[b].max())
        prob /= prob.sum()
        counts = np.bincount(y[b], minlength=5)
        chi2 = float(np.sum((counts - n * prob) ** 2 / (n * prob)))
        assert chi2 < 30, (counts, n * prob)  # 4 degrees of freedom: P(chi2 > 30) ~ 5e-6


def test_training_dropout(tmp_path):
    ratio = float(RNG.uniform(0.1, 0.9))
    x = RNG.standard_normal(N).astype(np.float32)
    r = helper.make_tensor("r", TensorProto.FLOAT, [], [ratio])
    t = helper.make_tensor("t", TensorProto.BOOL, [], [True])
    nodes = [helper.make_node("Constant", [], ["r"], value=r), helper.make_node("Constant", [], ["t"], value=t),
             helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], seed=5)]
    y, m = run(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N]),
                helper.make_tensor_value_info("m", TensorProto.BOOL, [N])], feeds=[x], opset=13)
    assert m.dtype == np.bool_
    np.testing.assert_allclose(y[m], x[m] / (1 - ratio), rtol=1e-6)
    assert (y[~m] == 0).all()
    assert abs(m.mean() - (1 - ratio)) < 5 * math.sqrt(ratio * (1 - ratio) / N)


@pytest.mark.parametrize("node,inputs,what", [
    (helper.make_node("RandomUniform", [], ["y"]), [], "required attribute 'shape' (INTS) is missing"),
    (helper.make_node("RandomUniform", [], ["y"], shape=[2, -1]), [], "shape[1] is -1"),
    (helper.make_node("RandomUniform", [], ["y"], shape=[2], dtype=TensorProto.INT32), [], "not a float type"),
    (helper.make_node("RandomUniform", [], ["y"], shape=[2], low=1.0, high=0.0), [], "high (0) is below low (1)"),
    (helper.make_node("Bernoulli", ["x"], ["y"]), [("x", TensorProto.INT32)], "must be a float tensor"),
    (helper.make_node("Multinomial", ["x"], ["y"], sample_size=0), [("x", TensorProto.FLOAT)], "attribute 'sample_size' is 0; it must be from 1"),
    (helper.make_node("Multinomial", ["x"], ["y"], dtype=TensorProto.FLOAT), [("x", TensorProto.FLOAT)],
     "Multinomial outputs int32 or int64"),
])
def test_bad_random_nodes_are_clear_errors(tmp_path, node, inputs, what):
    m = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, [2, 3]) for n, t in inputs],
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                          opset_imports=[helper.make_opsetid("", 15)])
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    r = kiln("compile", p, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and what in r.stderr, r.stderr
