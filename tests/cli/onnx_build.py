"""One-node ONNX models built with onnx's helper, compiled by `kiln compile`
and run by `kiln run` on arrays: the shared pieces of the run-time value
tests (test_runtime_values.py, test_runtime_float_values.py,
test_runtime_offsets.py, test_runtime_signal.py).  Run with /usr/bin/python3."""
import itertools

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from e2e_common import kiln

_pb_count = itertools.count()


def build(tmp_path, node, inputs, opset=18, name="m", out=TP.FLOAT, outputs=("y",), inits=(), check=True):
    """Compile a model of one node: inputs is [(name, TensorProto type,
    dims)], outputs the names of its outputs, out their TensorProto type
    (one for all, or one each), inits its initializers.  Returns the .so
    path, or with check=False the finished `kiln compile`."""
    outs = out if isinstance(out, (list, tuple)) else [out] * len(outputs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                          [helper.make_tensor_value_info(o, t, None) for o, t in zip(outputs, outs)],
                          initializer=list(inits))
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    so = str(tmp_path / f"{name}.so")
    p = kiln("compile", path, "-o", so, check=check)
    return so if check else p


def write_pb(tmp_path, a):
    """a as a TensorProto file of its own in tmp_path; its path."""
    p = str(tmp_path / f"v{next(_pb_count)}.pb")
    with open(p, "wb") as f:
        f.write(numpy_helper.from_array(a).SerializeToString())
    return p


def run(tmp_path, so, arrays, check=True):
    """`kiln run` on the arrays (the model's inputs in order): its first
    output, or with check=False the finished process."""
    args = ["run", so, "-o", str(tmp_path / "out.npz")]
    for a in arrays:
        args += ["--inputs", write_pb(tmp_path, a)]
    p = kiln(*args, check=check)
    if not check:
        return p
    with np.load(str(tmp_path / "out.npz")) as z:
        return z[z.files[0]]


def i64(*v):
    return np.array(v, np.int64)
