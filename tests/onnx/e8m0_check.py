"""Cast to and from float8 E8M0 through Kiln against onnx.reference, bit for
bit: float32 and float16 inputs (fresh random magnitudes over the whole
float32 range, plus zeros, subnormals, exact powers of two, the 1.5 ties,
the largest values, Inf and NaN) to E8M0 with each round_mode and
saturate 0/1, and every E8M0 code to float32 and float16.  Runs under the
newest onnx (the venv of tests/onnx/newest_suite.sh); called by
test_lowp.py.

Usage: e8m0_check.py KILN WORKDIR SEED
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
E8M0 = TensorProto.FLOAT8E8M0


def kiln_run(d, m, x):
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "m.onnx")
    onnx.save(m, p)
    np.save(os.path.join(d, "x.npy"), x)
    r = subprocess.run([KILN, "compile", p, "-o", os.path.join(d, "m.so")], capture_output=True, text=True)
    if r.returncode:
        return None, f"compile failed: {r.stderr}"
    r = subprocess.run([KILN, "run", os.path.join(d, "m.so"), "--inputs", os.path.join(d, "x.npy"), "-o",
                        os.path.join(d, "o.npz")], capture_output=True, text=True)
    if r.returncode:
        return None, f"run failed: {r.stderr}"
    with np.load(os.path.join(d, "o.npz")) as z:
        return z[z.files[0]], None


def model(src, dst, n, **attrs):
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=dst, **attrs)], "g",
                          [helper.make_tensor_value_info("x", src, [n])], [helper.make_tensor_value_info("y", dst, [n])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
    m.ir_version = 11
    return m


def inputs(dt):
    info = np.finfo(dt)
    e = RNG.integers(int(np.log2(info.smallest_subnormal)), int(np.log2(info.max)) + 1, size=200)
    x = (RNG.uniform(1, 2, size=200) * np.exp2(e.astype(np.float64))).astype(dt)
    p2 = np.exp2(RNG.integers(int(np.log2(info.tiny)), int(np.log2(info.max)), size=20).astype(np.float64))
    special = [0.0, -0.0, info.smallest_subnormal, info.tiny, info.tiny / 2, info.max, -info.max, np.inf, -np.inf, np.nan,
               1.0, 1.5, 3.0, 0.75, 2.0 ** -127 if dt == np.float32 else 2.0 ** -14, 1.5 * 2.0 ** -127]
    x = np.concatenate([x, p2.astype(dt), (1.5 * p2).astype(dt), np.array(special, dt)])
    sign = np.where(RNG.random(x.size) < 0.3, -1, 1).astype(dt)
    return (x * sign).astype(dt)


cases = 0
fails = []
for src, dt in ((TensorProto.FLOAT, np.float32), (TensorProto.FLOAT16, np.float16)):
    x = inputs(dt)
    for rm in ("up", "down", "nearest"):
        for sat in (0, 1):
            m = model(src, E8M0, x.size, round_mode=rm, saturate=sat)
            want = ReferenceEvaluator(m).run(None, {"x": x})[0].view(np.uint8)
            got, err = kiln_run(os.path.join(WORK, f"{dt.__name__}_{rm}_{sat}"), m, x)
            name = f"{dt.__name__}->E8M0 round_mode={rm} saturate={sat}"
            if err or got.dtype != np.uint8 or not np.array_equal(got.view(np.uint8), want):
                bad = [] if err else np.nonzero(got.view(np.uint8) != want)[0][:5].tolist()
                fails.append(f"{name}: {err or [(float(x[i]), int(got[i]), int(want[i])) for i in bad]}")
            else:
                print(f"ok {name}")
codes = np.arange(256, dtype=np.uint8)
for dst, dt in ((TensorProto.FLOAT, np.float32), (TensorProto.FLOAT16, np.float16)):
    import ml_dtypes
    m = model(E8M0, dst, 256)
    want = ReferenceEvaluator(m).run(None, {"x": codes.view(ml_dtypes.float8_e8m0fnu)})[0]
    got, err = kiln_run(os.path.join(WORK, f"e8m0_to_{dt.__name__}"), m, codes)
    name = f"E8M0->{dt.__name__}"
    if err or got.dtype != want.dtype or not np.array_equal(got, want, equal_nan=True):
        bad = [] if err else np.nonzero(~((got == want) | (np.isnan(got) & np.isnan(want))))[0][:5].tolist()
        fails.append(f"{name}: {err or [(int(i), float(got[i]), float(want[i])) for i in bad]}")
    else:
        print(f"ok {name}")
for f in fails:
    print("FAIL", f)
sys.exit(1 if fails else 0)
