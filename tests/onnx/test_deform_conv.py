"""ONNX DeformConv (src/frontend/onnx/ops/nn.c) against a NumPy reference
written from the operator's specification, on fresh random inputs: groups,
offset groups, strides, dilations, asymmetric pads, mask and bias, with
offsets large enough that samples fall outside the image; and its errors.

Run: KILN_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/onnx/test_deform_conv.py
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


def bilinear(img, y, x):
    """img [H, W] at real (y, x); each of the four neighbours outside is 0."""
    h, w = img.shape
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    v = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                v += wy * wx * float(img[yy, xx])
    return v


def reference(X, W, off, B, mask, group, og, strides, dils, pads):
    n, c, h, w = X.shape
    oc, cpg, kh, kw = W.shape
    oh, ow = off.shape[2:]
    off = off.reshape(n, og, kh, kw, 2, oh, ow)
    mask = np.ones((n, og, kh, kw, oh, ow)) if mask is None else mask.reshape(n, og, kh, kw, oh, ow)
    cols = np.zeros((n, c, kh, kw, oh, ow))
    for b in range(n):
        for ci in range(c):
            g = ci // (c // og)
            for i in range(kh):
                for j in range(kw):
                    for p in range(oh):
                        for q in range(ow):
                            y = p * strides[0] - pads[0] + i * dils[0] + off[b, g, i, j, 0, p, q]
                            x = q * strides[1] - pads[1] + j * dils[1] + off[b, g, i, j, 1, p, q]
                            cols[b, ci, i, j, p, q] = bilinear(X[b, ci], y, x) * mask[b, g, i, j, p, q]
    out = np.zeros((n, oc, oh, ow))
    ocpg = oc // group
    for o in range(oc):
        gi = o // ocpg
        out[:, o] = np.einsum("ckl,nckluv->nuv", W[o], cols[:, gi * cpg:(gi + 1) * cpg])
    if B is not None:
        out += B.reshape(1, -1, 1, 1)
    return out


def model(tmp_path, shapes, with_b, with_mask, **attrs):
    names = ["X", "W", "offset"] + (["B"] if with_b else ([""] if with_mask else [])) + (["mask"] if with_mask else [])
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(s)) for k, s in shapes.items()]
    g = helper.make_graph([helper.make_node("DeformConv", names, ["Y"], **attrs)], "g", ins,
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    p = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)]), p)
    return p


@pytest.mark.parametrize("trial", range(4))
def test_deform_conv_matches_reference(tmp_path, trial):
    group, og = [(1, 1), (2, 1), (1, 2), (2, 2)][trial]
    n = int(RNG.integers(1, 3))
    c = group * og * int(RNG.integers(1, 3))
    oc = group * int(RNG.integers(1, 3))
    h, w = (int(v) for v in RNG.integers(5, 8, 2))  # >= the largest dilated window, (3 - 1) * 2 + 1
    kh, kw = (int(v) for v in RNG.integers(1, 4, 2))
    strides = [int(v) for v in RNG.integers(1, 3, 2)]
    dils = [int(v) for v in RNG.integers(1, 3, 2)]
    pads = [int(v) for v in RNG.integers(0, 3, 4)]
    oh = (h + pads[0] + pads[2] - dils[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dils[1] * (kw - 1) - 1) // strides[1] + 1
    with_b, with_mask = trial % 2 == 0, trial >= 1
    vals = {"X": RNG.standard_normal((n, c, h, w)), "W": RNG.standard_normal((oc, c // group, kh, kw)),
            "offset": RNG.uniform(-3, 3, (n, og * kh * kw * 2, oh, ow))}
    if with_b:
        vals["B"] = RNG.standard_normal(oc)
    if with_mask:
        vals["mask"] = RNG.uniform(0, 1, (n, og * kh * kw, oh, ow))
    vals = {k: v.astype(np.float32) for k, v in vals.items()}
    want = reference(vals["X"], vals["W"], vals["offset"], vals.get("B"), vals.get("mask"), group, og, strides, dils, pads)
    p = model(tmp_path, {k: v.shape for k, v in vals.items()}, with_b, with_mask, group=group, offset_group=og,
              strides=strides, dilations=dils, pads=pads, kernel_shape=[kh, kw])
    so, xin, out = str(tmp_path / "m.so"), str(tmp_path / "x.npz"), str(tmp_path / "o.npz")
    np.savez(xin, **vals)
    r = kiln("compile", p, "-o", so)
    assert r.returncode == 0, r.stderr
    r = kiln("run", so, "--inputs", xin, "-o", out)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        got = z[z.files[0]]
    assert got.shape == want.shape
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-6)
    assert err < 1e-5, err


@pytest.mark.parametrize("shapes,attrs,what", [
    ({"X": (1, 2, 5, 5), "W": (3, 2, 3, 3), "offset": (1, 18, 2, 2)}, {}, "must be [1, offset_group * kH * kW * 2 = 18, 3, 3]"),
    ({"X": (1, 2, 5, 5), "W": (3, 2, 3, 3), "offset": (1, 18, 3, 3)}, {"group": 2}, "C must be W's dimension 1 times group"),
    ({"X": (1, 3, 5, 5), "W": (2, 3, 3, 3), "offset": (1, 36, 3, 3)}, {"offset_group": 2}, "C a multiple of offset_group"),
    ({"X": (1, 2, 5, 5), "W": (3, 2, 3, 3), "offset": (1, 18, 3, 3)}, {"strides": [0, 1]}, "attribute 'strides'[0] is 0; it must be from 1"),
    ({"X": (1, 2, 5, 5), "W": (3, 2, 3, 3), "offset": (1, 18, 3, 3)}, {"kernel_shape": [2, 2]}, "kernel_shape must be W's spatial shape"),
    ({"X": (1, 2, 2, 2), "W": (3, 2, 3, 3), "offset": (1, 18, 1, 1)}, {}, "larger than the padded input"),
    ({"X": (1, 2, 5), "W": (3, 2, 3), "offset": (1, 6, 3)}, {}, "only 2-D DeformConv"),
])
def test_deform_conv_errors(tmp_path, shapes, attrs, what):
    r = kiln("compile", model(tmp_path, shapes, False, False, **attrs), "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and what in r.stderr, r.stderr


def test_deform_conv_mask_shape_error(tmp_path):
    shapes = {"X": (1, 2, 5, 5), "W": (3, 2, 3, 3), "offset": (1, 18, 3, 3), "mask": (1, 8, 3, 3)}
    r = kiln("compile", model(tmp_path, shapes, False, True), "-o", str(tmp_path / "m.so"))
    assert r.returncode != 0 and "must be [1, offset_group * kH * kW = 9, 3, 3]" in r.stderr, r.stderr
