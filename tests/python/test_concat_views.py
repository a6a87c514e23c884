"""Concatenations whose inputs are written in place: a channel concatenation
at batch 1 is marked "kiln_concat" in the graph JSON; when each input is
read by it alone, the memory planner places its inputs as views in its
output's storage (attrs.kiln_storage_id and kiln_storage_offset, Kiln's
plan) and the executor does not call it; when an input has another reader,
it keeps its copy.  attrs.storage_id stays a plan without views: the JSON
without Kiln's attrs, as a TVM reader sees it, runs correctly too.  Each case runs
against a float64 NumPy reference on fresh random inputs, through the graph
executor and the debug executor (whose table must then have no
concatenation row), and a JSON with a view moved to the wrong offset must
be refused.

The model: x (1, 32, 12, 12) -> two 1x1 convs with ReLU (16 and 32 output
channels, a and b) -> Concat on the channels -> one or two 1x1 convs
reading it ("two"), or one reading it and one reading a ("shared").
"""
import ctypes
import json
import os
import subprocess

import numpy as np
import pytest
from onnx import helper

import kiln
from kiln import _ffi, debug_executor, graph_executor
from onnx_graph import build_graph

C, H = 32, 12


def _model(tmp_path, case):
    rng = np.random.default_rng(3)
    w = {"wa": rng.standard_normal((16, C, 1, 1)), "wb": rng.standard_normal((32, C, 1, 1)),
         "wc": rng.standard_normal((16, 48, 1, 1)), "wd": rng.standard_normal((16, 48, 1, 1))}
    w = {k: (v / 8).astype("float32") for k, v in w.items()}
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a0"]), helper.make_node("Relu", ["a0"], ["a"]),
             helper.make_node("Conv", ["x", "wb"], ["b0"]), helper.make_node("Relu", ["b0"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
             helper.make_node("Conv", ["c", "wc"], ["y"])]
    w["wd"] = np.ascontiguousarray(w["wd"][:, :48 if case == "two" else 16])
    outs = {"y": (1, 16, H, H)}
    if case != "one":
        nodes.append(helper.make_node("Conv", ["c" if case == "two" else "a", "wd"], ["z"]))
        outs["z"] = (1, 16, H, H)
    _, lib = build_graph(tmp_path, nodes, {k: w[k] for k in ("wa", "wb", "wc", "wd")[:3 + (case != "one")]},
                         {"x": (1, C, H, H)}, outs)
    return lib, w


def _reference(x, w, case):
    def conv(t, k):
        return np.einsum("oc,nchw->nohw", k[:, :, 0, 0].astype("float64"), t)
    a = np.maximum(conv(x, w["wa"]), 0)
    c = np.concatenate([a, np.maximum(conv(x, w["wb"]), 0)], axis=1)
    return [conv(c, w["wc"])] + ([] if case == "one" else [conv(c if case == "two" else a, w["wd"])])


def _check(m, x, w, case):
    m.set_input("x", x)
    m.run()
    for k, want in enumerate(_reference(x.astype("float64"), w, case)):
        got = m.get_output(k).numpy()
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-5, (k, err)


@pytest.mark.parametrize("case", ["one", "two", "shared"])
def test_concat_views(tmp_path, case):
    lib, w = _model(tmp_path, case)
    views = case != "shared"
    graph = json.loads(lib.get_graph_json())
    concat = [n for n in graph["nodes"] if n["op"] == "tvm_op" and n["attrs"].get("kiln_ops") == "concatenate"]
    assert len(concat) == 1 and concat[0]["attrs"].get("kiln_concat") == "1"
    offsets = graph["attrs"].get("kiln_storage_offset")
    assert (offsets is not None) == views
    x = np.random.default_rng(11).standard_normal((1, C, H, H)).astype("float32")
    _check(graph_executor.GraphModule(lib["default"](kiln.cpu())), x, w, case)
    dbg = debug_executor.from_module(lib)
    report = dbg.profile(1, 1, x=x)
    assert any("concatenate" in r["name"] for r in report.rows) == (not views)
    _check(dbg, x, w, case)
    # what a TVM reader sees: storage_id alone, a plan without views, on which
    # the concatenation copies
    tvm = json.loads(json.dumps(graph))
    for k in ("kiln_storage_id", "kiln_storage_offset"):
        tvm["attrs"].pop(k, None)
    _check(graph_executor.create(json.dumps(tvm), lib), x, w, case)
    if views:
        # the views: the concatenation's inputs in its storage, end to end
        # (kiln_storage_id); storage_id gives each its own buffer
        row = graph["node_row_ptr"]
        ins = [row[i[0]] + i[1] for i in concat[0]["inputs"]]
        out = row[graph["nodes"].index(concat[0])]
        sid = graph["attrs"]["kiln_storage_id"][1]
        assert sid[ins[0]] == sid[ins[1]] == sid[out]
        tvm_sid = graph["attrs"]["storage_id"][1]
        assert len({tvm_sid[ins[0]], tvm_sid[ins[1]], tvm_sid[out]}) == 3
        off = offsets[1]
        assert off[ins[0]] == off[out] == 0 and off[ins[1]] == 16 * H * H * 4
        # num_views counts every input placed in the concatenation's storage,
        # the first (at offset 0) too: the planner's count and the executor's
        plan = _Plan()
        m = graph_executor.create(json.dumps(graph), lib)
        assert _ffi._LIB.kiln_graph_executor_memory(ctypes.c_void_p(m._h.value), ctypes.byref(plan), None) == 0
        assert plan.num_views == 2
        text = json.dumps(graph).encode()
        out, plan = ctypes.c_char_p(), _Plan()
        assert _ffi._LIB.kiln_graph_json_plan_memory(text, ctypes.c_size_t(len(text)), ctypes.byref(out),
                                                      ctypes.byref(plan)) == 0
        assert plan.num_views == 2
        _bad_plans(graph, lib, sid, off, ins, out=row[graph["nodes"].index(concat[0]) + 1])


class _Plan(ctypes.Structure):
    _fields_ = [("num_storage", ctypes.c_int), ("planned_bytes", ctypes.c_uint64),
                ("naive_bytes", ctypes.c_uint64), ("num_views", ctypes.c_int)]


def _bad_plans(graph, lib, sid, off, ins, out):
    """Hand-made plans the executor must refuse: a view moved over another,
    an offset on an entry no concatenation reads, a "__nop" whose output
    lies elsewhere in the storage than its input."""
    def refused(edit, match):
        g = json.loads(json.dumps(graph))
        edit(g["attrs"]["kiln_storage_id"][1], g["attrs"]["kiln_storage_offset"][1], g)
        with pytest.raises(kiln.KilnError, match=match):
            graph_executor.create(json.dumps(g), lib)

    def moved(sid, off, g):  # 64 bytes early, the second input overlaps the first
        off[ins[1]] -= 64
    refused(moved, "lies at byte 9152 of the output's storage")

    def stray(sid, off, g):  # the conv reading the concatenation, at 64 in its storage
        off[out] = 64
    refused(stray, r"kiln_storage_offset\[%d\] .* is 64: only a kernel's output .* that a kiln_concat" % out)

    def nop(sid, off, g):  # the conv reading the concatenation made a "__nop" of the second input
        node = g["nodes"][g["node_row_ptr"].index(out)]
        node["attrs"]["func_name"] = "__nop"
        node["inputs"][0] = [g["node_row_ptr"].index(ins[1]), 0, 0]
        sid[out] = sid[ins[1]]
    refused(nop, "a \"__nop\" node needs one output sharing storage and offset with its first input")


@pytest.mark.parametrize("case", ["one", "shared"])
def test_concat_views_exported_c(tmp_path, case):
    """The standalone C export plans the same views: the concatenation's call
    is left out of NAME_run (a comment says so), and the C, built with the C
    compiler alone, matches the reference."""
    lib, w = _model(tmp_path, case)
    outs = {"y": (1, 16, H, H)} if case == "one" else {"y": (1, 16, H, H), "z": (1, 16, H, H)}
    mod, params = kiln.frontend.from_onnx(str(tmp_path / "m.onnx"), {"x": (1, C, H, H)})
    aot = kiln.build(mod, params=params, executor="aot")
    d = aot.export_library(str(tmp_path / "c"), fmt="c", prefix="m")
    src = open(os.path.join(d, "m.c")).read()
    assert ("its inputs were written in place" in src) == (case == "one")
    if len(outs) > 1:
        return
    p = subprocess.run(["make", "-s", "CC=gcc", "CFLAGS=-O2 -march=native -std=gnu99"], cwd=d, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    x = np.random.default_rng(5).standard_normal((1, C, H, H)).astype("float32")
    np.save(os.path.join(d, "in.npy"), x)
    p = subprocess.run(["./example", "in.npy", "out.npy"], cwd=d, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    want = _reference(x.astype("float64"), w, case)[0]
    got = np.load(os.path.join(d, "out.npy"))
    assert np.abs(got - want).max() / np.abs(want).max() < 1e-5
