"""ONNX Col2Im (src/frontend/onnx/ops/image.c) against PyTorch's fold on
fresh random inputs, with strides, dilations and (symmetric, as fold
takes them) pads; and its errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_col2im.py
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
KILN = os.path.join(BUILD, "kiln")
ENV = dict(os.environ, KILN_CFLAGS=os.environ.get("KILN_CFLAGS", "-O1 -march=native -fPIC -std=gnu11"))
RNG = np.random.default_rng()


def kiln(*args):
    return subprocess.run([KILN, *args], capture_output=True, text=True, env=ENV)


def model(tmp_path, x_shape, image, block, **attrs):
    inits = [numpy_helper.from_array(np.array(image, np.int64), "image"),
             numpy_helper.from_array(np.array(block, np.int64), "block")]
    g = helper.make_graph([helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    p = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), p)
    return p


@pytest.mark.parametrize("trial", range(3))
def test_col2im_matches_torch_fold(tmp_path, trial):
    n, c = int(RNG.integers(1, 3)), int(RNG.integers(1, 4))
    image = [int(v) for v in RNG.integers(5, 12, 2)]
    block = [int(v) for v in RNG.integers(1, 4, 2)]
    dil = [int(v) for v in RNG.integers(1, 3, 2)]
    stride = [int(v) for v in RNG.integers(1, 3, 2)]
    pad = [int(v) for v in RNG.integers(0, 2, 2)]
    outs = [(image[i] + 2 * pad[i] - dil[i] * (block[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    x = RNG.standard_normal((n, c * block[0] * block[1], outs[0] * outs[1])).astype(np.float32)
    want = torch.nn.functional.fold(torch.from_numpy(x), image, block, dilation=dil, padding=pad,
                                    stride=stride).numpy()
    p = model(tmp_path, x.shape, image, block, dilations=dil, strides=stride, pads=pad + pad)
    so, xin, out = str(tmp_path / "m.so"), str(tmp_path / "x.npy"), str(tmp_path / "o.npz")
    np.save(xin, x)
    r = kiln("compile", p, "-o", so)
    assert r.returncode == 0, r.stderr
    r = kiln("run", so, "--inputs", xin, "-o", out)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        got = z[z.files[0]]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_shape,image,block,attrs,what", [
    ((1, 4, 15), [5, 5], [2, 2], {}, "the number of block positions, 16"),
    ((1, 5, 16), [5, 5], [2, 2], {}, "a multiple of prod(block_shape) = 4"),
    ((1, 4, 16), [5, 5], [2], {}, "image_shape has 2 values and block_shape 1"),
    ((1, 4, 16), [5, 5], [2, 2], {"strides": [0, 1]}, "attribute 'strides'[0] is 0; it must be from 1"),
    ((1, 36, 1), [5, 5], [6, 6], {}, "the block spans 6, more than the padded image's 5"),
])
def test_col2im_errors(tmp_path, x_shape, image, block, attrs, what):
    r = kiln("compile", model(tmp_path, x_shape, image, block, **attrs), "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and what in r.stderr, r.stderr
