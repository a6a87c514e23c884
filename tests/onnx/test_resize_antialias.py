"""Resize with antialias = 1 (src/frontend/onnx/ops/image.c).

test_against_reference runs tests/onnx/resize_antialias_check.py under the
venv's newest onnx (build/onnx-venv, made by bash tests/onnx/newest_suite.sh
--setup): ten random linear/cubic downscales compared with onnx.reference
within a relative error of 1e-5.  The others check the errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_resize_antialias.py
"""
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_env import KILN, ENV


def test_against_reference(newest_onnx_check):
    newest_onnx_check("resize_antialias_check.py", 10)


@pytest.mark.parametrize("attrs,dtype,what", [
    ({"mode": "nearest"}, TensorProto.FLOAT, "antialias = 1 needs mode linear or cubic, got 'nearest'"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, TensorProto.FLOAT,
     "coordinate_transformation_mode 'tf_crop_and_resize' is not supported"),
    ({"mode": "linear"}, TensorProto.INT32, "antialias = 1 needs a floating-point input"),
])
def test_resize_antialias_errors(tmp_path, attrs, dtype, what):
    inits = [numpy_helper.from_array(np.array([], np.float32), "roi"),
             numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")]
    g = helper.make_graph([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], antialias=1, **attrs)], "g",
                          [helper.make_tensor_value_info("x", dtype, [1, 1, 8, 8])],
                          [helper.make_tensor_value_info("y", dtype, None)], inits)
    p = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), p)
    r = subprocess.run([KILN, "compile", p, "-o", str(tmp_path / "m.so")], capture_output=True, text=True, env=ENV)
    assert r.returncode != 0 and what in r.stderr, r.stderr
