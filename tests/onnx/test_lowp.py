"""The low-precision ONNX types (bfloat16, float8 E4M3FN/E4M3FNUZ/E5M2/
E5M2FNUZ, float4 E2M1, int4/uint4/int2/uint2): storage and conversion
(src/frontend/onnx/ops/lowp.c).

test_against_reference runs tests/onnx/lowp_check.py under the venv's
newest onnx (build/onnx-venv, made by bash tests/onnx/newest_suite.sh
--setup): Cast, CastLike, QuantizeLinear and DequantizeLinear to and from
every type on fresh random inputs (ties, overflow, specials), compared bit
for bit with onnx.reference.  The others check the errors: computing with
a carried type, a type Kiln does not carry, a packed tensor of the wrong
size.  Models are built with raw type codes, which Debian's onnx 1.12
predates.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_lowp.py
"""
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_env import KILN, ENV
FLOAT8E4M3FN, INT4, FLOAT8E8M0, FLOAT6E2M3 = 17, 22, 24, 27


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV)


def raw_tensor(name, code, dims, raw):
    """A TensorProto of a type onnx 1.12's make_tensor does not know."""
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, code, raw
    t.dims.extend(dims)
    return t


def save(tmp_path, nodes, inputs, outputs, opset=25, inits=()):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    return p


def test_against_reference(newest_onnx_check):
    newest_onnx_check("lowp_check.py", 60, at_least=True)


def test_compute_on_carried_type_is_refused(tmp_path):
    x = helper.make_tensor_value_info("x", FLOAT8E4M3FN, [4])
    y = helper.make_tensor_value_info("y", FLOAT8E4M3FN, [4])
    m = save(tmp_path, [helper.make_node("Add", ["x", "x"], ["y"])], [x], [y])
    r = kiln("compile", m, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0
    assert "input 0 ('x') is FLOAT8E4M3FN, which Kiln supports only as storage" in r.stderr
    assert "cast it to float before Add" in r.stderr


def test_type_not_carried_is_refused(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", FLOAT6E2M3, [4])
    m = save(tmp_path, [helper.make_node("Cast", ["x"], ["y"], to=FLOAT6E2M3)], [x], [y])
    r = kiln("compile", m, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and "FLOAT6E2M3 has no Kiln equivalent (not supported)" in r.stderr


def test_e8m0_bad_round_mode_is_refused(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", FLOAT8E8M0, [4])
    m = save(tmp_path, [helper.make_node("Cast", ["x"], ["y"], to=FLOAT8E8M0, round_mode="zero")], [x], [y])
    r = kiln("compile", m, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and "round_mode 'zero' is not one of up, down, nearest" in r.stderr, r.stderr


def test_e8m0_against_reference(newest_onnx_check):
    newest_onnx_check("e8m0_check.py", 14)


def test_quantize_output_dtype_must_match_zero_point(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", INT4, [4])
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]),
             raw_tensor("z", FLOAT8E4M3FN, [], b"\x00")]
    m = save(tmp_path, [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], output_dtype=INT4)], [x], [y],
             inits=inits)
    r = kiln("compile", m, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and "output_dtype INT4 differs from the zero point's type FLOAT8E4M3FN" in r.stderr


def test_int4_round_trip_and_bad_packing(tmp_path):
    """An int4 input (packed two a byte in the .pb) cast to int8; a file
    whose raw_data is one byte short is an error naming the sizes."""
    x = helper.make_tensor_value_info("x", INT4, [5])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [5])
    m = save(tmp_path, [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT8)], [x], [y])
    so = str(tmp_path / "m.so")
    assert kiln("compile", m, "-o", so).returncode == 0
    vals = np.array([-8, 7, -1, 3, 0])
    nib = (vals & 15).astype(np.uint8)
    packed = bytes([nib[0] | nib[1] << 4, nib[2] | nib[3] << 4, nib[4]])
    good, bad = tmp_path / "good.pb", tmp_path / "bad.pb"
    good.write_bytes(raw_tensor("x", INT4, [5], packed).SerializeToString())
    bad.write_bytes(raw_tensor("x", INT4, [5], packed[:2]).SerializeToString())
    out = str(tmp_path / "o.npz")
    r = kiln("run", so, "--inputs", str(good), "-o", out)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        np.testing.assert_array_equal(z[z.files[0]], vals.astype(np.int8))
    r = kiln("run", so, "--inputs", str(bad), "-o", out)
    assert r.returncode != 0
    assert "raw_data has 2 bytes, expected 3 for INT4[5] (5 elements, 4 bits each, packed)" in r.stderr
