"""DFT with inverse = 1 and onesided = 1: the inverse real DFT
(src/frontend/onnx/ops/signal.c), against np.fft.irfft, which ONNX's
reference calls.  Fresh random spectra each run: real or complex input,
even and odd lengths, dft_length shorter and longer than the spectrum
implies, the default length 2 (m - 1), opset 17 (axis attribute) and 20
(axis input); bound: max error < 1e-5 * (1 + max |y|).  Then the error.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_irfft.py
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


def build(tmp_path, shape, axis, length, opset, onesided=1, inverse=1):
    inits, names, attrs = [], ["x"], dict(onesided=onesided, inverse=inverse)
    if length is not None:
        inits.append(numpy_helper.from_array(np.array(length, np.int64), "n"))
    if opset >= 20:
        names += ["n" if length is not None else ""]
        inits.append(numpy_helper.from_array(np.array(axis, np.int64), "a"))
        names.append("a")
    else:
        if length is not None:
            names.append("n")
        attrs["axis"] = axis
    g = helper.make_graph([helper.make_node("DFT", names, ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    p = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), p)
    return p


def run(tmp_path, p, x):
    r = subprocess.run([KILN, "compile", p, "-o", str(tmp_path / "m.so")], capture_output=True, text=True, env=ENV)
    if r.returncode:
        return None, r.stderr
    np.save(str(tmp_path / "x.npy"), x)
    o = str(tmp_path / "o.npz")
    r = subprocess.run([KILN, "run", str(tmp_path / "m.so"), "--inputs", str(tmp_path / "x.npy"), "-o", o],
                       capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(o) as z:
        return z[z.files[0]], None


@pytest.mark.parametrize("opset,cplx,length", [(20, True, None), (20, True, "odd"), (20, True, "short"),
                                               (20, False, "long"), (17, True, None), (17, True, "odd")])
def test_irfft_against_numpy(tmp_path, opset, cplx, length):
    rng = np.random.default_rng()
    m = int(rng.integers(3, 12))
    shape = [int(rng.integers(1, 4)), m, int(rng.integers(1, 4)), 2 if cplx else 1]
    axis = 1
    n = {None: None, "odd": 2 * (m - 1) + 1, "short": max(1, m - 2), "long": 2 * m + 3}[length]
    x = rng.standard_normal(shape).astype(np.float32)
    got, err = run(tmp_path, build(tmp_path, shape, axis if opset < 20 else axis - 4, n, opset), x)
    assert err is None, err
    spec = x[..., 0] + (1j * x[..., 1] if cplx else 0)
    want = np.fft.irfft(spec.astype(np.complex128), n=n if n is not None else 2 * (m - 1), axis=axis)[..., None]
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.max(np.abs(got - want)) < 1e-5 * (1 + np.max(np.abs(want))), (n, np.max(np.abs(got - want)))


def test_onesided_complex_forward_is_refused(tmp_path):
    p = build(tmp_path, [1, 8, 2], 1, None, 20, onesided=1, inverse=0)
    _, err = run(tmp_path, p, np.zeros((1, 8, 2), np.float32))
    assert "onesided = 1 with a complex input and inverse = 0 is not supported" in err, err
