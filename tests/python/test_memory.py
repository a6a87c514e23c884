"""Weights held once: two processes that load the same compiled module share
its weight pages (the executor reads the params where the file is mapped,
read-only, and copies none), as /proc/self/smaps shows in each process; and
setting a param copies that param only, in that executor only.

The model: y = relu(x @ W + b) with W of 1024 x 1024 float32 (4 MiB), built
with onnx's helper, compiled by Kiln once for the module.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import graph_executor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K = 1024

# Run in each child: load, run, report where the weights are, then (on a
# line from the parent, once both have run) report what smaps says about the
# mappings that hold them.
CHILD = r"""
import ctypes, json, sys
import numpy as np
import kiln
from kiln import graph_executor, _ffi
def private_bytes():
    total = 0
    with open("/proc/self/smaps") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                total += int(line.split()[1]) * 1024
    return total
x = np.ones((1, %d), "float32")
lib = kiln.runtime.load_module(sys.argv[1])
before = private_bytes()
m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
m.set_input("x", x)
m.run()
y = m.get_output(0).numpy()
grew = private_bytes() - before
data, size = ctypes.c_void_p(), ctypes.c_size_t()
_ffi._LIB.kiln_module_get_blob(lib.handle, b"param_data", ctypes.byref(data), ctypes.byref(size))
print(json.dumps({"sum": float(y.sum()), "addr": data.value, "size": size.value, "grew": grew}), flush=True)
sys.stdin.readline()
lo, hi = data.value, data.value + size.value
fields = {"Rss": 0, "Shared_Clean": 0, "Private_Clean": 0, "Private_Dirty": 0, "Shared_Dirty": 0,
          "Anonymous": 0}
inside = False
with open("/proc/self/smaps") as f:
    for line in f:
        head = line.split()
        if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            a, b = (int(v, 16) for v in head[0].split("-"))
            inside = a < hi and b > lo
        elif inside and head[0].rstrip(":") in fields:
            fields[head[0].rstrip(":")] += int(head[1]) * 1024
