#!/usr/bin/env python3
"""--precision bf16 against float32 and against OpenVINO in bfloat16: accuracy
and batch-1 latency of whole models, measured on this machine in one run
(docs/bf16.md).

    /usr/bin/python3 bench/bf16.py [--models resnet50,encoder_128] [--inputs 100]
        [--threads 2] [--rounds 6] [--per-round 3] [--out FILE]

Models come from tools/export_models.py (torchvision architectures and
transformer encoders with seeded random weights).  Each is compiled twice
by `kiln compile` (fp32 and --precision bf16, shipped records, fallback
configs elsewhere).

Accuracy: --inputs seeded random inputs (numpy default_rng(seed i), the
model's input shape, standard normal), each run by both builds through the
kiln Python package: top-1 agreement (the argmax over the last axis: the
class of a classifier, per token for an encoder) and the relative L2 error
of the bf16 output against the fp32 output (median and max over the
inputs).  The same for OpenVINO's bf16 against its own f32
(INFERENCE_PRECISION_HINT), run by the `python3` on PATH, for scale.

Speed: four engines, each in its own worker process (bench/workers.py),
measured interleaved (in each round every engine runs --per-round times,
in a rotating order, after 0.2 s of quiet and one untimed run): Kiln fp32,
Kiln bf16, OpenVINO f32 and OpenVINO bf16 (INFERENCE_NUM_THREADS, latency
hint).  A latency is the median of all rounds.  The load average is
printed before and after: the figures are ratios from one run.  So are
the one-core float32 FMA peak and the VDPBF16PS peak (bench_peak, bench_peak
--bf16): VDPBF16PS does 32 products per instruction; it runs at 1.87x the
FMA's multiply-add rate on Zen 5 and at 0.5x on Sapphire/Emerald Rapids
without AMX, which decides the bfloat16 kernels' form (docs/bf16.md).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
DEBIAN_PY = "/usr/bin/python3"
OV_PY = os.environ.get("KILN_ORT_PYTHON", shutil.which("python3") or "python3")
sys.path.insert(0, HERE)
from interleave import interleaved  # noqa: E402  pylint: disable=wrong-import-position
from models import compile_kiln, peak  # noqa: E402  pylint: disable=wrong-import-position

OV_SCRIPT = r"""
import sys, numpy as np, openvino as ov
path, inp, out, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
xs = np.load(inp)
core = ov.Core()
res = {}
for prec in ("f32", "bf16"):
    cm = core.compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": prec, "INFERENCE_NUM_THREADS": threads})
    r = cm.create_infer_request()
    res[prec] = np.stack([np.asarray(r.infer({0: x})[cm.output(0)]) for x in xs])
