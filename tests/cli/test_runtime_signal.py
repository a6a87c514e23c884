"""Sizes given at run time that a signal or image kernel reads as offsets
(docs/symbolic_shapes.md, section 4b): Col2Im whose image_shape and
block_shape are graph inputs, STFT whose frame_step and frame_length
are, a onesided DFT (rfft, irfft) whose axis is.  Each model is compiled once, without --bind, and run by `kiln run`
at several values on fresh random data against a NumPy port of onnx's
reference (NumPy's FFT for STFT); values the input cannot take are an
error naming the node.

The models are built with onnx's helper; run with /usr/bin/python3."""
import itertools

import numpy as np
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from onnx_build import build, i64, run

RNG = np.random.default_rng()


def col2im_outs(img, blk, dil, pads, strides):
    """The sliding positions per axis (None where the block does not fit)."""
    d = len(img)
    outs = []
    for i in range(d):
        room = img[i] + pads[i] + pads[i + d] - (dil[i] * (blk[i] - 1) + 1)
        if room < 0:
            return None
        outs.append(room // strides[i] + 1)
    return outs


def col2im_ref(x, img, blk, dil, pads, strides):
    """onnx's reference: every value summed into the pixel it came from."""
    n, ck, L = x.shape
    d, K = len(img), int(np.prod(blk))
    outs = col2im_outs(img, blk, dil, pads, strides)
    y = np.zeros((n, ck // K) + tuple(img[i] + pads[i] + pads[i + d] for i in range(d)), x.dtype)
    xr = x.reshape(n, ck // K, K, L)
    for k in range(K):
        off = np.unravel_index(k, blk)
        for l in range(L):
            pos = np.unravel_index(l, outs)
            idx = tuple(pos[i] * strides[i] + off[i] * dil[i] for i in range(d))
            y[(slice(None), slice(None)) + idx] += xr[:, :, k, l]
    return y[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + img[i]) for i in range(d))]


def col2im_model(tmp_path, xshape, d, name, **attrs):
    return build(tmp_path, helper.make_node("Col2Im", ["x", "i", "b"], ["y"], **attrs),
                 [("x", TP.FLOAT, xshape), ("i", TP.INT64, [d]), ("b", TP.INT64, [d])], opset=18, name=name)


def valid_sizes(xshape, d, dil, pads, strides, top):
    """Every (image, block) up to top on each axis that the input takes."""
    _, ck, L = xshape
    out = []
    for img in itertools.product(range(1, top + 1), repeat=d):
        for blk in itertools.product(range(1, 5), repeat=d):
            outs = col2im_outs(img, blk, dil, pads, strides)
            if outs and ck % int(np.prod(blk)) == 0 and int(np.prod(outs)) == L:
                out.append((img, blk))
    return out


def test_col2im_with_sizes_given_at_run_time(tmp_path):
    """One build, every block that divides the 12 rows (C = 12 / K
    channels) and images whose positions give L = 6, against the
    reference; then values the input cannot take."""
    xshape, d = (2, 12, 6), 2
    so = col2im_model(tmp_path, xshape, d, "plain")
    sizes = valid_sizes(xshape, d, [1, 1], [0] * 4, [1, 1], 8)
    assert len(sizes) > 10
    for k in RNG.choice(len(sizes), 8, replace=False):
        img, blk = sizes[k]
        x = RNG.standard_normal(xshape).astype(np.float32)
        y = run(tmp_path, so, [x, i64(*img), i64(*blk)])
        want = col2im_ref(x, img, blk, [1, 1], [0] * 4, [1, 1])
        assert y.shape == want.shape, (img, blk)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    x = RNG.standard_normal(xshape).astype(np.float32)
    for img, blk, what in [((3, 4), (5, 1), "would have dimension 1 = -1"),   # 5 does not divide 12
                           ((4, 4), (1, 1), "would have dimension 1 = -1"),   # 16 positions, not 6
                           ((1, 6), (2, 1), "would have dimension 1 = -1"),   # the block is taller than the image
                           ((2, 3), (13, 1), "set_input 'b': element 0 is 13, the value b_0, outside the bounds [1, 12]")]:
        p = run(tmp_path, so, [x, i64(*img), i64(*blk)], check=False)
        named = "node 'fused_dyn_col2im'" if "dimension" in what else "input 'b'"
        assert p.returncode != 0 and what in p.stderr and named in p.stderr, p.stderr


def test_col2im_pads_strides_dilations_at_run_time(tmp_path):
    attrs = dict(pads=[1, 0, 1, 2], strides=[2, 1], dilations=[1, 2])
    xshape, d = (1, 4, 6), 2
    so = col2im_model(tmp_path, xshape, d, "psd", **attrs)
    sizes = valid_sizes(xshape, d, attrs["dilations"], attrs["pads"], attrs["strides"], 12)
    assert len(sizes) > 4
    for k in RNG.choice(len(sizes), min(6, len(sizes)), replace=False):
        img, blk = sizes[k]
        x = RNG.standard_normal(xshape).astype(np.float32)
        y = run(tmp_path, so, [x, i64(*img), i64(*blk)])
        want = col2im_ref(x, img, blk, attrs["dilations"], attrs["pads"], attrs["strides"])
        assert y.shape == want.shape, (img, blk)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_col2im_3d_with_only_the_block_at_run_time(tmp_path):
    """A constant image_shape, the block given at run time."""
    img = (3, 4, 5)
    so = build(tmp_path, helper.make_node("Col2Im", ["x", "i", "b"], ["y"]),
               [("x", TP.FLOAT, (1, 10, 12)), ("b", TP.INT64, [3])], opset=18, name="c3",
               inits=[numpy_helper.from_array(i64(*img), "i")])
    for _ in range(2):
        x = RNG.standard_normal((1, 10, 12)).astype(np.float32)
        y = run(tmp_path, so, [x, i64(1, 1, 5)])
        want = col2im_ref(x, img, (1, 1, 5), [1] * 3, [0] * 6, [1] * 3)
        assert y.shape == want.shape == (1, 2, 3, 4, 5)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    # K = 6 does not divide the 10 rows
    p = run(tmp_path, so, [x, i64(2, 3, 1)], check=False)
    assert p.returncode != 0 and "node 'fused_dyn_col2im' would have dimension 1 = -1" in p.stderr, p.stderr


def stft_ref(x, step, L, window, onesided):
    """NumPy's FFT of each frame (onnx's reference)."""
    sig = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    nf = 1 + (x.shape[1] - L) // step
    frames = np.stack([sig[:, f * step:f * step + L] for f in range(nf)], 1)
    if window is not None:
        frames = frames * window
    y = np.fft.fft(frames, axis=-1)
    if onesided:
        y = y[..., :L // 2 + 1]
    return np.stack([y.real, y.imag], -1)


def stft_model(tmp_path, name, xshape, window=None, length=True, onesided=1):
    ins = [("x", TP.FLOAT, xshape), ("s", TP.INT64, [])]
    names = ["x", "s", "", ""]
    if window is not None:
        ins.append(("w", TP.FLOAT, [window]))
        names[2] = "w"
    if length:
        ins.append(("l", TP.INT64, []))
        names[3] = "l"
    while names[-1] == "":
        names.pop()
    return build(tmp_path, helper.make_node("STFT", names, ["y"], onesided=onesided), ins, opset=17, name=name)


def test_stft_with_step_and_length_given_at_run_time(tmp_path):
    """One build: frame lengths and steps that change the frames and the
    bins (odd and even lengths), real and complex signals, against
    NumPy's FFT; a length past the signal is an error naming the node."""
    for c, onesided in [(1, 1), (2, 0)]:
        so = stft_model(tmp_path, f"stft{c}", [2, 40, c], onesided=onesided)
        for step, L in [(8, 16), (3, 7), (1, 40), (5, 1), (8, 16)]:
            x = RNG.standard_normal((2, 40, c)).astype(np.float32)
            y = run(tmp_path, so, [x, np.array(step, np.int64), np.array(L, np.int64)])
            want = stft_ref(x.astype(np.float64), step, L, None, onesided)
            assert y.shape == want.shape, (step, L)
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * L)
        p = run(tmp_path, so, [x, np.array(4, np.int64), np.array(41, np.int64)], check=False)
        assert p.returncode != 0 and "outside the bounds [1, 40]" in p.stderr, p.stderr


def test_stft_with_a_window_and_the_step_at_run_time(tmp_path):
    so = stft_model(tmp_path, "win", [1, 64, 1], window=12, length=False)
    for step in [1, 4, 12, 53]:
        x = RNG.standard_normal((1, 64, 1)).astype(np.float32)
        w = RNG.random(12).astype(np.float32)
        y = run(tmp_path, so, [x, np.array(step, np.int64), w])
        want = stft_ref(x.astype(np.float64), step, 12, w.astype(np.float64), 1)
        assert y.shape == want.shape, step
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-3)
    # a frame_length given at run time must match the window's
    so = stft_model(tmp_path, "winlen", [1, 64, 1], window=12)
    x = RNG.standard_normal((1, 64, 1)).astype(np.float32)
    w = RNG.random(12).astype(np.float32)
    y = run(tmp_path, so, [x, np.array(5, np.int64), w, np.array(12, np.int64)])
    np.testing.assert_allclose(y, stft_ref(x.astype(np.float64), 5, 12, w.astype(np.float64), 1), rtol=1e-4, atol=1e-3)
    p = run(tmp_path, so, [x, np.array(5, np.int64), w, np.array(10, np.int64)], check=False)
    assert p.returncode != 0 and "node 'fused_dyn_stft' would have dimension 1 = -1" in p.stderr, p.stderr


def dft_model(tmp_path, name, xshape, **attrs):
    return build(tmp_path, helper.make_node("DFT", ["x", "", "axis"], ["y"], **attrs),
                 [("x", TP.FLOAT, xshape), ("axis", TP.INT64, [])], opset=20, name=name)


def test_rfft_and_irfft_along_an_axis_given_at_run_time(tmp_path):
    """The result's length along the axis depends on the axis (n / 2 + 1
    for rfft, 2 (m - 1) for irfft): one build takes every axis, negative
    ones too, against NumPy; -1 (the real/imaginary axis) and, for irfft,
    an axis of one frequency (no length) are errors naming the node."""
    so = dft_model(tmp_path, "rfft", [3, 7, 10, 1], onesided=1)
    for axis in [1, 2, 0, -2, -4]:
        x = RNG.standard_normal((3, 7, 10, 1)).astype(np.float32)
        y = run(tmp_path, so, [x, np.array(axis, np.int64)])
        want = np.fft.rfft(x[..., 0].astype(np.float64), axis=axis % 4)
        assert y.shape == want.shape + (2,), axis
        np.testing.assert_allclose(y, np.stack([want.real, want.imag], -1), rtol=1e-4, atol=1e-4)
    p = run(tmp_path, so, [x, np.array(-1, np.int64)], check=False)
    assert p.returncode != 0 and "would have dimension 0 = -1" in p.stderr, p.stderr
    so = dft_model(tmp_path, "irfft", [1, 6, 4, 2], onesided=1, inverse=1)
    for axis in [1, 2, -3, -2]:
        x = RNG.standard_normal((1, 6, 4, 2)).astype(np.float32)
        y = run(tmp_path, so, [x, np.array(axis, np.int64)])
        want = np.fft.irfft(x[..., 0] + 1j * x[..., 1], axis=axis % 4)
        assert y.shape == want.shape + (1,), axis
        np.testing.assert_allclose(y[..., 0], want, rtol=1e-4, atol=1e-4)
    for axis in [0, -4, -1]:  # axis 0 has one frequency: irfft has no default length there
        p = run(tmp_path, so, [x, np.array(axis, np.int64)], check=False)
        assert p.returncode != 0 and "would have dimension 0 = -1" in p.stderr, p.stderr