print(json.dumps(fields), flush=True)
""" % K


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    import onnx  # pylint: disable=import-outside-toplevel
    from onnx import TensorProto, helper, numpy_helper  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(7)
    w = rng.standard_normal((K, K)).astype("float32") / 32
    b = rng.standard_normal((K,)).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        "shared_weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, K])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    d = tmp_path_factory.mktemp("shared")
    onnx.save(model, str(d / "m.onnx"))
    mod, params = kiln.frontend.from_onnx(onnx.load(str(d / "m.onnx")), {"x": (1, K)})
    path = str(d / "m.so")
    with kiln.transform.PassContext(opt_level=3):
        kiln.build(mod, target="cpu", params=params).export_library(path)
    expect = np.maximum(np.ones((1, K), "float32") @ w + b, 0)
    return path, expect


def test_two_processes_share_the_weights(module_path):
    path, expect = module_path
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    kids = [subprocess.Popen([sys.executable, "-c", CHILD, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=env) for _ in range(2)]
    try:
        first = [json.loads(k.stdout.readline()) for k in kids]  # both have loaded and run
        for f in first:
            assert abs(f["sum"] - float(expect.sum())) <= 1e-3 * abs(float(expect.sum()))
            assert f["addr"] % 64 == 0 and f["size"] >= K * K * 4
            # making the executor and running it took far less anonymous
            # memory (heap, copies) than the weights: they were not copied
            assert f["grew"] < 0.25 * f["size"], f
        for k in kids:
            k.stdin.write("check\n")
            k.stdin.flush()
        maps = [json.loads(k.stdout.readline()) for k in kids]
    finally:
        for k in kids:
            k.stdin.close()
            k.wait(timeout=60)
    size = first[0]["size"]
    for m in maps:
        # the weights are resident, in pages both processes map (smaps counts
        # a page cache page not yet written back to disk as dirty, even in a
        # read-only mapping: the file was just written)
        assert m["Shared_Clean"] + m["Shared_Dirty"] >= 0.9 * size, m
        # and this process holds no copy of its own (a copy-on-write copy
        # would be anonymous; a page only one process maps, private)
        assert m["Anonymous"] == 0 and m["Private_Clean"] + m["Private_Dirty"] < 0.1 * size, m


def test_set_param_copies_that_param_only(module_path):
    path, expect = module_path
    lib = kiln.runtime.load_module(path)
    a = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    b = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    x = np.ones((1, K), "float32")
    params = lib.get_params()
    wname = next(n for n, v in params.items() if v.numpy().size == K * K)
    w = params[wname].numpy()
    a.set_input(wname, np.zeros_like(w))
    for m in (a, b):
        m.set_input("x", x)
        m.run()
    np.testing.assert_allclose(b.get_output(0).numpy(), expect, rtol=1e-4, atol=1e-4)
    ya = a.get_output(0).numpy()
    assert ya.shape == expect.shape and not np.allclose(ya, expect)
    # the module's copy is unchanged
    np.testing.assert_array_equal(lib.get_params()[wname].numpy(), w)


def test_one_form_of_each_weight(tmp_path):
    """A weight transformed at compile time (Winograd here, NCHWc blocking
    for the 1x1 convolution) is embedded in its transformed form only, and a
    weight two layers share is embedded once."""
    import onnx  # pylint: disable=import-outside-toplevel
    from onnx import TensorProto, helper, numpy_helper  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(3)
    w3 = rng.standard_normal((48, 48, 3, 3)).astype("float32") / 20
    w1 = rng.standard_normal((48, 48, 1, 1)).astype("float32") / 7
    nodes = [helper.make_node("Conv", ["x", "W3"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "W1"], ["c"]),
             helper.make_node("Relu", ["c"], ["d"]),
             helper.make_node("Conv", ["d", "W1"], ["y"])]  # W1 again: shared
    graph = helper.make_graph(nodes, "forms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 48, 14, 14])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 48, 14, 14])],
                              [numpy_helper.from_array(w3, "W3"), numpy_helper.from_array(w1, "W1")])
    path = str(tmp_path / "f.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    mod, params = kiln.frontend.from_onnx(onnx.load(path), {"x": (1, 48, 14, 14)})
    so = str(tmp_path / "f.so")
    with kiln.transform.PassContext(opt_level=3):
        kiln.build(mod, target="cpu", params=params).export_library(so)
    lib = kiln.runtime.load_module(so)
    embedded = {k: v.numpy() for k, v in lib.get_params().items()}
    shapes = [v.shape for v in embedded.values()]
    # no original layout is left beside a transformed one
    assert (48, 48, 3, 3) not in shapes and (48, 48, 1, 1) not in shapes, shapes
    # the shared 1x1 weight is embedded once, and no two params are equal
    blobs = [v.tobytes() for v in embedded.values()]
    assert len(set(blobs)) == len(blobs)
    assert sum(v.size for v in embedded.values() if v.size >= 48 * 48) <= w1.size + w3.size * 64 // 9
    # and every embedded param is read by a kernel
    g = json.loads(lib.get_graph_json())
    used = {i[0] for n in g["nodes"] if n["op"] == "tvm_op" for i in n["inputs"]}
    names = {g["nodes"][i]["name"]: i for i in g["arg_nodes"]}
    assert all(names[k] in used for k in embedded)
    # the answer is right
    x = rng.standard_normal((1, 48, 14, 14)).astype("float32")
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.set_input("x", x)
    m.run()
    import torch  # pylint: disable=import-outside-toplevel
    import torch.nn.functional as F  # pylint: disable=import-outside-toplevel
    t = torch.from_numpy
    ref = F.conv2d(F.relu(F.conv2d(F.relu(F.conv2d(t(x), t(w3), padding=1)), t(w1))), t(w1)).numpy()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=2e-3, atol=2e-3)
