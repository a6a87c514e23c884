"""ai.onnx.ml Binarizer and ArrayFeatureExtractor (src/frontend/onnx/ops/ml.c).

Fresh random inputs each run, compared with NumPy transcriptions of
onnx.reference's ops (ai/onnx/reference/ops/aionnxml/op_binarizer.py and
op_array_feature_extractor.py: Debian's onnx 1.12 has no reference): exact
for both (a comparison and a gather).  Then the errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_onnx_ml.py
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))
TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int32: TensorProto.INT32,
         np.int64: TensorProto.INT64}


def save(d, node, inputs, inits=()):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TYPES[a.dtype.type], a.shape) for n, a in inputs],
                          [helper.make_tensor_value_info(node.output[0], TensorProto.UNDEFINED, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    m.ir_version = 8
    p = str(d / "m.onnx")
    onnx.save(m, p)
    return p


def run(d, p, inputs):
    r = subprocess.run([KILN, "compile", p, "-o", str(d / "m.so")], capture_output=True, text=True, env=ENV)
    if r.returncode:
        return None, r.stderr
    np.savez(str(d / "in.npz"), **dict(inputs))
    o = str(d / "o.npz")
    r = subprocess.run([KILN, "run", str(d / "m.so"), "--inputs", str(d / "in.npz"), "-o", o], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(o) as z:
        return z[z.files[0]], None


def ref_binarizer(x, threshold):
    y = x.copy()
    cond = y > threshold
    y[cond] = 1
    y[np.logical_not(cond)] = 0
    return y


def ref_afe(data, indices):
    index = indices.ravel().tolist()
    shape = (1, len(index)) if data.ndim == 1 else [*data.shape[:-1], len(index)]
    return data[..., index].reshape(shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_binarizer(tmp_path, dtype):
    rng = np.random.default_rng()
    shape = tuple(int(s) for s in rng.integers(1, 7, size=int(rng.integers(1, 4))))
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        x.flat[0] = np.nan
    th = float(np.float32(rng.uniform(-3, 3)))
    p = save(tmp_path, helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=th), [("x", x)])
    got, err = run(tmp_path, p, [("x", x)])
    assert err is None, err
    want = ref_binarizer(x, np.float32(th))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want), (th, x, got)


@pytest.mark.parametrize("rank,idx_rank", [(1, 1), (2, 1), (3, 2), (2, 0), (4, 3)])
def test_array_feature_extractor(tmp_path, rank, idx_rank):
    rng = np.random.default_rng()
    shape = tuple(int(s) for s in rng.integers(1, 6, size=rank - 1)) + (int(rng.integers(2, 9)),)
    x = rng.standard_normal(shape).astype(np.float32)
    ishape = tuple(int(s) for s in rng.integers(1, 4, size=idx_rank))
    y = rng.integers(-shape[-1], shape[-1], size=ishape).astype(np.int64)
    p = save(tmp_path, helper.make_node("ArrayFeatureExtractor", ["x", "y"], ["z"], domain="ai.onnx.ml"),
             [("x", x), ("y", y)])
    got, err = run(tmp_path, p, [("x", x), ("y", y)])
    assert err is None, err
    want = ref_afe(x, y)
    assert got.shape == want.shape and np.array_equal(got, want), (x.shape, y, got, want)


def test_ml_errors(tmp_path):
    x = np.zeros((2, 4), np.float32)
    p = save(tmp_path, helper.make_node("ArrayFeatureExtractor", ["x", "y"], ["z"], domain="ai.onnx.ml"), [("x", x)],
             [numpy_helper.from_array(np.array([1, 4], np.int64), "y")])
    _, err = run(tmp_path, p, [("x", x)])
    assert "index Y[1] = 4 is outside X's last axis of 4 (allowed: -4 .. 3)" in err, err
    p = save(tmp_path, helper.make_node("ArrayFeatureExtractor", ["x", "y"], ["z"], domain="ai.onnx.ml"),
             [("x", x), ("y", np.zeros(2, np.int32))])
    _, err = run(tmp_path, p, [("x", x)])
    assert "input Y (the indices) must be int64, got int32" in err, err
    p = save(tmp_path, helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.5, bogus=1),
             [("x", x)])
    _, err = run(tmp_path, p, [("x", x)])
    assert "bogus" in err, err
