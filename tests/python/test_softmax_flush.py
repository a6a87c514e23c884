"""Softmax flushes probabilities that would be subnormal float32 values
(a logit more than 87 below its row's maximum: Swin's shifted-window mask
adds -100) to exactly 0, so the attention matmul that reads them never
multiplies subnormals; every other probability matches NumPy, rows of
49 (Swin's windows), 197 (a partial-lane tail) and 64.  log_softmax of the
same rows is unchanged (its sum only gets terms below 1e-38 fewer)."""
import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def _module(tmp_path, op, shape):
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], axis=-1)], "s",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    path = str(tmp_path / f"{op}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    mod, params = kiln.frontend.from_onnx(path, {"x": shape})
    lib = kiln.build(mod, target="cpu", params=params)
    return graph_executor.GraphModule(lib["default"](kiln.cpu()))


@pytest.mark.parametrize("n", [49, 197, 64])
def test_masked_softmax_has_no_subnormals(tmp_path, n):
    rng = np.random.default_rng()
    shape = (3, 8, n)
    x = rng.standard_normal(shape).astype(np.float32)
    mask = rng.random(shape) < 0.4
    mask[..., 0] = False
    x = np.where(mask, x - 100.0, x).astype(np.float32)  # Swin's -100 mask
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    m = _module(tmp_path, "Softmax", shape)
    m.set_input("x", x)
    m.run()
    got = m.get_output(0).numpy()
    tiny = (xd - xd.max(-1, keepdims=True)) < -87
    assert tiny.any()
    assert np.all(got[tiny] == 0), got[tiny][got[tiny] != 0][:5]
    assert not np.any((got != 0) & (np.abs(got) < np.finfo(np.float32).tiny))
    assert np.allclose(got, want, rtol=1e-5, atol=1e-7)
    ml = _module(tmp_path, "LogSoftmax", shape)
    ml.set_input("x", x)
    ml.run()
    assert np.allclose(ml.get_output(0).numpy(), np.log(e.sum(-1, keepdims=True)) * -1 + (xd - xd.max(-1, keepdims=True)),
                       rtol=1e-5, atol=1e-4)
