"""Range in float16 (src/frontend/onnx/ops/tensor.c).

onnx.reference computes Range as np.arange(start, limit, delta) on float16
scalars, so the length, the second element and the step follow NumPy's
float16 arange; Kiln must match it bit for bit.  Fresh random start/limit/
delta each run (both signs of delta), then the errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_range_float16.py
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


TYPES = {np.float16: TensorProto.FLOAT16, np.float32: TensorProto.FLOAT}


def model(tmp_path, start, limit, delta, dtype=np.float16):
    inits = [numpy_helper.from_array(np.array(v, dtype), n) for v, n in ((start, "s"), (limit, "l"), (delta, "d"))]
    g = helper.make_graph([helper.make_node("Range", ["s", "l", "d"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TYPES[dtype], None)], inits)
    p = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), p)
    return p


def run(tmp_path, p):
    r = subprocess.run([KILN, "compile", p, "-o", str(tmp_path / "m.so")], capture_output=True, text=True, env=ENV)
    if r.returncode:
        return None, r.stderr
    o = str(tmp_path / "o.npz")
    r = subprocess.run([KILN, "run", str(tmp_path / "m.so"), "-o", o], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(o) as z:
        return z[z.files[0]], None


def test_range_float16_random(tmp_path):
    rng = np.random.default_rng()
    for k in range(6):
        start = np.float16(rng.uniform(-50, 50))
        delta = np.float16(rng.uniform(0.05, 3) * (1 if k % 2 == 0 else -1))
        limit = np.float16(start + delta * rng.uniform(1, 200))
        want = np.arange(np.array(start), np.array(limit), np.array(delta)).astype(np.float16)
        d = tmp_path / f"c{k}"
        d.mkdir()
        got, err = run(d, model(d, start, limit, delta))
        assert err is None, err
        assert got.dtype == np.float16 and got.shape == want.shape, (start, limit, delta, got.shape, want.shape)
        # bit for bit: the reference is NumPy's float16 arange
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), (start, limit, delta, got, want)


def test_range_float16_errors(tmp_path):
    _, err = run(tmp_path, model(tmp_path, 0.0, 1.0, 0.0))
    assert "delta is zero" in err, err
    _, err = run(tmp_path, model(tmp_path, 0.0, 3.0e9, 1.0, np.float32))
    assert "would have" in err and "at most 2^31" in err, err
