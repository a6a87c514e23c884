"""A graph of ONNX nodes saved as a model (opset 13), imported with its
input shapes and built at opt level 3: the shared start of the tests that
check what the graph passes and fusion make of a pattern
(test_fold_gate.py, test_fuse_layer_norm.py, test_sink_reshape.py)."""
import json

import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln


def build_graph(tmp_path, nodes, inits, inputs, outputs):
    """inputs: {name: shape} (float32), outputs: {name: shape or None},
    inits: {name: array}.  Returns (the kernels' function names in the
    graph's order, the built library)."""
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s and list(s)) for n, s in outputs.items()]
    g = helper.make_graph(nodes, "g", ins, outs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    mod, params = kiln.frontend.from_onnx(path, dict(inputs))
    with kiln.transform.PassContext(opt_level=3):
        lib = kiln.build(mod, target="cpu", params=params)
    kernels = [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]
    return kernels, lib
