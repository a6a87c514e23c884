"""ONNX BitCast (src/frontend/onnx/ops/bitcast.c) against NumPy's view()
on fresh random inputs: floats of every magnitude (subnormals included),
+-0, +-Inf and NaN to the integer types of their width and back from
random bit patterns, and the integer types among themselves.  A NaN is
compared as a NaN (Kiln gives the canonical quiet NaN, not the payload).

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_bitcast.py
"""
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto as TP, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))
RNG = np.random.default_rng()
N = 2000
NP = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.INT32: np.int32,
      TP.UINT32: np.uint32, TP.INT64: np.int64, TP.UINT64: np.uint64, TP.INT16: np.int16, TP.UINT16: np.uint16,
      TP.INT8: np.int8, TP.UINT8: np.uint8, TP.BOOL: np.bool_}


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV)


def floats(t):
    fi = np.finfo(t)
    lo, hi = np.log2(float(fi.smallest_subnormal)), np.log2(float(fi.max))
    x = np.exp2(RNG.uniform(lo, hi, N)) * RNG.choice([-1.0, 1.0], N)
    with np.errstate(over="ignore"):
        x = x.astype(t)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, fi.max]
    x[6:8] = [fi.smallest_subnormal, -fi.smallest_subnormal]
    return x


def ints(t):
    ii = np.iinfo(t)
    x = RNG.integers(ii.min, ii.max, N, dtype=t, endpoint=True)
    x[:3] = [ii.min, ii.max, 0]
    return x


CASES = [(TP.FLOAT, TP.INT32), (TP.FLOAT, TP.UINT32), (TP.DOUBLE, TP.INT64), (TP.DOUBLE, TP.UINT64),
         (TP.FLOAT16, TP.INT16), (TP.FLOAT16, TP.UINT16), (TP.INT32, TP.FLOAT), (TP.UINT32, TP.FLOAT),
         (TP.INT64, TP.DOUBLE), (TP.UINT64, TP.DOUBLE), (TP.INT16, TP.FLOAT16), (TP.UINT16, TP.FLOAT16),
         (TP.INT8, TP.UINT8), (TP.UINT8, TP.INT8), (TP.UINT32, TP.INT32), (TP.INT64, TP.UINT64)]


def test_bitcast_matches_numpy_view(tmp_path):
    nodes, ins, outs, feeds = [], [], [], []
    for i, (a, b) in enumerate(CASES):
        x = floats(NP[a]) if np.issubdtype(NP[a], np.floating) else ints(NP[a])
        feeds.append(x)
        ins.append(helper.make_tensor_value_info(f"x{i}", a, [N]))
        nodes.append(helper.make_node("BitCast", [f"x{i}"], [f"y{i}"], to=b))
        outs.append(helper.make_tensor_value_info(f"y{i}", b, [N]))
    m = helper.make_model(helper.make_graph(nodes, "g", ins, outs), opset_imports=[helper.make_opsetid("", 26)])
    m.ir_version = 8
    p, so, out = str(tmp_path / "m.onnx"), str(tmp_path / "m.so"), str(tmp_path / "o.npz")
    onnx.save(m, p)
    r = kiln("compile", p, "-o", so)
    assert r.returncode == 0, r.stderr
    argv = ["run", so, "-o", out]
    for i, x in enumerate(feeds):
        f = str(tmp_path / f"x{i}.npy")
        np.save(f, x)
        argv += ["--inputs", f]
    r = kiln(*argv)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        got = [z[k] for k in z.files]
    for (a, b), x, g in zip(CASES, feeds, got):
        want = x.view(NP[b])
        assert g.dtype == want.dtype, (a, b, g.dtype)
        if np.issubdtype(want.dtype, np.floating):
            nan = np.isnan(want)
            assert (np.isnan(g) == nan).all(), (a, b)
            np.testing.assert_array_equal(g[~nan].view(NP[a]), want[~nan].view(NP[a]), err_msg=f"{a}->{b}")
        elif np.issubdtype(x.dtype, np.floating):  # NaN inputs: Kiln gives a NaN's bits, not the payload
            nan = np.isnan(x)
            assert np.isnan(g[nan].view(x.dtype)).all(), (a, b)
            np.testing.assert_array_equal(g[~nan], want[~nan], err_msg=f"{a}->{b}")
        else:
            np.testing.assert_array_equal(g, want, err_msg=f"{a}->{b}")


def test_bitcast_between_widths_is_refused(tmp_path):
    m = helper.make_model(helper.make_graph([helper.make_node("BitCast", ["x"], ["y"], to=TP.INT16)], "g",
                                            [helper.make_tensor_value_info("x", TP.FLOAT, [4])],
                                            [helper.make_tensor_value_info("y", TP.INT16, [4, 2])]),
                          opset_imports=[helper.make_opsetid("", 26)])
    m.ir_version = 8
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    r = kiln("compile", p, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0
    assert "changes the element width (32 to 16 bits) and so the shape: not supported" in r.stderr
