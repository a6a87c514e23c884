"""Tutorial 3: how each operator's compute and schedule are chosen at
build time (the strategy).

Run from the repository root after building:
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/03_strategy.py
"""
import json

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import kiln

# A small network: conv 3x3 + relu, global average pool, dense + softmax.
rng = np.random.default_rng(3)
w = numpy_helper.from_array(rng.normal(0, 0.1, (32, 16, 3, 3)).astype("float32"), "w")
fc = numpy_helper.from_array(rng.normal(0, 0.1, (10, 32)).astype("float32"), "fc")
nodes = [
    helper.make_node("Conv", ["data", "w"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"]),
    helper.make_node("GlobalAveragePool", ["r"], ["p"]),
    helper.make_node("Flatten", ["p"], ["f"]),
    helper.make_node("Gemm", ["f", "fc"], ["g"], transB=1),
    helper.make_node("Softmax", ["g"], ["prob"]),
]
graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 16, 14, 14])],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], [w, fc])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
mod, params = kiln.frontend.from_onnx(model, {"data": (1, 16, 14, 14)})



def loop_nest(lib, func):
    """The blocks of one kernel's lowered IR, statements left out."""
    ir = lib.get_blob("lowered_ir").decode().split("// function ")
    body = next(f for f in ir if f.startswith(func + "\n")).split("\n")[1:]
    return "\n".join(line for line in body if line.endswith("{") or line.strip() in ("}", "...")
                     or line.strip().startswith("allocate"))


for level in (0, 3):
    print("== opt_level %d" % level)
    with kiln.transform.PassContext(opt_level=level):
        lib = kiln.build(mod, target="cpu")
    kernels = []
    for node in json.loads(lib.get_graph_json())["nodes"]:
        if node["op"] == "tvm_op":
            a = node["attrs"]
            kernels.append(a["func_name"])
            print("%-38s %-32s %s" % (a["func_name"], a["kiln_ops"],
                                      "%s (%s)" % (a["kiln_task"], a["kiln_config"]) if "kiln_task" in a
                                      else "generic schedule"))
    conv = next(k for k in kernels if "conv2d" in k)
    print("-- loops of", conv)
    print(loop_nest(lib, conv))
