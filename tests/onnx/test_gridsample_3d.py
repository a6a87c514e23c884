"""Volumetric GridSample (5-D X, [N, Do, Ho, Wo, 3] grid;
src/frontend/onnx/ops/image.c) against torch.nn.functional.grid_sample,
which ONNX's GridSample follows: fresh random inputs, grids reaching past
the volume, modes linear (trilinear) and nearest, align_corners 0 and 1,
every padding_mode; bound: max error < 1e-5 * (1 + max |y|).  Then the
errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_gridsample_3d.py
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))


def build(tmp_path, xs, gs, **attrs):
    g = helper.make_graph([helper.make_node("GridSample", ["x", "g"], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs),
                           helper.make_tensor_value_info("g", TensorProto.FLOAT, gs)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    p = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]), p)
    return p


def run(tmp_path, p, x, grid):
    r = subprocess.run([KILN, "compile", p, "-o", str(tmp_path / "m.so")], capture_output=True, text=True, env=ENV)
    if r.returncode:
        return None, r.stderr
    np.savez(str(tmp_path / "in.npz"), x=x, g=grid)
    o = str(tmp_path / "o.npz")
    r = subprocess.run([KILN, "run", str(tmp_path / "m.so"), "--inputs", str(tmp_path / "in.npz"), "-o", o],
                       capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stderr
    with np.load(o) as z:
        return z[z.files[0]], None


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
def test_gridsample_3d_against_torch(tmp_path, mode, align, pad):
    rng = np.random.default_rng()
    N, C = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    xs = [N, C] + [int(v) for v in rng.integers(2, 6, size=3)]
    gs = [N] + [int(v) for v in rng.integers(1, 5, size=3)] + [3]
    x = rng.standard_normal(xs).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, size=gs).astype(np.float32)
    got, err = run(tmp_path, build(tmp_path, xs, gs, mode=mode, align_corners=align, padding_mode=pad), x, grid)
    assert err is None, err
    want = torch.nn.functional.grid_sample(torch.from_numpy(x), torch.from_numpy(grid),
                                           mode="bilinear" if mode == "linear" else "nearest", padding_mode=pad,
                                           align_corners=bool(align)).numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.max(np.abs(got - want)) < 1e-5 * (1 + np.max(np.abs(want))), np.max(np.abs(got - want))


def test_gridsample_3d_errors(tmp_path):
    x, grid = np.zeros((1, 1, 2, 2, 2), np.float32), np.zeros((1, 1, 1, 1, 3), np.float32)
    _, err = run(tmp_path, build(tmp_path, list(x.shape), list(grid.shape), mode="cubic"), x, grid)
    assert "mode 'cubic' is for 4-D inputs only" in err, err
    _, err = run(tmp_path, build(tmp_path, list(x.shape), [1, 1, 1, 1, 2], mode="linear"), x, grid[..., :2])
    assert "[N, C, D, H, W] and [N, D_out, H_out, W_out, 3]" in err, err
