"""A symbolic batch run through the batch-1 kernels sample by sample, the
samples in parallel on the thread pool (graph_sym.c,
kiln_graph_batch_samples): a chain of layers whose activations differ in
size, so the memory plan puts entries of different sizes in one buffer,
run at several batches on 1 and 2 threads, against NumPy.  The output
holds a buffer whose entries all have its size (memory_plan.c), with a
wide last layer and with a narrow one that would fit a dead activation's
buffer, so the samples run one by one in both."""
import os
import subprocess

import numpy as np
import pytest

import kiln
from kiln import graph_executor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WIDTHS = [48, 256, 16, 128, 8, 320, 24]
LAST = {"own_output_buffer": 8192, "shared_output_buffer": 40}


def _model(last):
    rs = np.random.RandomState(11)
    widths = WIDTHS + [last]
    ws = [rs.randn(a, b).astype(np.float32) / np.sqrt(a) for a, b in zip(widths, widths[1:])]
    nodes, inits, src = [], [], "a"
    for i, w in enumerate(ws):
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, list(w.shape), w.ravel()))
        nodes.append(helper.make_node("MatMul", [src, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        nodes.append(helper.make_node("Tanh", [f"m{i}"], [f"t{i}"], name=f"tanh{i}"))
        src = f"t{i}"
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, WIDTHS[0]])],
                          [helper.make_tensor_value_info(src, TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), ws


def _reference(a, ws):
    y = a.astype(np.float64)
    for w in ws:
        y = np.tanh(y @ w.astype(np.float64))
    return y


def _sizes_in_storage(so):
    """Per storage id, the per-sample sizes of the batched entries in it."""
    m = kiln.runtime.load_module(so)
    import json  # pylint: disable=import-outside-toplevel
    g = json.loads(m.get_graph_json())
    sid, shp = g["attrs"]["storage_id"][1], g["attrs"]["shape"][1]
    out = {}
    for e, s in enumerate(sid):
        out.setdefault(s, set()).add(int(np.prod(shp[e])))
    return out


@pytest.fixture(scope="module", params=sorted(LAST))
def compiled(tmp_path_factory, request):
    model, ws = _model(LAST[request.param])
    d = tmp_path_factory.mktemp(request.param)
    path, so = str(d / "chain.onnx"), str(d / "chain.so")
    onnx.save(model, path)
    subprocess.run([os.path.join(ROOT, "build", "kiln"), "compile", path, "-o", so, "--input-shapes",
                    f"a:[N,{WIDTHS[0]}],N<=64", "--batch-sizes", "none", "--quiet-fallback"], check=True)
    return so, ws


def test_plan_shares_buffers_across_sizes(compiled):
    # the case the samples' layout must handle: one buffer, entries of
    # different sizes (else the test below proves nothing); the output's
    # buffer holds its size alone, also where a wider activation's buffer
    # was free when the last layer ran
    so, ws = compiled
    sizes = _sizes_in_storage(so)
    assert any(len(s) > 1 for s in sizes.values())
    out = [s for s in sizes.values() if ws[-1].shape[1] in s]
    assert len(out) == 1 and len(out[0]) == 1, sizes


@pytest.mark.parametrize("threads", [1, 2])
def test_samples_match_numpy(compiled, threads):
    so, ws = compiled
    old = kiln.runtime.get_num_threads()
    kiln.runtime.set_num_threads(threads)
    try:
        m = graph_executor.GraphModule(kiln.runtime.load_module(so)["default"](kiln.cpu()))
        rs = np.random.RandomState(3)
        for b in (1, 2, 7, 64, 5, 64):
            for _ in range(10 if b == 64 else 1):
                a = rs.randn(b, WIDTHS[0]).astype(np.float32)
                m.set_input("a", a)
                m.run()
                out = m.get_output(0).numpy()
                assert out.shape == (b, ws[-1].shape[1])
                np.testing.assert_allclose(out, _reference(a, ws), rtol=2e-5, atol=2e-5)
    finally:
        kiln.runtime.set_num_threads(old)
