"""kiln.frontend.from_onnx(shape=...) overrides any dimension the model
declares, as TVM's relay.frontend.from_onnx does: a model declared at
batch 1 builds and runs at batch 4; a -1 (open) dimension takes the given
size; a Reshape to a fixed size that cannot take the new shape raises
KilnError naming the node."""
import json

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402  pylint: disable=wrong-import-position


def _model(dim0, reshape=False):
    w = np.random.RandomState(7).randn(6, 4).astype(np.float32)
    nodes, inits = [], [helper.make_tensor("w", TensorProto.FLOAT, [6, 4], w.ravel())]
    src = "a"
    if reshape:
        inits.append(helper.make_tensor("s", TensorProto.INT64, [2], [1, 6]))
        nodes.append(helper.make_node("Reshape", ["a", "s"], ["r"], name="to_1x6"))
        src = "r"
    nodes += [helper.make_node("MatMul", [src, "w"], ["m"], name="mm"), helper.make_node("Tanh", ["m"], ["y"], name="t")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [dim0, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), w


@pytest.mark.parametrize("dim0", [1, -1])
def test_from_onnx_shape_overrides_declared_dims(dim0):
    model, w = _model(dim0)
    mod, params = kiln.frontend.from_onnx(model, shape={"a": (4, 6)})
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    a = np.random.randn(4, 6).astype(np.float32)
    m.set_input("a", a)
    m.run()
    out = m.get_output(0).numpy()
    assert out.shape == (4, 4)
    np.testing.assert_allclose(out, np.tanh(a @ w), rtol=1e-5, atol=1e-5)


def test_from_onnx_shape_the_graph_cannot_take():
    model, _ = _model(1, reshape=True)
    with pytest.raises(kiln.KilnError, match=r"Reshape node 'to_1x6'.*input 'a' dimension 0 from 1 to 4"):
        kiln.frontend.from_onnx(model, shape={"a": (4, 6)})
    kiln.frontend.from_onnx(model, shape={"a": (1, 6)})  # the declared size still imports


def test_symbolic_batch_get_output_shapes(tmp_path):
    # a module compiled once with a symbolic batch (kiln compile
    # --input-shapes "a:[N,6]"), run through the Python executor at three
    # batches: get_output returns each run's shape
    import os  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    model, w = _model(1)
    path, so = str(tmp_path / "m.onnx"), str(tmp_path / "m.so")
    onnx.save(model, path)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    subprocess.run([os.path.join(root, "build", "kiln"), "compile", path, "-o", so, "--input-shapes", "a:[N,6]",
                    "--quiet-fallback"], check=True)
    m = graph_executor.GraphModule(kiln.runtime.load_module(so)["default"](kiln.cpu()))
    for b in (1, 3, 8):
        a = np.random.randn(b, 6).astype(np.float32)
        m.set_input("a", a)
        m.run()
        out = m.get_output(0).numpy()
        assert out.shape == (b, 4)
        np.testing.assert_allclose(out, np.tanh(a @ w), rtol=1e-5, atol=1e-5)
    with pytest.raises(kiln.KilnError, match="set_input 'a': shape"):
        m.set_input("a", np.zeros((2, 5), np.float32))


def test_from_onnx_symbolic_dimension_builds_once():
    # a dimension given as a name is symbolic (TVM writes relay.Any()):
    # one build runs at batch 1, 3, 5 and 8.  A batch alone is built as
    # kiln compile builds it: batch-1 kernels called per sample, and
    # batched variants at 4 and 8 in the same module (5 = 4 + 1)
    model, w = _model(1)
    mod, params = kiln.frontend.from_onnx(model, shape={"a": ("N", 6)})
    assert "Tensor[(N, 6), float32]" in mod.astext()
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    graph = json.loads(lib.get_graph_json())
    assert graph["attrs"]["kiln_batch"][1][0].startswith("N:1:")
    assert graph["attrs"]["kiln_batch_variants"] == ["list_int", [4, 8]]
    assert graph["attrs"]["shape"][1][0][0] == 1
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    for b in (1, 3, 5, 8):
        a = np.random.randn(b, 6).astype(np.float32)
        m.set_input("a", a)
        m.run()
        out = m.get_output(0).numpy()
        assert out.shape == (b, 4)
        np.testing.assert_allclose(out, np.tanh(a @ w), rtol=1e-5, atol=1e-5)
    with pytest.raises(kiln.KilnError, match="ints or symbol names"):
        kiln.frontend.from_onnx(model, shape={"a": ("3x", 6)})
