"""Nested concatenations: the standalone C export leaves out the same
concatenations as the graph executor's plan (the view rule exists once,
kiln_graph_plan_memory_views, and export_c asks it).  A concatenation
computes nothing in the graph executor when its inputs share its storage
(attrs.kiln_storage_id); in the export when NAME_run does not call it (a
comment says its inputs were written in place).  Both run against a
float64 NumPy reference on fresh random inputs.

The model, built at opt level 0 (each op a kernel of its own, so the inner
concatenation is not fused into the outer one): x (1, 32, 12, 12) -> three
1x1 convs with ReLU (a: 16, b: 32, d: 16 channels) -> inner = Concat(a, b)
-> outer = Concat(inner, d) -> a 1x1 conv y.  "inner_view": inner's inputs
are read by it alone, so it is a view, and outer, reading a
concatenation, copies.  "inner_copy": a is also read by a second conv z,
so inner copies, and outer still copies: its input inner is computed by a
concatenation, not by a kernel that writes in place.
"""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln import graph_executor

C, H = 32, 12


def _model(tmp_path, case):
    rng = np.random.default_rng(7)
    w = {"wa": rng.standard_normal((16, C, 1, 1)), "wb": rng.standard_normal((32, C, 1, 1)),
         "wd": rng.standard_normal((16, C, 1, 1)), "wy": rng.standard_normal((16, 64, 1, 1)),
         "wz": rng.standard_normal((16, 16, 1, 1))}
    w = {k: (v / 8).astype("float32") for k, v in w.items()}
    nodes = []
    for t in "abd":
        nodes += [helper.make_node("Conv", ["x", "w" + t], [t + "0"]), helper.make_node("Relu", [t + "0"], [t])]
    nodes += [helper.make_node("Concat", ["a", "b"], ["inner"], axis=1),
              helper.make_node("Concat", ["inner", "d"], ["outer"], axis=1),
              helper.make_node("Conv", ["outer", "wy"], ["y"])]
    outs = {"y": (1, 16, H, H)}
    if case == "inner_copy":
        nodes.append(helper.make_node("Conv", ["a", "wz"], ["z"]))
        outs["z"] = (1, 16, H, H)
    else:
        del w["wz"]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, H])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in outs.items()],
                          [numpy_helper.from_array(v, k) for k, v in w.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "m.onnx"))
    mod, params = kiln.frontend.from_onnx(str(tmp_path / "m.onnx"), {"x": (1, C, H, H)})
    with kiln.transform.PassContext(opt_level=0):
        lib = kiln.build(mod, target="cpu", params=params)
        aot = kiln.build(mod, params=params, executor="aot")
    return lib, aot, w, outs


def _reference(x, w, case):
    def conv(t, k):
        return np.einsum("oc,nchw->nohw", k[:, :, 0, 0].astype("float64"), t)
    a, b, d = (np.maximum(conv(x, w[k]), 0) for k in ("wa", "wb", "wd"))
    outer = np.concatenate([a, b, d], axis=1)
    return [conv(outer, w["wy"])] + ([conv(a, w["wz"])] if case == "inner_copy" else [])


def _runtime_views(graph):
    """The names of the concatenations whose inputs lie in their storage."""
    row, sid = graph["node_row_ptr"], graph["attrs"].get("kiln_storage_id", [None, None])[1]
    names = set()
    for k, n in enumerate(graph["nodes"]):
        if n["op"] != "tvm_op" or n["attrs"].get("kiln_concat") != "1" or sid is None:
            continue
        if any(sid[row[i[0]] + i[1]] == sid[row[k]] for i in n["inputs"]):
            names.add(n["name"])
    return names


def _export_views(src):
    """The names of the concatenations NAME_run does not call."""
    return {line.split(": ")[1] for line in src.splitlines() if "its inputs were written in place" in line}


@pytest.mark.parametrize("case", ["inner_view", "inner_copy"])
def test_nested_concat_views_export_matches_runtime(tmp_path, case):
    lib, aot, w, outs = _model(tmp_path, case)
    graph = json.loads(lib.get_graph_json())
    concats = [n["name"] for n in graph["nodes"] if n.get("attrs", {}).get("kiln_concat") == "1"]
    assert len(concats) == 2, concats
    runtime = _runtime_views(graph)
    assert len(runtime) == (case == "inner_view"), runtime
    x = np.random.default_rng(13).standard_normal((1, C, H, H)).astype("float32")
    want = _reference(x.astype("float64"), w, case)
    m = graph_executor.GraphModule(lib["default"](kiln.cpu()))
    m.set_input("x", x)
    m.run()
    for k, ref in enumerate(want):
        got = m.get_output(k).numpy()
        assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5, k

    d = aot.export_library(str(tmp_path / "c"), fmt="c", prefix="m")
    src = open(os.path.join(d, "m.c")).read()
    assert _export_views(src) == runtime
    p = subprocess.run(["make", "-s", "CC=gcc", "CFLAGS=-O2 -march=native -std=gnu99"], cwd=d, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    np.save(os.path.join(d, "in.npy"), x)
    names = ["out%d.npy" % k for k in range(len(want))]
    p = subprocess.run(["./example", "in.npy"] + names, cwd=d, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for name, ref in zip(names, want):
        got = np.load(os.path.join(d, name))
        assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5, name
