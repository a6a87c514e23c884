"""Resize with antialias = 1 through Kiln against onnx.reference, on fresh
random inputs: linear and cubic, downscaling (and one upscaled axis),
scales or sizes, every coordinate_transformation_mode Kiln takes,
exclude_outside and cubic_coeff_a.  Runs under the newest onnx (the venv
of tests/onnx/newest_suite.sh); called by test_resize_antialias.py.

Usage: resize_antialias_check.py KILN WORKDIR SEED
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

KILN, WORK, SEED = sys.argv[1], sys.argv[2], int(sys.argv[3])
RNG = np.random.default_rng(SEED)
MODES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"]


def run_case(k):
    mode = ["linear", "cubic"][k % 2]
    ctm = MODES[(k // 2) % len(MODES)]
    shape = [int(RNG.integers(1, 3)), int(RNG.integers(1, 4)), int(RNG.integers(5, 17)), int(RNG.integers(5, 17))]
    use_sizes = k % 3 == 0
    attrs = dict(mode=mode, antialias=1, coordinate_transformation_mode=ctm,
                 exclude_outside=int(RNG.integers(0, 2)))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = float(RNG.choice([-0.75, -0.5]))
    inits = [numpy_helper.from_array(np.array([], np.float32), "roi")]
    if use_sizes:
        sizes = [shape[0], shape[1], int(RNG.integers(1, shape[2])), int(RNG.integers(2, shape[3] + 4))]
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        names = ["x", "roi", "", "sizes"]
    else:
        scales = [1.0, 1.0, float(RNG.choice([0.3, 0.5, 0.6, 0.75, 0.8])), float(RNG.choice([0.25, 0.4, 0.7, 1.5]))]
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        names = ["x", "roi", "scales"]
    g = helper.make_graph([helper.make_node("Resize", names, ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    d = os.path.join(WORK, f"c{k}")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "m.onnx")
    onnx.save(m, p)
    x = RNG.standard_normal(shape).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.save(os.path.join(d, "x.npy"), x)
    r = subprocess.run([KILN, "compile", p, "-o", os.path.join(d, "m.so")], capture_output=True, text=True)
    if r.returncode:
        return f"compile failed: {r.stderr}"
    r = subprocess.run([KILN, "run", os.path.join(d, "m.so"), "--inputs", os.path.join(d, "x.npy"), "-o",
                        os.path.join(d, "o.npz")], capture_output=True, text=True)
    if r.returncode:
        return f"run failed: {r.stderr}"
    with np.load(os.path.join(d, "o.npz")) as z:
        got = z[z.files[0]]
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-6))
    return None if err < 1e-5 else f"relative error {err:.3g}"


bad = 0
for k in range(10):
    why = run_case(k)
    print(("ok " if why is None else "FAIL ") + f"case {k}" + ("" if why is None else f": {why}"))
    bad += why is not None
sys.exit(1 if bad else 0)
