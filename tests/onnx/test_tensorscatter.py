"""ONNX TensorScatter (opset 24; src/frontend/onnx/ops/index.c) against a
NumPy reference on fresh random caches, updates and write indices (fed
at run time: one compiled model, several index vectors), linear and
circular, on the default and another axis; and its errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_tensorscatter.py
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


def reference(past, upd, w, axis, circular):
    out = past.copy()
    s, u = past.shape[axis], upd.shape[axis]
    for b in range(past.shape[0]):
        for i in range(u):
            pos = (w[b] + i) % s if circular else w[b] + i
            dst = [b] + [slice(None)] * (past.ndim - 1)
            src = [b] + [slice(None)] * (past.ndim - 1)
            dst[axis], src[axis] = pos, i
            out[tuple(dst)] = upd[tuple(src)]
    return out


def save(tmp_path, past_shape, upd_shape, w_shape=None, **attrs):
    ins = [helper.make_tensor_value_info("past", TensorProto.FLOAT, list(past_shape)),
           helper.make_tensor_value_info("upd", TensorProto.FLOAT, list(upd_shape))]
    names = ["past", "upd"]
    if w_shape is not None:
        ins.append(helper.make_tensor_value_info("w", TensorProto.INT64, list(w_shape)))
        names.append("w")
    g = helper.make_graph([helper.make_node("TensorScatter", names, ["y"], **attrs)], "g", ins,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(past_shape))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)])
    m.ir_version = 8
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    return p


@pytest.mark.parametrize("mode,axis", [("linear", -2), ("circular", -2), ("circular", 1)])
def test_tensorscatter_matches_numpy(tmp_path, mode, axis):
    b, h, s, d = 3, 2, int(RNG.integers(4, 9)), 5
    u = int(RNG.integers(1, 4))
    past = RNG.standard_normal((b, h, s, d)).astype(np.float32) if axis == -2 else \
        RNG.standard_normal((b, s, h, d)).astype(np.float32)
    ax = axis % 4
    ushape = list(past.shape)
    ushape[ax] = u
    upd = RNG.standard_normal(ushape).astype(np.float32)
    p = save(tmp_path, past.shape, upd.shape, [b], axis=axis, mode=mode)
    so = str(tmp_path / "m.so")
    r = kiln("compile", p, "-o", so)
    assert r.returncode == 0, r.stderr
    for trial in range(2):  # the same module, other write indices
        hi = s if mode == "circular" else s - u + 1
        w = RNG.integers(0, hi, b).astype(np.int64)
        files = []
        for name, a in (("past", past), ("upd", upd), ("w", w)):
            files += ["--inputs", str(tmp_path / f"{name}.npy")]
            np.save(files[-1], a)
        out = str(tmp_path / "o.npz")
        r = kiln("run", so, *files, "-o", out)
        assert r.returncode == 0, r.stderr
        with np.load(out) as z:
            np.testing.assert_array_equal(z[z.files[0]], reference(past, upd, w, ax, mode == "circular"))


@pytest.mark.parametrize("past,upd,w,attrs,what", [
    ((2, 4, 3), (2, 5, 3), [2], {}, "more than the cache's 4"),
    ((2, 4, 3), (2, 2, 4), [2], {}, "differs from past_cache"),
    ((2, 4, 3), (2, 2, 3), [3], {}, "write_indices must be [batch] = [2]"),
    ((2, 4, 3), (2, 2, 3), [2], {"mode": "wrap"}, "mode 'wrap': expected 'linear' or 'circular'"),
    ((2, 4, 3), (2, 2, 3), [2], {"axis": 0}, "axis 0 is the batch axis"),
])
def test_tensorscatter_errors(tmp_path, past, upd, w, attrs, what):
    r = kiln("compile", save(tmp_path, past, upd, w, **attrs), "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and what in r.stderr, r.stderr
