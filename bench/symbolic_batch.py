"""ResNet-18 with a symbolic batch: one Kiln build run at batch 1 and 8,
against Kiln's static builds at those batches, PyTorch and ONNX Runtime at
batch 8 (docs/symbolic_shapes.md).  The symbolic build holds batched
variants at 4 and 8 (kiln compile's default); a second symbolic build
with --batch-sizes none (the batch-1 kernels alone, called per sample)
shows what they bring.

    /usr/bin/python3 bench/symbolic_batch.py [--rounds 3] [--threads 2]

Run from the repository root after building.  It exports ResNet-18 with
seeded weights and an open batch (tools/export_models.py's weights), builds
the three Kiln modules under build/bench_symbolic/, and times each engine
round by round, interleaved; a figure is the median over the rounds'
runs.  ONNX Runtime runs in the `python3` first on PATH (where it is
installed), in its own process, once per round.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402  pylint: disable=wrong-import-position
from models import peak  # noqa: E402  pylint: disable=wrong-import-position
import kiln  # noqa: E402  pylint: disable=wrong-import-position
from kiln import graph_executor  # noqa: E402  pylint: disable=wrong-import-position

ORT = r"""
import sys, time, json, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = int(sys.argv[2])
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
x = np.random.RandomState(8).randn(8, 3, 224, 224).astype(np.float32)
s.run(None, {"data": x}); ts = []
for _ in range(int(sys.argv[3])):
    a = time.perf_counter(); s.run(None, {"data": x}); ts.append(time.perf_counter() - a)
print(json.dumps(ts))
"""


def timed(f, n):
    f()
    ts = []
    for _ in range(n):
        a = time.perf_counter()
        f()
        ts.append(time.perf_counter() - a)
    return ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    out = os.path.join(ROOT, "build", "bench_symbolic")
    os.makedirs(out, exist_ok=True)
    onnx_path = os.path.join(out, "resnet18_dyn.onnx")
    net = export_models.build("resnet18")
    torch.onnx.export(net, torch.randn(1, 3, 224, 224), onnx_path, input_names=["data"], output_names=["logits"],
                      opset_version=13, dynamic_axes={"data": {0: "batch"}, "logits": {0: "batch"}})
    kiln_bin = os.path.join(ROOT, "build", "kiln")
    sym = "data:[batch,3,224,224],batch<=8"
    builds = {"sym": [sym], "symloop": [sym, "--batch-sizes", "none"], "static1": ["data:[1,3,224,224]"],
              "static8": ["data:[8,3,224,224]"]}
    mods = {}
    for name, shapes in builds.items():
        so = os.path.join(out, name + ".so")
        subprocess.run([kiln_bin, "compile", onnx_path, "-o", so, "--input-shapes", *shapes, "--quiet-fallback"],
                       check=True, capture_output=True)
        mods[name] = graph_executor.GraphModule(kiln.runtime.load_module(so)["default"](kiln.cpu()))
    torch.set_num_threads(args.threads)
    x1 = np.random.RandomState(1).randn(1, 3, 224, 224).astype(np.float32)
    x8 = np.random.RandomState(8).randn(8, 3, 224, 224).astype(np.float32)

    def run(m, x):
        def f():
            m.set_input("data", x)
            m.run()
            m.get_output(0)
        return f

    def pytorch():
        with torch.no_grad():
            net(torch.from_numpy(x8))

    res = {k: [] for k in ("kiln_sym_b1", "kiln_static_b1", "kiln_sym_b8", "kiln_symloop_b8", "kiln_static_b8",
                           "pytorch_b8", "ort_b8")}
    for _ in range(args.rounds):
        res["kiln_static_b1"] += timed(run(mods["static1"], x1), 5)
        res["kiln_sym_b1"] += timed(run(mods["sym"], x1), 5)
        res["kiln_static_b8"] += timed(run(mods["static8"], x8), 3)
        res["pytorch_b8"] += timed(pytorch, 3)
        res["kiln_sym_b8"] += timed(run(mods["sym"], x8), 3)
        res["kiln_symloop_b8"] += timed(run(mods["symloop"], x8), 2)
        p = subprocess.run(["python3", "-c", ORT, onnx_path, str(args.threads), "3"], capture_output=True, text=True)
        if p.returncode == 0:
            res["ort_b8"] += json.loads(p.stdout)
    med = {k: float(np.median(v)) * 1000 for k, v in res.items() if v}
    print("load average %.1f, one-core FMA peak %.1f GFLOP/s (bench_peak, this run), %d threads, ms (medians):"
          % (os.getloadavg()[0], peak(), args.threads))
    for k, v in med.items():
        print("  %-15s %10.1f" % (k, v))
    print("symbolic / static at batch 1: %.2f" % (med["kiln_sym_b1"] / med["kiln_static_b1"]))
    peers = [med[k] for k in ("pytorch_b8", "ort_b8") if k in med]
    print("symbolic at batch 8 / best peer: %.2f" % (med["kiln_sym_b8"] / min(peers)))
    print("symbolic at batch 8 / static batch 8: %.2f (per-sample loop alone: %.2f)"
          % (med["kiln_sym_b8"] / med["kiln_static_b8"], med["kiln_symloop_b8"] / med["kiln_static_b8"]))


if __name__ == "__main__":
    main()
