#!/usr/bin/env python3
"""int8 models (docs/int8.md): Kiln against ONNX Runtime and OpenVINO on the
same quantized model, accuracy and batch-1 latency, measured in one run.

    /usr/bin/python3 bench/int8.py [--models resnet18,encoder_32] [--threads 2]
        [--rounds 6] [--per-round 3] [--out FILE]

Models come from tools/export_models.py (seeded random weights) and are
quantized by tools/quantize_models.py (onnxruntime.quantization.quantize_static,
QDQ, per-channel, uint8 activations, int8 weights, 8 seeded calibration
inputs) in the `python3` on PATH ($KILN_ORT_PYTHON).  Kiln compiles the
int8 model twice: as it is (its dense layers on int8 kernels where the CPU
has AVX512-VNNI) and with KILN_CPU_NO_VNNI=1 (every layer float32, the
fake-quantized model).

Accuracy, on the model's input (MODEL.input.npy): relative L2 error of
each engine's int8 output against ONNX Runtime's float32 output, and of
Kiln's int8 output against ONNX Runtime's int8 output.

Speed: each engine in its own worker process (bench/workers.py), measured
interleaved (in each round every engine runs --per-round times, in a
rotating order, after 0.2 s of quiet and one untimed run): Kiln int8,
Kiln without VNNI, ONNX Runtime and OpenVINO on MODEL.int8.onnx.  A latency
is the median of all rounds; the load average is printed before and after,
and the one-core float32 FMA peak and AVX512-VNNI VPDPBUSD peak measured in
the same run (bench_peak, bench_peak --vnni: GFLOP/s and GOP/s, 2 ops per
multiply-add), the speed of the machine at the time.
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
PEER_PY = os.environ.get("KILN_ORT_PYTHON", shutil.which("python3") or "python3")
sys.path.insert(0, HERE)
from interleave import interleaved  # noqa: E402  pylint: disable=wrong-import-position
from models import peak  # noqa: E402  pylint: disable=wrong-import-position


def uptime():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def peak_vnni():
    """The one-core VPDPBUSD peak in GOP/s (bench_peak --vnni), NaN without AVX512-VNNI."""
    p = subprocess.run([os.path.join(BUILD, "bench_peak"), "--vnni"], capture_output=True, text=True, check=False)
    return float(p.stdout.split()[0]) if p.returncode == 0 else float("nan")


def compile_kiln(onnx_path, so, env):
    p = subprocess.run([os.path.join(BUILD, "kiln"), "compile", onnx_path, "-o", so, "--quiet-fallback"],
                       capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError(p.stderr)


def run_kiln(so, inp, out):
    p = subprocess.run([os.path.join(BUILD, "kiln"), "run", so, "--inputs", inp, "-o", out], capture_output=True,
                       text=True)
    if p.returncode:
        raise RuntimeError(p.stderr)
    z = np.load(out)
    return z[z.files[0]].astype(np.float64)


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet18,encoder_32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--per-round", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(BUILD, "bench_int8.md"))
    a = ap.parse_args()
    models = a.models.split(",")
    mdir = os.path.join(BUILD, "models")
    subprocess.run([DEBIAN_PY, os.path.join(ROOT, "tools", "export_models.py"), "--out", mdir, *models], check=True)
    subprocess.run([PEER_PY, os.path.join(ROOT, "tools", "quantize_models.py"),
                    *[os.path.join(mdir, m + ".onnx") for m in models]], check=True, stderr=subprocess.DEVNULL)
    fma = peak()
    vnni = peak_vnni()
    lines = ["load average (1, 5, 15 min) at the start: " + uptime(),
             "one-core FMA peak (bench_peak, this run): %.1f GFLOP/s; VPDPBUSD peak (bench_peak --vnni): %.1f GOP/s "
             "(%.2fx)" % (fma, vnni, vnni / fma), "",
             "| model | Kiln int8 vs ORT fp32 | ORT int8 vs ORT fp32 | Kiln int8 vs ORT int8 | Kiln no-VNNI vs ORT int8 |",
             "|---|---|---|---|---|"]
    speed = ["", "| model | threads | Kiln int8 ms | Kiln no-VNNI ms | ONNX Runtime ms | OpenVINO ms | "
             "Kiln int8 / best peer |", "|---|---|---|---|---|---|---|"]
    for name in models:
        prefix = os.path.join(mdir, name)
        q, inp = prefix + ".int8.onnx", prefix + ".input.npy"
        so = {"int8": prefix + ".int8.so", "novnni": prefix + ".int8.novnni.so"}
        compile_kiln(q, so["int8"], dict(os.environ))
        compile_kiln(q, so["novnni"], dict(os.environ, KILN_CPU_NO_VNNI="1"))
        k8 = run_kiln(so["int8"], inp, prefix + ".kiln8.npz")
        kf = run_kiln(so["novnni"], inp, prefix + ".kilnf.npz")
        o8 = np.load(prefix + ".int8.ort.npy").astype(np.float64)
        f32 = np.load(prefix + ".fp32.ort.npy").astype(np.float64)
        row = "| %s | %.2e | %.2e | %.2e | %.2e |" % (name, rel(k8, f32), rel(o8, f32), rel(k8, o8), rel(kf, o8))
        print(row, flush=True)
        lines.append(row)
        t = str(a.threads)
        cmds = {
            "kiln-int8": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "kiln", so["int8"], inp, t],
            "kiln-novnni": [DEBIAN_PY, os.path.join(HERE, "workers.py"), "kiln", so["novnni"], inp, t],
            "onnxruntime": [PEER_PY, os.path.join(HERE, "workers.py"), "onnxruntime", q, inp, t],
            "openvino": [PEER_PY, os.path.join(HERE, "workers.py"), "openvino", q, inp, t],
        }
        times, _ = interleaved(name, cmds, a.rounds, a.per_round)
        med = {e: statistics.median(times[e]) if times.get(e) else float("nan") for e in cmds}
        best = min(med["onnxruntime"], med["openvino"])
        row = "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            name, t, med["kiln-int8"], med["kiln-novnni"], med["onnxruntime"], med["openvino"], med["kiln-int8"] / best)
        print(row, flush=True)
        speed.append(row)
    lines += speed + ["", "load average at the end: " + uptime()]
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