np.savez(out, **res)
"""


def load(so):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import kiln  # pylint: disable=import-outside-toplevel
    from kiln import graph_executor  # pylint: disable=import-outside-toplevel
    return graph_executor.GraphModule(kiln.runtime.load_module(so)["default"](kiln.cpu()))


def agreement(a, b):
    """Top-1 agreement and the relative errors of b against a (one row per input)."""
    top = np.mean([np.mean(np.argmax(x, -1) == np.argmax(y, -1)) for x, y in zip(a, b)])
    rel = [np.linalg.norm(y - x) / np.linalg.norm(x) for x, y in zip(a, b)]
    return float(top), float(np.median(rel)), float(np.max(rel))


def peak_bf16():
    """The one-core VDPBF16PS peak in GFLOP/s (bench_peak --bf16), NaN without AVX512-BF16."""
    exe = os.path.join(BUILD, "bench_peak")
    p = subprocess.run([exe, "--bf16"], capture_output=True, text=True, check=False)
    return float(p.stdout.split()[0]) if p.returncode == 0 else float("nan")


def uptime():
    with open("/proc/loadavg", encoding="utf-8") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,encoder_128")
    ap.add_argument("--inputs", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--per-round", type=int, default=3)
    ap.add_argument("--no-speed", action="store_true", help="accuracy only")
    ap.add_argument("--out", default=os.path.join(BUILD, "bench_bf16.md"))
    a = ap.parse_args()
    models = a.models.split(",")
    mdir = os.path.join(BUILD, "models")
    subprocess.run([DEBIAN_PY, os.path.join(ROOT, "tools", "export_models.py"), "--out", mdir, *models], check=True)
    fma, dp = peak(), peak_bf16()
    lines = ["load average (1, 5, 15 min) at the start: " + uptime(),
             "one-core FMA peak (bench_peak, this run): %.1f GFLOP/s; VDPBF16PS peak (bench_peak --bf16): %.1f GFLOP/s "
             "(%.2fx)" % (fma, dp, dp / fma), "",
             "| model | inputs | top-1 agreement Kiln bf16 / fp32 | rel. error median (max) | "
             "OpenVINO bf16 / f32 top-1 | rel. error median (max) | .so fp32 / bf16 MB |",
             "|---|---|---|---|---|---|---|"]
    speed = ["", "| model | threads | Kiln fp32 ms | Kiln bf16 ms | OpenVINO f32 ms | OpenVINO bf16 ms | "
             "Kiln bf16 / OpenVINO bf16 | Kiln bf16 / Kiln fp32 | OpenVINO bf16 / f32 |", "|---|---|---|---|---|---|---|---|---|"]
    for name in models:
        prefix = os.path.join(mdir, name)
        onnx_path, inp = prefix + ".onnx", prefix + ".input.npy"
        so = {p: f"{prefix}.{p}.so" for p in ("fp32", "bf16")}
        for p in so:
            compile_kiln(onnx_path, so[p], ["--precision", p, "--quiet-fallback"])
        shape = np.load(inp).shape
        xs = np.stack([np.random.default_rng(i).standard_normal(shape).astype(np.float32) for i in range(a.inputs)])
        outs = {}
        for p in so:
            g = load(so[p])
            ys = []
            for x in xs:
                g.set_input(0, x)
                g.run()
                ys.append(g.get_output(0).numpy().astype(np.float64))
            outs[p] = np.stack(ys)
        k = agreement(outs["fp32"], outs["bf16"])
        xs_path, ov_out = prefix + ".bf16_inputs.npy", prefix + ".ov_outputs.npz"
        np.save(xs_path, xs)
        p = subprocess.run([OV_PY, "-c", OV_SCRIPT, onnx_path, xs_path, ov_out, str(a.threads)], capture_output=True,
                           text=True)
        if p.returncode == 0:
            ov = np.load(ov_out)
            o = agreement(ov["f32"].astype(np.float64), ov["bf16"].astype(np.float64))
            ovs = "%.1f %% | %.2e (%.2e)" % (100 * o[0], o[1], o[2])
        else:
            ovs = "failed: %s | -" % p.stderr.strip().splitlines()[-1][:80]
        row = "| %s | %d | %.1f %% | %.2e (%.2e) | %s | %.1f / %.1f |" % (
            name, a.inputs, 100 * k[0], k[1], k[2], ovs, os.path.getsize(so["fp32"]) / 1e6,
            os.path.getsize(so["bf16"]) / 1e6)
        print(row, flush=True)
        lines.append(row)
        if a.no_speed:
            continue
        t = a.threads
        cmds = {
            "kiln-fp32": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "kiln", so["fp32"], inp, str(t)],
            "kiln-bf16": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "kiln", so["bf16"], inp, str(t)],
            "openvino-f32": [OV_PY, os.path.join(HERE, "workers.py"), "openvino", onnx_path, inp, str(t)],
            "openvino-bf16": [OV_PY, os.path.join(HERE, "workers.py"), "openvino-bf16", onnx_path, inp, str(t)],
        }
        times, _ = interleaved(name, cmds, a.rounds, a.per_round)
        med = {e: statistics.median(times[e]) if e in times else float("nan") for e in cmds}
        row = "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            name, t, med["kiln-fp32"], med["kiln-bf16"], med["openvino-f32"], med["openvino-bf16"],
            med["kiln-bf16"] / med["openvino-bf16"], med["kiln-bf16"] / med["kiln-fp32"],
            med["openvino-bf16"] / med["openvino-f32"])
        print(row, flush=True)
        speed.append(row)
    lines += speed + ["", "load average at the end: " + uptime()]
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
