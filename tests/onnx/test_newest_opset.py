"""Models at the newest ONNX opset: a torchvision ResNet-18 and a
torch.nn.TransformerEncoder exported by Debian's PyTorch at the highest
opset it supports, upgraded to the newest opset of the newest onnx release
with onnx.version_converter (run by the venv's Python, build/onnx-venv,
which tests/onnx/newest_suite.sh --setup makes), compiled by Kiln and
compared with PyTorch (max error within 1e-4 of the output's scale), on
fresh random weights and inputs.  The version errors are checked too (an
opset newer than Kiln knows, an op used before its first version; the
message for an op version Kiln does not implement is checked by the unit
test onnx.versions, as every op Kiln maps now implements every version).

Run: bash tests/onnx/newest_suite.sh --setup
     KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_newest_opset.py
"""
import os
import subprocess

import numpy as np
import onnx
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper

from onnx_env import ROOT, KILN, ENV, newest_python

UPGRADE = """
import sys, onnx, onnx.version_converter
m = onnx.load(sys.argv[1])
new = onnx.defs.onnx_opset_version()
m = onnx.version_converter.convert_version(m, new)
onnx.checker.check_model(m)
onnx.save(m, sys.argv[2])
print(new)
"""


def upgrade(src, dst):
    p = subprocess.run([newest_python(), "-c", UPGRADE, src, dst], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return int(p.stdout.strip())


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV)


def compile_run(tmp_path, model, x):
    so = str(tmp_path / "m.so")
    p = kiln("compile", model, "-o", so)
    assert p.returncode == 0, p.stderr
    xp = str(tmp_path / "x.pb")
    with open(xp, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    p = kiln("run", so, "--inputs", xp, "-o", str(tmp_path / "out.npz"))
    assert p.returncode == 0, p.stderr
    with np.load(str(tmp_path / "out.npz")) as z:
        return z[z.files[0]]  # the model's one output, by its ONNX name


def highest_torch_opset():
    from torch.onnx import _constants
    return _constants.ONNX_MAX_OPSET


def check(tmp_path, module, x):
    src, dst = str(tmp_path / "old.onnx"), str(tmp_path / "new.onnx")
    old = highest_torch_opset()
    torch.onnx.export(module, torch.from_numpy(x), src, opset_version=old, input_names=["x"], output_names=["y"])
    new = upgrade(src, dst)
    assert new > old, f"the newest onnx's opset {new} is not above PyTorch's {old}"
    m = onnx.load(dst, load_external_data=False)
    assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [new]
    with torch.no_grad():
        ref = module(torch.from_numpy(x)).numpy()
    got = compile_run(tmp_path, dst, x)
    assert got.shape == ref.shape
    err = np.max(np.abs(got - ref)) / max(1.0, float(np.max(np.abs(ref))))
    assert err <= 1e-4, f"max error {err:.3g} (opset {old} -> {new})"


def test_resnet18_at_the_newest_opset(tmp_path):
    torch.manual_seed(int.from_bytes(os.urandom(2), "little"))
    m = torchvision.models.resnet18(weights=None).eval()
    x = np.random.default_rng().standard_normal((1, 3, 64, 64)).astype(np.float32)
    check(tmp_path, m, x)


def test_transformer_encoder_at_the_newest_opset(tmp_path):
    torch.manual_seed(int.from_bytes(os.urandom(2), "little"))
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    m = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    x = np.random.default_rng().standard_normal((2, 10, 32)).astype(np.float32)
    check(tmp_path, m, x)


def save(tmp_path, node, opset, inputs, outputs, domain_opsets=()):
    g = helper.make_graph([node], "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                          [helper.make_opsetid(d, v) for d, v in domain_opsets])
    p = str(tmp_path / "m.onnx")
    onnx.save(m, p)
    return p


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def test_opset_newer_than_known_is_refused(tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"])
    p = save(tmp_path, node, 99, [vi("x", [3])], [vi("y", [3])])
    r = kiln("compile", p, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0
    assert "ONNX opset 99 is not supported (Kiln supports opsets 1 to" in r.stderr, r.stderr


def test_op_before_its_first_version_is_refused(tmp_path):
    node = helper.make_node("Gelu", ["x"], ["y"])
    p = save(tmp_path, node, 17, [vi("x", [3])], [vi("y", [3])])
    r = kiln("compile", p, "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0
    assert "operator 'Gelu' does not exist at opset 17" in r.stderr, r.stderr


def test_types_only_version_runs(tmp_path):
    # Relu at opset 28 is Relu-14; Acos-22 only added bfloat16: both run
    x = np.random.default_rng().uniform(-0.9, 0.9, (4, 5)).astype(np.float32)
    node = helper.make_node("Acos", ["x"], ["y"])
    p = save(tmp_path, node, 28, [vi("x", [4, 5])], [vi("y", [4, 5])])
    got = compile_run(tmp_path, p, x)
    np.testing.assert_allclose(got, np.arccos(x), rtol=1e-5, atol=1e-6)


def test_schema_table_is_generated_from_the_newest_onnx():
    # src/frontend/onnx/onnx_schema.c (versions, attributes per version,
    # input names) is what tools/onnx_schema_versions.py makes from the
    # newest onnx: an edit by hand or an onnx bump without regenerating fails
    p = subprocess.run([newest_python(), os.path.join(ROOT, "tools", "onnx_schema_versions.py"), "--check"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "up to date" in p.stdout, p.stdout + p.stderr
