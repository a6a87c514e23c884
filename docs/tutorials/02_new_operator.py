"""Tutorial 2: an operator from compute to ONNX - the pieces of
nn.hard_sigmoid, built by hand and then through the op table.

Run from the repository root after building:
    PYTHONPATH=python /usr/bin/python3 docs/tutorials/02_new_operator.py
"""
import numpy as np
import onnx
from onnx import TensorProto, helper

import kiln

shape = (4, 64)
alpha, beta = 0.25, 0.5


# 1. The compute (src/topi/generic/elemwise.c: topi_hard_sigmoid): one
#    output element from the same input element, tagged "elemwise".
def hard_sigmoid(x, alpha, beta):
    return kiln.compute(x.shape, lambda *i: kiln.min(kiln.max(x(*i) * alpha + beta, 0.0), 1.0),
                        name="T_hard_sigmoid", tag="elemwise")


x = kiln.placeholder(shape, name="x")
y = hard_sigmoid(x, alpha, beta)
print(kiln.lower(kiln.create_schedule(y.op), [x, y], simple_mode=True))

# 2. The schedule: what topi_schedule_injective does with an elementwise
#    output - the last axis split by the vector width and the inner part
#    vectorized, the loops outside it fused into one (parallel when big).
s = kiln.create_schedule(y.op)
i, j = s[y].op.axis
jo, ji = s[y].split(j, factor=16)
s[y].fuse(i, jo)
s[y].vectorize(ji)
print(kiln.lower(s, [x, y], simple_mode=True))

f = kiln.build(s, [x, y], name="hard_sigmoid")
data = np.random.default_rng(2).uniform(-4, 4, shape).astype("float32")
out = kiln.nd.empty(shape, "float32")
f["hard_sigmoid"](data, out)
expected = np.clip(alpha * data + beta, 0, 1)
print("by hand matches NumPy:", np.allclose(out.numpy(), expected))

# 3. The op-table row (nn.hard_sigmoid in src/graph/ops/elemwise.c) and the
#    ONNX mapping (HardSigmoid in src/frontend/onnx/ops/elementwise.c) put the
#    same compute and schedule behind a model's node.
node = helper.make_node("HardSigmoid", ["x"], ["y"], alpha=alpha, beta=beta)
graph = helper.make_graph([node], "hs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
mod, params = kiln.frontend.from_onnx(model, {"x": shape})
print(mod)
print(mod.fused_text(opt_level=3))

lib = kiln.build(mod, target="cpu")
print(lib.get_blob("lowered_ir").decode())
m = kiln.graph_executor.GraphModule(lib["default"](kiln.cpu()))
m.set_input("x", data)
m.run()
print("through ONNX matches NumPy:", np.allclose(m.get_output(0).numpy(), expected))
