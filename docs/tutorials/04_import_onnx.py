"""Tutorial 4 (Python): import an ONNX model, compile it, run it.

Run from the repository root after building:
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/04_import_onnx.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln.contrib import graph_executor

# The bundled digits model: a small CNN trained with PyTorch on scikit-learn's
# 8x8 handwritten digits (models/digits/train.py) and exported to ONNX.
onnx_model = onnx.load("models/digits/digits.onnx")
images = np.load("models/digits/sample16.npz")["image"]  # [16, 1, 8, 8]
labels = open("models/digits/sample16_labels.txt").read().split()

# Import: bind the input's shape (the batch dimension is dynamic in the file).
mod, params = kiln.frontend.from_onnx(onnx_model, {"image": images.shape})
print(mod)
print(sorted(params))

# Compile at opt level 3 into one module: kernels, graph JSON, weights.
with kiln.transform.PassContext(opt_level=3):
    lib = kiln.build(mod, target="cpu", params=params)

# Run it with the graph executor.
m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
m.set_input("image", images)
m.run()
logits = m.get_output(0).numpy()
print("predicted:", " ".join(str(d) for d in logits.argmax(axis=1)))
print("labels:   ", " ".join(labels))

# The same module as one file, for `kiln run` or a C program.
os.makedirs("build/tutorials", exist_ok=True)
lib.export_library("build/tutorials/digits_py.so")
print(kiln.load_module("build/tutorials/digits_py.so").function_names[:3])

# A second model for the passes: conv + batch norm + relu, written with
# onnx.helper (the shell part of this tutorial prints its graph after
# each pass).
rng = np.random.default_rng(4)
inits = [numpy_helper.from_array(v.astype("float32"), name) for name, v in [
    ("w", rng.normal(0, 0.2, (8, 3, 3, 3))),
    ("gamma", rng.uniform(0.5, 1.5, 8)), ("beta", rng.normal(0, 0.1, 8)),
    ("mean", rng.normal(0, 0.1, 8)), ("var", rng.uniform(0.5, 1.5, 8))]]
nodes = [helper.make_node("Conv", ["data", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"]),
         helper.make_node("Relu", ["bn"], ["out"])]
graph = helper.make_graph(nodes, "conv_bn", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "build/tutorials/conv_bn.onnx")

# The passes change the graph, not the answer: opt level 3 against 0.
x = rng.normal(size=(1, 3, 8, 8)).astype("float32")
bn_mod, _ = kiln.frontend.from_onnx("build/tutorials/conv_bn.onnx", {"data": x.shape})
results = []
for level in (0, 3):
    with kiln.transform.PassContext(opt_level=level):
        g = graph_executor.GraphModule(kiln.build(bn_mod, target="cpu")["default"](kiln.cpu()))
    g.set_input("data", x)
    g.run()
    results.append(g.get_output(0).numpy())
print("opt level 3 == opt level 0:", np.allclose(results[0], results[1], atol=1e-5))
